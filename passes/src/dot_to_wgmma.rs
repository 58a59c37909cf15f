//! `tile-dot-to-wgmma` — a laid-out `tile.dot` as Hopper's warpgroup MMA, A from registers.
//!
//! In a kernel with a plain launch (laid out by `tile-assign-layouts`) for a target with
//! `wgmma.mma_async` (sm_90a), each `tile.dot` whose layouts are the wgmma fragments becomes
//! the GPU-level sequence that `async-wait-placement` then completes with commits, fences
//! and the tightest waits:
//!
//! ```text
//! tile.smem_store %b_rows, %b_smem, %c0          // B into a 128-byte-swizzled buffer
//! tile.fence_proxy_async                         // generic-proxy writes before wgmma reads
//! tile.barrier                                   // every thread's part of B is written
//! %r = tile.mma %a, %b_smem, %c0, %c {kind = "wgmma", b_major = "k"|"n"[, zero_acc = true]}
//! ```
//!
//! - **A** stays in registers: the register-A ("RS") form of `wgmma.mma_async` (PTX ISA
//!   §9.7.15.5.1). Its fragment for m64nNk16 is, per warp, the `mma.sync.m16n8k16` A
//!   fragment, which is the layout `tile-assign-layouts` gives A
//!   ([`LinearLayout::dot_operand_a`]); an accumulator of `[m, k]` is the same layout, so
//!   attention's P feeds P·V where Q·Kᵀ left it.
//! - **B** is written by the threads that hold it into its own `smem<1 x R x C>` buffer
//!   (`swizzle = 128`), as rows along the dimension its registers run in: `[N][K]`
//!   (`b_major = "k"`) when they run along K (a transposed load, `Kᵀ`: the transpose is
//!   folded away), `[K][N]` (`b_major = "n"`) otherwise.
//! - **C** is the wgmma accumulator: the `[16·warps, n]` result laid out by
//!   [`LinearLayout::dot_accumulator`] with every warp along M is, warpgroup by warpgroup,
//!   the m64nN D fragment. A C defined by `tile.zeros` gives `zero_acc = true`.
//!
//! The buffer has one stage: `async-wait-placement` drains the group that reads it before
//! the next store (an overwrite hazard, `crate::async_model`).
//!
//! A dot stays a `tile.dot` (lowered with `mma.sync`) when the wgmma form does not fit:
//! operands other than bf16/f16 into f32, a tf32 `precision`, warps not a multiple of 4 or
//! not all along M (M ≠ 16 · warps), N above 256, B not a power-of-two tile or its
//! contiguous dimension under 64 elements (one 128-byte swizzle row).
//!
//! Options: none. Statistics: `dots-to-wgmma`, `dots-on-mma-sync` (dots left for mma.sync
//! on a wgmma target).

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::HashMap;
use tilec_dialect::{
    Attribute, Block, Diagnostics, LinearLayout, Location, Module, OpKind, Operation, ScalarType,
    Target, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-dot-to-wgmma",
    summary: "Turn laid-out dots into register-A wgmma with B staged in shared memory",
    description: "In a laid-out kernel for a wgmma target (sm_90a), each 'tile.dot' whose \
        accumulator and A are the wgmma fragments becomes 'tile.smem_store' of B into a \
        128-byte-swizzled buffer, 'tile.fence_proxy_async', 'tile.barrier' and 'tile.mma \
        {kind = \"wgmma\"}' with A from registers. Run 'async-wait-placement' after it.\n\n\
        Example: tile-opt --pass-pipeline='tile-assign-layouts{target=sm_90a},\
        tile-dot-to-wgmma,async-wait-placement' examples/attention_fwd.tile",
    options: &[],
};

/// The pass.
pub struct DotToWgmma;

impl Pass for DotToWgmma {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            let target = k.str_attr("target").and_then(Target::from_name);
            let warps = k.int_attr("num_warps");
            let (Some(t), Some(w)) = (target, warps) else {
                continue;
            };
            if k.kind != OpKind::Kernel || !t.has_wgmma() || k.regions.is_empty() {
                continue;
            }
            let (done, left) = rewrite_kernel(m, k, w as u64);
            cx.stat("dots-to-wgmma", done);
            cx.stat("dots-on-mma-sync", left);
        }
        m.ops = kernels;
        Ok(())
    }
}

/// How one dot becomes a wgmma.
struct Plan {
    /// B is stored `[N][K]` (rows along K).
    k_major: bool,
    /// The value stored: B, or the `[N, K]` tile B is the transpose of.
    rows: Option<Value>,
}

/// What the rewrite of a kernel needs to know about values defined before a dot.
#[derive(Default)]
struct Defs {
    /// Values defined by `tile.zeros`.
    zeros: std::collections::HashSet<Value>,
    /// `tile.transpose` results and their operand.
    transposed: HashMap<Value, Value>,
}

/// Rewrites the fitting dots of kernel `k`; returns (rewritten, left).
fn rewrite_kernel(m: &mut Module, k: &mut Operation, warps: u64) -> (u64, u64) {
    let mut defs = Defs::default();
    k.walk(&mut |o| match o.kind {
        OpKind::Zeros => defs.zeros.extend(o.results.first().copied()),
        OpKind::Transpose => {
            if let (Some(&r), Some(&x)) = (o.results.first(), o.operands.first()) {
                defs.transposed.insert(r, x);
            }
        }
        _ => {}
    });
    let mut prelude = vec![];
    let mut c0 = None;
    let mut counts = (0, 0);
    let mut body = std::mem::take(&mut k.regions[0]);
    rewrite_block(
        m,
        &mut body,
        warps,
        &defs,
        &mut prelude,
        &mut c0,
        &mut counts,
    );
    body.ops.splice(0..0, prelude);
    k.regions[0] = body;
    counts
}

fn rewrite_block(
    m: &mut Module,
    b: &mut Block,
    warps: u64,
    defs: &Defs,
    prelude: &mut Vec<Operation>,
    c0: &mut Option<Value>,
    counts: &mut (u64, u64),
) {
    let ops = std::mem::take(&mut b.ops);
    for mut op in ops {
        for r in &mut op.regions {
            rewrite_block(m, r, warps, defs, prelude, c0, counts);
        }
        if op.kind != OpKind::Dot {
            b.ops.push(op);
            continue;
        }
        let Some(plan) = plan(m, &op, warps, defs) else {
            counts.1 += 1;
            b.ops.push(op);
            continue;
        };
        counts.0 += 1;
        let loc = op.loc.clone();
        let (a, bv, c) = (op.operands[0], op.operands[1], op.operands[2]);
        let Some((b_shape, elem, b_layout)) =
            laid_out(m, bv).map(|(s, e, l)| (s.to_vec(), e, l.clone()))
        else {
            b.ops.push(op);
            continue;
        };
        let buf_shape = if plan.k_major {
            vec![b_shape[1], b_shape[0]]
        } else {
            b_shape.clone()
        };
        let zero = *c0.get_or_insert_with(|| {
            let v = m.new_value(Type::INDEX, Some("c0".into()));
            let mut o = Operation::new(OpKind::Constant, Location::unknown());
            o.attrs.insert("value".into(), Attribute::Int(0));
            o.results.push(v);
            prelude.push(o);
            v
        });
        let buf = m.new_value(
            Type::Smem {
                stages: 1,
                shape: buf_shape.clone(),
                elem,
            },
            Some("b_smem".into()),
        );
        let mut alloc = Operation::new(OpKind::SmemAlloc, loc.clone());
        alloc.attrs.insert("swizzle".into(), Attribute::Int(128));
        alloc.results.push(buf);
        prelude.push(alloc);
        let stored = match (plan.k_major, plan.rows) {
            (false, _) => bv,
            (true, Some(x)) => x,
            (true, None) => {
                let t = m.new_value(
                    Type::Tile {
                        shape: buf_shape,
                        elem,
                        layout: Some(Box::new(b_layout.transposed())),
                    },
                    None,
                );
                let mut tr = Operation::new(OpKind::Transpose, loc.clone());
                tr.operands.push(bv);
                tr.results.push(t);
                b.ops.push(tr);
                t
            }
        };
        let mut store = Operation::new(OpKind::SmemStore, loc.clone());
        store.operands = vec![stored, buf, zero];
        b.ops.push(store);
        b.ops
            .push(Operation::new(OpKind::FenceProxyAsync, loc.clone()));
        b.ops.push(Operation::new(OpKind::Barrier, loc.clone()));
        let mut mma = Operation::new(OpKind::Mma, loc);
        mma.operands = vec![a, buf, zero, c];
        mma.results = op.results.clone();
        mma.attrs
            .insert("kind".into(), Attribute::Str("wgmma".into()));
        mma.attrs.insert(
            "b_major".into(),
            Attribute::Str(if plan.k_major { "k" } else { "n" }.into()),
        );
        if defs.zeros.contains(&c) {
            mma.attrs.insert("zero_acc".into(), Attribute::Bool(true));
        }
        b.ops.push(mma);
    }
}

/// The layout of tile value `v`, with its shape and element.
fn laid_out(m: &Module, v: Value) -> Option<(&[u64], ScalarType, &LinearLayout)> {
    match m.try_ty(v)? {
        Type::Tile {
            shape,
            elem,
            layout: Some(l),
        } => Some((shape, *elem, l)),
        _ => None,
    }
}

/// How `op` becomes a wgmma at `warps` warps, if it fits (the module docs' conditions).
fn plan(m: &Module, op: &Operation, warps: u64, defs: &Defs) -> Option<Plan> {
    if op.operands.len() != 3 || op.results.len() != 1 {
        return None;
    }
    if tilec_dialect::ops::dot_precision(op) != "ieee" {
        return None;
    }
    let (sa, ea, la) = laid_out(m, op.operands[0])?;
    let (sb, eb, lb) = laid_out(m, op.operands[1])?;
    let (sc, ec, lc) = laid_out(m, op.results[0])?;
    if !matches!(ea, ScalarType::BF16 | ScalarType::F16) || eb != ea || ec != ScalarType::F32 {
        return None;
    }
    if laid_out(m, op.operands[2]).map(|(_, _, l)| l) != Some(lc) {
        return None;
    }
    let (n, kk) = (lc.dims[1], la.dims[1]);
    let fits = lc.num_warps() == warps
        && LinearLayout::is_wgmma_register_a(lc, sc, la, sa)
        && sb.iter().all(|d| d.is_power_of_two())
        && lb.dims == [kk, n];
    if !fits {
        return None;
    }
    // Rows along the dimension B's registers run in.
    let k_major = lb.register.first().is_some_and(|x| x[0] == 1 && x[1] == 0);
    let run = if k_major { sb[0] } else { sb[1] };
    if run < 64 {
        return None;
    }
    let rows = k_major
        .then(|| defs.transposed.get(&op.operands[1]).copied())
        .flatten()
        .filter(|&x| laid_out(m, x).is_some_and(|(_, _, l)| *l == lb.transposed()));
    Some(Plan { k_major, rows })
}
