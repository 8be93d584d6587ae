//! Tasks of one thread waiting for a pool's connection, woken one at a time in arrival order.
//!
//! A pool at its connection limit makes a request wait until a connection comes back idle or
//! one closes. Each such event wakes exactly one waiter (not all of them: thousands may wait),
//! and a waiter dropped after it was woken but before it ran (its request timed out or was cut)
//! hands the wake-up on, so no event is ever lost while someone waits.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// One waiter's place in the queue.
#[derive(Debug, Default)]
struct Place {
    /// An event was handed to this waiter.
    woken: Cell<bool>,
    /// The waiter is gone without having been woken: skip it.
    gone: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

/// The queue of waiters of one pool (single-threaded).
#[derive(Debug, Default)]
pub struct Waiters {
    queue: RefCell<VecDeque<Rc<Place>>>,
    /// The owner's count of what its waiters wait for (a pool's open connections): kept here
    /// so that what counts itself in it needs one reference, not two (#41: a connection's).
    pub(crate) count: std::cell::Cell<usize>,
}

impl Waiters {
    /// Wakes the longest-waiting waiter still there, if any.
    pub fn notify_one(&self) {
        loop {
            let Some(place) = self.queue.borrow_mut().pop_front() else {
                return;
            };
            if place.gone.get() {
                continue;
            }
            place.woken.set(true);
            if let Some(w) = place.waker.borrow_mut().take() {
                w.wake();
            }
            return;
        }
    }

    /// Waiters in the queue (gone ones not yet skipped included).
    pub fn len(&self) -> usize {
        self.queue.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.borrow().is_empty()
    }
}

/// Waits for the next event handed to it by [`Waiters::notify_one`]. Joins the queue when it is
/// created, so an event between the caller's last look and its first poll is not missed.
pub struct Wait {
    waiters: Rc<Waiters>,
    place: Rc<Place>,
    done: bool,
}

impl Wait {
    pub fn new(waiters: &Rc<Waiters>) -> Self {
        let place = Rc::new(Place::default());
        waiters.queue.borrow_mut().push_back(place.clone());
        Self {
            waiters: waiters.clone(),
            place,
            done: false,
        }
    }
}

impl Future for Wait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.place.woken.get() {
            self.done = true;
            return Poll::Ready(());
        }
        *self.place.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.place.woken.get() {
            // Woken but never ran: the event goes to the next waiter.
            self.waiters.notify_one();
        } else {
            self.place.gone.set(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn poll(w: &mut Wait, count: &Arc<Count>) -> bool {
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        Pin::new(w).poll(&mut cx).is_ready()
    }

    fn woken(count: &Arc<Count>) -> usize {
        count.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn one_event_wakes_one_waiter_in_arrival_order() {
        let q = Rc::new(Waiters::default());
        let (ca, cb) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (mut a, mut b) = (Wait::new(&q), Wait::new(&q));
        assert!(!poll(&mut a, &ca) && !poll(&mut b, &cb));
        q.notify_one();
        assert_eq!((woken(&ca), woken(&cb)), (1, 0));
        assert!(poll(&mut a, &ca) && !poll(&mut b, &cb));
        q.notify_one();
        assert_eq!(woken(&cb), 1);
        assert!(poll(&mut b, &cb));
        // Nobody left: an event is a no-op.
        q.notify_one();
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_before_the_first_poll_is_kept() {
        let q = Rc::new(Waiters::default());
        let mut a = Wait::new(&q);
        q.notify_one();
        assert!(poll(&mut a, &Arc::new(Count::default())));
    }

    #[test]
    fn a_waiter_dropped_after_its_wake_up_hands_it_on() {
        let q = Rc::new(Waiters::default());
        let cb = Arc::new(Count::default());
        let a = Wait::new(&q);
        let mut b = Wait::new(&q);
        assert!(!poll(&mut b, &cb));
        q.notify_one();
        drop(a);
        assert_eq!(woken(&cb), 1);
        assert!(poll(&mut b, &cb));
    }

    #[test]
    fn a_waiter_gone_before_any_event_is_skipped() {
        let q = Rc::new(Waiters::default());
        let cb = Arc::new(Count::default());
        let a = Wait::new(&q);
        let mut b = Wait::new(&q);
        assert!(!poll(&mut b, &cb));
        drop(a);
        q.notify_one();
        assert_eq!(woken(&cb), 1);
        assert!(poll(&mut b, &cb));
        assert!(q.is_empty());
    }
}
