//! Prompts from a trace's `input_length` and `hash_ids` (docs/datasets.md): each hash id stands
//! for one block of `block_size` tokens whose content is a pure function of the hash id (and of
//! the run's seed and the trace file), so requests that share leading hash ids share a
//! byte-equal prompt prefix, as a KV cache would see it, and requests that do not share a hash id
//! share no block.
//!
//! A block is the tokenizer's block-separator token (BOS, else EOS; `<|endoftext|>` for the
//! builtin o200k), then the block's *code*, then corpus words. The tokens after the separator are
//! all *words*: corpus tokens that decode to one space and lowercase ASCII letters and re-encode
//! to themselves. Such a word never merges with its neighbours (the pre-tokenizer cuts before each
//! space), and the separator is a special token, cut out before byte-pair encoding, so a block's
//! text re-tokenizes to exactly its tokens, and so does any prefix of it.
//!
//! The code is the hash id, made distinct by construction: the id (as 64 bits) XOR the scope
//! (seed and file hash), put through a bijective mix, written in base `k` (the number of
//! distinct words) with `L` digits, least significant first, the least `L` with `k^L ≥ 2^64`
//! (4,511 words and 6 digits for the builtin). Distinct ids give distinct codes, so distinct
//! blocks, for every block of more than `L` tokens; the mix spreads consecutive ids so that even
//! shorter blocks rarely agree (a block cut to 1 token is the separator alone). The rest of the block is the corpus's words in corpus order from an offset derived
//! from the code.
//!
//! With `m` hash ids the prompt is `m` blocks: when `m · block_size` exceeds `input_length` the
//! last block is cut to `input_length − (m−1) · block_size` tokens (it must stay in
//! `1..=block_size`); when it falls short, the tail is filled with corpus words from a random
//! offset (a trace that hashed only its cached prefix). A hash id keeps one size: the same id
//! asked at two sizes is an error, as in AIPerf. Without hash ids the prompt is a synthetic
//! prompt of exactly `input_length` tokens.
//!
//! Blocks are not stored: a block is recomputed from its id, and only each id's size is kept
//! (for the one-size check). A tokenizer with fewer than two such words (no space-prefixed
//! lowercase word tokens) falls back to the corpus's distinct tokens as the alphabet and the
//! whole corpus as filler, without the exact re-tokenization.

use std::collections::HashMap;

use rand::RngExt;
use rand::rngs::StdRng;

use crate::workload::prompt::shakespeare_ids;
use crate::workload::{PromptGenerator, Tokenizer, child_rng};

/// Why a trace row's `input_length` and `hash_ids` make no prompt (the message is for the
/// `hash_ids` field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// `input_length` or the block size is 0.
    Empty {
        /// The row's `input_length`.
        input_length: usize,
        /// The block size.
        block_size: usize,
    },
    /// The hash ids' blocks cannot be cut to `input_length`: the last would have `last` tokens.
    DoesNotFit {
        /// How many hash ids.
        ids: usize,
        /// The block size.
        block_size: usize,
        /// The row's `input_length`.
        input_length: usize,
        /// The last block's size it would take (outside `1..=block_size`).
        last: i128,
    },
    /// A hash id asked at another size than the one it was first made at.
    SizeChanged {
        /// The hash id.
        id: i64,
        /// The size asked now.
        size: usize,
        /// The size it was made at.
        first: usize,
    },
}

impl std::fmt::Display for BlockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BlockError::Empty {
                input_length,
                block_size,
            } => write!(
                f,
                "input_length {input_length} and block size {block_size} must both be greater \
                 than 0"
            ),
            BlockError::DoesNotFit {
                ids,
                block_size: bs,
                input_length,
                last,
            } => write!(
                f,
                "{ids} hash ids of {bs}-token blocks do not fit input_length {input_length}: the \
                 last block would have {last} tokens (it must be 1..={bs}); check \
                 --prompt-input-tokens-block-size"
            ),
            BlockError::SizeChanged { id, size, first } => write!(
                f,
                "hash id {id} is used at {size} tokens but was first used at {first} tokens; a \
                 hash id is one fixed block (a corrupt trace, or a block size that disagrees \
                 with the trace's)"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// The fewest words an alphabet may have: with one, no code can tell ids apart.
const MIN_WORDS: usize = 2;

/// Builds block prompts for one trace file.
#[derive(Debug)]
pub struct BlockPrompts<'t> {
    tokenizer: &'t Tokenizer,
    /// The code's digits: the distinct words, by token id.
    words: Vec<u32>,
    /// The corpus's words, in corpus order.
    filler: Vec<u32>,
    /// Digits in a code.
    code_len: usize,
    separator: Option<u32>,
    block_size: usize,
    seed: u64,
    scope: u64,
    /// Each hash id's size, as first made.
    sizes: HashMap<i64, usize>,
    plain: PromptGenerator<'t>,
    tail_rng: StdRng,
}

impl<'t> BlockPrompts<'t> {
    /// Blocks of `block_size` tokens, scoped to `seed` and `file_hash` (the trace file's
    /// content hash: the same hash id in two files gives two different blocks).
    pub fn new(tokenizer: &'t Tokenizer, block_size: usize, seed: u64, file_hash: u64) -> Self {
        let corpus = shakespeare_ids(tokenizer);
        let (words, filler) = alphabet(tokenizer, &corpus);
        Self {
            tokenizer,
            plain: PromptGenerator::with_corpus(
                tokenizer,
                corpus,
                child_rng(Some(seed), "dataset.prompt.corpus"),
            ),
            code_len: code_len(words.len()),
            words,
            filler,
            separator: tokenizer.block_separator(),
            block_size,
            seed,
            scope: seed ^ file_hash,
            sizes: HashMap::new(),
            tail_rng: child_rng(Some(seed), "dataset.prompt.hash_ids.tail"),
        }
    }

    /// Blocks from now on are scoped to `key` instead (an agent trace's id: the same hash id
    /// in two traces gives two blocks) and are `block_size` tokens long.
    pub fn rescope(&mut self, key: u64, block_size: usize) {
        self.scope = self.seed ^ key;
        self.block_size = block_size;
        self.sizes.clear();
    }

    /// Appends the whole block of each id in `ids`.
    pub fn push_blocks(&self, out: &mut Vec<u32>, ids: &[i64]) {
        for &id in ids {
            self.push_block(out, id, self.block_size);
        }
    }

    /// Appends `n` tokens of unkeyed text (a prompt's tail past its hash blocks).
    pub fn push_tail(&mut self, out: &mut Vec<u32>, n: usize) {
        let start = if self.filler.is_empty() {
            0
        } else {
            self.tail_rng.random_range(0..self.filler.len())
        };
        push_cycled(out, &self.filler, start, n);
    }

    /// The text of `tokens`.
    pub fn decode(&self, tokens: &[u32]) -> String {
        self.tokenizer.decode(tokens)
    }

    /// The prompt for `input_length` tokens over `hash_ids`.
    ///
    /// # Errors
    /// [`BlockError`] when the lengths do not fit the rules above.
    pub fn prompt(&mut self, input_length: usize, hash_ids: &[i64]) -> Result<String, BlockError> {
        if hash_ids.is_empty() {
            return Ok(self.plain.generate(input_length));
        }
        let ids = self.tokens(input_length, hash_ids)?;
        Ok(self.tokenizer.decode(&ids))
    }

    /// The token ids of the prompt for `input_length` tokens over (non-empty) `hash_ids`.
    ///
    /// # Errors
    /// As [`BlockPrompts::prompt`].
    pub fn tokens(
        &mut self,
        input_length: usize,
        hash_ids: &[i64],
    ) -> Result<Vec<u32>, BlockError> {
        let bs = self.block_size;
        let m = hash_ids.len();
        if input_length == 0 || bs == 0 {
            return Err(BlockError::Empty {
                input_length,
                block_size: bs,
            });
        }
        let last_size = if m.saturating_mul(bs) > input_length {
            let last = input_length as i128 - ((m as i128 - 1) * bs as i128);
            if last <= 0 || last > bs as i128 {
                return Err(BlockError::DoesNotFit {
                    ids: m,
                    block_size: bs,
                    input_length,
                    last,
                });
            }
            last as usize
        } else {
            bs
        };
        // Every size is checked before anything is made, so an error leaves no id recorded.
        for (i, &id) in hash_ids.iter().enumerate() {
            let size = if i + 1 == m { last_size } else { bs };
            if let Some(&first) = self.sizes.get(&id)
                && first != size
            {
                return Err(BlockError::SizeChanged { id, size, first });
            }
        }
        // Within the row only the last block can be cut: its id earlier in the row is whole.
        if let Some((&last_id, before)) = hash_ids.split_last()
            && last_size != bs
            && before.contains(&last_id)
        {
            return Err(BlockError::SizeChanged {
                id: last_id,
                size: last_size,
                first: bs,
            });
        }
        let mut out = Vec::with_capacity(input_length);
        for (i, &id) in hash_ids.iter().enumerate() {
            let size = if i + 1 == m { last_size } else { bs };
            self.sizes.entry(id).or_insert(size);
            self.push_block(&mut out, id, size);
        }
        if out.len() < input_length {
            let n = input_length - out.len();
            self.push_tail(&mut out, n);
        }
        Ok(out)
    }

    /// Appends the block of hash id `id` at `size` tokens: the separator, the code, the filler,
    /// cut to `size` (so a cut block is a prefix of the whole one).
    fn push_block(&self, out: &mut Vec<u32>, id: i64, size: usize) {
        let start = out.len();
        out.extend(self.separator);
        let key = mix(id as u64 ^ self.scope);
        if self.words.len() >= MIN_WORDS {
            let k = self.words.len() as u64;
            let at = out.len();
            let mut rest = key;
            out.resize(at + self.code_len, 0);
            // Least significant digit first: the leading digit of `L` is one of only
            // `2^64 / k^(L-1)` values (10 for the builtin), the trailing one any of `k`, so a
            // block cut to a few tokens keeps the digits that vary most.
            for slot in out[at..].iter_mut() {
                *slot = self.words[(rest % k) as usize];
                rest /= k;
            }
        }
        let want = start + size;
        if out.len() < want && !self.filler.is_empty() {
            let offset = (mix(key ^ FILLER_SALT) % self.filler.len() as u64) as usize;
            push_cycled(out, &self.filler, offset, want - out.len());
        }
        out.truncate(want);
    }
}

/// Salt that makes a block's filler offset another function of its key than its code.
const FILLER_SALT: u64 = 0x6a09_e667_f3bc_c908;

/// SplitMix64's finalizer: a bijection on 64 bits (each xor-shift and each odd multiplication
/// is invertible), so distinct inputs give distinct outputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Digits of a base-`k` code for every 64-bit key: the least `L` with `k^L ≥ 2^64` (0 when
/// `k < 2`: no code).
fn code_len(k: usize) -> usize {
    if k < MIN_WORDS {
        return 0;
    }
    let (mut len, mut reach) = (0, 1u128);
    while reach < 1u128 << 64 {
        reach = reach.saturating_mul(k as u128);
        len += 1;
    }
    len
}

/// The blocks' alphabet over `corpus` (its distinct words, by token id) and its filler (its
/// words, in corpus order). A word decodes to a space and lowercase ASCII letters and encodes
/// back to itself alone. With fewer than [`MIN_WORDS`] words, the corpus's distinct tokens and
/// the corpus itself.
fn alphabet(tokenizer: &Tokenizer, corpus: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut distinct = corpus.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let words: Vec<u32> = distinct
        .iter()
        .copied()
        .filter(|&id| is_word(tokenizer, id))
        .collect();
    if words.len() < MIN_WORDS {
        return (distinct, corpus.to_vec());
    }
    let filler = corpus
        .iter()
        .copied()
        .filter(|id| words.binary_search(id).is_ok())
        .collect();
    (words, filler)
}

/// Whether token `id` decodes to a space and lowercase ASCII letters that encode back to `id`.
fn is_word(tokenizer: &Tokenizer, id: u32) -> bool {
    let text = tokenizer.decode(&[id]);
    let letters = text.strip_prefix(' ').unwrap_or("");
    !letters.is_empty()
        && letters.bytes().all(|b| b.is_ascii_lowercase())
        && tokenizer.encode(&text) == [id]
}

/// Appends `n` tokens of `from` starting at `start`, wrapping as often as needed.
fn push_cycled(out: &mut Vec<u32>, from: &[u32], start: usize, mut n: usize) {
    if from.is_empty() {
        return;
    }
    let mut at = start % from.len();
    while n > 0 {
        let take = n.min(from.len() - at);
        out.extend_from_slice(&from[at..at + take]);
        n -= take;
        at = 0;
    }
}

#[cfg(test)]
#[path = "block_prompt_tests.rs"]
mod tests;
