//! Measurements of the mock and of the scraper that depend on the machine and its load, so they
//! are not tests: run them alone, optimized, on an idle machine,
//! `cargo bench --bench measure` (all three) or `cargo bench --bench measure -- NAME` (those
//! whose name contains NAME). Each prints its figures; perf/README.md ("Mock and scraper
//! measurements") keeps the last ones.
//!
//! - `mock_pacing`: on io_uring the medians of the mock's TTFT and inter-token gaps, from its
//!   own truth log, are within half a millisecond of the configured delays, and the error does
//!   not accumulate over a stream (the process exits 1 when they are not).
//! - `mock_cpu`: the mock's CPU time per streaming request of 100 tokens, on both drivers.
//! - `scraper_cpu`: the scraper thread's CPU time per scrape of the mock's vLLM page.
//!
//! The prom parser's throughput on the real vLLM page is `prom/parse_scrape_vllm_page` in
//! benches/hot.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ringperf_mock::mock::{Driver, MetricsMode, MockConfig, MockServer, OutputLen};

/// A streaming chat request body.
const CHAT_STREAM: &str = r#"{"model":"mock-model","messages":[{"role":"user","content":"say three words now"}],"stream":true,"stream_options":{"include_usage":true}}"#;

/// A blocking HTTP/1.1 client of the mock, on one kept-alive connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).expect("the mock accepts");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a read timeout");
        Self {
            reader: BufReader::new(s),
        }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("a line");
        assert!(l.ends_with("\r\n"), "line {l:?}");
        l.truncate(l.len() - 2);
        l
    }

    /// Sends `body` to `path` and reads the whole answer; returns its HTTP chunks (none for a
    /// content-length body).
    fn post(&mut self, path: &str, body: &str) -> usize {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.reader
            .get_mut()
            .write_all(req.as_bytes())
            .expect("the request is sent");
        let status = self.line();
        assert!(status.starts_with("HTTP/1.1 200 "), "{status}");
        let (mut chunked, mut length) = (false, 0);
        loop {
            let l = self.line().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            if l == "transfer-encoding: chunked" {
                chunked = true;
            } else if let Some(v) = l.strip_prefix("content-length:") {
                length = v.trim().parse().expect("a length");
            }
        }
        if !chunked {
            let mut body = vec![0; length];
            self.reader.read_exact(&mut body).expect("the body");
            return 0;
        }
        let mut chunks = 0;
        loop {
            let size = usize::from_str_radix(&self.line(), 16).expect("a chunk size");
            let mut payload = vec![0; size];
            self.reader.read_exact(&mut payload).expect("a chunk");
            assert!(self.line().is_empty());
            if size == 0 {
                return chunks;
            }
            chunks += 1;
        }
    }
}

fn mock(driver: Driver, cfg: MockConfig) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        io_driver: driver,
        ..cfg
    })
    .expect("the mock starts")
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The mock's pacing on io_uring (a timerfd per connection): 8 streamed chat requests of 15
/// tokens and one non-streamed completion at TTFT 5 ms, ITL 2 ms, read back from its truth log.
/// Claim: the medians of the TTFT and of the gaps within 0.5 ms of the configured delays, the
/// last token as late as one wake-up (not 14), the non-streamed answer within 1 ms of TTFT +
/// 14 × ITL. monoio's millisecond timer, which the epoll driver still uses, delivered a 2 ms
/// ITL as ~3.1 ms. Returns whether the claim held.
fn mock_pacing() -> bool {
    let (ttft, itl) = (Duration::from_millis(5), Duration::from_millis(2));
    let s = mock(
        Driver::Uring,
        MockConfig {
            ttft,
            itl,
            truth_log: true,
            output_tokens: OutputLen::Fixed(15),
            ..MockConfig::default()
        },
    );
    let mut c = Client::connect(s.addr);
    let requests = 8;
    for _ in 0..requests {
        // Role, 15 tokens, finish, usage, [DONE].
        assert_eq!(c.post("/v1/chat/completions", CHAT_STREAM), 19);
    }
    c.post("/v1/completions", r#"{"prompt":"x"}"#);
    // The mock files a request right after its last write, which the client may read first.
    let truth = s.truth();
    let waited = std::time::Instant::now();
    while truth.len() < requests + 1 {
        assert!(waited.elapsed() < Duration::from_secs(30), "truth log");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (ttft_ns, itl_ns) = (ttft.as_nanos() as u64, itl.as_nanos() as u64);
    let (mut ttfts, mut gaps, mut last, mut whole) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for e in truth.entries() {
        let first = e.event_ns[0] - e.arrival_ns;
        if e.stream {
            ttfts.push(first);
            gaps.extend(e.event_ns.windows(2).map(|w| w[1] - w[0]));
            let due = e.arrival_ns + ttft_ns + 14 * itl_ns;
            last.push(e.event_ns[14].saturating_sub(due));
        } else {
            whole = first;
        }
    }
    let slack_ns = 500_000;
    let (t, g, l) = (median(ttfts), median(gaps), median(last));
    let whole_due = ttft_ns + 14 * itl_ns;
    println!(
        "mock_pacing (io_uring): median TTFT {t} ns (configured {ttft_ns}), median ITL gap {g} ns \
         (configured {itl_ns}), median lateness of token 14 {l} ns, non-streamed answer {whole} \
         ns (due {whole_due})"
    );
    let held = t < ttft_ns + slack_ns
        && g < itl_ns + slack_ns
        && l < slack_ns
        && whole < whole_due + 2 * slack_ns;
    println!(
        "mock_pacing: {}",
        if held {
            "within 0.5 ms"
        } else {
            "NOT within 0.5 ms"
        }
    );
    held
}

/// CPU time of the calling thread (`RUSAGE_THREAD`) or of the process (`RUSAGE_SELF`), ns.
fn cpu_ns(who: libc::c_int) -> u64 {
    // SAFETY: `rusage` is plain data; all-zero is a valid value for `getrusage` to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// On-CPU nanoseconds of the mock's threads (named `mock-*`), from the scheduler's exact
/// per-thread runtime (`/proc/self/task/*/schedstat`), which tick-sampled `getrusage` is not:
/// a thread that wakes on timer ticks is over-charged by tick sampling.
fn mock_threads_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("mock-"))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The mock's CPU cost per streaming request of 100 tokens (104 HTTP chunks), on each driver:
/// with zero delays (events share one write), with a 1 ms ITL (one write per event), and 32
/// concurrent 1 ms-ITL streams (timer wake-ups shared by the streams due together). The mock's
/// CPU time is its threads' by schedstat, and the process's minus the client threads' by
/// getrusage.
fn mock_cpu() {
    for d in [Driver::Uring, Driver::Legacy] {
        for (itl, n) in [(Duration::ZERO, 2000u64), (Duration::from_millis(1), 30)] {
            let cfg = MockConfig {
                itl,
                output_tokens: OutputLen::Fixed(100),
                ..MockConfig::default()
            };
            let s = mock(d, cfg);
            let mut c = Client::connect(s.addr);
            let (p0, t0) = (cpu_ns(libc::RUSAGE_SELF), cpu_ns(libc::RUSAGE_THREAD));
            let m0 = mock_threads_ns();
            for _ in 0..n {
                assert_eq!(c.post("/v1/chat/completions", CHAT_STREAM), 104);
            }
            let exact = mock_threads_ns() - m0;
            let (p1, t1) = (cpu_ns(libc::RUSAGE_SELF), cpu_ns(libc::RUSAGE_THREAD));
            let by_rusage = (p1 - p0).saturating_sub(t1 - t0);
            println!(
                "mock_cpu {d:?} itl={itl:?}: mock {:.1} us/request ({:.2} us/event) by schedstat, \
                 {:.1} us/request by getrusage; client {:.1} us/request",
                exact as f64 / n as f64 / 1e3,
                exact as f64 / (n * 104) as f64 / 1e3,
                by_rusage as f64 / n as f64 / 1e3,
                (t1 - t0) as f64 / n as f64 / 1e3
            );
        }
        let cfg = MockConfig {
            itl: Duration::from_millis(1),
            output_tokens: OutputLen::Fixed(100),
            ..MockConfig::default()
        };
        let s = mock(d, cfg);
        let addr = s.addr;
        let per_conn = 5u64;
        let p0 = cpu_ns(libc::RUSAGE_SELF);
        let m0 = mock_threads_ns();
        let clients: Vec<_> = (0..32)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut c = Client::connect(addr);
                    let t0 = cpu_ns(libc::RUSAGE_THREAD);
                    for _ in 0..per_conn {
                        c.post("/v1/chat/completions", CHAT_STREAM);
                    }
                    cpu_ns(libc::RUSAGE_THREAD) - t0
                })
            })
            .collect();
        let client_ns: u64 = clients
            .into_iter()
            .map(|h| h.join().expect("a client"))
            .sum();
        let exact = mock_threads_ns() - m0;
        let by_rusage = (cpu_ns(libc::RUSAGE_SELF) - p0).saturating_sub(client_ns);
        let n = 32 * per_conn;
        println!(
            "mock_cpu {d:?} itl=1ms x32 streams: mock {:.1} us/request ({:.2} us/event) by \
             schedstat, {:.1} us/request by getrusage",
            exact as f64 / n as f64 / 1e3,
            exact as f64 / (n * 104) as f64 / 1e3,
            by_rusage as f64 / n as f64 / 1e3
        );
    }
}

/// CPU time of the scraper thread per scrape (its schedstat runtime over 5 s of scrapes every
/// 10 ms of the mock's vLLM page).
fn scraper_cpu() {
    use ringperf_engine::scrape::collector::{Role, Scraper, StartOptions};
    use ringperf_engine::scrape::settings::Settings;
    let server = ringperf_mock::mock::start(MockConfig {
        metrics_mode: MetricsMode::Vllm,
        ..MockConfig::default()
    })
    .expect("the mock starts");
    let page = server.metrics_text().len();
    let settings = Settings {
        interval: Duration::from_millis(10),
        flush_period: Duration::ZERO,
        ..Settings::default()
    };
    let mut s = Scraper::start(StartOptions {
        endpoints: vec![format!("http://{}/metrics", server.addr)],
        settings,
        io_driver: ringperf_io::runtime::IoDriver::Auto,
        core: None,
        clock: ringperf_wire::clock::Clock::start(),
        jsonl: None,
        tls: None,
        verbose: true,
        on_page: None,
        role: Role::ServerMetrics,
        phases: ringperf_metrics::export::jsonl::PhaseLayout::default(),
    })
    .expect("the scraper starts")
    .expect("the mock's page is reachable");
    s.phase_start(ringperf_wire::record::Phase::Profiling, 0);
    std::thread::sleep(Duration::from_secs(5));
    s.phase_end(ringperf_wire::record::Phase::Profiling);
    let (c, _) = s.finish();
    let cpu = c.cpu_ns.expect("schedstat readable");
    println!(
        "scraper_cpu: {} scrapes of a {page}-byte page, {:.1} ms CPU in total, {:.1} us CPU per \
         scrape",
        c.scrapes,
        cpu as f64 / 1e6,
        cpu as f64 / 1e3 / c.scrapes.max(1) as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: these take seconds and
    // measure the machine, so they run only when asked for.
    if !args.iter().any(|a| a == "--bench") {
        println!("measure: run with `cargo bench --bench measure` (skipped)");
        return;
    }
    let filter: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let mut held = true;
    if wanted("mock_pacing") {
        held &= mock_pacing();
    }
    if wanted("mock_cpu") {
        mock_cpu();
    }
    if wanted("scraper_cpu") {
        scraper_cpu();
    }
    if !held {
        std::process::exit(1);
    }
}
