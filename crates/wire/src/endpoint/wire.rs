//! The few fields of an OpenAI-style response object that the metrics need, decoded with
//! sonic-rs into borrowed views.
//!
//! Every field type here is lenient: a value of an unexpected JSON type reads as absent instead
//! of failing the whole object, because servers and proxies emit odd shapes (`"content": null`,
//! `"usage": []`, `"choices": {}`) and AIPerf degrades those to "no data" rather than erroring.
//! Strings borrow from the body unless they contain escapes. Nothing here allocates except an
//! escaped string and the text of tool calls.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::record::Usage;

/// Visitor methods that map the listed kinds of JSON value to the "absent" value, draining
/// nested arrays and objects so the parser stays in step.
macro_rules! absent {
    ($none:expr; $($kind:ident),+) => {
        $(absent!(@$kind $none);)+
    };
    (@scalars $none:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
    (@numbers $none:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
    (@strings $none:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
    (@arrays $none:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
    (@objects $none:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

/// One response object: a streamed chunk or a whole non-streamed body.
#[derive(serde::Deserialize, Default)]
pub(in crate::endpoint) struct Body<'a> {
    #[serde(default, borrow)]
    pub object: Str<'a>,
    #[serde(default, borrow)]
    pub choices: FirstChoice<'a>,
    #[serde(default)]
    pub usage: WireUsage,
    /// `metrics.speculative_decoding` (vLLM's per-request speculative-decoding stats).
    #[serde(default)]
    pub metrics: WireMetrics,
}

/// The response-root `metrics` object: only its `speculative_decoding` object is kept, as
/// parsed JSON (it is sent once per request); anything else reads as absent.
#[derive(Default)]
pub(in crate::endpoint) struct WireMetrics {
    pub speculative_decoding: Option<serde_json::Value>,
}

impl<'de> Deserialize<'de> for WireMetrics {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WireMetrics;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireMetrics, A::Error> {
                let mut m = WireMetrics::default();
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    if key.0.as_deref() == Some("speculative_decoding") {
                        let v: serde_json::Value = map.next_value()?;
                        m.speculative_decoding = v.is_object().then_some(v);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(m)
            }
            absent!(WireMetrics::default(); scalars, numbers, strings, arrays);
        }
        d.deserialize_any(V)
    }
}

/// `choices[0]`; the other choices are skipped.
#[derive(serde::Deserialize, Default)]
pub(in crate::endpoint) struct Choice<'a> {
    #[serde(default, borrow)]
    pub message: Obj<Delta<'a>>,
    #[serde(default, borrow)]
    pub delta: Obj<Delta<'a>>,
    #[serde(default, borrow)]
    pub text: Str<'a>,
}

/// A chat `message` or `delta`.
#[derive(serde::Deserialize, Default)]
pub(in crate::endpoint) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Str<'a>,
    #[serde(default, borrow)]
    pub reasoning_content: Str<'a>,
    #[serde(default, borrow)]
    pub reasoning: Str<'a>,
    #[serde(default)]
    pub tool_calls: ToolCallText,
}

#[derive(serde::Deserialize, Default)]
struct ToolCall<'a> {
    #[serde(default, borrow)]
    function: Obj<Function<'a>>,
}

#[derive(serde::Deserialize, Default)]
struct Function<'a> {
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    arguments: Str<'a>,
}

/// A JSON string, or `None` for any other JSON value.
#[derive(Default)]
pub(in crate::endpoint) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The string if it is present and non-empty (Python truthiness).
    pub fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v))))
            }
            absent!(Str(None); scalars, numbers, arrays, objects);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A JSON object decoded as `T`, or `None` for any other JSON value.
pub(in crate::endpoint) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            absent!(Obj(None); scalars, numbers, strings, arrays);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// `choices[0]` when `choices` is a non-empty array whose first element is an object.
#[derive(Default)]
pub(in crate::endpoint) struct FirstChoice<'a>(pub Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Obj<Choice<'a>>>()?.and_then(|c| c.0);
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            absent!(FirstChoice(None); scalars, numbers, strings, objects);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Every tool call's `function.name` and `function.arguments`, concatenated in order.
#[derive(Default)]
pub(in crate::endpoint) struct ToolCallText(pub String);

impl<'de> Deserialize<'de> for ToolCallText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolCallText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut text = String::new();
                while let Some(call) = seq.next_element::<Obj<ToolCall<'de>>>()? {
                    if let Some(f) = call.0.and_then(|c| c.function.0) {
                        text.push_str(f.name.non_empty().unwrap_or(""));
                        text.push_str(f.arguments.non_empty().unwrap_or(""));
                    }
                }
                Ok(ToolCallText(text))
            }
            absent!(ToolCallText(String::new()); scalars, numbers, strings, objects);
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer (an integral float is accepted), or `None` for anything else.
#[derive(Default, Clone, Copy)]
struct Num(Option<u64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                let ok = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64;
                // The cast is exact: `v` is a non-negative integer below 2^64.
                Ok(Num(ok.then_some(v as u64)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Num, E> {
                Ok(Num(None))
            }
            absent!(Num(None); scalars, arrays, objects);
        }
        d.deserialize_any(V)
    }
}

/// A usage count under one key name: whether the key was sent at all, and its value if it is a
/// count. AIPerf 0.13's `Usage` reads the first synonym *present*, so a sent `0` (or a sent
/// non-count) is the answer and the next synonym is not consulted.
#[derive(Default, Clone, Copy)]
struct Field {
    sent: bool,
    value: Option<u64>,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Num(value) = Num::deserialize(d)?;
        Ok(Field { sent: true, value })
    }
}

/// The value of the first sent key among `keys` (AIPerf's `_first_present`).
fn first_sent<const N: usize>(keys: [Field; N]) -> Option<u64> {
    keys.into_iter().find(|k| k.sent).and_then(|k| k.value)
}

#[derive(serde::Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Field,
    #[serde(default)]
    audio_tokens: Field,
}

#[derive(serde::Deserialize, Default)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Field,
    #[serde(default)]
    audio_tokens: Field,
    #[serde(default)]
    accepted_prediction_tokens: Field,
    #[serde(default)]
    rejected_prediction_tokens: Field,
}

/// The `usage` object as sent, over the field names of OpenAI (chat and Responses), vLLM and
/// Anthropic. `present` is whether it was a non-empty object (AIPerf ignores `{}` and `null`).
#[derive(Default)]
pub(in crate::endpoint) struct WireUsage {
    pub present: bool,
    prompt_tokens: Field,
    input_tokens: Field,
    completion_tokens: Field,
    output_tokens: Field,
    total_tokens: Field,
    cache_read_input_tokens: Field,
    cache_creation_input_tokens: Field,
    prompt_details: PromptDetails,
    input_details: PromptDetails,
    completion_details: CompletionDetails,
    output_details: CompletionDetails,
}

impl<'de> Deserialize<'de> for WireUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WireUsage;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireUsage, A::Error> {
                let mut u = WireUsage::default();
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    u.present = true;
                    let key = key.0.unwrap_or_default();
                    match key.as_ref() {
                        "prompt_tokens" => u.prompt_tokens = map.next_value()?,
                        "input_tokens" => u.input_tokens = map.next_value()?,
                        "completion_tokens" => u.completion_tokens = map.next_value()?,
                        "output_tokens" => u.output_tokens = map.next_value()?,
                        "total_tokens" => u.total_tokens = map.next_value()?,
                        "cache_read_input_tokens" => {
                            u.cache_read_input_tokens = map.next_value()?
                        }
                        "cache_creation_input_tokens" => {
                            u.cache_creation_input_tokens = map.next_value()?
                        }
                        "prompt_tokens_details" => {
                            u.prompt_details = map.next_value::<Obj<_>>()?.0.unwrap_or_default()
                        }
                        "input_tokens_details" => {
                            u.input_details = map.next_value::<Obj<_>>()?.0.unwrap_or_default()
                        }
                        "completion_tokens_details" => {
                            u.completion_details = map.next_value::<Obj<_>>()?.0.unwrap_or_default()
                        }
                        "output_tokens_details" => {
                            u.output_details = map.next_value::<Obj<_>>()?.0.unwrap_or_default()
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(u)
            }
            absent!(WireUsage::default(); scalars, numbers, strings, arrays);
        }
        d.deserialize_any(V)
    }
}

impl WireUsage {
    /// Normalizes the names (docs/endpoints.md) as AIPerf 0.13's `Usage` properties do: for each
    /// count, the first synonym the server *sent* wins, OpenAI's name first, then the
    /// Responses / Anthropic one; a sent `0` is a `0` (`prompt_tokens_details.cached_tokens: 0`
    /// is a cache-read count of 0), and so is every other count. The `*_details` objects are
    /// searched in order (`prompt_tokens_details`, then `input_tokens_details`) for the first
    /// one holding the field.
    pub fn normalize(&self) -> Usage {
        let (p, i) = (&self.prompt_details, &self.input_details);
        let (c, o) = (&self.completion_details, &self.output_details);
        Usage {
            prompt_tokens: first_sent([self.prompt_tokens, self.input_tokens]),
            completion_tokens: first_sent([self.completion_tokens, self.output_tokens]),
            total_tokens: self.total_tokens.value,
            reasoning_tokens: first_sent([c.reasoning_tokens, o.reasoning_tokens]),
            prompt_cache_read_tokens: first_sent([
                p.cached_tokens,
                i.cached_tokens,
                self.cache_read_input_tokens,
            ]),
            prompt_cache_write_tokens: self.cache_creation_input_tokens.value,
            prompt_audio_tokens: first_sent([p.audio_tokens, i.audio_tokens]),
            completion_audio_tokens: first_sent([c.audio_tokens, o.audio_tokens]),
            accepted_prediction_tokens: first_sent([
                c.accepted_prediction_tokens,
                o.accepted_prediction_tokens,
            ]),
            rejected_prediction_tokens: first_sent([
                c.rejected_prediction_tokens,
                o.rejected_prediction_tokens,
            ]),
        }
    }
}
