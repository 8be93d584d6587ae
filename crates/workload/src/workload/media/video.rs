//! Synthetic video as AIPerf 0.13's video generator makes it: `duration × fps` RGB frames
//! (moving shapes, a grid clock, or noise) encoded by the system's FFmpeg into MP4 or WebM with
//! the asked codec and `yuv420p` pixels.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, RngExt};

use super::audio::{AudioShape, noise_wav};
use super::{EncodedMedia, MediaError, ffmpeg};

/// `--video-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoFormat {
    Mp4,
    Webm,
}

impl VideoFormat {
    pub fn name(self) -> &'static str {
        match self {
            Self::Mp4 => "mp4",
            Self::Webm => "webm",
        }
    }
}

/// `--video-synth-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoSynthType {
    MovingShapes,
    GridClock,
    Noise,
}

/// How a video is made (`--video-duration`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct VideoSpec {
    pub width: u32,
    pub height: u32,
    pub duration_s: f64,
    pub fps: u32,
    pub format: VideoFormat,
    /// FFmpeg's video encoder name (`--video-codec`, e.g. `libx264`, `libvpx-vp9`).
    pub codec: String,
    pub synth: VideoSynthType,
    /// An audio track muxed into every clip (`--video-audio-num-channels` 1 or 2).
    pub audio: Option<VideoAudio>,
}

/// The embedded audio track (`--video-audio-*`): Gaussian noise as long as the clip, written
/// as a WAV of this shape and encoded by FFmpeg with `codec`.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoAudio {
    pub sample_rate_hz: u32,
    pub channels: u16,
    pub depth: u16,
    /// FFmpeg's audio encoder: `libvorbis`, `libopus` or `aac`.
    pub codec: &'static str,
}

impl VideoAudio {
    /// The encoder a container gets when `--video-audio-codec` is not given, as AIPerf maps it.
    pub fn default_codec(format: VideoFormat) -> &'static str {
        match format {
            VideoFormat::Webm => "libvorbis",
            VideoFormat::Mp4 => "libopus",
        }
    }
}

impl VideoSpec {
    /// Frames in a clip: `int(duration × fps)`, at least 1.
    pub fn frames(&self) -> u32 {
        ((self.duration_s * f64::from(self.fps)) as u32).max(1)
    }
}

/// Draws the clip's frames (from `rng`) and its audio track if it has one (from `audio_rng`), and
/// has FFmpeg encode them.
pub fn generate_video(
    spec: &VideoSpec,
    rng: &mut StdRng,
    audio_rng: &mut StdRng,
) -> Result<EncodedMedia, MediaError> {
    if spec.width == 0 || spec.height == 0 || spec.fps == 0 || spec.duration_s <= 0.0 {
        return Err(MediaError::Invalid {
            flag: "--video-duration",
            reason: format!(
                "a {}x{} video of {} s at {} fps has no frames",
                spec.width, spec.height, spec.duration_s, spec.fps
            ),
        });
    }
    // yuv420p needs even sides: FFmpeg refuses odd ones for most codecs.
    if spec.width % 2 == 1 || spec.height % 2 == 1 {
        return Err(MediaError::Invalid {
            flag: "--video-width",
            reason: format!("{}x{}: video sides must be even", spec.width, spec.height),
        });
    }
    let frames = frames(spec, rng);
    let size = format!("{}x{}", spec.width, spec.height);
    let fps = spec.fps.to_string();
    let mut args = vec![
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        &size,
        "-r",
        &fps,
        "-i",
        "pipe:0",
    ];
    // The track is a WAV in a file of its own (stdin carries the frames); the file goes when
    // `_track` does, after FFmpeg has read it.
    let _track;
    let track_path;
    if let Some(audio) = &spec.audio {
        let shape = AudioShape {
            seconds: spec.duration_s,
            sample_rate: audio.sample_rate_hz,
            depth: audio.depth,
            channels: audio.channels,
            frames: (spec.duration_s * f64::from(audio.sample_rate_hz)) as u64,
        };
        _track = TempFile::with_bytes("video-audio", "wav", &noise_wav(&shape, audio_rng)?)?;
        track_path = _track.0.to_string_lossy().into_owned();
        args.extend_from_slice(&["-i", &track_path]);
    }
    args.extend_from_slice(&["-vcodec", &spec.codec, "-pix_fmt", "yuv420p"]);
    if let Some(audio) = &spec.audio {
        args.extend_from_slice(&["-acodec", audio.codec, "-shortest"]);
    }
    // To a seekable file, never a pipe, as AIPerf: WebM records its duration (from which
    // frame-sampling decoders such as vLLM's derive the frame count) only when the muxer can
    // seek back to the header, and MP4 moves its index to the front (`faststart`).
    if spec.format == VideoFormat::Mp4 {
        args.extend_from_slice(&["-movflags", "faststart"]);
    }
    let out = TempFile::new("video", spec.format.name());
    let out_path = out.0.to_string_lossy().into_owned();
    args.extend_from_slice(&["-f", spec.format.name(), "-y", &out_path]);
    ffmpeg::run(&args, &frames, "--video-format")?;
    let bytes = std::fs::read(&out.0).map_err(|e| {
        MediaError::Ffmpeg(format!(
            "--video-format: reading FFmpeg's output {out_path}: {e}"
        ))
    })?;
    Ok(EncodedMedia {
        bytes: Arc::from(bytes),
        mime: match spec.format {
            VideoFormat::Mp4 => "video/mp4",
            VideoFormat::Webm => "video/webm",
        },
        format: spec.format.name(),
        width: spec.width,
        height: spec.height,
        duration_s: f64::from(spec.frames()) / f64::from(spec.fps),
    })
}

/// A path in the temporary directory, unique to this process and call; the file (if one was
/// made there) is removed when this is dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(what: &str, ext: &str) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(std::env::temp_dir().join(format!(
            "ringperf-{what}-{}-{}.{ext}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )))
    }

    fn with_bytes(what: &str, ext: &str, bytes: &[u8]) -> Result<Self, MediaError> {
        let file = Self::new(what, ext);
        std::fs::write(&file.0, bytes).map_err(|e| MediaError::Encode {
            what: "WAV",
            reason: format!("writing {}: {e}", file.0.display()),
        })?;
        Ok(file)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Best effort: a file left behind in the temporary directory harms nothing.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Every frame of the clip as packed RGB, one after the other.
pub fn frames(spec: &VideoSpec, rng: &mut StdRng) -> Vec<u8> {
    let (w, h) = (spec.width as usize, spec.height as usize);
    let n = spec.frames() as usize;
    let mut out = vec![0u8; w * h * 3 * n];
    match spec.synth {
        VideoSynthType::Noise => rng.fill_bytes(&mut out),
        VideoSynthType::GridClock => {
            for (i, frame) in out.chunks_exact_mut(w * h * 3).enumerate() {
                grid_frame(frame, w, h, i);
            }
        }
        VideoSynthType::MovingShapes => {
            let side = (w.min(h) / 6).max(1);
            let colour = [rng.random::<u8>(), rng.random::<u8>(), rng.random::<u8>()];
            for (i, frame) in out.chunks_exact_mut(w * h * 3).enumerate() {
                let x0 = (i * 7) % w.saturating_sub(side).max(1);
                let y0 = (i * 5) % h.saturating_sub(side).max(1);
                for y in y0..(y0 + side).min(h) {
                    for x in x0..(x0 + side).min(w) {
                        frame[(y * w + x) * 3..][..3].copy_from_slice(&colour);
                    }
                }
            }
        }
    }
    out
}

/// A grey grid whose one lit cell moves a step each frame (the frame number on a clock face).
fn grid_frame(frame: &mut [u8], w: usize, h: usize, index: usize) {
    let cells = 8usize;
    let (cw, ch) = ((w / cells).max(1), (h / cells).max(1));
    let lit = index % (cells * cells);
    for y in 0..h {
        for x in 0..w {
            let on_line = x % cw == 0 || y % ch == 0;
            let cell = (y / ch).min(cells - 1) * cells + (x / cw).min(cells - 1);
            let v = if on_line {
                128
            } else if cell == lit {
                255
            } else {
                16
            };
            frame[(y * w + x) * 3..][..3].fill(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_count_and_determinism() {
        let spec = VideoSpec {
            width: 8,
            height: 6,
            duration_s: 0.5,
            fps: 4,
            format: VideoFormat::Webm,
            codec: "libvpx-vp9".into(),
            synth: VideoSynthType::MovingShapes,
            audio: None,
        };
        assert_eq!(spec.frames(), 2);
        let mut a = crate::workload::child_rng(Some(1), "v");
        let mut b = crate::workload::child_rng(Some(1), "v");
        assert_eq!(frames(&spec, &mut a), frames(&spec, &mut b));
        assert_eq!(frames(&spec, &mut a).len(), 8 * 6 * 3 * 2);
    }

    #[test]
    fn odd_sides_are_refused_before_ffmpeg() {
        let spec = VideoSpec {
            width: 7,
            height: 6,
            duration_s: 1.0,
            fps: 1,
            format: VideoFormat::Mp4,
            codec: "libx264".into(),
            synth: VideoSynthType::Noise,
            audio: None,
        };
        let mut rng = crate::workload::child_rng(Some(1), "v");
        let mut audio_rng = crate::workload::child_rng(Some(1), "a");
        let err = generate_video(&spec, &mut rng, &mut audio_rng).unwrap_err();
        assert!(err.to_string().starts_with("--video-width"), "{err}");
    }
}
