//! Serving until the process is told to stop (`ringperf mock-server`): signals, start, and the
//! truth log written at the end. Takes a configuration already validated (by
//! `config::mock`); the command-line flags never reach the mock.

use std::io;
use std::path::Path;

use super::server::start;
use super::settings::MockConfig;

/// Serves until SIGINT or SIGTERM, printing `ringperf mock server listening on http://ADDR` (or
/// `https://`) to
/// stderr once it serves; then stops and, with `truth_log`, writes the truth log there as JSONL.
///
/// How: the calling thread blocks both signals *before* the server threads are spawned (so they
/// inherit the mask and never take them), then waits for one with `sigwait`. No handler runs, so
/// nothing async-signal-unsafe can happen. Call it from the main thread of a process whose other
/// threads also block these signals, or the signal may be delivered elsewhere.
///
/// With `dcgm_log`, the DCGM pages served are written there as JSONL too, one
/// [`super::DcgmPage`] a line.
pub fn serve(cfg: MockConfig, truth_log: Option<&Path>, dcgm_log: Option<&Path>) -> io::Result<()> {
    let set = ringperf_io::signals::block_term_signals()?;
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let server = start(cfg)?;
    eprintln!(
        "ringperf mock server listening on {scheme}://{}",
        server.addr
    );
    let waited = ringperf_io::signals::wait_signal(&set);
    let truth = server.truth();
    let pages = server.dcgm_pages();
    server.stop();
    if let Some(path) = dcgm_log {
        let mut out = io::BufWriter::new(std::fs::File::create(path)?);
        for p in &pages {
            serde_json::to_writer(&mut out, p)?;
            io::Write::write_all(&mut out, b"\n")?;
        }
        io::Write::flush(&mut out)?;
        eprintln!(
            "ringperf mock server: {} DCGM pages in {}",
            pages.len(),
            path.display()
        );
    }
    if let Some(path) = truth_log {
        truth.write_jsonl(path)?;
        eprintln!(
            "ringperf mock server: truth log of {} requests in {}",
            truth.len(),
            path.display()
        );
    }
    waited
}
