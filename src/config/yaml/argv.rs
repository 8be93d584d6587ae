//! A normalised config file as the settings of the same run, each named by the `profile` flag
//! that sets it, with its value as the file has it (`crate::invocation` puts them under the
//! command line's by flag id, typed by `crate::cli::parse::under_file`), and the flags AIPerf
//! cannot route under `--config`, refused by name with its message.

use serde_json::{Map, Value};

use super::{BODY_AIPERF_ONLY, BODY_FIELDS, Loaded, YamlError, duration_secs, extra, unknown_key};
use crate::plan::{
    AdaptiveSpec, AgenticKeys, FileOnly, InlineRecords, Pacing, PhaseSpec, UserFile, UserFileFormat,
};

/// A value a file gives a setting: as the file has it (a number stays a number), and as written
/// (what `config expand` prints).
#[derive(Debug, Clone, PartialEq)]
pub struct FileValue {
    pub value: Value,
    pub written: String,
}

/// The settings a file gives, one `(flag, values)` per flag in the file's order, each named by
/// the `profile` flag that sets it (the names `config expand` prints).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileArgs {
    pub flags: Vec<(String, Vec<FileValue>)>,
    /// What no flag sets.
    pub file_only: FileOnly,
    /// The `sweep:` block (a list value as its comma-separated text, `--sweep-type`, the search
    /// settings): kept apart so that the run sees them after the file's other settings.
    pub sweep: Vec<(String, Vec<String>)>,
}

impl FileArgs {
    fn push(&mut self, flag: &str, values: &[String]) {
        let values = values
            .iter()
            .map(|v| FileValue {
                value: Value::from(v.as_str()),
                written: v.clone(),
            })
            .collect();
        self.flags.push((flag.to_string(), values));
    }
    fn one<T: ToString + Into<Value>>(&mut self, flag: &str, v: T) {
        let written = v.to_string();
        self.flags.push((
            flag.to_string(),
            vec![FileValue {
                value: v.into(),
                written,
            }],
        ));
    }
    fn switch(&mut self, flag: &str) {
        self.flags.push((flag.to_string(), Vec::new()));
    }
    /// Every setting, as the `profile` flags and values that give it (the sweep block's last).
    pub fn words(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (f, vs) in &self.flags {
            out.push(f.clone());
            out.extend(vs.iter().map(|v| v.written.clone()));
        }
        for (f, vs) in &self.sweep {
            out.push(f.clone());
            out.extend(vs.iter().cloned());
        }
        out
    }
}

/// The one place a sweep block's type is checked against AIPerf's: a tag its schema does not
/// have is refused with the tags it has (`adaptive` is not one: AIPerf's is `adaptive_search`).
pub fn sweep_gate(root: &Map<String, Value>) -> Result<(), YamlError> {
    let ty = root
        .get("sweep")
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str);
    match ty {
        Some(t) if !SWEEP_TYPES.contains(&t) => Err(YamlError::Schema(format!(
            "sweep: Input tag '{t}' found using 'type' does not match any of the expected \
             tags: {}",
            SWEEP_TYPES
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        _ => Ok(()),
    }
}

/// AIPerf 0.13's sweep types (the `type` tags of its `SweepConfig`).
const SWEEP_TYPES: &[&str] = &[
    "grid",
    "zip",
    "scenarios",
    "adaptive_search",
    "sobol",
    "latin_hypercube",
];

type R<T> = Result<T, YamlError>;

/// Seconds, written as a flag takes them (`30`, `inf`).
struct Seconds(f64);

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<Seconds> for Value {
    fn from(s: Seconds) -> Value {
        if s.0.is_infinite() {
            Value::from("inf")
        } else {
            Value::from(s.0)
        }
    }
}

fn obj<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| YamlError::Schema(format!("{path}: Input should be a valid dictionary")))
}

/// Refuses a key of `m` not in `known` (AIPerf's `extra=forbid`), and a key AIPerf has that
/// ringperf does not run (in `aiperf_only`), naming it.
fn keys(m: &Map<String, Value>, path: &str, known: &[&str], aiperf_only: &[&str]) -> R<()> {
    for k in m.keys() {
        if aiperf_only.contains(&k.as_str()) && !known.contains(&k.as_str()) {
            return Err(YamlError::Unsupported(format!("{path}.{k}")));
        }
        if !known.contains(&k.as_str()) {
            let mut all = known.to_vec();
            all.extend_from_slice(aiperf_only);
            return Err(unknown_key(path, k, &all));
        }
    }
    Ok(())
}

fn scalar(v: &Value, path: &str) -> R<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(YamlError::Schema(format!(
            "{path}: Input should be a string or a number"
        ))),
    }
}

fn num(v: &Value, path: &str) -> R<f64> {
    v.as_f64()
        .ok_or_else(|| YamlError::Schema(format!("{path}: Input should be a valid number")))
}

fn flag_bool(v: &Value, path: &str) -> R<bool> {
    v.as_bool()
        .ok_or_else(|| YamlError::Schema(format!("{path}: Input should be a valid boolean")))
}

/// A duration in seconds (`inf` as the text `inf`: JSON has no infinity).
fn dur(v: &Value, path: &str) -> R<Seconds> {
    duration_secs(v).map(Seconds).ok_or_else(|| {
        YamlError::Schema(format!(
            "{path}: Invalid duration format: {v}. Use number, '30s', '5m', '2h', or 'inf'."
        ))
    })
}

fn strings(v: &Value, path: &str) -> R<Vec<String>> {
    match v {
        Value::Array(a) => a.iter().map(|x| scalar(x, path)).collect(),
        other => Ok(vec![scalar(other, path)?]),
    }
}

/// The settings of a loaded file.
pub fn translate(l: &Loaded) -> R<FileArgs> {
    let root = &l.root;
    let mut a = FileArgs::default();
    if let Some(s) = root.get("random_seed") {
        a.one("--random-seed", num(s, "random_seed")? as u64);
    }
    if let Some(v) = root.get("schema_version")
        && scalar(v, "schema_version")?.split('.').next() != Some("2")
    {
        return Err(YamlError::Schema(format!(
            "schema_version: unsupported version {v} (AIPerf 0.13 reads 2.x)"
        )));
    }
    let body = obj(&root["benchmark"], "benchmark")?;
    keys(body, "benchmark", BODY_FIELDS, BODY_AIPERF_ONLY)?;
    models(body.get("models"), &mut a)?;
    let Some(ep) = body.get("endpoint") else {
        return Err(YamlError::Schema(
            "benchmark.endpoint: Field required".into(),
        ));
    };
    endpoint(obj(ep, "benchmark.endpoint")?, &mut a)?;
    let Some(ds) = body.get("datasets") else {
        return Err(YamlError::Schema(
            "benchmark.datasets: Field required".into(),
        ));
    };
    datasets(ds, &mut a)?;
    if let Some(p) = body.get("phases") {
        phases(p, &mut a)?;
    }
    sections(body, &mut a)?;
    if let Some(s) = body.get("scenario")
        && !s.is_null()
    {
        a.one("--scenario", scalar(s, "benchmark.scenario")?);
    }
    if let Some(v) = body.get("unsafe_override")
        && flag_bool(v, "benchmark.unsafe_override")?
    {
        a.switch("--unsafe-override");
    }
    if !a.file_only.user_files.is_empty()
        && let Some(Value::Object(vars)) = root.get("variables")
    {
        a.file_only.user_files.variables = vars.clone();
    }
    if let Some(v) = root.get("no_sweep_table")
        && flag_bool(v, "no_sweep_table")?
    {
        a.switch("--no-sweep-table");
    }
    if let Some(m) = root.get("multi_run") {
        multi_run(obj(m, "multi_run")?, &mut a)?;
    }
    if let Some(s) = root.get("sweep") {
        sweep_gate(root)?;
        let adaptive: Vec<String> = adaptive_phase_names(&a);
        if s.get("type").and_then(Value::as_str) == Some("adaptive_search") && !adaptive.is_empty()
        {
            return Err(super::adaptive_scale::search_conflict(&adaptive));
        }
        sweep(obj(s, "sweep")?, &mut a)?;
        let runs = match s.get("type").and_then(Value::as_str).unwrap_or("grid") {
            "scenarios" => Some(super::scenarios::runs(root)?),
            // A grid or zip over a path no flag sweeps: its points as files.
            "grid" | "zip" if !by_flags(obj(s, "sweep")?) => Some(super::scenarios::grid_runs(
                root,
                variations(obj(s, "sweep")?)?,
            )?),
            _ => None,
        };
        if let Some(runs) = runs {
            a.file_only.scenarios = scenario_settings(l, runs, &a)?;
        }
    }
    if let Some(p) = root.get("plot") {
        let dir = l.path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(section) = super::plot::read(p, dir.unwrap_or(std::path::Path::new(".")))? {
            // `plot:` turns the plots on unless the file's artifacts say; not in a sweep, whose
            // variations AIPerf 0.13 builds from `benchmark:` alone (there `--auto-plot` or
            // `artifacts.auto_plot` turns them on).
            let said = (body.get("artifacts").and_then(Value::as_object))
                .is_some_and(|m| m.contains_key("auto_plot"));
            if !said && !root.contains_key("sweep") {
                a.switch("--auto-plot");
            }
            a.file_only.plot = Some(section);
        }
    }
    Ok(a)
}

/// Each run of the file's scenario sweep as what it changes of the file's settings `base`: the
/// file with the run merged in, translated, against the file alone.
fn scenario_settings(
    l: &Loaded,
    runs: Vec<super::scenarios::ScenarioRun>,
    base: &FileArgs,
) -> R<Vec<crate::plan::FileScenario>> {
    let by_flag = |a: &FileArgs| {
        let mut m: std::collections::BTreeMap<String, Vec<Vec<FileValue>>> = Default::default();
        for (f, v) in &a.flags {
            m.entry(f.clone()).or_default().push(v.clone());
        }
        m
    };
    let theirs = by_flag(base);
    runs.into_iter()
        .enumerate()
        .map(|(i, run)| {
            let merged = translate(&Loaded {
                path: l.path.clone(),
                root: run.root,
            })
            .map_err(|e| match e {
                YamlError::Schema(m) => YamlError::Schema(format!("sweep run [{i}]: {m}")),
                other => other,
            })?;
            let ours = by_flag(&merged);
            let mut set = Vec::new();
            for (flag, lists) in &ours {
                if theirs.get(flag) == Some(lists) {
                    continue;
                }
                for values in lists {
                    let values = values
                        .iter()
                        .map(|v| (v.value.clone(), v.written.clone()))
                        .collect();
                    set.push((flag.clone(), values));
                }
            }
            let cleared = theirs
                .keys()
                .filter(|f| !ours.contains_key(*f))
                .cloned()
                .collect();
            Ok(crate::plan::FileScenario {
                label: run.label,
                dir: run.dir,
                values: run.values,
                set,
                cleared,
                keeps_warmup: merged.file_only.phases_before == base.file_only.phases_before,
                file_only: Box::new(merged.file_only),
            })
        })
        .collect()
}

/// The profiling phases of a file that run adaptive scale, in order.
fn adaptive_phase_names(a: &FileArgs) -> Vec<String> {
    let first = (a.file_only.profiling_adaptive.as_ref())
        .filter(|s| s.runs())
        .map(|_| (a.file_only.profiling_name.clone()).unwrap_or_else(|| "profiling".into()));
    first
        .into_iter()
        .chain(
            (a.file_only.phases_after.iter())
                .filter(|p| p.adaptive.as_ref().is_some_and(|s| s.runs()))
                .map(|p| p.name.clone()),
        )
        .collect()
}

fn models(v: Option<&Value>, a: &mut FileArgs) -> R<()> {
    let Some(v) = v else {
        return Err(YamlError::Schema("benchmark.models: Field required".into()));
    };
    let names = match v {
        Value::Object(m) => {
            keys(m, "benchmark.models", &["items", "strategy"], &[])?;
            if let Some(v) = m.get("strategy") {
                a.one(
                    "--model-selection-strategy",
                    scalar(v, "benchmark.models.strategy")?,
                );
            }
            let items = m.get("items").and_then(Value::as_array).ok_or_else(|| {
                YamlError::Schema("benchmark.models.items: Field required".into())
            })?;
            let mut names = Vec::with_capacity(items.len());
            for (i, it) in items.iter().enumerate() {
                let Value::Object(im) = it else {
                    names.push(scalar(it, "benchmark.models.items")?);
                    continue;
                };
                const KEPT: [&str; 4] = ["weight", "lora", "modalities", "tokenizer"];
                let mut known = vec!["name"];
                known.extend(KEPT);
                keys(im, "benchmark.models.items", &known, &[])?;
                names.push(scalar(&im["name"], "benchmark.models.items.name")?);
                // A model's weight, LoRA adapter, modalities and tokenizer: AIPerf 0.13 reads
                // and echoes them, and no selection strategy it runs uses them.
                for (k, v) in im
                    .iter()
                    .filter(|(k, v)| KEPT.contains(&k.as_str()) && !v.is_null())
                {
                    a.file_only
                        .echoed
                        .push((format!("models.items.{i}.{k}"), v.clone()));
                }
            }
            names
        }
        other => strings(other, "benchmark.models")?,
    };
    a.one("--model", names.join(","));
    Ok(())
}

fn endpoint(m: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    const P: &str = "benchmark.endpoint";
    // `extra` and `template` make one `--extra-inputs` object: AIPerf's flags carry a
    // template as the extras' `payload_template` and `response_field`.
    let mut extras: Option<Map<String, Value>> = None;
    for (k, v) in m {
        let path = format!("{P}.{k}");
        if let Some(routed) = text_flag(&path, v, a) {
            routed?;
            continue;
        }
        match k.as_str() {
            "url" | "urls" => {
                for u in strings(v, &path)? {
                    a.one("--url", u);
                }
            }
            "url_strategy" => a.one("--url-strategy", scalar(v, &path)?),
            "type" => a.one("--endpoint-type", scalar(v, &path)?),
            "path" => a.one("--custom-endpoint", scalar(v, &path)?),
            "api_key" => a.one("--api-key", scalar(v, &path)?),
            "timeout" => a.one("--request-timeout-seconds", num(v, &path)?),
            "streaming" if flag_bool(v, &path)? => a.switch("--streaming"),
            "streaming" => {}
            "connection_reuse" => a.one("--connection-reuse-strategy", scalar(v, &path)?),
            "use_legacy_max_tokens" if flag_bool(v, &path)? => a.switch("--use-legacy-max-tokens"),
            "use_server_token_count" if flag_bool(v, &path)? => {
                a.switch("--use-server-token-count")
            }
            "use_legacy_max_tokens" | "use_server_token_count" => {}
            "per_chunk_usage" if flag_bool(v, &path)? => a.switch("--per-chunk-usage"),
            "per_chunk_usage" => {}
            "uuid_and_strip" if flag_bool(v, &path)? => a.switch("--uuid-and-strip"),
            "uuid_and_strip" => {}
            "headers" => a.one("--header", json_obj(v, &path)?),
            "extra" if !v.is_null() => {
                let e = obj(v, &path)?.clone();
                let merged = extras.get_or_insert_with(Map::new);
                // The template's keys win (AIPerf takes them out of the extras).
                for (k, v) in e {
                    merged.entry(k).or_insert(v);
                }
            }
            "extra" => {}
            "template" if !v.is_null() => {
                let t = obj(v, &path)?;
                keys(t, &path, &["body", "response_field"], &[])?;
                let body = t
                    .get("body")
                    .ok_or_else(|| YamlError::Schema(format!("{path}.body: Field required")))?;
                let merged = extras.get_or_insert_with(Map::new);
                merged.insert("payload_template".into(), Value::from(scalar(body, &path)?));
                let field = match t.get("response_field") {
                    Some(f) => scalar(f, &format!("{path}.response_field"))?,
                    None => "text".into(),
                };
                merged.insert("response_field".into(), Value::from(field));
            }
            "template" => {}
            "session_header" => a.one("--session-header", scalar(v, &path)?),
            "request_content_type" => a.one("--request-content-type", scalar(v, &path)?),
            "download_video_content" if flag_bool(v, &path)? => {
                a.switch("--download-video-content")
            }
            "download_video_content" => {}
            "wait_for_model_timeout" => a.one("--wait-for-model-timeout", num(v, &path)?),
            "wait_for_model_interval" => a.one("--wait-for-model-interval", num(v, &path)?),
            "wait_for_model_mode" => a.one("--wait-for-model-mode", scalar(v, &path)?),
            "reset_kv_cache" => {
                // Its retry budget has no flag (AIPerf 0.13's file only).
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut()
                    && let Some(r) = m.shift_remove("max_retry_seconds")
                    && !r.is_null()
                {
                    let rpath = format!("{path}.max_retry_seconds");
                    let s = num(&r, &rpath)?;
                    if !s.is_finite() || s < 0.0 {
                        return Err(YamlError::Schema(format!(
                            "{rpath}: Input should be greater than or equal to 0"
                        )));
                    }
                    a.file_only.reset_retry_seconds = Some(s);
                }
                hook(
                    &v,
                    &path,
                    "--reset-kv-cache",
                    &[
                        ("path", "--reset-kv-cache-path"),
                        ("timeout_seconds", "--reset-kv-cache-timeout-seconds"),
                    ],
                    a,
                )?
            }
            "server_profiler" => hook(
                v,
                &path,
                "--server-profiler",
                &[
                    ("start_path", "--server-profiler-start-path"),
                    ("stop_path", "--server-profiler-stop-path"),
                    ("timeout_seconds", "--server-profiler-timeout-seconds"),
                ],
                a,
            )?,
            _ => return Err(extra(&path)),
        }
    }
    if let Some(e) = extras {
        a.one("--extra-inputs", Value::Object(e).to_string());
    }
    Ok(())
}

/// A server hook (`reset_kv_cache`, `server_profiler`): `true` or a map turns it on with `switch`,
/// each key given (a `null` is the default) its flag in `keys`; `false` or `null` leaves it off.
fn hook(v: &Value, path: &str, switch: &str, keys: &[(&str, &str)], a: &mut FileArgs) -> R<()> {
    let m = match v {
        Value::Null | Value::Bool(false) => return Ok(()),
        Value::Bool(true) => {
            a.switch(switch);
            return Ok(());
        }
        other => obj(other, path)?,
    };
    a.switch(switch);
    for (k, v) in m {
        let kpath = format!("{path}.{k}");
        let flag = keys
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, f)| *f)
            .ok_or_else(|| extra(&kpath))?;
        match v {
            Value::Null => {}
            Value::Number(_) => a.one(flag, num(v, &kpath)?),
            other => a.one(flag, scalar(other, &kpath)?),
        }
    }
    Ok(())
}

/// A key the flag table writes as text (`cli::flags`, `Flag::text_at`): its flag with the
/// value, or refused by name while the flag is rejected. `None`: not such a key.
fn text_flag(path: &str, v: &Value, a: &mut FileArgs) -> Option<R<()>> {
    let flag = crate::cli::flags::at_path(path.strip_prefix("benchmark.")?)?;
    if flag.acts == crate::cli::flags::Acts::Rejected {
        return Some(Err(YamlError::Unsupported(path.to_owned())));
    }
    Some(scalar(v, path).map(|value| a.one(flag.names[0], value)))
}

/// A YAML map as the JSON object form the `--header` / `--extra-inputs` flags take.
fn json_obj(v: &Value, path: &str) -> R<String> {
    obj(v, path)?;
    Ok(v.to_string())
}

/// A synthetic dataset's `entries` when a file gives none (AIPerf's schema default).
const SYNTHETIC_ENTRIES: u64 = 100;

fn datasets(v: &Value, a: &mut FileArgs) -> R<()> {
    let list = v.as_array().ok_or_else(|| {
        YamlError::Schema("benchmark.datasets: Input should be a valid list".into())
    })?;
    // AIPerf 0.13's schema holds one dataset (its message).
    let [d] = list.as_slice() else {
        return Err(YamlError::Schema(if list.is_empty() {
            "benchmark.datasets: List should have at least 1 item after validation, not 0".into()
        } else {
            format!(
                "benchmark.datasets: List should have at most 1 item after validation, not {}",
                list.len()
            )
        }));
    };
    let m = obj(d, "benchmark.datasets.0")?;
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("synthetic");
    if ty == "synthetic" && !m.contains_key("entries") {
        a.file_only.dataset_entries = Some(SYNTHETIC_ENTRIES);
    }
    a.file_only.dataset_name = m.get("name").and_then(Value::as_str).map(str::to_owned);
    let p = format!(
        "benchmark.datasets.{}",
        m.get("name").and_then(Value::as_str).unwrap_or("0")
    );
    if ty == "file" {
        inline_records(m, &p, a)?;
    }
    for (k, v) in m {
        let path = format!("{p}.{k}");
        match (ty, k.as_str()) {
            (_, "name" | "type") => {}
            ("file", "records") => {}
            ("synthetic" | "file" | "public", "entries") => {
                a.one("--num-dataset-entries", num(v, &path)? as u64)
            }
            (_, "random_seed") => a.one("--random-seed", num(v, &path)? as u64),
            (_, "sampling") => a.one("--dataset-sampling-strategy", scalar(v, &path)?),
            ("synthetic" | "file", "prompts") => prompts(obj(v, &path)?, &path, a)?,
            ("synthetic", "isl") => length(v, &path, "--prompt-input-tokens", a)?,
            ("synthetic", "turns") => drawn(v, &path, "--conversation-turn", Center::Whole, a)?,
            ("synthetic", "turn_delay") => {
                drawn(v, &path, "--conversation-turn-delay", Center::Truncated, a)?
            }
            ("synthetic" | "file", "audio" | "images" | "video") => {
                media(k, obj(v, &path)?, &path, a)?
            }
            ("synthetic", "turn_delay_ratio") => {
                a.one("--conversation-turn-delay-ratio", num(v, &path)?)
            }
            ("synthetic", "prefix_prompts") => {
                for (k, x) in obj(v, &path)? {
                    let kpath = format!("{path}.{k}");
                    let flag = match k.as_str() {
                        "pool_size" => "--prompt-prefix-pool-size",
                        "length" => "--prompt-prefix-length",
                        "shared_system_length" => "--shared-system-prompt-length",
                        "user_context_length" => "--user-context-prompt-length",
                        _ => return Err(extra(&kpath)),
                    };
                    if !x.is_null() {
                        a.one(flag, num(x, &kpath)? as u64);
                    }
                }
            }
            ("synthetic", "rankings") => {
                for (k, x) in obj(v, &path)? {
                    let kpath = format!("{path}.{k}");
                    let flag = match k.as_str() {
                        "passages" => "--rankings-passages",
                        "passage_tokens" => "--rankings-passages-prompt-token",
                        "query_tokens" => "--rankings-query-prompt-token",
                        _ => return Err(extra(&kpath)),
                    };
                    drawn(x, &kpath, flag, Center::Whole, a)?;
                }
            }
            ("synthetic" | "file" | "public", "osl") => {
                length(v, &path, "--prompt-output-tokens", a)?
            }
            (_, "system_prompt") => a.one("--system-prompt", scalar(v, &path)?),
            (_, "system_prompt_file") if !v.is_null() => {
                a.one("--system-prompt-file", scalar(v, &path)?)
            }
            (_, "system_prompt_file") => {}
            ("file" | "public", "cache_bust") => cache_bust(v, &path, a)?,
            ("public", "prompts") => prompts(obj(v, &path)?, &path, a)?,
            ("public", "ignore_trace_delays") if flag_bool(v, &path)? => {
                a.switch("--ignore-trace-delays")
            }
            ("public", "ignore_trace_delays") => {}
            ("public", "synthesis") => synthesis(obj(v, &path)?, &path, a)?,
            ("file", "image_batch_size") => a.one("--image-batch-size", num(v, &path)? as u64),
            ("file", "audio_batch_size") => a.one("--audio-batch-size", num(v, &path)? as u64),
            ("file", "video_batch_size") => a.one("--video-batch-size", num(v, &path)? as u64),
            ("file", "path") => a.one("--input-file", scalar(v, &path)?),
            ("file", "format") => a.one("--custom-dataset-type", scalar(v, &path)?),
            ("file", "replay_speedup") => a.one("--replay-speedup", num(v, &path)?),
            ("file", "ignore_trace_delays") if flag_bool(v, &path)? => {
                a.switch("--ignore-trace-delays")
            }
            ("file", "ignore_trace_delays") => {}
            ("file" | "public", "use_think_time_only") if flag_bool(v, &path)? => {
                a.switch("--use-think-time-only")
            }
            ("file" | "public", "use_think_time_only") => {}
            ("file" | "public", "max_context_length") if !v.is_null() => {
                a.one("--max-context-length", num(v, &path)? as u64)
            }
            ("file" | "public", "inter_turn_delay_cap_seconds") if !v.is_null() => {
                a.one("--inter-turn-delay-cap-seconds", num(v, &path)?)
            }
            ("file" | "public", "trace_idle_gap_cap_seconds") if !v.is_null() => {
                a.one("--trace-idle-gap-cap-seconds", num(v, &path)?)
            }
            ("file" | "public", "max_context_length" | "inter_turn_delay_cap_seconds") => {}
            ("file", "trace_session_sample_ratio") if !v.is_null() => {
                a.one("--trace-session-sample-ratio", num(v, &path)?)
            }
            ("file", "max_idle_gap_cap_seconds") if !v.is_null() => {
                a.one("--max-idle-gap-cap-seconds", num(v, &path)?)
            }
            ("file", "trace_session_sample_ratio" | "max_idle_gap_cap_seconds") => {}
            ("file", "open_loop_replay") => {
                if flag_bool(v, &path)? {
                    a.switch("--open-loop-replay");
                } else {
                    a.switch("--no-open-loop-replay");
                }
            }
            ("file", "force_min_tokens") => {
                if flag_bool(v, &path)? {
                    a.switch("--force-min-tokens");
                } else {
                    a.switch("--no-force-min-tokens");
                }
            }
            ("file", "open_loop_strict") if flag_bool(v, &path)? => a.switch("--open-loop-strict"),
            ("file", "omit_kv_hints") if flag_bool(v, &path)? => a.switch("--omit-kv-hints"),
            ("file", "open_loop_strict" | "omit_kv_hints") => {}
            ("file" | "public", "trace_idle_gap_cap_seconds") => {}
            ("file", "block_size") => {
                a.one("--prompt-input-tokens-block-size", num(v, &path)? as u64)
            }
            ("file", "prompt_batch_size") => a.one("--prompt-batch-size", num(v, &path)? as u64),
            ("file", "synthesis") => synthesis(obj(v, &path)?, &path, a)?,
            ("public", "dataset") => a.one("--public-dataset", scalar(v, &path)?),
            ("public", "hf_weka_dataset") if !v.is_null() => {
                a.one("--hf-weka-dataset", scalar(v, &path)?)
            }
            ("public", "hf_weka_dataset") => {}
            ("synthetic" | "file" | "public", _) => return Err(YamlError::Unsupported(path)),
            (other, _) => {
                return Err(YamlError::Unsupported(format!("{p}.type: {other}")));
            }
        }
    }
    Ok(())
}

/// `cache_bust: {target}` (a synthetic dataset's under `prompts`, a file's or a public one's on
/// the dataset): `--cache-bust`.
fn cache_bust(v: &Value, path: &str, a: &mut FileArgs) -> R<()> {
    let target = obj(v, path)?.get("target").unwrap_or(&Value::Null);
    a.one("--cache-bust", scalar(target, &format!("{path}.target"))?);
    Ok(())
}

/// A file dataset's source, checked as AIPerf's `FileDataset` checks it (its messages): `path`
/// or `records`, not both; records a non-empty list (a map of pools only for `random_pool`).
/// Records of `single_turn` (the default format) and `multi_turn` are typed in the plan.
fn inline_records(m: &Map<String, Value>, p: &str, a: &mut FileArgs) -> R<()> {
    let records = m.get("records").filter(|r| !r.is_null());
    let path = m.get("path").filter(|r| !r.is_null());
    let format = m
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or("single_turn");
    let value_error =
        |why: String| YamlError::Schema(format!("benchmark.datasets.0.file: Value error, {why}"));
    if records.is_some() == path.is_some() {
        let shown = match path {
            Some(v) => format!("PosixPath({})", py_str_repr(&scalar(v, p)?)),
            None => "None".into(),
        };
        return Err(value_error(format!(
            "FileDataset requires exactly one source: set either `path:` (load from disk) or \
             `records:` (embed in YAML), not both. Got path={shown}, records={}.",
            if records.is_some() { "<set>" } else { "None" }
        )));
    }
    let Some(records) = records else {
        return Ok(());
    };
    let at = format!("{p}.records");
    let readable = ringperf_workload::workload::loader::DatasetKind::parse(format)
        .is_none_or(|k| k.reads_inline());
    if !readable {
        return Err(YamlError::Unsupported(format!(
            "{at}: inline records of format {format} (AIPerf 0.13 reads {format} from a file \
             only: its loader opens the dataset's path; give it as `path:`)"
        )));
    }
    let object = |at: &str, list: &[Value]| -> R<()> {
        match list.iter().enumerate().find(|(_, r)| !r.is_object()) {
            Some((i, _)) => Err(YamlError::Schema(format!(
                "{at}.{i}: Input should be a valid dictionary"
            ))),
            None => Ok(()),
        }
    };
    let list = match records {
        Value::Array(list) if list.is_empty() => {
            return Err(value_error(
                "`records:` must contain at least one record.".into(),
            ));
        }
        Value::Array(list) => list,
        Value::Object(_) if format != "random_pool" => {
            return Err(value_error(format!(
                "`records:` as a dict-of-lists (multi-pool) is only valid for format: \
                 random_pool, got format: {format}."
            )));
        }
        Value::Object(pools) => {
            let mut read = Vec::with_capacity(pools.len());
            for (key, list) in pools {
                let pat = format!("{at}.{key}");
                let Value::Array(list) = list else {
                    return Err(YamlError::Schema(format!(
                        "{pat}: Input should be a valid list"
                    )));
                };
                object(&pat, list)?;
                read.push((key.clone(), list.clone()));
            }
            a.file_only.inline_records = Some(InlineRecords {
                at,
                records: Vec::new(),
                pools: read,
            });
            return Ok(());
        }
        _ => {
            return Err(YamlError::Schema(format!(
                "{at}: Input should be a valid list"
            )));
        }
    };
    object(&at, list)?;
    a.file_only.inline_records = Some(InlineRecords {
        at,
        records: list.clone(),
        pools: Vec::new(),
    });
    Ok(())
}

/// A file dataset's `synthesis` block: AIPerf's `SynthesisConfig` keys onto `--synthesis-*`.
fn synthesis(m: &Map<String, Value>, p: &str, a: &mut FileArgs) -> R<()> {
    for (k, v) in m {
        let path = format!("{p}.{k}");
        let flag = match k.as_str() {
            "speedup_ratio" => "--synthesis-speedup-ratio",
            "prefix_len_multiplier" => "--synthesis-prefix-len-multiplier",
            "prefix_root_multiplier" => "--synthesis-prefix-root-multiplier",
            "prompt_len_multiplier" => "--synthesis-prompt-len-multiplier",
            "output_len_multiplier" => "--synthesis-output-len-multiplier",
            "max_isl" => "--synthesis-max-isl",
            "max_osl" => "--synthesis-max-osl",
            "allow_dataset_wrap" if flag_bool(v, &path)? => {
                a.switch("--allow-dataset-wrap");
                continue;
            }
            "allow_dataset_wrap" => continue,
            _ => return Err(extra(&path)),
        };
        a.one(flag, scalar(v, &path)?);
    }
    Ok(())
}

/// `sequence_distribution`: the flag's text as written, or AIPerf's list of `{isl, osl,
/// probability}` entries (each length fixed, `{mean, stddev}`, or with `isl_stddev` /
/// `osl_stddev`) as the flag's semicolon form (`ISL|SD,OSL|SD:PROB;…`). The probabilities must
/// sum to 100 within 1, as AIPerf checks a file's list. With the list, its entries in AIPerf's
/// model form (echoed).
fn seq_dist(v: &Value, path: &str) -> R<(String, Option<Value>)> {
    let Value::Array(entries) = v else {
        return Ok((scalar(v, path)?, None));
    };
    let mut pieces = Vec::new();
    let mut form = Vec::new();
    let mut total = 0.0;
    for (i, e) in entries.iter().enumerate() {
        let at = format!("{path}.{i}");
        let m = obj(e, &at)?;
        keys(
            m,
            &at,
            &["isl", "isl_stddev", "osl", "osl_stddev", "probability"],
            &[],
        )?;
        let length = |key: &str| -> R<String> {
            let p = format!("{at}.{key}");
            let Some(v) = m.get(key) else {
                return Err(YamlError::Schema(format!("{p}: Field required")));
            };
            // Any distribution: AIPerf's pair is its expected value, truncated, with a normal
            // one's spread (bounds are read and unused).
            let d = unbounded(&untyped(v, &p)?, &p)?;
            let mean = expected(&d, &p)?;
            let mut sd = (d.as_object())
                .filter(|d| !d.contains_key("median"))
                .and_then(|d| d.get("stddev"))
                .map(|s| num(s, &p))
                .transpose()?;
            if let Some(s) = m.get(&format!("{key}_stddev")) {
                sd = Some(num(s, &format!("{at}.{key}_stddev"))?);
            }
            Ok(match sd {
                Some(sd) => format!("{}|{sd}", mean.trunc()),
                None => format!("{}", mean.trunc()),
            })
        };
        let prob = m
            .get("probability")
            .ok_or_else(|| YamlError::Schema(format!("{at}.probability: Field required")))?;
        let prob = num(prob, &format!("{at}.probability"))?;
        total += prob;
        pieces.push((format!("{},{}", length("isl")?, length("osl")?), prob));
        let mut entry = Map::new();
        for key in ["isl", "osl"] {
            let d = untyped(&m[key], &format!("{at}.{key}"))?;
            entry.insert(key.into(), bounds_first(&model_form(&d)));
        }
        entry.insert("probability".into(), Value::from(prob));
        form.push(Value::Object(entry));
    }
    if !(99.0..=101.0).contains(&total) {
        return Err(YamlError::Schema(format!(
            "{path}: Value error, Sequence distribution probabilities must sum to ~100, got {total}"
        )));
    }
    // AIPerf normalizes the weights.
    let pieces: Vec<String> = (pieces.iter())
        .map(|(pair, prob)| format!("{pair}:{}", prob * 100.0 / total))
        .collect();
    Ok((pieces.join(";"), Some(Value::Array(form))))
}

/// A distribution as AIPerf's model writes it with its bounds first (`{"min", "max", …}`).
fn bounds_first(v: &Value) -> Value {
    let Some(m) = v.as_object() else {
        return v.clone();
    };
    let (mut first, rest): (Map<String, Value>, Map<String, Value>) =
        (m.clone().into_iter()).partition(|(k, _)| k == "min" || k == "max");
    first.extend(rest);
    Value::Object(first)
}

fn prompts(m: &Map<String, Value>, p: &str, a: &mut FileArgs) -> R<()> {
    for (k, v) in m {
        let path = format!("{p}.{k}");
        match k.as_str() {
            "isl" => length(v, &path, "--prompt-input-tokens", a)?,
            "osl" => length(v, &path, "--prompt-output-tokens", a)?,
            "block_size" => a.one("--prompt-input-tokens-block-size", num(v, &path)? as u64),
            "batch_size" => a.one("--prompt-batch-size", num(v, &path)? as u64),
            "corpus" => a.one("--prompt-corpus", scalar(v, &path)?),
            "sequence_distribution" => {
                let (text, form) = seq_dist(v, &path)?;
                a.one("--seq-dist", text.as_str());
                if let Some(form) = form {
                    a.file_only.seq_dist = Some((text, form));
                }
            }
            "cache_bust" => cache_bust(v, &path, a)?,
            // A float as its text, `{input, output}` as its JSON (AIPerf's `_coerce_range_ratio`).
            "random_range_ratio" => match v {
                Value::Object(_) => a.one("--random-range-ratio", v.to_string()),
                _ => a.one("--random-range-ratio", scalar(v, &path)?),
            },
            "random_corpus_style" => a.one("--random-corpus-style", scalar(v, &path)?),
            _ => return Err(extra(&path)),
        }
    }
    Ok(())
}

/// A dataset's `audio`, `images` or `video` block: its keys onto the `--audio-*`, `--image-*` and
/// `--video-*` flags (a video's own `audio` block onto `--video-audio-*`).
fn media(kind: &str, m: &Map<String, Value>, p: &str, a: &mut FileArgs) -> R<()> {
    for (k, v) in m {
        let path = format!("{p}.{k}");
        if v.is_null() {
            continue;
        }
        let flag = match (kind, k.as_str()) {
            ("audio", "length") => {
                drawn(v, &path, "--audio-length", Center::Real, a)?;
                continue;
            }
            ("images", "width") => {
                drawn(v, &path, "--image-width", Center::Truncated, a)?;
                continue;
            }
            ("images", "height") => {
                drawn(v, &path, "--image-height", Center::Truncated, a)?;
                continue;
            }
            ("video", "audio") => {
                for (ak, av) in obj(v, &path)? {
                    let apath = format!("{path}.{ak}");
                    let flag = match ak.as_str() {
                        "sample_rate" => "--video-audio-sample-rate",
                        "channels" => "--video-audio-num-channels",
                        "codec" => "--video-audio-codec",
                        "depth" => "--video-audio-depth",
                        _ => return Err(extra(&apath)),
                    };
                    if !av.is_null() {
                        a.push(flag, &[scalar(av, &apath)?]);
                    }
                }
                continue;
            }
            ("audio", "batch_size") => "--audio-batch-size",
            ("audio", "format") => "--audio-format",
            ("audio", "sample_rates") => "--audio-sample-rates",
            ("audio", "depths") => "--audio-depths",
            ("audio", "channels") => "--audio-num-channels",
            ("images", "batch_size") => "--image-batch-size",
            ("images", "format") => "--image-format",
            ("images", "source") => "--image-source",
            ("images", "source_sampling") => "--image-source-sampling",
            ("video", "batch_size") => "--video-batch-size",
            ("video", "duration") => "--video-duration",
            ("video", "fps") => "--video-fps",
            ("video", "width") => "--video-width",
            ("video", "height") => "--video-height",
            ("video", "format") => "--video-format",
            ("video", "codec") => "--video-codec",
            ("video", "synth_type") => "--video-synth-type",
            _ => return Err(extra(&path)),
        };
        a.push(flag, &strings(v, &path)?);
    }
    Ok(())
}

/// How a distribution's center becomes its flag's mean: a whole number (a length, a count), a
/// real number whose expected value AIPerf truncates (`int(...)` of a delay's or an image
/// side's log-normal, multimodal or empirical distribution; a fixed or normal one's mean is
/// the flag's as given), or the real number itself (an audio length).
#[derive(Clone, Copy)]
enum Center {
    Whole,
    Truncated,
    Real,
}

impl Center {
    /// A fixed or normal distribution's mean.
    fn put(self, a: &mut FileArgs, flag: &str, n: f64) {
        let flag = format!("{flag}-mean");
        match self {
            Center::Whole => a.one(&flag, n as u64),
            Center::Truncated | Center::Real => a.one(&flag, n),
        }
    }

    /// Another distribution's expected value.
    fn put_expected(self, a: &mut FileArgs, flag: &str, n: f64) {
        match self {
            Center::Truncated => a.one(&format!("{flag}-mean"), n.trunc()),
            _ => self.put(a, flag, n),
        }
    }
}

/// A fixed or normal distribution of `flag`: a number, `{value}`, or `{mean, stddev}`.
fn dist_of(v: &Value, path: &str, flag: &str, center: Center, a: &mut FileArgs) -> R<()> {
    if let Some(n) = v.as_f64() {
        center.put(a, flag, n);
        a.file_only.fixed.push(flag.to_owned());
        return Ok(());
    }
    let m = obj(v, path)?;
    if m.contains_key("value") && !m.contains_key("mean") {
        a.file_only.fixed.push(flag.to_owned());
    }
    keys(m, path, &["value", "mean", "stddev"], &[])?;
    if let Some(x) = m.get("value").or_else(|| m.get("mean")) {
        center.put(a, flag, num(x, path)?);
    }
    if let Some(x) = m.get("stddev") {
        a.one(&format!("{flag}-stddev"), num(x, path)?);
    }
    Ok(())
}

/// AIPerf's distribution names (`type:`) and the keys of each, besides the bounds.
const DISTRIBUTION_TYPES: &[(&str, &[&str])] = &[
    ("fixed", &["value"]),
    ("normal", &["mean", "stddev"]),
    ("lognormal", &["mean", "median"]),
    ("multimodal", &["peaks"]),
    ("empirical", &["points"]),
];

/// A distribution with its explicit `type:` checked and dropped: AIPerf's discriminator takes
/// the type from it (one of its names, else its message) and the type's own model then refuses
/// a key it does not have; without `type:` the keys decide, as here everywhere.
fn untyped(v: &Value, path: &str) -> R<Value> {
    let Some(m) = v.as_object().filter(|m| m.contains_key("type")) else {
        return Ok(v.clone());
    };
    let mut m = m.clone();
    let ty = m.shift_remove("type").unwrap_or_default();
    if !ty.is_string() {
        // Not a name: the keys decide, and the key is dropped all the same.
        return Ok(Value::Object(m));
    }
    let Some((_, own)) = ty
        .as_str()
        .and_then(|t| DISTRIBUTION_TYPES.iter().find(|(n, _)| *n == t))
    else {
        let names: Vec<String> = DISTRIBUTION_TYPES
            .iter()
            .map(|(n, _)| format!("'{n}'"))
            .collect();
        return Err(YamlError::Schema(format!(
            "{path}: Value error, Unknown distribution type {}. Expected one of ({}) or omit \
             `type:` and rely on structural inference (e.g. {{mean: 512, stddev: 100}}).",
            match &ty {
                Value::String(t) => py_str_repr(t),
                other => other.to_string(),
            },
            names.join(", ")
        )));
    };
    let mut allowed = own.to_vec();
    allowed.extend(["min", "max"]);
    keys(&m, path, &allowed, &[])?;
    Ok(Value::Object(m))
}

/// A distribution whose bounds (`min`, `max`) are checked as AIPerf checks them and dropped:
/// AIPerf reads a distribution's expected value and spread, never its bounds, where it is not a
/// length (whose bounds are echoed: [`drawn`]).
fn unbounded(v: &Value, path: &str) -> R<Value> {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        bounds(m, path)?;
    }
    Ok(v)
}

/// Takes `min` and `max` out of `m`, checked as AIPerf checks them (finite, `min <= max`).
fn bounds(m: &mut Map<String, Value>, path: &str) -> R<(Option<f64>, Option<f64>)> {
    let mut bound = |k: &str| -> R<Option<f64>> {
        let Some(x) = m.shift_remove(k) else {
            return Ok(None);
        };
        let n = num(&x, &format!("{path}.{k}"))?;
        if !n.is_finite() {
            return Err(YamlError::Schema(format!(
                "{path}: Value error, Distribution bound `{k}` must be finite, got {n}"
            )));
        }
        Ok(Some(n))
    };
    let (lo, hi) = (bound("min")?, bound("max")?);
    if let (Some(lo), Some(hi)) = (lo, hi)
        && lo > hi
    {
        return Err(YamlError::Schema(format!(
            "{path}: Value error, Distribution bounds invalid: min={lo:?} > max={hi:?}; swap \
             them or remove one."
        )));
    }
    Ok((lo, hi))
}

/// An input or output length ([`drawn`]).
fn length(v: &Value, path: &str, flag: &str, a: &mut FileArgs) -> R<()> {
    drawn(v, path, flag, Center::Whole, a)
}

/// A distribution of the synthetic composer's: an input or output length, the turns of a
/// conversation, the delay between turns, an image's side, an audio length, the rankings'
/// counts and lengths. A log-normal (`{mean, median}`), multimodal (`peaks`)
/// or empirical (`points`) one is run as AIPerf 0.13 runs it: every draw is the distribution's
/// expected value, truncated to an integer, with no spread (AIPerf's composer reads
/// `expected_value` and a `stddev` these types do not have; it never draws from them). Fixed and
/// normal ones are [`dist_of`]'s. An explicit `type:` is checked and dropped ([`untyped`]).
fn drawn(v: &Value, path: &str, flag: &str, center: Center, a: &mut FileArgs) -> R<()> {
    // Bounds: checked as AIPerf checks them, echoed, never applied (AIPerf's composer draws a
    // length from the mean and spread alone).
    let mut v = untyped(v, path)?;
    if let Some(m) = v.as_object_mut()
        && (m.contains_key("min") || m.contains_key("max"))
    {
        let (lo, hi) = bounds(m, path)?;
        a.file_only.bounds.push((flag.to_owned(), lo, hi));
    }
    let v = &v;
    let drawn_as_mean = v.as_object().is_some_and(|m| {
        ["median", "peaks", "points"]
            .iter()
            .any(|k| m.contains_key(*k))
    });
    if !drawn_as_mean {
        return dist_of(v, path, flag, center, a);
    }
    let e = expected(v, path)?;
    center.put_expected(a, flag, e);
    a.file_only
        .drawn
        .push((flag.to_owned(), e as u64, model_form(v)));
    Ok(())
}

/// A distribution as AIPerf's model writes it: numbers as floats, each peak
/// `{distribution: {…}, weight}` (weight 1 by default).
fn model_form(v: &Value) -> Value {
    let floats = |m: &Map<String, Value>| -> Map<String, Value> {
        m.iter()
            .filter(|(k, _)| *k != "type")
            .map(|(k, x)| (k.clone(), x.as_f64().map_or_else(|| x.clone(), Value::from)))
            .collect()
    };
    let Some(m) = v.as_object() else {
        return serde_json::json!({ "value": v.as_f64().map_or_else(|| v.clone(), Value::from) });
    };
    match m.get("peaks").and_then(Value::as_array) {
        Some(peaks) => {
            let list = peaks
                .iter()
                .map(|p| {
                    let mut d = p.as_object().map(floats).unwrap_or_default();
                    let weight = d.remove("weight").unwrap_or(Value::from(1.0));
                    serde_json::json!({"distribution": d, "weight": weight})
                })
                .collect();
            serde_json::json!({ "peaks": Value::Array(list) })
        }
        None => Value::Object(floats(m)),
    }
}

/// AIPerf's `expected_value` of a distribution (its validation rules checked on the way):
/// fixed `value`, normal `mean`, log-normal `mean` (`0 < median <= mean`), multimodal the
/// weighted mean of two or more peaks (weights `>= 0`, by default 1), empirical the weighted
/// mean of its points (weights `> 0`). A peak's bounds are checked and unused, as AIPerf's
/// composer reads only the weighted expected value.
fn expected(v: &Value, path: &str) -> R<f64> {
    if let Some(n) = v.as_f64() {
        return Ok(n);
    }
    let v = unbounded(&untyped(v, path)?, path)?;
    let m = obj(&v, path)?;
    let invalid = |why: String| YamlError::Schema(format!("{path}: Value error, {why}"));
    let weighted = |items: &[(f64, f64)]| -> R<f64> {
        let total: f64 = items.iter().map(|(w, _)| w).sum();
        if total <= 0.0 {
            return Err(invalid("the weights sum to 0".into()));
        }
        Ok(items.iter().map(|(w, e)| w / total * e).sum())
    };
    if let Some(peaks) = m.get("peaks") {
        keys(m, path, &["peaks"], &[])?;
        let list = peaks.as_array().ok_or_else(|| {
            YamlError::Schema(format!("{path}.peaks: Input should be a valid list"))
        })?;
        if list.len() < 2 {
            return Err(YamlError::Schema(format!(
                "{path}.peaks: List should have at least 2 items after validation, not {}",
                list.len()
            )));
        }
        let mut items = Vec::with_capacity(list.len());
        for (i, peak) in list.iter().enumerate() {
            let ppath = format!("{path}.peaks.{i}");
            let mut peak = obj(peak, &ppath)?.clone();
            let weight = match peak.remove("weight") {
                None => 1.0,
                Some(w) => num(&w, &format!("{ppath}.weight"))?,
            };
            if weight < 0.0 {
                return Err(YamlError::Schema(format!(
                    "{ppath}.weight: Input should be greater than or equal to 0"
                )));
            }
            let inner = match peak.remove("distribution") {
                Some(d) if peak.is_empty() => d,
                Some(_) => return Err(extra(&format!("{ppath}.distribution"))),
                None => Value::Object(peak),
            };
            items.push((weight, expected(&inner, &ppath)?));
        }
        return weighted(&items);
    }
    if let Some(points) = m.get("points") {
        keys(m, path, &["points"], &[])?;
        let list = points.as_array().ok_or_else(|| {
            YamlError::Schema(format!("{path}.points: Input should be a valid list"))
        })?;
        if list.is_empty() {
            return Err(invalid(
                "Empirical distribution requires at least 1 point".into(),
            ));
        }
        let mut items = Vec::with_capacity(list.len());
        for (i, point) in list.iter().enumerate() {
            let ppath = format!("{path}.points.{i}");
            let pm = obj(point, &ppath)?;
            keys(pm, &ppath, &["value", "weight"], &[])?;
            let value = pm
                .get("value")
                .ok_or_else(|| YamlError::Schema(format!("{ppath}.value: Field required")))?;
            let weight = match pm.get("weight") {
                None => 1.0,
                Some(w) => num(w, &format!("{ppath}.weight"))?,
            };
            if weight <= 0.0 {
                return Err(YamlError::Schema(format!(
                    "{ppath}.weight: Input should be greater than 0"
                )));
            }
            items.push((weight, num(value, &format!("{ppath}.value"))?));
        }
        return weighted(&items);
    }
    if let Some(median) = m.get("median") {
        keys(m, path, &["mean", "median"], &[])?;
        let mean = m
            .get("mean")
            .ok_or_else(|| YamlError::Schema(format!("{path}.mean: Field required")))?;
        let (mean, median) = (num(mean, &format!("{path}.mean"))?, num(median, path)?);
        for (k, x) in [("mean", mean), ("median", median)] {
            if x <= 0.0 {
                return Err(YamlError::Schema(format!(
                    "{path}.{k}: Input should be greater than 0"
                )));
            }
        }
        if median > mean {
            return Err(invalid(format!(
                "Log-normal median ({}) must be <= mean ({}).",
                super::jinja::py_float_repr(median),
                super::jinja::py_float_repr(mean)
            )));
        }
        return Ok(mean);
    }
    keys(m, path, &["value", "mean", "stddev"], &[])?;
    match m.get("value").or_else(|| m.get("mean")) {
        Some(x) => num(x, path),
        None => Err(invalid("a distribution needs `value` or `mean`".into())),
    }
}

/// AIPerf 0.13's phase types (`benchmark.phases[].type`).
const PHASE_TYPES: &[&str] = &[
    "concurrency",
    "poisson",
    "gamma",
    "constant",
    "user_centric",
    "fixed_schedule",
];

/// The keys a phase of type `ty` has in AIPerf's schema that ringperf reads, and those it has
/// that ringperf does not run (refused as not supported; any other key is unknown).
fn phase_keys(ty: &str) -> (Vec<&'static str>, &'static [&'static str]) {
    let mut known = vec![
        "name",
        "kind",
        "type",
        "exclude_from_results",
        "requests",
        "duration",
        "sessions",
        "concurrency",
        "concurrency_ramp",
        "prefill_concurrency",
        "prefill_ramp",
        "grace_period",
        "cancellation",
        "failed_request_threshold",
        "seamless",
    ];
    match ty {
        "poisson" | "constant" => known.extend(["rate", "rate_ramp", "rate_series"]),
        "gamma" => known.extend(["rate", "rate_ramp", "rate_series", "smoothness"]),
        "user_centric" => known.extend(["rate", "rate_ramp", "users"]),
        "fixed_schedule" => known.extend(["auto_offset", "start_offset", "end_offset"]),
        _ => {}
    }
    // Agentic replay's: on any phase (run on the first profiling phase, read elsewhere); any
    // type, so that one without a concurrency gets AIPerf's error.
    // AIPerf's adaptive scale (`adaptive_scale` and its flat fields, `sla`): any type, so that
    // one it refuses gets AIPerf's message.
    known.extend(super::adaptive_scale::FLAT_KEYS);
    known.extend(AGENTIC_KEYS);
    // Every key of AIPerf's phase model is read on every phase type that has it.
    (known, &[])
}

/// A phase as read: its keys, its name, whether it is a warmup, its adaptive settings.
type ReadPhase<'a> = (&'a Map<String, Value>, String, bool, Option<AdaptiveSpec>);

/// The phases of a file: the profiling phase and a warmup the flags can express become flags
/// (so the command line and a sweep override them as AIPerf's overlay does); any other phase is a
/// [`PhaseSpec`] of its own ([`FileOnly`]).
fn phases(list: &Value, a: &mut FileArgs) -> R<()> {
    let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut read: Vec<ReadPhase<'_>> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("benchmark.phases.{i}");
        let m = obj(v, &at)?;
        let Some(ty) = m.get("type").and_then(Value::as_str) else {
            return Err(YamlError::Schema(format!(
                "{at}: Unable to extract tag using discriminator 'type'"
            )));
        };
        if !PHASE_TYPES.contains(&ty) {
            return Err(YamlError::Schema(format!(
                "{at}: Input tag '{ty}' found using 'type' does not match any of the expected \
                 tags: PhaseType.CONCURRENCY, PhaseType.POISSON, PhaseType.GAMMA, \
                 PhaseType.CONSTANT, PhaseType.USER_CENTRIC, PhaseType.FIXED_SCHEDULE"
            )));
        }
        let at = format!("{at}.{ty}");
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("profiling")
            .to_string();
        // A ramp's curve as given: echoed, run linearly (AIPerf 0.13's runner ramps every value
        // linearly, whatever the curve).
        for key in ["concurrency_ramp", "prefill_ramp", "rate_ramp"] {
            if let Some(curve) = m
                .get(key)
                .and_then(|r| r.get("strategy"))
                .and_then(Value::as_str)
            {
                (a.file_only.ramp_strategies).push((name.clone(), key.into(), curve.into()));
            }
        }
        let named = |k: &str| name == k;
        let valid_name = name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || (i > 0 && (c.is_ascii_digit() || c == '-'))
        });
        if !valid_name || name.is_empty() {
            return Err(YamlError::Schema(format!(
                "{at}.name: String should match pattern '^[A-Za-z_][A-Za-z0-9_-]*$'"
            )));
        }
        let upper = name.to_ascii_uppercase();
        let device = ["CON", "PRN", "AUX", "NUL"].contains(&upper.as_str())
            || ((upper.starts_with("COM") || upper.starts_with("LPT"))
                && upper.len() == 4
                && upper.as_bytes()[3].is_ascii_digit()
                && upper.as_bytes()[3] != b'0');
        if device {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase name '{name}' is reserved by Windows and cannot be used \
                 as an artifact directory name."
            )));
        }
        let warmup = match m.get("kind").and_then(Value::as_str) {
            Some("warmup") => true,
            Some("profiling") => false,
            Some(_) => {
                return Err(YamlError::Schema(format!(
                    "{at}.kind: Input should be 'warmup' or 'profiling'"
                )));
            }
            None if named("warmup") => true,
            None if named("profiling") => false,
            None => {
                return Err(YamlError::Schema(format!(
                    "{at}: Value error, Phase '{name}': kind is required for non-canonical phase \
                     names. Set kind to 'warmup' or 'profiling'."
                )));
            }
        };
        let kind = if warmup { "warmup" } else { "profiling" };
        if (named("warmup") || named("profiling")) && name != kind {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase name '{name}' is reserved for kind '{name}'; got kind \
                 '{kind}'."
            )));
        }
        if let Some(x) = m.get("exclude_from_results")
            && flag_bool(x, &format!("{at}.exclude_from_results"))? != warmup
        {
            let must = if warmup { "True" } else { "False" };
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase '{name}': exclude_from_results must be {must} for \
                 kind '{kind}' (warmup is always excluded; profiling is always included)"
            )));
        }
        let (known, aiperf_only) = phase_keys(ty);
        keys(m, &at, &known, aiperf_only)?;
        // Checked before the phase's own rules, as AIPerf checks it.
        let adaptive = super::adaptive_scale::read(m, &at, ty)?;
        let bounded = ["requests", "duration", "sessions"]
            .iter()
            .any(|k| m.contains_key(*k));
        if !bounded && ty != "fixed_schedule" {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase '{name}': at least one of 'requests', 'duration', or \
                 'sessions' must be specified"
            )));
        }
        if ty != "concurrency"
            && ty != "fixed_schedule"
            && !m.contains_key("rate")
            && !m.contains_key("rate_series")
        {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, rate-controlled phases require rate or rate_series"
            )));
        }
        if m.contains_key("grace_period") && !m.contains_key("duration") {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase '{name}': grace_period requires duration to be set"
            )));
        }
        let whole = |k: &str| m.get(k).and_then(Value::as_f64);
        if let (Some(pc), Some(c)) = (whole("prefill_concurrency"), whole("concurrency"))
            && pc > c
        {
            return Err(YamlError::Schema(format!(
                "{at}: Value error, Phase '{name}': prefill_concurrency must be <= concurrency"
            )));
        }
        if let Some((_, earlier, _, _)) = read
            .iter()
            .find(|(_, n, _, _)| n.eq_ignore_ascii_case(&name))
        {
            let mut names: Vec<String> = read.iter().map(|(_, n, _, _)| format!("'{n}'")).collect();
            names.push(format!("'{name}'"));
            return Err(YamlError::Schema(format!(
                "benchmark: Value error, duplicate phase name '{name}' conflicts with '{earlier}' \
                 — names must be unique case-insensitively. Found names: [{}]",
                names.join(", ")
            )));
        }
        if read.is_empty() && m.get("seamless") == Some(&Value::Bool(true)) {
            return Err(YamlError::Schema(format!(
                "benchmark: Value error, Phase config '{name}' cannot have seamless=True because \
                 it is first. Seamless transitions only apply to subsequent phase configs."
            )));
        }
        read.push((m, name, warmup, adaptive));
    }
    if !read.iter().any(|(_, _, w, _)| !w) {
        let got: Vec<String> = (read.iter())
            .map(|(_, n, w, _)| format!("('{n}', '{}')", if *w { "warmup" } else { "profiling" }))
            .collect();
        return Err(YamlError::Schema(format!(
            "benchmark: Value error, a 'profiling' phase is required; got phases: [{}]",
            got.join(", ")
        )));
    }
    let Some(prof) = read.iter().position(|(_, _, w, _)| !w) else {
        return Ok(());
    };
    if read[prof].1 != "profiling" {
        a.file_only.profiling_name = Some(read[prof].1.clone());
    }
    let ty = |m: &Map<String, Value>| {
        m.get("type")
            .and_then(Value::as_str)
            .unwrap_or("concurrency")
            .to_string()
    };
    let prof_ty = ty(read[prof].0);
    // One warmup, paced as the `--warmup-*` flags pace one: flags. Else every warmup is a phase
    // of its own.
    // The flags' warmup takes what it lacks from the profiling phase (its concurrency, prefill
    // limit and ramps); a file's warmup does not, so one lacking a key the profiling phase has
    // is a phase of its own too.
    // Named other than `warmup`, it keeps its name as a phase of its own.
    let flag_warmup = prof == 1 && read[0].1 == "warmup" && {
        let (w, p) = (read[0].0, read[prof].0);
        let wt = ty(w);
        let rated = |t: &str| matches!(t, "poisson" | "gamma" | "constant");
        let paced = match wt.as_str() {
            "concurrency" => !rated(&prof_ty),
            "poisson" | "constant" => true,
            "gamma" => w.get("smoothness") == p.get("smoothness"),
            _ => false,
        };
        let inherits_nothing = [
            "concurrency",
            "prefill_concurrency",
            "concurrency_ramp",
            "rate_ramp",
            "prefill_ramp",
        ]
        .iter()
        .all(|k| w.contains_key(*k) || !p.contains_key(*k));
        // A warmup's cancellation has no `--warmup-*` flag: such a warmup is a phase of its own
        // (it is echoed; AIPerf 0.13 cancels none of a warmup's requests).
        // Nor a rate series (the `--warmup-*` flags have none): such a warmup runs its series
        // as a phase of its own, as AIPerf's does.
        let flagged = !w.contains_key("cancellation") && !w.contains_key("rate_series");
        paced && inherits_nothing && flagged
    };
    // Agentic replay puts its own warmup in place of the file's: those are echoed, never run.
    let prof_agentic =
        read[prof].0.get("timing_mode").and_then(Value::as_str) == Some("agentic_replay");
    let flag_warmup = flag_warmup && !prof_agentic;
    // A warmup's adaptive fields are checked, never run (AIPerf paces every warmup by its rate).
    for (i, (m, name, warmup, adaptive)) in read.iter().enumerate() {
        if i > prof {
            let mut spec = phase_spec(m, name, *warmup)?;
            spec.adaptive = adaptive.clone();
            a.file_only.phases_after.push(spec);
        } else if *warmup && !flag_warmup {
            let mut spec = phase_spec(m, name, true)?;
            spec.adaptive = adaptive.clone();
            a.file_only.phases_before.push(spec);
        } else {
            phase(m, name, *warmup, a)?;
            if !*warmup {
                a.file_only.profiling_adaptive = adaptive.clone();
            }
        }
    }
    // A warmup replayed as agentic lanes before a profiling phase that is not: AIPerf 0.13 runs
    // it as such and never ends the run (its run of such a file sent the warmup's requests,
    // then waited until it was killed).
    let replayed_warmup = (a.file_only.phases_before.iter())
        .find(|s| s.agentic.replay)
        .map(|s| s.name.clone())
        .or_else(|| (a.file_only.warmup_agentic.replay).then(|| "warmup".to_owned()));
    if let (Some(name), false) = (replayed_warmup, prof_agentic) {
        return Err(YamlError::Unsupported(format!(
            "benchmark.phases.{name}.timing_mode: agentic_replay on a warmup before a profiling \
             phase that is not agentic replay (AIPerf 0.13 never ends such a run)"
        )));
    }
    Ok(())
}

/// Agentic replay's keys ([`AgenticKeys`]).
const AGENTIC_KEYS: &[&str] = &[
    "timing_mode",
    "trajectory_start_min_ratio",
    "trajectory_start_max_ratio",
    "burst_phase_starts",
    "system_idle_gap_cap_seconds",
    "agentic_warmup_grace_period",
    "agentic_cache_warmup_duration",
];

/// The timing mode AIPerf 0.13 derives from a phase's type (`_phase_timing_mode`).
fn derived_mode(ty: &str) -> &'static str {
    match ty {
        "fixed_schedule" => "fixed_schedule",
        "user_centric" => "user_centric_rate",
        _ => "request_rate",
    }
}

/// A phase's explicit `timing_mode` other than `agentic_replay` and `adaptive_scale`: the mode
/// its type gives changes nothing (returned, to be echoed), and so does any on a warmup (AIPerf
/// paces every warmup by its rate loop); another one would change the phase's strategy, which
/// ringperf does not do.
fn plain_mode(v: &Value, path: &str, ty: &str, warmup: bool) -> R<String> {
    const MODES: [&str; 3] = ["request_rate", "fixed_schedule", "user_centric_rate"];
    match v.as_str() {
        Some(m) if MODES.contains(&m) && (warmup || m == derived_mode(ty)) => Ok(m.to_owned()),
        Some(m) if MODES.contains(&m) => Err(YamlError::Unsupported(format!(
            "{path}: {m} on a {ty} phase (its type gives {}; ringperf does not run a phase by \
             another type's strategy)",
            derived_mode(ty)
        ))),
        _ => Err(YamlError::Schema(format!(
            "{path}: Input should be 'request_rate', 'fixed_schedule', 'user_centric_rate', \
             'agentic_replay' or 'adaptive_scale'"
        ))),
    }
}

/// Reads agentic replay's key `k` of a phase other than the first profiling phase (of type
/// `ty`) into `keys` (its `timing_mode` may also be `adaptive_scale`, read with the adaptive
/// fields, or the one its type gives).
fn agentic_key(
    k: &str,
    v: &Value,
    path: &str,
    (ty, warmup): (&str, bool),
    keys: &mut AgenticKeys,
) -> R<()> {
    match k {
        "timing_mode" => match v.as_str() {
            Some("agentic_replay") => keys.replay = true,
            Some("adaptive_scale") => {}
            _ => keys.mode = Some(plain_mode(v, path, ty, warmup)?),
        },
        "trajectory_start_min_ratio" => keys.trajectory_start_min_ratio = Some(num(v, path)?),
        "trajectory_start_max_ratio" => keys.trajectory_start_max_ratio = Some(num(v, path)?),
        "burst_phase_starts" => keys.burst_phase_starts = Some(flag_bool(v, path)?),
        "system_idle_gap_cap_seconds" => keys.system_idle_gap_cap_seconds = Some(num(v, path)?),
        "agentic_warmup_grace_period" => keys.agentic_warmup_grace_period = Some(dur(v, path)?.0),
        "agentic_cache_warmup_duration" => {
            keys.agentic_cache_warmup_duration = Some(dur(v, path)?.0);
        }
        _ => return Err(YamlError::Unsupported(path.to_owned())),
    }
    Ok(())
}

/// A phase's `rate_series`: a series file's path (`series.json` or `{path: …}`) or its points
/// inline (`{points: [{time_s, qps}, …]}` or the list), checked as a series file is.
fn series_points(v: &Value, path: &str) -> R<Vec<(f64, f64)>> {
    let file = match v {
        Value::String(f) => Some(f.clone()),
        Value::Object(o) if o.len() == 1 && o.contains_key("path") => {
            Some(scalar(&o["path"], path)?)
        }
        _ => None,
    };
    let text = match &file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| {
            YamlError::Schema(format!(
                "{path}: cannot read request-rate series JSON '{f}': {e}"
            ))
        })?,
        None => v.to_string(),
    };
    let series = ringperf_workload::schedule::RateSeries::parse(&text)
        .map_err(|e| YamlError::Schema(format!("{path}: {e}")))?;
    Ok(series.points().collect())
}

/// A phase of its own ([`PhaseSpec`]): its type, stop conditions, load, ramps and grace period.
fn phase_spec(m: &Map<String, Value>, name: &str, warmup: bool) -> R<PhaseSpec> {
    let p = format!("benchmark.phases.{name}");
    let ty = m
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("concurrency");
    let Some(pacing) = Pacing::of(ty) else {
        return Err(YamlError::Unsupported(format!(
            "{p}: phase type '{ty}' for a phase besides the profiling phase (ringperf runs \
             concurrency, poisson, gamma, constant, user_centric and fixed_schedule phases \
             there)"
        )));
    };
    let mut spec = PhaseSpec::new(name, pacing);
    spec.warmup = warmup;
    spec.exclude_from_results = warmup;
    let secs = |v: &Value, path: &str| dur(v, path).map(|s| s.0);
    for (k, v) in m {
        let path = format!("{p}.{k}");
        let whole = |v: &Value| num(v, &path).map(|n| n as u64);
        match k.as_str() {
            "name" | "kind" | "type" => {}
            "exclude_from_results" => spec.exclude_from_results = flag_bool(v, &path)? || warmup,
            "seamless" => spec.seamless = flag_bool(v, &path)?,
            "requests" => spec.requests = Some(whole(v)?),
            "duration" => spec.duration = Some(secs(v, &path)?),
            "sessions" => spec.sessions = Some(whole(v)?),
            "concurrency" => spec.concurrency = Some(whole(v)?),
            "prefill_concurrency" => spec.prefill_concurrency = Some(whole(v)?),
            "rate" if pacing != Pacing::Concurrency => spec.rate = Some(num(v, &path)?),
            "smoothness" if pacing == Pacing::Gamma => spec.smoothness = Some(num(v, &path)?),
            "users" if pacing == Pacing::UserCentric => spec.users = Some(whole(v)?),
            "concurrency_ramp" => spec.concurrency_ramp = Some(ramp(v, &path)?.0),
            "prefill_ramp" => spec.prefill_ramp = Some(ramp(v, &path)?.0),
            // (On a user-centric phase: read, echoed, not applied, as in AIPerf 0.13.)
            "rate_ramp" if pacing.rated() || pacing == Pacing::UserCentric => {
                spec.rate_ramp = Some(ramp(v, &path)?.0)
            }
            "grace_period" => spec.grace_period = Some(secs(v, &path)?),
            "auto_offset" if pacing == Pacing::FixedSchedule => {
                spec.auto_offset = Some(flag_bool(v, &path)?);
            }
            "start_offset" if pacing == Pacing::FixedSchedule => {
                spec.start_offset = Some(whole(v)?)
            }
            "end_offset" if pacing == Pacing::FixedSchedule => spec.end_offset = Some(whole(v)?),
            k if super::adaptive_scale::FLAT_KEYS.contains(&k) => {}
            k if AGENTIC_KEYS.contains(&k) => {
                agentic_key(k, v, &path, (ty, warmup), &mut spec.agentic)?
            }
            "cancellation" => {
                let c = obj(v, &path)?;
                keys(c, &path, &["rate", "delay"], &[])?;
                let rate = c
                    .get("rate")
                    .ok_or_else(|| YamlError::Schema(format!("{path}.rate: Field required")))?;
                let rate = num(rate, &format!("{path}.rate"))?;
                let delay = c
                    .get("delay")
                    .map(|d| num(d, &format!("{path}.delay")))
                    .transpose()?;
                spec.cancellation = Some((rate, delay));
            }
            "rate_series" if pacing.rated() => {
                spec.rate_series = Some(series_points(v, &path)?);
            }
            // AIPerf's bounds, its sentences; a warmup's is never checked (its records count
            // toward no budget), as in AIPerf.
            "failed_request_threshold" => {
                let t = num(v, &path)?;
                if t < 0.0 {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be greater than or equal to 0"
                    )));
                }
                if t > 1.0 {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be less than or equal to 1"
                    )));
                }
                spec.failed_request_threshold = Some(t);
            }
            _ => return Err(YamlError::Unsupported(path)),
        }
    }
    if spec.rate.is_some() && spec.rate_series.is_some() {
        return Err(YamlError::Schema(format!(
            "{p}: rate and rate_series are mutually exclusive (the series sets the rate)"
        )));
    }
    if !matches!(pacing, Pacing::Concurrency | Pacing::FixedSchedule)
        && spec.rate.is_none()
        && spec.rate_series.is_none()
    {
        return Err(YamlError::Schema(format!(
            "{p}.rate: Field required for a {ty} phase"
        )));
    }
    if pacing == Pacing::UserCentric && spec.users.is_none() {
        return Err(YamlError::Schema(format!(
            "{p}.users: Field required for a user_centric phase"
        )));
    }
    Ok(spec)
}

/// A phase the flags express: a warmup (`kind: warmup`, or named `warmup`) or the profiling
/// phase.
fn phase(m: &Map<String, Value>, name: &str, warmup: bool, a: &mut FileArgs) -> R<()> {
    let p = format!("benchmark.phases.{name}");
    let seen = a.flags.iter().any(|(f, _)| {
        if warmup {
            f.starts_with("--warmup-") || f == "--num-warmup-sessions"
        } else {
            f == "--concurrency"
                || f == "--request-count"
                || f == "--benchmark-duration"
                || f == "--request-rate"
                || f == "--fixed-schedule"
                || f == "--user-centric-rate"
        }
    });
    if seen {
        return Err(YamlError::Unsupported(format!(
            "{p}: a second {} phase (ringperf runs one warmup phase, then one profiling phase)",
            if warmup { "warmup" } else { "profiling" }
        )));
    }
    let ty = m
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("concurrency");
    if !warmup && m.contains_key("type") && ty != "fixed_schedule" {
        a.file_only.profiling_paced = true;
    }
    let w = |f: &str| {
        if warmup {
            format!("--warmup-{f}")
        } else {
            format!("--{f}")
        }
    };
    a.file_only.from_file = true;
    if !warmup && m.contains_key("duration") && !m.contains_key("grace_period") {
        a.file_only.no_grace = true;
    }
    // A poisson or constant profiling phase whose `timing_mode: fixed_schedule` replays the
    // trace: its rate is echoed and unused, as in AIPerf (no rate flag beside the replay).
    let replayed_rate = !warmup
        && matches!(ty, "poisson" | "constant")
        && m.get("timing_mode").and_then(Value::as_str) == Some("fixed_schedule");
    match (ty, warmup) {
        ("concurrency", _) => {}
        ("poisson" | "constant", _) if replayed_rate => {}
        ("poisson" | "gamma" | "constant", _) => a.one(&w("arrival-pattern"), ty),
        ("user_centric", false) | ("fixed_schedule", false) => {}
        (t, _) => {
            return Err(YamlError::Unsupported(format!(
                "{p}: phase type '{t}'{} (ringperf runs concurrency, poisson, gamma and constant phases, and user_centric / fixed_schedule as the profiling phase)",
                if warmup { " as a warmup" } else { "" }
            )));
        }
    }
    for (k, v) in m {
        let path = format!("{p}.{k}");
        match k.as_str() {
            "name" | "kind" | "type" => {}
            "exclude_from_results" => {}
            "seamless" => a.file_only.profiling_seamless = flag_bool(v, &path)? && !warmup,
            "requests" if warmup => a.one("--warmup-request-count", num(v, &path)? as u64),
            "requests" => a.one("--request-count", num(v, &path)? as u64),
            "duration" if warmup => a.one("--warmup-duration", dur(v, &path)?),
            "duration" => a.one("--benchmark-duration", dur(v, &path)?),
            "sessions" if warmup => a.one("--num-warmup-sessions", num(v, &path)? as u64),
            "sessions" => a.one("--conversation-num", num(v, &path)? as u64),
            "concurrency" => a.one(&w("concurrency"), num(v, &path)? as u64),
            "rate" if ty == "user_centric" => a.one("--user-centric-rate", num(v, &path)?),
            "rate" if replayed_rate => a.file_only.profiling_replayed_rate = Some(num(v, &path)?),
            "rate" => a.one(&w("request-rate"), num(v, &path)?),
            "users" if ty == "user_centric" => a.one("--num-users", num(v, &path)? as u64),
            // Equal to the profiling phase's (else the warmup is a phase of its own).
            "smoothness" if warmup => {}
            "smoothness" if ty == "gamma" => a.one("--arrival-smoothness", num(v, &path)?),
            "prefill_concurrency" => a.one(&w("prefill-concurrency"), num(v, &path)? as u64),
            "concurrency_ramp" => a.one(&w("concurrency-ramp-duration"), ramp(v, &path)?),
            "rate_ramp" => a.one(&w("request-rate-ramp-duration"), ramp(v, &path)?),
            "prefill_ramp" => a.one(&w("prefill-concurrency-ramp-duration"), ramp(v, &path)?),
            // A file path (`rateSeries: series.json` or `{path: …}`) is the flag's file; inline
            // points are the plan's own.
            "rate_series" if !warmup => match v {
                Value::String(f) => a.one("--request-rate-series", f.as_str()),
                Value::Object(o) if o.len() == 1 && o.contains_key("path") => {
                    a.one("--request-rate-series", scalar(&o["path"], &path)?)
                }
                _ => a.file_only.profiling_rate_series = Some(series_points(v, &path)?),
            },
            // Agentic replay: the profiling phase only (AIPerf replaces a declared warmup with its
            // own).
            k if super::adaptive_scale::FLAT_KEYS.contains(&k) => {}
            "timing_mode" if !warmup => match v.as_str() {
                Some("agentic_replay") => a.file_only.agentic = true,
                Some("adaptive_scale") => {}
                // The explicit mode wins over the type's, as in AIPerf: the dataset's timestamps
                // are replayed (checked when the dataset is known: it must have them).
                Some("fixed_schedule") if ty == "concurrency" || replayed_rate => {
                    a.file_only.profiling_paced = false;
                    a.file_only.profiling_timing_mode = Some("fixed_schedule".into());
                    a.file_only.profiling_replayed_type = Some(ty.to_owned());
                }
                _ => a.file_only.profiling_timing_mode = Some(plain_mode(v, &path, ty, false)?),
            },
            "trajectory_start_min_ratio" if !warmup => {
                a.one("--trajectory-start-min-ratio", num(v, &path)?)
            }
            "trajectory_start_max_ratio" if !warmup => {
                a.one("--trajectory-start-max-ratio", num(v, &path)?)
            }
            "burst_phase_starts" if !warmup => {
                if flag_bool(v, &path)? {
                    a.switch("--burst-phase-starts");
                }
            }
            "system_idle_gap_cap_seconds" if !warmup => {
                a.one("--system-idle-gap-cap-seconds", num(v, &path)?)
            }
            "agentic_warmup_grace_period" if !warmup => {
                a.one("--agentic-warmup-grace-period", dur(v, &path)?)
            }
            "agentic_cache_warmup_duration" if !warmup => {
                a.one("--agentic-cache-warmup-duration", dur(v, &path)?)
            }
            k if warmup && AGENTIC_KEYS.contains(&k) => {
                agentic_key(k, v, &path, (ty, true), &mut a.file_only.warmup_agentic)?;
            }
            "grace_period" if warmup => a.one("--warmup-grace-period", dur(v, &path)?),
            "grace_period" => a.one("--benchmark-grace-period", dur(v, &path)?),
            "failed_request_threshold" if !warmup => {
                a.one("--failed-request-threshold", num(v, &path)?)
            }
            // Kept for profiling phases only, as AIPerf keeps it (a warmup's records count
            // toward no budget): checked, echoed, unused.
            "failed_request_threshold" => {
                let t = num(v, &path)?;
                if !(0.0..=1.0).contains(&t) {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be {} {}",
                        if t < 0.0 {
                            "greater than or equal to"
                        } else {
                            "less than or equal to"
                        },
                        if t < 0.0 { 0 } else { 1 }
                    )));
                }
                a.file_only
                    .echoed
                    .push(("phases.0.failed_request_threshold".into(), v.clone()));
            }
            "auto_offset" if ty == "fixed_schedule" && flag_bool(v, &path)? => {
                a.switch("--fixed-schedule-auto-offset")
            }
            "auto_offset" if ty == "fixed_schedule" => {}
            "start_offset" if ty == "fixed_schedule" => {
                a.one("--fixed-schedule-start-offset", num(v, &path)? as u64)
            }
            "end_offset" if ty == "fixed_schedule" => {
                a.one("--fixed-schedule-end-offset", num(v, &path)? as u64)
            }
            "cancellation" if !warmup => {
                let c = obj(v, &path)?;
                keys(c, &path, &["rate", "delay"], &[])?;
                if let Some(r) = c.get("rate") {
                    a.one("--request-cancellation-rate", num(r, &path)?);
                }
                if let Some(d) = c.get("delay") {
                    a.one("--request-cancellation-delay", num(d, &path)?);
                }
            }
            _ => return Err(YamlError::Unsupported(path)),
        }
    }
    if ty == "fixed_schedule" {
        a.switch("--fixed-schedule");
    }
    Ok(())
}

/// A ramp: its duration, or AIPerf's `{duration, strategy}` (any of AIPerf's three curves; its
/// runner, and so ringperf, ramps linearly whatever the curve).
fn ramp(v: &Value, path: &str) -> R<Seconds> {
    let Value::Object(m) = v else {
        return dur(v, path);
    };
    keys(m, path, &["duration", "strategy"], &[])?;
    match m.get("strategy") {
        None => {}
        Some(Value::String(s)) if ["linear", "exponential", "poisson"].contains(&s.as_str()) => {}
        Some(_) => {
            return Err(YamlError::Schema(format!(
                "{path}.strategy: Input should be 'exponential', 'linear' or 'poisson'"
            )));
        }
    }
    let d = m
        .get("duration")
        .ok_or_else(|| YamlError::Schema(format!("{path}.duration: Field required")))?;
    dur(d, &format!("{path}.duration"))
}

/// An export's formats (`[jsonl]`, or `false` for none; a bare `true` as its one format): whether
/// it is written. A format other than `only` (AIPerf has no other) is refused.
fn formats(v: &Value, path: &str, only: &str) -> R<bool> {
    match v {
        Value::Bool(false) => Ok(false),
        // `false` turns the file off; a list names its formats.
        Value::Bool(true) => Err(YamlError::Schema(format!(
            "{path}: Input should be False, got true"
        ))),
        Value::Array(list) if list.is_empty() => {
            let (section, key) = path.rsplit_once('.').unwrap_or(("", path));
            Err(YamlError::Schema(format!(
                "{section}: Value error, {key} format list cannot be empty; use false to disable"
            )))
        }
        Value::Array(list) => {
            for f in list {
                if f.as_str() != Some(only) {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be '{only}', got {f}"
                    )));
                }
            }
            Ok(true)
        }
        other => Err(YamlError::Schema(format!(
            "{path}: Input should be a valid list or false, got {other}"
        ))),
    }
}

/// `artifacts.user_files` checked as AIPerf's `UserFile` checks each entry (its messages): a
/// path that is relative, without `..` or control characters; `format` json, yaml or text,
/// inferred as text for string content and json otherwise; text content a string, json and
/// yaml content not one. Other keys of an entry are ignored, as AIPerf ignores them.
fn user_files(v: &Value, path: &str) -> R<Vec<UserFile>> {
    if v.is_null() {
        return Ok(Vec::new());
    }
    let list = v
        .as_array()
        .ok_or_else(|| YamlError::Schema(format!("{path}: Input should be a valid list")))?;
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let p = format!("{path}.{i}");
        let m = obj(item, &p)?;
        let file = match m.get("path") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(YamlError::Schema(format!(
                    "{p}.path: Input should be a valid string"
                )));
            }
            None => return Err(YamlError::Schema(format!("{p}.path: Field required"))),
        };
        let Some(content) = m.get("content") else {
            return Err(YamlError::Schema(format!("{p}.content: Field required")));
        };
        let format = match m.get("format") {
            None | Some(Value::Null) => None,
            Some(Value::String(f)) if f == "json" => Some(UserFileFormat::Json),
            Some(Value::String(f)) if f == "yaml" => Some(UserFileFormat::Yaml),
            Some(Value::String(f)) if f == "text" => Some(UserFileFormat::Text),
            Some(_) => {
                return Err(YamlError::Schema(format!(
                    "{p}.format: Input should be 'json', 'yaml' or 'text'"
                )));
            }
        };
        let value_error = |why: String| YamlError::Schema(format!("{p}: Value error, {why}"));
        if file.is_empty() {
            return Err(value_error("user_files entry has empty path".into()));
        }
        let shown = py_str_repr(&file);
        if file.chars().any(|c| c < ' ' || c == '\x7f') {
            return Err(value_error(format!(
                "user_files path contains control characters: {shown}"
            )));
        }
        if file.starts_with('/') {
            return Err(value_error(format!(
                "user_files absolute path rejected: {shown}"
            )));
        }
        if file.split('/').any(|part| part == "..") {
            return Err(value_error(format!(
                "user_files path '..' rejected: {shown}"
            )));
        }
        let format = format.unwrap_or(if content.is_string() {
            UserFileFormat::Text
        } else {
            UserFileFormat::Json
        });
        match (format, content) {
            (UserFileFormat::Text, Value::String(_)) => {}
            (UserFileFormat::Text, other) => {
                return Err(value_error(format!(
                    "user_files path={shown}: format='text' requires string content; got {}.",
                    super::type_name(other)
                )));
            }
            (f, Value::String(_)) => {
                return Err(value_error(format!(
                    "user_files path={shown}: format='{}' requires structured content \
                     (dict/list/scalar); got str. Wrap in a dict or set format: text.",
                    f.name()
                )));
            }
            _ => {}
        }
        out.push(UserFile {
            path: file,
            format,
            content: content.clone(),
        });
    }
    Ok(out)
}

/// Python's `repr()` of a string (what AIPerf's messages show of a path).
fn py_str_repr(s: &str) -> String {
    let mut out = String::new();
    ringperf_wire::endpoint::form::python_str_repr(s, &mut out);
    out
}

/// `artifacts.{records, raw}` as the export level they ask for (AIPerf's flag sets both):
/// `raw` with raw records, `summary` with neither, `records` otherwise; `None` with neither key.
fn export_level(artifacts: &Value) -> Option<&'static str> {
    let flag = |k: &str| {
        let v = artifacts.get(k)?;
        v.as_bool().or_else(|| v.as_array().map(|l| !l.is_empty()))
    };
    match (flag("records"), flag("raw")) {
        (None, None) => None,
        (_, Some(true)) => Some("raw"),
        (Some(false), _) => Some("summary"),
        _ => Some("records"),
    }
}

fn sections(body: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    if let Some(v) = body.get("artifacts") {
        let p = "benchmark.artifacts";
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "dir" => a.one("--output-artifact-dir", scalar(v, &path)?),
                "prefix" => a.one("--profile-export-prefix", scalar(v, &path)?),
                "slice_duration" => a.one("--slice-duration", dur(v, &path)?),
                "auto_plot" if flag_bool(v, &path)? => a.switch("--auto-plot"),
                "auto_plot" => a.switch("--no-auto-plot"),
                "show_trace_timing" if flag_bool(v, &path)? => a.switch("--show-trace-timing"),
                "trace" if flag_bool(v, &path)? => a.switch("--export-http-trace"),
                "show_trace_timing" | "trace" => {}
                "plot_required" if flag_bool(v, &path)? => a.switch("--plot-required"),
                "export_outputs_json" if flag_bool(v, &path)? => a.switch("--export-outputs-json"),
                "plot_required" | "export_outputs_json" => {}
                // Read by `export_level`; echoed as the file gives them.
                "records" => {
                    formats(v, &path, "jsonl")?;
                    a.file_only.exports.insert(k.clone(), v.clone());
                }
                "raw" => {
                    flag_bool(v, &path)?;
                    a.file_only.exports.insert(k.clone(), v.clone());
                }
                // The summary JSON: `[json]` (AIPerf's default) writes it, `false` leaves it
                // out (the CSV is written either way, as AIPerf's).
                "summary" => {
                    formats(v, &path, "json")?;
                    a.file_only.exports.insert(k.clone(), v.clone());
                }
                "user_files" => a.file_only.user_files.files = user_files(v, &path)?,
                _ => return Err(extra(&path)),
            }
        }
    }
    if let Some(level) = body.get("artifacts").and_then(export_level) {
        a.one("--export-level", level);
    }
    if let Some(v) = body.get("tokenizer") {
        let name = match v {
            Value::Object(m) => {
                keys(
                    m,
                    "benchmark.tokenizer",
                    &[
                        "name",
                        "revision",
                        "trust_remote_code",
                        "apply_chat_template",
                        "resolved_names",
                    ],
                    &[],
                )?;
                tokenizer_options(m, a)?;
                let name = (m.get("name"))
                    .map(|n| scalar(n, "benchmark.tokenizer.name"))
                    .transpose()?;
                // `resolved_names` maps a model to its tokenizer (AIPerf skips its alias lookup
                // then): the first model's entry is the run's tokenizer.
                let resolved = match m.get("resolved_names") {
                    Some(Value::Object(r)) => {
                        let first = first_model(body);
                        match first.and_then(|f| r.get(&f)) {
                            Some(t) => Some(scalar(t, "benchmark.tokenizer.resolved_names")?),
                            None => None,
                        }
                    }
                    Some(Value::Null) | None => None,
                    Some(_) => {
                        return Err(YamlError::Schema(
                            "benchmark.tokenizer.resolved_names: Input should be a valid dictionary"
                                .into(),
                        ));
                    }
                };
                resolved.or(name)
            }
            _ => {
                return Err(YamlError::Schema(
                    "benchmark.tokenizer: Input should be a valid dictionary or instance of TokenizerConfig".into(),
                ));
            }
        };
        if let Some(n) = name {
            a.one("--tokenizer", n);
        }
    }
    telemetry(body, "gpu_telemetry", "--gpu-telemetry", a)?;
    telemetry(body, "server_metrics", "--server-metrics", a)?;
    if let Some(v) = body.get("runtime") {
        let p = "benchmark.runtime";
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "ui" => a.one("--ui-type", scalar(v, &path)?),
                "workers" => a.one("--workers-max", num(v, &path)? as u64),
                "stats_interval" => a.one("--stats-interval", num(v, &path)?),
                "api_port" => a.one("--api-port", num(v, &path)? as u64),
                "api_host" => a.one("--api-host", scalar(v, &path)?),
                // AIPerf's process layout (record processors, its message bus, Kubernetes
                // pods): ringperf is one process with none of them; read, echoed, unused.
                "record_processors"
                | "service_run_type"
                | "communication"
                | "dataset_api_base_url"
                | "workers_per_pod"
                | "record_processors_per_pod"
                | "workers_min" => {
                    if !v.is_null() {
                        a.file_only.echoed.push((format!("runtime.{k}"), v.clone()));
                    }
                }
                _ => return Err(extra(&path)),
            }
        }
    }
    lab(body, a)?;
    // `metrics`: AIPerf 0.13's empty model, reserved (echoed as given).
    if let Some(v) = body.get("metrics").filter(|v| !v.is_null()) {
        keys(obj(v, "benchmark.metrics")?, "benchmark.metrics", &[], &[])?;
        a.file_only.echoed.push(("metrics".into(), v.clone()));
    }
    // `accuracy`: without a `benchmark` it turns nothing on; with one it is AIPerf's accuracy
    // mode (the `--accuracy-*` flags), which ringperf does not run.
    if let Some(v) = body.get("accuracy").filter(|v| !v.is_null()) {
        let p = "benchmark.accuracy";
        let m = obj(v, p)?;
        keys(
            m,
            p,
            &[
                "benchmark",
                "tasks",
                "n_shots",
                "enable_cot",
                "grader",
                "system_prompt",
                "verbose",
            ],
            &[],
        )?;
        if m.get("benchmark").is_some_and(|b| !b.is_null()) {
            return Err(YamlError::Unsupported(format!(
                "{p}.benchmark (AIPerf's accuracy mode: graded evaluation sets downloaded from \
                 the Hugging Face Hub, as the --accuracy-* flags)"
            )));
        }
        a.file_only.echoed.push(("accuracy".into(), v.clone()));
    }
    if let Some(v) = body.get("slos") {
        let pairs: Vec<String> = obj(v, "benchmark.slos")?
            .iter()
            .map(|(k, x)| Ok(format!("{k}:{}", num(x, &format!("benchmark.slos.{k}"))?)))
            .collect::<R<_>>()?;
        a.one("--goodput", pairs.join(" "));
    }
    Ok(())
}

/// `logging`, `otel`, `mlflow`, `wandb` and `network_latency` (AIPerf writes all five, empty or
/// disabled, into every configuration it makes from flags): their flags.
fn lab(body: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    if let Some(v) = body.get("logging") {
        let p = "benchmark.logging";
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "level" => a.one("--log-level", scalar(v, &path)?),
                _ => return Err(YamlError::Unsupported(path)),
            }
        }
    }
    if let Some(v) = body.get("network_latency") {
        let p = "benchmark.network_latency";
        let m = obj(v, p)?;
        let mut enabled = false;
        let (mut mean, mut interval) = (None, None);
        for (k, v) in m {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "enabled" => enabled = flag_bool(v, &path)?,
                "mean_ms" if v.is_null() => {}
                "mean_ms" => mean = Some(scalar(v, &path)?),
                "ping_interval" => interval = Some(scalar(v, &path)?),
                _ => return Err(extra(&path)),
            }
        }
        // AIPerf probes when enabled without a mean; a mean or an interval while disabled is
        // kept and unused.
        if enabled {
            match (mean, interval) {
                (Some(ms), _) => a.one("--network-latency-mean", ms),
                (None, Some(s)) => {
                    a.switch("--network-latency-automatic");
                    a.one("--network-latency-ping-interval", s);
                }
                (None, None) => a.switch("--network-latency-automatic"),
            }
        }
    }
    if let Some(v) = body.get("otel") {
        let p = "benchmark.otel";
        let mut streams = Vec::new();
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "metrics_url" => a.one("--otel-url", scalar(v, &path)?),
                "stream_metrics_enabled" if flag_bool(v, &path)? => streams.push("metrics"),
                "stream_timing_enabled" if flag_bool(v, &path)? => streams.push("timing"),
                "stream_metrics_enabled" | "stream_timing_enabled" => {}
                "custom_resource_attributes" => {
                    for (key, value) in obj(v, &path)? {
                        a.one(
                            "--otel-resource-attributes",
                            format!("{key}={}", scalar(value, &path)?),
                        );
                    }
                }
                "gen_ai_provider" => a.one("--gen-ai-provider", scalar(v, &path)?),
                _ => return Err(extra(&path)),
            }
        }
        if !streams.is_empty() {
            a.push(
                "--stream",
                &streams.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            );
        }
    }
    if let Some(v) = body.get("mlflow") {
        let p = "benchmark.mlflow";
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "tracking_uri" => a.one("--mlflow-tracking-uri", scalar(v, &path)?),
                "experiment" => a.one("--mlflow-experiment", scalar(v, &path)?),
                "run_name" => a.one("--mlflow-run-name", scalar(v, &path)?),
                "parent_run_id" => a.one("--mlflow-parent-run-id", scalar(v, &path)?),
                "tags" => {
                    for (key, value) in obj(v, &path)? {
                        a.one("--mlflow-tag", format!("{key}:{}", scalar(value, &path)?));
                    }
                }
                "artifact_globs" => {
                    for g in strings(v, &path)? {
                        a.one("--mlflow-artifact-glob", g);
                    }
                }
                _ => return Err(extra(&path)),
            }
        }
    }
    if let Some(v) = body.get("wandb") {
        let p = "benchmark.wandb";
        for (k, v) in obj(v, p)? {
            let path = format!("{p}.{k}");
            match k.as_str() {
                "project" => a.one("--wandb-project", scalar(v, &path)?),
                "entity" => a.one("--wandb-entity", scalar(v, &path)?),
                "run_name" => a.one("--wandb-run-name", scalar(v, &path)?),
                "tags" => {
                    for t in strings(v, &path)? {
                        a.one("--wandb-tag", t);
                    }
                }
                _ => return Err(extra(&path)),
            }
        }
    }
    Ok(())
}

/// `benchmark.tokenizer.{revision, trust_remote_code, apply_chat_template}`: their flags.
fn tokenizer_options(m: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    if let Some(v) = m.get("revision") {
        a.one(
            "--tokenizer-revision",
            scalar(v, "benchmark.tokenizer.revision")?,
        );
    }
    for (key, flag) in [
        ("trust_remote_code", "--tokenizer-trust-remote-code"),
        ("apply_chat_template", "--apply-chat-template"),
    ] {
        if let Some(v) = m.get(key)
            && flag_bool(v, &format!("benchmark.tokenizer.{key}"))?
        {
            a.switch(flag);
        }
    }
    Ok(())
}

/// `server_metrics.discovery`: AIPerf's keys and modes (`auto`, `kubernetes`, `disabled`).
fn discovery(v: &Value, p: &str) -> R<()> {
    let m = obj(v, p)?;
    keys(
        m,
        p,
        &["mode", "label_selector", "namespace", "timeout_seconds"],
        &[],
    )?;
    if let Some(mode) = m.get("mode").filter(|m| !m.is_null()) {
        let mode = scalar(mode, &format!("{p}.mode"))?.to_ascii_lowercase();
        if !["auto", "kubernetes", "disabled"].contains(&mode.as_str()) {
            return Err(YamlError::Schema(format!(
                "{p}.mode: Input should be 'auto', 'kubernetes' or 'disabled'"
            )));
        }
    }
    if let Some(t) = m.get("timeout_seconds").filter(|t| !t.is_null()) {
        let t = num(t, &format!("{p}.timeout_seconds"))?;
        if t.is_nan() || t <= 0.0 {
            return Err(YamlError::Schema(format!(
                "{p}.timeout_seconds: Input should be greater than 0"
            )));
        }
    }
    Ok(())
}

/// The name of the file's first model (`model:`, `models:` as a name, a list or `items`).
fn first_model(body: &Map<String, Value>) -> Option<String> {
    let first = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Object(m) => m.get("name").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
    };
    match body.get("models")? {
        Value::Array(list) => list.first().and_then(first),
        Value::Object(m) => match m.get("items") {
            Some(Value::Array(list)) => list.first().and_then(first),
            _ => None,
        },
        other => first(other),
    }
}

/// `gpu_telemetry` / `server_metrics`: `false`, a URL (AIPerf's shorthand for `{enabled: true,
/// urls: [it]}`), or `{enabled, urls (or url), formats}`.
fn telemetry(body: &Map<String, Value>, key: &str, flag: &str, a: &mut FileArgs) -> R<()> {
    let Some(v) = body.get(key) else {
        return Ok(());
    };
    let p = format!("benchmark.{key}");
    let shorthand;
    let m = match v {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => {
            a.switch(&format!("--no-{}", &flag[2..]));
            return Ok(());
        }
        Value::String(url) => {
            shorthand = serde_json::json!({"enabled": true, "urls": [url]});
            shorthand.as_object().expect("an object")
        }
        other => obj(other, &p)?,
    };
    // `url` is `urls` (one URL or a list) when `urls` is not given.
    let mut m = m.clone();
    if !m.contains_key("urls")
        && let Some(u) = m.shift_remove("url")
    {
        let urls = if u.is_string() {
            Value::Array(vec![u])
        } else {
            u
        };
        m.insert("urls".into(), urls);
    }
    let m = &m;
    let (extra_keys, aiperf_only): (&[&str], &[&str]) = if key == "server_metrics" {
        (&["enabled", "urls", "formats", "discovery"], &[])
    } else {
        (&["enabled", "urls", "collector", "mode"], &["metrics_file"])
    };
    keys(m, &p, extra_keys, aiperf_only)?;
    // Kubernetes discovery of inference pods: outside a cluster AIPerf finds none (`auto`,
    // `disabled`) or warns (`kubernetes`); ringperf scrapes the URLs it is given.
    if let Some(d) = m.get("discovery").filter(|d| !d.is_null()) {
        discovery(d, &format!("{p}.discovery"))?;
        a.file_only
            .echoed
            .push((format!("{key}.discovery"), d.clone()));
    }
    let given = |list: &[&str]| -> Vec<String> {
        (list.iter())
            .filter(|k| m.contains_key(**k))
            .map(|k| (*k).to_owned())
            .collect()
    };
    if key == "server_metrics" {
        a.file_only.server_metrics_keys = given(&["enabled", "urls", "formats"]);
    } else {
        a.file_only.gpu_telemetry_keys = given(&["enabled", "urls", "collector", "mode"]);
    }
    if m.get("enabled") == Some(&Value::Bool(false)) {
        a.switch(&format!("--no-{}", &flag[2..]));
        return Ok(());
    }
    let mut values = Vec::new();
    // GPU telemetry: `collector: dcgm` is what ringperf reads (DCGM exporter URLs); a local
    // library (`pynvml`, `amdsmi`) becomes the flag's value, refused as the flag refuses it.
    // `mode: realtime_dashboard` is the flag's `dashboard`.
    if let Some(c) = m.get("collector") {
        match scalar(c, &format!("{p}.collector"))?.as_str() {
            "dcgm" => {}
            other => values.push(other.to_string()),
        }
    }
    if let Some(mode) = m.get("mode") {
        match scalar(mode, &format!("{p}.mode"))?.as_str() {
            "summary" => {}
            "realtime_dashboard" => values.push("dashboard".into()),
            _ => {
                return Err(YamlError::Schema(format!(
                    "{p}.mode: Input should be 'summary' or 'realtime_dashboard'"
                )));
            }
        }
    }
    if let Some(u) = m.get("urls") {
        values.extend(strings(u, &format!("{p}.urls"))?);
    }
    if !values.is_empty() {
        a.push(flag, &values);
    }
    if let Some(f) = m.get("formats") {
        a.push(
            "--server-metrics-formats",
            &strings(f, &format!("{p}.formats"))?,
        );
    }
    Ok(())
}

/// AIPerf's `multi_run` keys.
const MULTI_RUN_KEYS: &[&str] = &[
    "num_runs",
    "cooldown_seconds",
    "confidence_level",
    "set_consistent_seed",
    "disable_warmup_after_first",
    "vary_seed_per_trial",
    "convergence",
];

fn multi_run(m: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    for (k, v) in m {
        let path = format!("multi_run.{k}");
        match k.as_str() {
            "num_runs" => a.one("--num-profile-runs", num(v, &path)? as u64),
            "cooldown_seconds" => a.one("--profile-run-cooldown-seconds", num(v, &path)?),
            "confidence_level" => a.one("--confidence-level", num(v, &path)?),
            "set_consistent_seed" if flag_bool(v, &path)? => a.switch("--set-consistent-seed"),
            "set_consistent_seed" => a.switch("--no-set-consistent-seed"),
            "disable_warmup_after_first" if flag_bool(v, &path)? => {
                a.switch("--profile-run-disable-warmup-after-first")
            }
            "disable_warmup_after_first" => a.switch("--no-profile-run-disable-warmup-after-first"),
            "vary_seed_per_trial" if flag_bool(v, &path)? => a.switch("--vary-seed-per-trial"),
            "vary_seed_per_trial" => a.switch("--no-vary-seed-per-trial"),
            "convergence" if v.is_null() => {}
            "convergence" => convergence(obj(v, &path)?, a)?,
            _ => return Err(unknown_key("multi_run", k, MULTI_RUN_KEYS)),
        }
    }
    // AIPerf's check of the two together (`num_runs` 1 when not given).
    if let Some(min) = a.file_only.convergence_min_runs {
        let runs = m.get("num_runs").and_then(Value::as_f64).unwrap_or(1.0);
        if f64::from(min) > runs {
            return Err(YamlError::Schema(format!(
                "multi_run: Value error, convergence.min_runs ({min}) must be <= num_runs \
                 ({runs}). Either lower min_runs or raise num_runs."
            )));
        }
    }
    Ok(())
}

/// `multi_run.convergence`: the `--convergence-*` flags, checked as AIPerf's model checks them
/// (`metric` required, `stat` and `mode` its names in any case, `threshold` strictly between 0
/// and 1); `min_runs` (at least 2, no flag sets it) goes to the typed plan.
fn convergence(m: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    let p = "multi_run.convergence";
    keys(
        m,
        p,
        &["metric", "stat", "mode", "threshold", "min_runs"],
        &[],
    )?;
    let Some(metric) = m.get("metric") else {
        return Err(YamlError::Schema(format!("{p}.metric: Field required")));
    };
    a.one(
        "--convergence-metric",
        scalar(metric, &format!("{p}.metric"))?,
    );
    if let Some(v) = m.get("stat") {
        let path = format!("{p}.stat");
        const STATS: [&str; 7] = ["avg", "p50", "p90", "p95", "p99", "min", "max"];
        let stat = scalar(v, &path)?.to_ascii_lowercase();
        if !STATS.contains(&stat.as_str()) {
            return Err(YamlError::Schema(format!(
                "{path}: Input should be 'avg', 'p50', 'p90', 'p95', 'p99', 'min' or 'max'"
            )));
        }
        a.one("--convergence-stat", stat);
    }
    if let Some(v) = m.get("mode") {
        let path = format!("{p}.mode");
        let mode = scalar(v, &path)?.to_ascii_lowercase();
        if !["ci_width", "cv", "distribution"].contains(&mode.as_str()) {
            return Err(YamlError::Schema(format!(
                "{path}: Input should be 'ci_width', 'cv' or 'distribution'"
            )));
        }
        a.one("--convergence-mode", mode);
    }
    if let Some(v) = m.get("threshold").filter(|v| !v.is_null()) {
        let path = format!("{p}.threshold");
        let x = num(v, &path)?;
        if x <= 0.0 {
            return Err(YamlError::Schema(format!(
                "{path}: Input should be greater than 0"
            )));
        }
        if x >= 1.0 {
            return Err(YamlError::Schema(format!(
                "{path}: Input should be less than 1"
            )));
        }
        a.one("--convergence-threshold", x);
    }
    if let Some(v) = m.get("min_runs") {
        a.file_only.convergence_min_runs = Some(int_at_least(v, &format!("{p}.min_runs"), 2)?);
    }
    Ok(())
}

/// Sweep parameters: AIPerf's bare names and the dotted paths to the same fields, and the flag
/// each one's list value goes on.
const SWEEP_PARAMS: &[(&[&str], &str)] = &[
    (
        &["concurrency", "phases.profiling.concurrency"],
        "--concurrency",
    ),
    (
        &["rate", "request_rate", "phases.profiling.rate"],
        "--request-rate",
    ),
    (
        &["requests", "phases.profiling.requests"],
        "--request-count",
    ),
    (
        &["duration", "phases.profiling.duration"],
        "--benchmark-duration",
    ),
    (
        &[
            "isl",
            "datasets.default.prompts.isl",
            "datasets.main.prompts.isl",
        ],
        "--prompt-input-tokens-mean",
    ),
    (
        &[
            "osl",
            "datasets.default.prompts.osl",
            "datasets.main.prompts.osl",
        ],
        "--prompt-output-tokens-mean",
    ),
];

/// The full path AIPerf labels a swept parameter with (`concurrency` →
/// `phases.profiling.concurrency`), `None` for a parameter ringperf cannot sweep.
fn full_path(param: &str) -> Option<String> {
    let snake = super::snake(param);
    let Some((names, _)) = SWEEP_PARAMS
        .iter()
        .find(|(n, _)| n.contains(&snake.as_str()))
    else {
        // Any other path is written into the file as it stands (a bare name is one of the
        // profiling phase's fields AIPerf names so).
        return if snake.contains('.') {
            Some(snake)
        } else {
            PHASE_NAMES
                .contains(&snake.as_str())
                .then(|| format!("phases.profiling.{snake}"))
        };
    };
    Some(match names.iter().find(|n| n.contains('.')) {
        Some(p) if !snake.contains('.') => (*p).to_string(),
        _ => snake,
    })
}

/// AIPerf's bare sweep names for the profiling phase's fields.
const PHASE_NAMES: &[&str] = &[
    "concurrency",
    "prefill_concurrency",
    "rate",
    "requests",
    "duration",
    "sessions",
    "users",
    "smoothness",
    "grace_period",
    "concurrency_ramp",
    "prefill_ramp",
    "rate_ramp",
    "rate_series",
];

/// Whether every parameter of a grid or zip sweep is one a flag sweeps (else its points run as
/// files, each with the values written at their paths).
fn by_flags(sweep: &Map<String, Value>) -> bool {
    sweep
        .get("parameters")
        .and_then(Value::as_object)
        .is_none_or(|p| {
            p.keys().all(|k| {
                let snake = super::snake(k);
                SWEEP_PARAMS
                    .iter()
                    .any(|(n, _)| n.contains(&snake.as_str()))
            })
        })
}

pub use super::scenarios::Variation;

/// The variations of a `grid` or `zip` sweep, in AIPerf's order: parameters sorted by full
/// path; a grid is their product with the last parameter varying fastest, a zip pairs the
/// i-th values (lists of one length). `dir` joins `LASTSEGMENT_VALUE` with `__`, `label` joins
/// `PATH=VALUE` with `, `.
pub fn variations(sweep: &Map<String, Value>) -> R<Vec<Variation>> {
    let ty = sweep.get("type").and_then(Value::as_str).unwrap_or("grid");
    let params = sweep
        .get("parameters")
        .map(|p| obj(p, "sweep.parameters"))
        .transpose()?;
    let mut axes: Vec<(String, Vec<(String, Value)>)> = Vec::new();
    for (k, v) in params.into_iter().flatten() {
        let path =
            full_path(k).ok_or_else(|| YamlError::Unsupported(format!("sweep.parameters.{k}")))?;
        let list = v.as_array().ok_or_else(|| {
            YamlError::Schema(format!(
                "sweep.parameters.{k}: Input should be a valid list"
            ))
        })?;
        axes.push((
            path,
            list.iter()
                .map(|x| {
                    let text = x.as_str().map_or_else(|| x.to_string(), str::to_string);
                    (text, x.clone())
                })
                .collect(),
        ));
    }
    axes.sort_by(|a, b| a.0.cmp(&b.0));
    let combos: Vec<Vec<usize>> = match ty {
        "zip" => {
            let n = axes.first().map_or(0, |a| a.1.len());
            if axes.iter().any(|a| a.1.len() != n) {
                return Err(YamlError::Schema(
                    "sweep.parameters: a zip sweep's lists must have one length".into(),
                ));
            }
            (0..n).map(|i| vec![i; axes.len()]).collect()
        }
        _ => axes.iter().fold(vec![Vec::new()], |acc, (_, vals)| {
            acc.iter()
                .flat_map(|c| (0..vals.len()).map(move |i| [c.as_slice(), &[i]].concat()))
                .collect()
        }),
    };
    Ok(combos
        .into_iter()
        .map(|c| {
            let parts: Vec<(&str, &str)> = axes
                .iter()
                .zip(&c)
                .map(|((p, vals), &i)| (p.as_str(), vals[i].0.as_str()))
                .collect();
            let values = axes
                .iter()
                .zip(&c)
                .map(|((p, vals), &i)| (p.clone(), vals[i].1.clone()))
                .collect();
            Variation {
                dir: parts
                    .iter()
                    .map(|(p, v)| format!("{}_{v}", p.rsplit('.').next().unwrap_or(p)))
                    .collect::<Vec<_>>()
                    .join("__"),
                label: parts
                    .iter()
                    .map(|(p, v)| format!("{p}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                values,
            }
        })
        .collect())
}

/// A `sweep:` block as the sweep runner's flags: `type: grid|zip` with `parameters` becomes
/// `--sweep-type` and one comma-separated list value per swept flag (replacing the file's
/// scalar value of that flag); `cooldown_seconds` and `same_seed` their flags.
fn sweep(m: &Map<String, Value>, a: &mut FileArgs) -> R<()> {
    let mut m = m.clone();
    recipe_and_hook(&mut m, a)?;
    let m = &m;
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("grid");
    let flags = by_flags(m);
    match ty {
        "grid" | "zip" if flags => a.sweep.push(("--sweep-type".into(), vec![ty.into()])),
        "grid" | "zip" => {}
        // Its runs are read beside the file's settings ([`scenario_settings`]).
        "scenarios" => {}
        "adaptive_search" => {
            let mut rest = m.clone();
            adaptive_extras(&mut rest, a)?;
            a.sweep.extend(super::adaptive::translate(&rest)?);
            return Ok(());
        }
        other => return Err(YamlError::Unsupported(format!("sweep.type: {other}"))),
    }
    for (k, v) in m {
        let path = format!("sweep.{k}");
        match k.as_str() {
            "type" => {}
            "runs" if ty == "scenarios" => {}
            "parameters" if ty == "scenarios" => return Err(super::extra(&path)),
            // Its points are files ([`super::scenarios::grid_runs`]).
            "parameters" if !flags => {}
            "parameters" => {
                for (param, list) in obj(v, &path)? {
                    let ppath = format!("{path}.{param}");
                    let snake = super::snake(param);
                    let Some((_, flag)) = SWEEP_PARAMS
                        .iter()
                        .find(|(names, _)| names.contains(&snake.as_str()))
                    else {
                        return Err(YamlError::Unsupported(ppath));
                    };
                    let values = list.as_array().ok_or_else(|| {
                        YamlError::Schema(format!("{ppath}: Input should be a valid list"))
                    })?;
                    let words = values
                        .iter()
                        .map(|x| scalar(x, &ppath))
                        .collect::<R<Vec<_>>>()?;
                    a.flags.retain(|(f, _)| f != flag);
                    a.sweep.push(((*flag).into(), vec![words.join(",")]));
                }
            }
            "cooldown_seconds" => a.sweep.push((
                "--parameter-sweep-cooldown-seconds".into(),
                vec![dur(v, &path)?.to_string()],
            )),
            "same_seed" if flag_bool(v, &path)? => {
                a.sweep.push(("--parameter-sweep-same-seed".into(), vec![]))
            }
            "same_seed" => {}
            // A plain sweep's `--search-sla`: the aggregate's feasibility, best configurations
            // and frontier.
            "sla_filters" => {
                let list = v.as_array().ok_or_else(|| {
                    YamlError::Schema(format!("{path}: Input should be a valid list"))
                })?;
                for (i, f) in list.iter().enumerate() {
                    let word = super::adaptive::sla_filter(f, &format!("{path}.{i}"))?;
                    a.sweep.push(("--search-sla".into(), vec![word]));
                }
            }
            // Trials outside and variations inside (`repeated`), or the reverse.
            "iteration_order" => match v.as_str() {
                Some(mode @ ("repeated" | "independent")) => a
                    .sweep
                    .push(("--parameter-sweep-mode".into(), vec![mode.into()])),
                _ => {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be 'repeated' or 'independent'"
                    )));
                }
            },
            _ => return Err(YamlError::Unsupported(path)),
        }
    }
    Ok(())
}

/// A sweep's `recipe_name` and `post_process` (any sweep type; no flag carries them), taken out
/// of `m` into the typed plan.
fn recipe_and_hook(m: &mut Map<String, Value>, a: &mut FileArgs) -> R<()> {
    match m.shift_remove("recipe_name") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) => a.file_only.sweep_recipe = Some(name),
        Some(_) => {
            return Err(YamlError::Schema(
                "sweep.recipe_name: Input should be a valid string".into(),
            ));
        }
    }
    if let Some(v) = m.shift_remove("post_process").filter(|v| !v.is_null()) {
        a.file_only.sweep_post_process = Some(post_process(&v, "sweep.post_process")?);
    }
    Ok(())
}

/// What an adaptive search's block carries that no `--search-*` flag does (beside
/// [`recipe_and_hook`]'s), taken out of `rest` into the typed plan: a dimension's `prior`, and
/// the planners' stop and latch rules.
fn adaptive_extras(rest: &mut Map<String, Value>, a: &mut FileArgs) -> R<()> {
    // A dimension's prior (no `--search-space` form has one), checked as AIPerf does.
    if let Some(Value::Array(dims)) = rest.get_mut("search_space") {
        for (i, d) in dims.iter_mut().enumerate() {
            let Value::Object(d) = d else { continue };
            let Some(prior) = d.shift_remove("prior") else {
                continue;
            };
            let at = format!("sweep.search_space.{i}");
            match prior.as_str() {
                Some("uniform") => {}
                Some("log-uniform") => {
                    let lo = d.get("lo").and_then(Value::as_f64).unwrap_or(0.0);
                    let path = d.get("path").and_then(Value::as_str).unwrap_or("");
                    if lo <= 0.0 {
                        return Err(YamlError::Schema(format!(
                            "{at}: Value error, search-space dim {}: \
                             prior='log-uniform' requires lo > 0, got lo={}.",
                            py_str_repr(path),
                            super::jinja::py_float_repr(lo)
                        )));
                    }
                    a.file_only.search_log_priors.push(path.to_owned());
                }
                _ => {
                    return Err(YamlError::Schema(format!(
                        "{at}.prior: Input should be 'uniform' or 'log-uniform'"
                    )));
                }
            }
        }
    }
    // The planners' stop and latch rules, checked with AIPerf's bounds.
    let mut stop = crate::plan::SearchStop::default();
    let mut given = false;
    for key in [
        "plateau_window",
        "plateau_threshold",
        "improvement_patience",
        "monotonic_stability_trials",
    ] {
        let Some(v) = rest.shift_remove(key) else {
            continue;
        };
        given = true;
        let path = format!("sweep.{key}");
        match key {
            "plateau_window" => stop.plateau_window = int_at_least(&v, &path, 2)?,
            "improvement_patience" => stop.improvement_patience = int_at_least(&v, &path, 2)?,
            "monotonic_stability_trials" => {
                stop.monotonic_stability_trials = int_at_least(&v, &path, 1)?;
            }
            _ => match num(&v, &path)? {
                x if x > 0.0 => stop.plateau_threshold = x,
                _ => {
                    return Err(YamlError::Schema(format!(
                        "{path}: Input should be greater than 0"
                    )));
                }
            },
        }
    }
    if given {
        a.file_only.search_stop = Some(stop);
    }
    Ok(())
}

/// A whole number of at least `min` at `path`, with AIPerf's messages.
fn int_at_least(v: &Value, path: &str, min: u32) -> R<u32> {
    let x = num(v, path)?;
    if x.fract() != 0.0 {
        return Err(YamlError::Schema(format!(
            "{path}: Input should be a valid integer, got a number with a fractional part"
        )));
    }
    if x < f64::from(min) {
        return Err(YamlError::Schema(format!(
            "{path}: Input should be greater than or equal to {min}"
        )));
    }
    Ok(x.min(f64::from(u32::MAX)) as u32)
}

/// A sweep's `post_process` block, checked as AIPerf's `PostProcessSpec` checks it (a handler
/// named, a file name of its own ending in `.json`); whether the handler exists and its
/// parameters suit it is found when it runs, as in AIPerf.
fn post_process(v: &Value, path: &str) -> R<crate::plan::PostProcessSpec> {
    let m = obj(v, path)?;
    keys(m, path, &["handler", "params", "output_filename"], &[])?;
    let field = |k: &str| {
        m.get(k)
            .ok_or_else(|| YamlError::Schema(format!("{path}.{k}: Field required")))
            .and_then(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(YamlError::Schema(format!(
                    "{path}.{k}: Input should be a valid string"
                ))),
            })
    };
    let handler = field("handler")?;
    let output_filename = field("output_filename")?;
    let params = match m.get("params") {
        None => Map::new(),
        Some(p) => obj(p, &format!("{path}.params"))?.clone(),
    };
    let refuse = |why: String| Err(YamlError::Schema(format!("{path}: Value error, {why}")));
    let name = py_str_repr(&output_filename);
    if handler.trim().is_empty() {
        return refuse(
            "PostProcessSpec.handler must be a non-empty, non-whitespace registered handler name."
                .into(),
        );
    }
    if output_filename.contains(['/', '\\']) {
        return refuse(format!(
            "PostProcessSpec.output_filename must be filename-only (no path separators), got \
             {name}."
        ));
    }
    if output_filename.contains('\0') {
        return refuse(format!(
            "PostProcessSpec.output_filename must not contain NUL bytes, got {name}."
        ));
    }
    let Some(stem) = output_filename.strip_suffix(".json") else {
        return refuse(format!(
            "PostProcessSpec.output_filename must end in '.json' (handlers emit JSON \
             artifacts), got {name}."
        ));
    };
    if stem.chars().all(|c| c == '.') {
        return refuse(format!(
            "PostProcessSpec.output_filename must have a non-dot stem before '.json' (got \
             {name}); hidden / dot-only filenames are confusing on disk."
        ));
    }
    Ok(crate::plan::PostProcessSpec {
        handler,
        params,
        output_filename,
    })
}

/// AIPerf's flags that cannot be combined with `--config` (its `UNROUTED_UNDER_CONFIG`), as
/// ringperf spells them.
const UNROUTED: &[&str] = &[
    "--public-dataset",
    "--hf-weka-dataset",
    "--sweep-type",
    "--no-fixed-schedule",
    "--concurrency-max",
    "--concurrency-min",
    "--concurrency-steps",
    "--convergence-mode",
    "--convergence-stat",
    "--degradation-metric-tag",
    "--degradation-stat",
    "--e2e-sla-ms",
    "--isl-max",
    "--isl-min",
    "--isl-steps",
    "--itl-sla-ms",
    "--osl-max",
    "--osl-min",
    "--osl-steps",
    "--parameter-sweep-cooldown-seconds",
    "--parameter-sweep-mode",
    "--parameter-sweep-same-seed",
    "--search-style",
    "--variant",
    "--sweep-variant",
    "--tpot-sla-ms",
    "--ttft-sla-ms",
];

/// Refuses AIPerf's flags that cannot be combined with `--config` among the command line's
/// `profile` words `cli` (and `--input-file` / `--custom-dataset-type` beside a file whose dataset
/// is not a file), with AIPerf's message.
pub fn refuse_unrouted(cli: &[String], file_type: Option<&str>) -> R<()> {
    let mut bad: Vec<&str> = cli
        .iter()
        .map(|w| w.split_once('=').map_or(w.as_str(), |(f, _)| f))
        .filter(|f| UNROUTED.contains(f))
        .collect();
    if file_type.is_some_and(|t| t != "file") {
        bad.extend(
            cli.iter()
                .map(|w| w.split_once('=').map_or(w.as_str(), |(f, _)| f))
                .filter(|f| *f == "--input-file" || *f == "--custom-dataset-type"),
        );
    }
    bad.sort_unstable();
    bad.dedup();
    if !bad.is_empty() {
        return Err(YamlError::Overlay(format!(
            "These CLI flags cannot be combined with --config and would otherwise be ignored: {}. \
             Set the equivalent values in the YAML config file, or drop --config and pass the run \
             entirely on the command line.",
            bad.join(", ")
        )));
    }
    Ok(())
}
