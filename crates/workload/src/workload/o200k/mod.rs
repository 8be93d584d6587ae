//! tiktoken `o200k_base`, the builtin tokenizer's byte-pair encoding, on tables used in place.
//!
//! The tables are laid out when the crate is compiled (`build.rs`, from
//! `assets/o200k_base.tokens`) and compiled into the binary: the tokens' bytes, where each
//! ends, and an open-addressing table from a byte string to its rank. A run reads them where
//! they are, so nothing is built, decoded or allocated before the first token is counted; the
//! pages a run touches are faulted in from the executable as they are read. The pre-tokenizer
//! (one regular expression) is determinized by the build script too, into a dense DFA that is
//! checked (`dense::DFA::from_bytes`) at first use and searched in place; the pattern is
//! compiled at run time (a few milliseconds) only where that DFA cannot be read (a big-endian
//! target).
//!
//! The encoding is tiktoken's: the text is cut into pieces by o200k's pattern, a piece that is a
//! token is that token, and any other piece is merged from its bytes, lowest-ranked adjacent pair
//! first (leftmost on a tie), until no adjacent pair is a token. Long pieces merge through a heap
//! with the same order, so the answer does not depend on the piece's length. Special tokens are
//! not this module's business (`super::tokenizer` cuts them out first).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::LazyLock;

use regex_automata::dfa::{Automaton, dense};
use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

mod hash;
mod pattern;

use pattern::{LOOKAHEAD, PATTERNS};

/// Every token's bytes, concatenated in rank order.
static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_bytes.bin"));
/// Where each rank's bytes end in [`BYTES`] (little-endian `u32`).
static ENDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_ends.bin"));
/// The rank table: [`hash::SLOTS`] little-endian `u32` slots (see `build.rs`).
static SLOTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_slots.bin"));

/// Bytes aligned as `A` (a DFA's transitions are read as `u32`s in place).
#[repr(C)]
struct AlignedAs<A, B: ?Sized> {
    _align: [A; 0],
    bytes: B,
}

/// The pre-tokenizer's DFA, serialized by the build script (`build.rs`, little-endian).
static DFA_BYTES: &AlignedAs<u32, [u8]> = &AlignedAs {
    _align: [],
    bytes: *include_bytes!(concat!(env!("OUT_DIR"), "/o200k_pretokenizer.dfa")),
};

/// "No such token" in a merge: above every rank.
const NONE: u32 = u32::MAX;

/// Pieces from this length on merge through a heap (tiktoken's own cut-over).
const LARGE_PIECE: usize = 100;

/// The pre-tokenizer's DFA, read in place by its first user (its bytes checked once); `None`
/// where they cannot be read as a DFA (a target of the other byte order), and then
/// [`PRETOKENIZER`] does the cutting.
static DFA: LazyLock<Option<dense::DFA<&'static [u32]>>> = LazyLock::new(|| {
    dense::DFA::from_bytes(&DFA_BYTES.bytes)
        .ok()
        .map(|(dfa, _)| dfa)
});

/// The pattern compiled at run time: only where [`DFA`] cannot be read, or a search of it
/// fails (it cannot: the DFA has no quit bytes).
static PRETOKENIZER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new_many(&PATTERNS).expect("o200k's pattern compiles"));

/// The end and the pattern of the leftmost-first match anchored at the start of `rest`.
#[inline]
fn first_match(rest: &str) -> Option<(usize, usize)> {
    let input = Input::new(rest).anchored(Anchored::Yes);
    if let Some(dfa) = DFA.as_ref()
        && let Ok(m) = dfa.try_search_fwd(&input)
    {
        return m.map(|m| (m.offset(), m.pattern().as_usize()));
    }
    let m = PRETOKENIZER.find(input)?;
    Some((m.end(), m.pattern().as_usize()))
}

/// Reads the pre-tokenizer's DFA now (the only part of the tokenizer that is checked at run
/// time; its pattern is compiled instead where the DFA cannot be read), so that a later first
/// count does not wait for it.
pub fn warm() {
    if LazyLock::force(&DFA).is_none() {
        LazyLock::force(&PRETOKENIZER);
    }
}

/// How many ranks the byte-pair vocabulary has (o200k_base: 199,998; special tokens are
/// outside it).
pub fn num_tokens() -> usize {
    ENDS.len() / 4
}

/// The little-endian `u32` at index `i` of `table`.
#[inline]
fn u32_at(table: &[u8], i: usize) -> u32 {
    let b = &table[i * 4..i * 4 + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The bytes of token `rank`, `None` outside the vocabulary.
pub fn token_bytes(rank: u32) -> Option<&'static [u8]> {
    let r = rank as usize;
    if r >= num_tokens() {
        return None;
    }
    let start = if r == 0 {
        0
    } else {
        u32_at(ENDS, r - 1) as usize
    };
    BYTES.get(start..u32_at(ENDS, r) as usize)
}

/// The rank of the token whose bytes are `bytes`, if there is one.
#[inline]
pub fn rank(bytes: &[u8]) -> Option<u32> {
    let h = hash::hash(bytes);
    let tag = hash::tag(h);
    let mask = hash::SLOTS - 1;
    let mut i = (h as usize) & mask;
    loop {
        let slot = u32_at(SLOTS, i);
        if slot == 0 {
            return None;
        }
        if slot >> hash::ID_BITS == tag {
            let rank = (slot & ((1 << hash::ID_BITS) - 1)) - 1;
            if token_bytes(rank) == Some(bytes) {
                return Some(rank);
            }
        }
        i = (i + 1) & mask;
    }
}

/// The rank of `bytes`, [`NONE`] when it is no token.
#[inline]
fn rank_or_none(bytes: &[u8]) -> u32 {
    rank(bytes).unwrap_or(NONE)
}

/// `text` cut into o200k's pre-tokenized pieces, in order, covering all of it.
pub fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = text.get(at..).filter(|r| !r.is_empty())?;
        let (mut end, pattern) = first_match(rest)?;
        if LOOKAHEAD.get(pattern).copied().unwrap_or(false) {
            // `\s+\s` stands for `\s+(?!\S)`: the last whitespace character is not the piece's.
            end -= rest[..end].chars().next_back().map_or(0, char::len_utf8);
        }
        if end == 0 {
            // Cannot happen with o200k's patterns (each matches at least one character and the
            // look-ahead one at least two); never loop on it.
            return None;
        }
        at += end;
        Some(&rest[..end])
    })
}

/// Appends the token ids of `text` (no special tokens recognised) to `out`.
pub fn encode(text: &str, out: &mut Vec<u32>) {
    for piece in pieces(text) {
        merge(piece.as_bytes(), &mut |part| {
            out.push(rank(part).expect("a merged part is a token"));
        });
    }
}

/// The number of token ids of `text` (the length of [`encode`]'s answer).
pub fn count(text: &str) -> usize {
    let mut n = 0;
    for piece in pieces(text) {
        merge(piece.as_bytes(), &mut |_| n += 1);
    }
    n
}

/// Byte-pair merges `piece` and hands each resulting token's bytes to `emit`, in order.
fn merge(piece: &[u8], emit: &mut impl FnMut(&[u8])) {
    if piece.is_empty() {
        return;
    }
    if rank(piece).is_some() {
        emit(piece);
    } else if piece.len() < LARGE_PIECE {
        merge_small(piece, emit);
    } else {
        merge_large(piece, emit);
    }
}

/// tiktoken's merge of a short piece: the parts' starts and the rank of each part joined with
/// the next in one array, the lowest rank found by a scan after every merge.
fn merge_small(piece: &[u8], emit: &mut impl FnMut(&[u8])) {
    let n = piece.len();
    // (start of the part, rank of it merged with the next part); two sentinels at the end.
    let mut parts = [(0u32, NONE); LARGE_PIECE + 1];
    for (i, p) in parts.iter_mut().enumerate().take(n - 1) {
        *p = (i as u32, rank_or_none(&piece[i..i + 2]));
    }
    parts[n - 1] = ((n - 1) as u32, NONE);
    parts[n] = (n as u32, NONE);
    let mut len = n + 1;
    // The rank of part `i` merged with part `i + 1` once part `i + 1` is gone (so it reaches
    // to the start of part `i + 3`).
    let joined = |parts: &[(u32, u32)], len: usize, i: usize| {
        if i + 3 < len {
            rank_or_none(&piece[parts[i].0 as usize..parts[i + 3].0 as usize])
        } else {
            NONE
        }
    };
    loop {
        let (mut min, mut at) = (NONE, usize::MAX);
        for (i, p) in parts[..len - 1].iter().enumerate() {
            if p.1 < min {
                (min, at) = (p.1, i);
            }
        }
        if min == NONE {
            break;
        }
        if at > 0 {
            parts[at - 1].1 = joined(&parts, len, at - 1);
        }
        parts[at].1 = joined(&parts, len, at);
        parts.copy_within(at + 2..len, at + 1);
        len -= 1;
    }
    for w in parts[..len].windows(2) {
        emit(&piece[w[0].0 as usize..w[1].0 as usize]);
    }
}

/// The same merge for a long piece: parts in a linked list, candidate pairs in a heap ordered
/// by (rank, start), a candidate dropped when its part is gone or now pairs differently. Ranks
/// are distinct per byte string, so a pair found again with the same rank at the same start is
/// the same pair.
fn merge_large(piece: &[u8], emit: &mut impl FnMut(&[u8])) {
    let n = piece.len();
    // `next[i]`: the start of the part after the one starting at `i` (`n`: none);
    // `prev[i]`: the start of the one before (`usize::MAX`: none).
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut live = vec![true; n];
    let mut pair = vec![NONE; n];
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        pair[i] = rank_or_none(&piece[i..i + 2]);
        if pair[i] != NONE {
            heap.push(Reverse((pair[i], i)));
        }
    }
    let pair_of = |next: &[usize], i: usize| match next[i] {
        j if j >= n => NONE,
        j => rank_or_none(&piece[i..next[j]]),
    };
    while let Some(Reverse((r, i))) = heap.pop() {
        if !live[i] || pair[i] != r {
            continue;
        }
        let j = next[i];
        live[j] = false;
        next[i] = next[j];
        if next[j] < n {
            prev[next[j]] = i;
        }
        pair[i] = pair_of(&next, i);
        if pair[i] != NONE {
            heap.push(Reverse((pair[i], i)));
        }
        let p = prev[i];
        if p != usize::MAX {
            pair[p] = pair_of(&next, p);
            if pair[p] != NONE {
                heap.push(Reverse((pair[p], p)));
            }
        }
    }
    let mut i = 0;
    while i < n {
        emit(&piece[i..next[i]]);
        i = next[i];
    }
}

#[cfg(test)]
mod tests;
