//! Property tests of `verify-named-barriers` on generated turn-taking protocols (the
//! ping-pong of FlashAttention-3, generalised to a ring of W warpgroups).
//!
//! Each case builds a kernel of W = 2 to 4 warpgroups: warpgroup W-1 gives warpgroup 0 the
//! first turn; in a loop (or two, nested or in sequence, or inside a branch), warpgroup w
//! waits for its turn on barrier `base + w`, may meet CTA barriers and per-warpgroup
//! barriers (`threads = 128`) outside its turn, and hands the turn on to `base + (w + 1) mod
//! W` with `bar.arrive`; warpgroup 0 takes the last hand-on after the loops. Such a kernel
//! is correct by construction and must be accepted. Each mutation must be rejected with the
//! error it causes:
//! - a CTA barrier inside a turn: deadlock (the next warpgroup waits for the turn, the
//!   others at the CTA barrier);
//! - no head start: deadlock;
//! - no final take: an arrival left at exit;
//! - a second hand-on in one turn: a double arrival (W = 2) or an arrival left (W > 2).
//!
//! Beside that, a second model, written here and sharing no code with the pass, runs
//! random interleavings of the same kernel's barrier operations (100 per case): when it
//! finds a stuck or unpaired run, the pass must reject the kernel; when the pass accepts,
//! no run may get stuck.
//!
//! `PROPTEST_CASES=N` runs N cases instead of 256 (the seed is fixed, so CI checks the same
//! kernels every time).

use proptest::prelude::*;
use std::collections::HashMap;
use tilec_dialect::{parse, Module, OpKind};
use tilec_passes::verify_named_barriers::check_module;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mutation {
    None,
    CtaBarrierInTurn,
    NoHeadStart,
    NoFinalTake,
    DoubleHandOn,
}

#[derive(Clone, Debug)]
struct Case {
    wgs: u32,
    base: u32,
    /// Extra barriers outside the turn: 0 none, 1 a CTA barrier, 2 one per warpgroup (ids
    /// `base + W + w`, 128 threads: each warpgroup alone).
    extras: Vec<u8>,
    /// 0: one loop; 1: nested loops; 2: two loops in sequence; 3: the loop inside a branch.
    shape: u8,
    mutation: Mutation,
}

fn case() -> impl Strategy<Value = Case> {
    (
        2u32..=4,
        1u32..=8,
        prop::collection::vec(0u8..3, 0..3),
        0u8..4,
        prop_oneof![
            3 => Just(Mutation::None),
            1 => Just(Mutation::CtaBarrierInTurn),
            1 => Just(Mutation::NoHeadStart),
            1 => Just(Mutation::NoFinalTake),
            1 => Just(Mutation::DoubleHandOn),
        ],
    )
        .prop_map(|(wgs, base, extras, shape, mutation)| Case {
            wgs,
            base: base.min(16 - 2 * wgs),
            extras,
            shape,
            mutation,
        })
}

/// The kernel's text.
fn kernel(c: &Case) -> String {
    // A turn barrier counts its two warpgroups: the one taking the turn and the one
    // handing it on.
    let (b, n) = (c.base, 256);
    let mut body = String::new();
    body.push_str(&format!(
        "    tile.named_barrier {{id = {b}, threads = {n}, peer = 0}}\n"
    ));
    if c.mutation == Mutation::CtaBarrierInTurn {
        body.push_str("    tile.barrier\n");
    }
    body.push_str(&format!(
        "    tile.named_barrier {{id = {b}, threads = {n}, arrive = true, peer = 1}}\n"
    ));
    if c.mutation == Mutation::DoubleHandOn {
        body.push_str(&format!(
            "    tile.named_barrier {{id = {b}, threads = {n}, arrive = true, peer = 1}}\n"
        ));
    }
    for e in &c.extras {
        match e {
            1 => body.push_str("    tile.barrier\n"),
            2 => body.push_str(&format!(
                "    tile.named_barrier {{id = {}, threads = 128, peer = 0}}\n",
                b + c.wgs
            )),
            _ => {}
        }
    }
    let one_loop = |iv: &str| {
        format!("  tile.for %c0, %N, %c1 {{\n  ^bb0(%{iv}: index):\n{body}    tile.yield\n  }}\n")
    };
    let loops = match c.shape {
        0 => one_loop("i"),
        1 => format!(
            "  tile.for %c0, %N, %c1 {{\n  ^bb0(%o: index):\n{}    tile.yield\n  }}\n",
            one_loop("i")
                .replace("\n  ", "\n    ")
                .replacen("  tile.for", "    tile.for", 1)
        ),
        2 => one_loop("i") + &one_loop("j"),
        _ => format!(
            "  tile.if %c {{\n{}    tile.yield\n  }} {{\n    tile.yield\n  }}\n",
            one_loop("i")
                .replace("\n  ", "\n    ")
                .replacen("  tile.for", "    tile.for", 1)
        ),
    };
    let head = if c.mutation == Mutation::NoHeadStart {
        String::new()
    } else {
        let last = c.wgs - 1;
        let attrs = format!("id = {b}, threads = {n}, arrive = true, only_warpgroup = {last}");
        format!("  tile.named_barrier {{{attrs}}}\n")
    };
    let take = if c.mutation == Mutation::NoFinalTake {
        String::new()
    } else {
        format!("  tile.named_barrier {{id = {b}, threads = {n}, only_warpgroup = 0}}\n")
    };
    format!(
        "tile.kernel @k(%N: index, %c: i1) {{grid = [1], target = \"sm_90a\", block = [{n}, \
         1, 1], num_warps = {}}} {{\n  %c0 = tile.constant {{value = 0}} : index\n  %c1 = \
         tile.constant {{value = 1}} : index\n{head}{loops}{take}  tile.return\n}}\n",
        c.wgs * 4,
        n = c.wgs * 128
    )
}

/// One barrier operation of a warpgroup, as the second model sees it.
#[derive(Clone, Copy, Debug)]
struct Op {
    id: i64,
    threads: i64,
    wait: bool,
}

/// Each warpgroup's barrier operations with every loop run `trips` times and every branch
/// taken (the second model's own walk of the IR).
fn flatten(m: &Module, wgs: i64, trips: usize, take_branch: bool) -> Vec<Vec<Op>> {
    fn walk(
        ops: &[tilec_dialect::Operation],
        w: i64,
        wgs: i64,
        cta: i64,
        trips: usize,
        take: bool,
        out: &mut Vec<Op>,
    ) {
        for o in ops {
            match o.kind {
                OpKind::Barrier => out.push(Op {
                    id: 0,
                    threads: cta,
                    wait: true,
                }),
                OpKind::NamedBarrier => {
                    if o.int_attr("only_warpgroup").is_some_and(|k| k != w) {
                        continue;
                    }
                    let id = o.int_attr("id").unwrap()
                        + o.int_attr("peer").map_or(0, |p| (w + p).rem_euclid(wgs));
                    out.push(Op {
                        id,
                        threads: o.int_attr("threads").unwrap(),
                        wait: o.attr("arrive").is_none(),
                    });
                }
                OpKind::For => {
                    for _ in 0..trips {
                        walk(&o.regions[0].ops, w, wgs, cta, trips, take, out);
                    }
                }
                OpKind::If => {
                    let r = if take { 0 } else { 1 };
                    walk(&o.regions[r].ops, w, wgs, cta, trips, take, out);
                }
                _ => {}
            }
        }
    }
    let k = m.kernels().next().unwrap();
    (0..wgs)
        .map(|w| {
            let mut out = vec![];
            walk(
                &k.regions[0].ops,
                w,
                wgs,
                wgs * 128,
                trips,
                take_branch,
                &mut out,
            );
            out
        })
        .collect()
}

/// One random interleaving: `Err` if it gets stuck, a warpgroup arrives twice in a phase,
/// or arrivals are left at the end.
fn run_once(prog: &[Vec<Op>], rng: &mut u64) -> Result<(), String> {
    let n = prog.len();
    let mut pc = vec![0usize; n];
    let mut waiting: Vec<Option<(i64, u64)>> = vec![None; n];
    // id -> (threads counted, arrived so far, who arrived, generation)
    let mut bars: HashMap<i64, (i64, i64, u32, u64)> = HashMap::new();
    loop {
        // A waiting warpgroup is free once its barrier has completed the phase it joined.
        for slot in waiting.iter_mut() {
            if slot.is_some_and(|(id, generation)| bars.get(&id).map_or(0, |b| b.3) > generation) {
                *slot = None;
            }
        }
        let ready: Vec<usize> = (0..n)
            .filter(|&w| waiting[w].is_none() && pc[w] < prog[w].len())
            .collect();
        if ready.is_empty() {
            if waiting.iter().any(Option::is_some) {
                return Err("stuck".into());
            }
            if bars.values().any(|b| b.1 != 0) {
                return Err("arrivals left".into());
            }
            return Ok(());
        }
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let w = ready[(*rng % ready.len() as u64) as usize];
        let op = prog[w][pc[w]];
        pc[w] += 1;
        let b = bars.entry(op.id).or_insert((op.threads, 0, 0, 0));
        if b.1 == 0 {
            b.0 = op.threads;
        }
        if b.0 != op.threads {
            return Err("counts differ".into());
        }
        if b.2 & (1 << w) != 0 {
            return Err("double arrival".into());
        }
        b.2 |= 1 << w;
        b.1 += 128;
        let generation = b.3;
        if b.1 >= b.0 {
            *b = (b.0, 0, 0, b.3 + 1);
        }
        if op.wait {
            waiting[w] = Some((op.id, generation));
        }
    }
}

/// 256 cases, or `PROPTEST_CASES`.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        rng_seed: proptest::test_runner::RngSeed::Fixed(20_261_206),
        ..ProptestConfig::default()
    })]

    #[test]
    fn turn_taking_protocols(c in case()) {
        let text = kernel(&c);
        let m = parse(&text, "prop").map_err(|d| TestCaseError::fail(format!("{d}\n{text}")))?;
        let verdict = check_module(&m, 3, 1_000_000);
        let message = verdict.as_ref().err().map(|d| {
            d.0.iter().map(|x| x.message.clone()).collect::<Vec<_>>().join("; ")
        });
        match c.mutation {
            Mutation::None => prop_assert!(verdict.is_ok(), "{message:?}\n{text}"),
            Mutation::CtaBarrierInTurn | Mutation::NoHeadStart => prop_assert!(
                message.as_deref().is_some_and(|m| m.contains("deadlock")),
                "{message:?}\n{text}"
            ),
            Mutation::NoFinalTake => prop_assert!(
                message.as_deref().is_some_and(|m| m.contains("at kernel exit")),
                "{message:?}\n{text}"
            ),
            Mutation::DoubleHandOn => prop_assert!(
                message.as_deref().is_some_and(|m| {
                    m.contains("again before the barrier completes") || m.contains("at kernel exit")
                        || m.contains("deadlock")
                }),
                "{message:?}\n{text}"
            ),
        }
        // The second model: random interleavings at 0 to 3 trips, both branch sides.
        let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (text.len() as u64);
        let mut failed = None;
        for trips in 0..=3 {
            for take in [true, false] {
                let prog = flatten(&m, i64::from(c.wgs), trips, take);
                for _ in 0..100 / 8 + 1 {
                    if let Err(e) = run_once(&prog, &mut rng) {
                        failed = Some(format!("{e} at {trips} trips, branch {take}"));
                    }
                }
            }
        }
        if let Some(f) = &failed {
            prop_assert!(verdict.is_err(), "random interleaving {f}, but the pass accepts\n{text}");
        }
        if verdict.is_ok() {
            prop_assert!(failed.is_none());
        }
    }
}
