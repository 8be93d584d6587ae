//! One assessment window: the requests that ended in it, and the value of every SLA filter
//! over them, computed as AIPerf 0.13's adaptive scale computes them (percentiles by linear
//! interpolation between closest ranks on nanoseconds, then milliseconds; averages, minima and
//! maxima on milliseconds; rates over the window's measured length).

use super::settings::{Filter, Metric, Stat};

/// One successful request of a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    pub latency_ns: u64,
    /// Only kept when a filter needs it (AIPerf observes first tokens only then).
    pub ttft_ns: Option<u64>,
    /// `(latency − time to first output) / (output tokens − 1)`, when there are two or more.
    pub itl_ns: Option<f64>,
    pub output_tokens: Option<u64>,
}

/// What ended in one window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowStats {
    pub samples: Vec<Sample>,
    pub errors: u64,
    pub cancelled: u64,
    /// Its length in seconds (a monotonic clock's).
    pub elapsed_s: f64,
    /// Its start and end, wall-clock ns.
    pub start_wall_ns: u64,
    pub end_wall_ns: u64,
}

impl WindowStats {
    pub fn successes(&self) -> u64 {
        self.samples.len() as u64
    }

    /// Successes, errors and cancellations.
    pub fn total(&self) -> u64 {
        self.successes() + self.errors + self.cancelled
    }

    /// Successes per second of the window (0 for a window of no length).
    pub fn throughput(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.samples.len() as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    fn output_token_throughput(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            let tokens: u64 = self.samples.iter().filter_map(|s| s.output_tokens).sum();
            tokens as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    fn latencies(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.latency_ns as f64).collect()
    }

    fn ttfts(&self) -> Vec<f64> {
        (self.samples.iter())
            .filter_map(|s| s.ttft_ns.map(|t| t as f64))
            .collect()
    }

    fn itls(&self) -> Vec<f64> {
        self.samples.iter().filter_map(|s| s.itl_ns).collect()
    }

    /// The window's value of `filter` (`filters` are all of the phase's: goodput counts the
    /// requests passing every latency filter among them).
    pub fn value(&self, filter: &Filter, filters: &[Filter]) -> f64 {
        let total = self.total();
        let fraction = |n: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            }
        };
        match filter.metric {
            Metric::RequestLatency => ns_stat_ms(&self.latencies(), filter.stat),
            Metric::Ttft => ns_stat_ms(&self.ttfts(), filter.stat),
            Metric::Itl => ns_stat_ms(&self.itls(), filter.stat),
            Metric::Throughput => self.throughput(),
            Metric::OutputTokenThroughput => self.output_token_throughput(),
            Metric::Goodput => {
                if self.elapsed_s > 0.0 {
                    self.good(filters) as f64 / self.elapsed_s
                } else {
                    0.0
                }
            }
            Metric::GoodputRatio => fraction(self.good(filters)),
            Metric::SuccessRate => fraction(self.successes()),
            Metric::CancellationRate => fraction(self.cancelled),
            Metric::ErrorRate => {
                let n = self.successes() + self.errors;
                if n == 0 {
                    0.0
                } else {
                    100.0 * self.errors as f64 / n as f64
                }
            }
        }
    }

    /// Successes whose own latency values pass every latency filter (the stat is not used).
    fn good(&self, filters: &[Filter]) -> u64 {
        let quality: Vec<&Filter> = filters.iter().filter(|f| f.metric.latency()).collect();
        let ok = |s: &Sample| {
            quality.iter().all(|f| {
                let v = match f.metric {
                    Metric::RequestLatency => Some(s.latency_ns as f64 / 1e6),
                    Metric::Ttft => s.ttft_ns.map(|t| t as f64 / 1e6),
                    _ => s.itl_ns.map(|t| t / 1e6),
                };
                v.is_some_and(|v| f.written.op.holds(v, f.written.threshold))
            })
        };
        self.samples.iter().filter(|s| ok(s)).count() as u64
    }

    /// Every filter's value, keyed by [`super::settings::SlaFilter::key`] (a repeated key
    /// keeps its first place and its last value, as a Python dict does).
    pub fn values(&self, filters: &[Filter]) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::with_capacity(filters.len());
        for f in filters {
            let v = self.value(f, filters);
            match out.iter_mut().find(|(k, _)| *k == f.key) {
                Some(slot) => slot.1 = v,
                None => out.push((f.key.clone(), v)),
            }
        }
        out
    }

    /// A candidate's percentile of the latencies (`which`: 0 latency, 1 TTFT, 2 ITL), ms; 0 when
    /// there is none.
    pub fn percentile_ms(&self, which: u8, pct: f64) -> f64 {
        let v = match which {
            0 => self.latencies(),
            1 => self.ttfts(),
            _ => self.itls(),
        };
        if v.is_empty() {
            0.0
        } else {
            percentile(&v, pct) / 1e6
        }
    }

    /// The mean latency in ms (0 with no success).
    pub fn latency_avg_ms(&self) -> f64 {
        ns_avg_ms(&self.latencies())
    }
}

fn ns_avg_ms(ns: &[f64]) -> f64 {
    if ns.is_empty() {
        return 0.0;
    }
    ns.iter().map(|v| v / 1e6).sum::<f64>() / ns.len() as f64
}

/// `stat` of nanosecond values, in ms; +∞ when there are none (a latency never observed fails
/// an upper bound).
fn ns_stat_ms(ns: &[f64], stat: Stat) -> f64 {
    if ns.is_empty() {
        return f64::INFINITY;
    }
    match stat {
        Stat::Avg => ns_avg_ms(ns),
        Stat::Min => ns.iter().map(|v| v / 1e6).fold(f64::INFINITY, f64::min),
        Stat::Max => ns.iter().map(|v| v / 1e6).fold(f64::NEG_INFINITY, f64::max),
        p => percentile(ns, p.percentile().unwrap_or(95.0)) / 1e6,
    }
}

/// The `pct` percentile of `values`, interpolated linearly between the closest ranks.
pub fn percentile(values: &[f64], pct: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() == 1 {
        return v[0];
    }
    let rank = pct / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor(), rank.ceil());
    if lo == hi {
        return v[rank as usize];
    }
    let (a, b) = (v[lo as usize], v[hi as usize]);
    a + (b - a) * (rank - lo)
}

#[cfg(test)]
mod tests {
    use super::super::settings::{Op, SlaFilter};
    use super::*;

    fn filter(tag: &str, stat: Stat, op: Op, threshold: f64) -> Filter {
        let written = SlaFilter {
            metric_tag: tag.into(),
            stat: Some(stat),
            op,
            threshold,
        };
        Filter {
            metric: Metric::of(tag).unwrap(),
            stat,
            key: written.key(),
            written,
        }
    }

    fn window(latencies_ms: &[u64]) -> WindowStats {
        WindowStats {
            samples: latencies_ms
                .iter()
                .map(|ms| Sample {
                    latency_ns: ms * 1_000_000,
                    output_tokens: Some(16),
                    ..Sample::default()
                })
                .collect(),
            elapsed_s: 2.0,
            ..WindowStats::default()
        }
    }

    #[test]
    fn percentiles_interpolate_between_closest_ranks() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(percentile(&v, 50.0), 25.0);
        assert_eq!(percentile(&v, 100.0), 40.0);
        assert!((percentile(&v, 95.0) - 38.5).abs() < 1e-9);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn every_family_has_its_window_value() {
        let mut w = window(&[100, 200, 300, 400]);
        w.errors = 1;
        w.cancelled = 1;
        let lat = filter("request_latency", Stat::P50, Op::Lt, 500.0);
        let all = [lat.clone()];
        assert_eq!(w.value(&lat, &all), 250.0);
        let tput = filter("throughput", Stat::Avg, Op::Gt, 1.0);
        assert_eq!(w.value(&tput, &all), 2.0);
        let otps = filter("output_token_throughput", Stat::Max, Op::Gt, 1.0);
        assert_eq!(w.value(&otps, &all), 32.0);
        let err = filter("error_rate", Stat::Avg, Op::Lt, 5.0);
        assert_eq!(w.value(&err, &all), 20.0);
        let succ = filter("success_rate", Stat::Avg, Op::Gt, 0.5);
        assert!((w.value(&succ, &all) - 4.0 / 6.0).abs() < 1e-12);
        let canc = filter("cancellation_rate", Stat::Avg, Op::Lt, 0.5);
        assert!((w.value(&canc, &all) - 1.0 / 6.0).abs() < 1e-12);
        // Goodput: requests under 250 ms by their own latency (2 of them).
        let tight = [filter("request_latency", Stat::P99, Op::Lt, 250.0)];
        let good = filter("goodput", Stat::Avg, Op::Gt, 0.0);
        assert_eq!(w.value(&good, &tight), 1.0);
        let ratio = filter("goodput_ratio", Stat::Avg, Op::Gt, 0.0);
        assert!((w.value(&ratio, &tight) - 2.0 / 6.0).abs() < 1e-12);
        // No first token observed: +∞.
        let ttft = filter("ttft", Stat::P95, Op::Lt, 5.0);
        assert_eq!(w.value(&ttft, &all), f64::INFINITY);
    }
}
