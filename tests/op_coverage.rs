//! Op coverage: every level-1 op of the op table, in each position a kernel can hold it —
//! a kernel without a dot (a plain launch), the body of a loop in one, a GEMM epilogue,
//! and the scalar code before a GEMM's K loop — for each type it takes, compiled for
//! sm_90a, sm_90 and sm_100 (each case on one of them, in turn, to stay quick on two
//! cores). Each case must either give PTX that `ptxas` accepts, or be refused before MLIR
//! with a located diagnostic: never an MLIR error, never a crash. GPU-level ops written
//! into a source kernel must be refused at their line. An op of the table without a case
//! here fails the test, so a new op needs one.

use std::collections::BTreeSet;
use std::path::PathBuf;
use tilec::dialect::{OpClass, OpKind, Target};
use tilec::{compile, Error, Input, Options};

mod common;

/// Where a snippet stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    Plain,
    Loop,
    Epilogue,
    BeforeGemm,
}

/// A snippet: IR lines that read `%t` (an f32 tile: 64×64, or the 128×256 accumulator in
/// an epilogue; shapes written as `@S@` and the like, see [`shaped`]),
/// `%s` (an f32 scalar), `%n` (an index), `%X` (a tensor<?x?xf32>), `%F` (a
/// tensor<?xi32>), and define `%out` (a tile of `%t`'s type) or `%o` (an index).
struct Case {
    op: OpKind,
    what: &'static str,
    body: String,
}

fn cases() -> Vec<Case> {
    use OpKind as K;
    let mut v = vec![];
    let mut add = |op: OpKind, what: &'static str, body: &str| {
        v.push(Case {
            op,
            what,
            body: body.to_string(),
        })
    };
    // Scalars, ending in an index %o.
    add(
        K::ProgramId,
        "index",
        "%o = tile.program_id {dim = 0} : index",
    );
    add(
        K::NumPrograms,
        "index",
        "%o = tile.num_programs {dim = 0} : index",
    );
    add(
        K::Constant,
        "index",
        "%o = tile.constant {value = 3} : index",
    );
    add(K::Dim, "index", "%o = tile.dim %X {dim = 1} : index");
    add(
        K::Extract,
        "i32",
        "%e = tile.extract %F, %n : i32\n%o = tile.convert %e : index",
    );
    add(
        K::Extract,
        "f32",
        "%e = tile.extract %X, %n, %n : f32\n%es = tile.splat %e : tile<@S@xf32>\n\
         %out = tile.mul %t, %es : tile<@S@xf32>",
    );
    for (k, name) in [
        (K::AddI, "addi"),
        (K::SubI, "subi"),
        (K::MulI, "muli"),
        (K::DivI, "divi"),
        (K::RemI, "remi"),
        (K::CeilDiv, "ceildiv"),
        (K::MinI, "mini"),
        (K::MaxI, "maxi"),
    ] {
        add(
            k,
            "index",
            &format!("%c7 = tile.constant {{value = 7}} : index\n%o = tile.{name} %n, %c7 : index"),
        );
        add(
            k,
            "i32",
            &format!(
                "%c7 = tile.constant {{value = 7}} : i32\n%n32 = tile.convert %n : i32\n\
                 %ai = tile.{name} %n32, %c7 : i32\n%o = tile.convert %ai : index"
            ),
        );
        add(
            k,
            "tile<i32>",
            &format!(
                "%i = tile.iota {{dim = 1}} : tile<@S@xi32>\n%j = tile.{name} %i, %i : \
                 tile<@S@xi32>\n%out = tile.convert %j : tile<@S@xf32>"
            ),
        );
    }
    add(
        K::CmpI,
        "index",
        "%c7 = tile.constant {value = 7}  : index\n\
         %p = tile.cmpi %n, %c7 {predicate = \"slt\"} : i1\n\
         %o = tile.select %p, %n, %c7 : index",
    );
    add(
        K::CmpI,
        "tile",
        "%i = tile.iota {dim = 1} : tile<@S@xindex>\n%nn = tile.splat %n : tile<@S@xindex>\n\
         %m = tile.cmpi %i, %nn {predicate = \"sge\"} : tile<@S@xi1>\n\
         %z = tile.zeros : tile<@S@xf32>\n%out = tile.select %m, %t, %z : tile<@S@xf32>",
    );
    add(
        K::Select,
        "scalar cond",
        "%c1 = tile.constant {value = 1} : index\n\
         %p = tile.cmpi %n, %c1 {predicate = \"eq\"} : i1\n\
         %z = tile.zeros : tile<@S@xf32>\n%out = tile.select %p, %t, %z : tile<@S@xf32>",
    );
    // Tiles, ending in %out.
    for (k, name) in [
        (K::Add, "add"),
        (K::Sub, "sub"),
        (K::Mul, "mul"),
        (K::Div, "div"),
        (K::Max, "max"),
        (K::Min, "min"),
    ] {
        add(
            k,
            "f32",
            &format!("%out = tile.{name} %t, %t : tile<@S@xf32>"),
        );
        add(
            k,
            "bf16",
            &format!(
                "%h = tile.convert %t : tile<@S@xbf16>\n%g = tile.{name} %h, %h : \
                 tile<@S@xbf16>\n%out = tile.convert %g : tile<@S@xf32>"
            ),
        );
        add(
            k,
            "scalar f32",
            &format!("%q = tile.{name} %s, %s : f32\n%out = tile.splat %q : tile<@S@xf32>"),
        );
    }
    for (k, name) in [
        (K::Neg, "neg"),
        (K::Abs, "abs"),
        (K::Exp, "exp"),
        (K::Exp2, "exp2"),
        (K::Log, "log"),
        (K::Sqrt, "sqrt"),
        (K::Rsqrt, "rsqrt"),
        (K::Tanh, "tanh"),
        (K::Relu, "relu"),
    ] {
        add(k, "f32", &format!("%out = tile.{name} %t : tile<@S@xf32>"));
        add(
            k,
            "f16",
            &format!(
                "%h = tile.convert %t : tile<@S@xf16>\n%g = tile.{name} %h : tile<@S@xf16>\n\
                 %out = tile.convert %g : tile<@S@xf32>"
            ),
        );
    }
    for to in ["f16", "bf16", "i32", "i64"] {
        let what: &'static str = Box::leak(format!("f32 -> {to}").into_boxed_str());
        add(
            K::Convert,
            what,
            &format!(
                "%h = tile.convert %t : tile<@S@x{to}>\n%out = tile.convert %h : \
                 tile<@S@xf32>"
            ),
        );
    }
    add(
        K::Convert,
        "index -> f32",
        "%f = tile.convert %n : f32\n%out = tile.splat %f : tile<@S@xf32>",
    );
    add(
        K::Convert,
        "f16 -> bf16",
        "%h = tile.convert %t : tile<@S@xf16>\n%b = tile.convert %h : tile<@S@xbf16>\n\
         %out = tile.convert %b : tile<@S@xf32>",
    );
    add(
        K::Transpose,
        "",
        "%tt = tile.transpose %t : tile<@T@xf32>\n%out = tile.transpose %tt : tile<@S@xf32>",
    );
    add(
        K::ExtractSlice,
        "",
        "%r = tile.extract_slice %t {offsets = [0, 0]} : tile<@1C@xf32>\n\
         %out = tile.broadcast %r : tile<@S@xf32>",
    );
    add(
        K::Reshape,
        "",
        "%r = tile.reshape %t : tile<@N@xf32>\n%out = tile.reshape %r : tile<@S@xf32>",
    );
    for (dim, kind) in [(1, "add"), (0, "max"), (1, "min")] {
        let what: &'static str = Box::leak(format!("dim {dim} {kind}").into_boxed_str());
        let shape = if dim == 1 { "@R1@" } else { "@1C@" };
        add(
            K::Reduce,
            what,
            &format!(
                "%r = tile.reduce %t {{dim = {dim}, kind = \"{kind}\"}} : tile<{shape}xf32>\n\
                 %out = tile.broadcast %r : tile<@S@xf32>"
            ),
        );
    }
    add(
        K::Broadcast,
        "scalar",
        "%out = tile.broadcast %s : tile<@S@xf32>",
    );
    add(K::Splat, "", "%out = tile.splat %s : tile<@S@xf32>");
    add(
        K::Zeros,
        "",
        "%z = tile.zeros : tile<@S@xf32>\n%out = tile.add %t, %z : tile<@S@xf32>",
    );
    add(
        K::Iota,
        "index",
        "%i = tile.iota {dim = 0} : tile<@S@xindex>\n%out = tile.convert %i : tile<@S@xf32>",
    );
    add(
        K::Load,
        "padding",
        "%c0 = tile.constant {value = 0} : index\n\
         %l = tile.load %X, %c0, %n {padding = \"-inf\"} : \
         tile<@S@xf32>\n%out = tile.max %t, %l : tile<@S@xf32>",
    );
    add(
        K::Gather,
        "",
        "%i = tile.iota {dim = 0} : tile<@R@xi32>\n\
         %gq = tile.gather %X, %i, %n : tile<@S@xf32>\n%out = tile.add %t, %gq : tile<@S@xf32>",
    );
    add(
        K::Store,
        "masked",
        "%c0 = tile.constant {value = 0} : index\n%i = tile.iota {dim = 0} : tile<@S@xindex>\n\
         %nn = tile.splat %n : tile<@S@xindex>\n\
         %m = tile.cmpi %i, %nn {predicate = \"slt\"} : tile<@S@xi1>\n\
         tile.store %X, %n, %c0, %m, %t\n%out = tile.neg %t : tile<@S@xf32>",
    );
    add(
        K::Store,
        "",
        "%c0 = tile.constant {value = 0} : index\ntile.store %X, %n, %c0, %t\n%out = tile.neg %t : \
         tile<@S@xf32>",
    );
    add(
        K::AtomicAdd,
        "",
        "%c0 = tile.constant {value = 0} : index\ntile.atomic_add %X, %n, %c0, %t\n%out = tile.neg \
         %t : tile<@S@xf32>",
    );
    add(
        K::AtomicAdd,
        "masked",
        "%c0 = tile.constant {value = 0} : index\n%i = tile.iota {dim = 1} : tile<@S@xindex>\n\
         %nn = tile.splat %n : tile<@S@xindex>\n\
         %m = tile.cmpi %i, %nn {predicate = \"sge\"} : tile<@S@xi1>\n\
         tile.atomic_add %X, %n, %c0, %m, %t\n%out = tile.neg %t : tile<@S@xf32>",
    );
    add(
        K::WaitFlag,
        "",
        "tile.wait_flag %F, %n, %n\n%out = tile.neg %t : tile<@S@xf32>",
    );
    add(
        K::ReleaseFlag,
        "",
        "%out = tile.neg %t : tile<@S@xf32>\ntile.release_flag %F, %n, %n",
    );
    add(K::ArriveFlag, "", "%o = tile.arrive_flag %F, %n : index");
    add(
        K::If,
        "",
        "%c1 = tile.constant {value = 1} : index\n\
         %p = tile.cmpi %n, %c1 {predicate = \"eq\"} : i1\n\
         %out = tile.if %p : tile<@S@xf32> {\n  %a = tile.neg %t : tile<@S@xf32>\n  \
         tile.yield %a\n} {\n  tile.yield %t\n}",
    );
    add(
        K::For,
        "carrying a tile",
        "%c0 = tile.constant {value = 0} : index\n%c1 = tile.constant {value = 1} : index\n\
         %out = tile.for %c0, %n, %c1, %t : tile<@S@xf32> {\n^bb9(%i9: index, %v: \
         tile<@S@xf32>):\n  %w = tile.add %v, %t : tile<@S@xf32>\n  tile.yield %w\n}",
    );
    add(
        K::While,
        "",
        "%c1 = tile.constant {value = 1} : index\n\
         %w = tile.while %n : index {\n^bb9(%i9: index):\n  \
         %j = tile.subi %i9, %c1 : index\n  \
         %more = tile.cmpi %j, %c1 {predicate = \"sgt\"} : i1\n  \
         tile.yield %more, %j\n}\n%f = tile.convert %w : f32\n%out = tile.splat %f : \
         tile<@S@xf32>",
    );
    v
}

/// The ops every kernel has, or that only appear as part of another op's case.
const STRUCTURAL: [OpKind; 5] = [
    OpKind::Kernel,
    OpKind::Return,
    OpKind::Yield,
    OpKind::Dot,
    OpKind::WarpSpecialize,
];

/// `body` with its shapes: `@S@` the tile (rows × cols), `@T@` its transpose, `@R1@` a
/// column, `@1C@` a row,
/// `@N@` the element count.
fn shaped(body: &str, rows: u64, cols: u64) -> String {
    body.replace("@S@", &format!("{rows}x{cols}"))
        .replace("@T@", &format!("{cols}x{rows}"))
        .replace("@R@", &rows.to_string())
        .replace("@R1@", &format!("{rows}x1"))
        .replace("@1C@", &format!("1x{cols}"))
        .replace("@N@", &(rows * cols).to_string())
}

/// The kernel for a case at a position; `None` when the snippet has no meaning there.
fn kernel(c: &Case, pos: Pos) -> Option<String> {
    let scalar_only = c.body.contains("%o =");
    let indent = |s: &str, n: usize| -> String {
        s.lines()
            .map(|l| format!("{}{l}\n", " ".repeat(n)))
            .collect()
    };
    let head = "tile.kernel @k(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>, %n: index, %s: f32, \
                %F: tensor<?xi32>) \
                {grid = [2]} {\n  %c00 = tile.constant {value = 0} : index\n";
    let use_o = "  %oo = tile.maxi %o, %c00 : index\n  %ot = tile.load %X, %oo, %c00 : \
                 tile<64x64xf32>\n  tile.store %Y, %c00, %c00, %ot\n";
    match pos {
        Pos::Plain => {
            let mut k = head.to_string();
            k += "  %t = tile.load %X, %c00, %c00 : tile<64x64xf32>\n";
            k += &indent(&shaped(&c.body, 64, 64), 2);
            k += if scalar_only {
                use_o
            } else {
                "  tile.store %Y, %c00, %c00, %out\n"
            };
            k += "  tile.return\n}\n";
            Some(k)
        }
        Pos::Loop => {
            let mut k = head.to_string();
            k += "  %c64 = tile.constant {value = 64} : index\n  tile.for %c00, %n, %c64 {\n  \
                  ^bb0(%kk: index):\n    %t = tile.load %X, %kk, %c00 : tile<64x64xf32>\n";
            k += &indent(&shaped(&c.body, 64, 64), 4);
            k += &if scalar_only {
                indent(use_o, 2)
            } else {
                "    tile.store %Y, %kk, %c00, %out\n".to_string()
            };
            k += "    tile.yield\n  }\n  tile.return\n}\n";
            Some(k)
        }
        Pos::Epilogue | Pos::BeforeGemm => {
            if pos == Pos::BeforeGemm && !scalar_only {
                return None;
            }
            if pos == Pos::Epilogue && scalar_only {
                return None;
            }
            let pre = if pos == Pos::BeforeGemm {
                indent(&shaped(&c.body, 128, 256), 2) + "  %row = tile.maxi %o, %c00 : index\n"
            } else {
                "  %row = tile.muli %pid, %c128 : index\n".to_string()
            };
            let epi = if pos == Pos::Epilogue {
                // %t is the accumulator; %X becomes the output's f32 view for atomics.
                indent(&shaped(&c.body, 128, 256), 2)
            } else {
                "  %out = tile.relu %t : tile<128x256xf32>\n".to_string()
            };
            let epi = epi.replace("%X", "%W");
            Some(format!(
                "tile.kernel @k(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, %C: tensor<?x?xbf16>, \
                 %W: tensor<?x?xf32>, %X: tensor<?x?xf32>, %n: index, %s: f32, %K: index, \
                 %F: tensor<?xi32>) \
                 {{grid = [2, 2]}} {{\n  %c00 = tile.constant {{value = 0}} : index\n  \
                 %c64 = tile.constant {{value = 64}} : index\n  \
                 %c128 = tile.constant {{value = 128}} : index\n  %pid = tile.program_id {{dim = \
                 1}} : index\n{pre}  %zero = tile.zeros : tile<128x256xf32>\n  %t = tile.for \
                 %c00, %K, %c64, %zero : tile<128x256xf32> {{\n  ^bb0(%kk: index, %acc: \
                 tile<128x256xf32>):\n    %a = tile.load %A, %row, %kk : tile<128x64xbf16>\n    \
                 %b = tile.load %B, %kk, %c00 : tile<64x256xbf16>\n    %d = tile.dot %a, %b, \
                 %acc : tile<128x256xf32>\n    tile.yield %d\n  }}\n{epi}  %ob = tile.convert \
                 %out : tile<128x256xbf16>\n  tile.store %C, %row, %c00, %ob\n  tile.return\n}}\n"
            ))
        }
    }
}

fn ptxas_ok(ptxas: &PathBuf, ptx: &str, target: Target, tag: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("tilec-cov-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let f = dir.join("k.ptx");
    std::fs::write(&f, ptx).map_err(|e| e.to_string())?;
    let o = std::process::Command::new(ptxas)
        .args(["-arch", target.name()])
        .arg(&f)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

#[test]
fn every_op_in_every_position_compiles_or_is_refused_before_mlir() {
    let ptxas = common::nv_tool("ptxas", "PTXAS").unwrap_or_else(|e| panic!("{e}"));
    let targets = [Target::Sm90a, Target::Sm90, Target::Sm100];
    let cases = cases();
    let covered: BTreeSet<OpKind> = cases.iter().map(|c| c.op).collect();
    let missing: Vec<&str> = OpKind::ALL
        .iter()
        .filter(|k| k.class() != OpClass::Gpu && !STRUCTURAL.contains(k) && !covered.contains(k))
        .map(|k| k.name())
        .collect();
    assert!(
        missing.is_empty(),
        "ops of the table without a coverage case: {missing:?}"
    );
    let mut failures = vec![];
    let (mut compiled, mut refused) = (0, 0);
    let mut turn = 0usize;
    for (ci, c) in cases.iter().enumerate() {
        let positions = [Pos::Plain, Pos::Loop, Pos::Epilogue, Pos::BeforeGemm];
        for (pi, pos) in positions.into_iter().enumerate() {
            let Some(src) = kernel(c, pos) else { continue };
            // Each position sees every target across the cases.
            let target = targets[(ci + pi) % targets.len()];
            turn += 1;
            let label = format!("{} ({}) {pos:?} {target}", c.op.name(), c.what);
            match compile(
                Input::Text {
                    source: &src,
                    file: "cov.tile",
                },
                &Options::new(target),
            ) {
                Ok(k) => match ptxas_ok(&ptxas, &k.ptx, target, &turn.to_string()) {
                    Ok(()) => compiled += 1,
                    Err(e) => failures.push(format!("{label}: ptxas rejected the PTX:\n{e}")),
                },
                Err(Error::Diagnostics(d)) => {
                    if d.0.iter().all(|x| x.loc.line > 0) {
                        if std::env::var_os("TILEC_COVERAGE_VERBOSE").is_some() {
                            eprintln!("refused: {label}: {}", d.0[0].message);
                        }
                        refused += 1;
                    } else {
                        failures.push(format!("{label}: a diagnostic without a line: {d:?}"));
                    }
                }
                Err(e) => failures.push(format!("{label}: not refused before MLIR: {e}\n{src}")),
            }
        }
    }
    // GPU-level ops in a source kernel: refused at their line.
    let gpu = "tile.kernel @k() {grid = [1]} {\n  tile.barrier\n  tile.return\n}\n";
    match compile(
        Input::Text {
            source: gpu,
            file: "gpu.tile",
        },
        &Options::new(Target::Sm90a),
    ) {
        Err(Error::Diagnostics(d)) => assert_eq!(d.0[0].loc.line, 2, "{d:?}"),
        other => failures.push(format!("tile.barrier in a source kernel: {other:?}")),
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // Most cases compile; the refusals are the documented gaps.
    assert!(
        compiled > 2 * refused,
        "compiled {compiled}, refused {refused}"
    );
    eprintln!("op coverage: {compiled} compiled and assembled, {refused} refused before MLIR");
}
