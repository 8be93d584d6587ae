//! Coalesced wake-ups on the multishot receive path: a worker's wait for completions gathers
//! them for a short window instead of returning at the first one.
//!
//! With kernel receive stamps each completion carries the moment the kernel received its
//! segment ([`ringperf_wire::cmsg`]), so when the worker wakes to read it no longer moves TTFT or ITL.
//! A thread that [`install`]s this asks the io_uring driver (the `monoio::raw::set_wait_batch`
//! hook of the in-tree monoio patch) to wait with io_uring's `min_wait_usec`: the kernel keeps
//! posting completions without returning to user space until [`MIN_COMPLETE`] are there or the
//! window has passed with at least one; an idle worker still sleeps until its first completion
//! and returns at once for it. The window is bounded:
//!
//! - by `RINGPERF_WAIT_BATCH_US` (µs; default [`DEFAULT_US`], off; `0` turns it off);
//! - by the thread's soonest precise timer deadline ([`crate::timer::soonest_pending`]) less
//!   [`MARGIN_NS`], so a timed send (the open-loop pacer) is never held back; monoio's own
//!   timers bound it through the driver's timeout;
//! - to threads whose connections use the multishot receive: on the epoll driver, with
//!   `RINGPERF_MULTISHOT=0`, or with user-space stamps the wait is monoio's.
//!
//! What the window delays is processing, not measurement: the kernel stamps keep each
//! segment's arrival; the user-space receive lag (`ringperf.client_health`) includes it.

use std::cell::Cell;

use monoio::raw::{WaitBatch, set_wait_batch};

use ringperf_wire::clock::monotonic_raw_ns;

/// Switch and window: `RINGPERF_WAIT_BATCH_US=N` (µs) turns the coalescing on; `0` or unset
/// keeps monoio's wait for one completion (before/after measurements on one binary).
pub const ENV: &str = "RINGPERF_WAIT_BATCH_US";
/// The window when [`ENV`] is unset: off (measured on a loaded machine it did not pay:
/// perf/README.md, "Coalesced wake-ups").
pub const DEFAULT_US: u32 = 0;
/// Completions that end a window early.
pub const MIN_COMPLETE: u32 = 256;
/// How far ahead of a timer deadline the window ends (the wake-up itself takes microseconds).
pub const MARGIN_NS: u64 = 30_000;
/// A window shorter than this is not asked for (it would gather nothing).
const MIN_WINDOW_US: u32 = 10;

thread_local! {
    static WINDOW_US: Cell<u32> = const { Cell::new(0) };
}

/// The window of one wait, in µs, from the configured window and the time left before the
/// thread's soonest timer deadline (`None`: no timer waits). Zero: no coalescing.
#[must_use]
pub fn window_us(configured_us: u32, until_deadline_ns: Option<u64>) -> u32 {
    let mut w = configured_us;
    if let Some(left) = until_deadline_ns {
        let left_us = left.saturating_sub(MARGIN_NS) / 1_000;
        w = w.min(u32::try_from(left_us).unwrap_or(u32::MAX));
    }
    if w < MIN_WINDOW_US { 0 } else { w }
}

/// The configured window from [`ENV`] (unset or unparsable: [`DEFAULT_US`]).
#[must_use]
pub fn configured_us() -> u32 {
    std::env::var(ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(DEFAULT_US)
}

/// Turns coalesced waits on for this thread with a window of `us` (0: off). The thread's timer
/// waits start registering their deadlines, so that a window ends before them.
pub fn install(us: u32) {
    WINDOW_US.with(|w| w.set(us));
    if us == 0 {
        set_wait_batch(None);
        return;
    }
    crate::timer::track_pending();
    set_wait_batch(Some(hook));
}

/// Turns coalesced waits off for this thread.
pub fn uninstall() {
    install(0);
}

/// The driver's question before it sleeps.
fn hook() -> Option<WaitBatch> {
    if !super::multishot::active() {
        return None;
    }
    let until = crate::timer::soonest_pending().map(|d| d.saturating_sub(monotonic_raw_ns()));
    let us = window_us(WINDOW_US.with(Cell::get), until);
    (us > 0).then_some(WaitBatch {
        min_complete: MIN_COMPLETE,
        min_wait_us: us,
    })
}

/// Coalesced waits this thread's driver made.
#[must_use]
pub fn waits() -> u64 {
    monoio::raw::batched_waits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_ends_before_the_next_timer_deadline() {
        // No timer waiting: the configured window.
        assert_eq!(window_us(250, None), 250);
        // A deadline 1 ms away does not shorten 250 µs.
        assert_eq!(window_us(250, Some(1_000_000)), 250);
        // 130 µs away: the window ends 30 µs before it.
        assert_eq!(window_us(250, Some(130_000)), 100);
        // Too close (or passed) to gather anything: none.
        assert_eq!(window_us(250, Some(35_000)), 0);
        assert_eq!(window_us(250, Some(0)), 0);
        // Switched off.
        assert_eq!(window_us(0, None), 0);
    }
}
