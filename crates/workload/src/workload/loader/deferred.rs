//! A trace's requests, checked but not yet built: where each `mooncake_trace` row is in its
//! file, kept from the first pass so that the row can be read again and its request built
//! later, in the order they are sent (a streamed replay, `run::stream`), or all at once
//! ([`TraceIndex::into_dataset`], every other run).
//!
//! The first pass checks everything that can fail before a prompt is built: the last block's
//! size and each hash id keeping one size ([`BlockCheck`], the rules of
//! [`super::BlockPrompts`]), so a bad row anywhere in the file still stops the run before it
//! starts, naming its line.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::workload::{Prepared, Tokenizer};
use ringperf_wire::conversation::{Content, Conversation, Dataset, Turn};

use super::block_prompt::{BlockError, BlockPrompts};
use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;

/// One row of the trace: where its turn is in the dataset and where its text is in the file.
/// All the first pass keeps of a row besides its skeleton turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeferredRow {
    /// Where its turn is in the dataset.
    pub conversation: u32,
    pub turn: u32,
    /// Bytes of its JSON text.
    len: u32,
    /// Its prompt is synthesized (`input_length`), by the trace's [`BlockPrompts`].
    pub synthesized: bool,
    /// Byte offset of its JSON text in the file.
    offset: u64,
    /// Its line in the file.
    pub line: u64,
}

impl DeferredRow {
    pub fn new(
        conversation: u32,
        turn: u32,
        synthesized: bool,
        offset: u64,
        len: u32,
        line: u64,
    ) -> Self {
        Self {
            conversation,
            turn,
            len,
            synthesized,
            offset,
            line,
        }
    }
}

/// How a row checked by the first pass is read again: its turn, and for a synthesized prompt
/// its `input_length` and `hash_ids` (the turn's text is then left empty). The trace format's
/// own parser, given by the loader that made the rows, with the file's [`DeferredPrompts::layout`].
pub type Reread = fn(Ctx<'_>, &str, &[u32]) -> Result<(Turn, Option<(u32, Vec<i64>)>), LoadError>;

/// Every row of one trace file, in dataset order (conversation, then turn), and what its
/// prompts are built with.
#[derive(Clone, Debug)]
pub struct DeferredPrompts {
    pub path: PathBuf,
    /// `--prompt-input-tokens-block-size`, the run's seed and the file's content hash: the
    /// arguments of [`BlockPrompts::new`].
    pub block_size: usize,
    pub seed: u64,
    pub file_hash: u64,
    /// `--ignore-trace-delays`: the turns read again lose their timestamp and delay.
    pub ignore_delays: bool,
    rows: Vec<DeferredRow>,
    reread: Reread,
    /// What the format's rows need of the file besides the row itself, read once by the first
    /// pass (a CSV's column positions, from its header); empty for JSON rows.
    pub layout: Vec<u32>,
}

/// The first pass's result over a trace: the run-time skeleton (no body built, no ISL
/// counted) and where every row is.
#[derive(Clone, Debug)]
pub struct TraceIndex {
    pub skeleton: Prepared,
    pub rows: DeferredPrompts,
    /// A conversation of several turns whose later turns are not verbatim payloads: on an
    /// endpoint that sends history, their bodies depend on the replies.
    pub history: bool,
}

impl TraceIndex {
    /// Every row read again and every prompt built now: the whole dataset (the load of a run
    /// that is not streamed), its sampling the skeleton's.
    ///
    /// # Errors
    /// As [`DeferredPrompts::build`].
    pub fn into_dataset(self, tokenizer: &Tokenizer) -> Result<Dataset, LoadError> {
        let Self { skeleton, rows, .. } = self;
        let mut conversations: Vec<Conversation> = skeleton
            .conversations
            .into_iter()
            .map(|c| Conversation {
                session_id: c.session_id,
                turns: Vec::with_capacity(c.turns.len()),
                ..Conversation::default()
            })
            .collect();
        let mut reader = rows.reader()?;
        let mut prompts = rows.builder(tokenizer);
        for row in &rows.rows {
            // A signal stops the building: the caller drops the partial dataset.
            if ringperf_io::control::interrupted() {
                break;
            }
            let turn = rows.build(&mut reader, &mut prompts, row)?;
            conversations[row.conversation as usize].turns.push(turn);
        }
        Ok(Dataset {
            conversations,
            default_sampling: skeleton.default_sampling,
            replay: skeleton.replay,
        })
    }
}

/// Reads rows of a trace file again, by offset.
#[derive(Debug)]
pub struct RowReader {
    file: RowSource,
    buf: Vec<u8>,
}

/// Where rows are read again from: the file itself, or, for a gzipped file (whose offsets
/// are in the decompressed text), its whole text, decompressed once when the reader opens.
#[derive(Debug)]
enum RowSource {
    File(File),
    Text(Vec<u8>),
}

impl DeferredPrompts {
    pub fn new(path: &Path, block_size: usize, seed: u64, reread: Reread) -> Self {
        Self {
            reread,
            path: path.to_path_buf(),
            block_size,
            seed,
            file_hash: 0,
            ignore_delays: false,
            rows: Vec::new(),
            layout: Vec::new(),
        }
    }

    /// Adds a row (in file order; [`DeferredPrompts::seal`] puts them in dataset order).
    pub fn push(&mut self, row: DeferredRow) {
        self.rows.push(row);
    }

    /// Puts the rows in dataset order (conversation, then turn), the order prompts are built in
    /// by [`TraceIndex::into_dataset`] and by a streamed replay alike, so both draw the same
    /// random streams in the same order and make the same prompts.
    pub fn seal(&mut self, file_hash: u64) {
        self.file_hash = file_hash;
        self.rows.sort_by_key(|r| (r.conversation, r.turn));
        self.rows.shrink_to_fit();
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

    /// The file, opened to read rows again.
    ///
    /// # Errors
    /// [`LoadErrorKind::Io`]: it cannot be opened.
    pub fn reader(&self) -> Result<RowReader, LoadError> {
        let io = |e: std::io::Error| LoadError::file(&self.path, LoadErrorKind::Io(e.to_string()));
        let file = if super::lines::is_gzip(&self.path).map_err(io)? {
            let mut text = Vec::new();
            std::io::Read::read_to_end(
                &mut super::lines::open_maybe_gzip(&self.path).map_err(io)?,
                &mut text,
            )
            .map_err(io)?;
            RowSource::Text(text)
        } else {
            RowSource::File(File::open(&self.path).map_err(io)?)
        };
        Ok(RowReader {
            file,
            buf: Vec::new(),
        })
    }

    /// The turn of `row`, read again from the file, its prompt built when synthesized (rows in
    /// dataset order: the builder's random streams are drawn in that order).
    ///
    /// # Errors
    /// The row cannot be read or no longer parses (the file changed since the first pass), or
    /// the builder refused it (the first pass checked it, so only a builder whose rules
    /// changed does), as the `hash_ids` field of its line.
    pub fn build(
        &self,
        reader: &mut RowReader,
        prompts: &mut BlockPrompts<'_>,
        row: &DeferredRow,
    ) -> Result<Turn, LoadError> {
        let changed = |why: String| LoadError::line(&self.path, row.line, LoadErrorKind::Io(why));
        reader.buf.resize(row.len as usize, 0);
        match &reader.file {
            RowSource::File(file) => file
                .read_exact_at(&mut reader.buf, row.offset)
                .map_err(|e| changed(format!("cannot read the row again: {e}")))?,
            RowSource::Text(text) => {
                let bytes = usize::try_from(row.offset)
                    .ok()
                    .and_then(|at| text.get(at..at + row.len as usize))
                    .ok_or_else(|| changed("cannot read the row again: past the end".into()))?;
                reader.buf.copy_from_slice(bytes);
            }
        }
        let text = std::str::from_utf8(&reader.buf)
            .map_err(|_| changed("the row is no longer UTF-8 (the file changed)".into()))?;
        let ctx = Ctx {
            path: &self.path,
            line: row.line,
        };
        let (mut turn, length) = (self.reread)(ctx, text, &self.layout)?;
        if self.ignore_delays {
            turn.timestamp_ms = None;
            turn.delay_ms = None;
        }
        match length {
            Some((n, ids)) if row.synthesized => {
                let text = prompts
                    .prompt(n as usize, &ids)
                    .map_err(|why| ctx.err("hash_ids", LoadErrorKind::Invalid(why.to_string())))?;
                turn.content = Content::Texts(vec![text]);
            }
            None if !row.synthesized => {}
            _ => return Err(changed("the row changed since the first pass".into())),
        }
        Ok(turn)
    }
}

/// [`IdHasher`]'s maps.
pub type IdHash = BuildHasherDefault<IdHasher>;

/// A hash for integer and short string keys (the multiply-rotate of rustc's `FxHasher`, a
/// word at a time): the first pass looks up every hash id and every session id of a trace,
/// tens of millions for a large one, where SipHash's cost shows; the keys come from a local
/// file, so flooding is no concern.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(word));
        }
        for &b in words.remainder() {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

/// The block rules of [`BlockPrompts`] checked without building a block: the last block must
/// have `1..=block_size` tokens, and a hash id keeps the size it was first used at.
///
/// Ids in `0..DENSE_IDS` (production traces number their blocks densely from 0) are looked up
/// in a vector indexed by the id, the others in a map: a large trace has tens of millions of
/// ids to look up.
#[derive(Debug, Default)]
pub struct BlockCheck {
    /// Size of each id below [`DENSE_IDS`] seen so far; 0 for an id not seen (a size is ≥ 1).
    dense: Vec<u32>,
    sizes: HashMap<i64, u32, IdHash>,
}

/// Ids below this are kept in [`BlockCheck`]'s vector (at most 16 MiB of it).
const DENSE_IDS: i64 = 1 << 22;

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
            let first = self.first_size(id, size as u32) as usize;
            if first != size {
                return Err(BlockError::SizeChanged { id, size, first });
            }
        }
        Ok(())
    }

    /// The size `id` was first used at, `size` if this is its first use.
    fn first_size(&mut self, id: i64, size: u32) -> u32 {
        if !(0..DENSE_IDS).contains(&id) {
            return *self.sizes.entry(id).or_insert(size);
        }
        let at = id as usize;
        if at >= self.dense.len() {
            let len = (at + 1).max(2 * self.dense.len()).min(DENSE_IDS as usize);
            self.dense.resize(len, 0);
        }
        let first = &mut self.dense[at];
        if *first == 0 {
            *first = size;
        }
        *first
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
            (20, &[1, 2, 3]),     // last block 4 tokens
            (24, &[1, 2, 3]),     // three whole blocks
            (16, &[1, 2, 3]),     // the last block would have 0 tokens
            (30, &[1, 2]),        // ids short of the length: a random tail
            (17, &[1, 2, 3]),     // block 3 asked at 1 token, made at 4 above
            (8, &[5]),            // one whole block
            (4, &[5]),            // block 5 again at another size
            (9, &[]),             // no ids: a plain prompt
            (3, &[6, 6]),         // an id twice, the last block would have -5 tokens
            (12, &[7, 7]),        // an id twice at two sizes
            (12, &[-3, 1 << 40]), // ids kept in the map, not the vector
            (4, &[1 << 40]),      // ... at another size
            (9, &[-3, 1 << 40]),  // the same sizes again
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
