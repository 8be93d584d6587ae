//! The Goodput group: `--goodput`, the SLOs a request must meet to count as good.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GoodputArgs {
    /// SLOs for goodput as space-separated 'TAG:VALUE' pairs: TAG a per-request metric tag,
    /// VALUE in the metric's display unit (ms for latencies), e.g. 'request_latency:250
    /// inter_token_latency:10 output_token_throughput_per_user:600'. A request is good when it
    /// meets every SLO (at or under, or at or over for larger-is-better metrics). Adds
    /// good_request_count, goodput and good_request_fraction.
    #[arg(long = "goodput", help_heading = "Goodput")]
    pub goodput: Option<String>,
}
