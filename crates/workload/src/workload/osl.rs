//! A loaded dataset's turns that name no output length take one drawn from `--osl` /
//! `--osl-stddev`, as AIPerf 0.13's composer finalizes every turn of a file: in file order, one
//! draw per such turn from the seeded stream `composer.turn.max_tokens` (the synthetic
//! prompts' own), with both figures truncated to integers ([`positive_normal_integer`]: with a
//! spread the values are ringperf's generator's, not AIPerf's). A turn
//! with its own length (`output_length`, a trace's `output_tokens`) keeps it and takes no draw;
//! a body sent verbatim (`raw_payload`, `inputs_json`) is left as it is.

use ringperf_wire::conversation::{Content, Conversation};

use super::child_rng;
use super::seq_dist::positive_normal_integer;

/// Gives every turn of `conversations` without a `max_tokens` one drawn from `mean` and
/// `stddev`. A mean below one draws nothing (AIPerf leaves such turns alone).
pub fn fill_missing(conversations: &mut [Conversation], mean: f64, stddev: f64, seed: Option<u64>) {
    let (mean, stddev) = (mean.trunc(), stddev.trunc());
    if mean < 1.0 {
        return;
    }
    let mut rng = child_rng(seed, "composer.turn.max_tokens");
    let turns = conversations.iter_mut().flat_map(|c| c.turns.iter_mut());
    for turn in turns.filter(|t| t.max_tokens.is_none() && !matches!(t.content, Content::Raw(_))) {
        turn.max_tokens = Some(positive_normal_integer(mean, stddev, &mut rng));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::conversation::Turn;

    fn conversation(turns: Vec<Turn>) -> Conversation {
        Conversation {
            turns,
            ..Conversation::default()
        }
    }

    /// AIPerf 0.13's run of `--osl 20 --random-seed 42` over a `single_turn` file of six
    /// records whose third names `output_length` 7 (its `inputs.json`): 20, 20, 7, 20, 20, 20.
    #[test]
    fn a_fixed_length_fills_every_turn_without_its_own() {
        let mut single: Vec<Conversation> = (0..6)
            .map(|i| {
                let mut t = Turn::text(format!("prompt number {i}"));
                if i == 2 {
                    t.max_tokens = Some(7);
                }
                conversation(vec![t])
            })
            .collect();
        fill_missing(&mut single, 20.9, 0.0, Some(42));
        let got: Vec<u32> = single
            .iter()
            .map(|c| c.turns[0].max_tokens.unwrap())
            .collect();
        assert_eq!(got, [20, 20, 7, 20, 20, 20]);
    }

    /// With a spread, a turn with its own length takes no draw (AIPerf's `inputs.json` for
    /// `--osl 20 --osl-stddev 5`: 27, 12, (7), 20, 27, 27 — the fourth record has the third
    /// draw); the draws go on from one conversation to the next, turn by turn, and depend on
    /// the seed only.
    #[test]
    fn a_turn_with_its_own_length_takes_no_draw() {
        let texts = |n: usize| -> Vec<Conversation> {
            (0..n)
                .map(|_| conversation(vec![Turn::text("t")]))
                .collect()
        };
        let mut plain = texts(5);
        fill_missing(&mut plain, 20.0, 5.0, Some(42));
        let plain: Vec<u32> = plain
            .iter()
            .map(|c| c.turns[0].max_tokens.unwrap())
            .collect();
        let mut with_own = texts(6);
        with_own[2].turns[0].max_tokens = Some(7);
        fill_missing(&mut with_own, 20.0, 5.0, Some(42));
        let got: Vec<u32> = with_own
            .iter()
            .map(|c| c.turns[0].max_tokens.unwrap())
            .collect();
        assert_eq!(got, [plain[0], plain[1], 7, plain[2], plain[3], plain[4]]);
        assert!(plain.iter().all(|&n| n >= 1) && plain.iter().any(|&n| n != 20));
        let mut turns = vec![conversation((0..3).map(|_| Turn::text("t")).collect()); 2];
        fill_missing(&mut turns, 20.0, 5.0, Some(42));
        let flat: Vec<u32> = (turns.iter())
            .flat_map(|c| c.turns.iter().map(|t| t.max_tokens.unwrap()))
            .collect();
        assert_eq!(flat[..5], plain[..]);
    }

    #[test]
    fn raw_bodies_and_a_mean_below_one_are_left_alone() {
        let mut c = vec![conversation(vec![Turn {
            content: Content::Raw(serde_json::json!({"messages": []})),
            ..Turn::default()
        }])];
        fill_missing(&mut c, 20.0, 0.0, Some(1));
        assert_eq!(c[0].turns[0].max_tokens, None);
        let mut c = vec![conversation(vec![Turn::text("a")])];
        fill_missing(&mut c, 0.9, 0.0, Some(1));
        assert_eq!(c[0].turns[0].max_tokens, None);
    }
}
