//! ringperf-io: everything that touches a socket, a timer or a signal, and nothing that knows
//! what a benchmark is. The HTTP/1.1 exchange on monoio with the kernel's receive stamps, TLS,
//! pooled connections and batched wake-ups ([`net`]); monoio runtimes on io_uring or epoll, pinned to a core ([`runtime`]); timer wheels on the run's clock
//! ([`timer`]); base URLs and how endpoint paths join them ([`url`]); the run's stop flags and reasons ([`control`]); SIGINT/SIGTERM handling
//! ([`signals`]); and raising the open-file limit ([`fdlimit`]). It builds on `ringperf-wire`
//! (clock, HTTP framing, cmsg and X.509 readers) and on monoio and rustls.

pub mod control;
pub mod fdlimit;
pub mod net;
pub mod runtime;
pub mod signals;
pub mod timer;
pub mod url;
