//! `--endpoint-type template`'s payload template, taken out of `--extra-inputs` as AIPerf's
//! CLI converter takes it: `payload_template` (a readable regular file reached through no
//! symbolic link is read; else the value is a built-in name or the template text) and, with it,
//! `response_field`. Both keys leave the extras whatever the endpoint type; only `template`
//! uses them, and it cannot run without a template.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::endpoint::{EndpointKind, FieldPath, PayloadTemplate};

/// Removes `payload_template` / `response_field` from `extra_inputs` and, for `template`,
/// compiles them.
pub fn take(
    extra_inputs: &mut Map<String, Value>,
    kind: EndpointKind,
) -> Result<Option<Arc<PayloadTemplate>>, String> {
    let Some(given) = extra_inputs.shift_remove("payload_template") else {
        if kind == EndpointKind::Template {
            return Err(
                "--endpoint-type template needs `--extra-inputs payload_template:<T>`, \
                        where <T> is a built-in template name (nv-embedqa), a template file or \
                        the Jinja template text"
                    .into(),
            );
        }
        return Ok(None);
    };
    let field = extra_inputs.shift_remove("response_field");
    if kind != EndpointKind::Template {
        return Ok(None);
    }
    let Value::String(given) = given else {
        return Err(format!(
            "--extra-inputs payload_template must be a string (a name, a file or a template), \
             not {given}"
        ));
    };
    let field = match field {
        None => None,
        Some(Value::String(f)) => Some(f),
        Some(other) => {
            return Err(format!(
                "--extra-inputs response_field must be a string path, not {other}"
            ));
        }
    };
    let source = read_regular_file(&given).unwrap_or(given);
    PayloadTemplate::compile(&source, field.as_deref())
        .map(|t| Some(Arc::new(t)))
        .map_err(|e| format!("--extra-inputs payload_template: {e}"))
}

/// `raw`'s `response_field` (AIPerf's JMESPath mixin reads it from the endpoint's extras, where
/// it stays: a raw body is sent verbatim, so extras never reach it). `None` for other types, or
/// when absent or `"text"` (auto-detection).
pub fn raw_response_field(
    extra_inputs: &Map<String, Value>,
    kind: EndpointKind,
) -> Result<Option<Arc<FieldPath>>, String> {
    if kind != EndpointKind::Raw {
        return Ok(None);
    }
    match extra_inputs.get("response_field") {
        None => Ok(None),
        Some(Value::String(f)) if f == "text" => Ok(None),
        Some(Value::String(f)) => FieldPath::parse(f)
            .map(|p| Some(Arc::new(p)))
            .map_err(|e| format!("--extra-inputs {e}")),
        Some(other) => Err(format!(
            "--extra-inputs response_field must be a string path, not {other}"
        )),
    }
}

/// The text of `path` when it names a regular UTF-8 file and neither it nor any parent is a
/// symbolic link (AIPerf's `safe_read_template_path`); `None` otherwise, and the value is then
/// taken as a name or the template itself.
fn read_regular_file(path: &str) -> Option<String> {
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => Path::new(&std::env::var_os("HOME")?).join(rest),
        None => Path::new(path).to_path_buf(),
    };
    for candidate in expanded.ancestors() {
        if candidate.as_os_str().is_empty() {
            continue;
        }
        if std::fs::symlink_metadata(candidate).is_ok_and(|m| m.file_type().is_symlink()) {
            return None;
        }
    }
    let meta = std::fs::metadata(&expanded).ok()?;
    if !meta.is_file() {
        return None;
    }
    std::fs::read_to_string(&expanded).ok()
}
