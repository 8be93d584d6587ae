//! `--image-source DIR` and `assets` (docs/multimodal.md): every image the mock received is
//! one of the directory's sources resized to the drawn size, equal to what Pillow makes of it
//! (tests/data/image-source/expect, written by Pillow 12), in the order the sampling asks.

use crate::common;

use ringperf_mock::mock::TruthEntry;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Packed samples and channel count of a PNG.
fn png_pixels(bytes: &[u8]) -> (Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    buf.truncate(frame.buffer_size());
    (buf, frame.color_type.samples())
}

/// The PNG bytes of every image part of a request body, in order.
fn images_of(e: &TruthEntry) -> Vec<Vec<u8>> {
    let body: Value = serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap();
    body["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "image_url")
        .map(|p| {
            let url = p["image_url"]["url"].as_str().unwrap();
            let b64 = url
                .strip_prefix("data:image/png;base64,")
                .expect("a PNG data URI");
            ringperf_workload::workload::media::base64_decode(b64.as_bytes()).unwrap()
        })
        .collect()
}

/// Which of the fixture's sources an image is: Pillow's resize of the PNG sources exactly, of
/// the JPEG within 3 levels (libjpeg-turbo and zune-jpeg upsample chroma differently).
fn which_source(img: &[u8], w: u32, h: u32) -> &'static str {
    let (got, channels) = png_pixels(img);
    for stem in ["a_rgb", "b_rgba", "c_gray", "d_photo"] {
        let want = std::fs::read(data(&format!("image-source/expect/{stem}_{w}x{h}.png"))).unwrap();
        let (want, want_channels) = png_pixels(&want);
        if channels != want_channels || got.len() != want.len() {
            continue;
        }
        let exact = stem != "d_photo";
        if got
            .iter()
            .zip(&want)
            .all(|(a, b)| if exact { a == b } else { a.abs_diff(*b) <= 3 })
        {
            return stem;
        }
    }
    panic!("an image that is none of the sources resized to {w}x{h}")
}

/// How many of the images the mock received came from each source.
fn sources_seen(
    entries: &[TruthEntry],
    (w, h): (u32, u32),
) -> std::collections::BTreeMap<&'static str, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for img in entries.iter().flat_map(images_of) {
        *seen.entry(which_source(&img, w, h)).or_insert(0) += 1;
    }
    seen
}

/// `n` requests of `batch` images of `size` each from the fixture directory, PNG.
fn run(n: u32, batch: u32, size: (u32, u32), sampling: &str) -> Vec<TruthEntry> {
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 1 --request-count {n} \
         --num-dataset-entries {n} --isl 8 --osl 2 --ui none --no-server-metrics \
         --image-width-mean {} --image-height-mean {} --image-batch-size {batch} \
         --image-format png --image-source {} --image-source-sampling {sampling} \
         --random-seed 5 --artifact-dir {}",
        server.addr,
        size.0,
        size.1,
        data("image-source").display(),
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (u64::from(n), 0));
    server.truth().entries()
}

#[test]
fn sequential_cycle_sends_each_source_resized_as_pillow_resizes_it() {
    let entries = run(8, 1, (15, 10), "sequential-cycle");
    for e in &entries {
        assert_eq!(e.media.len(), 1);
        assert_eq!(
            (e.media[0].width, e.media[0].height),
            (15, 10),
            "the mock's decode"
        );
    }
    let seen = sources_seen(&entries, (15, 10));
    // 8 drawn images walk the 4 readable sources twice (the broken and truncated files are
    // set aside, the text file and the hidden file are not indexed).
    let want: std::collections::BTreeMap<_, _> =
        [("a_rgb", 2), ("b_rgba", 2), ("c_gray", 2), ("d_photo", 2)].into();
    assert_eq!(seen, want);
}

#[test]
fn shuffle_cycle_uses_every_source_once_a_cycle_when_enlarging() {
    let entries = run(6, 2, (50, 40), "shuffle-cycle");
    let seen = sources_seen(&entries, (50, 40));
    // 12 images are three whole cycles of the 4 sources.
    assert_eq!(
        seen.values().copied().collect::<Vec<_>>(),
        [3, 3, 3, 3],
        "{seen:?}"
    );
}

/// `assets` reads AIPerf's bundled directory from the AIPerf that `RINGPERF_PYTHON` finds:
/// here a stand-in interpreter that names a package laid out as AIPerf's.
#[test]
fn assets_come_from_the_installed_aiperf_or_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let package = tmp.path().join("site/aiperf");
    let assets = package.join("dataset/generator/assets/source_images");
    std::fs::create_dir_all(&assets).unwrap();
    std::fs::copy(data("image-source/a_rgb.png"), assets.join("one.png")).unwrap();
    let python = tmp.path().join("python");
    std::fs::write(
        &python,
        format!("#!/bin/sh\necho '{}'\n", package.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();

    let server = common::recording_mock(2);
    let out_dir = tmp.path().join("out");
    let flags = [
        "--image-width-mean",
        "15",
        "--image-height-mean",
        "10",
        "--image-format",
        "png",
        "--image-source",
        "assets",
        "--isl",
        "8",
        "--osl",
        "2",
    ];
    let python_env = python.display().to_string();
    common::profile_binary(
        &server,
        &out_dir,
        3,
        &flags,
        &[("RINGPERF_PYTHON", &python_env)],
    );
    let entries = server.truth().entries();
    assert_eq!(entries.len(), 3);
    for e in &entries {
        for img in images_of(e) {
            assert_eq!(which_source(&img, 15, 10), "a_rgb");
        }
    }

    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("RINGPERF_PYTHON", tmp.path().join("no-such-python"))
        .args(["profile", "-m", "m", "-u", "127.0.0.1:1", "--ui", "none"])
        .args([
            "--image-width-mean",
            "8",
            "--image-height-mean",
            "8",
            "--image-source",
            "assets",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("--image-source assets") && err.contains("--image-source DIR"),
        "{err}"
    );
}

#[test]
fn a_bad_directory_stops_the_run_before_anything_is_sent() {
    let server = common::recording_mock(2);
    let tmp = tempfile::tempdir().unwrap();
    for (source, said) in [
        (tmp.path().join("absent"), "does not exist."),
        (
            data("image-source-gif"),
            "b.gif: a GIF image; ringperf decodes PNG and JPEG",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "m",
                "--tokenizer",
                "builtin",
                "--ui",
                "none",
            ])
            .args(["--request-count", "2"])
            .arg("-u")
            .arg(server.addr.to_string())
            .args([
                "--image-width-mean",
                "8",
                "--image-height-mean",
                "8",
                "--image-source",
            ])
            .arg(&source)
            .arg("--artifact-dir")
            .arg(tmp.path().join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(said),
            "{source:?}: {err}"
        );
    }
    assert!(server.truth().entries().is_empty(), "nothing was sent");
}

/// The same flags as AIPerf 0.13's own run over the same directory
/// (tests/data/aiperf-image-source): the same sources in the same order, the PNG sources'
/// pixels identical, the JPEG's within 3 levels.
#[test]
fn the_images_are_those_aiperf_sent_for_the_same_directory() {
    fn image_uris(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) if s.starts_with("data:image/") => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| image_uris(x, out)),
            Value::Object(o) => o.values().for_each(|x| image_uris(x, out)),
            _ => {}
        }
    }
    let pixels = |uri: &str| {
        let b64 = uri.strip_prefix("data:image/png;base64,").expect("PNG");
        png_pixels(&ringperf_workload::workload::media::base64_decode(b64.as_bytes()).unwrap())
    };
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --tokenizer builtin --isl 8 --osl 2 \
         --request-count 8 --concurrency 1 --num-dataset-entries 8 --image-width-mean 15 \
         --image-height-mean 10 --image-format png --image-source {} \
         --image-source-sampling sequential-cycle --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        data("image-source").display(),
        dir.path().display()
    ));
    ringperf::run::run(cfg).expect("the run completes");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    image_uris(
        &common::read_json(&dir.path().join("inputs.json")),
        &mut ours,
    );
    image_uris(
        &common::read_json(&data("aiperf-image-source/inputs.json")),
        &mut theirs,
    );
    assert_eq!((ours.len(), theirs.len()), (8, 8));
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        let ((pa, ca), (pb, cb)) = (pixels(a), pixels(b));
        assert_eq!(
            (ca, pa.len()),
            (cb, pb.len()),
            "image {i}: channels and size"
        );
        let jpeg_source = i % 4 == 3;
        let worst = pa
            .iter()
            .zip(&pb)
            .map(|(x, y)| x.abs_diff(*y))
            .max()
            .unwrap();
        assert!(
            worst == 0 || (jpeg_source && worst <= 3),
            "image {i} differs from AIPerf's by {worst}"
        );
    }
}
