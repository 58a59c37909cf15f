//! The GEMM tile heuristic: from a problem's M, N, K (and batch), its element type, the
//! target and the machine, which tile configuration to compile, with the reason and an
//! estimate, as cuBLAS picks its kernels from the shape. `tile-compile --tile auto` and
//! `tile-choose` use it; [`crate::auto_tile`] applies it to a kernel and checks the choice
//! against the passes.
//!
//! # Candidates
//! [`configs`] lists, per target and element type, the configurations whose steady
//! throughput has been measured: a tile (BM × BN, stepping K by BK), its ring depth, its
//! `persistent` schedule and its epilogue store, each with the rate it reached on large
//! squares. The sm_90a bf16/f16 rates are the H200's of
//! `docs/bench-2026-12-06-s32-tiles-nn-h200.json` (the means of the 8192³ and 16384³ rows);
//! the fp8 ones (e4m3, e5m2: the promoted 128 × 192 and 128 × 128 tiles, BK = 128, or with
//! [`GemmProblem::fast_accum`] the unpromoted 128 × 256 and 128 × 192) an H100's, until an
//! H200 is measured. A configuration without a measurement is not a
//! candidate, so the heuristic never prefers a tile nobody has timed. Beside the 64- and
//! 128-row wgmma tiles the table holds the swap-AB tiles 16 × 64 and 16 × 128, which
//! `tile-to-gpu` computes as Cᵀ = Bᵀ · Aᵀ and which store C from the registers: slow on
//! large squares (118 and 163 TFLOP/s), they compute no padding rows at M = 16, where the
//! 64-row tiles compute three for each real one. sm_90, sm_100 and sm_100a lower one tile
//! (128 × 256 on mma.sync), which is then the choice.
//!
//! # The model
//! For each candidate, with T = (⌈M/BM⌉ + G − 1)·⌈N/BN⌉·batch output tiles over S SMs (G
//! the groups of a grouped GEMM, 1 otherwise: each group boundary may cut a row tile), one
//! CTA per SM (the rings take most of shared memory):
//! - **waves**: W = ⌈T / S⌉ rounds; the last round's idle SMs are paid for (the reason and
//!   `tile-choose` print T / S, the fraction of full waves);
//! - **compute per CTA**: 2·BM·BN·K flops at one SM's share of the configuration's measured
//!   rate (the rate over the [`RATE_SMS`] SMs it was measured on; padding rows and columns
//!   past M and N cost as much as real ones);
//! - **streaming per CTA**: (BM + BN)·K operand bytes at [`Machine::cta_stream_bytes_per_s`],
//!   the rate one CTA's ring pulls from L2 (fitted on the M = 16 and M = 128 rows of the same
//!   benchmark, where few CTAs run);
//! - **DRAM**: the compulsory bytes, A, B (G of them) and C once each (grouped tile order
//!   keeps the panels in L2), at [`Machine::dram_bytes_per_s`];
//! - estimate = max(W · max(compute, streaming), DRAM) + [`Machine::launch_us`].
//!
//! The smallest estimate wins; candidates within [`TIE`] of it count as equal, and among
//! those the one that computes the fewest padding elements wins, then the larger tile.
//! Split-K is not chosen (split = 1). Measured on the H200, the atomic form's separate
//! zeroing and conversion launches cost more than the extra CTAs saved on every shape
//! tried (docs/performance.md, "split-K on the H200"). The in-kernel, deterministic forms
//! (`examples/gemm_splitk*.tile`) are separate programs, measured on an H100 only: they
//! win on long-K, few-tile shapes (16×4096×14336: 0.76 → 0.94 of cuBLAS) and lose
//! elsewhere, and each extra slice adds a fix-up step (docs/performance.md, session 28).
//! Choosing them needs that cost in the model and an H200 calibration (#17).

use crate::options::{ClusterShape, EpilogueStore, Options, Promote, Schedule};
use tilec_dialect::{ScalarType, Target};

/// Estimates within this fraction of the best count as ties.
pub const TIE: f64 = 0.03;

/// The SMs of the GPU the rates of [`configs`] were measured on (the H200's 132): one SM's
/// rate is the measured rate over this many.
pub const RATE_SMS: f64 = 132.0;

/// The largest M, N, K, batch or groups [`choose_gemm`] takes: 2^31 - 1, CUDA's grid limit
/// along x.
pub const MAX_DIM: u64 = (1 << 31) - 1;

/// One GEMM problem: C[batch, M, N] = A[batch, M, K] · B[batch, K, N].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmProblem {
    /// Rows of C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// Independent problems of the same shape (1 for a plain GEMM).
    pub batch: u64,
    /// Groups stacked along M, each with its own B (a grouped GEMM for mixture-of-experts
    /// layers, `examples/grouped_gemm.tile`; 1 for a plain GEMM). Their sizes are known
    /// only at run time, so the model counts the worst case: `groups - 1` more row tiles
    /// (a boundary inside each of them) and `groups` B matrices read from DRAM.
    pub groups: u64,
    /// The element type of A and B (`bf16`, `f16`, `e4m3`, `e5m2`).
    pub elem: ScalarType,
    /// fp8: the problem takes wgmma's reduced-precision accumulation
    /// (`torch._scaled_mm(use_fast_accum=True)`), so the unpromoted tiles are the candidates;
    /// otherwise only tiles whose promoted sum fits are. No effect on other types.
    pub fast_accum: bool,
}

impl GemmProblem {
    /// A plain (batch 1) problem.
    pub fn new(m: u64, n: u64, k: u64, elem: ScalarType) -> Self {
        GemmProblem {
            m,
            n,
            k,
            batch: 1,
            groups: 1,
            elem,
            fast_accum: false,
        }
    }

    /// 2·M·N·K·batch.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.batch as f64
    }
}

/// The machine the estimate is for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Streaming multiprocessors.
    pub sms: u32,
    /// DRAM bandwidth a streaming kernel reaches, bytes/s.
    pub dram_bytes_per_s: f64,
    /// What one CTA's ring pulls from L2 when few CTAs run, bytes/s.
    pub cta_stream_bytes_per_s: f64,
    /// A launch's fixed cost, µs.
    pub launch_us: f64,
}

impl Machine {
    /// An NVIDIA H200 (SXM): 132 SMs; 4.0 TB/s reached of its 4.8 TB/s HBM3e; 80 GB/s per
    /// CTA (fitted, see the module docs); 2 µs per launch.
    pub const H200: Machine = Machine {
        sms: 132,
        dram_bytes_per_s: 4.0e12,
        cta_stream_bytes_per_s: 80e9,
        launch_us: 2.0,
    };

    /// [`Machine::H200`] with another SM count (an H100 SXM has 132, an H100 PCIe 114).
    pub fn with_sms(self, sms: u32) -> Self {
        Machine { sms, ..self }
    }
}

/// A tile configuration: what [`GemmConfig::apply`] sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmConfig {
    /// Rows of C per CTA (the kernel constant `BM`).
    pub bm: u64,
    /// Columns of C per CTA (`BN`).
    pub bn: u64,
    /// K per step (`BK`).
    pub bk: u64,
    /// Ring depth ([`Options::stages`]).
    pub stages: u32,
    /// The `persistent` schedule.
    pub schedule: Schedule,
    /// The epilogue store.
    pub epilogue: EpilogueStore,
    /// The steady rate measured on large squares, TFLOP/s; `None` where never measured.
    pub tflops: Option<f64>,
    /// `tile-to-gpu`'s promotion as measured: [`Promote::Auto`] (left to the options), or
    /// [`Promote::Off`] for the fp8 tiles measured with wgmma's own accumulation.
    pub promote: Promote,
    /// The static cluster ([`Options::cluster`]; `1x2`: two CTAs along M share B's copies by
    /// TMA multicast). Its CTAs come in whole clusters, so the tile grid rounds up to them.
    pub cluster: ClusterShape,
}

/// [`configs`]' table: (target has wgmma, measured). The rates are the means of the
/// 8192³ and 16384³ rows of `docs/bench-2026-12-06-s32-tiles-nn-h200.json` (A·B, H200).
const WGMMA_16BIT: [GemmConfig; 6] = [
    cfg(128, 256, 4, Schedule::Static, 683.0),
    cfg(128, 128, 4, Schedule::Static, 655.0),
    cfg(64, 128, 6, Schedule::None, 511.0),
    cfg(64, 64, 8, Schedule::None, 375.0),
    // Swap-AB tiles (an M tile below wgmma's 64 rows, computed as Cᵀ = Bᵀ · Aᵀ): their
    // epilogue stores from the registers.
    direct(cfg(16, 128, 8, Schedule::None, 163.0)),
    direct(cfg(16, 64, 8, Schedule::None, 118.0)),
];

/// fp8 (e4m3, e5m2) on wgmma: the tiles whose `promote` (the default, `auto`) fits, so the
/// accumulation is `torch._scaled_mm`'s without fast accumulation; BK = 128 (128 bytes, one
/// swizzle span). The rates are an **H100**'s (no H200 was lent): the means of the 8192³ and
/// 16384³ medians of `docs/gpu-2026-12-07-s45/fp8b-interleave2.json` (A·Bᵀ, per-tensor
/// scales, bf16 C; 15 interleaved rounds).
/// The unpromoted tiles sum with wgmma's reduced precision: they are [`WGMMA_FP8_FAST`].
/// 128×192 in a 1x2 cluster (B multicast along M) from the same call (1103 and 1213
/// TFLOP/s): it gains on the largest shapes, and its pairs of CTAs cost where M has few tiles.
const WGMMA_FP8: [GemmConfig; 3] = [
    clustered(
        direct(fp8(cfg(128, 192, 4, Schedule::Static, 1158.0))),
        1,
        2,
    ),
    direct(fp8(cfg(128, 192, 4, Schedule::Static, 1110.0))),
    direct(fp8(cfg(128, 128, 4, Schedule::Static, 1059.0))),
];

/// fp8 on wgmma with its own, reduced-precision accumulation
/// ([`GemmProblem::fast_accum`]; `promote` off): the same call's 128×256 and 128×192 rates.
const WGMMA_FP8_FAST: [GemmConfig; 2] = [
    unpromoted(direct(fp8(cfg(128, 256, 4, Schedule::Static, 1185.0)))),
    unpromoted(direct(fp8(cfg(128, 192, 4, Schedule::Static, 1171.0)))),
];

const fn fp8(c: GemmConfig) -> GemmConfig {
    GemmConfig { bk: 128, ..c }
}

const fn clustered(c: GemmConfig, x: u32, y: u32) -> GemmConfig {
    GemmConfig {
        cluster: ClusterShape { x, y, z: 1 },
        ..c
    }
}

const fn unpromoted(c: GemmConfig) -> GemmConfig {
    GemmConfig {
        promote: Promote::Off,
        ..c
    }
}

const fn cfg(bm: u64, bn: u64, stages: u32, schedule: Schedule, tflops: f64) -> GemmConfig {
    GemmConfig {
        bm,
        bn,
        bk: 64,
        stages,
        schedule,
        epilogue: EpilogueStore::Tma,
        tflops: Some(tflops),
        promote: Promote::Auto,
        cluster: ClusterShape::NONE,
    }
}

const fn direct(c: GemmConfig) -> GemmConfig {
    GemmConfig {
        epilogue: EpilogueStore::Direct,
        ..c
    }
}

/// The candidate configurations for `elem` on `target` (see the module docs), best rate
/// first; empty where none is known.
pub fn configs(target: Target, elem: ScalarType) -> Vec<GemmConfig> {
    let fp8 = elem.is_fp8();
    if !fp8 && !matches!(elem, ScalarType::BF16 | ScalarType::F16) {
        return vec![];
    }
    if target.has_wgmma() {
        return if fp8 {
            WGMMA_FP8.to_vec()
        } else {
            WGMMA_16BIT.to_vec()
        };
    }
    vec![GemmConfig {
        bm: 128,
        bn: 256,
        // 128 bytes of K per row either way.
        bk: if fp8 { 128 } else { 64 },
        stages: 4,
        schedule: Schedule::default_for(target),
        epilogue: EpilogueStore::Direct,
        // The sm_90 bf16 PTX on the H200 (docs/performance.md, 2026-11-29); never on sm_100,
        // nor fp8 on mma.sync.
        tflops: (target == Target::Sm90 && !fp8).then_some(448.0),
        promote: Promote::Auto,
        cluster: ClusterShape::NONE,
    }]
}

/// The candidates for problem `p` on `target`: [`configs`], or for an fp8 problem that takes
/// fast accumulation on wgmma, the unpromoted tiles.
pub fn problem_configs(p: &GemmProblem, target: Target) -> Vec<GemmConfig> {
    if p.fast_accum && p.elem.is_fp8() && target.has_wgmma() {
        WGMMA_FP8_FAST.to_vec()
    } else {
        configs(target, p.elem)
    }
}

/// What the model says of one configuration on one problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Output tiles, batch included.
    pub tiles: u64,
    /// ⌈tiles / SMs⌉.
    pub waves: u64,
    /// One CTA's MMA time, µs.
    pub compute_us: f64,
    /// One CTA's operand streaming time, µs.
    pub stream_us: f64,
    /// The compulsory DRAM traffic's time, µs.
    pub dram_us: f64,
    /// The estimate, µs.
    pub total_us: f64,
    /// Elements computed past M and N, as a fraction of M·N·batch.
    pub padding: f64,
}

impl Estimate {
    /// What bounds the estimate: `"compute"`, `"streaming"` or `"DRAM"`.
    pub fn bound(&self) -> &'static str {
        let wave = self.compute_us.max(self.stream_us) * self.waves as f64;
        if self.dram_us > wave {
            "DRAM"
        } else if self.compute_us >= self.stream_us {
            "compute"
        } else {
            "streaming"
        }
    }
}

/// The model's estimate of `c` on `p` (module docs); `None` for a configuration without a
/// measured rate.
pub fn estimate(p: &GemmProblem, c: &GemmConfig, machine: &Machine) -> Option<Estimate> {
    let rate = c.tflops? * 1e12;
    let sms = u64::from(machine.sms.max(1));
    let extra_rows = p.groups.max(1) - 1;
    // Whole clusters: the tile grid rounds up to the cluster along N (x) and M (y).
    let round = |t: u64, by: u32| t.div_ceil(u64::from(by.max(1))) * u64::from(by.max(1));
    let (tm, tn) = (
        round(p.m.div_ceil(c.bm).saturating_add(extra_rows), c.cluster.y),
        round(p.n.div_ceil(c.bn), c.cluster.x),
    );
    let tiles = tm.saturating_mul(tn).saturating_mul(p.batch);
    let waves = tiles.div_ceil(sms);
    let k = p.k as f64;
    let compute_us = 2.0 * (c.bm * c.bn) as f64 * k / (rate / RATE_SMS) * 1e6;
    let bytes = p.elem.size_bytes() as f64;
    let stream_us = (c.bm + c.bn) as f64 * k * bytes / machine.cta_stream_bytes_per_s * 1e6;
    let (m, n, b) = (p.m as f64, p.n as f64, p.batch as f64);
    let g = p.groups.max(1) as f64;
    let dram_us = b * (m * k + g * k * n + m * n) * bytes / machine.dram_bytes_per_s * 1e6;
    let total_us = (waves as f64 * compute_us.max(stream_us)).max(dram_us) + machine.launch_us;
    let computed = (tm * c.bm) as f64 * (tn * c.bn) as f64 * p.batch as f64;
    let padding = computed / (m * n * b).max(1.0) - 1.0;
    Some(Estimate {
        tiles,
        waves,
        compute_us,
        stream_us,
        dram_us,
        total_us,
        padding,
    })
}

/// The heuristic's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmChoice {
    /// The chosen configuration.
    pub config: GemmConfig,
    /// Its estimate (`None` when the target's only tile has no measured rate).
    pub estimate: Option<Estimate>,
    /// Why, in one line.
    pub reason: String,
    /// Every candidate with its estimate, in the order the heuristic prefers them (the
    /// choice first): [`crate::auto_tile`] falls back along it when the passes refuse one.
    pub ranked: Vec<(GemmConfig, Option<Estimate>)>,
}

impl GemmConfig {
    /// `BMxBNxBK`.
    pub fn tile_name(&self) -> String {
        format!("{}x{}x{}", self.bm, self.bn, self.bk)
    }

    /// `opts` with this configuration: the constants `BM`, `BN`, `BK`, the stages, the
    /// schedule and the epilogue store, and `promote` where the configuration was measured
    /// with it off.
    pub fn apply(&self, opts: Options) -> Options {
        let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let o = opts
            .with_constant("BM", to_i64(self.bm))
            .with_constant("BN", to_i64(self.bn))
            .with_constant("BK", to_i64(self.bk))
            .with_stages(self.stages)
            .with_schedule(self.schedule)
            .with_epilogue(self.epilogue);
        let o = if self.cluster == ClusterShape::NONE {
            o
        } else {
            o.with_cluster(self.cluster)
        };
        if self.promote == Promote::Auto {
            o
        } else {
            o.with_promote(self.promote)
        }
    }
}

/// Why the heuristic has no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeuristicError {
    /// M, N, K, the batch or the groups are zero.
    #[error(
        "the problem {0} has an empty dimension: M, N, K, the batch and the groups must be \
         positive"
    )]
    Empty(String),
    /// M, N, K, the batch or the groups are over [`MAX_DIM`].
    #[error("the problem {0} has a dimension over 2^31 - 1 (CUDA's grid limit)")]
    TooLarge(String),
    /// No configuration is known for the element type on the target.
    #[error(
        "no measured GEMM tile configuration for {elem} on {target} (the heuristic knows bf16, \
         f16, e4m3 and e5m2)"
    )]
    NoConfig {
        /// The element type.
        elem: ScalarType,
        /// The target.
        target: Target,
    },
}

/// Choose the configuration for `p` on `target` and `machine` (module docs).
///
/// # Errors
/// An empty problem, a dimension over [`MAX_DIM`], or an element type without known
/// configurations on the target.
pub fn choose_gemm(
    p: &GemmProblem,
    target: Target,
    machine: &Machine,
) -> Result<GemmChoice, HeuristicError> {
    if p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0 || p.groups == 0 {
        return Err(HeuristicError::Empty(shape(p)));
    }
    if [p.m, p.n, p.k, p.batch, p.groups]
        .iter()
        .any(|&d| d > MAX_DIM)
    {
        return Err(HeuristicError::TooLarge(shape(p)));
    }
    let mut cands = problem_configs(p, target);
    // A TMA store needs C's rows 16-byte aligned (docs/manifest.md): N·size a multiple of 16.
    if !(p.n * p.elem.size_bytes()).is_multiple_of(16) {
        for c in &mut cands {
            c.epilogue = EpilogueStore::Direct;
        }
    }
    if cands.is_empty() {
        return Err(HeuristicError::NoConfig {
            elem: p.elem,
            target,
        });
    }
    let mut ranked: Vec<(GemmConfig, Option<Estimate>)> = cands
        .iter()
        .map(|c| (*c, estimate(p, c, machine)))
        .collect();
    if ranked.len() == 1 {
        let (config, estimate) = ranked[0];
        let reason = format!(
            "{} is the only tile {target} lowers ({})",
            config.tile_name(),
            if target.has_wgmma() {
                "wgmma"
            } else {
                "mma.sync"
            }
        );
        return Ok(GemmChoice {
            config,
            estimate,
            reason,
            ranked,
        });
    }
    let t = |e: &Option<Estimate>| e.map_or(f64::INFINITY, |e| e.total_us);
    ranked.sort_by(|a, b| t(&a.1).total_cmp(&t(&b.1)));
    let best = t(&ranked[0].1);
    let ties = ranked
        .iter()
        .take_while(|(_, e)| t(e) <= best * (1.0 + TIE))
        .count();
    // Among ties: least padding, then the larger tile; the rest stay in estimate order.
    let pad = |e: &Option<Estimate>| e.map_or(f64::INFINITY, |e| e.padding);
    ranked[..ties].sort_by(|a, b| {
        pad(&a.1)
            .total_cmp(&pad(&b.1))
            .then((b.0.bm * b.0.bn).cmp(&(a.0.bm * a.0.bn)))
    });
    let (config, est) = ranked[0];
    let e = est.expect("ranked candidates are measured");
    let mut reason = format!(
        "{} tiles of {}x{} = {:.2} waves on {} SM{}; {}-bound ({:.1} µs compute, {:.1} µs \
         streaming per CTA, {:.1} µs DRAM); est. {:.1} µs, {:.0} TFLOP/s",
        e.tiles,
        config.bm,
        config.bn,
        e.tiles as f64 / f64::from(machine.sms.max(1)),
        machine.sms,
        if machine.sms == 1 { "" } else { "s" },
        e.bound(),
        e.compute_us,
        e.stream_us,
        e.dram_us,
        e.total_us,
        p.flops() / e.total_us / 1e6,
    );
    if ties > 1 {
        reason.push_str(&format!(
            "; tied within {:.0}% with {} (least padding wins; this tile pads {:.0}%)",
            TIE * 100.0,
            ranked[1..ties]
                .iter()
                .map(|(c, _)| format!("{}x{}", c.bm, c.bn))
                .collect::<Vec<_>>()
                .join(", "),
            e.padding * 100.0
        ));
    } else if let Some((c, Some(n))) = ranked.get(1) {
        reason.push_str(&format!("; next {}x{} at {:.1} µs", c.bm, c.bn, n.total_us));
    }
    Ok(GemmChoice {
        config,
        estimate: est,
        reason,
        ranked,
    })
}

fn shape(p: &GemmProblem) -> String {
    let mut s = if p.batch == 1 {
        format!("{}x{}x{}", p.m, p.n, p.k)
    } else {
        format!("{}x{}x{}x{}", p.batch, p.m, p.n, p.k)
    };
    if p.groups != 1 {
        s += &format!(" in {} groups", p.groups);
    }
    s
}

/// The 21 (M, N, K) shapes of `tools/gpu/bench.py`: five squares, and M = 16, 128, 1024, 8192
/// with the (N, K) of Llama-3-8B's projections and its 128,256-entry vocabulary.
pub const BENCHMARK_SHAPES: [(u64, u64, u64); 21] = {
    const SQ: [u64; 5] = [1024, 2048, 4096, 8192, 16384];
    const NK: [(u64, u64); 4] = [(4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)];
    const MS: [u64; 4] = [16, 128, 1024, 8192];
    let mut out = [(0, 0, 0); 21];
    let mut i = 0;
    while i < 5 {
        out[i] = (SQ[i], SQ[i], SQ[i]);
        i += 1;
    }
    let mut j = 0;
    while j < 16 {
        out[5 + j] = (MS[j % 4], NK[j / 4].0, NK[j / 4].1);
        j += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(m: u64, n: u64, k: u64) -> GemmChoice {
        let p = GemmProblem::new(m, n, k, ScalarType::BF16);
        choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap()
    }

    /// The benchmark shapes and the tile chosen for each on sm_90a. Against the H200
    /// measurements the rates come from (docs/bench-2026-12-06-s32-tiles-nn-h200.json), each
    /// choice is the fastest measured tile or within 1% of it (8192x14336x4096: 128x256 at
    /// 643.7 TFLOP/s against 128x128 at 649.7).
    #[test]
    fn benchmark_shapes_choose_the_expected_tiles() {
        let want = [
            "64x128", "128x256", "128x256", "128x256", "128x256", // squares
            "16x64", "64x64", "128x256", "128x256", // N, K = 4096
            "16x128", "128x128", "128x128", "128x256", // N = 14336
            "16x64", "64x64", "128x256", "128x256", // K = 14336
            "16x128", "128x256", "128x256", "128x256", // N = 128256
        ];
        for (&(m, n, k), want) in BENCHMARK_SHAPES.iter().zip(want) {
            let c = choose(m, n, k);
            let got = format!("{}x{}", c.config.bm, c.config.bn);
            assert_eq!(got, want, "{m}x{n}x{k}: {}", c.reason);
            assert_eq!(c.ranked[0].0, c.config);
            assert_eq!(c.ranked.len(), 6);
        }
    }

    #[test]
    fn the_model_counts_waves_bounds_and_padding() {
        // 8192³ on 128x256: 2048 tiles, 16 waves, compute-bound.
        let c = choose(8192, 8192, 8192);
        let e = c.estimate.unwrap();
        assert_eq!((e.tiles, e.waves, e.bound()), (2048, 16, "compute"));
        assert_eq!(e.padding, 0.0);
        // 2·128·256·8192 flops at 683 TFLOP/s over 132 SMs.
        let per_cta = 2.0 * 128.0 * 256.0 * 8192.0 / (683e12 / RATE_SMS) * 1e6;
        assert!((e.compute_us - per_cta).abs() < 1e-9);
        assert!((e.total_us - (16.0 * per_cta + 2.0)).abs() < 1e-6);
        assert!(c
            .reason
            .starts_with("2048 tiles of 128x256 = 15.52 waves on 132 SMs"));
        // M = 16 on 64-row tiles computes 3 padding rows for each real one; the swapped
        // 16-row tile none, and wins.
        let c = choose(16, 4096, 4096);
        let pad = |bm: u64, bn: u64| {
            let r = c.ranked.iter().find(|r| (r.0.bm, r.0.bn) == (bm, bn));
            r.and_then(|r| r.1).unwrap()
        };
        assert_eq!(pad(64, 64).padding, 3.0);
        assert_eq!(pad(64, 64).bound(), "streaming");
        assert_eq!(pad(16, 64).padding, 0.0);
        assert_eq!((c.config.bm, c.config.bn), (16, 64), "{}", c.reason);
        assert!(pad(16, 64).total_us < pad(64, 64).total_us);
        // Few SMs: more waves, so the largest tile's rate wins sooner; an SM is no faster.
        let p = GemmProblem::new(1024, 1024, 1024, ScalarType::BF16);
        let all = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap();
        let few = choose_gemm(&p, Target::Sm90a, &Machine::H200.with_sms(16)).unwrap();
        let (a, f) = (all.estimate.unwrap(), few.estimate.unwrap());
        assert_eq!((all.config.bm, all.config.bn), (64, 128));
        assert!(f.total_us > a.total_us, "{f:?} {a:?}");
        let c128 = |ch: &GemmChoice| {
            ch.ranked
                .iter()
                .find(|r| r.0.bm == 128 && r.0.bn == 256)
                .and_then(|r| r.1)
                .unwrap()
                .compute_us
        };
        assert_eq!(c128(&all), c128(&few));
        assert_eq!((few.config.bm, few.config.bn), (128, 256), "{}", few.reason);
    }

    /// fp8 on sm_90a: the promoted tiles only, BK = 128, direct store. Against the H100's
    /// interleaved 21-shape run (docs/gpu-2026-12-07-s45/fp8-bench-interleave.json) the choice
    /// is within 5% of the faster of the two on 17 of the 21 shapes, and its geomean is 1.054
    /// of `torch._scaled_mm` (docs/performance.md, session 45).
    #[test]
    fn fp8_chooses_among_the_promoted_tiles() {
        let fp8 = |m, n, k| {
            let p = GemmProblem::new(m, n, k, ScalarType::E4M3);
            choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap()
        };
        let c1x2 = ClusterShape { x: 1, y: 2, z: 1 };
        for (m, n, k, want, cluster) in [
            (8192, 8192, 8192, (128, 192), c1x2),
            (16384, 16384, 16384, (128, 192), c1x2),
            (2048, 2048, 2048, (128, 128), ClusterShape::NONE),
            (1024, 4096, 14336, (128, 128), ClusterShape::NONE),
            (16, 128256, 4096, (128, 128), ClusterShape::NONE),
            (8192, 128256, 4096, (128, 192), c1x2),
        ] {
            let c = fp8(m, n, k);
            let got = (c.config.bm, c.config.bn);
            assert_eq!(got, want, "{m}x{n}x{k}: {}", c.reason);
            assert_eq!(c.config.cluster, cluster, "{m}x{n}x{k}: {}", c.reason);
            assert_eq!(c.config.bk, 128);
            assert_eq!(c.config.epilogue, EpilogueStore::Direct);
            assert_eq!(c.ranked.len(), 3);
        }
        // 8192³ on 128x192 in 1x2 clusters: 64 × 43 = 2752 tiles (64 rows: whole clusters);
        // 2·128·192·8192 flops at 1158 TFLOP/s.
        let c = fp8(8192, 8192, 8192);
        let e = c.estimate.unwrap();
        assert_eq!((e.tiles, e.waves), (2752, 21));
        let per_cta = 2.0 * 128.0 * 192.0 * 8192.0 / (1158e12 / RATE_SMS) * 1e6;
        assert!((e.compute_us - per_cta).abs() < 1e-9);
        assert_eq!(c.config.cluster.to_string(), "1x2");
        assert_eq!(c.config.apply(Options::new(Target::Sm90a)).cluster, c1x2);
        // M = 16: one row tile, which a 1x2 cluster pairs with an empty one.
        let p = GemmProblem::new(16, 128256, 4096, ScalarType::E4M3);
        let c = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap();
        let clustered = c.ranked.iter().find(|r| r.0.cluster == c1x2).unwrap();
        assert_eq!(clustered.1.unwrap().tiles, 2 * 668);
        assert_eq!(clustered.1.unwrap().padding, 2.0 * 128.0 / 16.0 - 1.0);
        // e5m2 takes the same tiles; mma.sync targets their one tile, unmeasured.
        assert_eq!(configs(Target::Sm90a, ScalarType::E5M2), WGMMA_FP8.to_vec());
        let p = GemmProblem::new(8192, 8192, 8192, ScalarType::E4M3);
        let c = choose_gemm(&p, Target::Sm90, &Machine::H200).unwrap();
        assert_eq!(c.config.tile_name(), "128x256x128");
        assert_eq!(c.estimate, None);
        // Fast accumulation: the unpromoted tiles, applied with promote off.
        let p = GemmProblem {
            fast_accum: true,
            ..GemmProblem::new(8192, 8192, 8192, ScalarType::E4M3)
        };
        let c = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap();
        assert_eq!(c.config.tile_name(), "128x256x128");
        assert_eq!(c.ranked.len(), 2);
        assert!(c.ranked.iter().all(|(g, _)| g.promote == Promote::Off));
        let o = c.config.apply(Options::new(Target::Sm90a));
        assert_eq!(o.promote, Promote::Off);
        // bf16 ignores it; a promoted configuration leaves the options' promote alone.
        let p = GemmProblem {
            fast_accum: true,
            ..GemmProblem::new(8192, 8192, 8192, ScalarType::BF16)
        };
        assert_eq!(
            problem_configs(&p, Target::Sm90a),
            configs(Target::Sm90a, p.elem)
        );
        let on = Options::new(Target::Sm90a).with_promote(Promote::On);
        assert_eq!(WGMMA_FP8[0].apply(on).promote, Promote::On);
        // f32 (tf32 MMAs) has no measured configuration.
        let p = GemmProblem::new(8192, 8192, 8192, ScalarType::F32);
        assert!(matches!(
            choose_gemm(&p, Target::Sm90a, &Machine::H200),
            Err(HeuristicError::NoConfig { .. })
        ));
    }

    #[test]
    fn ties_prefer_less_padding() {
        // 16x128256x4096 is DRAM-bound on every tile: the swapped 16-row tiles pad none,
        // and of those the larger wins.
        let c = choose(16, 128256, 4096);
        assert_eq!((c.config.bm, c.config.bn), (16, 128));
        assert_eq!(c.estimate.unwrap().bound(), "DRAM");
        assert!(c.reason.contains("tied within 3%"), "{}", c.reason);
    }

    #[test]
    fn groups_add_row_tiles_and_weights() {
        // #17's MoE layer: 8 experts, 32768 rows in all, N = 4096, K = 7168.
        let plain = GemmProblem::new(32768, 4096, 7168, ScalarType::BF16);
        let grouped = GemmProblem { groups: 8, ..plain };
        let c = choose_gemm(&grouped, Target::Sm90a, &Machine::H200).unwrap();
        let (e, e1) = (
            c.estimate.unwrap(),
            estimate(&plain, &c.config, &Machine::H200).unwrap(),
        );
        let tn = 4096u64.div_ceil(c.config.bn);
        assert_eq!(e.tiles, (32768u64.div_ceil(c.config.bm) + 7) * tn);
        assert_eq!(e1.tiles, 32768u64.div_ceil(c.config.bm) * tn);
        // Eight B matrices of 7168 x 4096 bf16 more than one.
        let more = 7.0 * 7168.0 * 4096.0 * 2.0 / Machine::H200.dram_bytes_per_s * 1e6;
        assert!((e.dram_us - e1.dram_us - more).abs() < 1e-6 * more);
    }

    #[test]
    fn batches_multiply_the_tiles() {
        let one = choose(128, 4096, 4096);
        let p = GemmProblem {
            batch: 16,
            ..GemmProblem::new(128, 4096, 4096, ScalarType::BF16)
        };
        let many = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap();
        assert_eq!((one.config.bm, one.config.bn), (64, 64));
        assert_eq!(
            (many.config.bm, many.config.bn),
            (128, 256),
            "{}",
            many.reason
        );
        assert_eq!(many.estimate.unwrap().tiles, 16 * 16);
    }

    #[test]
    fn unaligned_rows_of_c_get_the_direct_store() {
        assert_eq!(choose(1024, 4096, 4096).config.epilogue, EpilogueStore::Tma);
        // 4100 bf16 columns: 8200-byte rows, not a multiple of 16.
        assert_eq!(
            choose(1024, 4100, 4096).config.epilogue,
            EpilogueStore::Direct
        );
    }

    #[test]
    fn targets_with_one_tile_and_unknown_types() {
        for t in [Target::Sm90, Target::Sm100, Target::Sm100a] {
            let p = GemmProblem::new(16, 4096, 4096, ScalarType::F16);
            let c = choose_gemm(&p, t, &Machine::H200).unwrap();
            assert_eq!((c.config.bm, c.config.bn, c.config.bk), (128, 256, 64));
            assert_eq!(c.config.schedule, Schedule::default_for(t));
            assert_eq!(c.estimate.is_some(), t == Target::Sm90);
            assert!(c.reason.contains("only tile"), "{}", c.reason);
        }
        let p = GemmProblem::new(16, 16, 16, ScalarType::I32);
        let e = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap_err();
        assert!(matches!(e, HeuristicError::NoConfig { .. }), "{e}");
        let p = GemmProblem::new(16, u64::MAX, 16, ScalarType::BF16);
        let e = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap_err();
        assert!(matches!(e, HeuristicError::TooLarge(_)), "{e}");
        let p = GemmProblem::new(0, 16, 16, ScalarType::BF16);
        let e = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the problem 0x16x16 has an empty dimension: M, N, K, the batch and the groups \
             must be positive"
        );
        let p = GemmProblem {
            groups: MAX_DIM + 1,
            ..GemmProblem::new(16, 16, 16, ScalarType::BF16)
        };
        let e = choose_gemm(&p, Target::Sm90a, &Machine::H200).unwrap_err();
        assert!(matches!(e, HeuristicError::TooLarge(_)), "{e}");
    }

    #[test]
    fn apply_sets_the_constants_and_options() {
        let c = choose(16, 4096, 4096).config;
        let o = c.apply(Options::new(Target::Sm90a));
        assert_eq!(o.constants["BM"], 16);
        assert_eq!(o.constants["BN"], 64);
        assert_eq!(o.constants["BK"], 64);
        assert_eq!(
            (o.stages, o.schedule, o.epilogue),
            (8, Schedule::None, EpilogueStore::Direct)
        );
        let o = choose(128, 4096, 4096)
            .config
            .apply(Options::new(Target::Sm90a));
        assert_eq!((o.constants["BM"], o.constants["BN"]), (64, 64));
        assert_eq!(o.epilogue, EpilogueStore::Tma);
    }
}
