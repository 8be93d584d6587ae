//! Resizing a decoded source image to a drawn size (`--image-source DIR`), as AIPerf 0.13 does
//! it: Pillow's `Image.resize(size)` with its default filter for RGB images, bicubic
//! (a = -0.5), separable, antialiased when shrinking, 8-bit fixed-point weights, the
//! horizontal pass before the vertical one with each pass rounded to 8 bits
//! (docs/multimodal.md).
//!
//! Written from the published algorithm (Keys' cubic convolution; the support widened by
//! the scale factor when shrinking) and checked against Pillow's own output in the tests.

/// Fraction bits of the fixed-point weights (8-bit pixels: 32 - 8 - 2).
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// Keys' cubic kernel with a = -0.5, zero beyond |x| = 2.
fn bicubic(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
}

/// For each output position, the first input index and its fixed-point weights.
fn coefficients(in_size: usize, out_size: usize) -> Vec<(usize, Vec<i32>)> {
    let scale = in_size as f64 / out_size as f64;
    let filter_scale = scale.max(1.0);
    let support = 2.0 * filter_scale;
    (0..out_size)
        .map(|xx| {
            let center = (xx as f64 + 0.5) * scale;
            // Truncation as a C cast; a negative start is clamped to 0 either way.
            let xmin = ((center - support + 0.5) as i64).max(0) as usize;
            let xmax = ((center + support + 0.5) as i64).clamp(0, in_size as i64) as usize;
            let raw: Vec<f64> = (xmin..xmax.max(xmin))
                .map(|x| bicubic((x as f64 - center + 0.5) / filter_scale))
                .collect();
            let total: f64 = raw.iter().sum();
            let one = f64::from(1u32 << PRECISION_BITS);
            let fixed = raw
                .iter()
                .map(|&w| {
                    let w = if total != 0.0 { w / total } else { w };
                    // Round half away from zero, then truncate, as Pillow does.
                    (if w < 0.0 {
                        w * one - 0.5
                    } else {
                        w * one + 0.5
                    }) as i32
                })
                .collect();
            (xmin, fixed)
        })
        .collect()
}

/// The fixed-point sum back to a pixel value: round, shift, clamp to 0..=255.
fn clip8(acc: i64) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// One separable pass over `lines` lines of `len` pixels each; `stride` and `step` say how
/// a line and a pixel are laid out in `src` (in pixels), so the same code runs across rows
/// (horizontal) and down columns (vertical).
struct Pass {
    lines: usize,
    line_stride: usize,
    pixel_step: usize,
    out_len: usize,
}

fn run_pass(src: &[u8], channels: usize, pass: &Pass, coeffs: &[(usize, Vec<i32>)]) -> Vec<u8> {
    let mut out = vec![0u8; pass.lines * pass.out_len * channels];
    // Output is laid out as the input was: row-major, `channels` bytes a pixel.
    let (out_line_stride, out_pixel_step) = if pass.pixel_step == 1 {
        (pass.out_len, 1)
    } else {
        (1, pass.lines)
    };
    for line in 0..pass.lines {
        for (o, (start, weights)) in coeffs.iter().enumerate() {
            for c in 0..channels {
                let mut acc: i64 = 1 << (PRECISION_BITS - 1);
                for (k, &w) in weights.iter().enumerate() {
                    let px = line * pass.line_stride + (start + k) * pass.pixel_step;
                    acc += i64::from(src[px * channels + c]) * i64::from(w);
                }
                let px = line * out_line_stride + o * out_pixel_step;
                out[px * channels + c] = clip8(acc);
            }
        }
    }
    out
}

/// `pixels` (row-major, `channels` interleaved 8-bit samples a pixel, `width` x `height`)
/// resized to `new_width` x `new_height` as Pillow's default `resize` does. A dimension
/// that does not change is not resampled (Pillow skips that pass). Sizes must be at least 1
/// and `pixels` must hold `width * height * channels` bytes; otherwise `None`.
pub fn resize_bicubic(
    pixels: &[u8],
    channels: usize,
    (width, height): (usize, usize),
    (new_width, new_height): (usize, usize),
) -> Option<Vec<u8>> {
    if channels == 0
        || [width, height, new_width, new_height].contains(&0)
        || width.checked_mul(height)?.checked_mul(channels)? != pixels.len()
    {
        return None;
    }
    let mut cur = pixels.to_vec();
    if new_width != width {
        let pass = Pass {
            lines: height,
            line_stride: width,
            pixel_step: 1,
            out_len: new_width,
        };
        cur = run_pass(&cur, channels, &pass, &coefficients(width, new_width));
    }
    if new_height != height {
        let pass = Pass {
            lines: new_width,
            line_stride: 1,
            pixel_step: new_width,
            out_len: new_height,
        };
        cur = run_pass(&cur, channels, &pass, &coefficients(height, new_height));
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_values_by_hand() {
        // ((1.5x - 2.5)x^2 + 1) and -0.5((x - 5)x + 8)x - 4), worked by hand.
        assert_eq!(bicubic(0.0), 1.0);
        assert_eq!(bicubic(0.25), 0.8671875);
        assert_eq!(bicubic(-0.75), 0.2265625);
        assert_eq!(bicubic(1.25), -0.0703125);
        assert_eq!(bicubic(1.0), 0.0);
        assert_eq!(bicubic(2.0), 0.0);
    }

    #[test]
    fn halving_four_pixels_by_hand() {
        // 4 -> 2: scale 2, support 4, first output centred at 1.0 over inputs 0..4 with
        // kernel arguments -0.25, 0.25, 0.75, 1.25: weights 0.8671875, 0.8671875,
        // 0.2265625, -0.0703125 (sum 1.890625). For [0, 0, 0, 255]: 255 * -0.0703125 /
        // 1.890625 = -9.48 -> 0. Second output centred at 3.0 over inputs 0..4 with
        // arguments 1.25, 0.75, 0.25, -0.25: 255 * 0.8671875 / 1.890625 = 116.96 -> 117.
        let got = resize_bicubic(&[0, 0, 0, 255], 1, (4, 1), (2, 1)).unwrap();
        assert_eq!(got, vec![0, 117]);
    }

    #[test]
    fn same_size_is_unchanged_and_bad_shapes_are_refused() {
        let px: Vec<u8> = (0..24).map(|i| i * 10).collect();
        assert_eq!(resize_bicubic(&px, 3, (4, 2), (4, 2)).unwrap(), px);
        assert_eq!(resize_bicubic(&px, 3, (4, 3), (2, 2)), None);
        assert_eq!(resize_bicubic(&px, 3, (4, 2), (0, 2)), None);
        assert_eq!(resize_bicubic(&px, 0, (4, 2), (2, 2)), None);
    }

    /// A 5x4 RGB gradient with a bright spot, as `pillow_reference` below builds it.
    fn picture() -> Vec<u8> {
        let mut px = Vec::new();
        for y in 0..4u32 {
            for x in 0..5u32 {
                let spot = if (x, y) == (2, 1) { 200 } else { 0 };
                px.extend([
                    (x * 50 + spot).min(255) as u8,
                    (y * 60) as u8,
                    ((x * 7 + y * 31) % 256) as u8,
                ]);
            }
        }
        px
    }

    #[test]
    fn matches_pillow_up_and_down() {
        // Expected bytes from Pillow 12.3 (`pip install pillow`):
        //   python3 -c "from PIL import Image; im = Image.new('RGB', (5, 4));
        //   im.putdata([(min(x*50 + (200 if (x, y) == (2, 1) else 0), 255), y*60,
        //   (x*7 + y*31) % 256) for y in range(4) for x in range(5)]);
        //   print(list(im.resize((W, H)).tobytes()))"
        for ((w, h), want) in PILLOW {
            let got = resize_bicubic(&picture(), 3, (5, 4), (*w, *h)).unwrap();
            assert_eq!(&got, want, "{w}x{h}");
        }
    }

    #[allow(clippy::type_complexity)]
    const PILLOW: &[((usize, usize), &[u8])] = &[
        (
            (2, 2),
            &[60, 35, 24, 174, 35, 40, 47, 145, 81, 161, 145, 97],
        ),
        (
            (9, 7),
            &[
                0, 0, 0, 12, 0, 0, 45, 0, 4, 66, 0, 8, 88, 0, 12, 122, 0, 16, 157, 0, 20, 188, 0,
                24, 204, 0, 27, 0, 16, 8, 10, 16, 10, 42, 16, 14, 98, 16, 18, 153, 16, 22, 154, 16,
                26, 154, 16, 30, 186, 16, 34, 204, 16, 37, 0, 55, 28, 7, 55, 31, 37, 55, 35, 146,
                55, 39, 253, 55, 43, 202, 55, 47, 149, 55, 51, 183, 55, 55, 204, 55, 58, 0, 90, 45,
                9, 90, 49, 40, 90, 53, 114, 90, 57, 187, 90, 61, 170, 90, 65, 152, 90, 69, 185, 90,
                73, 204, 90, 76, 0, 125, 63, 12, 125, 66, 44, 125, 70, 70, 125, 74, 95, 125, 78,
                126, 125, 82, 156, 125, 86, 188, 125, 90, 204, 125, 93, 0, 164, 84, 12, 164, 87,
                44, 164, 91, 69, 164, 95, 94, 164, 99, 125, 164, 103, 156, 164, 107, 188, 164, 111,
                204, 164, 114, 0, 185, 94, 12, 185, 97, 44, 185, 101, 72, 185, 105, 100, 185, 109,
                128, 185, 113, 156, 185, 117, 188, 185, 121, 204, 185, 124,
            ],
        ),
        (
            (3, 6),
            &[
                18, 0, 0, 94, 0, 12, 182, 0, 24, 18, 25, 15, 148, 25, 27, 182, 25, 39, 18, 70, 38,
                184, 70, 50, 182, 70, 62, 18, 110, 59, 112, 110, 71, 182, 110, 83, 18, 155, 82, 95,
                155, 94, 182, 155, 106, 18, 184, 97, 100, 184, 109, 182, 184, 121,
            ],
        ),
        (
            (5, 2),
            &[
                0, 35, 18, 50, 35, 25, 171, 35, 32, 150, 35, 39, 200, 35, 46, 0, 145, 75, 50, 145,
                82, 119, 145, 89, 150, 145, 96, 200, 145, 103,
            ],
        ),
        ((1, 1), &[111, 90, 61]),
    ];
}
