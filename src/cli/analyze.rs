//! `ringperf analyze …`: tools over a finished run's artifacts, as AIPerf 0.13's `aiperf
//! analyze` (docs/plots.md, "Swim lane").

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `ringperf analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(subcommand)]
    pub command: AnalyzeCommand,
}

#[derive(Debug, Subcommand)]
pub enum AnalyzeCommand {
    /// Render a per-session swim-lane PNG with the concurrency curve underneath.
    SwimLane(SwimLaneArgs),
}

/// `ringperf analyze swim-lane RUN_DIR... [-o OUT] [-c N] [--ramp S] [--html]`.
#[derive(Debug, Args)]
pub struct SwimLaneArgs {
    /// One or more run directories (each with a profile_export.jsonl).
    pub run_dirs: Vec<PathBuf>,
    /// Output PNG path (default `<run_dir>/swim_lane.png`); only with a single run directory.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Target concurrency, drawn as a reference line under the lanes.
    #[arg(short = 'c', long)]
    pub concurrency: Option<u64>,
    /// Ramp duration in seconds for the ramp-done line, over the one in
    /// profile_export_aiperf.json.
    #[arg(long)]
    pub ramp: Option<f64>,
    /// Also write the interactive viewer (`swim_lane.html`, or the `--out` path with `.html`).
    #[arg(long)]
    pub html: bool,
}

impl SwimLaneArgs {
    /// The typed job the plot crate runs.
    pub fn job(&self) -> ringperf_plot::plot::swim_cmd::SwimLaneJob {
        ringperf_plot::plot::swim_cmd::SwimLaneJob {
            run_dirs: self.run_dirs.clone(),
            out: self.out.clone(),
            concurrency: self.concurrency,
            ramp: self.ramp,
            html: self.html,
        }
    }
}
