//! The merged run's artifacts, written by the exporters a live run uses: the summary JSON and
//! CSV, the per-phase files and their manifest, the timeslices, the console export; beside
//! them, copied verbatim, the server-metrics exports of the shard that scraped and the lowest
//! shard's `inputs.json`; the results-ready marker last.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::MergeError;
use super::inputs::{Run, ShardSummary, SummaryError};
use super::records::{Span, Tally};
use super::settings::Settings;
use ringperf_metrics::aggregate::Summary;
use ringperf_metrics::export::phases::{PHASES_DIR, PhaseRun, SERVER_METRICS_FILE};
use ringperf_metrics::export::timeslices::SliceResult;
use ringperf_metrics::export::{ExportNames, MergeInfo, RunInfo, ShardHealth, ShardStatus};
use ringperf_wire::record::Phase;

/// What the merge learned of one shard before reading its records.
#[derive(Debug)]
pub struct ShardState {
    /// Its summary JSON, or why it has none.
    pub summary: Result<ShardSummary, SummaryError>,
    /// Its phases' `(start_ns, end_ns)` from its `phase_manifest.json`.
    pub spans: BTreeMap<String, (u64, u64)>,
    /// It wrote a per-record JSONL.
    pub has_records: bool,
}

/// The merged run as written.
#[derive(Debug)]
pub struct Written {
    /// What `profile` would print: the console export, the shards, the footer.
    pub console: String,
    /// Every shard of the run, by index.
    pub shards: Vec<ShardHealth>,
    /// Every shard is present and finished.
    pub complete: bool,
    /// Valid profiling records in the merged run.
    pub successes: u64,
    /// A shard's client fell behind under its `--max-client-lag-us`.
    pub client_fell_behind: bool,
    pub fails_client_health: bool,
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), MergeError> {
    std::fs::write(path, bytes)
        .map_err(|e| MergeError::Failed(format!("cannot write {}: {e}", path.display())))
}

fn copy(from: &Path, to: &Path) -> Result<(), MergeError> {
    std::fs::copy(from, to).map(|_| ()).map_err(|e| {
        MergeError::Failed(format!(
            "cannot copy {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })
}

/// Every shard's health, by index, missing ones included.
fn health(run: &Run, states: &[ShardState], tally: &Tally, jsonl: &str) -> Vec<ShardHealth> {
    (0..run.count)
        .map(|index| {
            let Some(pos) = run.shards.iter().position(|s| s.manifest.index == index) else {
                return ShardHealth::missing(index);
            };
            let (shard, state, t) = (&run.shards[pos], &states[pos], &tally.shards[pos]);
            let mut why: Vec<String> = Vec::new();
            match &state.summary {
                Ok(s) => why.extend(s.trouble()),
                Err(e) => why.push(e.to_string()),
            }
            if !state.has_records {
                why.push(format!("no {jsonl}"));
            }
            if t.torn_lines > 0 {
                why.push(format!("a torn last line of its {jsonl} was skipped"));
            }
            let summary = state.summary.as_ref().ok();
            ShardHealth {
                index,
                dir: Some(shard.dir.clone()),
                status: if why.is_empty() {
                    ShardStatus::Ok
                } else {
                    ShardStatus::Failed(why.join("; "))
                },
                request_count: t.request_count,
                error_request_count: t.error_request_count,
                dispatch_lag: t.dispatch_lag(),
                ring_stalls: summary.and_then(|s| s.ring_stalls),
                workers: summary.and_then(|s| s.workers),
                io_driver: summary.and_then(|s| s.io_driver.clone()),
                start_lag_ns: summary.and_then(|s| s.start_lag_ns),
                server_metrics: shard.manifest.server_metrics,
                torn_lines: t.torn_lines,
                client_health: summary.and_then(|s| s.client_health.clone()),
            }
        })
        .collect()
}

/// A phase's window: from the earliest start to the latest end any shard's phase manifest
/// gives, widened to the records' own span (a failed shard may have written no manifest).
fn window(states: &[ShardState], phase: Phase, records: Option<Span>) -> Option<(u64, u64)> {
    let mut span = records.map(|s| (s.start_ns, s.end_ns));
    for (start, end) in states.iter().filter_map(|s| s.spans.get(phase.as_str())) {
        span = Some(match span {
            Some((a, b)) => (a.min(*start), b.max(*end)),
            None => (*start, *end),
        });
    }
    span
}

/// `input_config` with `artifacts.dir` naming the merged directory (first, as the echo puts it).
fn with_artifact_dir(mut input_config: Value, out: &Path) -> Value {
    if let Some(Value::Object(a)) = input_config.get_mut("artifacts") {
        let mut m = Map::new();
        m.insert("dir".into(), Value::from(out.display().to_string()));
        for (k, v) in std::mem::take(a) {
            if k != "dir" {
                m.insert(k, v);
            }
        }
        *a = m;
    }
    input_config
}

/// One line per shard after the console tables: requests, errors, p99 dispatch lag, start lag
/// and status.
fn shard_lines(run: &Run, shards: &[ShardHealth]) -> String {
    let mut out = format!(
        "Merged run {}: {} of {} shard(s)\n",
        run.run_id,
        run.shards.len(),
        run.count
    );
    for s in shards {
        if s.status == ShardStatus::Missing {
            let _ = writeln!(out, "  shard {}: missing", s.index);
            continue;
        }
        let ms = |ns: f64| format!("{:.3} ms", ns / 1e6);
        let _ = writeln!(
            out,
            "  shard {}: {} requests, {} errors, p99 dispatch lag {}, start lag {}, {}",
            s.index,
            s.request_count,
            s.error_request_count,
            s.dispatch_lag
                .as_ref()
                .map_or("n/a".into(), |l| ms(l.p99_ns)),
            s.start_lag_ns.map_or("n/a".into(), |l| ms(l as f64)),
            shard_status(s)
        );
    }
    out
}

/// A shard's status with its client's verdict: `ok` only for a shard that finished and kept
/// up; a shard whose client fell behind says so whatever its status.
fn shard_status(s: &ShardHealth) -> String {
    match (&s.status, &s.client_health) {
        (ShardStatus::Ok, Some(v)) if v.kept_up => "ok".into(),
        (ShardStatus::Ok, Some(_)) => "finished, client FELL BEHIND".into(),
        (ShardStatus::Ok, None) => "finished, no client-health verdict".into(),
        (status, Some(v)) if !v.kept_up => format!("{status}; client FELL BEHIND"),
        (status, _) => status.to_string(),
    }
}

/// Writes everything but the merged JSONL (already written) into `out`, the marker last.
///
/// # Errors
/// [`MergeError::Failed`]: a file that cannot be written or copied.
pub fn write_artifacts(
    out: &Path,
    run: &Run,
    settings: &Settings,
    states: &[ShardState],
    tally: &Tally,
) -> Result<Written, MergeError> {
    let names = &settings.names;
    let shards = health(run, states, tally, &names.jsonl);
    let incomplete_reason = incomplete_reason(&shards);
    let complete = incomplete_reason.is_none();
    let profiling_window = window(states, Phase::Profiling, tally.profiling_span);
    let warmup_window = window(states, Phase::Warmup, tally.warmup_span);
    let run_info = run_info(
        out,
        run,
        settings,
        states,
        &shards,
        profiling_window,
        incomplete_reason,
    );

    // Sweep-line windows start at each phase's start, as a live run's do.
    let summary = tally
        .profiling
        .finish_from(profiling_window.map(|(start, _)| start));
    let warmup = tally.warmup_seen.then(|| {
        tally
            .warmup
            .finish_from(warmup_window.map(|(start, _)| start))
    });
    let mut files = ringperf_metrics::export::write_summary_files(
        out,
        names,
        &summary,
        warmup.as_ref(),
        &run_info,
    )
    .map_err(|e| {
        MergeError::Failed(format!(
            "cannot write the summary files in {}: {e}",
            out.display()
        ))
    })?;

    // Server metrics: the scraping shard's files, as it wrote them.
    let scraper = run.shards.iter().find(|s| s.manifest.server_metrics);
    if let Some(s) = scraper {
        copy_server_metrics(out, names, &s.dir, &mut files)?;
    }
    let phases = Phases {
        profiling: &summary,
        warmup: warmup.as_ref().zip(warmup_window),
    };
    write_phases(
        out,
        names,
        &run_info,
        &phases,
        scraper.map(|s| s.dir.as_path()),
    )?;

    if let Some(t) = &tally.timeslices {
        write_timeslices(out, names, &t.finish(), &run_info.input_config, &mut files)?;
    }
    let inputs = run.shards[0].dir.join("inputs.json");
    if inputs.is_file() {
        copy(&inputs, &out.join("inputs.json"))?;
    }

    let mut console = write_console(out, run, settings, &shards, &summary, &run_info)?;
    // Last: every artifact is on disk.
    ringperf_metrics::export::marker::write_ready_marker(out, run_info.was_cancelled, &[])
        .map_err(|e| {
            MergeError::Failed(format!(
                "cannot write the results-ready marker in {}: {e}",
                out.display()
            ))
        })?;
    // The footer names every file written, AIPerf's lines first.
    let mut listed = files.clone();
    listed.extend(ringperf_metrics::export::owned::unlisted(
        out, names, &files,
    ));
    console.push_str(&ringperf_metrics::export::render_footer(
        &summary, &run_info, &listed,
    ));
    let health = run_info.merge.as_ref().map(|m| m.client_health());
    let client_fell_behind = health.as_ref().is_some_and(|h| h.kept_up() == Some(false));
    let fails_client_health = health.as_ref().is_some_and(|h| h.fails_run());
    Ok(Written {
        console,
        shards,
        complete,
        successes: tally.profiling.request_count(),
        client_fell_behind,
        fails_client_health,
    })
}

/// Why the merged run is incomplete: each shard that is not ok, in index order; `None` when
/// every shard is.
fn incomplete_reason(shards: &[ShardHealth]) -> Option<String> {
    let trouble: Vec<String> = shards
        .iter()
        .filter(|s| s.status != ShardStatus::Ok)
        .map(|s| format!("shard {} {}", s.index, s.status))
        .collect();
    (!trouble.is_empty()).then(|| trouble.join("; "))
}

/// The merged run's facts: the shards' summaries where they have them (the lowest that finished
/// speaks for the run where one shard must), the merge's settings where none does.
fn run_info(
    out: &Path,
    run: &Run,
    settings: &Settings,
    states: &[ShardState],
    shards: &[ShardHealth],
    profiling_window: Option<(u64, u64)>,
    incomplete_reason: Option<String>,
) -> RunInfo {
    let lowest = states.iter().find_map(|s| s.summary.as_ref().ok());
    let summaries = states.iter().filter_map(|s| s.summary.as_ref().ok());
    let start_at = run.shards[0].manifest.start_at_ns;
    let (start_wall_ns, end_wall_ns) = profiling_window.unwrap_or((start_at, start_at));
    let was_cancelled = states
        .iter()
        .any(|s| s.summary.as_ref().map_or(true, |s| s.was_cancelled));
    RunInfo {
        benchmark_id: run.run_id.clone(),
        aiperf_version: lowest
            .and_then(|s| s.aiperf_version.clone())
            .unwrap_or_else(|| "0.13.0".into()),
        cli_command: lowest
            .and_then(|s| s.cli_command.clone())
            .unwrap_or_else(|| settings.cli_command.clone()),
        input_config: lowest.and_then(|s| s.input_config.clone()).map_or_else(
            || settings.input_config.clone(),
            |v| with_artifact_dir(v, out),
        ),
        start_wall_ns,
        end_wall_ns,
        was_cancelled,
        is_complete: Some(incomplete_reason.is_none()),
        incomplete_reason,
        metrics_title: settings.metrics_title.clone(),
        io_driver: lowest
            .and_then(|s| s.io_driver.clone())
            .unwrap_or_else(|| "unknown".into()),
        workers: summaries.clone().filter_map(|s| s.workers).sum::<u64>() as usize,
        ring_stalls: summaries.filter_map(|s| s.ring_stalls).sum(),
        random_seed: settings.random_seed,
        trial: None,
        monotonic_origin_ns: lowest.and_then(|s| s.clock).map_or(0, |c| c.0),
        wall_origin_ns: lowest.and_then(|s| s.clock).map_or(0, |c| c.1),
        realtime_offset: None,
        timestamps: "unknown",
        shard: None,
        merge: Some(MergeInfo {
            shards: shards.to_vec(),
        }),
        // Each shard's own summary holds its threads; the merged verdict is drawn from the
        // shards' own (`MergeInfo::client_health`).
        threads: Vec::new(),
        tokenizer_loaded: None,
        client_health: None,
        branch_stats: None,
        scenario: None,
        phases: Vec::new(),
    }
}

/// Copies the scraping shard's server-metrics exports from `scraper` into `out`, adding those
/// the footer names to `files`.
fn copy_server_metrics(
    out: &Path,
    names: &ExportNames,
    scraper: &Path,
    files: &mut Vec<(&'static str, PathBuf)>,
) -> Result<(), MergeError> {
    for (name, label) in [
        (&names.server_metrics_csv, Some("Server Metrics CSV Export")),
        (
            &names.server_metrics_json,
            Some("Server Metrics JSON Export"),
        ),
        (
            &names.server_metrics_parquet,
            Some("Server Metrics Parquet Export"),
        ),
        (&names.server_metrics_jsonl, None),
    ] {
        let from = scraper.join(name);
        if from.is_file() {
            copy(&from, &out.join(name))?;
            if let Some(label) = label {
                files.push((label, out.join(name)));
            }
        }
    }
    Ok(())
}

/// The merged phases' results: profiling always, warmup with its window when it ran.
struct Phases<'a> {
    profiling: &'a Summary,
    warmup: Option<(&'a Summary, (u64, u64))>,
}

/// A phase's server-metrics file in the scraping shard's directory and its `data`, when the
/// shard wrote one that parses.
fn phase_server_metrics(scraper: Option<&Path>, phase: Phase) -> Option<(PathBuf, Value)> {
    let path = scraper?
        .join(PHASES_DIR)
        .join(phase.as_str())
        .join(SERVER_METRICS_FILE);
    let v: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    Some((path, v.get("data")?.clone()))
}

/// The per-phase files and their manifest, then the scraping shard's per-phase server-metrics
/// files over those the exporter wrote.
fn write_phases(
    out: &Path,
    names: &ExportNames,
    run_info: &RunInfo,
    phases: &Phases<'_>,
    scraper: Option<&Path>,
) -> Result<(), MergeError> {
    let sm_warmup = phase_server_metrics(scraper, Phase::Warmup);
    let sm_profiling = phase_server_metrics(scraper, Phase::Profiling);
    let mut phase_runs = Vec::new();
    if let Some((w, (start, end))) = phases.warmup {
        phase_runs.push((Phase::Warmup, w, start, end, sm_warmup.as_ref()));
    }
    phase_runs.push((
        Phase::Profiling,
        phases.profiling,
        run_info.start_wall_ns,
        run_info.end_wall_ns,
        sm_profiling.as_ref(),
    ));
    let phase_runs: Vec<PhaseRun<'_>> = phase_runs
        .into_iter()
        .enumerate()
        .map(|(i, (phase, s, start, end, sm))| PhaseRun {
            // Merged shards: one warmup and one profiling phase, named as the flags name them.
            tag: ringperf_metrics::export::jsonl::PhaseTag {
                phase,
                phase_index: i as u32,
                shown_index: Some(i as u32),
                profiling_index: (phase == Phase::Profiling).then_some(0),
                name: phase.as_str(),
            },
            summary: s,
            start_wall_ns: start,
            end_wall_ns: end,
            was_cancelled: run_info.was_cancelled,
            server_metrics: sm.map(|(_, data)| data),
        })
        .collect();
    ringperf_metrics::export::phases::write_phase_artifacts(
        out,
        names,
        &phase_runs,
        run_info,
        true,
    )
    .map_err(|e| {
        MergeError::Failed(format!(
            "cannot write the per-phase files in {}: {e}",
            out.display()
        ))
    })?;
    // The per-phase server-metrics files as the scraping shard wrote them (their header gives
    // the window its server metrics were computed over); the manifest above names them.
    for (phase, sm) in [
        (Phase::Warmup, &sm_warmup),
        (Phase::Profiling, &sm_profiling),
    ] {
        let written = out
            .join(PHASES_DIR)
            .join(phase.as_str())
            .join(SERVER_METRICS_FILE);
        if let Some((from, _)) = sm
            && written.is_file()
        {
            copy(from, &written)?;
        }
    }
    Ok(())
}

/// The timeslice CSV and JSON, when there is a slice; both are added to `files`.
fn write_timeslices(
    out: &Path,
    names: &ExportNames,
    slices: &[SliceResult],
    input_config: &Value,
    files: &mut Vec<(&'static str, PathBuf)>,
) -> Result<(), MergeError> {
    if slices.is_empty() {
        return Ok(());
    }
    use ringperf_metrics::export::timeslices::{timeslices_csv, timeslices_json_string};
    let csv = out.join(&names.timeslices_csv);
    write(&csv, timeslices_csv(slices).as_bytes())?;
    let json = out.join(&names.timeslices_json);
    write(
        &json,
        timeslices_json_string(slices, input_config).as_bytes(),
    )?;
    files.push(("Timeslice CSV Export", csv));
    files.push(("Timeslice JSON Export", json));
    Ok(())
}

/// Writes the console export (tables, trace timing when asked, the shards' lines) and returns
/// what `profile` would print: that and the footer naming `files`.
fn write_console(
    out: &Path,
    run: &Run,
    settings: &Settings,
    shards: &[ShardHealth],
    summary: &Summary,
    run_info: &RunInfo,
) -> Result<String, MergeError> {
    let mut console = ringperf_metrics::export::render_console(summary, run_info);
    if settings.show_trace_timing
        && let Some(t) =
            ringperf_metrics::export::trace_console::render_trace_timing(summary, "ringperf")
    {
        console.insert_str(1, &format!("\n{t}"));
    }
    console.push_str(&shard_lines(run, shards));
    write(&out.join(&settings.names.console_txt), console.as_bytes())?;
    Ok(console)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_names_the_merged_directory_first() {
        let v = serde_json::json!({"artifacts": {"prefix": "p", "dir": "/s0", "auto_plot": false}});
        let got = with_artifact_dir(v, Path::new("/m"));
        let keys: Vec<&String> = got["artifacts"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["dir", "prefix", "auto_plot"]);
        assert_eq!(got["artifacts"]["dir"], "/m");
    }

    #[test]
    fn a_phase_window_spans_every_shard_and_record() {
        let state = |start, end| ShardState {
            summary: Err(SummaryError::Missing {
                file: "s.json".into(),
            }),
            spans: BTreeMap::from([("profiling".to_string(), (start, end))]),
            has_records: true,
        };
        let states = [state(100, 200), state(90, 210)];
        assert_eq!(window(&states, Phase::Profiling, None), Some((90, 210)));
        let late = Span {
            start_ns: 80,
            end_ns: 300,
        };
        assert_eq!(
            window(&states, Phase::Profiling, Some(late)),
            Some((80, 300))
        );
        assert_eq!(window(&states, Phase::Warmup, None), None);
    }
}
