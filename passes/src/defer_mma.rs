//! `tile-defer-mma` — FlashAttention-3's intra-warpgroup order for a warp-specialized
//! consumer loop: each iteration's last wgmma runs one iteration later, after the next
//! iteration's first wgmma, and nothing is in flight at the back edge.
//!
//! It takes a consumer loop as `tile-pipeline-loads warp-specialize=true` writes it
//! (directly in region 1 of a `tile.warp_specialize` directly in the kernel body, or in the
//! body of a persistent tile loop `tile.for {tile_loop = true}` there; the producer in
//! region 0 fills each ring by TMA after waiting on the ring's empty barrier).
//! The *deferred* ops `L` of the body are its last `tile.mma` `D`, whose result the body
//! yields and nothing else reads, with the `tile.mbarrier_wait` on the full barrier of each
//! ring `D` reads, the releases of those rings (`tile.mbarrier_arrive` on their empty
//! barriers, alone or in a `tile.if`), and the pure ops that only `D` needs and are cheaper
//! to carry from (an op joins `L` when it reads the carried value `D` accumulates into, or
//! when its result has more bytes than its operands from the rest of the body: attention's
//! rescale of O and the broadcast of α join, the conversion of P to bf16 stays). The rest,
//! `E`, must not read what `L` defines nor the value `D` accumulates into, and holds a
//! wgmma. The loop `lb .. ub` becomes (attention: `E` = S = Q·Kᵀ and the softmax, `L` = O
//! rescaled and O += P·V):
//!
//! ```text
//! E(lb)                               // peeled; its barrier ops run when lb < ub
//! tile.for %iv = lb + step to ub {    // carries E's values that L reads (P, α) and iv
//!   E(iv) up to its first wgmma       // with L(iv - step)'s full-barrier waits before
//!                                     // the wgmma: S_j = Q·K_jᵀ issued
//!   L(iv - step)                      // O = O·α_{j-1} + P_{j-1}·V_{j-1} issued
//!   the rest of E(iv)                 // the softmax of S_j, under P_{j-1}·V_{j-1}
//! }
//! O = tile.if (lb < ub) { L(last iv) } else { O }
//! ```
//!
//! The scalar index ops `L` needs (ring stages and phases, a release's guard) are computed
//! again from `iv - step`; `E`'s other carried values leave through a `tile.select` on
//! `lb < ub` (the peeled `E` runs even when the loop has no trip; its barrier ops do not,
//! and its wgmma then reads a stage no copy fills, whose result is discarded). The waits are
//! `async-wait-placement`'s: in attention, `wait_group 1` retires S_j with P_{j-1}·V_{j-1}
//! still in flight under the softmax, and `wait_group 0` retires that before P is written
//! again. The producer is unchanged: the consumers still take each ring's stages in order.
//!
//! Run after `tile-pipeline-loads{warp-specialize=true}` (without `mma-lookahead`) and
//! before `async-wait-placement`. A loop that does not qualify is left as it is, with a
//! remark that says why.
//!
//! Options: none. Statistics: `loops-deferred`.

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, Module, OpKind, Operation, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-defer-mma",
    summary: "Run a consumer loop's last wgmma one iteration later (FlashAttention-3's order)",
    description: "In a warp-specialized consumer loop, the last wgmma (with its ring's full \
        barrier wait, its ring's releases and the pure ops only it needs) moves to the next \
        iteration, after that iteration's first wgmma; the first iteration's other ops are \
        peeled before the loop and the last iteration's deferred ops after it, so that the \
        softmax of key block j runs while P(j-1)·V(j-1) is in flight and nothing is in \
        flight at the back edge. Run after tile-pipeline-loads{warp-specialize=true} and \
        before async-wait-placement.\n\nExample: tile-opt \
        --pass-pipeline='tile-assign-layouts{target=sm_90a num-warps=8},tile-dot-to-wgmma,\
        dce,tile-pipeline-loads{warp-specialize=true},tile-defer-mma,async-wait-placement' \
        k.tile",
    options: &[],
};

/// The pass.
pub struct DeferMma;

impl Pass for DeferMma {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        let mut done = 0;
        for k in &mut kernels {
            if k.kind != OpKind::Kernel {
                continue;
            }
            let Some(body) = k.regions.first_mut() else {
                continue;
            };
            let mut mma = false;
            for o in &body.ops {
                o.walk(&mut |x| mma |= x.kind == OpKind::Mma);
            }
            if mma && !body.ops.iter().any(|o| o.kind == OpKind::WarpSpecialize) {
                cx.diagnostics.push(Diagnostic::remark(
                    k.loc.clone(),
                    "tile-defer-mma: the kernel's wgmmas stay: it has no producer warpgroup \
                     (tile.warp_specialize directly in its body)",
                ));
            }
            for ws in body.ops.iter_mut() {
                if ws.kind != OpKind::WarpSpecialize || ws.regions.len() != 2 {
                    continue;
                }
                let rings = producer_rings(&ws.regions[0]);
                done += defer_in(m, &mut ws.regions[1].ops, &rings, cx);
            }
        }
        m.ops = kernels;
        cx.stat("loops-deferred", done);
        Ok(())
    }
}

/// Defers the loops among `ops` (a consumer region's, or a persistent tile loop's body in
/// it) whose bodies hold a wgmma directly; returns how many. A loop with wgmmas only deeper
/// (the tile loop) is searched in turn; each refusal is a remark.
fn defer_in(
    m: &mut Module,
    ops: &mut Vec<Operation>,
    rings: &HashMap<Value, (Value, Option<Value>)>,
    cx: &mut PassContext,
) -> u64 {
    let mut done = 0;
    let mut at = 0;
    while at < ops.len() {
        let o = &ops[at];
        let mut mma = false;
        o.walk(&mut |x| mma |= x.kind == OpKind::Mma);
        let direct = o
            .regions
            .first()
            .is_some_and(|b| b.ops.iter().any(|x| x.kind == OpKind::Mma));
        if o.kind == OpKind::For && mma && !direct {
            let tile_loop = o.attr("tile_loop").and_then(Attribute::as_bool) == Some(true);
            if tile_loop {
                done += defer_in(m, &mut ops[at].regions[0].ops, rings, cx);
                at += 1;
                continue;
            }
        }
        if o.kind == OpKind::For && mma {
            let loc = o.loc.clone();
            match defer(m, ops, at, rings) {
                Ok(n) => {
                    done += 1;
                    at += n;
                    continue;
                }
                Err(why) => cx.diagnostics.push(Diagnostic::remark(
                    loc,
                    format!("tile-defer-mma: the loop's last wgmma stays: {why}"),
                )),
            }
        }
        at += 1;
    }
    done
}

/// The producer's rings: ring buffer → (full barrier, empty barrier), from each
/// `tile.tma_load` of region 0 and the last `tile.mbarrier_wait` before it.
fn producer_rings(b: &Block) -> HashMap<Value, (Value, Option<Value>)> {
    fn walk(b: &Block, last: Option<Value>, out: &mut HashMap<Value, (Value, Option<Value>)>) {
        let mut last = last;
        for o in &b.ops {
            match o.kind {
                OpKind::MbarrierWait => last = o.operands.first().copied(),
                OpKind::TmaLoad => {
                    if let (Some(&ring), Some(&full)) = (o.operands.get(1), o.operands.get(2)) {
                        out.insert(ring, (full, last));
                    }
                }
                _ => {}
            }
            for r in &o.regions {
                walk(r, last, out);
            }
        }
    }
    let mut out = HashMap::new();
    walk(b, None, &mut out);
    out
}

/// Whether `o` and everything in it is free of side effects (a `tile.if` of pure ops).
fn effect_free(o: &Operation) -> bool {
    let mut ok = true;
    o.walk(&mut |x| {
        ok &= x.kind.is_pure() || x.kind == OpKind::Yield || x.kind == OpKind::If;
    });
    ok
}

/// Whether `o` only waits on or arrives at mbarriers (directly, or in a `tile.if` without
/// results).
fn barrier_op(o: &Operation) -> bool {
    match o.kind {
        OpKind::MbarrierWait | OpKind::MbarrierArrive => true,
        OpKind::If if o.results.is_empty() => o
            .regions
            .iter()
            .flat_map(|r| &r.ops)
            .all(|x| x.kind == OpKind::Yield || effect_free(x) || barrier_op(x)),
        _ => false,
    }
}

/// The values `o` and the ops in it read, in order, each once.
fn reads(o: &Operation) -> Vec<Value> {
    let mut s = vec![];
    o.walk(&mut |x| {
        for &v in &x.operands {
            if !s.contains(&v) {
                s.push(v);
            }
        }
    });
    s
}

/// The mbarriers `o` arrives at (directly or in its regions).
fn arrivals(o: &Operation) -> HashSet<Value> {
    let mut s = HashSet::new();
    o.walk(&mut |x| {
        if x.kind == OpKind::MbarrierArrive {
            s.extend(x.operands.first().copied());
        }
    });
    s
}

/// Bytes of a value of type `t` (a tile's elements; a scalar's size).
fn bytes(t: &Type) -> u64 {
    match t {
        Type::Tile { shape, elem, .. } => shape.iter().product::<u64>() * elem.size_bytes(),
        Type::Scalar(s) => s.size_bytes(),
        _ => 0,
    }
}

/// Whether `v` (of the loop body whose block arguments are `args`, the induction variable
/// first) can be computed again from the induction variable: a scalar of a pure op without
/// regions whose operands can be too, or are defined outside the body.
fn recomputable(m: &Module, defs: &HashMap<Value, &Operation>, args: &[Value], v: Value) -> bool {
    if v == args[0] {
        return true;
    }
    let Some(d) = defs.get(&v) else {
        return !args.contains(&v) && !matches!(m.try_ty(v), None | Some(Type::Tile { .. }));
    };
    matches!(m.try_ty(v), Some(Type::Scalar(_)))
        && d.kind.is_pure()
        && d.regions.is_empty()
        && d.operands.iter().all(|&o| recomputable(m, defs, args, o))
}

/// Emits into `out` the ops of the body that compute scalar `v` again, with `map` renaming
/// (the induction variable to the iteration's, carried values to theirs); returns the value.
fn recompute(
    m: &mut Module,
    defs: &HashMap<Value, &Operation>,
    map: &mut HashMap<Value, Value>,
    out: &mut Vec<Operation>,
    v: Value,
) -> Value {
    if let Some(&r) = map.get(&v) {
        return r;
    }
    let Some(&d) = defs.get(&v) else {
        return v;
    };
    for &o in &d.operands {
        recompute(m, defs, map, out, o);
    }
    let c = crate::tile_to_gpu::clone_op(m, d, map);
    out.push(c);
    map[&v]
}

/// Defers the last wgmma of the loop `ops[at]`; returns how many ops replace the loop.
fn defer(
    m: &mut Module,
    ops: &mut Vec<Operation>,
    at: usize,
    rings: &HashMap<Value, (Value, Option<Value>)>,
) -> Result<usize, String> {
    let f = ops[at].clone();
    let loc = f.loc.clone();
    let (Some(body), [lb, ub, step, inits @ ..]) = (f.regions.first(), f.operands.as_slice())
    else {
        return Err("not a counted loop".into());
    };
    let (lb, ub, step) = (*lb, *ub, *step);
    let iv = body.args[0];
    let args = &body.args[1..];
    let Some(y) = body.ops.last().filter(|y| y.kind == OpKind::Yield) else {
        return Err("the body has no yield".into());
    };
    let top = &body.ops[..body.ops.len() - 1];
    let di = top
        .iter()
        .rposition(|o| o.kind == OpKind::Mma)
        .ok_or("no wgmma directly in the body")?;
    let d = &top[di];
    let (Some(p), [dres]) = (
        d.results
            .first()
            .and_then(|r| y.operands.iter().position(|v| v == r)),
        d.results.as_slice(),
    ) else {
        return Err(
            "the last wgmma directly in its body accumulates into nothing the loop carries".into(),
        );
    };
    let dres = *dres;
    let acc_arg = args[p];
    // What each op of the body reads (its nested ops included), computed once.
    let top_reads: Vec<Vec<Value>> = top.iter().map(reads).collect();
    let users = |v: Value| -> usize {
        top_reads.iter().filter(|r| r.contains(&v)).count()
            + y.operands.iter().filter(|&&x| x == v).count()
    };
    if users(dres) != 1 {
        return Err("the last wgmma's result is read in the body".into());
    }
    let mp = tilec_dialect::ops::mma_operands(d).ok_or("a wgmma without its operands")?;
    let mut fulls = HashSet::new();
    let mut empties = HashSet::new();
    for r in [mp.a, mp.b] {
        if let Some(&(full, empty)) = rings.get(&r) {
            fulls.insert(full);
            empties.extend(empty);
        }
    }
    if fulls.is_empty() {
        return Err("the last wgmma reads no ring the producer fills".into());
    }
    if empties.len() != fulls.len() {
        return Err(
            "the producer refills a ring the last wgmma reads without waiting on an \
            empty barrier"
                .into(),
        );
    }
    if y.operands
        .iter()
        .enumerate()
        .any(|(q, &v)| q != p && v == acc_arg)
    {
        return Err("the carried value the last wgmma accumulates into is carried on again".into());
    }
    let ring_bufs: Vec<Value> = [mp.a, mp.b]
        .into_iter()
        .filter(|r| rings.contains_key(r))
        .collect();
    // L: the wgmma, its rings' full waits and releases, and the pure ops only it needs that
    // are cheaper to carry from.
    let defs: HashMap<Value, &Operation> = top
        .iter()
        .flat_map(|o| o.results.iter().map(move |&r| (r, o)))
        .collect();
    // The index in the body of the op that defines each value.
    let def_at: HashMap<Value, usize> = top
        .iter()
        .enumerate()
        .flat_map(|(i, o)| o.results.iter().map(move |&r| (r, i)))
        .collect();
    let mut late = vec![false; top.len()];
    late[di] = true;
    for (i, o) in top.iter().enumerate() {
        if o.kind == OpKind::MbarrierWait && o.operands.first().is_some_and(|b| fulls.contains(b)) {
            late[i] = true;
        }
        if barrier_op(o) && !arrivals(o).is_empty() && arrivals(o).is_subset(&empties) {
            late[i] = true;
        }
    }
    // The exclusive backward slice of the wgmma (pure ops whose results only it, or ops
    // of the slice, read).
    let mut slice = vec![false; top.len()];
    slice[di] = true;
    for i in (0..di).rev() {
        let o = &top[i];
        if !(o.kind.is_pure() && o.regions.is_empty()) || o.results.is_empty() {
            continue;
        }
        let only_slice = o.results.iter().all(|&r| {
            y.operands.iter().all(|&x| x != r)
                && top_reads
                    .iter()
                    .enumerate()
                    .filter(|(_, u)| u.contains(&r))
                    .all(|(j, _)| slice[j])
        });
        let used = o.results.iter().any(|&r| users(r) > 0);
        if only_slice && used {
            slice[i] = true;
        }
    }
    let mut late_vals: HashSet<Value> = HashSet::new();
    for (i, o) in top.iter().enumerate() {
        if slice[i] && i != di {
            let forced = o
                .operands
                .iter()
                .any(|v| late_vals.contains(v) || *v == acc_arg);
            let other_arg = o.operands.iter().any(|v| *v != acc_arg && args.contains(v));
            let early_bytes: u64 = o
                .operands
                .iter()
                .filter(|v| defs.contains_key(v) && !late_vals.contains(v))
                .filter(|&&v| !recomputable(m, &defs, &body.args, v))
                .map(|&v| bytes(m.ty(v)))
                .sum();
            let out_bytes: u64 = o.results.iter().map(|&r| bytes(m.ty(r))).sum();
            if forced || (!other_arg && out_bytes > early_bytes) {
                if other_arg {
                    return Err("an op the wgmma needs reads another carried value".into());
                }
                late[i] = true;
            }
        }
        if late[i] {
            late_vals.extend(o.results.iter().copied());
        }
    }
    // Checks: E does not read what L defines nor the accumulator; L reads no other carried
    // value; E holds a wgmma; every op is one this pass can move.
    for (i, o) in top.iter().enumerate() {
        let r = &top_reads[i];
        if late[i] {
            if r.iter().any(|v| *v != acc_arg && args.contains(v)) {
                return Err("a deferred op reads another carried value".into());
            }
        } else if r.iter().any(|v| late_vals.contains(v) || *v == acc_arg) {
            return Err("the rest of the body reads what the last wgmma needs".into());
        } else if r.iter().any(|v| ring_bufs.contains(v)) {
            return Err("another op reads a ring the last wgmma reads".into());
        } else if !arrivals(o).is_disjoint(&empties) {
            return Err("an op that stays releases a ring the last wgmma reads".into());
        }
        if !(effect_free(o) || o.kind == OpKind::Mma || barrier_op(o)) {
            return Err(format!("'{}' in the body cannot move", o.kind.name()));
        }
    }
    if y.operands
        .iter()
        .enumerate()
        .any(|(q, v)| q != p && late_vals.contains(v))
    {
        return Err("a deferred op's result is carried".into());
    }
    let Some(first_mma) = top
        .iter()
        .enumerate()
        .position(|(i, o)| !late[i] && o.kind == OpKind::Mma)
    else {
        return Err("no other wgmma to issue before it".into());
    };
    // The values L reads from E that are carried (not scalars computed again).
    let mut carried: Vec<Value> = vec![];
    for (i, r) in top_reads.iter().enumerate() {
        if !late[i] {
            continue;
        }
        for &v in r {
            let from_e = def_at.get(&v).is_some_and(|&j| !late[j]);
            if from_e && !recomputable(m, &defs, &body.args, v) && !carried.contains(&v) {
                carried.push(v);
            }
        }
    }
    if carried
        .iter()
        .any(|v| defs.get(v).is_some_and(|d| d.kind == OpKind::Mma))
    {
        return Err(
            "the deferred ops read a wgmma result of the iteration before, which would \
            be carried in flight"
                .into(),
        );
    }
    let early: Vec<Operation> = top
        .iter()
        .enumerate()
        .filter(|(i, _)| !late[*i])
        .map(|(_, o)| o.clone())
        .collect();
    let lates: Vec<Operation> = top
        .iter()
        .enumerate()
        .filter(|(i, _)| late[*i])
        .map(|(_, o)| o.clone())
        .collect();
    let first_mma_in_early = top[..=first_mma]
        .iter()
        .enumerate()
        .filter(|(i, _)| !late[*i])
        .count();
    let yields = y.operands.clone();
    let res_tys: Vec<Type> = f.results.iter().map(|&r| m.ty(r).clone()).collect();
    let carried_tys: Vec<Type> = carried.iter().map(|&v| m.ty(v).clone()).collect();

    let mut out: Vec<Operation> = vec![];
    let emit = |m: &mut Module, out: &mut Vec<Operation>, kind, operands: &[Value], t: Type| {
        let r = m.new_value(t, None);
        let mut o = Operation::new(kind, loc.clone());
        o.operands = operands.to_vec();
        o.results.push(r);
        out.push(o);
        r
    };
    let go = emit(m, &mut out, OpKind::CmpI, &[lb, ub], Type::I1);
    out.last_mut()
        .expect("the compare")
        .attrs
        .insert("predicate".into(), Attribute::Str("slt".into()));
    // The peeled E(lb): its barrier ops only when the loop has a trip.
    let mut pe: HashMap<Value, Value> = HashMap::from([(iv, lb)]);
    for (q, &a) in args.iter().enumerate() {
        if q != p {
            pe.insert(a, inits[q]);
        }
    }
    for o in &early {
        let c = crate::tile_to_gpu::clone_op(m, o, &mut pe);
        if barrier_op(&c) {
            out.push(Operation::if_then(go, vec![c], loc.clone()));
        } else {
            out.push(c);
        }
    }
    let at_pe = |v: Value| pe.get(&v).copied().unwrap_or(v);
    let lb1 = emit(m, &mut out, OpKind::AddI, &[lb, step], Type::INDEX);
    // The loop.
    let iv2 = m.new_value(Type::INDEX, m.name(iv).map(str::to_string));
    let args2: Vec<Value> = args
        .iter()
        .map(|&a| {
            let (t, n) = (m.ty(a).clone(), m.name(a).map(str::to_string));
            m.new_value(t, n)
        })
        .collect();
    let xs2: Vec<Value> = carried_tys
        .iter()
        .map(|t| m.new_value(t.clone(), None))
        .collect();
    let ivp2 = m.new_value(Type::INDEX, None);
    let mut me: HashMap<Value, Value> = HashMap::from([(iv, iv2)]);
    for (&a, &b) in args.iter().zip(&args2) {
        me.insert(a, b);
    }
    let mut nb: Vec<Operation> = vec![];
    let mut late_result = None;
    // The deferred full-barrier waits go before the next iteration's first wgmma (the tile
    // has long landed), so that nothing between the two wgmmas blocks: a turn of
    // tile-pingpong may then span both.
    let (late_waits, late_rest): (Vec<Operation>, Vec<Operation>) = lates
        .iter()
        .cloned()
        .partition(|o| o.kind == OpKind::MbarrierWait);
    let mut ml: HashMap<Value, Value> = HashMap::from([(acc_arg, args2[p])]);
    for (&x, &x2) in carried.iter().zip(&xs2) {
        ml.insert(x, x2);
    }
    for (k, o) in early.iter().enumerate() {
        if k + 1 == first_mma_in_early {
            let ivl = emit(m, &mut nb, OpKind::SubI, &[iv2, step], Type::INDEX);
            ml.insert(iv, ivl);
            clone_late(m, &defs, &late_waits, &lates, &mut ml, &mut nb);
        }
        nb.push(crate::tile_to_gpu::clone_op(m, o, &mut me));
        if k + 1 == first_mma_in_early {
            clone_late(m, &defs, &late_rest, &lates, &mut ml, &mut nb);
            late_result = ml.get(&dres).copied();
        }
    }
    let late_result = late_result.ok_or("no wgmma before the deferred ops")?;
    let mut y2 = Operation::new(OpKind::Yield, y.loc.clone());
    for (q, &v) in yields.iter().enumerate() {
        y2.operands.push(if q == p {
            late_result
        } else {
            me.get(&v).copied().unwrap_or(v)
        });
    }
    for &x in &carried {
        y2.operands.push(me[&x]);
    }
    y2.operands.push(iv2);
    nb.push(y2);
    let mut f2 = Operation::new(OpKind::For, loc.clone());
    f2.attrs = f.attrs.clone();
    f2.operands = vec![lb1, ub, step];
    for (q, &v) in yields.iter().enumerate() {
        f2.operands.push(if q == p { inits[p] } else { at_pe(v) });
    }
    for &x in &carried {
        f2.operands.push(at_pe(x));
    }
    f2.operands.push(lb);
    let mut bargs = vec![iv2];
    bargs.extend(&args2);
    bargs.extend(&xs2);
    bargs.push(ivp2);
    f2.regions = vec![Block {
        args: bargs,
        ops: nb,
    }];
    let rs: Vec<Value> = res_tys
        .iter()
        .chain(&carried_tys)
        .chain([&Type::INDEX])
        .map(|t| m.new_value(t.clone(), None))
        .collect();
    f2.results = rs.clone();
    out.push(f2);
    // L of the last trip, when there was one.
    let n = res_tys.len();
    let mut ml: HashMap<Value, Value> =
        HashMap::from([(iv, rs[n + carried.len()]), (acc_arg, rs[p])]);
    for (k, &x) in carried.iter().enumerate() {
        ml.insert(x, rs[n + k]);
    }
    let mut then = vec![];
    clone_late(m, &defs, &lates, &lates, &mut ml, &mut then);
    let last = ml[&dres];
    let mut ty_ = Operation::new(OpKind::Yield, loc.clone());
    ty_.operands = vec![last];
    then.push(ty_);
    let mut ey = Operation::new(OpKind::Yield, loc.clone());
    ey.operands = vec![rs[p]];
    let mut iff = Operation::new(OpKind::If, loc.clone());
    iff.operands = vec![go];
    iff.regions = vec![
        Block {
            args: vec![],
            ops: then,
        },
        Block {
            args: vec![],
            ops: vec![ey],
        },
    ];
    let o_final = m.new_value(res_tys[p].clone(), m.name(f.results[p]).map(str::to_string));
    iff.results = vec![o_final];
    out.push(iff);
    let mut rename: HashMap<Value, Value> = HashMap::new();
    for (q, &r) in f.results.iter().enumerate() {
        let v = if q == p {
            o_final
        } else {
            emit(
                m,
                &mut out,
                OpKind::Select,
                &[go, rs[q], inits[q]],
                res_tys[q].clone(),
            )
        };
        rename.insert(r, v);
    }
    let count = out.len();
    ops.splice(at..=at, out);
    for o in ops.iter_mut().skip(at + count) {
        o.walk_mut(&mut |x| {
            for v in &mut x.operands {
                if let Some(&r) = rename.get(v) {
                    *v = r;
                }
            }
        });
    }
    Ok(count)
}

/// Appends clones of the deferred ops `ops` (some of `lates`) to `out` with `map` (the
/// induction variable and carried values renamed; it receives the clones' results),
/// computing the scalars they read from the rest of the body again.
fn clone_late(
    m: &mut Module,
    defs: &HashMap<Value, &Operation>,
    ops: &[Operation],
    lates: &[Operation],
    map: &mut HashMap<Value, Value>,
    out: &mut Vec<Operation>,
) {
    let late_defs: HashSet<Value> = lates.iter().flat_map(|o| o.results.clone()).collect();
    for o in ops {
        for v in reads(o) {
            if defs.contains_key(&v) && !late_defs.contains(&v) && !map.contains_key(&v) {
                recompute(m, defs, map, out, v);
            }
        }
        out.push(crate::tile_to_gpu::clone_op(m, o, map));
    }
}
