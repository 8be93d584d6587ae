//! The server-lifecycle calls of a run ([`crate::lab::lifecycle`]) at their places: the wait
//! and the KV-cache reset once the run is prepared (the embedded mock's address is known),
//! before any of its threads start; the profiler around the profiling phase ([`super::phases`]).

use crate::config::Config;
use crate::lab::lifecycle::{self, LifecycleError, Target};

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
