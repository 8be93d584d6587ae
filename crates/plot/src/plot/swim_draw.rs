//! The swim-lane picture (AIPerf's `swim_lane.png`): above, one lane per session tree in its
//! slot, each request a bar, the gaps between a session's requests shaded, a black tick where a
//! slot takes a new session, the ramp-done and benchmark-end lines; below, the requests in
//! flight (filled), the idle sessions, the slot count and the target concurrency.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::swim_lane::{SwimLane, SwimLaneError};

/// matplotlib's `tab20` colours, in order: one per lane, cycling.
const TAB20: [(u8, u8, u8); 20] = [
    (31, 119, 180),
    (174, 199, 232),
    (255, 127, 14),
    (255, 187, 120),
    (44, 160, 44),
    (152, 223, 138),
    (214, 39, 40),
    (255, 152, 150),
    (148, 103, 189),
    (197, 176, 213),
    (140, 86, 75),
    (196, 156, 148),
    (227, 119, 194),
    (247, 182, 210),
    (127, 127, 127),
    (199, 199, 199),
    (188, 189, 34),
    (219, 219, 141),
    (23, 190, 207),
    (158, 218, 229),
];

/// Width of the picture, pixels.
const WIDTH: u32 = 1800;
/// Height of the concurrency panel, pixels.
const CONC_HEIGHT: u32 = 300;

/// The picture's size for `sl`: the lanes get up to 18 pixels a row, at least 300 in all.
pub fn size(sl: &SwimLane) -> (u32, u32) {
    let rows = layout(sl).2 as u32;
    let swim = (rows * 18).clamp(300, 4000) + 90;
    (WIDTH, swim + CONC_HEIGHT)
}

/// Rows of each slot (the most any of its lanes needs), their first row, and all rows.
fn layout(sl: &SwimLane) -> (Vec<usize>, Vec<usize>, usize) {
    let n_slots = sl.lanes.iter().map(|l| l.slot + 1).max().unwrap_or(1);
    let mut rows = vec![1usize; n_slots];
    for l in &sl.lanes {
        rows[l.slot] = rows[l.slot].max(l.rows);
    }
    let mut offset = vec![0usize; n_slots];
    for s in 1..n_slots {
        offset[s] = offset[s - 1] + rows[s - 1];
    }
    let total = offset[n_slots - 1] + rows[n_slots - 1];
    (rows, offset, total)
}

type DrawResult = Result<(), SwimLaneError>;

fn err<E: std::fmt::Display>(e: E) -> SwimLaneError {
    SwimLaneError::Draw(e.to_string())
}

/// Draws `sl` on `root` (`target`: the `-c` line).
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sl: &SwimLane,
    target: Option<u64>,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (_, h) = root.dim_in_pixel();
    let (top, bottom) = root.split_vertically(h.saturating_sub(CONC_HEIGHT));
    let t_max = sl
        .sessions
        .iter()
        .flat_map(|s| &s.turns)
        .map(|t| (t.end_ns as f64 - sl.t0_ns as f64) / 1e9)
        .fold(0.0f64, f64::max);
    let x_end = (t_max * 1.01).max(1.0);
    lanes_panel(&top, sl, x_end)?;
    concurrency_panel(&bottom, sl, x_end, target)?;
    root.present().map_err(err)
}

fn lanes_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    sl: &SwimLane,
    x_end: f64,
) -> DrawResult {
    let (slot_rows, offset, total) = layout(sl);
    let n_sub = sl.sessions.iter().filter(|s| s.is_sub()).count();
    let counts = if n_sub > 0 {
        format!("{} sessions + {n_sub} subagents", sl.sessions.len() - n_sub)
    } else {
        format!("{} sessions", sl.sessions.len())
    };
    let caption = format!("{}  —  {counts} across {} slots", sl.run, slot_rows.len());
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_end, (total as f64 - 0.5)..-0.5)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .y_desc("Session Slot")
        .y_labels(slot_rows.len().min(30))
        .y_label_formatter(&|y| {
            let row = y.round().max(0.0) as usize;
            offset
                .iter()
                .position(|&o| o == row)
                .map(|s| s.to_string())
                .unwrap_or_default()
        })
        .draw()
        .map_err(err)?;
    let secs = |ns: u64| (ns as f64 - sl.t0_ns as f64) / 1e9;
    let bar = 0.35;
    let rect = |x0: f64, x1: f64, y0: f64, y1: f64, c: RGBAColor| {
        Rectangle::new([(x0, y0), (x1, y1)], c.filled())
    };
    // Slot time with no session in it.
    for (slot, &rows) in slot_rows.iter().enumerate() {
        let mut spans: Vec<(f64, f64)> = sl
            .lanes
            .iter()
            .filter(|l| l.slot == slot)
            .map(|l| (secs(l.span.0), secs(l.span.1)))
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut free = Vec::new();
        let mut at = 0.0;
        for (s, e) in spans {
            if s > at {
                free.push((at, s));
            }
            at = at.max(e);
        }
        free.push((at, x_end));
        let (y0, y1) = (
            offset[slot] as f64 - bar,
            (offset[slot] + rows - 1) as f64 + bar,
        );
        chart
            .draw_series(
                free.into_iter()
                    .map(|(a, b)| rect(a, b, y0, y1, RGBColor(240, 240, 240).to_rgba())),
            )
            .map_err(err)?;
    }
    for (i, l) in sl.lanes.iter().enumerate() {
        let (r, g, b) = TAB20[i % TAB20.len()];
        for m in &l.members {
            let s = &sl.sessions[m.session];
            let base = (offset[l.slot] + m.row0) as f64;
            let idle = RGBColor(r, g, b).mix(if m.is_sub { 0.15 } else { 0.25 });
            let merged = s.merged_active();
            let gaps = merged.windows(2).map(|w| {
                rect(
                    secs(w[0].1),
                    secs(w[1].0),
                    base - bar,
                    base + (m.rows - 1) as f64 + bar,
                    idle,
                )
            });
            chart.draw_series(gaps).map_err(err)?;
            let fill = RGBColor(r, g, b).mix(if m.is_sub { 0.55 } else { 1.0 });
            let bars = s.turns.iter().zip(&m.depths).map(|(t, &d)| {
                let y = base + d as f64;
                rect(secs(t.start_ns), secs(t.end_ns), y - bar, y + bar, fill)
            });
            chart.draw_series(bars).map_err(err)?;
        }
    }
    // A slot's later lanes start with a black tick.
    for slot in 0..slot_rows.len() {
        let mut starts: Vec<f64> = sl
            .lanes
            .iter()
            .filter(|l| l.slot == slot)
            .map(|l| secs(l.span.0))
            .collect();
        starts.sort_by(f64::total_cmp);
        let (y0, y1) = (
            offset[slot] as f64 - bar,
            (offset[slot] + slot_rows[slot] - 1) as f64 + bar,
        );
        let ticks = starts
            .into_iter()
            .skip(1)
            .map(|x| PathElement::new(vec![(x, y0), (x, y1)], BLACK.stroke_width(2)));
        chart.draw_series(ticks).map_err(err)?;
    }
    let y_span = (-0.5, total as f64 - 0.5);
    vertical_lines(&mut chart, sl, y_span)
}

fn vertical_lines<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    sl: &SwimLane,
    (y0, y1): (f64, f64),
) -> DrawResult {
    for (x, color, label) in [
        (sl.ramp_s, RGBColor(255, 165, 0), "Ramp done"),
        (sl.bench_s, RGBColor(220, 0, 0), "Benchmark end"),
    ] {
        let Some(x) = x else {
            continue;
        };
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, y0), (x, y1)],
                color.stroke_width(2),
            )))
            .map_err(err)?
            .label(format!("{label} ({x:.0}s)"))
            .legend(move |(a, b)| {
                PathElement::new(vec![(a, b), (a + 16, b)], color.stroke_width(2))
            });
    }
    Ok(())
}

fn concurrency_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    sl: &SwimLane,
    x_end: f64,
    target: Option<u64>,
) -> DrawResult {
    let (active, idle) = sl.concurrency();
    let n_slots = sl.lanes.iter().map(|l| l.slot + 1).max().unwrap_or(0) as f64;
    let peak = active.vals.iter().fold(0.0f64, |m, &v| m.max(v));
    let y_top = (peak * 1.15)
        .max(n_slots * 1.15)
        .max(target.unwrap_or(0) as f64 * 1.15)
        .max(1.0);
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_end, 0.0..y_top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc("Time (seconds)")
        .y_desc("Sessions")
        .draw()
        .map_err(err)?;
    let steps = |ts: &[f64], vs: &[f64]| -> Vec<(f64, f64)> {
        let mut pts = vec![(0.0, 0.0)];
        for (&t, &v) in ts.iter().zip(vs) {
            let last = pts.last().map_or(0.0, |p| p.1);
            pts.push((t, last));
            pts.push((t, v));
        }
        pts.push((x_end, pts.last().map_or(0.0, |p| p.1)));
        pts
    };
    let blue = RGBColor(33, 150, 243);
    let active_pts = steps(&active.ts, &active.vals);
    let mut area = active_pts.clone();
    area.push((x_end, 0.0));
    chart
        .draw_series(std::iter::once(Polygon::new(area, blue.mix(0.3).filled())))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(active_pts, blue))
        .map_err(err)?
        .label(format!("Active requests (peak {})", peak as i64))
        .legend(move |(a, b)| {
            Rectangle::new([(a, b - 5), (a + 16, b + 5)], blue.mix(0.3).filled())
        });
    let gray = RGBColor(153, 153, 153);
    chart
        .draw_series(LineSeries::new(steps(&idle.ts, &idle.vals), gray))
        .map_err(err)?
        .label("Idle sessions (between turns)")
        .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 16, b)], gray));
    let hline =
        |y: f64, c: RGBColor| LineSeries::new(vec![(0.0, y), (x_end, y)], c.stroke_width(2));
    let red = RGBColor(220, 0, 0);
    chart
        .draw_series(hline(n_slots, red))
        .map_err(err)?
        .label(format!("Slot count ({})", n_slots as i64))
        .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 16, b)], red));
    if let Some(c) = target {
        let green = RGBColor(0, 150, 0);
        chart
            .draw_series(hline(c as f64, green))
            .map_err(err)?
            .label(format!("Target concurrency ({c})"))
            .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 16, b)], green));
    }
    vertical_lines(&mut chart, sl, (0.0, y_top))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)
}

/// The picture as PNG bytes.
///
/// # Errors
/// plotters or the PNG encoder failed.
pub fn png(sl: &SwimLane, target: Option<u64>) -> Result<Vec<u8>, SwimLaneError> {
    super::render::ensure_font().map_err(err)?;
    let (w, h) = size(sl);
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root, sl, target)?;
    }
    super::render::encode_png(&rgb, w, h).map_err(err)
}

/// The picture as an SVG document.
///
/// # Errors
/// plotters failed.
pub fn svg(sl: &SwimLane, target: Option<u64>) -> Result<String, SwimLaneError> {
    super::render::ensure_font().map_err(err)?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(sl)).into_drawing_area();
        draw(&root, sl, target)?;
    }
    Ok(out)
}
