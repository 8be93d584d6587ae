//! Drawing a `Chart` with plotters: into an SVG string (text as `<text>` elements) and into an
//! RGB buffer encoded as PNG. Bitmap text is rasterised by ab_glyph from DejaVu Sans Mono,
//! registered from the bytes compiled into the binary, so no system font is needed.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::charts::{CHOSEN_RGB, Chart, Kind, THRESHOLD_RGB};

/// Width and height of every chart, in pixels.
pub const SIZE: (u32, u32) = (960, 540);

static FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSansMono.ttf");

/// Why a chart was not drawn; the message is the cause's own.
#[derive(Debug)]
pub enum RenderError {
    /// The font compiled into the binary was refused by plotters.
    Font,
    /// plotters failed drawing (its backend's error).
    Draw(Box<dyn std::error::Error + Send + Sync>),
    /// The PNG encoder failed.
    Png(png::EncodingError),
}

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderError::Font => f.write_str("the embedded font cannot be read"),
            RenderError::Draw(e) => write!(f, "{e}"),
            RenderError::Png(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RenderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RenderError::Font => None,
            RenderError::Draw(e) => Some(e.as_ref()),
            RenderError::Png(e) => Some(e),
        }
    }
}

fn register_font() -> Result<(), RenderError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if registered {
        Ok(())
    } else {
        Err(RenderError::Font)
    }
}

/// The stroke width of a threshold line, in pixels (other lines have 2, the axes 1).
pub const THRESHOLD_WIDTH: u32 = 3;

/// The radius of the chosen point's ring, in pixels (data points have 2 or 3).
pub const CHOSEN_RADIUS: u32 = 9;

/// The radius of an excluded point's hollow circle, in pixels.
pub const EXCLUDED_RADIUS: u32 = 5;

/// The points' labels: font size, and the box one character and one line take, in pixels (the
/// font is monospaced: DejaVu Sans Mono advances 0.6 em).
const LABEL_FONT: u32 = 13;
const LABEL_CHAR_W: i32 = 8;
const LABEL_LINE_H: i32 = 15;

/// Where each label's top-left corner goes, given its point (pixels) and its length in
/// characters: right of the point and just above it; when that box meets a label placed before,
/// one line lower, then one higher, two lower, … (at most 31 places, then the last one tried).
fn place_labels(anchors: &[((i32, i32), usize)]) -> Vec<(i32, i32)> {
    let mut boxes: Vec<(i32, i32, i32, i32)> = Vec::with_capacity(anchors.len());
    let mut out = Vec::with_capacity(anchors.len());
    for &((x, y), chars) in anchors {
        let w = LABEL_CHAR_W * i32::try_from(chars).unwrap_or(i32::MAX / LABEL_CHAR_W / 2);
        let left = x + 6;
        let mut top = y - LABEL_LINE_H - 2;
        for k in 0..31 {
            // 0, +1, -1, +2, -2, … lines from the first place.
            let lines = if k % 2 == 1 { k / 2 + 1 } else { -(k / 2) };
            top = y - LABEL_LINE_H - 2 + lines * LABEL_LINE_H;
            let clear = boxes.iter().all(|&(l, t, r, b)| {
                left >= r || left + w <= l || top >= b || top + LABEL_LINE_H <= t
            });
            if clear {
                break;
            }
        }
        boxes.push((left, top, left + w, top + LABEL_LINE_H));
        out.push((left, top));
    }
    out
}

fn rgb((r, g, b): (u8, u8, u8)) -> RGBAColor {
    RGBColor(r, g, b).to_rgba()
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), RenderError>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| RenderError::Draw(Box::new(e));
    root.fill(&WHITE).map_err(err)?;
    let ((x0, x1), (y0, y1)) = chart.ranges();
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    let points_total: usize = chart.series.iter().map(|s| s.points.len()).sum();
    let radius = if points_total > 2000 { 2 } else { 3 };
    let mut labels: Vec<((i32, i32), &str)> = Vec::new();
    for (i, s) in chart.series.iter().enumerate() {
        let color = match (s.kind, s.color) {
            (Kind::Threshold, _) => rgb(THRESHOLD_RGB),
            (Kind::Chosen, _) => rgb(CHOSEN_RGB),
            (_, Some(c)) => rgb(c),
            (Kind::Line | Kind::Points | Kind::Excluded, None) => Palette99::pick(i).to_rgba(),
        };
        let style = ShapeStyle::from(color).stroke_width(2);
        let drawn = match s.kind {
            Kind::Threshold => ctx
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    style.stroke_width(THRESHOLD_WIDTH),
                ))
                .map_err(err)?,
            Kind::Chosen => ctx
                .draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, CHOSEN_RADIUS, style.stroke_width(3))),
                )
                .map_err(err)?,
            Kind::Line => ctx
                .draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(err)?,
            Kind::Points => ctx
                .draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, radius, color.filled())),
                )
                .map_err(err)?,
            Kind::Excluded => ctx
                .draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, EXCLUDED_RADIUS, style)),
                )
                .map_err(err)?,
        };
        let hollow = s.kind == Kind::Excluded;
        drawn.label(s.name.as_str()).legend(move |(x, y)| {
            let fill = if hollow {
                ShapeStyle::from(color).stroke_width(2)
            } else {
                color.filled()
            };
            Rectangle::new([(x, y - 5), (x + 14, y + 5)], fill)
        });
        for (k, &(x, y)) in s.points.iter().enumerate() {
            if let Some(&(lo, hi)) = s.y_err.get(k).filter(|e| e.0 != e.1) {
                ctx.draw_series(std::iter::once(PathElement::new(
                    vec![(x, lo), (x, hi)],
                    style,
                )))
                .map_err(err)?;
            }
            if let Some(&(lo, hi)) = s.x_err.get(k).filter(|e| e.0 != e.1) {
                ctx.draw_series(std::iter::once(PathElement::new(
                    vec![(lo, y), (hi, y)],
                    style,
                )))
                .map_err(err)?;
            }
            if let Some(text) = s.labels.get(k) {
                labels.push((ctx.backend_coord(&(x, y)), text.as_str()));
            }
        }
    }
    // The points' labels last, over every series, each placed clear of those before it.
    let anchors: Vec<((i32, i32), usize)> = labels
        .iter()
        .map(|(p, t)| (*p, t.chars().count()))
        .collect();
    for (&(_, text), at) in labels.iter().zip(place_labels(&anchors)) {
        root.draw(&Text::new(
            text,
            at,
            ("sans-serif", LABEL_FONT).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, RenderError> {
    register_font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, chart)?;
    }
    Ok(out)
}

/// Registers the embedded font with plotters (once), for drawings made elsewhere.
///
/// # Errors
/// plotters refused the font.
pub fn ensure_font() -> Result<(), RenderError> {
    register_font()
}

/// The chart as a PNG file's bytes.
pub fn png(chart: &Chart) -> Result<Vec<u8>, RenderError> {
    register_font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, chart)?;
    }
    encode_png(&rgb, w, h)
}

/// An RGB buffer of `w` × `h` pixels as PNG bytes.
///
/// # Errors
/// The PNG encoder failed.
pub fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, RenderError> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(RenderError::Png)?;
    writer.write_image_data(rgb).map_err(RenderError::Png)?;
    writer.finish().map_err(RenderError::Png)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::charts::Series;

    /// `(x, y, text)` of every `<text>` element of an SVG whose text starts with `prefix`.
    fn texts(svg: &str, prefix: &str) -> Vec<(i32, i32, String)> {
        let attr = |el: &str, name: &str| -> i32 {
            let key = format!(" {name}=\"");
            let rest = &el[el.find(&key).expect("attribute") + key.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        };
        svg.split("<text")
            .skip(1)
            .filter_map(|el| {
                let body = el[el.find('>').unwrap() + 1..el.find("</text>").unwrap()].trim();
                body.starts_with(prefix)
                    .then(|| (attr(el, "x"), attr(el, "y"), body.to_string()))
            })
            .collect()
    }

    /// Four variations at the same place and two more a hair apart, in two series: their six
    /// labels are drawn with no two boxes meeting (they were all drawn on their points, one over
    /// the other).
    #[test]
    fn labels_of_close_points_do_not_overlap() {
        let mut a = Series::new("within SLA".into(), Kind::Points, Vec::new());
        let mut b = Series::new("outside SLA".into(), Kind::Points, Vec::new());
        for (k, p) in [(10.0, 100.0), (10.0, 100.0), (10.0, 100.0), (10.0, 100.0)]
            .into_iter()
            .enumerate()
        {
            a.points.push(p);
            a.labels.push(format!("variation {k}"));
        }
        for (k, p) in [(10.01, 100.1), (10.02, 99.9)].into_iter().enumerate() {
            b.points.push(p);
            b.labels.push(format!("variation {}", k + 4));
        }
        // A far point sets the axes so that the six are within a few pixels of each other.
        b.points.push((50.0, 10.0));
        b.labels.push("variation far".into());
        let chart = Chart {
            id: "t".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![a, b],
        };
        let svg = svg(&chart).unwrap();
        let t = texts(&svg, "variation ");
        assert_eq!(t.len(), 7, "{t:?}");
        let w = |s: &str| LABEL_CHAR_W * s.chars().count() as i32;
        for (i, p) in t.iter().enumerate() {
            for q in &t[i + 1..] {
                let apart = p.0 + w(&p.2) <= q.0
                    || q.0 + w(&q.2) <= p.0
                    || p.1 + LABEL_LINE_H <= q.1
                    || q.1 + LABEL_LINE_H <= p.1;
                assert!(apart, "{p:?} and {q:?} overlap");
            }
        }
    }

    /// Labels that do not meet stay at their first place: right of and just above the point.
    #[test]
    fn labels_apart_keep_their_place() {
        let placed = place_labels(&[((100, 100), 5), ((400, 300), 5)]);
        assert_eq!(placed, [(106, 83), (406, 283)]);
    }
}
