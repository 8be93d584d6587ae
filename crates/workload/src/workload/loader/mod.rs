//! Datasets from files (docs/datasets.md): AIPerf's custom dataset types and ShareGPT from a
//! local copy, each turned into a [`Dataset`].
//!
//! Every file is read as a stream (one line, or one element of a JSON list, at a time), and
//! every rule a record breaks is one [`LoadError`] naming the file, the line and the field.
//! Formats, defaults and rules per type: `docs/datasets.md`.

mod bailian_trace;
pub mod baseten_trace;
mod block_prompt;
mod burst_gpt_trace;
pub mod dag_jsonl;
mod deferred;
mod document;
mod error;
mod fields;
mod inputs_json;
mod lines;
mod media_fields;
mod mooncake_trace;
mod multi_turn;
pub mod random_pool;
mod raw_payload;
mod sagemaker_data_capture;
mod session;
mod sharegpt;
mod single_turn;
pub mod speed_bench;
pub(crate) mod weka;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::workload::Tokenizer;
use ringperf_wire::conversation::{Dataset, Sampling};

pub use block_prompt::BlockPrompts;
pub use deferred::{DeferredPrompts, DeferredRow, RowReader, TraceIndex};
pub use error::{LoadError, LoadErrorKind};
pub use lines::JsonLines;
pub use mooncake_trace::check_row as check_mooncake_row;
pub use session::SessionIds;
pub use sharegpt::{CACHE_DIR as SHAREGPT_CACHE_DIR, FILE_NAME as SHAREGPT_FILE_NAME};
pub use weka::WekaParams;
pub use weka::hub::{CORPORA as WEKA_CORPORA, repo_of as weka_corpus_repo};

/// `--prompt-input-tokens-block-size` when not given (AIPerf's `InputTokensDefaults.BLOCK_SIZE`).
pub const DEFAULT_BLOCK_SIZE: usize = 512;

/// The `--custom-dataset-type` values ringperf reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetKind {
    SingleTurn,
    MultiTurn,
    RandomPool,
    MooncakeTrace,
    BailianTrace,
    BurstGptTrace,
    SagemakerDataCapture,
    RawPayload,
    InputsJson,
    WekaTrace,
    Tracelab,
    BasetenTrace,
    DagJsonl,
    /// One of SPEED-Bench's formats: its index in [`speed_bench::FORMATS`].
    SpeedBench(u8),
}

impl DatasetKind {
    pub const ALL: [DatasetKind; 13] = [
        DatasetKind::SingleTurn,
        DatasetKind::MultiTurn,
        DatasetKind::RandomPool,
        DatasetKind::MooncakeTrace,
        DatasetKind::BailianTrace,
        DatasetKind::BurstGptTrace,
        DatasetKind::SagemakerDataCapture,
        DatasetKind::RawPayload,
        DatasetKind::InputsJson,
        DatasetKind::WekaTrace,
        DatasetKind::Tracelab,
        DatasetKind::BasetenTrace,
        DatasetKind::DagJsonl,
    ];

    /// AIPerf's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetKind::SingleTurn => "single_turn",
            DatasetKind::MultiTurn => "multi_turn",
            DatasetKind::RandomPool => "random_pool",
            DatasetKind::MooncakeTrace => "mooncake_trace",
            DatasetKind::BailianTrace => "bailian_trace",
            DatasetKind::BurstGptTrace => "burst_gpt_trace",
            DatasetKind::SagemakerDataCapture => "sagemaker_data_capture",
            DatasetKind::RawPayload => "raw_payload",
            DatasetKind::InputsJson => "inputs_json",
            DatasetKind::WekaTrace => "weka_trace",
            DatasetKind::Tracelab => "tracelab",
            DatasetKind::BasetenTrace => "baseten_trace",
            DatasetKind::DagJsonl => "dag_jsonl",
            DatasetKind::SpeedBench(i) => speed_bench::FORMATS
                .get(usize::from(i))
                .map_or("speed_bench_qualitative", |f| f.0),
        }
    }

    /// Parses AIPerf's spelling, with `_` or `-`. `None` for any other name.
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim().replace('-', "_").to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .or_else(|| {
                (speed_bench::FORMATS.iter())
                    .position(|f| f.0 == name)
                    .and_then(|i| u8::try_from(i).ok())
                    .map(DatasetKind::SpeedBench)
            })
    }

    /// The sampling AIPerf's loader prefers: shuffle for `random_pool`, random for
    /// `dag_jsonl`, sequential otherwise.
    pub fn default_sampling(self) -> Sampling {
        match self {
            DatasetKind::RandomPool => Sampling::Shuffle,
            DatasetKind::DagJsonl => Sampling::Random,
            _ => Sampling::Sequential,
        }
    }

    /// A timestamped trace type (AIPerf's plugin metadata `is_trace`): promoted to fixed
    /// schedule when its first record has a top-level `timestamp` (a `burst_gpt_trace` CSV or a
    /// `sagemaker_data_capture` record never has one: those need `--fixed-schedule`), and its
    /// record count is a fixed schedule's default request count.
    pub fn is_trace(self) -> bool {
        matches!(
            self,
            DatasetKind::MooncakeTrace
                | DatasetKind::BailianTrace
                | DatasetKind::BurstGptTrace
                | DatasetKind::SagemakerDataCapture
        )
    }

    /// Tokens per `hash_ids` block when `--prompt-input-tokens-block-size` is not given
    /// (AIPerf's plugin metadata `default_block_size`: Bailian's blocks are 16-token SipHash
    /// blocks).
    pub fn default_block_size(self) -> usize {
        match self {
            DatasetKind::BailianTrace => 16,
            DatasetKind::Tracelab => weka::tracelab::DEFAULT_BLOCK_SIZE,
            _ => DEFAULT_BLOCK_SIZE,
        }
    }

    /// Whether `--prompt-input-tokens-block-size` means anything to this type: AIPerf refuses it
    /// for a file type that neither builds prompts from `hash_ids` nor is synthetic-like
    /// (here: `burst_gpt_trace`, whose rows have no hash ids, and `sagemaker_data_capture`,
    /// whose prompts are the captured messages).
    pub fn takes_block_size(self) -> bool {
        !matches!(
            self,
            DatasetKind::BurstGptTrace | DatasetKind::SagemakerDataCapture | DatasetKind::WekaTrace
        )
    }

    /// Whether a config file may give this type's records inline (`records:`): the types whose
    /// AIPerf 0.13 loader reads records rather than a file's path (its raw-payload, DAG, CSV,
    /// Parquet and corpus loaders open the path, and fail without one).
    pub fn reads_inline(self) -> bool {
        matches!(
            self,
            DatasetKind::SingleTurn
                | DatasetKind::MultiTurn
                | DatasetKind::RandomPool
                | DatasetKind::MooncakeTrace
                | DatasetKind::BailianTrace
                | DatasetKind::SagemakerDataCapture
        )
    }

    /// Whether `--input-file` may name a directory of this type's files.
    pub fn reads_directory(self) -> bool {
        matches!(
            self,
            DatasetKind::RandomPool
                | DatasetKind::RawPayload
                | DatasetKind::SagemakerDataCapture
                | DatasetKind::WekaTrace
        )
    }
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every `--custom-dataset-type` of AIPerf 0.13 (`CustomDatasetType`), built here or not.
pub const AIPERF_CUSTOM_TYPES: &[&str] = &[
    "burst_gpt_trace",
    "bailian_trace",
    "baseten_trace",
    "mooncake_trace",
    "raw_payload",
    "inputs_json",
    "dag_jsonl",
    "sagemaker_data_capture",
    "multi_turn",
    "random_pool",
    "single_turn",
    "tracelab",
    "weka_trace",
];

/// Where the dataset comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// `--input-file` with `--custom-dataset-type`, or with the type detected from the file.
    File {
        path: PathBuf,
        kind: Option<DatasetKind>,
    },
    /// `--public-dataset sharegpt`: `--input-file`, else AIPerf's cache path.
    ShareGpt { input_file: Option<PathBuf> },
    /// A Weka agent-trace corpus on the Hugging Face Hub (`--public-dataset
    /// semianalysis_cc_traces_weka*`, `weka_hf` with `--hf-weka-dataset`), read from the local
    /// Hugging Face cache: `dataset` as given, `repo` its dataset repo.
    WekaHub { dataset: String, repo: String },
    /// A config file's inline `records` of a type that [`DatasetKind::reads_inline`]: the
    /// lines of the equivalent file, held in memory and read by that file's loader; `name`
    /// (where the records are in the config) stands for the file in messages, a record's line
    /// number is its position. `kind` `None`: `single_turn` (AIPerf's default format; records
    /// are not sniffed). `random_pool`'s records given as a dict of lists are `pools`, each
    /// `(key, its lines)` in the dict's order (`jsonl` empty then).
    Inline {
        kind: Option<DatasetKind>,
        name: PathBuf,
        jsonl: String,
        pools: Vec<(String, String)>,
    },
}

/// Everything a load needs besides the tokenizer.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSpec {
    pub source: Source,
    /// The run's seed (`random_pool` draws, `hash_ids` blocks).
    pub seed: u64,
    /// `--random-seed` was given: generated session ids are `session_000000`, … (else UUIDs).
    pub seeded: bool,
    /// Conversations `random_pool` draws (`--num-dataset-entries`).
    pub entries: usize,
    /// Tokens per `hash_ids` block; `None`: the type's own default
    /// ([`DatasetKind::default_block_size`]).
    pub block_size: Option<usize>,
    /// `--ignore-trace-delays`: every turn's timestamp and delay are dropped.
    pub ignore_trace_delays: bool,
    /// The endpoint sends a system message (chat): `multi_turn` hoists a leading system turn.
    pub system_message: bool,
    /// `--osl` was given (ShareGPT keeps short replies then).
    pub osl_given: bool,
    /// The file whose content hash scopes a trace's `hash_ids` blocks, when not the one read:
    /// a trace reshaped by `--synthesis-*` is read from a copy, and its blocks are those of the
    /// recorded file, as AIPerf hashes the file it was given.
    pub hash_path: Option<PathBuf>,
    /// `--uuid-and-strip`: `single_turn` drops the bytes of an image whose UUID an earlier
    /// turn of the conversation sent; `multi_turn` is refused.
    pub uuid_and_strip: bool,
    /// `random_pool`: items per turn of each modality (the batch-size flags).
    pub pool_batch: random_pool::PoolBatch,
    /// `weka_trace`: delays, selection and model names.
    pub weka: WekaParams,
    /// `baseten_trace`: sampling, replay mode, body hints.
    pub baseten: baseten_trace::BasetenParams,
}

/// Loads the dataset `spec` describes.
///
/// # Errors
/// The first problem found, as a [`LoadError`] naming the file, line and field.
pub fn load(spec: &LoadSpec, tokenizer: &Tokenizer) -> Result<Dataset, LoadError> {
    match load_deferred(spec, tokenizer)? {
        Loaded::Whole(dataset) => Ok(dataset),
        Loaded::Trace(index) => index.into_dataset(tokenizer),
    }
}

/// A loaded dataset: whole, or a trace's first pass only.
#[derive(Debug)]
pub enum Loaded {
    Whole(Dataset),
    /// A `mooncake_trace`: every row checked, none kept but its skeleton turn and where it is;
    /// [`TraceIndex::into_dataset`] reads them again into the whole dataset.
    Trace(TraceIndex),
}

/// Loads the dataset `spec` describes, leaving a trace's rows in their file
/// ([`Loaded::Trace`]); every row is checked.
///
/// # Errors
/// As [`load`].
pub fn load_deferred(spec: &LoadSpec, tokenizer: &Tokenizer) -> Result<Loaded, LoadError> {
    let mut ids = SessionIds::new(spec.seeded);
    let mut dataset = match &spec.source {
        Source::WekaHub { repo, .. } => {
            let cache = crate::workload::hub::HubEnv::from_env().cache;
            weka::hub::load(repo, cache.as_deref(), &spec.weka, tokenizer, spec.seed)?
        }
        Source::ShareGpt { input_file } => {
            let path = sharegpt::locate(input_file.as_deref())?;
            sharegpt::load(&path, tokenizer, &mut ids, spec.osl_given)?
        }
        Source::Inline {
            kind,
            name,
            jsonl,
            pools,
        } => {
            let lines = JsonLines::new(name, std::io::Cursor::new(jsonl.as_bytes()));
            match kind.unwrap_or(DatasetKind::SingleTurn) {
                DatasetKind::SingleTurn => {
                    single_turn::load_lines(lines, name, &mut ids, spec.uuid_and_strip)?
                }
                DatasetKind::MultiTurn if spec.uuid_and_strip => {
                    return Err(LoadError::file(
                        name,
                        LoadErrorKind::Invalid(
                            "--uuid-and-strip is not supported with multi_turn (AIPerf strips \
                             repeated images of single_turn records only)"
                                .into(),
                        ),
                    ));
                }
                DatasetKind::MultiTurn => {
                    multi_turn::load_lines(lines, name, &mut ids, spec.system_message)?
                }
                DatasetKind::RandomPool => {
                    let one = [("<inline>".to_owned(), jsonl.clone())];
                    let pools = if pools.is_empty() { &one[..] } else { pools };
                    random_pool::load_inline(
                        name,
                        pools,
                        &mut ids,
                        spec.entries,
                        spec.seed,
                        spec.pool_batch,
                    )?
                }
                k if k.reads_inline() => inline_file(k, name, jsonl, spec, &mut ids, tokenizer)?,
                other => {
                    return Err(LoadError::file(
                        name,
                        LoadErrorKind::Invalid(format!(
                            "inline records of format {other}: AIPerf 0.13 reads this format \
                             from a file only; give the dataset a `path:`"
                        )),
                    ));
                }
            }
        }
        Source::File { path, kind } => {
            let kind = match kind {
                Some(k) => *k,
                None => detect(path)?,
            };
            match load_file(path, kind, spec, &mut ids, tokenizer)? {
                Loaded::Whole(dataset) => dataset,
                Loaded::Trace(mut index) => {
                    if spec.ignore_trace_delays {
                        index.rows.ignore_delays = true;
                        for turn in index
                            .skeleton
                            .conversations
                            .iter_mut()
                            .flat_map(|c| c.turns.iter_mut())
                        {
                            turn.timestamp_ms = None;
                            turn.delay_ms = None;
                        }
                    }
                    return Ok(Loaded::Trace(index));
                }
            }
        }
    };
    if spec.ignore_trace_delays {
        for turn in dataset
            .conversations
            .iter_mut()
            .flat_map(|c| c.turns.iter_mut())
        {
            turn.timestamp_ms = None;
            turn.delay_ms = None;
            // Without recorded times no request is known to have ended before another began.
            if let Some(a) = turn.agent.as_mut() {
                a.predecessors.clear();
            }
        }
    }
    Ok(Loaded::Whole(dataset))
}

/// A trace (`mooncake_trace`, `bailian_trace`, `sagemaker_data_capture`) given as inline
/// records: its rows written to a file of their own (a trace loader reads a file: its rows
/// twice, to check them and then to build them), loaded whole, the file removed.
fn inline_file(
    kind: DatasetKind,
    name: &Path,
    jsonl: &str,
    spec: &LoadSpec,
    ids: &mut SessionIds,
    tokenizer: &Tokenizer,
) -> Result<Dataset, LoadError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ringperf-inline-{}-{n}", std::process::id()));
    let stem = name
        .file_name()
        .map_or("records".into(), |n| n.to_string_lossy());
    let file = dir.join(format!("{stem}.jsonl"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, jsonl));
    let loaded = written
        .map_err(|e| LoadError::file(&file, LoadErrorKind::Io(e.to_string())))
        .and_then(|()| match load_file(&file, kind, spec, ids, tokenizer)? {
            Loaded::Whole(dataset) => Ok(dataset),
            Loaded::Trace(index) => index.into_dataset(tokenizer),
        });
    let _ = std::fs::remove_dir_all(&dir);
    loaded
}

fn load_file(
    path: &Path,
    kind: DatasetKind,
    spec: &LoadSpec,
    ids: &mut SessionIds,
    tokenizer: &Tokenizer,
) -> Result<Loaded, LoadError> {
    if !path.exists() {
        return Err(LoadError::file(
            path,
            LoadErrorKind::NotFound {
                looked: vec![path.to_path_buf()],
                hint: "check --input-file".into(),
            },
        ));
    }
    if path.is_dir() && !kind.reads_directory() {
        let dirs: Vec<&str> = DatasetKind::ALL
            .iter()
            .filter(|k| k.reads_directory())
            .map(|k| k.as_str())
            .collect();
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid(format!(
                "is a directory; {kind} reads a file (only {} read directories)",
                dirs.join(", ")
            )),
        ));
    }
    let block_size = spec.block_size.unwrap_or(kind.default_block_size());
    let hash_path = spec.hash_path.as_deref().unwrap_or(path);
    let whole = match kind {
        DatasetKind::SingleTurn => single_turn::load(path, ids, spec.uuid_and_strip),
        DatasetKind::MultiTurn if spec.uuid_and_strip => Err(LoadError::file(
            path,
            LoadErrorKind::Invalid(
                "--uuid-and-strip is not supported with multi_turn (AIPerf strips repeated \
                 images of single_turn files only): use single_turn rows grouped by session_id"
                    .into(),
            ),
        )),
        DatasetKind::MultiTurn => multi_turn::load(path, ids, spec.system_message),
        DatasetKind::RandomPool => {
            random_pool::load(path, ids, spec.entries, spec.seed, spec.pool_batch)
        }
        DatasetKind::MooncakeTrace => {
            let index = mooncake_trace::scan(path, hash_path, ids, block_size, spec.seed)?;
            return Ok(Loaded::Trace(index));
        }
        DatasetKind::BailianTrace => {
            let index = bailian_trace::scan(path, hash_path, block_size, spec.seed)?;
            return Ok(Loaded::Trace(index));
        }
        DatasetKind::BurstGptTrace => {
            let index = burst_gpt_trace::scan(path, hash_path, ids, block_size, spec.seed)?;
            return Ok(Loaded::Trace(index));
        }
        DatasetKind::SagemakerDataCapture => sagemaker_data_capture::load(path, ids),
        DatasetKind::RawPayload => raw_payload::load(path, ids),
        DatasetKind::SpeedBench(i) => {
            let category = speed_bench::FORMATS.get(usize::from(i)).and_then(|f| f.1);
            speed_bench::load(path, category, ids)
        }
        DatasetKind::InputsJson => inputs_json::load(path),
        DatasetKind::WekaTrace => weka::load(path, &spec.weka, tokenizer, spec.seed),
        DatasetKind::Tracelab => {
            weka::tracelab::load(path, block_size, &spec.weka, tokenizer, spec.seed)
        }
        DatasetKind::BasetenTrace => {
            baseten_trace::load(path, &spec.baseten, ids, spec.seeded.then_some(spec.seed))
        }
        DatasetKind::DagJsonl => dag_jsonl::load(path, spec.weka.delay_cap_s),
    };
    Ok(Loaded::Whole(whole?))
}

/// What the timing configuration needs to know of a file before it is loaded (AIPerf's trace
/// auto-promotion, docs/timing.md): for a trace type (given, or detected), whether its first record
/// has a `timestamp`, and how many records it has (the default request count of a replay).
/// `None` for other types, and for a file that cannot be read (the load reports why).
/// Reads the file once, a line at a time, parsing only the first record.
///
/// As AIPerf counts them: every non-blank line is a record (a `burst_gpt_trace` CSV's header
/// too), and a directory of `sagemaker_data_capture` files counts every `*.jsonl` under it. A
/// CSV's first line is not JSON, and a capture record's time is not a top-level `timestamp`:
/// neither is promoted (AIPerf's `_first_record_has_timestamp`), both replay with
/// `--fixed-schedule`.
pub fn peek_trace(path: &Path, kind: Option<DatasetKind>) -> Option<(bool, u64)> {
    // A TraceLab file given as one is replayed on its rounds' times when its first round has
    // a dated event (AIPerf promotes it only when `--custom-dataset-type tracelab` says so);
    // its rows are its records.
    // A Baseten trace given as one always has its rows' times: replayed on them (AIPerf
    // promotes it only when `--custom-dataset-type baseten_trace` says so).
    if kind == Some(DatasetKind::BasetenTrace) {
        return baseten_trace::rows(path).map(|n| (true, n));
    }
    if kind == Some(DatasetKind::Tracelab) {
        let (first, records) = count_records(path)?;
        let v: serde_json::Value = serde_json::from_slice(&first?).ok()?;
        let dated = v
            .get("timing_events")
            .and_then(|e| e.get(0))
            .and_then(|e| e.get("timestamp"))
            .is_some_and(|t| !t.is_null());
        return Some((dated, records));
    }
    let kind = match kind {
        Some(k) => k,
        None => detect(path).ok()?,
    };
    if !kind.is_trace() {
        return None;
    }
    if path.is_dir() {
        if !kind.reads_directory() {
            return None;
        }
        let mut records = 0;
        for file in sagemaker_data_capture::files(path).ok()? {
            records += count_records(&file)?.1;
        }
        return Some((false, records));
    }
    let (first, records) = count_records(path)?;
    let timestamped = match kind {
        DatasetKind::BurstGptTrace => false,
        _ => {
            let v: serde_json::Value = serde_json::from_slice(&first?).ok()?;
            v.get("timestamp").is_some_and(|t| !t.is_null())
        }
    };
    Some((timestamped, records))
}

/// The first non-blank line of `path` and its count of non-blank lines; `None` when it cannot
/// be read.
fn count_records(path: &Path) -> Option<(Option<Vec<u8>>, u64)> {
    let mut reader = lines::open_maybe_gzip(path).ok()?;
    let mut line = Vec::new();
    let mut first = None;
    let mut records = 0u64;
    loop {
        line.clear();
        let n = std::io::BufRead::read_until(&mut reader, b'\n', &mut line).ok()?;
        if n == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        records += 1;
        if first.is_none() {
            first = Some(line.clone());
        }
    }
    Some((first, records))
}

/// The dataset type of `path` when `--custom-dataset-type` is not given, as AIPerf infers it:
/// a directory is `random_pool` or `raw_payload` by its files' first records; a file by its
/// first record's `type` field if that names a type, else by which types can read the record.
/// A `.json` file whose first line is not a whole JSON value is taken as an `inputs.json`.
///
/// # Errors
/// No type, or more than one, can read it: the message asks for `--custom-dataset-type`.
pub fn detect(path: &Path) -> Result<DatasetKind, LoadError> {
    let ambiguous = |kinds: &[DatasetKind], line: Option<u64>| {
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let why = if names.is_empty() {
            "no dataset type can read this; give --custom-dataset-type".to_string()
        } else {
            format!(
                "{} can all read this; give --custom-dataset-type",
                names.join(" and ")
            )
        };
        LoadError {
            path: path.to_path_buf(),
            line,
            field: None,
            kind: LoadErrorKind::Invalid(why),
        }
    };
    if weka::detect(path) {
        return Ok(DatasetKind::WekaTrace);
    }
    if baseten_trace::detect(path) {
        return Ok(DatasetKind::BasetenTrace);
    }
    if weka::tracelab::detect(path) {
        return Ok(DatasetKind::Tracelab);
    }
    if path.is_dir() {
        let mut kinds = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| LoadError::file(path, LoadErrorKind::Io(e.to_string())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let firsts: Vec<(PathBuf, serde_json::Map<String, serde_json::Value>)> = files
            .into_iter()
            .filter_map(|f| {
                let mut lines = JsonLines::open(&f).ok()?;
                let (_, map) = lines.next_object().ok()??;
                Some((f, map))
            })
            .collect();
        if firsts
            .iter()
            .any(|(_, m)| m.contains_key("text") || m.contains_key("texts"))
        {
            kinds.push(DatasetKind::RandomPool);
        }
        if firsts.iter().any(|(f, m)| {
            f.extension().is_some_and(|e| e == "jsonl")
                && m.get("messages").is_some_and(serde_json::Value::is_array)
        }) {
            kinds.push(DatasetKind::RawPayload);
        }
        if sagemaker_data_capture::detect_dir(path) {
            kinds.push(DatasetKind::SagemakerDataCapture);
        }
        return match kinds.as_slice() {
            [one] => Ok(*one),
            _ => Err(ambiguous(&kinds, None)),
        };
    }
    // A CSV whose header names BurstGPT's columns (AIPerf reads the header before anything).
    if burst_gpt_trace::has_header(path) {
        return Ok(DatasetKind::BurstGptTrace);
    }
    let mut lines = JsonLines::open(path)?;
    let (line, map) = match lines.next_object() {
        Ok(Some(first)) => first,
        Ok(None) => return Err(LoadError::file(path, LoadErrorKind::Empty)),
        Err(_) if path.extension().is_some_and(|e| e == "json") => {
            return Ok(DatasetKind::InputsJson);
        }
        Err(e) => return Err(e),
    };
    if let Some(kind) = map
        .get("type")
        .and_then(serde_json::Value::as_str)
        .and_then(DatasetKind::parse)
    {
        return Ok(kind);
    }
    let has = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    // AIPerf's `DagJsonlLoader.can_load`; a DAG line's turns carry `messages`, which no
    // `multi_turn` turn reads, so it reads as `multi_turn` only when its turns have texts.
    let dag = dag_jsonl::can_load(&map);
    let multi_turn_texts = map
        .get("turns")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|turns| {
            turns.iter().all(|t| {
                ["text", "texts"]
                    .iter()
                    .any(|k| t.get(k).is_some_and(|v| !v.is_null()))
            })
        });
    let messages_list = map.get("messages").is_some_and(serde_json::Value::is_array);
    let mut kinds = Vec::new();
    if dag {
        kinds.push(DatasetKind::DagJsonl);
    }
    if has("turns") {
        if !dag || multi_turn_texts {
            kinds.push(DatasetKind::MultiTurn);
        }
    } else if has("text") || has("texts") {
        kinds.push(DatasetKind::SingleTurn);
    }
    let forms = ["input_length", "text_input", "payload"]
        .iter()
        .filter(|k| has(k))
        .count()
        + usize::from(messages_list);
    // A `type` that names no dataset type (a Bailian row's request type, `text`) fails
    // AIPerf's `MooncakeTrace` model, whose `type` can only be `mooncake_trace`.
    if forms == 1 && !has("type") {
        kinds.push(DatasetKind::MooncakeTrace);
    }
    if bailian_trace::detect(&map) {
        kinds.push(DatasetKind::BailianTrace);
    }
    if map.contains_key("captureData") && map.contains_key("eventMetadata") {
        kinds.push(DatasetKind::SagemakerDataCapture);
    }
    let data_list = map.get("data").is_some_and(serde_json::Value::is_array);
    if messages_list && !has("conversation_id") && !data_list {
        kinds.push(DatasetKind::RawPayload);
    }
    if map.get("data").and_then(|d| d.get(0)).is_some_and(|first| {
        first
            .get("payloads")
            .is_some_and(serde_json::Value::is_array)
    }) {
        kinds.push(DatasetKind::InputsJson);
    }
    match kinds.as_slice() {
        [one] => Ok(*one),
        _ => Err(ambiguous(&kinds, Some(line))),
    }
}

#[cfg(test)]
mod peek_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trace_format_tests;
