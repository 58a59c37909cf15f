//! `persistent` — turn a one-tile-per-CTA kernel into a persistent loop over its tiles.
//!
//! Runs on level-1 IR, before `tile-to-gpu` (which then keeps the shared-memory ring's
//! phases running across tiles). The kernel's launch `grid` stays the *tile* grid; the
//! pass adds `schedule` and `group_m` attributes, which the manifest passes on to the
//! launcher.
//!
//! - `schedule=static` (sm_90, sm_90a): the launcher starts min(tiles, SMs × CTAs per SM)
//!   CTAs along x, the SM count read from the device at launch (never a constant); CTA c
//!   runs tiles c, c + nctaid, c + 2·nctaid, … (`tile.for %t = ctaid.x to tiles step
//!   nctaid.x`), so every tile runs exactly once, the ragged last row and column included.
//! - `schedule=none`: one tile per CTA as launched, but tile ids are still remapped to the
//!   grouped order below.
//! - `schedule=clc` (sm_100): Blackwell's `clusterlaunchcontrol.try_cancel` work stealing.
//!   Not implemented yet: the pass reports an error naming the schedule.
//!
//! Tile order: linear tile t is decoded to program ids. With `group_m = G > 0` on a grid of
//! 2 or more dimensions, tiles sweep G rows of dimension 1 (M) before moving along
//! dimension 0 (N), so the CTAs in flight share rows of A and columns of B in L2:
//! `group = t / (G·gx)`, `first = group·G`, `rows = min(gy − first, G)`,
//! `pid1 = first + (t mod G·gx) mod rows`, `pid0 = (t mod G·gx) / rows`; dimension 2 (a
//! batch) is outermost. `group_m = 0` is row-major: `pid0 = t mod gx`, `pid1 = (t / gx)
//! mod gy`, `pid2 = t / (gx·gy)`.
//!
//! Every `tile.program_id {dim = d}` becomes the decoded id, every `tile.num_programs`
//! the grid size, both computed from the kernel's grid expressions in the kernel.
//!
//! Options: `schedule` (static), `group_m` (8). Statistics: `kernels-made-persistent`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::HashMap;
use tilec_dialect::{Attribute, Block, Diagnostic, Diagnostics, Expr, Location, Module, OpKind, Operation, Type, Value};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "persistent",
    summary: "Make the kernel a persistent loop over its tiles (static stride), in grouped tile order",
    description: "Wraps the kernel body in a loop over linear tile ids (start ctaid.x, step nctaid.x), decoding each into program ids in grouped order for L2 reuse. The launcher starts min(tiles, SMs x CTAs per SM) CTAs.\n\nExample: tile-opt --persistent='schedule=static group_m=8' examples/gemm_bf16.tile",
    options: &[
        OptionInfo { name: "schedule", kind: OptionKind::Enum(&["static", "none", "clc"]), default: "static", help: "static: strided persistent loop; none: one tile per CTA (grouped order only); clc: try_cancel work stealing (sm_100, not yet)" },
        OptionInfo { name: "group_m", kind: OptionKind::UInt, default: "8", help: "Tiles of dimension 1 swept per group (0: row-major order)" },
    ],
};

/// The pass.
pub struct Persistent {
    /// `static`, `none` or `clc`.
    pub schedule: String,
    /// Group size along dimension 1 (0 = off).
    pub group_m: u64,
}

impl Persistent {
    /// Build from checked options.
    ///
    /// # Errors
    /// None today; the signature matches the registry.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        Ok(Persistent { schedule: o.get("schedule").to_string(), group_m: o.uint("group_m") })
    }
}

impl Pass for Persistent {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut ops = std::mem::take(&mut m.ops);
        for k in &mut ops {
            if k.kind != OpKind::Kernel || k.attr("schedule").is_some() || k.attr("target").is_some() {
                continue;
            }
            match make_persistent(m, k, &self.schedule, self.group_m) {
                Ok(()) => cx.stat("kernels-made-persistent", 1),
                Err(d) => errors.push(d),
            }
        }
        m.ops = ops;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(errors))
        }
    }
}

struct Em<'m> {
    m: &'m mut Module,
    ops: Vec<Operation>,
    loc: Location,
    args: HashMap<String, Value>,
}

impl Em<'_> {
    fn one(&mut self, kind: OpKind, operands: &[Value], attrs: &[(&str, Attribute)], name: &str) -> Value {
        let mut op = Operation::new(kind, self.loc.clone());
        op.operands = operands.to_vec();
        op.attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let r = self.m.new_value(Type::INDEX, Some(name.to_string()));
        op.results = vec![r];
        self.ops.push(op);
        r
    }
    fn cst(&mut self, v: i64) -> Value {
        self.one(OpKind::Constant, &[], &[("value", Attribute::Int(v))], &format!("c{v}"))
    }
    fn bin(&mut self, kind: OpKind, a: Value, b: Value, name: &str) -> Value {
        self.one(kind, &[a, b], &[], name)
    }
    /// Emit the value of a grid expression.
    fn expr(&mut self, e: &Expr) -> Result<Value, String> {
        Ok(match e {
            Expr::Int(i) => self.cst(*i),
            Expr::Arg(n) => *self.args.get(n).ok_or_else(|| format!("grid reads '%{n}', not an argument"))?,
            Expr::CeilDiv(a, b) | Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Min(a, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                let k = match e {
                    Expr::CeilDiv(..) => OpKind::CeilDiv,
                    Expr::Mul(..) => OpKind::MulI,
                    Expr::Add(..) => OpKind::AddI,
                    _ => OpKind::MinI,
                };
                self.bin(k, x, y, "g")
            }
        })
    }
}

/// Rewrite one kernel in place.
fn make_persistent(m: &mut Module, k: &mut Operation, schedule: &str, group_m: u64) -> Result<(), Diagnostic> {
    let err = |msg: String| Diagnostic::error(k.loc.clone(), msg);
    if schedule == "clc" {
        return Err(err("persistent: schedule=clc (clusterlaunchcontrol.try_cancel work stealing) is not implemented yet; use schedule=static or none".into()));
    }
    let grid: Vec<Expr> = k
        .attr("grid")
        .and_then(Attribute::as_array)
        .ok_or_else(|| err("persistent: kernel has no grid".into()))?
        .iter()
        .map(|a| match a {
            Attribute::Int(i) => Ok(Expr::Int(*i)),
            Attribute::Expr(e) => Ok(e.clone()),
            other => Err(err(format!("persistent: grid dimension {other} is not an expression"))),
        })
        .collect::<Result<_, _>>()?;
    let body = &k.regions[0];
    let args: HashMap<String, Value> = body.args.iter().filter_map(|&a| m.name(a).map(|n| (n.to_string(), a))).collect();
    let loc = k.loc.clone();
    let mut em = Em { m, ops: vec![], loc, args };
    let gd: Vec<Value> = grid.iter().map(|e| em.expr(e)).collect::<Result<_, _>>().map_err(|e| err(format!("persistent: {e}")))?;
    let mut ntiles = gd[0];
    for &g in &gd[1..] {
        ntiles = em.bin(OpKind::MulI, ntiles, g, "ntiles");
    }
    let prologue = std::mem::take(&mut em.ops);

    // The tile index: a loop variable (static) or the linearised ctaid (none).
    let (t, loop_head) = if schedule == "static" {
        let start = em.one(OpKind::CtaId, &[], &[("dim", Attribute::Int(0))], "cta");
        let stride = em.one(OpKind::NumCtas, &[], &[("dim", Attribute::Int(0))], "ncta");
        let t = em.m.new_value(Type::INDEX, Some("tile".into()));
        (t, Some((start, stride)))
    } else {
        let mut lin = em.one(OpKind::CtaId, &[], &[("dim", Attribute::Int(0))], "cta_x");
        let mut scale = gd[0];
        for d in 1..gd.len() {
            let c = em.one(OpKind::CtaId, &[], &[("dim", Attribute::Int(d as i64))], "cta");
            let o = em.bin(OpKind::MulI, c, scale, "lin");
            lin = em.bin(OpKind::AddI, lin, o, "tile");
            if d + 1 < gd.len() {
                scale = em.bin(OpKind::MulI, scale, gd[d], "scale");
            }
        }
        (lin, None)
    };
    let head_ops = std::mem::take(&mut em.ops);

    // Decode t into program ids.
    let pids = decode(&mut em, t, &gd, group_m);
    let decode_ops = std::mem::take(&mut em.ops);

    // Rewrite the body: program ids and grid sizes; drop the return.
    let mut body_ops = std::mem::take(&mut k.regions[0].ops);
    let ret = body_ops.pop().expect("verified kernel ends with tile.return");
    let mut repl: HashMap<Value, Value> = HashMap::new();
    body_ops.retain(|o| match o.kind {
        OpKind::ProgramId | OpKind::NumPrograms => {
            let d = o.int_attr("dim").unwrap_or(0) as usize;
            let v = if o.kind == OpKind::ProgramId { pids.get(d) } else { gd.get(d) };
            if let Some(&v) = v {
                repl.insert(o.results[0], v);
            }
            false
        }
        _ => true,
    });
    for o in &mut body_ops {
        o.walk_mut(&mut |x| {
            for v in &mut x.operands {
                if let Some(r) = repl.get(v) {
                    *v = *r;
                }
            }
        });
    }
    let mut new_body = prologue;
    match loop_head {
        Some((start, stride)) => {
            new_body.extend(head_ops);
            let mut inner = decode_ops;
            inner.extend(body_ops);
            let mut y = Operation::new(OpKind::Yield, ret.loc.clone());
            y.operands.clear();
            inner.push(y);
            let mut lp = Operation::new(OpKind::For, k.loc.clone());
            lp.operands = vec![start, ntiles, stride];
            lp.attrs.insert("tile_loop".into(), Attribute::Bool(true));
            lp.regions.push(Block { args: vec![t], ops: inner });
            new_body.push(lp);
        }
        None => {
            new_body.extend(head_ops);
            new_body.extend(decode_ops);
            new_body.extend(body_ops);
        }
    }
    new_body.push(ret);
    k.regions[0].ops = new_body;
    k.attrs.insert("schedule".into(), Attribute::Str(schedule.to_string()));
    k.attrs.insert("group_m".into(), Attribute::Int(group_m as i64));
    Ok(())
}

/// Program ids of linear tile `t` on grid `gd` (see the module doc for the order).
fn decode(em: &mut Em, t: Value, gd: &[Value], group_m: u64) -> Vec<Value> {
    match gd.len() {
        1 => vec![t],
        _ => {
            let plane = em.bin(OpKind::MulI, gd[0], gd[1], "plane");
            let (t2, z) = if gd.len() == 3 {
                (em.bin(OpKind::RemI, t, plane, "t2"), Some(em.bin(OpKind::DivI, t, plane, "pid2")))
            } else {
                (t, None)
            };
            let (p0, p1) = if group_m > 0 {
                let g = em.cst(group_m as i64);
                let per_group = em.bin(OpKind::MulI, g, gd[0], "per_group");
                let group = em.bin(OpKind::DivI, t2, per_group, "group");
                let first = em.bin(OpKind::MulI, group, g, "first");
                let left = em.bin(OpKind::SubI, gd[1], first, "left");
                let rows = em.bin(OpKind::MinI, left, g, "rows");
                let in_group = em.bin(OpKind::RemI, t2, per_group, "in_group");
                let r = em.bin(OpKind::RemI, in_group, rows, "r");
                let p1 = em.bin(OpKind::AddI, first, r, "pid1");
                let p0 = em.bin(OpKind::DivI, in_group, rows, "pid0");
                (p0, p1)
            } else {
                let p0 = em.bin(OpKind::RemI, t2, gd[0], "pid0");
                let q = em.bin(OpKind::DivI, t2, gd[0], "q");
                let p1 = em.bin(OpKind::RemI, q, gd[1], "pid1");
                (p0, p1)
            };
            let mut v = vec![p0, p1];
            v.extend(z);
            v
        }
    }
}
