//! The run's own live figures in the Prometheus text format, as AIPerf 0.13's API serves them at
//! `/metrics` (docs/api.md): an `aiperf_info` gauge of the benchmark's labels, then for every
//! metric of the latest realtime snapshot a summary of its percentiles (with `_sum` and
//! `_count`) and a gauge per scalar statistic.
//!
//! The input is the snapshot's metrics in AIPerf's `MetricResult` JSON shape (`tag`, `header`,
//! `unit` and the statistics present), the same objects the API's JSON routes and WebSocket
//! messages carry, so all three agree by construction.

use serde_json::{Map, Value};

use super::py_float_str;

/// Percentile keys and their `quantile` label values.
const QUANTILES: [(&str, &str); 9] = [
    ("p1", "0.01"),
    ("p5", "0.05"),
    ("p10", "0.1"),
    ("p25", "0.25"),
    ("p50", "0.5"),
    ("p75", "0.75"),
    ("p90", "0.9"),
    ("p95", "0.95"),
    ("p99", "0.99"),
];

/// Scalar statistics exported as gauges, and the words of their help text.
const GAUGES: [(&str, &str); 5] = [
    ("avg", "average"),
    ("min", "minimum"),
    ("max", "maximum"),
    ("std", "standard deviation"),
    ("current", "current value"),
];

/// A metric or label name: lower case, anything outside `[a-z0-9_]` as `_`, a leading digit
/// prefixed with `_`.
pub fn sanitize_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A unit as a name suffix: `%` → `percent`, `/` → `_per_`, `tokens_per_sec` → `tps`, `__` →
/// `_` (once, in that order), then sanitized.
fn unit_suffix(unit: &str) -> String {
    let u = unit
        .replace('%', "percent")
        .replace('/', "_per_")
        .replace("tokens_per_sec", "tps")
        .replace("__", "_");
    sanitize_name(&u)
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers as integers, floats as Python prints them, `NaN`, `+Inf`, `-Inf`.
fn value(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        Value::Number(n) => n.as_f64().map(|f| {
            if f.is_nan() {
                "NaN".to_owned()
            } else if f.is_infinite() {
                if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
            } else {
                py_float_str(f)
            }
        }),
        _ => None,
    }
}

/// `{k="v",…}`, or nothing for no labels.
fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The page: `info` is the benchmark's labels in order (`benchmark_id`, `model`,
/// `endpoint_type`, `streaming`, `concurrency`, `request_rate`, whichever are known), `version`
/// the `version` label of `aiperf_info` only; `metrics` the snapshot's objects. Empty before
/// the first snapshot and without labels.
pub fn format(metrics: &[Value], info: &[(&str, String)], version: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let base: Vec<(&str, &str)> = info.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if !info.is_empty() {
        let mut with_version = base.clone();
        with_version.push(("version", version));
        // One block ending in its own newline, joined to the rest by another: AIPerf's page
        // has a blank line after it.
        lines.push(format!(
            "# HELP aiperf_info AIPerf benchmark information\n# TYPE aiperf_info gauge\n\
             aiperf_info{} 1\n",
            labels(&with_version)
        ));
    }
    let base_labels = labels(&base);
    for m in metrics {
        let Some(obj) = m.as_object() else {
            continue;
        };
        metric(obj, &base, &base_labels, &mut lines);
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn metric(
    obj: &Map<String, Value>,
    base: &[(&str, &str)],
    base_labels: &str,
    out: &mut Vec<String>,
) {
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let (tag, header, unit) = (text("tag"), text("header"), text("unit"));
    let name = format!("aiperf_{}", sanitize_name(tag));
    let suffix = if unit.is_empty() {
        String::new()
    } else {
        format!("_{}", unit_suffix(unit))
    };
    let stat = |k: &str| obj.get(k).filter(|v| !v.is_null()).and_then(value);
    let quantiles: Vec<String> = QUANTILES
        .iter()
        .filter_map(|(k, q)| {
            let v = stat(k)?;
            let mut l = base.to_vec();
            l.push(("quantile", q));
            Some(format!("{name}{suffix}{} {v}", labels(&l)))
        })
        .collect();
    let (count, sum) = (stat("count"), stat("sum"));
    let has_quantiles = !quantiles.is_empty();
    if has_quantiles {
        let summary = format!("{name}{suffix}");
        out.push(format!(
            "# HELP {summary} {}",
            escape_help(&format!("{header} (in {unit})"))
        ));
        out.push(format!("# TYPE {summary} summary"));
        out.extend(quantiles);
        if let Some(s) = &sum {
            out.push(format!("{summary}_sum{base_labels} {s}"));
        }
        if let Some(c) = &count {
            out.push(format!("{summary}_count{base_labels} {c}"));
        }
    }
    let mut gauge = |stat_name: &str, words: &str, v: &str| {
        let g = format!("{name}_{stat_name}{suffix}");
        out.push(format!(
            "# HELP {g} {}",
            escape_help(&format!("{header} {words} (in {unit})"))
        ));
        out.push(format!("# TYPE {g} gauge"));
        out.push(format!("{g}{base_labels} {v}"));
    };
    for (k, words) in GAUGES {
        if let Some(v) = stat(k) {
            gauge(k, words, &v);
        }
    }
    if !has_quantiles {
        if let Some(c) = &count {
            gauge("count", "observation count", c);
        }
        if let Some(s) = &sum {
            gauge("sum", "observation sum", s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_distribution_is_a_summary_then_gauges_and_a_scalar_only_gauges() {
        let metrics = vec![
            json!({"unit": "ms", "avg": 100.0, "p50": 95.0, "p99": 195.0, "min": 10.0,
                   "max": 200.5, "std": 1.5, "count": 500, "sum": 50000.0,
                   "tag": "request_latency", "header": "Request Latency"}),
            json!({"unit": "requests/sec", "avg": 12.5, "tag": "request_throughput",
                   "header": "Request Throughput"}),
            json!({"unit": "tokens/sec/user", "avg": 1e20, "count": 3, "sum": 7,
                   "tag": "output_token_throughput_per_user", "header": "Output Token Throughput Per User"}),
        ];
        let info = [
            ("benchmark_id", "b1".to_owned()),
            ("model", "m\"x".to_owned()),
            ("streaming", "true".to_owned()),
        ];
        let l = r#"{benchmark_id="b1",model="m\"x",streaming="true"}"#;
        let expected = [
            "# HELP aiperf_info AIPerf benchmark information".to_owned(),
            "# TYPE aiperf_info gauge".to_owned(),
            r#"aiperf_info{benchmark_id="b1",model="m\"x",streaming="true",version="0.13.0"} 1"#
                .to_owned(),
            String::new(),
            "# HELP aiperf_request_latency_ms Request Latency (in ms)".to_owned(),
            "# TYPE aiperf_request_latency_ms summary".to_owned(),
            r#"aiperf_request_latency_ms{benchmark_id="b1",model="m\"x",streaming="true",quantile="0.5"} 95.0"#.to_owned(),
            r#"aiperf_request_latency_ms{benchmark_id="b1",model="m\"x",streaming="true",quantile="0.99"} 195.0"#.to_owned(),
            format!("aiperf_request_latency_ms_sum{l} 50000.0"),
            format!("aiperf_request_latency_ms_count{l} 500"),
            "# HELP aiperf_request_latency_avg_ms Request Latency average (in ms)".to_owned(),
            "# TYPE aiperf_request_latency_avg_ms gauge".to_owned(),
            format!("aiperf_request_latency_avg_ms{l} 100.0"),
            "# HELP aiperf_request_latency_min_ms Request Latency minimum (in ms)".to_owned(),
            "# TYPE aiperf_request_latency_min_ms gauge".to_owned(),
            format!("aiperf_request_latency_min_ms{l} 10.0"),
            "# HELP aiperf_request_latency_max_ms Request Latency maximum (in ms)".to_owned(),
            "# TYPE aiperf_request_latency_max_ms gauge".to_owned(),
            format!("aiperf_request_latency_max_ms{l} 200.5"),
            "# HELP aiperf_request_latency_std_ms Request Latency standard deviation (in ms)"
                .to_owned(),
            "# TYPE aiperf_request_latency_std_ms gauge".to_owned(),
            format!("aiperf_request_latency_std_ms{l} 1.5"),
            "# HELP aiperf_request_throughput_avg_requests_per_sec Request Throughput average (in requests/sec)".to_owned(),
            "# TYPE aiperf_request_throughput_avg_requests_per_sec gauge".to_owned(),
            format!("aiperf_request_throughput_avg_requests_per_sec{l} 12.5"),
            // `tokens/sec/user` → `tokens_per_sec_per_user` → `tps_per_user`.
            "# HELP aiperf_output_token_throughput_per_user_avg_tps_per_user Output Token Throughput Per User average (in tokens/sec/user)".to_owned(),
            "# TYPE aiperf_output_token_throughput_per_user_avg_tps_per_user gauge".to_owned(),
            format!("aiperf_output_token_throughput_per_user_avg_tps_per_user{l} 1e+20"),
            "# HELP aiperf_output_token_throughput_per_user_count_tps_per_user Output Token Throughput Per User observation count (in tokens/sec/user)".to_owned(),
            "# TYPE aiperf_output_token_throughput_per_user_count_tps_per_user gauge".to_owned(),
            format!("aiperf_output_token_throughput_per_user_count_tps_per_user{l} 3"),
            "# HELP aiperf_output_token_throughput_per_user_sum_tps_per_user Output Token Throughput Per User observation sum (in tokens/sec/user)".to_owned(),
            "# TYPE aiperf_output_token_throughput_per_user_sum_tps_per_user gauge".to_owned(),
            format!("aiperf_output_token_throughput_per_user_sum_tps_per_user{l} 7"),
        ];
        let got = format(&metrics, &info, "0.13.0");
        assert_eq!(got, expected.join("\n") + "\n");
    }

    #[test]
    fn nothing_before_the_first_snapshot_and_names_are_sanitized() {
        assert_eq!(format(&[], &[], "0.13.0"), "");
        assert_eq!(sanitize_name("9Lives-x.y"), "_9lives_x_y");
        assert_eq!(unit_suffix("%"), "percent");
        assert_eq!(unit_suffix("tokens/sec"), "tps");
        let m = vec![json!({"unit": "", "avg": f64::MAX, "tag": "x", "header": "X"})];
        let page = format(&m, &[], "0.13.0");
        assert!(
            page.ends_with("aiperf_x_avg 1.7976931348623157e+308\n"),
            "{page}"
        );
    }
}
