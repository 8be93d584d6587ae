//! A sharded sweep (`--concurrency 2,4 --shard-count N --shard-index I --start-at T`): every
//! shard process runs every (variation, trial) of the plan, in the same order, each as a shard
//! of that run. See docs/scale-out.md, "Sweeps".
//!
//! The runs stay aligned by a barrier in a directory the shards share (the parent of their
//! artifact directories): when a shard's run ends it writes one small file there — its end
//! instant and whether the run ended well — and waits until every shard's file for that run
//! is there. Every shard then reads the same N files and computes the same next start
//! instant: the latest end, plus the cooldown, plus [`LEAD_NS`] for each shard to notice and
//! prepare. That instant is the next run's `--start-at`, so each run's shards share a start
//! instant (and with it the run id of their `shard.json`), exactly as a one-run split does.
//!
//! Why a barrier rather than a start computed from `--start-at` alone: a run's length is
//! not known in advance (a request count, a closed loop, a slow server), so a fixed slot per
//! variation would either waste time or overlap the runs.
//!
//! A shard that fails or is stopped writes its file with that status; the others then stop
//! the sweep with an error naming it instead of waiting. A shard that dies without writing
//! anything is waited for at most [`wait_limit`], then named.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::SweepError;
use super::plan::{ParamValue, SweepPlan};
use crate::plan::Plan;

/// Time between the latest shard's end and the next run's start, on top of the cooldown: for
/// every shard to see the last barrier file (they poll every [`POLL`]) and prepare the run.
pub const LEAD_NS: u64 = 1_000_000_000;

/// How often a waiting shard looks for the others' files.
const POLL: Duration = Duration::from_millis(20);

/// The manifest a sharded sweep writes at the top of each shard's artifact directory: what
/// `ringperf merge` checks before merging two sweep directories variation by variation.
pub const SWEEP_SHARD_FILE: &str = "sweep_shard.json";

/// See [`SWEEP_SHARD_FILE`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepShardManifest {
    /// This shard, from 0.
    pub index: u32,
    /// Shards in the sweep.
    pub count: u32,
    /// The sweep's `--start-at`, epoch ns (the first run's start instant).
    pub start_at_ns: u64,
    /// The variations' labels, in the plan's order.
    pub variations: Vec<String>,
    /// Trials per variation.
    pub trials: u32,
    /// The sweep's base plan, secrets redacted, and its lists by parameter path: `merge`
    /// rebuilds the sweep from them.
    pub plan: Plan,
    pub lists: Vec<(String, Vec<ParamValue>)>,
}

impl SweepShardManifest {
    /// Reads `dir`'s manifest.
    ///
    /// # Errors
    /// The file is missing or not a manifest.
    pub fn read(dir: &Path) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(dir.join(SWEEP_SHARD_FILE))?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// Writes it into `dir`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, dir: &Path) -> Result<(), SweepError> {
        let path = dir.join(SWEEP_SHARD_FILE);
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        std::fs::write(&path, text).map_err(|source| SweepError::Write { path, source })
    }
}

/// One shard's arrival at the barrier after a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Arrival {
    /// When the shard's run ended, wall-clock epoch ns.
    end_ns: u64,
    /// `ok`, or why the shard's sweep stops (`failed: …`, `stopped by SIGINT`).
    status: String,
}

/// This process's place in a sharded sweep and its barrier.
#[derive(Debug)]
pub struct SweepShards {
    index: u32,
    count: u32,
    /// Where every shard's barrier files go.
    barrier: PathBuf,
    /// The first run's start instant.
    pub start_at_ns: u64,
}

impl SweepShards {
    /// The shard `index` of `count`, sweeping into `base`, starting at `start_at_ns`: the
    /// barrier directory is `.ringperf-sweep-<start_at_ns>` beside `base`.
    ///
    /// # Errors
    /// The barrier directory cannot be made.
    pub fn new(index: u32, count: u32, start_at_ns: u64, base: &Path) -> Result<Self, SweepError> {
        let parent = match base.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let barrier = parent.join(format!(".ringperf-sweep-{start_at_ns}"));
        std::fs::create_dir_all(&barrier).map_err(|source| SweepError::Write {
            path: barrier.clone(),
            source,
        })?;
        Ok(Self {
            index,
            count,
            barrier,
            start_at_ns,
        })
    }

    /// The manifest of this shard of `plan`, `secrets` redacted.
    ///
    /// # Errors
    /// The plan cannot be redacted ([`Plan::redacted`]).
    pub fn manifest(
        &self,
        plan: &SweepPlan,
        secrets: &[String],
    ) -> Result<SweepShardManifest, serde_json::Error> {
        Ok(SweepShardManifest {
            index: self.index,
            count: self.count,
            start_at_ns: self.start_at_ns,
            variations: plan.variations.iter().map(|v| v.label.clone()).collect(),
            trials: plan.trials,
            plan: plan.base.redacted(secrets)?,
            lists: plan
                .parameters
                .iter()
                .map(|(f, values)| (f.path.to_owned(), values.clone()))
                .collect(),
        })
    }

    fn file(&self, run: usize, shard: u32) -> PathBuf {
        self.barrier.join(format!("run-{run}.shard-{shard}.json"))
    }

    /// Says that this shard's run number `run` (from 0, in the sweep's order) ended at `end_ns`
    /// with `status` (`ok` when it ended well).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn arrive(&self, run: usize, end_ns: u64, status: &str) -> Result<(), SweepError> {
        let path = self.file(run, self.index);
        let tmp = path.with_extension("tmp");
        let a = Arrival {
            end_ns,
            status: status.to_owned(),
        };
        let text = serde_json::to_string(&a).unwrap_or_default();
        // Written aside, then renamed: a reader never sees half a file.
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| SweepError::Write { path, source })
    }

    /// Waits until every shard has arrived after run `run`, then returns the next run's start
    /// instant (the latest end + `cooldown_ns` + [`LEAD_NS`]). Gives up after `limit`, when a
    /// shard arrived with another status than `ok`, or when `stop` says so.
    ///
    /// # Errors
    /// [`SweepError::ShardBarrier`] naming the shards that failed or never arrived.
    pub fn wait(
        &self,
        run: usize,
        cooldown_ns: u64,
        limit: Duration,
        stop: impl Fn() -> bool,
    ) -> Result<u64, SweepError> {
        let began = Instant::now();
        loop {
            let mut latest = 0u64;
            let mut missing = Vec::new();
            for s in 0..self.count {
                match read_arrival(&self.file(run, s)) {
                    Some(a) if a.status != "ok" && s != self.index => {
                        return Err(SweepError::ShardBarrier {
                            run: run + 1,
                            why: format!("shard {s} stopped its sweep ({})", a.status),
                        });
                    }
                    Some(a) => latest = latest.max(a.end_ns),
                    None => missing.push(s),
                }
            }
            if missing.is_empty() {
                return Ok(latest + cooldown_ns + LEAD_NS);
            }
            if stop() {
                return Err(SweepError::ShardBarrier {
                    run: run + 1,
                    why: "stopped while waiting for the other shards".into(),
                });
            }
            if began.elapsed() >= limit {
                let names: Vec<String> = missing.iter().map(u32::to_string).collect();
                return Err(SweepError::ShardBarrier {
                    run: run + 1,
                    why: format!(
                        "shard(s) {} did not finish the run within {:.0} s of this one (no \
                         file in {}): each shard's artifact directory must be in the same \
                         parent directory, which they all can see",
                        names.join(", "),
                        limit.as_secs_f64(),
                        self.barrier.display()
                    ),
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

fn read_arrival(path: &Path) -> Option<Arrival> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// How long a shard waits for the others after its run of `took`: a minute, plus the run's own
/// length (the shards' runs have the same schedule, so one much later than that is gone).
pub fn wait_limit(took: Duration) -> Duration {
    Duration::from_secs(60) + took
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(dir: &Path, index: u32) -> SweepShards {
        SweepShards::new(index, 2, 7, &dir.join(format!("shard-{index}"))).expect("barrier")
    }

    #[test]
    fn both_shards_compute_the_same_next_start_from_the_latest_end() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (a, b) = (shards(tmp.path(), 0), shards(tmp.path(), 1));
        a.arrive(0, 5_000, "ok").expect("arrive");
        // Shard 1 has not arrived: shard 0 gives up after the limit, naming it.
        let e = a
            .wait(0, 0, Duration::from_millis(50), || false)
            .unwrap_err();
        assert!(e.to_string().contains("shard(s) 1 did not finish"), "{e}");
        b.arrive(0, 9_000, "ok").expect("arrive");
        let lim = Duration::from_secs(5);
        let next = 9_000 + 2_000_000_000 + LEAD_NS;
        assert_eq!(a.wait(0, 2_000_000_000, lim, || false).unwrap(), next);
        assert_eq!(b.wait(0, 2_000_000_000, lim, || false).unwrap(), next);
        // Run 1 is its own barrier: nothing of run 0 counts for it.
        assert!(a.wait(1, 0, Duration::ZERO, || false).is_err());
    }

    #[test]
    fn a_failed_shard_stops_the_others_at_once() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (a, b) = (shards(tmp.path(), 0), shards(tmp.path(), 1));
        b.arrive(0, 1, "failed: cannot connect").expect("arrive");
        let e = a.wait(0, 0, Duration::from_secs(60), || false).unwrap_err();
        assert!(
            e.to_string()
                .contains("shard 1 stopped its sweep (failed: cannot connect)"),
            "{e}"
        );
        let e = a.wait(3, 0, Duration::from_secs(60), || true).unwrap_err();
        assert!(e.to_string().contains("stopped while waiting"), "{e}");
    }
}
