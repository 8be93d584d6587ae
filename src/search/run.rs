//! The search loop: each point a planner asks for is one variation run by the sweep runner
//! ([`Sweeper::run_variation`], every trial of it), judged against the SLA filters on the
//! aggregate's means, told back to the planner; `search_history.json` is written after every
//! point (as AIPerf writes it, so a cut search leaves its trajectory), then the sweep
//! aggregate of the points, then the answer line.
//!
//! A point whose client-health verdict failed (the client fell behind, so its figures measure
//! the client) is never the answer: it is told to the planner as infeasible (the load was not
//! delivered) and marked `client_fell_behind` in the history; it is not re-run.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::SearchError;
use super::bayes::Bayesian;
use super::config::Search;
use super::planner::{BoundarySearch, Style, margin};
use super::recipe::{
    AdaptiveSpec, CONCURRENCY_PATH, Direction, Expansion, GridSpec, ISL_PATH, OSL_PATH,
    PlannerKind, Recipe,
};
use super::sla::SlaFilter;
use super::tiers::{MultiTier, Verdict};
use crate::plan::Plan;
use crate::run::{Outcome, RunOptions};
use crate::sweep::annotate::{Annotations, SlaBound};
use crate::sweep::{
    ListValues, Override, ParamValue, SweepPlan, SweepableFlag, Sweeper, Variation, VariationResult,
};

/// The search history file, beside `sweep_aggregate/`.
pub const HISTORY_FILE: &str = "search_history.json";

/// The ISL as the recipes and `--search-space` name it: the `--isl` flag under AIPerf's
/// recipe path `datasets.main.prompts.isl` (not the `--isl` list's `…isl.mean`), so the
/// variations are `isl_N` as AIPerf names them.
static RECIPE_ISL: SweepableFlag = SweepableFlag {
    names: &[
        "--prompt-input-tokens-mean",
        "--synthetic-input-tokens-mean",
        "--isl",
    ],
    path: ISL_PATH,
    whole: true,
    id: "isl_mean",
    set: |a, v| a.isl_mean = v as u32,
};

/// The OSL likewise (`datasets.main.prompts.osl`, variations `osl_N`).
static RECIPE_OSL: SweepableFlag = SweepableFlag {
    names: &[
        "--prompt-output-tokens-mean",
        "--output-tokens-mean",
        "--osl",
    ],
    path: OSL_PATH,
    whole: true,
    id: "osl_mean",
    set: |a, v| a.osl_mean = Some(v as u32),
};

/// The sweep flag that carries an AIPerf parameter path.
fn flag_of(path: &str) -> Option<&'static SweepableFlag> {
    let name = match path {
        CONCURRENCY_PATH => "concurrency",
        ISL_PATH => return Some(&RECIPE_ISL),
        OSL_PATH => return Some(&RECIPE_OSL),
        _ => path.rsplit('.').next()?,
    };
    SweepableFlag::lookup(name)
}

fn flag_for(path: &str) -> Result<&'static SweepableFlag, SearchError> {
    flag_of(path).ok_or_else(|| {
        SearchError::flag(
            "--search-space",
            format!(
                "{path:?}: not a parameter ringperf sweeps (e.g. phases.profiling.concurrency)"
            ),
        )
    })
}

fn param(flag: &SweepableFlag, v: f64) -> ParamValue {
    if flag.whole {
        ParamValue::Whole(v.round().max(0.0) as u64)
    } else {
        ParamValue::Float(v)
    }
}

/// One point run, as the history records it.
struct Iteration {
    values: Map<String, Value>,
    objective: Option<f64>,
    feasible: bool,
    fell_behind: bool,
    non_monotonic: bool,
    breach: Option<Value>,
}

/// The planner of an adaptive search.
enum Planner {
    Boundary(BoundarySearch),
    Bayes(Bayesian),
    Tiers(MultiTier),
}

impl Planner {
    fn new(s: &AdaptiveSpec, stop: crate::plan::SearchStop) -> Self {
        let dim = &s.space[0];
        if !s.tiers.is_empty() {
            return Planner::Tiers(MultiTier::new(
                s.tiers.clone(),
                dim.lo as u64,
                dim.hi as u64,
                s.max_iterations,
            ));
        }
        match s.planner {
            PlannerKind::MonotonicSla => Planner::Boundary(BoundarySearch::new(
                Style::Monotonic {
                    stability: stop.monotonic_stability_trials,
                },
                dim.lo as u64,
                dim.hi as u64,
                s.max_iterations,
            )),
            PlannerKind::SmoothIsotonic => Planner::Boundary(BoundarySearch::new(
                Style::SmoothIsotonic,
                dim.lo as u64,
                dim.hi as u64,
                s.max_iterations,
            )),
            PlannerKind::Bayesian | PlannerKind::Optuna | PlannerKind::OptunaTpe => {
                let b = Bayesian::new(
                    s.space.clone(),
                    s.objective.direction,
                    s.max_iterations,
                    s.initial_points,
                    s.random_seed.unwrap_or(0),
                )
                .with_stop(stop);
                Planner::Bayes(if s.planner == PlannerKind::OptunaTpe {
                    b.with_tpe()
                } else {
                    b
                })
            }
        }
    }

    fn ask(&mut self) -> Option<Vec<f64>> {
        match self {
            Planner::Boundary(b) => b.ask().map(|v| vec![v as f64]),
            Planner::Bayes(b) => b.ask(),
            Planner::Tiers(m) => m.ask().map(|v| vec![v as f64]),
        }
    }

    fn reason(&self, planner: PlannerKind) -> Option<String> {
        match self {
            Planner::Boundary(b) => b.reason().map(|r| {
                r.name(if planner == PlannerKind::MonotonicSla {
                    "monotonic"
                } else {
                    "smooth_isotonic"
                })
            }),
            Planner::Bayes(b) => b.reason().map(str::to_owned),
            Planner::Tiers(m) => m.reason().map(str::to_owned),
        }
    }
}

/// The plan of a search: the base plan's settings swept over `lists`.
fn plan_for(base: &Plan, lists: &[ListValues]) -> Result<SweepPlan, SearchError> {
    SweepPlan::from_cli(base, lists)?
        .ok_or_else(|| SearchError::bounds("the search has no point to run".to_owned()))
}

/// Runs `search` from the plan `base` (the command line with the list values `lists` cut to
/// their first element); returns the outcome of all its runs.
pub fn run_search(
    search: &Search,
    base: &Plan,
    lists: &[ListValues],
    opts: RunOptions,
    is_tty: bool,
) -> Result<Outcome, SearchError> {
    let args = &base.settings;
    for w in &search.warnings {
        eprintln!("ringperf: warning: {w}");
    }
    if args.shard.shard_count.is_some_and(|n| n > 1) {
        // Each shard would choose its next point from its own share of the load.
        return Err(SearchError::flag(
            "--shard-count",
            "a search chooses each point from the last one's figures, which a shard sees only \
             a share of: shard a grid sweep (list values) instead"
                .to_owned(),
        ));
    }
    if let Some((f, _)) = lists
        .iter()
        .find(|(f, _)| f.path != CONCURRENCY_PATH)
        .or(lists.first().filter(|_| !is_pareto(search)))
    {
        return Err(SearchError::flag(
            "--search-recipe",
            format!(
                "a search chooses its own points: a list value on {} is refused beside it",
                f.names[0]
            ),
        ));
    }
    match &search.expansion {
        Expansion::Adaptive(s) => adaptive(s, base, opts, is_tty),
        Expansion::Grid(g) => grid(g, base, opts, is_tty),
    }
}

/// A config file's `post_process` hook (`None` without one): the handler and file it names,
/// its parameters read as AIPerf's handlers read them.
fn file_post_process(base: &Plan) -> Option<super::recipe::PostProcess> {
    base.file_only
        .sweep_post_process
        .as_ref()
        .map(|p| super::recipe::PostProcess {
            handler: p.handler.clone(),
            output_filename: p.output_filename.clone(),
            derivation: super::derived::Derivation::from_params(&p.handler, &p.params),
        })
}

/// A sweep's post-process hook over its aggregate: the derived file, or AIPerf's error
/// sidecar when the handler refuses; the file written is named on stdout.
///
/// # Errors
/// The file cannot be written.
fn post_process(
    plan: &SweepPlan,
    base: &Path,
    pp: &super::recipe::PostProcess,
    results: &[VariationResult],
) -> Result<(), SearchError> {
    let doc = crate::sweep::output::sweep_json(plan, results);
    let dir = plan.sweep_aggregate_dir(base);
    let written = super::derived::write_derived(
        &dir,
        &pp.handler,
        &pp.output_filename,
        &pp.derivation,
        &doc,
    )?;
    if let Some(path) = written {
        println!("Search Recipe Derived File: {}", path.display());
    }
    Ok(())
}

/// A plain sweep (list values, variants, a file's scenarios), then its config file's
/// `post_process` hook when it has one.
///
/// # Errors
/// As [`crate::sweep::run_sweep`], or the derived file cannot be written.
pub fn run_sweep(plan: SweepPlan, opts: RunOptions, is_tty: bool) -> Result<Outcome, SearchError> {
    let hook = file_post_process(&plan.base);
    let f = crate::sweep::run::run_sweep_results(plan, opts, is_tty)?;
    if let Some(pp) = hook {
        post_process(&f.plan, &f.base, &pp, &f.results)?;
    }
    Ok(f.outcome)
}

/// What `recipe` and its SLA `filters` add to the sweep aggregate.
pub fn annotations(filters: &[SlaFilter], recipe: Option<Recipe>) -> Annotations {
    Annotations {
        sla: filters
            .iter()
            .map(|f| SlaBound {
                metric_tag: f.metric_tag.clone(),
                stat: f.stat.clone(),
                op: f.op.as_str(),
                threshold: f.threshold,
            })
            .collect(),
        pareto_axes: recipe.and_then(Recipe::pareto_axes),
    }
}

fn is_pareto(search: &Search) -> bool {
    matches!(&search.expansion, Expansion::Grid(g) if !g.scenarios.is_empty())
}

fn adaptive(
    s: &AdaptiveSpec,
    base: &Plan,
    opts: RunOptions,
    is_tty: bool,
) -> Result<Outcome, SearchError> {
    // What a config file adds that no flag carries: its `recipe_name` is the search's recipe
    // where the flags name none (the aggregate's Pareto axes, the history's `recipe`, as AIPerf
    // reads it), and its dimensions' `prior: log-uniform`.
    let fo = &base.file_only;
    let file_recipe = match (s.recipe, fo.sweep_recipe.as_deref()) {
        (None, Some(name)) => super::recipe::Recipe::parse(name).ok(),
        _ => None,
    };
    let named;
    let s = if file_recipe.is_some() || !fo.search_log_priors.is_empty() {
        let mut spec = s.clone();
        spec.recipe = spec.recipe.or(file_recipe);
        for d in &mut spec.space {
            if fo.search_log_priors.contains(&d.path) {
                d.prior = super::recipe::Prior::LogUniform;
            }
        }
        named = spec;
        &named
    } else {
        s
    };
    let flags: Vec<&'static SweepableFlag> = s
        .space
        .iter()
        .map(|d| flag_for(&d.path))
        .collect::<Result<_, _>>()?;
    let stop = base.file_only.search_stop;
    let n_d_keys = stop.is_some_and(|st| {
        let d = crate::plan::SearchStop::default();
        (
            st.plateau_window,
            st.plateau_threshold,
            st.improvement_patience,
        ) != (
            d.plateau_window,
            d.plateau_threshold,
            d.improvement_patience,
        )
    });
    if n_d_keys
        && matches!(
            s.planner,
            PlannerKind::MonotonicSla | PlannerKind::SmoothIsotonic
        )
    {
        eprintln!(
            "ringperf: warning: Three-signal convergence keys only apply to N-D planners \
             (bayesian, optuna). Selected planner '{}' uses algorithm-specific termination; \
             the values given will be ignored.",
            s.planner.name()
        );
    }
    let mut planner = Planner::new(s, stop.unwrap_or_default());
    let Some(first) = planner.ask() else {
        return Err(SearchError::bounds(
            "the search has no point to run".to_owned(),
        ));
    };
    let lists: Vec<ListValues> = flags
        .iter()
        .zip(&first)
        .map(|(f, &v)| (*f, vec![param(f, v)]))
        .collect();
    let mut plan = plan_for(base, &lists)?;
    plan.annotations = annotations(&s.sla_filters, s.recipe);
    plan.variations = vec![point(0, &flags, &first)];
    plan.no_sweep_table = true;
    plan.at_most = Some(s.max_iterations);
    let sweeper = Sweeper::new(plan, opts, is_tty)?;
    let base = sweeper.artifact_dir().to_path_buf();
    let mut results: Vec<VariationResult> = Vec::new();
    let mut history: Vec<Iteration> = Vec::new();
    let mut next = Some(first);
    while let Some(x) = next.take() {
        if !results.is_empty() {
            sweeper.cool_down(sweeper.plan().variation_cooldown_seconds, "the next point");
        }
        let v = point(results.len(), &flags, &x);
        let r = sweeper.run_variation(&v)?;
        if r.cancelled {
            results.push(r);
            break;
        }
        let values = s
            .space
            .iter()
            .zip(&flags)
            .zip(&x)
            .map(|((d, f), &xv)| (d.path.clone(), param(f, xv).to_json()))
            .collect();
        let it = judge(s, &r, values);
        match &mut planner {
            Planner::Boundary(b) => {
                let m = margin(&s.sla_filters, |t, st| r.mean(t, st));
                let before = b.non_monotonic;
                b.tell(it.feasible, if it.fell_behind { None } else { m });
                history.push(Iteration {
                    non_monotonic: b.non_monotonic && !before,
                    ..it
                });
            }
            Planner::Bayes(b) => {
                b.tell(it.feasible, it.objective);
                history.push(it);
            }
            Planner::Tiers(m) => {
                let verdicts = tier_verdicts(s, m, &r);
                let before = m.non_monotonic();
                m.tell(&verdicts);
                history.push(Iteration {
                    feasible: verdicts.iter().any(|v| v.feasible),
                    non_monotonic: m.non_monotonic() && !before,
                    ..it
                });
            }
        }
        results.push(r);
        write_history(
            &base,
            s,
            &history,
            &results,
            planner.reason(s.planner),
            &planner,
        )?;
        next = planner.ask();
    }
    write_history(
        &base,
        s,
        &history,
        &results,
        planner.reason(s.planner),
        &planner,
    )?;
    let swept = sweeper.plan().clone();
    let outcome = sweeper.finish(&results)?;
    if let Some(pp) = file_post_process(&swept.base) {
        post_process(&swept, &base, &pp, &results)?;
    }
    match &planner {
        Planner::Tiers(m) => {
            for line in tier_answers(s, &history, m) {
                println!("{line}");
            }
        }
        _ => println!("{}", answer(s, &history, &planner)),
    }
    let behind = history.iter().filter(|h| h.fell_behind).map(|h| &h.values);
    if let Some(line) = excluded_line(behind) {
        println!("{line}");
    }
    Ok(outcome)
}

/// The variation of point `x` (its directory `search_iter_NNNN`, as AIPerf labels a search's
/// points, so a point run twice keeps both runs).
fn point(index: usize, flags: &[&'static SweepableFlag], x: &[f64]) -> Variation {
    let values = flags
        .iter()
        .zip(x)
        .map(|(f, &v)| Override {
            flag: f,
            value: param(f, v),
        })
        .collect();
    let mut v = Variation::new(index, values);
    v.label = format!("search_iter_{index:04}");
    v.scenario = true;
    v
}

/// A point's verdict: feasible when the client kept up and every filter passes on the
/// aggregate's means.
fn judge(s: &AdaptiveSpec, r: &VariationResult, values: Map<String, Value>) -> Iteration {
    let read = |t: &str, st: &str| r.mean(t, st);
    let fell_behind = r.client_fell_behind;
    let usable = r.aggregate.is_some() && !fell_behind;
    let feasible = usable && s.sla_filters.iter().all(|f| passes_by(f, read));
    let breach = s
        .sla_filters
        .iter()
        .find(|f| !passes_by(f, read))
        .map(|f| breach_json(f, read(&f.metric_tag, &f.stat)));
    Iteration {
        values,
        objective: read(&s.objective.metric, &s.objective.stat),
        feasible,
        fell_behind,
        non_monotonic: false,
        breach,
    }
}

/// Each tier's verdict on a point: its filters and the `--search-sla` ones, on the
/// aggregate's means; never feasible when the client fell behind.
fn tier_verdicts(s: &AdaptiveSpec, m: &MultiTier, r: &VariationResult) -> Vec<Verdict> {
    let read = |t: &str, st: &str| r.mean(t, st);
    let usable = r.aggregate.is_some() && !r.client_fell_behind;
    m.tiers()
        .iter()
        .map(|t| {
            let mut all = t.filters.iter().chain(&s.sla_filters);
            let breach = all
                .find(|f| !passes_by(f, read))
                .map(|f| breach_json(f, read(&f.metric_tag, &f.stat)));
            Verdict {
                feasible: usable && breach.is_none(),
                breach,
            }
        })
        .collect()
}

/// `boundary_metrics` of a tier: every stat of every metric of the first trial's summary JSON
/// of the latest point run at `value`, as AIPerf lists them.
fn metrics_at(
    s: &AdaptiveSpec,
    history: &[Iteration],
    results: &[VariationResult],
    value: u64,
) -> Option<Value> {
    const STATS: [&str; 13] = [
        "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std",
    ];
    let path = &s.space[0].path;
    let i = history
        .iter()
        .rposition(|h| h.values.get(path).and_then(Value::as_f64) == Some(value as f64))?;
    let trial = results.get(i)?.trials.first()?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&trial.summary).ok()?).ok()?;
    let mut out = Map::new();
    for (tag, block) in doc.as_object()? {
        let Some(block) = block.as_object() else {
            continue;
        };
        let stats: Map<String, Value> = STATS
            .iter()
            .filter_map(|st| {
                let v = block.get(*st)?.as_f64().filter(|x| x.is_finite())?;
                Some(((*st).to_owned(), Value::from(v)))
            })
            .collect();
        if !stats.is_empty() {
            out.insert(tag.clone(), Value::Object(stats));
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn passes_by(f: &SlaFilter, read: impl Fn(&str, &str) -> Option<f64>) -> bool {
    read(&f.metric_tag, &f.stat).is_some_and(|v| f.op.holds(v, f.threshold))
}

fn filter_json(f: &SlaFilter) -> Value {
    json!({"metric_tag": f.metric_tag, "stat": f.stat, "op": f.op.as_str(), "threshold": f.threshold})
}

fn breach_json(f: &SlaFilter, observed: Option<f64>) -> Value {
    let mut v = filter_json(f);
    v["observed"] = json!(observed);
    v
}

fn iteration_json(i: usize, it: &Iteration) -> Value {
    json!({
        "iteration_idx": i,
        "variation_values": it.values,
        "objective_values": it.objective.map(|o| vec![o]),
        "feasible": it.feasible,
        "non_monotonic_warning": it.non_monotonic,
        "client_fell_behind": it.fell_behind,
    })
}

/// The index of the answer: the feasible point of the best objective (Bayesian), or the
/// latest feasible point at the boundary (the 1-D planners).
fn best_index(s: &AdaptiveSpec, history: &[Iteration], planner: &Planner) -> Option<usize> {
    let feasible = history.iter().enumerate().filter(|(_, h)| h.feasible);
    match planner {
        // The planner's latched verdict governs (smooth_isotonic reads it from its fit, so a
        // point's own run may have missed the SLA by noise): the latest run at the boundary
        // whose client kept up.
        Planner::Boundary(b) => {
            let top = b.feasible_max? as f64;
            let path = &s.space[0].path;
            history
                .iter()
                .enumerate()
                .filter(|(_, h)| !h.fell_behind)
                .filter(|(_, h)| h.values.get(path).and_then(Value::as_f64) == Some(top))
                .map(|(i, _)| i)
                .next_back()
        }
        Planner::Tiers(m) => {
            let top = m.most_lenient().0? as f64;
            let path = &s.space[0].path;
            history
                .iter()
                .enumerate()
                .filter(|(_, h)| h.feasible)
                .filter(|(_, h)| h.values.get(path).and_then(Value::as_f64) == Some(top))
                .map(|(i, _)| i)
                .next_back()
        }
        Planner::Bayes(_) => feasible
            .filter(|(_, h)| h.objective.is_some())
            .fold(None, |acc: Option<(usize, f64)>, (i, h)| {
                let o = h.objective.unwrap_or(f64::NAN);
                let better = |a: f64| match s.objective.direction {
                    Direction::Maximize => o > a,
                    Direction::Minimize => o < a,
                };
                match acc {
                    Some((_, a)) if !better(a) => acc,
                    _ => Some((i, o)),
                }
            })
            .map(|(i, _)| i),
    }
}

fn write_history(
    base: &Path,
    s: &AdaptiveSpec,
    history: &[Iteration],
    results: &[VariationResult],
    reason: Option<String>,
    planner: &Planner,
) -> Result<(), SearchError> {
    let best = best_index(s, history, planner).map(|i| {
        let h = &history[i];
        json!({
            "iteration_idx": i,
            "objective_values": h.objective.map(|o| vec![o]),
            "variation_values": h.values,
            "feasible": h.feasible,
            "feasible_count": history.iter().filter(|h| h.feasible).count(),
            "pareto_rank": 0,
        })
    });
    let boundary = match planner {
        Planner::Boundary(b) => boundary_json(s, history, b),
        Planner::Bayes(_) => Value::Null,
        Planner::Tiers(m) => tiers_boundary_json(s, history, m, reason.as_deref()),
    };
    let mut payload = json!({
        "config": {
            "planner": s.planner.name(),
            "objectives": [{
                "metric": s.objective.metric,
                "stat": s.objective.stat,
                "direction": s.objective.direction.as_str().to_ascii_uppercase(),
                "threshold": null,
            }],
            "outcome_constraints": [],
            "max_iterations": s.max_iterations,
            "n_initial_points": s.initial_points,
            "random_seed": s.random_seed,
            "search_space": s.space.iter().map(|d| json!({
                "path": d.path, "lo": d.lo, "hi": d.hi,
                "kind": if d.kind == super::recipe::Kind::Int { "int" } else { "real" },
            })).collect::<Vec<_>>(),
            "sla_filters": s.sla_filters.iter().map(filter_json).collect::<Vec<_>>(),
        },
        "iterations": history.iter().enumerate().map(|(i, h)| iteration_json(i, h)).collect::<Vec<_>>(),
        "best_trials": best.map(|b| vec![b]),
        "boundary_summary": boundary,
        "recipe": s.recipe.map(|r| r.name()),
        "convergence_reason": reason,
    });
    if let Planner::Tiers(m) = planner {
        payload["config"]["tiers"] = m.tiers().iter().map(|t| t.to_json()).collect();
        payload["tier_results"] =
            m.results_json(&s.sla_filters, |v| metrics_at(s, history, results, v));
        payload["tier_metadata"] = m.metadata_json(history.len());
        // AIPerf's key order: tier_results and tier_metadata before recipe.
        if let Some(o) = payload.as_object_mut() {
            for k in ["recipe", "convergence_reason"] {
                if let Some(v) = o.remove(k) {
                    o.insert(k.to_owned(), v);
                }
            }
        }
    }
    let path = base.join(HISTORY_FILE);
    let text = serde_json::to_string_pretty(&payload).unwrap_or_default();
    std::fs::write(&path, text + "\n").map_err(|source| SearchError::Write { path, source })
}

/// AIPerf's multi-tier `boundary_summary`: the bracket of the most lenient tier (the highest
/// pass), each bound with the first iteration run at it.
fn tiers_boundary_json(
    s: &AdaptiveSpec,
    history: &[Iteration],
    m: &MultiTier,
    reason: Option<&str>,
) -> Value {
    if history.is_empty() {
        return Value::Null;
    }
    let path = &s.space[0].path;
    let first_at = |v: u64| {
        history
            .iter()
            .position(|h| h.values.get(path).and_then(Value::as_f64) == Some(v as f64))
    };
    let (fmax, fmin, breach) = m.most_lenient();
    json!({
        "swept_dim_path": path,
        "feasible_max": fmax.map(|v| json!({"value": v, "iteration_idx": first_at(v), "objective_value": null})),
        "infeasible_min": fmin.map(|v| json!({"value": v, "iteration_idx": first_at(v), "first_breach": breach})),
        "non_monotonic_warning": m.non_monotonic(),
        "convergence_reason": reason,
    })
}

fn boundary_json(s: &AdaptiveSpec, history: &[Iteration], b: &BoundarySearch) -> Value {
    let path = &s.space[0].path;
    let at = |v: u64, feasible: bool| {
        history.iter().enumerate().rev().find(|(_, h)| {
            h.feasible == feasible && h.values.get(path).and_then(Value::as_f64) == Some(v as f64)
        })
    };
    let fmax = b.feasible_max.and_then(|v| {
        at(v, true)
            .map(|(i, h)| json!({"value": v, "iteration_idx": i, "objective_value": h.objective}))
    });
    let fmin = b.infeasible_min.and_then(|v| {
        at(v, false).map(|(i, h)| json!({"value": v, "iteration_idx": i, "first_breach": h.breach}))
    });
    if fmax.is_none() && fmin.is_none() {
        return Value::Null;
    }
    json!({"swept_dim_path": path, "feasible_max": fmax, "infeasible_min": fmin})
}

/// A metric's name and unit on the answer line.
fn metric_words(tag: &str) -> (&str, &'static str) {
    match tag {
        "time_to_first_token" => ("TTFT", "ms"),
        "inter_token_latency" => ("ITL", "ms"),
        "request_latency" => ("request latency", "ms"),
        "output_token_throughput" => ("throughput", "tok/s"),
        "goodput" => ("goodput", "req/s"),
        "request_throughput" => ("request throughput", "req/s"),
        "request_error_rate" => ("error rate", "%"),
        "good_request_fraction" => ("good request fraction", ""),
        other => (other, ""),
    }
}

/// `1840.4` as `1,840`; under 100 with one decimal.
pub fn grouped(v: f64) -> String {
    if v.abs() < 100.0 {
        return format!("{v:.1}");
    }
    let s = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

/// `75` for 75.0, `0.5` for 0.5.
fn plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn filters_words(filters: &[SlaFilter]) -> String {
    filters
        .iter()
        .map(|f| {
            let (name, unit) = metric_words(&f.metric_tag);
            let stat = if f.stat == "avg" { "mean" } else { &f.stat };
            format!(
                "{stat} {name} {} {} {unit}",
                f.op.symbol(),
                plain(f.threshold)
            )
            .trim_end()
            .to_owned()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One answer line per tier: `tier tight (p95 TTFT < 45 ms): concurrency 2, max throughput
/// 1,234 tok/s`.
fn tier_answers(s: &AdaptiveSpec, history: &[Iteration], m: &MultiTier) -> Vec<String> {
    let (name, unit) = metric_words(&s.objective.metric);
    let verb = match s.objective.direction {
        Direction::Maximize => "max",
        Direction::Minimize => "min",
    };
    let path = &s.space[0].path;
    let dim = path.rsplit('.').next().unwrap_or(path);
    m.tiers()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let filters: Vec<SlaFilter> = t.filters.iter().chain(&s.sla_filters).cloned().collect();
            let head = format!("tier {} ({})", t.label, filters_words(&filters));
            let Some(v) = m.boundary(i) else {
                return format!("{head}: no point met the SLA ({} run)", history.len());
            };
            let objective = history
                .iter()
                .rev()
                .find(|h| h.values.get(path).and_then(Value::as_f64) == Some(v as f64))
                .and_then(|h| h.objective);
            let value = objective.map_or("n/a".to_owned(), grouped);
            format!("{head}: {dim} {v}, {verb} {name} {value} {unit}")
                .trim_end()
                .to_owned()
        })
        .collect()
}

/// The one answer line.
fn answer(s: &AdaptiveSpec, history: &[Iteration], planner: &Planner) -> String {
    let (name, unit) = metric_words(&s.objective.metric);
    let verb = match s.objective.direction {
        Direction::Maximize => "max",
        Direction::Minimize => "min",
    };
    let under = if s.sla_filters.is_empty() {
        String::new()
    } else {
        format!(" under {}", filters_words(&s.sla_filters))
    };
    let Some(i) = best_index(s, history, planner) else {
        return format!(
            "{verb} {name}{under}: no point met the SLA ({} run)",
            history.len()
        );
    };
    let h = &history[i];
    let at = values_words(&h.values);
    let value = h.objective.map_or("n/a".to_owned(), grouped);
    format!("{verb} {name}{under}: {value} {unit} at {at}").replace("  ", " ")
}

/// A point's swept values as the answer line writes them: `concurrency 2, isl 512`.
fn values_words(values: &Map<String, Value>) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{} {v}", k.rsplit('.').next().unwrap_or(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The line under the answer naming the points left out because the client itself fell behind
/// there (`None`: none was): `excluded: concurrency 35; concurrency 48 — the client fell behind
/// (…)`, each point by its swept values ([`values_words`]).
fn excluded_line<'a>(points: impl IntoIterator<Item = &'a Map<String, Value>>) -> Option<String> {
    let each: Vec<String> = points.into_iter().map(values_words).collect();
    if each.is_empty() {
        return None;
    }
    Some(format!(
        "excluded: {} — the client fell behind there (its client-health verdict, in the point's \
         profile_export_aiperf.json), so its figures measure the client, not the server; \
         raise --max-client-lag-us to judge such points by a looser limit",
        each.join("; ")
    ))
}

/// A grid recipe: every point run as a sweep; with SLA filters, the answer is the highest
/// concurrency whose point met them all.
fn grid(g: &GridSpec, base: &Plan, opts: RunOptions, is_tty: bool) -> Result<Outcome, SearchError> {
    let mut lists = Vec::new();
    if g.scenarios.is_empty() {
        for (path, values) in &g.parameters {
            let f = flag_for(path)?;
            lists.push((f, values.iter().map(|&v| ParamValue::Whole(v)).collect()));
        }
    } else {
        for (k, path) in [(0, ISL_PATH), (1, OSL_PATH), (2, CONCURRENCY_PATH)] {
            let f = flag_for(path)?;
            let col = g
                .scenarios
                .iter()
                .map(|s| ParamValue::Whole([s.0, s.1, s.2][k]));
            lists.push((f, col.collect()));
        }
    }
    let zip = !g.scenarios.is_empty();
    let mut plan = plan_for(base, &lists)?;
    plan.annotations = annotations(&g.sla_filters, Some(g.recipe));
    if zip {
        plan.variations = crate::sweep::plan::zip_variations(&lists)?;
        // AIPerf lists a pre-paired sweep's parameters by name (concurrency, isl, osl), each
        // with its distinct values in first-seen order, and counts their product.
        plan.parameters = [2, 0, 1]
            .iter()
            .map(|&k| {
                let (f, vs) = &lists[k];
                let mut distinct: Vec<ParamValue> = Vec::new();
                for v in vs {
                    if !distinct.contains(v) {
                        distinct.push(*v);
                    }
                }
                (*f, distinct)
            })
            .collect();
    }
    let sweeper = Sweeper::new(plan, opts, is_tty)?;
    let variations = sweeper.plan().variations.clone();
    let mut results = Vec::new();
    for (i, v) in variations.iter().enumerate() {
        if i > 0 {
            sweeper.cool_down(
                sweeper.plan().variation_cooldown_seconds,
                "the next variation",
            );
        }
        if sweeper.cancelled().is_some() {
            break;
        }
        results.push(sweeper.run_variation(v)?);
        sweeper.show_progress(&results);
    }
    let plan = sweeper.plan().clone();
    let base = sweeper.artifact_dir().to_path_buf();
    let outcome = sweeper.finish(&results)?;
    if let Some(pp) = &g.post_process {
        post_process(&plan, &base, pp, &results)?;
    }
    if !g.sla_filters.is_empty() {
        let flag = flag_for(CONCURRENCY_PATH)?;
        let best = results
            .iter()
            .filter(|r| r.usable() && passes_all_mean(&g.sla_filters, r))
            .filter_map(|r| r.variation.value_of(flag))
            .map(ParamValue::as_f64)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let words = filters_words(&g.sla_filters);
        match best {
            Some(c) => println!("max concurrency under {words}: {c}"),
            None => println!("max concurrency under {words}: no point met the SLA"),
        }
        let behind: Vec<Map<String, Value>> = results
            .iter()
            .filter(|r| r.client_fell_behind)
            .map(|r| r.variation.values_json())
            .collect();
        if let Some(line) = excluded_line(&behind) {
            println!("{line}");
        }
    }
    Ok(outcome)
}

fn passes_all_mean(filters: &[SlaFilter], r: &VariationResult) -> bool {
    filters.iter().all(|f| passes_by(f, |t, s| r.mean(t, s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recipe sweeping the ISL names it as AIPerf does (recorded in
    /// tests/data/aiperf-search/prefill-curve/tree.txt): `isl_16__concurrency_1`, parameter
    /// `isl`, path `datasets.main.prompts.isl`; the `--isl` list's own `…isl.mean` (a plain
    /// sweep's `mean_16`) is not a recipe's name. The command line still sets the ISL flag.
    #[test]
    fn recipe_isl_and_osl_are_named_as_aiperf_names_them() {
        let isl = flag_for(ISL_PATH).unwrap();
        let conc = flag_for(CONCURRENCY_PATH).unwrap();
        let v = Variation::new(
            0,
            vec![
                Override {
                    flag: isl,
                    value: ParamValue::Whole(16),
                },
                Override {
                    flag: conc,
                    value: ParamValue::Whole(1),
                },
            ],
        );
        assert_eq!(v.dir_name(), "isl_16__concurrency_1");
        assert_eq!(isl.path, "datasets.main.prompts.isl");
        assert!(isl.names.contains(&"--isl"));
        let osl = flag_for(OSL_PATH).unwrap();
        assert_eq!(osl.short_name(), "osl");
        assert!(osl.names.contains(&"--osl"));
    }
}
