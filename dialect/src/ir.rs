//! The in-memory IR: a [`Module`] of kernels; each op owns its regions; every region is one
//! [`Block`] (structured control flow, as MLIR's `scf`); SSA values are `u32` handles into
//! the module's value table, printed as `%name`.

use crate::attr::Attribute;
use crate::location::Location;
use crate::ops::OpKind;
use crate::types::Type;
use std::collections::BTreeMap;
use std::fmt;

/// An SSA value: an index into [`Module::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%v{}", self.0)
    }
}

/// What the module knows about a value.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueInfo {
    /// Its type.
    pub ty: Type,
    /// The name it had in the source or was given by a builder (without `%`); the printer
    /// keeps it where it is unique, so files round-trip with their names.
    pub name: Option<String>,
}

/// A block: arguments and a list of ops, the last of which is a terminator.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Block arguments (kernel arguments; loop induction variable and carried values).
    pub args: Vec<Value>,
    /// The ops, in order.
    pub ops: Vec<Operation>,
}

/// Attributes of an op, ordered by name (the printer prints them in this order).
pub type AttrMap = BTreeMap<String, Attribute>;

/// One operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// Which op.
    pub kind: OpKind,
    /// The symbol name of a `tile.kernel` (`@gemm`), without `@`.
    pub symbol: Option<String>,
    /// Operands.
    pub operands: Vec<Value>,
    /// Results.
    pub results: Vec<Value>,
    /// Attributes.
    pub attrs: AttrMap,
    /// Regions, each a single block.
    pub regions: Vec<Block>,
    /// Where it came from.
    pub loc: Location,
}

impl Operation {
    /// A new op with no operands, results, attributes or regions.
    pub fn new(kind: OpKind, loc: Location) -> Self {
        Operation {
            kind,
            symbol: None,
            operands: vec![],
            results: vec![],
            attrs: AttrMap::new(),
            regions: vec![],
            loc,
        }
    }

    /// `tile.if %cond { ops } else { tile.yield }` with no results, at `loc`: the
    /// then-region is `ops`, closed by a `tile.yield` unless they already end with one.
    pub fn if_then(cond: Value, mut ops: Vec<Operation>, loc: Location) -> Self {
        if ops.last().is_none_or(|o| o.kind != OpKind::Yield) {
            ops.push(Operation::new(OpKind::Yield, loc.clone()));
        }
        let mut o = Operation::new(OpKind::If, loc.clone());
        o.operands = vec![cond];
        o.regions = vec![
            Block { args: vec![], ops },
            Block {
                args: vec![],
                ops: vec![Operation::new(OpKind::Yield, loc)],
            },
        ];
        o
    }

    /// The attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&Attribute> {
        self.attrs.get(name)
    }

    /// A kernel's cluster shape: its `cluster` attribute `[x, y, z]` (each size clamped to
    /// 1..=16, as the verifier bounds them; a missing size is 1), or [1, 1, 1] without one.
    pub fn cluster_shape(&self) -> [i64; 3] {
        let mut c = [1; 3];
        if let Some(a) = self.attr("cluster").and_then(Attribute::as_array) {
            for (d, x) in a.iter().filter_map(Attribute::as_int).take(3).enumerate() {
                c[d] = x.clamp(1, 16);
            }
        }
        c
    }

    /// The integer attribute `name`.
    pub fn int_attr(&self, name: &str) -> Option<i64> {
        self.attrs.get(name).and_then(Attribute::as_int)
    }

    /// The string attribute `name`.
    pub fn str_attr(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).and_then(Attribute::as_str)
    }

    /// Visit this op and every op nested in it, outer before inner.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Operation)) {
        f(self);
        for r in &self.regions {
            for op in &r.ops {
                op.walk(f);
            }
        }
    }

    /// How deep regions nest inside this op: 0 for an op without regions, 1 for one whose
    /// regions hold no op with regions, and so on. A pass that wraps ops in one more region
    /// checks it against [`crate::parser::MAX_NESTING`], which the verifier holds every
    /// module to.
    pub fn region_depth(&self) -> usize {
        self.regions
            .iter()
            .flat_map(|r| &r.ops)
            .map(|o| 1 + o.region_depth())
            .max()
            .unwrap_or(usize::from(!self.regions.is_empty()))
    }

    /// Visit this op and every nested op mutably, outer before inner.
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Operation)) {
        f(self);
        for r in &mut self.regions {
            for op in &mut r.ops {
                op.walk_mut(f);
            }
        }
    }
}

/// A translation unit: kernels and the value table they share.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// Every value of the module.
    pub values: Vec<ValueInfo>,
    /// Top-level ops (`tile.kernel`s).
    pub ops: Vec<Operation>,
}

impl Module {
    /// An empty module.
    pub fn new() -> Self {
        Self::default()
    }

    /// Create a value of type `ty`, optionally named.
    pub fn new_value(&mut self, ty: Type, name: Option<String>) -> Value {
        let v = Value(self.values.len() as u32);
        self.values.push(ValueInfo { ty, name });
        v
    }

    /// The type of `v`.
    ///
    /// # Panics
    /// If `v` is not a value of this module (a handle from another module).
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v.0 as usize].ty
    }

    /// The type of `v`, or `None` for a handle this module does not have.
    pub fn try_ty(&self, v: Value) -> Option<&Type> {
        self.values.get(v.0 as usize).map(|i| &i.ty)
    }

    /// The source name of `v`, if any.
    pub fn name(&self, v: Value) -> Option<&str> {
        self.values
            .get(v.0 as usize)
            .and_then(|i| i.name.as_deref())
    }

    /// The kernels of the module.
    pub fn kernels(&self) -> impl Iterator<Item = &Operation> {
        self.ops.iter().filter(|o| o.kind == OpKind::Kernel)
    }

    /// Visit every op, outer before inner.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Operation)) {
        for op in &self.ops {
            op.walk(f);
        }
    }

    /// Count the ops of each kind (all nesting levels).
    pub fn op_count(&self, kind: OpKind) -> usize {
        let mut n = 0;
        self.walk(&mut |o| n += (o.kind == kind) as usize);
        n
    }
}
