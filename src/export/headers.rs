//! The request headers ringperf sends, as AIPerf lists them in its exports: one list for the
//! raw export (`super::raw`) and the HTTP trace (`super::trace_data`), credentials redacted by
//! AIPerf's rule (`redact_headers`).

use serde_json::{Map, Value};

/// The redacted value of a credential-bearing header, as AIPerf writes it.
pub const REDACTED: &str = "<redacted>";

/// The headers sent with every request and the names of the id headers.
#[derive(Clone, Debug, Default)]
pub struct SentHeaders {
    /// Headers sent with every request, in order (`User-Agent`, `Accept`, `Content-Type`,
    /// `--header` values).
    pub headers: Vec<(String, String)>,
    /// Names of the headers that carry the request id and the correlation id.
    pub request_id_header: String,
    /// See `request_id_header`.
    pub correlation_id_header: String,
    /// Headers that carry a copy of the correlation id (session affinity).
    pub correlation_copies: Vec<String>,
}

impl SentHeaders {
    /// Puts the headers sent with a request with these ids into `h`, in the order they are
    /// listed here (every-request headers, the request id, the correlation id and its copies),
    /// credentials redacted by AIPerf's `redact_headers` rule. The raw export and the HTTP
    /// trace (`super::trace_data`) both list them through this.
    pub fn put(
        &self,
        h: &mut Map<String, Value>,
        request_id: &uuid::Uuid,
        correlation_id: &uuid::Uuid,
    ) {
        let mut put = |name: &str, value: String| {
            h.insert(name.to_string(), Value::from(redacted(name, value)));
        };
        for (name, value) in &self.headers {
            put(name, value.clone());
        }
        put(&self.request_id_header, request_id.to_string());
        put(&self.correlation_id_header, correlation_id.to_string());
        for name in &self.correlation_copies {
            put(name, correlation_id.to_string());
        }
    }
}

/// `value`, or [`REDACTED`] when `name` carries a credential.
pub fn redacted(name: &str, value: String) -> String {
    if is_sensitive_header(name) {
        REDACTED.to_string()
    } else {
        value
    }
}

/// AIPerf's rule for a credential-bearing header name (`is_sensitive_header_name`): a known
/// name, or one containing a telling word.
pub fn is_sensitive_header(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "auth",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "cookie",
        "apikey",
        "api-key",
        "api_key",
        "session",
        "signature",
        "sas-key",
        "access-key",
        "private-key",
    ];
    let lower = name.trim().to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
        || matches!(
            lower.as_str(),
            "ocp-apim-subscription-key" | "x-goog-api-key" | "x-functions-key"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_redacted() {
        for name in ["Authorization", "X-Session-Affinity", "x-api-key", "Cookie"] {
            assert!(is_sensitive_header(name), "{name}");
        }
        for name in ["User-Agent", "Accept", "Content-Type", "X-Request-ID"] {
            assert!(!is_sensitive_header(name), "{name}");
        }
    }
}
