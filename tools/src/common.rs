//! Code both binaries share: reading input files, rendering diagnostics, exit codes.

#![allow(dead_code)]

use std::io::Read;
use tilec_dialect::Diagnostics;

/// `--target`'s value parser: a target by name, or the list of known ones.
pub fn parse_target(s: &str) -> Result<tilec_dialect::Target, String> {
    tilec_dialect::Target::from_name(s).ok_or_else(|| {
        format!(
            "unknown target '{s}' (known: {})",
            tilec_dialect::Target::names()
        )
    })
}

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the input had errors (diagnostics were printed).
pub const EXIT_DIAGNOSTICS: i32 = 1;
/// Exit code: the command line was wrong.
pub const EXIT_USAGE: i32 = 2;

/// Ends the process with `code` once its work is done: standard output and error are
/// flushed, then the process exits without running the C++ static destructors of the linked
/// LLVM and MLIR or freeing the heap (about a millisecond of a compile), as clang does with
/// `-disable-free` and LLVM's `sys::Process::Exit(code, /*NoCleanup=*/true)`. Every output
/// file is written and closed before this is called.
pub fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    {
        extern "C" {
            /// POSIX `_exit`: ends the process at once (no atexit handlers).
            fn _exit(status: i32) -> !;
        }
        // SAFETY: `_exit` takes any status and does not return; nothing of this process
        // needs to run after it (the streams are flushed above, the files closed).
        unsafe { _exit(code) }
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// The largest input read, in bytes: tile IR is text written per kernel, far smaller; a
/// larger input (a device such as `/dev/zero`, a wrong file) is refused before it fills
/// memory.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// An input file: its display name and bytes. `-` reads standard input (named `<stdin>`).
/// At most [`MAX_INPUT_BYTES`] are read; more is an error.
pub fn read_input(path: &str) -> Result<(String, Vec<u8>), String> {
    let (name, reader): (String, Box<dyn Read>) = if path == "-" {
        ("<stdin>".to_string(), Box::new(std::io::stdin()))
    } else {
        if std::path::Path::new(path).is_dir() {
            return Err(format!(
                "error: could not open input file '{path}': Is a directory"
            ));
        }
        let f = std::fs::File::open(path).map_err(|e| {
            format!(
                "error: could not open input file '{path}': {}",
                io_reason(&e)
            )
        })?;
        (path.to_string(), Box::new(f))
    };
    let mut buf = vec![];
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("error: could not read '{name}': {}", io_reason(&e)))?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "error: '{name}' is larger than {} MiB; tilec reads tile IR text",
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok((name, buf))
}

/// Read an input file as IR text. On failure prints the error (a missing file; invalid
/// UTF-8 with its line, column and caret) and returns the exit code to use.
pub fn read_source(path: &str) -> Result<(String, String), i32> {
    let (name, bytes) = read_input(path).map_err(|e| {
        eprintln!("{e}");
        EXIT_DIAGNOSTICS
    })?;
    match tilec_dialect::parser::utf8(&bytes, &name) {
        Ok(s) => Ok((name, s.to_string())),
        Err(d) => {
            // Show the line with the bad bytes replaced (U+FFFD): the text before them,
            // where the caret points, is unchanged.
            eprint_diags(&d, Some(&String::from_utf8_lossy(&bytes)));
            Err(EXIT_DIAGNOSTICS)
        }
    }
}

/// The reason of an I/O error without Rust's "(os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(p) => s[..p].to_string(),
        None => s,
    }
}

/// Print diagnostics to stderr with source lines and carets.
pub fn eprint_diags(d: &Diagnostics, source: Option<&str>) {
    eprint!("{}", d.render(source));
}

/// Write `text` to `-o FILE` or stdout.
pub fn write_output(path: Option<&str>, text: &str) -> Result<(), String> {
    match path {
        None | Some("-") => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .map_err(|e| format!("error: could not write standard output: {}", io_reason(&e)))
        }
        Some(p) => std::fs::write(p, text)
            .map_err(|e| format!("error: could not write '{p}': {}", io_reason(&e))),
    }
}
