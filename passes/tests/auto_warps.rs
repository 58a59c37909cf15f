//! `tile-assign-layouts`' choice of warps (`num-warps=0`): 2 for a kernel with a reduction
//! and a largest tile of up to 1,024 elements, else 4 to 8 from its elements, and more only
//! where a tile would not fit a thread's registers at 8.

mod common;
use common::example;
use tilec_dialect::{Module, Target};
use tilec_passes::assign_layouts::auto_warps;

fn warps(m: &Module) -> u64 {
    auto_warps(m, &m.ops[0], Target::Sm90a)
}

#[test]
fn warps_from_the_largest_tile() {
    // 1,024 columns: 2 warps, the fewest that fill an SM's 64 warp slots with its 32 CTAs
    // (16 elements per thread); 2,048: 4 (32 elements per thread at 2 would be too many).
    assert_eq!(warps(&example("layernorm", 1024)), 2);
    assert_eq!(warps(&example("layernorm", 2048)), 4);
    // Without a reduction (vadd's 1,024-element tile): 4.
    assert_eq!(warps(&example("vadd", 4096)), 4);
    assert_eq!(
        tilec_passes::assign_layouts::min_auto_warps(Target::Sm100a),
        2
    );
    // 4,096 columns: 4 warps (32 elements per thread); 8,192: 8.
    assert_eq!(warps(&example("layernorm", 4096)), 4);
    assert_eq!(warps(&example("layernorm", 8192)), 8);
    assert_eq!(warps(&example("softmax", 8192)), 8);
    // 16,384 columns: 16 elements per thread would take 16 warps, but 8 hold LayerNorm's
    // widest tile (its column iota, 8-byte index: 64 registers per thread).
    assert_eq!(warps(&example("layernorm", 16384)), 8);
}

#[test]
fn more_warps_where_a_tile_needs_more_than_255_registers() {
    // The 1×32,768 index iota is 256 registers per thread at 8 warps, 128 at 16.
    assert_eq!(warps(&example("layernorm", 32768)), 16);
    // 65,536 columns: 256 at 16 warps, 128 at 32.
    assert_eq!(warps(&example("layernorm", 65536)), 32);
    // Softmax at 32,768 keeps only 4-byte tiles: 128 registers at 8 warps.
    assert_eq!(warps(&example("softmax", 32768)), 8);
}
