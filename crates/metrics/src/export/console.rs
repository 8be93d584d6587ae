//! The console table (docs/output-formats.md) as text, like AIPerf's Rich table: heavy header
//! box, right-justified cells, `{:,.2f}` numbers, `N/A` for missing stats; and the footer lines.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::RunInfo;
use crate::aggregate::registry::{ConsoleGroup, MetricId, flags};
use crate::aggregate::{MetricResult, ResultValue, Summary};

/// Column headers after `Metric`.
pub const STAT_COLUMNS: [&str; 7] = ["avg", "min", "max", "p99", "p90", "p50", "std"];

/// Headers longer than this put `(unit)` on a second line.
const WRAP_HEADER_AT: usize = 30;

/// One table row: the label (one or two lines) and the seven stat cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `Header (unit)`, possibly with a newline before `(unit)`.
    pub label: String,
    /// avg, min, max, p99, p90, p50, std in display units; `None` prints `N/A`.
    pub cells: [Option<f64>; 7],
}

/// Python's `f"{v:,.2f}"`.
pub fn fmt_thousands(v: f64) -> String {
    if !v.is_finite() {
        return super::csv::fmt2(v);
    }
    let s = format!("{:.2}", v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, "00"));
    let mut grouped = String::with_capacity(int.len() + int.len() / 3 + 4);
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if v.is_sign_negative() && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        "-"
    } else {
        ""
    };
    format!("{sign}{grouped}.{frac}")
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Renders one titled table.
pub fn render_table(title: &str, rows: &[Row]) -> String {
    let body: Vec<(Vec<String>, Vec<String>)> = rows
        .iter()
        .map(|r| {
            let label = r.label.split('\n').map(String::from).collect();
            let cells = r
                .cells
                .iter()
                .map(|c| c.map_or("N/A".into(), fmt_thousands))
                .collect();
            (label, cells)
        })
        .collect();
    render_grid(title, &STAT_COLUMNS, &body)
}

/// Renders one titled table of `columns` after `Metric`: each body row is its label's lines and
/// one cell per column.
fn render_grid(title: &str, columns: &[&str], body: &[(Vec<String>, Vec<String>)]) -> String {
    let mut widths = vec![width("Metric")];
    widths.extend(columns.iter().map(|c| width(c)));
    for (label, cells) in body {
        for l in label {
            widths[0] = widths[0].max(width(l));
        }
        for (i, c) in cells.iter().enumerate() {
            widths[i + 1] = widths[i + 1].max(width(c));
        }
    }
    let border = |l: &str, fill: &str, mid: &str, r: &str| {
        let segs: Vec<String> = widths.iter().map(|w| fill.repeat(w + 2)).collect();
        format!("{l}{}{r}\n", segs.join(mid))
    };
    let line = |sep: &str, cells: &[&str]| {
        let segs: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!(" {c:>w$} "))
            .collect();
        format!("{sep}{}{sep}\n", segs.join(sep))
    };
    let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
    let mut out = String::new();
    let pad = total.saturating_sub(width(title)) / 2;
    let _ = writeln!(out, "{}{title}", " ".repeat(pad));
    out.push_str(&border("┏", "━", "┳", "┓"));
    let mut head = vec!["Metric"];
    head.extend(columns);
    out.push_str(&line("┃", &head));
    out.push_str(&border("┡", "━", "╇", "┩"));
    let blank = vec![""; columns.len()];
    for (label, cells) in body {
        for (i, l) in label.iter().enumerate() {
            let mut row: Vec<&str> = vec![l];
            if i == 0 {
                row.extend(cells.iter().map(String::as_str));
            } else {
                row.extend(&blank);
            }
            out.push_str(&line("│", &row));
        }
    }
    out.push_str(&border("└", "─", "┴", "┘"));
    out
}

/// The GPU sections' preamble and AIPerf's `GPU Power Efficiency (NVIDIA)` table: the
/// platform panel (the GPUs' figures depend on their vendor's collector), then the
/// energy-efficiency results in display order with their one `avg` column. Empty without GPUs.
pub fn render_gpu_power(summary: &Summary, platforms: &[&str]) -> String {
    if platforms.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n");
    out.push_str(&render_panel(
        "GPU Telemetry Platform",
        &[
            &format!("Platform: {}", platforms.join(", ")),
            "Metric semantics are platform-specific; cross-platform comparisons require \
             workload and collector validation.",
        ],
    ));
    let rows = rows_of(summary, ConsoleGroup::GpuPowerEfficiencyNvidia);
    if !rows.is_empty() {
        let body: Vec<(Vec<String>, Vec<String>)> = rows
            .iter()
            .map(|r| {
                let label = r.label.split('\n').map(String::from).collect();
                let avg = r.cells[0].map_or("N/A".into(), fmt_thousands);
                (label, vec![avg])
            })
            .collect();
        out.push('\n');
        out.push_str(&render_grid(
            "GPU Power Efficiency (NVIDIA)",
            &["avg"],
            &body,
        ));
    }
    out
}

/// A rounded box around `lines`, two spaces of padding each side, the title centred in the top
/// border (Rich's `Panel(expand=False)`).
fn render_panel(title: &str, lines: &[&str]) -> String {
    let inner = lines.iter().map(|l| width(l)).max().unwrap_or(0) + 4;
    let label = format!(" {title} ");
    let left = inner.saturating_sub(width(&label)) / 2;
    let right = inner.saturating_sub(width(&label) + left);
    let mut out = format!("╭{}{label}{}╮\n", "─".repeat(left), "─".repeat(right));
    for l in lines {
        let pad = inner - 4 - width(l);
        let _ = writeln!(out, "│  {l}{}  │", " ".repeat(pad));
    }
    let _ = writeln!(out, "╰{}╯", "─".repeat(inner));
    out
}

/// `"<Header> (<unit>)"`, or with a newline before `(unit)` for headers over 30 chars.
pub fn row_label(header: &str, unit: &str) -> String {
    let sep = if width(header) > WRAP_HEADER_AT {
        '\n'
    } else {
        ' '
    };
    format!("{header}{sep}({unit})")
}

fn shown_on_console(r: &MetricResult, group: ConsoleGroup) -> bool {
    let d = r.def;
    !r.adjusted
        && d.console_group == group
        && !d.has(flags::ERROR_ONLY | flags::INTERNAL | flags::EXPERIMENTAL)
}

/// The rows of one console table: its group's shown results, in display order.
pub fn rows_of(summary: &Summary, group: ConsoleGroup) -> Vec<Row> {
    rows_where(summary, |r| shown_on_console(r, group))
}

/// The rows of the results `keep` picks, in display order.
pub(super) fn rows_where(summary: &Summary, keep: impl Fn(&MetricResult) -> bool) -> Vec<Row> {
    let mut picked: Vec<&MetricResult> = summary.results.iter().filter(|r| keep(r)).collect();
    picked.sort_by_key(|r| r.def.display_order.unwrap_or(u32::MAX));
    picked
        .into_iter()
        .map(|r| {
            let d = r.def;
            let cells = match &r.value {
                ResultValue::Scalar(v) => {
                    [Some(d.to_display(*v)), None, None, None, None, None, None]
                }
                ResultValue::Dist(s) => {
                    let c = |v: f64| Some(d.to_display(v));
                    [
                        c(s.avg),
                        c(s.min),
                        c(s.max),
                        c(s.pct[8]),
                        c(s.pct[6]),
                        c(s.pct[4]),
                        s.std.and_then(c),
                    ]
                }
                ResultValue::TimeWeighted(t) => {
                    [t.avg, t.min, t.max, t.p99, t.p90, t.p50, t.std].map(Some)
                }
                ResultValue::Share { avg, .. } => [Some(*avg), None, None, None, None, None, None],
            };
            Row {
                label: row_label(&r.header(), d.shown_unit().as_str()),
                cells,
            }
        })
        .collect()
}

/// The console export: the metrics tables and the warnings, what AIPerf's console exporters
/// print and `profile_export_console.txt` holds (no footer; see [`render_footer`]).
pub fn render_console(summary: &Summary, run: &RunInfo) -> String {
    let title = format!("ringperf | {}", run.metrics_title);
    let mut out = String::from("\n");
    // AIPerf prints the Effective and Active tables before its usage and main tables.
    for (group, suffix) in [
        (ConsoleGroup::Effective, ": Effective"),
        (ConsoleGroup::Active, ": Active"),
        (ConsoleGroup::Usage, ": Usage"),
        (ConsoleGroup::Default, ""),
    ] {
        let rows = rows_of(summary, group);
        if !rows.is_empty() {
            out.push('\n');
            out.push_str(&render_table(&format!("{title}{suffix}"), &rows));
        }
    }
    // AIPerf's speculative-decoding section: its table, then the pooled histogram's line.
    let rows = rows_of(summary, ConsoleGroup::SpecDecode);
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&render_table(&format!("{title}: Spec Decode"), &rows));
        if let Some(line) =
            crate::aggregate::spec_decode::histogram_line(&summary.spec_decode_histogram)
        {
            let _ = writeln!(out, "  {line}");
        }
    }
    out.push('\n');
    let total = summary.value(MetricId::RequestCount).unwrap_or(0.0)
        + summary.value(MetricId::ErrorRequestCount).unwrap_or(0.0);
    if let Some(n) = summary
        .value(MetricId::UsageDiscrepancyCount)
        .filter(|n| *n > 0.0)
    {
        let _ = writeln!(
            out,
            "Token Count Discrepancy Warning: {n} of {total} requests ({:.1}%) show a difference \
             exceeding the threshold between API-reported usage tokens and client-computed token \
             counts.",
            100.0 * n / total.max(1.0)
        );
    }
    if let Some(n) = summary
        .value(MetricId::OslMismatchCount)
        .filter(|n| *n > 0.0)
    {
        let _ = writeln!(
            out,
            "OSL Mismatch Warning: {n} of {total} requests generated an output length that differs \
             from the requested max_tokens beyond the threshold."
        );
    }
    out
}

/// The lines printed after the console export, never saved in the file: `CLI Command:`,
/// `Benchmark Duration:`, ringperf's dispatch-lag and client-health lines, one `<label>: <path>` line per entry of
/// `exports` (AIPerf's export labels, in its exporter order) and the cancellation note.
pub fn render_footer(summary: &Summary, run: &RunInfo, exports: &[(&str, PathBuf)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "CLI Command: {}", run.cli_command);
    let secs = summary
        .value(MetricId::BenchmarkDuration)
        .unwrap_or(run.end_wall_ns.saturating_sub(run.start_wall_ns) as f64)
        / 1e9;
    let cancelled = if run.was_cancelled {
        " (cancelled early)"
    } else {
        ""
    };
    let _ = writeln!(out, "Benchmark Duration: {secs:.2} sec{cancelled}");
    if let Some(l) = &summary.dispatch_lag {
        let _ = writeln!(
            out,
            "Dispatch Lag: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({}, {}, {})",
            l.p50_ns / 1e6,
            l.p99_ns / 1e6,
            l.max_ns / 1e6,
            plural(run.workers as u64, "worker"),
            run.io_driver,
            plural(run.ring_stalls, "ring stall")
        );
    }
    if let Some(l) = &summary.receive_lag {
        let _ = writeln!(
            out,
            "Receive Lag: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} events, user-space minus kernel stamp)",
            l.p50_ns / 1e6,
            l.p99_ns / 1e6,
            l.max_ns / 1e6,
            l.count
        );
    }
    if let Some(l) = &summary.kernel_rtt {
        let rtt = summary
            .result(MetricId::NetworkRtt)
            .map(|r| format!("{:.3} ms subtracted (network_rtt); ", r.avg() / 1e6))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Network RTT: {rtt}the connections' kernel estimate p50 {:.3} ms, p99 {:.3} ms, \
             max {:.3} ms ({} requests, TCP_INFO)",
            l.p50_ns / 1e6,
            l.p99_ns / 1e6,
            l.max_ns / 1e6,
            l.count
        );
    }
    if let Some(h) = &run.client_health {
        let _ = writeln!(out, "{}", h.line());
    } else if let Some(merge) = &run.merge {
        let _ = writeln!(out, "{}", merge.client_health().line());
    }
    for (label, path) in exports {
        let _ = writeln!(out, "{label}: {}", path.display());
    }
    if run.was_cancelled {
        out.push_str(
            "The profile run was cancelled early. Results shown may be incomplete or inaccurate.\n",
        );
    }
    out
}

/// `1 worker`, `2 workers`, `0 ring stalls`: a count and its noun, in the number it takes.
pub fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
