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
    /// `random_pool`'s records as a dict of lists: each pool's key and records, in the dict's
    /// order (`records` empty then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<(String, Vec<Value>)>,
}

impl InlineRecords {
    /// The records as the lines of the equivalent JSONL file.
    pub fn jsonl(&self) -> String {
        lines(&self.records)
    }

    /// Each pool's key and its records as JSON lines, in the dict's order.
    pub fn pools_jsonl(&self) -> Vec<(String, String)> {
        (self.pools.iter())
            .map(|(k, records)| (k.clone(), lines(records)))
            .collect()
    }

    /// The records as written in the config: a list, or the dict of pools.
    pub fn echoed(&self) -> Value {
        if self.pools.is_empty() {
            return Value::Array(self.records.clone());
        }
        let pools = (self.pools.iter()).map(|(k, r)| (k.clone(), Value::Array(r.clone())));
        Value::Object(pools.collect())
    }
}

/// `records`, one JSON text a line.
fn lines(records: &[Value]) -> String {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("a JSON value serializes"));
        out.push('\n');
    }
    out
}
