//! Warp-level MMA for targets without wgmma (sm_90, sm_100): `tile.mma {kind =
//! "mma_sync"}` as one k stage (BK = 32, 64 or 128) of BK / 16 k16 steps; per step each
//! consumer warp loads its A fragments (4 m16 tiles, `nvvm.ldmatrix` x4) and B fragments (8
//! n8 tiles, 4 x4 loads), with `.trans` for the MN-major operands, from the swizzled stage
//! (128-byte, or 64-byte for a K-major operand with BK = 32), and issues 32
//! `nvvm.mma.sync` m16n8k16 (row.col, f32 accumulators). A lane's 128 accumulator
//! registers are one SSA value each.

use super::wgmma::{mma_parts, operand_majors};
use super::{err, Gemm, Lv, R};
use crate::nvvm::writer::V;
use melior::ir::{
    attribute::{DenseI32ArrayAttribute, IntegerAttribute},
    Value,
};
use tilec_dialect::{Attribute as TileAttr, Operation, ScalarType};

/// Accumulator registers per lane: a 64 x 64 warp tile of m16n8 tiles.
const NACC: usize = 128;

/// One operand's ldmatrix addressing: the lane's byte address in stage 0 of its first
/// fragment, its swizzled chunk (bytes), whether the stage is K-major, its row width
/// (the swizzle span, bytes) and its rows.
struct Frag<'c, 'm> {
    base: V<'c, 'm>,
    chunk: V<'c, 'm>,
    k_major: bool,
    span: u64,
    rows: u64,
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    pub(super) fn lower_mma_sync(&mut self, op: &Operation) -> R<()> {
        let (Some(Lv::Ring(a)), Some(Lv::Ring(b))) = (
            self.vals.get(&op.operands[0]).cloned(),
            self.vals.get(&op.operands[1]).cloned(),
        ) else {
            return err(op, "MMA operands are not rings");
        };
        let elem = a.elem;
        let majors = operand_majors(op)?;
        // BK is A's K dimension; the shapes below are what it implies for both rings.
        let bk = a.shape[if majors.a_k { 1 } else { 0 }];
        let (a_want, b_want) = (
            if majors.a_k { [128, bk] } else { [bk, 128] },
            if majors.b_k { [256, bk] } else { [bk, 256] },
        );
        if !matches!(bk, 32 | 64 | 128)
            || a.shape != a_want
            || b.shape != b_want
            || elem != ScalarType::BF16 && elem != ScalarType::F16
        {
            let dims = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
            return err(
                op,
                format!(
                    "mma.sync lowering handles a 128 x BK M x K tile of A and a BK x 256 K x N \
                     tile of B, BK 32, 64 or 128, in bf16/f16 (2 x 4 warps of 64 x 64): for these \
                     operand majors, stages of {} and {}; found {} and {}",
                    dims(&a_want),
                    dims(&b_want),
                    dims(&a.shape),
                    dims(&b.shape)
                ),
            );
        }
        let et = if elem == ScalarType::BF16 {
            "bf16"
        } else {
            "f16"
        };
        self.set_acc(op, NACC)?;
        let Some((wm, wn)) = self.warp_mn else {
            return err(op, "'tile.mma' outside the consumer region");
        };
        let parts = mma_parts(op)?;
        let (st32, stb) = self.stages32(op, &parts)?;
        // Each ldmatrix x4 reads four 8x8 matrices; lane l gives the address of row l mod 8
        // of matrix l / 8: here row l mod 16 of the fragment's 16 rows, at 16-byte chunk
        // l / 16 of its two. 128-byte-swizzled stages hold 128-byte rows in boxes of 64
        // columns: chunk c of row r is stored at chunk c xor (r mod 8); every
        // fragment starts at a row that is a multiple of 8, so a lane's swizzle is
        // lane mod 8, and the swizzled chunks are shared by both operands. The four
        // results are mma.sync's a0..a3 (A K-major) or a0, a2, a1, a3 (A M-major, .trans);
        // b0, b1 of two n8 tiles (B N-major, .trans) or b0, b0, b1, b1 (B K-major).
        let lane = self.lane;
        let c15 = self.i32(15);
        let c7 = self.i32(7);
        let c4 = self.i32(4);
        let l16 = self.bin("and", lane, c15);
        let l8 = self.bin("and", lane, c7);
        let lhi = self.bin("lshr", lane, c4);
        let ch0 = self.bin("xor", lhi, l8);
        let chunk0 = self.bin("shl", ch0, c4);
        // A K-major stage with BK = 32 has 64-byte rows, 64-byte swizzled: chunk c (of 4) of
        // row r is stored at c xor ((r / 2) mod 4), a lane's swizzle (lane / 2) mod 4.
        let (a_span, b_span) = (a.span(op)?, b.span(op)?);
        if (!majors.a_k && a_span != 128) || (!majors.b_k && b_span != 128) {
            return err(
                op,
                "mma.sync lowering expects MN-major stages 128-byte swizzled",
            );
        }
        let chunk64 = if a_span == 64 || b_span == 64 {
            let c1 = self.i32(1);
            let c3 = self.i32(3);
            let l2 = self.bin("lshr", lane, c1);
            let sw = self.bin("and", l2, c3);
            let x = self.bin("xor", lhi, sw);
            Some(self.bin("shl", x, c4))
        } else {
            None
        };
        let chunk_of = |span: u64| {
            if span == 64 {
                chunk64.expect("built")
            } else {
                chunk0
            }
        };
        let (a_row, a_chunk, b_row, b_chunk) = (l16, chunk_of(a_span), l16, chunk_of(b_span));
        // A warp's 64 rows of A (or columns of B) start 64 rows into a K-major stage, and
        // one 64-column box (BK rows, BK x 128 bytes) into an MN-major one.
        let c64 = self.i32(if majors.a_k { 64 } else { bk as i64 });
        let ar = self.bin("mul", wm, c64);
        let ar2 = self.bin("add", ar, a_row);
        let a_shift = self.i32(i64::from(a_span.trailing_zeros()));
        let a_lane = self.bin("shl", ar2, a_shift);
        let bbox = self.i32(if majors.b_k { 64 * b_span } else { bk * 128 } as i64);
        let bb = self.bin("mul", wn, bbox);
        let b_shift = self.i32(i64::from(b_span.trailing_zeros()));
        let brow = self.bin("shl", b_row, b_shift);
        let b_lane = self.bin("add", bb, brow);
        let asb = self.i32(a.stage_bytes as i64);
        let bsb = self.i32(b.stage_bytes as i64);
        let aso = self.bin("mul", st32, asb);
        let bso = self.bin("mul", stb, bsb);
        let aoffc = self.i32(a.offset as i64);
        let boffc = self.i32(b.offset as i64);
        let a0 = self.bin("add", aso, aoffc);
        let a_base = self.bin("add", a0, a_lane);
        let b0 = self.bin("add", bso, boffc);
        let b_base = self.bin("add", b0, b_lane);
        // The byte offset of fragment f (an m16 tile of A, a pair of n8 tiles of B) in k16
        // step kk of an operand's stage (rows of `span` bytes): K-major, rows 16 f and
        // chunks 2 (kk mod s) of box kk / s (rows x span bytes apart, s = span / 32);
        // MN-major, rows 16 kk and chunks 2 f.
        let frag = |g: &mut Self, x: &Frag<'c, 'm>, kk: i64, f: i64| {
            let per_box = (x.span / 32) as i64;
            let (rows, ch) = if x.k_major {
                (f, kk % per_box)
            } else {
                (kk, f)
            };
            let boxes = if x.k_major {
                (kk / per_box) * (x.rows * x.span) as i64
            } else {
                0
            };
            let c = if ch == 0 {
                x.chunk
            } else {
                let c = g.i32(32 * ch);
                g.bin("xor", x.chunk, c)
            };
            let o = if rows == 0 && boxes == 0 {
                x.base
            } else {
                let k = g.i32(rows * 16 * x.span as i64 + boxes);
                g.bin("add", x.base, k)
            };
            g.bin("add", o, c)
        };
        let af = Frag {
            base: a_base,
            chunk: a_chunk,
            k_major: majors.a_k,
            span: a_span,
            rows: a.shape[0],
        };
        let bf = Frag {
            base: b_base,
            chunk: b_chunk,
            k_major: majors.b_k,
            span: b_span,
            rows: b.shape[0],
        };
        let zero_acc = op.attr("zero_acc").and_then(TileAttr::as_bool) == Some(true);
        let f32t = self.w.ty(ScalarType::F32);
        let mut acc: Vec<Value<'c, 'm>> = if zero_acc {
            let z = self.w.float(0.0, ScalarType::F32);
            vec![z.v; NACC]
        } else {
            match self.vals.get(&parts.acc) {
                Some(Lv::Acc(regs)) if regs.len() == NACC => regs.to_vec(),
                _ => return err(op, "MMA accumulator is not lowered"),
            }
        };
        let i32t = self.w.ty(ScalarType::I32);
        // `nvvm.mma.sync` takes bf16 pairs as i32 and f16 pairs as vector<2xf16> (the PTX
        // `.b32` registers of both): f16 fragments are bitcast.
        let frag_ty = (elem == ScalarType::F16).then(|| {
            let h = self.w.ty(ScalarType::F16);
            self.w.vector_ty(2, h)
        });
        let ldm = self.w.struct_ty(&[i32t; 4]);
        let acc4 = self.w.struct_ty(&[f32t; 4]);
        let ldm_attrs = |w: &mut crate::nvvm::writer::Writer<'c, 'm>, layout: &str| {
            [
                ("eltType", w.attr("#nvvm.ld_st_matrix_elt_type<b16>")),
                ("layout", w.attr(&format!("#nvvm.mma_layout<{layout}>"))),
                ("num", IntegerAttribute::new(i32t, 4).into()),
                ("shape", w.attr("#nvvm.ld_st_matrix_shape<m = 8, n = 8>")),
            ]
        };
        // ldmatrix's "col" layout is `.trans`: for the MN-major operands.
        let a_attrs = ldm_attrs(&mut self.w, if majors.a_k { "row" } else { "col" });
        let b_attrs = ldm_attrs(&mut self.w, if majors.b_k { "row" } else { "col" });
        let mma_attrs = [
            ("layoutA", self.w.attr("#nvvm.mma_layout<row>")),
            ("layoutB", self.w.attr("#nvvm.mma_layout<col>")),
            (
                "multiplicandAPtxType",
                self.w.attr(&format!("#nvvm.mma_type<{et}>")),
            ),
            (
                "multiplicandBPtxType",
                self.w.attr(&format!("#nvvm.mma_type<{et}>")),
            ),
            (
                "operandSegmentSizes",
                DenseI32ArrayAttribute::new(self.w.ctx, &[4, 2, 4]).into(),
            ),
            ("shape", self.w.attr("#nvvm.shape<m = 16, n = 8, k = 16>")),
        ];
        for kk in 0..(bk / 16) as i64 {
            // One ldmatrix x4 of fragment f, its registers read out in `order` (an M-major A's
            // middle two swap: see the lane order above).
            let load = |g: &mut Self, x: &Frag<'c, 'm>, attrs, swap: bool, f: i64| {
                let o = frag(g, x, kk, f);
                let p = g.gep3(o);
                let r = g.w.op1("nvvm.ldmatrix", &[p], ldm, attrs);
                let order = if swap { [0, 2, 1, 3] } else { [0, 1, 2, 3] };
                order.map(|i: usize| {
                    let v = g.w.extract(r, i, i32t);
                    g.frag_operand(v, frag_ty)
                })
            };
            let afrag: Vec<[Value<'c, 'm>; 4]> = (0..4i64)
                .map(|mi| load(self, &af, &a_attrs, !majors.a_k, mi))
                .collect();
            let mut bfrag: Vec<(Value<'c, 'm>, Value<'c, 'm>)> = vec![];
            for nj in 0..4i64 {
                // b0, b1 of two n8 tiles; a K-major B gives b0, b0, b1, b1.
                let v = load(self, &bf, &b_attrs, false, nj);
                if majors.b_k {
                    bfrag.extend([(v[0], v[2]), (v[1], v[3])]);
                } else {
                    bfrag.extend([(v[0], v[1]), (v[2], v[3])]);
                }
            }
            for (mi, af) in afrag.iter().enumerate().take(4) {
                for (ni, &(b0, b1)) in bfrag.iter().enumerate().take(8) {
                    let base = 4 * (8 * mi + ni);
                    let mut operands = af.to_vec();
                    operands.extend([b0, b1]);
                    operands.extend_from_slice(&acc[base..base + 4]);
                    let d = self.w.op1("nvvm.mma.sync", &operands, acc4, &mma_attrs);
                    for e in 0..4 {
                        acc[base + e] = self.w.extract(d, e, f32t);
                    }
                }
            }
        }
        self.vals
            .insert(op.results[0], Lv::Acc(std::rc::Rc::new(acc)));
        Ok(())
    }

    /// An ldmatrix register as an `nvvm.mma.sync` multiplicand: as is (i32), or bitcast to
    /// `ty` (vector<2xf16> for f16).
    fn frag_operand(
        &mut self,
        x: Value<'c, 'm>,
        ty: Option<melior::ir::Type<'c>>,
    ) -> Value<'c, 'm> {
        match ty {
            Some(t) => self.w.cast("llvm.bitcast", x, t),
            None => x,
        }
    }
}
