//! `--uuid-and-strip`: image cache UUIDs for vLLM's multimodal processor cache
//! (docs/multimodal.md). Checked in [`crate::config::resolve`], applied by the `single_turn`
//! loader.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UuidStripArgs {
    /// Send an image whose cache UUID (`image_uuids` of a single_turn dataset) an earlier turn
    /// of the same session sent as its UUID alone, without its bytes (vLLM's multimodal
    /// processor cache). Chat only; multi_turn datasets are refused. Dataset UUIDs are sent on
    /// chat with or without this flag.
    #[arg(long = "uuid-and-strip", help_heading = "Endpoint")]
    pub uuid_and_strip: bool,
}
