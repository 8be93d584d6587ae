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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::Config;

    fn cfg(s: &str) -> Result<Config, String> {
        let argv: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        let Command::Profile(p) = Cli::try_parse_from(&argv).expect("clap parses").command else {
            panic!("not profile")
        };
        Config::from_args(&p, &argv, false).map_err(|e| e.0)
    }

    const BASE: &str = "ringperf profile -m m -u 127.0.0.1:1";

    #[test]
    fn entries_follow_aiperfs_rule() {
        assert_eq!(dataset_entries(Some(5), Some(7), Some(300)), Ok(5));
        assert_eq!(dataset_entries(None, Some(7), Some(300)), Ok(7));
        assert_eq!(dataset_entries(None, None, Some(300)), Ok(300));
        assert_eq!(dataset_entries(None, None, None), Ok(100));
        assert!(dataset_entries(Some(0), None, None).is_err());
        let c = |flags: &str| cfg(&format!("{BASE} {flags}")).unwrap().dataset.entries;
        assert_eq!(c("--request-count 300"), 300);
        assert_eq!(c("--request-count 300 --num-sessions 40"), 40);
        assert_eq!(
            c("--request-count 300 --num-sessions 40 --num-prompts 8"),
            8
        );
        assert_eq!(c(""), 100);
        assert_eq!(c("--benchmark-duration 5"), 100);
    }

    #[test]
    fn flags_reach_the_config() {
        let c = cfg(&format!(
            "{BASE} --conversation-num 12 --conversation-turn-mean 3 --conversation-turn-stddev 1 \
             --conversation-turn-delay-mean 250 --conversation-turn-delay-stddev 20 \
             --conversation-turn-delay-ratio 0.5 --seq-dist 100,20:60;200,40:40 -b 2 \
             --prompt-prefix-pool-size 4 --prompt-prefix-length 16 --prompt-corpus sonnet"
        ))
        .unwrap();
        let p = &c.prompt;
        assert_eq!(p.num_conversations, Some(12));
        assert_eq!((p.turn_mean, p.turn_stddev), (3, 1));
        assert_eq!(
            (
                p.turn_delay_mean_ms,
                p.turn_delay_stddev_ms,
                p.turn_delay_ratio
            ),
            (250.0, 20.0, 0.5)
        );
        assert_eq!(p.seq_dist.as_ref().map(|d| d.pairs().len()), Some(2));
        assert_eq!(p.batch_size, 2);
        assert_eq!(
            p.prefix,
            Some(PrefixPool {
                pool_size: 4,
                length: 16
            })
        );
        assert_eq!(cfg(BASE).unwrap().prompt, PromptConfig::default());
        // A pool without a length is a pool of empty prefixes: nothing is prepended.
        let c = cfg(&format!("{BASE} --num-prefix-prompts 3")).unwrap();
        assert_eq!(c.prompt.prefix, None);
        let c = cfg(&format!(
            "{BASE} --shared-system-prompt-length 30 --user-context-prompt-length 9"
        ))
        .unwrap();
        assert_eq!(
            (c.prompt.shared_system_length, c.prompt.user_context_length),
            (Some(30), Some(9))
        );
    }

    #[test]
    fn system_prompt_file_is_read_once_at_startup() {
        let dir = std::env::temp_dir().join(format!("ringperf-sys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("system.txt");
        std::fs::write(&file, "You are terse.\nAnswer in one line.\n").unwrap();
        let c = cfg(&format!("{BASE} --system-prompt-file {}", file.display())).unwrap();
        assert_eq!(
            c.prompt.system_prompt.as_deref(),
            Some("You are terse.\nAnswer in one line.\n")
        );
        let empty = dir.join("empty.txt");
        std::fs::write(&empty, " \n").unwrap();
        let e = cfg(&format!("{BASE} --system-prompt-file {}", empty.display())).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let missing = dir.join("missing.txt");
        let e = cfg(&format!(
            "{BASE} --system-prompt-file {}",
            missing.display()
        ))
        .unwrap_err();
        assert!(
            e.contains("cannot be read") && e.contains("missing.txt"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_bad_flag_class_is_refused_by_name() {
        for (flags, why) in [
            (
                "--conversation-num 0",
                "--conversation-num must be at least 1",
            ),
            (
                "--conversation-turn-mean 0",
                "--conversation-turn-mean must be at least 1",
            ),
            (
                "--conversation-turn-delay-mean=-1",
                "--conversation-turn-delay-mean must be",
            ),
            (
                "--conversation-turn-delay-stddev nan",
                "--conversation-turn-delay-stddev must be",
            ),
            (
                "--conversation-turn-delay-ratio inf",
                "--conversation-turn-delay-ratio must be",
            ),
            (
                "--prompt-batch-size 0",
                "--prompt-batch-size must be at least 1",
            ),
            (
                "--num-dataset-entries 0",
                "--num-dataset-entries must be at least 1",
            ),
            (
                "--prompt-prefix-pool-size 0",
                "--prompt-prefix-pool-size must be at least 1",
            ),
            (
                "--prompt-prefix-pool-size 2 --prompt-prefix-length 0",
                "--prompt-prefix-length must be at least 1",
            ),
            (
                "--shared-system-prompt-length 0",
                "--shared-system-prompt-length must be",
            ),
            (
                "--user-context-prompt-length 0",
                "--user-context-prompt-length must be",
            ),
            (
                "--prompt-prefix-length 10",
                "needs --prompt-prefix-pool-size",
            ),
            (
                "--prompt-prefix-pool-size 2 --prompt-prefix-length 5 --shared-system-prompt-length 9",
                "mutually exclusive",
            ),
            (
                "--prompt-prefix-pool-size 2 --user-context-prompt-length 9",
                "mutually exclusive",
            ),
            (
                "--system-prompt hi --shared-system-prompt-length 9",
                "both fill the system message",
            ),
            (
                "--system-prompt hi --prompt-prefix-pool-size 2",
                "mutually exclusive",
            ),
            (
                "--system-prompt hi --system-prompt-file x",
                "mutually exclusive",
            ),
            (
                "--system-prompt-file /nonexistent/ringperf",
                "cannot be read",
            ),
            (
                "--endpoint-type completions --system-prompt hi",
                "needs --endpoint-type chat",
            ),
            (
                "--endpoint-type completions --shared-system-prompt-length 5",
                "needs --endpoint-type chat",
            ),
            (
                "--endpoint-type completions --user-context-prompt-length 5",
                "needs --endpoint-type chat",
            ),
            (
                "--seq-dist 128,64:50",
                "--seq-dist `128,64:50`: probabilities must sum to 100",
            ),
            ("--seq-dist nonsense", "is not a pair"),
            ("--prompt-corpus coding", "not supported by ringperf yet"),
            ("--prompt-corpus random", "not supported by ringperf yet"),
            (
                "--prompt-corpus poems",
                "must be one of sonnet, coding, random",
            ),
        ] {
            let e = cfg(&format!("{BASE} {flags}")).expect_err(flags);
            assert!(e.contains(why), "{flags}: {e}");
        }
        // A whitespace-only --system-prompt (one argv word, so built by hand).
        let args = PromptArgs {
            system_prompt: Some("  ".into()),
            conversation_turn_mean: 1,
            prompt_batch_size: 1,
            ..PromptArgs::default()
        };
        let e = PromptConfig::from_args(&args, EndpointKind::Chat).unwrap_err();
        assert!(e.contains("--system-prompt is empty"), "{e}");
    }
}
