//! The receive path on io_uring's own batching: one multishot `IORING_OP_RECVMSG` per
//! kernel-stamped plain connection, into a ring of provided buffers (`IORING_REGISTER_PBUF_RING`)
//! shared by the thread's connections.
//!
//! Armed once, the receive stays in the kernel: every segment that reaches the socket is
//! received into a buffer the kernel picks from the ring, laid out as `io_uring_recvmsg_out`,
//! control area (the `SO_TIMESTAMPING` message), then payload ([`ringperf_wire::cmsg::parse_recvmsg_out`]),
//! and posted as one completion. The driver (monoio with the in-tree patch, `monoio::raw`) hands
//! the thread's tagged completions to [`on_completion`] in its completion pass, which queues
//! them on the connection's slot and wakes its reader; a worker wake-up serves every completion
//! the ring holds, with no readiness wait and no `recvmsg` call per event.
//!
//! A reader takes one completion at a time ([`Multishot::take`]): the payload is copied out into
//! the caller's buffer and the buffer goes back to the ring at once, so the ring's buffers are
//! held only between a completion and its reader's next poll. When the kernel ends the receive
//! (`IORING_CQE_F_MORE` cleared: the ring ran dry, `ENOBUFS`, or the kernel stopped it), the
//! reader re-arms it after taking what was queued; bytes the kernel did not receive stay in the
//! socket, so nothing is lost. A connection dropped with its receive armed cancels it.
//!
//! Where the driver is epoll, the kernel refuses the buffer ring, or `RINGPERF_MULTISHOT=0` is
//! set, [`Multishot::start`] declines and the connection keeps the readiness wait and
//! `recvmsg` of [`super::rxstamp::read`] (one info line says why, once per process).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context, Poll, Waker};

use monoio::raw::io_uring::{self, opcode, squeue, types};
use monoio::raw::{RAW_USERDATA_TAG, ring_epoch, set_raw_handler, with_raw_ring};

use super::rxstamp::CONTROL_BYTES;
use ringperf_wire::cmsg::{RECVMSG_OUT_BYTES, parse_control, parse_recvmsg_out};

/// The thread's buffer group id.
const GROUP: u16 = 0x7270;
/// Buffers in the thread's ring (a power of two).
const BUFFERS: u16 = 512;
/// Bytes of one buffer: header, control area, payload.
const BUFFER_BYTES: usize = 4096;
/// The user data's generation bits (between the slot index and the tag).
const GEN_MASK: u64 = (1 << 30) - 1;
/// Switch: `RINGPERF_MULTISHOT=0` keeps the readiness wait and `recvmsg` per read on io_uring
/// (for before/after measurements on one binary).
pub const ENV: &str = "RINGPERF_MULTISHOT";
/// Testing hook: the number of buffers in each thread's ring (a power of two), to exhaust a
/// tiny ring under a burst.
#[cfg(feature = "test-hooks")]
pub const TEST_BUFFERS_ENV: &str = "RINGPERF_TEST_RECV_BUFFERS";

/// One completion, as the driver posted it.
#[derive(Clone, Copy, Debug)]
struct Completion {
    res: i32,
    flags: u32,
}

/// One connection's place in the thread's table: a slot per connection with a multishot
/// receive, so per in-flight stream (#41: 72 bytes, and a 32-byte queue allocated at the first
/// completion, with a `u64` generation, a `usize` count and a `VecDeque`; 48 now).
#[derive(Default)]
struct Slot {
    /// Bumped (within [`GEN_MASK`]) when the slot is freed: completions of an older generation
    /// are stale.
    generation: u32,
    live: bool,
    /// The receive is in the kernel (no completion without `F_MORE` since it was armed).
    armed: bool,
    queue: Queue,
    waker: Option<Waker>,
}

/// A slot's queued completions: the first inline, any behind it boxed. A paced stream has at
/// most one queued at a time (its reader takes each as it is woken), so it allocates nothing.
#[derive(Default)]
struct Queue {
    first: Option<Completion>,
    /// Payload bytes of the first completion already taken (a read of at most `max`, never
    /// more than a buffer).
    taken: u32,
    /// Completions behind `first` (empty whenever `first` is `None`). Boxed: a word in every
    /// slot, not a `VecDeque`'s 32 bytes, for what a paced stream never has.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<Completion>>>,
}

impl Queue {
    fn push_back(&mut self, c: Completion) {
        if self.first.is_none() {
            self.first = Some(c);
        } else {
            self.rest.get_or_insert_default().push_back(c);
        }
    }

    fn front(&self) -> Option<&Completion> {
        self.first.as_ref()
    }

    fn pop_front(&mut self) -> Option<Completion> {
        let first = self.first.take();
        self.first = self.rest.as_mut().and_then(|r| r.pop_front());
        first
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn clear(&mut self) {
        self.first = None;
        if let Some(r) = self.rest.as_mut() {
            r.clear();
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Completion> {
        self.first
            .iter()
            .chain(self.rest.iter().flat_map(|r| r.iter()))
    }

    /// Takes every queued completion, in order, leaving the queue empty.
    fn drain(&mut self) -> impl Iterator<Item = Completion> {
        let first = self.first.take();
        let rest = self.rest.as_mut().map(|r| std::mem::take(&mut **r));
        first.into_iter().chain(rest.into_iter().flatten())
    }
}

/// The thread's buffer ring: its entries and the buffers they point at, both in anonymous
/// mappings that live until [`teardown`] unregisters the ring (or, without it, the process).
struct BufRing {
    entries: *mut types::BufRingEntry,
    count: u16,
    /// The tail as this thread last published it.
    tail: u16,
    buffers: *mut u8,
    map_bytes: (usize, usize),
}

impl BufRing {
    fn new(count: u16) -> io::Result<Self> {
        let entries_bytes = usize::from(count) * std::mem::size_of::<types::BufRingEntry>();
        let buffers_bytes = usize::from(count) * BUFFER_BYTES;
        let entries = map(entries_bytes)?.cast::<types::BufRingEntry>();
        let buffers = match map(buffers_bytes) {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: `entries` is the mapping of `entries_bytes` made just above, unused.
                unsafe { libc::munmap(entries.cast(), entries_bytes) };
                return Err(e);
            }
        };
        let mut ring = Self {
            entries,
            count,
            tail: 0,
            buffers,
            map_bytes: (entries_bytes, buffers_bytes),
        };
        for bid in 0..count {
            ring.give(bid);
        }
        Ok(ring)
    }

    /// Buffer `bid` (as the kernel filled it: its first `len` bytes).
    fn buffer(&self, bid: u16, len: usize) -> Option<&[u8]> {
        if bid >= self.count || len > BUFFER_BYTES {
            return None;
        }
        // SAFETY: `bid < count`, so the range lies inside the buffers' mapping; the kernel wrote
        // it before posting the completion that named it and writes it again only after
        // [`BufRing::give`] hands it back, which needs `&mut self` (this borrow has ended).
        Some(unsafe {
            std::slice::from_raw_parts(self.buffers.add(usize::from(bid) * BUFFER_BYTES), len)
        })
    }

    /// Hands buffer `bid` back to the kernel.
    fn give(&mut self, bid: u16) {
        if bid >= self.count {
            return;
        }
        let at = usize::from(self.tail & (self.count - 1));
        // SAFETY: `at < count`: the entry lies inside the ring's mapping; the kernel reads
        // entries only below the published tail, and this one is past it until the store below.
        let entry = unsafe { &mut *self.entries.add(at) };
        entry.set_addr(self.buffers as u64 + u64::from(bid) * BUFFER_BYTES as u64);
        entry.set_len(BUFFER_BYTES as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the ring's tail is the `u16` in its first entry's reserved field
        // (`BufRingEntry::tail`), aligned and inside the mapping; the kernel reads it
        // concurrently, so it is written atomically, releasing the entry written above.
        let tail = unsafe { &*types::BufRingEntry::tail(self.entries).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }
}

fn map(bytes: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

/// The thread's multishot state.
struct State {
    ring: BufRing,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// The `msghdr` every receive is armed with (no name, `CONTROL_BYTES` of control, no
    /// iovec: the buffers come from the ring); boxed so its address is stable.
    msghdr: Box<libc::msghdr>,
    /// The ring this state is registered with (`monoio::raw::ring_epoch`).
    epoch: u64,
}

impl State {
    fn setup() -> io::Result<Self> {
        if std::env::var_os(ENV).is_some_and(|v| v == "0") {
            return Err(io::Error::other(format!("{ENV}=0")));
        }
        let count = buffer_count();
        let ring = BufRing::new(count)?;
        // SAFETY: the ring lives in `State` until `teardown` unregisters it, and its mapping is
        // kept (never unmapped) if that does not happen; the closure only registers.
        let registered = unsafe {
            with_raw_ring(|uring: &mut io_uring::IoUring| {
                uring
                    .submitter()
                    .register_buf_ring(ring.entries as u64, count, GROUP)
            })
        };
        match registered {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e),
            None => return Err(io::Error::other("not an io_uring runtime")),
        }
        set_raw_handler(Some(on_completion));
        // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control).
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_controllen = CONTROL_BYTES as _;
        Ok(Self {
            ring,
            slots: Vec::new(),
            free: Vec::new(),
            msghdr,
            epoch: ring_epoch(),
        })
    }
}

fn buffer_count() -> u16 {
    #[cfg(test)]
    if let Some(n) = TEST_BUFFERS.get() {
        return n;
    }
    #[cfg(feature = "test-hooks")]
    if let Some(n) = std::env::var(TEST_BUFFERS_ENV)
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .filter(|n| n.is_power_of_two())
    {
        return n;
    }
    BUFFERS
}

#[cfg(test)]
thread_local! {
    /// Unit tests' buffer count for this thread's next ring.
    pub(crate) static TEST_BUFFERS: std::cell::Cell<Option<u16>> = const { std::cell::Cell::new(None) };
}

/// Whether this thread may use the multishot receive, once asked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Availability {
    Unknown,
    /// Refused on the ring of this epoch.
    No(u64),
}

/// Whether this thread's multishot receive is set up on the current ring (a connection used
/// it), so that its completions carry kernel stamps ([`super::coalesce`]).
#[must_use]
pub fn active() -> bool {
    STATE.with_borrow(|s| s.as_ref().is_some_and(|st| st.epoch == ring_epoch()))
}

/// What this thread's multishot receives did, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Completions taken whole (each a receive of the kernel's: one or more segments).
    pub completions: u64,
    /// Receives ended by a dry buffer ring (`ENOBUFS`) and armed again.
    pub dry: u64,
}

/// This thread's [`Stats`] so far.
#[must_use]
pub fn stats() -> Stats {
    STATS.get()
}

thread_local! {
    static STATS: std::cell::Cell<Stats> = const { std::cell::Cell::new(Stats { completions: 0, dry: 0 }) };
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    static AVAILABLE: std::cell::Cell<Availability> = const { std::cell::Cell::new(Availability::Unknown) };
}

/// Said once per process when the multishot receive is not used.
static SAID: std::sync::Once = std::sync::Once::new();

/// The driver's handler of this thread's tagged completions: queues one on its connection's
/// slot and wakes the reader, or hands a stale completion's buffer back at once.
fn on_completion(user_data: u64, res: i32, flags: u32) {
    STATE.with(|s| {
        // The driver's completion pass never runs inside a borrow (no borrow is held across
        // an await, and the pass runs between task polls).
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let Some(st) = s.as_mut() else { return };
        let index = (user_data & 0xFFFF_FFFF) as usize;
        let generation = (user_data >> 32) & GEN_MASK;
        match st.slots.get_mut(index) {
            Some(slot) if slot.live && u64::from(slot.generation) == generation => {
                if !io_uring::cqueue::more(flags) {
                    slot.armed = false;
                }
                slot.queue.push_back(Completion { res, flags });
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
            _ => {
                if let Some(bid) = io_uring::cqueue::buffer_select(flags) {
                    st.ring.give(bid);
                }
            }
        }
    });
}

/// One connection's multishot receive.
#[derive(Debug)]
pub struct Multishot {
    fd: RawFd,
    index: u32,
    /// The slot's generation when this receive took it: with the index, the receive's user
    /// data ([`Multishot::user_data`]). Two `u32`s, not the `usize` index and the `u64` user
    /// data: a connection keeps this for as long as it lives (#41: 24 bytes, 32 as an `Option`;
    /// 16 now, a niche-less `Option` of 12).
    generation: u32,
}

impl Multishot {
    /// Arms a multishot receive on `fd` (a kernel-stamped TCP socket this thread reads), or
    /// `None` where this thread cannot (epoll driver, old kernel, switched off).
    pub fn start(fd: RawFd) -> Option<Self> {
        // SAFETY: the closure does nothing with the ring.
        let on_uring = unsafe { with_raw_ring(|_: &mut io_uring::IoUring| ()) }.is_some();
        if !on_uring || AVAILABLE.get() == Availability::No(ring_epoch()) {
            return None;
        }
        let slot = STATE.with_borrow_mut(|s| {
            if s.as_ref().is_some_and(|st| st.epoch != ring_epoch()) {
                // Left by a runtime that ended without `teardown`: its ring is gone. Its
                // mappings are kept (nothing says the kernel is done with them).
                if let Some(old) = s.take() {
                    std::mem::forget(old);
                }
            }
            if s.is_none() {
                match State::setup() {
                    Ok(st) => *s = Some(st),
                    Err(e) => {
                        AVAILABLE.set(Availability::No(ring_epoch()));
                        SAID.call_once(|| {
                            eprintln!(
                                "multishot receive unavailable ({e}): reading with a readiness wait and recvmsg"
                            );
                        });
                        return None;
                    }
                }
            }
            let st = s.as_mut()?;
            let index = st.free.pop().unwrap_or_else(|| {
                st.slots.push(Slot::default());
                st.slots.len() - 1
            });
            let slot = &mut st.slots[index];
            slot.live = true;
            slot.queue.clear();
            slot.queue.taken = 0;
            Some((index, slot.generation))
        })?;
        let (index, generation) = slot;
        let ms = Self {
            fd,
            // A slot's index is the user data's low 32 bits.
            index: index as u32,
            generation,
        };
        ms.arm().ok()?;
        Some(ms)
    }

    /// The receive's user data: the tag, the slot's generation and its index.
    fn user_data(&self) -> u64 {
        RAW_USERDATA_TAG | ((u64::from(self.generation) & GEN_MASK) << 32) | u64::from(self.index)
    }

    /// Submits the receive (the runtime's next wait sends it to the kernel).
    fn arm(&self) -> io::Result<()> {
        let msghdr = STATE.with_borrow(|s| s.as_ref().map(|st| &raw const *st.msghdr));
        let Some(msghdr) = msghdr else {
            return Err(io::Error::other("no multishot state"));
        };
        let sqe = opcode::RecvMsgMulti::new(types::Fd(self.fd), msghdr, GROUP)
            .build()
            .user_data(self.user_data());
        push(&sqe)?;
        STATE.with_borrow_mut(|s| {
            if let Some(slot) = s
                .as_mut()
                .and_then(|st| st.slots.get_mut(self.index as usize))
            {
                slot.armed = true;
            }
        });
        Ok(())
    }

    /// Waits until a completion is queued for this connection.
    pub fn ready(&self) -> Ready<'_> {
        Ready { ms: self }
    }

    /// Takes one queued completion: appends its payload (at most `max` bytes of it; the rest
    /// stays queued for the next take, with the same stamp) to `buf` and returns the bytes
    /// taken (0: end of stream) with the kernel's receive stamp (`CLOCK_REALTIME` ns) if it
    /// carried one. Re-arms the receive when the kernel ended it and nothing is queued behind.
    ///
    /// # Errors
    /// The receive's error; `WouldBlock` when nothing usable was queued (an empty queue, or the
    /// ring ran dry and the receive was re-armed).
    pub fn take(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<(usize, Option<u64>)> {
        let (taken, rearm) = STATE.with_borrow_mut(|s| {
            let Some(st) = s.as_mut() else {
                return (Err(io::Error::other("no multishot state")), false);
            };
            let Some(slot) = st.slots.get_mut(self.index as usize) else {
                return (Err(io::Error::other("no multishot slot")), false);
            };
            let Some(&c) = slot.queue.front() else {
                return (Err(io::ErrorKind::WouldBlock.into()), false);
            };
            let (taken, whole) =
                take_one(&mut st.ring, c, slot.queue.taken as usize, buf, max.max(1));
            if whole {
                slot.queue.pop_front();
                slot.queue.taken = 0;
                STATS.with(|s| {
                    let mut v = s.get();
                    v.completions += 1;
                    v.dry += u64::from(is_dry(&taken));
                    s.set(v);
                });
            } else if let Ok((n, _)) = taken {
                // At most a buffer's payload: `take_one` leaves the rest queued.
                slot.queue.taken += n as u32;
                return (taken, false);
            }
            let ended = !slot.armed && slot.queue.is_empty();
            // The kernel ended the receive after data or a dry ring: receive again. An end of
            // stream or an error ends it for good.
            let more = matches!(taken, Ok((n, _)) if n > 0) || is_dry(&taken);
            (taken, ended && more)
        });
        if rearm {
            self.arm()?;
        }
        taken
    }

    /// No byte is queued for this connection: it may go back to its pool. (An end of stream
    /// may be queued: as on the readiness path, the next exchange finds the connection closed
    /// before any response byte and retries on a fresh one.)
    pub fn is_idle(&self) -> bool {
        STATE.with_borrow(|s| {
            s.as_ref()
                .and_then(|st| st.slots.get(self.index as usize))
                .is_some_and(|slot| slot.queue.iter().all(|c| !carries_bytes(*c)))
        })
    }
}

/// A completion that brought payload bytes.
fn carries_bytes(c: Completion) -> bool {
    io_uring::cqueue::buffer_select(c.flags).is_some()
        && usize::try_from(c.res).is_ok_and(|n| n > RECVMSG_OUT_BYTES + CONTROL_BYTES)
}

/// The ring ran dry (`ENOBUFS`): the bytes wait in the socket until the receive is re-armed.
fn is_dry(taken: &io::Result<(usize, Option<u64>)>) -> bool {
    matches!(taken, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// One completion's payload from byte `from` on, at most `max` bytes of it, appended to `buf`;
/// its buffer handed back once it is taken whole (the second value: it was).
fn take_one(
    ring: &mut BufRing,
    c: Completion,
    from: usize,
    buf: &mut Vec<u8>,
    max: usize,
) -> (io::Result<(usize, Option<u64>)>, bool) {
    if c.res < 0 {
        let e = if c.res == -libc::ENOBUFS {
            io::ErrorKind::WouldBlock.into()
        } else {
            io::Error::from_raw_os_error(-c.res)
        };
        return (Err(e), true);
    }
    let Some(bid) = io_uring::cqueue::buffer_select(c.flags) else {
        // No buffer: the end of the stream (a result of 0).
        return (Ok((0, None)), true);
    };
    let len = usize::try_from(c.res).unwrap_or(0);
    let out = ring
        .buffer(bid, len)
        .and_then(|b| parse_recvmsg_out(b, 0, CONTROL_BYTES))
        .map(|o| {
            let rest = o.payload.get(from..).unwrap_or_default();
            let n = rest.len().min(max);
            buf.extend_from_slice(&rest[..n]);
            (n, parse_control(o.control), n == rest.len())
        });
    match out {
        Some((n, stamp, whole)) => {
            if whole {
                ring.give(bid);
            }
            (Ok((n, stamp)), whole)
        }
        None => {
            ring.give(bid);
            let e = io::Error::new(io::ErrorKind::InvalidData, "malformed multishot receive");
            (Err(e), true)
        }
    }
}

/// Pushes `sqe` on the thread's ring, submitting first when it is full.
fn push(sqe: &squeue::Entry) -> io::Result<()> {
    let push = |uring: &mut io_uring::IoUring| {
        // SAFETY: the entry is a receive (or a cancel) tagged with `RAW_USERDATA_TAG` whose
        // msghdr (boxed in `State`, never freed while the ring lives) and buffer ring (unmapped
        // only after `teardown` unregisters it) outlive it.
        if unsafe { uring.submission().push(sqe) }.is_ok() {
            return Ok(());
        }
        uring.submit()?;
        // SAFETY: as above.
        unsafe { uring.submission().push(sqe) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))
    };
    // SAFETY: the closure pushes only tagged entries (or a cancel with monoio's own cancel user
    // data), submits, and neither drops the ring nor consumes completions.
    let pushed = unsafe { with_raw_ring(push) };
    pushed.unwrap_or_else(|| Err(io::Error::other("not an io_uring runtime")))
}

impl Drop for Multishot {
    fn drop(&mut self) {
        let armed = STATE.with_borrow_mut(|s| {
            let Some(st) = s.as_mut() else { return false };
            let Some(slot) = st.slots.get_mut(self.index as usize) else {
                return false;
            };
            let armed = slot.armed;
            for c in slot.queue.drain() {
                if let Some(bid) = io_uring::cqueue::buffer_select(c.flags) {
                    st.ring.give(bid);
                }
            }
            slot.live = false;
            slot.armed = false;
            slot.queue.taken = 0;
            slot.waker = None;
            slot.generation = (slot.generation + 1) & GEN_MASK as u32;
            st.free.push(self.index as usize);
            armed
        });
        if armed {
            // The receive holds the socket open in the kernel: cancel it (its last completion
            // is stale by now, and its buffer goes back to the ring).
            let cancel = opcode::AsyncCancel::new(self.user_data())
                .build()
                .user_data(u64::MAX);
            let _ = push(&cancel);
        }
    }
}

/// [`Multishot::ready`]'s future.
pub struct Ready<'a> {
    ms: &'a Multishot,
}

impl Future for Ready<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        STATE.with_borrow_mut(|s| {
            let Some(slot) = s
                .as_mut()
                .and_then(|st| st.slots.get_mut(self.ms.index as usize))
            else {
                return Poll::Ready(());
            };
            if slot.queue.is_empty() {
                match &slot.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => slot.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
    }
}

/// Ends this thread's multishot receives before its runtime goes: unregisters the buffer ring
/// (the kernel picks no buffer from it afterwards) and frees it. Call it inside the runtime,
/// after the last connection is dropped; without it the ring's memory is kept for the process.
pub fn teardown() {
    let Some(st) = STATE.with_borrow_mut(Option::take) else {
        return;
    };
    AVAILABLE.set(Availability::Unknown);
    set_raw_handler(None);
    // SAFETY: only unregisters the group; nothing is pushed or consumed.
    let unregistered = unsafe {
        with_raw_ring(|uring: &mut io_uring::IoUring| uring.submitter().unregister_buf_ring(GROUP))
    };
    if matches!(unregistered, Some(Ok(()))) {
        // SAFETY: the kernel no longer holds the group, so nothing writes the mappings; they
        // were made by `BufRing::new` with these sizes.
        unsafe {
            libc::munmap(st.ring.entries.cast(), st.ring.map_bytes.0);
            libc::munmap(st.ring.buffers.cast(), st.ring.map_bytes.1);
        }
    }
    // Otherwise the mappings are kept: the kernel may still write them.
    std::mem::forget(st.msghdr);
}

#[cfg(test)]
mod size_tests {
    /// A connection's slot lives for as long as its connection, so one per in-flight stream:
    /// it keeps its first queued completion inline and allocates nothing for a paced stream
    /// (#41: 72 bytes, and a 32-byte `VecDeque` buffer from the first completion on).
    #[test]
    fn a_slot_keeps_its_first_completion_inline() {
        let size = std::mem::size_of::<super::Slot>();
        assert!(size <= 48, "a multishot slot is {size} bytes");
        let mut q = super::Queue::default();
        for res in 0..3 {
            q.push_back(super::Completion { res, flags: 0 });
        }
        assert_eq!(q.pop_front().map(|c| c.res), Some(0));
        assert_eq!(q.iter().map(|c| c.res).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(q.drain().map(|c| c.res).collect::<Vec<_>>(), [1, 2]);
        assert!(q.is_empty());
        q.push_back(super::Completion { res: 7, flags: 0 });
        assert!(q.rest.as_ref().is_some_and(|r| r.is_empty()));
        assert_eq!(q.pop_front().map(|c| c.res), Some(7));
        assert!(q.pop_front().is_none());
    }
}
