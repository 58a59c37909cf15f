//! Property: `tile-simplify` (then `cse`, `dce`: the level-1 passes of the default
//! pipeline) keeps what a program computes. Random level-1 tile programs — elementwise
//! chains, converts, transposes, reshapes, broadcasts, splats, selects, dots, K loops
//! with scaled and transposed operands and add-after-dot accumulation, branches, stores
//! in the middle — run in the reference interpreter before and after on random inputs
//! (with −0 and exact zeros among them, two programs, ragged edges); every output element
//! must be the same bits (any NaN equals any NaN).
//!
//! The inputs have full random mantissas with magnitudes in [1/4, 2) (and exact zeros,
//! −0, small multiples of 1/8), and the hoisted scales are powers of two in [1/4, 4]: the
//! range where moving a power-of-two scale out of a loop is exact (no overflow, no
//! subnormals); everything else the pass does is exact for all inputs.
//!
//! `PROPTEST_CASES=5000 cargo test -p tilec-passes --test simplify_prop` runs the
//! 5,000-case version (the default is proptest's 256).
//!
//! A second property runs `tile-simplify{reassociate=true}` on K loops with arbitrary
//! loop-invariant scales and checks the results within a stated tolerance.

use proptest::prelude::*;
use tilec_dialect::interp::{self, ArgValue, Tensor};
use tilec_dialect::{parse, print_module, verify, Module, ScalarType};
use tilec_passes::PassManager;

/// xorshift64*: the program generator's randomness (proptest draws the seed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

#[derive(Clone, Debug, PartialEq)]
struct T {
    shape: Vec<u64>,
    elem: &'static str,
}

impl T {
    fn tile(r: u64, c: u64, elem: &'static str) -> T {
        T {
            shape: vec![r, c],
            elem,
        }
    }
    fn scalar(elem: &'static str) -> T {
        T {
            shape: vec![],
            elem,
        }
    }
    fn text(&self) -> String {
        if self.shape.is_empty() {
            self.elem.to_string()
        } else {
            format!(
                "tile<{}x{}>",
                self.shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("x"),
                self.elem
            )
        }
    }
    fn is_tile(&self) -> bool {
        !self.shape.is_empty()
    }
}

const ELEMS: [&str; 3] = ["f32", "bf16", "f16"];
const SHAPES: [[u64; 2]; 8] = [
    [4, 8],
    [8, 4],
    [4, 4],
    [8, 8],
    [1, 8],
    [8, 1],
    [4, 1],
    [1, 4],
];

fn tensor_of(elem: &str) -> &'static str {
    match elem {
        "f32" => "%X",
        "bf16" => "%Y",
        _ => "%H",
    }
}

fn out_of(elem: &str) -> &'static str {
    match elem {
        "f32" => "%O",
        "bf16" => "%P",
        _ => "%Q",
    }
}

struct Gen {
    rng: Rng,
    lines: Vec<String>,
    indent: usize,
    next: usize,
    /// Values in scope, by name and type; `scopes` marks where each block's start.
    pool: Vec<(String, T)>,
    loops: usize,
}

impl Gen {
    fn emit(&mut self, s: String) {
        self.lines
            .push(format!("{}{}", "  ".repeat(self.indent), s));
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    fn def(&mut self, rhs: String, ty: T) -> String {
        let n = self.fresh();
        self.emit(format!("{n} = {rhs} : {}", ty.text()));
        self.pool.push((n.clone(), ty));
        n
    }

    fn of_type(&mut self, ty: &T) -> Option<String> {
        let c: Vec<String> = self
            .pool
            .iter()
            .filter(|(_, t)| t == ty)
            .map(|(n, _)| n.clone())
            .collect();
        (!c.is_empty()).then(|| self.rng.pick(&c).clone())
    }

    fn any_value(&mut self) -> (String, T) {
        let i = self.rng.below(self.pool.len());
        self.pool[i].clone()
    }

    fn constant(&mut self, elem: &'static str) -> String {
        let v = *self
            .rng
            .pick(&[0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 0.25, -4.0, 3.0, 0.1, 1.5]);
        self.def(format!("tile.constant {{value = {v:?}}}"), T::scalar(elem))
    }

    fn splat_of(&mut self, ty: &T) -> String {
        let s = if self.rng.chance(30) {
            match ty.elem {
                "f32" => "%alpha".to_string(),
                "bf16" => "%beta".to_string(),
                _ => self.constant(ty.elem),
            }
        } else {
            self.constant(ty.elem)
        };
        if self.rng.chance(15) {
            return self.def("tile.zeros".into(), ty.clone());
        }
        self.def(format!("tile.splat {s}"), ty.clone())
    }

    /// A value of type `ty`: one in scope, or a new load/splat.
    fn value(&mut self, ty: &T) -> String {
        if self.rng.chance(70) {
            if let Some(v) = self.of_type(ty) {
                return v;
            }
        }
        if ty.is_tile() && self.rng.chance(60) {
            self.load(ty)
        } else if ty.is_tile() {
            self.splat_of(ty)
        } else {
            self.constant(ty.elem)
        }
    }

    fn load(&mut self, ty: &T) -> String {
        let r = self.rng.pick(&["%row", "%c0", "%c4", "%c8"]).to_string();
        let c = self.rng.pick(&["%c0", "%c4", "%c8"]).to_string();
        self.def(
            format!("tile.load {}, {r}, {c}", tensor_of(ty.elem)),
            ty.clone(),
        )
    }

    fn random_tile_type(&mut self) -> T {
        let s = *self.rng.pick(&SHAPES);
        let e = *self.rng.pick(&ELEMS);
        T::tile(s[0], s[1], e)
    }

    /// One random op (or idiom) appended to the current block.
    fn op(&mut self) {
        match self.rng.below(22) {
            0 | 1 => {
                let t = self.random_tile_type();
                self.load(&t);
            }
            2..=4 => {
                let (x, t) = self.any_value();
                if !t.elem.starts_with('f') {
                    return;
                }
                let y = self.value(&t);
                let op = self.rng.pick(&["add", "sub", "mul", "div", "max", "min"]);
                let (a, b) = if self.rng.chance(50) { (x, y) } else { (y, x) };
                self.def(format!("tile.{op} {a}, {b}"), t);
            }
            5 | 6 => {
                let (x, t) = self.any_value();
                let op = self.rng.pick(&[
                    "neg", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "relu",
                ]);
                self.def(format!("tile.{op} {x}"), t);
            }
            7 => {
                let (x, t) = self.any_value();
                let e = *self.rng.pick(&ELEMS);
                self.def(format!("tile.convert {x}"), T { elem: e, ..t });
            }
            8 => {
                let (x, t) = self.any_value();
                if t.shape.len() == 2 {
                    self.def(
                        format!("tile.transpose {x}"),
                        T::tile(t.shape[1], t.shape[0], t.elem),
                    );
                }
            }
            9 => {
                let (x, t) = self.any_value();
                if t.is_tile() {
                    let n: u64 = t.shape.iter().product();
                    let to: Vec<[u64; 2]> = SHAPES
                        .iter()
                        .filter(|s| s[0] * s[1] == n)
                        .copied()
                        .collect();
                    if !to.is_empty() {
                        let s = *self.rng.pick(&to);
                        self.def(format!("tile.reshape {x}"), T::tile(s[0], s[1], t.elem));
                    }
                }
            }
            10 => {
                let (x, t) = self.any_value();
                if !t.is_tile() {
                    let s = *self.rng.pick(&SHAPES);
                    self.def(format!("tile.broadcast {x}"), T::tile(s[0], s[1], t.elem));
                } else if t.shape[0] == 1 || t.shape[1] == 1 {
                    let other = *self.rng.pick(&[4u64, 8]);
                    let to = if t.shape[0] == 1 {
                        T::tile(other, t.shape[1], t.elem)
                    } else {
                        T::tile(t.shape[0], other, t.elem)
                    };
                    self.def(format!("tile.broadcast {x}"), to);
                }
            }
            11 => {
                let (x, t) = self.any_value();
                let y = self.value(&t);
                self.def(format!("tile.select %isz, {x}, {y}"), t);
            }
            12 => self.dot(),
            13 | 14 => self.idiom(),
            15 => self.store(),
            16 if self.loops < 2 && self.indent == 1 => self.k_loop(),
            17 if self.indent == 1 => self.branch(),
            _ => {
                let t = self.random_tile_type();
                self.splat_of(&t);
            }
        }
    }

    /// A pattern one of the rules is for, on random operands.
    fn idiom(&mut self) {
        let t = self.random_tile_type();
        let x = self.value(&t);
        match self.rng.below(12) {
            0 => {
                let tt = T::tile(t.shape[1], t.shape[0], t.elem);
                let a = self.def(format!("tile.transpose {x}"), tt);
                self.def(format!("tile.transpose {a}"), t);
            }
            1 => {
                // The rounding chain that must not fold (when t is f32).
                let narrow = *self.rng.pick(&["bf16", "f16"]);
                let a = self.def(
                    format!("tile.convert {x}"),
                    T {
                        elem: narrow,
                        ..t.clone()
                    },
                );
                self.def(format!("tile.convert {a}"), t);
            }
            2 => {
                let a = self.def(
                    format!("tile.convert {x}"),
                    T {
                        elem: "f32",
                        ..t.clone()
                    },
                );
                let e = *self.rng.pick(&ELEMS);
                self.def(format!("tile.convert {a}"), T { elem: e, ..t });
            }
            3 => {
                let c = self.constant(t.elem);
                let s = self.def(format!("tile.splat {c}"), t.clone());
                let op = self.rng.pick(&["add", "sub", "mul", "div", "max", "min"]);
                self.def(format!("tile.{op} {x}, {s}"), t);
            }
            4 => {
                let w = T {
                    elem: "f32",
                    ..t.clone()
                };
                let y = self.value(&t);
                let a = self.def(format!("tile.convert {x}"), w.clone());
                let b = self.def(format!("tile.convert {y}"), w.clone());
                let op = self
                    .rng
                    .pick(&["add", "sub", "mul", "div", "max", "min", "sqrt"]);
                let r = if *op == "sqrt" {
                    self.def(format!("tile.sqrt {a}"), w)
                } else {
                    self.def(format!("tile.{op} {a}, {b}"), w)
                };
                self.def(format!("tile.convert {r}"), t);
            }
            5 => {
                let a = self.def(format!("tile.neg {x}"), t.clone());
                let op = self.rng.pick(&["neg", "abs", "relu"]);
                self.def(format!("tile.{op} {a}"), t);
            }
            6 => {
                let z = self.def("tile.zeros".into(), t.clone());
                self.def(format!("tile.max {x}, {z}"), t);
            }
            7 => {
                let n = self.constant(t.elem);
                let m = self.def(format!("tile.neg {n}"), T::scalar(t.elem));
                let s = self.def(format!("tile.splat {m}"), t.clone());
                self.def(format!("tile.add {s}, {x}"), t);
            }
            8 => {
                // Add after a dot.
                let (m, n, k) = (t.shape[0], t.shape[1], *self.rng.pick(&[1u64, 4, 8]));
                let e = *self.rng.pick(&["bf16", "f16", "f32"]);
                let a = self.value(&T::tile(m, k, e));
                let b = self.value(&T::tile(k, n, e));
                let acc = T::tile(
                    m,
                    n,
                    if e == "f16" && self.rng.chance(50) {
                        "f16"
                    } else {
                        "f32"
                    },
                );
                let z = self.def("tile.zeros".into(), acc.clone());
                let d = self.def(format!("tile.dot {a}, {b}, {z}"), acc.clone());
                let c = self.value(&acc);
                let op = self.rng.pick(&["add", "sub"]);
                if self.rng.chance(50) && *op == "add" {
                    self.def(format!("tile.add {c}, {d}"), acc);
                } else {
                    self.def(format!("tile.{op} {d}, {c}"), acc);
                }
            }
            9 => {
                // Elementwise on broadcast rows.
                let row = T::tile(1, t.shape[1], t.elem);
                let r1 = self.value(&row);
                let r2 = self.value(&row);
                let full = T::tile(*self.rng.pick(&[4u64, 8]), t.shape[1], t.elem);
                let b1 = self.def(format!("tile.broadcast {r1}"), full.clone());
                let b2 = self.def(format!("tile.broadcast {r2}"), full.clone());
                let op = self.rng.pick(&["add", "mul", "max", "relu", "sub"]);
                if *op == "relu" {
                    self.def(format!("tile.relu {b1}"), full);
                } else {
                    self.def(format!("tile.{op} {b1}, {b2}"), full);
                }
            }
            10 => {
                // A dot of transposes.
                let (m, n) = (t.shape[0], t.shape[1]);
                let k = *self.rng.pick(&[1u64, 4, 8]);
                let e = *self.rng.pick(&["bf16", "f32"]);
                let at = self.value(&T::tile(k, m, e));
                let bt = self.value(&T::tile(n, k, e));
                let a = self.def(format!("tile.transpose {at}"), T::tile(m, k, e));
                let b = self.def(format!("tile.transpose {bt}"), T::tile(k, n, e));
                let c = self.value(&T::tile(m, n, "f32"));
                let d = self.def(format!("tile.dot {a}, {b}, {c}"), T::tile(m, n, "f32"));
                if self.rng.chance(50) {
                    self.def(format!("tile.transpose {d}"), T::tile(n, m, "f32"));
                }
            }
            _ => {
                let p = *self.rng.pick(&["2.0", "0.5", "4.0", "3.0"]);
                let c = self.def(format!("tile.constant {{value = {p}}}"), T::scalar(t.elem));
                let s = self.def(format!("tile.splat {c}"), t.clone());
                self.def(format!("tile.div {x}, {s}"), t);
            }
        }
    }

    fn dot(&mut self) {
        let (m, k, n) = (
            *self.rng.pick(&[1u64, 4, 8]),
            *self.rng.pick(&[1u64, 4, 8]),
            *self.rng.pick(&[1u64, 4, 8]),
        );
        let e = *self.rng.pick(&ELEMS);
        let acc = if e == "f16" && self.rng.chance(50) {
            "f16"
        } else {
            "f32"
        };
        let a = self.value(&T::tile(m, k, e));
        let b = self.value(&T::tile(k, n, e));
        let c = self.value(&T::tile(m, n, acc));
        self.def(format!("tile.dot {a}, {b}, {c}"), T::tile(m, n, acc));
    }

    fn store(&mut self) {
        let tiles: Vec<(String, T)> = self
            .pool
            .iter()
            .filter(|(_, t)| t.is_tile())
            .cloned()
            .collect();
        if tiles.is_empty() {
            return;
        }
        let (v, t) = self.rng.pick(&tiles).clone();
        let c = self.rng.pick(&["%c0", "%c8", "%c16"]).to_string();
        self.emit(format!("tile.store {}, %row, {c}, {v}", out_of(t.elem)));
    }

    /// A K loop: `acc = dot(a', b', acc)` with a' and b' loads, possibly scaled by a
    /// splat, transposed twice, or loaded N×K and transposed; accumulated directly or by
    /// an add after a zero-accumulator dot.
    fn k_loop(&mut self) {
        self.loops += 1;
        let (m, n) = (*self.rng.pick(&[4u64, 8]), *self.rng.pick(&[4u64, 8]));
        let e = *self.rng.pick(&["bf16", "bf16", "f16", "f32"]);
        let acc = T::tile(m, n, "f32");
        let init = match self.rng.below(3) {
            0 => self.load(&acc),
            _ => self.def("tile.zeros".into(), acc.clone()),
        };
        let ub = if self.rng.chance(50) {
            "%n".to_string()
        } else {
            self.rng.pick(&["%c8", "%c16"]).to_string()
        };
        // A scale, defined before the loop or inside it.
        let scale_val = *self.rng.pick(&["0.5", "2.0", "4.0", "0.25", "3.0"]);
        let outside_scale = self.rng.chance(50);
        let mut scale_line = None;
        let sc_name = self.fresh();
        let sp_name = self.fresh();
        let a_ty = T::tile(m, 4, e);
        if outside_scale {
            self.emit(format!(
                "{sc_name} = tile.constant {{value = {scale_val}}} : {e}"
            ));
            self.emit(format!(
                "{sp_name} = tile.splat {sc_name} : {}",
                a_ty.text()
            ));
        } else {
            scale_line = Some(scale_val);
        }
        let res = self.fresh();
        let (k, c) = (self.fresh(), self.fresh());
        self.emit(format!(
            "{res} = tile.for %c0, {ub}, %c4, {init} : {} {{",
            acc.text()
        ));
        self.emit(format!("^bb0({k}: index, {c}: {}):", acc.text()));
        self.indent += 1;
        let saved = self.pool.len();
        if let Some(v) = scale_line {
            self.emit(format!("{sc_name} = tile.constant {{value = {v}}} : {e}"));
            self.emit(format!(
                "{sp_name} = tile.splat {sc_name} : {}",
                a_ty.text()
            ));
        }
        // A operand.
        let a = self.def(
            format!("tile.load {}, %row, {k}", tensor_of(e)),
            a_ty.clone(),
        );
        let a = match self.rng.below(4) {
            0 | 1 => self.def(format!("tile.mul {a}, {sp_name}"), a_ty.clone()),
            2 => {
                let t = self.def(format!("tile.transpose {a}"), T::tile(4, m, e));
                self.def(format!("tile.transpose {t}"), a_ty.clone())
            }
            _ => a,
        };
        // B operand.
        let b_ty = T::tile(4, n, e);
        let b = match self.rng.below(3) {
            0 => {
                let bt = self.def(
                    format!("tile.load {}, %c0, {k}", tensor_of(e)),
                    T::tile(n, 4, e),
                );
                self.def(format!("tile.transpose {bt}"), b_ty.clone())
            }
            _ => self.def(
                format!("tile.load {}, {k}, %c0", tensor_of(e)),
                b_ty.clone(),
            ),
        };
        let b = if self.rng.chance(25) {
            let s = self.def(format!("tile.splat {sc_name}"), b_ty.clone());
            self.def(format!("tile.mul {s}, {b}"), b_ty)
        } else {
            b
        };
        let d = if self.rng.chance(50) {
            self.def(format!("tile.dot {a}, {b}, {c}"), acc.clone())
        } else {
            let z = self.def("tile.zeros".into(), acc.clone());
            let p = self.def(format!("tile.dot {a}, {b}, {z}"), acc.clone());
            if self.rng.chance(50) {
                self.def(format!("tile.add {c}, {p}"), acc.clone())
            } else {
                self.def(format!("tile.add {p}, {c}"), acc.clone())
            }
        };
        if self.rng.chance(20) {
            self.emit(format!("tile.store %O, %row, %c0, {d}"));
        }
        self.emit(format!("tile.yield {d}"));
        self.indent -= 1;
        self.pool.truncate(saved);
        self.emit("}".into());
        self.pool.push((res, acc));
    }

    fn branch(&mut self) {
        let (x, t) = self.any_value();
        let r = self.fresh();
        self.emit(format!("{r} = tile.if %isz : {} {{", t.text()));
        self.indent += 1;
        let saved = self.pool.len();
        for _ in 0..self.rng.below(3) {
            self.op();
        }
        let y = self.value(&t);
        self.emit(format!("tile.yield {y}"));
        self.pool.truncate(saved);
        self.indent -= 1;
        self.emit("} {".into());
        self.indent += 1;
        let n = self.def(format!("tile.neg {x}"), t.clone());
        self.emit(format!("tile.yield {n}"));
        self.pool.truncate(saved);
        self.indent -= 1;
        self.emit("}".into());
        self.pool.push((r, t));
    }
}

/// A random program of about `size` ops.
fn program(seed: u64, size: usize) -> String {
    let mut g = Gen {
        rng: Rng(seed | 1),
        lines: vec![],
        indent: 1,
        next: 0,
        pool: vec![],
        loops: 0,
    };
    for (name, t) in [("%alpha", T::scalar("f32")), ("%beta", T::scalar("bf16"))] {
        g.pool.push((name.to_string(), t));
    }
    for _ in 0..size {
        g.op();
    }
    // Store the last few tile values (the rest may be dead).
    let tiles: Vec<(String, T)> = g
        .pool
        .iter()
        .filter(|(_, t)| t.is_tile())
        .cloned()
        .collect();
    for (i, (v, t)) in tiles.iter().rev().take(4).enumerate() {
        g.emit(format!(
            "tile.store {}, %row, %c{}, {v}",
            out_of(t.elem),
            [0, 8, 16, 4][i]
        ));
    }
    let mut s = String::from(
        "tile.kernel @k(%X: tensor<?x?xf32>, %Y: tensor<?x?xbf16>, %H: tensor<?x?xf16>, %O: \
            tensor<?x?xf32>, %P: tensor<?x?xbf16>, %Q: tensor<?x?xf16>, %n: index, %alpha: f32, \
            %beta: bf16) {grid = [2]} {\n",
    );
    s.push_str(
        "  %pid = tile.program_id {dim = 0} : index\n  %c0 = tile.constant {value = 0} : index\n  \
            %c4 = tile.constant {value = 4} : index\n  %c8 = tile.constant {value = 8} : index\n  \
            %c16 = tile.constant {value = 16} : index\n  %row = tile.muli %pid, %c4 : index\n  \
            %isz = tile.cmpi %pid, %c0 {predicate = \"eq\"} : i1\n",
    );
    for l in &g.lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("  tile.return\n}\n");
    s
}

/// Inputs: random mantissas in ±[1/4, 2), with exact zeros, −0 and multiples of 1/8.
fn inputs(seed: u64) -> Vec<ArgValue> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut tensor = |elem: ScalarType, rows: usize, cols: usize| {
        let v: Vec<f32> = (0..rows * cols)
            .map(|_| match rng.below(10) {
                0 => -0.0,
                1 => 0.0,
                2 => (rng.below(33) as f32 - 16.0) / 8.0,
                _ => {
                    // A full random mantissa, magnitude in [1/4, 2).
                    let m = 1.0 + (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
                    let sign = if rng.chance(50) { -1.0 } else { 1.0 };
                    sign * m * [0.25f32, 0.5, 1.0][rng.below(3)]
                }
            })
            .collect();
        Tensor::from_f32(elem, &[rows, cols], &v)
    };
    let (x, y, h) = (
        tensor(ScalarType::F32, 10, 14),
        tensor(ScalarType::BF16, 10, 14),
        tensor(ScalarType::F16, 10, 14),
    );
    let n = [0i64, 4, 8, 12][rng.below(4)];
    vec![
        ArgValue::Tensor(x),
        ArgValue::Tensor(y),
        ArgValue::Tensor(h),
        ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[12, 28], 7.0)),
        ArgValue::Tensor(Tensor::filled(ScalarType::BF16, &[12, 28], 7.0)),
        ArgValue::Tensor(Tensor::filled(ScalarType::F16, &[12, 28], 7.0)),
        ArgValue::Int(n),
        ArgValue::Float([0.5f32, -1.25, 0.0, -0.0, 2.0][rng.below(5)]),
        ArgValue::Float([0.5f32, -1.25, 0.0, 3.0][rng.below(4)]),
    ]
}

fn outputs(m: &Module, args: &[ArgValue]) -> Result<Vec<Vec<u32>>, String> {
    let mut args = args.to_vec();
    interp::run(m, "k", &mut args).map_err(|e| e.to_string())?;
    Ok(args[3..6]
        .iter()
        .map(|a| {
            a.tensor()
                .unwrap()
                .to_f32_vec()
                .unwrap()
                .iter()
                .map(|x| if x.is_nan() { 0x7fc0_0000 } else { x.to_bits() })
                .collect()
        })
        .collect())
}

fn run_pipeline(m: &Module, pipeline: &str) -> Module {
    let mut out = m.clone();
    let mut pm = PassManager::parse(pipeline).unwrap();
    if let Err(d) = pm.run(&mut out, &mut |_, _, _| {}) {
        panic!("{pipeline} failed: {d}\n--- input\n{}", print_module(m));
    }
    out
}

fn check(seed: u64, size: usize) -> Result<(), TestCaseError> {
    let src = program(seed, size);
    let m = parse(&src, "random.tile")
        .map_err(|d| TestCaseError::fail(format!("generator made unparsable IR: {d}\n{src}")))?;
    verify(&m)
        .map_err(|d| TestCaseError::fail(format!("generator made invalid IR: {d}\n{src}")))?;
    let simplified = run_pipeline(&m, "tile-simplify,cse,dce");
    for input in 0..3u64 {
        let args = inputs(seed ^ input.wrapping_mul(0x1234_5678_9abc_def1));
        let want = outputs(&m, &args);
        let got = outputs(&simplified, &args);
        prop_assert_eq!(
            &got,
            &want,
            "seed {} input {}\n--- program\n{}\n--- simplified\n{}",
            seed,
            input,
            src,
            print_module(&simplified)
        );
    }
    // Deterministic: a second run prints the same bytes.
    let again = run_pipeline(&m, "tile-simplify,cse,dce");
    prop_assert_eq!(print_module(&again), print_module(&simplified));
    Ok(())
}

proptest! {
    #[test]
    fn simplify_keeps_results_bit_exact(seed in any::<u64>(), size in 3usize..25) {
        check(seed, size)?;
    }
}

/// A K loop scaled by an arbitrary loop-invariant value (`%alpha`, or a constant that is
/// no power of two), then a bias add and relu: with `reassociate=true` the scale moves
/// to the epilogue, and the results agree within 4 ulps of f32 relative to the sum of
/// the magnitudes (the bound for the one extra rounding per product and per step).
fn reassoc_program(m: u64, n: u64, scale: &str, on_b: bool) -> String {
    let scale_def = if scale == "%alpha" {
        String::new()
    } else {
        format!("  %s = tile.constant {{value = {scale}}} : f32\n")
    };
    let s = if scale == "%alpha" { "%alpha" } else { "%s" };
    let (a_op, b_op) = if on_b { ("%a", "%bs") } else { ("%as", "%b") };
    format!(
        "tile.kernel @k(%X: tensor<?x?xf32>, %W: tensor<?x?xf32>, %O: tensor<?x?xf32>, %K: index, \
            %alpha: f32) {{grid = [2]}} {{
  %pid = tile.program_id {{dim = 0}} : index
  %c0 = tile.constant {{value = 0}} : index
  %c4 = tile.constant {{value = 4}} : index
  %row = tile.muli %pid, %c4 : index
{scale_def}  %sa = tile.splat {s} : tile<{m}x4xf32>
  %sb = tile.splat {s} : tile<4x{n}xf32>
  %zero = tile.zeros : tile<{m}x{n}xf32>
  %acc = tile.for %c0, %K, %c4, %zero : tile<{m}x{n}xf32> {{
  ^bb0(%k: index, %c: tile<{m}x{n}xf32>):
    %a = tile.load %X, %row, %k : tile<{m}x4xf32>
    %as = tile.mul %a, %sa : tile<{m}x4xf32>
    %b = tile.load %W, %k, %c0 : tile<4x{n}xf32>
    %bs = tile.mul %sb, %b : tile<4x{n}xf32>
    %d = tile.dot {a_op}, {b_op}, %c : tile<{m}x{n}xf32>
    tile.yield %d
  }}
  %bias = tile.load %X, %c0, %c0 : tile<1x{n}xf32>
  %bb = tile.broadcast %bias : tile<{m}x{n}xf32>
  %sum = tile.add %acc, %bb : tile<{m}x{n}xf32>
  %r = tile.relu %sum : tile<{m}x{n}xf32>
  tile.store %O, %row, %c0, %r
  tile.return
}}
"
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn reassociate_keeps_results_within_tolerance(
        m in prop::sample::select(vec![4u64, 8]),
        n in prop::sample::select(vec![4u64, 8]),
        scale in prop::sample::select(vec!["%alpha", "0.3", "-1.7", "3.0"]),
        on_b in any::<bool>(),
        k in prop::sample::select(vec![4i64, 12, 32]),
        seed in any::<u64>(),
    ) {
        let src = reassoc_program(m, n, scale, on_b);
        let module = parse(&src, "reassoc.tile").unwrap();
        verify(&module).unwrap();
        let simplified = run_pipeline(&module, "tile-simplify{reassociate=true},cse,dce");
        let printed = print_module(&simplified);
        // The scale left the loop.
        let body = &printed[printed.find("tile.for").unwrap()..printed.find("tile.yield").unwrap()];
        prop_assert!(!body.contains("tile.mul"), "scale still in the loop:\n{}", printed);
        let mut rng = Rng(seed | 1);
        let mut t = |r: usize, c: usize| {
            let v: Vec<f32> =
                (0..r * c).map(|_| (rng.below(2001) as f32 - 1000.0) / 250.0).collect();
            Tensor::from_f32(ScalarType::F32, &[r, c], &v)
        };
        let (x, w) = (t(10, 40), t(40, 10));
        let xs = x.to_f64_vec();
        let ws = w.to_f64_vec();
        let out = Tensor::zeros(ScalarType::F32, &[10, 10]);
        let args = vec![
            ArgValue::Tensor(x),
            ArgValue::Tensor(w),
            ArgValue::Tensor(out),
            ArgValue::Int(k),
            ArgValue::Float(-0.77),
        ];
        let run = |mm: &Module| {
            let mut a = args.clone();
            interp::run(mm, "k", &mut a).unwrap();
            a[2].tensor().unwrap().to_f64_vec()
        };
        let (want, got) = (run(&module), run(&simplified));
        // Tolerance: 4 · 2^-24 · (|bias| + |s| · Σ_k |a·b|) per element.
        let sv: f64 = match scale { "%alpha" => -0.77, s => s.parse::<f32>().unwrap() as f64 };
        for i in 0..10usize {
            for j in 0..10usize {
                let kk = (k as usize).min(40);
                let dot: f64 = (0..kk).map(|q| (xs[i * 40 + q] * ws[q * 10 + j]).abs()).sum();
                let mag = dot * sv.abs() + xs[j].abs();
                let tol = 4.0 * 2f64.powi(-24) * mag * (kk as f64 + 2.0);
                prop_assert!((got[i * 10 + j] - want[i * 10 + j]).abs() <= tol, "({}, {}): {} vs \
                    {} (tolerance {})", i, j, got[i * 10 + j], want[i * 10 + j], tol);
            }
        }
    }
}

#[test]
fn generator_makes_valid_programs() {
    for seed in 0..200 {
        let src = program(seed, 20);
        let m = parse(&src, "random.tile").unwrap_or_else(|d| panic!("{d}\n{src}"));
        verify(&m).unwrap_or_else(|d| panic!("{d}\n{src}"));
    }
}
