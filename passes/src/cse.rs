//! `cse` — common subexpression elimination.
//!
//! A pure op without regions whose kind, operands, attributes and result types equal those
//! of an op that dominates it (earlier in the same block or in an enclosing block) is
//! removed and its results replaced by the earlier op's. `tile.load`, `tile.gather` and
//! `tile.extract` read memory, so such a read is only replaced by an identical one earlier
//! in the same block with no op that may write memory (a store, a flag op, a GPU-level op,
//! an op with regions) between them.
//!
//! Options: none. Statistics: `ops-eliminated`.

use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::HashMap;
use tilec_dialect::{Block, Diagnostics, Module, Operation, Type, Value};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "cse",
    summary: "Eliminate common subexpressions",
    description: "Replaces a pure op by an identical op that dominates it.\n\nExample: two \
        `tile.constant {value = 64} : index` in one kernel become one.",
    options: &[],
};

/// The pass.
pub struct Cse;

type Key = (tilec_dialect::OpKind, Vec<Value>, String, Vec<Type>);

/// Run CSE on `m`; returns how many ops were eliminated.
pub fn cse(m: &mut Module) -> u64 {
    let types: Vec<Type> = m.values.iter().map(|v| v.ty.clone()).collect();
    let mut n = 0;
    for k in &mut m.ops {
        let mut repl = HashMap::new();
        let mut scopes: Vec<HashMap<Key, Vec<Value>>> = vec![];
        for b in &mut k.regions {
            n += block(b, &types, &mut repl, &mut scopes);
        }
    }
    n
}

fn key(o: &Operation, types: &[Type]) -> Key {
    let attrs = o.attrs.iter().map(|(k, v)| format!("{k}={v};")).collect();
    let rts = o
        .results
        .iter()
        .map(|r| types[r.0 as usize].clone())
        .collect();
    (o.kind, o.operands.clone(), attrs, rts)
}

fn block(
    b: &mut Block,
    types: &[Type],
    repl: &mut HashMap<Value, Value>,
    scopes: &mut Vec<HashMap<Key, Vec<Value>>>,
) -> u64 {
    scopes.push(HashMap::new());
    let mut n = 0;
    let mut kept = Vec::with_capacity(b.ops.len());
    for mut o in std::mem::take(&mut b.ops) {
        for v in &mut o.operands {
            if let Some(r) = repl.get(v) {
                *v = *r;
            }
        }
        if o.kind.is_pure() && o.regions.is_empty() && !o.results.is_empty() {
            let k = key(&o, types);
            // A load reads memory: it may only reuse a load of the same block with no
            // possible write between them (see `clobbers`), never one from outside a loop
            // body or branch, which a store inside it may have overwritten.
            let prev = if o.kind.reads_global() {
                scopes.last().and_then(|s| s.get(&k))
            } else {
                scopes.iter().rev().find_map(|s| s.get(&k))
            };
            if let Some(prev) = prev {
                for (r, p) in o.results.iter().zip(prev) {
                    repl.insert(*r, *p);
                }
                n += 1;
                continue;
            }
            scopes
                .last_mut()
                .expect("scope")
                .insert(k, o.results.clone());
        }
        for r in &mut o.regions {
            n += block(r, types, repl, scopes);
        }
        if clobbers(&o) {
            scopes
                .last_mut()
                .expect("scope")
                .retain(|k, _| !k.0.reads_global());
        }
        kept.push(o);
    }
    b.ops = kept;
    scopes.pop();
    n
}

/// Whether `o` may write memory a read of global memory sees: any op with side effects (stores,
/// GPU-level ops) and any op holding regions, whatever they contain.
fn clobbers(o: &Operation) -> bool {
    !o.kind.is_pure() || !o.regions.is_empty()
}

impl Pass for Cse {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let n = cse(m);
        cx.stat("ops-eliminated", n);
        Ok(())
    }
}
