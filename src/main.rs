use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use ringperf::cli::{Cli, Command};

// Feature `mimalloc`: the allocator measured in docs/why-crates.md.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Err(msg) = ringperf::cli::reject_unsupported(&argv) {
        eprintln!("ringperf: {msg}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    // Every command that opens sockets (profile, mock-server) wants the hard descriptor limit:
    // an open-loop run at tens of thousands of requests a second holds one per request in
    // flight. A limit that cannot be raised is only a warning; exhaustion is reported later.
    if let Err(e) = ringperf::fdlimit::raise_nofile() {
        eprintln!("ringperf: warning: cannot raise RLIMIT_NOFILE to its hard limit: {e}");
    }
    match cli.command {
        Command::Profile(args) => {
            // Block SIGINT/SIGTERM before anything else runs, so that a signal during start-up
            // is taken by the run's signal thread (a graceful cancel), not the default action.
            if let Err(e) = ringperf::signals::block_term_signals() {
                eprintln!("ringperf: cannot block SIGINT/SIGTERM: {e}");
                return ExitCode::from(2);
            }
            // The builtin tokenizer takes longest to start (perf/README, "Start-up"): it starts
            // loading now, on a thread that inherits the blocked signals, and validation and the
            // run's set-up overlap it.
            if let Some(spec) = ringperf::config::tokenizer_spec(&args) {
                ringperf::workload::tokenizer::preload(&spec);
            }
            let cfg = match ringperf::config::Config::from_args(
                &args,
                &argv,
                std::io::stdout().is_terminal(),
            ) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("ringperf: {e}");
                    return ExitCode::from(2);
                }
            };
            let plot_dir = args.auto_plot.then(|| cfg.artifact_dir.clone());
            let outcome = ringperf::run::run_with(
                cfg,
                ringperf::run::RunOptions {
                    handle_signals: true,
                },
            );
            match outcome {
                Ok(outcome) => {
                    // `--auto-plot`: the report of the run just written; a failure to draw it is
                    // said but does not change the run's exit code.
                    if let Some(dir) = plot_dir
                        && let Err(e) = ringperf::plot::plot(&[dir], None)
                            .map(|r| println!("Report: {}", r.html.display()))
                    {
                        eprintln!("ringperf: auto-plot: {e}");
                    }
                    ExitCode::from(outcome.exit_code())
                }
                Err(e) => {
                    eprintln!("ringperf: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::ServerMetrics(args) => {
            let written = ringperf::config::reprocess_options(&args)
                .map_err(|e| e.to_string())
                .and_then(|opts| {
                    ringperf::server_metrics::reprocess::run(&opts).map_err(|e| e.to_string())
                });
            match written {
                Ok(files) => {
                    for (label, path) in files {
                        println!("{label}: {}", path.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ringperf: server-metrics: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Merge(args) => match ringperf::merge::run(&args) {
            Ok(outcome) => ExitCode::from(outcome.exit_code()),
            Err(e) => {
                eprintln!("ringperf: merge: {e}");
                ExitCode::from(e.exit_code())
            }
        },
        Command::Plot(args) => match ringperf::plot::run(&args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ringperf: plot: {e}");
                ExitCode::from(2)
            }
        },
        Command::MockServer(args) => {
            // Block SIGINT/SIGTERM before the (slow) tokenizer load, so a signal during start-up
            // is waited for by `serve` and still gets the truth log written, never kills.
            if let Err(e) = ringperf::signals::block_term_signals() {
                eprintln!("ringperf: mock-server: {e}");
                return ExitCode::from(2);
            }
            let served = ringperf::config::mock::MockServerConfig::try_from_args(&args)
                .map_err(|e| e.to_string())
                .and_then(|c| {
                    ringperf::mock::serve(c.mock, c.truth_log.as_deref(), c.dcgm_log.as_deref())
                        .map_err(|e| e.to_string())
                });
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ringperf: mock-server: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
