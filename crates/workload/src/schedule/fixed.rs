//! Fixed-schedule trace replay (`--fixed-schedule`): when each conversation's first turn goes,
//! and when a later turn of a replayed session is due.
//!
//! AIPerf 0.13 (`timing/strategies/fixed_schedule.py`, `dataset/loader/base_trace_loader.py`):
//! records outside `[start_offset, end_offset]` (ms, both inclusive) are dropped; first turns
//! are sorted by timestamp (stable) and sent at `phase_start + (timestamp − zero)`, where `zero`
//! is the earliest kept timestamp with auto-offset, else the start offset, else 0 (timestamps
//! are then absolute offsets from the phase start). A later turn goes at its own timestamp
//! (same mapping), else `delay` after the previous turn's answer, else right after it.
//! `--replay-speedup` divides the normalized offsets and the delays.

use crate::workload::prepared::Prepared;
use ringperf_wire::conversation::AgentParts;

/// The `[start, end]` window of trace timestamps kept for replay (ms, inclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    /// The records were filtered at load, on their recorded timestamps (a trace reshaped by
    /// `--synthesis-*`, whose timestamps are no longer those): every record is kept here, and
    /// `start_ms` only places the zero.
    pub applied_at_load: bool,
}

impl Window {
    /// Whether a record stamped `ts_ms` is replayed.
    pub fn contains(&self, ts_ms: f64) -> bool {
        self.applied_at_load
            || self.start_ms.is_none_or(|s| ts_ms >= s as f64)
                && self.end_ms.is_none_or(|e| ts_ms <= e as f64)
    }
}

/// How trace timestamps and delays map onto the phase clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replay {
    /// The trace timestamp that lands on the phase start.
    pub zero_ms: f64,
    /// Wall-clock compression: 2 replays twice as fast as recorded.
    pub speedup: f64,
}

impl Replay {
    /// Offset from the phase start of a record stamped `ts_ms` (0 if it would be earlier).
    pub fn offset_ns(&self, ts_ms: f64) -> u64 {
        ms_to_ns((ts_ms - self.zero_ms) / self.speedup)
    }

    /// When a later turn of a replayed session is due, in the clock of `phase_start_ns`:
    /// at its own timestamp if it has one, else `delay_ms` (scaled by the speedup) after
    /// `prev_answer_ns` (the end of the previous turn's exchange), else at `prev_answer_ns`.
    pub fn turn_due_ns(
        &self,
        timestamp_ms: Option<f64>,
        delay_ms: Option<f64>,
        phase_start_ns: u64,
        prev_answer_ns: u64,
    ) -> u64 {
        match timestamp_ms {
            Some(ts) => phase_start_ns.saturating_add(self.offset_ns(ts)),
            None => after_delay_ns(prev_answer_ns, delay_ms, self.speedup),
        }
    }
}

/// When a later turn with `delay_ms` (divided by `speedup`) is due: that long after
/// `prev_answer_ns`, the end of the previous turn's exchange, rounded to the nearest ns; at
/// `prev_answer_ns` without a delay (or with a negative or non-finite one). The worker asks this
/// for every later turn that has no timestamp to keep, replayed or not (speedup 1).
pub fn after_delay_ns(prev_answer_ns: u64, delay_ms: Option<f64>, speedup: f64) -> u64 {
    delay_ms.map_or(prev_answer_ns, |d| {
        prev_answer_ns.saturating_add(ms_to_ns(d / speedup))
    })
}

fn ms_to_ns(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6).round().min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// The replay settings of a phase (validated in `config::timing`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedSchedule {
    /// Shift timestamps so the earliest kept one is the phase start.
    pub auto_offset: bool,
    pub window: Window,
    /// `--replay-speedup` (1 = real time).
    pub speedup: f64,
}

/// One conversation's first turn on the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleEntry {
    /// Dataset index of the conversation.
    pub conversation: u32,
    /// When its first turn goes, from the phase start.
    pub offset_ns: u64,
}

/// Why a dataset cannot be replayed on a fixed schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// A conversation's first turn carries no timestamp.
    MissingTimestamp { session: String },
    /// Nothing left to send after the window.
    Empty,
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::MissingTimestamp { session } => write!(
                f,
                "--fixed-schedule: the first turn of conversation `{session}` has no timestamp"
            ),
            ScheduleError::Empty => f.write_str(
                "--fixed-schedule: no conversation has a first-turn timestamp inside the \
                 --fixed-schedule-start-offset / --fixed-schedule-end-offset window",
            ),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl FixedSchedule {
    /// The schedule of first turns, sorted by time (ties keep dataset order), and the mapping
    /// later turns use. `first_turns` holds, per conversation in dataset order, its session id
    /// and its first turn's timestamp (`None` for a conversation without turns, skipped).
    ///
    /// # Errors
    /// A first turn without a timestamp, or an empty schedule.
    pub fn build<'a>(
        &self,
        first_turns: impl IntoIterator<Item = (&'a str, Option<Option<f64>>)>,
    ) -> Result<(Replay, Vec<ScheduleEntry>), ScheduleError> {
        let mut kept: Vec<(f64, u32)> = Vec::new();
        for (i, (session, first)) in first_turns.into_iter().enumerate() {
            let Some(ts) = first else { continue };
            let Some(ts) = ts else {
                return Err(ScheduleError::MissingTimestamp {
                    session: session.to_string(),
                });
            };
            if self.window.contains(ts) {
                kept.push((ts, u32::try_from(i).unwrap_or(u32::MAX)));
            }
        }
        if kept.is_empty() {
            return Err(ScheduleError::Empty);
        }
        kept.sort_by(|a, b| a.0.total_cmp(&b.0));
        let zero_ms = if self.auto_offset {
            kept[0].0
        } else {
            self.window.start_ms.map_or(0.0, |s| s as f64)
        };
        let replay = Replay {
            zero_ms,
            speedup: self.speedup,
        };
        let entries = kept
            .into_iter()
            .map(|(ts, conversation)| ScheduleEntry {
                conversation,
                offset_ns: replay.offset_ns(ts),
            })
            .collect();
        Ok((replay, entries))
    }

    /// [`FixedSchedule::build`] over a prepared dataset.
    ///
    /// # Errors
    /// As [`FixedSchedule::build`].
    pub fn build_for(
        &self,
        dataset: &Prepared,
    ) -> Result<(Replay, Vec<ScheduleEntry>), ScheduleError> {
        // A child conversation (a subagent) is started by its parent's turn, not the schedule.
        self.build(dataset.conversations.iter().map(|c| {
            (
                c.session_id.as_str(),
                c.turns
                    .first()
                    .filter(|_| c.parent().is_none())
                    .map(|t| t.timestamp_ms),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five conversations: first-turn stamps 1000, 1500, 1200, none-turns, 3000 ms.
    fn trace() -> Vec<(&'static str, Option<Option<f64>>)> {
        vec![
            ("a", Some(Some(1000.0))),
            ("b", Some(Some(1500.0))),
            ("c", Some(Some(1200.0))),
            ("empty", None),
            ("d", Some(Some(3000.0))),
        ]
    }

    fn fs(auto: bool, start: Option<u64>, end: Option<u64>, speedup: f64) -> FixedSchedule {
        FixedSchedule {
            auto_offset: auto,
            window: Window {
                start_ms: start,
                end_ms: end,
                applied_at_load: false,
            },
            speedup,
        }
    }

    fn offsets(v: &[ScheduleEntry]) -> Vec<(u32, u64)> {
        v.iter().map(|e| (e.conversation, e.offset_ns)).collect()
    }

    #[test]
    fn absolute_timestamps_without_offsets() {
        let (r, v) = fs(false, None, None, 1.0).build(trace()).unwrap();
        assert_eq!(r.zero_ms, 0.0);
        assert_eq!(
            offsets(&v),
            vec![
                (0, 1_000_000_000),
                (2, 1_200_000_000),
                (1, 1_500_000_000),
                (4, 3_000_000_000)
            ]
        );
    }

    #[test]
    fn auto_offset_starts_at_the_first_timestamp() {
        let (r, v) = fs(true, None, None, 1.0).build(trace()).unwrap();
        assert_eq!(r.zero_ms, 1000.0);
        assert_eq!(
            offsets(&v),
            vec![
                (0, 0),
                (2, 200_000_000),
                (1, 500_000_000),
                (4, 2_000_000_000)
            ]
        );
    }

    #[test]
    fn start_and_end_offsets_are_inclusive_and_start_is_zero() {
        let (r, v) = fs(false, Some(1200), Some(1500), 1.0)
            .build(trace())
            .unwrap();
        assert_eq!(r.zero_ms, 1200.0);
        assert_eq!(offsets(&v), vec![(2, 0), (1, 300_000_000)]);
        // End only: absolute offsets, 3000 dropped.
        let (_, v) = fs(false, None, Some(1500), 1.0).build(trace()).unwrap();
        assert_eq!(
            offsets(&v),
            vec![(0, 1_000_000_000), (2, 1_200_000_000), (1, 1_500_000_000)]
        );
        // Auto-offset with an end: zero is the first kept stamp.
        let (_, v) = fs(true, None, Some(1200), 1.0).build(trace()).unwrap();
        assert_eq!(offsets(&v), vec![(0, 0), (2, 200_000_000)]);
    }

    #[test]
    fn speedup_divides_normalized_offsets_and_delays() {
        let (r, v) = fs(true, None, None, 4.0).build(trace()).unwrap();
        assert_eq!(
            offsets(&v),
            vec![(0, 0), (2, 50_000_000), (1, 125_000_000), (4, 500_000_000)]
        );
        // Later turns: own stamp 1800 ms → (1800−1000)/4 = 200 ms after the phase start.
        assert_eq!(
            r.turn_due_ns(Some(1800.0), Some(10.0), 7, 99),
            7 + 200_000_000
        );
        // A 1 s delay at 4× is 250 ms after the previous answer.
        assert_eq!(
            r.turn_due_ns(None, Some(1000.0), 7, 5_000),
            5_000 + 250_000_000
        );
        // Neither: right after the previous answer.
        assert_eq!(r.turn_due_ns(None, None, 7, 5_000), 5_000);
    }

    #[test]
    fn a_delay_rounds_to_the_nearest_ns_and_saturates() {
        // 1.5 ns rounds up, 1.4 ns down; at 2× a 3 ns delay is 1.5 ns, rounded up.
        assert_eq!(after_delay_ns(10, Some(0.000_001_5), 1.0), 12);
        assert_eq!(after_delay_ns(10, Some(0.000_001_4), 1.0), 11);
        assert_eq!(after_delay_ns(10, Some(0.000_003), 2.0), 12);
        assert_eq!(after_delay_ns(10, Some(30.0), 1.0), 30_000_010);
        // No delay, a negative one, or a non-finite one: at the answer.
        for d in [None, Some(-5.0), Some(f64::NAN), Some(f64::INFINITY)] {
            assert_eq!(after_delay_ns(10, d, 1.0), 10, "{d:?}");
        }
        assert_eq!(after_delay_ns(u64::MAX - 1, Some(1.0), 1.0), u64::MAX);
    }

    #[test]
    fn ties_keep_dataset_order_and_errors_are_named() {
        let t = vec![("x", Some(Some(5.0))), ("y", Some(Some(5.0)))];
        let (_, v) = fs(true, None, None, 1.0).build(t).unwrap();
        assert_eq!(offsets(&v), vec![(0, 0), (1, 0)]);
        let t = vec![("x", Some(Some(5.0))), ("y", Some(None))];
        let e = fs(true, None, None, 1.0).build(t).unwrap_err();
        assert_eq!(
            e,
            ScheduleError::MissingTimestamp {
                session: "y".into()
            }
        );
        assert!(e.to_string().contains("`y`"));
        let e = fs(false, Some(4000), None, 1.0).build(trace()).unwrap_err();
        assert_eq!(e, ScheduleError::Empty);
    }

    #[test]
    fn window_bounds() {
        let w = Window {
            start_ms: Some(10),
            end_ms: Some(20),
            applied_at_load: false,
        };
        assert!(w.contains(10.0) && w.contains(20.0) && w.contains(15.5));
        assert!(!w.contains(9.999) && !w.contains(20.001));
        assert!(Window::default().contains(-1.0));
        // Filtered at load: every record stays; the start still places the zero.
        let loaded = Window {
            applied_at_load: true,
            ..w
        };
        assert!(loaded.contains(9.999) && loaded.contains(1e9));
        let fs = FixedSchedule {
            auto_offset: false,
            window: loaded,
            speedup: 1.0,
        };
        let (replay, entries) = fs
            .build([("a", Some(Some(5.0))), ("b", Some(Some(30.0)))])
            .unwrap();
        assert_eq!(replay.zero_ms, 10.0);
        assert_eq!(entries.len(), 2);
    }
}
