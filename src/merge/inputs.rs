//! The shards a merge is given: finding their directories, refusing what is not one run, and
//! reading what each wrote besides its records (its summary JSON, its phase manifest).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::MergeError;
use ringperf_metrics::export::shard::{self, SHARD_FILE, ShardManifest};
use ringperf_metrics::export::{ExportNames, phases};
use ringperf_wire::record::Phase;

/// A shard's artifact directory and its manifest.
#[derive(Clone, Debug)]
pub struct ShardDir {
    /// The directory, as found (given, or a sub-directory of one given).
    pub dir: PathBuf,
    /// Its `shard.json`.
    pub manifest: ShardManifest,
}

/// Every shard directory among `dirs`, in the order given (a directory's shard sub-directories
/// in name order). A directory holding `shard.json` is a shard's; another is searched one level
/// down. The same directory reached twice counts once.
///
/// # Errors
/// [`MergeError::Refused`] when a directory is not one or holds no shard, or a manifest cannot
/// be read.
pub fn find_shards(dirs: &[PathBuf]) -> Result<Vec<ShardDir>, MergeError> {
    let mut found: Vec<ShardDir> = Vec::new();
    let mut seen = Vec::new();
    let mut add = |dir: PathBuf, found: &mut Vec<ShardDir>| -> Result<(), MergeError> {
        let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if seen.contains(&real) {
            return Ok(());
        }
        seen.push(real);
        let manifest = shard::read(&dir).map_err(|e| {
            MergeError::Refused(format!(
                "cannot read {}: {e}",
                dir.join(SHARD_FILE).display()
            ))
        })?;
        found.push(ShardDir { dir, manifest });
        Ok(())
    };
    for d in dirs {
        if !d.is_dir() {
            return Err(MergeError::Refused(format!(
                "{} is not a directory",
                d.display()
            )));
        }
        if d.join(SHARD_FILE).is_file() {
            add(d.clone(), &mut found)?;
            continue;
        }
        let entries = std::fs::read_dir(d)
            .map_err(|e| MergeError::Refused(format!("cannot list {}: {e}", d.display())))?;
        let mut subs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(SHARD_FILE).is_file())
            .collect();
        if subs.is_empty() {
            return Err(MergeError::Refused(format!(
                "no {SHARD_FILE} in {} nor in its sub-directories: not a shard's artifact \
                 directory (a run with --shard-count over 1 writes one into each shard's)",
                d.display()
            )));
        }
        subs.sort();
        for s in subs {
            add(s, &mut found)?;
        }
    }
    Ok(found)
}

/// The shards of one run, by index.
#[derive(Debug)]
pub struct Run {
    /// The run id every shard carries.
    pub run_id: String,
    /// Shards in the run.
    pub count: u32,
    /// The shards found, by index.
    pub shards: Vec<ShardDir>,
    /// The indices no directory holds.
    pub missing: Vec<u32>,
}

/// Checks that `found` are shards of one run, each once.
///
/// # Errors
/// [`MergeError::Refused`] naming the directories: different workloads, shard counts or run
/// ids, an index out of range, or one index twice.
pub fn one_run(mut found: Vec<ShardDir>) -> Result<Run, MergeError> {
    let refuse = |msg: String| Err(MergeError::Refused(msg));
    let Some(first) = found.first().cloned() else {
        return refuse("no shard directory given".into());
    };
    let (a, m) = (first.dir.display(), &first.manifest);
    for s in &found[1..] {
        let (b, n) = (s.dir.display(), &s.manifest);
        if n.workload != m.workload {
            return refuse(format!(
                "{a} and {b} ran different workloads (fingerprints {} and {}): shards of one \
                 run share every flag but where they write",
                m.workload, n.workload
            ));
        }
        if n.count != m.count {
            return refuse(format!(
                "{a} is shard {} of {}, {b} shard {} of {}: different shard counts",
                m.index, m.count, n.index, n.count
            ));
        }
        if n.run_id != m.run_id {
            return refuse(format!(
                "{a} belongs to run {}, {b} to run {}: shards of different runs (started at \
                 different instants) cannot be merged",
                m.run_id, n.run_id
            ));
        }
    }
    found.sort_by_key(|s| s.manifest.index);
    for s in &found {
        if s.manifest.index >= s.manifest.count {
            return refuse(format!(
                "{}: shard index {} is out of range for {} shards",
                s.dir.display(),
                s.manifest.index,
                s.manifest.count
            ));
        }
    }
    for w in found.windows(2) {
        if w[0].manifest.index == w[1].manifest.index {
            return refuse(format!(
                "{} and {} are both shard {} of run {}",
                w[0].dir.display(),
                w[1].dir.display(),
                w[0].manifest.index,
                m.run_id
            ));
        }
    }
    let missing = (0..m.count)
        .filter(|i| !found.iter().any(|s| s.manifest.index == *i))
        .collect();
    Ok(Run {
        run_id: m.run_id.clone(),
        count: m.count,
        shards: found,
        missing,
    })
}

/// The merged artifact directory: `out`, or `merged` beside the first shard directory found.
///
/// # Errors
/// [`MergeError::Refused`] when it is a shard directory or inside one: the merge would write
/// over the shard's own files.
pub fn out_dir(out: Option<&Path>, found: &[ShardDir]) -> Result<PathBuf, MergeError> {
    let out = match (out, found.first()) {
        (Some(o), _) => o.to_path_buf(),
        (None, Some(first)) => first
            .dir
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("merged"),
        (None, None) => PathBuf::from("merged"),
    };
    let real_out = resolved(&out);
    for s in found {
        let real_shard = resolved(&s.dir);
        if real_out.starts_with(&real_shard) {
            return Err(MergeError::Refused(format!(
                "the merge would write into {}, which is shard {}'s directory {} or inside it; \
                 choose another --artifact-dir",
                out.display(),
                s.manifest.index,
                s.dir.display()
            )));
        }
    }
    Ok(out)
}

/// `p` made absolute with symbolic links resolved, for the part that exists (the rest, which
/// the merge will create, appended as written).
pub(crate) fn resolved(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut rest = Vec::new();
    let mut base = abs.as_path();
    loop {
        if let Ok(real) = base.canonicalize() {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            _ => return abs,
        }
    }
}

/// Why a shard has no summary JSON to read: each says the file by its name in the shard's
/// directory.
#[derive(Debug)]
pub enum SummaryError {
    /// The file is not there: the shard did not finish.
    Missing {
        /// The summary JSON's file name.
        file: String,
    },
    /// The file is there but cannot be read.
    Unreadable {
        /// The summary JSON's file name.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON (cut short): the shard did not finish.
    Invalid {
        /// The summary JSON's file name.
        file: String,
        /// Why.
        source: serde_json::Error,
    },
}

impl std::fmt::Display for SummaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SummaryError::Missing { file } => write!(f, "no {file}: the shard did not finish"),
            SummaryError::Unreadable { file, source } => write!(f, "cannot read {file}: {source}"),
            SummaryError::Invalid { file, source } => {
                write!(
                    f,
                    "{file} is not valid JSON ({source}): the shard did not finish"
                )
            }
        }
    }
}

impl std::error::Error for SummaryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SummaryError::Missing { .. } => None,
            SummaryError::Unreadable { source, .. } => Some(source),
            SummaryError::Invalid { source, .. } => Some(source),
        }
    }
}

/// What a shard's summary JSON says of how it ended and of its client.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardSummary {
    /// `was_cancelled`.
    pub was_cancelled: bool,
    /// `is_complete` (absent in older files: complete unless cancelled).
    pub is_complete: bool,
    /// `incomplete_reason`.
    pub incomplete_reason: Option<String>,
    /// `aiperf_version`.
    pub aiperf_version: Option<String>,
    /// `run_info.cli_command`.
    pub cli_command: Option<String>,
    /// `input_config`.
    pub input_config: Option<Value>,
    /// `ringperf.io_driver`.
    pub io_driver: Option<String>,
    /// `ringperf.workers`.
    pub workers: Option<u64>,
    /// `ringperf.ring_stalls`.
    pub ring_stalls: Option<u64>,
    /// `ringperf.clock.monotonic_origin_ns` and `wall_origin_ns`.
    pub clock: Option<(u64, u64)>,
    /// `ringperf.clock.start_ns` and `end_ns`: the profiling window.
    pub window: Option<(u64, u64)>,
    /// `ringperf.shard.start_lag_ns`.
    pub start_lag_ns: Option<i64>,
    /// `ringperf.client_health`: the shard's own verdict (`None`: its summary has none).
    pub client_health: Option<ringperf_metrics::aggregate::health::ShardVerdict>,
}

impl ShardSummary {
    /// Reads `dir/<names.json>`; the error says why the shard has none to read.
    pub fn read(dir: &Path, names: &ExportNames) -> Result<Self, SummaryError> {
        let path = dir.join(&names.json);
        let file = || names.json.clone();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SummaryError::Missing { file: file() });
            }
            Err(source) => {
                return Err(SummaryError::Unreadable {
                    file: file(),
                    source,
                });
            }
        };
        let v: Value = serde_json::from_slice(&bytes).map_err(|source| SummaryError::Invalid {
            file: file(),
            source,
        })?;
        let rp = &v["ringperf"];
        let u = |v: &Value| v.as_u64();
        let was_cancelled = v["was_cancelled"].as_bool().unwrap_or(false);
        Ok(Self {
            was_cancelled,
            is_complete: v["is_complete"].as_bool().unwrap_or(!was_cancelled),
            incomplete_reason: v["incomplete_reason"].as_str().map(str::to_string),
            aiperf_version: v["aiperf_version"].as_str().map(str::to_string),
            cli_command: v["run_info"]["cli_command"].as_str().map(str::to_string),
            input_config: v.get("input_config").cloned(),
            io_driver: rp["io_driver"].as_str().map(str::to_string),
            workers: u(&rp["workers"]),
            ring_stalls: u(&rp["ring_stalls"]),
            clock: u(&rp["clock"]["monotonic_origin_ns"]).zip(u(&rp["clock"]["wall_origin_ns"])),
            window: u(&rp["clock"]["start_ns"]).zip(u(&rp["clock"]["end_ns"])),
            start_lag_ns: rp["shard"]["start_lag_ns"].as_i64(),
            client_health: shard_verdict(&rp["client_health"]),
        })
    }

    /// Why the shard did not end well, if it did not.
    pub fn trouble(&self) -> Option<String> {
        let reason = self.incomplete_reason.as_deref();
        match (self.was_cancelled, self.is_complete) {
            (true, _) => Some(format!(
                "cancelled ({})",
                reason.unwrap_or("no reason given")
            )),
            (false, false) => Some(format!(
                "incomplete ({})",
                reason.unwrap_or("no reason given")
            )),
            (false, true) => None,
        }
    }
}

/// A shard's verdict from its `ringperf.client_health` (`None` when absent or without
/// `kept_up`).
fn shard_verdict(h: &Value) -> Option<ringperf_metrics::aggregate::health::ShardVerdict> {
    Some(ringperf_metrics::aggregate::health::ShardVerdict {
        kept_up: h["kept_up"].as_bool()?,
        enforced: h["enforced"].as_bool().unwrap_or(false),
        reasons: h["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect(),
    })
}

/// Each phase's `(start_ns, end_ns)` in a shard's `phase_manifest.json`, by phase name; a run of
/// one phase writes no manifest: its profiling window is its summary's (`window`); empty when the
/// shard wrote neither.
pub fn phase_spans(dir: &Path, window: Option<(u64, u64)>) -> BTreeMap<String, (u64, u64)> {
    let Ok(bytes) = std::fs::read(dir.join(phases::MANIFEST_FILE)) else {
        return window
            .map(|w| (Phase::Profiling.as_str().to_string(), w))
            .into_iter()
            .collect();
    };
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return BTreeMap::new();
    };
    v["phases"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p["phase_name"].as_str()?;
            Some((
                name.to_string(),
                (p["start_ns"].as_u64()?, p["end_ns"].as_u64()?),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(index: u32, count: u32, run_id: &str, workload: &str) -> ShardManifest {
        ShardManifest {
            run_id: run_id.into(),
            index,
            count,
            start_at_ns: 1,
            workload: workload.into(),
            server_metrics: index == 0,
            argv: Vec::new(),
            ringperf_version: "0".into(),
        }
    }

    fn shard(dir: &str, m: ShardManifest) -> ShardDir {
        ShardDir {
            dir: PathBuf::from(dir),
            manifest: m,
        }
    }

    fn refused(r: Result<Run, MergeError>) -> String {
        match r {
            Err(MergeError::Refused(m)) => m,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn one_run_sorts_and_names_the_missing() {
        let run = one_run(vec![
            shard("b", manifest(2, 4, "r", "w")),
            shard("a", manifest(0, 4, "r", "w")),
        ])
        .unwrap();
        let order: Vec<u32> = run.shards.iter().map(|s| s.manifest.index).collect();
        assert_eq!((order, run.missing, run.count), (vec![0, 2], vec![1, 3], 4));
    }

    #[test]
    fn mixed_inputs_are_refused_by_name() {
        let e = refused(one_run(vec![
            shard("a", manifest(0, 2, "r1", "w")),
            shard("b", manifest(1, 2, "r2", "w")),
        ]));
        assert!(e.contains("a belongs to run r1, b to run r2"), "{e}");
        let e = refused(one_run(vec![
            shard("a", manifest(0, 2, "r", "w1")),
            shard("b", manifest(1, 2, "r", "w2")),
        ]));
        assert!(e.contains("a and b ran different workloads"), "{e}");
        let e = refused(one_run(vec![
            shard("a", manifest(0, 2, "r", "w")),
            shard("b", manifest(1, 3, "r", "w")),
        ]));
        assert!(e.contains("different shard counts"), "{e}");
        let e = refused(one_run(vec![
            shard("a", manifest(1, 2, "r", "w")),
            shard("b", manifest(1, 2, "r", "w")),
        ]));
        assert!(e.contains("a and b are both shard 1 of run r"), "{e}");
        let e = refused(one_run(vec![shard("a", manifest(2, 2, "r", "w"))]));
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn the_output_is_never_a_shard_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let s0 = tmp.path().join("shard-0");
        std::fs::create_dir(&s0).unwrap();
        let found = vec![ShardDir {
            dir: s0.clone(),
            manifest: manifest(0, 2, "r", "w"),
        }];
        assert_eq!(out_dir(None, &found).unwrap(), tmp.path().join("merged"));
        for bad in [s0.clone(), s0.join("x/y"), s0.join("../shard-0/new")] {
            match out_dir(Some(&bad), &found) {
                Err(MergeError::Refused(m)) => assert!(m.contains("shard 0's directory"), "{m}"),
                other => panic!("{}: {other:?}", bad.display()),
            }
        }
        let beside = tmp.path().join("shard-0-merged");
        assert_eq!(out_dir(Some(&beside), &found).unwrap(), beside);
    }

    #[test]
    fn a_summary_says_how_the_shard_ended() {
        let tmp = tempfile::tempdir().unwrap();
        let names = ExportNames::new(None);
        let e = ShardSummary::read(tmp.path(), &names).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no profile_export_aiperf.json: the shard did not finish"
        );
        std::fs::write(tmp.path().join(&names.json), "{\"was_canc").unwrap();
        let e = ShardSummary::read(tmp.path(), &names)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("profile_export_aiperf.json is not valid JSON (")
                && e.ends_with("): the shard did not finish"),
            "{e}"
        );
        std::fs::write(
            tmp.path().join(&names.json),
            r#"{"was_cancelled": true, "is_complete": false,
                "incomplete_reason": "SIGINT", "run_info": {"cli_command": "c"},
                "ringperf": {"io_driver": "epoll", "workers": 2, "ring_stalls": 5,
                             "clock": {"monotonic_origin_ns": 3, "wall_origin_ns": 4},
                             "shard": {"start_lag_ns": -7}}}"#,
        )
        .unwrap();
        let s = ShardSummary::read(tmp.path(), &names).unwrap();
        assert_eq!(s.trouble().as_deref(), Some("cancelled (SIGINT)"));
        assert_eq!(
            (s.workers, s.ring_stalls, s.clock, s.start_lag_ns),
            (Some(2), Some(5), Some((3, 4)), Some(-7))
        );
        assert_eq!(s.io_driver.as_deref(), Some("epoll"));
        assert_eq!(
            ShardSummary {
                is_complete: true,
                ..ShardSummary::default()
            }
            .trouble(),
            None
        );
    }
}
