//! The accumulator: per-metric value columns and aggregate counters over the records of one
//! phase, and the [`Summary`] computed from them (docs/metrics.md).
//!
//! Conventions where AIPerf's docs leave room: aggregate results (counts, timestamps) exist only
//! once a record contributed to them (so `error_request_count` is absent from an error-free
//! run, as in AIPerf's exports); `min_request_timestamp` / `max_response_timestamp` and hence
//! `benchmark_duration` come from valid records; dispatch lag covers every record.

use std::borrow::Cow;
use std::collections::HashMap;

use super::metrics::{MetricConfig, MetricValue, RecordMetrics};
use super::registry::{Kind, MetricDef, MetricId, REGISTRY, flags};
use super::stats::{self, Stats};
use super::sweep::{self, TimeWeighted};
use ringperf_wire::record::RecordFacts;

/// The result of one metric over a phase, in base units.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultValue {
    /// A distribution (record metrics).
    Dist(Stats),
    /// A single value (aggregate and derived metrics), reported as `avg`.
    Scalar(f64),
    /// Time-weighted statistics of a sweep-line curve, already in the display unit.
    TimeWeighted(TimeWeighted),
    /// A share of counted items, reported as `avg`, `count` and `sum`.
    Share {
        /// `100 · sum / count`, already in the display unit (percent).
        avg: f64,
        /// Items in all.
        count: u64,
        /// Items counted.
        sum: u64,
    },
}

/// One metric's result.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricResult {
    /// The metric.
    pub def: &'static MetricDef,
    /// The error-adjusted variant (`adj_<tag>`, docs/metrics.md "Statistics").
    pub adjusted: bool,
    /// Its statistics or value, base units.
    pub value: ResultValue,
}

impl MetricResult {
    /// The export key: the tag, or `adj_<tag>`.
    pub fn tag(&self) -> Cow<'static, str> {
        if self.adjusted {
            Cow::Owned(format!("adj_{}", self.def.tag))
        } else {
            Cow::Borrowed(self.def.tag)
        }
    }

    /// The header: `<header>` or `<header> (error-adjusted)`.
    pub fn header(&self) -> Cow<'static, str> {
        if self.adjusted {
            Cow::Owned(format!("{} (error-adjusted)", self.def.header))
        } else {
            Cow::Borrowed(self.def.header)
        }
    }

    /// The scalar value, or the `avg` of a distribution, in base units.
    pub fn avg(&self) -> f64 {
        match &self.value {
            ResultValue::Dist(s) => s.avg,
            ResultValue::Scalar(v) => *v,
            ResultValue::TimeWeighted(t) => t.avg,
            ResultValue::Share { avg, .. } => *avg,
        }
    }
}

/// One distinct error and how many records had it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorCount {
    /// HTTP status or AIPerf pseudo-code.
    pub code: Option<u16>,
    /// `type` in AIPerf's error shape.
    pub kind: String,
    /// Error message.
    pub message: String,
    /// Records with this error.
    pub count: u64,
}

/// Open-loop dispatch lag (actual − intended send time) over every record, ns.
#[derive(Clone, Debug, PartialEq)]
pub struct LagSummary {
    /// Median lag.
    pub p50_ns: f64,
    /// 99th percentile (linear).
    pub p99_ns: f64,
    /// Worst lag.
    pub max_ns: f64,
    /// Records measured.
    pub count: u64,
}

/// Anchored send-lag p99 (ms) over which a replay is flagged degraded (AIPerf's
/// `REPLAY_SCHED_DEGRADED_THRESHOLD_MS`).
pub const REPLAY_SCHED_DEGRADED_MS: f64 = 500.0;

/// Everything the exporters need about one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Results in insertion order: record metrics (registry order), their `adj_` variants,
    /// aggregate metrics, derived metrics. Includes hidden metrics; exporters filter them.
    pub results: Vec<MetricResult>,
    /// Distinct errors, most frequent first (ties in first-seen order).
    pub error_summary: Vec<ErrorCount>,
    /// ringperf's own dispatch-lag statistics (`None` with no records).
    pub dispatch_lag: Option<LagSummary>,
    /// The client's receive lag per event, user-space minus kernel stamp (`None` with no
    /// kernel-stamped event).
    pub receive_lag: Option<LagSummary>,
    /// The kernel's smoothed RTT of each request's connection as its response completed
    /// (`TCP_INFO`, with `--network-latency-*`; `None` without).
    pub kernel_rtt: Option<LagSummary>,
    /// Verification steps by drafts accepted, pooled over the requests' speculative decoding:
    /// `(j, steps)` for every `j` with steps, by `j` (empty without spec-decode stats).
    pub spec_decode_histogram: Vec<(u32, u64)>,
    /// Records over the model's context left out of every metric (a scenario's agentic
    /// replay: [`Accumulator::skip_context_overflow`]).
    pub skipped_context_overflows: u64,
}

impl Summary {
    /// The result with this export key (`tag` or `adj_<tag>`).
    pub fn get(&self, tag: &str) -> Option<&MetricResult> {
        self.results.iter().find(|r| r.tag() == tag)
    }

    /// The non-adjusted result of a metric.
    pub fn result(&self, id: MetricId) -> Option<&MetricResult> {
        self.results.iter().find(|r| r.def.id == id && !r.adjusted)
    }

    /// The scalar value (or avg) of a metric, base units.
    pub fn value(&self, id: MetricId) -> Option<f64> {
        self.result(id).map(MetricResult::avg)
    }
}

/// Accumulates the records of one phase. The caller keeps one for profiling and a separate one
/// for warmup, and feeds each record to the right one.
#[derive(Clone, Debug)]
pub struct Accumulator {
    cfg: MetricConfig,
    /// Values of each record metric, base units, indexed by [`MetricId`].
    columns: Vec<Vec<f64>>,
    request_count: u64,
    error_request_count: u64,
    /// Error records whose message says the prompt was over the model's context
    /// ([`is_context_overflow`]).
    context_overflows: u64,
    /// Records over the model's context kept out of every metric, only counted.
    skipped_context_overflows: u64,
    min_request_wall_ns: Option<u64>,
    max_response_wall_ns: Option<u64>,
    /// The duration the rates are taken over, when not `max response − min request`
    /// ([`Accumulator::set_active_duration_ns`]).
    active_duration_ns: Option<u64>,
    errors: Vec<ErrorCount>,
    error_index: HashMap<(Option<u16>, String, String), usize>,
    usage_discrepancy_count: Option<u64>,
    osl_mismatch_count: Option<u64>,
    dispatch_lag_ns: Vec<f64>,
    /// Receive lag of every kernel-stamped event, ns.
    receive_lag_ns: Vec<f64>,
    /// The kernel's RTT estimate of each request's connection at its end, ns.
    kernel_rtt_ns: Vec<f64>,
    /// Steps by drafts accepted, pooled over the valid records' speculative decoding.
    spec_histogram: Vec<u64>,
    /// Every record's intervals (valid and error), wall-clock epoch ns, for the sweep lines.
    intervals: Vec<Interval>,
    /// `request_start − credit_issued` per record, ns, clamped at 0.
    credit_to_start_ns: Vec<f64>,
    /// `request_end − credit_issued` per record, ns, clamped at 0.
    effective_latency_ns: Vec<f64>,
    /// Prefix blocks of the valid records of agent-trace turns: already sent, and in all.
    prefix_hits: u64,
    prefix_blocks: u64,
}

/// One record's part of the sweep lines, before the window origin is known.
#[derive(Clone, Debug)]
struct Interval {
    start_wall_ns: u64,
    end_wall_ns: u64,
    gen_start_wall_ns: Option<u64>,
    isl: Option<f64>,
    osl: Option<f64>,
    icl_ns: Vec<f64>,
}

impl Accumulator {
    /// An empty accumulator for a run with this configuration.
    pub fn new(cfg: MetricConfig) -> Self {
        Self {
            cfg,
            columns: vec![Vec::new(); REGISTRY.len()],
            request_count: 0,
            error_request_count: 0,
            context_overflows: 0,
            skipped_context_overflows: 0,
            min_request_wall_ns: None,
            max_response_wall_ns: None,
            active_duration_ns: None,
            errors: Vec::new(),
            error_index: HashMap::new(),
            usage_discrepancy_count: None,
            osl_mismatch_count: None,
            dispatch_lag_ns: Vec::new(),
            receive_lag_ns: Vec::new(),
            kernel_rtt_ns: Vec::new(),
            spec_histogram: Vec::new(),
            intervals: Vec::new(),
            credit_to_start_ns: Vec::new(),
            effective_latency_ns: Vec::new(),
            prefix_hits: 0,
            prefix_blocks: 0,
        }
    }

    /// Records valid so far.
    pub fn request_count(&self) -> u64 {
        self.request_count
    }

    /// Error records so far.
    pub fn error_request_count(&self) -> u64 {
        self.error_request_count
    }

    /// A record over the model's context that a scenario's agentic replay leaves out of every
    /// metric (AIPerf's skip path): only counted, exported as `skipped_context_overflow_count`
    /// and added to `context_overflow_count`.
    pub fn skip_context_overflow(&mut self) {
        self.skipped_context_overflows += 1;
    }

    /// Adds one record and the metrics [`super::record_metrics`] computed for it.
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        self.dispatch_lag_ns
            .push(f.start_ns as f64 - f.intended_ns as f64);
        self.receive_lag_ns
            .extend(f.receive.lag_ns.iter().map(|&l| f64::from(l)));
        self.kernel_rtt_ns
            .extend(f.receive.tcp_rtt_us.map(|us| f64::from(us) * 1e3));
        self.add_interval(f, m);
        for (id, v) in &m.values {
            let col = &mut self.columns[*id as usize];
            match v {
                MetricValue::List(l) => col.extend(l.iter().map(|x| *x as f64)),
                other => col.extend(other.as_f64()),
            }
        }
        if let Some(e) = &f.error {
            self.error_request_count += 1;
            self.context_overflows += u64::from(is_context_overflow(&e.message));
            let key = (e.code, e.kind.clone(), e.message.clone());
            match self.error_index.get(&key) {
                Some(&i) => self.errors[i].count += 1,
                None => {
                    self.error_index.insert(key, self.errors.len());
                    self.errors.push(ErrorCount {
                        code: e.code,
                        kind: e.kind.clone(),
                        message: e.message.clone(),
                        count: 1,
                    });
                }
            }
            return;
        }
        self.request_count += 1;
        if let Some((hits, total)) = f.prefix_blocks
            && total > 0
        {
            self.prefix_hits += u64::from(hits.min(total));
            self.prefix_blocks += u64::from(total);
        }
        if let Some(s) = &f.spec_decode {
            super::spec_decode::pool(&mut self.spec_histogram, s);
        }
        let start = f.request_start_wall_ns;
        self.min_request_wall_ns = Some(self.min_request_wall_ns.map_or(start, |v| v.min(start)));
        // Integer arithmetic: epoch ns do not fit an f64 exactly.
        if let Some(MetricValue::Int(lat)) = m.get(MetricId::RequestLatency) {
            let end = start.saturating_add_signed(*lat);
            self.max_response_wall_ns = Some(self.max_response_wall_ns.map_or(end, |v| v.max(end)));
        }
        let diffs = [
            MetricId::UsagePromptTokensDiffPct,
            MetricId::UsageCompletionTokensDiffPct,
            MetricId::UsageReasoningTokensDiffPct,
        ];
        // Counted when any of the differences is present, as over the threshold when any is.
        let (any, over) = diffs
            .iter()
            .filter_map(|d| m.f64(*d))
            .fold((false, false), |(_, over), p| {
                (true, over || p > self.cfg.usage_pct_diff_threshold)
            });
        if any {
            *self.usage_discrepancy_count.get_or_insert(0) += u64::from(over);
        }
        if m.f64(MetricId::OslMismatchDiffPct).is_some()
            && let (Some(osl), Some(req)) = (
                m.f64(MetricId::OutputSequenceLength),
                m.f64(MetricId::RequestedOsl),
            )
        {
            let limit = (req * self.cfg.osl_mismatch_pct_threshold / 100.0)
                .min(self.cfg.osl_mismatch_max_token_threshold);
            *self.osl_mismatch_count.get_or_insert(0) += u64::from((osl - req).abs() > limit);
        }
    }

    /// Sweep-line inputs and the credit-based latencies: every record, errors included (AIPerf
    /// keeps error records in its column store with their start and end stamps).
    fn add_interval(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        let (start, end) = (f.request_start_wall_ns, f.request_end_wall_ns);
        let issued = f.credit_issued_wall_ns;
        self.credit_to_start_ns
            .push(start.saturating_sub(issued) as f64);
        self.effective_latency_ns
            .push(end.saturating_sub(issued) as f64);
        let gen_start = match m.get(MetricId::TimeToFirstToken) {
            Some(MetricValue::Int(ttft)) => Some(start.saturating_add_signed(*ttft)),
            _ => None,
        };
        let icl_ns = match m.get(MetricId::InterChunkLatency) {
            Some(MetricValue::List(l)) => l.iter().map(|v| *v as f64).collect(),
            _ => Vec::new(),
        };
        self.intervals.push(Interval {
            start_wall_ns: start,
            end_wall_ns: end,
            gen_start_wall_ns: gen_start,
            isl: m.f64(MetricId::InputSequenceLength),
            osl: m.f64(MetricId::OutputSequenceLength),
            icl_ns,
        });
    }

    /// The sweep-line results over `[window_start, last request end]` (AIPerf's phase window:
    /// phase start to the end of its last request), or over the records' own span when the
    /// phase start is not given. Empty with no records.
    fn sweep_results(&self, window_start_wall_ns: Option<u64>) -> Vec<MetricResult> {
        let Some(first) = self.intervals.iter().map(|i| i.start_wall_ns).min() else {
            return Vec::new();
        };
        let origin = window_start_wall_ns.unwrap_or(first);
        let curves = self.sweep_curves(origin);
        let last_end = curves.concurrency.ts.last().copied().unwrap_or(0.0);
        time_weighted_results(&curves, 0.0, last_end)
    }

    /// The sweep-line results of the curves of *every* record, each windowed to one of
    /// `windows` (`[start, end]` epoch ns): AIPerf's timeslice rule, where a request running
    /// across a window's edge counts for the part inside it. One list per window, empty with no
    /// records.
    pub fn sweep_windows(&self, windows: &[(u64, u64)]) -> Vec<Vec<MetricResult>> {
        let Some(origin) = self.intervals.iter().map(|i| i.start_wall_ns).min() else {
            return vec![Vec::new(); windows.len()];
        };
        let curves = self.sweep_curves(origin);
        let rel = |t: u64| (t as i128 - origin as i128) as f64;
        windows
            .iter()
            .map(|&(a, b)| time_weighted_results(&curves, rel(a), rel(b)))
            .collect()
    }

    /// The sweep-line curves of every record, times in ns relative to `origin` (epoch ns).
    fn sweep_curves(&self, origin: u64) -> sweep::Curves {
        let rel = |t: u64| (t as i128 - origin as i128) as f64;
        let records: Vec<sweep::SweepRecord> = self
            .intervals
            .iter()
            .map(|i| sweep::SweepRecord {
                start: rel(i.start_wall_ns),
                end: rel(i.end_wall_ns),
                gen_start: i.gen_start_wall_ns.map(rel),
                isl: i.isl,
                osl: i.osl,
                icl: i.icl_ns.clone(),
            })
            .collect();
        sweep::curves(&records)
    }

    fn total(&self, id: MetricId) -> Option<f64> {
        let col = &self.columns[id as usize];
        (!col.is_empty()).then(|| col.iter().sum())
    }

    /// The realtime block's figures of the records so far ([`super::realtime`]): the counts,
    /// the rates and totals as [`Self::finish`] computes them, and the block's percentiles of
    /// six columns, selected in `scratch`.
    pub fn realtime(&self, scratch: &mut Vec<f64>) -> super::realtime::Figures {
        use super::realtime::{LATENCY_QS, TOKEN_QS, percentiles};
        use MetricId as M;
        let mut pct = |id: MetricId, qs| {
            let def = id.def();
            percentiles(&self.columns[id as usize], qs, scratch)
                .map(|p| p.map(|v| def.to_display(v)))
        };
        let secs = self.duration_ns().filter(|d| *d > 0.0).map(|d| d / 1e9);
        let per_sec = |v: Option<f64>| v.zip(secs).map(|(v, s)| v / s);
        let (isl, osl) = (
            self.total(M::InputSequenceLength),
            self.total(M::OutputSequenceLength),
        );
        super::realtime::Figures {
            done: self.request_count + self.error_request_count,
            ok: self.request_count,
            err: self.error_request_count,
            request_throughput: per_sec(count(self.request_count)),
            input_token_throughput: per_sec(isl),
            output_token_throughput: per_sec(osl),
            ttft_ms: pct(M::TimeToFirstToken, LATENCY_QS),
            itl_ms: pct(M::InterTokenLatency, LATENCY_QS),
            e2e_ms: pct(M::RequestLatency, LATENCY_QS),
            interactivity: pct(M::OutputTokenThroughputPerUser, LATENCY_QS),
            isl: pct(M::InputSequenceLength, TOKEN_QS),
            osl: pct(M::OutputSequenceLength, TOKEN_QS),
            total_isl: isl,
            total_osl: osl,
            theoretical_prefix_cache_hit: (self.prefix_blocks > 0)
                .then(|| 100.0 * self.prefix_hits as f64 / self.prefix_blocks as f64),
            srv: Vec::new(),
        }
    }

    /// Computes every result of the phase, the sweep-line metrics over the records' own span.
    pub fn finish(&self) -> Summary {
        self.finish_from(None)
    }

    /// Computes every result of the phase; the sweep-line metrics' window starts at
    /// `phase_start_wall_ns` (epoch ns) when given.
    pub fn finish_from(&self, phase_start_wall_ns: Option<u64>) -> Summary {
        use MetricId as M;
        let mut results = self.record_results();
        let mut scalar = |id: MetricId, v: Option<f64>| {
            if let Some(v) = v
                && self.cfg.applies(id)
            {
                results.push(MetricResult {
                    def: id.def(),
                    adjusted: false,
                    value: ResultValue::Scalar(v),
                });
            }
        };
        let good = self.count_results(&mut scalar);
        let secs = self.duration_ns().filter(|d| *d > 0.0).map(|d| d / 1e9);
        let totals = Totals {
            secs,
            good,
            isl: self.total(M::InputSequenceLength),
            osl: self.total(M::OutputSequenceLength),
        };
        self.rate_results(&totals, &mut scalar);
        self.usage_results(&mut scalar);
        self.token_results(&totals, &mut scalar);
        for (id, v) in super::spec_decode::derived(
            self.total(M::SpecDecodeSteps),
            self.total(M::SpecDecodeAcceptedDraftTokens),
            self.total(M::SpecDecodeDraftTokens),
        ) {
            scalar(id, Some(v));
        }

        results.extend(self.sweep_results(phase_start_wall_ns));
        for (id, col) in [
            (M::CreditToStartLatency, &self.credit_to_start_ns),
            (M::EffectiveLatency, &self.effective_latency_ns),
        ] {
            if let Some(s) = Stats::compute(col) {
                results.push(MetricResult {
                    def: id.def(),
                    adjusted: false,
                    value: ResultValue::Dist(s),
                });
            }
        }

        results.extend(self.replay_sched_results());
        if self.prefix_blocks > 0 && self.cfg.applies(M::TheoreticalPrefixCacheHit) {
            results.push(MetricResult {
                def: M::TheoreticalPrefixCacheHit.def(),
                adjusted: false,
                value: ResultValue::Share {
                    avg: 100.0 * self.prefix_hits as f64 / self.prefix_blocks as f64,
                    count: self.prefix_blocks,
                    sum: self.prefix_hits,
                },
            });
        }

        let mut error_summary = self.errors.clone();
        error_summary.sort_by_key(|e| std::cmp::Reverse(e.count));
        Summary {
            results,
            error_summary,
            dispatch_lag: lag_summary(self.dispatch_lag_ns.clone()),
            receive_lag: lag_summary(self.receive_lag_ns.clone()),
            kernel_rtt: lag_summary(self.kernel_rtt_ns.clone()),
            spec_decode_histogram: (self.spec_histogram.iter().enumerate())
                .filter(|(_, c)| **c > 0)
                .map(|(j, c)| (j as u32, *c))
                .collect(),
            skipped_context_overflows: self.skipped_context_overflows,
        }
    }

    /// AIPerf's network-adjusted latencies for a round-trip time of `rtt_ns`: each valid
    /// request's TTFT, TTFOT and request latency less the RTT, never below 0, and the RTT as
    /// `network_rtt` (docs/metrics.md, "Network-adjusted latencies"). Empty for an RTT of 0; a
    /// latency no request has (TTFT without streaming) is left out.
    pub fn network_adjusted(&self, rtt_ns: f64) -> Vec<MetricResult> {
        use MetricId as M;
        if !(rtt_ns.is_finite() && rtt_ns > 0.0) {
            return Vec::new();
        }
        let mut out: Vec<MetricResult> = Stats::compute(&[rtt_ns])
            .map(|s| MetricResult {
                def: M::NetworkRtt.def(),
                adjusted: false,
                value: ResultValue::Dist(s),
            })
            .into_iter()
            .collect();
        for (source, id) in [
            (M::RequestLatency, M::NetworkAdjustedRequestLatency),
            (M::TimeToFirstToken, M::NetworkAdjustedTimeToFirstToken),
            (
                M::TimeToFirstOutputToken,
                M::NetworkAdjustedTimeToFirstOutputToken,
            ),
        ] {
            let adjusted: Vec<f64> = self.columns[source as usize]
                .iter()
                .map(|v| (v - rtt_ns).max(0.0))
                .collect();
            if let Some(s) = Stats::compute(&adjusted) {
                out.push(MetricResult {
                    def: id.def(),
                    adjusted: false,
                    value: ResultValue::Dist(s),
                });
            }
        }
        out
    }

    /// `replay_sched_lag_p50/p90/p99` (ms) and `replay_sched_degraded` (AIPerf's
    /// `inject_replay_sched_lag_metrics`, docs/metrics.md): the send offsets of the phase's
    /// valid fixed-schedule requests, anchored at the least late, their linear percentiles;
    /// degraded (1) when p99 exceeds 500 ms. Empty without an offset.
    fn replay_sched_results(&self) -> Vec<MetricResult> {
        use MetricId as M;
        let col = &self.columns[M::ReplaySendScheduleOffset as usize];
        let Some(min) = col.iter().copied().reduce(f64::min) else {
            return Vec::new();
        };
        let mut lag_ms: Vec<f64> = col.iter().map(|o| (o - min) / 1e6).collect();
        lag_ms.sort_by(f64::total_cmp);
        let mut out: Vec<MetricResult> = [
            (M::ReplaySchedLagP50, 50.0),
            (M::ReplaySchedLagP90, 90.0),
            (M::ReplaySchedLagP99, 99.0),
        ]
        .into_iter()
        .map(|(id, q)| (id, super::stats::linear(&lag_ms, q)))
        .chain(std::iter::once((
            M::ReplaySchedDegraded,
            f64::from(u8::from(
                super::stats::linear(&lag_ms, 99.0) > REPLAY_SCHED_DEGRADED_MS,
            )),
        )))
        .map(|(id, v)| MetricResult {
            def: id.def(),
            adjusted: false,
            value: ResultValue::Scalar(v),
        })
        .collect();
        out.retain(|r| self.cfg.applies(r.def.id));
        out
    }

    /// Every per-record metric's distribution, then the error-adjusted ones (`adj_`).
    fn record_results(&self) -> Vec<MetricResult> {
        let mut results = Vec::new();
        let mut adjusted = Vec::new();
        for def in REGISTRY.iter().filter(|d| d.kind == Kind::Record) {
            let col = &self.columns[def.id as usize];
            if let Some(s) = Stats::compute(col) {
                results.push(MetricResult {
                    def,
                    adjusted: false,
                    value: ResultValue::Dist(s),
                });
            }
            // Only beside a base result: a run where every request failed has no `adj_`.
            if def.has(flags::PERCENTILE_INCLUDES_FAILED_REQUESTS)
                && !col.is_empty()
                && self.cfg.applies(def.id)
                && let Some(s) = Stats::adjusted(col, self.error_request_count)
            {
                adjusted.push(MetricResult {
                    def,
                    adjusted: true,
                    value: ResultValue::Dist(s),
                });
            }
        }
        results.append(&mut adjusted);
        results
    }

    /// The latest response end − the earliest request start, ns.
    /// The last response's end, wall-clock epoch ns.
    pub fn max_response_wall_ns(&self) -> Option<u64> {
        self.max_response_wall_ns
    }

    /// Takes `benchmark_duration` and the rates over it (request, token and total token
    /// throughput, goodput) as `ns`: AIPerf's rule for several phases of a kind, the sum of each
    /// phase's start to its last response.
    pub fn set_active_duration_ns(&mut self, ns: u64) {
        self.active_duration_ns = Some(ns);
    }

    fn duration_ns(&self) -> Option<f64> {
        if let Some(ns) = self.active_duration_ns {
            return Some(ns as f64);
        }
        match (self.min_request_wall_ns, self.max_response_wall_ns) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            _ => None,
        }
    }

    /// The counts and the span's stamps; returns the good-request count for the rates.
    fn count_results(&self, scalar: &mut impl FnMut(MetricId, Option<f64>)) -> Option<f64> {
        use MetricId as M;
        scalar(M::RequestCount, count(self.request_count));
        scalar(M::ErrorRequestCount, count(self.error_request_count));
        // Over the error records only: 0 when some failed otherwise, absent when none failed.
        scalar(
            M::ContextOverflowCount,
            (self.error_request_count > 0).then_some(self.context_overflows as f64),
        );
        scalar(
            M::MinRequestTimestamp,
            self.min_request_wall_ns.map(|v| v as f64),
        );
        scalar(
            M::MaxResponseTimestamp,
            self.max_response_wall_ns.map(|v| v as f64),
        );
        scalar(
            M::OslMismatchCount,
            self.osl_mismatch_count.map(|v| v as f64),
        );
        scalar(
            M::UsageDiscrepancyCount,
            self.usage_discrepancy_count.map(|v| v as f64),
        );
        let good = self.total(M::GoodRequestCount);
        scalar(M::GoodRequestCount, good);
        good
    }

    /// The throughputs over the run's span, the goodput and the error rate.
    fn rate_results(&self, t: &Totals, scalar: &mut impl FnMut(MetricId, Option<f64>)) {
        use MetricId as M;
        let completed = self.request_count + self.error_request_count;
        scalar(M::OutputTokenThroughput, t.per_sec(t.osl));
        scalar(M::InputTokenThroughput, t.per_sec(t.isl));
        scalar(M::RequestThroughput, t.per_sec(count(self.request_count)));
        scalar(M::CompletedRequestCount, count(completed));
        scalar(M::Goodput, t.per_sec(t.good));
        // Over every attempted request, errors included; 0 when nothing was attempted.
        scalar(
            M::GoodRequestFraction,
            Some(if completed > 0 {
                t.good.unwrap_or(0.0) / completed as f64
            } else {
                0.0
            }),
        );
        scalar(
            M::RequestErrorRate,
            (completed > 0).then(|| 100.0 * self.error_request_count as f64 / completed as f64),
        );
    }

    /// The servers' usage fields summed over the run, and the prompt-cache read share.
    fn usage_results(&self, scalar: &mut impl FnMut(MetricId, Option<f64>)) {
        use MetricId as M;
        let cache_read = self.total(M::UsagePromptCacheReadTokens);
        let prompt = self.total(M::UsagePromptTokens);
        scalar(M::TotalUsagePromptTokens, prompt);
        scalar(M::TotalUsagePromptCacheReadTokens, cache_read);
        scalar(
            M::OverallUsagePromptCacheReadPct,
            cache_read
                .zip(prompt.filter(|p| *p > 0.0))
                .map(|(r, p)| r / p * 100.0),
        );
        for (total, of) in [
            (
                M::TotalUsagePromptCacheWriteTokens,
                M::UsagePromptCacheWriteTokens,
            ),
            (M::TotalUsagePromptAudioTokens, M::UsagePromptAudioTokens),
            (M::TotalUsageCompletionTokens, M::UsageCompletionTokens),
            (M::TotalUsageReasoningTokens, M::UsageReasoningTokens),
            (
                M::TotalUsageCompletionAudioTokens,
                M::UsageCompletionAudioTokens,
            ),
            (
                M::TotalUsageAcceptedPredictionTokens,
                M::UsageAcceptedPredictionTokens,
            ),
            (
                M::TotalUsageRejectedPredictionTokens,
                M::UsageRejectedPredictionTokens,
            ),
            (M::TotalUsageTotalTokens, M::UsageTotalTokens),
        ] {
            scalar(total, self.total(of));
        }
    }

    /// The benchmark duration, the token totals and the total token throughput.
    fn token_results(&self, t: &Totals, scalar: &mut impl FnMut(MetricId, Option<f64>)) {
        use MetricId as M;
        scalar(M::BenchmarkDuration, self.duration_ns());
        let total_out = self.total(M::OutputTokenCount);
        let total_reasoning = self.total(M::ReasoningTokenCount);
        scalar(
            M::OverallThinkingEfficiency,
            total_reasoning
                .zip(total_out.filter(|o| *o > 0.0))
                .map(|(r, o)| r / o),
        );
        scalar(M::TotalErrorIsl, self.total(M::ErrorIsl));
        scalar(M::TotalIsl, t.isl);
        scalar(M::TotalOsl, t.osl);
        scalar(M::TotalOutputTokens, total_out);
        scalar(M::TotalReasoningTokens, total_reasoning);
        scalar(
            M::TotalTokenThroughput,
            t.per_sec(t.isl.zip(t.osl).map(|(i, o)| i + o)),
        );
    }
}

/// A count as a metric value: none when 0.
fn count(n: u64) -> Option<f64> {
    (n > 0).then_some(n as f64)
}

/// What the rates and totals of [`Accumulator::finish_from`] share.
struct Totals {
    /// The run's span in seconds, when it is positive.
    secs: Option<f64>,
    /// Good requests (`good_request_count`'s total).
    good: Option<f64>,
    /// Total input sequence length.
    isl: Option<f64>,
    /// Total output sequence length.
    osl: Option<f64>,
}

impl Totals {
    /// `v` per second of the run's span.
    fn per_sec(&self, v: Option<f64>) -> Option<f64> {
        v.zip(self.secs).map(|(v, s)| v / s)
    }
}

/// p50, p99 and max of `v` (`None` when empty).
fn lag_summary(mut v: Vec<f64>) -> Option<LagSummary> {
    v.sort_unstable_by(f64::total_cmp);
    let max = *v.last()?;
    Some(LagSummary {
        p50_ns: stats::linear(&v, 50.0),
        p99_ns: stats::linear(&v, 99.0),
        max_ns: max,
        count: v.len() as u64,
    })
}

/// The fourteen sweep-line results of `curves` over `[from, to]` (ns on the curves' axis).
fn time_weighted_results(curves: &sweep::Curves, from: f64, to: f64) -> Vec<MetricResult> {
    sweep::summarize(curves, from, to)
        .into_iter()
        .map(|(id, t)| MetricResult {
            def: id.def(),
            adjusted: false,
            value: ResultValue::TimeWeighted(t),
        })
        .collect()
}

/// What a server says when a prompt is over the model's context, in any case (AIPerf 0.13's
/// allowlist, `AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS`: vLLM, SGLang, OpenAI and Anthropic
/// wordings).
pub const CONTEXT_OVERFLOW_SUBSTRINGS: [&str; 4] = [
    "context length",
    "maximum context",
    "context_length_exceeded",
    "prompt is too long",
];

/// An error's message says the prompt was over the model's context (a case-insensitive match of
/// [`CONTEXT_OVERFLOW_SUBSTRINGS`] in the message, which holds the error body's text).
pub fn is_context_overflow(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    CONTEXT_OVERFLOW_SUBSTRINGS
        .iter()
        .any(|s| lower.contains(s))
}
