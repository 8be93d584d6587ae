//! A trace's synthesized prompts, checked but not yet built: what a `mooncake_trace` row with
//! `input_length` (and `hash_ids`) asks for, kept from the first pass over the file so that
//! the prompts can be built later, in the order they are sent (a streamed replay,
//! `run::stream`), or all at once ([`DeferredPrompts::fill`], every other run).
//!
//! The first pass checks everything that can fail before a prompt is built: the last block's
//! size and each hash id keeping one size ([`BlockCheck`], the rules of
//! [`super::BlockPrompts`]), so a bad row anywhere in the file still stops the run before it
//! starts, naming its line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::conversation::{Content, Dataset};
use crate::workload::Tokenizer;

use super::block_prompt::{BlockError, BlockPrompts};
use super::error::{LoadError, LoadErrorKind};

/// One row's prompt to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeferredRow {
    /// Where its turn is in the dataset.
    pub conversation: u32,
    pub turn: u32,
    /// Its `input_length`.
    pub input_length: u32,
    /// Its `hash_ids`: `ids[start..start + len]` of [`DeferredPrompts`].
    start: u64,
    len: u32,
    /// Its line in the file.
    pub line: u64,
}

/// Every synthesized prompt of one trace file, in dataset order (conversation, then turn).
#[derive(Clone, Debug, PartialEq)]
pub struct DeferredPrompts {
    pub path: PathBuf,
    /// `--prompt-input-tokens-block-size`, the run's seed and the file's content hash: the
    /// arguments of [`BlockPrompts::new`].
    pub block_size: usize,
    pub seed: u64,
    pub file_hash: u64,
    rows: Vec<DeferredRow>,
    ids: Vec<i64>,
}

impl DeferredPrompts {
    pub fn new(path: &Path, block_size: usize, seed: u64) -> Self {
        Self {
            path: path.to_path_buf(),
            block_size,
            seed,
            file_hash: 0,
            rows: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// Adds a row (in file order; [`DeferredPrompts::seal`] puts them in dataset order).
    pub fn push(
        &mut self,
        conversation: u32,
        turn: u32,
        input_length: u32,
        ids: &[i64],
        line: u64,
    ) {
        self.rows.push(DeferredRow {
            conversation,
            turn,
            input_length,
            start: self.ids.len() as u64,
            len: ids.len() as u32,
            line,
        });
        self.ids.extend_from_slice(ids);
    }

    /// Puts the rows in dataset order (conversation, then turn), the order prompts are built in
    /// by [`DeferredPrompts::fill`] and by a streamed replay alike, so both draw the same
    /// random streams in the same order and make the same prompts.
    pub fn seal(&mut self, file_hash: u64) {
        self.file_hash = file_hash;
        self.rows.sort_by_key(|r| (r.conversation, r.turn));
    }

    pub fn rows(&self) -> &[DeferredRow] {
        &self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The builder every prompt of this file is made with.
    pub fn builder<'t>(&self, tokenizer: &'t Tokenizer) -> BlockPrompts<'t> {
        BlockPrompts::new(tokenizer, self.block_size, self.seed, self.file_hash)
    }

    /// The prompt of `row`.
    ///
    /// # Errors
    /// The builder refused the row (the first pass checked it, so only a builder whose rules
    /// changed does), as the `hash_ids` field of its line.
    pub fn build(
        &self,
        prompts: &mut BlockPrompts<'_>,
        row: &DeferredRow,
    ) -> Result<String, LoadError> {
        let start = row.start as usize;
        let ids = &self.ids[start..start + row.len as usize];
        prompts
            .prompt(row.input_length as usize, ids)
            .map_err(|why| {
                LoadError::at(
                    &self.path,
                    row.line,
                    "hash_ids",
                    LoadErrorKind::Invalid(why.to_string()),
                )
            })
    }

    /// Builds every prompt now, into its turn of `dataset` (the load of a run that is not
    /// streamed).
    ///
    /// # Errors
    /// As [`DeferredPrompts::build`].
    pub fn fill(&self, dataset: &mut Dataset, tokenizer: &Tokenizer) -> Result<(), LoadError> {
        let mut prompts = self.builder(tokenizer);
        for row in &self.rows {
            // A signal stops the prompts' building: the caller drops the partial dataset.
            if crate::control::interrupted() {
                break;
            }
            let text = self.build(&mut prompts, row)?;
            dataset.conversations[row.conversation as usize].turns[row.turn as usize].content =
                Content::Texts(vec![text]);
        }
        Ok(())
    }
}

/// The block rules of [`BlockPrompts`] checked without building a block: the last block must
/// have `1..=block_size` tokens, and a hash id keeps the size it was first used at.
#[derive(Debug, Default)]
pub struct BlockCheck {
    sizes: HashMap<i64, u32>,
}

impl BlockCheck {
    /// Checks a row of `input_length` tokens over `hash_ids` (none: a plain prompt, always
    /// fine), remembering each id's size.
    ///
    /// # Errors
    /// The [`BlockError`] [`BlockPrompts::tokens`] would give.
    pub fn check(
        &mut self,
        input_length: usize,
        block_size: usize,
        hash_ids: &[i64],
    ) -> Result<(), BlockError> {
        let m = hash_ids.len();
        if m == 0 {
            return Ok(());
        }
        if input_length == 0 || block_size == 0 {
            return Err(BlockError::Empty {
                input_length,
                block_size,
            });
        }
        let last_size = if m * block_size > input_length {
            let last = input_length as i128 - (m as i128 - 1) * block_size as i128;
            if last <= 0 || last > block_size as i128 {
                return Err(BlockError::DoesNotFit {
                    ids: m,
                    block_size,
                    input_length,
                    last,
                });
            }
            last as usize
        } else {
            block_size
        };
        for (i, &id) in hash_ids.iter().enumerate() {
            let size = if i + 1 == m { last_size } else { block_size };
            let first = *self.sizes.entry(id).or_insert(size as u32) as usize;
            if first != size {
                return Err(BlockError::SizeChanged { id, size, first });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first pass's check agrees with the builder itself on every case around the rules:
    /// the same rows fail, with the same error, and the others build.
    #[test]
    fn the_check_agrees_with_the_builder() {
        let tokenizer = Tokenizer::builtin();
        let cases: &[(usize, &[i64])] = &[
            (20, &[1, 2, 3]), // last block 4 tokens
            (24, &[1, 2, 3]), // three whole blocks
            (16, &[1, 2, 3]), // the last block would have 0 tokens
            (30, &[1, 2]),    // ids short of the length: a random tail
            (17, &[1, 2, 3]), // block 3 asked at 1 token, made at 4 above
            (8, &[5]),        // one whole block
            (4, &[5]),        // block 5 again at another size
            (9, &[]),         // no ids: a plain prompt
            (3, &[6, 6]),     // an id twice, the last block would have -5 tokens
            (12, &[7, 7]),    // an id twice at two sizes
        ];
        let mut check = BlockCheck::default();
        let mut prompts = BlockPrompts::new(&tokenizer, 8, 1, 2);
        for &(n, ids) in cases {
            let built = if ids.is_empty() {
                Ok(())
            } else {
                prompts.tokens(n, ids).map(|_| ())
            };
            assert_eq!(check.check(n, 8, ids), built, "{n} over {ids:?}");
        }
    }
}
