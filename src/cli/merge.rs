//! Flags of `ringperf merge`: the shards' artifact directories and where the merged run goes.
//! ringperf's own subcommand (AIPerf has none); see `crate::merge`.

use std::path::PathBuf;

use clap::Args;

/// Flags of `ringperf merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// A shard's artifact directory (it holds shard.json), or a directory whose immediate
    /// sub-directories are shards' (e.g. artifacts/ holding shard-0/, shard-1/).
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Where the merged artifacts go (default: `merged` beside the first shard directory).
    /// Never a shard's directory or inside one.
    #[arg(
        short = 'o',
        long = "output-artifact-dir",
        visible_alias = "artifact-dir"
    )]
    pub artifact_dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn merge_takes_directories_and_an_output() {
        let cli = Cli::try_parse_from(["ringperf", "merge", "a", "b", "--artifact-dir", "out"])
            .expect("parses");
        let Command::Merge(m) = cli.command else {
            panic!("not merge")
        };
        assert_eq!(m.dirs, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(m.artifact_dir, Some(PathBuf::from("out")));
        assert!(
            Cli::try_parse_from(["ringperf", "merge"]).is_err(),
            "a directory is required"
        );
    }
}
