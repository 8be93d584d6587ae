//! o200k_base's pre-tokenizer pattern. One definition, read by the crate (`workload::o200k`, the
//! run-time fallback) and by the crate's build script (which determinizes it into the DFA the
//! crate searches with), so the two cannot disagree.

/// tiktoken's pattern with its negative look-ahead `\s+(?!\S)` written as a second pattern,
/// `\s+\s`, whose last character is given back (`pieces`). The three are tried as one
/// leftmost-first alternation, anchored where the last piece ended.
pub const PATTERNS: [&str; 3] = [
    concat!(
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"|\s*[\r\n]+",
        r"|\s+$",
    ),
    r"\s+\s",
    r"\s+",
];

/// Which of [`PATTERNS`] ends in a look-ahead character that is not part of the piece.
#[allow(dead_code)] // the build script reads only the patterns
pub const LOOKAHEAD: [bool; 3] = [false, true, false];
