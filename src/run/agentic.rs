//! Agentic replay's lanes for a run (docs/timing.md, "Agentic replay"): built once, when the
//! dataset is ready, for both its phases (the warmup primes each lane's sessions at `t*`, the
//! profiling phase resumes them there), and split over the workers.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ringperf_engine::worker::{Accel, AgenticLane, AgenticStream, AgenticWork, Handoff};
use ringperf_wire::conversation::AgentParts;
use ringperf_workload::schedule::TemplatePicker;
use ringperf_workload::schedule::agentic::{self, Bounds, Trajectories};
use ringperf_workload::workload::cache_bust::{Buster, CacheBust, Marker};

use super::error::{RunError, SetupKind};
use crate::config::timing::{Agentic, Mode};
use crate::config::{Config, Load};

/// The lanes of a run and what both phases share about them.
#[derive(Debug)]
pub(super) struct AgenticRun {
    pub settings: Agentic,
    pub trajectories: Trajectories,
    /// Each stream's correlation id, by lane then stream: the same in warmup and profiling.
    pub ids: Vec<Vec<uuid::Uuid>>,
    /// The sampler's draws taken; lanes draw their next roots from here on.
    pub draws: Arc<AtomicU64>,
    /// `--cache-bust`: each lane's first tree's marker, minted once for both phases.
    markers: std::sync::OnceLock<Vec<Option<Marker>>>,
    /// `--agentic-cache-warmup-duration`: the warmup's accelerated stage, whose handoff the
    /// profiling phase resumes from.
    accel: std::sync::OnceLock<Arc<Accel>>,
}

/// The run's lanes when a profiling phase is agentic replay: AIPerf's trajectories for the
/// dataset, the concurrency and the seed, or its error (no trace to resume, or more lanes than
/// traces when the run may not repeat them).
pub(super) fn build(
    cfg: &Config,
    dataset: &ringperf_workload::workload::Prepared,
) -> Result<Option<AgenticRun>, RunError> {
    // The first profiling phase's lanes, or a later one's that replays them (a config file's
    // `timing_mode: agentic_replay` there): AIPerf sizes them by the first's concurrency.
    let replayed = std::iter::once(&cfg.profiling)
        .chain(cfg.phases_after.iter().map(|p| &p.config))
        .find_map(|p| match p.timing.mode {
            Mode::Agentic(a) => Some(a),
            _ => None,
        });
    let (Some(settings), Load::Concurrency(c)) = (replayed, cfg.profiling.load) else {
        return Ok(None);
    };
    let fail = |e: agentic::TrajectoryError| RunError::new(SetupKind::Workload, e.to_string());
    let p = &cfg.profiling;
    agentic::check_wrap(
        dataset.root_count(),
        c,
        &Bounds {
            sessions: p.sessions,
            requests: p.request_count,
            duration: p.duration.is_some(),
            wrap_allowed: cfg.input.allow_dataset_wrap
                || cfg.random_prompt.cache_bust != CacheBust::None,
        },
    )
    .map_err(fail)?;
    let sampling = cfg.input.sampling.unwrap_or(dataset.default_sampling);
    let mut picker = TemplatePicker::with_sampling(dataset.root_count(), cfg.seed, sampling);
    let t = agentic::build(dataset, &mut picker, c, settings.range, cfg.seed).map_err(fail)?;
    let ids = t
        .lanes
        .iter()
        .map(|l| l.streams.iter().map(|_| uuid::Uuid::new_v4()).collect())
        .collect();
    Ok(Some(AgenticRun {
        settings,
        draws: Arc::new(AtomicU64::new(t.draws)),
        trajectories: t,
        ids,
        markers: std::sync::OnceLock::new(),
        accel: std::sync::OnceLock::new(),
    }))
}

impl AgenticRun {
    /// What the run log says about the lanes (AIPerf's trajectory summary).
    pub fn summary(&self, dataset: &ringperf_workload::workload::Prepared) -> Vec<String> {
        let t = &self.trajectories;
        let mut out = vec![format!(
            "agentic replay: {} trajectories from {} traces, resumed between {:.2} and {:.2} of \
             each trace's span",
            t.lanes.len(),
            t.pool,
            self.settings.range.min,
            self.settings.range.max
        )];
        for (i, lane) in t.lanes.iter().enumerate() {
            let root = &dataset.conversations[lane.root as usize];
            let next = lane
                .streams
                .iter()
                .find(|s| s.branch.is_none())
                .map_or("done".to_string(), |s| s.next.to_string());
            let at = lane
                .t_star_ms
                .map_or("no timestamps".to_string(), |t| format!("t*={t:.3} ms"));
            let ready = lane.streams.iter().filter(|s| !s.waiting).count();
            out.push(format!(
                "  lane={i:02}  {at}  root_next={next}/{}  live={} ready={ready}  trace_id={}",
                root.turns.len(),
                lane.streams.len(),
                root.session_id
            ));
        }
        out
    }

    /// The work of each of `workers` workers in the warmup (`warm`) or the profiling phase
    /// (starting at run-clock `start_ns`): lane `i` goes to worker `i mod workers`.
    pub fn split(
        &self,
        dataset: &ringperf_workload::workload::Prepared,
        buster: Option<&Buster>,
        workers: usize,
        (warm, start_ns): (bool, u64),
    ) -> Vec<Arc<AgenticWork>> {
        let s = &self.settings;
        let lanes = &self.trajectories.lanes;
        let markers = self.markers.get_or_init(|| {
            lanes
                .iter()
                .map(|l| {
                    buster.and_then(|b| {
                        b.session_marker(&dataset.conversations[l.root as usize].session_id)
                    })
                })
                .collect()
        });
        let w = workers.max(1);
        let mut per: Vec<Vec<AgenticLane>> = vec![Vec::new(); w];
        let deal = |all: Vec<AgenticLane>| {
            let mut per: Vec<Vec<AgenticLane>> = vec![Vec::new(); w];
            for (l, lane) in all.into_iter().enumerate() {
                per[l % w].push(lane);
            }
            per
        };
        let resumed = self.resumed(dataset, markers);
        let mut resume: Vec<Vec<AgenticLane>> = vec![Vec::new(); w];
        let mut accel = None;
        if warm {
            let schedule = agentic::warm_schedule(dataset, lanes, s.burst, s.idle_cap_ms);
            let priming = schedule.len() as u64;
            let mut by_lane: Vec<Vec<AgenticStream>> = vec![Vec::new(); lanes.len()];
            for (l, k, at) in schedule {
                let stream = &lanes[l].streams[k];
                by_lane[l].push(AgenticStream {
                    conversation: stream.conversation,
                    turn: stream.warm_turn().unwrap_or(0),
                    at_ns: Some(ns(at)),
                    branch: stream.branch,
                    id: self.ids[l][k],
                    marker: markers[l],
                });
            }
            per = deal(
                (by_lane.into_iter().enumerate())
                    .map(|(l, streams)| AgenticLane {
                        index: l as u32,
                        root: lanes[l].root,
                        ended: Vec::new(),
                        streams,
                    })
                    .collect(),
            );
            if let Some(d) = s.cache_warmup {
                let a = self
                    .accel
                    .get_or_init(|| Arc::new(Accel::new(d, s.warmup_grace, priming, lanes.len())));
                accel = Some(a.clone());
                resume = deal(resumed);
            }
        } else {
            let handoff = (self.accel.get())
                .and_then(|a| a.handoff.lock().ok().map(|h| h.clone()))
                .unwrap_or_default();
            let all = resumed
                .into_iter()
                .map(|lane| match handoff.get(lane.index as usize) {
                    Some(Some(h)) => self.handed_off(dataset, lane.index, h, start_ns),
                    _ => lane,
                })
                .collect();
            per = deal(all);
        }
        per.into_iter()
            .zip(resume)
            .map(|(lanes, resume)| {
                Arc::new(AgenticWork {
                    warm,
                    lanes,
                    draws: self.draws.clone(),
                    accel: accel.clone(),
                    resume,
                })
            })
            .collect()
    }

    /// The lanes as profiling resumes them at `t*`.
    fn resumed(
        &self,
        dataset: &ringperf_workload::workload::Prepared,
        markers: &[Option<Marker>],
    ) -> Vec<AgenticLane> {
        let s = &self.settings;
        (self.trajectories.lanes.iter().enumerate())
            .map(|(l, lane)| {
                let offsets = agentic::profile_offsets(lane, s.burst, s.idle_cap_ms);
                let streams = (lane.streams.iter().zip(offsets).enumerate())
                    .map(|(k, (stream, at))| AgenticStream {
                        conversation: stream.conversation,
                        turn: stream.next,
                        at_ns: at.map(ns),
                        branch: stream.branch,
                        id: self.ids[l][k],
                        marker: markers[l],
                    })
                    .collect();
                AgenticLane {
                    index: l as u32,
                    root: lane.root,
                    ended: ended_before(dataset, lane.root, lane.t_star_ms),
                    streams,
                }
            })
            .collect()
    }

    /// Lane `index` as the accelerated cache warmup left it, for a profiling phase starting at
    /// run-clock `start_ns`: each session at its next turn, after what is left of that turn's
    /// recorded delay since its last answer (AIPerf's residual delay; capped by
    /// `--trace-idle-gap-cap-seconds`), a session that sent nothing yet at once.
    fn handed_off(
        &self,
        dataset: &ringperf_workload::workload::Prepared,
        index: u32,
        h: &Handoff,
        start_ns: u64,
    ) -> AgenticLane {
        let cap = self.settings.idle_cap_ms;
        let streams = (h.streams.iter())
            .map(|st| {
                let delay_ms = (dataset.conversations[st.conversation as usize].turns)
                    .get(st.turn as usize)
                    .and_then(|t| t.delay_ms)
                    .unwrap_or(0.0)
                    .max(0.0);
                let residual_ms = if st.last_end_ns == 0 {
                    0.0
                } else {
                    let waited = start_ns.saturating_sub(st.last_end_ns) as f64 / 1e6;
                    residual_ms(delay_ms, waited, cap)
                };
                AgenticStream {
                    conversation: st.conversation,
                    turn: st.turn,
                    at_ns: Some(ns(residual_ms)),
                    branch: st.branch,
                    id: st.id,
                    marker: st.marker,
                }
            })
            .collect();
        AgenticLane {
            index,
            root: h.root,
            ended: h.ended.clone(),
            streams,
        }
    }
}

/// What is left of a turn's recorded delay `delay_ms` once `waited_ms` have passed since the
/// answer before it, never below 0 and at most `cap_ms` (AIPerf's residual delay).
fn residual_ms(delay_ms: f64, waited_ms: f64, cap_ms: Option<f64>) -> f64 {
    let left = (delay_ms - waited_ms).max(0.0);
    cap_ms.map_or(left, |c| left.min(c))
}

/// Milliseconds as nanoseconds (never below 0).
fn ns(ms: f64) -> u64 {
    (ms.max(0.0) * 1e6).round() as u64
}

/// The requests of `root`'s trace (it and every session it starts, at any depth) the trace
/// shows before `t_star_ms`: each stream's turns before its first at or after it (all of a
/// stream whose turns are all before it). None for a trace without times.
fn ended_before(
    dataset: &ringperf_workload::workload::Prepared,
    root: u32,
    t_star_ms: Option<f64>,
) -> Vec<(u32, u32)> {
    let Some(t_star) = t_star_ms else {
        return Vec::new();
    };
    let conversations = &dataset.conversations;
    let mut ended = Vec::new();
    let mut stack = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        let Some(conv) = conversations.get(c as usize).filter(|_| seen.insert(c)) else {
            continue;
        };
        let before = (conv.turns.iter())
            .position(|t| t.timestamp_ms.is_some_and(|ts| ts >= t_star))
            .unwrap_or(conv.turns.len());
        ended.extend((0..before as u32).map(|t| (c, t)));
        stack.extend(
            conv.branches()
                .iter()
                .flat_map(|b| b.children.iter().copied()),
        );
    }
    ended
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_handed_off_session_waits_what_is_left_of_its_delay() {
        use super::residual_ms;
        assert_eq!(residual_ms(500.0, 120.0, None), 380.0);
        assert_eq!(residual_ms(500.0, 700.0, None), 0.0);
        assert_eq!(residual_ms(5_000.0, 100.0, Some(1_000.0)), 1_000.0);
        assert_eq!(residual_ms(0.0, 0.0, Some(1_000.0)), 0.0);
    }
}
