//! AIPerf 0.13 YAML config files: `profile --config/-f`, `ringperf config validate|expand|init`.
//!
//! tests/data/aiperf-yaml/ holds files AIPerf 0.13 itself ran against the mock, each with the
//! `input_config` it wrote (README there). Two properties are checked against them:
//!
//! - a file and the flags a user would type for the same run (written out by hand below) give
//!   ringperf identical `input_config`;
//! - ringperf's `input_config` for the file equals AIPerf's on every key both write, apart from
//!   the differences docs/config-files.md lists (checked here as exactly those).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command as Process;

use ringperf::config::Config;
use ringperf::invocation;
use ringperf::plan::Plan;
use serde_json::Value;

use crate::common;

const DIR: &str = "tests/data/aiperf-yaml";

fn no_env(_: &str) -> Option<String> {
    None
}

fn input_config(plan: &Plan) -> Value {
    Config::from_plan(plan, false)
        .unwrap_or_else(|e| panic!("{:?}: {e}", plan.command))
        .input_config()
}

/// The plan of a `profile -f FILE …` command line, the file read into it.
fn file_plan(argv: &[String]) -> Plan {
    let read = invocation::read(argv, &no_env).unwrap_or_else(|e| panic!("{argv:?}: {e:?}"));
    match read.plan(argv) {
        Some((plan, _lists)) => plan,
        None => panic!("{argv:?}: not a profile command line"),
    }
}

fn from_file(name: &str, extra: &[&str]) -> Value {
    let mut argv = vec![
        "ringperf".to_string(),
        "profile".into(),
        "-f".into(),
        format!("{DIR}/{name}.yaml"),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    input_config(&file_plan(&argv))
}

fn from_flags(line: &str) -> Value {
    let argv: Vec<String> = shell_split(line);
    input_config(&Plan::parse(&argv).expect("parses"))
}

/// Whitespace-split, with '…' quoting (enough for the lines below).
fn shell_split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in line.split('\'').enumerate() {
        if i % 2 == 1 {
            out.push(part.to_string());
        } else {
            out.extend(part.split_whitespace().map(str::to_string));
        }
    }
    out
}

/// Each fixture file and the command line that asks for the same run.
const EQUIVALENT: &[(&str, &str)] = &[
    (
        "concurrency",
        "ringperf profile --model mock-model --url http://127.0.0.1:8000 --endpoint-type chat \
         --streaming --num-dataset-entries 20 --synthetic-input-tokens-mean 32 \
         --output-tokens-mean 8 --tokenizer builtin --concurrency 2 --request-count 10 \
         --artifact-dir artifacts/concurrency --random-seed 7",
    ),
    (
        "warmup-poisson",
        "ringperf profile --model mock-model --url http://127.0.0.1:8000 \
         --endpoint-type completions --streaming --request-timeout-seconds 30 \
         --num-dataset-entries 16 --isl 40 --isl-stddev 4 --osl 6 --osl-stddev 0 \
         --tokenizer builtin --warmup-concurrency 2 --warmup-request-count 4 \
         --warmup-arrival-pattern poisson --warmup-request-rate 20 \
         --arrival-pattern poisson --request-rate 40 --concurrency 4 --request-count 12 \
         --artifact-dir artifacts/warmup-poisson --random-seed 11",
    ),
    (
        "variables-slos",
        "ringperf profile --model mock-model --url http://127.0.0.1:8000 --endpoint-type chat \
         --streaming --num-dataset-entries 20 --isl 48 --isl-stddev 6 --osl 8 \
         --tokenizer builtin --arrival-pattern constant --request-rate 50 --concurrency 4 \
         --request-count 12 --goodput 'time_to_first_token:500 request_latency:2000' \
         --artifact-dir artifacts/variables-slos --random-seed 3",
    ),
    (
        "trace-synthesis",
        "ringperf profile --model mock-model --url http://127.0.0.1:8000 --endpoint-type chat \
         --streaming --input-file tests/data/mooncake-conversation/first-300.jsonl \
         --custom-dataset-type mooncake_trace --synthesis-speedup-ratio 4 \
         --synthesis-output-len-multiplier 0.1 --synthesis-max-isl 10000 \
         --synthesis-max-osl 20 --tokenizer builtin --fixed-schedule \
         --fixed-schedule-end-offset 3000 --artifact-dir artifacts/trace-synthesis \
         --random-seed 5",
    ),
];

#[test]
fn a_file_and_the_equivalent_flags_give_identical_input_config() {
    for (name, line) in EQUIVALENT {
        // But the dataset's name: the file's (`default` for the `dataset:` shorthand), as
        // AIPerf echoes a file's; the flags' is `main`. And what AIPerf's command line writes
        // of its own defaults, which a file's echo leaves out (the plots, the telemetry and
        // server-metrics blocks, the seed in the dataset, a derived request count).
        // A file's fixed lengths are `{value: N}` where flags write `{mean: N}`.
        let mut file = as_means(from_file(name, &[]));
        assert_eq!(file["datasets"][0]["name"], "default", "{name}");
        file["datasets"][0]["name"] = "main".into();
        assert_eq!(
            file,
            without_cli_defaults(from_flags(line), &file),
            "{name}"
        );
    }
}

/// `input_config` with every fixed length (`{value: N}`, a file's) written as the flags write
/// it (`{mean: N}`).
fn as_means(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| {
                    let k = if k == "value" { "mean".to_string() } else { k };
                    (k, as_means(x))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(as_means).collect()),
        other => other,
    }
}

/// The flags' `input_config` without what AIPerf's command line writes of its own defaults and
/// a config file's echo leaves out: the plots, the telemetry, server-metrics and tracking blocks,
/// the seed in the dataset, a request count `file` does not have.
fn without_cli_defaults(mut flags: Value, file: &Value) -> Value {
    let f = flags.as_object_mut().unwrap();
    for k in ["gpu_telemetry", "server_metrics", "otel", "mlflow", "wandb"] {
        f.remove(k);
    }
    for k in ["auto_plot", "plot_required"] {
        f["artifacts"].as_object_mut().unwrap().remove(k);
    }
    f["datasets"][0]
        .as_object_mut()
        .unwrap()
        .remove("random_seed");
    if file["phases"][0].get("requests").is_none() {
        f["phases"][0].as_object_mut().unwrap().remove("requests");
    }
    flags
}

#[test]
fn flags_given_beside_the_file_override_its_values() {
    let ic = from_file("concurrency", &["--concurrency", "5", "-m", "other-model"]);
    assert_eq!(ic["phases"][0]["concurrency"], 5);
    assert_eq!(ic["models"]["items"][0]["name"], "other-model");
    assert_eq!(
        ic["phases"][0]["requests"], 10,
        "the file's other values stay"
    );
}

/// The documented differences (docs/config-files.md, "input_config"): AIPerf names the
/// `dataset:` shorthand's dataset `default` where its flags (and ringperf) say `main`, and
/// writes a fixed length as `{value: N}` where flags write `{mean: N}`.
fn documented(path: &str, aiperf: &Value, ringperf: &Value) -> bool {
    path.ends_with(".value") && aiperf == ringperf
}

#[test]
fn input_config_matches_what_aiperf_wrote_for_the_same_files() {
    for (name, _) in EQUIVALENT {
        let text = std::fs::read_to_string(format!("{DIR}/{name}.input_config.json")).unwrap();
        let aiperf: Value = serde_json::from_str(&text).unwrap();
        let ringperf = from_file(name, &[]);
        let mut a = Vec::new();
        common::leaves("", &aiperf, &mut a);
        let mut r = Vec::new();
        common::leaves("", &ringperf, &mut r);
        // Nothing AIPerf left out.
        for (path, rv) in &r {
            assert!(
                a.iter().any(|(p, _)| *p == *path),
                "{name}{path}: ringperf wrote {rv}, AIPerf nothing"
            );
        }
        let mut shared = 0;
        for (path, av) in &a {
            if path == ".endpoint.urls[0]" || path == ".artifacts.dir" {
                continue; // the run's own address and directory
            }
            match r.iter().find(|(p, _)| *p == *path) {
                Some((_, rv)) if rv == av => shared += 1,
                Some((_, rv)) => panic!("{name}{path}: AIPerf {av} != ringperf {rv}"),
                None => panic!("{name}{path}: {av} not written by ringperf"),
            }
        }
        assert!(shared >= 12, "{name}: {shared} shared keys");
    }
}

/// A length's `min` and `max`: echoed first, as AIPerf wrote them, and applied to nothing, as
/// AIPerf applied them (its run: prompts of 2 to 107 tokens for `isl` bounded to [60, 70],
/// `max_completion_tokens` 16 for `osl` bounded by 8).
#[test]
fn a_lengths_bounds_are_echoed_and_not_applied_as_aiperf_did() {
    let echoed = std::fs::read_to_string(format!("{DIR}/length-bounds.input_config.json")).unwrap();
    let aiperf: Value = serde_json::from_str(&echoed).unwrap();
    let ours = from_file("length-bounds", &[]);
    assert_eq!(
        serde_json::to_string(&ours["datasets"]).unwrap(),
        serde_json::to_string(&aiperf["datasets"]).unwrap()
    );
    let dir = run_fixture("length-bounds");
    let inputs = common::read_json(&dir.path().join("inputs.json"));
    let payloads: Vec<&Value> = (inputs["data"].as_array().unwrap().iter())
        .flat_map(|s| s["payloads"].as_array().unwrap())
        .collect();
    assert_eq!(payloads.len(), 30);
    assert!(payloads.iter().all(|p| p["max_completion_tokens"] == 16));
    let isl: Vec<f64> = (common::read_jsonl(&dir.path().join("profile_export.jsonl")).iter())
        .map(|r| {
            r["metrics"]["input_sequence_length"]["value"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(isl.iter().any(|&n| !(60.0..=70.0).contains(&n)), "{isl:?}");
    // Bounds AIPerf refuses, with its messages.
    let bad = dir.path().join("bad.yaml");
    let file = std::fs::read_to_string(format!("{DIR}/length-bounds.yaml")).unwrap();
    std::fs::write(&bad, file.replace("min: 60, max: 70", "min: 70, max: 60")).unwrap();
    let said = ringperf(&["config", "validate", bad.to_str().unwrap()]);
    assert_eq!(said.status.code(), Some(1));
    assert!(
        text(&said.stderr).contains("Distribution bounds invalid: min=70.0 > max=60.0"),
        "{}",
        text(&said.stderr)
    );
}

/// A conversation's turns and turn delay drawn from a log-normal and a multimodal distribution
/// with bounds: echoed as AIPerf wrote them, every draw the expected value (3 turns, 200 ms),
/// the bounds unused, as AIPerf ran the same file.
#[test]
fn turns_and_turn_delays_of_any_distribution_run_as_aiperf_ran_them() {
    let echoed = std::fs::read_to_string(format!("{DIR}/drawn-turns.input_config.json")).unwrap();
    let aiperf: Value = serde_json::from_str(&echoed).unwrap();
    let ours = from_file("drawn-turns", &[]);
    assert_eq!(
        serde_json::to_string(&ours["datasets"]).unwrap(),
        serde_json::to_string(&aiperf["datasets"]).unwrap()
    );
    let dir = run_fixture("drawn-turns");
    let mut sessions: std::collections::HashMap<String, Vec<(u64, u64, u64)>> =
        std::collections::HashMap::new();
    for r in common::read_jsonl(&dir.path().join("profile_export.jsonl")) {
        let m = &r["metadata"];
        let n = |k: &str| m[k].as_u64().unwrap();
        (sessions.entry(m["x_correlation_id"].as_str().unwrap().to_owned()))
            .or_default()
            .push((n("turn_index"), n("credit_issued_ns"), n("request_end_ns")));
    }
    // 12 requests over two slots: sessions of 3 turns, one cut short when the requests ran
    // out while a slot's next session had begun.
    let whole = (sessions.values()).filter(|t| t.len() == 3).count();
    assert!(whole >= 3, "{sessions:?}");
    for turns in sessions.values_mut() {
        turns.sort_unstable();
        let index: Vec<u64> = turns.iter().map(|t| t.0).collect();
        assert_eq!(index, (0..turns.len() as u64).collect::<Vec<_>>());
        assert!(turns.len() <= 3);
        for w in turns.windows(2) {
            let delay_ms = (w[1].1 as f64 - w[0].2 as f64) / 1e6;
            assert!((delay_ms - 200.0).abs() < 2.0, "{delay_ms} ms");
        }
    }
}

/// A `mooncake_trace` given as inline records and replayed on a fixed schedule: echoed as AIPerf
/// wrote it, and every row sent as AIPerf sent it (its session, its time, its input and output
/// lengths; AIPerf's times were 0, 98.4 and 248.4 ms, issued a little early).
#[test]
fn an_inline_mooncake_trace_replays_as_aiperf_replayed_it() {
    let echoed =
        std::fs::read_to_string(format!("{DIR}/inline-mooncake.input_config.json")).unwrap();
    let aiperf: Value = serde_json::from_str(&echoed).unwrap();
    let ours = from_file("inline-mooncake", &[]);
    for key in ["datasets", "phases"] {
        assert_eq!(ours[key], aiperf[key], "{key}");
    }
    let dir = run_fixture("inline-mooncake");
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    let t0 = records[0]["metadata"]["credit_issued_ns"].as_u64().unwrap();
    let rows: Vec<(String, u64, f64, f64)> = (records.iter())
        .map(|r| {
            let m = &r["metadata"];
            (
                m["conversation_id"].as_str().unwrap().to_owned(),
                (m["credit_issued_ns"].as_u64().unwrap() - t0) / 1_000_000,
                r["metrics"]["input_sequence_length"]["value"]
                    .as_f64()
                    .unwrap(),
                r["metrics"]["output_sequence_length"]["value"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .collect();
    let want = [
        ("session_000000", 0, 600.0, 5.0),
        ("session_000001", 100, 700.0, 6.0),
        ("session_000002", 250, 20.0, 4.0),
    ];
    assert_eq!(rows.len(), want.len());
    for (got, w) in rows.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1, got.2, got.3), w);
    }
    assert!(
        !dir.path().join("inputs.json").exists(),
        "AIPerf wrote none"
    );
}

/// `ringperf profile -f` of the fixture `name` against the in-process mock, its artifacts in the
/// returned directory.
/// `random_pool` records given inline as a dict of two pools (`zeta`, then `alpha`: not sorted)
/// and a `bailian_trace` given inline: `input_config` as AIPerf 0.13 wrote it for the same files
/// (`inline-pools`, `inline-bailian`), and the runs send what AIPerf's sent — each pooled
/// conversation one text of `zeta` then one of `alpha` (the dict's order; which ones is the
/// seeded draw's), four of them; the Bailian sessions at AIPerf's times with its lengths.
#[test]
fn inline_pools_and_bailian_records_run_as_aiperf_ran_them() {
    for name in ["inline-pools", "inline-bailian"] {
        let aiperf = aiperf_echo(name);
        let ours = from_file(name, &[]);
        for key in ["datasets", "phases"] {
            assert_eq!(ours[key], aiperf[key], "{name}: {key}");
        }
    }
    let dir = run_fixture("inline-pools");
    let inputs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    let sessions = inputs["data"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    for s in sessions {
        let parts = &s["payloads"][0]["messages"][0]["content"];
        let texts: Vec<&str> = (parts.as_array().unwrap().iter())
            .map(|p| p["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts.len(), 2, "{s}");
        assert!(texts[0].starts_with("zeta "), "{texts:?}");
        assert!(texts[1].starts_with("alpha "), "{texts:?}");
    }
    let dir = run_fixture("inline-bailian");
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    let mut rows: Vec<(String, u64, u64, f64, f64)> = (records.iter())
        .map(|r| {
            let m = &r["metadata"];
            (
                m["conversation_id"].as_str().unwrap().to_owned(),
                m["turn_index"].as_u64().unwrap(),
                m["credit_issued_ns"].as_u64().unwrap(),
                r["metrics"]["input_sequence_length"]["value"]
                    .as_f64()
                    .unwrap(),
                r["metrics"]["output_sequence_length"]["value"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.2);
    let t0 = rows[0].2;
    let got: Vec<(&str, u64, u64, f64, f64)> = (rows.iter())
        .map(|r| {
            (
                r.0.as_str(),
                r.1,
                (r.2 - t0 + 10_000_000) / 100_000_000,
                r.3,
                r.4,
            )
        })
        .collect();
    // AIPerf's: session 1 at 0 ms and 300 ms, session 2 at 99 ms (to the nearest 100 ms here).
    assert_eq!(
        got,
        [
            ("1", 0, 0, 40.0, 3.0),
            ("2", 0, 1, 20.0, 5.0),
            ("1", 1, 3, 105.0, 4.0)
        ]
    );
}

/// Distributions AIPerf reads by their expected value where it never draws: an image's sides
/// (a log-normal width with an explicit `type:`, a multimodal height with bounds inside a peak
/// and on the whole) and `sequence_distribution` entries (a log-normal ISL, a fractional OSL, a
/// bounded one). `input_config` as AIPerf 0.13 wrote it for the same files (`drawn-media`,
/// `seq-dist-drawn`); every image AIPerf sent was 64 × 50 (`int` of each expected value), and
/// its pairs were (40, 5) and (20, 3) (truncated, not rounded): the same here, the image sides
/// read from the PNG header of each one sent.
#[test]
fn media_sides_and_sequence_pairs_run_at_aiperfs_expected_values() {
    for name in ["drawn-media", "seq-dist-drawn"] {
        let aiperf = aiperf_echo(name);
        assert_eq!(
            from_file(name, &[])["datasets"],
            aiperf["datasets"],
            "{name}"
        );
    }
    let dir = run_fixture("drawn-media");
    let inputs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    let mut sides = Vec::new();
    for s in inputs["data"].as_array().unwrap() {
        for part in s["payloads"][0]["messages"][0]["content"]
            .as_array()
            .unwrap()
        {
            let Some(url) = part["image_url"]["url"].as_str() else {
                continue;
            };
            let b64 = url.split_once(',').unwrap().1;
            let png =
                ringperf_workload::workload::media::base64_decode(b64.as_bytes()).expect("base64");
            let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
            sides.push((be(16), be(20)));
        }
    }
    assert_eq!(sides, [(64, 50); 3]);
    let dir = run_fixture("seq-dist-drawn");
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 20);
    for r in &records {
        let len = |k: &str| r["metrics"][k]["value"].as_f64().unwrap();
        let pair = (len("input_sequence_length"), len("output_sequence_length"));
        assert!(pair == (40.0, 5.0) || pair == (20.0, 3.0), "{pair:?}");
    }
}

/// Keys AIPerf 0.13 reads and echoes and runs nothing with here — a model's `weight`, `lora`,
/// `modalities` and `tokenizer`, `tokenizer.resolved_names` (the first model's entry is the
/// tokenizer), `server_metrics` by `url` with `discovery`, `gpu_telemetry` as a bare URL,
/// `metrics: {}`, `accuracy: null` — are accepted, and `input_config` is AIPerf's for the same
/// file (`read-unused`), key for key and in AIPerf's order; the file runs.
#[test]
fn read_and_unused_keys_are_echoed_as_aiperf_echoed_them() {
    let ours = from_file("read-unused", &[]);
    let text = std::fs::read_to_string(format!("{DIR}/read-unused.input_config.json")).unwrap();
    // The run's own address and directory.
    let dir = ours["artifacts"]["dir"].as_str().unwrap();
    assert!(dir.ends_with("artifacts/read-unused"), "{dir}");
    let text = (text.replace("<mock url>", "http://127.0.0.1:8000")).replace("<artifact dir>", dir);
    let aiperf: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&ours).unwrap(),
        serde_json::to_string_pretty(&aiperf).unwrap()
    );
    run_fixture("read-unused");
}

/// A file dataset's `system_prompt_file`, `cache_bust` and `osl` (each refused or dropped
/// before): `input_config` as AIPerf 0.13 wrote it for the same file (`file-keys`), and every
/// body sent as AIPerf sent it — the file's text as a system message before each record's
/// prompt, 5 tokens asked for (AIPerf's `inputs.json`).
#[test]
fn a_file_datasets_system_prompt_cache_bust_and_osl_run_as_aiperf_ran_them() {
    let aiperf = aiperf_echo("file-keys");
    assert_eq!(from_file("file-keys", &[])["datasets"], aiperf["datasets"]);
    let dir = run_fixture("file-keys");
    let inputs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    let system = std::fs::read_to_string(format!("{DIR}/file-keys.system.txt")).unwrap();
    let sent: Vec<Value> = (inputs["data"].as_array().unwrap().iter())
        .map(|s| s["payloads"][0].clone())
        .collect();
    assert_eq!(sent.len(), 2);
    for (p, text) in sent.iter().zip(["hello one", "hello two"]) {
        assert_eq!(
            p["messages"],
            serde_json::json!([
                {"role": "system", "content": system},
                {"role": "user", "content": text}
            ])
        );
        assert_eq!(p["max_completion_tokens"], 5);
    }
}

/// An explicit `timing_mode` that changes nothing — any on a warmup (AIPerf paces every warmup
/// by its rate loop), the one a phase's type gives elsewhere — runs as the phase runs without
/// it and is echoed where AIPerf echoes it (`timing-modes`: its phases, key for key and in
/// order, and its 2 + 6 + 4 requests).
#[test]
fn timing_modes_that_change_nothing_run_and_echo_as_aiperfs() {
    assert_same_phases("timing-modes");
    let dir = run_fixture("timing-modes");
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    let count = |phase: &str| {
        (records.iter())
            .filter(|r| r["metadata"]["phase_name"] == phase)
            .count()
    };
    assert_eq!(
        (count("warmup"), count("profiling"), count("second")),
        (2, 6, 4)
    );
}

/// A warmup's `cancellation` and `failed_request_threshold`: echoed as AIPerf 0.13 echoed them
/// (`warmup-cancel`, key for key and in order) and applied to nothing, as AIPerf applied them —
/// its run cancelled none of the warmup's 10 requests though each outlived the 10 ms delay.
#[test]
fn a_warmups_cancellation_and_error_budget_are_echoed_and_unused_as_in_aiperf() {
    assert_same_phases("warmup-cancel");
    let dir = run_fixture_with(
        "warmup-cancel",
        ringperf_mock::mock::MockConfig {
            ttft: std::time::Duration::from_millis(50),
            ..ringperf_mock::mock::MockConfig::default()
        },
    );
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    let warmup: Vec<&Value> = (records.iter())
        .filter(|r| r["metadata"]["phase_name"] == "warmup")
        .collect();
    assert_eq!(warmup.len(), 10);
    assert!(
        warmup
            .iter()
            .all(|r| r["metadata"]["was_cancelled"] == false)
    );
}

/// An `endpoint.template` block (refused before): the body is rendered per request and the
/// answer read at `response_field`, as AIPerf's flags' `payload_template` / `response_field`
/// are; echoed as AIPerf echoed it (`endpoint-template`: its `endpoint`, key for key and in
/// order); every answer read (3 tokens each, AIPerf's OSL).
#[test]
fn an_endpoint_template_block_runs_and_echoes_as_aiperfs() {
    let aiperf = aiperf_echo("endpoint-template");
    let ours = from_file("endpoint-template", &[]);
    let mut want = aiperf["endpoint"].clone();
    want["urls"] = ours["endpoint"]["urls"].clone();
    assert_eq!(
        serde_json::to_string(&ours["endpoint"]).unwrap(),
        serde_json::to_string(&want).unwrap()
    );
    let dir = run_fixture("endpoint-template");
    let inputs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("inputs.json")).unwrap())
            .unwrap();
    for s in inputs["data"].as_array().unwrap() {
        let body = &s["payloads"][0];
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["model", "prompt", "max_tokens"], "{body}");
        assert_eq!(body["max_tokens"], 3);
    }
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["metrics"]["output_sequence_length"]["value"], 3, "{r}");
    }
}

/// ringperf's `input_config.phases` for the fixture `name` is AIPerf's, key for key and in order.
fn assert_same_phases(name: &str) {
    assert_eq!(
        serde_json::to_string(&from_file(name, &[])["phases"]).unwrap(),
        serde_json::to_string(&aiperf_echo(name)["phases"]).unwrap(),
        "{name}"
    );
}

/// The `input_config` AIPerf 0.13 wrote for the fixture `name` (`NAME.input_config.json`).
fn aiperf_echo(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/{name}.input_config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn run_fixture(name: &str) -> tempfile::TempDir {
    run_fixture_with(name, ringperf_mock::mock::MockConfig::default())
}

/// [`run_fixture`] against a mock of `mock`'s settings.
fn run_fixture_with(name: &str, mock: ringperf_mock::mock::MockConfig) -> tempfile::TempDir {
    let server = ringperf_mock::mock::start(mock).expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f", &format!("{DIR}/{name}.yaml")])
        .args(["--ui", "none", "--no-server-metrics"])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    dir
}

fn ringperf(args: &[&str]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(args)
        .env_remove("URL")
        .env_remove("OUT")
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn config_validate_exit_codes_and_messages_are_aiperfs() {
    let dir = tempfile::tempdir().unwrap();
    let ok = ringperf(&["config", "validate", &format!("{DIR}/concurrency.yaml")]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(
        text(&ok.stdout),
        format!("Configuration valid: {DIR}/concurrency.yaml\n")
    );
    let cases = [
        (
            "benchmark:\n  model: m\n  endpoint: {url: u, bogusKey: 3}\n  dataset: {}\n",
            "bogus_key: Extra inputs are not permitted",
        ),
        ("benchmark:\n  model: a\n  model: b\n", "duplicated key"),
        (
            "benchmark:\n  model: ${RINGPERF_TEST_UNSET_VAR}\n",
            "Required environment variable 'RINGPERF_TEST_UNSET_VAR' is not set",
        ),
        (
            "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {}\n  profiling: {type: agentic_replay}\n",
            "Input tag 'agentic_replay' found using 'type' does not match any of the expected tags",
        ),
        (
            "sweep: {type: grid, parameters: {phases.profiling.smoothness: [1, 2]}}\nbenchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {}\n",
            "a 'profiling' phase is required",
        ),
        (
            "sweep: {type: adaptive}\nbenchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {}\n",
            "sweep: Input tag 'adaptive' found using 'type' does not match any of the expected tags",
        ),
    ];
    for (i, (yaml, msg)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("c{i}.yaml"));
        std::fs::write(&f, yaml).unwrap();
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{yaml}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("Error: ") && err.contains(msg),
            "{yaml}: {err}"
        );
        assert!(err.contains(&format!("File: {}", f.display())), "{err}");
    }
    let missing = ringperf(&["config", "validate", "no/such.yaml"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        text(&missing.stderr),
        "Error: Configuration file not found: no/such.yaml\nFile: no/such.yaml\n"
    );
}

#[test]
fn profile_refuses_a_flag_aiperf_cannot_apply_over_a_file_and_a_scenario() {
    let out = ringperf(&[
        "profile",
        "-f",
        &format!("{DIR}/concurrency.yaml"),
        "--public-dataset",
        "sharegpt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "These CLI flags cannot be combined with --config and would otherwise be ignored: --public-dataset."
        ),
        "{}",
        text(&out.stderr)
    );
    // `--no-fixed-schedule` too (AIPerf's field `disable_auto_fixed_schedule`).
    let out = ringperf(&[
        "profile",
        "-f",
        &format!("{DIR}/concurrency.yaml"),
        "--no-fixed-schedule",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("would otherwise be ignored: --no-fixed-schedule."),
        "{}",
        text(&out.stderr)
    );
    let out = ringperf(&["profile", "--scenario", "chat-latency", "-m", "m"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("Unknown scenario 'chat-latency'. Valid scenarios: inferencex-agentx-mvp"),
        "{}",
        text(&out.stderr)
    );
    // The scenario runs only on a Weka source: synthetic prompts are AIPerf's one violation
    // that `--unsafe-override` cannot let through.
    let out = ringperf(&["profile", "--scenario", "inferencex-agentx-mvp", "-m", "m"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "Scenario invariants violated (1 conflict):\n  - --input-file (loader): got 'synthetic'"
        ) && text(&out.stderr)
            .contains("These violations cannot be bypassed with --unsafe-override."),
        "{}",
        text(&out.stderr)
    );
}

/// A YAML document as JSON, comments and layout gone: an integer stays an integer and a real a
/// float (`180` and `180.0` differ, as in Python), mappings compare without their order.
fn yaml_value(text: &str) -> Value {
    use yaml_rust2::Yaml;
    fn conv(y: &Yaml) -> Value {
        match y {
            Yaml::Real(r) => serde_json::json!(r.parse::<f64>().expect("a real")),
            Yaml::Integer(i) => serde_json::json!(i),
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Array(a) => Value::Array(a.iter().map(conv).collect()),
            Yaml::Hash(h) => Value::Object(
                h.iter()
                    .map(|(k, v)| (k.as_str().expect("a string key").to_string(), conv(v)))
                    .collect(),
            ),
            Yaml::Null => Value::Null,
            other => panic!("unexpected YAML node {other:?}"),
        }
    }
    let docs = yaml_rust2::YamlLoader::load_from_str(text).expect("YAML");
    conv(&docs[0])
}

/// For each of AIPerf 0.13's 27 template names, `config init -t NAME -m mock-model -u URL -o F`
/// writes the settings AIPerf's own `config init` wrote with the same arguments
/// (tests/data/aiperf-templates/NAME.yaml): the YAML values are equal, whatever the comments.
/// `config validate F` then says what it says of AIPerf's file
/// (aiperfs_templates_validate_as_aiperf_validated_them holds those verdicts).
#[test]
fn config_init_writes_aiperfs_templates_with_the_same_settings() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-templates");
    let names = std::fs::read_to_string(data.join("names.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for name in names.lines() {
        let f = dir.path().join(format!("{name}.yaml"));
        let fs = f.to_str().unwrap();
        let w = ringperf(&[
            "config",
            "init",
            "-t",
            name,
            "-m",
            "mock-model",
            "-u",
            "http://127.0.0.1:8765",
            "-o",
            fs,
        ]);
        assert_eq!(w.status.code(), Some(0), "{name}: {}", text(&w.stderr));
        assert_eq!(text(&w.stdout), format!("Wrote {name} template to {fs}\n"));
        let ours = std::fs::read_to_string(&f).unwrap();
        let theirs = std::fs::read_to_string(data.join(format!("{name}.yaml"))).unwrap();
        assert_eq!(yaml_value(&ours), yaml_value(&theirs), "{name}");
        // Written in ringperf's words: the comments are not AIPerf's.
        let comments = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| l.split_once('#').map(|(_, c)| c.trim().to_string()))
                // (a `#` inside a block of text, `# Run {{ job_name }}`, is not a comment)
                .filter(|c| c.len() > 30 && !c.contains("{{"))
                .collect()
        };
        let theirs_comments = comments(&theirs);
        for c in comments(&ours) {
            assert!(
                !theirs_comments.contains(&c),
                "{name}: AIPerf's comment {c:?}"
            );
        }
        let mine = ringperf(&["config", "validate", fs]);
        let aiperfs = data.join(format!("{name}.yaml"));
        let reference = ringperf(&["config", "validate", aiperfs.to_str().unwrap()]);
        assert_eq!(mine.status.code(), reference.status.code(), "{name}");
        assert_eq!(
            text(&mine.stderr).replace(fs, "F"),
            text(&reference.stderr).replace(aiperfs.to_str().unwrap(), "F"),
            "{name}"
        );
        n += 1;
    }
    assert_eq!(n, 27);
}

/// Without `-m` / `-u`, each template keeps AIPerf's own model and URL (and every other value):
/// `config init -t NAME` prints the values AIPerf's prints (tests/data/aiperf-templates/
/// defaults.json).
#[test]
fn config_init_without_overrides_prints_aiperfs_defaults() {
    let defaults: Value = serde_json::from_str(
        &std::fs::read_to_string("tests/data/aiperf-templates/defaults.json").unwrap(),
    )
    .unwrap();
    let defaults = defaults.as_object().unwrap();
    assert_eq!(defaults.len(), 27);
    for (name, expected) in defaults {
        let out = ringperf(&["config", "init", "-t", name]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert_eq!(&yaml_value(&text(&out.stdout)), expected, "{name}");
    }
}

#[test]
fn config_init_lists_searches_and_refuses_as_aiperf() {
    let list = ringperf(&["config", "init", "--list"]);
    assert_eq!(list.status.code(), Some(0));
    let list = text(&list.stdout);
    let names = std::fs::read_to_string("tests/data/aiperf-templates/names.txt").unwrap();
    for name in names.lines().chain(["concurrency-sweep"]) {
        assert!(
            list.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name}: {list}"
        );
    }
    // AIPerf's categories, in its order, each a table of name, title and description.
    let cats = [
        "Getting Started",
        "Load Testing",
        "Datasets",
        "Sweep & Multi-Run",
        "Advanced",
        "Multimodal",
        "Specialized Endpoints",
    ];
    let at: Vec<usize> = cats
        .iter()
        .map(|c| list.find(&format!("{c}\nName ")).expect(c))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    // AIPerf's tables, as it prints them on a wide terminal (trailing blanks aside), but for
    // ringperf's own template and the command's name.
    for (args, file) in [
        (&["--list"][..], "list.txt"),
        (&["--list", "-v"][..], "list-verbose.txt"),
    ] {
        let out = ringperf(&[&["config", "init"][..], args].concat());
        let ours: String = text(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with("concurrency-sweep "))
            .map(|l| {
                format!(
                    "{}\n",
                    l.trim_end().replace("ringperf config", "aiperf config")
                )
            })
            .collect();
        let theirs =
            std::fs::read_to_string(format!("tests/data/aiperf-templates/{file}")).unwrap();
        assert_eq!(ours, theirs, "{file}");
    }
    assert!(
        list.ends_with("Use 'ringperf config init --template <name>' to generate a template.\n")
    );
    let verbose = text(&ringperf(&["config", "init", "-l", "-v", "-c", "special"]).stdout);
    assert!(verbose.contains("Tags"), "{verbose}");
    assert!(
        verbose.contains("embeddings, search, retrieval  beginner"),
        "{verbose}"
    );
    assert!(!verbose.contains("minimal"), "{verbose}");
    // A search lists name matches first (within a category, as AIPerf's table groups them).
    let found = text(&ringperf(&["config", "init", "--search", "sweep"]).stdout);
    let order: Vec<&str> = found
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains('_') || w.contains('-'))
        .collect();
    assert_eq!(
        order,
        [
            "concurrency-sweep",
            "speed_bench_sweep",
            "sweep_distributions",
            "sweep_with_plot",
            "scenario_workload_profiles"
        ],
        "{found}"
    );
    let none = ringperf(&["config", "init", "-s", "zzz"]);
    assert_eq!(none.status.code(), Some(0));
    assert_eq!(
        text(&none.stdout),
        "No templates match 'zzz'.\nRun 'ringperf config init --list' to see all templates.\n"
    );
    let none = ringperf(&["config", "init", "--list", "--category", "zzz"]);
    assert_eq!(text(&none.stdout), "No templates in category 'zzz'.\n");
    let bare = ringperf(&["config", "init"]);
    assert_eq!(bare.status.code(), Some(2));
    assert_eq!(
        text(&bare.stderr),
        "Specify a template with --template, or run 'ringperf config init --list' to see what \
         is available.\n"
    );
    let unknown = ringperf(&["config", "init", "-t", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    let err = text(&unknown.stderr);
    assert!(
        err.starts_with(
            "Error: \"Unknown template 'nope'. Available templates: audio_multimodal, \
             concurrency-sweep, embeddings,"
        ) && err.ends_with("warmup_profiling\"\n"),
        "{err}"
    );
    // Without -o: the template on stdout, -m and -u put in.
    let out = text(
        &ringperf(&[
            "config",
            "init",
            "-t",
            "multi_url_load_balancing",
            "-m",
            "x/y",
        ])
        .stdout,
    );
    let v = yaml_value(&out);
    assert_eq!(v["benchmark"]["model"], "x/y");
    assert_eq!(
        v["benchmark"]["endpoint"]["urls"].as_array().unwrap().len(),
        4
    );
    let out = text(
        &ringperf(&[
            "config",
            "init",
            "-t",
            "multi_url_load_balancing",
            "-u",
            "http://h:1",
        ])
        .stdout,
    );
    assert_eq!(
        yaml_value(&out)["benchmark"]["endpoint"]["urls"],
        serde_json::json!(["http://h:1"])
    );
    // -o: directories made, an existing file replaced.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a/b/t.yaml");
    let fs = f.to_str().unwrap();
    for name in ["minimal", "concurrency-sweep"] {
        let w = ringperf(&["config", "init", "-t", name, "-o", fs]);
        assert_eq!(w.status.code(), Some(0), "{}", text(&w.stderr));
        assert_eq!(
            ringperf(&["config", "validate", fs]).status.code(),
            Some(0),
            "{name}"
        );
    }
    assert!(
        std::fs::read_to_string(&f)
            .unwrap()
            .contains("concurrency: [1, 2, 4, 8, 16, 32, 64]")
    );
}

/// `config expand FILE` prints what `aiperf config expand FILE` printed, byte for byte, for
/// every AIPerf template both tools accept (tests/data/aiperf-templates/) and for two sweeps
/// (tests/data/aiperf-expand/: a grid and a zip, also in `--format json` and `yaml`).
#[test]
fn config_expand_prints_aiperfs_variations() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-templates");
    let names = std::fs::read_to_string(data.join("names.txt")).unwrap();
    let mut compared = 0;
    let mut files: Vec<std::path::PathBuf> = names
        .lines()
        .map(|n| data.join(format!("{n}.yaml")))
        .collect();
    files.push("tests/data/aiperf-expand/concurrency-sweep.yaml".into());
    files.push("tests/data/aiperf-expand/zip-sweep.yaml".into());
    for f in &files {
        let expected = std::fs::read_to_string(f.with_extension("expand.txt")).unwrap();
        let Some(expected) = expected.strip_suffix("exit 0\n") else {
            continue;
        };
        let out = ringperf(&["config", "expand", f.to_str().unwrap()]);
        if out.status.code() == Some(1) {
            // ringperf refuses it, as `config validate` does.
            let v = ringperf(&["config", "validate", f.to_str().unwrap()]);
            assert_eq!(v.status.code(), Some(1), "{f:?}");
            continue;
        }
        assert_eq!(text(&out.stdout), expected, "{f:?}");
        compared += 1;
    }
    assert!(compared >= 21, "{compared}");
    // No sweep: one `base` variation (what `aiperf config expand minimal.yaml -f json|yaml`
    // printed).
    let minimal = data.join("minimal.yaml");
    let out = ringperf(&["config", "expand", minimal.to_str().unwrap(), "-f", "json"]);
    assert_eq!(
        text(&out.stdout),
        "{\n  \"sweep_type\": \"none\",\n  \"variations\": [\n    {\n      \"index\": 0,\n      \
         \"dir_name\": \"base\",\n      \"label\": \"base\",\n      \"values\": {}\n    }\n  ]\n}\n"
    );
    let out = ringperf(&["config", "expand", minimal.to_str().unwrap(), "-f", "yaml"]);
    assert_eq!(
        text(&out.stdout),
        "sweep_type: none\nvariations:\n- index: 0\n  dir_name: base\n  label: base\n  values: {}\n"
    );
    // AIPerf also takes the file as `--config-file FILE`.
    let f = "tests/data/aiperf-expand/zip-sweep.yaml";
    let named = ringperf(&["config", "expand", "--config-file", f]);
    assert_eq!(named.stdout, ringperf(&["config", "expand", f]).stdout);
    let named = ringperf(&["config", "validate", "--config-file", f]);
    assert_eq!(text(&named.stdout), format!("Configuration valid: {f}\n"));
    for name in ["concurrency-sweep", "zip-sweep"] {
        let f = format!("tests/data/aiperf-expand/{name}.yaml");
        for fmt in ["json", "yaml"] {
            let out = ringperf(&["config", "expand", &f, "--format", fmt]);
            let expected =
                std::fs::read_to_string(format!("tests/data/aiperf-expand/{name}.expand.{fmt}"))
                    .unwrap();
            assert_eq!(text(&out.stdout), expected, "{name} {fmt}");
        }
    }
}

/// `--full` and `--index`: AIPerf's layout, with ringperf's resolved configuration (the
/// `input_config` the run would echo) as each variation's body.
#[test]
fn config_expand_full_shows_each_variations_configuration() {
    let f = "tests/data/aiperf-expand/zip-sweep.yaml";
    let out = ringperf(&["config", "expand", f, "-i", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = text(&out.stdout);
    let expected =
        std::fs::read_to_string("tests/data/aiperf-expand/zip-sweep.index1-full.txt").unwrap();
    // The same first three lines as AIPerf's; then a body indented by four.
    let head: Vec<&str> = expected.lines().take(3).collect();
    assert_eq!(body.lines().take(3).collect::<Vec<_>>(), head);
    let yaml: String = body
        .lines()
        .skip(3)
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let v = yaml_value(&yaml);
    assert_eq!(v["phases"][0]["rate"], 10.0);
    // A file's fixed length, as AIPerf's expansion writes it.
    assert_eq!(v["datasets"][0]["prompts"]["osl"]["value"], 128.0);
    // The JSON form carries the same body.
    let json: Value =
        serde_json::from_slice(&ringperf(&["config", "expand", f, "--full", "-f", "json"]).stdout)
            .unwrap();
    assert_eq!(json["variations"][1]["benchmark"], v);
    assert_eq!(
        json["variations"][2]["values"]["phases.profiling.rate"],
        20.0
    );
    let out = ringperf(&["config", "expand", f, "--index", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "Error: --index 3 out of range; sweep has 3 variation(s).\n"
    );
    let out = ringperf(&[
        "config",
        "expand",
        &format!("{DIR}/concurrency.yaml"),
        "--full",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(
            "Sweep type: none (1 variation)\n\n[0] dir=base  label=base\n    models:\n"
        ),
        "{}",
        text(&out.stdout)
    );
}

/// An adaptive search picks its variations as it runs: nothing to list (exit 2, as AIPerf);
/// `--as-flags` shows the `--search-*` flags it stands for.
#[test]
fn config_expand_has_no_list_for_an_adaptive_search() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("adaptive.yaml");
    let body = std::fs::read_to_string(format!("{DIR}/concurrency.yaml")).unwrap() + ADAPTIVE.0;
    std::fs::write(&f, body).unwrap();
    let out = ringperf(&["config", "expand", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).is_empty());
    assert!(
        text(&out.stderr).contains("adaptive_search"),
        "{}",
        text(&out.stderr)
    );
    let out = ringperf(&["config", "expand", "--as-flags", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("--search-planner smooth_isotonic"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn config_expand_as_flags_prints_the_equivalent_command_line() {
    let out = ringperf(&[
        "config",
        "expand",
        "--as-flags",
        &format!("{DIR}/variables-slos.yaml"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let first = text(&out.stdout).lines().next().unwrap().to_string();
    assert!(
        first.starts_with("ringperf profile --random-seed 3 --model mock-model"),
        "{first}"
    );
    assert!(
        first.contains("--concurrency 4 --request-count 12"),
        "{first}"
    );
    assert!(
        first.contains("--goodput 'time_to_first_token:500 request_latency:2000'"),
        "{first}"
    );
}

/// `ringperf config expand F | head -1`: the reader is gone before the report is written. The
/// command ends on SIGPIPE as a Unix filter does, never with a panic (exit 101).
#[test]
fn config_expand_into_a_closed_pipe_ends_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "config",
            "expand",
            "--as-flags",
            &format!("{DIR}/variables-slos.yaml"),
        ])
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}

#[test]
fn profile_runs_a_file_against_the_mock() {
    let server = common::recording_mock(8);
    let dir = tempfile::tempdir().unwrap();
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-f",
            &format!("{DIR}/concurrency.yaml"),
            "--ui",
            "none",
        ])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 10, "the file's `requests: 10`");
    let ic = &common::read_json(&dir.path().join("profile_export_aiperf.json"))["input_config"];
    assert_eq!(ic["phases"][0]["concurrency"], 2);
    assert_eq!(server.truth().entries().len(), 10, "the mock answered 10");
}

/// A `sweep:` block runs the sweep its flags stand for: the same variation directories as
/// `--concurrency 1,2` given on the command line, each variation's requests answered by the
/// mock, and the variation's concurrency in its own `input_config`.
#[test]
fn a_sweep_block_runs_as_the_list_flags_do() {
    let server = common::recording_mock(8);
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("sweep.yaml");
    let body = std::fs::read_to_string(format!("{DIR}/concurrency.yaml")).unwrap()
        + "sweep:\n  type: grid\n  parameters:\n    phases.profiling.concurrency: [1, 2]\n";
    std::fs::write(&file, body).unwrap();
    let run = |dir: &std::path::Path, args: &[&str]| {
        let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(args)
            .args(["--ui", "none"])
            .env("URL", format!("http://{}", server.addr))
            .env("OUT", dir)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    let from_file = root.path().join("file");
    run(&from_file, &["profile", "-f", file.to_str().unwrap()]);
    let from_flags = root.path().join("flags");
    let flags = format!(
        "profile -m mock-model --url http://{} --endpoint-type chat --streaming \
         --num-dataset-entries 20 --isl 32 --osl 8 --tokenizer builtin --random-seed 7 \
         --concurrency 1,2 --request-count 10 --artifact-dir {}",
        server.addr,
        from_flags.display()
    );
    run(
        &from_flags,
        &shell_split(&flags)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let variations = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("concurrency"))
            .collect();
        v.sort();
        v
    };
    let names = variations(&from_file);
    assert_eq!(names, variations(&from_flags));
    assert_eq!(names.len(), 2, "{names:?}");
    for (name, c) in names.iter().zip([1, 2]) {
        let json = common::read_json(&from_file.join(name).join("profile_export_aiperf.json"));
        assert_eq!(
            json["input_config"]["phases"][0]["concurrency"], c,
            "{name}"
        );
        assert_eq!(
            common::read_jsonl(&from_file.join(name).join("profile_export.jsonl")).len(),
            10,
            "{name}"
        );
    }
    assert_eq!(
        server.truth().entries().len(),
        40,
        "two sweeps of two 10-request variations"
    );
}

/// An `adaptive_search` sweep block over `concurrency.yaml`: the search a user would otherwise
/// type as flags (the second argument, written out by hand).
const ADAPTIVE: (&str, &str) = (
    "sweep:\n  type: adaptive_search\n  planner: smooth_isotonic\n  searchSpace:\n    \
     - {path: phases.profiling.concurrency, lo: 1, hi: 2, kind: int}\n  objectives:\n    \
     - {metric: output_token_throughput, direction: maximize}\n  maxIterations: 5\n  \
     slaFilters:\n    - {metric_tag: time_to_first_token, stat: p95, op: lt, threshold: 60000}\n",
    "--search-planner smooth_isotonic --search-space phases.profiling.concurrency:1,2:int \
     --search-metric output_token_throughput --search-direction maximize \
     --search-max-iterations 5 --search-sla time_to_first_token:p95:lt:60000",
);

/// A `sweep: {type: adaptive_search}` file and the equivalent `--search-*` flags give identical
/// `input_config` and run the same search on the mock: the same points in the same order with
/// the same verdicts, the same stop reason and search `config`. Every point passes the
/// (generous) SLA, so the planner's path is known in advance: from 1, double to the top of the
/// space (1, 2) and stop with nothing failing.
#[test]
fn an_adaptive_search_file_runs_the_search_its_flags_ask_for() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("adaptive.yaml");
    let body = std::fs::read_to_string(format!("{DIR}/concurrency.yaml")).unwrap() + ADAPTIVE.0;
    std::fs::write(&file, &body).unwrap();
    let base = EQUIVALENT[0].1;
    let argv = vec![
        "ringperf".to_string(),
        "profile".into(),
        "-f".into(),
        file.display().to_string(),
    ];
    let mut file_ic = input_config(&file_plan(&argv));
    // The file names its dataset (`default`), the flags' is `main`.
    file_ic["datasets"][0]["name"] = "main".into();
    let flags_ic = from_flags(&format!("{base} {}", ADAPTIVE.1));
    let file_ic = as_means(file_ic);
    assert_eq!(file_ic, without_cli_defaults(flags_ic, &file_ic));

    let server = common::recording_mock(2);
    let run = |dir: &std::path::Path, args: &[String]| {
        let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(args)
            // The search path is the subject, not the client-health verdict.
            .args([
                "--ui",
                "none",
                "--no-server-metrics",
                "--max-client-lag-us",
                "1000000",
            ])
            .env("URL", format!("http://{}", server.addr))
            .env("OUT", dir)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        common::read_json(&dir.join("search_history.json"))
    };
    let a = run(
        &root.path().join("file"),
        &shell_split(&format!("profile -f {} --request-count 4", file.display())),
    );
    let flags_dir = root.path().join("flags");
    let line = format!("{base} {}", ADAPTIVE.1)
        .replace("http://127.0.0.1:8000", &format!("http://{}", server.addr))
        .replace("artifacts/concurrency", &flags_dir.display().to_string())
        .replace("--request-count 10", "--request-count 4");
    let b = run(&flags_dir, &shell_split(&line)[1..]);
    let path = |h: &Value| -> Vec<(Value, Value)> {
        h["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["variation_values"]["phases.profiling.concurrency"].clone(),
                    i["feasible"].clone(),
                )
            })
            .collect()
    };
    let t = Value::Bool(true);
    let expected: Vec<(Value, Value)> = [1, 2].map(|c| (c.into(), t.clone())).to_vec();
    assert_eq!(path(&a), expected);
    assert_eq!(path(&b), expected);
    assert_eq!(a["config"], b["config"]);
    assert_eq!(a["config"]["planner"], "smooth_isotonic");
    assert_eq!(a["convergence_reason"], b["convergence_reason"]);
    assert_eq!(
        a["convergence_reason"],
        "smooth_isotonic_no_failure_in_range"
    );
    assert_eq!(
        server.truth().entries().len(),
        16,
        "two searches of two 4-request points"
    );
}

/// Runs the search file `file` against `server` into `out` with `--request-count N` (`count`),
/// no server metrics and a loose client-health limit (the search is the subject); must exit 0.
fn run_search_file(file: &Path, count: &str, server: &ringperf_mock::mock::MockServer, out: &Path) {
    let o = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f"])
        .arg(file)
        .args([
            "--request-count",
            count,
            "--ui",
            "none",
            "--no-server-metrics",
        ])
        .args(["--max-client-lag-us", "1000000"])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", out)
        .output()
        .expect("runs");
    assert!(
        o.status.success(),
        "{}: {}",
        file.display(),
        text(&o.stderr)
    );
}

/// Writes the search file `body` as `root/<name>.yaml`, runs it one request a point into
/// `root/<name>` ([`run_search_file`]) and returns the value of `path` at each point, in order.
fn search_points(
    root: &Path,
    name: &str,
    body: &str,
    server: &ringperf_mock::mock::MockServer,
    path: &str,
) -> Vec<f64> {
    let file = root.join(format!("{name}.yaml"));
    std::fs::write(&file, body).unwrap();
    let dir = root.join(name);
    run_search_file(&file, "1", server, &dir);
    let h = common::read_json(&dir.join("search_history.json"));
    (h["iterations"].as_array().unwrap().iter())
        .map(|i| i["variation_values"][path].as_f64().unwrap())
        .collect()
}

/// An adaptive search's `recipe_name` and `post_process` (no `--search-*` flag has them), run as
/// AIPerf 0.13 ran the same file (tests/data/aiperf-yaml/adaptive-extras/, README there): the
/// recipe's name in `search_history.json` and its Pareto axes in the sweep aggregate, the points
/// listed as AIPerf lists them, and the hook's file derived from them with AIPerf's keys.
#[test]
fn an_adaptive_searchs_recipe_name_and_post_process_run_as_aiperfs_did() {
    let fixture = Path::new(DIR).join("adaptive-extras");
    let aiperf = common::read_json(&fixture.join("aiperf-summary.json"));
    let server = common::recording_mock(2);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("out");
    run_search_file(&fixture.join("adaptive-extras.yaml"), "4", &server, &dir);
    let history = common::read_json(&dir.join("search_history.json"));
    assert_eq!(history["recipe"], aiperf["search_history.recipe"]);
    let points: Vec<Value> = (history["iterations"].as_array().unwrap().iter())
        .map(|i| i["variation_values"].clone())
        .collect();
    assert_eq!(Value::from(points), aiperf["iterations"]);
    let agg = dir.join("sweep_aggregate");
    let sweep = common::read_json(&agg.join("profile_export_aiperf_sweep.json"));
    for k in [
        "sweep_parameters",
        "num_combinations",
        "pareto_axes",
        "sla_constraints",
    ] {
        assert_eq!(sweep["metadata"][k], aiperf["sweep.metadata"][k], "{k}");
    }
    let params: Vec<Value> = (sweep["per_combination_metrics"].as_array().unwrap().iter())
        .map(|c| c["parameters"].clone())
        .collect();
    assert_eq!(Value::from(params), aiperf["sweep.parameters"]);
    let knee = common::read_json(&agg.join("knee.json"));
    let theirs = common::read_json(&fixture.join("knee.json"));
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&knee), keys(&theirs));
    let xs = |v: &Value| -> Vec<Value> {
        (v["all_points"].as_array().unwrap().iter())
            .map(|p| p["concurrency"].clone())
            .collect()
    };
    assert_eq!(xs(&knee), xs(&theirs));
}

/// A file's stop rules for an N-D planner (no flag has them; tests/data/aiperf-yaml/plateau/,
/// README there): with a plateau window of 2 and a threshold no two throughputs miss, a
/// Bayesian search of 6 points stops after its second, `plateau_cv`, as AIPerf's run of the same
/// file did; values out of AIPerf's bounds are refused with its reasons.
#[test]
fn an_adaptive_searchs_plateau_stops_it_as_aiperfs_did() {
    let fixture = Path::new(DIR).join("plateau");
    let aiperf = common::read_json(&fixture.join("aiperf-history.json"));
    let server = common::recording_mock(2);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("out");
    run_search_file(&fixture.join("plateau.yaml"), "2", &server, &dir);
    let history = common::read_json(&dir.join("search_history.json"));
    assert_eq!(aiperf["convergence_reason"], "plateau_cv");
    assert_eq!(history["convergence_reason"], aiperf["convergence_reason"]);
    assert_eq!(
        history["iterations"].as_array().unwrap().len() as u64,
        aiperf["iterations"].as_u64().unwrap()
    );
    for n in 0..3 {
        let f = fixture.join(format!("refused-{n}.yaml"));
        let said = std::fs::read_to_string(f.with_extension("validate.txt")).unwrap();
        let (code, message) = aiperf_verdict(&said);
        assert_eq!(code, 1);
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{n}: {err}");
        assert!(
            err.contains(&message),
            "{n}: AIPerf said {message:?}, ringperf {err}"
        );
    }
}

/// `monotonic_stability_trials` (no flag has it): how many agreeing runs latch a point's
/// verdict in `monotonic_sla`. Every point passing, the probe runs 1 then 2, each twice by
/// default, once with 1.
#[test]
fn monotonic_stability_trials_set_how_often_a_point_runs() {
    let root = tempfile::tempdir().unwrap();
    let server = common::recording_mock(2);
    let run = |name: &str, extra: &str| -> Vec<f64> {
        let body = std::fs::read_to_string(format!("{DIR}/concurrency.yaml")).unwrap()
            + &ADAPTIVE.0.replace("smooth_isotonic", "monotonic_sla")
            + extra;
        search_points(
            root.path(),
            name,
            &body,
            &server,
            "phases.profiling.concurrency",
        )
    };
    assert_eq!(run("default", ""), [1.0, 1.0, 2.0, 2.0]);
    assert_eq!(run("once", "  monotonicStabilityTrials: 1\n"), [1.0, 2.0]);
}

/// A dimension's `prior: log-uniform` (no `--search-space` form has one): the same seed's start
/// points, drawn evenly in `ln` rather than linearly, lie at or below the uniform draws, one of
/// them strictly (over an ISL of 1 to 1,000, `exp(u ln 1000) <= 1 + 999 u`); AIPerf's messages
/// for a prior it does not have and for `lo` at 0.
#[test]
fn a_search_dimensions_log_uniform_prior_draws_log_spaced_points() {
    let root = tempfile::tempdir().unwrap();
    let server = common::recording_mock(2);
    let space = |prior: &str| {
        std::fs::read_to_string(format!("{DIR}/concurrency.yaml")).unwrap()
            + &format!(
                "sweep:\n  type: adaptive_search\n  planner: bayesian\n  randomSeed: 4\n  \
                 searchSpace:\n    - {{path: datasets.main.prompts.isl, lo: 1, hi: 1000, kind: \
                 int{prior}}}\n  objectives:\n    - {{metric: output_token_throughput, direction: \
                 maximize}}\n  maxIterations: 3\n  nInitialPoints: 3\n"
            )
    };
    let points = |name: &str, body: String| -> Vec<f64> {
        search_points(
            root.path(),
            name,
            &body,
            &server,
            "datasets.main.prompts.isl",
        )
    };
    let linear = points("uniform", space(""));
    let logged = points("log", space(", prior: log-uniform"));
    assert_eq!((linear.len(), logged.len()), (3, 3));
    assert!(
        linear.iter().zip(&logged).all(|(a, b)| b <= a),
        "{linear:?} {logged:?}"
    );
    assert!(
        linear.iter().zip(&logged).any(|(a, b)| b < a),
        "{linear:?} {logged:?}"
    );
    for (prior, why) in [
        (
            ", prior: logarithmic",
            "sweep.search_space.0.prior: Input should be 'uniform' or 'log-uniform'",
        ),
        (
            ", prior: log-uniform",
            "prior='log-uniform' requires lo > 0, got lo=0.0.",
        ),
    ] {
        let file = root.path().join("bad.yaml");
        std::fs::write(&file, space(prior).replace("lo: 1,", "lo: 0,")).unwrap();
        let out = ringperf(&["config", "validate", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{prior}");
        assert!(
            text(&out.stderr).contains(why),
            "{prior}: {}",
            text(&out.stderr)
        );
    }
}

/// The same YAML grid sweep AIPerf 0.13 ran (tests/data/aiperf-yaml/grid-sweep/, README there):
/// ringperf writes every file AIPerf wrote (but AIPerf's logs and `run_config.json`, which
/// docs/output-formats.md lists as not written), and each variation's `input_config` agrees
/// with AIPerf's on every key both write (but the documented differences) and on the inputs
/// the file sets.
#[test]
fn a_yaml_grid_sweep_writes_aiperfs_layout_and_inputs() {
    let fixture = format!("{DIR}/grid-sweep");
    let server = common::recording_mock(8);
    let dir = tempfile::tempdir().unwrap();
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f", &format!("{fixture}/grid-sweep.yaml")])
        .args(["--ui", "none"])
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = std::fs::read_to_string(format!("{fixture}/aiperf-files.txt")).unwrap();
    let mut checked = 0;
    for f in listed.lines() {
        if f.starts_with("logs/") || f.contains("/logs/") || f.ends_with("/run_config.json") {
            continue;
        }
        assert!(
            dir.path().join(f).is_file(),
            "{f}: written by AIPerf, not by ringperf"
        );
        checked += 1;
    }
    assert_eq!(checked, 22, "{listed}");
    let inputs = [
        ".models.items[0].name",
        ".endpoint.type",
        ".endpoint.streaming",
        ".datasets[0].type",
        ".datasets[0].entries",
        ".datasets[0].prompts.isl.value",
        ".datasets[0].prompts.osl.value",
        ".phases[0].type",
        ".phases[0].requests",
        ".phases[0].concurrency",
    ];
    for c in [1, 2] {
        let name = format!("concurrency_{c}");
        let text = std::fs::read_to_string(format!("{fixture}/{name}.input_config.json")).unwrap();
        let aiperf: Value = serde_json::from_str(&text).unwrap();
        let json = common::read_json(&dir.path().join(&name).join("profile_export_aiperf.json"));
        let mut a = Vec::new();
        common::leaves("", &aiperf, &mut a);
        let mut r = Vec::new();
        common::leaves("", &json["input_config"], &mut r);
        let mut found = 0;
        for (path, av) in &a {
            if path == ".endpoint.urls[0]" || path == ".artifacts.dir" {
                continue;
            }
            let rpath = path.replace(".value", ".mean");
            let Some((_, rv)) = r.iter().find(|(p, _)| *p == rpath || *p == *path) else {
                assert!(
                    !inputs.contains(&path.as_str()),
                    "{name}{path}: not written"
                );
                continue;
            };
            assert!(
                rv == av || documented(path, av, rv),
                "{name}{path}: AIPerf {av} != ringperf {rv}"
            );
            found += usize::from(inputs.contains(&path.as_str()));
        }
        assert_eq!(found, inputs.len(), "{name}");
        assert_eq!(json["input_config"]["phases"][0]["concurrency"], c);
    }
    assert_eq!(
        server.truth().entries().len(),
        8,
        "two variations of 4 requests"
    );
}

/// `multi_run.convergence` (tests/data/aiperf-yaml/convergence/, README there): refused where
/// AIPerf's `config validate` refused it, with its reason; run as AIPerf ran it: an independent
/// grid of two variations, each stopped after `min_runs` (2) of its 4 trials by the criterion,
/// with AIPerf's warning for a minimum below 3.
#[test]
fn a_files_convergence_block_stops_trials_as_aiperfs_did() {
    let fixture = Path::new(DIR).join("convergence");
    let mut refused: Vec<_> = std::fs::read_dir(fixture.join("refused"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    refused.sort();
    assert_eq!(refused.len(), 6);
    for f in refused {
        let stem = f.file_stem().unwrap().to_str().unwrap().to_string();
        let said = std::fs::read_to_string(f.with_extension("validate.txt")).unwrap();
        let (code, message) = aiperf_verdict(&said);
        assert_eq!(code, 1, "{stem}");
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stem}: {err}");
        assert!(
            err.contains(&message),
            "{stem}: AIPerf said {message:?}, ringperf {err}"
        );
    }
    let server = common::recording_mock(16);
    let dir = tempfile::tempdir().unwrap();
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f"])
        .arg(fixture.join("convergence.yaml"))
        .args(["--ui", "none"])
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", dir.path())
        .output()
        .expect("runs");
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let aiperf_said = std::fs::read_to_string(fixture.join("stdout-convergence.txt")).unwrap();
    let warning = "convergence.min_runs=2 is below the recommended minimum of 3. Convergence \
                   checks will have reduced statistical power.";
    assert!(aiperf_said.contains(warning));
    assert!(
        err.contains(&format!("ringperf: warning: {warning}")),
        "{err}"
    );
    // The trials AIPerf ran, and no more: two per variation.
    let trials = |files: &mut dyn Iterator<Item = String>| -> BTreeSet<String> {
        files
            .filter_map(|f| {
                let (dir, _) = f.split_once("/profile_runs/")?;
                let trial = f.split('/').nth(2)?;
                Some(format!("{dir}/{trial}"))
            })
            .collect()
    };
    let listed = std::fs::read_to_string(fixture.join("files.txt")).unwrap();
    let theirs = trials(
        &mut listed
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(_, f)| f.to_owned()),
    );
    let ours = trials(&mut crate::template_runs::files_under(dir.path()).into_iter());
    assert_eq!(theirs.len(), 4, "{theirs:?}");
    assert_eq!(ours, theirs);
    assert_eq!(
        server.truth().entries().len(),
        4 * 6,
        "four trials of 6 requests"
    );
}

/// A grid sweep's `sla_filters`, `recipe_name` and `post_process`
/// (tests/data/aiperf-yaml/sweep-extras/, README there), run as AIPerf ran them: the sweep
/// aggregate's `sla_constraints` and Pareto axes are AIPerf's, the handler's file has AIPerf's
/// keys and points, and a handler refused (a parameter missing, a name AIPerf does not have)
/// leaves AIPerf's error sidecar, byte for byte, beside the aggregate.
#[test]
fn a_sweeps_filters_recipe_and_post_process_run_as_aiperfs_did() {
    let fixture = Path::new(DIR).join("sweep-extras");
    let run = |name: &str| {
        let server = common::recording_mock(8);
        let dir = tempfile::tempdir().unwrap();
        let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["profile", "-f"])
            .arg(fixture.join(format!("{name}.yaml")))
            .args(["--ui", "none", "--no-server-metrics"])
            .env("URL", format!("http://{}", server.addr))
            .env("OUT", dir.path())
            .output()
            .expect("runs");
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        (dir, text(&out.stdout), text(&out.stderr))
    };
    let (dir, stdout, _) = run("sweep-extras");
    let agg = dir.path().join("sweep_aggregate");
    let ours = common::read_json(&agg.join("profile_export_aiperf_sweep.json"));
    let theirs = common::read_json(&fixture.join("sweep.metadata.json"));
    for k in ["sla_constraints", "pareto_axes", "sweep_parameters"] {
        assert_eq!(ours["metadata"][k], theirs["metadata"][k], "{k}");
    }
    assert_eq!(ours["pareto_optimal"], theirs["pareto_optimal"]);
    let knee = common::read_json(&agg.join("knee.json"));
    let aiperf_knee = common::read_json(&fixture.join("knee.json"));
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&knee), keys(&aiperf_knee));
    let xs = |v: &Value| {
        (v["all_points"].as_array().unwrap().iter())
            .map(|p| p["concurrency"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(xs(&knee), xs(&aiperf_knee));
    for k in [
        "baseline_concurrency",
        "threshold_pct",
        "swept_metric",
        "stat",
        "swept_param",
    ] {
        assert_eq!(knee[k], aiperf_knee[k], "{k}");
    }
    assert!(stdout.contains(&format!(
        "Search Recipe Derived File: {}",
        agg.join("knee.json").display()
    )));
    for name in ["post-missing-param", "post-unknown-handler"] {
        let (dir, _, stderr) = run(name);
        let agg = dir.path().join("sweep_aggregate");
        assert!(
            agg.join("profile_export_aiperf_sweep.json").is_file(),
            "{name}"
        );
        let ours = std::fs::read_to_string(agg.join("post_process_errors.json")).unwrap();
        let theirs = std::fs::read_to_string(fixture.join(format!("{name}.errors.json"))).unwrap();
        assert_eq!(ours, theirs, "{name}");
        assert!(stderr.contains("post-process handler"), "{name}: {stderr}");
    }
}

/// The AIPerf `config validate` result stored beside each file: `(exit code, message)`, the
/// message being the line that says why (pydantic's `[type=…]` tail cut off).
fn aiperf_verdict(out: &str) -> (i32, String) {
    let code = out
        .lines()
        .rev()
        .find_map(|l| {
            (l.strip_prefix("rc=").or_else(|| l.strip_prefix("exit ")))
                .and_then(|c| c.trim().parse().ok())
        })
        .expect("an exit line");
    let message = out
        .lines()
        .nth(2)
        .map(|l| {
            // Up to pydantic's `[type=…]`, and to a pointer into AIPerf's own docs (ringperf
            // names its own).
            let l = l.trim().split(" [type=").next().unwrap_or("");
            l.split(" See docs/").next().unwrap_or("").to_string()
        })
        .unwrap_or_default();
    (code, message)
}

/// AIPerf 0.13's phase rules, on the files AIPerf itself validated
/// (tests/data/aiperf-multiphase/validate/, README there): ringperf's exit code is AIPerf's and a
/// refusal carries AIPerf's reason.
#[test]
fn phase_lists_validate_as_aiperf_validated_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-multiphase/validate");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 29, "{files:?}");
    for f in files {
        let stem = f.file_stem().unwrap().to_str().unwrap().to_string();
        let (code, message) =
            aiperf_verdict(&std::fs::read_to_string(f.with_extension("out")).unwrap());
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stem}: {err}");
        if code != 0 {
            assert!(
                err.contains(&message),
                "{stem}: AIPerf said {message:?}, ringperf {err}"
            );
        }
    }
}

/// The 27 templates AIPerf 0.13 bundles, generated by `aiperf config init -t NAME -m mock-model
/// -u http://127.0.0.1:8765` with AIPerf's `config validate` and `config expand` outputs
/// (tests/data/aiperf-templates/, README there). ringperf validates each one AIPerf validates,
/// except those it cannot run yet, each refused for its reason (docs/config-files.md lists them);
/// a template that starts to validate fails this test until it leaves the list.
#[test]
fn aiperfs_templates_validate_as_aiperf_validated_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-templates");
    let names = std::fs::read_to_string(dir.join("names.txt")).unwrap();
    let not_yet: [(&str, &str); 0] = [];
    assert_eq!(names.lines().count(), 27);
    for name in names.lines() {
        let f = dir.join(format!("{name}.yaml"));
        let (code, _) = aiperf_verdict(
            &std::fs::read_to_string(dir.join(format!("{name}.validate.txt"))).unwrap(),
        );
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        let err = text(&out.stderr);
        match not_yet.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                assert_eq!(code, 0, "{name}");
                assert_eq!(out.status.code(), Some(1), "{name}");
                assert!(err.contains(why), "{name}: {err}");
            }
            None => {
                assert_eq!(out.status.code(), Some(code), "{name}: {err}");
                // A refusal is AIPerf's: `sweep_distributions`, whose sweep writes a
                // `datasets.…` path beside the `dataset:` shorthand.
                if code != 0 {
                    assert!(
                        err.contains("'dataset' cannot be used with 'datasets'"),
                        "{name}: {err}"
                    );
                }
            }
        }
    }
}

/// A closed-loop warmup before an open-loop profiling phase (AIPerf's `warmup_profiling`
/// template's shape, which no `--warmup-*` flag expresses): the mock's truth log shows four
/// requests in flight at once during the warmup, and the profiling phase's requests one at a
/// time, a constant 50 ms apart; the warmup's records are marked and left out of the results.
#[test]
fn a_closed_loop_warmup_runs_before_an_open_loop_profiling_phase() {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: std::time::Duration::from_millis(20),
        itl: std::time::Duration::from_millis(1),
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(4),
        truth_log: true,
        ..Default::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("phases.yaml");
    std::fs::write(
        &f,
        format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  dataset: {{type: synthetic, entries: 8, prompts: {{isl: 16, osl: 4}}}}\n  tokenizer: {{name: builtin}}\n  phases:\n    - {{name: warmup, type: concurrency, concurrency: 4, requests: 12}}\n    - {{name: profiling, type: constant, rate: 20, requests: 8}}\n",
            server.addr
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = ringperf(&[
        "profile",
        "-f",
        f.to_str().unwrap(),
        "--artifact-dir",
        out_dir.to_str().unwrap(),
        "--export-level",
        "records",
        "--ui",
        "none",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut truth = common::truth_of(&server, 20);
    assert_eq!(truth.len(), 20);
    truth.sort_by_key(|e| e.arrival_ns);
    let in_flight_at = |t: u64, set: &[ringperf_mock::mock::TruthEntry]| {
        set.iter()
            .filter(|e| e.arrival_ns <= t && t < e.end_ns)
            .count()
    };
    let (warm, prof) = truth.split_at(12);
    let most = |set: &[ringperf_mock::mock::TruthEntry]| {
        set.iter()
            .map(|e| in_flight_at(e.arrival_ns, set))
            .max()
            .unwrap()
    };
    // Four slots: four in flight, never more (three when a loaded machine starts a slot late).
    assert!(
        (3..=4).contains(&most(warm)),
        "the warmup's closed loop at 4"
    );
    assert!(
        prof[0].arrival_ns >= warm.iter().map(|e| e.end_ns).max().unwrap(),
        "profiling starts once the warmup is answered"
    );
    // 20 ms answers 50 ms apart do not overlap, unless a send is late (a loaded machine) and
    // the absolute schedule catches up with the next one: never more than two, never four.
    assert!(most(prof) <= 2, "20 ms answers 50 ms apart");
    let records = common::read_jsonl(&out_dir.join("profile_export.jsonl"));
    // A constant 20 per second: each request meant to go 50 ms after the one before.
    let mut intended: Vec<u64> = (records.iter())
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .map(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap())
        .collect();
    intended.sort_unstable();
    for w in intended.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap.abs_diff(50_000_000) < 1_000,
            "{gap} ns between intended sends"
        );
    }
    let phase_of = |r: &Value| {
        r["metadata"]["benchmark_phase"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        records.iter().filter(|r| phase_of(r) == "warmup").count(),
        12
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| phase_of(r) == "profiling")
            .count(),
        8
    );
    let summary = common::read_json(&out_dir.join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(8.0));
    let phases = &summary["input_config"]["phases"];
    assert_eq!(phases[0]["type"], "concurrency");
    assert_eq!(phases[0]["concurrency"], 4);
    assert_eq!(phases[0]["exclude_from_results"], true);
    assert_eq!(phases[1]["type"], "constant");
}

/// Several profiling phases: the first is the flags' phase, the later one a phase of its own (a
/// profiling flag beside them is refused: `phase_orders.rs`), a synthetic dataset without
/// `entries` has AIPerf's 100, and a split run is refused naming the second phase
/// (`ringperf merge` joins one profiling phase).
#[test]
fn a_file_of_several_phases_is_read_in_order_and_refuses_shards() {
    let file = format!(
        "{}/tests/data/aiperf-multiphase/multiphase.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let argv: Vec<String> = ["ringperf", "profile", "-f", &file]
        .map(str::to_owned)
        .to_vec();
    let plan = file_plan(&argv);
    let cfg = Config::from_plan(&plan, false).expect("valid");
    assert!(
        matches!(cfg.profiling.load, ringperf::config::Load::Rate { rate, .. } if rate == 20.0)
    );
    assert_eq!(cfg.profiling_name, "poisson_20");
    let later: Vec<&str> = cfg.phases_after.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(later, ["constant_40"]);
    assert_eq!(cfg.dataset.entries, 100);
    let mut split = argv.clone();
    split.extend(
        [
            "--shard-count",
            "2",
            "--shard-index",
            "0",
            "--start-at",
            "1900000000000000000",
        ]
        .map(str::to_owned),
    );
    let e = Config::from_plan(&file_plan(&split), false).expect_err("refused");
    assert!(
        e.message()
            .contains("benchmark.phases.constant_40: a profiling phase beyond one warmup and one profiling phase cannot run split"),
        "{e}"
    );
}

/// `--warmup-*` flags beside a file whose warmup is a phase of its own set that warmup's keys,
/// as AIPerf's overlay does (its echo shows them there): AIPerf's `warmup_profiling` template, a
/// closed-loop warmup before a gamma phase, scaled down from the command line.
#[test]
fn warmup_flags_beside_a_file_set_its_own_warmup() {
    let file = format!(
        "{}/tests/data/aiperf-templates/warmup_profiling.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let argv: Vec<String> = [
        "ringperf",
        "profile",
        "-f",
        &file,
        "--warmup-request-count",
        "4",
        "--warmup-concurrency",
        "2",
    ]
    .map(str::to_owned)
    .to_vec();
    let plan = file_plan(&argv);
    let cfg = Config::from_plan(&plan, false).expect("valid");
    let w = cfg.warmup.as_ref().expect("a warmup");
    assert_eq!(w.load, ringperf::config::Load::Concurrency(2));
    assert_eq!(w.request_count, Some(4));
    let ic = cfg.input_config();
    assert_eq!(ic["phases"][0]["type"], "concurrency");
    assert_eq!(ic["phases"][0]["requests"], 4);
    assert_eq!(ic["phases"][0]["concurrency"], 2);
    assert_eq!(ic["phases"][1]["type"], "gamma");
    assert!(
        cfg.cli_command.contains("--warmup-request-count 4"),
        "{}",
        cfg.cli_command
    );
}

/// AIPerf's `user_files` template run on the mock: the three files it asks for are written into
/// the artifact directory as AIPerf 0.13 wrote them for the same file
/// (tests/data/aiperf-user-files/, README there), byte for byte but for the mock's URL and the
/// directory.
#[test]
fn user_files_are_written_as_aiperf_writes_them() {
    let fixture = Path::new("tests/data/aiperf-user-files");
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(4),
        ..Default::default()
    })
    .expect("mock starts");
    let url = format!("http://{}", server.addr);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let config = std::fs::read_to_string(fixture.join("user_files.yaml"))
        .unwrap()
        .replace("http://127.0.0.1:18931", &url)
        .replace("/tmp/uf/run", root);
    let f = tmp.path().join("user_files.yaml");
    std::fs::write(&f, config).unwrap();
    let out = ringperf(&[
        "profile",
        "-f",
        f.to_str().unwrap(),
        "--tokenizer",
        "builtin",
        "--request-count",
        "4",
        "--warmup-request-count",
        "2",
        "--concurrency",
        "2",
        "--num-dataset-entries",
        "4",
        "--ui",
        "none",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run_dir = Path::new(root).join("user_files_demo/1733497000");
    for name in ["input_config.json", "meta/run.yaml", "README.md"] {
        let want = std::fs::read_to_string(fixture.join("written").join(name))
            .unwrap()
            .replace("http://127.0.0.1:18931", &url)
            .replace("/tmp/uf/run", root);
        let got = std::fs::read_to_string(run_dir.join(name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
    let plan = common::read_json(&run_dir.join("plan.json"));
    let files = &plan["file_only"]["user_files"];
    assert_eq!(files["files"][1]["format"], "yaml");
    assert_eq!(files["variables"]["total_concurrency"], 128);
    // Echoed as AIPerf echoes them: unrendered, the format resolved.
    let summary = common::read_json(&run_dir.join("profile_export_aiperf.json"));
    let echoed = &summary["input_config"]["artifacts"]["user_files"];
    assert_eq!(echoed[0]["format"], "json");
    assert_eq!(echoed[0]["content"]["run"]["epoch"], "{{ epoch }}");
    assert_eq!(echoed[2]["path"], "README.md");
}

/// The request bodies the mock has received, in arrival order.
fn bodies_received(server: &ringperf_mock::mock::MockServer) -> Vec<Value> {
    let mut entries = server.truth().entries();
    entries.sort_by_key(|e| e.arrival_ns);
    entries
        .iter()
        .map(|e| serde_json::from_slice(e.request_body.as_deref().expect("recorded")).unwrap())
        .collect()
}

/// AIPerf's `inline_dataset` template (single_turn records) and its commented multi_turn
/// variant, run on the mock one request at a time: the bodies sent carry exactly the records'
/// prompts, in order, and are the bodies the equivalent JSONL file sends through
/// `--input-file`.
#[test]
fn inline_records_send_what_the_equivalent_file_sends() {
    let dir = tempfile::tempdir().unwrap();
    let template =
        std::fs::read_to_string("tests/data/aiperf-templates/inline_dataset.yaml").unwrap();
    let multi = "benchmark:\n  model: mock-model\n  endpoint: {url: http://127.0.0.1:8765, type: chat, streaming: true}\n  dataset:\n    type: file\n    format: multi_turn\n    records:\n      - session_id: chat_1\n        turns:\n          - {text: \"What is machine learning?\"}\n          - {text: \"Can you give me a concrete example?\"}\n      - session_id: chat_2\n        turns:\n          - {text: \"Explain neural networks.\"}\n          - {text: \"How do they differ from traditional algorithms?\"}\n          - {text: \"Which architecture for image classification?\"}\n  phases: {type: concurrency, concurrency: 1, requests: 5}\n";
    let cases = [
        (
            template.as_str(),
            "single_turn",
            "{\"text\": \"What is machine learning?\"}\n{\"text\": \"Explain GANs in two sentences.\", \"output_length\": 200}\n{\"text\": \"How does backpropagation work?\"}\n{\"text\": \"What are transformers?\"}\n{\"text\": \"Define reinforcement learning.\"}\n",
            vec![
                "What is machine learning?",
                "Explain GANs in two sentences.",
                "How does backpropagation work?",
                "What are transformers?",
                "Define reinforcement learning.",
            ],
        ),
        (
            multi,
            "multi_turn",
            "{\"session_id\": \"chat_1\", \"turns\": [{\"text\": \"What is machine learning?\"}, {\"text\": \"Can you give me a concrete example?\"}]}\n{\"session_id\": \"chat_2\", \"turns\": [{\"text\": \"Explain neural networks.\"}, {\"text\": \"How do they differ from traditional algorithms?\"}, {\"text\": \"Which architecture for image classification?\"}]}\n",
            vec![
                "What is machine learning?",
                "Can you give me a concrete example?",
                "Explain neural networks.",
                "How do they differ from traditional algorithms?",
                "Which architecture for image classification?",
            ],
        ),
    ];
    for (yaml, format, jsonl, prompts) in cases {
        let inline_server = common::recording_mock(4);
        let url = format!("http://{}", inline_server.addr);
        let f = dir.path().join(format!("{format}.yaml"));
        std::fs::write(&f, yaml.replace("http://127.0.0.1:8765", &url)).unwrap();
        let out = ringperf(&[
            "profile",
            "-f",
            f.to_str().unwrap(),
            "--tokenizer",
            "builtin",
            "--request-count",
            "5",
            "--concurrency",
            "1",
            "--artifact-dir",
            dir.path()
                .join(format!("{format}-inline"))
                .to_str()
                .unwrap(),
            "--ui",
            "none",
        ]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        let inline = bodies_received(&inline_server);
        let last_user = |b: &Value| {
            b["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let sent: Vec<String> = inline.iter().map(last_user).collect();
        assert_eq!(sent, prompts, "{format}");
        let file_server = common::recording_mock(4);
        let file = dir.path().join(format!("{format}.jsonl"));
        std::fs::write(&file, jsonl).unwrap();
        let out = ringperf(&[
            "profile",
            "-m",
            "mock-model",
            "--url",
            &format!("http://{}", file_server.addr),
            "--endpoint-type",
            "chat",
            "--streaming",
            "--input-file",
            file.to_str().unwrap(),
            "--custom-dataset-type",
            format,
            "--tokenizer",
            "builtin",
            "--request-count",
            "5",
            "--concurrency",
            "1",
            "--artifact-dir",
            dir.path().join(format!("{format}-file")).to_str().unwrap(),
            "--ui",
            "none",
        ]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert_eq!(bodies_received(&file_server), inline, "{format}");
        if format == "single_turn" {
            assert_eq!(
                inline[1]["max_completion_tokens"], 200,
                "the record's output_length"
            );
        }
    }
}

/// AIPerf's `env_var_production` lengths (`isl` with two log-normal `peaks` weighted 70/30,
/// `osl` log-normal `{mean, median}`) run as AIPerf 0.13 runs them: every prompt has the
/// distribution's expected value, 0.7 × 256 + 0.3 × 2048 = 793.6, truncated to 793 tokens, and
/// asks for 256 (AIPerf 0.13, run on the template against the mock, sent the same: 793 and
/// 256 on every request).
#[test]
fn lognormal_and_multimodal_lengths_run_at_their_expected_value_as_in_aiperf() {
    let server = common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("lengths.yaml");
    std::fs::write(
        &f,
        format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  tokenizer: {{name: builtin}}\n  dataset:\n    type: synthetic\n    entries: 3\n    prompts:\n      isl:\n        peaks:\n          - {{mean: 256, median: 214, weight: 70}}\n          - {{mean: 2048, median: 1891, weight: 30}}\n      osl: {{mean: 256, median: 226}}\n  phases: {{type: concurrency, concurrency: 1, requests: 3}}\n",
            server.addr
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = ringperf(&[
        "profile",
        "-f",
        f.to_str().unwrap(),
        "--artifact-dir",
        out_dir.to_str().unwrap(),
        "--ui",
        "none",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bodies = bodies_received(&server);
    assert_eq!(bodies.len(), 3);
    for b in &bodies {
        assert_eq!(b["max_completion_tokens"], 256, "{b}");
    }
    for r in common::read_jsonl(&out_dir.join("profile_export.jsonl")) {
        assert_eq!(r["metrics"]["input_sequence_length"]["value"], 793, "{r}");
    }
}

/// `--no-gpu-telemetry` / `--no-server-metrics` beside a file that lists URLs for them turn the
/// collection off, as AIPerf's overlay does (the pair on the command line stays refused).
#[test]
fn no_collection_flags_beside_a_file_turn_its_urls_off() {
    let file = format!(
        "{}/tests/data/aiperf-templates/gpu_telemetry.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let argv: Vec<String> = ["ringperf", "profile", "-f", &file, "--no-gpu-telemetry"]
        .map(str::to_owned)
        .to_vec();
    let cfg = Config::from_plan(&file_plan(&argv), false).expect("valid");
    assert!(!cfg.gpu_telemetry.enabled);
    let file = format!(
        "{}/tests/data/aiperf-templates/multi_url_load_balancing.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let argv: Vec<String> = ["ringperf", "profile", "-f", &file, "--no-server-metrics"]
        .map(str::to_owned)
        .to_vec();
    let cfg = Config::from_plan(&file_plan(&argv), false).expect("valid");
    assert!(!cfg.server_metrics.enabled);
}

/// A file's duration phase without `grace_period` has no grace, as in AIPerf 0.13 (its run of
/// such a file echoed none and cancelled what was in flight at the end): none echoed, and a
/// request still waiting for its first token when the duration ends is cut at once (the mock
/// takes 3 s to the first token), not waited for 30 s. `--benchmark-grace-period`
/// beside the file gives it one.
#[test]
fn a_files_duration_phase_without_a_grace_period_cuts_at_its_end() {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: std::time::Duration::from_secs(3),
        truth_log: true,
        ..Default::default()
    })
    .expect("mock starts");
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("d.yaml");
    std::fs::write(
        &file,
        "benchmark:\n  model: mock-model\n  endpoint:\n    url: ${URL}\n    streaming: true\n  \
         dataset:\n    type: synthetic\n    entries: 4\n    prompts:\n      isl: 16\n      osl: 4\n  \
         tokenizer:\n    name: builtin\n  phases:\n    - {name: profiling, type: concurrency, \
         concurrency: 1, duration: 0.5}\n  artifacts:\n    dir: ${OUT}\n",
    )
    .unwrap();
    let plan = |extra: &[&str]| {
        let mut argv: Vec<String> = ["ringperf", "profile", "-f", file.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(extra.iter().map(|s| s.to_string()));
        // The variables the file names.
        let env = |k: &str| match k {
            "URL" => Some(format!("http://{}", server.addr)),
            "OUT" => Some(root.path().join("out").display().to_string()),
            _ => None,
        };
        let read = invocation::read(&argv, &env).unwrap();
        read.plan(&argv).unwrap().0
    };
    let ic = input_config(&plan(&[]));
    assert!(
        ic["phases"][0].get("grace_period").is_none(),
        "{}",
        ic["phases"][0]
    );
    let ic = input_config(&plan(&["--benchmark-grace-period", "5"]));
    assert_eq!(ic["phases"][0]["grace_period"], 5.0);
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f", file.to_str().unwrap(), "--ui", "none"])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", root.path().join("out"))
        .output()
        .expect("runs");
    let records = common::read_jsonl(&root.path().join("out/profile_export.jsonl"));
    assert_eq!(records.len(), 1, "{}", text(&out.stderr));
    assert_eq!(
        records[0]["error"]["message"],
        "Request was cancelled at the end of the grace period"
    );
    // Cut before its first token could come (3 s after it reached the mock).
    let m = &records[0]["metadata"];
    let took = m["request_end_ns"].as_u64().unwrap() - m["request_start_ns"].as_u64().unwrap();
    assert!(took < 2_500_000_000, "waited {took} ns");
    assert_eq!(
        common::truth_of(&server, 1).len(),
        1,
        "the request reached the mock"
    );
}

/// Every template run AIPerf 0.13 made (tests/data/aiperf-template-runs: its bundled templates,
/// scaled down with flags beside `--config`, in the environment its command names): ringperf's
/// `input_config` for the same command and environment equals AIPerf's, key for key in both
/// directions. Runs of several (a multi-run) store one per run and are compared where they run
/// (tests/it/template_runs.rs).
#[test]
fn each_template_run_echoes_aiperfs_input_config() {
    let runs = Path::new("tests/data/aiperf-template-runs");
    let mut names: Vec<String> = std::fs::read_dir(runs)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("input_config.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 20, "{names:?}");
    for name in &names {
        let run = crate::template_runs::aiperf_run(name);
        let mut argv = vec!["ringperf".to_string(), "profile".into()];
        argv.extend(run.args.iter().cloned());
        let env = |k: &str| run.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let read = invocation::read(&argv, &env).unwrap_or_else(|e| panic!("{argv:?}: {e:?}"));
        let Some((plan, _)) = read.plan(&argv) else {
            panic!("{argv:?}: not a profile command line")
        };
        let text = std::fs::read_to_string(runs.join(name).join("input_config.json")).unwrap();
        let aiperf: Value = serde_json::from_str(&text).unwrap();
        let ours = input_config(&plan);
        let (mut a, mut r) = (Vec::new(), Vec::new());
        common::leaves("", &aiperf, &mut a);
        common::leaves("", &ours, &mut r);
        for (p, v) in &a {
            match r.iter().find(|(q, _)| q == p) {
                Some((_, w)) => assert!(w == v, "{name}{p}: AIPerf {v}, ringperf {w}"),
                None => panic!("{name}{p}: AIPerf {v}, ringperf nothing"),
            }
        }
        for (p, w) in &r {
            assert!(
                a.iter().any(|(q, _)| q == p),
                "{name}{p}: ringperf {w}, AIPerf nothing"
            );
        }
    }
}

/// A scenario sweep (`sweep: {type: scenarios}`): each run merged over the file, one variation
/// each. The scenario's value beats a flag given beside the file for the same field (AIPerf
/// merges the flags into the file first), a flag on a field no scenario sets reaches every
/// variation, and each variation sends the prompts its scenario asks for.
#[test]
fn a_scenario_sweep_runs_each_scenario_over_the_file() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("scenarios.yaml");
    std::fs::write(
        &f,
        format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  dataset: {{type: synthetic, entries: 8, prompts: {{isl: 24, osl: 2}}}}\n  tokenizer: {{name: builtin}}\n  phases:\n    - {{name: profiling, type: concurrency, concurrency: 1, requests: 20}}\nsweep:\n  type: scenarios\n  runs:\n    - name: short\n      benchmark:\n        dataset: {{prompts: {{isl: 16}}}}\n    - name: long\n      benchmark:\n        dataset: {{prompts: {{isl: 40}}}}\n        phases: [{{name: profiling, concurrency: 2}}]\n",
            server.addr
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = ringperf(&[
        "profile",
        "-f",
        f.to_str().unwrap(),
        "--isl",
        "64",
        "--request-count",
        "3",
        "--artifact-dir",
        out_dir.to_str().unwrap(),
        "--ui",
        "none",
        "--no-server-metrics",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (name, isl, concurrency) in [("short", 16, 1), ("long", 40, 2)] {
        let d = out_dir.join(name);
        let records = common::read_jsonl(&d.join("profile_export.jsonl"));
        assert_eq!(records.len(), 3, "{name}: --request-count reaches it");
        for r in &records {
            assert_eq!(
                r["metrics"]["input_sequence_length"]["value"], isl,
                "{name}"
            );
        }
        let doc = common::read_json(&d.join("profile_export_aiperf.json"));
        let phase = &doc["input_config"]["phases"][0];
        assert_eq!(phase["concurrency"], concurrency, "{name}");
    }
    let sweep =
        common::read_json(&out_dir.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    let params = &sweep["metadata"]["sweep_parameters"][0];
    assert_eq!(params["name"], "benchmark");
    assert_eq!(
        params["values"][1],
        "{\"datasets\":[{\"name\":\"default\",\"prompts\":{\"isl\":40}}],\"phases\":[{\"concurrency\":2,\"name\":\"profiling\"}]}"
    );
    // Every request the mock saw, 3 per scenario.
    assert_eq!(common::truth_of(&server, 6).len(), 6);
}

/// A ramp's `strategy` (AIPerf's three curves) is read and echoed as the file names it, and runs
/// linearly, as AIPerf 0.13's runner ramps every value (said once per ramp); a curve AIPerf does
/// not have is refused with its message.
#[test]
fn a_ramps_curve_is_echoed_as_given_and_runs_linearly_as_in_aiperf() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ramp.yaml");
    let yaml = "benchmark:\n  model: m\n  endpoint: {url: 'http://127.0.0.1:1', type: chat}\n  dataset: {type: synthetic, entries: 10, prompts: {isl: 16, osl: 8}}\n  phases:\n    - {name: warmup, type: concurrency, concurrency: 4, requests: 4, concurrencyRamp: {duration: 1, strategy: poisson}}\n    - {name: profiling, type: poisson, rate: 10, requests: 8, rate_ramp: {duration: 2, strategy: exponential}}\n";
    std::fs::write(&f, yaml).unwrap();
    let argv: Vec<String> = ["ringperf", "profile", "-f", f.to_str().unwrap()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let plan = file_plan(&argv);
    let cfg = Config::from_plan(&plan, false).unwrap();
    let ic = cfg.input_config();
    assert_eq!(
        ic["phases"][1]["rate_ramp"],
        serde_json::json!({"duration": 2.0, "strategy": "exponential"})
    );
    assert_eq!(ic["phases"][0]["concurrency_ramp"]["strategy"], "poisson");
    // Run as the linear ramp of the same duration.
    assert_eq!(
        cfg.profiling.timing.rate_ramp,
        Some(std::time::Duration::from_secs(2))
    );
    let said: Vec<&String> = cfg
        .warnings
        .iter()
        .filter(|w| w.contains("runs linearly, as AIPerf 0.13"))
        .collect();
    assert_eq!(said.len(), 2, "{:?}", cfg.warnings);
    std::fs::write(&f, yaml.replace("strategy: exponential", "strategy: cubic")).unwrap();
    let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("rate_ramp.strategy: Input should be 'exponential', 'linear' or 'poisson'"),
        "{}",
        text(&out.stderr)
    );
}

/// `--warmup-*` flags beside a file whose one warmup comes after its profiling phase set that
/// warmup, as AIPerf's overlay sets the first warmup by its place; they make no warmup of their
/// own before profiling.
#[test]
fn warmup_flags_beside_a_trailing_warmup_set_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cool.yaml");
    std::fs::write(
        &file,
        "benchmark:\n  model: m\n  endpoint: {url: 'http://127.0.0.1:9'}\n  dataset: {type: synthetic, prompts: {isl: 8, osl: 2}}\n  phases:\n    - {name: profiling, type: concurrency, concurrency: 2, requests: 6}\n    - {name: w_end, kind: warmup, type: concurrency, concurrency: 1, requests: 2}\n",
    )
    .unwrap();
    let argv: Vec<String> = [
        "ringperf",
        "profile",
        "-f",
        file.to_str().unwrap(),
        "--warmup-request-count",
        "5",
    ]
    .map(str::to_owned)
    .to_vec();
    let cfg = Config::from_plan(&file_plan(&argv), false).expect("valid");
    assert!(cfg.warmup.is_none());
    let later: Vec<(&str, bool, Option<u64>)> = (cfg.phases_after.iter())
        .map(|p| (p.name.as_str(), p.warmup, p.config.request_count))
        .collect();
    assert_eq!(later, [("w_end", true, Some(5))]);
}
