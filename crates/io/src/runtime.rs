//! Building a monoio runtime on io_uring with automatic fallback to the epoll ("legacy")
//! driver, or on a forced driver, and reporting which one runs.

use std::future::Future;
use std::io;

use monoio::{FusionRuntime, IoUringDriver, LegacyDriver, RuntimeBuilder};

/// Which driver a runtime is asked for (`--io-driver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDriver {
    /// io_uring, or the legacy driver where io_uring is unavailable.
    Auto,
    Uring,
    Legacy,
}

/// The driver a runtime actually uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverKind {
    Uring,
    Legacy,
}

impl DriverKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DriverKind::Uring => "io_uring",
            DriverKind::Legacy => "epoll",
        }
    }
}

/// Submission-queue entries for io_uring runtimes (enough for thousands of connections).
const URING_ENTRIES: u32 = 4096;

/// Runs `make(driver)` to completion on a new runtime for the current thread.
///
/// `Auto` tries io_uring and falls back to the legacy driver when io_uring is unavailable
/// (kernel too old, disabled by sysctl or seccomp); `Uring` fails instead of falling back.
pub fn block_on<F, Fut>(driver: IoDriver, make: F) -> io::Result<Fut::Output>
where
    F: FnOnce(DriverKind) -> Fut,
    Fut: Future,
{
    // The thread's multishot receives end with the future, inside the runtime.
    let make = |kind| {
        let fut = make(kind);
        async move {
            let out = fut.await;
            crate::net::multishot::teardown();
            out
        }
    };
    match driver {
        IoDriver::Legacy => legacy(make),
        IoDriver::Uring => uring(make).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("io_uring runtime could not be built: {e}"),
            )
        }),
        IoDriver::Auto => {
            let rt = RuntimeBuilder::<monoio::FusionDriver>::new()
                .with_entries(URING_ENTRIES)
                .enable_timer()
                .build();
            match rt {
                Ok(FusionRuntime::Uring(mut rt)) => Ok(rt.block_on(make(DriverKind::Uring))),
                Ok(FusionRuntime::Legacy(mut rt)) => Ok(rt.block_on(make(DriverKind::Legacy))),
                // detect_uring() said yes but building the ring failed (e.g. memlock): fall back.
                Err(_) => legacy(make),
            }
        }
    }
}

fn uring<F, Fut>(make: F) -> io::Result<Fut::Output>
where
    F: FnOnce(DriverKind) -> Fut,
    Fut: Future,
{
    let mut rt = RuntimeBuilder::<IoUringDriver>::new()
        .with_entries(URING_ENTRIES)
        .enable_timer()
        .build()?;
    Ok(rt.block_on(make(DriverKind::Uring)))
}

fn legacy<F, Fut>(make: F) -> io::Result<Fut::Output>
where
    F: FnOnce(DriverKind) -> Fut,
    Fut: Future,
{
    let mut rt = RuntimeBuilder::<LegacyDriver>::new()
        .enable_timer()
        .build()?;
    Ok(rt.block_on(make(DriverKind::Legacy)))
}

/// Pins the current thread to `core`; returns false (and changes nothing) when refused.
pub fn pin_to(core: usize) -> bool {
    let ids = core_affinity::get_core_ids().unwrap_or_default();
    match ids.into_iter().find(|c| c.id == core) {
        Some(id) => core_affinity::set_for_current(id),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_driver_runs_and_reports_itself() {
        let k = block_on(IoDriver::Legacy, |k| async move { k }).unwrap();
        assert_eq!(k, DriverKind::Legacy);
        let auto = block_on(IoDriver::Auto, |k| async move {
            monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            k
        })
        .unwrap();
        // This machine has io_uring (checked in crates-feasibility.md); where it does not,
        // Auto must still run, on the legacy driver.
        if let Ok(k) = block_on(IoDriver::Uring, |k| async move { k }) {
            assert_eq!(k, DriverKind::Uring);
            assert_eq!(auto, DriverKind::Uring);
        } else {
            assert_eq!(auto, DriverKind::Legacy);
        }
    }
}
