//! `ringperf analyze-trace`: a mooncake trace's input / output length distributions, how much of
//! each prompt is shared with others, and the prefix-cache hit rate each request would see with
//! an unbounded cache, at a block size (docs/commands.md, "analyze-trace").
//!
//! The figures are AIPerf 0.13's trace analysis:
//! - a row's context length is `block_size` times the number of its blocks whose
//!   `(position, hash id)` pair occurs in more than one row (the whole `input_length` when every
//!   pair does); its unique prompt length is the rest of `input_length`;
//! - a row's hit rate is the share of its `hash_ids` before the first id no earlier row had;
//! - unique prefixes are the distinct leading runs `hash_ids[..i]`; the prefix reuse ratio is the
//!   share of all leading runs that occur in more than one row;
//! - prefix groups are the first blocks that begin two rows or more.
//!
//! A row without `input_length` counts as 0 tokens in, without `output_length` as 0 out.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::TraceToolError;
use super::stats::{MetricStats, exact_mean};

/// The report, as `--output-file` writes it (AIPerf's `AnalysisStats` keys, in its order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysisStats {
    pub total_requests: u64,
    pub unique_prefixes: u64,
    pub num_prefix_groups: u64,
    pub cache_hit_rate: f64,
    pub min_isl: u64,
    pub max_isl: u64,
    pub avg_isl: f64,
    pub min_osl: u64,
    pub max_osl: u64,
    pub avg_osl: f64,
    pub prefix_reuse_ratio: f64,
    pub isl_stats: Option<MetricStats>,
    pub osl_stats: Option<MetricStats>,
    pub context_length_stats: Option<MetricStats>,
    pub unique_prompt_length_stats: Option<MetricStats>,
    pub hit_rate_stats: Option<MetricStats>,
}

/// One row's lengths and blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceRow {
    pub input_length: u64,
    pub output_length: u64,
    pub hash_ids: Vec<i64>,
}

/// Reads the rows of a mooncake trace (blank lines skipped), the fields the analysis needs.
///
/// # Errors
/// The file cannot be read, or a line is not a JSON object with integer lengths and a list of
/// integer `hash_ids`: the error names the line and the field.
pub fn read_rows(path: &Path) -> Result<Vec<TraceRow>, TraceToolError> {
    let file = std::fs::File::open(path).map_err(|e| TraceToolError::io(path, e))?;
    let mut rows = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| TraceToolError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        rows.push(parse_row(path, i as u64 + 1, &line)?);
    }
    Ok(rows)
}

fn parse_row(path: &Path, line: u64, text: &str) -> Result<TraceRow, TraceToolError> {
    let bad = |field: &str, why: &str| TraceToolError::Row {
        path: path.to_path_buf(),
        line,
        field: field.to_string(),
        why: why.to_string(),
    };
    let value: Value = serde_json::from_str(text).map_err(|e| bad("", &e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(bad("", "expected a JSON object"));
    };
    let count = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| bad(key, "expected a non-negative integer")),
    };
    let hash_ids = match map.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| bad("hash_ids", "expected integers"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("hash_ids", "expected a list of integers")),
    };
    Ok(TraceRow {
        input_length: count("input_length")?,
        output_length: count("output_length")?,
        hash_ids,
    })
}

/// Analyses `rows` at `block_size` tokens a block.
pub fn analyze(rows: &[TraceRow], block_size: u64) -> AnalysisStats {
    let prefixes = Prefixes::of(rows);
    let mut pairs: HashMap<(usize, i64), u32> = HashMap::new();
    for row in rows {
        for (pos, &id) in row.hash_ids.iter().enumerate() {
            *pairs.entry((pos, id)).or_default() += 1;
        }
    }
    let mut context = Vec::with_capacity(rows.len());
    let mut unique = Vec::with_capacity(rows.len());
    for row in rows {
        let shared = row
            .hash_ids
            .iter()
            .enumerate()
            .filter(|&(pos, &id)| pairs[&(pos, id)] > 1)
            .count() as u64;
        let ctx = if row.hash_ids.is_empty() {
            0
        } else if shared == row.hash_ids.len() as u64 {
            row.input_length
        } else {
            shared * block_size
        };
        context.push(ctx as f64);
        // Signed: a trace whose shared blocks exceed its input length gives a negative rest.
        unique.push(row.input_length as f64 - ctx as f64);
    }
    let hit_rates = hit_rates(rows);
    let isl: Vec<f64> = rows.iter().map(|r| r.input_length as f64).collect();
    let osl: Vec<f64> = rows.iter().map(|r| r.output_length as f64).collect();
    // `statistics.mean` and `sum(ints) / len`: the exact mean, rounded once.
    let mean = exact_mean;
    AnalysisStats {
        total_requests: rows.len() as u64,
        unique_prefixes: prefixes.counts.len() as u64,
        num_prefix_groups: prefix_groups(rows),
        cache_hit_rate: mean(&hit_rates),
        min_isl: rows.iter().map(|r| r.input_length).min().unwrap_or(0),
        max_isl: rows.iter().map(|r| r.input_length).max().unwrap_or(0),
        avg_isl: mean(&isl),
        min_osl: rows.iter().map(|r| r.output_length).min().unwrap_or(0),
        max_osl: rows.iter().map(|r| r.output_length).max().unwrap_or(0),
        avg_osl: mean(&osl),
        prefix_reuse_ratio: prefixes.reuse_ratio(),
        isl_stats: MetricStats::of(&isl),
        osl_stats: MetricStats::of(&osl),
        context_length_stats: MetricStats::of(&context),
        unique_prompt_length_stats: MetricStats::of(&unique),
        hit_rate_stats: MetricStats::of(&hit_rates),
    }
}

/// Every distinct leading run of `hash_ids`, as a node of a trie keyed by (parent, id), and
/// how many rows begin with it.
struct Prefixes {
    counts: Vec<u64>,
}

impl Prefixes {
    fn of(rows: &[TraceRow]) -> Self {
        let mut nodes: HashMap<(usize, i64), usize> = HashMap::new();
        let mut counts: Vec<u64> = vec![0];
        for row in rows {
            let mut at = 0;
            for &id in &row.hash_ids {
                let next = counts.len();
                at = *nodes.entry((at, id)).or_insert(next);
                if at == next {
                    counts.push(0);
                }
                counts[at] += 1;
            }
        }
        counts.remove(0);
        Self { counts }
    }

    fn reuse_ratio(&self) -> f64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let reused: u64 = self.counts.iter().filter(|&&c| c > 1).sum();
        reused as f64 / total as f64
    }
}

/// Each row with blocks: the share of its `hash_ids` before the first one no earlier row had.
fn hit_rates(rows: &[TraceRow]) -> Vec<f64> {
    let mut seen: HashSet<i64> = HashSet::new();
    let mut rates = Vec::new();
    for row in rows.iter().filter(|r| !r.hash_ids.is_empty()) {
        let hits = row
            .hash_ids
            .iter()
            .position(|id| !seen.contains(id))
            .unwrap_or(row.hash_ids.len());
        rates.push(hits as f64 / row.hash_ids.len() as f64);
        seen.extend(row.hash_ids.iter().copied());
    }
    rates
}

/// First blocks that begin two rows or more.
fn prefix_groups(rows: &[TraceRow]) -> u64 {
    let mut first: HashMap<i64, u32> = HashMap::new();
    for row in rows {
        if let Some(&id) = row.hash_ids.first() {
            *first.entry(id).or_default() += 1;
        }
    }
    first.values().filter(|&&c| c > 1).count() as u64
}

/// `n` with two decimals and thousands separators (`14,233.24`).
pub fn grouped(n: f64) -> String {
    let text = format!("{:.2}", n.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, "00"));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    let sign = if n < 0.0 && text.bytes().any(|b| b != b'0' && b != b'.') {
        "-"
    } else {
        ""
    };
    format!("{sign}{out}.{frac}")
}

/// An integer with thousands separators.
fn grouped_int(n: u64) -> String {
    let text = grouped(n as f64);
    text.trim_end_matches(".00").to_string()
}

/// The console report: the counts, then a table of the five metrics' figures.
pub fn render(stats: &AnalysisStats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nTrace Analysis Report");
    let _ = writeln!(
        out,
        "Total requests:   {}",
        grouped_int(stats.total_requests)
    );
    let _ = writeln!(
        out,
        "Unique prefixes:  {}",
        grouped_int(stats.unique_prefixes)
    );
    let _ = writeln!(
        out,
        "Prefix groups:    {}\n",
        grouped_int(stats.num_prefix_groups)
    );
    let metrics = [
        ("Input Length", &stats.isl_stats),
        ("Context Length", &stats.context_length_stats),
        ("Unique Prompt Length", &stats.unique_prompt_length_stats),
        ("Output Length", &stats.osl_stats),
        ("Theoretical Hit Rates", &stats.hit_rate_stats),
    ];
    let head = [
        "Metric", "Mean", "Std Dev", "Min", "P25", "Median", "P75", "Max",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for (name, s) in metrics {
        let mut row = vec![name.to_string()];
        match s {
            Some(s) => {
                row.extend([s.mean, s.std_dev, s.min, s.p25, s.median, s.p75, s.max].map(grouped))
            }
            None => row.extend(std::iter::repeat_n("N/A".to_string(), 7)),
        }
        cells.push(row);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule = |l: &str, m: &str, r: &str, h: &str| {
        let parts: Vec<String> = widths.iter().map(|w| h.repeat(w + 2)).collect();
        format!("{l}{}{r}\n", parts.join(m))
    };
    let line = |row: &[String], sep: &str| {
        let parts: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!(" {c:>w$} "))
            .collect();
        format!("{sep}{}{sep}\n", parts.join(sep))
    };
    let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
    let _ = writeln!(out, "{:^total$}", "Trace Statistics");
    out.push_str(&rule("┏", "┳", "┓", "━"));
    out.push_str(&line(&cells[0], "┃"));
    out.push_str(&rule("┡", "╇", "┩", "━"));
    for row in &cells[1..] {
        out.push_str(&line(row, "│"));
    }
    out.push_str(&rule("└", "┴", "┘", "─"));
    out
}

/// `ringperf analyze-trace`: reads the trace, prints the report and writes it as JSON to
/// `output` (its directory made) when given.
///
/// # Errors
/// The trace cannot be read or has a bad row, the block size is 0, or the report cannot be
/// written.
pub fn run(input: &Path, block_size: u64, output: Option<&Path>) -> Result<(), TraceToolError> {
    if block_size == 0 {
        return Err(TraceToolError::Usage(
            "--block-size must be at least 1".into(),
        ));
    }
    if !input.exists() {
        return Err(TraceToolError::NotFound(input.to_path_buf()));
    }
    let stats = analyze(&read_rows(input)?, block_size);
    println!("{}", render(&stats));
    if let Some(path) = output {
        super::write_json(path, &stats)?;
        println!("Analysis report saved to {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
#[path = "analyze_tests.rs"]
mod tests;
