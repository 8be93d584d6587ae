//! `input_config`: the command line echoed in the JSON exports, in AIPerf 0.13's shape.
//!
//! AIPerf echoes what the user set on the command line, plus the few values it derives from
//! them, never its defaults: a key is present when its flag was given (clap's
//! [`ValueSource::CommandLine`]), with these derived exceptions (AIPerf's converter rules):
//!
//! - `models`, `endpoint.urls`, `datasets[0].{name,type}`, the synthetic `prompts.isl.mean`,
//!   every phase's `name`, `kind`, `type` and the profiling phase's default 10 `requests`;
//! - `datasets[0].entries` from `--num-dataset-entries`, else `--conversation-num`, else
//!   `--request-count`;
//! - a duration phase's `grace_period` (its default 30 s too); a warmup's `concurrency` when
//!   it runs closed loop (its own, else `--concurrency`, else 1) and its rate settings from the
//!   profiling flags;
//! - `artifacts.auto_plot` and `artifacts.plot_required` (the flags, false when not given),
//!   `gpu_telemetry.{enabled,urls,collector,mode}`,
//!   `server_metrics.{enabled,urls,formats}`, `network_latency` (`enabled`, then `mean_ms` or
//!   the `ping_interval` given), `otel`
//!   (`metrics_url` normalised, then the companions given), empty `mlflow`, `wandb`, and `runtime.ui` (`none` when stdout is not a terminal);
//! - `slos` with `--goodput`: each pair's number as a float, in the order given.
//!
//! ringperf-only flags that were given go under a `ringperf` key. Secrets are `<redacted>`.

use serde_json::{Map, Value, json};

use super::{Arrival, Config, IoDriver, Load, PhaseConfig, timing};
use crate::cli::{
    ArrivalPatternArg, ConnectionReuseArg, ExportLevelArg, LogLevelArg, ProfileArgs, UiTypeArg,
};
use crate::plan::Plan;
use ringperf_metrics::server_metrics::output::Format;

/// The run's plan, kept for the echo (and written to the run's directory).
#[derive(Clone, Debug)]
pub struct Echo {
    plan: Box<Plan>,
    is_tty: bool,
    /// One run of a repeated profile (`--num-profile-runs`): see [`Echo::set_repeated_run`].
    repeated_run: bool,
}

impl Echo {
    /// The echo of `plan`.
    pub fn new(plan: &Plan, is_tty: bool) -> Self {
        Echo {
            plan: Box::new(plan.clone()),
            is_tty,
            repeated_run: false,
        }
    }

    /// The plan echoed.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The flag with clap id `id` was given explicitly.
    pub fn given(&self, id: &str) -> bool {
        self.plan.given(id)
    }

    /// The key of a length's center: `value` for one a config file gives as a fixed value
    /// (without a spread), as AIPerf echoes it; else `mean`.
    fn center(&self, flag: &str, stddev_id: &str) -> &'static str {
        let fixed = self.plan.file_only.fixed.iter().any(|f| f == flag);
        if fixed && !self.given(stddev_id) {
            "value"
        } else {
            "mean"
        }
    }

    /// The distribution a config file gives the length of `flag`, while its mean is still the
    /// file's `mean` (a flag beside the file that changes it is echoed as a flag).
    fn drawn(&self, flag: &str, mean: u64) -> Option<Value> {
        (self.plan.file_only.drawn.iter())
            .find(|(f, m, _)| f == flag && *m == mean)
            .map(|(_, _, v)| v.clone())
    }

    /// A length's distribution `d` with the `min` and `max` the file gives it first, as AIPerf's
    /// model writes them.
    fn bounded(&self, flag: &str, d: Value) -> Value {
        let (Some((_, lo, hi)), Value::Object(rest)) =
            (self.plan.file_only.bounds.iter().find(|b| b.0 == flag), &d)
        else {
            return d;
        };
        let mut m = Map::new();
        if let Some(lo) = lo {
            m.insert("min".into(), float(*lo));
        }
        if let Some(hi) = hi {
            m.insert("max".into(), float(*hi));
        }
        m.extend(rest.clone());
        Value::Object(m)
    }

    /// Echo one run of a repeated profile. AIPerf 0.13 starts each run from its whole
    /// configuration written out (`run_config.json`), so each run's `input_config` also holds
    /// the top-level sections the command line left at their defaults: `logging` (its level),
    /// `metrics` (empty) and `unsafe_override` (false).
    pub fn set_repeated_run(&mut self) {
        self.repeated_run = true;
    }

    /// Echo `dir` as the artifact directory: each of a repeated profile's runs names its own
    /// (`profile_runs/run_NNNN`), as AIPerf's do.
    pub(super) fn set_artifact_dir(&mut self, dir: &std::path::Path) {
        self.plan.settings.artifact_dir = Some(dir.to_path_buf());
    }
}

/// The flags the flag table writes at an AIPerf config path as text (`cli::flags`), given:
/// `(path, value)`, for the section `section` (`endpoint`).
fn text_flags<'a>(
    e: &'a Echo,
    section: &'a str,
) -> impl Iterator<Item = (&'static str, String)> + 'a {
    crate::cli::flags::text_flags()
        .filter(move |(path, _)| path.split('.').next() == Some(section))
        .filter_map(move |(path, id)| {
            let value = e.plan.given.get(id)?.last()?.clone();
            Some((&path[section.len() + 1..], value))
        })
}

fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// `Some(x)` → `x` as a JSON float (AIPerf's float fields print `1.0`, not `1`).
fn float(x: f64) -> Value {
    json!(x)
}

/// `tokenizer`: each of the group's flags that was given, under AIPerf's key; the builtin
/// tokenizer ringperf picks for a placeholder model name (`--mock`'s `mock-model`) is echoed as
/// given, as AIPerf's run of the same benchmark has to give it (`--tokenizer builtin`).
fn tokenizer(e: &Echo) -> Value {
    let a = &e.plan.settings;
    let mut m = Map::new();
    if let Some(t) = &a.tokenizer {
        m.insert("name".into(), json!(t));
    } else if super::tokenizer_spec(a).as_deref() == Some("builtin") {
        m.insert("name".into(), json!("builtin"));
    }
    let o = &a.tokenizer_opts;
    if let Some(r) = o
        .tokenizer_revision
        .as_ref()
        .filter(|_| e.given("tokenizer_revision"))
    {
        m.insert("revision".into(), json!(r));
    }
    if e.given("trust_remote_code") {
        m.insert("trust_remote_code".into(), json!(o.trust_remote_code));
    }
    if e.given("apply_chat_template") {
        m.insert("apply_chat_template".into(), json!(o.apply_chat_template));
    }
    Value::Object(m)
}

/// The `input_config` of `cfg` (see the module documentation for the rule).
pub fn input_config(cfg: &Config) -> Value {
    let e = &cfg.echo;
    let mut top = Map::new();
    let mut models = Map::new();
    if e.given("model_selection_strategy") {
        let strategy = enum_name(&e.plan.settings.requests.model_selection_strategy);
        models.insert("strategy".into(), strategy);
    }
    let items = cfg.models.iter().map(|m| json!({"name": m})).collect();
    models.insert("items".into(), Value::Array(items));
    top.insert("models".into(), Value::Object(models));
    top.insert("endpoint".into(), endpoint(cfg, e));
    let mut d = dataset(cfg, e);
    if let (Some(name), Value::Object(m)) = (&e.plan.file_only.dataset_name, &mut d) {
        m.insert("name".into(), json!(name));
    }
    top.insert("datasets".into(), Value::Array(vec![d]));
    // A warmup of its own is echoed as the file gives it; none when the run has no warmup (a
    // repeated run's later runs, `disable_warmup_after_first`).
    let mut phases = Vec::new();
    let agentic = matches!(cfg.profiling.timing.mode, timing::Mode::Agentic(_));
    // Agentic replay's own warmup is not a phase of the file's (AIPerf echoes the file's
    // warmups, which it does not run).
    let declared = |phases: &mut Vec<Value>| {
        let specs = e.plan.file_only.phases_before.iter();
        phases.extend(specs.map(|s| with_adaptive(spec_phase(s), s.adaptive.as_ref())));
    };
    if agentic {
        if cfg.warmup.is_some() {
            declared(&mut phases);
        }
    } else if let Some(w) = &cfg.warmup {
        match e.plan.file_only.phases_before.as_slice() {
            [] => {
                let flags = phase(e, "warmup", w);
                phases.push(match flags {
                    Value::Object(m) => with_agentic(m, &e.plan.file_only.warmup_agentic),
                    other => other,
                });
            }
            _ => declared(&mut phases),
        }
    }
    let mut profiling = phase(e, "profiling", &cfg.profiling);
    if let Some(m) = profiling.as_object_mut() {
        m.insert("name".into(), json!(cfg.profiling_name));
        if let (false, Some(mode)) = (agentic, &e.plan.file_only.profiling_timing_mode) {
            // The last of the fields every phase type has, before its type's own.
            const OWN: [&str; 8] = [
                "rate",
                "smoothness",
                "users",
                "rate_ramp",
                "rate_series",
                "auto_offset",
                "start_offset",
                "end_offset",
            ];
            let at = (m.keys())
                .position(|k| OWN.contains(&k.as_str()))
                .unwrap_or(m.len());
            m.shift_insert(at, "timing_mode".into(), json!(mode));
        }
        if agentic {
            let g = &e.plan.settings.agentic;
            m.insert("timing_mode".into(), json!("agentic_replay"));
            if let Some(r) = g.trajectory_start_min_ratio {
                m.insert("trajectory_start_min_ratio".into(), float(r));
            }
            if let Some(r) = g.trajectory_start_max_ratio {
                m.insert("trajectory_start_max_ratio".into(), float(r));
            }
            if g.burst_phase_starts {
                m.insert("burst_phase_starts".into(), json!(true));
            }
            if let Some(s) = g.system_idle_gap_cap_seconds {
                m.insert("system_idle_gap_cap_seconds".into(), float(s));
            }
            if let Some(s) = g.agentic_cache_warmup_duration {
                m.insert("agentic_cache_warmup_duration".into(), float(s));
            }
            if let Some(s) = g.agentic_warmup_grace_period {
                m.insert("agentic_warmup_grace_period".into(), float(s));
            }
        }
    }
    phases.push(with_adaptive(
        profiling,
        e.plan.file_only.profiling_adaptive.as_ref(),
    ));
    // The later phases the run has (a repeated run's later runs drop their warmups; agentic
    // replay's first run echoes the warmups it does not run).
    let agentic_first = agentic && cfg.warmup.is_some();
    phases.extend(
        (e.plan.file_only.phases_after.iter())
            .filter(|s| agentic_first || (cfg.phases_after.iter()).any(|p| p.name == s.name))
            .map(|s| with_adaptive(spec_phase(s), s.adaptive.as_ref())),
    );
    // A ramp's curve as the file names it.
    for (name, key, curve) in &e.plan.file_only.ramp_strategies {
        let ramp = phases
            .iter_mut()
            .filter(|p| p["name"] == name.as_str())
            .filter_map(|p| p.get_mut(key.as_str()))
            .filter_map(Value::as_object_mut);
        for r in ramp {
            r.insert("strategy".into(), json!(curve));
        }
    }
    top.insert("phases".into(), Value::Array(phases));
    top.insert("artifacts".into(), artifacts(e));
    let a = &e.plan.settings;
    if let Some(slos) = slos(a.goodput.goodput.as_deref()) {
        top.insert("slos".into(), slos);
    }
    top.insert("tokenizer".into(), tokenizer(e));
    // A config file's echo has the telemetry and server-metrics blocks only when set.
    let file = e.plan.file_only.from_file;
    if !file || e.given("gpu_telemetry") || e.given("no_gpu_telemetry") {
        let mut g = gpu_telemetry(cfg, a.gpu_telemetry.as_deref());
        // The file's block as it gives it.
        let given = &e.plan.file_only.gpu_telemetry_keys;
        if file
            && !given.is_empty()
            && let Value::Object(o) = &mut g
        {
            o.retain(|k, _| given.contains(k));
        }
        top.insert("gpu_telemetry".into(), g);
    }
    let server_metrics_given = [
        "server_metrics",
        "no_server_metrics",
        "server_metrics_formats",
    ]
    .iter()
    .any(|id| e.given(id));
    if !file || server_metrics_given {
        top.insert(
            "server_metrics".into(),
            if cfg.server_metrics.enabled {
                let formats: Vec<&str> = cfg
                    .server_metrics
                    .formats
                    .iter()
                    .map(|f| format_name(*f))
                    .collect();
                let mut m = json!({"enabled": true, "urls": cfg.server_metrics.extra_urls, "formats": formats});
                let given = &e.plan.file_only.server_metrics_keys;
                // A flag beside the file's block: AIPerf echoes the block whole; else the
                // file's block as it gives it.
                if e.plan.file_only.server_metrics_block_whole {
                    m["discovery"] = json!({"mode": "auto", "timeout_seconds": 30.0});
                } else if file
                    && !given.is_empty()
                    && let Value::Object(o) = &mut m
                {
                    o.retain(|k, _| given.contains(k));
                }
                m
            } else {
                json!({"enabled": false})
            },
        );
    }
    top.insert("network_latency".into(), cfg.network_latency.echo());
    // A config file's echo has these only when set (`otel` with its URL).
    if !file || cfg.otel.is_some() {
        top.insert("otel".into(), otel(cfg, e));
    }
    for k in ["mlflow", "wandb"] {
        let set = (e.plan.given.keys()).any(|id| id.starts_with(k));
        if !file || set {
            top.insert(k.into(), json!({}));
        }
    }
    let mut runtime = Map::new();
    let ui = if a.verbose || a.extra_verbose {
        Some("simple")
    } else {
        match a.ui_type {
            Some(UiTypeArg::Dashboard) if !e.is_tty => Some("simple"),
            Some(UiTypeArg::Dashboard) => Some("dashboard"),
            Some(UiTypeArg::Simple) => Some("simple"),
            Some(UiTypeArg::None) => Some("none"),
            None if !e.is_tty => Some("none"),
            None => None,
        }
    };
    if let Some(ui) = ui {
        runtime.insert("ui".into(), json!(ui));
    }
    if let Some(w) = a.workers_max {
        runtime.insert("workers".into(), json!(w));
    }
    if let Some(p) = a.api_port {
        runtime.insert("api_port".into(), json!(p));
    }
    if let Some(h) = &a.api_host {
        runtime.insert("api_host".into(), json!(h));
    }
    if let Some(s) = a.stats_interval {
        runtime.insert("stats_interval".into(), json!(s));
    }
    if !runtime.is_empty() {
        top.insert("runtime".into(), Value::Object(runtime));
    }
    let level = if a.extra_verbose {
        Some(LogLevelArg::Trace)
    } else if a.verbose {
        Some(LogLevelArg::Debug)
    } else {
        e.given("log_level").then_some(a.log_level)
    };
    if let Some(l) = level {
        top.insert("logging".into(), json!({"level": log_level_name(l)}));
    }
    if e.repeated_run {
        top.entry("logging")
            .or_insert_with(|| json!({"level": log_level_name(a.log_level)}));
    }
    if let Some(s) = &cfg.scenario {
        top.insert("scenario".into(), json!(s.name));
        top.insert("unsafe_override".into(), json!(a.agentic.unsafe_override));
    }
    let mut own = Map::new();
    if e.given("io_driver") {
        let d = match cfg.io_driver {
            IoDriver::Auto => "auto",
            IoDriver::Uring => "uring",
            IoDriver::Legacy => "legacy",
        };
        own.insert("io_driver".into(), json!(d));
    }
    if e.given("timestamps") {
        let t = if cfg.kernel_stamps { "kernel" } else { "user" };
        own.insert("timestamps".into(), json!(t));
    }
    if e.given("batch_wakeups_us") {
        own.insert("batch_wakeups_us".into(), json!(a.batch_wakeups_us));
    }
    if a.mock {
        own.insert("mock".into(), json!(true));
    }
    if let Some(us) = a.max_client_lag_us {
        own.insert("max_client_lag_us".into(), json!(us));
    }
    if !own.is_empty() {
        top.insert("ringperf".into(), Value::Object(own));
    }
    for (at, v) in &e.plan.file_only.echoed {
        put_at(&mut top, at, v.clone());
    }
    if e.repeated_run {
        return whole(top);
    }
    Value::Object(top)
}

/// Puts `v` at the dotted place `at` of `top` (a number names a list's item), making the maps on
/// the way; a place through something else is left alone.
fn put_at(top: &mut Map<String, Value>, at: &str, v: Value) {
    let mut parts = at.split('.').peekable();
    let mut here = top;
    while let Some(key) = parts.next() {
        if parts.peek().is_none() {
            here.insert(key.to_owned(), v);
            return;
        }
        let next = here
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        let next = match next {
            Value::Array(items) => {
                let Some(i) = parts.next().and_then(|i| i.parse::<usize>().ok()) else {
                    return;
                };
                match items.get_mut(i) {
                    Some(item) => item,
                    None => return,
                }
            }
            other => other,
        };
        if parts.peek().is_none() {
            // The list's item itself was the place.
            *next = v;
            return;
        }
        let Value::Object(m) = next else {
            return;
        };
        here = m;
    }
}

/// One run of a repeated profile or a sweep: AIPerf 0.13 starts it from its whole configuration
/// written out (`run_config.json`), so its `input_config` holds every setting, those left at
/// their defaults too (AIPerf's schema defaults; a default of none is left out), in AIPerf's
/// section order.
fn whole(top: Map<String, Value>) -> Value {
    const ORDER: [&str; 17] = [
        "models",
        "endpoint",
        "datasets",
        "phases",
        "artifacts",
        "slos",
        "tokenizer",
        "gpu_telemetry",
        "server_metrics",
        "network_latency",
        "otel",
        "mlflow",
        "wandb",
        "runtime",
        "logging",
        "metrics",
        "unsafe_override",
    ];
    let defaults = json!({
        "models": {"strategy": "round_robin"},
        "endpoint": {
            "urls": [], "url_strategy": "round_robin", "type": "chat", "timeout": 21600.0,
            "streaming": false, "connection_reuse": "pooled", "use_legacy_max_tokens": false,
            "use_server_token_count": false, "per_chunk_usage": false, "headers": {},
            "extra": {}, "download_video_content": false, "uuid_and_strip": false,
            "wait_for_model_timeout": 0.0, "wait_for_model_interval": 5.0,
            "wait_for_model_mode": "inference",
        },
        "artifacts": {
            "dir": "artifacts", "summary": ["json"], "records": ["jsonl"], "raw": false,
            "trace": false, "show_trace_timing": false, "user_files": [], "auto_plot": false,
            "plot_required": false, "export_outputs_json": false,
        },
        "tokenizer": {"revision": "main", "trust_remote_code": false, "apply_chat_template": false},
        "gpu_telemetry": {"enabled": true, "urls": [], "collector": "dcgm", "mode": "summary"},
        "server_metrics": {
            "enabled": true, "urls": [], "formats": ["json", "csv"],
            "discovery": {"mode": "auto", "timeout_seconds": 30.0},
        },
        "network_latency": {"enabled": false, "ping_interval": 1.0},
        "otel": {
            "stream_metrics_enabled": true, "stream_timing_enabled": true,
            "custom_resource_attributes": {},
        },
        "mlflow": {"experiment": "aiperf"},
        "wandb": {},
        "runtime": {"ui": "dashboard", "service_run_type": "multiprocessing"},
        "logging": {"level": "INFO"},
        "metrics": {},
        "unsafe_override": false,
    });
    let mut top = top;
    let mut out = Map::new();
    for k in ORDER {
        let given = top.remove(k);
        let v = match (k, given) {
            ("datasets", Some(Value::Array(l))) => {
                Value::Array(l.into_iter().map(whole_dataset).collect())
            }
            ("phases", Some(Value::Array(l))) => {
                Value::Array(l.into_iter().map(whole_phase).collect())
            }
            (_, given) => match (defaults.get(k), given) {
                (Some(d), Some(g)) => over(d.clone(), g),
                (Some(d), None) => d.clone(),
                (None, Some(g)) => g,
                (None, None) => continue,
            },
        };
        out.insert(k.into(), v);
    }
    out.extend(top);
    Value::Object(out)
}

/// `given` over `default`: mappings key by key (the default's keys first, in its order), any
/// other value as given.
fn over(default: Value, given: Value) -> Value {
    match (default, given) {
        (Value::Object(mut d), Value::Object(g)) => {
            for (k, v) in g {
                let merged = match d.remove(&k) {
                    Some(dv) => over(dv, v),
                    None => v,
                };
                d.insert(k, merged);
            }
            Value::Object(d)
        }
        (_, g) => g,
    }
}

/// A dataset with its type's defaults.
fn whole_dataset(d: Value) -> Value {
    let ty = d.get("type").and_then(Value::as_str).unwrap_or("synthetic");
    let after = match ty {
        "file" => json!({
            "sampling": "sequential", "open_loop_replay": true, "open_loop_strict": false,
            "omit_kv_hints": false, "force_min_tokens": true, "ignore_trace_delays": false,
            "use_think_time_only": false, "cache_bust": {"target": "none"},
        }),
        "public" => json!({
            "sampling": "sequential", "filters": {}, "ignore_trace_delays": false,
            "use_think_time_only": false, "cache_bust": {"target": "none"},
        }),
        _ => json!({
            "sampling": "sequential",
            "prompts": {"batch_size": 1, "cache_bust": {"target": "none"}, "random_corpus_style": "vllm"},
            "turn_delay_ratio": 1.0,
        }),
    };
    // The dataset's own keys first (name, type, …), then its defaults in their order.
    let mut d = d;
    normal_spread(&mut d);
    let Value::Object(given) = d else { return d };
    let mut out = Map::new();
    let Value::Object(after) = after else {
        unreachable!("a literal mapping")
    };
    let mut given = given;
    for (k, v) in given.iter_mut() {
        if let Some(dv) = after.get(k) {
            *v = over(dv.clone(), v.take());
        }
    }
    let prompts_first = given.keys().position(|k| k == "prompts");
    for (k, v) in after {
        if !given.contains_key(&k) {
            given.insert(k, v);
        }
    }
    // `sampling` before `prompts`, as AIPerf orders its fields.
    if let Some(s) = prompts_first.and_then(|_| given.remove("sampling")) {
        for (k, v) in std::mem::take(&mut given) {
            if k == "prompts" {
                out.insert("sampling".into(), s.clone());
            }
            out.insert(k, v);
        }
        return Value::Object(out);
    }
    Value::Object(given)
}

/// A distribution given by its `mean` alone is a normal one of spread 0 (AIPerf's model writes
/// its `stddev`); a log-normal one (`median`) and a fixed one (`value`) have none.
fn normal_spread(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let others = ["stddev", "median", "value", "peaks", "points"];
            if m.contains_key("mean") && !others.iter().any(|k| m.contains_key(*k)) {
                m.insert("stddev".into(), json!(0.0));
            }
            m.values_mut().for_each(normal_spread);
        }
        Value::Array(l) => l.iter_mut().for_each(normal_spread),
        _ => {}
    }
}

/// A phase with the defaults every phase has: the adaptive-scale settings first, then its own
/// keys, then the others.
fn whole_phase(p: Value) -> Value {
    let Value::Object(given) = p else { return p };
    let warmup = given.get("kind").and_then(Value::as_str) == Some("warmup");
    let first = json!({
        "adaptive_scale": false, "adaptive_min_completed_requests": 1,
        "adaptive_control_variable": "concurrency", "adaptive_control_min": 1.0,
        "adaptive_scale_strategy_type": "ramp_until_fail", "adaptive_scale_step_policy": "sla_margin",
        "adaptive_scale_base_step": 10, "adaptive_scale_max_step_multiplier": 4,
        "adaptive_scale_step_percent": 25.0,
    });
    let last = json!({
        "sla": [], "seamless": false, "trajectory_start_min_ratio": 0.25,
        "trajectory_start_max_ratio": 0.75, "burst_phase_starts": false,
    });
    let (Value::Object(first), Value::Object(last)) = (first, last) else {
        unreachable!("literal mappings")
    };
    let mut out = first;
    // The base fields in AIPerf's order; a phase type's own (rate, ramps) after the defaults.
    const BASE: [&str; 9] = [
        "name",
        "kind",
        "type",
        "exclude_from_results",
        "requests",
        "duration",
        "sessions",
        "concurrency",
        "grace_period",
    ];
    let mut given = given;
    given
        .entry("exclude_from_results")
        .or_insert(Value::Bool(warmup));
    for k in BASE {
        if let Some(v) = given.remove(k) {
            out.insert(k.into(), v);
        }
    }
    // Fields of the base phase AIPerf lists between `concurrency` and `sla`.
    for k in [
        "prefill_concurrency",
        "concurrency_ramp",
        "prefill_ramp",
        "timing_mode",
    ] {
        if let Some(v) = given.remove(k) {
            out.insert(k.into(), v);
        }
    }
    for (k, v) in last {
        let v = given.remove(&k).unwrap_or(v);
        out.insert(k, v);
    }
    // A ramp is linear unless it says.
    for (k, v) in given.iter_mut() {
        if let (true, Value::Object(r)) = (k.ends_with("_ramp"), v) {
            r.entry("strategy").or_insert_with(|| json!("linear"));
        }
    }
    out.extend(given);
    Value::Object(out)
}

/// `slos`: the `--goodput` pairs in the order given, each value the number as written (in the
/// metric's display unit, a float), as AIPerf echoes its parsed SLO dictionary. `None` without
/// the flag. The spec was validated when the configuration was built (`config::goodput`).
/// `otel`: the normalised URL, then only what was given (AIPerf's converter sets no default).
fn otel(cfg: &Config, e: &Echo) -> Value {
    let mut m = Map::new();
    if let Some(o) = &cfg.otel {
        m.insert("metrics_url".into(), Value::from(o.url.as_str()));
        if e.given("stream") {
            m.insert("stream_metrics_enabled".into(), Value::from(o.metrics));
            m.insert("stream_timing_enabled".into(), Value::from(o.timing));
        }
        if e.given("otel_resource_attributes") {
            let attrs: Map<String, Value> = o
                .resource
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            m.insert("custom_resource_attributes".into(), Value::Object(attrs));
        }
        if let Some(p) = &o.provider {
            m.insert("gen_ai_provider".into(), Value::from(p.as_str()));
        }
    }
    Value::Object(m)
}

fn slos(spec: Option<&str>) -> Option<Value> {
    let mut m = Map::new();
    for item in spec?.split_whitespace() {
        if let Some((tag, value)) = item.split_once(':')
            && let Ok(v) = value.trim().parse::<f64>()
        {
            m.insert(tag.trim().to_owned(), float(v));
        }
    }
    Some(Value::Object(m))
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Json => "json",
        Format::Csv => "csv",
        Format::Jsonl => "jsonl",
        Format::Parquet => "parquet",
    }
}

fn log_level_name(l: LogLevelArg) -> &'static str {
    match l {
        LogLevelArg::Trace => "TRACE",
        LogLevelArg::Debug => "DEBUG",
        LogLevelArg::Info => "INFO",
        LogLevelArg::Notice => "NOTICE",
        LogLevelArg::Warning => "WARNING",
        LogLevelArg::Success => "SUCCESS",
        LogLevelArg::Error => "ERROR",
        LogLevelArg::Critical => "CRITICAL",
    }
}

/// The endpoint's URLs as `input_config` echoes them (AIPerf's `endpoint.urls`).
pub(crate) fn endpoint_urls(cfg: &Config, a: &crate::cli::ProfileArgs) -> Vec<String> {
    if a.mock {
        cfg.urls.iter().map(|u| u.display.clone()).collect()
    } else {
        a.url
            .iter()
            .map(|u| {
                if u.contains("://") {
                    u.clone()
                } else {
                    format!("http://{u}")
                }
            })
            .collect()
    }
}

fn endpoint(cfg: &Config, e: &Echo) -> Value {
    let a = &e.plan.settings;
    let urls = endpoint_urls(cfg, a);
    let mut m = Map::new();
    m.insert("urls".into(), json!(urls));
    if e.given("url_strategy") {
        m.insert("url_strategy".into(), json!("round_robin"));
    }
    if e.given("endpoint_type") {
        m.insert("type".into(), json!(cfg.endpoint.as_str()));
    }
    if let Some(p) = &a.custom_endpoint {
        m.insert("path".into(), json!(p));
    }
    if a.api_key.is_some() {
        m.insert("api_key".into(), json!("<redacted>"));
    }
    if e.given("request_timeout_seconds") {
        m.insert("timeout".into(), float(a.request_timeout_seconds));
    }
    if a.streaming {
        m.insert("streaming".into(), json!(cfg.streaming));
    }
    if e.given("connection_reuse_strategy") {
        let s = match a.connection_reuse_strategy {
            ConnectionReuseArg::Pooled => "pooled",
            ConnectionReuseArg::Never => "never",
            ConnectionReuseArg::StickyUserSessions => "sticky-user-sessions",
        };
        m.insert("connection_reuse".into(), json!(s));
    }
    if a.use_legacy_max_tokens {
        m.insert("use_legacy_max_tokens".into(), json!(true));
    }
    for (key, value) in text_flags(e, "endpoint") {
        m.insert(key.into(), json!(value));
    }
    if a.use_server_token_count {
        m.insert("use_server_token_count".into(), json!(true));
    }
    if a.outputs.per_chunk_usage {
        m.insert("per_chunk_usage".into(), json!(true));
    }
    if let Some(t) = &cfg.template_echo {
        m.insert("template".into(), t.clone());
    }
    let mut headers = Map::new();
    for h in &a.header {
        for (k, v) in super::parse_pairs(h, "--header").unwrap_or_default() {
            let secret =
                k.eq_ignore_ascii_case("authorization") || k.to_ascii_lowercase().contains("key");
            let v = if secret {
                "<redacted>".to_string()
            } else {
                super::json_to_plain(&v)
            };
            headers.insert(k, json!(v));
        }
    }
    if !headers.is_empty() {
        m.insert("headers".into(), Value::Object(headers));
    }
    if !cfg.extra_inputs.is_empty() {
        m.insert("extra".into(), Value::Object(cfg.extra_inputs.clone()));
    }
    Value::Object(m)
}

/// `datasets[0].entries`: AIPerf's resolution order, only from flags that were given.
fn entries(e: &Echo) -> Option<u64> {
    let a = &e.plan.settings;
    let given = a.num_dataset_entries.map(|n| n as u64);
    // A config file's dataset has the entries it gives (a synthetic one AIPerf's default):
    // none for an inline or file dataset that gives none, whatever the request count.
    if e.plan.file_only.from_file {
        return given;
    }
    given.or(a.prompt.conversation_num).or(a.request_count)
}

/// `cache_bust`, `corpus`, `sequence_distribution`, `random_range_ratio` and
/// `random_corpus_style` of the synthetic `prompts`, in AIPerf's field order, each only when
/// given (the ratio as its text).
fn random_prompt(cfg: &Config, e: &Echo, prompts: &mut Map<String, Value>) {
    let r = &e.plan.settings.random_prompt;
    if e.given("cache_bust") {
        let target = cfg.random_prompt.cache_bust.as_str();
        prompts.insert("cache_bust".into(), json!({ "target": target }));
    }
    if e.given("prompt_corpus") {
        prompts.insert("corpus".into(), json!(cfg.prompt.shaping.corpus.as_str()));
    }
    if let Some(d) = seq_dist(e) {
        prompts.insert("sequence_distribution".into(), d);
    }
    if let Some(text) = r.random_range_ratio.as_deref().filter(|t| !t.is_empty()) {
        prompts.insert("random_range_ratio".into(), json!(text));
    }
    if e.given("random_corpus_style") {
        let style = cfg.random_prompt.style.as_str();
        prompts.insert("random_corpus_style".into(), json!(style));
    }
}

fn dataset(cfg: &Config, e: &Echo) -> Value {
    let mut d = dataset_body(cfg, e);
    let Value::Object(m) = &mut d else {
        return d;
    };
    let a = &e.plan.settings;
    // The system prompt first, as AIPerf's models hold it.
    if e.given("system_prompt_file")
        && let Some(f) = &a.prompt.system_prompt_file
    {
        m.shift_insert(
            0,
            "system_prompt_file".into(),
            json!(f.display().to_string()),
        );
    }
    if e.given("system_prompt")
        && let Some(t) = &a.prompt.system_prompt
    {
        m.shift_insert(0, "system_prompt".into(), json!(t));
    }
    d
}

/// AIPerf 0.13's `FileDataset` and `PublicDataset` fields in their model's order (the echo's).
const FILE_FIELDS: &[&str] = &[
    "system_prompt",
    "system_prompt_file",
    "name",
    "type",
    "path",
    "records",
    "format",
    "sampling",
    "synthesis",
    "entries",
    "random_seed",
    "trace_session_sample_ratio",
    "inter_turn_delay_cap_seconds",
    "max_idle_gap_cap_seconds",
    "replay_speedup",
    "open_loop_replay",
    "open_loop_strict",
    "omit_kv_hints",
    "force_min_tokens",
    "osl",
    "prompt_batch_size",
    "image_batch_size",
    "audio_batch_size",
    "video_batch_size",
    "block_size",
    "trace_idle_gap_cap_seconds",
    "ignore_trace_delays",
    "use_think_time_only",
    "max_context_length",
    "cache_bust",
    "prompts",
];
const PUBLIC_FIELDS: &[&str] = &[
    "system_prompt",
    "system_prompt_file",
    "name",
    "type",
    "dataset",
    "entries",
    "random_seed",
    "sampling",
    "hf_subset",
    "filters",
    "hf_weka_dataset",
    "inter_turn_delay_cap_seconds",
    "trace_idle_gap_cap_seconds",
    "ignore_trace_delays",
    "use_think_time_only",
    "max_context_length",
    "cache_bust",
    "prompts",
    "synthesis",
    "osl",
];

/// Puts `key` in `m` where the model's field order (`order`) has it: before the first key that
/// comes after it, else last.
fn insert_ordered(m: &mut Map<String, Value>, order: &[&str], key: &str, v: Value) {
    let rank = |k: &str| order.iter().position(|o| *o == k).unwrap_or(usize::MAX);
    let at = (m.keys())
        .position(|k| rank(k) > rank(key))
        .unwrap_or(m.len());
    m.shift_insert(at, key.into(), v);
}

/// The synthetic `osl` as AIPerf's model writes it (a config file's distribution as given).
fn osl_json(e: &Echo) -> Option<Value> {
    let a = &e.plan.settings;
    let o = a.osl_mean?;
    let mut osl = Map::new();
    osl.insert(
        e.center("--prompt-output-tokens", "osl_stddev").into(),
        float(f64::from(o)),
    );
    if e.given("osl_stddev") {
        osl.insert("stddev".into(), float(a.osl_stddev));
    }
    let osl = e
        .drawn("--prompt-output-tokens", u64::from(o))
        .unwrap_or(Value::Object(osl));
    Some(e.bounded("--prompt-output-tokens", osl))
}

fn dataset_body(cfg: &Config, e: &Echo) -> Value {
    let a = &e.plan.settings;
    // The seed as given: AIPerf does not echo the one --set-consistent-seed supplies, nor a
    // config file's `random_seed` (a dataset's own is not read).
    let seed = a.random_seed.filter(|_| !e.plan.file_only.from_file);
    let set = |key: &str| e.plan.file_only.from_file && e.given(key);
    if let Some(mut d) = cfg.input.dataset_json(entries(e), seed, &set) {
        // A file's or a public dataset's `osl` (the `max_tokens` of turns naming none) and
        // `cache_bust`, where their model has them.
        if let Value::Object(m) = &mut d {
            let order = if m.get("type") == Some(&json!("public")) {
                PUBLIC_FIELDS
            } else {
                FILE_FIELDS
            };
            if let Some(osl) = osl_json(e) {
                insert_ordered(m, order, "osl", osl);
            }
            if e.given("cache_bust") {
                let target = cfg.random_prompt.cache_bust.as_str();
                insert_ordered(m, order, "cache_bust", json!({ "target": target }));
            }
        }
        return d;
    }
    let mut m = Map::new();
    m.insert("name".into(), json!("main"));
    m.insert("type".into(), json!("synthetic"));
    if let Some(n) = entries(e) {
        m.insert("entries".into(), json!(n));
    }
    if let Some(s) = seed {
        m.insert("random_seed".into(), json!(s));
    }
    let mut isl = Map::new();
    isl.insert(
        e.center("--prompt-input-tokens", "isl_stddev").into(),
        float(f64::from(a.isl_mean)),
    );
    if e.given("isl_stddev") {
        isl.insert("stddev".into(), float(a.isl_stddev));
    }
    let mut prompts = Map::new();
    let isl = e
        .drawn("--prompt-input-tokens", u64::from(a.isl_mean))
        .unwrap_or(Value::Object(isl));
    prompts.insert("isl".into(), e.bounded("--prompt-input-tokens", isl));
    if let Some(osl) = osl_json(e) {
        prompts.insert("osl".into(), osl);
    }
    if e.given("prompt_batch_size") {
        prompts.insert("batch_size".into(), json!(a.prompt.prompt_batch_size));
    }
    random_prompt(cfg, e, &mut prompts);
    m.insert("prompts".into(), Value::Object(prompts));
    let p = &a.prompt;
    let mut prefix = Map::new();
    if let Some(n) = p.prompt_prefix_pool_size {
        prefix.insert("pool_size".into(), json!(n));
    }
    if let Some(n) = p.prompt_prefix_length {
        prefix.insert("length".into(), json!(n));
    }
    if !prefix.is_empty() {
        m.insert("prefix_prompts".into(), Value::Object(prefix));
    }
    if e.given("conversation_turn_mean") || e.given("conversation_turn_stddev") {
        let flag = "--conversation-turn";
        let turns = e
            .drawn(flag, u64::from(p.conversation_turn_mean))
            .unwrap_or_else(|| {
                obj(vec![
                    ("mean", float(f64::from(p.conversation_turn_mean))),
                    ("stddev", float(f64::from(p.conversation_turn_stddev))),
                ])
            });
        m.insert("turns".into(), e.bounded(flag, turns));
    }
    if e.given("conversation_turn_delay_mean") || e.given("conversation_turn_delay_stddev") {
        let flag = "--conversation-turn-delay";
        let delay = e
            .drawn(flag, p.conversation_turn_delay_mean as u64)
            .unwrap_or_else(|| {
                obj(vec![
                    ("mean", float(p.conversation_turn_delay_mean)),
                    ("stddev", float(p.conversation_turn_delay_stddev)),
                ])
            });
        m.insert("turn_delay".into(), e.bounded(flag, delay));
    }
    if e.given("conversation_turn_delay_ratio") {
        m.insert(
            "turn_delay_ratio".into(),
            float(p.conversation_turn_delay_ratio),
        );
    }
    media(e, &mut m);
    Value::Object(m)
}

/// `--seq-dist` as AIPerf's model writes it: the file's entries as it gives them while the flag
/// holds the file's value; else one `{isl: {mean, stddev}, osl: {mean, stddev}, probability}`
/// per pair.
fn seq_dist(e: &Echo) -> Option<Value> {
    let text = e.plan.settings.prompt.seq_dist.as_deref()?;
    if let Some((file_text, form)) = &e.plan.file_only.seq_dist
        && file_text == text
    {
        return Some(form.clone());
    }
    let d = ringperf_workload::workload::SeqDist::parse(text).ok()?;
    let pairs = (d.pairs().iter())
        .map(|p| {
            json!({
                "isl": {"mean": float(f64::from(p.isl)), "stddev": float(p.isl_stddev)},
                "osl": {"mean": float(f64::from(p.osl)), "stddev": float(p.osl_stddev)},
                "probability": float(p.probability),
            })
        })
        .collect();
    Some(Value::Array(pairs))
}

/// The synthetic dataset's `images`, `audio` and `video` blocks, as AIPerf's converter writes
/// them: each setting given, in its model's order, and `batch_size: 1` when a shape of the
/// medium is given without a batch size (a format or codec alone does not make one).
fn media(e: &Echo, m: &mut Map<String, Value>) {
    let a = &e.plan.settings.media;
    let g = |id: &str| e.given(id);
    // The setting of flag `id`, under `key`, when given.
    let set = |o: &mut Map<String, Value>, id: &str, key: &str, v: Value| {
        if g(id) {
            o.insert(key.into(), v);
        }
    };
    let mean_sd = |mean: (&str, f64), sd: (&str, f64)| {
        // The flag's prefix: `image_width_mean` is `--image-width`.
        let flag = format!("--{}", mean.0.trim_end_matches("_mean").replace('_', "-"));
        // A log-normal, multimodal or empirical one as the file gives it.
        if let Some(d) = e.drawn(&flag, mean.1 as u64).filter(|_| g(mean.0)) {
            return Some(e.bounded(&flag, d));
        }
        let mut o = Map::new();
        if g(mean.0) {
            o.insert(e.center(&flag, sd.0).into(), float(mean.1));
        }
        set(&mut o, sd.0, "stddev", float(sd.1));
        (!o.is_empty()).then(|| e.bounded(&flag, Value::Object(o)))
    };
    let batch = |o: &mut Map<String, Value>, id: &str, n: u32, shaped: bool| {
        if g(id) || shaped {
            o.insert("batch_size".into(), json!(if g(id) { n } else { 1 }));
        }
    };
    let mut put = |key: &str, o: Map<String, Value>| {
        if !o.is_empty() {
            m.insert(key.into(), Value::Object(o));
        }
    };
    // Images: batch_size, width, height, format, source, source_sampling.
    let mut o = Map::new();
    let width = mean_sd(
        ("image_width_mean", a.image_width_mean),
        ("image_width_stddev", a.image_width_stddev),
    );
    let height = mean_sd(
        ("image_height_mean", a.image_height_mean),
        ("image_height_stddev", a.image_height_stddev),
    );
    let shaped =
        width.is_some() || height.is_some() || g("image_source") || g("image_source_sampling");
    batch(&mut o, "image_batch_size", a.image_batch_size, shaped);
    o.extend(width.map(|w| ("width".to_string(), w)));
    o.extend(height.map(|h| ("height".to_string(), h)));
    set(&mut o, "image_format", "format", enum_name(&a.image_format));
    set(&mut o, "image_source", "source", json!(a.image_source));
    let sampling = json!(a.image_source_sampling);
    set(&mut o, "image_source_sampling", "source_sampling", sampling);
    put("images", o);
    // Audio: batch_size, length, format, sample_rates, depths, channels.
    let mut o = Map::new();
    let length = mean_sd(
        ("audio_length_mean", a.audio_length_mean),
        ("audio_length_stddev", a.audio_length_stddev),
    );
    let shaped = length.is_some();
    batch(&mut o, "audio_batch_size", a.audio_batch_size, shaped);
    o.extend(length.map(|l| ("length".to_string(), l)));
    set(&mut o, "audio_format", "format", enum_name(&a.audio_format));
    let rates = a.audio_sample_rates.iter().map(|r| float(*r)).collect();
    set(
        &mut o,
        "audio_sample_rates",
        "sample_rates",
        Value::Array(rates),
    );
    set(&mut o, "audio_depths", "depths", json!(a.audio_depths));
    set(
        &mut o,
        "audio_num_channels",
        "channels",
        json!(a.audio_num_channels),
    );
    put("audio", o);
    // Video: batch_size, duration, fps, width, height, format, codec, synth_type, audio.
    let mut o = Map::new();
    let shaped = ["video_duration", "video_fps", "video_width", "video_height"]
        .iter()
        .any(|id| g(id))
        || g("video_synth_type");
    batch(&mut o, "video_batch_size", a.video_batch_size, shaped);
    set(
        &mut o,
        "video_duration",
        "duration",
        float(a.video_duration),
    );
    set(&mut o, "video_fps", "fps", json!(a.video_fps));
    set(&mut o, "video_width", "width", json!(a.video_width));
    set(&mut o, "video_height", "height", json!(a.video_height));
    set(&mut o, "video_format", "format", enum_name(&a.video_format));
    set(&mut o, "video_codec", "codec", json!(a.video_codec));
    let synth = enum_name(&a.video_synth_type);
    set(&mut o, "video_synth_type", "synth_type", synth);
    let mut audio = Map::new();
    let rate = float(a.video_audio_sample_rate);
    set(&mut audio, "video_audio_sample_rate", "sample_rate", rate);
    let channels = json!(a.video_audio_num_channels);
    set(&mut audio, "video_audio_num_channels", "channels", channels);
    set(
        &mut audio,
        "video_audio_codec",
        "codec",
        json!(a.video_audio_codec),
    );
    set(
        &mut audio,
        "video_audio_depth",
        "depth",
        json!(a.video_audio_depth),
    );
    if !audio.is_empty() {
        o.insert("audio".into(), Value::Object(audio));
    }
    put("video", o);
}

/// A choice's name as the command line spells it (AIPerf's enum value).
fn enum_name<T: clap::ValueEnum>(v: &T) -> Value {
    v.to_possible_value()
        .map_or(Value::Null, |p| json!(p.get_name()))
}

fn phase(e: &Echo, name: &str, p: &PhaseConfig) -> Value {
    let a = &e.plan.settings;
    let warmup = name == "warmup";
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("kind".into(), json!(name));
    // A profiling phase a file's `timing_mode: fixed_schedule` replays keeps the type written.
    let replayed = (e.plan.file_only.profiling_replayed_type.as_deref()).filter(|_| !warmup);
    let (kind, rate, smoothness_ok) = match (p.timing.mode, p.load) {
        (timing::Mode::FixedSchedule(_), _) => (
            replayed.unwrap_or("fixed_schedule"),
            (e.plan.file_only.profiling_replayed_rate).filter(|_| replayed.is_some()),
            false,
        ),
        (timing::Mode::UserCentric { rate, .. }, _) => ("user_centric", Some(rate), false),
        (timing::Mode::Load | timing::Mode::Agentic(_), Load::Concurrency(_)) => {
            ("concurrency", None, false)
        }
        (timing::Mode::Load | timing::Mode::Agentic(_), Load::Rate { rate, arrival, .. }) => {
            match arrival {
                Arrival::Constant => ("constant", Some(rate), false),
                Arrival::Poisson => ("poisson", Some(rate), false),
                Arrival::Gamma { .. } => ("gamma", Some(rate), true),
            }
        }
    };
    m.insert("type".into(), json!(kind));
    if warmup {
        m.insert("exclude_from_results".into(), json!(true));
    }
    // A config file's phase: its own count only (none derived).
    let count_id = if warmup {
        "warmup_request_count"
    } else {
        "request_count"
    };
    if let Some(n) = p
        .request_count
        .filter(|_| !e.plan.file_only.from_file || e.given(count_id))
    {
        m.insert("requests".into(), json!(n));
    }
    if let Some(d) = p.duration {
        m.insert("duration".into(), float(d.as_secs_f64()));
    }
    if let Some(s) = p.sessions {
        m.insert("sessions".into(), json!(s));
    }
    // Profiling: only a given --concurrency. Warmup: always in closed loop (AIPerf writes the
    // inherited or default 1), beside a rate only when one of the two flags was given.
    let concurrency = match (warmup, p.load) {
        (false, _) => a.concurrency,
        (true, Load::Concurrency(n)) => Some(n),
        (true, Load::Rate { cap, .. }) => cap,
    };
    if let Some(c) = concurrency {
        m.insert("concurrency".into(), json!(c));
    }
    if let Some(d) = p.timing.concurrency_ramp {
        m.insert(
            "concurrency_ramp".into(),
            json!({"duration": d.as_secs_f64()}),
        );
    }
    if let Some(n) = p.timing.prefill_concurrency {
        m.insert("prefill_concurrency".into(), json!(n));
    }
    // AIPerf echoes a given prefill ramp even where there is no limit to ramp.
    let s = &a.load_shape;
    let prefill_ramp = match warmup {
        false => s.prefill_concurrency_ramp_duration,
        true => {
            (s.warmup_prefill_concurrency_ramp_duration).or(s.prefill_concurrency_ramp_duration)
        }
    };
    if let Some(d) = prefill_ramp {
        m.insert("prefill_ramp".into(), json!({"duration": d}));
    }
    let grace = if warmup {
        a.warmup_grace_period
    } else if e.plan.file_only.no_grace && !e.given("benchmark_grace_period") {
        // A config file's phase without `grace_period` has none (AIPerf echoes none).
        None
    } else {
        p.duration.map(|_| a.benchmark_grace_period)
    };
    if let (Some(g), Some(_)) = (grace, p.duration) {
        m.insert("grace_period".into(), float(g));
    }
    if !warmup && let Some(r) = a.timing.request_cancellation_rate.filter(|r| *r > 0.0) {
        let mut c = Map::new();
        c.insert("rate".into(), float(r));
        if let Some(d) = a.timing.request_cancellation_delay {
            c.insert("delay".into(), float(d));
        }
        m.insert("cancellation".into(), Value::Object(c));
    }
    if !warmup && e.plan.file_only.profiling_seamless {
        m.insert("seamless".into(), json!(true));
    }
    if !warmup && let Some(t) = a.failed_request_threshold {
        m.insert("failed_request_threshold".into(), float(t));
    }
    if let Some(r) = rate.filter(|_| p.timing.rate_series.is_none()) {
        m.insert("rate".into(), float(r));
    }
    if let Some(d) = p.timing.rate_ramp {
        m.insert("rate_ramp".into(), json!({"duration": d.as_secs_f64()}));
    }
    if let Some(series) = &p.timing.rate_series {
        let points: Vec<Value> = (series.points())
            .map(|(t, q)| json!({"time_s": float(t), "qps": float(q)}))
            .collect();
        m.insert("rate_series".into(), json!({ "points": points }));
    }
    if smoothness_ok && let Some(s) = a.arrival_smoothness {
        m.insert("smoothness".into(), float(s));
    }
    if let timing::Mode::UserCentric { users, .. } = p.timing.mode {
        m.insert("users".into(), json!(users));
    }
    if let timing::Mode::FixedSchedule(fs) = p.timing.mode {
        let t = &a.timing;
        if t.fixed_schedule_auto_offset || t.fixed_schedule_start_offset.is_some() {
            m.insert("auto_offset".into(), json!(fs.auto_offset));
        }
        if let Some(s) = fs.window.start_ms {
            m.insert("start_offset".into(), json!(s));
        }
        if let Some(e) = fs.window.end_ms {
            m.insert("end_offset".into(), json!(e));
        }
    }
    Value::Object(m)
}

/// A phase of its own ([`crate::plan::PhaseSpec`]) as the file gave it, in the key order of
/// [`phase`].
/// A phase's echo with its `adaptive_scale` fields, as AIPerf orders them: the adaptive fields
/// the file set first, `sla` after the fields every phase type has (before a rated or
/// user-centric phase's own: `rate`, its ramp, `smoothness`, `users`).
fn with_adaptive(phase: Value, spec: Option<&crate::plan::AdaptiveSpec>) -> Value {
    let (Some(spec), Value::Object(fields)) = (spec, &phase) else {
        return phase;
    };
    let mut m = spec.echo_head();
    let mut sla = spec.echo_sla();
    for (k, v) in fields {
        if ["rate", "rate_ramp", "rate_series", "smoothness", "users"].contains(&k.as_str())
            && let Some(s) = sla.take()
        {
            m.insert("sla".into(), s);
        }
        m.insert(k.clone(), v.clone());
    }
    if let Some(s) = sla {
        m.insert("sla".into(), s);
    }
    Value::Object(m)
}

fn spec_phase(s: &crate::plan::PhaseSpec) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(s.name));
    m.insert(
        "kind".into(),
        json!(if s.warmup { "warmup" } else { "profiling" }),
    );
    m.insert("type".into(), json!(s.pacing.name()));
    if s.exclude_from_results {
        m.insert("exclude_from_results".into(), json!(true));
    }
    let whole = |m: &mut Map<String, Value>, k: &str, v: Option<u64>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    let real = |m: &mut Map<String, Value>, k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.into(), float(v));
        }
    };
    let ramp = |m: &mut Map<String, Value>, k: &str, v: Option<f64>| {
        if let Some(d) = v {
            m.insert(k.into(), json!({ "duration": d }));
        }
    };
    whole(&mut m, "requests", s.requests);
    real(&mut m, "duration", s.duration);
    whole(&mut m, "sessions", s.sessions);
    whole(&mut m, "concurrency", s.concurrency);
    ramp(&mut m, "concurrency_ramp", s.concurrency_ramp);
    whole(&mut m, "prefill_concurrency", s.prefill_concurrency);
    ramp(&mut m, "prefill_ramp", s.prefill_ramp);
    real(&mut m, "grace_period", s.grace_period);
    // AIPerf's order: the fields every phase has, then its type's.
    if let Some((rate, delay)) = s.cancellation {
        let mut c = Map::new();
        c.insert("rate".into(), float(rate));
        if let Some(d) = delay {
            c.insert("delay".into(), float(d));
        }
        m.insert("cancellation".into(), Value::Object(c));
    }
    if s.seamless {
        m.insert("seamless".into(), json!(true));
    }
    real(
        &mut m,
        "failed_request_threshold",
        s.failed_request_threshold,
    );
    real(&mut m, "rate", s.rate);
    ramp(&mut m, "rate_ramp", s.rate_ramp);
    real(&mut m, "smoothness", s.smoothness);
    whole(&mut m, "users", s.users);
    if let Some(points) = &s.rate_series {
        let points: Vec<Value> = (points.iter())
            .map(|(t, q)| json!({"time_s": float(*t), "qps": float(*q)}))
            .collect();
        m.insert("rate_series".into(), json!({ "points": points }));
    }
    if let Some(a) = s.auto_offset {
        m.insert("auto_offset".into(), json!(a));
    }
    whole(&mut m, "start_offset", s.start_offset);
    whole(&mut m, "end_offset", s.end_offset);
    with_agentic(m, &s.agentic)
}

/// A phase's echo with agentic replay's keys the file gave it, where AIPerf's model puts them:
/// `timing_mode` before `failed_request_threshold`, the others after it, all before the fields
/// of the phase's type.
fn with_agentic(fields: Map<String, Value>, keys: &crate::plan::AgenticKeys) -> Value {
    let mut head = Map::new();
    if keys.replay {
        head.insert("timing_mode".into(), json!("agentic_replay"));
    } else if let Some(m) = &keys.mode {
        head.insert("timing_mode".into(), json!(m));
    }
    let mut rest = Map::new();
    let real = |m: &mut Map<String, Value>, k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.into(), float(v));
        }
    };
    real(
        &mut rest,
        "trajectory_start_min_ratio",
        keys.trajectory_start_min_ratio,
    );
    real(
        &mut rest,
        "trajectory_start_max_ratio",
        keys.trajectory_start_max_ratio,
    );
    if let Some(b) = keys.burst_phase_starts {
        rest.insert("burst_phase_starts".into(), json!(b));
    }
    real(
        &mut rest,
        "system_idle_gap_cap_seconds",
        keys.system_idle_gap_cap_seconds,
    );
    real(
        &mut rest,
        "agentic_cache_warmup_duration",
        keys.agentic_cache_warmup_duration,
    );
    real(
        &mut rest,
        "agentic_warmup_grace_period",
        keys.agentic_warmup_grace_period,
    );
    const TYPED: [&str; 8] = [
        "rate",
        "rate_ramp",
        "smoothness",
        "users",
        "rate_series",
        "auto_offset",
        "start_offset",
        "end_offset",
    ];
    let mut m = Map::new();
    for (k, v) in fields {
        if k == "failed_request_threshold" || TYPED.contains(&k.as_str()) {
            m.append(&mut head);
        }
        if TYPED.contains(&k.as_str()) {
            m.append(&mut rest);
        }
        m.insert(k, v);
    }
    m.append(&mut head);
    m.append(&mut rest);
    Value::Object(m)
}

fn artifacts(e: &Echo) -> Value {
    let a = &e.plan.settings;
    let mut m = Map::new();
    if let Some(d) = &a.artifact_dir {
        m.insert("dir".into(), json!(d.display().to_string()));
    }
    if let Some(p) = &a.profile_export_prefix {
        m.insert("prefix".into(), json!(p));
    }
    let file = e.plan.file_only.from_file;
    let exports = &e.plan.file_only.exports;
    if file && !exports.is_empty() {
        // A config file's exports as it gives them (AIPerf's order).
        for k in ["summary", "records", "raw"] {
            if let Some(v) = exports.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
    } else if e.given("export_level") {
        let records = match a.export_level {
            ExportLevelArg::Summary => json!(false),
            ExportLevelArg::Records | ExportLevelArg::Raw => json!(["jsonl"]),
        };
        m.insert("records".into(), records);
        m.insert("raw".into(), json!(a.export_level == ExportLevelArg::Raw));
    }
    // AIPerf's model order: `trace` before `slice_duration`, `show_trace_timing` after it.
    if e.given("export_http_trace") {
        m.insert("trace".into(), json!(a.http_trace.export_http_trace));
    }
    if let Some(s) = a.slice_duration {
        m.insert("slice_duration".into(), float(s));
    }
    if e.given("show_trace_timing") {
        m.insert(
            "show_trace_timing".into(),
            json!(a.http_trace.show_trace_timing),
        );
    }
    // A config file's echo has them only when set.
    if !file || e.given("auto_plot") || e.given("no_auto_plot") {
        m.insert("auto_plot".into(), json!(a.auto_plot));
    }
    if !file || e.given("plot_required") {
        m.insert("plot_required".into(), json!(a.outputs.plot_required));
    }
    if a.outputs.export_outputs_json {
        m.insert("export_outputs_json".into(), json!(true));
    }
    // A config file's `user_files`, as AIPerf echoes them: the content unrendered, the format
    // resolved.
    let files = &e.plan.file_only.user_files.files;
    if !files.is_empty() {
        let files: Vec<Value> = files
            .iter()
            .map(|f| json!({"path": f.path, "format": f.format.name(), "content": f.content}))
            .collect();
        m.insert("user_files".into(), Value::Array(files));
    }
    Value::Object(m)
}

/// The warmup's arrival when it inherits the profiling flags, as AIPerf builds it: the given
/// `--arrival-pattern` (gamma keeps `--arrival-smoothness`), else Poisson. A smoothness given
/// without a pattern makes the profiling phase gamma but not the warmup.
pub(super) fn warmup_inherited_arrival(args: &ProfileArgs) -> Arrival {
    match args.arrival_pattern {
        Some(ArrivalPatternArg::Gamma) => Arrival::Gamma {
            smoothness: args.arrival_smoothness.unwrap_or(1.0),
        },
        Some(ArrivalPatternArg::Constant) => Arrival::Constant,
        _ => Arrival::Poisson,
    }
}
/// AIPerf 0.13's `gpu_telemetry`: `{"enabled"}` alone unless `--gpu-telemetry` was given, then
/// also the URLs it named (as given, `http://` added), the collector and the display mode.
fn gpu_telemetry(cfg: &Config, given: Option<&[String]>) -> Value {
    let g = &cfg.gpu_telemetry;
    let mut o = serde_json::Map::new();
    o.insert("enabled".into(), Value::from(g.enabled));
    if let Some(items) = given {
        let named: Vec<String> = items
            .iter()
            .filter(|i| !i.eq_ignore_ascii_case("dashboard"))
            .map(|i| {
                if i.starts_with("http") {
                    i.clone()
                } else {
                    format!("http://{i}")
                }
            })
            .collect();
        o.insert("urls".into(), json!(named));
        o.insert("collector".into(), Value::from("dcgm"));
        let mode = if g.dashboard {
            "realtime_dashboard"
        } else {
            "summary"
        };
        o.insert("mode".into(), Value::from(mode));
    }
    Value::Object(o)
}
