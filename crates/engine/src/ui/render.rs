//! The dashboard's screen, drawn from a [`DashView`]: a header with the phase's progress,
//! throughput over time, live latency percentiles, errors by kind, the client's own health,
//! the server's highlights and, when GPU telemetry is on, one line per GPU.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Row, Sparkline, Table};

use super::{GpuLive, ServerLive};
use ringperf_metrics::aggregate::live::{LiveSnapshot, Percentiles, RECENT};
// Milliseconds as the console tables print them (Python's `f"{v:,.2f}"`).
use ringperf_metrics::export::console::fmt_thousands as ms;

/// Everything one frame shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DashView {
    /// `warmup` / `profiling`, or `starting` before the first phase.
    pub phase: String,
    pub total: Option<u64>,
    pub duration_s: Option<f64>,
    pub elapsed_s: f64,
    pub client: LiveSnapshot,
    pub server: Vec<ServerLive>,
    /// `None`: GPU telemetry is off (no panel); `Some(empty)`: on, nothing read yet.
    pub gpus: Option<Vec<GpuLive>>,
    /// A stop was asked for (`q`, Ctrl-C, a signal, the error budget).
    pub stopping: bool,
    /// In a sweep, which variation runs (`variation 2 of 3: <label> · trial 1 of 2`): shown in
    /// the header's title.
    pub sweep: Option<String>,
}

/// Draws `v` over the whole frame.
pub fn draw(frame: &mut Frame<'_>, v: &DashView) {
    let gpu_rows = v.gpus.as_ref().map_or(0, |g| g.len().max(1) as u16 + 3);
    let server_rows = v.server.len().max(1) as u16 + 3;
    // On an 80 × 24 terminal with a GPU panel the throughput charts keep 4 rows; every other
    // panel its whole height, every label whole (tests: `at_80_by_24_no_label_is_cut`).
    let [header, rates, middle, bottom, gpus, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(4),
        Constraint::Length(7),
        Constraint::Length(server_rows),
        Constraint::Length(gpu_rows),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, v);
    draw_rates(frame, rates, &v.client);
    let [latency, right] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(middle);
    draw_latency(frame, latency, &v.client);
    draw_health(frame, right, &v.client);
    let [server, errors] =
        Layout::horizontal([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(bottom);
    draw_server(frame, server, &v.server);
    draw_errors(frame, errors, &v.client);
    if let Some(g) = &v.gpus {
        draw_gpus(frame, gpus, g);
    }
    let keys = if v.stopping {
        "stopping: requests in flight finish · q / Ctrl-C again: force quit"
    } else {
        "q / Ctrl-C: stop gracefully (again: force quit)"
    };
    frame.render_widget(
        Paragraph::new(keys).style(Style::default().fg(Color::DarkGray)),
        footer,
    );
}

fn boxed(title: &str) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(
        Line::from(format!(" {title} ")).style(Style::default().add_modifier(Modifier::BOLD)),
    )
}

/// `120/500 requests done, 3 failed, 12.3 s`, or `12.3/60 s, 120 requests done, 3 failed`.
pub fn progress_label(v: &DashView) -> (String, f64) {
    let c = &v.client;
    let failed = format!("{} failed", c.errors);
    match (v.total, v.duration_s) {
        (_, Some(d)) => (
            format!(
                "{} {:.1}/{d:.0} s, {} requests done, {failed}",
                v.phase, v.elapsed_s, c.done
            ),
            (v.elapsed_s / d).clamp(0.0, 1.0),
        ),
        (Some(n), None) => (
            format!(
                "{} {}/{n} requests done, {failed}, {:.1} s",
                v.phase, c.done, v.elapsed_s
            ),
            (c.done as f64 / n.max(1) as f64).clamp(0.0, 1.0),
        ),
        (None, None) => (
            format!(
                "{} {} requests done, {failed}, {:.1} s",
                v.phase, c.done, v.elapsed_s
            ),
            0.0,
        ),
    }
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, v: &DashView) {
    let (label, ratio) = progress_label(v);
    let title = v
        .sweep
        .as_ref()
        .map_or_else(|| "ringperf".to_string(), |s| format!("ringperf · {s}"));
    let gauge = Gauge::default()
        .block(boxed(&title))
        .gauge_style(Style::default().fg(Color::Green))
        .ratio(ratio)
        .label(label);
    frame.render_widget(gauge, area);
}

/// The last value of a per-second series, for the title (`—` before the first whole second).
fn last(series: &[u64]) -> String {
    series
        .last()
        .map_or_else(|| "—".to_string(), ToString::to_string)
}

fn draw_rates(frame: &mut Frame<'_>, area: Rect, c: &LiveSnapshot) {
    let [req, tok] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    // The newest seconds that fit (one column each, inside the borders).
    let fit = |s: &[u64], r: Rect| -> Vec<u64> {
        let w = r.width.saturating_sub(2) as usize;
        s[s.len().saturating_sub(w)..].to_vec()
    };
    frame.render_widget(
        Sparkline::default()
            .block(boxed(&format!("requests/s: {}", last(&c.requests_per_s))))
            .style(Style::default().fg(Color::Cyan))
            .data(fit(&c.requests_per_s, req)),
        req,
    );
    frame.render_widget(
        Sparkline::default()
            .block(boxed(&format!(
                "output tokens/s: {}",
                last(&c.tokens_per_s)
            )))
            .style(Style::default().fg(Color::Magenta))
            .data(fit(&c.tokens_per_s, tok)),
        tok,
    );
}

fn pct_row<'a>(name: &'a str, p: Option<Percentiles>) -> Row<'a> {
    match p {
        Some(p) => Row::new(vec![name.to_string(), ms(p.p50), ms(p.p90), ms(p.p99)]),
        None => Row::new(vec![name.to_string(), "—".into(), "—".into(), "—".into()]),
    }
}

fn draw_latency(frame: &mut Frame<'_>, area: Rect, c: &LiveSnapshot) {
    let n = c.latency_ms.map_or(0, |p| p.n);
    let rows = vec![
        pct_row("TTFT", c.ttft_ms),
        pct_row("ITL", c.itl_ms),
        pct_row("Request latency", c.latency_ms),
    ];
    // `Request latency` and three `12,345.67`: 45 columns, inside 60 % of 80.
    let table = Table::new(
        rows,
        [
            Constraint::Length(15),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(9),
        ],
    )
    .header(
        Row::new(vec!["ms", "p50", "p90", "p99"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(boxed(&format!("latency, last {} requests", n.min(RECENT))));
    frame.render_widget(table, area);
}

fn draw_health(frame: &mut Frame<'_>, area: Rect, c: &LiveSnapshot) {
    // One line per percentile: the two on one line did not fit 40 % of 80 columns.
    let lag = |pick: fn(&Percentiles) -> f64, name: &str| {
        c.dispatch_lag_ms.map_or_else(
            || format!("dispatch lag {name}: —"),
            |p| format!("dispatch lag {name}: {} ms", ms(pick(&p))),
        )
    };
    let lines = vec![
        Line::from(lag(|p| p.p50, "p50")),
        Line::from(lag(|p| p.p99, "p99")),
        Line::from(format!("ring stalls: {}", c.ring_stalls)),
        Line::from(format!("output tokens: {}", c.output_tokens)),
    ];
    frame.render_widget(Paragraph::new(lines).block(boxed("client")), area);
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.1}{unit}"))
}

fn draw_server(frame: &mut Frame<'_>, area: Rect, server: &[ServerLive]) {
    if server.is_empty() {
        frame.render_widget(
            Paragraph::new("no /metrics page read").block(boxed("server")),
            area,
        );
        return;
    }
    // The endpoint column as wide as the longest endpoint (a few columns at least), the
    // figures as wide as their headings or `1,234.50`.
    let endpoint_width = server
        .iter()
        .map(|s| short_endpoint(&s.endpoint).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, 40) as u16;
    let rows = server.iter().map(|s| {
        Row::new(vec![
            short_endpoint(&s.endpoint).to_string(),
            opt(s.waiting, ""),
            opt(s.running, ""),
            opt(s.kv_cache_pct, "%"),
            s.ttft_ms.map_or_else(|| "—".to_string(), ms),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(endpoint_width),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(vec![
            "endpoint", "waiting", "running", "KV cache", "TTFT ms",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(boxed("server"));
    frame.render_widget(table, area);
}

/// `http://10.0.0.5:8000/metrics` as `10.0.0.5:8000`: the scheme and the usual path add nothing.
pub fn short_endpoint(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.strip_suffix("/metrics").unwrap_or(rest)
}

fn draw_errors(frame: &mut Frame<'_>, area: Rect, c: &LiveSnapshot) {
    let lines: Vec<Line<'_>> = if c.errors_by_kind.is_empty() {
        vec![Line::from("none")]
    } else {
        // Counts right-aligned to the widest, one blank before the kind.
        let w = c
            .errors_by_kind
            .iter()
            .map(|(_, n)| n.to_string().len())
            .max()
            .unwrap_or(1);
        c.errors_by_kind
            .iter()
            .map(|(k, n)| Line::from(format!("{n:>w$} {k}")))
            .collect()
    };
    frame.render_widget(
        Paragraph::new(lines).block(boxed(&format!("errors: {}", c.errors))),
        area,
    );
}

fn draw_gpus(frame: &mut Frame<'_>, area: Rect, gpus: &[GpuLive]) {
    if gpus.is_empty() {
        frame.render_widget(
            Paragraph::new("no DCGM page read yet").block(boxed("GPUs")),
            area,
        );
        return;
    }
    let rows = gpus.iter().map(|g| {
        Row::new(vec![
            g.label.clone(),
            opt(g.power_w, " W"),
            opt(g.utilization_pct, "%"),
            opt(g.memory_used_gb, " GB"),
            opt(g.temperature_c, " °C"),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(16),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(vec!["GPU", "power", "util", "memory", "temp"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(boxed("GPUs"));
    frame.render_widget(table, area);
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
