//! AIPerf 0.13's `Server Metrics: Speculative Decoding` console table (docs/metrics.md,
//! "Speculative decoding"): SGLang's `sglang:spec_accept_rate` and `sglang:spec_accept_length`
//! gauges over the profiling window, for the run's models, leader ranks only.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::export::endpoint_with_path as endpoint_display;
use super::summary::{GaugeStats, MetricSummary, SeriesStats};

const RATE: &str = "sglang:spec_accept_rate";
const LENGTH: &str = "sglang:spec_accept_length";
/// The rows: gauge, label, scale, decimals.
const ROWS: [(&str, &str, f64, usize); 2] = [
    (RATE, "Accept Rate (%)", 100.0, 1),
    (LENGTH, "Accept Length", 1.0, 2),
];
/// Ranks whose series repeat the leader's (only `"0"` or absent is shown).
const RANK_LABELS: [&str; 2] = ["pp_rank", "tp_rank"];

/// One gauge series as the table reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct GaugeSeries<'a> {
    /// The gauge's name.
    pub metric: &'a str,
    /// The endpoint scraped.
    pub endpoint_url: &'a str,
    /// The series' labels.
    pub labels: BTreeMap<String, String>,
    /// Its statistics over the window.
    pub stats: GaugeStats,
}

/// The gauge series of `metrics` (a run's profiling summary) the table may read.
#[must_use]
pub fn gauge_series(metrics: &BTreeMap<String, MetricSummary>) -> Vec<GaugeSeries<'_>> {
    let mut out = Vec::new();
    for name in [RATE, LENGTH] {
        let Some(m) = metrics
            .get(name)
            .filter(|m| matches!(m.kind, "gauge" | "unknown"))
        else {
            continue;
        };
        for s in &m.series {
            if let SeriesStats::Gauge(g) = &s.stats {
                out.push(GaugeSeries {
                    metric: name,
                    endpoint_url: &s.endpoint_url,
                    labels: s.labels.clone().unwrap_or_default(),
                    stats: g.clone(),
                });
            }
        }
    }
    out
}

/// The table, or `None` when no series of the run's `models` (case-insensitive) shows that
/// speculation ran (a positive maximum of the accept length, or, without one, of the rate).
#[must_use]
pub fn render(series: &[GaugeSeries<'_>], models: &[String], title_prefix: &str) -> Option<String> {
    let models: Vec<String> = models.iter().map(|m| m.to_lowercase()).collect();
    let ours = |name: &str| -> Vec<&GaugeSeries<'_>> {
        series
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| {
                s.labels
                    .get("model_name")
                    .is_some_and(|m| models.contains(&m.to_lowercase()))
                    && RANK_LABELS
                        .iter()
                        .all(|r| s.labels.get(*r).is_none_or(|v| v == "0"))
            })
            .collect()
    };
    let active = |list: &[&GaugeSeries<'_>]| {
        list.iter()
            .any(|s| s.stats.max.is_finite() && s.stats.max > 0.0)
    };
    let lengths = ours(LENGTH);
    let ran = if lengths.is_empty() {
        active(&ours(RATE))
    } else {
        active(&lengths)
    };
    if !ran {
        return None;
    }
    let mut rows: Vec<[String; 6]> = Vec::new();
    for (name, label, scale, decimals) in ROWS {
        let list = ours(name);
        for (i, s) in list.iter().enumerate() {
            let st = &s.stats;
            let values = [st.avg, st.min, st.max, st.p50, st.p90].map(|v| v * scale);
            if values.iter().any(|v| !v.is_finite()) {
                eprintln!(
                    "ringperf: warning: the {name} row of the speculative-decoding table is left \
                     out: a statistic is not finite"
                );
                continue;
            }
            let cell = |v: f64| thousands(v, decimals);
            rows.push([
                row_label(label, s, i + 1, &list),
                cell(values[0]),
                cell(values[1]),
                cell(values[2]),
                cell(values[3]),
                cell(values[4]),
            ]);
        }
    }
    if rows.is_empty() {
        return None;
    }
    Some(table(
        &format!("{title_prefix} | Server Metrics: Speculative Decoding"),
        &rows,
    ))
}

/// The row's label: the gauge's, and with several series what tells them apart (the endpoint,
/// the model, any other label with several values), else the series' number.
fn row_label(label: &str, s: &GaugeSeries<'_>, index: usize, list: &[&GaugeSeries<'_>]) -> String {
    if list.len() == 1 {
        return label.to_owned();
    }
    let varies = |key: &str| {
        let mut values: Vec<&String> = list.iter().filter_map(|x| x.labels.get(key)).collect();
        values.sort();
        values.dedup();
        values.len() > 1
    };
    let mut parts = Vec::new();
    let mut endpoints: Vec<String> = list
        .iter()
        .map(|x| endpoint_display(x.endpoint_url))
        .collect();
    endpoints.sort();
    endpoints.dedup();
    if endpoints.len() > 1 {
        parts.push(format!("endpoint={}", endpoint_display(s.endpoint_url)));
    }
    if varies("model_name") {
        parts.push(format!("model_name={}", s.labels["model_name"]));
    }
    for (k, v) in &s.labels {
        if k != "model_name" && !RANK_LABELS.contains(&k.as_str()) && varies(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    if parts.is_empty() {
        format!("{label} (series={index})")
    } else {
        format!("{label} ({})", parts.join(", "))
    }
}

/// Python's `f"{v:,.{d}f}"`.
fn thousands(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Rich's table: the metric column left-justified, the numbers right-justified.
fn table(title: &str, rows: &[[String; 6]]) -> String {
    const HEAD: [&str; 6] = ["Metric", "mean", "min", "max", "p50", "p90"];
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = HEAD.iter().map(|h| width(h)).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(width(c));
        }
    }
    let line = |sep: &str, cells: &[&str]| {
        let segs: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!(" {c:<w$} ")
                } else {
                    format!(" {c:>w$} ")
                }
            })
            .collect();
        format!("{sep}{}{sep}\n", segs.join(sep))
    };
    let border = |l: &str, fill: &str, mid: &str, r: &str| {
        let segs: Vec<String> = widths.iter().map(|w| fill.repeat(w + 2)).collect();
        format!("{l}{}{r}\n", segs.join(mid))
    };
    let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
    let mut out = String::new();
    let pad = total.saturating_sub(width(title)) / 2;
    let _ = writeln!(out, "{}{title}", " ".repeat(pad));
    out.push_str(&border("┏", "━", "┳", "┓"));
    out.push_str(&line("┃", &HEAD));
    out.push_str(&border("┡", "━", "╇", "┩"));
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        out.push_str(&line("│", &cells));
    }
    out.push_str(&border("└", "─", "┴", "┘"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(avg: f64, min: f64, max: f64, p50: f64, p90: f64) -> GaugeStats {
        GaugeStats {
            avg,
            min,
            max,
            std: 0.0,
            p1: min,
            p5: min,
            p10: min,
            p25: min,
            p50,
            p75: p90,
            p90,
            p95: max,
            p99: max,
        }
    }

    fn series<'a>(
        metric: &'a str,
        url: &'a str,
        labels: &[(&str, &str)],
        s: GaugeStats,
    ) -> GaugeSeries<'a> {
        GaugeSeries {
            metric,
            endpoint_url: url,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            stats: s,
        }
    }

    #[test]
    fn only_the_runs_models_on_leader_ranks_and_only_when_speculation_ran() {
        let models = vec!["Mock-Model".to_owned()];
        let leader = [("model_name", "mock-model"), ("tp_rank", "0")];
        let all = vec![
            series(
                RATE,
                "http://h:1/metrics",
                &leader,
                stats(0.6, 0.5, 0.7, 0.6, 0.7),
            ),
            series(
                RATE,
                "http://h:1/metrics",
                &[("model_name", "mock-model"), ("tp_rank", "1")],
                stats(0.9, 0.9, 0.9, 0.9, 0.9),
            ),
            series(
                RATE,
                "http://h:1/metrics",
                &[("model_name", "other")],
                stats(0.1, 0.1, 0.1, 0.1, 0.1),
            ),
            series(
                LENGTH,
                "http://h:1/metrics",
                &leader,
                stats(2.5, 2.0, 3.0, 2.5, 3.0),
            ),
        ];
        let t = render(&all, &models, "ringperf").expect("a table");
        assert!(
            t.contains("│ Accept Rate (%) │ 60.0 │ 50.0 │ 70.0 │ 60.0 │ 70.0 │"),
            "{t}"
        );
        assert!(
            t.contains("│ Accept Length   │ 2.50 │ 2.00 │ 3.00 │ 2.50 │ 3.00 │"),
            "{t}"
        );
        // An accept length that never left 0: speculation did not run, whatever the rate says.
        let idle = vec![
            series(
                RATE,
                "http://h:1/metrics",
                &leader,
                stats(0.6, 0.5, 0.7, 0.6, 0.7),
            ),
            series(
                LENGTH,
                "http://h:1/metrics",
                &leader,
                stats(0.0, 0.0, 0.0, 0.0, 0.0),
            ),
        ];
        assert_eq!(render(&idle, &models, "ringperf"), None);
        assert_eq!(render(&all, &["x".to_owned()], "ringperf"), None);
    }

    #[test]
    fn several_series_are_told_apart_by_what_differs() {
        let models = vec!["m".to_owned()];
        let a = [("model_name", "m"), ("dp", "0")];
        let b = [("model_name", "m"), ("dp", "1")];
        // An accept-length series whose statistics are all `v` but its mean, `mean`.
        let length = |url, labels, mean, v| series(LENGTH, url, labels, stats(mean, v, v, v, v));
        let all = vec![
            length("http://h:1/metrics", &a, 2.0, 2.0),
            length("http://g:2/metrics", &b, 1234.5, 2.0),
        ];
        let t = render(&all, &models, "ringperf").unwrap();
        assert!(t.contains("Accept Length (endpoint=h:1, dp=0)"), "{t}");
        assert!(t.contains("Accept Length (endpoint=g:2, dp=1)"), "{t}");
        assert!(t.contains("1,234.50"), "{t}");
        let same = vec![
            length("http://h:1/metrics", &a, 2.0, 2.0),
            length("http://h:1/metrics", &a, 3.0, 3.0),
        ];
        let t = render(&same, &models, "ringperf").unwrap();
        assert!(t.contains("Accept Length (series=2)"), "{t}");
    }
}
