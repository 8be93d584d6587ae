//! The Rankings group: the shape of the synthetic query + passages requests the rankings
//! endpoint types send (`nim_rankings`, `cohere_rankings`, `hf_tei_rankings`). Resolved in
//! [`crate::config`] into a [`ringperf_workload::workload::rankings::RankingsShape`].

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankingsArgs {
    /// Mean number of passages per rankings request (normal distribution, at least 1).
    #[arg(
        long = "rankings-passages-mean",
        default_value_t = 1,
        help_heading = "Rankings"
    )]
    pub rankings_passages_mean: u32,

    /// Standard deviation of the number of passages per rankings request.
    #[arg(
        long = "rankings-passages-stddev",
        default_value_t = 0,
        help_heading = "Rankings"
    )]
    pub rankings_passages_stddev: u32,

    /// Mean length of each passage, in tokens.
    #[arg(
        long = "rankings-passages-prompt-token-mean",
        default_value_t = 550,
        help_heading = "Rankings"
    )]
    pub rankings_passages_prompt_token_mean: u32,

    /// Standard deviation of the passage length, in tokens.
    #[arg(
        long = "rankings-passages-prompt-token-stddev",
        default_value_t = 0,
        help_heading = "Rankings"
    )]
    pub rankings_passages_prompt_token_stddev: u32,

    /// Mean length of the query, in tokens.
    #[arg(
        long = "rankings-query-prompt-token-mean",
        default_value_t = 550,
        help_heading = "Rankings"
    )]
    pub rankings_query_prompt_token_mean: u32,

    /// Standard deviation of the query length, in tokens.
    #[arg(
        long = "rankings-query-prompt-token-stddev",
        default_value_t = 0,
        help_heading = "Rankings"
    )]
    pub rankings_query_prompt_token_stddev: u32,
}
