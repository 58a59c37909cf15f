//! The cost model of `tile-simplify`: a rough count of GPU work per op, summed over a
//! region and weighted by how often the region runs.
//!
//! - register op (`add`, `mul`, `max`, `neg`, `abs`, `relu`, `select`, `convert`, `broadcast`):
//!   [`REG`] per element
//! - special-function op (`div`, `exp`, `exp2`, `log`, `sqrt`, `rsqrt`, `tanh`): [`SFU`] per
//!   element
//! - shared-memory round trip (`transpose`, a `reshape` that moves data, `load`, `store`): [`SMEM`]
//!   per element
//! - `reshape` that only adds or drops size-1 dimensions: 0
//! - `dot` (M×K · K×N): M·N·K / [`MMA_MACS`] + M·N
//! - `splat`, `zeros`, constants, scalar index arithmetic: 1
//! - `tile.for`: trip count × its body ([`DEFAULT_TRIP_COUNT`] when the bounds are not constants)
//! - `tile.if`: the dearer branch
//!
//! Costs are integers (saturating), so extraction is deterministic. Within one block every
//! choice carries the block's weight, so the trip count decides where work crosses a
//! loop's boundary — hoisting a scale out of the K loop — and in the `cost-before` /
//! `cost-after` statistics.

use super::lang::{EGraph, TileLang};
use egg::Language;
use std::collections::HashMap;
use tilec_dialect::{Block, Module, OpClass, OpKind, Operation, Type, Value};

/// One register op on one element.
pub const REG: u64 = 1;
/// One special-function-unit op (or a divide) on one element.
pub const SFU: u64 = 4;
/// Moving one element through shared memory and back.
pub const SMEM: u64 = 8;
/// Multiply-accumulates a tensor core does per cost unit.
pub const MMA_MACS: u64 = 8;
/// The trip count assumed for a loop whose bounds are not constants.
pub const DEFAULT_TRIP_COUNT: u64 = 64;

fn elems(shape: &[u64]) -> u64 {
    shape.iter().product::<u64>().max(1)
}

/// Whether a reshape from `from` to `to` only adds or drops size-1 dimensions (a no-op on
/// the data's distribution).
pub fn reshape_is_free(from: &[u64], to: &[u64]) -> bool {
    from.iter()
        .filter(|&&d| d != 1)
        .eq(to.iter().filter(|&&d| d != 1))
}

/// The cost of one op of `kind` with result shape `result` and first operand shape
/// `operand0` (empty for scalars).
pub fn op_cost(kind: OpKind, result: &[u64], operand0: &[u64]) -> u64 {
    let n = elems(result);
    match kind {
        OpKind::Add
        | OpKind::Sub
        | OpKind::Mul
        | OpKind::Max
        | OpKind::Min
        | OpKind::Neg
        | OpKind::Abs
        | OpKind::Relu
        | OpKind::Select
        | OpKind::Convert
        | OpKind::Broadcast => n * REG,
        OpKind::Div
        | OpKind::Exp
        | OpKind::Exp2
        | OpKind::Log
        | OpKind::Sqrt
        | OpKind::Rsqrt
        | OpKind::Tanh => n * SFU,
        OpKind::Transpose | OpKind::Load => n * SMEM,
        OpKind::Store => elems(operand0) * SMEM,
        OpKind::Reshape => {
            if reshape_is_free(operand0, result) {
                0
            } else {
                n * SMEM
            }
        }
        OpKind::Dot => {
            let k = operand0.get(1).copied().unwrap_or(1);
            n.saturating_mul(k) / MMA_MACS + n
        }
        OpKind::Reduce => elems(operand0) * REG,
        OpKind::Kernel
        | OpKind::Return
        | OpKind::Yield
        | OpKind::For
        | OpKind::If
        | OpKind::WarpSpecialize => 0,
        _ => 1,
    }
}

/// The cost of an e-node of `egraph` (leaves and type literals cost nothing: they are
/// already computed, or no value at all).
pub fn node_cost(egraph: &EGraph, node: &TileLang) -> u64 {
    let ty = |id: &egg::Id| egraph[*id].data.ty;
    use TileLang::*;
    let Some(kind) = node.op_kind() else { return 0 };
    match node {
        Leaf(_) | Ty(_) => 0,
        Dot([a, _, c]) => op_cost(kind, ty(c).shape(), ty(a).shape()),
        Reshape([t, x]) | Broadcast([t, x]) => op_cost(kind, ty(t).shape(), ty(x).shape()),
        Convert([_, x]) => op_cost(kind, ty(x).shape(), ty(x).shape()),
        Splat(_) | Zeros(_) | Const(_) => 1,
        Select([_, x, _]) => op_cost(kind, ty(x).shape(), ty(x).shape()),
        _ => {
            let x = node.children()[0];
            op_cost(kind, ty(&x).shape(), ty(&x).shape())
        }
    }
}

/// The cost of an IR op itself (not of the regions it holds).
pub fn ir_op_cost(m: &Module, op: &Operation) -> u64 {
    let shape = |v: Option<&Value>| {
        v.and_then(|&v| m.try_ty(v))
            .and_then(Type::tile_shape)
            .map(<[u64]>::to_vec)
            .unwrap_or_default()
    };
    let result = shape(op.results.first());
    let operand0 = match op.kind {
        OpKind::Store => shape(op.operands.last()),
        OpKind::Load => vec![],
        _ => shape(op.operands.first()),
    };
    if op.kind.class() == OpClass::Gpu {
        return 1;
    }
    op_cost(op.kind, &result, &operand0)
}

/// The integer constants a kernel defines (`tile.constant` of an integer type), for trip
/// counts.
pub fn int_constants(kernel: &Operation) -> HashMap<Value, i64> {
    let mut c = HashMap::new();
    kernel.walk(&mut |o| {
        if o.kind == OpKind::Constant {
            if let (Some(&r), Some(v)) = (o.results.first(), o.int_attr("value")) {
                c.insert(r, v);
            }
        }
    });
    c
}

/// The trip count of a `tile.for` whose bounds and step are constants in `consts`.
pub fn trip_count(op: &Operation, consts: &HashMap<Value, i64>) -> Option<u64> {
    let get = |i: usize| op.operands.get(i).and_then(|v| consts.get(v)).copied();
    let (lb, ub, step) = (get(0)?, get(1)?, get(2)?);
    if step <= 0 {
        return None;
    }
    if ub <= lb {
        return Some(0);
    }
    let span = (ub as i128 - lb as i128) as u128;
    Some(span.div_ceil(step as u128).min(u64::MAX as u128) as u64)
}

/// The weighted cost of a block: its ops, plus each loop body times its trip count.
pub fn block_cost(m: &Module, b: &Block, consts: &HashMap<Value, i64>, default_trip: u64) -> u64 {
    let mut total: u64 = 0;
    for op in &b.ops {
        total = total.saturating_add(ir_op_cost(m, op));
        match op.kind {
            OpKind::For => {
                let trips = trip_count(op, consts).unwrap_or(default_trip);
                let body = op
                    .regions
                    .iter()
                    .map(|r| block_cost(m, r, consts, default_trip))
                    .sum::<u64>();
                total = total.saturating_add(trips.saturating_mul(body));
            }
            _ => {
                let worst = op
                    .regions
                    .iter()
                    .map(|r| block_cost(m, r, consts, default_trip))
                    .max()
                    .unwrap_or(0);
                total = total.saturating_add(worst);
            }
        }
    }
    total
}

/// The weighted cost of every kernel of a module.
pub fn module_cost(m: &Module, default_trip: u64) -> u64 {
    m.ops
        .iter()
        .map(|k| {
            block_cost(
                m,
                &Block {
                    args: vec![],
                    ops: vec![k.clone()],
                },
                &int_constants(k),
                default_trip,
            )
        })
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_and_dot_costs() {
        assert!(reshape_is_free(&[1, 128, 64], &[128, 64]));
        assert!(!reshape_is_free(&[128, 64], &[64, 128]));
        assert_eq!(
            op_cost(OpKind::Dot, &[128, 256], &[128, 64]),
            128 * 256 * 64 / MMA_MACS + 128 * 256
        );
        assert!(
            op_cost(OpKind::Transpose, &[64, 256], &[256, 64])
                > op_cost(OpKind::Mul, &[64, 256], &[64, 256])
        );
    }

    #[test]
    fn loops_weigh_by_trip_count() {
        let src = "tile.kernel @k(%X: tensor<?xf32>, %n: index) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c10 = tile.constant {value = 10} : index
  %z = tile.zeros : tile<4xf32>
  %a = tile.for %c0, %c10, %c1, %z : tile<4xf32> {
  ^bb0(%i: index, %c: tile<4xf32>):
    %d = tile.add %c, %c : tile<4xf32>
    tile.yield %d
  }
  %b = tile.for %c0, %n, %c1, %a : tile<4xf32> {
  ^bb0(%i: index, %c: tile<4xf32>):
    %d = tile.add %c, %c : tile<4xf32>
    tile.yield %d
  }
  tile.store %X, %c0, %b
  tile.return
}
";
        let m = tilec_dialect::parse(src, "t.tile").unwrap();
        // 3 constants + zeros: 4; loop 1: 10 × 4; loop 2: 64 × 4; store 4 × SMEM.
        assert_eq!(
            module_cost(&m, DEFAULT_TRIP_COUNT),
            4 + 10 * 4 + 64 * 4 + 4 * SMEM
        );
    }
}
