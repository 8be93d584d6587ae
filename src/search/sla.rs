//! SLA filters: `--search-sla TAG:STAT:OP:THRESHOLD` and the filters a recipe makes from
//! `--ttft-sla-ms` and its companions, and their verdict on one variation's metrics.
//!
//! A filter holds when `STAT of TAG  OP  THRESHOLD` holds on the variation's exported metrics
//! (`profile_export_aiperf.json`: each metric tag a block of stats, latencies in ms). A metric
//! or stat the variation does not have fails the filter: a filter that silently passed would
//! hide a misspelt tag behind a feasible answer (docs/search.md, "SLA filters").

use std::fmt;

use serde_json::Value;

use super::SearchError;

/// The stats a filter may read (AIPerf's list).
pub const SLA_STATS: [&str; 12] = [
    "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max",
];

/// A filter's comparison (one declaration for the search and adaptive scale).
pub use ringperf_metrics::adaptive::settings::Op;

/// One SLA filter.
#[derive(Clone, Debug, PartialEq)]
pub struct SlaFilter {
    /// The metric tag (`time_to_first_token`, `request_error_rate`, …).
    pub metric_tag: String,
    /// One of [`SLA_STATS`].
    pub stat: String,
    /// The comparison.
    pub op: Op,
    /// The threshold, in the metric's exported unit (ms for latencies, % for the error rate).
    pub threshold: f64,
}

impl fmt::Display for SlaFilter {
    /// The `--search-sla` spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.metric_tag,
            self.stat,
            self.op.as_str(),
            self.threshold
        )
    }
}

impl SlaFilter {
    /// A filter from its parts.
    pub fn new(metric_tag: &str, stat: &str, op: Op, threshold: f64) -> Self {
        Self {
            metric_tag: metric_tag.to_owned(),
            stat: stat.to_owned(),
            op,
            threshold,
        }
    }

    /// Parses `TAG:STAT:OP:THRESHOLD` (exactly four parts, nothing trimmed), as
    /// `--search-sla` takes it.
    pub fn parse(value: &str) -> Result<Self, SearchError> {
        let bad = |why: String| SearchError::flag("--search-sla", format!("{value:?}: {why}"));
        let parts: Vec<&str> = value.split(':').collect();
        let [tag, stat, op, threshold] = parts.as_slice() else {
            return Err(bad(format!(
                "expected 4 colon-separated parts 'metric_tag:stat:op:threshold', got {} \
                 (e.g. 'time_to_first_token:p95:lt:200')",
                parts.len()
            )));
        };
        if tag.is_empty() {
            return Err(bad("the metric tag is empty".to_owned()));
        }
        if !SLA_STATS.contains(stat) {
            return Err(bad(format!(
                "unknown stat {stat:?}; expected one of {}",
                SLA_STATS.join(", ")
            )));
        }
        let op = Op::parse(op)
            .ok_or_else(|| bad(format!("unknown op {op:?}; expected one of lt, le, gt, ge")))?;
        let threshold = threshold
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite())
            .ok_or_else(|| bad(format!("threshold {threshold:?} is not a finite number")))?;
        Ok(Self::new(tag, stat, op, threshold))
    }

    /// The value this filter reads from a variation's metrics (see [`read_metric`]).
    pub fn value(&self, metrics: &Value) -> Option<f64> {
        read_metric(metrics, &self.metric_tag, &self.stat)
    }

    /// Whether the variation whose metrics are `metrics` meets this filter; a missing metric
    /// does not.
    pub fn passes(&self, metrics: &Value) -> bool {
        self.value(metrics)
            .is_some_and(|v| self.op.holds(v, self.threshold))
    }
}

/// Whether `metrics` meets every filter (an empty list: always).
pub fn passes_all(filters: &[SlaFilter], metrics: &Value) -> bool {
    filters.iter().all(|f| f.passes(metrics))
}

/// The first filter `metrics` does not meet, if any.
pub fn first_failing<'a>(filters: &'a [SlaFilter], metrics: &Value) -> Option<&'a SlaFilter> {
    filters.iter().find(|f| !f.passes(metrics))
}

/// One stat of one metric from a variation's metrics, in either of the layouts a variation's
/// figures come in: the across-trials aggregate (`"<tag>_<stat>"` a block whose `mean` is the
/// value) or a single run's export (`"<tag>"` a block holding `<stat>`; a block with only a
/// `mean`, as a one-trial summary has, gives that mean). Non-finite numbers are absent.
pub fn read_metric(metrics: &Value, tag: &str, stat: &str) -> Option<f64> {
    let finite = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|x| x.is_finite());
    if let Some(mean) = finite(
        metrics
            .get(format!("{tag}_{stat}"))
            .and_then(|b| b.get("mean")),
    ) {
        return Some(mean);
    }
    let block = metrics.get(tag)?;
    finite(block.get(stat)).or_else(|| finite(block.get("mean")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_the_four_part_grammar() {
        let f = SlaFilter::parse("time_to_first_token:p95:lt:200").unwrap();
        assert_eq!(
            f,
            SlaFilter::new("time_to_first_token", "p95", Op::Lt, 200.0)
        );
        assert_eq!(f.to_string(), "time_to_first_token:p95:lt:200");
        let g = SlaFilter::parse("request_error_rate:avg:le:0.5").unwrap();
        assert_eq!((g.op, g.threshold), (Op::Le, 0.5));
    }

    #[test]
    fn refuses_malformed_values_with_the_flag_named() {
        for (bad, why) in [
            ("time_to_first_token:p95:lt", "got 3"),
            ("a:p95:lt:1:2", "got 5"),
            ("time_to_first_token:p97:lt:200", "unknown stat \"p97\""),
            ("time_to_first_token:p95:under:200", "unknown op \"under\""),
            (
                "time_to_first_token:p95:lt:fast",
                "\"fast\" is not a finite",
            ),
            ("time_to_first_token:p95:lt:NaN", "\"NaN\" is not a finite"),
            (":p95:lt:1", "metric tag is empty"),
            (" time_to_first_token:p95:lt:200", ""),
            ("", "got 1"),
        ] {
            match SlaFilter::parse(bad) {
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("--search-sla"), "{msg}");
                    assert!(msg.contains(why), "{bad:?}: {msg}");
                }
                // Leading whitespace is not trimmed: it is part of the tag, which then never
                // matches a metric (as AIPerf leaves it).
                Ok(f) => assert_eq!(f.metric_tag, " time_to_first_token", "{bad:?}"),
            }
        }
    }

    #[test]
    fn each_op_compares_strictly_or_not() {
        let at = |op| SlaFilter::new("m", "avg", op, 10.0);
        let m = |v: f64| json!({"m": {"avg": v}});
        assert_eq!(
            [Op::Lt, Op::Le, Op::Gt, Op::Ge].map(|op| at(op).passes(&m(10.0))),
            [false, true, false, true]
        );
        assert_eq!(
            [Op::Lt, Op::Le, Op::Gt, Op::Ge].map(|op| at(op).passes(&m(9.5))),
            [true, true, false, false]
        );
    }

    #[test]
    fn reads_both_layouts_and_fails_on_a_missing_metric() {
        let single = json!({
            "time_to_first_token": {"unit": "ms", "avg": 120.0, "p95": 480.0, "p99": 530.0},
            "one_trial": {"mean": 7.0},
        });
        let f = SlaFilter::parse("time_to_first_token:p95:lt:500").unwrap();
        assert_eq!(f.value(&single), Some(480.0));
        assert!(f.passes(&single));
        assert!(
            !SlaFilter::parse("time_to_first_token:p99:lt:500")
                .unwrap()
                .passes(&single)
        );
        // A block with only a mean gives the mean for any stat.
        assert_eq!(read_metric(&single, "one_trial", "p99"), Some(7.0));
        // Across trials: the flat key's mean wins over the tag block.
        let agg = json!({
            "time_to_first_token_p95": {"mean": 510.0, "std": 3.0},
            "time_to_first_token": {"p95": 1.0},
        });
        assert_eq!(f.value(&agg), Some(510.0));
        assert!(!f.passes(&agg));
        // Missing tag, missing stat, null value: the filter fails.
        for m in [
            json!({}),
            json!({"time_to_first_token": {"avg": 1.0}}),
            json!({"time_to_first_token": {"p95": null}}),
        ] {
            assert!(!f.passes(&m), "{m}");
        }
    }

    #[test]
    fn first_failing_names_the_filter_that_broke() {
        let filters = [
            SlaFilter::parse("time_to_first_token:p95:lt:500").unwrap(),
            SlaFilter::parse("inter_token_latency:p95:lt:20").unwrap(),
        ];
        let m = json!({
            "time_to_first_token": {"p95": 100.0},
            "inter_token_latency": {"p95": 25.0},
        });
        assert_eq!(first_failing(&filters, &m), Some(&filters[1]));
        assert!(!passes_all(&filters, &m));
        assert!(passes_all(&[], &m));
    }
}
