//! Warp-level MMA for targets without wgmma (sm_90, sm_100): `tile.mma {kind =
//! "mma_sync"}` as one k stage (64, 128 or 256 bytes of K) of 32-byte steps (k16 of
//! bf16/f16, k32 of e4m3/e5m2, k8 of tf32); per step each
//! consumer warp loads its A fragments (4 m16 tiles, `nvvm.ldmatrix` x4) and B fragments (8
//! n8 tiles, 4 x4 loads), with `.trans` for the MN-major operands, from the swizzled stage
//! (128-byte, or 64-byte for a K-major operand with BK = 32), and issues 32
//! `nvvm.mma.sync` m16n8k16 / m16n8k8 (tf32), or inline `mma.sync` m16n8k32 for fp8
//! (row.col, f32 accumulators). A lane's 128 accumulator
//! registers are one SSA value each.

use super::wgmma::{mma_parts, mma_type_name, operand_majors};
use super::{err, Gemm, Lv, R};
use crate::nvvm::writer::V;
use melior::ir::{attribute::IntegerAttribute, Value};
use tilec_dialect::{Attribute as TileAttr, Operation, ScalarType};

/// Accumulator registers per lane: a 64 x 64 warp tile of m16n8 tiles.
const NACC: usize = 128;

/// What `fp8_steps` reads: the stage-0 byte offsets of A and B in this stage (before the
/// warp's and lane's rows), the warp's M and N index, the stages' swizzle spans and rows,
/// the element types, and the ldmatrix and MMA types and attributes.
struct Fp8Step<'c, 'm, 'a> {
    a_base: V<'c, 'm>,
    b_base: V<'c, 'm>,
    wm: V<'c, 'm>,
    wn: V<'c, 'm>,
    a_span: u64,
    b_span: u64,
    a_rows: u64,
    b_rows: u64,
    types: (ScalarType, ScalarType),
    ldm: melior::ir::Type<'c>,
    ldm_attrs: [(&'static str, melior::ir::Attribute<'c>); 4],
    acc4: melior::ir::Type<'c>,
    mma_attrs: &'a [(&'static str, melior::ir::Attribute<'c>)],
}

/// The MLIR type attribute of an fp8 element type (`f8E4M3FN`, `f8E5M2`), as
/// `nvvm.convert.f8x2.to.f16x2` takes it.
fn fp8_attr<'c>(
    w: &mut crate::nvvm::writer::Writer<'c, '_>,
    e: ScalarType,
) -> melior::ir::Attribute<'c> {
    w.attr(if e == ScalarType::E4M3 {
        "f8E4M3FN"
    } else {
        "f8E5M2"
    })
}

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
        let esize = elem.size_bytes();
        let (a_want, b_want) = (
            if majors.a_k { [128, bk] } else { [bk, 128] },
            if majors.b_k { [256, bk] } else { [bk, 256] },
        );
        let (eta, etb) = (mma_type_name(op, elem)?, mma_type_name(op, b.elem)?);
        if !matches!(bk * esize, 64 | 128 | 256)
            || a.shape != a_want
            || b.shape != b_want
            || b.elem.size_bytes() != esize
            || (esize != 2 && !(majors.a_k && majors.b_k))
        {
            let dims = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
            return err(
                op,
                format!(
                    "mma.sync lowering handles a 128 x BK M x K tile of A and a BK x 256 K x N \
                     tile of B, BK of 64, 128 or 256 bytes, K-major unless 16-bit (2 x 4 warps \
                     of 64 x 64): for these operand majors, stages of {} and {}; found {} and {}",
                    dims(&a_want),
                    dims(&b_want),
                    dims(&a.shape),
                    dims(&b.shape)
                ),
            );
        }
        let mma_k = tilec_dialect::mma_k(elem);
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
        // fp8: see `fp8_steps`; the MMAs are f16 m16n8k16.
        let fp8 = elem.is_fp8();
        let (mta, mtb, mk) = if fp8 {
            ("f16", "f16", 16)
        } else {
            (eta, etb, mma_k)
        };
        let mma_attrs = self.w.mma_sync_attrs(mta, mtb, mk);
        // Each step takes 32 bytes of K: its fragments are the same bytes for every element
        // type (the PTX ISA's m16n8k16 16-bit, m16n8k32 fp8 and m16n8k8 tf32 layouts of a
        // row-major A and a column-major B agree byte for byte), so ldmatrix serves all.
        if fp8 {
            let fp = Fp8Step {
                a_base: a0,
                b_base: b0,
                wm,
                wn,
                a_span,
                b_span,
                a_rows: a.shape[0],
                b_rows: b.shape[0],
                types: (a.elem, b.elem),
                ldm,
                ldm_attrs: a_attrs,
                acc4,
                mma_attrs: &mma_attrs,
            };
            self.fp8_steps(&fp, bk / mma_k, &mut acc);
        } else {
            for kk in 0..(bk / mma_k) as i64 {
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
        }
        self.vals
            .insert(op.results[0], Lv::Acc(std::rc::Rc::new(acc)));
        Ok(())
    }

    /// The MMAs of `steps` 32-byte K steps of K-major fp8 stages. Each step is two 16-byte
    /// chunks; per chunk, one ldmatrix x4 reads 32 rows (lane l gives row l's address) of
    /// two m16 tiles of A or four n8 tiles of B, so a lane's register holds 4 fp8 of K
    /// bytes 4t..4t+4 (t = lane mod 4) of its row g (lane / 4) or g + 8. Widened to f16x2
    /// (exact: every e4m3 and e5m2 value is an f16), the low pair is the f16 m16n8k16's a0
    /// (a1 for row g + 8) or b0 and the high pair its a2 (a3) or b1: f16 K index 2t + j is
    /// fp8 K 4t + j and 2t + 8 + j is 4t + 2 + j, the same permutation of the chunk's 16 K
    /// in A and B, so each f16 MMA sums the chunk exactly (exact products, f32 sums).
    /// Registers live per chunk: 32 widened fragments, as for 16-bit operands. (The fp8
    /// m16n8k32 `mma.sync` is emulated by ptxas on sm_90, F2FP + HMMA + FADD, and spilled
    /// about 1.2 KB in a 128x256 tile; MLIR 22's `nvvm.mma.sync` has no dense fp8 form.)
    fn fp8_steps(&mut self, s: &Fp8Step<'c, 'm, '_>, steps: u64, acc: &mut [Value<'c, 'm>]) {
        let i32t = self.w.ty(ScalarType::I32);
        let f32t = self.w.ty(ScalarType::F32);
        let lane = self.lane;
        // The lane's swizzled-chunk base: chunk c of row r is stored at c xor (r mod 8)
        // (128-byte span) or c xor ((r / 2) mod 4) (64-byte span); r mod 8 = lane mod 8.
        let swz = |g: &mut Self, span: u64| {
            let sw = if span == 64 {
                let c1 = g.i32(1);
                let c3 = g.i32(3);
                let l2 = g.bin("lshr", lane, c1);
                g.bin("and", l2, c3)
            } else {
                let c7 = g.i32(7);
                g.bin("and", lane, c7)
            };
            let c4 = g.i32(4);
            g.bin("shl", sw, c4)
        };
        let (a_sw, b_sw) = (swz(self, s.a_span), swz(self, s.b_span));
        // Row (lane) addresses: a warp's 64 rows of A and of B start 64 rows in.
        let base = |g: &mut Self, b: V<'c, 'm>, w: V<'c, 'm>, span: u64| {
            let c64 = g.i32(64);
            let r = g.bin("mul", w, c64);
            let r2 = g.bin("add", r, lane);
            let sh = g.i32(i64::from(span.trailing_zeros()));
            let o = g.bin("shl", r2, sh);
            g.bin("add", b, o)
        };
        let (a_lane, b_lane) = (
            base(self, s.a_base, s.wm, s.a_span),
            base(self, s.b_base, s.wn, s.b_span),
        );
        let (a8, b8) = (
            fp8_attr(&mut self.w, s.types.0),
            fp8_attr(&mut self.w, s.types.1),
        );
        // ldmatrix x4 of 32 rows from row `rows`, 16-byte chunk `ch` of a stage of
        // `nrows` rows of `span` bytes (chunks past the span are in the next box).
        let load = |g: &mut Self, lane_addr: V<'c, 'm>, sw: V<'c, 'm>, span, nrows, rows, ch| {
            let per_box = (span / 16) as i64;
            let off = rows * span as i64 + (ch / per_box) * (nrows * span) as i64;
            let o = if off == 0 {
                lane_addr
            } else {
                let c = g.i32(off);
                g.bin("add", lane_addr, c)
            };
            let cc = g.i32(16 * (ch % per_box));
            let chunk = g.bin("xor", sw, cc);
            let addr = g.bin("add", o, chunk);
            let p = g.gep3(addr);
            let r = g.w.op1("nvvm.ldmatrix", &[p], s.ldm, &s.ldm_attrs);
            [0, 1, 2, 3].map(|i| g.w.extract(r, i, i32t))
        };
        for ch in 0..2 * steps as i64 {
            // B: n8 tiles 4q..4q+4, (b0, b1) each.
            let mut bw = vec![];
            for q in 0..2 {
                let raw = load(self, b_lane, b_sw, s.b_span, s.b_rows, 32 * q, ch);
                for r in raw {
                    bw.push((self.widen_fp8(r, 0, b8), self.widen_fp8(r, 1, b8)));
                }
            }
            for p in 0..2i64 {
                let raw = load(self, a_lane, a_sw, s.a_span, s.a_rows, 32 * p, ch);
                for t in 0..2usize {
                    let (r0, r1) = (raw[2 * t], raw[2 * t + 1]);
                    let af = [
                        self.widen_fp8(r0, 0, a8),
                        self.widen_fp8(r1, 0, a8),
                        self.widen_fp8(r0, 1, a8),
                        self.widen_fp8(r1, 1, a8),
                    ];
                    let mi = 2 * p as usize + t;
                    for (ni, &(b0, b1)) in bw.iter().enumerate() {
                        let at = 4 * (8 * mi + ni);
                        let mut operands = af.to_vec();
                        operands.extend([b0, b1]);
                        operands.extend_from_slice(&acc[at..at + 4]);
                        let d = self.w.op1("nvvm.mma.sync", &operands, s.acc4, s.mma_attrs);
                        for e in 0..4 {
                            acc[at + e] = self.w.extract(d, e, f32t);
                        }
                    }
                }
            }
        }
    }

    /// Half `h` (0: bits 0..16, 1: bits 16..32) of an ldmatrix register of two fp8 pairs,
    /// widened to f16x2 (`nvvm.convert.f8x2.to.f16x2`, PTX `cvt.rn.f16x2.e4m3x2`; `ty` is
    /// the fp8 type attribute, `f8E4M3FN` or `f8E5M2`).
    fn widen_fp8(
        &mut self,
        r: Value<'c, 'm>,
        h: usize,
        ty: melior::ir::Attribute<'c>,
    ) -> Value<'c, 'm> {
        let i16t = self.w.int_ty(16);
        let src = if h == 0 {
            r
        } else {
            let c16 = self.i32(16);
            let rv = V {
                v: r,
                t: ScalarType::I32,
            };
            self.bin("lshr", rv, c16).v
        };
        let lo = self.w.cast("llvm.trunc", src, i16t);
        let i8t = self.w.int_ty(8);
        let v2i8 = self.w.vector_ty(2, i8t);
        let pair = self.w.cast("llvm.bitcast", lo, v2i8);
        let f16t = self.w.ty(ScalarType::F16);
        let v2f16 = self.w.vector_ty(2, f16t);
        self.w.op1(
            "nvvm.convert.f8x2.to.f16x2",
            &[pair],
            v2f16,
            &[("srcType", ty)],
        )
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
