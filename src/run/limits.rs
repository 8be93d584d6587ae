//! Before a run sends anything: can the connections its concurrency holds be opened at all?
//!
//! A phase with a bounded number of requests in flight (`--concurrency`, an open loop's cap, a
//! warmup's own) holds that many sockets at once: one descriptor each (with `--mock`, the
//! embedded server's accepted socket and reply timer too), beside the run's own files, rings
//! and scraper sockets. [`check`] compares that with what the process knows before it starts:
//! the `RLIMIT_NOFILE` soft limit once raised to the hard one, the ephemeral port range
//! (`/proc/sys/net/ipv4/ip_local_port_range`), which bounds the connections to one destination,
//! and the workers' own connection caps (`AIPERF_HTTP_CONNECTION_LIMIT` each). A need over a
//! hard limit refuses the run (exit code 2) naming the limit and how to raise it; a cap that
//! only makes requests wait is one warning line. An open loop without a cap has no bound to
//! check: running out of descriptors there is reported by the client-health verdict.

use std::collections::BTreeSet;

use super::error::{RunError, SetupKind};
use crate::config::{Config, PhaseConfig};

/// Descriptors the run holds besides its connections: standard streams, the artifact files,
/// the aggregator's pipe, a few per worker (ring, timer) and the scraper's sockets are added
/// on top. Measured at 9 for a two-worker run (docs/flags.md, "Limits before the start"); the
/// rest is headroom for the tokenizer's and the exports' files.
const RESERVE: u64 = 24;
/// Descriptors per worker: its ring and its timer.
const PER_WORKER: u64 = 2;

/// What the run will hold at its busiest.
#[derive(Clone, Debug, PartialEq)]
pub struct Needs {
    /// Most requests in flight at once, and the flag that sets it.
    pub in_flight: u64,
    pub flag: &'static str,
    /// Descriptors per request in flight (2 more with the embedded mock).
    pub fds_per_request: u64,
    /// Descriptors the run holds besides its requests.
    pub reserve: u64,
    /// Distinct server addresses the connections are spread over (round-robin).
    pub destinations: u64,
    /// Workers, and the most connections each holds.
    pub workers: u64,
    pub connection_limit: u64,
}

/// What the process and the kernel allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_NOFILE` soft limit after raising it to the hard one, and the hard limit.
    pub nofile: Option<(u64, u64)>,
    /// The ephemeral port range, inclusive.
    pub ports: Option<(u64, u64)>,
}

impl Limits {
    /// The limits of this process: the soft descriptor limit is raised to the hard one first.
    pub fn of_process() -> Self {
        Self {
            nofile: ringperf_io::fdlimit::raise_nofile().ok(),
            ports: std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .ok()
                .as_deref()
                .and_then(parse_port_range),
        }
    }
}

/// `"32768\t60999\n"` → `(32768, 60999)`; `None` for anything else.
pub fn parse_port_range(s: &str) -> Option<(u64, u64)> {
    let mut it = s.split_whitespace().map(str::parse::<u64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) if lo <= hi && hi <= 65_535 => Some((lo, hi)),
        _ => None,
    }
}

/// What `cfg` needs at its busiest, `None` when no phase bounds its requests in flight.
pub fn needs(cfg: &Config) -> Option<Needs> {
    let share = |p: &PhaseConfig| p.load.max_in_flight().map(|c| cfg.shard.shard.share(c));
    let profiling = share(&cfg.profiling).map(|c| (c, "--concurrency"));
    let warmup = cfg
        .warmup
        .as_ref()
        .and_then(share)
        .map(|c| (c, "--warmup-concurrency"));
    let (in_flight, flag) = match (profiling, warmup) {
        (Some(p), Some(w)) => {
            if w.0 > p.0 {
                w
            } else {
                p
            }
        }
        (p, w) => p.or(w)?,
    };
    let scraped = if cfg.server_metrics.enabled {
        cfg.urls.len() + cfg.server_metrics.extra_urls.len()
    } else {
        0
    } + if cfg.gpu_telemetry.enabled {
        cfg.gpu_telemetry.urls.len()
    } else {
        0
    };
    let workers = cfg.workers.max(1) as u64;
    let destinations = if cfg.mock.is_some() {
        1
    } else {
        let addrs: BTreeSet<_> = cfg.urls.iter().map(|u| u.addr).collect();
        addrs.len().max(1) as u64
    };
    Some(Needs {
        in_flight,
        flag,
        fds_per_request: if cfg.mock.is_some() { 3 } else { 1 },
        reserve: RESERVE + PER_WORKER * workers + scraped as u64,
        destinations,
        workers,
        connection_limit: cfg.connection_limit as u64,
    })
}

/// Refuses a need over a hard limit; the warnings for caps that only make requests wait.
///
/// # Errors
/// The message naming the limit, the need, and how to raise the one or lower the other.
pub fn judge(n: &Needs, l: &Limits) -> Result<Vec<String>, String> {
    let c = n.in_flight;
    if let Some((soft, hard)) = l.nofile {
        let fds = c
            .saturating_mul(n.fds_per_request)
            .saturating_add(n.reserve);
        if fds > soft {
            let most = soft.saturating_sub(n.reserve) / n.fds_per_request;
            let per = if n.fds_per_request == 1 {
                "one socket per request in flight".to_string()
            } else {
                format!(
                    "{} descriptors per request in flight with --mock",
                    n.fds_per_request
                )
            };
            let raised = if soft == hard {
                "the soft limit already raised to the hard one"
            } else {
                "the soft limit could not be raised to the hard one"
            };
            return Err(format!(
                "{} {c} needs about {fds} file descriptors at once ({per}, plus {} for the run \
                 itself), over this process's limit of {soft} (RLIMIT_NOFILE, {raised}, hard \
                 limit {hard}): raise it before starting ringperf (`ulimit -n {fds}` in its \
                 shell, after `ulimit -Hn` as root, or LimitNOFILE= in a systemd unit) or lower \
                 {} to at most {most}",
                n.flag, n.reserve, n.flag
            ));
        }
    }
    if let Some((lo, hi)) = l.ports {
        let ports = hi - lo + 1;
        let per_destination = c.div_ceil(n.destinations);
        if per_destination > ports {
            return Err(format!(
                "{} {c} opens {per_destination} connections at once to {}, but the ephemeral \
                 port range (net.ipv4.ip_local_port_range = {lo} {hi}) gives {ports} local \
                 ports per destination: widen it (`sysctl -w \
                 net.ipv4.ip_local_port_range=\"1024 65535\"` as root), spread the load over \
                 more --url addresses, or lower {} to at most {}",
                n.flag,
                if n.destinations == 1 {
                    "one server address".to_string()
                } else {
                    format!("each of {} server addresses", n.destinations)
                },
                n.flag,
                ports.saturating_mul(n.destinations)
            ));
        }
    }
    let mut warnings = Vec::new();
    let pooled = n.workers.saturating_mul(n.connection_limit);
    if c > pooled {
        warnings.push(format!(
            "{} {c} is more than the {pooled} connections the {} workers may hold \
             (AIPERF_HTTP_CONNECTION_LIMIT = {} each): requests will wait for a connection, \
             and the client-health verdict will fail; raise AIPERF_HTTP_CONNECTION_LIMIT or \
             --workers-max",
            n.flag, n.workers, n.connection_limit
        ));
    }
    Ok(warnings)
}

/// Checks `cfg` against this process's limits before anything is sent.
///
/// # Errors
/// A need over a limit ([`SetupKind::Limits`]).
pub fn check(cfg: &Config) -> Result<Vec<String>, RunError> {
    let Some(n) = needs(cfg) else {
        return Ok(Vec::new());
    };
    judge(&n, &Limits::of_process()).map_err(|m| RunError::new(SetupKind::Limits, m))
}

#[cfg(test)]
mod tests;
