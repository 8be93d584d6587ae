//! The Tokenizer group's flags beside `--tokenizer` (docs/tokenizer.md): the hub-cache revision,
//! remote code, and the chat template ISL is counted with. Resolved in `config` into
//! `workload::tokenizer::LoadOptions`.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TokenizerArgs {
    /// Revision of a model id: a branch or tag (read from refs/<REV> in the local Hugging Face
    /// cache) or a commit hash (snapshots/<REV>), fetched from the Hub when the cache lacks it.
    /// Default: main.
    #[arg(
        long = "tokenizer-revision",
        value_name = "REV",
        help_heading = "Tokenizer"
    )]
    pub tokenizer_revision: Option<String>,

    /// AIPerf's permission to run a tokenizer's own Python code. ringperf runs no Python: a
    /// tokenizer.json needs none, and a tokenizer that is only Python code is refused, saying so.
    #[arg(long = "tokenizer-trust-remote-code", help_heading = "Tokenizer")]
    pub trust_remote_code: bool,

    /// Count the ISL of chat-shaped requests on the model's chat template rendered over their
    /// messages (with the generation prompt), as AIPerf does; the template comes from the
    /// tokenizer's directory (chat_template.jinja or tokenizer_config.json). The builtin
    /// tokenizer has none: the prompt text is counted then.
    #[arg(long = "apply-chat-template", help_heading = "Tokenizer")]
    pub apply_chat_template: bool,
}
