//! The mock's output text: a fixed list of words, each exactly one `o200k_base` token, the
//! stable hash that ties a reply's words to its request ([`reply_start`]), and the small
//! deterministic generator that draws output lengths, response ids and faults.
//!
//! Every word starts with a space and is a common lowercase English word, so the tokenizer's
//! pre-split puts each word in its own piece and any concatenation of `n` words encodes to exactly
//! `n` tokens (checked by a test against tiktoken's `o200k_base`).
//!
//! A reply is the words `0..n` of the sequence that starts at [`reply_start`]`(seed, body)`:
//! word `i` is picked by a mix of `start + i`, so two different starts give unrelated sequences
//! (not the same cycle of 64 words shifted), and a reply of `n` words is a prefix of the same
//! request's reply of `n + 1` words.

/// The words the mock emits, one token each. The length is a power of two so picking one is a mask.
pub(crate) const WORDS: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their", " one", " all", " we",
    " can", " her", " has", " there", " been", " if", " more", " when", " will", " would", " who",
    " so", " no", " time", " people", " year", " way", " day", " man", " thing", " world", " life",
    " hand", " part", " child", " eye", " woman", " place", " work",
];

/// The word of token `index` in the sequence that starts at `start`.
#[inline]
pub(crate) fn word(start: u64, index: u64) -> &'static str {
    // Output `index` of a SplitMix64 stream whose state starts at `start`; its top bits are its
    // best, and 64 words take six of them.
    let z = mix(start.wrapping_add(index.wrapping_add(1).wrapping_mul(GAMMA)));
    WORDS[(z >> (64 - WORDS.len().trailing_zeros())) as usize]
}

/// SplitMix64's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijection of `u64` that spreads every input bit.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where the reply to a request whose body is `body` starts in the word sequence, for a server
/// seeded with `seed`: a function of those two only (not of the thread, the connection or the
/// order of requests), so the same request gets the same text in every run.
///
/// The hash is written out here, eight bytes per step, so that it is the same in every build and
/// Rust release (`std`'s `DefaultHasher` promises neither) and costs well under a nanosecond per
/// byte of body.
pub(crate) fn reply_start(seed: u64, body: &[u8]) -> u64 {
    let step = |h: u64, w: u64| mix((h ^ w).wrapping_add(GAMMA));
    // The seed, then the length (so that zero padding of the last word cannot collide), then
    // the body's bytes, each through its own mixing step.
    let mut h = step(step(0, seed), body.len() as u64);
    let mut words = body.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = step(h, u64::from_le_bytes(b));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(b));
    }
    h
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
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
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
    fn reply_start_depends_on_every_byte_the_length_and_the_seed() {
        let body = br#"{"messages":[{"role":"user","content":"hello there"}]}"#;
        let base = reply_start(0, body);
        assert_eq!(base, reply_start(0, body));
        // Pinned: the hash is part of what a run reproduces, so it must not drift between builds.
        assert_eq!(reply_start(0, b""), mix(mix(GAMMA).wrapping_add(GAMMA)));
        let mut seen = std::collections::HashSet::from([base]);
        for i in 0..body.len() {
            let mut flipped = body.to_vec();
            flipped[i] ^= 1;
            assert!(seen.insert(reply_start(0, &flipped)), "byte {i}");
        }
        // A trailing zero byte (same words after padding) still changes the start.
        let mut longer = body.to_vec();
        longer.push(0);
        assert!(seen.insert(reply_start(0, &longer)));
        assert!(seen.insert(reply_start(1, body)));
    }

    #[test]
    fn different_starts_give_unrelated_words_not_a_shifted_cycle() {
        let text = |start: u64| -> Vec<&str> { (0..32).map(|i| word(start, i)).collect() };
        let a = text(reply_start(0, b"a"));
        let b = text(reply_start(0, b"b"));
        assert_ne!(a, b);
        // Not one sequence shifted: no offset lines the two up.
        for shift in 1..16 {
            assert_ne!(a[shift..], b[..32 - shift]);
            assert_ne!(b[shift..], a[..32 - shift]);
        }
        // Consecutive starts too: neighbours must not share the words of a shifted window.
        assert_ne!(text(7)[1..], text(8)[..31]);
        // The words spread over the list.
        let distinct: std::collections::HashSet<&str> = (0..4096).map(|i| word(3, i)).collect();
        assert_eq!(distinct.len(), WORDS.len());
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
