//! `ringperf mock-server`'s flags ([`MockArgs`]) validated into the mock's configuration
//! ([`MockConfig`]) and where its truth log goes. The mock itself never sees the flags.

use std::net::AddrParseError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{IoDriverArg, MockArgs};
use ringperf_mock::mock::{Driver, MockConfig, MockTls, OutputLen, PromptTokenizer};

/// Why `mock-server` flags are unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockArgsError {
    /// `--bind` is not an `IP:PORT` socket address.
    Bind {
        /// The value given.
        value: String,
        /// What the address parser said.
        source: AddrParseError,
    },
    /// `--dcgm-log` without `--dcgm-gpus`.
    DcgmLogWithoutGpus,
    /// `--model-ready-after` is negative or not a number.
    /// The value given, as text (the error type is `Eq`).
    ModelReadyAfter(String),
}

impl std::fmt::Display for MockArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MockArgsError::Bind { value, source } => write!(f, "--bind {value}: {source}"),
            MockArgsError::DcgmLogWithoutGpus => f.write_str(
                "--dcgm-log needs --dcgm-gpus N (the mock serves no DCGM page without it)",
            ),
            MockArgsError::ModelReadyAfter(v) => write!(
                f,
                "--model-ready-after must be a finite number of seconds, 0 or more (got {v})"
            ),
        }
    }
}

impl std::error::Error for MockArgsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MockArgsError::Bind { source, .. } => Some(source),
            MockArgsError::DcgmLogWithoutGpus | MockArgsError::ModelReadyAfter(_) => None,
        }
    }
}

/// Everything `ringperf mock-server` runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct MockServerConfig {
    /// The server's configuration.
    pub mock: MockConfig,
    /// Where to write the truth log (JSONL) when the server stops; `None`: no truth log kept.
    pub truth_log: Option<PathBuf>,
    /// Where to write the DCGM pages served (JSONL) when the server stops.
    pub dcgm_log: Option<PathBuf>,
}

impl MockServerConfig {
    /// Validates `mock-server` flags.
    pub fn try_from_args(args: &MockArgs) -> Result<Self, MockArgsError> {
        let bind = args.bind.parse().map_err(|source| MockArgsError::Bind {
            value: args.bind.clone(),
            source,
        })?;
        let s = &args.shape;
        let mut mock = MockConfig {
            bind,
            threads: s.mock_threads.max(1),
            pin_cores: (!args.pin_cores.is_empty()).then(|| args.pin_cores.clone()),
            ttft: Duration::from_secs_f64(s.mock_ttft_ms.max(0.0) / 1e3),
            itl: Duration::from_secs_f64(s.mock_itl_ms.max(0.0) / 1e3),
            output_tokens: OutputLen::Fixed(s.mock_output_tokens.max(1) as u64),
            tokens_per_event: s.mock_tokens_per_event.max(1),
            reasoning_tokens: s.mock_reasoning_tokens,
            faults: s.mock_faults.clone().unwrap_or_default().0,
            capacity: s.mock_capacity,
            max_model_len: s.mock_max_model_len,
            model: args.model.clone(),
            truth_log: args.truth_log.is_some(),
            record_bodies: args.record_bodies,
            fast: args.fast,
            dcgm_gpus: args.dcgm_gpus,
            spec_decode: args.spec_decode,
            metrics_mode: if args.unique_metrics_pages {
                ringperf_mock::mock::MetricsMode::PageCounter
            } else if args.sglang_spec_metrics {
                ringperf_mock::mock::MetricsMode::SglangSpec
            } else {
                ringperf_mock::mock::MetricsMode::Vllm
            },
            io_driver: match args.io_driver {
                IoDriverArg::Auto => Driver::Auto,
                IoDriverArg::Uring => Driver::Uring,
                IoDriverArg::Legacy => Driver::Legacy,
            },
            // Exact `usage.prompt_tokens` with the builtin tokenizer (o200k_base, compiled in).
            prompt_tokenizer: Some(PromptTokenizer(Arc::new(
                ringperf_workload::workload::Tokenizer::builtin(),
            ))),
            tls: match (&args.tls_cert, &args.tls_key) {
                (Some(cert), Some(key)) => Some(MockTls {
                    cert: cert.clone(),
                    key: key.clone(),
                }),
                _ => None,
            },
            busy_resets: args.busy_resets,
            video_jobs: args.video.config(),
            ..MockConfig::default()
        };
        let ready = args.model_ready_after;
        if !(ready.is_finite() && ready >= 0.0) {
            return Err(MockArgsError::ModelReadyAfter(ready.to_string()));
        }
        mock.model_ready_after = Duration::from_secs_f64(ready);
        if args.dcgm_log.is_some() && args.dcgm_gpus == 0 {
            return Err(MockArgsError::DcgmLogWithoutGpus);
        }
        Ok(Self {
            mock,
            truth_log: args.truth_log.clone(),
            dcgm_log: args.dcgm_log.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};
    use ringperf_mock::mock::Fault;

    fn args(argv: &[&str]) -> MockArgs {
        let argv = ["ringperf", "mock-server"].iter().chain(argv);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::MockServer(a) => a,
            _ => panic!("not mock-server"),
        }
    }

    #[test]
    fn flags_become_the_mock_config() {
        let c = MockServerConfig::try_from_args(&args(&[
            "--bind",
            "0.0.0.0:9100",
            "--pin-cores",
            "2,3",
            "--model",
            "m1",
            "--truth-log",
            "/tmp/t.jsonl",
            "--record-bodies",
            "--io-driver",
            "legacy",
            "--mock-ttft-ms",
            "15",
            "--mock-itl-ms",
            "2.5",
            "--mock-output-tokens",
            "7",
            "--mock-tokens-per-event",
            "3",
            "--mock-reasoning-tokens",
            "4",
            "--mock-threads",
            "2",
            "--mock-faults",
            "status=503:0.5",
        ]))
        .unwrap();
        assert_eq!(c.truth_log, Some(PathBuf::from("/tmp/t.jsonl")));
        let m = &c.mock;
        assert_eq!(m.bind, "0.0.0.0:9100".parse().unwrap());
        assert_eq!(m.pin_cores, Some(vec![2, 3]));
        assert_eq!(m.model, "m1");
        assert!(m.truth_log && m.record_bodies);
        assert_eq!(m.io_driver, Driver::Legacy);
        assert_eq!(m.ttft, Duration::from_millis(15));
        assert_eq!(m.itl, Duration::from_micros(2500));
        assert_eq!(m.output_tokens, OutputLen::Fixed(7));
        assert_eq!(
            (m.tokens_per_event, m.reasoning_tokens, m.threads),
            (3, 4, 2)
        );
        assert_eq!(m.faults.len(), 1);
        assert_eq!(m.faults[0].kind, Fault::Status(503));
        assert!(m.prompt_tokenizer.is_some());
    }

    #[test]
    fn defaults_and_clamps() {
        let c = MockServerConfig::try_from_args(&args(&[
            "--mock-ttft-ms=-5",
            "--mock-output-tokens",
            "0",
            "--mock-tokens-per-event",
            "0",
            "--mock-threads",
            "0",
        ]))
        .unwrap();
        assert_eq!(c.truth_log, None);
        let m = &c.mock;
        assert_eq!(m.bind, "127.0.0.1:8000".parse().unwrap());
        assert_eq!(m.pin_cores, None);
        assert!(!m.truth_log && !m.record_bodies);
        assert_eq!(m.ttft, Duration::ZERO);
        assert_eq!(m.output_tokens, OutputLen::Fixed(1));
        assert_eq!((m.tokens_per_event, m.threads), (1, 1));
        assert!(m.faults.is_empty());
    }

    #[test]
    fn record_bodies_needs_a_truth_log() {
        let argv = ["ringperf", "mock-server", "--record-bodies"];
        let e = Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        assert!(e.to_string().contains("--truth-log"), "{e}");
    }

    #[test]
    fn a_bad_bind_address_is_a_typed_error() {
        let e = MockServerConfig::try_from_args(&args(&["--bind", "localhost:80"])).unwrap_err();
        let MockArgsError::Bind { value, .. } = &e else {
            panic!("a bind error: {e}");
        };
        assert_eq!(value, "localhost:80");
        assert_eq!(
            e.to_string(),
            "--bind localhost:80: invalid socket address syntax"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn unique_metrics_pages_is_the_page_counter_mode() {
        use ringperf_mock::mock::MetricsMode;
        let c = MockServerConfig::try_from_args(&args(&["--unique-metrics-pages"])).unwrap();
        assert_eq!(c.mock.metrics_mode, MetricsMode::PageCounter);
        let c = MockServerConfig::try_from_args(&args(&[])).unwrap();
        assert_eq!(c.mock.metrics_mode, MetricsMode::Vllm);
    }

    #[test]
    fn dcgm_gpus_and_the_dcgm_log() {
        let c = MockServerConfig::try_from_args(&args(&[
            "--dcgm-gpus",
            "3",
            "--dcgm-log",
            "/tmp/d.jsonl",
        ]))
        .unwrap();
        assert_eq!(c.mock.dcgm_gpus, 3);
        assert_eq!(c.dcgm_log, Some(PathBuf::from("/tmp/d.jsonl")));
        let e =
            MockServerConfig::try_from_args(&args(&["--dcgm-log", "/tmp/d.jsonl"])).unwrap_err();
        assert_eq!(e, MockArgsError::DcgmLogWithoutGpus);
        assert_eq!(
            MockServerConfig::try_from_args(&args(&[]))
                .unwrap()
                .mock
                .dcgm_gpus,
            0
        );
    }
}
