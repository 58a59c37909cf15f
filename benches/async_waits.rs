//! Cost of `async-wait-placement` and `verify-async-waits` on kernels that grow: a
//! straight line of n wgmmas, each followed by a TMA copy into the stage the one before
//! read (n waits), and a nest of d loops around one wgmma. Prints the median of each pass
//! (and placement's `loop_analyses`) per size, and the ratio between sizes.
//!
//! ```sh
//! cargo bench --bench async_waits              # 5 runs per size
//! cargo bench --bench async_waits -- --runs 3  # fewer
//! ```
//!
//! Doubling n costs about 4× in each pass (each of the n waits is tried against an
//! analysis of the whole kernel). Placement analyses a nest of d loops about d² times
//! (`loop_analyses`); the checker explores its paths exactly, so each loop more multiplies
//! its time, and at d = 10 it runs out of its default `max_steps` (a located error).

mod common;
use std::time::Instant;
use tilec::dialect::parse;
use tilec::passes::async_wait_placement::place_async_waits;
use tilec::passes::verify_async_waits::{verify_async_waits, CheckOptions};

const HEAD: &str = "tile.kernel @k(%A: tensor<?x?xbf16>, %C: tensor<?x?xf32>, %N: index) \
    {block = [128, 1, 1], grid = [1]} {\n  %c0 = tile.constant {value = 0} : index\n  \
    %c1 = tile.constant {value = 1} : index\n  %c2 = tile.constant {value = 2} : index\n  \
    %ring = tile.smem_alloc {swizzle = 128} : smem<2x64x64xbf16>\n  \
    %full = tile.mbarrier_alloc {arrive_count = 1} : mbarrier<2>\n  \
    %z = tile.zeros : tile<64x64xf32>\n";

/// n wgmmas in a line, alternating stages, each followed by a copy into the other stage.
fn line(n: usize) -> String {
    let mut s = HEAD.to_string();
    let mut prev = "%z".to_string();
    for i in 0..n {
        let (a, b) = if i % 2 == 0 {
            ("%c0", "%c1")
        } else {
            ("%c1", "%c0")
        };
        s += &format!(
            "  %m{i} = tile.mma %ring, %ring, {a}, {prev} {{kind = \"wgmma\"}} : tile<64x64xf32>\n"
        );
        s += &format!("  tile.tma_load %A, %ring, %full, {b}, %c0, %c0\n");
        prev = format!("%m{i}");
    }
    s + &format!("  tile.store %C, %c0, %c0, {prev}\n  tile.return\n}}\n")
}

/// d nested loops carrying the accumulator, one wgmma in the innermost.
fn nest(d: usize) -> String {
    let mut s = HEAD.to_string();
    let mut prev = "%z".to_string();
    for i in 0..d {
        s += &format!("%r{i} = tile.for %c0, %N, %c1, {prev} : tile<64x64xf32> {{\n");
        s += &format!("^bb0(%i{i}: index, %a{i}: tile<64x64xf32>):\n");
        prev = format!("%a{i}");
    }
    s += &format!("%s = tile.remi %i{}, %c2 : index\n", d - 1);
    s +=
        &format!("%m = tile.mma %ring, %ring, %s, {prev} {{kind = \"wgmma\"}} : tile<64x64xf32>\n");
    s += "tile.yield %m\n";
    for i in (0..d).rev() {
        s += "}\n";
        if i > 0 {
            s += &format!("tile.yield %r{i}\n");
        }
    }
    s + "tile.store %C, %c0, %c0, %r0\ntile.return\n}\n"
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of placement and of the check over `runs`, and the loop analyses.
fn time(src: &str, runs: usize) -> (f64, f64, u64) {
    let (mut place, mut check, mut loops) = (vec![], vec![], 0);
    for _ in 0..runs {
        let mut m = parse(src, "bench.tile").unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        loops = place_async_waits(&mut m, &mut vec![]).loop_analyses;
        place.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        if let Err(e) = verify_async_waits(&m, &CheckOptions::default()) {
            panic!("the placement does not verify: {e}");
        }
        check.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (median(place), median(check), loops)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::arg(&args, "--runs", 5);
    println!(
        "{:<16} {:>12} {:>12} {:>14}",
        "kernel", "place ms", "verify ms", "loop analyses"
    );
    let mut last: Option<(f64, f64)> = None;
    for n in [50, 100, 200, 400] {
        let (p, c, l) = time(&line(n), runs);
        let ratio = last.map_or(String::new(), |(lp, lc)| {
            format!("   ×{:.1} / ×{:.1} per doubling", p / lp, c / lc)
        });
        println!(
            "{:<16} {p:>12.2} {c:>12.2} {l:>14}{ratio}",
            format!("line {n}")
        );
        last = Some((p, c));
    }
    for d in [2, 4, 6, 8] {
        let (p, c, l) = time(&nest(d), runs);
        println!("{:<16} {p:>12.2} {c:>12.2} {l:>14}", format!("nest {d}"));
    }
}
