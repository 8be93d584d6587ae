//! End-to-end tests of the mock over real sockets on 127.0.0.1, with a small blocking client
//! written here (deliberately not `ringperf_wire::http` / `ringperf_wire::sse`). Every behaviour is checked on
//! both monoio drivers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use uuid::Uuid;

use super::*;

const DRIVERS: [Driver; 2] = [Driver::Uring, Driver::Legacy];

/// One response as read off the wire.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// The decoded body.
    body: Vec<u8>,
    /// Payload of each HTTP chunk (empty for a content-length body).
    chunks: Vec<Vec<u8>>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The `data:` payloads of the SSE body, in order.
    fn sse_data(&self) -> Vec<String> {
        let text = std::str::from_utf8(&self.body).unwrap();
        assert!(
            text.ends_with("\n\n"),
            "SSE body must end with a blank line"
        );
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").unwrap().to_owned())
            .collect()
    }
}

struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &MockServer) -> Self {
        let s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Self {
            reader: BufReader::new(s),
        }
    }

    fn send_raw(&mut self, raw: &[u8]) {
        self.reader.get_mut().write_all(raw).unwrap();
    }

    fn send(&mut self, method: &str, path: &str, body: &str, extra: &str) {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        );
        self.send_raw(raw.as_bytes());
    }

    fn read_line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        assert!(line.ends_with("\r\n"), "line {line:?}");
        line.truncate(line.len() - 2);
        line
    }

    fn read_response(&mut self, head_only: bool) -> Response {
        let status_line = self.read_line();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let l = self.read_line();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
        let mut r = Response {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
        };
        if head_only {
            return r;
        }
        if r.header("transfer-encoding") == Some("chunked") {
            loop {
                let size = usize::from_str_radix(&self.read_line(), 16).unwrap();
                let mut payload = vec![0; size];
                self.reader.read_exact(&mut payload).unwrap();
                assert!(self.read_line().is_empty());
                if size == 0 {
                    break;
                }
                r.body.extend_from_slice(&payload);
                r.chunks.push(payload);
            }
        } else {
            let len: usize = r.header("content-length").unwrap().parse().unwrap();
            r.body = vec![0; len];
            self.reader.read_exact(&mut r.body).unwrap();
        }
        r
    }

    fn call(&mut self, method: &str, path: &str, body: &str, extra: &str) -> Response {
        self.send(method, path, body, extra);
        self.read_response(method == "HEAD")
    }

    /// After a `connection: close` response: the server closes its end.
    fn assert_closed(&mut self) {
        let mut rest = Vec::new();
        assert_eq!(self.reader.read_to_end(&mut rest).unwrap(), 0);
    }
}

fn server(driver: Driver, cfg: MockConfig) -> MockServer {
    start(MockConfig {
        io_driver: driver,
        ..cfg
    })
    .unwrap()
}

fn o200k_len(s: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(s).len()
}

const CHAT_STREAM: &str = r#"{"model":"mock-model","messages":[{"role":"user","content":"say three words now"}],"stream":true,"stream_options":{"include_usage":true}}"#;

#[test]
fn streaming_chat_framing_and_token_exactness() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(10),
                tokens_per_event: 3,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let r = c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
        assert_eq!(r.status, 200, "{d:?}");
        assert_eq!(
            r.header("content-type"),
            Some("text/event-stream; charset=utf-8")
        );
        let data = r.sse_data();
        // role + ceil(10/3) = 4 content + finish + usage + [DONE], each its own HTTP chunk.
        assert_eq!(data.len(), 8, "{d:?}");
        assert_eq!(r.chunks.len(), 8, "{d:?}");
        let events: Vec<serde_json::Value> = data[..7]
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert_eq!(
            events[0]["choices"][0]["delta"],
            serde_json::json!({"role":"assistant","content":""})
        );
        let content: String = events[1..5]
            .iter()
            .map(|e| {
                assert_eq!(e["object"], "chat.completion.chunk");
                assert!(e["choices"][0]["finish_reason"].is_null());
                e["choices"][0]["delta"]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(o200k_len(&content), 10, "{content:?}");
        assert_eq!(events[5]["choices"][0]["finish_reason"], "stop");
        assert_eq!(events[6]["choices"], serde_json::json!([]));
        assert_eq!(
            events[6]["usage"],
            serde_json::json!({"prompt_tokens":4,"total_tokens":14,"completion_tokens":10})
        );
        assert_eq!(data[7], "[DONE]");
        // All events of one response share the id.
        assert!(events.iter().all(|e| e["id"] == events[0]["id"]));
    }
}

/// vLLM's `continuous_usage_stats`: every chunk carries the usage so far (the role chunk 0
/// completion tokens, each token event the running count, reasoning first), in the plain and
/// the fast mode, with the usage-only chunk last as before.
#[test]
fn continuous_usage_on_every_chunk_counts_the_tokens_sent_so_far() {
    let body = r#"{"messages":[{"role":"user","content":"say three words now"}],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
    for (d, fast) in DRIVERS.iter().flat_map(|d| [(*d, false), (*d, true)]) {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(7),
                reasoning_tokens: 2,
                tokens_per_event: 3,
                fast,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let r = c.call("POST", "/v1/chat/completions", body, "");
        let data = r.sse_data();
        // role + 1 reasoning event (2 tokens) + 3 content events (3, 3, 1) + finish + usage +
        // [DONE].
        assert_eq!(data.len(), 8, "{d:?} fast {fast}");
        let ev: Vec<serde_json::Value> = data[..7]
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        let completion: Vec<u64> = ev
            .iter()
            .map(|e| e["usage"]["completion_tokens"].as_u64().unwrap())
            .collect();
        assert_eq!(completion, [0, 2, 5, 8, 9, 9, 9], "{d:?} fast {fast}");
        for e in &ev {
            assert_eq!(e["usage"]["prompt_tokens"], 4);
            let c = e["usage"]["completion_tokens"].as_u64().unwrap();
            assert_eq!(e["usage"]["total_tokens"].as_u64(), Some(4 + c));
        }
        // The tokens each content event added are the words it carries.
        for (i, added) in [(2, 3), (3, 3), (4, 1)] {
            let text = ev[i]["choices"][0]["delta"]["content"].as_str().unwrap();
            assert_eq!(o200k_len(text), added, "event {i}: {text:?}");
        }
        assert_eq!(ev[5]["choices"][0]["finish_reason"], "stop");
        assert_eq!(ev[6]["choices"], serde_json::json!([]));
        assert_eq!(data[7], "[DONE]");
        // Without include_usage, vLLM sends no usage at all.
        let plain = body.replace(r#""include_usage":true,"#, "");
        let r = c.call("POST", "/v1/chat/completions", &plain, "");
        assert!(r.sse_data().iter().all(|e| !e.contains("usage")));
    }
}

#[test]
fn usage_chunk_only_when_asked_and_reasoning_comes_first() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(5),
                reasoning_tokens: 4,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let body = r#"{"messages":[{"role":"user","content":"hi"}],"stream":true}"#;
        let r = c.call("POST", "/v1/chat/completions", body, "");
        let data = r.sse_data();
        // role + 4 reasoning + 5 content + finish + [DONE]; no usage chunk.
        assert_eq!(data.len(), 12, "{d:?}");
        let ev: Vec<serde_json::Value> = data[..11]
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        let reasoning: String = ev[1..5]
            .iter()
            .map(|e| {
                e["choices"][0]["delta"]["reasoning_content"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        let content: String = ev[5..10]
            .iter()
            .map(|e| e["choices"][0]["delta"]["content"].as_str().unwrap())
            .collect();
        assert_eq!((o200k_len(&reasoning), o200k_len(&content)), (4, 5));
        assert!(ev.iter().all(|e| e.get("usage").is_none()));
        assert_eq!(data[11], "[DONE]");
    }
}

#[test]
fn non_streaming_chat_and_completions() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(7),
                model: "m-1".into(),
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let r = c.call(
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"a b c"}]}"#,
            "",
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "m-1");
        assert_eq!(
            o200k_len(v["choices"][0]["message"]["content"].as_str().unwrap()),
            7
        );
        assert_eq!(
            v["usage"],
            serde_json::json!({"prompt_tokens":3,"total_tokens":10,"completion_tokens":7})
        );

        let r = c.call(
            "POST",
            "/v1/completions",
            r#"{"prompt":"x y","max_tokens":100}"#,
            "",
        );
        let v = r.json();
        assert_eq!(v["object"], "text_completion");
        assert_eq!(o200k_len(v["choices"][0]["text"].as_str().unwrap()), 7);
        assert_eq!(v["choices"][0]["finish_reason"], "stop");

        let body = r#"{"prompt":"x","stream":true,"stream_options":{"include_usage":true}}"#;
        let r = c.call("POST", "/v1/completions", body, "");
        let data = r.sse_data();
        // 7 text events + finish + usage + [DONE]; no role chunk for completions.
        assert_eq!(data.len(), 10, "{d:?}");
        let ev: Vec<serde_json::Value> = data[..9]
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        let text: String = ev[..7]
            .iter()
            .map(|e| e["choices"][0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(o200k_len(&text), 7);
        assert!(ev[..7].iter().all(|e| e["object"] == "text_completion"));
        assert_eq!(ev[7]["choices"][0]["finish_reason"], "stop");
        assert_eq!(ev[8]["usage"]["completion_tokens"], 7);
        assert_eq!(data[9], "[DONE]");
    }
}

#[test]
fn max_tokens_caps_the_output_unless_told_otherwise() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(16),
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let r = c.call(
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[],"max_completion_tokens":5}"#,
            "",
        );
        let v = r.json();
        assert_eq!(v["usage"]["completion_tokens"], 5);
        assert_eq!(
            o200k_len(v["choices"][0]["message"]["content"].as_str().unwrap()),
            5
        );
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        let r = c.call(
            "POST",
            "/v1/completions",
            r#"{"prompt":"","max_tokens":3,"stream":true}"#,
            "",
        );
        assert_eq!(r.sse_data().len(), 3 + 2);
        drop(c);
        s.stop();

        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(16),
                respect_max_tokens: false,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let v = c
            .call(
                "POST",
                "/v1/completions",
                r#"{"prompt":"","max_tokens":3}"#,
                "",
            )
            .json();
        assert_eq!(v["usage"]["completion_tokens"], 16);
    }
}

#[test]
fn uniform_lengths_stay_in_range() {
    let s = server(
        Driver::Auto,
        MockConfig {
            output_tokens: OutputLen::Uniform { min: 2, max: 4 },
            ..Default::default()
        },
    );
    let mut c = Client::connect(&s);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let v = c
            .call("POST", "/v1/completions", r#"{"prompt":"p"}"#, "")
            .json();
        let n = v["usage"]["completion_tokens"].as_u64().unwrap();
        assert_eq!(
            o200k_len(v["choices"][0]["text"].as_str().unwrap()) as u64,
            n
        );
        seen.insert(n);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [2, 3, 4]);
}

#[test]
fn keep_alive_pipelining_and_connection_close() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(2),
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        for _ in 0..3 {
            let r = c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
            assert_eq!((r.status, r.sse_data().len()), (200, 6), "{d:?}");
        }
        // Two requests in one write: two answers, in order.
        let one = format!(
            "POST /v1/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{}",
            r#"{"prompt":"a"}"#.len(),
            r#"{"prompt":"a"}"#
        );
        c.send_raw(format!("{one}GET /health HTTP/1.1\r\n\r\n").as_bytes());
        assert_eq!(c.read_response(false).json()["object"], "text_completion");
        let h = c.read_response(false);
        assert_eq!((h.status, h.body.len()), (200, 0));
        // A body split across writes is still read whole.
        let body = r#"{"prompt":"split body"}"#;
        c.send_raw(
            format!(
                "POST /v1/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{}",
                body.len(),
                &body[..5]
            )
            .as_bytes(),
        );
        std::thread::sleep(Duration::from_millis(20));
        c.send_raw(&body.as_bytes()[5..]);
        let r = c.read_response(false);
        assert_eq!(
            r.json()["usage"]["prompt_tokens"],
            2,
            "{:?}",
            String::from_utf8_lossy(&r.body)
        );
        // `Expect: 100-continue` gets its interim answer before the body is sent.
        let body = r#"{"prompt":"after continue"}"#;
        c.send_raw(
            format!(
                "POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        assert_eq!(c.read_line(), "HTTP/1.1 100 Continue");
        assert!(c.read_line().is_empty());
        c.send_raw(body.as_bytes());
        assert_eq!(c.read_response(false).json()["usage"]["prompt_tokens"], 2);
        // Connection: close is answered, then the server closes.
        let r = c.call("GET", "/v1/models", "", "Connection: close\r\n");
        assert_eq!(r.header("connection"), Some("close"));
        assert_eq!(r.json()["data"][0]["id"], "mock-model");
        c.assert_closed();
    }
}

#[test]
fn errors_and_head_requests() {
    for d in DRIVERS {
        let s = server(d, MockConfig::default());
        let mut c = Client::connect(&s);
        let r = c.call("GET", "/nope", "", "");
        assert_eq!(r.status, 404);
        assert_eq!(r.json()["error"]["code"], 404);
        let r = c.call("POST", "/v1/chat/completions", "{not json", "");
        assert_eq!(r.status, 400);
        let e = r.json();
        assert!(e["error"]["message"].as_str().unwrap().contains("JSON"));
        assert_eq!(e["error"]["type"], "BadRequestError");
        let r = c.call("GET", "/v1/chat/completions", "", "");
        assert_eq!(r.status, 405);
        // The connection survived all of that.
        for path in ["/health", "/metrics", "/v1/models"] {
            let get = c.call("GET", path, "", "");
            let head = c.call("HEAD", path, "", "");
            assert_eq!((get.status, head.status), (200, 200), "{path}");
            if path != "/metrics" {
                assert_eq!(
                    head.header("content-length"),
                    get.header("content-length"),
                    "{path}"
                );
            }
        }
        // A chunked request body is refused and the connection closed.
        c.send_raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        let r = c.read_response(false);
        assert_eq!(r.status, 411);
        c.assert_closed();
        // Garbage gets a 400 and a close.
        let mut c = Client::connect(&s);
        c.send_raw(b"\x01\x02\x03 nonsense\r\n\r\n");
        assert_eq!(c.read_response(false).status, 400);
        c.assert_closed();
    }
}

/// The value of the sample line that starts with `prefix`.
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn metrics_reflect_served_traffic() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(4),
                ..Default::default()
            },
        );
        let before = s.metrics_text();
        assert_eq!(sample(&before, "vllm:request_success_total{"), 0.0);
        let mut c = Client::connect(&s);
        for _ in 0..3 {
            c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
        }
        c.call(
            "POST",
            "/v1/completions",
            r#"{"prompt":"one two","max_tokens":2}"#,
            "",
        );
        let page = String::from_utf8(c.call("GET", "/metrics", "", "").body).unwrap();
        for text in [page.as_str(), s.metrics_text().as_str()] {
            assert_eq!(sample(text, "vllm:request_success_total{"), 4.0, "{d:?}");
            assert_eq!(
                sample(
                    text,
                    "vllm:request_success_total{engine=\"0\",finished_reason=\"length\""
                ),
                1.0
            );
            assert_eq!(
                sample(text, "vllm:generation_tokens_total{"),
                3.0 * 4.0 + 2.0
            );
            assert_eq!(sample(text, "vllm:prompt_tokens_total{"), 3.0 * 4.0 + 2.0);
            assert_eq!(sample(text, "vllm:time_to_first_token_seconds_count{"), 4.0);
            // Streams of 4 tokens give 3 gaps each; the whole response gives none.
            assert_eq!(sample(text, "vllm:inter_token_latency_seconds_count{"), 9.0);
            assert_eq!(
                sample(
                    text,
                    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\""
                ),
                4.0
            );
            assert_eq!(sample(text, "vllm:num_requests_running{"), 0.0);
            assert!(text.contains("model_name=\"mock-model\""));
        }
    }
}

#[test]
fn truth_log_records_paced_events() {
    let ttft = Duration::from_millis(30);
    let itl = Duration::from_millis(8);
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                ttft,
                itl,
                truth_log: true,
                output_tokens: OutputLen::Fixed(5),
                tokens_per_event: 2,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        let ids = [Uuid::new_v4(), Uuid::new_v4()];
        for id in ids {
            let r = c.call(
                "POST",
                "/v1/chat/completions",
                CHAT_STREAM,
                &format!("X-Request-ID: {id}\r\n"),
            );
            assert_eq!(r.sse_data().len(), 1 + 3 + 3);
        }
        c.call(
            "POST",
            "/v1/completions",
            r#"{"prompt":"x"}"#,
            "X-Request-ID: not-a-uuid\r\n",
        );
        let truth = s.truth();
        // The server records a request right after its last write; the client may be faster.
        let waited = std::time::Instant::now();
        while truth.len() < 3 && waited.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(truth.len(), 3, "{d:?}");
        for id in ids {
            let e = truth.get(&id).unwrap();
            assert!(e.completed && e.stream);
            assert_eq!(
                (e.content_tokens, e.reasoning_tokens, e.tokens_per_event),
                (5, 0, 2)
            );
            assert_eq!(e.event_ns.len(), 3);
            assert!(e.head_ns >= e.arrival_ns);
            assert!(
                e.event_ns[0] - e.arrival_ns >= ttft.as_nanos() as u64,
                "{d:?} {e:?}"
            );
            // Absolute deadlines: event k is never before arrival + TTFT + k × ITL (a late
            // event shortens the next gap rather than shifting every later one).
            for (k, &at) in e.event_ns.iter().enumerate() {
                let due = (ttft + itl * k as u32).as_nanos() as u64;
                assert!(at - e.arrival_ns >= due, "{d:?} event {k} {e:?}");
            }
            assert!(e.end_ns >= *e.event_ns.last().unwrap());
        }
        let unkeyed: Vec<TruthEntry> = truth
            .entries()
            .into_iter()
            .filter(|e| e.request_id.is_none())
            .collect();
        assert_eq!(unkeyed.len(), 1);
        // Non-streamed: ready when the last of ceil(5/2) = 3 events would be, TTFT + 2 × ITL.
        let e = &unkeyed[0];
        assert!(!e.stream);
        assert!(
            e.end_ns - e.arrival_ns >= (ttft + itl * 2).as_nanos() as u64,
            "{e:?}"
        );
    }
}

/// Configured delays of the pacing tests.
const PACED_TTFT: Duration = Duration::from_millis(5);
const PACED_ITL: Duration = Duration::from_millis(2);

/// What the truth log says of 8 streamed chat requests (15 tokens each) and one non-streamed
/// completion on a mock of `driver` with [`PACED_TTFT`] and [`PACED_ITL`]: the TTFTs, how late
/// each token write was, and the non-streamed time to its whole answer, in ns.
struct Paced {
    ttfts: Vec<u64>,
    /// Per stream, per token event k: its write stamp − arrival − (TTFT + k × ITL), signed (a
    /// negative value is a token written before its absolute deadline).
    lateness: Vec<Vec<i64>>,
    whole: u64,
}

fn paced(d: Driver) -> Paced {
    let s = server(
        d,
        MockConfig {
            ttft: PACED_TTFT,
            itl: PACED_ITL,
            truth_log: true,
            output_tokens: OutputLen::Fixed(15),
            ..Default::default()
        },
    );
    let mut c = Client::connect(&s);
    let requests = 8;
    for _ in 0..requests {
        let r = c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
        // Role, 15 tokens, finish, usage, [DONE].
        assert_eq!(r.chunks.len(), 19);
    }
    c.call("POST", "/v1/completions", r#"{"prompt":"x"}"#, "");
    let truth = s.truth();
    let waited = std::time::Instant::now();
    while truth.len() < requests + 1 && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let entries = truth.entries();
    assert_eq!(entries.len(), requests + 1, "{d:?}");
    let (mut ttfts, mut whole) = (Vec::new(), Vec::new());
    let mut lateness = Vec::new();
    let (ttft_ns, itl_ns) = (PACED_TTFT.as_nanos() as i64, PACED_ITL.as_nanos() as i64);
    for e in &entries {
        assert!(e.completed, "{d:?} {e:?}");
        let first = e.event_ns[0] - e.arrival_ns;
        if e.stream {
            assert_eq!(e.event_ns.len(), 15);
            ttfts.push(first);
            lateness.push(
                e.event_ns
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| (t - e.arrival_ns) as i64 - (ttft_ns + k as i64 * itl_ns))
                    .collect(),
            );
        } else {
            whole.push(first);
        }
    }
    Paced {
        ttfts,
        lateness,
        whole: whole[0],
    }
}

/// The non-streamed answer is ready when the 15th event would have been: TTFT + 14 × ITL.
fn paced_whole_ns() -> u64 {
    (PACED_TTFT + 14 * PACED_ITL).as_nanos() as u64
}

/// The mock keeps its word: the truth log's TTFT (arrival to the first token write) and every gap
/// between token writes are never shorter than configured, on either driver. How close to the
/// configured delays they are depends on the machine's load, so that is a measurement:
/// `mock_pacing` in benches/measure.rs.
#[test]
fn paced_delays_are_never_early() {
    let ttft_ns = PACED_TTFT.as_nanos() as u64;
    for d in DRIVERS {
        let p = paced(d);
        assert!(
            p.ttfts.iter().all(|&t| t >= ttft_ns),
            "{d:?} TTFT {:?}",
            p.ttfts
        );
        // Deadlines are absolute: token k is never written before arrival + TTFT + k × ITL
        // (a gap after a late write may be shorter than the ITL; the schedule is what holds).
        assert_eq!(p.lateness.len(), 8, "{d:?}");
        assert!(
            p.lateness.iter().flatten().all(|&l| l >= 0),
            "{d:?} lateness {:?}",
            p.lateness
        );
        assert!(p.whole >= paced_whole_ns(), "{d:?} whole {}", p.whole);
    }
}

#[test]
fn several_threads_serve_concurrent_connections_and_stop_joins() {
    let s = server(
        Driver::Auto,
        MockConfig {
            threads: 2,
            pin_cores: Some(vec![0]),
            itl: Duration::from_millis(1),
            output_tokens: OutputLen::Fixed(3),
            ..Default::default()
        },
    );
    let addr = s.addr;
    let handles: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let st = TcpStream::connect(addr).unwrap();
                st.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut c = Client {
                    reader: BufReader::new(st),
                };
                (0..5)
                    .map(|_| {
                        c.call("POST", "/v1/chat/completions", CHAT_STREAM, "")
                            .sse_data()
                            .len()
                    })
                    .sum::<usize>()
            })
        })
        .collect();
    let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, 4 * 5 * 7);
    // Each connection's last request is counted right after its last write: allow for that.
    let waited = std::time::Instant::now();
    while sample(&s.metrics_text(), "vllm:request_success_total{") < 20.0
        && waited.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        sample(&s.metrics_text(), "vllm:request_success_total{"),
        20.0
    );
    // An idle connection does not keep stop from returning.
    let _idle = TcpStream::connect(addr).unwrap();
    let t = std::time::Instant::now();
    s.stop();
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn large_bodies_and_stop_during_a_paced_stream() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                output_tokens: OutputLen::Fixed(3),
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        // 50,000 words: the body outgrows the first read buffer several times.
        let prompt = "w ".repeat(50_000);
        let body = format!(r#"{{"prompt":"{prompt}","max_tokens":2}}"#);
        let v = c.call("POST", "/v1/completions", &body, "").json();
        assert_eq!(v["usage"]["prompt_tokens"], 50_000, "{d:?}");
        assert_eq!(v["usage"]["completion_tokens"], 2);
        s.stop();

        // A stream waiting on a long TTFT is cut by stop, which returns promptly.
        let s = server(
            d,
            MockConfig {
                ttft: Duration::from_secs(30),
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        c.send("POST", "/v1/chat/completions", CHAT_STREAM, "");
        let head = c.read_response(true);
        assert_eq!(head.status, 200);
        let t = std::time::Instant::now();
        s.stop();
        assert!(t.elapsed() < Duration::from_secs(5), "{d:?}");
    }
}

#[test]
fn bad_config_is_refused() {
    let e = start(MockConfig {
        tokens_per_event: 0,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

/// The mock's sockets are never inherited by a child process: a child spawned while a
/// connection is held (as the other tests of a test binary do, or a benchmark's launcher) must
/// not keep that connection, or the listener, open after the mock stops or pauses.
#[test]
fn stop_and_pause_end_held_connections_while_a_child_process_lives() {
    for d in DRIVERS {
        for pause in [false, true] {
            let mut s = server(d, MockConfig::default());
            let addr = s.addr;
            let mut c = Client::connect(&s);
            // The answer proves the mock has accepted (and holds) the connection.
            assert_eq!(c.call("GET", "/health", "", "").status, 200, "{d:?}");
            let mut child = std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("spawn sleep");
            let paused = if pause {
                s.pause();
                Some(s)
            } else {
                s.stop();
                None
            };
            let held = c.reader.get_mut();
            held.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let ended = held.read(&mut [0u8; 16]);
            let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            let _ = child.kill();
            let _ = child.wait();
            match ended {
                Ok(0) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
                other => panic!("{d:?} pause={pause}: the held connection ends: {other:?}"),
            }
            assert!(
                refused.is_err(),
                "{d:?} pause={pause}: the listener is closed"
            );
            if let Some(mut s) = paused {
                s.resume().unwrap();
                let mut again = Client::connect(&s);
                assert_eq!(again.call("GET", "/health", "", "").status, 200, "{d:?}");
            }
        }
    }
}

/// The text a client reads from a completion response: chat's `content` (streamed deltas
/// concatenated, or `message.content`), a completion's `text`; never `reasoning_content`.
fn client_text(r: &Response, chat: bool, stream: bool) -> String {
    let field = |choice: &serde_json::Value| -> String {
        let v = if chat {
            if stream {
                &choice["delta"]["content"]
            } else {
                &choice["message"]["content"]
            }
        } else {
            &choice["text"]
        };
        v.as_str().unwrap_or_default().to_owned()
    };
    if !stream {
        return field(&r.json()["choices"][0]);
    }
    let data = r.sse_data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    data[..data.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap())
        .filter_map(|e| e["choices"].get(0).map(field))
        .collect()
}

/// The truth entry of request `id`, waiting for the server to file it (it records a request
/// right after its last write; the client may read that write first).
fn truth_of(s: &MockServer, id: &Uuid) -> TruthEntry {
    let waited = std::time::Instant::now();
    loop {
        if let Some(e) = s.truth().get(id) {
            return e;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "request {id} never reached the truth log"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The four shapes of a completion request: (path, chat, stream, body).
fn completion_requests() -> [(&'static str, bool, bool, String); 4] {
    let chat = |stream: bool| {
        serde_json::json!({
            "model": "mock-model",
            "messages": [
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": " an earlier reply"},
                {"role": "user", "content": "and a second \"quoted\" one"},
            ],
            "stream": stream,
            "stream_options": {"include_usage": true},
        })
        .to_string()
    };
    let completion = |stream: bool| {
        serde_json::json!({"prompt": "once upon a time", "stream": stream, "max_tokens": 50})
            .to_string()
    };
    [
        ("/v1/chat/completions", true, true, chat(true)),
        ("/v1/chat/completions", true, false, chat(false)),
        ("/v1/completions", false, true, completion(true)),
        ("/v1/completions", false, false, completion(false)),
    ]
}

/// With `record_bodies`, the truth log keeps the correlation id, the body byte for byte and the
/// reply text exactly as the client read it: streamed or whole, chat or completions. Chat's text
/// leaves the reasoning out; a completion's text carries it (the API has no other field for it).
#[test]
fn truth_log_keeps_the_correlation_id_body_and_reply_text() {
    for d in DRIVERS {
        let s = server(
            d,
            MockConfig {
                truth_log: true,
                record_bodies: true,
                output_tokens: OutputLen::Fixed(9),
                reasoning_tokens: 3,
                tokens_per_event: 2,
                ..Default::default()
            },
        );
        let mut c = Client::connect(&s);
        for (path, chat, stream, body) in completion_requests() {
            let id = Uuid::new_v4();
            let r = c.call(
                "POST",
                path,
                &body,
                &format!("X-Request-ID: {id}\r\nX-Correlation-ID: abc\r\n"),
            );
            assert_eq!(r.status, 200, "{d:?} {path}");
            let received = client_text(&r, chat, stream);
            let e = truth_of(&s, &id);
            let what = format!("{d:?} {path} stream={stream}");
            assert!(e.completed, "{what}");
            assert_eq!(e.correlation_id.as_deref(), Some("abc"), "{what}");
            assert_eq!(e.request_body.as_deref(), Some(body.as_bytes()), "{what}");
            assert_eq!(e.reply_text.as_deref(), Some(received.as_str()), "{what}");
            // The text is the configured number of tokens: 9 content, plus 3 reasoning for a
            // completion's text.
            let tokens = if chat { 9 } else { 12 };
            assert_eq!(o200k_len(&received), tokens, "{what} {received:?}");
        }
    }
}

/// Without `record_bodies` (the default) the truth log keeps no body and no text, but still the
/// correlation id; a request without the header has none.
#[test]
fn without_record_bodies_only_the_correlation_id_is_kept() {
    let s = server(
        Driver::Auto,
        MockConfig {
            truth_log: true,
            ..Default::default()
        },
    );
    assert!(!MockConfig::default().record_bodies);
    let mut c = Client::connect(&s);
    for (path, _, _, body) in completion_requests() {
        let id = Uuid::new_v4();
        let extra = format!("X-Request-ID: {id}\r\nX-Correlation-ID: sess-42\r\n");
        assert_eq!(c.call("POST", path, &body, &extra).status, 200);
        let e = truth_of(&s, &id);
        assert_eq!(e.correlation_id.as_deref(), Some("sess-42"), "{path}");
        assert_eq!((e.request_body, e.reply_text), (None, None), "{path}");
    }
    let id = Uuid::new_v4();
    c.call(
        "POST",
        "/v1/completions",
        r#"{"prompt":"x"}"#,
        &format!("X-Request-ID: {id}\r\n"),
    );
    assert_eq!(truth_of(&s, &id).correlation_id, None);
}

/// The reply text is a function of the body and the seed only: the same body gets the same text
/// on another server with other threads and another driver, whatever came before it, and a
/// different body or seed gets a different one. The token counts stay those configured.
#[test]
fn reply_text_is_a_function_of_the_body_and_the_seed() {
    let cfg = |seed: u64, threads: usize, io_driver: Driver| MockConfig {
        seed,
        threads,
        io_driver,
        truth_log: true,
        record_bodies: true,
        output_tokens: OutputLen::Fixed(24),
        ..Default::default()
    };
    let body_a = r#"{"messages":[{"role":"user","content":"turn one"}],"stream":true}"#;
    let body_b = r#"{"messages":[{"role":"user","content":"turn one!"}],"stream":true}"#;
    let ask = |s: &MockServer, body: &str| -> String {
        let mut c = Client::connect(s);
        let id = Uuid::new_v4();
        let r = c.call(
            "POST",
            "/v1/chat/completions",
            body,
            &format!("X-Request-ID: {id}\r\n"),
        );
        let text = client_text(&r, true, true);
        assert_eq!(truth_of(s, &id).reply_text.as_deref(), Some(text.as_str()));
        assert_eq!(o200k_len(&text), 24, "{text:?}");
        text
    };
    let first = start(cfg(5, 1, Driver::Uring)).unwrap();
    let a1 = ask(&first, body_a);
    let b1 = ask(&first, body_b);
    let a1_again = ask(&first, body_a);
    assert_eq!(a1, a1_again, "same body, same server");
    assert_ne!(a1, b1, "one byte more in the body");
    first.stop();

    // Another run: other threads, other driver, the requests in another order.
    let second = start(cfg(5, 3, Driver::Legacy)).unwrap();
    let b2 = ask(&second, body_b);
    for _ in 0..4 {
        assert_eq!(ask(&second, body_a), a1, "same body and seed, another run");
    }
    assert_eq!(b2, b1);
    second.stop();

    let other_seed = start(cfg(6, 1, Driver::Uring)).unwrap();
    assert_ne!(ask(&other_seed, body_a), a1, "another seed");
}

/// Faults and the reply text: a stream ended early by an `event: error` keeps the text of the
/// content events it carried (a prefix of the full reply); an error status carries no text.
#[test]
fn reply_text_of_faulted_requests_is_what_was_sent() {
    let cfg = |kind: Fault| MockConfig {
        truth_log: true,
        record_bodies: true,
        output_tokens: OutputLen::Fixed(6),
        faults: vec![FaultSpec {
            kind,
            fraction: 1.0,
        }],
        ..Default::default()
    };
    let body = r#"{"messages":[{"role":"user","content":"q"}],"stream":true}"#;
    let full = {
        let s = server(
            Driver::Auto,
            MockConfig {
                faults: Vec::new(),
                ..cfg(Fault::SlowLoris)
            },
        );
        let r = Client::connect(&s).call("POST", "/v1/chat/completions", body, "");
        client_text(&r, true, true)
    };

    let s = server(Driver::Auto, cfg(Fault::SseErrorEvent));
    let id = Uuid::new_v4();
    let r = Client::connect(&s).call(
        "POST",
        "/v1/chat/completions",
        body,
        &format!("X-Request-ID: {id}\r\n"),
    );
    // The content deltas before the error event (after half of the six token events).
    let text = std::str::from_utf8(&r.body).unwrap();
    let (before, _) = text.split_once("event: error").unwrap();
    let received: String = before
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap())
        .filter_map(|e| {
            e["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(o200k_len(&received), 3, "{received:?}");
    assert!(full.starts_with(&received) && full.len() > received.len());
    let e = truth_of(&s, &id);
    assert_eq!(e.fault, Some(Fault::SseErrorEvent));
    assert_eq!(e.reply_text.as_deref(), Some(received.as_str()));

    let s = server(Driver::Auto, cfg(Fault::Status(503)));
    let id = Uuid::new_v4();
    let r = Client::connect(&s).call(
        "POST",
        "/v1/chat/completions",
        body,
        &format!("X-Request-ID: {id}\r\n"),
    );
    assert_eq!(r.status, 503);
    let e = truth_of(&s, &id);
    assert_eq!(e.request_body.as_deref(), Some(body.as_bytes()));
    assert_eq!(e.reply_text, None);
}

/// `clients` connections at once, each sending `per_client` streamed chats back to back; the
/// truth log's entries, by arrival, once the server has stopped (so every answer is recorded).
fn closed_loop(s: MockServer, clients: usize, per_client: usize) -> Vec<TruthEntry> {
    let addr = s.addr;
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || {
                let st = TcpStream::connect(addr).unwrap();
                st.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut c = Client {
                    reader: BufReader::new(st),
                };
                for _ in 0..per_client {
                    let r = c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
                    assert_eq!(r.status, 200);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let truth = s.truth();
    s.stop();
    truth.entries()
}

#[test]
fn capacity_queues_requests_beyond_n_first_come_first_served() {
    // Service time S = TTFT + (6 - 1) × ITL = 50 + 5 × 2 = 60 ms; capacity N = 2.
    const N: usize = 2;
    let ttft = Duration::from_millis(50);
    let s_ns: u64 = 60_000_000;
    let cfg = MockConfig {
        ttft,
        itl: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(6),
        truth_log: true,
        capacity: N as u32,
        ..Default::default()
    };
    // In service over [start, start + S), start = arrival + queue wait.
    let most_in_service = |log: &[TruthEntry]| {
        let starts: Vec<u64> = log.iter().map(|e| e.arrival_ns + e.queue_wait_ns).collect();
        starts
            .iter()
            .map(|&t| starts.iter().filter(|&&u| u <= t && t < u + s_ns).count())
            .max()
            .unwrap()
    };

    // At concurrency N nobody waits, and the first token is due TTFT after arrival.
    let log = closed_loop(server(Driver::Auto, cfg.clone()), N, 4);
    assert_eq!(log.len(), N * 4);
    for e in &log {
        assert_eq!(e.queue_wait_ns, 0, "{e:?}");
        assert!(e.event_ns[0] >= e.arrival_ns + ttft.as_nanos() as u64);
    }

    // At 2N, N are in service and N wait: a request waits for the slot freed by the request
    // served ahead of it, one service time less the client's turnaround (at most S).
    let log = closed_loop(server(Driver::Auto, cfg), 2 * N, 5);
    assert_eq!(log.len(), 2 * N * 5);
    let mut waits: Vec<u64> = log.iter().map(|e| e.queue_wait_ns).collect();
    waits.sort_unstable();
    let median = waits[waits.len() / 2];
    assert!(
        median <= s_ns && median >= s_ns * 9 / 10,
        "median queue wait {median} ns, service time {s_ns} ns: {waits:?}"
    );
    assert!(waits.iter().all(|&w| w <= s_ns), "{waits:?}");
    assert_eq!(most_in_service(&log), N);
    // Each first token went out no earlier than arrival + wait + TTFT.
    for e in &log {
        assert!(e.event_ns[0] >= e.arrival_ns + e.queue_wait_ns + ttft.as_nanos() as u64);
    }
}

/// A streamed answer's events as JSON, with the fields the fast mode shares across responses
/// (`id`, `created`) and the words (`content`, `reasoning_content`, `text`) blanked, and the
/// words themselves.
fn shape_and_words(r: &Response) -> (Vec<serde_json::Value>, String) {
    let mut words = String::new();
    let mut shape = Vec::new();
    for d in r.sse_data() {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&d) else {
            shape.push(serde_json::Value::String(d));
            continue;
        };
        v["id"] = serde_json::Value::Null;
        v["created"] = serde_json::Value::Null;
        for path in ["/choices/0/delta/content", "/choices/0/text"] {
            if let Some(field) = v.pointer_mut(path)
                && let Some(s) = field.as_str().filter(|s| !s.is_empty())
            {
                words.push_str(s);
                *field = serde_json::Value::Null;
            }
        }
        shape.push(v);
    }
    (shape, words)
}

/// The fast mode answers streamed chat and completions requests with the same events as the
/// normal mode (the same chunks, fields, finish and usage; only the shared id, `created` and the
/// body-independent words differ), keeps every deadline (never early, on both drivers), and its
/// truth log says what went out: one stamp per token event and the exact reply text.
#[test]
fn fast_mode_sends_the_normal_events_and_keeps_its_word() {
    let (ttft, itl) = (PACED_TTFT, PACED_ITL);
    let cfg = |fast| MockConfig {
        ttft,
        itl,
        fast,
        truth_log: true,
        record_bodies: true,
        output_tokens: OutputLen::Fixed(15),
        tokens_per_event: 2,
        ..Default::default()
    };
    let completion_stream = r#"{"prompt":"once upon a time","stream":true,"max_tokens":50}"#;
    for d in DRIVERS {
        let (fast, normal) = (server(d, cfg(true)), server(d, cfg(false)));
        let (mut cf, mut cn) = (Client::connect(&fast), Client::connect(&normal));
        let mut fast_words = Vec::new();
        for (path, body) in [
            ("/v1/chat/completions", CHAT_STREAM),
            ("/v1/completions", completion_stream),
        ] {
            let id = Uuid::new_v4();
            let extra = format!("X-Request-ID: {id}\r\n");
            let (rf, rn) = (
                cf.call("POST", path, body, &extra),
                cn.call("POST", path, body, ""),
            );
            assert_eq!(rf.chunks.len(), rn.chunks.len(), "{d:?} {path}");
            let ((shape_f, words_f), (shape_n, words_n)) =
                (shape_and_words(&rf), shape_and_words(&rn));
            assert_eq!(shape_f, shape_n, "{d:?} {path}");
            assert_eq!((o200k_len(&words_f), o200k_len(&words_n)), (15, 15));
            let t = truth_of(&fast, &id);
            assert!(t.completed && t.stream, "{d:?} {t:?}");
            assert_eq!(t.reply_text.as_deref(), Some(words_f.as_str()), "{d:?}");
            // ceil(15 / 2) = 8 token events, each its own write at or after its deadline.
            assert_eq!(t.event_ns.len(), 8, "{d:?}");
            for (k, &at) in t.event_ns.iter().enumerate() {
                let due = (ttft + itl * k as u32).as_nanos() as u64;
                assert!(at - t.arrival_ns >= due, "{d:?} event {k} {t:?}");
            }
            assert!(t.event_ns.windows(2).all(|w| w[0] < w[1]), "{t:?}");
            fast_words.push(words_f);
        }
        // The words do not depend on the body in the fast mode: chat and completion got the same.
        assert_eq!(fast_words[0], fast_words[1], "{d:?}");
    }
}

/// Many streams on one fast-mode thread, arriving together with deadlines that interleave: every
/// stream gets all its events, none before its deadline, and the truth log has them all.
#[test]
fn fast_mode_paces_many_streams_on_one_timer() {
    let (ttft, itl) = (Duration::from_millis(3), Duration::from_millis(1));
    let s = server(
        Driver::Uring,
        MockConfig {
            ttft,
            itl,
            fast: true,
            truth_log: true,
            output_tokens: OutputLen::Fixed(12),
            ..Default::default()
        },
    );
    let clients = 24;
    std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                let mut c = Client::connect(&s);
                for _ in 0..2 {
                    let r = c.call("POST", "/v1/chat/completions", CHAT_STREAM, "");
                    // Role, 12 tokens, finish, usage, [DONE].
                    assert_eq!(r.chunks.len(), 16);
                }
            });
        }
    });
    let truth = s.truth();
    let waited = std::time::Instant::now();
    while truth.len() < clients * 2 && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let entries = truth.entries();
    assert_eq!(entries.len(), clients * 2);
    for e in &entries {
        assert!(e.completed, "{e:?}");
        assert_eq!(e.event_ns.len(), 12);
        for (k, &at) in e.event_ns.iter().enumerate() {
            let due = (ttft + itl * k as u32).as_nanos() as u64;
            assert!(at - e.arrival_ns >= due, "event {k} {e:?}");
        }
    }
}

/// Posts a multipart/form-data body (ringperf's writer) with its content type.
fn post_form(
    c: &mut Client,
    path: &str,
    body: &ringperf_wire::http::multipart::MultipartBody,
    id: &Uuid,
) {
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         X-Request-ID: {id}\r\n\r\n",
        body.content_type(),
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(&body.to_vec());
    c.send_raw(&raw);
}

/// Image edit and audio transcription uploads: the mock answers as the APIs do and its truth
/// log holds what it decoded from each uploaded file (image dimensions; WAV rate, depth,
/// channels and duration), which equal what was generated.
#[test]
fn multipart_uploads_are_answered_and_decoded_into_the_truth_log() {
    use ringperf_wire::http::multipart::{FormPart, MultipartBody};
    use ringperf_workload::workload::media::audio::{AudioRngs, AudioShape, noise_wav};
    use ringperf_workload::workload::media::image::ImageRngs;
    use ringperf_workload::workload::media::{ImageFormat, ImageSpec, generate_image};

    let s = server(
        Driver::Auto,
        MockConfig {
            truth_log: true,
            ..Default::default()
        },
    );
    let mut c = Client::connect(&s);
    let image = generate_image(
        &ImageSpec::fixed(37, 23, ImageFormat::Png),
        &mut ImageRngs::new(Some(4)),
    )
    .unwrap();
    let edit = MultipartBody::new(
        &[
            FormPart::text("prompt", "make it blue please"),
            FormPart::text("model", "mock-model"),
            FormPart::text("response_format", "b64_json"),
            FormPart::text("n", "2"),
            FormPart::file("image", "image.png", "image/png", image.bytes.clone()),
        ],
        7,
    );
    let id = Uuid::new_v4();
    post_form(&mut c, "/v1/images/edits", &edit, &id);
    let r = c.read_response(false);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(2));
    let seen = truth_of(&s, &id).media;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].kind, seen[0].format), ("image", "png"));
    assert_eq!((seen[0].width, seen[0].height), (37, 23));
    assert_eq!(seen[0].bytes, image.bytes.len() as u64);

    let shape = AudioShape {
        seconds: 0.25,
        sample_rate: 16_000,
        depth: 16,
        channels: 1,
        frames: 4_000,
    };
    let wav = noise_wav(&shape, &mut AudioRngs::new(Some(5)).data).unwrap();
    let audio = MultipartBody::new(
        &[
            FormPart::file("file", "audio.wav", "audio/wav", wav.into()),
            FormPart::text("model", "mock-model"),
        ],
        8,
    );
    let id = Uuid::new_v4();
    post_form(&mut c, "/v1/audio/transcriptions", &audio, &id);
    let r = c.read_response(false);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["text"], "mock transcript");
    let seen = truth_of(&s, &id).media;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].kind, seen[0].format), ("audio", "wav"));
    assert_eq!(
        (seen[0].sample_rate, seen[0].depth, seen[0].channels),
        (16_000, 16, 1)
    );
    assert_eq!(seen[0].duration_us, 250_000);

    // JSON where a form is expected, and a form cut before its closing delimiter: 400s naming
    // the problem.
    let r = c.call("POST", "/v1/images/edits", "{\"prompt\":\"x\"}", "");
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&r.body).contains("multipart/form-data"));
    let cut = &audio.to_vec()[..audio.len() - 10];
    let raw = format!(
        "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: {}\r\n\
         Content-Length: {}\r\n\r\n",
        audio.content_type(),
        cut.len()
    );
    c.send_raw(raw.as_bytes());
    c.send_raw(cut);
    let r = c.read_response(false);
    assert_eq!(r.status, 400);
    assert!(
        String::from_utf8_lossy(&r.body).contains("ends before its closing delimiter"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}

/// The timer descriptors of this process now (`anon_inode:[timerfd]` in /proc/self/fd).
fn timerfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().contains("timerfd"))
        .count()
}

/// On io_uring every paced stream of a server thread waits on the thread's one timer
/// (`ringperf_io::timer::TimerQueue`), in every mode, not on a timerfd of its connection's: a
/// mock holding N streams holds N sockets and one timer, so it can hold as many streams as it has
/// descriptors (#41: 100,000 streams over mocks of ~12,500 each, under a 20,000-descriptor
/// limit). 64 streams waiting for their first token add no timer descriptor, and each still
/// gets its events at their deadlines, never early.
#[test]
fn paced_streams_share_the_threads_one_timer_on_io_uring() {
    let ttft = Duration::from_millis(600);
    let s = server(
        Driver::Uring,
        MockConfig {
            ttft,
            itl: Duration::from_millis(20),
            truth_log: true,
            output_tokens: OutputLen::Fixed(3),
            ..Default::default()
        },
    );
    let streams = 64;
    let mut clients: Vec<Client> = (0..streams).map(|_| Client::connect(&s)).collect();
    // Every connection accepted and idle (a request on each would otherwise race the count).
    for c in &mut clients {
        let r = c.call("GET", "/v1/models", "", "");
        assert_eq!(r.status, 200);
    }
    let before = timerfds();
    let sent = std::time::Instant::now();
    for c in &mut clients {
        c.send("POST", "/v1/chat/completions", CHAT_STREAM, "");
    }
    std::thread::sleep(ttft / 2);
    let waiting = timerfds();
    assert!(
        sent.elapsed() < ttft,
        "the count was not taken while the streams waited"
    );
    // At most the thread's own timer (made on its start, so normally none at all).
    assert!(
        waiting <= before + 1,
        "{streams} waiting streams took {} timer descriptors",
        waiting - before
    );
    for c in &mut clients {
        let r = c.read_response(false);
        assert_eq!(
            r.sse_data().len(),
            7,
            "role, 3 tokens, finish, usage, [DONE]"
        );
    }
    let truth = s.truth();
    let waited = std::time::Instant::now();
    while truth.len() < streams && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let entries = truth.entries();
    let streamed: Vec<_> = entries.iter().filter(|e| e.stream).collect();
    assert_eq!(streamed.len(), streams);
    let (ttft_ns, itl_ns) = (ttft.as_nanos() as u64, 20_000_000u64);
    for e in streamed {
        assert!(e.completed);
        for (k, &t) in e.event_ns.iter().enumerate() {
            assert!(
                t - e.arrival_ns >= ttft_ns + k as u64 * itl_ns,
                "event {k} early: {e:?}"
            );
        }
    }
}
