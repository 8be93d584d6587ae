//! Running a sweep: each (variation, trial) is an ordinary profile run into its own directory,
//! in the plan's loop order, with the cooldowns between them; a signal stops the sweep (the
//! run in progress ends as a single run does, no further run starts).
//!
//! [`Sweeper`] is the piece a planner builds on: [`Sweeper::run_variation`] runs one
//! variation's trials (with adaptive convergence) and returns its [`VariationResult`], so a
//! search can run a point, read its figures and choose the next one.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::convergence::{self, Decision};
use super::error::SweepError;
use super::plan::{SweepMode, SweepPlan, Variation};
use super::result::{TrialResult, VariationResult};
use super::shards::SweepShards;
use crate::config::Config;
use crate::plan::Plan;
use crate::run::multi::{Sequence, not_counted};
use crate::run::{Outcome, RunOptions, SignalWatch, StopReason, run_inner};
use ringperf_metrics::export::aggregate::{self, RunResult};
use ringperf_metrics::export::{ExportNames, Trial, VariationInfo};

/// Runs the variations of a [`SweepPlan`] into one artifact directory. Holds the sweep's id,
/// the signal watch (with `RunOptions::handle_signals`) and the run in progress.
pub struct Sweeper {
    plan: SweepPlan,
    /// The sweep's artifact directory (`--artifact-dir`).
    base: PathBuf,
    sweep_id: String,
    /// The first `--model` (the aggregates' `model`).
    model: String,
    is_tty: bool,
    /// `--ui dashboard`: no sweep table on its screen.
    dashboard: bool,
    seq: Arc<Sequence>,
    watch: Option<SignalWatch>,
    /// A sweep table was printed as the variations ended (none again at the end).
    table_printed: std::cell::Cell<bool>,
    /// `--shard-count` over 1: every run is a shard, aligned by a barrier.
    shards: Option<SweepShards>,
    /// A sharded sweep's next run's start instant (epoch ns) and how many runs have ended.
    next_start: std::cell::Cell<(Option<u64>, usize)>,
    /// `--api-port`: the live API every run publishes to.
    api: Option<Arc<crate::api::Live>>,
}

impl Sweeper {
    /// Prepares the sweep: validates every variation's command line (so a bad flag or value is
    /// refused before anything runs), empties what an earlier run left in the artifact
    /// directory and, with `opts.handle_signals`, takes SIGINT / SIGTERM.
    ///
    /// # Errors
    /// The first variation's command line is refused, or the directory cannot be prepared.
    pub fn new(plan: SweepPlan, opts: RunOptions, is_tty: bool) -> Result<Self, SweepError> {
        let first = plan
            .variations
            .first()
            .cloned()
            .ok_or(SweepError::SingleVariant)?;
        let probe = config_of(&plan, &first, 0, is_tty)?;
        // Every variation is checked before anything runs: one refused at the third variation
        // would otherwise end the sweep after two were measured.
        // Each one's sockets must fit the process's limits too (a refusal, or one warning
        // line each, as a single run gets).
        let mut warned = std::collections::BTreeSet::new();
        for (i, v) in plan.variations.iter().enumerate() {
            let cfg = if i == 0 {
                probe.clone()
            } else {
                config_of(&plan, v, 0, is_tty)?
            };
            for w in crate::run::limits::check(&cfg)? {
                if warned.insert(w.clone()) {
                    eprintln!("ringperf: warning: {w}");
                }
            }
        }
        if let Some(w) = plan.convergence.as_ref().and_then(|c| c.warning()) {
            eprintln!("ringperf: warning: {w}");
        }
        // A fixed schedule (asked for, or a trace with timestamps) replays the file's timing:
        // AIPerf refuses list values with it.
        if plan.sweep_type != super::plan::SweepType::Scenarios
            && matches!(
                probe.profiling.timing.mode,
                crate::config::timing::Mode::FixedSchedule(_)
            )
        {
            return Err(SweepError::FixedSchedule);
        }
        let base = probe.artifact_dir.clone();
        std::fs::create_dir_all(&base).map_err(|source| SweepError::Write {
            path: base.clone(),
            source,
        })?;
        let names = ExportNames::new(probe.export_prefix.as_deref());
        crate::run::prepare::clear_artifact_dir(&probe, &base, &names)?;
        let shards = match (probe.shard.is_split(), probe.shard.start_at_ns) {
            (true, Some(at)) => {
                let sh = probe.shard.shard;
                let s = SweepShards::new(sh.index(), sh.count(), at, &base)?;
                s.manifest(&plan, &probe.secrets)
                    .map_err(|e| SweepError::Write {
                        path: base.clone(),
                        source: std::io::Error::other(e),
                    })?
                    .write(&base)?;
                Some(s)
            }
            _ => None,
        };
        let next_start = std::cell::Cell::new((shards.as_ref().map(|s| s.start_at_ns), 0));
        let seq = Arc::new(Sequence::default());
        let watch = if opts.handle_signals {
            let (s, grace) = (seq.clone(), probe.stop_grace);
            Some(SignalWatch::start(move |name| s.cancel(name, grace))?)
        } else {
            None
        };
        Ok(Self {
            plan,
            base,
            sweep_id: uuid::Uuid::new_v4().to_string(),
            model: probe.models.first().cloned().unwrap_or_default(),
            is_tty,
            dashboard: probe.ui == crate::config::UiType::Dashboard,
            seq,
            watch,
            table_printed: std::cell::Cell::new(false),
            shards,
            next_start,
            api: opts.api,
        })
    }

    /// Prints the sweep table of the variations ended so far, as AIPerf prints it again after
    /// each variation (the last one printed is the whole sweep's); on the same terms as the
    /// final table ([`Self::finish`], which then prints none).
    pub fn show_progress(&self, results: &[VariationResult]) {
        if self.show_table() {
            print!("{}", super::output::render_table(results));
            self.table_printed.set(true);
        }
    }

    /// The plan.
    pub fn plan(&self) -> &SweepPlan {
        &self.plan
    }

    /// The sweep's artifact directory.
    pub fn artifact_dir(&self) -> &Path {
        &self.base
    }

    /// The signal that stopped the sweep, if one came.
    pub fn cancelled(&self) -> Option<&'static str> {
        self.seq.cancelled()
    }

    /// Sleeps `seconds` (printing why), or less when a signal comes.
    /// In a sharded sweep the cooldown is added to the next run's shared start instant
    /// instead (every shard waits for it).
    pub fn cool_down(&self, seconds: f64, what: &str) {
        if seconds > 0.0 && self.cancelled().is_none() {
            println!(
                "Cooling down for {} s before {what}",
                ringperf_metrics::export::py_float_str(seconds)
            );
            if let (Some(at), n) = self.next_start.get()
                && self.shards.is_some()
            {
                let later = at + Duration::from_secs_f64(seconds).as_nanos() as u64;
                self.next_start.set((Some(later), n));
                return;
            }
            self.seq.cooldown(Duration::from_secs_f64(seconds));
        }
    }

    /// A sharded sweep, after a run (or instead of one, when a signal came first): says how
    /// this shard's run ended at the barrier and, when it ended well, waits for every other
    /// shard and sets the next run's start instant.
    fn meet(
        &self,
        ended: Result<Option<&Outcome>, &SweepError>,
        took: Duration,
    ) -> Result<(), SweepError> {
        let Some(sh) = &self.shards else {
            return Ok(());
        };
        let (_, run) = self.next_start.get();
        let status = match ended {
            Err(e) => format!("failed: {e}"),
            Ok(None) => "stopped by a signal".to_owned(),
            Ok(Some(o)) => match &o.stopped {
                Some(StopReason::Signal(name)) => format!("stopped by {name}"),
                _ => "ok".to_owned(),
            },
        };
        sh.arrive(run, ringperf_wire::clock::wall_now_ns(), &status)?;
        if status != "ok" {
            return Ok(());
        }
        let at = sh.wait(run, 0, super::shards::wait_limit(took), || {
            self.cancelled().is_some()
        })?;
        self.next_start.set((Some(at), run + 1));
        Ok(())
    }

    /// Runs trial `trial` (from 0) of `variation` into its directory
    /// ([`SweepPlan::run_dir`]); `None` when a signal came before it started.
    ///
    /// # Errors
    /// The variation's command line is refused, or the run cannot be set up.
    pub fn run_trial(
        &self,
        variation: &Variation,
        trial: u32,
    ) -> Result<Option<TrialResult>, SweepError> {
        let mut plan = self.plan.plan_of(variation, trial)?;
        if let (Some(at), _) = self.next_start.get() {
            plan.set_given(
                "start_at",
                |s| s.shard.start_at = Some(at.to_string()),
                at.to_string(),
            );
        }
        let mut cfg = config_of_plan(&self.plan, variation, &plan, trial, self.is_tty)?;
        let dir = self.plan.run_dir(&self.base, variation, trial);
        cfg.set_artifact_dir(&dir);
        cfg.multi_run.trial = Some(Trial {
            index: trial,
            label: aggregate::run_label(trial + 1),
            sweep_id: self.sweep_id.clone(),
            variation: Some(VariationInfo {
                index: variation.index,
                label: variation.label.clone(),
                values: variation.values_json(),
                // 0: an adaptive search's count is unknown (the dashboard then says no total).
                of: if self.plan.at_most.is_some() {
                    0
                } else {
                    self.plan.variations.len()
                },
                trials: self.plan.trials,
            }),
        });
        // AIPerf 0.13 runs every variation of a sweep from its whole configuration written out,
        // one trial or several.
        cfg.echo.set_repeated_run();
        let n = self.plan.variations.len().max(variation.index + 1);
        let Some(control) = self.seq.begin() else {
            self.meet(Ok(None), Duration::ZERO)?;
            return Ok(None);
        };
        // A grid or list sweep knows its count; an adaptive search only its bound.
        let which = match self.plan.at_most {
            Some(max) => format!("Search point {} (at most {max})", variation.index + 1),
            None => format!("Sweep variation {} of {n}", variation.index + 1),
        };
        println!(
            "{which} ({}), trial {} of {} ({})",
            variation.label,
            trial + 1,
            self.plan.trials,
            dir.display()
        );
        let names = ExportNames::new(cfg.export_prefix.as_deref());
        let summary = dir.join(&names.json);
        let records = dir.join(&names.jsonl);
        let began = std::time::Instant::now();
        let ran = run_inner(cfg, control, self.api.as_ref()).map_err(SweepError::from);
        self.seq.end();
        self.meet(ran.as_ref().map(Some), began.elapsed())?;
        Ok(Some(TrialResult {
            trial,
            dir,
            summary,
            records,
            outcome: ran?,
        }))
    }

    /// Runs every trial of `variation` (the independent order: one after the other, the
    /// trial cooldown between them), stopping early when the convergence criterion is met,
    /// then writes its aggregate. What a planner calls once per point.
    ///
    /// # Errors
    /// As [`Sweeper::run_trial`], or the aggregate cannot be written.
    pub fn run_variation(&self, variation: &Variation) -> Result<VariationResult, SweepError> {
        let mut trials = Vec::new();
        let mut decision = None;
        for t in 0..self.plan.trials {
            if t > 0 {
                self.cool_down(
                    self.plan.trial_cooldown_seconds,
                    &format!("trial {} of {}", t + 1, self.plan.trials),
                );
            }
            let Some(r) = self.run_trial(variation, t)? else {
                break;
            };
            trials.push(r);
            if let Some(c) = &self.plan.convergence {
                let d = convergence::judge(
                    c,
                    &self.runs_of(&trials),
                    &records_of(&trials),
                    self.plan.confidence_level,
                );
                println!("{}", d.message(c, &variation.label));
                let stop = d.converged;
                decision = Some(d);
                if stop {
                    break;
                }
            }
        }
        self.finish_variation(variation.clone(), trials, decision)
    }

    /// The [`RunResult`]s of `trials`, as the aggregate reads them.
    fn runs_of(&self, trials: &[TrialResult]) -> Vec<RunResult> {
        runs_of(trials)
    }

    /// The result of `variation` from its finished trials; its aggregate written.
    ///
    /// # Errors
    /// The aggregate cannot be written.
    pub fn finish_variation(
        &self,
        variation: Variation,
        trials: Vec<TrialResult>,
        convergence: Option<Decision>,
    ) -> Result<VariationResult, SweepError> {
        let cancelled = self.cancelled().is_some()
            && (trials.len() < self.plan.trials as usize
                && convergence.as_ref().is_none_or(|d| !d.converged)
                || trials
                    .iter()
                    .any(|t| matches!(t.outcome.stopped, Some(StopReason::Signal(_)))));
        let ended = Ended {
            trials,
            cancelled,
            convergence,
        };
        variation_result(&self.plan, &self.base, &self.model, variation, ended)
    }

    /// Writes the sweep aggregate of `results` and prints the sweep table; ends the signal
    /// watch. The outcome sums the runs' requests; it is cancelled when a signal stopped the
    /// sweep.
    ///
    /// # Errors
    /// The sweep's files cannot be written.
    pub fn finish(mut self, results: &[VariationResult]) -> Result<Outcome, SweepError> {
        if let Some(w) = self.watch.take() {
            w.stop();
        }
        let written = super::output::write_sweep(&self.plan, &self.base, results);
        if self.show_table() && !self.table_printed.get() {
            print!("{}", super::output::render_table(results));
        }
        let mut total = Outcome {
            successes: results.iter().map(VariationResult::successes).sum(),
            errors: results.iter().map(VariationResult::errors).sum(),
            stopped: None,
            client_fell_behind: results.iter().any(|r| r.client_fell_behind),
            client_lag_enforced: results
                .iter()
                .flat_map(|r| &r.trials)
                .any(|t| t.outcome.client_lag_enforced),
            artifact_dir: self.base.clone(),
        };
        if let Some(name) = self.seq.cancelled() {
            total.stopped = Some(StopReason::Signal(name));
        }
        for (label, path) in written? {
            println!("{label}: {}", path.display());
        }
        Ok(total)
    }

    /// The sweep table is printed on a terminal, without the dashboard, for more than one
    /// variation and without `--no-sweep-table` (AIPerf's rule).
    fn show_table(&self) -> bool {
        !self.plan.no_sweep_table
            && !self.dashboard
            && self.plan.variations.len() > 1
            && std::io::stdout().is_terminal()
            && self.is_tty
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Some(w) = self.watch.take() {
            w.stop();
        }
    }
}

/// The [`RunResult`]s of `trials`, as the aggregate reads them.
fn runs_of(trials: &[TrialResult]) -> Vec<RunResult> {
    trials
        .iter()
        .map(|t| {
            let label = aggregate::run_label(t.trial + 1);
            match not_counted(&t.outcome) {
                Some(why) => RunResult {
                    label,
                    outcome: Err(why),
                },
                None => aggregate::read_run(label, &t.summary),
            }
        })
        .collect()
}

/// How a variation's trials ended.
pub struct Ended {
    /// Its trials that ran.
    pub trials: Vec<TrialResult>,
    /// A signal cut it short.
    pub cancelled: bool,
    /// The convergence decision after its last trial.
    pub convergence: Option<Decision>,
}

/// The result of `variation` of `plan` from its trials, its aggregate (across the trials)
/// written under `base`: what a sweep does after each variation, and what `ringperf merge`
/// does after merging each variation's shards.
///
/// # Errors
/// The aggregate cannot be written.
pub fn variation_result(
    plan: &SweepPlan,
    base: &Path,
    model: &str,
    variation: Variation,
    ended: Ended,
) -> Result<VariationResult, SweepError> {
    let runs = runs_of(&ended.trials);
    let aggregate =
        aggregate::aggregate(&runs, plan.confidence_level, plan.trial_cooldown_seconds).ok();
    let client_fell_behind = ended.trials.iter().any(|t| t.outcome.client_fell_behind);
    let result = VariationResult {
        variation,
        trials: ended.trials,
        runs,
        aggregate,
        client_fell_behind,
        cancelled: ended.cancelled,
        convergence: ended.convergence,
    };
    if let Some(a) = &result.aggregate {
        super::output::write_variation_aggregate(plan, base, model, &result, a)?;
    }
    Ok(result)
}

/// The validated configuration of `variation`'s trial `trial`: its plan resolved as a single
/// run's is, echoing the sweep's own command line.
///
/// # Errors
/// The variation is refused ([`SweepError::Variation`]).
pub fn config_of(
    plan: &SweepPlan,
    variation: &Variation,
    trial: u32,
    is_tty: bool,
) -> Result<Config, SweepError> {
    let run = plan.plan_of(variation, trial)?;
    config_of_plan(plan, variation, &run, trial, is_tty)
}

/// [`config_of`] from the trial's plan `run` (a sharded sweep's carries the run's own
/// `--start-at`).
fn config_of_plan(
    plan: &SweepPlan,
    variation: &Variation,
    run: &Plan,
    trial: u32,
    is_tty: bool,
) -> Result<Config, SweepError> {
    let mut cfg = Config::from_plan(run, is_tty).map_err(|e| SweepError::Variation {
        label: variation.label.clone(),
        source: Box::new(e),
    })?;
    // The sweep runs the trials itself: each run is one run.
    cfg.multi_run.runs = 1;
    if trial > 0 && plan.warmup_first_trial_only {
        cfg.drop_warmups();
    }
    Ok(cfg)
}

/// Runs the whole plan: every (variation, trial) in the plan's order, the cooldowns between
/// them, convergence per variation, each variation's aggregate, then the sweep aggregate and
/// table.
///
/// # Errors
/// A variation's command line is refused, a run cannot be set up, or files cannot be written.
pub fn run_sweep(plan: SweepPlan, opts: RunOptions, is_tty: bool) -> Result<Outcome, SweepError> {
    run_sweep_results(plan, opts, is_tty).map(|f| f.outcome)
}

/// What a sweep leaves for a step after it (a post-process hook): its outcome, its plan as run,
/// its artifact directory and every variation's result.
pub struct Finished {
    pub outcome: Outcome,
    pub plan: SweepPlan,
    pub base: PathBuf,
    pub results: Vec<VariationResult>,
}

/// [`run_sweep`], keeping what it ran ([`Finished`]).
///
/// # Errors
/// As [`run_sweep`].
pub fn run_sweep_results(
    plan: SweepPlan,
    opts: RunOptions,
    is_tty: bool,
) -> Result<Finished, SweepError> {
    let sweeper = Sweeper::new(plan, opts, is_tty)?;
    let plan = sweeper.plan().clone();
    let results = match plan.mode {
        SweepMode::Independent => {
            let mut results = Vec::new();
            for (i, v) in plan.variations.iter().enumerate() {
                if i > 0 {
                    sweeper.cool_down(plan.variation_cooldown_seconds, "the next variation");
                }
                if sweeper.cancelled().is_some() {
                    break;
                }
                results.push(sweeper.run_variation(v)?);
                sweeper.show_progress(&results);
            }
            results
        }
        SweepMode::Repeated => run_repeated(&sweeper, &plan)?,
    };
    let base = sweeper.artifact_dir().to_path_buf();
    let outcome = sweeper.finish(&results)?;
    Ok(Finished {
        outcome,
        plan,
        base,
        results,
    })
}

/// Each trial's per-request JSONL, in order.
fn records_of(trials: &[TrialResult]) -> Vec<PathBuf> {
    trials.iter().map(|t| t.records.clone()).collect()
}

/// The repeated order: trial 1 of every variation, then trial 2...; a variation whose
/// convergence is met runs no further trial.
fn run_repeated(sweeper: &Sweeper, plan: &SweepPlan) -> Result<Vec<VariationResult>, SweepError> {
    let nv = plan.variations.len();
    let mut trials: Vec<Vec<TrialResult>> = (0..nv).map(|_| Vec::new()).collect();
    let mut decisions: Vec<Option<Decision>> = vec![None; nv];
    let mut first = true;
    'outer: for t in 0..plan.trials {
        for (i, v) in plan.variations.iter().enumerate() {
            if decisions[i].as_ref().is_some_and(|d| d.converged) {
                continue;
            }
            if !first {
                let what = if i == 0 {
                    "the next trial"
                } else {
                    "the next variation"
                };
                let secs = if i == 0 {
                    plan.trial_cooldown_seconds
                } else {
                    plan.variation_cooldown_seconds
                };
                sweeper.cool_down(secs, what);
            }
            first = false;
            let Some(r) = sweeper.run_trial(v, t)? else {
                break 'outer;
            };
            trials[i].push(r);
            if let Some(c) = &plan.convergence {
                let d = convergence::judge(
                    c,
                    &sweeper.runs_of(&trials[i]),
                    &records_of(&trials[i]),
                    plan.confidence_level,
                );
                println!("{}", d.message(c, &v.label));
                decisions[i] = Some(d);
            }
        }
    }
    let mut results = Vec::new();
    for ((v, ts), d) in plan.variations.iter().zip(trials).zip(decisions) {
        if ts.is_empty() {
            continue;
        }
        results.push(sweeper.finish_variation(v.clone(), ts, d)?);
        sweeper.show_progress(&results);
    }
    Ok(results)
}
