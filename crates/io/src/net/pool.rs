//! Keep-alive connections, one idle list per slot. A worker keys the
//! slots by base URL; the scraper keeps one pool per endpoint, with a single slot.

use std::cell::RefCell;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::rc::Rc;

use super::tls::Stream;
use super::waiters::{Wait, Waiters};

/// One connection with its read buffer.
#[derive(Debug)]
pub(super) struct Conn {
    /// The connection's multishot receive (a kernel-stamped plain connection on io_uring);
    /// dropped, and so cancelled, before the socket closes.
    pub(super) multishot: Option<super::multishot::Multishot>,
    pub(super) stream: Stream,
    /// Bytes read and not yet decoded. Empty whenever the connection is idle in a pool.
    pub(super) rbuf: Vec<u8>,
    /// The socket's local address, read once when it connected.
    pub(super) local: LocalAddr,
    /// The socket has kernel receive stamps enabled.
    pub(super) kernel_stamps: bool,
    /// Counts the connection among its pool's open ones while it lives.
    _open: OpenGuard,
}

/// A connection's local address, kept for as long as it lives: an IPv4 address inline, an
/// IPv6 one boxed (#41: an `Option<SocketAddr>` is 32 bytes a connection, this 16).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum LocalAddr {
    /// Unknown (`getsockname` failed).
    #[default]
    Unknown,
    V4(SocketAddrV4),
    V6(Box<SocketAddrV6>),
}

impl LocalAddr {
    pub(super) fn new(addr: Option<SocketAddr>) -> Self {
        match addr {
            None => Self::Unknown,
            Some(SocketAddr::V4(a)) => Self::V4(a),
            Some(SocketAddr::V6(a)) => Self::V6(Box::new(a)),
        }
    }

    pub(super) fn get(&self) -> Option<SocketAddr> {
        match self {
            Self::Unknown => None,
            Self::V4(a) => Some(SocketAddr::V4(*a)),
            Self::V6(a) => Some(SocketAddr::V6(**a)),
        }
    }
}

/// One open connection of a pool: counted from the start of its connect to its drop (a failed
/// connect drops it at once), idle or in use. Its drop frees a place: one waiter is woken.
#[derive(Debug)]
pub(super) struct OpenGuard {
    /// The pool's waiters, which keep its count of open connections (one reference, not one
    /// for the count and one for the waiters: every connection keeps its guard).
    waiters: Rc<Waiters>,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let open = &self.waiters.count;
        open.set(open.get().saturating_sub(1));
        self.waiters.notify_one();
    }
}

/// Idle connections of one owner (single-threaded: the owner's tasks share it, and no borrow is
/// held across an await).
#[derive(Debug)]
pub struct Pool {
    /// `idle[slot]`: connections to that slot's address, most recently used last.
    idle: RefCell<Vec<Vec<Conn>>>,
    /// Initial read buffer of a new connection (it grows only while a large head is partial).
    read_buf_bytes: usize,
    /// Most connections open at once; a fresh connect waits while this many are.
    limit: usize,
    /// Requests waiting for a connection while the pool is at its limit, and (its `count`)
    /// the connections made by this pool that are still open (idle here or in use).
    waiters: Rc<Waiters>,
}

impl Pool {
    /// A pool of `slots` idle lists whose connections read at most `read_buf_bytes` at once.
    #[must_use]
    pub fn new(slots: usize, read_buf_bytes: usize) -> Self {
        Self {
            idle: RefCell::new((0..slots).map(|_| Vec::new()).collect()),
            read_buf_bytes,
            limit: usize::MAX,
            waiters: Rc::default(),
        }
    }

    /// The same pool, holding at most `limit` connections open at once (at least 1).
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// Connections made by this pool and still open, idle or in use.
    pub fn open(&self) -> usize {
        self.waiters.count.get()
    }

    /// As many connections are open as the limit allows: a fresh connect must wait.
    pub fn at_limit(&self) -> bool {
        self.waiters.count.get() >= self.limit
    }

    /// How many more connections the limit allows.
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.waiters.count.get())
    }

    /// Drops every idle connection (after the address behind the pool changed).
    pub fn clear(&self) {
        for list in self.idle.borrow_mut().iter_mut() {
            list.clear();
        }
    }

    /// Counts a connection about to be opened among the open ones (before its connect, so
    /// that connects in progress count against the limit too).
    pub(super) fn reserve(&self) -> OpenGuard {
        self.waiters.count.set(self.waiters.count.get() + 1);
        OpenGuard {
            waiters: self.waiters.clone(),
        }
    }

    /// Waits for the next connection to come back idle or to close (the caller looks again:
    /// another waiter may have been quicker only if it was woken first).
    pub(super) fn wait(&self) -> Wait {
        Wait::new(&self.waiters)
    }

    /// A new connection around `stream`, counted by `open` (from
    /// [`Pool::reserve`]).
    pub(super) fn wrap(&self, stream: Stream, local: Option<SocketAddr>, open: OpenGuard) -> Conn {
        Conn {
            _open: open,
            multishot: None,
            stream,
            local: LocalAddr::new(local),
            kernel_stamps: false,
            // Allocated at the connection's first read into it (a kernel-stamped plain
            // connection reads into its thread's buffer instead).
            rbuf: Vec::new(),
        }
    }

    /// The most a connection reads at once, and the size of its own read buffer when it
    /// needs one.
    pub(super) fn read_buf_bytes(&self) -> usize {
        self.read_buf_bytes
    }

    /// How many connections of `slot` are idle.
    pub fn idle(&self, slot: usize) -> usize {
        self.idle.borrow().get(slot).map_or(0, Vec::len)
    }

    /// Closes the least recently used idle connection of another slot than `slot`, if there is
    /// one: at the limit, a request to one address must not wait forever behind connections
    /// idle to another. Returns whether one was closed.
    pub(super) fn evict_other(&self, slot: usize) -> bool {
        let evicted = {
            let mut idle = self.idle.borrow_mut();
            idle.iter_mut()
                .enumerate()
                .filter(|(s, list)| *s != slot && !list.is_empty())
                .map(|(_, list)| list.remove(0))
                .next()
        };
        // Dropped outside the borrow: its guard wakes a waiter.
        evicted.is_some()
    }

    /// An idle connection of `slot`, most recently used first.
    pub(super) fn take(&self, slot: usize) -> Option<Conn> {
        self.idle.borrow_mut().get_mut(slot).and_then(Vec::pop)
    }

    /// Keeps `conn` for reuse by a later exchange on `slot`.
    pub(super) fn put(&self, slot: usize, conn: Conn) {
        if let Some(list) = self.idle.borrow_mut().get_mut(slot) {
            list.push(conn);
        }
        // A connection is idle (or, for a slot the pool does not have, dropped: its guard
        // notified already).
        self.waiters.notify_one();
    }
}

#[cfg(test)]
mod size_tests {
    /// A connection lives for as long as its stream, in the future of the request it carries:
    /// its multishot receive is two `u32`s and a descriptor, its local address compact, its
    /// pool guard one reference (#41: 128 bytes with a `usize` index and a `u64` user data,
    /// an `Option<SocketAddr>` and two references).
    #[test]
    fn a_connection_stays_small() {
        let size = std::mem::size_of::<super::Conn>();
        assert!(size <= 88, "a connection is {size} bytes");
    }

    #[test]
    fn a_local_address_round_trips() {
        for a in [None, Some("127.0.0.3:4242"), Some("[::1]:9")] {
            let addr = a.map(|a| a.parse().unwrap());
            assert_eq!(super::LocalAddr::new(addr).get(), addr);
        }
    }
}
