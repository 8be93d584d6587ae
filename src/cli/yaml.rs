//! `profile --config/-f FILE` and the `ringperf config` command (AIPerf 0.13 YAML configs;
//! docs/config-files.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// YAML config: the run described by an AIPerf 0.13 config file.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct YamlArgs {
    /// An AIPerf 0.13 YAML config file; flags given beside it override its values.
    #[arg(
        long = "config",
        short = 'f',
        value_name = "FILE",
        help_heading = "YAML config"
    )]
    pub config: Option<PathBuf>,
}

/// `ringperf config …`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file (exit 0: valid, 1: refused, with the reason).
    Validate { file: PathBuf },
    /// Print the run a config file resolves to: the equivalent `ringperf profile` flags and
    /// the normalised config.
    Expand { file: PathBuf },
    /// List ringperf's templates, or print / write one.
    Init {
        /// The template to print or write (none: list them).
        template: Option<String>,
        /// List only templates whose name or description contains this.
        #[arg(long)]
        search: Option<String>,
        /// Write the template here instead of printing it.
        #[arg(long, short = 'o')]
        output: Option<PathBuf>,
        /// Overwrite the output file.
        #[arg(long)]
        force: bool,
    },
}
