//! `ringperf analyze swim-lane` (AIPerf 0.13's `aiperf analyze swim-lane`, docs/plots.md): a run's
//! sessions as lanes of request bars over time, with the concurrency curve under them, from the
//! run's `profile_export.jsonl` (and `profile_export_aiperf.json` for the ramp and end lines).
//!
//! This module is the data: records read, grouped into sessions, sessions packed into lanes
//! and slots, and the curves and payload of the HTML viewer, all as AIPerf computes them.
//! `swim_draw` draws the picture, `swim_html` writes the viewer.
//!
//! - A session is the records of one `x_correlation_id` (else `conversation_id`), in
//!   `turn_index` order; cancelled records and records without start or end are left out.
//! - A lane is a session tree: a root session and the subagent sessions of its tree (one
//!   `root_correlation_id`, or the `parent_correlation_id` walk of older exports), nested as
//!   child rows under the root's rows. Parallel turns of one session take rows of their own.
//! - Slots are packed greedily: lanes in start order, each into the first slot whose previous
//!   lane ended by its start.
//! - Curves are step functions in seconds from the first request's start: requests in flight,
//!   idle sessions (alive between their first start and last end, minus those in a request),
//!   new input tokens in prefill, prefill / decode / total tokens per second, tokens in flight,
//!   and a TTFT band (p50 and p99 over 240 bins of request start).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use ringperf_metrics::aggregate::sweep::{Step, SweepRecord, add as add_steps, cumsum, curves};

/// The per-request export a swim lane reads.
pub const JSONL: &str = "profile_export.jsonl";
/// The summary whose input configuration and benchmark duration give the vertical lines.
pub const SUMMARY: &str = "profile_export_aiperf.json";

/// Why a run directory was not drawn (the run is skipped with this message, as AIPerf does).
#[derive(Debug)]
pub enum SwimLaneError {
    /// The directory has no `profile_export.jsonl`.
    NotFound(PathBuf),
    /// No record with a start and an end that was not cancelled.
    NoRecords(PathBuf),
    /// A line that is not a JSON object (1-based).
    BadLine(PathBuf, usize),
    Read(PathBuf, std::io::Error),
    Write(PathBuf, std::io::Error),
    /// The picture could not be drawn.
    Draw(String),
}

impl fmt::Display for SwimLaneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwimLaneError::NotFound(p) => write!(f, "{} not found", p.display()),
            SwimLaneError::NoRecords(p) => write!(f, "no valid records in {}", p.display()),
            SwimLaneError::BadLine(p, n) => {
                write!(f, "{} line {n} is not a JSON record", p.display())
            }
            SwimLaneError::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            SwimLaneError::Write(p, e) => write!(f, "failed to write {}: {e}", p.display()),
            SwimLaneError::Draw(e) => write!(f, "cannot draw the swim lane: {e}"),
        }
    }
}

impl std::error::Error for SwimLaneError {}

/// One request of a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turn {
    pub start_ns: u64,
    pub end_ns: u64,
    pub turn_index: i64,
    pub ttft_ms: Option<f64>,
    pub latency_ms: Option<f64>,
    pub isl: Option<f64>,
    pub osl: Option<f64>,
    /// `usage_prompt_cache_read_tokens`: the server's cached prefix, when it says.
    pub cache_read: Option<f64>,
    /// The record's `agent_depth`, as exported (`null` stays `None`).
    pub agent_depth: Option<i64>,
    pub error: bool,
    /// `context_overflow_skip`.
    pub overflow: bool,
    parent: Option<String>,
    root: Option<String>,
}

/// One session: its id (`x_correlation_id`, else `conversation_id`), its conversation and its
/// turns in `turn_index` order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Session {
    pub id: String,
    pub conv: String,
    pub turns: Vec<Turn>,
}

impl Session {
    /// (first start, last end).
    pub fn span(&self) -> (u64, u64) {
        let start = self.turns.iter().map(|t| t.start_ns).min().unwrap_or(0);
        let end = self.turns.iter().map(|t| t.end_ns).max().unwrap_or(0);
        (start, end)
    }

    /// A subagent's session: a turn at `agent_depth` above 0.
    pub fn is_sub(&self) -> bool {
        self.turns.iter().any(|t| t.agent_depth.unwrap_or(0) > 0)
    }

    /// The union of its requests' intervals; the gaps between them are its idle time.
    pub fn merged_active(&self) -> Vec<(u64, u64)> {
        let mut iv: Vec<(u64, u64)> = self.turns.iter().map(|t| (t.start_ns, t.end_ns)).collect();
        iv.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(iv.len());
        for (s, e) in iv {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }
}

fn str_of<'a>(meta: &'a Value, key: &str) -> Option<&'a str> {
    meta.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn metric(record: &Value, name: &str) -> Option<f64> {
    record.get("metrics")?.get(name)?.get("value")?.as_f64()
}

/// The turn of one exported record; `None` for a cancelled one or one without start or end.
fn turn_of(record: &Value) -> Option<(String, String, Turn)> {
    let meta = record.get("metadata")?;
    if meta.get("was_cancelled").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let start_ns = meta.get("request_start_ns")?.as_u64()?;
    let end_ns = meta.get("request_end_ns")?.as_u64()?;
    let conv = str_of(meta, "conversation_id")
        .unwrap_or_default()
        .to_string();
    let id = str_of(meta, "x_correlation_id").map_or_else(|| conv.clone(), str::to_string);
    let error = record
        .get("error")
        .is_some_and(|e| !e.is_null() && e != &Value::Bool(false));
    let turn = Turn {
        start_ns,
        end_ns,
        turn_index: meta.get("turn_index").and_then(Value::as_i64).unwrap_or(0),
        ttft_ms: metric(record, "time_to_first_token"),
        latency_ms: metric(record, "request_latency"),
        isl: metric(record, "input_sequence_length"),
        osl: metric(record, "output_sequence_length"),
        cache_read: metric(record, "usage_prompt_cache_read_tokens"),
        agent_depth: meta.get("agent_depth").and_then(Value::as_i64),
        error,
        overflow: meta.get("context_overflow_skip").and_then(Value::as_bool) == Some(true),
        parent: str_of(meta, "parent_correlation_id").map(str::to_string),
        root: str_of(meta, "root_correlation_id").map(str::to_string),
    };
    Some((id, conv, turn))
}

/// The sessions of a `profile_export.jsonl`'s text, in order of their first record.
///
/// # Errors
/// A non-empty line that is not JSON: its 1-based number.
pub fn sessions_of(text: &str) -> Result<Vec<Session>, usize> {
    let mut sessions: Vec<Session> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line).map_err(|_| n + 1)?;
        if !record.is_object() {
            return Err(n + 1);
        }
        let Some((id, conv, turn)) = turn_of(&record) else {
            continue;
        };
        let at = *index.entry(id.clone()).or_insert_with(|| {
            sessions.push(Session {
                id,
                conv,
                turns: Vec::new(),
            });
            sessions.len() - 1
        });
        sessions[at].turns.push(turn);
    }
    for s in &mut sessions {
        s.turns.sort_by_key(|t| t.turn_index);
    }
    Ok(sessions)
}

/// Greedy first-fit packing of intervals `(start, end)` taken in the order given: each goes to
/// the first row whose last interval ended by its start. Returns each one's row and the rows.
fn first_fit(intervals: impl Iterator<Item = (u64, u64)>) -> (Vec<usize>, usize) {
    let mut ends: Vec<u64> = Vec::new();
    let rows = intervals
        .map(|(start, end)| match ends.iter().position(|&e| start >= e) {
            Some(row) => {
                ends[row] = end;
                row
            }
            None => {
                ends.push(end);
                ends.len() - 1
            }
        })
        .collect();
    (rows, ends.len())
}

/// Each turn's row within its session (overlapping turns stacked) and the session's rows.
pub fn turn_depths(turns: &[Turn]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by_key(|&i| turns[i].start_ns);
    let (rows, n) = first_fit(order.iter().map(|&i| (turns[i].start_ns, turns[i].end_ns)));
    let mut depths = vec![0; turns.len()];
    for (k, &i) in order.iter().enumerate() {
        depths[i] = rows[k];
    }
    (depths, n)
}

/// Each session's lane key: its tree's root (`root_correlation_id` when the export has any;
/// else the top of its `parent_correlation_id` chain among the sessions present, or the absent
/// parent that chain ends at, shared by its orphan siblings; a cycle detaches to itself).
fn root_map(sessions: &[Session]) -> Vec<String> {
    let first = |s: &Session, f: fn(&Turn) -> Option<&String>| -> Option<String> {
        s.turns.iter().find_map(|t| f(t).cloned())
    };
    if sessions
        .iter()
        .any(|s| s.turns.iter().any(|t| t.root.is_some()))
    {
        return sessions
            .iter()
            .map(|s| first(s, |t| t.root.as_ref()).unwrap_or_else(|| s.id.clone()))
            .collect();
    }
    let parent: HashMap<&str, Option<String>> = sessions
        .iter()
        .map(|s| (s.id.as_str(), first(s, |t| t.parent.as_ref())))
        .collect();
    sessions
        .iter()
        .map(|s| {
            let mut seen = vec![s.id.as_str()];
            let mut cur = s.id.as_str();
            while let Some(Some(next)) = parent.get(cur) {
                if next == cur
                    || !parent.contains_key(next.as_str())
                    || seen.contains(&next.as_str())
                {
                    break;
                }
                cur = next.as_str();
                seen.push(cur);
            }
            match parent.get(cur).cloned().flatten() {
                None => cur.to_string(),
                Some(top) if seen.contains(&top.as_str()) => s.id.clone(),
                Some(top) => top,
            }
        })
        .collect()
}

/// A session's place in its lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Index into the sessions.
    pub session: usize,
    pub is_sub: bool,
    /// First row of the lane the session takes.
    pub row0: usize,
    pub rows: usize,
    /// Each turn's row within the session.
    pub depths: Vec<usize>,
}

/// One lane: a root session (absent for a tree whose root sent nothing) and its subagents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub root: String,
    pub slot: usize,
    pub rows: usize,
    pub span: (u64, u64),
    pub members: Vec<Member>,
}

/// The lanes, in slot-assignment order (by start; ties in order of first record).
pub fn lanes(sessions: &[Session]) -> Vec<Lane> {
    let roots = root_map(sessions);
    let by_id: HashMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // Trees in order of their first session; each with its member sessions.
    let mut trees: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        match trees.iter_mut().find(|(r, _)| r == root) {
            Some((_, members)) => members.push(i),
            None => trees.push((root.clone(), vec![i])),
        }
    }
    let spans: Vec<(u64, u64)> = trees
        .iter()
        .map(|(_, m)| {
            let s = m.iter().map(|&i| sessions[i].span());
            let start = s.clone().map(|x| x.0).min().unwrap_or(0);
            (start, s.map(|x| x.1).max().unwrap_or(0))
        })
        .collect();
    let mut order: Vec<usize> = (0..trees.len()).collect();
    order.sort_by_key(|&t| spans[t].0);
    let (slots, _) = first_fit(order.iter().map(|&t| spans[t]));
    order
        .iter()
        .zip(slots)
        .map(|(&t, slot)| {
            let (root, members) = &trees[t];
            lane(
                sessions,
                root,
                by_id.get(root.as_str()).copied(),
                members,
                slot,
                spans[t],
            )
        })
        .collect()
}

fn lane(
    sessions: &[Session],
    root: &str,
    root_index: Option<usize>,
    members: &[usize],
    slot: usize,
    span: (u64, u64),
) -> Lane {
    let mut out = Vec::new();
    let mut root_rows = 0;
    if let Some(r) = root_index {
        let (depths, rows) = turn_depths(&sessions[r].turns);
        root_rows = rows;
        out.push(Member {
            session: r,
            is_sub: sessions[r].is_sub(),
            row0: 0,
            rows,
            depths,
        });
    }
    let mut kids: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&m| Some(m) != root_index)
        .collect();
    kids.sort_by_key(|&k| sessions[k].span().0);
    let mut row_ends: Vec<u64> = Vec::new();
    for k in kids {
        let (depths, rows) = turn_depths(&sessions[k].turns);
        let (start, end) = sessions[k].span();
        // The lowest window of `rows` child rows all free by this subagent's start.
        let row = (0..=row_ends.len())
            .find(|&r| (0..rows).all(|j| row_ends.get(r + j).is_none_or(|&e| e <= start)))
            .unwrap_or(row_ends.len());
        if row_ends.len() < row + rows {
            row_ends.resize(row + rows, 0);
        }
        for e in &mut row_ends[row..row + rows] {
            *e = end;
        }
        out.push(Member {
            session: k,
            is_sub: true,
            row0: root_rows + row,
            rows,
            depths,
        });
    }
    Lane {
        root: root.to_string(),
        slot,
        rows: root_rows + row_ends.len(),
        span,
        members: out,
    }
}

/// The ramp duration (seconds: the profiling phase's `concurrency_ramp.duration`, else
/// `loadgen.concurrency_ramp_duration`) and the benchmark duration of a run's summary.
pub fn bench_lines(summary: &Value) -> (Option<f64>, Option<f64>) {
    let input = summary.get("input_config").unwrap_or(&Value::Null);
    let loadgen = input.get("loadgen").unwrap_or(&Value::Null);
    let ramp = input
        .get("phases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("exclude_from_results").and_then(Value::as_bool) != Some(true))
        .find_map(|p| p.get("concurrency_ramp")?.get("duration")?.as_f64())
        .or_else(|| loadgen.get("concurrency_ramp_duration")?.as_f64());
    let bench = summary
        .get("benchmark_duration")
        .filter(|b| !b.is_null())
        .or_else(|| loadgen.get("benchmark_duration"));
    let bench = bench.and_then(|b| b.get("avg").and_then(Value::as_f64).or(b.as_f64()));
    (ramp, bench)
}

/// A run read for its swim lane.
#[derive(Clone, Debug)]
pub struct SwimLane {
    /// The directory's name.
    pub run: String,
    pub sessions: Vec<Session>,
    pub lanes: Vec<Lane>,
    pub ramp_s: Option<f64>,
    pub bench_s: Option<f64>,
    /// The first request's start, ns: time 0 of every curve.
    pub t0_ns: u64,
}

/// Reads `dir`'s records and summary. `ramp` overrides the summary's ramp duration.
///
/// # Errors
/// No `profile_export.jsonl`, no usable record, a line that is not JSON.
pub fn load(dir: &Path, ramp: Option<f64>) -> Result<SwimLane, SwimLaneError> {
    let path = dir.join(JSONL);
    if !path.is_file() {
        return Err(SwimLaneError::NotFound(path));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| SwimLaneError::Read(path.clone(), e))?;
    let sessions = sessions_of(&text).map_err(|n| SwimLaneError::BadLine(path.clone(), n))?;
    if sessions.is_empty() {
        return Err(SwimLaneError::NoRecords(path));
    }
    let summary = std::fs::read(dir.join(SUMMARY))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    let (summary_ramp, bench_s) = bench_lines(&summary);
    let t0_ns = sessions.iter().map(|s| s.span().0).min().unwrap_or(0);
    let run = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok(SwimLane {
        run,
        lanes: lanes(&sessions),
        sessions,
        ramp_s: ramp.or(summary_ramp),
        bench_s,
        t0_ns,
    })
}

/// `v` rounded to `digits` decimals, halves to even (Python's `round`).
fn round_to(v: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (v * scale).round_ties_even() / scale
}

/// A step function as the viewer's `{"t": [...], "v": [...]}`, times to the millisecond and
/// values rounded to integers (halves to even, as NumPy).
fn step_json(step: &Step) -> Value {
    json!({
        "t": step.ts.iter().map(|&t| round_to(t, 3)).collect::<Vec<_>>(),
        "v": step.vals.iter().map(|&v| v.round_ties_even() as i64).collect::<Vec<_>>(),
    })
}

fn clamp0(mut s: Step) -> Step {
    for v in &mut s.vals {
        *v = v.max(0.0);
    }
    s
}

fn peak(s: &Step) -> i64 {
    s.vals.iter().fold(0.0f64, |m, &v| m.max(v)) as i64
}

impl SwimLane {
    fn secs(&self, ns: u64) -> f64 {
        (ns as f64 - self.t0_ns as f64) / 1e9
    }

    /// When a turn's generation starts, seconds: start + TTFT within the request, else its end.
    fn gen_start(&self, t: &Turn) -> f64 {
        let (s, e) = (t.start_ns as f64, t.end_ns as f64);
        let g = t.ttft_ms.map_or(e, |ms| (s + ms * 1e6).max(s).min(e));
        (g - self.t0_ns as f64) / 1e9
    }

    fn turns(&self) -> impl Iterator<Item = &Turn> {
        self.sessions.iter().flat_map(|s| s.turns.iter())
    }

    /// Requests in flight, and idle sessions (alive but between requests).
    pub fn concurrency(&self) -> (Step, Step) {
        let mut events = Vec::new();
        for t in self.turns() {
            events.push((self.secs(t.start_ns), 1.0));
            events.push((self.secs(t.end_ns), -1.0));
        }
        let active = cumsum(events);
        let mut alive = Vec::new();
        for s in &self.sessions {
            let (start, end) = s.span();
            alive.push((self.secs(start), 1.0));
            alive.push((self.secs(end), -1.0));
        }
        let negated = Step {
            ts: active.ts.clone(),
            vals: active.vals.iter().map(|v| -v).collect(),
        };
        let idle = clamp0(add_steps(&cumsum(alive), &negated));
        (active, idle)
    }

    /// Each turn's new input tokens: its ISL less the server's cached prefix, else less the
    /// previous turn's ISL (the first turn: all of it); never below 0, 0 without an ISL.
    pub fn new_isls(session: &Session) -> Vec<f64> {
        let mut prev: Option<f64> = None;
        session
            .turns
            .iter()
            .map(|t| {
                let Some(isl) = t.isl else {
                    return 0.0;
                };
                let new = match (t.cache_read, prev) {
                    (Some(cached), _) => isl - cached,
                    (None, Some(p)) => isl - p,
                    (None, None) => isl,
                };
                prev = Some(isl);
                new.max(0.0)
            })
            .collect()
    }

    /// New input tokens in prefill (each turn's new ISL over `[start, generation start)`).
    pub fn new_isl_curve(&self) -> Step {
        let mut events = Vec::new();
        for s in &self.sessions {
            for (t, w) in s.turns.iter().zip(Self::new_isls(s)) {
                if w > 0.0 {
                    events.push((self.secs(t.start_ns), w));
                    events.push((self.gen_start(t), -w));
                }
            }
        }
        cumsum(events)
    }

    /// The sweep records of every turn (generation start as [`Self::gen_start`]).
    fn sweep_records(&self) -> Vec<SweepRecord> {
        self.turns()
            .map(|t| SweepRecord {
                start: self.secs(t.start_ns),
                end: self.secs(t.end_ns),
                gen_start: Some(self.gen_start(t)),
                isl: t.isl,
                osl: t.osl,
                icl: Vec::new(),
            })
            .collect()
    }

    /// TTFT p50 and p99 (ms, one decimal) of the requests starting in each non-empty one of 240
    /// equal bins of the run: (bin centres in seconds, p50, p99).
    pub fn latency_band(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        const BINS: usize = 240;
        let points: Vec<(f64, f64)> = self
            .turns()
            .filter_map(|t| Some((self.secs(t.start_ns), t.ttft_ms?)))
            .collect();
        if points.is_empty() {
            return (Vec::new(), Vec::new(), Vec::new());
        }
        let t_max = points.iter().fold(f64::MIN, |m, p| m.max(p.0));
        let pct = |mut v: Vec<f64>, q| {
            v.sort_by(f64::total_cmp);
            round_to(ringperf_metrics::aggregate::stats::linear(&v, q), 1)
        };
        if t_max <= 0.0 {
            let all: Vec<f64> = points.iter().map(|p| p.1).collect();
            return (
                vec![0.0],
                vec![pct(all.clone(), 50.0)],
                vec![pct(all, 99.0)],
            );
        }
        let edge = |i: usize| t_max * i as f64 / BINS as f64;
        let mut bins: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for (t, ttft) in points {
            // The last edge below or at t (NumPy's searchsorted, side right, minus one).
            let i = (0..=BINS).rev().find(|&i| edge(i) <= t).unwrap_or(0);
            bins.entry(i.min(BINS - 1)).or_default().push(ttft);
        }
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        for (b, v) in bins {
            out.0.push(round_to((edge(b) + edge(b + 1)) / 2.0, 3));
            out.1.push(pct(v.clone(), 50.0));
            out.2.push(pct(v, 99.0));
        }
        out
    }

    /// Peaks of requests in flight ("active") and of whole session spans ("alive"), for main
    /// agents and for subagents.
    fn agent_peaks(&self) -> Value {
        let peak_of = |iv: Vec<(u64, u64)>| -> i64 {
            let mut ev: Vec<(u64, i64)> = iv.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
            ev.sort_unstable();
            let (mut cur, mut top) = (0i64, 0i64);
            for (_, d) in ev {
                cur += d;
                top = top.max(cur);
            }
            top
        };
        let mut turn_iv = [Vec::new(), Vec::new()];
        let mut span_iv = [Vec::new(), Vec::new()];
        for s in &self.sessions {
            let k = usize::from(s.is_sub());
            span_iv[k].push(s.span());
            turn_iv[k].extend(s.turns.iter().map(|t| (t.start_ns, t.end_ns)));
        }
        let [ta, tb] = turn_iv;
        let [sa, sb] = span_iv;
        json!({
            "mainActive": peak_of(ta),
            "mainAlive": peak_of(sa),
            "subActive": peak_of(tb),
            "subAlive": peak_of(sb),
        })
    }

    /// One session's entry in the viewer's payload.
    fn session_json(&self, lane: &Lane, ci: usize, m: &Member) -> Value {
        let s = &self.sessions[m.session];
        let turns: Vec<Value> = s
            .turns
            .iter()
            .zip(&m.depths)
            .zip(Self::new_isls(s))
            .map(|((t, depth), new_isl)| {
                let status = if t.error {
                    1
                } else if t.overflow {
                    2
                } else {
                    0
                };
                json!([
                    round_to(self.secs(t.start_ns), 4),
                    round_to(self.secs(t.end_ns), 4),
                    t.ttft_ms.map(|v| round_to(v, 1)),
                    t.latency_ms.map(|v| round_to(v, 1)),
                    t.isl.map(|v| v as i64),
                    t.osl.map(|v| v as i64),
                    depth,
                    t.agent_depth,
                    new_isl.round_ties_even() as i64,
                    status,
                ])
            })
            .collect();
        let merged = s.merged_active();
        let gaps: Vec<Value> = merged
            .windows(2)
            .map(|w| {
                json!([
                    round_to(self.secs(w[0].1), 4),
                    round_to(self.secs(w[1].0), 4)
                ])
            })
            .collect();
        let conv = if s.conv.is_empty() { &s.id } else { &s.conv };
        let mut entry = Map::new();
        entry.insert("id".into(), json!(s.id));
        entry.insert("conv".into(), json!(conv));
        entry.insert("slot".into(), json!(lane.slot));
        entry.insert("ci".into(), json!(ci));
        entry.insert("row0".into(), json!(m.row0));
        entry.insert("rows".into(), json!(m.rows));
        entry.insert("turns".into(), Value::Array(turns));
        entry.insert("gaps".into(), Value::Array(gaps));
        if m.is_sub {
            entry.insert("sub".into(), json!(true));
        }
        if conv.contains(":aux:") {
            entry.insert("aux".into(), json!(true));
        }
        if conv.contains(":wg:") {
            entry.insert("wg".into(), json!(true));
        }
        if s.id != lane.root {
            entry.insert("root".into(), json!(lane.root));
        }
        Value::Object(entry)
    }

    /// The HTML viewer's data, with AIPerf's keys: the sessions with their turns
    /// (`[start s, end s, TTFT ms, latency ms, ISL, OSL, row, agent depth, new ISL, status]`,
    /// status 1 for an error, 2 for a context-overflow skip) and every curve.
    pub fn payload(&self, target: Option<u64>) -> Value {
        let (active, idle) = self.concurrency();
        let total = add_steps(&active, &idle);
        let new_isl = self.new_isl_curve();
        let c = curves(&self.sweep_records());
        let (prefill, decode) = (clamp0(c.prefill_throughput), clamp0(c.decode_throughput));
        let (tput, kv) = (clamp0(c.total_throughput), clamp0(c.tokens_in_flight));
        let (lat_t, p50, p99) = self.latency_band();
        let sessions: Vec<Value> = self
            .lanes
            .iter()
            .enumerate()
            .flat_map(|(ci, l)| l.members.iter().map(move |m| (ci, l, m)))
            .map(|(ci, l, m)| self.session_json(l, ci, m))
            .collect();
        let t_max = self
            .turns()
            .map(|t| round_to(self.secs(t.end_ns), 4))
            .fold(0.0f64, f64::max);
        json!({
            "run": self.run,
            "tMax": t_max,
            "nSlots": self.lanes.iter().map(|l| l.slot + 1).max().unwrap_or(0),
            "target": target,
            "rampS": self.ramp_s,
            "benchEnd": self.bench_s,
            "peakActive": peak(&active),
            "peakTotal": peak(&total),
            "peakNewIsl": peak(&new_isl),
            "peaks": self.agent_peaks(),
            "sessions": sessions,
            "active": step_json(&active),
            "idle": step_json(&idle),
            "newIsl": step_json(&new_isl),
            "peakTput": peak(&tput),
            "prefillTput": step_json(&prefill),
            "decodeTput": step_json(&decode),
            "totalTput": step_json(&tput),
            "peakKv": peak(&kv),
            "kvCache": step_json(&kv),
            "peakLat": p99.iter().copied().fold(0.0f64, f64::max),
            "latencyBand": {"t": lat_t, "p50": p50, "p99": p99},
        })
    }
}

#[cfg(test)]
#[path = "swim_lane_tests.rs"]
mod tests;
