use std::io::IsTerminal;
use std::process::ExitCode;

use ringperf::cli::merge::MergeArgs;
use ringperf::cli::plot::PlotArgs;
use ringperf::cli::{Command, MockArgs, ServerMetricsArgs};
use ringperf::invocation::InvocationError;
use ringperf::plan::Plan;
use ringperf::{Error, exit};

// Feature `mimalloc`: the allocator measured in docs/why-crates.md.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every failure is one line, `ringperf: <what>`, and the exit code of its kind; a command that
/// ran exits with its outcome's code. Every code is decided in `ringperf::exit`, asked here.
fn main() -> ExitCode {
    ringperf_io::control::on_force_quit(exit::force_quit);
    let argv: Vec<String> = std::env::args().collect();
    // `profile --config FILE`: the file's settings under the flags given (docs/config-files.md).
    let read = ringperf::invocation::read(&argv, &|k| std::env::var(k).ok());
    let invocation = match read {
        Ok(c) => c,
        Err(InvocationError::File(e)) => {
            eprintln!("Error: {}\nFile: {}", e.error, e.path.display());
            return ExitCode::from(exit::USAGE);
        }
        Err(InvocationError::Unsupported(e)) => return fail(&Error::from(e)),
        Err(InvocationError::Sweep(e)) => return fail(&Error::Sweep(e)),
        Err(InvocationError::Parse(e)) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    // Every command that opens sockets (profile, mock-server) wants the hard descriptor limit:
    // an open-loop run at tens of thousands of requests a second holds one per request in
    // flight. A limit that cannot be raised is only a warning; exhaustion is reported later.
    if let Err(e) = ringperf_io::fdlimit::raise_nofile() {
        eprintln!("ringperf: warning: cannot raise RLIMIT_NOFILE to its hard limit: {e}");
    }
    if matches!(
        invocation.command,
        Command::Config(_) | Command::AnalyzeTrace(_) | Command::Analyze(_) | Command::Validate(_)
    ) {
        ringperf_io::signals::default_sigpipe();
    }
    let ran = match invocation.command {
        Command::Profile(settings) => profile(
            Plan {
                settings: *settings,
                given: invocation.given,
                command: argv,
                file_only: invocation.file_only,
            },
            &invocation.lists,
        ),
        Command::ServerMetrics(args) => server_metrics(&args),
        Command::Merge(args) => merge(&args),
        Command::Plot(args) => plot(&args),
        Command::MockServer(args) => mock_server(&args),
        Command::Config(args) => Ok(config(&args)),
        Command::AnalyzeTrace(a) => {
            ringperf::trace_tools::analyze::run(&a.input(), a.block_size, a.output_file.as_deref())
                .map(|()| exit::OK)
                .map_err(Error::TraceTool)
        }
        Command::Analyze(a) => match &a.command {
            ringperf::cli::analyze::AnalyzeCommand::SwimLane(s) => {
                Ok(ringperf_plot::plot::swim_cmd::run(&s.job()))
            }
        },
        Command::Validate(v) => Ok(ringperf::trace_tools::validate::run(&v.input)),
        Command::Chat(c) => chat(&c),
        Command::Synthesize(s) => s.run().map(|()| exit::OK).map_err(Error::TraceTool),
    };
    match ran {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

/// `ringperf chat`: stdin's lines are the messages; a failure is `ringperf: chat: …`, exit 2.
fn chat(a: &ringperf::cli::chat::ChatArgs) -> Result<u8, Error> {
    let o = ringperf::chat::ChatOptions {
        model: a.model.clone(),
        url: a.url.clone(),
        system_prompt: a.system_prompt.clone(),
        quick: a.quick.clone(),
        history: !a.no_history,
        api_key: a.api_key.clone(),
        tokenizer: a.tokenizer.clone().unwrap_or_else(|| a.model.clone()),
    };
    let mut stdin = std::io::stdin().lock();
    ringperf::chat::run(&o, &mut stdin, &mut std::io::stdout()).map_err(Error::Chat)?;
    Ok(exit::OK)
}

fn fail(e: &Error) -> ExitCode {
    eprintln!("ringperf: {e}");
    ExitCode::from(exit::of_error(e))
}

/// `profile`: the plan of the command line (each list cut to its first element) and the list
/// values.
fn profile(plan: Plan, lists: &[ringperf::sweep::ListValues]) -> Result<u8, Error> {
    let args = &plan.settings;
    // An SLO search (docs/search.md) runs its points through the sweep runner.
    let concurrency = lists
        .iter()
        .find(|(f, _)| f.id == "concurrency")
        .map(|(_, v)| v.iter().map(|p| p.as_f64() as u64).collect())
        .or(args.concurrency.map(|c| vec![c]));
    if let Some(search) =
        ringperf::search::config::from_args(&args.search, args.streaming, concurrency)?
    {
        ringperf_io::signals::block_term_signals().map_err(Error::Signals)?;
        if let Some(spec) = ringperf::config::tokenizer_spec(args) {
            ringperf_workload::workload::tokenizer::preload(&spec);
        }
        let api = start_api(args, None)?;
        let outcome = ringperf::search::run::run_search(
            &search,
            &plan,
            lists,
            run_options(api.as_ref()),
            std::io::stdout().is_terminal(),
        );
        finish_api(api);
        let outcome = outcome?;
        return Ok(auto_plot(&plan, &outcome, exit::of_run(&outcome)));
    }
    let sla = ringperf::search::config::plain_sweep_sla(&args.search)?;
    if let Some(mut sweep) = ringperf::sweep::SweepPlan::from_cli(&plan, lists)? {
        // A config file's `recipe_name` names the recipe whose Pareto axes the aggregate takes.
        let recipe = (plan.file_only.sweep_recipe.as_deref())
            .and_then(|n| ringperf::search::recipe::Recipe::parse(n).ok());
        sweep.annotations = ringperf::search::run::annotations(&sla, recipe);
        ringperf_io::signals::block_term_signals().map_err(Error::Signals)?;
        if let Some(spec) = ringperf::config::tokenizer_spec(args) {
            ringperf_workload::workload::tokenizer::preload(&spec);
        }
        let api = start_api(args, None)?;
        let outcome = ringperf::search::run::run_sweep(
            sweep,
            run_options(api.as_ref()),
            std::io::stdout().is_terminal(),
        );
        finish_api(api);
        let outcome = outcome?;
        return Ok(auto_plot(&plan, &outcome, exit::of_run(&outcome)));
    }
    if !sla.is_empty() {
        eprintln!(
            "ringperf: warning: --search-sla has no effect: it filters a sweep's variations, \
             and this is a single run"
        );
    }
    // Block SIGINT/SIGTERM before anything else runs, so that a signal during start-up is taken
    // by the run's signal thread (a graceful cancel), not the default action.
    ringperf_io::signals::block_term_signals().map_err(Error::Signals)?;
    // The builtin tokenizer's pre-tokenizer DFA is checked at first use (it and the tables are
    // compiled in; perf/README, "Start-up", "Seventh look"): that starts now, on a thread that
    // inherits the blocked signals, and validation and the run's set-up overlap it — unless the
    // run may never need it.
    if let Some(spec) = ringperf::config::tokenizer_spec(args)
        .filter(|_| ringperf::config::tokenizer_needed_first(args))
    {
        ringperf_workload::workload::tokenizer::preload(&spec);
    }
    let cfg = ringperf::config::Config::from_plan(&plan, std::io::stdout().is_terminal())?;
    // A flag given where it changes nothing (docs/flags.md, "Flags per mode"): one line each.
    for w in ringperf::sweep::plan::unused_without_sweep(args) {
        eprintln!("ringperf: warning: {w}");
    }
    for w in &cfg.warnings {
        eprintln!("ringperf: warning: {w}");
    }
    // `--scenario`: each setting it filled, one line each.
    for n in cfg.scenario.iter().flat_map(|o| &o.notes) {
        eprintln!("ringperf: {n}");
    }
    let plot_dir = args.auto_plot.then(|| cfg.artifact_dir.clone());
    let plot_required = cfg.outputs.plot_required;
    let api = start_api(args, Some(cfg.workers))?;
    let outcome = ringperf::run::run_with(cfg, run_options(api.as_ref()));
    finish_api(api);
    let outcome = outcome?;
    let code = exit::of_run(&outcome);
    Ok(match plot_dir {
        Some(dir) => plot_after_run(&dir, plot_required, plan.file_only.plot.as_ref(), code),
        None => code,
    })
}

/// `--api-port` (or `AIPERF_API_SERVER_PORT`): the live API for the whole command, started
/// before its first run, on a core no worker takes when `workers` leaves one.
fn start_api(
    args: &ringperf::cli::ProfileArgs,
    workers: Option<usize>,
) -> Result<Option<ringperf::api::Api>, Error> {
    let addr = ringperf::config::api::resolve(args.api_port, args.api_host.as_deref(), |k| {
        std::env::var(k).ok()
    })
    .map_err(Error::Config)?;
    let Some(addr) = addr else {
        return Ok(None);
    };
    let core = workers.and_then(ringperf::run::spare_core);
    ringperf::api::Api::start(&addr, core).map_err(|e| {
        Error::Run(ringperf::run::RunError::new(
            ringperf::run::SetupKind::Api,
            e.to_string(),
        ))
    })
}

/// The binary's runs: signals taken, publishing to the live API when there is one.
fn run_options(api: Option<&ringperf::api::Api>) -> ringperf::run::RunOptions {
    ringperf::run::RunOptions {
        handle_signals: true,
        api: api.map(|a| a.live().clone()),
    }
}

/// The API's grace after the last run, then its stop.
fn finish_api(api: Option<ringperf::api::Api>) {
    if let Some(a) = api {
        a.finish();
    }
}

/// `--auto-plot` after a sweep or a search: the report of its directory (its variations or
/// points, as `ringperf plot DIR` draws it), as after a single run.
fn auto_plot(plan: &Plan, outcome: &ringperf::run::Outcome, code: u8) -> u8 {
    let args = &plan.settings;
    if !args.auto_plot {
        return code;
    }
    let required = args.outputs.plot_required;
    let section = plan.file_only.plot.as_ref();
    plot_after_run(&outcome.artifact_dir, required, section, code)
}

/// `--auto-plot`: a config file's `plot:` section as `.aiperf-plot-config.yaml`, then the report of
/// the run just written, and its charts' folder (a PNG and an SVG
/// per chart), after the footer; a failure to draw it is said, and changes the exit code only
/// with `--plot-required`: 1 where the run would exit 0, as AIPerf's failed plot callback (every
/// other artifact is already written).
fn plot_after_run(
    dir: &std::path::Path,
    plot_required: bool,
    section: Option<&serde_json::Value>,
    code: u8,
) -> u8 {
    // A config file's `plot:` section first, where AIPerf writes it (its plot pass reads it).
    if let Some(section) = section {
        use ringperf::config::yaml::plot::{PLOT_CONFIG_FILE, to_yaml};
        let path = dir.join(PLOT_CONFIG_FILE);
        if let Err(e) = std::fs::write(&path, to_yaml(section)) {
            eprintln!("ringperf: auto-plot: cannot write {}: {e}", path.display());
        }
    }
    match ringperf_plot::plot::plot(&[dir.to_path_buf()], None) {
        Ok(r) => {
            println!("Report: {}", r.html.display());
            println!(
                "Plots: {}{} ({} charts, a PNG and an SVG each)",
                r.plots_dir.display(),
                std::path::MAIN_SEPARATOR,
                r.charts
            );
            code
        }
        Err(e) if plot_required => {
            eprintln!("ringperf: auto-plot failed and --plot-required is given: {e}");
            exit::with_required_plot_failed(code)
        }
        Err(e) => {
            eprintln!("ringperf: auto-plot: {e}");
            code
        }
    }
}

fn server_metrics(args: &ServerMetricsArgs) -> Result<u8, Error> {
    let opts = ringperf::config::reprocess_options(args).map_err(Error::ServerMetricsConfig)?;
    let files =
        ringperf_metrics::server_metrics::reprocess::run(&opts).map_err(Error::ServerMetrics)?;
    for (label, path) in files {
        println!("{label}: {}", path.display());
    }
    Ok(exit::OK)
}

fn merge(args: &MergeArgs) -> Result<u8, Error> {
    Ok(exit::of_merge(&ringperf::merge::run(
        &args.dirs,
        args.artifact_dir.as_deref(),
    )?))
}

fn plot(args: &PlotArgs) -> Result<u8, Error> {
    ringperf_plot::plot::run(&args.dirs, args.output.as_deref())?;
    Ok(exit::OK)
}

fn config(args: &ringperf::cli::yaml::ConfigArgs) -> u8 {
    use ringperf::cli::yaml::ConfigCommand;
    use ringperf::config::yaml::cmd;
    match &args.command {
        ConfigCommand::Validate(a) => cmd::validate(&a.path()),
        ConfigCommand::Expand(a) => {
            use ringperf::cli::yaml::ExpandFormatArg as F;
            cmd::expand(
                &a.path(),
                &cmd::ExpandOptions {
                    full: a.full,
                    index: a.index,
                    format: match a.format {
                        F::Text => cmd::ExpandFormat::Text,
                        F::Yaml => cmd::ExpandFormat::Yaml,
                        F::Json => cmd::ExpandFormat::Json,
                    },
                    as_flags: a.as_flags,
                    resolve: Some(ringperf::invocation::variation_configs),
                },
            )
        }
        ConfigCommand::Init(a) => cmd::init(&cmd::InitOptions {
            template: a.template.clone(),
            list: a.list,
            search: a.search.clone(),
            category: a.category.clone(),
            verbose: a.verbose,
            model: a.model.clone(),
            url: a.url.clone(),
            output: a.output.clone(),
        }),
    }
}

fn mock_server(args: &MockArgs) -> Result<u8, Error> {
    // Block SIGINT/SIGTERM before the (slow) tokenizer load, so a signal during start-up is
    // waited for by `serve` and still gets the truth log written, never kills.
    ringperf_io::signals::block_term_signals().map_err(Error::MockServer)?;
    // The mock counts every prompt's tokens (`usage.prompt_tokens`) with the builtin tokenizer:
    // its pre-tokenizer is compiled now, beside the listener's start, not by the first request
    // (a fresh debug build's first answer was late by that).
    ringperf_workload::workload::tokenizer::preload(
        ringperf_workload::workload::tokenizer::BUILTIN,
    );
    let c = ringperf::config::mock::MockServerConfig::try_from_args(args)?;
    ringperf_mock::mock::serve(c.mock, c.truth_log.as_deref(), c.dcgm_log.as_deref())
        .map_err(Error::MockServer)?;
    Ok(exit::OK)
}
