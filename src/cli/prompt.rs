//! Synthetic prompt shaping: conversations, sequence distributions, prefix and system prompts, cache bust, batch size.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default)]
pub struct PromptArgs {}
