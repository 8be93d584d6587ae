//! Flags of `ringperf plot`: the artifact directories to plot and where the report goes.
//! AIPerf 0.13 has `aiperf plot`; ringperf's writes one self-contained HTML page (`ringperf_plot::plot`).

use std::path::PathBuf;

use clap::Args;

/// Flags of `ringperf plot`.
#[derive(Debug, Args, Clone)]
pub struct PlotArgs {
    /// An artifact directory of `ringperf profile` (a single run, a multi-run directory with
    /// profile_runs/ and aggregate/, a sweep or search, or a directory of shards with merged/).
    /// Several directories are drawn side by side.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Where report.html and plots/ go (default: the first directory).
    #[arg(long = "output", short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn plot_takes_directories_and_an_output() {
        let cli =
            Cli::try_parse_from(["ringperf", "plot", "a", "b", "--output", "out"]).expect("parses");
        let Command::Plot(p) = cli.command else {
            panic!("not plot")
        };
        assert_eq!(p.dirs, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(p.output, Some(PathBuf::from("out")));
        assert!(Cli::try_parse_from(["ringperf", "plot"]).is_err());
    }
}
