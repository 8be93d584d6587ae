use super::*;

fn oracle() -> &'static tiktoken_rs::CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// `assets/o200k_base.tokens` as tiktoken-rs's o200k_base vocabulary gives it: each rank's
/// bytes after a one-byte length, in rank order.
fn vocabulary_from_oracle() -> Vec<u8> {
    let mut out = Vec::new();
    for rank in 0u32.. {
        let Ok(bytes) = oracle().decode_bytes(&[rank]) else {
            break;
        };
        // The special tokens start past the byte-pair vocabulary.
        if rank >= 199_998 {
            break;
        }
        out.push(u8::try_from(bytes.len()).expect("tokens are under 256 bytes"));
        out.extend_from_slice(&bytes);
    }
    out
}

/// The shipped vocabulary is tiktoken-rs's, byte for byte; `RINGPERF_WRITE_ASSETS=1` rewrites
/// it (assets/README.md).
#[test]
fn shipped_vocabulary_equals_tiktoken() {
    let want = vocabulary_from_oracle();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/o200k_base.tokens"
    );
    if std::env::var_os("RINGPERF_WRITE_ASSETS").is_some() {
        std::fs::write(path, &want).expect("assets/ is writable");
    }
    let shipped = std::fs::read(path).expect("assets/o200k_base.tokens");
    assert!(
        shipped == want,
        "assets/o200k_base.tokens differs from tiktoken-rs's o200k_base"
    );
    assert_eq!(num_tokens(), 199_998);
}

/// Every token is found at its own rank through the compiled table, and a byte string that is
/// no token is not found.
#[test]
fn every_token_is_found_at_its_rank() {
    for r in 0..num_tokens() as u32 {
        let bytes = token_bytes(r).expect("in the vocabulary");
        assert_eq!(rank(bytes), Some(r), "{bytes:?}");
    }
    assert_eq!(token_bytes(num_tokens() as u32), None);
    assert_eq!(rank(b""), None);
    assert_eq!(rank(b"<|endoftext|>"), None);
    assert_eq!(rank(&[0xFF; 40]), None);
}

/// `merge`'s answer for `piece`, as byte strings.
fn merged(piece: &[u8], large: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut emit = |p: &[u8]| out.push(p.to_vec());
    if large {
        merge_large(piece, &mut emit);
    } else {
        merge_small(piece, &mut emit);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// The heap merge and the scanning merge agree on any bytes short enough for both, so the
    /// cut-over between them changes no answer.
    #[test]
    fn heap_merge_equals_scanning_merge(
        piece in proptest::collection::vec(
            proptest::prop_oneof![
                3 => proptest::sample::select(b"aeinrst ".to_vec()),
                1 => proptest::num::u8::ANY,
            ],
            2..LARGE_PIECE,
        )
    ) {
        proptest::prop_assert_eq!(merged(&piece, true), merged(&piece, false));
    }

    /// Long pieces (the heap merge's): words, digits and punctuation runs of hundreds of bytes
    /// give tiktoken-rs's ids.
    #[test]
    fn long_pieces_equal_tiktoken(s in "([a-z]{1,12}|[A-Z]{1,3}|[0-9]{1,4}|[!-/]{1,3}){20,120}") {
        let mut ids = Vec::new();
        encode(&s, &mut ids);
        proptest::prop_assert_eq!(ids, oracle().encode_ordinary(&s));
    }
}

/// A piece of 4,000 bytes merges through the heap as tiktoken-rs merges it.
#[test]
fn a_very_long_piece_equals_tiktoken() {
    let s: String = (0..4_000u32)
        .map(|i| char::from(b'a' + ((i * 7 + i / 13) % 26) as u8))
        .collect();
    let mut ids = Vec::new();
    encode(&s, &mut ids);
    assert_eq!(ids, oracle().encode_ordinary(&s));
    assert_eq!(count(&s), ids.len());
    assert_eq!(pieces(&s).count(), 1);
}

/// `text` cut by the pattern compiled at run time (the fallback), as `pieces` cut it before the
/// DFA: every piece's end and pattern.
fn cut_by_regex(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(rest) = text.get(at..).filter(|r| !r.is_empty()) {
        let m = PRETOKENIZER
            .find(Input::new(rest).anchored(Anchored::Yes))
            .expect("o200k's pattern matches at every position");
        out.push((m.end(), m.pattern().as_usize()));
        at += m.end();
    }
    out
}

/// The same cut by the shipped DFA.
fn cut_by_dfa(text: &str) -> Vec<(usize, usize)> {
    let dfa = DFA.as_ref().expect("the shipped DFA reads on this target");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(rest) = text.get(at..).filter(|r| !r.is_empty()) {
        let m = dfa
            .try_search_fwd(&Input::new(rest).anchored(Anchored::Yes))
            .expect("the DFA has no quit bytes")
            .expect("o200k's pattern matches at every position");
        out.push((m.offset(), m.pattern().as_usize()));
        at += m.offset();
    }
    out
}

/// The DFA the build script serialized is read here (little-endian target), and cuts the
/// whole bundled corpus and the vLLM-style captures exactly where the compiled pattern does.
#[test]
fn the_shipped_dfa_cuts_the_corpus_as_the_pattern_does() {
    assert!(
        DFA.is_some(),
        "the DFA is read, not compiled, on this target"
    );
    let corpus = crate::workload::prompt::SHAKESPEARE;
    assert_eq!(cut_by_dfa(corpus), cut_by_regex(corpus));
    for text in [
        "",
        " ",
        "\n",
        "  \n\n  ",
        "a  b",
        "x\r\ny",
        "don't WE'LL",
        "123456 7",
        "héllo wörld",
        "日本語のテキスト",
        "emoji 🎉🎉 !!",
        "tabs\t\tand  spaces   ",
        "trailing   ",
    ] {
        assert_eq!(cut_by_dfa(text), cut_by_regex(text), "{text:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// On any string — letters of every case and script, marks, digits, whitespace of every
    /// kind, punctuation, contractions — the DFA's pieces (end and pattern) are the compiled
    /// pattern's.
    #[test]
    fn the_dfa_cuts_any_text_as_the_pattern_does(
        text in "(\\PC|\\s|[ \t\r\n\u{a0}\u{2028}]|'[sStTdDmM]|'(re|ve|ll|RE|VE|LL)|[0-9]{1,5}|\u{301}){0,60}"
    ) {
        proptest::prop_assert_eq!(cut_by_dfa(&text), cut_by_regex(&text));
    }
}
