//! `ringperf merge DIR... [--artifact-dir OUT]`: one set of AIPerf-format artifacts from the
//! artifact directories of a run's shards (`--shard-index I --shard-count N`), with every
//! statistic recomputed from the union of the shards' per-request records — exact percentiles,
//! never averages of the shards' own — and each shard's client health beside them.
//!
//! # Flow
//!
//! 1. [`inputs`]: find the shard directories (each holds `shard.json`), refuse what is not one
//!    run (different workloads, shard counts or run ids, an index twice); note the missing
//!    indices. Nothing is written before every check passed.
//! 2. [`settings`]: the run's configuration from the lowest shard's recorded command line,
//!    through the same validation as `profile` (without resolving the server's name).
//! 3. [`records`]: each shard's `profile_export.jsonl` streamed a line at a time and k-way merged
//!    by `request_end_ns` into the merged JSONL (lines verbatim), every line read back by
//!    [`line`] into the facts and metrics the live run had and fed to the same
//!    [`Accumulator`](ringperf_metrics::aggregate::Accumulator)s (profiling, warmup) and timeslice collector.
//! 4. [`output`]: the summary JSON and CSV, per-phase files, timeslices and console export by the
//!    live run's exporters; the scraping shard's server-metrics files and the lowest shard's
//!    `inputs.json` copied; the results-ready marker last.
//!
//! # What is exact
//!
//! Every per-request value is the live run's: integers and nanosecond stamps exactly, floats to
//! the bit ([`line`] says how, and the one case where a value is rebuilt rather than read). The
//! statistics are computed by the live run's own code from the union of those values, so
//! counts, min, max, percentiles (NumPy's linear interpolation over all values), totals,
//! throughputs and the benchmark duration (latest response end − earliest request start over
//! all shards) are exactly those of one process that had recorded every shard's requests. Sums
//! and means add the same values in another order than any one process would, so they can
//! differ in the last bits of an f64.
//!
//! What is not exact, and why:
//! - Stamps are each shard's own wall clock: the shards' clocks are as far apart as the
//!   machines' clock sync (NTP: often under a millisecond, sometimes more). Per-request
//!   latencies are differences on one clock and are unaffected; cross-shard quantities (the
//!   benchmark duration, hence throughputs, and the sweep-line time-weighted metrics) carry
//!   the clocks' offset.
//! - Each phase's window (where the time-weighted metrics start, and `start_time` / `end_time`)
//!   is the earliest start to the latest end over the shards' phase manifests.
//! - Server metrics are those of the one shard that scraped (`server_metrics: true` in its
//!   manifest), copied as it wrote them: its own profiling window, not the merged one.
//! - The hidden `requested_osl` column (exported nowhere) is rebuilt only where the record shows
//!   an OSL-mismatch diff.
//!
//! # Failed and missing shards
//!
//! A shard whose summary JSON is missing or says it was cancelled or incomplete, whose JSONL is
//! missing, or whose JSONL ends in a torn line (killed mid-write: skipped and counted), is
//! `failed: <why>`; every record it wrote is merged. A shard index no directory holds is
//! `missing` (a warning). Either way the merged run says `is_complete: false` with the reason,
//! and `was_cancelled` is set when a shard was cancelled or never finished.
//!
//! # Client health
//!
//! Each shard's own verdict (`ringperf.client_health` of its summary) is kept: the merged run
//! kept up only when every shard did; one shard that fell behind makes the merged verdict fall
//! behind, naming it (console and `ringperf.client_health`, with every shard's verdict); a
//! shard without a verdict leaves the run not judged
//! ([`ringperf_metrics::aggregate::health::MergedHealth`]; docs/scale-out.md).
//!
//! # Exit codes
//!
//! [`Outcome::exit_code`]: 0 when every shard finished and a request succeeded; 1 when no
//! request succeeded (as `profile`); 4 when a shard failed or is missing (everything is still
//! written); otherwise 5 when a shard fell behind under its `--max-client-lag-us` (its own exit
//! code); 2 when the merge is refused (nothing written) or fails ([`MergeError`]). `profile`'s
//! 3 (error budget) and 130 (signal) are a shard's own: such a shard is failed here.

pub mod inputs;
pub mod line;
pub mod output;
pub mod records;
pub mod settings;
pub mod sweep;

use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a merge did not happen or did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeError {
    /// The inputs are not one run's shards, or cannot be read: nothing was written.
    Refused(String),
    /// A shard's record or an output file failed mid-merge: the merged directory has no
    /// results-ready marker.
    Failed(String),
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::Refused(m) | MergeError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for MergeError {}

/// How a merge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Where the merged artifacts are.
    pub artifact_dir: PathBuf,
    /// Every shard was present and finished.
    pub complete: bool,
    /// Valid profiling records merged.
    pub successes: u64,
    /// A shard's client itself fell behind (its verdict; a busy host is not the client's).
    pub client_fell_behind: bool,
    /// A shard's client fell behind under its `--max-client-lag-us`: exit code 5.
    pub fails_client_health: bool,
}

/// Merges the shards in `dirs` into `artifact_dir` (default: `merged` beside the first shard
/// found; see the module docs), printing the console export as
/// `profile` does and warnings on stderr.
///
/// # Errors
/// [`MergeError`]: the inputs are refused, or reading or writing failed.
pub fn run(dirs: &[PathBuf], artifact_dir: Option<&Path>) -> Result<Outcome, MergeError> {
    if sweep::is_sweep(dirs) {
        return sweep::run(dirs, artifact_dir);
    }
    run_one(dirs, artifact_dir)
}

/// Merges the shards of one run (see [`run`]).
fn run_one(dirs: &[PathBuf], artifact_dir: Option<&Path>) -> Result<Outcome, MergeError> {
    let found = inputs::find_shards(dirs)?;
    let out = inputs::out_dir(artifact_dir, &found)?;
    let run = inputs::one_run(found)?;
    let lowest = &run.shards[0];
    let settings = settings::Settings::of(&lowest.dir, &lowest.manifest, &out).map_err(|e| {
        MergeError::Refused(format!(
            "{}: cannot rebuild the run's settings from its plan: {e}",
            lowest.dir.display(),
        ))
    })?;
    if !settings.export_level.records() {
        return Err(MergeError::Refused(format!(
            "run {} was made with --export-level summary: its shards wrote no per-request \
             records ({}), and the merged statistics are computed from them; run it again \
             with --export-level records",
            run.run_id, settings.names.jsonl
        )));
    }
    let names = &settings.names;
    let mut states = Vec::with_capacity(run.shards.len());
    let mut sources = Vec::with_capacity(run.shards.len());
    for s in &run.shards {
        let summary = inputs::ShardSummary::read(&s.dir, names);
        // The shard's clock origin gives back its monotonic stamps; without its summary, the
        // shared start, which it waited for before sending anything.
        let origin_ns = summary
            .as_ref()
            .ok()
            .and_then(|s| s.clock)
            .map_or(s.manifest.start_at_ns, |(_, wall)| wall);
        let path = s.dir.join(&names.jsonl);
        let lines = records::ShardLines::open(&path, origin_ns)
            .map_err(|e| MergeError::Refused(format!("cannot open {}: {e}", path.display())))?;
        let spans = inputs::phase_spans(&s.dir, summary.as_ref().ok().and_then(|s| s.window));
        states.push(output::ShardState {
            summary,
            spans,
            has_records: lines.is_some(),
        });
        sources.push(lines);
    }
    for i in &run.missing {
        eprintln!(
            "ringperf: merge: warning: shard {i} of {} is missing (no directory given holds \
             it); the merged run is incomplete",
            run.count
        );
    }

    std::fs::create_dir_all(&out)
        .map_err(|e| MergeError::Failed(format!("cannot create {}: {e}", out.display())))?;
    // A marker left by an earlier merge into this directory must not vouch for this one.
    let _ = std::fs::remove_file(out.join(ringperf_metrics::export::marker::READY_MARKER));
    let jsonl_path = out.join(&names.jsonl);
    let file = std::fs::File::create(&jsonl_path)
        .map_err(|e| MergeError::Failed(format!("cannot create {}: {e}", jsonl_path.display())))?;
    let mut jsonl = std::io::BufWriter::with_capacity(1 << 16, file);
    let tally = records::merge(
        sources,
        &settings.metric_cfg,
        settings.slice_ns,
        &mut jsonl,
        &jsonl_path,
    )?;
    drop(jsonl);
    let written = output::write_artifacts(&out, &run, &settings, &states, &tally)?;
    for s in &written.shards {
        if let ringperf_metrics::export::ShardStatus::Failed(why) = &s.status {
            eprintln!(
                "ringperf: merge: warning: shard {} failed ({why}); its {} profiling record(s) \
                 are merged",
                s.index,
                s.request_count + s.error_request_count
            );
        }
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(written.console.as_bytes());
    let _ = stdout.flush();
    Ok(Outcome {
        artifact_dir: out,
        complete: written.complete,
        successes: written.successes,
        client_fell_behind: written.client_fell_behind,
        fails_client_health: written.fails_client_health,
    })
}
