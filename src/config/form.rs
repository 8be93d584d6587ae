//! `--request-content-type` against the endpoint type, as AIPerf 0.13's `EndpointConfig`
//! checks it (docs/endpoints.md): the form-data types (`requires_form_data`) default to
//! multipart/form-data and refuse JSON; every other type refuses multipart/form-data.

use super::ConfigError;
use crate::cli::form::RequestContentTypeArg;
use ringperf_wire::endpoint::EndpointKind;

/// Whether bodies go as multipart/form-data.
pub fn form_data(
    arg: Option<RequestContentTypeArg>,
    endpoint: EndpointKind,
) -> Result<bool, ConfigError> {
    let requires = endpoint.requires_form_data();
    match arg {
        None => Ok(requires),
        Some(RequestContentTypeArg::ApplicationJson) if requires => {
            Err(ConfigError::flag(format!(
                "endpoint type {endpoint} requires multipart/form-data; application/json is not \
             supported."
            )))
        }
        Some(RequestContentTypeArg::ApplicationJson) => Ok(false),
        Some(RequestContentTypeArg::MultipartFormData) if !requires => {
            Err(ConfigError::flag(format!(
                "request_content_type=multipart/form-data is only supported for endpoint types \
                 that accept form-data (e.g. image_edit, video_generation); endpoint type \
                 {endpoint} does not."
            )))
        }
        Some(RequestContentTypeArg::MultipartFormData) => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_refusals_follow_aiperf() {
        use RequestContentTypeArg::{ApplicationJson as Json, MultipartFormData as Form};
        for kind in [
            EndpointKind::ImageEdit,
            EndpointKind::AudioTranscription,
            EndpointKind::VideoGeneration,
        ] {
            assert_eq!(form_data(None, kind), Ok(true), "{kind}");
            assert_eq!(form_data(Some(Form), kind), Ok(true), "{kind}");
            let e = form_data(Some(Json), kind).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "endpoint type {kind} requires multipart/form-data; application/json is not supported."
                )),
                "{e}"
            );
        }
        for kind in [EndpointKind::Chat, EndpointKind::ImageGeneration] {
            assert_eq!(form_data(None, kind), Ok(false), "{kind}");
            assert_eq!(form_data(Some(Json), kind), Ok(false), "{kind}");
            let e = form_data(Some(Form), kind).unwrap_err().to_string();
            assert!(
                e.contains(&format!("endpoint type {kind} does not.")),
                "{e}"
            );
        }
    }
}
