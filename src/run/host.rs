//! What else ran on the host while the client did: `/proc/stat` (every core's busy and steal
//! time), this process's own CPU time and every other process's, read as the workers start and
//! again as they end. The difference is the client-health verdict's [`HostLoad`]: the evidence
//! that names a busy host instead of blaming the client (docs/output-formats.md, "Client
//! health"). Read outside the measured time; where `/proc` cannot be read the verdict goes
//! without it.
//!
//! At the start, `/proc/stat` and this process's own counters are read by the main thread as
//! the workers start ([`Start::take`]); every other process's `/proc/<pid>/stat` (a few hundred
//! files, ~1 ms) is read by a thread of its own at the lowest priority (nice 19), so that on a
//! client pinned to one core it runs when the run's threads wait, not before the first request
//! is written (perf/README, "Seventh look"). The end snapshot waits for it.

use std::collections::HashMap;

use ringperf_metrics::aggregate::health::{HostLoad, OtherProcess};

/// The most CPU-hungry other processes named in the verdict.
const BUSIEST: usize = 3;

/// One core's counters from `/proc/stat`, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CoreTicks {
    /// user + nice + system + irq + softirq: time the core ran something.
    busy: u64,
    /// Time the hypervisor ran another guest while this one wanted the core.
    steal: u64,
}

/// The counters at one instant.
#[derive(Clone, Debug, Default)]
pub(super) struct Snapshot {
    /// When they were read (`CLOCK_MONOTONIC`, ns).
    at_ns: u64,
    /// `cpuN` → its ticks.
    cores: HashMap<usize, CoreTicks>,
    /// This process's user + system ticks.
    own: u64,
    /// Every other process: pid → (command name, user + system ticks).
    others: Others,
}

/// Every other process: pid → (command name, user + system ticks).
type Others = HashMap<u32, (String, u64)>;

/// The snapshot at the workers' start: its `/proc/stat` and own counters read, the other
/// processes' being read by a low-priority thread (see the module's comment).
#[derive(Debug)]
pub(super) struct Start {
    counters: Snapshot,
    /// The thread reading the other processes (`None`: it could not be started, and they were
    /// read at once).
    others: Option<std::thread::JoinHandle<Others>>,
}

impl Start {
    /// Reads `/proc/stat` and this process's counters now and starts the reading of the
    /// others; `None` where `/proc/stat` cannot be read.
    pub(super) fn take() -> Option<Self> {
        let mut counters = Snapshot::counters()?;
        let others = std::thread::Builder::new()
            .name("ringperf-host".into())
            .spawn(|| {
                lowest_priority();
                read_others()
            })
            .ok();
        if others.is_none() {
            counters.others = read_others();
        }
        Some(Self { counters, others })
    }

    /// The whole snapshot, once the other processes have been read (waits for their thread;
    /// one that panicked leaves them out).
    pub(super) fn snapshot(self) -> Snapshot {
        let mut snap = self.counters;
        if let Some(t) = self.others {
            snap.others = t.join().unwrap_or_default();
        }
        snap
    }
}

/// Lowers the calling thread to nice 19, the lowest priority of the normal policy: a thread
/// there gets the core when the run's own threads (nice 0) wait. A refusal (never expected:
/// lowering one's own priority needs no privilege) only leaves the thread at its priority.
fn lowest_priority() {
    // SAFETY: plain integer arguments, no pointers. On Linux, `PRIO_PROCESS` with `who` 0 names
    // the calling thread only (a nice value is per thread under NPTL), which is this helper
    // thread; the call changes nothing but its scheduling weight.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// Every other process's command name and CPU ticks; a process that ends between the listing
/// and its read is skipped.
fn read_others() -> Others {
    let me = std::process::id();
    let mut others = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            if let Some(p) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| parse_pid_stat(&s))
            {
                others.insert(pid, p);
            }
        }
    }
    others
}

impl Snapshot {
    /// Reads `/proc` now; `None` where `/proc/stat` cannot be read.
    pub(super) fn take() -> Option<Self> {
        let mut snap = Self::counters()?;
        snap.others = read_others();
        Some(snap)
    }

    /// `/proc/stat` and this process's own ticks, now (no other process yet).
    fn counters() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cores = parse_proc_stat(&stat);
        let own = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| parse_pid_stat(&s))
            .map_or(0, |(_, ticks)| ticks);
        Some(Self {
            at_ns: ringperf_wire::clock::monotonic_raw_ns(),
            cores,
            own,
            others: HashMap::new(),
        })
    }

    /// What happened between `self` (at the workers' start) and `end`, on the workers' cores
    /// `worker_cores` (empty: none was pinned). `tick_ns`: one clock tick.
    pub(super) fn load_until(
        &self,
        end: &Snapshot,
        worker_cores: &[usize],
        tick_ns: u64,
    ) -> HostLoad {
        let delta = |c: usize| {
            let (a, b) = (self.cores.get(&c), end.cores.get(&c));
            match (a, b) {
                (Some(a), Some(b)) => CoreTicks {
                    busy: b.busy.saturating_sub(a.busy),
                    steal: b.steal.saturating_sub(a.steal),
                },
                _ => CoreTicks::default(),
            }
        };
        let own = end.own.saturating_sub(self.own);
        let all: Vec<usize> = end.cores.keys().copied().collect();
        let host_busy: u64 = all.iter().map(|&c| delta(c).busy).sum();
        let mut cores: Vec<usize> = worker_cores.to_vec();
        cores.sort_unstable();
        cores.dedup();
        let steal_on = if cores.is_empty() { &all } else { &cores };
        let steal: u64 = steal_on.iter().map(|&c| delta(c).steal).sum();
        // Everything the workers' cores ran, less all of this process's time (some of which ran
        // elsewhere): what other processes took there, at least.
        let on_workers = (!cores.is_empty()).then(|| {
            let busy: u64 = cores.iter().map(|&c| delta(c).busy).sum();
            busy.saturating_sub(own) * tick_ns
        });
        let mut busiest: Vec<OtherProcess> = end
            .others
            .iter()
            .filter_map(|(&pid, (name, ticks))| {
                // A process that started during the run counts from zero.
                let before = self.others.get(&pid).map_or(0, |(_, t)| *t);
                let used = ticks.saturating_sub(before);
                (used > 0).then(|| OtherProcess {
                    pid,
                    name: name.clone(),
                    cpu_ns: used * tick_ns,
                })
            })
            .collect();
        busiest.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.pid.cmp(&b.pid)));
        busiest.truncate(BUSIEST);
        HostLoad {
            other_cpu_ns: host_busy.saturating_sub(own) * tick_ns,
            other_cpu_on_worker_cores_ns: on_workers,
            steal_ns: steal * tick_ns,
            span_ns: end.at_ns.saturating_sub(self.at_ns),
            cores: steal_on.len() as u32,
            busiest,
        }
    }
}

/// Nanoseconds per clock tick of `/proc/stat` and `/proc/<pid>/stat`: the kernel reports them
/// in `USER_HZ`, 100 per second on x86-64 and AArch64 whatever the kernel's own tick rate.
pub(super) const TICK_NS: u64 = 10_000_000;

/// Every `cpuN` line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal
/// (guest time is inside user). Lines that do not parse are skipped.
fn parse_proc_stat(text: &str) -> HashMap<usize, CoreTicks> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(core) = fields
            .next()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let v: Vec<u64> = fields.map_while(|f| f.parse().ok()).collect();
        if v.len() < 7 {
            continue;
        }
        let busy = v[0] + v[1] + v[2] + v[5] + v[6];
        out.insert(
            core,
            CoreTicks {
                busy,
                steal: v.get(7).copied().unwrap_or(0),
            },
        );
    }
    out
}

/// `/proc/<pid>/stat`: the command name (between the first `(` and the last `)`, which may hold
/// blanks and parentheses) and utime + stime (fields 14 and 15).
fn parse_pid_stat(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    // After the name: state (field 3) is the first; utime and stime are fields 14 and 15.
    let mut rest = text.get(close + 1..)?.split_ascii_whitespace().skip(11);
    let utime: u64 = rest.next()?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    Some((name, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_A: &str = "cpu  900 10 300 5000 20 5 5 40 0 0\n\
                          cpu0 500 0 100 2500 10 3 2 30 0 0\n\
                          cpu1 400 10 200 2500 10 2 3 10 0 0\n\
                          intr 1 2 3\nctxt 99\n";
    const STAT_B: &str = "cpu  1300 10 400 5100 20 5 5 45 0 0\n\
                          cpu0 850 0 140 2520 10 3 2 34 0 0\n\
                          cpu1 450 10 260 2580 10 2 3 11 0 0\n";

    /// The start snapshot's other processes, read by its low-priority thread, are all there
    /// once it is joined: this process left out, every other one with its name.
    #[test]
    fn a_start_snapshot_has_the_other_processes_once_joined() {
        let Some(start) = Start::take() else {
            return; // no /proc here
        };
        let snap = start.snapshot();
        assert!(!snap.cores.is_empty());
        assert!(!snap.others.contains_key(&std::process::id()));
        let direct = read_others();
        // Processes come and go, but not all of them between two reads.
        assert!(snap.others.keys().any(|pid| direct.contains_key(pid)));
    }

    #[test]
    fn proc_stat_gives_each_cores_busy_and_steal_ticks() {
        let c = parse_proc_stat(STAT_A);
        assert_eq!(c.len(), 2, "the all-cores line is not a core");
        assert_eq!(
            c[&0],
            CoreTicks {
                busy: 500 + 100 + 3 + 2,
                steal: 30
            }
        );
        assert_eq!(c[&1].busy, 400 + 10 + 200 + 2 + 3);
        // An old kernel without a steal column; a garbled line.
        let old = parse_proc_stat("cpu3 1 2 3 4 5 6 7\ncpux 1 2\ncpu4 1 2\n");
        assert_eq!(old.len(), 1);
        assert_eq!(old[&3].steal, 0);
    }

    #[test]
    fn a_pid_stat_name_may_hold_blanks_and_parentheses() {
        let line = "4242 (tmux: server (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 75 0 0 20 0 1 0 100 1000 10";
        assert_eq!(parse_pid_stat(line), Some(("tmux: server (x)".into(), 325)));
        assert_eq!(parse_pid_stat("12 (x"), None);
        assert_eq!(parse_pid_stat("12 (x) S 1 2"), None);
    }

    /// Hand-computed from the two readings: core 0 ran 390 ticks (850+140+3+2 − 605), core 1
    /// 110 ticks; this process used 200 of them; one other process used 300 ticks and one
    /// started during the run (150); the worker's core 0 had 4 ticks of steal.
    #[test]
    fn the_load_between_two_snapshots_is_what_other_processes_used() {
        let a = Snapshot {
            at_ns: 1_000,
            cores: parse_proc_stat(STAT_A),
            own: 1_000,
            others: HashMap::from([(7, ("sh".into(), 50)), (9, ("ended".into(), 10))]),
        };
        let b = Snapshot {
            at_ns: 1_000 + 5 * tick_of_test(),
            cores: parse_proc_stat(STAT_B),
            own: 1_200,
            others: HashMap::from([(7, ("sh".into(), 350)), (8, ("cc1".into(), 150))]),
        };
        let tick = 10_000_000;
        let load = a.load_until(&b, &[0], tick);
        assert_eq!(load.other_cpu_ns, (390 + 110 - 200) * tick);
        assert_eq!(load.other_cpu_on_worker_cores_ns, Some((390 - 200) * tick));
        assert_eq!(load.steal_ns, 4 * tick);
        assert_eq!((load.span_ns, load.cores), (5 * tick, 1));
        assert_eq!(
            load.busiest,
            [
                OtherProcess {
                    pid: 7,
                    name: "sh".into(),
                    cpu_ns: 300 * tick
                },
                OtherProcess {
                    pid: 8,
                    name: "cc1".into(),
                    cpu_ns: 150 * tick
                },
            ]
        );
        // No pinned worker: steal over every core, no per-core figure.
        let loose = a.load_until(&b, &[], tick);
        assert_eq!(loose.other_cpu_on_worker_cores_ns, None);
        assert_eq!(loose.steal_ns, (4 + 1) * tick);
        assert_eq!(loose.cores, 2);
    }

    fn tick_of_test() -> u64 {
        10_000_000
    }

    #[test]
    fn this_process_is_not_among_the_others() {
        let s = Snapshot::take().expect("/proc/stat is readable on Linux");
        assert!(!s.others.contains_key(&std::process::id()));
        assert!(!s.cores.is_empty());
        assert!(s.others.contains_key(&1), "pid 1 is always there");
    }
}
