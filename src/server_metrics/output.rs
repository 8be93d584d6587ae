//! Writing the selected server-metrics files into the artifact directory (shared by the profile
//! run and `ringperf server-metrics --from-jsonl`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::analysis::Window;
use super::export::parquet::ParquetMeta;
use super::export::{ExportContext, compute_report, csv, json, parquet};
use super::store::Store;

/// A server-metrics export format (`--server-metrics-formats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// `server_metrics_export.json`.
    Json,
    /// `server_metrics_export.csv`.
    Csv,
    /// `server_metrics_export.jsonl` (streamed during collection).
    Jsonl,
    /// `server_metrics_export.parquet`.
    Parquet,
}

/// The collection doc's default: JSON, CSV and Parquet (JSONL is opt-in).
pub const DEFAULT_FORMATS: &[Format] = &[Format::Json, Format::Csv, Format::Parquet];

/// File names of the four exports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileNames {
    /// JSON export.
    pub json: String,
    /// CSV export.
    pub csv: String,
    /// JSONL export.
    pub jsonl: String,
    /// Parquet export.
    pub parquet: String,
}

impl FileNames {
    /// The names of the run's [`crate::export::ExportNames`] (prefix applied).
    #[must_use]
    pub fn from_export_names(n: &crate::export::ExportNames) -> Self {
        Self {
            json: n.server_metrics_json.clone(),
            csv: n.server_metrics_csv.clone(),
            jsonl: n.server_metrics_jsonl.clone(),
            parquet: n.server_metrics_parquet.clone(),
        }
    }
}

/// Writes the JSON, CSV and Parquet exports among `formats` (JSONL is not written here) and
/// returns `(console label, path)` of each file written.
///
/// # Errors
/// A message naming the file that could not be written.
#[allow(clippy::too_many_arguments)]
pub fn write_exports(
    dir: &Path,
    names: &FileNames,
    formats: &[Format],
    store: &Store,
    profiling: Window,
    warmup: Option<Window>,
    ctx: &ExportContext<'_>,
    meta: &ParquetMeta<'_>,
) -> Result<Vec<(&'static str, PathBuf)>, String> {
    let report = compute_report(store, profiling, warmup);
    let mut written = Vec::new();
    let open = |name: &str| -> Result<(PathBuf, BufWriter<File>), String> {
        let path = dir.join(name);
        let f =
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok((path, BufWriter::new(f)))
    };
    let fail =
        |path: &Path, e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    if formats.contains(&Format::Json) {
        let (path, mut out) = open(&names.json)?;
        json::write(&mut out, &report, ctx)
            .and_then(|()| out.flush())
            .map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics JSON", path));
    }
    if formats.contains(&Format::Csv) {
        let (path, mut out) = open(&names.csv)?;
        csv::write(&mut out, &report, ctx)
            .and_then(|()| out.flush())
            .map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics CSV", path));
    }
    if formats.contains(&Format::Parquet) {
        let path = dir.join(&names.parquet);
        let out =
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        parquet::write(out, store, &profiling, ctx, meta).map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics Parquet", path));
    }
    Ok(written)
}
