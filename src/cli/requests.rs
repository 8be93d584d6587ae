//! Endpoint flags that shape each request of several models or sessions: which model a turn
//! asks for, which header carries the session id. Resolved in `config::requests`.

use clap::{Args, ValueEnum};

/// `--model-selection-strategy` values as AIPerf lists them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SelectionArg {
    #[default]
    #[value(name = "round_robin")]
    RoundRobin,
    #[value(name = "random")]
    Random,
    /// Listed by AIPerf but refused there without per-model weights, which no flag gives.
    #[value(name = "weighted")]
    Weighted,
}

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RequestArgs {
    /// When several models are given, how each turn gets one: 'round_robin' (the n-th turn of
    /// the dataset gets model n mod len) or 'random' (uniform, seeded by --random-seed).
    #[arg(
        long = "model-selection-strategy",
        value_enum,
        ignore_case = true,
        default_value = "round_robin",
        help_heading = "Endpoint"
    )]
    pub model_selection_strategy: SelectionArg,

    /// Name of the HTTP header that carries each session's id instead of X-Correlation-ID
    /// (e.g. X-Session-ID), for servers that route a session by their own header.
    #[arg(
        long = "session-header",
        value_name = "NAME",
        help_heading = "Endpoint"
    )]
    pub session_header: Option<String>,
}
