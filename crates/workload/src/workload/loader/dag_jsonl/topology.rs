//! The graph of a `dag_jsonl` file: each turn's `forks` and `spawns` made into branches with
//! AIPerf's ids and join turns, the children resolved to conversations, and the rules of the
//! whole graph checked in AIPerf's order (`DagJsonlLoader._desugar_forks`,
//! `_resolve_and_validate`, then `validate_for_orchestrator_v1`). Errors are AIPerf's
//! sentences. Every walk is iterative: no file can exhaust the stack.

use std::collections::HashMap;

use serde_json::Value;

use ringperf_wire::conversation::ContextMode;

use super::schema::{DagLine, SpawnEntry};

/// One branch of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BranchSpec {
    /// AIPerf's `branch_id` (`{sid}:{turn}`, `{sid}:{turn}:fork`, `…:bg_fork`, `…:spawn`,
    /// `…:spawn{n}`, `{sid}:pre`).
    pub id: String,
    /// The turn that declares it (0 for `pre_session_spawns`).
    pub turn: usize,
    /// Children by name, as written.
    pub names: Vec<String>,
    /// Children by conversation index (filled once every name is known).
    pub children: Vec<usize>,
    pub fork: bool,
    /// A fork whose parent goes on with its turns (`"background": true`).
    pub background: bool,
    pub pre: bool,
    /// The turn that waits for it; `None`: nothing does (background, terminal, pre-session).
    pub join: Option<usize>,
}

/// One conversation's branches and, per turn, the branches it starts and waits for.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Node {
    pub branches: Vec<BranchSpec>,
    pub spawns: Vec<Vec<u32>>,
    pub joins: Vec<Vec<u32>>,
}

/// The whole file's graph.
#[derive(Debug)]
pub(super) struct Graph {
    pub nodes: Vec<Node>,
    /// The conversation and turn that fork each conversation (at most one, AIPerf's rule).
    pub fork_parent: Vec<Option<(usize, usize)>>,
    /// The first conversation (file order) whose branch names each one; `None`: a root.
    pub first_parent: Vec<Option<usize>>,
}

/// AIPerf's `repr` of a list of session ids.
fn py_list(ids: &[&str]) -> String {
    let items: Vec<String> = ids.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", items.join(", "))
}

impl Graph {
    /// Desugars every turn's entries into branches and resolves their children.
    pub fn build(lines: &[DagLine], index: &HashMap<String, usize>) -> Result<Self, String> {
        let mut nodes = Vec::with_capacity(lines.len());
        for line in lines {
            nodes.push(desugar(line)?);
        }
        // Targets and the FORK parent of each child (`validate_branch_targets_and_collect_parents`).
        let mut fork_parent: Vec<Option<(usize, usize)>> = vec![None; lines.len()];
        let mut first_parent: Vec<Option<usize>> = vec![None; lines.len()];
        let mut known: Option<String> = None;
        for (c, node) in nodes.iter_mut().enumerate() {
            let sid = &lines[c].session_id;
            for b in &mut node.branches {
                for name in &b.names {
                    let Some(&k) = index.get(name) else {
                        let known = known.get_or_insert_with(|| {
                            let mut ids: Vec<&str> = index.keys().map(String::as_str).collect();
                            ids.sort_unstable();
                            ids.truncate(10);
                            py_list(&ids)
                        });
                        return Err(format!(
                            "session '{sid}' turn {}: branch target '{name}' not declared. \
                             Known sessions: {known}",
                            b.turn
                        ));
                    };
                    if b.fork {
                        if let Some((p, t)) = fork_parent[k] {
                            return Err(format!(
                                "session '{name}' forked by both '{}' turn {t} and '{sid}' turn \
                                 {}; FORK-mode children require a single parent",
                                lines[p].session_id, b.turn
                            ));
                        }
                        fork_parent[k] = Some((c, b.turn));
                    }
                    first_parent[k].get_or_insert(c);
                    b.children.push(k);
                }
            }
        }
        Ok(Self {
            nodes,
            fork_parent,
            first_parent,
        })
    }

    /// The rules of the whole graph, in AIPerf's order.
    pub fn validate(&self, lines: &[DagLine]) -> Result<(), String> {
        // A foreground fork ends its parent: only on the last turn.
        for (c, node) in self.nodes.iter().enumerate() {
            let last = lines[c].turns.len().saturating_sub(1);
            if let Some(b) =
                (node.branches.iter()).find(|b| b.fork && !b.background && b.turn != last)
            {
                return Err(format!(
                    "session '{}' turn {} has foreground FORK branches but is not the last turn \
                     and no join is declared (use ``background=True`` on the fork entry to keep \
                     the parent running, or move the forks to the final turn)",
                    lines[c].session_id, b.turn
                ));
            }
        }
        for (c, node) in self.nodes.iter().enumerate() {
            let pre = node.branches.iter().filter(|b| b.pre);
            if let Some(&k) = pre
                .flat_map(|b| &b.children)
                .find(|&&k| self.fork_parent[k].is_some())
            {
                return Err(format!(
                    "session '{}' is referenced by '{}' pre_session_spawns but is also a FORK \
                     target; pre-session children must be SPAWN-mode (no parent context to \
                     inherit)",
                    lines[k].session_id, lines[c].session_id
                ));
            }
        }
        for (c, line) in lines.iter().enumerate() {
            let sid = &line.session_id;
            let isolated = line.context == Some(ContextMode::Standalone);
            for (idx, turn) in line.turns.iter().enumerate() {
                let system_at = |m: &Value| m.get("role").and_then(Value::as_str) == Some("system");
                if isolated {
                    if turn.messages.iter().skip(1).any(system_at) {
                        return Err(format!(
                            "session '{sid}' turn {idx}: a 'system' message must be the first \
                             message of an isolated turn's array; later positions are dropped by \
                             chat templates (e.g. Qwen3-VL)."
                        ));
                    }
                    continue;
                }
                let seeds = idx == 0 && self.fork_parent[c].is_none();
                if !seeds && turn.messages.iter().any(system_at) {
                    return Err(format!(
                        "session '{sid}' turn {idx}: non-root turns may not contain a 'system' \
                         message. Place the single system prompt at the root turn only; popular \
                         chat templates (e.g. Qwen3-VL) ignore system messages after index 0."
                    ));
                }
            }
        }
        for node in &self.nodes {
            for b in node.branches.iter().filter(|b| b.fork) {
                for &k in &b.children {
                    if lines[k].context == Some(ContextMode::Standalone) {
                        return Err(format!(
                            "session '{}' is a FORK target with context_mode \
                             'message_array_with_responses'; payload isolation drops the \
                             inherited parent context and is only valid on fresh-context SPAWN \
                             branches",
                            lines[k].session_id
                        ));
                    }
                }
            }
        }
        self.check_cycles(lines)?;
        // `validate_for_orchestrator_v1`: a pre-session branch belongs to a root.
        let depth = self.fork_depths();
        for (c, node) in self.nodes.iter().enumerate() {
            if let Some(b) = node.branches.iter().find(|b| b.pre)
                && (self.first_parent[c].is_some() || depth[c] > 0)
            {
                return Err(format!(
                    "conversation '{}' branch '{}': pre-session dispatch requires a root \
                     conversation (is_root=True, agent_depth=0), got is_root={} agent_depth={}",
                    lines[c].session_id,
                    b.id,
                    if self.first_parent[c].is_none() {
                        "True"
                    } else {
                        "False"
                    },
                    depth[c]
                ));
            }
        }
        Ok(())
    }

    /// AIPerf's `detect_cycles`: a depth-first walk from each conversation in file order,
    /// through its branches' children in order; the first conversation met again on the path
    /// closes the cycle it names.
    fn check_cycles(&self, lines: &[DagLine]) -> Result<(), String> {
        let n = self.nodes.len();
        let children: Vec<Vec<usize>> = (self.nodes.iter())
            .map(|node| {
                node.branches
                    .iter()
                    .flat_map(|b| b.children.iter().copied())
                    .collect()
            })
            .collect();
        let mut done = vec![false; n];
        let mut on_path = vec![false; n];
        for start in 0..n {
            if done[start] {
                continue;
            }
            // Each frame: a conversation and how far through its children the walk is.
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            on_path[start] = true;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let child = children[node].get(*next).copied();
                *next += 1;
                match child {
                    Some(k) if on_path[k] => {
                        let from = stack.iter().position(|&(c, _)| c == k).unwrap_or(0);
                        let mut path: Vec<&str> = stack[from..]
                            .iter()
                            .map(|&(c, _)| lines[c].session_id.as_str())
                            .collect();
                        path.push(&lines[k].session_id);
                        return Err(format!("cycle detected: {}", path.join(" -> ")));
                    }
                    Some(k) if !done[k] => {
                        on_path[k] = true;
                        stack.push((k, 0));
                    }
                    Some(_) => {}
                    None => {
                        on_path[node] = false;
                        done[node] = true;
                        stack.pop();
                    }
                }
            }
        }
        Ok(())
    }

    /// Each conversation's FORK depth (AIPerf's `agent_depth`: a fork child is its parent's
    /// plus one; a spawned one stays 0). The graph is acyclic by now.
    fn fork_depths(&self) -> Vec<u32> {
        let n = self.nodes.len();
        let mut depth: Vec<Option<u32>> = vec![None; n];
        for start in 0..n {
            let mut chain = vec![start];
            while let Some(&c) = chain.last() {
                match (depth[c], self.fork_parent[c]) {
                    (Some(_), _) => break,
                    (None, None) => {
                        depth[c] = Some(0);
                        break;
                    }
                    (None, Some((p, _))) if chain.len() <= n => chain.push(p),
                    (None, Some(_)) => break,
                }
            }
            while let Some(c) = chain.pop() {
                if depth[c].is_none() {
                    let up = self.fork_parent[c].and_then(|(p, _)| depth[p]).unwrap_or(0);
                    depth[c] = Some(up + u32::from(self.fork_parent[c].is_some()));
                }
            }
        }
        depth.into_iter().map(Option::unwrap_or_default).collect()
    }

    /// Each turn's `tools` as AIPerf's body carries them: the latest of the turns it sends
    /// (its own, else an earlier turn's, and a fork child's first turns its parent's at the
    /// fork); an isolated conversation's turn has only its own. A conversation that is both
    /// forked and spawned fresh, whose tools would differ between the two, is refused: ringperf
    /// settles a turn's tools before the run.
    pub fn effective_tools(&self, lines: &[DagLine]) -> Result<Vec<Vec<Option<Value>>>, String> {
        let n = lines.len();
        let depth = self.fork_depths();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&c| depth[c]);
        let mut fresh = vec![false; n];
        for node in &self.nodes {
            for b in node.branches.iter().filter(|b| !b.fork) {
                for &k in &b.children {
                    fresh[k] = true;
                }
            }
        }
        let mut tools: Vec<Vec<Option<Value>>> = vec![Vec::new(); n];
        for c in order {
            let line = &lines[c];
            let isolated = line.context == Some(ContextMode::Standalone);
            let inherited =
                self.fork_parent[c].and_then(|(p, t)| tools[p].get(t).cloned().flatten());
            if inherited.is_some()
                && fresh[c]
                && line.turns.first().is_some_and(|t| t.tools.is_none())
            {
                return Err(format!(
                    "session '{}' is both forked (carrying its parent's 'tools') and spawned \
                     fresh (without them); ringperf settles a turn's tools before the run and \
                     cannot send both: give its first turn its own 'tools'",
                    line.session_id
                ));
            }
            let mut latest = if isolated { None } else { inherited };
            let mut own = Vec::with_capacity(line.turns.len());
            for t in &line.turns {
                let value = t.tools.clone().map(Value::Array);
                if isolated {
                    own.push(value);
                    continue;
                }
                if value.is_some() {
                    latest = value;
                }
                own.push(latest.clone());
            }
            tools[c] = own;
        }
        Ok(tools)
    }
}

/// AIPerf's `_desugar_forks` for one conversation.
fn desugar(line: &DagLine) -> Result<Node, String> {
    let sid = &line.session_id;
    let num_turns = line.turns.len();
    let mut node = Node {
        branches: Vec::new(),
        spawns: vec![Vec::new(); num_turns],
        joins: vec![Vec::new(); num_turns],
    };
    if !line.pre_session_spawns.is_empty() {
        node.branches.push(BranchSpec {
            id: format!("{sid}:pre"),
            turn: 0,
            names: line.pre_session_spawns.clone(),
            children: Vec::new(),
            fork: false,
            background: true,
            pre: true,
            join: None,
        });
    }
    for (idx, turn) in line.turns.iter().enumerate() {
        let groups = group_spawns(&turn.spawns);
        if turn.forks.is_empty() && groups.is_empty() {
            continue;
        }
        check_duplicates(sid, idx, turn, &groups)?;
        let fg: Vec<String> = (turn.forks.iter())
            .filter(|f| !f.background)
            .map(|f| f.child.clone())
            .collect();
        let bg: Vec<String> = (turn.forks.iter())
            .filter(|f| f.background)
            .map(|f| f.child.clone())
            .collect();
        let mixed = (!fg.is_empty() || !bg.is_empty()) && !groups.is_empty();
        let disambiguate = mixed || (!fg.is_empty() && !bg.is_empty());
        for (names, background) in [(fg, false), (bg, true)] {
            if names.is_empty() {
                continue;
            }
            let id = match (disambiguate, background) {
                (true, false) => format!("{sid}:{idx}:fork"),
                (true, true) => format!("{sid}:{idx}:bg_fork"),
                (false, _) => format!("{sid}:{idx}"),
            };
            node.spawns[idx].push(node.branches.len() as u32);
            node.branches.push(BranchSpec {
                id,
                turn: idx,
                names,
                children: Vec::new(),
                fork: true,
                background,
                pre: false,
                join: None,
            });
        }
        let several = mixed || groups.len() > 1;
        for (g, (names, join_at)) in groups.into_iter().enumerate() {
            let id = match (several, g) {
                (false, _) => format!("{sid}:{idx}"),
                (true, 0) => format!("{sid}:{idx}:spawn"),
                (true, g) => format!("{sid}:{idx}:spawn{g}"),
            };
            if let Some(at) = join_at {
                if at <= idx as i64 {
                    return Err(format!(
                        "session '{sid}' turn {idx}: spawn join_at={at} must be strictly greater \
                         than the spawning turn index"
                    ));
                }
                if at >= num_turns as i64 {
                    return Err(format!(
                        "session '{sid}' turn {idx}: spawn join_at={at} is out of range \
                         (conversation has {num_turns} turns)"
                    ));
                }
            }
            let at = join_at.map_or(idx + 1, |a| a as usize);
            let join = (at < num_turns).then_some(at);
            let b = node.branches.len() as u32;
            node.spawns[idx].push(b);
            if let Some(at) = join {
                node.joins[at].push(b);
            }
            node.branches.push(BranchSpec {
                id,
                turn: idx,
                names,
                children: Vec::new(),
                fork: false,
                background: join.is_none(),
                pre: false,
                join,
            });
        }
    }
    Ok(node)
}

/// AIPerf's `group_spawn_entries`: consecutive bare ids are one group joined on the next turn;
/// each `{"children", "join_at"}` object is a group of its own.
fn group_spawns(entries: &[SpawnEntry]) -> Vec<(Vec<String>, Option<i64>)> {
    let mut groups = Vec::new();
    let mut bare: Vec<String> = Vec::new();
    for e in entries {
        match e {
            SpawnEntry::Bare(s) => bare.push(s.clone()),
            SpawnEntry::Group { children, join_at } => {
                if !bare.is_empty() {
                    groups.push((std::mem::take(&mut bare), None));
                }
                groups.push((children.clone(), *join_at));
            }
        }
    }
    if !bare.is_empty() {
        groups.push((bare, None));
    }
    groups
}

/// AIPerf's `check_branch_duplicates`: a child twice among a turn's forks, twice in a spawn
/// group, or in two spawn groups of the turn.
fn check_duplicates(
    sid: &str,
    idx: usize,
    turn: &super::schema::DagTurn,
    groups: &[(Vec<String>, Option<i64>)],
) -> Result<(), String> {
    let mut forks = std::collections::HashSet::new();
    for f in &turn.forks {
        if !forks.insert(f.child.as_str()) {
            return Err(format!(
                "session '{sid}' turn {idx}: duplicate child_conversation_id '{}' in fork entries",
                f.child
            ));
        }
    }
    let mut across: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for (children, _) in groups {
        let mut group = std::collections::BTreeSet::new();
        for child in children {
            if !group.insert(child.as_str()) {
                return Err(format!(
                    "session '{sid}' turn {idx}: duplicate child_conversation_id '{child}' in \
                     spawn group"
                ));
            }
        }
        if let Some(dup) = group.intersection(&across).next() {
            return Err(format!(
                "session '{sid}' turn {idx}: duplicate child_conversation_id '{dup}' across \
                 spawn groups"
            ));
        }
        across.extend(group);
    }
    Ok(())
}
