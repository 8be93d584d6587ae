//! Repeated profile runs (`--num-profile-runs` > 1; docs/output-formats.md): the profile N times,
//! each into `<artifact-dir>/profile_runs/run_NNNN/` with its usual artifacts and console, a
//! cooldown between runs, then the aggregate across the runs ([`ringperf_metrics::export::aggregate`]).
//!
//! A signal stops the sequence: the run in progress stops as a single run does (its artifacts
//! are written, marked cancelled), no further run starts, and the aggregate covers the runs
//! that had completed. The cancelled run does not count: its partial figures would skew the
//! statistics.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::{Outcome, RunError, RunOptions, SetupKind, SignalWatch, StopReason, run_inner};
use crate::config::Config;
use ringperf_io::control::RunControl;
use ringperf_metrics::export::aggregate::{self, Excluded, RunResult};
use ringperf_metrics::export::{AIPERF_VERSION, ExportNames, Trial};
use ringperf_wire::clock::Clock;

/// What the signal thread and the sequence share: the run in progress, and whether a signal
/// came (its name).
#[derive(Default)]
pub(crate) struct Sequence {
    state: Mutex<SeqState>,
    /// Wakes a cooldown early when a signal comes.
    wake: Condvar,
}

#[derive(Default)]
struct SeqState {
    current: Option<Arc<RunControl>>,
    cancelled: Option<&'static str>,
}

impl Sequence {
    fn lock(&self) -> MutexGuard<'_, SeqState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first signal: stop the run in progress (if any) and every later one.
    pub(crate) fn cancel(&self, name: &'static str, grace: Option<Duration>) {
        let mut s = self.lock();
        s.cancelled.get_or_insert(name);
        if let Some(c) = &s.current {
            c.stop_after(StopReason::Signal(name), grace);
        }
        self.wake.notify_all();
    }

    /// Sleeps `d`, or less when a signal comes.
    pub(crate) fn cooldown(&self, d: Duration) {
        let s = self.lock();
        let _ = self
            .wake
            .wait_timeout_while(s, d, |s| s.cancelled.is_none());
    }

    /// A new run's control, registered as the run in progress; `None` once cancelled.
    pub(crate) fn begin(&self) -> Option<Arc<RunControl>> {
        let mut s = self.lock();
        if s.cancelled.is_some() {
            return None;
        }
        let control = Arc::new(RunControl::new(Clock::start()));
        s.current = Some(control.clone());
        Some(control)
    }

    pub(crate) fn end(&self) {
        self.lock().current = None;
    }

    pub(crate) fn cancelled(&self) -> Option<&'static str> {
        self.lock().cancelled
    }
}

/// Runs the profile `cfg.multi_run.runs` times and writes the aggregate. The outcome sums the
/// runs' requests; it is cancelled when a signal stopped the sequence, otherwise it carries
/// the first run's error-budget stop, if any.
pub fn run_many(cfg: Config, opts: RunOptions) -> Result<Outcome, RunError> {
    let seq = Arc::new(Sequence::default());
    let watch = if opts.handle_signals {
        let (seq, grace) = (seq.clone(), cfg.stop_grace);
        Some(SignalWatch::start(move |name| seq.cancel(name, grace))?)
    } else {
        None
    };
    let result = run_sequence(&cfg, &seq, opts.api.as_ref());
    if let Some(w) = watch {
        w.stop();
    }
    result
}

fn run_sequence(
    cfg: &Config,
    seq: &Sequence,
    api: Option<&Arc<crate::api::Live>>,
) -> Result<Outcome, RunError> {
    let mr = &cfg.multi_run;
    let base = cfg.artifact_dir.clone();
    let names = ExportNames::new(cfg.export_prefix.as_deref());
    let mut total = Outcome {
        successes: 0,
        errors: 0,
        stopped: None,
        client_fell_behind: false,
        client_lag_enforced: cfg.max_client_lag_ns.is_some(),
        artifact_dir: base.clone(),
    };
    // What an earlier run left here (a single run's files, an earlier sequence's runs and
    // aggregate) goes before the first run; each run then starts in an empty folder.
    std::fs::create_dir_all(&base).map_err(|e| {
        RunError::new(
            SetupKind::Artifacts,
            format!("cannot create artifact directory {}: {e}", base.display()),
        )
    })?;
    super::prepare::clear_artifact_dir(cfg, &base, &names)?;
    if let Some(w) = mr.convergence.as_ref().and_then(|c| c.warning()) {
        eprintln!("ringperf: warning: {w}");
    }
    let mut results: Vec<RunResult> = Vec::new();
    // Each run's per-request JSONL, beside `results` (for `--convergence-mode distribution`).
    let mut records: Vec<PathBuf> = Vec::new();
    let sweep_id = uuid::Uuid::new_v4().to_string();
    let mut setup_error = None;
    for k in 1..=mr.runs {
        if k > 1 && !mr.cooldown.is_zero() {
            println!(
                "Cooling down for {} s before run {k} of {}",
                ringperf_metrics::export::py_float_str(mr.cooldown_seconds),
                mr.runs
            );
            seq.cooldown(mr.cooldown);
        }
        let Some(control) = seq.begin() else {
            break;
        };
        let label = aggregate::run_label(k);
        let run_cfg = run_config(cfg, k, &label, &sweep_id);
        println!(
            "Profile run {k} of {} ({})",
            mr.runs,
            run_cfg.artifact_dir.display()
        );
        let dir = run_cfg.artifact_dir.clone();
        records.push(dir.join(&names.jsonl));
        let ran = run_inner(run_cfg, control, api);
        seq.end();
        match ran {
            Ok(o) => {
                total.successes += o.successes;
                total.errors += o.errors;
                total.client_fell_behind |= o.client_fell_behind;
                if total.stopped.is_none()
                    && let Some(StopReason::ErrorBudget { .. }) = &o.stopped
                {
                    total.stopped = o.stopped.clone();
                }
                results.push(match not_counted(&o) {
                    Some(why) => RunResult {
                        label,
                        outcome: Err(why),
                    },
                    None => aggregate::read_run(label, &dir.join(&names.json)),
                });
                // `--convergence-*`: no further run once the metric is stable.
                if let Some(c) = &mr.convergence {
                    let d = super::convergence::judge(c, &results, &records, mr.confidence_level);
                    println!("{}", d.message(c, "base"));
                    if d.converged {
                        break;
                    }
                }
            }
            Err(e) => {
                // A setup failure (files, dataset, the mock) would fail every later run too.
                results.push(RunResult {
                    label,
                    outcome: Err(Excluded::Setup(e.to_string())),
                });
                setup_error = Some(e);
                break;
            }
        }
    }
    if let Some(name) = seq.cancelled() {
        total.stopped = Some(StopReason::Signal(name));
    }
    // A setup error before any run counted is the whole story: no aggregate to speak of.
    let nothing_counted = results.iter().all(|r| r.outcome.is_err());
    let written = if results.is_empty() || (setup_error.is_some() && nothing_counted) {
        Ok(())
    } else {
        finish(&base, cfg, &results, &records)
    };
    match setup_error {
        Some(e) => Err(e),
        None => written.map(|()| total),
    }
}

/// Run `k`'s configuration (1-based): its own directory `profile_runs/<label>` and trial;
/// no warmup after the first run when `warmup_first_run_only` says so.
fn run_config(cfg: &Config, k: u32, label: &str, sweep_id: &str) -> Config {
    let mut run_cfg = cfg.clone();
    run_cfg.artifact_dir = cfg.artifact_dir.join(aggregate::RUNS_DIR).join(label);
    let dir = run_cfg.artifact_dir.clone();
    run_cfg.set_artifact_dir(&dir);
    run_cfg.echo.set_repeated_run();
    run_cfg.multi_run.trial = Some(Trial {
        index: k - 1,
        label: label.to_owned(),
        sweep_id: sweep_id.to_owned(),
        variation: None,
    });
    if k > 1 && cfg.multi_run.warmup_first_run_only {
        run_cfg.drop_warmups();
    }
    run_cfg
}

/// Why a finished run does not count in the aggregate, if it does not.
pub(crate) fn not_counted(o: &Outcome) -> Option<Excluded> {
    if let Some(reason) = &o.stopped {
        return Some(Excluded::Stopped(reason.clone()));
    }
    if o.successes == 0 {
        return Some(Excluded::NoSuccess { errors: o.errors });
    }
    if o.fails_client_health() {
        return Some(Excluded::ClientFellBehind);
    }
    None
}

/// Writes the aggregate files and prints the aggregate table and the paths. No run counted:
/// said on stderr, the outcome's exit code tells the rest. Files that cannot be written: an
/// error.
fn finish(
    base: &Path,
    cfg: &Config,
    results: &[RunResult],
    records: &[PathBuf],
) -> Result<(), RunError> {
    let mr = &cfg.multi_run;
    let agg = match aggregate::aggregate(results, mr.confidence_level, mr.cooldown_seconds) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ringperf: aggregate: {e}");
            return Ok(());
        }
    };
    if agg.single_run {
        eprintln!(
            "ringperf: only one run counted: the aggregate reports its values with no \
             confidence interval"
        );
    }
    match aggregate::write_aggregate(base, &agg, AIPERF_VERSION) {
        Ok((json, csv)) => {
            let mut out = String::from("\n");
            out.push_str(&aggregate::render_aggregate_console(&agg));
            out.push_str(&format!("Aggregate JSON Export: {}\n", json.display()));
            out.push_str(&format!("Aggregate CSV Export: {}\n", csv.display()));
            // With `--convergence-*`, AIPerf's collated JSON beside the aggregate.
            if mr.convergence.is_some() {
                let counted: Vec<(String, PathBuf)> = results
                    .iter()
                    .zip(records)
                    .filter(|(r, _)| r.outcome.is_ok())
                    .map(|(r, p)| (r.label.clone(), p.clone()))
                    .collect();
                let path = super::collated::write_collated(base, &agg, &counted, AIPERF_VERSION)
                    .map_err(|e| {
                        RunError::new(
                            SetupKind::Artifacts,
                            format!("cannot write the collated JSON in {}: {e}", base.display()),
                        )
                    })?;
                out.push_str(&format!("Collated JSON Export: {}\n", path.display()));
            }
            out.push_str(&format!(
                "Runs: {}\n",
                base.join(aggregate::RUNS_DIR).display()
            ));
            print!("{out}");
            Ok(())
        }
        Err(e) => Err(RunError::new(
            SetupKind::Artifacts,
            format!(
                "cannot write the aggregate in {}: {e}",
                base.join(aggregate::AGGREGATE_DIR).display()
            ),
        )),
    }
}
