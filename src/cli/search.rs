//! The SLO search flags of `profile` (AIPerf 0.13's search recipes, SLA flags, recipe bounds
//! and adaptive search; docs/search.md). Checked and expanded in `crate::search::config`.

use clap::{Args, ValueEnum};

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchArgs {
    /// A built-in search recipe: max-throughput-ttft-sla, max-throughput-itl-sla,
    /// concurrency-ramp, prefill-ttft-curve, decode-itl-curve, max-concurrency-under-sla,
    /// pareto-sweep, max-goodput-under-slo.
    #[arg(long = "search-recipe", value_name = "NAME", help_heading = "Search")]
    pub search_recipe: Option<String>,

    /// TTFT SLA, ms (p95 TTFT must stay under it).
    #[arg(long = "ttft-sla-ms", value_name = "MS", help_heading = "Search")]
    pub ttft_sla_ms: Option<f64>,

    /// Inter-token latency SLA, ms (p95 ITL); the same SLA as --tpot-sla-ms.
    #[arg(long = "itl-sla-ms", value_name = "MS", help_heading = "Search")]
    pub itl_sla_ms: Option<f64>,

    /// Time-per-output-token SLA, ms; the same SLA as --itl-sla-ms.
    #[arg(long = "tpot-sla-ms", value_name = "MS", help_heading = "Search")]
    pub tpot_sla_ms: Option<f64>,

    /// End-to-end latency SLA, ms (p99 request latency).
    #[arg(long = "e2e-sla-ms", value_name = "MS", help_heading = "Search")]
    pub e2e_sla_ms: Option<f64>,

    /// Error-rate SLA, a fraction strictly between 0 and 1.
    #[arg(
        long = "error-rate-sla",
        value_name = "FRACTION",
        help_heading = "Search"
    )]
    pub error_rate_sla: Option<f64>,

    /// max-goodput-under-slo: the share of good requests a point needs (default 0.95).
    #[arg(
        long = "slo-attainment-fraction",
        value_name = "FRACTION",
        help_heading = "Search"
    )]
    pub slo_attainment_fraction: Option<f64>,

    /// An SLA filter `TAG:STAT:OP:THRESHOLD` (e.g. time_to_first_token:p95:lt:200); repeatable.
    #[arg(long = "search-sla", value_name = "FILTER", help_heading = "Search")]
    pub search_sla: Vec<String>,

    /// A tier of SLA filters `[LABEL:]FILTER[,FILTER...]` (repeatable, 2 to 10 tiers): an
    /// adaptive search finds each tier's highest concurrency at once.
    #[arg(long = "search-sla-tier", value_name = "TIER", help_heading = "Search")]
    pub search_sla_tier: Vec<String>,

    /// max-concurrency-under-sla: smooth_isotonic (default), monotonic, bo, optuna, grid.
    #[arg(long = "search-style", value_enum, help_heading = "Search")]
    pub search_style: Option<SearchStyle>,

    /// Lowest concurrency of a recipe (at least 1).
    #[arg(long = "concurrency-min", value_name = "N", help_heading = "Search")]
    pub concurrency_min: Option<u64>,

    /// Highest concurrency of a recipe.
    #[arg(long = "concurrency-max", value_name = "N", help_heading = "Search")]
    pub concurrency_max: Option<u64>,

    /// Log-spaced concurrency steps of a grid recipe (at least 2).
    #[arg(long = "concurrency-steps", value_name = "N", help_heading = "Search")]
    pub concurrency_steps: Option<u32>,

    /// Lowest ISL of prefill-ttft-curve.
    #[arg(long = "isl-min", value_name = "N", help_heading = "Search")]
    pub isl_min: Option<u64>,

    /// Highest ISL of prefill-ttft-curve.
    #[arg(long = "isl-max", value_name = "N", help_heading = "Search")]
    pub isl_max: Option<u64>,

    /// Log-spaced ISL steps of prefill-ttft-curve (at least 2).
    #[arg(long = "isl-steps", value_name = "N", help_heading = "Search")]
    pub isl_steps: Option<u32>,

    /// Lowest OSL of decode-itl-curve.
    #[arg(long = "osl-min", value_name = "N", help_heading = "Search")]
    pub osl_min: Option<u64>,

    /// Highest OSL of decode-itl-curve.
    #[arg(long = "osl-max", value_name = "N", help_heading = "Search")]
    pub osl_max: Option<u64>,

    /// Log-spaced OSL steps of decode-itl-curve (at least 2).
    #[arg(long = "osl-steps", value_name = "N", help_heading = "Search")]
    pub osl_steps: Option<u32>,

    /// pareto-sweep: ISL/OSL pairs, `128/128,512/256`.
    #[arg(long = "isl-osl-pairs", value_name = "PAIRS", help_heading = "Search")]
    pub isl_osl_pairs: Option<String>,

    /// concurrency-ramp: the relative rise over the first point that is the knee (0 to 1).
    #[arg(
        long = "degradation-threshold",
        value_name = "FRACTION",
        help_heading = "Search"
    )]
    pub degradation_threshold: Option<f64>,

    /// concurrency-ramp: the metric whose rise is the knee (default request_latency).
    #[arg(
        long = "degradation-metric-tag",
        value_name = "TAG",
        help_heading = "Search"
    )]
    pub degradation_metric_tag: Option<String>,

    /// concurrency-ramp: the stat of that metric (default p99).
    #[arg(long = "degradation-stat", value_enum, help_heading = "Search")]
    pub degradation_stat: Option<StatArg>,

    /// Adaptive search dimension `PATH:LO,HI[:int|real]`, e.g.
    /// phases.profiling.concurrency:1,256:int; repeatable.
    #[arg(long = "search-space", value_name = "DIM", help_heading = "Search")]
    pub search_space: Vec<String>,

    /// Adaptive search objective metric tag (e.g. output_token_throughput).
    #[arg(long = "search-metric", value_name = "TAG", help_heading = "Search")]
    pub search_metric: Option<String>,

    /// Adaptive search objective stat.
    #[arg(long = "search-stat", value_enum, help_heading = "Search")]
    pub search_stat: Option<StatArg>,

    /// Adaptive search direction.
    #[arg(long = "search-direction", value_enum, help_heading = "Search")]
    pub search_direction: Option<Direction>,

    /// Adaptive search: most points (2 to 200).
    #[arg(
        long = "search-max-iterations",
        value_name = "N",
        help_heading = "Search"
    )]
    pub search_max_iterations: Option<u32>,

    /// Adaptive search: points before the model chooses (Bayesian).
    #[arg(
        long = "search-initial-points",
        value_name = "N",
        help_heading = "Search"
    )]
    pub search_initial_points: Option<u32>,

    /// Adaptive search: seed of the planner's own draws.
    #[arg(
        long = "search-random-seed",
        value_name = "SEED",
        help_heading = "Search"
    )]
    pub search_random_seed: Option<u64>,

    /// Adaptive search planner: bayesian (default), monotonic_sla, smooth_isotonic, optuna.
    #[arg(long = "search-planner", value_name = "NAME", help_heading = "Search")]
    pub search_planner: Option<String>,

    /// How a percentile objective is pooled over trials: mean (default) or pooled (refused).
    #[arg(
        long = "search-percentile-pooling",
        value_name = "MODE",
        help_heading = "Search"
    )]
    pub search_percentile_pooling: Option<String>,

    /// Optuna sampler: gp runs ringperf's own Gaussian process; tpe and botorch are refused.
    #[arg(long = "optuna-sampler", value_name = "NAME", help_heading = "Search")]
    pub optuna_sampler: Option<String>,

    /// Optuna BoTorch acquisition (refused: BoTorch is Python only).
    #[arg(
        long = "optuna-acquisition",
        value_name = "NAME",
        help_heading = "Search"
    )]
    pub optuna_acquisition: Option<String>,

    /// Optuna terminator: none is accepted; regret and emmr are refused.
    #[arg(
        long = "optuna-terminator",
        value_name = "NAME",
        help_heading = "Search"
    )]
    pub optuna_terminator: Option<String>,

    /// BO constraint mode (penalty, eic): accepted and ignored, as AIPerf 0.13 does.
    #[arg(
        long = "bo-constraint-mode",
        value_name = "MODE",
        help_heading = "Search"
    )]
    pub bo_constraint_mode: Option<String>,
}

/// A stat an objective or a degradation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatArg {
    /// Mean.
    Avg,
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
}

impl StatArg {
    /// The stat's key.
    pub fn as_str(self) -> &'static str {
        match self {
            StatArg::Avg => "avg",
            StatArg::P50 => "p50",
            StatArg::P90 => "p90",
            StatArg::P95 => "p95",
            StatArg::P99 => "p99",
        }
    }
}

impl SearchArgs {
    /// Whether any search flag was given.
    pub fn any(&self) -> bool {
        self.search_recipe.is_some()
            || !self.search_space.is_empty()
            || !self.search_sla.is_empty()
            || !self.search_sla_tier.is_empty()
    }
}

/// `--search-style` of `max-concurrency-under-sla`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchStyle {
    /// The smooth-isotonic boundary search (the default).
    #[value(name = "smooth_isotonic")]
    SmoothIsotonic,
    /// Exponential probe then bisection.
    Monotonic,
    /// Bayesian optimisation of throughput under the SLA.
    Bo,
    /// Optuna (refused: Python only).
    Optuna,
    /// An 8-step log-spaced grid and the SLA breach knee.
    Grid,
}

/// Optimisation direction of the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Direction {
    /// Larger is better.
    Maximize,
    /// Smaller is better.
    Minimize,
}

impl Direction {
    /// AIPerf's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Maximize => "maximize",
            Direction::Minimize => "minimize",
        }
    }
}
