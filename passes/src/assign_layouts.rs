//! `tile-assign-layouts` — give every tile of a kernel a distributed layout, and make it a
//! GPU-level kernel with a plain launch.
//!
//! Kernels that already have a `target` (`tile-to-gpu`'s pipelined GEMMs) are left alone.
//! For the others — with or without `tile.dot`s:
//!
//! - **Anchors.** Loads, stores, `tile.zeros`, `tile.splat`, `tile.iota` and
//!   `tile.broadcast` results take the blocked layout of their shape
//!   ([`LinearLayout::blocked`]): one 16-byte vector per thread along the contiguous (last)
//!   dimension, for the narrowest element type that the kernel loads or stores at that
//!   shape (4 bytes when none does), so every blocked tile of one shape has one layout.
//! - **Dots.** A `tile.dot`'s result and accumulator take the `mma.sync.m16n8k16`
//!   accumulator fragment ([`LinearLayout::dot_accumulator`]) and its A operand the A
//!   fragment ([`LinearLayout::dot_operand_a`]) over the warps
//!   [`LinearLayout::dot_warps`] spreads; B keeps its layout (the lowering stages it
//!   through shared memory). An accumulator of `[m, k]` rounded to 16 bits is the A
//!   fragment of the next product as it is: attention's P·V takes P where Q·Kᵀ left it.
//! - **Propagation.** Elementwise ops, `tile.convert` and `tile.select` take the layout of
//!   their first tile operand that is not a constructor; `tile.reduce` the slice of its
//!   operand's ([`LinearLayout::slice`]); `tile.transpose` the transposed layout;
//!   `tile.extract_slice` its operand's layout restricted to the slice where every thread
//!   holds its elements already ([`LinearLayout::sliced`]), else the blocked layout;
//!   loop-carried values the layout of their initial value, or, when a constructor made it,
//!   the layout the loop body yields; `tile.if` results that of the then-region's yield.
//!   Constructors are `tile.splat`, `tile.zeros`, `tile.iota`, `tile.broadcast` and
//!   elementwise ops on constructors only (a mask: an iota compared with a splat): they
//!   cost the same in any layout, or (a broadcast) move no data when made in the layout of
//!   the tile their operand was reduced from.
//! - **Gathers** give a blocked tile, and take their row indices in the slice of it along
//!   the columns (each thread holds the indices of the rows it loads).
//! - **Stores** keep their tile's layout unless it has shorter contiguous runs along the
//!   last dimension than the blocked one (a transpose's): then they store a conversion.
//!   A store's mask is taken in the layout of the tile it stores.
//! - **Conversions.** An operand whose layout differs from the one its op takes gets a
//!   `tile.convert_layout` just before the op — or, when a constructor made it, a copy of
//!   the constructor in that layout (rematerialized, no data moves). A conversion in a
//!   loop body of a value the loop does not define is moved before the loop.
//!
//! The kernel gets `target`, `num_warps` and `block = [32·num_warps, 1, 1]`. With
//! `num-warps=0` (the default) the pass picks the warps ([`auto_warps`]). Everything the
//! generic lowering cannot take yet is refused here, at its op: `tile.log` (no lowering
//! with a stated error bound yet), reshapes between shapes that are not powers of two
//! (other than adding or dropping unit dimensions), dots of other than bf16 or f16 into
//! f32, and dots whose result has fewer m16n8 tiles than the warps. A tile that needs more than
//! [`MAX_REGISTERS_PER_THREAD`] registers per thread is refused as a resource limit; a
//! floating-point tile that takes a thread's whole share of the register file at the warps
//! given gets a warning ([`register_share_warning`]: ptxas would spill).
//!
//! GPU-level ops are refused, except those `persistent` writes into a level-1 kernel: the
//! static schedule's `tile.ctaid`/`tile.nctaid`, and the clc schedule's work-stealing
//! protocol (mbarriers, `tile.fence_proxy_async`, `tile.clc_try_cancel`, `tile.clc_query`,
//! `tile.cluster_cta_rank`, and its unswizzled response buffer), which hold no tiles and
//! are left as they are.
//!
//! Options: `target` (sm_90a), `num-warps` (0: choose). Statistics: `kernels-laid-out`,
//! `layout-conversions`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::HashMap;
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, LinearLayout, Module, OpClass, OpKind, Operation,
    ScalarType, Target, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-assign-layouts",
    summary: "Give the tiles of kernels distributed layouts (a plain launch)",
    description: "For each kernel with no 'target': blocked layouts at loads, stores and \
        tile constructors, mma.sync fragments at dots, propagated through elementwise ops, \
        slices at reductions, 'tile.convert_layout' where an op's operands disagree; sets \
        'target', 'num_warps' and 'block'.\n\nExample: tile-opt \
        --pass-pipeline='tile-assign-layouts{target=sm_90 num-warps=4}' examples/softmax.tile",
    options: &[
        OptionInfo {
            name: "target",
            kind: OptionKind::Enum(&["sm_90", "sm_90a", "sm_100", "sm_100a"]),
            default: "sm_90a",
            help: "GPU to build for",
        },
        OptionInfo {
            name: "num-warps",
            kind: OptionKind::UInt,
            default: "0",
            help: "Warps per CTA: a power of two from 1 to 32, or 0 to choose from the tiles \
                (see the pass docs)",
        },
    ],
};

/// The pass.
pub struct AssignLayouts {
    /// Target.
    pub target: Target,
    /// Warps per CTA (0: [`auto_warps`]).
    pub num_warps: u64,
}

impl AssignLayouts {
    /// Build from checked options.
    ///
    /// # Errors
    /// `num-warps` not a power of two from 1 to 32.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let target = Target::from_name(o.get("target"))
            .ok_or_else(|| format!("unknown target '{}'", o.get("target")))?;
        let num_warps = o.uint("num-warps");
        if num_warps != 0 && (num_warps > 32 || !num_warps.is_power_of_two()) {
            return Err(format!(
                "tile-assign-layouts option 'num-warps' must be 0 (choose) or a power of two \
                 from 1 to 32, found {num_warps}"
            ));
        }
        Ok(AssignLayouts { target, num_warps })
    }
}

impl Pass for AssignLayouts {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.attr("target").is_some() {
                continue;
            }
            let warps = match self.num_warps {
                0 => auto_warps(m, k, self.target),
                n => n,
            };
            match assign_layouts(m, k, self.target, warps) {
                Ok(n) => {
                    cx.stat("kernels-laid-out", 1);
                    cx.stat("layout-conversions", n);
                    cx.diagnostics
                        .extend(register_share_warning(m, k, self.target));
                }
                Err(d) => errors.extend(d.0),
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

/// The fewest warps [`auto_warps`] gives a kernel without a dot: `target`'s most warps on an
/// SM over its most CTAs on an SM (2,048 / 32 / 32 = 2 on sm_90 and sm_100), the smallest CTA
/// with which the SM's warp slots fill with the most CTAs resident.
pub fn min_auto_warps(target: Target) -> u64 {
    target.max_threads_per_sm() / 32 / target.max_ctas_per_sm()
}

/// Elements a thread holds at most where [`auto_warps`] gives a kernel with a reduction
/// [`min_auto_warps`]: a largest tile of up to 1,024 elements. A kernel that reduces one small
/// row a CTA is bound by the loads in flight, resident CTAs × the row each loads, while each
/// CTA waits on its reductions' barriers; more CTAs of fewer warps keep more rows in flight.
/// Measured on an H100 (`docs/performance.md`, session 44), at 2 warps against 4: LayerNorm
/// at 1,024 columns 2846 against 2619 GB/s, RMSNorm and softmax within 1 %; at 2,048
/// elements (32 a thread at 2 warps) LayerNorm gained 1.6 % but RMSNorm lost 0.6 % and the
/// compute-bound `scale_bias_act` 12 %. A kernel without a reduction (vadd: the same speed
/// at 2 and 4 warps) keeps 4, whose code is half as long to compile.
pub const SMALL_CTA_ELEMS_PER_THREAD: u64 = 16;

/// Elements of the largest tile each thread holds when the pass chooses the warps.
pub const AUTO_ELEMS_PER_THREAD: u64 = 32;

/// The warps the pass gives kernel `k` for `target` with `num-warps=0`: [`min_auto_warps`]
/// where it has a `tile.reduce` and its largest tile is small
/// ([`SMALL_CTA_ELEMS_PER_THREAD`]); otherwise enough that
/// each thread holds at most [`AUTO_ELEMS_PER_THREAD`] elements of it, from 4 to 8 (at 16
/// warps the register cap, 65,536 / 512 threads = 128, spilled a 64×256 reduction); more,
/// up to 32, only where a tile would need more than [`MAX_REGISTERS_PER_THREAD`] registers
/// per thread at 8 (a 1×32,768 tile of `index`: 256 at 8 warps, 128 at 16).
///
/// A kernel with `tile.dot`s gets as many warps as the dot with the fewest 16-row MMA
/// tiles has (at most 8), so that every warp holds whole rows of every product and a
/// product's result is the next product's A operand where it stays
/// ([`LinearLayout::dot_operand_a`]).
pub fn auto_warps(m: &Module, k: &Operation, target: Target) -> u64 {
    let mut largest = 1u64;
    let mut largest_bytes = 0u64;
    let mut dot_rows: Option<u64> = None;
    let mut reduces = false;
    k.walk(&mut |o| {
        reduces |= o.kind == OpKind::Reduce;
        for &r in &o.results {
            if let Some(s) = m.ty(r).tile_shape() {
                let elems: u64 = s.iter().map(|d| d.next_power_of_two()).product();
                largest = largest.max(elems);
                if let Type::Tile { elem, .. } = m.ty(r) {
                    largest_bytes = largest_bytes.max(elems * elem.size_bytes());
                }
                if o.kind == OpKind::Dot {
                    let tiles = (s[0].next_power_of_two() / 16).max(1);
                    dot_rows = Some(dot_rows.map_or(tiles, |d| d.min(tiles)));
                }
            }
        }
    });
    if let Some(tiles) = dot_rows {
        return tiles.min(8);
    }
    let fewest = min_auto_warps(target);
    let mut warps = if reduces && largest <= 32 * fewest * SMALL_CTA_ELEMS_PER_THREAD {
        fewest
    } else {
        (largest / (32 * AUTO_ELEMS_PER_THREAD))
            .next_power_of_two()
            .clamp(4, 8)
    };
    while warps < 32 && largest_bytes.div_ceil(4 * 32 * warps) > MAX_REGISTERS_PER_THREAD {
        warps *= 2;
    }
    warps
}

/// Lays out kernel `k` (see the module docs); returns the number of conversions inserted.
///
/// # Errors
/// Each op the generic lowering does not take, at its location.
pub fn assign_layouts(
    m: &mut Module,
    k: &mut Operation,
    target: Target,
    num_warps: u64,
) -> Result<u64, Diagnostics> {
    let mut errors = vec![];
    k.walk(&mut |o| {
        let msg = unsupported(m, o)
            .or_else(|| dot_unsupported(m, o, num_warps))
            .or_else(|| target_lacks(o, target));
        if let Some(msg) = msg {
            errors.push(Diagnostic::error(o.loc.clone(), msg));
        }
    });
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let mut prefs: HashMap<Vec<u64>, u64> = HashMap::new();
    k.walk(&mut |o| {
        let tile = match o.kind {
            OpKind::Load | OpKind::Gather => o.results.first().copied(),
            OpKind::Store | OpKind::AtomicAdd => o.operands.last().copied(),
            _ => None,
        };
        if let Some(t) = tile {
            if let Type::Tile { shape, elem, .. } = m.ty(t) {
                let e = prefs.entry(shape.clone()).or_insert(elem.size_bytes());
                *e = (*e).min(elem.size_bytes());
            }
        }
    });
    let mut a = Assigner {
        m,
        prefs,
        num_warps,
        conversions: 0,
        constructors: HashMap::new(),
        soft: std::collections::HashSet::new(),
    };
    for b in &mut k.regions {
        a.block(b);
    }
    // Constructors whose every use took a rematerialized copy (and then the constructors
    // only those used).
    let dead_constructors = |k: &Operation| -> std::collections::HashSet<Value> {
        let mut used = std::collections::HashSet::new();
        k.walk(&mut |o| used.extend(o.operands.iter().copied()));
        a.constructors
            .keys()
            .filter(|v| !used.contains(*v))
            .copied()
            .collect()
    };
    fn sweep(b: &mut Block, dead: &std::collections::HashSet<Value>) {
        b.ops
            .retain(|o| !o.results.iter().any(|r| dead.contains(r)));
        for o in &mut b.ops {
            for r in &mut o.regions {
                sweep(r, dead);
            }
        }
    }
    loop {
        let dead = dead_constructors(k);
        let before = count_ops(k);
        for b in &mut k.regions {
            sweep(b, &dead);
        }
        if count_ops(k) == before {
            break;
        }
    }
    for b in &mut k.regions {
        hoist_invariant_conversions(b);
    }
    let n = a.conversions;
    registers_fit(m, k, num_warps)?;
    let threads = 32 * num_warps as i64;
    k.attrs
        .insert("target".into(), Attribute::Str(target.name().into()));
    k.attrs
        .insert("num_warps".into(), Attribute::Int(num_warps as i64));
    k.attrs.insert(
        "block".into(),
        Attribute::Array(vec![
            Attribute::Int(threads),
            Attribute::Int(1),
            Attribute::Int(1),
        ]),
    );
    Ok(n)
}

/// The most 32-bit registers a thread has (PTX's `.maxnreg` bound on every target).
pub const MAX_REGISTERS_PER_THREAD: u64 = 255;

/// Calls `f` with each op of `k` and each of its laid-out result tiles' type and the
/// registers per thread that tile takes (4 bytes a register).
fn each_tile_registers(
    m: &Module,
    k: &Operation,
    f: &mut dyn FnMut(&Operation, Type, ScalarType, u64),
) {
    k.walk(&mut |o| {
        for &r in &o.results {
            if let Type::Tile {
                shape,
                elem,
                layout: Some(l),
            } = m.ty(r)
            {
                let regs = (l.num_registers() * elem.size_bytes()).div_ceil(4);
                f(o, Type::tile(shape, *elem), *elem, regs);
            }
        }
    });
}

/// A warning at the op of laid-out kernel `k` whose floating-point result tile needs the
/// most registers, where that tile alone needs as many registers per thread as `target`
/// gives each thread of the kernel's `num_warps` × `ctas_per_sm` warps
/// ([`Target::register_cap`]): nothing is left for the rest of the kernel, so ptxas will
/// spill. Past [`MAX_REGISTERS_PER_THREAD`] the tile is refused instead ([`assign_layouts`]);
/// below it the kernel is valid, only slow. `None` when every tile fits.
pub fn register_share_warning(m: &Module, k: &Operation, target: Target) -> Option<Diagnostic> {
    let warps = k.int_attr("num_warps").filter(|&w| w > 0)? as u64;
    let ctas = k.int_attr("ctas_per_sm").filter(|&c| c > 0).unwrap_or(1) as u64;
    let threads = 32 * warps * ctas;
    let share = target.register_cap(threads);
    let mut worst: Option<(u64, Diagnostic)> = None;
    each_tile_registers(m, k, &mut |o, tile, elem, regs| {
        // Index and mask tiles (iota, comparisons on it) fold into address arithmetic.
        if elem.is_float() && regs >= share && worst.as_ref().is_none_or(|(w, _)| regs > *w) {
            let d = Diagnostic::warning(
                o.loc.clone(),
                format!(
                    "'{}' makes a {tile} that needs {regs} registers per thread at {warps} \
                     warps, all of a thread's share of the register file ({share} with \
                     {threads} threads resident): ptxas will spill to local memory; loop over \
                     blocks of the tile instead (examples/softmax_online.tile)",
                    o.kind.name(),
                ),
            );
            worst = Some((regs, d));
        }
    });
    worst.map(|(_, d)| d)
}

/// Refuses the first op whose result tile alone needs more registers per thread than a
/// thread has ([`MAX_REGISTERS_PER_THREAD`]): such a tile cannot live in registers, and its
/// fully unrolled code grows with its size (minutes of compile time for a 4096×4096 tile).
/// The error is a resource limit, `registers per thread`.
fn registers_fit(m: &Module, k: &Operation, num_warps: u64) -> Result<(), Diagnostics> {
    let mut first = None;
    each_tile_registers(m, k, &mut |o, tile, _, regs| {
        if regs > MAX_REGISTERS_PER_THREAD && first.is_none() {
            let fix = if num_warps < 32 {
                "use smaller tiles or more warps (--num-warps, up to 32)"
            } else {
                "use smaller tiles (32 warps is a CTA's most)"
            };
            let msg = format!(
                "'{}' makes a {tile} that needs {regs} registers per thread at {num_warps} warps \
                 (a thread has at most {MAX_REGISTERS_PER_THREAD}): {fix}",
                o.kind.name(),
            );
            first = Some(Diagnostic::resource_limit(
                o.loc.clone(),
                msg,
                "registers per thread",
                regs,
                MAX_REGISTERS_PER_THREAD,
            ));
        }
    });
    match first {
        Some(d) => Err(Diagnostics(vec![d])),
        None => Ok(()),
    }
}

fn count_ops(k: &Operation) -> usize {
    let mut n = 0;
    k.walk(&mut |_| n += 1);
    n
}

/// Moves each `tile.convert_layout` at the top level of a `tile.for` or `tile.while` (a
/// do-while: its body runs at least once) body whose operand the
/// loop does not define to just before the loop (innermost loops first): a loop-invariant
/// operand is converted once, not once per iteration.
fn hoist_invariant_conversions(b: &mut Block) {
    fn defined(b: &Block, out: &mut std::collections::HashSet<Value>) {
        out.extend(b.args.iter().copied());
        for o in &b.ops {
            out.extend(o.results.iter().copied());
            for r in &o.regions {
                defined(r, out);
            }
        }
    }
    let ops = std::mem::take(&mut b.ops);
    for mut op in ops {
        for r in &mut op.regions {
            hoist_invariant_conversions(r);
        }
        if matches!(op.kind, OpKind::For | OpKind::While) {
            let mut inside = std::collections::HashSet::new();
            defined(&op.regions[0], &mut inside);
            let body = std::mem::take(&mut op.regions[0].ops);
            for o in body {
                if o.kind == OpKind::ConvertLayout && !inside.contains(&o.operands[0]) {
                    b.ops.push(o);
                } else {
                    op.regions[0].ops.push(o);
                }
            }
        }
        b.ops.push(op);
    }
}

/// Why the generic lowering cannot take the `tile.dot` `o` at `num_warps` warps, if it
/// cannot: it lowers 16-bit float operands (bf16, f16, both alike) into an f32
/// accumulator with `mma.sync.m16n8k16`, so the (padded) shapes must hold one MMA tile per
/// warp.
fn dot_unsupported(m: &Module, o: &Operation, num_warps: u64) -> Option<String> {
    if o.kind != OpKind::Dot || o.operands.len() != 3 {
        return None;
    }
    let (a, b, c) = (m.ty(o.operands[0]), m.ty(o.operands[1]), m.ty(o.results[0]));
    let (Some(sa), Some(sc)) = (a.tile_shape(), c.tile_shape()) else {
        return None;
    };
    let (ea, eb, ec) = (a.elem()?, b.elem()?, c.elem()?);
    let f16ish = |e: ScalarType| matches!(e, ScalarType::BF16 | ScalarType::F16);
    if !f16ish(ea) || ea != eb || ec != ScalarType::F32 {
        return Some(format!(
            "'tile.dot' of {ea} x {eb} into {ec} is not lowered in a kernel with a plain \
             launch: it takes bf16 or f16 operands (both alike) into f32 (mma.sync.m16n8k16)"
        ));
    }
    let (mm, n, kk) = (
        sc[0].next_power_of_two(),
        sc[1].next_power_of_two(),
        sa[1].next_power_of_two(),
    );
    let tiles_fit = LinearLayout::dot_warps(mm, n, num_warps).is_some();
    let why = match (kk >= 16, tiles_fit) {
        (true, true) => return None,
        (false, true) => "K must be at least 16 (use a larger K)".to_string(),
        (_, false) if num_warps > 1 => "each warp needs at least one 16 x 8 tile of the \
            result (use a larger tile or fewer warps)"
            .to_string(),
        (_, false) => "the result must hold at least one 16 x 8 tile (use a larger tile)".into(),
    };
    Some(format!(
        "'tile.dot' of {}x{} by {}x{} does not fit mma.sync.m16n8k16 at {num_warps} warps: \
         {why}",
        sc[0], sa[1], sa[1], sc[1]
    ))
}

/// Why `target` cannot run `o` (the try_cancel protocol of `persistent{schedule=clc}`),
/// if it cannot.
pub(crate) fn target_lacks(o: &Operation, target: Target) -> Option<String> {
    let name = o.kind.name();
    match o.kind {
        OpKind::ClcTryCancel | OpKind::ClcQuery if !target.has_try_cancel() => Some(format!(
            "'{name}' (clusterlaunchcontrol, PTX ISA 8.6) is not available on {target}; \
             targets that have it: sm_100, sm_100a (persistent{{schedule=clc}} is for those; \
             use schedule=static here)"
        )),
        OpKind::ClcTryCancel
            if o.attr("multicast").and_then(Attribute::as_bool) == Some(true)
                && !target.has_try_cancel_multicast() =>
        {
            Some(format!(
                "'{name}' with multicast = true (persistent{{schedule=clc cluster=N}} with N > \
                 1) is not available on {target}; targets that have it: sm_100a"
            ))
        }
        _ => None,
    }
}

/// Why the generic lowering cannot take `o` yet, if it cannot.
fn unsupported(m: &Module, o: &Operation) -> Option<String> {
    let name = o.kind.name();
    match o.kind {
        OpKind::Log => Some(format!(
            "'{name}' has no lowering with a stated error bound yet; 'tile.exp', \
             'tile.exp2', 'tile.tanh', 'tile.sqrt' and 'tile.rsqrt' are lowered"
        )),
        OpKind::Reshape => {
            let from = m.ty(*o.operands.first()?).tile_shape()?;
            let to = m.ty(*o.results.first()?).tile_shape()?;
            let pow2 = |s: &[u64]| s.iter().all(|d| d.is_power_of_two());
            // Adding or dropping unit dimensions keeps every register where it is.
            let squeezed = |s: &[u64]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
            (!(pow2(from) && pow2(to)) && squeezed(from) != squeezed(to)).then(|| {
                format!(
                    "'{name}' between shapes that are not powers of two ({from:?} -> {to:?}) \
                     is not lowered yet, other than adding or dropping unit dimensions"
                )
            })
        }
        // A persistent loop's bounds (`persistent` with the static schedule), and the
        // work-stealing protocol of its clc schedule: scalar and synchronisation ops that
        // hold no tiles.
        OpKind::CtaId
        | OpKind::NumCtas
        | OpKind::MbarrierAlloc
        | OpKind::MbarrierWait
        | OpKind::MbarrierExpectTx
        | OpKind::MbarrierArrive
        | OpKind::FenceProxyAsync
        | OpKind::ClcTryCancel
        | OpKind::ClcQuery
        | OpKind::ClusterCtaRank
        | OpKind::ClusterCtaId
        | OpKind::ClusterId
        | OpKind::NumClusters => None,
        // The try_cancel response slots: plain bytes, no swizzle.
        OpKind::SmemAlloc if o.int_attr("swizzle").unwrap_or(0) == 0 => None,
        k if k.class() == OpClass::Gpu => Some(format!(
            "'{name}' is a GPU-level op; tile-assign-layouts takes level-1 kernels"
        )),
        _ => None,
    }
}

struct Assigner<'m> {
    m: &'m mut Module,
    prefs: HashMap<Vec<u64>, u64>,
    num_warps: u64,
    conversions: u64,
    /// Results of `tile.splat`, `tile.zeros` and `tile.iota`, with the op that made them.
    constructors: HashMap<Value, Operation>,
    /// Loop-carried values whose initial value a constructor made, while their loop's
    /// layout is being decided: they follow the other operands like constructors do.
    soft: std::collections::HashSet<Value>,
}

impl Assigner<'_> {
    fn blocked(&self, shape: &[u64]) -> LinearLayout {
        let bytes = self.prefs.get(shape).copied().unwrap_or(4);
        LinearLayout::blocked(shape, bytes, self.num_warps)
    }

    fn layout(&self, v: Value) -> Option<LinearLayout> {
        self.m.ty(v).layout().cloned()
    }

    fn set(&mut self, v: Value, l: LinearLayout) {
        let t = self.m.ty(v).with_layout(Some(l));
        self.m.values[v.0 as usize].ty = t;
    }

    /// `v` in layout `want`: `v` itself, or the result of a `tile.convert_layout` pushed
    /// onto `out`.
    fn convert(
        &mut self,
        out: &mut Vec<Operation>,
        op: &Operation,
        v: Value,
        want: &LinearLayout,
    ) -> Value {
        if self.layout(v).as_ref() == Some(want) || !matches!(self.m.ty(v), Type::Tile { .. }) {
            return v;
        }
        let ty = self.m.ty(v).with_layout(Some(want.clone()));
        let r = self.m.new_value(ty, None);
        if let Some(def) = self.constructors.get(&v).cloned() {
            // Made by a constructor (or by elementwise ops on constructors only): make it
            // again, in the layout wanted.
            let mut c = def;
            c.loc = op.loc.clone();
            let shape = self.m.ty(v).tile_shape().map(<[u64]>::to_vec);
            for i in 0..c.operands.len() {
                let x = c.operands[i];
                if self.is_tile(x) && self.m.ty(x).tile_shape().map(<[u64]>::to_vec) == shape {
                    c.operands[i] = self.convert(out, op, x, want);
                }
            }
            c.results = vec![r];
            out.push(c);
            return r;
        }
        let mut c = Operation::new(OpKind::ConvertLayout, op.loc.clone());
        c.operands.push(v);
        c.results.push(r);
        out.push(c);
        self.conversions += 1;
        r
    }

    fn block(&mut self, b: &mut Block) {
        let ops = std::mem::take(&mut b.ops);
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            self.op(&mut op, &mut out);
            out.push(op);
        }
        b.ops = out;
    }

    fn is_tile(&self, v: Value) -> bool {
        matches!(self.m.ty(v), Type::Tile { .. })
    }

    fn op(&mut self, op: &mut Operation, out: &mut Vec<Operation>) {
        let shape_of = |m: &Module, v: Value| m.ty(v).tile_shape().map(<[u64]>::to_vec);
        match op.kind {
            OpKind::Load | OpKind::Zeros | OpKind::Splat | OpKind::Broadcast | OpKind::Iota => {
                if let Some(s) = op.results.first().and_then(|&r| shape_of(self.m, r)) {
                    let l = self.blocked(&s);
                    self.set(op.results[0], l);
                    let constructor = matches!(
                        op.kind,
                        OpKind::Zeros | OpKind::Splat | OpKind::Iota | OpKind::Broadcast
                    );
                    if constructor {
                        self.constructors.insert(op.results[0], op.clone());
                    }
                }
            }
            OpKind::Gather => {
                // The result is blocked; the row indices are laid out as its rows are, so
                // each thread holds the index of every row it loads.
                let Some(s) = op.results.first().and_then(|&r| shape_of(self.m, r)) else {
                    return;
                };
                let l = self.blocked(&s);
                self.set(op.results[0], l.clone());
                let rows = l.slice(1).reshaped(&tilec_dialect::layout::padded(&s[..1]));
                op.operands[1] = self.convert(out, op, op.operands[1], &rows);
            }
            OpKind::Dot => {
                // A and C in the mma.sync fragments; B as it is (the lowering stages it
                // through shared memory and reads its fragments there).
                let (Some(sa), Some(sc)) = (
                    shape_of(self.m, op.operands[0]),
                    shape_of(self.m, op.results[0]),
                ) else {
                    return;
                };
                let Some((wm, wn)) = LinearLayout::dot_warps(sc[0], sc[1], self.num_warps) else {
                    return;
                };
                let acc = LinearLayout::dot_accumulator(&sc, wm, wn);
                let a = LinearLayout::dot_operand_a(&sa, wm, wn);
                op.operands[0] = self.convert(out, op, op.operands[0], &a);
                op.operands[2] = self.convert(out, op, op.operands[2], &acc);
                self.set(op.results[0], acc);
            }
            OpKind::Reduce => {
                let (Some(l), Some(d)) = (self.layout(op.operands[0]), op.int_attr("dim")) else {
                    return;
                };
                self.set(op.results[0], l.slice(d as usize));
            }
            OpKind::ExtractSlice => {
                // The source's layout restricted to the slice where each thread holds its
                // elements already (no data moves), else blocked (through shared memory).
                let Some(s) = op.results.first().and_then(|&r| shape_of(self.m, r)) else {
                    return;
                };
                let offsets = tilec_dialect::ops::offsets(op);
                let l = self
                    .layout(op.operands[0])
                    .and_then(|l| l.sliced(&offsets, &s))
                    .unwrap_or_else(|| self.blocked(&s));
                self.set(op.results[0], l);
            }
            OpKind::Transpose => {
                if let Some(l) = self.layout(op.operands[0]) {
                    self.set(op.results[0], l.transposed());
                }
            }
            OpKind::Reshape => {
                if let (Some(l), Some(s)) =
                    (self.layout(op.operands[0]), shape_of(self.m, op.results[0]))
                {
                    self.set(
                        op.results[0],
                        l.reshaped(&tilec_dialect::layout::padded(&s)),
                    );
                }
            }
            OpKind::For | OpKind::While => {
                // tile.for: operands lb, ub, step, inits...; block args iv, carried...;
                // yields carried.... tile.while: operands inits...; block args carried...;
                // yields the continue flag, carried....
                let (oo, ao, yo) = if op.kind == OpKind::For {
                    (3, 1, 0)
                } else {
                    (0, 0, 1)
                };
                let inits: Vec<(usize, Value)> = op.operands[oo..]
                    .iter()
                    .copied()
                    .enumerate()
                    .filter(|&(_, v)| self.is_tile(v))
                    .collect();
                let carry = |a: &mut Self, op: &mut Operation, j: usize, l: LinearLayout| {
                    a.set(op.regions[0].args[ao + j], l.clone());
                    a.set(op.results[j], l);
                };
                for &(j, init) in &inits {
                    if let Some(l) = self.layout(init) {
                        carry(self, op, j, l);
                    }
                    if self.constructors.contains_key(&init) {
                        self.soft.insert(op.regions[0].args[ao + j]);
                    }
                }
                let original = op.regions[0].clone();
                self.block(&mut op.regions[0]);
                for &(j, _) in &inits {
                    self.soft.remove(&op.regions[0].args[ao + j]);
                }
                // An init made by a constructor takes the layout the body yields (the body
                // is laid out again with it), so the loop needs no conversion per iteration.
                let yields: Vec<Value> = op.regions[0]
                    .ops
                    .last()
                    .map(|y| y.operands.clone())
                    .unwrap_or_default();
                let mut relaid = false;
                for &(j, init) in &inits {
                    let yielded = yields.get(yo + j).and_then(|&y| self.layout(y));
                    match yielded {
                        Some(l)
                            if self.constructors.contains_key(&init)
                                && self.layout(init).as_ref() != Some(&l) =>
                        {
                            op.operands[oo + j] = self.convert(out, op, init, &l);
                            carry(self, op, j, l);
                            relaid = true;
                        }
                        _ => {}
                    }
                }
                if relaid {
                    op.regions[0] = original;
                    self.block(&mut op.regions[0]);
                }
                let want: Vec<(usize, LinearLayout)> = inits
                    .iter()
                    .filter_map(|&(j, _)| Some((j, self.layout(op.results[j])?)))
                    .collect();
                self.fix_yield(&mut op.regions[0], &want, yo);
            }
            OpKind::If => {
                for r in &mut op.regions {
                    self.block(r);
                }
                let then_yield: Vec<Value> = op.regions[0]
                    .ops
                    .last()
                    .map(|y| y.operands.clone())
                    .unwrap_or_default();
                let mut want = vec![];
                for (j, &v) in then_yield.iter().enumerate() {
                    if let Some(l) = self.layout(v) {
                        self.set(op.results[j], l.clone());
                        want.push((j, l));
                    }
                }
                if op.regions.len() > 1 {
                    self.fix_yield(&mut op.regions[1], &want, 0);
                }
            }
            OpKind::Store | OpKind::AtomicAdd => {
                // A store from a layout with shorter contiguous runs than the blocked one
                // (a transpose's) goes through a conversion, so it stores whole vectors.
                let Some(&t) = op.operands.last() else { return };
                let (Some(l), Some(s)) = (self.layout(t), shape_of(self.m, t)) else {
                    return;
                };
                let b = self.blocked(&s);
                let mut stored = l;
                if stored.contiguous_register_bits() < b.contiguous_register_bits() {
                    let last = op.operands.len() - 1;
                    op.operands[last] = self.convert(out, op, t, &b);
                    stored = b;
                }
                // A mask (the operand before the value) pairs its registers with the value's.
                let rank = match self.m.ty(op.operands[0]) {
                    Type::Tensor { rank, .. } => *rank as usize,
                    _ => return,
                };
                if op.operands.len() == rank + 3 {
                    let mi = rank + 1;
                    let mask = op.operands[mi];
                    if self.layout(mask).as_ref() != Some(&stored) {
                        op.operands[mi] = self.convert(out, op, mask, &stored);
                    }
                }
            }
            // A loop's yields are fixed by its `tile.for` (`fix_yield`), an if's by its
            // `tile.if`: the values they carry may have different shapes.
            OpKind::Yield | OpKind::Return => {}
            _ => {
                // Elementwise and the like: the first computed tile operand's layout (a
                // constructor's costs the same in any).
                let laid = |v: &Value| self.is_tile(*v) && self.layout(*v).is_some();
                let first = op
                    .operands
                    .iter()
                    .copied()
                    .find(|v| {
                        laid(v) && !self.constructors.contains_key(v) && !self.soft.contains(v)
                    })
                    .or_else(|| op.operands.iter().copied().find(laid));
                let Some(l) = first.and_then(|v| self.layout(v)) else {
                    return;
                };
                let operands = op.operands.clone();
                for (i, v) in operands.into_iter().enumerate() {
                    if self.is_tile(v) {
                        op.operands[i] = self.convert(out, op, v, &l);
                    }
                }
                for &r in &op.results.clone() {
                    if self.is_tile(r) {
                        self.set(r, l.clone());
                    }
                }
                // Elementwise on constructors only (an iota compared with a splat): as
                // cheap to make again in any layout as they are.
                let shape = op.results.first().and_then(|&r| shape_of(self.m, r));
                let derived = op.regions.is_empty()
                    && op.results.len() == 1
                    && shape.is_some()
                    && op.operands.iter().all(|&v| {
                        !self.is_tile(v)
                            || (self.constructors.contains_key(&v) && shape_of(self.m, v) == shape)
                    });
                if derived {
                    self.constructors.insert(op.results[0], op.clone());
                }
            }
        }
    }

    /// Converts the yielded values at `want`'s positions (after the first `skip`
    /// operands) to those layouts.
    fn fix_yield(&mut self, b: &mut Block, want: &[(usize, LinearLayout)], skip: usize) {
        let Some(mut y) = b.ops.pop() else { return };
        let mut out = vec![];
        for (j, l) in want {
            if let Some(&v) = y.operands.get(skip + *j) {
                y.operands[skip + *j] = self.convert(&mut out, &y, v, l);
            }
        }
        b.ops.extend(out);
        b.ops.push(y);
    }
}
