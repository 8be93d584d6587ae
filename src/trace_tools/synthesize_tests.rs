//! Synthesis against worked cases (each checked by hand below and, for the first three, the
//! same rows run through AIPerf 0.13's own `Synthesizer` gave the same rows, except the one
//! noted), and statistical properties of the output against the 300 Mooncake rows of
//! tests/data/mooncake-conversation.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};

use super::*;

fn rows(values: &[Value]) -> Vec<InputRow> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| InputRow {
            line: i as u64 + 1,
            fields: v.as_object().expect("object").clone(),
        })
        .collect()
}

fn four() -> Vec<InputRow> {
    rows(&[
        json!({"timestamp": 1001, "input_length": 12, "output_length": 3, "hash_ids": [1, 2, 3]}),
        json!({"timestamp": 2000, "input_length": 10, "output_length": 1, "hash_ids": [1, 2, 4]}),
        json!({"timestamp": 2500, "input_length": 3, "output_length": 0, "hash_ids": [5]}),
        json!({"timestamp": 3001, "input_length": 7, "output_length": 5}),
    ])
}

fn run_on(input: &[InputRow], p: &SynthesisParams) -> Vec<Value> {
    synthesize(Path::new("t.jsonl"), input, p)
        .expect("synthesizes")
        .into_iter()
        .map(Value::Object)
        .collect()
}

/// Block size 4; shared ids 1 and 2 (largest 2). Prefix ×2: ids h → 2h, 2h+1, so [1,2] →
/// [2,3,4,5], fresh ids from (2+1)×2+1 = 7. Row 1: prompt 12-8 = 4 → ×2 = 8 tokens, 2 blocks
/// [7,8], length 16+8 = 24. Row 2: prompt 2 → 4, one block [9], 20. Row 3: no shared prefix,
/// prompt 3 → 6, [10,11]. Row 4: no blocks, kept. Timestamps halved (1001/2 → 500); output
/// ×1.5 rounded half to even: 3 → 4 (4.5), 1 → 2 (1.5), 0 → 1 (at least one), 5 → 8 (7.5).
#[test]
fn stretched_prefix_and_prompt() {
    let p = SynthesisParams {
        speedup_ratio: 2.0,
        prefix_len_multiplier: 2.0,
        prompt_len_multiplier: 2.0,
        output_len_multiplier: 1.5,
        block_size: 4,
        ..Default::default()
    };
    assert_eq!(
        run_on(&four(), &p),
        [
            json!({"timestamp": 500, "input_length": 24, "output_length": 4, "hash_ids": [2, 3, 4, 5, 7, 8]}),
            json!({"timestamp": 1000, "input_length": 20, "output_length": 2, "hash_ids": [2, 3, 4, 5, 9]}),
            json!({"timestamp": 1250, "input_length": 6, "output_length": 1, "hash_ids": [10, 11]}),
            json!({"timestamp": 1500, "input_length": 7, "output_length": 8}),
        ]
    );
}

/// Prefix ×1.5: [1,2] stays (integer part 1) and one fresh id makes ⌈3⌉ blocks; fresh ids
/// from 3+1 = 4. Prompts ×0.5: 4 → 2, 2 → 1, 3 → 1 (truncated), one block each. Lengths:
/// 12+2 = 14, 12+1 = 13, 0+1 = 1, all under the cap of 15; outputs capped at 2.
#[test]
fn fractional_prefix_and_caps() {
    let p = SynthesisParams {
        prefix_len_multiplier: 1.5,
        prompt_len_multiplier: 0.5,
        max_isl: Some(15),
        max_osl: Some(2),
        block_size: 4,
        ..Default::default()
    };
    assert_eq!(
        run_on(&four(), &p),
        [
            json!({"timestamp": 1001, "input_length": 14, "output_length": 2, "hash_ids": [1, 2, 4, 5]}),
            json!({"timestamp": 2000, "input_length": 13, "output_length": 1, "hash_ids": [1, 2, 6, 7]}),
            json!({"timestamp": 2500, "input_length": 1, "output_length": 1, "hash_ids": [8]}),
            json!({"timestamp": 3001, "input_length": 7, "output_length": 2}),
        ]
    );
    let capped = SynthesisParams {
        max_isl: Some(10),
        ..p
    };
    let out = run_on(&four(), &capped);
    assert_eq!(out[0]["input_length"], 10);
    assert_eq!(
        out[0]["hash_ids"],
        json!([1, 2, 4, 5]),
        "the cap keeps the blocks"
    );
}

/// Prefix ×0.5: [1,2] → [1]. Row 3 has no shared prefix and keeps none: its length is its
/// prompt, 3. (AIPerf 0.13 counts a block of prefix there that it does not add, giving 7 tokens
/// over one 4-token block; ringperf does not copy that.)
#[test]
fn squeezed_prefix() {
    let p = SynthesisParams {
        prefix_len_multiplier: 0.5,
        block_size: 4,
        ..Default::default()
    };
    let out = run_on(&four(), &p);
    assert_eq!(out[0]["hash_ids"], json!([1, 4]));
    assert_eq!(out[0]["input_length"], 8);
    assert_eq!(out[1]["hash_ids"], json!([1, 5]));
    assert_eq!(out[2]["hash_ids"], json!([6]));
    assert_eq!(out[2]["input_length"], 3);
}

/// Line 41 of the Mooncake excerpt: 1,902 tokens in four blocks, all shared (the last one
/// partial). AIPerf 0.13 refuses the file there ("input_len (1902) < prefix_len (2048)", run by
/// hand on tests/data/mooncake-conversation/first-300.jsonl); here the prefix is the row, and
/// doubled it is 8 blocks less the last block's shortfall of 146: 4,096 - 146 = 3,950.
#[test]
fn a_partial_last_shared_block_keeps_its_shortfall() {
    let input = rows(&[
        json!({"input_length": 1902, "hash_ids": [0, 975, 976, 977]}),
        json!({"input_length": 2000, "hash_ids": [0, 975, 976, 977]}),
    ]);
    let p = SynthesisParams {
        prefix_len_multiplier: 2.0,
        ..Default::default()
    };
    let out = run_on(&input, &p);
    assert_eq!(out[0]["input_length"], 3950);
    assert_eq!(ids(&out[0]).len(), 8);
    let same = run_on(&input, &SynthesisParams::default());
    assert_eq!(
        (&same[0]["input_length"], &same[1]["input_length"]),
        (&json!(1902), &json!(2000))
    );
}

#[test]
fn literal_prompts_keep_their_form_and_other_fields_pass_through() {
    let input = rows(&[
        json!({"text_input": "hi", "session_id": "a", "extra": {"k": 1}}),
        json!({"input_length": 4, "hash_ids": [9], "session_id": "a"}),
    ]);
    let out = run_on(
        &input,
        &SynthesisParams {
            block_size: 4,
            ..Default::default()
        },
    );
    assert!(out[0].get("input_length").is_none());
    assert_eq!(
        (&out[0]["session_id"], &out[0]["extra"]),
        (&json!("a"), &json!({"k": 1}))
    );
    assert_eq!(out[1]["input_length"], 4);
}

fn mooncake() -> Vec<InputRow> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/mooncake-conversation/first-300.jsonl");
    read(&path).expect("fixture reads")
}

fn ids(v: &Value) -> Vec<i64> {
    v["hash_ids"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_i64().unwrap()).collect())
        .unwrap_or_default()
}

/// The shared ids of the input, counted here from the rows.
fn shared(input: &[InputRow]) -> HashSet<i64> {
    let mut n: HashMap<i64, u32> = HashMap::new();
    for r in input {
        for h in ids(&Value::Object(r.fields.clone())) {
            *n.entry(h).or_default() += 1;
        }
    }
    n.into_iter()
        .filter(|(_, c)| *c > 1)
        .map(|(h, _)| h)
        .collect()
}

/// Each row: its shared prefix kept, its own prompt doubled in tokens and in new blocks seen
/// nowhere else, timestamps a quarter, outputs unchanged.
#[test]
fn mooncake_rows_keep_their_prefixes_and_scale_their_prompts() {
    let input = mooncake();
    let shared = shared(&input);
    let p = SynthesisParams {
        prompt_len_multiplier: 2.0,
        speedup_ratio: 4.0,
        ..Default::default()
    };
    let out = run_on(&input, &p);
    let mut fresh_seen = HashSet::new();
    for (r, o) in input.iter().zip(&out) {
        let r = Value::Object(r.fields.clone());
        let before = ids(&r);
        let prefix: Vec<i64> = before
            .iter()
            .take_while(|h| shared.contains(h))
            .copied()
            .collect();
        let isl = r["input_length"].as_u64().unwrap();
        // A row all shared prefix may end in a partial block: its prefix is then the whole row.
        let prefix_tokens = isl.min(512 * prefix.len() as u64);
        let prompt = isl - prefix_tokens;
        let after = ids(o);
        assert_eq!(after[..prefix.len()], prefix[..]);
        assert_eq!(
            o["input_length"].as_u64().unwrap(),
            prefix_tokens + 2 * prompt
        );
        assert_eq!(
            (after.len() - prefix.len()) as u64,
            (2 * prompt).div_ceil(512)
        );
        for h in &after[prefix.len()..] {
            assert!(
                !shared.contains(h) && fresh_seen.insert(*h),
                "id {h} reused"
            );
        }
        assert_eq!(o["output_length"], r["output_length"]);
        let ts = r["timestamp"].as_i64().unwrap();
        assert_eq!(o["timestamp"].as_i64().unwrap(), ts / 4);
    }
}

/// Root multiplier 4: each row's ids are the one-tree synthesis shifted by one offset for the
/// whole row, copy 0 to 3, each copy used; the same seed gives the same trace, another seed
/// another assignment.
#[test]
fn prefix_roots_spread_rows_over_copies_of_the_tree() {
    let input = mooncake();
    let base = run_on(&input, &SynthesisParams::default());
    let p = SynthesisParams {
        prefix_root_multiplier: 4,
        ..Default::default()
    };
    let out = run_on(&input, &p);
    let largest = base.iter().flat_map(ids).max().unwrap();
    let mut per_copy = [0u32; 4];
    for (b, o) in base.iter().zip(&out) {
        let (b, o) = (ids(b), ids(o));
        let shift = o[0] - b[0];
        assert_eq!(shift % (largest + 1), 0, "shift {shift}");
        let copy = (shift / (largest + 1)) as usize;
        per_copy[copy] += 1;
        assert!(b.iter().zip(&o).all(|(x, y)| y - x == shift));
    }
    // 300 rows over 4 copies: each gets some (binomial, mean 75, sd 7.5).
    assert!(
        per_copy.iter().all(|&n| (30..=120).contains(&n)),
        "{per_copy:?}"
    );
    assert_eq!(out, run_on(&input, &p), "same seed, same trace");
    let other = SynthesisParams { seed: 7, ..p };
    assert_ne!(
        out,
        run_on(&input, &other),
        "another seed, another assignment"
    );
}

#[test]
fn bad_options_and_rows_are_refused() {
    for p in [
        SynthesisParams {
            speedup_ratio: 0.0,
            ..Default::default()
        },
        SynthesisParams {
            prefix_root_multiplier: 0,
            ..Default::default()
        },
        SynthesisParams {
            output_len_multiplier: -1.0,
            ..Default::default()
        },
        SynthesisParams {
            prompt_len_multiplier: f64::NAN,
            ..Default::default()
        },
    ] {
        assert!(p.check().is_err(), "{p:?}");
    }
    // Two shared blocks of 512 but 100 tokens: the first block alone is longer than the row.
    let input = rows(&[
        json!({"input_length": 2000, "hash_ids": [1, 2, 3, 4]}),
        json!({"input_length": 100, "hash_ids": [1, 2]}),
    ]);
    let e = synthesize(Path::new("t.jsonl"), &input, &SynthesisParams::default())
        .expect_err("refused")
        .to_string();
    assert!(
        e.starts_with("t.jsonl:2: field \"input_length\": input_length (100)"),
        "{e}"
    );
    let input = rows(&[json!({"input_length": 5, "hash_ids": "x"})]);
    assert!(synthesize(Path::new("t"), &input, &SynthesisParams::default()).is_err());
}
