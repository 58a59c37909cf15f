//! A reference interpreter of level-1 tile IR: runs every program of a kernel's grid on
//! the CPU, one after another, for small shapes. It is the oracle that pass tests compare
//! against (a pass must not change what [`run`] computes), so its semantics are written
//! down exactly here:
//!
//! - **Floats** are held as `f32`; a `bf16`, `f16`, `e4m3` or `e5m2` value is an `f32` that
//!   the narrower type represents exactly. Every float op computes its `f32` result and
//!   rounds it to the element type, round-to-nearest-even ([`round_to`], using the `half`
//!   crate for the 16-bit types). Rounding to `e4m3` or `e5m2` also *saturates*, as PTX's
//!   `cvt.rn.satfinite` does: a result beyond the largest finite value (±448, ±57344),
//!   infinities included, becomes it; NaN stays NaN. For
//!   `+ - * / sqrt` that is the correctly rounded narrow result (f32 has more than
//!   2p + 2 bits for p = 8 and 11, so the double rounding is innocuous).
//! - `tile.max`/`tile.min` are IEEE 754-2019 `maximumNumber`/`minimumNumber`: a NaN
//!   operand yields the other operand, and −0 < +0. `tile.relu x` is `max(x, +0)`
//!   (so `relu(NaN) = +0`, `relu(−0) = +0`). `tile.rsqrt x` is `1 / sqrt(x)` (two
//!   roundings); `exp`, `exp2`, `log` and `tanh` are Rust's `f32` functions.
//! - **`tile.dot a, b, acc`**: for each (i, j) the products are summed in `f32` with k
//!   ascending, starting from +0 and each step one fused multiply-add
//!   (`s = fma(a[i,k], b[k,j], s)`; for bf16/f16 inputs the product is exact, so each step
//!   rounds once); then the accumulator is added, `r = s + acc[i,j]` in `f32`, and `r` is
//!   rounded to the accumulator type. Because `s` is never −0, `dot(a, b, 0) + c` equals
//!   `dot(a, b, c)` bit for bit (for an f32 accumulator).
//! - `tile.reduce` folds the elements along `dim` in ascending order in `f32`, starting
//!   from the first, and rounds once at the end.
//! - **`tile.convert`**: float → float rounds to nearest even; integer → float converts
//!   the value (through `f64` for bf16/f16); float → integer truncates toward zero and
//!   saturates (NaN → 0); integer → integer wraps (two's complement; `i1` keeps the low
//!   bit).
//! - **Integers** wrap in their type (`index`, `i64`: 64 bits; `i32`; `i1` is 0 or 1).
//!   `divi`/`remi` round toward zero, `ceildiv` rounds up; a zero divisor is an error.
//! - **Memory**: `tile.load` reads element `offset + i` per dimension and gives 0 where
//!   any coordinate is outside `[0, size)`; `tile.store` writes only in-bounds elements.
//!   Tensors are strided views of their own buffers (arguments never alias).
//! - **Grid**: the `grid` expressions are evaluated with the integer arguments; programs
//!   run in order with dimension 0 fastest. `tile.for` with `step <= 0` is an error.
//!   `tile.ctaid` / `tile.nctaid` are the program's coordinate and the grid's size along
//!   `dim`, as PTX's `%ctaid` / `%nctaid`; [`Limits::ctas`] launches a persistent kernel's
//!   smaller grid instead.
//! - **Cluster launch control** (`persistent{schedule=clc}`): CTAs launch one after another
//!   in linear order. A `tile.clc_try_cancel` succeeds while a CTA after the running one
//!   has not launched: it cancels the last such CTA (which then never launches) and writes
//!   its id into the response slot; otherwise, or once the running CTA has made
//!   [`Limits::clc_steals`] successful requests, it fails. `tile.clc_query` reads the
//!   slot's last response. The mbarrier ops are no-ops, and a kernel with a cluster of more
//!   than one CTA is refused (its CTAs would have to run together).
//! - **Clusters** (`cluster = [x, y, z]`): `tile.cluster_ctaid` is `%ctaid` mod the
//!   cluster's size along `dim`, `tile.cluster_ctarank` their linear rank (x fastest),
//!   `tile.clusterid` / `tile.nclusterid` `%ctaid` / `%nctaid` divided by it; the
//!   CTAs of a cluster run one after another like any others. [`Limits::ctas`] = n then
//!   launches (n, cluster y, cluster z) CTAs, n a multiple of the cluster's x.
//!
//! `tile.convert_layout` (the one GPU-level op it runs) is the identity, and it ignores
//! layouts, so it also checks `tile-assign-layouts`' output against its input.
//!
//! Verified IR never makes the interpreter panic: whatever it cannot run (GPU-level ops,
//! a bad argument, a division by zero, a tile larger than [`Limits::max_tile_elems`], a
//! run longer than [`Limits::max_ops`] op executions) is an [`InterpError`].

use crate::attr::Attribute;
use crate::ir::{Block, Module, Operation, Value};
use crate::ops::{OpClass, OpKind};
use crate::types::{ScalarType, Type};
use std::rc::Rc;

/// The most iterations the interpreter runs one `tile.while` before it reports an error.
pub const MAX_WHILE_ITERATIONS: u64 = 1 << 24;

/// Round an `f32` to the nearest value of the float type `elem` (ties to even). For
/// `f32` (and non-float types) the value is returned unchanged.
pub fn round_to(elem: ScalarType, x: f32) -> f32 {
    match elem {
        ScalarType::BF16 => half::bf16::from_f32(x).to_f32(),
        ScalarType::F16 => half::f16::from_f32(x).to_f32(),
        // 3 mantissa bits, normals from 2^-6, ±448 at most.
        ScalarType::E4M3 => round_fp8(x, 3, -6, 448.0),
        // 2 mantissa bits, normals from 2^-14, ±57344 at most.
        ScalarType::E5M2 => round_fp8(x, 2, -14, 57344.0),
        _ => x,
    }
}

/// Round an `f64` to the nearest value of the float type `elem` (ties to even) in one
/// step, as an MLIR float constant of that type is (a load's padding): `f64 → f32 → bf16`
/// could round twice. fp8 goes through a nearest-even `f32` ([`round_to`]).
pub fn round_f64_to(elem: ScalarType, x: f64) -> f32 {
    match elem {
        ScalarType::BF16 | ScalarType::F16 => round_to(elem, f64_to_f32_odd(x)),
        _ => round_to(elem, x as f32),
    }
}

/// `x` rounded to `f32` to odd: truncated, with the last bit set where that was inexact.
/// Rounding that to nearest-even in a type of at most 21 mantissa bits gives what one
/// direct rounding of `x` would (`half`'s `from_f64` goes through a nearest-even `f32`).
fn f64_to_f32_odd(x: f64) -> f32 {
    let f = x as f32;
    if x.is_nan() || f64::from(f) == x {
        return f;
    }
    if f.is_infinite() {
        return f32::MAX.copysign(f); // 0x7F7F_FFFF: odd already
    }
    let mut bits = f.to_bits();
    if f64::from(f).abs() > x.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// Round `x` to an 8-bit float of `mant` mantissa bits whose smallest normal exponent is
/// `emin` and whose largest finite value is `max`: to nearest, ties to even, and
/// *satfinite*, as PTX's `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` does: a result beyond
/// ±`max` (infinities included) is ±`max`, NaN stays NaN, and the sign of zero is kept.
fn round_fp8(x: f32, mant: i32, emin: i32, max: f64) -> f32 {
    if x.is_nan() {
        return x;
    }
    let a = f64::from(x).abs();
    if a == 0.0 {
        return x;
    }
    // The spacing of the format's values around `a` (subnormals share the smallest
    // normal binade's spacing). `a` is finite here or infinite (then clamped).
    // The binade of `a`, from its f32 exponent (f32 subnormals lie far below `emin`).
    let e = ((x.to_bits() >> 23) & 0xff) as i32 - 127;
    let q = 2f64.powi(e.max(emin) - mant);
    let r = if a.is_finite() {
        ((a / q).round_ties_even() * q).min(max)
    } else {
        max
    };
    (r as f32).copysign(x)
}

/// Whether every value of float type `from` is exactly a value of float type `to`
/// (`bf16 ⊆ f32`, `f16 ⊆ f32`, every type ⊆ itself).
pub fn float_subset(from: ScalarType, to: ScalarType) -> bool {
    from == to || (to == ScalarType::F32 && from.is_float())
}

/// IEEE 754-2019 `maximumNumber`: a NaN operand gives the other; −0 < +0.
pub fn max_num(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        // Equal: differ at most in the sign of zero; +0 wins.
        return if a.is_sign_negative() { b } else { a };
    }
    if a > b {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 `minimumNumber`: a NaN operand gives the other; −0 < +0.
pub fn min_num(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    if a < b {
        a
    } else {
        b
    }
}

/// The result of the float binary op `kind` (`tile.add` … `tile.min`) on values of type
/// `elem`, rounded to `elem`; `None` if `kind` is no float binary op.
pub fn float_binary(kind: OpKind, elem: ScalarType, a: f32, b: f32) -> Option<f32> {
    let r = match kind {
        OpKind::Add => a + b,
        OpKind::Sub => a - b,
        OpKind::Mul => a * b,
        OpKind::Div => a / b,
        OpKind::Max => max_num(a, b),
        OpKind::Min => min_num(a, b),
        _ => return None,
    };
    Some(round_to(elem, r))
}

/// The result of the float unary op `kind` (`tile.neg` … `tile.relu`) on a value of type
/// `elem`, rounded to `elem`; `None` if `kind` is no float unary op.
pub fn float_unary(kind: OpKind, elem: ScalarType, a: f32) -> Option<f32> {
    let r = match kind {
        OpKind::Neg => -a,
        OpKind::Abs => a.abs(),
        OpKind::Exp => a.exp(),
        OpKind::Exp2 => a.exp2(),
        OpKind::Log => a.ln(),
        OpKind::Sqrt => a.sqrt(),
        OpKind::Rsqrt => 1.0 / a.sqrt(),
        OpKind::Tanh => a.tanh(),
        OpKind::Relu => max_num(a, 0.0),
        _ => return None,
    };
    Some(round_to(elem, r))
}

/// Convert a float value (exact in its own type) to the float type `to`.
pub fn convert_float(to: ScalarType, x: f32) -> f32 {
    round_to(to, x)
}

/// Wrap an integer into the integer type `t` (`i1`: the low bit; `i32`: sign-extended).
pub fn wrap_int(t: ScalarType, x: i64) -> i64 {
    match t {
        ScalarType::I1 => x & 1,
        ScalarType::I32 => x as i32 as i64,
        _ => x,
    }
}

fn int_to_float(to: ScalarType, x: i64) -> f32 {
    match to {
        ScalarType::BF16 => half::bf16::from_f64(x as f64).to_f32(),
        ScalarType::F16 => half::f16::from_f64(x as f64).to_f32(),
        _ => x as f32,
    }
}

fn float_to_int(to: ScalarType, x: f32) -> i64 {
    // `as` truncates toward zero, saturates and maps NaN to 0.
    match to {
        ScalarType::I1 => (x as i64).clamp(0, 1),
        ScalarType::I32 => x as i32 as i64,
        _ => x as i64,
    }
}

/// Element storage of a tensor or a tile.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// Float elements (`f32`, `bf16`, `f16`), each exact in the element type.
    Float(Vec<f32>),
    /// Integer elements (`i1`, `i32`, `i64`, `index`), each wrapped to the element type.
    Int(Vec<i64>),
}

impl Data {
    fn zeros(elem: ScalarType, n: usize) -> Data {
        if elem.is_float() {
            Data::Float(vec![0.0; n])
        } else {
            Data::Int(vec![0; n])
        }
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::Float(v) => v.len(),
            Data::Int(v) => v.len(),
        }
    }
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A global tensor argument: a strided view (strides in elements) of its own buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Element type; must equal the kernel argument's.
    pub elem: ScalarType,
    /// Size of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// Distance in elements between neighbours along each dimension.
    pub strides: Vec<usize>,
    /// The buffer; element `(i0, i1, …)` is at `Σ i_d · strides[d]`.
    pub data: Data,
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

impl Tensor {
    /// A row-major float tensor holding `values` rounded to `elem`.
    ///
    /// # Panics
    /// If `values.len()` is not the product of `shape` or `elem` is not a float type.
    pub fn from_f32(elem: ScalarType, shape: &[usize], values: &[f32]) -> Tensor {
        assert!(
            elem.is_float(),
            "Tensor::from_f32 needs a float element type"
        );
        assert_eq!(
            values.len(),
            shape.iter().product::<usize>(),
            "values do not fill the shape"
        );
        let data = Data::Float(values.iter().map(|&x| round_to(elem, x)).collect());
        Tensor {
            elem,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            data,
        }
    }

    /// A row-major integer tensor holding `values` wrapped to `elem`.
    ///
    /// # Panics
    /// If `values.len()` is not the product of `shape` or `elem` is a float type.
    pub fn from_i64(elem: ScalarType, shape: &[usize], values: &[i64]) -> Tensor {
        assert!(
            elem.is_int(),
            "Tensor::from_i64 needs an integer element type"
        );
        assert_eq!(
            values.len(),
            shape.iter().product::<usize>(),
            "values do not fill the shape"
        );
        let data = Data::Int(values.iter().map(|&x| wrap_int(elem, x)).collect());
        Tensor {
            elem,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            data,
        }
    }

    /// A row-major tensor of zeros.
    pub fn zeros(elem: ScalarType, shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        Tensor {
            elem,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            data: Data::zeros(elem, n),
        }
    }

    /// A row-major tensor of `fill` (rounded to `elem`), e.g. to poison an output.
    pub fn filled(elem: ScalarType, shape: &[usize], fill: f32) -> Tensor {
        let n = shape.iter().product();
        if elem.is_float() {
            Tensor {
                elem,
                shape: shape.to_vec(),
                strides: row_major_strides(shape),
                data: Data::Float(vec![round_to(elem, fill); n]),
            }
        } else {
            Tensor::zeros(elem, shape)
        }
    }

    fn offset(&self, idx: &[usize]) -> usize {
        idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum()
    }

    /// The elements in row-major order of `shape`, as `f64` (floats and integers alike).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        let n: usize = self.shape.iter().product();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; self.shape.len()];
        for _ in 0..n {
            let o = self.offset(&idx);
            out.push(match &self.data {
                Data::Float(v) => v.get(o).map_or(f64::NAN, |&x| x as f64),
                Data::Int(v) => v.get(o).map_or(f64::NAN, |&x| x as f64),
            });
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }

    /// The float elements in row-major order of `shape` (`None` for an integer tensor).
    pub fn to_f32_vec(&self) -> Option<Vec<f32>> {
        match self.data {
            Data::Float(_) => Some(self.to_f64_vec().into_iter().map(|x| x as f32).collect()),
            Data::Int(_) => None,
        }
    }

    /// Check that the view fits its buffer and the element kind matches.
    fn check(&self) -> Result<(), String> {
        if self.shape.len() != self.strides.len() {
            return Err(format!(
                "{} dimension(s) but {} stride(s)",
                self.shape.len(),
                self.strides.len()
            ));
        }
        if matches!(self.data, Data::Float(_)) != self.elem.is_float() {
            return Err(format!(
                "element type {} does not match the data",
                self.elem
            ));
        }
        if self.shape.contains(&0) {
            return Ok(());
        }
        let mut last: usize = 0;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            last = (n - 1)
                .checked_mul(s)
                .and_then(|x| x.checked_add(last))
                .ok_or("the view's extent overflows")?;
        }
        if last >= self.data.len() {
            return Err(format!(
                "the view reaches element {last} of a buffer of {}",
                self.data.len()
            ));
        }
        Ok(())
    }
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A global tensor (for a `tensor<…>` argument). Stores write into it.
    Tensor(Tensor),
    /// An integer scalar (`index`, `i64`, `i32`, `i1`), wrapped to the argument's type.
    Int(i64),
    /// A float scalar, rounded to the argument's type.
    Float(f32),
}

impl ArgValue {
    /// The tensor, if this is one.
    pub fn tensor(&self) -> Option<&Tensor> {
        match self {
            ArgValue::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// What stops a run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    /// The module has no kernel of that name.
    #[error("no kernel named '@{0}' in the module")]
    NoKernel(String),
    /// Wrong number of arguments.
    #[error("kernel '@{kernel}' takes {expected} argument(s), {found} given")]
    ArgCount {
        /// The kernel.
        kernel: String,
        /// Its argument count.
        expected: usize,
        /// The count given.
        found: usize,
    },
    /// An argument does not fit the kernel's signature.
    #[error("argument {index} of '@{kernel}': {message}")]
    Arg {
        /// The kernel.
        kernel: String,
        /// Position of the argument.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The grid could not be evaluated.
    #[error("grid of '@{kernel}': {message}")]
    Grid {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// An op could not run (division by zero, a non-positive loop step, an op the
    /// interpreter does not run, a tile too large…).
    #[error("{loc}: '{op}': {message}")]
    Op {
        /// The op's location.
        loc: String,
        /// The op's name.
        op: &'static str,
        /// What happened.
        message: String,
    },
    /// The run executed more ops than [`Limits::max_ops`].
    #[error("the run exceeded its budget of {0} op executions")]
    Budget(u64),
}

/// Bounds on a run, so that any input ends in bounded time and memory.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most op executions (all programs together).
    pub max_ops: u64,
    /// Most elements of one tile.
    pub max_tile_elems: u64,
    /// Launch this many programs along x (and one along y and z, or the kernel's cluster
    /// extent there) instead of the kernel's `grid`: how a persistent kernel, whose `grid`
    /// is its tiles, is launched. With a `cluster`, a multiple of its x size. `None` (the
    /// default): the `grid`.
    pub ctas: Option<i64>,
    /// The most `tile.clc_try_cancel` requests of one CTA that succeed (see the module
    /// docs); the next one fails, which ends a work-stealing loop. `u64::MAX` (the
    /// default): every request succeeds while a CTA is left to cancel.
    pub clc_steals: u64,
    /// Launch the CTAs in reverse linear order (z slowest, x fastest, from the last).
    /// CUDA promises no order between CTAs, so a kernel whose result depends on it (one
    /// program overwriting elements another wrote) gives another result in one of the two
    /// orders. Flag waits then find their flags unset (they wait for earlier programs), and
    /// a kernel with `tile.clc_try_cancel` (which cancels CTAs from the end) is refused.
    /// Default false.
    pub reverse: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ops: 1 << 32,
            max_tile_elems: 1 << 24,
            ctas: None,
            clc_steals: u64::MAX,
            reverse: false,
        }
    }
}

/// A tile value.
#[derive(Clone, Debug, PartialEq)]
struct TileVal {
    shape: Vec<usize>,
    elem: ScalarType,
    data: Data,
}

/// A shared-memory buffer of `tile.smem_alloc`: `stages` row-major stages of `shape`.
#[derive(Debug)]
struct SmemVal {
    shape: Vec<usize>,
    data: Vec<f32>,
}

/// A runtime value.
#[derive(Clone, Debug)]
enum Val {
    Int(i64),
    Float(f32),
    Tile(Rc<TileVal>),
    /// A shared-memory buffer (one per program; its stages hold what was stored).
    Smem(Rc<std::cell::RefCell<SmemVal>>),
    /// A tensor: the index of the kernel argument holding it.
    Tensor(usize),
}

/// Run every program of kernel `kernel` of `m` on `args` (in the kernel's argument
/// order), with [`Limits::default`]. Stores write into the tensor arguments.
///
/// # Errors
/// See [`InterpError`]. The module should be verified; unverified IR gives errors, not
/// panics, but their wording may be poor.
pub fn run(m: &Module, kernel: &str, args: &mut [ArgValue]) -> Result<(), InterpError> {
    run_with(m, kernel, args, Limits::default())
}

/// [`run`] with explicit [`Limits`].
///
/// # Errors
/// As [`run`].
pub fn run_with(
    m: &Module,
    kernel: &str,
    args: &mut [ArgValue],
    limits: Limits,
) -> Result<(), InterpError> {
    let k = m
        .kernels()
        .find(|k| k.symbol.as_deref() == Some(kernel))
        .ok_or_else(|| InterpError::NoKernel(kernel.to_string()))?;
    let body = k
        .regions
        .first()
        .ok_or_else(|| InterpError::NoKernel(kernel.to_string()))?;
    if body.args.len() != args.len() {
        return Err(InterpError::ArgCount {
            kernel: kernel.into(),
            expected: body.args.len(),
            found: args.len(),
        });
    }
    let arg_err = |index: usize, message: String| InterpError::Arg {
        kernel: kernel.into(),
        index,
        message,
    };
    let mut env: Vec<Option<Val>> = vec![None; m.values.len()];
    let mut scalars = std::collections::HashMap::new();
    for (i, (&v, a)) in body.args.iter().zip(args.iter_mut()).enumerate() {
        let ty = m
            .try_ty(v)
            .ok_or_else(|| arg_err(i, "unknown value".into()))?;
        let val = match (ty, &mut *a) {
            (Type::Tensor { rank, elem }, ArgValue::Tensor(t)) => {
                if t.shape.len() != *rank as usize || t.elem != *elem {
                    return Err(arg_err(
                        i,
                        format!(
                            "expected a rank-{rank} {elem} tensor, found a rank-{} {} tensor",
                            t.shape.len(),
                            t.elem
                        ),
                    ));
                }
                t.check().map_err(|e| arg_err(i, e))?;
                Val::Tensor(i)
            }
            (Type::Scalar(s), ArgValue::Int(x)) if s.is_int() => {
                let x = wrap_int(*s, *x);
                if let Some(n) = m.name(v) {
                    scalars.insert(n.to_string(), x);
                }
                Val::Int(x)
            }
            (Type::Scalar(s), ArgValue::Float(x)) if s.is_float() => Val::Float(round_to(*s, *x)),
            (t, a) => {
                return Err(arg_err(
                    i,
                    format!("expected a value of type {t}, found {a:?}"),
                ))
            }
        };
        env[v.0 as usize] = Some(val);
    }
    // The grid.
    let grid_err = |message: String| InterpError::Grid {
        kernel: kernel.into(),
        message,
    };
    let dims = k
        .attr("grid")
        .and_then(Attribute::as_array)
        .ok_or_else(|| grid_err("missing 'grid'".into()))?;
    let mut grid = [1i64; 3];
    if dims.is_empty() || dims.len() > 3 {
        return Err(grid_err(format!("{} dimensions", dims.len())));
    }
    for (d, e) in dims.iter().enumerate() {
        let n = match e {
            Attribute::Int(i) => Some(*i),
            Attribute::Expr(e) => e.eval(&|name| scalars.get(name).copied()),
            _ => None,
        }
        .ok_or_else(|| grid_err(format!("cannot evaluate dimension {d} ({e})")))?;
        if n < 0 {
            return Err(grid_err(format!("dimension {d} is {n}")));
        }
        grid[d] = n;
    }
    let cluster = k.cluster_shape();
    if let Some(n) = limits.ctas {
        if n < 1 || n % cluster[0] != 0 {
            return Err(grid_err(format!(
                "{n} CTAs launched along x (a positive multiple of the cluster's {})",
                cluster[0]
            )));
        }
        // A persistent launch: clusters along x, one cluster's extent along y and z.
        grid = [n, cluster[1], cluster[2]];
    }
    if k_has(k, OpKind::ClcTryCancel) && cluster.iter().product::<i64>() > 1 {
        return Err(grid_err(
            "a cluster launch whose CTAs run together (a multicast try_cancel) is not \
             interpreted: the interpreter runs one CTA after another"
                .into(),
        ));
    }
    if limits.reverse && k_has(k, OpKind::ClcTryCancel) {
        return Err(grid_err(
            "a kernel with 'tile.clc_try_cancel' is launched in order (its requests cancel \
             CTAs from the end): not in reverse"
                .into(),
        ));
    }
    let total = grid[0].saturating_mul(grid[1]).saturating_mul(grid[2]);
    let mut mach = Machine {
        m,
        env,
        args,
        pid: [0; 3],
        grid,
        cluster,
        ops_left: limits.max_ops,
        limits,
        launch: Launch {
            current: 0,
            end: total,
            steals_left: limits.clc_steals,
            responses: std::collections::HashMap::new(),
        },
    };
    // CTAs launch in linear order (x fastest; or from the last, `reverse`); those a
    // try_cancel cancelled never do.
    while mach.launch.current < mach.launch.end {
        let c = if limits.reverse {
            total - 1 - mach.launch.current
        } else {
            mach.launch.current
        };
        mach.pid = [
            c % grid[0],
            (c / grid[0]) % grid[1],
            c / (grid[0] * grid[1]),
        ];
        mach.launch.steals_left = limits.clc_steals;
        mach.launch.responses.clear();
        mach.block(body)?;
        mach.launch.current += 1;
    }
    Ok(())
}

/// Whether kernel `k` holds an op of `kind`.
fn k_has(k: &Operation, kind: OpKind) -> bool {
    let mut any = false;
    k.walk(&mut |o| any |= o.kind == kind);
    any
}

/// The launch state of the grid, for cluster launch control.
struct Launch {
    /// The running CTA's linear id.
    current: i64,
    /// CTAs `end..` were cancelled by try_cancel requests.
    end: i64,
    /// Successful requests the running CTA may still make ([`Limits::clc_steals`]).
    steals_left: u64,
    /// The responses written, by (response buffer, slot): the cancelled CTA's id, or
    /// `None` for a failed request.
    responses: std::collections::HashMap<(u32, i64), Option<[i64; 3]>>,
}

struct Machine<'a> {
    m: &'a Module,
    env: Vec<Option<Val>>,
    args: &'a mut [ArgValue],
    pid: [i64; 3],
    grid: [i64; 3],
    cluster: [i64; 3],
    ops_left: u64,
    limits: Limits,
    launch: Launch,
}

type R<T> = Result<T, InterpError>;

fn op_err(op: &Operation, message: impl Into<String>) -> InterpError {
    InterpError::Op {
        loc: op.loc.to_string(),
        op: op.kind.name(),
        message: message.into(),
    }
}

fn bin_int(kind: OpKind, t: ScalarType, a: i64, b: i64) -> Result<i64, &'static str> {
    let r = match kind {
        OpKind::AddI => a.wrapping_add(b),
        OpKind::SubI => a.wrapping_sub(b),
        OpKind::MulI => a.wrapping_mul(b),
        OpKind::DivI | OpKind::RemI | OpKind::CeilDiv if b == 0 => return Err("division by zero"),
        OpKind::DivI => a.wrapping_div(b),
        OpKind::RemI => a.wrapping_rem(b),
        OpKind::CeilDiv => {
            let q = a.wrapping_div(b);
            if a.wrapping_rem(b) != 0 && ((a < 0) == (b < 0)) {
                q.wrapping_add(1)
            } else {
                q
            }
        }
        OpKind::MinI => a.min(b),
        OpKind::MaxI => a.max(b),
        _ => return Err("not an integer op"),
    };
    Ok(wrap_int(t, r))
}

impl Machine<'_> {
    fn get(&self, op: &Operation, v: Value) -> R<Val> {
        self.env
            .get(v.0 as usize)
            .and_then(Clone::clone)
            .ok_or_else(|| op_err(op, format!("operand {v} has no value")))
    }

    fn set(&mut self, op: &Operation, v: Value, val: Val) -> R<()> {
        let slot = self
            .env
            .get_mut(v.0 as usize)
            .ok_or_else(|| op_err(op, format!("result {v} is not a value of the module")))?;
        *slot = Some(val);
        Ok(())
    }

    fn result_type(&self, op: &Operation) -> R<&Type> {
        let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
        self.m
            .try_ty(r)
            .ok_or_else(|| op_err(op, "unknown result type"))
    }

    fn result_tile(&self, op: &Operation) -> R<(Vec<usize>, ScalarType)> {
        match self.result_type(op)? {
            Type::Tile { shape, elem, .. } => {
                let n: u64 = shape
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .unwrap_or(u64::MAX);
                if n > self.limits.max_tile_elems {
                    return Err(op_err(
                        op,
                        format!(
                            "a tile of {n} elements is larger than the interpreter's limit of {}",
                            self.limits.max_tile_elems
                        ),
                    ));
                }
                Ok((shape.iter().map(|&d| d as usize).collect(), *elem))
            }
            t => Err(op_err(op, format!("expected a tile result, found {t}"))),
        }
    }

    fn tile(&self, op: &Operation, i: usize) -> R<Rc<TileVal>> {
        let v = *op
            .operands
            .get(i)
            .ok_or_else(|| op_err(op, format!("missing operand {i}")))?;
        match self.get(op, v)? {
            Val::Tile(t) => Ok(t),
            _ => Err(op_err(op, format!("operand {i} is not a tile"))),
        }
    }

    fn int_tile(&self, op: &Operation, i: usize) -> R<Vec<i64>> {
        match &self.tile(op, i)?.data {
            Data::Int(v) => Ok(v.clone()),
            Data::Float(_) => Err(op_err(op, format!("operand {i} is not an integer tile"))),
        }
    }

    fn int(&self, op: &Operation, i: usize) -> R<i64> {
        let v = *op
            .operands
            .get(i)
            .ok_or_else(|| op_err(op, format!("missing operand {i}")))?;
        match self.get(op, v)? {
            Val::Int(x) => Ok(x),
            _ => Err(op_err(op, format!("operand {i} is not an integer"))),
        }
    }

    fn tensor_index(&self, op: &Operation) -> R<usize> {
        let v = *op
            .operands
            .first()
            .ok_or_else(|| op_err(op, "missing tensor operand"))?;
        match self.get(op, v)? {
            Val::Tensor(i) => Ok(i),
            _ => Err(op_err(op, "operand 0 is not a tensor")),
        }
    }

    fn tensor(&self, op: &Operation) -> R<&Tensor> {
        let i = self.tensor_index(op)?;
        self.args
            .get(i)
            .and_then(ArgValue::tensor)
            .ok_or_else(|| op_err(op, "operand 0 is not a tensor"))
    }

    /// Run a block; returns the operands of its terminator.
    fn block(&mut self, b: &Block) -> R<Vec<Val>> {
        for op in &b.ops {
            if self.ops_left == 0 {
                return Err(InterpError::Budget(self.limits.max_ops));
            }
            self.ops_left -= 1;
            match op.kind {
                OpKind::Return | OpKind::Yield => {
                    return op.operands.iter().map(|&v| self.get(op, v)).collect();
                }
                _ => self.op(op)?,
            }
        }
        Ok(vec![])
    }

    fn op(&mut self, op: &Operation) -> R<()> {
        let val = match op.kind.class() {
            OpClass::IntBinary => {
                let t = self
                    .result_type(op)?
                    .elem()
                    .ok_or_else(|| op_err(op, "bad result type"))?;
                if let Some(shape) = self.result_type(op)?.tile_shape().map(<[u64]>::to_vec) {
                    let (a, b) = (self.int_tile(op, 0)?, self.int_tile(op, 1)?);
                    let out = a
                        .iter()
                        .zip(&b)
                        .map(|(&x, &y)| bin_int(op.kind, t, x, y))
                        .collect::<Result<Vec<i64>, _>>()
                        .map_err(|e| op_err(op, e))?;
                    let shape = shape.iter().map(|&d| d as usize).collect();
                    tile_val(shape, t, Data::Int(out))
                } else {
                    let (a, b) = (self.int(op, 0)?, self.int(op, 1)?);
                    Val::Int(bin_int(op.kind, t, a, b).map_err(|e| op_err(op, e))?)
                }
            }
            OpClass::FloatBinary => self.elementwise(op, 2)?,
            OpClass::FloatUnary => self.elementwise(op, 1)?,
            // A layout change moves elements between threads; their values stay.
            OpClass::Gpu if op.kind == OpKind::ClcQuery => return self.clc_query(op),
            OpClass::Gpu if op.kind == OpKind::ClusterCtaRank => {
                let [x, y, z] = std::array::from_fn(|d| self.pid[d] % self.cluster[d]);
                Val::Int(x + self.cluster[0] * (y + self.cluster[1] * z))
            }
            OpClass::Gpu
                if matches!(
                    op.kind,
                    OpKind::ClusterCtaId | OpKind::ClusterId | OpKind::NumClusters
                ) =>
            {
                let d = op
                    .int_attr("dim")
                    .filter(|d| (0..3).contains(d))
                    .ok_or_else(|| op_err(op, "bad 'dim'"))? as usize;
                Val::Int(match op.kind {
                    OpKind::ClusterCtaId => self.pid[d] % self.cluster[d],
                    OpKind::ClusterId => self.pid[d] / self.cluster[d],
                    _ => self.grid[d] / self.cluster[d],
                })
            }
            OpClass::Gpu if matches!(op.kind, OpKind::CtaId | OpKind::NumCtas) => {
                let d = op
                    .int_attr("dim")
                    .filter(|d| (0..3).contains(d))
                    .ok_or_else(|| op_err(op, "bad 'dim'"))? as usize;
                Val::Int(if op.kind == OpKind::CtaId {
                    self.pid[d]
                } else {
                    self.grid[d]
                })
            }
            OpClass::Gpu if op.kind == OpKind::ConvertLayout => {
                let v = *op
                    .operands
                    .first()
                    .ok_or_else(|| op_err(op, "missing operand"))?;
                self.get(op, v)?
            }
            OpClass::Gpu
                if matches!(
                    op.kind,
                    OpKind::SmemAlloc
                        | OpKind::SmemStore
                        | OpKind::Mma
                        | OpKind::WaitGroup
                        | OpKind::WgmmaFence
                        | OpKind::CommitGroup
                        | OpKind::FenceProxyAsync
                        | OpKind::Barrier
                        | OpKind::MbarrierAlloc
                        | OpKind::MbarrierExpectTx
                        | OpKind::MbarrierWait
                        | OpKind::MbarrierArrive
                        | OpKind::TmaLoad
                        | OpKind::ClcTryCancel
                        | OpKind::CpAsync
                        | OpKind::CpAsyncCommitGroup
                        | OpKind::CpAsyncWaitGroup
                        | OpKind::SmemLoad
                ) =>
            {
                return self.cta_op(op);
            }
            OpClass::Gpu | OpClass::Terminator => {
                return Err(op_err(
                    op,
                    "the reference interpreter runs level-1 tile IR, and of the GPU-level ops \
                     only those of a laid-out kernel's products (shared-memory buffers, \
                     'tile.mma', TMA copies, mbarriers, waits, fences, barriers)",
                ))
            }
            OpClass::Structure | OpClass::Other => match op.kind {
                OpKind::For => return self.for_loop(op),
                OpKind::While => return self.while_loop(op),
                OpKind::If => {
                    let c = self.int(op, 0)?;
                    let region = op
                        .regions
                        .get(if c != 0 { 0 } else { 1 })
                        .ok_or_else(|| op_err(op, "missing region"))?;
                    let ys = self.block(region)?;
                    if ys.len() != op.results.len() {
                        return Err(op_err(op, "region yields the wrong number of values"));
                    }
                    for (&r, y) in op.results.iter().zip(ys) {
                        self.set(op, r, y)?;
                    }
                    return Ok(());
                }
                OpKind::Store | OpKind::AtomicAdd => return self.store(op),
                OpKind::WaitFlag | OpKind::ReleaseFlag | OpKind::ArriveFlag => {
                    return self.flag(op)
                }
                OpKind::ProgramId | OpKind::NumPrograms => {
                    let d = op
                        .int_attr("dim")
                        .filter(|d| (0..3).contains(d))
                        .ok_or_else(|| op_err(op, "bad 'dim'"))?
                        as usize;
                    Val::Int(if op.kind == OpKind::ProgramId {
                        self.pid[d]
                    } else {
                        self.grid[d]
                    })
                }
                OpKind::Constant => {
                    let t = self
                        .result_type(op)?
                        .elem()
                        .ok_or_else(|| op_err(op, "bad result type"))?;
                    match op.attr("value") {
                        Some(Attribute::Int(i)) if t.is_int() => Val::Int(wrap_int(t, *i)),
                        Some(a) if t.is_float() => {
                            let x = a.as_f64().ok_or_else(|| op_err(op, "bad 'value'"))?;
                            Val::Float(round_to(t, x as f32))
                        }
                        _ => return Err(op_err(op, "bad 'value'")),
                    }
                }
                OpKind::Dim => {
                    let t = self.tensor(op)?;
                    let d = op
                        .int_attr("dim")
                        .and_then(|d| usize::try_from(d).ok())
                        .filter(|&d| d < t.shape.len())
                        .ok_or_else(|| op_err(op, "bad 'dim'"))?;
                    Val::Int(t.shape[d] as i64)
                }
                OpKind::CmpI => {
                    use crate::ops::CmpPredicate as P;
                    let cmp: fn(i64, i64) -> bool = match P::of(op) {
                        Some(P::Eq) => |a, b| a == b,
                        Some(P::Ne) => |a, b| a != b,
                        Some(P::Slt) => |a, b| a < b,
                        Some(P::Sle) => |a, b| a <= b,
                        Some(P::Sgt) => |a, b| a > b,
                        Some(P::Sge) => |a, b| a >= b,
                        None => return Err(op_err(op, "bad 'predicate'")),
                    };
                    match self.result_type(op)?.tile_shape().map(<[u64]>::to_vec) {
                        Some(shape) => {
                            let (a, b) = (self.int_tile(op, 0)?, self.int_tile(op, 1)?);
                            let out = a.iter().zip(&b).map(|(&x, &y)| cmp(x, y) as i64).collect();
                            let shape = shape.iter().map(|&d| d as usize).collect();
                            tile_val(shape, ScalarType::I1, Data::Int(out))
                        }
                        None => Val::Int(cmp(self.int(op, 0)?, self.int(op, 1)?) as i64),
                    }
                }
                OpKind::Select => {
                    let c = *op
                        .operands
                        .first()
                        .ok_or_else(|| op_err(op, "missing operand"))?;
                    match self.get(op, c)? {
                        Val::Tile(_) => {
                            let c = self.int_tile(op, 0)?;
                            let (a, b) = (self.tile(op, 1)?, self.tile(op, 2)?);
                            let data = match (&a.data, &b.data) {
                                (Data::Float(x), Data::Float(y)) => Data::Float(
                                    (0..c.len())
                                        .map(|i| if c[i] != 0 { x[i] } else { y[i] })
                                        .collect(),
                                ),
                                (Data::Int(x), Data::Int(y)) => Data::Int(
                                    (0..c.len())
                                        .map(|i| if c[i] != 0 { x[i] } else { y[i] })
                                        .collect(),
                                ),
                                _ => return Err(op_err(op, "element kinds differ")),
                            };
                            tile_val(a.shape.clone(), a.elem, data)
                        }
                        _ => {
                            let c = self.int(op, 0)?;
                            let v = *op
                                .operands
                                .get(if c != 0 { 1 } else { 2 })
                                .ok_or_else(|| op_err(op, "missing operand"))?;
                            self.get(op, v)?
                        }
                    }
                }
                OpKind::Iota => {
                    let (shape, elem) = self.result_tile(op)?;
                    let d = op
                        .int_attr("dim")
                        .and_then(|d| usize::try_from(d).ok())
                        .filter(|&d| d < shape.len())
                        .ok_or_else(|| op_err(op, "bad 'dim'"))?;
                    let n: usize = shape.iter().product();
                    let mut idx = vec![0usize; shape.len()];
                    let mut out = Vec::with_capacity(n);
                    for _ in 0..n {
                        out.push(idx[d] as i64);
                        step_index(&mut idx, &shape);
                    }
                    tile_val(shape, elem, Data::Int(out))
                }
                OpKind::Load => self.load(op)?,
                OpKind::Extract => self.extract(op)?,
                OpKind::Gather => self.gather(op)?,
                OpKind::Dot => self.dot(op)?,
                OpKind::Convert => self.convert(op)?,
                OpKind::Transpose => {
                    let a = self.tile(op, 0)?;
                    let (shape, elem) = self.result_tile(op)?;
                    if a.shape.len() != 2
                        || shape.len() != 2
                        || a.shape[0] != shape[1]
                        || a.shape[1] != shape[0]
                    {
                        return Err(op_err(op, "bad shapes"));
                    }
                    let (r, c) = (a.shape[0], a.shape[1]);
                    let data = gather(&a.data, r * c, |i| (i % r) * c + i / r);
                    tile_val(shape, elem, data)
                }
                OpKind::ExtractSlice => {
                    let a = self.tile(op, 0)?;
                    let (shape, elem) = self.result_tile(op)?;
                    let offs = view_offsets(op, a.shape.len())?;
                    if shape.len() != a.shape.len()
                        || (0..shape.len()).any(|d| offs[d] + shape[d] > a.shape[d])
                    {
                        return Err(op_err(op, "the slice lies outside the tile"));
                    }
                    let n: usize = shape.iter().product();
                    let mut idx = vec![0usize; shape.len()];
                    let mut at = Vec::with_capacity(n);
                    for _ in 0..n {
                        let mut flat = 0;
                        for d in 0..shape.len() {
                            flat = flat * a.shape[d] + idx[d] + offs[d];
                        }
                        at.push(flat);
                        step_index(&mut idx, &shape);
                    }
                    tile_val(shape, elem, gather(&a.data, n, |i| at[i]))
                }
                OpKind::Reshape => {
                    let a = self.tile(op, 0)?;
                    let (shape, elem) = self.result_tile(op)?;
                    if shape.iter().product::<usize>() != a.data.len() {
                        return Err(op_err(op, "element counts differ"));
                    }
                    tile_val(shape, elem, a.data.clone())
                }
                OpKind::Broadcast => self.broadcast(op)?,
                OpKind::Reduce => self.reduce(op)?,
                OpKind::Splat => {
                    let (shape, elem) = self.result_tile(op)?;
                    let n = shape.iter().product();
                    let v = *op
                        .operands
                        .first()
                        .ok_or_else(|| op_err(op, "missing operand"))?;
                    let data = match self.get(op, v)? {
                        Val::Float(x) => Data::Float(vec![x; n]),
                        Val::Int(x) => Data::Int(vec![x; n]),
                        _ => return Err(op_err(op, "operand is not a scalar")),
                    };
                    tile_val(shape, elem, data)
                }
                OpKind::Zeros => {
                    let (shape, elem) = self.result_tile(op)?;
                    let n = shape.iter().product();
                    tile_val(shape, elem, Data::zeros(elem, n))
                }
                _ => return Err(op_err(op, "the reference interpreter cannot run this op")),
            },
        };
        let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
        self.set(op, r, val)
    }

    fn elementwise(&mut self, op: &Operation, arity: usize) -> R<Val> {
        let elem = self
            .result_type(op)?
            .elem()
            .ok_or_else(|| op_err(op, "bad result type"))?;
        let f = |a: f32, b: f32| -> R<f32> {
            let r = if arity == 2 {
                float_binary(op.kind, elem, a, b)
            } else {
                float_unary(op.kind, elem, a)
            };
            r.ok_or_else(|| op_err(op, "not a float op"))
        };
        let vals: Vec<Val> = op
            .operands
            .iter()
            .map(|&v| self.get(op, v))
            .collect::<R<_>>()?;
        if vals.len() != arity {
            return Err(op_err(op, format!("expects {arity} operand(s)")));
        }
        match (&vals[0], vals.get(1)) {
            (Val::Float(a), None) => Ok(Val::Float(f(*a, 0.0)?)),
            (Val::Float(a), Some(Val::Float(b))) => Ok(Val::Float(f(*a, *b)?)),
            (Val::Tile(a), rest) => {
                let b = match rest {
                    None => None,
                    Some(Val::Tile(b)) if b.shape == a.shape => Some(b.clone()),
                    _ => return Err(op_err(op, "operand shapes differ")),
                };
                let Data::Float(x) = &a.data else {
                    return Err(op_err(op, "expects float tiles"));
                };
                let out = match b.as_deref().map(|b| &b.data) {
                    None => x.iter().map(|&p| f(p, 0.0)).collect::<R<Vec<_>>>()?,
                    Some(Data::Float(y)) => x
                        .iter()
                        .zip(y)
                        .map(|(&p, &q)| f(p, q))
                        .collect::<R<Vec<_>>>()?,
                    Some(Data::Int(_)) => return Err(op_err(op, "expects float tiles")),
                };
                Ok(tile_val(a.shape.clone(), elem, Data::Float(out)))
            }
            _ => Err(op_err(op, "expects float tiles or scalars")),
        }
    }

    fn for_loop(&mut self, op: &Operation) -> R<()> {
        let (lb, ub, step) = (self.int(op, 0)?, self.int(op, 1)?, self.int(op, 2)?);
        if step <= 0 {
            return Err(op_err(op, format!("step {step} is not positive")));
        }
        let body = op
            .regions
            .first()
            .ok_or_else(|| op_err(op, "missing body"))?;
        let mut carried: Vec<Val> = op.operands[3..]
            .iter()
            .map(|&v| self.get(op, v))
            .collect::<R<_>>()?;
        if body.args.len() != carried.len() + 1 {
            return Err(op_err(op, "body arguments do not match the carried values"));
        }
        let mut iv = lb;
        while iv < ub {
            self.set(op, body.args[0], Val::Int(iv))?;
            for (&a, c) in body.args[1..].iter().zip(carried) {
                self.set(op, a, c)?;
            }
            carried = self.block(body)?;
            if carried.len() != body.args.len() - 1 {
                return Err(op_err(op, "body yields the wrong number of values"));
            }
            iv = match iv.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        if carried.len() != op.results.len() {
            return Err(op_err(op, "results do not match the carried values"));
        }
        for (&r, c) in op.results.iter().zip(carried) {
            self.set(op, r, c)?;
        }
        Ok(())
    }

    /// `tile.while`: the body runs at least once, then again while it yields a non-zero
    /// first value; at most [`MAX_WHILE_ITERATIONS`] iterations (then an error, not a hang).
    fn while_loop(&mut self, op: &Operation) -> R<()> {
        let body = op
            .regions
            .first()
            .ok_or_else(|| op_err(op, "missing body"))?;
        let mut carried: Vec<Val> = op
            .operands
            .iter()
            .map(|&v| self.get(op, v))
            .collect::<R<_>>()?;
        if body.args.len() != carried.len() {
            return Err(op_err(op, "body arguments do not match the carried values"));
        }
        let mut n = 0u64;
        loop {
            n += 1;
            if n > MAX_WHILE_ITERATIONS {
                return Err(op_err(
                    op,
                    format!("'tile.while' ran more than {MAX_WHILE_ITERATIONS} iterations"),
                ));
            }
            for (&a, c) in body.args.iter().zip(carried) {
                self.set(op, a, c)?;
            }
            let mut ys = self.block(body)?;
            if ys.len() != body.args.len() + 1 {
                return Err(op_err(
                    op,
                    "body must yield the continue flag and the carried values",
                ));
            }
            let go = match ys.remove(0) {
                Val::Int(i) => i != 0,
                _ => return Err(op_err(op, "the continue flag is not an i1")),
            };
            carried = ys;
            if !go {
                break;
            }
        }
        for (&r, c) in op.results.iter().zip(carried) {
            self.set(op, r, c)?;
        }
        Ok(())
    }

    fn offsets(&self, op: &Operation, rank: usize) -> R<Vec<i64>> {
        (1..=rank).map(|i| self.int(op, i)).collect()
    }

    /// `tile.extract`: one element, zero outside the tensor.
    fn extract(&mut self, op: &Operation) -> R<Val> {
        let t = self.tensor(op)?;
        let offs = self.offsets(op, t.shape.len())?;
        let mut off = Some(0usize);
        for (d, &c) in offs.iter().enumerate() {
            off = match off {
                Some(o) if c >= 0 && (c as u64) < t.shape[d] as u64 => {
                    Some(o + c as usize * t.strides[d])
                }
                _ => None,
            };
        }
        Ok(match (&t.data, off) {
            (Data::Float(src), Some(o)) => Val::Float(round_to(t.elem, src[o])),
            (Data::Int(src), Some(o)) => Val::Int(wrap_int(t.elem, src[o])),
            (Data::Float(_), None) => Val::Float(0.0),
            (Data::Int(_), None) => Val::Int(0),
        })
    }

    fn gather(&mut self, op: &Operation) -> R<Val> {
        let (shape, elem) = self.result_tile(op)?;
        let t = self.tensor(op)?;
        if t.shape.len() != 2 || shape.len() != 2 || t.elem != elem {
            return Err(op_err(op, "the tile does not match the tensor"));
        }
        let rows = self.int_tile(op, 1)?;
        let col = self.int(op, 2)?;
        let (r, c) = (shape[0], shape[1]);
        if rows.len() != r {
            return Err(op_err(op, "one row index per result row"));
        }
        let mut data = Data::zeros(elem, r * c);
        let padding = crate::ops::load_padding(op.attr("padding")).map_err(|e| op_err(op, e))?;
        if let Data::Float(out) = &mut data {
            out.fill(round_f64_to(elem, padding));
        }
        let inside = |x: i64, n: usize| x >= 0 && (x as u64) < n as u64;
        for i in 0..r {
            for j in 0..c {
                let cj = col.checked_add(j as i64).unwrap_or(-1);
                if !inside(rows[i], t.shape[0]) || !inside(cj, t.shape[1]) {
                    continue;
                }
                let o = rows[i] as usize * t.strides[0] + cj as usize * t.strides[1];
                match (&mut data, &t.data) {
                    (Data::Float(out), Data::Float(src)) => out[i * c + j] = round_to(elem, src[o]),
                    (Data::Int(out), Data::Int(src)) => out[i * c + j] = wrap_int(elem, src[o]),
                    _ => return Err(op_err(op, "element kinds differ")),
                }
            }
        }
        Ok(tile_val(shape, elem, data))
    }

    fn load(&mut self, op: &Operation) -> R<Val> {
        let (shape, elem) = self.result_tile(op)?;
        let t = self.tensor(op)?;
        if t.shape.len() != shape.len() || t.elem != elem {
            return Err(op_err(op, "the tile does not match the tensor"));
        }
        let offs = self.offsets(op, shape.len())?;
        let n: usize = shape.iter().product();
        let mut idx = vec![0usize; shape.len()];
        let mut data = Data::zeros(elem, n);
        let padding = crate::ops::load_padding(op.attr("padding")).map_err(|e| op_err(op, e))?;
        if let Data::Float(out) = &mut data {
            out.fill(round_f64_to(elem, padding));
        }
        for lin in 0..n {
            let mut off = Some(0usize);
            for d in 0..shape.len() {
                let c = offs[d]
                    .checked_add(idx[d] as i64)
                    .filter(|&c| c >= 0 && (c as u64) < t.shape[d] as u64);
                off = match (off, c) {
                    (Some(o), Some(c)) => Some(o + c as usize * t.strides[d]),
                    _ => None,
                };
            }
            if let Some(o) = off {
                match (&mut data, &t.data) {
                    (Data::Float(out), Data::Float(src)) => out[lin] = round_to(elem, src[o]),
                    (Data::Int(out), Data::Int(src)) => out[lin] = wrap_int(elem, src[o]),
                    _ => return Err(op_err(op, "element kinds differ")),
                }
            }
            step_index(&mut idx, &shape);
        }
        Ok(tile_val(shape, elem, data))
    }

    /// `tile.wait_flag` / `tile.release_flag` / `tile.arrive_flag`: programs run one after
    /// another, so a wait either finds its value, set by an earlier program, or would wait
    /// forever; an arrive adds 1 and gives the value before.
    fn flag(&mut self, op: &Operation) -> R<()> {
        let ti = self.tensor_index(op)?;
        let pos = self.int(op, 1)?;
        let want = if op.kind == OpKind::ArriveFlag {
            0
        } else {
            self.int(op, 2)? as i32 as i64
        };
        let pid = self.pid;
        let Some(ArgValue::Tensor(t)) = self.args.get_mut(ti) else {
            return Err(op_err(op, "operand 0 is not a tensor"));
        };
        let (Some(&len), Some(&stride), Data::Int(data)) =
            (t.shape.first(), t.strides.first(), &mut t.data)
        else {
            return Err(op_err(op, "the flags are not a 1-D integer tensor"));
        };
        if pos < 0 || pos as u64 >= len as u64 {
            return Err(op_err(
                op,
                format!("flag {pos} is outside the flag tensor of {len} element(s)"),
            ));
        }
        let Some(slot) = data.get_mut(pos as usize * stride) else {
            return Err(op_err(op, "flag outside the tensor's buffer"));
        };
        if op.kind == OpKind::ArriveFlag {
            let old = *slot;
            *slot = i64::from((old as i32).wrapping_add(1));
            let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
            return self.set(op, r, Val::Int(old));
        }
        if op.kind == OpKind::ReleaseFlag {
            *slot = want;
        } else if *slot != want {
            return Err(op_err(
                op,
                format!(
                    "program {pid:?} waits for flag {pos} == {want}, but it is {}: no program \
                     before it in launch order (x fastest) set it, so on a GPU it could wait \
                     forever",
                    *slot
                ),
            ));
        }
        Ok(())
    }

    fn store(&mut self, op: &Operation) -> R<()> {
        let ti = self.tensor_index(op)?;
        let rank = self.tensor(op)?.shape.len();
        let offs = self.offsets(op, rank)?;
        let value = self.tile(op, op.operands.len().saturating_sub(1))?;
        // A mask (before the value) keeps the elements where it is true.
        let mask = match op.operands.len() == rank + 3 {
            true => match &self.tile(op, rank + 1)?.data {
                Data::Int(m) if m.len() == value.data.len() => Some(m.clone()),
                _ => return Err(op_err(op, "the mask does not match the tile")),
            },
            false => None,
        };
        let Some(ArgValue::Tensor(t)) = self.args.get_mut(ti) else {
            return Err(op_err(op, "operand 0 is not a tensor"));
        };
        if value.shape.len() != rank || value.elem != t.elem {
            return Err(op_err(op, "the tile does not match the tensor"));
        }
        let mut idx = vec![0usize; rank];
        for lin in 0..value.data.len() {
            let mut off = Some(0usize);
            for d in 0..rank {
                let c = offs[d]
                    .checked_add(idx[d] as i64)
                    .filter(|&c| c >= 0 && (c as u64) < t.shape[d] as u64);
                off = match (off, c) {
                    (Some(o), Some(c)) => Some(o + c as usize * t.strides[d]),
                    _ => None,
                };
            }
            if mask.as_ref().is_some_and(|m| m[lin] == 0) {
                off = None;
            }
            if let Some(o) = off {
                match (&mut t.data, &value.data) {
                    (Data::Float(dst), Data::Float(src)) if op.kind == OpKind::AtomicAdd => {
                        dst[o] = round_to(t.elem, dst[o] + src[lin])
                    }
                    (Data::Float(dst), Data::Float(src)) => dst[o] = src[lin],
                    (Data::Int(dst), Data::Int(src)) => dst[o] = src[lin],
                    _ => return Err(op_err(op, "element kinds differ")),
                }
            }
            step_index(&mut idx, &value.shape);
        }
        Ok(())
    }

    /// The GPU-level ops of a laid-out kernel's products, with one program's semantics: a
    /// buffer holds what `tile.smem_store` put in a stage; `tile.mma` is `tile.dot` of its
    /// operands (A a tile, or a stage read by `a_major`; B a stage read by `b_major`; the
    /// accumulator ignored with `zero_acc`); waits return their operands; `tile.tma_load`
    /// copies its box into the stage at once (zeros outside the tensor, as TMA fills), so
    /// mbarriers, fences, commits and barriers do nothing (one program has no other threads).
    fn cta_op(&mut self, op: &Operation) -> R<()> {
        match op.kind {
            OpKind::SmemAlloc => {
                let Type::Smem { stages, shape, .. } = self.result_type(op)?.clone() else {
                    return Err(op_err(op, "expects an smem result"));
                };
                let mut shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
                if shape.len() == 1 {
                    shape.insert(0, 1);
                }
                if shape.len() != 2 {
                    return Err(op_err(op, "expects 1-D or 2-D stages"));
                }
                let n = (stages as usize).saturating_mul(shape.iter().product());
                if n as u64 > self.limits.max_tile_elems {
                    return Err(op_err(op, "buffer too large"));
                }
                let v = Val::Smem(Rc::new(std::cell::RefCell::new(SmemVal {
                    shape,
                    data: vec![0.0; n],
                })));
                self.set(op, op.results[0], v)
            }
            OpKind::SmemStore => {
                let t = self.tile(op, 0)?;
                let ring = *op
                    .operands
                    .get(1)
                    .ok_or_else(|| op_err(op, "missing operand"))?;
                let Val::Smem(buf) = self.get(op, ring)? else {
                    return Err(op_err(op, "expects a buffer"));
                };
                let stage =
                    usize::try_from(self.int(op, 2)?).map_err(|_| op_err(op, "negative stage"))?;
                let col = op.int_attr("col_offset").unwrap_or(0) as usize;
                let Data::Float(x) = &t.data else {
                    return Err(op_err(op, "expects a float tile"));
                };
                if op.attr("offsets").is_some() || op.attr("transpose").is_some() {
                    let mut b = buf.borrow_mut();
                    let at = stage_view(op, &b, stage, &t.shape)?;
                    for (i, &a) in at.iter().enumerate() {
                        b.data[a] = x[i];
                    }
                    return Ok(());
                }
                let mut b = buf.borrow_mut();
                let (r, c) = (b.shape[0], b.shape[1]);
                let at = stage * r * c;
                if t.shape.len() != 2
                    || t.shape[0] != r
                    || col + c > t.shape[1]
                    || at + r * c > b.data.len()
                {
                    return Err(op_err(op, "tile and stage shapes differ"));
                }
                for i in 0..r {
                    for j in 0..c {
                        b.data[at + i * c + j] = x[i * t.shape[1] + col + j];
                    }
                }
                Ok(())
            }
            OpKind::MbarrierAlloc => {
                let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
                self.set(op, r, Val::Int(0))
            }
            OpKind::TmaLoad => self.copy_box(op, 3, 4),
            OpKind::CpAsync => self.copy_box(op, 2, 3),
            OpKind::SmemLoad => {
                let Val::Smem(buf) = self.get(op, op.operands[0])? else {
                    return Err(op_err(op, "expects a buffer"));
                };
                let stage =
                    usize::try_from(self.int(op, 1)?).map_err(|_| op_err(op, "negative stage"))?;
                let (shape, elem) = self.result_tile(op)?;
                let b = buf.borrow();
                let at = stage_view(op, &b, stage, &shape)?;
                let data = Data::Float(at.iter().map(|&a| b.data[a]).collect());
                drop(b);
                let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
                self.set(op, r, tile_val(shape, elem, data))
            }
            OpKind::ClcTryCancel => {
                if op.attr("multicast").and_then(Attribute::as_bool) == Some(true) {
                    return Err(op_err(
                        op,
                        "a multicast try_cancel needs the cluster's CTAs to run together, \
                         which the interpreter does not do",
                    ));
                }
                let (resp, slot) = (op.operands[0], self.int(op, 2)?);
                let l = &mut self.launch;
                let got = if l.steals_left > 0 && l.end > l.current + 1 {
                    l.steals_left -= 1;
                    l.end -= 1;
                    let (gx, gy) = (self.grid[0], self.grid[1]);
                    Some([l.end % gx, (l.end / gx) % gy, l.end / (gx * gy)])
                } else {
                    None
                };
                l.responses.insert((resp.0, slot), got);
                Ok(())
            }
            OpKind::WaitGroup => {
                for (&a, &r) in op.operands.iter().zip(&op.results) {
                    let v = self.get(op, a)?;
                    self.set(op, r, v)?;
                }
                Ok(())
            }
            OpKind::Mma => {
                let v = self.mma(op)?;
                let r = *op.results.first().ok_or_else(|| op_err(op, "no result"))?;
                self.set(op, r, v)
            }
            _ => Ok(()),
        }
    }

    /// `%ok, %x, %y, %z = tile.clc_query %resp, %slot`: the response the last request
    /// into that slot got.
    fn clc_query(&mut self, op: &Operation) -> R<()> {
        let slot = self.int(op, 1)?;
        let Some(&got) = self.launch.responses.get(&(op.operands[0].0, slot)) else {
            return Err(op_err(
                op,
                format!("reads try_cancel response slot {slot}, which no request wrote"),
            ));
        };
        let (ok, ids) = match got {
            Some(ids) => (1, ids),
            None => (0, [0; 3]),
        };
        if op.results.len() != 4 {
            return Err(op_err(op, "expects four results"));
        }
        self.set(op, op.results[0], Val::Int(ok))?;
        for (&r, id) in op.results[1..].iter().zip(ids) {
            self.set(op, r, Val::Int(id))?;
        }
        Ok(())
    }

    /// `tile.tma_load %T, %ring, %bars, %stage, %coords...`: element `(i, j)` of the stage is
    /// the tensor's at the coordinates with `i` added to the second-to-last and `j` to the
    /// last, or zero outside the tensor.
    /// `tile.tma_load` and `tile.cp_async`: the box of the ring's stage shape at the
    /// coordinates (operands from `coords_at`) into stage operand `stage_at`, at once,
    /// elements outside the tensor as zero.
    fn copy_box(&mut self, op: &Operation, stage_at: usize, coords_at: usize) -> R<()> {
        let t = self.tensor(op)?;
        let rank = t.shape.len();
        if op.operands.len() != coords_at + rank || rank < 2 {
            return Err(op_err(op, "expects one coordinate per tensor dimension"));
        }
        let coords = (coords_at..coords_at + rank)
            .map(|i| self.int(op, i))
            .collect::<R<Vec<i64>>>()?;
        let stage =
            usize::try_from(self.int(op, stage_at)?).map_err(|_| op_err(op, "negative stage"))?;
        let Val::Smem(buf) = self.get(op, op.operands[1])? else {
            return Err(op_err(op, "expects a buffer"));
        };
        let Data::Float(src) = &t.data else {
            return Err(op_err(op, "expects a float tensor"));
        };
        let mut b = buf.borrow_mut();
        let (r, c) = (b.shape[0], b.shape[1]);
        let at = stage * r * c;
        if at + r * c > b.data.len() {
            return Err(op_err(op, "stage out of range"));
        }
        for i in 0..r {
            for j in 0..c {
                let mut off = Some(0usize);
                for (d, &x) in coords.iter().enumerate() {
                    let add = if d == rank - 2 {
                        i
                    } else if d == rank - 1 {
                        j
                    } else {
                        0
                    };
                    let x = x
                        .checked_add(add as i64)
                        .filter(|&x| x >= 0 && (x as u64) < t.shape[d] as u64);
                    off = match (off, x) {
                        (Some(o), Some(x)) => Some(o + x as usize * t.strides[d]),
                        _ => None,
                    };
                }
                b.data[at + i * c + j] = off.map_or(0.0, |o| src[o]);
            }
        }
        Ok(())
    }

    /// A stage of buffer `v` as a `[rows, cols]` matrix read `transposed` or not.
    fn stage_matrix(&self, op: &Operation, v: Value, stage: Value, k_major: bool) -> R<Vec<f32>> {
        let Val::Smem(buf) = self.get(op, v)? else {
            return Err(op_err(op, "expects a buffer"));
        };
        let st =
            usize::try_from(self.get_int(op, stage)?).map_err(|_| op_err(op, "negative stage"))?;
        let b = buf.borrow();
        let (r, c) = (b.shape[0], b.shape[1]);
        let at = st * r * c;
        let data = b
            .data
            .get(at..at + r * c)
            .ok_or_else(|| op_err(op, "stage out of range"))?;
        Ok(if k_major {
            // stored [outer][K]: read as [K][outer]
            (0..r * c).map(|i| data[(i % r) * c + i / r]).collect()
        } else {
            data.to_vec()
        })
    }

    fn get_int(&self, op: &Operation, v: Value) -> R<i64> {
        match self.get(op, v)? {
            Val::Int(i) => Ok(i),
            _ => Err(op_err(op, "expects an integer")),
        }
    }

    /// `tile.mma` as `tile.dot` (the module's products: see [`Self::cta_op`]).
    fn mma(&mut self, op: &Operation) -> R<Val> {
        let parts = crate::ops::mma_operands(op).ok_or_else(|| op_err(op, "bad operand count"))?;
        let (shape, elem) = self.result_tile(op)?;
        let (Some(&m), Some(&n), 2) = (shape.first(), shape.get(1), shape.len()) else {
            return Err(op_err(op, "bad shapes"));
        };
        let a_k = crate::ops::mma_a_k_major(op).map_err(|e| op_err(op, e))?;
        let b_k = crate::ops::mma_b_k_major(op).map_err(|e| op_err(op, e))?;
        let x: Vec<f32> = match self.get(op, parts.a)? {
            Val::Tile(t) => match &t.data {
                Data::Float(v) => v.clone(),
                Data::Int(_) => return Err(op_err(op, "expects float tiles")),
            },
            // A stored [M][K] (K-major) is already row-major; [K][M] is read transposed.
            Val::Smem(_) => self.stage_matrix(op, parts.a, parts.stage_a, !a_k)?,
            _ => return Err(op_err(op, "expects a tile or a buffer as A")),
        };
        let y = self.stage_matrix(op, parts.b, parts.stage_b, b_k)?;
        let k = x.len() / m.max(1);
        if x.len() != m * k || y.len() != k * n {
            return Err(op_err(op, "bad shapes"));
        }
        let zero_acc = op.attr("zero_acc").and_then(Attribute::as_bool) == Some(true);
        let z: Vec<f32> = if zero_acc {
            vec![0.0; m * n]
        } else {
            match &self.get(op, parts.acc)? {
                Val::Tile(t) => match &t.data {
                    Data::Float(v) if v.len() == m * n => v.clone(),
                    _ => return Err(op_err(op, "bad accumulator")),
                },
                _ => return Err(op_err(op, "bad accumulator")),
            }
        };
        let out = matmul(op, &x, &y, &z, (m, k, n), elem);
        Ok(tile_val(shape, elem, Data::Float(out)))
    }

    fn dot(&mut self, op: &Operation) -> R<Val> {
        let (a, b, c) = (self.tile(op, 0)?, self.tile(op, 1)?, self.tile(op, 2)?);
        let (shape, elem) = self.result_tile(op)?;
        let ok = a.shape.len() == 2
            && b.shape.len() == 2
            && c.shape.len() == 2
            && a.shape[1] == b.shape[0]
            && c.shape[0] == a.shape[0]
            && c.shape[1] == b.shape[1]
            && shape == c.shape;
        if !ok {
            return Err(op_err(op, "bad shapes"));
        }
        let (Data::Float(x), Data::Float(y), Data::Float(z)) = (&a.data, &b.data, &c.data) else {
            return Err(op_err(op, "expects float tiles"));
        };
        let mk_n = (a.shape[0], a.shape[1], b.shape[1]);
        let out = matmul(op, x, y, z, mk_n, elem);
        Ok(tile_val(shape, elem, Data::Float(out)))
    }

    fn convert(&mut self, op: &Operation) -> R<Val> {
        let to = self
            .result_type(op)?
            .elem()
            .ok_or_else(|| op_err(op, "bad result type"))?;
        let cvt_f = |x: f32| {
            if to.is_float() {
                Val::Float(convert_float(to, x))
            } else {
                Val::Int(float_to_int(to, x))
            }
        };
        let cvt_i = |x: i64| {
            if to.is_float() {
                Val::Float(int_to_float(to, x))
            } else {
                Val::Int(wrap_int(to, x))
            }
        };
        let v = *op
            .operands
            .first()
            .ok_or_else(|| op_err(op, "missing operand"))?;
        Ok(match self.get(op, v)? {
            Val::Float(x) => cvt_f(x),
            Val::Int(x) => cvt_i(x),
            Val::Tile(t) => {
                let data = match &t.data {
                    Data::Float(v) if to.is_float() => {
                        Data::Float(v.iter().map(|&x| convert_float(to, x)).collect())
                    }
                    Data::Float(v) => Data::Int(v.iter().map(|&x| float_to_int(to, x)).collect()),
                    Data::Int(v) if to.is_float() => {
                        Data::Float(v.iter().map(|&x| int_to_float(to, x)).collect())
                    }
                    Data::Int(v) => Data::Int(v.iter().map(|&x| wrap_int(to, x)).collect()),
                };
                tile_val(t.shape.clone(), to, data)
            }
            Val::Tensor(_) | Val::Smem(_) => return Err(op_err(op, "cannot convert a tensor")),
        })
    }

    fn broadcast(&mut self, op: &Operation) -> R<Val> {
        let (shape, elem) = self.result_tile(op)?;
        let n: usize = shape.iter().product();
        let v = *op
            .operands
            .first()
            .ok_or_else(|| op_err(op, "missing operand"))?;
        let data = match self.get(op, v)? {
            Val::Float(x) => Data::Float(vec![x; n]),
            Val::Int(x) => Data::Int(vec![x; n]),
            Val::Tile(a) => {
                if a.shape.len() != shape.len()
                    || a.shape.iter().zip(&shape).any(|(&s, &d)| s != d && s != 1)
                {
                    return Err(op_err(op, "bad shapes"));
                }
                let src_strides = row_major_strides(&a.shape);
                let mut idx = vec![0usize; shape.len()];
                let mut map = Vec::with_capacity(n);
                for _ in 0..n {
                    map.push(
                        idx.iter()
                            .zip(&a.shape)
                            .zip(&src_strides)
                            .map(|((&i, &s), &st)| if s == 1 { 0 } else { i * st })
                            .sum::<usize>(),
                    );
                    step_index(&mut idx, &shape);
                }
                gather(&a.data, n, |i| map[i])
            }
            Val::Tensor(_) | Val::Smem(_) => return Err(op_err(op, "cannot broadcast a tensor")),
        };
        Ok(tile_val(shape, elem, data))
    }

    fn reduce(&mut self, op: &Operation) -> R<Val> {
        let a = self.tile(op, 0)?;
        let (shape, elem) = self.result_tile(op)?;
        let d = op
            .int_attr("dim")
            .and_then(|d| usize::try_from(d).ok())
            .filter(|&d| d < a.shape.len())
            .ok_or_else(|| op_err(op, "bad 'dim'"))?;
        let Data::Float(x) = &a.data else {
            return Err(op_err(op, "expects a float tile"));
        };
        let f: fn(f32, f32) -> f32 = match crate::ops::ReduceKind::of(op) {
            Some(crate::ops::ReduceKind::Add) => |p, q| p + q,
            Some(crate::ops::ReduceKind::Max) => max_num,
            Some(crate::ops::ReduceKind::Min) => min_num,
            None => return Err(op_err(op, "bad 'kind'")),
        };
        let outer: usize = a.shape[..d].iter().product();
        let len = a.shape[d];
        let inner: usize = a.shape[d + 1..].iter().product();
        if shape.iter().product::<usize>() != outer * inner {
            return Err(op_err(op, "bad result shape"));
        }
        let mut out = vec![0.0f32; outer * inner];
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| x[(o * len + j) * inner + i];
                let mut s = at(0);
                for j in 1..len {
                    s = f(s, at(j));
                }
                out[o * inner + i] = round_to(elem, s);
            }
        }
        Ok(tile_val(shape, elem, Data::Float(out)))
    }
}

/// `x · y + z` of row-major `m × k`, `k × n` and `m × n` matrices, as `tile.dot` and
/// `tile.mma` compute it: each product summed from +0 by fused multiply-adds in k order,
/// the accumulator added last, the sum rounded to `elem`; with `precision = "tf32"` the
/// inputs are read as tf32 (their low 13 mantissa bits dropped, as the tensor cores read
/// f32 data in a `.tf32` MMA).
fn matmul(
    op: &Operation,
    x: &[f32],
    y: &[f32],
    z: &[f32],
    (m, k, n): (usize, usize, usize),
    elem: ScalarType,
) -> Vec<f32> {
    let tf32 = op.str_attr("precision") == Some("tf32");
    let rd = |v: f32| if tf32 { to_tf32(v) } else { v };
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0f32;
            for kk in 0..k {
                s = rd(x[i * k + kk]).mul_add(rd(y[kk * n + j]), s);
            }
            out[i * n + j] = round_to(elem, s + z[i * n + j]);
        }
    }
    out
}

/// The `offsets` attribute of `op` (zeros when absent), `rank` of them.
fn view_offsets(op: &Operation, rank: usize) -> R<Vec<usize>> {
    if op.attr("offsets").is_none() {
        return Ok(vec![0; rank]);
    }
    let offs = crate::ops::offsets(op);
    (offs.len() == rank)
        .then(|| offs.iter().map(|&o| usize::try_from(o).ok()).collect())
        .flatten()
        .ok_or_else(|| op_err(op, "bad 'offsets'"))
}

/// The buffer indices, in row-major order of a `shape` tile, of the view of `stage` that
/// `op`'s `offsets` and `transpose` name (tile element (i, j) is stage element
/// (r + i, c + j), or (r + j, c + i) transposed).
fn stage_view(op: &Operation, b: &SmemVal, stage: usize, shape: &[usize]) -> R<Vec<usize>> {
    let offs = view_offsets(op, 2)?;
    let t = op.attr("transpose").and_then(Attribute::as_bool) == Some(true);
    let (r, c) = (b.shape[0], b.shape[1]);
    let at = stage * r * c;
    if shape.len() != 2 || at + r * c > b.data.len() {
        return Err(op_err(op, "tile and stage shapes differ"));
    }
    let mut out = Vec::with_capacity(shape[0] * shape[1]);
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let (x, y) = if t { (j, i) } else { (i, j) };
            let (x, y) = (x + offs[0], y + offs[1]);
            if x >= r || y >= c {
                return Err(op_err(op, "the view lies outside the stage"));
            }
            out.push(at + x * c + y);
        }
    }
    Ok(out)
}

fn tile_val(shape: Vec<usize>, elem: ScalarType, data: Data) -> Val {
    Val::Tile(Rc::new(TileVal { shape, elem, data }))
}

fn gather(src: &Data, n: usize, at: impl Fn(usize) -> usize) -> Data {
    match src {
        Data::Float(v) => Data::Float((0..n).map(|i| v[at(i)]).collect()),
        Data::Int(v) => Data::Int((0..n).map(|i| v[at(i)]).collect()),
    }
}

/// Advance a row-major multi-index.
fn step_index(idx: &mut [usize], shape: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// `v` as tf32: f32 with the low 13 of its 23 mantissa bits cleared (rounded toward
/// zero); NaN stays NaN, infinities and zeros are kept.
pub fn to_tf32(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    f32::from_bits(v.to_bits() & !0x1fff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paddings_round_once() {
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-30);
        // Above the tie between 1 and 1 + 2^-7: up, where f32 first would make it a tie.
        assert_eq!(round_f64_to(ScalarType::BF16, x).to_bits(), 0x3F81_0000);
        assert_eq!(round_to(ScalarType::BF16, x as f32).to_bits(), 0x3F80_0000);
        assert_eq!(round_f64_to(ScalarType::F32, -0.0).to_bits(), 0x8000_0000);
        assert!(round_f64_to(ScalarType::F16, f64::NAN).is_nan());
        assert_eq!(
            round_f64_to(ScalarType::F16, f64::NEG_INFINITY),
            f32::NEG_INFINITY
        );
    }
    use crate::{parse, verify};

    /// A small deterministic generator (xorshift), so tests need no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Uniform in [-1, 1).
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
    }

    fn example(name: &str) -> Module {
        let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(&path).unwrap();
        let m = parse(&src, &path).unwrap();
        verify(&m).unwrap();
        m
    }

    fn random(rng: &mut Rng, elem: ScalarType, shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| rng.unit()).collect();
        Tensor::from_f32(elem, shape, &v)
    }

    /// C = A·B in f64 from the (already rounded) inputs.
    fn gemm_f64(a: &Tensor, b: &Tensor, m: usize, n: usize, k: usize) -> Vec<f64> {
        let (a, b) = (a.to_f64_vec(), b.to_f64_vec());
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
            }
        }
        c
    }

    /// |got − want| within the bf16 rounding of the result (2^-8 relative) plus the f32
    /// accumulation error (K · 2^-24 of Σ|a·b|, bounded here by K · 2^-24 · K).
    fn assert_bf16_close(got: &[f64], want: &[f64], k: usize) {
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let tol = w.abs() * 2f64.powi(-8) + (k * k) as f64 * 2f64.powi(-24) + 1e-30;
            assert!(
                (g - w).abs() <= tol,
                "element {i}: got {g}, want {w} (tolerance {tol})"
            );
        }
    }

    #[test]
    fn gemm_bf16_ragged_matches_f64_reference() {
        let m = example("gemm_bf16.tile");
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for &(mm, nn, kk) in &[
            (37usize, 300usize, 130usize),
            (1, 1, 1),
            (128, 256, 64),
            (129, 257, 65),
        ] {
            let a = random(&mut rng, ScalarType::BF16, &[mm, kk]);
            let b = random(&mut rng, ScalarType::BF16, &[kk, nn]);
            let want = gemm_f64(&a, &b, mm, nn, kk);
            // Poison the output: every element must be written.
            let c = Tensor::filled(ScalarType::BF16, &[mm, nn], f32::NAN);
            let mut args = vec![
                ArgValue::Tensor(a),
                ArgValue::Tensor(b),
                ArgValue::Tensor(c),
                ArgValue::Int(mm as i64),
                ArgValue::Int(nn as i64),
                ArgValue::Int(kk as i64),
            ];
            run(&m, "gemm_bf16", &mut args).unwrap();
            let got = args[2].tensor().unwrap().to_f64_vec();
            assert_bf16_close(&got, &want, kk);
        }
    }

    /// An fp8 GEMM in the layout `torch._scaled_mm` takes (A[M,K] e4m3, B[N,K] e5m2, so
    /// C = A·Bᵀ), with an f32 output, and a conversion of C to e4m3: against f64 from the
    /// rounded inputs, then against [`round_to`] of the f32 result.
    #[test]
    fn gemm_fp8_matches_f64_reference_and_converts_saturating() {
        let src = "tile.kernel @g(%A: tensor<?x?xe4m3>, %B: tensor<?x?xe5m2>, %C: \
            tensor<?x?xf32>, %Q: tensor<?x?xe4m3>, %M: index, %N: index, %K: index) {grid = \
            [ceildiv(%N, 64), ceildiv(%M, 64)]} {\n\
            %pn = tile.program_id {dim = 0} : index\n\
            %pm = tile.program_id {dim = 1} : index\n\
            %c0 = tile.constant {value = 0} : index\n\
            %c64 = tile.constant {value = 64} : index\n\
            %row = tile.muli %pm, %c64 : index\n\
            %col = tile.muli %pn, %c64 : index\n\
            %zero = tile.zeros : tile<64x64xf32>\n\
            %acc = tile.for %c0, %K, %c64, %zero : tile<64x64xf32> {\n\
            ^bb0(%k: index, %c: tile<64x64xf32>):\n\
            %a = tile.load %A, %row, %k : tile<64x64xe4m3>\n\
            %bt = tile.load %B, %col, %k : tile<64x64xe5m2>\n\
            %b = tile.transpose %bt : tile<64x64xe5m2>\n\
            %d = tile.dot %a, %b, %c : tile<64x64xf32>\n\
            tile.yield %d\n\
            }\n\
            tile.store %C, %row, %col, %acc\n\
            %q = tile.convert %acc : tile<64x64xe4m3>\n\
            tile.store %Q, %row, %col, %q\n\
            tile.return\n\
            }\n";
        let m = parse(src, "fp8.tile").unwrap();
        verify(&m).unwrap();
        let mut rng = Rng(0x2545f4914f6cdd1d);
        let (mm, nn, kk) = (70usize, 90usize, 100usize);
        // Inputs up to ±8: products up to 64, sums beyond e4m3's 448, so the conversion of C
        // saturates somewhere.
        let draw = |rng: &mut Rng, t, shape: &[usize]| {
            let n = shape.iter().product();
            let v: Vec<f32> = (0..n).map(|_| 16.0 * rng.unit()).collect();
            Tensor::from_f32(t, shape, &v)
        };
        let a = draw(&mut rng, ScalarType::E4M3, &[mm, kk]);
        let b = draw(&mut rng, ScalarType::E5M2, &[nn, kk]);
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        // The tensors hold values of their types.
        assert!(av
            .iter()
            .all(|&x| f64::from(round_to(ScalarType::E4M3, x as f32)) == x));
        assert!(bv
            .iter()
            .all(|&x| f64::from(round_to(ScalarType::E5M2, x as f32)) == x));
        assert!(bv
            .iter()
            .any(|&x| f64::from(round_to(ScalarType::E4M3, x as f32)) != x));
        let mut args = vec![
            ArgValue::Tensor(a),
            ArgValue::Tensor(b),
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[mm, nn], f32::NAN)),
            ArgValue::Tensor(Tensor::filled(ScalarType::E4M3, &[mm, nn], f32::NAN)),
            ArgValue::Int(mm as i64),
            ArgValue::Int(nn as i64),
            ArgValue::Int(kk as i64),
        ];
        run(&m, "g", &mut args).unwrap();
        let c = args[2].tensor().unwrap().to_f64_vec();
        let q = args[3].tensor().unwrap().to_f64_vec();
        let mut saturated = 0;
        for i in 0..mm {
            for j in 0..nn {
                let terms = (0..kk).map(|p| av[i * kk + p] * bv[j * kk + p]);
                let (want, mag): (f64, f64) =
                    terms.fold((0.0, 0.0), |(s, g), t| (s + t, g + t.abs()));
                let got = c[i * nn + j];
                let tol = kk as f64 * 2f64.powi(-24) * mag;
                assert!((got - want).abs() <= tol, "C[{i},{j}] = {got}, want {want}");
                let qv = q[i * nn + j];
                assert_eq!(
                    qv,
                    f64::from(round_to(ScalarType::E4M3, got as f32)),
                    "Q[{i},{j}]"
                );
                saturated += usize::from(qv.abs() == 448.0);
            }
        }
        assert!(
            saturated > 0,
            "no element saturated: the test does not reach the limit"
        );
    }

    #[test]
    fn gemm_bias_relu_matches_f64_reference() {
        let m = example("gemm_bias_relu.tile");
        let mut rng = Rng(12345);
        let (mm, nn, kk) = (37usize, 300usize, 70usize);
        let a = random(&mut rng, ScalarType::BF16, &[mm, kk]);
        let b = random(&mut rng, ScalarType::BF16, &[kk, nn]);
        let bias = random(&mut rng, ScalarType::F32, &[1, nn]);
        let mut want = gemm_f64(&a, &b, mm, nn, kk);
        let bv = bias.to_f64_vec();
        for i in 0..mm {
            for j in 0..nn {
                want[i * nn + j] = (want[i * nn + j] + bv[j]).max(0.0);
            }
        }
        let c = Tensor::filled(ScalarType::BF16, &[mm, nn], f32::NAN);
        let mut args = vec![
            ArgValue::Tensor(a),
            ArgValue::Tensor(b),
            ArgValue::Tensor(bias),
            ArgValue::Tensor(c),
            ArgValue::Int(mm as i64),
            ArgValue::Int(nn as i64),
            ArgValue::Int(kk as i64),
        ];
        run(&m, "gemm_bias_relu", &mut args).unwrap();
        let got = args[3].tensor().unwrap().to_f64_vec();
        assert_bf16_close(&got, &want, kk);
        assert!(got.iter().all(|&x| x >= 0.0), "relu output is non-negative");
    }

    #[test]
    fn gemm_rowsum_matches_f64_reference() {
        // C and S[m] = Σ_n (A·B)[m, n], added by each program over its 256 columns.
        let m = example("gemm_rowsum.tile");
        let mut rng = Rng(0x0a11ce);
        for &(mm, nn, kk) in &[(37usize, 600usize, 70usize), (129, 256, 64), (1, 1, 1)] {
            let a = random(&mut rng, ScalarType::BF16, &[mm, kk]);
            let b = random(&mut rng, ScalarType::BF16, &[kk, nn]);
            let want = gemm_f64(&a, &b, mm, nn, kk);
            let c = Tensor::filled(ScalarType::BF16, &[mm, nn], f32::NAN);
            let s = Tensor::filled(ScalarType::F32, &[mm, 1], 0.0);
            let mut args = vec![
                ArgValue::Tensor(a),
                ArgValue::Tensor(b),
                ArgValue::Tensor(c),
                ArgValue::Tensor(s),
                ArgValue::Int(mm as i64),
                ArgValue::Int(nn as i64),
                ArgValue::Int(kk as i64),
            ];
            run(&m, "gemm_rowsum", &mut args).unwrap();
            assert_bf16_close(&args[2].tensor().unwrap().to_f64_vec(), &want, kk);
            let got = args[3].tensor().unwrap().to_f64_vec();
            for i in 0..mm {
                let row = &want[i * nn..(i + 1) * nn];
                let sum: f64 = row.iter().sum();
                let tol =
                    row.iter().map(|x| x.abs()).sum::<f64>() * (nn + kk) as f64 * 2f64.powi(-23);
                assert!(
                    (got[i] - sum).abs() <= tol + 1e-30,
                    "{mm}x{nn}x{kk} row {i}: got {}, want {sum} (tolerance {tol})",
                    got[i]
                );
            }
        }
    }

    #[test]
    fn gemm_splitk_matches_f64_reference_for_every_split() {
        // The split-K program adds S partial products into a zeroed f32 workspace: any S,
        // slices past K (empty) included, gives A·B.
        let m = example("gemm_bf16_splitk_64x64.tile");
        let mut rng = Rng(0x5eed);
        for &(mm, nn, kk) in &[
            (16usize, 130usize, 200usize),
            (65, 64, 64),
            (3, 5, 1),
            (16, 64, 450),
        ] {
            let a = random(&mut rng, ScalarType::BF16, &[mm, kk]);
            let b = random(&mut rng, ScalarType::BF16, &[kk, nn]);
            let want = gemm_f64(&a, &b, mm, nn, kk);
            for s in [1usize, 2, 3, 5, 8] {
                let w = Tensor::filled(ScalarType::F32, &[mm, nn], 0.0);
                let mut args = vec![
                    ArgValue::Tensor(a.clone()),
                    ArgValue::Tensor(b.clone()),
                    ArgValue::Tensor(w),
                    ArgValue::Int(mm as i64),
                    ArgValue::Int(nn as i64),
                    ArgValue::Int(kk as i64),
                    ArgValue::Int(s as i64),
                ];
                run(&m, "gemm_bf16_splitk_64x64", &mut args).unwrap();
                let got = args[2].tensor().unwrap().to_f64_vec();
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let tol = (kk * kk) as f64 * 2f64.powi(-23) + 1e-30;
                    assert!(
                        (g - w).abs() <= tol,
                        "S = {s}, {mm}x{nn}x{kk}, element {i}: got {g}, want {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn atomic_add_adds_and_drops_out_of_bounds() {
        let src = "tile.kernel @k(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>) {grid = [2]} {
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %t = tile.load %X, %c1, %c2 : tile<2x3xf32>
  tile.atomic_add %Y, %c1, %c2, %t
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        verify(&m).unwrap();
        let x = Tensor {
            elem: ScalarType::F32,
            shape: vec![3, 4],
            strides: vec![5, 1],
            data: Data::Float((0..15).map(|i| i as f32).collect()),
        };
        let y = Tensor::filled(ScalarType::F32, &[3, 4], 1.0);
        let mut args = vec![ArgValue::Tensor(x), ArgValue::Tensor(y)];
        run(&m, "k", &mut args).unwrap();
        let got = args[1].tensor().unwrap().to_f64_vec();
        // Both programs add: 1 + 2·x inside, 1 outside.
        #[rustfmt::skip]
        let want = [1.0, 1.0, 1.0, 1.0,
                    1.0, 1.0, 15.0, 17.0,
                    1.0, 1.0, 25.0, 27.0];
        assert_eq!(got, want);
    }

    #[test]
    fn strided_views_and_out_of_bounds() {
        // A 2×3 tile loaded at (1, 2) from a 3×4 view (row stride 5) of a 15-element
        // buffer: elements outside the view read 0; the store drops them.
        let src = "tile.kernel @k(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>) {grid = [1]} {
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %t = tile.load %X, %c1, %c2 : tile<2x3xf32>
  tile.store %Y, %c1, %c2, %t
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        verify(&m).unwrap();
        let x = Tensor {
            elem: ScalarType::F32,
            shape: vec![3, 4],
            strides: vec![5, 1],
            data: Data::Float((0..15).map(|i| i as f32).collect()),
        };
        let y = Tensor::filled(ScalarType::F32, &[3, 4], -1.0);
        let mut args = vec![ArgValue::Tensor(x), ArgValue::Tensor(y)];
        run(&m, "k", &mut args).unwrap();
        let got = args[1].tensor().unwrap().to_f64_vec();
        #[rustfmt::skip]
        let want = [-1.0, -1.0, -1.0, -1.0,
                    -1.0, -1.0,  7.0,  8.0,
                    -1.0, -1.0, 12.0, 13.0];
        assert_eq!(got, want);
    }

    /// Every finite value of an 8-bit float format, ascending, decoded from its bit patterns
    /// (`mant` mantissa bits, exponent `bias`; e4m3 has no infinities and one NaN code
    /// per sign, e5m2 the IEEE ones): the oracle the rounding is checked against.
    fn fp8_values(mant: u32, bias: i32, ieee_specials: bool) -> Vec<f64> {
        let mut v = vec![];
        for code in 0u32..128 {
            let (e, m) = ((code >> mant) as i32, code & ((1 << mant) - 1));
            let emax_field = (1 << (7 - mant)) - 1;
            if (ieee_specials && e == emax_field) || (!ieee_specials && code == 127) {
                continue; // inf / NaN
            }
            let frac = f64::from(m) / f64::from(1u32 << mant);
            let x = if e == 0 {
                frac * 2f64.powi(1 - bias)
            } else {
                (1.0 + frac) * 2f64.powi(e - bias)
            };
            v.push(x);
        }
        v
    }

    /// The inputs of the GPU check of the 8-bit conversions (`tools/gpu/fp8_cvt.cu`, which
    /// compares `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` with these): every value of both
    /// formats, every midpoint and the f32 values just beside it, both signs; beyond the
    /// largest values; subnormal halves; specials; and pseudo-random f32 of every magnitude.
    fn fp8_probe_inputs() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
        ];
        for (mant, bias, ieee) in [(3, 7, false), (2, 15, true)] {
            let vals = fp8_values(mant, bias, ieee);
            for w in vals.windows(2) {
                let mid = ((w[0] + w[1]) / 2.0) as f32;
                let below = f32::from_bits(mid.to_bits() - 1);
                let above = f32::from_bits(mid.to_bits() + 1);
                for x in [w[0] as f32, mid, below, above] {
                    xs.extend([x, -x]);
                }
            }
            let max = *vals.last().unwrap() as f32;
            for f in [1.0001f32, 1.03, 1.0625, 1.07, 2.0, 1e10] {
                xs.extend([max * f, -max * f]);
            }
        }
        let mut rng = Rng(0x853c49e6748fea9b);
        for _ in 0..20000 {
            let e = (rng.unit() * 40.0) as i32; // 2^-20 .. 2^20
            let x = (2.0 * rng.unit()) * 2f32.powi(e - 20);
            xs.push(x);
        }
        xs
    }

    /// Writes (x, e4m3(x), e5m2(x)) as little-endian f32 triples to the file that
    /// `TILEC_FP8_TABLE` names, for the GPU check; checks the table either way.
    #[test]
    fn fp8_table_for_the_gpu_check() {
        let xs = fp8_probe_inputs();
        let mut bytes = vec![];
        for &x in &xs {
            let (a, b) = (round_to(ScalarType::E4M3, x), round_to(ScalarType::E5M2, x));
            // Idempotent, and within each format's range.
            assert!(a.is_nan() || (round_to(ScalarType::E4M3, a) == a && a.abs() <= 448.0));
            assert!(b.is_nan() || (round_to(ScalarType::E5M2, b) == b && b.abs() <= 57344.0));
            assert_eq!(a.is_nan(), x.is_nan());
            for v in [x, a, b] {
                bytes.extend(v.to_le_bytes());
            }
        }
        assert!(xs.len() > 20000 + 2 * 4 * (126 + 123));
        if let Some(path) = std::env::var_os("TILEC_FP8_TABLE") {
            std::fs::write(path, bytes).unwrap();
        }
    }

    #[test]
    fn fp8_rounding_matches_the_formats() {
        for (t, mant, bias, ieee, max, min_sub) in [
            (ScalarType::E4M3, 3, 7, false, 448.0, 2f64.powi(-9)),
            (ScalarType::E5M2, 2, 15, true, 57344.0, 2f64.powi(-16)),
        ] {
            let vals = fp8_values(mant, bias, ieee);
            assert_eq!(*vals.last().unwrap(), max, "{t}");
            assert_eq!(vals[1], min_sub, "{t}");
            // Every value converts to itself, with either sign.
            for &x in &vals {
                for s in [1.0f32, -1.0] {
                    let y = s * x as f32;
                    assert_eq!(round_to(t, y).to_bits(), y.to_bits(), "{t} {y}");
                }
            }
            // Midpoints tie to the neighbour with an even code; points just beside them go
            // to the nearer neighbour.
            for (k, w) in vals.windows(2).enumerate() {
                let mid = (w[0] + w[1]) / 2.0;
                let even = if k % 2 == 0 { w[0] } else { w[1] };
                assert_eq!(f64::from(round_to(t, mid as f32)), even, "{t} tie {mid}");
                assert_eq!(f64::from(round_to(t, -mid as f32)), -even, "{t} tie -{mid}");
                let d = (w[1] - w[0]) / 8.0;
                assert_eq!(f64::from(round_to(t, (mid - d) as f32)), w[0], "{t} {mid}-");
                assert_eq!(f64::from(round_to(t, (mid + d) as f32)), w[1], "{t} {mid}+");
            }
            // Saturation: past the largest value, infinities included; NaN stays NaN.
            let max = max as f32;
            for x in [max * 1.01, max * 4.0, 1e30, f32::INFINITY, f32::MAX] {
                assert_eq!(round_to(t, x), max, "{t} {x}");
                assert_eq!(round_to(t, -x), -max, "{t} -{x}");
            }
            assert!(round_to(t, f32::NAN).is_nan());
            // Below half the smallest subnormal: zero, of the input's sign; at half: the
            // tie goes to zero (even).
            let sub = min_sub as f32;
            assert_eq!(round_to(t, sub * 0.4).to_bits(), 0.0f32.to_bits());
            assert_eq!(round_to(t, -sub * 0.4).to_bits(), (-0.0f32).to_bits());
            assert_eq!(round_to(t, sub * 0.5), 0.0);
            assert_eq!(round_to(t, sub * 0.75), sub);
            assert_eq!(round_to(t, -0.0).to_bits(), (-0.0f32).to_bits());
        }
        // A few by hand: e4m3 has 8 values per binade; 464 is the tie between 448 and the
        // 480 the format lacks: saturated to 448. e5m2 rounds 3.75 (tie of 3.5 and 4) to 4,
        // and 61440 (tie of 57344 and the 65536 it lacks) to 57344.
        assert_eq!(round_to(ScalarType::E4M3, 1.0625), 1.0);
        assert_eq!(round_to(ScalarType::E4M3, 1.1875), 1.25);
        assert_eq!(round_to(ScalarType::E4M3, 464.0), 448.0);
        assert_eq!(round_to(ScalarType::E5M2, 3.75), 4.0);
        assert_eq!(round_to(ScalarType::E5M2, 61440.0), 57344.0);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // 1 + 2^-8 lies halfway between the bf16 values 1 and 1 + 2^-7: ties to even (1).
        assert_eq!(round_to(ScalarType::BF16, 1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(
            round_to(ScalarType::BF16, 1.0 + 3.0 * 2f32.powi(-8)),
            1.0 + 2.0 * 2f32.powi(-7)
        );
        assert_eq!(round_to(ScalarType::F16, 1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(round_to(ScalarType::F16, 70000.0), f32::INFINITY);
        assert_eq!(max_num(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(min_num(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(max_num(f32::NAN, 2.0), 2.0);
    }

    #[test]
    fn scalars_loops_ifs_and_errors() {
        let src = "tile.kernel @k(%Y: tensor<?xf32>, %n: index, %x: f32) {grid = [2]} {
  %pid = tile.program_id {dim = 0} : index
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c3 = tile.constant {value = 3} : index
  %init = tile.splat %x : tile<4xf32>
  %s = tile.for %c0, %n, %c1, %init : tile<4xf32> {
  ^bb0(%i: index, %acc: tile<4xf32>):
    %d = tile.add %acc, %acc : tile<4xf32>
    tile.yield %d
  }
  %isz = tile.cmpi %pid, %c0 {predicate = \"eq\"} : i1
  %r = tile.if %isz : tile<4xf32> {
    tile.yield %s
  } {
    %ng = tile.neg %s : tile<4xf32>
    tile.yield %ng
  }
  %q = tile.ceildiv %c3, %n : index
  %off = tile.muli %pid, %q : index
  %off4 = tile.muli %off, %c3 : index
  tile.store %Y, %off4, %r
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        verify(&m).unwrap();
        let mut args = vec![
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[8])),
            ArgValue::Int(2),
            ArgValue::Float(1.5),
        ];
        run(&m, "k", &mut args).unwrap();
        // ceildiv(3, 2) = 2: program 1 stores at 6 (two elements in bounds).
        assert_eq!(
            args[0].tensor().unwrap().to_f64_vec(),
            vec![6.0, 6.0, 6.0, 6.0, 0.0, 0.0, -6.0, -6.0]
        );
        // ceildiv by zero is an error, not a panic.
        let mut args = vec![
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[8])),
            ArgValue::Int(0),
            ArgValue::Float(1.5),
        ];
        let e = run(&m, "k", &mut args).unwrap_err();
        assert!(e.to_string().contains("division by zero"), "{e}");
        // Wrong arguments.
        let mut args = vec![ArgValue::Int(0)];
        assert!(matches!(
            run(&m, "k", &mut args),
            Err(InterpError::ArgCount { .. })
        ));
        assert!(matches!(
            run(&m, "nope", &mut args),
            Err(InterpError::NoKernel(_))
        ));
        let mut args = vec![ArgValue::Float(0.0), ArgValue::Int(2), ArgValue::Float(1.5)];
        assert!(matches!(
            run(&m, "k", &mut args),
            Err(InterpError::Arg { index: 0, .. })
        ));
        // A budget stops long runs.
        let mut args = vec![
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[8])),
            ArgValue::Int(1 << 40),
            ArgValue::Float(1.5),
        ];
        assert_eq!(
            run_with(
                &m,
                "k",
                &mut args,
                Limits {
                    max_ops: 10_000,
                    ..Limits::default()
                }
            ),
            Err(InterpError::Budget(10_000))
        );
    }

    #[test]
    fn tf32_dot_truncates_inputs() {
        assert_eq!(to_tf32(1.0 + f32::EPSILON), 1.0);
        assert_eq!(to_tf32(-(1.0 + 1023.0 / 1024.0)), -(1.0 + 1023.0 / 1024.0));
        assert_eq!(to_tf32(1.0 + 2047.0 / 2048.0), 1.0 + 1023.0 / 1024.0);
        assert!(to_tf32(f32::NAN).is_nan());
        assert_eq!(to_tf32(f32::INFINITY), f32::INFINITY);
        let src = "tile.kernel @k(%A: tensor<?x?xf32>, %B: tensor<?x?xf32>, %O: tensor<?x?xf32>, \
            %P: tensor<?x?xf32>) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %a = tile.load %A, %c0, %c0 : tile<1x2xf32>
  %b = tile.load %B, %c0, %c0 : tile<2x1xf32>
  %z = tile.zeros : tile<1x1xf32>
  %d = tile.dot %a, %b, %z {precision = \"tf32\"} : tile<1x1xf32>
  %e = tile.dot %a, %b, %z : tile<1x1xf32>
  tile.store %O, %c0, %c0, %d
  tile.store %P, %c0, %c0, %e
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        verify(&m).unwrap();
        let x = 1.0 + 3.0 * f32::EPSILON;
        let t = |shape: &[usize], v: &[f32]| {
            ArgValue::Tensor(Tensor::from_f32(ScalarType::F32, shape, v))
        };
        let mut args = vec![
            t(&[1, 2], &[x, 2.0]),
            t(&[2, 1], &[x, 0.5]),
            t(&[1, 1], &[f32::NAN]),
            t(&[1, 1], &[f32::NAN]),
        ];
        run(&m, "k", &mut args).unwrap();
        let out = |a: &ArgValue| match a {
            ArgValue::Tensor(t) => t.to_f32_vec().unwrap(),
            _ => unreachable!(),
        };
        assert_eq!(out(&args[2]), vec![2.0]);
        assert_eq!(out(&args[3]), vec![2.0f32.mul_add(0.5, x * x)]);
    }

    #[test]
    fn dot_accumulator_is_added_last() {
        // s = Σ a·b from +0, then + acc: dot(a, b, 0) + c == dot(a, b, c) bit for bit.
        let src = "tile.kernel @k(%A: tensor<?x?xf32>, %B: tensor<?x?xf32>, %C: tensor<?x?xf32>, \
            %O1: tensor<?x?xf32>, %O2: tensor<?x?xf32>) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %a = tile.load %A, %c0, %c0 : tile<2x3xf32>
  %b = tile.load %B, %c0, %c0 : tile<3x2xf32>
  %c = tile.load %C, %c0, %c0 : tile<2x2xf32>
  %z = tile.zeros : tile<2x2xf32>
  %d0 = tile.dot %a, %b, %z : tile<2x2xf32>
  %s = tile.add %d0, %c : tile<2x2xf32>
  %d1 = tile.dot %a, %b, %c : tile<2x2xf32>
  tile.store %O1, %c0, %c0, %s
  tile.store %O2, %c0, %c0, %d1
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        verify(&m).unwrap();
        let mut rng = Rng(7);
        for _ in 0..50 {
            let mut args = vec![
                ArgValue::Tensor(random(&mut rng, ScalarType::F32, &[2, 3])),
                ArgValue::Tensor(random(&mut rng, ScalarType::F32, &[3, 2])),
                ArgValue::Tensor(Tensor::from_f32(
                    ScalarType::F32,
                    &[2, 2],
                    &[-0.0, 0.0, rng.unit(), 1e30],
                )),
                ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[2, 2])),
                ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[2, 2])),
            ];
            run(&m, "k", &mut args).unwrap();
            let bits = |t: &Tensor| {
                t.to_f32_vec()
                    .unwrap()
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                bits(args[3].tensor().unwrap()),
                bits(args[4].tensor().unwrap())
            );
        }
    }

    #[test]
    fn gpu_ops_are_an_error() {
        let src = "tile.kernel @k() {grid = [1]} {
  tile.bulk_commit_group
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        let e = run(&m, "k", &mut []).unwrap_err();
        assert!(e.to_string().contains("level-1"), "{e}");
    }

    #[test]
    fn tma_load_copies_its_box_with_zero_fill() {
        // A 3x5 tensor; stage 1 of a [2][4] ring copied from (2, 3): rows 2-3, columns 3-6,
        // of which only (2, 3) and (2, 4) are inside. The stage is then read back through
        // a wgmma-form mma with an identity A.
        let src = "tile.kernel @k(%X: tensor<?x?xf32>, %I: tensor<?x?xf32>, %O: tensor<?x?xf32>) \
            {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %c3 = tile.constant {value = 3} : index
  %ring = tile.smem_alloc {swizzle = 128} : smem<2x2x4xf32>
  %full = tile.mbarrier_alloc {arrive_count = 1} : mbarrier<2>
  tile.mbarrier_expect_tx %full, %c1 {bytes = 32}
  tile.tma_load %X, %ring, %full, %c1, %c2, %c3
  tile.mbarrier_wait %full, %c1, %c0
  %i = tile.load %I, %c0, %c0 : tile<2x2xf32>
  %z = tile.zeros : tile<2x4xf32>
  %r = tile.mma %i, %ring, %c1, %z {kind = \"wgmma\", precision = \"tf32\", zero_acc = true} \
    : tile<2x4xf32>
  tile.store %O, %c0, %c0, %r
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        let x: Vec<f32> = (0..15).map(|i| i as f32).collect();
        let mut args = [
            ArgValue::Tensor(Tensor::from_f32(ScalarType::F32, &[3, 5], &x)),
            ArgValue::Tensor(Tensor::from_f32(
                ScalarType::F32,
                &[2, 2],
                &[1.0, 0.0, 0.0, 1.0],
            )),
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[2, 4], f32::NAN)),
        ];
        run(&m, "k", &mut args).unwrap();
        let o = args[2].tensor().unwrap().to_f32_vec().unwrap();
        assert_eq!(o, [13.0, 14.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn cp_async_views_and_slices() {
        // A 3x5 tensor of 0..15; a [4][4] stage copied from (1, 2) by cp.async: rows 1-2
        // and columns 2-4 inside, zeros elsewhere. Read back transposed from (0, 1) as a
        // 3x2 tile, then the 2x1 slice of it at (1, 1).
        let src = "tile.kernel @k(%X: tensor<?x?xf32>, %O: tensor<?x?xf32>, %P: tensor<?x?xf32>) \
            {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %ring = tile.smem_alloc {swizzle = 128} : smem<2x4x4xf32>
  tile.cp_async %X, %ring, %c1, %c1, %c2
  tile.cp_async_commit_group
  tile.cp_async_wait_group {pending = 0}
  tile.barrier
  %t = tile.smem_load %ring, %c1 {offsets = [0, 1], transpose = true} : tile<3x2xf32>
  tile.store %O, %c0, %c0, %t
  %s = tile.extract_slice %t {offsets = [1, 1]} : tile<2x1xf32>
  tile.store %P, %c0, %c0, %s
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        let x: Vec<f32> = (0..15).map(|i| i as f32).collect();
        let mut args = [
            ArgValue::Tensor(Tensor::from_f32(ScalarType::F32, &[3, 5], &x)),
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[3, 2], f32::NAN)),
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[2, 1], f32::NAN)),
        ];
        run(&m, "k", &mut args).unwrap();
        // The stage: row 0 = X[1][2..6] = 7 8 9 0; row 1 = X[2][2..6] = 12 13 14 0; rows
        // 2-3 zeros. Transposed from column 1: t[i][j] = stage[j][1 + i].
        let o = args[1].tensor().unwrap().to_f32_vec().unwrap();
        assert_eq!(o, [8.0, 13.0, 9.0, 14.0, 0.0, 0.0]);
        let p = args[2].tensor().unwrap().to_f32_vec().unwrap();
        assert_eq!(p, [14.0, 0.0]);
    }

    #[test]
    fn ctas_launch_a_persistent_grid() {
        // Each of 3 CTAs strides over 7 tiles; every tile writes its own number.
        let src = "tile.kernel @k(%O: tensor<?xf32>) {grid = [7]} {
  %c1 = tile.constant {value = 1} : index
  %n = tile.constant {value = 7} : index
  %cta = tile.ctaid {dim = 0} : index
  %ncta = tile.nctaid {dim = 0} : index
  tile.for %cta, %n, %ncta {
  ^bb0(%t: index):
    %v = tile.splat %ncta : tile<1xindex>
    %w = tile.convert %v : tile<1xf32>
    tile.store %O, %t, %w
    tile.yield
  }
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        for (ctas, want) in [(None, 7), (Some(3), 3)] {
            let mut args = [ArgValue::Tensor(Tensor::filled(
                ScalarType::F32,
                &[7],
                -1.0,
            ))];
            let limits = Limits {
                ctas,
                ..Limits::default()
            };
            run_with(&m, "k", &mut args, limits).unwrap();
            let o = args[0].tensor().unwrap().to_f32_vec().unwrap();
            assert_eq!(o, [want as f32; 7], "{ctas:?}");
        }
    }

    #[test]
    fn clusters_of_a_persistent_grid_cover_every_tile_once() {
        // 5 x 3 tiles, clusters of 2 x 2 CTAs over 3 x 2 cluster tiles: each CTA adds one to
        // its tile and records its rank there; tiles past the grid's edge are clipped.
        let src = "tile.kernel @k(%O: tensor<?x?xf32>, %R: tensor<?x?xf32>) \
    {cluster = [2, 2, 1], grid = [5, 3]} {
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %c3 = tile.constant {value = 3} : index
  %n = tile.constant {value = 6} : index
  %first = tile.clusterid {dim = 0} : index
  %step = tile.nclusterid {dim = 0} : index
  tile.for %first, %n, %step {
  ^bb0(%t: index):
    %q0 = tile.remi %t, %c3 : index
    %q1 = tile.divi %t, %c3 : index
    %b0 = tile.muli %q0, %c2 : index
    %b1 = tile.muli %q1, %c2 : index
    %x = tile.cluster_ctaid {dim = 0} : index
    %y = tile.cluster_ctaid {dim = 1} : index
    %p0 = tile.addi %b0, %x : index
    %p1 = tile.addi %b1, %y : index
    %o = tile.load %O, %p1, %p0 : tile<1x1xf32>
    %one = tile.constant {value = 1.0} : f32
    %ones = tile.splat %one : tile<1x1xf32>
    %o2 = tile.add %o, %ones : tile<1x1xf32>
    tile.store %O, %p1, %p0, %o2
    %r = tile.cluster_ctarank : index
    %rv = tile.splat %r : tile<1x1xindex>
    %rf = tile.convert %rv : tile<1x1xf32>
    tile.store %R, %p1, %p0, %rf
    tile.yield
  }
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        for ctas in [2, 4, 6, 8] {
            let mut args = [
                ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[3, 5], 0.0)),
                ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[3, 5], -1.0)),
            ];
            let limits = Limits {
                ctas: Some(ctas),
                ..Limits::default()
            };
            run_with(&m, "k", &mut args, limits).unwrap();
            let o = args[0].tensor().unwrap().to_f32_vec().unwrap();
            let r = args[1].tensor().unwrap().to_f32_vec().unwrap();
            let rank: Vec<f32> = (0..15)
                .map(|i| ((i % 5) % 2 + 2 * ((i / 5) % 2)) as f32)
                .collect();
            assert_eq!(o, [1.0; 15], "{ctas} CTAs along x");
            assert_eq!(r, rank, "{ctas} CTAs along x");
        }
        let mut args = [
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[3, 5], 0.0)),
            ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[3, 5], 0.0)),
        ];
        let limits = Limits {
            ctas: Some(3),
            ..Limits::default()
        };
        let e = run_with(&m, "k", &mut args, limits).unwrap_err();
        assert!(
            e.to_string()
                .contains("a positive multiple of the cluster's 2"),
            "{e}"
        );
    }

    #[test]
    fn try_cancel_cancels_the_last_unlaunched_cta() {
        // A work-stealing loop over 7 tiles; each tile records the CTA that ran it.
        let src = "tile.kernel @k(%O: tensor<?xf32>) {grid = [7]} {
  %resp = tile.smem_alloc : smem<2x4xi32>
  %full = tile.mbarrier_alloc {arrive_count = 1} : mbarrier<2>
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c2 = tile.constant {value = 2} : index
  %me = tile.ctaid {dim = 0} : index
  %last, %done = tile.while %me, %c0 : index, index {
  ^bb0(%t: index, %n: index):
    %slot = tile.remi %n, %c2 : index
    tile.clc_try_cancel %resp, %full, %slot
    %v = tile.splat %me : tile<1xindex>
    %w = tile.convert %v : tile<1xf32>
    tile.store %O, %t, %w
    %ok, %x, %y, %z = tile.clc_query %resp, %slot : i1, index, index, index
    %n1 = tile.addi %n, %c1 : index
    tile.yield %ok, %x, %n1
  }
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        crate::verify(&m).unwrap();
        // Unbounded: CTA 0 runs tile 0, then steals 6, 5, ..., 1. Two steals per CTA: CTA 0
        // runs 0, 6, 5; CTA 1 runs 1, 4, 3; CTA 2 runs 2 and its request fails.
        for (steals, want) in [
            (u64::MAX, [0.0; 7]),
            (2, [0.0, 1.0, 2.0, 1.0, 1.0, 0.0, 0.0]),
        ] {
            let mut args = [ArgValue::Tensor(Tensor::filled(
                ScalarType::F32,
                &[7],
                -1.0,
            ))];
            let limits = Limits {
                clc_steals: steals,
                ..Limits::default()
            };
            run_with(&m, "k", &mut args, limits).unwrap();
            let o = args[0].tensor().unwrap().to_f32_vec().unwrap();
            assert_eq!(o, want, "{steals}");
        }
        // Cancellation takes CTAs from the end: no reverse launch.
        let mut args = [ArgValue::Tensor(Tensor::filled(
            ScalarType::F32,
            &[7],
            -1.0,
        ))];
        let limits = Limits {
            reverse: true,
            ..Limits::default()
        };
        let e = run_with(&m, "k", &mut args, limits)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not in reverse"), "{e}");
    }

    #[test]
    fn reverse_launches_ctas_from_the_last() {
        // Every program writes its id into O[0]: the last to run wins.
        let src = "tile.kernel @k(%O: tensor<?xf32>) {grid = [3, 2]} {
  %x = tile.program_id {dim = 0} : index
  %y = tile.program_id {dim = 1} : index
  %c0 = tile.constant {value = 0} : index
  %c3 = tile.constant {value = 3} : index
  %yx = tile.muli %y, %c3 : index
  %id = tile.addi %yx, %x : index
  %v = tile.splat %id : tile<1xindex>
  %w = tile.convert %v : tile<1xf32>
  tile.store %O, %c0, %w
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        crate::verify(&m).unwrap();
        for (reverse, want) in [(false, 5.0), (true, 0.0)] {
            let mut args = [ArgValue::Tensor(Tensor::filled(
                ScalarType::F32,
                &[1],
                -1.0,
            ))];
            let limits = Limits {
                reverse,
                ..Limits::default()
            };
            run_with(&m, "k", &mut args, limits).unwrap();
            let o = args[0].tensor().unwrap().to_f32_vec().unwrap();
            assert_eq!(o, [want], "reverse {reverse}");
        }
    }

    #[test]
    fn mma_reads_the_stages_smem_store_wrote() {
        // tile.mma of A and B staged [N][K] (b_major = "k") and [K][N] equals tile.dot.
        let src = "tile.kernel @k(%A: tensor<?x?xf32>, %B: tensor<?x?xf32>, %O1: tensor<?x?xf32>, \
            %O2: tensor<?x?xf32>, %O3: tensor<?x?xf32>) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %kn = tile.smem_alloc {swizzle = 128} : smem<2x3x2xf32>
  %nk = tile.smem_alloc {swizzle = 128} : smem<1x2x3xf32>
  %a = tile.load %A, %c0, %c0 : tile<2x3xf32>
  %b = tile.load %B, %c0, %c0 : tile<3x2xf32>
  %bt = tile.transpose %b : tile<2x3xf32>
  %z = tile.zeros : tile<2x2xf32>
  %d = tile.dot %a, %b, %z {precision = \"tf32\"} : tile<2x2xf32>
  tile.smem_store %b, %kn, %c1
  tile.smem_store %bt, %nk, %c0
  tile.fence_proxy_async
  tile.barrier
  %m1 = tile.mma %a, %kn, %c1, %z {kind = \"wgmma\", precision = \"tf32\", \
    zero_acc = true} : tile<2x2xf32>
  %m2 = tile.mma %a, %nk, %c0, %d {kind = \"wgmma\", b_major = \"k\", \
    precision = \"tf32\"} : tile<2x2xf32>
  tile.commit_group
  %w1, %w2 = tile.wait_group %m1, %m2 {pending = 0} : tile<2x2xf32>, tile<2x2xf32>
  tile.store %O1, %c0, %c0, %d
  tile.store %O2, %c0, %c0, %w1
  tile.store %O3, %c0, %c0, %w2
  tile.return
}
";
        let m = parse(src, "t.tile").unwrap();
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, -1.0, 0.5, 2.0, -2.0, 0.25];
        let mut args = vec![
            ArgValue::Tensor(Tensor::from_f32(ScalarType::F32, &[2, 3], &a)),
            ArgValue::Tensor(Tensor::from_f32(ScalarType::F32, &[3, 2], &b)),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[2, 2])),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[2, 2])),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[2, 2])),
        ];
        run(&m, "k", &mut args).unwrap();
        let out = |i: usize| args[i].tensor().unwrap().to_f64_vec();
        // A·B = [[1 + 1 - 6, -1 + 4 + 0.75], [4 + 2.5 - 12, -4 + 10 + 1.5]]
        assert_eq!(out(2), vec![-4.0, 3.75, -5.5, 7.5]);
        assert_eq!(out(3), out(2));
        assert_eq!(out(4), vec![-8.0, 7.5, -11.0, 15.0]);
    }
}
