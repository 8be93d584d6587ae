//! Which endpoint types take images or produce videos, and how many images a wire payload
//! carries (AIPerf 0.13's `supports_images` / `produces_videos` metadata and its
//! `extract_payload_inputs` count; docs/metrics.md, "Media").

use serde_json::Value;

/// Where a type's bodies carry their images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageParts {
    /// The type takes no images: the image metrics do not apply.
    None,
    /// Content parts of these `type`s inside the `messages` / `input` item arrays (AIPerf's
    /// generic walk over `PART_TYPES[IMAGE]`).
    Parts(&'static [&'static str]),
    /// Items of the top-level `input` list whose `type` is `image_url` (NIM image retrieval).
    InputList,
}

/// A type's media capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaCaps {
    pub images: ImageParts,
    /// The type's answers are videos (AIPerf's `produces_videos`).
    pub produces_videos: bool,
}

impl MediaCaps {
    /// No images in, no videos out.
    pub const NONE: MediaCaps = MediaCaps {
        images: ImageParts::None,
        produces_videos: false,
    };
    /// Chat's `image_url` parts (also every type that keeps AIPerf's default part names).
    pub const IMAGE_URL_PARTS: MediaCaps = MediaCaps {
        images: ImageParts::Parts(&["image_url"]),
        produces_videos: false,
    };

    /// The image metrics apply (AIPerf's `supports_images`).
    pub fn supports_images(&self) -> bool {
        self.images != ImageParts::None
    }

    /// The image parts of a wire payload, counted as AIPerf counts them.
    pub fn count_images(&self, payload: &Value) -> u32 {
        match self.images {
            ImageParts::None => 0,
            ImageParts::Parts(types) => count_parts(payload, types),
            ImageParts::InputList => {
                payload
                    .get("input")
                    .and_then(Value::as_array)
                    .map_or(0, |items| {
                        count(
                            items
                                .iter()
                                .filter(|i| i.get("type") == Some(&"image_url".into())),
                        )
                    })
            }
        }
    }
}

/// A count that saturates at `u32::MAX`.
fn count<T>(items: impl Iterator<Item = T>) -> u32 {
    u32::try_from(items.count()).unwrap_or(u32::MAX)
}

/// Parts of `types` in the content lists of the `messages` and `input` item arrays, each array
/// walked only when one of its items is an object with a `role` or a `type` (AIPerf's test that
/// tells chat items from an embeddings `input` of strings).
fn count_parts(payload: &Value, types: &[&str]) -> u32 {
    let mut total = 0u32;
    for field in ["messages", "input"] {
        let Some(items) = payload.get(field).and_then(Value::as_array) else {
            continue;
        };
        let shaped = items
            .iter()
            .any(|i| i.get("role").is_some() || i.get("type").is_some());
        if !shaped {
            continue;
        }
        for item in items {
            let Some(parts) = item.get("content").and_then(Value::as_array) else {
                continue;
            };
            let n = count(parts.iter().filter(|p| {
                p.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| types.contains(&t))
            }));
            total = total.saturating_add(n);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn chat_counts_image_parts_of_every_message() {
        let body = v(r#"{"messages":[
            {"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"image_url","image_url":{"url":"w"}}]},
            {"role":"assistant","content":"ok"},
            {"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}},{"type":"input_audio","input_audio":{}}]}],
            "model":"m"}"#);
        assert_eq!(MediaCaps::IMAGE_URL_PARTS.count_images(&body), 3);
        // The Responses API's part name is not chat's.
        let responses = MediaCaps {
            images: ImageParts::Parts(&["input_image"]),
            produces_videos: false,
        };
        assert_eq!(responses.count_images(&body), 0);
        assert_eq!(MediaCaps::NONE.count_images(&body), 0);
    }

    #[test]
    fn strings_are_not_items_and_flat_inputs_have_no_parts() {
        // An embeddings `input` of strings is not an item array.
        let body = v(r#"{"input":["data:image/png;base64,AA","b"]}"#);
        assert_eq!(MediaCaps::IMAGE_URL_PARTS.count_images(&body), 0);
        // Parts with no `content` list (image retrieval's shape) are not walked by the parts rule.
        let retrieval = v(
            r#"{"input":[{"type":"image_url","url":"a"},{"type":"image_url","url":"b"},{"type":"text"}]}"#,
        );
        assert_eq!(MediaCaps::IMAGE_URL_PARTS.count_images(&retrieval), 0);
        let list = MediaCaps {
            images: ImageParts::InputList,
            produces_videos: false,
        };
        assert_eq!(list.count_images(&retrieval), 2);
        assert_eq!(list.count_images(&v("[1,2]")), 0);
        assert_eq!(list.count_images(&v(r#"{"input":"x"}"#)), 0);
    }
}
