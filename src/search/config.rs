//! The search flags ([`SearchArgs`]) checked and made into a [`Search`]: a recipe's expansion,
//! or the adaptive search `--search-space` and its companions describe. AIPerf 0.13's rules:
//! a recipe owns the objective, space and planner (the flags that define them are refused
//! beside it); the budget and seed flags tune a recipe's adaptive search.

use super::SearchError;
use super::recipe::{
    self, AdaptiveSpec, Bounds, Dimension, Direction, Expansion, Kind, Objective, PlannerKind,
    Prior, Recipe, SlaTargets,
};
use super::sla::SlaFilter;
use crate::cli::search::SearchArgs;

/// A search to run, with the warnings its flags gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    /// What to run.
    pub expansion: Expansion,
    /// One line each, printed before the search starts.
    pub warnings: Vec<String>,
}

/// The flags that define a search and so are refused beside `--search-recipe`.
fn defining_flags(a: &SearchArgs) -> Vec<&'static str> {
    [
        ("--search-space", !a.search_space.is_empty()),
        ("--search-metric", a.search_metric.is_some()),
        ("--search-stat", a.search_stat.is_some()),
        ("--search-direction", a.search_direction.is_some()),
        ("--search-planner", a.search_planner.is_some()),
        ("--optuna-sampler", a.optuna_sampler.is_some()),
        ("--optuna-acquisition", a.optuna_acquisition.is_some()),
        ("--optuna-terminator", a.optuna_terminator.is_some()),
        (
            "--search-percentile-pooling",
            a.search_percentile_pooling.is_some(),
        ),
        ("--bo-constraint-mode", a.bo_constraint_mode.is_some()),
    ]
    .into_iter()
    .filter_map(|(f, set)| set.then_some(f))
    .collect()
}

fn positive(flag: &'static str, v: Option<f64>) -> Result<Option<f64>, SearchError> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(SearchError::flag(
            flag,
            format!("{x}: must be a number greater than 0"),
        )),
        _ => Ok(v),
    }
}

fn fraction(
    flag: &'static str,
    v: Option<f64>,
    top_inclusive: bool,
) -> Result<Option<f64>, SearchError> {
    match v {
        Some(x) if !(x > 0.0 && (x < 1.0 || top_inclusive && x == 1.0)) => {
            let range = if top_inclusive { "(0, 1]" } else { "(0, 1)" };
            Err(SearchError::flag(flag, format!("{x}: must be in {range}")))
        }
        _ => Ok(v),
    }
}

fn at_least<T: PartialOrd + Copy + std::fmt::Display>(
    flag: &'static str,
    v: Option<T>,
    min: T,
) -> Result<Option<T>, SearchError> {
    match v {
        Some(x) if x < min => Err(SearchError::flag(
            flag,
            format!("{x}: must be at least {min}"),
        )),
        _ => Ok(v),
    }
}

/// The SLA flags, checked.
pub fn sla_targets(a: &SearchArgs) -> Result<SlaTargets, SearchError> {
    Ok(SlaTargets {
        ttft_ms: positive("--ttft-sla-ms", a.ttft_sla_ms)?,
        itl_ms: positive("--itl-sla-ms", a.itl_sla_ms)?,
        tpot_ms: positive("--tpot-sla-ms", a.tpot_sla_ms)?,
        e2e_ms: positive("--e2e-sla-ms", a.e2e_sla_ms)?,
        error_rate: fraction("--error-rate-sla", a.error_rate_sla, false)?,
        slo_attainment_fraction: fraction(
            "--slo-attainment-fraction",
            a.slo_attainment_fraction,
            true,
        )?,
    })
}

/// The recipe bounds, checked; `concurrency` is the `--concurrency` value or list given.
pub fn bounds(a: &SearchArgs, concurrency: Option<Vec<u64>>) -> Result<Bounds, SearchError> {
    Ok(Bounds {
        concurrency_min: at_least("--concurrency-min", a.concurrency_min, 1)?,
        concurrency_max: at_least("--concurrency-max", a.concurrency_max, 1)?,
        concurrency_steps: at_least("--concurrency-steps", a.concurrency_steps, 2)?,
        isl_min: at_least("--isl-min", a.isl_min, 1)?,
        isl_max: at_least("--isl-max", a.isl_max, 1)?,
        isl_steps: at_least("--isl-steps", a.isl_steps, 2)?,
        osl_min: at_least("--osl-min", a.osl_min, 1)?,
        osl_max: at_least("--osl-max", a.osl_max, 1)?,
        osl_steps: at_least("--osl-steps", a.osl_steps, 2)?,
        degradation_threshold: fraction("--degradation-threshold", a.degradation_threshold, false)?,
        degradation_metric_tag: a.degradation_metric_tag.clone(),
        degradation_stat: a.degradation_stat.map(|s| s.as_str().to_owned()),
        search_style: a.search_style,
        isl_osl_pairs: a.isl_osl_pairs.clone(),
        concurrency,
    })
}

/// The `--search-sla` filters of a plain sweep (no `--search-recipe`, no `--search-space`):
/// they make the sweep aggregate's `metadata.sla_constraints` and restrict its best
/// configurations and Pareto frontier to the feasible variations (AIPerf 0.13 accepts the
/// flag there and ignores it: docs/sweeps.md).
///
/// # Errors
/// A filter that does not parse.
pub fn plain_sweep_sla(a: &SearchArgs) -> Result<Vec<SlaFilter>, SearchError> {
    if a.search_recipe.is_some() || !a.search_space.is_empty() {
        return Ok(Vec::new());
    }
    a.search_sla.iter().map(|s| SlaFilter::parse(s)).collect()
}

/// The search the flags describe (`None`: no search flag given). `streaming` is `--streaming`;
/// `concurrency` the `--concurrency` value or list given.
pub fn from_args(
    a: &SearchArgs,
    streaming: bool,
    concurrency: Option<Vec<u64>>,
) -> Result<Option<Search>, SearchError> {
    let tiers = if a.search_sla_tier.is_empty() {
        Vec::new()
    } else {
        super::tiers::parse_tiers(&a.search_sla_tier)?
    };
    let mut warnings = Vec::new();
    let targets = sla_targets(a)?;
    let b = bounds(a, concurrency)?;
    let mut extra: Vec<SlaFilter> = a
        .search_sla
        .iter()
        .map(|s| SlaFilter::parse(s))
        .collect::<Result<_, _>>()?;
    let expansion = if let Some(name) = &a.search_recipe {
        let recipe = Recipe::parse(name)?;
        let defining = defining_flags(a);
        if !defining.is_empty() {
            return Err(SearchError::recipe(
                recipe,
                format!(
                    "is mutually exclusive with the search-defining flags {}: the recipe \
                     chooses the objective, space and planner (--search-max-iterations, \
                     --search-initial-points and --search-random-seed are accepted)",
                    defining.join(", ")
                ),
            ));
        }
        let mut e = recipe::expand(recipe, &targets, &b, streaming)?;
        match &mut e {
            Expansion::Adaptive(s) => {
                tune(s, a)?;
                s.sla_filters.append(&mut extra);
            }
            Expansion::Grid(g) => {
                let tuned = [
                    ("--search-max-iterations", a.search_max_iterations.is_some()),
                    ("--search-initial-points", a.search_initial_points.is_some()),
                    ("--search-random-seed", a.search_random_seed.is_some()),
                ];
                if let Some((flag, _)) = tuned.iter().find(|(_, set)| *set) {
                    return Err(SearchError::recipe(
                        recipe,
                        format!("expands to a grid sweep; {flag} only tunes an adaptive search"),
                    ));
                }
                g.sla_filters.append(&mut extra);
            }
        }
        e
    } else if !a.search_space.is_empty() {
        Expansion::Adaptive(adaptive(a, extra, &mut warnings)?)
    } else if !tiers.is_empty() {
        return Err(SearchError::flag(
            "--search-sla-tier",
            "needs an adaptive search over the concurrency (--search-space \
             phases.profiling.concurrency:LO,HI:int with --search-metric, --search-direction \
             and --search-max-iterations)"
                .to_owned(),
        ));
    } else {
        return Ok(None);
    };
    if let Expansion::Adaptive(s) = &expansion
        && s.planner == PlannerKind::Optuna
        && tiers.is_empty()
    {
        return Err(optuna_refused());
    }
    let mut expansion = expansion;
    if !tiers.is_empty() {
        with_tiers(&mut expansion, tiers, &mut warnings)?;
    }
    Ok(Some(Search {
        expansion,
        warnings,
    }))
}

/// `--search-sla-tier` on the search: an adaptive one over one int dimension takes the tiers
/// (its planner is then the multi-tier one); a grid search ignores them, as AIPerf does, with a
/// warning.
fn with_tiers(
    expansion: &mut Expansion,
    tiers: Vec<super::tiers::SloTier>,
    warnings: &mut Vec<String>,
) -> Result<(), SearchError> {
    let s = match expansion {
        Expansion::Grid(_) => {
            warnings.push(
                "--search-sla-tier has no effect on a grid search (AIPerf ignores it there \
                 too): it needs an adaptive search (--search-space)"
                    .to_owned(),
            );
            return Ok(());
        }
        Expansion::Adaptive(s) => s,
    };
    if s.space.len() != 1 {
        return Err(SearchError::flag(
            "--search-sla-tier",
            format!(
                "the multi-tier planner requires exactly one search-space dimension; got {}",
                s.space.len()
            ),
        ));
    }
    if s.space[0].kind != Kind::Int {
        return Err(SearchError::flag(
            "--search-sla-tier",
            format!(
                "the multi-tier planner supports int dimensions only; got kind 'real' on path \
                 {:?}",
                s.space[0].path
            ),
        ));
    }
    if s.planner != PlannerKind::SmoothIsotonic {
        warnings.push(format!(
            "the search algorithm of --search-planner {} is not used when --search-sla-tier is \
             active: the multi-tier planner uses its own bracket and bisection",
            s.planner.name()
        ));
    }
    s.tiers = tiers;
    Ok(())
}

fn optuna_refused() -> SearchError {
    SearchError::flag(
        "--search-planner",
        "optuna: Optuna's BoTorch sampler is Python only; ringperf runs its own Gaussian \
         process (--search-planner bayesian, or --search-planner optuna --optuna-sampler gp) \
         and its own TPE (--search-planner optuna --optuna-sampler tpe)"
            .to_owned(),
    )
}

/// The budget and seed flags laid over a recipe's adaptive search.
fn tune(s: &mut AdaptiveSpec, a: &SearchArgs) -> Result<(), SearchError> {
    if let Some(n) = a.search_max_iterations {
        s.max_iterations = iterations(n)?;
    }
    if let Some(n) = at_least("--search-initial-points", a.search_initial_points, 1)? {
        s.initial_points = n;
    }
    if a.search_random_seed.is_some() {
        s.random_seed = a.search_random_seed;
    }
    Ok(())
}

fn iterations(n: u32) -> Result<u32, SearchError> {
    if (2..=200).contains(&n) {
        Ok(n)
    } else {
        Err(SearchError::flag(
            "--search-max-iterations",
            format!("{n}: must be in 2..=200"),
        ))
    }
}

/// `--search-space PATH:LO,HI[:KIND]`.
pub fn parse_dimension(raw: &str) -> Result<Dimension, SearchError> {
    let bad = |why: &str| SearchError::flag("--search-space", format!("{raw:?}: {why}"));
    let parts: Vec<&str> = raw.split(':').collect();
    let (path, bounds, kind) = match parts.as_slice() {
        [p, b] => (*p, *b, "real"),
        [p, b, k] => (*p, *b, *k),
        _ => return Err(bad("expected 'path:lo,hi[:kind]'")),
    };
    let kind = match kind {
        "int" => Kind::Int,
        "real" => Kind::Real,
        _ => return Err(bad("kind must be 'int' or 'real'")),
    };
    let (lo, hi) = bounds
        .split_once(',')
        .ok_or_else(|| bad("missing ',' in the bounds"))?;
    let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    let (Some(lo), Some(hi)) = (num(lo), num(hi)) else {
        return Err(bad("a bound is not a number"));
    };
    if hi <= lo {
        return Err(bad("hi must be > lo"));
    }
    Ok(Dimension {
        path: path.to_owned(),
        lo,
        hi,
        kind,
        prior: Prior::Uniform,
    })
}

fn adaptive(
    a: &SearchArgs,
    sla_filters: Vec<SlaFilter>,
    warnings: &mut Vec<String>,
) -> Result<AdaptiveSpec, SearchError> {
    let space = a
        .search_space
        .iter()
        .map(|s| parse_dimension(s))
        .collect::<Result<Vec<_>, _>>()?;
    for (flag, set) in [
        ("--search-metric", a.search_metric.is_some()),
        ("--search-direction", a.search_direction.is_some()),
        ("--search-max-iterations", a.search_max_iterations.is_some()),
    ] {
        if !set {
            return Err(SearchError::flag(
                "--search-space",
                format!("requires {flag} (companion flag missing)"),
            ));
        }
    }
    let mut planner = match a.search_planner.as_deref() {
        None => PlannerKind::Bayesian,
        Some(p) => PlannerKind::parse(p).ok_or_else(|| {
            SearchError::flag(
                "--search-planner",
                format!("{p:?}: expected bayesian, monotonic_sla, smooth_isotonic or optuna"),
            )
        })?,
    };
    if planner == PlannerKind::Optuna {
        // The GP and TPE samplers have Rust equivalents: ringperf's own; BoTorch has none.
        match a.optuna_sampler.as_deref() {
            Some("gp") => planner = PlannerKind::Bayesian,
            Some("tpe") => planner = PlannerKind::OptunaTpe,
            // AIPerf's implicit default is botorch, which falls back to tpe with a warning
            // when the botorch extra is missing: as it always is here.
            None => {
                planner = PlannerKind::OptunaTpe;
                warnings.push(
                    "--search-planner optuna: the BoTorch sampler (the implicit default) is \
                     Python only; falling back to tpe, as AIPerf does without its botorch extra"
                        .to_owned(),
                );
            }
            Some(_) => return Err(optuna_refused()),
        }
    } else if a.optuna_sampler.is_some() {
        return Err(SearchError::flag(
            "--optuna-sampler",
            "is only meaningful with --search-planner optuna".to_owned(),
        ));
    }
    if let Some(acq) = &a.optuna_acquisition {
        return Err(SearchError::flag(
            "--optuna-acquisition",
            format!(
                "{acq}: BoTorch acquisitions are Python only (ringperf's GP uses expected improvement)"
            ),
        ));
    }
    match a.optuna_terminator.as_deref() {
        None | Some("none") => {}
        Some(t) => {
            return Err(SearchError::flag(
                "--optuna-terminator",
                format!("{t}: Optuna's terminators are Python only (only 'none' is accepted)"),
            ));
        }
    }
    match a.search_percentile_pooling.as_deref() {
        None | Some("mean") => {}
        Some(p) => {
            return Err(SearchError::flag(
                "--search-percentile-pooling",
                format!("{p}: only 'mean' (a percentile's mean over trials) is supported"),
            ));
        }
    }
    if let Some(m) = &a.bo_constraint_mode {
        warnings.push(format!(
            "--bo-constraint-mode {m} is accepted and ignored: ringperf's Bayesian planner \
             always weighs expected improvement by the probability of meeting the SLA filters"
        ));
    }
    let one_dim_int = space.len() == 1 && space[0].kind == Kind::Int;
    if matches!(
        planner,
        PlannerKind::MonotonicSla | PlannerKind::SmoothIsotonic
    ) {
        if !one_dim_int {
            return Err(SearchError::flag(
                "--search-planner",
                format!(
                    "{} needs exactly one int dimension in --search-space",
                    planner.name()
                ),
            ));
        }
        if sla_filters.is_empty() && a.search_sla_tier.is_empty() {
            return Err(SearchError::flag(
                "--search-planner",
                format!("{} needs at least one --search-sla filter", planner.name()),
            ));
        }
    }
    let initial_points = at_least("--search-initial-points", a.search_initial_points, 1)?;
    Ok(AdaptiveSpec {
        planner,
        space,
        objective: Objective {
            metric: a.search_metric.clone().unwrap_or_default(),
            stat: a.search_stat.map_or("avg", |s| s.as_str()).to_owned(),
            direction: a.search_direction.unwrap_or(Direction::Maximize),
        },
        max_iterations: iterations(a.search_max_iterations.unwrap_or(30))?,
        initial_points: initial_points.unwrap_or(5),
        random_seed: a.search_random_seed,
        sla_filters,
        recipe: None,
        slos: Vec::new(),
        tiers: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn search(line: &str) -> Result<Option<Search>, SearchError> {
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let Command::Profile(p) = Cli::try_parse_from(argv).unwrap().command else {
            panic!()
        };
        from_args(&p.search, p.streaming, None)
    }

    #[test]
    fn no_search_flag_no_search() {
        assert_eq!(search("ringperf profile -m x").unwrap(), None);
    }

    #[test]
    fn recipes_refuse_defining_flags_and_take_tunables() {
        let e = search(
            "ringperf profile -m x --streaming --search-recipe max-throughput-ttft-sla \
             --ttft-sla-ms 500 --search-metric goodput",
        )
        .unwrap_err();
        assert!(e.to_string().contains("--search-metric"), "{e}");
        let s = search(
            "ringperf profile -m x --streaming --search-recipe max-throughput-ttft-sla \
             --ttft-sla-ms 500 --search-max-iterations 12 --search-random-seed 7 \
             --search-sla request_error_rate:avg:lt:1",
        )
        .unwrap()
        .unwrap();
        let Expansion::Adaptive(a) = s.expansion else {
            panic!()
        };
        assert_eq!((a.max_iterations, a.random_seed), (12, Some(7)));
        assert_eq!(a.sla_filters.len(), 2);
        let e = search(
            "ringperf profile -m x --search-recipe concurrency-ramp --search-max-iterations 5",
        )
        .unwrap_err();
        assert!(e.to_string().contains("grid sweep"), "{e}");
    }

    #[test]
    fn flag_values_are_checked() {
        for (line, flag) in [
            (
                "--search-recipe max-concurrency-under-sla --ttft-sla-ms 0",
                "--ttft-sla-ms",
            ),
            (
                "--search-recipe max-concurrency-under-sla --error-rate-sla 1",
                "--error-rate-sla",
            ),
            (
                "--search-recipe concurrency-ramp --concurrency-steps 1",
                "--concurrency-steps",
            ),
            ("--search-recipe nope", "--search-recipe"),
            ("--search-sla time_to_first_token:p95:lt", "--search-sla"),
            ("--search-sla-tier a:x:p95:lt:1", "--search-sla-tier"),
            (
                "--search-space c:1,10:int --search-metric m",
                "--search-space",
            ),
            (
                "--search-space c:1,10:int --search-metric m --search-direction maximize \
                 --search-max-iterations 1",
                "--search-max-iterations",
            ),
        ] {
            let e = search(&format!("ringperf profile -m x --streaming {line}")).unwrap_err();
            assert!(e.to_string().starts_with(flag), "{line}: {e}");
        }
    }

    #[test]
    fn adaptive_search_from_flags_and_optuna_rules() {
        let base = "ringperf profile -m x --search-space phases.profiling.concurrency:1,64:int \
                    --search-metric output_token_throughput --search-direction maximize \
                    --search-max-iterations 10";
        let s = search(base).unwrap().unwrap();
        let Expansion::Adaptive(a) = s.expansion else {
            panic!()
        };
        assert_eq!(a.planner, PlannerKind::Bayesian);
        assert_eq!(
            (a.space[0].lo, a.space[0].hi, a.space[0].kind),
            (1.0, 64.0, Kind::Int)
        );
        // AIPerf's implicit botorch falls back to tpe with a warning; explicit botorch and an
        // acquisition (BoTorch's) are refused.
        let implicit = search(&format!("{base} --search-planner optuna"))
            .unwrap()
            .unwrap();
        assert_eq!(implicit.warnings.len(), 1, "{:?}", implicit.warnings);
        let Expansion::Adaptive(t) = implicit.expansion else {
            panic!()
        };
        assert_eq!(t.planner, PlannerKind::OptunaTpe);
        assert_eq!(t.planner.name(), "optuna");
        let tpe = search(&format!(
            "{base} --search-planner optuna --optuna-sampler tpe"
        ))
        .unwrap()
        .unwrap();
        assert!(tpe.warnings.is_empty());
        let Expansion::Adaptive(t) = tpe.expansion else {
            panic!()
        };
        assert_eq!(t.planner, PlannerKind::OptunaTpe);
        let e = search(&format!(
            "{base} --search-planner optuna --optuna-sampler botorch"
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("BoTorch sampler is Python only"),
            "{e}"
        );
        assert!(
            search(&format!(
                "{base} --search-planner optuna --optuna-sampler random"
            ))
            .is_err()
        );
        let gp = search(&format!(
            "{base} --search-planner optuna --optuna-sampler gp"
        ))
        .unwrap()
        .unwrap();
        let Expansion::Adaptive(g) = gp.expansion else {
            panic!()
        };
        assert_eq!(g.planner, PlannerKind::Bayesian);
        let warned = search(&format!("{base} --bo-constraint-mode eic"))
            .unwrap()
            .unwrap();
        assert_eq!(warned.warnings.len(), 1);
        let e = search(&format!("{base} --search-planner monotonic_sla")).unwrap_err();
        assert!(e.to_string().contains("--search-sla"), "{e}");
    }
}
