//! Keep-alive connections with their reusable buffers, one idle list per slot. A worker keys the
//! slots by base URL; the scraper keeps one pool per endpoint, with a single slot.

use std::cell::RefCell;

use super::tls::Stream;

/// One connection with its reusable buffers.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) stream: Stream,
    /// Bytes read and not yet decoded. Empty whenever the connection is idle in a pool.
    pub(super) rbuf: Vec<u8>,
    /// The request being written.
    pub(super) wbuf: Vec<u8>,
    /// The socket's local address, read once when it connected (`None`: unknown).
    pub(super) local: Option<std::net::SocketAddr>,
    /// The socket has kernel receive stamps enabled.
    pub(super) kernel_stamps: bool,
}

/// Idle connections of one owner (single-threaded: the owner's tasks share it, and no borrow is
/// held across an await).
#[derive(Debug)]
pub struct Pool {
    /// `idle[slot]`: connections to that slot's address, most recently used last.
    idle: RefCell<Vec<Vec<Conn>>>,
    /// Initial read buffer of a new connection (it grows only while a large head is partial).
    read_buf_bytes: usize,
}

impl Pool {
    /// A pool of `slots` idle lists whose connections start with a `read_buf_bytes` buffer.
    #[must_use]
    pub fn new(slots: usize, read_buf_bytes: usize) -> Self {
        Self {
            idle: RefCell::new((0..slots).map(|_| Vec::new()).collect()),
            read_buf_bytes,
        }
    }

    /// Drops every idle connection (after the address behind the pool changed).
    pub fn clear(&self) {
        for list in self.idle.borrow_mut().iter_mut() {
            list.clear();
        }
    }

    /// A new connection around `stream`, with this pool's buffers.
    pub(super) fn wrap(&self, stream: Stream, local: Option<std::net::SocketAddr>) -> Conn {
        Conn {
            stream,
            local,
            kernel_stamps: false,
            rbuf: Vec::with_capacity(self.read_buf_bytes),
            wbuf: Vec::new(),
        }
    }

    /// How many connections of `slot` are idle.
    pub fn idle(&self, slot: usize) -> usize {
        self.idle.borrow().get(slot).map_or(0, Vec::len)
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
    }
}
