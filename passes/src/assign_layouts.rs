//! `tile-assign-layouts` — give every tile of a kernel without a `tile.dot` a distributed
//! layout, and make it a GPU-level kernel with a plain launch.
//!
//! Kernels with a `tile.dot` are `tile-to-gpu`'s; kernels that already have a `target` are
//! left alone. For the others:
//!
//! - **Anchors.** Loads, stores, `tile.zeros`, `tile.splat`, `tile.iota` and
//!   `tile.broadcast` results take the blocked layout of their shape
//!   ([`LinearLayout::blocked`]): one 16-byte vector per thread along the contiguous (last)
//!   dimension, for the narrowest element type that the kernel loads or stores at that
//!   shape (4 bytes when none does), so every blocked tile of one shape has one layout.
//! - **Propagation.** Elementwise ops, `tile.convert` and `tile.select` take the layout of
//!   their first tile operand that is not a constructor (`tile.splat`, `tile.zeros`,
//!   `tile.iota`: those cost the same in any layout); `tile.reduce` the slice of its operand's
//!   ([`LinearLayout::slice`]); `tile.transpose` the transposed layout; loop-carried values
//!   the layout of their initial value, or, when a constructor made it, the layout the loop
//!   body yields; `tile.if` results that of the then-region's yield.
//! - **Gathers** give a blocked tile, and take their row indices in the slice of it along
//!   the columns (each thread holds the indices of the rows it loads).
//! - **Stores** keep their tile's layout unless it has shorter contiguous runs along the
//!   last dimension than the blocked one (a transpose's): then they store a conversion.
//! - **Conversions.** An operand whose layout differs from the one its op takes gets a
//!   `tile.convert_layout` just before the op — or, when a constructor made it, a copy of
//!   the constructor in that layout (rematerialized, no data moves).
//!
//! The kernel gets `target`, `num_warps` and `block = [32·num_warps, 1, 1]`. With
//! `num-warps=0` (the default) the pass picks the warps from the largest tile
//! ([`auto_warps`]). Everything the
//! generic lowering cannot take yet is refused here, at its op: `tile.while`,
//! `tile.atomic_add`, `tile.log` (no lowering with a stated error bound yet),
//! float-to-integer converts, and reshapes between shapes that are not powers of two.
//!
//! Options: `target` (sm_90a), `num-warps` (0: choose). Statistics: `kernels-laid-out`,
//! `layout-conversions`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::HashMap;
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, LinearLayout, Module, OpClass, OpKind, Operation,
    Target, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-assign-layouts",
    summary: "Give the tiles of kernels without a dot distributed layouts (a plain launch)",
    description: "For each kernel with no 'tile.dot' and no 'target': blocked layouts at \
        loads, stores and tile constructors, propagated through elementwise ops, slices at \
        reductions, 'tile.convert_layout' where an op's operands disagree; sets 'target', \
        'num_warps' and 'block'.\n\nExample: tile-opt \
        --pass-pipeline='tile-assign-layouts{target=sm_90 num-warps=4}' examples/softmax.tile",
    options: &[
        OptionInfo {
            name: "target",
            kind: OptionKind::Enum(&["sm_90", "sm_90a", "sm_100", "sm_100a"]),
            default: "sm_90a",
            help: "GPU to build for",
        },
        OptionInfo {
            name: "num-warps",
            kind: OptionKind::UInt,
            default: "0",
            help: "Warps per CTA: a power of two from 1 to 32, or 0 to choose from the tiles \
                (see the pass docs)",
        },
    ],
};

/// The pass.
pub struct AssignLayouts {
    /// Target.
    pub target: Target,
    /// Warps per CTA (0: [`auto_warps`]).
    pub num_warps: u64,
}

impl AssignLayouts {
    /// Build from checked options.
    ///
    /// # Errors
    /// `num-warps` not a power of two from 1 to 32.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let target = Target::from_name(o.get("target"))
            .ok_or_else(|| format!("unknown target '{}'", o.get("target")))?;
        let num_warps = o.uint("num-warps");
        if num_warps != 0 && (num_warps > 32 || !num_warps.is_power_of_two()) {
            return Err(format!(
                "tile-assign-layouts option 'num-warps' must be 0 (choose) or a power of two \
                 from 1 to 32, found {num_warps}"
            ));
        }
        Ok(AssignLayouts { target, num_warps })
    }
}

impl Pass for AssignLayouts {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.attr("target").is_some() || has_dot(k) {
                continue;
            }
            let warps = match self.num_warps {
                0 => auto_warps(m, k),
                n => n,
            };
            match assign_layouts(m, k, self.target, warps) {
                Ok(n) => {
                    cx.stat("kernels-laid-out", 1);
                    cx.stat("layout-conversions", n);
                }
                Err(d) => errors.extend(d.0),
            }
        }
        m.ops = kernels;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(errors))
        }
    }
}

/// Elements of the largest tile each thread holds when the pass chooses the warps.
pub const AUTO_ELEMS_PER_THREAD: u64 = 32;

/// The warps the pass gives kernel `k` with `num-warps=0`: enough that each thread holds
/// at most [`AUTO_ELEMS_PER_THREAD`] elements of the kernel's largest tile, from 4 to 8
/// (at 16 warps the register cap, 65,536 / 512 threads = 128, spilled a 64×256 reduction).
pub fn auto_warps(m: &Module, k: &Operation) -> u64 {
    let mut largest = 1u64;
    k.walk(&mut |o| {
        for &r in &o.results {
            if let Some(s) = m.ty(r).tile_shape() {
                largest = largest.max(s.iter().map(|d| d.next_power_of_two()).product());
            }
        }
    });
    (largest / (32 * AUTO_ELEMS_PER_THREAD))
        .next_power_of_two()
        .clamp(4, 8)
}

fn has_dot(k: &Operation) -> bool {
    let mut found = false;
    k.walk(&mut |o| found |= o.kind == OpKind::Dot);
    found
}

/// Lays out kernel `k` (see the module docs); returns the number of conversions inserted.
///
/// # Errors
/// Each op the generic lowering does not take, at its location.
pub fn assign_layouts(
    m: &mut Module,
    k: &mut Operation,
    target: Target,
    num_warps: u64,
) -> Result<u64, Diagnostics> {
    let mut errors = vec![];
    k.walk(&mut |o| {
        if let Some(msg) = unsupported(m, o) {
            errors.push(Diagnostic::error(o.loc.clone(), msg));
        }
    });
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let mut prefs: HashMap<Vec<u64>, u64> = HashMap::new();
    k.walk(&mut |o| {
        let tile = match o.kind {
            OpKind::Load | OpKind::Gather => o.results.first().copied(),
            OpKind::Store => o.operands.last().copied(),
            _ => None,
        };
        if let Some(t) = tile {
            if let Type::Tile { shape, elem, .. } = m.ty(t) {
                let e = prefs.entry(shape.clone()).or_insert(elem.size_bytes());
                *e = (*e).min(elem.size_bytes());
            }
        }
    });
    let mut a = Assigner {
        m,
        prefs,
        num_warps,
        conversions: 0,
        constructors: HashMap::new(),
        soft: std::collections::HashSet::new(),
    };
    for b in &mut k.regions {
        a.block(b);
    }
    // Constructors whose every use took a rematerialized copy.
    let mut used = std::collections::HashSet::new();
    k.walk(&mut |o| used.extend(o.operands.iter().copied()));
    let dead: std::collections::HashSet<Value> = a
        .constructors
        .keys()
        .filter(|v| !used.contains(*v))
        .copied()
        .collect();
    fn sweep(b: &mut Block, dead: &std::collections::HashSet<Value>) {
        b.ops
            .retain(|o| !o.results.iter().any(|r| dead.contains(r)));
        for o in &mut b.ops {
            for r in &mut o.regions {
                sweep(r, dead);
            }
        }
    }
    for b in &mut k.regions {
        sweep(b, &dead);
    }
    let n = a.conversions;
    registers_fit(m, k, num_warps)?;
    let threads = 32 * num_warps as i64;
    k.attrs
        .insert("target".into(), Attribute::Str(target.name().into()));
    k.attrs
        .insert("num_warps".into(), Attribute::Int(num_warps as i64));
    k.attrs.insert(
        "block".into(),
        Attribute::Array(vec![
            Attribute::Int(threads),
            Attribute::Int(1),
            Attribute::Int(1),
        ]),
    );
    Ok(n)
}

/// The most 32-bit registers a thread has (PTX's `.maxnreg` bound on every target).
pub const MAX_REGISTERS_PER_THREAD: u64 = 255;

/// Refuses the first op whose result tile alone needs more registers per thread than a
/// thread has ([`MAX_REGISTERS_PER_THREAD`]): such a tile cannot live in registers, and its
/// fully unrolled code grows with its size (minutes of compile time for a 4096×4096 tile).
/// The error is a resource limit, `registers per thread`.
fn registers_fit(m: &Module, k: &Operation, num_warps: u64) -> Result<(), Diagnostics> {
    let mut first = None;
    k.walk(&mut |o| {
        for &r in &o.results {
            let Type::Tile {
                shape,
                elem,
                layout: Some(l),
            } = m.ty(r)
            else {
                continue;
            };
            let regs = (l.num_registers() * elem.size_bytes()).div_ceil(4);
            if regs > MAX_REGISTERS_PER_THREAD && first.is_none() {
                let msg = format!(
                    "'{}' makes a {} that needs {regs} registers per thread at {num_warps} warps \
                     (a thread has at most {MAX_REGISTERS_PER_THREAD}): use smaller tiles or \
                     more warps",
                    o.kind.name(),
                    Type::tile(shape, *elem),
                );
                first = Some(Diagnostic::resource_limit(
                    o.loc.clone(),
                    msg,
                    "registers per thread",
                    regs,
                    MAX_REGISTERS_PER_THREAD,
                ));
            }
        }
    });
    match first {
        Some(d) => Err(Diagnostics(vec![d])),
        None => Ok(()),
    }
}

/// Why the generic lowering cannot take `o` yet, if it cannot.
fn unsupported(m: &Module, o: &Operation) -> Option<String> {
    let name = o.kind.name();
    match o.kind {
        OpKind::While => Some(format!(
            "'{name}' is not lowered in kernels without a 'tile.dot' yet (use 'tile.for')"
        )),
        OpKind::AtomicAdd => Some(format!(
            "'{name}' is not lowered in kernels without a 'tile.dot' yet"
        )),
        OpKind::Log => Some(format!(
            "'{name}' has no lowering with a stated error bound yet; 'tile.exp', \
             'tile.exp2', 'tile.tanh', 'tile.sqrt' and 'tile.rsqrt' are lowered"
        )),
        OpKind::Reshape => {
            let from = m.ty(*o.operands.first()?).tile_shape()?;
            let to = m.ty(*o.results.first()?).tile_shape()?;
            let pow2 = |s: &[u64]| s.iter().all(|d| d.is_power_of_two());
            (!(pow2(from) && pow2(to))).then(|| {
                format!(
                    "'{name}' between shapes that are not powers of two ({from:?} -> {to:?}) \
                     is not lowered yet"
                )
            })
        }
        k if k.class() == OpClass::Gpu => Some(format!(
            "'{name}' is a GPU-level op; tile-assign-layouts takes level-1 kernels"
        )),
        _ => None,
    }
}

struct Assigner<'m> {
    m: &'m mut Module,
    prefs: HashMap<Vec<u64>, u64>,
    num_warps: u64,
    conversions: u64,
    /// Results of `tile.splat`, `tile.zeros` and `tile.iota`, with the op that made them.
    constructors: HashMap<Value, Operation>,
    /// Loop-carried values whose initial value a constructor made, while their loop's
    /// layout is being decided: they follow the other operands like constructors do.
    soft: std::collections::HashSet<Value>,
}

impl Assigner<'_> {
    fn blocked(&self, shape: &[u64]) -> LinearLayout {
        let bytes = self.prefs.get(shape).copied().unwrap_or(4);
        LinearLayout::blocked(shape, bytes, self.num_warps)
    }

    fn layout(&self, v: Value) -> Option<LinearLayout> {
        self.m.ty(v).layout().cloned()
    }

    fn set(&mut self, v: Value, l: LinearLayout) {
        let t = self.m.ty(v).with_layout(Some(l));
        self.m.values[v.0 as usize].ty = t;
    }

    /// `v` in layout `want`: `v` itself, or the result of a `tile.convert_layout` pushed
    /// onto `out`.
    fn convert(
        &mut self,
        out: &mut Vec<Operation>,
        op: &Operation,
        v: Value,
        want: &LinearLayout,
    ) -> Value {
        if self.layout(v).as_ref() == Some(want) || !matches!(self.m.ty(v), Type::Tile { .. }) {
            return v;
        }
        let ty = self.m.ty(v).with_layout(Some(want.clone()));
        let r = self.m.new_value(ty, None);
        if let Some(def) = self.constructors.get(&v) {
            // Made by a constructor: make it again, in the layout wanted.
            let mut c = def.clone();
            c.loc = op.loc.clone();
            c.results = vec![r];
            out.push(c);
            return r;
        }
        let mut c = Operation::new(OpKind::ConvertLayout, op.loc.clone());
        c.operands.push(v);
        c.results.push(r);
        out.push(c);
        self.conversions += 1;
        r
    }

    fn block(&mut self, b: &mut Block) {
        let ops = std::mem::take(&mut b.ops);
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            self.op(&mut op, &mut out);
            out.push(op);
        }
        b.ops = out;
    }

    fn is_tile(&self, v: Value) -> bool {
        matches!(self.m.ty(v), Type::Tile { .. })
    }

    fn op(&mut self, op: &mut Operation, out: &mut Vec<Operation>) {
        let shape_of = |m: &Module, v: Value| m.ty(v).tile_shape().map(<[u64]>::to_vec);
        match op.kind {
            OpKind::Load | OpKind::Zeros | OpKind::Splat | OpKind::Broadcast | OpKind::Iota => {
                if let Some(s) = op.results.first().and_then(|&r| shape_of(self.m, r)) {
                    let l = self.blocked(&s);
                    self.set(op.results[0], l);
                    let constructor =
                        matches!(op.kind, OpKind::Zeros | OpKind::Splat | OpKind::Iota);
                    if constructor {
                        self.constructors.insert(op.results[0], op.clone());
                    }
                }
            }
            OpKind::Gather => {
                // The result is blocked; the row indices are laid out as its rows are, so
                // each thread holds the index of every row it loads.
                let Some(s) = op.results.first().and_then(|&r| shape_of(self.m, r)) else {
                    return;
                };
                let l = self.blocked(&s);
                self.set(op.results[0], l.clone());
                let rows = l.slice(1).reshaped(&tilec_dialect::layout::padded(&s[..1]));
                op.operands[1] = self.convert(out, op, op.operands[1], &rows);
            }
            OpKind::Reduce => {
                let (Some(l), Some(d)) = (self.layout(op.operands[0]), op.int_attr("dim")) else {
                    return;
                };
                self.set(op.results[0], l.slice(d as usize));
            }
            OpKind::Transpose => {
                if let Some(l) = self.layout(op.operands[0]) {
                    self.set(op.results[0], l.transposed());
                }
            }
            OpKind::Reshape => {
                if let (Some(l), Some(s)) =
                    (self.layout(op.operands[0]), shape_of(self.m, op.results[0]))
                {
                    self.set(op.results[0], l.reshaped(&s));
                }
            }
            OpKind::For => {
                // Operands: lb, ub, step, inits...; block args: iv, carried...
                let inits: Vec<(usize, Value)> = op.operands[3..]
                    .iter()
                    .copied()
                    .enumerate()
                    .filter(|&(_, v)| self.is_tile(v))
                    .collect();
                let carry = |a: &mut Self, op: &mut Operation, j: usize, l: LinearLayout| {
                    a.set(op.regions[0].args[1 + j], l.clone());
                    a.set(op.results[j], l);
                };
                for &(j, init) in &inits {
                    if let Some(l) = self.layout(init) {
                        carry(self, op, j, l);
                    }
                    if self.constructors.contains_key(&init) {
                        self.soft.insert(op.regions[0].args[1 + j]);
                    }
                }
                let original = op.regions[0].clone();
                self.block(&mut op.regions[0]);
                for &(j, _) in &inits {
                    self.soft.remove(&op.regions[0].args[1 + j]);
                }
                // An init made by a constructor takes the layout the body yields (the body
                // is laid out again with it), so the loop needs no conversion per iteration.
                let yields: Vec<Value> = op.regions[0]
                    .ops
                    .last()
                    .map(|y| y.operands.clone())
                    .unwrap_or_default();
                let mut relaid = false;
                for &(j, init) in &inits {
                    let yielded = yields.get(j).and_then(|&y| self.layout(y));
                    match yielded {
                        Some(l)
                            if self.constructors.contains_key(&init)
                                && self.layout(init).as_ref() != Some(&l) =>
                        {
                            op.operands[3 + j] = self.convert(out, op, init, &l);
                            carry(self, op, j, l);
                            relaid = true;
                        }
                        _ => {}
                    }
                }
                if relaid {
                    op.regions[0] = original;
                    self.block(&mut op.regions[0]);
                }
                let want: Vec<(usize, LinearLayout)> = inits
                    .iter()
                    .filter_map(|&(j, _)| Some((j, self.layout(op.results[j])?)))
                    .collect();
                self.fix_yield(&mut op.regions[0], &want);
            }
            OpKind::If => {
                for r in &mut op.regions {
                    self.block(r);
                }
                let then_yield: Vec<Value> = op.regions[0]
                    .ops
                    .last()
                    .map(|y| y.operands.clone())
                    .unwrap_or_default();
                let mut want = vec![];
                for (j, &v) in then_yield.iter().enumerate() {
                    if let Some(l) = self.layout(v) {
                        self.set(op.results[j], l.clone());
                        want.push((j, l));
                    }
                }
                if op.regions.len() > 1 {
                    self.fix_yield(&mut op.regions[1], &want);
                }
            }
            OpKind::Store => {
                // A store from a layout with shorter contiguous runs than the blocked one
                // (a transpose's) goes through a conversion, so it stores whole vectors.
                let Some(&t) = op.operands.last() else { return };
                let (Some(l), Some(s)) = (self.layout(t), shape_of(self.m, t)) else {
                    return;
                };
                let b = self.blocked(&s);
                if l.contiguous_register_bits() < b.contiguous_register_bits() {
                    let last = op.operands.len() - 1;
                    op.operands[last] = self.convert(out, op, t, &b);
                }
            }
            _ => {
                // Elementwise and the like: the first computed tile operand's layout (a
                // constructor's costs the same in any).
                let laid = |v: &Value| self.is_tile(*v) && self.layout(*v).is_some();
                let first = op
                    .operands
                    .iter()
                    .copied()
                    .find(|v| {
                        laid(v) && !self.constructors.contains_key(v) && !self.soft.contains(v)
                    })
                    .or_else(|| op.operands.iter().copied().find(laid));
                let Some(l) = first.and_then(|v| self.layout(v)) else {
                    return;
                };
                let operands = op.operands.clone();
                for (i, v) in operands.into_iter().enumerate() {
                    if self.is_tile(v) {
                        op.operands[i] = self.convert(out, op, v, &l);
                    }
                }
                for &r in &op.results.clone() {
                    if self.is_tile(r) {
                        self.set(r, l.clone());
                    }
                }
            }
        }
    }

    /// Converts the yielded values at `want`'s positions to those layouts.
    fn fix_yield(&mut self, b: &mut Block, want: &[(usize, LinearLayout)]) {
        let Some(mut y) = b.ops.pop() else { return };
        let mut out = vec![];
        for (j, l) in want {
            if let Some(&v) = y.operands.get(*j) {
                y.operands[*j] = self.convert(&mut out, &y, v, l);
            }
        }
        b.ops.extend(out);
        b.ops.push(y);
    }
}
