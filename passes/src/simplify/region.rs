//! From a block of IR to an e-graph and back.
//!
//! **Into the e-graph**: the block's ops in the language ([`in_language`]: the pure float
//! ops) become e-nodes; every other value they read — block arguments, values of
//! enclosing blocks, results of loads, stores' neighbours, loops, index arithmetic —
//! becomes an opaque leaf ([`LeafRef`]). The ops outside the language stay where they
//! are; each value of the language that one of them reads (an operand, or a use inside
//! its regions) is a *root*, demanded at that op's position.
//!
//! **Back out**: rules run; then, for each position that demands roots, a best term is
//! chosen per e-class among the terms whose leaves are all defined before that position
//! (so SSA dominance holds by construction), with [`node_cost`] + 1 per op, ties going to
//! the ops the block already had (stable output), then to the node order (deterministic).
//! The block is rebuilt: the opaque ops in their order, each preceded by the pure ops its
//! roots need that are not yet there (an e-class is materialized once and reused
//! after). A pure op that reappears keeps its value, and so its name. The new block
//! replaces the old one only if its cost is lower.

use super::cost::node_cost;
use super::lang::{EGraph, FConst, LeafRef, TileAnalysis, TileLang, TyLit};
use super::rules::Rewrite;
use super::Stats;
use egg::{Id, Language, Runner, StopReason};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tilec_dialect::{Attribute, Block, Location, Module, OpClass, OpKind, Operation, Type, Value};

/// The runner's limits for one region.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most e-nodes.
    pub nodes: usize,
    /// Most iterations.
    pub iterations: usize,
    /// Most wall-clock time, when set (`None` by default: a time limit makes the output
    /// depend on the machine's load).
    pub time: Option<Duration>,
}

/// The reason a run stopped at [`Limits::time`] (`StopReason::Other`).
const TIME_LIMIT: &str = "time limit";

/// Runs the rules to saturation or a limit. The time limit is checked with `std::time` at
/// the start of each iteration, as egg checks its own limits; egg's own clock is frozen
/// (see [`super::simplify`]), so its time limit would never fire.
fn run_egg(eg: EGraph, limits: &Limits, rules: &[Rewrite]) -> Runner<TileLang, TileAnalysis> {
    let mut runner = Runner::<TileLang, TileAnalysis>::new(TileAnalysis)
        .with_egraph(eg)
        .with_node_limit(limits.nodes)
        .with_iter_limit(limits.iterations)
        .with_time_limit(Duration::MAX);
    if let Some(limit) = limits.time {
        let started = std::time::Instant::now();
        runner = runner.with_hook(move |_| {
            if started.elapsed() >= limit {
                Err(TIME_LIMIT.to_string())
            } else {
                Ok(())
            }
        });
    }
    runner.run(rules)
}

fn is_float(t: &Type) -> bool {
    matches!(t, Type::Scalar(s) | Type::Tile { elem: s, .. } if s.is_float())
}

/// Whether `op` is one of the e-graph's ops: a pure float op with one result and no
/// regions (elementwise, dot, transpose, float converts, reshape, broadcast, splat,
/// zeros, select, float constants).
pub fn in_language(m: &Module, op: &Operation) -> bool {
    if op.results.len() != 1 || !op.regions.is_empty() {
        return false;
    }
    let Some(rt) = m.try_ty(op.results[0]) else {
        return false;
    };
    if TyLit::from_type(rt).is_none() || !is_float(rt) {
        return false;
    }
    let operands_ok = op
        .operands
        .iter()
        .all(|&v| m.try_ty(v).and_then(TyLit::from_type).is_some());
    if !operands_ok {
        return false;
    }
    match op.kind.class() {
        OpClass::FloatBinary => op.operands.len() == 2,
        OpClass::FloatUnary => op.operands.len() == 1,
        _ => match op.kind {
            // A tf32 dot is not IEEE arithmetic: folding, merging or rewriting it as one
            // would change its result, so it stays outside the language.
            OpKind::Dot => {
                op.operands.len() == 3 && tilec_dialect::ops::dot_precision(op) == "ieee"
            }
            OpKind::Select => op.operands.len() == 3,
            OpKind::Transpose | OpKind::Reshape | OpKind::Broadcast | OpKind::Splat => {
                op.operands.len() == 1
            }
            OpKind::Convert => {
                op.operands.len() == 1 && m.try_ty(op.operands[0]).is_some_and(is_float)
            }
            OpKind::Zeros => op.operands.is_empty(),
            OpKind::Constant => {
                op.operands.is_empty() && op.attr("value").and_then(Attribute::as_f64).is_some()
            }
            _ => false,
        },
    }
}

/// The e-node of an op of the language, given its operands' classes.
fn node_of(eg: &mut EGraph, m: &Module, op: &Operation, kids: &[Id]) -> Option<TileLang> {
    let rt = TyLit::from_type(m.try_ty(op.results[0])?)?;
    let ty = |eg: &mut EGraph| eg.add(TileLang::Ty(rt));
    Some(match op.kind {
        OpKind::Dot => TileLang::Dot([kids[0], kids[1], kids[2]]),
        OpKind::Select => TileLang::Select([kids[0], kids[1], kids[2]]),
        OpKind::Transpose => TileLang::Transpose([kids[0]]),
        OpKind::Convert => TileLang::Convert([ty(eg), kids[0]]),
        OpKind::Reshape => TileLang::Reshape([ty(eg), kids[0]]),
        OpKind::Broadcast => TileLang::Broadcast([ty(eg), kids[0]]),
        OpKind::Splat => TileLang::Splat([ty(eg), kids[0]]),
        OpKind::Zeros => TileLang::Zeros([ty(eg)]),
        OpKind::Constant => {
            TileLang::Const(FConst::new(op.attr("value")?.as_f64()? as f32, rt.elem))
        }
        k => TileLang::elementwise(k, kids)?,
    })
}

/// The IR op of an e-node, given its operands' values (type-literal children excluded).
fn op_of(node: &TileLang, operands: Vec<Value>, result: Value, loc: Location) -> Operation {
    let kind = node.op_kind().expect("an op node");
    let mut op = Operation::new(kind, loc);
    op.operands = operands;
    op.results = vec![result];
    if let TileLang::Const(c) = node {
        op.attrs
            .insert("value".into(), Attribute::Float(c.value() as f64));
    }
    op
}

/// Every value used by the ops of `b` and the blocks nested in it.
fn uses_in(b: &Block, out: &mut Vec<Value>) {
    for op in &b.ops {
        out.extend(&op.operands);
        for r in &op.regions {
            uses_in(r, out);
        }
    }
}

/// Replace uses in `b` and every block nested in it.
pub(crate) fn substitute(b: &mut Block, map: &HashMap<Value, Value>) {
    for op in &mut b.ops {
        substitute_op(op, map);
    }
}

/// Replace uses in `op` and the blocks nested in it.
pub(crate) fn substitute_op(op: &mut Operation, map: &HashMap<Value, Value>) {
    for v in &mut op.operands {
        if let Some(n) = map.get(v) {
            *v = *n;
        }
    }
    for r in &mut op.regions {
        substitute(r, map);
    }
}

/// The chosen term of each e-class: (cost, not-original, node).
type Best = HashMap<Id, (u64, bool, TileLang)>;

/// Choose the best term of every class whose leaves are all available at `limit`.
fn extract(
    eg: &EGraph,
    limit: usize,
    leaf_pos: &HashMap<u32, usize>,
    original: &HashSet<TileLang>,
) -> Best {
    let mut best: Best = HashMap::new();
    loop {
        let mut changed = false;
        for class in eg.classes() {
            for node in &class.nodes {
                let cost = match node {
                    TileLang::Leaf(l) => {
                        if leaf_pos.get(&l.id).copied().unwrap_or(0) > limit {
                            continue;
                        }
                        0
                    }
                    TileLang::Ty(_) => 0,
                    _ => {
                        let mut c = node_cost(eg, node).saturating_add(1);
                        let mut ok = true;
                        for ch in node.children() {
                            match best.get(&eg.find(*ch)) {
                                Some(b) => c = c.saturating_add(b.0),
                                None => {
                                    ok = false;
                                    break;
                                }
                            }
                        }
                        if !ok {
                            continue;
                        }
                        c
                    }
                };
                let key = (cost, !original.contains(node), node.clone());
                if best.get(&class.id).is_none_or(|b| key < *b) {
                    best.insert(class.id, key);
                    changed = true;
                }
            }
        }
        if !changed {
            return best;
        }
    }
}

/// Simplify the ops of one block (not the blocks nested in it). Returns whether the block
/// changed.
pub fn simplify_block(
    m: &mut Module,
    block: &mut Block,
    rules: &[Rewrite],
    limits: &Limits,
    stats: &mut Stats,
) -> bool {
    let in_lang: Vec<bool> = block.ops.iter().map(|o| in_language(m, o)).collect();
    if !in_lang.iter().any(|&b| b) {
        return false;
    }
    // Where each opaque result becomes available (the index after its op).
    let mut avail: HashMap<Value, usize> = HashMap::new();
    for (i, op) in block.ops.iter().enumerate() {
        if !in_lang[i] {
            for &r in &op.results {
                avail.insert(r, i + 1);
            }
        }
    }
    // Build.
    let mut eg = EGraph::new(TileAnalysis);
    let mut class_of: HashMap<Value, Id> = HashMap::new();
    let mut leaf_pos: HashMap<u32, usize> = HashMap::new();
    let mut originals: Vec<(TileLang, Value, Location)> = vec![];
    let mut roots: BTreeMap<usize, Vec<Value>> = BTreeMap::new();
    let mut rooted: HashSet<Value> = HashSet::new();
    for (i, op) in block.ops.iter().enumerate() {
        if in_lang[i] {
            let mut kids = Vec::with_capacity(op.operands.len());
            for &v in &op.operands {
                let id = match class_of.get(&v) {
                    Some(&id) => id,
                    None => {
                        let Some(ty) = m.try_ty(v).and_then(TyLit::from_type) else {
                            return false;
                        };
                        leaf_pos.insert(v.0, avail.get(&v).copied().unwrap_or(0));
                        eg.add(TileLang::Leaf(LeafRef { id: v.0, ty }))
                    }
                };
                kids.push(id);
            }
            let Some(node) = node_of(&mut eg, m, op, &kids) else {
                return false;
            };
            let id = eg.add(node.clone());
            class_of.insert(op.results[0], id);
            originals.push((node, op.results[0], op.loc.clone()));
        } else {
            let mut used = op.operands.clone();
            for r in &op.regions {
                uses_in(r, &mut used);
            }
            for v in used {
                if class_of.contains_key(&v) && rooted.insert(v) {
                    roots.entry(i).or_default().push(v);
                }
            }
        }
    }
    // Run.
    let runner = run_egg(eg, limits, rules);
    stats.regions += 1;
    stats.nodes += runner.egraph.total_number_of_nodes() as u64;
    stats.classes += runner.egraph.number_of_classes() as u64;
    stats.iterations += runner.iterations.len() as u64;
    match runner.stop_reason {
        Some(StopReason::Saturated) | None => stats.stop_saturated += 1,
        Some(StopReason::IterationLimit(_)) => stats.stop_iteration_limit += 1,
        Some(StopReason::NodeLimit(_)) => stats.stop_node_limit += 1,
        Some(StopReason::TimeLimit(_)) => stats.stop_time_limit += 1,
        Some(StopReason::Other(r)) if r == TIME_LIMIT => stats.stop_time_limit += 1,
        Some(StopReason::Other(_)) => stats.stop_other += 1,
    }
    for it in &runner.iterations {
        for (name, n) in &it.applied {
            *stats.fired.entry(name.to_string()).or_default() += *n as u64;
        }
    }
    let eg = runner.egraph;
    // Extract, per demanding position.
    let canon = |n: &TileLang| n.clone().map_children(|c| eg.find(c));
    let mut original_set = HashSet::new();
    let mut original_value: HashMap<TileLang, (Value, Location)> = HashMap::new();
    let mut class_loc: HashMap<Id, Location> = HashMap::new();
    let mut cost_before: u64 = 0;
    for (node, v, loc) in &originals {
        let c = canon(node);
        cost_before = cost_before.saturating_add(node_cost(&eg, &c).saturating_add(1));
        original_set.insert(c.clone());
        original_value.entry(c).or_insert((*v, loc.clone()));
        class_loc.entry(eg.find(class_of[v])).or_insert(loc.clone());
    }
    let mut bests: HashMap<usize, Best> = HashMap::new();
    for &pos in roots.keys() {
        bests.insert(pos, extract(&eg, pos, &leaf_pos, &original_set));
    }
    // Rebuild.
    let mut new_ops: Vec<Operation> = Vec::with_capacity(block.ops.len());
    let mut emitted: HashMap<Id, Value> = HashMap::new();
    let mut reused: HashSet<Value> = HashSet::new();
    let mut subst: HashMap<Value, Value> = HashMap::new();
    let mut cost_after: u64 = 0;
    for (i, op) in block.ops.iter().enumerate() {
        if in_lang[i] {
            continue;
        }
        if let Some(rs) = roots.get(&i) {
            let best = &bests[&i];
            for &r in rs {
                let root = eg.find(class_of[&r]);
                // Post-order over the chosen terms, iteratively (chains can be long).
                let mut stack = vec![(root, false)];
                while let Some((c, expanded)) = stack.pop() {
                    let c = eg.find(c);
                    if emitted.contains_key(&c) {
                        continue;
                    }
                    let Some((_, _, node)) = best.get(&c) else {
                        return false;
                    };
                    if let TileLang::Leaf(l) = node {
                        emitted.insert(c, Value(l.id));
                        continue;
                    }
                    let kids: Vec<Id> = node
                        .children()
                        .iter()
                        .map(|&k| eg.find(k))
                        .filter(|&k| !eg[k].data.is_type)
                        .collect();
                    if !expanded {
                        stack.push((c, true));
                        for &k in kids.iter().rev() {
                            if !emitted.contains_key(&k) {
                                stack.push((k, false));
                            }
                        }
                        continue;
                    }
                    let operands: Vec<Value> = kids.iter().map(|k| emitted[k]).collect();
                    let result = match original_value.get(node) {
                        Some((v, _)) if reused.insert(*v) => *v,
                        _ => m.new_value(eg[c].data.ty.to_type(), None),
                    };
                    let loc = class_loc.get(&c).cloned().unwrap_or_else(|| op.loc.clone());
                    cost_after = cost_after.saturating_add(node_cost(&eg, node).saturating_add(1));
                    new_ops.push(op_of(node, operands, result, loc));
                    emitted.insert(c, result);
                }
                let v = emitted[&root];
                if v != r {
                    subst.insert(r, v);
                }
            }
        }
        let mut op = op.clone();
        substitute_op(&mut op, &subst);
        new_ops.push(op);
    }
    if cost_after >= cost_before {
        return false;
    }
    stats.regions_rewritten += 1;
    block.ops = new_ops;
    true
}
