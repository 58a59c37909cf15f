//! # tilec-passes: IR-to-IR passes and the pass manager
//!
//! Each pass lives in its own module with a summary, its options and its statistics in the
//! module doc, and a public function doing the work (the [`Pass`] is a thin wrapper), as
//! MLIR upstream does. The [`manager`] builds pipelines from MLIR's textual syntax, runs
//! them, verifies after each pass, and times them. Nothing here knows about MLIR.
//!
//! Passes: [`dce`], [`cse`], [`tile_to_gpu`].
//!
//! Dependencies: `tilec-dialect` (the IR), `thiserror` (error types). Dev: `proptest`.

#![deny(missing_docs)]

pub mod cse;
pub mod dce;
pub mod manager;
pub mod pass;
pub mod pipeline;
pub mod tile_to_gpu;

pub use manager::{describe_passes, lookup, registry, PassManager, RegistryEntry, RunReport, Stage};
pub use pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
pub use pipeline::{parse_pipeline, PipelineElement};

static REGISTRY: &[RegistryEntry] = &[
    RegistryEntry { info: &cse::INFO, build: |_| Ok(Box::new(cse::Cse)) },
    RegistryEntry { info: &dce::INFO, build: |_| Ok(Box::new(dce::Dce)) },
    RegistryEntry { info: &tile_to_gpu::INFO, build: |o| Ok(Box::new(tile_to_gpu::TileToGpu::from_options(o)?)) },
];
