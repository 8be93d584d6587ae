//! What `synthesize agentic-code` writes, as AIPerf 0.13 writes it: `dataset.jsonl` (mooncake
//! rows, one a turn: the new tokens as `input_length`, fresh hash ids for turns after the first),
//! `manifest.json` (the seed, the count, the config's name and the full config) and
//! `quality.json` (observed against target, NumPy's statistics rounded as AIPerf rounds them).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::config::Config;
use super::npy::np_sum;
use super::synth::{EndReason, Session, ceil_div};

/// A float as Python's `round(x, digits)` gives it: the nearest decimal, ties to even.
pub fn py_round(x: f64, digits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.digits$}").parse().unwrap_or(x)
}

fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The dataset rows: turn 0 with its prefix hash ids, its `timestamp` and `group_id` (and
/// `is_restart` on a continuation); later turns with ids from one cursor over the whole file,
/// and their `delay`.
pub fn dataset_jsonl(sessions: &[Session], block_size: i64) -> String {
    let mut out = String::new();
    let mut next_id: i64 = 0;
    for s in sessions {
        for (i, t) in s.turns.iter().enumerate() {
            let fresh: Vec<i64>;
            let ids: &[i64] = if i == 0 {
                if let Some(m) = t.hash_ids.iter().max() {
                    next_id = next_id.max(m + 1);
                }
                &t.hash_ids
            } else {
                let n = ceil_div(t.new_tokens.max(0), block_size);
                fresh = (next_id..next_id + n).collect();
                next_id += n;
                &fresh
            };
            let _ = write!(
                out,
                "{{\"session_id\":{},\"input_length\":{},\"output_length\":{},\"hash_ids\":[",
                Value::String(s.session_id.clone()),
                t.new_tokens,
                t.output_length
            );
            for (k, id) in ids.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{id}");
            }
            out.push(']');
            if i == 0 {
                let _ = write!(
                    out,
                    ",\"timestamp\":{},\"group_id\":{}",
                    num(py_round(t.timestamp_ms, 1)),
                    s.group_id
                );
                if s.is_restart_continuation {
                    out.push_str(",\"is_restart\":true");
                }
            } else {
                let _ = write!(out, ",\"delay\":{}", num(py_round(t.delay_ms, 1)));
            }
            out.push_str("}\n");
        }
    }
    out
}

/// `manifest.json`'s content.
pub fn manifest(cfg: &Config, seed: u64, sessions: usize, config_name: &str) -> Value {
    let mut m = Map::new();
    m.insert("seed".into(), seed.into());
    m.insert("num_sessions".into(), sessions.into());
    m.insert("config_name".into(), config_name.into());
    m.insert("generation_params".into(), cfg.to_value());
    Value::Object(m)
}

/// NumPy's linear-interpolation percentile of sorted `a` at `pct` (0–100).
fn percentile(a: &[f64], pct: f64) -> f64 {
    let n = a.len();
    let q = pct / 100.0;
    let vi = (n - 1) as f64 * q;
    if vi >= (n - 1) as f64 {
        return a[n - 1];
    }
    let prev = vi.floor();
    let (lo, hi) = (a[prev as usize], a[prev as usize + 1]);
    let t = vi - prev;
    let diff = hi - lo;
    if t >= 0.5 {
        hi - diff * (1.0 - t)
    } else {
        lo + diff * t
    }
}

/// AIPerf's percentile statistics of `a`: count, mean, std, median, p05…p99, rounded to 2.
fn stats(a: &[f64]) -> Value {
    let mut m = Map::new();
    m.insert("count".into(), a.len().into());
    let keys = ["mean", "std", "median", "p05", "p25", "p75", "p95", "p99"];
    if a.is_empty() {
        for k in keys {
            m.insert(k.into(), num(0.0));
        }
        return Value::Object(m);
    }
    let n = a.len() as f64;
    let mean = np_sum(a) / n;
    let sq: Vec<f64> = a.iter().map(|x| (x - mean) * (x - mean)).collect();
    let std = (np_sum(&sq) / n).sqrt();
    let mut sorted = a.to_vec();
    sorted.sort_by(f64::total_cmp);
    let half = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[half]
    } else {
        np_sum(&sorted[half - 1..=half]) / 2.0
    };
    let values = [
        mean,
        std,
        median,
        percentile(&sorted, 5.0),
        percentile(&sorted, 25.0),
        percentile(&sorted, 75.0),
        percentile(&sorted, 95.0),
        percentile(&sorted, 99.0),
    ];
    for (k, v) in keys.iter().zip(values) {
        m.insert((*k).into(), num(py_round(v, 2)));
    }
    Value::Object(m)
}

fn pct_error(target: f64, observed: f64) -> f64 {
    if target == 0.0 {
        0.0
    } else {
        (observed - target).abs() / target * 100.0
    }
}

/// One `observed_vs_target` entry.
fn metric(a: &[f64], target: Option<(f64, f64)>) -> Value {
    let observed = stats(a);
    let get = |k: &str| observed.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let mut m = Map::new();
    m.insert(
        "target_mean".into(),
        target.map_or(Value::Null, |t| num(t.0)),
    );
    m.insert(
        "target_median".into(),
        target.map_or(Value::Null, |t| num(t.1)),
    );
    let (mean, median) = (get("mean"), get("median"));
    m.insert("observed".into(), observed);
    m.insert(
        "pct_error_mean".into(),
        target.map_or(Value::Null, |t| num(py_round(pct_error(t.0, mean), 2))),
    );
    m.insert(
        "pct_error_median".into(),
        target.map_or(Value::Null, |t| num(py_round(pct_error(t.1, median), 2))),
    );
    Value::Object(m)
}

/// The config as `quality.json`'s flat `config_summary`.
fn config_summary(cfg: &Config) -> Value {
    let c = &cfg.cache;
    let fixed = (c.layer1_tokens + c.layer1_5_tokens) as f64;
    let mut m = Map::new();
    let mut f = |k: &str, v: Value| {
        m.insert(k.into(), v);
    };
    f("initial_context_mean", num(fixed + c.layer2.mean));
    f("initial_context_median", num(fixed + c.layer2.median));
    f("layer1_tokens", c.layer1_tokens.into());
    f("layer1_5_tokens", c.layer1_5_tokens.into());
    f("layer2_mean", num(c.layer2.mean));
    f("layer2_median", num(c.layer2.median));
    f("num_groups", c.num_groups.into());
    f("zipf_alpha", num(c.zipf_alpha));
    f("new_tokens_per_turn_mean", num(cfg.new_tokens.dist.mean));
    f(
        "new_tokens_per_turn_median",
        num(cfg.new_tokens.dist.median),
    );
    f("generation_length_mean", num(cfg.generation_length.mean));
    f(
        "generation_length_median",
        num(cfg.generation_length.median),
    );
    f("max_prompt_tokens", cfg.max_prompt_tokens.into());
    f("block_size", cfg.block_size.into());
    f(
        "inter_turn_delay_agentic_fraction",
        num(cfg.delay.agentic_fraction),
    );
    f(
        "inter_turn_delay_agentic_mean_ms",
        num(cfg.delay.agentic.mean),
    );
    f("inter_turn_delay_human_mean_ms", num(cfg.delay.human.mean));
    f("turn_mode_enabled", i64::from(cfg.turns.is_some()).into());
    if let Some(r) = &cfg.reset {
        f("reset_base_probability", num(r.base_probability));
        f("reset_context_scaling", num(r.context_scaling));
    }
    if let Some(t) = &cfg.turns {
        f("turns_mean", t.mean.into());
        f("turns_median", t.median.into());
        f("turns_min", t.min.into());
        f("turns_max", t.max.into());
        f(
            "turns_allow_truncation",
            i64::from(t.allow_truncation).into(),
        );
        if let Some(a) = t.max_session_attempts {
            f("turns_max_session_attempts", a.into());
        }
    }
    Value::Object(m)
}

/// `quality.json`'s content.
pub fn quality(sessions: &[Session], cfg: &Config) -> Value {
    let (mut initial, mut new_tokens, mut outputs, mut delays) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut turns_per = Vec::with_capacity(sessions.len());
    let mut utilization = Vec::with_capacity(sessions.len());
    let mut ends = [0usize; 4];
    for s in sessions {
        turns_per.push(s.turns.len() as f64);
        ends[match s.end_reason {
            EndReason::ForcedRetire => 0,
            EndReason::ProbabilisticReset => 1,
            EndReason::TargetTurnCount => 2,
            EndReason::RestartSplit => 3,
        }] += 1;
        if let Some(last) = s.turns.last() {
            utilization.push(last.input_length as f64 / cfg.max_prompt_tokens as f64);
        }
        for (i, t) in s.turns.iter().enumerate() {
            if i == 0 {
                initial.push(t.input_length as f64);
            } else {
                new_tokens.push(t.new_tokens as f64);
                delays.push(t.delay_ms);
            }
            outputs.push(t.output_length as f64);
        }
    }
    let c = &cfg.cache;
    let fixed = (c.layer1_tokens + c.layer1_5_tokens) as f64;
    let mut ovt = Map::new();
    if !initial.is_empty() {
        let t = (fixed + c.layer2.mean, fixed + c.layer2.median);
        ovt.insert("initial_context".into(), metric(&initial, Some(t)));
    }
    if !outputs.is_empty() {
        let g = &cfg.generation_length;
        ovt.insert(
            "generation_length".into(),
            metric(&outputs, Some((g.mean, g.median))),
        );
    }
    if !new_tokens.is_empty() {
        let d = &cfg.new_tokens.dist;
        ovt.insert(
            "new_tokens_per_turn".into(),
            metric(&new_tokens, Some((d.mean, d.median))),
        );
    }
    if !delays.is_empty() {
        ovt.insert("inter_turn_delay_ms".into(), metric(&delays, None));
    }
    if !turns_per.is_empty() {
        let t = cfg.turns.as_ref().map(|t| (t.mean as f64, t.median as f64));
        ovt.insert("turns_per_session".into(), metric(&turns_per, t));
    }
    let or_zero = |v: &[f64]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
    let total = sessions.len();
    let frac = |k: usize| num(py_round(k as f64 / total.max(1) as f64, 4));
    let mut end = Map::new();
    end.insert("total_sessions".into(), total.into());
    end.insert("forced_retires".into(), ends[0].into());
    end.insert("probabilistic_resets".into(), ends[1].into());
    end.insert("target_turn_completions".into(), ends[2].into());
    end.insert("restart_splits".into(), ends[3].into());
    end.insert("retire_fraction".into(), frac(ends[0]));
    end.insert("reset_fraction".into(), frac(ends[1]));
    end.insert("target_turn_fraction".into(), frac(ends[2]));
    end.insert("restart_split_fraction".into(), frac(ends[3]));
    end.insert(
        "final_context_utilization".into(),
        stats(&or_zero(&utilization)),
    );
    let mut q = Map::new();
    q.insert("config_summary".into(), config_summary(cfg));
    q.insert("observed_vs_target".into(), Value::Object(ovt));
    q.insert("session_stats".into(), stats(&or_zero(&turns_per)));
    q.insert("session_end_stats".into(), Value::Object(end));
    Value::Object(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_pythons() {
        // round(0.125, 2), round(0.375, 2), round(2.675, 2), round(19358.25, 1), round(1.05, 1)
        assert_eq!(py_round(0.125, 2), 0.12);
        assert_eq!(py_round(0.375, 2), 0.38);
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(19358.25, 1), 19358.2);
        assert_eq!(py_round(1.05, 1), 1.1);
    }

    #[test]
    fn percentiles_are_numpys_linear() {
        // np.percentile([1, 2, 4, 8, 16], q) for q in 5, 25, 75, 95, 99
        let a = [1.0, 2.0, 4.0, 8.0, 16.0];
        let got: Vec<f64> = [5.0, 25.0, 75.0, 95.0, 99.0]
            .iter()
            .map(|&q| percentile(&a, q))
            .collect();
        assert_eq!(got, [1.2, 2.0, 8.0, 14.399999999999999, 15.68]);
    }
}
