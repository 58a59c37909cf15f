//! Attributes: compile-time constants attached to ops (`{dim = 0, kind = "add"}`).

use crate::types::Type;
use std::fmt;

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    /// A signed integer (`128`, `-1`).
    Int(i64),
    /// A floating-point number (`1.0`, `-2.5e-3`); printed so that it parses back to the same bits.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A string (`"slt"`), with `\"`, `\\`, `\n` escapes.
    Str(String),
    /// A list (`[1, 2, 3]`).
    Array(Vec<Attribute>),
    /// A type (`tile<16x16xf32>`).
    Type(Type),
    /// A symbol reference (`@gemm`).
    Symbol(String),
    /// An expression over the kernel's scalar arguments (`ceildiv(%N, 256)`), used for grids.
    Expr(Expr),
    /// A dictionary (`{BK = 64, BM = 128}`), keys in order; MLIR's `DictionaryAttr`. A
    /// kernel's `constants` are one.
    Dict(std::collections::BTreeMap<String, Attribute>),
}

impl Attribute {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attribute::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attribute::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The float (integers convert), if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Attribute::Float(f) => Some(*f),
            Attribute::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Attribute]> {
        match self {
            Attribute::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attribute::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The entries, if this is a dictionary.
    pub fn as_dict(&self) -> Option<&std::collections::BTreeMap<String, Attribute>> {
        match self {
            Attribute::Dict(d) => Some(d),
            _ => None,
        }
    }
}

/// The deepest grid expression the verifier accepts: the launch manifest writes each level
/// as two JSON levels, and JSON readers (serde_json's 128, for one) limit nesting.
pub const MAX_GRID_EXPR_DEPTH: usize = 32;

/// An integer expression over the named scalar arguments of a kernel: how the launch grid
/// follows from the problem sizes. Evaluated by the launcher (see `docs/manifest.md`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A constant.
    Int(i64),
    /// The value of the kernel argument with this name (without `%`).
    Arg(String),
    /// ⌈a / b⌉ for non-negative a and positive b.
    CeilDiv(Box<Expr>, Box<Expr>),
    /// a × b.
    Mul(Box<Expr>, Box<Expr>),
    /// a + b.
    Add(Box<Expr>, Box<Expr>),
    /// min(a, b).
    Min(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The function names the text form uses, with their constructors' arity (all 2).
    pub const FUNCTIONS: [&'static str; 4] = ["ceildiv", "mul", "add", "min"];

    /// Build a binary node from its function name (`"ceildiv"`).
    pub fn binary(name: &str, a: Expr, b: Expr) -> Option<Expr> {
        let (a, b) = (Box::new(a), Box::new(b));
        Some(match name {
            "ceildiv" => Expr::CeilDiv(a, b),
            "mul" => Expr::Mul(a, b),
            "add" => Expr::Add(a, b),
            "min" => Expr::Min(a, b),
            _ => return None,
        })
    }

    /// ⌈self / rhs⌉: a grid dimension that covers `self` elements with tiles of `rhs`.
    pub fn ceil_div(self, rhs: impl Into<Expr>) -> Expr {
        Expr::CeilDiv(Box::new(self), Box::new(rhs.into()))
    }

    /// min(self, rhs).
    pub fn min(self, rhs: impl Into<Expr>) -> Expr {
        Expr::Min(Box::new(self), Box::new(rhs.into()))
    }

    /// Evaluate with `arg` giving argument values; `None` on a missing argument or a
    /// division by zero.
    pub fn eval(&self, arg: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        Some(match self {
            Expr::Int(i) => *i,
            Expr::Arg(n) => arg(n)?,
            Expr::CeilDiv(a, b) => {
                let (a, b) = (a.eval(arg)?, b.eval(arg)?);
                if b <= 0 {
                    return None;
                }
                a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0)
            }
            Expr::Mul(a, b) => a.eval(arg)?.checked_mul(b.eval(arg)?)?,
            Expr::Add(a, b) => a.eval(arg)?.checked_add(b.eval(arg)?)?,
            Expr::Min(a, b) => a.eval(arg)?.min(b.eval(arg)?),
        })
    }

    /// How deeply the expression nests: 1 for a constant or an argument, 1 + the deeper
    /// operand for a function.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Int(_) | Expr::Arg(_) => 1,
            Expr::CeilDiv(a, b) | Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Min(a, b) => {
                1 + a.depth().max(b.depth())
            }
        }
    }

    /// The argument names this expression reads, in order of appearance.
    pub fn args(&self) -> Vec<&str> {
        let mut v = vec![];
        fn walk<'a>(e: &'a Expr, v: &mut Vec<&'a str>) {
            match e {
                Expr::Int(_) => {}
                Expr::Arg(n) => v.push(n),
                Expr::CeilDiv(a, b) | Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Min(a, b) => {
                    walk(a, v);
                    walk(b, v);
                }
            }
        }
        walk(self, &mut v);
        v
    }

    /// Print without the `%` sigil (`ceildiv(N, 256)`), as the manifest's `text` does.
    pub fn to_plain_string(&self) -> String {
        self.to_string().replace('%', "")
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, a, b) = match self {
            Expr::Int(i) => return write!(f, "{i}"),
            Expr::Arg(n) => return write!(f, "%{n}"),
            Expr::CeilDiv(a, b) => ("ceildiv", a, b),
            Expr::Mul(a, b) => ("mul", a, b),
            Expr::Add(a, b) => ("add", a, b),
            Expr::Min(a, b) => ("min", a, b),
        };
        write!(f, "{name}({a}, {b})")
    }
}

/// Write a string literal with escapes.
pub(crate) fn write_str_lit(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attribute::Int(i) => write!(f, "{i}"),
            // The non-finite values (a fold may make them) have words of their own.
            Attribute::Float(x) if x.is_nan() => f.write_str("nan"),
            Attribute::Float(x) if x.is_infinite() => {
                f.write_str(if *x > 0.0 { "inf" } else { "-inf" })
            }
            Attribute::Float(x) => {
                // `{:?}` is the shortest text that parses back to the same f64.
                let s = format!("{x:?}");
                if s.contains(['.', 'e', 'N', 'i']) {
                    f.write_str(&s)
                } else {
                    write!(f, "{s}.0")
                }
            }
            Attribute::Bool(b) => write!(f, "{b}"),
            Attribute::Str(s) => write_str_lit(f, s),
            Attribute::Array(a) => {
                f.write_str("[")?;
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Attribute::Type(t) => write!(f, "{t}"),
            Attribute::Symbol(s) => write!(f, "@{s}"),
            Attribute::Expr(e) => write!(f, "{e}"),
            Attribute::Dict(d) => {
                f.write_str("{")?;
                for (i, (k, v)) in d.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} = {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::Int(v)
    }
}

impl<R: Into<Expr>> std::ops::Add<R> for Expr {
    type Output = Expr;
    /// self + rhs.
    fn add(self, rhs: R) -> Expr {
        Expr::Add(Box::new(self), Box::new(rhs.into()))
    }
}

impl<R: Into<Expr>> std::ops::Mul<R> for Expr {
    type Output = Expr;
    /// self × rhs.
    fn mul(self, rhs: R) -> Expr {
        Expr::Mul(Box::new(self), Box::new(rhs.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expr_eval_and_print() {
        let e = Expr::binary("ceildiv", Expr::Arg("N".into()), Expr::Int(256)).unwrap();
        assert_eq!(e.to_string(), "ceildiv(%N, 256)");
        assert_eq!(e.to_plain_string(), "ceildiv(N, 256)");
        assert_eq!(e.eval(&|n| (n == "N").then_some(257)), Some(2));
        assert_eq!(e.eval(&|n| (n == "N").then_some(256)), Some(1));
        assert_eq!(e.eval(&|_| None), None);
        let f = (Expr::Arg("M".into()) * 2 + 1).min(8);
        assert_eq!(f.to_string(), "min(add(mul(%M, 2), 1), 8)");
        assert_eq!(f.eval(&|_| Some(3)), Some(7));
        assert_eq!(f.eval(&|_| Some(4)), Some(8));
    }

    #[test]
    fn float_prints_round_trip() {
        assert_eq!(Attribute::Float(1.0).to_string(), "1.0");
        assert_eq!(Attribute::Float(0.1).to_string(), "0.1");
        assert_eq!(Attribute::Float(1e-30).to_string(), "1e-30");
    }
}
