//! Synthetic prompt shaping, validated: conversations and turns, `--seq-dist`, prefix, system
//! and user-context prompts, batch size (spec §1.2 groups Conversation Input, ISL, Prompt,
//! Prefix Prompt; §1.3; AIPerf 0.13's `config/dataset/content.py`, `system_prompt.py` and
//! `config.py` for the cross-flag rules).

use std::path::Path;

use crate::cli::prompt::PromptArgs;
use crate::endpoint::EndpointKind;
use crate::workload::{PrefixPool, SeqDist};

/// Entries of the synthetic dataset by AIPerf's rule (`_resolve_entries`): `--num-dataset-entries`
/// when given, else `--conversation-num`, else `--request-count`, else 100.
///
/// # Errors
/// An explicit `--num-dataset-entries 0`.
pub fn dataset_entries(
    explicit: Option<usize>,
    conversation_num: Option<u64>,
    request_count: Option<u64>,
) -> Result<usize, String> {
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    match (explicit, conversation_num, request_count) {
        (Some(0), ..) => Err("--num-dataset-entries must be at least 1".into()),
        (Some(n), ..) => Ok(n),
        (None, Some(n), _) | (None, None, Some(n)) => Ok(as_usize(n)),
        (None, None, None) => Ok(100),
    }
}

/// The validated prompt-shaping flags.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptConfig {
    /// `--conversation-num`: conversations to generate when `--num-dataset-entries` is not
    /// given, and a stop condition of the profiling phase (sessions).
    pub num_conversations: Option<u64>,
    pub turn_mean: u32,
    pub turn_stddev: u32,
    pub turn_delay_mean_ms: f64,
    pub turn_delay_stddev_ms: f64,
    pub turn_delay_ratio: f64,
    pub seq_dist: Option<SeqDist>,
    /// A prefix pool with a positive length (a pool of zero-length prefixes adds nothing).
    pub prefix: Option<PrefixPool>,
    /// The verbatim system prompt, read from `--system-prompt-file` if that was given.
    pub system_prompt: Option<String>,
    pub shared_system_length: Option<u32>,
    pub user_context_length: Option<u32>,
    pub batch_size: usize,
}

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            num_conversations: None,
            turn_mean: 1,
            turn_stddev: 0,
            turn_delay_mean_ms: 0.0,
            turn_delay_stddev_ms: 0.0,
            turn_delay_ratio: 1.0,
            seq_dist: None,
            prefix: None,
            system_prompt: None,
            shared_system_length: None,
            user_context_length: None,
            batch_size: 1,
        }
    }
}

fn at_least_one<T: PartialEq + Default>(v: Option<T>, flag: &str) -> Result<(), String> {
    match v {
        Some(x) if x == T::default() => Err(format!("{flag} must be at least 1")),
        _ => Ok(()),
    }
}

fn non_negative(v: f64, flag: &str) -> Result<f64, String> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{flag} must be a non-negative number, got {v}"))
    }
}

fn read_system_prompt(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "--system-prompt-file {}: cannot be read as UTF-8 text: {e}",
            path.display()
        )
    })?;
    if text.trim().is_empty() {
        return Err(format!(
            "--system-prompt-file {} is empty or whitespace only; omit the flag to run without a system prompt",
            path.display()
        ));
    }
    Ok(text)
}

impl PromptConfig {
    /// Checks every flag of the group and AIPerf's rules between them.
    ///
    /// # Errors
    /// A message naming the flag(s) at fault.
    pub fn from_args(a: &PromptArgs, endpoint: EndpointKind) -> Result<Self, String> {
        at_least_one(a.conversation_num, "--conversation-num")?;
        at_least_one(Some(a.conversation_turn_mean), "--conversation-turn-mean")?;
        at_least_one(Some(a.prompt_batch_size), "--prompt-batch-size")?;
        at_least_one(a.prompt_prefix_pool_size, "--prompt-prefix-pool-size")?;
        at_least_one(a.prompt_prefix_length, "--prompt-prefix-length")?;
        at_least_one(
            a.shared_system_prompt_length,
            "--shared-system-prompt-length",
        )?;
        at_least_one(a.user_context_prompt_length, "--user-context-prompt-length")?;
        let turn_delay_mean_ms = non_negative(
            a.conversation_turn_delay_mean,
            "--conversation-turn-delay-mean",
        )?;
        let turn_delay_stddev_ms = non_negative(
            a.conversation_turn_delay_stddev,
            "--conversation-turn-delay-stddev",
        )?;
        let turn_delay_ratio = non_negative(
            a.conversation_turn_delay_ratio,
            "--conversation-turn-delay-ratio",
        )?;

        match a.prompt_corpus.as_deref() {
            None | Some("sonnet") => {}
            Some(c @ ("coding" | "random")) => {
                return Err(format!(
                    "--prompt-corpus {c} is not supported by ringperf yet (sonnet is): AIPerf's \
                     `{c}` corpus is generated by its own code (coding content generators, vLLM's \
                     random-token draw order) that ringperf does not reproduce"
                ));
            }
            Some(other) => {
                return Err(format!(
                    "--prompt-corpus must be one of sonnet, coding, random; got `{other}`"
                ));
            }
        }

        let seq_dist = a
            .seq_dist
            .as_deref()
            .map(SeqDist::parse)
            .transpose()
            .map_err(|e| format!("--seq-dist `{}`: {e}", a.seq_dist.as_deref().unwrap_or("")))?;

        let system_prompt = match (&a.system_prompt, &a.system_prompt_file) {
            (Some(_), Some(_)) => {
                return Err(
                    "--system-prompt and --system-prompt-file are mutually exclusive; give one"
                        .into(),
                );
            }
            (Some(s), None) if s.trim().is_empty() => {
                return Err(
                    "--system-prompt is empty or whitespace only; omit the flag to run without a system prompt"
                        .into(),
                );
            }
            (Some(s), None) => Some(s.clone()),
            (None, Some(path)) => Some(read_system_prompt(path)?),
            (None, None) => None,
        };

        let pool_group = a.prompt_prefix_pool_size.is_some() || a.prompt_prefix_length.is_some();
        let context_group =
            a.shared_system_prompt_length.is_some() || a.user_context_prompt_length.is_some();
        if pool_group && context_group {
            return Err("--prompt-prefix-pool-size/--prompt-prefix-length and \
                 --shared-system-prompt-length/--user-context-prompt-length are mutually exclusive"
                .into());
        }
        if system_prompt.is_some() && a.shared_system_prompt_length.is_some() {
            return Err(
                "--system-prompt/--system-prompt-file and --shared-system-prompt-length \
                 are mutually exclusive: both fill the system message"
                    .into(),
            );
        }
        if system_prompt.is_some() && pool_group {
            return Err("--system-prompt/--system-prompt-file and \
                 --prompt-prefix-pool-size/--prompt-prefix-length are mutually exclusive"
                .into());
        }
        if a.prompt_prefix_length.is_some() && a.prompt_prefix_pool_size.is_none() {
            return Err("--prompt-prefix-length needs --prompt-prefix-pool-size \
                 (how many distinct prefixes to generate)"
                .into());
        }
        if endpoint != EndpointKind::Chat {
            let message_flags = [
                (
                    system_prompt.is_some(),
                    "--system-prompt/--system-prompt-file",
                ),
                (
                    a.shared_system_prompt_length.is_some(),
                    "--shared-system-prompt-length",
                ),
                (
                    a.user_context_prompt_length.is_some(),
                    "--user-context-prompt-length",
                ),
            ];
            if let Some((_, flag)) = message_flags.iter().find(|(set, _)| *set) {
                return Err(format!(
                    "{flag} needs --endpoint-type chat: the {} endpoint has no system or context \
                     message, so the text would never be sent",
                    endpoint.as_str()
                ));
            }
        }

        let prefix = match (a.prompt_prefix_pool_size, a.prompt_prefix_length) {
            (Some(pool_size), Some(length)) => Some(PrefixPool { pool_size, length }),
            _ => None,
        };
        Ok(Self {
            num_conversations: a.conversation_num,
            turn_mean: a.conversation_turn_mean,
            turn_stddev: a.conversation_turn_stddev,
            turn_delay_mean_ms,
            turn_delay_stddev_ms,
            turn_delay_ratio,
            seq_dist,
            prefix,
            system_prompt,
            shared_system_length: a.shared_system_prompt_length,
            user_context_length: a.user_context_prompt_length,
            batch_size: a.prompt_batch_size,
        })
    }
}
