//! `--random-range-ratio` and `--random-corpus-style` against AIPerf 0.13's own draws
//! (tests/data/aiperf-range-ratio) and end to end against the mock's record of what it received.

use crate::common;

use ringperf_workload::workload::Tokenizer;
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

/// The mock's records grouped by correlation id (one per session), in arrival order.
fn sessions(
    truth: &[ringperf_mock::mock::TruthEntry],
) -> Vec<Vec<&ringperf_mock::mock::TruthEntry>> {
    let mut by: std::collections::BTreeMap<String, Vec<&ringperf_mock::mock::TruthEntry>> =
        Default::default();
    for e in truth {
        by.entry(e.correlation_id.clone().expect("a correlation id"))
            .or_default()
            .push(e);
    }
    let mut out: Vec<_> = by.into_values().collect();
    for s in &mut out {
        s.sort_by_key(|e| e.arrival_ns);
    }
    out
}

fn messages(e: &ringperf_mock::mock::TruthEntry) -> Vec<Value> {
    let body: Value = serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap();
    body["messages"].as_array().expect("chat messages").clone()
}

fn text(m: &Value) -> &str {
    m["content"].as_str().expect("a text message")
}

/// `--cache-bust first_turn_prefix`, warmup then profiling, sessions of two turns (the warmup
/// one at a time, so its 4 requests are 2 whole sessions whatever the load): the mock saw
/// each session's first user text start with one `[rid:D]` marker and a blank line, on both of
/// its turns (the second in its history) and nowhere else; every session's marker is its own;
/// each `D` is SHA-256 (Python's hashlib, an independent implementation) over
/// `benchmark_id:n:n:conversation`, the ordinals `n` of the 6 sessions being 0..6, warmup
/// first; each record's ISL is the mock's own count of the prompt it received, marker included.
#[test]
fn cache_bust_markers_reach_the_server_as_aiperfs() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --conversation-num 4 \
         --conversation-turn-mean 2 --warmup-request-count 4 --warmup-concurrency 1 --isl 24 --osl 4 \
         --cache-bust first_turn_prefix --random-seed 3 --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (8, 0));
    let truth = server.truth().entries();
    let groups = sessions(&truth);
    assert_eq!(groups.len(), 6, "2 warmup and 4 profiling sessions");
    let mut markers = Vec::new();
    for g in &groups {
        assert_eq!(g.len(), 2);
        let first = messages(g[0]);
        assert_eq!(first.len(), 1);
        let t = text(&first[0]);
        assert!(t.starts_with("[rid:") && &t[17..20] == "]\n\n", "{t:?}");
        let marker = &t[..20];
        assert_eq!(t.matches("[rid:").count(), 1);
        let second = messages(g[1]);
        assert_eq!(
            text(&second[0]),
            t,
            "the history keeps the marked first turn"
        );
        assert!(
            !text(&second[2]).contains("[rid:"),
            "later turns carry none of their own"
        );
        markers.push((marker.to_string(), g[0].arrival_ns));
    }
    let distinct: std::collections::HashSet<_> = markers.iter().map(|m| &m.0).collect();
    assert_eq!(distinct.len(), 6, "one marker per session");

    // The digests, computed by Python for every ordinal and conversation.
    let export = common::read_json(&dir.path().join("profile_export_aiperf.json"));
    let id = export["benchmark_id"].as_str().unwrap().to_string();
    let script = format!(
        "import hashlib\nfor n in range(6):\n for c in range(4):\n  \
         s=f'{id}:{{n}}:{{n}}:session_{{c:06d}}'\n  \
         print(n, hashlib.sha256(s.encode()).hexdigest()[:12])"
    );
    let py = std::process::Command::new("python3")
        .args(["-c", &script])
        .output();
    let Some(py) = py.ok().filter(|o| o.status.success()) else {
        assert!(std::env::var("CI").is_err(), "python3 is needed under CI");
        eprintln!("skipped the digest check: python3 is not here");
        return;
    };
    let digests: Vec<(u64, String)> = String::from_utf8_lossy(&py.stdout)
        .lines()
        .map(|l| {
            let (n, d) = l.split_once(' ').unwrap();
            (n.parse().unwrap(), d.to_string())
        })
        .collect();
    let mut ordinals: Vec<u64> = markers
        .iter()
        .map(|(m, _)| {
            let hex = &m[5..17];
            digests
                .iter()
                .find(|(_, d)| d == hex)
                .expect("an AIPerf digest")
                .0
        })
        .collect();
    // Warmup's two sessions (the first to arrive) took ordinals 0 and 1.
    let mut by_arrival: Vec<_> = markers.iter().zip(&ordinals).collect();
    by_arrival.sort_by_key(|((_, at), _)| *at);
    assert!(
        by_arrival[..2].iter().all(|(_, n)| **n < 2),
        "{by_arrival:?}"
    );
    ordinals.sort_unstable();
    assert_eq!(ordinals, [0, 1, 2, 3, 4, 5]);

    // ISL: the body received, counted by the mock.
    let by_id: std::collections::HashMap<String, &ringperf_mock::mock::TruthEntry> = truth
        .iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 12, "warmup's records too, as AIPerf's");
    for r in &records {
        let t = by_id[r["metadata"]["x_request_id"].as_str().unwrap()];
        let isl = r["metrics"]["input_sequence_length"]["value"].as_u64();
        assert_eq!(isl, Some(t.prompt_tokens), "ISL counts the marker");
    }
}

/// `--cache-bust warmup_isolation_first_turn`: `[warmup]` and a blank line open the user text of
/// the warmup's requests (the first to arrive) and no profiling request's.
#[test]
fn warmup_isolation_marks_warmup_requests_only() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 1 --request-count 4 \
         --warmup-request-count 3 --isl 16 --osl 4 --cache-bust warmup_isolation_first_turn \
         --random-seed 3 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (4, 0));
    let mut truth = server.truth().entries();
    truth.sort_by_key(|e| e.arrival_ns);
    assert_eq!(truth.len(), 7);
    for (i, e) in truth.iter().enumerate() {
        let m = messages(e);
        let marked = text(&m[0]).starts_with("[warmup]\n\n");
        assert_eq!(marked, i < 3, "request {i}: {:?}", text(&m[0]));
        assert_eq!(text(&m[0]).matches("[warmup]").count(), usize::from(i < 3));
    }
}

/// The body of a recorded request.
fn body_of(e: &ringperf_mock::mock::TruthEntry) -> Value {
    serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap()
}

/// A `[rid:D]` marker: 5 + 12 hex digits + `]`.
fn is_rid(s: &str) -> bool {
    s.len() == 18
        && s.starts_with("[rid:")
        && s.ends_with(']')
        && s[5..17].bytes().all(|b| b.is_ascii_hexdigit())
}

/// `--cache-bust` on Responses and Anthropic Messages, where AIPerf puts it: the first turn's
/// `input_text`… here a plain `content` string of the user item (Responses), the top-level
/// `system` text (Messages, with a shared system prompt); one marker per session; the ISL of
/// each record is the mock's own count of what it received, marker included.
#[test]
fn cache_bust_on_responses_and_messages() {
    for (endpoint, target, extra) in [
        ("responses", "first_turn_prefix", ""),
        (
            "messages",
            "system_suffix",
            "--shared-system-prompt-length 12",
        ),
    ] {
        let server = common::recording_mock(2);
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::config(&format!(
            "ringperf profile -m mock-model -u {} --endpoint-type {endpoint} --concurrency 2 \
             --request-count 4 --isl 24 --osl 4 --cache-bust {target} {extra} --random-seed 3 \
             --ui none --no-server-metrics --artifact-dir {}",
            server.addr,
            dir.path().display()
        ));
        let out = ringperf::run::run(cfg).unwrap();
        assert_eq!((out.successes, out.errors), (4, 0), "{endpoint}");
        let truth = server.truth().entries();
        let mut markers = std::collections::HashSet::new();
        for e in &truth {
            let b = body_of(e);
            let marker = if endpoint == "responses" {
                let t = b["input"][0]["content"].as_str().expect("a user text");
                assert_eq!(&t[18..20], "\n\n", "{t:?}");
                t[..18].to_string()
            } else {
                let t = b["system"].as_str().expect("a system text");
                assert_eq!(&t[t.len() - 20..t.len() - 18], "\n\n", "{t:?}");
                assert!(!b["messages"][0]["content"].to_string().contains("[rid:"));
                t[t.len() - 18..].to_string()
            };
            assert!(is_rid(&marker), "{endpoint}: {marker:?}");
            markers.insert(marker);
        }
        assert_eq!(markers.len(), 4, "{endpoint}: one marker per session");
        let by_id: std::collections::HashMap<String, &ringperf_mock::mock::TruthEntry> = truth
            .iter()
            .map(|e| (e.request_id.unwrap().to_string(), e))
            .collect();
        for r in common::read_jsonl(&dir.path().join("profile_export.jsonl")) {
            let t = by_id[r["metadata"]["x_request_id"].as_str().unwrap()];
            let isl = r["metrics"]["input_sequence_length"]["value"].as_u64();
            assert_eq!(
                isl,
                Some(t.prompt_tokens),
                "{endpoint}: ISL counts the marker"
            );
        }
    }
}

/// `--cache-bust` with a dataset file: a `single_turn` file's prompts get their marker as sent
/// (a suffix here), the file's text kept whole before it; a trace record's own message list
/// written `content` first cannot take it, and the run stops before sending, naming it.
#[test]
fn cache_bust_with_dataset_files() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"the first prompt\"}\n{\"text\": \"the second\"}\n",
    )
    .unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type single_turn \
         --request-count 2 --concurrency 1 --cache-bust first_turn_suffix --ui none \
         --no-server-metrics --artifact-dir {}",
        server.addr,
        file.display(),
        dir.path().join("run").display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (2, 0));
    let mut texts: Vec<String> = server
        .truth()
        .entries()
        .iter()
        .map(|e| text(&messages(e)[0]).to_string())
        .collect();
    texts.sort();
    for (t, prompt) in texts.iter().zip(["the first prompt", "the second"]) {
        assert!(t.starts_with(&format!("{prompt}\n\n[rid:")), "{t:?}");
        assert!(is_rid(&t[prompt.len() + 2..]), "{t:?}");
    }

    let trace = dir.path().join("trace.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"messages\": [{\"content\": \"hi\", \"role\": \"user\"}], \"output_length\": 2}\n",
    )
    .unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --input-file {} --custom-dataset-type \
         mooncake_trace --request-count 1 --cache-bust first_turn_prefix --ui none \
         --no-server-metrics --artifact-dir {}",
        server.addr,
        trace.display(),
        dir.path().join("run2").display()
    ));
    let before = server.truth().entries().len();
    let err = ringperf::run::run(cfg).unwrap_err().to_string();
    assert!(
        err.contains("has no user text where the marker goes"),
        "{err}"
    );
    assert_eq!(server.truth().entries().len(), before, "nothing sent");
}

/// `--prompt-corpus random` (vLLM's random dataset, as AIPerf 0.13 makes it): every prompt the
/// mock received is the ISL exactly by its own count (AIPerf's run of the same command line:
/// 64, 64, 64 for min, average and max), the texts differ from each other, and none of the
/// sonnet corpus's words carry them; under `vllm` no special token is drawn, under `sglang` the
/// pool holds them too (o200k's two).
#[test]
fn a_random_vocabulary_corpus_sends_prompts_of_the_exact_length() {
    for style in ["vllm", "sglang"] {
        let aiperf = common::read_json(std::path::Path::new(&format!(
            "tests/data/aiperf-input-config/random_corpus_{style}.json"
        )));
        assert_eq!(
            aiperf["input_config"]["datasets"][0]["prompts"]["corpus"],
            "random"
        );
        let server = common::recording_mock(2);
        let dir = tempfile::tempdir().unwrap();
        let cfg = common::config(&format!(
            "ringperf profile -m mock-model -u {} --concurrency 2 --request-count 16 --isl 64 \
             --osl 4 --prompt-corpus random --random-corpus-style {style} --random-seed 9 \
             --ui none --no-server-metrics --artifact-dir {}",
            server.addr,
            dir.path().display()
        ));
        let out = ringperf::run::run(cfg).unwrap();
        assert_eq!((out.successes, out.errors), (16, 0), "{style}");
        let truth = server.truth().entries();
        let mut texts = std::collections::HashSet::new();
        for e in &truth {
            assert_eq!(e.prompt_tokens, 64, "{style}");
            let m = messages(e);
            texts.insert(text(&m[0]).to_owned());
        }
        // 16 requests over the dataset's conversations: as many distinct texts as it has.
        assert!(texts.len() > 8, "{style}: {}", texts.len());
        let sonnet = ringperf_workload::workload::prompt::SHAKESPEARE;
        for t in &texts {
            assert!(
                !sonnet.contains(t.as_str()),
                "{style}: a sonnet window: {t}"
            );
        }
    }
}
