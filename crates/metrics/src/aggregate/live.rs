//! Live figures for the dashboard (`--ui dashboard`): what the aggregator has seen of the phase
//! running now, folded record by record and published as a [`LiveSnapshot`] a few times a
//! second. The workers never see any of it; with another UI the aggregator keeps none of it.
//!
//! Percentiles are over the most recent [`RECENT`] records of each metric (NumPy's linear
//! interpolation, as the final figures), so they follow the run as it goes; the rates are per
//! whole second of the phase, by completion time.

use std::collections::VecDeque;

use super::MetricId;
use super::metrics::RecordMetrics;
use super::stats::linear;
use ringperf_wire::record::{Phase, RecordFacts};

/// Records each live percentile is computed over.
pub const RECENT: usize = 2048;
/// Seconds of rate history kept.
pub const SERIES_SECONDS: usize = 120;

/// p50 / p90 / p99 of a metric over its recent records, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Records they are computed over (at most [`RECENT`]).
    pub n: usize,
}

/// What the dashboard draws from the aggregator: one phase, as far as it has been seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveSnapshot {
    /// The phase of the records below (`None` before the first record).
    pub phase: Option<Phase>,
    /// Records of the phase, failed ones included.
    pub done: u64,
    /// Failed records of the phase.
    pub errors: u64,
    /// Output tokens of the phase's successful records.
    pub output_tokens: u64,
    /// Requests completed in each whole second of the phase (oldest first, at most
    /// [`SERIES_SECONDS`]); the second in progress is not included.
    pub requests_per_s: Vec<u64>,
    /// Output tokens completed in each whole second, aligned with `requests_per_s`.
    pub tokens_per_s: Vec<u64>,
    /// Time to first token.
    pub ttft_ms: Option<Percentiles>,
    /// Inter-token latency (per request).
    pub itl_ms: Option<Percentiles>,
    /// Request latency.
    pub latency_ms: Option<Percentiles>,
    /// Actual minus intended send time.
    pub dispatch_lag_ms: Option<Percentiles>,
    /// Failures by `type` (and code), most frequent first.
    pub errors_by_kind: Vec<(String, u64)>,
    /// Times a worker waited for the aggregator to drain its ring (the whole run so far).
    pub ring_stalls: u64,
}

/// The most recent values of one metric.
#[derive(Debug, Default)]
struct Recent {
    values: VecDeque<f64>,
}

impl Recent {
    fn push(&mut self, v: f64) {
        if self.values.len() == RECENT {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    fn percentiles(&self) -> Option<Percentiles> {
        if self.values.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = self.values.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: linear(&sorted, 50.0),
            p90: linear(&sorted, 90.0),
            p99: linear(&sorted, 99.0),
            n: sorted.len(),
        })
    }
}

/// The aggregator's live fold of the current phase.
#[derive(Debug, Default)]
pub struct LiveStats {
    phase: Option<Phase>,
    /// Monotonic ns the phase's seconds count from: its first record's intended send time.
    origin_ns: u64,
    done: u64,
    errors: u64,
    output_tokens: u64,
    /// `(second of the phase, requests, output tokens)`, ascending.
    seconds: VecDeque<(u64, u64, u64)>,
    ttft: Recent,
    itl: Recent,
    latency: Recent,
    lag: Recent,
    /// `(code, type, count)`: a handful of kinds, searched in place so that a failed record
    /// allocates nothing once its kind was seen.
    errors_by_kind: Vec<(Option<u16>, String, u64)>,
}

impl LiveStats {
    /// Folds one record in; a record of another phase than the last one starts afresh.
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        if self.phase != Some(f.phase) {
            *self = Self {
                phase: Some(f.phase),
                origin_ns: f.intended_ns,
                ..Self::default()
            };
        }
        self.origin_ns = self.origin_ns.min(f.intended_ns);
        self.done += 1;
        let second = f.end_ns.saturating_sub(self.origin_ns) / 1_000_000_000;
        let tokens = if f.error.is_some() {
            0
        } else {
            f.output_tokens.unwrap_or(0)
        };
        self.output_tokens += tokens;
        match self.seconds.iter_mut().rev().find(|s| s.0 == second) {
            Some(s) => {
                s.1 += 1;
                s.2 += tokens;
            }
            None => {
                let at = self.seconds.partition_point(|s| s.0 < second);
                self.seconds.insert(at, (second, 1, tokens));
                // One more than shown: the newest second may still be in progress.
                while self.seconds.len() > SERIES_SECONDS + 1 {
                    self.seconds.pop_front();
                }
            }
        }
        self.lag
            .push(f.start_ns.saturating_sub(f.intended_ns) as f64 / 1e6);
        if let Some(e) = &f.error {
            self.errors += 1;
            match self
                .errors_by_kind
                .iter_mut()
                .find(|(code, kind, _)| *code == e.code && *kind == e.kind)
            {
                Some((.., n)) => *n += 1,
                None => self.errors_by_kind.push((e.code, e.kind.clone(), 1)),
            }
            return;
        }
        let ms = |id| m.f64(id).map(|ns| ns / 1e6);
        if let Some(v) = ms(MetricId::TimeToFirstToken) {
            self.ttft.push(v);
        }
        if let Some(v) = ms(MetricId::InterTokenLatency) {
            self.itl.push(v);
        }
        if let Some(v) = ms(MetricId::RequestLatency) {
            self.latency.push(v);
        }
    }

    /// The figures as of `now_ns` (monotonic): whole seconds before the one `now_ns` falls in.
    pub fn snapshot(&self, now_ns: u64, ring_stalls: u64) -> LiveSnapshot {
        let current = now_ns.saturating_sub(self.origin_ns) / 1_000_000_000;
        let last = current.checked_sub(1);
        let (requests_per_s, tokens_per_s) = match (self.seconds.front(), last) {
            (Some(&(first, ..)), Some(last)) if first <= last => {
                let from = first.max((last + 1).saturating_sub(SERIES_SECONDS as u64));
                (from..=last)
                    .map(|sec| {
                        self.seconds
                            .iter()
                            .find(|s| s.0 == sec)
                            .map_or((0, 0), |s| (s.1, s.2))
                    })
                    .unzip()
            }
            _ => (Vec::new(), Vec::new()),
        };
        let mut errors_by_kind: Vec<(String, u64)> = self
            .errors_by_kind
            .iter()
            .map(|(code, kind, n)| match code {
                Some(c) => (format!("{c} {kind}"), *n),
                None => (kind.clone(), *n),
            })
            .collect();
        errors_by_kind.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        LiveSnapshot {
            phase: self.phase,
            done: self.done,
            errors: self.errors,
            output_tokens: self.output_tokens,
            requests_per_s,
            tokens_per_s,
            ttft_ms: self.ttft.percentiles(),
            itl_ms: self.itl.percentiles(),
            latency_ms: self.latency.percentiles(),
            dispatch_lag_ms: self.lag.percentiles(),
            errors_by_kind,
            ring_stalls,
        }
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
