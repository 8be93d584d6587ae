//! Agentic replay's barriers between the streams of a trace (AIPerf's `replay_predecessors`;
//! docs/timing.md, "Agentic replay"). Each conversation of a trace belongs to a scope: the
//! root and its flat agents share the trace's, each subagent's streams share the subagent's
//! (its session id up to the `::sa:{agent}` part, without the `:aux:`, `:fa:` or `:wg:` worker
//! suffix). Within a scope, a request waits for, from every other stream, the latest request the
//! trace shows ended by the time it started; the order within a stream is the session's own.
//!
//! A recorded request spans `[t, t + api_time]` (no, negative or non-finite `api_time`: a
//! point). Another stream's request is done by `s` when it started before `s` and ended at or
//! before it; of those, the latest (by end, then start, then session id and turn). A stream's
//! latest that ended before another stream's latest started is implied by it and left out.
//! A request without a recorded start waits for nothing and, on other streams, is not waited
//! for.

use std::collections::HashMap;

use ringperf_wire::conversation::Conversation;

/// The scope of a conversation whose session id is `session_id`, in trace `trace_id`.
pub(super) fn scope_of<'a>(session_id: &'a str, trace_id: &'a str) -> &'a str {
    const MARKER: &str = "::sa:";
    let Some(at) = session_id.find(MARKER) else {
        return trace_id;
    };
    let mut end = session_id.len();
    for worker in [":aux:", ":fa:", ":wg:"] {
        if let Some(w) = session_id[at + MARKER.len()..end].rfind(worker) {
            end = at + MARKER.len() + w;
        }
    }
    &session_id[..end]
}

/// One recorded request: its conversation (dataset index, session id), turn and span (ms).
#[derive(Clone, Copy)]
struct Span<'a> {
    conversation: u32,
    session: &'a str,
    turn: u32,
    start: f64,
    end: f64,
}

impl Span<'_> {
    /// Ends before `other` starts (and starts before it).
    fn before(&self, other: &Span<'_>) -> bool {
        self.start < other.start && self.end <= other.start
    }

    fn key(&self) -> (&str, u32) {
        (self.session, self.turn)
    }
}

/// One conversation of a trace: itself, its index in the dataset and its scope.
pub(super) type Member<'a> = (&'a mut Conversation, u32, String);

/// Sets the predecessors of every turn of one trace's conversations.
pub(super) fn install(conversations: &mut [Member<'_>]) {
    let mut by_scope: HashMap<&str, Vec<Vec<Span<'_>>>> = HashMap::new();
    let mut found: Vec<Vec<Vec<(u32, u32)>>> = Vec::new();
    {
        for (c, index, scope) in conversations.iter() {
            let spans = (c.turns.iter().enumerate())
                .filter_map(|(k, t)| {
                    let start = t.timestamp_ms.filter(|s| s.is_finite())?;
                    let api = (t.agent.as_ref())
                        .and_then(|a| a.api_time_ms)
                        .filter(|a| a.is_finite() && *a >= 0.0)
                        .unwrap_or(0.0);
                    Some(Span {
                        conversation: *index,
                        session: c.session_id.as_str(),
                        turn: k as u32,
                        start,
                        end: start + api,
                    })
                })
                .collect();
            by_scope.entry(scope.as_str()).or_default().push(spans);
        }
        for (c, _, scope) in conversations.iter() {
            let streams = &by_scope[scope.as_str()];
            let per_turn = (c.turns.iter())
                .map(|t| match t.timestamp_ms.filter(|s| s.is_finite()) {
                    Some(s) if streams.len() > 1 => frontier(streams, &c.session_id, s),
                    _ => Vec::new(),
                })
                .collect();
            found.push(per_turn);
        }
    }
    for ((c, _, _), per_turn) in conversations.iter_mut().zip(found) {
        for (t, preds) in c.turns.iter_mut().zip(per_turn) {
            if let Some(a) = t.agent.as_mut() {
                a.predecessors = preds;
            }
        }
    }
}

/// What a request of stream `session` recorded as starting at `start` waits for.
fn frontier(streams: &[Vec<Span<'_>>], session: &str, start: f64) -> Vec<(u32, u32)> {
    let target = Span {
        conversation: 0,
        session,
        turn: 0,
        start,
        end: start,
    };
    let latest: Vec<Span<'_>> = streams
        .iter()
        .filter(|s| s.first().is_some_and(|f| f.session != session))
        .filter_map(|s| {
            (s.iter().filter(|c| c.before(&target))).max_by(|a, b| {
                (a.end.total_cmp(&b.end))
                    .then(a.start.total_cmp(&b.start))
                    .then(a.key().cmp(&b.key()))
            })
        })
        .copied()
        .collect();
    let mut kept: Vec<Span<'_>> = (latest.iter())
        .filter(|c| !(latest.iter()).any(|later| later.key() != c.key() && c.before(later)))
        .copied()
        .collect();
    kept.sort_by(|a, b| a.key().cmp(&b.key()));
    kept.iter().map(|c| (c.conversation, c.turn)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::conversation::{AgentTurn, Turn};

    #[test]
    fn scopes_are_the_trace_or_the_subagent_without_its_worker_suffix() {
        assert_eq!(scope_of("tr", "tr"), "tr");
        assert_eq!(scope_of("tr::aux:000", "tr"), "tr");
        assert_eq!(scope_of("tr::sa:a1", "tr"), "tr::sa:a1");
        assert_eq!(scope_of("tr::sa:a1:aux:002", "tr"), "tr::sa:a1");
        assert_eq!(scope_of("tr::sa:a1:fa:1:wg:3", "tr"), "tr::sa:a1");
    }

    fn conv(id: &str, spans: &[(Option<f64>, Option<f64>)]) -> Conversation {
        Conversation {
            session_id: id.into(),
            turns: spans
                .iter()
                .map(|&(t, api)| Turn {
                    timestamp_ms: t,
                    agent: Some(Box::new(AgentTurn {
                        api_time_ms: api,
                        ..AgentTurn::default()
                    })),
                    ..Turn::default()
                })
                .collect(),
            ..Conversation::default()
        }
    }

    fn preds(c: &Conversation) -> Vec<Vec<(u32, u32)>> {
        (c.turns.iter())
            .map(|t| t.agent.as_ref().unwrap().predecessors.clone())
            .collect()
    }

    /// Hand-worked: stream A runs [0,10] [20,30] [40,50]; B runs [5,15] [31,35]; C (another
    /// scope) [0,1] [12,13].
    #[test]
    fn each_request_waits_for_the_latest_request_of_each_other_stream_that_had_ended() {
        let mut a = conv(
            "t",
            &[
                (Some(0.0), Some(10.0)),
                (Some(20.0), Some(10.0)),
                (Some(40.0), Some(10.0)),
            ],
        );
        let mut b = conv(
            "t::aux:0",
            &[(Some(5.0), Some(10.0)), (Some(31.0), Some(4.0))],
        );
        let mut c = conv(
            "t::sa:x",
            &[(Some(0.0), Some(1.0)), (Some(12.0), Some(1.0))],
        );
        let mut all = [
            (&mut a, 10, "t".to_string()),
            (&mut b, 11, "t".to_string()),
            (&mut c, 12, "t::sa:x".to_string()),
        ];
        install(&mut all);
        // A0 starts first; A1 at 20 waits for B0 (ended 15); A2 at 40 for B1 (ended 35).
        assert_eq!(preds(&a), [vec![], vec![(11, 0)], vec![(11, 1)]]);
        // B0 at 5: A0 still running (overlap: no edge); B1 at 31: A1 ended at 30.
        assert_eq!(preds(&b), [vec![], vec![(10, 1)]]);
        // C is alone in its scope.
        assert_eq!(preds(&c), [vec![], vec![]]);
    }

    /// A boundary touch orders; equal starts do not; a request without a start waits for
    /// nothing and is never waited for; a stream's latest implied by another's is left out.
    #[test]
    fn touches_order_equal_starts_do_not_and_implied_edges_are_dropped() {
        // A: [0,10]; B: [10,12] (touches A0's end); C: [10, 10] point, same start as B0;
        // D: [20, 21], after B0 and C0 ended (B0 at 12, C0 at 10): C0 ended before B0 started?
        // No: C0 starts at 10 = B0's start, so neither implies the other; A0 ended before both
        // started and is left out.
        let mut a = conv("a", &[(Some(0.0), Some(10.0))]);
        let mut b = conv("b", &[(Some(10.0), Some(2.0))]);
        let mut c = conv("c", &[(Some(10.0), None), (None, None)]);
        let mut d = conv("d", &[(Some(20.0), Some(1.0))]);
        let mut all = [
            (&mut a, 0, "s".to_string()),
            (&mut b, 1, "s".to_string()),
            (&mut c, 2, "s".to_string()),
            (&mut d, 3, "s".to_string()),
        ];
        install(&mut all);
        assert_eq!(preds(&a), [vec![]]);
        assert_eq!(preds(&b), [vec![(0, 0)]], "a touch orders");
        assert_eq!(
            preds(&c),
            [vec![(0, 0)], vec![]],
            "equal starts: no edge between B0 and C0"
        );
        assert_eq!(preds(&d), [vec![(1, 0), (2, 0)]]);
    }
}
