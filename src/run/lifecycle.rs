//! The server-lifecycle calls of a run ([`ringperf_metrics::lab::lifecycle`]) at their places: the wait
//! and the KV-cache reset once the run is prepared (the embedded mock's address is known),
//! before any of its threads start; the profiler around the profiling phase ([`super::phases`]).

use crate::config::Config;
use ringperf_metrics::lab::lifecycle::{self, LifecycleError, Target};

use super::RunError;

fn with_target<T>(cfg: &Config, f: impl FnOnce(&Target<'_>) -> T) -> T {
    let servers = crate::config::lab::servers(&cfg.urls);
    f(&Target {
        servers: &servers,
        models: &cfg.models,
        endpoint: cfg.endpoint,
        headers: &cfg.headers,
    })
}

/// Before the run starts: the wait (once per process per URL and model), then the reset.
pub(super) fn before_run(cfg: &Config) -> Result<(), RunError> {
    let l = &cfg.lifecycle;
    if l.wait.is_none() && l.reset.is_none() {
        return Ok(());
    }
    with_target(cfg, |t| {
        if let Some(w) = &l.wait {
            lifecycle::wait_for_model(w, t)?;
        }
        if let Some(r) = &l.reset {
            lifecycle::reset_kv_cache(r, t)?;
        }
        Ok(())
    })
}

/// Just before the profiling phase: the profiler's start, when asked for.
pub(super) fn start_profiler(cfg: &Config) -> Result<(), LifecycleError> {
    match &cfg.lifecycle.profiler {
        Some(p) => with_target(cfg, |t| lifecycle::start_profiler(p, t)),
        None => Ok(()),
    }
}

/// Just after the profiling phase: the profiler's stop, when it was started.
pub(super) fn stop_profiler(cfg: &Config) {
    if let Some(p) = &cfg.lifecycle.profiler {
        with_target(cfg, |t| lifecycle::stop_profiler(p, t));
    }
}

/// Before the run's threads start: `--mlflow-tracking-uri` starts the MLflow run its live
/// values go to ([`ringperf_metrics::lab::live`]), on its own thread (a server that is slow or down costs
/// the benchmark nothing but a warning).
pub(super) fn start_live(
    cfg: &Config,
    prepared: &super::prepare::Prepared,
) -> (
    Option<ringperf_metrics::lab::live::LiveFeed>,
    Option<ringperf_metrics::lab::live::LiveHandle>,
) {
    let Some(m) = &cfg.mlflow else {
        return (None, None);
    };
    // `--stream none` turns AIPerf's whole streaming pipeline off: the run is made at the end.
    if cfg.otel.as_ref().is_some_and(|o| !o.metrics && !o.timing) {
        return (None, None);
    }
    match ringperf_metrics::lab::live::start_mlflow(m, &prepared.benchmark_id, &prepared.dir) {
        Ok((feed, handle)) => (Some(feed), Some(handle)),
        Err(e) => {
            super::note(&format!("warning: MLflow live streaming off: {e}"));
            (None, None)
        }
    }
}

/// After the run's files are written: `--mlflow-*` logs the run to the tracking server (into
/// the run `live` started, when it could). A failure is one warning line; the run's result
/// stands.
pub(super) fn after_run(
    cfg: &Config,
    outcome: &super::Outcome,
    live: Option<ringperf_metrics::lab::live::LiveHandle>,
) {
    // The live thread ends once the aggregator's side is gone (it is, by now).
    let live = live.and_then(ringperf_metrics::lab::live::LiveHandle::join);
    if cfg.mlflow.is_none() && cfg.wandb.is_none() {
        return;
    }
    if !cfg.plan().file_only.summary_json() {
        super::note(
            "warning: MLflow and W&B exports skipped: they log the summary JSON, which \
             artifacts.summary: false leaves out",
        );
        return;
    }
    let names = ringperf_metrics::export::ExportNames::new(cfg.export_prefix.as_deref());
    let path = outcome.artifact_dir.join(&names.json);
    let summary = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            super::note(&format!(
                "warning: MLflow export skipped: cannot read {}: {e}",
                path.display()
            ));
            return;
        }
    };
    if let Some(w) = &cfg.wandb {
        match ringperf_metrics::lab::wandb::export(w, &outcome.artifact_dir, &summary) {
            Ok(x) => super::note(&format!(
                "W&B run '{}' ({}) made in {}: {} artifact files",
                x.name, x.id, x.dir, x.files
            )),
            Err(e) => super::note(&format!("warning: W&B export failed: {e}")),
        }
    }
    let Some(m) = &cfg.mlflow else {
        return;
    };
    let facts = ringperf_metrics::lab::mlflow::RunFacts {
        dir: &outcome.artifact_dir,
        summary: &summary,
        endpoint_type: cfg.endpoint.as_str(),
        completed: outcome.successes + outcome.errors,
        expected: cfg.profiling.request_count,
    };
    match ringperf_metrics::lab::mlflow::export(m, &facts, live.as_ref()) {
        Ok(x) => super::note(&format!(
            "MLflow run '{}' ({}) logged to {}: {} metrics, {} artifacts",
            x.run_name,
            x.run_id,
            m.uri.display,
            x.metrics,
            x.artifacts.len()
        )),
        Err(e) => super::note(&format!("warning: MLflow export failed: {e}")),
    }
}
