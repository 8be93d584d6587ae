//! The directory index, the samplers, and decode + resize against Pillow's own output
//! (tests/data/image-source/make.py wrote the sources and, under expect/, what Pillow 12 makes
//! of them).

use super::*;

fn data(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/data")
        .join(rel)
}

fn pillow(name: &str) -> Decoded {
    decode(&std::fs::read(data("image-source/expect").join(name)).unwrap()).unwrap()
}

fn names(index: &[PathBuf]) -> Vec<String> {
    index
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_index_is_aiperfs_and_unreadable_files_are_set_aside() {
    let index = index(&data("image-source")).unwrap();
    // Sorted; notes.txt (no Pillow extension), .hidden.png (glob skips dot files), the expect
    // directory (no extension), e_broken.png (not an image) and f_truncated.png (cut in its
    // pixel data) are not sources.
    assert_eq!(
        names(&index),
        ["a_rgb.png", "b_rgba.png", "c_gray.png", "d_photo.jpg"]
    );
}

#[test]
fn resizing_equals_pillows_resize_for_rgb_rgba_and_gray() {
    for stem in ["a_rgb", "b_rgba", "c_gray"] {
        let src = load(&data("image-source").join(format!("{stem}.png"))).unwrap();
        for (w, h) in [(15, 10), (50, 40)] {
            let want = pillow(&format!("{stem}_{w}x{h}.png"));
            let got = resized(&src, w, h).unwrap();
            assert_eq!(got.channels, want.channels, "{stem} {w}x{h}");
            assert_eq!(got, want, "{stem} resized to {w}x{h} is not Pillow's");
        }
    }
}

#[test]
fn a_jpeg_decodes_within_three_levels_of_libjpeg() {
    // Pillow decodes with libjpeg-turbo; zune-jpeg's chroma upsampling rounds differently.
    let got = load(&data("image-source/d_photo.jpg")).unwrap();
    let want = pillow("d_photo_decoded.png");
    assert_eq!((got.width, got.height, got.channels), (41, 33, 3));
    assert_eq!(got.pixels.len(), want.pixels.len());
    let diffs: Vec<u8> = got
        .pixels
        .iter()
        .zip(&want.pixels)
        .map(|(a, b)| a.abs_diff(*b))
        .collect();
    let max = diffs.iter().copied().max().unwrap();
    let mean = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / diffs.len() as f64;
    assert!(max <= 3 && mean < 0.5, "max {max} mean {mean}");
}

#[test]
fn samplers_walk_shuffle_and_draw() {
    let mut seq = Sampler::new(SourceSampling::SequentialCycle, 3, Some(1));
    assert_eq!(
        (0..7).map(|_| seq.pick()).collect::<Vec<_>>(),
        [0, 1, 2, 0, 1, 2, 0]
    );
    let mut shuffled = Sampler::new(SourceSampling::ShuffleCycle, 5, Some(1));
    let picks: Vec<usize> = (0..20).map(|_| shuffled.pick()).collect();
    for cycle in picks.chunks(5) {
        let mut sorted = cycle.to_vec();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [0, 1, 2, 3, 4],
            "each cycle is a permutation: {picks:?}"
        );
    }
    assert_ne!(picks[..5], picks[5..10], "reshuffled: {picks:?}");
    let draw = |seed| {
        let mut r = Sampler::new(SourceSampling::RandomWithReplacement, 4, Some(seed));
        (0..400).map(|_| r.pick()).collect::<Vec<_>>()
    };
    let a = draw(3);
    assert_eq!(a, draw(3));
    assert_ne!(a, draw(4));
    for i in 0..4 {
        let n = a.iter().filter(|&&x| x == i).count();
        assert!((60..140).contains(&n), "source {i} drawn {n} times of 400");
    }
    assert!(
        a.windows(2).any(|w| w[0] == w[1]),
        "with replacement: repeats occur"
    );
}

#[test]
fn errors_say_what_aiperf_says() {
    let missing = data("image-source/no-such-dir");
    let err = index(&missing).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("The directory '{}' does not exist.", missing.display())
    );
    let file = data("image-source/notes.txt");
    let err = index(&file).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("The path '{}' is not a directory.", file.display())
    );
    let err = index(&data("image-source/expect/..")).map(|i| i.len());
    assert_eq!(err.unwrap(), 4);

    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("readme.md"), "no images").unwrap();
    let err = index(tmp.path()).unwrap_err().to_string();
    assert!(err.starts_with("No source images found in '"), "{err}");
    std::fs::write(tmp.path().join("x.png"), "no image either").unwrap();
    let err = index(tmp.path()).unwrap_err().to_string();
    assert!(
        err.starts_with("No readable source images found in '"),
        "{err}"
    );

    let gif = data("image-source-gif");
    let err = index(&gif).unwrap_err().to_string();
    assert!(
        err.contains("b.gif: a GIF image; ringperf decodes PNG and JPEG"),
        "{err}"
    );
}

#[test]
fn jpeg_output_drops_alpha_and_png_output_keeps_it() {
    let src = load(&data("image-source/b_rgba.png")).unwrap();
    let small = resized(&src, 8, 6).unwrap();
    let png = encode(&small, ImageFormat::Png).unwrap();
    assert_eq!(decode(&png.bytes).unwrap(), small);
    let jpeg = encode(&small, ImageFormat::Jpeg).unwrap();
    let back = decode(&jpeg.bytes).unwrap();
    assert_eq!((back.width, back.height, back.channels), (8, 6, 3));
    assert_eq!(jpeg.mime, "image/jpeg");
}

#[test]
fn sniffing_names_formats_and_never_panics() {
    assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Sniffed::Png);
    assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]), Sniffed::Jpeg);
    assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Sniffed::Other("WebP"));
    assert_eq!(sniff(b"GIF89a"), Sniffed::Other("GIF"));
    for n in 0usize..12 {
        assert_eq!(
            sniff(&b"\x89PNG\r\n\x1a\n0123"[..n.min(8).saturating_sub(1)]),
            Sniffed::Unknown
        );
        let _ = decode(&b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..n]);
        let _ = decode(&[0xff, 0xd8, 0xff, 0xc0, 0, 0x11, 8, 0, 1][..n.min(9)]);
    }
}

/// Every prefix of each source, and each with one byte flipped at a spread of offsets, decodes
/// or fails with a message: never a panic (the decoders are other crates; a directory may hold
/// anything).
#[test]
fn damaged_sources_are_errors_not_panics() {
    for name in ["a_rgb.png", "b_rgba.png", "c_gray.png", "d_photo.jpg"] {
        let bytes = std::fs::read(data("image-source").join(name)).unwrap();
        for cut in 0..bytes.len() {
            let _ = decode(&bytes[..cut]);
        }
        for at in (0..bytes.len()).step_by(7) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x5a;
            if let Ok(img) = decode(&flipped) {
                let want = img.width as usize * img.height as usize * usize::from(img.channels);
                assert_eq!(img.pixels.len(), want, "{name} flipped at {at}");
                let _ = resized(&img, 3, 2);
            }
        }
    }
}
