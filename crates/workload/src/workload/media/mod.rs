//! Synthetic media for multimodal requests (docs/multimodal.md): noise images (PNG, JPEG),
//! noise audio (WAV, MP3 through FFmpeg) and synthetic video (MP4, WebM through FFmpeg), drawn
//! as AIPerf 0.13's generators draw them, plus the base64 and data-URI forms a body carries.
//!
//! Everything here runs before the run (the dataset is built before the first send); the
//! result is an [`EncodedMedia`] whose bytes are shared (`Arc`) by every request that uses it.
//! [`probe`] reads back what a body carried (the mock's truth log).

use std::sync::Arc;

pub mod audio;
pub mod ffmpeg;
pub mod image;
pub mod probe;
pub mod resize;
pub mod source;
pub mod video;

pub use audio::{AudioFormat, AudioSpec, generate_audio};
pub use image::{ImageFormat, ImageSpec, generate_image};
pub use video::{VideoAudio, VideoFormat, VideoSpec, VideoSynthType, generate_video};

/// One encoded medium: the file's bytes, its MIME type, and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedMedia {
    /// The encoded file (PNG, JPEG, WAV, MP3, MP4, WebM), shared by every request using it.
    pub bytes: Arc<[u8]>,
    /// `image/png`, `audio/wav`, `video/mp4`, ...
    pub mime: &'static str,
    /// The short format name AIPerf writes (`png`, `jpeg`, `wav`, `mp3`, `mp4`, `webm`).
    pub format: &'static str,
    /// Pixels across (images and video; 0 for audio).
    pub width: u32,
    /// Pixels down (images and video; 0 for audio).
    pub height: u32,
    /// Seconds of audio or video (0 for images).
    pub duration_s: f64,
}

impl EncodedMedia {
    /// `data:<mime>;base64,<bytes>`: how AIPerf sends an image or a video.
    pub fn data_uri(&self) -> String {
        data_uri(self.mime, &self.bytes)
    }

    /// `<format>,<base64>`: AIPerf's internal form of an audio clip (the chat part carries the
    /// base64 as `data` and the format as `format`).
    pub fn format_and_base64(&self) -> String {
        let mut out = String::with_capacity(self.format.len() + 1 + base64_len(self.bytes.len()));
        out.push_str(self.format);
        out.push(',');
        base64_into(&self.bytes, &mut out);
        out
    }

    /// The bytes as standard base64 (with padding).
    pub fn base64(&self) -> String {
        let mut out = String::with_capacity(base64_len(self.bytes.len()));
        base64_into(&self.bytes, &mut out);
        out
    }
}

/// Why a medium could not be made.
#[derive(Debug)]
pub enum MediaError {
    /// A size or parameter outside what the format can hold, named by its flag.
    Invalid { flag: &'static str, reason: String },
    /// The encoder failed.
    Encode { what: &'static str, reason: String },
    /// FFmpeg is needed (video, MP3) and was not found, or it failed.
    Ffmpeg(String),
    /// Reading a source file (`--image-source DIR`) or a scratch file.
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The source images of `--image-source`: a missing or empty directory, an image ringperf
    /// does not decode, a damaged file (the message says which).
    Source(String),
}

impl std::fmt::Display for MediaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid { flag, reason } => write!(f, "{flag}: {reason}"),
            Self::Encode { what, reason } => write!(f, "encoding {what}: {reason}"),
            Self::Ffmpeg(msg) | Self::Source(msg) => f.write_str(msg),
            Self::Io { path, source } => write!(f, "{path}: {source}"),
        }
    }
}

impl std::error::Error for MediaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `data:<mime>;base64,<base64 of bytes>`.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(13 + mime.len() + base64_len(bytes.len()));
    out.push_str("data:");
    out.push_str(mime);
    out.push_str(";base64,");
    base64_into(bytes, &mut out);
    out
}

/// Characters of the padded base64 of `n` bytes.
pub const fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the standard, padded base64 (RFC 4648 §4) of `bytes` to `out`.
pub fn base64_into(bytes: &[u8], out: &mut String) {
    out.reserve(base64_len(bytes.len()));
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(B64[((n >> shift) & 63) as usize]));
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let b1 = rest.get(1).copied().unwrap_or(0);
        let n = (u32::from(rest[0]) << 16) | (u32::from(b1) << 8);
        out.push(char::from(B64[((n >> 18) & 63) as usize]));
        out.push(char::from(B64[((n >> 12) & 63) as usize]));
        if rest.len() == 2 {
            out.push(char::from(B64[((n >> 6) & 63) as usize]));
        } else {
            out.push('=');
        }
        out.push('=');
    }
}

/// Decodes standard base64 (padding optional, no whitespace); `None` on any other character.
pub fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for chunk in text.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        // RFC 4648 §10.
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            let mut out = String::new();
            base64_into(plain.as_bytes(), &mut out);
            assert_eq!(out, encoded);
            assert_eq!(base64_len(plain.len()), encoded.len());
            assert_eq!(base64_decode(encoded.as_bytes()).unwrap(), plain.as_bytes());
        }
        // Every byte value, and the two characters beyond the alphanumerics.
        let all: Vec<u8> = (0..=255).collect();
        let mut out = String::new();
        base64_into(&all, &mut out);
        assert!(out.contains('+') && out.contains('/'));
        assert_eq!(base64_decode(out.as_bytes()).unwrap(), all);
        assert_eq!(base64_decode(b"Zm9v!"), None);
        assert_eq!(base64_decode(b"Z"), None);
    }

    #[test]
    fn data_uri_shape() {
        assert_eq!(data_uri("image/png", b"foo"), "data:image/png;base64,Zm9v");
    }
}

/// The synthetic media of every turn (`--image-*`, `--audio-*`, `--video-*`), resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaParams {
    /// Images per turn and how they are drawn; `None` when images are off.
    pub images: Option<(usize, ImageSpec)>,
    /// Audio clips per turn; `None` when audio is off.
    pub audio: Option<(usize, AudioSpec)>,
    /// Videos per turn; `None` when video is off.
    pub video: Option<(usize, VideoSpec)>,
}

impl MediaParams {
    /// Whether any medium is asked for.
    pub fn any(&self) -> bool {
        self.images.is_some() || self.audio.is_some() || self.video.is_some()
    }
}

/// One medium to make: its kind with its drawn shape and the seed of its pixels or samples.
enum Job {
    Image(u32, u32, ImageFormat, u64),
    /// A drawn size and format, resized from the source image of this index.
    Sourced(u32, u32, ImageFormat, usize),
    Audio(audio::AudioShape, AudioFormat, u64),
    /// The seeds of the frames and of the audio track.
    Video(u64, u64),
}

/// Adds the synthetic media of `params` to every turn of `dataset` (after its texts): shapes and
/// seeds are drawn in turn order from the run's seed, so the same seed gives byte-identical media;
/// the encoding then runs on every core (before the run), each medium stored once and shared.
pub fn attach(
    dataset: &mut ringperf_wire::conversation::Dataset,
    params: &MediaParams,
    seed: Option<u64>,
) -> Result<(), MediaError> {
    use rand::RngExt;
    if let Some((_, spec)) = &params.audio {
        spec.validate()?;
    }
    let mut image_rngs = image::ImageRngs::new(seed);
    let mut audio_rngs = audio::AudioRngs::new(seed);
    let mut video_rng = crate::workload::child_rng(seed, "dataset.video.frames");
    let mut video_audio_rng = crate::workload::child_rng(seed, "dataset.video.audio");
    // A directory of source images is indexed (every file's header checked) before any draw.
    let mut sources = match params.images.as_ref().map(|(_, spec)| &spec.source) {
        Some(image::ImageSource::Dir { dir, sampling }) => {
            let index = source::index(dir)?;
            let sampler = source::Sampler::new(*sampling, index.len(), seed);
            Some((index, sampler))
        }
        _ => None,
    };
    let mut jobs = Vec::new();
    for turn in dataset.conversations.iter().flat_map(|c| c.turns.iter()) {
        if !matches!(turn.content, ringperf_wire::conversation::Content::Texts(_)) {
            continue;
        }
        if let Some((n, spec)) = &params.images {
            for _ in 0..*n {
                let (w, h, f) = image::draw_shape(spec, &mut image_rngs)?;
                jobs.push(match &mut sources {
                    Some((_, sampler)) => Job::Sourced(w, h, f, sampler.pick()),
                    None => Job::Image(w, h, f, image_rngs.pixels.random()),
                });
            }
        }
        if let Some((n, spec)) = &params.audio {
            for _ in 0..*n {
                let shape = audio::draw_shape(spec, &mut audio_rngs);
                jobs.push(Job::Audio(shape, spec.format, audio_rngs.data.random()));
            }
        }
        if let Some((n, _)) = &params.video {
            for _ in 0..*n {
                jobs.push(Job::Video(video_rng.random(), video_audio_rng.random()));
            }
        }
    }
    let paths = sources.as_ref().map_or(&[][..], |(index, _)| &index[..]);
    let made = encode_all(&jobs, params, paths)?;
    let mut made = made.into_iter();
    for turn in dataset
        .conversations
        .iter_mut()
        .flat_map(|c| c.turns.iter_mut())
    {
        if !matches!(turn.content, ringperf_wire::conversation::Content::Texts(_)) {
            continue;
        }
        let per_turn = params.images.as_ref().map_or(0, |p| p.0)
            + params.audio.as_ref().map_or(0, |p| p.0)
            + params.video.as_ref().map_or(0, |p| p.0);
        turn.media.extend(made.by_ref().take(per_turn));
    }
    Ok(())
}

/// Encodes every job, the jobs split over the machine's cores; results in job order. Images
/// resized from a source (`paths`) are grouped by source, so each source is decoded once and
/// only as many decoded sources as there are threads are held at a time.
fn encode_all(
    jobs: &[Job],
    params: &MediaParams,
    paths: &[std::path::PathBuf],
) -> Result<Vec<ringperf_wire::conversation::Media>, MediaError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut by_source: Vec<Vec<usize>> = vec![Vec::new(); paths.len()];
    let mut plain = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        match job {
            Job::Sourced(.., src) if *src < paths.len() => by_source[*src].push(i),
            _ => plain.push(i),
        }
    }
    let groups: Vec<(usize, &Vec<usize>)> = by_source
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .collect();
    let chunk = plain.len().div_ceil(threads).max(1);
    let failed = || Err(MediaError::Ffmpeg("a media encoder thread failed".into()));
    let mut out: Vec<Option<ringperf_wire::conversation::Media>> = vec![None; jobs.len()];
    std::thread::scope(|s| {
        let plain_handles: Vec<_> = plain
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|&i| Ok((i, encode_job(&jobs[i], params)?)))
                        .collect::<Result<Vec<_>, MediaError>>()
                })
            })
            .collect();
        let groups = &groups;
        let sourced_handles: Vec<_> = (0..threads.min(groups.len()))
            .map(|t| {
                s.spawn(move || {
                    let mut made = Vec::new();
                    for (src, members) in groups.iter().skip(t).step_by(threads) {
                        let decoded = source::load(&paths[*src])?;
                        for &i in members.iter() {
                            let Job::Sourced(w, h, format, _) = jobs[i] else {
                                continue;
                            };
                            let img = source::resized(&decoded, w, h).map_err(|why| {
                                MediaError::Source(format!("{}: {why}", paths[*src].display()))
                            })?;
                            let img = source::encode(&img, format)?;
                            made.push((
                                i,
                                ringperf_wire::conversation::Media::Image(Arc::from(
                                    img.data_uri(),
                                )),
                            ));
                        }
                    }
                    Ok(made)
                })
            })
            .collect();
        for h in plain_handles.into_iter().chain(sourced_handles) {
            let part: Result<Vec<_>, MediaError> = h.join().unwrap_or_else(|_| failed());
            for (i, media) in part? {
                out[i] = Some(media);
            }
        }
        Ok::<(), MediaError>(())
    })?;
    out.into_iter()
        .map(|m| m.ok_or_else(|| MediaError::Ffmpeg("a medium was not made".into())))
        .collect()
}

fn encode_job(
    job: &Job,
    params: &MediaParams,
) -> Result<ringperf_wire::conversation::Media, MediaError> {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use ringperf_wire::conversation::Media;
    Ok(match job {
        Job::Sourced(..) => {
            return Err(MediaError::Source(
                "a source image was drawn outside the directory's index".into(),
            ));
        }
        Job::Image(w, h, format, seed) => {
            let mut pixels = vec![0u8; *w as usize * *h as usize * 3];
            StdRng::seed_from_u64(*seed).fill_bytes(&mut pixels);
            let img = image::encode_rgb(&pixels, *w, *h, *format)?;
            Media::Image(Arc::from(img.data_uri()))
        }
        Job::Audio(shape, format, seed) => {
            let wav = audio::noise_wav(shape, &mut StdRng::seed_from_u64(*seed))?;
            let (bytes, name) = match format {
                AudioFormat::Wav => (wav, "wav"),
                AudioFormat::Mp3 => (
                    ffmpeg::transcode(&wav, &["-f", "mp3"], "--audio-format mp3")?,
                    "mp3",
                ),
            };
            let mut clip = String::with_capacity(4 + base64_len(bytes.len()));
            clip.push_str(name);
            clip.push(',');
            base64_into(&bytes, &mut clip);
            Media::Audio(Arc::from(clip))
        }
        Job::Video(seed, audio_seed) => {
            let Some((_, spec)) = &params.video else {
                return Err(MediaError::Invalid {
                    flag: "--video-batch-size",
                    reason: "a video asked for without video parameters".into(),
                });
            };
            let video = generate_video(
                spec,
                &mut StdRng::seed_from_u64(*seed),
                &mut StdRng::seed_from_u64(*audio_seed),
            )?;
            Media::Video(Arc::from(video.data_uri()))
        }
    })
}
