//! `ringperf server-metrics --from-jsonl FILE`: recompute the JSON / CSV / Parquet exports from a
//! server-metrics JSONL (ringperf's or AIPerf's) over a chosen window.
//!
//! The JSONL carries no metric types or HELP text. They are taken from the JSON export next to
//! the file (`x.jsonl` → `x.json`) when it exists, together with its `benchmark_id`,
//! `aiperf_version`, `input_config` and `summary.phase_time_ranges`; without it histograms are
//! still recognized by shape and every scalar metric is reported as `unknown` (gauge
//! statistics). Every line of the file is a unique update.
//!
//! Without `--start-ns` / `--end-ns`, lines tagged with their phase (`benchmark_phase`) are
//! summarized as the live run summarized them: each phase from its first to its last line,
//! the line before being the reference (docs/server-metrics.md, "Re-processing"). Untagged
//! files, or an explicit window, hold each value until the next line; the window then defaults
//! to all samples, the first one being the reference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::Error;
use super::analysis::{Bounds, Window};
use super::export::jsonl::read_records;
use super::export::parquet::ParquetMeta;
use super::export::{ExportContext, Windows};
use super::output::{FileNames, Format, write_exports};
use super::store::Store;
use ringperf_wire::prom::MetricType;
use ringperf_wire::record::Phase;

/// What to recompute.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The server-metrics JSONL to read.
    pub from_jsonl: PathBuf,
    /// Window start (epoch ns); default: the first sample.
    pub start_ns: Option<u64>,
    /// Window end (epoch ns); default: the last sample.
    pub end_ns: Option<u64>,
    /// Timeslice duration.
    pub slice: Option<Duration>,
    /// Formats to write (JSONL is ignored: it is the input).
    pub formats: Vec<Format>,
    /// Output directory; default: the JSONL's directory.
    pub artifact_dir: Option<PathBuf>,
    /// Replace files of the same names already in the output directory (`--overwrite`);
    /// without it, such files refuse the re-processing before anything is written.
    pub overwrite: bool,
}

/// Metric types, descriptions and run identity from a JSON export.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// Type and description per metric name.
    pub metrics: BTreeMap<String, (MetricType, String)>,
    /// `benchmark_id`.
    pub benchmark_id: Option<String>,
    /// `aiperf_version`.
    pub aiperf_version: Option<String>,
    /// `input_config`.
    pub input_config: Option<Value>,
    /// `summary.phase_time_ranges`: each phase's own `(start_ns, end_ns)` (the run's phase
    /// clock, which the JSONL lines do not carry).
    pub phase_ranges: BTreeMap<String, (u64, u64)>,
}

impl Catalog {
    /// Reads what a `server_metrics_export.json` document provides (missing parts stay empty).
    #[must_use]
    pub fn from_json(doc: &Value) -> Self {
        let mut metrics = BTreeMap::new();
        for key in ["metrics", "warmup_metrics"] {
            let Some(m) = doc.get(key).and_then(Value::as_object) else {
                continue;
            };
            for (name, v) in m {
                let kind = v
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(MetricType::from_keyword);
                if let Some(kind) = kind {
                    let desc = v
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    metrics.entry(name.clone()).or_insert((kind, desc));
                }
            }
        }
        let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
        let phase_ranges = doc
            .pointer("/summary/phase_time_ranges")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(phase, r)| {
                let ns = |k: &str| r.get(k).and_then(Value::as_u64);
                Some((phase.clone(), (ns("start_ns")?, ns("end_ns")?)))
            })
            .collect();
        Self {
            phase_ranges,
            metrics,
            benchmark_id: text("benchmark_id"),
            aiperf_version: text("aiperf_version"),
            input_config: doc.get("input_config").cloned(),
        }
    }
}

/// The export names for a JSONL file name: `P_server_metrics.jsonl` keeps prefix `P`, anything
/// else gets the default names.
#[must_use]
pub fn names_for(jsonl: &Path) -> FileNames {
    let file = jsonl.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let prefix = file
        .strip_suffix("_server_metrics.jsonl")
        .filter(|p| !p.is_empty());
    FileNames::from_export_names(&crate::export::ExportNames::new(prefix))
}

/// Rebuilds the store from the JSONL text of the file at `path` (named in errors).
///
/// # Errors
/// [`Error::BadLine`] for the first invalid line, [`Error::NoRecords`] for a file without one.
pub fn store_from_jsonl(text: &str, catalog: &Catalog, path: &Path) -> Result<Store, Error> {
    let records = read_records(text).map_err(|(line, e)| Error::BadLine {
        path: path.to_path_buf(),
        line,
        message: e.to_string(),
    })?;
    if records.is_empty() {
        return Err(Error::NoRecords {
            path: path.to_path_buf(),
        });
    }
    let mut store = Store::default();
    for r in &records {
        let es = store.endpoint_mut(&r.endpoint_url);
        let phase = match r.benchmark_phase.as_deref() {
            Some("warmup") => Some(Phase::Warmup),
            Some("profiling") => Some(Phase::Profiling),
            _ => None,
        };
        es.record_phase_fetch(r.timestamp_ns, r.endpoint_latency_ns, false, phase);
        es.insert(r.timestamp_ns, &r.to_scrape(&catalog.metrics));
    }
    Ok(store)
}

/// `(first, last)` stamp of the lines of `phase`, over every endpoint.
fn phase_range(store: &Store, phase: Phase) -> Option<(u64, u64)> {
    store
        .endpoints
        .iter()
        .filter_map(|e| e.phase_span(phase))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

/// The windows of the re-processing. Without `--start-ns` / `--end-ns`, a JSONL whose lines
/// carry their phase (`benchmark_phase`, as AIPerf 0.13 and ringperf write them) is summarized
/// as the live run was: each phase from its first to its last line, the reference being the
/// line before (the live rule, [`Bounds::Phase`]), so every statistic is the run's own when
/// the file holds every fetch (no page was a duplicate of the one before). Otherwise the
/// given (or whole) window, values held between lines ([`Bounds::Held`]).
///
/// A phase's own range (`phase_time_ranges`) is the JSON export's beside the file when it
/// gives one, else the span of the phase's lines.
fn windows_for(
    store: &Store,
    catalog: &Catalog,
    opts: &Options,
    slice_ns: Option<u64>,
) -> Result<Windows, Error> {
    let range = |phase: Phase| {
        let lines = phase_range(store, phase)?;
        Some(
            catalog
                .phase_ranges
                .get(phase.as_str())
                .copied()
                .unwrap_or(lines),
        )
    };
    if let (None, None, Some((start_ns, end_ns))) =
        (opts.start_ns, opts.end_ns, range(Phase::Profiling))
    {
        let profiling = Window::phase(store, Phase::Profiling, start_ns, end_ns, slice_ns)
            .unwrap_or(Window {
                start_ns,
                end_ns,
                slice_ns,
                bounds: Bounds::Exact,
            });
        let warmup = range(Phase::Warmup)
            .and_then(|(a, b)| Window::phase(store, Phase::Warmup, a, b, slice_ns));
        return Ok(Windows {
            profiling,
            profiling_range: (start_ns, end_ns),
            parquet: Window::widened(store, start_ns, end_ns),
            warmup,
        });
    }
    let all_ts = store
        .endpoints
        .iter()
        .flat_map(|e| e.fetch_ts_ns.iter().copied());
    let (first, last) = all_ts.fold((u64::MAX, 0), |(a, b), t| (a.min(t), b.max(t)));
    let start_ns = opts.start_ns.unwrap_or(first);
    let end_ns = opts.end_ns.unwrap_or(last);
    if start_ns > end_ns {
        return Err(Error::EmptyWindow { start_ns, end_ns });
    }
    let window = Window {
        start_ns,
        end_ns,
        slice_ns,
        bounds: Bounds::Held,
    };
    Ok(Windows {
        profiling: window,
        profiling_range: (start_ns, end_ns),
        parquet: Window {
            slice_ns: None,
            bounds: Bounds::Exact,
            ..window
        },
        warmup: None,
    })
}

/// Refuses, unless `overwrite`, when a file the re-processing would write in `dir` exists: the
/// JSONL's own directory holds the run's exports, which must not be replaced unasked.
fn refuse_overwrite(
    dir: &Path,
    names: &FileNames,
    formats: &[Format],
    overwrite: bool,
) -> Result<(), Error> {
    if overwrite {
        return Ok(());
    }
    let paths: Vec<PathBuf> = [
        (Format::Csv, &names.csv),
        (Format::Json, &names.json),
        (Format::Parquet, &names.parquet),
    ]
    .into_iter()
    .filter(|(f, _)| formats.contains(f))
    .map(|(_, name)| dir.join(name))
    .filter(|p| p.exists())
    .collect();
    if paths.is_empty() {
        Ok(())
    } else {
        Err(Error::WouldOverwrite { paths })
    }
}

/// Runs the re-processing and returns the files written.
///
/// # Errors
/// An unreadable or invalid input, an empty window or an unwritable output, as [`Error`].
pub fn run(opts: &Options) -> Result<Vec<(&'static str, PathBuf)>, Error> {
    let path = &opts.from_jsonl;
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.clone(),
        source,
    })?;
    let names = names_for(path);
    let sibling = path.with_extension("json");
    let catalog = std::fs::read(&sibling)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|v| Catalog::from_json(&v))
        .unwrap_or_default();
    let store = store_from_jsonl(&text, &catalog, path)?;
    let slice_ns = opts
        .slice
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
    let windows = windows_for(&store, &catalog, opts, slice_ns)?;
    let dir = match &opts.artifact_dir {
        Some(d) => d.clone(),
        None => path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    refuse_overwrite(&dir, &names, &opts.formats, opts.overwrite)?;
    std::fs::create_dir_all(&dir).map_err(|source| Error::Create {
        path: dir.clone(),
        source,
    })?;
    let endpoints: Vec<String> = store.endpoints.iter().map(|e| e.url.clone()).collect();
    let benchmark_id = catalog
        .benchmark_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let input_config = catalog
        .input_config
        .clone()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let ctx = ExportContext {
        aiperf_version: catalog.aiperf_version.as_deref(),
        benchmark_id: Some(&benchmark_id),
        endpoints_configured: &endpoints,
        input_config: &input_config,
    };
    let models: Vec<String> = input_config
        .pointer("/models/items")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let meta = ParquetMeta {
        model_names: &models,
        concurrency: None,
        request_rate: None,
        export_time_ns: ringperf_wire::clock::wall_now_ns(),
    };
    write_exports(&dir, &names, &opts.formats, &store, &windows, &ctx, &meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server_metrics::store::SeriesData;

    const LINES: &str = concat!(
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":1000000000,"endpoint_latency_ns":5,"metrics":{"c":[{"value":10.0}],"g":[{"labels":{"m":"x"},"value":1.0}],"h":[{"buckets":{"1.0":1.0,"+Inf":2.0},"sum":3.0,"count":2.0}]}}"#,
        "\n\n",
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":3000000000,"endpoint_latency_ns":7,"metrics":{"c":[{"value":16.0}],"g":[{"labels":{"m":"x"},"value":3.0}],"h":[{"buckets":{"1.0":2.0,"+Inf":5.0},"sum":9.0,"count":5.0}]}}"#,
        "\n"
    );

    #[test]
    fn catalog_types_the_metrics_and_shapes_are_kept_without_it() {
        let doc: Value = serde_json::json!({
            "benchmark_id": "b-1",
            "metrics": {"c": {"type": "counter", "description": "a counter"}}
        });
        let cat = Catalog::from_json(&doc);
        assert_eq!(cat.benchmark_id.as_deref(), Some("b-1"));
        let store = store_from_jsonl(LINES, &cat, Path::new("x.jsonl")).unwrap();
        let ep = &store.endpoints[0];
        assert_eq!(ep.fetch_ts_ns, vec![1_000_000_000, 3_000_000_000]);
        assert_eq!(ep.update_ts_ns.len(), 2, "every line is a unique update");
        let c = &ep.series[&("c".to_owned(), vec![])];
        assert_eq!(
            (c.kind, c.description.as_str()),
            (MetricType::Counter, "a counter")
        );
        let g = &ep.series[&("g".to_owned(), vec![("m".to_owned(), "x".to_owned())])];
        assert_eq!(g.kind, MetricType::Unknown);
        let h = &ep.series[&("h".to_owned(), vec![])];
        assert_eq!(h.kind, MetricType::Histogram);
        let SeriesData::Histogram(hs) = &h.data else {
            panic!("histogram by shape")
        };
        assert_eq!(hs.row(1), &[2.0, 5.0]);
    }

    #[test]
    fn recomputes_files_over_the_default_window() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("run1_server_metrics.jsonl");
        std::fs::write(&jsonl, LINES).unwrap();
        std::fs::write(
            dir.path().join("run1_server_metrics.json"),
            r#"{"benchmark_id":"id-7","metrics":{"c":{"type":"counter","description":""}}}"#,
        )
        .unwrap();
        // The JSON beside the JSONL is the run's own: not replaced without `overwrite`; a
        // format whose file is absent is written.
        let opts = |formats: Vec<Format>, overwrite| Options {
            from_jsonl: jsonl.clone(),
            start_ns: None,
            end_ns: None,
            slice: Some(Duration::from_secs(1)),
            formats,
            artifact_dir: None,
            overwrite,
        };
        match run(&opts(vec![Format::Json, Format::Csv], false)) {
            Err(Error::WouldOverwrite { paths }) => {
                assert_eq!(paths, [dir.path().join("run1_server_metrics.json")]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            !dir.path().join("run1_server_metrics.csv").exists(),
            "nothing written"
        );
        run(&opts(vec![Format::Csv], false)).unwrap();
        let files = run(&opts(
            vec![Format::Json, Format::Csv, Format::Parquet],
            true,
        ))
        .unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.1.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "run1_server_metrics.csv",
                "run1_server_metrics.json",
                "run1_server_metrics.parquet"
            ]
        );
        let doc: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(&names[1])).unwrap()).unwrap();
        assert_eq!(doc["benchmark_id"], "id-7");
        // The first sample is the reference: 16 - 10 over the 2 s window.
        let c = &doc["metrics"]["c"]["series"][0]["stats"];
        assert_eq!(c["total"], 6.0);
        assert_eq!(c["rate"], 3.0);
        // Two complete 1 s slices: the counter stays at 10 until t=3 s.
        let slices = doc["metrics"]["c"]["series"][0]["timeslices"]
            .as_array()
            .unwrap();
        assert_eq!(slices.len(), 2);
        let h = &doc["metrics"]["h"]["series"][0]["stats"];
        assert_eq!(
            (h["count"].as_f64(), h["sum"].as_f64()),
            (Some(3.0), Some(6.0))
        );
    }

    /// A counter `c` at 1 s (baseline, 10), 2 s (warmup, 12), 3 s (profiling, 16) and 5 s
    /// (profiling, 22).
    const TAGGED: &str = concat!(
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":1000000000,"endpoint_latency_ns":5,"metrics":{"c":[{"value":10.0}]}}"#,
        "\n",
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":2000000000,"endpoint_latency_ns":5,"metrics":{"c":[{"value":12.0}]},"benchmark_phase":"warmup","phase_index":0,"phase_name":"warmup","phase_kind":"warmup"}"#,
        "\n",
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":3000000000,"endpoint_latency_ns":5,"metrics":{"c":[{"value":16.0}]},"benchmark_phase":"profiling","phase_index":1,"profiling_index":0,"phase_name":"profiling","phase_kind":"profiling"}"#,
        "\n",
        r#"{"endpoint_url":"http://h:1/metrics","timestamp_ns":5000000000,"endpoint_latency_ns":5,"metrics":{"c":[{"value":22.0}]},"benchmark_phase":"profiling","phase_index":1,"profiling_index":0,"phase_name":"profiling","phase_kind":"profiling"}"#,
        "\n"
    );

    #[test]
    fn phase_tagged_lines_are_summarized_per_phase_from_the_line_before() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("server_metrics_export.jsonl");
        std::fs::write(&jsonl, TAGGED).unwrap();
        std::fs::write(
            dir.path().join("server_metrics_export.json"),
            r#"{"metrics":{"c":{"type":"counter","description":""}},
               "summary":{"phase_time_ranges":{"profiling":{"start_ns":2500000000,"end_ns":4900000000}}}}"#,
        )
        .unwrap();
        let opts = Options {
            from_jsonl: jsonl,
            start_ns: None,
            end_ns: None,
            slice: None,
            formats: vec![Format::Json],
            artifact_dir: None,
            // The catalog JSON beside the file is replaced by the re-processed one.
            overwrite: true,
        };
        run(&opts).unwrap();
        let doc: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("server_metrics_export.json")).unwrap(),
        )
        .unwrap();
        // Profiling: 22 − 12 (the warmup line before) over 5 s − 2 s.
        let p = &doc["metrics"]["c"]["series"][0]["stats"];
        assert_eq!(p["total"], 10.0);
        assert_eq!(p["rate"].as_f64(), Some(10.0 / 3.0));
        // Warmup: 12 − 10 (the baseline line before) over 1 s.
        let w = &doc["warmup_metrics"]["c"]["series"][0]["stats"];
        assert_eq!(
            (w["total"].as_f64(), w["rate"].as_f64()),
            (Some(2.0), Some(2.0))
        );
        // The phase's own range comes from the JSON export beside the file.
        let range = &doc["summary"]["phase_time_ranges"]["profiling"];
        assert_eq!(range["start_ns"], 2_500_000_000u64);
        assert_eq!(range["end_ns"], 4_900_000_000u64);

        // An explicit window keeps the held-value rule: 22 − 12 (the value before the line at
        // 3 s) over the window's own 2 s.
        std::fs::write(
            dir.path().join("server_metrics_export.json"),
            r#"{"metrics":{"c":{"type":"counter","description":""}}}"#,
        )
        .unwrap();
        run(&Options {
            start_ns: Some(3_000_000_000),
            end_ns: Some(5_000_000_000),
            ..opts
        })
        .unwrap();
        let doc: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("server_metrics_export.json")).unwrap(),
        )
        .unwrap();
        assert!(doc.get("warmup_metrics").is_none());
        let p = &doc["metrics"]["c"]["series"][0]["stats"];
        assert_eq!(
            (p["total"].as_f64(), p["rate"].as_f64()),
            (Some(10.0), Some(5.0))
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        let x = Path::new("x.jsonl");
        let e = store_from_jsonl("", &Catalog::default(), x).unwrap_err();
        assert!(matches!(e, Error::NoRecords { .. }), "{e}");
        let e = store_from_jsonl("{\"x\":1}\n", &Catalog::default(), x).unwrap_err();
        assert!(matches!(e, Error::BadLine { line: 1, .. }), "{e}");
        assert!(
            e.to_string().starts_with("x.jsonl: line 1 is not a record"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, LINES).unwrap();
        let e = run(&Options {
            from_jsonl: p,
            start_ns: Some(5_000_000_000),
            end_ns: Some(4_000_000_000),
            slice: None,
            formats: vec![Format::Json],
            artifact_dir: None,
            overwrite: true,
        })
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::EmptyWindow {
                    start_ns: 5_000_000_000,
                    end_ns: 4_000_000_000
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("window is empty"), "{e}");
    }
}
