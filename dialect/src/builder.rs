//! A builder for frontends that make IR without text (a tensor compiler calling tilec as a
//! library). Ops are appended to the innermost open block; structured ops take closures
//! that fill their regions.
//!
//! ```
//! use tilec_dialect::{Builder, Expr, Module, ScalarType::*, Type, verify};
//! let mut m = Module::new();
//! let mut b = Builder::new(&mut m);
//! b.kernel("scale", &[("X", Type::Tensor { rank: 1, elem: F32 }), ("N", Type::INDEX)],
//!     vec![Expr::binary("ceildiv", Expr::Arg("N".into()), Expr::Int(128)).unwrap()],
//!     |b, args| {
//!         let pid = b.program_id(0);
//!         let c128 = b.constant_index(128);
//!         let off = b.int_op(tilec_dialect::OpKind::MulI, pid, c128);
//!         let x = b.load(args[0], &[off], Type::tile(&[128], F32));
//!         let y = b.unary(tilec_dialect::OpKind::Exp, x);
//!         b.store(args[0], &[off], y);
//!     });
//! verify(&m).unwrap();
//! ```
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
use crate::ir::{Block, Module, Operation, Value};
use crate::location::Location;
use crate::ops::OpKind;
use crate::types::{ScalarType, Type};
use std::sync::Arc;

/// Appends ops to a [`Module`].
pub struct Builder<'m> {
    m: &'m mut Module,
    blocks: Vec<Block>,
    /// The file part of the ops' locations.
    scope: Arc<str>,
    /// A location given to every op instead of the numbered ones.
    fixed: Option<Location>,
    /// The id of the next op.
    next_id: u32,
}

impl<'m> Builder<'m> {
    /// A builder that appends kernels to `m`.
    pub fn new(m: &'m mut Module) -> Self {
        Builder {
            m,
            blocks: vec![],
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

    /// The location of the next op, and its id taken.
    fn take_loc(&mut self) -> Location {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        match &self.fixed {
            Some(l) => l.clone(),
            None => Location::new(self.scope.clone(), id, 0),
        }
    }

    /// The module being built.
    pub fn module(&self) -> &Module {
        self.m
    }

    /// Append a generic op with the given operands, attributes and result types; returns
    /// its results. Outside any kernel body, the op goes to the module's top level.
    pub fn op(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        results: &[Type],
    ) -> Vec<Value> {
        let mut op = Operation::new(kind, self.take_loc());
        op.operands = operands.to_vec();
        op.attrs = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        op.results = results
            .iter()
            .map(|t| self.m.new_value(t.clone(), None))
            .collect();
        let rs = op.results.clone();
        self.push(op);
        rs
    }

    fn push(&mut self, op: Operation) {
        match self.blocks.last_mut() {
            Some(b) => b.ops.push(op),
            None => self.m.ops.push(op),
        }
    }

    fn one(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        ty: Type,
    ) -> Value {
        self.op(kind, operands, attrs, &[ty])[0]
    }

    /// Build a `tile.kernel @name(args) {grid = grid}`; `body` gets the argument values and
    /// fills the body; `tile.return` is appended.
    pub fn kernel(
        &mut self,
        name: &str,
        args: &[(&str, Type)],
        grid: Vec<Expr>,
        body: impl FnOnce(&mut Self, &[Value]),
    ) {
        let mut op = Operation::new(OpKind::Kernel, self.take_loc());
        op.symbol = Some(name.to_string());
        op.attrs.insert(
            "grid".into(),
            Attribute::Array(grid.into_iter().map(Attribute::Expr).collect()),
        );
        let vals: Vec<Value> = args
            .iter()
            .map(|(n, t)| self.m.new_value(t.clone(), Some(n.to_string())))
            .collect();
        self.blocks.push(Block {
            args: vals.clone(),
            ops: vec![],
        });
        body(self, &vals);
        self.op(OpKind::Return, &[], &[], &[]);
        let block = self.blocks.pop().expect("kernel block");
        op.regions.push(block);
        self.push(op);
    }

    /// Build a `tile.for %i = lb to ub step step` carrying `inits`; `body` gets the
    /// induction variable and the carried values and returns the values to yield.
    pub fn for_loop(
        &mut self,
        lb: Value,
        ub: Value,
        step: Value,
        inits: &[Value],
        body: impl FnOnce(&mut Self, Value, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let loc = self.take_loc();
        let iv = self.m.new_value(Type::INDEX, None);
        let tys: Vec<Type> = inits.iter().map(|&v| self.m.ty(v).clone()).collect();
        let carried: Vec<Value> = tys
            .iter()
            .map(|t| self.m.new_value(t.clone(), None))
            .collect();
        let mut args = vec![iv];
        args.extend(&carried);
        self.blocks.push(Block { args, ops: vec![] });
        let ys = body(self, iv, &carried);
        self.op(OpKind::Yield, &ys, &[], &[]);
        let block = self.blocks.pop().expect("for block");
        let mut op = Operation::new(OpKind::For, loc);
        op.operands = [lb, ub, step]
            .into_iter()
            .chain(inits.iter().copied())
            .collect();
        op.results = tys
            .iter()
            .map(|t| self.m.new_value(t.clone(), None))
            .collect();
        op.regions.push(block);
        let rs = op.results.clone();
        self.push(op);
        rs
    }

    /// `tile.constant {value = v} : index`.
    pub fn constant_index(&mut self, v: i64) -> Value {
        self.one(
            OpKind::Constant,
            &[],
            &[("value", Attribute::Int(v))],
            Type::INDEX,
        )
    }
    /// `tile.constant {value = v} : f32` (or another float type).
    pub fn constant_float(&mut self, v: f64, ty: ScalarType) -> Value {
        self.one(
            OpKind::Constant,
            &[],
            &[("value", Attribute::Float(v))],
            Type::Scalar(ty),
        )
    }
    /// `tile.program_id {dim = d} : index`.
    pub fn program_id(&mut self, dim: i64) -> Value {
        self.one(
            OpKind::ProgramId,
            &[],
            &[("dim", Attribute::Int(dim))],
            Type::INDEX,
        )
    }
    /// An integer binary op (`tile.addi`, `tile.muli`, `tile.ceildiv`, …) on `a` and `b`.
    pub fn int_op(&mut self, kind: OpKind, a: Value, b: Value) -> Value {
        let t = self.m.ty(a).clone();
        self.one(kind, &[a, b], &[], t)
    }
    /// A float elementwise binary op (`tile.add`, …).
    pub fn binary(&mut self, kind: OpKind, a: Value, b: Value) -> Value {
        let t = self.m.ty(a).clone();
        self.one(kind, &[a, b], &[], t)
    }
    /// A float elementwise unary op (`tile.exp`, …).
    pub fn unary(&mut self, kind: OpKind, a: Value) -> Value {
        let t = self.m.ty(a).clone();
        self.one(kind, &[a], &[], t)
    }
    /// `tile.load %t, offsets… : ty`.
    pub fn load(&mut self, tensor: Value, offsets: &[Value], ty: Type) -> Value {
        let ops: Vec<Value> = std::iter::once(tensor)
            .chain(offsets.iter().copied())
            .collect();
        self.one(OpKind::Load, &ops, &[], ty)
    }
    /// `tile.store %t, offsets…, %value`.
    pub fn store(&mut self, tensor: Value, offsets: &[Value], value: Value) {
        let ops: Vec<Value> = std::iter::once(tensor)
            .chain(offsets.iter().copied())
            .chain([value])
            .collect();
        self.op(OpKind::Store, &ops, &[], &[]);
    }
    /// `tile.dot %a, %b, %acc`.
    pub fn dot(&mut self, a: Value, b: Value, acc: Value) -> Value {
        let t = self.m.ty(acc).clone();
        self.one(OpKind::Dot, &[a, b, acc], &[], t)
    }
    /// `tile.zeros : ty`.
    pub fn zeros(&mut self, ty: Type) -> Value {
        self.one(OpKind::Zeros, &[], &[], ty)
    }
    /// `tile.convert %a : elem` keeping the shape.
    pub fn convert(&mut self, a: Value, elem: ScalarType) -> Value {
        let t = self.m.ty(a).with_elem(elem);
        self.one(OpKind::Convert, &[a], &[], t)
    }
}
