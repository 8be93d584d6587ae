//! Per-worker keep-alive connections, one idle list per base URL.

use std::cell::RefCell;

use monoio::net::TcpStream;

/// Initial read buffer of a connection (it grows only while a large response head is partial).
const READ_BUF_BYTES: usize = 16 * 1024;

/// One connection with its reusable buffers.
#[derive(Debug)]
pub(crate) struct Conn {
    pub stream: TcpStream,
    pub rbuf: Vec<u8>,
    pub wbuf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            rbuf: Vec::with_capacity(READ_BUF_BYTES),
            wbuf: Vec::new(),
        }
    }
}

/// Idle connections of one worker (single-threaded: the worker's tasks share it).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    idle: RefCell<Vec<Vec<Conn>>>,
}

impl Pool {
    pub fn new(urls: usize) -> Self {
        Self {
            idle: RefCell::new((0..urls).map(|_| Vec::new()).collect()),
        }
    }

    /// An idle connection to URL `url`, most recently used first.
    pub fn take(&self, url: usize) -> Option<Conn> {
        self.idle.borrow_mut().get_mut(url).and_then(Vec::pop)
    }

    pub fn put(&self, url: usize, conn: Conn) {
        if let Some(list) = self.idle.borrow_mut().get_mut(url) {
            list.push(conn);
        }
    }
}
