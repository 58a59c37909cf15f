//! `tile-specialize-masks` — a `tile.select` on an index-range mask gets a uniform branch
//! for the case where the mask is true everywhere.
//!
//! Bounds masks compare index tiles built from `tile.iota` and splatted scalars: the
//! columns of a key block against the keys left (`iota < splat(SKV - kv)`), a causal
//! diagonal (`iota(cols) < iota(rows) + splat(d)`). Every element then pays a compare and a
//! select although the mask is all true in every block but the last (or the diagonal ones).
//! This pass bounds both sides of the compare by interval arithmetic over the ops that build
//! them, computes from the bounds one scalar `i1` that holds exactly when the compare is true
//! for every element, and versions the select:
//!
//! ```text
//! %all = <scalar bounds of %x and %y, compared>      // e.g. E - 1 < SKV - kv
//! %r = tile.if %all -> tile<...> {
//!   tile.yield %a                                    // the mask is all true
//! } {
//!   %x = ... ; %m = tile.cmpi %x, %y ; %s = tile.select %m, %a, %b
//!   tile.yield %s
//! }
//! ```
//!
//! The ops that only build the mask move into the else-branch, so the all-true path runs
//! none of them. Bounds: `tile.iota {dim}` is `[0, E - 1]` (E the tile's extent along
//! `dim`), `tile.splat %s` is `[s, s]`, and `tile.addi`, `tile.subi`, `tile.mini`,
//! `tile.maxi` combine their operands' bounds. The predicates are `slt`, `sle`, `sgt` and
//! `sge` (the all-true condition of `x < y` is `max x < min y`); others, and masks built
//! otherwise, are left alone. Index arithmetic is taken not to overflow (tilec's index is
//! 64-bit). The pass runs on kernels without a `tile.dot`, before layouts are assigned.
//!
//! Options: none. Statistics: `selects-specialized`.

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostics, Location, Module, OpKind, Operation, ScalarType, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-specialize-masks",
    summary: "Branch around a select whose index-range mask is all true",
    description: "A 'tile.select' whose condition is a 'tile.cmpi' (slt, sle, sgt, sge) of \
        index tiles built from 'tile.iota', 'tile.splat' and integer add/sub/min/max becomes a \
        'tile.if' on one scalar condition, true exactly when the mask is true everywhere: the \
        then-branch yields the select's true operand, the else-branch builds the mask and \
        selects as before.\n\nExample: tile-opt --pass-pipeline=tile-specialize-masks \
        examples/attention_fwd.tile",
    options: &[],
};

/// The pass.
pub struct SpecializeMasks;

impl Pass for SpecializeMasks {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        let mut n = 0;
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.regions.is_empty() {
                continue;
            }
            // Kernels already at the GPU level (tile-to-gpu's, or laid out) are left alone.
            if k.attr("target").is_some() || k.attr("num_warps").is_some() {
                continue;
            }
            // The uniform branch is one more region: none where that would pass the limit.
            if k.region_depth() >= tilec_dialect::parser::MAX_NESTING {
                continue;
            }
            let mut uses: HashMap<Value, usize> = HashMap::new();
            k.walk(&mut |o| {
                for &v in &o.operands {
                    *uses.entry(v).or_default() += 1;
                }
            });
            let mut body = std::mem::take(&mut k.regions[0]);
            n += block(m, &mut body, &uses);
            k.regions[0] = body;
        }
        m.ops = kernels;
        cx.stat("selects-specialized", n);
        Ok(())
    }
}

/// An interval of index values: scalar values bounding every element.
#[derive(Clone, Copy)]
struct Bounds {
    lo: Value,
    hi: Value,
}

/// Rewrites the selects of `b` and the blocks nested in it; returns how many.
fn block(m: &mut Module, b: &mut Block, uses: &HashMap<Value, usize>) -> u64 {
    let mut n = 0;
    for op in &mut b.ops {
        for r in &mut op.regions {
            n += block(m, r, uses);
        }
    }
    let ops = std::mem::take(&mut b.ops);
    let orig = ops.clone();
    let defs: HashMap<Value, usize> = ops
        .iter()
        .enumerate()
        .flat_map(|(i, o)| o.results.iter().map(move |&r| (r, i)))
        .collect();
    // Plans: select index -> (ops moved into the else-branch, predicate pieces).
    let mut moved: HashSet<usize> = HashSet::new();
    let mut plans: HashMap<usize, (Vec<usize>, usize)> = HashMap::new();
    for (i, s) in ops.iter().enumerate() {
        if s.kind != OpKind::Select || s.operands.len() != 3 || s.results.len() != 1 {
            continue;
        }
        let Some(&ci) = defs.get(&s.operands[0]) else {
            continue;
        };
        let c = &ops[ci];
        let pred = c.str_attr("predicate").unwrap_or("");
        if c.kind != OpKind::CmpI
            || !matches!(pred, "slt" | "sle" | "sgt" | "sge")
            || uses.get(&s.operands[0]) != Some(&1)
            || moved.contains(&ci)
        {
            continue;
        }
        if !c.operands.iter().all(|&v| bounded(m, &ops, &defs, v)) {
            continue;
        }
        // The mask's own ops: the compare, and each op building it whose results are used
        // only by ops already taken.
        let mut take = vec![ci];
        let mut taken: HashSet<Value> = c.results.iter().copied().collect();
        let mut counted: HashMap<Value, usize> = HashMap::new();
        let mut stack = c.operands.clone();
        while let Some(v) = stack.pop() {
            let Some(&d) = defs.get(&v) else { continue };
            *counted.entry(v).or_default() += 1;
            let o = &ops[d];
            let all_in = o.results.iter().all(|r| counted.get(r) == uses.get(r));
            // Tiles only: the scalars a splat takes are the bounds' too.
            let tile = o
                .results
                .iter()
                .all(|&r| matches!(m.try_ty(r), Some(Type::Tile { .. })));
            if all_in && tile && !take.contains(&d) && o.regions.is_empty() && is_mask_op(o.kind) {
                take.push(d);
                taken.extend(o.results.iter().copied());
                stack.extend(o.operands.iter().copied());
            }
        }
        take.sort_unstable();
        if take.iter().any(|t| moved.contains(t)) {
            continue;
        }
        moved.extend(take.iter().copied());
        plans.insert(i, (take, ci));
        n += 1;
    }
    if plans.is_empty() {
        b.ops = ops;
        return n;
    }
    let mut slots: Vec<Option<Operation>> = ops.into_iter().map(Some).collect();
    let mut out = vec![];
    for i in 0..slots.len() {
        if moved.contains(&i) && !plans.contains_key(&i) {
            // Emitted with its select, in the else-branch.
            continue;
        }
        let Some((take, ci)) = plans.get(&i).cloned() else {
            if let Some(o) = slots[i].take() {
                out.push(o);
            }
            continue;
        };
        let sel = slots[i].take().expect("the select");
        let cmp = slots[ci].as_ref().expect("the compare").clone();
        let loc = sel.loc.clone();
        // The scalar condition, from the ops the bounds read (as they were).
        let all = {
            let mut e = Scalars {
                m,
                out: &mut out,
                loc: loc.clone(),
            };
            let x = e.bounds(&orig, &defs, cmp.operands[0]).expect("bounded");
            let y = e.bounds(&orig, &defs, cmp.operands[1]).expect("bounded");
            match cmp.str_attr("predicate").unwrap_or("") {
                "slt" => e.cmp("slt", x.hi, y.lo),
                "sle" => e.cmp("sle", x.hi, y.lo),
                "sgt" => e.cmp("sgt", x.lo, y.hi),
                _ => e.cmp("sge", x.lo, y.hi),
            }
        };
        let mut inner: Vec<Operation> = take.iter().filter_map(|&t| slots[t].take()).collect();
        let r = sel.results[0];
        let ty = m.ty(r).clone();
        let inner_r = m.new_value(ty, None);
        let mut sel2 = sel.clone();
        sel2.results = vec![inner_r];
        inner.push(sel2);
        let mut y = Operation::new(OpKind::Yield, loc.clone());
        y.operands = vec![inner_r];
        inner.push(y);
        let mut then_y = Operation::new(OpKind::Yield, loc.clone());
        then_y.operands = vec![sel.operands[1]];
        let mut iff = Operation::new(OpKind::If, loc.clone());
        iff.operands = vec![all];
        iff.results = vec![r];
        iff.regions = vec![
            Block {
                args: vec![],
                ops: vec![then_y],
            },
            Block {
                args: vec![],
                ops: inner,
            },
        ];
        out.push(iff);
    }
    b.ops = out;
    n
}

/// Ops a mask is built from (pure, index tiles).
fn is_mask_op(k: OpKind) -> bool {
    matches!(
        k,
        OpKind::Iota
            | OpKind::Splat
            | OpKind::AddI
            | OpKind::SubI
            | OpKind::MinI
            | OpKind::MaxI
            | OpKind::CmpI
    )
}

/// Whether index tile `v` has bounds the pass can compute from the ops of `ops`.
fn bounded(m: &Module, ops: &[Operation], defs: &HashMap<Value, usize>, v: Value) -> bool {
    let Some(Type::Tile {
        elem: ScalarType::Index,
        ..
    }) = m.try_ty(v)
    else {
        return false;
    };
    let Some(&d) = defs.get(&v) else {
        return false;
    };
    let o = &ops[d];
    match o.kind {
        OpKind::Iota => true,
        OpKind::Splat => o
            .operands
            .first()
            .is_some_and(|&s| m.try_ty(s) == Some(&Type::INDEX)),
        OpKind::AddI | OpKind::SubI | OpKind::MinI | OpKind::MaxI => {
            o.operands.len() == 2 && o.operands.iter().all(|&x| bounded(m, ops, defs, x))
        }
        _ => false,
    }
}

/// Appends the scalar ops that compute bounds.
struct Scalars<'a, 'b> {
    m: &'a mut Module,
    out: &'b mut Vec<Operation>,
    loc: Location,
}

impl Scalars<'_, '_> {
    fn op(&mut self, kind: OpKind, a: Value, b: Value) -> Value {
        let r = self.m.new_value(Type::INDEX, None);
        let mut o = Operation::new(kind, self.loc.clone());
        o.operands = vec![a, b];
        o.results = vec![r];
        self.out.push(o);
        r
    }

    fn constant(&mut self, x: i64) -> Value {
        let r = self.m.new_value(Type::INDEX, None);
        let mut o = Operation::new(OpKind::Constant, self.loc.clone());
        o.attrs.insert("value".into(), Attribute::Int(x));
        o.results = vec![r];
        self.out.push(o);
        r
    }

    fn cmp(&mut self, pred: &str, a: Value, b: Value) -> Value {
        let r = self.m.new_value(Type::I1, None);
        let mut o = Operation::new(OpKind::CmpI, self.loc.clone());
        o.operands = vec![a, b];
        o.attrs
            .insert("predicate".into(), Attribute::Str(pred.into()));
        o.results = vec![r];
        self.out.push(o);
        r
    }

    /// The bounds of index tile `v` (which [`bounded`] accepted).
    fn bounds(
        &mut self,
        ops: &[Operation],
        defs: &HashMap<Value, usize>,
        v: Value,
    ) -> Option<Bounds> {
        let o = &ops[*defs.get(&v)?];
        Some(match o.kind {
            OpKind::Iota => {
                let dim = o.int_attr("dim")? as usize;
                let Some(Type::Tile { shape, .. }) = self.m.try_ty(v) else {
                    return None;
                };
                let e = *shape.get(dim)? as i64;
                Bounds {
                    lo: self.constant(0),
                    hi: self.constant(e - 1),
                }
            }
            OpKind::Splat => Bounds {
                lo: o.operands[0],
                hi: o.operands[0],
            },
            k => {
                let (p, q) = (o.operands[0], o.operands[1]);
                let p = self.bounds(ops, defs, p)?;
                let q = self.bounds(ops, defs, q)?;
                match k {
                    OpKind::AddI => Bounds {
                        lo: self.op(OpKind::AddI, p.lo, q.lo),
                        hi: self.op(OpKind::AddI, p.hi, q.hi),
                    },
                    OpKind::SubI => Bounds {
                        lo: self.op(OpKind::SubI, p.lo, q.hi),
                        hi: self.op(OpKind::SubI, p.hi, q.lo),
                    },
                    OpKind::MinI => Bounds {
                        lo: self.op(OpKind::MinI, p.lo, q.lo),
                        hi: self.op(OpKind::MinI, p.hi, q.hi),
                    },
                    _ => Bounds {
                        lo: self.op(OpKind::MaxI, p.lo, q.lo),
                        hi: self.op(OpKind::MaxI, p.hi, q.hi),
                    },
                }
            }
        })
    }
}
