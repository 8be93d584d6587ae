//! `profile_export_aiperf.csv` (docs/output-formats.md): a distribution and a scalar section,
//! rows sorted by tag, CRLF line ends, Python `csv.writer` quoting.

use crate::aggregate::registry::Unit;
use crate::aggregate::{MetricResult, ResultValue, Summary};

const DIST_HEADER: [&str; 15] = [
    "Metric", "avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
    "p99", "std",
];

/// Python's `f"{v:.2f}"`, including `inf`, `-inf` and `nan`.
pub fn fmt2(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v:.2}")
    }
}

/// One field quoted as Python's `csv.writer` (QUOTE_MINIMAL) does.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn row(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
    out.push_str(&line.join(","));
    out.push_str("\r\n");
}

/// `"<Header> (<unit>)"`, without the unit for plain counts (`requests`, `count`), as AIPerf.
fn label(r: &MetricResult) -> String {
    let unit = r.def.shown_unit();
    if matches!(unit, Unit::Requests | Unit::Count) {
        r.header().into_owned()
    } else {
        format!("{} ({})", r.header(), unit.as_str())
    }
}

/// The CSV text. Hidden metrics are left out.
pub fn summary_csv(summary: &Summary) -> String {
    let mut results: Vec<&MetricResult> =
        summary.results.iter().filter(|r| !r.def.hidden()).collect();
    results.sort_by_key(|r| r.tag());
    let mut out = String::new();
    let dists: Vec<_> = results
        .iter()
        .filter(|r| matches!(r.value, ResultValue::Dist(_) | ResultValue::TimeWeighted(_)))
        .collect();
    if !dists.is_empty() {
        row(&mut out, &DIST_HEADER.map(String::from));
        for r in dists {
            let s = match &r.value {
                ResultValue::Dist(s) => s,
                // Sweep-line stats: no sum, p1, p5, p10, p25 or p75 (empty cells).
                ResultValue::TimeWeighted(t) => {
                    let e = String::new;
                    let mut cells = vec![label(r), fmt2(t.avg), fmt2(t.min), fmt2(t.max), e()];
                    cells.extend([e(), e(), e(), e(), fmt2(t.p50), e()]);
                    cells.extend([fmt2(t.p90), fmt2(t.p95), fmt2(t.p99), fmt2(t.std)]);
                    row(&mut out, &cells);
                    continue;
                }
                ResultValue::Scalar(_) | ResultValue::Share { .. } => continue,
            };
            let d = |v: f64| fmt2(r.def.to_display(v));
            let mut cells = vec![label(r), d(s.avg), d(s.min), d(s.max), d(s.sum)];
            cells.extend(s.pct.iter().map(|v| d(*v)));
            cells.push(s.std.map(d).unwrap_or_default());
            row(&mut out, &cells);
        }
    }
    let scalars: Vec<_> = results
        .iter()
        .filter(|r| matches!(r.value, ResultValue::Scalar(_) | ResultValue::Share { .. }))
        .collect();
    if !scalars.is_empty() {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        row(&mut out, &["Metric".into(), "Value".into()]);
        for r in scalars {
            row(&mut out, &[label(r), fmt2(r.def.to_display(r.avg()))]);
        }
    }
    out
}
