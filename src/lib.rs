//! # tilec
//!
//! Facade crate: re-exports the public API of the workspace.
pub use tilec_dialect as dialect;
pub use tilec_passes as passes;
