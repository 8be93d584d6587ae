//! The run's own account of its threads' CPU time (`ringperf.threads`) and the client-health
//! verdict drawn from it and from the profiling summary (`ringperf_metrics::aggregate::health`).

use ringperf_engine::worker::WorkerCpu;
use ringperf_metrics::aggregate::Summary;
use ringperf_metrics::aggregate::health::{self, ClientHealth, HostLoad, Limits, Observed};
use ringperf_metrics::export::ThreadCpu;

/// Every thread of the run with its CPU time: `main` (read now, as the summary is written),
/// `aggregator`, `scraper` (when one ran) and `worker_<i>` with its busy fraction.
pub(super) fn threads(
    main_cpu_ns: u64,
    aggregator_cpu_ns: u64,
    scraper_cpu_ns: Option<u64>,
    workers: &[WorkerCpu],
) -> Vec<ThreadCpu> {
    let plain = |name: &str, cpu_ns| ThreadCpu {
        name: name.into(),
        cpu_ns,
        busy_fraction: None,
        naps: None,
        warm_pool: None,
        idle_wakes: None,
    };
    let mut out = vec![
        plain("main", main_cpu_ns),
        plain("aggregator", aggregator_cpu_ns),
    ];
    out.extend(scraper_cpu_ns.map(|ns| plain("scraper", ns)));
    out.extend(workers.iter().enumerate().map(|(i, w)| ThreadCpu {
        name: format!("worker_{i}"),
        cpu_ns: w.cpu_ns,
        busy_fraction: Some(w.busy_fraction()),
        naps: w.naps,
        warm_pool: (w.warm_opened + w.warm_failed > 0).then_some(
            ringperf_metrics::export::WarmPool {
                opened: w.warm_opened,
                failed: w.warm_failed,
            },
        ),
        idle_wakes: Some(w.idle_wakes),
    }));
    out
}

/// Where the workers ran: whether the embedded mock shared their cores, how long they waited
/// for a CPU in all (`None`: not known) and what else ran on the host.
#[derive(Clone, Debug, Default)]
pub(super) struct Cores {
    pub shared_with_mock: bool,
    pub run_queue_wait_ns: Option<u64>,
    pub host: Option<HostLoad>,
}

impl Cores {
    /// The run's: the embedded mock served it when `embedded_mock`; the workers' own waits;
    /// the host's load over the run.
    pub(super) fn of(embedded_mock: bool, workers: &[WorkerCpu], host: Option<HostLoad>) -> Self {
        Self {
            shared_with_mock: embedded_mock,
            run_queue_wait_ns: workers.iter().map(|w| w.run_queue_ns).sum(),
            host,
        }
    }
}

/// The verdict over the profiling phase: its dispatch lag, its receive lag (kernel stamps), the
/// busiest worker, the ring stalls, connects that ran out of descriptors and requests that
/// waited at the connection limit (`(waits, limit)`), against `--max-client-lag-us`
/// (`max_client_lag_ns`) or the defaults; a lag the shared cores account for is said apart.
pub(super) fn verdict(
    summary: &Summary,
    threads: &[ThreadCpu],
    ring_stalls: u64,
    descriptor_waits: u64,
    connection_waits: (u64, usize),
    max_client_lag_ns: Option<u64>,
    cores: Cores,
) -> ClientHealth {
    let busiest_worker = threads
        .iter()
        .filter_map(|t| t.busy_fraction.map(|b| (t.name.clone(), b)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let observed = Observed {
        dispatch_lag: summary.dispatch_lag.clone(),
        // Measured with kernel receive stamps; `None` with user-space stamps.
        receive_lag: summary.receive_lag.clone(),
        busiest_worker,
        ring_stalls,
        descriptor_waits: (descriptor_waits > 0).then(|| health::DescriptorWaits {
            waits: descriptor_waits,
            // The soft limit, already raised to the hard one at start (a no-op now).
            limit: ringperf_io::fdlimit::raise_nofile()
                .ok()
                .map(|(soft, _)| soft),
        }),
        connection_waits: (connection_waits.0 > 0).then_some(health::ConnectionWaits {
            waits: connection_waits.0,
            limit: connection_waits.1 as u64,
        }),
        shares_cores_with_mock: cores.shared_with_mock,
        run_queue_wait_ns: cores.run_queue_wait_ns,
        host: cores.host,
    };
    health::judge(observed, Limits::new(max_client_lag_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_named_and_workers_carry_their_busy_fraction() {
        let workers = [
            WorkerCpu {
                cpu_ns: 25,
                wall_ns: 100,
                naps: None,
                ..WorkerCpu::default()
            },
            WorkerCpu {
                cpu_ns: 90,
                wall_ns: 100,
                naps: None,
                ..WorkerCpu::default()
            },
        ];
        let t = threads(7, 8, None, &workers);
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["main", "aggregator", "worker_0", "worker_1"]);
        assert_eq!(t[2].busy_fraction, Some(0.25));
        assert_eq!(t[0].busy_fraction, None);
        let with_scraper = threads(7, 8, Some(9), &workers);
        assert_eq!(with_scraper[2].name, "scraper");
        assert_eq!(with_scraper[2].cpu_ns, 9);
    }

    #[test]
    fn the_busiest_worker_is_judged() {
        let workers = [
            WorkerCpu {
                cpu_ns: 20,
                wall_ns: 100,
                naps: None,
                ..WorkerCpu::default()
            },
            WorkerCpu {
                cpu_ns: 99,
                wall_ns: 100,
                naps: None,
                ..WorkerCpu::default()
            },
        ];
        let t = threads(1, 1, None, &workers);
        let summary = Summary {
            results: Vec::new(),
            error_summary: Vec::new(),
            dispatch_lag: None,
            receive_lag: None,
            kernel_rtt: None,
            spec_decode_histogram: Vec::new(),
            skipped_context_overflows: 0,
        };
        let h = verdict(&summary, &t, 0, 0, (0, 2_500), None, Cores::default());
        assert_eq!(h.observed.busiest_worker, Some(("worker_1".into(), 0.99)));
        assert!(!h.kept_up && !h.fails_run());
        assert!(verdict(&summary, &t, 0, 0, (0, 2_500), Some(1), Cores::default()).fails_run());
    }
}
