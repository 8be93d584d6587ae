//! What an adaptive phase is told: its control variable and bounds, its windows, its step
//! policy and its SLA filters, typed. A config file gives them (`adaptive_scale` on a phase);
//! [`Settings::resolve`] checks what AIPerf 0.13 checks only when the phase starts (the metric
//! names and the stats each allows) and yields the filters the window statistics are computed
//! for.

use serde::{Deserialize, Serialize};

/// The load setting the controller moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlVariable {
    Concurrency,
    PrefillConcurrency,
    RequestRate,
    Users,
}

impl ControlVariable {
    /// AIPerf's name of it.
    pub fn name(self) -> &'static str {
        match self {
            ControlVariable::Concurrency => "concurrency",
            ControlVariable::PrefillConcurrency => "prefill_concurrency",
            ControlVariable::RequestRate => "request_rate",
            ControlVariable::Users => "users",
        }
    }

    /// The variable named `name`.
    pub fn of(name: &str) -> Option<Self> {
        Some(match name {
            "concurrency" => ControlVariable::Concurrency,
            "prefill_concurrency" => ControlVariable::PrefillConcurrency,
            "request_rate" => ControlVariable::RequestRate,
            "users" => ControlVariable::Users,
            _ => return None,
        })
    }

    /// Its values are whole numbers (a set value is truncated after clamping).
    pub fn integer(self) -> bool {
        self != ControlVariable::RequestRate
    }
}

/// How the controller grows the control value while every window passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPolicy {
    /// `base_step` times a multiplier from the smallest SLA margin.
    SlaMargin,
    /// `step_percent` of the current value, rounded up, at least 1.
    FixedPercentStep,
}

impl StepPolicy {
    pub fn name(self) -> &'static str {
        match self {
            StepPolicy::SlaMargin => "sla_margin",
            StepPolicy::FixedPercentStep => "fixed_percent_step",
        }
    }

    pub fn of(name: &str) -> Option<Self> {
        match name {
            "sla_margin" => Some(StepPolicy::SlaMargin),
            "fixed_percent_step" => Some(StepPolicy::FixedPercentStep),
            _ => None,
        }
    }
}

/// The statistic of a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    Avg,
    P1,
    P5,
    P10,
    P25,
    P50,
    P75,
    P90,
    P95,
    P99,
    Min,
    Max,
}

/// Every stat, in AIPerf's order (its error message lists them so).
pub const STATS: [Stat; 12] = [
    Stat::Avg,
    Stat::P1,
    Stat::P5,
    Stat::P10,
    Stat::P25,
    Stat::P50,
    Stat::P75,
    Stat::P90,
    Stat::P95,
    Stat::P99,
    Stat::Min,
    Stat::Max,
];

impl Stat {
    pub fn name(self) -> &'static str {
        match self {
            Stat::Avg => "avg",
            Stat::P1 => "p1",
            Stat::P5 => "p5",
            Stat::P10 => "p10",
            Stat::P25 => "p25",
            Stat::P50 => "p50",
            Stat::P75 => "p75",
            Stat::P90 => "p90",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::Min => "min",
            Stat::Max => "max",
        }
    }

    pub fn of(name: &str) -> Option<Self> {
        STATS.into_iter().find(|s| s.name() == name)
    }

    /// The percentile a `pN` stat stands for.
    pub fn percentile(self) -> Option<f64> {
        self.name()
            .strip_prefix('p')
            .and_then(|n| n.parse::<f64>().ok())
    }
}

/// A filter's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// The spelling (`lt`, `le`, `gt`, `ge`), in a config file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "lt",
            Op::Le => "le",
            Op::Gt => "gt",
            Op::Ge => "ge",
        }
    }

    /// The comparison spelled `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "lt" => Op::Lt,
            "le" => Op::Le,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            _ => return None,
        })
    }

    /// `value OP threshold`.
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => value < threshold,
            Op::Le => value <= threshold,
            Op::Gt => value > threshold,
            Op::Ge => value >= threshold,
        }
    }

    /// The mathematical sign, for the console (`<`, `≤`, `>`, `≥`).
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "≤",
            Op::Gt => ">",
            Op::Ge => "≥",
        }
    }

    /// Upper bounds (`lt`, `le`): the margin is how far below the threshold a value is.
    pub fn upper(self) -> bool {
        matches!(self, Op::Lt | Op::Le)
    }
}

/// One SLA filter as written. A list entry may leave `stat` out (p95 is meant, and the echo
/// leaves it out too).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlaFilter {
    pub metric_tag: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<Stat>,
    pub op: Op,
    pub threshold: f64,
}

impl SlaFilter {
    /// The stat in force (p95 when none is written).
    pub fn stat(&self) -> Stat {
        self.stat.unwrap_or(Stat::P95)
    }

    /// The filter's key in the events' `sla_values`: `tag:stat:op:threshold`, the threshold
    /// printed as C's `%g`.
    pub fn key(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.metric_tag,
            self.stat().name(),
            self.op.as_str(),
            fmt_g(self.threshold)
        )
    }
}

/// What a filter measures over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Per successful request, in ms; all twelve stats.
    RequestLatency,
    Ttft,
    Itl,
    /// Successes per second of the window.
    Throughput,
    /// Output tokens of the successes per second.
    OutputTokenThroughput,
    /// Successes passing every latency filter, per second.
    Goodput,
    /// Successes passing every latency filter, over all requests.
    GoodputRatio,
    /// Successes over all requests (a fraction).
    SuccessRate,
    /// Errors over successes and errors, in percent.
    ErrorRate,
    /// Cancellations over all requests (a fraction).
    CancellationRate,
}

impl Metric {
    /// The metric of a tag (with AIPerf's aliases).
    pub fn of(tag: &str) -> Option<Self> {
        Some(match tag {
            "request_latency" => Metric::RequestLatency,
            "time_to_first_token" | "ttft" => Metric::Ttft,
            "inter_token_latency" | "itl" | "tpot" => Metric::Itl,
            "throughput" | "request_throughput" | "completed_request_throughput" => {
                Metric::Throughput
            }
            "output_token_throughput" => Metric::OutputTokenThroughput,
            "goodput" => Metric::Goodput,
            "goodput_ratio" => Metric::GoodputRatio,
            "success_rate" | "request_success_rate" => Metric::SuccessRate,
            "error_rate" | "request_error_rate" => Metric::ErrorRate,
            "cancellation_rate" | "request_cancellation_rate" => Metric::CancellationRate,
            _ => return None,
        })
    }

    /// A per-request latency (the other metrics are rates of the window).
    pub fn latency(self) -> bool {
        matches!(self, Metric::RequestLatency | Metric::Ttft | Metric::Itl)
    }

    /// The family name AIPerf's stat error names.
    fn family(self) -> &'static str {
        match self {
            Metric::OutputTokenThroughput => "output_token_throughput",
            Metric::Goodput => "goodput",
            Metric::GoodputRatio => "goodput_ratio",
            Metric::SuccessRate => "success_rate",
            Metric::ErrorRate => "error_rate",
            Metric::CancellationRate => "cancellation_rate",
            _ => "throughput",
        }
    }
}

/// A filter whose metric is known.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub written: SlaFilter,
    pub metric: Metric,
    pub stat: Stat,
    /// [`SlaFilter::key`].
    pub key: String,
}

/// An adaptive phase's settings, every default applied and the maximum inferred.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub variable: ControlVariable,
    pub min: f64,
    pub max: f64,
    /// Seconds between assessments.
    pub assessment_period_s: f64,
    /// How long the boundary is held.
    pub sustain_s: f64,
    /// Fewer successes than this leave a window inconclusive.
    pub min_completed: u64,
    pub step_policy: StepPolicy,
    pub base_step: u64,
    pub max_step_multiplier: u64,
    pub step_percent: f64,
    /// The first is the primary SLA.
    pub sla: Vec<SlaFilter>,
}

/// AIPerf's message for a metric it does not steer by.
pub const SUPPORTED_METRICS: &str = "adaptive_scale supports request_latency, \
     time_to_first_token, inter_token_latency, request throughput, output_token_throughput, \
     goodput, goodput_ratio, success_rate, error_rate, and cancellation_rate SLA metrics in this \
     release";

impl Settings {
    /// The filters with their metrics, checked as AIPerf 0.13 checks them when the phase
    /// starts (its messages).
    ///
    /// # Errors
    /// An unknown metric, a stat a rate metric does not have, an error-rate threshold outside
    /// [0, 100], goodput without a latency filter, no filter at all.
    pub fn resolve(&self) -> Result<Vec<Filter>, String> {
        if self.sla.is_empty() {
            return Err("adaptive_sla_filters is required".into());
        }
        let mut out = Vec::with_capacity(self.sla.len());
        for f in &self.sla {
            let Some(metric) = Metric::of(&f.metric_tag) else {
                return Err(format!("{SUPPORTED_METRICS}, got '{}'", f.metric_tag));
            };
            out.push(Filter {
                written: f.clone(),
                metric,
                stat: f.stat(),
                key: f.key(),
            });
        }
        let goodput = out
            .iter()
            .any(|f| matches!(f.metric, Metric::Goodput | Metric::GoodputRatio));
        if goodput && !out.iter().any(|f| f.metric.latency()) {
            return Err(
                "quality goodput SLA requires at least one request_latency, \
                 time_to_first_token, or inter_token_latency quality filter"
                    .into(),
            );
        }
        for f in &out {
            if !f.metric.latency() && !matches!(f.stat, Stat::Avg | Stat::Min | Stat::Max) {
                return Err(format!(
                    "Unsupported {} SLA stat: {}",
                    f.metric.family(),
                    f.stat.name()
                ));
            }
            if f.metric == Metric::ErrorRate && !(0.0..=100.0).contains(&f.written.threshold) {
                return Err(format!(
                    "error_rate SLA threshold is in percentage points and must be within \
                     [0, 100], got {}",
                    py_float(f.written.threshold)
                ));
            }
        }
        Ok(out)
    }

    /// Some filter needs the requests' first-token times.
    pub fn wants_ttft(&self) -> bool {
        self.variable == ControlVariable::PrefillConcurrency
            || self
                .sla
                .iter()
                .any(|f| Metric::of(&f.metric_tag) == Some(Metric::Ttft))
    }
}

/// C's `%g` (6 significant digits, trailing zeros dropped, an exponent below 1e-4 or from 1e6).
pub fn fmt_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // The exponent after rounding to 6 significant digits.
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim(&format!("{x:.decimals$}"))
    }
}

/// Python's `repr` of a float (`5.0`, `0.25`, `1e+16`).
pub fn py_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else if x.is_infinite() {
        if x > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        let s = format!("{x}");
        if x.abs() >= 1e16 || (x != 0.0 && x.abs() < 1e-4) {
            let e = format!("{x:e}");
            match e.split_once('e') {
                Some((m, ex)) if ex.starts_with('-') => format!("{m}e-{:02}", &ex[1..]),
                Some((m, ex)) => format!("{m}e+{ex:0>2}"),
                None => e,
            }
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_keys_print_as_c_percent_g() {
        for (x, want) in [
            (1000.0, "1000"),
            (0.5, "0.5"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.23457e+06"),
            (260.0, "260"),
            (12.5, "12.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-3.0, "-3"),
        ] {
            assert_eq!(fmt_g(x), want, "{x}");
        }
    }

    #[test]
    fn floats_print_as_python_reprs() {
        assert_eq!(py_float(150.0), "150.0");
        assert_eq!(py_float(2.5), "2.5");
        assert_eq!(py_float(1e16), "1e+16");
    }

    fn settings(sla: Vec<SlaFilter>) -> Settings {
        Settings {
            variable: ControlVariable::Concurrency,
            min: 1.0,
            max: 8.0,
            assessment_period_s: 30.0,
            sustain_s: 10.0,
            min_completed: 1,
            step_policy: StepPolicy::SlaMargin,
            base_step: 10,
            max_step_multiplier: 4,
            step_percent: 25.0,
            sla,
        }
    }

    fn f(tag: &str, stat: Option<Stat>, op: Op, threshold: f64) -> SlaFilter {
        SlaFilter {
            metric_tag: tag.into(),
            stat,
            op,
            threshold,
        }
    }

    #[test]
    fn the_phase_start_checks_give_aiperfs_messages() {
        let e = settings(vec![f("output_sequence_length", None, Op::Lt, 5.0)])
            .resolve()
            .unwrap_err();
        assert!(e.ends_with(", got 'output_sequence_length'"), "{e}");
        assert!(
            e.starts_with("adaptive_scale supports request_latency, "),
            "{e}"
        );
        let e = settings(vec![f("throughput", None, Op::Gt, 5.0)])
            .resolve()
            .unwrap_err();
        assert_eq!(e, "Unsupported throughput SLA stat: p95");
        let e = settings(vec![f("error_rate", Some(Stat::Avg), Op::Lt, 150.0)])
            .resolve()
            .unwrap_err();
        assert_eq!(
            e,
            "error_rate SLA threshold is in percentage points and must be within [0, 100], got \
             150.0"
        );
        let e = settings(vec![f("goodput", Some(Stat::Avg), Op::Gt, 1.0)])
            .resolve()
            .unwrap_err();
        assert!(e.starts_with("quality goodput SLA requires"), "{e}");
        let ok = settings(vec![f("ttft", Some(Stat::P50), Op::Le, 800.0)])
            .resolve()
            .unwrap();
        assert_eq!(ok[0].metric, Metric::Ttft);
        assert_eq!(ok[0].key, "ttft:p50:le:800");
    }
}
