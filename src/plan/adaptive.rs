//! A phase's `adaptive_scale` settings as a config file gives them (AIPerf 0.13's twelve flat
//! phase fields, after its nested block is lowered onto them): each one the file set, so that
//! `input_config` echoes only those, and the maximum the phase implies when the file gives
//! none.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use ringperf_metrics::adaptive::settings::{ControlVariable, Settings, SlaFilter, StepPolicy};

/// The adaptive fields of one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveSpec {
    /// `adaptive_scale` (or the block's `enabled`).
    pub enabled: bool,
    /// `timing_mode: adaptive_scale`: the controller runs whatever `enabled` says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timing_mode: bool,
    pub sustain_duration: Option<f64>,
    pub assessment_period: Option<f64>,
    pub min_completed_requests: Option<u64>,
    pub control_variable: Option<ControlVariable>,
    pub control_min: Option<f64>,
    pub control_max: Option<f64>,
    /// `ramp_until_fail` when written (its only value).
    pub strategy_type: bool,
    pub step_policy: Option<StepPolicy>,
    pub base_step: Option<u64>,
    pub max_step_multiplier: Option<u64>,
    pub step_percent: Option<f64>,
    /// The phase's `sla` (the block's, or the phase's own), as a list.
    pub sla: Vec<SlaFilter>,
    /// The maximum the phase implies for its variable (its `concurrency`, `rate`, …).
    pub inferred_max: Option<f64>,
}

impl AdaptiveSpec {
    /// The controller runs for this phase.
    pub fn runs(&self) -> bool {
        self.enabled || self.timing_mode
    }

    /// The settings the controller runs with: AIPerf's defaults for what the file leaves out
    /// (a 30 s assessment period).
    ///
    /// `phase_max`: the maximum the resolved phase implies (its concurrency, prefill limit or
    /// rate, after the flags beside the file and a sweep's variation), in place of the file's.
    ///
    /// # Errors
    /// AIPerf's phase-start messages for what only `timing_mode` could leave unset.
    pub fn settings(&self, phase_max: Option<f64>) -> Result<Settings, String> {
        let variable = self
            .control_variable
            .unwrap_or(ControlVariable::Concurrency);
        let Some(sustain_s) = self.sustain_duration else {
            return Err("adaptive_sustain_duration_sec is required".into());
        };
        if self.sla.is_empty() {
            return Err("adaptive_sla_filters is required".into());
        }
        let min = self.control_min.unwrap_or(1.0);
        let Some(max) = self.control_max.or(phase_max).or(self.inferred_max) else {
            return Err(format!(
                "adaptive {} max must be an integer >= 1, got None",
                variable.name()
            ));
        };
        let (min, max) = if variable.integer() {
            (min.trunc(), max.trunc())
        } else {
            (min, max)
        };
        if max <= min {
            return Err(format!("adaptive {} max must be > min", variable.name()));
        }
        Ok(Settings {
            variable,
            min,
            max,
            assessment_period_s: self.assessment_period.unwrap_or(30.0),
            sustain_s,
            min_completed: self.min_completed_requests.unwrap_or(1),
            step_policy: self.step_policy.unwrap_or(StepPolicy::SlaMargin),
            base_step: self.base_step.unwrap_or(10),
            max_step_multiplier: self.max_step_multiplier.unwrap_or(4),
            step_percent: self.step_percent.unwrap_or(25.0),
            sla: self.sla.clone(),
        })
    }

    /// The fields `input_config` echoes before the phase's own (those the file set, in AIPerf's
    /// field order, `adaptive_scale` always).
    pub fn echo_head(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("adaptive_scale".into(), json!(self.enabled));
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put(
            "adaptive_sustain_duration",
            self.sustain_duration.map(|v| json!(v)),
        );
        put(
            "adaptive_assessment_period",
            self.assessment_period.map(|v| json!(v)),
        );
        put(
            "adaptive_min_completed_requests",
            self.min_completed_requests.map(|v| json!(v)),
        );
        put(
            "adaptive_control_variable",
            self.control_variable.map(|v| json!(v.name())),
        );
        put("adaptive_control_min", self.control_min.map(|v| json!(v)));
        put("adaptive_control_max", self.control_max.map(|v| json!(v)));
        put(
            "adaptive_scale_strategy_type",
            self.strategy_type.then(|| json!("ramp_until_fail")),
        );
        put(
            "adaptive_scale_step_policy",
            self.step_policy.map(|v| json!(v.name())),
        );
        put("adaptive_scale_base_step", self.base_step.map(|v| json!(v)));
        put(
            "adaptive_scale_max_step_multiplier",
            self.max_step_multiplier.map(|v| json!(v)),
        );
        put(
            "adaptive_scale_step_percent",
            self.step_percent.map(|v| json!(v)),
        );
        m
    }

    /// The phase's `sla` as `input_config` echoes it (after the phase's own fields).
    pub fn echo_sla(&self) -> Option<Value> {
        (!self.sla.is_empty()).then(|| json!(self.sla))
    }
}
