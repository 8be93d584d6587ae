//! Audio Input, Image Input and Video Input: the synthetic media of every turn (docs/multimodal.md).
//! Checked and resolved in [`crate::config::media`].

use clap::{Args, ValueEnum};

/// `--image-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageFormatArg {
    Png,
    Jpeg,
    Random,
}

/// `--audio-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AudioFormatArg {
    Wav,
    Mp3,
}

/// `--video-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VideoFormatArg {
    Mp4,
    Webm,
}

/// `--video-synth-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VideoSynthArg {
    #[value(name = "moving_shapes")]
    MovingShapes,
    #[value(name = "grid_clock")]
    GridClock,
    Noise,
}

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MediaArgs {
    // ----- Audio Input -----
    /// Audio clips per request (chat). Audio is sent when `--audio-length-mean` is above 0.
    #[arg(
        long = "audio-batch-size",
        visible_alias = "batch-size-audio",
        default_value_t = 1,
        help_heading = "Audio Input"
    )]
    pub audio_batch_size: u32,
    /// Mean clip length in seconds (normal distribution, at least 0.01 s); 0 sends no audio.
    #[arg(
        long = "audio-length-mean",
        default_value_t = 0.0,
        help_heading = "Audio Input"
    )]
    pub audio_length_mean: f64,
    /// Standard deviation of the clip length in seconds.
    #[arg(
        long = "audio-length-stddev",
        default_value_t = 0.0,
        help_heading = "Audio Input"
    )]
    pub audio_length_stddev: f64,
    /// Audio file format: wav, or mp3 (encoded by the system's FFmpeg).
    #[arg(
        long = "audio-format",
        value_enum,
        default_value = "wav",
        ignore_case = true,
        help_heading = "Audio Input"
    )]
    pub audio_format: AudioFormatArg,
    /// Bit depths to pick from at random per clip (8, 16, 24, 32).
    #[arg(long = "audio-depths", num_args = 1.., value_delimiter = ',', default_values_t = [16u16], help_heading = "Audio Input")]
    pub audio_depths: Vec<u16>,
    /// Sample rates in kHz to pick from at random per clip.
    #[arg(long = "audio-sample-rates", num_args = 1.., value_delimiter = ',', default_values_t = [16.0f64], help_heading = "Audio Input")]
    pub audio_sample_rates: Vec<f64>,
    /// Channels: 1 (mono) or 2 (stereo).
    #[arg(
        long = "audio-num-channels",
        default_value_t = 1,
        help_heading = "Audio Input"
    )]
    pub audio_num_channels: u16,

    // ----- Image Input -----
    /// Mean image width in pixels (normal distribution); images are sent when both means are
    /// above 0.
    #[arg(
        long = "image-width-mean",
        default_value_t = 0.0,
        help_heading = "Image Input"
    )]
    pub image_width_mean: f64,
    /// Standard deviation of the image width in pixels.
    #[arg(
        long = "image-width-stddev",
        default_value_t = 0.0,
        help_heading = "Image Input"
    )]
    pub image_width_stddev: f64,
    /// Mean image height in pixels.
    #[arg(
        long = "image-height-mean",
        default_value_t = 0.0,
        help_heading = "Image Input"
    )]
    pub image_height_mean: f64,
    /// Standard deviation of the image height in pixels.
    #[arg(
        long = "image-height-stddev",
        default_value_t = 0.0,
        help_heading = "Image Input"
    )]
    pub image_height_stddev: f64,
    /// Images per request (chat).
    #[arg(
        long = "image-batch-size",
        visible_alias = "batch-size-image",
        default_value_t = 1,
        help_heading = "Image Input"
    )]
    pub image_batch_size: u32,
    /// Image format: png, jpeg, or random (each image draws one).
    #[arg(
        long = "image-format",
        value_enum,
        default_value = "png",
        ignore_case = true,
        help_heading = "Image Input"
    )]
    pub image_format: ImageFormatArg,
    /// Where pixels come from: `noise` (uniform random pixels), a directory of PNG/JPEG images
    /// (each drawn image is one of them resized), or `assets` (the images AIPerf ships, read
    /// from an installed AIPerf).
    #[arg(
        long = "image-source",
        default_value = "noise",
        help_heading = "Image Input"
    )]
    pub image_source: String,
    /// How source images are picked: random-with-replacement, shuffle-cycle or
    /// sequential-cycle; with `noise` only random-with-replacement.
    #[arg(
        long = "image-source-sampling",
        default_value = "random-with-replacement",
        help_heading = "Image Input"
    )]
    pub image_source_sampling: String,

    // ----- Video Input -----
    /// Videos per request (chat). Video is sent when `--video-width` and `--video-height` are
    /// given.
    #[arg(
        long = "video-batch-size",
        visible_alias = "batch-size-video",
        default_value_t = 1,
        help_heading = "Video Input"
    )]
    pub video_batch_size: u32,
    /// Seconds per clip (frames = duration × fps).
    #[arg(
        long = "video-duration",
        default_value_t = 5.0,
        help_heading = "Video Input"
    )]
    pub video_duration: f64,
    /// Frames per second.
    #[arg(long = "video-fps", default_value_t = 4, help_heading = "Video Input")]
    pub video_fps: u32,
    /// Frame width in pixels (with `--video-height`).
    #[arg(long = "video-width", help_heading = "Video Input")]
    pub video_width: Option<u32>,
    /// Frame height in pixels (with `--video-width`).
    #[arg(long = "video-height", help_heading = "Video Input")]
    pub video_height: Option<u32>,
    /// Frames: moving_shapes, grid_clock or noise.
    #[arg(
        long = "video-synth-type",
        value_enum,
        default_value = "moving_shapes",
        help_heading = "Video Input"
    )]
    pub video_synth_type: VideoSynthArg,
    /// Container: webm or mp4 (encoded by the system's FFmpeg).
    #[arg(
        long = "video-format",
        value_enum,
        default_value = "webm",
        ignore_case = true,
        help_heading = "Video Input"
    )]
    pub video_format: VideoFormatArg,
    /// FFmpeg video encoder.
    #[arg(
        long = "video-codec",
        default_value = "libvpx-vp9",
        help_heading = "Video Input"
    )]
    pub video_codec: String,
    /// Sample rate of an embedded audio track (Hz or kHz).
    #[arg(
        long = "video-audio-sample-rate",
        default_value_t = 44100.0,
        help_heading = "Video Input"
    )]
    pub video_audio_sample_rate: f64,
    /// Channels of an embedded audio track: 0 (none), 1 or 2 (Gaussian noise muxed by FFmpeg).
    #[arg(
        long = "video-audio-num-channels",
        default_value_t = 0,
        help_heading = "Video Input"
    )]
    pub video_audio_num_channels: u16,
    /// Codec of an embedded audio track (libvorbis, libopus, aac; default by container).
    #[arg(long = "video-audio-codec", help_heading = "Video Input")]
    pub video_audio_codec: Option<String>,
    /// Bit depth of an embedded audio track.
    #[arg(
        long = "video-audio-depth",
        default_value_t = 16,
        help_heading = "Video Input"
    )]
    pub video_audio_depth: u16,
}
