//! The server's control plane as vLLM has it, for the lifecycle hooks of a run
//! (docs/integrations.md): `POST /reset_prefix_cache`, `POST /start_profile`,
//! `POST /stop_profile`, and a model that is still loading for
//! [`MockConfig::model_ready_after`](super::MockConfig::model_ready_after) after the start, and
//! for its first [`MockConfig::loading_answers`](super::MockConfig::loading_answers) readiness
//! requests (`/v1/models` lists nothing and completion requests get 503). Every control call, every
//! `GET /v1/models` and every completion refused while loading is kept in the truth log as a
//! [`ControlCall`], with its time on both clocks.

use serde::Serialize;

/// A control-plane route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    ResetPrefixCache,
    StartProfile,
    StopProfile,
}

impl Control {
    pub(crate) fn at(path: &str) -> Option<Control> {
        match path {
            "/reset_prefix_cache" => Some(Control::ResetPrefixCache),
            "/start_profile" => Some(Control::StartProfile),
            "/stop_profile" => Some(Control::StopProfile),
            _ => None,
        }
    }

    pub(crate) fn path(self) -> &'static str {
        match self {
            Control::ResetPrefixCache => "/reset_prefix_cache",
            Control::StartProfile => "/start_profile",
            Control::StopProfile => "/stop_profile",
        }
    }
}

/// One control-plane exchange as the mock answered it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ControlCall {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The route (`/reset_prefix_cache`, `/start_profile`, `/stop_profile`, `/v1/models`, or a
    /// completion path refused while the model loads).
    pub path: &'static str,
    /// The status answered.
    pub status: u16,
    /// For `GET /v1/models`: whether the model was listed.
    pub listed: Option<bool>,
    /// When the whole request had been read: wall clock (epoch ns), to compare with a run's
    /// artifacts.
    pub wall_ns: u64,
    /// The same instant on the raw `CLOCK_MONOTONIC` scale of the truth log's other stamps.
    pub arrival_ns: u64,
}
