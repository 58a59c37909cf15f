//! A typed builder for frontends that make IR without text (a tensor compiler calling tilec
//! as a library). Ops are appended to the innermost open block; structured ops take
//! closures that fill their regions and return the values their region yields.
//!
//! ```
//! use tilec_dialect::{Builder, BuildResult, Module, ReduceKind, ScalarType::*, Type, verify};
//! # fn main() -> BuildResult<()> {
//! let mut m = Module::new();
//! let mut b = Builder::new(&mut m);
//! // Softmax over rows of 256: one program per row.
//! let x2 = Type::Tensor { rank: 2, elem: F32 };
//! b.kernel("softmax", &[("X", x2.clone()), ("Y", x2), ("M", Type::INDEX)], |b, a| {
//!     let rows = b.arg(a[2])?;
//!     b.grid([rows])?;
//!     let row = b.program_id(0)?;
//!     let c0 = b.constant_index(0)?;
//!     let x = b.load_padded(a[0], &[row, c0], &[1, 256], f64::NEG_INFINITY)?;
//!     let mx = b.reduce(x, 1, ReduceKind::Max)?;
//!     let e = b.broadcast(mx, &[1, 256])?;
//!     let d = b.sub(x, e)?;
//!     let p = b.exp(d)?;
//!     let s = b.reduce(p, 1, ReduceKind::Add)?;
//!     let s = b.broadcast(s, &[1, 256])?;
//!     let y = b.div(p, s)?;
//!     b.name(y, "probs")?;
//!     b.store(a[1], &[row, c0], y)
//! })?;
//! verify(&m).unwrap();
//! # Ok(())
//! # }
//! ```
//!
//! # Checking
//!
//! Every method checks what it builds, so a mistake is reported where the frontend makes
//! it and not later in a pass:
//! - each operand must be a value visible at the insertion point: a handle of another
//!   module (when that module has no value with its number), of another kernel or of a
//!   closed region is an error;
//! - each op must satisfy its verifier rule ([`crate::verifier::verify_op`]): operand
//!   kinds and types, attributes, result types;
//! - result types are inferred wherever the operands determine them.
//!
//! An error is a [`Diagnostic`] of kind [`DiagKind::InvalidIr`] at the op's location,
//! naming the kernel, and the op is not appended: the module stays as it was before the
//! call. Handles are indices into the module's value table, so a handle from another
//! module whose number this module also has, and that is visible here, cannot be told
//! apart; the other cases cannot go unnoticed.
//!
//! # Coverage
//!
//! Every op of the tile level (every [`OpKind`] but those [`OpKind::is_gpu_level`] names)
//! has a method (a test builds each through its method and compares with the op table).
//! The GPU-level ops are what `tile-to-gpu` makes of them, for tests of GPU-level passes:
//! [`Builder::warp_specialize`] builds that structured op, and [`Builder::op`] any other
//! of them, checked by the same verifier rule (`tilec::compile` refuses them in a source
//! kernel).
//!
//! # Locations
//!
//! Each op built gets its own location, so that a diagnostic points back at the frontend's
//! node: `SCOPE:ID:0`, where ID numbers the builder's ops from 1 in the order they are
//! built ([`Builder::next_op_id`] says which the next op gets) and SCOPE is `<builder>` or
//! the name given to [`Builder::with_loc`] (a frontend's node name or id). Passes keep an
//! op's location on what they make of it. [`Builder::set_loc`] gives a fixed location
//! instead.

use crate::attr::{Attribute, Expr};
use crate::diag::{DiagKind, Diagnostic};
use crate::ir::{Block, Module, Operation, Value};
use crate::location::Location;
use crate::ops::{CmpPredicate, OpClass, OpKind, Precision, ReduceKind};
use crate::types::{ScalarType, Type};
use crate::verifier::verify_op;
use std::collections::HashSet;
use std::fmt::Display;
use std::sync::Arc;

/// The result of a [`Builder`] method: what it built, or why it refused (a
/// [`Diagnostic`] of kind [`DiagKind::InvalidIr`], located at the op).
pub type BuildResult<T> = Result<T, Diagnostic>;

/// A block being filled, with the values defined in it so far.
struct Open {
    block: Block,
    visible: HashSet<Value>,
}

/// The kernel being built.
struct OpenKernel {
    name: String,
    args: Vec<Value>,
    grid: Option<Vec<Expr>>,
}

/// Appends ops to a [`Module`].
pub struct Builder<'m> {
    m: &'m mut Module,
    open: Vec<Open>,
    kernel: Option<OpenKernel>,
    /// The file part of the ops' locations.
    scope: Arc<str>,
    /// A location given to every op instead of the numbered ones.
    fixed: Option<Location>,
    /// The id of the next op.
    next_id: u32,
}

/// Declares methods that build one op of a class from its operands, by the class's
/// generic method.
macro_rules! by_class {
    ($generic:ident $args:tt: $($method:ident = $kind:ident),* $(,)?) => {
        $( by_class!(@one $generic $args $method $kind); )*
    };
    (@one $generic:ident ($($arg:ident),*) $method:ident $kind:ident) => {
        #[doc = concat!("[`OpKind::", stringify!($kind), "`] of ",
            stringify!($($arg),*), "; the result has their type.")]
        ///
        /// # Errors
        /// As the op's verifier rule (an operand of the wrong kind or type).
        pub fn $method(&mut self, $($arg: Value),*) -> BuildResult<Value> {
            self.$generic(OpKind::$kind, $($arg),*)
        }
    };
}

impl<'m> Builder<'m> {
    /// A builder that appends kernels to `m`.
    pub fn new(m: &'m mut Module) -> Self {
        Builder {
            m,
            open: vec![],
            kernel: None,
            scope: Arc::from("<builder>"),
            fixed: None,
            next_id: 1,
        }
    }

    /// Give every op built from now on the location `loc` (e.g. a frontend's own source
    /// position) instead of a numbered one; [`Builder::clear_loc`] goes back to numbering.
    pub fn set_loc(&mut self, loc: Location) {
        self.fixed = Some(loc);
    }

    /// Number the ops again (`SCOPE:ID:0`), after [`Builder::set_loc`].
    pub fn clear_loc(&mut self) {
        self.fixed = None;
    }

    /// The id the next op built gets: the line of its location `SCOPE:ID:0`.
    pub fn next_op_id(&self) -> u32 {
        self.next_id
    }

    /// Runs `build` with the ops it builds located in `scope` (`scope:ID:0`): a frontend
    /// names its node, and an error about any op built for it names the node.
    pub fn with_loc<R>(&mut self, scope: &str, build: impl FnOnce(&mut Self) -> R) -> R {
        let outer = std::mem::replace(&mut self.scope, Arc::from(scope));
        let r = build(self);
        self.scope = outer;
        r
    }

    /// The scope of the ops' numbered locations (`<builder>` unless set).
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Locate the ops built from now on in `scope` (`scope:ID:0`), as
    /// [`Builder::with_loc`] does for a closure: for frontends whose nodes are not
    /// closures (a Python `with` block).
    pub fn set_scope(&mut self, scope: &str) {
        self.scope = Arc::from(scope);
    }

    /// The module being built.
    pub fn module(&self) -> &Module {
        self.m
    }

    /// The location of the next op, and its id taken.
    fn take_loc(&mut self) -> Location {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        match &self.fixed {
            Some(l) => l.clone(),
            None => Location::new(self.scope.clone(), id, 0),
        }
    }

    /// An error at `loc` about the kernel being built.
    fn error(&self, loc: &Location, message: impl Into<String>) -> Diagnostic {
        let mut d = Diagnostic::error(loc.clone(), message).with_kind(DiagKind::InvalidIr);
        d.kernel = self.kernel.as_ref().map(|k| k.name.clone());
        d
    }

    /// `v`'s type, once `v` is known to be visible here as operand `i` of `kind`.
    fn operand(&self, kind: OpKind, i: usize, v: Value, loc: &Location) -> BuildResult<Type> {
        let Some(t) = self.m.try_ty(v) else {
            return Err(self.error(
                loc,
                format!(
                    "operand {i} of '{}' is value handle {}, which this module does not \
                     have (a value of another module)",
                    kind.name(),
                    v.0
                ),
            ));
        };
        if !self.open.iter().any(|o| o.visible.contains(&v)) {
            let shown = match self.m.name(v) {
                Some(n) => format!("'%{n}'"),
                None => format!("#{}", v.0),
            };
            return Err(self.error(
                loc,
                format!(
                    "operand {i} of '{}' ({shown}) is not visible here: it belongs to another \
                     kernel, a region already closed, or another module",
                    kind.name()
                ),
            ));
        }
        Ok(t.clone())
    }

    /// The operands' types, each checked by [`Builder::operand`].
    fn operands(&self, kind: OpKind, vs: &[Value], loc: &Location) -> BuildResult<Vec<Type>> {
        vs.iter()
            .enumerate()
            .map(|(i, &v)| self.operand(kind, i, v, loc))
            .collect()
    }

    /// Checks `op` by its verifier rule (with `parent` for a terminator), as an error of
    /// this builder.
    fn verify(&self, op: &Operation, parent: Option<&Operation>) -> BuildResult<()> {
        verify_op(self.m, op, parent).map_err(|ds| self.first(ds))
    }

    /// The first of `ds`, the others as its notes, about the kernel being built.
    fn first(&self, mut ds: crate::diag::Diagnostics) -> Diagnostic {
        let mut first = ds.0.remove(0);
        first.kernel = self.kernel.as_ref().map(|k| k.name.clone());
        first.notes.extend(ds.0);
        first
    }

    /// The error for an op built with no kernel open.
    fn outside(&self, kind: OpKind, loc: &Location) -> Diagnostic {
        let msg = format!(
            "'{}' is built outside a kernel body (build it inside Builder::kernel)",
            kind.name()
        );
        self.error(loc, msg)
    }

    /// The location the next op gets, its id not taken.
    fn here(&self) -> Location {
        match &self.fixed {
            Some(l) => l.clone(),
            None => Location::new(self.scope.clone(), self.next_id, 0),
        }
    }

    /// Appends a checked op to the innermost open block; its results become visible.
    fn append(&mut self, op: Operation) -> BuildResult<Vec<Value>> {
        let Some(open) = self.open.last_mut() else {
            return Err(self.outside(op.kind, &op.loc));
        };
        open.visible.extend(op.results.iter().copied());
        let rs = op.results.clone();
        open.block.ops.push(op);
        Ok(rs)
    }

    /// Builds, checks and appends an op without regions.
    fn leaf(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: Vec<(&str, Attribute)>,
        results: &[Type],
    ) -> BuildResult<Vec<Value>> {
        let loc = self.open_loc(kind)?;
        self.operands(kind, operands, &loc)?;
        let op = self.make(kind, loc, operands.to_vec(), attrs, results);
        self.verify(&op, None)?;
        self.append(op)
    }

    /// An op of `kind` with new results of types `tys`, not yet checked or appended.
    fn make(
        &mut self,
        kind: OpKind,
        loc: Location,
        operands: Vec<Value>,
        attrs: Vec<(&str, Attribute)>,
        tys: &[Type],
    ) -> Operation {
        let mut op = Operation::new(kind, loc);
        op.operands = operands;
        op.attrs = attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        op.results = self.values(tys);
        op
    }

    fn one(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: Vec<(&str, Attribute)>,
        ty: Type,
    ) -> BuildResult<Value> {
        Ok(self.leaf(kind, operands, attrs, &[ty])?[0])
    }

    /// The type of `v` for an op of `kind` about to be built, checked like its operands;
    /// the op's id is not taken.
    fn peek(&self, kind: OpKind, i: usize, v: Value) -> BuildResult<Type> {
        self.operand(kind, i, v, &self.here())
    }

    /// Builds any op without regions (a GPU-level op, say) from its operands, attributes
    /// and result types; returns its results.
    ///
    /// # Errors
    /// A structured op or terminator (those have their own methods: [`Builder::kernel`],
    /// [`Builder::for_loop`], [`Builder::if_else`], [`Builder::while_loop`],
    /// [`Builder::warp_specialize`]; terminators are appended by them), an operand not
    /// visible here, an op outside a kernel, or the op's verifier rule.
    pub fn op(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        results: &[Type],
    ) -> BuildResult<Vec<Value>> {
        if matches!(kind.class(), OpClass::Structure | OpClass::Terminator) {
            let loc = self.take_loc();
            return Err(self.error(
                &loc,
                format!(
                    "'{}' has regions or ends one: build it with its own Builder method",
                    kind.name()
                ),
            ));
        }
        self.leaf(kind, operands, attrs.to_vec(), results)
    }

    /// Opens a block with `args`, runs `body`, and closes it with a `terminator` of the
    /// values `body` returns.
    fn region(
        &mut self,
        args: Vec<Value>,
        terminator: OpKind,
        body: impl FnOnce(&mut Self) -> BuildResult<Vec<Value>>,
    ) -> BuildResult<Block> {
        if self.open.len() >= crate::parser::MAX_NESTING {
            let loc = self.here();
            let msg = format!(
                "regions nest deeper than {} levels (the parser's limit)",
                crate::parser::MAX_NESTING
            );
            return Err(self.error(&loc, msg));
        }
        self.open.push(Open {
            visible: args.iter().copied().collect(),
            block: Block { args, ops: vec![] },
        });
        let ys = body(self).and_then(|ys| {
            let loc = self.take_loc();
            self.operands(terminator, &ys, &loc)?;
            Ok((ys, loc))
        });
        let mut open = self.open.pop().expect("the block opened above");
        let (ys, loc) = ys?;
        let mut t = Operation::new(terminator, loc);
        t.operands = ys;
        open.block.ops.push(t);
        Ok(open.block)
    }

    /// New values of types `tys` (an op's results, a region's arguments).
    fn values(&mut self, tys: &[Type]) -> Vec<Value> {
        tys.iter()
            .map(|t| self.m.new_value(t.clone(), None))
            .collect()
    }

    /// The types a closed block yields (its terminator's operands, visible when it was
    /// built).
    fn yielded(&self, b: &Block) -> Vec<Type> {
        let ops = b.ops.last().map_or(&[][..], |y| &y.operands[..]);
        ops.iter()
            .filter_map(|&v| self.m.try_ty(v).cloned())
            .collect()
    }

    /// Builds a structured op of `kind` with results of types `tys`, checks it and its
    /// regions' terminators, then appends it.
    fn structured(
        &mut self,
        kind: OpKind,
        loc: Location,
        operands: Vec<Value>,
        tys: &[Type],
        regions: Vec<Block>,
        attrs: Vec<(&str, Attribute)>,
    ) -> BuildResult<Vec<Value>> {
        let mut op = self.make(kind, loc, operands, attrs, tys);
        op.regions = regions;
        self.verify(&op, None)?;
        for r in &op.regions {
            if let Some(t) = r.ops.last() {
                self.verify(t, Some(&op))?;
            }
        }
        self.append(op)
    }

    /// The location of an op of `kind` about to be built inside a kernel body.
    fn open_loc(&mut self, kind: OpKind) -> BuildResult<Location> {
        let loc = self.take_loc();
        if self.open.is_empty() {
            return Err(self.outside(kind, &loc));
        }
        Ok(loc)
    }

    /// Builds `tile.kernel @name(args)`: `body` gets the argument values, fills the body
    /// and sets the launch grid with [`Builder::grid`]; `tile.return` is appended.
    ///
    /// # Errors
    /// A kernel inside another, a name the module already has, no grid, what `body`
    /// returns, or the kernel's verifier rule (argument types and names, the grid).
    pub fn kernel(
        &mut self,
        name: &str,
        args: &[(&str, Type)],
        body: impl FnOnce(&mut Self, &[Value]) -> BuildResult<()>,
    ) -> BuildResult<()> {
        let loc = self.take_loc();
        if !self.open.is_empty() {
            return Err(self.error(&loc, "'tile.kernel' must be at top level"));
        }
        if self.m.kernels().any(|k| k.symbol.as_deref() == Some(name)) {
            return Err(self.error(&loc, format!("redefinition of kernel '@{name}'")));
        }
        let vals: Vec<Value> = args
            .iter()
            .map(|(n, t)| self.m.new_value(t.clone(), Some(n.to_string())))
            .collect();
        self.kernel = Some(OpenKernel {
            name: name.to_string(),
            args: vals.clone(),
            grid: None,
        });
        let block = self.region(vals.clone(), OpKind::Return, |b| {
            body(b, &vals)?;
            Ok(vec![])
        });
        let built = block.and_then(|block| {
            let grid = self.kernel.as_mut().and_then(|k| k.grid.take());
            let Some(grid) = grid else {
                return Err(self.error(
                    &loc,
                    format!("kernel '@{name}' has no grid: call Builder::grid in its body"),
                ));
            };
            let mut op = Operation::new(OpKind::Kernel, loc);
            op.symbol = Some(name.to_string());
            let grid = grid.into_iter().map(Attribute::Expr).collect();
            op.attrs.insert("grid".into(), Attribute::Array(grid));
            op.regions.push(block);
            // The whole kernel: what only it shows (constant indices, the wgmma
            // accumulator rule) is refused here too.
            crate::verifier::verify_kernel(self.m, &op).map_err(|ds| self.first(ds))?;
            self.m.ops.push(op);
            Ok(())
        });
        self.kernel = None;
        built
    }

    /// Sets the launch grid of the kernel being built: one to three expressions over its
    /// integer arguments (see [`Builder::arg`]), x first.
    ///
    /// # Errors
    /// Outside a kernel body, or not one to three dimensions.
    pub fn grid(&mut self, dims: impl IntoIterator<Item = Expr>) -> BuildResult<()> {
        let dims: Vec<Expr> = dims.into_iter().collect();
        let loc = self.here();
        let Some(k) = self.kernel.as_mut() else {
            return Err(self.error(&loc, "Builder::grid is called outside a kernel body"));
        };
        if !(1..=3).contains(&dims.len()) {
            let n = dims.len();
            return Err(self.error(&loc, format!("a grid has 1 to 3 dimensions, found {n}")));
        }
        k.grid = Some(dims);
        Ok(())
    }

    /// The grid expression of kernel argument `v` (an integer scalar argument of the kernel
    /// being built), for [`Builder::grid`]: `b.arg(n)?.ceil_div(128)`.
    ///
    /// # Errors
    /// A value that is not such an argument.
    pub fn arg(&self, v: Value) -> BuildResult<Expr> {
        let loc = self.here();
        let Some(k) = &self.kernel else {
            return Err(self.error(&loc, "Builder::arg is called outside a kernel body"));
        };
        let (Some(name), Some(t)) = (self.m.name(v), self.m.try_ty(v)) else {
            return Err(self.error(&loc, format!("value #{} is not a kernel argument", v.0)));
        };
        if !k.args.contains(&v) || !t.is_int_scalar() {
            return Err(self.error(
                &loc,
                format!(
                    "'%{name}' is not an integer argument of kernel '@{}', so a grid cannot \
                     read it",
                    k.name
                ),
            ));
        }
        Ok(Expr::Arg(name.to_string()))
    }

    /// Names `v`, a value visible here (printed `%name` where the name is free in its
    /// scope); returns `v`.
    ///
    /// # Errors
    /// A name the parser would not read back as one (see
    /// [`crate::lexer::is_identifier`]), or a value not visible here (of another kernel,
    /// region or module).
    pub fn name(&mut self, v: Value, name: &str) -> BuildResult<Value> {
        let loc = self.here();
        if !crate::lexer::is_identifier(name) {
            return Err(self.error(
                &loc,
                format!(
                    "'{name}' is not a value name (a letter or '_', then letters, digits, '_', \
                     '.', '$')"
                ),
            ));
        }
        if !self.open.iter().any(|o| o.visible.contains(&v)) {
            let msg = format!(
                "value #{} is not visible here: only values of the kernel being built are named",
                v.0
            );
            return Err(self.error(&loc, msg));
        }
        if let Some(info) = self.m.values.get_mut(v.0 as usize) {
            info.name = Some(name.to_string());
        }
        Ok(v)
    }

    /// `tile.for %i = lb to ub step step` carrying `inits`: `body` gets the induction
    /// variable and the carried values and returns the values to yield (of the inits'
    /// types); returns the loop's results.
    ///
    /// # Errors
    /// What `body` returns, an operand not visible here, or the loop's verifier rule
    /// (index bounds, yields of the carried types).
    pub fn for_loop(
        &mut self,
        lb: Value,
        ub: Value,
        step: Value,
        inits: &[Value],
        body: impl FnOnce(&mut Self, Value, &[Value]) -> BuildResult<Vec<Value>>,
    ) -> BuildResult<Vec<Value>> {
        let loc = self.open_loc(OpKind::For)?;
        let operands: Vec<Value> = [lb, ub, step]
            .into_iter()
            .chain(inits.iter().copied())
            .collect();
        let tys = self.operands(OpKind::For, &operands, &loc)?.split_off(3);
        let iv = self.m.new_value(Type::INDEX, None);
        let carried = self.values(&tys);
        let args = std::iter::once(iv).chain(carried.iter().copied()).collect();
        let block = self.region(args, OpKind::Yield, |b| body(b, iv, &carried))?;
        self.structured(OpKind::For, loc, operands, &tys, vec![block], vec![])
    }

    /// `tile.if %cond`: `then` and `otherwise` fill the two regions and return the values
    /// they yield; the results have the types `then` yields.
    ///
    /// # Errors
    /// What either region returns, a condition that is not `i1`, or regions yielding
    /// different types.
    pub fn if_else(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut Self) -> BuildResult<Vec<Value>>,
        otherwise: impl FnOnce(&mut Self) -> BuildResult<Vec<Value>>,
    ) -> BuildResult<Vec<Value>> {
        let loc = self.open_loc(OpKind::If)?;
        self.operands(OpKind::If, &[cond], &loc)?;
        let t = self.region(vec![], OpKind::Yield, then)?;
        let e = self.region(vec![], OpKind::Yield, otherwise)?;
        let tys = self.yielded(&t);
        self.structured(OpKind::If, loc, vec![cond], &tys, vec![t, e], vec![])
    }

    /// `tile.while` carrying `inits` (a do-while loop): `body` gets the carried values and
    /// returns the `i1` that continues the loop and the next carried values; returns the
    /// values of the last iteration.
    ///
    /// # Errors
    /// What `body` returns, or the loop's verifier rule (an `i1` condition, next values of
    /// the carried types).
    pub fn while_loop(
        &mut self,
        inits: &[Value],
        body: impl FnOnce(&mut Self, &[Value]) -> BuildResult<(Value, Vec<Value>)>,
    ) -> BuildResult<Vec<Value>> {
        let loc = self.open_loc(OpKind::While)?;
        let tys = self.operands(OpKind::While, inits, &loc)?;
        let carried = self.values(&tys);
        let block = self.region(carried.clone(), OpKind::Yield, |b| {
            let (go, next) = body(b, &carried)?;
            Ok(std::iter::once(go).chain(next).collect())
        })?;
        self.structured(
            OpKind::While,
            loc,
            inits.to_vec(),
            &tys,
            vec![block],
            vec![],
        )
    }

    /// `tile.warp_specialize {consumers}`: `producer` fills the producer's region,
    /// `consumer` the region of the `consumers` consumer warpgroups and returns the values
    /// it yields (the op's results).
    ///
    /// # Errors
    /// What either region returns, or `consumers` outside 1 to 3.
    pub fn warp_specialize(
        &mut self,
        consumers: u32,
        producer: impl FnOnce(&mut Self) -> BuildResult<()>,
        consumer: impl FnOnce(&mut Self) -> BuildResult<Vec<Value>>,
    ) -> BuildResult<Vec<Value>> {
        let loc = self.open_loc(OpKind::WarpSpecialize)?;
        let p = self.region(vec![], OpKind::Yield, |b| producer(b).map(|()| vec![]))?;
        let c = self.region(vec![], OpKind::Yield, consumer)?;
        let tys = self.yielded(&c);
        let consumers = ("consumers", Attribute::Int(consumers.into()));
        self.structured(
            OpKind::WarpSpecialize,
            loc,
            vec![],
            &tys,
            vec![p, c],
            vec![consumers],
        )
    }

    /// `tile.constant {value = v} : index`; `v` may be any integer type (a shape's `u64`).
    ///
    /// # Errors
    /// A value outside `i64`.
    pub fn constant_index<T>(&mut self, v: T) -> BuildResult<Value>
    where
        T: TryInto<i64> + Copy + Display,
    {
        self.constant_int(v, ScalarType::Index)
    }

    /// `tile.constant {value = v} : ty` for an integer type (`i1`, `i32`, `i64`, `index`).
    ///
    /// # Errors
    /// A value that does not fit `ty`, or a `ty` that is not an integer type.
    pub fn constant_int<T>(&mut self, v: T, ty: ScalarType) -> BuildResult<Value>
    where
        T: TryInto<i64> + Copy + Display,
    {
        let Ok(i) = v.try_into() else {
            let loc = self.take_loc();
            return Err(self.error(
                &loc,
                format!("'tile.constant' value {v} does not fit in {ty}"),
            ));
        };
        if !ty.is_int() {
            let loc = self.take_loc();
            let msg = format!("'tile.constant' of {ty} takes a float: use constant_float");
            return Err(self.error(&loc, msg));
        }
        self.one(
            OpKind::Constant,
            &[],
            vec![("value", Attribute::Int(i))],
            Type::Scalar(ty),
        )
    }

    /// `tile.constant {value = v} : ty` for a float type.
    ///
    /// # Errors
    /// A `ty` that is not a float type.
    pub fn constant_float(&mut self, v: f64, ty: ScalarType) -> BuildResult<Value> {
        self.one(
            OpKind::Constant,
            &[],
            vec![("value", Attribute::Float(v))],
            Type::Scalar(ty),
        )
    }

    /// `tile.program_id {dim}`: this program's index along grid dimension `dim` (0 to 2).
    ///
    /// # Errors
    /// `dim` above 2.
    pub fn program_id(&mut self, dim: usize) -> BuildResult<Value> {
        self.one(OpKind::ProgramId, &[], vec![("dim", int(dim))], Type::INDEX)
    }

    /// `tile.num_programs {dim}`: the number of programs along grid dimension `dim`.
    ///
    /// # Errors
    /// `dim` above 2.
    pub fn num_programs(&mut self, dim: usize) -> BuildResult<Value> {
        self.one(
            OpKind::NumPrograms,
            &[],
            vec![("dim", int(dim))],
            Type::INDEX,
        )
    }

    /// `tile.dim %tensor {dim}`: the runtime size of dimension `dim` of a global tensor.
    ///
    /// # Errors
    /// Not a tensor, or `dim` not below its rank.
    pub fn dim(&mut self, tensor: Value, dim: usize) -> BuildResult<Value> {
        self.one(OpKind::Dim, &[tensor], vec![("dim", int(dim))], Type::INDEX)
    }

    /// An integer binary op (class [`OpClass::IntBinary`]: `tile.addi` … `tile.maxi`) on
    /// `a` and `b` of one integer type.
    ///
    /// # Errors
    /// `kind` of another class, or operands of different or non-integer types.
    pub fn int_op(&mut self, kind: OpKind, a: Value, b: Value) -> BuildResult<Value> {
        self.class_op(kind, OpClass::IntBinary, &[a, b])
    }

    /// A float elementwise binary op (class [`OpClass::FloatBinary`]: `tile.add` …) on
    /// `a` and `b` of one float type (broadcast first with [`Builder::broadcast`]).
    ///
    /// # Errors
    /// `kind` of another class, or operands of different or non-float types.
    pub fn binary(&mut self, kind: OpKind, a: Value, b: Value) -> BuildResult<Value> {
        self.class_op(kind, OpClass::FloatBinary, &[a, b])
    }

    /// A float elementwise unary op (class [`OpClass::FloatUnary`]: `tile.exp` …).
    ///
    /// # Errors
    /// `kind` of another class, or a non-float operand.
    pub fn unary(&mut self, kind: OpKind, a: Value) -> BuildResult<Value> {
        self.class_op(kind, OpClass::FloatUnary, &[a])
    }

    /// An op of `class` whose result has its first operand's type.
    fn class_op(&mut self, kind: OpKind, class: OpClass, xs: &[Value]) -> BuildResult<Value> {
        if kind.class() != class {
            let loc = self.take_loc();
            let msg = format!("'{}' is not an op of class {class:?}", kind.name());
            return Err(self.error(&loc, msg));
        }
        let t = self.peek(kind, 0, xs[0])?;
        self.one(kind, xs, vec![], t)
    }

    by_class!(int_op(a, b): addi = AddI, subi = SubI, muli = MulI, divi = DivI, remi = RemI,
        ceildiv = CeilDiv, mini = MinI, maxi = MaxI);
    by_class!(binary(a, b): add = Add, sub = Sub, mul = Mul, div = Div, max = Max, min = Min);
    by_class!(unary(a): neg = Neg, abs = Abs, exp = Exp, exp2 = Exp2, log = Log, sqrt = Sqrt,
        rsqrt = Rsqrt, tanh = Tanh, relu = Relu);

    /// `tile.cmpi {predicate}` of two integers or integer tiles of one type: `i1`, or an
    /// `i1` tile of their shape.
    ///
    /// # Errors
    /// Operands of different or non-integer types.
    pub fn cmpi(&mut self, predicate: CmpPredicate, a: Value, b: Value) -> BuildResult<Value> {
        let t = self.peek(OpKind::CmpI, 0, a)?.with_elem(ScalarType::I1);
        self.one(
            OpKind::CmpI,
            &[a, b],
            vec![(CmpPredicate::ATTR, predicate.into())],
            t,
        )
    }

    /// `tile.select %cond, %a, %b`: `a` where `cond` holds, else `b`.
    ///
    /// # Errors
    /// A condition that is not `i1` or an `i1` tile of the values' shape, or values of
    /// different types.
    pub fn select(&mut self, cond: Value, a: Value, b: Value) -> BuildResult<Value> {
        let t = self.peek(OpKind::Select, 1, a)?;
        self.one(OpKind::Select, &[cond, a, b], vec![], t)
    }

    /// The element type of `tensor`, for an op of `kind` that reads or writes it.
    fn tensor_elem(&mut self, kind: OpKind, tensor: Value) -> BuildResult<ScalarType> {
        match self.peek(kind, 0, tensor)? {
            Type::Tensor { elem, .. } => Ok(elem),
            t => {
                let loc = self.take_loc();
                let msg = format!("'{}' expects a tensor, found {t}", kind.name());
                Err(self.error(&loc, msg))
            }
        }
    }

    /// `tile.load %tensor, offsets… : tile<shape x elem>` (`elem` the tensor's), reading
    /// zero outside the tensor.
    ///
    /// # Errors
    /// Not a tensor, or offsets other than one `index` per tensor dimension.
    pub fn load(&mut self, tensor: Value, offsets: &[Value], shape: &[u64]) -> BuildResult<Value> {
        self.load_with(tensor, offsets, shape, vec![])
    }

    /// [`Builder::load`] reading `padding` outside the tensor (`f64::NEG_INFINITY` before a
    /// max reduction); float tiles only.
    ///
    /// # Errors
    /// As [`Builder::load`], or an integer tensor.
    pub fn load_padded(
        &mut self,
        tensor: Value,
        offsets: &[Value],
        shape: &[u64],
        padding: f64,
    ) -> BuildResult<Value> {
        let p = match padding {
            x if x.is_nan() => Attribute::Str("nan".into()),
            x if x == f64::INFINITY => Attribute::Str("inf".into()),
            x if x == f64::NEG_INFINITY => Attribute::Str("-inf".into()),
            x => Attribute::Float(x),
        };
        self.load_with(tensor, offsets, shape, vec![("padding", p)])
    }

    fn load_with(
        &mut self,
        tensor: Value,
        offsets: &[Value],
        shape: &[u64],
        attrs: Vec<(&str, Attribute)>,
    ) -> BuildResult<Value> {
        let elem = self.tensor_elem(OpKind::Load, tensor)?;
        let ops: Vec<Value> = std::iter::once(tensor)
            .chain(offsets.iter().copied())
            .collect();
        self.one(OpKind::Load, &ops, attrs, Type::tile(shape, elem))
    }

    /// `%v = tile.extract %tensor, indices… : elem`: one element of `tensor` as a scalar of
    /// its element type (zero outside it), read at run time: a group offset, a row's group
    /// id.
    ///
    /// # Errors
    /// Not a tensor, or indices other than one `index` per tensor dimension.
    pub fn extract(&mut self, tensor: Value, indices: &[Value]) -> BuildResult<Value> {
        let elem = self.tensor_elem(OpKind::Extract, tensor)?;
        let ops: Vec<Value> = std::iter::once(tensor)
            .chain(indices.iter().copied())
            .collect();
        self.one(OpKind::Extract, &ops, vec![], Type::Scalar(elem))
    }

    /// `tile.gather %tensor, %rows, %col`: row i of the `R x cols` result is row `rows[i]`
    /// of the 2-D `tensor` from column `col` on (R the length of the 1-D integer tile
    /// `rows`).
    ///
    /// # Errors
    /// Not a 2-D tensor, `rows` not a 1-D integer tile, or `col` not an `index`.
    pub fn gather(
        &mut self,
        tensor: Value,
        rows: Value,
        col: Value,
        cols: u64,
    ) -> BuildResult<Value> {
        let elem = self.tensor_elem(OpKind::Gather, tensor)?;
        let r = self.peek(OpKind::Gather, 1, rows)?;
        let n = r.tile_shape().and_then(|s| s.first().copied()).unwrap_or(0);
        self.one(
            OpKind::Gather,
            &[tensor, rows, col],
            vec![],
            Type::tile(&[n, cols], elem),
        )
    }

    /// `tile.store %tensor, offsets…, %value`: elements outside the tensor are dropped.
    ///
    /// # Errors
    /// Not a tensor, offsets other than one `index` per dimension, or a value that is not
    /// a tile of the tensor's rank and element type.
    pub fn store(&mut self, tensor: Value, offsets: &[Value], value: Value) -> BuildResult<()> {
        self.write(OpKind::Store, tensor, offsets, value)
    }

    /// `tile.store %tensor, offsets…, %mask, %value`: only the elements where the `i1` tile
    /// `mask` (of the value's shape) is true are written; elements outside the tensor are
    /// dropped.
    ///
    /// # Errors
    /// As [`Builder::store`], or a mask that is not an `i1` tile of the value's shape.
    pub fn store_masked(
        &mut self,
        tensor: Value,
        offsets: &[Value],
        mask: Value,
        value: Value,
    ) -> BuildResult<()> {
        self.write_masked(OpKind::Store, tensor, offsets, Some(mask), value)
    }

    /// `tile.atomic_add %tensor, offsets…, %mask, %value`: adds only where the `i1` tile
    /// `mask` (of the value's shape) is true.
    ///
    /// # Errors
    /// As [`Builder::atomic_add`], or a mask that is not an `i1` tile of the value's shape.
    pub fn atomic_add_masked(
        &mut self,
        tensor: Value,
        offsets: &[Value],
        mask: Value,
        value: Value,
    ) -> BuildResult<()> {
        self.write_masked(OpKind::AtomicAdd, tensor, offsets, Some(mask), value)
    }

    /// `tile.atomic_add %tensor, offsets…, %value` into an f32 tensor.
    ///
    /// # Errors
    /// As [`Builder::store`], or a tensor of another element type.
    pub fn atomic_add(
        &mut self,
        tensor: Value,
        offsets: &[Value],
        value: Value,
    ) -> BuildResult<()> {
        self.write(OpKind::AtomicAdd, tensor, offsets, value)
    }

    /// `tile.wait_flag %flags, %pos, %value`: wait until `flags[pos] == value` (acquire at
    /// GPU scope; see [`OpKind::WaitFlag`]).
    ///
    /// # Errors
    /// `flags` not a 1-D i32 tensor, or `pos` or `value` not an `index`.
    pub fn wait_flag(&mut self, flags: Value, pos: Value, value: Value) -> BuildResult<()> {
        self.leaf(OpKind::WaitFlag, &[flags, pos, value], vec![], &[])
            .map(|_| ())
    }

    /// `tile.release_flag %flags, %pos, %value`: after the program's writes, set
    /// `flags[pos] = value` (release at GPU scope; see [`OpKind::ReleaseFlag`]).
    ///
    /// # Errors
    /// As [`Builder::wait_flag`].
    pub fn release_flag(&mut self, flags: Value, pos: Value, value: Value) -> BuildResult<()> {
        self.leaf(OpKind::ReleaseFlag, &[flags, pos, value], vec![], &[])
            .map(|_| ())
    }

    /// `%old = tile.arrive_flag %flags, %pos`: after the program's writes, add 1 to
    /// `flags[pos]`; the value before (see [`OpKind::ArriveFlag`]).
    ///
    /// # Errors
    /// `flags` not a 1-D i32 tensor, or `pos` not an `index`.
    pub fn arrive_flag(&mut self, flags: Value, pos: Value) -> BuildResult<Value> {
        self.leaf(OpKind::ArriveFlag, &[flags, pos], vec![], &[Type::INDEX])
            .map(|r| r[0])
    }

    fn write(&mut self, kind: OpKind, t: Value, offsets: &[Value], v: Value) -> BuildResult<()> {
        self.write_masked(kind, t, offsets, None, v)
    }

    fn write_masked(
        &mut self,
        kind: OpKind,
        t: Value,
        offsets: &[Value],
        mask: Option<Value>,
        v: Value,
    ) -> BuildResult<()> {
        let ops: Vec<Value> = std::iter::once(t)
            .chain(offsets.iter().copied())
            .chain(mask)
            .chain([v])
            .collect();
        self.leaf(kind, &ops, vec![], &[]).map(|_| ())
    }

    /// `tile.dot %a, %b, %acc`: a (M×K) · b (K×N) + acc (M×N), of acc's type.
    ///
    /// # Errors
    /// Shapes that do not chain, or element types the verifier's dot rule refuses.
    pub fn dot(&mut self, a: Value, b: Value, acc: Value) -> BuildResult<Value> {
        self.dot_with(a, b, acc, Precision::Ieee)
    }

    /// [`Builder::dot`] with a `precision` (`Tf32`: f32 operands read as tf32).
    ///
    /// # Errors
    /// As [`Builder::dot`], or tf32 with operands other than f32.
    pub fn dot_with(&mut self, a: Value, b: Value, acc: Value, p: Precision) -> BuildResult<Value> {
        let t = self.peek(OpKind::Dot, 2, acc)?;
        let attrs = match p {
            Precision::Ieee => vec![],
            Precision::Tf32 => vec![(Precision::ATTR, p.into())],
        };
        self.one(OpKind::Dot, &[a, b, acc], attrs, t)
    }

    /// `tile.convert %a` to element type `elem`, keeping the shape.
    ///
    /// # Errors
    /// A tensor operand.
    pub fn convert(&mut self, a: Value, elem: ScalarType) -> BuildResult<Value> {
        let t = self.peek(OpKind::Convert, 0, a)?.with_elem(elem);
        self.one(OpKind::Convert, &[a], vec![], t)
    }

    /// `tile.transpose %a` of a 2-D tile.
    ///
    /// # Errors
    /// Not a 2-D tile.
    pub fn transpose(&mut self, a: Value) -> BuildResult<Value> {
        let t = self.peek(OpKind::Transpose, 0, a)?;
        let r = match (t.tile_shape(), t.elem()) {
            (Some(&[m, n]), Some(e)) => Type::tile(&[n, m], e),
            _ => t,
        };
        self.one(OpKind::Transpose, &[a], vec![], r)
    }

    /// `tile.reshape %a` to `shape` (row-major, the same number of elements).
    ///
    /// # Errors
    /// Another number of elements, or not a tile.
    pub fn reshape(&mut self, a: Value, shape: &[u64]) -> BuildResult<Value> {
        self.reshaped(OpKind::Reshape, a, shape)
    }

    /// `tile.extract_slice %a {offsets}` of shape `sizes`: element `c` of the result is
    /// element `offsets + c` of `a` (MLIR's `tensor.extract_slice`, unit strides).
    ///
    /// # Errors
    /// Not a tile, or a slice that does not fit in `a` (from the verifier, at the end).
    pub fn extract_slice(
        &mut self,
        a: Value,
        offsets: &[u64],
        sizes: &[u64],
    ) -> BuildResult<Value> {
        let t = self.peek(OpKind::ExtractSlice, 0, a)?;
        let elem = t.elem().unwrap_or(ScalarType::F32);
        let offs = offsets
            .iter()
            .map(|&o| Attribute::Int(i64::try_from(o).unwrap_or(i64::MAX)))
            .collect();
        self.one(
            OpKind::ExtractSlice,
            &[a],
            vec![("offsets", Attribute::Array(offs))],
            Type::tile(sizes, elem),
        )
    }

    /// `tile.broadcast %a` to `shape`: each dimension of `a` is 1 or `shape`'s, or `a` is a
    /// scalar.
    ///
    /// # Errors
    /// A dimension that is neither 1 nor the result's, or ranks that differ.
    pub fn broadcast(&mut self, a: Value, shape: &[u64]) -> BuildResult<Value> {
        self.reshaped(OpKind::Broadcast, a, shape)
    }

    /// `tile.splat %s` to a tile of `shape` holding the scalar `s` everywhere.
    ///
    /// # Errors
    /// `s` not a scalar.
    pub fn splat(&mut self, s: Value, shape: &[u64]) -> BuildResult<Value> {
        self.reshaped(OpKind::Splat, s, shape)
    }

    /// An op of one operand whose result is a tile of `shape` and the operand's elements.
    fn reshaped(&mut self, kind: OpKind, a: Value, shape: &[u64]) -> BuildResult<Value> {
        let t = self.peek(kind, 0, a)?;
        let elem = t.elem().unwrap_or(ScalarType::F32);
        self.one(kind, &[a], vec![], Type::tile(shape, elem))
    }

    /// `tile.reduce %a {dim, kind}`: dimension `dim` combined with `kind`, kept as size 1.
    ///
    /// # Errors
    /// Not a tile, or `dim` not below its rank.
    pub fn reduce(&mut self, a: Value, dim: usize, kind: ReduceKind) -> BuildResult<Value> {
        let t = self.peek(OpKind::Reduce, 0, a)?;
        let r = match (t.tile_shape(), t.elem()) {
            (Some(s), Some(e)) if dim < s.len() => {
                let mut s = s.to_vec();
                s[dim] = 1;
                Type::tile(&s, e)
            }
            _ => t,
        };
        let attrs = vec![("dim", int(dim)), (ReduceKind::ATTR, kind.into())];
        self.one(OpKind::Reduce, &[a], attrs, r)
    }

    /// `tile.iota {dim} : tile<shape x elem>`: each element is its coordinate along `dim`.
    ///
    /// # Errors
    /// `elem` not `i32`, `i64` or `index`, or `dim` not below the rank.
    pub fn iota(&mut self, shape: &[u64], elem: ScalarType, dim: usize) -> BuildResult<Value> {
        self.one(
            OpKind::Iota,
            &[],
            vec![("dim", int(dim))],
            Type::tile(shape, elem),
        )
    }

    /// `tile.zeros : tile<shape x elem>`.
    ///
    /// # Errors
    /// None for a tile type; kept a `Result` like the other methods.
    pub fn zeros(&mut self, shape: &[u64], elem: ScalarType) -> BuildResult<Value> {
        self.one(OpKind::Zeros, &[], vec![], Type::tile(shape, elem))
    }
}

/// An integer attribute from a dimension or count.
fn int(x: usize) -> Attribute {
    Attribute::Int(i64::try_from(x).unwrap_or(i64::MAX))
}
