//! The dashboard drawn into ratatui's test backend from a recorded sequence of snapshots (the
//! aggregator's live fold of hand-built records): the numbers on screen are the ones computed
//! by hand.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use ringperf_metrics::aggregate::live::LiveStats;
use ringperf_metrics::aggregate::{MetricConfig, record_metrics};
use ringperf_wire::record::{RecordFacts, RequestError};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Record `i` (1-based): sent at `(i−1)·10 ms`, TTFT `i` ms, 5 tokens 2 ms apart.
fn rec(i: u64) -> RecordFacts {
    let start = (i - 1) * 10 * MS;
    let first = start + i * MS;
    RecordFacts {
        intended_ns: start,
        start_ns: start,
        head_ns: Some(start + 1),
        end_ns: first + 8 * MS,
        content_stamps_ns: (0..5).map(|k| first + k * 2 * MS).collect(),
        first_output_stamp_ns: Some(first),
        output_tokens: Some(5),
        ..ringperf_metrics::aggregate::testing::facts()
    }
}

/// The screen as text, one string per row.
fn screen(v: &DashView) -> Vec<String> {
    screen_of(v, 110, 40)
}

/// The screen of a `width` × `height` terminal as text.
fn screen_of(v: &DashView, width: u16, height: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    t.draw(|f| draw(f, v)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

/// One server endpoint's live figures, the same on every screen drawn here.
fn server() -> ServerLive {
    ServerLive {
        endpoint: "http://127.0.0.1:8000/metrics".into(),
        waiting: Some(12.0),
        running: Some(64.0),
        kv_cache_pct: Some(37.5),
        ttft_ms: Some(1234.5),
    }
}

/// One GPU's live figures.
fn gpu() -> GpuLive {
    GpuLive {
        label: "0 NVIDIA H100".into(),
        power_w: Some(412.3),
        utilization_pct: Some(98.0),
        memory_used_gb: Some(71.2),
        temperature_c: Some(66.0),
    }
}

fn has(rows: &[String], needle: &str) -> bool {
    rows.iter().any(|r| r.contains(needle))
}

fn row_with<'a>(rows: &'a [String], needle: &str) -> &'a str {
    rows.iter()
        .find(|r| r.contains(needle))
        .unwrap_or_else(|| panic!("no row with {needle}:\n{}", rows.join("\n")))
}

#[test]
fn a_recorded_sequence_shows_the_hand_computed_figures() {
    let cfg = MetricConfig::new(true, false);
    let mut stats = LiveStats::default();
    let mut frames = Vec::new();
    // Frames after 10, 50 and 100 of 200 requests, each at the time its last record ended.
    for (i, n) in (1..=100u64).zip(1..) {
        let f = rec(i);
        stats.add(&f, &record_metrics(&cfg, &f));
        if [10, 50, 100].contains(&n) {
            frames.push((n, stats.snapshot(f.end_ns, 0)));
        }
    }
    for (n, snap) in frames {
        let v = DashView {
            phase: "profiling".into(),
            total: Some(200),
            elapsed_s: 1.5,
            client: snap,
            ..DashView::default()
        };
        let rows = screen(&v);
        assert!(
            has(
                &rows,
                &format!("profiling {n}/200 requests done, 0 failed, 1.5 s")
            ),
            "{}",
            rows.join("\n")
        );
        // TTFT of records 1..=n is 1..=n ms: p50 = (n+1)/2, p99 at index 0.99·(n−1).
        let p50 = (n as f64 + 1.0) / 2.0;
        let p99 = 1.0 + 0.99 * (n as f64 - 1.0);
        let ttft = row_with(&rows, "TTFT");
        assert!(ttft.contains(&format!("{p50:.2}")), "{ttft}");
        assert!(ttft.contains(&format!("{p99:.2}")), "{ttft}");
        // ITL: 4 gaps of 2 ms; request latency = TTFT + 8 ms.
        assert!(row_with(&rows, "ITL").contains("2.00"));
        assert!(row_with(&rows, "Request latency").contains(&format!("{:.2}", p50 + 8.0)));
        assert!(has(&rows, &format!("latency, last {n} requests")));
        assert!(has(&rows, &format!("output tokens: {}", 5 * n)));
    }
}

#[test]
fn rates_errors_server_and_gpus_are_on_screen() {
    let cfg = MetricConfig::new(true, false);
    let mut stats = LiveStats::default();
    // 3 requests finish in second 0, 7 in second 1 (35 tokens), one 503 in second 1.
    let at = |end: u64| RecordFacts {
        end_ns: end,
        ..rec(1)
    };
    let mut records: Vec<RecordFacts> = (0..3).map(|k| at(100 * MS + k)).collect();
    records.extend((0..7).map(|k| at(S + 100 * MS + k)));
    records.push(RecordFacts {
        error: Some(Box::new(RequestError::new(
            Some(503),
            "Service Unavailable",
            "busy",
        ))),
        output_tokens: None,
        ..at(S + 200 * MS)
    });
    for f in &records {
        stats.add(f, &record_metrics(&cfg, f));
    }
    let v = DashView {
        phase: "profiling".into(),
        duration_s: Some(60.0),
        elapsed_s: 2.5,
        client: stats.snapshot(2 * S + MS, 4),
        server: vec![server()],
        gpus: Some(vec![gpu()]),
        stopping: true,
        ..DashView::default()
    };
    let rows = screen(&v);
    let all = rows.join("\n");
    assert!(
        has(&rows, "profiling 2.5/60 s, 11 requests done, 1 failed"),
        "{all}"
    );
    assert!(has(&rows, "requests/s: 8"), "{all}");
    assert!(has(&rows, "output tokens/s: 35"), "{all}");
    assert!(has(&rows, "errors: 1"), "{all}");
    assert!(row_with(&rows, "503 Service Unavailable").contains('1'));
    assert!(has(&rows, "ring stalls: 4"), "{all}");
    let server = row_with(&rows, "127.0.0.1:8000");
    assert!(!server.contains("http://"), "{server}");
    for x in ["12.0", "64.0", "37.5%", "1,234.50"] {
        assert!(server.contains(x), "{x} in {server}");
    }
    let gpu = row_with(&rows, "NVIDIA H100");
    for x in ["412.3 W", "98.0%", "71.2 GB", "66.0 °C"] {
        assert!(gpu.contains(x), "{x} in {gpu}");
    }
    assert!(has(&rows, "stopping: requests in flight finish"), "{all}");
}

/// In a sweep, the header names the variation running (issue 23).
#[test]
fn a_sweep_variation_is_named_in_the_header() {
    let info = ringperf_metrics::export::VariationInfo {
        index: 1,
        label: "phases.profiling.concurrency=2".into(),
        values: serde_json::Map::new(),
        of: 3,
        trials: 2,
    };
    let rows = screen(&DashView {
        phase: "profiling".into(),
        sweep: Some(info.status(0)),
        ..DashView::default()
    });
    let all = rows.join("\n");
    assert!(
        has(
            &rows,
            "ringperf · variation 2 of 3: phases.profiling.concurrency=2 · trial 1 of 2"
        ),
        "{all}"
    );
    assert!(!has(&screen(&DashView::default()), "variation"));
}

#[test]
fn without_telemetry_there_is_no_gpu_panel_and_nothing_read_is_said() {
    let rows = screen(&DashView {
        phase: "starting".into(),
        ..DashView::default()
    });
    let all = rows.join("\n");
    assert!(!has(&rows, "GPUs"), "{all}");
    assert!(has(&rows, "no /metrics page read"), "{all}");
    assert!(has(&rows, "errors: 0"), "{all}");
    assert!(has(&rows, "q / Ctrl-C: stop gracefully"), "{all}");
}

#[test]
fn endpoints_are_shown_without_scheme_and_metrics_path() {
    assert_eq!(
        short_endpoint("http://10.0.0.5:8000/metrics"),
        "10.0.0.5:8000"
    );
    assert_eq!(short_endpoint("https://h/v2/metrics"), "h/v2");
    assert_eq!(short_endpoint("h:9"), "h:9");
}

#[test]
fn milliseconds_read_as_the_console_prints_them() {
    // The dashboard uses the console's own formatter.
    assert_eq!(ms(0.0), "0.00");
    assert_eq!(ms(1234.5), "1,234.50");
    assert_eq!(ms(999.999), "1,000.00");
    assert_eq!(ms(1_234_567.891), "1,234,567.89");
    assert_eq!(ms(-1500.0), "-1,500.00");
}

/// An 80 × 24 terminal, the smallest usual one: every label whole ("Request la" and "runnin"
/// were cut there), every figure of the server and latency panels on screen.
#[test]
fn at_80_by_24_no_label_is_cut() {
    let cfg = MetricConfig::new(true, false);
    let mut stats = LiveStats::default();
    for i in 1..=20u64 {
        let f = rec(i);
        stats.add(&f, &record_metrics(&cfg, &f));
    }
    let v = DashView {
        phase: "profiling".into(),
        total: Some(200),
        elapsed_s: 1.5,
        client: stats.snapshot(rec(20).end_ns, 0),
        server: vec![server()],
        gpus: Some(vec![gpu()]),
        ..DashView::default()
    };
    let rows = screen_of(&v, 80, 24);
    let all = rows.join("\n");
    for label in [
        "TTFT",
        "ITL",
        "Request latency",
        "p50",
        "p90",
        "p99",
        "waiting",
        "running",
        "KV cache",
        "TTFT ms",
        "127.0.0.1:8000",
        "dispatch lag",
        "ring stalls",
        "GPU",
        "power",
        "memory",
        "temp",
        "412.3 W",
        "66.0 °C",
        "200 requests done",
    ] {
        assert!(has(&rows, label), "{label} whole at 80x24:\n{all}");
    }
    let server = row_with(&rows, "127.0.0.1:8000");
    for x in ["12.0", "64.0", "37.5%", "1,234.50"] {
        assert!(server.contains(x), "{x} in {server}");
    }
}
