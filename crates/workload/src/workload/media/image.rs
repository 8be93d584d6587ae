//! Synthetic images as AIPerf 0.13's image generator makes them: width and height each drawn
//! from a normal distribution truncated at zero and rounded up (at least 1 pixel), the format
//! fixed or drawn at random between PNG and JPEG, the pixels uniform noise (`noise`) or a source
//! image resized (`assets`, a directory). PNG at the default deflate level, JPEG at quality 85
//! with no chroma subsampling (AIPerf's encoder settings).

use std::sync::Arc;

use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::{Rng, RngExt};

use super::{EncodedMedia, MediaError};
use crate::workload::seq_dist::positive_normal_integer;

/// `--image-format`: a fixed format, or `random` (each image draws PNG or JPEG).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Random,
}

/// How images are drawn (`--image-width-mean`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageSpec {
    pub width_mean: f64,
    pub width_stddev: f64,
    pub height_mean: f64,
    pub height_stddev: f64,
    pub format: ImageFormat,
    /// Where the pixels come from (`--image-source`).
    pub source: ImageSource,
}

impl ImageSpec {
    /// Fixed-size images of one format (no spread).
    pub fn fixed(width: u32, height: u32, format: ImageFormat) -> Self {
        Self {
            width_mean: f64::from(width),
            width_stddev: 0.0,
            height_mean: f64::from(height),
            height_stddev: 0.0,
            format,
            source: ImageSource::Noise,
        }
    }
}

/// Where an image's pixels come from.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageSource {
    /// Uniform RGB noise at the drawn size.
    Noise,
    /// The images of a directory (a path, or AIPerf's `assets` found in an installed AIPerf),
    /// each drawn image resized from one of them.
    Dir {
        dir: PathBuf,
        sampling: SourceSampling,
    },
}

/// `--image-source-sampling`: how a source image is picked for each drawn image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceSampling {
    /// Each pick independent and uniform; a file may come twice in a row.
    RandomWithReplacement,
    /// Every file once per shuffled cycle, reshuffled when the cycle is used up.
    ShuffleCycle,
    /// The files in index order, wrapping around.
    SequentialCycle,
}

impl SourceSampling {
    /// AIPerf's spelling (case-insensitive), or `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "random-with-replacement" => Some(Self::RandomWithReplacement),
            "shuffle-cycle" => Some(Self::ShuffleCycle),
            "sequential-cycle" => Some(Self::SequentialCycle),
            _ => None,
        }
    }
}

/// The random streams of image generation, one per concern as in AIPerf (dimensions, format,
/// pixels), so that changing one does not shift the others.
#[derive(Debug)]
pub struct ImageRngs {
    pub dimensions: StdRng,
    pub format: StdRng,
    pub pixels: StdRng,
}

impl ImageRngs {
    /// The three streams, children of the run's root seed.
    pub fn new(seed: Option<u64>) -> Self {
        Self {
            dimensions: crate::workload::child_rng(seed, "dataset.image.dimensions"),
            format: crate::workload::child_rng(seed, "dataset.image.format"),
            pixels: crate::workload::child_rng(seed, "dataset.image.noise"),
        }
    }
}

/// Largest side accepted: JPEG's limit, and far beyond any model's input.
pub const MAX_SIDE: u32 = 65_535;

/// Draws one image's size and format from `spec` and encodes uniform RGB noise of that size.
pub fn generate_image(spec: &ImageSpec, rngs: &mut ImageRngs) -> Result<EncodedMedia, MediaError> {
    let (width, height, format) = draw_shape(spec, rngs)?;
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    rngs.pixels.fill_bytes(&mut pixels);
    encode_rgb(&pixels, width, height, format)
}

/// One image's width, height and concrete format, drawn as AIPerf draws them (format first,
/// then width, then height).
pub fn draw_shape(
    spec: &ImageSpec,
    rngs: &mut ImageRngs,
) -> Result<(u32, u32, ImageFormat), MediaError> {
    let format = match spec.format {
        ImageFormat::Random => {
            if rngs.format.random_bool(0.5) {
                ImageFormat::Png
            } else {
                ImageFormat::Jpeg
            }
        }
        fixed => fixed,
    };
    // AIPerf passes the integer parts of mean and stddev.
    let width = positive_normal_integer(
        spec.width_mean.trunc(),
        spec.width_stddev.trunc(),
        &mut rngs.dimensions,
    );
    let height = positive_normal_integer(
        spec.height_mean.trunc(),
        spec.height_stddev.trunc(),
        &mut rngs.dimensions,
    );
    for (flag, side) in [
        ("--image-width-mean", width),
        ("--image-height-mean", height),
    ] {
        if side > MAX_SIDE {
            return Err(MediaError::Invalid {
                flag,
                reason: format!("an image side of {side} pixels is over the {MAX_SIDE} limit"),
            });
        }
    }
    Ok((width, height, format))
}

/// Encodes packed RGB pixels (`width * height * 3` bytes) as PNG or JPEG.
pub fn encode_rgb(
    pixels: &[u8],
    width: u32,
    height: u32,
    format: ImageFormat,
) -> Result<EncodedMedia, MediaError> {
    let bytes = match format {
        ImageFormat::Png | ImageFormat::Random => encode_png(pixels, width, height)?,
        ImageFormat::Jpeg => encode_jpeg(pixels, width, height)?,
    };
    let (mime, name) = match format {
        ImageFormat::Jpeg => ("image/jpeg", "jpeg"),
        _ => ("image/png", "png"),
    };
    Ok(EncodedMedia {
        bytes: Arc::from(bytes),
        mime,
        format: name,
        width,
        height,
        duration_s: 0.0,
    })
}

fn encode_png(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MediaError> {
    encode_png_color(pixels, width, height, png::ColorType::Rgb)
}

/// A PNG of `channels` 8-bit samples a pixel (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA).
pub fn encode_png_samples(
    pixels: &[u8],
    width: u32,
    height: u32,
    channels: u8,
) -> Result<EncodedMedia, MediaError> {
    let color = match channels {
        1 => png::ColorType::Grayscale,
        2 => png::ColorType::GrayscaleAlpha,
        4 => png::ColorType::Rgba,
        _ => png::ColorType::Rgb,
    };
    let bytes = encode_png_color(pixels, width, height, color)?;
    Ok(EncodedMedia {
        bytes: Arc::from(bytes),
        mime: "image/png",
        format: "png",
        width,
        height,
        duration_s: 0.0,
    })
}

fn encode_png_color(
    pixels: &[u8],
    width: u32,
    height: u32,
    color: png::ColorType,
) -> Result<Vec<u8>, MediaError> {
    let err = |e: png::EncodingError| MediaError::Encode {
        what: "PNG",
        reason: e.to_string(),
    };
    let mut out = Vec::with_capacity(pixels.len() + pixels.len() / 64 + 1024);
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().map_err(err)?;
    writer.write_image_data(pixels).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}

fn encode_jpeg(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MediaError> {
    let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(MediaError::Invalid {
            flag: "--image-format",
            reason: format!("JPEG holds at most 65535 pixels a side, not {width}x{height}"),
        });
    };
    let mut out = Vec::with_capacity(pixels.len() / 2 + 1024);
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 85);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
    encoder
        .encode(pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| MediaError::Encode {
            what: "JPEG",
            reason: e.to_string(),
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::probe::{self, Probed};
    use super::*;

    #[test]
    fn same_seed_gives_identical_bytes_and_other_seed_does_not() {
        let spec = ImageSpec {
            width_mean: 40.0,
            width_stddev: 8.0,
            height_mean: 30.0,
            height_stddev: 5.0,
            format: ImageFormat::Random,
            source: ImageSource::Noise,
        };
        let run = |seed| {
            let mut rngs = ImageRngs::new(Some(seed));
            (0..6)
                .map(|_| generate_image(&spec, &mut rngs).unwrap())
                .collect::<Vec<_>>()
        };
        let (a, b, c) = (run(7), run(7), run(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn decoded_size_and_format_are_what_was_drawn() {
        for format in [ImageFormat::Png, ImageFormat::Jpeg] {
            let mut rngs = ImageRngs::new(Some(1));
            let img = generate_image(&ImageSpec::fixed(33, 17, format), &mut rngs).unwrap();
            // The probe reads the file's own header (IHDR, SOF), another code path.
            let got = probe::probe(&img.bytes).unwrap();
            let want = match format {
                ImageFormat::Png => "png",
                _ => "jpeg",
            };
            assert_eq!(
                got,
                Probed::Image {
                    format: want,
                    width: 33,
                    height: 17
                }
            );
            assert_eq!(img.format, want);
            assert_eq!(img.mime, format!("image/{want}"));
        }
    }

    #[test]
    fn png_pixels_round_trip() {
        let mut rngs = ImageRngs::new(Some(5));
        let (w, h) = (9u32, 4u32);
        let mut pixels = vec![0u8; (w * h * 3) as usize];
        rngs.pixels.fill_bytes(&mut pixels);
        let img = encode_rgb(&pixels, w, h, ImageFormat::Png).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(img.bytes.to_vec()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut buf).unwrap();
        assert_eq!(buf, pixels);
    }

    #[test]
    fn oversized_jpeg_is_a_named_error() {
        let err = encode_jpeg(&[], 70_000, 1).unwrap_err();
        assert!(err.to_string().starts_with("--image-format: JPEG holds"));
        let mut rngs = ImageRngs::new(Some(1));
        let err =
            draw_shape(&ImageSpec::fixed(70_000, 2, ImageFormat::Png), &mut rngs).unwrap_err();
        assert!(err.to_string().starts_with("--image-width-mean"), "{err}");
    }
}
