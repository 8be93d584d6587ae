//! The workload: the dataset entries a run sends, built once before the run (spec §3.1–§3.2).
//!
//! A synthetic dataset has `num_dataset_entries` single-turn entries. Each has a prompt of a
//! sampled exact token length, an optional sampled `max_tokens`, the pre-encoded JSON body the
//! workers send verbatim, and its ISL (client tokenization of the wire payload's text).
//!
//! Randomness: with a seed, every concern draws from its own child stream, derived from the
//! root seed and a name (`dataset.prompt.length`, ...), as AIPerf does, so adding draws to one
//! concern does not shift another. The streams are not bit-compatible with Python's.

pub mod prompt;
pub mod tokenizer;

pub use prompt::{PromptGenerator, sample_length};
pub use tokenizer::{Tokenizer, TokenizerError};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::endpoint::{EndpointKind, PayloadParams, build_payload, payload_texts};

/// What a synthetic dataset is made of.
#[derive(Clone, Debug)]
pub struct WorkloadParams {
    /// Mean prompt length in tokens (`--isl`, default 550).
    pub isl_mean: u32,
    /// Standard deviation of the prompt length (`--isl-stddev`, default 0).
    pub isl_stddev: f64,
    /// Mean `max_tokens` (`--osl`); `None` sends no token limit.
    pub osl_mean: Option<u32>,
    /// Standard deviation of `max_tokens` (`--osl-stddev`, default 0).
    pub osl_stddev: f64,
    /// Distinct entries to build (`--num-dataset-entries`, default 100). Zero builds none.
    pub num_dataset_entries: usize,
    /// `--random-seed`; `None` seeds from the OS.
    pub seed: Option<u64>,
    /// Endpoint the bodies are built for.
    pub kind: EndpointKind,
    /// Model, streaming and extras of every body.
    pub payload: PayloadParams,
}

impl Default for WorkloadParams {
    fn default() -> Self {
        Self {
            isl_mean: 550,
            isl_stddev: 0.0,
            osl_mean: None,
            osl_stddev: 0.0,
            num_dataset_entries: 100,
            seed: None,
            kind: EndpointKind::Chat,
            payload: PayloadParams::default(),
        }
    }
}

/// The entries of a run, in dataset order (credits refer to them by index).
#[derive(Clone, Debug, Default)]
pub struct Dataset {
    /// The entries.
    pub entries: Vec<Entry>,
}

/// One dataset entry: a single-turn conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Conversation id: a UUID v4 string (drawn from the seeded stream when a seed is set), as
    /// AIPerf's `session_id` / `conversation_id`.
    pub id: String,
    /// The prompt text.
    pub prompt: String,
    /// `max_tokens` sent, if any.
    pub max_tokens: Option<u32>,
    /// The JSON request body.
    pub payload: Vec<u8>,
    /// Tokens in the payload's text ([`payload_texts`]): the request's client-side ISL.
    pub isl_tokens: u64,
}

/// A random stream for one named concern: derived from `seed` and `name` when seeded, from the
/// OS otherwise.
pub fn child_rng(seed: Option<u64>, name: &str) -> StdRng {
    match seed {
        Some(root) => StdRng::seed_from_u64(derive_seed(root, name)),
        None => rand::make_rng(),
    }
}

/// Mixes a root seed and a name into a child seed (FNV-1a over the name, then SplitMix64).
fn derive_seed(root: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = root ^ h;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Builds the synthetic dataset: tokenizes the corpus once, then for each entry samples the ISL
/// and OSL, generates the prompt, encodes the body and counts its ISL.
pub fn build_dataset(params: &WorkloadParams, tokenizer: &Tokenizer) -> Dataset {
    let mut length_rng = child_rng(params.seed, "dataset.prompt.length");
    let mut osl_rng = child_rng(params.seed, "dataset.output.length");
    let mut id_rng = child_rng(params.seed, "dataset.conversation.id");
    let mut prompts =
        PromptGenerator::new(tokenizer, child_rng(params.seed, "dataset.prompt.corpus"));
    let entries = (0..params.num_dataset_entries)
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
            let payload = build_payload(params.kind, &params.payload, &prompt, max_tokens);
            let isl_tokens = tokenizer.count(&payload_texts(params.kind, &payload)) as u64;
            let id = uuid::Builder::from_random_bytes(rand::RngExt::random(&mut id_rng))
                .into_uuid()
                .to_string();
            Entry {
                id,
                prompt,
                max_tokens,
                payload,
                isl_tokens,
            }
        })
        .collect();
    Dataset { entries }
}

/// AIPerf's `inputs.json`: `{"data":[{"session_id": <id>, "payloads":[<body>]}, ...]}`, each body
/// as the JSON object that is sent (key order kept).
pub fn inputs_json(dataset: &Dataset) -> Value {
    let data = dataset
        .entries
        .iter()
        .map(|e| {
            let body = serde_json::from_slice::<Value>(&e.payload).unwrap_or(Value::Null);
            serde_json::json!({ "session_id": e.id, "payloads": [body] })
        })
        .collect();
    serde_json::json!({ "data": Value::Array(data) })
}

#[cfg(test)]
mod tests;
