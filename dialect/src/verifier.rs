//! The verifier. It checks, and reports every violation it finds (not only the first):
//!
//! 1. **Top level**: only `tile.kernel` ops, each with a symbol name unique in the module.
//! 2. **Handles and SSA dominance**: every operand is a value of the module defined before
//!    its use, in the same block or an enclosing one (block arguments included); no value
//!    is defined twice; every value's type is within the IR's limits
//!    ([`crate::Type::check`], the parser's). Kernels are isolated from above.
//! 3. **Regions and terminators**: each op has the number of regions its kind takes; every
//!    block ends with the terminator its parent expects (`tile.return` in a kernel,
//!    `tile.yield` in `tile.for`/`tile.if`) and no terminator stands elsewhere; regions
//!    nest at most [`crate::parser::MAX_NESTING`] deep.
//! 4. **Kernels**: the name and the arguments' names are identifiers
//!    ([`crate::lexer::is_identifier`]); arguments are scalars or tensors with distinct
//!    names; the `grid`
//!    attribute is a list of 1 to 3 expressions over the kernel's integer arguments; a
//!    constant dimension is within CUDA's grid limits ([`crate::target::MAX_GRID`]; the
//!    manifest's `grid_limits` tells the launcher to check the others).
//! 5. **Operand and result types** of each op, per its summary in [`crate::OpKind`]:
//!    integer ops on one integer type, float elementwise ops on one float type, `tile.dot`
//!    shapes (M×K · K×N + M×N) and dtypes (f16/bf16 inputs with f32 or same-type
//!    accumulator; f32 inputs with f32), loads and stores with one `index` offset per
//!    tensor dimension and a tile of the tensor's rank and element type, loop-carried
//!    types equal across inits, block arguments, yields and results; `tile.atomic_add`
//!    is checked like a store and adds into an f32 tensor only.
//! 6. **Attributes**: names are identifiers; required attributes present, of the right
//!    kind, in range (`dim`, `predicate`, `kind`, `value`; a float constant within its
//!    type's finite range).
//! 7. **GPU-level ops**: operand kinds (smem rings, mbarrier arrays, tensors) and ranges of
//!    `stage`/`index`/`pending`. The TMA-store epilogue ops: `tile.smem_store` takes a
//!    2-D tile of the ring's element type with as many rows as a slot, and a `col_offset`
//!    (a multiple of 8) whose slot-wide column range lies inside the tile;
//!    `tile.tma_store` one coordinate per tensor dimension, a slot of the tensor's rank
//!    and element type; `tile.bulk_wait_group` a `pending` of 0 to 7 and a boolean
//!    `read`; `tile.named_barrier` an `id` of 1 to 15 and `threads` a multiple of 32 up
//!    to 1024. A wgmma accumulates in place, so a value is the accumulator of at most one
//!    wgmma on any path (two in different branches of a `tile.if` are fine), and a wgmma
//!    result initialises at most one carried value of a loop.
//! 8. **Layouts** (GPU level): a tile type with a layout (`tile<4x64xf32, #linear<...>>`,
//!    [`crate::layout`]) needs the kernel's `num_warps` (a power of two, 1 to 32); the
//!    layout covers the tile's padded shape with 5 lane bases and `log2(num_warps)` warp
//!    bases, and every element is held by some thread. `tile.convert_layout` keeps shape and
//!    element type and goes from one layout to another.
//! 9. **Targets**: in a kernel with a `target` attribute (set by `tile-to-gpu`), an op or
//!    form the target lacks is an error naming the op, the target and the targets that
//!    have it: `tile.mma {kind = "wgmma"}` needs sm_90a; `tile.clc_try_cancel` and
//!    `tile.clc_query` need sm_100 or sm_100a (PTX ISA 8.6); the multicast try_cancel
//!    (`{multicast = true}`) needs sm_100a. A `cluster` attribute is a list of three
//!    positive sizes of at most 16 CTAs in all.

use crate::attr::{Attribute, Expr};
use crate::diag::{DiagKind, Diagnostic, Diagnostics};
use crate::ir::{Block, Module, Operation, Value};
use crate::layout::LinearLayout;
use crate::location::Location;
use crate::ops::{CmpPredicate, OpClass, OpKind, Precision, ReduceKind};
use crate::target::Target;
use crate::types::{ScalarType, Type, MAX_DIM};
use std::collections::{HashMap, HashSet};

/// A shape, a warp count and what [`LinearLayout::check`] said of a layout for them.
type LayoutCheck = (Vec<u64>, u64, Result<(), String>);

/// The most mbarriers one `tile.mbarrier_alloc` makes: the lowering keeps a CTA's mbarriers
/// in a 1024-byte region of shared memory, 8 bytes each (PTX ISA §9.7.13.15).
pub const MAX_MBARRIERS: u64 = 128;

/// Verify a module; `Ok` if it satisfies every invariant in the module doc.
///
/// # Errors
/// Every violation found, each at the location of the op that breaks it.
pub fn verify(m: &Module) -> Result<(), Diagnostics> {
    let mut v = Verifier::new(m);
    let mut symbols = HashMap::new();
    for op in &m.ops {
        if op.kind != OpKind::Kernel {
            v.error(
                op,
                format!(
                    "'{}' is not allowed at top level; only 'tile.kernel' is",
                    op.kind.name()
                ),
            );
            continue;
        }
        if let Some(s) = &op.symbol {
            if let Some(prev) = symbols.insert(s.clone(), op.loc.clone()) {
                let d = Diagnostic::error(op.loc.clone(), format!("redefinition of kernel '@{s}'"))
                    .with_note(prev, "previous definition is here");
                v.diags.push(d);
            }
        }
        v.kernel(op);
    }
    if v.diags.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(v.diags).with_kind(DiagKind::InvalidIr))
    }
}

/// Verify one top-level `tile.kernel` of `m` (everything [`verify`] checks but the
/// uniqueness of kernel names across the module): kernels are isolated from above, so the
/// others need not be read. The [`crate::Builder`] checks each kernel it finishes this way.
///
/// # Errors
/// Every violation found in `k`, of kind [`DiagKind::InvalidIr`].
pub fn verify_kernel(m: &Module, k: &Operation) -> Result<(), Diagnostics> {
    let mut v = Verifier::new(m);
    v.kernel(k);
    if v.diags.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(v.diags).with_kind(DiagKind::InvalidIr))
    }
}

/// A module that passed [`verify`]. Back ends take this, so unverified IR cannot reach
/// MLIR (which aborts the process on ops it cannot take).
#[derive(Clone, Debug)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// Verify `m` and wrap it.
    ///
    /// # Errors
    /// As [`verify`].
    pub fn new(m: Module) -> Result<Self, Diagnostics> {
        verify(&m)?;
        Ok(VerifiedModule(m))
    }
    /// The module.
    pub fn module(&self) -> &Module {
        &self.0
    }
    /// Give the module back.
    pub fn into_inner(self) -> Module {
        self.0
    }
}

/// Check one op by its own rules (invariants 3 to 9 of the module doc, as they concern
/// this op): the number of its regions, its symbol, where its terminator stands (with
/// `parent`, the op whose region it ends), its attributes, and the types of its operands
/// and results. Dominance and the ops inside its regions are not checked; [`verify`]
/// checks those. The [`crate::Builder`] runs this on each op it builds.
///
/// # Errors
/// Every violation found, at the op's location, of kind [`DiagKind::InvalidIr`]; a handle
/// that `m` does not have is one.
pub fn verify_op(
    m: &Module,
    op: &Operation,
    parent: Option<&Operation>,
) -> Result<(), Diagnostics> {
    let mut v = Verifier::new(m);
    for &x in &op.operands {
        if m.try_ty(x).is_none() {
            v.error(
                op,
                format!(
                    "'{}' uses value handle {} that the module does not have",
                    op.kind.name(),
                    x.0
                ),
            );
        }
    }
    v.own(op, parent);
    for &r in &op.results {
        v.define(op, r);
    }
    if v.diags.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(v.diags).with_kind(DiagKind::InvalidIr))
    }
}

struct Verifier<'a> {
    m: &'a Module,
    /// The results of [`LinearLayout::check`] so far, per layout: shape, warps, result.
    layout_checks: HashMap<LinearLayout, Vec<LayoutCheck>>,
    diags: Vec<Diagnostic>,
    defined: HashSet<Value>,
    /// Values visible at the current point, one set per enclosing block.
    visible: Vec<HashSet<Value>>,
    /// The current kernel's target, once `tile-to-gpu` has set one.
    target: Option<Target>,
    /// Warps per CTA of the current kernel (`num_warps`, set by `tile-assign-layouts`).
    num_warps: Option<i64>,
    /// CTAs per cluster of the current kernel (`cluster` attribute; 1 without one).
    cluster_size: i64,
    /// The current kernel's cluster shape (`cluster` attribute; [1, 1, 1] without one).
    cluster_dims: [i64; 3],
    /// Integer constants seen so far (`tile.constant` results), for index range checks.
    consts: HashMap<Value, i64>,
    /// Remainders by a positive constant (`tile.remi %x, %c`): the result lies in `0..c`.
    moduli: HashMap<Value, i64>,
    /// The symbol of the kernel being verified.
    kernel: Option<String>,
    /// Regions open around the op being verified.
    depth: usize,
}

impl<'a> Verifier<'a> {
    fn new(m: &'a Module) -> Self {
        Verifier {
            m,
            layout_checks: HashMap::new(),
            diags: vec![],
            defined: HashSet::new(),
            visible: vec![],
            target: None,
            num_warps: None,
            cluster_size: 1,
            cluster_dims: [1; 3],
            consts: HashMap::new(),
            moduli: HashMap::new(),
            kernel: None,
            depth: 0,
        }
    }

    /// Verifies the top-level kernel `op`, with its target, warps and cluster in scope.
    fn kernel(&mut self, op: &'a Operation) {
        self.visible.clear();
        self.target = op.str_attr("target").and_then(Target::from_name);
        // A `target` names a known target: the op availability checks below key on it.
        if let Some(t) = op.attr("target") {
            if self.target.is_none() {
                let msg = match op.str_attr("target") {
                    Some(name) => format!(
                        "'target' = \"{name}\" is not a known target (known: {})",
                        Target::names()
                    ),
                    None => format!("'target' must be a string naming a target, found {t}"),
                };
                self.error(op, msg);
            }
        }
        self.num_warps = op.int_attr("num_warps");
        self.cluster_dims = op.cluster_shape();
        self.cluster_size = self.cluster_dims.iter().product();
        self.kernel = op.symbol.clone();
        self.op(op, None);
    }
}

fn is_float_like(t: &Type) -> bool {
    matches!(t, Type::Scalar(s) | Type::Tile { elem: s, .. } if s.is_float())
}

impl Verifier<'_> {
    /// `tile.tma_store %tensor, %ring, %slot, %coords...` (a ring slot to the tensor) or
    /// `tile.cp_async %tensor, %ring, %stage, %coords...` (the tensor into a 2-D ring stage):
    /// operand kinds, one coordinate per tensor dimension, the ring's rank, one element type.
    fn ring_copy(&mut self, op: &Operation, ots: &[Type], rts: &[Type]) {
        let name = op.kind.name();
        let store = op.kind == OpKind::TmaStore;
        let index = if store { "slot" } else { "stage" };
        let want_smem = |t: &Type| matches!(t, Type::Smem { .. });
        let ok = ots.len() >= 4
            && matches!(ots[0], Type::Tensor { .. })
            && want_smem(&ots[1])
            && ots[2..].iter().all(|t| *t == Type::INDEX);
        if !ok || !rts.is_empty() {
            return self.ring_copy_operands(op, ots, index);
        }
        let (
            Type::Tensor { rank, elem },
            Type::Smem {
                shape, elem: re, ..
            },
        ) = (&ots[0], &ots[1])
        else {
            return;
        };
        let rank = *rank as usize;
        if ots.len() != 3 + rank {
            self.error(
                op,
                format!(
                    "'{name}' of a rank-{rank} tensor takes {rank} coordinate(s), found {}",
                    ots.len() - 3
                ),
            );
        }
        if shape.len() != 2 {
            self.error(
                op,
                format!(
                    "'{name}' copies 2-D {index}s (over the tensor's last two dimensions), \
                     found a rank-{} {index}",
                    shape.len()
                ),
            );
        }
        if elem != re {
            let (from, to) = if store {
                (format!("a {re} ring"), format!("a {elem} tensor"))
            } else {
                (format!("a {elem} tensor"), format!("a {re} ring"))
            };
            self.error(
                op,
                format!("'{name}' copies {from} into {to}; the element types must match"),
            );
        }
    }

    fn ring_copy_operands(&mut self, op: &Operation, ots: &[Type], index: &str) {
        self.error(
            op,
            format!(
                "'{}' expects (tensor, smem ring, {index}: index, coords: index...) and no \
                 results, found ({})",
                op.kind.name(),
                list(ots)
            ),
        );
    }

    fn error(&mut self, op: &Operation, msg: impl Into<String>) {
        let mut d = Diagnostic::error(op.loc.clone(), msg);
        d.kernel = self.kernel.clone();
        self.diags.push(d);
    }

    fn ty(&self, v: Value) -> Option<&Type> {
        self.m.try_ty(v)
    }

    /// [`LinearLayout::check`], once per layout, shape and warp count: a kernel's values
    /// share few layouts, and the check is most of what verifying a value costs.
    fn layout_check(&mut self, l: &LinearLayout, shape: &[u64], warps: u64) -> Result<(), String> {
        let known = self.layout_checks.get(l).and_then(|seen| {
            seen.iter()
                .find(|(s, w, _)| s == shape && *w == warps)
                .map(|(_, _, r)| r.clone())
        });
        if let Some(r) = known {
            return r;
        }
        let r = l.check(shape, warps);
        self.layout_checks
            .entry(l.clone())
            .or_default()
            .push((shape.to_vec(), warps, r.clone()));
        r
    }

    fn define(&mut self, op: &Operation, v: Value) {
        if self.m.try_ty(v).is_none() {
            self.error(
                op,
                format!(
                    "'{}' defines a value handle {} that the module does not have",
                    op.kind.name(),
                    v.0
                ),
            );
            return;
        }
        if let Some(Err(e)) = self.m.try_ty(v).map(Type::check) {
            let msg = format!("{} has type {}: {e}", self.show(v), self.m.ty(v));
            self.error(op, msg);
            return;
        }
        if let Some(l) = self.m.try_ty(v).and_then(Type::layout) {
            let shape = self.m.ty(v).tile_shape().unwrap_or(&[]);
            match self.num_warps {
                None => self.error(
                    op,
                    format!(
                        "{} has a layout, so its kernel needs 'num_warps' (set by \
                         tile-assign-layouts)",
                        self.show(v)
                    ),
                ),
                Some(w) => {
                    if let Err(e) = self.layout_check(l, shape, w.max(1) as u64) {
                        self.error(op, format!("layout of {}: {e}", self.show(v)));
                    }
                }
            }
        }
        if !self.defined.insert(v) {
            self.error(
                op,
                format!("value {} is defined more than once", self.show(v)),
            );
        }
        if let Some(s) = self.visible.last_mut() {
            s.insert(v);
        }
    }

    fn show(&self, v: Value) -> String {
        match self.m.name(v) {
            Some(n) => format!("'%{n}'"),
            None => format!("#{}", v.0),
        }
    }

    fn block(&mut self, b: &Block, parent: &Operation, terminator: OpKind) {
        if self.depth >= crate::parser::MAX_NESTING {
            let msg = format!(
                "regions nest deeper than {} levels (the parser's limit)",
                crate::parser::MAX_NESTING
            );
            self.error(parent, msg);
            return;
        }
        self.depth += 1;
        self.visible.push(HashSet::new());
        for &a in &b.args {
            self.define(parent, a);
        }
        for (i, op) in b.ops.iter().enumerate() {
            let last = i + 1 == b.ops.len();
            if op.kind.is_terminator() && !last {
                self.error(
                    op,
                    format!("'{}' must be the last op of its block", op.kind.name()),
                );
            }
            self.op(op, Some(parent));
        }
        match b.ops.last() {
            Some(t) if t.kind == terminator => {}
            Some(t) if t.kind.is_terminator() => self.error(
                t,
                format!(
                    "'{}' cannot end a '{}' region; expected '{}'",
                    t.kind.name(),
                    parent.kind.name(),
                    terminator.name()
                ),
            ),
            _ => self.error(
                parent,
                format!(
                    "'{}' region must end with '{}'",
                    parent.kind.name(),
                    terminator.name()
                ),
            ),
        }
        self.visible.pop();
        self.depth -= 1;
    }

    fn op(&mut self, op: &Operation, parent: Option<&Operation>) {
        // Dominance of operands (one report per value, however often the op uses it).
        for (i, &v) in op.operands.iter().enumerate() {
            if op.operands[..i].contains(&v) {
                continue;
            }
            if self.ty(v).is_none() {
                self.error(
                    op,
                    format!(
                        "'{}' uses value handle {} that the module does not have",
                        op.kind.name(),
                        v.0
                    ),
                );
            } else if !self.visible.iter().any(|s| s.contains(&v)) {
                let msg = if self.defined.contains(&v) {
                    format!(
                        "operand {} of '{}' does not dominate this use",
                        self.show(v),
                        op.kind.name()
                    )
                } else {
                    format!(
                        "operand {} of '{}' is used before it is defined",
                        self.show(v),
                        op.kind.name()
                    )
                };
                self.error(op, msg);
            }
        }
        self.own(op, parent);
        // Regions.
        match op.kind {
            OpKind::Kernel => {
                if let Some(b) = op.regions.first() {
                    let saved = std::mem::take(&mut self.visible);
                    self.block(b, op, OpKind::Return);
                    self.visible = saved;
                }
            }
            OpKind::For | OpKind::While => {
                if let Some(b) = op.regions.first() {
                    self.block(b, op, OpKind::Yield);
                }
            }
            OpKind::If | OpKind::WarpSpecialize => {
                for b in &op.regions {
                    if !b.args.is_empty() {
                        self.error(
                            op,
                            format!("'{}' regions take no block arguments", op.kind.name()),
                        );
                    }
                    self.block(b, op, OpKind::Yield);
                }
            }
            _ => {}
        }
        for &r in &op.results {
            self.define(op, r);
        }
        if let (OpKind::Constant, Some(&r), Some(v)) =
            (op.kind, op.results.first(), op.int_attr("value"))
        {
            self.consts.insert(r, v);
        }
        // Integer arithmetic on two constants folds (as the interpreter computes it), so that
        // a computed loop step or divisor is checked like a written one.
        if let (Some(&r), [a, b]) = (op.results.first(), &op.operands[..]) {
            if let (Some(&x), Some(&y)) = (self.consts.get(a), self.consts.get(b)) {
                let v = match op.kind {
                    OpKind::AddI => Some(x.wrapping_add(y)),
                    OpKind::SubI => Some(x.wrapping_sub(y)),
                    OpKind::MulI => Some(x.wrapping_mul(y)),
                    OpKind::MinI => Some(x.min(y)),
                    OpKind::MaxI => Some(x.max(y)),
                    _ => None,
                };
                if let Some(v) = v {
                    self.consts.insert(r, v);
                }
            }
        }
        if let (OpKind::DivI | OpKind::RemI | OpKind::CeilDiv, [_, d]) = (op.kind, &op.operands[..])
        {
            if self.consts.get(d) == Some(&0) {
                self.error(
                    op,
                    format!("'{}' divides by the constant 0", op.kind.name()),
                );
            }
        }
        if let (OpKind::For, Some(step)) = (op.kind, op.operands.get(2)) {
            if let Some(&s) = self.consts.get(step).filter(|&&s| s <= 0) {
                self.error(
                    op,
                    format!("'tile.for' step must be positive, found the constant {s}"),
                );
            }
        }
        if let (OpKind::RemI, Some(&r), [x, c]) = (op.kind, op.results.first(), &op.operands[..]) {
            // `%` takes the dividend's sign: a stage (non-negative) lies in 0..|c|, and in
            // the smaller range where the dividend is itself a remainder.
            if let Some(c) = self
                .consts
                .get(c)
                .and_then(|c| c.checked_abs())
                .filter(|&c| c > 0)
            {
                let bound = self.moduli.get(x).map_or(c, |&m| m.min(c));
                self.moduli.insert(r, bound);
            }
        }
    }

    /// The op's own rules: its place, regions, symbol and attributes, and the types of
    /// its operands and results (not dominance, and not what its regions hold).
    fn own(&mut self, op: &Operation, parent: Option<&Operation>) {
        if op.kind == OpKind::Kernel && parent.is_some() {
            self.error(op, "'tile.kernel' must be at top level");
        }
        let expected_regions = match op.kind {
            OpKind::Kernel | OpKind::For | OpKind::While => 1,
            OpKind::If | OpKind::WarpSpecialize => 2,
            _ => 0,
        };
        if op.regions.len() != expected_regions {
            self.error(
                op,
                format!(
                    "'{}' expects {} region(s), found {}",
                    op.kind.name(),
                    expected_regions,
                    op.regions.len()
                ),
            );
        }
        if op.symbol.is_some() != (op.kind == OpKind::Kernel) {
            if op.kind == OpKind::Kernel {
                self.error(op, "'tile.kernel' needs a symbol name, e.g. '@gemm'");
            } else {
                self.error(
                    op,
                    format!("'{}' does not take a symbol name", op.kind.name()),
                );
            }
        }
        if let (Some(p), true) = (parent, op.kind.is_terminator()) {
            let ok = match op.kind {
                OpKind::Return => p.kind == OpKind::Kernel,
                _ => matches!(
                    p.kind,
                    OpKind::For | OpKind::While | OpKind::If | OpKind::WarpSpecialize
                ),
            };
            if !ok {
                self.error(
                    op,
                    format!(
                        "'{}' cannot appear inside '{}'",
                        op.kind.name(),
                        p.kind.name()
                    ),
                );
            }
        }
        for k in op.attrs.keys().filter(|k| !crate::lexer::is_identifier(k)) {
            self.error(
                op,
                format!("attribute name '{k}' of '{}' is not a name", op.kind.name()),
            );
        }
        match op.attr("role") {
            None => {}
            Some(Attribute::Str(r)) if r == "scheduler" || r == "all" => {}
            Some(a) => self.error(
                op,
                format!(
                    "'{}' attribute 'role' must be \"scheduler\" (the \
                        CTA's scheduler thread alone) or \"all\" (every thread), found \
                        {a}",
                    op.kind.name()
                ),
            ),
        }
        self.check_op(op, parent);
    }

    fn operand_types(&self, op: &Operation) -> Option<Vec<Type>> {
        op.operands.iter().map(|&v| self.ty(v).cloned()).collect()
    }

    /// The optional `placed` attribute of a barrier or proxy fence: the group kind whose
    /// placement put it there (`async-wait-placement`).
    ///
    /// Each kind places its own op: a CTA barrier for wgmma and cp.async groups, the
    /// warpgroup's named barrier for bulk store groups, a proxy fence for cp.async groups.
    fn placed_attr(&mut self, op: &Operation) {
        let kinds: &[&str] = match op.kind {
            OpKind::Barrier => &["wgmma", "cp_async"],
            OpKind::NamedBarrier => &["bulk"],
            _ => &["cp_async"],
        };
        match op.attr("placed") {
            None => {}
            Some(Attribute::Str(k)) if kinds.contains(&k.as_str()) => {}
            Some(a) => {
                let want = kinds.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>();
                self.error(
                    op,
                    format!(
                        "'{}' attribute 'placed' must be {}, found {a}",
                        op.kind.name(),
                        want.join(" or ")
                    ),
                )
            }
        }
    }

    fn count(&mut self, op: &Operation, operands: usize, results: usize) -> bool {
        let mut ok = true;
        if op.operands.len() != operands {
            self.error(
                op,
                format!(
                    "'{}' expects {} operand(s), found {}",
                    op.kind.name(),
                    operands,
                    op.operands.len()
                ),
            );
            ok = false;
        }
        if op.results.len() != results {
            self.error(
                op,
                format!(
                    "'{}' expects {} result(s), found {}",
                    op.kind.name(),
                    results,
                    op.results.len()
                ),
            );
            ok = false;
        }
        ok
    }

    fn int_attr_in(&mut self, op: &Operation, name: &str, lo: i64, hi: i64) -> Option<i64> {
        match op.attr(name) {
            None => {
                self.error(
                    op,
                    format!("'{}' requires attribute '{name}'", op.kind.name()),
                );
                None
            }
            Some(Attribute::Int(i)) if (lo..=hi).contains(i) => Some(*i),
            Some(Attribute::Int(i)) => {
                self.error(
                    op,
                    format!(
                        "'{}' attribute '{name}' = {i} is out of range [{lo}, {hi}]",
                        op.kind.name()
                    ),
                );
                None
            }
            Some(a) => {
                self.error(
                    op,
                    format!(
                        "'{}' attribute '{name}' must be an integer, found {a}",
                        op.kind.name()
                    ),
                );
                None
            }
        }
    }

    fn str_attr_in(&mut self, op: &Operation, name: &str, allowed: &[&str]) -> Option<String> {
        match op.attr(name) {
            Some(Attribute::Str(s)) if allowed.contains(&s.as_str()) => Some(s.clone()),
            Some(a) => {
                self.error(
                    op,
                    format!(
                        "'{}' attribute '{name}' must be one of {:?}, found {a}",
                        op.kind.name(),
                        allowed
                    ),
                );
                None
            }
            None => {
                self.error(
                    op,
                    format!(
                        "'{}' requires attribute '{name}' (one of {:?})",
                        op.kind.name(),
                        allowed
                    ),
                );
                None
            }
        }
    }

    fn result_must_be(&mut self, op: &Operation, want: &Type) {
        if let Some(&r) = op.results.first() {
            if let Some(t) = self.ty(r) {
                if t != want {
                    let msg = format!("'{}' result type must be {want}, found {t}", op.kind.name());
                    self.error(op, msg);
                }
            }
        }
    }

    fn grid_rank(parent_kernel_grid: Option<usize>) -> usize {
        parent_kernel_grid.unwrap_or(3)
    }

    fn check_op(&mut self, op: &Operation, parent: Option<&Operation>) {
        let Some(ots) = self.operand_types(op) else {
            return;
        };
        let rts: Vec<Type> = op
            .results
            .iter()
            .filter_map(|&v| self.ty(v).cloned())
            .collect();
        if rts.len() != op.results.len() {
            return;
        }
        let name = op.kind.name();
        match op.kind.class() {
            OpClass::IntBinary => {
                if self.count(op, 2, 1)
                    && (!ots[0].is_int_like() || ots[0] != ots[1] || rts[0] != ots[0])
                {
                    self.error(
                        op,
                        format!(
                            "'{name}' expects two operands and a result of one \
                                integer type, found {}, {} -> {}",
                            ots[0], ots[1], rts[0]
                        ),
                    );
                }
                return;
            }
            OpClass::FloatBinary => {
                if self.count(op, 2, 1) {
                    if ots[0] != ots[1] {
                        self.error(
                            op,
                            format!(
                                "'{name}' operand types differ: {} and {} \
                                    (broadcast explicitly with 'tile.broadcast')",
                                ots[0], ots[1]
                            ),
                        );
                    } else if !is_float_like(&ots[0]) {
                        self.error(
                            op,
                            format!("'{name}' expects float tiles or scalars, found {}", ots[0]),
                        );
                    } else if rts[0] != ots[0] {
                        self.error(
                            op,
                            format!("'{name}' result type must be {}, found {}", ots[0], rts[0]),
                        );
                    }
                }
                return;
            }
            OpClass::FloatUnary => {
                if self.count(op, 1, 1) {
                    if !is_float_like(&ots[0]) {
                        self.error(
                            op,
                            format!("'{name}' expects a float tile or scalar, found {}", ots[0]),
                        );
                    } else if rts[0] != ots[0] {
                        self.error(
                            op,
                            format!("'{name}' result type must be {}, found {}", ots[0], rts[0]),
                        );
                    }
                }
                return;
            }
            OpClass::Gpu => {
                self.check_gpu_op(op, &ots, &rts);
                return;
            }
            _ => {}
        }
        match op.kind {
            OpKind::Kernel => self.check_kernel(op),
            OpKind::Return => {
                self.count(op, 0, 0);
            }
            OpKind::Yield => {
                if !rts.is_empty() {
                    self.error(op, "'tile.yield' has no results");
                }
                if let Some(p) = parent {
                    let producer_region = p.kind == OpKind::WarpSpecialize
                        && p.regions
                            .first()
                            .and_then(|b| b.ops.last())
                            .is_some_and(|t| std::ptr::eq(t, op));
                    let want: Vec<Type> = match p.kind {
                        _ if producer_region => vec![],
                        OpKind::For | OpKind::If | OpKind::WarpSpecialize => p
                            .results
                            .iter()
                            .filter_map(|&v| self.ty(v).cloned())
                            .collect(),
                        OpKind::While => std::iter::once(Type::I1)
                            .chain(p.results.iter().filter_map(|&v| self.ty(v).cloned()))
                            .collect(),
                        _ => return,
                    };
                    if want != ots {
                        self.error(
                            op,
                            format!(
                                "'tile.yield' types ({}) do not match the results of '{}' ({})",
                                list(&ots),
                                p.kind.name(),
                                list(&want)
                            ),
                        );
                    }
                }
            }
            OpKind::ProgramId | OpKind::NumPrograms => {
                if self.count(op, 0, 1) {
                    self.result_must_be(op, &Type::INDEX);
                }
                let _ = Self::grid_rank(None);
                self.int_attr_in(op, "dim", 0, 2);
            }
            OpKind::Constant if self.count(op, 0, 1) => match (&rts[0], op.attr("value")) {
                (Type::Scalar(s), Some(Attribute::Int(i))) if s.is_int() => {
                    let (lo, hi) = match s {
                        ScalarType::I1 => (0, 1),
                        ScalarType::I32 => (i32::MIN as i64, i32::MAX as i64),
                        _ => (i64::MIN, i64::MAX),
                    };
                    if !(lo..=hi).contains(i) {
                        self.error(
                            op,
                            format!(
                                "'tile.constant' value {i} does not fit in \
                                    {s}"
                            ),
                        );
                    }
                }
                (Type::Scalar(s), Some(a @ (Attribute::Int(_) | Attribute::Float(_))))
                    if s.is_float() =>
                {
                    let (x, max) = (a.as_f64().unwrap_or(0.0), s.max_finite().unwrap_or(0.0));
                    if x.is_finite() && x.abs() > max {
                        self.error(
                            op,
                            format!(
                                "'tile.constant' value {a} does not fit in {s} (its largest \
                                 finite value is {max}); write inf for an infinity"
                            ),
                        );
                    }
                }
                (Type::Scalar(s), Some(a)) => self.error(
                    op,
                    format!(
                        "'tile.constant' \
                            value {a} is not a valid {s}"
                    ),
                ),
                (Type::Scalar(_), None) => self.error(
                    op,
                    "'tile.constant' requires \
                        attribute 'value'",
                ),
                (t, _) => self.error(
                    op,
                    format!(
                        "'tile.constant' result must be a scalar, \
                            found {t} (use 'tile.splat' for tiles)"
                    ),
                ),
            },
            OpKind::Dim if self.count(op, 1, 1) => {
                self.result_must_be(op, &Type::INDEX);
                match &ots[0] {
                    Type::Tensor { rank, .. } => {
                        self.int_attr_in(op, "dim", 0, *rank as i64 - 1);
                    }
                    t => self.error(op, format!("'tile.dim' expects a tensor, found {t}")),
                }
            }
            OpKind::CmpI => {
                if self.count(op, 2, 1) {
                    if !ots[0].is_int_like() || ots[0] != ots[1] {
                        self.error(
                            op,
                            format!(
                                "'tile.cmpi' expects two operands of one integer \
                                    type, found {} and {}",
                                ots[0], ots[1]
                            ),
                        );
                    }
                    // Scalars give i1; tiles an i1 tile of their shape (and layout).
                    self.result_must_be(op, &ots[0].with_elem(ScalarType::I1));
                }
                self.str_attr_in(op, CmpPredicate::ATTR, CmpPredicate::NAMES);
            }
            OpKind::Select if self.count(op, 3, 1) => {
                // An i1 scalar picks a whole operand; an i1 tile of the values' shape picks
                // per element.
                let cond_ok = ots[0] == Type::I1
                    || (matches!(ots[0], Type::Tile { .. })
                        && ots[0].elem() == Some(ScalarType::I1)
                        && ots[0].tile_shape() == ots[1].tile_shape());
                if !cond_ok {
                    self.error(
                        op,
                        format!(
                            "'tile.select' condition must be i1 or an i1 tile of the values' \
                             shape, found {}",
                            ots[0]
                        ),
                    );
                }
                if ots[1] != ots[2] || rts[0] != ots[1] {
                    self.error(
                        op,
                        format!(
                            "'tile.select' expects both values and the result \
                                of one type, found {}, {} -> {}",
                            ots[1], ots[2], rts[0]
                        ),
                    );
                }
            }
            OpKind::Extract => {
                let ok = match (ots.first(), rts.as_slice()) {
                    (Some(Type::Tensor { rank, elem }), [Type::Scalar(r)]) => {
                        ots.len() == 1 + *rank as usize
                            && ots[1..].iter().all(|t| *t == Type::INDEX)
                            && r == elem
                    }
                    _ => false,
                };
                if !ok {
                    self.error(
                        op,
                        format!(
                            "'tile.extract' takes a tensor and one index per dimension, and \
                             gives a scalar of the tensor's element type; found ({}) -> ({})",
                            list(&ots),
                            list(&rts)
                        ),
                    );
                }
            }
            OpKind::Gather if self.count(op, 3, 1) => {
                let ok = match (&ots[0], &ots[1], &ots[2], &rts[0]) {
                    (
                        Type::Tensor { rank: 2, elem },
                        Type::Tile {
                            shape: rs,
                            elem: ie,
                            ..
                        },
                        Type::Scalar(ScalarType::Index),
                        Type::Tile {
                            shape, elem: te, ..
                        },
                    ) => {
                        rs.len() == 1
                            && matches!(ie, ScalarType::I32 | ScalarType::I64 | ScalarType::Index)
                            && shape.len() == 2
                            && shape[0] == rs[0]
                            && te == elem
                    }
                    _ => false,
                };
                if !ok {
                    self.error(
                        op,
                        format!(
                            "'tile.gather' takes a 2-D tensor, a 1-D integer tile of R row \
                             indices and an index column, and gives an R×C tile of the \
                             tensor's element type; found ({}) -> {}",
                            list(&ots),
                            rts[0]
                        ),
                    );
                }
                if let Some(p) = op.attr("padding") {
                    if let Err(e) = crate::ops::load_padding(Some(p)) {
                        self.error(op, e);
                    }
                }
            }
            OpKind::Load => {
                self.check_load_store(op, &ots, &rts, true);
                if let Some(p) = op.attr("padding") {
                    match crate::ops::load_padding(Some(p)) {
                        Err(e) => self.error(op, e),
                        Ok(_) if !rts.first().is_some_and(is_float_like) => self.error(
                            op,
                            "'padding' is for tiles of a float type (integer tiles read zero)",
                        ),
                        Ok(_) => {}
                    }
                }
            }
            OpKind::Store => self.check_load_store(op, &ots, &rts, false),
            OpKind::AtomicAdd => {
                self.check_load_store(op, &ots, &rts, false);
                if let Some(Type::Tensor { elem, .. }) = ots.first() {
                    if *elem != ScalarType::F32 {
                        self.error(
                            op,
                            format!(
                                "'tile.atomic_add' adds into an f32 tensor \
                                    (red.global.add.f32), found a tensor of {elem}"
                            ),
                        );
                    }
                }
            }
            OpKind::WaitFlag | OpKind::ReleaseFlag
                if self.count(op, 3, 0)
                    && (!is_flags(&ots[0]) || ots[1] != Type::INDEX || ots[2] != Type::INDEX) =>
            {
                self.error(
                    op,
                    format!(
                        "'{}' takes a 1-D i32 flag tensor, an index position and an index value; \
                         found ({})",
                        op.kind.name(),
                        list(&ots)
                    ),
                );
            }
            OpKind::ArriveFlag
                if self.count(op, 2, 1)
                    && (!is_flags(&ots[0]) || ots[1] != Type::INDEX || rts[0] != Type::INDEX) =>
            {
                self.error(
                    op,
                    format!(
                        "'tile.arrive_flag' takes a 1-D i32 flag tensor and an index position and \
                         gives an index; found ({}) -> {}",
                        list(&ots),
                        rts[0]
                    ),
                );
            }
            OpKind::Dot => self.check_dot(op, &ots, &rts),
            OpKind::Convert if self.count(op, 1, 1) => {
                let same_shape = match (&ots[0], &rts[0]) {
                    (Type::Scalar(_), Type::Scalar(_)) => true,
                    (Type::Tile { shape: a, .. }, Type::Tile { shape: b, .. }) => a == b,
                    _ => false,
                };
                if !same_shape {
                    self.error(
                        op,
                        format!(
                            "'tile.convert' changes only the element type: {} \
                                -> {} changes the shape or kind",
                            ots[0], rts[0]
                        ),
                    );
                }
            }
            OpKind::Transpose if self.count(op, 1, 1) => match (&ots[0], &rts[0]) {
                (
                    Type::Tile {
                        shape: a, elem: e1, ..
                    },
                    Type::Tile {
                        shape: b, elem: e2, ..
                    },
                ) if a.len() == 2 => {
                    if e1 != e2 || b.len() != 2 || a[0] != b[1] || a[1] != b[0] {
                        self.error(
                            op,
                            format!(
                                "'tile.transpose' of {} must give tile<{}x{}x{}>, found {}",
                                ots[0], a[1], a[0], e1, rts[0]
                            ),
                        );
                    }
                }
                _ => self.error(
                    op,
                    format!("'tile.transpose' expects a 2-D tile, found {}", ots[0]),
                ),
            },
            OpKind::Reshape if self.count(op, 1, 1) => match (&ots[0], &rts[0]) {
                (
                    Type::Tile {
                        shape: a, elem: e1, ..
                    },
                    Type::Tile {
                        shape: b, elem: e2, ..
                    },
                ) if e1 == e2 && elements(a).is_some() && elements(a) == elements(b) => {}
                _ => self.error(
                    op,
                    format!(
                        "'tile.reshape' must keep the element type and \
                            the number of elements: {} -> {}",
                        ots[0], rts[0]
                    ),
                ),
            },
            OpKind::Broadcast if self.count(op, 1, 1) => match (&ots[0], &rts[0]) {
                (Type::Scalar(s), Type::Tile { elem, .. }) if s == elem => {}
                (
                    Type::Tile {
                        shape: a, elem: e1, ..
                    },
                    Type::Tile {
                        shape: b, elem: e2, ..
                    },
                ) if e1 == e2
                    && a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| x == y || *x == 1) => {}
                _ => self.error(
                    op,
                    format!(
                        "'tile.broadcast' cannot broadcast {} to {}: \
                            each dimension must be 1 or equal, element types \
                            equal",
                        ots[0], rts[0]
                    ),
                ),
            },
            OpKind::Reduce if self.count(op, 1, 1) => {
                self.str_attr_in(op, ReduceKind::ATTR, ReduceKind::NAMES);
                match &ots[0] {
                    Type::Tile { shape, elem, .. } => {
                        if let Some(d) = self.int_attr_in(op, "dim", 0, shape.len() as i64 - 1) {
                            let mut s = shape.clone();
                            s[d as usize] = 1;
                            // A GPU-level result may have any layout (the lowering
                            // converts); shape and element type are the op's.
                            let want = Type::Tile {
                                shape: s,
                                elem: *elem,
                                layout: rts.first().and_then(Type::layout).cloned().map(Box::new),
                            };
                            self.result_must_be(op, &want);
                        }
                    }
                    t => self.error(op, format!("'tile.reduce' expects a tile, found {t}")),
                }
            }
            OpKind::Iota if self.count(op, 0, 1) => match &rts[0] {
                Type::Tile {
                    shape,
                    elem: ScalarType::I32 | ScalarType::I64 | ScalarType::Index,
                    ..
                } => {
                    self.int_attr_in(op, "dim", 0, shape.len() as i64 - 1);
                }
                t => self.error(
                    op,
                    format!("'tile.iota' gives a tile of i32, i64 or index, found {t}"),
                ),
            },
            OpKind::Splat if self.count(op, 1, 1) => match (&ots[0], &rts[0]) {
                (Type::Scalar(s), Type::Tile { elem, .. }) if s == elem => {}
                _ => self.error(
                    op,
                    format!(
                        "'tile.splat' expects a scalar and a tile of \
                            that element type, found {} -> {}",
                        ots[0], rts[0]
                    ),
                ),
            },
            OpKind::Zeros if self.count(op, 0, 1) && !matches!(rts[0], Type::Tile { .. }) => {
                self.error(
                    op,
                    format!("'tile.zeros' result must be a tile, found {}", rts[0]),
                );
            }
            OpKind::For => self.check_for(op, &ots, &rts),
            OpKind::While => {
                if ots != rts {
                    self.error(
                        op,
                        format!(
                            "'tile.while' results ({}) must have the types of its \
                                initial values ({})",
                            list(&rts),
                            list(&ots)
                        ),
                    );
                }
                if let Some(b) = op.regions.first() {
                    let args: Vec<Type> =
                        b.args.iter().filter_map(|&v| self.ty(v).cloned()).collect();
                    if args != ots {
                        self.error(
                            op,
                            format!(
                                "'tile.while' body arguments must be the carried \
                                    values ({}), found ({})",
                                list(&ots),
                                list(&args)
                            ),
                        );
                    }
                }
            }
            OpKind::WarpSpecialize => {
                if !ots.is_empty() {
                    self.error(op, "'tile.warp_specialize' takes no operands");
                }
                self.int_attr_in(op, "consumers", 1, 3);
                for r in &op.regions {
                    for o in &r.ops {
                        o.walk(&mut |x| {
                            if x.kind == OpKind::CpAsync {
                                self.error(
                                    x,
                                    "'tile.cp_async' splits its box among all the CTA's threads \
                                     and needs a CTA barrier after its wait; inside \
                                     'tile.warp_specialize' copy with 'tile.tma_load'",
                                );
                            }
                        });
                    }
                }
            }
            OpKind::ExtractSlice if self.count(op, 1, 1) => match (&ots[0], &rts[0]) {
                (
                    Type::Tile {
                        shape: a, elem: e1, ..
                    },
                    Type::Tile {
                        shape: b, elem: e2, ..
                    },
                ) if e1 == e2 && a.len() == b.len() => {
                    let offs = self.offsets_attr(op, a.len(), true);
                    if let Some(offs) = offs {
                        if let Some(d) = (0..a.len()).find(|&d| offs[d] + b[d] > a[d]) {
                            self.error(
                                op,
                                format!(
                                    "'tile.extract_slice' elements {} to {} of dimension {d} \
                                     lie outside the source's {}",
                                    offs[d],
                                    offs[d] + b[d] - 1,
                                    a[d]
                                ),
                            );
                        }
                    }
                }
                _ => self.error(
                    op,
                    format!(
                        "'tile.extract_slice' takes a tile to a tile of the same rank and \
                         element type, found {} -> {}",
                        ots[0], rts[0]
                    ),
                ),
            },
            OpKind::If if (ots.len() != 1 || ots[0] != Type::I1) => {
                self.error(
                    op,
                    format!("'tile.if' expects one i1 condition, found ({})", list(&ots)),
                );
            }
            _ => {}
        }
    }

    /// The `offsets` attribute of `op`: `rank` non-negative integers below 2^20; absent
    /// means zeros unless `required`. `None` after an error.
    fn offsets_attr(&mut self, op: &Operation, rank: usize, required: bool) -> Option<Vec<u64>> {
        let name = op.kind.name();
        let Some(a) = op.attr("offsets") else {
            if required {
                self.error(op, format!("'{name}' requires attribute 'offsets'"));
                return None;
            }
            return Some(vec![0; rank]);
        };
        let vals: Option<Vec<u64>> = a.as_array().and_then(|xs| {
            xs.iter()
                .map(|x| {
                    x.as_int()
                        .filter(|&i| (0..MAX_DIM as i64).contains(&i))
                        .map(|i| i as u64)
                })
                .collect()
        });
        match vals {
            Some(v) if v.len() == rank => Some(v),
            _ => {
                self.error(
                    op,
                    format!(
                        "'{name}' attribute 'offsets' must be {rank} non-negative integers \
                         below {MAX_DIM}, found {a}"
                    ),
                );
                None
            }
        }
    }

    /// The view attributes of `tile.smem_load` / `tile.smem_store` (`offsets`,
    /// `transpose`): a view of the tile's shape, transposed or not, must lie inside a stage.
    fn check_view(&mut self, op: &Operation, tile: &[u64], stage: &[u64]) {
        let name = op.kind.name();
        let transpose = match op.attr("transpose") {
            None => false,
            Some(Attribute::Bool(b)) => *b,
            Some(a) => {
                self.error(
                    op,
                    format!("'{name}' attribute 'transpose' must be true or false, found {a}"),
                );
                return;
            }
        };
        if tile.len() != 2 || stage.len() != 2 {
            self.error(op, format!("'{name}' views take 2-D tiles and stages"));
            return;
        }
        let Some(offs) = self.offsets_attr(op, 2, false) else {
            return;
        };
        let window = if transpose {
            [tile[1], tile[0]]
        } else {
            [tile[0], tile[1]]
        };
        if let Some(d) = (0..2).find(|&d| offs[d] + window[d] > stage[d]) {
            self.error(
                op,
                format!(
                    "'{name}': the view's rows/columns {} to {} along stage dimension {d} lie \
                     outside the stage's {}",
                    offs[d],
                    offs[d] + window[d] - 1,
                    stage[d]
                ),
            );
        }
    }

    fn check_kernel(&mut self, op: &Operation) {
        if !op.operands.is_empty() || !op.results.is_empty() {
            self.error(op, "'tile.kernel' takes no operands and has no results");
        }
        self.check_wgmma_accumulators(op);
        if let Some(w) = op.attr("num_warps") {
            let n = w.as_int().unwrap_or(0);
            if !(1..=32).contains(&n) || !(n as u64).is_power_of_two() {
                self.error(
                    op,
                    format!("'num_warps' must be a power of two from 1 to 32, found {w}"),
                );
            }
        }
        for flag in ["ftz", "fp_fusion"] {
            if let Some(f) = op.attr(flag).filter(|a| a.as_bool().is_none()) {
                self.error(op, format!("'{flag}' must be true or false, found {f}"));
            }
        }
        if let Some(c) = op.attr("ctas_per_sm") {
            if !c.as_int().is_some_and(|n| (1..=32).contains(&n)) {
                self.error(
                    op,
                    format!("'ctas_per_sm' must be an integer from 1 to 32, found {c}"),
                );
            }
        }
        if let Some(s) = op
            .symbol
            .as_deref()
            .filter(|s| !crate::lexer::is_identifier(s))
        {
            self.error(
                op,
                format!(
                    "kernel name '{s}' is not a name (a letter or '_', then letters, digits, \
                     '_', '.', '$')"
                ),
            );
        }
        let Some(body) = op.regions.first() else {
            return;
        };
        let mut names = HashMap::new();
        for &a in &body.args {
            match self.ty(a) {
                Some(Type::Scalar(_) | Type::Tensor { .. }) => {}
                Some(t) => {
                    let msg = format!(
                        "kernel argument {} has type {t}; arguments are scalars or tensors",
                        self.show(a)
                    );
                    self.error(op, msg);
                }
                None => {}
            }
            match self.m.name(a) {
                Some(n) if !crate::lexer::is_identifier(n) => self.error(
                    op,
                    format!(
                        "kernel argument name '{n}' is not a name (a letter or '_', then \
                         letters, digits, '_', '.', '$')"
                    ),
                ),
                Some(n) => {
                    if names.insert(n.to_string(), self.ty(a).cloned()).is_some() {
                        self.error(op, format!("kernel argument '%{n}' is declared twice"));
                    }
                }
                None => self.error(
                    op,
                    "kernel arguments must be named (the launch manifest uses the names)",
                ),
            }
        }
        match op.attr("grid") {
            Some(Attribute::Array(dims)) if (1..=3).contains(&dims.len()) => {
                for (i, d) in dims.iter().enumerate() {
                    // A constant expression (as the builder makes) is a constant.
                    let constant;
                    let d = match d {
                        Attribute::Expr(Expr::Int(n)) => {
                            constant = Attribute::Int(*n);
                            &constant
                        }
                        // An expression of constants only (kernel constants bound in it)
                        // is checked as its value.
                        Attribute::Expr(e) if e.args().is_empty() => match e.eval(&|_| None) {
                            Some(n) => {
                                constant = Attribute::Int(n);
                                &constant
                            }
                            None => {
                                self.error(
                                    op,
                                    format!(
                                        "grid dimension {i} is {e}, which overflows 64 bits or \
                                         divides by zero"
                                    ),
                                );
                                continue;
                            }
                        },
                        _ => d,
                    };
                    let e = match d {
                        Attribute::Int(n) if *n >= 1 && *n as u64 > crate::target::MAX_GRID[i] => {
                            self.error(
                                op,
                                format!(
                                    "grid dimension {i} is {n}; a launch has at most {} CTAs \
                                     along {} (CUDA's grid limits: 2^31 - 1 along x, 65535 \
                                     along y and z)",
                                    crate::target::MAX_GRID[i],
                                    ["x", "y", "z"][i]
                                ),
                            );
                            continue;
                        }
                        Attribute::Int(i) if *i >= 1 => continue,
                        Attribute::Expr(e) => e,
                        other => {
                            self.error(
                                op,
                                format!(
                                    "grid dimension {i} is {other}; it must be a \
                                        positive integer or an expression like ceildiv(%N, 128)"
                                ),
                            );
                            continue;
                        }
                    };
                    if e.depth() > crate::attr::MAX_GRID_EXPR_DEPTH {
                        self.error(
                            op,
                            format!(
                                "grid dimension {i} nests {} functions deep; at most {} (the \
                                 launch manifest's JSON must stay readable)",
                                e.depth() - 1,
                                crate::attr::MAX_GRID_EXPR_DEPTH - 1
                            ),
                        );
                        continue;
                    }
                    for n in e.args() {
                        match names.get(n) {
                            Some(Some(t)) if t.is_int_scalar() => {}
                            Some(Some(t)) => self.error(
                                op,
                                format!(
                                    "grid expression {e} reads \
                                        '%{n}' of type {t}; it must be an integer"
                                ),
                            ),
                            _ => self.error(
                                op,
                                format!(
                                    "grid expression {e} reads '%{n}', which \
                                        is not an argument of the kernel"
                                ),
                            ),
                        }
                    }
                    check_expr_divisors(self, op, e);
                }
            }
            Some(a) => self.error(
                op,
                format!("kernel attribute 'grid' must be a list of 1 to 3 dimensions, found {a}"),
            ),
            None => self.error(
                op,
                "'tile.kernel' requires attribute 'grid', e.g. {grid = [ceildiv(%N, 128)]}",
            ),
        }
        if let Some(c) = op.attr("cluster") {
            let dims: Option<Vec<i64>> = c
                .as_array()
                .map(|a| a.iter().filter_map(Attribute::as_int).collect());
            match dims {
                Some(d)
                    if d.len() == 3
                        && d.iter().all(|&x| (1..=16).contains(&x))
                        && d.iter().product::<i64>() <= 16 =>
                {
                    if d[2] != 1 && op.str_attr("schedule") == Some("static") {
                        self.error(
                            op,
                            format!(
                                "kernel attribute 'cluster' = {c}: a static persistent kernel \
                                    launches its clusters as (clusters · x, y, 1) CTAs, so its \
                                    cluster is 1 along z"
                            ),
                        );
                    }
                }
                _ => self.error(
                    op,
                    format!(
                        "kernel attribute 'cluster' must be three positive CTA \
                            counts, at most 16 in all (e.g. [2, 1, 1]), found {c}"
                    ),
                ),
            }
        }
        if let Some(c) = op.attr("constants") {
            match c.as_dict() {
                Some(d)
                    if d.iter().all(|(k, v)| {
                        crate::parser::is_constant_name(k) && v.as_int().is_some()
                    }) => {}
                _ => self.error(
                    op,
                    format!(
                        "kernel attribute 'constants' must be a dictionary from constant names \
                         to integers (e.g. {{BM = 128, BN = 256}}), found {c}"
                    ),
                ),
            }
        }
        let grid_rank = op
            .attr("grid")
            .and_then(Attribute::as_array)
            .map_or(3, <[_]>::len) as i64;
        op.walk(&mut |o| {
            if matches!(o.kind, OpKind::ProgramId | OpKind::NumPrograms) {
                if let Some(d) = o.int_attr("dim") {
                    if d >= grid_rank && d <= 2 {
                        self.diags.push(Diagnostic::error(
                            o.loc.clone(),
                            format!(
                                "'{}' dim = {d}, but the kernel grid has {grid_rank} dimension(s)",
                                o.kind.name()
                            ),
                        ));
                    }
                }
            }
        });
    }

    /// A wgmma accumulates in place: its accumulator operand's registers become its
    /// result's, and a `tile.wait_group` returns the registers it takes. So one value (or
    /// a wait's result tied to it) may start one chain only: as the accumulator of a second
    /// wgmma that may run after the first (not in the other branch of a `tile.if`), or as
    /// the init of a second carried value of a loop (which would copy it while the first
    /// chain's group may still write it), it is an error.
    fn check_wgmma_accumulators(&mut self, kernel: &Operation) {
        /// Where an op sits, from the kernel down: (region-holding op's address, region
        /// index, whether that op is a `tile.if`).
        type Path = Vec<(usize, usize, bool)>;
        fn walk<'o>(o: &'o Operation, path: &mut Path, out: &mut Vec<(&'o Operation, Path)>) {
            out.push((o, path.clone()));
            for (r, b) in o.regions.iter().enumerate() {
                path.push((o as *const Operation as usize, r, o.kind == OpKind::If));
                for x in &b.ops {
                    walk(x, path, out);
                }
                path.pop();
            }
        }
        let is_wgmma = |o: &Operation| o.kind == OpKind::Mma && o.str_attr("kind") == Some("wgmma");
        let mut any = false;
        kernel.walk(&mut |o| any |= is_wgmma(o));
        if !any {
            return;
        }
        let mut ops = vec![];
        walk(kernel, &mut vec![], &mut ops);
        let wgmma_results: HashSet<Value> = ops
            .iter()
            .filter(|(o, _)| is_wgmma(o))
            .flat_map(|(o, _)| o.results.clone())
            .collect();
        // Two ops both run unless they first part in different regions of one `tile.if`.
        let exclusive = |a: &Path, b: &Path| {
            a.iter()
                .zip(b)
                .find(|(x, y)| x != y)
                .is_some_and(|(x, y)| x.0 == y.0 && x.2)
        };
        // Who takes over a value's registers: a non-`zero_acc` wgmma (its accumulator),
        // or an op that hands them on without computing: a wait (to its result), a
        // `tile.if`'s yield (to the if's result), a loop's init or body yield (to the
        // carried value and the loop's result). A `tile.select` computes (it reads both
        // registers, after a wait), so it is no hand-on.
        enum Take {
            Wgmma(Value, Location),
            /// The values that take the registers; whether they are tied (a wait's).
            HandOn(Vec<Value>, bool),
        }
        let mut takers: HashMap<Value, Vec<(Take, Path)>> = HashMap::new();
        for (o, path) in &ops {
            if is_wgmma(o) && o.attr("zero_acc").and_then(|a| a.as_bool()) != Some(true) {
                if let Some(parts) = crate::ops::mma_operands(o) {
                    takers
                        .entry(parts.acc)
                        .or_default()
                        .push((Take::Wgmma(parts.acc, o.loc.clone()), path.clone()));
                }
            }
            // A reshape or transpose relabels the registers it takes, as a wait returns them.
            let tied = match o.kind {
                OpKind::WaitGroup => o.results.len(),
                OpKind::Reshape | OpKind::Transpose => 1,
                _ => 0,
            };
            if tied > 0 {
                for (&r, &a) in o.results.iter().zip(&o.operands).take(tied) {
                    takers
                        .entry(a)
                        .or_default()
                        .push((Take::HandOn(vec![r], true), path.clone()));
                }
            }
            let inner = |r: usize| {
                let mut p = path.clone();
                p.push((*o as *const Operation as usize, r, o.kind == OpKind::If));
                p
            };
            match o.kind {
                OpKind::If => {
                    for r in 0..o.regions.len() {
                        for (&res, &v) in o.results.iter().zip(crate::ops::region_yields(o, r)) {
                            takers
                                .entry(v)
                                .or_default()
                                .push((Take::HandOn(vec![res], false), inner(r)));
                        }
                    }
                }
                OpKind::For | OpKind::While => {
                    for c in crate::ops::carried(o) {
                        let to: Vec<Value> = [c.arg, c.result].into_iter().flatten().collect();
                        takers
                            .entry(c.init)
                            .or_default()
                            .push((Take::HandOn(to.clone(), false), path.clone()));
                        if let Some(y) = c.yielded {
                            takers
                                .entry(y)
                                .or_default()
                                .push((Take::HandOn(to, false), inner(0)));
                        }
                    }
                }
                _ => {}
            }
        }
        // The first wgmma (its accumulator and place) that registers handed on by `take`
        // reach, if any, whether only waits (reshapes, transposes) handed them on, and
        // whether the wgmma takes them itself.
        /// The wgmma's accumulator and place, whether only tied ops handed on, whether the
        /// wgmma takes the value itself.
        type Reach = (Value, Location, bool, bool);
        let reaches = |take: &Take| -> Option<Reach> {
            let mut todo: Vec<(Value, bool)> = match take {
                Take::Wgmma(v, at) => return Some((*v, at.clone(), true, true)),
                Take::HandOn(to, tied) => to.iter().map(|&v| (v, *tied)).collect(),
            };
            let mut seen = HashSet::new();
            while let Some((v, tied)) = todo.pop() {
                if !seen.insert((v, tied)) {
                    continue;
                }
                for (t, _) in takers.get(&v).into_iter().flatten() {
                    match t {
                        Take::Wgmma(acc, at) => return Some((*acc, at.clone(), tied, false)),
                        Take::HandOn(to, t) => {
                            todo.extend(to.iter().rev().map(|&x| (x, tied && *t)))
                        }
                    }
                }
            }
            None
        };
        // Values whose registers may be those of a wgmma's result (its group possibly
        // pending): a copy of them, where an if or a loop hands them on to two chains,
        // would race with the group. Other values (zeros) may be copied before any wgmma
        // runs, so two carried values may start from one.
        let mut held: HashSet<Value> = wgmma_results.clone();
        loop {
            let before = held.len();
            for (v, ts) in &takers {
                if held.contains(v) {
                    for (t, _) in ts {
                        if let Take::HandOn(to, _) = t {
                            held.extend(to.iter().copied());
                        }
                    }
                }
            }
            if held.len() == before {
                break;
            }
        }
        let mut errors: Vec<(Location, String)> = vec![];
        let mut values: Vec<&Value> = takers.keys().collect();
        values.sort();
        for &v in values {
            let mut chains: Vec<(Reach, &Path)> = takers[&v]
                .iter()
                .filter_map(|(t, p)| Some((reaches(t)?, p)))
                .collect();
            chains.sort_by_key(|((_, at, _, _), _)| (at.line, at.col));
            // Two takers that may both run clash, unless both copy a value no wgmma wrote
            // (two carried values from one zeros) before any wgmma takes it.
            let clash = chains.iter().enumerate().find_map(|(i, (second, p))| {
                let (first, _) = chains[..i].iter().find(|((_, _, tied, direct), q)| {
                    !exclusive(q, p)
                        && (held.contains(&v) || (*tied && second.2) || *direct || second.3)
                })?;
                Some((first, second))
            });
            let Some(((_, at, _, _), (acc, loc, _, _))) = clash else {
                continue;
            };
            let what = if *acc == v {
                format!("the accumulator {}", self.show(v))
            } else {
                format!(
                    "the accumulator {} holds the registers of {} (a 'tile.wait_group', \
                     'tile.reshape' or 'tile.transpose' returns the registers it takes; a \
                     'tile.if' or a loop hands on those it yields or carries), and those",
                    self.show(*acc),
                    self.show(v)
                )
            };
            errors.push((
                loc.clone(),
                format!(
                    "{what} already {} the wgmma at {at}; a wgmma accumulates in place, so each \
                     chain needs a value of its own",
                    if *acc == v { "feeds" } else { "feed" }
                ),
            ));
        }
        // A wgmma in a loop that takes a value defined outside it would start a chain from
        // those registers on every trip.
        let loops: HashSet<usize> = ops
            .iter()
            .filter(|(o, _)| matches!(o.kind, OpKind::For | OpKind::While))
            .map(|(o, _)| *o as *const Operation as usize)
            .collect();
        let mut defined: HashMap<Value, usize> = HashMap::new();
        for (o, path) in &ops {
            for &r in &o.results {
                defined.insert(r, path.len());
            }
            for b in &o.regions {
                for &a in &b.args {
                    defined.insert(a, path.len() + 1);
                }
            }
        }
        for (o, path) in &ops {
            if !is_wgmma(o) || o.attr("zero_acc").and_then(|a| a.as_bool()) == Some(true) {
                continue;
            }
            let Some(acc) = crate::ops::mma_operands(o).map(|p| p.acc) else {
                continue;
            };
            let depth = defined.get(&acc).copied().unwrap_or(0);
            if let Some(lp) = path
                .iter()
                .skip(depth)
                .find(|(addr, _, _)| loops.contains(addr))
            {
                let at = ops
                    .iter()
                    .find(|(x, _)| *x as *const Operation as usize == lp.0)
                    .map(|(x, _)| x.loc.clone());
                errors.push((
                    o.loc.clone(),
                    format!(
                        "the accumulator {} is defined outside the loop{} and so starts a chain \
                         on every trip; a wgmma accumulates in place, so each chain needs a \
                         value of its own (carry it through the loop, or start the chain with \
                         zero_acc)",
                        self.show(acc),
                        at.map(|l| format!(" at {l}")).unwrap_or_default()
                    ),
                ));
            }
        }
        for (o, _) in &ops {
            if matches!(o.kind, OpKind::For | OpKind::While) {
                let skip = if o.kind == OpKind::For { 3 } else { 0 };
                let mut seen = HashSet::new();
                for &v in o.operands.iter().skip(skip) {
                    if wgmma_results.contains(&v) && !seen.insert(v) {
                        errors.push((
                            o.loc.clone(),
                            format!(
                                "the wgmma result {} initialises two carried values; the \
                                 second would be a copy made while its group may still be \
                                 pending: give each its own initial value",
                                self.show(v)
                            ),
                        ));
                    }
                }
            }
        }
        for (loc, msg) in errors {
            self.diags.push(Diagnostic::error(loc, msg));
        }
    }

    fn check_load_store(&mut self, op: &Operation, ots: &[Type], rts: &[Type], is_load: bool) {
        let name = op.kind.name();
        let Some(Type::Tensor { rank, elem }) = ots.first() else {
            self.error(
                op,
                format!(
                    "'{name}' expects a tensor as its first operand, found {}",
                    ots.first().map_or("nothing".into(), |t| t.to_string())
                ),
            );
            return;
        };
        let r = *rank as usize;
        let want_operands = 1 + r + usize::from(!is_load);
        // A store's optional mask stands before its value (MLIR's `vector.maskedstore`).
        let masked = !is_load && ots.len() == want_operands + 1;
        if masked {
            let value_shape = ots.last().and_then(Type::tile_shape);
            let ok = matches!(&ots[r + 1], Type::Tile { shape, elem: ScalarType::I1, .. }
                if Some(shape.as_slice()) == value_shape);
            if !ok {
                self.error(
                    op,
                    format!(
                        "'{name}' mask must be an i1 tile of the value's shape, found {} for {} \
                         (with {} operands, operand {} is the mask: tensor, {r} offset(s), \
                         mask, value)",
                        ots[r + 1],
                        ots[r + 2],
                        ots.len(),
                        r + 2
                    ),
                );
            }
        } else if ots.len() != want_operands {
            self.error(
                op,
                format!(
                    "'{name}' of a rank-{r} tensor expects {want_operands} operands \
                        (tensor, {r} offset(s){}), found {}",
                    if is_load {
                        String::new()
                    } else {
                        format!(
                            ", value; {} with a mask before the value",
                            want_operands + 1
                        )
                    },
                    ots.len()
                ),
            );
            return;
        }
        for t in &ots[1..=r] {
            if *t != Type::INDEX {
                self.error(op, format!("'{name}' offsets must be index, found {t}"));
            }
        }
        let tile = if is_load {
            if rts.len() != 1 {
                self.error(op, "'tile.load' has one result");
                return;
            }
            &rts[0]
        } else {
            if !rts.is_empty() {
                self.error(op, format!("'{name}' has no results"));
            }
            &ots[ots.len() - 1]
        };
        match tile {
            Type::Tile { shape, elem: e, .. } if shape.len() == r && e == elem => {}
            t => self.error(
                op,
                format!(
                    "'{name}' tile must have the tensor's rank ({r}) and \
                        element type ({elem}), found {t}"
                ),
            ),
        }
    }

    fn check_dot(&mut self, op: &Operation, ots: &[Type], rts: &[Type]) {
        if !self.count(op, 3, 1) {
            return;
        }
        let (Some(a), Some(b), Some(c)) = (
            ots[0].tile_shape(),
            ots[1].tile_shape(),
            ots[2].tile_shape(),
        ) else {
            self.error(
                op,
                format!(
                    "'tile.dot' expects three tiles, found {}, {}, {}",
                    ots[0], ots[1], ots[2]
                ),
            );
            return;
        };
        if a.len() != 2 || b.len() != 2 || c.len() != 2 {
            self.error(
                op,
                format!(
                    "'tile.dot' expects 2-D tiles, found {}, {}, {}",
                    ots[0], ots[1], ots[2]
                ),
            );
            return;
        }
        if a[1] != b[0] {
            self.error(
                op,
                format!(
                    "'tile.dot' contraction sizes differ: a is {}x{} (K = {}), b is {}x{} (K = {})",
                    a[0], a[1], a[1], b[0], b[1], b[0]
                ),
            );
        }
        if c[0] != a[0] || c[1] != b[1] {
            self.error(
                op,
                format!(
                    "'tile.dot' accumulator must be {}x{} (M x N), found {}x{}",
                    a[0], b[1], c[0], c[1]
                ),
            );
        }
        let (ea, eb, ec) = (
            ots[0].elem().unwrap(),
            ots[1].elem().unwrap(),
            ots[2].elem().unwrap(),
        );
        if let Err(e) = mma_types("tile.dot", ea, eb, ec) {
            self.error(op, e);
        }
        self.check_precision(op, ea, false);
        if rts[0] != ots[2] {
            self.error(
                op,
                format!(
                    "'tile.dot' result type must equal the accumulator type {}, found {}",
                    ots[2], rts[0]
                ),
            );
        }
    }

    fn check_for(&mut self, op: &Operation, ots: &[Type], rts: &[Type]) {
        if ots.len() < 3 {
            self.error(
                op,
                format!(
                    "'tile.for' expects lower bound, upper bound and step, found {} operand(s)",
                    ots.len()
                ),
            );
            return;
        }
        for (i, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
            if ots[i] != Type::INDEX {
                self.error(
                    op,
                    format!("'tile.for' {what} must be index, found {}", ots[i]),
                );
            }
        }
        let inits = &ots[3..];
        if inits != rts {
            self.error(
                op,
                format!(
                    "'tile.for' results ({}) must have the types of its initial values ({})",
                    list(rts),
                    list(inits)
                ),
            );
        }
        if let Some(b) = op.regions.first() {
            let args: Vec<Type> = b.args.iter().filter_map(|&v| self.ty(v).cloned()).collect();
            let mut want = vec![Type::INDEX];
            want.extend_from_slice(inits);
            if args != want {
                self.error(
                    op,
                    format!(
                        "'tile.for' body arguments must be ({}) — the induction \
                            variable and the carried values — found ({})",
                        list(&want),
                        list(&args)
                    ),
                );
            }
        }
    }

    fn check_gpu_op(&mut self, op: &Operation, ots: &[Type], rts: &[Type]) {
        let name = op.kind.name();
        // A constant stage/slot/barrier index must lie inside its ring or barrier array.
        let indexed: &[(usize, usize)] = match op.kind {
            OpKind::TmaLoad => &[(1, 3), (2, 3)],
            OpKind::Mma if op.operands.len() == 5 => &[(0, 2), (1, 3)],
            OpKind::Mma => &[(0, 2), (1, 2)],
            OpKind::SmemStore => &[(1, 2)],
            OpKind::SmemLoad => &[(0, 1)],
            OpKind::CpAsync => &[(1, 2)],
            OpKind::TmaStore => &[(1, 2)],
            OpKind::ClcTryCancel => &[(0, 2), (1, 2)],
            OpKind::ClcQuery => &[(0, 1)],
            OpKind::MbarrierWait | OpKind::MbarrierArrive | OpKind::MbarrierExpectTx => &[(0, 1)],
            _ => &[],
        };
        for &(c, i) in indexed {
            let (Some(ct), Some(v)) = (ots.get(c), op.operands.get(i)) else {
                continue;
            };
            let n = match ct {
                Type::Smem { stages, .. } => *stages as i64,
                Type::Mbarrier { count } => *count as i64,
                _ => continue,
            };
            let what = if matches!(ct, Type::Smem { .. }) {
                "stage of a ring"
            } else {
                "barrier of an array"
            };
            if let Some(&iv) = self.consts.get(v).filter(|iv| !(0..n).contains(*iv)) {
                self.error(
                    op,
                    format!(
                        "'{name}' index {iv} is outside its {what} of {n} (operand {})",
                        i + 1
                    ),
                );
            } else if let Some(&m) = self.moduli.get(v).filter(|&&m| m > n) {
                // A remainder by more than the ring's depth reaches indices past it.
                self.error(
                    op,
                    format!(
                        "'{name}' index (operand {}) is a remainder that reaches {}, outside \
                         its {what} of {n}: take the remainder by {n}",
                        i + 1,
                        m - 1
                    ),
                );
            }
        }
        let want_smem = |t: &Type| matches!(t, Type::Smem { .. });
        let want_bar = |t: &Type| matches!(t, Type::Mbarrier { .. });
        match op.kind {
            OpKind::ConvertLayout if self.count(op, 1, 1) => {
                let ok = matches!(
                    (&ots[0], &rts[0]),
                    (
                        Type::Tile { shape: a, elem: e1, layout: Some(_) },
                        Type::Tile { shape: b, elem: e2, layout: Some(_) },
                    ) if a == b && e1 == e2
                );
                if !ok {
                    self.error(
                        op,
                        format!(
                            "'{name}' takes a tile with a layout to the same shape and element \
                             type with another layout, found {} -> {}",
                            ots[0], rts[0]
                        ),
                    );
                }
            }
            OpKind::SmemAlloc => {
                if self.count(op, 0, 1) && !want_smem(&rts[0]) {
                    self.error(
                        op,
                        format!("'{name}' result must be an smem ring, found {}", rts[0]),
                    );
                }
                if op.attr("swizzle").is_some() {
                    if let Some(s) = self.int_attr_in(op, "swizzle", 0, 128) {
                        if ![0, 32, 64, 128].contains(&s) {
                            self.error(
                                op,
                                format!(
                                    "'{name}' swizzle must be 0, 32, 64 or 128 bytes, found {s}"
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::MbarrierAlloc => {
                if self.count(op, 0, 1) && !want_bar(&rts[0]) {
                    self.error(
                        op,
                        format!(
                            "'{name}' result must be an mbarrier array, found {}",
                            rts[0]
                        ),
                    );
                }
                self.int_attr_in(op, "arrive_count", 1, 1024);
                if let Some(Type::Mbarrier { count }) = rts.first() {
                    if !(1..=MAX_MBARRIERS).contains(count) {
                        self.error(
                            op,
                            format!(
                                "'{name}' allocates {count} mbarriers; an array holds 1 to \
                                 {MAX_MBARRIERS} (8 bytes each, in the 1024-byte barrier region \
                                 of shared memory)"
                            ),
                        );
                    }
                }
            }
            OpKind::TmaLoad => {
                // tensor, ring, barriers, stage, coords...
                let ok = ots.len() >= 5
                    && matches!(ots[0], Type::Tensor { .. })
                    && want_smem(&ots[1])
                    && want_bar(&ots[2])
                    && ots[3..].iter().all(|t| *t == Type::INDEX);
                if !ok || !rts.is_empty() {
                    self.error(
                        op,
                        format!(
                            "'{name}' expects (tensor, smem ring, mbarriers, stage: \
                                index, coords: index...) and no results"
                        ),
                    );
                } else if let Type::Tensor { rank, elem } = &ots[0] {
                    if ots[1].elem() != Some(*elem) {
                        self.error(
                            op,
                            format!(
                                "'{name}' copies a tensor of {elem} into a ring of {}: TMA does \
                                    not convert, the element types must be equal",
                                ots[1].elem().map_or("?".to_string(), |e| e.to_string())
                            ),
                        );
                    }
                    if ots.len() != 4 + *rank as usize {
                        self.error(
                            op,
                            format!(
                                "'{name}' of a rank-{rank} tensor takes {rank} \
                                    coordinate(s), found {}",
                                ots.len() - 4
                            ),
                        );
                    }
                }
                if let Some(a) = op.attr("multicast") {
                    if let Some(t) = self.target.filter(|t| !t.has_tma_multicast()) {
                        self.error(
                            op,
                            format!(
                                "'{name}' with 'multicast' (.multicast::cluster) is not for {t}; \
                                    targets that have it: sm_90a, sm_100a"
                            ),
                        );
                    }
                    match a.as_int() {
                        Some(d) if (0..3).contains(&d) && self.cluster_dims[d as usize] > 1 => {}
                        _ => self.error(
                            op,
                            format!(
                                "'{name}' attribute 'multicast' must be a dimension along \
                                    which the kernel's cluster has more than one CTA (cluster \
                                    {:?}), found {a}",
                                self.cluster_dims
                            ),
                        ),
                    }
                }
            }
            OpKind::MbarrierExpectTx => {
                let ok = ots.len() == 2 && want_bar(&ots[0]) && ots[1] == Type::INDEX;
                if !ok || !rts.is_empty() {
                    self.error(
                        op,
                        format!("'{name}' expects (mbarriers, index) and no results"),
                    );
                }
                self.int_attr_in(op, "bytes", 1, 1 << 20);
            }
            OpKind::MbarrierWait | OpKind::MbarrierArrive => {
                if let Some(a) = op.attr("peer_dims") {
                    let dims: Option<Vec<i64>> = a
                        .as_array()
                        .map(|x| x.iter().filter_map(Attribute::as_int).collect());
                    if op.kind == OpKind::MbarrierWait {
                        self.error(
                            op,
                            format!(
                                "'{name}' waits on this CTA's barriers only; it takes no \
                                    'peer_dims' (an arrive releases to peers)"
                            ),
                        );
                    }
                    let ok = op.kind == OpKind::MbarrierWait
                        || op.attr("cta").is_none()
                        && dims.as_ref().is_some_and(|d| {
                            !d.is_empty()
                                && d.len() == a.as_array().map_or(0, <[Attribute]>::len)
                                && d.iter().enumerate().all(|(i, &x)| {
                                    (0..3).contains(&x)
                                        && self.cluster_dims[x as usize] > 1
                                        && !d[..i].contains(&x)
                                })
                        });
                    if !ok {
                        self.error(
                            op,
                            format!(
                                "'{name}' attribute 'peer_dims' must be distinct dimensions \
                                    along which the kernel's cluster has more than one CTA \
                                    (cluster {:?}), on a 'tile.mbarrier_arrive' without 'cta'; \
                                    found {a}",
                                self.cluster_dims
                            ),
                        );
                    }
                }
                if let Some(a) = op.attr("cta") {
                    let size = self.cluster_size;
                    match a {
                        Attribute::Int(r)
                            if op.kind == OpKind::MbarrierArrive
                                && (0..size).contains(r)
                                && size > 1 => {}
                        _ if op.kind == OpKind::MbarrierWait => self.error(
                            op,
                            format!(
                                "'{name}' \
                                    waits on this CTA's barriers only; it takes no 'cta' attribute"
                            ),
                        ),
                        _ if size == 1 => self.error(
                            op,
                            format!(
                                "'{name}' with 'cta' = {a} \
                                    arrives on a peer CTA's barrier, but the kernel has no \
                                    'cluster' of \
                                    more than one CTA"
                            ),
                        ),
                        _ => self.error(
                            op,
                            format!(
                                "'{name}' attribute 'cta' must be a CTA rank \
                                    in the cluster, 0 to {}, found {a}",
                                size - 1
                            ),
                        ),
                    }
                }
                let n = if op.kind == OpKind::MbarrierWait {
                    3
                } else {
                    2
                };
                let ok = ots.len() == n
                    && want_bar(&ots[0])
                    && ots[1..].iter().all(|t| *t == Type::INDEX);
                if !ok || !rts.is_empty() {
                    self.error(
                        op,
                        format!(
                            "'{name}' expects (mbarriers, index{}) and no results",
                            if n == 3 { ", phase parity: index" } else { "" }
                        ),
                    );
                }
            }
            OpKind::CtaId | OpKind::NumCtas => {
                if self.count(op, 0, 1) {
                    self.result_must_be(op, &Type::INDEX);
                }
                self.int_attr_in(op, "dim", 0, 2);
            }
            OpKind::ClusterCtaRank
                if self.count(op, 0, 1) => {
                    self.result_must_be(op, &Type::INDEX);
                }
            OpKind::ClusterCtaId | OpKind::ClusterId | OpKind::NumClusters => {
                if self.count(op, 0, 1) {
                    self.result_must_be(op, &Type::INDEX);
                }
                self.int_attr_in(op, "dim", 0, 2);
            }
            OpKind::FenceProxyAsync => {
                self.count(op, 0, 0);
                self.placed_attr(op);
            }
            OpKind::ClcTryCancel | OpKind::ClcQuery => {
                let is_query = op.kind == OpKind::ClcQuery;
                let response = |t: &Type| {
                    matches!(t, Type::Smem { shape, elem: ScalarType::I32, .. }
                        if shape.as_slice() == [4])
                };
                let ok = if is_query {
                    ots.len() == 2 && response(&ots[0]) && ots[1] == Type::INDEX
                } else {
                    ots.len() == 3
                        && response(&ots[0])
                        && want_bar(&ots[1])
                        && ots[2] == Type::INDEX
                };
                if !ok {
                    let want = if is_query {
                        "(response ring: smem<S x 4 x i32>, slot: index)"
                    } else {
                        "(response ring: smem<S x 4 x i32>, mbarriers, slot: index)"
                    };
                    self.error(
                        op,
                        format!("'{name}' expects {want}, found ({})", list(ots)),
                    );
                }
                match op.attr("multicast") {
                    None | Some(Attribute::Bool(_)) if !is_query => {}
                    None if is_query => {}
                    Some(a) if is_query => self.error(
                        op,
                        format!(
                            "'{name}' takes no 'multicast' \
                                attribute (found {a}); the request decides"
                        ),
                    ),
                    Some(a) => self.error(
                        op,
                        format!(
                            "'{name}' attribute 'multicast' must be true \
                                or false, found {a}"
                        ),
                    ),
                    _ => {}
                }
                if op.attr("multicast").and_then(Attribute::as_bool) == Some(true)
                    && self.cluster_size == 1
                {
                    self.error(
                        op,
                        format!(
                            "'{name}' with multicast = true needs a kernel \
                                'cluster' of more than one CTA"
                        ),
                    );
                }
                if is_query {
                    let want = [Type::I1, Type::INDEX, Type::INDEX, Type::INDEX];
                    if rts != want {
                        self.error(
                            op,
                            format!(
                                "'{name}' results must be (i1, index, index, \
                                    index): is_canceled and the first ctaid, found ({})",
                                list(rts)
                            ),
                        );
                    }
                    if op.attr("load_bits").is_some() {
                        if let Some(b) = self.int_attr_in(op, "load_bits", 32, 128) {
                            if ![32, 64, 128].contains(&b) {
                                self.error(
                                    op,
                                    format!("'{name}' load_bits must be 32, 64 or 128, found {b}"),
                                );
                            }
                        }
                    }
                } else if !rts.is_empty() {
                    self.error(op, format!("'{name}' has no results"));
                }
                if let Some(t) = self.target {
                    if !t.has_try_cancel() {
                        self.error(
                            op,
                            format!(
                                "'{name}' (clusterlaunchcontrol, PTX ISA 8.6) is \
                                    not available on {t}; targets that have it: sm_100, sm_100a"
                            ),
                        );
                    } else if op.attr("multicast").and_then(Attribute::as_bool) == Some(true)
                        && !t.has_try_cancel_multicast()
                    {
                        self.error(
                            op,
                            format!(
                                "'{name}' with multicast = true \
                                    (.multicast::cluster::all) is not available on {t}; targets \
                                    that have \
                                    it: sm_100a"
                            ),
                        );
                    }
                }
            }
            OpKind::SmemStore
                // tile, ring, slot
                if self.count(op, 3, 0) => {
                    match (&ots[0], &ots[1]) {
                        (
                            Type::Tile {
                                shape: ts,
                                elem: te,
                                ..
                            },
                            Type::Smem {
                                shape: rs,
                                elem: re,
                                ..
                            },
                        ) if ts.len() == 2
                            && rs.len() == 2
                            && ots[2] == Type::INDEX
                            && (op.attr("offsets").is_some() || op.attr("transpose").is_some()) =>
                        {
                            if te != re {
                                self.error(
                                    op,
                                    format!(
                                        "'{name}' stores a {te} tile into a {re} ring; convert \
                                         the tile first (the element types must match)"
                                    ),
                                );
                            }
                            if op.attr("col_offset").is_some() {
                                self.error(
                                    op,
                                    format!(
                                        "'{name}' takes either a view of the stage ('offsets', \
                                         'transpose') or 'col_offset', not both"
                                    ),
                                );
                            }
                            let (ts, rs) = (ts.clone(), rs.clone());
                            self.check_view(op, &ts, &rs);
                        }
                        (
                            Type::Tile {
                                shape: ts,
                                elem: te,
                                ..
                            },
                            Type::Smem {
                                shape: rs,
                                elem: re,
                                ..
                            },
                        ) if ts.len() == 2 && rs.len() == 2 && ots[2] == Type::INDEX => {
                            if te != re {
                                self.error(
                                    op,
                                    format!(
                                        "'{name}' stores a {te} tile into a {re} \
                                            ring; convert the tile first (the element types must \
                                            match)"
                                    ),
                                );
                            }
                            if ts[0] != rs[0] {
                                self.error(
                                    op,
                                    format!(
                                        "'{name}': the tile has {} rows but a ring \
                                            slot has {}",
                                        ts[0], rs[0]
                                    ),
                                );
                            }
                            let c = match op.attr("col_offset") {
                                None => Some(0),
                                Some(_) => self.int_attr_in(op, "col_offset", 0, 1 << 20),
                            };
                            if let Some(c) = c {
                                if c % 8 != 0 {
                                    self.error(
                                        op,
                                        format!(
                                            "'{name}' col_offset must be a multiple \
                                                of 8 (one 8x8 fragment matrix), found {c}"
                                        ),
                                    );
                                } else if c as u64 + rs[1] > ts[1] {
                                    self.error(
                                        op,
                                        format!(
                                            "'{name}': columns {c} to {} of the \
                                                slot's {} columns lie outside the {}-column \
                                                tile",
                                            c as u64 + rs[1] - 1,
                                            rs[1],
                                            ts[1]
                                        ),
                                    );
                                }
                            }
                        }
                        _ => self.error(
                            op,
                            format!(
                                "'{name}' expects (tile: 2-D tile, ring: 2-D \
                                    smem ring, slot: index), found ({})",
                                list(ots)
                            ),
                        ),
                    }
                }
            OpKind::TmaStore | OpKind::CpAsync => self.ring_copy(op, ots, rts),
            OpKind::SmemLoad if self.count(op, 2, 1) => match (&ots[0], &rts[0]) {
                (
                    Type::Smem {
                        shape: rs,
                        elem: re,
                        ..
                    },
                    Type::Tile {
                        shape: ts,
                        elem: te,
                        ..
                    },
                ) if ots[1] == Type::INDEX => {
                    if te != re {
                        self.error(
                            op,
                            format!(
                                "'{name}' reads a {re} ring into a {te} tile; the element types \
                                 must match"
                            ),
                        );
                    }
                    let (ts, rs) = (ts.clone(), rs.clone());
                    self.check_view(op, &ts, &rs);
                }
                _ => self.error(
                    op,
                    format!(
                        "'{name}' expects (smem ring, stage: index) and a tile result, found \
                         ({}) -> {}",
                        list(ots),
                        rts[0]
                    ),
                ),
            },
            OpKind::CpAsyncCommitGroup => {
                self.count(op, 0, 0);
            }
            OpKind::CpAsyncWaitGroup => {
                self.count(op, 0, 0);
                if op.attr("pending").is_none() {
                    self.error(op, format!("'{name}' needs attribute 'pending' (0 to 7)"));
                } else {
                    self.int_attr_in(op, "pending", 0, 7);
                }
            }
            OpKind::BulkCommitGroup => {
                self.count(op, 0, 0);
            }
            OpKind::BulkWaitGroup => {
                self.count(op, 0, 0);
                if op.attr("pending").is_none() {
                    self.error(op, format!("'{name}' needs attribute 'pending' (0 to 7)"));
                } else {
                    self.int_attr_in(op, "pending", 0, 7);
                }
                match op.attr("read") {
                    None | Some(Attribute::Bool(_)) => {}
                    Some(a) => self.error(
                        op,
                        format!("'{name}' attribute 'read' must be true or false, found {a}"),
                    ),
                }
            }
            OpKind::NamedBarrier => {
                self.count(op, 0, 0);
                self.placed_attr(op);
                if op.attr("id").is_none() || op.attr("threads").is_none() {
                    self.error(
                        op,
                        format!(
                            "'{name}' needs attributes 'id' (1 to 15) and 'threads' \
                                (a multiple of 32)"
                        ),
                    );
                } else {
                    self.int_attr_in(op, "id", 1, 15);
                    match op.attr("arrive") {
                        None | Some(Attribute::Bool(_)) => {}
                        Some(a) => self.error(
                            op,
                            format!("'{name}' attribute 'arrive' must be true or false, found {a}"),
                        ),
                    }
                    for a in ["peer", "only_warpgroup"] {
                        if op.attr(a).is_some() {
                            self.int_attr_in(op, a, 0, 7);
                        }
                    }
                    if let Some(t) = self.int_attr_in(op, "threads", 32, 1024) {
                        if t % 32 != 0 {
                            self.error(
                                op,
                                format!(
                                    "'{name}' threads must be a multiple of 32 \
                                        (whole warps), found {t}"
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::WgmmaFence | OpKind::CommitGroup => {
                self.count(op, 0, 0);
            }
            OpKind::Barrier => {
                self.count(op, 0, 0);
                self.placed_attr(op);
            }
            OpKind::Mma => {
                // a ring (or, for wgmma's register-A form, an A-fragment tile), b ring, a
                // stage for both or one per ring, acc
                let n = op.operands.len();
                let shape_ok = (n == 4 || n == 5) && rts.len() == 1;
                let ok = shape_ok
                    && (want_smem(&ots[0]) || matches!(ots[0], Type::Tile { .. }))
                    && want_smem(&ots[1])
                    && ots[2..n - 1].iter().all(|t| *t == Type::INDEX)
                    && matches!(ots[n - 1], Type::Tile { .. })
                    && rts[0] == ots[n - 1];
                if !ok {
                    self.error(
                        op,
                        format!(
                            "'{name}' expects (a ring or A-fragment tile, b ring, stage: \
                                index, acc: tile) or (a, b, stage_a: index, stage_b: index, \
                                acc: tile) -> acc type, found {n} operand(s) and {} result(s)",
                            rts.len()
                        ),
                    );
                }
                self.check_mma_majors(op, ots);
                if ok {
                    let (ea, eb, ec) = (ots[0].elem(), ots[1].elem(), ots[n - 1].elem());
                    if let (Some(a), Some(b), Some(c)) = (ea, eb, ec) {
                        if let Err(e) = mma_types(name, a, b, c) {
                            self.error(op, e);
                        }
                        self.check_precision(op, a, true);
                    }
                }
                if let (Some(t), Some("wgmma")) = (self.target, op.str_attr("kind")) {
                    if !t.has_wgmma() {
                        self.error(
                            op,
                            format!(
                                "'{name}' with kind = \"wgmma\" (wgmma.mma_async) \
                                    is not available on {t}; targets that have it: sm_90a"
                            ),
                        );
                    }
                }
            }
            OpKind::WaitGroup => {
                self.int_attr_in(op, "pending", 0, 7);
                if ots != rts {
                    self.error(
                        op,
                        format!(
                            "'{name}' returns the accumulators it guards: result \
                                types ({}) must equal operand types ({})",
                            list(rts),
                            list(ots)
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

/// The element types an MMA takes: `a` and `b` alike (the two 8-bit floats mix, as wgmma
/// takes e4m3 x e5m2), with an accumulator of `c`: f16 x f16 + f16|f32, bf16 x bf16 + f32,
/// f32 x f32 + f32, e4m3|e5m2 x e4m3|e5m2 + f32. `name` is the op's, for the message.
fn mma_types(name: &str, a: ScalarType, b: ScalarType, c: ScalarType) -> Result<(), String> {
    if a != b && !(a.is_fp8() && b.is_fp8()) {
        return Err(format!(
            "'{name}' operand element types differ: {a} and {b}"
        ));
    }
    let ok = match a {
        ScalarType::F16 => matches!(c, ScalarType::F16 | ScalarType::F32),
        ScalarType::BF16 | ScalarType::F32 | ScalarType::E4M3 | ScalarType::E5M2 => {
            c == ScalarType::F32
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' does not support {a} inputs with a {c} accumulator; supported: f16 x f16 \
             + f16|f32, bf16 x bf16 + f32, f32 x f32 + f32, e4m3|e5m2 x e4m3|e5m2 + f32"
        ))
    }
}

impl Verifier<'_> {
    /// A dot's or MMA's `precision`: `"ieee"` (the default) or `"tf32"` (f32 data read as
    /// tf32, 10 mantissa bits), which only f32 operands take. An MMA (`hw`) of f32 rings
    /// must say `"tf32"`: the tensor cores have no IEEE f32 form.
    fn check_precision(&mut self, op: &Operation, a: ScalarType, hw: bool) {
        let name = op.kind.name();
        let attr = op.attr(Precision::ATTR);
        let p = match attr.map(|a| a.as_str().and_then(Precision::from_name)) {
            None => Precision::Ieee,
            Some(Some(p)) => p,
            Some(None) => {
                let found = attr.map(ToString::to_string).unwrap_or_default();
                self.error(
                    op,
                    format!("'{name}' precision must be \"ieee\" or \"tf32\", found {found}"),
                );
                return;
            }
        };
        if p == Precision::Tf32 && a != ScalarType::F32 {
            self.error(
                op,
                format!("'{name}' precision = \"tf32\" takes f32 operands, found {a}"),
            );
        }
        if hw && p == Precision::Ieee && a == ScalarType::F32 {
            self.error(
                op,
                format!(
                    "'{name}' of f32 operands needs precision = \"tf32\" (the tensor cores \
                     read f32 data as tf32; there is no IEEE f32 MMA)"
                ),
            );
        }
    }

    /// `tile.mma`'s `a_major` (`"k"`, the default: the A ring is M×K; `"m"`: K×M) and
    /// `b_major` (`"n"`, the default: the B ring is K×N; `"k"`: N×K), and ring shapes that
    /// agree with them and with the accumulator (M×N).
    fn check_mma_majors(&mut self, op: &Operation, ots: &[Type]) {
        let name = op.kind.name();
        let mut major = |r: Result<bool, String>| match r {
            Ok(k) => Some(k),
            Err(e) => {
                self.error(op, e);
                None
            }
        };
        let a_k = major(crate::ops::mma_a_k_major(op));
        let b_k = major(crate::ops::mma_b_k_major(op));
        let (Some(a_k), Some(b_k), Some(acc)) = (a_k, b_k, ots.last()) else {
            return;
        };
        let Some(&[m, n]) = acc.tile_shape() else {
            return;
        };
        let ring = |t: &Type| match t {
            Type::Smem { shape, .. } if shape.len() == 2 => Some([shape[0], shape[1]]),
            _ => None,
        };
        let b = ots.get(1).and_then(ring);
        let a = ots.first().and_then(ring);
        // (the ring's M or N, its K) for each operand, as its major lays it out.
        let a_mk = a.map(|[r, c]| if a_k { (r, c) } else { (c, r) });
        let b_nk = b.map(|[r, c]| if b_k { (r, c) } else { (c, r) });
        let dims = |s: [u64; 2]| format!("{}x{}", s[0], s[1]);
        // A ring may hold the rows of several consumer warpgroups, each with its own M-row
        // slice of the accumulator: its M is a multiple of the accumulator's.
        let a_ok = match (a_mk, a) {
            (Some((am, _)), Some(ar)) if am == 0 || am % m != 0 => {
                self.error(
                    op,
                    format!(
                        "'{name}' A ring stage {} ({}) does not match the {m}x{n} accumulator \
                         (its M must be a multiple of {m})",
                        dims(ar),
                        if a_k {
                            "M x K"
                        } else {
                            "K x M, a_major = \"m\""
                        }
                    ),
                );
                false
            }
            _ => true,
        };
        let b_ok = match (b_nk, b) {
            (Some((bn, _)), Some(br)) if bn != n => {
                self.error(
                    op,
                    format!(
                        "'{name}' B ring stage {} ({}) does not match the {m}x{n} accumulator",
                        dims(br),
                        if b_k {
                            "N x K, b_major = \"k\""
                        } else {
                            "K x N"
                        }
                    ),
                );
                false
            }
            _ => true,
        };
        if let (true, true, Some((_, ak)), Some((_, bk))) = (a_ok, b_ok, a_mk, b_nk) {
            if ak != bk {
                self.error(
                    op,
                    format!("'{name}' the A ring stage has K = {ak} and the B ring stage K = {bk}"),
                );
            }
        }
    }
}

fn check_expr_divisors(v: &mut Verifier<'_>, op: &Operation, e: &Expr) {
    match e {
        Expr::CeilDiv(a, b) => {
            if let Expr::Int(d) = **b {
                if d <= 0 {
                    v.error(op, format!("grid expression {e} divides by {d}"));
                }
            }
            check_expr_divisors(v, op, a);
            check_expr_divisors(v, op, b);
        }
        Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Min(a, b) => {
            check_expr_divisors(v, op, a);
            check_expr_divisors(v, op, b);
        }
        Expr::Int(_) | Expr::Arg(_) => {}
    }
}

/// The number of elements of a shape; `None` when it overflows.
fn elements(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

/// Whether `t` is a flag tensor: 1-D, of i32 (the flag ops' first operand).
fn is_flags(t: &Type) -> bool {
    matches!(
        t,
        Type::Tensor {
            rank: 1,
            elem: ScalarType::I32
        }
    )
}

fn list(ts: &[Type]) -> String {
    ts.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
