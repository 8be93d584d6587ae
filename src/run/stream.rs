//! A streamed trace replay (docs/datasets.md, "Large traces"): instead of building every
//! prompt, body and ISL before the run starts, one producer thread builds them in schedule
//! order while the run goes, a bounded window ahead of the workers
//! ([`ringperf_workload::workload::stream`]). The first pass over the file has checked every row, so a bad
//! row still stops the run before it starts; what is left to the producer cannot fail but by a
//! bug, and such a turn is sent as no request and recorded as one failed request.
//!
//! A run is streamed when it replays a `mooncake_trace` on a fixed schedule (its only phase:
//! no warmup) and nothing needs the whole dataset built first: no `--extra-inputs` template
//! (checked against every turn's text), no `--export-level raw` (which reads each body back
//! after the request), no turn whose body carries its conversation's history.

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::config::timing::Mode as TimingMode;
use crate::config::{Config, ExportLevel};
use ringperf_engine::worker::Encoding;
use ringperf_wire::endpoint::{EndpointKind, PayloadParams, TurnBody, build_turn};
use ringperf_workload::workload::loader::{DeferredPrompts, TraceIndex};
use ringperf_workload::workload::stream::{BuildError, Ready, Stream, Window};
use ringperf_workload::workload::tokenizer::Tokenizer;

/// Whether the run of `cfg` over `trace` is streamed (see the module's comment).
pub(super) fn streams(cfg: &Config, trace: &TraceIndex) -> bool {
    let fixed = matches!(cfg.profiling.timing.mode, TimingMode::FixedSchedule(_));
    let history = cfg.endpoint.descriptor().history.is_some() && trace.history;
    // A phase after it would ask for the same prompts again (a trace is streamed once).
    fixed
        && cfg.warmup.is_none()
        && !cfg.phase_by_phase()
        && cfg.payload_template.is_none()
        && cfg.export_level != ExportLevel::Raw
        && !history
}

/// Which conversations this run sends: those on its fixed schedule (this shard's share of
/// them), by dataset index.
pub(super) fn wanted(cfg: &Config, skeleton: &ringperf_workload::workload::Prepared) -> Vec<bool> {
    let mut wanted = vec![false; skeleton.conversations.len()];
    if let TimingMode::FixedSchedule(fixed) = cfg.profiling.timing.mode
        && let Ok((_, entries)) = fixed.build_for(skeleton)
    {
        let shard = cfg.shard.shard;
        for (k, e) in entries.iter().enumerate() {
            if shard.owns(k as u64) {
                wanted[e.conversation as usize] = true;
            }
        }
    }
    wanted
}

/// What the producer builds from.
pub(crate) struct Job {
    /// Where the trace's rows are, in dataset order.
    pub deferred: DeferredPrompts,
    /// Per conversation: whether it is sent, and the flat index of its first turn.
    pub wanted: Vec<bool>,
    pub offsets: Vec<usize>,
    pub tokenizer: Arc<Tokenizer>,
    pub kind: EndpointKind,
    pub params: PayloadParams,
    pub encoding: Encoding,
    /// The model of each row when several are given, drawn in dataset order for every row (sent
    /// or not), as an unstreamed run assigns them.
    pub models: Option<ringperf_workload::workload::models::ModelSelector>,
}

/// The producer thread; dropping it closes the stream and joins the thread (which ends at its
/// next row, or at once from its wait).
pub(crate) struct Producer {
    stream: Arc<Stream>,
    thread: Option<JoinHandle<()>>,
}

impl Producer {
    /// Starts building `job` into `stream`.
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(job: Job, stream: Arc<Stream>) -> std::io::Result<Self> {
        let s = stream.clone();
        let thread = std::thread::Builder::new()
            .name("ringperf-stream".into())
            .spawn(move || {
                // However it ends (a panic too), the feeder must not wait for conversations
                // never built: their requests are then recorded as failed, not awaited.
                let _done = AllReady(&s);
                produce(job, &s);
            })?;
        Ok(Self {
            stream,
            thread: Some(thread),
        })
    }
}

/// Marks every conversation ready when dropped.
struct AllReady<'a>(&'a Stream);

impl Drop for AllReady<'_> {
    fn drop(&mut self) {
        self.0.set_ready(usize::MAX);
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.stream.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Builds every wanted conversation, in dataset order, into its slots, each row read again
/// from the file; every prompt of the file up to the last wanted conversation is built in the
/// same order as [`ringperf_workload::workload::loader::TraceIndex::into_dataset`] builds them, so the
/// prompts are the ones an unstreamed run sends.
pub(crate) fn produce(job: Job, stream: &Stream) {
    stream.register_producer();
    let Job {
        deferred,
        wanted,
        offsets,
        tokenizer,
        kind,
        params,
        encoding,
        mut models,
    } = job;
    let Some(last) = wanted.iter().rposition(|&w| w) else {
        return;
    };
    let mut prompts = deferred.builder(&tokenizer);
    let mut reader = deferred.reader();
    let rows = deferred.rows();
    let mut at = 0;
    for (c, &send) in wanted.iter().enumerate().take(last + 1) {
        if (send && !stream.wait_for_room()) || stream.is_closed() {
            return;
        }
        while let Some(row) = rows.get(at).filter(|r| r.conversation as usize == c) {
            at += 1;
            let turn = match &mut reader {
                Ok(reader) => deferred.build(reader, &mut prompts, row),
                Err(e) => Err(e.clone()),
            };
            let turn = turn.map(|mut t| {
                if let Some(s) = models.as_mut().filter(|_| t.model.is_none()) {
                    t.model = Some(s.next_model());
                }
                t
            });
            if row.synthesized {
                stream.count_built();
            }
            if !send {
                continue;
            }
            let (ready, isl) = match turn {
                Err(e) => (
                    Ready {
                        requests: Err(BuildError::Prompt(e)),
                    },
                    None,
                ),
                Ok(turn) => {
                    let body = build_turn(
                        kind,
                        &params,
                        &TurnBody {
                            system: None,
                            user_context: None,
                            history: &[],
                            turn: &turn,
                            previous_response_id: None,
                        },
                    );
                    let isl = tokenizer.count_input(kind, &body);
                    (
                        Ready {
                            requests: encode(&encoding, &body, offsets[c] + row.turn as usize),
                        },
                        isl,
                    )
                }
            };
            stream.put(offsets[c] + row.turn as usize, ready, isl);
        }
        stream.set_ready(c + 1);
    }
}

/// `body` as a request to every base URL; `turn` is its index among all turns.
fn encode(
    encoding: &Encoding,
    body: &[u8],
    turn: usize,
) -> Result<Vec<ringperf_wire::http::EncodedRequest>, BuildError> {
    encoding
        .encode_turn(body, turn as u64)
        .map_err(BuildError::Encode)
}

/// The slots of `turns` turns, with the default window.
pub(super) fn slots(turns: usize) -> Arc<Stream> {
    Arc::new(Stream::new(turns, Window::default()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use ringperf_workload::workload::loader::{LoadSpec, Loaded, Source, load, load_deferred};

    fn spec(path: &Path) -> LoadSpec {
        LoadSpec {
            source: Source::File {
                path: path.to_path_buf(),
                kind: Some(ringperf_workload::workload::loader::DatasetKind::MooncakeTrace),
            },
            seed: 9,
            seeded: true,
            entries: 1,
            block_size: Some(8),
            ignore_trace_delays: false,
            system_message: true,
            osl_given: false,
            hash_path: None,
            uuid_and_strip: false,
            pool_batch: Default::default(),
            weka: Default::default(),
            baseten: Default::default(),
        }
    }

    /// A trace of `rows` rows that draws on every random stream the prompts use: rows with
    /// hash ids that share blocks, rows whose ids fall short of their length (a random tail),
    /// rows with no ids (a plain prompt), a text row and a multi-turn session.
    fn trace(dir: &Path, rows: usize) -> std::path::PathBuf {
        let mut text = String::new();
        for i in 0..rows {
            let row = match i % 5 {
                0 => serde_json::json!({"timestamp": i, "input_length": 20, "hash_ids": [1, 2, 3]}),
                1 => serde_json::json!({"timestamp": i, "input_length": 30, "hash_ids": [1, 4]}),
                2 => serde_json::json!({"timestamp": i, "input_length": 13}),
                3 => serde_json::json!({"timestamp": i, "text_input": format!("row {i}")}),
                _ => serde_json::json!({"timestamp": i, "input_length": 9, "session_id": "s",
                                        "output_length": 3}),
            };
            text += &row.to_string();
            text.push('\n');
        }
        let path = dir.join("trace.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn encoding() -> Encoding {
        Encoding {
            targets: vec![("a:1".into(), "/v1/completions".into())],
            ..Encoding::default()
        }
    }

    fn job(
        path: &Path,
        tokenizer: &Arc<Tokenizer>,
    ) -> (Job, ringperf_workload::workload::Prepared) {
        let Ok(Loaded::Trace(index)) = load_deferred(&spec(path), tokenizer) else {
            panic!("a trace is loaded as its first pass");
        };
        let TraceIndex { skeleton, rows, .. } = index;
        let mut offsets = Vec::new();
        let mut n = 0;
        for c in &skeleton.conversations {
            offsets.push(n);
            n += c.turns.len();
        }
        let job = Job {
            wanted: vec![true; skeleton.conversations.len()],
            deferred: rows,
            offsets,
            tokenizer: tokenizer.clone(),
            kind: EndpointKind::Completions,
            params: PayloadParams {
                model: "m".into(),
                ..PayloadParams::default()
            },
            encoding: encoding(),
            models: None,
        };
        (job, skeleton)
    }

    fn body(req: &ringperf_wire::http::EncodedRequest) -> &[u8] {
        &req.bytes[req.head_len..]
    }

    /// The streamed requests are the bodies and ISLs an unstreamed run builds (the whole load
    /// then `workload::prepare`, another code path), turn for turn.
    #[test]
    fn streamed_requests_are_the_requests_built_before_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = trace(dir.path(), 40);
        let tokenizer = Arc::new(Tokenizer::builtin());
        let whole = load(&spec(&path), &tokenizer).unwrap();
        let params = PayloadParams {
            model: "m".into(),
            ..PayloadParams::default()
        };
        let eager = ringperf_workload::workload::prepare(
            whole,
            EndpointKind::Completions,
            &params,
            &tokenizer,
        );
        let (job, _) = job(&path, &tokenizer);
        let stream = Stream::new(
            eager.turn_count(),
            Window {
                turns: 1 << 20,
                bytes: 1 << 30,
            },
        );
        produce(job, &stream);
        assert!(stream.conversation_ready(eager.conversations.len() as u32 - 1));
        let mut flat = 0;
        for c in &eager.conversations {
            for t in &c.turns {
                let ready = stream.take(flat).expect("every turn is built");
                let req = &ready.requests.as_ref().expect("encoded")[0];
                let want = t.body.as_deref().expect("a body built before the run");
                assert_eq!(body(req), want, "turn {flat}");
                assert_eq!(stream.isl(flat), t.isl_tokens, "turn {flat}");
                assert!(stream.take(flat).is_none(), "taken once");
                flat += 1;
            }
        }
        // Every synthesized row was built: 4 of every 5 rows.
        assert_eq!(stream.built(), 32);
    }

    /// The producer runs ahead of the workers by the window and no further: with nothing taken
    /// it builds the window's worth and waits; each take lets one more be built; the first
    /// request is ready long before the trace's prompts are all built.
    #[test]
    fn the_producer_holds_at_most_its_window() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..300 {
            text +=
                &serde_json::json!({"timestamp": i, "input_length": 40, "hash_ids": [i, i + 1000]})
                    .to_string();
            text.push('\n');
        }
        let path = dir.path().join("long.jsonl");
        std::fs::write(&path, text).unwrap();
        let tokenizer = Arc::new(Tokenizer::builtin());
        let (job, skeleton) = job(&path, &tokenizer);
        let stream = Arc::new(Stream::new(
            skeleton.turn_count(),
            Window {
                turns: 4,
                bytes: 1 << 30,
            },
        ));
        let producer = Producer::start(job, stream.clone()).unwrap();
        let wait_for = |what: &dyn Fn() -> bool| {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !what() {
                assert!(std::time::Instant::now() < until, "the producer stalled");
                std::thread::yield_now();
            }
        };
        wait_for(&|| stream.held().0 == 4);
        // Full: the fifth row waits for room before it is built.
        assert_eq!(stream.built(), 4);
        assert!(stream.conversation_ready(0) && !stream.conversation_ready(4));
        let first = stream.take(0).expect("the first request is built");
        assert!(first.requests.is_ok());
        assert_eq!(stream.built_at_first_take(), Some(4));
        for flat in 1..300 {
            wait_for(&|| stream.conversation_ready(flat as u32));
            assert!(stream.held().0 <= 4);
            assert!(stream.take(flat).is_some(), "turn {flat}");
        }
        assert_eq!(stream.built(), 300);
        assert_eq!(stream.held(), (0, 4), "never more than the window waited");
        drop(producer);
    }

    /// Dropping the producer while it waits for room ends its thread (a run stopped early).
    #[test]
    fn a_waiting_producer_ends_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = trace(dir.path(), 50);
        let tokenizer = Arc::new(Tokenizer::builtin());
        let (job, skeleton) = job(&path, &tokenizer);
        let stream = Arc::new(Stream::new(
            skeleton.turn_count(),
            Window {
                turns: 2,
                bytes: 1 << 30,
            },
        ));
        let producer = Producer::start(job, stream.clone()).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while stream.held().0 < 2 {
            assert!(std::time::Instant::now() < until, "the producer stalled");
            std::thread::yield_now();
        }
        drop(producer); // joins the thread: returns only once it has ended
        assert!(stream.is_closed());
        assert!(stream.built() < 50);
    }
}
