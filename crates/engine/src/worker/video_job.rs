//! The job loop of `video-generation` (AIPerf 0.13's `_send_video_request_with_polling`): the
//! submission's answer names a job; the job is polled with `GET {path}/{id}` every poll interval
//! (`AIPERF_HTTP_VIDEO_POLL_INTERVAL`, 0.1 s) until it is `completed` or `failed`, or until
//! `--request-timeout-seconds` has passed since the first poll; with `--download-video-content`
//! the content is then fetched (`url` of the job, else `{path}/{id}/content`). The request's
//! latency runs from the submission to the last of these. The waits are timers on the worker's
//! own runtime: other requests of the worker go on meanwhile.

use serde_json::Value;

use ringperf_io::net::{self, AfterHead, Exchange, Sink};
use ringperf_wire::http::Head;
use ringperf_wire::record::{RawRecord, RequestError};

use super::{Shared, WorkerState};

/// AIPerf's error type of a failed or malformed video job.
const JOB_ERROR: &str = "VideoGenerationError";

/// The request loop's readings of a failure (`client`'s), passed in: this module does not
/// import the loop that calls it.
pub(super) struct Failures {
    /// The run's cut (early stop, hard deadline) has come.
    pub cut: fn(&Shared, Option<u64>) -> bool,
    /// The error of a request cut short.
    pub cancelled: fn() -> RequestError,
    /// An exchange failure in AIPerf's error shape, naming base URL `url`.
    pub request: fn(&Shared, net::Error, usize) -> RequestError,
}

/// Follows the job a successful submission `rec` started, to its end; the record then holds
/// the job's final status object as a second response after the submission's, or the job's
/// error.
pub(super) async fn follow(
    shared: &Shared,
    state: &WorkerState,
    rec: &mut RawRecord,
    url: usize,
    (pool, reuse): (&net::Pool, bool),
    hard_deadline_ns: Option<u64>,
    failures: Failures,
) {
    let get = Getter {
        shared,
        state,
        url,
        pool,
        reuse,
        hard_deadline_ns,
        failures,
    };
    if let Err(e) = poll_then_download(&get, rec).await {
        rec.error = Some(Box::new(e));
    }
    rec.end_ns = shared.clock.now_ns();
    // AIPerf's polled record carries no HTTP trace (no `http_req_*` metrics): one exchange's
    // trace would not describe the job's several.
    rec.trace = None;
}

async fn poll_then_download(get: &Getter<'_>, rec: &mut RawRecord) -> Result<(), RequestError> {
    let job = json_of(&rec.body, rec.status, "submit")?;
    let Some(id) = job
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return Err(RequestError::new(
            Some(500),
            JOB_ERROR,
            format!("No job ID returned: {job}"),
        ));
    };
    let submit_path = &get.shared.encoding.targets[get.url].1;
    let poll_path = format!("{}/{id}", submit_path.trim_end_matches('/'));
    let done = poll(get, rec, &poll_path).await?;
    if get.shared.download_video_content {
        let content_path = done
            .get("url")
            .and_then(Value::as_str)
            .and_then(path_of)
            .unwrap_or_else(|| format!("{poll_path}/content"));
        download(get, rec, id, &content_path).await?;
    }
    Ok(())
}

/// Polls until the job ends; its final status object, also appended to `rec` as a response.
async fn poll(
    get: &Getter<'_>,
    rec: &mut RawRecord,
    poll_path: &str,
) -> Result<Value, RequestError> {
    let timeout = get.shared.request_timeout;
    let interval = get.shared.video_poll_interval;
    let clock = get.shared.clock;
    let start = clock.now_ns();
    while clock.now_ns().saturating_sub(start) < timeout.as_nanos() as u64 {
        let (status, body) = get.fetch(rec, poll_path).await?;
        let data = json_of(&body, status, "poll")?;
        match data.get("status").and_then(Value::as_str).unwrap_or("") {
            s if s.eq_ignore_ascii_case("completed") => {
                // AIPerf's record holds two responses: the submission's answer and this one.
                let start = rec.body.len() as u32;
                rec.body.extend_from_slice(&body);
                rec.events.push(ringperf_wire::record::Event {
                    stamp_ns: clock.now_ns(),
                    start,
                    end: rec.body.len() as u32,
                    form: ringperf_wire::record::EventForm::Raw,
                    lag_ns: None,
                });
                return Ok(data);
            }
            s if s.eq_ignore_ascii_case("failed") => {
                let msg = match data.get("error") {
                    Some(Value::Object(o)) => {
                        o.get("message").map_or("Unknown error".to_owned(), text)
                    }
                    Some(Value::Null) | None => "Unknown error".to_owned(),
                    Some(other) => text(other),
                };
                return Err(RequestError::new(
                    Some(500),
                    JOB_ERROR,
                    format!("Video generation failed: {msg}"),
                ));
            }
            _ => monoio::time::sleep(interval).await,
        }
    }
    Err(RequestError::new(
        Some(504),
        "TimeoutError",
        format!(
            "Video generation timed out after {:?}s",
            timeout.as_secs_f64()
        ),
    ))
}

async fn download(
    get: &Getter<'_>,
    rec: &mut RawRecord,
    id: &str,
    path: &str,
) -> Result<(), RequestError> {
    let failed = |code: Option<u16>, why: String| {
        RequestError::new(
            Some(code.unwrap_or(500)),
            "VideoDownloadError",
            format!("Failed to download video {id}: {why}"),
        )
    };
    match get.fetch(rec, path).await {
        Ok((_, body)) if body.is_empty() => Err(RequestError::new(
            Some(500),
            "VideoDownloadError",
            format!("No content returned for video {id}"),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(failed(e.code, e.message)),
    }
}

/// A job `url` as a path on the same server: a path as is, an absolute URL's path.
fn path_of(url: &str) -> Option<String> {
    if url.starts_with('/') {
        return Some(url.to_owned());
    }
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    rest.find('/').map(|at| rest[at..].to_owned())
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// The JSON object of a video API answer, or AIPerf's error for it.
fn json_of(body: &[u8], status: u16, context: &str) -> Result<Value, RequestError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => {
            let text = String::from_utf8_lossy(body);
            let snippet: String = text.chars().take(200).collect();
            let snippet = if snippet.is_empty() {
                "<empty>".to_owned()
            } else {
                snippet
            };
            Err(RequestError::new(
                Some(500),
                JOB_ERROR,
                format!("Invalid JSON in video {context} response (status {status}): {snippet}"),
            ))
        }
    }
}

/// Sends the `GET`s of one job over the request's connection pool.
struct Getter<'a> {
    shared: &'a Shared,
    state: &'a WorkerState,
    url: usize,
    /// The submission's pool (a sticky session's own, or the worker's) and whether its
    /// connections are reused, as the submission's exchange had them.
    pool: &'a net::Pool,
    reuse: bool,
    hard_deadline_ns: Option<u64>,
    failures: Failures,
}

impl Getter<'_> {
    /// `GET path`: its status and body; a failed exchange or a non-2xx status is the error
    /// AIPerf records for it. The bytes moved count in `rec`.
    async fn fetch(&self, rec: &mut RawRecord, path: &str) -> Result<(u16, Vec<u8>), RequestError> {
        let shared = self.shared;
        if (self.failures.cut)(shared, self.hard_deadline_ns) {
            rec.was_cancelled = true;
            return Err((self.failures.cancelled)());
        }
        let (host, _) = &shared.encoding.targets[self.url];
        let request = ringperf_wire::http::encode_get(host, path, &shared.encoding.headers)
            .map_err(|e| {
                RequestError::new(None, JOB_ERROR, format!("cannot encode {path}: {e}"))
            })?;
        let exchange = Exchange {
            addr: &shared.urls[self.url],
            tls: shared.tls.get(self.url).and_then(Option::as_ref),
            pool: self.pool,
            slot: self.url,
            reuse: self.reuse,
            head_request: false,
            clock: &shared.clock,
            kernel_stamps: false,
            tcp_info: false,
            limits: &self.state.limits,
            deadline_ns: self.hard_deadline_ns,
            cancel_after_sent: None,
            cut: None,
        };
        let mut sink = GetSink {
            request,
            status: 0,
            body: Vec::new(),
            sent: 0,
            received: 0,
        };
        let result = exchange.run(&mut sink).await;
        rec.bytes_sent += sink.sent;
        rec.bytes_received += sink.received;
        if let Err(e) = result {
            if (self.failures.cut)(shared, self.hard_deadline_ns) {
                rec.was_cancelled = true;
                return Err((self.failures.cancelled)());
            }
            return Err((self.failures.request)(shared, e, self.url));
        }
        if !(200..300).contains(&sink.status) {
            return Err(RequestError::new(
                Some(sink.status),
                self.state.take_reason(),
                String::from_utf8_lossy(&sink.body).into_owned(),
            ));
        }
        Ok((sink.status, sink.body))
    }
}

/// One `GET`'s request bytes and what came back.
struct GetSink {
    request: Vec<u8>,
    status: u16,
    body: Vec<u8>,
    sent: u64,
    received: u64,
}

impl Sink for GetSink {
    fn encode(&mut self, wbuf: &mut Vec<u8>, _reused: bool) {
        wbuf.extend_from_slice(&self.request);
    }

    fn on_send(&mut self, _sent_ns: u64) {}

    fn on_sent(&mut self, bytes: usize, _stamp_ns: u64) {
        self.sent = bytes as u64;
    }

    fn on_read(&mut self, bytes: usize, _stamp: net::ReadStamp) {
        self.received += bytes as u64;
    }

    fn on_head(&mut self, head: &Head, _raw: &[u8], _stamp_ns: u64) -> AfterHead {
        self.status = head.status;
        AfterHead::ReadBody
    }

    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }

    fn on_end(&mut self, _stamp_ns: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_urls_become_paths_on_the_same_server() {
        assert_eq!(
            path_of("/v1/videos/v/content").as_deref(),
            Some("/v1/videos/v/content")
        );
        assert_eq!(
            path_of("http://h:8000/files/v.mp4").as_deref(),
            Some("/files/v.mp4")
        );
        assert_eq!(path_of("s3://bucket/v.mp4"), None);
        assert_eq!(path_of("http://h:8000"), None);
    }

    #[test]
    fn answers_that_are_not_json_objects_are_errors_naming_the_step() {
        let e = json_of(b"oops", 200, "poll").unwrap_err();
        assert_eq!(e.kind, JOB_ERROR);
        assert_eq!(
            e.message,
            "Invalid JSON in video poll response (status 200): oops"
        );
        let e = json_of(b"", 502, "submit").unwrap_err();
        assert_eq!(
            e.message,
            "Invalid JSON in video submit response (status 502): <empty>"
        );
        assert!(json_of(br#"{"id":"v"}"#, 200, "submit").is_ok());
    }
}
