//! `tile-hoist-loads` — issue loads of read-only tensors as early as their operands allow.
//!
//! A `tile.load` from a tensor that the kernel never writes (no `tile.store`,
//! `tile.atomic_add` or flag op names it; kernel arguments never alias) reads the same values
//! wherever it stands, so it moves up its block to just after the last op that defines one
//! of its operands (or to the block's start), and never above a flag op (`tile.wait_flag`,
//! `tile.arrive_flag`, `tile.release_flag`), which orders other programs' writes. The loads
//! then issue before the reductions and the barriers that come between them in program
//! order, and their latency overlaps: in a normalisation, the weights load with the row
//! instead of after its statistics (a CTA-wide barrier orders global memory too, so the back
//! end cannot move a load across one).
//!
//! Loads keep their relative order; nothing leaves its block (a load in a loop body stays
//! in the loop). Kernels with a `tile.dot` are left alone: `tile-to-gpu` takes the ops
//! after their K loop as the epilogue, and a load hoisted above the loop would leave it.
//!
//! Options: none. Statistics: `loads-hoisted`.

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::HashSet;
use tilec_dialect::{Block, Diagnostics, Module, OpKind, Operation, Value};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-hoist-loads",
    summary: "Move loads of read-only tensors up to where their operands are defined",
    description: "In each block, a 'tile.load' of a tensor the kernel never stores to moves up \
        to just after the last definition of its operands, so its latency overlaps the work \
        (and barriers) before it.\n\nExample: tile-opt --pass-pipeline=tile-hoist-loads \
        examples/rmsnorm.tile",
    options: &[],
};

/// The pass.
pub struct HoistLoads;

impl Pass for HoistLoads {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut moved = 0;
        for k in &mut m.ops {
            if k.kind != OpKind::Kernel {
                continue;
            }
            let mut has_dot = false;
            k.walk(&mut |o| has_dot |= matches!(o.kind, OpKind::Dot | OpKind::Mma));
            if has_dot {
                continue;
            }
            let mut written = HashSet::new();
            k.walk(&mut |o| {
                if matches!(o.kind, OpKind::Store | OpKind::AtomicAdd) || o.kind.is_flag() {
                    if let Some(&t) = o.operands.first() {
                        written.insert(t);
                    }
                }
            });
            for b in &mut k.regions {
                moved += hoist_block(b, &written);
            }
        }
        cx.stat("loads-hoisted", moved);
        Ok(())
    }
}

/// Hoists in `b` and the blocks nested in it; returns the number of loads moved.
fn hoist_block(b: &mut Block, written: &HashSet<Value>) -> u64 {
    let mut moved = 0;
    for op in &mut b.ops {
        for r in &mut op.regions {
            moved += hoist_block(r, written);
        }
    }
    let ops = std::mem::take(&mut b.ops);
    let mut out: Vec<Operation> = Vec::with_capacity(ops.len());
    let args: HashSet<Value> = b.args.iter().copied().collect();
    for op in ops {
        let hoistable =
            op.kind == OpKind::Load && op.operands.first().is_some_and(|t| !written.contains(t));
        if !hoistable {
            out.push(op);
            continue;
        }
        // After the last op that defines an operand, and after the loads already there
        // (loads keep their order).
        let needs: HashSet<Value> = op
            .operands
            .iter()
            .copied()
            .filter(|v| !args.contains(v))
            .collect();
        let after = out
            .iter()
            .rposition(|o| {
                o.kind == OpKind::Load
                    || o.kind.is_flag()
                    || o.results.iter().any(|r| needs.contains(r))
            })
            .map_or(0, |i| i + 1);
        if after < out.len() {
            moved += 1;
        }
        out.insert(after, op);
    }
    b.ops = out;
    moved
}
