//! The multipart/form-data endpoint types (`image-edit`, `audio-transcription`) against the mock:
//! what the mock parsed of each body (field names in order, values, the file's name, type and
//! bytes, what its header says) is what ringperf was asked to send and says it sent
//! (`inputs.json`); the metric keys are AIPerf 0.13's for the same command
//! (`tests/data/aiperf-endpoints-mm/`); bad input is one clear setup error.

use std::collections::BTreeSet;
use std::path::Path;

use ringperf_mock::mock::TruthEntry;
use ringperf_wire::http::form_parse::{FormParser, ParsedPart};
use serde_json::Value;

use crate::common::{profile_binary, read_json, read_jsonl, recording_mock};

/// The parts of a form body, read with the mock's parser; the boundary is the body's first
/// delimiter line.
fn parts(body: &[u8]) -> Vec<ParsedPart> {
    let line_end = body.windows(2).position(|w| w == b"\r\n").unwrap();
    let boundary = std::str::from_utf8(&body[2..line_end]).unwrap();
    let mut parser = FormParser::new(boundary, body.len()).unwrap();
    parser.feed(body).unwrap();
    parser.finish().unwrap()
}

fn text(p: &ParsedPart) -> String {
    String::from_utf8(p.data.clone()).unwrap()
}

fn b64_decode(s: &str) -> Vec<u8> {
    ringperf_workload::workload::media::base64_decode(s.as_bytes()).expect("base64")
}

/// The first payload of every conversation of `inputs.json`.
fn payloads(dir: &Path) -> Vec<Value> {
    let inputs = read_json(&dir.join("inputs.json"));
    inputs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["payloads"][0].clone())
        .collect()
}

fn entries(server: &ringperf_mock::mock::MockServer, path: &str) -> Vec<TruthEntry> {
    let all = server.truth().entries();
    assert!(
        all.iter().all(|e| e.path == path),
        "every request to {path}"
    );
    all
}

#[test]
fn image_edit_uploads_the_asked_image_and_fields() {
    let server = recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let flags = "--endpoint-type image-edit --isl 16 --image-width-mean 32 --image-height-mean 24 \
                 --image-format png --extra-inputs size:256x256 --extra-inputs mask:x";
    let flags: Vec<&str> = flags.split_whitespace().collect();
    profile_binary(&server, dir.path(), 5, &flags, &[]);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"], 5.0);
    assert!(summary.get("error_request_count").is_none(), "{summary}");

    let sent = entries(&server, "/v1/images/edits");
    assert_eq!(sent.len(), 5);
    let mut received = BTreeSet::new();
    for e in &sent {
        let parts = parts(e.request_body.as_deref().unwrap());
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        // `mask` is the endpoint's own: AIPerf drops it from the extras.
        assert_eq!(
            names,
            ["prompt", "model", "response_format", "n", "image", "size"]
        );
        assert_eq!(
            [1, 2, 3, 5].map(|i| text(&parts[i])),
            ["mock-model", "b64_json", "1", "256x256"].map(String::from)
        );
        assert!(parts[..4].iter().all(|p| p.filename.is_none()));
        assert_eq!(parts[4].filename.as_deref(), Some("image.png"));
        assert_eq!(parts[4].content_type.as_deref(), Some("image/png"));
        // The mock's own reading of the file's header: the asked size and format.
        assert_eq!(e.media.len(), 1);
        let m = &e.media[0];
        assert_eq!(
            (m.kind, m.format, m.width, m.height),
            ("image", "png", 32, 24)
        );
        received.insert((text(&parts[0]), parts[4].data.clone()));
    }
    // What arrived is what inputs.json says was sent, prompt and image bytes.
    let said: BTreeSet<(String, Vec<u8>)> = payloads(dir.path())
        .iter()
        .map(|p| {
            assert_eq!(p["image"]["filename"], "image.png");
            let prompt = p["prompt"].as_str().unwrap().to_owned();
            (prompt, b64_decode(p["image"]["b64_data"].as_str().unwrap()))
        })
        .collect();
    assert_eq!(received, said);
    assert!(said.iter().all(|(prompt, _)| !prompt.is_empty()));
}

#[test]
fn audio_transcription_uploads_the_asked_clip() {
    let server = recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let flags = "--endpoint-type audio-transcription --audio-length-mean 0.25 \
                 --audio-sample-rates 16 --audio-depths 16 --extra-inputs language:en";
    let flags: Vec<&str> = flags.split_whitespace().collect();
    profile_binary(&server, dir.path(), 4, &flags, &[]);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"], 4.0);
    assert!(summary.get("error_request_count").is_none(), "{summary}");

    let sent = entries(&server, "/v1/audio/transcriptions");
    assert_eq!(sent.len(), 4);
    let mut received = BTreeSet::new();
    for e in &sent {
        let parts = parts(e.request_body.as_deref().unwrap());
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["file", "model", "language"]);
        assert_eq!(
            (text(&parts[1]), text(&parts[2])),
            ("mock-model".into(), "en".into())
        );
        assert_eq!(parts[0].filename.as_deref(), Some("audio.wav"));
        assert_eq!(parts[0].content_type.as_deref(), Some("audio/wav"));
        let m = &e.media[0];
        // 0.25 s at 16 kHz: 4 000 frames of 16 bits, read from the WAV header by the mock.
        assert_eq!(
            (m.kind, m.format, m.sample_rate, m.depth),
            ("audio", "wav", 16_000, 16)
        );
        assert_eq!(m.duration_us, 250_000);
        received.insert(parts[0].data.clone());
    }
    let said: BTreeSet<Vec<u8>> = payloads(dir.path())
        .iter()
        .map(|p| b64_decode(p["file"]["b64_data"].as_str().unwrap()))
        .collect();
    assert_eq!(received, said);

    // AIPerf's audio metrics per record: the clip's length as the mock read it from what it
    // received, and RTFx = that length over the request latency in seconds.
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 4);
    for r in &records {
        let id: uuid::Uuid = r["metadata"]["x_request_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let truth = sent.iter().find(|e| e.request_id == Some(id)).unwrap();
        let m = &r["metrics"];
        let seconds = m["audio_duration"]["value"].as_f64().unwrap();
        assert_eq!(m["audio_duration"]["unit"], "sec");
        assert_eq!(seconds, truth.media[0].duration_us as f64 / 1e6);
        let latency_s = m["request_latency"]["value"].as_f64().unwrap() / 1e3;
        let rtfx = m["rtfx"]["value"].as_f64().unwrap();
        assert!((rtfx - seconds / latency_s).abs() < 1e-9 * rtfx, "{m}");
    }
    assert_eq!(summary["audio_duration"]["avg"], 0.25);
}

/// `(key, unit)` of every metric object of a summary.
fn metrics(doc: &Value) -> BTreeSet<(String, String)> {
    doc.as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.get("unit")?.as_str()?.to_owned())))
        .collect()
}

#[test]
fn same_metric_keys_and_body_shape_as_aiperf() {
    let dir_of = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aiperf-endpoints-mm"
    );
    let server = recording_mock(16);
    for name in ["image_edit", "audio_transcription"] {
        let fixture = read_json(&Path::new(dir_of).join(format!("{name}.json")));
        let mut args: Vec<String> = fixture["argv"].as_array().unwrap()[2..]
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        for (flag, value) in [
            ("--url", format!("http://{}", server.addr)),
            ("--artifact-dir", dir.path().display().to_string()),
        ] {
            let at = args.iter().position(|a| a == flag).expect(flag);
            args[at + 1] = value;
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .arg("profile")
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = read_json(&dir.path().join("profile_export_aiperf.json"));
        let theirs: BTreeSet<(String, String)> = fixture["json_metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
            .collect();
        assert_eq!(metrics(&ours), theirs, "{name}: JSON metric keys and units");
        // The CSV's metric rows, in order, up to the section ringperf adds (GPU telemetry).
        let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
        let rows: Vec<&str> = csv
            .lines()
            .map(|l| l.split(',').next().unwrap_or_default())
            .take_while(|c| *c != "Endpoint")
            .filter(|c| !c.is_empty())
            .collect();
        let theirs: Vec<&str> = fixture["csv_rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(rows, theirs, "{name}: CSV rows");
        // The first body: the same keys in order; a file field's name and type as AIPerf's.
        let ours = &payloads(dir.path())[0];
        let theirs = &fixture["payload"];
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(ours), keys(theirs), "{name}");
        for (k, v) in theirs.as_object().unwrap() {
            match v {
                Value::Object(file) => {
                    assert_eq!(keys(&ours[k]), keys(v), "{name}: {k}");
                    for f in ["filename", "content_type"] {
                        assert_eq!(ours[k][f], file[f], "{name}: {k}.{f}");
                    }
                }
                _ if k == "prompt" => assert!(ours[k].as_str().is_some_and(|p| !p.is_empty())),
                _ => assert_eq!(&ours[k], v, "{name}: {k}"),
            }
        }
    }
}

/// Runs `profile` against a closed port with `flags`; it must stop before sending, exit 2.
fn refused(flags: &str, dir: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--ui-type",
            "none",
            "-u",
            "127.0.0.1:9",
        ])
        .args(flags.split_whitespace())
        .arg("--artifact-dir")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{flags}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_input_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("edits.jsonl");
    std::fs::write(
        &data,
        "{\"text\":\"make it blue\",\"image\":\"data:image/png;base64,iVBORw0KGgo=\"}\n\
         {\"text\":\"make it red\",\"image\":\"missing.png\"}\n",
    )
    .unwrap();
    let err = refused(
        &format!(
            "--endpoint-type image-edit --custom-dataset-type single_turn --input-file {}",
            data.display()
        ),
        dir.path(),
    );
    assert!(
        err.contains("edits.jsonl:2: field \"image\": \"missing.png\""),
        "{err}"
    );

    std::fs::write(&data, "{\"text\":\"make it blue\"}\n").unwrap();
    let err = refused(
        &format!(
            "--endpoint-type image-edit --custom-dataset-type single_turn --input-file {}",
            data.display()
        ),
        dir.path(),
    );
    assert!(
        err.contains("image edit requires a reference image"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("ringperf:")).count(),
        1,
        "{err}"
    );

    let err = refused(
        "--endpoint-type audio-transcription --request-count 1",
        dir.path(),
    );
    assert!(err.contains("audio transcription requires audio"), "{err}");

    let err = refused(
        "--endpoint-type chat --request-content-type multipart/form-data",
        dir.path(),
    );
    assert!(err.contains("endpoint type chat does not."), "{err}");
    let err = refused(
        "--endpoint-type audio-transcription --request-content-type Application/JSON",
        dir.path(),
    );
    assert!(
        err.contains("requires multipart/form-data; application/json is not supported."),
        "{err}"
    );
}
