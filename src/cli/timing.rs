//! When requests go: fixed-schedule replay, user-centric rate, ramps, request cancellation.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default)]
pub struct TimingArgs {}
