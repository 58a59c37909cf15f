//! `tile-strip-mine-stores` — compute a wide store's elementwise chain in column strips.
//!
//! A kernel with a plain launch holds each tile in registers. When a `tile.store` writes an
//! elementwise chain that reads fresh tiles from memory (a normalisation's
//! `y = (x − mean) · rstd · w + b`: the weights are loaded only for the output), every
//! loaded tile and every tile kept from earlier are live at once before the first element
//! is stored. At 32,768 columns and 16 warps that is 64 registers for `x − mean` and 32 each
//! for `w` and `b` (bf16 pairs): the 128-register cap of 512 threads, and ptxas spills.
//!
//! The pass splits such a store and its chain along the last dimension into `K` strips of
//! `N / K` columns, in order: per strip, the loads of the chain at offsets `k · N / K` on,
//! the tiles kept from earlier as `tile.extract_slice`s, the chain's ops on strip-sized
//! tiles, and the strip's store. Each strip's loads come after the previous strip's store,
//! which the back end keeps in order (a store may alias a later load for it), so at most one
//! strip of the loaded tiles is live. Elementwise results are the same bits: every element
//! goes through the same ops.
//!
//! The chain is, backwards from the stored value (and a store mask), the ops of the store's
//! block whose results are used only inside the chain: float and integer elementwise ops,
//! `tile.cmpi`, `tile.select`, `tile.convert`, `tile.reshape` that keeps the last dimension,
//! `tile.broadcast` (re-broadcast per strip when its operand is one column wide),
//! `tile.splat` / `tile.zeros`, and `tile.iota` (per strip, plus the strip's first column
//! along the last dimension); and `tile.load`s of tensors the kernel never writes, used only
//! inside the chain. Any other tile operand of the chain (a value from before, a
//! reduction's input kept for the output) is sliced.
//!
//! What this assumes of the caller: a tensor argument the kernel only reads overlaps no
//! written one except element for element (the same buffer passed twice, as an in-place
//! call does: each strip reads only the columns it then writes). A read tensor that
//! overlaps a written one at other offsets would see an earlier strip's stores.
//!
//! A store is split when the chain reads at least one tile from memory and either
//! - its estimated registers per thread (loaded tiles and sliced tiles, at their element
//!   sizes, over the CTA's threads) exceed half the thread's budget (65,536 / threads, at most
//!   255): then `K` is the smallest power of two, at least 2, that brings the loaded tiles'
//!   share to an eighth of the budget, at most [`MAX_STRIPS`]; or
//! - it slices a kept tile and its loaded tiles take at least [`HALVE_LOADED_REGISTERS`]
//!   registers a thread: then `K` = 2. Memory-bound kernels hold more CTAs an SM with fewer
//!   registers, and so more rows' loads in flight (more strips than 2 cost the loads of each
//!   strip their overlap with the previous strip's work). A chain that keeps nothing (a
//!   copy, an elementwise kernel) is the kernel's whole stream: splitting it would only hold
//!   the second half's loads behind the first half's stores.
//!
//! A store whose chain runs more than [`MAX_CHAIN_DEPTH`] ops back is left whole. Each strip
//! keeps at least 8 elements per thread and is a power of two wide (`N / K`; a
//! slice of a kept tile then stays in registers, where any other width would go through
//! shared memory); a store that allows no such `K` is left whole. Kernels with a `tile.dot`
//! (their epilogues are `tile-to-gpu`'s), kernels that are already laid out (a `target`),
//! and kernels with flag ops are left alone.
//!
//! Options: `target` (sm_90a), `num-warps` (0: as `tile-assign-layouts` chooses,
//! [`auto_warps`]), `strips` (0: choose as above; otherwise split every eligible store into
//! that many strips, for tests). Statistics: `stores-strip-mined`, `strips`.

use crate::assign_layouts::{auto_warps, MAX_REGISTERS_PER_THREAD};
use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostics, Module, OpClass, OpKind, Operation, Target, Type, Value,
};

/// A chain that slices a kept tile and whose loaded tiles take at least this many registers
/// a thread is split in two even when it fits the budget. Halving the loaded tiles' live
/// range lowers the kernel's registers, so that an SM holds more CTAs and keeps more rows'
/// loads in flight (measured on an H100, `docs/performance.md`, session 43: LayerNorm
/// 32768×4096 at 4 warps 117 → 80 registers, 2707 → 2931 GB/s; 16384×8192 at 8 warps
/// 2502 → 2920; RMSNorm 16384×8192 2775 → 2951; 4 strips were 1–2 % slower than 2).
pub const HALVE_LOADED_REGISTERS: u64 = 16;

/// The most strips the pass chooses for one store. A tile that would need more is far past
/// any register budget, and `tile-assign-layouts` refuses it with a located error; more
/// strips would only make the module large first (each strip repeats the chain).
pub const MAX_STRIPS: u64 = 64;

/// The longest chain of ops, from the store back, that the pass follows: a store fed by a
/// longer chain is left whole (the walk is recursive, and the stack bounds it).
pub const MAX_CHAIN_DEPTH: usize = 512;

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-strip-mine-stores",
    summary: "Compute a wide store's elementwise chain in column strips, to bound registers",
    description: "In kernels with a plain launch, a 'tile.store' whose value is an elementwise \
        chain over fresh loads and earlier tiles, estimated to need more than half the \
        registers a thread has, is split along its last dimension into strips: per strip, \
        the loads at shifted offsets, the earlier tiles as 'tile.extract_slice', the chain, \
        and the strip's store.\n\nExample: tile-opt \
        --pass-pipeline='tile-strip-mine-stores{num-warps=16}' examples/layernorm.tile",
    options: &[
        OptionInfo {
            name: "target",
            kind: OptionKind::Enum(&["sm_90", "sm_90a", "sm_100", "sm_100a"]),
            default: "sm_90a",
            help: "GPU to build for (tile-assign-layouts' choice of warps depends on it)",
        },
        OptionInfo {
            name: "num-warps",
            kind: OptionKind::UInt,
            default: "0",
            help: "Warps per CTA the kernel will get: a power of two from 1 to 32, or 0 for \
                tile-assign-layouts' choice",
        },
        OptionInfo {
            name: "strips",
            kind: OptionKind::UInt,
            default: "0",
            help: "Strips per eligible store: 0 to choose from the register estimate, or a \
                power of two that leaves strips a power of two wide (every eligible store \
                is split)",
        },
    ],
};

/// The pass.
pub struct StripMineStores {
    /// Target (for [`auto_warps`]).
    pub target: Target,
    /// Warps per CTA (0: [`auto_warps`]).
    pub num_warps: u64,
    /// Strips per store (0: from the register estimate).
    pub strips: u64,
}

impl StripMineStores {
    /// Build from checked options.
    ///
    /// # Errors
    /// `num-warps` not 0 or a power of two from 1 to 32; `strips` not 0 or a power of two
    /// from 2 to 1,024.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let target = Target::from_name(o.get("target"))
            .ok_or_else(|| format!("unknown target '{}'", o.get("target")))?;
        let num_warps = o.uint("num-warps");
        if num_warps != 0 && (num_warps > 32 || !num_warps.is_power_of_two()) {
            return Err(format!(
                "tile-strip-mine-stores option 'num-warps' must be 0 (choose) or a power of two \
                 from 1 to 32, found {num_warps}"
            ));
        }
        let strips = o.uint("strips");
        if strips != 0 && (!(2..=1024).contains(&strips) || !strips.is_power_of_two()) {
            return Err(format!(
                "tile-strip-mine-stores option 'strips' must be 0 (choose) or a power of two \
                 from 2 to 1024, found {strips}"
            ));
        }
        Ok(StripMineStores {
            target,
            num_warps,
            strips,
        })
    }
}

impl Pass for StripMineStores {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }

    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.attr("target").is_some() {
                continue;
            }
            let mut skip = false;
            k.walk(&mut |o| {
                skip |= matches!(o.kind, OpKind::Dot | OpKind::Mma)
                    || o.kind.is_flag()
                    || o.kind.is_gpu_level()
            });
            if skip {
                continue;
            }
            let warps = match self.num_warps {
                0 => auto_warps(m, k, self.target),
                n => n,
            };
            let mut written = HashSet::new();
            k.walk(&mut |o| {
                if matches!(o.kind, OpKind::Store | OpKind::AtomicAdd) {
                    if let Some(&t) = o.operands.first() {
                        written.insert(t);
                    }
                }
            });
            let cx_k = Kernel {
                threads: 32 * warps,
                forced: self.strips,
                written: &written,
            };
            for b in &mut k.regions {
                let (stores, strips) = cx_k.block(m, b);
                cx.stat("stores-strip-mined", stores);
                cx.stat("strips", strips);
            }
        }
        m.ops = kernels;
        Ok(())
    }
}

/// What the pass knows of one kernel.
struct Kernel<'a> {
    threads: u64,
    forced: u64,
    written: &'a HashSet<Value>,
}

/// How many times each value is an operand in `b` and the blocks nested in it.
fn count_uses(b: &Block, uses: &mut HashMap<Value, usize>) {
    for o in &b.ops {
        for &v in &o.operands {
            *uses.entry(v).or_default() += 1;
        }
        for r in &o.regions {
            count_uses(r, uses);
        }
    }
}

/// How a value of the chain is rebuilt per strip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Its op is re-emitted on strip-sized tiles (index of the op in the block).
    Op(usize),
    /// A load re-issued at shifted offsets (index of the op in the block).
    Load(usize),
    /// A tile from outside the chain: `tile.extract_slice` per strip.
    Slice,
    /// A scalar or a tile of one column, used as is.
    Whole,
}

impl Kernel<'_> {
    /// Strip-mines the eligible stores of `b` and of the blocks nested in it; returns
    /// (stores split, strips made).
    fn block(&self, m: &mut Module, b: &mut Block) -> (u64, u64) {
        let (mut stores, mut strips) = (0, 0);
        for op in &mut b.ops {
            for r in &mut op.regions {
                let (s, n) = self.block(m, r);
                stores += s;
                strips += n;
            }
        }
        let mut i = 0;
        while i < b.ops.len() {
            if b.ops[i].kind == OpKind::Store {
                if let Some(plan) = self.plan(m, b, i) {
                    let (removed, inserted) = self.rewrite(m, b, i, &plan);
                    stores += 1;
                    strips += plan.strips;
                    i = i - removed + inserted;
                    continue;
                }
            }
            i += 1;
        }
        (stores, strips)
    }

    /// The strip plan for the store `b.ops[s]`, or `None` when it is not eligible or not
    /// worth splitting.
    fn plan(&self, m: &Module, b: &Block, s: usize) -> Option<Plan> {
        let store = &b.ops[s];
        let Some(Type::Tensor { rank, .. }) = store.operands.first().map(|&t| m.ty(t)) else {
            return None;
        };
        let r = *rank as usize;
        let value = *store.operands.last()?;
        let shape = m.ty(value).tile_shape()?.to_vec();
        let n = *shape.last()?;
        if shape.len() != r || n < 2 {
            return None;
        }
        let def: HashMap<Value, usize> = b.ops[..s]
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.results.iter().map(move |&v| (v, i)))
            .collect();
        // The chain: roles from the stored value and the mask, then each op whose results
        // are used outside the chain demoted to a slice, until nothing changes.
        let roots: Vec<Value> = store.operands[1 + r..].to_vec();
        let mut uses = HashMap::new();
        count_uses(b, &mut uses);
        let mut demoted: HashSet<Value> = HashSet::new();
        loop {
            let mut roles: HashMap<Value, Role> = HashMap::new();
            let chain = Chain {
                m,
                b,
                def: &def,
                demoted: &demoted,
                written: self.written,
                n,
                depth: Default::default(),
            };
            for &v in &roots {
                chain.classify(v, &mut roles)?;
            }
            let in_chain: HashMap<usize, usize> = roles
                .values()
                .filter_map(|ro| match ro {
                    Role::Op(i) | Role::Load(i) => Some(*i),
                    _ => None,
                })
                .map(|i| (i, 0))
                .collect();
            // Uses of each chain value from inside the chain (and the store).
            let mut inner: HashMap<Value, usize> = HashMap::new();
            for &i in in_chain.keys() {
                for &v in &b.ops[i].operands {
                    *inner.entry(v).or_default() += 1;
                }
            }
            for &v in &roots {
                *inner.entry(v).or_default() += 1;
            }
            let bad: Vec<Value> = roles
                .iter()
                .filter(|(v, ro)| {
                    matches!(ro, Role::Op(_) | Role::Load(_))
                        && uses.get(v).copied().unwrap_or(0) != inner.get(v).copied().unwrap_or(0)
                })
                .map(|(&v, _)| v)
                .collect();
            if bad.is_empty() {
                return self.size(m, n, roots, roles);
            }
            demoted.extend(bad);
        }
    }

    /// The plan with its strip count, or `None` when the chain loads nothing or fits.
    fn size(
        &self,
        m: &Module,
        n: u64,
        roots: Vec<Value>,
        roles: HashMap<Value, Role>,
    ) -> Option<Plan> {
        let regs = |v: Value| -> u64 {
            match m.ty(v) {
                Type::Tile { shape, elem, .. } => {
                    let bytes: u64 = shape.iter().product::<u64>() * elem.size_bytes();
                    bytes.div_ceil(4).div_ceil(self.threads)
                }
                _ => 0,
            }
        };
        let loaded: u64 = roles
            .iter()
            .filter(|(_, ro)| matches!(ro, Role::Load(_)))
            .map(|(&v, _)| regs(v))
            .sum();
        if loaded == 0 {
            return None;
        }
        let kept: u64 = roles
            .iter()
            .filter(|(_, ro)| **ro == Role::Slice)
            .map(|(&v, _)| regs(v))
            .sum();
        let elems: u64 = roots
            .iter()
            .filter_map(|&v| m.ty(v).tile_shape())
            .map(|s| s.iter().product::<u64>())
            .max()
            .unwrap_or(0);
        // A strip a power of two wide is whole register bits of every layout of its tiles,
        // so a slice of a kept tile stays in the thread's registers; any other width would
        // take each slice through shared memory.
        let aligned = |k: u64| n.is_multiple_of(k) && (n / k).is_power_of_two();
        let fits = |k: u64| aligned(k) && elems / k >= 8 * self.threads;
        let strips = if self.forced != 0 {
            if !aligned(self.forced) {
                return None;
            }
            self.forced
        } else {
            let budget = (65_536 / self.threads).min(MAX_REGISTERS_PER_THREAD);
            let spills = 2 * (loaded + kept) > budget;
            if !spills && (kept == 0 || loaded < HALVE_LOADED_REGISTERS) {
                return None;
            }
            let mut k = 2;
            while spills && 8 * loaded.div_ceil(k) > budget && k < MAX_STRIPS && fits(2 * k) {
                k *= 2;
            }
            if !fits(k) {
                return None;
            }
            k
        };
        Some(Plan {
            strips,
            width: n / strips,
            roots,
            roles,
        })
    }

    /// Replaces the store `b.ops[s]` and its chain by the plan's strips; returns how many
    /// ops before `s` were removed and how many were inserted.
    fn rewrite(&self, m: &mut Module, b: &mut Block, s: usize, plan: &Plan) -> (usize, usize) {
        let store = b.ops[s].clone();
        let loc = store.loc.clone();
        let r = store.operands.len() - 1 - plan.roots.len();
        let mut out = vec![];
        for k in 0..plan.strips {
            let shift = k * plan.width;
            let mut strip = Strip {
                m: &mut *m,
                b: &*b,
                loc: loc.clone(),
                plan,
                shift,
                memo: HashMap::new(),
                out: &mut out,
                offset: None,
                shifted: HashMap::new(),
            };
            let roots: Vec<Value> = plan.roots.iter().map(|&v| strip.value(v)).collect();
            let last = strip.shifted(store.operands[r], &loc);
            let mut st = Operation::new(OpKind::Store, loc.clone());
            st.attrs = store.attrs.clone();
            st.operands = store.operands[..r].to_vec();
            st.operands.push(last);
            st.operands.extend(roots);
            out.push(st);
        }
        // The chain's ops are dead now: drop them, then put the strips where the store was.
        let chain: HashSet<usize> = plan
            .roles
            .values()
            .filter_map(|ro| match ro {
                Role::Op(i) | Role::Load(i) => Some(*i),
                _ => None,
            })
            .collect();
        let inserted = out.len();
        let ops = std::mem::take(&mut b.ops);
        let mut kept = Vec::with_capacity(ops.len() + out.len());
        let mut removed = 0;
        for (i, o) in ops.into_iter().enumerate() {
            if i == s {
                kept.append(&mut out);
            } else if chain.contains(&i) {
                removed += 1;
            } else {
                kept.push(o);
            }
        }
        b.ops = kept;
        (removed, inserted)
    }
}

/// One store's chain being found: the store's block, the ops before the store by result,
/// the values demoted to slices, and the stored tile's columns.
struct Chain<'a> {
    m: &'a Module,
    b: &'a Block,
    def: &'a HashMap<Value, usize>,
    demoted: &'a HashSet<Value>,
    written: &'a HashSet<Value>,
    n: u64,
    /// How deep the walk from the store is now.
    depth: std::cell::Cell<usize>,
}

impl Chain<'_> {
    /// Gives `v` (a value with `n` columns, or a scalar) and its chain operands their roles;
    /// `None` if `v` cannot be rebuilt per strip, or lies more than [`MAX_CHAIN_DEPTH`] ops
    /// from the store.
    fn classify(&self, v: Value, roles: &mut HashMap<Value, Role>) -> Option<()> {
        if self.depth.get() >= MAX_CHAIN_DEPTH {
            return None;
        }
        self.depth.set(self.depth.get() + 1);
        let r = self.classify_at(v, roles);
        self.depth.set(self.depth.get() - 1);
        r
    }

    /// [`Chain::classify`] one level down.
    fn classify_at(&self, v: Value, roles: &mut HashMap<Value, Role>) -> Option<()> {
        let (m, b, n) = (self.m, self.b, self.n);
        if roles.contains_key(&v) {
            return Some(());
        }
        let Some(shape) = m.ty(v).tile_shape() else {
            roles.insert(v, Role::Whole);
            return Some(());
        };
        if shape.last() != Some(&n) {
            return None;
        }
        let slice = |roles: &mut HashMap<Value, Role>| {
            roles.insert(v, Role::Slice);
            Some(())
        };
        let Some(&i) = self.def.get(&v) else {
            return slice(roles);
        };
        if self.demoted.contains(&v) {
            return slice(roles);
        }
        let op = &b.ops[i];
        let same_cols = |w: Value| m.ty(w).tile_shape().and_then(|s| s.last().copied());
        match op.kind {
            OpKind::Load => {
                if self.written.contains(&op.operands[0]) {
                    return slice(roles);
                }
                roles.insert(v, Role::Load(i));
                Some(())
            }
            OpKind::Splat | OpKind::Zeros | OpKind::Iota => {
                roles.insert(v, Role::Op(i));
                Some(())
            }
            OpKind::Broadcast => {
                let src = op.operands[0];
                match same_cols(src) {
                    Some(1) => {
                        roles.insert(src, Role::Whole);
                    }
                    Some(c) if c == n => self.classify(src, roles)?,
                    _ => return slice(roles),
                }
                roles.insert(v, Role::Op(i));
                Some(())
            }
            OpKind::Reshape => {
                let src = op.operands[0];
                if same_cols(src) != Some(n) {
                    return slice(roles);
                }
                self.classify(src, roles)?;
                roles.insert(v, Role::Op(i));
                Some(())
            }
            OpKind::CmpI | OpKind::Select | OpKind::Convert => self.elementwise(v, i, roles),
            k if matches!(
                k.class(),
                OpClass::FloatBinary | OpClass::FloatUnary | OpClass::IntBinary
            ) =>
            {
                self.elementwise(v, i, roles)
            }
            _ => slice(roles),
        }
    }

    /// An elementwise op `b.ops[i]` (result `v`): its tile operands must have its shape.
    fn elementwise(&self, v: Value, i: usize, roles: &mut HashMap<Value, Role>) -> Option<()> {
        let (m, b) = (self.m, self.b);
        let op = &b.ops[i];
        let shape = m.ty(v).tile_shape()?.to_vec();
        for &w in &op.operands {
            match m.ty(w).tile_shape() {
                None => {
                    roles.insert(w, Role::Whole);
                }
                Some(s) if s == shape.as_slice() => {
                    self.classify(w, roles)?;
                }
                Some(_) => {
                    roles.insert(v, Role::Slice);
                    return Some(());
                }
            }
        }
        roles.insert(v, Role::Op(i));
        Some(())
    }
}

/// A store's strips: the chain's roles, the strip count and width (columns).
struct Plan {
    strips: u64,
    width: u64,
    roots: Vec<Value>,
    roles: HashMap<Value, Role>,
}

/// One strip being written.
struct Strip<'a, 'b> {
    m: &'a mut Module,
    b: &'a Block,
    loc: tilec_dialect::Location,
    plan: &'a Plan,
    shift: u64,
    memo: HashMap<Value, Value>,
    out: &'b mut Vec<Operation>,
    offset: Option<Value>,
    shifted: HashMap<Value, Value>,
}

impl Strip<'_, '_> {
    /// The strip's counterpart of chain value `v`.
    fn value(&mut self, v: Value) -> Value {
        if let Some(&x) = self.memo.get(&v) {
            return x;
        }
        let x = match self.plan.roles.get(&v).copied().unwrap_or(Role::Whole) {
            Role::Whole => v,
            Role::Slice => {
                let ty = self.strip_ty(v);
                let rank = self.m.ty(v).tile_shape().map_or(0, <[u64]>::len);
                let mut offs = vec![Attribute::Int(0); rank];
                offs[rank - 1] = Attribute::Int(self.shift as i64);
                let mut o = Operation::new(OpKind::ExtractSlice, self.loc.clone());
                o.operands = vec![v];
                o.attrs.insert("offsets".into(), Attribute::Array(offs));
                self.emit(o, v, ty)
            }
            Role::Load(i) => {
                let b = self.b;
                let src = &b.ops[i];
                let mut o = src.clone();
                let last = o.operands.len() - 1;
                o.operands[last] = self.shifted(src.operands[last], &src.loc);
                let ty = self.strip_ty(v);
                self.emit(o, v, ty)
            }
            Role::Op(i) => {
                let b = self.b;
                let src = &b.ops[i];
                let mut o = src.clone();
                o.operands = src.operands.iter().map(|&w| self.value(w)).collect();
                let ty = self.strip_ty(v);
                let x = self.emit(o, v, ty.clone());
                if src.kind == OpKind::Iota {
                    self.iota_shift(src, x, ty)
                } else {
                    x
                }
            }
        };
        self.memo.insert(v, x);
        x
    }

    /// `o` (a copy of the op defining `v`, operands set) with a fresh result of `ty`.
    fn emit(&mut self, mut o: Operation, v: Value, ty: Type) -> Value {
        let k = self.shift / self.plan.width;
        let name = self.m.name(v).map(|n| format!("{n}_s{k}"));
        let r = self.m.new_value(ty, name);
        o.results = vec![r];
        o.regions.clear();
        self.out.push(o);
        r
    }

    /// A strip's `tile.iota` `x` (of type `ty`) counted from the strip's first column: along
    /// the last dimension, plus a splat of the shift (`tile.addi`); along another, as is.
    fn iota_shift(&mut self, src: &Operation, x: Value, ty: Type) -> Value {
        let Type::Tile { shape, elem, .. } = &ty else {
            return x;
        };
        let along_last = matches!(src.attr("dim"), Some(Attribute::Int(d))
            if *d as usize + 1 == shape.len());
        if self.shift == 0 || !along_last {
            return x;
        }
        let scalar = Type::Scalar(*elem);
        let c = self.m.new_value(scalar.clone(), None);
        let mut o = Operation::new(OpKind::Constant, src.loc.clone());
        o.attrs
            .insert("value".into(), Attribute::Int(self.shift as i64));
        o.results = vec![c];
        self.out.push(o);
        let sp = self.m.new_value(ty.clone(), None);
        let mut o = Operation::new(OpKind::Splat, src.loc.clone());
        o.operands = vec![c];
        o.results = vec![sp];
        self.out.push(o);
        let r = self.m.new_value(ty, None);
        let mut o = Operation::new(OpKind::AddI, src.loc.clone());
        o.operands = vec![x, sp];
        o.results = vec![r];
        self.out.push(o);
        r
    }

    /// `v`'s type with `width` columns.
    fn strip_ty(&self, v: Value) -> Type {
        match self.m.ty(v) {
            Type::Tile { shape, elem, .. } => {
                let mut s = shape.clone();
                if let Some(l) = s.last_mut() {
                    *l = self.plan.width;
                }
                Type::tile(&s, *elem)
            }
            t => t.clone(),
        }
    }

    /// The column offset `off` (index) moved on by this strip's shift.
    fn shifted(&mut self, off: Value, loc: &tilec_dialect::Location) -> Value {
        if self.shift == 0 {
            return off;
        }
        if let Some(&x) = self.shifted.get(&off) {
            return x;
        }
        let c = match self.offset {
            Some(c) => c,
            None => {
                let c = self.m.new_value(Type::INDEX, None);
                let mut o = Operation::new(OpKind::Constant, loc.clone());
                o.attrs
                    .insert("value".into(), Attribute::Int(self.shift as i64));
                o.results = vec![c];
                self.out.push(o);
                self.offset = Some(c);
                c
            }
        };
        let r = self.m.new_value(Type::INDEX, None);
        let mut o = Operation::new(OpKind::AddI, loc.clone());
        o.operands = vec![off, c];
        o.results = vec![r];
        self.out.push(o);
        self.shifted.insert(off, r);
        r
    }
}
