//! `--search-recipe`: AIPerf 0.13's built-in recipes, each expanded as AIPerf expands it (its
//! defaults, bounds, log-spaced grids, SLA filters and planner) into either an adaptive search
//! ([`AdaptiveSpec`], one point at a time chosen by a planner) or a grid ([`GridSpec`], every
//! point known up front). docs/search.md lists them.

pub use crate::cli::search::{Direction, SearchStyle};

use super::SearchError;
use super::derived::Derivation;
use super::sla::{Op, SlaFilter};

/// AIPerf's path of the profiling concurrency.
pub const CONCURRENCY_PATH: &str = "phases.profiling.concurrency";
/// AIPerf's path of the recipes' input sequence length.
pub const ISL_PATH: &str = "datasets.main.prompts.isl";
/// AIPerf's path of the recipes' output sequence length.
pub const OSL_PATH: &str = "datasets.main.prompts.osl";

/// A built-in recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// `max-throughput-ttft-sla`: most output token throughput with p95 TTFT under the SLA.
    MaxThroughputTtftSla,
    /// `max-throughput-itl-sla`: most output token throughput with p95 ITL under the SLA.
    MaxThroughputItlSla,
    /// `concurrency-ramp`: a log-spaced concurrency ramp and its degradation knee.
    ConcurrencyRamp,
    /// `prefill-ttft-curve`: ISL log-spaced at concurrency 1, TTFT against ISL.
    PrefillTtftCurve,
    /// `decode-itl-curve`: concurrency × OSL grid, the ITL surface.
    DecodeItlCurve,
    /// `max-concurrency-under-sla`: the highest concurrency meeting every SLA given.
    MaxConcurrencyUnderSla,
    /// `pareto-sweep`: ISL/OSL pairs × concurrencies, the Pareto frontier.
    ParetoSweep,
    /// `max-goodput-under-slo`: most goodput with the good-request fraction at least the
    /// attainment fraction.
    MaxGoodputUnderSlo,
}

impl Recipe {
    /// Every recipe, in AIPerf's registry order.
    pub const ALL: [Recipe; 8] = [
        Recipe::MaxThroughputTtftSla,
        Recipe::MaxThroughputItlSla,
        Recipe::ConcurrencyRamp,
        Recipe::PrefillTtftCurve,
        Recipe::DecodeItlCurve,
        Recipe::MaxConcurrencyUnderSla,
        Recipe::ParetoSweep,
        Recipe::MaxGoodputUnderSlo,
    ];

    /// The `--search-recipe` name.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::MaxThroughputTtftSla => "max-throughput-ttft-sla",
            Recipe::MaxThroughputItlSla => "max-throughput-itl-sla",
            Recipe::ConcurrencyRamp => "concurrency-ramp",
            Recipe::PrefillTtftCurve => "prefill-ttft-curve",
            Recipe::DecodeItlCurve => "decode-itl-curve",
            Recipe::MaxConcurrencyUnderSla => "max-concurrency-under-sla",
            Recipe::ParetoSweep => "pareto-sweep",
            Recipe::MaxGoodputUnderSlo => "max-goodput-under-slo",
        }
    }

    /// The Pareto axes the recipe declares for its sweep aggregate (`metadata.pareto_axes`):
    /// x (lower is better) and y (higher is better) as `(tag, stat)`, and the series keys.
    pub fn pareto_axes(self) -> Option<serde_json::Value> {
        let (x, xs, y, ys, series): (&str, &str, &str, &str, &[&str]) = match self {
            Recipe::MaxThroughputTtftSla => (
                "time_to_first_token",
                "p99",
                "output_token_throughput",
                "avg",
                &[],
            ),
            Recipe::MaxThroughputItlSla => (
                "inter_token_latency",
                "p99",
                "output_token_throughput",
                "avg",
                &[],
            ),
            Recipe::ConcurrencyRamp => (
                "request_latency",
                "p95",
                "output_token_throughput",
                "avg",
                &[],
            ),
            Recipe::MaxConcurrencyUnderSla => {
                ("request_latency", "p95", "concurrency", "value", &[])
            }
            Recipe::MaxGoodputUnderSlo => ("request_latency", "p95", "goodput", "avg", &[]),
            Recipe::ParetoSweep => (
                "time_to_first_token",
                "p95",
                "output_token_throughput",
                "avg",
                &["isl", "osl"],
            ),
            Recipe::PrefillTtftCurve | Recipe::DecodeItlCurve => return None,
        };
        Some(serde_json::json!({
            "x_metric": x, "x_stat": xs, "x_minimize": true,
            "y_metric": y, "y_stat": ys, "y_maximize": true,
            "series_keys": series,
        }))
    }

    /// The recipe named `name`.
    pub fn parse(name: &str) -> Result<Self, SearchError> {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|r| r.name()).collect();
                SearchError::flag(
                    "--search-recipe",
                    format!(
                        "unknown recipe {name:?}; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// Which planner chooses an adaptive search's points (`--search-planner`, AIPerf's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannerKind {
    /// `bayesian`: a Gaussian process over the space, Sobol/Halton start.
    Bayesian,
    /// `monotonic_sla`: exponential probe then bisection of a monotone SLA boundary.
    MonotonicSla,
    /// `smooth_isotonic`: the boundary search on an isotonic fit of the SLA margins.
    SmoothIsotonic,
    /// `optuna`: Optuna's samplers (Python only; see docs/search.md).
    Optuna,
    /// `optuna` with `--optuna-sampler tpe`: ringperf's Tree-structured Parzen Estimator
    /// (`super::tpe`); named `optuna`, as AIPerf names it.
    OptunaTpe,
}

impl PlannerKind {
    /// AIPerf's name.
    pub fn name(self) -> &'static str {
        match self {
            PlannerKind::Bayesian => "bayesian",
            PlannerKind::MonotonicSla => "monotonic_sla",
            PlannerKind::SmoothIsotonic => "smooth_isotonic",
            PlannerKind::Optuna | PlannerKind::OptunaTpe => "optuna",
        }
    }

    /// The planner named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [
            PlannerKind::Bayesian,
            PlannerKind::MonotonicSla,
            PlannerKind::SmoothIsotonic,
            PlannerKind::Optuna,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// Integer or real dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Whole numbers (rounded).
    Int,
    /// Real numbers.
    Real,
}

/// How a dimension's points are spread before the model takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prior {
    /// Evenly over `[lo, hi]`.
    Uniform,
    /// Evenly over `[ln lo, ln hi]`.
    LogUniform,
}

/// One dimension of a search space.
#[derive(Clone, Debug, PartialEq)]
pub struct Dimension {
    /// AIPerf's parameter path (`phases.profiling.concurrency`).
    pub path: String,
    /// Lower bound (inclusive).
    pub lo: f64,
    /// Upper bound (inclusive).
    pub hi: f64,
    /// Integer or real.
    pub kind: Kind,
    /// Start-up spread.
    pub prior: Prior,
}

/// What a search maximises or minimises: one stat of one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// Metric tag.
    pub metric: String,
    /// Stat (`avg`, `p99`, ...).
    pub stat: String,
    /// Direction.
    pub direction: Direction,
}

/// An adaptive search: a planner picks each next point.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveSpec {
    /// The planner.
    pub planner: PlannerKind,
    /// The space.
    pub space: Vec<Dimension>,
    /// The objective.
    pub objective: Objective,
    /// Most points run.
    pub max_iterations: u32,
    /// Points run before a model chooses (Bayesian).
    pub initial_points: u32,
    /// Seed of the planner's own draws.
    pub random_seed: Option<u64>,
    /// What a point must meet to be feasible.
    pub sla_filters: Vec<SlaFilter>,
    /// The recipe it came from.
    pub recipe: Option<Recipe>,
    /// Per-request SLOs the runs count goodput against (`max-goodput-under-slo`).
    pub slos: Vec<(String, f64)>,
    /// `--search-sla-tier`: 2 to 10 tiers searched at once (docs/search.md, "SLO tiers").
    pub tiers: Vec<super::tiers::SloTier>,
}

/// A derived artifact a grid recipe writes after its points ran.
#[derive(Clone, Debug, PartialEq)]
pub struct PostProcess {
    /// AIPerf's handler name.
    pub handler: String,
    /// The file under `sweep_aggregate/`.
    pub output_filename: String,
    /// What the handler computes, with its parameters (a config file's handler or parameters
    /// that AIPerf's hook refuses: the error it quarantines).
    pub derivation: Result<Derivation, super::derived::DerivedError>,
}

/// A grid recipe: every point known up front.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpec {
    /// `path -> values`, crossed (a one-value list is a fixed value).
    pub parameters: Vec<(String, Vec<u64>)>,
    /// Pre-paired points (`pareto-sweep`): `(isl, osl, concurrency)`, in AIPerf's order.
    pub scenarios: Vec<(u64, u64, u64)>,
    /// The SLA filters (a feasibility column; `max-concurrency-under-sla --search-style grid`).
    pub sla_filters: Vec<SlaFilter>,
    /// The derived artifact.
    pub post_process: Option<PostProcess>,
    /// The recipe.
    pub recipe: Recipe,
}

/// What a recipe expands into.
#[derive(Clone, Debug, PartialEq)]
pub enum Expansion {
    /// One point at a time.
    Adaptive(AdaptiveSpec),
    /// A grid.
    Grid(GridSpec),
}

/// The SLA flags given (each `None` when not given).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlaTargets {
    /// `--ttft-sla-ms`.
    pub ttft_ms: Option<f64>,
    /// `--itl-sla-ms`.
    pub itl_ms: Option<f64>,
    /// `--tpot-sla-ms` (the same SLA as ITL).
    pub tpot_ms: Option<f64>,
    /// `--e2e-sla-ms`.
    pub e2e_ms: Option<f64>,
    /// `--error-rate-sla` (a fraction in (0, 1)).
    pub error_rate: Option<f64>,
    /// `--slo-attainment-fraction`.
    pub slo_attainment_fraction: Option<f64>,
}

impl SlaTargets {
    /// The inter-token SLA from `--tpot-sla-ms` or its alias `--itl-sla-ms`; both with
    /// different values is refused.
    pub fn inter_token_ms(&self) -> Result<Option<f64>, SearchError> {
        match (self.tpot_ms, self.itl_ms) {
            (Some(t), Some(i)) if t != i => Err(SearchError::flag(
                "--tpot-sla-ms",
                format!(
                    "--tpot-sla-ms and --itl-sla-ms are the same inter-token-latency SLA but \
                     were given different values ({t} vs {i}); give only one"
                ),
            )),
            (t, i) => Ok(t.or(i)),
        }
    }
}

/// The recipe bounds and overrides given (each `None` when not given).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    /// `--concurrency-min`.
    pub concurrency_min: Option<u64>,
    /// `--concurrency-max`.
    pub concurrency_max: Option<u64>,
    /// `--concurrency-steps`.
    pub concurrency_steps: Option<u32>,
    /// `--isl-min`.
    pub isl_min: Option<u64>,
    /// `--isl-max`.
    pub isl_max: Option<u64>,
    /// `--isl-steps`.
    pub isl_steps: Option<u32>,
    /// `--osl-min`.
    pub osl_min: Option<u64>,
    /// `--osl-max`.
    pub osl_max: Option<u64>,
    /// `--osl-steps`.
    pub osl_steps: Option<u32>,
    /// `--degradation-threshold`.
    pub degradation_threshold: Option<f64>,
    /// `--degradation-metric-tag`.
    pub degradation_metric_tag: Option<String>,
    /// `--degradation-stat`.
    pub degradation_stat: Option<String>,
    /// `--search-style`.
    pub search_style: Option<SearchStyle>,
    /// `--isl-osl-pairs`, as given.
    pub isl_osl_pairs: Option<String>,
    /// `--concurrency` when given (a list for `pareto-sweep`).
    pub concurrency: Option<Vec<u64>>,
}

/// `steps` integers log-spaced over `[lo, hi]`, both ends included, rounded half to even as
/// Python's `round`, duplicates merged, ascending (AIPerf's ramp grid).
pub fn logspace_int_steps(lo: u64, hi: u64, steps: u32) -> Result<Vec<u64>, SearchError> {
    if steps < 2 {
        return Err(SearchError::bounds(format!(
            "a log-spaced ramp needs at least 2 steps (got {steps})"
        )));
    }
    if lo == 0 {
        return Err(SearchError::bounds(
            "a log-spaced ramp needs a lower bound of at least 1 (got 0)".to_owned(),
        ));
    }
    if hi <= lo {
        return Err(SearchError::bounds(format!(
            "a log-spaced ramp needs hi > lo (got lo {lo}, hi {hi})"
        )));
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    let last = f64::from(steps - 1);
    let mut out: Vec<u64> = (0..steps)
        .map(|i| {
            let v = (a + (b - a) * f64::from(i) / last).exp();
            (v.round_ties_even() as u64).max(1)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `lo,hi` of the concurrency: the flags or the recipe's defaults; `lo >= hi` is refused.
fn concurrency_bounds(
    b: &Bounds,
    recipe: Recipe,
    lo: u64,
    hi: u64,
) -> Result<(u64, u64), SearchError> {
    let (lo, hi) = (
        b.concurrency_min.unwrap_or(lo),
        b.concurrency_max.unwrap_or(hi),
    );
    if lo >= hi {
        return Err(SearchError::recipe(
            recipe,
            format!(
                "--concurrency-min ({lo}) must be < --concurrency-max ({hi}); inverted bounds \
                 collapse the search space"
            ),
        ));
    }
    Ok((lo, hi))
}

fn require_streaming(streaming: bool, recipe: Recipe, reason: &str) -> Result<(), SearchError> {
    if streaming {
        Ok(())
    } else {
        Err(SearchError::recipe(
            recipe,
            format!("requires --streaming ({reason}); enable streaming or pick another recipe"),
        ))
    }
}

fn concurrency_dim(lo: u64, hi: u64, prior: Prior) -> Dimension {
    Dimension {
        path: CONCURRENCY_PATH.to_owned(),
        lo: lo as f64,
        hi: hi as f64,
        kind: Kind::Int,
        prior,
    }
}

fn throughput() -> Objective {
    Objective {
        metric: "output_token_throughput".to_owned(),
        stat: "avg".to_owned(),
        direction: Direction::Maximize,
    }
}

fn adaptive(
    recipe: Recipe,
    planner: PlannerKind,
    dim: Dimension,
    (max_iterations, initial_points): (u32, u32),
    sla_filters: Vec<SlaFilter>,
) -> Expansion {
    Expansion::Adaptive(AdaptiveSpec {
        planner,
        space: vec![dim],
        objective: throughput(),
        max_iterations,
        initial_points,
        random_seed: None,
        sla_filters,
        recipe: Some(recipe),
        slos: Vec::new(),
        tiers: Vec::new(),
    })
}

/// Expands `recipe` with the SLA flags, bounds and streaming setting given.
pub fn expand(
    recipe: Recipe,
    t: &SlaTargets,
    b: &Bounds,
    streaming: bool,
) -> Result<Expansion, SearchError> {
    match recipe {
        Recipe::MaxThroughputTtftSla | Recipe::MaxThroughputItlSla => {
            let (threshold, tag, what) = if recipe == Recipe::MaxThroughputTtftSla {
                let t = t.ttft_ms.ok_or_else(|| {
                    SearchError::recipe(recipe, "requires --ttft-sla-ms".to_owned())
                })?;
                (t, "time_to_first_token", "TTFT")
            } else {
                let t = t.inter_token_ms()?.ok_or_else(|| {
                    SearchError::recipe(
                        recipe,
                        "requires --itl-sla-ms (or its alias --tpot-sla-ms)".to_owned(),
                    )
                })?;
                (t, "inter_token_latency", "ITL")
            };
            require_streaming(
                streaming,
                recipe,
                &format!("{what} is a streaming-only metric"),
            )?;
            let (lo, hi) = concurrency_bounds(b, recipe, 1, 1000)?;
            Ok(adaptive(
                recipe,
                PlannerKind::Bayesian,
                concurrency_dim(lo, hi, Prior::LogUniform),
                (30, 5),
                vec![SlaFilter::new(tag, "p95", Op::Lt, threshold)],
            ))
        }
        Recipe::MaxConcurrencyUnderSla => max_concurrency(t, b, streaming),
        Recipe::MaxGoodputUnderSlo => max_goodput(t, b, streaming),
        Recipe::ConcurrencyRamp => {
            let (lo, hi) = concurrency_bounds(b, recipe, 1, 1000)?;
            let values = logspace_int_steps(lo, hi, b.concurrency_steps.unwrap_or(8))?;
            let knee = Derivation::Knee {
                threshold_pct: b.degradation_threshold.unwrap_or(0.2),
                metric_tag: b
                    .degradation_metric_tag
                    .clone()
                    .unwrap_or_else(|| "request_latency".to_owned()),
                stat: b
                    .degradation_stat
                    .clone()
                    .unwrap_or_else(|| "p99".to_owned()),
                swept_param: CONCURRENCY_PATH.to_owned(),
            };
            Ok(grid(
                recipe,
                vec![(CONCURRENCY_PATH.to_owned(), values)],
                ("degradation_knee_detect", "degradation_knee.json", knee),
            ))
        }
        Recipe::PrefillTtftCurve => {
            require_streaming(streaming, recipe, "TTFT is a streaming-only metric")?;
            let isl = logspace_int_steps(
                b.isl_min.unwrap_or(256),
                b.isl_max.unwrap_or(32768),
                b.isl_steps.unwrap_or(8),
            )?;
            Ok(grid(
                recipe,
                vec![
                    (ISL_PATH.to_owned(), isl),
                    (CONCURRENCY_PATH.to_owned(), vec![1]),
                ],
                (
                    "ttft_curve_fit",
                    "prefill_curve.json",
                    Derivation::CurveFit {
                        metric_tag: "time_to_first_token".to_owned(),
                        stat: "avg".to_owned(),
                        swept_param: ISL_PATH.to_owned(),
                        r_squared_floor: super::derived::R2_FLOOR,
                    },
                ),
            ))
        }
        Recipe::DecodeItlCurve => {
            require_streaming(streaming, recipe, "ITL is a streaming-only metric")?;
            let (lo, hi) = concurrency_bounds(b, recipe, 1, 200)?;
            let conc = logspace_int_steps(lo, hi, b.concurrency_steps.unwrap_or(6))?;
            let osl = logspace_int_steps(
                b.osl_min.unwrap_or(64),
                b.osl_max.unwrap_or(1024),
                b.osl_steps.unwrap_or(4),
            )?;
            Ok(grid(
                recipe,
                vec![
                    (CONCURRENCY_PATH.to_owned(), conc),
                    (OSL_PATH.to_owned(), osl),
                ],
                (
                    "itl_surface_fit",
                    "decode_itl_surface.json",
                    Derivation::ItlSurface {
                        metric_tag: "inter_token_latency".to_owned(),
                        stat: "avg".to_owned(),
                        concurrency_param: CONCURRENCY_PATH.to_owned(),
                        osl_param: OSL_PATH.to_owned(),
                    },
                ),
            ))
        }
        Recipe::ParetoSweep => pareto(b, streaming),
    }
}

/// A grid recipe's expansion: its parameters crossed, and `(handler, file, derivation)`.
fn grid(
    recipe: Recipe,
    parameters: Vec<(String, Vec<u64>)>,
    (handler, output_filename, derivation): (&'static str, &'static str, Derivation),
) -> Expansion {
    Expansion::Grid(GridSpec {
        parameters,
        scenarios: Vec::new(),
        sla_filters: Vec::new(),
        post_process: Some(PostProcess {
            handler: handler.to_owned(),
            output_filename: output_filename.to_owned(),
            derivation: Ok(derivation),
        }),
        recipe,
    })
}

/// The SLA filters `max-concurrency-under-sla` makes of the SLA flags: p95 TTFT, p95 ITL,
/// p99 request latency, and the average error rate (the fraction given, as a percentage).
pub fn concurrency_filters(t: &SlaTargets) -> Result<Vec<SlaFilter>, SearchError> {
    let mut f = Vec::new();
    if let Some(v) = t.ttft_ms {
        f.push(SlaFilter::new("time_to_first_token", "p95", Op::Lt, v));
    }
    if let Some(v) = t.inter_token_ms()? {
        f.push(SlaFilter::new("inter_token_latency", "p95", Op::Lt, v));
    }
    if let Some(v) = t.e2e_ms {
        f.push(SlaFilter::new("request_latency", "p99", Op::Lt, v));
    }
    if let Some(v) = t.error_rate {
        f.push(SlaFilter::new(
            "request_error_rate",
            "avg",
            Op::Lt,
            v * 100.0,
        ));
    }
    Ok(f)
}

fn max_concurrency(t: &SlaTargets, b: &Bounds, streaming: bool) -> Result<Expansion, SearchError> {
    let recipe = Recipe::MaxConcurrencyUnderSla;
    let filters = concurrency_filters(t)?;
    if filters.is_empty() {
        return Err(SearchError::recipe(
            recipe,
            "requires at least one of --ttft-sla-ms / --tpot-sla-ms / --itl-sla-ms / \
             --e2e-sla-ms / --error-rate-sla"
                .to_owned(),
        ));
    }
    let streamed_only = filters.iter().any(|f| {
        matches!(
            f.metric_tag.as_str(),
            "time_to_first_token" | "inter_token_latency"
        )
    });
    if streamed_only {
        require_streaming(
            streaming,
            recipe,
            "SLA filters reference streaming-only metrics (TTFT, ITL/TPOT)",
        )?;
    }
    let (lo, hi) = concurrency_bounds(b, recipe, 1, 1000)?;
    let style = b.search_style.unwrap_or(SearchStyle::SmoothIsotonic);
    Ok(match style {
        SearchStyle::SmoothIsotonic => adaptive(
            recipe,
            PlannerKind::SmoothIsotonic,
            concurrency_dim(lo, hi, Prior::Uniform),
            (30, 1),
            filters,
        ),
        SearchStyle::Monotonic => adaptive(
            recipe,
            PlannerKind::MonotonicSla,
            concurrency_dim(lo, hi, Prior::Uniform),
            (20, 1),
            filters,
        ),
        SearchStyle::Bo | SearchStyle::Optuna => adaptive(
            recipe,
            if style == SearchStyle::Bo {
                PlannerKind::Bayesian
            } else {
                PlannerKind::Optuna
            },
            concurrency_dim(lo, hi, Prior::LogUniform),
            (30, 5),
            filters,
        ),
        SearchStyle::Grid => Expansion::Grid(GridSpec {
            parameters: vec![(CONCURRENCY_PATH.to_owned(), logspace_int_steps(lo, hi, 8)?)],
            scenarios: Vec::new(),
            post_process: Some(PostProcess {
                handler: "sla_breach_knee".to_owned(),
                output_filename: "sla_breach.json".to_owned(),
                derivation: Ok(Derivation::SlaBreach {
                    filters: filters.clone(),
                    swept_param: CONCURRENCY_PATH.to_owned(),
                }),
            }),
            sla_filters: filters,
            recipe,
        }),
    })
}

fn max_goodput(t: &SlaTargets, b: &Bounds, streaming: bool) -> Result<Expansion, SearchError> {
    let recipe = Recipe::MaxGoodputUnderSlo;
    let itl = t.inter_token_ms()?;
    let missing: Vec<&str> = [
        ("--ttft-sla-ms", t.ttft_ms),
        ("--tpot-sla-ms", itl),
        ("--e2e-sla-ms", t.e2e_ms),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_none())
    .map(|(f, _)| f)
    .collect();
    let (Some(ttft), Some(itl), Some(e2e)) = (t.ttft_ms, itl, t.e2e_ms) else {
        return Err(SearchError::recipe(
            recipe,
            format!(
                "requires {}; all three (--ttft-sla-ms, --tpot-sla-ms / --itl-sla-ms, \
                 --e2e-sla-ms) define a good request",
                missing.join(", ")
            ),
        ));
    };
    let attainment = t.slo_attainment_fraction.unwrap_or(0.95);
    require_streaming(streaming, recipe, "TPOT is a streaming-only metric")?;
    let (lo, hi) = concurrency_bounds(b, recipe, 1, 1000)?;
    Ok(Expansion::Adaptive(AdaptiveSpec {
        planner: PlannerKind::Bayesian,
        space: vec![concurrency_dim(lo, hi, Prior::LogUniform)],
        objective: Objective {
            metric: "goodput".to_owned(),
            stat: "avg".to_owned(),
            direction: Direction::Maximize,
        },
        max_iterations: 30,
        initial_points: 5,
        random_seed: None,
        sla_filters: vec![SlaFilter::new(
            "good_request_fraction",
            "avg",
            Op::Ge,
            attainment,
        )],
        recipe: Some(recipe),
        slos: vec![
            ("time_to_first_token".to_owned(), ttft),
            ("inter_token_latency".to_owned(), itl),
            ("request_latency".to_owned(), e2e),
        ],
        tiers: Vec::new(),
    }))
}

/// `--isl-osl-pairs ISL/OSL,ISL/OSL,...` (each a whole number of at least 1).
pub fn parse_isl_osl_pairs(s: &str) -> Result<Vec<(u64, u64)>, SearchError> {
    let bad = |why: String| SearchError::flag("--isl-osl-pairs", format!("{s:?}: {why}"));
    s.split(',')
        .map(|p| {
            let (i, o) = p
                .trim()
                .split_once('/')
                .ok_or_else(|| bad(format!("{p:?} is not ISL/OSL")))?;
            let num = |x: &str| {
                x.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad(format!("{x:?} is not a whole number of at least 1")))
            };
            Ok((num(i)?, num(o)?))
        })
        .collect()
}

fn pareto(b: &Bounds, streaming: bool) -> Result<Expansion, SearchError> {
    let recipe = Recipe::ParetoSweep;
    require_streaming(
        streaming,
        recipe,
        "output_token_throughput is a streaming-only metric",
    )?;
    let raw = b
        .isl_osl_pairs
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            SearchError::recipe(
                recipe,
                "requires --isl-osl-pairs (e.g. '128/128,256/256')".to_owned(),
            )
        })?;
    let pairs = parse_isl_osl_pairs(raw)?;
    let conc = b
        .concurrency
        .clone()
        .unwrap_or_else(|| vec![1, 4, 16, 64, 256]);
    if pairs.len() * conc.len() < 2 {
        return Err(SearchError::recipe(
            recipe,
            "a Pareto sweep of a single point is meaningless: give at least 2 pairs or at \
             least 2 concurrency values"
                .to_owned(),
        ));
    }
    let scenarios = pairs
        .iter()
        .flat_map(|&(i, o)| conc.iter().map(move |&c| (i, o, c)))
        .collect();
    Ok(Expansion::Grid(GridSpec {
        parameters: Vec::new(),
        scenarios,
        sla_filters: Vec::new(),
        post_process: Some(PostProcess {
            handler: "pareto_sweep_export".to_owned(),
            output_filename: "pareto_sweep.json".to_owned(),
            derivation: Ok(Derivation::ParetoExport {
                x: ("time_to_first_token".to_owned(), "p95".to_owned()),
                y: ("output_token_throughput".to_owned(), "avg".to_owned()),
                keys: ["isl".to_owned(), "osl".to_owned(), "concurrency".to_owned()],
            }),
        }),
        recipe,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_spaced_grids_match_hand_computed_values() {
        // [1, 1000] in 8 steps: 1000^(i/7) = 1, 2.68, 7.20, 19.31, 51.79, 138.9, 372.8, 1000.
        assert_eq!(
            logspace_int_steps(1, 1000, 8).unwrap(),
            [1, 3, 7, 19, 52, 139, 373, 1000]
        );
        // [256, 32768] in 8 steps: 256 × 2^i = 256 ... 32768 exactly.
        assert_eq!(
            logspace_int_steps(256, 32768, 8).unwrap(),
            [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
        );
        // [64, 1024] in 4 steps: 64 × 16^(i/3) = 64, 161.3, 406.4, 1024.
        assert_eq!(
            logspace_int_steps(64, 1024, 4).unwrap(),
            [64, 161, 406, 1024]
        );
        // [1, 200] in 6 steps: 200^(i/5) = 1, 2.88, 8.29, 23.9, 68.9, 200.
        assert_eq!(
            logspace_int_steps(1, 200, 6).unwrap(),
            [1, 3, 8, 24, 69, 200]
        );
        // Rounding collisions merge: [1, 3] in 5 steps = 1, 1.32, 1.73, 2.28, 3.
        assert_eq!(logspace_int_steps(1, 3, 5).unwrap(), [1, 2, 3]);
        // [4, 9] in 3 steps: 4, sqrt(36) = 6, 9.
        assert_eq!(logspace_int_steps(4, 9, 3).unwrap(), [4, 6, 9]);
    }

    #[test]
    fn bad_ramps_are_refused() {
        assert!(logspace_int_steps(1, 10, 1).is_err());
        assert!(logspace_int_steps(0, 10, 3).is_err());
        assert!(logspace_int_steps(10, 10, 3).is_err());
    }

    fn ttft(ms: f64) -> SlaTargets {
        SlaTargets {
            ttft_ms: Some(ms),
            ..SlaTargets::default()
        }
    }

    #[test]
    fn throughput_recipes_are_bayesian_over_log_uniform_concurrency() {
        let Expansion::Adaptive(a) = expand(
            Recipe::MaxThroughputTtftSla,
            &ttft(500.0),
            &Bounds::default(),
            true,
        )
        .unwrap() else {
            panic!("adaptive expected")
        };
        assert_eq!(a.planner, PlannerKind::Bayesian);
        assert_eq!(a.space, [concurrency_dim(1, 1000, Prior::LogUniform)]);
        assert_eq!((a.max_iterations, a.initial_points), (30, 5));
        assert_eq!(a.objective, throughput());
        assert_eq!(
            a.sla_filters,
            [SlaFilter::new("time_to_first_token", "p95", Op::Lt, 500.0)]
        );
        // The ITL twin takes --tpot-sla-ms as well; conflicting aliases are refused.
        let t = SlaTargets {
            tpot_ms: Some(20.0),
            ..SlaTargets::default()
        };
        let Expansion::Adaptive(a) =
            expand(Recipe::MaxThroughputItlSla, &t, &Bounds::default(), true).unwrap()
        else {
            panic!("adaptive expected")
        };
        assert_eq!(a.sla_filters[0].metric_tag, "inter_token_latency");
        let both = SlaTargets {
            itl_ms: Some(10.0),
            ..t
        };
        assert!(expand(Recipe::MaxThroughputItlSla, &both, &Bounds::default(), true).is_err());
    }

    #[test]
    fn missing_inputs_streaming_and_inverted_bounds_are_refused() {
        let none = SlaTargets::default();
        let b = Bounds::default();
        let msg = |r| expand(r, &none, &b, true).unwrap_err().to_string();
        assert!(msg(Recipe::MaxThroughputTtftSla).contains("--ttft-sla-ms"));
        assert!(msg(Recipe::MaxConcurrencyUnderSla).contains("at least one of"));
        assert!(
            msg(Recipe::MaxGoodputUnderSlo).contains("--ttft-sla-ms, --tpot-sla-ms, --e2e-sla-ms")
        );
        assert!(msg(Recipe::ParetoSweep).contains("--isl-osl-pairs"));
        let e = expand(Recipe::MaxThroughputTtftSla, &ttft(1.0), &b, false).unwrap_err();
        assert!(e.to_string().contains("requires --streaming"), "{e}");
        // E2E and error-rate SLAs do not need streaming.
        let e2e = SlaTargets {
            e2e_ms: Some(900.0),
            error_rate: Some(0.01),
            ..SlaTargets::default()
        };
        assert!(expand(Recipe::MaxConcurrencyUnderSla, &e2e, &b, false).is_ok());
        let inverted = Bounds {
            concurrency_min: Some(64),
            concurrency_max: Some(8),
            ..Bounds::default()
        };
        let e = expand(Recipe::ConcurrencyRamp, &none, &inverted, true).unwrap_err();
        assert!(
            e.to_string()
                .contains("--concurrency-min (64) must be < --concurrency-max (8)")
        );
    }

    #[test]
    fn max_concurrency_styles_and_filters() {
        let t = SlaTargets {
            ttft_ms: Some(200.0),
            tpot_ms: Some(15.0),
            e2e_ms: Some(2000.0),
            error_rate: Some(0.05),
            ..SlaTargets::default()
        };
        let expect = [
            SlaFilter::new("time_to_first_token", "p95", Op::Lt, 200.0),
            SlaFilter::new("inter_token_latency", "p95", Op::Lt, 15.0),
            SlaFilter::new("request_latency", "p99", Op::Lt, 2000.0),
            SlaFilter::new("request_error_rate", "avg", Op::Lt, 5.0),
        ];
        let with = |style| Bounds {
            search_style: style,
            concurrency_max: Some(64),
            ..Bounds::default()
        };
        let Expansion::Adaptive(a) =
            expand(Recipe::MaxConcurrencyUnderSla, &t, &with(None), true).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.planner, PlannerKind::SmoothIsotonic);
        assert_eq!((a.max_iterations, a.initial_points), (30, 1));
        assert_eq!(a.sla_filters, expect);
        assert_eq!(a.space, [concurrency_dim(1, 64, Prior::Uniform)]);
        let Expansion::Adaptive(m) = expand(
            Recipe::MaxConcurrencyUnderSla,
            &t,
            &with(Some(SearchStyle::Monotonic)),
            true,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            (m.planner, m.max_iterations),
            (PlannerKind::MonotonicSla, 20)
        );
        let Expansion::Grid(g) = expand(
            Recipe::MaxConcurrencyUnderSla,
            &t,
            &with(Some(SearchStyle::Grid)),
            true,
        )
        .unwrap() else {
            panic!()
        };
        // [1, 64] in 8 steps: 64^(i/7) = 1, 1.81, 3.28, 5.94, 10.8, 19.5, 35.3, 64.
        assert_eq!(
            g.parameters,
            [(
                CONCURRENCY_PATH.to_owned(),
                vec![1, 2, 3, 6, 11, 20, 35, 64]
            )]
        );
        assert_eq!(g.sla_filters, expect);
        assert_eq!(g.post_process.unwrap().output_filename, "sla_breach.json");
    }

    #[test]
    fn grid_recipes_expand_to_their_default_grids() {
        let none = SlaTargets::default();
        let b = Bounds::default();
        let Expansion::Grid(ramp) = expand(Recipe::ConcurrencyRamp, &none, &b, false).unwrap()
        else {
            panic!()
        };
        assert_eq!(ramp.parameters[0].1, [1, 3, 7, 19, 52, 139, 373, 1000]);
        assert_eq!(
            ramp.post_process.unwrap().output_filename,
            "degradation_knee.json"
        );
        let Expansion::Grid(pre) = expand(Recipe::PrefillTtftCurve, &none, &b, true).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            pre.parameters,
            [
                (
                    ISL_PATH.to_owned(),
                    vec![256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
                ),
                (CONCURRENCY_PATH.to_owned(), vec![1]),
            ]
        );
        let Expansion::Grid(dec) = expand(Recipe::DecodeItlCurve, &none, &b, true).unwrap() else {
            panic!()
        };
        assert_eq!(
            dec.parameters,
            [
                (CONCURRENCY_PATH.to_owned(), vec![1, 3, 8, 24, 69, 200]),
                (OSL_PATH.to_owned(), vec![64, 161, 406, 1024]),
            ]
        );
    }

    #[test]
    fn pareto_pairs_cross_the_concurrencies_in_order() {
        let b = Bounds {
            isl_osl_pairs: Some("128/128,512/256".to_owned()),
            concurrency: Some(vec![1, 8]),
            ..Bounds::default()
        };
        let Expansion::Grid(g) =
            expand(Recipe::ParetoSweep, &SlaTargets::default(), &b, true).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            g.scenarios,
            [(128, 128, 1), (128, 128, 8), (512, 256, 1), (512, 256, 8)]
        );
        assert!(parse_isl_osl_pairs("128-128").is_err());
        assert!(parse_isl_osl_pairs("0/5").is_err());
        let one = Bounds {
            isl_osl_pairs: Some("128/128".to_owned()),
            concurrency: Some(vec![4]),
            ..Bounds::default()
        };
        assert!(expand(Recipe::ParetoSweep, &SlaTargets::default(), &one, true).is_err());
    }

    #[test]
    fn goodput_recipe_sets_the_slos_and_the_attainment_filter() {
        let t = SlaTargets {
            ttft_ms: Some(500.0),
            itl_ms: Some(15.0),
            e2e_ms: Some(2000.0),
            slo_attainment_fraction: Some(0.9),
            ..SlaTargets::default()
        };
        let Expansion::Adaptive(a) =
            expand(Recipe::MaxGoodputUnderSlo, &t, &Bounds::default(), true).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.objective.metric, "goodput");
        assert_eq!(
            a.sla_filters,
            [SlaFilter::new("good_request_fraction", "avg", Op::Ge, 0.9)]
        );
        assert_eq!(a.slos.len(), 3);
    }

    #[test]
    fn recipe_names_round_trip() {
        for r in Recipe::ALL {
            assert_eq!(Recipe::parse(r.name()).unwrap(), r);
        }
        assert!(Recipe::parse("max-throughput").is_err());
    }
}
