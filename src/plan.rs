//! The typed plan of a `profile` run: every setting as a typed value, which of them were given
//! explicitly (AIPerf echoes and overlays only those), and the command line the user typed (echoed
//! as `cli_command`, never parsed again).
//!
//! Flags become a plan in [`crate::cli`] (the only module that calls the argument parser); a
//! sweep's variation is its base plan with typed values set ([`Plan::set_swept`]); configuration
//! resolution reads a plan ([`crate::config::Config::from_plan`]); each run writes its plan to its
//! directory as `plan.json` ([`PLAN_FILE`]) and `ringperf merge` reads it back from there.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::{Given, ProfileArgs};

mod adaptive;
mod inline;
mod phase;
mod user_files;

pub use adaptive::AdaptiveSpec;
pub use inline::InlineRecords;
pub use phase::{
    AgenticKeys, FileOnly, FileScenario, Pacing, PhaseSpec, PostProcessSpec, SearchStop,
};
pub use user_files::{UserFile, UserFileFormat, UserFiles};

/// The file a run writes its plan to, in its artifact directory.
pub use ringperf_metrics::export::owned::PLAN_FILE;

/// One `profile` run, typed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Every setting; one not given holds its default.
    pub settings: ProfileArgs,
    /// The settings given explicitly: on the command line, in a config file or by a sweep's
    /// variation.
    pub given: Given,
    /// The command line as the user typed it (with `--config`, the file's flags in its place).
    pub command: Vec<String>,
    /// What a config file sets that no flag can (its phases beyond one warmup and one
    /// profiling phase, its user files).
    #[serde(default, skip_serializing_if = "FileOnly::is_empty")]
    pub file_only: FileOnly,
}

impl Plan {
    /// The setting with flag id `id` was given explicitly.
    pub fn given(&self, id: &str) -> bool {
        self.given.contains_key(id)
    }

    /// The plan of a `ringperf profile …` command line as the user typed it.
    ///
    /// # Errors
    /// The command line does not parse.
    pub fn parse(argv: &[String]) -> Result<Self, clap::Error> {
        let (settings, given) = crate::cli::profile_args(argv)?;
        Ok(Plan {
            settings,
            given,
            command: argv.to_vec(),
            file_only: FileOnly::default(),
        })
    }

    /// Sets a setting with `set` and marks its flag id `id` given, written as `written`.
    pub fn set_given(&mut self, id: &str, set: impl FnOnce(&mut ProfileArgs), written: String) {
        set(&mut self.settings);
        self.given.insert(id.to_owned(), vec![written]);
    }

    /// Sets `--random-seed`, as given.
    pub fn set_seed(&mut self, seed: u64) {
        self.set_given(
            "random_seed",
            |s| s.random_seed = Some(seed),
            seed.to_string(),
        );
    }

    /// The plan with every string holding one of `secrets` redacted (`<redacted>` in its
    /// place): what is written where others may read it.
    ///
    /// # Errors
    /// A redacted string no longer reads as its setting (a secret spelled as a choice).
    pub fn redacted(&self, secrets: &[String]) -> Result<Plan, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        redact(&mut v, secrets);
        serde_json::from_value(v)
    }

    /// Writes the plan to `dir` as [`PLAN_FILE`], `secrets` redacted ([`Plan::redacted`]).
    ///
    /// # Errors
    /// The plan cannot be redacted, or the file cannot be written.
    pub fn write(&self, dir: &Path, secrets: &[String]) -> std::io::Result<()> {
        let plan = self.redacted(secrets).map_err(std::io::Error::other)?;
        let text = serde_json::to_string_pretty(&plan).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(PLAN_FILE), text + "\n")
    }

    /// Reads the plan a run wrote to `dir`.
    ///
    /// # Errors
    /// The file cannot be read, or is not a plan.
    pub fn read(dir: &Path) -> Result<Self, PlanFileError> {
        let path = dir.join(PLAN_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| PlanFileError {
            path: path.clone(),
            why: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| PlanFileError {
            path,
            why: e.to_string(),
        })
    }
}

/// A `plan.json` that cannot be read.
#[derive(Debug)]
pub struct PlanFileError {
    pub path: std::path::PathBuf,
    pub why: String,
}

impl std::fmt::Display for PlanFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

impl std::error::Error for PlanFileError {}

/// Every string of `v` with each of `secrets` replaced by `<redacted>`.
fn redact(v: &mut Value, secrets: &[String]) {
    match v {
        Value::String(s) => {
            for secret in secrets.iter().filter(|s| !s.is_empty()) {
                if s.contains(secret.as_str()) {
                    *s = s.replace(secret.as_str(), "<redacted>");
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, secrets)),
        Value::Object(m) => m.values_mut().for_each(|x| redact(x, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_reads_back_as_written_with_its_secrets_redacted() {
        let argv: Vec<String> = "ringperf profile -m m --api-key sk-123 --concurrency 3 \
                                 --benchmark-duration 5 --benchmark-grace-period inf"
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let plan = Plan::parse(&argv).expect("parses");
        let dir = tempfile::tempdir().expect("tempdir");
        plan.write(dir.path(), &["sk-123".to_owned()])
            .expect("writes");
        let text = std::fs::read_to_string(dir.path().join(PLAN_FILE)).expect("reads");
        assert!(!text.contains("sk-123"), "{text}");
        let back = Plan::read(dir.path()).expect("a plan");
        assert_eq!(back.settings.api_key.as_deref(), Some("<redacted>"));
        assert!(back.settings.benchmark_grace_period.is_infinite());
        let mut expected = plan.clone();
        expected.settings.api_key = Some("<redacted>".into());
        expected
            .given
            .insert("api_key".into(), vec!["<redacted>".into()]);
        expected.command[5] = "<redacted>".into();
        assert_eq!(back, expected);
    }
}
