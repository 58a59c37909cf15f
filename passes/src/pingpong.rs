//! `tile-pingpong` — consumer warpgroups that take turns at issuing their wgmmas
//! (FlashAttention-3's ping-pong), so that one warpgroup's softmax runs while the tensor
//! cores run the other's products.
//!
//! It takes a plain launch with a producer warpgroup (`tile.warp_specialize` directly in the
//! kernel body, as `tile-pipeline-loads warp-specialize=true` writes it) and `W` ≥ 2
//! consumer warpgroups. In the consumer region (and in the body of a persistent tile loop
//! `tile.for {tile_loop = true}` there), around each loop whose body issues wgmmas,
//! warpgroup `w` waits for its turn on named barrier `B + w` before each run of adjacent
//! wgmmas and hands the turn on to warpgroup `w + 1 mod W` after it; warpgroup `W − 1`
//! gives warpgroup 0 the first turn before the loop, and warpgroup 0 takes the last hand-on
//! after it:
//!
//! ```text
//! tile.named_barrier {id = B, threads = 256, arrive = true, only_warpgroup = W-1}
//! tile.for ... {
//!   ...
//!   tile.named_barrier {id = B, threads = 256, peer = 0}               // bar.sync B + w
//!   %s = tile.mma ...
//!   tile.named_barrier {id = B, threads = 256, arrive = true, peer = 1} // bar.arrive B + w + 1
//!   ...
//! }
//! tile.named_barrier {id = B, threads = 256, only_warpgroup = 0}
//! ```
//!
//! Each barrier phase is one warpgroup's `bar.sync` and the previous one's `bar.arrive`
//! (256 threads). The wgmmas of one warpgroup still overlap its own other work as
//! `async-wait-placement` allows; the turns order only their issue. `verify-named-barriers`
//! proves the protocol deadlock-free over the consumer region (a CTA barrier inside a turn
//! would deadlock, so a loop holding one is left alone, with a remark).
//!
//! Run after `tile-pipeline-loads` and before `async-wait-placement`.
//!
//! With `turn = body`, one turn covers a loop body's first wgmma to its last and the ops
//! between them (FlashAttention-3's turn around S_j's and P_{j-1}·V_{j-1}'s issue, as
//! `tile-defer-mma` orders them), where none of those ops blocks (an mbarrier wait, a
//! barrier, a flag wait, a loop); otherwise each run of adjacent wgmmas is a turn.
//!
//! Options: `barrier-id` (B, 1 to 14, default 1: ids B to B + W − 1 are used; 0 is the CTA
//! barrier), `turn` (`runs`, the default, or `body`). Statistics: `kernels-ping-ponged`,
//! `turns`.
//!
//! PTX ISA §9.7.13.1 (`bar.sync`, `bar.arrive` with a thread count).

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use crate::verify_named_barriers::implicit_cta_barrier;
use tilec_dialect::{Attribute, Diagnostic, Diagnostics, Location, Module, OpKind, Operation};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-pingpong",
    summary: "Make consumer warpgroups take turns issuing their wgmmas (named barriers)",
    description: "In a plain launch with a producer warpgroup and two or more consumer \
        warpgroups, brackets each run of wgmmas in a loop of the consumer region with a \
        turn: bar.sync on the warpgroup's own named barrier before, bar.arrive on the next \
        warpgroup's after; the last warpgroup gives the first the first turn before the loop, \
        and the first takes the last hand-on after it. Run before async-wait-placement; \
        verify-named-barriers proves the protocol.\n\nExample: tile-opt \
        --pass-pipeline='tile-assign-layouts{target=sm_90a},tile-dot-to-wgmma,dce,\
        tile-pipeline-loads{warp-specialize=true},tile-pingpong,async-wait-placement' k.tile",
    options: &[
        OptionInfo {
            name: "barrier-id",
            kind: OptionKind::UInt,
            default: "1",
            help: "The first named barrier id: warpgroup w waits on barrier-id + w (1 to 14)",
        },
        OptionInfo {
            name: "turn",
            kind: OptionKind::Enum(&["runs", "body"]),
            default: "runs",
            help: "What one turn covers: each run of adjacent wgmmas ('runs'), or a loop \
                body's first wgmma to its last ('body', FlashAttention-3's: the ops between \
                them must not block; else runs)",
        },
    ],
};

/// Threads of one turn's barrier phase: the warpgroup that takes the turn and the one that
/// hands it on.
const TURN_THREADS: i64 = 256;

/// The pass.
pub struct PingPong {
    /// The first named barrier id.
    pub first_id: i64,
    /// One turn per loop body, from its first wgmma to its last (option `turn = body`),
    /// where nothing between them blocks; else one per run of adjacent wgmmas.
    pub whole_body: bool,
}

impl PingPong {
    /// From the pass options.
    ///
    /// # Errors
    /// `barrier-id` outside 1 to 14.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let id = o.uint("barrier-id");
        if !(1..=14).contains(&id) {
            return Err(format!(
                "tile-pingpong option 'barrier-id' must be 1 to 14, found {id}"
            ));
        }
        Ok(PingPong {
            first_id: id as i64,
            whole_body: o.get("turn") == "body",
        })
    }
}

impl Pass for PingPong {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        let (mut done, mut turns) = (0, 0);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.regions.is_empty() {
                continue;
            }
            let mut wgmma = false;
            k.walk(&mut |o| wgmma |= is_wgmma(o));
            if !wgmma || k.int_attr("num_warps").is_none() {
                continue;
            }
            // A refusal found after some loops got their turns leaves the kernel as it was.
            let before = k.clone();
            match self.apply(m, k) {
                Ok(n) => {
                    done += 1;
                    turns += n;
                }
                Err(why) => {
                    *k = before;
                    cx.diagnostics.push(Diagnostic::remark(
                        k.loc.clone(),
                        format!("tile-pingpong: warpgroups do not take turns: {why}"),
                    ))
                }
            }
        }
        m.ops = kernels;
        cx.stat("kernels-ping-ponged", done);
        cx.stat("turns", turns);
        Ok(())
    }
}

fn is_wgmma(o: &Operation) -> bool {
    o.kind == OpKind::Mma && o.str_attr("kind") == Some("wgmma")
}

/// Whether `o` (or an op in it) may wait for other threads: a warpgroup holding the turn
/// there could wait for one that waits for the turn.
fn blocks(o: &Operation) -> bool {
    let mut b = false;
    o.walk(&mut |x| {
        b |= matches!(
            x.kind,
            OpKind::MbarrierWait
                | OpKind::Barrier
                | OpKind::NamedBarrier
                | OpKind::WaitFlag
                | OpKind::For
                | OpKind::While
        )
    });
    b
}

/// `tile.named_barrier {id, threads = 256, ...}`.
fn barrier(
    loc: &Location,
    id: i64,
    arrive: bool,
    peer: Option<i64>,
    only: Option<i64>,
) -> Operation {
    let mut o = Operation::new(OpKind::NamedBarrier, loc.clone());
    o.attrs.insert("id".into(), Attribute::Int(id));
    o.attrs
        .insert("threads".into(), Attribute::Int(TURN_THREADS));
    if arrive {
        o.attrs.insert("arrive".into(), Attribute::Bool(true));
    }
    if let Some(p) = peer {
        o.attrs.insert("peer".into(), Attribute::Int(p));
    }
    if let Some(w) = only {
        o.attrs.insert("only_warpgroup".into(), Attribute::Int(w));
    }
    o
}

impl PingPong {
    /// Adds the turns around each loop among `ops` (the consumer region's, or a persistent
    /// tile loop's body there) whose body issues wgmmas; returns how many loops and turns.
    /// `Err` where such a loop holds a CTA barrier.
    fn turns_in(
        &self,
        m: &Module,
        ops: &mut Vec<Operation>,
        wgs: i64,
    ) -> Result<(u64, u64), String> {
        let b = self.first_id;
        let (mut found, mut turns) = (0, 0);
        let mut loops = vec![];
        for (i, o) in ops.iter_mut().enumerate() {
            if o.kind == OpKind::For
                && o.attr("tile_loop").and_then(Attribute::as_bool) == Some(true)
            {
                let (f, t) = self.turns_in(m, &mut o.regions[0].ops, wgs)?;
                found += f;
                turns += t;
                continue;
            }
            if o.kind != OpKind::For || !o.regions[0].ops.iter().any(is_wgmma) {
                continue;
            }
            let mut cta = None;
            o.walk(&mut |x| {
                if cta.is_none() && (x.kind == OpKind::Barrier || implicit_cta_barrier(m, x)) {
                    cta = Some((x.kind.name(), x.loc.clone()));
                }
            });
            if let Some((name, loc)) = cta {
                return Err(format!(
                    "the loop at {}:{}:{} holds '{name}' at {}:{}:{}, a CTA barrier, which a \
                     warpgroup holding the turn would wait at for the others forever",
                    o.loc.file, o.loc.line, o.loc.col, loc.file, loc.line, loc.col
                ));
            }
            loops.push(i);
        }
        found += loops.len() as u64;
        for &i in loops.iter().rev() {
            let loc = ops[i].loc.clone();
            let body = std::mem::take(&mut ops[i].regions[0].ops);
            let mut out = Vec::with_capacity(body.len() + 4);
            // The ops of one turn: from the first wgmma of the body to its last, when
            // nothing between them blocks; else each run of adjacent wgmmas.
            let first = body.iter().position(is_wgmma);
            let last = body.iter().rposition(is_wgmma);
            let span = match (first, last) {
                (Some(f), Some(l)) if self.whole_body && !body[f..=l].iter().any(blocks) => {
                    Some((f, l))
                }
                _ => None,
            };
            let mut in_turn = false;
            for (j, o) in body.into_iter().enumerate() {
                let inside = match span {
                    Some((f, l)) => (f..=l).contains(&j),
                    None => is_wgmma(&o),
                };
                if inside && !in_turn {
                    out.push(barrier(&o.loc, b, false, Some(0), None));
                    turns += 1;
                } else if !inside && in_turn {
                    out.push(barrier(&o.loc, b, true, Some(1), None));
                }
                in_turn = inside;
                out.push(o);
            }
            ops[i].regions[0].ops = out;
            ops.insert(i + 1, barrier(&loc, b, false, None, Some(0)));
            ops.insert(i, barrier(&loc, b, true, None, Some(wgs - 1)));
        }
        Ok((found, turns))
    }

    /// Adds the turns to kernel `k`; returns how many; `Err` says why it does not apply.
    fn apply(&self, m: &Module, k: &mut Operation) -> Result<u64, String> {
        let warps = k.int_attr("num_warps").unwrap_or(0);
        let wgs = warps / 4;
        let mut named = false;
        k.walk(&mut |o| named |= o.kind == OpKind::NamedBarrier);
        if named {
            return Err("the kernel already uses named barriers".into());
        }
        let Some(ws) = k.regions[0]
            .ops
            .iter_mut()
            .find(|o| o.kind == OpKind::WarpSpecialize && o.regions.len() == 2)
        else {
            return Err(
                "the kernel has no producer warpgroup (tile-pipeline-loads warp-specialize=true)"
                    .into(),
            );
        };
        if warps % 4 != 0 || wgs < 2 {
            return Err(format!(
                "it has {warps} consumer warps; turns need two or more whole warpgroups"
            ));
        }
        if self.first_id + wgs - 1 > 15 {
            return Err(format!(
                "barrier-id {} + {wgs} warpgroups passes barrier 15",
                self.first_id
            ));
        }
        let (found, turns) = self.turns_in(m, &mut ws.regions[1].ops, wgs)?;
        if found == 0 {
            return Err("no loop of the consumer region issues wgmmas".into());
        }
        Ok(turns)
    }
}
