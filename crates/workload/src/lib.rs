//! ringperf-workload: what a benchmark sends and when. Prompts from the corpus and its
//! tokenizers, every dataset and trace format AIPerf reads, multimodal inputs, chat templates,
//! requests pre-encoded into their bytes before the run ([`workload`]), and the schedules that
//! give each request its intended send time, closed or open loop, phases and ramps
//! ([`schedule`]). It builds on `ringperf-wire` (endpoint formats, conversations, records) and
//! on `ringperf-io` only for the run's interrupt flag; nothing here opens a socket.

pub mod schedule;
pub mod workload;
