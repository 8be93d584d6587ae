//! Prompts from a trace's `input_length` and `hash_ids`, built the way AIPerf builds them
//! (docs/datasets.md): each hash id stands for one block of `block_size` tokens whose content is a
//! pure function of the hash id (and of the run's seed and the trace file), so requests that
//! share leading hash ids share a byte-equal prompt prefix, as a KV cache would see it.
//!
//! A block is the tokenizer's block-separator token (BOS, else EOS; `<|endoftext|>` for the
//! builtin o200k) followed by corpus tokens from an offset drawn by a random stream seeded
//! from the hash id. With `m` hash ids the prompt is `m` blocks: when `m · block_size` exceeds
//! `input_length` the last block is cut to `input_length − (m−1) · block_size` tokens (it must
//! stay in `1..=block_size`); when it falls short, the tail is filled with corpus tokens from a
//! random offset (a trace that hashed only its cached prefix). A hash id keeps one size: the
//! same id asked at two sizes is an error, as in AIPerf. Without hash ids the prompt is a
//! synthetic prompt of exactly `input_length` tokens.
//!
//! The token ids are decoded once into the prompt text; like AIPerf, no re-encode repair is
//! done, so the text may re-tokenize to a few tokens more or less than `input_length`.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::workload::prompt::shakespeare_ids;
use crate::workload::{PromptGenerator, Tokenizer, child_rng, derive_seed};

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

/// Builds block prompts for one trace file.
#[derive(Debug)]
pub struct BlockPrompts<'t> {
    tokenizer: &'t Tokenizer,
    corpus: Vec<u32>,
    separator: Option<u32>,
    block_size: usize,
    scope: u64,
    blocks: HashMap<i64, Vec<u32>>,
    plain: PromptGenerator<'t>,
    tail_rng: StdRng,
}

impl<'t> BlockPrompts<'t> {
    /// Blocks of `block_size` tokens, scoped to `seed` and `file_hash` (the trace file's
    /// content hash: the same hash id in two files gives two different blocks).
    pub fn new(tokenizer: &'t Tokenizer, block_size: usize, seed: u64, file_hash: u64) -> Self {
        let corpus = shakespeare_ids(tokenizer);
        Self {
            tokenizer,
            plain: PromptGenerator::with_corpus(
                tokenizer,
                corpus.clone(),
                child_rng(Some(seed), "dataset.prompt.corpus"),
            ),
            corpus,
            separator: tokenizer.block_separator(),
            block_size,
            scope: seed ^ file_hash,
            blocks: HashMap::new(),
            tail_rng: child_rng(Some(seed), "dataset.prompt.hash_ids.tail"),
        }
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
        let last_size = if m * bs > input_length {
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
        let mut out = Vec::with_capacity(input_length);
        for (i, &id) in hash_ids.iter().enumerate() {
            let size = if i + 1 == m { last_size } else { bs };
            out.extend_from_slice(self.block(id, size)?);
        }
        if out.len() < input_length {
            let n = input_length - out.len();
            let start = if self.corpus.is_empty() {
                0
            } else {
                self.tail_rng.random_range(0..self.corpus.len())
            };
            self.take(&mut out, start, n);
        }
        Ok(out)
    }

    /// The block of hash id `id` at `size` tokens, made on first use.
    fn block(&mut self, id: i64, size: usize) -> Result<&[u32], BlockError> {
        if let Some(have) = self.blocks.get(&id)
            && have.len() != size
        {
            return Err(BlockError::SizeChanged {
                id,
                size,
                first: have.len(),
            });
        }
        if !self.blocks.contains_key(&id) {
            let mut rng =
                StdRng::seed_from_u64(derive_seed(self.scope, &format!("dataset.hash_id.{id}")));
            let mut block = Vec::with_capacity(size);
            let mut n = size;
            if let Some(sep) = self.separator {
                block.push(sep);
                n -= 1;
            }
            let start = self.offset(&mut rng);
            self.take(&mut block, start, n);
            self.blocks.insert(id, block);
        }
        Ok(self.blocks.get(&id).map_or(&[][..], Vec::as_slice))
    }

    fn offset(&self, rng: &mut StdRng) -> usize {
        if self.corpus.is_empty() {
            0
        } else {
            rng.random_range(0..self.corpus.len())
        }
    }

    /// Appends `n` corpus tokens from `start`, wrapping.
    fn take(&self, out: &mut Vec<u32>, start: usize, n: usize) {
        let len = self.corpus.len();
        if len == 0 {
            return;
        }
        out.extend(self.corpus.iter().cycle().skip(start % len).take(n));
    }
}
