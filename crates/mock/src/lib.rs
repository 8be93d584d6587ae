//! ringperf-mock: the embedded mock inference server (`--mock`, `ringperf mock-server`). It
//! answers every endpoint type ringperf sends, streams tokens at a set pace, injects faults on
//! demand, serves a Prometheus `/metrics` page, and keeps a truth log of what it sent and when:
//! the ground truth every latency test measures against. It builds on `ringperf-wire` (HTTP
//! framing, endpoint formats), `ringperf-io` (timers, signals, TLS) and `ringperf-workload`
//! (the tokenizer and the media probes); it never sees the CLI or a run's configuration.

pub mod mock;
