//! ringperf-wire: the pure core. Bytes in, values out: the HTTP/1.1 head and body framing
//! ([`http`]), Server-Sent Events ([`sse`]), the Prometheus text format ([`prom`]), the per-request
//! record and the single-producer ring that carries it ([`record`]), the run's nanosecond clock
//! ([`clock`]), the kernel's receive-timestamp control messages ([`cmsg`]), a small X.509 reader
//! ([`x509`]), conversations ([`conversation`]), every endpoint type's request and response
//! shapes ([`endpoint`]) and the WebSocket frames of the live API ([`ws`]). No I/O runtime and no threads of its own, so it is fuzzed, benched and
//! property-tested alone; it depends on httparse, http, memchr, serde/serde_json, sonic-rs, uuid,
//! crossbeam-queue and libc only (minijinja too with the `template` feature). Nothing here
//! depends on another ringperf crate.

pub mod clock;
pub mod cmsg;
pub mod conversation;
pub mod endpoint;
pub mod http;
pub mod prom;
pub mod record;
pub mod sse;
pub mod ws;
pub mod x509;
