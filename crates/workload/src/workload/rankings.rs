//! Synthetic rankings requests (the Rankings flags; AIPerf's `synthetic_rankings` composer,
//! docs/flags.md "Rankings"): every conversation is one turn of one query and `N⁺(passages_mean,
//! passages_stddev)` passages (at least one), the query and each passage a fresh synthetic prompt
//! of `N⁺(mean, stddev)` tokens (integer parts of the means and deviations, as AIPerf reads them).

use ringperf_wire::conversation::{Content, Conversation, Dataset, Sampling, Turn};

use super::seq_dist::positive_normal_integer;
use super::synthetic::sequential_id;
use super::{PromptGenerator, SyntheticParams, Tokenizer, child_rng};

/// The Rankings group's flags (defaults: 1 passage, 550-token passages and query).
#[derive(Clone, Debug, PartialEq)]
pub struct RankingsShape {
    pub passages_mean: u32,
    pub passages_stddev: u32,
    pub passage_tokens_mean: u32,
    pub passage_tokens_stddev: u32,
    pub query_tokens_mean: u32,
    pub query_tokens_stddev: u32,
}

impl Default for RankingsShape {
    fn default() -> Self {
        Self {
            passages_mean: 1,
            passages_stddev: 0,
            passage_tokens_mean: 550,
            passage_tokens_stddev: 0,
            query_tokens_mean: 550,
            query_tokens_stddev: 0,
        }
    }
}

/// Builds `params.num_dataset_entries` one-turn rankings conversations.
pub fn build(params: &SyntheticParams, shape: &RankingsShape, tokenizer: &Tokenizer) -> Dataset {
    let seed = params.seed;
    let mut passages_rng = child_rng(seed, "dataset.rankings.passages");
    let mut passage_tokens_rng = child_rng(seed, "dataset.rankings.passages.tokens");
    let mut query_tokens_rng = child_rng(seed, "dataset.rankings.query.tokens");
    let mut id_rng = child_rng(seed, "dataset.conversation.id");
    let mut prompts = PromptGenerator::new(tokenizer, child_rng(seed, "dataset.prompt.corpus"));
    let draw = |mean: u32, stddev: u32, rng: &mut _| {
        positive_normal_integer(f64::from(mean), f64::from(stddev), rng) as usize
    };
    // A signal stops the build: the caller drops the partial dataset.
    let conversations = (0..params.num_dataset_entries)
        .take_while(|_| !ringperf_io::control::interrupted())
        .map(|index| {
            let session_id = if params.sequential_ids {
                sequential_id(index)
            } else {
                use rand::RngExt;
                uuid::Builder::from_random_bytes(id_rng.random())
                    .into_uuid()
                    .to_string()
            };
            let n = draw(
                shape.passages_mean,
                shape.passages_stddev,
                &mut passages_rng,
            );
            let query_len = draw(
                shape.query_tokens_mean,
                shape.query_tokens_stddev,
                &mut query_tokens_rng,
            );
            let query = prompts.generate(query_len);
            let passages = (0..n)
                .map(|_| {
                    let len = draw(
                        shape.passage_tokens_mean,
                        shape.passage_tokens_stddev,
                        &mut passage_tokens_rng,
                    );
                    prompts.generate(len)
                })
                .collect();
            Conversation {
                session_id,
                system: None,
                user_context: None,
                turns: vec![Turn {
                    content: Content::Rankings { query, passages },
                    ..Turn::default()
                }],
                ..Conversation::default()
            }
        })
        .collect();
    Dataset {
        conversations,
        default_sampling: Sampling::Shuffle,
        replay: false,
    }
}
