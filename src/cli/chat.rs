//! Flags of `ringperf chat` (AIPerf 0.13's `aiperf chat`; docs/commands.md). Its logic is in
//! `crate::chat`.

use clap::{ArgAction, Args};

/// Flags of `ringperf chat`.
#[derive(Debug, Args, Clone)]
pub struct ChatArgs {
    /// Model name served by the endpoint.
    #[arg(short = 'm', long = "model")]
    pub model: String,
    /// Base URL of the OpenAI-compatible server (e.g. http://localhost:8000), as `profile`.
    #[arg(short = 'u', long = "url", default_value = "http://localhost:8000")]
    pub url: String,
    /// Optional system prompt prepended to the conversation.
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,
    /// Send a single MESSAGE and print the response and stats, then exit.
    #[arg(short = 'q', long = "quick", value_name = "MESSAGE")]
    pub quick: Option<String>,
    /// Retain and resend conversation history each turn (default).
    #[arg(long = "history", overrides_with = "no_history", action = ArgAction::SetTrue)]
    pub history: bool,
    /// Stateless, completion-style turns. Ignored with --quick.
    #[arg(long = "no-history", overrides_with = "history", action = ArgAction::SetTrue)]
    pub no_history: bool,
    /// API key sent as a Bearer token (default: the OPENAI_API_KEY environment variable).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,
    /// Tokenizer for client-side token counts (default: the model name; `builtin` needs no
    /// network).
    #[arg(long = "tokenizer")]
    pub tokenizer: Option<String>,
}
