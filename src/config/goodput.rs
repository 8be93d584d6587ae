//! `--goodput "tag:value …"` (docs/metrics.md, "Goodput"): parsing and validation of the SLOs.
//!
//! As AIPerf 0.13 (`parse_str_as_numeric_dict`, `GoodRequestCountMetric.set_slos`,
//! `BaseMetricsProcessor._configure_goodput`): whitespace-separated `tag:value` pairs split at
//! the first colon, the value a number in the metric's display unit (ms for latencies),
//! converted to the base unit; a tag must be a per-request metric that applies to the run.
//! Stricter than AIPerf, which keeps the last of two pairs with one tag: a repeated tag is an
//! error, and so is a NaN threshold (no request could meet it).

use super::ConfigError;
use ringperf_metrics::aggregate::registry::{Kind, MetricDef, MetricId, flags};
use ringperf_metrics::aggregate::{MetricConfig, REGISTRY};

/// The SLOs of `spec` as `(metric, threshold in its base unit)`, in the order given; empty
/// when `spec` is `None`. `run` decides which metrics apply (streaming, endpoint, …).
pub fn parse(spec: Option<&str>, run: &MetricConfig) -> Result<Vec<(MetricId, f64)>, ConfigError> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let fail = |msg: String| Err(ConfigError::flag(format!("--goodput: {msg}")));
    if spec.trim().is_empty() {
        return fail("expected space-separated 'tag:value' pairs (e.g. 'request_latency:250'), got an empty string".into());
    }
    let mut slos: Vec<(MetricId, f64)> = Vec::new();
    let mut not_applicable: Vec<&str> = Vec::new();
    for item in spec.split_whitespace() {
        let Some((tag, value)) = item.split_once(':') else {
            return fail(format!("`{item}` is not in 'tag:value' form"));
        };
        let (tag, value) = (tag.trim(), value.trim());
        if tag.is_empty() {
            return fail(format!("`{item}` has an empty metric tag"));
        }
        if value.is_empty() {
            return fail(format!("`{item}` has an empty value"));
        }
        let Ok(number) = value.parse::<f64>() else {
            return fail(format!(
                "the value for `{tag}` must be a number, got `{value}`"
            ));
        };
        if number.is_nan() {
            return fail(format!(
                "the value for `{tag}` must be a number, got `{value}`"
            ));
        }
        let Some(def) = MetricDef::by_tag(tag) else {
            return fail(format!(
                "unknown metric tag `{tag}`; SLOs take per-request metrics such as {}",
                slo_tags(run).join(", ")
            ));
        };
        if slos.iter().any(|(id, _)| *id == def.id) {
            return fail(format!("`{tag}` is given twice"));
        }
        if !is_slo_metric(def) {
            return fail(format!(
                "`{tag}` is not a per-request metric; SLOs take per-request metrics such as {}",
                slo_tags(run).join(", ")
            ));
        }
        // AIPerf checks the SLO tags against the flag-applicable metrics, before it adds
        // their dependencies.
        if !run.flags_allow(def.id) {
            not_applicable.push(def.tag);
            continue;
        }
        slos.push((def.id, def.from_display(number)));
    }
    if !not_applicable.is_empty() {
        not_applicable.sort_unstable();
        return fail(format!(
            "metric(s) {} are not applicable to the current endpoint/configuration (e.g. \
             streaming-only metrics need --streaming)",
            not_applicable.join(", ")
        ));
    }
    Ok(slos)
}

/// A metric an SLO can name: one scalar value per valid request (not an error-only, list,
/// experimental or goodput metric).
fn is_slo_metric(d: &MetricDef) -> bool {
    d.kind == Kind::Record
        && d.id != MetricId::InterChunkLatency
        && !d.has(flags::ERROR_ONLY | flags::EXPERIMENTAL | flags::GOODPUT)
}

/// The tags an SLO may name in this run, in registry order.
fn slo_tags(run: &MetricConfig) -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|d| is_slo_metric(d) && run.flags_allow(d.id) && !d.hidden())
        .map(|d| d.tag)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streaming() -> MetricConfig {
        MetricConfig::new(true, false)
    }

    fn error_of(spec: &str, run: &MetricConfig) -> String {
        parse(Some(spec), run).unwrap_err().to_string()
    }

    #[test]
    fn values_are_display_units_converted_to_base_units() {
        let slos = parse(
            Some("  request_latency:250 output_token_throughput_per_user:600\tinter_token_latency:1.5 "),
            &streaming(),
        )
        .unwrap();
        assert_eq!(
            slos,
            vec![
                (MetricId::RequestLatency, 250e6),
                (MetricId::OutputTokenThroughputPerUser, 600.0),
                (MetricId::InterTokenLatency, 1.5e6),
            ]
        );
        // Tokens stay tokens; exponent notation and negatives are numbers.
        assert_eq!(
            parse(Some("output_sequence_length:1e2"), &streaming()).unwrap(),
            vec![(MetricId::OutputSequenceLength, 100.0)]
        );
        assert_eq!(parse(None, &streaming()).unwrap(), vec![]);
    }

    #[test]
    fn every_bad_input_is_named() {
        let run = streaming();
        let e = error_of("request_latency250", &run);
        assert!(
            e.contains("`request_latency250` is not in 'tag:value' form"),
            "{e}"
        );
        let e = error_of("request_latency:fast", &run);
        assert!(e.contains("must be a number, got `fast`"), "{e}");
        let e = error_of("request_latency:NaN", &run);
        assert!(e.contains("must be a number"), "{e}");
        let e = error_of("request_latency:", &run);
        assert!(e.contains("empty value"), "{e}");
        let e = error_of(":5", &run);
        assert!(e.contains("empty metric tag"), "{e}");
        let e = error_of("latency:5", &run);
        assert!(e.contains("unknown metric tag `latency`"), "{e}");
        assert!(
            e.contains("request_latency"),
            "the message lists valid tags: {e}"
        );
        let e = error_of("request_latency:5 request_latency:6", &run);
        assert!(e.contains("`request_latency` is given twice"), "{e}");
        let e = error_of("   ", &run);
        assert!(e.contains("empty string"), "{e}");
        for tag in [
            "request_throughput",
            "request_count",
            "error_isl",
            "inter_chunk_latency",
            "good_request_count",
        ] {
            let e = error_of(&format!("{tag}:1"), &run);
            assert!(e.contains("is not a per-request metric"), "{tag}: {e}");
        }
        assert!(e.starts_with("--goodput: "), "{e}");
    }

    #[test]
    fn metrics_that_do_not_apply_are_rejected() {
        let run = MetricConfig::new(false, false);
        let e = error_of(
            "time_to_first_token:100 request_latency:5 inter_token_latency:2",
            &run,
        );
        assert!(
            e.contains(
                "metric(s) inter_token_latency, time_to_first_token are not applicable to the current endpoint/configuration"
            ),
            "{e}"
        );
        let e = error_of(
            "usage_prompt_tokens_diff_pct:5",
            &MetricConfig::new(true, true),
        );
        assert!(e.contains("not applicable"), "{e}");
        // Non-streaming request latency is fine.
        assert_eq!(
            parse(Some("request_latency:5"), &run).unwrap(),
            vec![(MetricId::RequestLatency, 5e6)]
        );
    }
}
