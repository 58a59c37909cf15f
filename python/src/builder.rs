//! `tilec._tilec.Builder`: tile IR built from Python without text, over
//! `tilec_dialect::Builder`, which checks every op where the frontend makes it.
//!
//! The dialect builder borrows its module and fills regions through closures. The Python
//! object owns both (boxed, so neither moves) for its whole life. A structured op
//! (`kernel`, `for_loop`, `if_else`, `while_loop`) calls the Python body with the region's
//! builder as the current one; ops built inside go there. Only the thread inside a body may
//! build until it returns. A Python exception raised in a body is carried through the
//! dialect builder and raised again from the structured op.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::{self, ThreadId};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tilec::dialect::{
    self as d, BuildResult, CmpPredicate, Diagnostic, Expr, Location, Module, OpKind, Precision,
    ReduceKind, ScalarType, Type,
};

use super::BuildError;

type Raw = *mut d::Builder<'static>;

/// The module and its builder, owned by one Python `Builder`.
struct Session {
    /// The builder at top level (boxed; borrows `*module`).
    base: Raw,
    /// The module (boxed; only `base` and its region builders touch it).
    module: *mut Module,
    /// The builders of the regions whose Python bodies are running, innermost last.
    stack: Vec<Raw>,
    /// The thread running those bodies.
    thread: Option<ThreadId>,
    /// An exception a body raised, on its way out through the dialect builder.
    pending: Option<PyErr>,
}

// SAFETY: the pointers are owned by the session; a builder is used only by the thread
// that holds the GIL and, while a body runs, only by that body's thread (`current`).
unsafe impl Send for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: both came from Box::into_raw in `PyBuilder::new`; the builder, which
        // borrows the module, goes first. No body runs: it would hold a reference to the
        // Python object, which is being freed.
        unsafe {
            drop(Box::from_raw(self.base));
            drop(Box::from_raw(self.module));
        }
    }
}

static SERIAL: AtomicU64 = AtomicU64::new(1);

/// A masked write of the dialect builder: tensor, offsets, mask, value.
type WriteMasked =
    fn(&mut d::Builder<'static>, d::Value, &[d::Value], d::Value, d::Value) -> BuildResult<()>;

/// Builds tile IR: kernels, their ops and regions, checked as they are made.
#[pyclass(frozen, subclass, module = "tilec._tilec", name = "Builder")]
pub struct PyBuilder {
    serial: u64,
    s: Mutex<Session>,
}

/// A value of a [`PyBuilder`]'s module: an SSA value handle.
#[pyclass(frozen, module = "tilec._tilec", name = "Value")]
pub struct PyValue {
    v: u32,
    owner: u64,
    ty: String,
}

#[pymethods]
impl PyValue {
    /// The value's type as IR text spells it (`tile<64x64xf32>`).
    #[getter]
    fn r#type(&self) -> &str {
        &self.ty
    }

    /// The value's number in its module.
    #[getter]
    fn id(&self) -> u32 {
        self.v
    }

    fn __repr__(&self) -> String {
        format!("<tilec.Value #{}: {}>", self.v, self.ty)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyValue>()
            .is_ok_and(|o| o.get().v == self.v && o.get().owner == self.owner)
    }

    fn __hash__(&self) -> u64 {
        self.owner.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(self.v)
    }
}

/// A launch-grid expression over a kernel's integer arguments (`tilec::dialect::Expr`):
/// ints and `Builder.arg` results combine with `+`, `*`, `ceil_div` and `min`.
#[pyclass(frozen, module = "tilec._tilec", name = "GridExpr")]
#[derive(Clone)]
pub struct GridExpr(Expr);

fn grid_expr(o: &Bound<'_, PyAny>) -> PyResult<Expr> {
    if let Ok(e) = o.cast::<GridExpr>() {
        return Ok(e.get().0.clone());
    }
    if o.is_instance_of::<pyo3::types::PyBool>() || !o.is_instance_of::<pyo3::types::PyInt>() {
        let t = o.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "a grid expression is an int or a GridExpr (Builder.arg), found {t}"
        )));
    }
    Ok(Expr::Int(o.extract::<i64>()?))
}

#[pymethods]
impl GridExpr {
    /// ⌈self / other⌉.
    fn ceil_div(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        Ok(GridExpr(self.0.clone().ceil_div(grid_expr(other)?)))
    }

    /// min(self, other).
    fn min(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        Ok(GridExpr(self.0.clone().min(grid_expr(other)?)))
    }

    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        let o = Box::new(grid_expr(other)?);
        Ok(GridExpr(Expr::Add(Box::new(self.0.clone()), o)))
    }

    fn __radd__(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        let o = Box::new(grid_expr(other)?);
        Ok(GridExpr(Expr::Add(o, Box::new(self.0.clone()))))
    }

    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        let o = Box::new(grid_expr(other)?);
        Ok(GridExpr(Expr::Mul(Box::new(self.0.clone()), o)))
    }

    fn __rmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        let o = Box::new(grid_expr(other)?);
        Ok(GridExpr(Expr::Mul(o, Box::new(self.0.clone()))))
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("GridExpr({})", self.0)
    }
}

/// The `BuildError` for a diagnostic: the rendered text, and `diagnostics` as
/// `CompileError` has it.
fn build_error(py: Python<'_>, diag: &Diagnostic) -> PyErr {
    let err = BuildError::new_err(diag.render(None).trim_end().to_string());
    let item = (
        diag.loc.file.to_string(),
        diag.loc.line,
        diag.loc.col,
        diag.severity.to_string(),
        diag.message.clone(),
    );
    if let Err(e) = err.value(py).setattr("diagnostics", vec![item]) {
        return e;
    }
    err
}

fn parse_type(s: &str) -> PyResult<Type> {
    s.parse::<Type>().map_err(PyValueError::new_err)
}

fn scalar_type(s: &str) -> PyResult<ScalarType> {
    ScalarType::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = ScalarType::ALL.iter().map(|t| t.name()).collect();
        PyValueError::new_err(format!(
            "unknown element type '{s}' (one of {})",
            names.join(", ")
        ))
    })
}

fn op_kind(name: &str) -> PyResult<OpKind> {
    OpKind::from_name(name).ok_or_else(|| PyValueError::new_err(format!("no op '{name}'")))
}

impl PyBuilder {
    fn lock(&self) -> MutexGuard<'_, Session> {
        self.s
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The builder ops go to now: a running body's, else the top level's.
    fn current(&self) -> PyResult<Raw> {
        let s = self.lock();
        if let Some(t) = s.thread {
            if t != thread::current().id() {
                return Err(BuildError::new_err(
                    "this Builder is filling a kernel on another thread",
                ));
            }
        }
        Ok(*s.stack.last().unwrap_or(&s.base))
    }

    /// Runs `f` on the current builder; a refusal becomes the pending body exception or a
    /// `BuildError`.
    fn run<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut d::Builder<'static>) -> BuildResult<R>,
    ) -> PyResult<R> {
        let raw = self.current()?;
        // SAFETY: `raw` is the innermost live builder (the base, or the `&mut` a running
        // structured op lent to its body, which uses it only through this pointer), used on
        // the one thread allowed to; no other reference to it is used until `f` returns.
        let r = f(unsafe { &mut *raw });
        r.map_err(|diag| match self.lock().pending.take() {
            Some(e) => e,
            None => build_error(py, &diag),
        })
    }

    /// Calls a body with `inner` current; its exception is kept for [`PyBuilder::run`].
    fn enter<T>(
        &self,
        inner: &mut d::Builder<'static>,
        body: impl FnOnce() -> PyResult<T>,
    ) -> BuildResult<T> {
        {
            let mut s = self.lock();
            if s.stack.is_empty() {
                s.thread = Some(thread::current().id());
            }
            s.stack.push(inner as Raw);
        }
        let r = body();
        let mut s = self.lock();
        s.stack.pop();
        if s.stack.is_empty() {
            s.thread = None;
        }
        r.map_err(|e| {
            s.pending = Some(e);
            Diagnostic::error(Location::unknown(), "a Python exception in a body")
        })
    }

    fn handle(&self, o: &Bound<'_, PyAny>) -> PyResult<d::Value> {
        let Ok(v) = o.cast::<PyValue>() else {
            let t = o.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "expected a tilec Value, found {t}"
            )));
        };
        let v = v.get();
        if v.owner != self.serial {
            return Err(BuildError::new_err(format!(
                "value #{} belongs to another Builder",
                v.v
            )));
        }
        Ok(d::Value(v.v))
    }

    fn handles(&self, seq: &Bound<'_, PyAny>) -> PyResult<Vec<d::Value>> {
        if seq.cast::<PyValue>().is_ok() {
            return Ok(vec![self.handle(seq)?]);
        }
        if seq.is_none() {
            return Ok(vec![]);
        }
        if seq.is_instance_of::<PyList>() || seq.is_instance_of::<PyTuple>() {
            return seq.try_iter()?.map(|x| self.handle(&x?)).collect();
        }
        let t = seq.get_type().name()?;
        Err(PyTypeError::new_err(format!(
            "expected a Value, a list or tuple of Values, or None, found {t}"
        )))
    }

    fn wrap(&self, b: &d::Builder<'static>, v: d::Value) -> PyValue {
        let ty = b
            .module()
            .try_ty(v)
            .map_or_else(|| "?".to_string(), ToString::to_string);
        PyValue {
            v: v.0,
            owner: self.serial,
            ty,
        }
    }

    fn wrap_all<'py>(
        &self,
        py: Python<'py>,
        b: &d::Builder<'static>,
        vs: &[d::Value],
    ) -> PyResult<Vec<Bound<'py, PyValue>>> {
        vs.iter()
            .map(|&v| Bound::new(py, self.wrap(b, v)))
            .collect()
    }

    /// One op from its operands.
    fn one(
        &self,
        py: Python<'_>,
        operands: &[&Bound<'_, PyAny>],
        f: impl FnOnce(&mut d::Builder<'static>, &[d::Value]) -> BuildResult<d::Value>,
    ) -> PyResult<PyValue> {
        let vs: Vec<d::Value> = operands
            .iter()
            .map(|o| self.handle(o))
            .collect::<PyResult<_>>()?;
        self.run(py, |b| f(b, &vs).map(|v| self.wrap(b, v)))
    }

    /// A copy of the module, for compiling; refused while a body runs.
    pub fn snapshot(&self) -> PyResult<Module> {
        let s = self.lock();
        if !s.stack.is_empty() {
            return Err(BuildError::new_err(
                "the module cannot be compiled while a kernel is being built",
            ));
        }
        // SAFETY: no body runs, so the base builder is not borrowed; it is read only.
        Ok(unsafe { &*s.base }.module().clone())
    }

    fn text(&self) -> PyResult<String> {
        let raw = self.current()?;
        // SAFETY: as in `run`, read only.
        Ok(d::print_module(unsafe { &*raw }.module()))
    }
}

#[pymethods]
impl PyBuilder {
    #[new]
    fn new() -> Self {
        let module = Box::into_raw(Box::new(Module::new()));
        // SAFETY: the module is boxed and freed only after the builder (Session::drop).
        let base: Raw = Box::into_raw(Box::new(d::Builder::new(unsafe { &mut *module })));
        PyBuilder {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            s: Mutex::new(Session {
                base,
                module,
                stack: vec![],
                thread: None,
                pending: None,
            }),
        }
    }

    /// The module as IR text.
    fn __str__(&self) -> PyResult<String> {
        self.text()
    }

    /// The names of the kernels built so far.
    #[getter]
    fn kernels(&self) -> PyResult<Vec<String>> {
        let raw = self.current()?;
        // SAFETY: as in `run`, read only.
        let m = unsafe { &*raw }.module();
        Ok(m.kernels().filter_map(|k| k.symbol.clone()).collect())
    }

    /// Verifies the whole module; raises BuildError with the first diagnostic.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let m = self.snapshot()?;
        match d::verify(&m) {
            Ok(_) => Ok(()),
            Err(ds) => Err(match ds.0.first() {
                Some(first) => build_error(py, first),
                None => BuildError::new_err("the module does not verify"),
            }),
        }
    }

    /// The id the next op gets (its location is `SCOPE:ID:0`).
    #[getter]
    fn next_op_id(&self, py: Python<'_>) -> PyResult<u32> {
        self.run(py, |b| Ok(b.next_op_id()))
    }

    /// Gives every op built from now on the location `file:line:col`.
    fn set_loc(&self, py: Python<'_>, file: &str, line: u32, col: u32) -> PyResult<()> {
        self.run(py, |b| {
            b.set_loc(Location::new(file.into(), line, col));
            Ok(())
        })
    }

    /// Numbers the ops' locations again (`SCOPE:ID:0`), after `set_loc`.
    fn clear_loc(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |b| {
            b.clear_loc();
            Ok(())
        })
    }

    fn _scope(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, |b| Ok(b.scope().to_string()))
    }

    fn _set_scope(&self, py: Python<'_>, scope: &str) -> PyResult<()> {
        self.run(py, |b| {
            b.set_scope(scope);
            Ok(())
        })
    }

    /// Builds `tile.kernel @name`: `params` are (name, type) pairs (`("X",
    /// "tensor<?x?xf32>")`, `("N", "index")`); `body(builder, *args)` builds the body and
    /// calls `grid`.
    fn kernel(
        slf: &Bound<'_, Self>,
        name: &str,
        params: Vec<(String, String)>,
        body: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let params: Vec<(String, Type)> = params
            .into_iter()
            .map(|(n, t)| Ok((n, parse_type(&t)?)))
            .collect::<PyResult<_>>()?;
        let refs: Vec<(&str, Type)> = params
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        me.run(py, |b| {
            b.kernel(name, &refs, |inner, args| {
                let args = me.wrap_all(py, inner, args);
                me.enter(inner, || {
                    let mut call = vec![slf.clone().into_any()];
                    call.extend(args?.into_iter().map(Bound::into_any));
                    body.call1(PyTuple::new(py, call)?)?;
                    Ok(())
                })
            })
        })
    }

    /// Sets the launch grid: one to three ints or `GridExpr`s, x first.
    #[pyo3(signature = (*dims))]
    fn grid(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<()> {
        let dims: Vec<Expr> = dims
            .iter()
            .map(|x| grid_expr(&x))
            .collect::<PyResult<_>>()?;
        self.run(py, |b| b.grid(dims))
    }

    /// The grid expression of an integer argument of the kernel being built.
    fn arg(&self, py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<GridExpr> {
        let v = self.handle(v)?;
        self.run(py, |b| b.arg(v)).map(GridExpr)
    }

    /// Names a value (printed `%name`); returns it.
    fn name<'py>(
        &self,
        py: Python<'py>,
        v: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.handle(v)?;
        self.run(py, |b| b.name(h, name))?;
        Ok(v.clone())
    }

    /// `tile.for %i = lb to ub step step` carrying `inits`: `body(builder, i, *carried)`
    /// returns the next carried values (a Value, a list or tuple, or None); returns the
    /// loop's results as a list.
    #[pyo3(signature = (lb, ub, step, inits, body))]
    fn for_loop<'py>(
        slf: &Bound<'py, Self>,
        lb: &Bound<'py, PyAny>,
        ub: &Bound<'py, PyAny>,
        step: &Bound<'py, PyAny>,
        inits: &Bound<'py, PyAny>,
        body: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyValue>>> {
        let py = slf.py();
        let me = slf.get();
        let (lb, ub, step) = (me.handle(lb)?, me.handle(ub)?, me.handle(step)?);
        let inits = me.handles(inits)?;
        me.run(py, |b| {
            let rs = b.for_loop(lb, ub, step, &inits, |inner, iv, carried| {
                let iv = Bound::new(py, me.wrap(inner, iv));
                let carried = me.wrap_all(py, inner, carried);
                me.enter(inner, || {
                    let mut call = vec![slf.clone().into_any(), iv?.into_any()];
                    call.extend(carried?.into_iter().map(Bound::into_any));
                    me.handles(&body.call1(PyTuple::new(py, call)?)?)
                })
            })?;
            Ok(rs)
        })
        .and_then(|rs| me.results(py, &rs))
    }

    /// `tile.if cond`: `then(builder)` and `otherwise(builder)` return what their regions
    /// yield (a Value, a list or tuple, or None); returns the results as a list.
    fn if_else<'py>(
        slf: &Bound<'py, Self>,
        cond: &Bound<'py, PyAny>,
        then: &Bound<'py, PyAny>,
        otherwise: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyValue>>> {
        let py = slf.py();
        let me = slf.get();
        let cond = me.handle(cond)?;
        let region = |inner: &mut d::Builder<'static>, f: &Bound<'py, PyAny>| {
            me.enter(inner, || me.handles(&f.call1((slf.clone(),))?))
        };
        me.run(py, |b| {
            b.if_else(cond, |t| region(t, then), |e| region(e, otherwise))
        })
        .and_then(|rs| me.results(py, &rs))
    }

    /// `tile.while` (do-while) carrying `inits`: `body(builder, *carried)` returns
    /// `(cond, next)`, an `i1` Value and the next carried values; returns the values of the
    /// last iteration as a list.
    fn while_loop<'py>(
        slf: &Bound<'py, Self>,
        inits: &Bound<'py, PyAny>,
        body: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyValue>>> {
        let py = slf.py();
        let me = slf.get();
        let inits = me.handles(inits)?;
        me.run(py, |b| {
            b.while_loop(&inits, |inner, carried| {
                let carried = me.wrap_all(py, inner, carried);
                me.enter(inner, || {
                    let mut call = vec![slf.clone().into_any()];
                    call.extend(carried?.into_iter().map(Bound::into_any));
                    let r = body.call1(PyTuple::new(py, call)?)?;
                    let pair = r.cast::<PyTuple>().ok().filter(|t| t.len() == 2);
                    let Some(pair) = pair else {
                        return Err(PyTypeError::new_err(
                            "a while_loop body returns (cond, next values)",
                        ));
                    };
                    Ok((
                        me.handle(&pair.get_item(0)?)?,
                        me.handles(&pair.get_item(1)?)?,
                    ))
                })
            })
        })
        .and_then(|rs| me.results(py, &rs))
    }

    /// `tile.constant : index`.
    fn constant_index(&self, py: Python<'_>, v: i64) -> PyResult<PyValue> {
        self.run(py, |b| b.constant_index(v).map(|x| self.wrap(b, x)))
    }

    /// `tile.constant : ty` of an integer type (`i32`, `i64`, `index`, `i1`).
    fn constant_int(&self, py: Python<'_>, v: i64, ty: &str) -> PyResult<PyValue> {
        let ty = scalar_type(ty)?;
        self.run(py, |b| b.constant_int(v, ty).map(|x| self.wrap(b, x)))
    }

    /// `tile.constant : ty` of a float type.
    fn constant_float(&self, py: Python<'_>, v: f64, ty: &str) -> PyResult<PyValue> {
        let ty = scalar_type(ty)?;
        self.run(py, |b| b.constant_float(v, ty).map(|x| self.wrap(b, x)))
    }

    /// `tile.program_id` along `dim` (0 = x).
    fn program_id(&self, py: Python<'_>, dim: usize) -> PyResult<PyValue> {
        self.run(py, |b| b.program_id(dim).map(|x| self.wrap(b, x)))
    }

    /// `tile.num_programs` along `dim`.
    fn num_programs(&self, py: Python<'_>, dim: usize) -> PyResult<PyValue> {
        self.run(py, |b| b.num_programs(dim).map(|x| self.wrap(b, x)))
    }

    /// `tile.dim`: the size of a tensor argument along `dim`.
    fn dim(&self, py: Python<'_>, tensor: &Bound<'_, PyAny>, dim: usize) -> PyResult<PyValue> {
        self.one(py, &[tensor], |b, v| b.dim(v[0], dim))
    }

    /// A two-operand op by its name (`tile.add`, `tile.addi`).
    fn _binary(
        &self,
        py: Python<'_>,
        op: &str,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<PyValue> {
        let kind = op_kind(op)?;
        self.one(py, &[a, b], |bl, v| {
            if kind.class() == d::OpClass::IntBinary {
                bl.int_op(kind, v[0], v[1])
            } else {
                bl.binary(kind, v[0], v[1])
            }
        })
    }

    /// A one-operand op by its name (`tile.exp`).
    fn _unary(&self, py: Python<'_>, op: &str, a: &Bound<'_, PyAny>) -> PyResult<PyValue> {
        let kind = op_kind(op)?;
        self.one(py, &[a], |b, v| b.unary(kind, v[0]))
    }

    /// `tile.cmpi` with a signed predicate: `eq`, `ne`, `slt`, `sle`, `sgt` or `sge`.
    fn cmpi(
        &self,
        py: Python<'_>,
        predicate: &str,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<PyValue> {
        let p = CmpPredicate::from_name(predicate).ok_or_else(|| {
            PyValueError::new_err(format!("unknown cmpi predicate '{predicate}'"))
        })?;
        self.one(py, &[a, b], |bl, v| bl.cmpi(p, v[0], v[1]))
    }

    /// `tile.select cond, a, b`.
    fn select(
        &self,
        py: Python<'_>,
        cond: &Bound<'_, PyAny>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<PyValue> {
        self.one(py, &[cond, a, b], |bl, v| bl.select(v[0], v[1], v[2]))
    }

    /// `tile.load` of a `shape` tile at `offsets` (index Values, one per dimension);
    /// with `padding`, elements outside the tensor read as it (else 0).
    #[pyo3(signature = (tensor, offsets, shape, padding=None))]
    fn load(
        &self,
        py: Python<'_>,
        tensor: &Bound<'_, PyAny>,
        offsets: &Bound<'_, PyAny>,
        shape: Vec<u64>,
        padding: Option<f64>,
    ) -> PyResult<PyValue> {
        let t = self.handle(tensor)?;
        let offs = self.handles(offsets)?;
        self.run(py, |b| {
            match padding {
                Some(p) => b.load_padded(t, &offs, &shape, p),
                None => b.load(t, &offs, &shape),
            }
            .map(|x| self.wrap(b, x))
        })
    }

    /// `tile.gather`: rows `rows` (an index tile) of `tensor`, `cols` columns from `col`.
    fn gather(
        &self,
        py: Python<'_>,
        tensor: &Bound<'_, PyAny>,
        rows: &Bound<'_, PyAny>,
        col: &Bound<'_, PyAny>,
        cols: u64,
    ) -> PyResult<PyValue> {
        self.one(py, &[tensor, rows, col], |b, v| {
            b.gather(v[0], v[1], v[2], cols)
        })
    }

    /// `tile.extract`: one element of `tensor` at `indices` (index Values, one per
    /// dimension) as a scalar of its element type; zero outside the tensor.
    fn extract(
        &self,
        py: Python<'_>,
        tensor: &Bound<'_, PyAny>,
        indices: &Bound<'_, PyAny>,
    ) -> PyResult<PyValue> {
        let t = self.handle(tensor)?;
        let idx = self.handles(indices)?;
        self.run(py, |b| b.extract(t, &idx).map(|x| self.wrap(b, x)))
    }

    /// `tile.store` of `value` at `offsets`; with `mask` (an i1 tile of the value's
    /// shape), only where it is true.
    #[pyo3(signature = (tensor, offsets, value, mask=None))]
    fn store(
        &self,
        py: Python<'_>,
        tensor: &Bound<'_, PyAny>,
        offsets: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        match mask {
            None => self.write(py, [tensor, offsets, value], d::Builder::store),
            Some(m) => self.write_masked(py, [tensor, offsets, m, value], d::Builder::store_masked),
        }
    }

    /// `tile.atomic_add` of `value` at `offsets` (`red.global.add`); with `mask`, only
    /// where it is true.
    #[pyo3(signature = (tensor, offsets, value, mask=None))]
    fn atomic_add(
        &self,
        py: Python<'_>,
        tensor: &Bound<'_, PyAny>,
        offsets: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        mask: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        match mask {
            None => self.write(py, [tensor, offsets, value], d::Builder::atomic_add),
            Some(m) => self.write_masked(
                py,
                [tensor, offsets, m, value],
                d::Builder::atomic_add_masked,
            ),
        }
    }

    /// `tile.wait_flag flags, pos, value`: wait until `flags[pos] == value` (acquire, GPU
    /// scope).
    fn wait_flag(
        &self,
        py: Python<'_>,
        flags: &Bound<'_, PyAny>,
        pos: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.flag(py, [flags, pos, value], d::Builder::wait_flag)
    }

    /// `tile.release_flag flags, pos, value`: after the program's writes, set
    /// `flags[pos] = value` (release, GPU scope).
    fn release_flag(
        &self,
        py: Python<'_>,
        flags: &Bound<'_, PyAny>,
        pos: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.flag(py, [flags, pos, value], d::Builder::release_flag)
    }

    /// `tile.arrive_flag flags, pos`: after the program's writes, add 1 to `flags[pos]`;
    /// the value before (an index).
    fn arrive_flag(
        &self,
        py: Python<'_>,
        flags: &Bound<'_, PyAny>,
        pos: &Bound<'_, PyAny>,
    ) -> PyResult<PyValue> {
        self.one(py, &[flags, pos], |b, v| b.arrive_flag(v[0], v[1]))
    }

    /// `tile.dot a, b, acc` (`precision`: `ieee`, or `tf32` for f32 operands).
    #[pyo3(signature = (a, b, acc, precision="ieee"))]
    fn dot(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        acc: &Bound<'_, PyAny>,
        precision: &str,
    ) -> PyResult<PyValue> {
        let p = Precision::from_name(precision)
            .ok_or_else(|| PyValueError::new_err(format!("unknown precision '{precision}'")))?;
        self.one(py, &[a, b, acc], |bl, v| bl.dot_with(v[0], v[1], v[2], p))
    }

    /// `tile.convert` to element type `elem`.
    fn convert(&self, py: Python<'_>, a: &Bound<'_, PyAny>, elem: &str) -> PyResult<PyValue> {
        let e = scalar_type(elem)?;
        self.one(py, &[a], |b, v| b.convert(v[0], e))
    }

    /// `tile.transpose` of a 2-D tile.
    fn transpose(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<PyValue> {
        self.one(py, &[a], |b, v| b.transpose(v[0]))
    }

    /// `tile.reshape` to `shape` (same element count).
    fn reshape(&self, py: Python<'_>, a: &Bound<'_, PyAny>, shape: Vec<u64>) -> PyResult<PyValue> {
        self.one(py, &[a], |b, v| b.reshape(v[0], &shape))
    }

    /// `tile.broadcast` of dimensions of 1 to `shape`.
    fn broadcast(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        shape: Vec<u64>,
    ) -> PyResult<PyValue> {
        self.one(py, &[a], |b, v| b.broadcast(v[0], &shape))
    }

    /// `tile.extract_slice`: the `sizes` box of `a` that starts at the constant `offsets`
    /// (one per dimension; the box must lie inside `a`).
    fn extract_slice(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        offsets: Vec<u64>,
        sizes: Vec<u64>,
    ) -> PyResult<PyValue> {
        self.one(py, &[a], |b, v| b.extract_slice(v[0], &offsets, &sizes))
    }

    /// `tile.splat` of a scalar to a `shape` tile.
    fn splat(&self, py: Python<'_>, s: &Bound<'_, PyAny>, shape: Vec<u64>) -> PyResult<PyValue> {
        self.one(py, &[s], |b, v| b.splat(v[0], &shape))
    }

    /// `tile.reduce` along `dim` (`kind`: `add`, `max`, `min`); the dimension becomes 1.
    fn reduce(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        dim: usize,
        kind: &str,
    ) -> PyResult<PyValue> {
        let k = ReduceKind::from_name(kind)
            .ok_or_else(|| PyValueError::new_err(format!("unknown reduction '{kind}'")))?;
        self.one(py, &[a], |b, v| b.reduce(v[0], dim, k))
    }

    /// `tile.iota`: each element's coordinate along `dim`.
    fn iota(&self, py: Python<'_>, shape: Vec<u64>, elem: &str, dim: usize) -> PyResult<PyValue> {
        let e = scalar_type(elem)?;
        self.run(py, |b| b.iota(&shape, e, dim).map(|x| self.wrap(b, x)))
    }

    /// `tile.zeros` of `shape` and `elem`.
    fn zeros(&self, py: Python<'_>, shape: Vec<u64>, elem: &str) -> PyResult<PyValue> {
        let e = scalar_type(elem)?;
        self.run(py, |b| b.zeros(&shape, e).map(|x| self.wrap(b, x)))
    }
}

impl PyBuilder {
    /// A store-like op: a tensor, its offsets, a value.
    fn write(
        &self,
        py: Python<'_>,
        [tensor, offsets, value]: [&Bound<'_, PyAny>; 3],
        op: fn(&mut d::Builder<'static>, d::Value, &[d::Value], d::Value) -> BuildResult<()>,
    ) -> PyResult<()> {
        let (t, offs, v) = (
            self.handle(tensor)?,
            self.handles(offsets)?,
            self.handle(value)?,
        );
        self.run(py, |b| op(b, t, &offs, v))
    }

    /// A masked `tile.store` / `tile.atomic_add` (tensor, offsets, mask, value).
    fn write_masked(
        &self,
        py: Python<'_>,
        [tensor, offsets, mask, value]: [&Bound<'_, PyAny>; 4],
        op: WriteMasked,
    ) -> PyResult<()> {
        let (t, offs, m, v) = (
            self.handle(tensor)?,
            self.handles(offsets)?,
            self.handle(mask)?,
            self.handle(value)?,
        );
        self.run(py, |b| op(b, t, &offs, m, v))
    }

    /// `tile.wait_flag` / `tile.release_flag` (flags, position, value; no result).
    fn flag(
        &self,
        py: Python<'_>,
        operands: [&Bound<'_, PyAny>; 3],
        op: fn(&mut d::Builder<'static>, d::Value, d::Value, d::Value) -> BuildResult<()>,
    ) -> PyResult<()> {
        let [f, p, v] = operands.map(|o| self.handle(o));
        let (f, p, v) = (f?, p?, v?);
        self.run(py, |b| op(b, f, p, v))
    }

    fn results<'py>(&self, py: Python<'py>, rs: &[d::Value]) -> PyResult<Vec<Bound<'py, PyValue>>> {
        let raw = self.current()?;
        // SAFETY: as in `run`, read only.
        self.wrap_all(py, unsafe { &*raw }, rs)
    }
}

/// The names of the tile-level ops (those a source kernel may hold), for the test that
/// every one has a `Builder` method.
#[pyfunction]
pub fn tile_ops() -> Vec<&'static str> {
    OpKind::ALL
        .iter()
        .filter(|k| !k.is_gpu_level())
        .map(|k| k.name())
        .collect()
}
