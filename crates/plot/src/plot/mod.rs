//! `ringperf plot DIR...` and `profile --auto-plot` (#9 item 2): one self-contained
//! `report.html` and a PNG and an SVG of each chart under `plots/`, from one or more artifact
//! directories (single runs or multi-run directories). `inputs` reads the directories, `charts`
//! turns them into series, `render` draws them with plotters, `html` writes the page.

pub mod charts;
pub mod html;
pub mod inputs;
pub mod render;
pub mod sweep;
pub mod sweep_charts;
pub mod swim_cmd;
pub mod swim_draw;
pub mod swim_html;
pub mod swim_lane;

use std::fmt;
use std::path::{Path, PathBuf};

use self::charts::Chart;
use self::html::Figure;
use self::inputs::{Input, InputError};
use self::render::RenderError;
use self::sweep::Sweep;

pub use ringperf_metrics::export::owned::REPORT_FILE;

/// Why no report was written; every case exits 2.
#[derive(Debug)]
pub enum PlotError {
    /// No directory held anything to plot; one message per directory.
    NoUsableInput(Vec<InputError>),
    /// A chart could not be drawn.
    Render(RenderError),
    /// A swim lane could not be drawn.
    Swim(String),
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
            PlotError::Swim(e) => write!(f, "{e}"),
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

/// A section of the page: its title, its charts and a note above them.
type Section<'a> = (String, Vec<Figure<'a>>, Option<String>);

/// Chart ids made unique across the report (a second `ttft_vs_throughput` becomes
/// `ttft_vs_throughput-2`), so that no file under `plots/` is written twice.
fn unique_ids(groups: &mut [Vec<Chart>]) {
    let mut seen = std::collections::HashSet::new();
    for chart in groups.iter_mut().flatten() {
        let mut id = chart.id.clone();
        let mut k = 1;
        while !seen.insert(id.clone()) {
            k += 1;
            id = format!("{}-{k}", chart.id);
        }
        chart.id = id;
    }
}

/// The page's sections: one per sweep, the side-by-side charts, and (with run directories) the
/// per-request and server-metric charts.
fn sections<'a>(
    inputs: &[Input],
    sweeps: &[Sweep],
    groups: &'a [Vec<Chart>],
    svgs: &'a [(String, String)],
    left_out: usize,
) -> Vec<Section<'a>> {
    let svg_of = |id: &str| {
        svgs.iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s.as_str())
            .unwrap_or("")
    };
    let figures = |charts: &'a [Chart]| {
        charts
            .iter()
            .map(|c| Figure {
                chart: c,
                svg: svg_of(&c.id),
            })
            .collect::<Vec<_>>()
    };
    let (sweep_groups, rest) = groups.split_at(sweeps.len());
    let mut out: Vec<Section<'a>> = sweeps
        .iter()
        .zip(sweep_groups)
        .map(|(s, g)| {
            let title = format!("{} {}", s.kind, s.dir.display());
            (title, figures(g), None)
        })
        .collect();
    let [comparison, records, server] = rest else {
        return out;
    };
    if !comparison.is_empty() {
        out.push(("Runs side by side".into(), figures(comparison), None));
    }
    if inputs.is_empty() {
        return out;
    }
    let no_records = inputs
        .iter()
        .flat_map(|i| &i.runs)
        .all(|r| r.requests.is_empty());
    out.push((
        "Requests".into(),
        figures(records),
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
    out.push((
        "Server metrics per time slice".into(),
        figures(server),
        server_note,
    ));
    out
}

/// Requests at most in a swim lane drawn into the report (a larger run's is left to
/// `ringperf analyze swim-lane`, whose picture has no such bound).
const SWIM_LANE_MAX_REQUESTS: usize = 5_000;

/// The swim-lane sections of the multi-turn runs (each input's first run whose sessions have
/// more than one turn), their pictures written under `plots/` as `swim_lane-<n>.png` / `.svg`.
fn swim_lanes(inputs: &[Input], plots_dir: &Path) -> Result<String, PlotError> {
    let mut out = String::new();
    for (n, input) in inputs.iter().enumerate() {
        let Some(run) = input.runs.first() else {
            continue;
        };
        let Ok(sl) = swim_lane::load(&run.dir, None) else {
            continue;
        };
        let requests: usize = sl.sessions.iter().map(|s| s.turns.len()).sum();
        if !sl.sessions.iter().any(|s| s.turns.len() > 1) || requests > SWIM_LANE_MAX_REQUESTS {
            continue;
        }
        let id = format!("swim_lane-{n}");
        let draw = |e: swim_lane::SwimLaneError| PlotError::Swim(e.to_string());
        let svg = swim_draw::svg(&sl, None).map_err(draw)?;
        write(&plots_dir.join(format!("{id}.svg")), svg.as_bytes())?;
        write(
            &plots_dir.join(format!("{id}.png")),
            &swim_draw::png(&sl, None).map_err(draw)?,
        )?;
        let note = format!(
            "{requests} requests of {} sessions; `ringperf analyze swim-lane {} --html` writes \
             the interactive viewer",
            sl.sessions.len(),
            run.dir.display()
        );
        out.push_str(&html::swim_section(&input.label, &id, &svg, "plots", &note));
    }
    Ok(out)
}

/// The directories a directory of shards stands for (`deploy/local-shards.sh`'s base, or any
/// directory holding shards' artifact directories: each with `shard.json`, or `sweep_shard.json`
/// for a sharded sweep, and `merged/` from `ringperf merge`): for a run, `merged/` and every
/// shard, drawn side by side; for a sweep, `merged/` alone when it is there (each shard is a
/// sweep of its share), else every shard. Empty for any other directory.
fn shard_parts(dir: &Path) -> Vec<PathBuf> {
    let mut shards: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("shard.json").is_file() || p.join("sweep_shard.json").is_file())
        .collect();
    if shards.is_empty() {
        return shards;
    }
    shards.sort();
    let merged = dir.join("merged");
    let sweep = shards.iter().any(|p| p.join("sweep_shard.json").is_file());
    match (merged.is_dir(), sweep) {
        (true, true) => vec![merged],
        (true, false) => std::iter::once(merged).chain(shards).collect(),
        (false, _) => shards,
    }
}

/// Reads the directories, draws every chart and writes the report into `output` (default: the
/// first usable directory). A sweep or search directory (AIPerf's layout) is drawn as one.
pub fn plot(dirs: &[PathBuf], output: Option<&Path>) -> Result<Report, PlotError> {
    let mut inputs: Vec<Input> = Vec::new();
    let mut sweeps: Vec<Sweep> = Vec::new();
    let mut skipped = Vec::new();
    // The report goes into the first usable directory given (in the order given).
    let mut first: Option<&PathBuf> = None;
    let mut read = |d: &Path| -> Result<(), InputError> {
        if sweep::is_sweep(d) {
            sweep::read_sweep(d).map(|s| sweeps.push(s))
        } else {
            inputs::read_input(d).map(|i| inputs.push(i))
        }
    };
    for d in dirs {
        match read(d) {
            Ok(()) => {
                first.get_or_insert(d);
            }
            Err(e) => {
                // A directory of shards stands for the merged run and its shards.
                let parts = shard_parts(d);
                let mut any = false;
                for p in &parts {
                    match read(p) {
                        Ok(()) => any = true,
                        Err(e) => skipped.push(e),
                    }
                }
                if any {
                    first.get_or_insert(d);
                } else {
                    skipped.push(e);
                }
            }
        }
    }
    let Some(first) = first else {
        return Err(PlotError::NoUsableInput(skipped));
    };
    let out_dir = output.map_or_else(|| first.clone(), Path::to_path_buf);
    // Side by side: the directories given, not a sweep's variations (its own charts have them).
    let multi = inputs.len() > 1 || inputs.iter().any(|i| i.aggregate.is_some());
    let comparison = if multi {
        charts::comparison_charts(&inputs)
    } else {
        Vec::new()
    };
    // A sweep's variations with run directories: their requests are drawn as any run's.
    for s in &sweeps {
        for v in &s.variations {
            if let Some(Ok(mut i)) = v.run_dir.as_deref().map(inputs::read_input) {
                i.label = v.label.clone();
                inputs.push(i);
            }
        }
    }
    let plots_dir = out_dir.join("plots");
    std::fs::create_dir_all(&plots_dir).map_err(|e| PlotError::Write(plots_dir.clone(), e))?;

    let mut groups: Vec<Vec<Chart>> = sweeps.iter().map(sweep_charts::sweep_charts).collect();
    groups.push(comparison);
    let (server, left_out) = charts::server_metric_charts(&inputs);
    if inputs.is_empty() {
        groups.extend([Vec::new(), Vec::new()]);
    } else {
        groups.extend([charts::record_charts(&inputs), server]);
    }
    unique_ids(&mut groups);

    let mut svgs: Vec<(String, String)> = Vec::new();
    for chart in groups.iter().flatten() {
        let svg = render::svg(chart).map_err(PlotError::Render)?;
        let png = render::png(chart).map_err(PlotError::Render)?;
        write(&plots_dir.join(format!("{}.svg", chart.id)), svg.as_bytes())?;
        write(&plots_dir.join(format!("{}.png", chart.id)), &png)?;
        svgs.push((chart.id.clone(), svg));
    }
    let lanes = swim_lanes(&inputs, &plots_dir)?;
    let sections = sections(&inputs, &sweeps, &groups, &svgs, left_out);
    let all: Vec<Chart> = groups.iter().flatten().cloned().collect();
    let data = html::data(&inputs, &sweeps, &all);
    let page = html::page(&inputs, &sweeps, &sections, &data, "plots", &lanes);
    let html_path = out_dir.join(REPORT_FILE);
    write(&html_path, page.as_bytes())?;
    Ok(Report {
        html: html_path,
        plots_dir,
        charts: all.len(),
        skipped,
    })
}

/// `ringperf plot DIR... [-o OUT]`: plots `dirs` into `output` (default: the first directory),
/// and prints what was written and the directories skipped.
pub fn run(dirs: &[PathBuf], output: Option<&Path>) -> Result<Report, PlotError> {
    let report = plot(dirs, output)?;
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
