//! Elementwise math and element type conversions, per register.
//!
//! f16 and bf16 operands are widened to f32, computed in f32 and rounded back to nearest
//! even, as the reference interpreter does. The precision of each op, for f32 results
//! (a bf16/f16 result adds the final rounding, half an ulp of its type):
//!
//! | op | PTX | bound |
//! | --- | --- | --- |
//! | `add`, `sub`, `mul`, `div`, `sqrt` | `.rn` forms, `div.rn`, `sqrt.rn` | correctly rounded |
//! | `max`, `min`, `neg`, `abs`, `relu` | `max/min/neg/abs` | exact |
//! | `rsqrt` | `rcp.rn(sqrt.rn(x))` | 1.5 ulp (two roundings; 1.48 measured) |
//! | `exp2` | `ex2.approx.f32` | 2.1 ulp (2.05 measured) |
//! | `exp` | `ex2.approx.f32` of `x·log2(e)`, rounding corrected (below) | 2.6 ulp (2.54) |
//! | `tanh` | odd series (\|x\| < 0.3); ±(1 − 2/(2^(2\|x\|·log2 e) + 1)) | 4 ulp (3.52) |
//!
//! `exp` computes `t = x·L` (L = log2(e) rounded to f32), the exact remainder
//! `δ = fma(x, L, −t) + x·L_lo` (L_lo = log2(e) − L), and `2^t · (1 + δ·ln 2)`: without the
//! correction, the rounding of `x·L` alone would cost up to |x|·2⁻²⁴ relative (about 45 ulp
//! at x = 88). Where 2^t or δ is not finite (x infinite or NaN, 2^t overflowing, x·L past
//! f32's range) the correction is skipped.
//!
//! The measured figures are the largest errors the H200 showed over 2²² random inputs in
//! each of several ranges plus the special values (`tools/gpu/accuracy.py`;
//! docs/performance.md, "Math accuracy"); the bounds round them up. `tanh`'s largest
//! errors sit just above |x| = 0.3, where the cancellation in 1 − q multiplies q's error
//! by about 2.4; `sqrt` was correctly rounded (0.50 ulp) in every range.
//!
//! In a kernel with `ftz = true` the function carries LLVM's `denormal-fp-math-f32 =
//! preserve-sign`, so NVPTX selects the `.ftz` forms: subnormal f32 inputs and results
//! become zeros of the same sign, and the bounds above hold for normal results only.
//! `exp2` is then one `ex2.approx.ftz.f32`, without the subnormal fix-up ptxas adds to
//! `ex2.approx.f32` (a compare and two multiplies).
//!
//! Conversions: between float types through f32 (f16 → bf16 rounds once, at the end);
//! integer → float as the interpreter does (to f32, then rounded to the result type;
//! `i1` unsigned); between integers by sign extension or truncation (`i1` zero-extends).

use super::plain::{err, Lowerer, Lv, Tile, R};
use super::writer::{Writer, V};
use melior::ir::Value;
use tilec_dialect::{OpKind, Operation, ScalarType};

/// `log2(e)` split into an f32 head and the rest.
const LOG2E_HI: f64 = 1.442_695_021_629_333_5;
const LOG2E_LO: f64 = std::f64::consts::LOG2_E - LOG2E_HI;

/// One elementwise op on f32 values, with the precision the module docs state: `add`,
/// `sub`, `mul`, `div`, `max`, `min`, `neg`, `abs`, `relu`, `sqrt`, `rsqrt`, `exp2`, `exp`
/// and `tanh` (callers refuse `log` before MLIR is built). Both lowerings use it: the
/// plain launch per register, the GEMM epilogue per accumulator register.
pub(crate) fn float_op<'c, 'm>(
    w: &mut Writer<'c, 'm>,
    kind: OpKind,
    xs: &[V<'c, 'm>],
) -> V<'c, 'm> {
    match kind {
        OpKind::Add => w.fop("llvm.fadd", xs),
        OpKind::Sub => w.fop("llvm.fsub", xs),
        OpKind::Mul => w.fop("llvm.fmul", xs),
        OpKind::Div => w.fop("llvm.fdiv", xs),
        OpKind::Max => w.fop("llvm.intr.maxnum", xs),
        OpKind::Min => w.fop("llvm.intr.minnum", xs),
        OpKind::Neg => w.fop("llvm.fneg", xs),
        OpKind::Abs => w.fop("llvm.intr.fabs", xs),
        OpKind::Relu => {
            let z = w.float(0.0, ScalarType::F32);
            w.fop("llvm.intr.maxnum", &[xs[0], z])
        }
        OpKind::Sqrt => w.fop("llvm.intr.sqrt", xs),
        OpKind::Rsqrt => {
            let s = w.fop("llvm.intr.sqrt", xs);
            let one = w.float(1.0, ScalarType::F32);
            w.fop("llvm.fdiv", &[one, s])
        }
        OpKind::Exp2 => w.fop("llvm.intr.exp2", xs),
        OpKind::Tanh => {
            // |x| < 0.3: x + x³·P(x²), the odd Taylor series to x¹³ (its next term is
            // under 2⁻³⁴ of the result there); otherwise ±(1 − 2 / (2^(2|x|·log2 e) + 1)).
            let x = xs[0];
            let ax = w.fop("llvm.intr.fabs", &[x]);
            let k = w.float(2.0 * std::f64::consts::LOG2_E, ScalarType::F32);
            let t = w.fop("llvm.fmul", &[ax, k]);
            let e = w.fop("llvm.intr.exp2", &[t]);
            let one = w.float(1.0, ScalarType::F32);
            let two = w.float(2.0, ScalarType::F32);
            let e1 = w.fop("llvm.fadd", &[e, one]);
            let q = w.fop("llvm.fdiv", &[two, e1]);
            let large = w.fop("llvm.fsub", &[one, q]);
            let large = w.fop("llvm.intr.copysign", &[large, x]);
            let x2 = w.fop("llvm.fmul", &[x, x]);
            let coeffs = [
                21844.0 / 6081075.0,
                -1382.0 / 155925.0,
                62.0 / 2835.0,
                -17.0 / 315.0,
                2.0 / 15.0,
                -1.0 / 3.0,
            ];
            let mut p = w.float(coeffs[0], ScalarType::F32);
            for &c in &coeffs[1..] {
                let cc = w.float(c, ScalarType::F32);
                p = w.fop("llvm.intr.fma", &[p, x2, cc]);
            }
            let x3 = w.fop("llvm.fmul", &[x, x2]);
            let small = w.fop("llvm.intr.fma", &[x3, p, x]);
            let lim = w.float(0.3, ScalarType::F32);
            let is_small = w.fcmp("olt", ax, lim);
            w.select(is_small, small, large)
        }
        _ => {
            // exp (the table in the module docs).
            let x = xs[0];
            let hi = w.float(LOG2E_HI, ScalarType::F32);
            let lo = w.float(LOG2E_LO, ScalarType::F32);
            let t = w.fop("llvm.fmul", &[x, hi]);
            let nt = w.fop("llvm.fneg", &[t]);
            let d = w.fop("llvm.intr.fma", &[x, hi, nt]);
            let d = w.fop("llvm.intr.fma", &[x, lo, d]);
            let r = w.fop("llvm.intr.exp2", &[t]);
            let ln2 = w.float(std::f64::consts::LN_2, ScalarType::F32);
            let dl = w.fop("llvm.fmul", &[d, ln2]);
            let c = w.fop("llvm.intr.fma", &[r, dl, r]);
            // The correction only where r and δ are finite: x = ±inf or NaN makes δ NaN,
            // and t past f32's range (x < -6.1e37) makes δ infinite while r is 0.
            let inf = w.float(f64::INFINITY, ScalarType::F32);
            let r_finite = w.fcmp("olt", r, inf);
            let ad = w.fop("llvm.intr.fabs", &[d]);
            let d_finite = w.fcmp("olt", ad, inf);
            let ok = w.and(r_finite, d_finite);
            w.select(ok, c, r)
        }
    }
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    pub(super) fn lower_elementwise(&mut self, op: &Operation) -> R<()> {
        let args = self.gets(op, &op.operands)?;
        let lv = match args.first() {
            Some(Lv::Scalar(a)) => {
                let t = a.t;
                let mut xs = vec![];
                for lv in &args {
                    let Lv::Scalar(s) = lv else {
                        return err(op, "mixed scalar and tile operands");
                    };
                    xs.push(self.w.fpext_f32(*s));
                }
                let r = float_op(&mut self.w, op.kind, &xs);
                Lv::Scalar(self.w.fptrunc_to(r, t))
            }
            Some(Lv::Tile(a)) => {
                let tiles: Vec<&Tile> = args
                    .iter()
                    .filter_map(|lv| match lv {
                        Lv::Tile(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                if tiles.len() != args.len() || tiles.iter().any(|t| t.layout != a.layout) {
                    return err(
                        op,
                        "internal error: elementwise operands in different layouts",
                    );
                }
                let mut regs: Vec<Value<'c, 'm>> = Vec::with_capacity(a.regs.len());
                for r in 0..a.regs.len() {
                    let mut xs = vec![];
                    for t in &tiles {
                        let x = V {
                            v: t.regs[r],
                            t: t.elem,
                        };
                        xs.push(self.w.fpext_f32(x));
                    }
                    let y = float_op(&mut self.w, op.kind, &xs);
                    regs.push(self.w.fptrunc_to(y, a.elem).v);
                }
                Lv::Tile(Tile { regs, ..a.clone() })
            }
            _ => return err(op, "elementwise op on a tensor"),
        };
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, lv);
        }
        Ok(())
    }

    pub(super) fn lower_convert(&mut self, op: &Operation) -> R<()> {
        let to = op
            .results
            .first()
            .and_then(|&r| self.m.ty(r).elem())
            .unwrap_or(ScalarType::F32);
        let lv = match self.get(op, op.operands[0])? {
            Lv::Scalar(s) => Lv::Scalar(self.w.convert(s, to)),
            Lv::Tile(t) => {
                let mut regs = Vec::with_capacity(t.regs.len());
                for &r in &t.regs {
                    let x = V { v: r, t: t.elem };
                    regs.push(self.w.convert(x, to).v);
                }
                Lv::Tile(Tile {
                    regs,
                    elem: to,
                    ..t
                })
            }
            _ => return err(op, "'tile.convert' of a tensor"),
        };
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, lv);
        }
        Ok(())
    }
}
