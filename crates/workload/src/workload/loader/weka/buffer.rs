//! A recorded agent conversation rebuilt turn by turn from its requests' `hash_ids`
//! (docs/datasets.md, `weka_trace`). The conversation's context is a list of role segments
//! tiled by whole KV blocks (only the last may run past its blocks, with the prompt's unhashed
//! tail). Each turn cuts the context back to the longest prefix of blocks it shares with the
//! previous request, gives the reply's share of the new blocks to an assistant segment and the
//! rest to a user segment, and sends only what changed: the new segments, or every segment with
//! the context reset when the cut removed something already sent.
//!
//! A turn's prompt is exactly its `in` tokens: its blocks whole, then the tail.

use serde_json::{Value, json};

use crate::workload::loader::BlockPrompts;

/// One message of the context.
#[derive(Debug, Clone)]
struct Segment {
    role: &'static str,
    /// Whole blocks it holds.
    blocks: usize,
    tokens: Vec<u32>,
    text: String,
}

/// What a turn sends: its messages and whether they start the context over.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub messages: Vec<Value>,
    pub reset: bool,
}

/// The block accounting of one turn after another: how many blocks the two share, how many of
/// the turn's blocks are whole, how many are new and how many tokens follow the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub lcp: usize,
    pub covered: usize,
    pub new_blocks: usize,
    pub tail: usize,
}

/// [`Geometry`] of a turn of `input` tokens over `hash_ids` after one over `previous`.
pub fn geometry(previous: &[i64], hash_ids: &[i64], input: usize, bs: usize) -> Geometry {
    let full = input / bs;
    let covered = hash_ids.len().min(full);
    let lcp = previous
        .iter()
        .zip(hash_ids)
        .take_while(|(a, b)| a == b)
        .count();
    Geometry {
        lcp,
        covered,
        new_blocks: covered.saturating_sub(lcp),
        tail: input % bs + full.saturating_sub(hash_ids.len()) * bs,
    }
}

/// The most blocks each turn's assistant segment may take, so that a later turn that only
/// cuts back (adds nothing) ends on a user block: `turns` is each turn's `(hash_ids, in)`.
/// `None`: no bound (always for turn 0).
pub fn assistant_caps(turns: &[(&[i64], usize)], bs: usize) -> Vec<Option<usize>> {
    let mut caps = vec![None; turns.len()];
    // The turn that added each block of the context, and each turn's effective cut.
    let mut owner: Vec<usize> = Vec::new();
    let mut cut = vec![0usize; turns.len()];
    for (k, &(ids, input)) in turns.iter().enumerate() {
        let previous: &[i64] = if k == 0 { &[] } else { turns[k - 1].0 };
        let g = geometry(previous, ids, input, bs);
        if k == 0 {
            owner = vec![0; g.covered];
            continue;
        }
        let lcp = g.lcp.min(owner.len());
        cut[k] = lcp;
        let new_blocks = g.covered.saturating_sub(lcp);
        if new_blocks == 0 && g.tail == 0 && lcp >= 1 {
            let j = owner[lcp - 1];
            if j != 0 && lcp > cut[j] {
                let bound = lcp - 1 - cut[j];
                caps[j] = Some(caps[j].map_or(bound, |c: usize| c.min(bound)));
            }
        }
        owner.truncate(lcp);
        owner.extend(std::iter::repeat_n(k, new_blocks));
    }
    caps
}

/// One conversation's context as it is rebuilt.
#[derive(Debug, Default)]
pub struct Context {
    segments: Vec<Segment>,
    /// Segments sent so far.
    emitted: usize,
    /// The first segment the last cut changed or removed.
    disturbed: Option<usize>,
}

impl Context {
    /// Turn 0: `system_prefix` tokens (the trace's tools and system prompt) as one system
    /// message of whole blocks, then a user message of the rest.
    ///
    /// # Errors
    /// The recorded `hash_ids` hold fewer blocks than the system prefix needs.
    pub fn first(
        &mut self,
        prompts: &mut BlockPrompts<'_>,
        hash_ids: &[i64],
        input: usize,
        system_prefix: usize,
        bs: usize,
    ) -> Result<(), String> {
        let full = input / bs;
        let covered = full.min(hash_ids.len());
        let mut cursor = 0;
        let mut segments = Vec::new();
        if system_prefix > 0 {
            let mut k = system_prefix.div_ceil(bs);
            if k > hash_ids.len() {
                return Err(format!(
                    "turn 0's system prefix needs {k} hash blocks but only {} were recorded \
                     (tool_tokens + system_tokens = {system_prefix}, block_size = {bs})",
                    hash_ids.len()
                ));
            }
            k = k.min(covered);
            if k > 0 {
                let mut tokens = Vec::with_capacity(k * bs);
                prompts.push_blocks(&mut tokens, &hash_ids[..k]);
                segments.push(segment(prompts, "system", k, tokens));
                cursor = k;
            }
        }
        let mut tokens = Vec::new();
        prompts.push_blocks(&mut tokens, &hash_ids[cursor..covered]);
        let tail = (full - covered) * bs + input % bs;
        if tail > 0 {
            prompts.push_tail(&mut tokens, tail);
        }
        if !tokens.is_empty() || segments.is_empty() {
            segments.push(segment(prompts, "user", covered - cursor, tokens));
        }
        *self = Context {
            segments,
            emitted: 0,
            disturbed: None,
        };
        Ok(())
    }

    /// A later turn of `input` tokens over `hash_ids`, after a request over `previous` whose
    /// reply was `previous_out` tokens; `cap` bounds the assistant's blocks
    /// ([`assistant_caps`]).
    #[allow(clippy::too_many_arguments)]
    pub fn next(
        &mut self,
        prompts: &mut BlockPrompts<'_>,
        previous: &[i64],
        previous_out: usize,
        hash_ids: &[i64],
        input: usize,
        cap: Option<usize>,
        bs: usize,
    ) {
        let g = geometry(previous, hash_ids, input, bs);
        self.disturbed = self.cut(prompts, g.lcp, bs);
        let mut region = Vec::with_capacity(g.new_blocks * bs + g.tail);
        prompts.push_blocks(&mut region, &hash_ids[g.lcp.min(g.covered)..g.covered]);
        if g.tail > 0 {
            prompts.push_tail(&mut region, g.tail);
        }
        let mut assistant = if previous_out > 0 && self.segments.iter().any(|s| s.role == "user") {
            previous_out.div_ceil(bs)
        } else {
            0
        };
        assistant = assistant.min(g.new_blocks);
        if let Some(cap) = cap {
            assistant = assistant.min(cap);
        }
        if g.tail == 0 && assistant == g.new_blocks && assistant > 0 {
            // Every turn ends with a user message: the last new block goes to the user.
            assistant -= 1;
        }
        let user_tokens = region.split_off(assistant * bs);
        if assistant > 0 {
            self.segments
                .push(segment(prompts, "assistant", assistant, region));
        }
        if !user_tokens.is_empty() {
            self.segments.push(segment(
                prompts,
                "user",
                g.new_blocks - assistant,
                user_tokens,
            ));
        }
    }

    /// Cuts the context to its first `blocks` blocks; returns the first segment changed or
    /// removed.
    fn cut(&mut self, prompts: &BlockPrompts<'_>, blocks: usize, bs: usize) -> Option<usize> {
        if blocks == 0 {
            let had = !self.segments.is_empty();
            self.segments.clear();
            return had.then_some(0);
        }
        let mut cursor = 0;
        for i in 0..self.segments.len() {
            let seg = &mut self.segments[i];
            if cursor + seg.blocks < blocks {
                cursor += seg.blocks;
                continue;
            }
            if cursor + seg.blocks == blocks {
                // At a segment's end: its unhashed overhang goes, and every later segment.
                let mut disturbed = None;
                let whole = seg.blocks * bs;
                if seg.tokens.len() > whole {
                    seg.tokens.truncate(whole);
                    seg.text = prompts.decode(&seg.tokens);
                    disturbed = Some(i);
                }
                let removed = i + 1 < self.segments.len();
                self.segments.truncate(i + 1);
                return disturbed.or(removed.then_some(i + 1));
            }
            if cursor == blocks {
                self.segments.truncate(i);
                return Some(i);
            }
            let kept = blocks - cursor;
            seg.blocks = kept;
            let n = seg.tokens.len().min(kept * bs);
            seg.tokens.truncate(n);
            seg.text = prompts.decode(&seg.tokens);
            self.segments.truncate(i + 1);
            return Some(i);
        }
        None
    }

    /// The messages the turn just built sends.
    pub fn delta(&mut self) -> Delta {
        let disturbed_sent = self.disturbed.is_some_and(|d| d < self.emitted);
        let (from, reset) = if self.emitted == 0 || disturbed_sent {
            (0, self.emitted != 0)
        } else {
            (self.emitted, false)
        };
        let messages = self.segments[from.min(self.segments.len())..]
            .iter()
            .map(|s| json!({"role": s.role, "content": s.text}))
            .collect();
        self.emitted = self.segments.len();
        self.disturbed = None;
        Delta { messages, reset }
    }

    /// Tokens of the whole context (the prompt the turn sends).
    #[cfg(test)]
    pub fn tokens(&self) -> usize {
        self.segments.iter().map(|s| s.tokens.len()).sum()
    }

    /// The roles of the whole context, in order.
    #[cfg(test)]
    pub fn roles(&self) -> Vec<&'static str> {
        self.segments.iter().map(|s| s.role).collect()
    }
}

fn segment(
    prompts: &BlockPrompts<'_>,
    role: &'static str,
    blocks: usize,
    tokens: Vec<u32>,
) -> Segment {
    Segment {
        role,
        blocks,
        text: prompts.decode(&tokens),
        tokens,
    }
}
