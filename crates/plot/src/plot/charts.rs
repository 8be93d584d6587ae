//! The charts of the report as data: every chart is a list of series of (x, y) points, built
//! from the inputs here and drawn by `render` (SVG and PNG) and embedded as JSON by `html`.
//! Names follow AIPerf 0.13's `aiperf plot` where it has the chart.

use serde::Serialize;

use super::inputs::{Input, Interval, Request, Run};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Line,
    Points,
    /// An SLA or degradation threshold: a thick line in [`THRESHOLD_RGB`].
    Threshold,
    /// The chosen point (a search's answer, a ramp's knee): a ring in [`CHOSEN_RGB`].
    Chosen,
    /// Points left out of every verdict (their client fell behind): hollow circles.
    Excluded,
}

/// The colour of threshold lines (dark blue); no other series has it.
pub const THRESHOLD_RGB: (u8, u8, u8) = (0, 0, 160);
/// The colour of the chosen point's ring (dark orange); no other series has it.
pub const CHOSEN_RGB: (u8, u8, u8) = (255, 140, 0);
/// Points within an SLA (green).
pub const WITHIN_RGB: (u8, u8, u8) = (0, 150, 60);
/// Points outside an SLA (red).
pub const OUTSIDE_RGB: (u8, u8, u8) = (210, 30, 40);
/// Points whose client fell behind (grey, hollow).
pub const EXCLUDED_RGB: (u8, u8, u8) = (110, 110, 110);
/// The legend name of the points whose client fell behind.
pub const EXCLUDED_NAME: &str = "client fell behind (excluded)";

/// `#RRGGBB`, as SVG writes a colour.
pub fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub name: String,
    pub kind: Kind,
    /// The series' colour when the chart gives it one (`#RRGGBB` in the data block); else
    /// the palette's by the series' place, or the threshold's and the chosen ring's own.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "color_hex")]
    pub color: Option<(u8, u8, u8)>,
    pub points: Vec<(f64, f64)>,
    /// Per point: a label drawn beside it (the side-by-side chart), else empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Per point: (low, high) of x and of y (confidence intervals), else empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub x_err: Vec<(f64, f64)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub y_err: Vec<(f64, f64)>,
    /// When the series had more than [`MAX_POINTS`] points: how many (the points are then an
    /// even sample of them, first and last kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled_from: Option<usize>,
}

fn color_hex<S: serde::Serializer>(c: &Option<(u8, u8, u8)>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(&hex(*c)),
        None => s.serialize_none(),
    }
}

/// Points drawn per series at most: a long run's per-request charts stay a few hundred KB.
pub const MAX_POINTS: usize = 5000;

/// An even sample of `points` of at most `max` points, the first and the last among them.
pub fn sample(points: Vec<(f64, f64)>, max: usize) -> Vec<(f64, f64)> {
    let n = points.len();
    if n <= max || max < 2 {
        return points;
    }
    (0..max).map(|k| points[k * (n - 1) / (max - 1)]).collect()
}

impl Series {
    pub(crate) fn new(name: String, kind: Kind, points: Vec<(f64, f64)>) -> Self {
        let n = points.len();
        Series {
            name,
            kind,
            color: None,
            points: sample(points, MAX_POINTS),
            sampled_from: (n > MAX_POINTS).then_some(n),
            labels: Vec::new(),
            x_err: Vec::new(),
            y_err: Vec::new(),
        }
    }

    /// The series in colour `rgb`.
    pub(crate) fn colored(mut self, rgb: (u8, u8, u8)) -> Self {
        self.color = Some(rgb);
        self
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// File stem of the chart's PNG / SVG and the page anchor.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

/// The axis range of values, padded by 5 % (a single value gets a unit either side); from 0
/// when `from_zero` and every value is positive.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero && lo > 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-9 {
        return (lo - 1.0, hi + 1.0);
    }
    let pad = (hi - lo) * 0.05;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}

impl Chart {
    /// The axes' ranges as drawn, `((x0, x1), (y0, y1))`: every point and error bar, x padded
    /// by 5 %, y from 0 (when no value is negative) to 5 % over the highest; with labelled
    /// points, room on the right (15 %) for the labels; with labels or a threshold line, room
    /// at the top (30 %) for the legend, so that it covers neither.
    pub fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let xs = self.series.iter().flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.0)
                .chain(s.x_err.iter().flat_map(|e| [e.0, e.1]))
        });
        let ys = self.series.iter().flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.y_err.iter().flat_map(|e| [e.0, e.1]))
        });
        let (x0, mut x1) = range(xs, false);
        let (y0, mut y1) = range(ys, true);
        let labelled = self.series.iter().any(|s| !s.labels.is_empty());
        if labelled {
            x1 += (x1 - x0) * 0.15;
        }
        if labelled || self.series.iter().any(|s| s.kind == Kind::Threshold) {
            y1 += (y1 - y0) * 0.3;
        }
        ((x0, x1), (y0, y1))
    }
}

/// Server-metric charts beyond this many are left out (and the page says how many).
pub const MAX_SERVER_METRIC_CHARTS: usize = 12;

/// A run's name in legends: the input's label, and the run's within a multi-run directory.
fn run_name(input: &Input, run: &Run) -> String {
    if run.label.is_empty() {
        input.label.clone()
    } else {
        format!("{} {}", input.label, run.label)
    }
}

fn t0(run: &Run) -> Option<u64> {
    run.requests.iter().map(|r| r.start_ns).min()
}

fn cdf(mut values: Vec<f64>) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len() as f64;
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, (i + 1) as f64 / n))
        .collect()
}

type Field = fn(&Request) -> Option<f64>;

const LATENCIES: [(&str, &str, Field); 3] = [
    ("ttft", "Time to First Token", |r| r.ttft_ms),
    ("itl", "Inter Token Latency", |r| r.itl_ms),
    ("request-latency", "Request Latency", |r| r.latency_ms),
];

/// Every run of every input, with its legend name.
fn all_runs(inputs: &[Input]) -> Vec<(String, &Run)> {
    inputs
        .iter()
        .flat_map(|i| i.runs.iter().map(move |r| (run_name(i, r), r)))
        .collect()
}

/// (x, y) points of a series.
pub type Points = Vec<(f64, f64)>;

/// Per request: requests completed and output tokens in each second of the run (by end time).
pub fn per_second(run: &Run) -> (Points, Points) {
    let requests: Vec<&Request> = run.requests.iter().collect();
    per_second_from(&requests, t0(run))
}

/// Requests completed and output tokens in each second from `t0` (by end time), up to the last
/// of `requests` to end.
fn per_second_from(requests: &[&Request], t0: Option<u64>) -> (Points, Points) {
    let Some(t0) = t0 else {
        return (Vec::new(), Vec::new());
    };
    let last = requests.iter().map(|r| r.end_ns).max().unwrap_or(t0);
    let bins = (last.saturating_sub(t0) / 1_000_000_000 + 1) as usize;
    let mut reqs = vec![0.0; bins];
    let mut toks = vec![0.0; bins];
    for r in requests {
        let b = (r.end_ns.saturating_sub(t0) / 1_000_000_000) as usize;
        reqs[b] += 1.0;
        toks[b] += r.output_tokens.unwrap_or(0.0);
    }
    let pts = |v: Vec<f64>| {
        v.into_iter()
            .enumerate()
            .map(|(i, y)| (i as f64, y))
            .collect()
    };
    (pts(reqs), pts(toks))
}

/// The records of one series of the per-request charts: a run's, or with several profiling
/// phases in the run (a config file's `phases:`), one phase's, on the run's clock.
struct Track<'a> {
    name: String,
    t0: Option<u64>,
    requests: Vec<&'a Request>,
}

/// One track per run, or per profiling phase of a run that has several, in the records'
/// order of first appearance.
fn tracks(inputs: &[Input]) -> Vec<Track<'_>> {
    let mut out = Vec::new();
    for (name, run) in all_runs(inputs) {
        let mut phases: Vec<Option<&str>> = Vec::new();
        for r in &run.requests {
            if !phases.contains(&r.phase.as_deref()) {
                phases.push(r.phase.as_deref());
            }
        }
        if phases.len() < 2 {
            out.push(Track {
                name,
                t0: t0(run),
                requests: run.requests.iter().collect(),
            });
            continue;
        }
        for p in phases {
            out.push(Track {
                name: format!("{name}: {}", p.unwrap_or("(no phase)")),
                t0: t0(run),
                requests: run
                    .requests
                    .iter()
                    .filter(|r| r.phase.as_deref() == p)
                    .collect(),
            });
        }
    }
    out
}

/// The per-run charts: distributions, over time, throughput over time; a run with several
/// profiling phases has a series per phase.
pub fn record_charts(inputs: &[Input]) -> Vec<Chart> {
    let tracks = tracks(inputs);
    let mut charts = Vec::new();
    for (id, name, field) in LATENCIES {
        charts.push(Chart {
            id: format!("{id}-cdf"),
            title: format!("{name} Distribution (CDF)"),
            x_label: format!("{name} (ms)"),
            y_label: "Fraction of requests".into(),
            series: tracks
                .iter()
                .map(|t| {
                    Series::new(
                        t.name.clone(),
                        Kind::Line,
                        cdf(t.requests.iter().copied().filter_map(field).collect()),
                    )
                })
                .collect(),
        });
        charts.push(Chart {
            id: format!("{id}-over-time"),
            title: format!("{name} Per Request Over Time"),
            x_label: "Request start (s since the first request)".into(),
            y_label: format!("{name} (ms)"),
            series: tracks
                .iter()
                .map(|t| {
                    let t0 = t.t0.unwrap_or(0);
                    let pts = t
                        .requests
                        .iter()
                        .filter_map(|q| field(q).map(|v| ((q.start_ns - t0) as f64 / 1e9, v)))
                        .collect();
                    Series::new(t.name.clone(), Kind::Points, pts)
                })
                .collect(),
        });
    }
    let per_sec: Vec<_> = tracks
        .iter()
        .map(|t| (&t.name, per_second_from(&t.requests, t.t0)))
        .collect();
    charts.push(Chart {
        id: "request-throughput-over-time".into(),
        title: "Request Throughput Over Time".into(),
        x_label: "Second of the run".into(),
        y_label: "Requests completed per second".into(),
        series: per_sec
            .iter()
            .map(|(n, (reqs, _))| Series::new((*n).clone(), Kind::Line, reqs.clone()))
            .collect(),
    });
    charts.push(Chart {
        id: "output-token-throughput-over-time".into(),
        title: "Output Token Throughput Over Time".into(),
        x_label: "Second of the run".into(),
        y_label: "Output tokens per second".into(),
        series: per_sec
            .iter()
            .map(|(n, (_, toks))| Series::new((*n).clone(), Kind::Line, toks.clone()))
            .collect(),
    });
    charts
}

/// The value a server-metric timeslice is plotted by: gauge `avg`, counter `rate`, histogram
/// `avg` (sum / count over the slice).
fn slice_value(kind: &str, slice: &serde_json::Value) -> Option<f64> {
    match kind {
        "counter" => slice["rate"].as_f64(),
        _ => slice["avg"].as_f64(),
    }
}

/// A metric name as a portable file stem and anchor: `vllm:num_requests_running` →
/// `vllm_num_requests_running` (anything but ASCII letters, digits, `-`, `_` and `.` becomes `_`).
pub fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One chart per server metric with timeslices; the second value is how many were left out.
pub fn server_metric_charts(inputs: &[Input]) -> (Vec<Chart>, usize) {
    let mut charts: Vec<Chart> = Vec::new();
    let mut left_out = 0;
    for (run_label, run) in all_runs(inputs) {
        let Some(metrics) = run
            .server_metrics
            .as_ref()
            .and_then(|s| s["metrics"].as_object())
        else {
            continue;
        };
        for (name, m) in metrics {
            let kind = m["type"].as_str().unwrap_or("gauge");
            let mut series = Vec::new();
            for s in m["series"].as_array().into_iter().flatten() {
                let Some(slices) = s["timeslices"].as_array() else {
                    continue;
                };
                let start = slices
                    .first()
                    .and_then(|t| t["start_ns"].as_u64())
                    .unwrap_or(0);
                let pts: Vec<(f64, f64)> = slices
                    .iter()
                    .filter_map(|t| {
                        let mid = (t["start_ns"].as_u64()? + t["end_ns"].as_u64()?) / 2;
                        Some(((mid - start) as f64 / 1e9, slice_value(kind, t)?))
                    })
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let labels = s["labels"]
                    .as_object()
                    .map(|l| {
                        l.iter()
                            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .unwrap_or_default();
                let name = if labels.is_empty() {
                    run_label.clone()
                } else {
                    format!("{run_label} {{{labels}}}")
                };
                series.push(Series::new(name, Kind::Line, pts));
            }
            if series.is_empty() {
                continue;
            }
            let id = format!("server-{}", file_stem(name));
            if let Some(c) = charts.iter_mut().find(|c| c.id == id) {
                c.series.extend(series);
            } else if charts.len() < MAX_SERVER_METRIC_CHARTS {
                let stat = if kind == "counter" { "rate /s" } else { "avg" };
                let unit = m["unit"]
                    .as_str()
                    .map(|u| format!(" ({u})"))
                    .unwrap_or_default();
                charts.push(Chart {
                    id,
                    title: format!("{name} Across Time Slices"),
                    x_label: "Time slice middle (s since the first slice)".into(),
                    y_label: format!("{stat}{unit}"),
                    series,
                });
            } else {
                left_out += 1;
            }
        }
    }
    (charts, left_out)
}

/// The side-by-side chart: one point per input directory, output token throughput against
/// p50 and p99 request latency (and TTFT), with confidence intervals from an aggregate.
pub fn comparison_charts(inputs: &[Input]) -> Vec<Chart> {
    comparison_charts_of(
        inputs,
        |i| i.label.clone(),
        |i, tag, stat| i.stat(tag, stat),
    )
}

/// The side-by-side charts over any points that have a label and summary statistics (input
/// directories, a sweep's variations).
pub fn comparison_charts_of<T>(
    items: &[T],
    label: impl Fn(&T) -> String,
    stat: impl Fn(&T, &str, &str) -> Option<Interval>,
) -> Vec<Chart> {
    let mut charts = Vec::new();
    for (id, title, tag, name) in [
        (
            "sweep-request-latency-vs-throughput",
            "Request Latency vs Output Token Throughput",
            "request_latency",
            "request latency",
        ),
        (
            "sweep-ttft-vs-throughput",
            "TTFT vs Output Token Throughput",
            "time_to_first_token",
            "TTFT",
        ),
    ] {
        let mut series = Vec::new();
        for p in ["p50", "p99"] {
            let mut s = Series::new(format!("{p} {name}"), Kind::Points, Vec::new());
            for item in items {
                let (Some(x), Some(y)) = (
                    stat(item, "output_token_throughput", "avg"),
                    stat(item, tag, p),
                ) else {
                    continue;
                };
                s.points.push((x.mean, y.mean));
                s.x_err.push((x.ci_low, x.ci_high));
                s.y_err.push((y.ci_low, y.ci_high));
                s.labels.push(label(item));
            }
            series.push(s);
        }
        charts.push(Chart {
            id: id.into(),
            title: title.into(),
            x_label: "Output token throughput (tokens/s)".into(),
            y_label: format!("{name} (ms)"),
            series,
        });
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(start_s: f64, end_s: f64, tokens: f64) -> Request {
        Request {
            start_ns: (start_s * 1e9) as u64,
            end_ns: (end_s * 1e9) as u64,
            ttft_ms: Some(start_s),
            itl_ms: None,
            latency_ms: Some(end_s - start_s),
            output_tokens: Some(tokens),
            phase: None,
        }
    }

    #[test]
    fn per_second_bins_by_end_time() {
        let run = Run {
            label: String::new(),
            dir: ".".into(),
            requests: vec![req(0.0, 0.5, 3.0), req(0.2, 0.9, 4.0), req(0.4, 2.1, 5.0)],
            summary: None,
            server_metrics: None,
        };
        let (reqs, toks) = per_second(&run);
        assert_eq!(reqs, [(0.0, 2.0), (1.0, 0.0), (2.0, 1.0)]);
        assert_eq!(toks, [(0.0, 7.0), (1.0, 0.0), (2.0, 5.0)]);
    }

    #[test]
    fn long_series_are_sampled_evenly_keeping_both_ends() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 0.0)).collect();
        let xs: Vec<f64> = sample(pts.clone(), 4).iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 3.0, 6.0, 9.0]);
        assert_eq!(sample(pts.clone(), 10), pts);
        let s = Series::new("s".into(), Kind::Points, vec![(1.0, 1.0); MAX_POINTS + 7]);
        assert_eq!(
            (s.points.len(), s.sampled_from),
            (MAX_POINTS, Some(MAX_POINTS + 7))
        );
    }

    #[test]
    fn metric_names_become_portable_stems() {
        assert_eq!(
            file_stem("vllm:e2e_request_latency_seconds"),
            "vllm_e2e_request_latency_seconds"
        );
        assert_eq!(file_stem("a/b c.d-e"), "a_b_c.d-e");
    }

    #[test]
    fn cdf_is_sorted_and_ends_at_one() {
        assert_eq!(
            cdf(vec![3.0, 1.0, f64::NAN, 2.0, 4.0]),
            [(1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]
        );
    }
}
