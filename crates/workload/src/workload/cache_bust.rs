//! `--cache-bust` markers (docs/synthetic.md), as AIPerf 0.13 mints them
//! (`timing/strategies/cache_bust.py`, `timing/conversation_source.py`):
//!
//! - the `[rid:…]` targets (`system_prefix`, `system_suffix`, `first_turn_prefix`,
//!   `first_turn_suffix`) give each session its own marker, the first 12 hex digits of
//!   SHA-256 over `"{benchmark_id}:{n}:{n}:{conversation_id}"`, where `n` counts the sessions
//!   the run has started, warmup first (AIPerf's recycle pass and trajectory lane are both that
//!   count for an ordinary session); a prefix marker is `[rid:…]` then a blank line, a suffix
//!   marker a blank line then `[rid:…]`; the session keeps it for every turn and phase;
//! - the `warmup_isolation_*` targets put the constant `[warmup]` and a blank line before the
//!   text of warmup requests only; profiling requests carry nothing.

/// `--cache-bust`: where a marker goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheBust {
    /// No marker (the default).
    #[default]
    None,
    SystemPrefix,
    SystemSuffix,
    FirstTurnPrefix,
    FirstTurnSuffix,
    WarmupIsolationSystem,
    WarmupIsolationFirstTurn,
}

/// Hex digits of the digest a marker keeps (48 bits).
const DIGEST_HEX: usize = 12;

/// The warmup-isolation marker.
pub const WARMUP_MARKER: &str = "[warmup]\n\n";

/// Bytes of the longest marker: `[rid:` + 12 hex + `]` + a blank line.
pub const MARKER_BYTES: usize = 20;

/// A marker's text, held inline (no allocation per session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    bytes: [u8; MARKER_BYTES],
    len: u8,
}

impl Marker {
    /// The marker as the text of a JSON string (its line breaks as `\\n`), inline.
    pub fn json_escaped(&self) -> ([u8; 2 * MARKER_BYTES], usize) {
        let mut out = [0u8; 2 * MARKER_BYTES];
        let mut n = 0;
        for &b in &self.bytes[..usize::from(self.len)] {
            if b == b'\n' {
                out[n..n + 2].copy_from_slice(b"\\n");
                n += 2;
            } else {
                out[n] = b;
                n += 1;
            }
        }
        (out, n)
    }

    /// The marker zero-padded, as a record carries it.
    pub fn padded(&self) -> [u8; MARKER_BYTES] {
        self.bytes
    }

    /// The text of a record's zero-padded marker.
    pub fn text_of(padded: &[u8; MARKER_BYTES]) -> &str {
        let len = padded.iter().position(|&b| b == 0).unwrap_or(MARKER_BYTES);
        std::str::from_utf8(&padded[..len]).unwrap_or("")
    }

    /// The marker's text.
    pub fn as_str(&self) -> &str {
        // The bytes are ASCII, written by `rid` or copied from `WARMUP_MARKER`.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    fn from_ascii(text: &[u8]) -> Self {
        let mut bytes = [0u8; MARKER_BYTES];
        let len = text.len().min(MARKER_BYTES);
        bytes[..len].copy_from_slice(&text[..len]);
        Self {
            bytes,
            len: len as u8,
        }
    }
}

impl CacheBust {
    /// AIPerf's spelling of the target.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::SystemPrefix => "system_prefix",
            Self::SystemSuffix => "system_suffix",
            Self::FirstTurnPrefix => "first_turn_prefix",
            Self::FirstTurnSuffix => "first_turn_suffix",
            Self::WarmupIsolationSystem => "warmup_isolation_system",
            Self::WarmupIsolationFirstTurn => "warmup_isolation_first_turn",
        }
    }

    /// A warmup-only target.
    pub fn warmup_isolation(self) -> bool {
        matches!(
            self,
            Self::WarmupIsolationSystem | Self::WarmupIsolationFirstTurn
        )
    }

    /// The marker goes before the text (else after it).
    pub fn is_prefix(self) -> bool {
        !matches!(self, Self::SystemSuffix | Self::FirstTurnSuffix)
    }

    /// The marker goes into the system message when there is one (else into the first turn).
    pub fn on_system(self) -> bool {
        matches!(
            self,
            Self::SystemPrefix | Self::SystemSuffix | Self::WarmupIsolationSystem
        )
    }

    /// The marker of the `n`-th session of the run (from 0, warmup first), conversation
    /// `conversation_id`, in a run whose benchmark id is `benchmark_id`: `None` when the target
    /// puts none there (`none`; a warmup-isolation target outside warmup).
    pub fn marker(
        self,
        benchmark_id: &str,
        n: u64,
        conversation_id: &str,
        warmup: bool,
    ) -> Option<Marker> {
        match self {
            Self::None => None,
            Self::WarmupIsolationSystem | Self::WarmupIsolationFirstTurn => {
                warmup.then(|| Marker::from_ascii(WARMUP_MARKER.as_bytes()))
            }
            _ => Some(self.rid(&digest(benchmark_id, n, conversation_id))),
        }
    }

    fn rid(self, hex: &[u8; DIGEST_HEX]) -> Marker {
        let mut text = [0u8; MARKER_BYTES];
        let (tag_at, blank_at) = if self.is_prefix() { (0, 18) } else { (2, 0) };
        text[blank_at..blank_at + 2].copy_from_slice(b"\n\n");
        text[tag_at..tag_at + 5].copy_from_slice(b"[rid:");
        text[tag_at + 5..tag_at + 17].copy_from_slice(hex);
        text[tag_at + 17] = b']';
        Marker::from_ascii(&text)
    }
}

/// A run's cache busting: the target, the benchmark id the digests use, and the count of
/// sessions that have taken their marker (the ordinal `n`, warmup first).
#[derive(Debug)]
pub struct Buster {
    pub target: CacheBust,
    pub benchmark_id: String,
    pub sessions: std::sync::atomic::AtomicU64,
}

impl Buster {
    /// The marker of a new session of conversation `conversation_id` (its ordinal taken now),
    /// for the `[rid:…]` targets; `None` for the others.
    pub fn session_marker(&self, conversation_id: &str) -> Option<Marker> {
        if self.target == CacheBust::None || self.target.warmup_isolation() {
            return None;
        }
        let n = (self.sessions).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.target
            .marker(&self.benchmark_id, n, conversation_id, false)
    }
}

/// AIPerf's estimate of a target's marker cost in tokens (`estimate_marker_token_cost`): the
/// mean token count of 8 markers minted for `"estimator"`, rounded half to even; 0 for `none`
/// and the warmup-only targets. A first turn's synthetic prompt is shortened by it when the
/// marker lands on that turn, so the ISL stays `--isl`.
pub fn estimate_tokens(target: CacheBust, count: impl Fn(&str) -> usize) -> u32 {
    if target == CacheBust::None || target.warmup_isolation() {
        return 0;
    }
    let total: usize = (0..8u64)
        .filter_map(|i| target.marker("estimator", i, &format!("estimator-{i}"), false))
        .map(|m| count(m.as_str()))
        .sum();
    // Python's round(): halves go to the even neighbour.
    let (whole, rest) = (total / 8, total % 8);
    let up = rest > 4 || (rest == 4 && whole % 2 == 1);
    (whole + usize::from(up)) as u32
}

/// Where in a chat body (`{"messages":[…]}` as ringperf encodes it) a marker goes: the start
/// (`prefix`) or end of the system message's text (`system`), else of the first text of the
/// body's last user message (the turn's own). `None` when the body has no such text.
pub fn chat_offset(body: &[u8], system: bool, prefix: bool) -> Option<usize> {
    body_offset(
        ringperf_wire::endpoint::EndpointKind::Chat,
        body,
        system,
        prefix,
    )
}

/// [`chat_offset`] for the types that take a marker, as ringperf encodes their bodies: chat's
/// system message; Responses' top-level `instructions` string, its user items' `content`
/// string or first `input_text` part; Anthropic Messages' top-level `system` string and chat's
/// user message shape.
pub fn body_offset(
    kind: ringperf_wire::endpoint::EndpointKind,
    body: &[u8],
    system: bool,
    prefix: bool,
) -> Option<usize> {
    user_offset(kind, body, system, prefix, false)
}

/// [`body_offset`] in the body's first user message (`first`: an agent trace's body, whose
/// messages start with its first turn's) rather than its last (the turn's own).
pub fn user_offset(
    kind: ringperf_wire::endpoint::EndpointKind,
    body: &[u8],
    system: bool,
    prefix: bool,
    first: bool,
) -> Option<usize> {
    use ringperf_wire::endpoint::EndpointKind;
    let role: &[u8] = match (kind, system) {
        (EndpointKind::Responses, true) => br#""instructions":"#,
        (EndpointKind::Messages, true) => br#""system":"#,
        (_, true) => br#"{"role":"system","content":"#,
        (_, false) => br#"{"role":"user","content":"#,
    };
    let part: &[u8] = if kind == EndpointKind::Responses {
        br#"[{"type":"input_text","text":""#
    } else {
        br#"[{"type":"text","text":""#
    };
    let after_role = if system || first {
        memchr::memmem::find(body, role)
    } else {
        memchr::memmem::rfind(body, role)
    }? + role.len();
    let rest = &body[after_role..];
    let text_at = if rest.first() == Some(&b'"') {
        after_role + 1
    } else {
        if !rest.starts_with(part) {
            return None;
        }
        after_role + part.len()
    };
    if prefix {
        return Some(text_at);
    }
    // The closing quote: the first `"` not escaped by a backslash.
    let mut i = text_at;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The first 12 lowercase hex digits of SHA-256 over `"{id}:{n}:{n}:{conversation}"`.
fn digest(benchmark_id: &str, n: u64, conversation_id: &str) -> [u8; DIGEST_HEX] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(benchmark_id.as_bytes());
    let mut num = [0u8; 20];
    let n_text = decimal(n, &mut num);
    for part in [b":".as_slice(), n_text, b":", n_text, b":"] {
        ctx.update(part);
    }
    ctx.update(conversation_id.as_bytes());
    let sum = ctx.finish();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; DIGEST_HEX];
    for (i, byte) in sum.as_ref().iter().take(DIGEST_HEX / 2).enumerate() {
        out[2 * i] = HEX[usize::from(byte >> 4)];
        out[2 * i + 1] = HEX[usize::from(byte & 0x0f)];
    }
    out
}

/// `n` in decimal, written at the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AIPerf 0.13's own markers (tests/data/aiperf-cache-bust): each request's user text began
    /// with the marker its session got; AIPerf exported each session's ordinal in its phase and
    /// its conversation. The run's ordinal counts the warmup's sessions first, so the same
    /// inputs give the same marker here.
    #[test]
    fn markers_are_aiperfs_for_the_same_inputs() {
        let doc: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/data/aiperf-cache-bust/markers.json"
        ))
        .unwrap();
        let id = doc["benchmark_id"].as_str().unwrap();
        let requests = doc["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 9, "3 warmup and 6 profiling sessions");
        let warmup_sessions = requests.iter().filter(|r| r["phase"] == "warmup").count() as u64;
        for r in requests {
            let in_phase = r["session_num"].as_u64().unwrap();
            let n = match r["phase"].as_str() {
                Some("warmup") => in_phase,
                _ => warmup_sessions + in_phase,
            };
            let conv = r["conversation_id"].as_str().unwrap();
            let warmup = r["phase"] == "warmup";
            let m = CacheBust::FirstTurnPrefix
                .marker(id, n, conv, warmup)
                .unwrap();
            let sent = r["user_content_start"].as_str().unwrap();
            assert!(sent.starts_with(m.as_str()), "{sent:?} {:?}", m.as_str());
        }
    }

    /// The marker's form, its digest checked against an independent SHA-256 (Python's
    /// hashlib, run in the test when `python3` is here).
    #[test]
    fn rid_marker_forms_and_digest() {
        let pre = CacheBust::SystemPrefix
            .marker("b1", 7, "session_000003", false)
            .unwrap();
        let suf = CacheBust::FirstTurnSuffix
            .marker("b1", 7, "session_000003", true)
            .unwrap();
        let hex = &pre.as_str()[5..17];
        assert_eq!(pre.as_str(), format!("[rid:{hex}]\n\n"));
        assert_eq!(suf.as_str(), format!("\n\n[rid:{hex}]"));
        assert!(
            hex.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        let py = std::process::Command::new("python3")
            .args([
                "-c",
                "import hashlib;print(hashlib.sha256(b'b1:7:7:session_000003').hexdigest()[:12])",
            ])
            .output();
        if let Ok(out) = py
            .as_ref()
            .map_err(|_| ())
            .and_then(|o| if o.status.success() { Ok(o) } else { Err(()) })
        {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), hex);
        }
        // A different pass, lane or conversation: a different marker.
        let other = CacheBust::SystemPrefix.marker("b1", 8, "session_000003", false);
        assert_ne!(other, Some(pre));
        // Large ordinals are written in full.
        let big = CacheBust::FirstTurnPrefix.marker("b1", u64::MAX, "c", false);
        assert!(big.is_some());
    }

    #[test]
    fn warmup_isolation_marks_warmup_only() {
        for t in [
            CacheBust::WarmupIsolationSystem,
            CacheBust::WarmupIsolationFirstTurn,
        ] {
            assert_eq!(
                t.marker("b", 0, "c", true).unwrap().as_str(),
                "[warmup]\n\n"
            );
            assert_eq!(t.marker("b", 0, "c", false), None);
        }
        assert_eq!(CacheBust::None.marker("b", 0, "c", true), None);
    }
}

#[cfg(test)]
mod splice_tests {
    use super::*;

    /// The offsets in bodies as serde_json writes them, checked by splicing a marker there and
    /// parsing the result.
    #[test]
    fn chat_offsets_land_inside_the_right_text() {
        let body = serde_json::to_vec(&serde_json::json!({"messages": [
            {"role": "system", "content": "sys \"q\" \\ end"},
            {"role": "user", "content": "context"},
            {"role": "user", "content": [{"type": "text", "text": "a\"b"}, {"type": "text", "text": "c"}]}
        ], "model": "m"}))
        .unwrap();
        let put = |at: usize| -> serde_json::Value {
            let mut b = body.clone();
            b.splice(at..at, b"<M>".iter().copied());
            serde_json::from_slice(&b).unwrap()
        };
        let v = put(chat_offset(&body, true, true).unwrap());
        assert_eq!(v["messages"][0]["content"], "<M>sys \"q\" \\ end");
        let v = put(chat_offset(&body, true, false).unwrap());
        assert_eq!(v["messages"][0]["content"], "sys \"q\" \\ end<M>");
        let v = put(chat_offset(&body, false, true).unwrap());
        assert_eq!(v["messages"][2]["content"][0]["text"], "<M>a\"b");
        assert_eq!(v["messages"][1]["content"], "context");
        let v = put(chat_offset(&body, false, false).unwrap());
        assert_eq!(v["messages"][2]["content"][0]["text"], "a\"b<M>");
        assert_eq!(chat_offset(b"{\"prompt\":\"x\"}", false, true), None);
    }

    #[test]
    fn escaped_marker_is_a_json_string_body() {
        let m = CacheBust::FirstTurnSuffix
            .marker("b", 1, "c", false)
            .unwrap();
        let (text, len) = m.json_escaped();
        let quoted = format!("\"{}\"", std::str::from_utf8(&text[..len]).unwrap());
        let back: String = serde_json::from_str(&quoted).unwrap();
        assert_eq!(back, m.as_str());
        assert_eq!(Marker::text_of(&m.padded()), m.as_str());
        let w = CacheBust::WarmupIsolationSystem
            .marker("b", 0, "c", true)
            .unwrap();
        assert_eq!(Marker::text_of(&w.padded()), "[warmup]\n\n");
    }

    /// Python's `round(total / 8)`: halves go to the even neighbour.
    #[test]
    fn estimate_rounds_as_python() {
        assert_eq!(estimate_tokens(CacheBust::FirstTurnPrefix, |_| 10), 10);
        assert_eq!(
            estimate_tokens(CacheBust::WarmupIsolationFirstTurn, |_| 10),
            0
        );
        // Totals 8·k + 4 are halves: 84/8 = 10.5 → 10, 92/8 = 11.5 → 12.
        let counts = std::cell::Cell::new(0usize);
        let half = |total: usize| {
            counts.set(0);
            estimate_tokens(CacheBust::FirstTurnPrefix, |_| {
                let i = counts.get();
                counts.set(i + 1);
                total / 8 + usize::from(i < total % 8)
            })
        };
        assert_eq!(half(84), 10);
        assert_eq!(half(92), 12);
        assert_eq!(half(85), 11);
    }
}
