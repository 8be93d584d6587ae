//! Test oracle: SSE message spans of a whole body, computed the obvious way.
//!
//! Split the body into lines (`\r\n`, `\r` or `\n`), cut the line list at blank lines, and keep
//! each group that has a non-whitespace byte, spanning its first line's start to its last
//! line's end. A last group without a closing blank line is included too (what
//! [`super::Framer::finish`] returns). A leading UTF-8 byte order mark is skipped first.

use std::ops::Range;

/// Every message span of `body`, trailing data included.
pub(crate) fn messages(body: &[u8]) -> Vec<Range<usize>> {
    let mut lines = Vec::new();
    // One byte order mark at the start is not part of the stream's text.
    let mut start = if body.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut i = start;
    while i < body.len() {
        match body[i] {
            b'\r' if body.get(i + 1) == Some(&b'\n') => {
                lines.push(start..i);
                i += 2;
                start = i;
            }
            b'\r' | b'\n' => {
                lines.push(start..i);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < body.len() {
        lines.push(start..body.len());
    }

    let mut out = Vec::new();
    let mut group: Vec<Range<usize>> = Vec::new();
    for line in lines.into_iter().chain(std::iter::once(0..0)) {
        if line.is_empty() {
            if let (Some(first), Some(last)) = (group.first(), group.last()) {
                let span = first.start..last.end;
                if body[span.clone()].iter().any(|b| !b.is_ascii_whitespace()) {
                    out.push(span);
                }
            }
            group.clear();
        } else {
            group.push(line);
        }
    }
    out
}
