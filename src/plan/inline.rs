//! A file dataset's inline `records` (AIPerf 0.13's `FileDataset.records`): the objects a JSONL
//! file of the dataset's `format` would hold one a line, embedded in the config file. The run
//! reads them with that format's file loader, so they send what the equivalent file sends.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The records (their format is the dataset's `format`, `--custom-dataset-type`, by default
/// `single_turn`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InlineRecords {
    /// `benchmark.datasets.NAME.records`: where they are in the config (named in messages).
    pub at: String,
    pub records: Vec<Value>,
}

impl InlineRecords {
    /// The records as the lines of the equivalent JSONL file.
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        for r in &self.records {
            out.push_str(&serde_json::to_string(r).expect("a JSON value serializes"));
            out.push('\n');
        }
        out
    }
}
