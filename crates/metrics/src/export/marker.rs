//! The results-ready marker, `.aiperf_results_ready.json`: written last, once every artifact of
//! the run is on disk, so a consumer that waits for it (AIPerf's results API, a Kubernetes
//! sidecar, a CI step) never reads a half-written directory.
//!
//! As AIPerf 0.13 writes it: `{"ready":true,"was_cancelled":…,"partial":…}`, compact, plus
//! `failed_exporters` when an optional export failed while the others were written (`partial` is
//! then true). The file is made under a temporary name, synced, and renamed into place, then the
//! directory is synced: it appears whole or not at all.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The marker's file name.
pub const READY_MARKER: &str = ".aiperf_results_ready.json";

/// The marker's JSON text.
pub fn ready_marker_json(was_cancelled: bool, failed_exporters: &[String]) -> String {
    let mut m = Map::new();
    m.insert("ready".into(), Value::from(true));
    m.insert("was_cancelled".into(), Value::from(was_cancelled));
    m.insert("partial".into(), Value::from(!failed_exporters.is_empty()));
    if !failed_exporters.is_empty() {
        m.insert(
            "failed_exporters".into(),
            Value::Array(
                failed_exporters
                    .iter()
                    .map(|s| Value::from(s.as_str()))
                    .collect(),
            ),
        );
    }
    Value::Object(m).to_string()
}

/// Writes the marker into `dir` atomically. `failed_exporters` names the exports that failed.
pub fn write_ready_marker(
    dir: &Path,
    was_cancelled: bool,
    failed_exporters: &[String],
) -> io::Result<PathBuf> {
    let path = dir.join(READY_MARKER);
    let tmp = dir.join(format!(
        ".{READY_MARKER}.{}.tmp",
        uuid::Uuid::new_v4().simple()
    ));
    let written = (|| {
        let mut f = File::create_new(&tmp)?;
        f.write_all(ready_marker_json(was_cancelled, failed_exporters).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_text_as_aiperf_writes_it() {
        assert_eq!(
            ready_marker_json(false, &[]),
            r#"{"ready":true,"was_cancelled":false,"partial":false}"#
        );
        assert_eq!(
            ready_marker_json(true, &["server_metrics".to_string()]),
            r#"{"ready":true,"was_cancelled":true,"partial":true,"failed_exporters":["server_metrics"]}"#
        );
    }

    #[test]
    fn marker_replaces_an_older_one_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(READY_MARKER), "stale").unwrap();
        let path = write_ready_marker(dir.path(), false, &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            ready_marker_json(false, &[])
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [READY_MARKER]);
        // A directory that cannot be written is an error, not a panic.
        assert!(write_ready_marker(&dir.path().join("missing"), false, &[]).is_err());
    }
}
