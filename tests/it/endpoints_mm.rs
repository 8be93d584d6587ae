//! The endpoint types of issue #25 beside AIPerf 0.13: the same command against the same mock
//! gives the same metric keys and units in `profile_export_aiperf.json`, the same metric rows in
//! `profile_export_aiperf.csv`, and a first request body of the same shape in `inputs.json`
//! (`tests/data/aiperf-endpoints-mm/README.md`).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};
use serde_json::Value;

use crate::common::read_json;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-endpoints-mm"
);

/// The mock as the fixtures' runs had it.
fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Runs `ringperf` with AIPerf's `argv` (its URL and artifact directory replaced).
fn profile(server: &MockServer, argv: &[Value], dir: &Path) {
    let mut args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.as_str().expect("argv strings").to_owned())
        .collect();
    for (flag, value) in [
        ("--url", format!("http://{}", server.addr)),
        ("--artifact-dir", dir.display().to_string()),
    ] {
        let at = args.iter().position(|a| a == flag).expect(flag);
        args[at + 1] = value;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(&args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `(key, unit)` of every metric object of a summary.
fn metrics(doc: &Value) -> BTreeSet<(String, String)> {
    doc.as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.get("unit")?.as_str()?.to_owned())))
        .collect()
}

/// The first cell of every non-empty CSV row, up to the GPU telemetry section ringperf writes
/// even without telemetry (AIPerf writes none; see the report of issue #25).
fn csv_rows(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(',').next().unwrap_or_default().to_owned())
        .take_while(|c| c != "Endpoint")
        .filter(|c| !c.is_empty())
        .collect()
}

/// Runs the fixture `name`'s command against `server` into `dir` and checks the metric keys
/// and units of `profile_export_aiperf.json` and the CSV's metric rows against AIPerf's;
/// returns the fixture and ringperf's summary.
fn keys_and_rows_as_aiperf(server: &MockServer, name: &str, dir: &Path) -> (Value, Value) {
    let fixture = read_json(&Path::new(DIR).join(format!("{name}.json")));
    profile(server, fixture["argv"].as_array().unwrap(), dir);
    let ours = read_json(&dir.join("profile_export_aiperf.json"));
    let theirs: BTreeSet<(String, String)> = fixture["json_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect();
    assert_eq!(metrics(&ours), theirs, "{name}: JSON metric keys and units");
    let csv = std::fs::read_to_string(dir.join("profile_export_aiperf.csv")).unwrap();
    let rows: Vec<String> = fixture["csv_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(csv_rows(&csv), rows, "{name}: CSV rows");
    (fixture, ours)
}

#[test]
fn same_keys_and_bodies_as_aiperf() {
    let server = mock();
    for name in [
        "image_generation",
        "image_generation_streaming",
        "image_retrieval",
        "solido_rag",
        "solido_rag_streaming",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (fixture, _) = keys_and_rows_as_aiperf(&server, name, dir.path());
        let inputs = read_json(&dir.path().join("inputs.json"));
        let ours = inputs["data"][0]["payloads"][0]
            .as_object()
            .unwrap()
            .clone();
        let theirs = fixture["payload"].as_object().unwrap();
        let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&ours), keys(theirs), "{name}: body keys in order");
        for (k, v) in theirs {
            match k.as_str() {
                "prompt" => assert!(ours[k].as_str().is_some_and(|p| !p.is_empty())),
                "query" => {
                    let list = ours[k].as_array().expect("query is a list");
                    assert_eq!(list.len(), v.as_array().unwrap().len(), "{name}");
                    assert!(
                        list.iter()
                            .all(|q| q.as_str().is_some_and(|q| !q.is_empty()))
                    );
                }
                // Image retrieval: as many images, each `{"type":"image_url","url":<PNG URI>}`
                // (the pixels are each tool's own noise).
                "input" => {
                    let (ours, theirs) = (ours[k].as_array().unwrap(), v.as_array().unwrap());
                    assert_eq!(ours.len(), theirs.len(), "{name}");
                    for (o, t) in ours.iter().zip(theirs) {
                        assert_eq!(o["type"], t["type"]);
                        let prefix = "data:image/png;base64,";
                        assert!(t["url"].as_str().unwrap().starts_with(prefix));
                        assert!(o["url"].as_str().unwrap().starts_with(prefix));
                    }
                }
                _ => assert_eq!(&ours[k], v, "{name}: body field {k}"),
            }
        }
    }
}

/// Chat with synthetic audio, beside AIPerf 0.13's run (`chat_audio.json`): the same metric keys
/// and units (`audio_duration` and `rtfx` among them, as AIPerf's chat `supports_audio`) and the
/// same CSV rows; each record's `rtfx` is its `audio_duration` over its latency in seconds.
#[test]
fn chat_audio_has_aiperfs_audio_metrics() {
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    let (_, ours) = keys_and_rows_as_aiperf(&server, "chat_audio", dir.path());
    // 0.25 s at 16 kHz is 4000 samples exactly: every clip is 0.25 s long.
    assert_eq!(ours["audio_duration"]["avg"], 0.25);
    let records = crate::common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 6);
    for r in &records {
        let m = &r["metrics"];
        let latency_s = m["request_latency"]["value"].as_f64().unwrap() / 1e3;
        let rtfx = m["rtfx"]["value"].as_f64().unwrap();
        assert!((rtfx - 0.25 / latency_s).abs() < 1e-9 * rtfx, "{m}");
    }
}

/// A body with its free texts and media bytes taken out: every key and its order, the part
/// types, roles, formats and media types, and a data URI's header (`data:image/png;base64`); a
/// base64 source's `data` and a clip's `data` become `<base64>`, any other string `<text>`.
fn skeleton(key: &str, v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), skeleton(k, v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| skeleton(key, v)).collect()),
        Value::String(s) if s.starts_with("data:") => {
            Value::from(s.split(',').next().unwrap_or_default())
        }
        Value::String(_) if key == "data" => Value::from("<base64>"),
        Value::String(s) if ["model", "role", "type", "format", "media_type"].contains(&key) => {
            Value::from(s.as_str())
        }
        Value::String(_) => Value::from("<text>"),
        other => other.clone(),
    }
}

/// Responses and Anthropic Messages with synthetic images (and audio on Responses), beside
/// AIPerf 0.13's runs (`responses_media.json`, `messages_media.json`): the same metric keys and
/// units (the image metrics; `audio_duration` and `rtfx` on Responses), the same CSV rows and a
/// first body of the same skeleton (part types and order, image blocks, URI headers).
#[test]
fn responses_and_messages_media_as_aiperf() {
    let server = mock();
    for name in ["responses_media", "messages_media"] {
        let dir = tempfile::tempdir().unwrap();
        let (fixture, _) = keys_and_rows_as_aiperf(&server, name, dir.path());
        let inputs = read_json(&dir.path().join("inputs.json"));
        assert_eq!(
            skeleton("", &inputs["data"][0]["payloads"][0]),
            skeleton("", &fixture["payload"]),
            "{name}: body skeleton"
        );
    }
}
