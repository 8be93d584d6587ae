//! The video job API (OpenAI / SGLang `/v1/videos`, as AIPerf 0.13's `video_generation` drives
//! it): `POST /v1/videos` submits a job and answers `{"id", "status": "queued"}`, `GET
//! /v1/videos/{id}` answers its status (`queued`, `in_progress`, then `completed` or `failed`
//! once [`VideoJobConfig::duration`] has passed since the submission), and `GET
//! /v1/videos/{id}/content` answers the produced bytes. Every job is kept as truth: what was
//! asked, the polls seen and the content bytes served ([`VideoJob`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How the mock's video jobs behave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VideoJobConfig {
    /// From a job's submission to its end (`completed` or `failed`).
    pub duration: Duration,
    /// Jobs end `failed` (with an error message) instead of `completed`.
    pub fail: bool,
    /// Size of the content a completed job serves.
    pub content_bytes: usize,
    /// The server-reported generation time a completed job carries (`inference_time_s`).
    pub inference_time_s: f64,
    /// The server-reported peak memory a completed job carries (`peak_memory_mb`).
    pub peak_memory_mb: f64,
    /// From poll number N (counted from 1) of a job on, each poll is answered by resetting the
    /// connection.
    pub reset_poll: Option<u32>,
}

impl Default for VideoJobConfig {
    fn default() -> Self {
        Self {
            duration: Duration::ZERO,
            fail: false,
            content_bytes: 4096,
            inference_time_s: 1.5,
            peak_memory_mb: 2048.0,
            reset_poll: None,
        }
    }
}

/// What the mock saw and did for one video job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VideoJob {
    /// `video_{n}`, numbered from 0 in submission order.
    pub id: String,
    /// The submitted body's `prompt`.
    pub prompt: Option<String>,
    /// The submitted body's `model`.
    pub model: Option<String>,
    /// The whole submitted body.
    pub body: serde_json::Value,
    /// `GET /v1/videos/{id}` requests answered.
    pub polls: u32,
    /// Polls that saw the job ended (`completed` or `failed`).
    pub polls_after_end: u32,
    /// Content bytes served by `GET /v1/videos/{id}/content`.
    pub bytes_served: u64,
    #[serde(skip)]
    submitted: Option<Instant>,
}

/// Every job submitted so far.
#[derive(Debug, Default)]
pub(crate) struct VideoJobs {
    jobs: Mutex<Vec<VideoJob>>,
}

/// Which video route a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VideoRoute {
    Submit,
    Status(u64),
    Content(u64),
}

impl VideoRoute {
    /// The video route at `path` (query string already removed), if any.
    pub(crate) fn at(path: &str) -> Option<Self> {
        let rest = path.strip_prefix("/v1/videos")?;
        if rest.is_empty() {
            return Some(VideoRoute::Submit);
        }
        let rest = rest.strip_prefix("/video_")?;
        let (id, content) = match rest.strip_suffix("/content") {
            Some(id) => (id, true),
            None => (rest, false),
        };
        let n = id.parse().ok()?;
        Some(if content {
            VideoRoute::Content(n)
        } else {
            VideoRoute::Status(n)
        })
    }
}

/// One answer: status, content type and body; `None`: reset the connection instead.
pub(crate) type Reply = Option<(u16, &'static str, Vec<u8>)>;

impl VideoJobs {
    /// A copy of every job so far.
    pub(crate) fn snapshot(&self) -> Vec<VideoJob> {
        self.jobs.lock().map(|j| j.clone()).unwrap_or_default()
    }

    /// Answers one request on `route` with `body` (the POST's) under `cfg`.
    pub(crate) fn answer(
        &self,
        cfg: &VideoJobConfig,
        model_json: &str,
        route: VideoRoute,
        post: bool,
        body: &[u8],
    ) -> Reply {
        let Ok(mut jobs) = self.jobs.lock() else {
            return error(500, "video job table poisoned");
        };
        match (route, post) {
            (VideoRoute::Submit, true) => {
                let Some(value) = serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .or_else(|| form_fields(body))
                else {
                    return error(400, "the body is neither JSON nor multipart/form-data");
                };
                let text = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                let n = jobs.len();
                jobs.push(VideoJob {
                    id: format!("video_{n}"),
                    prompt: text("prompt"),
                    model: text("model"),
                    body: value,
                    polls: 0,
                    polls_after_end: 0,
                    bytes_served: 0,
                    submitted: Some(Instant::now()),
                });
                json(status_body(&jobs[n], cfg, model_json, "queued"))
            }
            (VideoRoute::Status(n), false) => {
                let Some(job) = jobs.get_mut(n as usize) else {
                    return error(404, "no such video job");
                };
                job.polls += 1;
                if cfg.reset_poll.is_some_and(|n| job.polls >= n) {
                    return None;
                }
                let elapsed = job.submitted.map_or(Duration::ZERO, |t| t.elapsed());
                let status = if elapsed < cfg.duration {
                    if job.polls == 1 {
                        "queued"
                    } else {
                        "in_progress"
                    }
                } else {
                    job.polls_after_end += 1;
                    if cfg.fail { "failed" } else { "completed" }
                };
                json(status_body(job, cfg, model_json, status))
            }
            (VideoRoute::Content(n), false) => {
                let Some(job) = jobs.get_mut(n as usize) else {
                    return error(404, "no such video job");
                };
                let done = job.submitted.is_some_and(|t| t.elapsed() >= cfg.duration);
                if !done || cfg.fail {
                    return error(404, "the video is not available");
                }
                job.bytes_served += cfg.content_bytes as u64;
                Some((200, "video/mp4", content(cfg.content_bytes)))
            }
            (VideoRoute::Submit, false) => error(405, "use POST"),
            _ => error(405, "use GET"),
        }
    }
}

/// The job object of AIPerf's `VideoResponseData` shape in `status`.
fn status_body(job: &VideoJob, cfg: &VideoJobConfig, model_json: &str, status: &str) -> String {
    let model = job
        .model
        .as_ref()
        .and_then(|m| serde_json::to_string(m).ok())
        .unwrap_or_else(|| model_json.to_owned());
    let mut out = format!(
        "{{\"id\":\"{}\",\"object\":\"video\",\"status\":\"{status}\",\"model\":{model}",
        job.id
    );
    match status {
        "completed" => out.push_str(&format!(
            ",\"progress\":100,\"inference_time_s\":{},\"peak_memory_mb\":{}",
            cfg.inference_time_s, cfg.peak_memory_mb
        )),
        "failed" => out.push_str(
            ",\"progress\":0,\"error\":{\"code\":\"mock_failure\",\"message\":\"the mock was told to fail video jobs\"}",
        ),
        _ => out.push_str(",\"progress\":0"),
    }
    out.push('}');
    out
}

fn json(body: String) -> Reply {
    Some((200, "application/json", body.into_bytes()))
}

fn error(code: u16, msg: &str) -> Reply {
    Some((code, "application/json", super::wire::error_body(code, msg)))
}

/// The text fields of a `multipart/form-data` body (AIPerf 0.13 submits video jobs as a form)
/// as a JSON object of strings; `None` when the body is not one. The boundary is the body's
/// first line.
fn form_fields(body: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(body).ok()?;
    let boundary = text.strip_prefix("--")?.split("\r\n").next()?;
    let delimiter = format!("\r\n--{boundary}");
    let mut fields = serde_json::Map::new();
    // The first part follows the opening delimiter line; the last delimiter ends with `--`.
    let rest = text.get(2 + boundary.len()..)?;
    for part in rest.split(delimiter.as_str()) {
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let name = head
            .split(';')
            .map(str::trim)
            .find_map(|p| p.strip_prefix("name=\""))
            .and_then(|n| n.split('"').next());
        if let Some(name) = name {
            fields.insert(name.to_owned(), serde_json::Value::from(value));
        }
    }
    (!fields.is_empty()).then_some(serde_json::Value::Object(fields))
}

/// `n` bytes of a stand-in MP4: an `ftyp` box, then zeros.
fn content(n: usize) -> Vec<u8> {
    let mut out = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom".to_vec();
    out.resize(n, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_bodies_give_their_text_fields() {
        let body = "--xyz\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na red fox\r\n\
                    --xyz\r\nContent-Type: text/plain\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm1\r\n--xyz--\r\n";
        let v = form_fields(body.as_bytes()).unwrap();
        assert_eq!(v, serde_json::json!({"prompt": "a red fox", "model": "m1"}));
        assert_eq!(form_fields(b"{}"), None);
        assert_eq!(form_fields(b"--"), None);
        assert_eq!(form_fields(b"--b\r\nno blank line"), None);
    }

    #[test]
    fn routes() {
        assert_eq!(VideoRoute::at("/v1/videos"), Some(VideoRoute::Submit));
        assert_eq!(
            VideoRoute::at("/v1/videos/video_7"),
            Some(VideoRoute::Status(7))
        );
        assert_eq!(
            VideoRoute::at("/v1/videos/video_7/content"),
            Some(VideoRoute::Content(7))
        );
        assert_eq!(VideoRoute::at("/v1/videos/x"), None);
        assert_eq!(VideoRoute::at("/v1/videosx"), None);
    }

    #[test]
    fn a_job_goes_queued_then_completed_and_serves_its_content() {
        let jobs = VideoJobs::default();
        let cfg = VideoJobConfig {
            content_bytes: 100,
            ..VideoJobConfig::default()
        };
        let (s, _, b) = jobs
            .answer(
                &cfg,
                "\"m\"",
                VideoRoute::Submit,
                true,
                br#"{"prompt":"a cat","model":"m"}"#,
            )
            .unwrap();
        assert_eq!(s, 200);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["id"], "video_0");
        assert_eq!(v["status"], "queued");
        let (_, _, b) = jobs
            .answer(&cfg, "\"m\"", VideoRoute::Status(0), false, b"")
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["status"], "completed");
        assert_eq!(v["inference_time_s"], 1.5);
        let (s, _, b) = jobs
            .answer(&cfg, "\"m\"", VideoRoute::Content(0), false, b"")
            .unwrap();
        assert_eq!((s, b.len()), (200, 100));
        let j = &jobs.snapshot()[0];
        assert_eq!((j.polls, j.polls_after_end, j.bytes_served), (1, 1, 100));
        assert_eq!(j.prompt.as_deref(), Some("a cat"));
        assert_eq!(
            jobs.answer(&cfg, "\"m\"", VideoRoute::Status(1), false, b"")
                .unwrap()
                .0,
            404
        );
    }
}
