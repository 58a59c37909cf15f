//! `tile.dot` in a kernel with a plain launch: `mma.sync.m16n8k16` (PTX ISA, "Warp-level
//! matrix multiply-accumulate instructions"), bf16 or f16 operands into f32, on every
//! target.
//!
//! `tile-assign-layouts` gives the accumulator (C and the result) the layout
//! [`LinearLayout::dot_accumulator`] and A the layout [`LinearLayout::dot_operand_a`], over
//! the warps [`LinearLayout::dot_warps`] chooses; each warp owns a block of the result's
//! rows and columns. Both are read straight off their registers: an m16k16 A tile is four
//! pairs of 16-bit registers, an m16n8 C tile four f32 registers.
//!
//! B keeps whatever layout it came in (a load's, a transpose's) and is staged through
//! shared memory, because every warp needs all of K for its columns (held in registers,
//! a 128 × 64 B would be 256 values per thread):
//!
//! 1. **Store.** Each thread writes its B registers to a region of the dynamic shared
//!    memory, as rows along the dimension its registers are contiguous in: `[N][K]` when
//!    they run along K (a transposed load, `Kᵀ` in attention), `[K][N]` otherwise. Runs of
//!    contiguous registers are stored as one vector (up to 16 bytes). Each row is padded by
//!    16 bytes, so the eight 16-byte rows one `ldmatrix` matrix reads fall in eight
//!    different groups of four banks. K padding (a non-power-of-two K) is stored as zeros.
//! 2. **Barrier**, then per k16 step and per pair of n8 tiles of the warp's columns, one
//!    `ldmatrix.x4` gives `b0, b1` of both tiles: plain from `[N][K]` rows, `.trans` from
//!    `[K][N]` rows (one n8 tile: `.x2`). Every `ldmatrix` of a dot addresses one 32-bit
//!    register (the lane's row in the first fragment) plus an immediate, so it is written
//!    as PTX (`llvm.inline_asm`, with a memory clobber so it stays between the barriers):
//!    `nvvm.ldmatrix` takes a pointer, and NVPTX gives each of its constant offsets a
//!    64-bit register of its own, which LLVM hoists out of the loop (a 64 × 128 `Kᵀ`
//!    held 32 such pairs live through the key loop of attention).
//! 3. **MMAs** of that k step, for every m16 tile of the warp's rows; then, inside a loop, a
//!    barrier before the next iteration writes the region again.
//!
//! A's K padding is zeroed in registers before use, so padding never meets padding.

use super::plain::{err, Lowerer, Tile, R};
use super::writer::V;
use melior::ir::{Value, ValueLike};
use tilec_dialect::{LinearLayout, Operation, ScalarType};

/// Bytes each staged row of B is padded by (one 16-byte `ldmatrix` row).
const ROW_PAD_BYTES: u64 = 16;

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    pub(super) fn lower_dot(&mut self, op: &Operation) -> R<()> {
        let a = self.tile(op, op.operands[0])?;
        let b = self.tile(op, op.operands[1])?;
        let c = self.tile(op, op.operands[2])?;
        let (shape, _, acc_l) = self.result_layout(op, 0)?;
        let elem = a.elem;
        if !matches!(elem, ScalarType::BF16 | ScalarType::F16)
            || b.elem != elem
            || c.elem != ScalarType::F32
        {
            return err(
                op,
                "'tile.dot' with a plain launch takes bf16 or f16 operands into f32",
            );
        }
        let dims = acc_l.dims.clone();
        let warps = acc_l.num_warps();
        let Some((wm, wn)) = LinearLayout::dot_warps(dims[0], dims[1], warps) else {
            return err(op, "the dot's result has more warps than m16n8 tiles");
        };
        let kdim = a.layout.dims[1];
        if acc_l != LinearLayout::dot_accumulator(&shape, wm, wn)
            || c.layout != acc_l
            || a.layout != LinearLayout::dot_operand_a(&a.shape, wm, wn)
            || b.layout.dims != [kdim, dims[1]]
            || kdim < 16
        {
            return err(
                op,
                "internal error: the dot's operands are not in the mma.sync fragments that \
                 'tile-assign-layouts' gives them",
            );
        }
        let (bm, bn) = (dims[0] / wm, dims[1] / wn);
        let (m_tiles, n_tiles, k_steps) = (bm / 16, bn / 8, kdim / 16);
        let a = self.zero_padding(a, 1);
        let afrag = self.a_fragments(&a, m_tiles, k_steps);
        let stage = self.stage_b(op, &b, wm, bn)?;
        let f32t = self.w.ty(ScalarType::F32);
        let acc4 = self.w.struct_ty(&[f32t; 4]);
        let t = if elem == ScalarType::F16 {
            "f16"
        } else {
            "bf16"
        };
        let mma_attrs = self.w.mma_sync_attrs(t, t, 16);
        let mut acc = c.regs.clone();
        for kk in 0..k_steps {
            // Each ldmatrix's fragments go straight to their MMAs: few B registers live.
            for jp in 0..n_tiles.div_ceil(2) {
                let bfrag = self.b_fragments(&stage, kk, jp, n_tiles);
                for (jj, &(b0, b1)) in bfrag.iter().enumerate() {
                    let j = 2 * jp as usize + jj;
                    for i in 0..m_tiles as usize {
                        let base = 4 * (j + n_tiles as usize * i);
                        let mut operands = afrag[i * k_steps as usize + kk as usize].to_vec();
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
        if self.in_loop() {
            self.w.barrier();
        }
        if let Some(&r) = op.results.first() {
            self.vals
                .insert(r, super::plain::Lv::Tile(Tile { regs: acc, ..c }));
        }
        Ok(())
    }

    /// `t` with the registers past its shape along `dim` (padding) set to zero.
    pub(super) fn zero_padding(&mut self, mut t: Tile<'c, 'm>, dim: usize) -> Tile<'c, 'm> {
        if t.shape[dim] == t.layout.dims[dim] {
            return t;
        }
        let zero = self.w.float(0.0, t.elem);
        let n = self.w.i32(t.shape[dim] as i64);
        let layout = t.layout.clone();
        for r in 0..t.regs.len() {
            let at = self.coord(&layout, r as u64)[dim];
            let inside = self.w.icmp(super::writer::ICmp::Slt, at, n);
            let x = V {
                v: t.regs[r],
                t: t.elem,
            };
            t.regs[r] = self.w.select(inside, x, zero).v;
        }
        t
    }

    /// The four 32-bit A registers (`a0a1, a2a3, a4a5, a6a7`) of m16k16 tile `(i, kk)`, at
    /// `i · k_steps + kk`: pairs of A's registers, which [`LinearLayout::dot_operand_a`]
    /// orders as the PTX fragment does.
    pub(super) fn a_fragments(
        &mut self,
        a: &Tile<'c, 'm>,
        m_tiles: u64,
        k_steps: u64,
    ) -> Vec<[Value<'c, 'm>; 4]> {
        let mut out = vec![];
        for i in 0..m_tiles {
            for kk in 0..k_steps {
                let base = (8 * (kk + k_steps * i)) as usize;
                out.push(
                    [0, 2, 4, 6]
                        .map(|e| self.pack_pair(a.elem, a.regs[base + e], a.regs[base + e + 1])),
                );
            }
        }
        out
    }

    /// Two 16-bit values as one mma.sync multiplicand register: `vector<2xf16>` for f16,
    /// an i32 for bf16 (as `nvvm.mma.sync` takes them), the first in the low half.
    pub(super) fn pack_pair(
        &mut self,
        elem: ScalarType,
        x: Value<'c, 'm>,
        y: Value<'c, 'm>,
    ) -> Value<'c, 'm> {
        let et = self.w.ty(elem);
        let vt = self.w.vector_ty(2, et);
        let mut v = self.w.undef(vt);
        for (i, s) in [x, y].into_iter().enumerate() {
            let at = self.w.i32(i as i64);
            v = self.w.insert_element(v, s, at);
        }
        self.multiplicand(elem, v)
    }

    /// A 32-bit pair (`vector<2 x elem>` or i32) as `nvvm.mma.sync` takes it for `elem`.
    fn multiplicand(&mut self, elem: ScalarType, v: Value<'c, 'm>) -> Value<'c, 'm> {
        let want = if elem == ScalarType::F16 {
            let h = self.w.ty(ScalarType::F16);
            self.w.vector_ty(2, h)
        } else {
            self.w.ty(ScalarType::I32)
        };
        if v.r#type() == want {
            v
        } else {
            self.w.cast("llvm.bitcast", v, want)
        }
    }

    /// Writes B to its shared-memory region (step 1 of the module docs) and a barrier;
    /// returns where each lane's `ldmatrix` rows start.
    fn stage_b(
        &mut self,
        op: &Operation,
        b: &Tile<'c, 'm>,
        warps_m: u64,
        bn: u64,
    ) -> R<Stage<'c, 'm>> {
        let b = self.zero_padding(b.clone(), 0);
        let l = &b.layout;
        let esize = b.elem.size_bytes();
        // The dimension B's registers run along: K (dim 0) gives [N][K] rows.
        let run_dim = match l.register.first() {
            Some(x) if x[0] == 1 && x[1] == 0 => 0,
            _ => 1,
        };
        let run = (0..l.register.len())
            .take_while(|&i| {
                let mut want = vec![0, 0];
                want[run_dim] = 1 << i;
                l.register[i] == want
            })
            .count()
            .min((16 / esize).trailing_zeros() as usize);
        let row_dim = 1 - run_dim;
        let pitch = l.dims[run_dim] + ROW_PAD_BYTES / esize;
        let bytes = l.dims[row_dim] * pitch * esize;
        let region = self.smem_region(bytes, &op.loc)?;
        let vlen = 1u64 << run;
        let mut strides = vec![0, 0];
        strides[row_dim] = pitch;
        strides[run_dim] = 1;
        let at = self.smem_placement(l, strides, esize, region);
        for r in (0..b.regs.len() as u64).step_by(vlen as usize) {
            let p = self.smem_address(&at, l, r);
            self.w
                .store_run(&b.regs[r as usize..(r + vlen) as usize], p, esize);
        }
        self.w.barrier();
        // Lane l gives row l mod 8 of matrix q = l / 8: matrix q is n8 tile q / 2 and k half
        // q mod 2 of a pair of n8 tiles.
        let lane = self.lane;
        let warp = self.warp;
        let x2 = bn < 16;
        let lane_addr = self.in_prologue(|w| {
            let c7 = w.i32(7);
            let c3 = w.i32(3);
            let c1 = w.i32(1);
            let r8 = w.bin("and", lane, c7);
            let q = w.bin("lshr", lane, c3);
            let khalf = w.bin("and", q, c1);
            let ntile = if x2 { w.i32(0) } else { w.bin("lshr", q, c1) };
            let shift = w.i32(i64::from(warps_m.trailing_zeros()));
            let wn = w.bin("lshr", warp, shift);
            let cbn = w.i32(bn as i64);
            let n0 = w.mul(wn, cbn);
            let c8 = w.i32(8);
            let n_in = w.mul(ntile, c8);
            let n_base = w.add(n0, n_in);
            let k_base = w.mul(khalf, c8);
            // [N][K] rows: row n_base + r8, column k_base; [K][N]: row k_base + r8, column
            // n_base.
            let (row, col) = if run_dim == 0 {
                (w.add(n_base, r8), k_base)
            } else {
                (w.add(k_base, r8), n_base)
            };
            let cp = w.i32(pitch as i64);
            let rp = w.mul(row, cp);
            let flat = w.add(rp, col);
            let ce = w.i32(esize as i64);
            let off = w.mul(flat, ce);
            let off = w.add_const(off, region as i64);
            let p = w.smem_addr(off);
            let i32t = w.ty(ScalarType::I32);
            V {
                v: w.cast("llvm.ptrtoint", p, i32t),
                t: ScalarType::I32,
            }
        });
        Ok(Stage {
            lane_addr,
            k_rows: run_dim == 1,
            pitch_bytes: pitch * esize,
            esize,
            elem: b.elem,
        })
    }

    /// `b0, b1` of the warp's n8 tiles `2 jp` and `2 jp + 1` (one when `n_tiles` is 1) in
    /// k16 step `kk` (step 2 of the module docs).
    fn b_fragments(
        &mut self,
        s: &Stage<'c, 'm>,
        kk: u64,
        jp: u64,
        n_tiles: u64,
    ) -> Vec<(Value<'c, 'm>, Value<'c, 'm>)> {
        let num = if n_tiles == 1 { 2 } else { 4 };
        let i32t = self.w.ty(ScalarType::I32);
        let rt = self.w.struct_ty(&vec![i32t; num]);
        let regs = (0..num)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let constraints = format!("{}r,~{{memory}}", "=r,".repeat(num));
        let mut out = vec![];
        {
            // Pair jp starts 16 columns (n) further; step kk 16 rows or columns (k) further.
            let (k_at, n_at) = (16 * kk, 16 * jp);
            let konst = if s.k_rows {
                k_at * s.pitch_bytes + n_at * s.esize
            } else {
                n_at * s.pitch_bytes + k_at * s.esize
            };
            let asm = format!(
                "ldmatrix.sync.aligned.m8n8.x{num}{}.shared.b16 {{{regs}}}, [${num}+{konst}];",
                if s.k_rows { ".trans" } else { "" }
            );
            let r = self
                .w
                .inline_asm(&asm, &constraints, &[s.lane_addr.v], Some(rt), true)
                .expect("a result type was given");
            let regs: Vec<Value<'c, 'm>> = (0..num)
                .map(|i| {
                    let v = self.w.extract(r, i, i32t);
                    self.multiplicand(s.elem, v)
                })
                .collect();
            out.push((regs[0], regs[1]));
            if num == 4 {
                out.push((regs[2], regs[3]));
            }
        }
        out
    }
}

/// B staged in shared memory: each lane's `ldmatrix` row address for k step 0 and the
/// warp's first pair of n8 tiles (a 32-bit shared-window address), whether rows run along
/// K (`[K][N]`, read with `.trans`), the row pitch and the element.
struct Stage<'c, 'm> {
    lane_addr: V<'c, 'm>,
    k_rows: bool,
    pitch_bytes: u64,
    esize: u64,
    elem: ScalarType,
}
