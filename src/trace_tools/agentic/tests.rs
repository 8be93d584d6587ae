//! The generator's bounds and determinism, and its config's checks.

use super::config::{Config, load};
use super::synth::{EndReason, Synthesizer};
use super::write::dataset_jsonl;

fn sessions(cfg: &Config, seed: u64, n: usize) -> Vec<super::synth::Session> {
    Synthesizer::new(cfg.clone(), seed)
        .and_then(|mut s| s.sessions(n))
        .expect("the default config synthesizes")
}

#[test]
fn a_seed_gives_the_same_rows_and_another_seed_others() {
    let cfg = Config::default();
    let a = dataset_jsonl(&sessions(&cfg, 9, 40), 512);
    assert_eq!(a, dataset_jsonl(&sessions(&cfg, 9, 40), 512));
    assert_ne!(a, dataset_jsonl(&sessions(&cfg, 10, 40), 512));
}

#[test]
fn sessions_respect_the_context_limit_and_the_bounds() {
    let (_, cfg) = load("default").expect("the bundled config loads");
    let max_new = cfg.new_tokens.dist.max.unwrap_or(f64::MAX) as i64;
    for s in sessions(&cfg, 1, 200) {
        for (i, t) in s.turns.iter().enumerate() {
            assert!(t.input_length < cfg.max_prompt_tokens);
            assert!(
                (30..=1500).contains(&t.output_length),
                "{}",
                t.output_length
            );
            assert_eq!(t.hash_ids.len() as i64, (t.input_length + 511) / 512);
            if i > 0 {
                assert!((1..=max_new).contains(&t.new_tokens));
                assert!(t.delay_ms >= 0.0 && t.delay_ms <= 120_000.0);
                let prev = &s.turns[i - 1];
                assert_eq!(
                    t.input_length,
                    prev.input_length + prev.output_length + t.new_tokens
                );
            }
        }
        assert!(matches!(
            s.end_reason,
            EndReason::ForcedRetire | EndReason::ProbabilisticReset
        ));
    }
}

#[test]
fn a_manifest_reads_back_as_the_config_it_holds() {
    let cfg = Config::default()
        .with_overrides(Some(100_000), Some(900))
        .expect("in range");
    assert_eq!(cfg.max_prompt_tokens, 100_000);
    assert_eq!(cfg.generation_length.max, Some(900.0));
    let again = Config::from_value(&cfg.to_value()).expect("reads back");
    assert_eq!(again, cfg);
}

#[test]
fn bad_configs_are_refused_with_the_field() {
    let bad = [
        (
            r#"{"generation_length": {"mean": 5}}"#,
            "generation_length.median: Field required",
        ),
        (
            r#"{"block_size": 0}"#,
            "block_size: Input should be greater than or equal to 1",
        ),
        (
            r#"{"block_size": 1.5}"#,
            "block_size: Input should be a valid integer",
        ),
        (
            r#"{"reset": {"base_probability": 2}}"#,
            "less than or equal to 1",
        ),
        (r#"{"restart_turn_range": [4, 4]}"#, "ordered as [min, max)"),
        (
            r#"{"cache": {"layer2": {"mean": 5, "median": 5, "mu": 1}}}"#,
            "as a pair",
        ),
        (
            r#"{"restart_fraction": 0.1, "restart_initial_probability": 0.2}"#,
            "restart_fraction cannot differ",
        ),
    ];
    for (text, why) in bad {
        let v: serde_json::Value = serde_json::from_str(text).expect("test JSON");
        let err = Config::from_value(&v).expect_err(text);
        assert!(err.contains(why), "{text}: {err}");
    }
    let wide: serde_json::Value =
        serde_json::from_str(r#"{"cache": {"layer1_5_groups": {"num_groups": 1001}}}"#)
            .expect("test JSON");
    let cfg = Config::from_value(&wide).expect("a valid config");
    assert!(
        Synthesizer::new(cfg, 1)
            .err()
            .is_some_and(|e| e.contains("exceeds MAX_GROUPS=1000"))
    );
}
