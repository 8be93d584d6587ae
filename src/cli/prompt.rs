//! Synthetic prompt shaping: conversations, sequence distributions, prefix and system prompts,
//! batch size. Checked and resolved in [`crate::config::prompt`].

use std::path::PathBuf;

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PromptArgs {
    // ----- Conversation Input -----
    /// Unique conversations (sessions) to generate; also stops the profiling phase after that
    /// many sessions.
    #[arg(
        long = "conversation-num",
        visible_aliases = ["num-conversations", "num-sessions"],
        value_parser = super::parse_whole::<u64>,
        help_heading = "Conversation Input"
    )]
    pub conversation_num: Option<u64>,

    /// Mean turns per conversation (normal distribution, at least 1).
    #[arg(
        long = "conversation-turn-mean",
        visible_alias = "session-turns-mean",
        default_value_t = 1,
        help_heading = "Conversation Input"
    )]
    pub conversation_turn_mean: u32,

    /// Standard deviation of the turns per conversation.
    #[arg(
        long = "conversation-turn-stddev",
        visible_alias = "session-turns-stddev",
        default_value_t = 0,
        help_heading = "Conversation Input"
    )]
    pub conversation_turn_stddev: u32,

    /// Mean delay in ms before each later turn of a conversation (0 = back to back).
    #[arg(
        long = "conversation-turn-delay-mean",
        visible_alias = "session-turn-delay-mean",
        default_value_t = 0.0,
        help_heading = "Conversation Input"
    )]
    pub conversation_turn_delay_mean: f64,

    /// Standard deviation of the turn delay in ms.
    #[arg(
        long = "conversation-turn-delay-stddev",
        visible_alias = "session-turn-delay-stddev",
        default_value_t = 0.0,
        help_heading = "Conversation Input"
    )]
    pub conversation_turn_delay_stddev: f64,

    /// Multiplier applied to every drawn turn delay (0 removes them).
    #[arg(
        long = "conversation-turn-delay-ratio",
        visible_alias = "session-delay-ratio",
        default_value_t = 1.0,
        help_heading = "Conversation Input"
    )]
    pub conversation_turn_delay_ratio: f64,

    // ----- ISL -----
    /// (ISL, OSL) pairs with percentages, e.g. `128,64:25;512|20,128|5:75`, also
    /// `[(128,64):25,(512,128):75]` or `{"pairs":[{"isl":128,"osl":64,"prob":25},…]}`.
    #[arg(
        long = "seq-dist",
        visible_alias = "sequence-distribution",
        help_heading = "Input Sequence Length (ISL)"
    )]
    pub seq_dist: Option<String>,

    // ----- Prompt -----
    /// Texts per request (chat: content parts of one message; completions: a list of prompts).
    #[arg(
        long = "prompt-batch-size",
        visible_aliases = ["batch-size-text", "batch-size"],
        short = 'b',
        default_value_t = 1,
        help_heading = "Prompt"
    )]
    pub prompt_batch_size: usize,

    /// Corpus of synthetic prompt text (ringperf has `sonnet`).
    #[arg(long = "prompt-corpus", help_heading = "Prompt")]
    pub prompt_corpus: Option<String>,

    // ----- Prefix Prompt -----
    /// Verbatim system prompt sent first in every conversation (chat).
    #[arg(long = "system-prompt", help_heading = "Prefix Prompt")]
    pub system_prompt: Option<String>,

    /// UTF-8 file holding the verbatim system prompt.
    #[arg(long = "system-prompt-file", help_heading = "Prefix Prompt")]
    pub system_prompt_file: Option<PathBuf>,

    /// Distinct prefix prompts; one is prepended to each conversation's first prompt.
    #[arg(
        long = "prompt-prefix-pool-size",
        visible_aliases = ["prefix-prompt-pool-size", "num-prefix-prompts"],
        help_heading = "Prefix Prompt"
    )]
    pub prompt_prefix_pool_size: Option<usize>,

    /// Tokens of each prefix prompt (added to the prompt's ISL).
    #[arg(
        long = "prompt-prefix-length",
        visible_alias = "prefix-prompt-length",
        help_heading = "Prefix Prompt"
    )]
    pub prompt_prefix_length: Option<usize>,

    /// Tokens of a synthetic system prompt shared by every conversation (chat).
    #[arg(long = "shared-system-prompt-length", help_heading = "Prefix Prompt")]
    pub shared_system_prompt_length: Option<u32>,

    /// Tokens of a user-context message unique to each conversation (chat).
    #[arg(long = "user-context-prompt-length", help_heading = "Prefix Prompt")]
    pub user_context_prompt_length: Option<u32>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn prompt(s: &str) -> super::PromptArgs {
        let argv: Vec<&str> = s.split_whitespace().collect();
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Profile(p) => p.prompt,
            _ => panic!("not profile"),
        }
    }

    #[test]
    fn defaults_are_aiperfs() {
        let p = prompt("ringperf profile -m x");
        assert_eq!(p.conversation_num, None);
        assert_eq!(
            (p.conversation_turn_mean, p.conversation_turn_stddev),
            (1, 0)
        );
        assert_eq!(p.conversation_turn_delay_mean, 0.0);
        assert_eq!(p.conversation_turn_delay_ratio, 1.0);
        assert_eq!(p.prompt_batch_size, 1);
        assert!(p.seq_dist.is_none() && p.prompt_prefix_pool_size.is_none());
    }

    #[test]
    fn aliases_parse() {
        let p = prompt(
            "ringperf profile -m x --num-sessions 4 --session-turns-mean 3 \
             --session-turns-stddev 1 --session-turn-delay-mean 50 --session-turn-delay-stddev 5 \
             --session-delay-ratio 0.5 --sequence-distribution 10,5:100 --batch-size-text 2 \
             --num-prefix-prompts 3 --prefix-prompt-length 7",
        );
        assert_eq!(p.conversation_num, Some(4));
        assert_eq!(
            (p.conversation_turn_mean, p.conversation_turn_stddev),
            (3, 1)
        );
        assert_eq!(
            (
                p.conversation_turn_delay_mean,
                p.conversation_turn_delay_stddev,
                p.conversation_turn_delay_ratio
            ),
            (50.0, 5.0, 0.5)
        );
        assert_eq!(p.seq_dist.as_deref(), Some("10,5:100"));
        assert_eq!(p.prompt_batch_size, 2);
        assert_eq!(
            (p.prompt_prefix_pool_size, p.prompt_prefix_length),
            (Some(3), Some(7))
        );
        for flag in ["--num-conversations 2", "--conversation-num 2"] {
            assert_eq!(
                prompt(&format!("ringperf profile {flag}")).conversation_num,
                Some(2)
            );
        }
        assert_eq!(prompt("ringperf profile -b 4").prompt_batch_size, 4);
        assert_eq!(
            prompt("ringperf profile --batch-size 5").prompt_batch_size,
            5
        );
        assert_eq!(
            prompt("ringperf profile --prefix-prompt-pool-size 9").prompt_prefix_pool_size,
            Some(9)
        );
    }
}
