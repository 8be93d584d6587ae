//! What a variation gave ([`VariationResult`]), read by the runner, the output files and a
//! planner alike.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::plan::{SweepPlan, Variation};
use crate::run::Outcome;
use crate::run::convergence::Decision;
use ringperf_metrics::export::aggregate::{Aggregate, RunResult};

/// One finished run of a variation.
#[derive(Debug)]
pub struct TrialResult {
    /// The trial, from 0.
    pub trial: u32,
    /// The run's directory.
    pub dir: PathBuf,
    /// Its summary JSON (`profile_export_aiperf.json`, or the `--profile-export-prefix` name).
    pub summary: PathBuf,
    /// Its per-request JSONL (`profile_export.jsonl`, written with `--export-level records`).
    pub records: PathBuf,
    /// How the run ended.
    pub outcome: Outcome,
}

/// What one variation gave: its runs, the aggregate across the runs that count, and the
/// verdicts a planner needs.
#[derive(Debug)]
pub struct VariationResult {
    /// The variation.
    pub variation: Variation,
    /// Its runs, in order (a run cancelled by a signal included).
    pub trials: Vec<TrialResult>,
    /// Each run as the aggregate sees it (`run_NNNN`, its metrics or why it does not count).
    pub runs: Vec<RunResult>,
    /// The aggregate across the runs that count: every `<tag>_<stat>` of the summary JSON
    /// with its mean, std, CI... (as `profile_export_aiperf_aggregate.json` has them). `None`
    /// when no run counted.
    pub aggregate: Option<Aggregate>,
    /// The client itself fell behind in at least one run (its client-health verdict, with or
    /// without `--max-client-lag-us`): the figures measure the client, not the server; never
    /// choose this variation as an answer.
    pub client_fell_behind: bool,
    /// A signal stopped the sweep during or before this variation's last trial.
    pub cancelled: bool,
    /// The convergence decision after the last trial, with `--convergence-metric`.
    pub convergence: Option<Decision>,
}

impl VariationResult {
    /// The mean across trials of `<tag>_<stat>` (`request_throughput_avg`,
    /// `time_to_first_token_p99`), in the metric's unit; `None` when absent or no run counted.
    pub fn mean(&self, tag: &str, stat: &str) -> Option<f64> {
        let key = format!("{tag}_{stat}");
        self.aggregate
            .as_ref()?
            .metrics
            .iter()
            .find(|m| m.key == key)
            .map(|m| m.stats.mean)
            .filter(|v| v.is_finite())
    }

    /// Successful requests over the variation's runs.
    pub fn successes(&self) -> u64 {
        self.trials.iter().map(|t| t.outcome.successes).sum()
    }

    /// Failed requests over the variation's runs.
    pub fn errors(&self) -> u64 {
        self.trials.iter().map(|t| t.outcome.errors).sum()
    }

    /// The variation has figures a planner may use: some run counted, the client kept up and
    /// no signal cut it short.
    pub fn usable(&self) -> bool {
        self.aggregate.is_some() && !self.client_fell_behind && !self.cancelled
    }
}

/// `metadata` additions of a variation's aggregate: its label, values and the sweep mode.
pub(crate) fn variation_metadata(plan: &SweepPlan, v: &Variation) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("variation_label".into(), Value::from(v.label.clone()));
    m.insert("variation_values".into(), Value::Object(v.values_json()));
    m.insert("sweep_mode".into(), Value::from(plan.mode.as_str()));
    m
}
