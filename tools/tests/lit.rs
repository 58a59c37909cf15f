//! The lit harness: every `tests/lit/**/*.tile` file is one test, named by its path under
//! `tests/lit` (files under an `Inputs` folder are read by tests, not run). A file's
//! `// RUN:` lines (a line ending in `\` continues on the next `// RUN:` line) are shell
//! pipelines run in order with `bash -o pipefail -c` from the workspace root, each within
//! two minutes, after these substitutions:
//!
//! | text | becomes |
//! | --- | --- |
//! | `%s` | the test file's path |
//! | `%S` | the test file's folder |
//! | `%t` | a scratch path unique to the file (a folder of that name may be created) |
//! | `tile-opt` | the `tile-opt` binary Cargo built for this test |
//! | `tile-compile` | `$TILE_COMPILE`, else a `tile-compile` beside `tile-opt`, when either exists |
//! | `FileCheck` | `$FILECHECK`, else `/usr/lib/llvm-22/bin/FileCheck` |
//!
//! `not CMD...` succeeds iff CMD exits non-zero without crashing: a Rust panic (exit 101)
//! or a signal fails it, as LLVM's `not` treats crashes. A file with `// REQUIRES:
//! tile-compile` is reported ignored when no `tile-compile` is found; any other REQUIRES
//! feature is unknown and ignores the file too. A failing RUN line is reported with its
//! text, the substituted command, the exit status, stdout and stderr.
//!
//! Run one file: `cargo test -p tilec-tools --test lit -- dialect/roundtrip/types.tile`.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shell prelude every RUN line runs after: the `not` of LLVM's lit, in bash.
const PRELUDE: &str = r#"not() {
  "$@"
  local rc=$?
  if [ "$rc" -eq 0 ]; then echo "not: '$*' succeeded" >&2; return 1; fi
  if [ "$rc" -eq 101 ] || [ "$rc" -ge 128 ]; then echo "not: '$*' crashed (exit $rc)" >&2; return 1; fi
  return 0
}
"#;

/// Seconds a single RUN line may take before it counts as hung.
const RUN_TIMEOUT_S: u32 = 120;

struct Tools {
    tile_opt: PathBuf,
    tile_compile: Option<PathBuf>,
    filecheck: PathBuf,
}

impl Tools {
    fn find() -> Tools {
        let tile_opt = PathBuf::from(env!("CARGO_BIN_EXE_tile-opt"));
        let tile_compile = match std::env::var_os("TILE_COMPILE") {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => Some(tile_opt.with_file_name("tile-compile")).filter(|p| p.is_file()),
        };
        let filecheck = std::env::var_os("FILECHECK")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-22/bin/FileCheck"));
        Tools { tile_opt, tile_compile, filecheck }
    }
}

/// One test file, read.
struct LitFile {
    path: PathBuf,
    name: String,
    runs: Vec<String>,
    requires: Vec<String>,
}

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

fn lit_root() -> PathBuf {
    workspace_root().join("tests/lit")
}

fn discover(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
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

/// The text after `marker` on a comment line (`// RUN: ...`), if the line has it.
fn directive<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let t = line.trim_start();
    let t = t.strip_prefix("//")?.trim_start();
    t.strip_prefix(marker).map(str::trim)
}

fn read_lit_file(path: &Path) -> Result<LitFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let name = path.strip_prefix(lit_root()).unwrap_or(path).to_string_lossy().replace('\\', "/");
    let mut runs = vec![];
    let mut requires = vec![];
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if let Some(r) = directive(line, "RUN:") {
            let (body, cont) = match r.strip_suffix('\\') {
                Some(b) => (b.trim_end(), true),
                None => (r, false),
            };
            let acc = pending.take().map_or(body.to_string(), |p| format!("{p} {body}"));
            if cont {
                pending = Some(acc);
            } else {
                runs.push(acc);
            }
        } else if let Some(r) = directive(line, "REQUIRES:") {
            requires.extend(r.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
        }
    }
    if let Some(p) = pending {
        return Err(format!("{name}: the last RUN line ends in '\\' but no RUN line follows: {p}"));
    }
    Ok(LitFile { path: path.to_path_buf(), name, runs, requires })
}

fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Replace `word` where it stands as a command word: preceded by the start, whitespace or
/// one of `|;&(`, and followed by the end, whitespace or one of `|;&)`.
fn subst_word(cmd: &str, word: &str, repl: &str) -> String {
    let mut out = String::with_capacity(cmd.len());
    let b = cmd.as_bytes();
    let mut i = 0;
    while i < cmd.len() {
        if cmd[i..].starts_with(word) {
            let before_ok = i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'|' | b';' | b'&' | b'(');
            let j = i + word.len();
            let after_ok = j == cmd.len() || matches!(b[j], b' ' | b'\t' | b'|' | b';' | b'&' | b')');
            if before_ok && after_ok {
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

fn substitute(run: &str, f: &LitFile, tools: &Tools, scratch: &Path) -> String {
    let dir = f.path.parent().unwrap_or(Path::new("."));
    let mut s = run.replace("%s", &shell_quote(&f.path)).replace("%S", &shell_quote(dir)).replace("%t", &shell_quote(scratch));
    s = subst_word(&s, "tile-opt", &shell_quote(&tools.tile_opt));
    if let Some(tc) = &tools.tile_compile {
        s = subst_word(&s, "tile-compile", &shell_quote(tc));
    }
    subst_word(&s, "FileCheck", &shell_quote(&tools.filecheck))
}

fn run_file(f: &LitFile, tools: &Tools) -> Result<(), Failed> {
    if f.runs.is_empty() {
        return Err(format!("{}: no '// RUN:' line", f.name).into());
    }
    let scratch = std::env::temp_dir().join(format!("tilec-lit-{}-{}", std::process::id(), f.name.replace('/', "_")));
    for run in &f.runs {
        let cmd = substitute(run, f, tools, &scratch);
        let out = Command::new("timeout")
            .arg(RUN_TIMEOUT_S.to_string())
            .args(["bash", "-o", "pipefail", "-c"])
            .arg(format!("{PRELUDE}{cmd}"))
            .current_dir(workspace_root())
            .env("FILECHECK_OPTS", "--color=0")
            .output()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let status = match out.status.code() {
            Some(124) => format!("timed out after {RUN_TIMEOUT_S} s"),
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        };
        let crashed = stdout.contains("panicked") || stderr.contains("panicked");
        if !out.status.success() || crashed {
            let why = if crashed && out.status.success() { "output mentions a panic" } else { "RUN line failed" };
            return Err(format!(
                "{why}: {}\n  RUN: {run}\n  command: {cmd}\n  {status}\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}",
                f.name
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
    let tools = std::sync::Arc::new(Tools::find());
    let mut paths = vec![];
    discover(&lit_root(), &mut paths);
    paths.sort();
    let mut trials = vec![];
    for p in paths {
        let tools = tools.clone();
        match read_lit_file(&p) {
            Ok(f) => {
                let missing = f.requires.iter().any(|r| match r.as_str() {
                    "tile-compile" => tools.tile_compile.is_none(),
                    _ => true,
                });
                let name = f.name.clone();
                trials.push(Trial::test(name, move || run_file(&f, &tools)).with_ignored_flag(missing));
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
