//! The 1-D SLA boundary planners: `monotonic_sla` and `smooth_isotonic`. Both look for the
//! highest integer value of one dimension (the concurrency) that meets every SLA filter, on
//! the premise that load only makes the SLA metrics worse.
//!
//! `monotonic_sla` is AIPerf's: an exponential probe from `lo` (doubling, then `hi`) until a
//! point fails, then bisection of `[highest pass, lowest fail]` until the gap is 1 or under 5 %
//! of the fail; a point's verdict latches only when `stability` runs of it agree (AIPerf's
//! stability window, 2 by default), so a noisy point is run again.
//!
//! `smooth_isotonic` is ringperf's simpler equivalent of AIPerf's planner of that name
//! (docs/search.md): the same probe and bisection, one run per point, each verdict read from a
//! non-increasing fit (pool-adjacent-violators) of every point's SLA margin so far. On monotone
//! data the fit is the data and it finds what `monotonic_sla` finds, in half the runs (no
//! stability window). The probe and bisection only ever run a point between the highest pass
//! and the lowest fail, so a noisy verdict is taken as it comes, as `monotonic_sla` with a
//! window of 1 takes it. AIPerf's planner further smooths the fit with a PCHIP curve, runs
//! replicates and bootstraps a CI; ringperf does not.

use super::sla::{Op, SlaFilter};

/// Relative precision at which bisection stops: `(fail - pass) / fail < 5 %`.
pub const PRECISION: f64 = 0.05;

/// A point's margin to its SLA filters: for each filter the slack relative to its threshold
/// (positive = met), the smallest over the filters. `None` when a metric is missing.
pub fn margin(filters: &[SlaFilter], read: impl Fn(&str, &str) -> Option<f64>) -> Option<f64> {
    filters
        .iter()
        .map(|f| {
            let v = read(&f.metric_tag, &f.stat)?;
            let scale = if f.threshold == 0.0 {
                1.0
            } else {
                f.threshold.abs()
            };
            Some(match f.op {
                Op::Lt | Op::Le => (f.threshold - v) / scale,
                Op::Gt | Op::Ge => (v - f.threshold) / scale,
            })
        })
        .try_fold(f64::INFINITY, |m, s| Some(m.min(s?)))
}

/// Why a boundary search stopped (AIPerf's `convergence_reason` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The bracket narrowed to 1 or under [`PRECISION`].
    PrecisionReached,
    /// Every point passed: the boundary is at or above `hi`.
    NoFailureInRange,
    /// Every point failed: the boundary is below `lo`.
    NoPassInRange,
    /// The iteration budget ran out.
    MaxIterations,
}

impl Reason {
    /// AIPerf's spelling for `planner` (`monotonic` or `smooth_isotonic`).
    pub fn name(self, planner_prefix: &str) -> String {
        match self {
            Reason::PrecisionReached => format!("{planner_prefix}_precision_reached"),
            Reason::NoFailureInRange => format!("{planner_prefix}_no_failure_in_range"),
            Reason::NoPassInRange => format!("{planner_prefix}_no_pass_in_range"),
            Reason::MaxIterations => "max_iterations".to_owned(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Probe,
    Bisect,
}

/// Which 1-D planner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Verdicts from each point's own runs, `stability` agreeing runs per point.
    Monotonic {
        /// Agreeing runs a verdict needs.
        stability: u32,
    },
    /// Verdicts from the isotonic fit of every point's margin.
    SmoothIsotonic,
}

/// An exponential-probe-then-bisect search for the highest feasible value in `[lo, hi]`.
#[derive(Clone, Debug)]
pub struct BoundarySearch {
    style: Style,
    hi: u64,
    max_iterations: u32,
    iterations: u32,
    phase: Phase,
    next: u64,
    pending: Option<u64>,
    /// Highest value with a latched pass.
    pub feasible_max: Option<u64>,
    /// Lowest value with a latched fail.
    pub infeasible_min: Option<u64>,
    /// Per value: passes and fails seen (monotonic).
    tallies: Vec<(u64, u32, u32)>,
    /// Every run: value and margin (smooth isotonic).
    margins: Vec<(u64, f64)>,
    reason: Option<Reason>,
    /// A verdict contradicted the bracket already found (a non-monotone SLA).
    pub non_monotonic: bool,
}

impl BoundarySearch {
    /// A search over `[lo, hi]` (`lo` at least 1, `hi > lo`) of at most `max_iterations` runs.
    pub fn new(style: Style, lo: u64, hi: u64, max_iterations: u32) -> Self {
        let lo = lo.max(1);
        Self {
            style,
            hi: hi.max(lo),
            max_iterations,
            iterations: 0,
            phase: Phase::Probe,
            next: lo,
            pending: None,
            feasible_max: None,
            infeasible_min: None,
            tallies: Vec::new(),
            margins: Vec::new(),
            reason: None,
            non_monotonic: false,
        }
    }

    /// Why the search stopped (`None` while it goes on).
    pub fn reason(&self) -> Option<Reason> {
        self.reason
    }

    /// The next value to run, or `None` when the search is over.
    pub fn ask(&mut self) -> Option<u64> {
        if self.reason.is_some() {
            return None;
        }
        if self.iterations >= self.max_iterations {
            self.reason = Some(Reason::MaxIterations);
            return None;
        }
        self.pending = Some(self.next);
        Some(self.next)
    }

    /// The result of the value last asked: whether it met every filter, and its margin
    /// ([`margin`]; `None` when a metric was missing, which counts as a fail).
    pub fn tell(&mut self, feasible: bool, margin: Option<f64>) {
        let Some(value) = self.pending.take() else {
            return;
        };
        self.iterations += 1;
        let verdict = match self.style {
            Style::Monotonic { stability } => self.tally(value, feasible, stability.max(1)),
            Style::SmoothIsotonic => {
                // A missing metric is the worst margin there is.
                let m = margin.unwrap_or(f64::NEG_INFINITY);
                let m = if feasible {
                    m.max(f64::MIN_POSITIVE)
                } else {
                    m.min(0.0)
                };
                self.margins.push((value, m));
                self.refit();
                Some(self.fitted_pass(value))
            }
        };
        let Some(verdict) = verdict else {
            // Not latched yet: run the same value again.
            self.next = value;
            return;
        };
        if let Style::Monotonic { .. } = self.style {
            self.absorb(value, verdict);
        }
        if self.phase == Phase::Probe {
            self.probe_step(value, verdict);
        } else {
            self.bisect_step();
        }
    }

    fn tally(&mut self, value: u64, feasible: bool, need: u32) -> Option<bool> {
        let i = match self.tallies.iter().position(|t| t.0 == value) {
            Some(i) => i,
            None => {
                self.tallies.push((value, 0, 0));
                self.tallies.len() - 1
            }
        };
        let t = &mut self.tallies[i];
        if feasible {
            t.1 += 1;
        } else {
            t.2 += 1;
        }
        if t.1 >= need {
            Some(true)
        } else if t.2 >= need {
            Some(false)
        } else {
            None
        }
    }

    fn absorb(&mut self, value: u64, pass: bool) {
        if pass {
            if self.infeasible_min.is_some_and(|f| value >= f) {
                self.non_monotonic = true;
            } else if self.feasible_max.is_none_or(|p| value > p) {
                self.feasible_max = Some(value);
            }
        } else if self.feasible_max.is_some_and(|p| value <= p) {
            self.non_monotonic = true;
        } else if self.infeasible_min.is_none_or(|f| value < f) {
            self.infeasible_min = Some(value);
        }
    }

    /// The fit's verdict at `value` (a value run at least once).
    fn fitted_pass(&self, value: u64) -> bool {
        self.fit_at(value).is_some_and(|m| m > 0.0)
    }

    fn fit_at(&self, value: u64) -> Option<f64> {
        let fit = isotonic_non_increasing(&self.margins);
        fit.iter().find(|(v, _)| *v == value).map(|(_, m)| *m)
    }

    /// Recomputes the bracket from the fit: the highest fitted pass and the lowest fitted
    /// fail above it.
    fn refit(&mut self) {
        let fit = isotonic_non_increasing(&self.margins);
        self.feasible_max = fit.iter().filter(|(_, m)| *m > 0.0).map(|(v, _)| *v).max();
        self.infeasible_min = fit
            .iter()
            .filter(|(v, m)| *m <= 0.0 && self.feasible_max.is_none_or(|p| *v > p))
            .map(|(v, _)| *v)
            .min();
    }

    fn probe_step(&mut self, value: u64, pass: bool) {
        if !pass {
            if self.feasible_max.is_none() {
                self.reason = Some(Reason::NoPassInRange);
                return;
            }
            self.phase = Phase::Bisect;
            self.bisect_step();
            return;
        }
        let doubled = value.saturating_mul(2);
        if doubled >= self.hi {
            if value >= self.hi {
                self.feasible_max = Some(self.hi);
                self.reason = Some(Reason::NoFailureInRange);
                return;
            }
            self.next = self.hi;
            return;
        }
        self.next = doubled;
    }

    fn bisect_step(&mut self) {
        let (Some(pass), Some(fail)) = (self.feasible_max, self.infeasible_min) else {
            self.reason = Some(if self.feasible_max.is_none() {
                Reason::NoPassInRange
            } else {
                Reason::NoFailureInRange
            });
            return;
        };
        let gap = fail.saturating_sub(pass);
        if gap <= 1 || (gap as f64) / (fail.max(1) as f64) < PRECISION {
            self.reason = Some(Reason::PrecisionReached);
            return;
        }
        self.next = (pass + gap / 2).clamp(pass + 1, fail - 1);
    }
}

/// The non-increasing least-squares fit (pool adjacent violators) of `(value, margin)`
/// observations: one fitted margin per distinct value, ascending by value. Observations of
/// one value are pooled first (their mean).
pub fn isotonic_non_increasing(obs: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let mut by_value: Vec<(u64, f64, f64)> = Vec::new(); // value, sum, count
    let mut sorted: Vec<(u64, f64)> = obs.to_vec();
    sorted.sort_by_key(|o| o.0);
    for (v, m) in sorted {
        // An infinite margin (a missing metric) would swamp a mean: clamp it to a large one.
        let m = m.clamp(-1e9, 1e9);
        match by_value.last_mut() {
            Some(last) if last.0 == v => {
                last.1 += m;
                last.2 += 1.0;
            }
            _ => by_value.push((v, m, 1.0)),
        }
    }
    // Blocks: (first index, last index, sum, count); merge while a block's mean is above
    // the one before it is not (non-increasing wanted).
    let mut blocks: Vec<(usize, usize, f64, f64)> = Vec::new();
    for (i, &(_, s, c)) in by_value.iter().enumerate() {
        blocks.push((i, i, s, c));
        while blocks.len() >= 2 {
            let b = blocks[blocks.len() - 1];
            let a = blocks[blocks.len() - 2];
            if a.2 / a.3 >= b.2 / b.3 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = (a.0, b.1, a.2 + b.2, a.3 + b.3);
        }
    }
    let mut out = Vec::with_capacity(by_value.len());
    for (first, last, s, c) in blocks {
        for bv in &by_value[first..=last] {
            out.push((bv.0, s / c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `search` against the SLA "value ≤ knee passes" (margin = knee + 0.5 - value),
    /// with `flip` turning the verdict of some runs; returns (answer, values run).
    fn drive(
        mut s: BoundarySearch,
        knee: u64,
        mut flip: impl FnMut(u64, usize) -> bool,
    ) -> (Option<u64>, Vec<u64>) {
        let mut ran = Vec::new();
        while let Some(v) = s.ask() {
            let mut m = knee as f64 + 0.5 - v as f64;
            if flip(v, ran.len()) {
                m = -m;
            }
            ran.push(v);
            s.tell(m > 0.0, Some(m));
            assert!(ran.len() <= 100, "runaway search: {ran:?}");
        }
        (s.feasible_max, ran)
    }

    #[test]
    fn monotonic_probes_by_doubling_then_bisects_to_the_knee() {
        // Knee 37 in [1, 1000], one run per verdict: 1 2 4 8 16 32 64(fail), then bisect
        // [32, 64]: 48 f, 40 f, 36 p, 38 f, 37 p -> gap 1.
        let s = BoundarySearch::new(Style::Monotonic { stability: 1 }, 1, 1000, 30);
        let (answer, ran) = drive(s, 37, |_, _| false);
        assert_eq!(ran, [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]);
        assert_eq!(answer, Some(37));
    }

    #[test]
    fn monotonic_finds_every_knee_within_precision() {
        for knee in [1u64, 2, 3, 5, 17, 63, 64, 65, 200, 511, 999] {
            let mut s = BoundarySearch::new(Style::Monotonic { stability: 1 }, 1, 1000, 40);
            let mut ran = 0;
            while let Some(v) = s.ask() {
                s.tell(v <= knee, Some(knee as f64 + 0.5 - v as f64));
                ran += 1;
            }
            let (p, f) = (s.feasible_max.unwrap(), s.infeasible_min.unwrap());
            assert!(p <= knee && knee < f, "knee {knee}: bracket [{p}, {f}]");
            assert!(
                f - p <= 1 || ((f - p) as f64) / (f as f64) < PRECISION,
                "{p} {f}"
            );
            assert_eq!(s.reason(), Some(Reason::PrecisionReached));
            assert!(ran <= 20, "knee {knee}: {ran} runs");
        }
    }

    #[test]
    fn stability_window_reruns_a_point_until_two_runs_agree() {
        // The first run of 8 fails by noise; the next two pass: 8 latches as a pass.
        let s = BoundarySearch::new(Style::Monotonic { stability: 2 }, 1, 16, 40);
        let (answer, ran) = drive(s, 12, |v, i| v == 8 && i == 6);
        assert_eq!(&ran[..10], [1, 1, 2, 2, 4, 4, 8, 8, 8, 16]);
        assert_eq!(answer, Some(12));
    }

    #[test]
    fn range_edges_end_the_search() {
        let mut all_pass = BoundarySearch::new(Style::Monotonic { stability: 1 }, 1, 10, 30);
        while let Some(v) = all_pass.ask() {
            assert!(v <= 10);
            all_pass.tell(true, Some(1.0));
        }
        assert_eq!(all_pass.reason(), Some(Reason::NoFailureInRange));
        assert_eq!(all_pass.feasible_max, Some(10));
        let mut none = BoundarySearch::new(Style::SmoothIsotonic, 4, 10, 30);
        assert_eq!(none.ask(), Some(4));
        none.tell(false, Some(-1.0));
        assert_eq!(none.ask(), None);
        assert_eq!(none.reason(), Some(Reason::NoPassInRange));
        assert_eq!(none.feasible_max, None);
        let mut budget = BoundarySearch::new(Style::Monotonic { stability: 1 }, 1, 1000, 3);
        while budget.ask().is_some() {
            budget.tell(true, Some(1.0));
        }
        assert_eq!(budget.reason(), Some(Reason::MaxIterations));
    }

    #[test]
    fn smooth_isotonic_matches_monotonic_on_monotone_data() {
        for knee in [1u64, 6, 37, 300] {
            let mono = drive(
                BoundarySearch::new(Style::Monotonic { stability: 1 }, 1, 1000, 30),
                knee,
                |_, _| false,
            );
            let iso = drive(
                BoundarySearch::new(Style::SmoothIsotonic, 1, 1000, 30),
                knee,
                |_, _| false,
            );
            assert_eq!(iso, mono, "knee {knee}");
            // Within the precision below the knee (300: bracket [296, 304], 8 / 304 < 5 %).
            let got = iso.0.unwrap();
            assert!(got <= knee && ((knee - got) as f64) / (knee as f64) < PRECISION);
        }
    }

    #[test]
    fn pava_fits_non_increasing_means() {
        let fit = isotonic_non_increasing(&[(1, 3.0), (2, 1.0), (3, 2.0), (4, -1.0), (2, 1.0)]);
        // 2's two runs pool to 1.0; 2 and 3 violate (1 < 2): pooled to (1+1+2)/3 = 4/3.
        assert_eq!(fit, [(1, 3.0), (2, 4.0 / 3.0), (3, 4.0 / 3.0), (4, -1.0)]);
    }

    #[test]
    fn margin_is_the_smallest_relative_slack() {
        let f = [
            SlaFilter::new("ttft", "p95", Op::Lt, 200.0),
            SlaFilter::new("frac", "avg", Op::Ge, 0.5),
        ];
        let read = |t: &str, _: &str| Some(if t == "ttft" { 150.0 } else { 0.6 });
        // ttft: (200 - 150) / 200 = 0.25; frac: (0.6 - 0.5) / 0.5 = 0.2.
        assert!((margin(&f, read).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(margin(&f, |_, _| None), None);
    }
}
