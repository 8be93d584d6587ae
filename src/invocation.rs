//! A `ringperf …` invocation read into typed values: for `profile`, its plan and list values.
//!
//! The command line is parsed by [`crate::cli`] (its lists cut out first, as a sweep's); a
//! `--config FILE` is read by [`crate::config::yaml`] into settings, which go under the command
//! line's (AIPerf's rule: a flag given replaces the file's value) by their flag ids
//! ([`crate::cli::parse::under_file`]). No command line is made from the file.

use std::path::Path;

use crate::cli::{Command, Given, UnsupportedFlag};
use crate::config::yaml::cmd::{FileError, file_settings, split_config};
use crate::plan::{FileOnly, Plan};
use crate::sweep::{ListValues, ParamValue, SweepError, SweepableFlag, extract_lists};

#[cfg(test)]
mod tests;

/// What the command line asks for: the command, with `profile`'s settings those of its plan
/// (each list cut to its first element, a config file's settings under the flags given), what was
/// given explicitly, and the list values.
pub struct Invocation {
    pub command: Command,
    pub given: Given,
    pub lists: Vec<ListValues>,
    /// What the config file sets that no flag can.
    pub file_only: FileOnly,
}

impl Invocation {
    /// The plan of a `profile` invocation whose command line was `argv`, and its list values;
    /// `None` for another command.
    pub fn plan(self, argv: &[String]) -> Option<(Plan, Vec<ListValues>)> {
        match self.command {
            Command::Profile(settings) => Some((
                Plan {
                    settings: *settings,
                    given: self.given,
                    command: argv.to_vec(),
                    file_only: self.file_only,
                },
                self.lists,
            )),
            _ => None,
        }
    }
}

/// Why an invocation cannot be read.
#[derive(Debug)]
pub enum InvocationError {
    /// The config file (or `--scenario`).
    File(FileError),
    /// An AIPerf flag ringperf does not implement.
    Unsupported(UnsupportedFlag),
    /// A list value.
    Sweep(SweepError),
    /// clap's error (also `--help` and `--version`).
    Parse(clap::Error),
}

/// Reads `argv` (`${VAR}` in a config file from `env`).
///
/// # Errors
/// [`InvocationError`].
pub fn read(
    argv: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Invocation, InvocationError> {
    let (words, file) = split_config(argv).map_err(InvocationError::File)?;
    crate::cli::reject_unsupported(&words).map_err(InvocationError::Unsupported)?;
    // List values (`--concurrency 1,2,4`): a sweep. Clap parses the command line with each list
    // cut to its first element; the lists are kept (docs/sweeps.md).
    let lists = extract_lists(&words).map_err(InvocationError::Sweep)?;
    let (cli, given) =
        crate::cli::parse(&lists.placeholder_argv).map_err(InvocationError::Parse)?;
    let read = Invocation {
        command: cli.command,
        given,
        lists: lists.lists,
        file_only: FileOnly::default(),
    };
    let Some(path) = file else {
        return Ok(read);
    };
    let Invocation {
        command,
        given,
        lists,
        file_only,
    } = read;
    let settings = match command {
        Command::Profile(s) => s,
        command => {
            return Ok(Invocation {
                command,
                given,
                lists,
                file_only,
            });
        }
    };
    let mut plan = Plan {
        settings: *settings,
        given,
        command: argv.to_vec(),
        file_only,
    };
    let mut lists = lists;
    let profile_words = words
        .iter()
        .position(|w| w == "profile")
        .map_or(&words[..], |p| &words[p + 1..]);
    with_file(&mut plan, &mut lists, &path, profile_words, env)?;
    Ok(Invocation {
        command: Command::Profile(Box::new(plan.settings)),
        given: plan.given,
        lists,
        file_only: plan.file_only,
    })
}

/// The flags (by id) that set the profiling phase of a config file (AIPerf 0.13's overlay of
/// the command line onto the file's one profiling phase).
const PROFILING_PHASE_FLAGS: &[&str] = &[
    "request_count",
    "benchmark_duration",
    "benchmark_grace_period",
    "concurrency",
    "prefill_concurrency",
    "request_rate",
    "user_centric_rate",
    "num_users",
    "conversation_num",
    "arrival_pattern",
    "arrival_smoothness",
    "concurrency_ramp_duration",
    "fixed_schedule",
    "fixed_schedule_auto_offset",
    "fixed_schedule_end_offset",
    "fixed_schedule_start_offset",
    "prefill_concurrency_ramp_duration",
    "request_cancellation_delay",
    "request_cancellation_rate",
    "request_rate_ramp_duration",
    "request_rate_series",
];

/// The config file `path`'s settings under `plan`'s, and its sweep's lists beside `lists` (a
/// list of a flag the command line gives is the command line's).
fn with_file(
    plan: &mut Plan,
    lists: &mut Vec<ListValues>,
    path: &Path,
    cli_words: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), InvocationError> {
    let file = file_settings(path, cli_words, env).map_err(InvocationError::File)?;
    let cli_given = plan.given.clone();
    let refused = |why: String| {
        InvocationError::File(FileError {
            path: path.to_path_buf(),
            error: crate::config::yaml::YamlError::Schema(why),
        })
    };
    // A profiling-phase flag beside a file of several profiling phases: AIPerf cannot tell
    // which one it sets, and refuses it.
    let profiling: Vec<&str> = std::iter::once(
        file.file_only
            .profiling_name
            .as_deref()
            .unwrap_or("profiling"),
    )
    .chain(
        (file.file_only.phases_after.iter())
            .filter(|p| !p.warmup)
            .map(|p| p.name.as_str()),
    )
    .collect();
    if profiling.len() > 1
        && PROFILING_PHASE_FLAGS
            .iter()
            .any(|id| cli_given.contains_key(*id))
    {
        return Err(refused(format!(
            "CLI loadgen flags target the profiling phase, but this config has {} profiling \
             phases: {}. Set the value in YAML or use an explicit phase path.",
            profiling.len(),
            profiling.join(", ")
        )));
    }
    let mut settings: Vec<crate::cli::parse::Setting> = file
        .flags
        .iter()
        .map(|(flag, values)| {
            let values = values
                .iter()
                .map(|v| (v.value.clone(), v.written.clone()))
                .collect();
            (flag.clone(), values)
        })
        .collect();
    let mut file_lists = Vec::new();
    for (flag, values) in &file.sweep {
        match (SweepableFlag::lookup(flag), values.as_slice()) {
            (Some(f), [list]) if list.contains(',') => {
                let values = list
                    .split(',')
                    .map(|e| ParamValue::parse(f, e))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(InvocationError::Sweep)?;
                file_lists.push((f, values));
            }
            _ => settings.push((
                flag.clone(),
                values
                    .iter()
                    .map(|v| (serde_json::Value::from(v.as_str()), v.clone()))
                    .collect(),
            )),
        }
    }
    let sm = [
        "server_metrics",
        "no_server_metrics",
        "server_metrics_formats",
    ];
    let file_sm = [
        "--server-metrics",
        "--no-server-metrics",
        "--server-metrics-formats",
    ];
    let sm_whole = sm.iter().any(|id| cli_given.contains_key(*id))
        && settings.iter().any(|(f, _)| file_sm.contains(&f.as_str()));
    let (s, given) =
        crate::cli::parse::under_file(&plan.settings, &plan.given, &settings).map_err(refused)?;
    plan.settings = s;
    plan.given = given;
    plan.file_only = file.file_only;
    plan.file_only.server_metrics_block_whole = sm_whole;
    // `--no-gpu-telemetry` / `--no-server-metrics` on the command line turn off a collection the
    // file lists URLs for (AIPerf keeps the file's list, disabled); only both on the command
    // line are refused.
    if cli_given.contains_key("no_gpu_telemetry") && !cli_given.contains_key("gpu_telemetry") {
        plan.settings.gpu_telemetry = None;
        plan.given.remove("gpu_telemetry");
    }
    if cli_given.contains_key("no_server_metrics") && !cli_given.contains_key("server_metrics") {
        plan.settings.server_metrics = None;
        plan.given.remove("server_metrics");
    }
    // `--num-sessions` beside a file sizes its synthetic dataset too, unless
    // `--num-dataset-entries` is given (AIPerf routes the flag to the dataset's `entries` and the
    // profiling phase's `sessions`).
    if cli_given.contains_key("conversation_num")
        && !cli_given.contains_key("num_dataset_entries")
        && let Some(n) = plan.settings.prompt.conversation_num
        && plan.settings.input.input_file.is_none()
    {
        plan.set_given(
            "num_dataset_entries",
            |s| s.num_dataset_entries = Some(n as usize),
            n.to_string(),
        );
    }
    // `--warmup-*` over the file's first warmup, a phase of its own, set it (AIPerf's overlay
    // sets the first warmup by its place, one after the profiling phase too); over a file with
    // no warmup they make one, first.
    let file_warmup =
        (settings.iter()).any(|(f, _)| f.starts_with("--warmup-") || f == "--num-warmup-sessions");
    let first = match plan.file_only.phases_before.first_mut() {
        Some(w) => Some(w),
        None if !file_warmup => (plan.file_only.phases_after.iter_mut()).find(|p| p.warmup),
        None => None,
    };
    if let Some(w) = first {
        w.take_warmup_flags(&mut plan.settings, &mut plan.given);
    }
    for (f, values) in file_lists {
        if cli_given.contains_key(f.id) || lists.iter().any(|(l, _)| l.path == f.path) {
            continue;
        }
        // The base plan holds the list's first value, as a list on the command line gives it.
        let set = f.set;
        plan.set_given(f.id, |s| set(s, values[0].as_f64()), values[0].to_string());
        lists.push((f, values));
    }
    Ok(())
}

/// `config expand --full`: each variation's `input_config`, in the order of
/// [`crate::config::yaml::argv::variations`]: the file read as
/// `profile -f FILE` reads it, each variation applied as the sweep runner applies it, and the
/// configuration resolved (checked as `profile` checks it before a run).
pub fn variation_configs(path: &Path, total: usize) -> Result<Vec<serde_json::Value>, String> {
    let argv: Vec<String> = ["ringperf", "profile", "-f"]
        .into_iter()
        .map(str::to_owned)
        .chain([path.display().to_string()])
        .collect();
    use InvocationError as E;
    let read = read(&argv, &|k| std::env::var(k).ok()).map_err(|e| match e {
        E::File(f) => f.error.to_string(),
        E::Sweep(s) => s.to_string(),
        E::Parse(c) => c.to_string(),
        E::Unsupported(u) => u.to_string(),
    })?;
    let (plan, lists) = read
        .plan(&argv)
        .ok_or_else(|| "not a profile command line".to_string())?;
    let resolved = |p: &crate::plan::Plan| {
        crate::config::Config::from_plan(p, false)
            .map(|c| c.input_config())
            .map_err(|e| e.to_string())
    };
    let Some(sweep) =
        crate::sweep::plan::SweepPlan::from_cli(&plan, &lists).map_err(|e| e.to_string())?
    else {
        return Ok(vec![resolved(&plan)?]);
    };
    if sweep.variations.len() != total {
        return Err(format!(
            "the sweep runs {} variations, the file lists {total}",
            sweep.variations.len()
        ));
    }
    sweep
        .variations
        .iter()
        .map(|v| resolved(&sweep.plan_of(v, 0).map_err(|e| e.to_string())?))
        .collect()
}
