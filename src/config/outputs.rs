//! `--per-chunk-usage`, `--export-outputs-json` and `--plot-required` (`cli::outputs`), checked
//! as AIPerf 0.13 checks them: per-chunk usage needs the server's token counts, a stream and the
//! chat endpoint (the only one that asks for it); `outputs.json` must not be the name the
//! summary JSON takes from `--profile-export-prefix`; `--plot-required` acts only with
//! `--auto-plot` and is otherwise warned.

use super::ConfigError;
use crate::cli::ProfileArgs;
use ringperf_metrics::export::ExportNames;
use ringperf_metrics::export::outputs_json::OUTPUTS_JSON_FILE;
use ringperf_wire::endpoint::EndpointKind;

/// The three settings, resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputsConfig {
    /// Ask for usage on every chunk; inter-token latency takes the first content chunk's
    /// count from it (docs/metrics.md).
    pub per_chunk_usage: bool,
    /// Write [`OUTPUTS_JSON_FILE`].
    pub export_outputs_json: bool,
    /// A report `--auto-plot` could not make fails the run.
    pub plot_required: bool,
}

/// Why `what` (several runs: a sweep, a search, repeated runs, shards) cannot run beside a
/// config file's `artifacts.summary: false`: it reads each run's summary JSON, which the setting
/// leaves out. `aiperf_runs_it`: AIPerf 0.13 has the same (it has no shards) and runs them all,
/// then counts every run failed.
pub fn summary_off(what: &str, aiperf_runs_it: bool) -> String {
    let aiperf = if aiperf_runs_it {
        " (AIPerf 0.13 runs them all, then counts every run failed: \"No metrics found in \
         artifacts\")"
    } else {
        ""
    };
    format!(
        "benchmark.artifacts.summary: false beside {what}: each run's results are read from its \
         summary JSON, which the setting leaves out{aiperf}; keep the summary JSON, or run one \
         benchmark"
    )
}

/// Resolves the flags for a run of `endpoint`, `streaming` or not; also returns the warning of a
/// flag given where it changes nothing.
///
/// # Errors
/// `--per-chunk-usage` without `--use-server-token-count`, on another endpoint than chat, or
/// without streaming; `--export-outputs-json` with a prefix whose summary JSON is
/// `outputs.json`. Each message says what AIPerf's says.
pub fn resolve(
    args: &ProfileArgs,
    endpoint: EndpointKind,
    streaming: bool,
) -> Result<(OutputsConfig, Vec<String>), ConfigError> {
    let o = &args.outputs;
    // AIPerf checks in this order and reports the first that fails.
    if o.per_chunk_usage && !args.use_server_token_count {
        return Err(ConfigError::flag(
            "--per-chunk-usage requires --use-server-token-count (the first chunk's token count \
             comes from the server's per-chunk usage)",
        ));
    }
    if o.per_chunk_usage && endpoint != EndpointKind::Chat {
        return Err(ConfigError::flag(format!(
            "--per-chunk-usage requires --endpoint-type chat, not {} (only the chat payload asks \
             for continuous_usage_stats)",
            endpoint.as_str()
        )));
    }
    if o.per_chunk_usage && !streaming {
        return Err(ConfigError::flag(
            "--per-chunk-usage requires --streaming (per-chunk usage and inter-token latency \
             exist only in a stream)",
        ));
    }
    if o.export_outputs_json {
        let base = args.profile_export_prefix.as_deref();
        if ExportNames::new(base).json == OUTPUTS_JSON_FILE {
            return Err(ConfigError::flag(format!(
                "--profile-export-prefix {} names the summary JSON {OUTPUTS_JSON_FILE}, the file \
                 --export-outputs-json writes: use another prefix",
                base.unwrap_or_default()
            )));
        }
    }
    let mut warnings = Vec::new();
    if o.plot_required && !args.auto_plot {
        warnings.push(
            "--plot-required has no effect: without --auto-plot no report is made".to_owned(),
        );
    }
    Ok((
        OutputsConfig {
            per_chunk_usage: o.per_chunk_usage,
            export_outputs_json: o.export_outputs_json,
            plot_required: o.plot_required && args.auto_plot,
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {

    use super::*;

    /// The settings and warnings as the whole resolution gives them (`Config::from_plan`).
    fn resolved(line: &str) -> Result<(OutputsConfig, Vec<String>), ConfigError> {
        let argv: Vec<String> = format!("{line} -u 127.0.0.1:1")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let plan = crate::plan::Plan::parse(&argv).expect("parses");
        let cfg = crate::config::Config::from_plan(&plan, false)?;
        let warnings = cfg
            .warnings
            .iter()
            .filter(|w| w.contains("--plot-required"))
            .cloned()
            .collect();
        Ok((cfg.outputs, warnings))
    }

    fn message(line: &str) -> String {
        resolved(line).expect_err("refused").to_string()
    }

    #[test]
    fn per_chunk_usage_needs_server_counts_then_chat_then_streaming() {
        let ok = resolved(
            "ringperf profile -m m --per-chunk-usage --use-server-token-count --streaming",
        )
        .expect("accepted");
        assert!(ok.0.per_chunk_usage);
        assert!(ok.1.is_empty());
        // AIPerf's order: the server-count rule first, even when the others fail too.
        let m = message("ringperf profile -m m --per-chunk-usage --endpoint-type completions");
        assert!(m.contains("requires --use-server-token-count"), "{m}");
        let m = message(
            "ringperf profile -m m --per-chunk-usage --use-server-token-count --endpoint-type completions",
        );
        assert!(
            m.contains("requires --endpoint-type chat, not completions"),
            "{m}"
        );
        let m = message("ringperf profile -m m --per-chunk-usage --use-server-token-count");
        assert!(m.contains("requires --streaming"), "{m}");
    }

    #[test]
    fn outputs_json_must_not_be_the_summary_json() {
        for prefix in ["outputs", "outputs.json"] {
            let m = message(&format!(
                "ringperf profile -m m --export-outputs-json --profile-export-prefix {prefix}"
            ));
            assert!(m.contains("names the summary JSON outputs.json"), "{m}");
        }
        // Without the flag the prefix is anyone's; another prefix is fine with it.
        assert!(resolved("ringperf profile -m m --profile-export-prefix outputs").is_ok());
        let ok =
            resolved("ringperf profile -m m --export-outputs-json --profile-export-prefix out")
                .expect("accepted");
        assert!(ok.0.export_outputs_json);
    }

    #[test]
    fn plot_required_acts_only_with_auto_plot() {
        let (c, w) = resolved("ringperf profile -m m --plot-required").expect("accepted");
        assert!(!c.plot_required);
        assert_eq!(
            w,
            ["--plot-required has no effect: without --auto-plot no report is made"]
        );
        let (c, w) = resolved("ringperf profile -m m --plot-required --auto-plot").expect("ok");
        assert!(c.plot_required);
        assert!(w.is_empty());
        // The last of --auto-plot / --no-auto-plot wins, as for the report itself.
        let (c, w) = resolved("ringperf profile -m m --auto-plot --no-auto-plot --plot-required")
            .expect("accepted");
        assert!(!c.plot_required);
        assert_eq!(w.len(), 1);
    }
}
