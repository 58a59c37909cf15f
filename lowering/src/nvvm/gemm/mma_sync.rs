//! Warp-level MMA for targets without wgmma (sm_90, sm_100): `tile.mma {kind =
//! "mma_sync"}` as one k stage (64) of 4 k16 steps; per step each consumer warp loads its A
//! fragments (4 m16 tiles, `nvvm.ldmatrix` x4) and B fragments (8 n8 tiles, x4 transposed)
//! from the 128-byte-swizzled stage and issues 32 `nvvm.mma.sync` m16n8k16 (row.col, f32
//! accumulators). The 128 accumulator registers of a lane travel as one struct (LLVM's
//! SROA splits it).

use super::wgmma::mma_parts;
use super::{err, Gemm, Lv, R};
use melior::ir::{
    attribute::{DenseI32ArrayAttribute, IntegerAttribute},
    Value,
};
use tilec_dialect::{Attribute as TileAttr, Operation, ScalarType};

/// Accumulator registers per lane: a 64 x 64 warp tile of m16n8 tiles.
const NACC: usize = 128;

impl<'c, 'm> Gemm<'c, 'm, '_> {
    pub(super) fn lower_mma_sync(&mut self, op: &Operation) -> R<()> {
        let (Some(Lv::Ring(a)), Some(Lv::Ring(b))) = (
            self.vals.get(&op.operands[0]).cloned(),
            self.vals.get(&op.operands[1]).cloned(),
        ) else {
            return err(op, "MMA operands are not rings");
        };
        let elem = a.elem;
        if a.shape != [128, 64]
            || b.shape != [64, 256]
            || elem != ScalarType::BF16 && elem != ScalarType::F16
        {
            return err(
                op,
                format!(
                    "mma.sync lowering handles 128x64 and 64x256 bf16/f16 stages (2 x 4 warps of \
                     64 x 64), found {} and {}",
                    a.shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join("x"),
                    b.shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join("x")
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
        // Per-lane ldmatrix addressing: lane gives the row address of 8x8 matrix lane/8:
        // row = lane mod 16, 16-byte chunk = lane / 16 (+ 2 per k16 step), swizzled chunk =
        // chunk xor (row mod 8) = chunk xor (lane mod 8).
        let lane = self.lane;
        let c15 = self.i32(15);
        let c7 = self.i32(7);
        let c4 = self.i32(4);
        let l16 = self.bin("and", lane, c15);
        let l8 = self.bin("and", lane, c7);
        let lhi = self.bin("lshr", lane, c4);
        let ch0 = self.bin("xor", lhi, l8);
        let chunk0 = self.bin("shl", ch0, c4);
        let c64 = self.i32(64);
        let ar = self.bin("mul", wm, c64);
        let ar2 = self.bin("add", ar, l16);
        let a_lane = self.bin("shl", ar2, c7);
        let bbox = self.i32(8192);
        let bb = self.bin("mul", wn, bbox);
        let brow = self.bin("shl", l16, c7);
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
        let a_attrs = ldm_attrs(&mut self.w, "row");
        let b_attrs = ldm_attrs(&mut self.w, "col");
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
        for kk in 0..4i64 {
            let ch = if kk == 0 {
                chunk0
            } else {
                let c = self.i32(32 * kk);
                self.bin("xor", chunk0, c)
            };
            let mut afrag = vec![];
            for mi in 0..4i64 {
                let o = if mi == 0 {
                    a_base
                } else {
                    let c = self.i32(mi * 16 * 128);
                    self.bin("add", a_base, c)
                };
                let o = self.bin("add", o, ch);
                let p = self.gep3(o);
                let r = self.w.op1("nvvm.ldmatrix", &[p], ldm, &a_attrs);
                let q: Vec<Value<'c, 'm>> = (0..4).map(|i| self.w.extract(r, i, i32t)).collect();
                afrag.push(q);
            }
            let mut bfrag: Vec<(Value<'c, 'm>, Value<'c, 'm>)> = vec![];
            for nj in 0..4i64 {
                let o = if kk == 0 {
                    b_base
                } else {
                    let c = self.i32(kk * 16 * 128);
                    self.bin("add", b_base, c)
                };
                let chb = if nj == 0 {
                    chunk0
                } else {
                    let c = self.i32(32 * nj);
                    self.bin("xor", chunk0, c)
                };
                let o = self.bin("add", o, chb);
                let p = self.gep3(o);
                let r = self.w.op1("nvvm.ldmatrix", &[p], ldm, &b_attrs);
                let v: Vec<Value<'c, 'm>> = (0..4).map(|i| self.w.extract(r, i, i32t)).collect();
                bfrag.push((v[0], v[1]));
                bfrag.push((v[2], v[3]));
            }
            for (mi, af) in afrag.iter().enumerate().take(4) {
                for (ni, &(b0, b1)) in bfrag.iter().enumerate().take(8) {
                    let base = 4 * (8 * mi + ni);
                    let mut operands = af.clone();
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
}
