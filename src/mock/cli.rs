//! `ringperf mock-server`: the command-line face of the mock.

use std::io;

use super::{Driver, MockConfig, OutputLen};
use crate::cli::{IoDriverArg, MockArgs};

/// Builds the mock's configuration from `mock-server` flags.
pub fn config_from_args(args: &MockArgs) -> io::Result<MockConfig> {
    let bind = args.bind.parse().map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("--bind {}: {e}", args.bind),
        )
    })?;
    let s = &args.shape;
    Ok(MockConfig {
        bind,
        threads: s.mock_threads.max(1),
        pin_cores: (!args.pin_cores.is_empty()).then(|| args.pin_cores.clone()),
        ttft: std::time::Duration::from_secs_f64(s.mock_ttft_ms.max(0.0) / 1e3),
        itl: std::time::Duration::from_secs_f64(s.mock_itl_ms.max(0.0) / 1e3),
        output_tokens: OutputLen::Fixed(s.mock_output_tokens.max(1) as u64),
        tokens_per_event: s.mock_tokens_per_event.max(1),
        reasoning_tokens: s.mock_reasoning_tokens,
        faults: s.mock_faults.clone().unwrap_or_default().0,
        model: args.model.clone(),
        truth_log: args.truth_log.is_some(),
        io_driver: match args.io_driver {
            IoDriverArg::Auto => Driver::Auto,
            IoDriverArg::Uring => Driver::Uring,
            IoDriverArg::Legacy => Driver::Legacy,
        },
        // Exact `usage.prompt_tokens` with the builtin tokenizer (o200k_base, compiled in).
        prompt_tokenizer: Some(super::PromptTokenizer(std::sync::Arc::new(
            crate::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
}

/// Serves until SIGINT or SIGTERM, then writes the truth log if `--truth-log` was given.
pub fn serve_from_args(args: &MockArgs) -> io::Result<()> {
    let cfg = config_from_args(args)?;
    let set = crate::signals::block_term_signals()?;
    let server = super::start(cfg)?;
    eprintln!("ringperf mock server listening on http://{}", server.addr);
    let waited = crate::signals::wait_signal(&set);
    let truth = server.truth();
    server.stop();
    if let Some(path) = &args.truth_log {
        truth.write_jsonl(path)?;
        eprintln!(
            "ringperf mock server: truth log of {} requests in {}",
            truth.len(),
            path.display()
        );
    }
    waited
}
