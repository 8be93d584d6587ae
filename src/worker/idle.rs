//! What lets a worker's tasks sleep while nothing is due: the longest nap of a task that only
//! waits for a stop, and the end of a phase that the tasks living beside its requests wait for.

use std::cell::{Cell, RefCell};
use std::time::Duration;

/// Longest nap of a task that waits for nothing but a stop (the cut watcher with no request in
/// flight, an open loop whose next credit is far off, the warm-pool keeper with nothing to do):
/// an idle worker wakes a few times a second, and sees a stop within this.
pub(crate) const IDLE_POLL: Duration = Duration::from_millis(200);

/// The end of a phase on one worker, which the tasks that live beside its requests (the cut
/// watcher, the warm-pool keeper) wait for together with their own timers, so that they end
/// as soon as it comes rather than at their next tick.
#[derive(Debug, Default)]
pub(crate) struct PhaseOver {
    over: Cell<bool>,
    waiters: RefCell<Vec<std::task::Waker>>,
}

impl PhaseOver {
    pub(crate) fn set(&self) {
        self.over.set(true);
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.over.get()
    }

    /// Sleeps `nap`; `false` (at once) when the phase is over before it ends.
    pub(crate) async fn sleep(&self, nap: Duration) -> bool {
        let over = std::future::poll_fn(|cx| {
            if self.over.get() {
                return std::task::Poll::Ready(());
            }
            // Each waiting task once (its waker stays the same from one sleep to the next).
            let mut waiters = self.waiters.borrow_mut();
            if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                waiters.push(cx.waker().clone());
            }
            std::task::Poll::Pending
        });
        monoio::select! {
            () = over => false,
            () = monoio::time::sleep(nap) => !self.over.get(),
        }
    }
}
