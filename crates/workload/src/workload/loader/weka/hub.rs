//! The Weka agent-trace corpora on the Hugging Face Hub (`--public-dataset
//! semianalysis_cc_traces_weka*`, `--public-dataset weka_hf --hf-weka-dataset REPO`; docs/datasets.md,
//! `weka_trace`), read from the local Hugging Face cache as the `datasets` library leaves them
//! (`datasets--ORG--NAME/snapshots/<commit>/…`): each row of the train split's JSONL files is one
//! Weka trace, replayed as a `weka_trace` file's.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use ringperf_wire::conversation::Dataset;

use super::{WekaParams, from_traces, schema};
use crate::workload::Tokenizer;
use crate::workload::loader::{LoadError, LoadErrorKind, lines::open_maybe_gzip};

/// AIPerf's public Weka corpora and their Hugging Face dataset repos; `weka_hf` takes its repo
/// from `--hf-weka-dataset`.
pub const CORPORA: [(&str, &str); 17] = [
    (
        "semianalysis_cc_traces_weka",
        "semianalysisai/cc-traces-weka-no-subagents-051826",
    ),
    (
        "semianalysis_cc_traces_weka_no_subagents",
        "semianalysisai/cc-traces-weka-no-subagents-051826",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents",
        "semianalysisai/cc-traces-weka-062126",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_256k",
        "semianalysisai/cc-traces-weka-062126-256k",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060226",
        "semianalysisai/cc-traces-weka-with-subagents-060226",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060226_256k",
        "semianalysisai/cc-traces-weka-with-subagents-060226-256k",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060526",
        "semianalysisai/cc-traces-weka-with-subagents-060526",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060526_256k",
        "semianalysisai/cc-traces-weka-with-subagents-060526-256k",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060826",
        "semianalysisai/cc-traces-weka-with-subagents-060826",
    ),
    (
        "semianalysis_cc_traces_weka_with_subagents_060826_256k",
        "semianalysisai/cc-traces-weka-with-subagents-060826-256k",
    ),
    (
        "semianalysis_cc_traces_weka_061326",
        "semianalysisai/cc-traces-weka-061326",
    ),
    (
        "semianalysis_cc_traces_weka_061326_256k",
        "semianalysisai/cc-traces-weka-061326-256k",
    ),
    (
        "semianalysis_cc_traces_weka_061526",
        "semianalysisai/cc-traces-weka-061526",
    ),
    (
        "semianalysis_cc_traces_weka_061526_256k",
        "semianalysisai/cc-traces-weka-061526-256k",
    ),
    (
        "semianalysis_cc_traces_weka_062126",
        "semianalysisai/cc-traces-weka-062126",
    ),
    (
        "semianalysis_cc_traces_weka_062126_256k",
        "semianalysisai/cc-traces-weka-062126-256k",
    ),
    ("weka_hf", ""),
];

/// The repo of public corpus `name` (`_` or `-` spellings); `Some("")` for `weka_hf`.
pub fn repo_of(name: &str) -> Option<&'static str> {
    let name = name.trim().replace('-', "_").to_ascii_lowercase();
    CORPORA.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// Loads the train split of dataset repo `repo` from the Hugging Face cache at `cache`.
///
/// # Errors
/// The repo is not in the cache (the message says where it looked and how to download it), a
/// file cannot be read, a row is not JSON or not a Weka trace, two rows share an id.
pub fn load(
    repo: &str,
    cache: Option<&Path>,
    params: &WekaParams,
    tokenizer: &Tokenizer,
    seed: u64,
) -> Result<Dataset, LoadError> {
    let name = Path::new(repo);
    let folder = format!("datasets--{}", repo.replace('/', "--"));
    let looked: Vec<PathBuf> = cache.map(|c| c.join(&folder)).into_iter().collect();
    let missing = || {
        LoadError::file(
            name,
            LoadErrorKind::NotFound {
                looked: looked.clone(),
                hint: format!(
                    "ringperf reads the dataset from the Hugging Face cache; download it with \
                     `huggingface-cli download --repo-type dataset {repo}` (HF_HUB_CACHE or \
                     HF_HOME say where the cache is)"
                ),
            },
        )
    };
    let root = looked.first().ok_or_else(missing)?;
    let commit = std::fs::read_to_string(root.join("refs/main")).map_err(|_| missing())?;
    let snapshot = root.join("snapshots").join(commit.trim());
    let mut files = Vec::new();
    collect(&snapshot, &mut files).map_err(|_| missing())?;
    files.retain(|f| {
        let n = f.to_string_lossy();
        n.ends_with(".jsonl") || n.ends_with(".jsonl.gz")
    });
    files.sort();
    // The train split: the files named for it, else every data file (one split).
    let rel = |f: &PathBuf| {
        f.strip_prefix(&snapshot)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned()
    };
    if files.iter().any(|f| rel(f).contains("train")) {
        files.retain(|f| rel(f).contains("train"));
    }
    if files.is_empty() {
        return Err(LoadError::file(
            &snapshot,
            LoadErrorKind::Invalid(format!("{repo} has no JSONL data file in its snapshot")),
        ));
    }
    let mut traces = Vec::new();
    let mut ids = HashSet::new();
    let mut row = 0usize;
    // Only an explicit `--num-dataset-entries` caps a corpus (AIPerf's rule for the Hub), after
    // `--max-context-length`.
    let cap = params.dataset_entries.map_or(usize::MAX, |n| n as usize);
    let mut admitted = 0;
    'files: for file in &files {
        let reader = open_maybe_gzip(file)
            .map_err(|e| LoadError::file(file, LoadErrorKind::Io(e.to_string())))?;
        for line in reader.lines() {
            if ringperf_io::control::interrupted() || admitted >= cap {
                break 'files;
            }
            let line = line.map_err(|e| LoadError::file(file, LoadErrorKind::Io(e.to_string())))?;
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: String| {
                LoadError::file(
                    name,
                    LoadErrorKind::Invalid(format!(
                        "row {row} of {repo} failed Weka trace validation: {why}"
                    )),
                )
            };
            let value: serde_json::Value =
                serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
            let trace = schema::parse(value).map_err(bad)?;
            if !ids.insert(trace.id.clone()) {
                return Err(LoadError::file(
                    name,
                    LoadErrorKind::Invalid(format!(
                        "duplicate trace id '{}' at row {row} of {repo}",
                        trace.id
                    )),
                ));
            }
            admitted += usize::from(super::eligible(params, &trace));
            traces.push(trace);
            row += 1;
        }
    }
    from_traces(name, traces, params, tokenizer, seed)
}

/// Every file under `dir` (following the snapshot's links to the blobs).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}
