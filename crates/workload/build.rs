//! Lays out the builtin tokenizer's (tiktoken `o200k_base`) tables when the crate is compiled,
//! so that a run uses them in place, with nothing to build or deserialize at start-up.
//!
//! Input: `assets/o200k_base.tokens`, every token's bytes in rank order, each after a one-byte
//! length (assets/README.md). Output, in `OUT_DIR`, read by `src/workload/o200k/mod.rs` with
//! `include_bytes!`:
//! - `o200k_bytes.bin`: the tokens' bytes, concatenated in rank order;
//! - `o200k_ends.bin`: where each token's bytes end in it (little-endian `u32`, one per rank);
//! - `o200k_slots.bin`: an open-addressing table from a byte string to its rank (little-endian
//!   `u32` slots, linear probing from `hash & (SLOTS - 1)`; a slot is `tag << ID_BITS | rank +
//!   1`, 0 when empty);
//! - `o200k_pretokenizer.dfa`: the pre-tokenizer's pattern (`src/workload/o200k/pattern.rs`)
//!   determinized into a dense, anchored, leftmost-first DFA, serialized little-endian
//!   (`regex_automata::dfa::dense::DFA::to_bytes_little_endian`, 2.8 MB): a run reads it in
//!   place instead of compiling the pattern (~2 ms of every run's start-up; perf/README,
//!   "Seventh look").

use std::path::PathBuf;

#[path = "src/workload/o200k/hash.rs"]
mod hash;

#[path = "src/workload/o200k/pattern.rs"]
mod pattern;

fn main() {
    let asset = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("../../assets/o200k_base.tokens");
    println!("cargo::rerun-if-changed={}", asset.display());
    println!("cargo::rerun-if-changed=src/workload/o200k/hash.rs");
    println!("cargo::rerun-if-changed=src/workload/o200k/pattern.rs");
    let data = std::fs::read(&asset).expect("assets/o200k_base.tokens is readable");

    let mut bytes = Vec::with_capacity(data.len());
    let mut ends: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let len = usize::from(data[at]);
        let token = data
            .get(at + 1..at + 1 + len)
            .expect("assets/o200k_base.tokens ends inside a token");
        assert!(len > 0, "an empty token at rank {}", ends.len());
        bytes.extend_from_slice(token);
        ends.push(u32::try_from(bytes.len()).expect("under 4 GiB"));
        at += 1 + len;
    }
    assert!(
        ends.len() < (1 << hash::ID_BITS) - 1,
        "{} tokens do not fit the slots' id bits",
        ends.len()
    );

    let mask = hash::SLOTS - 1;
    let mut slots = vec![0u32; hash::SLOTS];
    let mut longest_probe = 0;
    let mut start = 0;
    for (rank, &end) in ends.iter().enumerate() {
        let token = &bytes[start..end as usize];
        start = end as usize;
        let h = hash::hash(token);
        let mut i = (h as usize) & mask;
        let mut probe = 0;
        while slots[i] != 0 {
            i = (i + 1) & mask;
            probe += 1;
        }
        longest_probe = longest_probe.max(probe);
        slots[i] = (hash::tag(h) << hash::ID_BITS) | (rank as u32 + 1);
    }
    // A bad hash would still be correct, only slow: refuse it here rather than measure it later.
    assert!(
        longest_probe < 64,
        "a probe of {longest_probe} slots: the hash clusters"
    );

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let le = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(out.join("o200k_bytes.bin"), &bytes).expect("OUT_DIR is writable");
    std::fs::write(out.join("o200k_ends.bin"), le(&ends)).expect("OUT_DIR is writable");
    std::fs::write(out.join("o200k_slots.bin"), le(&slots)).expect("OUT_DIR is writable");
    std::fs::write(out.join("o200k_pretokenizer.dfa"), pretokenizer_dfa())
        .expect("OUT_DIR is writable");
}

/// The pre-tokenizer's patterns as one dense DFA: anchored searches only (a piece starts where
/// the last one ended), leftmost-first like the `meta::Regex` it stands for, serialized
/// little-endian without the leading padding (the crate aligns the bytes itself).
fn pretokenizer_dfa() -> Vec<u8> {
    use regex_automata::MatchKind;
    use regex_automata::dfa::{StartKind, dense};
    let dfa = dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::LeftmostFirst)
                .start_kind(StartKind::Anchored),
        )
        .build_many(&pattern::PATTERNS)
        .expect("o200k's pre-tokenizer determinizes");
    let (bytes, pad) = dfa.to_bytes_little_endian();
    bytes[pad..].to_vec()
}
