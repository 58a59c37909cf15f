//! lit files: their `// RUN:` lines, the substitutions, and running one line in bash.
//!
//! Shared by the lit harness (`tests/lit.rs`) and `tile-update-checks`. A file's `// RUN:`
//! lines (a line ending in `\` continues on the next `// RUN:` line) are shell pipelines run
//! with `bash -o pipefail -c` from the workspace root after these substitutions:
//!
//! | text | becomes |
//! | --- | --- |
//! | `%s` | the test file's path |
//! | `%S` | the test file's folder |
//! | `%t` | a scratch path unique to the file (a folder of that name may be created) |
//! | `tile-opt` | the `tile-opt` binary |
//! | `tile-compile` | the `tile-compile` binary, when one is known |
//! | `FileCheck` | `$FILECHECK`, else `/usr/lib/llvm-22/bin/FileCheck` |
//!
//! `not CMD...` succeeds iff CMD exits non-zero without crashing: a Rust panic (exit 101)
//! or a signal fails it, as LLVM's `not` treats crashes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shell prelude every RUN line runs after: the `not` of LLVM's lit, in bash.
pub const PRELUDE: &str = r#"not() {
  "$@"
  local rc=$?
  if [ "$rc" -eq 0 ]; then echo "not: '$*' succeeded" >&2; return 1; fi
  if [ "$rc" -eq 101 ] || [ "$rc" -ge 128 ]; then
    echo "not: '$*' crashed (exit $rc)" >&2; return 1
  fi
  return 0
}
"#;

/// Seconds a single RUN line may take before it counts as hung.
pub const RUN_TIMEOUT_S: u32 = 120;

/// The programs RUN lines name.
#[derive(Clone, Debug)]
pub struct Tools {
    /// `tile-opt`.
    pub tile_opt: PathBuf,
    /// `tile-compile`, when one is known (files that need it are skipped otherwise).
    pub tile_compile: Option<PathBuf>,
    /// LLVM's `FileCheck`.
    pub filecheck: PathBuf,
}

impl Tools {
    /// `tile-opt` as given; `tile-compile` from `$TILE_COMPILE`, else beside `tile-opt`;
    /// `FileCheck` from `$FILECHECK`, else `/usr/lib/llvm-22/bin/FileCheck`.
    pub fn with_tile_opt(tile_opt: PathBuf) -> Tools {
        let tile_compile = match std::env::var_os("TILE_COMPILE") {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => Some(tile_opt.with_file_name("tile-compile")).filter(|p| p.is_file()),
        };
        let filecheck = std::env::var_os("FILECHECK")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-22/bin/FileCheck"));
        Tools {
            tile_opt,
            tile_compile,
            filecheck,
        }
    }
}

/// One lit file, read.
#[derive(Clone, Debug)]
pub struct LitFile {
    /// Its path.
    pub path: PathBuf,
    /// Its name in reports (the path under the test root).
    pub name: String,
    /// The RUN lines, continuations joined.
    pub runs: Vec<String>,
    /// The features of its `// REQUIRES:` lines.
    pub requires: Vec<String>,
}

/// The text after `marker` on a comment line (`// RUN: ...`), if the line has it.
pub fn directive<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let t = line.trim_start();
    let t = t.strip_prefix("//")?.trim_start();
    t.strip_prefix(marker).map(str::trim)
}

/// Parse a lit file's text.
///
/// # Errors
/// A last RUN line that ends in `\`.
pub fn parse_lit(path: &Path, name: &str, text: &str) -> Result<LitFile, String> {
    let mut runs = vec![];
    let mut requires = vec![];
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if let Some(r) = directive(line, "RUN:") {
            let (body, cont) = match r.strip_suffix('\\') {
                Some(b) => (b.trim_end(), true),
                None => (r, false),
            };
            let acc = pending
                .take()
                .map_or(body.to_string(), |p| format!("{p} {body}"));
            if cont {
                pending = Some(acc);
            } else {
                runs.push(acc);
            }
        } else if let Some(r) = directive(line, "REQUIRES:") {
            let features = r
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            requires.extend(features);
        }
    }
    if let Some(p) = pending {
        return Err(format!(
            "{name}: the last RUN line ends in '\\' but no RUN line follows: {p}"
        ));
    }
    Ok(LitFile {
        path: path.to_path_buf(),
        name: name.to_string(),
        runs,
        requires,
    })
}

/// Read and parse a lit file.
///
/// # Errors
/// An unreadable file, or as [`parse_lit`].
pub fn read_lit_file(path: &Path, name: &str) -> Result<LitFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_lit(path, name, &text)
}

/// `p` quoted for bash where it needs quotes.
pub fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Whether byte `b` may stand before a command word.
fn word_start(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'|' | b';' | b'&' | b'(')
}

/// Whether byte `b` may stand after a command word.
fn word_end(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'|' | b';' | b'&' | b')')
}

/// Replace `word` where it stands as a command word: preceded by the start, whitespace or
/// one of `|;&(`, and followed by the end, whitespace or one of `|;&)`.
pub fn subst_word(cmd: &str, word: &str, repl: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let b = cmd.as_bytes();
    let mut i = 0;
    while i < cmd.len() {
        if cmd[i..].starts_with(word) {
            let j = i + word.len();
            if (i == 0 || word_start(b[i - 1])) && (j == cmd.len() || word_end(b[j])) {
                out.push_str(repl);
                i = j;
                continue;
            }
        }
        let ch = cmd[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A RUN line with the substitutions made. `scratch` is what `%t` becomes.
pub fn substitute(run: &str, f: &LitFile, tools: &Tools, scratch: &Path) -> String {
    let dir = f.path.parent().unwrap_or(Path::new("."));
    let mut s = run
        .replace("%s", &shell_quote(&f.path))
        .replace("%S", &shell_quote(dir))
        .replace("%t", &shell_quote(scratch));
    s = subst_word(&s, "tile-opt", &shell_quote(&tools.tile_opt));
    if let Some(tc) = &tools.tile_compile {
        s = subst_word(&s, "tile-compile", &shell_quote(tc));
    }
    subst_word(&s, "FileCheck", &shell_quote(&tools.filecheck))
}

/// What a shell command did.
#[derive(Clone, Debug)]
pub struct ShellOutput {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl ShellOutput {
    /// Exited 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The exit status in words.
    pub fn status(&self) -> String {
        match self.code {
            Some(124) => format!("timed out after {RUN_TIMEOUT_S} s"),
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        }
    }
}

/// Run `cmd` (already substituted) after [`PRELUDE`] with `bash -o pipefail -c` in `cwd`,
/// within [`RUN_TIMEOUT_S`], with `stdin` as its standard input.
///
/// # Errors
/// bash or `timeout` could not be started.
pub fn run_shell(cmd: &str, cwd: &Path, stdin: Option<&[u8]>) -> Result<ShellOutput, String> {
    use std::io::Write;
    let mut c = Command::new("timeout");
    c.arg(RUN_TIMEOUT_S.to_string())
        .args(["bash", "-o", "pipefail", "-c"])
        .arg(format!("{PRELUDE}{cmd}"))
        .current_dir(cwd)
        .env("FILECHECK_OPTS", "--color=0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
    let mut child = c.spawn().map_err(|e| format!("cannot run bash: {e}"))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that does not read its input closes the pipe early: not an error.
        let _ = pipe.write_all(input);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    Ok(ShellOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
