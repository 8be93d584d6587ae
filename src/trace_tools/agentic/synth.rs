//! The session generator, as AIPerf 0.13's: a session starts from L1 + L1.5 + a sampled L2
//! context, then each turn waits a mixture delay, adds lognormal new tokens to the previous
//! input and output, and ends the session at the context limit (forced retire) or by the
//! context-scaled reset probability; an explicit turn-count mode instead; early primary sessions
//! may split at a restart point, the continuation placed later in the queue. Every draw is
//! NumPy's, in AIPerf's order ([`NpRandom`]).

use super::config::{Config, Lognormal};
use super::npy::np_sum;
use ringperf_workload::workload::nprandom::NpRandom;

/// Blocks an L1.5 group may hold, groups at most, and session blocks at most (AIPerf's layout).
const MAX_GROUP_BLOCKS: i64 = 200;
const MAX_GROUPS: i64 = 1_000;
const MAX_SESSION_BLOCKS: i64 = 4_000;
/// `ceil(a / b)` for `a >= 0`, `b > 0`.
pub fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

/// The smallest output a turn draws (unless the output's max is smaller).
const OUTPUT_MIN: i64 = 30;

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    ForcedRetire,
    ProbabilisticReset,
    RestartSplit,
    TargetTurnCount,
}

/// One turn: cumulative input, output, the new tokens since the last turn, its delay and time.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub input_length: i64,
    pub output_length: i64,
    pub new_tokens: i64,
    pub delay_ms: f64,
    pub timestamp_ms: f64,
    pub hash_ids: Vec<i64>,
}

/// One session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub session_id: String,
    pub group_id: i64,
    pub turns: Vec<Turn>,
    pub end_reason: EndReason,
    pub is_restart_continuation: bool,
}

/// The hash ids of the layered prefix: L1 `[0, l1)`, group g's L1.5 from `l1 + g * 200`, and
/// session s's own blocks from `l1 + 1000 * 200 + s * 4000`.
#[derive(Debug, Clone)]
struct Prefix {
    block: i64,
    l1: i64,
    l15: i64,
}

impl Prefix {
    fn new(cfg: &Config) -> Result<Self> {
        let block = cfg.block_size;
        let l1 = ceil_div(cfg.cache.layer1_tokens, block);
        let l15 = ceil_div(cfg.cache.layer1_5_tokens, block);
        let groups = cfg.cache.num_groups;
        if groups > MAX_GROUPS {
            return Err(format!(
                "num_groups={groups} exceeds MAX_GROUPS={MAX_GROUPS}"
            ));
        }
        if l15 > MAX_GROUP_BLOCKS {
            return Err(format!(
                "layer1_5_tokens={} needs {l15} blocks, exceeding MAX_GROUP_BLOCKS={MAX_GROUP_BLOCKS}",
                cfg.cache.layer1_5_tokens
            ));
        }
        Ok(Self { block, l1, l15 })
    }

    fn prefix_blocks(&self) -> usize {
        (self.l1 + self.l15) as usize
    }

    /// L1 + L1.5 as whole blocks, so a session's own tokens start in a block of their own.
    fn prefix_tokens(&self) -> i64 {
        (self.l1 + self.l15) * self.block
    }

    /// A turn's hash ids for `input` tokens: L1, the group's L1.5, then the session's blocks
    /// (the previous turn's carried over, new ones following on).
    fn turn_ids(
        &self,
        session: i64,
        group: i64,
        input: i64,
        prev: Option<&[i64]>,
    ) -> Result<Vec<i64>> {
        let total = if input > 0 {
            ceil_div(input, self.block)
        } else {
            0
        };
        let l1 = self.l1.min(total);
        let mut ids: Vec<i64> = (0..l1).collect();
        let remaining = total - l1;
        if remaining <= 0 {
            return Ok(ids);
        }
        let l15 = self.l15.min(remaining);
        let gbase = self.l1 + group * MAX_GROUP_BLOCKS;
        ids.extend(gbase..gbase + l15);
        let needed = remaining - l15;
        if needed <= 0 {
            return Ok(ids);
        }
        if needed > MAX_SESSION_BLOCKS {
            return Err(format!(
                "input_length={input} needs {needed} session blocks, exceeding \
                 MAX_SESSION_BLOCKS={MAX_SESSION_BLOCKS}"
            ));
        }
        let base = self.l1 + MAX_GROUPS * MAX_GROUP_BLOCKS + session * MAX_SESSION_BLOCKS;
        match prev {
            None => ids.extend(base..base + needed),
            Some(p) => {
                let fresh = needed - p.len() as i64;
                if fresh > 0 {
                    let next = p.last().map_or(base, |l| l + 1);
                    ids.extend_from_slice(p);
                    ids.extend(next..next + fresh);
                } else {
                    ids.extend_from_slice(&p[..needed as usize]);
                }
            }
        }
        Ok(ids)
    }

    fn session_ids<'a>(&self, ids: &'a [i64]) -> &'a [i64] {
        ids.get(self.prefix_blocks()..).unwrap_or(&[])
    }
}

/// `n` lognormal draws' worth of AIPerf's bounded sampler for one value: out-of-range draws
/// redrawn up to 100 times, then clamped; `floor` applied last.
fn sample(rng: &mut NpRandom, p: &Lognormal, floor: Option<f64>) -> f64 {
    let mut x = rng.lognormal(p.mu, p.sigma);
    if p.min.is_some() || p.max.is_some() {
        let out = |x: f64| p.min.is_some_and(|lo| x < lo) || p.max.is_some_and(|hi| x > hi);
        for _ in 0..100 {
            if !out(x) {
                break;
            }
            x = rng.lognormal(p.mu, p.sigma);
        }
        if let Some(lo) = p.min {
            x = x.max(lo);
        }
        if let Some(hi) = p.max {
            x = x.min(hi);
        }
    }
    if let Some(f) = floor {
        x = x.max(f);
    }
    x
}

/// The generator: the config, NumPy's stream for the seed, and the session counter.
pub struct Synthesizer {
    cfg: Config,
    rng: NpRandom,
    prefix: Prefix,
    sessions: i64,
    group_weights: Vec<f64>,
    output_min: f64,
    new_tokens: Lognormal,
}

type Result<T> = std::result::Result<T, String>;

impl Synthesizer {
    /// A generator for `cfg` seeded with `seed`.
    ///
    /// # Errors
    /// Too many groups, or an L1.5 over its block budget.
    pub fn new(cfg: Config, seed: u64) -> Result<Self> {
        let prefix = Prefix::new(&cfg)?;
        let alpha = cfg.cache.zipf_alpha;
        let weights: Vec<f64> = (1..=cfg.cache.num_groups)
            .map(|k| 1.0 / (k as f64).powf(alpha))
            .collect();
        let total = np_sum(&weights);
        let group_weights = weights.iter().map(|w| w / total).collect();
        let output_min = cfg
            .generation_length
            .max
            .map_or(OUTPUT_MIN, |m| OUTPUT_MIN.min(m as i64)) as f64;
        let ntp = &cfg.new_tokens;
        let mut new_tokens = ntp.dist.clone();
        if ntp.bias != 1.0 {
            new_tokens.mu += ntp.bias.ln();
            new_tokens.mean *= ntp.bias;
            new_tokens.median *= ntp.bias;
        }
        Ok(Self {
            rng: NpRandom::new(seed),
            prefix,
            sessions: 0,
            group_weights,
            output_min,
            new_tokens,
            cfg,
        })
    }

    fn next_index(&mut self) -> i64 {
        self.sessions += 1;
        self.sessions - 1
    }

    fn session_id(&mut self) -> String {
        let b = self.rng.bytes(16);
        let hex: String = b[..6].iter().map(|x| format!("{x:02x}")).collect();
        format!("sess-{hex}")
    }

    fn should_reset(&mut self, input: i64) -> bool {
        let Some(r) = &self.cfg.reset else {
            return false;
        };
        let ratio = input as f64 / self.cfg.max_prompt_tokens as f64;
        let p = r.base_probability * (1.0 + (r.context_scaling - 1.0) * ratio);
        self.rng.random() < p
    }

    fn group(&mut self) -> i64 {
        self.rng.choice(&self.group_weights) as i64
    }

    fn initial_context(&mut self) -> i64 {
        let l2 = (sample(&mut self.rng, &self.cfg.cache.layer2, None) as i64).max(1);
        (self.prefix.prefix_tokens() + l2).min(self.cfg.max_prompt_tokens - 1)
    }

    fn output_length(&mut self) -> i64 {
        sample(
            &mut self.rng,
            &self.cfg.generation_length,
            Some(self.output_min),
        ) as i64
    }

    fn delay_ms(&mut self, prev_input: i64) -> f64 {
        let d = &self.cfg.delay;
        let agentic = self.rng.random() < d.agentic_fraction;
        let a = sample(&mut self.rng, &d.agentic, None);
        let h = sample(&mut self.rng, &d.human, None);
        let mut delay = if agentic { a } else { h };
        if let Some(m) = d.max {
            delay = delay.min(m);
        }
        let ratio = prev_input as f64 / self.cfg.max_prompt_tokens as f64;
        delay *= 0.2_f64.max(1.0 - 0.8 * ratio);
        if let Some(m) = d.max {
            delay = delay.min(m);
        }
        delay
    }

    fn new_tokens(&mut self) -> i64 {
        (sample(&mut self.rng, &self.new_tokens, None) as i64).max(1)
    }

    /// Turns after the first until the context limit or a reset: the turn loop shared by
    /// primary sessions (`restart_at`: where one splits) and continuations.
    fn grow(
        &mut self,
        index: i64,
        group: i64,
        turns: &mut Vec<Turn>,
        restart_at: Option<usize>,
    ) -> Result<(EndReason, bool)> {
        loop {
            if restart_at == Some(turns.len()) {
                return Ok((EndReason::RestartSplit, true));
            }
            let Some(last) = turns.last() else {
                return Ok((EndReason::ForcedRetire, false));
            };
            let (prev_input, prev_output, prev_ts) =
                (last.input_length, last.output_length, last.timestamp_ms);
            let delay = self.delay_ms(prev_input);
            let new_tokens = self.new_tokens();
            let input = prev_input + prev_output + new_tokens;
            if input >= self.cfg.max_prompt_tokens {
                return Ok((EndReason::ForcedRetire, false));
            }
            if self.should_reset(input) {
                return Ok((EndReason::ProbabilisticReset, false));
            }
            let output = self.output_length();
            let prev_ids = self.prefix.session_ids(&last.hash_ids).to_vec();
            let hash_ids = self.prefix.turn_ids(index, group, input, Some(&prev_ids))?;
            turns.push(Turn {
                input_length: input,
                output_length: output,
                new_tokens,
                delay_ms: delay,
                timestamp_ms: prev_ts + delay,
                hash_ids,
            });
        }
    }

    fn first_turn(
        &mut self,
        index: i64,
        group: i64,
        input: i64,
        prev: Option<&[i64]>,
    ) -> Result<Turn> {
        let output_length = self.output_length();
        Ok(Turn {
            input_length: input,
            output_length,
            new_tokens: input,
            delay_ms: 0.0,
            timestamp_ms: 0.0,
            hash_ids: self.prefix.turn_ids(index, group, input, prev)?,
        })
    }

    /// One primary session, and its continuation when it splits at a restart.
    fn session(&mut self, inject_restart: bool) -> Result<Vec<Session>> {
        let index = self.next_index();
        let session_id = self.session_id();
        let restart_at = if inject_restart {
            let [lo, hi] = self.cfg.restart_turn_range;
            Some(self.rng.integers(lo, hi) as usize)
        } else {
            None
        };
        let group = self.group();
        let input = self.initial_context();
        let mut turns = vec![self.first_turn(index, group, input, None)?];
        let (end_reason, split) = self.grow(index, group, &mut turns, restart_at)?;
        if !split {
            return Ok(vec![Session {
                session_id,
                group_id: group,
                turns,
                end_reason,
                is_restart_continuation: false,
            }]);
        }
        // The continuation: a new id, the same group and session blocks, its first turn all of
        // the split session's context.
        let Some(last) = turns.last().cloned() else {
            return Err("a split session has no turn".into());
        };
        let b_id = self.session_id();
        let b_input = (last.input_length + last.output_length).min(self.cfg.max_prompt_tokens - 1);
        let prev_ids = self.prefix.session_ids(&last.hash_ids).to_vec();
        let mut b_turns = vec![self.first_turn(index, group, b_input, Some(&prev_ids))?];
        let (b_end, _) = self.grow(index, group, &mut b_turns, None)?;
        Ok(vec![
            Session {
                session_id,
                group_id: group,
                turns,
                end_reason,
                is_restart_continuation: false,
            },
            Session {
                session_id: b_id,
                group_id: group,
                turns: b_turns,
                end_reason: b_end,
                is_restart_continuation: true,
            },
        ])
    }

    fn turn_target(&mut self) -> i64 {
        let Some(t) = &self.cfg.turns else {
            return 1;
        };
        let (lo, hi) = (t.min, t.max);
        let x = sample(&mut self.rng, &t.lognormal(), None);
        (x.round_ties_even() as i64).clamp(lo, hi.max(lo))
    }

    /// One session of the explicit turn-count mode: redrawn whole until it fits.
    fn explicit_session(&mut self) -> Result<Session> {
        let Some(t) = self.cfg.turns.clone() else {
            return Err("explicit turn mode requested without turns config".into());
        };
        let target = self.turn_target();
        let attempts = t.max_session_attempts.unwrap_or(1).max(1);
        for _ in 0..attempts {
            let index = self.next_index();
            let session_id = self.session_id();
            let group = self.group();
            let input = self.initial_context();
            if input >= self.cfg.max_prompt_tokens {
                continue;
            }
            let mut turns = vec![self.first_turn(index, group, input, None)?];
            let mut realized = true;
            for _ in 1..target {
                let Some(last) = turns.last() else { break };
                let (prev_input, prev_output, prev_ts) =
                    (last.input_length, last.output_length, last.timestamp_ms);
                let delay = self.delay_ms(prev_input);
                let new_tokens = self.new_tokens();
                let input = prev_input + prev_output + new_tokens;
                if input >= self.cfg.max_prompt_tokens {
                    if t.allow_truncation {
                        return Ok(Session {
                            session_id,
                            group_id: group,
                            turns,
                            end_reason: EndReason::ForcedRetire,
                            is_restart_continuation: false,
                        });
                    }
                    realized = false;
                    break;
                }
                let output = self.output_length();
                let prev_ids = self.prefix.session_ids(&last.hash_ids).to_vec();
                let hash_ids = self.prefix.turn_ids(index, group, input, Some(&prev_ids))?;
                turns.push(Turn {
                    input_length: input,
                    output_length: output,
                    new_tokens,
                    delay_ms: delay,
                    timestamp_ms: prev_ts + delay,
                    hash_ids,
                });
            }
            if realized {
                return Ok(Session {
                    session_id,
                    group_id: group,
                    turns,
                    end_reason: EndReason::TargetTurnCount,
                    is_restart_continuation: false,
                });
            }
        }
        Err(format!(
            "Failed to synthesize explicit-turn session for target_turns={target} after \
             {attempts} attempts with max_prompt_tokens={}",
            self.cfg.max_prompt_tokens
        ))
    }

    /// `n` primary sessions; continuations of restart splits (whose chance falls linearly to 0
    /// over the first 75%) placed at random at least a quarter of the run after their origin.
    ///
    /// # Errors
    /// A session needs more than its block budget, or the explicit-turn mode cannot fit one.
    pub fn sessions(&mut self, n: usize) -> Result<Vec<Session>> {
        if self.cfg.turns.is_some() {
            return (0..n).map(|_| self.explicit_session()).collect();
        }
        let p0 = self.cfg.restart_initial_probability;
        let cutoff = 0.75;
        let mut primary = Vec::with_capacity(n);
        let mut deferred = Vec::new();
        for i in 0..n {
            let progress = i as f64 / (n.saturating_sub(1).max(1)) as f64;
            let p = if progress >= cutoff {
                0.0
            } else {
                p0 * (1.0 - progress / cutoff)
            };
            let inject = self.rng.random() < p;
            let mut made = self.session(inject)?.into_iter();
            let origin = primary.len();
            if let Some(a) = made.next() {
                primary.push(a);
            }
            deferred.extend(made.map(|b| (b, origin)));
        }
        let min_offset = ((n as f64 * 0.25) as usize).max(1);
        for (b, origin) in deferred {
            let low = (origin + min_offset).min(primary.len());
            let pos = if low >= primary.len() {
                primary.len()
            } else {
                self.rng.integers(low as i64, primary.len() as i64 + 1) as usize
            };
            primary.insert(pos, b);
        }
        Ok(primary)
    }
}
