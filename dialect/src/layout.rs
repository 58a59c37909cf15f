//! Distributed layouts: where each element of a tile lives among a CTA's threads.
//!
//! A [`LinearLayout`] is a linear map over F2 (the field of two elements), as in Triton's
//! `LinearLayout` (lib/Tools/LinearLayout.cpp; arXiv 2505.23819), from the bits of three
//! hardware indices to the bits of a tile coordinate:
//!
//! - `register`: the index of a value among one thread's registers for this tile;
//! - `lane`: the thread's lane in its warp (5 bits, 32 lanes);
//! - `warp`: the warp's index in the CTA.
//!
//! Each input bit has a *basis*: the tile coordinate (one entry per tile dimension) that bit
//! contributes. The element held by register `r` of lane `l` of warp `w` is at the XOR of the
//! bases of the bits set in `r`, `l` and `w`. A basis of all zeros means that bit
//! *broadcasts*: the indices it tells apart hold the same element (what a reduction's
//! result is, across the lanes that reduced it).
//!
//! # Why linear layouts
//! CuTe's shape:stride layouts describe the same tilings, but composing, inverting and
//! comparing them needs integer division; over F2 each is a matrix, so the questions the
//! lowering asks — "does this layout keep the same elements in the same thread?", "which
//! register bits are contiguous in memory?", "which lanes hold parts of the same reduced
//! element?" — are comparisons of bases. The named layouts (blocked, slices, transposes)
//! are constructors that produce one.
//!
//! # Non-power-of-two shapes
//! A linear map over F2 covers a power-of-two extent per dimension. A tile of shape `S` is
//! laid out over `S` padded up to powers of two ([`padded`]). Coordinates past `S` are
//! *padding*: lowered code computes them like any other element, loads read them as zero
//! (they are out of the tile, and so masked), stores drop them, and reductions replace them
//! with the reduction's identity before combining.
//!
//! # Text form
//! Inside a GPU-level tile type: `tile<4x1024xf32, #linear<register = [[0, 1], [0, 2]],
//! lane = [[0, 4], [0, 8], [0, 16], [0, 32], [0, 64]], warp = [[1, 0], [2, 0]]>>`.

use std::fmt;

/// A distributed layout of a tile over registers, lanes and warps (see the [module
/// docs](self)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    /// The tile's shape padded to powers of two (elements, outermost first).
    pub dims: Vec<u64>,
    /// The basis of each register-index bit, lowest first.
    pub register: Vec<Vec<u64>>,
    /// The basis of each lane bit, lowest first (5 bases).
    pub lane: Vec<Vec<u64>>,
    /// The basis of each warp bit, lowest first (`log2(warps)` bases).
    pub warp: Vec<Vec<u64>>,
}

/// Lanes per warp.
pub const WARP_SIZE: u64 = 32;

/// `shape` with each dimension rounded up to a power of two.
pub fn padded(shape: &[u64]) -> Vec<u64> {
    shape.iter().map(|d| d.next_power_of_two()).collect()
}

fn xor_into(acc: &mut [u64], b: &[u64]) {
    for (a, x) in acc.iter_mut().zip(b) {
        *a ^= x;
    }
}

fn combine(bases: &[Vec<u64>], index: u64, rank: usize) -> Vec<u64> {
    let mut c = vec![0; rank];
    for (bit, b) in bases.iter().enumerate() {
        if index >> bit & 1 == 1 {
            xor_into(&mut c, b);
        }
    }
    c
}

/// Bases along dimension `d` of a 2-D tile: `from`, `2·from`, ... below `end`.
fn steps(d: usize, from: u64, end: u64) -> Vec<Vec<u64>> {
    let mut out = vec![];
    let mut c = from;
    while c < end {
        let mut b = vec![0, 0];
        b[d] = c;
        out.push(b);
        c *= 2;
    }
    out
}

/// The lane bases of the wgmma and mma.sync accumulators: lane `l` holds column
/// `2(l mod 4)` of row `l/4` of each 8-row group.
fn mma_accumulator_lanes() -> Vec<Vec<u64>> {
    vec![vec![0, 2], vec![0, 4], vec![1, 0], vec![2, 0], vec![4, 0]]
}

impl LinearLayout {
    /// The blocked layout that loads and stores use: row-major (the last dimension
    /// contiguous), `16 / elem_bytes` contiguous elements per thread along the last
    /// dimension (one 16-byte vector), lanes filling the last dimension first, warps filling
    /// the outermost dimension first, then registers repeating the pattern over what is
    /// left. `warps` must be a power of two. When the tile has fewer elements than the
    /// threads, the lanes or warps left over broadcast (hold copies).
    pub fn blocked(shape: &[u64], elem_bytes: u64, warps: u64) -> LinearLayout {
        let dims = padded(shape);
        let rank = dims.len();
        let unit = |d: usize, v: u64| {
            let mut b = vec![0; rank];
            b[d] = v;
            b
        };
        // What is still unassigned of each dimension: the next stride and what is left.
        let mut stride = vec![1u64; rank];
        let mut left = dims.clone();
        let mut take = |d: usize, out: &mut Vec<Vec<u64>>, stride: &mut Vec<u64>| -> bool {
            if left[d] <= 1 {
                return false;
            }
            out.push(unit(d, stride[d]));
            stride[d] *= 2;
            left[d] /= 2;
            true
        };
        let last = rank - 1;
        let mut register = vec![];
        let mut vec_elems = (16 / elem_bytes.max(1)).max(1);
        while vec_elems > 1 && take(last, &mut register, &mut stride) {
            vec_elems /= 2;
        }
        let mut lane = vec![];
        for _ in 0..WARP_SIZE.trailing_zeros() {
            let placed = (0..rank).rev().any(|d| take(d, &mut lane, &mut stride));
            if !placed {
                lane.push(vec![0; rank]);
            }
        }
        let mut warp = vec![];
        for _ in 0..warps.max(1).trailing_zeros() {
            let placed = (0..rank).any(|d| take(d, &mut warp, &mut stride));
            if !placed {
                warp.push(vec![0; rank]);
            }
        }
        for d in (0..rank).rev() {
            while take(d, &mut register, &mut stride) {}
        }
        LinearLayout {
            dims,
            register,
            lane,
            warp,
        }
    }

    /// The accumulator (D) fragment of `warpgroups` wgmma warpgroups stacked along M, each
    /// holding an m64nN tile in f32 (PTX ISA, "Matrix fragments for wgmma.mma_async", the
    /// m64nNk16 D layout): register `v` of lane `l` of warp `w` (of the consumers, in order)
    /// is row `16w + l/4 + 8((v/2) mod 2)`, column `8(v/4) + 2(l mod 4) + (v mod 2)`.
    /// The tile is `[64 · warpgroups, n]`; `n` (a multiple of 8, at most 256) is padded to a
    /// power of two, and the registers past `n / 2` are padding. `warpgroups` must be a
    /// power of two.
    pub fn wgmma_accumulator(n: u64, warpgroups: u64) -> LinearLayout {
        let dims = vec![64 * warpgroups.max(1), n.next_power_of_two().max(8)];
        let mut register = vec![vec![0, 1], vec![8, 0]];
        register.extend(steps(1, 8, dims[1]));
        let mut warp = vec![vec![16, 0], vec![32, 0]];
        warp.extend(steps(0, 64, dims[0]));
        LinearLayout {
            dims,
            register,
            lane: mma_accumulator_lanes(),
            warp,
        }
    }

    /// The accumulator fragment of `mma.sync.m16n8k16` (f32 D) over a grid of
    /// `warps_m × warps_n` warps, each holding a 64 × 64 warp tile of 4 × 8 m16n8 tiles
    /// (PTX ISA, "Matrix Fragments for mma.m16n8k16", the D layout): register
    /// `v = 4(8 mi + ni) + e` of lane `l` of warp `w = warps_n · wm + wn` is row
    /// `64 wm + 16 mi + 8(e/2) + l/4`, column `64 wn + 8 ni + 2(l mod 4) + (e mod 2)`.
    /// `warps_m` and `warps_n` must be powers of two.
    pub fn mma_sync_accumulator(warps_m: u64, warps_n: u64) -> LinearLayout {
        let dims = vec![64 * warps_m.max(1), 64 * warps_n.max(1)];
        let register = vec![
            vec![0, 1],
            vec![8, 0],
            vec![0, 8],
            vec![0, 16],
            vec![0, 32],
            vec![16, 0],
            vec![32, 0],
        ];
        let mut warp = steps(1, 64, dims[1]);
        warp.extend(steps(0, 64, dims[0]));
        LinearLayout {
            dims,
            register,
            lane: mma_accumulator_lanes(),
            warp,
        }
    }

    /// How a dot of an `m × n` result spreads `warps` warps (a power of two) over its
    /// m16n8 MMA tiles: `(warps_m, warps_n)`, as many along M as its 16-row tiles allow, the
    /// rest along N. `None` when the warps outnumber the m16n8 tiles (`m` and `n` padded to
    /// powers of two).
    pub fn dot_warps(m: u64, n: u64, warps: u64) -> Option<(u64, u64)> {
        let (m, n, warps) = (m.next_power_of_two(), n.next_power_of_two(), warps.max(1));
        let wm = warps.min((m / 16).max(1));
        let wn = warps / wm;
        (m >= 16 * wm && n >= 8 * wn).then_some((wm, wn))
    }

    /// The accumulator (C and D) fragment of a dot of shape `[m, n]` computed with
    /// `mma.sync.m16n8k16` (f32) by `warps_m × warps_n` warps ([`Self::dot_warps`]), each
    /// holding a contiguous `m / warps_m × n / warps_n` block of m16n8 tiles (PTX ISA,
    /// "Matrix Fragments for mma.m16n8k16", the D layout): element `e` (0 to 3) of the
    /// tile at row block `i`, column block `j` of lane `l` is row `16 i + 8(e/2) + l/4`,
    /// column `8 j + 2(l mod 4) + (e mod 2)` of its warp's block. Register bits: `e` (two
    /// bits: column, then row), the column blocks, then the row blocks. Warp bits: along M
    /// first. Shapes are padded to powers of two; the block must be at least 16 × 8.
    pub fn dot_accumulator(shape: &[u64], warps_m: u64, warps_n: u64) -> LinearLayout {
        let dims = padded(shape);
        let (bm, bn) = (dims[0] / warps_m.max(1), dims[1] / warps_n.max(1));
        let mut register = vec![vec![0, 1], vec![8, 0]];
        register.extend(steps(1, 8, bn));
        register.extend(steps(0, 16, bm));
        let mut warp = steps(0, bm, dims[0]);
        warp.extend(steps(1, bn, dims[1]));
        LinearLayout {
            dims,
            register,
            lane: mma_accumulator_lanes(),
            warp,
        }
    }

    /// The A (row-major `m × k`, 16-bit) fragment of `mma.sync.m16n8k16` for a dot whose
    /// result is laid out by [`Self::dot_accumulator`] with the same warps (PTX ISA,
    /// "Matrix Fragments for mma.m16n8k16", the A layout): element `e` (0 to 7) of the
    /// m16k16 tile at row block `i`, k block `j` of lane `l` is row `16 i + 8((e/2) mod 2) +
    /// l/4`, column `16 j + 8(e/4) + 2(l mod 4) + (e mod 2)` of its warp's rows. Each warp
    /// holds all of K for its rows; the warps along N hold copies. Register bits: `e`
    /// (column, row, column + 8), the k blocks, then the row blocks — so an accumulator of
    /// `[m, k]` and this operand of `[m, k]` are one layout when `warps_n` is 1 (a product's
    /// result feeds the next product without moving).
    pub fn dot_operand_a(shape: &[u64], warps_m: u64, warps_n: u64) -> LinearLayout {
        let dims = padded(shape);
        let bm = dims[0] / warps_m.max(1);
        let mut register = vec![vec![0, 1], vec![8, 0]];
        register.extend(steps(1, 8, dims[1]));
        register.extend(steps(0, 16, bm));
        let mut warp = steps(0, bm, dims[0]);
        warp.extend((0..warps_n.max(1).trailing_zeros()).map(|_| vec![0, 0]));
        LinearLayout {
            dims,
            register,
            lane: mma_accumulator_lanes(),
            warp,
        }
    }

    /// Whether an accumulator `acc` of shape `acc_shape` and an A operand `a` of shape
    /// `a_shape` are the fragments of register-A `wgmma.mma_async` m64nNk16 (PTX ISA
    /// §9.7.15.5.1): every warp along M with 16 rows each ([`Self::dot_accumulator`] and
    /// [`Self::dot_operand_a`] over `warps × 1` warps, `warps` a multiple of 4, so each
    /// warpgroup holds one m64 tile), N (padded) from 8 to 256 and K (padded) a multiple
    /// of 16.
    pub fn is_wgmma_register_a(
        acc: &LinearLayout,
        acc_shape: &[u64],
        a: &LinearLayout,
        a_shape: &[u64],
    ) -> bool {
        let warps = acc.num_warps();
        Self::is_wgmma_accumulator(acc, acc_shape)
            && a.rank() == 2
            && a.dims[1].is_multiple_of(16)
            && *a == Self::dot_operand_a(a_shape, warps, 1)
    }

    /// Whether `acc`, of shape `acc_shape`, is the D fragment of `wgmma.mma_async`
    /// m64nNk16 with f32 accumulation (PTX ISA §9.7.15.5.1), warpgroup by warpgroup:
    /// [`Self::dot_accumulator`] over `warps × 1` warps, `warps` a multiple of 4, with
    /// `16 · warps` rows and N (padded) from 8 to 256.
    pub fn is_wgmma_accumulator(acc: &LinearLayout, acc_shape: &[u64]) -> bool {
        let warps = acc.num_warps();
        acc.rank() == 2
            && warps.is_multiple_of(4)
            && acc.dims[0] == 16 * warps
            && (8..=256).contains(&acc.dims[1])
            && *acc == Self::dot_accumulator(acc_shape, warps, 1)
    }

    /// The layout of a reduction of `dim`: the same threads and registers, with `dim` of
    /// size 1, so the bits that told elements of `dim` apart broadcast; register bits left
    /// with nothing to tell apart are dropped (a thread keeps one copy).
    pub fn slice(&self, dim: usize) -> LinearLayout {
        let zero = |bs: &[Vec<u64>]| -> Vec<Vec<u64>> {
            bs.iter()
                .map(|b| {
                    let mut b = b.clone();
                    b[dim] = 0;
                    b
                })
                .collect()
        };
        let mut dims = self.dims.clone();
        dims[dim] = 1;
        let register = independent(&zero(&self.register));
        LinearLayout {
            dims,
            register,
            lane: zero(&self.lane),
            warp: zero(&self.warp),
        }
    }

    /// The layout of the slice at `offsets` of `sizes` (`tile.extract_slice`) in which
    /// every thread already holds its elements: the lane and warp bases, and the register
    /// bases that stay inside the slice's power-of-two window, kept; register bases that
    /// only choose among windows dropped. `None` unless every offset is a multiple of its
    /// padded size and every lane, warp and register basis lies either inside the window or
    /// (registers only) wholly outside it: the slice then needs data from other threads.
    pub fn sliced(&self, offsets: &[u64], sizes: &[u64]) -> Option<LinearLayout> {
        let window = padded(sizes);
        let rank = self.dims.len();
        if offsets.len() != rank || window.len() != rank {
            return None;
        }
        if (0..rank).any(|d| !offsets[d].is_multiple_of(window[d]) || window[d] > self.dims[d]) {
            return None;
        }
        let inside = |b: &[u64]| (0..rank).all(|d| b[d] < window[d]);
        let outside = |b: &[u64]| (0..rank).all(|d| b[d].is_multiple_of(window[d]));
        if !self.lane.iter().chain(&self.warp).all(|b| inside(b)) {
            return None;
        }
        let mut register = vec![];
        for b in &self.register {
            if inside(b) {
                register.push(b.clone());
            } else if !outside(b) {
                return None;
            }
        }
        Some(LinearLayout {
            dims: window,
            register,
            lane: self.lane.clone(),
            warp: self.warp.clone(),
        })
    }

    /// The layout of the transpose of a 2-D tile: the same threads and registers, with the
    /// two coordinates swapped.
    pub fn transposed(&self) -> LinearLayout {
        let swap = |bs: &[Vec<u64>]| -> Vec<Vec<u64>> {
            bs.iter()
                .map(|b| b.iter().rev().copied().collect())
                .collect()
        };
        LinearLayout {
            dims: self.dims.iter().rev().copied().collect(),
            register: swap(&self.register),
            lane: swap(&self.lane),
            warp: swap(&self.warp),
        }
    }

    /// The layout of a row-major reshape to `shape` (padded: powers of two, with the same
    /// number of elements): the same threads and registers, each coordinate's row-major
    /// offset read back in the new shape. Exact for tiles whose shapes are powers of two,
    /// and for reshapes that only add or drop unit dimensions (their padded shapes too).
    pub fn reshaped(&self, shape: &[u64]) -> LinearLayout {
        let flat = |c: &[u64]| -> u64 {
            c.iter()
                .zip(&self.dims)
                .fold(0, |acc, (&x, &d)| acc * d + x)
        };
        let unflat = |mut f: u64| -> Vec<u64> {
            let mut c = vec![0; shape.len()];
            for (i, &d) in shape.iter().enumerate().rev() {
                c[i] = f % d;
                f /= d;
            }
            c
        };
        let map =
            |bs: &[Vec<u64>]| -> Vec<Vec<u64>> { bs.iter().map(|b| unflat(flat(b))).collect() };
        LinearLayout {
            dims: shape.to_vec(),
            register: map(&self.register),
            lane: map(&self.lane),
            warp: map(&self.warp),
        }
    }

    /// The number of tile dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Registers per thread: `2^register.len()`.
    pub fn num_registers(&self) -> u64 {
        1 << self.register.len()
    }

    /// Warps of the CTA: `2^warp.len()`.
    pub fn num_warps(&self) -> u64 {
        1 << self.warp.len()
    }

    /// Where a remap to `dst` finds each of its registers in this layout's registers of the
    /// same thread, if it can: for destination register `r`, the source register holding
    /// element `proj(c) + shift`, `c` the coordinate `r` contributes, `proj` zeroing the
    /// dimensions in `bcast` (a broadcast's; `shift`: a slice's offsets, zeros otherwise).
    /// `Some` exactly when every lane and warp basis of `dst`, projected, is this layout's
    /// basis for that bit (each destination element then lives in the same thread) and,
    /// with a shift, adding it carries into no bit a thread's lane or warp sets: a remap
    /// that is a renaming of registers. `None` means the elements move between threads
    /// (through shared memory, with CTA barriers). Both layouts must have the same rank.
    pub fn registers_for(
        &self,
        dst: &LinearLayout,
        bcast: &[usize],
        shift: &[u64],
    ) -> Option<Vec<usize>> {
        let rank = dst.dims.len();
        let shift: Vec<u64> = (0..rank)
            .map(|d| shift.get(d).copied().unwrap_or(0))
            .collect();
        let shifted = shift.iter().any(|&x| x != 0);
        let proj = |c: &[u64]| -> Vec<u64> {
            let mut c = c.to_vec();
            for &d in bcast {
                if let Some(x) = c.get_mut(d) {
                    *x = 0;
                }
            }
            c
        };
        let thread_mask: Vec<u64> = (0..rank)
            .map(|d| {
                self.lane
                    .iter()
                    .chain(&self.warp)
                    .fold(0, |m, b| m | b.get(d).copied().unwrap_or(0))
            })
            .collect();
        let same_threads = dst.lane.len() == self.lane.len()
            && dst.warp.len() == self.warp.len()
            && dst.lane.iter().zip(&self.lane).all(|(a, b)| proj(a) == *b)
            && dst.warp.iter().zip(&self.warp).all(|(a, b)| proj(a) == *b);
        if !same_threads {
            return None;
        }
        let by_coord: std::collections::HashMap<Vec<u64>, usize> = (0..self.num_registers())
            .map(|r| (self.register_coord(r), r as usize))
            .collect();
        (0..dst.num_registers())
            .map(|r| {
                let k = proj(&dst.register_coord(r));
                let key: Vec<u64> = k.iter().zip(&shift).map(|(a, b)| a + b).collect();
                // thread + k + shift is thread ⊕ (k + shift) only where neither k nor
                // k + shift shares a bit with what the thread sets.
                let carry_free =
                    !shifted || (0..rank).all(|d| (k[d] | key[d]) & thread_mask[d] == 0);
                carry_free.then(|| by_coord.get(&key).copied()).flatten()
            })
            .collect()
    }

    /// The coordinate register `r` contributes (the XOR of its bits' bases).
    pub fn register_coord(&self, r: u64) -> Vec<u64> {
        combine(&self.register, r, self.rank())
    }

    /// The coordinate lane `l` contributes.
    pub fn lane_coord(&self, l: u64) -> Vec<u64> {
        combine(&self.lane, l, self.rank())
    }

    /// The coordinate warp `w` contributes.
    pub fn warp_coord(&self, w: u64) -> Vec<u64> {
        combine(&self.warp, w, self.rank())
    }

    /// The coordinate of the element held by register `r` of lane `l` of warp `w`.
    pub fn apply(&self, r: u64, l: u64, w: u64) -> Vec<u64> {
        let mut c = self.register_coord(r);
        xor_into(&mut c, &self.lane_coord(l));
        xor_into(&mut c, &self.warp_coord(w));
        c
    }

    /// Whether, in every dimension, the register bases use bits that no lane or warp
    /// basis uses: then an element's coordinate is its thread's coordinate *plus* its
    /// register's (XOR without carries), so bounds and addresses split into a per-thread
    /// part and a per-register constant. True of every `blocked` layout and its slices.
    pub fn register_bits_disjoint(&self) -> bool {
        let or = |bases: &[Vec<u64>], d: usize| bases.iter().fold(0, |m, b| m | b[d]);
        (0..self.rank()).all(|d| {
            let thread = or(&self.lane, d) | or(&self.warp, d);
            or(&self.register, d) & thread == 0
        })
    }

    /// Which register, lane and warp bits must be clear for a thread's register to be the
    /// *owner* of its element, as `(register, lane, warp)` bit masks: every element that
    /// several (register, lane, warp) triples hold has exactly one owner, and an element
    /// held once is its holder's. All zero when no element is held twice. What an access
    /// that must not repeat (`red.global.add`) is predicated on.
    ///
    /// The triples holding one element differ by the kernel of the map (a subspace over
    /// F2); with the kernel's basis in reduced echelon form, each coset has one member
    /// whose bits at the basis's pivots (each vector's highest bit) are all zero.
    pub fn owner_masks(&self) -> (u64, u64, u64) {
        let inputs: Vec<&Vec<u64>> = self
            .register
            .iter()
            .chain(&self.lane)
            .chain(&self.warp)
            .collect();
        let pack = |b: &[u64]| -> u128 {
            b.iter()
                .fold(0u128, |acc, &x| (acc << 21) | u128::from(x & 0x1f_ffff))
        };
        // Rows (image, inputs combined); an input whose image reduces to zero gives a
        // kernel vector.
        let mut rows: Vec<(u128, u64)> = vec![];
        let mut kernel: Vec<u64> = vec![];
        for (i, b) in inputs.iter().enumerate() {
            let (mut v, mut c) = (pack(b), 1u64 << i);
            for &(e, ec) in &rows {
                if v >> (127 - e.leading_zeros()) & 1 == 1 {
                    v ^= e;
                    c ^= ec;
                }
            }
            if v == 0 {
                kernel.push(c);
            } else {
                rows.push((v, c));
                rows.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
            }
        }
        // Reduced echelon form: each pivot set in its own vector only.
        let mut basis: Vec<u64> = vec![];
        for mut k in kernel {
            for &e in &basis {
                if k >> (63 - e.leading_zeros()) & 1 == 1 {
                    k ^= e;
                }
            }
            if k == 0 {
                continue;
            }
            let top = 63 - k.leading_zeros();
            for e in &mut basis {
                if *e >> top & 1 == 1 {
                    *e ^= k;
                }
            }
            basis.push(k);
            basis.sort_unstable_by(|a, b| b.cmp(a));
        }
        let pivots = basis
            .iter()
            .fold(0u64, |m, e| m | 1 << (63 - e.leading_zeros()));
        let (nr, nl) = (self.register.len(), self.lane.len());
        let low = |n: usize| (1u64 << n) - 1;
        (
            pivots & low(nr),
            pivots >> nr & low(nl),
            pivots >> (nr + nl) & low(self.warp.len()),
        )
    }

    /// How many of the lowest register bits step by 1, 2, 4, ... along the last
    /// dimension: `2^n` registers are contiguous in a row-major tile (a vector access).
    pub fn contiguous_register_bits(&self) -> usize {
        let last = self.rank() - 1;
        self.register
            .iter()
            .enumerate()
            .take_while(|(i, b)| {
                b.iter()
                    .enumerate()
                    .all(|(d, &x)| if d == last { x == 1 << i } else { x == 0 })
            })
            .count()
    }

    /// Checks the layout against a tile shape and a CTA of `warps` warps.
    ///
    /// # Errors
    /// A message naming the first broken rule: the padded shape, 5 lane bases, `log2(warps)`
    /// warp bases, coordinates inside the padded shape, and every element held somewhere
    /// (the bases span the tile).
    pub fn check(&self, shape: &[u64], warps: u64) -> Result<(), String> {
        if self.dims != padded(shape) {
            return Err(format!(
                "the layout has {} dimensions of sizes {:?}; the tile needs {:?}",
                self.dims.len(),
                self.dims,
                padded(shape)
            ));
        }
        if self.lane.len() != WARP_SIZE.trailing_zeros() as usize {
            return Err(format!(
                "a layout has 5 lane bases (32 lanes), found {}",
                self.lane.len()
            ));
        }
        if warps.is_power_of_two() && self.warp.len() != warps.trailing_zeros() as usize {
            return Err(format!(
                "the kernel runs {warps} warps, so the layout needs {} warp bases, found {}",
                warps.trailing_zeros(),
                self.warp.len()
            ));
        }
        if self.register.len() > 16 {
            return Err(format!(
                "{} register bases would be 2^{} registers per thread",
                self.register.len(),
                self.register.len()
            ));
        }
        for b in self.register.iter().chain(&self.lane).chain(&self.warp) {
            if b.len() != self.rank() {
                return Err(format!(
                    "basis {b:?} has {} coordinates; the tile has {} dimensions",
                    b.len(),
                    self.rank()
                ));
            }
            if let Some((d, x)) = b.iter().enumerate().find(|&(d, &x)| x >= self.dims[d]) {
                return Err(format!(
                    "basis {b:?}: coordinate {x} is outside dimension {d} of size {}",
                    self.dims[d]
                ));
            }
        }
        let all: Vec<Vec<u64>> = self
            .register
            .iter()
            .chain(&self.lane)
            .chain(&self.warp)
            .cloned()
            .collect();
        let needed: usize = self.dims.iter().map(|d| d.trailing_zeros() as usize).sum();
        let rank = independent(&all).len();
        if rank != needed {
            return Err(format!(
                "the bases reach 2^{rank} of the tile's 2^{needed} (padded) elements; every \
                 element must be held by some thread"
            ));
        }
        Ok(())
    }
}

/// The nonzero bases of `bs` that are independent of the ones before them (Gaussian
/// elimination over F2 on the concatenated coordinate bits).
fn independent(bs: &[Vec<u64>]) -> Vec<Vec<u64>> {
    let pack = |b: &[u64]| -> u128 {
        b.iter()
            .fold(0u128, |acc, &x| (acc << 21) | u128::from(x & 0x1f_ffff))
    };
    let mut echelon: Vec<u128> = vec![];
    let mut out = vec![];
    for b in bs {
        let mut v = pack(b);
        for &e in &echelon {
            let top = 127 - e.leading_zeros();
            if v >> top & 1 == 1 {
                v ^= e;
            }
        }
        if v != 0 {
            echelon.push(v);
            echelon.sort_unstable_by(|a, b| b.cmp(a));
            out.push(b.clone());
        }
    }
    out
}

fn write_bases(f: &mut fmt::Formatter<'_>, name: &str, bs: &[Vec<u64>]) -> fmt::Result {
    write!(f, "{name} = [")?;
    for (i, b) in bs.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        f.write_str("[")?;
        for (j, x) in b.iter().enumerate() {
            if j > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{x}")?;
        }
        f.write_str("]")?;
    }
    f.write_str("]")
}

impl fmt::Display for LinearLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("#linear<")?;
        write_bases(f, "register", &self.register)?;
        f.write_str(", ")?;
        write_bases(f, "lane", &self.lane)?;
        f.write_str(", ")?;
        write_bases(f, "warp", &self.warp)?;
        f.write_str(">")
    }
}

/// Parses `#linear<register = [...], lane = [...], warp = [...]>` for a tile of `shape`.
///
/// # Errors
/// A message saying what was expected where.
pub fn parse_linear(text: &str, shape: &[u64]) -> Result<LinearLayout, String> {
    let inner = text
        .trim()
        .strip_prefix("#linear<")
        .and_then(|s| s.strip_suffix('>'))
        .ok_or_else(|| format!("expected '#linear<...>', found '{}'", text.trim()))?;
    let mut parts: [Option<Vec<Vec<u64>>>; 3] = [None, None, None];
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("expected 'name = [...]', found '{rest}'"))?;
        let key = key.trim();
        let slot = match key {
            "register" => 0,
            "lane" => 1,
            "warp" => 2,
            _ => {
                return Err(format!(
                    "unknown layout part '{key}' (expected register, lane, warp)"
                ))
            }
        };
        if parts[slot].is_some() {
            return Err(format!("layout part '{key}' given twice"));
        }
        let (bases, after) = parse_bases(after.trim())?;
        parts[slot] = Some(bases);
        rest = after.trim();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim();
        } else if !rest.is_empty() {
            return Err(format!("expected ',' between layout parts, found '{rest}'"));
        }
    }
    let [Some(register), Some(lane), Some(warp)] = parts else {
        return Err("a layout gives register, lane and warp bases".into());
    };
    Ok(LinearLayout {
        dims: padded(shape),
        register,
        lane,
        warp,
    })
}

/// `[[1, 0], [2, 0]]` → the bases and the text after the closing bracket.
fn parse_bases(s: &str) -> Result<(Vec<Vec<u64>>, &str), String> {
    let mut rest = s
        .strip_prefix('[')
        .ok_or_else(|| format!("expected '[', found '{s}'"))?
        .trim_start();
    let mut out = vec![];
    loop {
        if let Some(r) = rest.strip_prefix(']') {
            return Ok((out, r));
        }
        if !out.is_empty() {
            rest = rest
                .strip_prefix(',')
                .ok_or_else(|| format!("expected ',' or ']', found '{rest}'"))?
                .trim_start();
        }
        let r = rest
            .strip_prefix('[')
            .ok_or_else(|| format!("expected a basis '[...]', found '{rest}'"))?;
        let end = r
            .find(']')
            .ok_or_else(|| "unterminated basis".to_string())?;
        let basis = r[..end]
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("expected a coordinate, found '{}'", x.trim()))
            })
            .collect::<Result<Vec<u64>, String>>()?;
        out.push(basis);
        rest = r[end + 1..].trim_start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Every element has exactly one owner under `owner_masks`, counted over all triples.
    fn owners_per_element(l: &LinearLayout) -> HashMap<Vec<u64>, u32> {
        let (rm, lm, wm) = l.owner_masks();
        let mut owners: HashMap<Vec<u64>, u32> = HashMap::new();
        for w in 0..l.num_warps() {
            for ln in 0..WARP_SIZE {
                for r in 0..l.num_registers() {
                    let owner = r & rm == 0 && ln & lm == 0 && w & wm == 0;
                    *owners.entry(l.apply(r, ln, w)).or_default() += u32::from(owner);
                }
            }
        }
        owners
    }

    #[test]
    fn unit_dimension_reshapes_keep_each_register_on_its_element() {
        // 1x100 (padded 1x128) to 100x1 and 1x100x1: element (0, c) becomes (c, 0) and
        // (0, c, 0) in the same register of the same thread.
        let row = LinearLayout::blocked(&[1, 100], 4, 4);
        let col = row.reshaped(&padded(&[100, 1]));
        let mid = row.reshaped(&padded(&[1, 100, 1]));
        col.check(&[100, 1], 4).unwrap();
        mid.check(&[1, 100, 1], 4).unwrap();
        for w in 0..row.num_warps() {
            for l in 0..WARP_SIZE {
                for r in 0..row.num_registers() {
                    let c = row.apply(r, l, w)[1];
                    assert_eq!(col.apply(r, l, w), vec![c, 0]);
                    assert_eq!(mid.apply(r, l, w), vec![0, c, 0]);
                }
            }
        }
    }

    #[test]
    fn owner_masks_pick_one_holder_per_element() {
        let blocked = LinearLayout::blocked(&[64, 128], 4, 4);
        assert_eq!(blocked.owner_masks(), (0, 0, 0), "no element is held twice");
        let cases = [
            blocked.clone(),
            // Rows reduced: the lanes and warps along a row hold copies.
            blocked.slice(1),
            blocked.slice(0),
            LinearLayout::wgmma_accumulator(128, 1).slice(1),
            // Fewer elements than threads: spare lanes and warps broadcast.
            LinearLayout::blocked(&[1, 16], 4, 8),
            LinearLayout::blocked(&[2, 2], 2, 4),
            // Copies that are not single zero bases: lane 1's basis equals lane 0's, and
            // a register bit repeats a warp bit.
            LinearLayout {
                dims: vec![4, 4],
                register: vec![vec![0, 1], vec![2, 0]],
                lane: vec![vec![0, 2], vec![0, 2], vec![1, 0], vec![1, 1], vec![0, 0]],
                warp: vec![vec![2, 0]],
            },
        ];
        for l in &cases {
            let owners = owners_per_element(l);
            assert_eq!(owners.len() as u64, l.dims.iter().product::<u64>(), "{l}");
            assert!(owners.values().all(|&n| n == 1), "{l}: {owners:?}");
        }
        let (rm, lm, wm) = LinearLayout::blocked(&[1, 16], 4, 8).owner_masks();
        assert_eq!((rm, wm), (0, 0b111), "the 8 warps hold copies of one row");
        assert_ne!(
            lm, 0,
            "16 elements as 4-element vectors need 4 of the 32 lanes"
        );
    }

    #[test]
    fn registers_for_finds_renamings_and_only_those() {
        // A row reduction's slice broadcast back over the row: each thread has its rows.
        let acc = LinearLayout::wgmma_accumulator(128, 1);
        let row = acc.slice(1);
        let back = row.registers_for(&acc, &[1], &[]).expect("a renaming");
        for (r, &from) in back.iter().enumerate() {
            let want = acc.register_coord(r as u64)[0];
            assert_eq!(row.register_coord(from as u64)[0], want, "register {r}");
        }
        // To itself: the identity.
        let id = acc.registers_for(&acc, &[], &[]).expect("the identity");
        assert!(id.iter().enumerate().all(|(r, &f)| r == f));
        // A coalesced layout of the same tile puts elements in other threads.
        let blocked = LinearLayout::blocked(&[64, 128], 4, 4);
        assert_eq!(acc.registers_for(&blocked, &[], &[]), None);
        assert_eq!(blocked.registers_for(&acc, &[], &[]), None);
    }

    #[test]
    fn dot_fragments_match_the_ptx_m16n8k16_layouts() {
        for (m, n, k, warps) in [
            (64, 64, 128, 4),
            (128, 128, 64, 8),
            (16, 8, 16, 1),
            (32, 64, 32, 4),
        ] {
            let (wm, wn) = LinearLayout::dot_warps(m, n, warps).unwrap();
            assert_eq!(wm * wn, warps);
            let (bm, bn) = (m / wm, n / wn);
            let c = LinearLayout::dot_accumulator(&[m, n], wm, wn);
            c.check(&[m, n], warps).unwrap();
            let a = LinearLayout::dot_operand_a(&[m, k], wm, wn);
            a.check(&[m, k], warps).unwrap();
            for w in 0..warps {
                let (w_m, w_n) = (w % wm, w / wm);
                for l in 0..32 {
                    for r in 0..c.num_registers() {
                        let (e, j, i) = (r % 4, (r / 4) % (bn / 8), r / 4 / (bn / 8));
                        let row = bm * w_m + 16 * i + 8 * (e / 2) + l / 4;
                        let col = bn * w_n + 8 * j + 2 * (l % 4) + e % 2;
                        assert_eq!(c.apply(r, l, w), vec![row, col], "C r={r} l={l} w={w}");
                    }
                    for r in 0..a.num_registers() {
                        let (e, j, i) = (r % 8, (r / 8) % (k / 16), r / 8 / (k / 16));
                        let row = bm * w_m + 16 * i + 8 * ((e / 2) % 2) + l / 4;
                        let col = 16 * j + 8 * (e / 4) + 2 * (l % 4) + e % 2;
                        assert_eq!(a.apply(r, l, w), vec![row, col], "A r={r} l={l} w={w}");
                    }
                }
            }
        }
        // A product's [m, k] accumulator is the next product's A operand.
        assert_eq!(
            LinearLayout::dot_accumulator(&[64, 64], 4, 1),
            LinearLayout::dot_operand_a(&[64, 64], 4, 1)
        );
        assert_eq!(LinearLayout::dot_warps(64, 64, 8), Some((4, 2)));
        assert_eq!(LinearLayout::dot_warps(16, 8, 2), None);
    }

    #[test]
    fn wgmma_accumulator_matches_the_ptx_fragment() {
        for (n, wgs) in [(256, 2), (64, 1), (128, 1), (192, 2)] {
            let l = LinearLayout::wgmma_accumulator(n, wgs);
            l.check(&[64 * wgs, n], 4 * wgs).unwrap();
            for w in 0..4 * wgs {
                for lane in 0..32 {
                    for v in 0..n / 2 {
                        let row = 16 * w + lane / 4 + 8 * ((v / 2) % 2);
                        let col = 8 * (v / 4) + 2 * (lane % 4) + v % 2;
                        assert_eq!(l.apply(v, lane, w), vec![row, col], "n={n} v={v}");
                    }
                }
            }
        }
    }

    #[test]
    fn mma_sync_accumulator_matches_the_ptx_fragment() {
        let l = LinearLayout::mma_sync_accumulator(2, 4);
        l.check(&[128, 256], 8).unwrap();
        for w in 0..8 {
            let (wm, wn) = (w / 4, w % 4);
            for lane in 0..32 {
                for v in 0..128 {
                    let (t, e) = (v / 4, v % 4);
                    let (mi, ni) = (t / 8, t % 8);
                    let row = 64 * wm + 16 * mi + 8 * (e / 2) + lane / 4;
                    let col = 64 * wn + 8 * ni + 2 * (lane % 4) + e % 2;
                    assert_eq!(l.apply(v, lane, w), vec![row, col]);
                }
            }
        }
    }

    #[test]
    fn blocked_row_of_bf16() {
        let l = LinearLayout::blocked(&[1, 4096], 2, 4);
        // 8 contiguous bf16 per thread, 32 lanes, 4 warps along the row, 4 repeats.
        assert_eq!(l.contiguous_register_bits(), 3);
        assert_eq!(l.num_registers(), 32);
        assert_eq!(l.lane[0], vec![0, 8]);
        assert_eq!(l.warp, vec![vec![0, 256], vec![0, 512]]);
        assert_eq!(l.register[3], vec![0, 1024]);
        assert_eq!(l.apply(1, 1, 1), vec![0, 1 + 8 + 256]);
        l.check(&[1, 4096], 4).unwrap();
    }

    #[test]
    fn register_bits_disjoint_from_thread_bits() {
        for (shape, bytes, warps) in [
            (vec![1, 4096], 2u64, 4u64),
            (vec![64, 64], 2, 4),
            (vec![3, 100], 4, 8),
            (vec![5], 4, 4),
        ] {
            let l = LinearLayout::blocked(&shape, bytes, warps);
            assert!(l.register_bits_disjoint(), "{shape:?}");
            assert!(l.slice(0).register_bits_disjoint(), "{shape:?}");
        }
        // A lane basis on a register bit: coordinates XOR with a carry-free sum no more.
        let mut l = LinearLayout::blocked(&[64, 64], 2, 4);
        l.lane[0] = l.register[0].clone();
        assert!(!l.register_bits_disjoint());
    }

    #[test]
    fn blocked_rows_go_to_warps() {
        let l = LinearLayout::blocked(&[4, 1024], 4, 4);
        assert_eq!(l.warp, vec![vec![1, 0], vec![2, 0]]);
        assert_eq!(l.num_registers(), 32);
        l.check(&[4, 1024], 4).unwrap();
    }

    #[test]
    fn small_tiles_broadcast_over_spare_lanes() {
        let l = LinearLayout::blocked(&[8], 4, 4);
        assert_eq!(l.register.len(), 2);
        assert_eq!(l.lane[1], vec![0]);
        assert_eq!(l.warp, vec![vec![0], vec![0]]);
        l.check(&[8], 4).unwrap();
        // 5 elements pad to 8.
        LinearLayout::blocked(&[5], 4, 4).check(&[5], 4).unwrap();
    }

    #[test]
    fn every_element_is_held_exactly_once_per_broadcast_class() {
        for (shape, bytes, warps) in [
            (vec![64, 64], 2u64, 4u64),
            (vec![3, 100], 4, 8),
            (vec![2, 4, 8], 1, 2),
            (vec![128], 8, 1),
        ] {
            let l = LinearLayout::blocked(&shape, bytes, warps);
            l.check(&shape, warps).unwrap();
            let total: u64 = l.dims.iter().product();
            let mut seen = std::collections::HashSet::new();
            for w in 0..warps {
                for ln in 0..32 {
                    for r in 0..l.num_registers() {
                        seen.insert(l.apply(r, ln, w));
                    }
                }
            }
            assert_eq!(seen.len() as u64, total, "{shape:?}");
        }
    }

    #[test]
    fn slice_broadcasts_the_reduced_dimension() {
        let l = LinearLayout::blocked(&[4, 1024], 4, 4);
        let s = l.slice(1);
        assert_eq!(s.dims, vec![4, 1]);
        assert_eq!(s.num_registers(), 1);
        assert!(s.lane.iter().all(|b| b == &vec![0, 0]));
        assert_eq!(s.warp, l.warp);
        s.check(&[4, 1], 4).unwrap();
        let t = l.slice(0);
        assert_eq!(t.num_registers(), 32);
        assert_eq!(t.warp, vec![vec![0, 0], vec![0, 0]]);
    }

    #[test]
    fn text_round_trips() {
        let l = LinearLayout::blocked(&[4, 1024], 2, 4);
        let text = l.to_string();
        assert!(text.starts_with("#linear<register = [[0, 1], [0, 2], [0, 4], "));
        assert_eq!(parse_linear(&text, &[4, 1024]).unwrap(), l);
        assert!(parse_linear("#linear<lane = []>", &[4])
            .unwrap_err()
            .contains("register, lane and warp"));
        assert!(parse_linear("#linear<reg = []>", &[4])
            .unwrap_err()
            .contains("unknown layout part 'reg'"));
        let bad = LinearLayout {
            lane: vec![vec![0, 0]; 5],
            ..l.clone()
        };
        assert!(bad
            .check(&[4, 1024], 4)
            .unwrap_err()
            .contains("every element"));
    }
}
