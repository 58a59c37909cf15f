//! `tilec-lowering`: tile IR → MLIR (`gpu`, `nvvm`, `llvm` dialects) → PTX.
//!
//! This crate is the only library of the workspace that links MLIR and LLVM.
//! [`convert_tile_to_nvvm`] checks each kernel and describes its launch; the kernel's MLIR
//! module (a builtin module carrying `gpu.container_module` that holds one `gpu.module`
//! with an `llvm.func` kernel written with `llvm.*` and `nvvm.*` ops) is built through
//! melior's API wherever it is needed. [`LoweredKernel::to_ptx`] builds it in the
//! [`mlir_driver`]'s own context and runs MLIR's NVPTX serialization on it
//! (`convert-nvvm-to-llvm`, `reconcile-unrealized-casts`, `nvvm-attach-target`, then MLIR's
//! NVVM serializer with tilec's LLVM pass pipeline): no MLIR text is printed or parsed on
//! the way.
//! [`LoweredKernel::mlir`] prints it (`--emit mlir`, `tile-opt --convert-tile-to-nvvm`);
//! [`mlir_to_ptx`] takes such text back.
//!
//! # Dependencies and why each is here
//!
//! - `melior`: safe Rust wrappers over the MLIR C API — the context, dialect registry,
//!   diagnostic handlers, pass manager and textual pass pipelines. Later lowering stages
//!   build `gpu`/`nvvm`/`llvm` ops with its `OperationBuilder`.
//! - `mlir-sys`: the raw C API underneath melior, for what melior does not wrap: parsing a
//!   module with a source name (`mlirOperationCreateParse`) and handing the `gpu.module`
//!   op to the C++ serializer. Its build script is also what links the static MLIR/LLVM
//!   libraries (found through `MLIR_SYS_220_PREFIX`).
//! - `cc` (build): compiles `cpp/register.cpp`, which registers exactly the dialects, the
//!   `#nvvm.target` serialization model and the LLVM IR translations the driver uses, and
//!   holds the serializer with tilec's LLVM pass pipeline (MLIR's runs `default<O3>`). MLIR's
//!   C API can only register everything, which links all of MLIR in (the static
//!   `tile-compile` was 176 MB stripped; with only what it uses, 53 MB).
//! - `tilec-dialect`: the IR being lowered (a `VerifiedModule`, so unverified IR never
//!   reaches MLIR).
//! - `tilec-manifest`: the launch manifest's types (a crate of their own, so that a launcher
//!   needs no MLIR).
//! - `thiserror`: derives `std::error::Error` and `Display` for [`MlirError`].
//!
//! # Process-wide state
//!
//! MLIR's passes and dialects are registered once per process; every call of
//! [`mlir_to_ptx`] / [`mlir_to_llvm_ir`] (and every compile through the typed writer) builds
//! a fresh MLIR context, so calls from several threads run in parallel (`benches/threads.rs`;
//! the one process-wide LLVM option that differs by target is held for each compile, see
//! [`mlir_driver`]).
//! Inputs that make LLVM's NVPTX back end call `report_fatal_error` end the whole process;
//! see [`mlir_driver`] for which ones and how they are kept out.

#![deny(missing_docs)]

pub mod mlir_driver;
pub mod nvvm;

pub use nvvm::{convert_tile_to_nvvm, prepare_tile_to_nvvm, BuildError, LoweredKernel};
pub use tilec_manifest as manifest;
pub use tilec_manifest::{Manifest, Param, SCHEMA_VERSION};

pub use mlir_driver::{
    install_fatal_error_handler, min_ptx_version, mlir_stage_in_child, mlir_to_llvm_ir,
    mlir_to_ptx, mlir_to_ptx_timed, set_fatal_error_subject, Diagnostic, MlirError, Product,
    Severity, StageTimings, TargetSpec, CHILD_TIMEOUT, LLVM_PIPELINE,
};
