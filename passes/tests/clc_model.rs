//! An executable model of Blackwell's cluster launch control (`clusterlaunchcontrol.try_cancel`,
//! PTX ISA 8.6), run on the persistent loop *as the passes emit it*: `persistent{schedule=clc}`
//! then `tile-to-gpu` (sm_100, or sm_100a with clusters of 2 and 4), interpreted op by op.
//!
//! The same protocol in a kernel with a plain launch (`persistent{schedule=clc}` then
//! `tile-assign-layouts`, 4 warps, as the plain lowering runs it) is checked the same way.
//!
//! **Agents.** Every CTA runs one producer agent (region 0 of `tile.warp_specialize`: the
//! elected thread, the CTA's scheduler) and one agent per consumer warp (region 1; a warp's
//! lanes run in lockstep, and `tile.mbarrier_arrive` is one arrive per warp, as lowered).
//! Where the producer region is empty (mma.sync: the block is the consumer warps), consumer
//! warp 0 alone runs region 1's `role = "scheduler"` ops, the copies among them.
//! In a plain launch every agent is a warp running the tile loop; warp 0 alone runs the
//! `role = "scheduler"` ops (thread 0 is its lane 0), an array `{per_cta = true}` counts
//! one arrival per warp, and a `tile.barrier` after each tile's store (as the lowering's
//! own CTA barriers sit inside a tile) completes once every warp of the CTA reaches it.
//! Scalar ops are evaluated; tile data is not (MMA, convert, … are no-ops).
//!
//! **Hardware.** The grid's clusters start un-launched. At each step the model picks, at
//! random, one enabled action: an agent runs its next op (blocking ops are enabled only when
//! they can complete), an asynchronous TMA copy completes its transaction bytes, a pending
//! try_cancel resolves, or a free resident slot launches a random un-launched cluster (at
//! most `resident` clusters run at once, 1 to 3). A try_cancel resolves to success only
//! while an un-launched cluster remains — it then takes a random one, which never launches
//! and is handed out at most once — and otherwise (or, with a small probability, even then)
//! to failure. The response (16 bytes) is written into the slot of the issuing CTA, or of
//! every CTA of its cluster with `.multicast::cluster::all`, then completes 16 transaction
//! bytes on each of their barriers. mbarriers follow PTX: a phase completes when its
//! pending arrivals and its transaction count are both 0 (the count may go negative first);
//! `try_wait.parity p` succeeds once the phase of parity p has completed.
//!
//! **Checked**, on every schedule: every tile is stored exactly once by each consumer warp,
//! and the copies (by the producer, or by consumer warp 0) load exactly the tiles its CTA's
//! consumers store, in the same order;
//! no try_cancel is issued by a CTA that has observed a failed one; a response slot is read
//! only after the reader's own wait saw the barrier phase its response completed, and with
//! one 128-bit load; the slot is rewritten only after a `fence.proxy.async` by the issuer;
//! no barrier gets more arrivals than its count; every CTA terminates (no state in which
//! nothing can move, no endless run). At least 10,000 schedules per run (`CLC_SCHEDULES`
//! raises it; the plain launch runs a quarter as many). Each deliberately broken variant of
//! the pass (`ClcFault`) must be caught, in both forms.

use std::collections::{HashMap, HashSet};
use tilec_dialect::{parse, verify, Module, OpKind, Operation, Target, Type, Value};
use tilec_passes::assign_layouts::AssignLayouts;
use tilec_passes::persistent::{ClcFault, Persistent};
use tilec_passes::tile_to_gpu::TileToGpu;
use tilec_passes::{Pass, PassContext};

/// xorshift64*: small, seeded, reproducible.
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
}

/// The grid of BM×256 tiles over 1, 2 or 3 dimensions (the 3-D grid stacks batches of M
/// rows; the 1-D grid linearises the tiles itself), and the ops that compute `%pid_n` and
/// `%pid_m` from the program ids.
fn grid_and_pids(rank: usize, bm: u64) -> (String, String) {
    match rank {
        1 => (
            format!("[mul(ceildiv(%N, 256), ceildiv(%M, {bm}))]"),
            "%p = tile.program_id {dim = 0} : index\n  %c256n = tile.constant {value = \
                256} : index\n  %gn = tile.ceildiv %N, %c256n : index\n  %pid_n = tile.remi \
                %p, \
                %gn : index\n  %pid_m = tile.divi %p, %gn : index\n"
                .to_string(),
        ),
        2 => (
            format!("[ceildiv(%N, 256), ceildiv(%M, {bm})]"),
            "%pid_n = tile.program_id {dim = 0} : index\n  %pid_m = tile.program_id {dim = 1} : \
                index\n"
                .to_string(),
        ),
        _ => (
            format!("[ceildiv(%N, 256), ceildiv(%M, {bm}), %Bt]"),
            format!(
                "%pid_n = tile.program_id {{dim = 0}} : index\n  %pm = tile.program_id {{dim = \
                    1}} : index\n  %pb = tile.program_id {{dim = 2}} : index\n  %cbm = \
                    tile.constant \
                    {{value = {bm}}} : index\n  %gm = tile.ceildiv %M, %cbm : index\n  %off = \
                    tile.muli %pb, %gm : index\n  %pid_m = tile.addi %pm, %off : index\n"
            ),
        ),
    }
}

/// A GEMM kernel of BM×256 tiles ([`grid_and_pids`]).
fn kernel(rank: usize, bm: u64) -> String {
    let (grid, pids) = grid_and_pids(rank, bm);
    format!(
        "tile.kernel @k(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, %C: tensor<?x?xbf16>, %M: \
            index, %N: index, %K: index, %Bt: index) {{grid = {grid}}} {{
  {pids}  %c0 = tile.constant {{value = 0}} : index
  %c64 = tile.constant {{value = 64}} : index
  %cm = tile.constant {{value = {bm}}} : index
  %c256 = tile.constant {{value = 256}} : index
  %row = tile.muli %pid_m, %cm : index
  %col = tile.muli %pid_n, %c256 : index
  %zero = tile.zeros : tile<{bm}x256xf32>
  %acc = tile.for %c0, %K, %c64, %zero : tile<{bm}x256xf32> {{
  ^bb0(%k: index, %c: tile<{bm}x256xf32>):
    %a = tile.load %A, %row, %k : tile<{bm}x64xbf16>
    %b = tile.load %B, %k, %col : tile<64x256xbf16>
    %d = tile.dot %a, %b, %c : tile<{bm}x256xf32>
    tile.yield %d
  }}
  %out = tile.convert %acc : tile<{bm}x256xbf16>
  tile.store %C, %row, %col, %out
  tile.return
}}
"
    )
}

/// Parse `src` and run `persistent{schedule=clc cluster}` (with `fault`) on it; also the
/// target a cluster of that size needs.
fn persistent_clc(
    src: &str,
    cluster: u64,
    fault: Option<ClcFault>,
) -> (Module, PassContext, Target) {
    let mut m = parse(src, "clc_model.tile").expect("parses");
    verify(&m).expect("verifies");
    let mut cx = PassContext::default();
    Persistent {
        schedule: "clc".into(),
        group_m: 2,
        cluster,
        cluster_y: 1,
        dot_kernels_only: false,
        fault,
    }
    .run(&mut m, &mut cx)
    .expect("persistent");
    let target = if cluster > 1 {
        Target::Sm100a
    } else {
        Target::Sm100
    };
    (m, cx, target)
}

/// Build the GPU-level kernel: `persistent{schedule=clc cluster}` then `tile-to-gpu`.
fn build(rank: usize, bm: u64, cluster: u64, fault: Option<ClcFault>) -> Module {
    let (mut m, mut cx, target) = persistent_clc(&kernel(rank, bm), cluster, fault);
    TileToGpu {
        target,
        stages: 2,
        tma_epilogue: false,
        promote: None,
    }
    .run(&mut m, &mut cx)
    .expect("tile-to-gpu");
    if fault.is_none() {
        verify(&m).expect("the emitted kernel verifies");
    }
    m
}

/// Rows of a plain kernel's tile.
const PLAIN_BM: u64 = 8;

/// A kernel with a plain launch over the same grids: an elementwise op on BM×256 tiles
/// (same argument positions as [`kernel`]'s).
fn plain_kernel(rank: usize, bm: u64) -> String {
    let (grid, pids) = grid_and_pids(rank, bm);
    format!(
        "tile.kernel @k(%A: tensor<?x?xf32>, %B: tensor<?x?xf32>, %C: tensor<?x?xf32>, %M: \
            index, %N: index, %K: index, %Bt: index) {{grid = {grid}}} {{
  {pids}  %cm = tile.constant {{value = {bm}}} : index
  %c256 = tile.constant {{value = 256}} : index
  %row = tile.muli %pid_m, %cm : index
  %col = tile.muli %pid_n, %c256 : index
  %x = tile.load %A, %row, %col : tile<{bm}x256xf32>
  %y = tile.exp %x : tile<{bm}x256xf32>
  tile.store %C, %row, %col, %y
  tile.return
}}
"
    )
}

/// Build the plain kernel: `persistent{schedule=clc cluster}` then `tile-assign-layouts`
/// (4 warps), with a `tile.barrier` after each tile's store, as the lowering's own CTA
/// barriers (a reduction's shared-memory round trip) sit inside a tile.
fn build_plain(rank: usize, cluster: u64, fault: Option<ClcFault>) -> Module {
    let (mut m, mut cx, target) = persistent_clc(&plain_kernel(rank, PLAIN_BM), cluster, fault);
    AssignLayouts {
        target,
        num_warps: 4,
    }
    .run(&mut m, &mut cx)
    .expect("tile-assign-layouts");
    let k = &mut m.ops[0];
    let lp = k.regions[0]
        .ops
        .iter_mut()
        .find(|o| o.kind == OpKind::While)
        .expect("the clc loop");
    let ops = &mut lp.regions[0].ops;
    let at = ops
        .iter()
        .position(|o| o.kind == OpKind::Store)
        .expect("a store");
    let loc = ops[at].loc.clone();
    ops.insert(at + 1, Operation::new(OpKind::Barrier, loc));
    if fault.is_none() {
        verify(&m).expect("the emitted kernel verifies");
    }
    m
}

#[derive(Clone, Debug, Default)]
struct Barrier {
    count: i64,
    pending: i64,
    tx: i64,
    /// Phases completed so far.
    phase: u64,
    /// For each completed phase: the generation of the response slot of the same index at
    /// completion (clc barriers), so a reader can prove which response it waited for.
    stamps: Vec<u64>,
}

#[derive(Clone, Debug)]
struct Response {
    gen: u64,
    canceled: bool,
    first: [i64; 3],
}

enum Frame<'m> {
    Block {
        ops: &'m [Operation],
        pc: usize,
    },
    For {
        op: &'m Operation,
        ops: &'m [Operation],
        pc: usize,
        iv: i64,
        ub: i64,
        step: i64,
    },
    While {
        op: &'m Operation,
        ops: &'m [Operation],
        pc: usize,
    },
}

struct Agent<'m> {
    cta: usize,
    /// 0 = producer (scheduler), 1.. = consumer warps.
    role: usize,
    env: Vec<i64>,
    frames: Vec<Frame<'m>>,
    done: bool,
    /// Generation of the response this agent's last wait on each clc slot proved.
    proved: HashMap<i64, u64>,
    consumed: HashMap<i64, u64>,
    fenced: bool,
    /// Tiles (row, col) stored.
    tiles: Vec<(i64, i64)>,
    /// Tiles (row, col) whose copies this agent issued at k = 0 (A's row, B's column).
    loads: Vec<(i64, i64)>,
    pending_row: Option<i64>,
    /// The CTA barrier generation this agent waits to complete (at a `tile.barrier`).
    at_barrier: Option<u64>,
}

struct CtaState {
    id: [i64; 3],
    cluster: usize,
    rank: i64,
    bars: HashMap<(u32, i64), Barrier>,
    slots: HashMap<i64, Response>,
    written: HashSet<i64>,
    failed_observed: bool,
    finished: bool,
    done_agents: usize,
    /// `tile.barrier` (bar.sync over the CTA): completed generations, and the warps
    /// waiting at the current one.
    bar_gen: u64,
    bar_waiting: usize,
}

enum Event {
    Tx {
        cta: usize,
        bars: u32,
        idx: i64,
        bytes: i64,
    },
    Clc {
        ctas: Vec<usize>,
        slot: i64,
        bars: u32,
    },
}

struct World<'m> {
    m: &'m Module,
    dims: [i64; 3],
    cdim: i64,
    ctas: Vec<CtaState>,
    agents: Vec<Agent<'m>>,
    events: Vec<Event>,
    unlaunched: Vec<usize>,
    resident: usize,
    running: usize,
    args: Vec<(Value, i64)>,
    head: &'m [Operation],
    regions: [&'m [Operation]; 2],
    consumer_warps: usize,
    /// A kernel with a plain launch: every agent is a warp running the same code, warp 0
    /// (thread 0's) also the scheduler.
    plain: bool,
    /// A warp-specialized kernel without a producer: every agent is a consumer warp, warp 0
    /// also the scheduler, which issues the copies.
    inline: bool,
    clc_bars: HashSet<u32>,
    rng: Rng,
    steps: u64,
    /// Agents not yet done.
    live: Vec<usize>,
    /// The kernel argument `%A` (its copies carry the tile's row).
    a_arg: Value,
}

type Violation = String;

impl<'m> World<'m> {
    fn launch(&mut self, cluster: usize) {
        self.running += 1;
        let first = cluster * self.cdim as usize;
        for r in 0..self.cdim as usize {
            let c = first + r;
            // Kernel-level ops before warp_specialize, once per CTA: allocations, constants.
            let mut env = vec![0i64; self.m.values.len()];
            for &(v, x) in &self.args {
                env[v.0 as usize] = x;
            }
            for op in self.head {
                match op.kind {
                    OpKind::MbarrierAlloc => {
                        let Type::Mbarrier { count } = self.m.ty(op.results[0]) else {
                            unreachable!()
                        };
                        let mut n = op.int_attr("arrive_count").unwrap();
                        // Counted per CTA (a plain launch): one arrival per warp.
                        if op.attr("per_cta").and_then(|x| x.as_bool()) == Some(true) {
                            n *= (self.consumer_warps + 1) as i64;
                        }
                        for i in 0..*count as i64 {
                            self.ctas[c].bars.insert(
                                (op.results[0].0, i),
                                Barrier {
                                    count: n,
                                    pending: n,
                                    ..Barrier::default()
                                },
                            );
                        }
                    }
                    OpKind::WarpSpecialize => {}
                    _ => {
                        let id = self.ctas[c].id;
                        let rank = self.ctas[c].rank;
                        if let Some(v) = scalar(op, &env, id, self.dims, rank) {
                            env[op.results[0].0 as usize] = v;
                        }
                    }
                }
            }
            for role in 0..=self.consumer_warps {
                let region = self.regions[(role > 0) as usize];
                self.live.push(self.agents.len());
                self.agents.push(Agent {
                    cta: c,
                    role,
                    env: env.clone(),
                    frames: vec![Frame::Block { ops: region, pc: 0 }],
                    done: false,
                    proved: HashMap::new(),
                    consumed: HashMap::new(),
                    fenced: false,
                    tiles: vec![],
                    loads: vec![],
                    pending_row: None,
                    at_barrier: None,
                });
            }
        }
    }

    /// Apply arrivals / transaction bytes to a barrier; complete its phase when due.
    fn touch(
        &mut self,
        cta: usize,
        bars: u32,
        idx: i64,
        arrive: i64,
        tx: i64,
    ) -> Result<(), Violation> {
        let gen = self.ctas[cta].slots.get(&idx).map_or(0, |r| r.gen);
        let is_clc = self.clc_bars.contains(&bars);
        if self.ctas[cta].finished {
            return Err(format!(
                "an arrive or transaction reached barrier {bars}[{idx}] of CTA \
                    {cta} after it exited"
            ));
        }
        let b = self.ctas[cta]
            .bars
            .get_mut(&(bars, idx))
            .expect("barrier exists");
        b.pending -= arrive;
        b.tx += tx;
        if b.pending < 0 {
            return Err(format!(
                "CTA {cta}: barrier {bars}[{idx}] got more arrivals than its count {}",
                b.count
            ));
        }
        if b.pending == 0 && b.tx == 0 {
            b.phase += 1;
            b.pending = b.count;
            b.stamps.push(if is_clc { gen } else { 0 });
        }
        Ok(())
    }

    /// Whether agent `a` can run its next op now.
    fn enabled(&self, a: usize) -> bool {
        let ag = &self.agents[a];
        if ag.done {
            return false;
        }
        let Some(op) = next_op(ag) else { return true };
        if let Some(g) = ag.at_barrier {
            return self.ctas[ag.cta].bar_gen > g;
        }
        if op.kind == OpKind::MbarrierWait {
            let idx = ag.env[op.operands[1].0 as usize];
            let parity = ag.env[op.operands[2].0 as usize];
            let b = &self.ctas[ag.cta].bars[&(op.operands[0].0, idx)];
            return (b.phase % 2) as i64 != parity;
        }
        true
    }

    fn step_agent(&mut self, a: usize) -> Result<(), Violation> {
        let Some(op) = next_op(&self.agents[a]) else {
            return self.terminator(a);
        };
        let cta = self.agents[a].cta;
        let val = |ag: &Agent, i: usize| ag.env[op.operands[i].0 as usize];
        // A plain launch: the scheduler's ops run on thread 0, in warp 0, alone.
        if (self.plain || self.inline)
            && self.agents[a].role != 0
            && op.str_attr("role") == Some("scheduler")
        {
            advance(&mut self.agents[a]);
            return Ok(());
        }
        match op.kind {
            OpKind::Barrier => {
                let per_cta = self.consumer_warps + 1;
                let c = &mut self.ctas[cta];
                let ag = &mut self.agents[a];
                match ag.at_barrier {
                    Some(_) => {
                        ag.at_barrier = None;
                        advance(ag);
                    }
                    None => {
                        ag.at_barrier = Some(c.bar_gen);
                        c.bar_waiting += 1;
                        if c.bar_waiting == per_cta {
                            c.bar_waiting = 0;
                            c.bar_gen += 1;
                        }
                    }
                }
                return Ok(());
            }
            OpKind::MbarrierAlloc => {
                return Err("an mbarrier allocated inside the tile loop is not modelled".into())
            }
            OpKind::Yield | OpKind::Return => return self.terminator(a),
            OpKind::For => {
                let ag = &mut self.agents[a];
                let (lb, ub, step) = (val(ag, 0), val(ag, 1), val(ag, 2));
                advance(ag);
                if lb < ub {
                    let b = &op.regions[0];
                    ag.env[b.args[0].0 as usize] = lb;
                    for (i, &arg) in b.args[1..].iter().enumerate() {
                        ag.env[arg.0 as usize] = val(ag, 3 + i);
                    }
                    ag.frames.push(Frame::For {
                        op,
                        ops: &b.ops,
                        pc: 0,
                        iv: lb,
                        ub,
                        step,
                    });
                } else {
                    for (i, &r) in op.results.iter().enumerate() {
                        ag.env[r.0 as usize] = val(ag, 3 + i);
                    }
                }
                return Ok(());
            }
            OpKind::While => {
                let ag = &mut self.agents[a];
                advance(ag);
                let b = &op.regions[0];
                for (i, &arg) in b.args.iter().enumerate() {
                    ag.env[arg.0 as usize] = val(ag, i);
                }
                ag.frames.push(Frame::While {
                    op,
                    ops: &b.ops,
                    pc: 0,
                });
                return Ok(());
            }
            OpKind::If => {
                let ag = &mut self.agents[a];
                advance(ag);
                let r = if val(ag, 0) != 0 { 0 } else { 1 };
                ag.frames.push(Frame::Block {
                    ops: &op.regions[r].ops,
                    pc: 0,
                });
                return Ok(());
            }
            OpKind::MbarrierWait => {
                let idx = val(&self.agents[a], 1);
                let b = &self.ctas[cta].bars[&(op.operands[0].0, idx)];
                let stamp = b.stamps.last().copied().unwrap_or(0);
                if self.clc_bars.contains(&op.operands[0].0) && b.phase > 0 {
                    self.agents[a].proved.insert(idx, stamp);
                }
            }
            OpKind::MbarrierExpectTx => {
                let idx = val(&self.agents[a], 1);
                let bytes = op.int_attr("bytes").unwrap();
                self.touch(cta, op.operands[0].0, idx, 1, bytes)?;
            }
            OpKind::MbarrierArrive => {
                let idx = val(&self.agents[a], 1);
                let target = match op.int_attr("cta") {
                    None => cta,
                    Some(r) => cta - self.ctas[cta].rank as usize + r as usize,
                };
                self.touch(target, op.operands[0].0, idx, 1, 0)?;
            }
            OpKind::TmaLoad => {
                let ag = &mut self.agents[a];
                let stage = val(ag, 3);
                let Type::Smem { shape, elem, .. } = self.m.ty(op.operands[1]) else {
                    unreachable!()
                };
                let bytes = shape.iter().product::<u64>() * elem.size_bytes();
                let (c0, c1) = (val(ag, 4), val(ag, 5));
                // A is loaded at (row, k), B at (k, col): record the producer's tile at k = 0.
                if op.operands[0] == self.a_arg {
                    if c1 == 0 {
                        ag.pending_row = Some(c0);
                    }
                } else if c0 == 0 {
                    let row = ag.pending_row.take().expect("A's copy comes before B's");
                    ag.loads.push((row, c1));
                }
                self.events.push(Event::Tx {
                    cta,
                    bars: op.operands[2].0,
                    idx: stage,
                    bytes: bytes as i64,
                });
            }
            OpKind::Store => {
                let ag = &mut self.agents[a];
                let t = (val(ag, 1), val(ag, 2));
                ag.tiles.push(t);
            }
            OpKind::FenceProxyAsync => self.agents[a].fenced = true,
            OpKind::ClcTryCancel => {
                if self.ctas[cta].failed_observed {
                    return Err(format!(
                        "CTA {cta} issued try_cancel after it observed a failed one"
                    ));
                }
                let slot = val(&self.agents[a], 2);
                if self.ctas[cta].written.contains(&slot) && !self.agents[a].fenced {
                    return Err(format!(
                        "CTA {cta} reused response slot {slot} without fence.proxy.async"
                    ));
                }
                self.agents[a].fenced = false;
                let multicast = op.attr("multicast").and_then(|x| x.as_bool()) == Some(true);
                let ctas = if multicast {
                    let first = cta - self.ctas[cta].rank as usize;
                    (first..first + self.cdim as usize).collect()
                } else {
                    vec![cta]
                };
                self.clc_bars.insert(op.operands[1].0);
                self.events.push(Event::Clc {
                    ctas,
                    slot,
                    bars: op.operands[1].0,
                });
            }
            OpKind::ClcQuery => {
                let ag = &self.agents[a];
                let slot = val(ag, 1);
                let bits = op.int_attr("load_bits").unwrap_or(128);
                if bits != 128 {
                    return Err(format!(
                        "CTA {cta} agent {}: response read as {}-bit pieces, not one 128-bit load",
                        ag.role, bits
                    ));
                }
                let resp = self.ctas[cta].slots.get(&slot).cloned();
                let Some(resp) = resp else {
                    return Err(format!(
                        "CTA {cta} agent {}: response slot {slot} read before any response arrived",
                        ag.role
                    ));
                };
                if ag.proved.get(&slot) != Some(&resp.gen)
                    || ag.consumed.get(&slot) == Some(&resp.gen)
                {
                    return Err(format!(
                        "CTA {cta} agent {}: response slot {slot} read before its \
                            barrier phase completed (its wait proved {:?}, slot holds response \
                            {})",
                        ag.role,
                        ag.proved.get(&slot),
                        resp.gen
                    ));
                }
                let ag = &mut self.agents[a];
                ag.consumed.insert(slot, resp.gen);
                let r = &op.results;
                ag.env[r[0].0 as usize] = resp.canceled as i64;
                for d in 0..3 {
                    ag.env[r[d + 1].0 as usize] = if resp.canceled { resp.first[d] } else { 0 };
                }
                if !resp.canceled {
                    self.ctas[cta].failed_observed = true;
                }
            }
            _ => {
                let ag = &mut self.agents[a];
                let id = self.ctas[cta].id;
                if let Some(v) = scalar(op, &ag.env, id, self.dims, self.ctas[cta].rank) {
                    ag.env[op.results[0].0 as usize] = v;
                }
            }
        }
        advance(&mut self.agents[a]);
        Ok(())
    }

    fn terminator(&mut self, a: usize) -> Result<(), Violation> {
        let ag = &mut self.agents[a];
        let frame = ag.frames.pop().expect("a frame");
        let (ops, pc) = match &frame {
            Frame::Block { ops, pc }
            | Frame::For { ops, pc, .. }
            | Frame::While { ops, pc, .. } => (*ops, *pc),
        };
        let y = ops.get(pc);
        let yv: Vec<i64> = y
            .map(|y| y.operands.iter().map(|v| ag.env[v.0 as usize]).collect())
            .unwrap_or_default();
        match frame {
            Frame::Block { .. } => {
                if ag.frames.is_empty() {
                    ag.done = true;
                }
            }
            Frame::For {
                op,
                ops,
                iv,
                ub,
                step,
                ..
            } => {
                let b = &op.regions[0];
                let next = iv + step;
                if next < ub {
                    ag.env[b.args[0].0 as usize] = next;
                    for (&arg, &v) in b.args[1..].iter().zip(&yv) {
                        ag.env[arg.0 as usize] = v;
                    }
                    ag.frames.push(Frame::For {
                        op,
                        ops,
                        pc: 0,
                        iv: next,
                        ub,
                        step,
                    });
                } else {
                    for (&r, &v) in op.results.iter().zip(&yv) {
                        ag.env[r.0 as usize] = v;
                    }
                }
            }
            Frame::While { op, ops, .. } => {
                let b = &op.regions[0];
                if yv[0] != 0 {
                    for (&arg, &v) in b.args.iter().zip(&yv[1..]) {
                        ag.env[arg.0 as usize] = v;
                    }
                    ag.frames.push(Frame::While { op, ops, pc: 0 });
                } else {
                    for (&r, &v) in op.results.iter().zip(&yv[1..]) {
                        ag.env[r.0 as usize] = v;
                    }
                }
            }
        }
        Ok(())
    }

    fn fire(&mut self, e: Event) -> Result<(), Violation> {
        match e {
            Event::Tx {
                cta,
                bars,
                idx,
                bytes,
            } => self.touch(cta, bars, idx, 0, -bytes),
            Event::Clc { ctas, slot, bars } => {
                let take = !self.unlaunched.is_empty() && !self.rng.chance(3);
                let first = if take {
                    let i = self.rng.below(self.unlaunched.len());
                    let cl = self.unlaunched.swap_remove(i);
                    Some(self.ctas[cl * self.cdim as usize].id)
                } else {
                    None
                };
                for &c in &ctas {
                    if self.ctas[c].finished {
                        return Err(format!(
                            "a try_cancel response was written into CTA {c} after it exited"
                        ));
                    }
                    let gen = self.ctas[c].slots.get(&slot).map_or(0, |r| r.gen) + 1;
                    self.ctas[c].slots.insert(
                        slot,
                        Response {
                            gen,
                            canceled: first.is_some(),
                            first: first.unwrap_or([0; 3]),
                        },
                    );
                    self.ctas[c].written.insert(slot);
                    self.touch(c, bars, slot, 0, -16)?;
                }
                Ok(())
            }
        }
    }

    /// Run one schedule to the end.
    fn run(&mut self) -> Result<(), Violation> {
        loop {
            self.steps += 1;
            if self.steps > 2_000_000 {
                return Err("no progress after 2,000,000 steps (a CTA does not terminate)".into());
            }
            // Retire agents that finished: a CTA exits when all its threads have, and (the
            // cluster barrier the lowering ends clustered kernels with) a cluster's CTAs
            // exit together, freeing one resident slot.
            let mut i = 0;
            while i < self.live.len() {
                let a = self.live[i];
                if self.agents[a].done {
                    self.live.swap_remove(i);
                    let c = self.agents[a].cta;
                    self.ctas[c].done_agents += 1;
                    let first = self.ctas[c].cluster * self.cdim as usize;
                    let per_cta = self.consumer_warps + 1;
                    if (first..first + self.cdim as usize)
                        .all(|x| self.ctas[x].done_agents == per_cta)
                    {
                        for x in first..first + self.cdim as usize {
                            self.ctas[x].finished = true;
                        }
                        self.running -= 1;
                    }
                } else {
                    i += 1;
                }
            }
            let agents: Vec<usize> = self
                .live
                .iter()
                .copied()
                .filter(|&a| self.enabled(a))
                .collect();
            let can_launch = self.running < self.resident && !self.unlaunched.is_empty();
            let total = agents.len() + self.events.len() + can_launch as usize;
            if total == 0 {
                if self.unlaunched.is_empty() && self.agents.iter().all(|g| g.done) {
                    return Ok(());
                }
                let stuck: Vec<String> = self
                    .agents
                    .iter()
                    .filter(|g| !g.done)
                    .map(|g| {
                        format!(
                            "CTA {} agent {} at {:?}",
                            g.cta,
                            g.role,
                            next_op(g).map(|o| o.kind.name())
                        )
                    })
                    .collect();
                return Err(format!(
                    "deadlock: nothing can move; waiting: {}",
                    stuck.join("; ")
                ));
            }
            let pick = self.rng.below(total);
            if pick < agents.len() {
                self.step_agent(agents[pick])?;
            } else if pick < agents.len() + self.events.len() {
                let e = self.events.swap_remove(pick - agents.len());
                self.fire(e)?;
            } else {
                let i = self.rng.below(self.unlaunched.len());
                let cl = self.unlaunched.swap_remove(i);
                self.launch(cl);
            }
        }
    }
}

fn next_op<'m>(ag: &Agent<'m>) -> Option<&'m Operation> {
    let f = ag.frames.last()?;
    let (ops, pc) = match f {
        Frame::Block { ops, pc } | Frame::For { ops, pc, .. } | Frame::While { ops, pc, .. } => {
            (*ops, *pc)
        }
    };
    ops.get(pc)
}

fn advance(ag: &mut Agent) {
    if let Some(Frame::Block { pc, .. } | Frame::For { pc, .. } | Frame::While { pc, .. }) =
        ag.frames.last_mut()
    {
        *pc += 1;
    }
}

/// Scalar ops; `None` for ops without a scalar result.
fn scalar(op: &Operation, env: &[i64], id: [i64; 3], dims: [i64; 3], rank: i64) -> Option<i64> {
    let a = |i: usize| env[op.operands[i].0 as usize];
    Some(match op.kind {
        OpKind::Constant => op.int_attr("value").unwrap_or(0),
        OpKind::AddI => a(0) + a(1),
        OpKind::SubI => a(0) - a(1),
        OpKind::MulI => a(0) * a(1),
        OpKind::DivI => a(0) / a(1),
        OpKind::RemI => a(0) % a(1),
        OpKind::CeilDiv => (a(0) + a(1) - 1) / a(1),
        OpKind::MinI => a(0).min(a(1)),
        OpKind::MaxI => a(0).max(a(1)),
        OpKind::CmpI => {
            let (x, y) = (a(0), a(1));
            (match op.str_attr("predicate").unwrap_or("eq") {
                "eq" => x == y,
                "ne" => x != y,
                "slt" => x < y,
                "sle" => x <= y,
                "sgt" => x > y,
                _ => x >= y,
            }) as i64
        }
        OpKind::CtaId => id[op.int_attr("dim").unwrap() as usize],
        OpKind::NumCtas => dims[op.int_attr("dim").unwrap() as usize],
        OpKind::ClusterCtaRank => rank,
        OpKind::ProgramId | OpKind::NumPrograms => panic!("the pass left {}", op.kind.name()),
        _ => return None,
    })
}

/// One configuration: kernel, problem, cluster size; `schedules` random schedules.
struct Config {
    rank: usize,
    bm: u64,
    cluster: u64,
    m: i64,
    n: i64,
    k: i64,
    batch: i64,
}

fn run_schedules(
    module: &Module,
    cfg: &Config,
    seed: u64,
    schedules: usize,
) -> Result<(), Violation> {
    let k = &module.ops[0];
    let body = &k.regions[0];
    // The warp-specialized GEMM: the ops before `tile.warp_specialize` once per CTA, then a
    // producer and 4 warps per consumer warpgroup. A plain launch: the ops before the tile
    // loop once per CTA, then every warp runs the rest.
    let plain = k.attr("num_warps").is_some();
    let mut inline = false;
    body.ops.iter().for_each(|o| {
        inline |= o.kind == OpKind::WarpSpecialize
            && o.regions[0].ops.iter().all(|x| x.kind == OpKind::Yield);
    });
    let (head_len, regions, consumer_warps) = if plain {
        let at = body
            .ops
            .iter()
            .position(|o| o.kind == OpKind::While)
            .expect("the clc tile loop");
        let rest = &body.ops[at..];
        let warps = k.int_attr("num_warps").unwrap() as usize;
        (at, [rest, rest], warps - 1)
    } else {
        let at = body
            .ops
            .iter()
            .position(|o| o.kind == OpKind::WarpSpecialize)
            .expect("warp_specialize");
        let ws = &body.ops[at];
        let consumers = ws.int_attr("consumers").unwrap() as usize;
        if inline {
            let r = &ws.regions[1].ops[..];
            (at, [r, r], 4 * consumers - 1)
        } else {
            let regions = [&ws.regions[0].ops[..], &ws.regions[1].ops[..]];
            (at, regions, 4 * consumers)
        }
    };
    let args = body.args.clone();
    let gx0 = (cfg.n + 255) / 256;
    let gy = (cfg.m + cfg.bm as i64 - 1) / cfg.bm as i64;
    let c = cfg.cluster as i64;
    let dims: [i64; 3] = match cfg.rank {
        1 => [gx0 * gy, 1, 1],
        2 => [((gx0 + c - 1) / c) * c, gy, 1],
        _ => [((gx0 + c - 1) / c) * c, gy, cfg.batch],
    };
    let ntiles: i64 = dims.iter().product();
    for s in 0..schedules {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (s as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03)
            | 1);
        let resident = 1 + rng.below(3);
        let mut ctas = vec![];
        for z in 0..dims[2] {
            for y in 0..dims[1] {
                for x in 0..dims[0] {
                    let lin = ctas.len();
                    ctas.push(CtaState {
                        id: [x, y, z],
                        cluster: lin / c as usize,
                        rank: x % c,
                        bars: HashMap::new(),
                        slots: HashMap::new(),
                        written: HashSet::new(),
                        failed_observed: false,
                        finished: false,
                        done_agents: 0,
                        bar_gen: 0,
                        bar_waiting: 0,
                    });
                }
            }
        }
        let nclusters = ctas.len() / c as usize;
        let mut w = World {
            m: module,
            dims,
            cdim: c,
            ctas,
            agents: vec![],
            events: vec![],
            unlaunched: (0..nclusters).collect(),
            resident,
            running: 0,
            args: vec![
                (args[3], cfg.m),
                (args[4], cfg.n),
                (args[5], cfg.k),
                (args[6], cfg.batch),
            ],
            head: &body.ops[..head_len],
            regions,
            consumer_warps,
            plain,
            inline,
            clc_bars: HashSet::new(),
            rng,
            steps: 0,
            live: vec![],
            a_arg: args[0],
        };
        // The first clusters launch before anything runs.
        let first = w.rng.below(w.unlaunched.len());
        let cl = w.unlaunched.swap_remove(first);
        w.launch(cl);
        w.run()
            .map_err(|e| format!("schedule {s} (seed {seed}): {e}"))?;
        // Exactly once, per consumer warp; the producer matches its consumers. A producer
        // handles the tiles it copies, every other agent those it stores.
        let handled = |ag: &Agent<'_>| -> Vec<(i64, i64)> {
            if ag.role == 0 && !plain && !inline {
                ag.loads.clone()
            } else {
                ag.tiles.clone()
            }
        };
        let mut per_warp: Vec<HashMap<(i64, i64), u32>> = vec![HashMap::new(); consumer_warps + 1];
        for ag in &w.agents {
            for t in handled(ag) {
                *per_warp[ag.role].entry(t).or_default() += 1;
            }
        }
        for (role, seen) in per_warp.iter().enumerate() {
            let total: u32 = seen.values().sum();
            if total as i64 != ntiles || seen.len() as i64 != ntiles {
                return Err(format!(
                    "schedule {s} (seed {seed}): {} {role} handled {total} tiles \
                        ({} distinct), the grid has \
                        {ntiles}",
                    if role == 0 && !plain && !inline {
                        "producer"
                    } else {
                        "warp"
                    },
                    seen.len()
                ));
            }
        }
        for cta in 0..w.ctas.len() {
            let mine: Vec<&Agent> = w.agents.iter().filter(|g| g.cta == cta).collect();
            if mine.is_empty() {
                continue; // cancelled: its tile ran in a CTA that stole it
            }
            let first = handled(mine[0]);
            for g in &mine[1..] {
                if g.tiles != first {
                    return Err(format!(
                        "schedule {s} (seed {seed}): CTA {cta}: warp {} stored tiles {:?} \
                            but the producer (plain launch or no producer: warp 0) handled \
                            {:?}",
                        g.role, g.tiles, first
                    ));
                }
            }
            if inline && mine[0].loads != first {
                return Err(format!(
                    "schedule {s} (seed {seed}): CTA {cta}: warp 0 copied tiles {:?} but \
                        stored {:?}",
                    mine[0].loads, first
                ));
            }
        }
    }
    Ok(())
}

fn configs(n: usize, seed: u64) -> Vec<Config> {
    let mut rng = Rng(seed | 1);
    (0..n)
        .map(|i| {
            let rank = 1 + i % 3;
            let cluster = if rank == 1 {
                1
            } else {
                [1u64, 2, 4][(i / 3) % 3]
            };
            // mma.sync's one tile (Target::check_gemm_tile): 128x256.
            let bm = 128u64;
            Config {
                rank,
                bm,
                cluster,
                m: 1 + rng.below(4 * bm as usize) as i64,
                n: 1 + rng.below(3 * 256) as i64,
                k: 1 + rng.below(3 * 64) as i64,
                batch: 1 + rng.below(2) as i64,
            }
        })
        .collect()
}

#[test]
fn every_tile_exactly_once_under_random_schedules() {
    let total: usize = std::env::var("CLC_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let per_config = 40;
    let cfgs = configs(total.div_ceil(per_config), 0x5eed);
    let mut built: HashMap<(usize, u64, u64), Module> = HashMap::new();
    let mut ran = 0;
    let mut shapes = HashSet::new();
    for (i, cfg) in cfgs.iter().enumerate() {
        let m = built
            .entry((cfg.rank, cfg.bm, cfg.cluster))
            .or_insert_with(|| build(cfg.rank, cfg.bm, cfg.cluster, None));
        run_schedules(m, cfg, i as u64, per_config).unwrap_or_else(|e| {
            panic!(
                "rank {} bm {} cluster {} M={} N={} K={} batch={}: {e}",
                cfg.rank, cfg.bm, cfg.cluster, cfg.m, cfg.n, cfg.k, cfg.batch
            )
        });
        ran += per_config;
        shapes.insert((cfg.rank, cfg.cluster));
    }
    assert!(ran >= total);
    // Every grid rank and every cluster size was exercised.
    for rank in 1..=3 {
        assert!(shapes.iter().any(|&(r, _)| r == rank), "no {rank}-D grid");
    }
    for c in [1, 2, 4] {
        assert!(shapes.iter().any(|&(_, x)| x == c), "no cluster of {c}");
    }
}

/// Each broken variant must be caught on some schedule of a small configuration.
fn caught(fault: ClcFault, cluster: u64) -> String {
    let cfg = Config {
        rank: 2,
        bm: 128,
        cluster,
        m: 200,
        n: 600,
        k: 100,
        batch: 1,
    };
    let m = build(2, 128, cluster, Some(fault));
    for seed in 0..50 {
        if let Err(e) = run_schedules(&m, &cfg, seed, 20) {
            return e;
        }
    }
    panic!("the model did not catch {fault:?}");
}

#[test]
fn catches_request_after_failure() {
    let e = caught(ClcFault::RequestAfterFailure, 1);
    eprintln!("caught: {e}");
    assert!(
        e.contains("after it observed a failed one") || e.contains("after it exited"),
        "{e}"
    );
}

#[test]
fn catches_missing_barrier_wait() {
    let e = caught(ClcFault::MissingBarrierWait, 1);
    eprintln!("caught: {e}");
    assert!(e.contains("read before"), "{e}");
}

#[test]
fn catches_narrow_response_loads() {
    let e = caught(ClcFault::NarrowLoads, 2);
    eprintln!("caught: {e}");
    assert!(e.contains("128-bit"), "{e}");
}

#[test]
fn catches_id_not_broadcast() {
    let e = caught(ClcFault::IdNotBroadcast, 1);
    eprintln!("caught: {e}");
    assert!(e.contains("tiles") || e.contains("deadlock"), "{e}");
}

#[test]
fn plain_launch_every_tile_exactly_once_under_random_schedules() {
    // A quarter of the GEMM test's schedules: the same protocol, every warp a reader.
    let total: usize = std::env::var("CLC_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(2_500, |n: usize| n / 4);
    let per_config = 40;
    let mut rng = Rng(0x91a1 | 1);
    let mut built: HashMap<(usize, u64), Module> = HashMap::new();
    let mut ran = 0;
    let mut i = 0;
    while ran < total {
        let rank = 1 + i % 3;
        let cluster = if rank == 1 {
            1
        } else {
            [1u64, 2, 4][(i / 3) % 3]
        };
        let cfg = Config {
            rank,
            bm: PLAIN_BM,
            cluster,
            m: 1 + rng.below(6 * PLAIN_BM as usize) as i64,
            n: 1 + rng.below(3 * 256) as i64,
            k: 1,
            batch: 1 + rng.below(2) as i64,
        };
        let m = built
            .entry((rank, cluster))
            .or_insert_with(|| build_plain(rank, cluster, None));
        run_schedules(m, &cfg, 1000 + i as u64, per_config).unwrap_or_else(|e| {
            panic!(
                "plain rank {rank} cluster {cluster} M={} N={} batch={}: {e}",
                cfg.m, cfg.n, cfg.batch
            )
        });
        ran += per_config;
        i += 1;
    }
    assert!(
        built.len() >= 3.min(i),
        "configurations: {:?}",
        built.keys()
    );
}

/// Each broken variant must be caught in the plain launch too.
fn caught_plain(fault: ClcFault, cluster: u64) -> String {
    let cfg = Config {
        rank: 2,
        bm: PLAIN_BM,
        cluster,
        m: 40,
        n: 600,
        k: 1,
        batch: 1,
    };
    let m = build_plain(2, cluster, Some(fault));
    for seed in 0..50 {
        if let Err(e) = run_schedules(&m, &cfg, seed, 20) {
            return e;
        }
    }
    panic!("the model did not catch {fault:?} in a plain launch");
}

#[test]
fn plain_launch_catches_every_fault() {
    let e = caught_plain(ClcFault::RequestAfterFailure, 1);
    assert!(
        e.contains("after it observed a failed one") || e.contains("after it exited"),
        "{e}"
    );
    let e = caught_plain(ClcFault::MissingBarrierWait, 1);
    assert!(e.contains("read before"), "{e}");
    let e = caught_plain(ClcFault::NarrowLoads, 2);
    assert!(e.contains("128-bit"), "{e}");
    let e = caught_plain(ClcFault::IdNotBroadcast, 1);
    assert!(e.contains("tiles") || e.contains("deadlock"), "{e}");
}
