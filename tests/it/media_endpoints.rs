//! Synthetic media on the endpoint types beside chat that take them (docs/multimodal.md):
//! Responses (`input_image`, `input_audio`), Anthropic Messages (`image` blocks) and template
//! (the media variables), each checked against what the mock decoded from the body it received,
//! and AIPerf's refusals of what an API has no part for.

use crate::common;
use common::{config, read_json};

use ringperf_mock::mock::{MockServer, TruthEntry};
use serde_json::Value;

/// Runs `flags` against a recording mock, `n` requests over `n` conversations, returns the
/// mock's entries (every request answered) and the run's directory.
fn run(server: &MockServer, n: u32, flags: &str) -> (Vec<TruthEntry>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --request-count {n} \
         --num-dataset-entries {n} --isl 8 --osl 2 --ui none --no-server-metrics \
         --random-seed 5 --artifact-dir {} {flags}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (u64::from(n), 0));
    let entries = server.truth().entries();
    assert_eq!(entries.len(), n as usize);
    (entries, dir)
}

fn body(e: &TruthEntry) -> Value {
    serde_json::from_slice(e.request_body.as_deref().expect("bodies recorded")).expect("JSON")
}

const TWO_IMAGES: &str = "--image-width-mean 32 --image-height-mean 24 --image-batch-size 2 \
                          --image-format png";

/// Responses: the turn's content is its `input_text` part, then one `input_image` part per
/// image (the data URI as a plain string), then the `input_audio` clip; the mock decodes two
/// 32×24 PNGs and a one-second WAV from every body, and the run's `audio_duration` is that
/// second (Responses is one of AIPerf's `supports_audio` types).
#[test]
fn responses_sends_images_and_audio_as_input_parts() {
    let server = common::recording_mock(2);
    let flags = format!("--endpoint-type responses {TWO_IMAGES} --audio-length-mean 1");
    let (entries, dir) = run(&server, 4, &flags);
    for e in &entries {
        assert_eq!(e.path, "/v1/responses");
        let b = body(e);
        let parts = b["input"][0]["content"].as_array().expect("content parts");
        let types: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            ["input_text", "input_image", "input_image", "input_audio"]
        );
        assert!(
            parts[1]["image_url"]
                .as_str()
                .unwrap()
                .starts_with("data:image/png;base64,")
        );
        assert_eq!(parts[3]["input_audio"]["format"], "wav");
        let seen: Vec<(&str, u32, u32)> = e
            .media
            .iter()
            .map(|m| (m.kind, m.width, m.height))
            .collect();
        assert_eq!(
            seen,
            [("image", 32, 24), ("image", 32, 24), ("audio", 0, 0)]
        );
        assert_eq!(e.media[2].duration_us, 1_000_000);
    }
    let export = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        export["audio_duration"]["avg"], 1.0,
        "{}",
        export["audio_duration"]
    );
    assert_eq!(export["audio_duration"]["unit"], "sec");
}

/// Anthropic Messages: each image is an `image` block with a `base64` source naming its media
/// type; the mock decodes both; the image metrics count them (`image` parts).
#[test]
fn messages_sends_images_as_anthropic_blocks() {
    let server = common::recording_mock(2);
    let flags = format!("--endpoint-type messages {TWO_IMAGES}");
    let (entries, dir) = run(&server, 4, &flags);
    for e in &entries {
        assert_eq!(e.path, "/v1/messages");
        let b = body(e);
        let parts = b["messages"][0]["content"]
            .as_array()
            .expect("content parts");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0]["type"], "text");
        for part in &parts[1..] {
            assert_eq!(part["type"], "image");
            assert_eq!(part["source"]["type"], "base64");
            assert_eq!(part["source"]["media_type"], "image/png");
        }
        let seen: Vec<(&str, &str, u32, u32)> = e
            .media
            .iter()
            .map(|m| (m.kind, m.format, m.width, m.height))
            .collect();
        assert_eq!(seen, [("image", "png", 32, 24), ("image", "png", 32, 24)]);
    }
    let export = read_json(&dir.path().join("profile_export_aiperf.json"));
    let images = &export["num_images"];
    assert_eq!(images["avg"], 2.0, "{images}");
}

/// Template: `images`, `image` and `audios` hold the turn's media as AIPerf's variables do, so
/// a user's template can put them where its API wants them.
#[test]
fn template_variables_hold_the_turns_media() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vlm.jinja");
    std::fs::write(
        &file,
        r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": {{ text|tojson }}}{% for i in images %}, {"type": "image_url", "image_url": {"url": {{ i|tojson }}}}{% endfor %}]}], "first": {{ image|tojson }}, "clips": {{ audios|length }}, "model": "{{ model }}"}"#,
    )
    .unwrap();
    let flags = format!(
        "--endpoint-type template --extra-inputs payload_template:{} {TWO_IMAGES}",
        file.display()
    );
    let url = format!("http://{}/v1/chat/completions", server.addr);
    let dir2 = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {url} --concurrency 2 --request-count 3 \
         --num-dataset-entries 3 --isl 8 --osl 2 --ui none --no-server-metrics \
         --random-seed 5 --artifact-dir {} {flags}",
        dir2.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (3, 0));
    for e in server.truth().entries() {
        let b = body(&e);
        let parts = b["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(b["first"], parts[1]["image_url"]["url"]);
        assert_eq!(b["clips"], 0);
        let dims: Vec<(u32, u32)> = e.media.iter().map(|m| (m.width, m.height)).collect();
        assert_eq!(dims, [(32, 24), (32, 24)]);
    }
}

/// What an API has no content part for is refused before anything is sent, with AIPerf's
/// words: video on Responses, audio and video on Anthropic Messages.
#[test]
fn media_an_api_cannot_take_are_refused_with_aiperfs_words() {
    let cases = [
        (
            "--endpoint-type responses --video-width 32 --video-height 24",
            "Responses API does not support video input",
        ),
        (
            "--endpoint-type messages --audio-length-mean 1",
            "Anthropic Messages API does not support audio input",
        ),
        (
            "--endpoint-type messages --video-width 32 --video-height 24",
            "Anthropic Messages API does not support video input",
        ),
    ];
    for (flags, said) in cases {
        let err = common::config_error(&format!("ringperf profile -m m -u 127.0.0.1:1 {flags}"));
        assert!(err.to_string().contains(said), "{flags}: {err}");
    }
}

/// A dataset turn with a video sent to Responses: a setup error naming the turn, nothing sent.
#[test]
fn a_dataset_video_on_responses_is_refused_naming_the_turn() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.jsonl");
    std::fs::write(
        &file,
        "{\"text\": \"hi\"}\n{\"text\": \"look\", \"video\": \"https://example.invalid/v.mp4\"}\n",
    )
    .unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type responses --input-file {} \
         --custom-dataset-type single_turn --request-count 2 --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        file.display(),
        dir.path().join("run").display()
    ));
    let err = ringperf::run::run(cfg).unwrap_err().to_string();
    assert!(
        err.contains("Responses API does not support video input") && err.contains("turn 0"),
        "{err}"
    );
    assert!(server.truth().entries().is_empty(), "nothing sent");
}
