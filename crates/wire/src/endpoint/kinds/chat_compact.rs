//! The chat compactor: on the worker, the text delta of one streamed `chat.completion.chunk`
//! SSE message, read by a strict single-pass scan instead of the full parser.
//!
//! The scan recognizes the common chunk shape only: one `data:` line holding a JSON object
//! whose `object` is `"chat.completion.chunk"`, one choice with a `delta` object, `usage` absent
//! or `null`, no `tool_calls`, no `\u` escape and no control byte anywhere, integers of at most 18 digits and no
//! floats, no key written with escapes, no repeated key the parser reads. Anything else is
//! declined (`None`) and the worker keeps the raw message for the aggregator's full parser
//! ([`super::chat::parse`]), so a declined message costs a copy and never a wrong answer. What
//! the scan accepts is valid JSON that the full parser reads the same way: the property tests
//! below check that on generated and real chunks.
//!
//! The same scan reads a whole non-streamed `chat.completion` body on the aggregator
//! ([`completion`]): one choice with a `message` object, no tool calls (`[]` is none), and a
//! `usage` that is absent, `null` or holds only `prompt_tokens`, `completion_tokens`,
//! `total_tokens` (counts) and `null` `*_tokens_details`, as vLLM sends it. Anything else is
//! left to the full parser, so the fast path is never a different answer, only a cheaper one.

use std::borrow::Cow;

use crate::endpoint::response::ParsedResponse;
use crate::record::{EventForm, Usage};

/// Nesting depth of skipped values beyond which the scan declines.
const MAX_DEPTH: u32 = 32;

/// Extracts one SSE message: appends its reasoning then content text to `text` and says what
/// the appended bytes are (their start is `text`'s length before the call). `None`: not the
/// common shape (the caller truncates `text` back and keeps the raw message).
pub(super) fn compact(message: &[u8], text: &mut Vec<u8>) -> Option<EventForm> {
    let msg = message.trim_ascii();
    if memchr::memchr2(b'\n', b'\r', msg).is_some() {
        return None;
    }
    let value = msg.strip_prefix(b"data:")?.trim_ascii();
    if value.is_empty() || value == b"[DONE]" {
        // `message_data` skips both for chat (`sse_done_is_text` is false).
        return Some(EventForm::Empty);
    }
    let (delta, _) = scan_whole(value, Shape::Chunk)?;
    let start = text.len();
    let reasoning = delta.reasoning_content.filter(|r| !r.is_empty());
    let reasoning = reasoning.or(delta.reasoning.filter(|r| !r.is_empty()));
    let content = delta.content.filter(|c| !c.is_empty());
    if let Some(r) = reasoning {
        unescape(value.get(r.start..r.end)?, r.escaped, text)?;
        let split = u32::try_from(text.len() - start).ok()?;
        if let Some(c) = content {
            unescape(value.get(c.start..c.end)?, c.escaped, text)?;
        }
        Some(EventForm::Reasoning {
            split,
            content: content.is_some(),
        })
    } else if let Some(c) = content {
        unescape(value.get(c.start..c.end)?, c.escaped, text)?;
        Some(EventForm::Text)
    } else {
        Some(EventForm::Empty)
    }
}

/// Reads a whole `chat.completion` body of the common shape into `out` as the full parser
/// ([`super::chat::parse_full`]) would: its usage, then its reasoning and content. `false`
/// (and `out` untouched): not the common shape, the full parser must read it.
pub(super) fn completion(json: &[u8], stamp_ns: u64, out: &mut ParsedResponse) -> bool {
    completion_parts(json).is_some_and(|(usage, reasoning, content)| {
        let usage_completion = usage.map(|u| {
            let completion = u.completion_tokens;
            out.usage = Some(u);
            completion
        });
        let before = out.content_responses();
        if let Some(r) = reasoning {
            out.add_reasoning(stamp_ns, &r, content.as_deref());
        } else if let Some(c) = content {
            out.add_text(stamp_ns, &c);
        }
        // As the full parser: the usage of a body that was a content response.
        if let Some(c) = usage_completion
            && out.content_responses() > before
        {
            out.content_usage(c);
        }
        true
    })
}

/// A body's usage (when sent), non-empty reasoning and non-empty content, if the scan takes it.
type CompletionParts<'a> = (Option<Usage>, Option<Cow<'a, str>>, Option<Cow<'a, str>>);

fn completion_parts(json: &[u8]) -> Option<CompletionParts<'_>> {
    let value = json.trim_ascii();
    let (message, usage) = scan_whole(value, Shape::Completion)?;
    let text = |span: Option<StrSpan>| -> Option<Option<Cow<'_, str>>> {
        let Some(span) = span.filter(|sp| !sp.is_empty()) else {
            return Some(None);
        };
        let inside = value.get(span.start..span.end)?;
        if !span.escaped {
            return Some(Some(Cow::Borrowed(std::str::from_utf8(inside).ok()?)));
        }
        let mut buf = Vec::with_capacity(inside.len());
        unescape(inside, true, &mut buf)?;
        Some(Some(Cow::Owned(String::from_utf8(buf).ok()?)))
    };
    let reasoning = match text(message.reasoning_content)? {
        Some(r) => Some(r),
        None => text(message.reasoning)?,
    };
    let content = text(message.content)?;
    Some((usage, reasoning, content))
}

/// Scans `value` (trimmed) as one response object of `shape` with nothing after it.
fn scan_whole(value: &[u8], shape: Shape) -> Option<(DeltaSpans, Option<Usage>)> {
    if value.first() != Some(&b'{') {
        return None;
    }
    // The full parser rejects invalid UTF-8; validating once makes every string slice valid.
    // A control byte (a tab between tokens is valid JSON, but rare) declines, so strings need
    // no check of their own (one branch-free pass).
    std::str::from_utf8(value).ok()?;
    if value.iter().fold(0u8, |acc, &c| acc | u8::from(c < 0x20)) != 0 {
        return None;
    }
    let mut s = Scan { b: value, i: 0 };
    let parts = s.object(shape)?;
    s.ws();
    (s.i == value.len()).then_some(parts)
}

/// A JSON string's inside (between its quotes) in the scanned value.
#[derive(Clone, Copy, Debug)]
struct StrSpan {
    start: usize,
    end: usize,
    /// It holds a (simple) escape.
    escaped: bool,
}

impl StrSpan {
    fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The delta fields the chat parser reads (`Some`: a string was sent; `null` is `None`).
#[derive(Default)]
struct DeltaSpans {
    content: Option<StrSpan>,
    reasoning_content: Option<StrSpan>,
    reasoning: Option<StrSpan>,
}

/// Which response object a scan reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A streamed `chat.completion.chunk`: `choices[0].delta`, `usage` absent or `null`.
    Chunk,
    /// A whole `chat.completion`: `choices[0].message`, `usage` of simple counts allowed.
    Completion,
}

impl Shape {
    fn object(self) -> &'static [u8] {
        match self {
            Shape::Chunk => b"chat.completion.chunk",
            Shape::Completion => b"chat.completion",
        }
    }

    fn choice_key(self) -> &'static [u8] {
        match self {
            Shape::Chunk => b"delta",
            Shape::Completion => b"message",
        }
    }
}

/// A strict JSON scanner over one value.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string with simple escapes only (`\u` declines).
    fn string(&mut self) -> Option<StrSpan> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let rest = self.b.get(self.i..)?;
            // No control byte is left in the value (checked up front).
            let at = memchr::memchr2(b'"', b'\\', rest)?;
            self.i += at;
            if rest[at] == b'"' {
                let end = self.i;
                self.i += 1;
                return Some(StrSpan {
                    start,
                    end,
                    escaped,
                });
            }
            match self.b.get(self.i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                _ => return None,
            }
            escaped = true;
        }
    }

    /// An object key with no escape.
    fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.string()?;
        self.eat(b':')?;
        if k.escaped {
            return None;
        }
        let b: &'a [u8] = self.b;
        b.get(k.start..k.end)
    }

    /// A string or `null`.
    fn opt_string(&mut self) -> Option<Option<StrSpan>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.string().map(Some)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// An integer of at most 18 digits (no fraction, no exponent).
    fn integer(&mut self) -> Option<()> {
        self.ws();
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = self.b.get(self.i..)?;
        let n = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 18 || (n > 1 && digits[0] == b'0') {
            return None;
        }
        self.i += n;
        match self.b.get(self.i) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(()),
        }
    }

    /// Any value, validated and skipped.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.i += 1;
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.eat(b':')?;
                    self.skip(depth + 1)?;
                    if self.eat(b',').is_none() {
                        return self.eat(b'}');
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b',').is_none() {
                        return self.eat(b']');
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.integer(),
        }
    }

    /// The members of an object (after its `{`), each key handed to `member`, which consumes
    /// the value.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let k = self.key()?;
            member(self, k)?;
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    /// A non-negative integer of at most 18 digits: its value.
    fn count(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        if self.b.get(start) == Some(&b'-') {
            return None;
        }
        self.integer()?;
        std::str::from_utf8(self.b.get(start..self.i)?)
            .ok()?
            .parse()
            .ok()
    }

    /// The whole response object: its delta's (or message's) spans and, for a completion, its
    /// usage when a non-empty `usage` object was sent.
    fn object(&mut self, shape: Shape) -> Option<(DeltaSpans, Option<Usage>)> {
        self.eat(b'{')?;
        let (mut object, mut choices, mut usage, mut counts) = (false, None, false, None);
        let b = self.b;
        self.members(|s, k| match k {
            b"object" if !object => {
                object = true;
                let v = s.string()?;
                (!v.escaped && b.get(v.start..v.end)? == shape.object()).then_some(())
            }
            b"choices" if choices.is_none() => {
                s.eat(b'[')?;
                choices = Some(s.choice(shape)?);
                s.eat(b']')
            }
            b"usage" if !usage => {
                usage = true;
                if shape == Shape::Chunk || s.peek()? == b'n' {
                    return s.literal(b"null");
                }
                counts = s.usage()?;
                Some(())
            }
            // The response-root `metrics` (speculative-decoding stats) is the full parser's,
            // but for vLLM's usual `"metrics": null`.
            b"metrics" if s.peek()? == b'n' => s.literal(b"null"),
            b"object" | b"choices" | b"usage" | b"metrics" => None,
            _ => s.skip(1),
        })?;
        if !object {
            return None;
        }
        Some((choices?, counts))
    }

    /// The one choice object: its delta (or message).
    fn choice(&mut self, shape: Shape) -> Option<DeltaSpans> {
        self.eat(b'{')?;
        let mut delta = None;
        self.members(|s, k| match k {
            k if k == shape.choice_key() && delta.is_none() => {
                delta = Some(s.delta(shape)?);
                Some(())
            }
            b"delta" | b"message" | b"text" => None,
            _ => s.skip(2),
        })?;
        delta
    }

    /// A delta (or message) object's text fields. Tool calls decline, but for a completion's
    /// empty `tool_calls` list (no tool-call text).
    fn delta(&mut self, shape: Shape) -> Option<DeltaSpans> {
        self.eat(b'{')?;
        let mut d = DeltaSpans::default();
        let mut seen = [false; 4];
        self.members(|s, k| {
            let (slot, field) = match k {
                b"content" => (0, &mut d.content),
                b"reasoning_content" => (1, &mut d.reasoning_content),
                b"reasoning" => (2, &mut d.reasoning),
                b"tool_calls" if shape == Shape::Completion => {
                    if std::mem::replace(&mut seen[3], true) {
                        return None;
                    }
                    s.eat(b'[')?;
                    return s.eat(b']');
                }
                b"tool_calls" => return None,
                _ => return s.skip(3),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            *field = s.opt_string()?;
            Some(())
        })?;
        Some(d)
    }

    /// A completion's `usage` object (after the scan saw it is not `null`): the three counts,
    /// and `null` details; any other member declines. `None` inside: an empty object (not
    /// sent, for AIPerf).
    fn usage(&mut self) -> Option<Option<Usage>> {
        self.eat(b'{')?;
        let mut u = Usage::default();
        let mut seen = [false; 5];
        let mut any = false;
        self.members(|s, k| {
            any = true;
            let slot = match k {
                b"prompt_tokens" => 0,
                b"completion_tokens" => 1,
                b"total_tokens" => 2,
                b"prompt_tokens_details" => 3,
                b"completion_tokens_details" => 4,
                _ => return None,
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            match slot {
                0 => u.prompt_tokens = Some(s.count()?),
                1 => u.completion_tokens = Some(s.count()?),
                2 => u.total_tokens = Some(s.count()?),
                _ => s.literal(b"null")?,
            }
            Some(())
        })?;
        Some(any.then_some(u))
    }
}

/// Appends the text of a JSON string's inside, resolving its simple escapes.
fn unescape(inside: &[u8], escaped: bool, out: &mut Vec<u8>) -> Option<()> {
    if !escaped {
        out.extend_from_slice(inside);
        return Some(());
    }
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'\\', inside.get(i..)?) {
        out.extend_from_slice(inside.get(i..i + at)?);
        let c = match inside.get(i + at + 1)? {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'b' => 0x08,
            b'f' => 0x0c,
            c @ (b'"' | b'\\' | b'/') => *c,
            _ => return None,
        };
        out.push(c);
        i += at + 2;
    }
    out.extend_from_slice(inside.get(i..)?);
    Some(())
}

#[cfg(test)]
#[path = "chat_compact_tests.rs"]
mod tests;
