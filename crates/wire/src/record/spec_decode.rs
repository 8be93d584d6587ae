//! One request's speculative-decoding acceptance (docs/metrics.md, "Speculative decoding"):
//! vLLM's `metrics.speculative_decoding` object (`--per-request-spec-decode-metrics`), read and
//! checked as AIPerf 0.13 reads it.

use serde_json::Value;

/// What a request's speculative decoder did.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecDecode {
    /// `mean_acceptance_length` as sent: tokens a verification step, bonus included.
    pub mean_acceptance_length: f64,
    /// `draft_acceptance_rate` as sent (0..1).
    pub draft_acceptance_rate: f64,
    /// `(accepted drafts j, steps that accepted exactly j)`, zero buckets left out, by `j`.
    pub histogram: Vec<(u32, u64)>,
    /// `num_accepted_draft_tokens`.
    pub accepted: u64,
    /// `num_draft_tokens`.
    pub drafted: u64,
    /// `num_spec_steps`.
    pub steps: u64,
}

/// A JSON integer as AIPerf's pydantic takes an `int` field: an integer, or a float without a
/// fraction; never a bool or a string.
fn int(v: &Value, key: &str) -> Result<i64, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| format!("{key}: not an integer")),
        _ => Err(format!("{key}: not an integer")),
    }
}

fn count(p: &Value, key: &str) -> Result<u64, String> {
    let v = p.get(key).ok_or_else(|| format!("{key}: missing"))?;
    u64::try_from(int(v, key)?).map_err(|_| format!("{key}: negative"))
}

fn finite(p: &Value, key: &str) -> Result<f64, String> {
    p.get(key)
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite())
        .ok_or_else(|| format!("{key}: not a finite number"))
}

/// An optional per-step list: each entry a count; `None` when absent or `null`.
fn per_step(p: &Value, key: &str) -> Result<Option<Vec<u64>>, String> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| u64::try_from(int(v, key)?).map_err(|_| format!("{key}: negative")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("{key}: not a list")),
    }
}

impl SpecDecode {
    /// Whether `payload` is vLLM's shape (AIPerf's adapter claims an object with both
    /// `acceptance_histogram` and `num_spec_steps`).
    #[must_use]
    pub fn is_vllm(payload: &Value) -> bool {
        payload.get("acceptance_histogram").is_some() && payload.get("num_spec_steps").is_some()
    }

    /// Reads vLLM's payload.
    ///
    /// # Errors
    /// What AIPerf refuses, said in words: a missing or mistyped field; a histogram that is not
    /// a list of integers (bools refused), or whose length is not `num_spec_tokens + 1` when that
    /// is sent; counts that contradict each other (the histogram's steps or its weighted sum
    /// against `num_spec_steps` / `num_accepted_draft_tokens`, more accepted than drafted, per
    /// step lists of another length or sum, a step accepting more than it drafted).
    pub fn from_vllm(payload: &Value) -> Result<Self, String> {
        let Some(Value::Array(raw)) = payload.get("acceptance_histogram") else {
            return Err("acceptance_histogram: not a list of integers".into());
        };
        let mut dense = Vec::with_capacity(raw.len());
        for v in raw {
            // An integer only (a bool or a float is refused, as AIPerf's `type(c) is int`).
            let n = v
                .as_u64()
                .filter(|_| v.is_u64())
                .ok_or("acceptance_histogram: not a list of non-negative integers")?;
            dense.push(n);
        }
        if let Some(k) = payload.get("num_spec_tokens").filter(|v| !v.is_null()) {
            let k = u64::try_from(int(k, "num_spec_tokens")?)
                .map_err(|_| "num_spec_tokens: negative".to_owned())?;
            if dense.len() as u64 != k + 1 {
                return Err(format!(
                    "acceptance_histogram has {} buckets, expected num_spec_tokens + 1 = {}",
                    dense.len(),
                    k + 1
                ));
            }
        }
        let s = Self {
            mean_acceptance_length: finite(payload, "mean_acceptance_length")?,
            draft_acceptance_rate: finite(payload, "draft_acceptance_rate")?,
            histogram: (dense.iter().enumerate())
                .filter(|(_, c)| **c != 0)
                .map(|(j, c)| (j as u32, *c))
                .collect(),
            accepted: count(payload, "num_accepted_draft_tokens")?,
            drafted: count(payload, "num_draft_tokens")?,
            steps: count(payload, "num_spec_steps")?,
        };
        let steps: u64 = s.histogram.iter().map(|(_, c)| c).sum();
        if steps != s.steps {
            return Err(format!(
                "acceptance_histogram counts sum to {steps}, but num_spec_steps is {}",
                s.steps
            ));
        }
        let weighted: u64 = s.histogram.iter().map(|(j, c)| u64::from(*j) * c).sum();
        if weighted != s.accepted {
            return Err(format!(
                "acceptance_histogram j-weighted sum is {weighted}, but num_accepted_draft_tokens is {}",
                s.accepted
            ));
        }
        if s.accepted > s.drafted {
            return Err(format!(
                "num_accepted_draft_tokens ({}) exceeds num_draft_tokens ({})",
                s.accepted, s.drafted
            ));
        }
        let accepted = per_step(payload, "per_step_accepted")?;
        let drafted = per_step(payload, "per_step_drafted")?;
        for (list, total, name) in [
            (&accepted, s.accepted, "per_step_accepted"),
            (&drafted, s.drafted, "per_step_drafted"),
        ] {
            if let Some(l) = list {
                if l.len() as u64 != s.steps {
                    return Err(format!(
                        "{name} has {} entries, but num_spec_steps is {}",
                        l.len(),
                        s.steps
                    ));
                }
                if l.iter().sum::<u64>() != total {
                    return Err(format!("{name} does not sum to its total"));
                }
            }
        }
        if let (Some(a), Some(d)) = (&accepted, &drafted)
            && a.iter().zip(d).any(|(a, d)| a > d)
        {
            return Err("a verification step accepted more drafts than it proposed".into());
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({
            "mean_acceptance_length": 2.5,
            "draft_acceptance_rate": 0.5,
            "acceptance_histogram": [1, 1, 1, 1],
            "num_accepted_draft_tokens": 6,
            "num_draft_tokens": 12,
            "num_spec_steps": 4,
            "num_spec_tokens": 3
        })
    }

    #[test]
    fn reads_vllms_payload_into_a_sparse_histogram() {
        let mut p = good();
        p["acceptance_histogram"] = json!([0, 2, 0, 1]);
        p["num_spec_steps"] = json!(3);
        p["num_accepted_draft_tokens"] = json!(5);
        let s = SpecDecode::from_vllm(&p).unwrap();
        assert_eq!(s.histogram, [(1, 2), (3, 1)]);
        assert_eq!((s.steps, s.accepted, s.drafted), (3, 5, 12));
        assert!(SpecDecode::is_vllm(&p));
        assert!(!SpecDecode::is_vllm(&json!({"num_spec_steps": 1})));
    }

    #[test]
    fn refuses_what_aiperf_refuses() {
        let bad = |edit: &dyn Fn(&mut Value)| {
            let mut p = good();
            edit(&mut p);
            SpecDecode::from_vllm(&p).unwrap_err()
        };
        assert!(bad(&|p| p["acceptance_histogram"] = json!([1, true, 1, 1])).contains("integers"));
        assert!(bad(&|p| p["acceptance_histogram"] = json!("1111")).contains("list"));
        assert!(bad(&|p| p["acceptance_histogram"] = json!([1, 1, 1])).contains("buckets"));
        assert!(bad(&|p| p["num_spec_steps"] = json!(5)).contains("sum to 4"));
        assert!(bad(&|p| p["num_accepted_draft_tokens"] = json!(7)).contains("j-weighted"));
        assert!(bad(&|p| p["num_draft_tokens"] = json!(5)).contains("exceeds"));
        assert!(bad(&|p| p["per_step_accepted"] = json!([1, 2, 3])).contains("entries"));
        assert!(
            bad(&|p| {
                p["per_step_accepted"] = json!([0, 1, 2, 3]);
                p["per_step_drafted"] = json!([3, 3, 3, 2]);
            })
            .contains("does not sum")
        );
        assert!(
            bad(&|p| {
                p["per_step_accepted"] = json!([0, 1, 2, 3]);
                p["per_step_drafted"] = json!([3, 3, 4, 2]);
            })
            .contains("more drafts")
        );
        assert!(bad(&|p| p["mean_acceptance_length"] = json!("2.5")).contains("finite"));
        assert!(
            bad(&|p| {
                p.as_object_mut().unwrap().remove("num_draft_tokens");
            })
            .contains("missing")
        );
        // Consistent per-step lists and no num_spec_tokens are fine.
        let mut p = good();
        p["per_step_accepted"] = json!([1, 0, 3, 2]);
        p["per_step_drafted"] = json!([3, 3, 3, 3]);
        p.as_object_mut().unwrap().remove("num_spec_tokens");
        assert!(SpecDecode::from_vllm(&p).is_ok());
    }
}
