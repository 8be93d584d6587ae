//! `--endpoint-type template`'s payload template, taken out of `--extra-inputs` as AIPerf's
//! CLI converter takes it: `payload_template` (a readable regular file reached through no
//! symbolic link is read; else the value is a built-in name or the template text) and, with it,
//! `response_field`. Both keys leave the extras whatever the endpoint type; only `template`
//! uses them, and it cannot run without a template. The files are read at the edge
//! ([`super::environment::Environment::template_files`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::ConfigError;
use ringperf_wire::endpoint::{EndpointKind, FieldPath, PayloadTemplate};

/// Removes `payload_template` / `response_field` from `extra_inputs` and, for `template`,
/// compiles them. `files` holds the texts of the values that name a template file.
///
/// # Errors
/// `template` without a template, a value that is not a string, a template that does not
/// compile.
pub fn take(
    extra_inputs: &mut Map<String, Value>,
    kind: EndpointKind,
    files: &BTreeMap<String, String>,
) -> Result<Option<Arc<PayloadTemplate>>, ConfigError> {
    let Some(given) = extra_inputs.shift_remove("payload_template") else {
        if kind == EndpointKind::Template {
            return Err(ConfigError::flag(
                "--endpoint-type template needs `--extra-inputs payload_template:<T>`, \
                        where <T> is a built-in template name (nv-embedqa), a template file or \
                        the Jinja template text",
            ));
        }
        return Ok(None);
    };
    let field = extra_inputs.shift_remove("response_field");
    if kind != EndpointKind::Template {
        return Ok(None);
    }
    let Value::String(given) = given else {
        return Err(ConfigError::flag(format!(
            "--extra-inputs payload_template must be a string (a name, a file or a template), \
             not {given}"
        )));
    };
    let field = match field {
        None => None,
        Some(Value::String(f)) => Some(f),
        Some(other) => {
            return Err(ConfigError::flag(format!(
                "--extra-inputs response_field must be a string path, not {other}"
            )));
        }
    };
    let source = files.get(&given).cloned().unwrap_or(given);
    PayloadTemplate::compile(&source, field.as_deref())
        .map(|t| Some(Arc::new(t)))
        .map_err(|e| ConfigError::flag(format!("--extra-inputs payload_template: {e}")))
}

/// `raw`'s `response_field` (AIPerf's JMESPath mixin reads it from the endpoint's extras, where
/// it stays: a raw body is sent verbatim, so extras never reach it). `None` for other types, or
/// when absent or `"text"` (auto-detection).
///
/// # Errors
/// A value that is not a string, or not a field path.
pub fn raw_response_field(
    extra_inputs: &Map<String, Value>,
    kind: EndpointKind,
) -> Result<Option<Arc<FieldPath>>, ConfigError> {
    if kind != EndpointKind::Raw {
        return Ok(None);
    }
    match extra_inputs.get("response_field") {
        None => Ok(None),
        Some(Value::String(f)) if f == "text" => Ok(None),
        Some(Value::String(f)) => FieldPath::parse(f)
            .map(|p| Some(Arc::new(p)))
            .map_err(|e| ConfigError::flag(format!("--extra-inputs {e}"))),
        Some(other) => Err(ConfigError::flag(format!(
            "--extra-inputs response_field must be a string path, not {other}"
        ))),
    }
}
