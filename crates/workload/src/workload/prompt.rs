//! Synthetic prompts of an exact token length from the `sonnet` corpus or the tokenizer's
//! vocabulary (`random`) (docs/synthetic.md).
//!
//! The corpus (public-domain Shakespeare, `assets/shakespeare.txt`) is tokenized once, the way
//! AIPerf does it: non-empty lines stripped, grouped into chunks of at least 10,000 characters,
//! each chunk's lines joined by one space and encoded, the chunks' ids concatenated. A prompt of
//! `n` tokens is `n` ids taken from a random offset (wrapping), decoded, and repaired until it
//! re-encodes to exactly `n` tokens.
//!
//! Tokenizing the corpus is about a quarter of the builtin tokenizer's start-up work, so its
//! o200k ids ship with it (`assets/shakespeare.o200k.u32le`, [`shakespeare_ids`]); a test keeps
//! them equal to [`tokenize_corpus`]'s.

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use super::tokenizer::Tokenizer;

/// The bundled corpus: public-domain Shakespeare (see `assets/README.md`).
pub const SHAKESPEARE: &str = include_str!("../../../../assets/shakespeare.txt");

/// [`SHAKESPEARE`]'s ids under the builtin tokenizer, as [`tokenize_corpus`] gives them, as
/// little-endian `u32`s: shipped so that a run does not tokenize the corpus at start-up
/// (perf/README, "Start-up"). The test `shipped_corpus_ids_equal_tokenize_corpus` checks them;
/// after a change to the corpus or the tokenizer, rewrite them with
/// `RINGPERF_WRITE_ASSETS=1 cargo test --lib shipped_corpus_ids_equal_tokenize_corpus`.
const SHAKESPEARE_O200K: &[u8] = include_bytes!("../../../../assets/shakespeare.o200k.u32le");

/// Characters per corpus chunk before it is encoded (AIPerf's fixed chunking).
const CHUNK_CHARS: usize = 10_000;

/// Repair rounds before giving up on an exact length.
const MAX_REPAIRS: usize = 10;

/// Token ids of a corpus, tokenized in AIPerf's chunks.
pub fn tokenize_corpus(text: &str, tokenizer: &Tokenizer) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut chunk = String::with_capacity(CHUNK_CHARS + 256);
    let mut chars = 0usize;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !chunk.is_empty() {
            chunk.push(' ');
        }
        chunk.push_str(line);
        chars += line.chars().count();
        if chars >= CHUNK_CHARS {
            ids.extend(tokenizer.encode(&chunk));
            chunk.clear();
            chars = 0;
        }
    }
    if !chunk.is_empty() {
        ids.extend(tokenizer.encode(&chunk));
    }
    ids
}

/// [`SHAKESPEARE`]'s token ids under `tokenizer`: the shipped ids for the builtin tokenizer,
/// else [`tokenize_corpus`].
pub fn shakespeare_ids(tokenizer: &Tokenizer) -> Vec<u32> {
    if tokenizer.is_builtin() {
        return SHAKESPEARE_O200K
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
    }
    tokenize_corpus(SHAKESPEARE, tokenizer)
}

/// A prompt length drawn from `N(mean, stddev)`: `max(1, ceil(x))`, or `max(1, round(mean))`
/// (ties to even, like Python's `round`) when `stddev <= 0`. A non-finite mean gives 1.
pub fn sample_length(mean: f64, stddev: f64, rng: &mut StdRng) -> usize {
    if !mean.is_finite() {
        return 1;
    }
    let x = match Normal::new(mean, stddev) {
        Ok(normal) if stddev > 0.0 => normal.sample(rng).ceil(),
        _ => mean.round_ties_even(),
    };
    // `as` saturates: huge draws become usize::MAX, negative ones 0 (then 1).
    (x as usize).max(1)
}

/// Which ids synthetic prompts are made of (`--prompt-corpus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Corpus {
    /// The bundled Shakespeare text (AIPerf's default, `sonnet`).
    #[default]
    Sonnet,
    /// The tokenizer's own vocabulary (`random`, `vllm bench serve`'s random dataset): the style
    /// says whether the special tokens are left out (`vllm`) or drawn too (`sglang`).
    Random(super::range_ratio::CorpusStyle),
}

impl Corpus {
    /// The flag's value, as AIPerf spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Corpus::Sonnet => "sonnet",
            Corpus::Random(_) => "random",
        }
    }
}

/// Where a generator's ids come from.
#[derive(Debug)]
enum Source {
    /// A tokenized text: a prompt is a window of it from a random offset (wrapping); a repair
    /// continues the window.
    Text(Vec<u32>),
    /// The vocabulary: the `k`-th prompt is `pool[(offset + k + j) % pool.len()]` for its
    /// positions `j`, `offset` drawn in `[0, vocab_size)` (vLLM's random dataset, which AIPerf
    /// follows); a repair tops up with ids drawn uniformly from `topup`, every decodable id.
    Vocab {
        pool: Vec<u32>,
        topup: Vec<u32>,
        vocab_size: usize,
        /// Prompts made so far.
        made: usize,
    },
}

/// Generates prompts of exact token lengths from a tokenized corpus or the vocabulary.
#[derive(Debug)]
pub struct PromptGenerator<'t> {
    tokenizer: &'t Tokenizer,
    source: Source,
    rng: StdRng,
}

impl<'t> PromptGenerator<'t> {
    /// A generator over the bundled Shakespeare corpus ([`shakespeare_ids`]). `rng` draws the
    /// offsets.
    pub fn new(tokenizer: &'t Tokenizer, rng: StdRng) -> Self {
        Self::with_corpus(tokenizer, shakespeare_ids(tokenizer), rng)
    }

    /// A generator over `corpus` (`--prompt-corpus`). `rng` draws the offsets and, for the
    /// vocabulary, the ids a repair adds.
    pub fn for_corpus(tokenizer: &'t Tokenizer, corpus: Corpus, rng: StdRng) -> Self {
        match corpus {
            Corpus::Sonnet => Self::new(tokenizer, rng),
            Corpus::Random(style) => {
                let p = tokenizer.vocab_pools();
                let pool = match style {
                    super::range_ratio::CorpusStyle::Vllm => p.valid,
                    super::range_ratio::CorpusStyle::Sglang => p.all.clone(),
                };
                Self {
                    tokenizer,
                    source: Source::Vocab {
                        pool,
                        topup: p.all,
                        vocab_size: p.vocab_size,
                        made: 0,
                    },
                    rng,
                }
            }
        }
    }

    /// A generator over an already tokenized corpus. An empty corpus yields empty prompts.
    pub fn with_corpus(tokenizer: &'t Tokenizer, corpus: Vec<u32>, rng: StdRng) -> Self {
        Self {
            tokenizer,
            source: Source::Text(corpus),
            rng,
        }
    }

    /// A prompt of `n_tokens` tokens: corpus ids from a random offset (wrapping as often as
    /// needed, so lengths beyond the corpus are possible), decoded, then repaired: when the text
    /// re-encodes longer, its ids are truncated; when shorter, the following corpus ids are
    /// appended. After ten repair rounds without an exact length the closest text seen is
    /// returned; with the bundled corpus and the builtin tokenizer every length checked in the
    /// tests comes out exact.
    pub fn generate(&mut self, n_tokens: usize) -> String {
        self.generate_after(&[], n_tokens)
    }

    /// `prefix` (token ids) followed by a prompt of `n_tokens` corpus tokens, joined at the
    /// token level and repaired as one text to `prefix.len() + n_tokens` tokens (AIPerf's prefix
    /// prompts: joining decoded strings instead would let the tokenizer merge across the seam).
    pub fn generate_after(&mut self, prefix: &[u32], n_tokens: usize) -> String {
        self.generate_counted(prefix, n_tokens).0
    }

    /// [`Self::generate_after`] with the text's token count under the generator's tokenizer
    /// (`Tokenizer::count` of the text), which the repair has just measured: the target unless
    /// no repair reached it.
    pub fn generate_counted(&mut self, prefix: &[u32], n_tokens: usize) -> (String, usize) {
        let len = match &self.source {
            Source::Text(corpus) => corpus.len(),
            Source::Vocab { pool, .. } => pool.len(),
        };
        let target = prefix.len() + n_tokens;
        if target == 0 || len == 0 {
            let text = self.tokenizer.decode(prefix);
            let count = self.tokenizer.count(&text);
            return (text, count);
        }
        let mut ids: Vec<u32> = Vec::with_capacity(target + 16);
        ids.extend_from_slice(prefix);
        let mut next = match &mut self.source {
            Source::Text(_) => self.rng.random_range(0..len),
            Source::Vocab {
                pool,
                vocab_size,
                made,
                ..
            } => {
                let offset = self.rng.random_range(0..(*vocab_size).max(1));
                ids.extend((0..n_tokens).map(|j| pool[(offset + *made + j) % len]));
                *made += 1;
                0
            }
        };
        if let Source::Text(_) = self.source {
            self.take(&mut ids, &mut next, n_tokens);
        }
        let mut text = self.tokenizer.decode(&ids);
        // The closest text seen: (its distance to the target, the text, its count).
        let mut best: Option<(usize, String, usize)> = None;
        for _ in 0..MAX_REPAIRS {
            let reencoded = self.tokenizer.encode(&text);
            let count = reencoded.len();
            if count == target {
                return (text, count);
            }
            let miss = count.abs_diff(target);
            if best.as_ref().is_none_or(|(m, _, _)| miss < *m) {
                best = Some((miss, text.clone(), count));
            }
            ids = reencoded;
            if count > target {
                ids.truncate(target);
            } else {
                self.take(&mut ids, &mut next, target - count);
            }
            text = self.tokenizer.decode(&ids);
        }
        let count = self.tokenizer.count(&text);
        if count == target {
            return (text, count);
        }
        best.map_or((text, count), |(_, t, c)| (t, c))
    }

    /// Appends `n` ids: a text's, starting at `*next`, wrapping, and advances `*next`; the
    /// vocabulary's, drawn uniformly from every decodable id.
    fn take(&mut self, ids: &mut Vec<u32>, next: &mut usize, mut n: usize) {
        match &self.source {
            Source::Text(corpus) => {
                let len = corpus.len();
                while n > 0 && len > 0 {
                    let start = *next % len;
                    let end = len.min(start + n);
                    ids.extend_from_slice(corpus.get(start..end).unwrap_or(&[]));
                    n -= end - start;
                    *next = end % len;
                }
            }
            Source::Vocab { topup, .. } if !topup.is_empty() => {
                ids.extend((0..n).map(|_| topup[self.rng.random_range(0..topup.len())]));
            }
            Source::Vocab { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use rand::SeedableRng;

    use super::*;

    fn builtin() -> &'static Tokenizer {
        static T: OnceLock<Tokenizer> = OnceLock::new();
        T.get_or_init(Tokenizer::builtin)
    }

    fn corpus() -> Vec<u32> {
        static C: OnceLock<Vec<u32>> = OnceLock::new();
        C.get_or_init(|| shakespeare_ids(builtin())).clone()
    }

    fn generator(seed: u64) -> PromptGenerator<'static> {
        PromptGenerator::with_corpus(builtin(), corpus(), StdRng::seed_from_u64(seed))
    }

    #[test]
    fn shipped_corpus_ids_equal_tokenize_corpus() {
        let ids = tokenize_corpus(SHAKESPEARE, builtin());
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        if std::env::var_os("RINGPERF_WRITE_ASSETS").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../assets/shakespeare.o200k.u32le"
            );
            std::fs::write(path, &bytes).unwrap();
            return;
        }
        // Not `assert_eq!` on the bytes: a mismatch would print half a megabyte.
        assert!(
            SHAKESPEARE_O200K == bytes.as_slice(),
            "assets/shakespeare.o200k.u32le is stale; rewrite it with \
             RINGPERF_WRITE_ASSETS=1 cargo test --lib shipped_corpus_ids_equal_tokenize_corpus"
        );
        assert_eq!(shakespeare_ids(builtin()), ids);
    }

    #[test]
    fn corpus_is_shakespeare_and_tokenizes() {
        assert!(SHAKESPEARE.starts_with("THE SONNETS"));
        assert!(SHAKESPEARE.len() <= 300 * 1024);
        let ids = corpus();
        // English verse runs at roughly 3–5 characters per o200k token.
        assert!(ids.len() > SHAKESPEARE.len() / 6 && ids.len() < SHAKESPEARE.len() / 2);
        assert!(builtin().decode(&ids[..6]).starts_with("THE SONNETS"));
    }

    #[test]
    fn chunking_joins_lines_with_one_space() {
        let t = builtin();
        let ids = tokenize_corpus("  Shall I compare thee \n\n\n to a summer's day?\n", t);
        assert_eq!(ids, t.encode("Shall I compare thee to a summer's day?"));
    }

    #[test]
    fn exact_lengths_for_named_sizes() {
        let mut g = generator(7);
        for n in [1, 2, 3, 10, 550, 3000] {
            for _ in 0..5 {
                let p = g.generate(n);
                assert_eq!(builtin().count(&p), n, "n={n}: {p:?}");
            }
        }
        assert_eq!(g.generate(0), "");
    }

    #[test]
    fn lengths_beyond_the_corpus_wrap() {
        let small: Vec<u32> = builtin().encode("From fairest creatures we desire increase,");
        let mut g =
            PromptGenerator::with_corpus(builtin(), small.clone(), StdRng::seed_from_u64(1));
        let p = g.generate(small.len() * 3 + 1);
        assert_eq!(builtin().count(&p), small.len() * 3 + 1);
        let mut empty =
            PromptGenerator::with_corpus(builtin(), Vec::new(), StdRng::seed_from_u64(1));
        assert_eq!(empty.generate(5), "");
    }

    #[test]
    fn seeded_generators_repeat_and_differ_by_seed() {
        let a: Vec<String> = (0..5)
            .map({
                let mut g = generator(42);
                move |_| g.generate(64)
            })
            .collect();
        let b: Vec<String> = (0..5)
            .map({
                let mut g = generator(42);
                move |_| g.generate(64)
            })
            .collect();
        let c: Vec<String> = (0..5)
            .map({
                let mut g = generator(43);
                move |_| g.generate(64)
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a[0], a[1], "offsets are random");
    }

    #[test]
    fn sample_length_rules() {
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(sample_length(550.0, 0.0, &mut rng), 550);
        assert_eq!(sample_length(2.5, 0.0, &mut rng), 2, "ties to even");
        assert_eq!(sample_length(3.5, -1.0, &mut rng), 4);
        assert_eq!(sample_length(0.0, 0.0, &mut rng), 1);
        assert_eq!(sample_length(-40.0, 0.0, &mut rng), 1);
        assert_eq!(sample_length(f64::NAN, 1.0, &mut rng), 1);
        assert_eq!(sample_length(-1000.0, 1.0, &mut rng), 1);
        // N(100, 10): the ceiling of each draw; mean ≈ 100.5, sd ≈ 10, all within 8 sd.
        let draws: Vec<f64> = (0..20_000)
            .map(|_| sample_length(100.0, 10.0, &mut rng) as f64)
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!((mean - 100.5).abs() < 0.5, "mean {mean}");
        assert!((var.sqrt() - 10.0).abs() < 0.5, "sd {}", var.sqrt());
        assert!(draws.iter().all(|&d| (20.0..=180.0).contains(&d)));
        assert!(draws.iter().any(|&d| d != draws[0]));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn qc_generate_is_exact(n in 1usize..4000, seed in proptest::prelude::any::<u64>()) {
            let mut g = generator(seed);
            let p = g.generate(n);
            proptest::prop_assert_eq!(builtin().count(&p), n);
        }
    }

    /// `--prompt-corpus random`: prompts of the exact length from the vocabulary; the `k`-th
    /// starts with consecutive pool ids (vLLM's window shifted by the prompt's index); `vllm`
    /// never draws a special token; the same seed makes the same prompts.
    #[test]
    fn random_vocabulary_prompts_have_the_exact_length() {
        use crate::workload::range_ratio::CorpusStyle;
        let t = builtin();
        let make = |style, seed| {
            let mut g =
                PromptGenerator::for_corpus(t, Corpus::Random(style), StdRng::seed_from_u64(seed));
            (1..=40).map(|n| g.generate(n * 7)).collect::<Vec<String>>()
        };
        for style in [CorpusStyle::Vllm, CorpusStyle::Sglang] {
            let texts = make(style, 3);
            for (i, text) in texts.iter().enumerate() {
                assert_eq!(t.count(text), (i + 1) * 7, "{style:?} {text:?}");
            }
            assert_eq!(texts, make(style, 3));
            assert_ne!(texts, make(style, 4));
        }
        let pools = t.vocab_pools();
        assert_eq!((pools.valid.len(), pools.all.len()), (199_998, 200_000));
        assert_eq!(pools.all[199_998..], [199_999, 200_018]);
        for text in make(CorpusStyle::Vllm, 5) {
            let ids = t.encode(&text);
            assert!(ids.iter().all(|&id| id < 199_998), "{text:?}");
        }
        // The first prompt is the pool's window from its offset (drawn first from the seed's
        // stream); this seed's window re-encodes to its own length, so no repair touches it.
        let offset = StdRng::seed_from_u64(1).random_range(0..200_019usize);
        let want: Vec<u32> = (0..5).map(|j| ((offset + j) % 199_998) as u32).collect();
        assert_eq!(t.encode(&t.decode(&want)), want, "pick another seed");
        let mut g = PromptGenerator::for_corpus(
            t,
            Corpus::Random(CorpusStyle::Vllm),
            StdRng::seed_from_u64(1),
        );
        assert_eq!(g.generate(5), t.decode(&want));
    }
}
