//! `tile.reduce` (add, max, min) over one dimension of a tile in any layout, in f32.
//!
//! With `L` the operand's layout and `d` the reduced dimension, the result is first laid
//! out as `L.slice(d)` ([`tilec_dialect::LinearLayout::slice`]), in three steps read off
//! `L`'s bases:
//!
//! 1. **in thread**: registers whose coordinates differ only in `d` are combined;
//! 2. **across lanes**: for each lane bit whose basis moves along `d` only, one
//!    `shfl.sync.bfly` with that lane mask and a combine (a butterfly, so every lane ends
//!    with the whole value);
//! 3. **across warps**: when warp bits move along `d`, each warp writes its partials to
//!    shared memory (`[result element][warp part]`, f32), a barrier, each thread combines
//!    the warps' partials in warp order; inside a loop, a barrier before the next
//!    iteration writes the region again (each op has a region of its own).
//!
//! Padding along `d` (a non-power-of-two extent) is replaced by the identity (0, −∞, +∞)
//! before combining. A basis that moves along `d` and another dimension at once (no
//! constructor makes one) is refused. The result is rounded to its element type once, at
//! the end, and converted to the declared result layout if that differs from the slice.

use super::plain::{err, Lowerer, Tile, R};
use super::writer::{ICmp, Writer, V};
use melior::ir::Value;
use std::collections::HashMap;
use tilec_dialect::{LinearLayout, Location, Operation, ReduceKind, ScalarType};

/// What a reduction needs of the kernel it is lowered in: the plain launch
/// ([`Lowerer`]) and the GEMM epilogue (over the accumulator's layout) provide it.
pub(crate) trait ReduceSite<'c, 'm> {
    /// The writer at the reduction's position.
    fn writer(&mut self) -> &mut Writer<'c, 'm>;
    /// The coordinate (i32, per dimension) of register `r` of `layout` in this thread.
    fn coord(&mut self, layout: &LinearLayout, r: u64) -> Vec<V<'c, 'm>>;
    /// The index (i32) of this thread's warp among the warps `layout.warp` tells apart.
    fn warp_index(&mut self) -> V<'c, 'm>;
    /// A shared-memory region of `bytes` bytes: its offset in `@dynamic_smem`.
    ///
    /// # Errors
    /// A message when the CTA's shared memory is exhausted.
    fn smem_region(&mut self, bytes: u64, loc: &Location) -> R<u64>;
    /// The 16-byte shared-memory slot through which `tile.arrive_flag` hands its old value
    /// to every thread: one per kernel, allocated on first use (each arrive's barriers keep
    /// its uses apart).
    ///
    /// # Errors
    /// As [`Self::smem_region`].
    fn flag_slot(&mut self, loc: &Location) -> R<u64>;
    /// A barrier over every thread of the layout's warps.
    fn sync(&mut self);
    /// Whether the reduction runs again before the kernel ends (its region is reused).
    fn in_loop(&self) -> bool;
}

fn combine<'c: 'm, 'm>(
    w: &mut Writer<'c, 'm>,
    kind: ReduceKind,
    a: V<'c, 'm>,
    b: V<'c, 'm>,
) -> V<'c, 'm> {
    let name = match kind {
        ReduceKind::Add => "llvm.fadd",
        ReduceKind::Max => "llvm.intr.maxnum",
        ReduceKind::Min => "llvm.intr.minnum",
    };
    w.fop(name, &[a, b])
}

/// Combines `xs` pairwise (a balanced tree).
fn tree<'c: 'm, 'm>(w: &mut Writer<'c, 'm>, kind: ReduceKind, mut xs: Vec<V<'c, 'm>>) -> V<'c, 'm> {
    while xs.len() > 1 {
        let mut next = Vec::with_capacity(xs.len().div_ceil(2));
        for pair in xs.chunks(2) {
            next.push(match pair {
                [a, b] => combine(w, kind, *a, *b),
                [a] => *a,
                _ => unreachable!("chunks of two"),
            });
        }
        xs = next;
    }
    xs[0]
}

/// The reduction `kind` over dimension `d` of a tile laid out as `l`
/// (`shape` is its unpadded shape), in the three steps of the [module docs](self).
/// `value(site, r)` gives register `r`'s element (any float type); it is called group by
/// group, each group (the registers one result register combines) right before it is
/// combined, so that no more than one group is live at a time. Returns the f32 registers of
/// `l.slice(d)`; or, with `defer` and warps to combine, their partials in shared memory,
/// read where each register is used ([`Partials::read`]; a loop's next iteration then
/// waits for the readers before it writes).
///
/// # Errors
/// A located error for a layout whose basis moves along `d` and another dimension at once,
/// when shared memory runs out, or what `value` returns.
pub(crate) fn reduce_registers<'c: 'm, 'm, S: ReduceSite<'c, 'm>>(
    site: &mut S,
    op: &Operation,
    (l, shape): (&LinearLayout, &[u64]),
    d: usize,
    kind: ReduceKind,
    value: &mut dyn FnMut(&mut S, u64) -> R<V<'c, 'm>>,
    defer: bool,
) -> R<Reduced<'c, 'm>> {
    let s = l.slice(d);
    let proj = |c: &[u64]| -> Vec<u64> {
        let mut c = c.to_vec();
        c[d] = 0;
        c
    };
    for b in l.lane.iter().chain(&l.warp) {
        if b[d] != 0 && proj(b).iter().any(|&x| x != 0) {
            return err(
                op,
                format!(
                    "the layout's basis {b:?} moves along the reduced dimension and another at \
                     once; 'tile.reduce' does not lower that layout"
                ),
            );
        }
    }
    let ident = match kind {
        ReduceKind::Add => 0.0,
        ReduceKind::Max => f64::NEG_INFINITY,
        ReduceKind::Min => f64::INFINITY,
    };
    // 1. In thread.
    let slots: HashMap<Vec<u64>, usize> = (0..s.num_registers())
        .map(|rho| (s.register_coord(rho), rho as usize))
        .collect();
    let mut groups: Vec<Vec<u64>> = vec![vec![]; s.num_registers() as usize];
    for r in 0..l.num_registers() {
        let Some(&rho) = slots.get(&proj(&l.register_coord(r))) else {
            return err(
                op,
                "internal error: a register has no slot in the slice layout",
            );
        };
        groups[rho].push(r);
    }
    let padded = shape[d] != l.dims[d];
    let mut acc = vec![];
    for g in groups {
        let mut vals = Vec::with_capacity(g.len());
        for r in g {
            let x = value(site, r)?;
            let mut v = site.writer().fpext_f32(x);
            if padded {
                let c = site.coord(l, r)[d];
                let w = site.writer();
                let n = w.i32(shape[d] as i64);
                let ok = w.icmp(ICmp::Slt, c, n);
                let id = w.float(ident, ScalarType::F32);
                v = w.select(ok, v, id);
            }
            vals.push(v);
        }
        acc.push(tree(site.writer(), kind, vals));
    }
    // 2. Across lanes.
    for (bit, b) in l.lane.iter().enumerate() {
        if b[d] == 0 {
            continue;
        }
        let w = site.writer();
        for a in &mut acc {
            let other = w.shfl_bfly(*a, 1 << bit);
            *a = combine(w, kind, *a, other);
        }
    }
    // 3. Across warps.
    let wbits: Vec<usize> = (0..l.warp.len()).filter(|&b| l.warp[b][d] != 0).collect();
    if wbits.is_empty() {
        return Ok(Reduced::Registers(acc));
    }
    let nw = 1u64 << wbits.len();
    let elems: u64 = s.dims.iter().product();
    let region = site.smem_region(elems * nw * 4, &op.loc)?;
    let p = Partials {
        region,
        warps: nw,
        layout: s,
        kind,
    };
    if defer && site.in_loop() {
        // The previous iteration's readers are done before this one writes.
        site.sync();
    }
    let warp = site.warp_index();
    let mut bases = vec![];
    let w = site.writer();
    let mut wr = w.i32(0);
    for (i, &b) in wbits.iter().enumerate() {
        let on = w.bit(warp, b as u32);
        let sh = w.i32(i as i64);
        let x = w.bin("shl", on, sh);
        wr = w.bin("or", wr, x);
    }
    // Where coordinates add, register 0's slot plus a constant, the constant in the address.
    let first = p.layout.register_bits_disjoint().then(|| {
        let b = partial_base(site, &p, 0);
        let w = site.writer();
        let slot = w.add(b, wr);
        (b, partial_ptr(w, &p, slot))
    });
    for (rho, a) in acc.iter().enumerate() {
        let (base, ptr) = match first {
            Some((b, ptr0)) => {
                let c = p.register_offset(rho as u64);
                let w = site.writer();
                let off = w.i32(4 * c);
                (w.add_const(b, c), w.gep_bytes(ptr0, off, w.ptr_ty(3)))
            }
            None => {
                let base = partial_base(site, &p, rho as u64);
                let w = site.writer();
                let slot = w.add(base, wr);
                (base, partial_ptr(w, &p, slot))
            }
        };
        site.writer().store(a.v, ptr, 4);
        bases.push(base);
    }
    site.sync();
    if defer {
        return Ok(Reduced::Shared(p));
    }
    for (rho, base) in bases.into_iter().enumerate() {
        acc[rho] = read_partials(site.writer(), &p, base);
    }
    if site.in_loop() {
        site.sync();
    }
    Ok(Reduced::Registers(acc))
}

/// A reduction's result: the registers of the slice layout, or (deferred) the warps'
/// partials in shared memory, combined where each register is read
/// ([`Partials::read`]).
pub(crate) enum Reduced<'c, 'm> {
    Registers(Vec<V<'c, 'm>>),
    Shared(Partials),
}

/// The partials of a cross-warp reduction in shared memory: f32, `[element of layout]
/// [warp part]` from byte `region` of `@dynamic_smem`, written and behind a barrier.
#[derive(Clone, Debug)]
pub(crate) struct Partials {
    pub region: u64,
    /// Partials per element (the warps that held parts of it).
    pub warps: u64,
    /// The result's layout (the operand's sliced along the reduced dimension).
    pub layout: LinearLayout,
    pub kind: ReduceKind,
}

impl Partials {
    /// Register `rho` of [`Self::layout`]: its partials, combined in warp order (f32).
    pub(crate) fn read<'c: 'm, 'm, S: ReduceSite<'c, 'm>>(
        &self,
        site: &mut S,
        rho: u64,
    ) -> V<'c, 'm> {
        let base = partial_base(site, self, rho);
        read_partials(site.writer(), self, base)
    }
}

impl Partials {
    /// Slots from register 0's partials to register `rho`'s where the layout's register
    /// bits are apart from its thread bits (coordinates add): a constant.
    fn register_offset(&self, rho: u64) -> i64 {
        let rc = self.layout.register_coord(rho);
        let flat = rc
            .iter()
            .zip(&self.layout.dims)
            .fold(0u64, |acc, (&x, &n)| acc * n + x);
        (flat * self.warps) as i64
    }
}

/// The first slot (i32) of register `rho`'s partials: register 0's plus a constant where
/// the layout's register bits are apart from its thread bits, which LLVM folds into each
/// access's address.
fn partial_base<'c: 'm, 'm, S: ReduceSite<'c, 'm>>(
    site: &mut S,
    p: &Partials,
    rho: u64,
) -> V<'c, 'm> {
    if rho != 0 && p.layout.register_bits_disjoint() {
        let b = partial_base(site, p, 0);
        let c = p.register_offset(rho);
        return site.writer().add_const(b, c);
    }
    let q = site.coord(&p.layout, rho);
    let w = site.writer();
    let f = flat(w, &q, &p.layout.dims);
    let nwc = w.i32(p.warps as i64);
    w.mul(f, nwc)
}

fn partial_ptr<'c: 'm, 'm>(w: &mut Writer<'c, 'm>, p: &Partials, slot: V<'c, 'm>) -> Value<'c, 'm> {
    let c4 = w.i32(4);
    let off = w.mul(slot, c4);
    let off = w.add_const(off, p.region as i64);
    w.smem_addr(off)
}

/// The partials of the element whose first slot is `base`, combined: read as vectors of 4
/// (or 2) f32 where the slots' bytes are aligned to the vector, as LLVM's load-store
/// vectorizer would merge them, so that it and GVN see a few loads instead of one per warp.
fn read_partials<'c: 'm, 'm>(w: &mut Writer<'c, 'm>, p: &Partials, base: V<'c, 'm>) -> V<'c, 'm> {
    let f32t = w.ty(ScalarType::F32);
    let width = [4u64, 2]
        .into_iter()
        .find(|&n| p.warps.is_multiple_of(n) && p.region.is_multiple_of(4 * n))
        .unwrap_or(1);
    let first = partial_ptr(w, p, base);
    let p3 = w.ptr_ty(3);
    let mut parts = vec![];
    for j in (0..p.warps).step_by(width as usize) {
        let ptr = match j {
            0 => first,
            _ => {
                let off = w.i32(4 * j as i64);
                w.gep_bytes(first, off, p3)
            }
        };
        if width == 1 {
            parts.push(V {
                v: w.load(ptr, f32t, 4),
                t: ScalarType::F32,
            });
            continue;
        }
        let vty = w.vector_ty(width, f32t);
        let v = w.load(ptr, vty, 4 * width);
        for k in 0..width {
            let kk = w.i32(k as i64);
            parts.push(V {
                v: w.extract_element(v, kk, f32t),
                t: ScalarType::F32,
            });
        }
    }
    tree(w, p.kind, parts)
}

/// The row-major offset (i32) of coordinate `c` in a tile of (padded) `dims`.
pub(crate) fn flat<'c: 'm, 'm>(w: &mut Writer<'c, 'm>, c: &[V<'c, 'm>], dims: &[u64]) -> V<'c, 'm> {
    let mut acc = w.i32(0);
    for (x, &n) in c.iter().zip(dims) {
        let nn = w.i32(n as i64);
        acc = w.mul(acc, nn);
        acc = w.add(acc, *x);
    }
    acc
}

impl<'c, 'm> ReduceSite<'c, 'm> for Lowerer<'c, 'm, '_> {
    fn writer(&mut self) -> &mut Writer<'c, 'm> {
        &mut self.w
    }

    fn coord(&mut self, layout: &LinearLayout, r: u64) -> Vec<V<'c, 'm>> {
        Lowerer::coord(self, layout, r)
    }

    fn warp_index(&mut self) -> V<'c, 'm> {
        self.warp
    }

    fn smem_region(&mut self, bytes: u64, loc: &Location) -> R<u64> {
        Lowerer::smem_region(self, bytes, loc)
    }

    fn flag_slot(&mut self, loc: &Location) -> R<u64> {
        if let Some(at) = self.flag_slot {
            return Ok(at);
        }
        let at = Lowerer::smem_region(self, 16, loc)?;
        self.flag_slot = Some(at);
        Ok(at)
    }

    fn sync(&mut self) {
        self.w.barrier();
    }

    fn in_loop(&self) -> bool {
        Lowerer::in_loop(self)
    }
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    pub(super) fn lower_reduce(&mut self, op: &Operation) -> R<()> {
        let t = self.tile(op, op.operands[0])?;
        let d = op.int_attr("dim").unwrap_or(0) as usize;
        let kind = ReduceKind::of(op).unwrap_or(ReduceKind::Add);
        let (rshape, relem, rlayout) = self.result_layout(op, 0)?;
        if !t.elem.is_float() {
            return err(op, "'tile.reduce' of an integer tile is not lowered");
        }
        let (regs, elem) = (&t.regs, t.elem);
        let value = &mut |_: &mut Self, r: u64| {
            Ok(V {
                v: regs[r as usize],
                t: elem,
            })
        };
        let Reduced::Registers(acc) =
            reduce_registers(self, op, (&t.layout, &t.shape), d, kind, value, false)?
        else {
            return err(op, "internal error: a reduction deferred in a plain launch");
        };
        let regs = acc
            .into_iter()
            .map(|a| self.w.fptrunc_to(a, relem).v)
            .collect();
        let mut out = Tile {
            regs,
            elem: relem,
            shape: rshape,
            layout: t.layout.slice(d),
        };
        if out.layout != rlayout {
            out = self.remap(op, out, &rlayout, &[], &[])?;
        }
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, super::plain::Lv::Tile(out));
        }
        Ok(())
    }
}
