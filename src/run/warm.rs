//! What each worker's warm connection pool is sized for in a phase ([`ringperf_engine::worker::warm`]):
//! open-loop phases on pooled connections only (a closed loop has its slots' connections and
//! opens each once; sticky sessions and `never` reuse keep nothing in a pool).

use crate::config::timing::Mode as TimingMode;
use crate::config::{Config, ConnectionReuse, Load, PhaseConfig};
use ringperf_engine::worker::Shared;
use ringperf_engine::worker::warm::Warm;

/// One [`Warm`] per worker for phase `p`, or `None` when the phase keeps no warm pool.
pub(super) fn plan(
    cfg: &Config,
    p: &PhaseConfig,
    shared: &Shared,
    workers: usize,
) -> Option<Vec<Warm>> {
    if shared.reuse != ConnectionReuse::Pooled || workers == 0 {
        return None;
    }
    let shard = cfg.shard.shard;
    let cap = match (p.timing.mode, p.load) {
        (_, Load::Rate { cap, .. }) => cap,
        (TimingMode::Load | TimingMode::Agentic(_), Load::Concurrency(_)) => return None,
        (_, Load::Concurrency(c)) => Some(c),
    };
    // The requests a second the whole run sends.
    let rate = match p.timing.mode {
        TimingMode::FixedSchedule(fixed) => {
            let (_, entries) = fixed.build_for(&shared.dataset).ok()?;
            let span_s = entries.iter().map(|e| e.offset_ns).max().unwrap_or(0) as f64 / 1e9;
            // A trace whose sessions all start within a second is sized as one second's load.
            entries.len() as f64 / span_s.max(1.0)
        }
        TimingMode::UserCentric { rate, .. } => rate,
        // Agentic replay's lanes are a closed loop.
        TimingMode::Agentic(_) => return None,
        TimingMode::Load => match p.load {
            Load::Rate { rate, .. } => rate,
            Load::Concurrency(_) => return None,
        },
    };
    let soft_limit = ringperf_io::fdlimit::raise_nofile().map_or(1024, |(soft, _)| soft);
    // Half the descriptors for the pools, the rest for on-demand connects, files and the
    // scraper.
    let fd_budget = usize::try_from(soft_limit / 2 / workers as u64).unwrap_or(usize::MAX);
    let per_worker = rate / f64::from(shard.count()) / workers as f64;
    Some(
        (0..workers)
            .map(|i| Warm {
                rate: per_worker,
                cap: cap.map(|c| {
                    let local = shard.share(c).max(1);
                    let n = workers as u64;
                    (local / n + u64::from((i as u64) < local % n)).max(1) as usize
                }),
                fd_budget: fd_budget.min(cfg.connection_limit).max(1),
            })
            .collect(),
    )
}
