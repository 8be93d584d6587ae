//! Synthetic conversations (docs/synthetic.md), built as AIPerf 0.13's synthetic composer builds
//! them (`dataset/composer/synthetic.py`, `dataset/generator/prompt.py`):
//!
//! - `conversations` conversations (AIPerf's dataset `entries`: `--num-dataset-entries`, else
//!   `--conversation-num`, else `--request-count`, else 100), named `session_000000`, … when a
//!   seed was given and by random UUIDs otherwise;
//! - each of `max(1, ceil(N⁺(turn_mean, turn_stddev)))` turns (normal truncated at zero);
//! - every turn a fresh prompt: its own (ISL, OSL) from `--seq-dist`, or ISL and OSL drawn from
//!   their means and (integer-truncated) standard deviations; `batch_size` texts per turn;
//! - a later turn waits `ceil(N⁺(delay_mean, delay_stddev)) × ratio` ms after the previous reply
//!   (only when the delay mean is above zero);
//! - with a prefix pool, each text of a conversation's *first* turn starts with one of the pool's
//!   prefixes, picked at random; the prefix is additive (the prompt is `prefix + ISL` tokens);
//! - a conversation-wide system message (verbatim or a shared synthetic one) and a per-conversation
//!   user-context message.
//!
//! Randomness: every concern draws from its own child stream of the root seed
//! ([`super::child_rng`]), so adding draws to one concern does not shift another.

use rand::RngExt;

use ringperf_wire::conversation::{Content, Conversation, Dataset, Sampling, Turn};

use super::prepared::KnownCounts;
use super::range_ratio::RangeSampler;
use super::seq_dist::{SeqDist, positive_normal_integer};
use super::{PromptGenerator, Tokenizer, child_rng};

/// A pool of prefix prompts (`--prompt-prefix-pool-size`, `--prompt-prefix-length`).
#[derive(Clone, Debug, PartialEq)]
pub struct PrefixPool {
    /// Distinct prefixes generated.
    pub pool_size: usize,
    /// Tokens in each prefix.
    pub length: usize,
}

/// What a synthetic dataset is made of.
#[derive(Clone, Debug)]
pub struct SyntheticParams {
    /// Mean prompt length in tokens (`--isl`, default 550).
    pub isl_mean: u32,
    /// Standard deviation of the prompt length (`--isl-stddev`, default 0; AIPerf uses its
    /// integer part).
    pub isl_stddev: f64,
    /// Mean `max_tokens` (`--osl`); `None` sends no token limit.
    pub osl_mean: Option<u32>,
    /// Standard deviation of `max_tokens` (`--osl-stddev`, default 0; integer part used).
    pub osl_stddev: f64,
    /// Conversations to build (AIPerf's dataset entries). Zero builds none.
    pub num_dataset_entries: usize,
    /// `--random-seed`; `None` seeds from the OS.
    pub seed: Option<u64>,
    /// Name conversations `session_000000`, … (AIPerf does when a seed is given); random UUIDs
    /// otherwise.
    pub sequential_ids: bool,
    /// Turns, delays, lengths' pairs, prefix and system prompts, texts per turn.
    pub shaping: Shaping,
}

/// How synthetic conversations are shaped beyond their lengths: the Conversation Input, Prompt
/// and Prefix Prompt flags (validated in `config::prompt`).
#[derive(Clone, Debug, PartialEq)]
pub struct Shaping {
    /// Mean turns per conversation (`--conversation-turn-mean`, default 1).
    pub turn_mean: u32,
    /// Standard deviation of the turn count (`--conversation-turn-stddev`, default 0).
    pub turn_stddev: u32,
    /// Mean delay before a later turn, ms (`--conversation-turn-delay-mean`, default 0 = none).
    pub turn_delay_mean_ms: f64,
    /// Its standard deviation, ms (`--conversation-turn-delay-stddev`; integer part used).
    pub turn_delay_stddev_ms: f64,
    /// Multiplier of every drawn delay (`--conversation-turn-delay-ratio`, default 1).
    pub turn_delay_ratio: f64,
    /// `--seq-dist`: each turn draws its (ISL, OSL) pair here instead of from the means.
    pub seq_dist: Option<SeqDist>,
    /// `--random-range-ratio`: each turn draws its (ISL, OSL) pair uniformly from these windows.
    pub range_ratio: Option<RangeSampler>,
    /// Tokens taken off a first turn's drawn ISL (AIPerf's `first_turn_isl_adjustment`): the
    /// `--cache-bust` marker when it lands there, and with `--apply-chat-template` the
    /// template's fixed cost per request and wrap per message.
    pub first_turn_isl_adjustment: u32,
    /// Tokens taken off each later turn's drawn ISL (AIPerf's
    /// `subsequent_turn_isl_adjustment`): the chat template's wrap per message.
    pub later_turn_isl_adjustment: u32,
    /// Prefix prompts prepended to first turns.
    pub prefix: Option<PrefixPool>,
    /// Verbatim system message (`--system-prompt`, `--system-prompt-file`).
    pub system_prompt: Option<String>,
    /// Tokens of one synthetic system message shared by every conversation
    /// (`--shared-system-prompt-length`).
    pub shared_system_length: Option<u32>,
    /// Tokens of a user-context message unique to each conversation
    /// (`--user-context-prompt-length`).
    pub user_context_length: Option<u32>,
    /// Texts per turn (`--prompt-batch-size`, default 1).
    pub batch_size: usize,
    /// What prompts are made of (`--prompt-corpus`).
    pub corpus: super::prompt::Corpus,
}

impl Default for Shaping {
    fn default() -> Self {
        Self {
            turn_mean: 1,
            turn_stddev: 0,
            turn_delay_mean_ms: 0.0,
            turn_delay_stddev_ms: 0.0,
            turn_delay_ratio: 1.0,
            seq_dist: None,
            range_ratio: None,
            first_turn_isl_adjustment: 0,
            later_turn_isl_adjustment: 0,
            prefix: None,
            system_prompt: None,
            shared_system_length: None,
            user_context_length: None,
            batch_size: 1,
            corpus: super::prompt::Corpus::Sonnet,
        }
    }
}

impl Default for SyntheticParams {
    fn default() -> Self {
        Self {
            isl_mean: 550,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            num_dataset_entries: 100,
            seed: None,
            sequential_ids: false,
            shaping: Shaping::default(),
        }
    }
}

/// AIPerf's session id of the `index`-th synthetic conversation when seeded.
pub fn sequential_id(index: usize) -> String {
    format!("session_{index:06}")
}

/// Builds the synthetic dataset: tokenizes the corpus once, builds the prefix pool and the shared
/// system prompt, then every conversation turn by turn. Sampled with `shuffle` unless told
/// otherwise.
pub fn build(params: &SyntheticParams, tokenizer: &Tokenizer) -> Dataset {
    build_counted(params, tokenizer).0
}

/// [`build`], with the token count of each turn's text when the turn has one text
/// ([`KnownCounts`]): the generator measured it while repairing the text to its length, so
/// [`super::prepare_known`] need not tokenize the text again when it is the whole ISL text.
pub fn build_counted(params: &SyntheticParams, tokenizer: &Tokenizer) -> (Dataset, KnownCounts) {
    let seed = params.seed;
    let mut length_rng = child_rng(seed, "dataset.prompt.length");
    let mut osl_rng = child_rng(seed, "composer.turn.max_tokens");
    let mut seq_rng = child_rng(seed, "models.sequence.distribution");
    let mut range_rng = child_rng(seed, "models.range_ratio.distribution");
    let mut turn_rng = child_rng(seed, "composer.conversation.turn_count");
    let mut delay_rng = child_rng(seed, "composer.conversation.turn_delay");
    let mut prefix_rng = child_rng(seed, "dataset.prompt.prefix");
    let mut id_rng = child_rng(seed, "dataset.conversation.id");
    let mut prompts = PromptGenerator::for_corpus(
        tokenizer,
        params.shaping.corpus,
        child_rng(seed, "dataset.prompt.corpus"),
    );

    // Integer parts, as AIPerf reads these distributions (`int(stddev)`, `int(mean)`).
    let isl_stddev = params.isl_stddev.trunc();
    let osl_stddev = params.osl_stddev.trunc();
    let delay_mean = params.shaping.turn_delay_mean_ms.trunc();
    let delay_stddev = params.shaping.turn_delay_stddev_ms.trunc();

    let pool: Vec<Vec<u32>> = match &params.shaping.prefix {
        Some(p) if p.length > 0 => (0..p.pool_size)
            .map(|_| tokenizer.encode(&prompts.generate(p.length)))
            .collect(),
        _ => Vec::new(),
    };
    let shared_system = params
        .shaping
        .shared_system_length
        .map(|n| prompts.generate(n as usize));
    let system = params.shaping.system_prompt.clone().or(shared_system);

    let mut conversations = Vec::with_capacity(params.num_dataset_entries);
    let mut counts: Vec<Vec<Option<u32>>> = Vec::with_capacity(params.num_dataset_entries);
    for index in 0..params.num_dataset_entries {
        // A signal stops the build: the caller drops the partial dataset.
        if ringperf_io::control::interrupted() {
            break;
        }
        let session_id = if params.sequential_ids {
            sequential_id(index)
        } else {
            uuid::Builder::from_random_bytes(id_rng.random())
                .into_uuid()
                .to_string()
        };
        let n_turns = positive_normal_integer(
            f64::from(params.shaping.turn_mean.max(1)),
            f64::from(params.shaping.turn_stddev),
            &mut turn_rng,
        );
        let mut turn_counts = Vec::with_capacity(n_turns as usize);
        let turns = (0..n_turns)
            .map(|t| {
                let first = t == 0;
                // A ratio window's draw may be 0 tokens: only a first turn with a prefix keeps
                // that (prefix alone), as AIPerf floors it.
                let floor = u32::from(!first || pool.is_empty());
                let pair = match (&params.shaping.seq_dist, &params.shaping.range_ratio) {
                    (Some(d), _) => Some(d.sample(&mut seq_rng)),
                    (None, Some(r)) => {
                        let (isl, osl) = r.sample(&mut range_rng);
                        Some((isl.max(floor), osl))
                    }
                    (None, None) => None,
                };
                // The marker's and the template's budget come off the turn's length (its mean
                // when drawn), after the draw, as AIPerf shifts a drawn length.
                let cost = if first {
                    params.shaping.first_turn_isl_adjustment
                } else {
                    params.shaping.later_turn_isl_adjustment
                };
                let adjust = |n: u32| match cost {
                    0 => n,
                    cost => n.saturating_sub(cost).max(floor),
                };
                let texts: Vec<(String, usize)> = (0..params.shaping.batch_size.max(1))
                    .map(|_| {
                        let n = match pair {
                            Some((isl, _)) => adjust(isl),
                            None => positive_normal_integer(
                                f64::from(adjust(params.isl_mean)),
                                isl_stddev,
                                &mut length_rng,
                            ),
                        };
                        if first && !pool.is_empty() {
                            let prefix = &pool[prefix_rng.random_range(0..pool.len())];
                            prompts.generate_counted(prefix, n as usize)
                        } else {
                            prompts.generate_counted(&[], n as usize)
                        }
                    })
                    .collect();
                // Several texts are counted joined (by a space): their sum is not that count.
                turn_counts.push(match texts.as_slice() {
                    [(_, count)] => u32::try_from(*count).ok(),
                    _ => None,
                });
                let texts = texts.into_iter().map(|(text, _)| text).collect();
                let max_tokens = match pair {
                    Some((_, osl)) => Some(osl),
                    None => params.osl_mean.map(|mean| {
                        positive_normal_integer(f64::from(mean), osl_stddev, &mut osl_rng)
                    }),
                };
                let delay_ms = (!first && delay_mean > 0.0).then(|| {
                    f64::from(positive_normal_integer(
                        delay_mean,
                        delay_stddev,
                        &mut delay_rng,
                    )) * params.shaping.turn_delay_ratio
                });
                Turn {
                    content: Content::Texts(texts),
                    max_tokens,
                    delay_ms,
                    ..Turn::default()
                }
            })
            .collect();
        conversations.push(Conversation {
            session_id,
            system: system.clone(),
            user_context: None,
            turns,
            ..Conversation::default()
        });
        counts.push(turn_counts);
    }
    if let Some(n) = params.shaping.user_context_length {
        for c in &mut conversations {
            c.user_context = Some(prompts.generate(n as usize));
        }
    }
    let dataset = Dataset {
        replay: false,
        conversations,
        // AIPerf 0.13 walks a synthetic dataset in order (its `sampling` default), whatever
        // its `--dataset-sampling-strategy` help says.
        default_sampling: Sampling::Sequential,
    };
    (dataset, KnownCounts(counts))
}
