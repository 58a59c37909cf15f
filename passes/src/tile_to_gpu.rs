//! `tile-to-gpu` — from level-1 tile IR to the GPU-level ops of a target.
//!
//! Recognises the matrix-product main loop a frontend writes —
//!
//! ```text
//! %acc = tile.for %c0, %K, %cBK, %zero : tile<BMxBNxf32> {      // or %lb, %ub (below)
//! ^bb0(%k: index, %c: tile<BMxBNxf32>):
//!   %a = tile.load %A, %row, %k : tile<BMxBKxT>
//!   %b = tile.load %B, %k, %col : tile<BKxBNxT>
//!   %d = tile.dot %a, %b, %c : tile<BMxBNxf32>
//!   tile.yield %d
//! }
//! ```
//!
//! — where each dot operand may also be reached through `tile.transpose` and
//! `tile.reshape`s that only add or drop unit dimensions, from a load of a tile whose
//! leading dimensions are 1:
//!
//! - **B stored N×K** (`nn.Linear`'s weight, C = A · Wᵀ): `%w = tile.load %W, %col, %k :
//!   tile<BNxBKxT>`, `%b = tile.transpose %w`. The B ring is BN×BK (K-major) and the MMAs
//!   get `b_major = "k"`.
//! - **A stored K×M** (Aᵀ · B): `tile.load %A, %k, %row : tile<BKxBMxT>` transposed. The A
//!   ring is BK×BM (M-major) and the MMAs get `a_major = "m"`.
//! - **A batch** (3-D tensors): `tile.load %A, %b, %row, %k : tile<1xBMxBKxT>` and a
//!   reshape to BM×BK. The ring drops the unit dimensions; the copies read boxes of
//!   1×BM×BK at the load's coordinates.
//!
//! In every form k, the loop's induction variable, must be the load's coordinate along the
//! dimension that is K for the dot, and nothing else may be in the loop. A kernel with dots
//! in any other form ([`pipelines`]: several dots, a dot outside a loop, a loop holding
//! more than loads, layout ops and its dot — attention) is left as it is, for
//! `tile-assign-layouts` (a plain launch, `mma.sync` from registers).
//!
//! It turns the loop into a warp-specialized pipeline: a `stages`-deep ring of shared-memory
//! stages for A and B (each as it was loaded; 128-byte swizzle, 64-byte for the 64-byte rows
//! of a K-major operand with BK = 32), a `full` mbarrier per
//! stage (armed with `expect_tx` for the stage's bytes, completed by the TMA copies) and an
//! `empty` mbarrier per stage (one arrive per consumer warp), a producer warpgroup
//! whose elected thread issues the copies, and BM/64 consumer warpgroups running
//! `tile.mma` over each stage. The first k tile is peeled (its MMA zeroes the
//! accumulator). A consumer releases stage `kt-1` in iteration `kt` (deferred release), so one MMA
//! group can stay in flight; `async-wait-placement` then puts the waits. The epilogue after the
//! loop moves into the consumer region (the consumers hold the accumulator) and is lowered per
//! fragment.
//!
//! On the mma.sync targets (no warpgroup to give registers away with `setmaxnreg`, which
//! sm_90 and sm_100 lack anyway) the producer region is empty and the block is
//! the 8 consumer warps: registers go to warps in groups of four, so a ninth warp would cap
//! every thread at 168 registers (65,536 / 12 warps), where the 128×256 tile spills; 256
//! threads have 255. The consumers' thread 0 issues the copies instead (`role =
//! "scheduler"`): k tiles 0 .. S−2 before the peeled tile, then k tile kt + S − 1 at the top
//! of iteration kt, into the stage k tile kt − 1 read. `mma.sync` reads its stage into
//! registers before it returns, so each stage is released right after its MMA, and the copy
//! waits only for the warps that are still in iteration kt − 1.
//!
//! **K bounds.** The loop may start at any index value computed before it (split-K: a
//! slice [s·Kc, min((s+1)·Kc, K)) of the K range), not only the constant 0. The k-tile
//! count is max(ceildiv(ub − lb, BK), 1) and k tile kt is read at kstart + kt·BK, with
//! kstart = lb, or −2^30 when the range is empty (ub ≤ lb: the peeled tile still runs, on
//! boxes wholly out of bounds, which TMA fills with zeros, so the accumulator stays zero).
//! kstart is left out only where the range cannot be empty: lb = 0 and ub a positive
//! constant. Bounds defined inside a persistent tile loop (they depend on the tile) are
//! evaluated per tile in both regions, and the global k-tile count the ring's phases run on
//! advances by each tile's own count.
//!
//! On `sm_90a` the MMA is `wgmma` (m64nBNk16); elsewhere `ldmatrix` + `mma.sync`
//! m16n8k16. Checked before anything is rewritten, each with the limit it breaks: the
//! target exists; the tile is in the target's legality table
//! ([`Target::check_gemm_tile`]: bf16/f16 with an f32 accumulator, BK 32, 64 or 128, on sm_90a
//! BM 64 or 128 and BN any multiple of 8 to 256 — of 64 for a B stored K×N —, or a
//! smaller BM swapped (below), on the
//! mma.sync targets 128×256); the ring plus barriers fit the target's shared memory per
//! block.
//!
//! **Swap-AB** (sm_90a, an M tile below wgmma's 64 rows: 8 to 56 in steps of 8, with BN 64
//! or 128; [`Target::swaps_ab`]). A decode-shaped GEMM (M = 16) would waste three quarters
//! of each m64 MMA, so the loop computes the transposed product Cᵀ = Bᵀ · Aᵀ instead: the
//! MMA's A ring holds B's tiles (read the other way round: `a_major = "m"` for a B stored
//! K×N), its B ring holds A's (`b_major = "k"` for an A stored M×K), the accumulator is
//! BN×BM (m64nBMk16 per consumer warpgroup, BN/64 of them), and after the K loop
//!
//! ```text
//! %acc = tile.transpose %acc_t : tile<BMxBNxf32>
//! ```
//!
//! gives the epilogue the tile it was written for; the lowering reads the same registers in
//! the transposed space. The copies, the stage bytes and the split-K forms are unchanged;
//! the epilogue must store from the registers (`epilogue = direct`).
//!
//! A persistent tile loop made by `persistent` (`tile.for` or, for the clc schedule,
//! `tile.while`, with `{tile_loop = true}`) runs in both regions and carries one more value,
//! the global k-tile count, so the ring's phases run on across tiles. Ops of the tile loop
//! with `role = "scheduler"` go to the producer region only (its elected thread is the
//! CTA's scheduler); ops after the K loop with `role = "all"` run in both regions, after
//! the producer's copies and after the consumers' epilogue. In the consumer region, a
//! scheduler-only op's results are registers it never wrote: `tile.constant 0`
//! (`false` for `i1`). Without a producer region (mma.sync) the scheduler ops stay in the
//! consumer region, where the consumers' thread 0 runs them. An mbarrier array with
//! `{per_cta = true}` counts arrivals per CTA; its `arrive_count` is multiplied by the
//! arrivals one CTA makes (one from the producer's elected thread, if any, one per
//! consumer warp).
//!
//! **Clusters** (a `cluster` of more than one CTA, as `persistent{schedule=static
//! cluster=X cluster-y=Y}` makes it): the copies of a GEMM's A tile are the same in all CTAs
//! of a cluster that differ only along x (its row comes from grid dimension 1), B's along y.
//! A dependence analysis over the kernel (values computed from `tile.cluster_ctaid`,
//! `tile.ctaid` or `tile.cluster_ctarank` along d may differ along d; `tile.clusterid` may
//! not) finds, for each operand, the first cluster dimension along which its coordinates
//! (but k) cannot differ, and marks its copy `{multicast = d}`: each of the n CTAs of the
//! line copies 1/n of the stage's rows into all of them. Each CTA's full barrier still
//! expects the whole stage's bytes; a stage is released (`{peer_dims = [...]}`) on this CTA's
//! empty barrier and on those of the peers along every multicast dimension, whose
//! `arrive_count` grows accordingly. Nothing is multicast unless the K range and the tile
//! loop are the same in every CTA of the cluster (the ring's stages and phases must run in
//! step), or where the rows do not split into whole 8-row swizzle atoms.
//!
//! **Epilogue store** (`epilogue`): `direct` (default) keeps the epilogue's `tile.store`,
//! lowered as stores from the accumulator registers. `tma` (sm_90a, a 16-bit C of
//! BM×BN with BN a multiple of 64; a tensor of higher rank takes the tile with leading unit
//! dimensions, e.g. `1×BM×BN` at (batch, row, col), and the box is 1 in those dimensions)
//! stages the output through shared memory and stores it
//! with TMA: a 2-slot staging ring `smem<2 x BM x 64 x T>` (128-byte swizzle, 2 × 16 KB
//! for BM = 128), and for each 64-column box j of the tile:
//!
//! ```text
//! tile.smem_store %out, %staging, %slot_j {col_offset = 64 j}   // stmatrix, 64 rows each
//! tile.fence_proxy_async                                         // generic writes → async proxy
//! tile.named_barrier {id = 1, threads = 128}                     // the warpgroup's 128 writers
//! %c_j = tile.addi %col, 64 j
//! tile.tma_store %C, %staging, %slot_j, %row, %c_j               // elected thread, 64×64 box
//! ```
//!
//! with `slot_j = j mod 2`. `async-wait-placement` then closes a bulk group after each
//! `tile.tma_store` and puts `tile.bulk_wait_group {read}` + a named barrier before a
//! slot is written again (also across the tiles of a persistent loop) and before exit.
//! TMA clips out-of-bounds rows and columns, so ragged tiles need no slow path — but it
//! writes whole 16-byte chunks, so C's row length in bytes must be a multiple of 16 or the
//! padding after each row is overwritten (the launcher checks; docs/manifest.md). The
//! staging ring counts against shared memory (4 stages of 128×256×64 bf16 + staging =
//! 230,400 of 232,448 bytes).
//!
//! **Promotion** (`promote`): Hopper's fp8 wgmma sums with reduced precision (the error grows
//! with K; docs/performance.md). With `promote=true` each k tile's MMAs start a fresh chain
//! (`zero_acc`), and the consumer adds the part into the loop-carried f32 sum, as DeepGEMM
//! does; `async-wait-placement` puts the wait before the add. On wgmma the next k tile's
//! chain is issued before the add, so the wait keeps it in flight (`wait_group 1`) and the
//! tensor cores work during the add: the loop takes k tiles in pairs and carries the sum
//! and the last part (each part keeps its own registers; a loop-carried part that rotated
//! through one register set would be a copy of registers a wgmma may still write), and a
//! `tile.if` after it takes the last k tile of an even count. That is three accumulators.
//! Where three do not fit but two do (a 128×192 tile), the wgmma loop adds each k tile's part
//! after `wait_group 0`, as mma.sync always does (its MMAs are synchronous); only the other
//! consumer warpgroup's MMAs can run meanwhile. That wait retires the k tile's MMAs, so its
//! stage is released right after the add rather than one k tile later (k tile 0's part is
//! added to zeros to give its wait and release a place). Accumulators × BM × BN / consumer
//! threads must stay within [`PROMOTE_MAX_ACC_REGS`] (mma.sync:
//! [`PROMOTE_MAX_ACC_REGS_MMA_SYNC`]). `auto` (the default) promotes fp8 MMAs on wgmma when
//! two accumulators fit (up to 128×192, not 128×256), and remarks at the loop where they do
//! not; `true` promotes any kernel whose accumulators fit, and refuses the others.
//!
//! Options: `target` (sm_90a), `stages` (4), `epilogue` (`direct`), `promote` (`auto`).
//! Statistics:
//! `loops-pipelined`, `smem-bytes`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, GemmTile, Location, Module, OpKind, Operation,
    ScalarType, Target, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-to-gpu",
    summary: "Lower the matmul main loop to a TMA ring, mbarriers and async MMA for a target",
    description: "Rewrites the K loop of a tile matmul into a warp-specialized pipeline: TMA \
        copies into a shared-memory ring (128-byte swizzle) completing on mbarriers, and wgmma \
        (sm_90a) or ldmatrix+mma.sync (sm_90, sm_100) over each stage.\n\nExample: tile-opt \
        --pass-pipeline='tile-to-gpu{target=sm_90a stages=4}' examples/gemm_bf16.tile",
    options: &[
        OptionInfo {
            name: "target",
            kind: OptionKind::Enum(&["sm_90", "sm_90a", "sm_100", "sm_100a"]),
            default: "sm_90a",
            help: "GPU to build for",
        },
        OptionInfo {
            name: "stages",
            kind: OptionKind::UInt,
            default: "4",
            help: "Shared-memory ring depth (2 to 8)",
        },
        OptionInfo {
            name: "promote",
            kind: OptionKind::Enum(&["auto", "true", "false"]),
            default: "auto",
            help: "Accumulate each k tile's MMAs into a fresh accumulator and add it into the \
                f32 sum (DeepGEMM's promotion: Hopper's fp8 wgmma sums with reduced precision); \
                needs registers for two accumulators (three on wgmma to keep the next k tile's \
                MMAs in flight during the add). auto: for fp8 wgmma when they fit",
        },
        OptionInfo {
            name: "epilogue",
            kind: OptionKind::Enum(&["direct", "tma"]),
            default: "direct",
            help: "How the epilogue stores C: direct (from the accumulator registers) or tma \
                (staged in shared memory, stored with TMA; sm_90a)",
        },
    ],
};

/// Bytes at the start of dynamic shared memory reserved for mbarriers (keeps the stages
/// 1024-byte aligned, as 128-byte-swizzle atoms need).
pub const BARRIER_REGION_BYTES: u64 = 1024;

/// Shared memory of a GEMM's ring: the barrier region and `stages` stages of `tile`, in
/// bytes (the kernel's other buffers come on top).
pub fn ring_bytes(tile: &GemmTile, stages: u64) -> u64 {
    BARRIER_REGION_BYTES + stages * tile.stage_bytes()
}

/// The most accumulator registers per consumer thread `promote` may hold on wgmma, below the
/// 232 a consumer gets from `setmaxnreg`: the sum and two parts (one in flight while the other
/// is added; three 64×128 fragments, a 128×128 tile), or the sum and one part (two 64×192
/// fragments, a 128×192 tile).
pub const PROMOTE_MAX_ACC_REGS: u64 = 192;

/// The same on the mma.sync path: the sum and one part (its MMAs are synchronous), below
/// that path's 168-register cap.
pub const PROMOTE_MAX_ACC_REGS_MMA_SYNC: u64 = 160;

/// Threads per warpgroup.
pub const WARPGROUP_THREADS: i64 = 128;

/// The pass.
pub struct TileToGpu {
    /// Target.
    pub target: Target,
    /// Ring depth.
    pub stages: u64,
    /// Stage the epilogue's store through shared memory and store it with TMA.
    pub tma_epilogue: bool,
    /// Promote each k tile's MMA result into the f32 sum (`promote`): `Some(on)`, or `None`
    /// (`auto`) for fp8 operands on wgmma when two accumulators fit.
    pub promote: Option<bool>,
}

impl TileToGpu {
    /// Build from checked options.
    ///
    /// # Errors
    /// `stages` outside 2..=8.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let target = Target::from_name(o.get("target"))
            .ok_or_else(|| format!("unknown target '{}'", o.get("target")))?;
        let stages = o.uint("stages");
        if !(2..=8).contains(&stages) {
            return Err(format!(
                "tile-to-gpu option 'stages' must be 2 to 8, found {stages}"
            ));
        }
        let tma_epilogue = o.get("epilogue") == "tma";
        Ok(TileToGpu {
            target,
            stages,
            tma_epilogue,
            promote: match o.get("promote") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
        })
    }
}

impl Pass for TileToGpu {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.attr("target").is_some() || !pipelines(k) {
                // Kernels in any other form are `tile-assign-layouts`'s (a plain launch).
                continue;
            }
            // An op the target lacks (persistent's clc protocol on sm_90a) is refused at the
            // kernel, before the pipeline is built around it.
            let mut lacks = None;
            k.walk(&mut |o| {
                if lacks.is_none() {
                    lacks = crate::assign_layouts::target_lacks(o, self.target);
                }
            });
            if let Some(msg) = lacks {
                errors.push(Diagnostic::error(k.loc.clone(), msg));
                continue;
            }
            let opts = (self.stages, self.tma_epilogue, self.promote);
            let mut remarks = vec![];
            let r = lower_kernel(m, k, self.target, opts, &mut remarks);
            cx.diagnostics.extend(remarks);
            match r {
                Ok(bytes) => {
                    cx.stat("loops-pipelined", 1);
                    cx.stat("smem-bytes", bytes);
                }
                Err(d) => errors.push(d),
            }
        }
        m.ops = kernels;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(errors))
        }
    }
}

/// Whether kernel `k` has the main-loop form this pass pipelines: exactly one `tile.dot`,
/// directly in the body of a `tile.for` whose other ops are loads, transposes, reshapes
/// and the yield, with both of its operands computed in that body. (A loop that also reads
/// memory with `tile.extract` counts too, so that `find_matmul` refuses the extra read
/// at its line, as it refuses an extra load, instead of the kernel leaving the pipeline.)
/// Kernels with dots in any other form (attention's two products with a softmax between
/// them, a dot outside a loop, a loop-invariant operand) get a plain launch from
/// `tile-assign-layouts`; their dots are lowered with `mma.sync`, or with wgmma after
/// `tile-dot-to-wgmma` on sm_90a.
pub fn pipelines(k: &Operation) -> bool {
    let mut dots = 0;
    let mut main_loops = 0;
    k.walk(&mut |o| {
        dots += usize::from(o.kind == OpKind::Dot);
        if o.kind == OpKind::For
            && o.regions[0].ops.iter().any(|x| x.kind == OpKind::Dot)
            && o.regions[0].ops.iter().all(|x| {
                matches!(
                    x.kind,
                    OpKind::Load
                        | OpKind::Extract
                        | OpKind::Transpose
                        | OpKind::Reshape
                        | OpKind::Dot
                        | OpKind::Yield
                )
            })
            && operands_in_body(&o.regions[0])
        {
            main_loops += 1;
        }
    });
    dots == 1 && main_loops == 1
}

/// Whether the A and B of every dot of `body` are computed in `body` (the pipeline loads
/// both per K step; a loop-invariant operand, such as attention's Q, is not its form).
fn operands_in_body(body: &Block) -> bool {
    let defined: HashSet<Value> = body
        .ops
        .iter()
        .flat_map(|o| o.results.iter().copied())
        .collect();
    body.ops
        .iter()
        .filter(|o| o.kind == OpKind::Dot)
        .all(|o| o.operands.iter().take(2).all(|v| defined.contains(v)))
}

/// The constant value of `v` if a `tile.constant` in `defs` defines it.
fn const_of(defs: &HashMap<Value, &Operation>, v: Value) -> Option<i64> {
    let d = defs.get(&v)?;
    (d.kind == OpKind::Constant)
        .then(|| d.int_attr("value"))
        .flatten()
}

/// Emits ops into a block under construction.
/// The body of one tile of a tile loop: given the loop's k base, its ops and the tile's
/// k-tile count.
type TileBody<'a> = dyn for<'m> FnMut(&mut Emitter<'m>, Value) -> (Vec<Operation>, Value) + 'a;

struct Emitter<'m> {
    m: &'m mut Module,
    ops: Vec<Operation>,
    loc: Location,
}

impl Emitter<'_> {
    fn op(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        results: &[Type],
        name: Option<&str>,
    ) -> Vec<Value> {
        let mut op = Operation::new(kind, self.loc.clone());
        op.operands = operands.to_vec();
        op.attrs = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        op.results = results
            .iter()
            .map(|t| self.m.new_value(t.clone(), name.map(str::to_string)))
            .collect();
        let r = op.results.clone();
        self.ops.push(op);
        r
    }
    fn one(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        ty: Type,
        name: &str,
    ) -> Value {
        self.op(kind, operands, attrs, &[ty], Some(name))[0]
    }
    fn index(&mut self, v: i64, name: &str) -> Value {
        self.one(
            OpKind::Constant,
            &[],
            &[("value", Attribute::Int(v))],
            Type::INDEX,
            name,
        )
    }
    fn int(&mut self, kind: OpKind, a: Value, b: Value, name: &str) -> Value {
        self.one(kind, &[a, b], &[], Type::INDEX, name)
    }
    /// `tile.cmpi` of two index values under `predicate` (`eq`, `sgt`, …): an i1.
    fn cmpi(&mut self, a: Value, b: Value, predicate: &str, name: &str) -> Value {
        let pred = [("predicate", Attribute::Str(predicate.into()))];
        self.one(OpKind::CmpI, &[a, b], &pred, Type::I1, name)
    }
    fn take(&mut self) -> Vec<Operation> {
        std::mem::take(&mut self.ops)
    }
}

/// One MMA operand as the K loop reads it: a `tile.load` of `tensor` at `coords` (the K
/// coordinate, the loop's induction variable, at `k_pos`), seen by the dot through
/// `tile.transpose`s and `tile.reshape`s that add or drop unit dimensions.
struct Operand {
    tensor: Value,
    coords: Vec<Value>,
    k_pos: usize,
    /// The loaded tile without its leading unit dimensions, (rows, columns): the ring's
    /// stage shape, and the TMA box's last two dimensions.
    ring: [u64; 2],
    /// The dot reads the ring transposed (an odd number of `tile.transpose`s).
    transposed: bool,
}

impl Operand {
    /// The ring's swizzle in bytes: the widest of 128, 64 and 32 that divides the row's
    /// bytes (rows wider than the swizzle are stored in boxes of that many bytes); 64 for
    /// the 64-byte rows of a K-major 16-bit operand with BK = 32, 32 or 64 for a B stored
    /// K×N whose N is not a multiple of 64.
    fn swizzle(&self, elem: ScalarType) -> u64 {
        let row = self.ring[1] * elem.size_bytes();
        [128, 64, 32]
            .into_iter()
            .find(|&s| row.is_multiple_of(s))
            .unwrap_or(16)
    }

    /// The tile as the dot sees it: the ring's (rows, columns), swapped when transposed.
    fn view(&self) -> [u64; 2] {
        if self.transposed {
            [self.ring[1], self.ring[0]]
        } else {
            self.ring
        }
    }
}

struct Matmul {
    loop_idx: usize,
    a: Operand,
    b: Operand,
    /// The K loop's lower bound; `None` when it is the constant 0.
    lb: Option<Value>,
    ub: Value,
    /// Whether `ub` is a constant > 0 (with `lb` = 0, the range is then never empty).
    ub_positive: bool,
    bm: u64,
    bn: u64,
    bk: u64,
    /// A's element type.
    elem: ScalarType,
    /// B's element type (`elem`, or the other 8-bit float).
    b_elem: ScalarType,
    acc_ty: Type,
    init: Value,
}

impl Matmul {
    /// The transposed product Cᵀ = Bᵀ · Aᵀ ([`GemmTile::swapped`]): B's tile as the MMA's
    /// A and A's as its B, each read the other way round, and a BN×BM accumulator.
    fn swapped(self) -> Matmul {
        let flip = |o: Operand| Operand {
            transposed: !o.transposed,
            ..o
        };
        let acc_ty = match &self.acc_ty {
            Type::Tile { shape, elem, .. } if shape.len() == 2 => Type::Tile {
                shape: vec![shape[1], shape[0]],
                elem: *elem,
                layout: None,
            },
            other => other.clone(),
        };
        Matmul {
            a: flip(self.b),
            b: flip(self.a),
            bm: self.bn,
            bn: self.bm,
            elem: self.b_elem,
            b_elem: self.elem,
            acc_ty,
            ..self
        }
    }

    /// The tile, as the target's legality table ([`Target::check_gemm_tile`]) reads it.
    fn tile(&self) -> GemmTile {
        GemmTile {
            bm: self.bm,
            bn: self.bn,
            bk: self.bk,
            elem: self.elem,
            b_elem: self.b_elem,
            acc: self.acc_ty.elem().unwrap_or(ScalarType::F32),
            a_k_major: !self.a.transposed,
            b_k_major: self.b.transposed,
        }
    }

    /// `tile.mma`'s operand-major attributes (PTX ISA, wgmma: "matrices in shared memory
    /// ... K-major or MN-major"): `a_major` `"k"` (A stored M×K, the default) or `"m"`
    /// (stored K×M); `b_major` `"n"` (B stored K×N, the default) or `"k"` (stored N×K, as
    /// `nn.Linear` keeps its weight). Only the non-default ones are written; f32 rings also
    /// get `precision = "tf32"`, which the dot asked for.
    fn major_attrs(&self) -> Vec<(&'static str, Attribute)> {
        let mut v = vec![];
        if self.a.transposed {
            v.push(("a_major", Attribute::Str("m".into())));
        }
        if self.b.transposed {
            v.push(("b_major", Attribute::Str("k".into())));
        }
        if self.elem == ScalarType::F32 {
            v.push(("precision", Attribute::Str("tf32".into())));
        }
        v
    }
}

/// Follow a dot operand back to its `tile.load` in the K loop body, through transposes and
/// reshapes that only add or drop unit dimensions; records the ops passed.
fn trace_operand(
    m: &Module,
    body_defs: &HashMap<Value, &Operation>,
    dot: &Operation,
    which: &str,
    used: &mut Vec<*const Operation>,
) -> Result<(Value, bool), Diagnostic> {
    let mut v = dot.operands[usize::from(which == "B")];
    let mut transposed = false;
    loop {
        let Some(d) = body_defs.get(&v) else {
            return Err(Diagnostic::error(
                dot.loc.clone(),
                format!("tile-to-gpu: the dot's {which} operand is not computed in the K loop"),
            ));
        };
        used.push(*d as *const Operation);
        match d.kind {
            OpKind::Load => return Ok((v, transposed)),
            OpKind::Transpose => transposed = !transposed,
            OpKind::Reshape => {
                let nonunit = |t: &Type| -> Vec<u64> {
                    t.tile_shape()
                        .unwrap_or(&[])
                        .iter()
                        .copied()
                        .filter(|&n| n != 1)
                        .collect()
                };
                if nonunit(m.ty(d.operands[0])) != nonunit(m.ty(d.results[0])) {
                    return Err(Diagnostic::error(
                        d.loc.clone(),
                        format!(
                            "tile-to-gpu: a 'tile.reshape' between the load of {which} and the \
                             dot may only add or drop unit dimensions ({} -> {})",
                            m.ty(d.operands[0]),
                            m.ty(d.results[0])
                        ),
                    ));
                }
                // [1, n] <-> [n, 1] in the matrix dimensions is a transpose (tile-simplify
                // writes a transpose of a vector so).
                let matrix = |t: &Type| -> [u64; 2] {
                    let s = t.tile_shape().unwrap_or(&[]);
                    let at = |i: usize| s.len().checked_sub(i).map_or(1, |j| s[j]);
                    [at(2), at(1)]
                };
                let (a, b) = (matrix(m.ty(d.operands[0])), matrix(m.ty(d.results[0])));
                if a != b && a == [b[1], b[0]] {
                    transposed = !transposed;
                }
            }
            other => {
                return Err(Diagnostic::error(
                    d.loc.clone(),
                    format!(
                        "tile-to-gpu: the dot's {which} operand must be a 'tile.load' in the K \
                         loop, seen through 'tile.transpose' and unit-dimension 'tile.reshape' \
                         only; found '{}'",
                        other.name()
                    ),
                ));
            }
        }
        v = d.operands[0];
    }
}

/// The operand loaded as `v` (a `tile.load` result): checks the load's shape (unit
/// dimensions first, then the matrix) and that it reads at k = the induction variable
/// along the dimension that is K for the dot (`k_is_col`: the ring's columns).
fn operand_of(
    m: &Module,
    load: &Operation,
    transposed: bool,
    k_is_col_in_view: bool,
    iv: Value,
    which: &str,
) -> Result<Operand, Diagnostic> {
    let e = |msg: String| Err(Diagnostic::error(load.loc.clone(), msg));
    if load.attr("padding").is_some() {
        return e(
            "tile-to-gpu: the TMA copies of the K loop fill out-of-bounds elements with zero; a \
             'padding' on its loads is not supported"
                .into(),
        );
    }
    let shape = m.ty(load.results[0]).tile_shape().unwrap_or(&[]).to_vec();
    let r = shape.len();
    if r < 2 || shape[..r - 2].iter().any(|&n| n != 1) {
        return e(format!(
            "tile-to-gpu: the load of {which} must be a 2-D tile, or one whose leading \
             dimensions are 1 (a batch index); found {}",
            m.ty(load.results[0])
        ));
    }
    let coords = load.operands[1..].to_vec();
    // K is the ring's column when the dot's view keeps K as its column (A) un-transposed,
    // or its row (B) transposed.
    let k_in_ring_col = k_is_col_in_view != transposed;
    let k_pos = if k_in_ring_col { r - 1 } else { r - 2 };
    let layout = match (which, transposed) {
        ("A", false) => "A[.., M, K] at (.., row, k)",
        ("A", true) => "A[.., K, M] at (.., k, row)",
        (_, false) => "B[.., K, N] at (.., k, col)",
        (_, true) => "B[.., N, K] at (.., col, k)",
    };
    if coords[k_pos] != iv
        || coords
            .iter()
            .enumerate()
            .any(|(i, &c)| i != k_pos && c == iv)
    {
        return e(format!(
            "tile-to-gpu: {which} must be loaded as {layout}, with k the K loop's induction \
             variable at that position only"
        ));
    }
    Ok(Operand {
        tensor: load.operands[0],
        coords,
        k_pos,
        ring: [shape[r - 2], shape[r - 1]],
        transposed,
    })
}

/// Which operand copies are multicast in a cluster launch, and along which cluster
/// dimension: for A and B, the first dimension with more than one CTA along which the
/// copy's coordinates (but k) cannot differ, where the stage's rows split evenly into
/// parts of a multiple of 8 rows (whole swizzle atoms). Nothing is multicast unless the K
/// range and the tile loop are the same in every CTA of the cluster (the ring's stages
/// and phases then run in step in all of them). Also returns the dimensions whose peers
/// release a stage (those used).
fn multicast_plan(
    mm: &Matmul,
    cluster: [i64; 3],
    deps: &HashMap<Value, u8>,
    tile_loop: Option<&Operation>,
) -> ([Option<usize>; 2], Vec<usize>) {
    let dep = |v: &Value| deps.get(v).copied().unwrap_or(0);
    let mut k_dep = dep(&mm.ub) | mm.lb.as_ref().map_or(0, dep);
    if let Some(tl) = tile_loop {
        k_dep |= tl.operands.iter().fold(0, |a, v| a | dep(v));
    }
    let mut plan = [None, None];
    if cluster.iter().product::<i64>() == 1 || k_dep != 0 {
        return (plan, vec![]);
    }
    for (i, x) in [&mm.a, &mm.b].into_iter().enumerate() {
        let d = x
            .coords
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != x.k_pos)
            .fold(0, |a, (_, v)| a | dep(v));
        plan[i] = (0..3).find(|&dim| {
            let n = cluster[dim] as u64;
            n > 1 && d & (1 << dim) == 0 && x.ring[0] % (8 * n) == 0
        });
    }
    let mut dims: Vec<usize> = plan.iter().flatten().copied().collect();
    dims.sort_unstable();
    dims.dedup();
    (plan, dims)
}

/// The cluster dimensions (bit d for dimension d) each value may depend on, over `ops` and
/// their regions. A value computed from `tile.cluster_ctaid`, `tile.ctaid` along d or
/// `tile.cluster_ctarank` (every bit) may differ between CTAs of one cluster that differ
/// along d; `tile.clusterid` and arguments are the same in all of them. A `tile.for`'s
/// induction variable depends on its bounds, a carried value on its init and what the body
/// yields for it; a `tile.if`'s results on the condition and both branches' yields; any
/// other op with regions on everything it holds. An over-approximation: loads are
/// multicast only where their boxes are provably the same.
fn cluster_deps(ops: &[Operation], deps: &mut HashMap<Value, u8>) -> u8 {
    let of = |deps: &HashMap<Value, u8>, vs: &[Value]| {
        vs.iter()
            .fold(0u8, |a, v| a | deps.get(v).copied().unwrap_or(0))
    };
    let yields = |b: &Block| {
        b.ops
            .last()
            .filter(|y| y.kind == OpKind::Yield)
            .map(|y| y.operands.clone())
            .unwrap_or_default()
    };
    let mut all = 0;
    for o in ops {
        let mut d = of(deps, &o.operands);
        match o.kind {
            OpKind::ClusterCtaId | OpKind::CtaId => {
                d |= 1 << o.int_attr("dim").unwrap_or(0).clamp(0, 2);
            }
            OpKind::ClusterCtaRank => d |= 0b111,
            _ => {}
        }
        let mut res = vec![d; o.results.len()];
        match o.kind {
            OpKind::For if o.regions.len() == 1 && o.operands.len() >= 3 => {
                let b = &o.regions[0];
                let bounds = of(deps, &o.operands[..3]);
                let mut carried: Vec<u8> =
                    o.operands[3..].iter().map(|v| of(deps, &[*v])).collect();
                loop {
                    if let Some(&iv) = b.args.first() {
                        deps.insert(iv, bounds);
                    }
                    for (a, c) in b.args.iter().skip(1).zip(&carried) {
                        deps.insert(*a, *c);
                    }
                    all |= cluster_deps(&b.ops, deps);
                    let y = yields(b);
                    let next: Vec<u8> = carried
                        .iter()
                        .enumerate()
                        .map(|(i, c)| c | y.get(i).map_or(0, |v| of(deps, &[*v])))
                        .collect();
                    if next == carried {
                        break;
                    }
                    carried = next;
                }
                res = carried;
                res.resize(o.results.len(), d);
            }
            OpKind::If => {
                for b in &o.regions {
                    all |= cluster_deps(&b.ops, deps);
                    for (i, v) in yields(b).iter().enumerate() {
                        if let Some(r) = res.get_mut(i) {
                            *r |= of(deps, &[*v]);
                        }
                    }
                }
            }
            _ if !o.regions.is_empty() => loop {
                for b in &o.regions {
                    for &a in &b.args {
                        deps.insert(a, d);
                    }
                }
                let inner = o
                    .regions
                    .iter()
                    .fold(0, |acc, b| acc | cluster_deps(&b.ops, deps));
                all |= inner;
                if inner & !d == 0 {
                    res = vec![d; o.results.len()];
                    break;
                }
                d |= inner;
            },
            _ => {}
        }
        for (&r, &x) in o.results.iter().zip(&res) {
            deps.insert(r, x);
        }
        all |= d;
    }
    all
}

fn find_matmul<'a>(
    m: &Module,
    outer: &'a [Operation],
    body: &'a Block,
    kernel_loc: &Location,
) -> Result<Matmul, Diagnostic> {
    let mut defs: HashMap<Value, &Operation> = HashMap::new();
    for op in outer.iter().chain(&body.ops) {
        for &r in &op.results {
            defs.insert(r, op);
        }
    }
    let loops: Vec<usize> = body
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.kind == OpKind::For && o.regions[0].ops.iter().any(|x| x.kind == OpKind::Dot)
        })
        .map(|(i, _)| i)
        .collect();
    let &[li] = loops.as_slice() else {
        let place = if outer.is_empty() {
            "the kernel body"
        } else {
            "the body of the persistent tile loop"
        };
        return Err(Diagnostic::error(
            kernel_loc.clone(),
            format!(
                "tile-to-gpu expects exactly one 'tile.for' loop containing a 'tile.dot' \
                 directly in {place}, found {}",
                loops.len()
            ),
        ));
    };
    let lp = &body.ops[li];
    let err = |msg: String| Diagnostic::error(lp.loc.clone(), msg);
    if lp.operands.len() != 4 || lp.results.len() != 1 {
        return Err(err(
            "tile-to-gpu expects the K loop to carry exactly one value, the accumulator".into(),
        ));
    }
    let (lb, ub, step, init) = (
        lp.operands[0],
        lp.operands[1],
        lp.operands[2],
        lp.operands[3],
    );
    // The lower bound: the constant 0, or any index value computed before the loop (a
    // split-K slice starts at s·Kc).
    let lb = (const_of(&defs, lb) != Some(0)).then_some(lb);
    let Some(bk) = const_of(&defs, step) else {
        return Err(err(
            "tile-to-gpu expects the K loop step to be a constant (the K tile)".into(),
        ));
    };
    if defs.get(&init).is_none_or(|d| d.kind != OpKind::Zeros) {
        return Err(err(
            "tile-to-gpu expects the accumulator to start as 'tile.zeros'".into(),
        ));
    }
    let b = &lp.regions[0];
    let (iv, carried) = (b.args[0], b.args[1]);
    let dots: Vec<&Operation> = b.ops.iter().filter(|o| o.kind == OpKind::Dot).collect();
    let (&[dot], Some(y)) = (dots.as_slice(), b.ops.last()) else {
        return Err(err(format!(
            "tile-to-gpu expects one 'tile.dot' in the K loop, found {}",
            dots.len()
        )));
    };
    if dot.operands.len() != 3 || dot.operands[2] != carried || y.operands != [dot.results[0]] {
        return Err(Diagnostic::error(
            dot.loc.clone(),
            "tile-to-gpu expects 'tile.dot %a, %b, %acc' of the carried accumulator, yielded"
                .to_string(),
        ));
    }
    let body_defs: HashMap<Value, &Operation> = b
        .ops
        .iter()
        .flat_map(|o| o.results.iter().map(move |&r| (r, o)))
        .collect();
    let mut used: Vec<*const Operation> = vec![dot as *const Operation, y as *const Operation];
    let (va, ta) = trace_operand(m, &body_defs, dot, "A", &mut used)?;
    let (vb, tb) = trace_operand(m, &body_defs, dot, "B", &mut used)?;
    if let Some(o) = b
        .ops
        .iter()
        .find(|o| !used.contains(&(*o as *const Operation)))
    {
        return Err(Diagnostic::error(
            o.loc.clone(),
            format!(
                "tile-to-gpu: the K loop may hold only the loads of A and B, layout ops \
                 ('tile.transpose', unit-dimension 'tile.reshape') between them and the dot, the \
                 dot and the yield; found '{}'",
                o.kind.name()
            ),
        ));
    }
    // A 1x1 load reads the same either way round (tile-simplify drops its transpose).
    let either = |v: Value, t: bool, k_col: bool, which: &str| {
        operand_of(m, body_defs[&v], t, k_col, iv, which).or_else(|e| {
            let unit = m
                .ty(v)
                .tile_shape()
                .is_some_and(|s| s.iter().all(|&n| n == 1));
            if unit {
                operand_of(m, body_defs[&v], !t, k_col, iv, which)
            } else {
                Err(e)
            }
        })
    };
    let a = either(va, ta, true, "A")?;
    let bo = either(vb, tb, false, "B")?;
    let [am, ak] = a.view();
    let [bk_b, bn] = bo.view();
    let elem = m.ty(va).elem().unwrap_or(ScalarType::F32);
    let b_elem = m.ty(vb).elem().unwrap_or(ScalarType::F32);
    if b_elem != elem && !(elem.is_fp8() && b_elem.is_fp8()) {
        return Err(Diagnostic::error(
            dot.loc.clone(),
            format!(
                "tile-to-gpu: A and B must have one element type (or be e4m3/e5m2, which \
                 mix), found {} and {}",
                m.ty(va),
                m.ty(vb)
            ),
        ));
    }
    let tf32 = dot.str_attr("precision") == Some("tf32");
    if elem == ScalarType::F32 && !tf32 {
        return Err(Diagnostic::error(
            dot.loc.clone(),
            "tile-to-gpu: an f32 x f32 'tile.dot' has no MMA instruction; the tensor cores \
             take f32 data as tf32 (10 mantissa bits), which the dot must ask for with \
             {precision = \"tf32\"}"
                .to_string(),
        ));
    }
    if ak as i64 != bk || bk_b as i64 != bk {
        return Err(err(format!(
            "tile-to-gpu: the loop step ({bk}) must equal the K size of the A and B tiles ({ak} \
             and {bk_b})"
        )));
    }
    Ok(Matmul {
        loop_idx: li,
        a,
        b: bo,
        lb,
        ub,
        ub_positive: const_of(&defs, ub).is_some_and(|v| v > 0),
        bm: am,
        bn,
        bk: ak,
        elem,
        b_elem,
        acc_ty: m.ty(init).clone(),
        init,
    })
}

/// Check the tile configuration against the target; the error names the limit.
fn check_config(
    mm: &Matmul,
    target: Target,
    stages: u64,
    other_smem: u64,
    staging: u64,
    loc: &Location,
) -> Result<u64, Diagnostic> {
    let tile = mm.tile();
    if let Err(r) = target.check_gemm_tile(&tile) {
        let msg = format!("tile-to-gpu for {target}: {}", r.message);
        return Err(Diagnostic::error(loc.clone(), msg).with_kind(r.kind));
    }
    let stage_bytes = tile.stage_bytes();
    let total = ring_bytes(&tile, stages) + other_smem + staging;
    let limit = target.max_smem_per_block();
    if total > limit {
        let mut other = if other_smem > 0 {
            format!(" + {other_smem} for other buffers")
        } else {
            String::new()
        };
        if staging > 0 {
            other.push_str(&format!(" + {staging} for the epilogue=tma staging ring"));
        }
        let other_smem = other_smem + staging;
        let msg = format!(
            "tile-to-gpu: {stages} stages of {}x{} + {}x{} {} tiles need {total} bytes of shared \
                memory ({stage_bytes} per stage + {BARRIER_REGION_BYTES} for barriers{other}), \
                over the {limit}-byte limit per block on {target}; use at most {} stages",
            mm.bm,
            mm.bk,
            mm.bk,
            mm.bn,
            mm.elem,
            (limit - BARRIER_REGION_BYTES - other_smem.min(limit - BARRIER_REGION_BYTES))
                / stage_bytes
        );
        let resource = "shared memory bytes per block";
        return Err(Diagnostic::resource_limit(
            loc.clone(),
            msg,
            resource,
            total,
            limit,
        ));
    }
    Ok(total)
}

/// Deep-copy `ops` with fresh result and block-argument values; `map` renames operands
/// (and receives the new names).
fn clone_ops(m: &mut Module, ops: &[Operation], map: &mut HashMap<Value, Value>) -> Vec<Operation> {
    ops.iter().map(|o| clone_op(m, o, map)).collect()
}

pub(crate) fn clone_op(
    m: &mut Module,
    o: &Operation,
    map: &mut HashMap<Value, Value>,
) -> Operation {
    let mut c = o.clone();
    for v in &mut c.operands {
        if let Some(r) = map.get(v) {
            *v = *r;
        }
    }
    c.regions = o
        .regions
        .iter()
        .map(|b| {
            let args = b
                .args
                .iter()
                .map(|&a| {
                    let n = m.values[a.0 as usize].clone();
                    let v = m.new_value(n.ty, n.name);
                    map.insert(a, v);
                    v
                })
                .collect();
            Block {
                args,
                ops: clone_ops(m, &b.ops, map),
            }
        })
        .collect();
    c.results = o
        .results
        .iter()
        .map(|&r| {
            let n = m.values[r.0 as usize].clone();
            let v = m.new_value(n.ty, n.name);
            map.insert(r, v);
            v
        })
        .collect();
    c
}

/// The element type of the (single) `tile.store`'s tile in `ops`.
fn m_elem_of(m: &Module, ops: &[Operation]) -> ScalarType {
    ops.iter()
        .find(|o| o.kind == OpKind::Store)
        .and_then(|o| m.ty(*o.operands.last()?).elem())
        .unwrap_or(ScalarType::BF16)
}

/// Columns of one TMA-store box (128 bytes of a 16-bit element: one swizzle span).
pub const STORE_BOX_COLS: u64 = 64;

/// Slots of the TMA-store staging ring.
pub const STAGING_SLOTS: u64 = 2;

/// The epilogue's `tile.store` to rewrite as a TMA store, checked: its index in
/// `epilogue` and the staging ring's bytes.
fn tma_store_plan(
    m: &Module,
    mm: &Matmul,
    target: Target,
    epilogue: &[Operation],
    loc: &Location,
) -> Result<(usize, u64), Diagnostic> {
    let e = |l: &Location, msg: String| Err(Diagnostic::error(l.clone(), msg));
    if !target.has_wgmma() {
        return Err(Diagnostic::target_lacks(
            loc.clone(),
            format!(
                "tile-to-gpu: epilogue=tma is implemented for sm_90a (wgmma \
                    fragments, one warpgroup per 64 rows); the target is {target}"
            ),
            target.name(),
            "wgmma.mma_async",
        ));
    }
    let stores: Vec<usize> = epilogue
        .iter()
        .enumerate()
        .filter(|(_, o)| o.kind == OpKind::Store)
        .map(|(i, _)| i)
        .collect();
    let &[si] = stores.as_slice() else {
        let mut nested = 0;
        for o in epilogue.iter().filter(|o| o.kind != OpKind::Store) {
            o.walk(&mut |x| nested += usize::from(x.kind == OpKind::Store));
        }
        let inside = if nested > 0 {
            format!(
                " (and {nested} inside 'tile.if' or loops, which epilogue=tma does not \
                 take; use epilogue=direct)"
            )
        } else {
            String::new()
        };
        return e(
            loc,
            format!(
                "tile-to-gpu: epilogue=tma expects exactly one 'tile.store' directly after \
                    the K loop, found {}{inside}",
                stores.len()
            ),
        );
    };
    let st = &epilogue[si];
    let Type::Tile { shape, elem, .. } = m.ty(st.operands[st.operands.len() - 1]).clone() else {
        unreachable!("verified store")
    };
    if st.operands.len() == shape.len() + 3 {
        return e(
            &st.loc,
            "tile-to-gpu: epilogue=tma stores whole boxes, and TMA has no element mask; a \
                masked 'tile.store' is stored from the registers (epilogue=direct)"
                .into(),
        );
    }
    // Leading unit dimensions (a batch index): the box is 1 there.
    let lead = shape.len().saturating_sub(2);
    if shape.len() < 2 || shape[..lead].iter().any(|&d| d != 1) || shape[lead..] != [mm.bm, mm.bn] {
        return e(
            &st.loc,
            format!(
                "tile-to-gpu: epilogue=tma stores the whole {}x{} output tile (with leading \
                    unit dimensions for a tensor of higher rank); this store writes a {} \
                    tile",
                mm.bm,
                mm.bn,
                shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        );
    }
    if elem.size_bytes() != 2 {
        return e(
            &st.loc,
            format!(
                "tile-to-gpu: epilogue=tma stages 16-bit elements (bf16, f16: \
                    stmatrix, one 128-byte row per 64-column box); the store writes {elem}"
            ),
        );
    }
    if !mm.bn.is_multiple_of(STORE_BOX_COLS) {
        return e(
            &st.loc,
            format!(
                "tile-to-gpu: epilogue=tma stores 64-column boxes; the N tile {} \
                    is not a multiple of 64",
                mm.bn
            ),
        );
    }
    Ok((
        si,
        STAGING_SLOTS * mm.bm * STORE_BOX_COLS * elem.size_bytes(),
    ))
}

/// Rewrites kernel `k`'s K loop; `opts` are (stages, tma_epilogue, promote).
fn lower_kernel(
    m: &mut Module,
    k: &mut Operation,
    target: Target,
    opts: (u64, bool, Option<bool>),
    remarks: &mut Vec<Diagnostic>,
) -> Result<u64, Diagnostic> {
    let (stages, tma_epilogue, promote) = opts;
    // A cluster launch: which values may differ between the cluster's CTAs.
    let cluster = k.cluster_shape();
    let mut deps = HashMap::new();
    if cluster.iter().product::<i64>() > 1 {
        cluster_deps(&k.regions[0].ops, &mut deps);
    }
    // The K loop sits in the kernel body, or in the body of a persistent tile loop
    // (`tile.for {tile_loop = true}`, made by the `persistent` pass).
    let kbody = &k.regions[0];
    let tile_loop_idx = kbody.ops.iter().position(|o| {
        matches!(o.kind, OpKind::For | OpKind::While)
            && o.attr("tile_loop").and_then(Attribute::as_bool) == Some(true)
    });
    let (outer_ops, scope): (&[Operation], &Block) = match tile_loop_idx {
        Some(i) => (&kbody.ops[..i], &kbody.ops[i].regions[0]),
        None => (&[], kbody),
    };
    let mm = find_matmul(m, outer_ops, scope, &k.loc)?;
    let lp_loc = scope.ops[mm.loop_idx].loc.clone();
    // K bounds computed per tile (inside a persistent tile loop, e.g. from the split-K
    // program id): the k-tile count is then computed per tile in both regions.
    let per_tile_bounds = tile_loop_idx.is_some()
        && scope.ops[..mm.loop_idx]
            .iter()
            .any(|o| o.results.contains(&mm.ub) || mm.lb.is_some_and(|lb| o.results.contains(&lb)));
    // Shared memory the kernel already allocates (e.g. clc response slots), each buffer
    // 1024-byte aligned as the lowering places it.
    let other_smem: u64 = outer_ops
        .iter()
        .filter(|o| o.kind == OpKind::SmemAlloc)
        .filter_map(|o| match m.ty(o.results[0]) {
            Type::Smem {
                stages,
                shape,
                elem,
            } => Some(
                (stages * shape.iter().product::<u64>() * elem.size_bytes()).div_ceil(1024) * 1024,
            ),
            _ => None,
        })
        .sum();
    // The epilogue's own ops (not the persistent loop's `role` ops).
    let after: Vec<Operation> = scope.ops[mm.loop_idx + 1..]
        .iter()
        .filter(|o| o.str_attr("role").is_none())
        .cloned()
        .collect();
    let tma_plan = if tma_epilogue {
        Some(tma_store_plan(m, &mm, target, &after, &lp_loc)?)
    } else {
        None
    };
    // `tile.extract` reads a tensor through its pointer; the pipeline passes A and B, and C
    // under epilogue=tma, as TMA tensor maps instead.
    let mut maps = vec![(mm.a.tensor, "A"), (mm.b.tensor, "B")];
    if let Some(st) = tma_plan.and_then(|(si, _)| after.get(si)) {
        maps.push((st.operands[0], "C (epilogue=tma)"));
    }
    let mut read_map = None;
    k.walk(&mut |o| {
        if o.kind == OpKind::Extract && read_map.is_none() {
            read_map = maps
                .iter()
                .find(|(t, _)| o.operands.first() == Some(t))
                .map(|(_, n)| (o, *n));
        }
    });
    if let Some((o, name)) = read_map {
        return Err(Diagnostic::error(
            o.loc.clone(),
            format!(
                "tile-to-gpu: 'tile.extract' reads {name}, which the GEMM pipeline passes as a \
                 TMA tensor map (no pointer to read one element through); read it from a \
                 tensor the pipeline does not copy{}",
                if name.starts_with('C') {
                    ", or store C from the registers (epilogue=direct)"
                } else {
                    ""
                }
            ),
        ));
    }
    let staging_bytes = tma_plan.map_or(0, |p| p.1);
    let smem = check_config(&mm, target, stages, other_smem, staging_bytes, &lp_loc)?;
    // An M tile below wgmma's 64 rows: the MMA computes the BN×BM tile of Cᵀ = Bᵀ · Aᵀ,
    // and a `tile.transpose` after the K loop gives the epilogue its BM×BN tile.
    let swap = target.swaps_ab(&mm.tile());
    if swap && tma_epilogue {
        return Err(Diagnostic::error(
            lp_loc.clone(),
            format!(
                "tile-to-gpu: an M tile of {} is computed as the transposed product (swap-AB), \
                 whose epilogue stores from the registers: --epilogue-store tma takes an M tile \
                 of 64 or 128",
                mm.bm
            ),
        )
        .with_kind(tilec_dialect::DiagKind::Unsupported));
    }
    if swap {
        // The lowering reads the accumulator in the transposed space once; an epilogue that
        // transposes it again would need both spaces.
        let mut again = None;
        for o in &scope.ops[mm.loop_idx + 1..] {
            o.walk(&mut |x| {
                if x.kind == OpKind::Transpose && again.is_none() {
                    again = Some(x.loc.clone());
                }
            });
        }
        if let Some(loc) = again {
            return Err(Diagnostic::error(
                loc,
                format!(
                    "tile-to-gpu: an M tile of {} is computed as the transposed product \
                     (swap-AB), whose epilogue reads the accumulator transposed; a \
                     'tile.transpose' in the epilogue is not lowered with it: use an M tile of \
                     64 or 128",
                    mm.bm
                ),
            )
            .with_kind(tilec_dialect::DiagKind::Unsupported));
        }
    }
    let mm = if swap { mm.swapped() } else { mm };
    // Accumulators per consumer thread: the sum and the k tile's part, and on wgmma where
    // it fits the next k tile's part, in flight during the add.
    let threads = if target.has_wgmma() {
        WARPGROUP_THREADS as u64 * (mm.bm / 64)
    } else {
        256
    };
    let max_regs = if target.has_wgmma() {
        PROMOTE_MAX_ACC_REGS
    } else {
        PROMOTE_MAX_ACC_REGS_MMA_SYNC
    };
    let regs = mm.bm * mm.bn / threads;
    let accs = 2;
    let fits = accs * regs <= max_regs;
    // The widest N tile (a multiple of 8) whose accumulators fit at this M tile.
    let max_bn = max_regs * threads / (accs * mm.bm) / 8 * 8;
    if promote.is_none() && mm.elem.is_fp8() && target.has_wgmma() && !fits {
        remarks.push(Diagnostic::remark(
            lp_loc.clone(),
            format!(
                "tile-to-gpu: this fp8 GEMM's sum is not promoted: two {}x{} f32 accumulators \
                 need {} registers per consumer thread, over {max_regs}, so it keeps wgmma's \
                 reduced-precision fp8 accumulation (torch._scaled_mm's use_fast_accum=True); \
                 an N tile of at most {max_bn} with an M tile of {} is promoted",
                mm.bm,
                mm.bn,
                accs * regs,
                mm.bm
            ),
        ));
    }
    let promote = promote.unwrap_or(mm.elem.is_fp8() && target.has_wgmma() && fits);
    if promote && !fits {
        let fix = if target.has_wgmma() {
            format!(
                "use an N tile of at most {max_bn} with an M tile of {} on {target}",
                mm.bm
            )
        } else {
            format!("the mma.sync tile on {target} is 128x256: promote is for wgmma")
        };
        return Err(Diagnostic::resource_limit(
            lp_loc.clone(),
            format!(
                "tile-to-gpu: promote keeps {accs} {}x{} f32 accumulators, {} registers per \
                 consumer thread; at most {max_regs} leave room for addresses and \
                 fragments ({fix})",
                mm.bm,
                mm.bn,
                accs * regs,
            ),
            "accumulator registers per thread",
            accs * regs,
            max_regs,
        ));
    }
    let overlap = promote && target.has_wgmma() && 3 * regs <= max_regs;
    let consumers = (mm.bm / 64) as i64;
    // TMA multicast is built for the wgmma GEMM on sm_90a (its `.multicast::cluster` form).
    let (multicast, peer_dims) = if target.has_wgmma() && target.has_tma_multicast() {
        multicast_plan(
            &mm,
            cluster,
            &deps,
            tile_loop_idx.map(|i| &k.regions[0].ops[i]),
        )
    } else {
        ([None, None], vec![])
    };
    if cluster.iter().product::<i64>() > 1 && multicast == [None, None] && target.has_wgmma() {
        remarks.push(Diagnostic::remark(
            lp_loc.clone(),
            format!(
                "tile-to-gpu: the kernel's cluster {cluster:?} multicasts no copy: the K range \
                 or the tile loop may differ between its CTAs, or no operand's coordinates are \
                 the same along a cluster dimension whose size splits the stage's rows into \
                 whole 8-row swizzle atoms"
            ),
        ));
    }

    // Split the ops: kernel-level (kept), per-tile prologue P, the K loop, epilogue E.
    let mut kernel_ops = std::mem::take(&mut k.regions[0].ops);
    let ret = kernel_ops
        .pop()
        .expect("verified kernel ends with tile.return");
    let mut tl_yield: Option<Operation> = None;
    let (kernel_head, tile_loop, mut scope_ops) = match tile_loop_idx {
        Some(i) => {
            let mut tl = kernel_ops.remove(i);
            let rest = kernel_ops.split_off(i);
            if !rest.is_empty() {
                return Err(Diagnostic::error(
                    rest[0].loc.clone(),
                    "tile-to-gpu: nothing may follow the persistent tile loop",
                ));
            }
            let mut ops = std::mem::take(&mut tl.regions[0].ops);
            tl_yield = ops.pop(); // its tile.yield
            (kernel_ops, Some(tl), ops)
        }
        None => (vec![], None, kernel_ops),
    };
    let after = scope_ops.split_off(mm.loop_idx + 1);
    let old_loop = scope_ops.pop().expect("the K loop");
    let per_tile = scope_ops;
    let role = |o: &Operation| o.str_attr("role").map(str::to_string);
    let (tail, mut epilogue): (Vec<Operation>, Vec<Operation>) =
        after.into_iter().partition(|o| role(o).is_some());
    // The tile loop's next iteration is decided in both regions: what it yields must not
    // come from the epilogue, which only the consumers run.
    if let Some(y) = &tl_yield {
        let mut from_epilogue = std::collections::HashSet::new();
        for o in &epilogue {
            o.walk(&mut |x| from_epilogue.extend(x.results.iter().copied()));
        }
        if y.operands.iter().any(|v| from_epilogue.contains(v)) {
            return Err(Diagnostic::error(
                y.loc.clone(),
                "tile-to-gpu: the persistent tile loop \
                    yields a value computed in the epilogue (after the K loop, without role = \
                    \"all\"); both the producer and the consumers need it",
            ));
        }
    }
    // mma.sync kernels have no producer warpgroup to give registers away with setmaxnreg
    // (sm_90 and sm_100 lack it), and the hardware allocates registers to warps in
    // groups of four, so a producer warp beside the 8 consumer warps would cap every thread
    // at 168 registers (where the 128x256 tile spills): there the consumers' thread 0
    // issues the copies, S - 1 k tiles ahead, and the CTA is the 8 warps (255 registers).
    let no_producer = !target.has_wgmma();
    // The consumer region's copy of ops that may be scheduler-only: those become the
    // constants a never-written register holds (with a producer, which runs them).
    let for_consumers = |ops: Vec<Operation>| -> Vec<Operation> {
        let mut out = vec![];
        for o in ops {
            if o.str_attr("role") == Some("scheduler") && !no_producer {
                for &r in &o.results {
                    let mut c = Operation::new(OpKind::Constant, o.loc.clone());
                    c.attrs.insert("value".into(), Attribute::Int(0));
                    c.results = vec![r];
                    out.push(c);
                }
            } else {
                out.push(o);
            }
        }
        out
    };
    // Scale per-CTA arrival counts by the arrivals one CTA makes.
    // The producer's elected thread, if any, and the consumer warps.
    let arrivals_per_cta = i64::from(!no_producer) + 4 * (mm.bm / 64) as i64;
    let mut kernel_head = kernel_head;
    for o in &mut kernel_head {
        if o.kind == OpKind::MbarrierAlloc
            && o.attr("per_cta").and_then(Attribute::as_bool) == Some(true)
        {
            let n = o.int_attr("arrive_count").unwrap_or(1);
            o.attrs
                .insert("arrive_count".into(), Attribute::Int(n * arrivals_per_cta));
            o.attrs.remove("per_cta");
        }
    }

    let mut e = Emitter {
        m,
        ops: vec![],
        loc: lp_loc.clone(),
    };
    let s = stages;
    let a_ring = e.one(
        OpKind::SmemAlloc,
        &[],
        &[("swizzle", Attribute::Int(mm.a.swizzle(mm.elem) as i64))],
        Type::Smem {
            stages: s,
            shape: mm.a.ring.to_vec(),
            elem: mm.elem,
        },
        "a_ring",
    );
    let b_ring = e.one(
        OpKind::SmemAlloc,
        &[],
        &[("swizzle", Attribute::Int(mm.b.swizzle(mm.b_elem) as i64))],
        Type::Smem {
            stages: s,
            shape: mm.b.ring.to_vec(),
            elem: mm.b_elem,
        },
        "b_ring",
    );
    let full = e.one(
        OpKind::MbarrierAlloc,
        &[],
        &[("arrive_count", Attribute::Int(1))],
        Type::Mbarrier { count: s },
        "full",
    );
    // With multicast, a stage is released by this CTA's consumer warps and by those of
    // every peer its copies fill (and whose copies fill it).
    let peers: i64 = peer_dims.iter().map(|&d| cluster[d] - 1).sum();
    let empty = e.one(
        OpKind::MbarrierAlloc,
        &[],
        &[("arrive_count", Attribute::Int(4 * consumers * (1 + peers)))],
        Type::Mbarrier { count: s },
        "empty",
    );
    let c0 = e.index(0, "c0");
    let c1 = e.index(1, "c1");
    let c2 = e.index(2, "c2");
    let cs = e.index(s as i64, "cstages");
    let cbk = e.index(mm.bk as i64, "cbk");
    // Without a producer, how far ahead the consumers' thread 0 copies: S - 1 k tiles.
    let inline_ahead = no_producer.then(|| e.index(s as i64 - 1, "cstages_m1"));
    // At least one k tile: the peeled first tile always runs (a tensor map cannot encode
    // K = 0, and with K < 64 the TMA zero-fill supplies the rest).
    //
    // The count is max(ceildiv(ub - lb, BK), 1) and k tile kt is read at kstart + kt·BK,
    // where kstart = lb when the range is not empty and -2^30 otherwise: an empty range
    // still runs the peeled tile, on boxes wholly out of bounds, which TMA fills with zeros
    // — the accumulator stays zero, as a loop of no iterations leaves it. kstart is left
    // out only for lb = 0 with a positive constant ub.
    let k_range = |e: &mut Emitter,
                   lb: Option<Value>,
                   ub: Value,
                   want_start: bool|
     -> (Value, Option<Value>) {
        let span = match lb {
            Some(lb) => e.int(OpKind::SubI, ub, lb, "kspan"),
            None => ub,
        };
        let kceil = e.int(OpKind::CeilDiv, span, cbk, "kceil");
        let ktiles = e.int(OpKind::MaxI, kceil, c1, "ktiles");
        // With lb = 0 the range may still be empty (ub ≤ 0) unless ub is a positive constant.
        let base = lb.or((!mm.ub_positive).then_some(c0));
        let kstart = base.filter(|_| want_start).map(|lb| {
            let nonempty = e.cmpi(span, c0, "sgt", "knonempty");
            let far = e.index(-(1 << 30), "kfar");
            e.one(
                OpKind::Select,
                &[nonempty, lb, far],
                &[],
                Type::INDEX,
                "kstart",
            )
        });
        (ktiles, kstart)
    };
    let kernel_range = (!per_tile_bounds).then(|| k_range(&mut e, mm.lb, mm.ub, true));
    // The staging ring and the constants of the TMA-store epilogue (kernel level).
    let staging = tma_plan.map(|_| {
        let elem = m_elem_of(e.m, &epilogue);
        let ring = e.one(
            OpKind::SmemAlloc,
            &[],
            &[("swizzle", Attribute::Int(128))],
            Type::Smem {
                stages: STAGING_SLOTS,
                shape: vec![mm.bm, STORE_BOX_COLS],
                elem,
            },
            "staging",
        );
        let slots: Vec<Value> = (0..STAGING_SLOTS)
            .map(|i| e.index(i as i64, &format!("slot{i}")))
            .collect();
        let cols: Vec<Value> = (1..mm.bn / STORE_BOX_COLS)
            .map(|j| e.index((j * STORE_BOX_COLS) as i64, &format!("box_col{j}")))
            .collect();
        (ring, slots, cols)
    });
    let prologue = e.take();
    if let (Some((si, _)), Some((staging, slots, cols))) = (tma_plan, staging) {
        // The epilogue's store → per 64-column box: stage, fence, warpgroup barrier, TMA.
        let st = epilogue.remove(si);
        let n = st.operands.len();
        let (c, lead, row, col, mut val) = (
            st.operands[0],
            st.operands[1..n - 3].to_vec(),
            st.operands[n - 3],
            st.operands[n - 2],
            st.operands[n - 1],
        );
        e.loc = st.loc.clone();
        if !lead.is_empty() {
            // The slots are 2-D: the tile without its leading unit dimensions.
            let elem = e.m.ty(val).elem().unwrap_or(ScalarType::BF16);
            val = e.one(
                OpKind::Reshape,
                &[val],
                &[],
                Type::Tile {
                    shape: vec![mm.bm, mm.bn],
                    elem,
                    layout: None,
                },
                "out_tile",
            );
        }
        for j in 0..mm.bn / STORE_BOX_COLS {
            let slot = slots[(j % STAGING_SLOTS) as usize];
            e.op(
                OpKind::SmemStore,
                &[val, staging, slot],
                &[("col_offset", Attribute::Int((j * STORE_BOX_COLS) as i64))],
                &[],
                None,
            );
            e.op(OpKind::FenceProxyAsync, &[], &[], &[], None);
            e.op(
                OpKind::NamedBarrier,
                &[],
                &[
                    (
                        "id",
                        Attribute::Int(crate::async_wait_placement::EPILOGUE_BARRIER_ID),
                    ),
                    ("threads", Attribute::Int(WARPGROUP_THREADS)),
                ],
                &[],
                None,
            );
            let cj = if j == 0 {
                col
            } else {
                e.int(
                    OpKind::AddI,
                    col,
                    cols[j as usize - 1],
                    &format!("store_col{j}"),
                )
            };
            let mut operands = vec![c, staging, slot];
            operands.extend(&lead);
            operands.extend([row, cj]);
            e.op(OpKind::TmaStore, &operands, &[], &[], None);
        }
        let seq = e.take();
        epilogue.splice(si..si, seq);
        e.loc = lp_loc.clone();
    }

    // Stage and phase parity of global k tile g: s = g mod S, parity = (g / S) mod 2. The
    // global count runs on across the tiles of a persistent loop, so the ring's phases do.
    let stage_and_parity = |e: &mut Emitter, g: Value| {
        let st = e.int(OpKind::RemI, g, cs, "stage");
        let round = e.int(OpKind::DivI, g, cs, "round");
        let ph = e.int(OpKind::RemI, round, c2, "phase");
        (st, ph)
    };
    let release: Vec<(&str, Attribute)> = if peer_dims.is_empty() {
        vec![]
    } else {
        vec![(
            "peer_dims",
            Attribute::Array(
                peer_dims
                    .iter()
                    .map(|&d| Attribute::Int(d as i64))
                    .collect(),
            ),
        )]
    };
    let mut mma_attrs = vec![("kind", Attribute::Str(target.mma_kind().into()))];
    mma_attrs.extend(mm.major_attrs());
    let tx = mm.tile().stage_bytes();

    // The copies of k tile `kt` of the tile whose global k base is `g`: wait for its stage
    // to be empty (the first round passes at once: a fresh mbarrier is in phase 0, so
    // waiting for parity 1 returns), arm the full barrier with the stage's bytes, issue
    // both copies.
    let produce_k = |e: &mut Emitter,
                     g: Value,
                     kt: Value,
                     kstart: Option<Value>,
                     (a_coords, b_coords): (&[Value], &[Value])| {
        let kg = e.int(OpKind::AddI, g, kt, "kg");
        let (st, ph) = stage_and_parity(e, kg);
        let eph = e.int(OpKind::SubI, c1, ph, "empty_phase");
        e.op(OpKind::MbarrierWait, &[empty, st, eph], &[], &[], None);
        e.op(
            OpKind::MbarrierExpectTx,
            &[full, st],
            &[("bytes", Attribute::Int(tx as i64))],
            &[],
            None,
        );
        let mut kk = e.int(OpKind::MulI, kt, cbk, "k");
        if let Some(ks) = kstart {
            kk = e.int(OpKind::AddI, ks, kk, "k");
        }
        for (i, (x, ring, coords)) in [(&mm.a, a_ring, a_coords), (&mm.b, b_ring, b_coords)]
            .into_iter()
            .enumerate()
        {
            let mut operands = vec![x.tensor, ring, full, st];
            operands.extend_from_slice(coords);
            operands[4 + x.k_pos] = kk;
            let mc: Vec<(&str, Attribute)> = multicast[i]
                .map(|d| ("multicast", Attribute::Int(d as i64)))
                .into_iter()
                .collect();
            e.op(OpKind::TmaLoad, &operands, &mc, &[], None);
        }
    };
    // One region's work for one tile, given its global k base `g`; returns the ops.
    // Producer: the copies of every k tile in turn.
    let producer_tile = |e: &mut Emitter,
                         g: Value,
                         coords: (&[Value], &[Value]),
                         (ktiles, kstart): (Value, Option<Value>)| {
        let kt = e.m.new_value(Type::INDEX, Some("kt".into()));
        produce_k(e, g, kt, kstart, coords);
        e.op(OpKind::Yield, &[], &[], &[], None);
        let body = Block {
            args: vec![kt],
            ops: e.take(),
        };
        let mut lp = Operation::new(OpKind::For, lp_loc.clone());
        lp.operands = vec![c0, ktiles, c1];
        lp.regions.push(body);
        lp
    };
    // Consumers: k tile 0 is peeled (its MMA starts from a zero accumulator, `zero_acc` =
    // wgmma's scale-d = 0, so no instruction but the MMA defines the accumulator
    // registers); in iteration kt, wait for the stage to be full, MMA over it, then
    // release stage kt-1 (deferred release keeps one MMA group in flight); after the loop
    // release the tile's last stage, then the epilogue.
    //
    // Without a producer region (`no_producer`), the consumers' thread 0 issues the
    // copies (`role = "scheduler"`): k tiles 0 .. S-2 before the chain, and at the start of
    // iteration kt k tile kt + S - 1, into the stage of k tile kt - 1, which every warp
    // released at the end of iteration kt - 1 (mma.sync reads its stage synchronously, so
    // each stage is released right after its MMA).
    let consumer_tile = |e: &mut Emitter,
                         g: Value,
                         (ktiles, kstart): (Value, Option<Value>),
                         coords: (&[Value], &[Value])|
     -> Vec<Operation> {
        let scheduler = || ("role".to_string(), Attribute::Str("scheduler".into()));
        let prefetch = |e: &mut Emitter, kt: Value| {
            let Some(ahead_by) = inline_ahead else {
                return;
            };
            let ahead = e.int(OpKind::AddI, kt, ahead_by, "kt_ahead");
            let due = e.cmpi(ahead, ktiles, "slt", "kt_ahead_due");
            let before = std::mem::take(&mut e.ops);
            produce_k(e, g, ahead, kstart, coords);
            let then = std::mem::replace(&mut e.ops, before);
            let mut op = Operation::if_then(due, then, lp_loc.clone());
            op.attrs.extend([scheduler()]);
            e.ops.push(op);
        };
        if let Some(ahead_by) = inline_ahead {
            let first = e.one(
                OpKind::MinI,
                &[ktiles, ahead_by],
                &[],
                Type::INDEX,
                "kt_prologue",
            );
            let j = e.m.new_value(Type::INDEX, Some("kt".into()));
            let before = std::mem::take(&mut e.ops);
            produce_k(e, g, j, kstart, coords);
            e.op(OpKind::Yield, &[], &[], &[], None);
            let body = std::mem::replace(&mut e.ops, before);
            let mut lp = Operation::new(OpKind::For, lp_loc.clone());
            lp.operands = vec![c0, first, c1];
            lp.regions.push(Block {
                args: vec![j],
                ops: body,
            });
            lp.attrs.extend([scheduler()]);
            e.ops.push(lp);
        }
        let mut first_attrs = mma_attrs.clone();
        first_attrs.push(("zero_acc", Attribute::Bool(true)));
        // Swapped, the chain starts from zeros of its own BN×BM type, and ends in a value
        // that the transpose after the loop turns into the old loop's result.
        let init = if swap {
            e.one(OpKind::Zeros, &[], &[], mm.acc_ty.clone(), "acc_zero")
        } else {
            mm.init
        };
        let results: Vec<Value> = if swap {
            vec![e.m.new_value(mm.acc_ty.clone(), Some("acc_t".into()))]
        } else {
            old_loop.results.clone()
        };
        // Wait for k tile `kg`'s stage to be full and MMA over it, into `acc` (a fresh
        // chain when `acc` is None).
        let mma_at = |e: &mut Emitter, kg: Value, acc: Option<Value>, name: &str| {
            let (st, ph) = stage_and_parity(e, kg);
            e.op(OpKind::MbarrierWait, &[full, st, ph], &[], &[], None);
            let (acc, attrs) = match acc {
                Some(a) => (a, &mma_attrs),
                None => (init, &first_attrs),
            };
            e.one(
                OpKind::Mma,
                &[a_ring, b_ring, st, acc],
                attrs,
                mm.acc_ty.clone(),
                name,
            )
        };
        // Release the stage of the k tile before `kg`.
        let release_prev = |e: &mut Emitter, kg: Value| {
            let wrapped = e.int(OpKind::AddI, kg, cs, "kg_wrap");
            let prev_kg = e.int(OpKind::SubI, wrapped, c1, "kg_prev");
            let prev = e.int(OpKind::RemI, prev_kg, cs, "prev_stage");
            e.op(OpKind::MbarrierArrive, &[empty, prev], &release, &[], None);
        };
        let add = |e: &mut Emitter, a: Value, b: Value| {
            e.one(OpKind::Add, &[a, b], &[], mm.acc_ty.clone(), "acc_sum")
        };
        // Promotion that waits for each part (wgmma where three accumulators do not fit):
        // once the add's wait retires a k tile's MMAs, its stage is released at once, so
        // the producer runs all `stages` k tiles ahead. k tile 0 is added to zeros, which
        // gives its wait and its release a place.
        let add_zero = promote && !overlap && target.has_wgmma();
        let release_at_once = add_zero || inline_ahead.is_some();
        let release_now = |e: &mut Emitter, kg: Value| {
            let st = e.int(OpKind::RemI, kg, cs, "done_stage");
            e.op(OpKind::MbarrierArrive, &[empty, st], &release, &[], None);
        };
        prefetch(e, c0);
        let mut acc0 = mma_at(e, g, None, "acc0");
        if add_zero {
            acc0 = add(e, init, acc0);
        }
        if release_at_once {
            release_now(e, g);
        }
        let mut ops = e.take();
        if overlap {
            // Promotion with the next k tile's chain in flight during each add: the loop
            // takes k tiles in pairs (1,2), (3,4), … and carries the sum and the last
            // part, so each part stays in one register set (no copy of an accumulator a
            // wgmma may still write); an even count leaves one k tile for the if after it.
            let j = e.m.new_value(Type::INDEX, Some("kt".into()));
            let sum_in = e.m.new_value(mm.acc_ty.clone(), Some("sum_iter".into()));
            let part_in = e.m.new_value(mm.acc_ty.clone(), Some("part_iter".into()));
            let kg = e.int(OpKind::AddI, g, j, "kg");
            let pa = mma_at(e, kg, None, "acc_part");
            let s1 = add(e, sum_in, part_in);
            release_prev(e, kg);
            let kg2 = e.int(OpKind::AddI, kg, c1, "kg_next");
            let pb = mma_at(e, kg2, None, "acc_part");
            let s2 = add(e, s1, pa);
            release_prev(e, kg2);
            e.op(OpKind::Yield, &[s2, pb], &[], &[], None);
            let body = Block {
                args: vec![j, sum_in, part_in],
                ops: e.take(),
            };
            let pair_end = e.int(OpKind::SubI, ktiles, c1, "kpair_end");
            let mut lp = Operation::new(OpKind::For, lp_loc.clone());
            lp.operands = vec![c1, pair_end, c2, init, acc0];
            let sum = e.m.new_value(mm.acc_ty.clone(), Some("sum".into()));
            let part = e.m.new_value(mm.acc_ty.clone(), Some("part".into()));
            lp.results = vec![sum, part];
            lp.regions.push(body);
            ops.extend(e.take());
            ops.push(lp);
            let parity = e.int(OpKind::RemI, ktiles, c2, "kparity");
            let even = e.cmpi(parity, c0, "eq", "keven");
            ops.extend(e.take());
            let last_kg = e.int(OpKind::AddI, g, pair_end, "kg_last_tile");
            let pa = mma_at(e, last_kg, None, "acc_part");
            let s1 = add(e, sum, part);
            release_prev(e, last_kg);
            let s2 = add(e, s1, pa);
            e.op(OpKind::Yield, &[s2], &[], &[], None);
            let then = Block {
                args: vec![],
                ops: e.take(),
            };
            let s = add(e, sum, part);
            e.op(OpKind::Yield, &[s], &[], &[], None);
            let els = Block {
                args: vec![],
                ops: e.take(),
            };
            let mut tail = Operation::new(OpKind::If, lp_loc.clone());
            tail.operands = vec![even];
            // The if's result keeps the old loop's value, so the epilogue reads it unchanged.
            tail.results = results.clone();
            tail.regions = vec![then, els];
            ops.push(tail);
        } else {
            // In iteration kt, MMA over k tile kt, then release stage kt-1 (deferred
            // release keeps one MMA group in flight). With promote (mma.sync), a fresh
            // chain per k tile added into the f32 sum.
            let kt = e.m.new_value(Type::INDEX, Some("kt".into()));
            let acc_in = e.m.new_value(mm.acc_ty.clone(), Some("acc_iter".into()));
            prefetch(e, kt);
            let kg = e.int(OpKind::AddI, g, kt, "kg");
            let d = if promote {
                let r = mma_at(e, kg, None, "acc_part");
                e.one(
                    OpKind::Add,
                    &[acc_in, r],
                    &[],
                    mm.acc_ty.clone(),
                    "acc_next",
                )
            } else {
                mma_at(e, kg, Some(acc_in), "acc_next")
            };
            if release_at_once {
                release_now(e, kg);
            } else {
                release_prev(e, kg);
            }
            e.op(OpKind::Yield, &[d], &[], &[], None);
            let body = Block {
                args: vec![kt, acc_in],
                ops: e.take(),
            };
            let mut lp = Operation::new(OpKind::For, lp_loc.clone());
            lp.operands = vec![c1, ktiles, c1, acc0];
            // The loop's result keeps the old loop's value, so the epilogue reads it
            // unchanged.
            lp.results = results.clone();
            lp.regions.push(body);
            ops.push(lp);
        }

        if !release_at_once {
            let last_g = e.int(OpKind::AddI, g, ktiles, "kg_end");
            let last_w = e.int(OpKind::AddI, last_g, cs, "kg_end_wrap");
            let last_p = e.int(OpKind::SubI, last_w, c1, "kg_last");
            let last = e.int(OpKind::RemI, last_p, cs, "last_stage");
            e.op(OpKind::MbarrierArrive, &[empty, last], &release, &[], None);
        }
        ops.extend(e.take());
        if swap {
            let mut t = Operation::new(OpKind::Transpose, lp_loc.clone());
            t.operands = results;
            t.results = old_loop.results.clone();
            ops.push(t);
        }
        ops
    };

    let (producer_region, consumer_region) = match tile_loop {
        None => {
            // One tile per CTA: the per-tile prologue stays at kernel level.
            let range = kernel_range.expect("bounds at kernel level without a tile loop");
            let coords = (&mm.a.coords[..], &mm.b.coords[..]);
            let mut pops = vec![];
            if inline_ahead.is_none() {
                pops.push(producer_tile(&mut e, c0, coords, range));
            }
            e.op(OpKind::Yield, &[], &[], &[], None);
            pops.extend(e.take());
            let mut cops = consumer_tile(&mut e, c0, range, coords);
            cops.extend(epilogue);
            e.op(OpKind::Yield, &[], &[], &[], None);
            cops.extend(e.take());
            let mut kernel_level = prologue;
            kernel_level.splice(0..0, per_tile);
            e.ops = kernel_level;
            (
                Block {
                    args: vec![],
                    ops: pops,
                },
                Block {
                    args: vec![],
                    ops: cops,
                },
            )
        }
        Some(tl) => {
            // Persistent: both regions run the tile loop, carrying the global k base. The
            // producer's copy gets fresh values for the loop's block arguments and for
            // everything defined in the loop body.
            let tl_args = tl.regions[0].args.clone();
            let tl_yield = tl_yield.expect("tile loop yield");
            let mut map = HashMap::new();
            let p_args: Vec<Value> = tl_args
                .iter()
                .map(|&a| {
                    let n = e.m.values[a.0 as usize].clone();
                    let v = e.m.new_value(n.ty, n.name);
                    map.insert(a, v);
                    v
                })
                .collect();
            let p_prologue = clone_ops(e.m, &per_tile, &mut map);
            let renamed = |vs: &[Value]| -> Vec<Value> {
                vs.iter().map(|v| *map.get(v).unwrap_or(v)).collect()
            };
            let (a_coords_p, b_coords_p) = (renamed(&mm.a.coords), renamed(&mm.b.coords));
            let (lb_p, ub_p) = (
                mm.lb.map(|v| *map.get(&v).unwrap_or(&v)),
                *map.get(&mm.ub).unwrap_or(&mm.ub),
            );
            let p_tail = clone_ops(e.m, &tail, &mut map);
            let p_yield: Vec<Value> = tl_yield
                .operands
                .iter()
                .map(|v| *map.get(v).unwrap_or(v))
                .collect();
            // One region's tile loop (`tile.for` or `tile.while` as `persistent` made it)
            // carrying the global k base too: body = `body(g)` then yield the loop's
            // values and `g + ktiles`; then the region's yield.
            // `body(g)` returns its ops and the tile's k-tile count.
            let tile_loop =
                |e: &mut Emitter, args: Vec<Value>, yielded: Vec<Value>, body: &mut TileBody| {
                    let g = e.m.new_value(Type::INDEX, Some("kbase".into()));
                    let (mut ops, ktiles) = body(e, g);
                    let next = e.int(OpKind::AddI, g, ktiles, "kbase_next");
                    let mut y = yielded;
                    y.push(next);
                    e.op(OpKind::Yield, &y, &[], &[], None);
                    ops.extend(e.take());
                    let mut lp = Operation::new(tl.kind, tl.loc.clone());
                    lp.operands = tl.operands.clone();
                    lp.operands.push(c0);
                    lp.attrs = tl.attrs.clone();
                    lp.results = tl
                        .results
                        .iter()
                        .map(|&r| {
                            let n = e.m.values[r.0 as usize].clone();
                            e.m.new_value(n.ty, n.name)
                        })
                        .collect();
                    lp.results
                        .push(e.m.new_value(Type::INDEX, Some("kbase_end".into())));
                    let mut bargs = args;
                    bargs.push(g);
                    lp.regions.push(Block { args: bargs, ops });
                    e.op(OpKind::Yield, &[], &[], &[], None);
                    let mut region = vec![lp];
                    region.extend(e.take());
                    region
                };
            let mut p_parts = Some((p_prologue, p_tail));
            let pops = if inline_ahead.is_some() {
                e.op(OpKind::Yield, &[], &[], &[], None);
                e.take()
            } else {
                tile_loop(&mut e, p_args, p_yield, &mut |e, g| {
                    let (mut ops, tail) = p_parts.take().expect("called once");
                    let range = match kernel_range {
                        Some(r) => r,
                        None => {
                            let r = k_range(e, lb_p, ub_p, true);
                            ops.extend(e.take());
                            r
                        }
                    };
                    ops.push(producer_tile(e, g, (&a_coords_p, &b_coords_p), range));
                    ops.extend(tail);
                    (ops, range.0)
                })
            };
            let mut c_parts = Some((per_tile, epilogue, tail));
            let cops = tile_loop(&mut e, tl_args, tl_yield.operands.clone(), &mut |e, g| {
                let (per_tile, epilogue, tail) = c_parts.take().expect("called once");
                let mut ops = for_consumers(per_tile);
                let range = match kernel_range {
                    Some(r) => r,
                    None => {
                        let r = k_range(e, mm.lb, mm.ub, inline_ahead.is_some());
                        ops.extend(e.take());
                        r
                    }
                };
                let coords = (&mm.a.coords[..], &mm.b.coords[..]);
                ops.extend(consumer_tile(e, g, range, coords));
                ops.extend(epilogue);
                ops.extend(for_consumers(tail));
                (ops, range.0)
            });
            e.ops = prologue;
            (
                Block {
                    args: vec![],
                    ops: pops,
                },
                Block {
                    args: vec![],
                    ops: cops,
                },
            )
        }
    };
    let kernel_level = e.take();
    let mut ws = Operation::new(OpKind::WarpSpecialize, lp_loc);
    ws.attrs
        .insert("consumers".into(), Attribute::Int(consumers));
    ws.regions = vec![producer_region, consumer_region];
    let mut body = kernel_head;
    body.extend(kernel_level);
    body.push(ws);
    body.push(ret);
    k.regions[0].ops = body;
    k.attrs
        .insert("target".into(), Attribute::Str(target.name().into()));
    // wgmma needs warpgroup-aligned consumers, so the producer is a whole warpgroup (which
    // gives its registers away with setmaxnreg); with mma.sync the consumers copy.
    let producer_threads = if target.has_wgmma() {
        WARPGROUP_THREADS
    } else {
        0
    };
    k.attrs.insert(
        "block".into(),
        Attribute::Array(vec![
            Attribute::Int(producer_threads + WARPGROUP_THREADS * consumers),
            Attribute::Int(1),
            Attribute::Int(1),
        ]),
    );
    k.attrs
        .insert("smem_bytes".into(), Attribute::Int(smem as i64));
    k.attrs.insert("stages".into(), Attribute::Int(s as i64));
    Ok(smem)
}
