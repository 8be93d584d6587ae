//! Trace synthesis: a new mooncake trace from a recorded one, its prefix tree reshaped, as
//! AIPerf 0.13's `--synthesis-*` options do (docs/commands.md, "synthesize").
//!
//! The model. A hash id found in two rows or more is shared; a row's shared prefix is its
//! leading run of shared ids, the rest of its `input_length` is its own prompt. Then, per row:
//! - the prefix is stretched by `prefix_len_multiplier` (each id `h` becomes `h*m … h*m+m-1` for
//!   the integer part `m`, and fresh ids make up the fractional part, rounded up) or, below 1,
//!   cut to `max(1, ⌊blocks × multiplier⌋)` blocks;
//! - the own prompt becomes `⌊prompt × prompt_len_multiplier⌋` tokens, in fresh ids, one a block;
//! - `input_length` is the new prefix's blocks times the block size plus the new prompt, capped
//!   at `max_isl` (its blocks are kept); a row that is all shared prefix and ends in a partial
//!   block (as Mooncake's rows do) keeps that block's shortfall, where AIPerf 0.13 stops with
//!   "input_len < prefix_len";
//! - with `prefix_root_multiplier` k > 1 each row goes to one of k copies of the tree, drawn
//!   uniformly (copy i adds `i × (largest id + 1)` to every id);
//! - `timestamp` is divided by `speedup_ratio` (truncated to an integer), `output_length`
//!   multiplied by `output_len_multiplier` (rounded half to even), capped at `max_osl`, at
//!   least 1.
//!
//! Every other field is kept; a row without `hash_ids` keeps its `input_length`.
//!
//! The copy a row goes to is drawn from ringperf's seeded generator, not Python's, so a seed
//! gives another (equally distributed) assignment than AIPerf's.

use std::collections::HashMap;
use std::path::Path;

use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value};

use super::TraceToolError;

/// The synthesis options (AIPerf's `SynthesisParams`).
#[derive(Debug, Clone, PartialEq)]
pub struct SynthesisParams {
    pub speedup_ratio: f64,
    pub prefix_len_multiplier: f64,
    pub prefix_root_multiplier: u32,
    pub prompt_len_multiplier: f64,
    pub output_len_multiplier: f64,
    pub max_isl: Option<u64>,
    pub max_osl: Option<u64>,
    pub block_size: u64,
    pub seed: u64,
}

impl Default for SynthesisParams {
    /// AIPerf's identities (nothing reshaped, nothing filtered or capped), blocks of 512
    /// tokens, seed 42.
    fn default() -> Self {
        SynthesisParams {
            speedup_ratio: 1.0,
            prefix_len_multiplier: 1.0,
            prefix_root_multiplier: 1,
            prompt_len_multiplier: 1.0,
            output_len_multiplier: 1.0,
            max_isl: None,
            max_osl: None,
            block_size: 512,
            seed: 42,
        }
    }
}

impl SynthesisParams {
    /// Refuses values AIPerf refuses: ratios and multipliers must be positive (the output one
    /// may be 0), the root multiplier and the block size at least 1.
    ///
    /// # Errors
    /// The first value out of range, named by its flag.
    pub fn check(&self) -> Result<(), TraceToolError> {
        let bad = |flag: &str, rule: &str| Err(TraceToolError::Usage(format!("{flag} {rule}")));
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.speedup_ratio) {
            return bad("--synthesis-speedup-ratio", "must be greater than 0");
        }
        if !positive(self.prefix_len_multiplier) {
            return bad(
                "--synthesis-prefix-len-multiplier",
                "must be greater than 0",
            );
        }
        if !positive(self.prompt_len_multiplier) {
            return bad(
                "--synthesis-prompt-len-multiplier",
                "must be greater than 0",
            );
        }
        if !(self.output_len_multiplier.is_finite() && self.output_len_multiplier >= 0.0) {
            return bad("--synthesis-output-len-multiplier", "must be at least 0");
        }
        if self.prefix_root_multiplier == 0 {
            return bad("--synthesis-prefix-root-multiplier", "must be at least 1");
        }
        if self.block_size == 0 {
            return bad("--block-size", "must be at least 1");
        }
        Ok(())
    }
}

/// A row of the input: its JSON object and its line in the file (for errors).
#[derive(Debug, Clone)]
pub struct InputRow {
    pub line: u64,
    pub fields: Map<String, Value>,
}

/// A fault of the row at `line` of `path`.
fn row_err(path: &Path, line: u64, field: &str, why: String) -> TraceToolError {
    TraceToolError::Row {
        path: path.to_path_buf(),
        line,
        field: field.to_string(),
        why,
    }
}

fn ids_of(path: &Path, row: &InputRow) -> Result<Vec<i64>, TraceToolError> {
    let bad = |why: &str| row_err(path, row.line, "hash_ids", why.to_string());
    match row.fields.get("hash_ids") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_i64().ok_or_else(|| bad("expected integers")))
            .collect(),
        Some(_) => Err(bad("expected a list of integers")),
    }
}

fn count_of(path: &Path, row: &InputRow, key: &str) -> Result<Option<u64>, TraceToolError> {
    match row.fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            row_err(
                path,
                row.line,
                key,
                "expected a non-negative integer".into(),
            )
        }),
    }
}

/// A row's new blocks and input length; `None` for a row without blocks.
type Reshaped = Option<(Vec<i64>, u64)>;

/// The new blocks and input length of every row (`None` for a row without blocks).
fn reshape(
    path: &Path,
    ids: &[Vec<i64>],
    isls: &[u64],
    lines: &[u64],
    p: &SynthesisParams,
    rng: &mut rand::rngs::StdRng,
) -> Result<Vec<Reshaped>, TraceToolError> {
    let mut seen: HashMap<i64, u32> = HashMap::new();
    for h in ids.iter().flatten() {
        *seen.entry(*h).or_default() += 1;
    }
    let shared = |h: &i64| seen[h] > 1;
    let whole = if p.prefix_len_multiplier > 1.0 {
        p.prefix_len_multiplier as i64
    } else {
        1
    };
    let max_shared = seen.iter().filter(|(_, c)| **c > 1).map(|(h, _)| *h).max();
    let mut next_free = (max_shared.unwrap_or(0) + 1) * whole;
    let mut fresh = |n: u64| {
        let start = next_free + 1;
        next_free += n as i64;
        start..start + n as i64
    };
    let bs = p.block_size;
    let mut out = Vec::with_capacity(ids.len());
    for ((row_ids, &isl), &line) in ids.iter().zip(isls).zip(lines) {
        if row_ids.is_empty() {
            out.push(None);
            continue;
        }
        let prefix: Vec<i64> = row_ids.iter().take_while(|h| shared(h)).copied().collect();
        // A trace's last block is often partial (Mooncake's are): when the whole row is shared
        // prefix, the prefix is the row's length and its last block keeps its shortfall.
        let full = prefix.len() as u64 * bs;
        let mut shortfall = full.saturating_sub(isl);
        if shortfall >= bs {
            return Err(row_err(
                path,
                line,
                "input_length",
                format!(
                    "input_length ({isl}) is shorter than its {} shared prefix blocks allow (more than {} tokens)",
                    prefix.len(),
                    full - bs
                ),
            ));
        }
        let prompt_len = isl - (full - shortfall);
        let mut new_ids: Vec<i64>;
        if p.prefix_len_multiplier > 1.0 {
            new_ids = prefix
                .iter()
                .flat_map(|h| (0..whole).map(move |j| h * whole + j))
                .collect();
            let target = (prefix.len() as f64 * p.prefix_len_multiplier).ceil() as usize;
            if target > new_ids.len() {
                new_ids.extend(fresh((target - new_ids.len()) as u64));
            }
        } else if p.prefix_len_multiplier < 1.0 {
            let keep = ((prefix.len() as f64 * p.prefix_len_multiplier) as usize).max(1);
            if keep < prefix.len() {
                shortfall = 0;
            }
            new_ids = prefix[..keep.min(prefix.len())].to_vec();
        } else {
            new_ids = prefix;
        }
        // An empty prefix cut "to at least one block" stays empty (there is none to keep).
        let new_prefix_len = (new_ids.len() as u64 * bs).saturating_sub(shortfall);
        let new_prompt = (prompt_len as f64 * p.prompt_len_multiplier) as u64;
        new_ids.extend(fresh(new_prompt.div_ceil(bs)));
        out.push(Some((new_ids, new_prefix_len + new_prompt)));
    }
    if p.prefix_root_multiplier > 1 {
        let offset_base = next_free + 1;
        for (ids, _) in out.iter_mut().flatten() {
            let tree = i64::from(rng.random_range(0..p.prefix_root_multiplier));
            for h in ids.iter_mut() {
                *h += tree * offset_base;
            }
        }
    }
    Ok(out)
}

/// The synthesized trace of `rows`.
///
/// # Errors
/// A row's `hash_ids`, `input_length` or `output_length` has the wrong type, or its
/// `input_length` is shorter than its shared prefix: named by line.
pub fn synthesize(
    path: &Path,
    rows: &[InputRow],
    p: &SynthesisParams,
) -> Result<Vec<Map<String, Value>>, TraceToolError> {
    let mut ids = Vec::with_capacity(rows.len());
    let mut isls = Vec::with_capacity(rows.len());
    for r in rows {
        ids.push(ids_of(path, r)?);
        isls.push(count_of(path, r, "input_length")?);
    }
    let lines: Vec<u64> = rows.iter().map(|r| r.line).collect();
    let zeroed: Vec<u64> = isls.iter().map(|i| i.unwrap_or(0)).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(p.seed);
    let shaped = reshape(path, &ids, &zeroed, &lines, p, &mut rng)?;
    let mut out = Vec::with_capacity(rows.len());
    for ((row, new), isl) in rows.iter().zip(shaped).zip(isls) {
        let mut f = row.fields.clone();
        let mut isl = match new {
            Some((new_ids, new_isl)) => {
                f.insert("hash_ids".into(), Value::from(new_ids));
                new_isl
            }
            None => {
                f.remove("hash_ids");
                isl.unwrap_or(p.block_size)
            }
        };
        if let Some(max) = p.max_isl.filter(|&m| m > 0) {
            isl = isl.min(max);
        }
        let literal = ["text_input", "messages", "payload"]
            .iter()
            .any(|k| !matches!(row.fields.get(*k), None | Some(Value::Null)));
        if !literal {
            f.insert("input_length".into(), Value::from(isl));
        }
        match row.fields.get("timestamp") {
            None | Some(Value::Null) => {}
            Some(t) => {
                let ms = t.as_f64().ok_or_else(|| {
                    row_err(path, row.line, "timestamp", "expected a number".into())
                })?;
                f.insert(
                    "timestamp".into(),
                    Value::from((ms / p.speedup_ratio) as i64),
                );
            }
        }
        if let Some(osl) = count_of(path, row, "output_length")? {
            let mut scaled = (osl as f64 * p.output_len_multiplier).round_ties_even() as u64;
            if let Some(max) = p.max_osl {
                scaled = scaled.min(max);
            }
            f.insert("output_length".into(), Value::from(scaled.max(1)));
        }
        out.push(f);
    }
    Ok(out)
}

impl SynthesisParams {
    /// Any of the five reshaping options differs from its identity (AIPerf's
    /// `_has_meaningful_synthesis`): only then is the trace synthesized; `max_isl` and
    /// `max_osl` alone filter and cap.
    pub fn reshapes(&self) -> bool {
        self.speedup_ratio != 1.0
            || self.prefix_len_multiplier != 1.0
            || self.prefix_root_multiplier != 1
            || self.prompt_len_multiplier != 1.0
            || self.output_len_multiplier != 1.0
    }
}

/// The trace `profile` replays under `--synthesis-*`, as AIPerf 0.13's trace loader makes it:
/// rows whose `timestamp` is outside `window` (the fixed schedule's start and end offsets, ms,
/// inclusive, on the recorded timestamps) or whose `input_length` exceeds `max_isl` are dropped;
/// the rest are synthesized when [`SynthesisParams::reshapes`]; then every `output_length` is
/// capped at `max_osl`. Rows keep their file order. Returns the rows as JSONL text and how many
/// were dropped by the window and by `max_isl`.
///
/// # Errors
/// As [`synthesize`]; the file cannot be read, or a row is not a JSON object.
pub fn for_profile(
    path: &Path,
    p: &SynthesisParams,
    window: (Option<u64>, Option<u64>),
) -> Result<(String, usize, usize), TraceToolError> {
    p.check()?;
    let mut kept = Vec::new();
    let (mut outside, mut too_long) = (0, 0);
    for row in read(path)? {
        let ts =
            match row.fields.get("timestamp") {
                None | Some(Value::Null) => None,
                Some(t) => Some(t.as_f64().ok_or_else(|| {
                    row_err(path, row.line, "timestamp", "expected a number".into())
                })?),
            };
        if let Some(ts) = ts
            && (window.0.is_some_and(|s| ts < s as f64) || window.1.is_some_and(|e| ts > e as f64))
        {
            outside += 1;
            continue;
        }
        if let (Some(max), Some(isl)) = (p.max_isl, count_of(path, &row, "input_length")?)
            && isl > max
        {
            too_long += 1;
            continue;
        }
        kept.push(row);
    }
    let rows = if p.reshapes() {
        synthesize(path, &kept, p)?
    } else {
        let mut out = Vec::with_capacity(kept.len());
        for row in kept {
            let mut f = row.fields.clone();
            if let (Some(max), Some(osl)) = (p.max_osl, count_of(path, &row, "output_length")?)
                && osl > max
            {
                f.insert("output_length".into(), Value::from(max));
            }
            out.push(f);
        }
        out
    };
    let mut text = String::new();
    for r in rows {
        text.push_str(&Value::Object(r).to_string());
        text.push('\n');
    }
    Ok((text, outside, too_long))
}

/// Reads the JSON object rows of a trace (blank lines skipped).
///
/// # Errors
/// The file cannot be read or a line is not a JSON object.
pub fn read(path: &Path) -> Result<Vec<InputRow>, TraceToolError> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| TraceToolError::io(path, e))?;
    let mut rows = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| TraceToolError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let n = i as u64 + 1;
        let row = |why: String| TraceToolError::Row {
            path: path.to_path_buf(),
            line: n,
            field: String::new(),
            why,
        };
        match serde_json::from_str::<Value>(&line).map_err(|e| row(e.to_string()))? {
            Value::Object(fields) => rows.push(InputRow { line: n, fields }),
            _ => return Err(row("expected a JSON object".into())),
        }
    }
    Ok(rows)
}

/// `ringperf synthesize mooncake-trace`: reads `input`, writes the synthesized trace to
/// `output` (JSONL, one row a line) and says how many rows.
///
/// # Errors
/// Bad options, an unreadable trace or bad row, or the output cannot be written.
pub fn run(input: &Path, output: &Path, p: &SynthesisParams) -> Result<(), TraceToolError> {
    p.check()?;
    if !input.exists() {
        return Err(TraceToolError::NotFound(input.to_path_buf()));
    }
    let rows = synthesize(input, &read(input)?, p)?;
    let mut text = String::new();
    for r in &rows {
        text.push_str(&Value::Object(r.clone()).to_string());
        text.push('\n');
    }
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| TraceToolError::io(dir, e))?;
    }
    std::fs::write(output, text).map_err(|e| TraceToolError::io(output, e))?;
    println!("Synthesized {} rows to {}", rows.len(), output.display());
    Ok(())
}

/// `ringperf synthesize mooncake-trace`: `input` (`--input-file`) reshaped into `output`.
///
/// # Errors
/// As [`run`]; no `input`.
pub fn run_command(
    input: Option<&Path>,
    output: &Path,
    params: &SynthesisParams,
) -> Result<(), TraceToolError> {
    let Some(input) = input else {
        return Err(TraceToolError::Usage(
            "synthesize mooncake-trace needs --input-file (the recorded trace)".into(),
        ));
    };
    run(input, output, params)
}

#[cfg(test)]
#[path = "synthesize_tests.rs"]
mod tests;
