//! The Weka trace file, as AIPerf validates it: every object closed (an unknown key is an
//! error), `hash_id_scope` required and `"local"`, requests tagged by `type`.

use serde::Deserialize;
use serde_json::Value;

/// One trace file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WekaTrace {
    pub id: String,
    #[allow(dead_code)] // read by the schema only
    pub models: Vec<String>,
    pub block_size: u64,
    #[allow(dead_code)]
    pub hash_id_scope: Scope,
    #[serde(default)]
    pub tool_tokens: u64,
    #[serde(default)]
    pub system_tokens: u64,
    #[serde(deserialize_with = "trace_requests")]
    pub requests: Vec<Request>,
    #[serde(default)]
    #[allow(dead_code)]
    pub totals: Option<Value>,
}

/// Where a hash id means the same block: only `"local"` (within the file) is defined.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Local,
}

/// A request of the agent, or a subagent it started.
#[derive(Debug)]
pub enum Request {
    Call(Call),
    Subagent(Subagent),
}

/// One model call (`type` `"n"`, or `"s"` for a streamed one with its `ttft`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// Start, seconds from the trace's start.
    pub t: f64,
    pub model: String,
    #[serde(rename = "in")]
    pub input: u64,
    #[serde(rename = "out")]
    pub output: u64,
    #[serde(default)]
    pub hash_ids: Vec<i64>,
    #[serde(default)]
    #[allow(dead_code)]
    pub input_types: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    pub output_types: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    pub stop: String,
    /// Server time of the call, seconds.
    #[serde(default)]
    pub api_time: Option<f64>,
    /// The user's (or tool's) time before the call, seconds.
    #[serde(default)]
    pub think_time: Option<f64>,
    #[serde(default)]
    #[allow(dead_code)]
    pub ttft: Option<f64>,
}

/// A subagent (`type` `"subagent"`): its own calls, started at `t`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subagent {
    pub t: f64,
    pub agent_id: String,
    #[allow(dead_code)]
    pub subagent_type: String,
    #[allow(dead_code)]
    pub status: String,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    #[serde(default)]
    #[allow(dead_code)]
    pub total_tokens: Option<i64>,
    #[serde(default)]
    #[allow(dead_code)]
    pub tool_use_count: Option<i64>,
    #[serde(deserialize_with = "calls")]
    pub requests: Vec<Call>,
    #[allow(dead_code)]
    pub models: Vec<String>,
    #[serde(default)]
    pub tool_tokens: u64,
    #[serde(default)]
    pub system_tokens: u64,
}

/// Parses a trace, with the rules serde's derive cannot say: `block_size` above 0, each
/// request's `type`, `ttft` only on a streamed call.
pub fn parse(value: Value) -> Result<WekaTrace, String> {
    let trace: WekaTrace = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if trace.block_size == 0 {
        return Err("block_size: must be greater than 0".into());
    }
    if trace.block_size > MAX_BLOCK_SIZE {
        return Err(format!(
            "block_size: {} is more tokens than a KV block holds (at most {MAX_BLOCK_SIZE})",
            trace.block_size
        ));
    }
    let calls = trace.requests.iter().flat_map(|r| match r {
        Request::Call(c) => std::slice::from_ref(c).iter(),
        Request::Subagent(s) => s.requests.iter(),
    });
    for c in calls {
        if c.input > MAX_TOKENS || c.output > MAX_TOKENS {
            return Err(format!(
                "a request of {} input and {} output tokens: ringperf builds prompts and asks \
                 for outputs of at most {MAX_TOKENS} tokens",
                c.input, c.output
            ));
        }
    }
    Ok(trace)
}

/// The largest block size accepted (AIPerf's traces use 64).
const MAX_BLOCK_SIZE: u64 = 1 << 16;
/// The most tokens a request's prompt or output may have: 16 Mi, beyond any model's context.
const MAX_TOKENS: u64 = 1 << 24;

/// One request of a trace (`nested`: a subagent may be one) or of a subagent.
fn request(mut r: Value, nested: bool) -> Result<Request, String> {
    let Some(map) = r.as_object_mut() else {
        return Err("expected an object".into());
    };
    let kind = match map.remove("type") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("type: expected a string".into()),
        None => return Err("type: field required (\"n\", \"s\" or \"subagent\")".into()),
    };
    match kind.as_str() {
        "n" | "s" => {
            if kind == "n" && map.contains_key("ttft") {
                return Err("ttft: extra field not permitted on a \"n\" request".into());
            }
            serde_json::from_value(r)
                .map(Request::Call)
                .map_err(|e| e.to_string())
        }
        "subagent" if nested => serde_json::from_value(r)
            .map(Request::Subagent)
            .map_err(|e| e.to_string()),
        other => Err(format!(
            "type: '{other}' is not one of {}",
            if nested {
                "\"n\", \"s\", \"subagent\""
            } else {
                "\"n\", \"s\" (a subagent's requests)"
            }
        )),
    }
}

fn trace_requests<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Request>, D::Error> {
    let items = Vec::<Value>::deserialize(d)?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            request(v, true).map_err(|e| serde::de::Error::custom(format!("requests[{i}]: {e}")))
        })
        .collect()
}

fn calls<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Call>, D::Error> {
    let items = Vec::<Value>::deserialize(d)?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| match request(v, false) {
            Ok(Request::Call(c)) => Ok(c),
            Ok(Request::Subagent(_)) => Err(serde::de::Error::custom(format!(
                "requests[{i}]: a subagent's requests cannot be subagents"
            ))),
            Err(e) => Err(serde::de::Error::custom(format!("requests[{i}]: {e}"))),
        })
        .collect()
}
