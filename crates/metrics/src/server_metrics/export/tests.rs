//! Server-metrics exports against the real vLLM captures (tests/data/) and hand-built reports.

use super::*;
use crate::server_metrics::analysis::Bounds;
use ringperf_wire::prom::MetricType;
use ringperf_wire::prom::parse_scrape;
use std::collections::{BTreeMap, HashMap};

const IDLE: &[u8] = include_bytes!("../../../../../tests/data/vllm-cpu-metrics-idle.txt");
const DURING: &[u8] = include_bytes!("../../../../../tests/data/vllm-cpu-metrics-during-load.txt");
const AFTER: &[u8] = include_bytes!("../../../../../tests/data/vllm-cpu-metrics-after-load.txt");

pub(super) const URL: &str = "http://localhost:8000/metrics";
const S: u64 = 1_000_000_000;

/// Baseline (idle) at 1 s, during-load at 3 s, after-load at 5 s; window [2 s, 5 s].
pub(super) fn fixture_store() -> Store {
    let mut store = Store::default();
    let ep = store.endpoint_mut(URL);
    for (t, lat, page) in [(1, 2, IDLE), (3, 4, DURING), (5, 6, AFTER)] {
        let dup = ep.check_duplicate(page);
        ep.record_fetch(t * S, lat * 1_000_000, dup);
        ep.insert(t * S, &parse_scrape(page).unwrap());
    }
    store
}

pub(super) fn window() -> Window {
    Window {
        start_ns: 2 * S,
        end_ns: 5 * S,
        slice_ns: None,
        bounds: Bounds::Exact,
    }
}

pub(super) fn windows() -> Windows {
    let w = window();
    Windows {
        profiling: w,
        profiling_range: (w.start_ns, w.end_ns),
        parquet: w,
        warmup: None,
    }
}

pub(super) fn configured() -> Vec<String> {
    vec![URL.to_owned(), "http://down:1/metrics".to_owned()]
}

#[test]
fn json_export_fields() {
    let store = fixture_store();
    let report = compute_report(&store, &windows());
    let input = serde_json::json!({"model": "tiny-llm"});
    let eps = configured();
    let ctx = ExportContext {
        aiperf_version: Some("0.13.0"),
        benchmark_id: Some("bid-1"),
        endpoints_configured: &eps,
        input_config: &input,
    };
    let mut buf = Vec::new();
    json::write(&mut buf, &report, &ctx).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(text.starts_with("{\n  \"schema_version\": \"1.1\",\n"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "aiperf_version",
            "benchmark_id",
            "summary",
            "metrics_phase",
            "metrics",
            "input_config"
        ]
    );
    assert_eq!(v["aiperf_version"], "0.13.0");
    assert_eq!(v["benchmark_id"], "bid-1");
    assert_eq!(v["metrics_phase"], "profiling");
    assert_eq!(v["input_config"], input);
    let sum = &v["summary"];
    assert_eq!(sum["endpoints_configured"], serde_json::json!(eps));
    assert_eq!(sum["endpoints_successful"], serde_json::json!([URL]));
    // Whole seconds have no fraction, as pydantic writes AIPerf's datetimes.
    assert_eq!(sum["start_time"], "1970-01-01T00:00:02");
    assert_eq!(sum["end_time"], "1970-01-01T00:00:05");
    assert_eq!(
        sum["phase_time_ranges"]["profiling"],
        serde_json::json!({"start_ns": 2 * S, "end_ns": 5 * S})
    );
    let info = &sum["endpoint_info"][URL];
    assert_eq!(info["total_fetches"], 3);
    assert_eq!(info["unique_updates"], 3);
    assert_eq!(info["first_fetch_ns"], S);
    assert_eq!(info["last_update_ns"], 5 * S);
    assert_eq!(info["avg_fetch_latency_ms"], 4.0);
    assert_eq!(info["duration_seconds"], 4.0);
    assert_eq!(info["avg_update_interval_ms"], 2000.0);
    assert_eq!(info["median_update_interval_ms"], 2000.0);

    let m = &v["metrics"];
    let names: Vec<&String> = m.as_object().unwrap().keys().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    // Counter: 10348 (after) − 0 (idle baseline at 1 s) over 4 s.
    let pt = &m["vllm:prompt_tokens"];
    assert_eq!(
        (pt["type"].as_str(), pt["unit"].as_str()),
        (Some("counter"), Some("tokens"))
    );
    assert_eq!(pt["description"], "Number of prefill tokens processed.");
    let s0 = &pt["series"][0];
    assert_eq!(s0["endpoint_url"], URL);
    assert_eq!(
        s0["labels"],
        serde_json::json!({"engine": "0", "model_name": "tiny-llm"})
    );
    assert_eq!(
        s0["stats"],
        serde_json::json!({"total": 10348.0, "rate": 2587.0})
    );
    assert!(s0.get("timeslices").is_none());
    // Gauge: in-window values 3 (3 s) and 0 (5 s).
    let run = &m["vllm:num_requests_running"]["series"][0]["stats"];
    assert_eq!(
        (
            run["avg"].as_f64(),
            run["min"].as_f64(),
            run["max"].as_f64()
        ),
        (Some(1.5), Some(0.0), Some(3.0))
    );
    assert!((run["std"].as_f64().unwrap() - 4.5f64.sqrt()).abs() < 1e-12);
    assert_eq!(run["p50"], 1.5);
    assert_eq!(m["vllm:kv_cache_usage_perc"]["unit"], "ratio");
    // Histogram: deltas from the idle baseline (all zero) to after-load.
    let h = &m["vllm:request_prompt_tokens"]["series"][0];
    assert_eq!(h["stats"]["count"], 204);
    assert_eq!(h["stats"]["sum"], 10348.0);
    assert_eq!(h["stats"]["count_rate"], 51.0);
    assert_eq!(h["stats"]["sum_rate"], 2587.0);
    assert_eq!(h["buckets"]["50.0"], 4);
    assert_eq!(h["buckets"]["100.0"], 204);
    assert_eq!(h["buckets"]["+Inf"], 204);
    let p50 = h["stats"]["p50_estimate"].as_f64().unwrap();
    assert!((50.0..=100.0).contains(&p50), "{p50}");
    let p: Vec<f64> = crate::server_metrics::summary::ESTIMATE_KEYS
        .iter()
        .map(|k| h["stats"][*k].as_f64().unwrap())
        .collect();
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    assert!(m.get("http_request_size_bytes").is_none());
}

#[test]
fn csv_export_layout() {
    let store = fixture_store();
    let report = compute_report(&store, &windows());
    let input = serde_json::json!({});
    let eps = configured();
    let ctx = ExportContext {
        aiperf_version: Some("0.13.0"),
        benchmark_id: Some("bid-1"),
        endpoints_configured: &eps,
        input_config: &input,
    };
    let text = csv::render(&report, &ctx);
    let head = "# AIPerf Server Metrics Export (CSV)\n# aiperf_version: 0.13.0\n# schema_version: 1.0\n\
        # benchmark_id: bid-1\n# Note: Same benchmark_id and version appear in JSON and Parquet exports\n#\n";
    assert!(text.starts_with(head));
    let body = &text[head.len()..];
    assert!(body.ends_with("\r\n"));
    let rows: Vec<&str> = body.split("\r\n").collect();
    // Gauge section: every label occurs in several series (reason in 2, sleep_state in 3,
    // engine/model_name in all), so all are bridge labels, sorted.
    assert_eq!(
        rows[0],
        "Endpoint,Type,Metric,Unit,avg,min,max,std,p1,p5,p10,p25,p50,p75,p90,p95,p99,\
         engine,model_name,reason,sleep_state,Description"
    );
    // Unlabelled rows sort first (fill pattern 0000), then by metric name.
    assert!(rows[1].starts_with("localhost:8000,gauge,process_max_fds,,"));
    let running = rows
        .iter()
        .find(|r| r.contains(",vllm:num_requests_running,"))
        .unwrap();
    assert_eq!(
        *running,
        "localhost:8000,gauge,vllm:num_requests_running,requests,1.5000,0.0000,3.0000,2.1213,\
         0.0300,0.1500,0.3000,0.7500,1.5000,2.2500,2.7000,2.8500,2.9700,0,tiny-llm,,,\
         Number of requests in model execution batches."
    );
    let counter_header = rows
        .iter()
        .position(|r| r.starts_with("Endpoint,Type,Metric,Unit,total,"))
        .unwrap();
    assert_eq!(
        rows[counter_header - 1],
        "",
        "sections are separated by a blank row"
    );
    let pt = rows
        .iter()
        .find(|r| r.contains(",vllm:prompt_tokens,"))
        .unwrap();
    assert!(
        pt.starts_with(
            "localhost:8000,counter,vllm:prompt_tokens,tokens,10348.0000,2587.0000,,,,,"
        ),
        "{pt}"
    );
    let hist_header = rows
        .iter()
        .find(|r| r.contains(",count,count_rate,sum,sum_rate,avg,p1_estimate,"))
        .unwrap();
    assert!(hist_header.ends_with(",Description,buckets"));
    let h = rows
        .iter()
        .find(|r| r.contains(",vllm:request_prompt_tokens,"))
        .unwrap();
    assert!(h.starts_with("localhost:8000,histogram,vllm:request_prompt_tokens,tokens,204,51.0000,10348.0000,2587.0000,50.7255,"), "{h}");
    assert!(h.ends_with(",1.0=0;2.0=0;5.0=2;10.0=2;20.0=2;50.0=4;100.0=204;200.0=204;500.0=204;1000.0=204;2000.0=204;+Inf=204"), "{h}");
    let info_header = rows
        .iter()
        .position(|r| *r == "Endpoint,Metric,Key,Value,Description")
        .unwrap();
    assert!(rows[info_header + 1..].contains(
        &"localhost:8000,python_info,implementation,CPython,Python platform information"
    ));
    assert!(
        rows[info_header + 1..]
            .iter()
            .all(|r| r.is_empty() || !r.contains(",gauge,"))
    );
}

#[test]
fn label_column_families() {
    let cols = csv::label_columns([vec!["b", "z"], vec!["b", "y"], vec!["a"], vec![]]);
    // Families {b,y,z} (min b) and {a} (min a): a first; in {b,y,z}, y and z are exclusive.
    assert_eq!(cols, ["a", "y", "z", "b"]);
    // A label seen in two series (even of one metric) is a bridge.
    let cols = csv::label_columns([vec!["m", "r"], vec!["m", "r"], vec!["m", "x"]]);
    assert_eq!(cols, ["x", "m", "r"]);
}

#[test]
fn display_names() {
    assert_eq!(
        endpoint_display("http://localhost:8000/metrics"),
        "localhost:8000"
    );
    assert_eq!(endpoint_display("https://h:1/prometheus/metrics"), "h:1");
    assert_eq!(endpoint_display("h:2"), "h:2");
}

#[test]
fn jsonl_record_shape_and_round_trip() {
    let page = b"# HELP g Gauge.\n# TYPE g gauge\ng 12\n# TYPE c_total counter\nc_total{k=\"v\"} 3\n\
        # TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n";
    let scrape = parse_scrape(page).unwrap();
    let mut rec = jsonl::ScrapeRecord::from_scrape(URL, 7, 9, &scrape);
    rec.first_byte_ns = Some(7);
    let mut buf = Vec::new();
    rec.write_line(&mut buf).unwrap();
    let line = String::from_utf8(buf).unwrap();
    assert_eq!(
        line,
        "{\"endpoint_url\":\"http://localhost:8000/metrics\",\"timestamp_ns\":7,\
         \"endpoint_latency_ns\":9,\"metrics\":{\"c\":[{\"labels\":{\"k\":\"v\"},\"value\":3.0}],\
         \"g\":[{\"value\":12.0}],\"h\":[{\"buckets\":{\"0.1\":1.0,\"+Inf\":2.0},\"sum\":0.5,\
         \"count\":2.0}]},\"first_byte_ns\":7}\n"
    );
    let back = jsonl::read_records(&line).unwrap();
    assert_eq!(back, vec![rec.clone()]);
    let mut catalog = BTreeMap::new();
    catalog.insert("g".to_owned(), (MetricType::Gauge, "Gauge.".to_owned()));
    catalog.insert("c".to_owned(), (MetricType::Counter, String::new()));
    let mut rebuilt = back[0].to_scrape(&catalog);
    let mut orig = scrape;
    rebuilt.families.sort_by(|a, b| a.name.cmp(&b.name));
    orig.families.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(rebuilt, orig);
    assert!(jsonl::read_records("{\"bad\": 1}\n").is_err());
}

mod parquet_read {
    use super::*;
    use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::DataType;

    fn write_and_read(store: &Store, w: &Window) -> (RecordBatch, HashMap<String, String>, String) {
        let input = serde_json::json!({"model": "tiny-llm"});
        let eps = configured();
        let ctx = ExportContext {
            aiperf_version: Some("0.13.0"),
            benchmark_id: Some("bid-1"),
            endpoints_configured: &eps,
            input_config: &input,
        };
        let models = vec!["tiny-llm".to_owned()];
        let meta = parquet::ParquetMeta {
            model_names: &models,
            concurrency: Some(4),
            request_rate: None,
            export_time_ns: 6 * S,
        };
        let file = tempfile::tempfile().unwrap();
        parquet::write(file.try_clone().unwrap(), store, w, &ctx, &meta).unwrap();
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        let kv: HashMap<String, String> = builder
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .filter_map(|kv| Some((kv.key.clone(), kv.value.clone()?)))
            .collect();
        let arrow_meta = builder.schema().metadata().clone();
        assert_eq!(
            arrow_meta.get("aiperf.benchmark_id").map(String::as_str),
            Some("bid-1")
        );
        let codec = format!(
            "{:?}",
            builder.metadata().row_group(0).column(0).compression()
        );
        let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
        let batch = arrow_select_concat(&batches);
        (batch, kv, codec)
    }

    fn arrow_select_concat(batches: &[RecordBatch]) -> RecordBatch {
        assert_eq!(
            batches.len(),
            1,
            "one row group, one batch for these small files"
        );
        batches[0].clone()
    }

    fn s<'a>(b: &'a RecordBatch, col: &str) -> &'a StringArray {
        b.column_by_name(col)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
    }

    fn f<'a>(b: &'a RecordBatch, col: &str) -> &'a Float64Array {
        b.column_by_name(col)
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
    }

    /// A counter, a gauge and a histogram scraped at 1 s and 3 s, exported over 2..4 s: the
    /// batch, the file's key-value metadata and its codec.
    fn small_store_export() -> (RecordBatch, HashMap<String, String>, String) {
        let mut store = Store::default();
        let ep = store.endpoint_mut(URL);
        let p0 = b"# TYPE c_total counter\nc_total{value=\"x\",b=\"1\"} 10\n# TYPE g gauge\ng{a=\"1\"} 5\n\
            # HELP h_seconds Latency.\n# TYPE h_seconds histogram\nh_seconds_bucket{le=\"1\"} 1\n\
            h_seconds_bucket{le=\"+Inf\"} 2\nh_seconds_sum 3\nh_seconds_count 2\n";
        let p1 = b"# TYPE c_total counter\nc_total{value=\"x\",b=\"1\"} 14\n# TYPE g gauge\ng{a=\"1\"} 7\n\
            # HELP h_seconds Latency.\n# TYPE h_seconds histogram\nh_seconds_bucket{le=\"1\"} 4\n\
            h_seconds_bucket{le=\"+Inf\"} 6\nh_seconds_sum 9\nh_seconds_count 6\n";
        ep.insert(S, &parse_scrape(p0).unwrap());
        ep.insert(3 * S, &parse_scrape(p1).unwrap());
        let w = Window {
            start_ns: 2 * S,
            end_ns: 4 * S,
            slice_ns: None,
            bounds: Bounds::Exact,
        };
        write_and_read(&store, &w)
    }

    #[test]
    fn small_store_columns() {
        let (b, _, codec) = small_store_export();
        assert_eq!(codec, "SNAPPY");
        let names: Vec<String> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        // The label named "value" collides with a reserved column and is dropped.
        assert_eq!(
            names,
            [
                "endpoint_url",
                "metric_name",
                "metric_type",
                "unit",
                "description",
                "timestamp_ns",
                "a",
                "b",
                "value",
                "sum",
                "count",
                "bucket_le",
                "bucket_count"
            ]
        );
        assert_eq!(
            b.schema()
                .field_with_name("timestamp_ns")
                .unwrap()
                .data_type(),
            &DataType::Int64
        );
        assert_eq!(
            b.schema()
                .field_with_name("bucket_count")
                .unwrap()
                .data_type(),
            &DataType::Float64
        );
        assert_eq!(
            b.schema().field_with_name("a").unwrap().data_type(),
            &DataType::Utf8
        );
    }

    #[test]
    fn small_store_rows() {
        let (b, _, _) = small_store_export();
        // One in-window timestamp (3 s): counter 1 row, gauge 1 row, histogram 2 bucket rows.
        assert_eq!(b.num_rows(), 4);
        let names = s(&b, "metric_name");
        let got: Vec<&str> = (0..4).map(|i| names.value(i)).collect();
        assert_eq!(got, ["c", "g", "h_seconds", "h_seconds"]);
        let ts = b
            .column_by_name("timestamp_ns")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert!((0..4).all(|i| ts.value(i) == 3_000_000_000));
        let value = f(&b, "value");
        assert_eq!((value.value(0), value.value(1)), (4.0, 7.0)); // counter delta, gauge raw
        assert!(value.is_null(2));
        assert_eq!(s(&b, "metric_type").value(0), "counter");
        assert_eq!(s(&b, "b").value(0), "1");
        assert!(s(&b, "a").is_null(0));
        assert!(s(&b, "unit").is_null(1));
        assert_eq!(s(&b, "unit").value(2), "seconds");
        assert!(s(&b, "description").is_null(0));
        assert_eq!(s(&b, "description").value(2), "Latency.");
        let (le, bc, sum, count) = (
            s(&b, "bucket_le"),
            f(&b, "bucket_count"),
            f(&b, "sum"),
            f(&b, "count"),
        );
        assert_eq!(
            (le.value(2), bc.value(2), sum.value(2), count.value(2)),
            ("1", 3.0, 6.0, 4.0)
        );
        assert_eq!((le.value(3), bc.value(3)), ("+Inf", 4.0));
    }

    #[test]
    fn small_store_metadata() {
        let (_, kv, _) = small_store_export();
        let keys = [
            "schema_version",
            "version",
            "benchmark_id",
            "exporter",
            "export_timestamp_utc",
            "time_filter_start_ns",
            "time_filter_end_ns",
            "profiling_duration_ns",
            "profiling_duration_seconds",
            "endpoint_urls",
            "endpoint_count",
            "label_columns",
            "label_count",
            "metric_count",
            "metric_type_counts",
            "model_names",
            "concurrency",
            "input_config",
            "hostname",
            "python_version",
            "pyarrow_version",
            "schema_note",
        ];
        for k in keys {
            assert!(
                kv.contains_key(&format!("aiperf.{k}")),
                "missing aiperf.{k}"
            );
        }
        assert_eq!(kv["aiperf.schema_version"], "1.0");
        assert_eq!(kv["aiperf.benchmark_id"], "bid-1");
        assert_eq!(kv["aiperf.time_filter_start_ns"], "2000000000");
        assert_eq!(kv["aiperf.profiling_duration_seconds"], "2.0");
        assert!(
            !kv.contains_key("aiperf.request_rate"),
            "absent when no rate is set"
        );
        assert_eq!(
            kv["aiperf.python_version"],
            concat!("ringperf ", env!("CARGO_PKG_VERSION"))
        );
        assert!(
            kv["aiperf.pyarrow_version"].starts_with("parquet-rs version "),
            "{}",
            kv["aiperf.pyarrow_version"]
        );
        assert_eq!(kv["aiperf.label_columns"], r#"["a","b"]"#);
        assert_eq!(kv["aiperf.label_count"], "2");
        assert_eq!(kv["aiperf.metric_count"], "3");
        assert_eq!(
            kv["aiperf.metric_type_counts"],
            r#"{"counter":1,"gauge":1,"histogram":1,"unknown":0}"#
        );
        assert_eq!(kv["aiperf.endpoint_urls"], format!("[\"{URL}\"]"));
        assert_eq!(kv["aiperf.model_names"], r#"["tiny-llm"]"#);
        assert_eq!(kv["aiperf.concurrency"], "4");
        assert_eq!(kv["aiperf.input_config"], r#"{"model":"tiny-llm"}"#);
        assert_eq!(
            kv["aiperf.export_timestamp_utc"],
            "1970-01-01T00:00:06.000000+00:00"
        );
    }

    #[test]
    fn vllm_fixture_rows() {
        let store = fixture_store();
        let (b, kv, _) = write_and_read(&store, &window());
        let cols: Vec<String> = serde_json::from_str(&kv["aiperf.label_columns"]).unwrap();
        let mut sorted = cols.clone();
        sorted.sort();
        assert_eq!(cols, sorted);
        assert!(cols.contains(&"engine".to_owned()) && cols.contains(&"model_name".to_owned()));
        let names = s(&b, "metric_name");
        let rows = |m: &str| {
            (0..b.num_rows())
                .filter(|&i| names.value(i) == m)
                .collect::<Vec<_>>()
        };
        let pt = rows("vllm:prompt_tokens");
        let value = f(&b, "value");
        // Deltas from the idle baseline (0) at 3 s and 5 s.
        assert_eq!(
            pt.iter().map(|&i| value.value(i)).collect::<Vec<_>>(),
            [7958.0, 10348.0]
        );
        let h = rows("vllm:request_prompt_tokens");
        assert_eq!(h.len(), 24, "12 buckets × 2 in-window timestamps");
        let (le, bc) = (s(&b, "bucket_le"), f(&b, "bucket_count"));
        let last50 = h.iter().rev().find(|&&i| le.value(i) == "50.0").unwrap();
        assert_eq!(bc.value(*last50), 4.0);
        assert_eq!(f(&b, "count").value(*last50), 204.0);
        assert!(rows("http_request_size_bytes").is_empty());
    }
}

#[test]
fn phase_data_is_aiperfs_per_phase_result() {
    use crate::server_metrics::export::phase::{PhaseIdent, phase_data};
    use ringperf_wire::record::Phase;
    let mut store = Store::default();
    let ep = store.endpoint_mut(URL);
    // Baseline, then one warmup fetch only: a single update, so no update interval.
    let untyped: &[u8] = b"stray 3\n";
    for (t, phase, page) in [(1, None, IDLE), (2, Some(Phase::Warmup), untyped)] {
        let dup = ep.check_duplicate(page);
        ep.record_phase_fetch(t * S, 4_000_000, dup, phase);
        ep.insert(t * S, &parse_scrape(page).unwrap());
    }
    let layout = crate::export::jsonl::PhaseLayout::simple(true);
    let warmup = PhaseIdent {
        tag: layout.tag(Phase::Warmup, None),
        one_of_several: false,
    };
    let d = phase_data(&store, warmup, None, Some("b1")).expect("warmup was scraped");
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "benchmark_id",
            "end_ns",
            "endpoint_summaries",
            "endpoints_configured",
            "endpoints_successful",
            "error_summary",
            "phase",
            "phase_index",
            "phase_kind",
            "phase_name",
            "phase_results",
            "start_ns"
        ]
    );
    assert_eq!(
        (d["start_ns"].as_u64(), d["end_ns"].as_u64()),
        (Some(2 * S), Some(2 * S))
    );
    let ep = &d["endpoint_summaries"]["localhost:8000"];
    assert_eq!(ep["endpoint_url"], URL);
    assert_eq!(
        ep["info"],
        serde_json::json!({
            "avg_fetch_latency_ms": 4.0,
            "avg_update_interval_ms": 0.0,
            "duration_seconds": 0.0,
            "first_fetch_ns": 2 * S,
            "first_update_ns": 2 * S,
            "last_fetch_ns": 2 * S,
            "last_update_ns": 2 * S,
            "total_fetches": 1,
            "unique_updates": 1
        })
    );
    // An untyped metric keeps its own type here; no unit, no per-series endpoint_url.
    let stray = &ep["metrics"]["stray"];
    assert_eq!(stray["type"], "unknown");
    assert!(stray.get("unit").is_none());
    assert!(stray["series"][0].get("endpoint_url").is_none());
    assert_eq!(stray["series"][0]["stats"]["avg"], 3.0);
    // Nothing was sent during profiling: no result (and so no file).
    let profiling = PhaseIdent {
        tag: layout.tag(Phase::Profiling, None),
        one_of_several: false,
    };
    assert!(phase_data(&store, profiling, None, Some("b1")).is_none());
}
