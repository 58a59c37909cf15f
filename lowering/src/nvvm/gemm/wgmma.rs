//! Hopper's warpgroup MMA: `tile.mma {kind = "wgmma"}` as `wgmma.mma_async` m64nNk16
//! (bf16, f16), k32 (e4m3, e5m2) or k8 (tf32), one per 32 bytes of the K stage, in one
//! inline-asm statement, with shared-memory
//! descriptors (128-byte swizzle; A K- or M-major, B N- or K-major, by the transpose
//! immediates; `zero_acc` → `scale-d = 0` on the first), and
//! `tile.wait_group`.
//!
//! The wait is inline asm on purpose: every guarded accumulator register goes through it
//! as a tied operand (`nvvm.wgmma.wait.group.sync.aligned` has no operands), so LLVM cannot
//! schedule a use of the accumulator above the wait.

use super::{err, AccInfo, Gemm, Lv, R};
use crate::nvvm::writer::V;
use melior::ir::Value;
use std::rc::Rc;
use tilec_dialect::{Attribute as TileAttr, Diagnostic, Operation, ScalarType};

/// The operands of a `tile.mma` (a stage shared by both rings, or one each).
pub(super) fn mma_parts(op: &Operation) -> R<tilec_dialect::ops::MmaOperands> {
    tilec_dialect::ops::mma_operands(op).ok_or_else(|| {
        Diagnostic::error(
            op.loc.clone(),
            "'tile.mma' takes (a, b, stage, acc) or (a, b, stage_a, stage_b, acc)",
        )
    })
}

/// The PTX type of an MMA operand of `elem`: `bf16`, `f16`, `e4m3`, `e5m2`, or `tf32` for
/// f32 data (the op's `precision = "tf32"`, which the verifier requires of f32 rings).
pub(super) fn mma_type_name(op: &Operation, elem: ScalarType) -> R<&'static str> {
    match elem {
        ScalarType::BF16 => Ok("bf16"),
        ScalarType::F16 => Ok("f16"),
        ScalarType::E4M3 => Ok("e4m3"),
        ScalarType::E5M2 => Ok("e5m2"),
        ScalarType::F32 if op.str_attr("precision") == Some("tf32") => Ok("tf32"),
        other => err(
            op,
            format!("convert-tile-to-nvvm: an MMA of {other} operands is not lowered"),
        ),
    }
}

/// Which operands of a `tile.mma` are K-major in shared memory: A by default (`a_major =
/// "k"`; `"m"`: stored K×M), B when `b_major = "k"` (default `"n"`: stored K×N).
#[derive(Clone, Copy, Debug)]
pub(super) struct Majors {
    pub a_k: bool,
    pub b_k: bool,
}

/// The operand majors of a `tile.mma` (`tilec_dialect::ops::mma_a_k_major`, `_b_`).
pub(super) fn operand_majors(op: &Operation) -> R<Majors> {
    let at = |r: Result<bool, String>| r.map_err(|e| Diagnostic::error(op.loc.clone(), e));
    Ok(Majors {
        a_k: at(tilec_dialect::ops::mma_a_k_major(op))?,
        b_k: at(tilec_dialect::ops::mma_b_k_major(op))?,
    })
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// The stages an MMA reads A and B at, as i32 (the same value when it names one).
    pub(super) fn stages32(
        &mut self,
        op: &Operation,
        parts: &tilec_dialect::ops::MmaOperands,
    ) -> R<(V<'c, 'm>, V<'c, 'm>)> {
        let st = self.scalar(op, parts.stage_a)?;
        let st32 = self.trunc32(st);
        let stb = if parts.stage_b == parts.stage_a {
            st32
        } else {
            let s = self.scalar(op, parts.stage_b)?;
            self.trunc32(s)
        };
        Ok((st32, stb))
    }

    /// Records the kernel's accumulator shape at its first MMA; later MMAs must match.
    pub(super) fn set_acc(&mut self, op: &Operation, regs: usize) -> R<()> {
        match &self.acc {
            None => {
                self.acc = Some(AccInfo {
                    regs,
                    shape: self.m.ty(op.results[0]).tile_shape().map(<[u64]>::to_vec),
                    transposed: false,
                });
                Ok(())
            }
            Some(a) if a.regs != regs => {
                err(op, "all MMAs of a kernel must share one accumulator shape")
            }
            Some(_) => Ok(()),
        }
    }

    pub(super) fn lower_wgmma(&mut self, op: &Operation) -> R<()> {
        let parts = mma_parts(op)?;
        let (Some(Lv::Ring(a)), Some(Lv::Ring(b))) = (
            self.vals.get(&op.operands[0]).cloned(),
            self.vals.get(&op.operands[1]).cloned(),
        ) else {
            return err(op, "MMA operands are not rings");
        };
        let majors = operand_majors(op)?;
        let (a_k, n) = (
            if majors.a_k { a.shape[1] } else { a.shape[0] },
            if majors.b_k { b.shape[0] } else { b.shape[1] },
        );
        let b_kdim = if majors.b_k { b.shape[1] } else { b.shape[0] };
        let (eta, etb) = (mma_type_name(op, a.elem)?, mma_type_name(op, b.elem)?);
        let esize = a.elem.size_bytes();
        if !matches!(a_k * esize, 64 | 128 | 256)
            || b_kdim != a_k
            || b.elem.size_bytes() != esize
            || (esize != 2 && !(majors.a_k && majors.b_k))
        {
            return err(
                op,
                "wgmma lowering expects K stages of 64, 128 or 256 bytes, the same for A and B, \
                 and K-major operands unless they are 16-bit",
            );
        }
        let bk = a_k;
        let mma_k = tilec_dialect::mma_k(a.elem);
        self.set_acc(op, (n / 2) as usize)?;
        let cwg = self.cwg.ok_or_else(|| {
            Diagnostic::error(
                op.loc.clone(),
                "'tile.mma' outside the consumer region of 'tile.warp_specialize'",
            )
        })?;
        // Descriptors: layout (1 = 128-byte, 2 = 64-byte swizzle) << 62 | (SBO >> 4) << 32 |
        // (LBO >> 4) << 16 | addr >> 4. A stage holds rows of one swizzle span (128 bytes: 64
        // 16-bit elements; 64 bytes for a K-major operand with BK = 32; 64 or 32 for a B
        // stored K×N with N not a multiple of 64) in boxes of that many bytes, swizzled in
        // atoms of 8 rows. A consumer warpgroup's 64 rows of A start 64 rows (K-major) or one
        // box (M-major) in.
        let (a_span, b_span) = (a.span(op)?, b.span(op)?);
        // K-major rows are 64 or 128 bytes (BK 32, or 64 and more); an M-major A has at
        // least one 128-byte box per warpgroup; a B stored K×N may be 32-, 64- or 128-byte.
        if (majors.a_k && a_span < 64)
            || (majors.b_k && b_span < 64)
            || (!majors.a_k && a_span != 128)
        {
            return err(
                op,
                "wgmma lowering expects K-major stages 64- or 128-byte swizzled and an M-major A \
                 128-byte swizzled",
            );
        }
        let (st32, stb) = self.stages32(op, &parts)?;
        let wg_rows = self.i32(if majors.a_k { 64 * a_span } else { bk * a_span } as i64);
        let a_wg = self.bin("mul", cwg, wg_rows);
        let a_sbc = self.i32(a.stage_bytes as i64);
        let a_so = self.bin("mul", st32, a_sbc);
        let a_base = self.i32(a.offset as i64);
        let a1 = self.bin("add", a_so, a_base);
        let a2 = self.bin("add", a1, a_wg);
        let a_addr = self.bin("add", self.smem_i32, a2);
        let b_sbc = self.i32(b.stage_bytes as i64);
        let b_so = self.bin("mul", stb, b_sbc);
        let b_base = self.i32(b.offset as i64);
        let b1 = self.bin("add", b_so, b_base);
        let b_addr = self.bin("add", self.smem_i32, b1);
        let a_lo64 = self.w.desc_start(a_addr);
        let b_lo64 = self.w.desc_start(b_addr);
        // (layout, LBO, SBO) of a stage of span `sp`: K-major, SBO = 8 rows; MN-major (boxes
        // of sp bytes of M or N, BK rows each), LBO = one box, SBO = 8 rows. And the byte
        // offset of k16 step kk in a stage of `rows` rows: K-major, 32 bytes along the row,
        // sp / 32 steps per box; MN-major, 16 rows.
        let layout = |sp: u64| match sp {
            128 => 1u64,
            64 => 2,
            _ => 3,
        };
        let k_major = |sp: u64| (layout(sp), 16u64, 8 * sp);
        let mn_major = |sp: u64| (layout(sp), bk * sp, 8 * sp);
        // Every step takes MMA_K_BYTES (32) of K: k16 of 16-bit, k32 of fp8, k8 of tf32.
        let step = |k_major: bool, sp: u64, rows: u64, kk: i64| -> i64 {
            let per_box = (sp / 32) as i64;
            if k_major {
                (kk / per_box) * (rows * sp) as i64 + (kk % per_box) * 32
            } else {
                kk * 16 * sp as i64
            }
        };
        let (al, a_lbo, a_sbo) = if majors.a_k {
            k_major(a_span)
        } else {
            mn_major(a_span)
        };
        let (bl, b_lbo, b_sbo) = if majors.b_k {
            k_major(b_span)
        } else {
            mn_major(b_span)
        };
        let hi = |layout: u64, lbo: u64, sbo: u64| {
            ((layout << 62) | ((sbo >> 4) << 32) | ((lbo >> 4) << 16)) as i64
        };
        let ahi = self.i64(hi(al, a_lbo, a_sbo));
        let bhi = self.i64(hi(bl, b_lbo, b_sbo));
        let da0 = self.bin("or", a_lo64, ahi);
        let db0 = self.bin("or", b_lo64, bhi);
        let zero_acc = op.attr("zero_acc").and_then(TileAttr::as_bool) == Some(true);
        let acc_ty = self.acc_ty();
        // One asm statement for the stage's BK / mma_k steps: the operands are the tied
        // accumulator registers (none with zero_acc: the first step does not read them)
        // and two descriptors per step. LLVM 22 has no wgmma intrinsic, and MLIR lowers each
        // `nvvm.wgmma.mma_async` to inline PTX of its own; four such statements cost LLVM's
        // instruction selection and register coalescing about 2.5 ms each (256 operands),
        // a quarter of gemm_bf16's code generation (docs/performance.md).
        let regs = n as usize / 2;
        let steps = (bk / mma_k) as usize;
        let mut descs = vec![];
        for kk in 0..steps as i64 {
            if kk == 0 {
                descs.push(da0.v);
                descs.push(db0.v);
            } else {
                let ca = self.i64(step(majors.a_k, a_span, a.shape[0], kk) >> 4);
                let cb = self.i64(step(majors.b_k, b_span, b.shape[0], kk) >> 4);
                descs.push(self.bin("add", da0, ca).v);
                descs.push(self.bin("add", db0, cb).v);
            }
        }
        let tied = !zero_acc;
        let mut operands = vec![];
        if tied {
            match self.vals.get(&parts.acc) {
                Some(Lv::Acc(v)) if v.len() == regs => operands.extend(v.iter().copied()),
                _ => {
                    return err(
                        op,
                        "MMA accumulator is not a wgmma accumulator (start a chain with zero_acc)",
                    )
                }
            }
        }
        let first_desc = if tied { 2 * regs } else { regs };
        operands.extend(descs);
        let d_list = (0..regs)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        // imm-trans-a / imm-trans-b: 1 for an MN-major operand; only the 16-bit forms have
        // them (PTX ISA, wgmma.mma_async: tf32 and fp8 operands are K-major).
        let trans = if esize == 2 {
            format!(", {}, {}", u8::from(!majors.a_k), u8::from(!majors.b_k))
        } else {
            String::new()
        };
        let mut asm = String::from("{\n.reg .pred p;\n");
        for kk in 0..steps {
            let scale_d = u8::from(!(zero_acc && kk == 0));
            let (da, db) = (first_desc + 2 * kk, first_desc + 2 * kk + 1);
            asm.push_str(&format!(
                "setp.ne.b32 p, {scale_d}, 0;\n\
                 wgmma.mma_async.sync.aligned.m64n{n}k{mma_k}.f32.{eta}.{etb} {{{d_list}}}, \
                 ${da}, ${db}, p, 1, 1{trans};\n"
            ));
        }
        asm.push('}');
        let cons: Vec<String> = std::iter::repeat_n("=f".to_string(), regs)
            .chain((0..regs).filter(|_| tied).map(|i| i.to_string()))
            .chain(std::iter::repeat_n("l".to_string(), 2 * steps))
            .collect();
        let acc = self
            .w
            .inline_asm(&asm, &cons.join(","), &operands, Some(acc_ty), true)
            .expect("a typed result");
        let f32t = self.w.ty(ScalarType::F32);
        let regs = self.w.unpack(acc, regs, f32t);
        self.vals.insert(op.results[0], Lv::Acc(Rc::new(regs)));
        Ok(())
    }

    /// `wgmma.wait_group.sync.aligned N`. Every guarded accumulator's registers go through
    /// one asm statement as tied operands, so no use of any of them can be scheduled above
    /// the wait. Other operands (a `tile.zeros` that shares a join with an accumulator)
    /// pass through: no group writes them.
    pub(super) fn lower_wait(&mut self, op: &Operation) -> R<()> {
        let n = op.int_attr("pending").unwrap_or(0);
        let mut accs = vec![];
        let mut acc_results = vec![];
        for (&a, &res) in op.operands.iter().zip(&op.results) {
            match self.vals.get(&a).cloned() {
                Some(Lv::Acc(acc)) => {
                    accs.push(acc);
                    acc_results.push(res);
                }
                Some(other) => {
                    self.vals.insert(res, other);
                }
                None => return err(op, "wait_group operand is not lowered"),
            }
        }
        let f32t = self.w.ty(ScalarType::F32);
        let tied: Vec<(Value<'c, 'm>, melior::ir::Type<'c>, &str)> = accs
            .iter()
            .flat_map(|a| a.iter().map(|&v| (v, f32t, "f")))
            .collect();
        let mut regs = self.w.wgmma_wait_group(n, &tied, &[]).into_iter();
        for (acc, &res) in accs.iter().zip(&acc_results) {
            let mine: Vec<Value<'c, 'm>> = regs.by_ref().take(acc.len()).collect();
            self.vals.insert(res, Lv::Acc(Rc::new(mine)));
        }
        Ok(())
    }
}
