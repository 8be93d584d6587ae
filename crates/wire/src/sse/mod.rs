//! Server-sent events, without I/O: message framing over a growing body, and message fields.
//!
//! The worker appends decoded body bytes to one buffer and asks the [`Framer`] for the spans of
//! the messages that are now complete; a span is all it stores per event (with the read's
//! timestamp). [`message_data`] reads the fields of one span later, on the aggregator, as
//! AIPerf does (what JSON text it carries, whether it is `[DONE]` or an error).
//!
//! Lines end with `\n`, `\r\n` or `\r` (the SSE standard); a message ends at a blank line. One
//! UTF-8 byte order mark at the very start of the stream is dropped, as the standard's decoder
//! drops it (it would otherwise be part of the first field's name).
//! AIPerf only splits on `\n\n` and `\r\n\r\n` (docs/endpoints.md); a stream it splits is split the
//! same way here.

use std::ops::Range;

mod message;
#[cfg(test)]
mod naive;
#[cfg(test)]
mod tests;

pub use message::{DataRef, MessageData, message_data};

/// Incremental message framer over a body buffer that only grows (or is compacted through
/// [`Framer::compact`]).
///
/// Each byte is looked at a bounded number of times, so the total work is linear in the body
/// size however the body arrives. Messages made only of whitespace are skipped, as AIPerf skips
/// messages that are empty once stripped.
#[derive(Clone, Debug, Default)]
pub struct Framer {
    /// Start of the line not yet complete.
    /// INVARIANT: `line_start <= scan` and every byte of `line_start..scan` is not CR or LF.
    line_start: usize,
    /// Where the search for the next line terminator resumes.
    scan: usize,
    /// Start of the first line of the message being read, when `in_message` (a position and a
    /// flag, not an `Option<usize>`: the flag packs with the others, and a streaming request
    /// keeps its framer for as long as the response takes, #41).
    msg_start: usize,
    /// A message has started.
    in_message: bool,
    /// End of the content of the last complete line of the message being read.
    msg_end: usize,
    /// The message being read has a byte that is not ASCII whitespace.
    has_content: bool,
    /// The last line ended with a CR at the very end of the body seen so far: an LF arriving
    /// next is the second half of that CRLF, not an empty line.
    pending_cr: bool,
    /// [`Framer::finish`] has returned the trailing data.
    finished: bool,
    /// The start of the stream has been checked for a byte order mark (and one skipped).
    bom_checked: bool,
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Framer {
    /// A framer at the start of a body.
    pub fn new() -> Framer {
        Framer::default()
    }

    /// The span of the next complete message in `body`, or `None` until more bytes arrive.
    ///
    /// `body` must be the same buffer as in earlier calls, possibly longer. The span excludes
    /// the line terminator of its last line and the blank line after it. Call repeatedly until
    /// `None` after each append.
    pub fn next_message(&mut self, body: &[u8]) -> Option<Range<usize>> {
        if self.finished || !self.check_bom(body) {
            return None;
        }
        loop {
            if self.pending_cr {
                match body.get(self.scan) {
                    None => return None,
                    Some(b'\n') => {
                        self.scan += 1;
                        self.line_start = self.scan;
                    }
                    Some(_) => {}
                }
                self.pending_cr = false;
            }
            let haystack = body.get(self.scan..)?;
            let Some(offset) = memchr::memchr2(b'\n', b'\r', haystack) else {
                self.scan = body.len();
                return None;
            };
            let term = self.scan + offset;
            let next = match (body.get(term), body.get(term + 1)) {
                (Some(b'\r'), Some(b'\n')) => term + 2,
                (Some(b'\r'), None) => {
                    self.pending_cr = true;
                    term + 1
                }
                _ => term + 1,
            };
            let line = self.line_start..term;
            self.scan = next;
            self.line_start = next;
            if line.is_empty() {
                if let Some(start) = self.take_msg_start() {
                    let has_content = std::mem::take(&mut self.has_content);
                    if has_content {
                        return Some(start..self.msg_end);
                    }
                }
            } else {
                if !self.in_message {
                    self.in_message = true;
                    self.msg_start = line.start;
                }
                self.msg_end = line.end;
                if !self.has_content {
                    self.has_content = body.get(line).is_some_and(has_non_whitespace);
                }
            }
        }
    }

    /// At end of stream: the remaining complete messages one per call, then the trailing data
    /// that has no final blank line (unless it is all whitespace), then `None`.
    pub fn finish(&mut self, body: &[u8]) -> Option<Range<usize>> {
        // A stream that ends inside what could have been a byte order mark had none.
        self.bom_checked |= body.len() < BOM.len();
        if let Some(message) = self.next_message(body) {
            return Some(message);
        }
        if self.finished {
            return None;
        }
        self.finished = true;
        let partial = self.line_start..body.len();
        let partial_has_content = body.get(partial.clone()).is_some_and(has_non_whitespace);
        let start = self.msg_start().unwrap_or(partial.start);
        let end = if partial.is_empty() {
            self.msg_end
        } else {
            partial.end
        };
        (self.has_content || partial_has_content).then_some(start..end)
    }

    /// Whether the start of the stream is known: a byte order mark there skipped, or none;
    /// `false` while `body` is still a proper prefix of one.
    fn check_bom(&mut self, body: &[u8]) -> bool {
        if self.bom_checked {
            return true;
        }
        if body.len() < BOM.len() && BOM.starts_with(body) {
            return false;
        }
        self.bom_checked = true;
        if body.starts_with(BOM) {
            self.line_start = BOM.len();
            self.scan = BOM.len();
        }
        true
    }

    /// The first offset of `body` the framer still needs; bytes before it may be dropped with
    /// [`Framer::compact`] once the caller is done with the spans already returned.
    pub fn retained_from(&self) -> usize {
        self.msg_start().unwrap_or(self.line_start)
    }

    /// Start of the first line of the message being read, if one has started.
    fn msg_start(&self) -> Option<usize> {
        self.in_message.then_some(self.msg_start)
    }

    /// [`Framer::msg_start`], the message ending.
    fn take_msg_start(&mut self) -> Option<usize> {
        let start = self.msg_start();
        self.in_message = false;
        start
    }

    /// Drops the bytes of `body` before [`Framer::retained_from`], shifting the framer's
    /// positions to match. Returns how many bytes were dropped; spans returned earlier are
    /// invalid afterwards.
    pub fn compact(&mut self, body: &mut Vec<u8>) -> usize {
        let n = self.retained_from().min(body.len());
        body.drain(..n);
        self.line_start -= n;
        self.scan = self.scan.saturating_sub(n);
        if self.in_message {
            self.msg_start -= n;
        }
        self.msg_end = self.msg_end.saturating_sub(n);
        n
    }
}

fn has_non_whitespace(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| !b.is_ascii_whitespace())
}
