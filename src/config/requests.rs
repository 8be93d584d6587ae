//! The request-shaping endpoint flags checked (`--model-selection-strategy`), as AIPerf 0.13
//! checks them.

use super::ConfigError;
use crate::cli::requests::{RequestArgs, SelectionArg};
use ringperf_workload::workload::models::ModelSelection;

/// The model-selection strategy; `weighted` is refused as AIPerf refuses it when no model has a
/// weight (no flag gives one).
pub fn model_selection(args: &RequestArgs) -> Result<ModelSelection, ConfigError> {
    match args.model_selection_strategy {
        SelectionArg::RoundRobin => Ok(ModelSelection::RoundRobin),
        SelectionArg::Random => Ok(ModelSelection::Random),
        SelectionArg::Weighted => Err(ConfigError::flag(
            "--model-selection-strategy weighted: all models must have weights specified when \
             using weighted strategy (no flag gives a model a weight)",
        )),
    }
}

/// `--session-header`: an HTTP header name (RFC 9110 token) other than the request id's, which
/// replaces `X-Correlation-ID` on every request.
pub fn session_header(args: &RequestArgs) -> Result<Option<String>, ConfigError> {
    let Some(name) = &args.session_header else {
        return Ok(None);
    };
    let name = name.trim();
    if !ringperf_wire::http::request::is_token(name) {
        return Err(ConfigError::flag(format!(
            "--session-header must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~), \
             got '{name}'"
        )));
    }
    for reserved in [
        ringperf_wire::http::request::REQUEST_ID_HEADER,
        "Content-Length",
        "Host",
    ] {
        if name.eq_ignore_ascii_case(reserved) {
            return Err(ConfigError::flag(format!(
                "--session-header cannot be {reserved}: ringperf sets that header itself"
            )));
        }
    }
    Ok(Some(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str) -> Result<Option<String>, ConfigError> {
        session_header(&RequestArgs {
            session_header: Some(name.to_string()),
            ..RequestArgs::default()
        })
    }

    #[test]
    fn session_header_is_a_header_name_ringperf_does_not_set_itself() {
        assert_eq!(
            header(" X-Session-ID ").unwrap().as_deref(),
            Some("X-Session-ID")
        );
        for bad in ["", "X Session", "X-Session:", "a\r\nb"] {
            let err = header(bad).unwrap_err();
            assert!(
                err.message().contains("must be an HTTP header name"),
                "{bad:?}: {err}"
            );
        }
        for own in ["x-request-id", "content-length", "HOST"] {
            let err = header(own).unwrap_err();
            assert!(
                err.message().contains("ringperf sets that header"),
                "{own}: {err}"
            );
        }
        assert_eq!(session_header(&RequestArgs::default()).unwrap(), None);
    }
}
