//! The workload: the conversations a run sends, built once before the run (docs/datasets.md).
//!
//! A source (the synthetic generator, a custom file, a public dataset) produces a
//! [`ringperf_wire::conversation::Dataset`]; [`prepared::prepare`] encodes what can be encoded before the
//! run and counts its ISL.
//!
//! Randomness: with a seed, every concern draws from its own child stream, derived from the
//! root seed and a name (`dataset.prompt.length`, ...), as AIPerf does, so adding draws to one
//! concern does not shift another. The streams are not bit-compatible with Python's.

pub mod cache_bust;
pub mod chat_template;
pub mod form;
pub mod hub;
pub mod loader;
pub mod media;
pub mod models;
pub mod nprandom;
pub mod o200k;
pub mod osl;
pub mod prepared;
pub mod prompt;
mod pycompat;
pub mod pyrandom;
pub mod range_ratio;
pub mod rankings;
pub mod seq_dist;
pub mod stream;
pub mod synthetic;
pub mod tokenizer;

pub use prepared::{
    InputsJson, KnownCounts, Prepared, PreparedConversation, PreparedTurn, inputs_json, prepare,
    prepare_known,
};
pub use prompt::{PromptGenerator, sample_length};
pub use seq_dist::{SeqDist, SeqDistError, SeqPair};
pub use synthetic::{PrefixPool, SyntheticParams};
pub use tokenizer::{Tokenizer, TokenizerError};

use rand::SeedableRng;
use rand::rngs::StdRng;

/// A random stream for one named concern: derived from `seed` and `name` when seeded, from the
/// OS otherwise.
pub fn child_rng(seed: Option<u64>, name: &str) -> StdRng {
    match seed {
        Some(root) => StdRng::seed_from_u64(derive_seed(root, name)),
        None => rand::make_rng(),
    }
}

/// Mixes a root seed and a name into a child seed (FNV-1a over the name, then SplitMix64).
pub(crate) fn derive_seed(root: u64, name: &str) -> u64 {
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

#[cfg(test)]
mod synthetic_tests;
#[cfg(test)]
mod tests;
