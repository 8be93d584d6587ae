//! Agentic replay's lanes for a run (docs/timing.md, "Agentic replay"): built once, when the
//! dataset is ready, for both its phases (the warmup primes each lane's sessions at `t*`, the
//! profiling phase resumes them there), and split over the workers.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ringperf_engine::worker::{AgenticLane, AgenticStream, AgenticWork};
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
}

/// The run's lanes when its profiling phase is agentic replay: AIPerf's trajectories for the
/// dataset, the concurrency and the seed, or its error (no trace to resume, or more lanes than
/// traces when the run may not repeat them).
pub(super) fn build(
    cfg: &Config,
    dataset: &ringperf_workload::workload::Prepared,
) -> Result<Option<AgenticRun>, RunError> {
    let (Mode::Agentic(settings), Load::Concurrency(c)) =
        (cfg.profiling.timing.mode, cfg.profiling.load)
    else {
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

    /// The work of each of `workers` workers in the warmup (`warm`) or the profiling phase: lane
    /// `i` goes to worker `i mod workers`.
    pub fn split(
        &self,
        dataset: &ringperf_workload::workload::Prepared,
        buster: Option<&Buster>,
        workers: usize,
        warm: bool,
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
        let ns = |ms: f64| (ms.max(0.0) * 1e6).round() as u64;
        let w = workers.max(1);
        let mut per: Vec<Vec<AgenticLane>> = vec![Vec::new(); w];
        if warm {
            let schedule = agentic::warm_schedule(dataset, lanes, s.burst, s.idle_cap_ms);
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
            for (l, streams) in by_lane.into_iter().enumerate() {
                per[l % w].push(AgenticLane {
                    index: l as u32,
                    root: lanes[l].root,
                    t_star_ms: lanes[l].t_star_ms,
                    streams,
                });
            }
        } else {
            for (l, lane) in lanes.iter().enumerate() {
                let offsets = agentic::profile_offsets(lane, s.burst, s.idle_cap_ms);
                let streams = lane
                    .streams
                    .iter()
                    .zip(offsets)
                    .enumerate()
                    .map(|(k, (stream, at))| AgenticStream {
                        conversation: stream.conversation,
                        turn: stream.next,
                        at_ns: at.map(ns),
                        branch: stream.branch,
                        id: self.ids[l][k],
                        marker: markers[l],
                    })
                    .collect();
                per[l % w].push(AgenticLane {
                    index: l as u32,
                    root: lane.root,
                    t_star_ms: lane.t_star_ms,
                    streams,
                });
            }
        }
        per.into_iter()
            .map(|lanes| {
                Arc::new(AgenticWork {
                    warm,
                    lanes,
                    draws: self.draws.clone(),
                })
            })
            .collect()
    }
}
