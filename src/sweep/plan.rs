//! The sweep plan: which flags take a list, how lists and `--variant`s become variations
//! (grid / zip / scenarios, as AIPerf 0.13 expands them), each variation's label, directory
//! name and seed, and how a variation's values are applied to the command line.
//!
//! Pure: nothing here reads files or runs anything; the runner ([`super::run`]) parses each
//! variation's command line through the usual `profile` path, so a variation is validated
//! exactly as a single run with those values would be.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::error::SweepError;
use crate::cli::ProfileArgs;
use crate::cli::sweep::{SweepModeArg, SweepTypeArg};
pub use crate::config::convergence::{Convergence, ConvergenceMode};
use crate::plan::Plan;

/// A `profile` flag that AIPerf 0.13 accepts a comma-separated list on (a "magic list").
#[derive(Debug)]
pub struct SweepableFlag {
    /// Its long names with `--`; the first is the one written into a variation's command line.
    pub names: &'static [&'static str],
    /// AIPerf's parameter path (`phases.profiling.concurrency`): the key of `variation_values`
    /// and, joined with `=`, of the variation's label.
    pub path: &'static str,
    /// Whole numbers (otherwise floats, printed as Python prints a float: `10.0`).
    pub whole: bool,
    /// Its clap id (`concurrency`): what a variation marks as given.
    pub id: &'static str,
    /// Sets a value on the typed settings.
    pub set: fn(&mut ProfileArgs, f64),
}

impl PartialEq for SweepableFlag {
    /// Flags compare by their path (each swept path has one flag).
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for SweepableFlag {}

impl SweepableFlag {
    /// The last segment of [`Self::path`] (`concurrency`, `rate`, `mean`): the name of the
    /// parameter in the sweep aggregate and the start of the variation's directory name.
    pub fn short_name(&self) -> &'static str {
        self.path.rsplit('.').next().unwrap_or(self.path)
    }

    /// The flag that `name` spells: a long name with or without `--`, kebab or snake case
    /// (`concurrency`, `request_rate`, `--isl`).
    pub fn lookup(name: &str) -> Option<&'static SweepableFlag> {
        let bare = name.trim().trim_start_matches("--").replace('_', "-");
        SWEEPABLE
            .iter()
            .find(|f| f.names.iter().any(|n| n[2..] == bare))
    }
}

/// Every flag AIPerf 0.13 sweeps over when given a list, with AIPerf's parameter path: the rows
/// of the flag table (`cli::flags`) that say they sweep, in its order.
pub static SWEEPABLE: LazyLock<Vec<SweepableFlag>> = LazyLock::new(|| {
    crate::cli::flags::sweepable()
        .map(|(flag, sweep)| SweepableFlag {
            names: flag.names,
            path: sweep.path,
            whole: sweep.whole,
            id: flag.ids().first().map_or("", |(id, _)| id),
            set: sweep.set,
        })
        .collect()
});

/// One value of a swept flag.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// A whole number (`--concurrency 8`).
    Whole(u64),
    /// A float (`--request-rate 10.0`).
    Float(f64),
}

impl ParamValue {
    /// The value as a number.
    pub fn as_f64(self) -> f64 {
        match self {
            ParamValue::Whole(v) => v as f64,
            ParamValue::Float(v) => v,
        }
    }

    /// The value as JSON (`2`, `10.0`).
    pub fn to_json(self) -> Value {
        match self {
            ParamValue::Whole(v) => Value::from(v),
            ParamValue::Float(v) => Value::from(v),
        }
    }

    /// Parses one element of `flag`'s list.
    pub fn parse(flag: &SweepableFlag, s: &str) -> Result<Self, SweepError> {
        let t = s.trim();
        let bad = || SweepError::BadListValue {
            flag: flag.names[0].to_owned(),
            value: t.to_owned(),
            whole: flag.whole,
        };
        if flag.whole {
            t.parse().map(ParamValue::Whole).map_err(|_| bad())
        } else {
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(ParamValue::Float(v)),
                _ => Err(bad()),
            }
        }
    }
}

impl std::fmt::Display for ParamValue {
    /// As Python prints it (AIPerf's labels and directory names): `8`, `10.0`, `0.5`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Whole(v) => write!(f, "{v}"),
            ParamValue::Float(v) => f.write_str(&ringperf_metrics::export::py_float_str(*v)),
        }
    }
}

/// One swept flag's value in a variation.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The flag.
    pub flag: &'static SweepableFlag,
    /// Its value in this variation.
    pub value: ParamValue,
}

/// An extra `--flag value` a `--variant` sets that is not one of [`SWEEPABLE`] (e.g.
/// `streaming=false`): applied to the command line as written.
#[derive(Clone, Debug, PartialEq)]
pub struct RawOverride {
    /// The key as written in the variant (`extra-inputs`).
    pub key: String,
    /// The value as written.
    pub value: String,
}

/// One point of the sweep: the values it overrides on the base command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Variation {
    /// Its index in the plan, from 0 (`variation_index`); also offsets its seed.
    pub index: usize,
    /// AIPerf's label (`variation_label`): `path=value` pairs joined with `, `, or a
    /// `--variant`'s name.
    pub label: String,
    /// The swept flags' values, in AIPerf's order (paths sorted).
    pub values: Vec<Override>,
    /// A `--variant`'s other keys.
    pub raw: Vec<RawOverride>,
    /// A `--variant` (its directory is named after its label, not its values).
    pub scenario: bool,
    /// A run of a config file's scenario sweep: what it changes of the file's settings.
    pub file: Option<Box<crate::plan::FileScenario>>,
}

impl Variation {
    /// A variation of the swept values `values` (sorted by path here), labelled as AIPerf
    /// labels a grid point. What a planner calls to make a point of its own.
    pub fn new(index: usize, mut values: Vec<Override>) -> Self {
        values.sort_by_key(|o| o.flag.path);
        let label = values
            .iter()
            .map(|o| format!("{}={}", o.flag.path, o.value))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            index,
            label,
            values,
            raw: Vec::new(),
            scenario: false,
            file: None,
        }
    }

    /// The directory of the variation's runs: `concurrency_8`, several values joined with
    /// `__` (`concurrency_4__rate_10.0`); a `--variant` without swept values: its label with
    /// characters unsafe in a path removed, or `variation_<index>`.
    pub fn dir_name(&self) -> String {
        if let Some(f) = &self.file {
            return f.dir.clone();
        }
        let named = if !self.scenario && !self.values.is_empty() {
            self.values
                .iter()
                .map(|o| format!("{}_{}", o.flag.short_name(), o.value))
                .collect::<Vec<_>>()
                .join("__")
        } else {
            self.label.clone()
        };
        let safe: String = named
            .replace("..", "")
            .chars()
            .filter(|c| !matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*'))
            .collect();
        if safe.chars().all(|c| c == '.') {
            format!("variation_{}", self.index)
        } else {
            safe
        }
    }

    /// `variation_values`: `{path: value}` of the swept flags; for a `--variant`, AIPerf's
    /// `{"benchmark": <its overrides as compact JSON>}` ([`Variation::benchmark_override`]).
    pub fn values_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        // A file's scenario: its values, a nested one as its compact JSON, keys sorted.
        if let Some(f) = &self.file {
            for (k, v) in &f.values {
                let v = match v {
                    Value::Object(_) | Value::Array(_) => {
                        Value::from(serde_json::to_string(&sorted(v.clone())).unwrap_or_default())
                    }
                    v => v.clone(),
                };
                m.insert(k.clone(), v);
            }
            return m;
        }
        if self.scenario {
            m.insert("benchmark".into(), Value::from(self.benchmark_override()));
            return m;
        }
        for o in &self.values {
            m.insert(o.flag.path.to_owned(), o.value.to_json());
        }
        m
    }

    /// A `--variant`'s swept values as AIPerf writes a scenario's overrides: the config
    /// subtree they set, keys sorted, compact JSON
    /// (`{"datasets":[{"name":"main","prompts":{"isl":{"mean":16}}}],"phases":[{"concurrency":1,"name":"profiling"}]}`).
    /// Other keys of the variant are not in it.
    pub fn benchmark_override(&self) -> String {
        // section ("datasets" / "phases") -> entry name -> the entry's object.
        let mut sections: std::collections::BTreeMap<
            &str,
            std::collections::BTreeMap<&str, Value>,
        > = std::collections::BTreeMap::new();
        for o in &self.values {
            let mut parts = o.flag.path.split('.');
            let (Some(section), Some(name)) = (parts.next(), parts.next()) else {
                continue;
            };
            let entry = sections
                .entry(section)
                .or_default()
                .entry(name)
                .or_insert_with(|| serde_json::json!({ "name": name }));
            let rest: Vec<&str> = parts.collect();
            let mut at = entry;
            for (i, key) in rest.iter().enumerate() {
                let Some(obj) = at.as_object_mut() else { break };
                if i + 1 == rest.len() {
                    obj.insert((*key).to_owned(), o.value.to_json());
                    break;
                }
                at = obj
                    .entry((*key).to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
        let doc: Map<String, Value> = sections
            .into_iter()
            .map(|(k, entries)| (k.to_owned(), Value::Array(entries.into_values().collect())))
            .collect();
        serde_json::to_string(&sorted(Value::Object(doc))).unwrap_or_default()
    }

    /// The value this variation gives `flag`, if it sets it.
    pub fn value_of(&self, flag: &SweepableFlag) -> Option<ParamValue> {
        self.values
            .iter()
            .find(|o| std::ptr::eq(o.flag, flag) || o.flag == flag)
            .map(|o| o.value)
    }

    /// Sets this variation's values on `plan`: each swept flag's typed value, then a
    /// `--variant`'s other keys as the flags they name (`true` / `false` for a switch: on, or
    /// back to its default and not given).
    ///
    /// # Errors
    /// A `--variant` key that is not a flag, or its value is not one of the flag's.
    pub fn apply_to(&self, plan: &mut Plan) -> Result<(), SweepError> {
        if let Some(f) = &self.file {
            // Over the command line's flags: a scenario's value wins, as in AIPerf.
            let (settings, given) =
                crate::cli::parse::over(&plan.settings, &plan.given, &f.set, &f.cleared).map_err(
                    |e| SweepError::Variation {
                        label: self.label.clone(),
                        source: e.into(),
                    },
                )?;
            plan.settings = settings;
            plan.given = given;
            let mut file_only = (*f.file_only).clone();
            // The file's warmup as the flags beside the file left it, unless the run changes it.
            if f.keeps_warmup {
                file_only.phases_before = plan.file_only.phases_before.clone();
            }
            plan.file_only = file_only;
        }
        for o in &self.values {
            let set = o.flag.set;
            plan.set_given(o.flag.id, |s| set(s, o.value.as_f64()), o.value.to_string());
        }
        if self.raw.is_empty() {
            return Ok(());
        }
        let mut set: Vec<crate::cli::parse::Setting> = Vec::new();
        let mut cleared = Vec::new();
        for r in &self.raw {
            let name = format!("--{}", r.key.trim_start_matches("--").replace('_', "-"));
            match r.value.as_str() {
                "true" | "True" => set.push((name, Vec::new())),
                "false" | "False" => cleared.push(name),
                v => set.push((name, vec![(Value::from(v), v.to_owned())])),
            }
        }
        let (settings, given) =
            crate::cli::parse::over(&plan.settings, &plan.given, &set, &cleared).map_err(|e| {
                SweepError::Variation {
                    label: self.label.clone(),
                    source: e.into(),
                }
            })?;
        plan.settings = settings;
        plan.given = given;
        Ok(())
    }
}

/// `v` with every object's keys in sorted order (Python's `sort_keys`).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        v => v,
    }
}

/// The list-valued flags of a `profile` command line, and the command line clap can parse:
/// each list replaced by its first element (AIPerf's placeholder for the base config).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListFlags {
    /// `argv` with every list cut to its first element.
    pub placeholder_argv: Vec<String>,
    /// Each list-valued flag and its values, in command-line order.
    pub lists: Vec<ListValues>,
}

/// A list-valued flag and its values.
pub type ListValues = (&'static SweepableFlag, Vec<ParamValue>);

/// Finds the list values (`--concurrency 1,2,4`, `--isl=128,512`) of a `profile` command line.
/// A flag not in [`SWEEPABLE`] keeps its commas (the flag's own parser judges them).
///
/// # Errors
/// An element that is not a number of the flag's kind, an empty element, or a flag listed
/// twice.
pub fn extract_lists(argv: &[String]) -> Result<ListFlags, SweepError> {
    let mut out = ListFlags {
        placeholder_argv: Vec::with_capacity(argv.len()),
        lists: Vec::new(),
    };
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let flag = name
            .starts_with("--")
            .then(|| SweepableFlag::lookup(name))
            .flatten();
        let value = inline.clone().or_else(|| argv.get(i + 1).cloned());
        match (flag, value) {
            (Some(flag), Some(v)) if v.contains(',') => {
                if out.lists.iter().any(|(f, _)| *f == flag) {
                    return Err(SweepError::ListedTwice {
                        flag: flag.names[0],
                    });
                }
                let values = v
                    .split(',')
                    .map(|e| ParamValue::parse(flag, e))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| match e {
                        // Named as the user wrote it (`--isl`, not its canonical name).
                        SweepError::BadListValue { value, whole, .. } => SweepError::BadListValue {
                            flag: name.to_owned(),
                            value,
                            whole,
                        },
                        e => e,
                    })?;
                out.placeholder_argv.push(name.to_owned());
                out.placeholder_argv.push(values[0].to_string());
                out.lists.push((flag, values));
                i += if inline.is_some() { 1 } else { 2 };
            }
            _ => {
                out.placeholder_argv.push(a.clone());
                i += 1;
            }
        }
    }
    Ok(out)
}

/// How lists combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepType {
    /// Every combination (Cartesian product, paths sorted).
    Grid,
    /// Element by element.
    Zip,
    /// `--variant`s, one variation each.
    Scenarios,
}

/// Loop order of variations and trials (`--parameter-sweep-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepMode {
    /// Trials outside, variations inside: `profile_runs/trial_NNNN/<variation>/`.
    Repeated,
    /// Variations outside: `<variation>/profile_runs/trial_NNNN/`.
    Independent,
}

impl SweepMode {
    /// AIPerf's name (`sweep_mode` in the aggregates).
    pub fn as_str(self) -> &'static str {
        match self {
            SweepMode::Repeated => "repeated",
            SweepMode::Independent => "independent",
        }
    }
}

/// The whole sweep: its variations and how they run.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPlan {
    /// The variations, in run order within a trial.
    pub variations: Vec<Variation>,
    /// Each swept flag and its values (`metadata.sweep_parameters`).
    pub parameters: Vec<(&'static SweepableFlag, Vec<ParamValue>)>,
    /// How the lists combined.
    pub sweep_type: SweepType,
    /// Loop order.
    pub mode: SweepMode,
    /// Trials per variation (`--num-profile-runs`); with convergence, the cap.
    pub trials: u32,
    /// Pause between variations.
    pub variation_cooldown_seconds: f64,
    /// Pause between trials (`--profile-run-cooldown-seconds`).
    pub trial_cooldown_seconds: f64,
    /// `--confidence-level`.
    pub confidence_level: f64,
    /// `--parameter-sweep-same-seed`.
    pub same_seed: bool,
    /// `--vary-seed-per-trial`.
    pub vary_seed_per_trial: bool,
    /// `--random-seed`, or 42 (`--set-consistent-seed`, the default); `None` with
    /// `--no-set-consistent-seed` and no seed.
    pub base_seed: Option<u64>,
    /// `--no-sweep-table`.
    pub no_sweep_table: bool,
    /// Adaptive convergence, if asked.
    pub convergence: Option<Convergence>,
    /// Only the first trial of each variation has the warmup phase.
    pub warmup_first_trial_only: bool,
    /// The plan every variation starts from: the command line with each list cut to its first
    /// element (its `command` is the line as given, echoed as `cli_command`).
    pub base: Plan,
    /// A search recipe's SLA bounds and Pareto axes for the sweep aggregate.
    pub annotations: super::annotate::Annotations,
    /// An adaptive search's bound on its points: the points are chosen as it goes, so their
    /// count is not known ahead (`variations` holds the first only); at most this many.
    pub at_most: Option<u32>,
}

impl SweepPlan {
    /// The sweep of `base` (a `profile` plan whose lists were cut to their first element),
    /// swept over `lists`, or `None` when it is not a sweep (no list, no `--variant`).
    ///
    /// # Errors
    /// AIPerf's refusals ([`SweepError`]).
    pub fn from_cli(base: &Plan, lists: &[ListValues]) -> Result<Option<Self>, SweepError> {
        let args = &base.settings;
        let sw = &args.sweep;
        if lists.is_empty() && sw.variants.is_empty() && base.file_only.scenarios.is_empty() {
            return Ok(None);
        }
        check_refusals(base, lists)?;
        let scenarios = &base.file_only.scenarios;
        let (sweep_type, variations) = if !scenarios.is_empty() {
            let variations = scenarios
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut v = Variation::new(i, Vec::new());
                    v.label = f.label.clone();
                    v.scenario = true;
                    v.file = Some(Box::new(f.clone()));
                    v
                })
                .collect();
            (SweepType::Scenarios, variations)
        } else if sw.variants.is_empty() {
            let zip = sw.sweep_type == Some(SweepTypeArg::Zip);
            if zip {
                (SweepType::Zip, zip_variations(lists)?)
            } else {
                (SweepType::Grid, grid_variations(lists))
            }
        } else {
            (SweepType::Scenarios, variant_variations(&sw.variants)?)
        };
        let mut parameters = lists.to_vec();
        parameters.sort_by_key(|(f, _)| f.path);
        let mr = &args.multi_run;
        let base_seed = args
            .random_seed
            .or((!mr.no_consistent_seed).then_some(crate::config::multi_run::CONSISTENT_SEED));
        let cooldown = sw.parameter_sweep_cooldown_seconds.unwrap_or(0.0);
        if !(cooldown.is_finite() && cooldown >= 0.0) {
            return Err(SweepError::BadCooldown { value: cooldown });
        }
        Ok(Some(Self {
            variations,
            parameters,
            sweep_type,
            mode: match sw.parameter_sweep_mode {
                Some(SweepModeArg::Independent) => SweepMode::Independent,
                _ => SweepMode::Repeated,
            },
            trials: mr.num_profile_runs.max(1),
            variation_cooldown_seconds: cooldown,
            trial_cooldown_seconds: mr.profile_run_cooldown_seconds,
            confidence_level: mr.confidence_level,
            same_seed: sw.parameter_sweep_same_seed,
            vary_seed_per_trial: sw.vary_seed_per_trial,
            base_seed,
            no_sweep_table: sw.no_sweep_table,
            convergence: crate::config::convergence::from_args(
                args,
                base.file_only.convergence_min_runs,
            )
            .map_err(SweepError::Convergence)?,
            warmup_first_trial_only: !mr.warmup_every_run,
            base: base.clone(),
            annotations: super::annotate::Annotations::default(),
            at_most: None,
        }))
    }

    /// The seed of `variation`'s trial `trial` (from 0), as AIPerf derives it: with
    /// `--vary-seed-per-trial` a SHA-256 of `<seed>:variation:<label>:trial:<trial>`; with
    /// `--parameter-sweep-same-seed` the seed; otherwise seed + the variation's index.
    pub fn seed_of(&self, variation: &Variation, trial: u32) -> Option<u64> {
        let base = self.base_seed?;
        if self.vary_seed_per_trial {
            return Some(derive_seed(
                base,
                &format!("{}:trial:{trial}", variation.label),
            ));
        }
        if self.same_seed {
            return Some(base);
        }
        Some(base + variation.index as u64)
    }

    /// The plan of `variation`'s trial `trial`: the base with the variation's values and the
    /// trial's seed.
    ///
    /// # Errors
    /// A `--variant` key does not apply ([`Variation::apply_to`]).
    pub fn plan_of(&self, variation: &Variation, trial: u32) -> Result<Plan, SweepError> {
        let mut plan = self.base.clone();
        variation.apply_to(&mut plan)?;
        if let Some(seed) = self.seed_of(variation, trial) {
            plan.set_seed(seed);
        }
        Ok(plan)
    }

    /// The order the runs go in: `(variation index, trial)` pairs, trials outside in
    /// `repeated` mode, variations outside in `independent` mode.
    pub fn run_order(&self) -> Vec<(usize, u32)> {
        let (nv, nt) = (self.variations.len(), self.trials);
        match self.mode {
            SweepMode::Repeated => (0..nt).flat_map(|t| (0..nv).map(move |v| (v, t))).collect(),
            SweepMode::Independent => (0..nv).flat_map(|v| (0..nt).map(move |t| (v, t))).collect(),
        }
    }

    /// The directory of `variation`'s trial `trial` under the artifact directory `base`.
    pub fn run_dir(
        &self,
        base: &std::path::Path,
        variation: &Variation,
        trial: u32,
    ) -> std::path::PathBuf {
        let trial_dir = format!("trial_{:04}", trial + 1);
        let runs = ringperf_metrics::export::aggregate::RUNS_DIR;
        match (self.trials > 1, self.mode) {
            (false, _) => base.join(variation.dir_name()),
            (true, SweepMode::Repeated) => {
                base.join(runs).join(trial_dir).join(variation.dir_name())
            }
            (true, SweepMode::Independent) => {
                base.join(variation.dir_name()).join(runs).join(trial_dir)
            }
        }
    }

    /// The directory of `variation`'s aggregate under `base`.
    pub fn aggregate_dir(
        &self,
        base: &std::path::Path,
        variation: &Variation,
    ) -> std::path::PathBuf {
        let agg = ringperf_metrics::export::aggregate::AGGREGATE_DIR;
        match (self.trials > 1, self.mode) {
            (true, SweepMode::Independent) => base.join(variation.dir_name()).join(agg),
            _ => base.join(agg).join(variation.dir_name()),
        }
    }

    /// The directory of the sweep aggregate under `base`.
    pub fn sweep_aggregate_dir(&self, base: &std::path::Path) -> std::path::PathBuf {
        if self.trials > 1 && self.mode == SweepMode::Repeated {
            base.join(ringperf_metrics::export::aggregate::AGGREGATE_DIR)
                .join(SWEEP_AGGREGATE_DIR)
        } else {
            base.join(SWEEP_AGGREGATE_DIR)
        }
    }
}

/// The sweep aggregate's directory name.
pub const SWEEP_AGGREGATE_DIR: &str = "sweep_aggregate";

/// AIPerf's `derive_variation_seed`: the first 8 bytes (big-endian) of SHA-256 over
/// `<root>:variation:<label>`, masked to 63 bits.
pub fn derive_seed(root: u64, label: &str) -> u64 {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{root}:variation:{label}").as_bytes(),
    );
    let mut b = [0u8; 8];
    b.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(b) & (i64::MAX as u64)
}

/// The grid: every combination, paths sorted, the last path varying fastest.
pub fn grid_variations(lists: &[(&'static SweepableFlag, Vec<ParamValue>)]) -> Vec<Variation> {
    let mut sorted = lists.to_vec();
    sorted.sort_by_key(|(f, _)| f.path);
    let mut combos: Vec<Vec<Override>> = vec![Vec::new()];
    for (flag, values) in &sorted {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(Override { flag, value: *v });
                    c
                })
            })
            .collect();
    }
    combos
        .into_iter()
        .enumerate()
        .map(|(i, c)| Variation::new(i, c))
        .collect()
}

/// The zip: element `i` of every list, paths sorted.
///
/// # Errors
/// Lists of unequal length, with AIPerf's message.
pub fn zip_variations(
    lists: &[(&'static SweepableFlag, Vec<ParamValue>)],
) -> Result<Vec<Variation>, SweepError> {
    let n = lists.first().map_or(0, |(_, v)| v.len());
    if lists.iter().any(|(_, v)| v.len() != n) {
        return Err(SweepError::ZipLengths {
            lengths: lists
                .iter()
                .map(|(f, v)| (f.path.to_owned(), v.len()))
                .collect(),
        });
    }
    Ok((0..n)
        .map(|i| {
            Variation::new(
                i,
                lists
                    .iter()
                    .map(|(flag, v)| Override { flag, value: v[i] })
                    .collect(),
            )
        })
        .collect())
}

/// One variation per `--variant`, in order.
///
/// # Errors
/// A single `--variant`, or one that does not parse.
pub fn variant_variations(specs: &[String]) -> Result<Vec<Variation>, SweepError> {
    if specs.len() == 1 {
        return Err(SweepError::SingleVariant);
    }
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (name, pairs) = parse_variant(s)?;
            let mut values = Vec::new();
            let mut raw = Vec::new();
            for (k, v) in pairs {
                match SweepableFlag::lookup(&k) {
                    Some(flag) => values.push(Override {
                        flag,
                        value: ParamValue::parse(flag, &v)?,
                    }),
                    None => raw.push(RawOverride { key: k, value: v }),
                }
            }
            let mut var = Variation::new(i, values);
            var.raw = raw;
            // AIPerf names an unnamed variant `v<index>`; its directory is its name.
            var.label = name.unwrap_or_else(|| format!("v{i}"));
            var.scenario = true;
            Ok(var)
        })
        .collect()
}

/// A parsed `--variant`: its name, if any, and its `(key, value)` pairs in order.
pub type ParsedVariant = (Option<String>, Vec<(String, String)>);

/// Parses `[name:] key=value, key=value` (AIPerf's `--variant`): the optional name (text
/// before a `:` that has no `=`) and the pairs in order, values unquoted.
///
/// # Errors
/// Empty input, an empty name or body, a token without `=`, an empty key, a repeated key.
pub fn parse_variant(s: &str) -> Result<ParsedVariant, SweepError> {
    let bad = |why: String| SweepError::BadVariant {
        spec: s.to_owned(),
        why,
    };
    let raw = s.trim();
    if raw.is_empty() {
        return Err(bad("it is empty".into()));
    }
    let (mut name, mut body) = (None, raw);
    if let Some((head, tail)) = raw.split_once(':')
        && !head.contains('=')
    {
        let n = head.trim();
        if n.is_empty() {
            return Err(bad("empty name before ':'".into()));
        }
        name = Some(n.to_owned());
        body = tail.trim();
    }
    if body.is_empty() {
        return Err(bad("empty body".into()));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for chunk in body.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let Some((k, v)) = chunk.split_once('=') else {
            return Err(bad(format!(
                "token '{chunk}' is missing '=' (expected key=value)"
            )));
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(bad(format!("empty key in token '{chunk}'")));
        }
        if pairs.iter().any(|(p, _)| p == k) {
            return Err(bad(format!("duplicate key '{k}'")));
        }
        let v = if v.len() >= 2
            && (v.starts_with('"') && v.ends_with('"') || v.starts_with('\'') && v.ends_with('\''))
        {
            &v[1..v.len() - 1]
        } else {
            v
        };
        pairs.push((k.to_owned(), v.to_owned()));
    }
    if pairs.is_empty() {
        return Err(bad("no key=value pairs".into()));
    }
    Ok((name, pairs))
}

/// AIPerf's refusals of a sweep command line.
fn check_refusals(base: &Plan, lists: &[ListValues]) -> Result<(), SweepError> {
    let args = &base.settings;
    if !base.file_only.summary_json() {
        return Err(SweepError::SummaryOff);
    }
    if !args.sweep.variants.is_empty() && !lists.is_empty() {
        return Err(SweepError::VariantsWithLists {
            flags: lists.iter().map(|(f, _)| f.names[0]).collect(),
        });
    }
    if let Some(s) = &args.agentic.scenario {
        if !args.agentic.unsafe_override {
            return Err(SweepError::Scenario(s.clone()));
        }
        eprintln!(
            "ringperf: warning: Scenario violation (override active): {}",
            super::error::scenario_sweep(s)
        );
    }
    Ok(())
}

/// The sweep-only flags given on a command line that is not a sweep: AIPerf accepts them and
/// they change nothing, so each gets one warning line (docs/flags.md "Flags per mode").
pub fn unused_without_sweep(args: &ProfileArgs) -> Vec<String> {
    let sw = &args.sweep;
    [
        (sw.sweep_type.is_some(), "--sweep-type"),
        (sw.parameter_sweep_mode.is_some(), "--parameter-sweep-mode"),
        (
            sw.parameter_sweep_cooldown_seconds.is_some(),
            "--parameter-sweep-cooldown-seconds",
        ),
        (
            sw.parameter_sweep_same_seed || sw.no_parameter_sweep_same_seed,
            "--(no-)parameter-sweep-same-seed",
        ),
        (
            sw.vary_seed_per_trial || sw.no_vary_seed_per_trial,
            "--(no-)vary-seed-per-trial",
        ),
        (sw.no_sweep_table, "--no-sweep-table"),
    ]
    .into_iter()
    .filter(|(given, _)| *given)
    .map(|(_, flag)| {
        format!(
            "{flag} changes nothing without a sweep (list values such as --concurrency 1,2, or \
             --variant)"
        )
    })
    .collect()
}
