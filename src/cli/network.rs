//! The Network Latency group: the round-trip time subtracted from the start-anchored latencies
//! (`network_adjusted_*`, docs/metrics.md), set (`--network-latency-mean`) or measured by TCP
//! connect probes during profiling (`--network-latency-automatic`).

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NetworkLatencyArgs {
    /// Measure the round-trip time to each server with TCP connect probes during profiling and
    /// report network_adjusted_* latencies with the mean RTT subtracted.
    #[arg(long = "network-latency-automatic", help_heading = "Network Latency")]
    pub network_latency_automatic: bool,

    /// Subtract this fixed round-trip time (ms) from the start-anchored latencies
    /// (network_adjusted_*) instead of measuring it.
    #[arg(long = "network-latency-mean", help_heading = "Network Latency")]
    pub network_latency_mean: Option<f64>,

    /// Seconds between probes with --network-latency-automatic (default 1, or
    /// AIPERF_NETWORK_LATENCY_DEFAULT_PROBE_INTERVAL).
    #[arg(
        long = "network-latency-ping-interval",
        help_heading = "Network Latency"
    )]
    pub network_latency_ping_interval: Option<f64>,
}
