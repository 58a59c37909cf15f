//! `dce` — remove ops without side effects whose results are unused.
//!
//! Runs to a fixed point, inside every region: an op is removed when it is pure (see
//! `OpKind::is_pure`) and none of its results is used anywhere. Structured ops (`tile.for`,
//! `tile.if`) and stores stay.
//!
//! Options: none. Statistics: `ops-removed`.

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::HashSet;
use tilec_dialect::{Block, Diagnostics, Module, Value};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "dce",
    summary: "Remove side-effect-free ops whose results are unused",
    description:
        "Deletes pure ops (arithmetic, loads, conversions) none of whose results is used, \
            to a fixed point, in every region.\n\nExample: `%x = tile.addi %a, %b : index` with no \
            use \
            of `%x` is removed.",
    options: &[],
};

/// The pass.
pub struct Dce;

/// Remove dead pure ops from `m`; returns how many were removed.
pub fn dce(m: &mut Module) -> u64 {
    let mut removed = 0;
    loop {
        let mut used = HashSet::new();
        m.walk(&mut |o| used.extend(o.operands.iter().copied()));
        let before = removed;
        for k in &mut m.ops {
            for b in &mut k.regions {
                removed += sweep(b, &used);
            }
        }
        if removed == before {
            return removed;
        }
    }
}

fn sweep(b: &mut Block, used: &HashSet<Value>) -> u64 {
    let n = b.ops.len();
    b.ops.retain(|o| {
        !(o.kind.is_pure()
            && o.regions.is_empty()
            && !o.results.is_empty()
            && o.results.iter().all(|r| !used.contains(r)))
    });
    let mut removed = (n - b.ops.len()) as u64;
    for o in &mut b.ops {
        for r in &mut o.regions {
            removed += sweep(r, used);
        }
    }
    removed
}

impl Pass for Dce {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let n = dce(m);
        cx.stat("ops-removed", n);
        Ok(())
    }
}
