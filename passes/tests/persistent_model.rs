//! A model of the persistent schedules, run on the control logic *as the pass emits it*:
//! the scalar ops of the rewritten kernel (constants, index arithmetic, `tile.ctaid`,
//! `tile.nctaid`, the tile loop) are interpreted for every launched CTA, and each
//! `tile.store` records the tile it writes. Property: every tile of the grid is stored
//! exactly once, whatever the grid (1-, 2-, 3-D, ragged), the group size and, for
//! `schedule=static`, the number of CTAs the launcher starts (fewer or more than tiles) and
//! the cluster shape (a static cluster of X x Y CTAs takes adjacent tiles; its tiles past
//! the grid's edge must store nothing: a store out of bounds is dropped, as `tile.store`
//! drops it).
//!
//! `PROPTEST_CASES` sets the number of random configurations (default 2000).

use proptest::prelude::*;
use std::collections::HashMap;
use tilec_dialect::{parse, verify, OpKind, Operation, Value};
use tilec_passes::PassManager;

fn kernel(rank: usize) -> String {
    let (dims, tensor, pids, idx) = match rank {
        1 => (
            "[%X]",
            "tensor<?xf32>",
            "%p0 = tile.program_id {dim = 0} : index\n",
            "%p0",
        ),
        2 => (
            "[%X, %Y]",
            "tensor<?x?xf32>",
            "%p0 = tile.program_id {dim = 0} : index\n  %p1 = \
                tile.program_id {dim = 1} : index\n",
            "%p1, %p0",
        ),
        _ => (
            "[%X, %Y, %Z]",
            "tensor<?x?x?xf32>",
            "%p0 = tile.program_id {dim = 0} : index\n  %p1 \
                = tile.program_id {dim = 1} : index\n  %p2 = tile.program_id {dim = 2} : \
                index\n",
            "%p2, %p1, %p0",
        ),
    };
    let shape = match rank {
        1 => "1",
        2 => "1x1",
        _ => "1x1x1",
    };
    // A GEMM main loop (no trip) makes it a kernel `tile-to-gpu` pipelines, which a
    // static cluster needs.
    format!(
        "tile.kernel @k(%O: {tensor}, %X: index, %Y: index, %Z: index, %A: tensor<?x?xbf16>, \
            %B: tensor<?x?xbf16>) {{grid = {dims}}} {{\n  \
            {pids}  %c0 = tile.constant {{value = 0}} : index\n  \
            %c16 = tile.constant {{value = 16}} : index\n  \
            %zero = tile.zeros : tile<16x16xf32>\n  \
            %acc = tile.for %c0, %c0, %c16, %zero : tile<16x16xf32> {{\n  \
            ^bb0(%kk: index, %c: tile<16x16xf32>):\n    \
            %a = tile.load %A, %c0, %kk : tile<16x16xbf16>\n    \
            %b = tile.load %B, %kk, %c0 : tile<16x16xbf16>\n    \
            %d = tile.dot %a, %b, %c : tile<16x16xf32>\n    \
            tile.yield %d\n  }}\n  \
            %one = tile.constant {{value = 1.0}} : f32\n  %t = tile.splat %one : \
            tile<{shape}xf32>\n  tile.store %O, {idx}, %t\n  tile.return\n}}\n"
    )
}

struct Cta {
    id: [i64; 3],
    n: [i64; 3],
    /// The cluster shape (x, y, z).
    cluster: [i64; 3],
}

fn run(
    ops: &[Operation],
    env: &mut HashMap<Value, i64>,
    cta: &Cta,
    stores: &mut HashMap<Vec<i64>, u32>,
) {
    for o in ops {
        let a = |i: usize, env: &HashMap<Value, i64>| env[&o.operands[i]];
        let r = match o.kind {
            OpKind::Constant => o.int_attr("value"),
            OpKind::AddI => Some(a(0, env) + a(1, env)),
            OpKind::SubI => Some(a(0, env) - a(1, env)),
            OpKind::MulI => Some(a(0, env) * a(1, env)),
            OpKind::DivI => Some(a(0, env) / a(1, env)),
            OpKind::RemI => Some(a(0, env) % a(1, env)),
            OpKind::CeilDiv => Some((a(0, env) + a(1, env) - 1) / a(1, env)),
            OpKind::MinI => Some(a(0, env).min(a(1, env))),
            OpKind::MaxI => Some(a(0, env).max(a(1, env))),
            OpKind::CtaId => Some(cta.id[o.int_attr("dim").unwrap() as usize]),
            OpKind::NumCtas => Some(cta.n[o.int_attr("dim").unwrap() as usize]),
            OpKind::ClusterCtaId => {
                let d = o.int_attr("dim").unwrap() as usize;
                Some(cta.id[d] % cta.cluster[d])
            }
            OpKind::ClusterId => {
                let d = o.int_attr("dim").unwrap() as usize;
                Some(cta.id[d] / cta.cluster[d])
            }
            OpKind::NumClusters => {
                let d = o.int_attr("dim").unwrap() as usize;
                Some(cta.n[d] / cta.cluster[d])
            }
            OpKind::CmpI => {
                assert_eq!(o.str_attr("predicate"), Some("slt"));
                Some(i64::from(a(0, env) < a(1, env)))
            }
            OpKind::Select => Some(if a(0, env) != 0 { a(1, env) } else { a(2, env) }),
            OpKind::ProgramId | OpKind::NumPrograms => panic!("the pass left {}", o.kind.name()),
            OpKind::For => {
                let (lb, ub, step) = (a(0, env), a(1, env), a(2, env));
                assert!(step > 0, "non-positive step");
                let mut i = lb;
                while i < ub {
                    env.insert(o.regions[0].args[0], i);
                    run(&o.regions[0].ops, env, cta, stores);
                    i += step;
                }
                None
            }
            OpKind::Store => {
                let idx: Vec<i64> = o.operands[1..o.operands.len() - 1]
                    .iter()
                    .map(|v| env[v])
                    .collect();
                // A negative coordinate is outside every tensor: the store drops it.
                if idx.iter().all(|&i| i >= 0) {
                    *stores.entry(idx).or_default() += 1;
                }
                None
            }
            _ => None,
        };
        if let (Some(v), Some(&res)) = (r, o.results.first()) {
            env.insert(res, v);
        }
    }
}

fn check(
    rank: usize,
    dims: [i64; 3],
    group_m: u64,
    schedule: &str,
    launched: i64,
    cluster: [i64; 2],
) -> Result<(), TestCaseError> {
    let mut m = parse(&kernel(rank), "model.tile").unwrap();
    verify(&m).unwrap();
    let [cx, cy] = cluster;
    let mut pm = PassManager::parse(&format!(
        "persistent{{schedule={schedule} group_m={group_m} cluster={cx} cluster-y={cy}}}"
    ))
    .unwrap();
    pm.run(&mut m, &mut |_, _, _| {}).unwrap();
    let k = &m.ops[0];
    let args = &k.regions[0].args;
    let ntiles: i64 = dims[..rank].iter().product();
    // The launch: static starts `launched` CTAs along x (with a cluster, `launched`
    // clusters: (launched · cx, cy, 1) CTAs); none launches the tile grid.
    let ctas: Vec<Cta> = if schedule == "static" {
        let mut v = vec![];
        for y in 0..cy {
            for x in 0..launched * cx {
                v.push(Cta {
                    id: [x, y, 0],
                    n: [launched * cx, cy, 1],
                    cluster: [cx, cy, 1],
                });
            }
        }
        v
    } else {
        let mut v = vec![];
        for z in 0..if rank > 2 { dims[2] } else { 1 } {
            for y in 0..if rank > 1 { dims[1] } else { 1 } {
                for x in 0..dims[0] {
                    v.push(Cta {
                        id: [x, y, z],
                        n: [
                            dims[0],
                            if rank > 1 { dims[1] } else { 1 },
                            if rank > 2 { dims[2] } else { 1 },
                        ],
                        cluster: [1, 1, 1],
                    });
                }
            }
        }
        v
    };
    let mut stores = HashMap::new();
    for cta in &ctas {
        let mut env = HashMap::new();
        env.insert(args[1], dims[0]);
        env.insert(args[2], dims[1]);
        env.insert(args[3], dims[2]);
        run(&k.regions[0].ops, &mut env, cta, &mut stores);
    }
    prop_assert_eq!(
        stores.len() as i64,
        ntiles,
        "tiles stored: {:?}",
        stores.len()
    );
    for (idx, n) in &stores {
        prop_assert_eq!(*n, 1, "tile {:?} stored {} times", idx, n);
        let rev: Vec<i64> = idx.iter().rev().copied().collect();
        for (d, &p) in rev.iter().enumerate() {
            prop_assert!(
                p >= 0 && p < dims[d],
                "tile {:?} outside the grid {:?}",
                idx,
                &dims[..rank]
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_tile_exactly_once(rank in 1usize..=3, x in 1i64..=13, y in 1i64..=11, z in 1i64..=4,
                               group_m in prop::sample::select(vec![0u64, 1, 2, 3, 5, 8]),
                               static_sched in any::<bool>(), extra in -40i64..=6) {
        let dims = [x, y, z];
        let ntiles: i64 = dims[..rank].iter().product();
        let launched = (ntiles + extra).clamp(1, ntiles + 6);
        check(rank, dims, group_m, if static_sched { "static" } else { "none" }, launched, [1, 1])?;
    }

    #[test]
    fn every_tile_exactly_once_in_clusters(rank in 1usize..=3, x in 1i64..=13, y in 1i64..=11,
                               z in 1i64..=4,
                               group_m in prop::sample::select(vec![0u64, 1, 2, 3, 8]),
                               cluster in prop::sample::select(
                                   vec![[2i64, 1], [4, 1], [1, 2], [2, 2], [1, 4]]),
                               clusters in 1i64..=12) {
        // cluster-y needs a second grid dimension.
        prop_assume!(rank > 1 || cluster[1] == 1);
        check(rank, [x, y, z], group_m, "static", clusters, cluster)?;
    }
}

#[test]
fn grouped_order_sweeps_m_first() {
    // 4 x 5 grid (x = N tiles, y = M tiles), group_m = 2: tiles 0..3 are (m, n) = (0,0),
    // (1,0), (0,1), (1,1).
    let mut m = parse(&kernel(2), "g.tile").unwrap();
    PassManager::parse("persistent{schedule=static group_m=2}")
        .unwrap()
        .run(&mut m, &mut |_, _, _| {})
        .unwrap();
    let k = &m.ops[0];
    let mut order = vec![];
    // One CTA running every tile, in order.
    let cta = Cta {
        id: [0, 0, 0],
        n: [1, 1, 1],
        cluster: [1, 1, 1],
    };
    let mut env = HashMap::new();
    env.insert(k.regions[0].args[1], 4);
    env.insert(k.regions[0].args[2], 5);
    env.insert(k.regions[0].args[3], 1);
    let mut stores = HashMap::new();
    run(&k.regions[0].ops, &mut env, &cta, &mut stores);
    assert_eq!(stores.len(), 20);
    // The first four trips of the tile loop, one at a time, in order.
    let lp = k.regions[0]
        .ops
        .iter()
        .find(|o| o.kind == OpKind::For)
        .unwrap();
    for t in 0..4 {
        env.insert(lp.regions[0].args[0], t);
        let mut one = HashMap::new();
        run(&lp.regions[0].ops, &mut env, &cta, &mut one);
        order.push(one.keys().next().unwrap().clone());
    }
    assert_eq!(order, vec![vec![0, 0], vec![1, 0], vec![0, 1], vec![1, 1]]);
}
