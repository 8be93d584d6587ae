//! `server_metrics_export.parquet`: normalized time-series rows (snappy), one row per scalar
//! sample and one row per bucket per histogram sample, with AIPerf's file metadata keys.
//!
//! Values are deltas from the window's reference sample (docs/output-formats.md) for counters and
//! histograms (clamped at 0), raw for gauges. Only samples inside the window are written.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{DEFAULT_CREATED_BY, WriterProperties, WriterVersion};

use super::ExportContext;
use super::json::iso8601;
use crate::server_metrics::analysis::Window;
use crate::server_metrics::store::{SeriesData, Store};
use crate::server_metrics::units::infer_unit;
use ringperf_wire::prom::MetricType;

/// Schema version written as `aiperf.schema_version`.
pub const SCHEMA_VERSION: &str = "1.0";

/// Column names that labels may not take (such labels are dropped).
pub const RESERVED: [&str; 11] = [
    "endpoint_url",
    "metric_name",
    "metric_type",
    "unit",
    "description",
    "timestamp_ns",
    "value",
    "sum",
    "count",
    "bucket_le",
    "bucket_count",
];

/// Run facts written into the file metadata beside the [`ExportContext`].
#[derive(Clone, Debug, Default)]
pub struct ParquetMeta<'a> {
    /// Served model names (`aiperf.model_names`).
    pub model_names: &'a [String],
    /// `--concurrency`, if set.
    pub concurrency: Option<u64>,
    /// `--request-rate`, if set.
    pub request_rate: Option<f64>,
    /// Export time (epoch ns) for `aiperf.export_timestamp_utc`.
    pub export_time_ns: u64,
}

/// Column builders for the rows being assembled.
struct Columns {
    endpoint: StringBuilder,
    name: StringBuilder,
    kind: StringBuilder,
    unit: StringBuilder,
    description: StringBuilder,
    ts: Int64Builder,
    labels: Vec<StringBuilder>,
    value: Float64Builder,
    sum: Float64Builder,
    count: Float64Builder,
    le: StringBuilder,
    bucket_count: Float64Builder,
}

/// Common part of a row.
struct RowHead<'a> {
    endpoint: &'a str,
    name: &'a str,
    kind: &'a str,
    unit: Option<&'a str>,
    description: &'a str,
    labels: &'a [Option<&'a str>],
}

impl Columns {
    fn new(label_count: usize) -> Self {
        Self {
            endpoint: StringBuilder::new(),
            name: StringBuilder::new(),
            kind: StringBuilder::new(),
            unit: StringBuilder::new(),
            description: StringBuilder::new(),
            ts: Int64Builder::new(),
            labels: (0..label_count).map(|_| StringBuilder::new()).collect(),
            value: Float64Builder::new(),
            sum: Float64Builder::new(),
            count: Float64Builder::new(),
            le: StringBuilder::new(),
            bucket_count: Float64Builder::new(),
        }
    }

    fn push(
        &mut self,
        head: &RowHead<'_>,
        ts: u64,
        value: Option<f64>,
        sum: Option<f64>,
        count: Option<f64>,
        le: Option<&str>,
        bucket_count: Option<f64>,
    ) {
        self.endpoint.append_value(head.endpoint);
        self.name.append_value(head.name);
        self.kind.append_value(head.kind);
        self.unit.append_option(head.unit);
        self.description
            .append_option((!head.description.is_empty()).then_some(head.description));
        self.ts.append_value(i64::try_from(ts).unwrap_or(i64::MAX));
        for (b, l) in self.labels.iter_mut().zip(head.labels) {
            b.append_option(*l);
        }
        self.value.append_option(value);
        self.sum.append_option(sum);
        self.count.append_option(count);
        self.le.append_option(le);
        self.bucket_count.append_option(bucket_count);
    }

    fn finish(mut self) -> Vec<ArrayRef> {
        let mut out: Vec<ArrayRef> = vec![
            Arc::new(self.endpoint.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.unit.finish()),
            Arc::new(self.description.finish()),
            Arc::new(self.ts.finish()),
        ];
        out.extend(
            self.labels
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        out.push(Arc::new(self.value.finish()));
        out.push(Arc::new(self.sum.finish()));
        out.push(Arc::new(self.count.finish()));
        out.push(Arc::new(self.le.finish()));
        out.push(Arc::new(self.bucket_count.finish()));
        out
    }
}

/// Sorted label column names: every label of every series, minus the reserved names.
#[must_use]
pub fn label_columns(store: &Store) -> Vec<String> {
    let set: BTreeSet<&str> = store
        .endpoints
        .iter()
        .flat_map(|e| e.series.keys())
        .flat_map(|(_, labels)| labels.iter().map(|(k, _)| k.as_str()))
        .filter(|k| !RESERVED.contains(k))
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

/// Every column is nullable, as pyarrow infers the schema AIPerf writes.
fn schema(label_cols: &[String], metadata: HashMap<String, String>) -> Schema {
    let s = |n: &str| Field::new(n, DataType::Utf8, true);
    let f = |n: &str| Field::new(n, DataType::Float64, true);
    let mut fields = vec![
        s("endpoint_url"),
        s("metric_name"),
        s("metric_type"),
        s("unit"),
        s("description"),
        Field::new("timestamp_ns", DataType::Int64, true),
    ];
    fields.extend(label_cols.iter().map(|c| s(c)));
    fields.push(f("value"));
    fields.push(f("sum"));
    fields.push(f("count"));
    fields.push(s("bucket_le"));
    fields.push(f("bucket_count"));
    Schema::new_with_metadata(fields, metadata)
}

/// Builds the record batch of every in-window sample of `store`.
///
/// # Errors
/// Arrow errors when assembling the batch (not expected: all columns have equal length).
pub fn build_batch(
    store: &Store,
    window: &Window,
    metadata: HashMap<String, String>,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let cols = label_columns(store);
    let mut c = Columns::new(cols.len());
    for ep in &store.endpoints {
        for ((name, labels), entry) in &ep.series {
            let label_vals: Vec<Option<&str>> = cols
                .iter()
                .map(|col| {
                    labels
                        .iter()
                        .find(|(k, _)| k == col)
                        .map(|(_, v)| v.as_str())
                })
                .collect();
            let head = RowHead {
                endpoint: &ep.url,
                name,
                kind: entry.kind.as_str(),
                unit: infer_unit(name, &entry.description),
                description: &entry.description,
                labels: &label_vals,
            };
            let ts_all = match &entry.data {
                SeriesData::Scalar(s) => &s.ts_ns,
                SeriesData::Histogram(h) => &h.ts_ns,
            };
            let lo = ts_all.partition_point(|&t| t < window.start_ns);
            let hi = ts_all.partition_point(|&t| t <= window.end_ns);
            if lo >= hi {
                continue;
            }
            let r = lo.saturating_sub(1);
            match &entry.data {
                SeriesData::Scalar(s) => {
                    let base = s.values.get(r).copied().unwrap_or(0.0);
                    for i in lo..hi {
                        let (Some(&t), Some(&v)) = (s.ts_ns.get(i), s.values.get(i)) else {
                            continue;
                        };
                        // Only gauges are raw; counters (and untyped) are deltas.
                        let v = if entry.kind == MetricType::Gauge {
                            v
                        } else {
                            (v - base).max(0.0)
                        };
                        c.push(&head, t, Some(v), None, None, None, None);
                    }
                }
                SeriesData::Histogram(h) => {
                    let (bs, bc, brow) = (
                        h.sums.get(r).copied().unwrap_or(0.0),
                        h.counts.get(r).copied().unwrap_or(0.0),
                        h.row(r),
                    );
                    for i in lo..hi {
                        let (Some(&t), Some(&s), Some(&n)) =
                            (h.ts_ns.get(i), h.sums.get(i), h.counts.get(i))
                        else {
                            continue;
                        };
                        let (ds, dn) = ((s - bs).max(0.0), (n - bc).max(0.0));
                        for (j, le) in h.le_text.iter().enumerate() {
                            let now = h.row(i).get(j).copied().unwrap_or(0.0);
                            let then = brow.get(j).copied().unwrap_or(0.0);
                            let d = (now - then).max(0.0);
                            c.push(&head, t, None, Some(ds), Some(dn), Some(le), Some(d));
                        }
                    }
                }
            }
        }
    }
    RecordBatch::try_new(Arc::new(schema(&cols, metadata)), c.finish())
}

/// A float as Python's `str(float)` writes it (`2.0`, not `2`).
fn py_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

/// The `aiperf.*` file metadata.
#[must_use]
pub fn file_metadata(
    store: &Store,
    window: &Window,
    ctx: &ExportContext<'_>,
    meta: &ParquetMeta<'_>,
) -> HashMap<String, String> {
    let cols = label_columns(store);
    let mut kinds: BTreeMap<&str, usize> = ["gauge", "counter", "histogram", "unknown"]
        .iter()
        .map(|k| (*k, 0))
        .collect();
    // Counted per stored series entry of every endpoint, as AIPerf counts its storage entries.
    let mut metric_count = 0;
    for entry in store.endpoints.iter().flat_map(|e| e.series.values()) {
        metric_count += 1;
        *kinds.entry(entry.kind.as_str()).or_insert(0) += 1;
    }
    let mut urls: Vec<&str> = store.endpoints.iter().map(|e| e.url.as_str()).collect();
    urls.sort_unstable();
    let dur = window.end_ns.saturating_sub(window.start_ns);
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let json = |v: serde_json::Value| v.to_string();
    let mut pairs =
        vec![
        ("schema_version", SCHEMA_VERSION.to_owned()),
        ("version", ctx.aiperf_version.unwrap_or("").to_owned()),
        ("benchmark_id", ctx.benchmark_id.unwrap_or("").to_owned()),
        ("exporter", "ServerMetricsParquetExporter".to_owned()),
        ("export_timestamp_utc", format!("{}+00:00", iso8601(meta.export_time_ns))),
        ("time_filter_start_ns", window.start_ns.to_string()),
        ("time_filter_end_ns", window.end_ns.to_string()),
        ("profiling_duration_ns", dur.to_string()),
        ("profiling_duration_seconds", py_float(dur as f64 / 1e9)),
        ("endpoint_urls", json(serde_json::json!(urls))),
        ("endpoint_count", urls.len().to_string()),
        ("label_columns", json(serde_json::json!(cols))),
        ("label_count", cols.len().to_string()),
        ("metric_count", metric_count.to_string()),
        ("metric_type_counts", json(serde_json::json!(kinds))),
        ("model_names", json(serde_json::json!(meta.model_names))),
        (
            "concurrency",
            meta.concurrency.map_or_else(|| "None".to_owned(), |c| c.to_string()),
        ),
        ("input_config", ctx.input_config.to_string()),
        ("hostname", hostname),
        // The writer's own name and version in place of the interpreter's and pyarrow's.
        ("python_version", format!("ringperf {}", env!("CARGO_PKG_VERSION"))),
        ("pyarrow_version", DEFAULT_CREATED_BY.to_owned()),
        (
            "schema_note",
            "Label columns vary by endpoint/model. Use union_by_name=true for cross-file queries."
                .to_owned(),
        ),
    ];
    if let Some(rate) = meta.request_rate {
        pairs.push(("request_rate", py_float(rate)));
    }
    pairs
        .into_iter()
        .map(|(k, v)| (format!("aiperf.{k}"), v))
        .collect()
}

/// Writes the Parquet export (snappy) to `out`.
///
/// # Errors
/// Arrow or Parquet errors, including I/O errors of `out`.
pub fn write<W: Write + Send>(
    out: W,
    store: &Store,
    window: &Window,
    ctx: &ExportContext<'_>,
    meta: &ParquetMeta<'_>,
) -> Result<(), ParquetError> {
    let metadata = file_metadata(store, window, ctx, meta);
    // pyarrow writes schema metadata as plain file key-values too; arrow-rs only embeds it in
    // the encoded Arrow schema, so add the pairs explicitly (sorted for a stable file).
    let mut kv: Vec<KeyValue> = metadata
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    let batch = build_batch(store, window, metadata)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        // Format version 2 (pyarrow reads it as "2.6", what AIPerf's pyarrow writes).
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_key_value_metadata(Some(kv))
        .build();
    let mut writer = ArrowWriter::try_new(out, batch.schema(), Some(props))?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(())
}
