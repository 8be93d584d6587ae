//! Video generation: what `--endpoint-type video-generation` does once a job has finished
//! (docs/endpoints.md).

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VideoGenerationArgs {
    /// Fetch each finished video job's content (`GET /v1/videos/{id}/content`, or the job's
    /// `url`); the download is part of the request's latency.
    #[arg(long = "download-video-content", help_heading = "Endpoint")]
    pub download_video_content: bool,
}

/// The video job API of `ringperf mock-server` (`/v1/videos`, docs/mock.md).
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MockVideoArgs {
    /// A video job ends this many milliseconds after its submission.
    #[arg(long = "video-job-ms", value_name = "MS", default_value_t = 0)]
    pub video_job_ms: u64,
    /// Video jobs end `failed` instead of `completed`.
    #[arg(long = "video-job-fail")]
    pub video_job_fail: bool,
    /// Bytes of the content a completed video job serves.
    #[arg(long = "video-content-bytes", value_name = "N", default_value_t = 4096)]
    pub video_content_bytes: usize,
}

impl MockVideoArgs {
    /// The mock's video job behaviour these flags ask for.
    pub fn config(&self) -> ringperf_mock::mock::VideoJobConfig {
        ringperf_mock::mock::VideoJobConfig {
            duration: std::time::Duration::from_millis(self.video_job_ms),
            fail: self.video_job_fail,
            content_bytes: self.video_content_bytes,
            ..ringperf_mock::mock::VideoJobConfig::default()
        }
    }
}
