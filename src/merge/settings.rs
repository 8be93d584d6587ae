//! The run's settings, rebuilt from the plan a shard wrote to its directory (`plan.json`): the
//! same plan through the same [`Config::from_plan`] as the shard, so the merge computes the
//! metrics the shards computed (which apply, goodput SLOs, thresholds) and names the files as
//! they named theirs.
//!
//! Rebuilding must not need the machine the shard ran on. Two parts of validation reach beyond
//! the flags, and the merge takes them out:
//! - every `--url` is resolved (a DNS lookup of a server the merge machine may not even see):
//!   each is replaced by a loopback stand-in with the same scheme, port and path, and the
//!   echoed `endpoint.urls` are put back as given;
//! - `--system-prompt-file` is read: a file that is not on this machine is left out (it shapes
//!   the prompts, not the metrics).
//!
//! The shard's place (`--shard-index`, `--shard-count`, `--start-at`) is taken from the manifest
//! itself, not from the plan: a shard may have had them from its environment
//! (`RINGPERF_SHARD_*`, Kubernetes' `JOB_COMPLETION_INDEX`), which the merge's is not.
//!
//! A dataset file (`--input-file`) is not read by validation; the echo of a timestamped trace's
//! fixed schedule does depend on it, which is why the merged `input_config` is taken from a
//! shard's own summary JSON when one has it (see `super::output`).

use std::path::Path;

use serde_json::Value;

use crate::cli::ProfileArgs;
use crate::cli::shard::ShardArgs;
use crate::config::{Config, ConfigError, ExportLevel};
use crate::plan::{Plan, PlanFileError};
use ringperf_metrics::aggregate::MetricConfig;
use ringperf_metrics::export::ExportNames;
use ringperf_metrics::export::shard::ShardManifest;

/// What the merge needs of the run's configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Which metrics apply and the goodput SLOs, as `run` builds them.
    pub metric_cfg: MetricConfig,
    /// The export file names (`--profile-export-prefix`).
    pub names: ExportNames,
    /// `--export-level`.
    pub export_level: ExportLevel,
    /// `--slice-duration`, ns.
    pub slice_ns: Option<u64>,
    /// The console title after `ringperf | `.
    pub metrics_title: String,
    /// `--show-trace-timing`.
    pub show_trace_timing: bool,
    /// `--random-seed`, when given.
    pub random_seed: Option<u64>,
    /// The command line as the run echoes it, secrets redacted.
    pub cli_command: String,
    /// The `input_config` echo of the command line, writing to the merge's directory.
    pub input_config: Value,
}

/// Why a shard's plan gives no settings.
#[derive(Debug)]
pub enum SettingsError {
    /// Its `plan.json` cannot be read.
    Unreadable(PlanFileError),
    /// Its settings do not validate.
    Invalid(ConfigError),
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Unreadable(e) => write!(f, "{e}"),
            SettingsError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Unreadable(e) => Some(e),
            SettingsError::Invalid(e) => Some(e),
        }
    }
}

impl Settings {
    /// The settings of the run `shard` (whose directory is `dir`) belongs to, from the plan it
    /// wrote there; the echo names `out` as the artifact directory.
    ///
    /// # Errors
    /// [`SettingsError`]: the plan cannot be read or its settings do not validate.
    pub fn of(dir: &Path, shard: &ShardManifest, out: &Path) -> Result<Self, SettingsError> {
        let plan = Plan::read(dir).map_err(SettingsError::Unreadable)?;
        Self::of_plan(plan, shard, out)
    }

    /// [`Settings::of`] from the shard's plan.
    ///
    /// # Errors
    /// Its settings do not validate.
    pub fn of_plan(
        mut plan: Plan,
        shard: &ShardManifest,
        out: &Path,
    ) -> Result<Self, SettingsError> {
        let mut args = detached(plan.settings);
        args.artifact_dir = Some(out.to_path_buf());
        args.shard = ShardArgs {
            shard_index: Some(shard.index),
            shard_count: Some(shard.count),
            start_at: Some(shard.start_at_ns.to_string()),
        };
        let given_urls = args.url.clone();
        if !args.mock {
            args.url = given_urls.iter().map(|u| loopback_stand_in(u)).collect();
        }
        let mock = args.mock;
        plan.settings = args;
        let cfg = Config::from_plan(&plan, false).map_err(SettingsError::Invalid)?;
        let mut input_config = cfg.input_config();
        if !mock
            && let Some(urls) = input_config
                .get_mut("endpoint")
                .and_then(|e| e.get_mut("urls"))
        {
            *urls = Value::from(given_urls.iter().map(|u| echoed_url(u)).collect::<Vec<_>>());
        }
        Ok(Self {
            metric_cfg: MetricConfig {
                goodput: cfg.goodput.clone(),
                ..crate::config::metric_config(
                    cfg.endpoint,
                    cfg.streaming,
                    cfg.use_server_token_count,
                )
            },
            names: ExportNames::new(cfg.export_prefix.as_deref()),
            export_level: cfg.export_level,
            slice_ns: cfg
                .slice_duration
                .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64),
            metrics_title: cfg.endpoint.metrics_title().to_string(),
            show_trace_timing: cfg.show_trace_timing,
            random_seed: cfg.seed_given.then_some(cfg.seed),
            cli_command: cfg.cli_command,
            input_config,
        })
    }
}

/// `args` without what only the shard's machine has: a `--system-prompt-file` absent here.
fn detached(mut args: ProfileArgs) -> ProfileArgs {
    if args
        .prompt
        .system_prompt_file
        .as_deref()
        .is_some_and(|p| !p.is_file())
    {
        args.prompt.system_prompt_file = None;
    }
    args
}

/// `raw` with its host replaced by `127.0.0.1`: same scheme, port and path, nothing to resolve.
fn loopback_stand_in(raw: &str) -> String {
    let raw = raw.trim();
    let (scheme, rest) = raw.split_once("://").unwrap_or(("http", raw));
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let port = match authority.find(']') {
        Some(end) => authority[end + 1..].strip_prefix(':'),
        None => authority.rsplit_once(':').map(|(_, p)| p),
    };
    match port {
        Some(p) => format!("{scheme}://127.0.0.1:{p}{path}"),
        None => format!("{scheme}://127.0.0.1{path}"),
    }
}

/// A `--url` as the `input_config` echo writes it: `http://` added when it has no scheme.
fn echoed_url(raw: &str) -> String {
    if raw.contains("://") {
        raw.to_string()
    } else {
        format!("http://{raw}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shard 1 of 2 of a run.
    fn shard() -> ShardManifest {
        ShardManifest {
            run_id: "0123456789ab".into(),
            index: 1,
            count: 2,
            start_at_ns: 1_800_000_000_000_000_000,
            workload: "00".into(),
            server_metrics: false,
            argv: Vec::new(),
            ringperf_version: "0".into(),
        }
    }

    /// The settings of shard 1 of 2 of a run that ran `line`, merged into `/tmp/merged`.
    fn settings(line: &str) -> Result<Settings, SettingsError> {
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let plan = Plan::parse(&argv).expect("parses");
        Settings::of_plan(plan, &shard(), Path::new("/tmp/merged"))
    }

    #[test]
    fn stand_ins_keep_scheme_port_and_path() {
        assert_eq!(
            loopback_stand_in("http://vllm.svc:8000/v1"),
            "http://127.0.0.1:8000/v1"
        );
        assert_eq!(
            loopback_stand_in("https://api.example"),
            "https://127.0.0.1"
        );
        assert_eq!(loopback_stand_in("host:9"), "http://127.0.0.1:9");
        assert_eq!(
            loopback_stand_in("http://[::1]:81?x"),
            "http://127.0.0.1:81?x"
        );
        assert_eq!(echoed_url("host:9"), "http://host:9");
    }

    #[test]
    fn a_server_the_merge_machine_cannot_resolve_is_not_looked_up() {
        // The shard's index, count and start came from its environment: not in its plan.
        let s = settings(
            "ringperf profile -m m --url http://no-such-host.invalid:8000 --streaming \
             --concurrency 4 --request-count 20 --goodput time_to_first_token:50 \
             --profile-export-prefix run --slice-duration 2 --random-seed 7 \
             --system-prompt-file /no/such/file",
        )
        .unwrap();
        assert!(s.metric_cfg.streaming);
        assert_eq!(s.metric_cfg.goodput.len(), 1);
        assert_eq!(s.names, ExportNames::new(Some("run")));
        assert_eq!(s.slice_ns, Some(2_000_000_000));
        assert_eq!(s.random_seed, Some(7));
        assert_eq!(s.metrics_title, "LLM Metrics");
        assert_eq!(
            s.input_config["endpoint"]["urls"],
            serde_json::json!(["http://no-such-host.invalid:8000"])
        );
        assert_eq!(s.input_config["artifacts"]["dir"], "/tmp/merged");
        assert!(
            s.cli_command.contains("no-such-host.invalid"),
            "{}",
            s.cli_command
        );
    }

    #[test]
    fn a_missing_or_foreign_plan_and_invalid_settings_are_refused() {
        let out = Path::new("/tmp/merged");
        let dir = tempfile::tempdir().unwrap();
        let e = Settings::of(dir.path(), &shard(), out).unwrap_err();
        assert!(matches!(e, SettingsError::Unreadable(_)), "{e}");
        assert!(e.to_string().contains("plan.json"), "{e}");
        std::fs::write(dir.path().join(crate::plan::PLAN_FILE), "{\"x\": 1}").unwrap();
        let e = Settings::of(dir.path(), &shard(), out).unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
        let e = settings("ringperf profile --url x").unwrap_err();
        assert!(e.to_string().contains("--model"), "{e}");
    }
}
