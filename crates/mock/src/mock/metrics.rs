//! The mock's `/metrics` page: vLLM's metric names, types, labels and histogram buckets (as in a
//! real vLLM 0.32 capture), fed by the traffic the mock actually serves.
//!
//! Each server thread owns one [`ThreadMetrics`] and is its only writer (relaxed atomics, no
//! cross-core traffic per request); rendering sums the threads.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// KV-cache capacity the mock pretends to have, in tokens. `vllm:kv_cache_usage_perc` is the
/// share of it held by the prompt and planned output of the requests in flight.
pub(crate) const KV_CAPACITY_TOKENS: u64 = 262_144;

/// `(le label, bound in ns)` of `vllm:time_to_first_token_seconds`.
const TTFT_BUCKETS: &[(&str, u64)] = &[
    ("0.001", 1_000_000),
    ("0.005", 5_000_000),
    ("0.01", 10_000_000),
    ("0.02", 20_000_000),
    ("0.04", 40_000_000),
    ("0.06", 60_000_000),
    ("0.08", 80_000_000),
    ("0.1", 100_000_000),
    ("0.25", 250_000_000),
    ("0.5", 500_000_000),
    ("0.75", 750_000_000),
    ("1.0", 1_000_000_000),
    ("2.5", 2_500_000_000),
    ("5.0", 5_000_000_000),
    ("7.5", 7_500_000_000),
    ("10.0", 10_000_000_000),
    ("20.0", 20_000_000_000),
    ("40.0", 40_000_000_000),
    ("80.0", 80_000_000_000),
    ("160.0", 160_000_000_000),
    ("640.0", 640_000_000_000),
    ("2560.0", 2_560_000_000_000),
];

/// Buckets of `vllm:inter_token_latency_seconds` and `vllm:request_time_per_output_token_seconds`.
const ITL_BUCKETS: &[(&str, u64)] = &[
    ("0.01", 10_000_000),
    ("0.025", 25_000_000),
    ("0.05", 50_000_000),
    ("0.075", 75_000_000),
    ("0.1", 100_000_000),
    ("0.15", 150_000_000),
    ("0.2", 200_000_000),
    ("0.3", 300_000_000),
    ("0.4", 400_000_000),
    ("0.5", 500_000_000),
    ("0.75", 750_000_000),
    ("1.0", 1_000_000_000),
    ("2.5", 2_500_000_000),
    ("5.0", 5_000_000_000),
    ("7.5", 7_500_000_000),
    ("10.0", 10_000_000_000),
    ("20.0", 20_000_000_000),
    ("40.0", 40_000_000_000),
    ("80.0", 80_000_000_000),
];

/// Buckets of `vllm:e2e_request_latency_seconds`.
const E2E_BUCKETS: &[(&str, u64)] = &[
    ("0.3", 300_000_000),
    ("0.5", 500_000_000),
    ("0.8", 800_000_000),
    ("1.0", 1_000_000_000),
    ("1.5", 1_500_000_000),
    ("2.0", 2_000_000_000),
    ("2.5", 2_500_000_000),
    ("5.0", 5_000_000_000),
    ("10.0", 10_000_000_000),
    ("15.0", 15_000_000_000),
    ("20.0", 20_000_000_000),
    ("30.0", 30_000_000_000),
    ("40.0", 40_000_000_000),
    ("50.0", 50_000_000_000),
    ("60.0", 60_000_000_000),
    ("120.0", 120_000_000_000),
    ("240.0", 240_000_000_000),
    ("480.0", 480_000_000_000),
    ("960.0", 960_000_000_000),
    ("1920.0", 1_920_000_000_000),
    ("7680.0", 7_680_000_000_000),
];

/// A histogram with fixed bounds: per-bucket (non-cumulative) counts, the last for `+Inf`.
struct Histogram {
    bounds: &'static [(&'static str, u64)],
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [(&'static str, u64)]) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    fn observe_ns(&self, ns: u64) {
        let i = self
            .bounds
            .iter()
            .position(|&(_, b)| ns <= b)
            .unwrap_or(self.bounds.len());
        if let Some(b) = self.buckets.get(i) {
            b.fetch_add(1, Relaxed);
        }
        self.sum_ns.fetch_add(ns, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }
}

/// One server thread's counters, gauges and histograms.
pub(crate) struct ThreadMetrics {
    running: AtomicU64,
    kv_tokens: AtomicU64,
    prompt_tokens: AtomicU64,
    generation_tokens: AtomicU64,
    success_stop: AtomicU64,
    success_length: AtomicU64,
    ttft: Histogram,
    itl: Histogram,
    tpot: Histogram,
    e2e: Histogram,
    /// Metrics pages served by this thread (for the per-page behaviour of some modes).
    pub(crate) pages: AtomicU64,
}

/// What one finished completion request contributes.
pub(crate) struct Finished<'a> {
    pub(crate) prompt_tokens: u64,
    pub(crate) generated_tokens: u64,
    /// `true` when the output was cut by the request's max tokens (`finished_reason="length"`).
    pub(crate) capped: bool,
    pub(crate) arrival_ns: u64,
    /// Stamps of the token-carrying writes.
    pub(crate) event_ns: &'a [u64],
    pub(crate) end_ns: u64,
}

impl ThreadMetrics {
    pub(crate) fn new() -> Self {
        Self {
            running: AtomicU64::new(0),
            kv_tokens: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            generation_tokens: AtomicU64::new(0),
            success_stop: AtomicU64::new(0),
            success_length: AtomicU64::new(0),
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            tpot: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(E2E_BUCKETS),
            pages: AtomicU64::new(0),
        }
    }

    /// Requests running on this thread now.
    pub(crate) fn running(&self) -> u64 {
        self.running.load(Relaxed)
    }

    /// A request starts: it is running and holds `kv_tokens` of the pretend KV cache.
    pub(crate) fn admit(&self, kv_tokens: u64) {
        self.running.fetch_add(1, Relaxed);
        self.kv_tokens.fetch_add(kv_tokens, Relaxed);
    }

    /// A request admitted with `kv_tokens` leaves (finished or abandoned).
    pub(crate) fn release(&self, kv_tokens: u64) {
        self.running.fetch_sub(1, Relaxed);
        self.kv_tokens.fetch_sub(kv_tokens, Relaxed);
    }

    /// A request was fully served.
    pub(crate) fn finish(&self, f: &Finished<'_>) {
        self.prompt_tokens.fetch_add(f.prompt_tokens, Relaxed);
        self.generation_tokens
            .fetch_add(f.generated_tokens, Relaxed);
        if f.capped {
            &self.success_length
        } else {
            &self.success_stop
        }
        .fetch_add(1, Relaxed);
        if let Some(&first) = f.event_ns.first() {
            self.ttft.observe_ns(first.saturating_sub(f.arrival_ns));
        }
        for w in f.event_ns.windows(2) {
            if let [a, b] = w {
                self.itl.observe_ns(b.saturating_sub(*a));
            }
        }
        if let (Some(&first), Some(&last)) = (f.event_ns.first(), f.event_ns.last())
            && f.generated_tokens > 1
        {
            self.tpot
                .observe_ns(last.saturating_sub(first) / (f.generated_tokens - 1));
        }
        self.e2e.observe_ns(f.end_ns.saturating_sub(f.arrival_ns));
    }
}

fn sum(threads: &[ThreadMetrics], f: impl Fn(&ThreadMetrics) -> &AtomicU64) -> u64 {
    threads
        .iter()
        .map(|t| f(t).load(Relaxed))
        .fold(0u64, u64::wrapping_add)
}

/// Escapes a Prometheus label value.
pub(crate) fn escape_label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(
    out: &mut String,
    threads: &[ThreadMetrics],
    model: &str,
    name: &str,
    help: &str,
    pick: fn(&ThreadMetrics) -> &Histogram,
) {
    family(out, name, "histogram", help);
    let Some(first) = threads.first() else { return };
    let bounds = pick(first).bounds;
    let mut cumulative = 0u64;
    for i in 0..=bounds.len() {
        cumulative += threads
            .iter()
            .map(|t| pick(t).buckets.get(i).map_or(0, |b| b.load(Relaxed)))
            .sum::<u64>();
        let le = bounds.get(i).map_or("+Inf", |&(le, _)| le);
        let _ = writeln!(
            out,
            "{name}_bucket{{engine=\"0\",le=\"{le}\",model_name=\"{model}\"}} {:?}",
            cumulative as f64
        );
    }
    let count = sum(threads, |t| &pick(t).count);
    let sum_s = sum(threads, |t| &pick(t).sum_ns) as f64 / 1e9;
    let _ = writeln!(
        out,
        "{name}_count{{engine=\"0\",model_name=\"{model}\"}} {:?}",
        count as f64
    );
    let _ = writeln!(
        out,
        "{name}_sum{{engine=\"0\",model_name=\"{model}\"}} {sum_s:?}"
    );
}

/// Renders the page (Prometheus text format 0.0.4). `model` is already label-escaped.
pub(crate) fn render(threads: &[ThreadMetrics], model: &str) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let simple = |out: &mut String, name: &str, kind: &str, help: &str, v: f64| {
        family(out, name, kind, help);
        let _ = writeln!(out, "{name}{{engine=\"0\",model_name=\"{model}\"}} {v:?}");
    };
    let running = sum(threads, |t| &t.running);
    simple(
        &mut out,
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        running as f64,
    );
    simple(
        &mut out,
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        0.0,
    );
    let kv = sum(threads, |t| &t.kv_tokens) as f64 / KV_CAPACITY_TOKENS as f64;
    simple(
        &mut out,
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        kv.min(1.0),
    );
    simple(
        &mut out,
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        sum(threads, |t| &t.prompt_tokens) as f64,
    );
    simple(
        &mut out,
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        sum(threads, |t| &t.generation_tokens) as f64,
    );
    family(
        &mut out,
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
    );
    for (reason, v) in [
        ("stop", sum(threads, |t| &t.success_stop)),
        ("length", sum(threads, |t| &t.success_length)),
        ("abort", 0),
        ("error", 0),
    ] {
        let _ = writeln!(
            out,
            "vllm:request_success_total{{engine=\"0\",finished_reason=\"{reason}\",\
             model_name=\"{model}\"}} {:?}",
            v as f64
        );
    }
    histogram(
        &mut out,
        threads,
        model,
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        |t| &t.ttft,
    );
    histogram(
        &mut out,
        threads,
        model,
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        |t| &t.itl,
    );
    histogram(
        &mut out,
        threads,
        model,
        "vllm:request_time_per_output_token_seconds",
        "Histogram of time_per_output_token_seconds per request.",
        |t| &t.tpot,
    );
    histogram(
        &mut out,
        threads,
        model,
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.",
        |t| &t.e2e,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the one sample line that starts with `prefix`.
    fn sample(text: &str, prefix: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn buckets_match_the_real_vllm_capture() {
        // The real vLLM capture, kept in the repository's test data.
        let fixture = include_str!("../../../../tests/data/vllm-cpu-metrics-after-load.txt");
        for (name, bounds) in [
            ("vllm:time_to_first_token_seconds_bucket", TTFT_BUCKETS),
            ("vllm:inter_token_latency_seconds_bucket", ITL_BUCKETS),
            (
                "vllm:request_time_per_output_token_seconds_bucket",
                ITL_BUCKETS,
            ),
            ("vllm:e2e_request_latency_seconds_bucket", E2E_BUCKETS),
        ] {
            let les: Vec<&str> = fixture
                .lines()
                .filter(|l| l.starts_with(name))
                .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
                .collect();
            let ours: Vec<&str> = bounds
                .iter()
                .map(|&(le, _)| le)
                .chain(std::iter::once("+Inf"))
                .collect();
            assert_eq!(les, ours, "{name}");
            for &(le, ns) in bounds {
                assert_eq!(
                    (le.parse::<f64>().unwrap() * 1e9).round() as u64,
                    ns,
                    "{le}"
                );
            }
        }
    }

    #[test]
    fn render_sums_threads_and_accumulates_buckets() {
        let threads = [ThreadMetrics::new(), ThreadMetrics::new()];
        threads[0].admit(100);
        threads[1].admit(50);
        threads[1].release(50);
        // 3 events at +20 ms, +30 ms, +45 ms after arrival; end at +50 ms.
        let ev = [20_000_000, 30_000_000, 45_000_000];
        threads[0].finish(&Finished {
            prompt_tokens: 7,
            generated_tokens: 3,
            capped: true,
            arrival_ns: 0,
            event_ns: &ev,
            end_ns: 50_000_000,
        });
        threads[1].finish(&Finished {
            prompt_tokens: 2,
            generated_tokens: 1,
            capped: false,
            arrival_ns: 0,
            event_ns: &ev[..1],
            end_ns: 400_000_000,
        });
        let t = render(&threads, "m");
        let p = |s: &str| sample(&t, s);
        assert_eq!(p("vllm:num_requests_running{"), 1.0);
        assert_eq!(
            p("vllm:kv_cache_usage_perc{"),
            100.0 / KV_CAPACITY_TOKENS as f64
        );
        assert_eq!(p("vllm:prompt_tokens_total{"), 9.0);
        assert_eq!(p("vllm:generation_tokens_total{"), 4.0);
        assert_eq!(
            p("vllm:request_success_total{engine=\"0\",finished_reason=\"stop\""),
            1.0
        );
        assert_eq!(
            p("vllm:request_success_total{engine=\"0\",finished_reason=\"length\""),
            1.0
        );
        // Both TTFTs are 20 ms: in le=0.02, not in le=0.01.
        assert_eq!(
            p("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.01\","),
            0.0
        );
        assert_eq!(
            p("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.02\","),
            2.0
        );
        assert_eq!(p("vllm:time_to_first_token_seconds_count{"), 2.0);
        // ITL 10 ms and 15 ms: le=0.01 holds one, le=0.025 both; sum 0.025 s.
        assert_eq!(
            p("vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.01\","),
            1.0
        );
        assert_eq!(
            p("vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.025\","),
            2.0
        );
        assert_eq!(
            p("vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\","),
            2.0
        );
        assert!((p("vllm:inter_token_latency_seconds_sum{") - 0.025).abs() < 1e-12);
        // TPOT (45-20)/2 = 12.5 ms, only for the 3-token request.
        assert_eq!(p("vllm:request_time_per_output_token_seconds_count{"), 1.0);
        // E2E 50 ms and 400 ms: le=0.3 holds one, le=0.5 both.
        assert_eq!(
            p("vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.3\","),
            1.0
        );
        assert_eq!(
            p("vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.5\","),
            2.0
        );
        assert!(t.contains("# TYPE vllm:e2e_request_latency_seconds histogram\n"));
        assert!(t.contains("# HELP vllm:num_requests_waiting "));
        assert!(t.contains("model_name=\"m\"} "));
    }

    #[test]
    fn label_escaping() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
