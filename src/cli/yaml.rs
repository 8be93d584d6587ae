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
    Validate(ValidateArgs),
    /// List the variations a config file runs (a sweep's, or the one `base` run), as AIPerf's
    /// `config expand`.
    Expand(ExpandArgs),
    /// List, search, print or write config templates (AIPerf 0.13's names and settings).
    Init(InitArgs),
}

/// `ringperf config validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The config file (also `--config-file FILE`, as AIPerf takes it).
    #[arg(value_name = "CONFIG-FILE", required_unless_present = "config_file")]
    pub file: Option<PathBuf>,
    #[arg(long = "config-file", hide = true, conflicts_with = "file")]
    pub config_file: Option<PathBuf>,
}

impl ValidateArgs {
    /// The file, however it was given.
    pub fn path(&self) -> PathBuf {
        self.file
            .clone()
            .or(self.config_file.clone())
            .unwrap_or_default()
    }
}

/// `ringperf config expand` (AIPerf 0.13's options, and `--as-flags`).
#[derive(Debug, Args)]
pub struct ExpandArgs {
    /// The config file (also `--config-file FILE`, as AIPerf takes it).
    #[arg(value_name = "CONFIG-FILE", required_unless_present = "config_file")]
    pub file: Option<PathBuf>,
    #[arg(long = "config-file", hide = true, conflicts_with = "file")]
    pub config_file: Option<PathBuf>,
    /// Also print each variation's configuration, as ringperf resolves it (its
    /// `input_config`).
    #[arg(long, short = 'F', overrides_with = "no_full")]
    pub full: bool,
    #[arg(long = "no-full", hide = true)]
    pub no_full: bool,
    /// Only the variation at this index, from 0 (implies --full).
    #[arg(long, short = 'i', allow_negative_numbers = true)]
    pub index: Option<i64>,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = ExpandFormatArg::Text)]
    pub format: ExpandFormatArg,
    /// Print the equivalent `ringperf profile` command line and the normalised file (JSON)
    /// instead (ringperf's own; the other options are ignored).
    #[arg(long)]
    pub as_flags: bool,
}

impl ExpandArgs {
    /// The file, however it was given.
    pub fn path(&self) -> PathBuf {
        self.file
            .clone()
            .or(self.config_file.clone())
            .unwrap_or_default()
    }
}

/// `config expand --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExpandFormatArg {
    Text,
    Yaml,
    Json,
}

/// `ringperf config init` (AIPerf 0.13's options).
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Template name to print or write (e.g. `minimal`, `goodput_slo`).
    #[arg(long, short = 't')]
    pub template: Option<String>,
    /// List the templates and exit.
    #[arg(long, short = 'l', overrides_with = "no_list")]
    pub list: bool,
    #[arg(long = "no-list", hide = true)]
    pub no_list: bool,
    /// List the templates a keyword matches (name, title, description, category, tags,
    /// features).
    #[arg(long, short = 's')]
    pub search: Option<String>,
    /// With --list: only the categories containing this.
    #[arg(long, short = 'c')]
    pub category: Option<String>,
    /// Add the tags and difficulty columns.
    #[arg(long, short = 'v', overrides_with = "no_verbose")]
    pub verbose: bool,
    #[arg(long = "no-verbose", hide = true)]
    pub no_verbose: bool,
    /// Replace the template's model name.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Replace the template's endpoint URL.
    #[arg(long, short = 'u')]
    pub url: Option<String>,
    /// Write to this file (its directories made, an existing file replaced) instead of
    /// stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}
