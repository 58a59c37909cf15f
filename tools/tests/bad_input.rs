//! Bad input never panics: `tile-opt` on broken, hostile and huge input exits with a
//! diagnostic (exit 1, `error:` and a `file:line:col` location on stderr), and nothing it
//! prints mentions a panic.
//!
//! Decisions recorded here:
//! - An empty file (or one of only comments and blank lines) is a valid, empty module, as
//!   in MLIR: exit 0 and no output.
//! - A file that cannot be read has no line to point at: its error names the path only.
//! - Invalid UTF-8 is an error at the line and column of its first bad byte; `.tile` text
//!   files cannot hold it, so it is tested here rather than in `tests/lit`.
//!
//! The fully rendered text (header, source line, caret, notes) of a few representative
//! errors is pinned with insta snapshots in `tests/snapshots/`; re-bless them with
//! `INSTA_UPDATE=always cargo test -p tilec-tools --test bad_input` (or `cargo insta
//! accept`) after an intended change.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TILE_OPT: &str = env!("CARGO_BIN_EXE_tile-opt");

/// What one run of tile-opt gave.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Fails on any sign of a crash: a panic message, Rust's panic exit code, a signal.
    fn assert_no_crash(&self, what: &str) {
        assert!(
            !self.stdout.contains("panicked") && !self.stderr.contains("panicked"),
            "{what}: tile-opt panicked\n{}",
            self.stderr
        );
        assert!(
            self.code.is_some(),
            "{what}: tile-opt was killed by a signal\n{}",
            self.stderr
        );
        assert_ne!(
            self.code,
            Some(101),
            "{what}: tile-opt exited as a panic does\n{}",
            self.stderr
        );
    }

    /// Fails unless the run was rejected with a located error in `file`.
    fn assert_located_error(&self, what: &str, file: &str) {
        self.assert_no_crash(what);
        assert_eq!(
            self.code,
            Some(1),
            "{what}: expected exit 1\nstderr:\n{}",
            self.stderr
        );
        assert!(
            self.stderr.contains("error:"),
            "{what}: no 'error:' in stderr:\n{}",
            self.stderr
        );
        assert!(
            has_location(&self.stderr, file),
            "{what}: no '{file}:LINE:COL: error:' in stderr:\n{}",
            self.stderr
        );
    }
}

/// Whether `text` has a line starting `file:LINE:COL: error:` with LINE, COL ≥ 1.
fn has_location(text: &str, file: &str) -> bool {
    text.lines().any(|l| {
        let Some(rest) = l.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else {
            return false;
        };
        let mut parts = rest.splitn(3, ':');
        let (Some(line), Some(col), Some(tail)) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let positive = |s: &str| s.parse::<u32>().is_ok_and(|n| n >= 1);
        positive(line) && positive(col) && tail.starts_with(" error:")
    })
}

fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(TILE_OPT)
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tile-opt runs");
    if let Some(bytes) = stdin {
        // tile-opt may stop reading early; a broken pipe here is fine.
        let _ = child.stdin.take().expect("piped").write_all(bytes);
    }
    let out = child.wait_with_output().expect("tile-opt finishes");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tilec-bad-input-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Write `bytes` to `input.tile` in a scratch folder and run tile-opt on it there (so
/// diagnostics name `input.tile`), with `extra` flags.
fn run_bytes(name: &str, bytes: &[u8], extra: &[&str]) -> Run {
    let d = scratch(name);
    std::fs::write(d.join("input.tile"), bytes).expect("write input");
    let mut args = vec!["input.tile"];
    args.extend_from_slice(extra);
    let r = run_in(&d, &args, None);
    let _ = std::fs::remove_dir_all(&d);
    r
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const GEMM: &str = include_str!("../../examples/gemm_bf16.tile");

/// The example without its leading comment lines: exactly what the printer writes.
fn gemm_printed() -> String {
    GEMM.lines()
        .filter(|l| !l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn empty_input_is_an_empty_module() {
    for (what, text) in [
        ("empty", ""),
        ("comments", "// only a comment\n\n// and another\n"),
        ("blank", "\n\n  \n"),
    ] {
        let r = run_bytes(what, text.as_bytes(), &[]);
        r.assert_no_crash(what);
        assert_eq!(r.code, Some(0), "{what}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{what}");
        assert_eq!(r.stderr, "", "{what}");
    }
    let r = run_in(Path::new("."), &["-"], Some(b""));
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), ""));
}

#[test]
fn binary_garbage_is_rejected_with_a_location() {
    let mut rng = Rng(0x7111_ec0d_e5ee_d001);
    for case in 0..40 {
        let len = 1 + rng.below(600);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Make sure some cases are invalid UTF-8 early and some late.
        if case % 2 == 0 {
            let at = rng.below(len);
            bytes[at] = 0xFF;
        }
        let what = format!("garbage case {case} ({len} bytes)");
        let r = run_bytes(&format!("garbage{case}"), &bytes, &[]);
        r.assert_located_error(&what, "input.tile");
    }
}

#[test]
fn printable_garbage_and_mutated_examples_never_crash() {
    // Tokens of the language shuffled and spliced: these get past the lexer and exercise
    // the parser and the verifier. Some may parse and verify; none may crash, and every
    // rejection must carry a location.
    let pieces = [
        "tile.kernel",
        "@k",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "%a",
        "%b",
        "=",
        ":",
        ",",
        "tile<4x4xf32>",
        "tensor<?x?xf32>",
        "index",
        "f32",
        "tile.for",
        "tile.if",
        "tile.yield",
        "tile.return",
        "tile.dot",
        "tile.load",
        "^bb0",
        "grid",
        "1",
        "-7",
        "2.5",
        "\"s\"",
        "ceildiv(",
        "\n",
        " ",
        "// c\n",
        "// -----\n",
        "smem<2x4xf16>",
        "mbarrier<2>",
    ];
    let mut rng = Rng(42);
    for case in 0..40 {
        let mut text = String::new();
        if case % 2 == 0 {
            for _ in 0..rng.below(200) {
                text.push_str(pieces[rng.below(pieces.len())]);
                text.push(' ');
            }
        } else {
            // Cut the example at a random point and splice in random pieces.
            let g = gemm_printed();
            let mut cut = rng.below(g.len());
            while !g.is_char_boundary(cut) {
                cut -= 1;
            }
            text.push_str(&g[..cut]);
            for _ in 0..rng.below(5) {
                text.push_str(pieces[rng.below(pieces.len())]);
            }
            let mut resume = cut + rng.below(g.len() - cut + 1);
            while !g.is_char_boundary(resume) {
                resume -= 1;
            }
            text.push_str(&g[resume.max(cut)..]);
        }
        let what = format!("printable case {case}");
        for flags in [&[][..], &["--split-input-file", "--cse", "--dce"][..]] {
            let r = run_bytes(&format!("printable{case}"), text.as_bytes(), flags);
            r.assert_no_crash(&what);
            if r.code != Some(0) {
                r.assert_located_error(&format!("{what} {flags:?}\n{text}"), "input.tile");
            }
        }
    }
}

/// One broken input per kind of error the brief names, each with the message it must give.
#[test]
fn broken_inputs_give_located_errors() {
    let cases: &[(&str, &str, &str)] = &[
        ("unterminated region", "tile.kernel @k() {grid = [1]} {\n  tile.barrier\n", "unterminated \
            region: expected '}'"),
        (
            "type mismatch",
            "tile.kernel @k(%x: f32, %i: index) {grid = [1]} {\n  %y = tile.add %x, %i : f32\n  \
                tile.return\n}\n",
            "'tile.add' operand types differ: f32 and index",
        ),
        (
            "use before definition",
            "tile.kernel @k(%x: f32) {grid = [1]} {\n  %y = tile.add %x, %z : f32\n  %z = tile.neg \
                %x : f32\n  tile.return\n}\n",
            "use of undefined value '%z'",
        ),
        (
            "dot with mismatched K",
            "tile.kernel @k() {grid = [1]} {\n  %a = tile.zeros : tile<64x32xf16>\n  %b = \
                tile.zeros : tile<16x64xf16>\n  %c = tile.zeros : tile<64x64xf32>\n  %d = tile.dot \
                %a, %b, %c : tile<64x64xf32>\n  tile.return\n}\n",
            "'tile.dot' contraction sizes differ: a is 64x32 (K = 32), b is 16x64 (K = 16)",
        ),
        ("unknown op", "tile.kernel @k() {grid = [1]} {\n  tile.teleport\n  \
            tile.return\n}\n", "unknown op 'tile.teleport'"),
        (
            "unknown attribute value",
            "tile.kernel @k(%a: index) {grid = [1]} {\n  %p = tile.cmpi %a, %a {predicate = \
                \"ult\"} : i1\n  tile.return\n}\n",
            "'tile.cmpi' attribute 'predicate' must be one of [\"eq\", \"ne\", \"slt\", \"sle\", \
                \"sgt\", \"sge\"], found \"ult\"",
        ),
        ("unknown type", "tile.kernel @k(%a: f64) {grid = [1]} {\n  tile.return\n}\n", "unknown \
            type 'f64'"),
        ("malformed attribute", "tile.kernel @k() {grid = [1} {\n  tile.return\n}\n", "expected \
            ']', found '}'"),
        ("huge integer", "tile.kernel @k() {grid = [99999999999999999999]} {\n  \
            tile.return\n}\n", "does not fit in 64 bits"),
        ("huge float", "tile.kernel @k() {grid = [1]} {\n  tile.barrier {x = 1e400}\n  \
            tile.return\n}\n", "is out of range"),
        ("stray brace", "}\n", "unexpected '}' at top level"),
        ("NUL bytes", "\0\0\0\0", "unexpected character '\\0'"),
    ];
    for (what, text, message) in cases {
        let r = run_bytes(&what.replace(' ', "_"), text.as_bytes(), &[]);
        r.assert_located_error(what, "input.tile");
        assert!(
            r.stderr.contains(message),
            "{what}: expected {message:?} in:\n{}",
            r.stderr
        );
        assert_eq!(r.stdout, "", "{what}: rejected input printed something");
        // The same through standard input, named <stdin>.
        let s = run_in(Path::new("."), &["-"], Some(text.as_bytes()));
        s.assert_located_error(what, "<stdin>");
    }
}

#[test]
fn invalid_utf8_points_at_the_first_bad_byte() {
    let mut bytes = b"tile.kernel @k() {grid = [1]} {\n  tile.barrier\n  // caf".to_vec();
    bytes.extend_from_slice(&[0xC3, 0x28]); // a lead byte without its continuation
    bytes.extend_from_slice(b"\n  tile.return\n}\n");
    let r = run_bytes("utf8", &bytes, &[]);
    r.assert_located_error("invalid UTF-8", "input.tile");
    assert!(
        r.stderr
            .starts_with("input.tile:3:9: error: input is not valid UTF-8 (byte offset 55)"),
        "{}",
        r.stderr
    );
    for flags in [&["--split-input-file"][..], &["--verify-diagnostics"][..]] {
        let r = run_bytes("utf8-flags", &bytes, flags);
        r.assert_located_error(&format!("invalid UTF-8 {flags:?}"), "input.tile");
    }
}

#[test]
fn ten_thousand_nested_regions_are_an_error_not_a_stack_overflow() {
    let mut text = String::from("tile.kernel @k(%c: i1) {grid = [1]} {\n");
    for _ in 0..10_000 {
        text.push_str("tile.if %c {\n");
    }
    for _ in 0..10_000 {
        text.push_str("tile.yield\n} {\ntile.yield\n}\n");
    }
    text.push_str("tile.return\n}\n");
    let r = run_bytes("deep", text.as_bytes(), &[]);
    r.assert_located_error("10,000-deep regions", "input.tile");
    assert!(
        r.stderr
            .contains("input.tile:129:12: error: regions nested deeper than 128 levels"),
        "{}",
        r.stderr
    );

    let arrays = format!(
        "tile.kernel @k() {{grid = [1]}} {{\n  tile.barrier {{a = {}{}}}\n  tile.return\n}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let r = run_bytes("deep-attr", arrays.as_bytes(), &[]);
    r.assert_located_error("10,000-deep attribute", "input.tile");
    assert!(
        r.stderr.contains("attribute nested deeper than 128 levels"),
        "{}",
        r.stderr
    );

    let expr = format!(
        "tile.kernel @k(%N: index) {{grid = [{}1{}]}} {{\n  tile.return\n}}\n",
        "add(%N, ".repeat(10_000),
        ")".repeat(10_000)
    );
    let r = run_bytes("deep-expr", expr.as_bytes(), &[]);
    r.assert_located_error("10,000-deep expression", "input.tile");
    assert!(
        r.stderr
            .contains("expression nested deeper than 128 levels"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_five_megabyte_valid_file_round_trips() {
    // The gemm example renamed 4,000 times: about 5 MB of printed IR.
    let one = gemm_printed();
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 5 << 20 {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&one.replace("@gemm_bf16", &format!("@gemm_{i}")));
        i += 1;
    }
    let start = std::time::Instant::now();
    let r = run_bytes("big", text.as_bytes(), &[]);
    let took = start.elapsed();
    r.assert_no_crash("5 MB file");
    assert_eq!(
        r.code,
        Some(0),
        "5 MB file rejected:\n{}",
        &r.stderr[..r.stderr.len().min(2000)]
    );
    assert!(
        r.stdout == text,
        "5 MB file did not print back identically ({} kernels)",
        i
    );
    // Generous even for a debug build: a slow-down of 10x or more is a bug.
    assert!(took.as_secs() < 60, "5 MB file took {took:?}");
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let r = run_in(Path::new("."), &["/nonexistent/dir/input.tile"], None);
    r.assert_no_crash("missing file");
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        "error: could not open input file '/nonexistent/dir/input.tile': No such \
            file or directory\n"
    );
    assert_eq!(r.stdout, "");
}

/// A failing run leaves no `-o` file behind (not even an empty one); a succeeding one
/// writes it.
#[test]
fn a_failed_run_creates_no_output_file() {
    let d = scratch("no-output");
    std::fs::write(
        d.join("bad.tile"),
        "tile.kernel @k() {grid = [1]} {\n  %x = tile.bogus\n}\n",
    )
    .expect("write input");
    let r = run_in(&d, &["bad.tile", "-o", "out.tile"], None);
    r.assert_no_crash("failed run with -o");
    assert_eq!(r.code, Some(1));
    assert!(
        !d.join("out.tile").exists(),
        "an output file was created: {}",
        r.stderr
    );
    std::fs::write(
        d.join("good.tile"),
        "tile.kernel @k() {grid = [1]} {\n  tile.return\n}\n",
    )
    .expect("write input");
    let r = run_in(&d, &["good.tile", "-o", "out.tile"], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = std::fs::read_to_string(d.join("out.tile")).expect("written");
    assert!(text.starts_with("tile.kernel @k()"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The rendered diagnostics, as a user sees them, for four representative errors: a
/// verifier error, a parser error with a note, several verifier errors of one op, invalid
/// UTF-8. The snapshots live in tests/snapshots/.
#[test]
fn rendered_diagnostics() {
    let dot = "tile.kernel @k() {grid = [1]} {\n  %a = tile.zeros : tile<64x32xf16>\n  %b = \
        tile.zeros : tile<16x64xf16>\n  %c = tile.zeros : tile<64x64xf32>\n  %d = tile.dot %a, %b, \
        %c : tile<64x64xf32>\n  tile.return\n}\n";
    insta::assert_snapshot!(
        "dot_mismatched_k",
        run_bytes("snap-dot", dot.as_bytes(), &[]).stderr
    );

    let open = "tile.kernel @k(%p: i1) {grid = [1]} {\n  tile.if %p {\n    tile.yield\n  } {\n    \
        tile.yield\n";
    insta::assert_snapshot!(
        "unterminated_region",
        run_bytes("snap-open", open.as_bytes(), &[]).stderr
    );

    let many = "tile.kernel @k(%n: index, %x: f32) {grid = [1]} {\n\t%r = tile.for %x, %n, %n, %x \
        : f16 {\n\t^bb0(%i: index, %a: f32):\n\t\ttile.yield %a\n\t}\n  tile.return\n}\n";
    insta::assert_snapshot!(
        "loop_errors",
        run_bytes("snap-many", many.as_bytes(), &[]).stderr
    );

    let mut bad = b"tile.kernel @k() {grid = [1]} {\n  tile.barrier {s = \"".to_vec();
    bad.extend_from_slice(&[0xFF, 0xFE]);
    bad.extend_from_slice(b"\"}\n  tile.return\n}\n");
    insta::assert_snapshot!("invalid_utf8", run_bytes("snap-utf8", &bad, &[]).stderr);
}
