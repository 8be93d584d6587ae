//! The HTTP Trace group: `--export-http-trace` and `--show-trace-timing`. The 14 `http_req_*`
//! metrics are measured and exported whatever these say; they add the raw trace to each JSONL
//! record and the trace table to the console.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpTraceArgs {
    /// Include each request's HTTP trace (timestamps, byte and chunk counts, connection reuse)
    /// as `trace_data` in profile_export.jsonl. The http_req_* metrics are in every export
    /// regardless.
    #[arg(long = "export-http-trace", help_heading = "HTTP Trace")]
    pub export_http_trace: bool,

    /// Print the HTTP trace timing table (blocked, DNS, connecting, sending, waiting (TTFB),
    /// receiving, duration, bytes and chunks) on the console at the end of the run.
    #[arg(long = "show-trace-timing", help_heading = "HTTP Trace")]
    pub show_trace_timing: bool,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn parse(line: &str) -> super::HttpTraceArgs {
        let Command::Profile(p) = Cli::try_parse_from(line.split_whitespace())
            .expect("parses")
            .command
        else {
            panic!("profile")
        };
        p.http_trace
    }

    #[test]
    fn both_flags_default_off_and_are_accepted() {
        let a = parse("ringperf profile -m m");
        assert!(!a.export_http_trace && !a.show_trace_timing);
        let a = parse("ringperf profile -m m --export-http-trace --show-trace-timing");
        assert!(a.export_http_trace && a.show_trace_timing);
        let argv: Vec<String> = [
            "ringperf",
            "profile",
            "--export-http-trace",
            "--show-trace-timing",
        ]
        .map(String::from)
        .to_vec();
        assert!(crate::cli::reject_unsupported(&argv).is_ok());
    }
}
