//! Writing the selected server-metrics files into the artifact directory (shared by the profile
//! run and `ringperf server-metrics --from-jsonl`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Error;
use super::export::parquet::ParquetMeta;
use super::export::{ExportContext, Windows, compute_report, csv, json, parquet};
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

/// AIPerf 0.13's default: JSON and CSV (Parquet and JSONL are asked for by name).
pub const DEFAULT_FORMATS: &[Format] = &[Format::Json, Format::Csv];

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

/// Writes the CSV, JSON and Parquet exports among `formats` (JSONL is not written here) and
/// returns `(console label, path)` of each file written, with AIPerf's labels in its exporter
/// order (AIPerf itself leaves the Parquet file out of its footer).
///
/// # Errors
/// [`Error::Create`] or [`Error::Write`], naming the file.
pub fn write_exports(
    dir: &Path,
    names: &FileNames,
    formats: &[Format],
    store: &Store,
    windows: &Windows,
    ctx: &ExportContext<'_>,
    meta: &ParquetMeta<'_>,
) -> Result<Vec<(&'static str, PathBuf)>, Error> {
    let report = compute_report(store, windows);
    let mut written = Vec::new();
    let create = |name: &str| -> Result<(PathBuf, File), Error> {
        let path = dir.join(name);
        match File::create(&path) {
            Ok(f) => Ok((path, f)),
            Err(source) => Err(Error::Create { path, source }),
        }
    };
    let fail = |path: &Path, e: &dyn std::fmt::Display| Error::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    if formats.contains(&Format::Csv) {
        let (path, f) = create(&names.csv)?;
        let mut out = BufWriter::new(f);
        csv::write(&mut out, &report, ctx)
            .and_then(|()| out.flush())
            .map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics CSV Export", path));
    }
    if formats.contains(&Format::Json) {
        let (path, f) = create(&names.json)?;
        let mut out = BufWriter::new(f);
        json::write(&mut out, &report, ctx)
            .and_then(|()| out.flush())
            .map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics JSON Export", path));
    }
    if formats.contains(&Format::Parquet) {
        let (path, out) = create(&names.parquet)?;
        parquet::write(out, store, &windows.parquet, ctx, meta).map_err(|e| fail(&path, &e))?;
        written.push(("Server Metrics Parquet Export", path));
    }
    Ok(written)
}
