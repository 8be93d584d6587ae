//! The synthetic media flags (`--image-*`, `--audio-*`, `--video-*`) resolved into
//! [`MediaParams`] (docs/multimodal.md), refused as AIPerf refuses them.

use super::ConfigError;
use crate::cli::media::{AudioFormatArg, ImageFormatArg, MediaArgs, VideoFormatArg, VideoSynthArg};
use ringperf_wire::endpoint::EndpointKind;
use ringperf_workload::workload::media::image::{ImageSource, SourceSampling};
use ringperf_workload::workload::media::{
    AudioFormat, AudioSpec, ImageFormat, ImageSpec, MediaParams, VideoAudio, VideoFormat,
    VideoSpec, VideoSynthType,
};

/// The media every synthetic turn carries, or `None` when none is asked for.
pub fn from_args(
    a: &MediaArgs,
    endpoint: EndpointKind,
) -> Result<Option<MediaParams>, ConfigError> {
    let flag = |m: String| Err(ConfigError::flag(m));
    for (name, v) in [
        ("--image-width-mean", a.image_width_mean),
        ("--image-width-stddev", a.image_width_stddev),
        ("--image-height-mean", a.image_height_mean),
        ("--image-height-stddev", a.image_height_stddev),
        ("--audio-length-mean", a.audio_length_mean),
        ("--audio-length-stddev", a.audio_length_stddev),
        ("--video-duration", a.video_duration),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return flag(format!("{name} must be a number of at least 0, not {v}"));
        }
    }
    let Some(sampling) = SourceSampling::parse(&a.image_source_sampling) else {
        return flag(format!(
            "--image-source-sampling {}: expected one of random-with-replacement, \
             shuffle-cycle, sequential-cycle",
            a.image_source_sampling
        ));
    };
    let source = match a.image_source.to_ascii_lowercase().as_str() {
        "noise" => ImageSource::Noise,
        "assets" => ImageSource::Dir {
            dir: aiperf_assets().map_err(ConfigError::flag)?,
            sampling,
        },
        _ => ImageSource::Dir {
            dir: expand_user(&a.image_source),
            sampling,
        },
    };
    if source == ImageSource::Noise && sampling != SourceSampling::RandomWithReplacement {
        return flag(format!(
            "--image-source-sampling {}: it requires --image-source assets or a directory \
             path unless it is random-with-replacement; noise has no finite source pool",
            a.image_source_sampling
        ));
    }
    if a.video_width.is_some() != a.video_height.is_some() {
        return flag("--video-width and --video-height must be given together".into());
    }
    if a.video_fps == 0 {
        return flag("--video-fps must be at least 1".into());
    }
    let images = (a.image_batch_size > 0 && a.image_width_mean > 0.0 && a.image_height_mean > 0.0)
        .then(|| {
            let format = match a.image_format {
                ImageFormatArg::Png => ImageFormat::Png,
                ImageFormatArg::Jpeg => ImageFormat::Jpeg,
                ImageFormatArg::Random => ImageFormat::Random,
            };
            let spec = ImageSpec {
                width_mean: a.image_width_mean,
                width_stddev: a.image_width_stddev,
                height_mean: a.image_height_mean,
                height_stddev: a.image_height_stddev,
                format,
                source,
            };
            (a.image_batch_size as usize, spec)
        });
    let audio = if a.audio_batch_size > 0 && a.audio_length_mean > 0.0 {
        let spec = AudioSpec {
            length_mean: a.audio_length_mean,
            length_stddev: a.audio_length_stddev,
            format: match a.audio_format {
                AudioFormatArg::Wav => AudioFormat::Wav,
                AudioFormatArg::Mp3 => AudioFormat::Mp3,
            },
            depths: a.audio_depths.clone(),
            sample_rates_khz: a.audio_sample_rates.clone(),
            channels: a.audio_num_channels,
        };
        spec.validate()
            .map_err(|e| ConfigError::flag(e.to_string()))?;
        Some((a.audio_batch_size as usize, spec))
    } else {
        None
    };
    let video_format = match a.video_format {
        VideoFormatArg::Mp4 => VideoFormat::Mp4,
        VideoFormatArg::Webm => VideoFormat::Webm,
    };
    let video_audio = video_audio(a, video_format)?;
    let video = match (a.video_batch_size, a.video_width, a.video_height) {
        (n, Some(width), Some(height)) if n > 0 => Some((
            n as usize,
            VideoSpec {
                width,
                height,
                duration_s: a.video_duration,
                fps: a.video_fps,
                format: video_format,
                codec: a.video_codec.clone(),
                synth: match a.video_synth_type {
                    VideoSynthArg::MovingShapes => VideoSynthType::MovingShapes,
                    VideoSynthArg::GridClock => VideoSynthType::GridClock,
                    VideoSynthArg::Noise => VideoSynthType::Noise,
                },
                audio: video_audio,
            },
        )),
        _ => None,
    };
    let params = MediaParams {
        images,
        audio,
        video,
    };
    if endpoint == EndpointKind::ImageRetrieval {
        // Its body is a list of images and nothing else (AIPerf refuses every request without one).
        if params.images.is_none() || params.audio.is_some() || params.video.is_some() {
            return flag(
                "--endpoint-type image-retrieval sends images only: give --image-width-mean and \
                 --image-height-mean (and no --audio-* or --video-* lengths)"
                    .into(),
            );
        }
        return Ok(Some(params));
    }
    if !params.any() {
        return Ok(None);
    }
    if !matches!(
        endpoint,
        EndpointKind::Chat
            | EndpointKind::ImageEdit
            | EndpointKind::AudioTranscription
            | EndpointKind::Responses
            | EndpointKind::Messages
            | EndpointKind::Template
    ) {
        return flag(format!(
            "synthetic images, audio and video are sent by the chat, responses, messages, \
             template, image-edit and audio-transcription endpoint types only, not {}",
            endpoint.as_str()
        ));
    }
    // What AIPerf's Responses and Anthropic Messages endpoints refuse when they format a turn.
    let refused = ringperf_wire::endpoint::payload::refused_media(
        endpoint,
        params.audio.is_some(),
        params.video.is_some(),
    );
    if let Some(message) = refused {
        return flag(format!("--endpoint-type {}: {message}", endpoint.as_str()));
    }
    Ok(Some(params))
}

/// The embedded audio track of synthetic video (`--video-audio-*`), `None` with 0 channels,
/// refused as AIPerf 0.13's video settings refuse it. The rate is in kHz, or in Hz above 96.
fn video_audio(a: &MediaArgs, format: VideoFormat) -> Result<Option<VideoAudio>, ConfigError> {
    let flag = |m: String| Err(ConfigError::flag(m));
    let channels = a.video_audio_num_channels;
    if channels > 2 {
        return flag(format!(
            "--video-audio-num-channels {channels}: 0 (no audio track), 1 (mono) or 2 (stereo)"
        ));
    }
    if channels == 0 {
        if let Some(codec) = &a.video_audio_codec {
            return flag(format!(
                "--video-audio-codec '{codec}' is set but --video-audio-num-channels is 0 \
                 (audio disabled). Set --video-audio-num-channels to 1 or 2 to enable audio."
            ));
        }
        return Ok(None);
    }
    let rate = a.video_audio_sample_rate;
    let khz = if rate > 96.0 { rate / 1000.0 } else { rate };
    if !(8.0..=96.0).contains(&khz) {
        return flag(format!(
            "--video-audio-sample-rate {rate}: 8 to 96 kHz (or 8000 to 96000 Hz)"
        ));
    }
    if ![8, 16, 24, 32].contains(&a.video_audio_depth) {
        return flag(format!(
            "--video-audio-depth {}: 8, 16, 24 or 32 bits",
            a.video_audio_depth
        ));
    }
    let codec = match a.video_audio_codec.as_deref().map(str::to_ascii_lowercase) {
        None => VideoAudio::default_codec(format),
        Some(c) => match c.as_str() {
            "libvorbis" => "libvorbis",
            "libopus" => "libopus",
            "aac" => "aac",
            _ => {
                return flag(format!(
                    "--video-audio-codec {c}: one of libvorbis, libopus, aac"
                ));
            }
        },
    };
    Ok(Some(VideoAudio {
        sample_rate_hz: (khz * 1000.0) as u32,
        channels,
        depth: a.video_audio_depth,
        codec,
    }))
}

/// `~` and `~/...` as the user's home (Python's `Path.expanduser`, which AIPerf applies).
fn expand_user(path: &str) -> std::path::PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty());
    match (path, home()) {
        ("~", Some(h)) => h.into(),
        (p, Some(h)) if p.starts_with("~/") => std::path::Path::new(&h).join(&p[2..]),
        (p, _) => p.into(),
    }
}

/// `--image-source assets`: the photographs AIPerf ships (`aiperf/dataset/generator/assets/
/// source_images`), read from an AIPerf installed for `python3` (`RINGPERF_PYTHON` names
/// another interpreter). ringperf does not ship them.
fn aiperf_assets() -> Result<std::path::PathBuf, String> {
    let python = std::env::var("RINGPERF_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = std::process::Command::new(&python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('aiperf'); \
             print(list(s.submodule_search_locations)[0] if s else '')",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let package = found
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let dir = std::path::Path::new(&package).join("dataset/generator/assets/source_images");
    if package.is_empty() || !dir.is_dir() {
        return Err(format!(
            "--image-source assets: these are the photographs AIPerf ships inside its package, \
             read by ringperf from an installed AIPerf, and `{python}` finds none (install \
             aiperf for it, set RINGPERF_PYTHON to an interpreter that has it, or pass a \
             directory of images: --image-source DIR)"
        ));
    }
    Ok(dir)
}
