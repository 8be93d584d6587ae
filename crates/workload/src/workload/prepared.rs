//! A dataset made ready to send (docs/endpoints.md): every turn whose body does not depend on the
//! server's replies is encoded once, before the run, and its ISL counted; a later turn of a chat
//! conversation keeps what the worker needs to build its body when it is due (its message goes
//! after the conversation's history of prompts and real replies).

use serde_json::Value;

use ringperf_wire::conversation::{
    AgentConversation, AgentParts, AgentTurn, AgentTurnParts, Content, Conversation, Dataset,
    Sampling, Turn,
};
use ringperf_wire::endpoint::{EndpointKind, PayloadParams, TurnBody, build_turn, payload_inputs};

use super::Tokenizer;

/// Token counts of turns' texts known when the dataset was made (a synthetic prompt is
/// measured while it is repaired to its length): per conversation, per turn, the count of the
/// turn's one text under the run's tokenizer, `None` when unknown. [`prepare_known`] takes a
/// turn's count for its ISL only when the text it would count is exactly that text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownCounts(pub Vec<Vec<Option<u32>>>);

/// The run-time form of a [`Dataset`].
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    pub conversations: Vec<PreparedConversation>,
    pub default_sampling: Sampling,
    /// A trace or verbatim replay: no `inputs.json` (see [`Dataset::replay`]).
    pub replay: bool,
    /// The conversations a new session may pick, when some are children (started only by
    /// their parent's turn); `None` when every conversation is a root.
    pub roots: Option<Vec<u32>>,
}

/// One conversation, ready to send.
#[derive(Clone, Debug, Default)]
pub struct PreparedConversation {
    pub session_id: String,
    pub system: Option<String>,
    pub user_context: Option<String>,
    pub turns: Vec<PreparedTurn>,
    /// An agent trace's conversation ([`Conversation::agent`]).
    pub agent: Option<Box<AgentConversation>>,
}

impl AgentParts for PreparedConversation {
    fn agent_parts(&self) -> Option<&AgentConversation> {
        self.agent.as_deref()
    }
}

/// One turn, ready to send.
#[derive(Clone, Debug, Default)]
pub struct PreparedTurn {
    /// The body, when it is the same whatever the server answered before.
    pub body: Option<Vec<u8>>,
    /// ISL of `body` (client tokenization of its text).
    pub isl_tokens: Option<u64>,
    /// Image parts in `body`, as the endpoint type counts them (docs/metrics.md, "Media").
    pub images: u32,
    pub max_tokens: Option<u32>,
    pub timestamp_ms: Option<f64>,
    pub delay_ms: Option<f64>,
    /// For a turn of a chat conversation of several turns: the turn itself, from which its
    /// message in the history (and, for a later turn, its body) is built.
    pub source: Option<Box<Turn>>,
    /// An agent trace's turn: its spawns, joins and recorded facts ([`Turn::agent`]).
    pub agent: Option<Box<AgentTurn>>,
}

impl AgentTurnParts for PreparedTurn {
    fn agent_turn(&self) -> Option<&AgentTurn> {
        self.agent.as_deref()
    }
}

impl Prepared {
    /// Total turns.
    pub fn turn_count(&self) -> usize {
        self.conversations.iter().map(|c| c.turns.len()).sum()
    }

    /// How many conversations a new session may pick ([`Self::roots`]).
    pub fn root_count(&self) -> usize {
        self.roots
            .as_ref()
            .map_or(self.conversations.len(), Vec::len)
    }

    /// The conversation of the `i`-th root (`i < root_count()`).
    pub fn root(&self, i: u32) -> u32 {
        self.roots.as_ref().map_or(i, |r| r[i as usize])
    }
}

/// The roots of `conversations` when some are children, else `None`.
pub fn roots_of<I>(parents: I) -> Option<Vec<u32>>
where
    I: IntoIterator<Item = Option<u32>>,
{
    let parents: Vec<Option<u32>> = parents.into_iter().collect();
    parents.iter().any(Option::is_some).then(|| {
        (0..parents.len() as u32)
            .filter(|&i| parents[i as usize].is_none())
            .collect()
    })
}

/// Whether turn `index` of `conversation` depends on the replies before it: a later turn of a
/// chat conversation that is not a verbatim body, or any turn of one a branch forks (it goes on
/// from its parent's context).
pub fn carries_history(kind: EndpointKind, conversation: &Conversation, index: usize) -> bool {
    use ringperf_wire::conversation::{AgentParts, ContextMode};
    kind.descriptor().history.is_some()
        && (index > 0 || conversation.agent.as_ref().is_some_and(|a| a.forked))
        && !matches!(conversation.turns[index].content, Content::Raw(_))
        && conversation.context() != ContextMode::Standalone
}

/// Encodes every turn that can be encoded before the run and counts its ISL, on every core
/// (counting the ISL of a large trace is most of its start-up time). Conversation order is kept.
pub fn prepare(
    dataset: Dataset,
    kind: EndpointKind,
    params: &PayloadParams,
    tokenizer: &Tokenizer,
) -> Prepared {
    prepare_known(dataset, KnownCounts::default(), kind, params, tokenizer)
}

/// [`prepare`] with the token counts `known` of the dataset's texts (`tokenizer`'s counts, from
/// [`super::synthetic::build_counted`]): a turn whose ISL text (what AIPerf counts, read back
/// from its body) equals its one text, with no chat template to render, takes the known count
/// instead of tokenizing the text again. Any other turn is counted as [`prepare`] counts it.
pub fn prepare_known(
    dataset: Dataset,
    known: KnownCounts,
    kind: EndpointKind,
    params: &PayloadParams,
    tokenizer: &Tokenizer,
) -> Prepared {
    let Dataset {
        conversations,
        default_sampling,
        replay,
    } = dataset;
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(conversations.len().div_ceil(256).max(1));
    let per_thread = conversations.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<(Conversation, Vec<Option<u32>>)>> = Vec::with_capacity(threads);
    let mut known = known.0.into_iter();
    let mut rest = conversations
        .into_iter()
        .map(|c| (c, known.next().unwrap_or_default()));
    loop {
        let chunk: Vec<(Conversation, Vec<Option<u32>>)> = rest.by_ref().take(per_thread).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let prepared_chunks: Vec<Vec<PreparedConversation>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    // A signal stops the encoding: the caller drops the partial result.
                    chunk
                        .into_iter()
                        .take_while(|_| !ringperf_io::control::interrupted())
                        .map(|(c, known)| prepare_conversation(c, &known, kind, params, tokenizer))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let conversations: Vec<PreparedConversation> = prepared_chunks.into_iter().flatten().collect();
    Prepared {
        roots: roots_of(conversations.iter().map(AgentParts::parent)),
        conversations,
        default_sampling,
        replay,
    }
}

fn prepare_conversation(
    c: Conversation,
    known: &[Option<u32>],
    kind: EndpointKind,
    params: &PayloadParams,
    tokenizer: &Tokenizer,
) -> PreparedConversation {
    // The turn itself is kept where a body may be built at send time: a conversation replayed
    // with its history, or an agent trace's (a one-turn subagent too: agentic replay's cache
    // warmup asks it for one token; a conversation that forks hands its context on, one a
    // branch forks starts from a parent's).
    let multi_turn_chat =
        kind.descriptor().history.is_some() && (c.turns.len() > 1 || c.agent.is_some());
    let turns = (0..c.turns.len())
        .map(|i| {
            let turn = &c.turns[i];
            let body = (!carries_history(kind, &c, i)).then(|| {
                body_alone(
                    kind,
                    params,
                    c.system.as_deref(),
                    c.user_context.as_deref(),
                    turn,
                )
            });
            // With `--use-server-token-count` the ISL is the server's `usage.prompt_tokens`:
            // counting here would only build the tokenizer before the first request.
            // One read of the body for its ISL text and its images.
            let inputs = body
                .as_ref()
                .map(|b| payload_inputs(kind, b, !params.use_server_token_count))
                .unwrap_or_default();
            // A count known from the dataset's making stands for the text's only when that text
            // is the whole ISL text (no system or context message, no second text) and no
            // template renders it.
            let known_isl = known
                .get(i)
                .copied()
                .flatten()
                .filter(|_| tokenizer.chat_template().is_none())
                .filter(|_| match (&turn.content, inputs.text.as_deref()) {
                    (Content::Texts(texts), Some(isl_text)) => {
                        matches!(texts.as_slice(), [only] if only == isl_text)
                    }
                    _ => false,
                });
            let isl_tokens = body
                .as_ref()
                .filter(|_| !params.use_server_token_count)
                .and_then(|b| match known_isl {
                    Some(n) => Some(u64::from(n)),
                    None => tokenizer.count_read_input(kind, b, inputs.text.as_deref()),
                });
            PreparedTurn {
                body,
                isl_tokens,
                images: inputs.images,
                max_tokens: turn.max_tokens,
                timestamp_ms: turn.timestamp_ms,
                delay_ms: turn.delay_ms,
                source: multi_turn_chat.then(|| Box::new(turn.clone())),
                agent: turn.agent.clone(),
            }
        })
        .collect();
    PreparedConversation {
        session_id: c.session_id,
        system: c.system,
        user_context: c.user_context,
        turns,
        agent: c.agent,
    }
}

/// A turn's body with its conversation's system and context messages but no history.
fn body_alone(
    kind: EndpointKind,
    params: &PayloadParams,
    system: Option<&str>,
    user_context: Option<&str>,
    turn: &Turn,
) -> Vec<u8> {
    let parts = TurnBody {
        system,
        user_context,
        history: &[],
        turn,
        previous_response_id: None,
    };
    build_turn(kind, params, &parts)
}

/// AIPerf's `inputs.json`: `{"data":[{"session_id": <id>, "payloads":[<body per turn>]}, ...]}`,
/// each turn's body as it would be sent alone (no replies in it: the file is written before the
/// run), key order kept. As a value; [`InputsJson`] writes the same document without holding it.
pub fn inputs_json(prepared: &Prepared, kind: EndpointKind, params: &PayloadParams) -> Value {
    serde_json::to_value(InputsJson {
        prepared,
        kind,
        params,
    })
    .unwrap_or(Value::Null)
}

/// [`inputs_json`]'s document, serialized one payload at a time as it is written: a run whose
/// bodies carry megabytes of media never holds a second copy of its dataset. Stops (a shorter,
/// still well-formed document) when the run is interrupted; the caller then writes nothing.
pub struct InputsJson<'a> {
    pub prepared: &'a Prepared,
    pub kind: EndpointKind,
    pub params: &'a PayloadParams,
}

impl serde::Serialize for InputsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Conversations<'b>(&'b InputsJson<'b>);
        struct Session<'b>(&'b InputsJson<'b>, &'b PreparedConversation);
        struct Payloads<'b>(&'b InputsJson<'b>, &'b PreparedConversation);
        struct Payload<'b>(
            &'b InputsJson<'b>,
            &'b PreparedConversation,
            &'b PreparedTurn,
        );
        impl serde::Serialize for Conversations<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let all = self.0.prepared.conversations.iter();
                s.collect_seq(
                    all.take_while(|_| !ringperf_io::control::interrupted())
                        .map(|c| Session(self.0, c)),
                )
            }
        }
        impl serde::Serialize for Session<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("session_id", &self.1.session_id)?;
                m.serialize_entry("payloads", &Payloads(self.0, self.1))?;
                m.end()
            }
        }
        impl serde::Serialize for Payloads<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.1.turns.iter().map(|t| Payload(self.0, self.1, t)))
            }
        }
        impl serde::Serialize for Payload<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let (json, c, t) = (self.0, self.1, self.2);
                let parsed = match (&t.body, &t.source) {
                    (Some(b), _) => serde_json::from_slice::<Value>(b),
                    (None, Some(turn)) => serde_json::from_slice::<Value>(&body_alone(
                        json.kind,
                        json.params,
                        c.system.as_deref(),
                        c.user_context.as_deref(),
                        turn,
                    )),
                    (None, None) => Ok(Value::Null),
                };
                parsed.unwrap_or(Value::Null).serialize(s)
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("data", &Conversations(self))?;
        m.end()
    }
}
