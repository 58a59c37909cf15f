//! `tile-strip-mine-stores`: which stores it splits and into how many strips, and that the
//! reference interpreter gives the same bits before and after (rows narrower than the tile
//! included, where the loads read zeros past the row and the stores drop those columns).

mod common;
use common::{example, Rng};
use tilec_dialect::interp::{run, ArgValue, Tensor};
use tilec_dialect::{parse, print_module, verify, Module, OpKind, ScalarType, Target};
use tilec_passes::pass::{Pass, PassContext};
use tilec_passes::strip_mine_stores::StripMineStores;

/// `m` after the pass; its statistics (stores split, strips).
fn strip(m: &Module, num_warps: u64, strips: u64) -> (Module, u64, u64) {
    let mut s = m.clone();
    let mut cx = PassContext::default();
    StripMineStores {
        target: Target::Sm90a,
        num_warps,
        strips,
    }
    .run(&mut s, &mut cx)
    .unwrap();
    verify(&s).unwrap_or_else(|d| panic!("{d}\n{}", print_module(&s)));
    let stat = |n: &str| {
        cx.statistics
            .iter()
            .find(|(k, _)| k == n)
            .map_or(0, |(_, v)| *v)
    };
    (s, stat("stores-strip-mined"), stat("strips"))
}

fn count(m: &Module, kind: OpKind) -> usize {
    m.op_count(kind)
}

/// Runs kernel `name` of `a` and `b` on the same arguments (`out` is the index of the
/// output tensor, poisoned with NaN) and asserts the outputs have the same bits.
fn same_bits(a: &Module, b: &Module, name: &str, args: &[ArgValue], out: usize) {
    let outputs = |m: &Module| {
        let mut args = args.to_vec();
        run(m, name, &mut args).unwrap_or_else(|e| panic!("{name}: {e}"));
        args[out].tensor().unwrap().to_f32_vec().unwrap()
    };
    let (x, y) = (outputs(a), outputs(b));
    assert_eq!(x.len(), y.len());
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert_eq!(
            p.to_bits(),
            q.to_bits(),
            "{name}: element {i}: {p} before, {q} after"
        );
    }
    assert!(
        x.iter().all(|v| !v.is_nan()),
        "{name}: an element was not written"
    );
}

/// LayerNorm's and RMSNorm's arguments for `rows` × `n` (the kernel's tile may be wider).
fn norm_args(rng: &mut Rng, name: &str, rows: usize, n: usize) -> (Vec<ArgValue>, usize) {
    let bf = ScalarType::BF16;
    let mut a = vec![
        ArgValue::Tensor(rng.tensor(bf, &[rows, n])),
        ArgValue::Tensor(rng.tensor(bf, &[n])),
    ];
    if name == "layernorm" {
        a.push(ArgValue::Tensor(rng.tensor(bf, &[n])));
    }
    a.push(ArgValue::Tensor(Tensor::filled(bf, &[rows, n], f32::NAN)));
    let out = a.len() - 1;
    a.extend([
        ArgValue::Int(rows as i64),
        ArgValue::Int(n as i64),
        ArgValue::Float(1e-5),
    ]);
    (a, out)
}

#[test]
fn wide_norms_are_split_and_keep_their_bits() {
    let mut rng = Rng(0x5eed);
    // 32,768 columns at 16 warps: LayerNorm keeps x − mean (64 registers) and loads w and b
    // (32 each), 4 strips; RMSNorm keeps x (64) and loads w (32), 2 strips.
    for (name, strips) in [("layernorm", 4), ("rmsnorm", 2)] {
        let m = example(name, 32768);
        let (s, stores, n) = strip(&m, 16, 0);
        assert_eq!((stores, n), (1, strips), "{name}");
        assert_eq!(count(&s, OpKind::Store), strips as usize, "{name}");
        assert_eq!(count(&s, OpKind::ExtractSlice), strips as usize, "{name}");
        let loads = if name == "layernorm" { 3 } else { 2 };
        assert_eq!(
            count(&s, OpKind::Load),
            1 + (loads - 1) * strips as usize,
            "{name}: x once, the weights per strip"
        );
        for (rows, cols) in [(2, 32768), (3, 30001), (1, 17)] {
            let (args, out) = norm_args(&mut rng, name, rows, cols);
            same_bits(&m, &s, name, &args, out);
        }
    }
}

#[test]
fn more_warps_fewer_strips_and_small_rows_unchanged() {
    // At 32 warps the budget is 64 registers: LayerNorm keeps 32 and loads 32, still 4
    // strips (each strip's loads within an eighth of the budget).
    let (_, stores, n) = strip(&example("layernorm", 32768), 32, 0);
    assert_eq!((stores, n), (1, 4));
    // 4,096 columns at the chosen 4 warps: far below the budget, but the norms' weights take
    // 16 registers a thread or more, so their stores are halved; softmax loads nothing for its
    // store, and halves of vadd's 1,024-element tiles would hold 4 elements a thread.
    for (name, want) in [
        ("layernorm", 2),
        ("rmsnorm", 2),
        ("softmax", 0),
        ("vadd", 0),
    ] {
        let m = example(name, 4096);
        let (s, stores, n) = strip(&m, 0, 0);
        assert_eq!((stores, n), (u64::from(want > 0), want), "{name}");
        if want == 0 {
            assert_eq!(print_module(&s), print_module(&m), "{name}");
        }
    }
    // At 16 warps the weights take 4 registers a thread: left whole.
    for name in ["layernorm", "rmsnorm"] {
        let m = example(name, 4096);
        let (s, stores, _) = strip(&m, 16, 0);
        assert_eq!(stores, 0, "{name}");
        assert_eq!(print_module(&s), print_module(&m), "{name}");
    }
}

#[test]
fn forced_strips_on_an_elementwise_kernel() {
    // vadd with strips=4: both loads per strip, the offsets shifted by 256 each.
    let m = example("vadd", 4096);
    let (s, stores, n) = strip(&m, 4, 4);
    assert_eq!((stores, n), (1, 4));
    assert_eq!(count(&s, OpKind::Load), 8);
    assert_eq!(count(&s, OpKind::Store), 4);
    assert_eq!(count(&s, OpKind::ExtractSlice), 0);
    let mut rng = Rng(7);
    for len in [1024, 1000, 5, 3000] {
        let f = ScalarType::F32;
        let args = vec![
            ArgValue::Tensor(rng.tensor(f, &[len])),
            ArgValue::Tensor(rng.tensor(f, &[len])),
            ArgValue::Tensor(Tensor::filled(f, &[len], f32::NAN)),
            ArgValue::Int(len as i64),
        ];
        same_bits(&m, &s, "vadd", &args, 2);
    }
}

#[test]
fn softmax_and_in_place_stores_are_left_alone() {
    // Softmax's output chain loads nothing (exp(x − max) is kept for the sum), and a
    // store into the tensor the chain loads may not move that load: neither is split,
    // even when strips are forced.
    let (_, stores, _) = strip(&example("softmax", 32768), 16, 4);
    assert_eq!(stores, 0);
    let src = "tile.kernel @scale(%X: tensor<?xf32>, %N: index) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %x = tile.load %X, %c0 : tile<4096xf32>
  %y = tile.add %x, %x : tile<4096xf32>
  tile.store %X, %c0, %y
  tile.return
}
";
    let m = parse(src, "scale.tile").unwrap();
    verify(&m).unwrap();
    let (s, stores, _) = strip(&m, 4, 4);
    assert_eq!(stores, 0);
    assert_eq!(print_module(&s), print_module(&m));
}

/// `y = x · w` stored where the column is below `%N` (an iota mask), `cols` wide.
fn masked_scale(cols: u64) -> Module {
    let src = "tile.kernel @k(%X: tensor<?x?xf32>, %W: tensor<?xf32>, %Y: tensor<?x?xf32>, \
%N: index) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %x = tile.load %X, %c0, %c0 : tile<1xCOLSxf32>
  %w = tile.load %W, %c0 : tile<COLSxf32>
  %w2 = tile.reshape %w : tile<1xCOLSxf32>
  %y = tile.mul %x, %w2 : tile<1xCOLSxf32>
  %cols = tile.iota {dim = 1} : tile<1xCOLSxindex>
  %nn = tile.splat %N : tile<1xCOLSxindex>
  %in = tile.cmpi %cols, %nn {predicate = \"slt\"} : tile<1xCOLSxi1>
  tile.store %Y, %c0, %c0, %in, %y
  tile.return
}
"
    .replace("COLS", &cols.to_string());
    let m = parse(&src, "masked_scale.tile").unwrap();
    verify(&m).unwrap();
    m
}

#[test]
fn an_iota_mask_is_rebuilt_per_strip_and_odd_widths_are_left_alone() {
    // 8,192 columns at 4 warps, 4 strips: the iota is re-made per strip (counted from the
    // strip's first column), so nothing is sliced.
    let m = masked_scale(8192);
    let (s, stores, n) = strip(&m, 4, 4);
    assert_eq!((stores, n), (1, 4));
    assert_eq!(count(&s, OpKind::Iota), 4);
    assert_eq!(count(&s, OpKind::ExtractSlice), 0);
    let mut rng = Rng(11);
    let f = ScalarType::F32;
    for (cols, limit) in [(8192, 8192), (8192, 5000), (3000, 2047), (8192, 0)] {
        let args = vec![
            ArgValue::Tensor(rng.tensor(f, &[1, cols])),
            ArgValue::Tensor(rng.tensor(f, &[cols])),
            ArgValue::Tensor(Tensor::filled(f, &[1, cols], 0.0)),
            ArgValue::Int(limit),
        ];
        same_bits(&m, &s, "k", &args, 2);
    }
    // 10,000 and 12,288 columns: no power-of-two strip width, so no split (a slice of a kept
    // tile would go through shared memory), chosen or forced.
    for (cols, forced) in [(10000, 0), (10000, 4), (12288, 0), (12288, 4)] {
        let m = masked_scale(cols);
        let (s, stores, _) = strip(&m, 4, forced);
        assert_eq!(stores, 0, "{cols} columns, strips={forced}");
        assert_eq!(print_module(&s), print_module(&m));
    }
}

#[test]
fn a_tile_past_every_budget_gets_at_most_max_strips() {
    // 16 × 1,048,576 f32 at 32 warps: no strip count would fit it; the pass stops at
    // MAX_STRIPS (tile-assign-layouts then refuses the tile) instead of writing 2^16 strips.
    let src = "tile.kernel @big(%X: tensor<?x?xf32>, %W: tensor<?x?xf32>, %Y: tensor<?x?xf32>) \
               {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %x = tile.load %X, %c0, %c0 : tile<16x1048576xf32>
  %s = tile.reduce %x {dim = 1, kind = \"add\"} : tile<16x1xf32>
  %sb = tile.broadcast %s : tile<16x1048576xf32>
  %w = tile.load %W, %c0, %c0 : tile<16x1048576xf32>
  %d = tile.sub %x, %sb : tile<16x1048576xf32>
  %y = tile.add %d, %w : tile<16x1048576xf32>
  tile.store %Y, %c0, %c0, %y
  tile.return
}
";
    let m = parse(src, "big.tile").unwrap();
    verify(&m).unwrap();
    let (s, stores, n) = strip(&m, 32, 0);
    assert_eq!(
        (stores, n),
        (1, tilec_passes::strip_mine_stores::MAX_STRIPS)
    );
    assert_eq!(count(&s, OpKind::Store), 64);
}

#[test]
fn a_chain_deeper_than_the_walk_is_left_whole() {
    // 4,000 chained adds over a loaded weight (a kept row sliced at the end): the walk stops
    // at MAX_CHAIN_DEPTH instead of overflowing the stack, and the store stays whole.
    let mut src = String::from(
        "tile.kernel @deep(%X: tensor<?x?xf32>, %W: tensor<?x?xf32>, %Y: tensor<?x?xf32>) \
         {grid = [1]} {\n  %c0 = tile.constant {value = 0} : index\n  \
         %x = tile.load %X, %c0, %c0 : tile<1x4096xf32>\n  \
         %s = tile.reduce %x {dim = 1, kind = \"add\"} : tile<1x1xf32>\n  \
         %sb = tile.broadcast %s : tile<1x4096xf32>\n  \
         %v0 = tile.load %W, %c0, %c0 : tile<1x4096xf32>\n",
    );
    for i in 1..=4000 {
        src.push_str(&format!(
            "  %v{i} = tile.add %v{}, %sb : tile<1x4096xf32>\n",
            i - 1
        ));
    }
    src.push_str("  tile.store %Y, %c0, %c0, %v4000\n  tile.return\n}\n");
    let m = parse(&src, "deep.tile").unwrap();
    verify(&m).unwrap();
    let (s, stores, _) = strip(&m, 1, 0);
    assert_eq!(stores, 0);
    assert_eq!(print_module(&s), print_module(&m));
}
