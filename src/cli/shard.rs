//! The Scale-out group: `--shard-index`, `--shard-count` and `--start-at`, which make this
//! process one shard of a run split over several (see `docs/scale-out.md`). ringperf's own
//! flags: AIPerf has no equivalent.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShardArgs {
    /// This process's shard, from 0 (default: RINGPERF_SHARD_INDEX, else Kubernetes'
    /// JOB_COMPLETION_INDEX when --shard-count is over 1, else 0).
    #[arg(
        long = "shard-index",
        env = "RINGPERF_SHARD_INDEX",
        help_heading = "Scale-out"
    )]
    pub shard_index: Option<u32>,

    /// How many shards share the run: shard I takes every request, session, arrival and
    /// concurrency slot whose index is I modulo N.
    #[arg(
        long = "shard-count",
        env = "RINGPERF_SHARD_COUNT",
        help_heading = "Scale-out"
    )]
    pub shard_count: Option<u32>,

    /// The instant every shard starts at: RFC 3339 (2026-11-23T10:00:00Z) or epoch
    /// nanoseconds. Required with --shard-count over 1; the shard waits for it.
    #[arg(
        long = "start-at",
        env = "RINGPERF_START_AT",
        help_heading = "Scale-out"
    )]
    pub start_at: Option<String>,
}
