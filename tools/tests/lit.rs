//! The lit harness: every `tests/lit/**/*.tile` file is one test, named by its path under
//! `tests/lit` (files under an `Inputs` folder are read by tests, not run). Each `// RUN:`
//! line runs in order from the workspace root, with the substitutions of
//! `tilec_tools::lit` (`%s`, `%S`, `%t`, `tile-opt`, `tile-compile`, `FileCheck`, `not`),
//! within two minutes. A file with `// REQUIRES: tile-compile` is reported ignored when no
//! `tile-compile` is found; any other REQUIRES feature is unknown and ignores the file too.
//! A failing RUN line is reported with its text, the substituted command, the exit status,
//! stdout and stderr.
//!
//! Run one file: `cargo test -p tilec-tools --test lit -- dialect/roundtrip/types.tile`.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use tilec_tools::lit::{read_lit_file, run_shell, substitute, LitFile, Tools};

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

fn lit_root() -> PathBuf {
    workspace_root().join("tests/lit")
}

fn discover(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // As in LLVM's lit, `Inputs` folders hold files that tests read, not tests.
            if p.file_name().is_some_and(|n| n != "Inputs") {
                discover(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "tile") {
            out.push(p);
        }
    }
}

fn run_file(f: &LitFile, tools: &Tools) -> Result<(), Failed> {
    if f.runs.is_empty() {
        return Err(format!("{}: no '// RUN:' line", f.name).into());
    }
    let tag = f.name.replace('/', "_");
    let scratch = std::env::temp_dir().join(format!("tilec-lit-{}-{tag}", std::process::id()));
    for run in &f.runs {
        let cmd = substitute(run, f, tools, &scratch);
        let out = run_shell(&cmd, &workspace_root(), None)?;
        let crashed = out.stdout.contains("panicked") || out.stderr.contains("panicked");
        if !out.success() || crashed {
            let why = if crashed && out.success() {
                "output mentions a panic"
            } else {
                "RUN line failed"
            };
            return Err(format!(
                "{why}: {}\n  RUN: {run}\n  command: {cmd}\n  {}\n--- stdout ---\n{}--- stderr \
                    ---\n{}",
                f.name,
                out.status(),
                out.stdout,
                out.stderr
            )
            .into());
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = std::fs::remove_file(&scratch);
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let tile_opt = PathBuf::from(env!("CARGO_BIN_EXE_tile-opt"));
    let tools = std::sync::Arc::new(Tools::with_tile_opt(tile_opt));
    let mut paths = vec![];
    discover(&lit_root(), &mut paths);
    paths.sort();
    let mut trials = vec![];
    for p in paths {
        let tools = tools.clone();
        let name = p
            .strip_prefix(lit_root())
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        match read_lit_file(&p, &name) {
            Ok(f) => {
                let missing = f.requires.iter().any(|r| match r.as_str() {
                    "tile-compile" => tools.tile_compile.is_none(),
                    _ => true,
                });
                let name = f.name.clone();
                trials.push(
                    Trial::test(name, move || run_file(&f, &tools)).with_ignored_flag(missing),
                );
            }
            Err(e) => {
                let name = p.to_string_lossy().into_owned();
                trials.push(Trial::test(name, move || Err(e.into())));
            }
        }
    }
    if trials.is_empty() {
        eprintln!("no lit tests found under {}", lit_root().display());
        std::process::exit(1);
    }
    libtest_mimic::run(&args, trials).exit();
}
