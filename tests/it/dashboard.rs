//! The dashboard on a real terminal: the binary runs inside a tmux pane (its stdout a terminal)
//! against the embedded mock; the test reads the screen tmux holds, presses `q`, and checks the
//! run stopped gracefully with its artifacts written. Skipped, with a message, where tmux is not
//! installed (`.ci/run` installs it); under `CI=true` a missing tmux fails the test.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "dash", "-S", "-200"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `pred` holds (at most `limit`), returning the last screen.
    fn wait_for(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return Ok(s);
            }
            if start.elapsed() > limit {
                return Err(s);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// The number before `/300 requests done` in the header, if shown.
fn done_count(screen: &str) -> Option<u64> {
    let at = screen.find("/300 requests done")?;
    let digits: String = screen[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

#[test]
#[cfg_attr(missing_tool_tmux, ignore = "tmux is not on PATH (docs/testing.md)")]
fn the_dashboard_draws_the_run_and_q_stops_it_gracefully() {
    if !common::require_tool(
        "tmux",
        common::tool_runs("tmux", "-V"),
        "SKIPPED: tmux is not installed (apt-get install tmux); the dashboard test needs a terminal",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let exit_file = dir.path().join("exit");
    let tmux = Tmux {
        socket: format!("ringperf-dash-{}", std::process::id()),
    };
    // 300 requests of 32 tokens 10 ms apart at concurrency 4: ~25 s if never stopped.
    let run = format!(
        "{} profile --mock --streaming --concurrency 4 --request-count 300 \
         --mock-ttft-ms 5 --mock-itl-ms 10 --mock-output-tokens 32 --ui dashboard \
         --artifact-dir {} 2>/dev/null; echo $? > {}; sleep 30",
        env!("CARGO_BIN_EXE_ringperf"),
        art.display(),
        exit_file.display()
    );
    let started = tmux
        .cmd()
        .args(["new-session", "-d", "-s", "dash", "-x", "110", "-y", "40"])
        .arg(&run)
        .status()
        .expect("tmux new-session");
    assert!(started.success());

    // The screen shows the run going: requests done, live TTFT and ITL, the rate.
    let screen = tmux
        .wait_for(Duration::from_secs(60), |s| {
            done_count(s).is_some_and(|n| n >= 8) && s.contains("requests/s: ")
        })
        .unwrap_or_else(|s| panic!("the dashboard never showed progress:\n{s}"));
    for panel in [
        "profiling ",
        "TTFT",
        "ITL",
        "Request latency",
        "dispatch lag p50",
        "errors: 0",
        "q / Ctrl-C: stop gracefully",
    ] {
        assert!(screen.contains(panel), "{panel} on screen:\n{screen}");
    }
    // The server panel reads the mock's /metrics page: a row for its address with the KV-cache
    // use in percent.
    let screen = tmux
        .wait_for(Duration::from_secs(30), |s| {
            s.lines()
                .any(|l| l.contains("127.0.0.1:") && l.contains('%'))
        })
        .unwrap_or_else(|s| panic!("the server panel never showed the mock's page:\n{s}"));
    // ITL is the mock's 10 ms pacing: the p50 (the row's first figure) is within 0.5 ms of it
    // (a late event leaves the gap after it short, so the median may sit just under 10).
    let itl = screen
        .lines()
        .find(|l| l.contains("ITL"))
        .unwrap_or_default();
    let p50 = itl
        .split(|c: char| c.is_whitespace() || c == '│')
        .find_map(|w| w.parse::<f64>().ok());
    assert!(
        p50.is_some_and(|v| (v - 10.0).abs() <= 0.5),
        "ITL p50 about 10 ms: {itl}"
    );

    // q stops the run as Ctrl-C would without a dashboard.
    let sent = tmux
        .cmd()
        .args(["send-keys", "-t", "dash", "q"])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !exit_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let code = std::fs::read_to_string(&exit_file).expect("the run ended after q");
    assert_eq!(code.trim(), "130", "cancelled runs exit 130");
    let screen = tmux.screen();
    assert!(
        screen.contains("Benchmark Duration:") && screen.contains("cancelled early"),
        "the console comes back with the tables:\n{screen}"
    );
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Path::new(&art).join("profile_export_aiperf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["was_cancelled"], true);
    let n = summary["request_count"]["avg"].as_f64().unwrap();
    assert!((8.0..300.0).contains(&n), "stopped part way: {n}");
}
