//! # tilec-dialect: the tile IR
//!
//! The target-independent tile language a frontend writes (one program per output tile,
//! like a Triton kernel after its frontend) and the GPU-level ops the passes produce, with
//! a parser, a printer, a verifier and diagnostics. It knows nothing of passes or MLIR.
//!
//! ```text
//! tile.kernel @gemm(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, %C: tensor<?x?xbf16>,
//!                   %M: index, %N: index, %K: index)
//!     {grid = [ceildiv(%N, 256), ceildiv(%M, 128)]} {
//!   %pn = tile.program_id {dim = 0} : index
//!   ...
//!   %acc = tile.for %c0, %K, %c64, %zero : tile<128x256xf32> {
//!   ^bb0(%k: index, %c: tile<128x256xf32>):
//!     %a = tile.load %A, %row, %k : tile<128x64xbf16>
//!     %b = tile.load %B, %k, %col : tile<64x256xbf16>
//!     %d = tile.dot %a, %b, %c : tile<128x256xf32>
//!     tile.yield %d
//!   }
//!   ...
//!   tile.return
//! }
//! ```
//!
//! Modules: [`types`], [`layout`] (distributed tile layouts), [`attr`], [`ops`] (the op
//! table), [`ir`], [`parser`], [`printer`],
//! [`verifier`] (its doc lists every invariant), [`diag`], [`expected`]
//! (`--verify-diagnostics`), [`builder`], [`interp`] (the reference interpreter of level-1
//! IR: the oracle that pass tests compare against).
//!
//! Dependencies: `thiserror` for the error types, `half` for the interpreter's bf16/f16
//! rounding. Dev: `insta` (snapshots of printed
//! IR), `proptest` (printer/parser round-trip properties).

#![deny(missing_docs)]

pub mod attr;
pub mod builder;
pub mod diag;
pub mod expected;
pub mod interp;
pub mod ir;
pub mod layout;
pub mod lexer;
pub mod location;
pub mod ops;
pub mod parser;
pub mod printer;
pub mod target;
pub mod types;
pub mod verifier;

/// The values of the `placed` attribute of `tile.barrier`, `tile.named_barrier` and
/// `tile.fence_proxy_async`: the group kind (wgmma, bulk store, cp.async) whose
/// `async-wait-placement` put the op there with no wait right before it.
pub const PLACED_KINDS: [&str; 3] = ["wgmma", "bulk", "cp_async"];

pub use attr::{Attribute, Expr};
pub use builder::{BuildResult, Builder};
pub use diag::{DiagKind, Diagnostic, Diagnostics, Severity};
pub use ir::{AttrMap, Block, Module, Operation, Value, ValueInfo};
pub use layout::LinearLayout;
pub use location::Location;
pub use ops::{CmpPredicate, OpClass, OpKind, Precision, ReduceKind};
pub use parser::{
    is_constant_name, parse, parse_bytes, parse_with_constants, split_input, ConstantBindings,
};
pub use printer::{print_module, print_op};
pub use target::{mma_k, GemmTile, Target, TileRefusal, MMA_K_BYTES};
pub use types::{ScalarType, Type};
pub use verifier::{verify, verify_kernel, verify_op, VerifiedModule};
