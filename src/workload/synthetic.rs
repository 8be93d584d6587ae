//! Synthetic conversations (spec §3.2): prompts of a sampled exact token length cut from the
//! corpus, an optional sampled `max_tokens`.
//!
//! Randomness: every concern draws from its own child stream of the root seed
//! ([`super::child_rng`]), so adding draws to one concern does not shift another.

use crate::conversation::{Conversation, Dataset, Sampling, Turn};

use super::{PromptGenerator, Tokenizer, child_rng, sample_length};

/// What a synthetic dataset is made of.
#[derive(Clone, Debug)]
pub struct SyntheticParams {
    /// Mean prompt length in tokens (`--isl`, default 550).
    pub isl_mean: u32,
    /// Standard deviation of the prompt length (`--isl-stddev`, default 0).
    pub isl_stddev: f64,
    /// Mean `max_tokens` (`--osl`); `None` sends no token limit.
    pub osl_mean: Option<u32>,
    /// Standard deviation of `max_tokens` (`--osl-stddev`, default 0).
    pub osl_stddev: f64,
    /// Conversations to build (`--num-dataset-entries`, default 100). Zero builds none.
    pub num_dataset_entries: usize,
    /// `--random-seed`; `None` seeds from the OS.
    pub seed: Option<u64>,
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
        }
    }
}

/// Builds the synthetic dataset: tokenizes the corpus once, then for each conversation samples
/// the ISL and OSL and generates the prompt. Sampled with `shuffle` unless told otherwise.
pub fn build(params: &SyntheticParams, tokenizer: &Tokenizer) -> Dataset {
    let mut length_rng = child_rng(params.seed, "dataset.prompt.length");
    let mut osl_rng = child_rng(params.seed, "dataset.output.length");
    let mut id_rng = child_rng(params.seed, "dataset.conversation.id");
    let mut prompts =
        PromptGenerator::new(tokenizer, child_rng(params.seed, "dataset.prompt.corpus"));
    let conversations = (0..params.num_dataset_entries)
        .map(|_| {
            let n = sample_length(
                f64::from(params.isl_mean),
                params.isl_stddev,
                &mut length_rng,
            );
            let prompt = prompts.generate(n);
            let max_tokens = params.osl_mean.map(|mean| {
                let osl = sample_length(f64::from(mean), params.osl_stddev, &mut osl_rng);
                u32::try_from(osl).unwrap_or(u32::MAX)
            });
            let session_id = uuid::Builder::from_random_bytes(rand::RngExt::random(&mut id_rng))
                .into_uuid()
                .to_string();
            Conversation {
                session_id,
                turns: vec![Turn {
                    max_tokens,
                    ..Turn::text(prompt)
                }],
                ..Conversation::default()
            }
        })
        .collect();
    Dataset {
        conversations,
        default_sampling: Sampling::Shuffle,
    }
}
