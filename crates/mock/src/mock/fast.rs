//! The fast mode's thread state ([`super::MockConfig::fast`]): a mock that costs less per token
//! event than a client, so a benchmark of one client core measures the client.
//!
//! [`FrameCache`], one per server thread: the bytes of a stream's opening (head, role chunk) and
//! of each token event, HTTP-chunk framed, built once per response shape and copied from then
//! on. Only the closing events (finish, usage with the request's prompt count, `[DONE]`) are
//! built per request. (The thread's one timer for its paced streams, once the fast mode's, now
//! paces every mode on io_uring: [`ringperf_io::timer::TimerQueue`].)
//!
//! What the fast mode changes in the answer, so the bytes can be shared: every streamed response
//! of a shape carries the same id and `created`, and the reply words are the same sequence
//! whatever the body (the seed still picks them). The truth log is unchanged: each write is
//! stamped just before it goes, and the reply text is kept under `record_bodies`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// What makes two streamed responses' opening and token events the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FrameKey {
    /// The endpoint, as `Endpoint as u8`.
    pub(crate) endpoint: u8,
    pub(crate) reasoning_tokens: u64,
    pub(crate) content_tokens: u64,
    pub(crate) tokens_per_event: u64,
    /// The head says `connection: close`.
    pub(crate) close: bool,
}

/// A stream's precomputed bytes: the opening, then each token event (framed as an HTTP chunk)
/// at `events[k]..events[k + 1]` of `bytes`.
#[derive(Debug)]
pub(crate) struct Frames {
    /// `created` of every response built from these frames.
    pub(crate) created: u64,
    /// The opening (head and role chunk) then every token event.
    pub(crate) bytes: Vec<u8>,
    /// Where each token event starts in `bytes`, and (last) where the bytes end; the opening is
    /// `bytes[..events[0]]`.
    pub(crate) events: Vec<usize>,
    /// The reply text (what is not sent on a reasoning channel), for the truth log.
    pub(crate) text: String,
}

impl Frames {
    /// The bytes of the opening.
    pub(crate) fn opening(&self) -> &[u8] {
        self.bytes
            .get(..self.events.first().copied().unwrap_or(0))
            .unwrap_or_default()
    }

    /// The bytes of token events `from..to` (empty when out of range).
    pub(crate) fn events(&self, from: usize, to: usize) -> &[u8] {
        match (self.events.get(from), self.events.get(to)) {
            (Some(&a), Some(&b)) => self.bytes.get(a..b).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Token events in the frames.
    pub(crate) fn count(&self) -> usize {
        self.events.len().saturating_sub(1)
    }
}

/// A thread's frames by shape (at most [`FrameCache::LIMIT`] shapes; then it starts afresh).
#[derive(Default)]
pub(crate) struct FrameCache {
    map: RefCell<HashMap<FrameKey, Rc<Frames>>>,
}

impl FrameCache {
    const LIMIT: usize = 4096;

    /// The frames of `key`, built by `build` the first time.
    pub(crate) fn get_or_build(&self, key: FrameKey, build: impl FnOnce() -> Frames) -> Rc<Frames> {
        if let Some(f) = self.map.borrow().get(&key) {
            return Rc::clone(f);
        }
        let frames = Rc::new(build());
        let mut map = self.map.borrow_mut();
        if map.len() >= Self::LIMIT {
            map.clear();
        }
        map.insert(key, Rc::clone(&frames));
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_slice_by_event() {
        let f = Frames {
            created: 0,
            bytes: b"HEADe0e1e2".to_vec(),
            events: vec![4, 6, 8, 10],
            text: String::new(),
        };
        assert_eq!(f.opening(), b"HEAD");
        assert_eq!(f.count(), 3);
        assert_eq!(f.events(0, 1), b"e0");
        assert_eq!(f.events(1, 3), b"e1e2");
        assert_eq!(f.events(2, 9), b"");
    }
}
