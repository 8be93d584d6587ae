//! `server_metrics_export.csv`: `#` comment header (LF), then one section per type (CRLF rows,
//! Python `csv` minimal quoting), then a transposed section for `*_info` gauges.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{ExportContext, ServerMetricsReport, endpoint_display};
use crate::server_metrics::summary::{ESTIMATE_KEYS, MetricSummary, SeriesStats, SeriesSummary};

/// Schema version written in the CSV header.
pub const SCHEMA_VERSION: &str = "1.0";

const GAUGE_KEYS: [&str; 13] = [
    "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
];
const COUNTER_KEYS: [&str; 6] = [
    "total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std",
];
const HIST_KEYS: [&str; 5] = ["count", "count_rate", "sum", "sum_rate", "avg"];

/// A statistic cell: integers as integers, floats as `%.4f`, missing as empty.
#[derive(Clone, Copy)]
enum Cell {
    Int(u64),
    Float(f64),
    Empty,
}

impl Cell {
    fn render(self) -> String {
        match self {
            Self::Int(v) => v.to_string(),
            Self::Float(v) => format!("{v:.4}"),
            Self::Empty => String::new(),
        }
    }
}

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::Empty, Cell::Float)
}

fn stat_cells(stats: &SeriesStats) -> Vec<Cell> {
    match stats {
        SeriesStats::Gauge(g) => [
            g.avg, g.min, g.max, g.std, g.p1, g.p5, g.p10, g.p25, g.p50, g.p75, g.p90, g.p95, g.p99,
        ]
        .into_iter()
        .map(Cell::Float)
        .collect(),
        SeriesStats::Counter(c) => vec![
            Cell::Float(c.total),
            Cell::Float(c.rate),
            opt(c.rate_avg),
            opt(c.rate_min),
            opt(c.rate_max),
            opt(c.rate_std),
        ],
        SeriesStats::Histogram(h) => {
            let mut v = vec![
                Cell::Int(h.count),
                opt(h.count_rate),
                opt(h.sum),
                opt(h.sum_rate),
                opt(h.avg),
            ];
            match &h.estimates {
                Some(e) => v.extend(e.iter().map(|x| Cell::Float(*x))),
                None => v.extend([Cell::Empty; 9]),
            }
            v
        }
    }
}

/// Quotes a field the way Python's `csv` module does by default (QUOTE_MINIMAL).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn row(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
    out.push_str(&line.join(","));
    out.push_str("\r\n");
}

/// Label column order: union-find families of co-occurring labels; within a family the labels
/// found in a single series (sorted), then the "bridge" labels found in several series (sorted);
/// families ordered by their smallest label. One label set per series (empty ones ignored).
#[must_use]
pub fn label_columns<'a>(signatures: impl IntoIterator<Item = Vec<&'a str>>) -> Vec<String> {
    let sigs: Vec<Vec<&str>> = signatures.into_iter().filter(|s| !s.is_empty()).collect();
    let labels: BTreeSet<&str> = sigs.iter().flatten().copied().collect();
    let idx: BTreeMap<&str, usize> = labels.iter().enumerate().map(|(i, l)| (*l, i)).collect();
    let mut parent: Vec<usize> = (0..labels.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while let Some(&up) = p.get(x) {
            if up == x {
                break;
            }
            let grand = p.get(up).copied().unwrap_or(up);
            if let Some(slot) = p.get_mut(x) {
                *slot = grand;
            }
            x = up;
        }
        x
    }
    for sig in &sigs {
        let mut ids = sig.iter().filter_map(|l| idx.get(l).copied());
        if let Some(first) = ids.next() {
            for other in ids {
                let (a, b) = (find(&mut parent, first), find(&mut parent, other));
                if let Some(slot) = parent.get_mut(a) {
                    *slot = b;
                }
            }
        }
    }
    let mut families: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (l, &i) in &idx {
        let root = find(&mut parent, i);
        families.entry(root).or_default().push(l);
    }
    let mut fams: Vec<Vec<&str>> = families.into_values().collect();
    fams.sort_by(|a, b| a.first().cmp(&b.first()));
    let mut out = Vec::new();
    for fam in fams {
        let shared = |l: &&str| sigs.iter().filter(|s| s.contains(l)).count() > 1;
        let (bridge, exclusive): (Vec<&str>, Vec<&str>) = fam.into_iter().partition(shared);
        out.extend(exclusive.into_iter().chain(bridge).map(str::to_owned));
    }
    out
}

/// Row order key: (label fill pattern, metric, endpoint, `str(labels)`).
type RowKey<'a> = (String, &'a str, &'a str, String);

fn labels_repr(s: &SeriesSummary) -> String {
    match &s.labels {
        None => String::new(),
        Some(l) => {
            let parts: Vec<String> = l.iter().map(|(k, v)| format!("'{k}': '{v}'")).collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

fn is_info(name: &str, m: &MetricSummary) -> bool {
    m.kind == "gauge" && name.ends_with("_info")
}

fn section(out: &mut String, kind: &str, metrics: &BTreeMap<String, MetricSummary>) -> bool {
    let rows: Vec<(&String, &MetricSummary, &SeriesSummary)> = metrics
        .iter()
        .filter(|(n, m)| m.kind == kind && !is_info(n, m))
        .flat_map(|(n, m)| m.series.iter().map(move |s| (n, m, s)))
        .collect();
    if rows.is_empty() {
        return false;
    }
    let cols = label_columns(rows.iter().map(|(_, _, s)| {
        s.labels
            .as_ref()
            .map_or_else(Vec::new, |l| l.keys().map(String::as_str).collect())
    }));
    let keys: Vec<&str> = match kind {
        "counter" => COUNTER_KEYS.to_vec(),
        "histogram" => HIST_KEYS
            .iter()
            .chain(ESTIMATE_KEYS.iter())
            .copied()
            .collect(),
        _ => GAUGE_KEYS.to_vec(),
    };
    let mut header: Vec<String> = ["Endpoint", "Type", "Metric", "Unit"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    header.extend(keys.iter().map(|s| (*s).to_owned()));
    header.extend(cols.iter().cloned());
    header.push("Description".into());
    if kind == "histogram" {
        header.push("buckets".into());
    }
    row(out, &header);
    let mut keyed: Vec<(RowKey<'_>, Vec<String>)> = rows
        .into_iter()
        .map(|(name, m, s)| {
            let get = |c: &String| s.labels.as_ref().and_then(|l| l.get(c)).cloned();
            let pattern: String = cols
                .iter()
                .map(|c| if get(c).is_some() { '1' } else { '0' })
                .collect();
            let mut cells = vec![
                endpoint_display(&s.endpoint_url).to_owned(),
                kind.to_owned(),
                name.clone(),
                m.unit.unwrap_or("").to_owned(),
            ];
            cells.extend(stat_cells(&s.stats).into_iter().map(Cell::render));
            cells.extend(cols.iter().map(|c| get(c).unwrap_or_default()));
            cells.push(m.description.clone());
            if kind == "histogram" {
                let mut b = String::new();
                for (i, (le, n)) in s.buckets.iter().flat_map(|b| b.0.iter()).enumerate() {
                    if i > 0 {
                        b.push(';');
                    }
                    let _ = write!(b, "{le}={n}");
                }
                cells.push(b);
            }
            (
                (
                    pattern,
                    name.as_str(),
                    s.endpoint_url.as_str(),
                    labels_repr(s),
                ),
                cells,
            )
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, cells) in keyed {
        row(out, &cells);
    }
    true
}

/// Renders the whole CSV document.
#[must_use]
pub fn render(report: &ServerMetricsReport, ctx: &ExportContext<'_>) -> String {
    let mut out = String::new();
    out.push_str("# AIPerf Server Metrics Export (CSV)\n");
    let _ = writeln!(
        out,
        "# aiperf_version: {}",
        ctx.aiperf_version.unwrap_or("")
    );
    let _ = writeln!(out, "# schema_version: {SCHEMA_VERSION}");
    let _ = writeln!(out, "# benchmark_id: {}", ctx.benchmark_id.unwrap_or(""));
    out.push_str("# Note: Same benchmark_id and version appear in JSON and Parquet exports\n#\n");
    let mut wrote = false;
    for kind in ["gauge", "counter", "histogram", "unknown"] {
        let mut sec = String::new();
        if section(&mut sec, kind, &report.metrics) {
            if wrote {
                out.push_str("\r\n");
            }
            out.push_str(&sec);
            wrote = true;
        }
    }
    let mut info: Vec<(&str, &str, &str, &str, &str)> = Vec::new();
    for (name, m) in report.metrics.iter().filter(|(n, m)| is_info(n, m)) {
        for s in &m.series {
            for (k, v) in s.labels.iter().flatten() {
                info.push((
                    name,
                    endpoint_display(&s.endpoint_url),
                    k,
                    v,
                    &m.description,
                ));
            }
        }
    }
    if !info.is_empty() {
        info.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        if wrote {
            out.push_str("\r\n");
        }
        let header = ["Endpoint", "Metric", "Key", "Value", "Description"];
        row(&mut out, &header.map(str::to_owned));
        for (name, url, k, v, d) in info {
            let cells = [url, name, k, v, d].map(str::to_owned);
            row(&mut out, &cells);
        }
    }
    out
}

/// Writes the CSV export to `out`.
///
/// # Errors
/// I/O errors of `out`.
pub fn write(
    out: &mut impl Write,
    report: &ServerMetricsReport,
    ctx: &ExportContext<'_>,
) -> io::Result<()> {
    out.write_all(render(report, ctx).as_bytes())
}
