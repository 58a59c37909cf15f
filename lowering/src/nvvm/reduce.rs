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
use super::writer::{ICmp, V};
use std::collections::HashMap;
use tilec_dialect::{Operation, ScalarType};

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    fn combine(&mut self, kind: &str, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        let name = match kind {
            "add" => "llvm.fadd",
            "max" => "llvm.intr.maxnum",
            _ => "llvm.intr.minnum",
        };
        self.w.fop(name, &[a, b])
    }

    /// Combines `xs` pairwise (a balanced tree).
    fn tree(&mut self, kind: &str, mut xs: Vec<V<'c, 'm>>) -> V<'c, 'm> {
        while xs.len() > 1 {
            let mut next = Vec::with_capacity(xs.len().div_ceil(2));
            for pair in xs.chunks(2) {
                next.push(match pair {
                    [a, b] => self.combine(kind, *a, *b),
                    [a] => *a,
                    _ => unreachable!("chunks of two"),
                });
            }
            xs = next;
        }
        xs[0]
    }

    pub(super) fn lower_reduce(&mut self, op: &Operation) -> R<()> {
        let t = self.tile(op, op.operands[0])?;
        let d = op.int_attr("dim").unwrap_or(0) as usize;
        let kind = op.str_attr("kind").unwrap_or("add").to_string();
        let (rshape, relem, rlayout) = self.result_layout(op, 0)?;
        if !t.elem.is_float() {
            return err(op, "'tile.reduce' of an integer tile is not lowered");
        }
        let l = t.layout.clone();
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
                        "the layout's basis {b:?} moves along the reduced dimension and \
                         another at once; 'tile.reduce' does not lower that layout"
                    ),
                );
            }
        }
        let ident = match kind.as_str() {
            "add" => 0.0,
            "max" => f64::NEG_INFINITY,
            _ => f64::INFINITY,
        };
        // 1. In thread.
        let padded = t.shape[d] != l.dims[d];
        let mut vals = Vec::with_capacity(t.regs.len());
        for (r, &x) in t.regs.iter().enumerate() {
            let mut v = self.w.fpext_f32(V { v: x, t: t.elem });
            if padded {
                let c = self.coord(&l, r as u64)[d];
                let n = self.w.i32(t.shape[d] as i64);
                let ok = self.w.icmp(ICmp::Slt, c, n);
                let id = self.w.float(ident, ScalarType::F32);
                v = self.w.select(ok, v, id);
            }
            vals.push(v);
        }
        let slots: HashMap<Vec<u64>, usize> = (0..s.num_registers())
            .map(|rho| (s.register_coord(rho), rho as usize))
            .collect();
        let mut groups: Vec<Vec<V<'c, 'm>>> = vec![vec![]; s.num_registers() as usize];
        for (r, v) in vals.into_iter().enumerate() {
            let key = proj(&l.register_coord(r as u64));
            let Some(&rho) = slots.get(&key) else {
                return err(
                    op,
                    "internal error: a register has no slot in the slice layout",
                );
            };
            groups[rho].push(v);
        }
        let mut acc = vec![];
        for g in groups {
            acc.push(self.tree(&kind, g));
        }
        // 2. Across lanes.
        for (bit, b) in l.lane.iter().enumerate() {
            if b[d] == 0 {
                continue;
            }
            for a in &mut acc {
                let other = self.w.shfl_bfly(*a, 1 << bit);
                *a = self.combine(&kind, *a, other);
            }
        }
        // 3. Across warps.
        let wbits: Vec<usize> = (0..l.warp.len()).filter(|&b| l.warp[b][d] != 0).collect();
        if !wbits.is_empty() {
            let nw = 1u64 << wbits.len();
            let elems: u64 = s.dims.iter().product();
            let region = self
                .smem_region(elems * nw * 4)
                .map_err(|m| tilec_dialect::Diagnostic::error(op.loc.clone(), m))?;
            let warp = self.warp;
            let mut wr = self.w.i32(0);
            for (i, &b) in wbits.iter().enumerate() {
                let on = self.w.bit(warp, b as u32);
                let sh = self.w.i32(i as i64);
                let x = self.w.bin("shl", on, sh);
                wr = self.w.bin("or", wr, x);
            }
            let f32t = self.w.ty(ScalarType::F32);
            let mut bases = vec![];
            for (rho, a) in acc.iter().enumerate() {
                let q = self.coord(&s, rho as u64);
                let flat = self.flat(&q, &s.dims);
                let nwc = self.w.i32(nw as i64);
                let base = self.w.mul(flat, nwc);
                let slot = self.w.add(base, wr);
                let c4 = self.w.i32(4);
                let off = self.w.mul(slot, c4);
                let off = self.w.add_const(off, region as i64);
                let p = self.w.smem_addr(off);
                self.w.store(a.v, p, 4);
                bases.push(base);
            }
            self.w.barrier();
            for (rho, base) in bases.into_iter().enumerate() {
                let mut parts = vec![];
                for j in 0..nw {
                    let slot = self.w.add_const(base, j as i64);
                    let c4 = self.w.i32(4);
                    let off = self.w.mul(slot, c4);
                    let off = self.w.add_const(off, region as i64);
                    let p = self.w.smem_addr(off);
                    parts.push(V {
                        v: self.w.load(p, f32t, 4),
                        t: ScalarType::F32,
                    });
                }
                acc[rho] = self.tree(&kind, parts);
            }
            if self.in_loop() {
                self.w.barrier();
            }
        }
        let regs = acc
            .into_iter()
            .map(|a| self.w.fptrunc_to(a, relem).v)
            .collect();
        let mut out = Tile {
            regs,
            elem: relem,
            shape: rshape,
            layout: s,
        };
        if out.layout != rlayout {
            out = self.remap(op, out, &rlayout, &[])?;
        }
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, super::plain::Lv::Tile(out));
        }
        Ok(())
    }

    /// The row-major offset (i32) of coordinate `c` in a tile of (padded) `dims`.
    pub(super) fn flat(&mut self, c: &[V<'c, 'm>], dims: &[u64]) -> V<'c, 'm> {
        let mut acc = self.w.i32(0);
        for (x, &n) in c.iter().zip(dims) {
            let nn = self.w.i32(n as i64);
            acc = self.w.mul(acc, nn);
            acc = self.w.add(acc, *x);
        }
        acc
    }
}
