//! Synthetic prompt shaping, validated: conversations and turns, `--seq-dist`, prefix, system
//! and user-context prompts, batch size (docs/flags.md groups Conversation Input, ISL, Prompt,
//! Prefix Prompt; docs/synthetic.md; AIPerf's `config/dataset/content.py`, `system_prompt.py` and
//! `config.py` for the cross-flag rules).

use std::path::Path;

use super::ConfigError;
use super::environment::Files;
use crate::cli::prompt::PromptArgs;
use ringperf_wire::endpoint::EndpointKind;
use ringperf_workload::workload::prompt::Corpus;
use ringperf_workload::workload::range_ratio::CorpusStyle;
use ringperf_workload::workload::synthetic::Shaping;
use ringperf_workload::workload::{PrefixPool, SeqDist};

/// Entries of the synthetic dataset by AIPerf's rule (`_resolve_entries`): `--num-dataset-entries`
/// when given, else `--conversation-num`, else `--request-count`, else 100.
///
/// # Errors
/// An explicit `--num-dataset-entries 0`.
pub fn dataset_entries(
    explicit: Option<usize>,
    conversation_num: Option<u64>,
    request_count: Option<u64>,
) -> Result<usize, ConfigError> {
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    match (explicit, conversation_num, request_count) {
        (Some(0), ..) => Err(ConfigError::flag(
            "--num-dataset-entries must be at least 1",
        )),
        (Some(n), ..) => Ok(n),
        (None, Some(n), _) | (None, None, Some(n)) => Ok(as_usize(n)),
        (None, None, None) => Ok(100),
    }
}

/// The validated prompt-shaping flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromptConfig {
    /// `--conversation-num`: conversations to generate when `--num-dataset-entries` is not
    /// given, and a stop condition of the profiling phase (sessions).
    pub num_conversations: Option<u64>,
    /// Turns, delays, pairs, prefix and system prompts, texts per turn.
    pub shaping: Shaping,
}

fn at_least_one<T: PartialEq + Default>(v: Option<T>, flag: &str) -> Result<(), ConfigError> {
    match v {
        Some(x) if x == T::default() => {
            Err(ConfigError::flag(format!("{flag} must be at least 1")))
        }
        _ => Ok(()),
    }
}

fn non_negative(v: f64, flag: &str) -> Result<f64, ConfigError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ConfigError::flag(format!(
            "{flag} must be a non-negative number, got {v}"
        )))
    }
}

/// The text of `--system-prompt-file`, from the files read at the edge (`files`; a file missing
/// from them was not found).
fn system_prompt_text(path: &Path, files: &Files) -> Result<String, ConfigError> {
    let text = match files.get(path) {
        Some(Ok(text)) => text.clone(),
        Some(Err(e)) => return Err(unreadable(path, e)),
        None => return Err(unreadable(path, &std::io::ErrorKind::NotFound.into())),
    };
    if text.trim().is_empty() {
        return Err(ConfigError::file(format!(
            "--system-prompt-file {} is empty or whitespace only; omit the flag to run without a system prompt",
            path.display()
        )));
    }
    Ok(text)
}

fn unreadable(path: &Path, e: &std::io::Error) -> ConfigError {
    ConfigError::file(format!(
        "--system-prompt-file {}: cannot be read as UTF-8 text: {e}",
        path.display()
    ))
}

/// `--prompt-corpus`: `sonnet`, or `random` from the vocabulary under `style`
/// (`--random-corpus-style`); `coding` is refused.
fn corpus(corpus: Option<&str>, style: CorpusStyle) -> Result<Corpus, ConfigError> {
    match corpus {
        None | Some("sonnet") => Ok(Corpus::Sonnet),
        Some("random") => Ok(Corpus::Random(style)),
        Some("coding") => Err(ConfigError::flag(
            "--prompt-corpus coding is not supported by ringperf yet (sonnet and random are): \
             AIPerf's `coding` corpus is the text of its own code generators, which ringperf \
             does not reproduce",
        )),
        Some(other) => Err(ConfigError::flag(format!(
            "--prompt-corpus must be one of sonnet, coding, random; got `{other}`"
        ))),
    }
}

/// `--system-prompt` or the text of `--system-prompt-file`.
fn system_prompt(a: &PromptArgs, files: &Files) -> Result<Option<String>, ConfigError> {
    match (&a.system_prompt, &a.system_prompt_file) {
        (Some(_), Some(_)) => Err(ConfigError::flag(
            "--system-prompt and --system-prompt-file are mutually exclusive; give one",
        )),
        (Some(s), None) if s.trim().is_empty() => Err(ConfigError::flag(
            "--system-prompt is empty or whitespace only; omit the flag to run without a system prompt",
        )),
        (Some(s), None) => Ok(Some(s.clone())),
        (None, Some(path)) => system_prompt_text(path, files).map(Some),
        (None, None) => Ok(None),
    }
}

/// AIPerf's exclusions between the prefix pool, the context prompts and the system prompt,
/// and the message flags an endpoint without a system message cannot send.
fn check_message_flags(
    a: &PromptArgs,
    system_prompt: bool,
    endpoint: EndpointKind,
) -> Result<(), ConfigError> {
    let pool_group = a.prompt_prefix_pool_size.is_some() || a.prompt_prefix_length.is_some();
    let context_group =
        a.shared_system_prompt_length.is_some() || a.user_context_prompt_length.is_some();
    if pool_group && context_group {
        return Err(ConfigError::flag(
            "--prompt-prefix-pool-size/--prompt-prefix-length and \
                 --shared-system-prompt-length/--user-context-prompt-length are mutually exclusive",
        ));
    }
    if system_prompt && a.shared_system_prompt_length.is_some() {
        return Err(ConfigError::flag(
            "--system-prompt/--system-prompt-file and --shared-system-prompt-length \
                 are mutually exclusive: both fill the system message",
        ));
    }
    if system_prompt && pool_group {
        return Err(ConfigError::flag(
            "--system-prompt/--system-prompt-file and \
                 --prompt-prefix-pool-size/--prompt-prefix-length are mutually exclusive",
        ));
    }
    if a.prompt_prefix_length.is_some() && a.prompt_prefix_pool_size.is_none() {
        return Err(ConfigError::flag(
            "--prompt-prefix-length needs --prompt-prefix-pool-size \
                 (how many distinct prefixes to generate)",
        ));
    }
    if endpoint.descriptor().consumes_system_message {
        return Ok(());
    }
    let message_flags = [
        (system_prompt, "--system-prompt/--system-prompt-file"),
        (
            a.shared_system_prompt_length.is_some(),
            "--shared-system-prompt-length",
        ),
        (
            a.user_context_prompt_length.is_some(),
            "--user-context-prompt-length",
        ),
    ];
    match message_flags.iter().find(|(set, _)| *set) {
        Some((_, flag)) => Err(ConfigError::flag(format!(
            "{flag} needs --endpoint-type chat (or responses, messages, chat_embeddings): \
             the {} endpoint has no system or context message, so the text would never \
             be sent",
            endpoint.as_str()
        ))),
        None => Ok(()),
    }
}

impl PromptConfig {
    /// Checks every flag of the group and AIPerf's rules between them. `files` holds the files
    /// read at the edge (`--system-prompt-file`).
    ///
    /// # Errors
    /// A message naming the flag(s) at fault.
    pub fn from_args(
        a: &PromptArgs,
        (endpoint, style): (EndpointKind, CorpusStyle),
        files: &Files,
    ) -> Result<Self, ConfigError> {
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
        let corpus = corpus(a.prompt_corpus.as_deref(), style)?;
        let seq_dist = a
            .seq_dist
            .as_deref()
            .map(SeqDist::parse)
            .transpose()
            .map_err(|e| {
                let given = a.seq_dist.as_deref().unwrap_or("");
                ConfigError::flag(format!("--seq-dist `{given}`: {e}"))
            })?;
        let system_prompt = system_prompt(a, files)?;
        check_message_flags(a, system_prompt.is_some(), endpoint)?;
        let prefix = match (a.prompt_prefix_pool_size, a.prompt_prefix_length) {
            (Some(pool_size), Some(length)) => Some(PrefixPool { pool_size, length }),
            _ => None,
        };
        Ok(Self {
            num_conversations: a.conversation_num,
            shaping: Shaping {
                turn_mean: a.conversation_turn_mean,
                turn_stddev: a.conversation_turn_stddev,
                turn_delay_mean_ms,
                turn_delay_stddev_ms,
                turn_delay_ratio,
                seq_dist,
                range_ratio: None,
                first_turn_isl_adjustment: 0,
                later_turn_isl_adjustment: 0,
                prefix,
                system_prompt,
                shared_system_length: a.shared_system_prompt_length,
                user_context_length: a.user_context_prompt_length,
                batch_size: a.prompt_batch_size,
                corpus,
            },
        })
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    use crate::config::Config;

    fn cfg(s: &str) -> Result<Config, ConfigError> {
        let argv: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
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
        assert_eq!((p.shaping.turn_mean, p.shaping.turn_stddev), (3, 1));
        assert_eq!(
            (
                p.shaping.turn_delay_mean_ms,
                p.shaping.turn_delay_stddev_ms,
                p.shaping.turn_delay_ratio
            ),
            (250.0, 20.0, 0.5)
        );
        assert_eq!(
            p.shaping.seq_dist.as_ref().map(|d| d.pairs().len()),
            Some(2)
        );
        assert_eq!(p.shaping.batch_size, 2);
        assert_eq!(
            p.shaping.prefix,
            Some(PrefixPool {
                pool_size: 4,
                length: 16
            })
        );
        assert_eq!(cfg(BASE).unwrap().prompt, PromptConfig::default());
        // A pool without a length is a pool of empty prefixes: nothing is prepended.
        let c = cfg(&format!("{BASE} --num-prefix-prompts 3")).unwrap();
        assert_eq!(c.prompt.shaping.prefix, None);
        let c = cfg(&format!(
            "{BASE} --shared-system-prompt-length 30 --user-context-prompt-length 9"
        ))
        .unwrap();
        assert_eq!(
            (
                c.prompt.shaping.shared_system_length,
                c.prompt.shaping.user_context_length
            ),
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
            c.prompt.shaping.system_prompt.as_deref(),
            Some("You are terse.\nAnswer in one line.\n")
        );
        let empty = dir.join("empty.txt");
        std::fs::write(&empty, " \n").unwrap();
        let e = cfg(&format!("{BASE} --system-prompt-file {}", empty.display())).unwrap_err();
        assert!(e.message().contains("empty"), "{e}");
        let missing = dir.join("missing.txt");
        let e = cfg(&format!(
            "{BASE} --system-prompt-file {}",
            missing.display()
        ))
        .unwrap_err();
        assert!(
            e.message().contains("cannot be read") && e.message().contains("missing.txt"),
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
            (
                "--prompt-corpus poems",
                "must be one of sonnet, coding, random",
            ),
        ] {
            let e = cfg(&format!("{BASE} {flags}")).expect_err(flags);
            assert!(e.message().contains(why), "{flags}: {e}");
        }
        // A whitespace-only --system-prompt (one argv word, so built by hand).
        let args = PromptArgs {
            system_prompt: Some("  ".into()),
            conversation_turn_mean: 1,
            prompt_batch_size: 1,
            ..PromptArgs::default()
        };
        let e = PromptConfig::from_args(
            &args,
            (EndpointKind::Chat, CorpusStyle::Vllm),
            &Files::new(),
        )
        .unwrap_err();
        assert!(e.message().contains("--system-prompt is empty"), "{e}");
    }
}
