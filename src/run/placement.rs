//! Where the client's own threads go: worker `i` is pinned to `cores[i % cores.len()]`
//! ([`Workers::spawn`](ringperf_engine::worker::Workers::spawn)); the aggregator takes a core no worker
//! uses, when there is one, so it does not preempt a worker (#13 item 11).

/// The core the aggregator is pinned to: the highest of `cores` (the process's affinity set, in
/// the order the workers take them) that none of the `workers` workers takes. `None` when the
/// workers take every core (the aggregator then floats, as the scheduler places it).
pub(crate) fn aggregator_core(cores: &[usize], workers: usize) -> Option<usize> {
    if workers >= cores.len() {
        return None;
    }
    cores[workers..].iter().copied().max()
}

/// The workers' pinning in words: `pinned to cores 0, 1`, `pinned to core 3`, `unpinned`, or
/// both parts when some could not be pinned (`pinned to core 0, 1 unpinned`).
pub(crate) fn describe_pinning(pinned: &[Option<usize>]) -> String {
    let cores: Vec<String> = pinned.iter().flatten().map(ToString::to_string).collect();
    let loose = pinned.iter().filter(|c| c.is_none()).count();
    let pinned_part = match cores.len() {
        0 => None,
        1 => Some(format!("pinned to core {}", cores[0])),
        _ => Some(format!("pinned to cores {}", cores.join(", "))),
    };
    match (pinned_part, loose) {
        (Some(p), 0) => p,
        (None, _) => "unpinned".into(),
        (Some(p), n) => format!("{p}, {n} unpinned"),
    }
}

#[cfg(test)]
mod tests {
    use super::{aggregator_core, describe_pinning};

    #[test]
    fn pinning_reads_as_words_not_options() {
        assert_eq!(
            describe_pinning(&[Some(0), Some(1)]),
            "pinned to cores 0, 1"
        );
        assert_eq!(describe_pinning(&[Some(3)]), "pinned to core 3");
        assert_eq!(describe_pinning(&[None, None]), "unpinned");
        assert_eq!(
            describe_pinning(&[Some(0), None]),
            "pinned to core 0, 1 unpinned"
        );
    }

    #[test]
    fn the_aggregator_takes_the_highest_core_no_worker_uses() {
        // cores - 1 workers on 4 cores: workers on 0, 1, 2; the aggregator on 3.
        assert_eq!(aggregator_core(&[0, 1, 2, 3], 3), Some(3));
        // One worker on a 2-core affinity set (`taskset -c 2,5`): worker on 2, aggregator on 5.
        assert_eq!(aggregator_core(&[2, 5], 1), Some(5));
        // Two free cores: the highest, the one a server-metrics scraper also prefers.
        assert_eq!(aggregator_core(&[0, 1, 2, 3], 2), Some(3));
    }

    #[test]
    fn no_free_core_leaves_the_aggregator_unpinned() {
        assert_eq!(aggregator_core(&[0, 1], 2), None);
        // More workers than cores (they wrap around): still none free.
        assert_eq!(aggregator_core(&[0, 1], 5), None);
        // Affinity unknown (empty list): nothing to pin to.
        assert_eq!(aggregator_core(&[], 1), None);
        // A one-core client (`taskset -c 1`, the perf harness's default): shared, unpinned.
        assert_eq!(aggregator_core(&[1], 1), None);
    }
}
