use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;

use super::*;

fn builtin() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(Tokenizer::builtin)
}

/// Another implementation's o200k ids of `text`, special tokens as one id each (tiktoken-rs,
/// as AIPerf's `allowed_special="all"` and a server count them).
fn oracle(text: &str) -> Vec<u32> {
    tiktoken_rs::o200k_base_singleton().encode_with_special_tokens(text)
}

/// Tokens two sequences share from their start.
fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[test]
fn block_prompts_are_send() {
    fn send<T: Send>() {}
    send::<BlockPrompts<'static>>();
}

/// The inverse of `mix`, written out step by step: every step undone proves that `mix` loses
/// nothing, so distinct keys stay distinct.
fn unmix(mut z: u64) -> u64 {
    fn unshift(y: u64, s: u32) -> u64 {
        let mut x = y;
        for _ in 0..64 / s + 1 {
            x = y ^ (x >> s);
        }
        x
    }
    fn inverse(a: u64) -> u64 {
        // Newton's iteration for the inverse of an odd number modulo 2^64.
        let mut x = a;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }
    z = unshift(z, 31);
    z = unshift(z.wrapping_mul(inverse(0x94d0_49bb_1331_11eb)), 27);
    unshift(z.wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9)), 30)
}

#[test]
fn mix_is_undone_by_its_inverse() {
    for x in [0, 1, 2, u64::MAX, 1 << 40, (-1i64) as u64, i64::MIN as u64] {
        assert_eq!(unmix(mix(x)), x, "{x}");
    }
    let mut x = 0x1234_5678_9abc_def0u64;
    for _ in 0..10_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        assert_eq!(unmix(mix(x)), x, "{x}");
    }
    // Neighbouring keys land far apart.
    assert_ne!(mix(0) >> 48, mix(1) >> 48);
}

#[test]
fn code_length_covers_every_64_bit_key() {
    // k^L ≥ 2^64 with the least L: 2^64 needs 64 binary digits, 16 hex digits, 4 of base 2^16;
    // 3^40 ≈ 1.2e19 < 2^64 ≈ 1.8e19 < 3^41.
    assert_eq!(code_len(2), 64);
    assert_eq!(code_len(3), 41);
    assert_eq!(code_len(16), 16);
    assert_eq!(code_len(17), 16);
    assert_eq!(code_len(1 << 16), 4);
    assert_eq!(code_len((1 << 16) + 1), 4);
    assert_eq!(code_len(1), 0);
    assert_eq!(code_len(0), 0);
}

#[test]
fn builtin_words_stand_alone() {
    let t = builtin();
    let corpus = shakespeare_ids(t);
    let (words, filler) = alphabet(t, &corpus);
    // Python tiktoken over the same corpus ids: 7,203 distinct, 4,511 of them words (decoded, a
    // space and lowercase letters, encoding back to themselves), 44,043 of the 64,670 ids.
    assert_eq!(
        (corpus.len(), words.len(), filler.len()),
        (64_670, 4_511, 44_043)
    );
    // 4,511^5 ≈ 1.9e18 < 2^64 ≈ 1.8e19 < 4,511^6.
    assert_eq!(code_len(words.len()), 6);
    // The words, each written after every other, all in one text: tiktoken gives them back.
    let all = t.decode(&words);
    assert_eq!(oracle(&all), words);
    let reversed: Vec<u32> = words.iter().rev().copied().collect();
    assert_eq!(oracle(&t.decode(&reversed)), reversed);
    assert!(
        all.split(' ')
            .skip(1)
            .all(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
    );
}

#[test]
fn a_block_is_its_separator_code_and_filler() {
    let t = builtin();
    let mut p = BlockPrompts::new(t, 64, 3, 9);
    let l = p.code_len;
    let k = p.words.len() as u64;
    assert_eq!(l, code_len(p.words.len()));
    let ids = p.tokens(64, &[-7]).unwrap();
    assert_eq!(ids[0], 199_999);
    // The code read back as a base-k number, least significant digit first, is the id's key.
    let key = ids[1..=l].iter().rev().fold(0u128, |acc, d| {
        acc * u128::from(k) + p.words.binary_search(d).unwrap() as u128
    });
    assert_eq!(key, u128::from(mix((-7i64) as u64 ^ 3 ^ 9)));
    // Then corpus words in their corpus order.
    let rest = &ids[l + 1..];
    assert!(p.filler.windows(rest.len()).any(|w| w == rest));
}

#[test]
fn same_seed_and_file_give_the_same_prompts() {
    let t = builtin();
    let rows: [(usize, &[i64]); 3] = [(40, &[1, 2, 3]), (50, &[1, 2, 4, 5]), (70, &[1, 6])];
    let make = |seed, file| {
        let mut p = BlockPrompts::new(t, 16, seed, file);
        rows.iter()
            .map(|(n, h)| p.prompt(*n, h).unwrap())
            .collect::<Vec<_>>()
    };
    let a = make(5, 77);
    assert_eq!(a, make(5, 77));
    // Another file's id 1 is another block.
    let b = make(5, 78);
    assert_ne!(a[0][..40], b[0][..40]);
}

/// One row of a random trace: the ids and the input length.
type Row = (Vec<i64>, usize);

/// Random traces: rows follow one of three paths of ids (shared prefixes) for a while, then end
/// with an id of their own, cut or followed by a tail. Ids include 0, ±2^40 and the extremes.
fn traces() -> impl Strategy<Value = (usize, Vec<Row>)> {
    let id = prop_oneof![
        3 => proptest::sample::select(vec![
            0i64, 1, -1, 2, 1 << 40, (1 << 40) + 1, -(1 << 40), i64::MIN, i64::MAX
        ]),
        1 => any::<i64>(),
    ];
    let paths = proptest::collection::vec(proptest::collection::vec(id, 1..6), 3);
    let rows =
        proptest::collection::vec((0..3usize, 0..6usize, any::<bool>(), 0..1_000usize), 2..10);
    (8..48usize, paths, rows).prop_map(|(bs, paths, rows)| {
        let rows = rows
            .into_iter()
            .enumerate()
            .map(|(i, (path, len, cut, extra))| {
                let mut ids: Vec<i64> = paths[path].iter().take(len).copied().collect();
                // An id of its own (far from the paths' ids; negative for odd rows).
                let own = (1i64 << 50) + i as i64;
                ids.push(if i % 2 == 1 { -own } else { own });
                let full = ids.len() * bs;
                let n = if cut {
                    full - extra % bs
                } else {
                    full + extra % (2 * bs)
                };
                (ids, n)
            })
            .collect();
        (bs, rows)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every prompt is exactly its length, re-tokenized by tiktoken; for every pair of rows the
    /// common token prefix is the common hash-id prefix's blocks plus the next separator, and at
    /// most the code's length more (two codes agree on fewer than all their digits); equal ids
    /// have byte-equal blocks and distinct ids distinct ones.
    #[test]
    fn prefixes_follow_the_hash_ids((bs, rows) in traces(), seed in any::<u64>()) {
        let t = builtin();
        let mut p = BlockPrompts::new(t, bs, seed, 0);
        let l = p.code_len;
        let mut made = Vec::new();
        for (ids, n) in &rows {
            let tokens = p.tokens(*n, ids).unwrap();
            let text = t.decode(&tokens);
            prop_assert_eq!(tokens.len(), *n);
            prop_assert_eq!(&oracle(&text), &tokens);
            prop_assert_eq!(t.count(&text), *n);
            made.push(tokens);
        }
        let mut texts: HashMap<String, i64> = HashMap::new();
        for (a, (ids_a, _)) in rows.iter().enumerate() {
            for (i, &id) in ids_a.iter().enumerate() {
                if (i + 1) * bs <= made[a].len() {
                    let block = t.decode(&made[a][i * bs..(i + 1) * bs]);
                    let first = *texts.entry(block).or_insert(id);
                    prop_assert_eq!(first, id, "two ids, one block text");
                }
            }
            for (b, (ids_b, _)) in rows.iter().enumerate().skip(a + 1) {
                let shared = common_prefix(ids_a, ids_b) * bs;
                let cp = common_prefix(&made[a], &made[b]);
                prop_assert!(cp > shared, "{cp} tokens shared for {shared} of blocks");
                prop_assert!(cp <= shared + l, "{cp} tokens shared for {shared} of blocks");
            }
        }
        let distinct_ids: std::collections::HashSet<i64> = texts.values().copied().collect();
        prop_assert_eq!(distinct_ids.len(), texts.len(), "one text per id");
    }
}

/// The first 300 rows of the Mooncake conversation trace (tests/data/mooncake-conversation):
/// no two of its 7,814 distinct hash ids share a block text, and every prompt re-tokenizes, by
/// tiktoken, to exactly its `input_length`.
#[test]
fn mooncake_excerpt_has_no_shared_blocks_and_exact_lengths() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/data/mooncake-conversation/first-300.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let t = builtin();
    let mut p = BlockPrompts::new(t, 512, 42, 0);
    let mut blocks: HashMap<String, i64> = HashMap::new();
    let (mut ids_seen, mut total) = (std::collections::HashSet::new(), 0);
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let n = row["input_length"].as_u64().unwrap() as usize;
        let ids: Vec<i64> = row["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let tokens = p.tokens(n, &ids).unwrap();
        let prompt = t.decode(&tokens);
        assert_eq!(oracle(&prompt).len(), n, "{line}");
        total += n;
        for (i, chunk) in tokens.chunks(512).enumerate() {
            ids_seen.insert(ids[i]);
            let first = *blocks.entry(t.decode(chunk)).or_insert(ids[i]);
            assert_eq!(
                first, ids[i],
                "hash ids {first} and {} share a block text",
                ids[i]
            );
        }
    }
    assert_eq!(
        (ids_seen.len(), blocks.len(), total),
        (7_814, 7_814, 4_269_971)
    );
}

/// A byte-level BPE `tokenizer.json` in the Hugging Face format, its merges spelling the
/// corpus's first lowercase words with a leading space, and `<|endoftext|>` an added special
/// token (its only BOS / EOS).
#[cfg(feature = "hf-tokenizer")]
fn byte_level_bpe(dir: &Path) -> Tokenizer {
    // GPT-2's byte-to-character table.
    let mut byte_char = [' '; 256];
    let mut extra = 0;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        byte_char[b as usize] = if printable {
            char::from(b)
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap()
        };
    }
    let mut vocab: Vec<String> = byte_char.iter().map(|c| c.to_string()).collect();
    let mut merges: Vec<(String, String)> = Vec::new();
    let mut known: std::collections::HashSet<String> = vocab.iter().cloned().collect();
    let words = crate::workload::prompt::SHAKESPEARE
        .split(|c: char| !c.is_ascii_lowercase())
        .filter(|w| !w.is_empty());
    for word in words.take(20_000) {
        let mut left = byte_char[b' ' as usize].to_string();
        for c in word.chars() {
            let whole = format!("{left}{c}");
            if known.insert(whole.clone()) {
                merges.push((left.clone(), c.to_string()));
                vocab.push(whole.clone());
            }
            left = whole;
        }
    }
    let eot = vocab.len();
    let vocab: serde_json::Map<String, serde_json::Value> = vocab
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, i.into()))
        .collect();
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": false,
            "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
            "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
            "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "vocab": vocab, "merges": merges},
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json.to_string()).unwrap();
    crate::workload::tokenizer::load(path.to_str().unwrap()).unwrap()
}

/// The same construction under a Hugging Face byte-level BPE: the separator is its special
/// token, counted once; prompts re-tokenize to exactly their length; distinct ids differ.
#[cfg(feature = "hf-tokenizer")]
#[test]
fn hf_byte_level_blocks_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let t = byte_level_bpe(dir.path());
    let sep = t.block_separator().unwrap();
    assert_eq!(t.encode("<|endoftext|>"), [sep]);
    assert_eq!(t.count("<|endoftext|> the<|endoftext|>"), 3);
    let mut p = BlockPrompts::new(&t, 32, 1, 2);
    assert!(p.words.len() > 1_000, "{}", p.words.len());
    let rows: [(usize, &[i64]); 4] = [
        (96, &[0, 1, 2]),
        (90, &[0, 1, 3]),
        (130, &[0, 1 << 40, -5, i64::MIN]),
        (200, &[0, 1]),
    ];
    let mut made = Vec::new();
    for (n, ids) in rows {
        let tokens = p.tokens(n, ids).unwrap();
        let text = t.decode(&tokens);
        assert_eq!(t.encode(&text), tokens, "{text}");
        assert_eq!(t.count(&text), n);
        assert_eq!(tokens.iter().filter(|&&x| x == sep).count(), ids.len());
        made.push(tokens);
    }
    let l = p.code_len;
    let cp = common_prefix(&made[0], &made[1]);
    assert!((65..=64 + l).contains(&cp), "{cp}");
    let cp = common_prefix(&made[0], &made[2]);
    assert!((33..=32 + l).contains(&cp), "{cp}");
    assert_eq!(made[3][..64], made[0][..64]);
}

/// Blocks cut to two tokens (the separator and one digit) still differ: the first digit is the
/// code's least significant, any of the 4,511 words, not its leading one (one of 10 values). In
/// the whole Mooncake conversation trace 17 cut last blocks have 2 tokens.
#[test]
fn two_token_blocks_rarely_agree() {
    let mut p = BlockPrompts::new(builtin(), 512, 42, 0);
    let mut texts = std::collections::HashSet::new();
    for id in 0..200i64 {
        texts.insert(p.tokens(2, &[id]).unwrap());
    }
    // 200 draws from 4,511 values: about 4 repeats expected; from 10 values, at most 10 texts.
    assert!(texts.len() > 180, "{}", texts.len());
}
