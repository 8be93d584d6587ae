//! Synthetic images, audio and video sent by `profile` (docs/multimodal.md), checked against
//! what the mock decoded from each body it received (its truth log: the media read from their
//! own headers), not against what the client meant to send.

use crate::common;
use common::config;

use ringperf_mock::mock::{MockServer, TruthEntry};
use serde_json::Value;

/// Runs `flags` (chat, non-streaming) against a recording mock, `n` requests over `n`
/// conversations, and returns the mock's entries, every request answered.
fn run(server: &MockServer, n: u32, flags: &str) -> Vec<TruthEntry> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --request-count {n} \
         --num-dataset-entries {n} --isl 8 --osl 2 --ui none --no-server-metrics \
         --artifact-dir {} {flags}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (u64::from(n), 0));
    let entries = server.truth().entries();
    assert_eq!(entries.len(), n as usize);
    entries
}

fn body(e: &TruthEntry) -> Value {
    serde_json::from_slice(e.request_body.as_deref().expect("bodies recorded")).expect("JSON")
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

const IMAGES: &str = "--image-width-mean 64 --image-width-stddev 16 --image-height-mean 40 \
                      --image-height-stddev 6 --image-batch-size 2 --image-format random \
                      --random-seed 11";

/// Two images per request, sized from N(64, 16) × N(40, 6) rounded up and PNG or JPEG at
/// random: the mock reads each one's header. The mean of ceil(N(μ, σ)) is μ + 0.5 (truncation
/// at 0 is 4σ away); bounds are 5 standard errors over 160 images.
#[test]
fn images_decode_to_the_asked_sizes_and_formats() {
    let server = common::recording_mock(2);
    let entries = run(&server, 80, IMAGES);
    let (mut widths, mut heights, mut formats) = (Vec::new(), Vec::new(), [0usize; 2]);
    for e in &entries {
        assert_eq!(e.media.len(), 2, "two images in every request");
        // The chat parts as AIPerf writes them: the text, then one image_url part per image.
        let b = body(e);
        let parts = b["messages"][0]["content"]
            .as_array()
            .expect("content parts");
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0]["type"], "text");
        for (part, seen) in parts[1..].iter().zip(&e.media) {
            assert_eq!(part["type"], "image_url");
            let url = part["image_url"]["url"].as_str().unwrap();
            assert!(
                url.starts_with(&format!("data:image/{};base64,", seen.format)),
                "the URI names the format the bytes are in: {}",
                &url[..30]
            );
            assert_eq!(seen.kind, "image");
            formats[usize::from(seen.format == "jpeg")] += 1;
            assert!(seen.width >= 1 && seen.height >= 1);
            widths.push(f64::from(seen.width));
            heights.push(f64::from(seen.height));
        }
    }
    assert!(formats[0] > 40 && formats[1] > 40, "png/jpeg: {formats:?}");
    let (w, w_sd) = mean_sd(&widths);
    let (h, h_sd) = mean_sd(&heights);
    assert!(
        (w - 64.5).abs() < 5.0 * 16.0 / 160f64.sqrt(),
        "width mean {w}"
    );
    assert!(
        (h - 40.5).abs() < 5.0 * 6.0 / 160f64.sqrt(),
        "height mean {h}"
    );
    assert!((11.0..21.0).contains(&w_sd), "width sd {w_sd}");
    assert!((4.0..8.0).contains(&h_sd), "height sd {h_sd}");
}

/// The same seed sends byte-identical images; another seed sends others.
#[test]
fn same_seed_sends_byte_identical_images() {
    let bodies = |seed: u32| {
        let server = common::recording_mock(2);
        let flags = IMAGES.replace("--random-seed 11", &format!("--random-seed {seed}"));
        let mut b: Vec<Vec<u8>> = run(&server, 6, &flags)
            .iter()
            .map(|e| e.request_body.as_deref().unwrap().to_vec())
            .collect();
        b.sort();
        b
    };
    let a = bodies(4);
    assert_eq!(a, bodies(4));
    assert_ne!(a, bodies(5));
}

/// Stereo WAV clips of N(0.2 s, 0.05 s) at 8 or 16 kHz and 8, 16 or 24 bits: the mock reads
/// rate, channels, depth and length from each WAV's header.
#[test]
fn audio_decodes_to_the_asked_rate_channels_depth_and_length() {
    let server = common::recording_mock(2);
    let entries = run(
        &server,
        60,
        "--audio-length-mean 0.2 --audio-length-stddev 0.05 --audio-sample-rates 8,16 \
         --audio-depths 8,16,24 --audio-num-channels 2 --random-seed 2",
    );
    let mut seconds = Vec::new();
    let (mut rates, mut depths) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for e in &entries {
        assert_eq!(e.media.len(), 1);
        let seen = &e.media[0];
        assert_eq!((seen.kind, seen.format, seen.channels), ("audio", "wav", 2));
        let part = &body(e)["messages"][0]["content"][1];
        assert_eq!(part["type"], "input_audio");
        assert_eq!(part["input_audio"]["format"], "wav");
        rates.insert(seen.sample_rate);
        depths.insert(seen.depth);
        seconds.push(seen.duration_us as f64 / 1e6);
    }
    assert_eq!(rates.into_iter().collect::<Vec<_>>(), [8000, 16000]);
    assert_eq!(depths.into_iter().collect::<Vec<_>>(), [8, 16, 24]);
    let (mean, sd) = mean_sd(&seconds);
    assert!(
        (mean - 0.2).abs() < 5.0 * 0.05 / 60f64.sqrt(),
        "mean {mean}"
    );
    assert!((0.03..0.075).contains(&sd), "sd {sd}");
    assert!(seconds.iter().all(|&s| s >= 0.01 - 1.0 / 8000.0));
}

/// ffprobe's JSON for `video` (written to a scratch file), with `args` choosing the streams and
/// entries; a failing ffprobe fails the test.
fn ffprobe_json(video: &[u8], args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v");
    std::fs::write(&path, video).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error"])
        .args(args)
        .args(["-of", "json"])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()
}

/// ffprobe's count of a video's frames, its frame rate and size (an independent decoder), and
/// the duration its container header states (`container_duration`).
fn ffprobe(video: &[u8]) -> Value {
    let v = ffprobe_json(
        video,
        &[
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames,r_frame_rate,width,height:format=duration",
        ],
    );
    let mut stream = v["streams"][0].clone();
    stream["container_duration"] = v["format"]["duration"].clone();
    stream
}

fn has_ffmpeg() -> bool {
    common::require_tool(
        "ffmpeg",
        common::tool_runs("ffmpeg", "-version") && common::tool_runs("ffprobe", "-version"),
        "ffmpeg/ffprobe not installed: synthetic video and MP3 not checked",
    )
}

/// A 1.5 s clip of 32×24 at 4 fps per request, made by the system's FFmpeg, in WebM and in MP4:
/// ffprobe counts int(1.5 × 4) = 6 frames at 4 fps in what the mock received.
#[test]
#[cfg_attr(
    missing_tool_ffmpeg,
    ignore = "ffmpeg is not on PATH (docs/testing.md)"
)]
fn video_holds_duration_times_fps_frames() {
    if !has_ffmpeg() {
        return;
    }
    for (format, codec) in [("webm", "libvpx-vp9"), ("mp4", "libx264")] {
        let server = common::recording_mock(2);
        let entries = run(
            &server,
            2,
            &format!(
                "--video-width 32 --video-height 24 --video-duration 1.5 --video-fps 4 \
                 --video-format {format} --video-codec {codec} --video-synth-type grid_clock \
                 --random-seed 1"
            ),
        );
        for e in &entries {
            assert_eq!(e.media.len(), 1);
            assert_eq!((e.media[0].kind, e.media[0].format), ("video", format));
            let part = &body(e)["messages"][0]["content"][1];
            assert_eq!(part["type"], "video_url");
            let url = part["video_url"]["url"].as_str().unwrap();
            let b64 = url
                .strip_prefix(&format!("data:video/{format};base64,"))
                .expect("a data URI of the format");
            let bytes = ringperf_workload::workload::media::base64_decode(b64.as_bytes()).unwrap();
            let probed = ffprobe(&bytes);
            assert_eq!(probed["nb_read_frames"], "6", "{format}: {probed}");
            assert_eq!(probed["r_frame_rate"], "4/1", "{format}: {probed}");
            // The container's own header gives the length (WebM written to a pipe has none).
            let length: f64 = probed["container_duration"]
                .as_str()
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("{format}: no container duration: {probed}"));
            assert!((1.4..1.7).contains(&length), "{format}: {length} s");
            assert_eq!(
                (probed["width"].as_u64(), probed["height"].as_u64()),
                (Some(32), Some(24))
            );
        }
    }
}

/// ffprobe's view of a video's audio stream (codec, rate, channels, length), or `Null`.
fn ffprobe_audio(video: &[u8]) -> Value {
    let v = ffprobe_json(
        video,
        &[
            "-select_streams",
            "a",
            "-show_entries",
            "stream=codec_name,sample_rate,channels:format=duration",
        ],
    );
    let streams = v["streams"].as_array().cloned().unwrap_or_default();
    assert!(streams.len() <= 1, "{v}");
    let mut stream = streams.first().cloned().unwrap_or(Value::Null);
    if let Some(obj) = stream.as_object_mut() {
        obj.insert("duration".into(), v["format"]["duration"].clone());
    }
    stream
}

fn video_bytes(e: &TruthEntry, format: &str) -> Vec<u8> {
    let url = body(e)["messages"][0]["content"][1]["video_url"]["url"]
        .as_str()
        .expect("a video part")
        .to_string();
    let b64 = url
        .strip_prefix(&format!("data:video/{format};base64,"))
        .expect("a data URI of the format");
    ringperf_workload::workload::media::base64_decode(b64.as_bytes()).unwrap()
}

/// `--video-audio-num-channels`: each clip carries one noise track of the asked channels, as long
/// as the clip, in the container's default codec (Vorbis in WebM at the asked rate, Opus in MP4,
/// which always encodes at 48 kHz) or the one asked; without it, no audio stream at all.
#[test]
#[cfg_attr(
    missing_tool_ffmpeg,
    ignore = "ffmpeg is not on PATH (docs/testing.md)"
)]
fn video_audio_track_has_the_asked_shape() {
    if !has_ffmpeg() {
        return;
    }
    let clip = "--video-width 32 --video-height 24 --video-duration 1 --video-fps 4 \
                --video-synth-type noise --random-seed 5";
    let cases = [
        (
            "webm",
            "libvpx-vp9",
            "--video-audio-num-channels 2 --video-audio-sample-rate 16000",
            Some(("vorbis", "16000", 2)),
        ),
        (
            "mp4",
            "libx264",
            "--video-audio-num-channels 1 --video-audio-sample-rate 22.05",
            Some(("opus", "48000", 1)),
        ),
        (
            "webm",
            "libvpx-vp9",
            "--video-audio-num-channels 1 --video-audio-codec libopus",
            Some(("opus", "48000", 1)),
        ),
        ("webm", "libvpx-vp9", "", None),
    ];
    for (format, codec, audio, want) in cases {
        let server = common::recording_mock(2);
        let entries = run(
            &server,
            2,
            &format!("{clip} --video-format {format} --video-codec {codec} {audio}"),
        );
        for e in &entries {
            let track = ffprobe_audio(&video_bytes(e, format));
            let Some((codec_name, rate, channels)) = want else {
                assert!(track.is_null(), "{format} {audio}: {track}");
                continue;
            };
            assert_eq!(track["codec_name"], codec_name, "{format} {audio}: {track}");
            assert_eq!(track["sample_rate"], rate, "{format} {audio}: {track}");
            assert_eq!(track["channels"], channels, "{format} {audio}: {track}");
            let seconds: f64 = track["duration"].as_str().unwrap().parse().unwrap();
            assert!(
                (0.9..1.2).contains(&seconds),
                "{format} {audio}: {seconds} s"
            );
        }
        // Two clips of one run are two draws, not one clip sent twice.
        assert_ne!(
            video_bytes(&entries[0], format),
            video_bytes(&entries[1], format)
        );
    }
}

/// MP3 clips (through FFmpeg) at 16 or 24 kHz: the mock reads the rate from the frame headers
/// and counts the frames' samples; an encoder adds at most a few frames of delay and padding.
#[test]
#[cfg_attr(
    missing_tool_ffmpeg,
    ignore = "ffmpeg is not on PATH (docs/testing.md)"
)]
fn mp3_audio_decodes_to_the_asked_rate_and_length() {
    if !has_ffmpeg() {
        return;
    }
    let server = common::recording_mock(2);
    let entries = run(
        &server,
        6,
        "--audio-length-mean 0.5 --audio-format mp3 --audio-sample-rates 16,24 --random-seed 3",
    );
    for e in &entries {
        let seen = &e.media[0];
        assert_eq!((seen.kind, seen.format, seen.channels), ("audio", "mp3", 1));
        assert!([16000, 24000].contains(&seen.sample_rate), "{seen:?}");
        let frame = 576.0 / f64::from(seen.sample_rate);
        let got = seen.duration_us as f64 / 1e6;
        assert!((0.5..=0.5 + 4.0 * frame).contains(&got), "{got} s");
        assert_eq!(
            body(e)["messages"][0]["content"][1]["input_audio"]["format"],
            "mp3"
        );
    }
}

/// A value with every string shortened to what identifies its kind: a data URI to its prefix,
/// `input_audio.data` to the probed header, other text to `<text>`.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("data" | "url", Value::String(s)) => Value::String(media_of(s)),
                        ("text", Value::String(_)) => Value::from("<text>"),
                        _ => shape(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        other => other.clone(),
    }
}

/// A data URI or a bare base64 medium as its prefix and what its header says.
fn media_of(s: &str) -> String {
    let (prefix, b64) = match s.split_once(";base64,") {
        Some((p, b)) => (p, b),
        None => ("", s),
    };
    let bytes = ringperf_workload::workload::media::base64_decode(b64.as_bytes()).expect("base64");
    let probed =
        ringperf_workload::workload::media::probe::probe(&bytes).expect("a readable medium");
    // Lengths to the millisecond: both draw 0.05 s exactly, in frames of their own rate.
    let probed = match probed {
        ringperf_workload::workload::media::probe::Probed::Audio {
            format,
            sample_rate,
            channels,
            depth,
            seconds,
        } => format!(
            "{format} {sample_rate} Hz {channels} ch {depth} bit {:.3} s",
            seconds
        ),
        other => format!("{other:?}"),
    };
    format!("{prefix} {probed}")
}

/// ringperf's payloads for the flags of tests/data/aiperf-multimodal/README.md have AIPerf's
/// shape: the same keys in the same order, the same parts, the same media decoded.
#[test]
fn payload_shape_is_aiperfs() {
    let aiperf: Value =
        serde_json::from_str(include_str!("../data/aiperf-multimodal/inputs.json")).unwrap();
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type chat --tokenizer builtin \
         --request-count 2 --concurrency 1 --isl 8 --osl 2 --image-width-mean 16 \
         --image-height-mean 8 --image-batch-size 2 --image-format png --audio-length-mean 0.05 \
         --audio-batch-size 1 --random-seed 1 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).expect("the run completes");
    let ours = common::read_json(&dir.path().join("inputs.json"));
    let payloads = |v: &Value| -> Vec<Value> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["payloads"].as_array().unwrap().iter().map(shape))
            .collect()
    };
    let (a, o) = (payloads(&aiperf), payloads(&ours));
    assert_eq!(a.len(), 2);
    assert_eq!(
        serde_json::to_string_pretty(&o).unwrap(),
        serde_json::to_string_pretty(&a).unwrap()
    );
}

/// Flags AIPerf refuses, or that ringperf cannot honour, are refused with a message naming them.
#[test]
fn bad_media_flags_are_refused_by_name() {
    let cases = [
        (
            "--image-width-mean 8 --image-height-mean 8 --endpoint-type completions",
            "audio-transcription endpoint types only, not completions",
        ),
        ("--audio-length-mean 1 --audio-depths 12", "--audio-depths"),
        (
            "--audio-length-mean 1 --audio-format mp3 --audio-sample-rates 17",
            "MP3 format only supports",
        ),
        ("--video-width 32", "--video-width and --video-height"),
        (
            "--video-width 32 --video-height 24 --video-audio-codec libopus",
            "--video-audio-num-channels is 0",
        ),
        (
            "--video-width 32 --video-height 24 --video-audio-num-channels 3",
            "--video-audio-num-channels 3",
        ),
        (
            "--video-width 32 --video-height 24 --video-audio-num-channels 1 --video-audio-depth 12",
            "--video-audio-depth 12",
        ),
        (
            "--video-width 32 --video-height 24 --video-audio-num-channels 1 --video-audio-codec mp3",
            "--video-audio-codec mp3",
        ),
        (
            "--image-width-mean 8 --image-height-mean 8 --image-source-sampling shuffle-cycle",
            "--image-source-sampling",
        ),
        (
            "--uuid-and-strip --endpoint-type completions",
            "--uuid-and-strip requires endpoint type 'chat'",
        ),
    ];
    for (flags, said) in cases {
        let line = format!("ringperf profile -m m -u 127.0.0.1:1 {flags}");
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let plan = ringperf::plan::Plan::parse(&argv).expect("flags parse");
        let err = ringperf::config::Config::from_plan(&plan, false).unwrap_err();
        assert!(err.to_string().contains(said), "{flags}: {err}");
    }
}

/// A mono 16-bit PCM WAV of `samples` samples at `rate` Hz, its header written by hand.
fn wav(rate: u32, samples: u32) -> Vec<u8> {
    let data = samples * 2;
    let mut w = Vec::new();
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + data).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&rate.to_le_bytes());
    w.extend_from_slice(&(rate * 2).to_le_bytes());
    w.extend_from_slice(&2u16.to_le_bytes());
    w.extend_from_slice(&16u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&data.to_le_bytes());
    w.resize(w.len() + data as usize, 0);
    w
}

/// A `random_pool` directory of two pools, one of images (files beside the pool, and a data
/// URI) and one of texts with an audio file: every request carries one record of each pool,
/// and the mock's decode of each medium is one of the files the pools name.
#[test]
fn random_pool_media_reach_the_server_as_the_files_are() {
    use ringperf_workload::workload::media::{
        ImageFormat, ImageSpec, generate_image, image::ImageRngs,
    };
    let dir = tempfile::tempdir().unwrap();
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).unwrap();
    let image =
        |w, h, f| generate_image(&ImageSpec::fixed(w, h, f), &mut ImageRngs::new(Some(3))).unwrap();
    // Every file of the directory is a pool: the media sit beside it, named relative to it.
    let media = dir.path().join("media");
    std::fs::create_dir(&media).unwrap();
    std::fs::write(
        media.join("a.png"),
        &image(12, 7, ImageFormat::Png).bytes[..],
    )
    .unwrap();
    let jpeg = image(9, 5, ImageFormat::Jpeg).data_uri();
    std::fs::write(media.join("clip.wav"), wav(8000, 1600)).unwrap();
    std::fs::write(
        pools.join("1_images.jsonl"),
        format!("{{\"image\": \"../media/a.png\"}}\n{{\"images\": [\"{jpeg}\"]}}\n"),
    )
    .unwrap();
    std::fs::write(
        pools.join("2_texts.jsonl"),
        "{\"text\": \"describe it\", \"audio\": \"../media/clip.wav\"}\n",
    )
    .unwrap();
    let server = common::recording_mock(2);
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --request-count 16 \
         --input-file {} --custom-dataset-type random_pool --ui none --no-server-metrics \
         --random-seed 5 --artifact-dir {}",
        server.addr,
        pools.display(),
        dir.path().join("out").display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (16, 0));
    let mut sizes = std::collections::BTreeSet::new();
    for e in server.truth().entries() {
        assert_eq!(e.media.len(), 2, "one image and one clip");
        let (img, clip) = (&e.media[0], &e.media[1]);
        assert_eq!(img.kind, "image");
        sizes.insert((img.format, img.width, img.height));
        assert_eq!(
            (clip.kind, clip.format, clip.sample_rate),
            ("audio", "wav", 8000)
        );
        assert_eq!(clip.duration_us, 200_000);
        let b = body(&e);
        let parts = b["messages"][0]["content"].as_array().unwrap();
        assert_eq!(
            parts[0],
            serde_json::json!({"type": "text", "text": "describe it"})
        );
        assert_eq!(parts[1]["type"], "image_url");
        assert_eq!(parts[2]["type"], "input_audio");
    }
    // Both records of the image pool were drawn (16 draws, each missed with 2^-16).
    assert_eq!(
        sizes.into_iter().collect::<Vec<_>>(),
        [("jpeg", 9, 5), ("png", 12, 7)]
    );
}

/// Runs a `single_turn` file of images with cache UUIDs, one request at a time, and returns,
/// per turn text, the last message's images as the mock received them: each part's `uuid` and
/// the mock's decode of its URL (`url` and 0 bytes for an empty one).
fn uuid_run(strip: &str) -> std::collections::BTreeMap<String, Vec<(String, &'static str, u32)>> {
    use ringperf_workload::workload::media::{
        ImageFormat, ImageSpec, generate_image, image::ImageRngs,
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, w, h) in [("a.png", 12, 7), ("b.png", 9, 5), ("c.png", 4, 3)] {
        let img = generate_image(
            &ImageSpec::fixed(w, h, ImageFormat::Png),
            &mut ImageRngs::new(Some(1)),
        )
        .unwrap();
        std::fs::write(dir.path().join(name), &img.bytes[..]).unwrap();
    }
    let data = dir.path().join("turns.jsonl");
    std::fs::write(
        &data,
        concat!(
            "{\"session_id\": \"s\", \"text\": \"one\", \"images\": [\"a.png\", \"b.png\"], \"image_uuids\": [\"ua\", \"ub\"]}\n",
            "{\"session_id\": \"s\", \"text\": \"two\", \"images\": [\"a.png\", \"c.png\"], \"image_uuids\": [\"ua\", \"uc\"]}\n",
            "{\"session_id\": \"s\", \"text\": \"three\", \"image_uuids\": [\"ub\"]}\n",
            "{\"session_id\": \"t\", \"text\": \"four\", \"images\": [\"a.png\", \"a.png\"], \"image_uuids\": [\"ua\", \"ua\"]}\n",
        ),
    )
    .unwrap();
    let server = common::recording_mock(2);
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 1 --request-count 4 \
         --input-file {} --custom-dataset-type single_turn --ui none --no-server-metrics \
         --artifact-dir {} {strip}",
        server.addr,
        data.display(),
        dir.path().join("out").display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (4, 0));
    let mut seen = std::collections::BTreeMap::new();
    for e in server.truth().entries() {
        let b = body(&e);
        let last = b["messages"].as_array().unwrap().last().unwrap().clone();
        let parts = last["content"].as_array().unwrap();
        let images = &parts[1..];
        // The last message's images are the last of the body's media the mock decoded.
        let decoded = &e.media[e.media.len() - images.len()..];
        let got = images
            .iter()
            .zip(decoded)
            .map(|(part, m)| {
                assert_eq!(part["type"], "image_url");
                let uuid = part["uuid"].as_str().expect("a uuid key").to_string();
                (uuid, m.format, m.width)
            })
            .collect();
        seen.insert(parts[0]["text"].as_str().unwrap().to_string(), got);
    }
    seen
}

/// AIPerf's `--uuid-and-strip`: a dataset's `image_uuids` go out as each `image_url` part's
/// `uuid`; with the flag, an image whose UUID an earlier turn of the session sent with its
/// bytes goes out empty, while a repeat within one turn and a new session keep their bytes.
/// Without the flag, the UUIDs pass through and every image keeps its bytes.
#[test]
fn uuid_and_strip_empties_images_an_earlier_turn_sent() {
    let s = |u: &str| u.to_string();
    let stripped = uuid_run("--uuid-and-strip");
    assert_eq!(stripped["one"], [(s("ua"), "png", 12), (s("ub"), "png", 9)]);
    assert_eq!(stripped["two"], [(s("ua"), "url", 0), (s("uc"), "png", 4)]);
    assert_eq!(stripped["three"], [(s("ub"), "url", 0)]);
    assert_eq!(
        stripped["four"],
        [(s("ua"), "png", 12), (s("ua"), "png", 12)]
    );
    let kept = uuid_run("");
    assert_eq!(kept["two"], [(s("ua"), "png", 12), (s("uc"), "png", 4)]);
    // A UUID-only reference is empty with or without the flag.
    assert_eq!(kept["three"], [(s("ub"), "url", 0)]);
}

/// AIPerf's `audio_duration` of a chat request is the length of the first clip of its
/// conversation's first turn (the first of the session's turns it reads): with two turns per
/// conversation, both records carry the first turn's clip as the mock decoded it.
#[test]
fn chat_audio_duration_is_the_first_turns_clip() {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 1 --request-count 8 \
         --num-dataset-entries 4 --conversation-turn-mean 2 --isl 8 --osl 2 --ui none \
         --no-server-metrics --audio-length-mean 0.2 --audio-length-stddev 0.05 \
         --audio-sample-rates 8 --random-seed 3 --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (8, 0));
    let truth = server.truth().entries();
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 8);
    let mut firsts = std::collections::BTreeMap::new();
    let mut lengths = std::collections::BTreeSet::new();
    for r in &records {
        let id: uuid::Uuid = r["metadata"]["x_request_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let e = truth.iter().find(|e| e.request_id == Some(id)).unwrap();
        // The body's media in order: the first is the conversation's first turn's clip (a
        // second turn re-sends the first as history).
        let first = e.media[0].duration_us as f64 / 1e6;
        let seconds = r["metrics"]["audio_duration"]["value"].as_f64().unwrap();
        assert!((seconds - first).abs() < 1e-9, "{seconds} vs {first}");
        let turn = r["metadata"]["turn_index"].as_u64().unwrap();
        let conv = r["metadata"]["conversation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        firsts
            .entry(conv)
            .or_insert_with(Vec::new)
            .push((turn, seconds));
        lengths.extend(e.media.iter().map(|m| m.duration_us));
    }
    for (conv, turns) in &firsts {
        assert_eq!(turns.len(), 2, "{conv}");
        assert_eq!(
            turns[0].1, turns[1].1,
            "{conv}: both turns carry the first clip"
        );
    }
    // The second turns' clips differ from the first ones: the metric did not just take any.
    assert!(lengths.len() > firsts.len(), "{lengths:?}");
}

/// `random_pool` with batch sizes other than 1, as AIPerf's `RandomPool`: one flat pool per
/// modality, and every turn `--image-batch-size` images and `--prompt-batch-size` texts drawn
/// from them (the pool's record pairs are not kept); refused with AIPerf's words for a directory
/// of named pools, for entries with named objects, and when no modality would be drawn.
#[test]
fn random_pool_batches_draw_from_flat_pools() {
    use ringperf_workload::workload::media::{
        ImageFormat, ImageSpec, generate_image, image::ImageRngs,
    };
    let dir = tempfile::tempdir().unwrap();
    let uri = |w, h| {
        generate_image(
            &ImageSpec::fixed(w, h, ImageFormat::Png),
            &mut ImageRngs::new(Some(3)),
        )
        .unwrap()
        .data_uri()
    };
    let pool = dir.path().join("pool.jsonl");
    std::fs::write(
        &pool,
        format!(
            "{{\"text\": \"alpha\", \"image\": \"{}\"}}\n{{\"texts\": [\"beta\", \"gamma\"]}}\n{{\"images\": [\"{}\"]}}\n",
            uri(4, 3),
            uri(6, 5)
        ),
    )
    .unwrap();
    let server = common::recording_mock(2);
    let run = |file: &std::path::Path, batch: &str, out: &str| {
        ringperf::run::run(config(&format!(
            "ringperf profile -m mock-model -u {} --concurrency 2 --request-count 12 \
             --input-file {} --custom-dataset-type random_pool {batch} --ui none \
             --no-server-metrics --random-seed 5 --artifact-dir {}",
            server.addr,
            file.display(),
            dir.path().join(out).display()
        )))
    };
    let out = run(&pool, "--image-batch-size 3 --prompt-batch-size 2", "a").unwrap();
    assert_eq!((out.successes, out.errors), (12, 0));
    let (mut texts, mut sizes) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for e in server.truth().entries() {
        let b = body(&e);
        let parts = b["messages"][0]["content"].as_array().unwrap();
        let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["text", "text", "image_url", "image_url", "image_url"]
        );
        texts.extend(
            parts[..2]
                .iter()
                .map(|p| p["text"].as_str().unwrap().to_string()),
        );
        assert_eq!(e.media.len(), 3);
        sizes.extend(e.media.iter().map(|m| (m.width, m.height)));
    }
    // 24 text and 36 image draws from flat pools of 3 texts and 2 images: each item is drawn
    // (a miss has probability (2/3)^24 or 2^-36).
    assert_eq!(
        texts.into_iter().collect::<Vec<_>>(),
        ["alpha", "beta", "gamma"]
    );
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [(4, 3), (6, 5)]);

    // A directory of two pools: named pools, refused.
    let pools = dir.path().join("pools");
    std::fs::create_dir(&pools).unwrap();
    std::fs::write(pools.join("a.jsonl"), "{\"text\": \"x\"}\n").unwrap();
    std::fs::write(pools.join("b.jsonl"), "{\"text\": \"y\"}\n").unwrap();
    let err = run(&pools, "--prompt-batch-size 2", "b")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not supported for named pools (found 2: a.jsonl, b.jsonl)"),
        "{err}"
    );
    // A named text object, refused; batch 0 on the pool's only modality: nothing to send,
    // refused.
    let named = dir.path().join("named.jsonl");
    std::fs::write(
        &named,
        "{\"texts\": [{\"name\": \"q\", \"contents\": [\"x\"]}]}\n",
    )
    .unwrap();
    let err = run(&named, "--prompt-batch-size 2", "c")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("carry named Text/Image/Audio/Video objects"),
        "{err}"
    );
    let images_only = dir.path().join("images.jsonl");
    std::fs::write(&images_only, format!("{{\"image\": \"{}\"}}\n", uri(2, 2))).unwrap();
    let err = run(&images_only, "--image-batch-size 0", "d")
        .unwrap_err()
        .to_string();
    assert!(err.contains("produce turns with no content"), "{err}");
}
