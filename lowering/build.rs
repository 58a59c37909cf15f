//! Compiles `cpp/register.cpp`, the registration of exactly the MLIR dialects, external
//! models and translations the driver uses (MLIR's C API only registers everything), with
//! the flags of the `llvm-config` that `mlir-sys` links against (`MLIR_SYS_220_PREFIX`, as
//! mlir-sys reads it, or the one on `PATH`).

use std::{path::PathBuf, process::Command};

fn llvm_config(arg: &str) -> String {
    let bin = std::env::var_os("MLIR_SYS_220_PREFIX")
        .map(|p| PathBuf::from(p).join("bin").join("llvm-config"))
        .unwrap_or_else(|| PathBuf::from("llvm-config"));
    let out = Command::new(&bin)
        .arg(arg)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    assert!(out.status.success(), "{} {arg} failed", bin.display());
    String::from_utf8(out.stdout)
        .expect("llvm-config prints UTF-8")
        .trim()
        .to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=cpp/register.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let mut build = cc::Build::new();
    build.cpp(true).file("cpp/register.cpp").warnings(false);
    for flag in llvm_config("--cxxflags").split_whitespace() {
        build.flag(flag);
    }
    build.compile("tilec_register");
}
