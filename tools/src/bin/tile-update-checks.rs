//! `tile-update-checks FILE...`: rewrite each lit file's CHECK lines from the output of its
//! RUN lines (see `tilec_tools::update_checks` for what is generated and where it goes).
//!
//! ```text
//! tile-update-checks FILE... [--check-prefix P]... [--dry-run] [--tile-opt PATH]
//! ```
//!
//! Exit codes: 0 every file updated or already up to date, 1 a file was left alone (its
//! RUN line failed, or the generated checks did not pass), 2 usage.

use clap::{Arg, ArgAction, Command};
use std::path::PathBuf;
use tilec_tools::lit::Tools;
use tilec_tools::update_checks::{update_file, Outcome, UpdateOptions};

fn main() {
    let m = Command::new("tile-update-checks")
        .about("Rewrite lit files' CHECK lines from the output of their RUN lines")
        .version(env!("CARGO_PKG_VERSION"))
        .arg(
            Arg::new("files")
                .value_name("FILE")
                .num_args(1..)
                .required(true)
                .help(
                    "lit files to \
                        update",
                ),
        )
        .arg(
            Arg::new("check-prefix")
                .long("check-prefix")
                .value_name("P")
                .action(ArgAction::Append)
                .help(
                    "Regenerate only this prefix (repeatable; default: every prefix of the RUN \
                        lines)",
                ),
        )
        .arg(
            Arg::new("dry-run")
                .long("dry-run")
                .action(ArgAction::SetTrue)
                .help("Print the new text of each file to standard output; write nothing"),
        )
        .arg(
            Arg::new("tile-opt")
                .long("tile-opt")
                .value_name("PATH")
                .help("The tile-opt to run (default: $TILE_OPT, else the one beside this binary)"),
        )
        .get_matches();
    let tile_opt = m
        .get_one::<String>("tile-opt")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("TILE_OPT")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .map(|p| p.with_file_name("tile-opt"))
        });
    let Some(tile_opt) = tile_opt else {
        eprintln!("error: no tile-opt found beside tile-update-checks; pass --tile-opt PATH");
        std::process::exit(2);
    };
    if !tile_opt.is_file() {
        eprintln!(
            "error: tile-opt not found at {}; pass --tile-opt PATH",
            tile_opt.display()
        );
        std::process::exit(2);
    }
    let tools = Tools::with_tile_opt(tile_opt);
    if !tools.filecheck.is_file() {
        eprintln!(
            "error: FileCheck not found at {} (install mlir-22-tools or set $FILECHECK)",
            tools.filecheck.display()
        );
        std::process::exit(2);
    }
    let opts = UpdateOptions {
        prefixes: m
            .get_many::<String>("check-prefix")
            .into_iter()
            .flatten()
            .cloned()
            .collect(),
        dry_run: m.get_flag("dry-run"),
    };
    let mut failed = false;
    for f in m.get_many::<String>("files").into_iter().flatten() {
        match update_file(std::path::Path::new(f), &tools, &opts) {
            Ok((outcome, text)) => {
                if opts.dry_run {
                    print!("{text}");
                }
                match outcome {
                    Outcome::Updated if !opts.dry_run => eprintln!("{f}: updated"),
                    Outcome::Updated => eprintln!("{f}: would be updated"),
                    Outcome::Unchanged => eprintln!("{f}: up to date"),
                    Outcome::NoChecks => {
                        eprintln!("{f}: no RUN line pipes into 'FileCheck %s'; left alone")
                    }
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}
