//! Statistics per GPU per metric over the profiling window (docs/output-formats.md), AIPerf's form:
//! the `endpoints` of the summary JSON's `telemetry_data`, the rows of the summary CSV's GPU
//! table and the console's per-GPU tables.
//!
//! The window is `[start_ns, end_ns]`, both ends included (AIPerf: profiling start to the last
//! request's end plus [`super::FINAL_SCRAPE_GRACE_NS`]). Gauges: count, avg, min, max, sum, std
//! (ddof=1, 0 for one sample) and NumPy-linear percentiles of the samples in the window.
//! Counters: the last sample in the window minus the last sample before it (the baseline;
//! without one, the first sample in the window), never below 0 (a counter reset).

use serde_json::{Map, Value};

use super::fields::FIELDS;
use super::records::{GpuMeta, GpuRecord};
use crate::server_metrics::stats::{PERCENTILES, mean, percentile_sorted, std_ddof1};

/// One metric's summary.
#[derive(Clone, Debug, PartialEq)]
pub enum Stat {
    /// A gauge's statistics.
    Gauge {
        /// Samples in the window.
        count: usize,
        /// Mean.
        avg: f64,
        /// Smallest.
        min: f64,
        /// Largest.
        max: f64,
        /// Sum.
        sum: f64,
        /// Sample standard deviation (ddof=1).
        std: f64,
        /// p1, p5, p10, p25, p50, p75, p90, p95, p99.
        p: [f64; 9],
    },
    /// A counter's increase over the window (reported as `avg`).
    Delta(f64),
}

impl Stat {
    /// The value of one of AIPerf's stat keys (`avg`, `p50`, …); `None` when this summary has
    /// no such value (a counter has only `avg`).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<f64> {
        match self {
            Stat::Delta(d) => (key == "avg").then_some(*d),
            Stat::Gauge {
                avg,
                min,
                max,
                sum,
                std,
                p,
                ..
            } => match key {
                "avg" => Some(*avg),
                "min" => Some(*min),
                "max" => Some(*max),
                "sum" => Some(*sum),
                "std" => Some(*std),
                _ => {
                    let q: f64 = key.strip_prefix('p')?.parse().ok()?;
                    PERCENTILES.iter().position(|x| *x == q).map(|i| p[i])
                }
            },
        }
    }
}

/// One GPU's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSummary {
    /// Who it is.
    pub meta: GpuMeta,
    /// `(index in FIELDS, summary)` of every metric with a sample in the window, in FIELDS order.
    pub metrics: Vec<(usize, Stat)>,
}

/// One DCGM endpoint's GPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointSummary {
    /// The URL scraped.
    pub url: String,
    /// GPUs in the order they first appeared.
    pub gpus: Vec<GpuSummary>,
}

/// Everything the exports say about GPU telemetry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Telemetry {
    /// Endpoints that produced records (AIPerf lists them as both configured and successful).
    pub endpoints: Vec<EndpointSummary>,
    /// Window start, wall ns.
    pub start_ns: u64,
    /// Window end, wall ns.
    pub end_ns: u64,
}

pub use crate::server_metrics::export::endpoint_with_path as endpoint_display;

/// The summary of one metric over `(ts, value)` samples sorted by time.
#[must_use]
pub fn summarize(
    samples: &[(u64, f64)],
    counter: bool,
    start_ns: u64,
    end_ns: u64,
) -> Option<Stat> {
    let first = samples.partition_point(|s| s.0 < start_ns);
    let last = samples.partition_point(|s| s.0 <= end_ns);
    let window = samples.get(first..last).filter(|w| !w.is_empty())?;
    if counter {
        let end = window.last()?.1;
        let base = first
            .checked_sub(1)
            .and_then(|i| samples.get(i))
            .map_or(window[0].1, |s| s.1);
        return Some(Stat::Delta((end - base).max(0.0)));
    }
    let values: Vec<f64> = window.iter().map(|s| s.1).collect();
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let mut p = [0.0; 9];
    for (slot, q) in p.iter_mut().zip(PERCENTILES) {
        *slot = percentile_sorted(&sorted, q)?;
    }
    Some(Stat::Gauge {
        count: values.len(),
        avg: mean(&values)?,
        min: *sorted.first()?,
        max: *sorted.last()?,
        sum: values.iter().sum(),
        std: std_ddof1(&values)?,
        p,
    })
}

/// Summarizes the records of every endpoint (each list in time order) over `[start_ns, end_ns]`.
#[must_use]
pub fn summarize_all(per_endpoint: &[Vec<GpuRecord>], start_ns: u64, end_ns: u64) -> Telemetry {
    let mut endpoints = Vec::new();
    for records in per_endpoint {
        let Some(url) = records.first().map(|r| r.source_url.clone()) else {
            continue;
        };
        // GPUs keyed by UUID in order of appearance, as AIPerf's hierarchy.
        let mut order: Vec<(String, GpuMeta)> = Vec::new();
        for r in records {
            if !order.iter().any(|(u, _)| *u == r.meta.uuid) {
                order.push((r.meta.uuid.clone(), r.meta.clone()));
            }
        }
        let gpus = order
            .into_iter()
            .map(|(uuid, meta)| {
                let mine: Vec<&GpuRecord> =
                    records.iter().filter(|r| r.meta.uuid == uuid).collect();
                let metrics = FIELDS
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        let samples: Vec<(u64, f64)> = mine
                            .iter()
                            .filter_map(|r| r.values[i].map(|v| (r.ts_ns, v)))
                            .collect();
                        summarize(&samples, f.counter, start_ns, end_ns).map(|s| (i, s))
                    })
                    .collect();
                GpuSummary { meta, metrics }
            })
            .collect();
        endpoints.push(EndpointSummary { url, gpus });
    }
    Telemetry {
        endpoints,
        start_ns,
        end_ns,
    }
}

fn stat_json(unit: &str, s: &Stat) -> Value {
    let mut o = Map::new();
    o.insert("unit".into(), Value::from(unit));
    match s {
        Stat::Delta(d) => {
            o.insert("avg".into(), Value::from(*d));
        }
        Stat::Gauge {
            count,
            avg,
            min,
            max,
            sum,
            std,
            p,
        } => {
            o.insert("avg".into(), Value::from(*avg));
            for (q, v) in PERCENTILES.iter().zip(p) {
                o.insert(format!("p{q}"), Value::from(*v));
            }
            o.insert("min".into(), Value::from(*min));
            o.insert("max".into(), Value::from(*max));
            o.insert("std".into(), Value::from(*std));
            o.insert("count".into(), Value::from(*count));
            o.insert("sum".into(), Value::from(*sum));
        }
    }
    Value::Object(o)
}

impl Telemetry {
    /// The URLs that produced data, for `endpoints_configured` / `endpoints_successful`.
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.endpoints.iter().map(|e| e.url.clone()).collect()
    }

    /// `telemetry_data.endpoints`: `{display: {gpus: {gpu_<index>: {…}}}}`.
    #[must_use]
    pub fn endpoints_json(&self) -> Value {
        let mut eps = Map::new();
        for e in &self.endpoints {
            let mut gpus = Map::new();
            for g in &e.gpus {
                let m = &g.meta;
                let mut o = Map::new();
                o.insert("gpu_index".into(), Value::from(m.index));
                o.insert("gpu_name".into(), Value::from(m.model_name.as_str()));
                o.insert("gpu_uuid".into(), Value::from(m.uuid.as_str()));
                o.insert("platform".into(), Value::from("nvidia"));
                for (k, v) in [
                    ("hostname", &m.hostname),
                    ("namespace", &m.namespace),
                    ("pod_name", &m.pod_name),
                ] {
                    if let Some(v) = v {
                        o.insert(k.into(), Value::from(v.as_str()));
                    }
                }
                let mut metrics = Map::new();
                for (i, s) in &g.metrics {
                    metrics.insert(FIELDS[*i].key.into(), stat_json(FIELDS[*i].unit, s));
                }
                o.insert("metrics".into(), Value::Object(metrics));
                gpus.insert(format!("gpu_{}", m.index), Value::Object(o));
            }
            let mut ep = Map::new();
            ep.insert("gpus".into(), Value::Object(gpus));
            eps.insert(endpoint_display(&e.url), Value::Object(ep));
        }
        Value::Object(eps)
    }

    fn gpus(&self) -> impl Iterator<Item = (&EndpointSummary, &GpuSummary)> {
        self.endpoints
            .iter()
            .flat_map(|e| e.gpus.iter().map(move |g| (e, g)))
    }

    /// The optional CSV columns AIPerf adds when any GPU has them: `(header, value of a GPU)`.
    #[allow(clippy::type_complexity)]
    fn optional_columns(&self) -> Vec<(&'static str, fn(&GpuMeta) -> &Option<String>)> {
        let all: [(&'static str, fn(&GpuMeta) -> &Option<String>); 3] = [
            ("Hostname", |m| &m.hostname),
            ("Namespace", |m| &m.namespace),
            ("Pod Name", |m| &m.pod_name),
        ];
        all.into_iter()
            .filter(|(_, get)| self.gpus().any(|(_, g)| get(&g.meta).is_some()))
            .collect()
    }

    /// Headers AIPerf appends to the GPU table (`Hostname`, `Namespace`, `Pod Name`, when any
    /// GPU has the label).
    #[must_use]
    pub fn optional_headers(&self) -> Vec<&'static str> {
        self.optional_columns().into_iter().map(|c| c.0).collect()
    }

    /// The GPU table's rows: one per GPU per metric, stats with two decimals (empty when a
    /// counter has no such stat), then the optional columns (`None` where a GPU lacks one, as
    /// AIPerf writes it).
    #[must_use]
    pub fn csv_rows(&self, stat_keys: &[&str]) -> Vec<Vec<String>> {
        let optional = self.optional_columns();
        let mut rows = Vec::new();
        for (e, g) in self.gpus() {
            for (i, s) in &g.metrics {
                let f = &FIELDS[*i];
                let mut row = vec![
                    endpoint_display(&e.url),
                    g.meta.index.to_string(),
                    g.meta.model_name.clone(),
                    g.meta.uuid.clone(),
                    "nvidia".to_owned(),
                    format!("{} ({})", f.display, f.unit),
                ];
                row.extend(
                    stat_keys
                        .iter()
                        .map(|k| s.get(k).map(|v| format!("{v:.2}")).unwrap_or_default()),
                );
                row.extend(
                    optional
                        .iter()
                        .map(|(_, get)| get(&g.meta).clone().unwrap_or_else(|| "None".into())),
                );
                rows.push(row);
            }
        }
        rows
    }

    /// The console's GPU section: a status header, then one table per GPU with AIPerf's columns
    /// (avg, min, max, p99, p90, p50, std); empty when nothing was collected.
    #[must_use]
    pub fn console(&self) -> String {
        const COLS: [&str; 7] = ["avg", "min", "max", "p99", "p90", "p50", "std"];
        if self.endpoints.is_empty() {
            return String::new();
        }
        let n = self.endpoints.len();
        let mut out =
            format!("ringperf | GPU Telemetry Summary\n{n}/{n} telemetry sources reachable\n");
        for e in &self.endpoints {
            out.push_str(&format!("  • {} ✔\n", endpoint_display(&e.url)));
        }
        for (e, g) in self.gpus() {
            out.push_str(&format!(
                "\n{} | GPU {} | {}\n",
                endpoint_display(&e.url),
                g.meta.index,
                g.meta.model_name
            ));
            let rows: Vec<Vec<String>> = g
                .metrics
                .iter()
                .map(|(i, s)| {
                    let f = &FIELDS[*i];
                    std::iter::once(format!("{} ({})", f.display, f.unit))
                        .chain(
                            COLS.iter()
                                .map(|k| s.get(k).map_or("N/A".into(), console_number)),
                        )
                        .collect()
                })
                .collect();
            let mut widths = vec!["Metric".chars().count()];
            widths.extend(COLS.iter().map(|c| c.len()));
            for r in &rows {
                for (w, c) in widths.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let line = |cells: Vec<String>| {
                let mut s = String::new();
                for (w, c) in widths.iter().zip(cells) {
                    let pad = w.saturating_sub(c.chars().count());
                    s.push_str(&format!("{}{c}  ", " ".repeat(pad)));
                }
                s.trim_end().to_owned() + "\n"
            };
            out.push_str(&line(
                std::iter::once("Metric".to_owned())
                    .chain(COLS.iter().map(|c| (*c).to_owned()))
                    .collect(),
            ));
            for r in rows {
                out.push_str(&line(r));
            }
        }
        out
    }
}

/// AIPerf's console number: scientific above a million, else thousands separators and two
/// decimals.
fn console_number(v: f64) -> String {
    if v.abs() >= 1e6 {
        let s = format!("{v:.2e}");
        // Python writes the exponent with a sign and two digits (`1.23e+06`).
        return match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        };
    }
    let s = format!("{:.2}", v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, "00"));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && !s.trim_matches(['0', '.']).is_empty() {
        "-"
    } else {
        ""
    };
    format!("{sign}{grouped}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_statistics_follow_numpy() {
        let s = [
            (5, 100.0),
            (10, 1.0),
            (20, 2.0),
            (30, 3.0),
            (40, 4.0),
            (50, 100.0),
        ];
        let Some(Stat::Gauge {
            count,
            avg,
            min,
            max,
            sum,
            std,
            p,
        }) = summarize(&s, false, 10, 40)
        else {
            panic!("a gauge");
        };
        assert_eq!((count, avg, min, max, sum), (4, 2.5, 1.0, 4.0, 10.0));
        assert!((std - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(p[4], 2.5);
        assert!((p[8] - 3.97).abs() < 1e-12);
        assert_eq!(summarize(&s, false, 11, 19), None);
    }

    #[test]
    fn counter_delta_uses_the_baseline_before_the_window_and_clamps_resets() {
        let s = [(5, 10.0), (10, 12.0), (20, 15.0), (30, 19.0)];
        assert_eq!(summarize(&s, true, 10, 25), Some(Stat::Delta(5.0)));
        // No sample before the window: from the first in it.
        assert_eq!(summarize(&s, true, 0, 30), Some(Stat::Delta(9.0)));
        let reset = [(5, 10.0), (10, 2.0)];
        assert_eq!(summarize(&reset, true, 6, 10), Some(Stat::Delta(0.0)));
        assert_eq!(Stat::Delta(3.0).get("p50"), None);
    }

    #[test]
    fn endpoint_display_is_aiperfs() {
        assert_eq!(
            endpoint_display("http://localhost:9400/metrics"),
            "localhost:9400"
        );
        assert_eq!(endpoint_display("https://h:1/dcgm/metrics"), "h:1/dcgm");
        assert_eq!(endpoint_display("http://h:1"), "h:1");
    }

    #[test]
    fn console_numbers() {
        assert_eq!(console_number(1234.567), "1,234.57");
        assert_eq!(console_number(0.5), "0.50");
        assert_eq!(console_number(-12.0), "-12.00");
        assert_eq!(console_number(2_500_000.0), "2.50e+06");
    }
}
