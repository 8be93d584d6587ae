//! The charts of a sweep or search directory: AIPerf's `ttft_vs_throughput`, throughput
//! against p50 / p99 latency and TTFT per variation, the Pareto frontier, and per SLA filter
//! the SLA's metric at each value of the swept parameter with the SLA line and the chosen
//! point. Points whose client fell behind are hollow and named so, apart from the others.

use super::charts::{
    Chart, EXCLUDED_NAME, EXCLUDED_RGB, Kind, OUTSIDE_RGB, Series, WITHIN_RGB, comparison_charts_of,
};
use super::sweep::{Sla, Sweep, Variation};

/// A metric's axis title: `time_to_first_token p99 (ms)`.
fn axis(tag: &str, stat: &str) -> String {
    let unit = if tag.contains("throughput") || tag == "goodput" {
        match tag {
            "request_throughput" | "goodput" => "requests/s",
            _ => "tokens/s",
        }
    } else if tag.ends_with("_count") || tag.ends_with("_rate") || tag.ends_with("_fraction") {
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

/// One labelled point per variation that has both statistics and passes `keep` (given the
/// variation and its x value).
fn variation_points(
    sweep: &Sweep,
    name: &str,
    x: (&str, &str),
    y: (&str, &str),
    keep: impl Fn(&Variation, f64) -> bool,
) -> Series {
    let mut s = Series::new(name.to_string(), Kind::Points, Vec::new());
    for v in &sweep.variations {
        let (Some(a), Some(b)) = (v.stat(x.0, x.1), v.stat(y.0, y.1)) else {
            continue;
        };
        if keep(v, a.mean) {
            s.points.push((a.mean, b.mean));
            s.labels.push(v.label.clone());
        }
    }
    s
}

/// The variations whose client fell behind, as hollow points (none: no series).
fn excluded_points(sweep: &Sweep, x: (&str, &str), y: (&str, &str)) -> Option<Series> {
    let mut s = variation_points(sweep, EXCLUDED_NAME, x, y, |v, _| v.fell_behind);
    s.kind = Kind::Excluded;
    (!s.points.is_empty()).then(|| s.colored(EXCLUDED_RGB))
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
    let mut series = vec![variation_points(sweep, "variations", lat, thr, |v, _| {
        !v.fell_behind
    })];
    series.extend(excluded_points(sweep, lat, thr));
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

/// Per SLA: each point at (the swept parameter, the SLA's metric and statistic), green when
/// within the SLA, red outside, hollow grey when its client fell behind (excluded from the
/// verdict); the SLA as a horizontal line at its threshold across the points; the chosen point
/// as a ring. Points are labelled when their x alone does not name them (other parameters
/// vary too, or there is no numeric parameter and x is the variation's position).
fn sla_chart(sweep: &Sweep, sla: &Sla) -> Chart {
    let swept = sweep.swept_parameter();
    let key = swept.as_deref();
    let labelled = key.is_none() || sweep.others_vary(key);
    let mut within = Series::new("within SLA".into(), Kind::Points, Vec::new()).colored(WITHIN_RGB);
    let mut outside =
        Series::new("outside SLA".into(), Kind::Points, Vec::new()).colored(OUTSIDE_RGB);
    let mut behind =
        Series::new(EXCLUDED_NAME.into(), Kind::Excluded, Vec::new()).colored(EXCLUDED_RGB);
    let mut chosen = None;
    for (i, v) in sweep.variations.iter().enumerate() {
        let (Some(x), Some(y)) = (sweep.x_of(key, i), v.stat(&sla.tag, &sla.stat)) else {
            continue;
        };
        let y = y.mean;
        let s = if v.fell_behind {
            &mut behind
        } else if sla.holds(y) {
            &mut within
        } else {
            &mut outside
        };
        s.points.push((x, y));
        if labelled {
            s.labels.push(v.label.clone());
        }
        if let Some((c, why)) = &sweep.chosen
            && *c == i
        {
            chosen = Some(Series::new(
                format!("{why}: {}", v.label),
                Kind::Chosen,
                vec![(x, y)],
            ));
        }
    }
    let xs = [&within, &outside, &behind]
        .into_iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
        (l.min(x), h.max(x))
    });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let line = Series::new(
        format!("SLA: {}", sla.text()),
        Kind::Threshold,
        vec![(lo, sla.threshold), (hi, sla.threshold)],
    );
    let mut series = vec![within, outside];
    if !behind.points.is_empty() {
        series.push(behind);
    }
    series.push(line);
    series.extend(chosen);
    let x_name = match key {
        Some(k) => k.rsplit('.').next().unwrap_or(k).to_string(),
        None => "variation".to_string(),
    };
    Chart {
        id: format!("sla-{}-{}", sla.tag, sla.stat),
        title: format!("SLA {} by {x_name}", sla.text()),
        x_label: x_name,
        y_label: axis(&sla.tag, &sla.stat),
        series,
    }
}

/// A variation's name beside its points in the side-by-side charts: its label, and whether
/// its client fell behind.
fn side_by_side_label(v: &Variation) -> String {
    if v.fell_behind {
        format!("{} ({EXCLUDED_NAME})", v.label)
    } else {
        v.label.clone()
    }
}

/// Every chart of one sweep or search directory.
pub fn sweep_charts(sweep: &Sweep) -> Vec<Chart> {
    let ttft = ("time_to_first_token", "avg");
    let rps = ("request_throughput", "avg");
    let mut series = vec![variation_points(sweep, "variations", ttft, rps, |v, _| {
        !v.fell_behind
    })];
    series.extend(excluded_points(sweep, ttft, rps));
    let mut charts = vec![Chart {
        id: "ttft_vs_throughput".into(),
        title: "TTFT vs Throughput".into(),
        x_label: axis(ttft.0, ttft.1),
        y_label: axis(rps.0, rps.1),
        series,
    }];
    charts.extend(comparison_charts_of(
        &sweep.variations,
        side_by_side_label,
        |v, tag, stat| v.stat(tag, stat),
    ));
    charts.push(pareto_chart(sweep));
    for sla in &sweep.slas {
        charts.push(sla_chart(sweep, sla));
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::charts::hex;
    use serde_json::{Value, json};
    use std::path::PathBuf;

    fn point(params: Value, ttft_p95: f64, fell_behind: bool) -> Variation {
        Variation {
            label: crate::plot::sweep::parameters_label(&params),
            parameters: params,
            metrics: json!({"time_to_first_token": {"p95": ttft_p95, "avg": ttft_p95 / 2.0}}),
            feasible: None,
            fell_behind,
            run_dir: None,
        }
    }

    fn sweep(variations: Vec<Variation>, chosen: Option<usize>) -> Sweep {
        Sweep {
            dir: PathBuf::from("d"),
            kind: "sweep".into(),
            variations,
            aiperf_pareto: Vec::new(),
            slas: vec![Sla {
                tag: "time_to_first_token".into(),
                stat: "p95".into(),
                op: "lt".into(),
                threshold: 20.0,
            }],
            chosen: chosen.map(|i| (i, "best feasible trial".to_string())),
            notes: Vec::new(),
        }
    }

    fn named<'a>(c: &'a Chart, name: &str) -> &'a Series {
        c.series
            .iter()
            .find(|s| s.name.starts_with(name))
            .unwrap_or_else(|| panic!("no series {name}: {:?}", c.series))
    }

    /// Four concurrencies: two under the 20 ms SLA, one over it, one whose client fell behind
    /// (its 50 ms is the client's, so it is neither within nor outside). Each point sits at its
    /// concurrency and its TTFT p95; the SLA is a horizontal line at 20 across the points.
    #[test]
    fn the_sla_chart_draws_the_swept_value_against_the_slas_metric() {
        let c = |n: u64| json!({"phases.profiling.concurrency": n});
        let s = sweep(
            vec![
                point(c(1), 5.0, false),
                point(c(2), 12.0, false),
                point(c(4), 31.0, false),
                point(c(8), 50.0, true),
            ],
            Some(1),
        );
        let chart = sla_chart(&s, &s.slas[0]);
        assert_eq!(chart.id, "sla-time_to_first_token-p95");
        assert_eq!(chart.x_label, "concurrency");
        assert_eq!(chart.y_label, "time_to_first_token p95 (ms)");
        assert_eq!(
            chart.title,
            "SLA time_to_first_token p95 < 20 by concurrency"
        );
        let within = named(&chart, "within SLA");
        assert_eq!(within.points, [(1.0, 5.0), (2.0, 12.0)]);
        assert_eq!(within.color.map(hex).as_deref(), Some("#00963C"));
        let outside = named(&chart, "outside SLA");
        assert_eq!(outside.points, [(4.0, 31.0)]);
        assert_eq!(outside.color.map(hex).as_deref(), Some("#D21E28"));
        let behind = named(&chart, EXCLUDED_NAME);
        assert_eq!(behind.kind, Kind::Excluded);
        assert_eq!(behind.points, [(8.0, 50.0)]);
        let line = named(&chart, "SLA: time_to_first_token p95 < 20");
        assert_eq!(line.kind, Kind::Threshold);
        assert_eq!(line.points, [(1.0, 20.0), (8.0, 20.0)]);
        let ring = named(&chart, "best feasible trial: concurrency 2");
        assert_eq!(
            (ring.kind, ring.points.clone()),
            (Kind::Chosen, vec![(2.0, 12.0)])
        );
        // One parameter swept: x names each point, no labels.
        assert!(chart.series.iter().all(|s| s.labels.is_empty()));
        // x over 1..8 padded by 5 %; y from 0 to the highest (50) padded, then room above for
        // the legend.
        let ((x0, x1), (y0, y1)) = chart.ranges();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(x0, 0.65) && close(x1, 8.35), "{x0} {x1}");
        assert_eq!(y0, 0.0);
        assert!(close(y1, 52.5 * 1.3), "{y1}");
    }

    /// Without a numeric parameter (variants) the points are at their position, labelled; with
    /// several parameters varying, x is the concurrency and each point is labelled.
    #[test]
    fn points_named_by_more_than_their_x_are_labelled() {
        let variants = sweep(
            vec![
                point(json!({"benchmark": "{\"a\": 1}"}), 5.0, false),
                point(json!({"benchmark": "{\"a\": 2}"}), 25.0, false),
            ],
            None,
        );
        let chart = sla_chart(&variants, &variants.slas[0]);
        assert_eq!(chart.x_label, "variation");
        assert_eq!(named(&chart, "within SLA").points, [(1.0, 5.0)]);
        assert_eq!(named(&chart, "outside SLA").points, [(2.0, 25.0)]);
        assert_eq!(named(&chart, "within SLA").labels.len(), 1);

        let pairs = sweep(
            vec![
                point(json!({"concurrency": 1, "isl": 32}), 5.0, false),
                point(json!({"concurrency": 4, "isl": 32}), 9.0, false),
                point(json!({"concurrency": 1, "isl": 64}), 6.0, false),
            ],
            None,
        );
        let chart = sla_chart(&pairs, &pairs.slas[0]);
        assert_eq!(chart.x_label, "concurrency");
        let within = named(&chart, "within SLA");
        assert_eq!(within.points, [(1.0, 5.0), (4.0, 9.0), (1.0, 6.0)]);
        assert_eq!(
            within.labels,
            [
                "concurrency 1, isl 32",
                "concurrency 4, isl 32",
                "concurrency 1, isl 64"
            ]
        );
        // No point fell behind: no such legend entry.
        assert!(chart.series.iter().all(|s| s.name != EXCLUDED_NAME));
    }

    /// A point whose client fell behind is hollow in the other charts too, off the frontier,
    /// and named so in the side-by-side charts.
    #[test]
    fn a_point_whose_client_fell_behind_is_set_apart_everywhere() {
        let mut v = vec![
            point(json!({"concurrency": 1}), 5.0, false),
            point(json!({"concurrency": 2}), 6.0, true),
        ];
        for (p, (rps, otps)) in v.iter_mut().zip([(10.0, 100.0), (30.0, 300.0)]) {
            p.metrics["request_throughput"] = json!({"avg": rps});
            p.metrics["output_token_throughput"] = json!({"avg": otps});
            p.metrics["time_to_first_token"]["p99"] = json!(7.0);
            p.metrics["time_to_first_token"]["p50"] = json!(4.0);
        }
        let s = sweep(v, None);
        assert_eq!(
            s.pareto(),
            [0],
            "the point that fell behind is not on the frontier"
        );
        let charts = sweep_charts(&s);
        let by_id = |id: &str| charts.iter().find(|c| c.id == id).unwrap();
        for id in ["ttft_vs_throughput", "pareto_curve_throughput_vs_latency"] {
            let c = by_id(id);
            assert_eq!(named(c, "variations").labels, ["concurrency 1"], "{id}");
            let behind = named(c, EXCLUDED_NAME);
            assert_eq!(
                (behind.kind, behind.labels.clone()),
                (Kind::Excluded, vec!["concurrency 2".to_string()]),
                "{id}"
            );
        }
        let side = by_id("sweep-ttft-vs-throughput");
        assert_eq!(
            side.series[0].labels,
            [
                "concurrency 1",
                "concurrency 2 (client fell behind (excluded))"
            ]
        );
    }
}
