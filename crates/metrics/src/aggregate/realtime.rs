//! AIPerf's realtime stats block (`--stats-interval`, docs/dashboard.md "Realtime stats
//! block"): the profiling phase's figures so far, cumulative over every record of the phase,
//! laid out as AIPerf 0.13 lays out the block its records manager logs every interval.
//!
//! The aggregator thread computes the [`Figures`] from its accumulator's columns when a
//! [`Ticker`] is due (never on a worker's core, and never per record): percentiles by selection
//! over a scratch copy of each column, NumPy's linear interpolation as the final figures, so
//! a tick costs a few linear passes over the phase's values and the hot path nothing.

use std::time::{Duration, Instant};

use super::stats::interpolate;

/// Percentiles of the latency and interactivity rows.
pub const LATENCY_QS: [f64; 4] = [50.0, 75.0, 95.0, 99.0];
/// Percentiles of the sequence-length rows.
pub const TOKEN_QS: [f64; 4] = [50.0, 75.0, 90.0, 99.0];
const LATENCY_NAMES: [&str; 4] = ["p50", "p75", "p95", "p99"];
const TOKEN_NAMES: [&str; 4] = ["p50", "p75", "p90", "p99"];
const INDENT: &str = "  ";

/// What the block shows of a phase, in display units (ms for latencies).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Records of the phase, failed ones included.
    pub done: u64,
    /// Valid records.
    pub ok: u64,
    /// Failed records.
    pub err: u64,
    /// `request_throughput` (valid requests per second of the records' span).
    pub request_throughput: Option<f64>,
    /// `input_token_throughput`.
    pub input_token_throughput: Option<f64>,
    /// `output_token_throughput`.
    pub output_token_throughput: Option<f64>,
    /// `time_to_first_token` at [`LATENCY_QS`], ms.
    pub ttft_ms: Option<[f64; 4]>,
    /// `inter_token_latency` at [`LATENCY_QS`], ms.
    pub itl_ms: Option<[f64; 4]>,
    /// `request_latency` at [`LATENCY_QS`], ms.
    pub e2e_ms: Option<[f64; 4]>,
    /// `output_token_throughput_per_user` at [`LATENCY_QS`].
    pub interactivity: Option<[f64; 4]>,
    /// `input_sequence_length` at [`TOKEN_QS`].
    pub isl: Option<[f64; 4]>,
    /// `output_sequence_length` at [`TOKEN_QS`].
    pub osl: Option<[f64; 4]>,
    /// `total_isl`.
    pub total_isl: Option<f64>,
    /// `total_osl`.
    pub total_osl: Option<f64>,
    /// `theoretical_prefix_cache_hit` (%), an agent trace's (the `trace` row).
    pub theoretical_prefix_cache_hit: Option<f64>,
    /// The server's realtime snapshot (the `srv` row), tag and value in
    /// `server_metrics::live::SNAPSHOT_FIELDS` order; empty without server metrics.
    pub srv: Vec<(&'static str, f64)>,
}

/// NumPy's linear percentiles `qs` (ascending) of `values`, each equal to
/// [`super::stats::linear`] over the sorted values; `scratch` is reused between calls. The
/// values are selected, not sorted: each percentile narrows the part still to be ordered.
pub fn percentiles(values: &[f64], qs: [f64; 4], scratch: &mut Vec<f64>) -> Option<[f64; 4]> {
    let last = values.len().checked_sub(1)?;
    scratch.clear();
    scratch.extend_from_slice(values);
    // Invariant: `scratch[..base]` holds the `base` smallest values, none above `scratch[base..]`.
    let mut base = 0;
    let mut out = [0.0; 4];
    for (o, q) in out.iter_mut().zip(qs) {
        let idx = q / 100.0 * last as f64;
        let lo = ((idx.floor() as usize).min(last)).max(base);
        let (_, a, upper) = scratch[base..].select_nth_unstable_by(lo - base, f64::total_cmp);
        let a = *a;
        let b = upper.iter().copied().min_by(f64::total_cmp).unwrap_or(a);
        *o = interpolate(a, b, idx - lo as f64);
        base = lo;
    }
    Some(out)
}

/// `HH:MM:SS`-less elapsed time as AIPerf shows it: `MM:SS` below an hour, else `H:MM:SS`,
/// whole seconds truncated.
fn elapsed(seconds: f64) -> String {
    let total = seconds.max(0.0) as u64;
    if total < 3600 {
        format!("{:02}:{:02}", total / 60, total % 60)
    } else {
        format!(
            "{}:{:02}:{:02}",
            total / 3600,
            total % 3600 / 60,
            total % 60
        )
    }
}

/// `v` rounded half to even (Python's `round`) with thousands separators.
fn grouped(v: f64) -> String {
    let n = v.round_ties_even();
    let digits = format!("{}", n.abs() as u128);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0.0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(v: f64) -> String {
    if v < 1.0 {
        "<1ms".to_owned()
    } else {
        format!("{}ms", grouped(v))
    }
}

/// One percentile row before alignment: label, percentile names, values, suffix.
type Row = (&'static str, [&'static str; 4], [String; 4], &'static str);

/// The block of `f` at `elapsed_s` seconds into the phase; `prev` is the `(done, elapsed_s)` of
/// the phase's previous block (none for its first, whose rate is the average). Empty while no
/// record is done.
pub fn render(f: &Figures, elapsed_s: f64, prev: Option<(u64, f64)>) -> String {
    if f.done == 0 {
        return String::new();
    }
    let avg = f
        .request_throughput
        .map_or("-".to_owned(), |v| format!("{v:.1}"));
    let rate = match prev {
        Some((done, at)) => {
            let dt = elapsed_s - at;
            let r = if dt > 0.0 {
                (f.done as f64 - done as f64) / dt
            } else {
                0.0
            };
            format!("{r:.1}")
        }
        None => avg.clone(),
    };
    let int = |v: Option<f64>| v.map_or("-".to_owned(), grouped);
    let cells = |v: Option<[f64; 4]>, fmt: fn(f64) -> String| {
        v.map_or_else(|| std::array::from_fn(|_| "-".to_owned()), |v| v.map(fmt))
    };
    let mut rows: Vec<Row> = vec![
        ("ttft", LATENCY_NAMES, cells(f.ttft_ms, ms), ""),
        ("itl", LATENCY_NAMES, cells(f.itl_ms, ms), ""),
        ("e2e", LATENCY_NAMES, cells(f.e2e_ms, ms), ""),
        (
            "intvty",
            LATENCY_NAMES,
            cells(f.interactivity, grouped),
            "(1/tpot tok/s)",
        ),
    ];
    for (label, v) in [("isl", f.isl), ("osl", f.osl)] {
        if v.is_some() {
            rows.push((label, TOKEN_NAMES, cells(v, grouped), "(tokens)"));
        }
    }
    let label_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let col_w: [usize; 4] =
        std::array::from_fn(|i| rows.iter().map(|r| r.2[i].len()).max().unwrap_or(0));
    let mut out = format!("[realtime {} profiling]\n", elapsed(elapsed_s));
    out += &format!(
        "{INDENT}rps={rate} (avg {avg})  tput_in={}/s  tput_out={}/s  done={} ok={} err={}",
        int(f.input_token_throughput),
        int(f.output_token_throughput),
        grouped(f.done as f64),
        grouped(f.ok as f64),
        grouped(f.err as f64),
    );
    for (label, names, values, suffix) in &rows {
        let cells: Vec<String> = (0..4)
            .map(|i| format!("{}={:>w$}", names[i], values[i], w = col_w[i]))
            .collect();
        out += &format!("\n{INDENT}{label:<label_w$}  {}", cells.join("  "));
        if !suffix.is_empty() {
            out += &format!("  {suffix}");
        }
    }
    if f.total_isl.is_some() || f.total_osl.is_some() {
        out += &format!(
            "\n{INDENT}{:<label_w$}  in={}  out={}",
            "tot",
            int(f.total_isl),
            int(f.total_osl)
        );
    }
    if let Some(hit) = f.theoretical_prefix_cache_hit {
        out += &format!(
            "\n{INDENT}{:<label_w$} theoretical_prefix_cache_hit={hit:.1}%",
            "trace"
        );
    }
    let srv = srv_parts(&f.srv);
    if !srv.is_empty() {
        out += &format!("\n{INDENT}{:<label_w$} {}", "srv", srv.join(" "));
    }
    out
}

/// The `srv` row's parts, as AIPerf words them, from the server snapshot.
fn srv_parts(snapshot: &[(&str, f64)]) -> Vec<String> {
    let get = |k: &str| snapshot.iter().find(|(t, _)| *t == k).map(|(_, v)| *v);
    let mut parts = Vec::new();
    if let Some(v) = get("prefix_cache_hit_rate") {
        parts.push(format!("prefix_cache_hit={v:.1}%"));
    }
    if let Some(v) = get("unique_input_tokens_srv") {
        parts.push(format!("unique_in_srv={}", grouped(v)));
    }
    if let Some(v) = get("external_prefix_cache_hit_rate") {
        parts.push(format!("ext_cache_hit={v:.1}%"));
    }
    if let Some(v) = get("kv_cache_usage_pct") {
        parts.push(format!("kv_usage={v:.1}%"));
    }
    if let Some(v) = get("cpu_kv_cache_usage_pct") {
        parts.push(format!("cpu_kv_usage={v:.1}%"));
    }
    let (running, waiting) = (get("num_running"), get("num_waiting"));
    if running.is_some() || waiting.is_some() {
        // Python's `int()`: toward zero.
        let n = |v: Option<f64>| v.unwrap_or(0.0).trunc() as i64;
        parts.push(format!("queue={}r/{}w", n(running), n(waiting)));
    }
    if let Some(v) = get("input_token_throughput_srv") {
        parts.push(format!("tput_in_srv={}/s", grouped(v)));
    }
    if let Some(v) = get("output_token_throughput_srv") {
        parts.push(format!("tput_out_srv={}/s", grouped(v)));
    }
    parts
}

/// When the aggregator shows a block: every `every` from its start (AIPerf's records manager
/// sleeps one interval first), and only when the phase's count of records moved since the
/// last one shown.
#[derive(Debug)]
pub struct Ticker {
    every: Duration,
    next: Instant,
    /// Records done at the last tick that showed a block.
    last_done: Option<u64>,
    /// `(phase index, done, elapsed s)` of the last block shown.
    prev: Option<(u8, u64, f64)>,
    scratch: Vec<f64>,
}

impl Ticker {
    /// A ticker whose first tick is `every` after `now`.
    pub fn new(every: Duration, now: Instant) -> Self {
        Self {
            every,
            next: now + every,
            last_done: None,
            prev: None,
            scratch: Vec::new(),
        }
    }

    /// Whether a tick is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// A tick at `now`: the block of profiling phase `phase_index` (its accumulator `acc`,
    /// `elapsed_s` seconds after its start), or `None` when the count has not moved. The next
    /// tick is an interval later (ticks missed meanwhile are skipped).
    pub fn tick(
        &mut self,
        now: Instant,
        acc: &super::Accumulator,
        phase_index: u8,
        elapsed_s: f64,
    ) -> Option<String> {
        self.advance(now, acc)
            .then(|| self.block(acc, phase_index, elapsed_s, &[]))
    }

    /// A tick at `now` without its block: whether the phase's count of records (`acc`) moved
    /// since the last tick that said so (then a block or a snapshot is due). The next tick is
    /// an interval later (ticks missed meanwhile are skipped).
    pub fn advance(&mut self, now: Instant, acc: &super::Accumulator) -> bool {
        while self.next <= now {
            self.next += self.every;
        }
        let done = acc.request_count() + acc.error_request_count();
        if done == 0 || self.last_done == Some(done) {
            return false;
        }
        self.last_done = Some(done);
        true
    }

    /// The block of profiling phase `phase_index` now (after an [`Self::advance`] that said
    /// it moved), with the server snapshot `srv` (its `srv` row; empty: none).
    pub fn block(
        &mut self,
        acc: &super::Accumulator,
        phase_index: u8,
        elapsed_s: f64,
        srv: &[(&'static str, f64)],
    ) -> String {
        let done = acc.request_count() + acc.error_request_count();
        let mut figures = acc.realtime(&mut self.scratch);
        figures.srv = srv.to_vec();
        let prev = self
            .prev
            .filter(|p| p.0 == phase_index)
            .map(|(_, d, e)| (d, e));
        self.prev = Some((phase_index, done, elapsed_s));
        render(&figures, elapsed_s, prev)
    }
}

#[cfg(test)]
#[path = "realtime_tests.rs"]
mod tests;
