//! A turn's body made into its request for every base URL, before the run: JSON as it is, or,
//! with `--request-content-type multipart/form-data`, the payload's form (docs/endpoints.md),
//! made once and flattened into each URL's request, so no request copies its media while the
//! run goes.

use super::Encoding;
use ringperf_wire::http::EncodedRequest;
use ringperf_workload::workload::form::{EncodeError, boundary_id, form_body};

impl Encoding {
    /// The requests of turn `turn` (its index among all turns: it draws the form's boundary)
    /// of payload `body`, one per base URL.
    pub fn encode_turn(&self, body: &[u8], turn: u64) -> Result<Vec<EncodedRequest>, EncodeError> {
        let (flat, content_type) = match self.form_seed {
            None => (None, None),
            Some(seed) => {
                let form = form_body(body, boundary_id(seed, turn)).map_err(EncodeError::Form)?;
                (Some(form.to_vec()), Some(form.content_type()))
            }
        };
        let body = flat.as_deref().unwrap_or(body);
        let mut headers;
        let headers = match content_type {
            None => &self.headers,
            Some(ct) => {
                headers = self.headers.clone();
                headers.push(("Content-Type".to_owned(), ct));
                &headers
            }
        };
        self.targets
            .iter()
            .enumerate()
            .map(|(url, (host, path))| {
                ringperf_wire::http::encode_post_with(
                    host,
                    path,
                    headers,
                    body,
                    self.correlation_header(),
                    &self.correlation_copies,
                )
                .map_err(|error| EncodeError::Http { url, error })
            })
            .collect()
    }
}
