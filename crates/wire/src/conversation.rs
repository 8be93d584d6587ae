//! The dataset model every source produces (synthetic generator, custom files, public
//! datasets): conversations of turns (docs/datasets.md). A single-turn dataset is conversations of
//! one turn each.
//!
//! This is what a loader hands to the run; how a turn becomes a request body is the endpoint's
//! business (`crate::endpoint::payload`), and when it is sent is the schedule's.

use serde_json::{Map, Value};

/// How the run picks the next conversation when a new session starts
/// (`--dataset-sampling-strategy`, docs/datasets.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sampling {
    /// In dataset order, wrapping to the start after the end (traces' default).
    Sequential,
    /// Uniformly at random with replacement.
    Random,
    /// A random order without replacement, reshuffled after every pass (synthetic default).
    #[default]
    Shuffle,
}

impl Sampling {
    /// AIPerf's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Sampling::Sequential => "sequential",
            Sampling::Random => "random",
            Sampling::Shuffle => "shuffle",
        }
    }
}

/// The conversations a run sends, in dataset order (credits refer to them by index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    pub conversations: Vec<Conversation>,
    /// The source's default sampling, used when `--dataset-sampling-strategy` is not given.
    pub default_sampling: Sampling,
    /// A trace or verbatim replay (`mooncake_trace`, `raw_payload`, `inputs_json`): AIPerf
    /// writes no `inputs.json` for these, and neither does ringperf.
    pub replay: bool,
}

impl Dataset {
    /// Total turns over every conversation.
    pub fn turn_count(&self) -> usize {
        self.conversations.iter().map(|c| c.turns.len()).sum()
    }
}

/// One session: its turns are sent in order, each after the previous one has been answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    /// AIPerf's `session_id` / `conversation_id` (`session_000000`, a file's `session_id`, ...).
    pub session_id: String,
    /// A system message sent first in every turn's `messages` (chat only): `--system-prompt`,
    /// `--shared-system-prompt-length`.
    pub system: Option<String>,
    /// A user message sent after the system message in every turn (chat only):
    /// `--user-context-prompt-length`.
    pub user_context: Option<String>,
    pub turns: Vec<Turn>,
    /// An agent trace's conversation: how its turns build on each other, the sessions it
    /// starts, the one that starts it (boxed: most conversations are none of this).
    pub agent: Option<Box<AgentConversation>>,
}

/// What a conversation of an agent trace carries besides its turns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentConversation {
    /// How each turn's body builds on the turns before it.
    pub context: ContextMode,
    /// Sessions this one starts as it goes (an agent's subagents): [`AgentTurn::spawns`] names
    /// them by index here, [`AgentTurn::joins`] waits for them.
    pub branches: Vec<Branch>,
    /// The conversation whose turn starts this one (a subagent), by index in the dataset;
    /// `None` for a root, the only kind a new session picks.
    pub parent: Option<u32>,
    /// A branch forks it ([`Branch::fork`]): its first turn may go after a parent's context, so
    /// no turn of it is built before the run.
    pub forked: bool,
    /// An orchestrator's sampled think time (`dag_jsonl`'s `think_time_sigma`): each round's
    /// wait drawn around its turn's delay. `None`: the delays are fixed.
    pub think: Option<ThinkTime>,
}

/// A lognormal think time around a turn's delay (the median): AIPerf's `ThinkTimeSpec`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThinkTime {
    /// The shape: the standard deviation of the draw's logarithm (0 < sigma <= 10).
    pub sigma: f64,
    /// Bounds on the draw, ms.
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl Conversation {
    /// A root: picked by new sessions (a child is only started by its parent's turn).
    pub fn is_root(&self) -> bool {
        self.parent().is_none()
    }
}

impl AgentParts for Conversation {
    fn agent_parts(&self) -> Option<&AgentConversation> {
        self.agent.as_deref()
    }
}

/// A conversation that may belong to an agent trace's session tree (the dataset's form, and the
/// run's prepared one): its agent facts read the same way from either.
pub trait AgentParts {
    /// The agent facts, if it has any.
    fn agent_parts(&self) -> Option<&AgentConversation>;

    /// The conversation whose turn starts this one; `None` for a root.
    fn parent(&self) -> Option<u32> {
        self.agent_parts().and_then(|a| a.parent)
    }

    /// The sessions its turns start.
    fn branches(&self) -> &[Branch] {
        self.agent_parts().map_or(&[], |a| &a.branches)
    }

    /// How its turns build on each other.
    fn context(&self) -> ContextMode {
        self.agent_parts()
            .map_or(ContextMode::default(), |a| a.context)
    }

    /// An orchestrator's sampled think time, if it has one.
    fn think(&self) -> Option<ThinkTime> {
        self.agent_parts().and_then(|a| a.think)
    }
}

/// A turn that may belong to an agent trace (the dataset's form, and the run's prepared one).
pub trait AgentTurnParts {
    /// The agent facts, if it has any.
    fn agent_turn(&self) -> Option<&AgentTurn>;

    /// Branches started when this turn completes.
    fn spawns(&self) -> &[u32] {
        self.agent_turn().map_or(&[], |a| &a.spawns)
    }

    /// Branches this turn waits for.
    fn joins(&self) -> &[u32] {
        self.agent_turn().map_or(&[], |a| &a.joins)
    }

    /// An orchestrator's turn: it sends nothing ([`AgentTurn::request_free`]).
    fn request_free(&self) -> bool {
        self.agent_turn().is_some_and(|a| a.request_free)
    }

    /// The turn starts the context over.
    fn resets_context(&self) -> bool {
        self.agent_turn().is_some_and(|a| a.reset_context)
    }

    /// `(hits, total)` prefix blocks of the turn's prompt.
    fn prefix_blocks(&self) -> Option<(u32, u32)> {
        self.agent_turn().and_then(|a| a.prefix_blocks)
    }
}

/// How a conversation's later turns carry the earlier ones (docs/datasets.md, `weka_trace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ContextMode {
    /// Every earlier turn's messages and the server's real reply to each (AIPerf's
    /// `deltas_without_responses`): the endpoint type's ordinary history.
    #[default]
    LiveReplies,
    /// Every earlier turn's messages, which already hold the recorded assistant text; the
    /// server's replies are not added (`deltas_with_responses`, agent traces).
    Recorded,
    /// Each turn is sent alone: its messages are the whole context, nothing of the earlier
    /// turns or their replies is added (`message_array_with_responses`, `baseten_trace`).
    Standalone,
}

/// Sessions started together when a turn completes (AIPerf's branch of `SPAWN` children).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Branch {
    /// AIPerf's `branch_id` (`{trace}:spawn:{agent}`).
    pub id: String,
    /// The child conversations, by index in the dataset.
    pub children: Vec<u32>,
    /// Nothing waits for it: no turn of the parent joins it.
    pub background: bool,
    /// Trace time at which the branch starts, ms: a child whose first turn is later in the
    /// trace waits the difference after the spawning turn completes.
    pub start_ms: Option<f64>,
    /// AIPerf's `FORK` (a `dag_jsonl` file's `forks`): each child starts from the parent's
    /// context as it is when the spawning turn's answer is in (its messages and replies), and
    /// goes on from there; a `SPAWN` child (`false`) starts from nothing.
    pub fork: bool,
    /// Started once a phase, before any root's first turn, with no parent session (AIPerf's
    /// `pre_session_spawns`, `dispatch_timing="pre"`): never started by a turn.
    pub pre: bool,
}

/// One request of a conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turn {
    pub content: Content,
    /// Message role (AIPerf's `role`; `None` sends `"user"`).
    pub role: Option<String>,
    /// `max_tokens` to ask for (synthetic OSL, a file's `output_length`).
    pub max_tokens: Option<u32>,
    /// Trace time of this turn in milliseconds (absolute, as in the file).
    pub timestamp_ms: Option<f64>,
    /// Milliseconds to wait after the previous turn was answered before sending this one.
    pub delay_ms: Option<f64>,
    /// Fields merged into this turn's body after `--extra-inputs` (a file's `extra`, `tools`).
    pub extra: Map<String, Value>,
    /// Images, audio and video sent with the turn's texts (chat: content parts after the
    /// texts, images then audio then video; docs/multimodal.md).
    pub media: Vec<Media>,
    /// The model this turn asks for (AIPerf's `turn.model`, chosen by
    /// `--model-selection-strategy`); `None` sends the first `--model-names` entry.
    pub model: Option<String>,
    /// An agent trace's turn: the sessions it starts and waits for, and its recorded facts
    /// (boxed: most turns have none, and a large trace holds millions of turns).
    pub agent: Option<Box<AgentTurn>>,
}

/// What a turn of an agent trace carries besides its messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentTurn {
    /// Branches of the conversation ([`Conversation::branches`]) started when this turn
    /// completes.
    pub spawns: Vec<u32>,
    /// Branches every child of which must have finished before this turn goes.
    pub joins: Vec<u32>,
    /// The history is cleared before this turn: its messages start the context over.
    pub reset_context: bool,
    /// The recorded server time of this turn, ms (an agent trace's `api_time`).
    pub api_time_ms: Option<f64>,
    /// `(hits, total)` KV blocks of this turn's prompt: the leading blocks an earlier request
    /// of the same trace already sent, out of all its blocks (`theoretical_prefix_cache_hit`).
    pub prefix_blocks: Option<(u32, u32)>,
    /// Where in the trace the turn came from.
    pub source: Option<TurnSource>,
    /// Agentic replay's barriers: the requests of other streams of the trace (by conversation
    /// index in the dataset, and turn) that must have ended before this one goes, as the trace
    /// recorded them ended before it started (AIPerf's `replay_predecessors`).
    pub predecessors: Vec<(u32, u32)>,
    /// The `tools` its body carries when it names none (a `dag_jsonl` turn: the latest earlier
    /// turn's, a fork child's its parent's), as AIPerf's body takes the latest of the turns it
    /// sends; not part of the turn alone (`inputs.json`).
    pub inherited_tools: Option<serde_json::Value>,
    /// An orchestrator's turn (`dag_jsonl`'s `orchestrator: true`): no request goes; once its
    /// joins are in and its think time (the turn's delay) has passed, its spawns start.
    pub request_free: bool,
}

/// Where an agent trace's turn came from: the trace, its request's index among the trace's
/// requests (a subagent's: the subagent's) and among the subagent's, and which kind of
/// conversation it is in (AIPerf's `source_trace_id`, `source_outer_idx`, `source_inner_idx`,
/// `source_kind`).
#[derive(Clone, Debug, PartialEq)]
pub struct TurnSource {
    pub trace: std::sync::Arc<str>,
    pub outer: u32,
    pub inner: Option<u32>,
    /// `weka_main`, `weka_subagent` or `weka_flat`.
    pub kind: &'static str,
}

impl AgentTurnParts for Turn {
    fn agent_turn(&self) -> Option<&AgentTurn> {
        self.agent.as_deref()
    }
}

/// One image, audio clip or video of a turn, as AIPerf carries it: an image or a video as a
/// URL or `data:` URI, an audio clip as `<format>,<base64>`. The text is shared (`Arc`) by every
/// turn that sends the same medium.
#[derive(Clone, Debug, PartialEq)]
pub enum Media {
    Image(std::sync::Arc<str>),
    Audio(std::sync::Arc<str>),
    Video(std::sync::Arc<str>),
    /// An image with a dataset's cache UUID (`image_uuids`, vLLM's multimodal processor
    /// cache): chat sends the UUID beside the URL, which is empty for a UUID-only reference or
    /// an image `--uuid-and-strip` stripped (docs/multimodal.md).
    ImageUuid {
        url: std::sync::Arc<str>,
        uuid: std::sync::Arc<str>,
    },
}

impl Media {
    /// An image's URL or `data:` URI (empty for a UUID-only reference); `None` for audio and
    /// video.
    pub fn image_url(&self) -> Option<&str> {
        match self {
            Media::Image(url) | Media::ImageUuid { url, .. } => Some(url),
            Media::Audio(_) | Media::Video(_) => None,
        }
    }
}

/// What a turn says.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// The texts of one message. Chat sends one text as a plain string `content`, several as
    /// `{"type":"text"}` parts; completions sends one as `prompt`, several as a list.
    Texts(Vec<String>),
    /// Chat messages sent as they are (a trace's `messages`), after the conversation's history.
    Messages(Vec<Value>),
    /// A rankings request: one query and the passages to rank (AIPerf's texts named `query`
    /// and `passages`), sent by the rankings endpoint types.
    Rankings {
        query: String,
        passages: Vec<String>,
    },
    /// A whole request body sent verbatim (`raw_payload`, `inputs_json`, a trace's `payload`):
    /// no history, no extras, no model.
    Raw(Value),
}

impl Default for Content {
    fn default() -> Self {
        Content::Texts(Vec::new())
    }
}

impl Turn {
    /// A turn of one text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Content::Texts(vec![text.into()]),
            ..Self::default()
        }
    }
}
