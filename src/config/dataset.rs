//! The Input group validated (docs/flags.md, docs/datasets.md): where the dataset comes from,
//! how it is sampled, and the load options, with AIPerf's cross-flag rules.

use serde_json::{Map, Value, json};

use crate::cli::input::{InputArgs, SamplingArg};
use ringperf_wire::conversation::Sampling;
use ringperf_workload::workload::loader::{
    AIPERF_CUSTOM_TYPES, DEFAULT_BLOCK_SIZE, DatasetKind, LoadSpec, Source,
};

use super::ConfigError;
use crate::trace_tools::synthesize::SynthesisParams;

/// AIPerf 0.13's `--public-dataset` names (`PublicDatasetType`), `_` spelling.
const AIPERF_PUBLIC_DATASETS: &[&str] = &[
    "exgentic_v2",
    "exgentic",
    "sharegpt",
    "aimo",
    "mmstar",
    "mmvu",
    "vision_arena",
    "llava_onevision",
    "aimo_aime",
    "aimo_numina_cot",
    "aimo_numina_1_5",
    "spec_bench",
    "spec_al_gsm8k",
    "spec_al_math500",
    "spec_al_humaneval",
    "spec_al_mbpp",
    "spec_al_mtbench",
    "instruct_coder",
    "blazedit_5k",
    "blazedit_10k",
    "librispeech",
    "voxpopuli",
    "gigaspeech",
    "ami",
    "spgispeech",
    "weka_hf",
];

/// What the rest of the configuration tells the Input group.
#[derive(Clone, Copy, Debug)]
pub struct InputContext {
    /// The run's seed and whether the user gave it.
    pub seed: u64,
    pub seeded: bool,
    /// `--num-dataset-entries`.
    pub entries: usize,
    /// The endpoint sends a system message (chat).
    pub system_message: bool,
    /// `--osl` was given.
    pub osl_given: bool,
    /// `--uuid-and-strip` (checked against the endpoint type before).
    pub uuid_and_strip: bool,
    /// The batch-size flags, for a `random_pool` file.
    pub pool_batch: ringperf_workload::workload::loader::random_pool::PoolBatch,
}

/// The validated Input group.
#[derive(Clone, Debug, PartialEq)]
pub struct InputConfig {
    /// The dataset to load from a file; `None` means synthetic.
    pub load: Option<LoadSpec>,
    /// `--dataset-sampling-strategy`; `None` takes the dataset type's default.
    pub sampling: Option<Sampling>,
    /// `--allow-dataset-wrap`: agentic replay may run more lanes than there are traces.
    pub allow_dataset_wrap: bool,
    /// `--ignore-trace-delays`.
    pub ignore_trace_delays: bool,
    /// `--prompt-input-tokens-block-size`, if given.
    pub block_size: Option<usize>,
    /// `--synthesis-*` on a mooncake trace, when any was given (the run replays the trace
    /// reshaped, as `ringperf synthesize` writes it: `run/prepare.rs`).
    pub synthesis: Option<SynthesisParams>,
    /// The `baseten_trace` flags given, as `input_config` echoes them (AIPerf's keys and
    /// order).
    pub baseten_echo: Vec<(&'static str, Value)>,
}

impl InputConfig {
    /// Validates the Input group flags.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the flag: a type without a file, a public dataset with a type,
    /// a type or dataset ringperf does not read, a zero block size.
    /// `inline`: a config file's inline records, read in place of `--input-file`.
    pub fn from_args(
        args: &InputArgs,
        cx: &InputContext,
        inline: Option<&crate::plan::InlineRecords>,
    ) -> Result<Self, ConfigError> {
        if args.block_size == Some(0) {
            return Err(ConfigError::flag(
                "--prompt-input-tokens-block-size must be at least 1",
            ));
        }
        let kind = args
            .custom_dataset_type
            .as_deref()
            .map(custom_type)
            .transpose()?;
        let hf_weka = args
            .hf_weka_dataset
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        // `--hf-weka-dataset` alone selects `weka_hf`, as AIPerf does.
        let public = match (&args.public_dataset, hf_weka, &args.input_file) {
            (None, Some(_), None) if kind.is_none() => Some("weka_hf".to_string()),
            (p, _, _) => p.clone(),
        };
        let source = match (&public, &args.input_file) {
            (Some(_), _) if kind.is_some() => {
                return Err(ConfigError::flag(
                    "--public-dataset and --custom-dataset-type are mutually exclusive",
                ));
            }
            (Some(name), _)
                if let Some(repo) = ringperf_workload::workload::loader::weka_corpus_repo(name) =>
            {
                let dataset = name.trim().replace('-', "_").to_ascii_lowercase();
                let repo = match (repo, hf_weka) {
                    ("", Some(r)) => r.to_string(),
                    ("", None) => {
                        return Err(ConfigError::flag(
                            "dataset weka_hf (--public-dataset weka_hf) requires a non-empty \
                             hf_weka_dataset (--hf-weka-dataset) HuggingFace repo",
                        ));
                    }
                    (r, _) => r.to_string(),
                };
                if hf_weka.is_some() && dataset != "weka_hf" {
                    return Err(ConfigError::flag(
                        "hf_weka_dataset (--hf-weka-dataset) can only be used with dataset \
                         weka_hf (--public-dataset weka_hf)",
                    ));
                }
                Some(Source::WekaHub { dataset, repo })
            }
            (Some(_), _) if hf_weka.is_some() => {
                return Err(ConfigError::flag(
                    "hf_weka_dataset (--hf-weka-dataset) can only be used with dataset weka_hf \
                     (--public-dataset weka_hf)",
                ));
            }
            (Some(name), input_file) => {
                public_dataset(name)?;
                Some(Source::ShareGpt {
                    input_file: input_file.clone(),
                })
            }
            (None, Some(path)) if inline.is_some() => {
                return Err(ConfigError::flag(format!(
                    "FileDataset requires exactly one source: set either `path:` (load from \
                     disk) or `records:` (embed in YAML), not both. Got path={}, records=<set>.",
                    path.display()
                )));
            }
            (None, Some(path)) => Some(Source::File {
                path: path.clone(),
                kind,
            }),
            (None, None) if let Some(records) = inline => {
                if let Some(k) = kind.filter(|k| !k.reads_inline()) {
                    return Err(ConfigError::flag(format!(
                        "--custom-dataset-type {k}: {} holds inline records, and AIPerf 0.13 \
                         reads {k} from a file only; give the dataset a `path:`",
                        records.at
                    )));
                }
                if !records.pools.is_empty() && kind != Some(DatasetKind::RandomPool) {
                    return Err(ConfigError::flag(format!(
                        "{}: records as a dict of pools are random_pool's only",
                        records.at
                    )));
                }
                Some(Source::Inline {
                    kind,
                    name: records.at.clone().into(),
                    jsonl: records.jsonl(),
                    pools: records.pools_jsonl(),
                })
            }
            (None, None) if kind.is_some() => {
                return Err(ConfigError::flag(
                    "--custom-dataset-type needs --input-file (the dataset to read)",
                ));
            }
            (None, None) => None,
        };
        // AIPerf routes the block size to the hash-id trace loaders only, and refuses it for a
        // file type whose prompts are never built from hash ids.
        if let (Some(_), Some(k)) = (args.block_size, kind)
            && !k.takes_block_size()
        {
            return Err(ConfigError::flag(
                "--isl-block-size only applies to synthetic generation or hash-id trace replay \
                 (mooncake_trace, bailian_trace, baseten_trace, tracelab). The selected dataset \
                 does not decode hash-id token blocks; drop --isl-block-size.",
            ));
        }
        let synthesis = synthesis(args, kind, source.as_ref())?;
        let weka = weka_params(args, kind, source.as_ref())?;
        let baseten = baseten_params(args, kind, source.as_ref())?;
        let load = source.map(|source| LoadSpec {
            source,
            seed: cx.seed,
            seeded: cx.seeded,
            entries: cx.entries,
            block_size: args.block_size,
            ignore_trace_delays: args.ignore_trace_delays,
            system_message: cx.system_message,
            osl_given: cx.osl_given,
            hash_path: None,
            uuid_and_strip: cx.uuid_and_strip,
            pool_batch: cx.pool_batch,
            weka: weka.clone(),
            baseten: baseten.clone(),
        });
        Ok(Self {
            load,
            sampling: args.dataset_sampling_strategy.map(|s| match s {
                SamplingArg::Sequential => Sampling::Sequential,
                SamplingArg::Random => Sampling::Random,
                SamplingArg::Shuffle => Sampling::Shuffle,
            }),
            allow_dataset_wrap: args.allow_dataset_wrap,
            ignore_trace_delays: args.ignore_trace_delays,
            block_size: args.block_size,
            synthesis,
            baseten_echo: baseten_echo(args),
        })
    }

    /// The dataset is read from `--input-file` as a file (not a public dataset): a trace it
    /// may be.
    pub fn reads_file(&self) -> bool {
        matches!(&self.load, Some(spec) if matches!(spec.source, Source::File { .. }))
    }

    /// Under a fixed schedule the timestamps drive the run, so `--ignore-trace-delays` has no
    /// effect (AIPerf: "No effect under fixed-schedule").
    pub fn keep_timestamps(&mut self) {
        if let Some(spec) = &mut self.load {
            spec.ignore_trace_delays = false;
        }
    }

    /// The sampling the run uses for a dataset whose own default is `dataset_default`.
    pub fn sampling_for(&self, dataset_default: Sampling) -> Sampling {
        self.sampling.unwrap_or(dataset_default)
    }

    /// The `datasets[0]` entry of the JSON export's `input_config` for a file or public
    /// dataset, in AIPerf's shape and field order (`FileDataset` / `PublicDataset`); `None` for
    /// synthetic. `entries` and `seed` are echoed only when the command line gave them.
    /// `set(key)`: a config file set that synthesis option (echoed even at its identity).
    pub fn dataset_json(
        &self,
        entries: Option<u64>,
        seed: Option<u64>,
        set: &dyn Fn(&str) -> bool,
    ) -> Option<Value> {
        // (Paths as AIPerf's `pathlib.Path` writes them.)
        let spec = self.load.as_ref()?;
        let mut m = Map::new();
        m.insert("name".into(), json!("main"));
        let file = match &spec.source {
            Source::File { path, kind } => {
                m.insert("type".into(), json!("file"));
                m.insert("path".into(), json!(as_python_path(path)));
                if let Some(k) = kind {
                    m.insert("format".into(), json!(k.as_str()));
                }
                true
            }
            Source::Inline {
                kind, jsonl, pools, ..
            } => {
                m.insert("type".into(), json!("file"));
                let parsed = |text: &str| -> Value {
                    let lines = text.lines().filter_map(|l| serde_json::from_str(l).ok());
                    Value::Array(lines.collect())
                };
                let records = if pools.is_empty() {
                    parsed(jsonl)
                } else {
                    let pools = pools.iter().map(|(k, text)| (k.clone(), parsed(text)));
                    Value::Object(pools.collect())
                };
                m.insert("records".into(), records);
                if let Some(k) = kind {
                    m.insert("format".into(), json!(k.as_str()));
                }
                true
            }
            Source::ShareGpt { input_file } => {
                m.insert("type".into(), json!("public"));
                m.insert("dataset".into(), json!("sharegpt"));
                if let Some(p) = input_file {
                    m.insert("path".into(), json!(as_python_path(p)));
                }
                false
            }
            Source::WekaHub { dataset, repo } => {
                m.insert("type".into(), json!("public"));
                m.insert("dataset".into(), json!(dataset));
                if dataset == "weka_hf" {
                    m.insert("hf_weka_dataset".into(), json!(repo));
                }
                false
            }
        };
        if let (Some(s), true) = (self.sampling, file) {
            m.insert("sampling".into(), json!(s.as_str()));
        }
        if file && let Some(block) = self.synthesis_json(set) {
            m.insert("synthesis".into(), block);
        }
        if let Some(n) = entries {
            m.insert("entries".into(), json!(n));
        }
        if let Some(s) = seed {
            m.insert("random_seed".into(), json!(s));
        }
        for (k, v) in &self.baseten_echo {
            m.insert((*k).into(), v.clone());
        }
        if let (Some(s), false) = (self.sampling, file) {
            m.insert("sampling".into(), json!(s.as_str()));
        }
        if let Some(b) = self.block_size {
            m.insert("block_size".into(), json!(b));
        }
        if self.ignore_trace_delays {
            m.insert("ignore_trace_delays".into(), json!(true));
        }
        let weka = &spec.weka;
        if weka.think_time_only {
            m.insert("use_think_time_only".into(), json!(true));
        }
        if let Some(n) = weka.max_context_length {
            m.insert("max_context_length".into(), json!(n));
        }
        if let Some(c) = weka.delay_cap_s {
            m.insert("inter_turn_delay_cap_seconds".into(), json!(c));
        }
        if let Some(c) = weka.idle_gap_cap_s {
            m.insert("trace_idle_gap_cap_seconds".into(), json!(c));
        }
        if self.allow_dataset_wrap && !file {
            m.insert("synthesis".into(), json!({"allow_dataset_wrap": true}));
        }
        Some(Value::Object(m))
    }
}

impl InputConfig {
    /// `datasets[0].synthesis` as AIPerf echoes it: the options given that differ from their
    /// identity, or that a config file `set` (max ISL / OSL when given), then
    /// `allow_dataset_wrap`; `None` when empty.
    fn synthesis_json(&self, set: &dyn Fn(&str) -> bool) -> Option<Value> {
        let mut m = Map::new();
        if let Some(p) = &self.synthesis {
            let d = SynthesisParams::default();
            for (key, v, identity) in [
                ("speedup_ratio", p.speedup_ratio, d.speedup_ratio),
                (
                    "prefix_len_multiplier",
                    p.prefix_len_multiplier,
                    d.prefix_len_multiplier,
                ),
            ] {
                if v != identity || set(key) {
                    m.insert(key.into(), json!(v));
                }
            }
            if p.prefix_root_multiplier != 1 || set("prefix_root_multiplier") {
                m.insert(
                    "prefix_root_multiplier".into(),
                    json!(p.prefix_root_multiplier),
                );
            }
            for (key, v, identity) in [
                (
                    "prompt_len_multiplier",
                    p.prompt_len_multiplier,
                    d.prompt_len_multiplier,
                ),
                (
                    "output_len_multiplier",
                    p.output_len_multiplier,
                    d.output_len_multiplier,
                ),
            ] {
                if v != identity || set(key) {
                    m.insert(key.into(), json!(v));
                }
            }
            if let Some(n) = p.max_isl {
                m.insert("max_isl".into(), json!(n));
            }
            if let Some(n) = p.max_osl {
                m.insert("max_osl".into(), json!(n));
            }
        }
        if self.allow_dataset_wrap {
            m.insert("allow_dataset_wrap".into(), json!(true));
        }
        (!m.is_empty()).then_some(Value::Object(m))
    }
}

/// `--synthesis-*`: `None` when every option is at its identity; refused unless the dataset is
/// a file that is (or may be detected as) a `mooncake_trace`, with AIPerf's sentence.
/// `AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS`: read a Weka trace's flattened agents as one
/// conversation when `false` (AIPerf's default `true` splits them into chains).
pub const SPLIT_FLATTENED_AGENTS_VAR: &str = "AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS";

/// Whether [`SPLIT_FLATTENED_AGENTS_VAR`] turns the split off.
///
/// # Errors
/// A value that is not a boolean.
pub fn keeps_flat_agents(var: impl Fn(&str) -> Option<String>) -> Result<bool, ConfigError> {
    match var(SPLIT_FLATTENED_AGENTS_VAR).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if ["true", "1", "yes", "on"].contains(&v.as_str()) => Ok(false),
        Some(v) if ["false", "0", "no", "off"].contains(&v.as_str()) => Ok(true),
        Some(v) => Err(ConfigError::flag(format!(
            "{SPLIT_FLATTENED_AGENTS_VAR}={v}: expected true or false"
        ))),
    }
}

/// The `weka_trace` options, checked as AIPerf checks them: each refused with another
/// `--custom-dataset-type` or a public dataset (a file whose type is detected may be a Weka
/// trace), `--use-think-time-only` with `--ignore-trace-delays`.
fn weka_params(
    args: &InputArgs,
    kind: Option<DatasetKind>,
    source: Option<&Source>,
) -> Result<ringperf_workload::workload::loader::WekaParams, ConfigError> {
    // The baseten loader takes the delay cap too (its closed loop's waits), and the DAG loader
    // (every turn's `delay`).
    let baseten = matches!(
        kind,
        Some(DatasetKind::BasetenTrace | DatasetKind::DagJsonl)
    );
    let given: Vec<&str> = [
        (args.use_think_time_only, "--use-think-time-only"),
        (args.max_context_length.is_some(), "--max-context-length"),
        (
            args.inter_turn_delay_cap_seconds.is_some() && !baseten,
            "--inter-turn-delay-cap-seconds",
        ),
        (
            args.trace_idle_gap_cap_seconds.is_some(),
            "--trace-idle-gap-cap-seconds",
        ),
    ]
    .into_iter()
    .filter_map(|(on, flag)| on.then_some(flag))
    .collect();
    if args.use_think_time_only && args.ignore_trace_delays {
        return Err(ConfigError::flag(
            "--ignore-trace-delays and --use-think-time-only are mutually exclusive (each sets \
             a turn's delay differently)",
        ));
    }
    for (v, flag) in [
        (
            args.inter_turn_delay_cap_seconds,
            "--inter-turn-delay-cap-seconds",
        ),
        (
            args.trace_idle_gap_cap_seconds,
            "--trace-idle-gap-cap-seconds",
        ),
    ] {
        if let Some(c) = v
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(ConfigError::flag(format!(
                "{flag} must be a number of seconds, 0 or more"
            )));
        }
    }
    // The Weka family: Weka traces and the TraceLab corpus (converted to them); AIPerf takes
    // `--max-context-length` for Weka traces only.
    let file = matches!(source, Some(Source::File { .. }));
    let hub = matches!(source, Some(Source::WekaHub { .. }));
    let weka = |k: Option<DatasetKind>| matches!(k, None | Some(DatasetKind::WekaTrace));
    let family = |k: Option<DatasetKind>| weka(k) || k == Some(DatasetKind::Tracelab);
    if args.max_context_length.is_some() && file && !weka(kind) {
        return Err(ConfigError::flag(format!(
            "--max-context-length only applies to Weka trace replay (--custom-dataset-type \
             weka_trace); it filters by recorded peak prompt+output length at load time, which \
             {} does not implement: drop --max-context-length or switch to a Weka trace",
            kind.map_or("this format", DatasetKind::as_str)
        )));
    }
    let weka_file = (file && family(kind)) || hub;
    if !given.is_empty() && !weka_file {
        let what = match (source, kind) {
            (Some(Source::File { .. }), Some(k)) => format!("--custom-dataset-type is {k}"),
            (Some(_), _) => "the dataset is not a file".to_string(),
            (None, _) => "the prompts are synthetic".to_string(),
        };
        return Err(ConfigError::flag(format!(
            "{} only applies to Weka trace replay (--custom-dataset-type weka_trace or tracelab), but {what}; \
             drop {} or replay a Weka trace",
            given.join(", "),
            if given.len() == 1 { "it" } else { "them" }
        )));
    }
    Ok(ringperf_workload::workload::loader::WekaParams {
        think_time_only: args.use_think_time_only,
        delay_cap_s: args.inter_turn_delay_cap_seconds,
        max_context_length: args.max_context_length,
        idle_gap_cap_s: args.trace_idle_gap_cap_seconds,
        ..Default::default()
    })
}

/// The `baseten_trace` flags given (and the delay cap, which AIPerf's dataset keeps between
/// them), in the order of AIPerf's `FileDataset` fields.
fn baseten_echo(args: &InputArgs) -> Vec<(&'static str, Value)> {
    let bool_pair = |on: bool, off: bool| (on || off).then_some(json!(on || !off));
    [
        (
            "trace_session_sample_ratio",
            args.trace_session_sample_ratio.map(|r| json!(r)),
        ),
        (
            "max_idle_gap_cap_seconds",
            args.max_idle_gap_cap_seconds.map(|c| json!(c)),
        ),
        (
            "open_loop_replay",
            bool_pair(args.open_loop_replay, args.no_open_loop_replay),
        ),
        (
            "open_loop_strict",
            args.open_loop_strict.then_some(json!(true)),
        ),
        ("omit_kv_hints", args.omit_kv_hints.then_some(json!(true))),
        (
            "force_min_tokens",
            bool_pair(args.force_min_tokens, args.no_force_min_tokens),
        ),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect()
}

/// The `baseten_trace` options, checked as AIPerf checks them: each refused with another
/// `--custom-dataset-type` or without a file (a file whose type is detected may be a Baseten
/// trace), `--open-loop-strict` with `--no-open-loop-replay`, the ratio and the cap in range.
fn baseten_params(
    args: &InputArgs,
    kind: Option<DatasetKind>,
    source: Option<&Source>,
) -> Result<ringperf_workload::workload::loader::baseten_trace::BasetenParams, ConfigError> {
    use ringperf_workload::workload::loader::baseten_trace::BasetenParams;
    let given: Vec<&str> = [
        (
            args.trace_session_sample_ratio.is_some(),
            "--trace-session-sample-ratio",
        ),
        (
            args.max_idle_gap_cap_seconds.is_some(),
            "--max-idle-gap-cap-seconds",
        ),
        (args.open_loop_replay, "--open-loop-replay"),
        (args.no_open_loop_replay, "--no-open-loop-replay"),
        (args.open_loop_strict, "--open-loop-strict"),
        (args.omit_kv_hints, "--omit-kv-hints"),
        (args.force_min_tokens, "--force-min-tokens"),
        (args.no_force_min_tokens, "--no-force-min-tokens"),
    ]
    .into_iter()
    .filter_map(|(on, flag)| on.then_some(flag))
    .collect();
    let file = matches!(source, Some(Source::File { .. }));
    if !given.is_empty() {
        match (file, kind) {
            (true, None | Some(DatasetKind::BasetenTrace)) => {}
            (true, Some(k)) => {
                return Err(ConfigError::flag(format!(
                    "{} is only supported by the baseten_trace loader, but \
                     --custom-dataset-type is {k}.",
                    given.join(", ")
                )));
            }
            (false, _) => {
                return Err(ConfigError::flag(format!(
                    "{} is only supported by the baseten_trace loader; provide --input-file and \
                     --custom-dataset-type baseten_trace.",
                    given.join(", ")
                )));
            }
        }
    }
    if args.open_loop_replay && args.no_open_loop_replay {
        return Err(ConfigError::flag(
            "--open-loop-replay and --no-open-loop-replay contradict each other",
        ));
    }
    if args.force_min_tokens && args.no_force_min_tokens {
        return Err(ConfigError::flag(
            "--force-min-tokens and --no-force-min-tokens contradict each other",
        ));
    }
    if args.open_loop_strict && args.no_open_loop_replay {
        return Err(ConfigError::flag(
            "--open-loop-strict requires open-loop replay; remove --no-open-loop-replay (or drop \
             --open-loop-strict).",
        ));
    }
    if let Some(r) = args.trace_session_sample_ratio
        && !(r > 0.0 && r <= 1.0)
    {
        return Err(ConfigError::flag(format!(
            "--trace-session-sample-ratio must be greater than 0 and at most 1, got {r}"
        )));
    }
    if let Some(c) = args.max_idle_gap_cap_seconds
        && !(c.is_finite() && c > 0.0)
    {
        return Err(ConfigError::flag(format!(
            "--max-idle-gap-cap-seconds must be greater than 0, got {c}"
        )));
    }
    Ok(BasetenParams {
        sample_ratio: args.trace_session_sample_ratio,
        idle_gap_cap_s: args.max_idle_gap_cap_seconds,
        open_loop: !args.no_open_loop_replay,
        strict: args.open_loop_strict,
        omit_kv_hints: args.omit_kv_hints,
        force_min_tokens: !args.no_force_min_tokens,
        delay_cap_s: args.inter_turn_delay_cap_seconds,
        ..BasetenParams::default()
    })
}

fn synthesis(
    args: &InputArgs,
    kind: Option<DatasetKind>,
    source: Option<&Source>,
) -> Result<Option<SynthesisParams>, ConfigError> {
    let block_size = args.block_size.unwrap_or(DEFAULT_BLOCK_SIZE) as u64;
    // AIPerf's synthesizer seed (its `SynthesisParams` default).
    let p = args.synthesis.params(block_size, 42);
    if !p.reshapes() && p.max_isl.is_none() && p.max_osl.is_none() {
        return Ok(None);
    }
    p.check().map_err(|e| ConfigError::flag(e.to_string()))?;
    let weka = matches!(source, Some(Source::WekaHub { .. }))
        || matches!(
            (source, kind),
            (
                Some(Source::File { .. }),
                Some(DatasetKind::WekaTrace | DatasetKind::Tracelab)
            )
        );
    if weka {
        // An agent trace takes the length caps (its loader applies them), not a reshaping.
        if p.reshapes() {
            return Err(ConfigError::flag(
                "agent traces (weka_trace, tracelab, the Weka corpora) take --synthesis-max-isl \
                 and --synthesis-max-osl only; the other --synthesis-* options reshape \
                 mooncake_trace files",
            ));
        }
        return Ok(Some(p));
    }
    let got = match (source, kind) {
        (Some(Source::File { .. }), None | Some(DatasetKind::MooncakeTrace)) => return Ok(Some(p)),
        // Its loader takes the length caps and refuses the rest (`run/synthesis.rs`).
        (Some(Source::File { .. }), Some(DatasetKind::BasetenTrace)) => return Ok(Some(p)),
        (Some(Source::File { .. }), Some(k)) if k.is_trace() => {
            return Err(ConfigError::flag(format!(
                "--synthesis-* options reshape mooncake_trace files only in ringperf (AIPerf \
                 also reshapes {k}); convert the trace to mooncake_trace rows first"
            )));
        }
        (Some(Source::File { .. }), Some(k)) => k.as_str().to_string(),
        (Some(Source::Inline { kind, .. }), _) => {
            kind.unwrap_or(DatasetKind::SingleTurn).as_str().to_string()
        }
        (Some(Source::ShareGpt { .. }), _) => "the public dataset sharegpt".into(),
        (Some(Source::WekaHub { dataset, .. }), _) => format!("the public dataset {dataset}"),
        (None, _) => "synthetic prompts".into(),
    };
    Err(ConfigError::flag(format!(
        "Synthesis options (--synthesis-speedup-ratio, --synthesis-prefix-len-multiplier, \
         --synthesis-prefix-root-multiplier, --synthesis-prompt-len-multiplier, \
         --synthesis-output-len-multiplier, --synthesis-max-isl, --synthesis-max-osl) are only \
         supported with trace datasets, but got {got}. Either remove synthesis options or use a \
         trace dataset type."
    )))
}

/// `--custom-dataset-type`, in AIPerf's spellings; AIPerf types ringperf does not read are
/// rejected by name.
fn custom_type(name: &str) -> Result<DatasetKind, ConfigError> {
    if let Some(k) = DatasetKind::parse(name) {
        return Ok(k);
    }
    let norm = name.trim().replace('-', "_").to_ascii_lowercase();
    let built: Vec<&str> = DatasetKind::ALL.iter().map(|k| k.as_str()).collect();
    if AIPERF_CUSTOM_TYPES.contains(&norm.as_str()) {
        Err(ConfigError::flag(format!(
            "--custom-dataset-type {name} is not supported by ringperf yet ({} are)",
            built.join(", ")
        )))
    } else {
        Err(ConfigError::flag(format!(
            "--custom-dataset-type {name} is not an AIPerf dataset type (ringperf reads {})",
            built.join(", ")
        )))
    }
}

/// `--public-dataset`: only `sharegpt`, which ringperf reads from a local file.
fn public_dataset(name: &str) -> Result<(), ConfigError> {
    let norm = name.trim().replace('-', "_").to_ascii_lowercase();
    if norm == "sharegpt" {
        return Ok(());
    }
    if AIPERF_PUBLIC_DATASETS.contains(&norm.as_str()) || norm.starts_with("semianalysis_") {
        Err(ConfigError::flag(format!(
            "--public-dataset {name} is not supported by ringperf: it needs a download (ringperf \
             never downloads; only sharegpt is read, from a local file)"
        )))
    } else {
        Err(ConfigError::flag(format!(
            "--public-dataset {name} is not an AIPerf public dataset (ringperf reads sharegpt)"
        )))
    }
}

/// A path as Python's `pathlib.Path` writes it (AIPerf's echo): `.` parts and repeated or
/// trailing separators dropped, `..` kept (`./data//x.jsonl` is `data/x.jsonl`).
fn as_python_path(p: &std::path::Path) -> String {
    use std::path::Component;
    let parts: Vec<std::path::Component<'_>> = (p.components())
        .filter(|c| *c != Component::CurDir)
        .collect();
    if parts.is_empty() {
        return ".".into();
    }
    parts
        .iter()
        .collect::<std::path::PathBuf>()
        .display()
        .to_string()
}

#[cfg(test)]
mod python_path_tests {
    use super::as_python_path;
    use std::path::Path;

    #[test]
    fn paths_are_written_as_pathlib_writes_them() {
        for (given, written) in [
            (
                "./data/precise_schedule.jsonl",
                "data/precise_schedule.jsonl",
            ),
            ("data//x.jsonl", "data/x.jsonl"),
            ("a/./b/", "a/b"),
            ("../t.jsonl", "../t.jsonl"),
            ("/abs/./x", "/abs/x"),
            ("t.jsonl", "t.jsonl"),
            ("./", "."),
        ] {
            assert_eq!(as_python_path(Path::new(given)), written, "{given}");
        }
    }
}
