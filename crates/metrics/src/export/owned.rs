//! The files a run owns in its artifact directory, and their removal when a new run starts
//! there: an earlier run's `profile_export.jsonl` or server-metrics files left beside a new
//! summary would read as this run's. Only names ringperf writes (for the run's
//! `--profile-export-prefix`) are touched; anything else in the directory stays.

use std::io;
use std::path::{Path, PathBuf};

use super::ExportNames;
use super::aggregate::{
    AGGREGATE_DIR, CSV_NAME as AGGREGATE_CSV, JSON_NAME as AGGREGATE_JSON, RUNS_DIR,
};
use super::marker::READY_MARKER;
use super::phases::{MANIFEST_FILE, PHASES_DIR, SERVER_METRICS_FILE};
use super::shard::SHARD_FILE;
use ringperf_wire::record::Phase;

/// The HTML report's file name in a run's directory (`--auto-plot`, `ringperf plot`).
pub const REPORT_FILE: &str = "report.html";

/// `inputs.json`: the dataset as sent.
pub const INPUTS_FILE: &str = "inputs.json";

/// `plan.json`: the run's typed plan, which `ringperf merge` reads back.
pub const PLAN_FILE: &str = "plan.json";

/// Every path (relative to the artifact directory) a run with `names` may write, the
/// results-ready marker first: a consumer waiting for it must never see an old marker beside
/// the new run's files.
pub fn owned_files(names: &ExportNames) -> Vec<PathBuf> {
    owned_files_in(None, names)
}

/// The files of the phases `dir`'s `phase_manifest.json` lists (a config file names its phases,
/// and may run several of a kind), relative to `dir`, in its order; none when it has no
/// readable manifest. Only paths under `phases/` are taken.
fn manifest_phase_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(dir.join(MANIFEST_FILE)) else {
        return Vec::new();
    };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let entries = doc.get("phases").and_then(|p| p.as_array());
    let mut files = Vec::new();
    for entry in entries.into_iter().flatten() {
        for key in ["metrics_json", "metrics_csv", "server_metrics_json"] {
            let Some(rel) = entry.get(key).and_then(|v| v.as_str()) else {
                continue;
            };
            let rel = PathBuf::from(rel);
            let inside = rel.starts_with(PHASES_DIR)
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if inside && !files.contains(&rel) {
                files.push(rel);
            }
        }
    }
    files
}

/// [`owned_files`], with the phase files of `dir`'s manifest (when given) in place of the
/// `warmup` / `profiling` ones.
fn owned_files_in(dir: Option<&Path>, names: &ExportNames) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        READY_MARKER,
        &names.json,
        &names.csv,
        &names.jsonl,
        &names.raw_jsonl,
        &names.timeslices_csv,
        &names.timeslices_json,
        &names.gpu_telemetry_jsonl,
        &names.network_latency_jsonl,
        &names.server_metrics_json,
        &names.server_metrics_csv,
        &names.server_metrics_jsonl,
        &names.server_metrics_parquet,
        &names.console_txt,
        INPUTS_FILE,
        MANIFEST_FILE,
        SHARD_FILE,
        PLAN_FILE,
        // An earlier run's report (`--auto-plot`, `ringperf plot`) describes that run.
        REPORT_FILE,
        // An earlier run's generated texts (`--export-outputs-json`).
        super::outputs_json::OUTPUTS_JSON_FILE,
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    // A repeated run's aggregate (`--num-profile-runs`).
    for name in [AGGREGATE_JSON, AGGREGATE_CSV] {
        files.push(Path::new(AGGREGATE_DIR).join(name));
    }
    let listed = dir.map(manifest_phase_files).unwrap_or_default();
    if listed.is_empty() {
        for phase in [Phase::Warmup, Phase::Profiling] {
            let folder = Path::new(PHASES_DIR).join(phase.as_str());
            for name in [
                "profile_export_aiperf.json",
                "profile_export_aiperf.csv",
                SERVER_METRICS_FILE,
            ] {
                files.push(folder.join(name));
            }
        }
    }
    files.extend(listed);
    files
}

/// Removes every file of [`owned_files`] present in `dir`, then the phase folders (and
/// `phases/`) left empty; returns the removed files' relative paths, in [`owned_files`] order.
/// A file of `keep` (the run's own input file, say `--input-file artifacts/x/inputs.json`) is
/// never removed. A file that cannot be removed is an error: the run must not start beside it.
pub fn remove_previous(
    dir: &Path,
    names: &ExportNames,
    keep: &[PathBuf],
) -> io::Result<Vec<PathBuf>> {
    let keep: Vec<PathBuf> = keep.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut removed = Vec::new();
    // The earlier run's manifest names its phase folders; read before it is removed.
    let phase_folders: Vec<PathBuf> = (manifest_phase_files(dir).iter())
        .filter_map(|rel| rel.parent().map(Path::to_path_buf))
        .collect();
    let mut owned = owned_files(names);
    owned.extend(manifest_phase_files(dir));
    for rel in owned {
        let path = dir.join(&rel);
        if path.canonicalize().is_ok_and(|p| keep.contains(&p)) {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(rel),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot remove {}: {e}", path.display()),
                ));
            }
        }
    }
    // Only empty folders go: a folder holding anything else is not only ringperf's.
    for phase in [Phase::Warmup, Phase::Profiling] {
        let _ = std::fs::remove_dir(dir.join(PHASES_DIR).join(phase.as_str()));
    }
    for folder in phase_folders {
        let _ = std::fs::remove_dir(dir.join(folder));
    }
    let _ = std::fs::remove_dir(dir.join(PHASES_DIR));
    let _ = std::fs::remove_dir(dir.join(AGGREGATE_DIR));
    // An earlier repeated run's `profile_runs/run_NNNN/` folders, each the same way.
    let runs = dir.join(RUNS_DIR);
    if let Ok(entries) = std::fs::read_dir(&runs) {
        let mut folders: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.file_name().is_some_and(is_run_label))
            .collect();
        folders.sort();
        for folder in folders {
            let label = PathBuf::from(RUNS_DIR).join(folder.file_name().unwrap_or_default());
            for rel in remove_previous(&folder, names, &keep)? {
                removed.push(label.join(rel));
            }
            let _ = std::fs::remove_dir(&folder);
        }
        let _ = std::fs::remove_dir(&runs);
    }
    Ok(removed)
}

/// `run_0001`, … : the folder name of one repeated run.
fn is_run_label(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix("run_"))
        .is_some_and(|d| d.len() == 4 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The footer's lines for the files of [`owned_files`] present in `dir` that `listed` (the
/// footer's other lines) does not name: `inputs.json`, the server-metrics and GPU-telemetry
/// JSONL, the per-phase files and their manifest, a shard's manifest, the results-ready
/// marker. Called once the run has written everything (an earlier run's files under these
/// names were removed when it started), so each is this run's; in [`owned_files`] order, the
/// marker last.
pub fn unlisted(
    dir: &Path,
    names: &ExportNames,
    listed: &[(&str, PathBuf)],
) -> Vec<(&'static str, PathBuf)> {
    let mut out: Vec<(&'static str, PathBuf)> = owned_files_in(Some(dir), names)
        .into_iter()
        .map(|rel| (owned_label(&rel, names), dir.join(rel)))
        .filter(|(_, path)| path.is_file() && !listed.iter().any(|(_, p)| p == path))
        .collect();
    // The marker, first in `owned_files` (removed first), is written last.
    out.sort_by_key(|(label, _)| *label == MARKER_LABEL);
    out
}

/// The label of [`unlisted`]'s line for the marker.
const MARKER_LABEL: &str = "Results Ready Marker";

/// The footer label of one of [`owned_files`] (relative path).
fn owned_label(rel: &Path, names: &ExportNames) -> &'static str {
    let is = |name: &str| rel == Path::new(name);
    if rel.starts_with(PHASES_DIR) {
        "Phase Export"
    } else if rel.starts_with(AGGREGATE_DIR) {
        "Aggregate Export"
    } else if is(READY_MARKER) {
        MARKER_LABEL
    } else if is(INPUTS_FILE) {
        "Inputs Export"
    } else if is(&names.server_metrics_jsonl) {
        "Server Metrics JSONL Export"
    } else if is(&names.gpu_telemetry_jsonl) {
        "GPU Telemetry JSONL Export"
    } else if is(&names.network_latency_jsonl) {
        "Network Latency JSONL Export"
    } else if is(MANIFEST_FILE) {
        "Phase Manifest"
    } else if is(SHARD_FILE) {
        "Shard Manifest"
    } else if is(PLAN_FILE) {
        "Run Plan"
    } else if is(REPORT_FILE) {
        "Report"
    } else if is(super::outputs_json::OUTPUTS_JSON_FILE) {
        super::outputs_json::FOOTER_LABEL
    } else {
        "Export"
    }
}

/// The note a run prints when it replaced an earlier run's files, `None` when there were none.
pub fn removed_note(dir: &Path, removed: &[PathBuf]) -> Option<String> {
    if removed.is_empty() {
        return None;
    }
    // Past a screenful, the first names and how many more.
    const SHOWN: usize = 16;
    let mut list: Vec<String> = removed
        .iter()
        .take(SHOWN)
        .map(|p| p.display().to_string())
        .collect();
    if removed.len() > SHOWN {
        list.push(format!("and {} more", removed.len() - SHOWN));
    }
    Some(format!(
        "removed {} of an earlier run from {}: {}",
        super::plural(removed.len() as u64, "file"),
        dir.display(),
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, rel: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "old").unwrap();
    }

    #[test]
    fn an_earlier_runs_files_go_and_everything_else_stays() {
        let d = tempfile::tempdir().unwrap();
        let names = ExportNames::new(None);
        for rel in [
            "profile_export.jsonl",
            "server_metrics_export.parquet",
            "server_metrics_export.csv",
            ".aiperf_results_ready.json",
            "phases/profiling/profile_export_aiperf.json",
            "phases/warmup/server_metrics.json",
            // Not ringperf's: a user's notes, another prefix's export, a file in a phase folder.
            "notes.txt",
            "other_prefix.json",
            "phases/profiling/my_plot.png",
        ] {
            touch(d.path(), rel);
        }
        let removed = remove_previous(d.path(), &names, &[]).unwrap();
        let removed: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            removed,
            [
                ".aiperf_results_ready.json",
                "profile_export.jsonl",
                "server_metrics_export.csv",
                "server_metrics_export.parquet",
                "phases/warmup/server_metrics.json",
                "phases/profiling/profile_export_aiperf.json",
            ]
        );
        for kept in [
            "notes.txt",
            "other_prefix.json",
            "phases/profiling/my_plot.png",
        ] {
            assert!(d.path().join(kept).exists(), "{kept} was kept");
        }
        // The emptied warmup folder went; the profiling folder still holds the user's file.
        assert!(!d.path().join("phases/warmup").exists());
        assert!(d.path().join("phases/profiling").exists());
    }

    #[test]
    fn a_prefix_owns_its_own_names() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "profile_export.jsonl");
        touch(d.path(), "foo.jsonl");
        let removed = remove_previous(d.path(), &ExportNames::new(Some("foo")), &[]).unwrap();
        assert_eq!(removed, [PathBuf::from("foo.jsonl")]);
        assert!(d.path().join("profile_export.jsonl").exists());
    }

    #[test]
    fn an_earlier_repeated_runs_folders_and_aggregate_go() {
        let d = tempfile::tempdir().unwrap();
        for rel in [
            "aggregate/profile_export_aiperf_aggregate.json",
            "aggregate/profile_export_aiperf_aggregate.csv",
            "profile_runs/run_0001/profile_export_aiperf.json",
            "profile_runs/run_0001/phases/profiling/profile_export_aiperf.csv",
            "profile_runs/run_0002/profile_export.jsonl",
            // Not a run folder of ringperf's: stays, and so does its parent.
            "profile_runs/mine/profile_export.jsonl",
        ] {
            touch(d.path(), rel);
        }
        let removed = remove_previous(d.path(), &ExportNames::new(None), &[]).unwrap();
        let removed: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            removed,
            [
                "aggregate/profile_export_aiperf_aggregate.json",
                "aggregate/profile_export_aiperf_aggregate.csv",
                "profile_runs/run_0001/profile_export_aiperf.json",
                "profile_runs/run_0001/phases/profiling/profile_export_aiperf.csv",
                "profile_runs/run_0002/profile_export.jsonl",
            ]
        );
        assert!(!d.path().join("aggregate").exists());
        assert!(!d.path().join("profile_runs/run_0001").exists());
        assert!(
            d.path()
                .join("profile_runs/mine/profile_export.jsonl")
                .exists()
        );
    }

    #[test]
    fn the_runs_own_input_file_is_never_removed() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "inputs.json");
        touch(d.path(), "profile_export.jsonl");
        let input = d.path().join("./inputs.json");
        let removed = remove_previous(d.path(), &ExportNames::new(None), &[input]).unwrap();
        assert_eq!(removed, [PathBuf::from("profile_export.jsonl")]);
        assert!(d.path().join("inputs.json").exists());
    }

    #[test]
    fn the_note_names_every_file_and_nothing_when_clean() {
        let dir = Path::new("artifacts/x");
        assert_eq!(removed_note(dir, &[]), None);
        let note = removed_note(
            dir,
            &[
                PathBuf::from("profile_export.jsonl"),
                PathBuf::from("inputs.json"),
            ],
        )
        .unwrap();
        assert_eq!(
            note,
            "removed 2 files of an earlier run from artifacts/x: profile_export.jsonl, inputs.json"
        );
    }
}
