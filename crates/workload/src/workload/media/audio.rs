//! Synthetic audio as AIPerf 0.13's audio generator makes it: a duration drawn from a normal
//! distribution with a 0.01 s floor (rejection sampling), a sample rate and a bit depth each
//! picked from their lists, Gaussian noise (σ 0.3, clipped to ±1) per channel, written as WAV
//! (PCM 8, 16, 24 or 32 bits) or MP3 (through FFmpeg; MP3's sample rates only).

use std::sync::Arc;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use super::{EncodedMedia, MediaError};

/// `--audio-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AudioFormat {
    Wav,
    Mp3,
}

/// Sample rates MP3 can carry, in Hz.
pub const MP3_SAMPLE_RATES: [u32; 9] =
    [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];

/// Bit depths a WAV can carry here.
pub const DEPTHS: [u16; 4] = [8, 16, 24, 32];

/// How audio is drawn (`--audio-length-mean`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct AudioSpec {
    /// Mean length in seconds.
    pub length_mean: f64,
    pub length_stddev: f64,
    pub format: AudioFormat,
    /// Bit depths to pick from (`--audio-depths`).
    pub depths: Vec<u16>,
    /// Sample rates to pick from, in kHz (`--audio-sample-rates`).
    pub sample_rates_khz: Vec<f64>,
    /// `--audio-num-channels` (1 or 2).
    pub channels: u16,
}

impl Default for AudioSpec {
    /// AIPerf's defaults: 0 s (audio off), WAV, 16 bits, 16 kHz, mono.
    fn default() -> Self {
        Self {
            length_mean: 0.0,
            length_stddev: 0.0,
            format: AudioFormat::Wav,
            depths: vec![16],
            sample_rates_khz: vec![16.0],
            channels: 1,
        }
    }
}

impl AudioSpec {
    /// Checks every choice up front, so that a bad flag is refused before any audio is made.
    pub fn validate(&self) -> Result<(), MediaError> {
        let invalid = |flag, reason: String| Err(MediaError::Invalid { flag, reason });
        if self.length_mean < 0.01 {
            return invalid(
                "--audio-length-mean",
                "audio length must be greater than 0.01 seconds".into(),
            );
        }
        if self.depths.is_empty() {
            return invalid("--audio-depths", "at least one bit depth is needed".into());
        }
        if let Some(d) = self.depths.iter().find(|d| !DEPTHS.contains(d)) {
            return invalid(
                "--audio-depths",
                format!("unsupported bit depth: {d}; supported bit depths are: [8, 16, 24, 32]"),
            );
        }
        if self.sample_rates_khz.is_empty() {
            return invalid("--audio-sample-rates", "at least one rate is needed".into());
        }
        for &khz in &self.sample_rates_khz {
            let hz = rate_hz(khz);
            if hz == 0 {
                return invalid("--audio-sample-rates", format!("{khz} kHz is not a rate"));
            }
            if self.format == AudioFormat::Mp3 && !MP3_SAMPLE_RATES.contains(&hz) {
                return invalid(
                    "--audio-sample-rates",
                    format!(
                        "MP3 format only supports the following sample rates (in Hz): \
                         {MP3_SAMPLE_RATES:?}. Got {hz} Hz"
                    ),
                );
            }
        }
        if !(1..=2).contains(&self.channels) {
            return invalid(
                "--audio-num-channels",
                format!("{} channels; 1 (mono) or 2 (stereo)", self.channels),
            );
        }
        Ok(())
    }
}

/// A rate in kHz as AIPerf turns it into Hz (`int(khz * 1000)`); 0 for a non-positive one.
fn rate_hz(khz: f64) -> u32 {
    let hz = (khz * 1000.0).trunc();
    if hz.is_finite() && hz >= 1.0 && hz <= f64::from(u32::MAX) {
        hz as u32
    } else {
        0
    }
}

/// The random streams of audio generation (duration, format choices, samples).
#[derive(Debug)]
pub struct AudioRngs {
    pub duration: StdRng,
    pub format: StdRng,
    pub data: StdRng,
}

impl AudioRngs {
    pub fn new(seed: Option<u64>) -> Self {
        Self {
            duration: crate::workload::child_rng(seed, "dataset.audio.duration"),
            format: crate::workload::child_rng(seed, "dataset.audio.format"),
            data: crate::workload::child_rng(seed, "dataset.audio.data"),
        }
    }
}

/// The shape of one clip, drawn before its samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AudioShape {
    pub seconds: f64,
    pub sample_rate: u32,
    pub depth: u16,
    pub channels: u16,
    /// Frames (samples per channel): `int(seconds * rate)`.
    pub frames: u64,
}

/// Draws a clip's duration (normal, rejected below 0.01 s), then its rate and depth.
pub fn draw_shape(spec: &AudioSpec, rngs: &mut AudioRngs) -> AudioShape {
    let seconds = match Normal::new(spec.length_mean, spec.length_stddev) {
        Ok(n) if spec.length_stddev > 0.0 => (0..10_000)
            .map(|_| n.sample(&mut rngs.duration))
            .find(|&x| x >= 0.01)
            .unwrap_or(spec.length_mean.max(0.01)),
        _ => spec.length_mean.max(0.01),
    };
    let rates = &spec.sample_rates_khz;
    let sample_rate = rate_hz(rates[rngs.format.random_range(0..rates.len())]);
    let depth = spec.depths[rngs.format.random_range(0..spec.depths.len())];
    AudioShape {
        seconds,
        sample_rate,
        depth,
        channels: spec.channels,
        frames: (seconds * f64::from(sample_rate)) as u64,
    }
}

/// Draws one clip from `spec` (call [`AudioSpec::validate`] first) and encodes it.
pub fn generate_audio(spec: &AudioSpec, rngs: &mut AudioRngs) -> Result<EncodedMedia, MediaError> {
    spec.validate()?;
    let shape = draw_shape(spec, rngs);
    let wav = noise_wav(&shape, &mut rngs.data)?;
    let (bytes, mime, format) = match spec.format {
        AudioFormat::Wav => (wav, "audio/wav", "wav"),
        AudioFormat::Mp3 => (
            super::ffmpeg::transcode(&wav, &["-f", "mp3"], "--audio-format mp3")?,
            "audio/mpeg",
            "mp3",
        ),
    };
    Ok(EncodedMedia {
        bytes: Arc::from(bytes),
        mime,
        format,
        width: 0,
        height: 0,
        duration_s: shape.seconds,
    })
}

/// A WAV file of Gaussian noise (σ 0.3 of full scale, clipped) of `shape`.
pub fn noise_wav(shape: &AudioShape, rng: &mut StdRng) -> Result<Vec<u8>, MediaError> {
    let err = |e: hound::Error| MediaError::Encode {
        what: "WAV",
        reason: e.to_string(),
    };
    let wav_spec = hound::WavSpec {
        channels: shape.channels,
        sample_rate: shape.sample_rate,
        bits_per_sample: shape.depth,
        sample_format: hound::SampleFormat::Int,
    };
    let samples = shape.frames as usize * usize::from(shape.channels);
    let bytes_per = usize::from(shape.depth / 8);
    let mut out = std::io::Cursor::new(Vec::with_capacity(44 + samples * bytes_per));
    let mut writer = hound::WavWriter::new(&mut out, wav_spec).map_err(err)?;
    let normal = Normal::new(0.0, 0.3).map_err(|e| MediaError::Encode {
        what: "WAV",
        reason: e.to_string(),
    })?;
    let full = f64::from((1u32 << (shape.depth - 1)) - 1);
    for _ in 0..samples {
        let x: f64 = normal.sample(rng);
        // Truncation toward zero, as numpy's `astype` does.
        let v = (x.clamp(-1.0, 1.0) * full) as i32;
        match shape.depth {
            8 => writer.write_sample(v as i8).map_err(err)?,
            16 => writer.write_sample(v as i16).map_err(err)?,
            _ => writer.write_sample(v).map_err(err)?,
        }
    }
    writer.finalize().map_err(err)?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::super::probe::{self, Probed};
    use super::*;

    fn spec(depths: Vec<u16>, rates: Vec<f64>, channels: u16) -> AudioSpec {
        AudioSpec {
            length_mean: 0.05,
            length_stddev: 0.01,
            depths,
            sample_rates_khz: rates,
            channels,
            ..AudioSpec::default()
        }
    }

    #[test]
    fn decoded_wav_holds_the_drawn_rate_depth_channels_and_length() {
        let spec = spec(vec![8, 16, 24, 32], vec![8.0, 16.0, 44.1], 2);
        let mut rngs = AudioRngs::new(Some(3));
        let mut depths = std::collections::BTreeSet::new();
        for _ in 0..40 {
            let clip = generate_audio(&spec, &mut rngs).unwrap();
            // hound reads the header back: another code path than the probe's.
            let reader = hound::WavReader::new(std::io::Cursor::new(clip.bytes.to_vec())).unwrap();
            let s = reader.spec();
            assert_eq!(s.channels, 2);
            assert!([8000, 16000, 44100].contains(&s.sample_rate));
            depths.insert(s.bits_per_sample);
            let frames = reader.duration();
            assert_eq!(frames, (clip.duration_s * f64::from(s.sample_rate)) as u32);
            let Probed::Audio {
                format,
                sample_rate,
                channels,
                seconds,
                ..
            } = probe::probe(&clip.bytes).unwrap()
            else {
                panic!("not audio")
            };
            assert_eq!((format, sample_rate, channels), ("wav", s.sample_rate, 2));
            assert!((seconds - clip.duration_s).abs() <= 1.0 / f64::from(s.sample_rate));
        }
        assert_eq!(depths.len(), 4, "every depth drawn in 40 clips: {depths:?}");
    }

    #[test]
    fn same_seed_same_bytes() {
        let spec = spec(vec![16], vec![16.0], 1);
        let a = generate_audio(&spec, &mut AudioRngs::new(Some(9))).unwrap();
        let b = generate_audio(&spec, &mut AudioRngs::new(Some(9))).unwrap();
        let c = generate_audio(&spec, &mut AudioRngs::new(Some(10))).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.bytes, c.bytes);
    }

    #[test]
    fn bad_choices_are_refused_by_flag() {
        let cases = [
            (spec(vec![12], vec![16.0], 1), "--audio-depths"),
            (spec(vec![16], vec![0.0], 1), "--audio-sample-rates"),
            (spec(vec![16], vec![16.0], 3), "--audio-num-channels"),
            (
                AudioSpec {
                    format: AudioFormat::Mp3,
                    ..spec(vec![16], vec![17.0], 1)
                },
                "--audio-sample-rates",
            ),
            (
                AudioSpec {
                    length_mean: 0.0,
                    ..spec(vec![16], vec![16.0], 1)
                },
                "--audio-length-mean",
            ),
        ];
        for (s, flag) in cases {
            let err = s.validate().unwrap_err().to_string();
            assert!(err.starts_with(flag), "{err}");
        }
    }
}
