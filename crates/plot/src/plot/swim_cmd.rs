//! `ringperf analyze swim-lane`: each run directory's swim lane written as AIPerf writes it
//! (`swim_lane.png`, and `swim_lane.html` with `--html`), its messages and exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::swim_lane::{SwimLane, SwimLaneError};

fn write(path: &Path, bytes: &[u8]) -> Result<PathBuf, SwimLaneError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| SwimLaneError::Write(path.to_path_buf(), e))?;
    }
    std::fs::write(path, bytes).map_err(|e| SwimLaneError::Write(path.to_path_buf(), e))?;
    Ok(path.to_path_buf())
}

/// Writes the PNG (to `out`, else `<dir>/swim_lane.png`).
///
/// # Errors
/// As [`super::swim_lane::load`], or the picture or its file could not be made.
pub fn write_png(
    sl: &SwimLane,
    dir: &Path,
    out: Option<&Path>,
    target: Option<u64>,
) -> Result<PathBuf, SwimLaneError> {
    let png = super::swim_draw::png(sl, target)?;
    write(
        &out.map_or_else(|| dir.join("swim_lane.png"), Path::to_path_buf),
        &png,
    )
}

/// Writes the viewer (to `out`, else `<dir>/swim_lane.html`).
///
/// # Errors
/// The file could not be written.
pub fn write_html(
    sl: &SwimLane,
    dir: &Path,
    out: Option<&Path>,
    target: Option<u64>,
) -> Result<PathBuf, SwimLaneError> {
    let page = super::swim_html::page(&sl.payload(target));
    write(
        &out.map_or_else(|| dir.join("swim_lane.html"), Path::to_path_buf),
        page.as_bytes(),
    )
}

/// What `ringperf analyze swim-lane` draws, and where.
#[derive(Clone, Debug, Default)]
pub struct SwimLaneJob {
    /// The run directories (each with a profile_export.jsonl).
    pub run_dirs: Vec<PathBuf>,
    /// The PNG's path (default `<run_dir>/swim_lane.png`); only with a single run directory.
    pub out: Option<PathBuf>,
    /// Target concurrency, drawn as a reference line under the lanes.
    pub concurrency: Option<u64>,
    /// Ramp duration in seconds for the ramp-done line, over the run's own.
    pub ramp: Option<f64>,
    /// Also write the viewer (`swim_lane.html`, or the `--out` path with `.html`).
    pub html: bool,
}

/// Runs the command: `saved PATH` on stdout per file, `skip DIR: why` on stderr per run that
/// could not be drawn. Exit code 2 for no directory or `--out` with several, 1 when any run was
/// skipped, else 0.
pub fn run(args: &SwimLaneJob) -> u8 {
    if args.run_dirs.is_empty() {
        eprintln!("error: at least one run directory is required");
        return 2;
    }
    if args.out.is_some() && args.run_dirs.len() > 1 {
        eprintln!("error: --out only valid with a single run dir");
        return 2;
    }
    let mut failures = 0;
    let mut stdout = std::io::stdout().lock();
    for dir in &args.run_dirs {
        let done = super::swim_lane::load(dir, args.ramp).and_then(|sl| {
            let png = write_png(&sl, dir, args.out.as_deref(), args.concurrency)?;
            let _ = writeln!(stdout, "saved {}", png.display());
            if args.html {
                let out = args.out.as_ref().map(|o| o.with_extension("html"));
                let html = write_html(&sl, dir, out.as_deref(), args.concurrency)?;
                let _ = writeln!(stdout, "saved {}", html.display());
            }
            Ok(())
        });
        if let Err(e) = done {
            eprintln!("skip {}: {e}", dir.display());
            failures += 1;
        }
    }
    u8::from(failures > 0)
}
