//! Sweep-line metrics (AIPerf 0.13 `analysis/sweepline*.py`): step functions of the run's
//! instantaneous concurrency, token throughput and tokens in flight, built from every record's
//! intervals, and their time-weighted statistics over the phase window.
//!
//! Pure functions over [`SweepRecord`]s. Each curve is a sorted list of events whose running sum
//! is the curve: O(n log n) to build, O(n log n) to summarize.
//!
//! Per record (times in ns on one clock):
//! - request `[start, end)`; prefill `[start, gen_start)`; decode `[gen_start, end)`, where
//!   `gen_start = start + TTFT` exists only for streaming records;
//! - prefill rate `isl / (gen_start − start)`; decode rate `(osl − 1) / (end − gen_start)`, or,
//!   when any record of the phase has inter-chunk latencies, the ICL-aware rate
//!   `((osl − 1) / K) / icl_k` over each non-zero chunk gap `k` (`K` non-zero gaps);
//! - tokens in flight: `isl` from `start`, plus `osl` from `gen_start` (or, ICL-aware, one token
//!   at `gen_start` and `(osl − 1) / n_icl` at each later chunk), all freed at `end`.

/// What one record contributes. Times are ns on one clock (f64, as AIPerf's float arrays);
/// token counts and gaps are `None`/empty when the record has no such metric.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepRecord {
    /// Request start.
    pub start: f64,
    /// Request end.
    pub end: f64,
    /// `start + time_to_first_token`.
    pub gen_start: Option<f64>,
    /// `input_sequence_length`.
    pub isl: Option<f64>,
    /// `output_sequence_length`.
    pub osl: Option<f64>,
    /// `inter_chunk_latency` values, ns.
    pub icl: Vec<f64>,
}

/// A step function: `vals[i]` holds from `ts[i]` until `ts[i + 1]` (0 before `ts[0]`). Times may
/// repeat; the last value at a time is the one that holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// Event times, ascending.
    pub ts: Vec<f64>,
    /// Value from each event on.
    pub vals: Vec<f64>,
}

impl Step {
    /// The value held at `t` (0 before the first event).
    pub fn at(&self, t: f64) -> f64 {
        match self.ts.partition_point(|&x| x <= t) {
            0 => 0.0,
            i => self.vals[i - 1],
        }
    }

    fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }
}

/// Sorts `(time, delta)` events (ends — non-positive deltas — before starts at equal times) and
/// takes the running sum; sums smaller than `1e-9 ×` the largest magnitude snap to 0 (float
/// cancellation of large ± pairs).
pub fn cumsum(mut events: Vec<(f64, f64)>) -> Step {
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1 > 0.0).cmp(&(b.1 > 0.0))));
    let mut acc = 0.0;
    let mut vals: Vec<f64> = events
        .iter()
        .map(|e| {
            acc += e.1;
            acc
        })
        .collect();
    let max_abs = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if max_abs > 0.0 {
        for v in &mut vals {
            if v.abs() < 1e-9 * max_abs {
                *v = 0.0;
            }
        }
    }
    Step {
        ts: events.into_iter().map(|e| e.0).collect(),
        vals,
    }
}

/// `a / b` on the union of both functions' times, 0 where `b` is not positive; empty when
/// either is.
pub fn divide(a: &Step, b: &Step) -> Step {
    if a.is_empty() || b.is_empty() {
        return Step::default();
    }
    let mut ts: Vec<f64> = a.ts.iter().chain(&b.ts).copied().collect();
    ts.sort_by(f64::total_cmp);
    ts.dedup();
    let vals = ts
        .iter()
        .map(|&t| {
            let d = b.at(t);
            if d > 0.0 { a.at(t) / d } else { 0.0 }
        })
        .collect();
    Step { ts, vals }
}

/// `a + b` on the union of both functions' times (AIPerf's `add_step_functions`); either one
/// alone when the other is empty.
pub fn add(a: &Step, b: &Step) -> Step {
    if a.is_empty() {
        return b.clone();
    }
    if b.is_empty() {
        return a.clone();
    }
    let mut ts: Vec<f64> = a.ts.iter().chain(&b.ts).copied().collect();
    ts.sort_by(f64::total_cmp);
    ts.dedup();
    let vals = ts.iter().map(|&t| a.at(t) + b.at(t)).collect();
    Step { ts, vals }
}

/// Every curve the sweep metrics summarize.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curves {
    /// Requests in flight.
    pub concurrency: Step,
    /// Requests between first token and end.
    pub decode_concurrency: Step,
    /// Requests between start and first token.
    pub prefill_concurrency: Step,
    /// Generated tokens per ns.
    pub decode_throughput: Step,
    /// Prefilled tokens per ns.
    pub prefill_throughput: Step,
    /// tokens/ns: prefill plus request-level (never ICL-aware) decode.
    pub total_throughput: Step,
    /// Decode throughput over decode concurrency, tokens/ns/user.
    pub decode_throughput_per_user: Step,
    /// Prefill throughput over prefill concurrency, tokens/ns/user.
    pub prefill_throughput_per_user: Step,
    /// Input plus generated tokens held by requests in flight.
    pub tokens_in_flight: Step,
}

fn prefill_rate(r: &SweepRecord) -> Option<(f64, f64, f64)> {
    let (g, isl) = (r.gen_start?, r.isl?);
    let dur = g - r.start;
    (dur > 0.0).then(|| (r.start, g, isl / dur))
}

fn decode_rate(r: &SweepRecord) -> Option<(f64, f64, f64)> {
    let (g, osl) = (r.gen_start?, r.osl?);
    let dur = r.end - g;
    (dur > 0.0 && osl >= 1.0).then(|| (g, r.end, (osl - 1.0) / dur))
}

fn interval(events: &mut Vec<(f64, f64)>, (from, to, v): (f64, f64, f64)) {
    events.push((from, v));
    events.push((to, -v));
}

/// Builds every curve from the records of one phase.
pub fn curves(records: &[SweepRecord]) -> Curves {
    let mut conc = Vec::with_capacity(2 * records.len());
    let mut dconc = Vec::new();
    let mut pconc = Vec::new();
    let mut prefill = Vec::new();
    let mut total = Vec::new();
    let mut decode_req = Vec::new();
    for r in records {
        interval(&mut conc, (r.start, r.end, 1.0));
        if let Some(g) = r.gen_start {
            interval(&mut dconc, (g, r.end, 1.0));
            interval(&mut pconc, (r.start, g, 1.0));
        }
        if let Some(p) = prefill_rate(r) {
            interval(&mut prefill, p);
            interval(&mut total, p);
        }
        if let Some(d) = decode_rate(r) {
            interval(&mut decode_req, d);
            interval(&mut total, d);
        }
    }
    let icl_aware = records.iter().any(|r| !r.icl.is_empty());
    let decode = if icl_aware {
        cumsum(decode_icl_events(records))
    } else {
        cumsum(decode_req)
    };
    let in_flight = if icl_aware {
        tokens_in_flight_icl_events(records)
    } else {
        tokens_in_flight_events(records)
    };
    let decode_concurrency = cumsum(dconc);
    let prefill_concurrency = cumsum(pconc);
    let prefill_throughput = cumsum(prefill);
    Curves {
        concurrency: cumsum(conc),
        decode_throughput_per_user: divide(&decode, &decode_concurrency),
        prefill_throughput_per_user: divide(&prefill_throughput, &prefill_concurrency),
        decode_throughput: decode,
        prefill_throughput,
        total_throughput: cumsum(total),
        decode_concurrency,
        prefill_concurrency,
        tokens_in_flight: cumsum(in_flight),
    }
}

/// ICL-aware decode throughput: each non-zero chunk gap carries `(osl − 1) / K` tokens.
fn decode_icl_events(records: &[SweepRecord]) -> Vec<(f64, f64)> {
    let mut events = Vec::new();
    for r in records {
        let (Some(g), Some(osl)) = (r.gen_start, r.osl) else {
            continue;
        };
        let nonzero = r.icl.iter().filter(|v| **v > 0.0).count();
        if osl < 1.0 || nonzero == 0 {
            continue;
        }
        let per_gap = (osl - 1.0) / nonzero as f64;
        let mut at = g;
        for &gap in &r.icl {
            at += gap;
            if gap > 0.0 {
                interval(&mut events, (at - gap, at, per_gap / gap));
            }
        }
    }
    events
}

/// Request-level tokens in flight.
fn tokens_in_flight_events(records: &[SweepRecord]) -> Vec<(f64, f64)> {
    let mut events = Vec::new();
    for r in records {
        let input = match (r.isl, r.gen_start) {
            (Some(isl), Some(g)) if g > r.start => Some(isl),
            _ => None,
        };
        let output = match (r.gen_start, r.osl) {
            (Some(g), Some(osl)) if r.end - g > 0.0 => Some((g, osl)),
            _ => None,
        };
        if let Some(isl) = input {
            events.push((r.start, isl));
        }
        if let Some((g, osl)) = output {
            events.push((g, osl));
        }
        let freed = input.unwrap_or(0.0) + output.map_or(0.0, |o| o.1);
        if input.is_some() || output.is_some() {
            events.push((r.end, -freed));
        }
    }
    events
}

/// ICL-aware tokens in flight: output tokens arrive one at the first chunk, then
/// `(osl − 1) / n_icl` at each later chunk (kept strictly before `end`).
fn tokens_in_flight_icl_events(records: &[SweepRecord]) -> Vec<(f64, f64)> {
    let mut events = Vec::new();
    for r in records {
        let input = match (r.isl, r.gen_start) {
            (Some(isl), Some(g)) if g > r.start => Some(isl),
            _ => None,
        };
        let mut has_icl = false;
        if let (Some(g), Some(osl)) = (r.gen_start, r.osl)
            && osl >= 1.0
            && !r.icl.is_empty()
        {
            let per_chunk = (osl - 1.0) / r.icl.len() as f64;
            let mut at = g;
            for &gap in &r.icl {
                at += gap;
                if gap >= 0.0 {
                    has_icl = true;
                    let t = if at >= r.end { r.end.next_down() } else { at };
                    events.push((t, per_chunk));
                }
            }
            if has_icl {
                events.push((g, 1.0));
            }
        }
        if let Some(isl) = input {
            events.push((r.start, isl));
        }
        let osl = r.osl.unwrap_or(0.0);
        match (input, has_icl) {
            (Some(isl), true) => events.push((r.end, -(isl + osl))),
            (Some(isl), false) => events.push((r.end, -isl)),
            (None, true) => events.push((r.end, -osl)),
            (None, false) => {}
        }
    }
    events
}

/// Time-weighted statistics of a curve (AIPerf `SweepLineStats`), in the curve's unit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeWeighted {
    /// Mean over the window.
    pub avg: f64,
    /// Smallest value held.
    pub min: f64,
    /// Largest value held.
    pub max: f64,
    /// Median by time.
    pub p50: f64,
    /// 90th percentile by time.
    pub p90: f64,
    /// 95th percentile by time.
    pub p95: f64,
    /// 99th percentile by time.
    pub p99: f64,
    /// Time-weighted population deviation.
    pub std: f64,
}

impl TimeWeighted {
    /// Every statistic multiplied by `k` (tokens/ns → tokens/s).
    pub fn scaled(self, k: f64) -> Self {
        Self {
            avg: self.avg * k,
            min: self.min * k,
            max: self.max * k,
            p50: self.p50 * k,
            p90: self.p90 * k,
            p95: self.p95 * k,
            p99: self.p99 * k,
            std: self.std * k,
        }
    }
}

/// Statistics of `(duration, value)` segments weighted by duration over `total`: mean and
/// population deviation over `total`, percentiles from the duration CDF (the first value whose
/// cumulative share reaches q).
fn weighted(mut segs: Vec<(f64, f64)>, total: f64) -> TimeWeighted {
    if segs.is_empty() {
        return TimeWeighted::default();
    }
    let avg = segs.iter().map(|(d, v)| v * d).sum::<f64>() / total;
    let var = segs
        .iter()
        .map(|(d, v)| d * (v - avg) * (v - avg))
        .sum::<f64>()
        / total;
    segs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut cum = Vec::with_capacity(segs.len());
    let mut acc = 0.0;
    for (d, _) in &segs {
        acc += d;
        cum.push(acc);
    }
    let last = acc;
    let pct = |q: f64| {
        let i = cum.partition_point(|c| c / last < q).min(segs.len() - 1);
        segs[i].1
    };
    TimeWeighted {
        avg,
        min: segs[0].1,
        max: segs[segs.len() - 1].1,
        p50: pct(0.50),
        p90: pct(0.90),
        p95: pct(0.95),
        p99: pct(0.99),
        std: var.sqrt(),
    }
}

/// Breakpoints of `[from, to]`: both ends and every event time strictly inside, ascending.
fn grid(from: f64, to: f64, steps: &[&Step]) -> Vec<f64> {
    let mut g = vec![from, to];
    for s in steps {
        g.extend(s.ts.iter().copied().filter(|t| *t > from && *t < to));
    }
    g.sort_by(f64::total_cmp);
    g.dedup();
    g
}

/// Time-weighted statistics of `curve` over the window `[from, to]` (0 before its first event);
/// all zeros when the curve is empty or the window has no length.
pub fn time_weighted(curve: &Step, from: f64, to: f64) -> TimeWeighted {
    let total = to - from;
    if curve.is_empty() || total <= 0.0 {
        return TimeWeighted::default();
    }
    let g = grid(from, to, &[curve]);
    let segs = g
        .windows(2)
        .map(|w| (w[1] - w[0], curve.at(w[0])))
        .filter(|(d, _)| *d > 0.0)
        .collect();
    weighted(segs, total)
}

/// Like [`time_weighted`], but only over the time `mask` is positive (the "active" variants);
/// all zeros when it never is.
pub fn active_weighted(curve: &Step, mask: &Step, from: f64, to: f64) -> TimeWeighted {
    if to - from <= 0.0 || curve.is_empty() || mask.is_empty() {
        return TimeWeighted::default();
    }
    let g = grid(from, to, &[curve, mask]);
    let segs: Vec<(f64, f64)> = g
        .windows(2)
        .filter(|w| w[1] - w[0] > 0.0 && mask.at(w[0]) > 0.0)
        .map(|w| (w[1] - w[0], curve.at(w[0])))
        .collect();
    let active: f64 = segs.iter().map(|s| s.0).sum();
    if active <= 0.0 {
        return TimeWeighted::default();
    }
    weighted(segs, active)
}

use super::registry::MetricId;

/// Tokens per ns → tokens per second.
const PER_SEC: f64 = 1e9;

/// The fourteen sweep results in AIPerf's order: the nine `effective_*` / `tokens_in_flight`
/// then the five `active_*`, in each metric's display unit.
pub fn summarize(c: &Curves, from: f64, to: f64) -> [(MetricId, TimeWeighted); 14] {
    use MetricId as M;
    let tw = |s: &Step, k: f64| time_weighted(s, from, to).scaled(k);
    let aw = |s: &Step, m: &Step| active_weighted(s, m, from, to).scaled(PER_SEC);
    [
        (M::EffectiveConcurrency, tw(&c.concurrency, 1.0)),
        (
            M::EffectiveDecodeThroughput,
            tw(&c.decode_throughput, PER_SEC),
        ),
        (
            M::EffectivePrefillThroughput,
            tw(&c.prefill_throughput, PER_SEC),
        ),
        (
            M::EffectiveDecodeConcurrency,
            tw(&c.decode_concurrency, 1.0),
        ),
        (
            M::EffectivePrefillConcurrency,
            tw(&c.prefill_concurrency, 1.0),
        ),
        (
            M::EffectiveTotalThroughput,
            tw(&c.total_throughput, PER_SEC),
        ),
        (
            M::EffectiveDecodeThroughputPerUser,
            tw(&c.decode_throughput_per_user, PER_SEC),
        ),
        (
            M::EffectivePrefillThroughputPerUser,
            tw(&c.prefill_throughput_per_user, PER_SEC),
        ),
        (M::TokensInFlight, tw(&c.tokens_in_flight, 1.0)),
        (
            M::ActiveDecodeThroughput,
            aw(&c.decode_throughput, &c.decode_concurrency),
        ),
        (
            M::ActivePrefillThroughput,
            aw(&c.prefill_throughput, &c.prefill_concurrency),
        ),
        (
            M::ActiveDecodeThroughputPerUser,
            aw(&c.decode_throughput_per_user, &c.decode_concurrency),
        ),
        (
            M::ActivePrefillThroughputPerUser,
            aw(&c.prefill_throughput_per_user, &c.prefill_concurrency),
        ),
        (
            M::ActiveTotalThroughput,
            aw(&c.total_throughput, &c.concurrency),
        ),
    ]
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
