//! The typed MLIR writer: ops built with melior's `OperationBuilder` into the blocks of one
//! `llvm.func`, values carried as melior `Value`s with their tile IR scalar type, never as
//! text.
//!
//! The function body is a flat control-flow graph (`llvm.br` / `llvm.cond_br` between
//! blocks of the function's one region), so every value the writer holds lives as long as
//! the module. The kernel constructs (memory, math, reductions, layout changes, control
//! flow) are methods in the sibling modules; this one holds what they share: types,
//! constants, integer and float arithmetic, comparisons, special registers, shared memory,
//! barriers and shuffles.

use melior::{
    dialect::llvm::{self, LoadStoreOptions},
    ir::{
        attribute::{
            DenseI32ArrayAttribute, DenseI64ArrayAttribute, FlatSymbolRefAttribute, FloatAttribute,
            IntegerAttribute, StringAttribute, TypeAttribute,
        },
        block::BlockLike,
        operation::{OperationBuilder, OperationLike},
        r#type::IntegerType,
        Attribute, Block, BlockRef, Identifier, Location, Operation, RegionLike, RegionRef, Type,
        Value, ValueLike,
    },
    Context,
};
use tilec_dialect::{Diagnostic, LinearLayout, Location as TileLocation, ScalarType};

/// A scalar SSA value of the kernel with its tile IR type (`index` is `i64`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct V<'c, 'm> {
    /// The MLIR value.
    pub v: Value<'c, 'm>,
    /// Its tile IR type.
    pub t: ScalarType,
}

/// The MLIR type of a tile IR scalar type (`index` is `i64`).
pub(crate) fn scalar_type(ctx: &Context, t: ScalarType) -> Type<'_> {
    match t {
        ScalarType::I1 => IntegerType::new(ctx, 1).into(),
        ScalarType::I32 => IntegerType::new(ctx, 32).into(),
        ScalarType::I64 | ScalarType::Index => IntegerType::new(ctx, 64).into(),
        ScalarType::F16 => Type::float16(ctx),
        ScalarType::BF16 => Type::bfloat16(ctx),
        ScalarType::F32 => Type::float32(ctx),
        ScalarType::E4M3 => Type::float8_e4m3fn(ctx),
        ScalarType::E5M2 => Type::float8_e5m2(ctx),
    }
}

/// How one element of `elem` moves between a register and global memory in PTX: the
/// `ld`/`st` type, the inline-asm register constraint, and the register's bits (8-bit
/// elements, fp8 and the bytes of an i1 tensor, travel as `u8` in a 16-bit register).
fn global_access(elem: ScalarType) -> (&'static str, &'static str, u32) {
    match elem {
        ScalarType::F32 => ("f32", "f", 32),
        ScalarType::I32 => ("b32", "r", 32),
        ScalarType::I64 | ScalarType::Index => ("b64", "l", 64),
        ScalarType::F16 | ScalarType::BF16 => ("b16", "h", 16),
        ScalarType::I1 | ScalarType::E4M3 | ScalarType::E5M2 => ("u8", "h", 16),
    }
}

/// A global element that a predicated access's inline asm addresses and guards itself.
///
/// Its address is `base` (an i64 byte address) plus `k · stride` bytes for each term
/// `(stride, k)` (an i64 and a constant), as PTX `mad.lo.s64` (`add.s64` where `k` is 1).
/// It is accessed where the access's flag holds and, for each bound, `lo ≤ k < hi` (and
/// `k < pad`) of its constant coordinate `k` (signed, `setp.{gt,le}.and.s64`). A slow
/// path's elements are such sums and bounds; in the asm, LLVM sees no per-element
/// arithmetic or compare, which its instruction selection, straight-line strength
/// reduction and scalar evolution would process at a cost that grows faster than the
/// elements. ptxas optimises them instead.
pub(crate) struct AsmElement<'c, 'm> {
    pub base: V<'c, 'm>,
    pub terms: Vec<(V<'c, 'm>, u64)>,
    pub bounds: Vec<AsmBound<'c, 'm>>,
}

/// See [`AsmElement`]: `lo ≤ k < hi`, and `k < pad` where there is one (i64 each).
pub(crate) struct AsmBound<'c, 'm> {
    pub k: u64,
    pub hi: V<'c, 'm>,
    pub lo: V<'c, 'm>,
    pub pad: Option<V<'c, 'm>>,
}

/// The operands of an inline asm statement as it is built: each input's constraint and
/// value, numbered after the `outputs`.
struct AsmOperands<'c, 'm> {
    constraints: Vec<String>,
    values: Vec<Value<'c, 'm>>,
    outputs: usize,
}

impl<'c, 'm> AsmOperands<'c, 'm> {
    /// `outputs`: the output constraints (`=h` and the like), numbered first.
    fn new(outputs: &[&str]) -> Self {
        Self {
            constraints: outputs.iter().map(|c| c.to_string()).collect(),
            values: vec![],
            outputs: outputs.len(),
        }
    }

    /// Adds an input, or finds the same value already added with the same constraint;
    /// returns its reference in the asm text (`$n`).
    fn input(&mut self, constraint: &str, v: Value<'c, 'm>) -> String {
        let found = self
            .values
            .iter()
            .zip(&self.constraints[self.outputs..])
            .position(|(&x, c)| x == v && c == constraint);
        let i = found.unwrap_or_else(|| {
            self.constraints.push(constraint.into());
            self.values.push(v);
            self.values.len() - 1
        });
        format!("${}", self.outputs + i)
    }

    fn constraints(&self) -> String {
        self.constraints.join(",")
    }
}

impl<'c, 'm> AsmElement<'c, 'm> {
    /// Its declarations, its guard's PTX (narrowing predicate `p`) and its address's
    /// (into `a`, where it has terms), with its inputs added to `ops` (the base's
    /// reference is `base`), and the address operand (`a` or `base`).
    fn asm(&self, base: &str, ops: &mut AsmOperands<'c, 'm>) -> (String, String, String) {
        let mut guard = String::new();
        for b in &self.bounds {
            let k = b.k;
            let hi = ops.input("l", b.hi.v);
            guard += &format!(" setp.gt.and.s64 p, {hi}, {k}, p;");
            let lo = ops.input("l", b.lo.v);
            guard += &format!(" setp.le.and.s64 p, {lo}, {k}, p;");
            if let Some(pad) = b.pad {
                let pad = ops.input("l", pad.v);
                guard += &format!(" setp.gt.and.s64 p, {pad}, {k}, p;");
            }
        }
        if self.terms.is_empty() {
            return (String::new(), guard, base.into());
        }
        let mut prev = base.to_string();
        for (stride, k) in &self.terms {
            let s = ops.input("l", stride.v);
            guard += &match k {
                1 => format!(" add.s64 a, {s}, {prev};"),
                _ => format!(" mad.lo.s64 a, {s}, {k}, {prev};"),
            };
            prev = "a".into();
        }
        (" .reg .b64 a;".into(), guard, "a".into())
    }
}

/// Integer comparison predicates of `llvm.icmp` (MLIR's `ICmpPredicate`, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ICmp {
    Eq = 0,
    Ne = 1,
    Slt = 2,
    Sle = 3,
    Sgt = 4,
    Sge = 5,
    Ult = 6,
    Ule = 7,
    Ugt = 8,
    Uge = 9,
}

impl ICmp {
    /// The predicate for operands of type `t`: on `i1`, which tile IR reads as 0 or 1
    /// (LLVM's signed `i1` reads true as -1), a signed predicate becomes its unsigned form.
    pub fn on(self, t: ScalarType) -> ICmp {
        match (t, self) {
            (ScalarType::I1, ICmp::Slt) => ICmp::Ult,
            (ScalarType::I1, ICmp::Sle) => ICmp::Ule,
            (ScalarType::I1, ICmp::Sgt) => ICmp::Ugt,
            (ScalarType::I1, ICmp::Sge) => ICmp::Uge,
            (_, p) => p,
        }
    }

    /// The predicate of its MLIR name (`eq`, `ne`, `slt`, ..., `uge`).
    pub fn from_name(s: &str) -> Option<ICmp> {
        Some(match s {
            "eq" => ICmp::Eq,
            "ne" => ICmp::Ne,
            "slt" => ICmp::Slt,
            "sle" => ICmp::Sle,
            "sgt" => ICmp::Sgt,
            "sge" => ICmp::Sge,
            "ult" => ICmp::Ult,
            "ule" => ICmp::Ule,
            "ugt" => ICmp::Ugt,
            "uge" => ICmp::Uge,
            _ => return None,
        })
    }
}

/// The writer: the context, the function's region, and the block ops go into.
pub(crate) struct Writer<'c, 'm> {
    pub ctx: &'c Context,
    pub loc: Location<'c>,
    pub region: RegionRef<'c, 'm>,
    pub block: BlockRef<'c, 'm>,
    /// The first error of a build (an op melior could not create: a writer bug).
    pub error: Option<String>,
    /// Blocks made by [`Self::block`] and not placed yet.
    pub pending: Vec<Block<'c>>,
    /// `#llvm.fastmath<contract>` where f32 `fadd`, `fsub` and `fmul` carry it, so that a
    /// multiply and an add may become one `fma.rn.f32` (a kernel with `fp_fusion = true`).
    pub contract: Option<Attribute<'c>>,
    /// The threads of a CTA barrier where not all the CTA's threads take part: in the
    /// consumer region of a warp-specialized plain launch, the consumer warps'
    /// (`bar.sync 0, threads`).
    pub cta_threads: Option<i64>,
}

impl Drop for Writer<'_, '_> {
    fn drop(&mut self) {
        for b in self.pending.drain(..) {
            self.region.append_block(b);
        }
    }
}

impl<'c, 'm> Writer<'c, 'm> {
    /// The MLIR type of a tile IR scalar type.
    pub fn ty(&self, t: ScalarType) -> Type<'c> {
        scalar_type(self.ctx, t)
    }

    /// `i<bits>`.
    pub fn int_ty(&self, bits: u32) -> Type<'c> {
        IntegerType::new(self.ctx, bits).into()
    }

    /// `!llvm.ptr<space>` (1 global, 3 shared).
    pub fn ptr_ty(&self, space: u32) -> Type<'c> {
        llvm::r#type::pointer(self.ctx, space)
    }

    /// Sets the location of the ops written next (the tile op being lowered).
    pub fn at(&mut self, loc: &TileLocation) {
        self.loc = if loc.line == 0 {
            Location::unknown(self.ctx)
        } else {
            Location::new(self.ctx, &loc.file, loc.line as usize, loc.col as usize)
        };
    }

    /// Appends `op` to the current block and returns its results.
    pub fn push(&mut self, op: Result<Operation<'c>, melior::Error>) -> Vec<Value<'c, 'm>> {
        match op {
            Ok(op) => {
                let r = self.block.append_operation(op);
                r.results().map(Into::into).collect()
            }
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
                vec![]
            }
        }
    }

    /// A generic op with operands, result types and attributes; its first result.
    pub fn op(
        &mut self,
        name: &str,
        operands: &[Value<'c, 'm>],
        results: &[Type<'c>],
        attrs: &[(&str, Attribute<'c>)],
    ) -> Option<Value<'c, 'm>> {
        let attrs: Vec<(Identifier<'c>, Attribute<'c>)> = attrs
            .iter()
            .map(|(n, a)| (Identifier::new(self.ctx, n), *a))
            .collect();
        let op = OperationBuilder::new(name, self.loc)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&attrs)
            .build();
        self.push(op).first().copied()
    }

    /// Like [`Self::op`] for ops with exactly one result (a placeholder constant when the
    /// build failed; the recorded error fails the lowering).
    pub fn op1(
        &mut self,
        name: &str,
        operands: &[Value<'c, 'm>],
        result: Type<'c>,
        attrs: &[(&str, Attribute<'c>)],
    ) -> Value<'c, 'm> {
        match self.op(name, operands, &[result], attrs) {
            Some(v) => v,
            None => self.poison(result),
        }
    }

    fn poison(&mut self, t: Type<'c>) -> Value<'c, 'm> {
        let op = llvm::poison(t, self.loc);
        self.block.append_operation(op).result(0).unwrap().into()
    }

    /// An attribute the dialect has no typed builder for, from its text (`#nvvm<shfl_kind
    /// bfly>`); a writer bug if it does not parse.
    pub fn attr(&mut self, text: &str) -> Attribute<'c> {
        Attribute::parse(self.ctx, text).unwrap_or_else(|| {
            self.error
                .get_or_insert_with(|| format!("attribute '{text}' does not parse"));
            Attribute::unit(self.ctx)
        })
    }

    /// An `i64` attribute.
    pub fn i64_attr(&self, v: i64) -> Attribute<'c> {
        IntegerAttribute::new(self.int_ty(64), v).into()
    }

    // ---- constants -------------------------------------------------------------------

    /// An integer constant of type `t`.
    pub fn int(&mut self, v: i64, t: ScalarType) -> V<'c, 'm> {
        let ty = self.ty(t);
        let a = IntegerAttribute::new(ty, v).into();
        V {
            v: self.op1("llvm.mlir.constant", &[], ty, &[("value", a)]),
            t,
        }
    }

    /// An `i32` constant.
    pub fn i32(&mut self, v: i64) -> V<'c, 'm> {
        self.int(v, ScalarType::I32)
    }

    /// An `i64` constant.
    pub fn i64(&mut self, v: i64) -> V<'c, 'm> {
        self.int(v, ScalarType::I64)
    }

    /// A float constant of type `t`.
    pub fn float(&mut self, v: f64, t: ScalarType) -> V<'c, 'm> {
        let ty = self.ty(t);
        let a = FloatAttribute::new(self.ctx, ty, v).into();
        V {
            v: self.op1("llvm.mlir.constant", &[], ty, &[("value", a)]),
            t,
        }
    }

    // ---- arithmetic ------------------------------------------------------------------

    /// A binary `llvm.<name>` whose result has the operands' type.
    pub fn bin(&mut self, name: &str, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        let ty = self.ty(a.t);
        V {
            v: self.op1(&format!("llvm.{name}"), &[a.v, b.v], ty, &[]),
            t: a.t,
        }
    }

    /// `a + b` (wrapping).
    pub fn add(&mut self, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        self.bin("add", a, b)
    }

    /// `llvm.intr.assume(c)`: a fact the caller guarantees (LLVM may rely on it, so a false
    /// one is undefined behaviour).
    pub fn assume(&mut self, c: V<'c, 'm>) {
        let no_bundles = DenseI32ArrayAttribute::new(self.ctx, &[]).into();
        self.op(
            "llvm.intr.assume",
            &[c.v],
            &[],
            &[("op_bundle_sizes", no_bundles)],
        );
    }

    /// The back-edge test of a counted loop with a positive `step` (`index` bounds):
    /// `next < ub` and `iv < next` for the wrapping `next = iv + step`, which holds exactly
    /// when `iv + step < ub` without overflow (the interpreter's `tile.for` stops where
    /// `iv + step` overflows). LLVM folds `iv < next` to a compare with a constant for a
    /// constant step, and shares `next < ub` with the body's own `iv + step < ub`.
    pub fn loop_continues(&mut self, iv: V<'c, 'm>, next: V<'c, 'm>, ub: V<'c, 'm>) -> V<'c, 'm> {
        let below = self.icmp(ICmp::Slt, next, ub);
        let no_wrap = self.icmp(ICmp::Slt, iv, next);
        self.and(below, no_wrap)
    }

    /// `trap` (`llvm.intr.trap`, PTX `trap`: the launch fails) unless `step > 0` (a
    /// `tile.for` step, which the interpreter refuses at or below 0); writing goes on in a
    /// new block where it holds.
    pub fn trap_unless_positive(&mut self, step: V<'c, 'm>) {
        let zero = self.int(0, step.t);
        let ok = self.icmp(ICmp::Sgt, step, zero);
        let cont = self.new_block(&[]);
        let fail = self.new_block(&[]);
        self.cond_br(ok, &cont, &[], &fail, &[]);
        self.block = fail;
        self.op("llvm.intr.trap", &[], &[], &[]);
        self.push(OperationBuilder::new("llvm.unreachable", self.loc).build());
        self.block = cont;
    }

    /// `a * b` (wrapping).
    pub fn mul(&mut self, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        self.bin("mul", a, b)
    }

    /// `a + c` for a constant `c` (`a` itself for 0).
    pub fn add_const(&mut self, a: V<'c, 'm>, c: i64) -> V<'c, 'm> {
        if c == 0 {
            return a;
        }
        let c = self.int(c, a.t);
        self.add(a, c)
    }

    /// `a ^ c` for a constant `c` (`a` itself for 0).
    pub fn xor_const(&mut self, a: V<'c, 'm>, c: i64) -> V<'c, 'm> {
        if c == 0 {
            return a;
        }
        let c = self.int(c, a.t);
        self.bin("xor", a, c)
    }

    /// `(a >> shift) & 1`, as `a`'s type.
    pub fn bit(&mut self, a: V<'c, 'm>, shift: u32) -> V<'c, 'm> {
        let s = self.int(i64::from(shift), a.t);
        let x = self.bin("lshr", a, s);
        let one = self.int(1, a.t);
        self.bin("and", x, one)
    }

    /// An integer comparison giving `i1`.
    pub fn icmp(&mut self, p: ICmp, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        let pred = self.i64_attr(p as i64);
        let ty = self.ty(ScalarType::I1);
        V {
            v: self.op1("llvm.icmp", &[a.v, b.v], ty, &[("predicate", pred)]),
            t: ScalarType::I1,
        }
    }

    /// A float comparison giving `i1`: `pred` is one of MLIR's `FCmpPredicate` names
    /// (`oeq`, `ogt`, `oge`, `olt`, `ole`, `one`, `ord`, `uno`).
    pub fn fcmp(&mut self, pred: &str, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        let p = match pred {
            "oeq" => 1,
            "ogt" => 2,
            "oge" => 3,
            "olt" => 4,
            "ole" => 5,
            "one" => 6,
            "ord" => 7,
            _ => 14,
        };
        let pred = self.i64_attr(p);
        let ty = self.ty(ScalarType::I1);
        V {
            v: self.op1("llvm.fcmp", &[a.v, b.v], ty, &[("predicate", pred)]),
            t: ScalarType::I1,
        }
    }

    /// `c ? a : b`.
    pub fn select(&mut self, c: V<'c, 'm>, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        let ty = self.ty(a.t);
        V {
            v: self.op1("llvm.select", &[c.v, a.v, b.v], ty, &[]),
            t: a.t,
        }
    }

    /// `a && b` on `i1`.
    pub fn and(&mut self, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        self.bin("and", a, b)
    }

    /// Widen or narrow an integer to `t` (sign-extending; `i1` zero-extends).
    pub fn int_cast(&mut self, a: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        let bits = |t: ScalarType| match t {
            ScalarType::I1 => 1,
            ScalarType::I32 => 32,
            _ => 64,
        };
        let (from, to) = (bits(a.t), bits(t));
        let ty = self.ty(t);
        let name = match from.cmp(&to) {
            std::cmp::Ordering::Equal => return V { v: a.v, t },
            std::cmp::Ordering::Less if a.t == ScalarType::I1 => "llvm.zext",
            std::cmp::Ordering::Less => "llvm.sext",
            std::cmp::Ordering::Greater => "llvm.trunc",
        };
        V {
            v: self.op1(name, &[a.v], ty, &[]),
            t,
        }
    }

    /// `a` converted to `t` as the reference interpreter converts (`tilec_dialect::interp`):
    /// - float to float: exactly to f32 (`fpext`), then rounded to nearest even once
    ///   (`fptrunc`);
    /// - integer to float: one rounding (`sitofp`; `uitofp` from `i1`);
    /// - integer to integer: `trunc`, `sext`, or `zext` from `i1` (`i64` and `index` alike);
    /// - float to integer: toward zero, saturating at the type's range, NaN to 0
    ///   (PTX `cvt.rzi`); to `i1`: `x ≥ 1`.
    pub fn convert(&mut self, a: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        let same = |x: ScalarType, y: ScalarType| {
            x == y
                || matches!(
                    (x, y),
                    (
                        ScalarType::I64 | ScalarType::Index,
                        ScalarType::I64 | ScalarType::Index
                    )
                )
        };
        if same(a.t, t) {
            return V { v: a.v, t };
        }
        let ty = self.ty(t);
        match (a.t.is_float(), t.is_float()) {
            (true, true) => {
                let f = self.fpext_f32(a);
                self.fptrunc_to(f, t)
            }
            (false, true) => {
                let name = if a.t == ScalarType::I1 {
                    "llvm.uitofp"
                } else {
                    "llvm.sitofp"
                };
                V {
                    v: self.op1(name, &[a.v], ty, &[]),
                    t,
                }
            }
            (false, false) => self.int_cast(a, t),
            (true, false) => {
                let f = self.fpext_f32(a);
                if t == ScalarType::I1 {
                    let one = self.float(1.0, ScalarType::F32);
                    return self.fcmp("oge", f, one);
                }
                // Inline asm: LLVM's `fptosi` is poison out of range, and MLIR 22 fails to
                // translate `llvm.intr.fptosi.sat` ("LLVM Translation failed"). PTX's
                // `cvt.rzi` clamps to the destination range and gives 0 for NaN.
                let (asm, c) = if t == ScalarType::I32 {
                    ("cvt.rzi.s32.f32 $0, $1;", "=r,f")
                } else {
                    ("cvt.rzi.s64.f32 $0, $1;", "=l,f")
                };
                let v = self
                    .inline_asm(asm, c, &[f.v], Some(ty), false)
                    .expect("a typed result");
                V { v, t }
            }
        }
    }

    /// The coordinate (one i32 per dimension) that the thread with lane `lane` and warp
    /// `warp` (i32) holds in `layout` before its register's part: the XOR of the bases of
    /// the lane and warp bits set ([`Self::thread_dim_coord`] per dimension).
    pub fn thread_coord(
        &mut self,
        layout: &LinearLayout,
        lane: V<'c, 'm>,
        warp: V<'c, 'm>,
    ) -> Vec<V<'c, 'm>> {
        (0..layout.rank())
            .map(|d| {
                let bases = thread_dim_bases(layout, d);
                self.thread_dim_coord(&bases, lane, warp)
            })
            .collect()
    }

    /// One dimension's part of [`Self::thread_coord`], from that dimension's component of
    /// each lane and warp basis (`bases.0`, `bases.1`; [`thread_dim_bases`]). Where the
    /// bases are distinct powers of two (blocked and MMA layouts), their XOR is an OR of
    /// bit fields, one `lshr`/`and`/`shl` per run of index bits that maps to a run of
    /// coordinate bits; else the XOR of each set bit's basis.
    pub fn thread_dim_coord(
        &mut self,
        bases: &(Vec<u64>, Vec<u64>),
        lane: V<'c, 'm>,
        warp: V<'c, 'm>,
    ) -> V<'c, 'm> {
        let all = bases.0.iter().chain(&bases.1).filter(|&&b| b != 0);
        let (mut union, mut fields) = (0u64, true);
        for &b in all {
            fields &= b.is_power_of_two() && union & b == 0;
            union |= b;
        }
        let mut acc: Option<V<'c, 'm>> = None;
        let mut join = |w: &mut Self, name: &str, x: V<'c, 'm>| {
            acc = Some(match acc {
                Some(a) => w.bin(name, a, x),
                None => x,
            });
        };
        for (index, bs) in [(lane, &bases.0), (warp, &bases.1)] {
            let mut bit = 0;
            while bit < bs.len() {
                let b = bs[bit];
                if b == 0 {
                    bit += 1;
                    continue;
                }
                if !fields {
                    let on = self.bit(index, bit as u32);
                    let k = self.i32(b as i64);
                    let term = self.mul(on, k);
                    join(self, "xor", term);
                    bit += 1;
                    continue;
                }
                // A run of index bits whose bases double from `b`.
                let mut len = 1;
                while bit + len < bs.len() && bs[bit + len] == b << len {
                    len += 1;
                }
                let mut x = index;
                if bit > 0 {
                    let s = self.i32(bit as i64);
                    x = self.bin("lshr", x, s);
                }
                let mask = self.i32((1i64 << len) - 1);
                x = self.bin("and", x, mask);
                if b > 1 {
                    let s = self.i32(i64::from(b.trailing_zeros()));
                    x = self.bin("shl", x, s);
                }
                join(self, "or", x);
                bit += len;
            }
        }
        acc.unwrap_or_else(|| self.i32(0))
    }

    /// A float op on f32 values: `llvm.fadd` and the like, or an `llvm.intr.*`.
    pub fn fop(&mut self, name: &str, args: &[V<'c, 'm>]) -> V<'c, 'm> {
        let ty = self.ty(ScalarType::F32);
        let vs: Vec<Value<'c, 'm>> = args.iter().map(|a| a.v).collect();
        let attrs = match self.contract {
            Some(c) if matches!(name, "llvm.fadd" | "llvm.fsub" | "llvm.fmul") => {
                vec![("fastmathFlags", c)]
            }
            _ => vec![],
        };
        V {
            v: self.op1(name, &vs, ty, &attrs),
            t: ScalarType::F32,
        }
    }

    /// A float value as f32 (`llvm.fpext` from f16/bf16).
    pub fn fpext_f32(&mut self, a: V<'c, 'm>) -> V<'c, 'm> {
        if a.t == ScalarType::F32 {
            return a;
        }
        let ty = self.ty(ScalarType::F32);
        V {
            v: self.op1("llvm.fpext", &[a.v], ty, &[]),
            t: ScalarType::F32,
        }
    }

    /// An f32 value rounded to `t` (`llvm.fptrunc`: round to nearest even).
    pub fn fptrunc_to(&mut self, a: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        if t == ScalarType::F32 {
            return a;
        }
        let ty = self.ty(t);
        V {
            v: self.op1("llvm.fptrunc", &[a.v], ty, &[]),
            t,
        }
    }

    /// `llvm.zext` of an integer to `t`.
    pub fn zext(&mut self, a: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        let ty = self.ty(t);
        V {
            v: self.op1("llvm.zext", &[a.v], ty, &[]),
            t,
        }
    }

    /// `llvm.trunc` of an integer to `t`.
    pub fn trunc(&mut self, a: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        let ty = self.ty(t);
        V {
            v: self.op1("llvm.trunc", &[a.v], ty, &[]),
            t,
        }
    }

    /// A one-operand cast op (`llvm.bitcast`, `llvm.ptrtoint`, `llvm.inttoptr`,
    /// `llvm.addrspacecast`, ...) to `ty`.
    pub fn cast(&mut self, name: &str, a: Value<'c, 'm>, ty: Type<'c>) -> Value<'c, 'm> {
        self.op1(name, &[a], ty, &[])
    }

    // ---- aggregates and vectors -------------------------------------------------------

    /// `!llvm.struct<(ts...)>`.
    pub fn struct_ty(&self, ts: &[Type<'c>]) -> Type<'c> {
        llvm::r#type::r#struct(self.ctx, ts, false)
    }

    /// `vector<n x elem>`.
    pub fn vector_ty(&self, n: u64, elem: Type<'c>) -> Type<'c> {
        Type::vector(&[n], elem)
    }

    /// `llvm.mlir.undef : ty`.
    pub fn undef(&mut self, ty: Type<'c>) -> Value<'c, 'm> {
        let op = llvm::undef(ty, self.loc);
        match self.push(Ok(op)).first() {
            Some(v) => *v,
            None => self.poison(ty),
        }
    }

    /// `llvm.extractvalue agg[i]` of type `ty`.
    pub fn extract(&mut self, agg: Value<'c, 'm>, i: usize, ty: Type<'c>) -> Value<'c, 'm> {
        let pos = DenseI64ArrayAttribute::new(self.ctx, &[i as i64]).into();
        self.op1("llvm.extractvalue", &[agg], ty, &[("position", pos)])
    }

    /// Every field of the struct `agg` (`n` fields of type `ty`), extracted in the block
    /// that defines `agg`: right after its defining op, or at the start of the block whose
    /// argument it is, whatever block the writer is in.
    ///
    /// An aggregate used in another block lives in one virtual register per field, and
    /// LLVM's instruction selection copies all of them for each `extractvalue` there
    /// (`SelectionDAGBuilder::getCopyFromRegs`): n fields read in a block would cost n²
    /// copies. Extracted where they are defined, the fields cross blocks one register each.
    pub fn unpack(&mut self, agg: Value<'c, 'm>, n: usize, ty: Type<'c>) -> Vec<Value<'c, 'm>> {
        use melior::ir::{block::BlockArgument, operation::OperationResult};
        let (block, mut after): (BlockRef<'c, 'm>, Option<melior::ir::OperationRef<'c, 'm>>) =
            if let Ok(r) = OperationResult::try_from(agg) {
                let owner = r.owner();
                match owner.block() {
                    Some(b) => (b, Some(owner)),
                    None => return (0..n).map(|i| self.extract(agg, i, ty)).collect(),
                }
            } else if let Ok(a) = BlockArgument::try_from(agg) {
                // SAFETY: the argument's block belongs to the function being written, which
                // lives as long as the module ('m).
                let b =
                    unsafe { BlockRef::from_raw(mlir_sys::mlirBlockArgumentGetOwner(a.to_raw())) };
                (b, None)
            } else {
                return (0..n).map(|i| self.extract(agg, i, ty)).collect();
            };
        let position = Identifier::new(self.ctx, "position");
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let pos = DenseI64ArrayAttribute::new(self.ctx, &[i as i64]).into();
            let op = match OperationBuilder::new("llvm.extractvalue", self.loc)
                .add_operands(&[agg])
                .add_results(&[ty])
                .add_attributes(&[(position, pos)])
                .build()
            {
                Ok(op) => op,
                Err(e) => {
                    self.error
                        .get_or_insert_with(|| format!("llvm.extractvalue: {e}"));
                    out.push(self.poison(ty));
                    continue;
                }
            };
            let placed = match after {
                Some(a) => block.insert_operation_after(a, op),
                None => block.insert_operation(0, op),
            };
            after = Some(placed);
            out.push(
                placed
                    .result(0)
                    .expect("extractvalue has one result")
                    .into(),
            );
        }
        out
    }

    /// `llvm.insertelement x, vec[i]` (an i32 index).
    pub fn insert_element(
        &mut self,
        vec: Value<'c, 'm>,
        x: Value<'c, 'm>,
        i: V<'c, 'm>,
    ) -> Value<'c, 'm> {
        let ty = vec.r#type();
        self.op1("llvm.insertelement", &[vec, x, i.v], ty, &[])
    }

    /// Stores `vals` (one element type, `esize` bytes each) at `ptr` as one access: a scalar
    /// store for one value, else a vector of them (aligned to the whole vector).
    pub fn store_run(&mut self, vals: &[Value<'c, 'm>], ptr: Value<'c, 'm>, esize: u64) {
        if let [x] = vals {
            self.store(*x, ptr, esize);
            return;
        }
        let vt = self.vector_ty(vals.len() as u64, vals[0].r#type());
        let mut v = self.undef(vt);
        for (i, &x) in vals.iter().enumerate() {
            let idx = self.i32(i as i64);
            v = self.insert_element(v, x, idx);
        }
        self.store(v, ptr, esize * vals.len() as u64);
    }

    /// `llvm.extractelement vec[i]` (an i32 index) of element type `ty`.
    pub fn extract_element(
        &mut self,
        vec: Value<'c, 'm>,
        i: V<'c, 'm>,
        ty: Type<'c>,
    ) -> Value<'c, 'm> {
        self.op1("llvm.extractelement", &[vec, i.v], ty, &[])
    }

    /// `&base[index]` for a constant `index` of elements of type `elem`.
    pub fn gep_const(
        &mut self,
        base: Value<'c, 'm>,
        index: i64,
        elem: Type<'c>,
        ptr: Type<'c>,
    ) -> Value<'c, 'm> {
        let raw = DenseI32ArrayAttribute::new(self.ctx, &[index as i32]).into();
        let et = TypeAttribute::new(elem).into();
        self.op1(
            "llvm.getelementptr",
            &[base],
            ptr,
            &[("rawConstantIndices", raw), ("elem_type", et)],
        )
    }

    /// `llvm.inline_asm` (AT&T dialect) of PTX `asm` with LLVM constraint string
    /// `constraints`; its result of type `result`, if any. `side_effects` keeps LLVM from
    /// moving, merging or deleting it.
    pub fn inline_asm(
        &mut self,
        asm: &str,
        constraints: &str,
        operands: &[Value<'c, 'm>],
        result: Option<Type<'c>>,
        side_effects: bool,
    ) -> Option<Value<'c, 'm>> {
        let mut attrs = vec![
            ("asm_string", StringAttribute::new(self.ctx, asm).into()),
            (
                "constraints",
                StringAttribute::new(self.ctx, constraints).into(),
            ),
            ("asm_dialect", self.i64_attr(0)),
        ];
        if side_effects {
            attrs.push(("has_side_effects", Attribute::unit(self.ctx)));
        }
        let results: Vec<Type<'c>> = result.into_iter().collect();
        let v = self.op("llvm.inline_asm", operands, &results, &attrs);
        match (v, result) {
            (None, Some(t)) => Some(self.poison(t)),
            (v, _) => v,
        }
    }

    // ---- special registers, shared memory, synchronisation ---------------------------

    /// `nvvm.read.ptx.sreg.<name>` as i32 (`tid.x`, `ctaid.y`, `nctaid.z`, ...).
    pub fn sreg(&mut self, name: &str) -> V<'c, 'm> {
        let ty = self.ty(ScalarType::I32);
        V {
            v: self.op1(&format!("nvvm.read.ptx.sreg.{name}"), &[], ty, &[]),
            t: ScalarType::I32,
        }
    }

    /// `%tid.x` read by an asm statement with side effects (i32): LLVM neither hoists nor
    /// merges it, so what is computed from it lives only from here.
    pub fn opaque_tid(&mut self) -> V<'c, 'm> {
        let i32t = self.ty(ScalarType::I32);
        let tid = self
            .inline_asm("mov.u32 $0, %tid.x;", "=r", &[], Some(i32t), true)
            .expect("a result type was given");
        V {
            v: tid,
            t: ScalarType::I32,
        }
    }

    /// The 14-bit start-address field of a wgmma matrix descriptor, as i64: PTX ISA
    /// §9.7.15.5.1's `matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4` of the shared-memory
    /// address `addr` (i32, bytes). The mask matters in a cluster launch, where a CTA's
    /// shared addresses may carry bits above the 18 the field encodes; unmasked they would
    /// spill into the leading-byte-offset field.
    pub fn desc_start(&mut self, addr: V<'c, 'm>) -> V<'c, 'm> {
        let mask = self.i32(0x3FFFF);
        let low = self.bin("and", addr, mask);
        let c4 = self.i32(4);
        let enc = self.bin("lshr", low, c4);
        self.zext(enc, ScalarType::I64)
    }

    /// The address of byte `offset` (i32) of the dynamic shared memory.
    pub fn smem_addr(&mut self, offset: V<'c, 'm>) -> Value<'c, 'm> {
        let p3 = self.ptr_ty(3);
        let sym = FlatSymbolRefAttribute::new(self.ctx, "dynamic_smem").into();
        let base = self.op1("llvm.mlir.addressof", &[], p3, &[("global_name", sym)]);
        self.gep_bytes(base, offset, p3)
    }

    /// `base + offset` bytes.
    pub fn gep_bytes(
        &mut self,
        base: Value<'c, 'm>,
        offset: V<'c, 'm>,
        ptr: Type<'c>,
    ) -> Value<'c, 'm> {
        let i8t = self.int_ty(8);
        self.gep(base, offset, i8t, ptr)
    }

    /// `&base[index]` for elements of type `elem`.
    pub fn gep(
        &mut self,
        base: Value<'c, 'm>,
        index: V<'c, 'm>,
        elem: Type<'c>,
        ptr: Type<'c>,
    ) -> Value<'c, 'm> {
        let raw = DenseI32ArrayAttribute::new(self.ctx, &[i32::MIN]).into();
        let et = TypeAttribute::new(elem).into();
        self.op1(
            "llvm.getelementptr",
            &[base, index.v],
            ptr,
            &[("rawConstantIndices", raw), ("elem_type", et)],
        )
    }

    /// `llvm.load` of `ty` with alignment `align` bytes.
    pub fn load(&mut self, ptr: Value<'c, 'm>, ty: Type<'c>, align: u64) -> Value<'c, 'm> {
        let opts = LoadStoreOptions::new()
            .align(Some(IntegerAttribute::new(self.int_ty(64), align as i64)));
        let op = llvm::load(self.ctx, ptr, ty, self.loc, opts);
        match self.push(Ok(op)).first() {
            Some(v) => *v,
            None => self.poison(ty),
        }
    }

    /// One element of a global tensor (`tile.extract`): at `base + Σ indexᵢ · strideᵢ`
    /// elements, read only when every index is below its size (unsigned, so a negative
    /// index fails too); zero otherwise. `sizes` and `strides` are i64 (elements); the
    /// indices any integer type. A predicated load ([`Self::predicated_load`]), ordered
    /// with the program's other memory accesses.
    pub fn load_element(
        &mut self,
        base: Value<'c, 'm>,
        sizes: &[V<'c, 'm>],
        strides: &[V<'c, 'm>],
        indices: &[V<'c, 'm>],
        elem: ScalarType,
    ) -> V<'c, 'm> {
        let mut inside = self.int(1, ScalarType::I1);
        let mut index = self.i64(0);
        for ((&i, &size), &stride) in indices.iter().zip(sizes).zip(strides) {
            let i = self.int_cast(i, ScalarType::I64);
            let ok = self.icmp(ICmp::Ult, i, size);
            inside = self.and(inside, ok);
            let o = self.mul(i, stride);
            index = self.add(index, o);
        }
        let eb = self.i64(elem.size_bytes() as i64);
        let off = self.mul(index, eb);
        let i64t = self.ty(ScalarType::I64);
        let b = V {
            v: self.cast("llvm.ptrtoint", base, i64t),
            t: ScalarType::I64,
        };
        let addr = self.add(b, off);
        let ok = self.zext(inside, ScalarType::I32);
        self.predicated_load(addr, ok, elem, true)
    }

    /// A load of one `elem` at global address `addr` (i64) where `ok` (an i32) is not 0,
    /// else zero, touching no memory then: inline asm (`@p ld.global`), because LLVM has no
    /// predicated load and a branch per load costs its back end time that grows faster
    /// than the loads. With `ordered`, the asm has side effects, so LLVM neither moves it
    /// across the program's stores nor merges two of them; without, it may hoist it (an
    /// epilogue's loads of inputs the kernel does not write). 8-bit elements (fp8, the
    /// bytes of an i1 tensor) are read as `u8`.
    pub fn predicated_load(
        &mut self,
        addr: V<'c, 'm>,
        ok: V<'c, 'm>,
        elem: ScalarType,
        ordered: bool,
    ) -> V<'c, 'm> {
        let at = AsmElement {
            base: addr,
            terms: vec![],
            bounds: vec![],
        };
        self.predicated_load_at(&at, ok, elem, ordered, 0)
    }

    /// [`Self::predicated_load`] of an [`AsmElement`], giving the bits `pad` (of `elem`,
    /// [`ScalarType::exact_bits`]) where it is not read.
    pub fn predicated_load_at(
        &mut self,
        at: &AsmElement<'c, 'm>,
        ok: V<'c, 'm>,
        elem: ScalarType,
        ordered: bool,
        pad: u64,
    ) -> V<'c, 'm> {
        let (ld, reg, bits) = global_access(elem);
        let mut ops = AsmOperands::new(&[&format!("={reg}")]);
        let base = ops.input("l", at.base.v);
        let ok_ref = ops.input("r", ok.v);
        let (decl, guard, addr) = at.asm(&base, &mut ops);
        let pad = match pad {
            0 => "0".to_string(),
            _ => format!("{pad:#x}"),
        };
        let asm = format!(
            "{{ .reg .pred p;{decl} setp.ne.u32 p, {ok_ref}, 0;{guard} mov.b{bits} $0, {pad}; \
             @p ld.global.{ld} $0, [{addr}]; }}"
        );
        let rt = if reg == "f" {
            self.ty(ScalarType::F32)
        } else {
            self.int_ty(bits)
        };
        let x = self.inline_asm(&asm, &ops.constraints(), &ops.values, Some(rt), ordered);
        let x = x.unwrap_or_else(|| self.poison(rt));
        let et = self.ty(elem);
        let v = match elem {
            ScalarType::F32 | ScalarType::I32 | ScalarType::I64 | ScalarType::Index => x,
            ScalarType::F16 | ScalarType::BF16 => self.cast("llvm.bitcast", x, et),
            ScalarType::I1 => self.cast("llvm.trunc", x, et),
            ScalarType::E4M3 | ScalarType::E5M2 => {
                let i8t = self.int_ty(8);
                let b = self.cast("llvm.trunc", x, i8t);
                self.cast("llvm.bitcast", b, et)
            }
        };
        V { v, t: elem }
    }

    /// A load of `words` adjacent 32-bit words (1, 2 or 4: 4, 8 or 16 bytes, aligned to
    /// that) at `at` where `ok` (an i32) is not 0, else `pad` in each word, touching no
    /// memory then: one `@p ld.global.v{2,4}.b32` (PTX ISA, "ld"), ordered with the
    /// program's other accesses as [`Self::predicated_load`] with `ordered`. Returns a
    /// `vector<words x i32>`.
    pub fn predicated_load_words(
        &mut self,
        at: &AsmElement<'c, 'm>,
        ok: V<'c, 'm>,
        words: u64,
        pad: u32,
    ) -> Value<'c, 'm> {
        debug_assert!(matches!(words, 1 | 2 | 4));
        let outs = vec!["=r"; words as usize];
        let mut ops = AsmOperands::new(&outs);
        let base = ops.input("l", at.base.v);
        let ok_ref = ops.input("r", ok.v);
        let (decl, guard, addr) = at.asm(&base, &mut ops);
        let regs: Vec<String> = (0..words).map(|k| format!("${k}")).collect();
        let movs: String = regs
            .iter()
            .map(|r| format!(" mov.b32 {r}, {pad:#x};"))
            .collect();
        let ld = match words {
            1 => format!("ld.global.b32 {}", regs[0]),
            n => format!("ld.global.v{n}.b32 {{{}}}", regs.join(", ")),
        };
        let asm = format!(
            "{{ .reg .pred p;{decl} setp.ne.u32 p, {ok_ref}, 0;{guard}{movs} @p {ld}, [{addr}]; }}"
        );
        self.words_result(&asm, &ops, words)
    }

    /// Loads of one vector's elements (`at`, adjacent registers of 8, 16 or 32 bits whose
    /// bytes are a multiple of 4), each where `ok` (an i32) is not 0 and its own bounds
    /// hold, else the padding bits `pad` (of `elem`); `None` is an element never read,
    /// which gets the padding too. One asm for the vector: a predicated `ld.global` per
    /// element, packed into 32-bit words (`mov.b32 {lo, hi}` of 16-bit elements, `bfi.b32`
    /// of bytes), so that LLVM sees one statement per vector rather than one per element.
    /// Ordered with the program's other accesses. Returns a `vector<words x i32>`.
    pub fn predicated_load_packed(
        &mut self,
        at: &[Option<AsmElement<'c, 'm>>],
        ok: V<'c, 'm>,
        elem: ScalarType,
        pad: u64,
    ) -> Value<'c, 'm> {
        let bits = elem.size_bytes() as usize * 8;
        debug_assert!(matches!(bits, 8 | 16 | 32) && (at.len() * bits).is_multiple_of(32));
        let words = at.len() * bits / 32;
        let outs = vec!["=r"; words];
        let mut ops = AsmOperands::new(&outs);
        let ok_ref = ops.input("r", ok.v);
        let (temps, ld) = match bits {
            32 => (String::new(), "b32"),
            16 => (format!(" .reg .b16 e<{}>;", at.len()), "b16"),
            _ => (format!(" .reg .b32 e<{}>;", at.len()), "u8"),
        };
        let mut body = format!("{{ .reg .pred p; .reg .b64 a;{temps}");
        for (j, el) in at.iter().enumerate() {
            let dst = match bits {
                32 => format!("${j}"),
                _ => format!("e{j}"),
            };
            let mov = if bits == 16 { 16 } else { 32 };
            body += &format!(" mov.b{mov} {dst}, {pad:#x};");
            let Some(el) = el else {
                continue;
            };
            let base = ops.input("l", el.base.v);
            let (_, guard, addr) = el.asm(&base, &mut ops);
            body +=
                &format!(" setp.ne.u32 p, {ok_ref}, 0;{guard} @p ld.global.{ld} {dst}, [{addr}];");
        }
        for w in 0..words {
            body += &match bits {
                32 => String::new(),
                16 => format!(" mov.b32 ${w}, {{e{}, e{}}};", 2 * w, 2 * w + 1),
                _ => {
                    let e = 4 * w;
                    let mut p = format!(" mov.b32 ${w}, e{e};");
                    for b in 1..4 {
                        p += &format!(" bfi.b32 ${w}, e{}, ${w}, {}, 8;", e + b, 8 * b);
                    }
                    p
                }
            };
        }
        body += " }";
        self.words_result(&body, &ops, words as u64)
    }

    /// The `words` 32-bit outputs of the inline asm `asm` (operands `ops`, side effects)
    /// as a `vector<words x i32>`.
    fn words_result(&mut self, asm: &str, ops: &AsmOperands<'c, 'm>, words: u64) -> Value<'c, 'm> {
        let i32t = self.int_ty(32);
        let rt = match words {
            1 => i32t,
            _ => self.struct_ty(&vec![i32t; words as usize]),
        };
        let x = self.inline_asm(asm, &ops.constraints(), &ops.values, Some(rt), true);
        let x = x.unwrap_or_else(|| self.poison(rt));
        let wty = self.vector_ty(words, i32t);
        let mut v = self.undef(wty);
        let parts = match words {
            1 => vec![x],
            _ => (0..words as usize)
                .map(|k| self.extract(x, k, i32t))
                .collect(),
        };
        for (k, p) in parts.into_iter().enumerate() {
            let kk = self.i32(k as i64);
            v = self.insert_element(v, p, kk);
        }
        v
    }

    /// A store of the elements `xs` (one, or a vector of adjacent ones whose bytes are 4, 8
    /// or 16, aligned to that) at `ptr` (global) where `ok` (i1) holds; nothing is
    /// touched otherwise. Inline asm (`@p st.global`), as [`Self::predicated_load`]:
    /// a vector as `st.global.v2/v4.b32` of its 32-bit words; 8-bit elements (fp8, i1) as
    /// `u8`. The asm has side effects, so it stays in order with the other accesses.
    pub fn predicated_store(&mut self, ptr: Value<'c, 'm>, ok: V<'c, 'm>, xs: &[V<'c, 'm>]) {
        let at = self.asm_element(ptr);
        self.predicated_store_at(&at, ok, xs);
    }

    /// The global pointer `ptr` as an [`AsmElement`] without terms or bounds.
    pub fn asm_element(&mut self, ptr: Value<'c, 'm>) -> AsmElement<'c, 'm> {
        let i64t = self.ty(ScalarType::I64);
        AsmElement {
            base: V {
                v: self.cast("llvm.ptrtoint", ptr, i64t),
                t: ScalarType::I64,
            },
            terms: vec![],
            bounds: vec![],
        }
    }

    /// [`Self::predicated_store`] of an [`AsmElement`].
    pub fn predicated_store_at(
        &mut self,
        at: &AsmElement<'c, 'm>,
        ok: V<'c, 'm>,
        xs: &[V<'c, 'm>],
    ) {
        let Some(elem) = xs.first().map(|x| x.t) else {
            return;
        };
        let ok = self.zext(ok, ScalarType::I32);
        let bytes = elem.size_bytes() * xs.len() as u64;
        debug_assert!(xs.len() == 1 || matches!(bytes, 4 | 8 | 16));
        let (ty, reg, vals): (&str, &str, Vec<Value<'c, 'm>>) = if xs.len() > 1 {
            // The vector's 32-bit words.
            let words = bytes / 4;
            let ety = self.ty(elem);
            let vty = self.vector_ty(xs.len() as u64, ety);
            let mut v = self.undef(vty);
            for (j, x) in xs.iter().enumerate() {
                let jj = self.i32(j as i64);
                v = self.insert_element(v, x.v, jj);
            }
            let i32t = self.int_ty(32);
            let wty = self.vector_ty(words, i32t);
            let w = self.cast("llvm.bitcast", v, wty);
            let vals = (0..words)
                .map(|k| {
                    let kk = self.i32(k as i64);
                    self.extract_element(w, kk, i32t)
                })
                .collect();
            ("b32", "r", vals)
        } else {
            let (ty, reg, _) = global_access(elem);
            (ty, reg, vec![self.store_operand(xs[0])])
        };
        let mut ops = AsmOperands::new(&[]);
        let base = ops.input("l", at.base.v);
        let ok_ref = ops.input("r", ok.v);
        let refs: Vec<String> = vals.iter().map(|&v| ops.input(reg, v)).collect();
        let (op, operands) = match refs.len() {
            1 => (format!("st.global.{ty}"), refs[0].clone()),
            n => (
                format!("st.global.v{n}.{ty}"),
                format!("{{{}}}", refs.join(", ")),
            ),
        };
        let (decl, guard, addr) = at.asm(&base, &mut ops);
        let asm = format!(
            "{{ .reg .pred p;{decl} setp.ne.u32 p, {ok_ref}, 0;{guard} @p {op} [{addr}], \
             {operands}; }}"
        );
        self.inline_asm(&asm, &ops.constraints(), &ops.values, None, true);
    }

    /// Stores of several elements `xs` (one type), each at its [`AsmElement`] where `ok`
    /// (i1) and its own bounds hold, in one asm: a predicated `st.global` per element (as
    /// [`Self::predicated_store`] gives one), so that LLVM sees one statement for them.
    /// `None` in `at` is an element not stored.
    pub fn predicated_store_group(
        &mut self,
        at: &[Option<AsmElement<'c, 'm>>],
        ok: V<'c, 'm>,
        xs: &[V<'c, 'm>],
    ) {
        let Some(elem) = xs.first().map(|x| x.t) else {
            return;
        };
        let ok = self.zext(ok, ScalarType::I32);
        let (ty, reg, _) = global_access(elem);
        let mut ops = AsmOperands::new(&[]);
        let ok_ref = ops.input("r", ok.v);
        let mut body = String::from("{ .reg .pred p; .reg .b64 a;");
        for (el, &x) in at.iter().zip(xs) {
            let Some(el) = el else {
                continue;
            };
            let v = self.store_operand(x);
            let x_ref = ops.input(reg, v);
            let base = ops.input("l", el.base.v);
            let (_, guard, addr) = el.asm(&base, &mut ops);
            body += &format!(
                " setp.ne.u32 p, {ok_ref}, 0;{guard} @p st.global.{ty} [{addr}], {x_ref};"
            );
        }
        body += " }";
        self.inline_asm(&body, &ops.constraints(), &ops.values, None, true);
    }

    /// One element as the register [`global_access`] stores it from: 16-bit floats as
    /// `i16`, 8-bit elements zero-extended to `i16`.
    fn store_operand(&mut self, x: V<'c, 'm>) -> Value<'c, 'm> {
        let i16t = self.int_ty(16);
        match x.t {
            ScalarType::F32 | ScalarType::I32 | ScalarType::I64 | ScalarType::Index => x.v,
            ScalarType::F16 | ScalarType::BF16 => self.cast("llvm.bitcast", x.v, i16t),
            ScalarType::I1 => self.cast("llvm.zext", x.v, i16t),
            ScalarType::E4M3 | ScalarType::E5M2 => {
                let i8t = self.int_ty(8);
                let b = self.cast("llvm.bitcast", x.v, i8t);
                self.cast("llvm.zext", b, i16t)
            }
        }
    }

    /// `red.global.add.f32` of `x` (f32) into the f32 at `at` where `ok` (i1) holds;
    /// nothing is touched otherwise. Inline asm, as [`Self::predicated_store`]: MLIR 22's
    /// `llvm.atomicrmw fadd` returns the old value (an `atom`), and is not predicated.
    pub fn predicated_red_add(&mut self, at: &AsmElement<'c, 'm>, ok: V<'c, 'm>, x: V<'c, 'm>) {
        let ok = self.zext(ok, ScalarType::I32);
        let mut ops = AsmOperands::new(&[]);
        let base = ops.input("l", at.base.v);
        let ok_ref = ops.input("r", ok.v);
        let x_ref = ops.input("f", x.v);
        let (decl, guard, addr) = at.asm(&base, &mut ops);
        let asm = format!(
            "{{ .reg .pred p;{decl} setp.ne.u32 p, {ok_ref}, 0;{guard} @p red.global.add.f32 \
             [{addr}], {x_ref}; }}"
        );
        self.inline_asm(&asm, &ops.constraints(), &ops.values, None, true);
    }

    /// `llvm.store` with alignment `align` bytes.
    pub fn store(&mut self, v: Value<'c, 'm>, ptr: Value<'c, 'm>, align: u64) {
        let opts = LoadStoreOptions::new()
            .align(Some(IntegerAttribute::new(self.int_ty(64), align as i64)));
        let op = llvm::store(self.ctx, v, ptr, self.loc, opts);
        self.push(Ok(op));
    }

    /// `llvm.load` of an i32 with acquire ordering at GPU scope (`syncscope("device")`):
    /// `ld.acquire.gpu.global.b32` on NVPTX (PTX ISA, "Memory Consistency Model").
    pub fn load_acquire_gpu(&mut self, ptr: Value<'c, 'm>) -> V<'c, 'm> {
        let t = self.ty(ScalarType::I32);
        let attrs = self.atomic_attrs(4);
        let v = self.op1("llvm.load", &[ptr], t, &attrs);
        V {
            v,
            t: ScalarType::I32,
        }
    }

    /// `llvm.store` of an i32 with release ordering at GPU scope:
    /// `st.release.gpu.global.b32` on NVPTX.
    pub fn store_release_gpu(&mut self, v: V<'c, 'm>, ptr: Value<'c, 'm>) {
        let attrs = self.atomic_attrs(5);
        self.op("llvm.store", &[v.v, ptr], &[], &attrs);
    }

    /// `llvm.atomicrmw add` of an i32, relaxed (`monotonic`) at GPU scope; the value before.
    /// NVPTX: `atom.global.add.u32` (relaxed, `.gpu` by default). Ordered by
    /// [`Self::fence_acq_rel_gpu`] around it: LLVM 22's NVPTX drops the ordering of an
    /// `acq_rel` atomicrmw, but lowers a device-scope fence to `fence.acq_rel.gpu`.
    pub fn atomic_add_gpu(&mut self, ptr: Value<'c, 'm>, v: V<'c, 'm>) -> V<'c, 'm> {
        let t = self.ty(ScalarType::I32);
        let [align, _, scope] = self.atomic_attrs(2);
        let attrs = [
            align,
            ("bin_op", self.i64_attr(1)),
            ("ordering", self.i64_attr(2)),
            scope,
        ];
        let r = self.op1("llvm.atomicrmw", &[ptr, v.v], t, &attrs);
        V {
            v: r,
            t: ScalarType::I32,
        }
    }

    /// `llvm.fence syncscope("device") acq_rel`: `fence.acq_rel.gpu` (PTX ISA, "membar /
    /// fence").
    pub fn fence_acq_rel_gpu(&mut self) {
        let attrs = [
            ("ordering", self.i64_attr(6)),
            ("syncscope", StringAttribute::new(self.ctx, "device").into()),
        ];
        self.op("llvm.fence", &[], &[], &attrs);
    }

    /// A 4-byte-aligned atomic access's attributes: `ordering` (LLVM's AtomicOrdering: 4
    /// acquire, 5 release) and `syncscope("device")`.
    fn atomic_attrs(&mut self, ordering: i64) -> [(&'static str, Attribute<'c>); 3] {
        [
            ("alignment", self.i64_attr(4)),
            ("ordering", self.i64_attr(ordering)),
            ("syncscope", StringAttribute::new(self.ctx, "device").into()),
        ]
    }

    /// The attributes of `nvvm.mma.sync` m16n8k`k` with a row-major A of PTX type `a`, a
    /// column-major B of type `b` and f32 C and D (four, two and four registers; PTX ISA,
    /// "Warp-level matrix multiply-accumulate instructions").
    pub fn mma_sync_attrs(
        &mut self,
        a: &str,
        b: &str,
        k: u64,
    ) -> [(&'static str, Attribute<'c>); 6] {
        [
            ("layoutA", self.attr("#nvvm.mma_layout<row>")),
            ("layoutB", self.attr("#nvvm.mma_layout<col>")),
            (
                "multiplicandAPtxType",
                self.attr(&format!("#nvvm.mma_type<{a}>")),
            ),
            (
                "multiplicandBPtxType",
                self.attr(&format!("#nvvm.mma_type<{b}>")),
            ),
            (
                "operandSegmentSizes",
                DenseI32ArrayAttribute::new(self.ctx, &[4, 2, 4]).into(),
            ),
            (
                "shape",
                self.attr(&format!("#nvvm.shape<m = 16, n = 8, k = {k}>")),
            ),
        ]
    }

    /// `bar.sync 0` over the CTA (`nvvm.barrier0`), or over the [`Writer::cta_threads`]
    /// (`bar.sync 0, threads`).
    pub fn barrier(&mut self) {
        match self.cta_threads {
            Some(n) => {
                let id = self.i32(0);
                self.named_barrier(id, n, false);
            }
            None => {
                self.op("nvvm.barrier0", &[], &[], &[]);
            }
        }
    }

    /// `llvm.return` from the kernel.
    pub fn ret(&mut self) {
        let r = llvm::r#return(None, self.loc);
        self.push(Ok(r));
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 count` (`nvvm.setmaxregister`; PTX ISA
    /// §9.7.19.5): `increase` or `decrease` this warpgroup's registers per thread to `count`.
    pub fn setmaxnreg(&mut self, increase: bool, count: u64) {
        let action = if increase { "increase" } else { "decrease" };
        let a = self.attr(&format!("#nvvm<action {action}>"));
        let n = IntegerAttribute::new(self.ty(ScalarType::I32), count as i64).into();
        self.op(
            "nvvm.setmaxregister",
            &[],
            &[],
            &[("action", a), ("regCount", n)],
        );
    }

    /// `bar.sync id, threads` (`nvvm.barrier`), or with `arrive`, `bar.arrive id, threads`
    /// (`nvvm.barrier.arrive`): PTX ISA §9.7.13.1. `id` is an `i32`.
    pub fn named_barrier(&mut self, id: V<'c, 'm>, threads: i64, arrive: bool) {
        let n = self.i32(threads);
        if arrive {
            self.op("nvvm.barrier.arrive", &[id.v, n.v], &[], &[]);
        } else {
            let segments = DenseI32ArrayAttribute::new(self.ctx, &[1, 1, 0]);
            self.op(
                "nvvm.barrier",
                &[id.v, n.v],
                &[],
                &[("operandSegmentSizes", segments.into())],
            );
        }
    }

    /// `fence.proxy.async.shared::cta` (PTX ISA, "membar/fence"): this thread's generic-proxy
    /// shared-memory accesses before later async-proxy ones (TMA, wgmma descriptors).
    pub fn fence_proxy_async(&mut self) {
        let kind = self.attr("#nvvm.proxy_kind<async.shared>");
        let space = self.attr("#nvvm.shared_space<cta>");
        self.op(
            "nvvm.fence.proxy",
            &[],
            &[],
            &[("kind", kind), ("space", space)],
        );
    }

    /// One TMA copy, `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::
    /// complete_tx::bytes` (PTX ISA §9.7.9.25.5.1): the box of tensor map `tmap` (a pointer to
    /// the `CUtensorMap` parameter) at `coords` (i32 element coordinates, innermost first, N
    /// of them) into shared memory at `dst` (an address-space-3 pointer), completing its bytes
    /// on the mbarrier at `bar`. With `multicast` (an i16 mask of cluster CTA ranks), the
    /// `.multicast::cluster` form: the box lands at the same offset in every CTA of the mask
    /// and completes on the barrier at the same offset in each.
    pub fn tma_load_box(
        &mut self,
        dst: Value<'c, 'm>,
        tmap: Value<'c, 'm>,
        coords: &[Value<'c, 'm>],
        bar: Value<'c, 'm>,
        multicast: Option<Value<'c, 'm>>,
    ) {
        let p7t = self.ptr_ty(7);
        let dst = self.cast("llvm.addrspacecast", dst, p7t);
        let mc = i32::from(multicast.is_some());
        let segments =
            DenseI32ArrayAttribute::new(self.ctx, &[1, 1, coords.len() as i32, 1, 0, mc, 0, 0])
                .into();
        let mode = self.attr("#nvvm.tma_load_mode<tile>");
        let cta_only = self.attr("false");
        let mut operands = vec![dst, tmap];
        operands.extend_from_slice(coords);
        operands.push(bar);
        operands.extend(multicast);
        self.op(
            "nvvm.cp.async.bulk.tensor.shared.cluster.global",
            &operands,
            &[],
            &[
                ("operandSegmentSizes", segments),
                ("mode", mode),
                ("isCTAOnly", cta_only),
            ],
        );
    }

    /// `mbarrier.arrive.shared::cta.b64` on the barrier at `bar` (an address-space-3
    /// pointer), or with `cta = Some(r)` on CTA `r`'s barrier at the same offset with
    /// release semantics at cluster scope ([`Writer::mbarrier_arrive_at`]; PTX ISA
    /// §9.7.13.15.13).
    pub fn mbarrier_arrive(&mut self, bar: Value<'c, 'm>, cta: Option<i64>) {
        match cta {
            None => {
                self.op("nvvm.mbarrier.arrive", &[bar], &[], &[]);
            }
            Some(r) => {
                let r = self.i32(r);
                self.mbarrier_arrive_at(bar, r.v, true);
            }
        }
    }

    /// `mbarrier.arrive.shared::cluster.b64` on the barrier at the offset of `bar` (an
    /// address-space-3 pointer) in the CTA of cluster rank `rank` (i32): `mapa`, then the
    /// arrive, with `.release.cluster` semantics when `cluster_release`, else the default
    /// `.release.cta` (PTX ISA §9.7.13.15.13).
    ///
    /// The GEMM's stage releases to peer CTAs take `.release.cta`: the accesses such an
    /// arrive orders are that warp's reads of its own CTA's stage, already retired by
    /// `wgmma.wait_group`, so no write needs publishing at cluster scope, and
    /// `.release.cluster` compiles to `MEMBAR.ALL.GPU` per arrive (per k step).
    pub fn mbarrier_arrive_at(
        &mut self,
        bar: Value<'c, 'm>,
        rank: Value<'c, 'm>,
        cluster_release: bool,
    ) {
        let p7 = self.ptr_ty(7);
        let remote = self.op1("nvvm.mapa", &[bar, rank], p7, &[]);
        if cluster_release {
            let scope = self.attr("#nvvm.mem_scope<cluster>");
            self.op("nvvm.mbarrier.arrive", &[remote], &[], &[("scope", scope)]);
        } else {
            self.op("nvvm.mbarrier.arrive", &[remote], &[], &[]);
        }
    }

    /// `barrier.cluster.arrive` (release) then `barrier.cluster.wait` (acquire), `.aligned`
    /// when every thread of each warp runs it (PTX ISA §9.7.13.4).
    pub fn cluster_barrier(&mut self, aligned: bool) {
        let a: Vec<(&str, Attribute)> = if aligned {
            vec![("aligned", Attribute::unit(self.ctx))]
        } else {
            vec![]
        };
        self.op("nvvm.cluster.arrive", &[], &[], &a);
        self.op("nvvm.cluster.wait", &[], &[], &a);
    }

    /// `clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128`
    /// (PTX ISA 8.6, §9.7.13.16.1): request to cancel a not-yet-launched cluster; the 16-byte
    /// response goes to the slot at `slot` (an address-space-3 pointer, 16-byte aligned) and
    /// completes 16 transaction bytes on the mbarrier at `bar`. `multicast`: the
    /// `.multicast::cluster::all` form, which writes the response into every CTA of the
    /// cluster (sm_100a).
    pub fn clc_try_cancel(&mut self, slot: Value<'c, 'm>, bar: Value<'c, 'm>, multicast: bool) {
        let mc: Vec<(&str, Attribute)> = if multicast {
            vec![("multicast", Attribute::unit(self.ctx))]
        } else {
            vec![]
        };
        self.op(
            "nvvm.clusterlaunchcontrol.try.cancel",
            &[slot, bar],
            &[],
            &mc,
        );
    }

    /// Reads the try_cancel response at shared-memory address `slot` (i32, the shared
    /// window's address): one `ld.shared.b128`, `query_cancel.is_canceled`, then `@p
    /// get_first_ctaid` (PTX ISA 8.6, §9.7.13.16.2). Returns whether a cluster was cancelled
    /// (i1) and the first CTA id of that cluster, x, y, z (i32; 0 when none was).
    ///
    /// Inline asm on purpose: the response lives in a `.b128` register scoped to the
    /// statement. Written as an `llvm.load` of i128 and four
    /// `nvvm.clusterlaunchcontrol.query.cancel` ops, it stays in two 64-bit registers across
    /// the queries, and the sm_100 split-K GEMM spilled 4 bytes more.
    pub fn clc_query(&mut self, slot: V<'c, 'm>) -> (V<'c, 'm>, [V<'c, 'm>; 3]) {
        let asm = "{ .reg .b128 resp; .reg .pred canceled; .reg .b32 w; ld.shared.b128 resp, \
                   [$4]; clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 canceled, \
                   resp; selp.u32 $0, 1, 0, canceled; mov.u32 $1, 0; mov.u32 $2, 0; mov.u32 \
                   $3, 0; @canceled clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.\
                   b128 {$1, $2, $3, w}, resp; }";
        let i32t = self.ty(ScalarType::I32);
        let st = self.struct_ty(&[i32t; 4]);
        let r = self
            .inline_asm(asm, "=r,=r,=r,=r,r", &[slot.v], Some(st), true)
            .expect("a typed result");
        let field = |w: &mut Self, i: usize| V {
            v: w.extract(r, i, i32t),
            t: ScalarType::I32,
        };
        let flag = field(self, 0);
        let z = self.i32(0);
        let ok = self.icmp(ICmp::Ne, flag, z);
        (ok, [field(self, 1), field(self, 2), field(self, 3)])
    }

    /// `wgmma.fence.sync.aligned` (PTX ISA §9.7.15.7.1).
    pub fn wgmma_fence(&mut self) {
        self.op("nvvm.wgmma.fence.aligned", &[], &[], &[]);
    }

    /// `cp.async.cg.shared.global [dst], [src], 16, src_bytes` (PTX ISA, "Data Movement
    /// and Conversion Instructions: cp.async"): copies `src_bytes` (0 to 16) bytes from
    /// global `src` to shared `dst` asynchronously, zero-filling the rest of the 16; both
    /// addresses 16-byte aligned. Joins the thread's open cp.async group.
    pub fn cp_async_16(&mut self, dst: Value<'c, 'm>, src: Value<'c, 'm>, src_bytes: V<'c, 'm>) {
        let size = self.attr("16 : i32");
        let modifier = self.attr("#nvvm<load_cache_modifier cg>");
        self.op(
            "nvvm.cp.async.shared.global",
            &[dst, src, src_bytes.v],
            &[],
            &[("size", size), ("modifier", modifier)],
        );
    }

    /// `cp.async.commit_group`: closes the thread's open cp.async group.
    pub fn cp_async_commit_group(&mut self) {
        self.op("nvvm.cp.async.commit.group", &[], &[], &[]);
    }

    /// `cp.async.wait_group n`: returns once at most `n` of the thread's cp.async groups
    /// are pending.
    pub fn cp_async_wait_group(&mut self, n: i64) {
        let n = self.attr(&format!("{n} : i32"));
        self.op("nvvm.cp.async.wait.group", &[], &[], &[("n", n)]);
    }

    /// `wgmma.commit_group.sync.aligned` (PTX ISA §9.7.15.7.2).
    pub fn wgmma_commit_group(&mut self) {
        self.op("nvvm.wgmma.commit.group.sync.aligned", &[], &[], &[]);
    }

    /// `wgmma.wait_group.sync.aligned n` (PTX ISA §9.7.15.7.3) with `tied` — (value, its
    /// type, its constraint letter: `f` or `r`) — going through the asm statement as tied
    /// operands, so no access of them is scheduled above the wait; returns the values after
    /// it, in order. `read` — (value, constraint letter) — are plain inputs of the asm
    /// statement: their registers stay live up to the wait, and nothing copies them (the
    /// values only wgmmas read). With nothing tied or read, the NVVM op.
    pub fn wgmma_wait_group(
        &mut self,
        n: i64,
        tied: &[(Value<'c, 'm>, Type<'c>, &str)],
        read: &[(Value<'c, 'm>, &str)],
    ) -> Vec<Value<'c, 'm>> {
        if tied.is_empty() && !read.is_empty() {
            let cons: Vec<&str> = read.iter().map(|r| r.1).collect();
            let vals: Vec<Value<'c, 'm>> = read.iter().map(|r| r.0).collect();
            self.inline_asm(
                &format!("wgmma.wait_group.sync.aligned {n};"),
                &cons.join(","),
                &vals,
                None,
                true,
            );
            return vec![];
        }
        if tied.is_empty() {
            let g = self.i64_attr(n);
            self.op(
                "nvvm.wgmma.wait.group.sync.aligned",
                &[],
                &[],
                &[("group", g)],
            );
            return vec![];
        }
        let cons: Vec<String> = tied
            .iter()
            .map(|(_, _, c)| format!("={c}"))
            .chain((0..tied.len()).map(|i| i.to_string()))
            .chain(read.iter().map(|r| r.1.to_string()))
            .collect();
        let tys: Vec<Type<'c>> = tied.iter().map(|t| t.1).collect();
        let vals: Vec<Value<'c, 'm>> = tied
            .iter()
            .map(|t| t.0)
            .chain(read.iter().map(|r| r.0))
            .collect();
        let ret = self.struct_ty(&tys);
        let r = self
            .inline_asm(
                &format!("wgmma.wait_group.sync.aligned {n};"),
                &cons.join(","),
                &vals,
                Some(ret),
                true,
            )
            .expect("a result type was given");
        if tys.iter().all(|&t| t == tys[0]) {
            return self.unpack(r, tys.len(), tys[0]);
        }
        tys.iter()
            .enumerate()
            .map(|(i, &t)| self.extract(r, i, t))
            .collect()
    }

    /// `shfl.sync.bfly.b32` of an f32 with lane mask `mask` over the whole warp.
    pub fn shfl_bfly(&mut self, x: V<'c, 'm>, mask: i64) -> V<'c, 'm> {
        let all = self.i32(-1);
        let off = self.i32(mask);
        let clamp = self.i32(31);
        let kind = self.attr("#nvvm<shfl_kind bfly>");
        let ty = self.ty(ScalarType::F32);
        V {
            v: self.op1(
                "nvvm.shfl.sync",
                &[all.v, x.v, off.v, clamp.v],
                ty,
                &[("kind", kind)],
            ),
            t: ScalarType::F32,
        }
    }

    // ---- blocks --------------------------------------------------------------------

    /// A new block at the end of the function with arguments of `types`.
    pub fn new_block(&mut self, types: &[Type<'c>]) -> BlockRef<'c, 'm> {
        let args: Vec<(Type<'c>, Location<'c>)> = types.iter().map(|&t| (t, self.loc)).collect();
        self.region.append_block(Block::new(&args))
    }

    /// The block arguments of `b`.
    pub fn args(&self, b: BlockRef<'c, 'm>) -> Vec<Value<'c, 'm>> {
        (0..b.argument_count())
            .filter_map(|i| b.argument(i).ok().map(Into::into))
            .collect()
    }

    /// A block for code written later, placed with [`Self::place`]: branches can target it
    /// before its position among the function's blocks is known. The writer owns it until
    /// then (and appends what is never placed to the function when it is dropped, so that
    /// no branch of a failed build points at a freed block).
    pub fn block(&mut self, types: &[Type<'c>]) -> BlockRef<'c, 'm> {
        let args: Vec<(Type<'c>, Location<'c>)> = types.iter().map(|&t| (t, self.loc)).collect();
        let b = Block::new(&args);
        // SAFETY: the block lives in `pending` until `place` or `drop` hands it to the
        // region, which owns it as long as the module; the reference never outlives that.
        let r = unsafe { BlockRef::from_raw(b.to_raw()) };
        self.pending.push(b);
        r
    }

    /// Appends `b` (made by [`Self::block`]) to the function and makes it the insertion
    /// block.
    pub fn place(&mut self, b: BlockRef<'c, 'm>) -> BlockRef<'c, 'm> {
        let raw = b.to_raw().ptr;
        if let Some(i) = self.pending.iter().position(|p| p.to_raw().ptr == raw) {
            let owned = self.pending.swap_remove(i);
            self.region.append_block(owned);
        }
        self.block = b;
        b
    }

    /// `llvm.br` to `dest` with `args`.
    pub fn br(&mut self, dest: &Block<'c>, args: &[Value<'c, 'm>]) {
        let op = OperationBuilder::new("llvm.br", self.loc)
            .add_operands(args)
            .add_successors(&[dest])
            .build();
        self.push(op);
    }

    /// `llvm.cond_br c, t(targs), f(fargs)`.
    pub fn cond_br(
        &mut self,
        c: V<'c, 'm>,
        t: &Block<'c>,
        targs: &[Value<'c, 'm>],
        f: &Block<'c>,
        fargs: &[Value<'c, 'm>],
    ) {
        let sizes =
            DenseI32ArrayAttribute::new(self.ctx, &[1, targs.len() as i32, fargs.len() as i32]);
        let op = OperationBuilder::new("llvm.cond_br", self.loc)
            .add_operands(&[c.v])
            .add_operands(targs)
            .add_operands(fargs)
            .add_successors(&[t, f])
            .add_attributes(&[(
                Identifier::new(self.ctx, "operandSegmentSizes"),
                sizes.into(),
            )])
            .build();
        self.push(op);
    }

    /// The error of the build, if one op failed.
    pub fn finish(&self, at: &TileLocation) -> Result<(), Diagnostic> {
        match &self.error {
            None => Ok(()),
            Some(e) => Err(Diagnostic::error(
                at.clone(),
                format!("internal error: the MLIR writer could not build an op: {e}"),
            )),
        }
    }
}

/// Dimension `d`'s component of each lane basis and each warp basis of `layout`: what
/// [`Writer::thread_dim_coord`] takes, and a key for sharing its result between layouts.
pub(crate) fn thread_dim_bases(layout: &LinearLayout, d: usize) -> (Vec<u64>, Vec<u64>) {
    (
        layout.lane.iter().map(|b| b[d]).collect(),
        layout.warp.iter().map(|b| b[d]).collect(),
    )
}
