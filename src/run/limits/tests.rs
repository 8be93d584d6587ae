use super::*;

fn need(in_flight: u64) -> Needs {
    Needs {
        in_flight,
        flag: "--concurrency",
        fds_per_request: 1,
        reserve: 30,
        destinations: 1,
        workers: 2,
        connection_limit: 2_500,
    }
}

const LINUX_DEFAULT_PORTS: Option<(u64, u64)> = Some((32_768, 60_999));

#[test]
fn descriptors_over_the_limit_refuse_with_the_limit_and_the_fix() {
    let l = Limits {
        nofile: Some((1_024, 1_024)),
        ports: LINUX_DEFAULT_PORTS,
    };
    // 994 sockets + 30 = 1 024: exactly the limit runs; one more does not.
    assert_eq!(judge(&need(994), &l), Ok(vec![]));
    let e = judge(&need(995), &l).unwrap_err();
    for part in [
        "--concurrency 995 needs about 1025 file descriptors",
        "limit of 1024 (RLIMIT_NOFILE",
        "`ulimit -n 1025`",
        "lower --concurrency to at most 994",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    // With the embedded mock each request costs 3: (1 024 − 30) / 3 = 331.
    let mut n = need(332);
    n.fds_per_request = 3;
    let e = judge(&n, &l).unwrap_err();
    assert!(
        e.contains("about 1026 file descriptors") && e.contains("at most 331"),
        "{e}"
    );
    n.in_flight = 331;
    assert!(judge(&n, &l).is_ok());
}

#[test]
fn connections_to_one_destination_over_the_port_range_refuse() {
    let l = Limits {
        nofile: Some((1 << 20, 1 << 20)),
        ports: LINUX_DEFAULT_PORTS,
    };
    // 60 999 − 32 768 + 1 = 28 232 ports per destination.
    assert!(judge(&need(28_232), &l).is_ok());
    let e = judge(&need(28_233), &l).unwrap_err();
    assert!(
        e.contains("28233 connections at once to one server address")
            && e.contains("gives 28232 local ports")
            && e.contains("ip_local_port_range"),
        "{e}"
    );
    // Two addresses share the load round-robin: 56 464 fit, 56 465 do not.
    let mut n = need(56_464);
    n.destinations = 2;
    n.workers = 100;
    assert!(judge(&n, &l).is_ok());
    n.in_flight = 56_465;
    let e = judge(&n, &l).unwrap_err();
    assert!(
        e.contains("each of 2 server addresses") && e.contains("at most 56464"),
        "{e}"
    );
}

#[test]
fn the_workers_connection_caps_only_warn() {
    let l = Limits {
        nofile: None,
        ports: None,
    };
    assert_eq!(judge(&need(5_000), &l), Ok(vec![]));
    let w = judge(&need(5_001), &l).unwrap();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("more than the 5000 connections the 2 workers"),
        "{}",
        w[0]
    );
}

#[test]
fn the_issues_run_is_refused_on_either_limit() {
    // Issue #22: --concurrency 100000 against one server, this machine's limits.
    let l = Limits {
        nofile: Some((20_000, 20_000)),
        ports: LINUX_DEFAULT_PORTS,
    };
    assert!(
        judge(&need(100_000), &l)
            .unwrap_err()
            .contains("RLIMIT_NOFILE")
    );
    let l = Limits {
        nofile: Some((1 << 20, 1 << 20)),
        ..l
    };
    assert!(
        judge(&need(100_000), &l)
            .unwrap_err()
            .contains("ip_local_port_range")
    );
}

#[test]
fn port_ranges_parse_as_the_kernel_writes_them() {
    assert_eq!(parse_port_range("32768\t60999\n"), Some((32_768, 60_999)));
    assert_eq!(parse_port_range("1024 65535"), Some((1_024, 65_535)));
    for bad in ["", "1", "60999 32768", "1 2 3", "a b", "1 70000"] {
        assert_eq!(parse_port_range(bad), None, "{bad:?}");
    }
}

fn config(flags: &str) -> Config {
    let line = format!("ringperf profile -m m -u 127.0.0.1:1 --no-gpu-telemetry {flags}");
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false).expect("resolves")
}

#[test]
fn the_busiest_phase_sets_the_need() {
    let n = super::needs(&config("--concurrency 10 --workers-max 2")).expect("bounded");
    assert_eq!(
        (n.in_flight, n.flag, n.fds_per_request),
        (10, "--concurrency", 1)
    );
    // 24 + 2 per worker + the one scraped /metrics of the one URL.
    assert_eq!((n.reserve, n.destinations, n.workers), (24 + 4 + 1, 1, 2));
    let n = super::needs(&config(
        "--concurrency 10 --warmup-request-count 5 --warmup-concurrency 50",
    ))
    .unwrap();
    assert_eq!((n.in_flight, n.flag), (50, "--warmup-concurrency"));
    // An open loop's cap bounds it; without one nothing does.
    assert_eq!(
        super::needs(&config("--request-rate 5 --concurrency 7"))
            .unwrap()
            .in_flight,
        7
    );
    assert_eq!(super::needs(&config("--request-rate 5")), None);
    // The embedded mock's side of each connection counts too; no scrape without server metrics.
    let n = super::needs(&config(
        "--mock --concurrency 4 --no-server-metrics --workers-max 1",
    ))
    .unwrap();
    assert_eq!((n.fds_per_request, n.reserve), (3, 24 + 2));
}
