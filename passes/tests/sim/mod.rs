//! An executable model of wgmma group semantics on concrete paths, written apart from
//! `tilec_passes::async_model`: the property test runs it beside `verify-async-waits`, so a
//! bug in the shared model shows up as a disagreement.
//!
//! It interprets the GPU-level IR the property test generates (one warpgroup, no warp
//! specialization): index arithmetic is evaluated, each `tile.if` and each loop trip count
//! is a choice (0, 1, 2, 3 or 5 trips) made per dynamic instance, and every combination is
//! run within a budget. Registers are sets fixed by the physical contract (DESIGN.md): an
//! accumulator and the wgmma result chained on it, a wait's operands and results, a loop's
//! init, carried argument, yield and result (when one init starts several carried values,
//! the first keeps its registers and the others are copies), a branch's yields and its
//! result. Hazards, checked at each op:
//! a non-wgmma read of registers a pending or open group writes; a non-wgmma write of
//! registers such a group reads or writes; a TMA copy into, or an `mbarrier_arrive`
//! releasing, a stage such a group reads; the kernel's end with any group pending; a
//! wgmma without a fence since the start or since another op touched its registers.

use std::collections::{HashMap, HashSet};
use tilec_dialect::{Block, Module, OpKind, Operation, Type, Value};

/// Trip counts a loop instance may take.
const TRIPS: [i64; 5] = [0, 1, 2, 3, 5];

#[derive(Clone, Debug)]
struct Group {
    writes: u32,
    reads: Option<u32>,
    stages: Vec<(Value, i64)>,
}

struct Run<'m> {
    m: &'m Module,
    slot: HashMap<Value, u32>,
    /// The rings each barrier guards (none known: every ring).
    bar_ring: HashMap<Value, Vec<Value>>,
    /// Every ring and its stage count.
    rings: Vec<(Value, i64)>,
    env: HashMap<Value, i64>,
    pending: Vec<Group>,
    open: Vec<Group>,
    dirty: HashSet<u32>,
    fenced: bool,
    /// Choices of this run, and how many were consumed.
    choices: Vec<usize>,
    used: usize,
    /// Branching factor of each consumed choice.
    arity: Vec<usize>,
}

fn find(p: &mut HashMap<Value, Value>, v: Value) -> Value {
    let mut r = v;
    while let Some(&q) = p.get(&r) {
        if q == r {
            break;
        }
        r = q;
    }
    p.insert(v, r);
    r
}

fn union(p: &mut HashMap<Value, Value>, a: Value, b: Value) {
    let (ra, rb) = (find(p, a), find(p, b));
    if ra != rb {
        p.insert(ra, rb);
    }
}

fn walk_values(op: &Operation, out: &mut Vec<Value>) {
    out.extend(op.operands.iter().copied());
    out.extend(op.results.iter().copied());
    for r in &op.regions {
        out.extend(r.args.iter().copied());
        for o in &r.ops {
            walk_values(o, out);
        }
    }
}

/// Register sets by the physical contract (see the module docs).
fn slots(kernel: &Operation) -> HashMap<Value, u32> {
    let mut p: HashMap<Value, Value> = HashMap::new();
    kernel.walk(&mut |o| match o.kind {
        OpKind::Mma if o.attr("zero_acc").and_then(|a| a.as_bool()) != Some(true) => {
            if let Some(acc) = o.operands.last() {
                union(&mut p, *acc, o.results[0]);
            }
        }
        OpKind::WaitGroup => {
            for (&a, &r) in o.operands.iter().zip(&o.results) {
                union(&mut p, a, r);
            }
        }
        OpKind::For => {
            let inits = &o.operands[3..];
            let args = &o.regions[0].args[1..];
            let yields = o.regions[0]
                .ops
                .last()
                .map(|y| y.operands.clone())
                .unwrap_or_default();
            let mut seen = HashSet::new();
            for k in 0..args.len() {
                // One init starting several carried values: the first keeps its registers,
                // the others start as copies.
                if seen.insert(inits[k]) {
                    union(&mut p, inits[k], args[k]);
                }
                if let Some(&y) = yields.get(k) {
                    union(&mut p, args[k], y);
                }
                union(&mut p, args[k], o.results[k]);
            }
        }
        OpKind::If => {
            for r in &o.regions {
                if let Some(y) = r.ops.last() {
                    for (&v, &res) in y.operands.iter().zip(&o.results) {
                        union(&mut p, v, res);
                    }
                }
            }
        }
        _ => {}
    });
    let mut all = vec![];
    walk_values(kernel, &mut all);
    all.iter().map(|&v| (v, find(&mut p, v).0)).collect()
}

impl Run<'_> {
    fn choose(&mut self, arity: usize) -> usize {
        let c = self.choices.get(self.used).copied().unwrap_or(0);
        if self.used >= self.choices.len() {
            self.choices.push(0);
        }
        self.arity.push(arity);
        self.used += 1;
        c
    }

    fn is_tile(&self, v: Value) -> bool {
        matches!(self.m.try_ty(v), Some(Type::Tile { .. }))
    }

    fn int(&self, v: Value) -> Result<i64, String> {
        self.env
            .get(&v)
            .copied()
            .ok_or_else(|| format!("no value for {v:?}"))
    }

    fn groups(&self) -> impl Iterator<Item = &Group> {
        self.pending.iter().chain(&self.open)
    }

    fn block(&mut self, b: &Block) -> Result<Vec<Value>, String> {
        for op in &b.ops {
            if op.kind == OpKind::Yield {
                return Ok(op.operands.clone());
            }
            self.op(op)?;
        }
        Ok(vec![])
    }

    fn op(&mut self, op: &Operation) -> Result<(), String> {
        let here = format!("{}:{}", op.loc.line, op.loc.col);
        match op.kind {
            OpKind::Constant => {
                if let (Some(&r), Some(v)) = (op.results.first(), op.int_attr("value")) {
                    self.env.insert(r, v);
                }
            }
            OpKind::AddI | OpKind::SubI | OpKind::MulI | OpKind::RemI => {
                let (a, b) = (self.int(op.operands[0])?, self.int(op.operands[1])?);
                let v = match op.kind {
                    OpKind::AddI => a + b,
                    OpKind::SubI => a - b,
                    OpKind::MulI => a * b,
                    _ => a.rem_euclid(b),
                };
                self.env.insert(op.results[0], v);
            }
            OpKind::For => {
                let (lb, step) = (self.int(op.operands[0])?, self.int(op.operands[2])?);
                let trips = TRIPS[self.choose(TRIPS.len())];
                let body = &op.regions[0];
                for t in 0..trips {
                    self.env.insert(body.args[0], lb + t * step);
                    self.block(body)?;
                }
            }
            OpKind::If => {
                let r = self.choose(2);
                self.block(&op.regions[r])?;
            }
            OpKind::Mma => {
                let p = tilec_dialect::ops::mma_operands(op).ok_or("bad tile.mma")?;
                let res = self.slot[&op.results[0]];
                let a_regs = self.is_tile(p.a).then(|| self.slot[&p.a]);
                if !self.fenced
                    || self.dirty.contains(&res)
                    || a_regs.is_some_and(|a| self.dirty.contains(&a))
                {
                    return Err(format!(
                        "{here}: wgmma without a fence after a register access"
                    ));
                }
                let mut stages = vec![];
                for (ring, s) in [(p.a, p.stage_a), (p.b, p.stage_b)] {
                    if matches!(self.m.try_ty(ring), Some(Type::Smem { .. })) {
                        stages.push((ring, self.int(s)?));
                    }
                }
                self.open.push(Group {
                    writes: res,
                    reads: a_regs,
                    stages,
                });
            }
            OpKind::CommitGroup => {
                let open = std::mem::take(&mut self.open);
                for g in open {
                    self.pending.push(g);
                }
            }
            OpKind::WaitGroup => {
                let n = op.int_attr("pending").unwrap_or(0) as usize;
                let keep = self.pending.len().min(n);
                self.pending.drain(..self.pending.len() - keep);
            }
            OpKind::WgmmaFence => {
                self.fenced = true;
                self.dirty.clear();
            }
            OpKind::TmaLoad => {
                let st = (op.operands[1], self.int(op.operands[3])?);
                if self.groups().any(|g| g.stages.contains(&st)) {
                    return Err(format!(
                        "{here}: TMA copy into a stage a pending group reads"
                    ));
                }
            }
            OpKind::MbarrierArrive => {
                // A barrier that guards no known ring may release a stage of any ring: its
                // index modulo that ring's stages.
                let s = self.int(op.operands[1])?;
                let released: Vec<(Value, i64)> = match self.bar_ring.get(&op.operands[0]) {
                    Some(rings) => rings.iter().map(|&r| (r, s)).collect(),
                    None => self
                        .rings
                        .iter()
                        .map(|&(r, n)| (r, s.rem_euclid(n)))
                        .collect(),
                };
                let hit = released
                    .iter()
                    .any(|st| self.groups().any(|g| g.stages.contains(st)));
                if hit {
                    return Err(format!("{here}: release of a stage a pending group reads"));
                }
            }
            OpKind::Return => {
                if self.groups().next().is_some() {
                    return Err(format!("{here}: kernel end with a group pending"));
                }
            }
            OpKind::SmemAlloc | OpKind::MbarrierAlloc | OpKind::MbarrierWait | OpKind::Barrier => {}
            _ => {
                let reads: Vec<Value> = op
                    .operands
                    .iter()
                    .copied()
                    .filter(|&v| self.is_tile(v))
                    .collect();
                for v in reads {
                    let s = self.slot[&v];
                    if self.groups().any(|g| g.writes == s) {
                        return Err(format!(
                            "{here}: '{}' reads registers a pending group writes",
                            op.kind.name()
                        ));
                    }
                    self.dirty.insert(s);
                }
                let writes: Vec<Value> = op
                    .results
                    .iter()
                    .copied()
                    .filter(|&v| self.is_tile(v))
                    .collect();
                for r in writes {
                    let s = self.slot[&r];
                    if self.groups().any(|g| g.writes == s || g.reads == Some(s)) {
                        return Err(format!(
                            "{here}: '{}' writes registers a pending group uses",
                            op.kind.name()
                        ));
                    }
                    self.dirty.insert(s);
                }
            }
        }
        Ok(())
    }
}

/// Which rings each barrier guards: those a TMA copy fills after a wait on the barrier, in
/// its block or one nested in it (the producer's `mbarrier_wait %empty, s` before it refills
/// stage s).
fn guards(b: &Block, waited: &[Value], out: &mut HashMap<Value, Vec<Value>>) {
    let mut waited = waited.to_vec();
    for o in &b.ops {
        if o.kind == OpKind::MbarrierWait {
            waited.push(o.operands[0]);
        }
        if o.kind == OpKind::TmaLoad {
            for &bar in &waited {
                out.entry(bar).or_default().push(o.operands[1]);
            }
        }
        for r in &o.regions {
            guards(r, &waited, out);
        }
    }
}

/// Runs `kernel` on every combination of choices within `budget` runs: `Some(Ok)` when no
/// run meets a hazard, `Some(Err(first hazard))`, or `None` when the budget ran out.
pub fn check(m: &Module, kernel: &Operation, budget: usize) -> Option<Result<(), String>> {
    let slot = slots(kernel);
    let mut bar_ring: HashMap<Value, Vec<Value>> = HashMap::new();
    guards(&kernel.regions[0], &[], &mut bar_ring);
    let mut rings = vec![];
    kernel.walk(&mut |o| {
        if o.kind == OpKind::SmemAlloc {
            for &r in &o.results {
                if let Some(Type::Smem { stages, .. }) = m.try_ty(r) {
                    rings.push((r, *stages as i64));
                }
            }
        }
    });
    let mut choices: Vec<usize> = vec![];
    for _ in 0..budget {
        let mut run = Run {
            m,
            slot: slot.clone(),
            bar_ring: bar_ring.clone(),
            rings: rings.clone(),
            env: HashMap::new(),
            pending: vec![],
            open: vec![],
            dirty: HashSet::new(),
            fenced: false,
            choices: choices.clone(),
            used: 0,
            arity: vec![],
        };
        // Parameters: %flag (unused: each tile.if is a choice), %N (each loop's trips are).
        let r = run.block(&kernel.regions[0]);
        if let Err(e) = r {
            return Some(Err(e));
        }
        // Next combination: increment the consumed choices as a mixed-radix counter.
        let mut c: Vec<usize> = run.choices[..run.used].to_vec();
        let arity = run.arity;
        loop {
            match c.pop() {
                None => return Some(Ok(())),
                Some(x) if x + 1 < arity[c.len()] => {
                    c.push(x + 1);
                    break;
                }
                Some(_) => {}
            }
        }
        choices = c;
    }
    None
}
