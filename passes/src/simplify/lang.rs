//! The e-graph language of `tile-simplify`: the pure float tile ops as [`TileLang`] nodes,
//! and [`TileAnalysis`], which carries each e-class's type (shape and dtype) and, when
//! every element is one known value, that constant.
//!
//! Textual form (egg's s-expressions), used by the rule patterns and the tests:
//!
//! - `(add ?x ?y)` … `(min ?x ?y)`, `(neg ?x)` … `(relu ?x)`: elementwise ops on tiles or float
//!   scalars
//! - `(dot ?a ?b ?c)`: `tile.dot`
//! - `(transpose ?x)`: `tile.transpose`
//! - `(convert T ?x)`, `(reshape T ?x)`, `(broadcast T ?x)`: the op with result type `T`
//! - `(splat T ?s)`, `(zeros T)`: a tile of type `T` of the scalar `?s` / of +0
//! - `(select ?c ?x ?y)`: `tile.select` (`?c` is an `i1` scalar)
//! - `tile<4x8xbf16>`, `f32`: a type literal ([`TyLit`])
//! - `#0.5:f32`: a float scalar constant ([`FConst`])
//! - `%12:tile<4x8xf32>`: an opaque value of the IR: a block argument, a load, an op outside the
//!   language ([`LeafRef`])

use egg::{Analysis, DidMerge, Id};
use std::fmt;
use std::str::FromStr;
use tilec_dialect::interp::{convert_float, float_binary, float_unary, round_to};
use tilec_dialect::{OpKind, ScalarType, Type};

/// A scalar or tile type, small enough to sit in an e-node (`Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TyLit {
    /// 0 for a scalar, else the tile's rank (1 to 3).
    pub rank: u8,
    /// The dimensions; those past `rank` are 0.
    pub dims: [u64; 3],
    /// The element type.
    pub elem: ScalarType,
}

impl TyLit {
    /// A scalar type.
    pub fn scalar(elem: ScalarType) -> TyLit {
        TyLit {
            rank: 0,
            dims: [0; 3],
            elem,
        }
    }
    /// A tile type (`None` for a rank above 3 or 0).
    pub fn tile(shape: &[u64], elem: ScalarType) -> Option<TyLit> {
        if shape.is_empty() || shape.len() > 3 {
            return None;
        }
        let mut dims = [0; 3];
        dims[..shape.len()].copy_from_slice(shape);
        Some(TyLit {
            rank: shape.len() as u8,
            dims,
            elem,
        })
    }
    /// From an IR type (scalars and tiles only).
    pub fn from_type(t: &Type) -> Option<TyLit> {
        match t {
            Type::Scalar(s) => Some(TyLit::scalar(*s)),
            Type::Tile { shape, elem, .. } => TyLit::tile(shape, *elem),
            _ => None,
        }
    }
    /// The IR type.
    pub fn to_type(self) -> Type {
        if self.rank == 0 {
            Type::Scalar(self.elem)
        } else {
            Type::tile(self.shape(), self.elem)
        }
    }
    /// The dimensions (empty for a scalar).
    pub fn shape(&self) -> &[u64] {
        &self.dims[..self.rank as usize]
    }
    /// The number of elements (1 for a scalar).
    pub fn elems(&self) -> u64 {
        self.shape().iter().product()
    }
    /// Whether this is a tile type.
    pub fn is_tile(&self) -> bool {
        self.rank > 0
    }
    /// Same shape, another element type.
    pub fn with_elem(self, elem: ScalarType) -> TyLit {
        TyLit { elem, ..self }
    }
    /// A 2-D type with its dimensions swapped (others unchanged).
    pub fn transposed(self) -> TyLit {
        if self.rank != 2 {
            return self;
        }
        TyLit {
            dims: [self.dims[1], self.dims[0], 0],
            ..self
        }
    }
}

impl fmt::Display for TyLit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_type())
    }
}

impl FromStr for TyLit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(e) = ScalarType::from_name(s) {
            return Ok(TyLit::scalar(e));
        }
        let inner = s
            .strip_prefix("tile<")
            .and_then(|r| r.strip_suffix('>'))
            .ok_or_else(|| format!("not a type: {s}"))?;
        // `index` has an `x` of its own.
        let (dims, elem) = match inner.strip_suffix("xindex") {
            Some(d) => (d, "index"),
            None => inner
                .rsplit_once('x')
                .ok_or_else(|| format!("not a tile type: {s}"))?,
        };
        let elem = ScalarType::from_name(elem).ok_or_else(|| format!("bad element type in {s}"))?;
        let shape: Vec<u64> = dims
            .split('x')
            .map(|d| d.parse().map_err(|_| format!("bad dimension in {s}")))
            .collect::<Result<_, _>>()?;
        TyLit::tile(&shape, elem).ok_or_else(|| format!("bad rank in {s}"))
    }
}

/// A float scalar constant: its value (exact in `elem`, as `f32` bits) and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FConst {
    /// `f32::to_bits` of the value.
    pub bits: u32,
    /// The float type.
    pub elem: ScalarType,
}

impl FConst {
    /// The constant `x` rounded to `elem`.
    pub fn new(x: f32, elem: ScalarType) -> FConst {
        FConst {
            bits: round_to(elem, x).to_bits(),
            elem,
        }
    }
    /// The value.
    pub fn value(&self) -> f32 {
        f32::from_bits(self.bits)
    }
}

impl fmt::Display for FConst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:?}:{}", self.value(), self.elem)
    }
}

impl FromStr for FConst {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let body = s.strip_prefix('#').ok_or("not a constant")?;
        let (v, e) = body.rsplit_once(':').ok_or("constant without a type")?;
        let elem = ScalarType::from_name(e)
            .filter(|e| e.is_float())
            .ok_or("constant of a non-float type")?;
        let x: f32 = v.parse().map_err(|_| format!("bad constant {v}"))?;
        Ok(FConst::new(x, elem))
    }
}

/// An IR value the e-graph does not look into, with its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeafRef {
    /// The value's handle (`Value.0`).
    pub id: u32,
    /// Its type.
    pub ty: TyLit,
}

impl fmt::Display for LeafRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}:{}", self.id, self.ty)
    }
}

impl FromStr for LeafRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let body = s.strip_prefix('%').ok_or("not a leaf")?;
        let (id, ty) = body.split_once(':').ok_or("leaf without a type")?;
        Ok(LeafRef {
            id: id.parse().map_err(|_| format!("bad leaf id {id}"))?,
            ty: ty.parse()?,
        })
    }
}

// The variants are documented in the module's table (egg's macro takes no docs on them).
#[allow(missing_docs)]
mod node {
    use super::{FConst, Id, LeafRef, TyLit};
    use egg::define_language;

    define_language! {
        /// The pure float tile ops, as e-nodes.
        pub enum TileLang {
            "add" = Add([Id; 2]),
            "sub" = Sub([Id; 2]),
            "mul" = Mul([Id; 2]),
            "div" = Div([Id; 2]),
            "max" = Max([Id; 2]),
            "min" = Min([Id; 2]),
            "neg" = Neg([Id; 1]),
            "abs" = Abs([Id; 1]),
            "exp" = Exp([Id; 1]),
            "exp2" = Exp2([Id; 1]),
            "log" = Log([Id; 1]),
            "sqrt" = Sqrt([Id; 1]),
            "rsqrt" = Rsqrt([Id; 1]),
            "tanh" = Tanh([Id; 1]),
            "relu" = Relu([Id; 1]),
            "dot" = Dot([Id; 3]),
            "transpose" = Transpose([Id; 1]),
            "convert" = Convert([Id; 2]),
            "reshape" = Reshape([Id; 2]),
            "broadcast" = Broadcast([Id; 2]),
            "splat" = Splat([Id; 2]),
            "zeros" = Zeros([Id; 1]),
            "select" = Select([Id; 3]),
            Leaf(LeafRef),
            Const(FConst),
            Ty(TyLit),
        }
    }
}
pub use node::TileLang;

/// The float binary ops and their e-node constructors, in op-table order.
pub const BINARY: [(OpKind, &str); 6] = [
    (OpKind::Add, "add"),
    (OpKind::Sub, "sub"),
    (OpKind::Mul, "mul"),
    (OpKind::Div, "div"),
    (OpKind::Max, "max"),
    (OpKind::Min, "min"),
];

/// The float unary ops, in op-table order.
pub const UNARY: [(OpKind, &str); 9] = [
    (OpKind::Neg, "neg"),
    (OpKind::Abs, "abs"),
    (OpKind::Exp, "exp"),
    (OpKind::Exp2, "exp2"),
    (OpKind::Log, "log"),
    (OpKind::Sqrt, "sqrt"),
    (OpKind::Rsqrt, "rsqrt"),
    (OpKind::Tanh, "tanh"),
    (OpKind::Relu, "relu"),
];

impl TileLang {
    /// The IR op this node stands for (`None` for leaves, constants and types).
    pub fn op_kind(&self) -> Option<OpKind> {
        use TileLang::*;
        Some(match self {
            Add(_) => OpKind::Add,
            Sub(_) => OpKind::Sub,
            Mul(_) => OpKind::Mul,
            Div(_) => OpKind::Div,
            Max(_) => OpKind::Max,
            Min(_) => OpKind::Min,
            Neg(_) => OpKind::Neg,
            Abs(_) => OpKind::Abs,
            Exp(_) => OpKind::Exp,
            Exp2(_) => OpKind::Exp2,
            Log(_) => OpKind::Log,
            Sqrt(_) => OpKind::Sqrt,
            Rsqrt(_) => OpKind::Rsqrt,
            Tanh(_) => OpKind::Tanh,
            Relu(_) => OpKind::Relu,
            Dot(_) => OpKind::Dot,
            Transpose(_) => OpKind::Transpose,
            Convert(_) => OpKind::Convert,
            Reshape(_) => OpKind::Reshape,
            Broadcast(_) => OpKind::Broadcast,
            Splat(_) => OpKind::Splat,
            Zeros(_) => OpKind::Zeros,
            Select(_) => OpKind::Select,
            Const(_) => OpKind::Constant,
            Leaf(_) | Ty(_) => return None,
        })
    }

    /// The node for an elementwise op on `args` (`None` if `kind` is none or the arity differs).
    pub fn elementwise(kind: OpKind, args: &[Id]) -> Option<TileLang> {
        use TileLang::*;
        Some(match (kind, args) {
            (OpKind::Add, &[a, b]) => Add([a, b]),
            (OpKind::Sub, &[a, b]) => Sub([a, b]),
            (OpKind::Mul, &[a, b]) => Mul([a, b]),
            (OpKind::Div, &[a, b]) => Div([a, b]),
            (OpKind::Max, &[a, b]) => Max([a, b]),
            (OpKind::Min, &[a, b]) => Min([a, b]),
            (OpKind::Neg, &[a]) => Neg([a]),
            (OpKind::Abs, &[a]) => Abs([a]),
            (OpKind::Exp, &[a]) => Exp([a]),
            (OpKind::Exp2, &[a]) => Exp2([a]),
            (OpKind::Log, &[a]) => Log([a]),
            (OpKind::Sqrt, &[a]) => Sqrt([a]),
            (OpKind::Rsqrt, &[a]) => Rsqrt([a]),
            (OpKind::Tanh, &[a]) => Tanh([a]),
            (OpKind::Relu, &[a]) => Relu([a]),
            _ => return None,
        })
    }

    /// The child of this node that is a type literal (the first child of convert,
    /// reshape, broadcast, splat and zeros).
    pub fn type_child(&self) -> Option<Id> {
        match self {
            TileLang::Convert([t, _])
            | TileLang::Reshape([t, _])
            | TileLang::Broadcast([t, _])
            | TileLang::Splat([t, _])
            | TileLang::Zeros([t]) => Some(*t),
            _ => None,
        }
    }
}

/// What the analysis knows about an e-class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// The type of the class's values (for a type literal: the type it names).
    pub ty: TyLit,
    /// Whether the class is a type literal, not a value.
    pub is_type: bool,
    /// The value every element has, exact in `ty.elem`, when known.
    pub constant: Option<f32>,
}

impl Facts {
    fn value(ty: TyLit, constant: Option<f32>) -> Facts {
        Facts {
            ty,
            is_type: false,
            constant,
        }
    }
    /// Whether the constant is `c`, bit for bit (so `+0` is not `−0`).
    pub fn is_const(&self, c: f32) -> bool {
        self.constant.is_some_and(|x| x.to_bits() == c.to_bits())
    }
}

/// The float ops whose folding is exact and implementation-independent (correctly
/// rounded in IEEE 754): `exp`, `log`, `tanh`, `rsqrt` … are approximations on the GPU,
/// so folding them at compile time would change what the kernel computes.
fn foldable(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Add
            | OpKind::Sub
            | OpKind::Mul
            | OpKind::Div
            | OpKind::Max
            | OpKind::Min
            | OpKind::Neg
            | OpKind::Abs
            | OpKind::Relu
            | OpKind::Sqrt
    )
}

/// The analysis: types and constants; folding of constants into splats.
#[derive(Clone, Debug, Default)]
pub struct TileAnalysis;

/// The e-graph of `tile-simplify`.
pub type EGraph = egg::EGraph<TileLang, TileAnalysis>;

fn same_const(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

impl Analysis<TileLang> for TileAnalysis {
    type Data = Facts;

    fn make(egraph: &mut EGraph, enode: &TileLang) -> Facts {
        let d = |i: &Id| egraph[*i].data;
        use TileLang::*;
        match enode {
            Leaf(l) => Facts::value(l.ty, None),
            Const(c) => Facts::value(TyLit::scalar(c.elem), Some(c.value())),
            Ty(t) => Facts {
                ty: *t,
                is_type: true,
                constant: None,
            },
            Zeros([t]) => Facts::value(d(t).ty, Some(0.0)),
            Splat([t, s]) => Facts::value(d(t).ty, d(s).constant),
            Add([a, b]) | Sub([a, b]) | Mul([a, b]) | Div([a, b]) | Max([a, b]) | Min([a, b]) => {
                let (x, y) = (d(a), d(b));
                let kind = enode.op_kind().expect("op");
                let c = match (x.constant, y.constant) {
                    (Some(p), Some(q)) if foldable(kind) => float_binary(kind, x.ty.elem, p, q),
                    _ => None,
                };
                Facts::value(x.ty, c)
            }
            Neg([a]) | Abs([a]) | Exp([a]) | Exp2([a]) | Log([a]) | Sqrt([a]) | Rsqrt([a])
            | Tanh([a]) | Relu([a]) => {
                let x = d(a);
                let kind = enode.op_kind().expect("op");
                let c = x
                    .constant
                    .filter(|_| foldable(kind))
                    .and_then(|p| float_unary(kind, x.ty.elem, p));
                Facts::value(x.ty, c)
            }
            Dot([a, b, c]) => {
                let (x, y, z) = (d(a), d(b), d(c));
                // All three constant: fold with the interpreter's summation order.
                let k = x.ty.dims[1];
                let folded = match (x.constant, y.constant, z.constant) {
                    (Some(p), Some(q), Some(r)) if k <= 1 << 16 => {
                        let mut s = 0.0f32;
                        for _ in 0..k {
                            s = p.mul_add(q, s);
                        }
                        Some(round_to(z.ty.elem, s + r))
                    }
                    _ => None,
                };
                Facts::value(z.ty, folded)
            }
            Transpose([a]) => {
                let x = d(a);
                Facts::value(x.ty.transposed(), x.constant)
            }
            Convert([t, a]) => {
                let (t, x) = (d(t), d(a));
                Facts::value(
                    x.ty.with_elem(t.ty.elem),
                    x.constant.map(|c| convert_float(t.ty.elem, c)),
                )
            }
            Reshape([t, a]) | Broadcast([t, a]) => Facts::value(d(t).ty, d(a).constant),
            Select([_, a, b]) => {
                let (x, y) = (d(a), d(b));
                let c = match (x.constant, y.constant) {
                    (Some(p), Some(q)) if p.to_bits() == q.to_bits() => Some(p),
                    _ => None,
                };
                Facts::value(x.ty, c)
            }
        }
    }

    fn merge(&mut self, a: &mut Facts, b: Facts) -> DidMerge {
        // Every rule is exact, so two equal classes must agree on every fact; a
        // disagreement is a wrong rule, never bad input.
        assert_eq!(
            a.ty, b.ty,
            "tile-simplify: merged e-classes of different types"
        );
        assert_eq!(
            a.is_type, b.is_type,
            "tile-simplify: merged a type with a value"
        );
        match (a.constant, b.constant) {
            (Some(x), Some(y)) => {
                assert!(
                    same_const(x, y),
                    "tile-simplify: merged e-classes with different constants {x:?} and {y:?}"
                );
                DidMerge(false, false)
            }
            (None, Some(y)) => {
                a.constant = Some(y);
                DidMerge(true, false)
            }
            (Some(_), None) => DidMerge(false, true),
            (None, None) => DidMerge(false, false),
        }
    }

    fn modify(egraph: &mut EGraph, id: Id) {
        // Constant folding: a class whose every element is known gets the canonical
        // node for that value (`#c` for a scalar, `(splat T #c)` for a tile, and
        // `(zeros T)` for +0).
        let f = egraph[id].data;
        let (Some(c), false) = (f.constant, f.is_type) else {
            return;
        };
        if !f.ty.elem.is_float() {
            return;
        }
        let k = egraph.add(TileLang::Const(FConst::new(c, f.ty.elem)));
        let node = if f.ty.is_tile() {
            let t = egraph.add(TileLang::Ty(f.ty));
            if c.to_bits() == 0 {
                // +0 everywhere: also `tile.zeros`, which needs no scalar.
                let z = egraph.add(TileLang::Zeros([t]));
                egraph.union(id, z);
            }
            egraph.add(TileLang::Splat([t, k]))
        } else {
            k
        };
        egraph.union(id, node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_print_and_parse_back() {
        for t in ["tile<4x8xbf16>", "f32", "tile<2x3x4xindex>", "i1"] {
            assert_eq!(t.parse::<TyLit>().unwrap().to_string(), t);
        }
        assert_eq!(
            "#0.1:bf16".parse::<FConst>().unwrap(),
            FConst::new(0.1, ScalarType::BF16)
        );
        assert_eq!(
            "#-0.0:f32".parse::<FConst>().unwrap().bits,
            (-0.0f32).to_bits()
        );
        let l: LeafRef = "%12:tile<4x8xf32>".parse().unwrap();
        assert_eq!((l.id, l.to_string()), (12, "%12:tile<4x8xf32>".to_string()));
        assert!("tile<4x8>".parse::<TyLit>().is_err());
    }

    #[test]
    #[should_panic(expected = "different constants")]
    fn merge_asserts_the_facts_agree() {
        let mut eg = EGraph::new(TileAnalysis);
        let a = eg.add(TileLang::Const(FConst::new(1.0, ScalarType::F32)));
        let b = eg.add(TileLang::Const(FConst::new(2.0, ScalarType::F32)));
        eg.union(a, b);
    }
}
