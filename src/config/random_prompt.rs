//! `--random-range-ratio`, `--random-corpus-style` and `--cache-bust`, validated with AIPerf
//! 0.13's rules and messages (`config/dataset/content.py`, `dataset/composer/base.py`,
//! `config/config.py`; docs/synthetic.md).

use super::ConfigError;
use crate::cli::random_prompt::{CacheBustArg, CorpusStyleArg, RandomPromptArgs};
use ringperf_wire::endpoint::EndpointKind;
use ringperf_workload::workload::range_ratio::{CorpusStyle, RangeRatio};

pub use ringperf_workload::workload::cache_bust::CacheBust;

/// The validated flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RandomPromptConfig {
    /// `--random-range-ratio` under its style; `None`: lengths from the means and deviations.
    pub range_ratio: Option<RangeRatio>,
    /// `--random-corpus-style` (`vllm` unless given).
    pub style: CorpusStyle,
    /// `--cache-bust` (`none` unless given).
    pub cache_bust: CacheBust,
}

/// What the other flags say that the rules need.
#[derive(Clone, Copy, Debug)]
pub struct Context {
    /// `--isl` (any alias) was on the command line.
    pub isl_given: bool,
    /// `--osl` (any alias) was on the command line.
    pub osl_given: bool,
    pub isl_stddev: f64,
    pub osl_stddev: f64,
    /// `--seq-dist` was given.
    pub seq_dist: bool,
    pub isl_mean: u32,
    /// `--prompt-prefix-length`, 0 without.
    pub prefix_length: usize,
    /// A system message is configured (`--system-prompt`, `--system-prompt-file` or
    /// `--shared-system-prompt-length`).
    pub system_message: bool,
    /// The prompts are synthetic (no `--input-file`, no `--public-dataset`).
    pub synthetic: bool,
    pub endpoint: EndpointKind,
}

/// `--random-corpus-style` (`vllm` unless given).
pub fn style(arg: Option<CorpusStyleArg>) -> CorpusStyle {
    match arg {
        None | Some(CorpusStyleArg::Vllm) => CorpusStyle::Vllm,
        Some(CorpusStyleArg::Sglang) => CorpusStyle::Sglang,
    }
}

fn cache_bust(arg: Option<CacheBustArg>) -> CacheBust {
    match arg {
        None | Some(CacheBustArg::None) => CacheBust::None,
        Some(CacheBustArg::SystemPrefix) => CacheBust::SystemPrefix,
        Some(CacheBustArg::SystemSuffix) => CacheBust::SystemSuffix,
        Some(CacheBustArg::FirstTurnPrefix) => CacheBust::FirstTurnPrefix,
        Some(CacheBustArg::FirstTurnSuffix) => CacheBust::FirstTurnSuffix,
        Some(CacheBustArg::WarmupIsolationSystem) => CacheBust::WarmupIsolationSystem,
        Some(CacheBustArg::WarmupIsolationFirstTurn) => CacheBust::WarmupIsolationFirstTurn,
    }
}

/// The range ratio and AIPerf's rules around it.
fn range_ratio(text: &str, style: CorpusStyle, c: &Context) -> Result<RangeRatio, ConfigError> {
    let ratio = RangeRatio::parse(text, style)
        .map_err(|e| ConfigError::flag(format!("Invalid --random-range-ratio value: {e}")))?;
    if c.seq_dist {
        return Err(ConfigError::flag(
            "random_range_ratio cannot be combined with sequence_distribution; use one or the \
             other.",
        ));
    }
    for (given, flag) in [(c.isl_given, "--isl"), (c.osl_given, "--osl")] {
        if !given {
            return Err(ConfigError::flag(format!(
                "--random-range-ratio requires {flag} to be set explicitly. There is no safe \
                 default when a ratio window is requested."
            )));
        }
    }
    for (sd, flag, what) in [
        (c.isl_stddev, "--isl-stddev", "ISL"),
        (c.osl_stddev, "--osl-stddev", "OSL"),
    ] {
        if sd != 0.0 {
            return Err(ConfigError::flag(format!(
                "{flag} cannot be combined with --random-range-ratio; the ratio window already \
                 controls {what} variance."
            )));
        }
    }
    // vLLM's guard: a window whose smallest prompt (with the prefix) is empty is refused.
    let low = ratio.input_bounds(c.isl_mean).0 as usize;
    if style == CorpusStyle::Vllm && c.prefix_length + low < 1 {
        return Err(ConfigError::flag(format!(
            "--random-range-ratio {} with --isl {} produces a minimum input of {} tokens \
             (tokenizer adds 0 special token(s), prefix contributes {}). Increase --isl, add \
             --prompt-prefix-length, or lower --random-range-ratio so the minimum is at least 1 \
             token.",
            text,
            c.isl_mean,
            c.prefix_length + low,
            c.prefix_length
        )));
    }
    Ok(ratio)
}

/// `--cache-bust` and the endpoint and system message it needs.
fn check_cache_bust(target: CacheBust, c: &Context) -> Result<(), ConfigError> {
    if target == CacheBust::None {
        return Ok(());
    }
    if !matches!(
        c.endpoint,
        EndpointKind::Chat | EndpointKind::Responses | EndpointKind::Messages
    ) {
        return Err(ConfigError::flag(format!(
            "cache-bust is not supported by endpoint {}; select an endpoint whose plugin \
             metadata sets supports_cache_bust=true",
            c.endpoint.as_str()
        )));
    }
    if target == CacheBust::WarmupIsolationSystem && c.synthetic && !c.system_message {
        return Err(ConfigError::flag(
            "cache_bust=warmup_isolation_system requires a shared system prompt, but no \
             shared_system_length or verbatim system prompt is configured on the synthetic \
             dataset. The marker would silently fall through to the user turn, making it \
             indistinguishable from warmup_isolation_first_turn. Either set \
             prefix_prompts.shared_system_length (--shared-system-prompt-length), pass \
             --system-prompt/--system-prompt-file, or switch to \
             cache_bust=warmup_isolation_first_turn.",
        ));
    }
    Ok(())
}

/// Checks the three flags against the others.
///
/// # Errors
/// AIPerf's messages, naming the flags at fault.
pub fn from_args(a: &RandomPromptArgs, c: &Context) -> Result<RandomPromptConfig, ConfigError> {
    let style = style(a.random_corpus_style);
    // AIPerf skips an empty ratio (`if not cli.prompt_random_range_ratio`).
    let range_ratio = match a.random_range_ratio.as_deref() {
        Some(text) if !text.is_empty() => Some(range_ratio(text, style, c)?),
        _ => None,
    };
    let cache_bust = cache_bust(a.cache_bust);
    check_cache_bust(cache_bust, c)?;
    Ok(RandomPromptConfig {
        range_ratio,
        style,
        cache_bust,
    })
}

#[cfg(test)]
mod tests {

    use crate::config::Config;

    fn cfg(flags: &str) -> Result<Config, String> {
        let line = format!("ringperf profile -m m -u 127.0.0.1:1 {flags}");
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn range_ratio_needs_both_means_given() {
        let e = cfg("--random-range-ratio 0.3 --osl 10").unwrap_err();
        assert!(
            e.contains("--random-range-ratio requires --isl to be set explicitly"),
            "{e}"
        );
        let e = cfg("--random-range-ratio 0.3 --isl 100").unwrap_err();
        assert!(
            e.contains("--random-range-ratio requires --osl to be set explicitly"),
            "{e}"
        );
        // Any alias counts as given, even at the default value.
        let c =
            cfg("--random-range-ratio 0.3 --prompt-input-tokens-mean 550 --output-tokens-mean 8")
                .unwrap();
        let r = c.random_prompt.range_ratio.unwrap();
        assert_eq!(r.input_bounds(550), (385, 715));
    }

    #[test]
    fn range_ratio_refuses_what_aiperf_refuses() {
        let base = "--isl 100 --osl 10";
        let e = cfg(&format!("{base} --random-range-ratio 0.3 --isl-stddev 5")).unwrap_err();
        assert!(
            e.contains("--isl-stddev cannot be combined with --random-range-ratio"),
            "{e}"
        );
        let e = cfg(&format!("{base} --random-range-ratio 0.3 --osl-stddev 1")).unwrap_err();
        assert!(
            e.contains("--osl-stddev cannot be combined with --random-range-ratio"),
            "{e}"
        );
        let e = cfg(&format!(
            "{base} --random-range-ratio 0.3 --seq-dist 10,5:100"
        ))
        .unwrap_err();
        assert!(
            e.contains("cannot be combined with sequence_distribution"),
            "{e}"
        );
        let e = cfg(&format!("{base} --random-range-ratio 1.2")).unwrap_err();
        assert!(
            e.contains(
                "Invalid --random-range-ratio value: ISL range_ratio must be in [0.0, 1.0), got 1.2"
            ),
            "{e}"
        );
        let e = cfg(&format!(
            "{base} --random-corpus-style sglang --random-range-ratio {{\"input\":0.1,\"output\":0.2}}"
        ))
        .unwrap_err();
        assert!(
            e.contains("SGLang corpus style applies a single ratio"),
            "{e}"
        );
        // vLLM's empty-prompt guard: floor(1·(1−0.9)) = 0 tokens and no prefix.
        let e = cfg("--isl 1 --osl 4 --random-range-ratio 0.9").unwrap_err();
        assert!(e.contains("produces a minimum input of 0 tokens"), "{e}");
        // A prefix carries it; sglang's window never reaches 0.
        cfg("--isl 1 --osl 4 --random-range-ratio 0.9 --prompt-prefix-pool-size 2 --prompt-prefix-length 3")
            .unwrap();
        cfg("--isl 1 --osl 4 --random-range-ratio 0.9 --random-corpus-style sglang").unwrap();
        // With a file the prompts are the records': the ratio has nothing to shape.
        let e = cfg("--isl 100 --osl 10 --random-range-ratio 0.3 --input-file /dev/null --custom-dataset-type single_turn")
            .unwrap_err();
        assert!(e.contains("--random-range-ratio"), "{e}");
    }

    #[test]
    fn cache_bust_refuses_what_aiperf_refuses() {
        let e = cfg("--endpoint-type completions --cache-bust first_turn_prefix").unwrap_err();
        assert!(
            e.contains("cache-bust is not supported by endpoint completions"),
            "{e}"
        );
        let e = cfg("--cache-bust warmup_isolation_system").unwrap_err();
        assert!(
            e.contains("cache_bust=warmup_isolation_system requires a shared system prompt"),
            "{e}"
        );
        cfg("--cache-bust warmup_isolation_system --shared-system-prompt-length 20").unwrap();
        cfg("--cache-bust WARMUP_ISOLATION_FIRST_TURN").unwrap();
        // Responses and Messages take every target; so do dataset files.
        cfg("--endpoint-type responses --cache-bust system_prefix").unwrap();
        cfg("--endpoint-type messages --cache-bust first_turn_suffix").unwrap();
        cfg("--cache-bust first_turn_prefix --input-file /dev/null --custom-dataset-type single_turn")
            .unwrap();
        // AIPerf's shared-system-prompt check is the synthetic dataset's.
        cfg("--cache-bust warmup_isolation_system --input-file /dev/null --custom-dataset-type single_turn")
            .unwrap();
        // `none` on any endpoint.
        cfg("--endpoint-type completions --cache-bust none").unwrap();
    }
}
