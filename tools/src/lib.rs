//! Library code of the tilec tools: lit files and their RUN lines ([`lit`]), shared by the
//! lit harness and `tile-update-checks` ([`update_checks`]).
//!
//! Dependencies: `clap` (the binaries' command lines), `libtest-mimic` (the lit harness, a
//! test per file), `insta` (snapshots of rendered diagnostics); the binaries link the
//! `tilec` facade.

#![deny(missing_docs)]

pub mod lit;
pub mod update_checks;
