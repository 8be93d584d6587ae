//! SPEED-Bench (NVIDIA's speculative-decoding benchmark) JSONL files, as AIPerf 0.13's
//! `speed_bench_*` formats read them: one conversation per row
//! (`{"question_id", "category", "messages": [{"role", "content"}, …]}`), its id the row's
//! `question_id`, one turn per message with the message's role (a leading `system` message stays
//! a turn: the rows are a fixed benchmark). A format named for a category (`speed_bench_coding`,
//! `speed_bench_throughput_8k_mixed`) keeps only that category's rows; `speed_bench_qualitative`
//! and `speed_bench_throughput_<n>k` keep every row. Rows are checked as AIPerf checks them: a
//! 32-character `question_id`, a non-empty `category`, messages with non-blank `role` and
//! `content`, and never the upstream placeholder text that stands where the data must be fetched.

use std::path::Path;

use serde_json::Value;

use ringperf_wire::conversation::{Content, Dataset, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;
use super::lines::JsonLines;
use super::session::{SessionIds, Sessions};

/// What stands in a published row's `content` when the data must be fetched from its source.
const PLACEHOLDER: &str =
    "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH";

/// The qualitative split's categories.
const QUALITATIVE: [&str; 11] = [
    "coding",
    "humanities",
    "math",
    "multilingual",
    "qa",
    "rag",
    "reasoning",
    "roleplay",
    "stem",
    "summarization",
    "writing",
];

/// The throughput splits (input lengths) and their categories (entropy tiers).
const THROUGHPUT: [&str; 5] = ["1k", "2k", "8k", "16k", "32k"];
const ENTROPY: [&str; 3] = ["low_entropy", "mixed", "high_entropy"];

/// Every `speed_bench_*` format AIPerf 0.13 registers and the category it keeps (`None`: all).
pub static FORMATS: std::sync::LazyLock<Vec<(&'static str, Option<&'static str>)>> =
    std::sync::LazyLock::new(|| {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let mut v = vec![("speed_bench_qualitative", None)];
        v.extend(
            QUALITATIVE
                .iter()
                .map(|c| (leak(format!("speed_bench_{c}")), Some(*c))),
        );
        for n in THROUGHPUT {
            v.push((leak(format!("speed_bench_throughput_{n}")), None));
            for e in ENTROPY {
                v.push((leak(format!("speed_bench_throughput_{n}_{e}")), Some(e)));
            }
        }
        v
    });

/// Loads a SPEED-Bench file keeping the rows of `category` (all with `None`).
///
/// # Errors
/// The first row AIPerf would refuse, naming its line and field; a file with no row at all.
pub fn load(
    path: &Path,
    category: Option<&str>,
    ids: &mut SessionIds,
) -> Result<Dataset, LoadError> {
    let mut lines = JsonLines::open(path)?;
    let mut sessions = Sessions::default();
    let mut rows = 0u64;
    while let Some((line, map)) = lines.next_object()? {
        rows += 1;
        let ctx = Ctx { path, line };
        let bad =
            |field: &str, why: &str| ctx.err(field.to_owned(), LoadErrorKind::Invalid(why.into()));
        let id = match map.get("question_id") {
            Some(Value::String(s)) if s.chars().count() == 32 => s.clone(),
            Some(Value::String(_)) => {
                return Err(bad("question_id", "must be exactly 32 characters long"));
            }
            _ => return Err(ctx.err("question_id".to_owned(), LoadErrorKind::Missing)),
        };
        let row_category = match map.get("category") {
            Some(Value::String(s)) if !s.is_empty() => s.as_str(),
            Some(Value::String(_)) => return Err(bad("category", "must not be empty")),
            _ => return Err(ctx.err("category".to_owned(), LoadErrorKind::Missing)),
        };
        let messages = match map.get("messages") {
            Some(Value::Array(m)) if !m.is_empty() => m,
            Some(Value::Array(_)) => return Err(bad("messages", "must not be empty")),
            _ => return Err(ctx.err("messages".to_owned(), LoadErrorKind::Missing)),
        };
        let mut turns = Vec::with_capacity(messages.len());
        for m in messages {
            let field = |k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
            };
            let (Some(role), Some(content)) = (field("role"), field("content")) else {
                return Err(bad(
                    "messages",
                    "must be a non-empty list of dictionaries with role and content fields, \
                     and the content must not be the placeholder string",
                ));
            };
            if content == PLACEHOLDER {
                return Err(bad(
                    "messages",
                    "holds the placeholder text, not the benchmark's prompts: fetch the full \
                     data from its source first",
                ));
            }
            turns.push(Turn {
                content: Content::Texts(vec![content.to_owned()]),
                role: Some(role.to_owned()),
                ..Turn::default()
            });
        }
        if category.is_some_and(|c| c != row_category) {
            continue;
        }
        let index = sessions.index(Some(id), ids);
        sessions.conversations[index].turns.extend(turns);
    }
    if rows == 0 {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    if let Some(c) = category.filter(|_| sessions.conversations.is_empty()) {
        eprintln!(
            "ringperf: warning: SPEED-Bench category filter '{c}' matched no rows in {}. Verify \
             the configured category exists in this dataset.",
            path.display()
        );
    }
    Ok(Dataset {
        replay: false,
        conversations: sessions.conversations,
        default_sampling: Sampling::Sequential,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, category: &str, messages: &str) -> String {
        format!(
            "{{\"question_id\": \"{id}\", \"category\": \"{category}\", \"messages\": {messages}}}\n"
        )
    }

    const A: &str = "a402d8ed4cfb51777013fa0be0aef689";
    const B: &str = "7933fd719939ae911440391e31b06b21";

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn a_category_keeps_its_rows_each_message_a_turn_with_its_role() {
        let f = file(&format!(
            "{}{}",
            row(
                A,
                "coding",
                r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Reverse a list."}]"#
            ),
            row(B, "math", r#"[{"role": "user", "content": "2+2?"}]"#),
        ));
        let d = load(f.path(), Some("coding"), &mut SessionIds::new(true)).unwrap();
        assert_eq!(d.conversations.len(), 1);
        let c = &d.conversations[0];
        assert_eq!(c.session_id, A);
        // The system message stays a turn (no hoisting), roles kept.
        assert_eq!(c.system, None);
        let roles: Vec<_> = c.turns.iter().map(|t| t.role.as_deref()).collect();
        assert_eq!(roles, [Some("system"), Some("user")]);
        assert_eq!(
            c.turns[1].content,
            Content::Texts(vec!["Reverse a list.".into()])
        );
        let all = load(f.path(), None, &mut SessionIds::new(true)).unwrap();
        assert_eq!(all.conversations.len(), 2);
        // A category with no row: an empty dataset (AIPerf warns and goes on).
        let none = load(f.path(), Some("rag"), &mut SessionIds::new(true)).unwrap();
        assert!(none.conversations.is_empty());
    }

    #[test]
    fn rows_are_checked_as_aiperf_checks_them() {
        let err = |text: String| {
            load(file(&text).path(), None, &mut SessionIds::new(true))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(row("short", "qa", r#"[{"role": "user", "content": "x"}]"#))
                .contains("question_id")
        );
        assert!(err(row(A, "", r#"[{"role": "user", "content": "x"}]"#)).contains("category"));
        assert!(err(row(A, "qa", "[]")).contains("messages"));
        assert!(err(row(A, "qa", r#"[{"role": "user", "content": "  "}]"#)).contains("messages"));
        assert!(
            err(row(
                A,
                "qa",
                &format!(r#"[{{"role": "user", "content": "{PLACEHOLDER}"}}]"#)
            ))
            .contains("placeholder")
        );
    }

    #[test]
    fn every_format_aiperf_registers_is_named() {
        assert_eq!(FORMATS.len(), 32);
        assert!(FORMATS.contains(&("speed_bench_coding", Some("coding"))));
        assert!(FORMATS.contains(&("speed_bench_throughput_8k_mixed", Some("mixed"))));
        assert!(FORMATS.contains(&("speed_bench_throughput_32k", None)));
    }
}
