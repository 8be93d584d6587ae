//! The mock's output text: a fixed list of words, each exactly one `o200k_base` token, and the
//! small deterministic generator that picks them and draws output lengths.
//!
//! Every word starts with a space and is a common lowercase English word, so the tokenizer's
//! pre-split puts each word in its own piece and any concatenation of `n` words encodes to exactly
//! `n` tokens (checked by a test against tiktoken's `o200k_base`).

/// The words the mock emits, one token each. The length is a power of two so picking one is a mask.
pub(crate) const WORDS: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their", " one", " all", " we",
    " can", " her", " has", " there", " been", " if", " more", " when", " will", " would", " who",
    " so", " no", " time", " people", " year", " way", " day", " man", " thing", " world", " life",
    " hand", " part", " child", " eye", " woman", " place", " work",
];

/// The word of token `index` in a stream that starts at word `start`.
#[inline]
pub(crate) fn word(start: u64, index: u64) -> &'static str {
    WORDS[(start.wrapping_add(index) & (WORDS.len() as u64 - 1)) as usize]
}

/// A tiny deterministic generator (SplitMix64): one per server thread, seeded from the config.
/// Quality needs are modest (word offsets, uniform lengths), speed and reproducibility matter.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix {
    state: u64,
}

impl SplitMix {
    /// A generator for thread `thread` of a server seeded with `seed`.
    pub(crate) fn new(seed: u64, thread: usize) -> Self {
        Self {
            state: seed ^ (thread as u64).wrapping_mul(0xA076_1D64_78BD_642F),
        }
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value uniform in `min..=max` (the bounds may come in either order).
    pub(crate) fn uniform_inclusive(&mut self, min: u64, max: u64) -> u64 {
        let (lo, hi) = if min <= max { (min, max) } else { (max, min) };
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        // Multiply-shift maps 64 random bits onto 0..=span with negligible bias for these sizes.
        lo + ((u128::from(self.next_u64()) * u128::from(span + 1)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_one_o200k_token_and_concatenations_do_not_merge() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        for w in WORDS {
            assert_eq!(
                bpe.encode_ordinary(w).len(),
                1,
                "{w:?} is not a single token"
            );
        }
        // Every ordered pair (including a word with itself) stays two tokens.
        for a in WORDS {
            for b in WORDS {
                let s = format!("{a}{b}");
                assert_eq!(bpe.encode_ordinary(&s).len(), 2, "{s:?} merges");
            }
        }
        let long: String = (0..1000).map(|i| word(17, i)).collect();
        assert_eq!(bpe.encode_ordinary(&long).len(), 1000);
    }

    #[test]
    fn uniform_stays_in_bounds_and_hits_both_ends() {
        let mut r = SplitMix::new(7, 0);
        let (mut saw_lo, mut saw_hi) = (false, false);
        for _ in 0..10_000 {
            let v = r.uniform_inclusive(5, 9);
            assert!((5..=9).contains(&v));
            saw_lo |= v == 5;
            saw_hi |= v == 9;
        }
        assert!(saw_lo && saw_hi);
        assert_eq!(r.uniform_inclusive(3, 3), 3);
        assert!((2..=4).contains(&r.uniform_inclusive(4, 2)));
    }

    #[test]
    fn same_seed_same_stream_different_threads_differ() {
        let a: Vec<u64> = (0..4)
            .scan(SplitMix::new(1, 0), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .scan(SplitMix::new(1, 0), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..4)
            .scan(SplitMix::new(1, 1), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
