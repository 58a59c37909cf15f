//! Where a plain-launch kernel's shared memory is live: the live range of each
//! `tile.smem_alloc` buffer, over a numbering of the kernel's ops, so that a layout
//! conversion's round trip may take bytes of a buffer that is dead at that op.
//!
//! This is the interval form of the liveness that MLIR's and Triton's shared-memory
//! allocators compute: ops are numbered in pre-order, and a buffer is live from its first
//! use to its last. A use inside a loop that does not enclose the buffer's `tile.smem_alloc`
//! stands for the whole loop (the next iteration uses the buffer again). An asynchronous
//! access's range runs on to where it is done: a wgmma `tile.mma` to the first
//! `tile.wait_group {pending = 0}` after it in its own block (which retires every group, on
//! every path; with none there the buffer is live everywhere), a `tile.tma_load` to the
//! `tile.mbarrier_wait`s on its mbarrier (with none, the buffer is live everywhere). A
//! buffer handed to a region (a loop's carried value, a yield), or written by
//! `tile.cp_async` or read by `tile.tma_store` (whose waits name no value of it), is live
//! everywhere.
//!
//! What this relies on: a wait on a TMA copy's mbarrier comes after the copy completes, as
//! `tile-pipeline-loads` issues a copy only for an iteration that waits for it and reads it.
//! A source kernel cannot write GPU-level ops (`tilec::compile` refuses them); a kernel
//! written at the GPU level, with its `target`, keeps this protocol as it keeps the others
//! the passes establish.

use std::collections::HashMap;
use tilec_dialect::{Module as TileModule, OpKind, Operation, Type as TileType, Value};

/// A range of op numbers, both ends included.
pub(crate) type Span = (usize, usize);

/// The whole kernel: a region that is never dead (mbarriers, slots read across ops).
pub(crate) const ALWAYS: Span = (0, usize::MAX);

/// The op numbering and the buffers' live ranges of one kernel.
#[derive(Debug, Default)]
pub(crate) struct SmemPlan {
    /// Each op's number, by address (the module is borrowed for the whole lowering).
    index: HashMap<*const Operation, usize>,
    /// Each `tile.smem_alloc` result's live range.
    live: HashMap<Value, Span>,
}

/// An op's number, the spans of the loops around it (outermost first), and the ops after
/// it in its block.
struct Site<'a> {
    at: usize,
    loops: Vec<Span>,
    rest: &'a [Operation],
}

impl SmemPlan {
    /// Numbers `body`'s ops and computes the live range of every `tile.smem_alloc` result.
    pub(crate) fn new(m: &TileModule, body: &[Operation]) -> Self {
        let mut plan = SmemPlan::default();
        let mut sites: Vec<(&Operation, Site<'_>)> = vec![];
        let mut next = 0;
        // An op's number is its place in `sites`.
        number(body, &mut vec![], &mut next, &mut plan.index, &mut sites);
        let mut users: HashMap<Value, Vec<usize>> = HashMap::new();
        for (i, (op, _)) in sites.iter().enumerate() {
            for &v in &op.operands {
                users.entry(v).or_default().push(i);
            }
        }
        for (op, _) in &sites {
            if op.kind != OpKind::SmemAlloc {
                continue;
            }
            let Some(&b) = op.results.first() else {
                continue;
            };
            if !matches!(m.ty(b), TileType::Smem { .. }) {
                continue;
            }
            let Some(d) = plan.index(op).map(|i| &sites[i].1) else {
                continue;
            };
            let mut span: Option<Span> = None;
            let mut take = |s: Span| {
                span = Some(match span {
                    Some((a, z)) => (a.min(s.0), z.max(s.1)),
                    None => s,
                });
            };
            let mut always = false;
            for &u in users.get(&b).into_iter().flatten() {
                let (uop, us) = &sites[u];
                // Handed to a region, or an asynchronous access whose completion names no
                // value of the buffer (cp.async and bulk groups): live everywhere.
                if !uop.regions.is_empty()
                    || matches!(uop.kind, OpKind::Yield | OpKind::CpAsync | OpKind::TmaStore)
                {
                    always = true;
                    break;
                }
                take(widen(us, d));
                // A wgmma reads until a `wait_group {pending = 0}` retires every group: the
                // first one after it in its own block (so on every path); without one there,
                // the read may still be in flight anywhere after.
                if uop.kind == OpKind::Mma {
                    let retire = us
                        .rest
                        .iter()
                        .find(|o| o.kind == OpKind::WaitGroup && o.int_attr("pending") == Some(0));
                    match retire.and_then(|o| plan.index(o)) {
                        Some(w) => take(widen(&sites[w].1, d)),
                        None => {
                            always = true;
                            break;
                        }
                    }
                }
                // A TMA copy is done at the waits on its mbarrier; with none, never.
                if uop.kind == OpKind::TmaLoad {
                    let waits: Vec<usize> = uop
                        .operands
                        .get(2)
                        .and_then(|bar| users.get(bar))
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|&w| sites[w].0.kind == OpKind::MbarrierWait)
                        .collect();
                    if waits.is_empty() {
                        always = true;
                        break;
                    }
                    for w in waits {
                        take(widen(&sites[w].1, d));
                    }
                }
            }
            let span = if always {
                ALWAYS
            } else {
                span.unwrap_or((d.at, d.at))
            };
            plan.live.insert(b, span);
        }
        plan
    }

    /// `op`'s number; `None` for an op not in the kernel (never the case in a lowering).
    pub(crate) fn index(&self, op: &Operation) -> Option<usize> {
        self.index.get(&(op as *const Operation)).copied()
    }

    /// The live range of a `tile.smem_alloc` result; [`ALWAYS`] for any other value.
    pub(crate) fn live(&self, v: Value) -> Span {
        self.live.get(&v).copied().unwrap_or(ALWAYS)
    }
}

/// A use at `u` of a value defined at `d`: `u` alone, or the outermost loop around `u` that
/// is not around `d`.
fn widen(u: &Site, d: &Site) -> Span {
    u.loops
        .iter()
        .find(|l| !(l.0 <= d.at && d.at <= l.1))
        .copied()
        .unwrap_or((u.at, u.at))
}

/// Numbers `ops` in pre-order from `*next`, recording each op's site.
fn number<'a>(
    ops: &'a [Operation],
    loops: &mut Vec<Span>,
    next: &mut usize,
    index: &mut HashMap<*const Operation, usize>,
    sites: &mut Vec<(&'a Operation, Site<'a>)>,
) {
    for (i, op) in ops.iter().enumerate() {
        let at = *next;
        *next += 1;
        index.insert(op as *const Operation, at);
        sites.push((
            op,
            Site {
                at,
                loops: loops.clone(),
                rest: &ops[i + 1..],
            },
        ));
        if op.regions.is_empty() {
            continue;
        }
        let is_loop = matches!(op.kind, OpKind::For | OpKind::While);
        // The loop's own span is known once its body is numbered; the body's sites get it
        // through a placeholder fixed below.
        if is_loop {
            loops.push((at, usize::MAX));
        }
        let first = sites.len();
        for r in &op.regions {
            number(&r.ops, loops, next, index, sites);
        }
        let end = *next - 1;
        if is_loop {
            loops.pop();
            let depth = loops.len();
            for (_, s) in &mut sites[first..] {
                s.loops[depth] = (at, end);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live range of each top-level `tile.smem_alloc` of `src`'s kernel, by name.
    fn spans(src: &str) -> Vec<(String, Span)> {
        let m = tilec_dialect::parse(src, "t.tile").expect("parses");
        let k = m.kernels().next().expect("a kernel");
        let body = &k.regions[0].ops;
        let p = SmemPlan::new(&m, body);
        body.iter()
            .filter(|op| op.kind == OpKind::SmemAlloc)
            .map(|op| {
                let r = op.results[0];
                (m.name(r).unwrap_or("?").to_string(), p.live(r))
            })
            .collect()
    }

    #[test]
    fn uses_in_a_loop_take_the_whole_loop() {
        let spans = spans(
            "tile.kernel @k(%A: tensor<?x?xbf16>) {grid = [1], num_warps = 4} {
  %a = tile.smem_alloc {swizzle = 128} : smem<2x64x64xbf16>
  %b = tile.smem_alloc {swizzle = 128} : smem<1x64x64xbf16>
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c4 = tile.constant {value = 4} : index
  tile.for %c0, %c4, %c1 {
  ^bb0(%i: index):
    %t = tile.smem_load %a, %c0 : tile<64x64xbf16>
    tile.yield
  }
  %u = tile.smem_load %b, %c0 : tile<64x64xbf16>
  tile.return
}",
        );
        // Ops: 0 %a, 1 %b, 2-4 constants, 5 the loop, 6 the load, 7 the yield, 8 the load.
        assert_eq!(
            spans,
            vec![("a".to_string(), (5, 7)), ("b".to_string(), (8, 8))]
        );
    }
}
