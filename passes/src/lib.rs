//! # tilec-passes: IR-to-IR passes and the pass manager
//!
//! Each pass lives in its own module with a summary, its options and its statistics in the
//! module doc, and a public function doing the work (the [`Pass`] is a thin wrapper), as
//! MLIR upstream does. The [`manager`] builds pipelines from MLIR's textual syntax, runs
//! them, verifies after each pass, and times them. Nothing here knows about MLIR.
//!
//! Passes: [`assign_layouts`] (`tile-assign-layouts`), [`async_wait_placement`], [`cse`],
//! [`dce`], [`defer_mma`] (`tile-defer-mma`), [`dot_to_wgmma`] (`tile-dot-to-wgmma`),
//! [`hoist_loads`] (`tile-hoist-loads`),
//! [`persistent`], [`pingpong`] (`tile-pingpong`), [`pipeline_loads`]
//! (`tile-pipeline-loads`), [`simplify`]
//! (`tile-simplify`), [`specialize_masks`] (`tile-specialize-masks`), [`strip_mine_stores`]
//! (`tile-strip-mine-stores`), [`tile_to_gpu`],
//! [`verify_async_waits`], [`verify_named_barriers`].
//! [`async_model`] holds what the wait placement and the checker's path explorer agree a
//! hazard is; [`async_sim`] is the checker's second half, an executable model of the group
//! semantics that shares nothing with it.
//!
//! Dependencies: `tilec-dialect` (the IR), `thiserror` (error types), `egg` (e-graphs, for
//! `tile-simplify`), `quanta` (egg's clock, replaced by a frozen mock while `tile-simplify`
//! runs: the default one calibrates for 10 ms or more on its first reading), `rustc-hash`
//! (the hash of `async_sim`'s state keys, long integer vectors that SipHash made the simulation's
//! largest cost). Dev: `proptest`.

#![deny(missing_docs)]

pub mod assign_layouts;
pub mod async_model;
pub mod async_sim;
pub mod async_wait_placement;
pub mod cse;
pub mod dce;
pub mod defer_mma;
pub mod dot_to_wgmma;
pub mod hoist_loads;
pub mod manager;
pub mod pass;
pub mod persistent;
pub mod pingpong;
pub mod pipeline;
pub mod pipeline_loads;
pub mod simplify;
pub mod specialize_masks;
pub mod strip_mine_stores;
pub mod tile_to_gpu;
pub mod verify_async_waits;
pub mod verify_named_barriers;

pub use manager::{
    describe_passes, lookup, registry, PassManager, RegistryEntry, RunReport, Stage,
};
pub use pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
pub use pipeline::{parse_pipeline, PipelineElement};

static REGISTRY: &[RegistryEntry] = &[
    RegistryEntry {
        info: &assign_layouts::INFO,
        build: |o| Ok(Box::new(assign_layouts::AssignLayouts::from_options(o)?)),
    },
    RegistryEntry {
        info: &async_wait_placement::INFO,
        build: |_| Ok(Box::new(async_wait_placement::AsyncWaitPlacement)),
    },
    RegistryEntry {
        info: &cse::INFO,
        build: |_| Ok(Box::new(cse::Cse)),
    },
    RegistryEntry {
        info: &dce::INFO,
        build: |_| Ok(Box::new(dce::Dce)),
    },
    RegistryEntry {
        info: &dot_to_wgmma::INFO,
        build: |o| Ok(Box::new(dot_to_wgmma::DotToWgmma::from_options(o))),
    },
    RegistryEntry {
        info: &defer_mma::INFO,
        build: |_| Ok(Box::new(defer_mma::DeferMma)),
    },
    RegistryEntry {
        info: &hoist_loads::INFO,
        build: |_| Ok(Box::new(hoist_loads::HoistLoads)),
    },
    RegistryEntry {
        info: &strip_mine_stores::INFO,
        build: |o| {
            Ok(Box::new(strip_mine_stores::StripMineStores::from_options(
                o,
            )?))
        },
    },
    RegistryEntry {
        info: &persistent::INFO,
        build: |o| Ok(Box::new(persistent::Persistent::from_options(o)?)),
    },
    RegistryEntry {
        info: &pingpong::INFO,
        build: |o| Ok(Box::new(pingpong::PingPong::from_options(o)?)),
    },
    RegistryEntry {
        info: &pipeline_loads::INFO,
        build: |o| Ok(Box::new(pipeline_loads::PipelineLoads::from_options(o)?)),
    },
    RegistryEntry {
        info: &simplify::INFO,
        build: |o| {
            Ok(Box::new(simplify::TileSimplify {
                options: simplify::SimplifyOptions::from_options(o),
            }))
        },
    },
    RegistryEntry {
        info: &specialize_masks::INFO,
        build: |_| Ok(Box::new(specialize_masks::SpecializeMasks)),
    },
    RegistryEntry {
        info: &tile_to_gpu::INFO,
        build: |o| Ok(Box::new(tile_to_gpu::TileToGpu::from_options(o)?)),
    },
    RegistryEntry {
        info: &verify_async_waits::INFO,
        build: |o| {
            Ok(Box::new(verify_async_waits::VerifyAsyncWaits {
                options: verify_async_waits::CheckOptions {
                    max_steps: o.uint("max_steps"),
                    sim_runs: o.uint("sim_runs"),
                },
            }))
        },
    },
    RegistryEntry {
        info: &verify_named_barriers::INFO,
        build: |o| {
            Ok(Box::new(
                verify_named_barriers::VerifyNamedBarriers::from_options(o)?,
            ))
        },
    },
];
