//! GEMM epilogues and GPU-level ops checked against the reference interpreter, for a GPU
//! run.
//!
//! Each case is a kernel (from a lit test or written here), a shape and its arguments. On
//! the CPU (every `cargo test`): the interpreter runs it on pseudo-random bf16 inputs, every
//! store target poisoned with NaN and every `tile.atomic_add` target zeroed, and must write
//! every stored element; the kernel compiles for sm_90a and sm_90.
//!
//! With `TILEC_GPU_CASES=DIR` the test also writes, per case, `DIR/NAME/case.json` (the
//! arguments: name, kind, dtype, shape, role) with each tensor's initial and expected
//! contents as little-endian f32 (`NAME/ARG.in.bin`, `NAME/ARG.want.bin`), and the PTX and
//! manifest for both targets (`NAME/sm_90a/`, `NAME/sm_90/`), for `tools/gpu/interp_check.py`
//! to run on a GPU. The cases: the row sums (atomic) and column maxima of
//! `tests/lit/lowering/epilogue_reduce.tile`, the float-to-int and scalar conversions of
//! `tests/lit/lowering/epilogue_converts.tile`, and column and row masks from `tile.iota`,
//! `tile.cmpi` and `tile.select`; and a laid-out kernel with a cp.async ring and
//! shared-memory views (`tile.cp_async`, `tile.smem_load` with `offsets` and `transpose`),
//! and register slices (`tile.extract_slice`, in registers and through shared memory).

use std::fmt::Write as _;
use std::path::Path;
use tilec::dialect::interp::{run, ArgValue, Tensor};
use tilec::dialect::{parse, OpKind, Target, Type};
use tilec::{compile, Input, Options};

mod common;

use common::Rng;

/// A GEMM epilogue masking columns at or past `%lim` and rows before `%first`, then storing
/// bf16: the masks of attention-like epilogues, from `tile.iota`, `tile.cmpi`, `tile.select`.
const MASKS: &str = "tile.kernel @gemm_masks(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, %C: \
    tensor<?x?xbf16>, %M: index, %N: index, %K: index, %lim: index, %first: index) {grid = \
    [ceildiv(%N, 256), ceildiv(%M, 128)]} {
  %pid_n = tile.program_id {dim = 0} : index
  %pid_m = tile.program_id {dim = 1} : index
  %c0 = tile.constant {value = 0} : index
  %c64 = tile.constant {value = 64} : index
  %c128 = tile.constant {value = 128} : index
  %c256 = tile.constant {value = 256} : index
  %row = tile.muli %pid_m, %c128 : index
  %col = tile.muli %pid_n, %c256 : index
  %zero = tile.zeros : tile<128x256xf32>
  %acc = tile.for %c0, %K, %c64, %zero : tile<128x256xf32> {
  ^bb0(%k: index, %c: tile<128x256xf32>):
    %a = tile.load %A, %row, %k : tile<128x64xbf16>
    %b = tile.load %B, %k, %col : tile<64x256xbf16>
    %d = tile.dot %a, %b, %c : tile<128x256xf32>
    tile.yield %d
  }
  %ci = tile.iota {dim = 1} : tile<128x256xindex>
  %co = tile.splat %col : tile<128x256xindex>
  %cg = tile.addi %ci, %co : tile<128x256xindex>
  %cl = tile.splat %lim : tile<128x256xindex>
  %keep_c = tile.cmpi %cg, %cl {predicate = \"slt\"} : tile<128x256xi1>
  %ri = tile.iota {dim = 0} : tile<128x256xindex>
  %ro = tile.splat %row : tile<128x256xindex>
  %rg = tile.addi %ri, %ro : tile<128x256xindex>
  %rf = tile.splat %first : tile<128x256xindex>
  %keep_r = tile.cmpi %rg, %rf {predicate = \"sge\"} : tile<128x256xi1>
  %z = tile.zeros : tile<128x256xf32>
  %m1 = tile.select %keep_c, %acc, %z : tile<128x256xf32>
  %m2 = tile.select %keep_r, %m1, %z : tile<128x256xf32>
  %out = tile.convert %m2 : tile<128x256xbf16>
  tile.store %C, %row, %col, %out
  tile.return
}
";

struct Case {
    name: String,
    source: String,
    file: &'static str,
    kernel: &'static str,
    /// (M, N, K).
    shape: (usize, usize, usize),
    /// Scalar arguments besides M, N, K, by name.
    scalars: Vec<(&'static str, i64)>,
    /// The source names its target (a laid-out kernel): "sm_90a" is replaced by each
    /// target's name.
    per_target: bool,
}

fn lit(file: &str) -> String {
    let path = format!("{}/tests/lit/lowering/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("the lit test exists")
}

fn cases() -> Vec<Case> {
    let reduce = lit("epilogue_reduce.tile");
    let converts = lit("epilogue_converts.tile");
    let cp_async = lit("cp_async_views.tile");
    let mut out = vec![];
    for shape in [(129, 257, 72), (300, 520, 128), (64, 1000, 64)] {
        let tag = format!("{}x{}x{}", shape.0, shape.1, shape.2);
        let name = |k: &str| format!("{k}-{tag}");
        out.push(Case {
            name: name("gemm_reduce"),
            source: reduce.clone(),
            file: "epilogue_reduce.tile",
            kernel: "gemm_reduce",
            shape,
            scalars: vec![],
            per_target: false,
        });
        out.push(Case {
            name: name("to_int"),
            source: converts.clone(),
            file: "epilogue_converts.tile",
            kernel: "to_int",
            shape,
            scalars: vec![],
            per_target: false,
        });
        out.push(Case {
            name: name("gemm_masks"),
            source: MASKS.to_string(),
            file: "masks.tile",
            kernel: "gemm_masks",
            shape,
            scalars: vec![("lim", (shape.1 as i64) * 2 / 3), ("first", 17)],
            per_target: false,
        });
    }
    out.push(Case {
        name: "extract_slice-64x64".into(),
        source: lit("extract_slice.tile"),
        file: "extract_slice.tile",
        kernel: "slices",
        shape: (64, 64, 64),
        scalars: vec![],
        per_target: false,
    });
    // A's columns: ragged in the last box (150, 200), or exactly three boxes (192).
    for k in [150, 192, 200] {
        out.push(Case {
            name: format!("cp_async_views-96x64x{k}"),
            source: cp_async.clone(),
            file: "cp_async_views.tile",
            kernel: "cp_async_views",
            shape: (96, 64, k),
            scalars: vec![("n", 3)],
            per_target: true,
        });
    }
    out
}

/// The tensors a kernel stores into and adds into atomically.
fn outputs(
    k: &tilec::dialect::Operation,
) -> (Vec<tilec::dialect::Value>, Vec<tilec::dialect::Value>) {
    let (mut stored, mut added) = (vec![], vec![]);
    k.walk(&mut |o| match o.kind {
        OpKind::Store => stored.push(o.operands[0]),
        OpKind::AtomicAdd => added.push(o.operands[0]),
        _ => {}
    });
    (stored, added)
}

fn write_f32(path: &Path, v: &[f32]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn gemm_epilogues_against_the_interpreter() {
    let out = std::env::var_os("TILEC_GPU_CASES");
    for (ci, c) in cases().into_iter().enumerate() {
        let m = parse(&c.source, c.file).unwrap_or_else(|d| panic!("{}: {d}", c.name));
        let k = m
            .kernels()
            .find(|k| k.symbol.as_deref() == Some(c.kernel))
            .unwrap_or_else(|| panic!("{}: no kernel {}", c.name, c.kernel));
        let (stored, added) = outputs(k);
        let (mm, nn, kk) = c.shape;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ci as u64);
        let mut args = vec![];
        let mut meta = String::from("[");
        let mut initial = vec![];
        for (i, &a) in k.regions[0].args.iter().enumerate() {
            let name = m.name(a).unwrap_or_default().to_string();
            let ty = m.ty(a).clone();
            if i > 0 {
                meta.push(',');
            }
            match ty {
                Type::Tensor { elem, .. } => {
                    let shape = match name.as_str() {
                        "A" => [mm, kk],
                        "B" => [kk, nn],
                        "S" => [mm, 1],
                        // One row of column maxima per 128-row block.
                        "X" => [mm.div_ceil(128), nn],
                        "P" => [32, 32],
                        "Hi" => [32, 64],
                        "Win" => [24, 40],
                        _ => [mm, nn],
                    };
                    let n = shape[0] * shape[1];
                    let role = if stored.contains(&a) {
                        "stored"
                    } else if added.contains(&a) {
                        "added"
                    } else {
                        "input"
                    };
                    let data: Vec<f32> = match role {
                        "stored" => vec![f32::NAN; n],
                        "added" => vec![0.0; n],
                        _ => (0..n).map(|_| rng.f32(1.0)).collect(),
                    };
                    let t = Tensor::from_f32(elem, &shape, &data);
                    initial.push((name.clone(), t.to_f32_vec().unwrap()));
                    args.push(ArgValue::Tensor(t));
                    let _ = write!(
                        meta,
                        "{{\"name\":\"{name}\",\"kind\":\"tensor\",\"dtype\":\"{elem}\",\
                         \"shape\":[{},{}],\"role\":\"{role}\"}}",
                        shape[0], shape[1]
                    );
                }
                _ => {
                    let v = match name.as_str() {
                        "M" => mm as i64,
                        "N" => nn as i64,
                        "K" => kk as i64,
                        s => c
                            .scalars
                            .iter()
                            .find(|(n, _)| *n == s)
                            .map(|p| p.1)
                            .unwrap(),
                    };
                    args.push(ArgValue::Int(v));
                    let _ = write!(
                        meta,
                        "{{\"name\":\"{name}\",\"kind\":\"scalar\",\"value\":{v}}}"
                    );
                }
            }
        }
        meta.push(']');
        run(&m, c.kernel, &mut args).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        // Every stored element written.
        for (a, v) in k.regions[0].args.iter().zip(&args) {
            if stored.contains(a) {
                let got = v.tensor().unwrap().to_f32_vec().unwrap();
                assert!(
                    got.iter().all(|x| !x.is_nan()),
                    "{}: an element not stored",
                    c.name
                );
            }
        }
        let dir = out.as_ref().map(|d| Path::new(d).join(&c.name));
        for target in [Target::Sm90a, Target::Sm90] {
            let mut o = Options::new(target);
            o.kernel = Some(c.kernel.to_string());
            let source = if c.per_target {
                c.source.replace("sm_90a", target.name())
            } else {
                c.source.clone()
            };
            let lowered = compile(
                Input::Text {
                    source: &source,
                    file: c.file,
                },
                &o,
            )
            .unwrap_or_else(|e| panic!("{} {target}: {e}", c.name));
            if let Some(d) = &dir {
                let td = d.join(target.name());
                std::fs::create_dir_all(&td).unwrap();
                std::fs::write(td.join(&lowered.manifest.ptx_file), &lowered.ptx).unwrap();
                std::fs::write(td.join("kernel.json"), lowered.manifest.to_json()).unwrap();
            }
        }
        if let Some(d) = &dir {
            let results = args.iter().filter_map(ArgValue::tensor);
            for ((name, init), t) in initial.iter().zip(results) {
                write_f32(&d.join(format!("{name}.in.bin")), init);
                write_f32(
                    &d.join(format!("{name}.want.bin")),
                    &t.to_f32_vec().unwrap(),
                );
            }
            std::fs::write(
                d.join("case.json"),
                format!("{{\"kernel\":\"{}\",\"args\":{meta}}}", c.kernel),
            )
            .unwrap();
        }
    }
}
