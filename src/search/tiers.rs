//! Multi-tier SLO search (`--search-sla-tier LABEL:FILTER[,FILTER...]`, 2 to 10 tiers), as
//! AIPerf 0.13's multi-tier planner does it (docs/search.md, "SLO tiers"): one search over one
//! integer dimension (the concurrency) finds the highest value each tier's filters allow.
//!
//! Every point run is judged against every tier (its filters and the `--search-sla` ones), and
//! each tier keeps its own bracket: the highest value it passed and the lowest it failed.
//!
//! 1. **Bracket.** From `lo`, the value doubles while every tier passes (`hi` last); the first
//!    point where any tier fails ends this phase (every tier failing at the first point ends
//!    the search: `no_pass_in_range`; every tier passing at `hi`: `no_failure_in_range`).
//! 2. **Bisection.** The next point is the middle of the widest bracket among the tiers that
//!    have both bounds; a tier converges when its gap is 1 or under 5 % of its failing value.
//!    A tier with only one bound is given a point twice (or half) that bound.
//!
//! Tiers whose filters are on the same metrics and stats with the same operators, one's
//! thresholds all stricter than the other's, are ordered: a pass of the strict tier is a pass
//! of the lenient one, a fail of the lenient one a fail of the strict one. A verdict that
//! contradicts an ordering turns that ordering off.

use serde_json::{Value, json};

use super::SearchError;
use super::planner::PRECISION;
use super::sla::{Op, SlaFilter};

/// Tiers allowed.
const TIERS: std::ops::RangeInclusive<usize> = 2..=10;

/// One tier: a label and the filters that must all pass.
#[derive(Clone, Debug, PartialEq)]
pub struct SloTier {
    /// Its label (`tier_N` when none was given).
    pub label: String,
    /// Its filters.
    pub filters: Vec<SlaFilter>,
}

impl SloTier {
    /// Parses one `--search-sla-tier` value, the `index`-th (from 0): `LABEL:FILTER[,...]`, or
    /// `FILTER[,...]` labelled `tier_<index + 1>`. The text before the first comma has a label
    /// when its colons are not exactly the three of a filter.
    ///
    /// # Errors
    /// An empty value or label, no filter, or a filter that does not parse.
    pub fn parse(value: &str, index: usize) -> Result<Self, SearchError> {
        let bad = |why: String| SearchError::flag("--search-sla-tier", format!("{value:?}: {why}"));
        if value.trim().is_empty() {
            return Err(SearchError::flag(
                "--search-sla-tier",
                "value must not be empty".to_owned(),
            ));
        }
        let head = value.split(',').next().unwrap_or_default();
        let (label, rest) = if head.matches(':').count() != 3 {
            let (label, rest) = value.split_once(':').unwrap_or((value, ""));
            if label.is_empty() {
                return Err(bad("label before ':' must not be empty".to_owned()));
            }
            (label.to_owned(), rest)
        } else {
            (format!("tier_{}", index + 1), value)
        };
        let parts: Vec<&str> = rest
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if parts.is_empty() {
            return Err(bad(format!(
                "tier '{label}' contains zero filters. Each tier must have at least one filter \
                 in 'metric_tag:stat:op:threshold' format"
            )));
        }
        let filters = parts
            .iter()
            .map(|f| {
                SlaFilter::parse(f)
                    .map_err(|e| bad(format!("error parsing filter {f:?} in tier '{label}': {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { label, filters })
    }

    /// `{label, filters}`, as `config.tiers` of the search history has it.
    pub fn to_json(&self) -> Value {
        json!({"label": self.label, "filters": self.filters.iter().map(filter_json).collect::<Vec<_>>()})
    }
}

/// Parses every `--search-sla-tier` value and checks the list: 2 to 10 tiers, labels unique.
///
/// # Errors
/// A value that does not parse, a count out of range, or a label twice.
pub fn parse_tiers(values: &[String]) -> Result<Vec<SloTier>, SearchError> {
    let tiers: Vec<SloTier> = values
        .iter()
        .enumerate()
        .map(|(i, v)| SloTier::parse(v, i))
        .collect::<Result<_, _>>()?;
    if !TIERS.contains(&tiers.len()) {
        return Err(SearchError::flag(
            "--search-sla-tier",
            format!(
                "expected between {} and {} tiers, got {}",
                TIERS.start(),
                TIERS.end(),
                tiers.len()
            ),
        ));
    }
    for (i, t) in tiers.iter().enumerate() {
        if let Some(j) = tiers[..i].iter().position(|u| u.label == t.label) {
            return Err(SearchError::flag(
                "--search-sla-tier",
                format!(
                    "duplicate label {:?} (tiers {} and {}). Each tier must have a unique label",
                    t.label,
                    j + 1,
                    i + 1
                ),
            ));
        }
    }
    Ok(tiers)
}

fn filter_json(f: &SlaFilter) -> Value {
    json!({"metric_tag": f.metric_tag, "stat": f.stat, "op": f.op.as_str(), "threshold": f.threshold})
}

/// Why a tier stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TierEnd {
    Precision,
    NoPass,
    NoFailure,
}

/// One tier's bracket.
#[derive(Clone, Debug)]
struct Bracket {
    feasible_max: Option<u64>,
    infeasible_min: Option<u64>,
    end: Option<TierEnd>,
    /// The first filter that failed at `infeasible_min` (with what was observed).
    breach: Option<Value>,
    probes: u32,
    non_monotonic: bool,
}

/// What a point showed one tier.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Every filter passed (and the client kept up).
    pub feasible: bool,
    /// The first filter that failed, with what was observed.
    pub breach: Option<Value>,
}

/// The multi-tier planner (module docs).
#[derive(Clone, Debug)]
pub struct MultiTier {
    tiers: Vec<SloTier>,
    brackets: Vec<Bracket>,
    /// `(strict, lenient)` tier index pairs, and whether each is still on.
    ordering: Vec<((usize, usize), bool)>,
    lo: u64,
    hi: u64,
    max_iterations: u32,
    iterations: u32,
    bracketing: bool,
    next: u64,
    pending: Option<u64>,
    done: bool,
    max_out: bool,
}

impl MultiTier {
    /// A search of `[lo, hi]` for each of `tiers`, at most `max_iterations` points.
    pub fn new(tiers: Vec<SloTier>, lo: u64, hi: u64, max_iterations: u32) -> Self {
        let n = tiers.len();
        let mut ordering = Vec::new();
        for a in 0..n {
            for b in 0..n {
                if a != b && stricter(&tiers[a], &tiers[b]) {
                    ordering.push(((a, b), true));
                }
            }
        }
        let lo = lo.max(1);
        let bracket = Bracket {
            feasible_max: None,
            infeasible_min: None,
            end: None,
            breach: None,
            probes: 0,
            non_monotonic: false,
        };
        Self {
            tiers,
            brackets: vec![bracket; n],
            ordering,
            lo,
            hi: hi.max(lo),
            max_iterations,
            iterations: 0,
            bracketing: true,
            next: lo,
            pending: None,
            done: false,
            max_out: false,
        }
    }

    /// The tiers.
    pub fn tiers(&self) -> &[SloTier] {
        &self.tiers
    }

    /// The next value to run, or `None` when the search is over.
    pub fn ask(&mut self) -> Option<u64> {
        if self.done || self.brackets.iter().all(|b| b.end.is_some()) {
            self.done = true;
            return None;
        }
        if self.iterations >= self.max_iterations {
            self.max_out = true;
            return None;
        }
        let value = if self.bracketing {
            self.next
        } else {
            match self.widest().or_else(|| self.missing_bound()) {
                Some(v) => v,
                None => {
                    self.done = true;
                    return None;
                }
            }
        };
        self.pending = Some(value);
        Some(value)
    }

    /// The verdicts of the value last asked for, one per tier.
    pub fn tell(&mut self, verdicts: &[Verdict]) {
        let Some(value) = self.pending.take() else {
            return;
        };
        self.iterations += 1;
        for (b, v) in self.brackets.iter_mut().zip(verdicts) {
            if b.end.is_some() {
                continue;
            }
            b.probes += 1;
            update(b, value, v);
        }
        for (i, v) in verdicts.iter().enumerate() {
            if self.brackets[i].end.is_none() {
                self.propagate(i, value, v.feasible);
            }
        }
        self.check_converged();
        if self.bracketing {
            if verdicts.iter().all(|v| v.feasible) {
                self.all_passed(value);
            } else if self.brackets.iter().all(|b| b.feasible_max.is_none()) {
                for b in self.brackets.iter_mut().filter(|b| b.end.is_none()) {
                    b.end = Some(TierEnd::NoPass);
                }
                self.done = true;
            } else {
                self.bracketing = false;
            }
        }
    }

    fn all_passed(&mut self, value: u64) {
        let next = (value * 2).max(value + 1);
        if next < self.hi {
            self.next = next;
        } else if value < self.hi {
            self.next = self.hi;
        } else {
            for b in self.brackets.iter_mut().filter(|b| b.end.is_none()) {
                b.feasible_max = Some(b.feasible_max.map_or(self.hi, |f| f.max(self.hi)));
                b.end = Some(TierEnd::NoFailure);
            }
            self.done = true;
        }
    }

    /// The middle of the widest open bracket (tiers with a gap of 1 converge on the way).
    fn widest(&mut self) -> Option<u64> {
        loop {
            let (i, gap) = self
                .brackets
                .iter()
                .enumerate()
                .filter(|(_, b)| b.end.is_none())
                .filter_map(|(i, b)| match (b.feasible_max, b.infeasible_min) {
                    (Some(f), Some(m)) if m > f => Some((i, m - f)),
                    _ => None,
                })
                .fold(None, |acc: Option<(usize, u64)>, (i, g)| match acc {
                    Some((_, best)) if best >= g => acc,
                    _ => Some((i, g)),
                })?;
            if gap <= 1 {
                self.brackets[i].end = Some(TierEnd::Precision);
                continue;
            }
            return self.brackets[i].feasible_max.map(|f| f + gap / 2);
        }
    }

    /// A point for a tier that has one bound only: twice its pass (at most `hi`), or half its
    /// fail (at least `lo`).
    fn missing_bound(&mut self) -> Option<u64> {
        let (lo, hi) = (self.lo, self.hi);
        for b in self.brackets.iter_mut().filter(|b| b.end.is_none()) {
            match (b.feasible_max, b.infeasible_min) {
                (Some(f), None) => {
                    let c = (f * 2).min(hi);
                    if c > f {
                        return Some(c);
                    }
                    b.feasible_max = Some(hi);
                    b.end = Some(TierEnd::NoFailure);
                }
                (None, Some(m)) => {
                    let c = (m / 2).max(lo);
                    if c < m {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn propagate(&mut self, tier: usize, value: u64, feasible: bool) {
        for k in 0..self.ordering.len() {
            let ((strict, lenient), on) = self.ordering[k];
            if !on {
                continue;
            }
            let target = match feasible {
                false if lenient == tier => strict,
                true if strict == tier => lenient,
                _ => continue,
            };
            let b = &mut self.brackets[target];
            if b.end.is_some() {
                continue;
            }
            let moved = if feasible {
                let up = b.feasible_max.is_none_or(|f| value > f);
                if up {
                    b.feasible_max = Some(value);
                }
                up
            } else {
                let down = b.infeasible_min.is_none_or(|m| value < m);
                if down {
                    b.infeasible_min = Some(value);
                }
                down
            };
            if moved && self.contradicts(strict, lenient) {
                self.ordering[k].1 = false;
            }
        }
    }

    fn contradicts(&self, strict: usize, lenient: usize) -> bool {
        let (s, l) = (&self.brackets[strict], &self.brackets[lenient]);
        let over = |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(x), Some(y)) if x >= y);
        over(s.feasible_max, l.infeasible_min)
            || over(l.feasible_max, l.infeasible_min)
            || over(s.feasible_max, s.infeasible_min)
    }

    fn check_converged(&mut self) {
        for b in self.brackets.iter_mut().filter(|b| b.end.is_none()) {
            let (Some(f), Some(m)) = (b.feasible_max, b.infeasible_min) else {
                continue;
            };
            if f >= m {
                // A pass above a fail: the stale fail is dropped and the search goes on.
                b.non_monotonic = true;
                b.infeasible_min = None;
                b.breach = None;
                continue;
            }
            let gap = m - f;
            if gap <= 1 || (gap as f64 / m as f64) < PRECISION {
                b.end = Some(TierEnd::Precision);
            }
        }
    }

    /// AIPerf's `convergence_reason` once the search is over.
    pub fn reason(&self) -> Option<&'static str> {
        if self.max_out {
            Some("max_iterations")
        } else if self.done {
            Some("multi_tier_all_converged")
        } else {
            None
        }
    }

    /// A tier's answer: the highest value it passed.
    pub fn boundary(&self, tier: usize) -> Option<u64> {
        self.brackets.get(tier).and_then(|b| b.feasible_max)
    }

    /// `tier_results` of the search history; `metrics_at(value)` gives the figures of the
    /// latest point run at a value (`boundary_metrics`), `global` the `--search-sla` filters
    /// every tier also has.
    pub fn results_json(
        &self,
        global: &[SlaFilter],
        metrics_at: impl Fn(u64) -> Option<Value>,
    ) -> Value {
        let list: Vec<Value> = self
            .tiers
            .iter()
            .zip(&self.brackets)
            .map(|(t, b)| {
                let (status, reason) = match b.end {
                    None => ("partial", None),
                    Some(TierEnd::Precision) => ("converged", Some("multi_tier_precision_reached")),
                    Some(TierEnd::NoPass) => ("no_pass_in_range", Some("no_pass_in_range")),
                    Some(TierEnd::NoFailure) => {
                        ("no_failure_in_range", Some("no_failure_in_range"))
                    }
                };
                let upper = match (b.feasible_max, b.infeasible_min) {
                    (Some(f), Some(m)) if m <= f => None,
                    (_, m) => m,
                };
                let filters: Vec<Value> = t.filters.iter().chain(global).map(filter_json).collect();
                json!({
                    "label": t.label,
                    "boundary_concurrency": b.feasible_max,
                    "convergence_status": status,
                    "convergence_reason": reason,
                    "binding_constraint": b.breach,
                    "bracket_lower": b.feasible_max,
                    "bracket_upper": upper,
                    "confidence_interval": null,
                    "probe_count": b.probes,
                    "boundary_metrics": b.feasible_max.and_then(&metrics_at),
                    "filters": filters,
                })
            })
            .collect();
        Value::from(list)
    }

    /// `tier_metadata` of the search history.
    pub fn metadata_json(&self, points: usize) -> Value {
        let pairs: Vec<Value> = self
            .ordering
            .iter()
            .filter(|(_, on)| *on)
            .map(|((s, l), _)| json!({"strict": self.tiers[*s].label, "lenient": self.tiers[*l].label}))
            .collect();
        json!({
            "actual_probe_count": points,
            "tier_evaluation_count": self.brackets.iter().map(|b| b.probes).sum::<u32>(),
            "ordering_detected": !pairs.is_empty(),
            "ordering_pairs": if pairs.is_empty() { Value::Null } else { Value::from(pairs) },
        })
    }

    /// The bracket of the tier with the highest pass (the last tier when none passed), for
    /// `boundary_summary`: `(feasible_max, infeasible_min, first breach)`.
    pub fn most_lenient(&self) -> (Option<u64>, Option<u64>, Option<Value>) {
        let b = self
            .brackets
            .iter()
            .filter(|b| b.feasible_max.is_some())
            .fold(None, |acc: Option<&Bracket>, b| match acc {
                Some(a) if a.feasible_max >= b.feasible_max => acc,
                _ => Some(b),
            })
            .or(self.brackets.last());
        b.map_or((None, None, None), |b| {
            (b.feasible_max, b.infeasible_min, b.breach.clone())
        })
    }

    /// Whether any tier saw a pass above a fail.
    pub fn non_monotonic(&self) -> bool {
        self.brackets.iter().any(|b| b.non_monotonic)
    }
}

/// One tier's bracket after a verdict at `value`.
fn update(b: &mut Bracket, value: u64, v: &Verdict) {
    if v.feasible {
        if b.infeasible_min.is_some_and(|m| value >= m) {
            b.non_monotonic = true;
        }
        if b.feasible_max.is_none_or(|f| value > f) {
            b.feasible_max = Some(value);
        }
    } else {
        if b.feasible_max.is_some_and(|f| value <= f) {
            b.non_monotonic = true;
        }
        if b.infeasible_min.is_none_or(|m| value < m) {
            b.infeasible_min = Some(value);
            if v.breach.is_some() {
                b.breach = v.breach.clone();
            }
        }
    }
}

/// Tier `a` is stricter than `b`: the same `(metric, stat)` pairs, the same operator on each,
/// and every threshold of `a` harder (higher for `gt`/`ge`, lower for `lt`/`le`).
fn stricter(a: &SloTier, b: &SloTier) -> bool {
    fn keys(t: &SloTier) -> Vec<(&str, &str)> {
        let mut k: Vec<(&str, &str)> = t
            .filters
            .iter()
            .map(|f| (f.metric_tag.as_str(), f.stat.as_str()))
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    }
    if keys(a) != keys(b) {
        return false;
    }
    a.filters.iter().all(|fa| {
        let Some(fb) = b
            .filters
            .iter()
            .rev()
            .find(|fb| fb.metric_tag == fa.metric_tag && fb.stat == fa.stat)
        else {
            return false;
        };
        fa.op == fb.op
            && match fa.op {
                Op::Gt | Op::Ge => fa.threshold > fb.threshold,
                Op::Lt | Op::Le => fa.threshold < fb.threshold,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiers(v: &[&str]) -> Vec<SloTier> {
        parse_tiers(&v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).expect("tiers")
    }

    #[test]
    fn tiers_parse_as_aiperf_reads_them() {
        let t = tiers(&[
            "tight:time_to_first_token:p95:lt:45,request_latency:avg:le:200",
            "time_to_first_token:p95:lt:135",
        ]);
        assert_eq!(t[0].label, "tight");
        assert_eq!(t[0].filters.len(), 2);
        assert_eq!(t[1].label, "tier_2", "no label: tier_<position>");
        assert_eq!(t[1].filters[0].threshold, 135.0);
        let e = |v: &[&str]| parse_tiers(&v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let one = e(&["a:time_to_first_token:p95:lt:1"])
            .unwrap_err()
            .to_string();
        assert!(
            one.contains("expected between 2 and 10 tiers, got 1"),
            "{one}"
        );
        let dup = e(&["a:ttft:p95:lt:1", "a:ttft:p95:lt:2"])
            .unwrap_err()
            .to_string();
        assert!(
            dup.contains("duplicate label \"a\" (tiers 1 and 2)"),
            "{dup}"
        );
        let empty = e(&["a:", "b:ttft:p95:lt:2"]).unwrap_err().to_string();
        assert!(empty.contains("tier 'a' contains zero filters"), "{empty}");
        let stat = e(&["a:ttft:p42:lt:1", "b:ttft:p95:lt:2"])
            .unwrap_err()
            .to_string();
        assert!(
            stat.contains("error parsing filter \"ttft:p42:lt:1\" in tier 'a'"),
            "{stat}"
        );
    }

    /// Runs the planner against a server whose TTFT at value c is `ttft(c)`, for tiers
    /// `TTFT < t` for each t; returns the values run and the planner.
    fn search(
        thresholds: &[f64],
        lo: u64,
        hi: u64,
        ttft: impl Fn(u64) -> f64,
    ) -> (Vec<u64>, MultiTier) {
        let specs: Vec<String> = thresholds
            .iter()
            .enumerate()
            .map(|(i, t)| format!("t{i}:time_to_first_token:p95:lt:{t}"))
            .collect();
        let mut p = MultiTier::new(parse_tiers(&specs).expect("tiers"), lo, hi, 30);
        let mut run = Vec::new();
        while let Some(c) = p.ask() {
            run.push(c);
            let verdicts: Vec<Verdict> = thresholds
                .iter()
                .map(|t| Verdict {
                    feasible: ttft(c) < *t,
                    breach: None,
                })
                .collect();
            p.tell(&verdicts);
        }
        (run, p)
    }

    #[test]
    fn each_tier_finds_its_own_boundary() {
        // TTFT = 10 c ms: under 45 up to c = 4, under 135 up to c = 13.
        let (run, p) = search(&[45.0, 135.0], 1, 32, |c| 10.0 * c as f64);
        assert_eq!(p.boundary(0), Some(4));
        assert_eq!(p.boundary(1), Some(13));
        // Doubling until the first fail of any tier (8 fails t0), then bisection of the
        // widest bracket; t0 fails at 8 tells nothing of t1, so t1 is probed at 16.
        assert_eq!(&run[..4], &[1, 2, 4, 8]);
        assert_eq!(p.reason(), Some("multi_tier_all_converged"));
        let m = p.metadata_json(run.len());
        assert_eq!(m["ordering_detected"], true);
        assert_eq!(
            m["ordering_pairs"],
            json!([{"strict": "t0", "lenient": "t1"}])
        );
        let r = p.results_json(&[], |_| None);
        assert_eq!(r[0]["convergence_status"], "converged");
        assert_eq!(r[0]["bracket_upper"], 5);
        assert_eq!(r[1]["bracket_upper"], 14);
    }

    #[test]
    fn aiperfs_recorded_search_is_replayed_probe_for_probe() {
        // tests/data/aiperf-search/sla-tiers: AIPerf's p95 TTFT at each concurrency it ran.
        let p95 = |c: u64| match c {
            1 => 48.855_226_5,
            2 => 58.104_998,
            4 => 131.151_300_75,
            8 => 295.303_439,
            6 => 234.943_555_5,
            5 => 187.995_789_25,
            _ => panic!("AIPerf never ran concurrency {c}"),
        };
        let (run, p) = search(&[45.0, 135.0], 1, 8, p95);
        assert_eq!(run, [1, 2, 4, 8, 6, 5]);
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/aiperf-search/sla-tiers/search_history.json"
        ))
        .expect("fixture");
        let aiperf: Value = serde_json::from_str(&text).expect("json");
        let ours = p.results_json(&[], |_| None);
        for (i, label) in ["t0", "t1"].iter().enumerate() {
            assert_eq!(ours[i]["label"], *label);
            for k in [
                "boundary_concurrency",
                "convergence_status",
                "convergence_reason",
                "bracket_lower",
                "bracket_upper",
                "probe_count",
            ] {
                assert_eq!(ours[i][k], aiperf["tier_results"][i][k], "tier {i} {k}");
            }
        }
        let mut meta = p.metadata_json(run.len());
        meta["ordering_pairs"] = json!([{"strict": "tight", "lenient": "loose"}]);
        assert_eq!(meta, aiperf["tier_metadata"]);
        assert_eq!(p.reason(), aiperf["convergence_reason"].as_str());
    }

    #[test]
    fn every_tier_failing_at_lo_or_passing_at_hi_ends_the_search() {
        let (run, p) = search(&[5.0, 8.0], 1, 8, |c| 10.0 * c as f64);
        assert_eq!(run, [1]);
        assert_eq!(
            p.results_json(&[], |_| None)[1]["convergence_status"],
            "no_pass_in_range"
        );
        let (run, p) = search(&[500.0, 800.0], 1, 8, |c| 10.0 * c as f64);
        assert_eq!(run, [1, 2, 4, 8]);
        assert_eq!(p.boundary(0), Some(8));
        assert_eq!(
            p.results_json(&[], |_| None)[0]["convergence_status"],
            "no_failure_in_range"
        );
    }
}
