//! A shard's part of the run loop (`--shard-index`, `--shard-count`, `--start-at`; see
//! `docs/scale-out.md`): who it is (`shard.json`, written before anything is sent), who
//! scrapes the server (shard 0 only), and the wait for the instant every shard starts at.
//! What a shard sends is decided where credits are made ([`ringperf_workload::schedule::Shard`]).

use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use ringperf_engine::worker::Shared;
use ringperf_metrics::export::ShardInfo;
use ringperf_metrics::export::shard::{self as manifest, ShardManifest};
use ringperf_wire::clock::Clock;

use super::{RunError, SetupKind, log};

/// Longest single sleep while waiting for `--start-at`, so a signal is not kept waiting.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// A phase's start on both scales: for the first phase of a shard, the `--start-at` instant.
#[derive(Clone, Copy, Debug)]
pub(super) struct Origin {
    /// Wall-clock epoch ns (the `--start-at` instant itself).
    pub wall_ns: u64,
    /// The same instant on the run's monotonic clock.
    pub mono_ns: u64,
    /// Wall-clock epoch ns when the wait ended: after the instant when this shard was ready
    /// late, a wake-up later otherwise.
    pub ready_wall_ns: u64,
}

impl Origin {
    /// A phase starting now (no `--start-at`, or a later phase).
    pub fn now(clock: Clock) -> Self {
        let mono_ns = clock.now_ns();
        let wall_ns = clock.wall_ns(mono_ns);
        Self {
            wall_ns,
            mono_ns,
            ready_wall_ns: wall_ns,
        }
    }
}

/// What a shard records of itself once the run is over.
#[derive(Debug)]
pub(super) struct Identity {
    pub manifest: ShardManifest,
}

impl Identity {
    /// `ringperf.shard` of the summary JSON, from the wait for the start.
    pub fn info(&self, origin: Option<Origin>) -> ShardInfo {
        let m = &self.manifest;
        ShardInfo {
            index: m.index,
            count: m.count,
            run_id: m.run_id.clone(),
            start_at_ns: m.start_at_ns,
            start_lag_ns: origin.map_or(0, |o| o.ready_wall_ns as i64 - m.start_at_ns as i64),
            server_metrics: m.server_metrics,
        }
    }
}

/// Before anything is sent: refuses a `--start-at` already past when the process started
/// (its schedule would begin before the process did); for a split run, takes the server-metrics
/// collection away from every shard but 0 and writes `shard.json` into `dir`. `None` for a
/// run that is not split.
pub(super) fn prepare(
    cfg: &mut Config,
    clock: Clock,
    dir: &Path,
) -> Result<Option<Identity>, RunError> {
    if let Some(at) = cfg.shard.start_at_ns
        && at < clock.wall_origin_ns()
    {
        let late = (clock.wall_origin_ns() - at) as f64 / 1e9;
        return Err(RunError::new(
            SetupKind::Shard,
            format!(
                "--start-at is {late:.3} s before this process started: start every shard \
                 before the instant they share (pick one further ahead)"
            ),
        ));
    }
    if !cfg.shard.is_split() {
        return Ok(None);
    }
    let shard = cfg.shard.shard;
    // The workload as configured (before this shard's own changes below).
    let workload = manifest::workload_fingerprint(&cfg.input_config());
    let start_at_ns = cfg.shard.start_at_ns.unwrap_or_default();
    let scrapes = cfg.server_metrics.enabled && shard.index() == 0;
    if cfg.server_metrics.enabled && !scrapes {
        cfg.server_metrics.enabled = false;
        log(
            cfg,
            &format!(
                "shard {} of {}: server metrics are collected by shard 0 only",
                shard.index(),
                shard.count()
            ),
        );
    }
    let m = ShardManifest {
        run_id: manifest::run_id(start_at_ns, shard.count(), &workload),
        index: shard.index(),
        count: shard.count(),
        start_at_ns,
        workload,
        server_metrics: scrapes,
        argv: cfg.argv_redacted.clone(),
        ringperf_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    manifest::write(dir, &m).map_err(|e| {
        RunError::new(
            SetupKind::Shard,
            format!(
                "cannot write {} in {}: {e}",
                manifest::SHARD_FILE,
                dir.display()
            ),
        )
    })?;
    Ok(Some(Identity { manifest: m }))
}

/// Waits until the `--start-at` instant (or a stop); `None` without `--start-at`.
pub(super) fn wait_for_start(cfg: &Config, shared: &Shared) -> Option<Origin> {
    let at = cfg.shard.start_at_ns?;
    let clock = shared.clock;
    // `prepare` made sure the instant is not before the clock's origin.
    let mono_ns = at.saturating_sub(clock.wall_origin_ns());
    let ahead = mono_ns.saturating_sub(clock.now_ns());
    if ahead > 0 {
        log(
            cfg,
            &format!("waiting {:.3} s for --start-at", ahead as f64 / 1e9),
        );
    }
    loop {
        let now = clock.now_ns();
        if now >= mono_ns || shared.control.stopped() {
            break;
        }
        std::thread::sleep(Duration::from_nanos(mono_ns - now).min(WAIT_SLICE));
    }
    Some(Origin {
        wall_ns: at,
        mono_ns,
        ready_wall_ns: ringperf_wire::clock::wall_now_ns(),
    })
}
