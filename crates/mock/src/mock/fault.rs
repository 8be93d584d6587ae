//! Fault injection: which misbehaviour a completion request gets, how a fault list is written on
//! the command line, and how one is drawn per request.
//!
//! # Syntax
//!
//! A fault list is comma-separated items `KIND[=ARG][:FRACTION]`, e.g.
//! `reset-before:0.1,status=503:0.2,huge=104857600:0.05`. `FRACTION` is the share of completion
//! requests (0 to 1) that get the fault; it defaults to 1. The fractions of one list may sum to at
//! most 1; the rest of the requests are served normally. Kinds:
//!
//! | item | fault |
//! |---|---|
//! | `reset-before` | [`Fault::ResetBeforeResponse`] |
//! | `reset-mid` | [`Fault::ResetMidStream`] |
//! | `status=CODE` | [`Fault::Status`] (CODE in 400..=599) |
//! | `never-answer` | [`Fault::NeverAnswer`] |
//! | `slow-loris` | [`Fault::SlowLoris`] |
//! | `bad-chunk-size` | [`Fault::BadChunkSize`] |
//! | `garbage-sse` | [`Fault::GarbageSse`] |
//! | `sse-error` | [`Fault::SseErrorEvent`] |
//! | `huge=BYTES` | [`Fault::Huge`] |
//!
//! Each request draws one number from its server thread's seeded generator and walks the list in
//! order, so a given seed, thread count and request order always give the same faults.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Pause between two bytes of a [`Fault::SlowLoris`] response.
pub const SLOW_LORIS_BYTE_INTERVAL: Duration = Duration::from_millis(50);

/// The comment an [`Fault::SseErrorEvent`] carries (the client reports it as the message).
pub const SSE_ERROR_COMMENT: &str = "mock fault: the model backend failed mid-stream";

/// One way to misbehave on a completion request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Fault {
    /// Read the request, then reset the connection (RST) without a response byte.
    ResetBeforeResponse,
    /// Send the head and half of the response (streams: half of the token events, at least
    /// one), then reset the connection.
    ResetMidStream,
    /// Answer with this HTTP status (400..=599) and an OpenAI-shaped JSON error body; the
    /// connection stays usable.
    Status(u16),
    /// Never answer: read and discard until the client closes the connection.
    NeverAnswer,
    /// Send the normal response one byte every [`SLOW_LORIS_BYTE_INTERVAL`].
    SlowLoris,
    /// A chunked response whose chunk-size line after the first token event (non-streamed: after
    /// half of the body) is not hexadecimal; the connection is closed after it.
    BadChunkSize,
    /// An SSE stream (even for a non-streaming request) with messages of invalid UTF-8, non-JSON
    /// `data:` lines, field-less lines and comments between the events of an otherwise valid
    /// stream. A client that skips what it cannot parse sees a normal response.
    GarbageSse,
    /// An SSE stream (even for a non-streaming request) that, after half of its token events,
    /// sends `event: error` with the comment [`SSE_ERROR_COMMENT`], then `[DONE]` and ends
    /// cleanly.
    SseErrorEvent,
    /// A non-streamed JSON completion padded with spaces to exactly `bytes` bytes (never less
    /// than the unpadded body), written in large blocks from one reused buffer.
    Huge {
        /// Body size in bytes.
        bytes: u64,
    },
}

impl Fault {
    /// Whether a client that handles this fault as a real server's would still get a complete,
    /// usable completion (the mock's metrics count it as served).
    pub fn serves_completion(self) -> bool {
        matches!(
            self,
            Fault::GarbageSse | Fault::SlowLoris | Fault::Huge { .. }
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::ResetBeforeResponse => f.write_str("reset-before"),
            Fault::ResetMidStream => f.write_str("reset-mid"),
            Fault::Status(c) => write!(f, "status={c}"),
            Fault::NeverAnswer => f.write_str("never-answer"),
            Fault::SlowLoris => f.write_str("slow-loris"),
            Fault::BadChunkSize => f.write_str("bad-chunk-size"),
            Fault::GarbageSse => f.write_str("garbage-sse"),
            Fault::SseErrorEvent => f.write_str("sse-error"),
            Fault::Huge { bytes } => write!(f, "huge={bytes}"),
        }
    }
}

/// Why a fault list could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultParseError(pub String);

impl fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FaultParseError {}

fn bad(msg: String) -> FaultParseError {
    FaultParseError(msg)
}

impl FromStr for Fault {
    type Err = FaultParseError;

    /// Reads `KIND[=ARG]` (see the module docs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (kind, arg) = match s.split_once('=') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (s, None),
        };
        let no_arg = |f: Fault| match arg {
            None => Ok(f),
            Some(_) => Err(bad(format!("fault `{kind}` takes no `=` argument"))),
        };
        match kind {
            "reset-before" => no_arg(Fault::ResetBeforeResponse),
            "reset-mid" => no_arg(Fault::ResetMidStream),
            "never-answer" => no_arg(Fault::NeverAnswer),
            "slow-loris" => no_arg(Fault::SlowLoris),
            "bad-chunk-size" => no_arg(Fault::BadChunkSize),
            "garbage-sse" => no_arg(Fault::GarbageSse),
            "sse-error" => no_arg(Fault::SseErrorEvent),
            "status" => {
                let code = arg
                    .and_then(|a| a.parse::<u16>().ok())
                    .filter(|c| (400..=599).contains(c))
                    .ok_or_else(|| {
                        bad(format!("`{s}`: write status=CODE with CODE in 400..=599"))
                    })?;
                Ok(Fault::Status(code))
            }
            "huge" => {
                let bytes = arg
                    .and_then(|a| a.parse::<u64>().ok())
                    .ok_or_else(|| bad(format!("`{s}`: write huge=BYTES (a whole number)")))?;
                Ok(Fault::Huge { bytes })
            }
            other => Err(bad(format!(
                "unknown fault `{other}` (known: reset-before, reset-mid, status=CODE, \
                 never-answer, slow-loris, bad-chunk-size, garbage-sse, sse-error, huge=BYTES)"
            ))),
        }
    }
}

/// A fault and the share of completion requests that get it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// The misbehaviour.
    pub kind: Fault,
    /// Share of completion requests (0 to 1), drawn per request from the seeded generator.
    pub fraction: f64,
}

impl FromStr for FaultSpec {
    type Err = FaultParseError;

    /// Reads one `KIND[=ARG][:FRACTION]` item (see the module docs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, fraction) = match s.rsplit_once(':') {
            Some((k, f)) => {
                let fraction = f
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| (0.0..=1.0).contains(x))
                    .ok_or_else(|| bad(format!("`{s}`: the fraction must be between 0 and 1")))?;
                (k, fraction)
            }
            None => (s, 1.0),
        };
        Ok(FaultSpec {
            kind: kind.parse()?,
            fraction,
        })
    }
}

/// A whole fault list, as `--mock-faults` takes it (see the module docs for the syntax).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultList(pub Vec<FaultSpec>);

impl FromStr for FaultList {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let specs = s
            .split(',')
            .filter(|item| !item.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<FaultSpec>, _>>()?;
        validate(&specs)?;
        Ok(FaultList(specs))
    }
}

/// Checks what [`FaultList`]'s parser checks, for lists built in code: each fraction in 0..=1,
/// their sum at most 1 (plus rounding slack), status codes in 400..=599.
pub fn validate(specs: &[FaultSpec]) -> Result<(), FaultParseError> {
    let mut sum = 0.0;
    for s in specs {
        if !(0.0..=1.0).contains(&s.fraction) {
            return Err(bad(format!(
                "fault {}: fraction {} is not between 0 and 1",
                s.kind, s.fraction
            )));
        }
        if let Fault::Status(c) = s.kind
            && !(400..=599).contains(&c)
        {
            return Err(bad(format!(
                "fault status={c}: the code must be in 400..=599"
            )));
        }
        sum += s.fraction;
    }
    if sum > 1.0 + 1e-9 {
        return Err(bad(format!(
            "the fault fractions sum to {sum}, more than 1"
        )));
    }
    Ok(())
}

/// The fault for a request whose uniform draw is `bits` (64 random bits): the first spec whose
/// cumulative fraction exceeds the draw, or none.
pub(crate) fn choose(specs: &[FaultSpec], bits: u64) -> Option<Fault> {
    // 53 random bits give a uniform value in [0, 1).
    let u = (bits >> 11) as f64 / (1u64 << 53) as f64;
    let mut acc = 0.0;
    for s in specs {
        acc += s.fraction;
        if u < acc {
            return Some(s.kind);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_and_round_trips_through_display() {
        let list: FaultList =
            "reset-before:0.1, status=503:0.2,huge=104857600:0.05,reset-mid:0.05,\
             never-answer:0.01,slow-loris:0.01,bad-chunk-size:0.01,garbage-sse:0.01,sse-error:0.01"
                .parse()
                .map_err(|e: FaultParseError| e.to_string())
                .unwrap_or_else(|e| panic!("{e}"));
        let kinds: Vec<Fault> = list.0.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                Fault::ResetBeforeResponse,
                Fault::Status(503),
                Fault::Huge { bytes: 104_857_600 },
                Fault::ResetMidStream,
                Fault::NeverAnswer,
                Fault::SlowLoris,
                Fault::BadChunkSize,
                Fault::GarbageSse,
                Fault::SseErrorEvent,
            ]
        );
        let fractions: Vec<f64> = list.0.iter().map(|s| s.fraction).collect();
        assert_eq!(fractions[..3], [0.1, 0.2, 0.05]);
        // An item without a fraction means 1, which makes this sum exceed 1.
        assert!(
            "reset-before:0.1,sse-error".parse::<FaultList>().is_err(),
            "fractions summing over 1 are refused"
        );
        for k in kinds {
            assert_eq!(k.to_string().parse::<Fault>(), Ok(k));
        }
        assert_eq!("".parse::<FaultList>(), Ok(FaultList(Vec::new())));
        assert_eq!(
            "sse-error".parse::<FaultList>().map(|l| l.0),
            Ok(vec![FaultSpec {
                kind: Fault::SseErrorEvent,
                fraction: 1.0
            }])
        );
    }

    #[test]
    fn refuses_malformed_items() {
        for s in [
            "status",
            "status=200",
            "status=abc:0.1",
            "huge",
            "huge=-1",
            "reset-before=3",
            "nope:0.1",
            "reset-mid:1.5",
            "reset-mid:-0.1",
            "reset-mid:x",
            "reset-mid:NaN",
            "status=500:0.6,status=503:0.6",
        ] {
            assert!(s.parse::<FaultList>().is_err(), "{s} must be refused");
        }
    }

    #[test]
    fn choice_follows_cumulative_fractions() {
        let specs = [
            FaultSpec {
                kind: Fault::ResetBeforeResponse,
                fraction: 0.25,
            },
            FaultSpec {
                kind: Fault::Status(500),
                fraction: 0.5,
            },
        ];
        let at = |u: f64| ((u * (1u64 << 53) as f64) as u64) << 11;
        assert_eq!(choose(&specs, 0), Some(Fault::ResetBeforeResponse));
        assert_eq!(choose(&specs, at(0.2499)), Some(Fault::ResetBeforeResponse));
        assert_eq!(choose(&specs, at(0.25)), Some(Fault::Status(500)));
        assert_eq!(choose(&specs, at(0.7499)), Some(Fault::Status(500)));
        assert_eq!(choose(&specs, at(0.75)), None);
        assert_eq!(choose(&specs, u64::MAX), None);
        assert_eq!(choose(&[], 0), None);
        let all = [FaultSpec {
            kind: Fault::NeverAnswer,
            fraction: 1.0,
        }];
        assert_eq!(choose(&all, u64::MAX), Some(Fault::NeverAnswer));
    }
}
