//! Video generation: what `--endpoint-type video-generation` does once a job has finished
//! (docs/endpoints.md).

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone)]
pub struct VideoGenerationArgs {
    /// Fetch each finished video job's content (`GET /v1/videos/{id}/content`, or the job's
    /// `url`); the download is part of the request's latency.
    #[arg(long = "download-video-content", help_heading = "Endpoint")]
    pub download_video_content: bool,
}
