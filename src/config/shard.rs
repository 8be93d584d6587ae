//! The Scale-out group, validated: which shard of how many this process is, and the instant
//! every shard starts at. See `docs/scale-out.md`.

use crate::cli::shard::ShardArgs;
use ringperf_workload::schedule::Shard;

use super::{ConfigError, PhaseConfig, err};

/// Earliest `--start-at` taken as epoch nanoseconds (2001-09-09): a smaller integer is a
/// mistake (seconds or milliseconds), refused rather than read as 1970.
const MIN_EPOCH_NS: u64 = 1_000_000_000_000_000_000;

/// The index a Kubernetes Indexed Job gives each of its pods.
pub const JOB_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// This process's place in a split run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardConfig {
    /// The shard ([`Shard::WHOLE`] when the run is not split).
    pub shard: Shard,
    /// The shared start instant, wall-clock epoch ns (`--start-at`).
    pub start_at_ns: Option<u64>,
}

impl ShardConfig {
    /// Validates the flags; `env` reads `JOB_COMPLETION_INDEX` (clap has already read the
    /// `RINGPERF_*` variables into `args`).
    pub fn from_args(
        args: &ShardArgs,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let count = args.shard_count.unwrap_or(1);
        let index = match args.shard_index {
            Some(i) => i,
            None if count > 1 => match env(JOB_INDEX_VAR) {
                Some(v) => v.trim().parse().map_err(|_| {
                    ConfigError::environment(format!(
                        "{JOB_INDEX_VAR}={v:?} is not a shard index (a whole number)"
                    ))
                })?,
                None => {
                    return err(format!(
                        "--shard-count {count} needs --shard-index (or RINGPERF_SHARD_INDEX, or \
                         JOB_COMPLETION_INDEX in a Kubernetes Indexed Job)"
                    ));
                }
            },
            None => 0,
        };
        let shard = Shard::new(index, count).map_err(|e| ConfigError::flag(e.to_string()))?;
        let start_at_ns = args.start_at.as_deref().map(parse_start_at).transpose()?;
        if !shard.is_whole() && start_at_ns.is_none() {
            return err(format!(
                "--shard-count {count} needs --start-at (RFC 3339 or epoch ns, or \
                 RINGPERF_START_AT): every shard must start at the same instant for their \
                 schedules to be one"
            ));
        }
        Ok(Self { shard, start_at_ns })
    }

    /// The run is split over several processes.
    pub fn is_split(&self) -> bool {
        !self.shard.is_whole()
    }

    /// Refuses a split that leaves a shard nothing: fewer concurrency slots (or a lower
    /// open-loop cap) than shards, which would change the run's concurrency, or fewer requests
    /// than shards, which would leave a shard with no request.
    pub fn check_divisible(&self, phase: &PhaseConfig) -> Result<(), ConfigError> {
        let n = u64::from(self.shard.count());
        if n == 1 {
            return Ok(());
        }
        if let Some(c) = phase.load.max_in_flight()
            && c < n
        {
            return err(format!(
                "--concurrency {c} cannot be divided over {n} shards: each shard needs a slot of \
                 its own (use at least {n}, or fewer shards)"
            ));
        }
        if let Some(r) = phase.request_count
            && r < n
        {
            return err(format!(
                "--request-count {r} cannot be divided over {n} shards: each shard needs a \
                 request of its own"
            ));
        }
        Ok(())
    }
}

/// `--start-at`: RFC 3339 with an offset (`2026-11-23T10:00:00Z`, fractions allowed), or an
/// integer of epoch nanoseconds.
pub fn parse_start_at(s: &str) -> Result<u64, ConfigError> {
    let s = s.trim();
    if let Ok(ns) = s.parse::<u64>() {
        if ns < MIN_EPOCH_NS {
            return err(format!(
                "--start-at {s}: an integer is epoch nanoseconds (19 digits, e.g. from \
                 `date +%s%N`); this one is before 2001"
            ));
        }
        return Ok(ns);
    }
    let ts: jiff::Timestamp = s.parse().map_err(|e| {
        ConfigError::flag(format!(
            "--start-at {s:?} is neither RFC 3339 (e.g. 2026-11-23T10:00:00Z) nor epoch \
             nanoseconds: {e}"
        ))
    })?;
    u64::try_from(ts.as_nanosecond())
        .map_err(|_| ConfigError::flag(format!("--start-at {s:?} is before 1970")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(index: Option<u32>, count: Option<u32>, start: Option<&str>) -> ShardArgs {
        ShardArgs {
            shard_index: index,
            shard_count: count,
            start_at: start.map(String::from),
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn start_at_takes_rfc3339_and_epoch_ns() {
        assert_eq!(
            parse_start_at("2026-11-23T10:00:00Z").unwrap(),
            1_795_428_000_000_000_000
        );
        assert_eq!(
            parse_start_at("2026-11-23T11:00:00.5+01:00").unwrap(),
            1_795_428_000_500_000_000
        );
        assert_eq!(
            parse_start_at("1795428000000000001").unwrap(),
            1_795_428_000_000_000_001
        );
        // Seconds, not nanoseconds.
        assert!(
            parse_start_at("1795428000")
                .unwrap_err()
                .message()
                .contains("before 2001")
        );
        assert!(
            parse_start_at("tomorrow")
                .unwrap_err()
                .message()
                .contains("RFC 3339")
        );
    }

    #[test]
    fn a_whole_run_needs_nothing() {
        let c = ShardConfig::from_args(&args(None, None, None), no_env).unwrap();
        assert!(!c.is_split() && c.start_at_ns.is_none());
        // JOB_COMPLETION_INDEX alone does not split a run.
        let c = ShardConfig::from_args(&args(None, None, None), |_| Some("3".into())).unwrap();
        assert_eq!(c.shard, Shard::WHOLE);
    }

    #[test]
    fn a_split_run_needs_its_index_and_a_start() {
        let start = Some("1795428000000000000");
        let e = ShardConfig::from_args(&args(Some(0), Some(2), None), no_env).unwrap_err();
        assert!(e.message().contains("needs --start-at"), "{e}");
        let e = ShardConfig::from_args(&args(None, Some(2), start), no_env).unwrap_err();
        assert!(e.message().contains("needs --shard-index"), "{e}");
        let e = ShardConfig::from_args(&args(Some(2), Some(2), start), no_env).unwrap_err();
        assert!(e.message().contains("out of range"), "{e}");
        let c = ShardConfig::from_args(&args(Some(1), Some(2), start), no_env).unwrap();
        assert_eq!(c.shard, Shard::new(1, 2).unwrap());
        assert_eq!(c.start_at_ns, Some(1_795_428_000_000_000_000));
    }

    #[test]
    fn kubernetes_gives_the_index() {
        let start = Some("2026-11-23T10:00:00Z");
        let job = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "2".to_string());
        let c = ShardConfig::from_args(&args(None, Some(4), start), job).unwrap();
        assert_eq!(c.shard, Shard::new(2, 4).unwrap());
        // The flag wins over the job's index.
        let c = ShardConfig::from_args(&args(Some(0), Some(4), start), job).unwrap();
        assert_eq!(c.shard.index(), 0);
        let bad = |_: &str| Some("x".to_string());
        let e = ShardConfig::from_args(&args(None, Some(4), start), bad).unwrap_err();
        assert!(e.message().contains("JOB_COMPLETION_INDEX"), "{e}");
    }
}
