//! Random kernels without a dot, run three ways.
//!
//! Each seed gives a program over two f32 inputs and one output, on a random tile shape
//! and ragged problem sizes: elementwise ops, reductions broadcast back, bf16 and i32 round
//! trips, masks from `tile.iota`/`tile.cmpi`/`tile.select`, transposes, `exp2`, `sqrt`,
//! loops carrying tiles, and (a third of the programs) two masked stores that each write
//! the elements the other leaves, or (a sixth) atomic adds of the result or of its row or
//! column sums, which several programs add into. On the CPU (every `cargo test`, 40
//! seeds): the reference interpreter runs the program as written and after the default
//! pipeline (laid out, GPU-level), with the same results, and its PTX for sm_90 is
//! accepted by ptxas.
//!
//! With `TILEC_DIFFTEST_OUT=DIR` (and `TILEC_DIFFTEST_COUNT`, default 500) the test also
//! writes, per program, the PTX and manifest for sm_90 and sm_90a, the inputs and the
//! interpreter's output (`pNNN.bin`: X, Y, then Z, little-endian f32, row-major) and an
//! index (`index.json`), for `tools/gpu/difftest.py` to run on a GPU.

use std::fmt::Write;
use std::path::Path;
use tilec::dialect::interp::{run, ArgValue, Tensor};
use tilec::dialect::{parse, ScalarType, Target};
use tilec::{compile, Emit, Input, Options};

mod common;

use common::Rng;

/// A generated program: its text, tile shape and problem sizes.
struct Program {
    src: String,
    m: usize,
    n: usize,
    /// The program adds into Z with `tile.atomic_add` (Z holds zeros before it runs).
    atomic: bool,
}

fn program(seed: u64) -> Program {
    let mut g = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let shapes = [
        (1, 64),
        (4, 32),
        (2, 128),
        (8, 16),
        (16, 64),
        (1, 256),
        (32, 32),
    ];
    let (r, c) = shapes[g.below(shapes.len() as u64) as usize];
    let m = 1 + g.below(3 * r) as usize;
    let n = 1 + g.below(3 * c) as usize;
    let t = format!("tile<{r}x{c}xf32>");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "tile.kernel @k(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>, %Z: tensor<?x?xf32>, %M: \
         index, %N: index) {{grid = [ceildiv(%N, {c}), ceildiv(%M, {r})]}} {{"
    );
    let _ = writeln!(s, "  %pn = tile.program_id {{dim = 0}} : index");
    let _ = writeln!(s, "  %pm = tile.program_id {{dim = 1}} : index");
    let _ = writeln!(s, "  %cr = tile.constant {{value = {r}}} : index");
    let _ = writeln!(s, "  %cc = tile.constant {{value = {c}}} : index");
    let _ = writeln!(s, "  %c0 = tile.constant {{value = 0}} : index");
    let _ = writeln!(s, "  %c1 = tile.constant {{value = 1}} : index");
    let _ = writeln!(s, "  %c3 = tile.constant {{value = 3}} : index");
    let _ = writeln!(s, "  %ten = tile.constant {{value = 10.0}} : f32");
    let _ = writeln!(s, "  %row = tile.muli %pm, %cr : index");
    let _ = writeln!(s, "  %col = tile.muli %pn, %cc : index");
    let _ = writeln!(s, "  %v0 = tile.load %X, %row, %col : {t}");
    let _ = writeln!(s, "  %v1 = tile.load %Y, %row, %col : {t}");
    let mut pool = 2usize;
    let mut next = 2usize;
    let pick = |g: &mut Rng, pool: usize| g.below(pool as u64) as usize;
    let steps = 3 + g.below(6);
    for _ in 0..steps {
        // Half the time on the newest value, so that most ops feed the stored result.
        let a = if g.below(2) == 0 {
            pool - 1
        } else {
            pick(&mut g, pool)
        };
        let b = pick(&mut g, pool);
        let v = next;
        match g.below(9) {
            0 | 1 => {
                let op = ["add", "sub", "mul", "max", "min"][g.below(5) as usize];
                let _ = writeln!(s, "  %v{v} = tile.{op} %v{a}, %v{b} : {t}");
            }
            2 => {
                let op = ["neg", "abs", "relu"][g.below(3) as usize];
                let _ = writeln!(s, "  %v{v} = tile.{op} %v{a} : {t}");
            }
            3 => {
                let _ = writeln!(s, "  %a{v} = tile.abs %v{a} : {t}");
                let _ = writeln!(s, "  %v{v} = tile.sqrt %a{v} : {t}");
            }
            4 => {
                let _ = writeln!(s, "  %k{v} = tile.splat %ten : {t}");
                let _ = writeln!(s, "  %m{v} = tile.min %v{a}, %k{v} : {t}");
                let _ = writeln!(s, "  %v{v} = tile.exp2 %m{v} : {t}");
            }
            5 => {
                let d = g.below(2);
                let kind = ["add", "max"][g.below(2) as usize];
                let rs = if d == 0 {
                    format!("1x{c}")
                } else {
                    format!("{r}x1")
                };
                let _ = writeln!(
                    s,
                    "  %r{v} = tile.reduce %v{a} {{dim = {d}, kind = \"{kind}\"}} : tile<{rs}xf32>"
                );
                let _ = writeln!(s, "  %v{v} = tile.broadcast %r{v} : {t}");
            }
            6 if g.below(2) == 0 => {
                let _ = writeln!(s, "  %h{v} = tile.convert %v{a} : tile<{r}x{c}xbf16>");
                let _ = writeln!(s, "  %v{v} = tile.convert %h{v} : {t}");
            }
            6 => {
                // Through i32: ×10, truncation toward zero (saturating; NaN to 0), back.
                let _ = writeln!(s, "  %k{v} = tile.splat %ten : {t}");
                let _ = writeln!(s, "  %m{v} = tile.mul %v{a}, %k{v} : {t}");
                let _ = writeln!(s, "  %h{v} = tile.convert %m{v} : tile<{r}x{c}xi32>");
                let _ = writeln!(s, "  %v{v} = tile.convert %h{v} : {t}");
            }
            7 => {
                // Keep the columns inside the problem, zero the rest.
                let it = format!("tile<{r}x{c}xindex>");
                let _ = writeln!(s, "  %i{v} = tile.iota {{dim = 1}} : {it}");
                let _ = writeln!(s, "  %o{v} = tile.splat %col : {it}");
                let _ = writeln!(s, "  %g{v} = tile.addi %i{v}, %o{v} : {it}");
                let _ = writeln!(s, "  %n{v} = tile.splat %N : {it}");
                let _ = writeln!(
                    s,
                    "  %q{v} = tile.cmpi %g{v}, %n{v} {{predicate = \"slt\"}} : tile<{r}x{c}xi1>"
                );
                let _ = writeln!(s, "  %z{v} = tile.zeros : {t}");
                let _ = writeln!(s, "  %v{v} = tile.select %q{v}, %v{a}, %z{v} : {t}");
            }
            _ => {
                if r == c && g.below(2) == 0 {
                    let _ = writeln!(s, "  %v{v} = tile.transpose %v{a} : {t}");
                } else {
                    let _ = writeln!(s, "  %v{v} = tile.for %c0, %c3, %c1, %v{a} : {t} {{");
                    let _ = writeln!(s, "  ^bb0(%it{v}: index, %w{v}: {t}):");
                    let _ = writeln!(s, "    %u{v} = tile.add %w{v}, %v{b} : {t}");
                    let _ = writeln!(s, "    tile.yield %u{v}");
                    let _ = writeln!(s, "  }}");
                }
            }
        }
        next += 1;
        pool = next;
    }
    let mut atomic = false;
    if g.below(3) == 0 {
        // Two masked stores: the result where (i + j) mod 3 != 0, X elsewhere; each element
        // written once.
        let it = format!("tile<{r}x{c}xindex>");
        let b = format!("tile<{r}x{c}xi1>");
        let _ = writeln!(s, "  %sti = tile.iota {{dim = 0}} : {it}");
        let _ = writeln!(s, "  %stj = tile.iota {{dim = 1}} : {it}");
        let _ = writeln!(s, "  %sts = tile.addi %sti, %stj : {it}");
        let _ = writeln!(s, "  %st3 = tile.splat %c3 : {it}");
        let _ = writeln!(s, "  %str = tile.remi %sts, %st3 : {it}");
        let _ = writeln!(s, "  %st0 = tile.splat %c0 : {it}");
        let _ = writeln!(
            s,
            "  %keep = tile.cmpi %str, %st0 {{predicate = \"ne\"}} : {b}"
        );
        let _ = writeln!(
            s,
            "  %drop = tile.cmpi %str, %st0 {{predicate = \"eq\"}} : {b}"
        );
        let _ = writeln!(s, "  tile.store %Z, %row, %col, %keep, %v{}", next - 1);
        let _ = writeln!(s, "  tile.store %Z, %row, %col, %drop, %v0");
    } else if g.below(4) == 0 {
        // Atomic adds into Z (zeros before the launch): the tile itself, or its sums over
        // rows (into row 0) or over columns (into column 0), which every program along the
        // reduced dimension adds into; a reduced tile's layout gives several threads copies
        // of each sum, and each element must still be added once.
        atomic = true;
        let last = next - 1;
        match g.below(3) {
            0 => {
                let _ = writeln!(
                    s,
                    "  %sum = tile.reduce %v{last} {{dim = 0, kind = \"add\"}} : tile<1x{c}xf32>"
                );
                let _ = writeln!(s, "  tile.atomic_add %Z, %c0, %col, %sum");
            }
            1 => {
                let _ = writeln!(
                    s,
                    "  %sum = tile.reduce %v{last} {{dim = 1, kind = \"add\"}} : tile<{r}x1xf32>"
                );
                let _ = writeln!(s, "  tile.atomic_add %Z, %row, %c0, %sum");
            }
            _ => {
                let _ = writeln!(s, "  tile.atomic_add %Z, %row, %col, %v{last}");
            }
        }
    } else {
        let _ = writeln!(s, "  tile.store %Z, %row, %col, %v{}", next - 1);
    }
    let _ = writeln!(s, "  tile.return\n}}");
    Program {
        src: s,
        m,
        n,
        atomic,
    }
}

fn inputs(seed: u64, m: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut g = Rng(seed ^ 0x5555_aaaa_1234_5678);
    let x = (0..m * n).map(|_| g.f32(3.0)).collect();
    let y = (0..m * n).map(|_| g.f32(3.0)).collect();
    (x, y)
}

fn interpret(src: &str, p: &Program, x: &[f32], y: &[f32]) -> Vec<f32> {
    let m = parse(src, "diff.tile").unwrap_or_else(|d| panic!("{d}\n{src}"));
    let f = ScalarType::F32;
    let mut args = [
        ArgValue::Tensor(Tensor::from_f32(f, &[p.m, p.n], x)),
        ArgValue::Tensor(Tensor::from_f32(f, &[p.m, p.n], y)),
        ArgValue::Tensor(Tensor::zeros(f, &[p.m, p.n])),
        ArgValue::Int(p.m as i64),
        ArgValue::Int(p.n as i64),
    ];
    run(&m, "k", &mut args).unwrap_or_else(|e| panic!("{e}\n{src}"));
    args[2].tensor().unwrap().to_f32_vec().unwrap()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    let scale = b.iter().fold(0f32, |s, v| s.max(v.abs())).max(1.0);
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= 1e-5 * scale || (x.is_nan() && y.is_nan()))
}

#[test]
fn random_plain_programs_agree_and_assemble() {
    let ptxas = common::nv_tool("ptxas", "PTXAS").unwrap_or_else(|e| panic!("{e}"));
    let out = std::env::var_os("TILEC_DIFFTEST_OUT");
    let count: u64 = match &out {
        Some(_) => std::env::var("TILEC_DIFFTEST_COUNT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(500),
        None => 40,
    };
    let mut index = vec![];
    for seed in 0..count {
        let p = program(seed);
        let (x, y) = inputs(seed, p.m, p.n);
        let want = interpret(&p.src, &p, &x, &y);
        let mut o = Options::new(Target::Sm90);
        o.emit = Emit::Tile;
        let k = compile(
            Input::Text {
                source: &p.src,
                file: "diff.tile",
            },
            &o,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", p.src));
        let laid = interpret(&k.text, &p, &x, &y);
        assert!(
            close(&laid, &want),
            "seed {seed}: GPU-level IR differs\n{}",
            p.src
        );
        if out.is_none() && seed % 4 != 0 {
            continue;
        }
        for target in [Target::Sm90, Target::Sm90a] {
            let k = compile(
                Input::Text {
                    source: &p.src,
                    file: "diff.tile",
                },
                &Options::new(target),
            )
            .unwrap_or_else(|e| panic!("seed {seed} {target}: {e}\n{}", p.src));
            let dir = match &out {
                Some(d) => Path::new(d).join(target.name()),
                None => std::env::temp_dir().join(format!("tilec-diff-{}", std::process::id())),
            };
            std::fs::create_dir_all(&dir).unwrap();
            let stem = format!("p{seed:03}");
            let mut manifest = k.manifest.clone();
            manifest.kernel = "k".into();
            manifest.ptx_file = format!("{stem}.ptx");
            std::fs::write(dir.join(format!("{stem}.ptx")), &k.ptx).unwrap();
            std::fs::write(dir.join(format!("{stem}.json")), manifest.to_json()).unwrap();
            if out.is_none() {
                let o = std::process::Command::new(&ptxas)
                    .args(["-arch", target.name()])
                    .arg(dir.join(format!("{stem}.ptx")))
                    .arg("-o")
                    .arg(dir.join(format!("{stem}.cubin")))
                    .output()
                    .unwrap();
                assert!(
                    o.status.success(),
                    "seed {seed} {target}: ptxas: {}\n{}",
                    String::from_utf8_lossy(&o.stderr),
                    p.src
                );
                let _ = std::fs::remove_dir_all(&dir);
                break;
            }
        }
        if let Some(d) = &out {
            let mut bin = Vec::with_capacity(12 * p.m * p.n);
            for v in x.iter().chain(&y).chain(&want) {
                bin.extend_from_slice(&v.to_le_bytes());
            }
            std::fs::write(Path::new(d).join(format!("p{seed:03}.bin")), bin).unwrap();
            std::fs::write(Path::new(d).join(format!("p{seed:03}.tile")), &p.src).unwrap();
            index.push(format!(
                "{{\"seed\": {seed}, \"m\": {}, \"n\": {}, \"atomic\": {}}}",
                p.m, p.n, p.atomic
            ));
        }
    }
    if let Some(d) = &out {
        std::fs::write(
            Path::new(d).join("index.json"),
            format!("[{}]", index.join(",\n")),
        )
        .unwrap();
    }
}
