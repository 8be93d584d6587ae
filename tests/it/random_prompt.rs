//! `--random-range-ratio` and `--random-corpus-style` against AIPerf 0.13's own draws
//! (tests/data/aiperf-range-ratio) and end to end against the mock's record of what it received.

use crate::common;

use ringperf::workload::Tokenizer;
use serde_json::Value;

/// `(ISL, OSL)` of every request AIPerf wrote in its `inputs.json`: the user text counted with
/// the builtin tokenizer (AIPerf's `builtin`, o200k_base) and `max_completion_tokens`.
fn aiperf_draws(style: &str) -> Vec<(u32, u32)> {
    let path = format!("tests/data/aiperf-range-ratio/{style}_inputs.json");
    let doc = common::read_json(std::path::Path::new(&path));
    let tok = Tokenizer::builtin();
    let mut out = Vec::new();
    for c in doc["data"].as_array().expect("data") {
        for p in c["payloads"].as_array().expect("payloads") {
            let text = p["messages"][0]["content"].as_str().expect("one user text");
            let osl = p["max_completion_tokens"].as_u64().expect("max tokens") as u32;
            out.push((tok.count(text) as u32, osl));
        }
    }
    out
}

/// ringperf's windows for AIPerf's command line (`--isl 100 --osl 40 --random-range-ratio 0.5`)
/// are the hand-computed ones, every length AIPerf drew is inside them, and AIPerf's draws
/// reached the ISL window's ends (60 draws over 101 or 51 values).
#[test]
fn windows_hold_aiperfs_own_draws() {
    for (style, isl_window, osl_window) in [
        ("vllm", (50, 150), (20, 60)),
        ("sglang", (50, 100), (20, 40)),
    ] {
        let cfg = common::config(&format!(
            "ringperf profile -m mock-model -u 127.0.0.1:1 --isl 100 --osl 40 \
             --random-range-ratio 0.5 --random-corpus-style {style}"
        ));
        let r = cfg.random_prompt.range_ratio.expect("a ratio");
        assert_eq!(r.input_bounds(100), isl_window, "{style}");
        assert_eq!(r.output_bounds(40), osl_window, "{style}");
        let draws = aiperf_draws(style);
        assert_eq!(draws.len(), 60);
        for &(isl, osl) in &draws {
            assert!(
                (isl_window.0..=isl_window.1).contains(&isl),
                "{style} ISL {isl}"
            );
            assert!(
                (osl_window.0..=osl_window.1).contains(&osl),
                "{style} OSL {osl}"
            );
        }
        let min = draws.iter().map(|d| d.0).min();
        let max = draws.iter().map(|d| d.0).max();
        assert_eq!(
            (min, max),
            (Some(isl_window.0), Some(isl_window.1)),
            "{style}"
        );
    }
}

/// A run: every prompt the mock received is inside the ISL window by its own count, every
/// `max_completion_tokens` inside the OSL window (sglang r = 0.5 around 24 and 10: [12, 24] and
/// [5, 10]).
#[test]
fn run_sends_lengths_inside_the_windows() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --request-count 24 --isl 24 \
         --osl 10 --random-range-ratio 0.5 --random-corpus-style sglang --random-seed 4 \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (24, 0));
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 24);
    let mut isls = std::collections::HashSet::new();
    for e in &truth {
        assert!(
            (12..=24).contains(&e.prompt_tokens),
            "ISL {}",
            e.prompt_tokens
        );
        let body: Value = serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap();
        let osl = body["max_completion_tokens"]
            .as_u64()
            .expect("max tokens sent");
        assert!((5..=10).contains(&osl), "OSL {osl}");
        isls.insert(e.prompt_tokens);
    }
    assert!(isls.len() > 3, "the lengths vary: {isls:?}");
}
