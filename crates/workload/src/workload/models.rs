//! Which model each turn asks for when `--model-names` lists several (AIPerf's
//! `--model-selection-strategy`, docs/datasets.md): `round_robin` gives the n-th turn of the
//! dataset, in dataset order, the model at `n mod len`; `random` draws one uniformly per turn from
//! the seeded stream `composer.turn.model_selection`. Chosen once, before the run (a streamed
//! trace: as each row is built, in the same order), so no request pays for it.

use rand::RngExt;
use rand::rngs::StdRng;

use ringperf_wire::conversation::Conversation;

/// How a turn's model is chosen among several.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum ModelSelection {
    /// The n-th turn gets model n mod len.
    #[default]
    #[value(name = "round_robin")]
    RoundRobin,
    /// Uniformly random per turn.
    #[value(name = "random")]
    Random,
}

/// Hands out the model of each turn in dataset order.
#[derive(Debug)]
pub struct ModelSelector {
    models: Vec<String>,
    strategy: ModelSelection,
    rng: StdRng,
    next: usize,
}

impl ModelSelector {
    /// A selector over `models`, or `None` when there is only one (every body then names it).
    pub fn new(models: &[String], strategy: ModelSelection, seed: Option<u64>) -> Option<Self> {
        (models.len() > 1).then(|| Self {
            models: models.to_vec(),
            strategy,
            rng: super::child_rng(seed, "composer.turn.model_selection"),
            next: 0,
        })
    }

    /// The model of the next turn.
    pub fn next_model(&mut self) -> String {
        let i = match self.strategy {
            ModelSelection::RoundRobin => {
                let i = self.next % self.models.len();
                self.next += 1;
                i
            }
            ModelSelection::Random => self.rng.random_range(0..self.models.len()),
        };
        self.models[i].clone()
    }

    /// Gives every turn of `conversations` that has no model of its own the next one, in order.
    pub fn assign(&mut self, conversations: &mut [Conversation]) {
        for turn in conversations.iter_mut().flat_map(|c| c.turns.iter_mut()) {
            if turn.model.is_none() {
                turn.model = Some(self.next_model());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::conversation::Turn;

    fn conversations(turns: &[usize]) -> Vec<Conversation> {
        turns
            .iter()
            .enumerate()
            .map(|(i, &n)| Conversation {
                session_id: format!("s{i}"),
                turns: (0..n).map(|_| Turn::text("p")).collect(),
                ..Conversation::default()
            })
            .collect()
    }

    fn models(names: &[&str]) -> Vec<String> {
        names.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn one_model_needs_no_selector() {
        assert!(ModelSelector::new(&models(&["a"]), ModelSelection::Random, Some(1)).is_none());
    }

    #[test]
    fn round_robin_counts_turns_across_conversations() {
        let mut convs = conversations(&[2, 1, 3]);
        convs[2].turns[0].model = Some("own".into());
        let mut s = ModelSelector::new(&models(&["a", "b", "c"]), ModelSelection::RoundRobin, None)
            .unwrap();
        s.assign(&mut convs);
        let got: Vec<&str> = convs
            .iter()
            .flat_map(|c| c.turns.iter().map(|t| t.model.as_deref().unwrap()))
            .collect();
        // A turn that names its own model keeps it and does not take a place in the cycle.
        assert_eq!(got, ["a", "b", "c", "own", "a", "b"]);
    }

    #[test]
    fn random_is_seeded_and_covers_every_model() {
        let names = models(&["a", "b"]);
        let draw = |seed| {
            let mut s = ModelSelector::new(&names, ModelSelection::Random, Some(seed)).unwrap();
            (0..400).map(|_| s.next_model()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        let a = draw(7).iter().filter(|m| *m == "a").count();
        // Binomial(400, 1/2): 200 ± 60 is over six standard deviations (10) either side.
        assert!((140..=260).contains(&a), "{a} of 400 were a");
    }
}
