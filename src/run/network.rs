//! `--network-latency-automatic` (docs/metrics.md, "Network-adjusted latencies"): TCP connect
//! probes to every server's `host:port` on a thread of their own (never a worker's core), from
//! the profiling phase's start every ping interval until its end, then topped up; each probe a
//! line of `profile_export_network_latency.jsonl`; the pooled mean RTT of the successful ones is
//! what [`ringperf_metrics::aggregate::Accumulator::network_adjusted`] subtracts.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::config::network::NetworkLatency;

/// Successful probes per target the end of profiling tops up to (AIPerf's
/// `AIPERF_NETWORK_LATENCY_MIN_SAMPLES`), in at most twice as many attempts.
const MIN_SAMPLES: usize = 5;
/// One probe's connect timeout (`AIPERF_NETWORK_LATENCY_CONNECT_TIMEOUT`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The whole top-up's budget (`AIPERF_NETWORK_LATENCY_COMPLETE_TOPUP_TIMEOUT`).
const TOPUP_BUDGET: Duration = Duration::from_secs(3);

/// One server, probed.
#[derive(Clone, Debug)]
struct Target {
    /// The first `--url` with this `host:port`.
    url: String,
    host: String,
    port: u16,
    addr: SocketAddr,
}

/// One probe.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Probe {
    /// Wall-clock ns as the probe started.
    pub timestamp_ns: u64,
    /// Index of its target.
    target: usize,
    /// Connect time, ns; `Err((type, message))` when the connect failed.
    pub rtt: Result<u64, (String, String)>,
}

/// The probes and the RTT they give.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    pub probes: Vec<Probe>,
}

impl Measured {
    /// The mean of every successful probe of every target (AIPerf pools them), ns, and how
    /// many there were; `None` without one.
    pub(crate) fn mean_rtt_ns(&self) -> Option<(f64, usize)> {
        let ok: Vec<u64> = self
            .probes
            .iter()
            .filter_map(|p| p.rtt.clone().ok())
            .collect();
        (!ok.is_empty()).then(|| (ok.iter().sum::<u64>() as f64 / ok.len() as f64, ok.len()))
    }
}

enum Msg {
    Start,
    Stop,
}

/// The probing thread.
pub(crate) struct Prober {
    tx: Sender<Msg>,
    thread: JoinHandle<Measured>,
    targets: Vec<Target>,
}

/// Every `host:port` of the run's URLs once, in the order of the URLs.
fn targets(cfg: &Config) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for u in &cfg.urls {
        if !out.iter().any(|t| t.host == u.host && t.port == u.port) {
            out.push(Target {
                url: u.display.clone(),
                host: u.host.clone(),
                port: u.port,
                addr: u.addr,
            });
        }
    }
    out
}

impl Prober {
    /// Starts the thread, which waits for [`Prober::profiling_start`]; `None` unless
    /// `--network-latency-automatic`.
    pub(crate) fn start(cfg: &Config) -> Option<Self> {
        let NetworkLatency::Automatic { interval, .. } = cfg.network_latency else {
            return None;
        };
        let targets = targets(cfg);
        if cfg.verbose {
            let names: Vec<String> = targets
                .iter()
                .map(|t| format!("{}:{}", t.host, t.port))
                .collect();
            eprintln!(
                "ringperf: network latency: {} probe target(s): {}",
                targets.len(),
                names.join(", ")
            );
        }
        let (tx, rx) = mpsc::channel();
        let mine = targets.clone();
        let thread = std::thread::Builder::new()
            .name("net_prober".into())
            .spawn(move || run(&mine, interval, &rx))
            .ok()?;
        Some(Self {
            tx,
            thread,
            targets,
        })
    }

    /// Profiling started: the first probe now, then one every interval.
    pub(crate) fn profiling_start(&self) {
        let _ = self.tx.send(Msg::Start);
    }

    /// Profiling ended: the top-up, then the probes; the JSONL is written into `dir` as
    /// `file` (a failure is a warning).
    pub(crate) fn finish(self, dir: &Path, file: &str) -> Measured {
        let _ = self.tx.send(Msg::Stop);
        let measured = self.thread.join().unwrap_or_default();
        let path = dir.join(file);
        let written = std::fs::File::create(&path).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            for p in &measured.probes {
                serde_json::to_writer(&mut out, &probe_json(p, &self.targets[p.target]))?;
                out.write_all(b"\n")?;
            }
            out.flush()
        });
        if let Err(e) = written {
            eprintln!(
                "ringperf: warning: network latency: cannot write {}: {e}",
                path.display()
            );
        }
        measured
    }
}

/// AIPerf's line: `timestamp_ns`, `target_url`, `target_host`, `target_port`, `probe_type`,
/// then `rtt_ns` and `success`, or `success` and `error`.
fn probe_json(p: &Probe, t: &Target) -> Value {
    let mut o = Map::new();
    o.insert("timestamp_ns".into(), json!(p.timestamp_ns));
    o.insert("target_url".into(), json!(t.url));
    o.insert("target_host".into(), json!(t.host));
    o.insert("target_port".into(), json!(t.port));
    o.insert("probe_type".into(), json!("tcp_connect"));
    match &p.rtt {
        Ok(ns) => {
            o.insert("rtt_ns".into(), json!(ns));
            o.insert("success".into(), json!(true));
        }
        Err((kind, message)) => {
            o.insert("success".into(), json!(false));
            o.insert(
                "error".into(),
                json!({"type": kind, "message": message, "cause_chain": [kind]}),
            );
        }
    }
    Value::Object(o)
}

/// One connect, timed from just before the call to the established connection, then closed.
fn probe(targets: &[Target], target: usize) -> Probe {
    let timestamp_ns = ringperf_wire::clock::wall_now_ns();
    let t0 = Instant::now();
    let rtt = match TcpStream::connect_timeout(&targets[target].addr, CONNECT_TIMEOUT) {
        Ok(s) => {
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            drop(s);
            Ok(ns)
        }
        Err(e) => {
            // Python's names for what AIPerf's probe reports.
            let kind = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "ConnectionRefusedError",
                std::io::ErrorKind::TimedOut => "TimeoutError",
                std::io::ErrorKind::ConnectionReset => "ConnectionResetError",
                _ => "OSError",
            };
            Err((kind.to_owned(), e.to_string()))
        }
    };
    Probe {
        timestamp_ns,
        target,
        rtt,
    }
}

/// The thread: wait for the start, probe every target each interval until the stop, top up.
fn run(targets: &[Target], interval: Duration, rx: &Receiver<Msg>) -> Measured {
    let mut m = Measured::default();
    match rx.recv() {
        Ok(Msg::Start) => {}
        // Stopped (or dropped) before profiling started: nothing to measure.
        _ => return m,
    }
    let origin = Instant::now();
    let mut tick: u32 = 0;
    loop {
        for i in 0..targets.len() {
            m.probes.push(probe(targets, i));
        }
        tick += 1;
        // The next tick on the schedule; ticks a slow probe overran are skipped.
        let mut next = origin + interval * tick;
        while next <= Instant::now() {
            tick += 1;
            next = origin + interval * tick;
        }
        match rx.recv_timeout(next - Instant::now()) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Msg::Start) => {}
        }
    }
    // The top-up: each target to MIN_SAMPLES successes, in at most twice as many attempts,
    // within one budget for all.
    let deadline = Instant::now() + TOPUP_BUDGET;
    for i in 0..targets.len() {
        let mut ok = m
            .probes
            .iter()
            .filter(|p| p.target == i && p.rtt.is_ok())
            .count();
        let mut attempts = 0;
        while ok < MIN_SAMPLES && attempts < 2 * MIN_SAMPLES && Instant::now() < deadline {
            let p = probe(targets, i);
            ok += usize::from(p.rtt.is_ok());
            attempts += 1;
            m.probes.push(p);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(addr: SocketAddr) -> Target {
        Target {
            url: format!("http://{addr}"),
            host: addr.ip().to_string(),
            port: addr.port(),
            addr,
        }
    }

    #[test]
    fn probes_a_listener_then_tops_up_to_five_and_reports_a_refusal() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = target(listener.local_addr().unwrap());
        // A port nobody listens on: bind, note it, close.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            target(l.local_addr().unwrap())
        };
        let targets = vec![open, closed];
        let (tx, rx) = mpsc::channel();
        let mine = targets.clone();
        let h = std::thread::spawn(move || run(&mine, Duration::from_secs(60), &rx));
        tx.send(Msg::Start).unwrap();
        tx.send(Msg::Stop).unwrap();
        let m = h.join().unwrap();
        let of = |i: usize| m.probes.iter().filter(move |p| p.target == i);
        // One scheduled probe each, then the open one topped up to five successes; the closed
        // one tried twice as many times, every try a refusal.
        assert_eq!(of(0).count(), MIN_SAMPLES);
        assert!(of(0).all(|p| p.rtt.is_ok()));
        assert_eq!(of(1).count(), 1 + 2 * MIN_SAMPLES);
        assert!(of(1).all(|p| matches!(&p.rtt, Err((k, _)) if k == "ConnectionRefusedError")));
        let (mean, n) = m.mean_rtt_ns().unwrap();
        assert_eq!(n, MIN_SAMPLES);
        let ok: Vec<u64> = of(0).map(|p| p.rtt.clone().unwrap()).collect();
        assert_eq!(mean, ok.iter().sum::<u64>() as f64 / 5.0);
        let line = probe_json(&m.probes[0], &targets[0]);
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "timestamp_ns",
                "target_url",
                "target_host",
                "target_port",
                "probe_type",
                "rtt_ns",
                "success"
            ]
        );
        let refused = m.probes.iter().find(|p| p.target == 1).unwrap();
        let line = probe_json(refused, &targets[1]);
        assert_eq!(line["success"], false);
        assert_eq!(line["error"]["type"], "ConnectionRefusedError");
        assert_eq!(
            line["error"]["cause_chain"],
            json!(["ConnectionRefusedError"])
        );
        assert!(line.get("rtt_ns").is_none());
    }

    #[test]
    fn probes_keep_the_interval_and_stop_before_start_measures_nothing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let targets = vec![target(listener.local_addr().unwrap())];
        let (tx, rx) = mpsc::channel();
        let mine = targets.clone();
        let h = std::thread::spawn(move || run(&mine, Duration::from_millis(20), &rx));
        tx.send(Msg::Start).unwrap();
        std::thread::sleep(Duration::from_millis(130));
        let stop_ns = ringperf_wire::clock::wall_now_ns();
        tx.send(Msg::Stop).unwrap();
        let m = h.join().unwrap();
        // The probes before the stop are the scheduled ones: probe k starts no earlier than k
        // intervals after the first (a late one never pulls the next ones earlier).
        let stamps: Vec<u64> = m
            .probes
            .iter()
            .map(|p| p.timestamp_ns)
            .filter(|t| *t < stop_ns)
            .collect();
        assert!(!stamps.is_empty());
        for (k, t) in stamps.iter().enumerate() {
            let floor = (k as u64 * 20_000_000).saturating_sub(10_000_000);
            assert!(t - stamps[0] >= floor, "probe {k}: {stamps:?}");
        }
        let (tx, rx) = mpsc::channel();
        let mine = targets.clone();
        let h = std::thread::spawn(move || run(&mine, Duration::from_millis(20), &rx));
        tx.send(Msg::Stop).unwrap();
        assert!(h.join().unwrap().probes.is_empty());
    }
}
