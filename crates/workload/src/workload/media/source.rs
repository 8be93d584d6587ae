//! Source images (`--image-source DIR`, `--image-source assets`): the directory's index as
//! AIPerf 0.13 builds it, its three sampling modes, and each drawn image decoded, resized to
//! the drawn size as Pillow's `Image.resize` does, and encoded (docs/multimodal.md).
//!
//! The index is every non-hidden entry of the directory whose extension Pillow registers,
//! sorted by path. Every entry is read and its header checked before the first draw: a file
//! that is not an image (or not a readable one) is set aside with a warning, as AIPerf retires
//! an unreadable file; an image in a format other than PNG or JPEG stops the run with an error
//! that names it (AIPerf would decode it; ringperf decodes PNG and JPEG only, and sending
//! other pixels would not be the same workload).

use std::path::{Path, PathBuf};

use rand::RngExt;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::image::{ImageFormat, SourceSampling};
use super::resize::resize_bicubic;
use super::{EncodedMedia, MediaError};

/// The file extensions Pillow 12 registers (`PIL.Image.registered_extensions()`): the
/// directory entries AIPerf indexes. Lower case, with the dot.
pub const PILLOW_EXTENSIONS: &[&str] = &[
    ".apng", ".avif", ".avifs", ".blp", ".bmp", ".bufr", ".bw", ".cur", ".dcx", ".dds", ".dib",
    ".emf", ".eps", ".fit", ".fits", ".flc", ".fli", ".ftc", ".ftu", ".gbr", ".gif", ".grib",
    ".h5", ".hdf", ".icb", ".icns", ".ico", ".iim", ".im", ".j2c", ".j2k", ".jfif", ".jp2", ".jpc",
    ".jpe", ".jpeg", ".jpf", ".jpg", ".jpx", ".mpeg", ".mpg", ".mpo", ".msp", ".palm", ".pbm",
    ".pcd", ".pcx", ".pdf", ".pfm", ".pgm", ".png", ".pnm", ".ppm", ".ps", ".psd", ".pxr", ".qoi",
    ".ras", ".rgb", ".rgba", ".sgi", ".tga", ".tif", ".tiff", ".vda", ".vst", ".webp", ".wmf",
    ".xbm", ".xpm",
];

/// What a file's first bytes say it is.
#[derive(Debug, PartialEq, Eq)]
enum Sniffed {
    Png,
    Jpeg,
    /// An image format ringperf does not decode, by name.
    Other(&'static str),
    /// Not an image ringperf or Pillow would know by its signature.
    Unknown,
}

fn sniff(head: &[u8]) -> Sniffed {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"GIF87a", "GIF"),
        (b"GIF89a", "GIF"),
        (b"BM", "BMP"),
        (b"II*\0", "TIFF"),
        (b"MM\0*", "TIFF"),
        (b"qoif", "QOI"),
        (b"8BPS", "PSD"),
        (b"\0\0\x01\0", "ICO"),
        (b"icns", "ICNS"),
        (b"DDS ", "DDS"),
        (b"\0\0\0\x0cjP  ", "JPEG 2000"),
        (b"\xff\x4f\xff\x51", "JPEG 2000"),
    ];
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Sniffed::Png;
    }
    if head.starts_with(&[0xff, 0xd8, 0xff]) {
        return Sniffed::Jpeg;
    }
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Sniffed::Other("WebP");
    }
    if head.len() >= 12 && &head[4..8] == b"ftyp" && matches!(&head[8..12], b"avif" | b"avis") {
        return Sniffed::Other("AVIF");
    }
    SIGNATURES
        .iter()
        .find(|(sig, _)| head.starts_with(sig))
        .map_or(Sniffed::Unknown, |(_, name)| Sniffed::Other(name))
}

/// The directory's candidates as AIPerf lists them: `glob(dir/*)` (names starting with a dot
/// are not matched) sorted by path, kept when the extension is one Pillow registers.
fn candidates(dir: &Path) -> Result<Vec<PathBuf>, MediaError> {
    let shown = dir.display();
    if !dir.exists() {
        return Err(MediaError::Source(format!(
            "The directory '{shown}' does not exist."
        )));
    }
    if !dir.is_dir() {
        return Err(MediaError::Source(format!(
            "The path '{shown}' is not a directory."
        )));
    }
    let entries = std::fs::read_dir(dir).map_err(|source| MediaError::Io {
        path: shown.to_string(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|ext| {
                let ext = format!(".{}", ext.to_string_lossy().to_lowercase());
                PILLOW_EXTENSIONS.contains(&ext.as_str())
            })
        })
        .collect();
    // Python sorts the strings by code point, which is UTF-8 byte order.
    paths.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    Ok(paths)
}

/// Why a candidate file is not a source.
enum Refused {
    /// Set aside with a warning, as AIPerf retires a file Pillow cannot read.
    Unreadable(String),
    /// An image ringperf does not decode: the run stops.
    Format(&'static str),
}

/// Reads and decodes one candidate (the pixels are dropped: the run decodes each source again
/// when it resizes it, so a large directory is never held decoded).
fn check(path: &Path) -> Result<(), Refused> {
    let bytes = std::fs::read(path).map_err(|e| Refused::Unreadable(e.to_string()))?;
    match sniff(&bytes) {
        // A decoder that panics on a file sets that file aside, like any unreadable one.
        Sniffed::Png | Sniffed::Jpeg => std::panic::catch_unwind(|| decode(&bytes))
            .unwrap_or_else(|_| Err("the decoder failed on it".into()))
            .map(drop)
            .map_err(Refused::Unreadable),
        Sniffed::Other(format) => Err(Refused::Format(format)),
        Sniffed::Unknown => Err(Refused::Unreadable("not an image file".into())),
    }
}

/// The readable source images of `dir`, in index order: every candidate decoded once, on
/// every core; an unreadable file is set
/// aside (a warning on standard error), an image of another format than PNG or JPEG is an
/// error naming the file.
pub fn index(dir: &Path) -> Result<Vec<PathBuf>, MediaError> {
    let shown = dir.display();
    let candidates = candidates(dir)?;
    if candidates.is_empty() {
        return Err(MediaError::Source(format!(
            "No source images found in '{shown}'. Please ensure the directory contains at \
             least one image file."
        )));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = candidates.len().div_ceil(threads).max(1);
    let checked: Vec<Result<(), Refused>> = std::thread::scope(|s| {
        let handles: Vec<_> = candidates
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|p| check(p)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if checked.len() != candidates.len() {
        return Err(MediaError::Source(format!(
            "indexing '{shown}': a decoder thread failed"
        )));
    }
    let mut paths = Vec::with_capacity(candidates.len());
    for (path, result) in candidates.into_iter().zip(checked) {
        match result {
            Ok(()) => paths.push(path),
            Err(Refused::Format(format)) => {
                return Err(MediaError::Source(format!(
                    "{}: a {format} image; ringperf decodes PNG and JPEG source images only \
                     (convert it, or move it out of '{shown}')",
                    path.display()
                )));
            }
            Err(Refused::Unreadable(why)) => {
                eprintln!(
                    "warning: skipping unreadable image file '{}': {why}",
                    path.display()
                );
            }
        }
    }
    if paths.is_empty() {
        return Err(MediaError::Source(format!(
            "No readable source images found in '{shown}'. Please ensure the directory \
             contains at least one readable image file."
        )));
    }
    Ok(paths)
}

/// Picks source indexes (into [`index`]'s list) one drawn image at a time.
#[derive(Debug)]
pub struct Sampler {
    mode: SourceSampling,
    len: usize,
    rng: StdRng,
    cycle: Vec<usize>,
    next: usize,
}

impl Sampler {
    /// A sampler over `len` sources (at least 1), with its own stream of the run's seed.
    pub fn new(mode: SourceSampling, len: usize, seed: Option<u64>) -> Self {
        Self {
            mode,
            len: len.max(1),
            rng: crate::workload::child_rng(seed, "dataset.image.source"),
            cycle: Vec::new(),
            next: 0,
        }
    }

    /// The next source's index.
    pub fn pick(&mut self) -> usize {
        match self.mode {
            SourceSampling::RandomWithReplacement => self.rng.random_range(0..self.len),
            SourceSampling::ShuffleCycle => {
                if self.cycle.is_empty() {
                    self.cycle = (0..self.len).collect();
                    self.cycle.shuffle(&mut self.rng);
                }
                self.cycle.pop().unwrap_or(0)
            }
            SourceSampling::SequentialCycle => {
                let i = self.next;
                self.next = (i + 1) % self.len;
                i
            }
        }
    }
}

/// A decoded image: 8-bit samples, `channels` a pixel (1 gray, 2 gray + alpha, 3 RGB,
/// 4 RGBA), row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub pixels: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub channels: u8,
}

fn jpeg_decoder(
    bytes: &[u8],
) -> zune_jpeg::JpegDecoder<zune_jpeg::zune_core::bytestream::ZCursor<&[u8]>> {
    use zune_jpeg::zune_core::colorspace::ColorSpace;
    use zune_jpeg::zune_core::options::DecoderOptions;
    let mut decoder =
        zune_jpeg::JpegDecoder::new(zune_jpeg::zune_core::bytestream::ZCursor::new(bytes));
    if decoder.decode_headers().is_ok() {
        // A grayscale JPEG stays gray (Pillow opens it as `L`); everything else is RGB.
        let out = match decoder.input_colorspace() {
            Some(ColorSpace::Luma) => ColorSpace::Luma,
            _ => ColorSpace::RGB,
        };
        let options = DecoderOptions::default()
            .jpeg_set_out_colorspace(out)
            .set_max_width(usize::from(u16::MAX))
            .set_max_height(usize::from(u16::MAX));
        decoder = zune_jpeg::JpegDecoder::new_with_options(
            zune_jpeg::zune_core::bytestream::ZCursor::new(bytes),
            options,
        );
    }
    decoder
}

/// Decodes a PNG (palettes expanded, 16-bit samples cut to 8, transparency as alpha) or a
/// JPEG (grayscale stays gray; YCbCr and CMYK become RGB).
pub fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    match sniff(bytes) {
        Sniffed::Png => {
            let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
            decoder.set_transformations(png::Transformations::normalize_to_color8());
            let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
            let size = reader
                .output_buffer_size()
                .ok_or_else(|| "the image is too large".to_string())?;
            let mut pixels = vec![0u8; size];
            let frame = reader.next_frame(&mut pixels).map_err(|e| e.to_string())?;
            pixels.truncate(frame.buffer_size());
            let channels = frame.color_type.samples() as u8;
            Ok(Decoded {
                pixels,
                width: frame.width,
                height: frame.height,
                channels,
            })
        }
        Sniffed::Jpeg => {
            let mut decoder = jpeg_decoder(bytes);
            let pixels = decoder.decode().map_err(|e| e.to_string())?;
            let (w, h) = decoder
                .dimensions()
                .ok_or_else(|| "no frame header".to_string())?;
            let channels = decoder
                .output_colorspace()
                .map_or(3, |c| c.num_components() as u8);
            Ok(Decoded {
                pixels,
                width: w as u32,
                height: h as u32,
                channels,
            })
        }
        Sniffed::Other(name) => Err(format!("a {name} image")),
        Sniffed::Unknown => Err("not an image file".into()),
    }
}

/// `x * a / 255` rounded as Pillow's `MULDIV255`.
fn muldiv255(x: u8, a: u8) -> u8 {
    let t = u32::from(x) * u32::from(a) + 128;
    (((t >> 8) + t) >> 8) as u8
}

/// `img` resized to `width` x `height` as Pillow's `Image.resize(size)` resizes it: bicubic,
/// and for images with alpha (LA, RGBA) on premultiplied samples, divided back after.
pub fn resized(img: &Decoded, width: u32, height: u32) -> Result<Decoded, String> {
    let c = usize::from(img.channels);
    let alpha = c == 2 || c == 4;
    let mut src = img.pixels.clone();
    if alpha {
        for px in src.chunks_exact_mut(c) {
            let a = px[c - 1];
            for v in &mut px[..c - 1] {
                *v = muldiv255(*v, a);
            }
        }
    }
    let mut pixels = resize_bicubic(
        &src,
        c,
        (img.width as usize, img.height as usize),
        (width as usize, height as usize),
    )
    .ok_or_else(|| {
        format!(
            "cannot resize {}x{} to {width}x{height}",
            img.width, img.height
        )
    })?;
    if alpha {
        for px in pixels.chunks_exact_mut(c) {
            let a = u32::from(px[c - 1]);
            if a != 0 && a != 255 {
                for v in &mut px[..c - 1] {
                    *v = (255 * u32::from(*v) / a).min(255) as u8;
                }
            }
        }
    }
    Ok(Decoded {
        pixels,
        width,
        height,
        channels: img.channels,
    })
}

/// Packed RGB of `img`: gray replicated, alpha dropped (Pillow's `convert("RGB")`, which
/// AIPerf applies before a JPEG is saved).
fn to_rgb(img: &Decoded) -> Vec<u8> {
    let c = usize::from(img.channels);
    match c {
        3 => img.pixels.clone(),
        _ => img
            .pixels
            .chunks_exact(c)
            .flat_map(|px| {
                if c >= 3 {
                    [px[0], px[1], px[2]]
                } else {
                    [px[0]; 3]
                }
            })
            .collect(),
    }
}

/// Encodes `img` in `format` (PNG keeps its channels, JPEG is RGB), as AIPerf saves it.
pub fn encode(img: &Decoded, format: ImageFormat) -> Result<EncodedMedia, MediaError> {
    match format {
        ImageFormat::Jpeg => {
            super::image::encode_rgb(&to_rgb(img), img.width, img.height, ImageFormat::Jpeg)
        }
        _ => super::image::encode_png_samples(&img.pixels, img.width, img.height, img.channels),
    }
}

/// Decodes the source at `path` (an error naming it: the header was checked at indexing, so a
/// failure here is a damaged body).
pub fn load(path: &Path) -> Result<Decoded, MediaError> {
    let bytes = std::fs::read(path).map_err(|source| MediaError::Io {
        path: path.display().to_string(),
        source,
    })?;
    decode(&bytes).map_err(|why| {
        MediaError::Source(format!(
            "{}: cannot decode the image: {why}",
            path.display()
        ))
    })
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
