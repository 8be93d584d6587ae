//! The charts of a sweep or search directory: AIPerf's `ttft_vs_throughput`, throughput
//! against p50 / p99 latency and TTFT per variation, the Pareto frontier, and per SLA filter
//! the variations against the SLA's metric with the SLA line and the chosen point.

use super::charts::{Chart, Kind, Series, comparison_charts_of};
use super::sweep::{Sla, Sweep};

/// A metric's axis title: `time_to_first_token p99 (ms)`.
fn axis(tag: &str, stat: &str) -> String {
    let unit = if tag.contains("throughput") {
        match tag {
            "request_throughput" => "requests/s",
            _ => "tokens/s",
        }
    } else if tag.ends_with("_count") || tag.ends_with("_rate") {
        ""
    } else {
        "ms"
    };
    if unit.is_empty() {
        format!("{tag} {stat}")
    } else {
        format!("{tag} {stat} ({unit})")
    }
}

/// One labelled point per variation that has both statistics.
fn variation_points(
    sweep: &Sweep,
    name: &str,
    x: (&str, &str),
    y: (&str, &str),
    keep: impl Fn(f64) -> bool,
) -> Series {
    let mut s = Series::new(name.to_string(), Kind::Points, Vec::new());
    for v in &sweep.variations {
        let (Some(a), Some(b)) = (v.stat(x.0, x.1), v.stat(y.0, y.1)) else {
            continue;
        };
        if keep(a.mean) {
            s.points.push((a.mean, b.mean));
            s.labels.push(v.label.clone());
        }
    }
    s
}

/// The chosen variation's ring, when it has both statistics.
fn chosen(sweep: &Sweep, x: (&str, &str), y: (&str, &str)) -> Option<Series> {
    let (i, why) = sweep.chosen.as_ref()?;
    let v = &sweep.variations[*i];
    let p = (v.stat(x.0, x.1)?.mean, v.stat(y.0, y.1)?.mean);
    Some(Series::new(
        format!("{why}: {}", v.label),
        Kind::Chosen,
        vec![p],
    ))
}

/// A vertical line at the SLA's threshold across the y values of `series`.
fn threshold(sla: &Sla, series: &[Series]) -> Series {
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), y| {
        (l.min(y), h.max(y))
    });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    Series::new(
        format!("SLA: {}", sla.text()),
        Kind::Threshold,
        vec![(sla.threshold, lo), (sla.threshold, hi)],
    )
}

/// The frontier chart: the sweep aggregate's objectives, request throughput avg against the
/// latency objective's p99; the frontier as a line from low to high latency.
fn pareto_chart(sweep: &Sweep) -> Chart {
    let lat = (sweep.latency_tag(), "p99");
    let thr = ("request_throughput", "avg");
    let mut series = vec![variation_points(sweep, "variations", lat, thr, |_| true)];
    let front = sweep.pareto();
    let mut line: Vec<(f64, f64)> = front
        .iter()
        .filter_map(|&i| {
            let v = &sweep.variations[i];
            Some((v.stat(lat.0, lat.1)?.mean, v.stat(thr.0, thr.1)?.mean))
        })
        .collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    series.push(Series::new("Pareto frontier".into(), Kind::Line, line));
    for sla in sweep
        .slas
        .iter()
        .filter(|s| s.tag == lat.0 && s.stat == lat.1)
    {
        let t = threshold(sla, &series);
        series.push(t);
    }
    series.extend(chosen(sweep, lat, thr));
    Chart {
        id: "pareto_curve_throughput_vs_latency".into(),
        title: format!("Pareto Curve: Request Throughput vs {} p99", lat.0),
        x_label: axis(lat.0, lat.1),
        y_label: axis(thr.0, thr.1),
        series,
    }
}

/// Per SLA: the variations within and outside it on its metric, against the objective.
fn sla_chart(sweep: &Sweep, sla: &Sla) -> Chart {
    let x = (sla.tag.as_str(), sla.stat.as_str());
    let y = (sweep.objective.0.as_str(), sweep.objective.1.as_str());
    let mut series = vec![
        variation_points(sweep, "within SLA", x, y, |v| sla.holds(v)),
        variation_points(sweep, "outside SLA", x, y, |v| !sla.holds(v)),
    ];
    let t = threshold(sla, &series);
    series.push(t);
    series.extend(chosen(sweep, x, y));
    Chart {
        id: format!("sla-{}-{}", sla.tag, sla.stat),
        title: format!("{} vs SLA {}", y.0, sla.text()),
        x_label: axis(x.0, x.1),
        y_label: axis(y.0, y.1),
        series,
    }
}

/// Every chart of one sweep or search directory.
pub fn sweep_charts(sweep: &Sweep) -> Vec<Chart> {
    let ttft = ("time_to_first_token", "avg");
    let rps = ("request_throughput", "avg");
    let mut charts = vec![Chart {
        id: "ttft_vs_throughput".into(),
        title: "TTFT vs Throughput".into(),
        x_label: axis(ttft.0, ttft.1),
        y_label: axis(rps.0, rps.1),
        series: vec![variation_points(sweep, "variations", ttft, rps, |_| true)],
    }];
    charts.extend(comparison_charts_of(
        &sweep.variations,
        |v| v.label.clone(),
        |v, tag, stat| v.stat(tag, stat),
    ));
    charts.push(pareto_chart(sweep));
    for sla in &sweep.slas {
        charts.push(sla_chart(sweep, sla));
    }
    charts
}
