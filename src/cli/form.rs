//! `--request-content-type`: how a request body is serialized, JSON or multipart/form-data
//! (docs/endpoints.md). Checked against the endpoint type in [`crate::config::form`].

use clap::{Args, ValueEnum};

/// AIPerf's `RequestContentType` values (read case-insensitively).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RequestContentTypeArg {
    #[value(name = "application/json")]
    ApplicationJson,
    #[value(name = "multipart/form-data")]
    MultipartFormData,
}

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FormArgs {
    /// Content type of request bodies: `application/json`, or `multipart/form-data` for the
    /// types that upload files (`image-edit`, `audio-transcription`, `video-generation`, whose
    /// default it is).
    #[arg(
        long = "request-content-type",
        value_name = "TYPE",
        ignore_case = true,
        help_heading = "Endpoint"
    )]
    pub request_content_type: Option<RequestContentTypeArg>,
}
