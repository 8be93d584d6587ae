//! Synthetic conversations: turn counts and delays, ids and counts, `--seq-dist`, prefix
//! sharing, batch texts, and system / user-context messages in the bodies.

use std::collections::HashSet;

use serde_json::Value;

use super::synthetic::{self, PrefixPool, SyntheticParams, sequential_id};
use super::{
    KnownCounts, PromptGenerator, SeqDist, Tokenizer, child_rng, inputs_json, prepare,
    prepare_known,
};
use ringperf_wire::conversation::{Content, Conversation};
use ringperf_wire::endpoint::{EndpointKind, PayloadParams};

fn small(n: usize, seed: Option<u64>) -> SyntheticParams {
    SyntheticParams {
        isl_mean: 3,
        num_dataset_entries: n,
        seed,
        ..SyntheticParams::default()
    }
}

fn texts(c: &Conversation, turn: usize) -> &[String] {
    match &c.turns[turn].content {
        Content::Texts(t) => t,
        other => panic!("not texts: {other:?}"),
    }
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
    (m, v.sqrt())
}

#[test]
fn fixed_turns_without_delay() {
    let tok = Tokenizer::builtin();
    let mut p = small(5, Some(1));
    p.shaping.turn_mean = 3;
    let ds = synthetic::build(&p, &tok);
    assert_eq!(ds.turn_count(), 15);
    for c in &ds.conversations {
        assert_eq!(c.turns.len(), 3);
        assert!(
            c.turns.iter().all(|t| t.delay_ms.is_none()),
            "delay mean 0: no delay"
        );
        let prompts: HashSet<&String> = (0..3).map(|i| &texts(c, i)[0]).collect();
        assert_eq!(prompts.len(), 3, "every turn is a fresh prompt");
        assert!((0..3).all(|i| tok.count(&texts(c, i)[0]) == 3));
    }
}

#[test]
fn turn_counts_follow_the_truncated_normal() {
    let tok = Tokenizer::builtin();
    let mut p = small(3000, Some(2));
    p.isl_mean = 1;
    p.shaping.turn_mean = 4;
    p.shaping.turn_stddev = 2;
    let ds = synthetic::build(&p, &tok);
    let counts: Vec<f64> = ds
        .conversations
        .iter()
        .map(|c| c.turns.len() as f64)
        .collect();
    // ceil(N(4, 2) truncated at 0), at least 1: mean Σ k·P(k) = 4.6128, sd 1.9001 (P(k) =
    // (Φ((k-4)/2) - Φ((k-1-4)/2)) / (1 - Φ(-2)), the first bin from 0). Standard error of
    // the mean at n = 3000: 0.0347; bound 5 se.
    let (m, sd) = mean_sd(&counts);
    assert!((m - 4.6128).abs() < 0.174, "mean {m}");
    assert!((sd - 1.9001).abs() < 0.15, "sd {sd}");
    assert!(counts.iter().all(|&c| c >= 1.0));
}

#[test]
fn later_turns_wait_the_drawn_delay_times_the_ratio() {
    let tok = Tokenizer::builtin();
    let mut p = small(2000, Some(3));
    p.isl_mean = 1;
    p.shaping.turn_mean = 2;
    p.shaping.turn_delay_mean_ms = 100.0;
    p.shaping.turn_delay_stddev_ms = 10.0;
    p.shaping.turn_delay_ratio = 0.5;
    let ds = synthetic::build(&p, &tok);
    let mut delays = Vec::new();
    for c in &ds.conversations {
        assert_eq!(c.turns[0].delay_ms, None, "the first turn has no delay");
        let d = c.turns[1].delay_ms.expect("a later turn has a delay");
        assert_eq!(
            (d * 2.0).fract(),
            0.0,
            "an integer number of ms times 0.5: {d}"
        );
        delays.push(d);
    }
    // ceil(N(100, 10)) · 0.5: mean (100 + 0.5) · 0.5 = 50.25, sd ≈ 10 · 0.5 = 5; standard
    // error at n = 2000: 0.112; bound 5 se.
    let (m, sd) = mean_sd(&delays);
    assert!((m - 50.25).abs() < 0.56, "mean {m}");
    assert!((sd - 5.0).abs() < 0.4, "sd {sd}");

    // AIPerf reads the mean and stddev as integers: 30.9 ± 0.7 is exactly 30.
    p.num_dataset_entries = 20;
    p.shaping.turn_delay_mean_ms = 30.9;
    p.shaping.turn_delay_stddev_ms = 0.7;
    p.shaping.turn_delay_ratio = 1.0;
    let ds = synthetic::build(&p, &tok);
    assert!(
        ds.conversations
            .iter()
            .all(|c| c.turns[1].delay_ms == Some(30.0))
    );
}

#[test]
fn ids_are_sequential_when_seeded_and_uuids_otherwise() {
    let tok = Tokenizer::builtin();
    let mut p = small(300, Some(4));
    p.sequential_ids = true;
    let ds = synthetic::build(&p, &tok);
    assert_eq!(ds.conversations.len(), 300);
    assert_eq!(ds.conversations[0].session_id, "session_000000");
    assert_eq!(ds.conversations[299].session_id, "session_000299");
    for (i, c) in ds.conversations.iter().enumerate() {
        assert_eq!(c.session_id, sequential_id(i));
    }
    assert_eq!(sequential_id(1_234_567), "session_1234567");

    let ds = synthetic::build(&small(3, None), &tok);
    for c in &ds.conversations {
        assert!(
            uuid::Uuid::parse_str(&c.session_id).is_ok(),
            "{}",
            c.session_id
        );
    }
}

#[test]
fn seq_dist_gives_each_turn_its_pair() {
    let tok = Tokenizer::builtin();
    let mut p = small(400, Some(5));
    p.shaping.turn_mean = 2;
    p.osl_mean = Some(999);
    p.shaping.seq_dist = Some(SeqDist::parse("10,5:50;20,7:50").unwrap());
    let ds = synthetic::build(&p, &tok);
    let mut short = 0.0;
    let mut total = 0.0;
    let mut mixed = false;
    for c in &ds.conversations {
        let pairs: Vec<(usize, Option<u32>)> = (0..2)
            .map(|i| (tok.count(&texts(c, i)[0]), c.turns[i].max_tokens))
            .collect();
        for &pair in &pairs {
            assert!(pair == (10, Some(5)) || pair == (20, Some(7)), "{pair:?}");
            short += f64::from(u8::from(pair.0 == 10));
            total += 1.0;
        }
        mixed |= pairs[0] != pairs[1];
    }
    assert!(mixed, "each turn draws its own pair");
    // Binomial p = 0.5, n = 800: sd 0.0177; bound 5 sd.
    assert!((short / total - 0.5).abs() < 0.089, "{}", short / total);
}

#[test]
fn osl_stddev_is_read_as_an_integer() {
    let tok = Tokenizer::builtin();
    let mut p = small(30, Some(6));
    p.osl_mean = Some(40);
    p.osl_stddev = 0.9;
    p.isl_stddev = 0.9;
    let ds = synthetic::build(&p, &tok);
    for c in &ds.conversations {
        assert_eq!(c.turns[0].max_tokens, Some(40));
        assert_eq!(tok.count(&texts(c, 0)[0]), 3);
    }
}

#[test]
fn prefixes_come_from_a_pool_and_start_first_turns_only() {
    let tok = Tokenizer::builtin();
    let seed = 7;
    let mut p = small(60, Some(seed));
    p.isl_mean = 10;
    p.shaping.turn_mean = 2;
    p.shaping.prefix = Some(PrefixPool {
        pool_size: 3,
        length: 20,
    });
    let ds = synthetic::build(&p, &tok);
    // The pool is the first thing drawn from the corpus stream: rebuild it the same way.
    let mut g = PromptGenerator::new(&tok, child_rng(Some(seed), "dataset.prompt.corpus"));
    let pool: Vec<String> = (0..3)
        .map(|_| tok.decode(&tok.encode(&g.generate(20))))
        .collect();
    assert_eq!(pool.iter().collect::<HashSet<_>>().len(), 3);
    let mut used = HashSet::new();
    for c in &ds.conversations {
        let first = &texts(c, 0)[0];
        let i = pool
            .iter()
            .position(|pre| first.starts_with(pre.as_str()))
            .unwrap_or_else(|| panic!("no pool prefix starts {first:?}"));
        used.insert(i);
        // Additive: the prefix's 20 tokens plus the ISL's 10.
        assert_eq!(tok.count(first), 30);
        let later = &texts(c, 1)[0];
        assert!(pool.iter().all(|pre| !later.starts_with(pre.as_str())));
        assert_eq!(tok.count(later), 10);
    }
    // 60 draws from 3: the chance that one is never drawn is 3·(2/3)^60 ≈ 1e-10.
    assert_eq!(
        used.len(),
        3,
        "the pool size is respected and every prefix used"
    );

    // A pool of zero-length prefixes adds nothing (AIPerf's pool of empty prefixes).
    p.shaping.prefix = Some(PrefixPool {
        pool_size: 3,
        length: 0,
    });
    let ds = synthetic::build(&p, &tok);
    assert!(
        ds.conversations
            .iter()
            .all(|c| tok.count(&texts(c, 0)[0]) == 10)
    );
}

#[test]
fn batch_texts_are_parts_in_chat_and_a_list_in_completions() {
    let tok = Tokenizer::builtin();
    let mut p = small(4, Some(8));
    p.shaping.batch_size = 3;
    let ds = synthetic::build(&p, &tok);
    for c in &ds.conversations {
        assert_eq!(texts(c, 0).len(), 3);
        assert!(texts(c, 0).iter().all(|t| tok.count(t) == 3));
    }
    let params = PayloadParams {
        model: "m".into(),
        ..Default::default()
    };
    let chat = prepare(ds.clone(), EndpointKind::Chat, &params, &tok);
    let body: Value =
        serde_json::from_slice(chat.conversations[0].turns[0].body.as_ref().unwrap()).unwrap();
    let parts = body["messages"][0]["content"]
        .as_array()
        .expect("content parts");
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|p| p["type"] == "text"));
    assert_eq!(
        parts[1]["text"].as_str(),
        Some(texts(&ds.conversations[0], 0)[1].as_str())
    );

    let comp = prepare(ds.clone(), EndpointKind::Completions, &params, &tok);
    let body: Value =
        serde_json::from_slice(comp.conversations[0].turns[0].body.as_ref().unwrap()).unwrap();
    let prompts: Vec<&str> = body["prompt"]
        .as_array()
        .expect("a list of prompts")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let expected: Vec<&str> = texts(&ds.conversations[0], 0)
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(prompts, expected);
}

#[test]
fn system_and_user_context_messages_lead_every_body() {
    let tok = Tokenizer::builtin();
    let mut p = small(6, Some(9));
    p.shaping.turn_mean = 2;
    p.shaping.shared_system_length = Some(12);
    p.shaping.user_context_length = Some(8);
    let ds = synthetic::build(&p, &tok);
    let system = ds.conversations[0].system.clone().expect("a system prompt");
    assert_eq!(tok.count(&system), 12);
    let contexts: HashSet<&String> = ds
        .conversations
        .iter()
        .map(|c| c.user_context.as_ref().unwrap())
        .collect();
    assert_eq!(contexts.len(), 6, "one user context per conversation");
    assert!(contexts.iter().all(|c| tok.count(c) == 8));

    let params = PayloadParams {
        model: "m".into(),
        ..Default::default()
    };
    let prepared = prepare(ds.clone(), EndpointKind::Chat, &params, &tok);
    let inputs = inputs_json(&prepared, EndpointKind::Chat, &params);
    for (c, d) in ds
        .conversations
        .iter()
        .zip(inputs["data"].as_array().unwrap())
    {
        assert_eq!(
            c.system.as_deref(),
            Some(system.as_str()),
            "shared by every conversation"
        );
        for (i, body) in d["payloads"].as_array().unwrap().iter().enumerate() {
            let m = body["messages"].as_array().unwrap();
            assert_eq!(m.len(), 3, "system, context, the turn");
            assert_eq!(
                (m[0]["role"].as_str(), m[0]["content"].as_str()),
                (Some("system"), Some(system.as_str()))
            );
            assert_eq!(m[1]["role"], "user");
            assert_eq!(m[1]["content"].as_str(), c.user_context.as_deref());
            assert_eq!(m[2]["content"].as_str(), Some(texts(c, i)[0].as_str()));
        }
    }

    // A verbatim system prompt.
    let mut p = small(2, Some(9));
    p.shaping.system_prompt = Some("Be brief.".into());
    let ds = synthetic::build(&p, &tok);
    let prepared = prepare(ds, EndpointKind::Chat, &params, &tok);
    let body: Value =
        serde_json::from_slice(prepared.conversations[1].turns[0].body.as_ref().unwrap()).unwrap();
    assert_eq!(
        body["messages"][0],
        serde_json::json!({"role":"system","content":"Be brief."})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn seeded_builds_repeat() {
    let tok = Tokenizer::builtin();
    let mut p = small(5, Some(10));
    p.shaping.turn_mean = 3;
    p.shaping.turn_stddev = 2;
    p.shaping.turn_delay_mean_ms = 20.0;
    p.shaping.turn_delay_stddev_ms = 5.0;
    p.shaping.prefix = Some(PrefixPool {
        pool_size: 2,
        length: 4,
    });
    p.shaping.seq_dist = Some(SeqDist::parse("4|1,2:50;6,3|1:50").unwrap());
    assert_eq!(synthetic::build(&p, &tok), synthetic::build(&p, &tok));
}

/// `--random-range-ratio`: every turn's text is as many tokens as the window allows and its
/// `max_tokens` in the OSL window (windows by hand: vllm r = 0.5 around 20 and 8 is [10, 30] and
/// [4, 12]); the same seed gives the same prompts, another seed other ones.
#[test]
fn range_ratio_turns_stay_in_the_window() {
    let tok = Tokenizer::builtin();
    let ratio = super::range_ratio::RangeRatio::parse("0.5", super::range_ratio::CorpusStyle::Vllm)
        .unwrap();
    let build = |seed| {
        let mut p = small(60, Some(seed));
        p.shaping.turn_mean = 2;
        p.shaping.range_ratio = Some(ratio.sampler(20, 8));
        synthetic::build(&p, &tok)
    };
    let d = build(9);
    let mut isls = HashSet::new();
    for c in &d.conversations {
        for (i, t) in c.turns.iter().enumerate() {
            let n = tok.count(&texts(c, i)[0]) as u32;
            assert!((10..=30).contains(&n), "ISL {n}");
            let osl = t.max_tokens.expect("the OSL is the turn's max_tokens");
            assert!((4..=12).contains(&osl), "OSL {osl}");
            isls.insert(n);
        }
    }
    assert!(isls.len() > 10, "lengths vary over the window: {isls:?}");
    let again = build(9);
    let other = build(10);
    let all = |d: &ringperf_wire::conversation::Dataset| -> Vec<String> {
        d.conversations
            .iter()
            .flat_map(|c| {
                (0..c.turns.len())
                    .map(|i| texts(c, i)[0].clone())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    assert_eq!(all(&d), all(&again), "same seed, same prompts");
    assert_ne!(all(&d), all(&other), "another seed, other prompts");
}

/// Every turn's ISL, in dataset order.
fn isls(prepared: &super::Prepared) -> Vec<Option<u64>> {
    prepared
        .conversations
        .iter()
        .flat_map(|c| c.turns.iter().map(|t| t.isl_tokens))
        .collect()
}

/// The counts the generator measured while making the prompts are what counting the texts
/// gives, and preparing with them gives every turn the ISL that counting its body gives, in
/// every shape: one text, several, a prefix, system and context messages, later turns of a
/// chat, completions, the server's counts.
#[test]
fn known_counts_give_the_isl_that_counting_gives() {
    let tok = Tokenizer::builtin();
    let chat = PayloadParams {
        model: "m".into(),
        ..Default::default()
    };
    let server = PayloadParams {
        use_server_token_count: true,
        ..chat.clone()
    };
    let mut shapes: Vec<SyntheticParams> = Vec::new();
    let mut plain = small(12, Some(5));
    plain.isl_mean = 550;
    plain.isl_stddev = 40.0;
    shapes.push(plain.clone());
    let mut batch = plain.clone();
    batch.shaping.batch_size = 3;
    shapes.push(batch);
    let mut prefixed = plain.clone();
    prefixed.shaping.prefix = Some(PrefixPool {
        pool_size: 2,
        length: 20,
    });
    shapes.push(prefixed);
    let mut system = plain.clone();
    system.shaping.shared_system_length = Some(12);
    shapes.push(system);
    let mut context = plain.clone();
    context.shaping.user_context_length = Some(8);
    shapes.push(context);
    let mut turns = plain.clone();
    turns.shaping.turn_mean = 3;
    shapes.push(turns);
    for p in &shapes {
        let (ds, known) = synthetic::build_counted(p, &tok);
        assert_eq!(ds, synthetic::build(p, &tok), "the same dataset as `build`");
        assert_eq!(known.0.len(), ds.conversations.len());
        for (c, counts) in ds.conversations.iter().zip(&known.0) {
            assert_eq!(counts.len(), c.turns.len());
            for (i, count) in counts.iter().enumerate() {
                match texts(c, i) {
                    [only] => assert_eq!(*count, Some(tok.count(only) as u32)),
                    _ => assert_eq!(*count, None, "several texts are counted joined"),
                }
            }
        }
        for kind in [EndpointKind::Chat, EndpointKind::Completions] {
            for params in [&chat, &server] {
                let counted = prepare(ds.clone(), kind, params, &tok);
                let carried = prepare_known(ds.clone(), known.clone(), kind, params, &tok);
                assert_eq!(isls(&carried), isls(&counted), "{kind:?} {p:?}");
            }
        }
    }
    // The plain shape's first turns are sent alone: ISL 550 ± 40 counted, none missing.
    let (ds, known) = synthetic::build_counted(&plain, &tok);
    let carried = prepare_known(ds, known, EndpointKind::Chat, &chat, &tok);
    assert!(
        isls(&carried)
            .iter()
            .all(|n| n.is_some_and(|n| (390..=710).contains(&n)))
    );
}

/// A known count is taken for a turn whose ISL text is its one text, and ignored where the
/// ISL text is more (a system message before it): a wrong count shows which was used.
#[test]
fn a_known_count_stands_only_for_the_whole_isl_text() {
    let tok = Tokenizer::builtin();
    let params = PayloadParams {
        model: "m".into(),
        ..Default::default()
    };
    let mut p = small(2, Some(3));
    p.isl_mean = 40;
    let (ds, known) = synthetic::build_counted(&p, &tok);
    assert_eq!(known.0, vec![vec![Some(40)], vec![Some(40)]]);
    let wrong = KnownCounts(vec![vec![Some(7)], vec![None]]);
    let prepared = prepare_known(ds.clone(), wrong.clone(), EndpointKind::Chat, &params, &tok);
    assert_eq!(
        isls(&prepared),
        vec![Some(7), Some(40)],
        "taken, then counted"
    );

    let text = texts(&ds.conversations[0], 0)[0].clone();
    let mut with_system = ds;
    with_system.conversations[0].system = Some("Be brief.".into());
    let prepared = prepare_known(with_system, wrong, EndpointKind::Chat, &params, &tok);
    assert_eq!(
        prepared.conversations[0].turns[0].isl_tokens,
        Some(tok.count(&format!("Be brief. {text}")) as u64),
        "the system message is counted with the text: the known count is not taken"
    );
}
