//! Stage 4 of a run, finishing and exporting: the workers and the aggregator stopped, the
//! collectors' final scrapes, the run's account of itself ([`RunInfo`], threads, client
//! health), every export (summary files, per-phase files, timeslices, the console), then, last,
//! the results-ready marker and the console on stdout.

use std::io::Write;
use std::path::PathBuf;

use super::error::{RunError, SetupKind};
use super::phases::PhaseTimes;
use super::prepare::Prepared;
use super::start::{Collectors, Started};
use super::{Outcome, gpu_telemetry, health, log, server_metrics, write_file};
use crate::config::{Config, ExportLevel};
use ringperf_engine::worker::WorkerCpu;
use ringperf_io::control::{RunControl, StopReason};
use ringperf_metrics::aggregate::Summary;
use ringperf_metrics::aggregate::health::HostLoad;
use ringperf_metrics::export::RunInfo;
use ringperf_metrics::export::phases::PhaseRun;
use ringperf_metrics::server_metrics::export::phase::PhaseIdent;
use ringperf_wire::record::Phase;

/// The files the console footer lists: `(label, path)`.
type Files = Vec<(&'static str, PathBuf)>;

/// What the run measured, once its threads are done.
struct Measured {
    collected: ringperf_engine::aggregator::Collected,
    worker_cpu: Vec<WorkerCpu>,
    stopped: Option<StopReason>,
    /// Profiling's statistics, and warmup's when it ran.
    summary: Summary,
    warmup: Option<Summary>,
    /// A run phase by phase ([`Config::phase_by_phase`]): each phase's statistics, by its
    /// number in the run, as far as the run went.
    by_phase: Vec<Summary>,
    /// Each phase's start and end, as far as the run went.
    windows: Vec<(u64, u64)>,
    /// What else ran on the host from the workers' start to their end.
    host: Option<HostLoad>,
}

/// Stops the threads, writes every artifact and says how the run ended.
pub(super) fn finish(
    cfg: &Config,
    control: &RunControl,
    prepared: &Prepared,
    started: Started,
    times: &PhaseTimes,
) -> Result<Outcome, RunError> {
    let Started {
        aggregator,
        workers,
        driver,
        collectors,
        host,
        api,
        ..
    } = started;
    let worker_cores: Vec<usize> = workers.pinned.iter().flatten().copied().collect();
    let worker_cpu = workers.shutdown();
    let mut collectors = collectors;
    // The network probes' top-up, before the statistics subtract their RTT.
    let probes = (collectors.network.take())
        .map(|p| p.finish(&prepared.dir, &prepared.names.network_latency_jsonl));
    let host = host.and_then(|start| {
        let start = start.snapshot();
        super::host::Snapshot::take()
            .map(|end| start.load_until(&end, &worker_cores, super::host::TICK_NS))
    });
    let collected = aggregator
        .join()
        .map_err(|_| RunError::new(SetupKind::Threads, "the aggregator thread panicked"))?;
    // Every record is in: the results are computed and written now.
    if let Some(a) = &api {
        a.set_state(crate::api::SystemState::Processing);
    }
    if let Some(e) = &collected.jsonl_error {
        eprintln!("ringperf: warning: {e}");
    }
    let kinds: Vec<Phase> = cfg.phase_list().iter().map(|p| p.kind).collect();
    let mut m = measured(control, collected, worker_cpu, (times, &kinds));
    m.host = host;
    if let Some(rtt_ns) = network_rtt(cfg, probes.as_ref()) {
        let adjusted = m.collected.profiling.network_adjusted(rtt_ns);
        m.summary.results.extend(adjusted);
    }
    if prepared.kernel_stamps && m.summary.receive_lag.is_none() && m.summary.dispatch_lag.is_some()
    {
        log(
            cfg,
            "no read came with a kernel receive stamp: the metrics used user-space stamps",
        );
    }
    let mut run_info = run_info(cfg, prepared, &m, times, driver);
    // Ctrl-C: the final server-metrics scrape is taken now, not after the flush period.
    if let (Some(StopReason::Signal(name)), Some(s)) =
        (control.reason(), collectors.server_metrics.as_mut())
    {
        s.skip_flush(name);
    }
    let (gpu, sm) = finish_collectors(collectors, cfg, prepared, &run_info, times);
    // AIPerf joins the GPU energy-efficiency metrics to the profiling results after aggregation.
    let energy = gpu.efficiency(cfg, &m.summary);
    m.summary.results.extend(energy);
    let health = account(cfg, &mut run_info, &m, &sm, &gpu);
    let spec_table = sm.spec_decode_table.clone();
    let doc = ringperf_metrics::export::summary_doc(
        &m.summary,
        m.warmup.as_ref(),
        &run_info,
        gpu.sections().as_ref(),
    );
    let files = write_exports(cfg, prepared, &m, &run_info, (&gpu, &doc), sm, times)?;
    write_console(
        cfg,
        prepared,
        &m,
        &run_info,
        (&gpu, spec_table.as_deref()),
        &files,
    )?;
    // The live API serves the results (the summary JSON's document, written or not), and the
    // artifacts beside them.
    if let Some(a) = api {
        a.results(doc, &prepared.dir, run_info.was_cancelled);
    }
    Ok(outcome(m, health, prepared.dir.clone()))
}

/// The RTT the network-adjusted latencies subtract, ns, said on stderr as AIPerf says it:
/// `--network-latency-mean`'s, or the mean of the automatic probes; `None` without either, for
/// a mean of 0, or when no probe succeeded (a warning).
fn network_rtt(cfg: &Config, probes: Option<&super::network::Measured>) -> Option<f64> {
    use crate::config::network::NetworkLatency;
    let (rtt_ns, how) = match cfg.network_latency {
        NetworkLatency::Off => return None,
        NetworkLatency::Mean(ms) => (ms * 1e6, format!("a fixed mean RTT of {ms:.3} ms")),
        NetworkLatency::Automatic { .. } => {
            let Some((ns, n)) = probes.and_then(super::network::Measured::mean_rtt_ns) else {
                eprintln!(
                    "ringperf: warning: network latency calibration enabled but no successful \
                     RTT probes were collected; skipping network_adjusted_* metrics."
                );
                return None;
            };
            (
                ns,
                format!(
                    "measured mean RTT of {:.3} ms (over {n} TCP-handshake probes)",
                    ns / 1e6
                ),
            )
        }
    };
    if rtt_ns <= 0.0 {
        return None;
    }
    eprintln!(
        "ringperf: network latency calibration: subtracting {how} from latency metrics \
         (network_adjusted_* metrics)."
    );
    Some(rtt_ns)
}

/// The statistics of each phase; sweep-line windows start at each phase's start, as AIPerf's
/// do.
fn measured(
    control: &RunControl,
    collected: ringperf_engine::aggregator::Collected,
    worker_cpu: Vec<WorkerCpu>,
    (times, kinds): (&PhaseTimes, &[Phase]),
) -> Measured {
    let stopped = control.reason();
    let mut collected = collected;
    // Phase by phase: the profiling rates are over the sum of each profiling phase's start to
    // its last response (AIPerf's rule); each phase's own figures are over its own span.
    // A phase's end: its last answer, when that came after the phase handed over to a seamless
    // one (as AIPerf's manifest has it); else when it ended.
    let windows: Vec<(u64, u64)> = (times.phases.iter().enumerate())
        .map(|(i, &(start, end))| {
            let last = (collected.by_phase.get(i))
                .and_then(|a| a.max_response_wall_ns())
                .unwrap_or(0);
            (start, end.max(last))
        })
        .collect();
    if !collected.by_phase.is_empty() {
        let active: u64 = (collected.by_phase.iter().zip(&windows).zip(kinds))
            .filter(|(_, kind)| **kind == Phase::Profiling)
            .filter_map(|((acc, (start, _)), _)| {
                acc.max_response_wall_ns().map(|e| e.saturating_sub(*start))
            })
            .sum();
        if active > 0 {
            collected.profiling.set_active_duration_ns(active);
        }
    }
    let by_phase: Vec<Summary> = (collected.by_phase.iter().zip(&windows))
        .map(|(acc, (start, _))| acc.finish_from(Some(*start)))
        .collect();
    let summary = collected.profiling.finish_from(Some(times.start_wall_ns));
    if let Some(line) = replay_degraded_warning(&summary) {
        eprintln!("ringperf: warning: {line}");
    }
    let warmup = collected.warmup_seen.then(|| {
        collected
            .warmup
            .finish_from(times.warmup.map(|(start, _)| start))
    });
    Measured {
        collected,
        worker_cpu,
        stopped,
        summary,
        warmup,
        by_phase,
        windows,
        host: None,
    }
}

/// AIPerf 0.13's one warning for a fixed-schedule replay flagged `replay_sched_degraded`
/// (docs/metrics.md, "Replay schedule fidelity"); `None` when the replay kept up.
fn replay_degraded_warning(summary: &ringperf_metrics::aggregate::Summary) -> Option<String> {
    use ringperf_metrics::aggregate::MetricId as M;
    if summary.value(M::ReplaySchedDegraded)? < 1.0 {
        return None;
    }
    let lag = |id: M| summary.value(id).unwrap_or(f64::NAN);
    Some(format!(
        "Replay schedule degraded: anchored send lag p50={:.0} ms, p90={:.0} ms, p99={:.0} ms \
         exceeds {:.0} ms. Request timing no longer tracks the recorded schedule; consider \
         lowering replay_speedup or the offered load.",
        lag(M::ReplaySchedLagP50),
        lag(M::ReplaySchedLagP90),
        lag(M::ReplaySchedLagP99),
        ringperf_metrics::aggregate::accumulator::REPLAY_SCHED_DEGRADED_MS,
    ))
}

/// Each phase's kind, name and wall-clock window, in the order they ran.
fn phase_spans(
    cfg: &Config,
    m: &Measured,
    times: &PhaseTimes,
) -> Vec<ringperf_metrics::export::PhaseSpan> {
    let layout = cfg.phase_layout();
    let span = |kind, index, (start_ns, end_ns): (u64, u64)| {
        let tag = layout.tag(kind, index);
        ringperf_metrics::export::PhaseSpan {
            kind,
            name: tag.name.to_owned(),
            start_ns,
            end_ns,
        }
    };
    if m.by_phase.is_empty() {
        let warmup =
            (times.warmup.filter(|_| m.warmup.is_some())).map(|w| span(Phase::Warmup, None, w));
        let profiling = span(
            Phase::Profiling,
            None,
            (times.start_wall_ns, times.end_wall_ns),
        );
        warmup.into_iter().chain([profiling]).collect()
    } else {
        (layout.phases.iter().zip(&m.windows).enumerate())
            .map(|(i, ((kind, _), w))| span(*kind, Some(i as u8), *w))
            .collect()
    }
}

/// The run's description every export carries (threads and client health come later).
fn run_info(
    cfg: &Config,
    prepared: &Prepared,
    m: &Measured,
    times: &PhaseTimes,
    io_driver: String,
) -> RunInfo {
    let clock = prepared.shared.clock;
    RunInfo {
        // The shards of a run share its id.
        benchmark_id: prepared.benchmark_id.clone(),
        aiperf_version: ringperf_metrics::export::AIPERF_VERSION.into(),
        cli_command: cfg.cli_command.clone(),
        input_config: cfg.input_config(),
        start_wall_ns: times.start_wall_ns,
        end_wall_ns: times.end_wall_ns,
        was_cancelled: m.stopped.is_some(),
        // AIPerf: `is_complete = incomplete_reason is None`, always written.
        is_complete: Some(m.stopped.is_none()),
        incomplete_reason: m.stopped.as_ref().map(ToString::to_string),
        metrics_title: cfg.endpoint.metrics_title().to_string(),
        io_driver,
        workers: cfg.workers,
        ring_stalls: m.collected.ring_stalls,
        random_seed: cfg.seed_given.then_some(cfg.seed),
        trial: cfg.multi_run.trial.clone(),
        monotonic_origin_ns: clock.raw_ns(0),
        wall_origin_ns: clock.wall_origin_ns(),
        realtime_offset: Some(clock.realtime_offset()),
        timestamps: if prepared.kernel_stamps {
            "kernel"
        } else {
            "user"
        },
        shard: prepared.identity.as_ref().map(|i| i.info(times.start_at)),
        merge: None,
        threads: Vec::new(),
        tokenizer_loaded: Some(prepared.tokenizer.loaded()),
        client_health: None,
        branch_stats: times.branches.map(|b| b.fields().to_vec()),
        phases: phase_spans(cfg, m, times),
        scenario: cfg.scenario.as_ref().map(|s| {
            let mut invalid_reasons = Vec::new();
            if !s.submission_valid() {
                invalid_reasons.push("unsafe_override".to_string());
            }
            // More than 1 % of the requests over the model's context (AIPerf's
            // `AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT`).
            use ringperf_metrics::aggregate::MetricId as M;
            // The records left out of the metrics count on both sides (AIPerf's skip path).
            let v = |id| m.summary.value(id).unwrap_or(0.0);
            let skipped = m.summary.skipped_context_overflows as f64;
            let sent = v(M::RequestCount) + v(M::ErrorRequestCount) + skipped;
            if sent > 0.0 && (v(M::ContextOverflowCount) + skipped) / sent > 0.01 {
                invalid_reasons.push("context_overflow_rate_exceeded".to_string());
            }
            if m.stopped.is_some() {
                invalid_reasons.push("run_cancelled".to_string());
            }
            ringperf_metrics::export::ScenarioVerdict {
                name: s.name.to_string(),
                invalid_reasons,
            }
        }),
    }
}

/// Server metrics: flush period, final scrape, exports (listed in the console footer). Before
/// the summary, which carries the scraper thread's CPU time; before the per-phase files, which
/// carry each phase's server metrics. GPU telemetry first: its final scrape is due now, the
/// server metrics' after their flush period.
fn finish_collectors(
    collectors: Collectors,
    cfg: &Config,
    prepared: &Prepared,
    run_info: &RunInfo,
    times: &PhaseTimes,
) -> (gpu_telemetry::Finished, server_metrics::Finished) {
    let (dir, names) = (&prepared.dir, &prepared.names);
    let gpu = gpu_telemetry::finish(
        collectors.gpu,
        dir,
        names,
        times.start_wall_ns,
        times.end_wall_ns,
    );
    let sm = server_metrics::finish(collectors.server_metrics, cfg, run_info, dir, names);
    (gpu, sm)
}

/// The run's threads and their CPU time, and the client-health verdict, into `run_info`;
/// whether the client itself fell behind, and whether `--max-client-lag-us` was given.
fn account(
    cfg: &Config,
    run_info: &mut RunInfo,
    m: &Measured,
    sm: &server_metrics::Finished,
    gpu: &gpu_telemetry::Finished,
) -> (bool, bool) {
    run_info.threads = health::threads(
        ringperf_wire::clock::thread_cpu_ns(),
        m.collected.cpu_ns,
        sm.scraper_cpu_ns,
        &m.worker_cpu,
    );
    // The GPU scraper's thread, after the server-metrics one.
    if let Some(cpu_ns) = gpu.scraper_cpu_ns {
        let at = run_info
            .threads
            .iter()
            .position(|t| t.name.starts_with("worker_"))
            .unwrap_or(run_info.threads.len());
        run_info.threads.insert(
            at,
            ringperf_metrics::export::ThreadCpu {
                name: "gpu_scraper".into(),
                cpu_ns,
                busy_fraction: None,
                naps: None,
                warm_pool: None,
                idle_wakes: None,
            },
        );
    }
    let verdict = health::verdict(
        &m.summary,
        &run_info.threads,
        run_info.ring_stalls,
        m.worker_cpu.iter().map(|w| w.descriptor_waits).sum(),
        (
            m.worker_cpu.iter().map(|w| w.connection_waits).sum(),
            cfg.connection_limit,
        ),
        cfg.max_client_lag_ns,
        health::Cores::of(cfg.mock.is_some(), &m.worker_cpu, m.host.clone()),
    );
    let said = (!verdict.kept_up, verdict.limits.enforced);
    run_info.client_health = Some(verdict);
    said
}

/// The summary files, the per-phase files and the timeslices; the files the footer lists first,
/// in AIPerf 0.13's exporter order: CSV, JSON, raw records, server metrics, timeslices, then
/// ringperf's records and console lines. AIPerf prints no line for the per-record JSONL,
/// inputs.json or the server metrics JSONL (ringperf names them after these, with the rest of
/// its files), nor for its log file, which ringperf does not write.
fn write_exports(
    cfg: &Config,
    prepared: &Prepared,
    m: &Measured,
    run_info: &RunInfo,
    (gpu, doc): (&gpu_telemetry::Finished, &serde_json::Value),
    sm: server_metrics::Finished,
    times: &PhaseTimes,
) -> Result<Files, RunError> {
    let (dir, names) = (&prepared.dir, &prepared.names);
    let mut files = ringperf_metrics::export::write_summary_files_with_gpu(
        dir,
        names,
        &m.summary,
        (doc, cfg.plan().file_only.summary_json()),
        gpu.sections().as_ref(),
    )
    .map_err(|e| {
        artifacts(format!(
            "cannot write the summary files in {}: {e}",
            dir.display()
        ))
    })?;
    write_phase_files(cfg, prepared, m, run_info, &sm, times)?;
    if cfg.export_level == ExportLevel::Raw {
        files.push(("Raw Records", dir.join(&names.raw_jsonl)));
    }
    files.extend(sm.files);
    if let Some(t) = &m.collected.timeslices {
        let slices = t.finish();
        if !slices.is_empty() {
            use ringperf_metrics::export::timeslices::{timeslices_csv, timeslices_json_string};
            let csv = dir.join(&names.timeslices_csv);
            write_file(&csv, timeslices_csv(&slices).as_bytes())?;
            let json = dir.join(&names.timeslices_json);
            write_file(
                &json,
                timeslices_json_string(&slices, &run_info.input_config).as_bytes(),
            )?;
            files.push(("Timeslice CSV Export", csv));
            files.push(("Timeslice JSON Export", json));
        }
    }
    // `--export-outputs-json`: AIPerf's exporter after the timeslices.
    if let Some(o) = &m.collected.outputs {
        use ringperf_metrics::export::outputs_json::{FOOTER_LABEL, OUTPUTS_JSON_FILE};
        let written = o.write(dir).map_err(|e| {
            artifacts(format!(
                "cannot write {}: {e}",
                dir.join(OUTPUTS_JSON_FILE).display()
            ))
        })?;
        if let Some(path) = written {
            files.push((FOOTER_LABEL, path));
        }
    }
    // ringperf's own lines after AIPerf's: the per-request records and the console export
    // (AIPerf writes both files without naming them).
    if cfg.export_level.records() {
        files.push(("Records Export", dir.join(&names.jsonl)));
    }
    files.push(("Console Export", dir.join(&names.console_txt)));
    Ok(files)
}

/// `phases/<phase>/`: each phase's summary and server metrics.
fn write_phase_files(
    cfg: &Config,
    prepared: &Prepared,
    m: &Measured,
    run_info: &RunInfo,
    sm: &server_metrics::Finished,
    times: &PhaseTimes,
) -> Result<(), RunError> {
    // Every phase's number and name from the run's one layout.
    let layout = cfg.phase_layout();
    let mut phase_runs: Vec<PhaseRun<'_>> = Vec::new();
    let run = |tag, summary, (start_wall_ns, end_wall_ns): (u64, u64)| PhaseRun {
        tag,
        summary,
        start_wall_ns,
        end_wall_ns,
        was_cancelled: run_info.was_cancelled,
        server_metrics: None,
    };
    if m.by_phase.is_empty() {
        // A warmup and the profiling phase: the run's two summaries.
        if let (Some(w), Some(window)) = (m.warmup.as_ref(), times.warmup) {
            phase_runs.push(run(layout.tag(Phase::Warmup, None), w, window));
        }
        let window = (times.start_wall_ns, times.end_wall_ns);
        phase_runs.push(run(layout.tag(Phase::Profiling, None), &m.summary, window));
    } else {
        for (i, (summary, window)) in m.by_phase.iter().zip(&m.windows).enumerate() {
            let kind = layout.phases.get(i).map_or(Phase::Profiling, |p| p.0);
            phase_runs.push(run(layout.tag(kind, Some(i as u8)), summary, *window));
        }
    }
    // Each phase's server metrics: the scrapes sent during it (by its phase number when the
    // run has several profiling phases).
    let sm_data: Vec<Option<serde_json::Value>> = (phase_runs.iter())
        .map(|p| {
            sm.phase_data(PhaseIdent {
                tag: p.tag,
                one_of_several: !m.by_phase.is_empty(),
            })
        })
        .collect();
    for (p, data) in phase_runs.iter_mut().zip(&sm_data) {
        p.server_metrics = data.as_ref();
    }
    let dir = &prepared.dir;
    ringperf_metrics::export::phases::write_phase_artifacts(
        dir,
        &prepared.names,
        &phase_runs,
        run_info,
        cfg.plan().file_only.summary_json(),
    )
    .map_err(|e| {
        artifacts(format!(
            "cannot write the per-phase files in {}: {e}",
            dir.display()
        ))
    })?;
    Ok(())
}

/// The console: its file (the console export alone, as AIPerf's: no footer), then the
/// results-ready marker (last: every artifact is on disk), then stdout with the footer, which
/// names every file the run wrote ([`ringperf_metrics::export::owned::unlisted`] after AIPerf's lines).
fn write_console(
    cfg: &Config,
    prepared: &Prepared,
    m: &Measured,
    run_info: &RunInfo,
    (gpu, spec_table): (&gpu_telemetry::Finished, Option<&str>),
    files: &Files,
) -> Result<(), RunError> {
    let dir = &prepared.dir;
    let mut console = ringperf_metrics::export::render_console(&m.summary, run_info);
    console.push_str(&ringperf_metrics::export::render_gpu_power(
        &m.summary,
        &gpu.platforms(),
    ));
    // AIPerf's SGLang speculative-decoding table, after the power efficiency, before the GPUs.
    if let Some(t) = spec_table {
        console.push('\n');
        console.push_str(t);
    }
    if let Some(t) = &gpu.telemetry {
        console.push('\n');
        console.push_str(&t.console());
    }
    // `--show-trace-timing`: AIPerf prints the trace table before every other table.
    if cfg.show_trace_timing
        && let Some(t) =
            ringperf_metrics::export::trace_console::render_trace_timing(&m.summary, "ringperf")
    {
        console.insert_str(1, &format!("\n{t}"));
    }
    let stopped_line = m
        .stopped
        .as_ref()
        .map(|reason| format!("Stopped early: {reason}\n"))
        .unwrap_or_default();
    write_file(
        &dir.join(&prepared.names.console_txt),
        format!("{console}{stopped_line}").as_bytes(),
    )?;
    ringperf_metrics::export::marker::write_ready_marker(dir, run_info.was_cancelled, &[])
        .map_err(|e| {
            artifacts(format!(
                "cannot write the results-ready marker in {}: {e}",
                dir.display()
            ))
        })?;
    // Every file of the run is on disk: the footer names each, AIPerf's lines first.
    let mut listed = files.clone();
    listed.extend(ringperf_metrics::export::owned::unlisted(
        dir,
        &prepared.names,
        files,
    ));
    console.push_str(&ringperf_metrics::export::render_footer(
        &m.summary, run_info, &listed,
    ));
    console.push_str(&stopped_line);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(console.as_bytes());
    let _ = out.flush();
    Ok(())
}

/// How the run ended (`health`: the client itself fell behind, `--max-client-lag-us` was
/// given); with no success, the most common error on stderr.
fn outcome(m: Measured, health: (bool, bool), artifact_dir: PathBuf) -> Outcome {
    let successes = m.collected.profiling.request_count();
    let errors = m.collected.profiling.error_request_count();
    if successes == 0 {
        let why = m
            .summary
            .error_summary
            .first()
            .map(|e| format!("{} ({})", e.message, e.kind))
            .unwrap_or_else(|| "no request was sent".into());
        eprintln!("ringperf: no request succeeded ({errors} failed); most common error: {why}");
    }
    Outcome {
        successes,
        errors,
        stopped: m.stopped,
        client_fell_behind: health.0,
        client_lag_enforced: health.1,
        artifact_dir,
    }
}

fn artifacts(message: String) -> RunError {
    RunError::new(SetupKind::Artifacts, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_metrics::aggregate::{MetricId, MetricResult, ResultValue, Summary};

    fn summary(values: &[(MetricId, f64)]) -> Summary {
        Summary {
            results: values
                .iter()
                .map(|&(id, v)| MetricResult {
                    def: id.def(),
                    adjusted: false,
                    value: ResultValue::Scalar(v),
                })
                .collect(),
            error_summary: Vec::new(),
            dispatch_lag: None,
            receive_lag: None,
            kernel_rtt: None,
            spec_decode_histogram: Vec::new(),
            skipped_context_overflows: 0,
        }
    }

    #[test]
    fn a_degraded_replay_is_one_warning_in_aiperfs_words() {
        use MetricId as M;
        let lags = [
            (M::ReplaySchedLagP50, 12.4),
            (M::ReplaySchedLagP90, 300.0),
            (M::ReplaySchedLagP99, 640.6),
        ];
        let mut degraded = lags.to_vec();
        degraded.push((M::ReplaySchedDegraded, 1.0));
        assert_eq!(
            replay_degraded_warning(&summary(&degraded)).as_deref(),
            Some(
                "Replay schedule degraded: anchored send lag p50=12 ms, p90=300 ms, p99=641 ms \
                 exceeds 500 ms. Request timing no longer tracks the recorded schedule; \
                 consider lowering replay_speedup or the offered load."
            )
        );
        let mut kept_up = lags.to_vec();
        kept_up.push((M::ReplaySchedDegraded, 0.0));
        assert_eq!(replay_degraded_warning(&summary(&kept_up)), None);
        assert_eq!(replay_degraded_warning(&summary(&[])), None);
    }
}
