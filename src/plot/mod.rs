//! `ringperf plot DIR...` and `profile --auto-plot` (#9 item 2): one self-contained
//! `report.html` and a PNG and an SVG of each chart under `plots/`, from one or more artifact
//! directories (single runs or multi-run directories). `inputs` reads the directories, `charts`
//! turns them into series, `render` draws them with plotters, `html` writes the page.

pub mod charts;
pub mod html;
pub mod inputs;
pub mod render;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::cli::plot::PlotArgs;

use self::charts::Chart;
use self::html::Figure;
use self::inputs::{Input, InputError};
use self::render::RenderError;

/// The report's file name in its directory.
pub const REPORT_FILE: &str = "report.html";

/// Why no report was written; every case exits 2.
#[derive(Debug)]
pub enum PlotError {
    /// No directory held anything to plot; one message per directory.
    NoUsableInput(Vec<InputError>),
    /// A chart could not be drawn.
    Render(RenderError),
    Write(PathBuf, std::io::Error),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::NoUsableInput(errors) => {
                f.write_str("no usable input: ")?;
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            PlotError::Render(e) => write!(f, "cannot draw a chart: {e}"),
            PlotError::Write(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for PlotError {}

/// What was written, and the directories skipped (with why).
#[derive(Debug)]
pub struct Report {
    pub html: PathBuf,
    pub plots_dir: PathBuf,
    pub charts: usize,
    pub skipped: Vec<InputError>,
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    std::fs::write(path, bytes).map_err(|e| PlotError::Write(path.to_path_buf(), e))
}

/// Reads the directories, draws every chart and writes the report into `output` (default: the
/// first usable directory).
pub fn plot(dirs: &[PathBuf], output: Option<&Path>) -> Result<Report, PlotError> {
    let mut inputs: Vec<Input> = Vec::new();
    let mut skipped = Vec::new();
    for d in dirs {
        match inputs::read_input(d) {
            Ok(i) => inputs.push(i),
            Err(e) => skipped.push(e),
        }
    }
    if inputs.is_empty() {
        return Err(PlotError::NoUsableInput(skipped));
    }
    let out_dir = output.map_or_else(|| inputs[0].dir.clone(), Path::to_path_buf);
    let plots_dir = out_dir.join("plots");
    std::fs::create_dir_all(&plots_dir).map_err(|e| PlotError::Write(plots_dir.clone(), e))?;

    let records = charts::record_charts(&inputs);
    let (server, left_out) = charts::server_metric_charts(&inputs);
    let multi = inputs.len() > 1 || inputs.iter().any(|i| i.aggregate.is_some());
    let comparison = if multi {
        charts::comparison_charts(&inputs)
    } else {
        Vec::new()
    };

    let mut svgs: Vec<(String, String)> = Vec::new();
    for chart in comparison.iter().chain(&records).chain(&server) {
        let svg = render::svg(chart).map_err(PlotError::Render)?;
        let png = render::png(chart).map_err(PlotError::Render)?;
        write(&plots_dir.join(format!("{}.svg", chart.id)), svg.as_bytes())?;
        write(&plots_dir.join(format!("{}.png", chart.id)), &png)?;
        svgs.push((chart.id.clone(), svg));
    }
    let svg_of = |id: &str| {
        svgs.iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s.as_str())
            .unwrap_or("")
    };
    let mut sections: Vec<(&str, Vec<Figure<'_>>, Option<String>)> = Vec::new();
    if multi {
        sections.push((
            "Runs side by side",
            comparison
                .iter()
                .map(|c| Figure {
                    chart: c,
                    svg: svg_of(&c.id),
                })
                .collect(),
            None,
        ));
    }
    let no_records = inputs
        .iter()
        .flat_map(|i| &i.runs)
        .all(|r| r.requests.is_empty());
    sections.push((
        "Requests",
        records
            .iter()
            .map(|c| Figure {
                chart: c,
                svg: svg_of(&c.id),
            })
            .collect(),
        no_records.then(|| {
            "No per-request records: profile_export.jsonl is absent or empty (a run with \
             --export-level summary writes none); the charts below are empty."
                .to_string()
        }),
    ));
    let server_note = if server.is_empty() {
        Some(
            "No server-metrics timeslices: server_metrics_export.json is absent or has no \
             timeslices (run with --slice-duration and server metrics on)."
                .to_string(),
        )
    } else if left_out > 0 {
        Some(format!(
            "{left_out} more server metric(s) with timeslices are not drawn (the first {} are).",
            charts::MAX_SERVER_METRIC_CHARTS
        ))
    } else {
        None
    };
    sections.push((
        "Server metrics per time slice",
        server
            .iter()
            .map(|c| Figure {
                chart: c,
                svg: svg_of(&c.id),
            })
            .collect(),
        server_note,
    ));
    let all: Vec<Chart> = comparison
        .iter()
        .chain(&records)
        .chain(&server)
        .cloned()
        .collect();
    let data = html::data(&inputs, &all);
    let page = html::page(&inputs, &sections, &data, "plots");
    let html_path = out_dir.join(REPORT_FILE);
    write(&html_path, page.as_bytes())?;
    Ok(Report {
        html: html_path,
        plots_dir,
        charts: all.len(),
        skipped,
    })
}

/// `ringperf plot`: prints what was written and the directories skipped.
pub fn run(args: &PlotArgs) -> Result<Report, PlotError> {
    let report = plot(&args.dirs, args.output.as_deref())?;
    for s in &report.skipped {
        eprintln!("ringperf: plot: skipped {s}");
    }
    println!("Report: {}", report.html.display());
    println!(
        "Charts: {} (PNG and SVG) in {}",
        report.charts,
        report.plots_dir.display()
    );
    Ok(report)
}
