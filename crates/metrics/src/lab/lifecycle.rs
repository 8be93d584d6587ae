//! The server's lifecycle around a run, as AIPerf 0.13 drives it (docs/integrations.md):
//!
//! - `--wait-for-model-timeout/-mode/-interval`: before the first run, wait until every
//!   (URL, model) pair is ready: listed by `GET {url}/v1/models` (`models`; a 404 there falls
//!   back to a 2xx from the base URL), answering a one-token request below 500 (`inference`,
//!   the default), or both in that order. Progress goes to stderr; running out of time is an
//!   error naming the URL, the model and the attempts.
//! - `--reset-kv-cache`: before each run (each trial, each sweep variation), `POST` the reset
//!   path (default `/reset_prefix_cache`) on every distinct origin; a transport failure or a
//!   409/423/429/503 is retried with backoff (1 s doubling to 8 s) within 60 s, any other non-2xx
//!   fails the run at once.
//! - `--server-profiler`: `POST` the start path (default `/start_profile`) on every origin just
//!   before the profiling phase and the stop path (default `/stop_profile`) just after it. A
//!   failed start stops the origins already started, in reverse, and fails the run; a failed stop
//!   is a warning.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::http::{CallError, Request, Response, call};
use ringperf_wire::endpoint::EndpointKind;

/// Default reset path (vLLM's).
pub const DEFAULT_RESET_PATH: &str = "/reset_prefix_cache";
/// Default profiler start path (vLLM's).
pub const DEFAULT_PROFILER_START_PATH: &str = "/start_profile";
/// Default profiler stop path (vLLM's).
pub const DEFAULT_PROFILER_STOP_PATH: &str = "/stop_profile";
/// Default limit of one reset or profiler call.
pub const DEFAULT_CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a retryable reset failure is retried.
pub const RESET_RETRY_BUDGET: Duration = Duration::from_secs(60);
/// First wait between reset attempts; doubled after each, up to [`RESET_BACKOFF_CAP`].
const RESET_BACKOFF: Duration = Duration::from_secs(1);
const RESET_BACKOFF_CAP: Duration = Duration::from_secs(8);
/// Statuses that mean "busy, try again" for a reset.
const RESET_RETRYABLE: [u16; 4] = [409, 423, 429, 503];
/// Shortest limit of one `/v1/models` probe, and of one inference probe.
const MODELS_PROBE_FLOOR: Duration = Duration::from_secs(5);
const INFERENCE_PROBE_FLOOR: Duration = Duration::from_secs(30);

/// What `--wait-for-model-mode` probes.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// `GET /v1/models` lists the model.
    Models,
    /// A one-token request is answered with a status below 500.
    #[default]
    Inference,
    /// `models`, then `inference`.
    Both,
}

impl WaitMode {
    fn as_str(self) -> &'static str {
        match self {
            WaitMode::Models => "models",
            WaitMode::Inference => "inference",
            WaitMode::Both => "both",
        }
    }
}

/// `--wait-for-model-*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Wait {
    pub timeout: Duration,
    pub interval: Duration,
    pub mode: WaitMode,
}

/// `--reset-kv-cache*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reset {
    pub path: String,
    pub timeout: Duration,
    /// How long a transient failure is retried ([`RESET_RETRY_BUDGET`] by default; a config
    /// file's `reset_kv_cache.max_retry_seconds`).
    pub retry_budget: Duration,
}

/// `--server-profiler*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Profiler {
    pub start_path: String,
    pub stop_path: String,
    pub timeout: Duration,
}

/// Everything the lifecycle flags asked for; all `None` when none was given.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Lifecycle {
    pub wait: Option<Wait>,
    pub reset: Option<Reset>,
    pub profiler: Option<Profiler>,
}

/// One `--url` as the lifecycle calls need it.
#[derive(Clone, Debug)]
pub struct Server {
    /// The URL as written (for messages and the once-per-process memory of the wait).
    pub display: String,
    pub addr: SocketAddr,
    /// `Host` header value.
    pub host: String,
    /// The URL's own path, without a trailing slash (`""` for none).
    pub base_path: String,
    /// Where the run's requests go (the inference probe goes there too).
    pub request_path: String,
}

/// What a run needs to make the calls.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub servers: &'a [Server],
    pub models: &'a [String],
    pub endpoint: EndpointKind,
    /// Sent with every call (`--api-key`, `--header`).
    pub headers: &'a [(String, String)],
}

/// Why a lifecycle step failed the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleError {
    /// The wait ran out of time.
    NotReady(String),
    /// A reset was refused or never answered.
    Reset(String),
    /// The profiler could not be started.
    ProfilerStart(String),
}

impl std::fmt::Display for LifecycleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LifecycleError::NotReady(m) => f.write_str(m),
            LifecycleError::Reset(m) => write!(f, "reset_kv_cache failed before the run: {m}"),
            LifecycleError::ProfilerStart(m) => write!(f, "server_profiler start failed: {m}"),
        }
    }
}

impl std::error::Error for LifecycleError {}

fn progress(msg: &str) {
    eprintln!("ringperf: {msg}");
}

/// `POST {origin}{path}`; a non-2xx answer is an error naming the status.
fn control_post(
    s: &Server,
    path: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<(), (CallError, Option<u16>)> {
    let r = call(&Request {
        method: "POST",
        addr: s.addr,
        host: &s.host,
        path,
        headers,
        body: b"",
        timeout,
    })
    .map_err(|e| (e, None))?;
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err((
            CallError::Io(format!(
                "HTTP {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body)
                    .chars()
                    .take(200)
                    .collect::<String>()
            )),
            Some(r.status),
        ))
    }
}

/// The distinct origins (address and `Host`) of the servers, in order.
fn origins(servers: &[Server]) -> Vec<&Server> {
    let mut seen = HashSet::new();
    servers
        .iter()
        .filter(|s| seen.insert((s.addr, s.host.clone())))
        .collect()
}

fn url_of(s: &Server, path: &str) -> String {
    format!("http://{}{path}", s.host)
}

/// `--reset-kv-cache`: the reset on every origin, retried while the failure is transient.
///
/// # Errors
/// An origin refused the reset, or it never succeeded within the retry budget.
pub fn reset_kv_cache(r: &Reset, t: &Target<'_>) -> Result<(), LifecycleError> {
    for s in origins(t.servers) {
        let deadline = Instant::now() + r.retry_budget;
        let mut backoff = RESET_BACKOFF;
        loop {
            match control_post(s, &r.path, t.headers, r.timeout) {
                Ok(()) => break,
                Err((e, status)) => {
                    let retryable = status.map_or(e.retryable(), |c| RESET_RETRYABLE.contains(&c));
                    if !retryable || Instant::now() + backoff >= deadline {
                        return Err(LifecycleError::Reset(format!(
                            "POST {}: {e}",
                            url_of(s, &r.path)
                        )));
                    }
                    progress(&format!(
                        "reset_kv_cache: POST {} failed ({e}); retrying in {} s",
                        url_of(s, &r.path),
                        backoff.as_secs_f64()
                    ));
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(RESET_BACKOFF_CAP);
                }
            }
        }
    }
    Ok(())
}

/// `--server-profiler`: the start call on every origin, just before the profiling phase. When
/// one fails, the origins already started are stopped (in reverse) before the error returns.
///
/// # Errors
/// An origin's start call failed.
pub fn start_profiler(p: &Profiler, t: &Target<'_>) -> Result<(), LifecycleError> {
    let all = origins(t.servers);
    for (i, s) in all.iter().enumerate() {
        if let Err((e, _)) = control_post(s, &p.start_path, t.headers, p.timeout) {
            for done in all[..i].iter().rev() {
                if let Err((e, _)) = control_post(done, &p.stop_path, t.headers, p.timeout) {
                    progress(&format!(
                        "warning: server_profiler cleanup stop {} failed: {e}",
                        url_of(done, &p.stop_path)
                    ));
                }
            }
            return Err(LifecycleError::ProfilerStart(format!(
                "POST {}: {e}",
                url_of(s, &p.start_path)
            )));
        }
    }
    Ok(())
}

/// `--server-profiler`: the stop call on every origin, just after the profiling phase; the
/// failures are one warning line, never the run's failure.
pub fn stop_profiler(p: &Profiler, t: &Target<'_>) {
    let failed: Vec<String> = origins(t.servers)
        .into_iter()
        .filter_map(|s| {
            control_post(s, &p.stop_path, t.headers, p.timeout)
                .err()
                .map(|(e, _)| format!("POST {}: {e}", url_of(s, &p.stop_path)))
        })
        .collect();
    if !failed.is_empty() {
        progress(&format!(
            "warning: server_profiler stop failed: {}",
            failed.join("; ")
        ));
    }
}

/// The (URL, model) pairs this process has already found ready: a sweep's or a repeated
/// profile's later runs do not wait again, as AIPerf waits once before its runs.
static READY: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn is_ready(url: &str, model: &str) -> bool {
    READY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|(u, m)| u == url && m == model)
}

fn mark_ready(url: &str, model: &str) {
    READY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((url.to_owned(), model.to_owned()));
}

/// `--wait-for-model-timeout`: probes every (URL, model) pair not yet found ready in this
/// process until it is; each probe has the whole timeout.
///
/// # Errors
/// A pair was not ready within the timeout.
pub fn wait_for_model(w: &Wait, t: &Target<'_>) -> Result<(), LifecycleError> {
    let pending: Vec<(&Server, &String)> = t
        .servers
        .iter()
        .flat_map(|s| t.models.iter().map(move |m| (s, m)))
        .filter(|(s, m)| !is_ready(&s.display, m))
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    progress(&format!(
        "waiting for the endpoint to be ready (mode {}, timeout {} s, interval {} s): {} URL(s) x {} model(s)",
        w.mode.as_str(),
        w.timeout.as_secs_f64(),
        w.interval.as_secs_f64(),
        t.servers.len(),
        t.models.len()
    ));
    for (s, m) in pending {
        if matches!(w.mode, WaitMode::Models | WaitMode::Both) {
            wait_models(w, s, m, t.headers)?;
        }
        if matches!(w.mode, WaitMode::Inference | WaitMode::Both) {
            wait_inference(w, s, m, t)?;
        }
        mark_ready(&s.display, m);
    }
    Ok(())
}

/// The limit of the next probe: `floor` at least (the interval if longer), never past the
/// deadline; `None` once the deadline has passed.
fn probe_timeout(deadline: Instant, interval: Duration, floor: Duration) -> Option<Duration> {
    let left = deadline.checked_duration_since(Instant::now())?;
    (!left.is_zero()).then(|| interval.max(floor).min(left))
}

fn sleep_until_next(deadline: Instant, interval: Duration) {
    let left = deadline.saturating_duration_since(Instant::now());
    std::thread::sleep(interval.min(left));
}

/// `data[].id` of a `/v1/models` answer holds `model`.
pub fn lists_model(body: &[u8], model: &str) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("data")?.as_array().map(|d| {
                d.iter()
                    .any(|e| e.get("id").and_then(|i| i.as_str()) == Some(model))
            })
        })
        .unwrap_or(false)
}

fn get(
    s: &Server,
    path: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<Response, CallError> {
    call(&Request {
        method: "GET",
        addr: s.addr,
        host: &s.host,
        path,
        headers,
        body: b"",
        timeout,
    })
}

fn wait_models(
    w: &Wait,
    s: &Server,
    model: &str,
    headers: &[(String, String)],
) -> Result<(), LifecycleError> {
    let deadline = Instant::now() + w.timeout;
    let path = format!("{}/v1/models", s.base_path);
    let base = if s.base_path.is_empty() {
        "/"
    } else {
        s.base_path.as_str()
    };
    let every = w.interval.as_secs_f64();
    for attempt in 1u64.. {
        let Some(limit) = probe_timeout(deadline, w.interval, MODELS_PROBE_FLOOR) else {
            return Err(LifecycleError::NotReady(format!(
                "timed out after {:.1} s waiting for model '{model}' to be ready at {} \
                 (checked {} times)",
                w.timeout.as_secs_f64(),
                s.display,
                attempt - 1
            )));
        };
        match get(s, &path, headers, limit) {
            Ok(r) if r.status == 200 && lists_model(&r.body, model) => {
                progress(&format!(
                    "model '{model}' ready at {} after {attempt} attempt(s)",
                    s.display
                ));
                return Ok(());
            }
            Ok(r) if r.status == 200 => progress(&format!(
                "model '{model}' not yet listed by {} (attempt {attempt}), retrying in {every} s",
                url_of(s, &path)
            )),
            Ok(r) if r.status == 404 => {
                let fallback = probe_timeout(deadline, w.interval, MODELS_PROBE_FLOOR)
                    .map(|limit| get(s, base, headers, limit));
                if let Some(Ok(b)) = &fallback
                    && (200..300).contains(&b.status)
                {
                    progress(&format!(
                        "{} has no /v1/models; its base URL answered {}: ready",
                        s.display, b.status
                    ));
                    return Ok(());
                }
                progress(&format!(
                    "/v1/models is 404 and the base URL is not ready at {} (attempt {attempt}), \
                     retrying in {every} s",
                    s.display
                ));
            }
            Ok(r) => progress(&format!(
                "probe of {} answered {} (attempt {attempt}), retrying in {every} s",
                url_of(s, &path),
                r.status
            )),
            Err(e) => progress(&format!(
                "probe of {} failed: {e} (attempt {attempt}), retrying in {every} s",
                url_of(s, &path)
            )),
        }
        sleep_until_next(deadline, w.interval);
    }
    unreachable!("the attempts are unbounded; the deadline ends the loop")
}

/// The one-token request of the inference probe for `endpoint` (chat-shaped for the types
/// that have no template of their own, with a warning).
pub fn probe_body(endpoint: EndpointKind, model: &str) -> Vec<u8> {
    const PROMPT: &str = "Lo";
    let v = match endpoint {
        EndpointKind::Completions => {
            serde_json::json!({"prompt": PROMPT, "max_tokens": 1, "model": model})
        }
        EndpointKind::Embeddings => serde_json::json!({"input": PROMPT, "model": model}),
        _ => serde_json::json!({
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 1,
            "model": model
        }),
    };
    v.to_string().into_bytes()
}

fn wait_inference(w: &Wait, s: &Server, model: &str, t: &Target<'_>) -> Result<(), LifecycleError> {
    if !matches!(
        t.endpoint,
        EndpointKind::Chat
            | EndpointKind::Messages
            | EndpointKind::Completions
            | EndpointKind::Embeddings
    ) {
        progress(&format!(
            "warning: the inference readiness probe has no request of its own for endpoint type \
             '{}'; it sends a chat-shaped one, which shows the server is up but maybe not the \
             model",
            t.endpoint.as_str()
        ));
    }
    let body = probe_body(t.endpoint, model);
    let deadline = Instant::now() + w.timeout;
    let url = url_of(s, &s.request_path);
    let every = w.interval.as_secs_f64();
    for attempt in 1u64.. {
        let Some(limit) = probe_timeout(deadline, w.interval, INFERENCE_PROBE_FLOOR) else {
            return Err(LifecycleError::NotReady(format!(
                "timed out after {:.1} s probing {url} with model '{model}' (checked {} times)",
                w.timeout.as_secs_f64(),
                attempt - 1
            )));
        };
        let r = call(&Request {
            method: "POST",
            addr: s.addr,
            host: &s.host,
            path: &s.request_path,
            headers: t.headers,
            body: &body,
            timeout: limit,
        });
        match r {
            Ok(r) if r.status < 500 => {
                progress(&format!(
                    "inference probe ready at {url} (status {}, attempt {attempt})",
                    r.status
                ));
                return Ok(());
            }
            Ok(r) => progress(&format!(
                "inference probe of {url} answered {} (attempt {attempt}), retrying in {every} s",
                r.status
            )),
            Err(e) => progress(&format!(
                "inference probe of {url} failed: {e} (attempt {attempt}), retrying in {every} s"
            )),
        }
        sleep_until_next(deadline, w.interval);
    }
    unreachable!("the attempts are unbounded; the deadline ends the loop")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_list_is_read_by_id_only() {
        let body = br#"{"object":"list","data":[{"id":"a","object":"model"},{"id":"m"}]}"#;
        assert!(lists_model(body, "m") && lists_model(body, "a"));
        assert!(!lists_model(body, "b"));
        assert!(!lists_model(br#"{"data":[]}"#, "m"));
        assert!(!lists_model(br#"{"data":{"id":"m"}}"#, "m"));
        assert!(!lists_model(b"not json", "m"));
        assert!(!lists_model(br#"[{"id":"m"}]"#, "m"));
    }

    #[test]
    fn probe_bodies_are_one_token_requests_of_the_endpoint_s_shape() {
        let v: serde_json::Value =
            serde_json::from_slice(&probe_body(EndpointKind::Completions, "x")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"prompt":"Lo","max_tokens":1,"model":"x"})
        );
        let v: serde_json::Value =
            serde_json::from_slice(&probe_body(EndpointKind::Embeddings, "x")).unwrap();
        assert_eq!(v, serde_json::json!({"input":"Lo","model":"x"}));
        for e in [
            EndpointKind::Chat,
            EndpointKind::Messages,
            EndpointKind::Responses,
        ] {
            let v: serde_json::Value = serde_json::from_slice(&probe_body(e, "x")).unwrap();
            assert_eq!(v["messages"][0]["content"], "Lo");
            assert_eq!(v["max_tokens"], 1);
        }
    }

    #[test]
    fn a_probe_never_outlives_the_deadline_and_none_starts_after_it() {
        let now = Instant::now();
        let d = probe_timeout(
            now + Duration::from_secs(2),
            Duration::from_secs(1),
            MODELS_PROBE_FLOOR,
        )
        .unwrap();
        assert!(d <= Duration::from_secs(2) && d > Duration::from_secs(1));
        assert_eq!(
            probe_timeout(now, Duration::from_secs(1), MODELS_PROBE_FLOOR),
            None
        );
        let far = probe_timeout(
            now + Duration::from_secs(600),
            Duration::from_secs(9),
            MODELS_PROBE_FLOOR,
        );
        assert_eq!(far, Some(Duration::from_secs(9)));
    }
}
