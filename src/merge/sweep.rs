//! Merging the shards of a sweep (docs/scale-out.md, "Sweeps"): each shard's artifact
//! directory is a sweep directory ([`SWEEP_SHARD_FILE`] at its top, every run a shard's
//! directory). Every (variation, trial) is merged as one run is, into the same place under the
//! output directory; then each variation's aggregate and the sweep aggregate are written by the
//! sweep's own code from the merged runs, so the output is the sweep directory one process
//! would have written.

use std::path::{Path, PathBuf};

use super::{MergeError, Outcome};
use crate::sweep::run::{Ended, variation_result};
use crate::sweep::shards::{SWEEP_SHARD_FILE, SweepShardManifest};
use crate::sweep::{SWEEPABLE, SweepPlan, TrialResult};
use ringperf_metrics::export::ExportNames;

/// A shard's sweep directory and its manifest.
struct SweepShard {
    dir: PathBuf,
    manifest: SweepShardManifest,
}

/// Whether `dirs` name sharded sweeps: a directory holding [`SWEEP_SHARD_FILE`], or one of whose
/// immediate sub-directories does.
pub fn is_sweep(dirs: &[PathBuf]) -> bool {
    dirs.iter().any(|d| !sweep_dirs(d).is_empty())
}

/// `d` when it holds [`SWEEP_SHARD_FILE`], else its sub-directories that do, in name order.
fn sweep_dirs(d: &Path) -> Vec<PathBuf> {
    if d.join(SWEEP_SHARD_FILE).is_file() {
        return vec![d.to_path_buf()];
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(d)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(SWEEP_SHARD_FILE).is_file())
        .collect();
    subs.sort();
    subs
}

fn refused(msg: String) -> MergeError {
    MergeError::Refused(msg)
}

/// The sharded sweeps `dirs` name, checked to be the shards of one sweep, by index.
fn one_sweep(dirs: &[PathBuf]) -> Result<Vec<SweepShard>, MergeError> {
    let mut found: Vec<SweepShard> = Vec::new();
    for d in dirs {
        let subs = sweep_dirs(d);
        if subs.is_empty() {
            return Err(refused(format!(
                "{} holds no {SWEEP_SHARD_FILE}: it is not a shard of a sharded sweep, and the \
                 other directories are",
                d.display()
            )));
        }
        for dir in subs {
            let manifest = SweepShardManifest::read(&dir).map_err(|e| {
                refused(format!(
                    "cannot read {}: {e}",
                    dir.join(SWEEP_SHARD_FILE).display()
                ))
            })?;
            found.push(SweepShard { dir, manifest });
        }
    }
    found.sort_by_key(|s| s.manifest.index);
    let first = &found[0];
    let (a, m) = (first.dir.display(), &first.manifest);
    for s in &found[1..] {
        let (b, n) = (s.dir.display(), &s.manifest);
        if n.variations != m.variations || n.trials != m.trials {
            return Err(refused(format!(
                "{a} and {b} are different sweeps: variations [{}] × {} trial(s) and [{}] × {} \
                 trial(s); shards of one sweep run the same variations",
                m.variations.join(", "),
                m.trials,
                n.variations.join(", "),
                n.trials
            )));
        }
        if n.count != m.count || n.start_at_ns != m.start_at_ns {
            return Err(refused(format!(
                "{a} (shard {} of {}, start {}) and {b} (shard {} of {}, start {}) are shards \
                 of different sweeps",
                m.index, m.count, m.start_at_ns, n.index, n.count, n.start_at_ns
            )));
        }
    }
    for w in found.windows(2) {
        if w[0].manifest.index == w[1].manifest.index {
            return Err(refused(format!(
                "{} and {} are both shard {}",
                w[0].dir.display(),
                w[1].dir.display(),
                w[0].manifest.index
            )));
        }
    }
    Ok(found)
}

/// The sweep's plan, its export names and first model, from the plan the lowest shard recorded.
fn plan_of(m: &SweepShardManifest) -> Result<(SweepPlan, ExportNames, String), MergeError> {
    let bad = |e: String| refused(format!("cannot rebuild the sweep from its plan: {e}"));
    let lists = m
        .lists
        .iter()
        .map(|(path, values)| {
            SWEEPABLE
                .iter()
                .find(|f| f.path == path)
                .map(|f| (f, values.clone()))
                .ok_or_else(|| bad(format!("{path} is not a swept parameter")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut plan = SweepPlan::from_cli(&m.plan, &lists)
        .map_err(|e| bad(e.to_string()))?
        .ok_or_else(|| bad("it is not a sweep".into()))?;
    let args = &m.plan.settings;
    let sla =
        crate::search::config::plain_sweep_sla(&args.search).map_err(|e| bad(e.to_string()))?;
    plan.annotations = crate::search::run::annotations(&sla, None);
    let names = ExportNames::new(args.profile_export_prefix.as_deref());
    let model = args.model_names.first().cloned().unwrap_or_default();
    Ok((plan, names, model))
}

/// The merge's output directory: `--artifact-dir`, else `merged` beside the first shard; never
/// a shard's directory or inside one.
fn out_dir(given: Option<&Path>, shards: &[SweepShard]) -> Result<PathBuf, MergeError> {
    let out = given.map_or_else(
        || {
            let first = &shards[0].dir;
            first
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join("merged")
        },
        Path::to_path_buf,
    );
    let real_out = super::inputs::resolved(&out);
    for s in shards {
        if real_out.starts_with(super::inputs::resolved(&s.dir)) {
            return Err(refused(format!(
                "the merge would write into {}, which is shard {}'s directory {} or inside it; \
                 choose another --artifact-dir",
                out.display(),
                s.manifest.index,
                s.dir.display()
            )));
        }
    }
    Ok(out)
}

/// The error requests of a merged run's summary JSON (over its shards).
fn errors_of(summary: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(summary) else {
        return 0;
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    v.pointer("/ringperf/shards")
        .and_then(serde_json::Value::as_array)
        .map_or(0, |a| {
            a.iter()
                .filter_map(|s| {
                    s.get("error_request_count")
                        .and_then(serde_json::Value::as_u64)
                })
                .sum()
        })
}

/// Merges the sharded sweeps `args` names (module docs).
///
/// # Errors
/// As [`super::run`], and two shards of different sweeps.
pub fn run(dirs: &[PathBuf], artifact_dir: Option<&Path>) -> Result<Outcome, MergeError> {
    let shards = one_sweep(dirs)?;
    let out = out_dir(artifact_dir, &shards)?;
    let (plan, names, model) = plan_of(&shards[0].manifest)?;
    let count = shards[0].manifest.count;
    if shards.len() < count as usize {
        let have: Vec<String> = shards
            .iter()
            .map(|s| s.manifest.index.to_string())
            .collect();
        eprintln!(
            "ringperf: merge: warning: only shard(s) {} of {count} given: every merged run is \
             incomplete",
            have.join(", ")
        );
    }
    let failed = |e: crate::sweep::SweepError| MergeError::Failed(e.to_string());
    let mut outcome = Outcome {
        artifact_dir: out.clone(),
        complete: true,
        successes: 0,
        client_fell_behind: false,
        fails_client_health: false,
    };
    let mut trials: Vec<Vec<TrialResult>> = plan.variations.iter().map(|_| Vec::new()).collect();
    for (vi, t) in plan.run_order() {
        let v = &plan.variations[vi];
        let dirs: Vec<PathBuf> = shards
            .iter()
            .map(|s| plan.run_dir(&s.dir, v, t))
            .filter(|d| {
                d.join(ringperf_metrics::export::shard::SHARD_FILE)
                    .is_file()
            })
            .collect();
        if dirs.is_empty() {
            continue;
        }
        let dir = plan.run_dir(&out, v, t);
        println!(
            "Merging variation {} of {} ({}), trial {}: {} shard(s)",
            vi + 1,
            plan.variations.len(),
            v.label,
            t + 1,
            dirs.len()
        );
        let merged = super::run_one(&dirs, Some(&dir))?;
        outcome.complete &= merged.complete;
        outcome.successes += merged.successes;
        outcome.client_fell_behind |= merged.client_fell_behind;
        outcome.fails_client_health |= merged.fails_client_health;
        let summary = dir.join(&names.json);
        let records = dir.join(&names.jsonl);
        trials[vi].push(TrialResult {
            trial: t,
            outcome: crate::run::Outcome {
                successes: merged.successes,
                errors: errors_of(&summary),
                stopped: None,
                client_fell_behind: merged.client_fell_behind,
                client_lag_enforced: merged.fails_client_health,
                artifact_dir: dir.clone(),
            },
            dir,
            summary,
            records,
        });
    }
    let mut results = Vec::new();
    for (v, ts) in plan.variations.iter().zip(trials) {
        if ts.is_empty() {
            continue;
        }
        let ended = Ended {
            trials: ts,
            cancelled: false,
            convergence: None,
        };
        results.push(variation_result(&plan, &out, &model, v.clone(), ended).map_err(failed)?);
    }
    let written = crate::sweep::output::write_sweep(&plan, &out, &results).map_err(failed)?;
    for (label, path) in written {
        println!("{label}: {}", path.display());
    }
    Ok(outcome)
}
