//! Batched wake-ups: one worker wake-up serves the reads of many connections.
//!
//! With kernel receive stamps ([`super::rxstamp`]) a read's timestamp is the moment the kernel
//! received the data, not the moment the worker woke up to read it, so a worker no longer has to
//! wake at once for every segment. When SSE events arrive 1 ms apart on 32 streams, each event
//! otherwise costs its own wake-up (an io_uring wait returning, a context switch, a task poll):
//! several microseconds of worker CPU per event, most of it the wake-up itself.
//!
//! The [`Napper`] task lets completions accumulate instead. It is woken after every batch of
//! reads the runtime ran (each read calls [`note_read`]); it then blocks the worker thread for a
//! short nap, during which the kernel keeps queuing completions in the ring without waking
//! anyone. When the nap ends the runtime finds them all at once (its wait returns without
//! sleeping) and runs their reads in one pass. The nap is bounded three ways:
//!
//! - by `--batch-wakeups-us` (the most it may last);
//! - by a quarter of the shortest recent gap between two reads of one response (reads closer
//!   than 50 µs, segments of one write, are ignored), so that one connection's next event does
//!   not arrive while the previous one is still unread: its reads stay one event each and keep
//!   their own kernel stamps;
//! - by the soonest precise timer deadline of the thread ([`crate::timer::soonest_pending`]), so
//!   an open-loop send is never held back.
//!
//! A nap that gathered fewer than two reads was not worth its own wake-up (a closed loop at
//! concurrency 1: nothing can arrive while the next request waits to be written), so the napper
//! backs off, skipping twice as many chances after each idle nap (up to 1024), and starts again
//! after a productive one.
//!
//! What a nap delays is processing, not measurement: the user-space stamp (and so the reported
//! receive lag) includes it, the kernel stamp does not. Without kernel stamps there is no
//! napper: every user-space stamp would carry the delay.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ringperf_wire::clock::monotonic_raw_ns;

/// Gaps between two reads of one response shorter than this are segments of one write, not
/// separate events: they do not bound the nap.
const MIN_EVENT_GAP_NS: u64 = 50_000;
/// A nap shorter than this is not taken: it would cost a wake-up and gather nothing.
const MIN_NAP_NS: u64 = 20_000;
/// How far ahead of a timer deadline a nap ends (the wake-up from the nap takes a few µs).
const DEADLINE_MARGIN_NS: u64 = 30_000;
/// The shortest gap is taken over windows of this many gaps (the current and the previous one).
const GAP_WINDOW: u32 = 256;
/// Longest back-off after idle naps: at most one nap in this many chances.
const MAX_BACKOFF: u32 = 1024;

/// The reads of this thread, as the napper sees them.
#[derive(Default)]
struct Reads {
    /// Reads completed on this thread.
    count: Cell<u64>,
    /// The napper, waiting for the next read.
    waker: RefCell<Option<Waker>>,
    /// Shortest gap between two reads of one response, in the current and the previous window.
    gaps: Cell<GapWindow>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GapWindow {
    current: u64,
    previous: u64,
    seen: u32,
}

impl Default for GapWindow {
    fn default() -> Self {
        Self {
            current: u64::MAX,
            previous: u64::MAX,
            seen: 0,
        }
    }
}

impl GapWindow {
    /// `gap_ns` between two reads of one response.
    fn note(self, gap_ns: u64) -> Self {
        if gap_ns < MIN_EVENT_GAP_NS {
            return self;
        }
        let current = self.current.min(gap_ns);
        if self.seen + 1 >= GAP_WINDOW {
            Self {
                current: u64::MAX,
                previous: current,
                seen: 0,
            }
        } else {
            Self {
                current,
                previous: self.previous,
                seen: self.seen + 1,
            }
        }
    }

    /// The shortest recent gap (`None`: no event gap seen yet).
    fn shortest(self) -> Option<u64> {
        let m = self.current.min(self.previous);
        (m != u64::MAX).then_some(m)
    }
}

thread_local! {
    static READS: Reads = Reads::default();
}

/// A read completed on this thread. `gap_ns`: time since the previous read of the same
/// response, by the reads' stamps (`None` for a response's first read). Costs a few
/// nanoseconds; wakes the napper if it waits.
pub fn note_read(gap_ns: Option<u64>) {
    READS.with(|r| {
        r.count.set(r.count.get() + 1);
        if let Some(g) = gap_ns {
            r.gaps.set(r.gaps.get().note(g));
        }
        if let Some(w) = r.waker.borrow_mut().take() {
            w.wake();
        }
    });
}

fn reads() -> u64 {
    READS.with(|r| r.count.get())
}

fn shortest_gap() -> Option<u64> {
    READS.with(|r| r.gaps.get().shortest())
}

/// How long the next nap may last, from its bounds (all ns; `None` where a bound is absent).
/// Zero: no nap.
#[must_use]
pub fn nap_ns(max_ns: u64, shortest_gap_ns: Option<u64>, until_deadline_ns: Option<u64>) -> u64 {
    let Some(gap) = shortest_gap_ns else {
        return 0;
    };
    let mut nap = max_ns.min(gap / 4);
    if let Some(left) = until_deadline_ns {
        nap = nap.min(left.saturating_sub(DEADLINE_MARGIN_NS));
    }
    if nap < MIN_NAP_NS { 0 } else { nap }
}

/// The napper's back-off: how many chances to skip after a nap that gathered `gathered` reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    /// Chances to skip before the next nap.
    pub skip: u32,
    /// The skip after the next idle nap.
    pub next: u32,
}

impl Backoff {
    /// After a nap that gathered `gathered` reads.
    #[must_use]
    pub fn after_nap(self, gathered: u64) -> Self {
        if gathered >= 2 {
            Self::default()
        } else {
            let skip = self.next.max(1);
            Self {
                skip,
                next: (skip * 2).min(MAX_BACKOFF),
            }
        }
    }

    /// A chance to nap: `true` to take it (and the state after it).
    #[must_use]
    pub fn chance(self) -> (bool, Self) {
        if self.skip == 0 {
            (true, self)
        } else {
            (
                false,
                Self {
                    skip: self.skip - 1,
                    ..self
                },
            )
        }
    }
}

/// Naps taken and reads they gathered, for the run's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NapStats {
    pub naps: u64,
    pub napped_ns: u64,
    /// Reads run right after a nap (those it gathered).
    pub gathered: u64,
}

/// The napping task of one worker thread (see the module's text). Spawn it once per worker on
/// its runtime; it never ends by itself (it waits for reads between phases and is dropped with
/// the runtime).
pub struct Napper {
    max_ns: u64,
    /// Reads already looked at.
    seen: u64,
    /// The read count when the last nap ended (`None`: no nap since the last look).
    napped_at: Option<u64>,
    backoff: Backoff,
    stats: std::rc::Rc<Cell<NapStats>>,
}

impl Napper {
    /// A napper whose naps last at most `max` (non-zero).
    pub fn new(max: Duration, stats: std::rc::Rc<Cell<NapStats>>) -> Self {
        // Naps end before this thread's precise timer deadlines, so the thread must know them.
        crate::timer::track_pending();
        Self {
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
            seen: reads(),
            napped_at: None,
            backoff: Backoff::default(),
            stats,
        }
    }

    fn nap(&mut self) {
        let now = monotonic_raw_ns();
        let until_deadline = crate::timer::soonest_pending().map(|d| d.saturating_sub(now));
        let ns = nap_ns(self.max_ns, shortest_gap(), until_deadline);
        if ns == 0 {
            return;
        }
        let (take, backoff) = self.backoff.chance();
        self.backoff = backoff;
        if !take {
            return;
        }
        sleep_precisely(ns);
        let mut s = self.stats.get();
        s.naps += 1;
        s.napped_ns += monotonic_raw_ns().saturating_sub(now);
        self.stats.set(s);
        self.napped_at = Some(reads());
    }
}

impl Future for Napper {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let now_reads = reads();
        if now_reads != this.seen {
            // A batch of reads ran since the last look: the reads a nap gathered, if one was
            // taken, judge it; then nap before the runtime waits for the next completions.
            if let Some(at) = this.napped_at.take() {
                let gathered = now_reads - at;
                this.backoff = this.backoff.after_nap(gathered);
                let mut s = this.stats.get();
                s.gathered += gathered;
                this.stats.set(s);
            }
            this.nap();
            this.seen = reads();
        }
        READS.with(|r| *r.waker.borrow_mut() = Some(cx.waker().clone()));
        Poll::Pending
    }
}

/// Blocks the thread for `ns`, asking the kernel for no timer slack on this thread first (the
/// default slack of 50 µs would lengthen every nap by up to that).
fn sleep_precisely(ns: u64) {
    thread_local! {
        static SLACK_SET: Cell<bool> = const { Cell::new(false) };
    }
    SLACK_SET.with(|s| {
        if !s.get() {
            // SAFETY: PR_SET_TIMERSLACK takes one integer argument (the slack in ns) and only
            // changes this thread's timer slack; the return value is ignored (the nap then keeps
            // the default slack, which only lengthens it).
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
            s.set(true);
        }
    });
    std::thread::sleep(Duration::from_nanos(ns));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nap_is_bounded_by_the_flag_the_event_gap_and_the_next_deadline() {
        // No event gap seen: no nap (a non-streaming run, or a stream's first reads).
        assert_eq!(nap_ns(200_000, None, None), 0);
        // 1 ms between events: a quarter is 250 µs, the flag's 200 µs is shorter.
        assert_eq!(nap_ns(200_000, Some(1_000_000), None), 200_000);
        // 400 µs between events: 100 µs.
        assert_eq!(nap_ns(200_000, Some(400_000), None), 100_000);
        // A timer due in 130 µs: the nap ends 30 µs before it.
        assert_eq!(nap_ns(200_000, Some(1_000_000), Some(130_000)), 100_000);
        // Too short to be worth a wake-up: none.
        assert_eq!(nap_ns(200_000, Some(60_000), None), 0);
        assert_eq!(nap_ns(200_000, Some(1_000_000), Some(40_000)), 0);
        assert_eq!(nap_ns(10_000, Some(1_000_000), None), 0);
    }

    #[test]
    fn the_shortest_gap_ignores_segments_of_one_write_and_forgets_old_windows() {
        let mut w = GapWindow::default();
        assert_eq!(w.shortest(), None);
        w = w.note(3_000); // one write split in two segments: ignored
        assert_eq!(w.shortest(), None);
        w = w.note(900_000).note(1_100_000);
        assert_eq!(w.shortest(), Some(900_000));
        // A full window later the 900 µs gap is the previous window's minimum, still kept.
        for _ in 0..GAP_WINDOW {
            w = w.note(2_000_000);
        }
        assert_eq!(w.shortest(), Some(900_000));
        // Another full window and it is forgotten.
        for _ in 0..GAP_WINDOW {
            w = w.note(2_000_000);
        }
        assert_eq!(w.shortest(), Some(2_000_000));
    }

    #[test]
    fn idle_naps_back_off_exponentially_and_a_productive_one_resets() {
        let mut b = Backoff::default();
        assert!(b.chance().0);
        b = b.after_nap(1);
        assert_eq!(b.skip, 1);
        let (take, b2) = b.chance();
        assert!(!take);
        assert!(b2.chance().0);
        b = b2.after_nap(0);
        assert_eq!(b.skip, 2);
        for _ in 0..20 {
            b = b.after_nap(0);
        }
        assert_eq!(b.skip, MAX_BACKOFF);
        b = b.after_nap(5);
        assert_eq!(b, Backoff::default());
    }

    /// Lets the runtime run its other tasks (a task that wakes itself is re-run first on
    /// monoio, so a timer wait it is).
    async fn yield_once() {
        monoio::time::sleep(Duration::from_millis(1)).await;
    }

    #[test]
    fn the_napper_naps_after_reads_and_counts_what_it_gathered() {
        let stats = std::rc::Rc::new(Cell::new(NapStats::default()));
        let s = stats.clone();
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        rt.block_on(async move {
            monoio::spawn(async move {
                monoio::spawn(Napper::new(Duration::from_micros(200), s));
                yield_once().await;
                // A stream's reads 1 ms apart: after the first batch the napper naps.
                note_read(None);
                note_read(Some(1_000_000));
                yield_once().await;
                // The reads "gathered" by that nap.
                note_read(Some(1_000_000));
                note_read(Some(1_000_000));
                yield_once().await;
            })
            .await;
        });
        let st = stats.get();
        assert!(st.naps >= 1, "{st:?}");
        assert!(st.napped_ns >= 200_000, "{st:?}");
        assert_eq!(st.gathered, 2, "{st:?}");
    }
}
