//! The client-health verdict: did the client keep up with the load it was asked to generate?
//!
//! A run's latencies are the server's only while the client is not the bottleneck. Four signs
//! say it was:
//!
//! - **dispatch lag** (actual minus intended send time) p99 over the limit: requests went out
//!   late, so an open-loop schedule was not the one asked for;
//! - **receive lag** (user-space read stamp minus the kernel's receive stamp) p99 over the same
//!   limit, when the run measured it: responses waited for a worker to wake up;
//! - a **busy worker**: its thread CPU time over its lifetime at or above the limit, so it had no
//!   slack left;
//! - **ring stalls**: a worker waited for the aggregator to drain its record ring.
//!
//! A lag can be the host's doing rather than the client's: the workers were ready but another
//! thread held their CPU — the embedded mock (`--mock`, in the client's process, on its cores),
//! a server on the same host, a build, a noisy neighbour's steal. A lag over its limit is the
//! client's own only when the workers' time waiting for a CPU cannot account for it: when that
//! wait (summed over the workers, [`Observed::run_queue_wait_ns`]) is at least the figure's
//! maximum, the figure is reported apart — `SHARED CORES` with the embedded mock, `HOST BUSY`
//! otherwise, naming what else ran ([`HostLoad`]) — and fails nothing; the other signs, which the
//! client controls, are judged as always (docs/output-formats.md, "Client health").
//!
//! [`judge`] is pure: figures and limits in, verdict out. Without `--max-client-lag-us` the
//! limits are the defaults below and the verdict is only reported; with it, a failed verdict is
//! the run's exit code 5 ([`ClientHealth::fails_run`]).

use super::LagSummary;

/// Default dispatch- (and receive-) lag p99 limit: 1 ms.
pub const DEFAULT_LAG_P99_NS: u64 = 1_000_000;
/// Default busy-fraction limit: a worker busy 95 % of its lifetime or more had no slack.
pub const DEFAULT_BUSY_FRACTION: f64 = 0.95;

/// What the figures are judged against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// The dispatch-lag p99 (and the receive-lag p99, when measured) may be at most this.
    pub lag_p99_ns: u64,
    /// Every worker's busy fraction must stay below this.
    pub busy_fraction: f64,
    /// Ring stalls allowed.
    pub ring_stalls: u64,
    /// The lag limit came from `--max-client-lag-us`: a failed verdict fails the run.
    pub enforced: bool,
}

impl Limits {
    /// The limits of a run: `max_client_lag_ns` from `--max-client-lag-us` (enforced), else the
    /// defaults (reported only).
    pub fn new(max_client_lag_ns: Option<u64>) -> Self {
        Self {
            lag_p99_ns: max_client_lag_ns.unwrap_or(DEFAULT_LAG_P99_NS),
            busy_fraction: DEFAULT_BUSY_FRACTION,
            ring_stalls: 0,
            enforced: max_client_lag_ns.is_some(),
        }
    }
}

/// The figures the verdict is drawn from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// Dispatch-lag statistics of the profiling phase (`None`: no record).
    pub dispatch_lag: Option<LagSummary>,
    /// Receive-lag statistics, when the run measured them.
    pub receive_lag: Option<LagSummary>,
    /// The busiest worker: its name and busy fraction (`None`: no worker figure).
    pub busiest_worker: Option<(String, f64)>,
    /// Times a worker found its record ring full.
    pub ring_stalls: u64,
    /// Connects that found the process out of file descriptors and waited for one, with the
    /// process's descriptor limit (`None`: none did).
    pub descriptor_waits: Option<DescriptorWaits>,
    /// Requests that found their worker at its connection limit and waited for a connection
    /// (`None`: none did).
    pub connection_waits: Option<ConnectionWaits>,
    /// The embedded mock served the run, in this process and on these cores.
    pub shares_cores_with_mock: bool,
    /// Time the workers were runnable but waited for a CPU another thread held, summed over
    /// them, ns (`None`: the kernel does not say).
    pub run_queue_wait_ns: Option<u64>,
    /// What else used the host's CPUs while the client ran (`None`: not measured).
    pub host: Option<HostLoad>,
}

/// What ran on the host beside the client, from the start of its workers to their end
/// (`/proc/stat` and `/proc/<pid>/stat` read at both ends).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostLoad {
    /// CPU time every other process used, on any core, ns.
    pub other_cpu_ns: u64,
    /// CPU time the workers' cores spent on anything but this process, ns: a lower bound of
    /// what other processes took from the workers there (`None`: no worker was pinned).
    pub other_cpu_on_worker_cores_ns: Option<u64>,
    /// Time the hypervisor ran something else while the workers' cores (all cores when no
    /// worker was pinned) wanted to run, ns.
    pub steal_ns: u64,
    /// Wall time between the two readings, ns.
    pub span_ns: u64,
    /// The cores the figures above are over: the workers' (all, when none was pinned).
    pub cores: u32,
    /// The other processes that used the most CPU time, most first (at most three).
    pub busiest: Vec<OtherProcess>,
}

/// Another process and the CPU time it used while the client ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherProcess {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`/proc/<pid>/comm`).
    pub name: String,
    /// CPU time it used while the client ran, ns.
    pub cpu_ns: u64,
}

/// The least share of the workers' cores other processes (and the hypervisor) must have taken
/// over the run for a lag to be the host's: below it, the run had the cores nearly to itself.
pub const HOST_BUSY_SHARE: f64 = 0.05;

impl HostLoad {
    /// CPU time other processes and the hypervisor took from the workers' cores (all cores when
    /// none was pinned), ns.
    pub fn taken_ns(&self) -> u64 {
        self.other_cpu_on_worker_cores_ns
            .unwrap_or(self.other_cpu_ns)
            .saturating_add(self.steal_ns)
    }

    /// [`HostLoad::taken_ns`] as a share of those cores' time over the run (0 when unknown).
    pub fn taken_share(&self) -> f64 {
        let capacity = self.span_ns as f64 * f64::from(self.cores);
        if capacity > 0.0 {
            self.taken_ns() as f64 / capacity
        } else {
            0.0
        }
    }

    /// `other processes used 2.1 CPU-s on the workers' cores (4 CPU-s on the host; most: sh
    /// [pid 812] 1.3 s, …); the hypervisor stole 12 ms`.
    fn words(&self) -> String {
        let most = (!self.busiest.is_empty()).then(|| {
            let each: Vec<String> = self
                .busiest
                .iter()
                .map(|p| format!("{} [pid {}] {}", p.name, p.pid, secs(p.cpu_ns)))
                .collect();
            format!("most: {}", each.join(", "))
        });
        let host = cpu_s(self.other_cpu_ns);
        let (head, inner) = match self.other_cpu_on_worker_cores_ns {
            Some(on) => (
                format!("other processes used {} on the workers' cores", cpu_s(on)),
                Some(format!("{host} on the host")),
            ),
            None => (format!("other processes used {host} on the host"), None),
        };
        let inner: Vec<String> = inner.into_iter().chain(most).collect();
        let mut s = if inner.is_empty() {
            head
        } else {
            format!("{head} ({})", inner.join("; "))
        };
        if self.steal_ns > 0 {
            s.push_str(&format!(
                "; the hypervisor stole {}",
                ms(self.steal_ns as f64)
            ));
        }
        s
    }
}

/// Requests waited for a connection at the per-worker limit (`AIPERF_HTTP_CONNECTION_LIMIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionWaits {
    /// Requests that waited.
    pub waits: u64,
    /// The limit, per worker.
    pub limit: u64,
}

/// The client ran out of file descriptors: how often a connect had to wait, and the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescriptorWaits {
    /// Connects that found no free descriptor and waited.
    pub waits: u64,
    /// The soft `RLIMIT_NOFILE` of the process (`None`: unknown).
    pub limit: Option<u64>,
}

/// The verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientHealth {
    /// Every figure was within its limit.
    pub kept_up: bool,
    /// One sentence per figure over its limit (empty when the client kept up).
    pub reasons: Vec<String>,
    /// With the embedded mock: one sentence per lag figure over its limit that the workers'
    /// wait for a CPU accounts for (the shared cores' lag, not the client's; fails nothing).
    pub shared_cores: Vec<String>,
    /// What the figures were judged against.
    pub limits: Limits,
    /// The figures judged.
    pub observed: Observed,
}

impl ClientHealth {
    /// The verdict sets the run's exit code: `--max-client-lag-us` was given and the client
    /// fell behind.
    pub fn fails_run(&self) -> bool {
        self.limits.enforced && !self.kept_up
    }

    /// The verdict in one word, as the console line opens: `kept_up`, `fell_behind`,
    /// `shared_cores` (the embedded mock's CPU use accounts for a lag) or `host_busy` (another
    /// process's does).
    pub fn label(&self) -> &'static str {
        match (self.kept_up, self.shared_cores.is_empty()) {
            (false, _) => "fell_behind",
            (true, true) => "kept_up",
            (true, false) if self.observed.shares_cores_with_mock => "shared_cores",
            (true, false) => "host_busy",
        }
    }

    /// The console line: `Client health: kept up (…)` with every figure and its limit, or
    /// `Client health: FELL BEHIND — …` with the reasons.
    pub fn line(&self) -> String {
        let shared = self.shared_note();
        if !self.kept_up {
            let exit = if self.limits.enforced {
                " (--max-client-lag-us: exit code 5)"
            } else {
                ""
            };
            let also = shared
                .map(|s| format!("; besides, {s}"))
                .unwrap_or_default();
            return format!(
                "Client health: FELL BEHIND — {}{exit}{also}",
                self.reasons.join("; ")
            );
        }
        if let Some(s) = shared {
            let (label, fix) = if self.observed.shares_cores_with_mock {
                ("SHARED CORES", "")
            } else {
                (
                    "HOST BUSY",
                    "; to measure the server alone, give the client cores nothing else runs on \
                     (taskset, cpusets) or run on a quiet host",
                )
            };
            return format!(
                "Client health: {label} — {s}; what the client controls kept up ({}){fix}",
                self.controlled_parts().join(", ")
            );
        }
        let o = &self.observed;
        let limit = ms(self.limits.lag_p99_ns as f64);
        let mut parts = Vec::new();
        if let Some(l) = &o.dispatch_lag {
            parts.push(format!("dispatch lag p99 {} ≤ {limit}", ms(l.p99_ns)));
        }
        if let Some(l) = &o.receive_lag {
            parts.push(format!("receive lag p99 {} ≤ {limit}", ms(l.p99_ns)));
        }
        parts.extend(self.controlled_parts());
        format!("Client health: kept up ({})", parts.join(", "))
    }

    /// The figures the client controls whatever shares its cores: its busiest worker and its
    /// ring stalls.
    fn controlled_parts(&self) -> Vec<String> {
        let o = &self.observed;
        let mut parts = Vec::new();
        if let Some((_, busy)) = &o.busiest_worker {
            parts.push(format!("busiest worker {} busy", percent(*busy)));
        }
        parts.push(match o.ring_stalls {
            1 => "1 ring stall".to_string(),
            n => format!("{n} ring stalls"),
        });
        parts
    }

    /// The lag the host accounts for, said once, with what held the CPUs: `None` when there
    /// is none.
    fn shared_note(&self) -> Option<String> {
        if self.shared_cores.is_empty() {
            return None;
        }
        let o = &self.observed;
        let wait = o.run_queue_wait_ns.unwrap_or(0) as f64;
        let who = if o.shares_cores_with_mock {
            "the embedded mock shares their cores".to_owned()
        } else {
            match &o.host {
                Some(h) => h.words(),
                None => "another process held them".to_owned(),
            }
        };
        Some(format!(
            "{}, within the {} the workers waited for a CPU held by another thread; {who}: \
             this lag is not the client's own",
            self.shared_cores.join("; "),
            ms(wait)
        ))
    }
}

/// Judges `observed` against `limits`.
pub fn judge(observed: Observed, limits: Limits) -> ClientHealth {
    let mut reasons = Vec::new();
    let mut shared_cores = Vec::new();
    let lag_limit = limits.lag_p99_ns as f64;
    // The workers' wait for a CPU can account for a lag up to its length when someone else held
    // the CPU: the embedded mock's threads, or other processes and the hypervisor — which must
    // have taken a real share of the workers' cores over the run ([`HOST_BUSY_SHARE`]) and at
    // least that much CPU time there (on the host, when no worker was pinned). A wait for the
    // client's own other threads (the aggregator, a trace's producer) is the client's.
    let others = if observed.shares_cores_with_mock {
        Some(f64::INFINITY)
    } else {
        observed.host.as_ref().map(|h| {
            if h.taken_share() >= HOST_BUSY_SHARE {
                h.taken_ns() as f64
            } else {
                0.0
            }
        })
    };
    let cpu_wait = observed
        .run_queue_wait_ns
        .zip(others)
        .map(|(ns, others)| (ns as f64).min(others));
    for (what, lag) in [
        ("dispatch", &observed.dispatch_lag),
        ("receive", &observed.receive_lag),
    ] {
        if let Some(l) = lag
            && l.p99_ns > lag_limit
        {
            let why = format!(
                "{what} lag p99 {} > {} (max {})",
                ms(l.p99_ns),
                ms(lag_limit),
                ms(l.max_ns)
            );
            if cpu_wait.is_some_and(|w| w >= l.max_ns) {
                shared_cores.push(why);
            } else {
                reasons.push(why);
            }
        }
    }
    if let Some((name, busy)) = &observed.busiest_worker
        && *busy >= limits.busy_fraction
    {
        reasons.push(format!(
            "{name} {} busy ≥ {}",
            percent(*busy),
            percent(limits.busy_fraction)
        ));
    }
    if let Some(d) = observed.descriptor_waits {
        let limit = d
            .limit
            .map_or_else(|| "its limit".to_owned(), |l| format!("its limit of {l}"));
        reasons.push(format!(
            "the client ran out of file descriptors ({limit}): {} connects waited for one; raise the hard limit (`ulimit -Hn`, LimitNOFILE) or lower the rate or concurrency",
            d.waits
        ));
    }
    if let Some(c) = observed.connection_waits {
        reasons.push(format!(
            "{} requests waited for a connection at the limit of {} per worker (AIPERF_HTTP_CONNECTION_LIMIT): their latency includes the wait; raise the limit or lower the rate or concurrency",
            c.waits, c.limit
        ));
    }
    if observed.ring_stalls > limits.ring_stalls {
        reasons.push(format!(
            "{} ring stall{} > {} (workers waited for the aggregator)",
            observed.ring_stalls,
            if observed.ring_stalls == 1 { "" } else { "s" },
            limits.ring_stalls
        ));
    }
    ClientHealth {
        kept_up: reasons.is_empty(),
        reasons,
        shared_cores,
        limits,
        observed,
    }
}

/// One shard's own verdict, as its summary JSON says it (`ringperf.client_health`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardVerdict {
    /// The shard's client kept up.
    pub kept_up: bool,
    /// The shard ran with `--max-client-lag-us` (a failed verdict was its exit code 5).
    pub enforced: bool,
    /// Its reasons, one per figure over its limit.
    pub reasons: Vec<String>,
}

/// A merged run's verdict, drawn from its shards' own (docs/scale-out.md, "Client health of a
/// merged run"): it kept up only when every shard of the run has a verdict and each kept up;
/// one shard that fell behind makes it fall behind, naming the shard and its reasons; with no
/// shard behind but one without a verdict (missing, or no summary), it is not judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedHealth {
    /// Every shard by index, with its verdict (`None`: it has none).
    pub shards: Vec<(u32, Option<ShardVerdict>)>,
}

impl MergedHealth {
    /// `Some(true)`: every shard kept up; `Some(false)`: one or more fell behind; `None`: none
    /// fell behind but one or more has no verdict.
    pub fn kept_up(&self) -> Option<bool> {
        let verdicts: Vec<Option<bool>> = self
            .shards
            .iter()
            .map(|(_, v)| v.as_ref().map(|v| v.kept_up))
            .collect();
        if verdicts.contains(&Some(false)) {
            Some(false)
        } else if verdicts.is_empty() || verdicts.contains(&None) {
            None
        } else {
            Some(true)
        }
    }

    /// A shard ran with `--max-client-lag-us`.
    pub fn enforced(&self) -> bool {
        self.shards
            .iter()
            .any(|(_, v)| v.as_ref().is_some_and(|v| v.enforced))
    }

    /// A shard that fell behind ran with `--max-client-lag-us`: the merge exits 5, as it did.
    pub fn fails_run(&self) -> bool {
        self.behind().any(|(_, v)| v.enforced)
    }

    /// The verdict's reasons: `shard <i>: <reason>` for every reason of every shard behind.
    pub fn reasons(&self) -> Vec<String> {
        self.behind()
            .flat_map(|(i, v)| v.reasons.iter().map(move |r| format!("shard {i}: {r}")))
            .collect()
    }

    /// The shards that have no verdict.
    pub fn unjudged(&self) -> Vec<u32> {
        self.shards
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(i, _)| *i)
            .collect()
    }

    fn behind(&self) -> impl Iterator<Item = (u32, &ShardVerdict)> {
        self.shards
            .iter()
            .filter_map(|(i, v)| v.as_ref().filter(|v| !v.kept_up).map(|v| (*i, v)))
    }

    /// The console line: `Client health: kept up on all N shards`, `Client health: FELL BEHIND —
    /// shard 1: …` or `Client health: not judged — …`.
    pub fn line(&self) -> String {
        let list = |ids: &[u32]| {
            ids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unjudged = self.unjudged();
        let without = format!("no verdict from shard(s) {}", list(&unjudged));
        match self.kept_up() {
            Some(true) => format!("Client health: kept up on all {} shards", self.shards.len()),
            Some(false) => {
                let exit = if self.fails_run() {
                    " (--max-client-lag-us: exit code 5)"
                } else {
                    ""
                };
                let mut line = format!(
                    "Client health: FELL BEHIND — {}{exit}",
                    self.reasons().join("; ")
                );
                if !unjudged.is_empty() {
                    line.push_str(&format!("; {without}"));
                }
                line
            }
            None => format!("Client health: not judged — {without}; every other shard kept up"),
        }
    }
}

/// `ns` in milliseconds, at most three decimals, trailing zeros dropped: `0.42 ms`, `1 ms`.
fn ms(ns: f64) -> String {
    let s = format!("{:.3}", ns / 1e6);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} ms")
}

/// CPU time in CPU-seconds, two decimals: `2.13 CPU-s`.
fn cpu_s(ns: u64) -> String {
    format!("{:.2} CPU-s", ns as f64 / 1e9)
}

/// A duration in seconds, two decimals: `1.30 s`.
fn secs(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

/// A fraction as a whole percentage: `31%`.
fn percent(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lag(p99_ms: f64) -> LagSummary {
        LagSummary {
            p50_ns: p99_ms * 0.5e6,
            p99_ns: p99_ms * 1e6,
            max_ns: p99_ms * 2e6,
            count: 100,
        }
    }

    fn healthy() -> Observed {
        Observed {
            dispatch_lag: Some(lag(0.42)),
            receive_lag: None,
            busiest_worker: Some(("worker_1".into(), 0.31)),
            ring_stalls: 0,
            descriptor_waits: None,
            connection_waits: None,
            shares_cores_with_mock: false,
            run_queue_wait_ns: Some(0),
            host: None,
        }
    }

    #[test]
    fn waiting_at_the_connection_limit_fails_the_verdict_naming_the_limit() {
        let h = judge(
            Observed {
                connection_waits: Some(ConnectionWaits {
                    waits: 42,
                    limit: 4,
                }),
                ..healthy()
            },
            Limits::new(None),
        );
        assert!(!h.kept_up);
        assert_eq!(h.reasons.len(), 1, "{:?}", h.reasons);
        assert!(
            h.reasons[0].starts_with("42 requests waited for a connection at the limit of 4"),
            "{:?}",
            h.reasons
        );
    }

    #[test]
    fn running_out_of_descriptors_fails_the_verdict_with_one_reason_naming_the_limit() {
        let h = judge(
            Observed {
                descriptor_waits: Some(DescriptorWaits {
                    waits: 56_599,
                    limit: Some(20_000),
                }),
                ..healthy()
            },
            Limits::new(Some(1_000_000)),
        );
        assert!(!h.kept_up && h.fails_run());
        assert_eq!(h.reasons.len(), 1, "{:?}", h.reasons);
        assert!(h.reasons[0].contains("limit of 20000"), "{:?}", h.reasons);
        assert!(
            h.reasons[0].contains("56599 connects waited"),
            "{:?}",
            h.reasons
        );
    }

    #[test]
    fn defaults_report_but_never_fail_the_run() {
        let l = Limits::new(None);
        assert_eq!(l.lag_p99_ns, DEFAULT_LAG_P99_NS);
        assert!(!l.enforced);
        let h = judge(
            Observed {
                dispatch_lag: Some(lag(12.3)),
                ..healthy()
            },
            l,
        );
        assert!(!h.kept_up);
        assert!(
            !h.fails_run(),
            "without the flag the verdict is only reported"
        );
        assert_eq!(
            h.line(),
            "Client health: FELL BEHIND — dispatch lag p99 12.3 ms > 1 ms (max 24.6 ms)"
        );
    }

    #[test]
    fn kept_up_lists_every_figure_with_its_limit() {
        let h = judge(healthy(), Limits::new(None));
        assert!(h.kept_up && h.reasons.is_empty() && !h.fails_run());
        assert_eq!(
            h.line(),
            "Client health: kept up (dispatch lag p99 0.42 ms ≤ 1 ms, busiest worker 31% busy, \
             0 ring stalls)"
        );
    }

    #[test]
    fn the_flag_sets_the_lag_limit_and_enforces_it() {
        let l = Limits::new(Some(500_000));
        assert!(l.enforced);
        let h = judge(healthy(), l);
        assert!(h.kept_up, "0.42 ms ≤ 0.5 ms");
        let h = judge(
            Observed {
                dispatch_lag: Some(lag(0.6)),
                ..healthy()
            },
            l,
        );
        assert!(h.fails_run());
        assert_eq!(h.reasons, ["dispatch lag p99 0.6 ms > 0.5 ms (max 1.2 ms)"]);
        assert!(h.line().ends_with("(--max-client-lag-us: exit code 5)"));
    }

    #[test]
    fn lag_at_the_limit_passes() {
        let h = judge(
            Observed {
                dispatch_lag: Some(lag(1.0)),
                ..healthy()
            },
            Limits::new(None),
        );
        assert!(h.kept_up, "{:?}", h.reasons);
    }

    #[test]
    fn receive_lag_is_judged_when_measured() {
        let limits = Limits::new(Some(1_000_000));
        let within = Observed {
            receive_lag: Some(lag(0.2)),
            ..healthy()
        };
        let h = judge(within, limits);
        assert!(h.kept_up);
        assert!(h.line().contains("receive lag p99 0.2 ms ≤ 1 ms"));
        let over = Observed {
            receive_lag: Some(lag(3.0)),
            ..healthy()
        };
        let h = judge(over, limits);
        assert!(h.fails_run());
        assert_eq!(h.reasons, ["receive lag p99 3 ms > 1 ms (max 6 ms)"]);
    }

    #[test]
    fn a_busy_worker_and_ring_stalls_each_fail_with_their_reason() {
        let h = judge(
            Observed {
                busiest_worker: Some(("worker_0".into(), 0.97)),
                ring_stalls: 3,
                ..healthy()
            },
            Limits::new(Some(10_000_000)),
        );
        assert!(h.fails_run());
        assert_eq!(
            h.reasons,
            [
                "worker_0 97% busy ≥ 95%",
                "3 ring stalls > 0 (workers waited for the aggregator)"
            ]
        );
    }

    #[test]
    fn missing_figures_are_not_failures() {
        let h = judge(Observed::default(), Limits::new(Some(1)));
        assert!(h.kept_up);
        assert_eq!(h.line(), "Client health: kept up (0 ring stalls)");
    }

    fn shard(kept_up: bool, enforced: bool, reasons: &[&str]) -> Option<ShardVerdict> {
        Some(ShardVerdict {
            kept_up,
            enforced,
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
        })
    }

    #[test]
    fn a_merged_run_kept_up_only_when_every_shard_did() {
        let all = MergedHealth {
            shards: vec![(0, shard(true, false, &[])), (1, shard(true, false, &[]))],
        };
        assert_eq!(all.kept_up(), Some(true));
        assert_eq!(all.line(), "Client health: kept up on all 2 shards");
        assert!(!all.fails_run());
    }

    #[test]
    fn one_shard_behind_makes_the_merged_run_fall_behind_naming_it() {
        let h = MergedHealth {
            shards: vec![
                (0, shard(true, true, &[])),
                (
                    1,
                    shard(false, true, &["dispatch lag p99 3 ms > 1 ms (max 4 ms)"]),
                ),
                (2, None),
            ],
        };
        assert_eq!(h.kept_up(), Some(false));
        assert_eq!(
            h.reasons(),
            ["shard 1: dispatch lag p99 3 ms > 1 ms (max 4 ms)"]
        );
        assert!(h.fails_run(), "shard 1 ran with --max-client-lag-us");
        assert_eq!(
            h.line(),
            "Client health: FELL BEHIND — shard 1: dispatch lag p99 3 ms > 1 ms (max 4 ms) \
             (--max-client-lag-us: exit code 5); no verdict from shard(s) 2"
        );
        let reported = MergedHealth {
            shards: vec![
                (0, shard(false, false, &["1 ring stall > 0"])),
                (1, shard(true, true, &[])),
            ],
        };
        assert!(
            !reported.fails_run(),
            "the shard behind only reported its verdict"
        );
        assert!(
            reported
                .line()
                .starts_with("Client health: FELL BEHIND — shard 0: 1 ring stall")
        );
    }

    #[test]
    fn a_shard_without_a_verdict_leaves_the_merged_run_not_judged() {
        let h = MergedHealth {
            shards: vec![(0, shard(true, false, &[])), (1, None)],
        };
        assert_eq!(h.kept_up(), None);
        assert_eq!(h.unjudged(), [1]);
        assert_eq!(
            h.line(),
            "Client health: not judged — no verdict from shard(s) 1; every other shard kept up"
        );
    }

    #[test]
    fn with_the_embedded_mock_a_lag_the_cpu_wait_accounts_for_is_the_shared_cores() {
        // Receive lag p99 2 ms, max 4 ms, over the 1 ms limit.
        let observed = |mock, wait_ms: u64| Observed {
            receive_lag: Some(lag(2.0)),
            shares_cores_with_mock: mock,
            run_queue_wait_ns: Some(wait_ms * 1_000_000),
            ..healthy()
        };
        let shared = judge(observed(true, 4), Limits::new(Some(1_000_000)));
        assert!(shared.kept_up && !shared.fails_run(), "{shared:?}");
        assert_eq!(
            shared.shared_cores,
            ["receive lag p99 2 ms > 1 ms (max 4 ms)"]
        );
        assert!(shared.line().starts_with(
            "Client health: SHARED CORES — receive lag p99 2 ms > 1 ms (max 4 ms), within the 4 ms"
        ));
        assert!(shared.line().ends_with(
            "what the client controls kept up (busiest worker 31% busy, 0 ring stalls)"
        ));
        // A wait shorter than the lag cannot account for it: the client's own.
        let short = judge(observed(true, 3), Limits::new(Some(1_000_000)));
        assert!(!short.kept_up && short.fails_run() && short.shared_cores.is_empty());
        // Without the embedded mock the same wait is the host's when other processes used at
        // least that much CPU on the workers' cores.
        let busy_host = Some(HostLoad {
            other_cpu_ns: 900_000_000,
            other_cpu_on_worker_cores_ns: Some(500_000_000),
            span_ns: 1_000_000_000,
            cores: 1,
            ..HostLoad::default()
        });
        let apart = judge(
            Observed {
                host: busy_host,
                ..observed(false, 4)
            },
            Limits::new(Some(1_000_000)),
        );
        assert!(apart.kept_up && !apart.fails_run(), "{apart:?}");
        assert!(
            apart
                .line()
                .starts_with("Client health: HOST BUSY — receive lag p99 2 ms"),
            "{}",
            apart.line()
        );
        // Without that evidence the wait was for the client's own threads: its own lag.
        let own_threads = judge(
            Observed {
                host: Some(HostLoad {
                    other_cpu_ns: 900_000_000,
                    other_cpu_on_worker_cores_ns: Some(3_000_000),
                    span_ns: 1_000_000_000,
                    cores: 1,
                    ..HostLoad::default()
                }),
                ..observed(false, 4)
            },
            Limits::new(Some(1_000_000)),
        );
        assert!(!own_threads.kept_up && own_threads.fails_run());
        let unknown_host = judge(observed(false, 4), Limits::new(Some(1_000_000)));
        assert!(!unknown_host.kept_up && unknown_host.shared_cores.is_empty());
        // Unknown wait: nothing is attributed.
        let unknown = judge(
            Observed {
                run_queue_wait_ns: None,
                ..observed(true, 0)
            },
            Limits::new(None),
        );
        assert!(!unknown.kept_up);
        // What the client controls still fails beside the shared cores' lag, both said.
        let both = judge(
            Observed {
                ring_stalls: 2,
                ..observed(true, 4)
            },
            Limits::new(None),
        );
        assert!(!both.kept_up);
        assert!(
            both.line().contains("; besides, receive lag p99 2 ms"),
            "{}",
            both.line()
        );
    }

    /// A server or a busy loop on the client's cores: the lag its wait accounts for is the
    /// host's, and the line names what ran there and the fix; the client is not blamed.
    #[test]
    fn a_busy_host_is_named_and_not_blamed_on_the_client() {
        let host = HostLoad {
            other_cpu_ns: 4_000_000_000,
            other_cpu_on_worker_cores_ns: Some(2_130_000_000),
            steal_ns: 12_000_000,
            span_ns: 3_000_000_000,
            cores: 1,
            busiest: vec![
                OtherProcess {
                    pid: 812,
                    name: "sh".into(),
                    cpu_ns: 1_300_000_000,
                },
                OtherProcess {
                    pid: 813,
                    name: "sh".into(),
                    cpu_ns: 1_250_000_000,
                },
            ],
        };
        let h = judge(
            Observed {
                dispatch_lag: Some(lag(10.0)),
                run_queue_wait_ns: Some(549_000_000),
                host: Some(host.clone()),
                ..healthy()
            },
            Limits::new(Some(1_000_000)),
        );
        assert!(h.kept_up && !h.fails_run() && h.reasons.is_empty(), "{h:?}");
        assert_eq!(
            h.line(),
            "Client health: HOST BUSY — dispatch lag p99 10 ms > 1 ms (max 20 ms), within the \
             549 ms the workers waited for a CPU held by another thread; other processes used \
             2.13 CPU-s on the workers' cores (4.00 CPU-s on the host; most: sh [pid 812] \
             1.30 s, sh [pid 813] 1.25 s); the hypervisor stole 12 ms: this lag is not the \
             client's own; what the client controls kept up (busiest worker 31% busy, 0 ring \
             stalls); to measure the server alone, give the client cores nothing else runs on \
             (taskset, cpusets) or run on a quiet host"
        );
        // A lag longer than the whole wait is the client's own, whatever else ran.
        let own = judge(
            Observed {
                dispatch_lag: Some(lag(10.0)),
                run_queue_wait_ns: Some(19_000_000),
                host: Some(host.clone()),
                ..healthy()
            },
            Limits::new(Some(1_000_000)),
        );
        assert!(!own.kept_up && own.fails_run() && own.shared_cores.is_empty());
        // Other processes that took 1% of the workers' core over the run (30 ms of 3 s) do not
        // make a busy host, however long the workers waited: the wait was for the client's own
        // threads.
        let quiet = HostLoad {
            other_cpu_ns: 30_000_000,
            other_cpu_on_worker_cores_ns: Some(30_000_000),
            steal_ns: 0,
            busiest: Vec::new(),
            ..host
        };
        assert!(quiet.taken_share() < HOST_BUSY_SHARE);
        let client = judge(
            Observed {
                dispatch_lag: Some(lag(0.5)),
                run_queue_wait_ns: Some(549_000_000),
                host: Some(quiet),
                ..healthy()
            },
            Limits::new(Some(300_000)),
        );
        assert!(
            !client.kept_up && client.shared_cores.is_empty(),
            "{client:?}"
        );
        // Unpinned workers: only the host-wide figure, no steal said when there was none.
        let loose = HostLoad {
            other_cpu_ns: 500_000_000,
            ..HostLoad::default()
        };
        assert_eq!(loose.words(), "other processes used 0.50 CPU-s on the host");
    }
}
