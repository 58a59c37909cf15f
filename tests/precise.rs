//! Precise-output tests: each `tests/precise/**/*.tile` file holds its input (inline, or
//! named by `input=`) and, after the marker line, the whole expected output as `//`
//! comments, as Cranelift's precise-output filetests do. On a mismatch the test fails with a
//! unified diff; `TILEC_BLESS=1 cargo test --test precise` rewrites the expected output in
//! place (and creates the files of examples that have none).
//!
//! A file starts with one or more header lines of `key=value` words:
//!
//! ```text
//! // precise-output: input=examples/gemm_bf16.tile target=sm_90a
//! // precise-output: epilogue=tma
//! ```
//!
//! - `input`: the input file, relative to the workspace root (default: this file's text)
//! - `target`: lower for this target: the default pipeline of `tilec::Options::new(target)`, then
//!   the MLIR, manifest, PTX and `ptxas -v` of every kernel
//! - `pipeline`: run this tilec pipeline (`tile-opt` syntax, quoted when it has spaces) instead of
//!   the default one
//! - `stages`, `epilogue`, `schedule`, `cluster`, `group-m`, `simplify`, `opt-level`: the fields of
//!   `tilec::Options`
//! - `emit`: the sections to keep, a comma list of `ir`, `mlir`, `manifest`, `ptx`, `ptxas`
//!   (default: all)
//!
//! The output has one section per stage: `==== IR after PASS ====` for each pass (`(unchanged)`
//! when the pass left the text as it was), then per kernel `==== MLIR @k ====` (what
//! `convert-tile-to-nvvm` writes), `==== manifest @k ====`, `==== PTX @k ====` and
//! `==== ptxas @k ====` (the `ptxas -v` lines: registers, spills, shared memory). A stage that
//! fails ends the output with `==== error ====` and its diagnostics. `ptxas` comes from
//! `$PTXAS`, else `.venv` (scripts/install-deps.sh).
//!
//! Besides one test per file: every example × target (sm_90a, sm_90, sm_100, sm_100a) must
//! have a file; the harness itself is tested (a changed pass output fails with a diff, and
//! blessing fixes it); and every example compiled twice, the second time with every core
//! busy, gives the same bytes at every stage.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;
use tilec::dialect::{parse, print_module, verify, Diagnostics, Target, VerifiedModule};
use tilec::lowering::{convert_tile_to_nvvm, TargetSpec};
use tilec::passes::{PassManager, Stage};
use tilec::Options;

/// The line that separates a file's input from its expected output.
const MARKER: &str = "// ===== expected output =====";
/// The blessing variable.
const BLESS: &str = "TILEC_BLESS";
/// The sections `emit=` may name.
const SECTIONS: [&str; 5] = ["ir", "mlir", "manifest", "ptx", "ptxas"];
/// The targets every example is snapshotted for.
const TARGETS: [Target; 4] = [Target::Sm90a, Target::Sm90, Target::Sm100, Target::Sm100a];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn precise_root() -> PathBuf {
    root().join("tests/precise")
}

/// A precise-output file, read.
struct TestFile {
    /// Everything before the marker line: header, comments, inline input.
    head: String,
    /// The expected output (comment prefixes removed); `None` without a marker.
    expected: Option<String>,
    /// The header's `key=value` pairs, in order.
    keys: Vec<(String, String)>,
}

/// Split a header line's text into `key=value` words (`'...'` quotes a value).
fn header_words(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = vec![];
    let mut rest = s.trim();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("expected key=value, found '{rest}'"))?;
        let key = rest[..eq].trim().to_string();
        let after = &rest[eq + 1..];
        let (value, next) = if let Some(q) = after.strip_prefix('\'') {
            let end = q
                .find('\'')
                .ok_or_else(|| format!("unterminated quote in '{rest}'"))?;
            (q[..end].to_string(), &q[end + 1..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (after[..end].to_string(), &after[end..])
        };
        out.push((key, value));
        rest = next.trim_start();
    }
    Ok(out)
}

fn read_test(path: &Path) -> Result<TestFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (head, expected) = match text.find(&format!("\n{MARKER}\n")) {
        Some(at) => {
            let body = &text[at + MARKER.len() + 2..];
            let lines: Vec<&str> = body
                .lines()
                .map(|l| {
                    l.strip_prefix("// ")
                        .or_else(|| l.strip_prefix("//"))
                        .unwrap_or(l)
                })
                .collect();
            (text[..at + 1].to_string(), Some(lines.join("\n") + "\n"))
        }
        None => (text.clone(), None),
    };
    let mut keys = vec![];
    for l in head.lines() {
        if let Some(h) = l.strip_prefix("// precise-output:") {
            keys.extend(header_words(h).map_err(|e| format!("{}: {e}", path.display()))?);
        }
    }
    if keys.is_empty() {
        return Err(format!(
            "{}: no '// precise-output:' header line",
            path.display()
        ));
    }
    Ok(TestFile {
        head,
        expected,
        keys,
    })
}

/// What to run, from a header.
struct Spec {
    input: Option<String>,
    target: Option<Target>,
    pipeline: Option<String>,
    opts: Option<Options>,
    emit: Vec<String>,
}

fn parse_spec(keys: &[(String, String)]) -> Result<Spec, String> {
    let get = |k: &str| {
        keys.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    for (i, (k, _)) in keys.iter().enumerate() {
        if keys[..i].iter().any(|(earlier, _)| earlier == k) {
            return Err(format!("header key '{k}' is given twice"));
        }
        let known = [
            "input",
            "target",
            "pipeline",
            "stages",
            "epilogue",
            "schedule",
            "cluster",
            "group-m",
            "simplify",
            "opt-level",
            "emit",
        ];
        if !known.contains(&k.as_str()) {
            return Err(format!(
                "unknown header key '{k}' (known: {})",
                known.join(", ")
            ));
        }
    }
    let target = get("target")
        .map(|t| {
            Target::from_name(t)
                .ok_or_else(|| format!("unknown target '{t}' (known: {})", Target::names()))
        })
        .transpose()?;
    let opts = match target {
        Some(t) => {
            // The option keys are `Options::set`'s names (hyphens for underscores).
            let mut o = Options::new(t);
            for k in [
                "stages",
                "cluster",
                "group-m",
                "opt-level",
                "simplify",
                "epilogue",
                "schedule",
            ] {
                if let Some(v) = get(k) {
                    o.set(k, v).map_err(|e| e.to_string())?;
                }
            }
            Some(o)
        }
        None => None,
    };
    let emit: Vec<String> = get("emit")
        .unwrap_or("ir,mlir,manifest,ptx,ptxas")
        .split(',')
        .map(str::to_string)
        .collect();
    if let Some(bad) = emit.iter().find(|e| !SECTIONS.contains(&e.as_str())) {
        return Err(format!(
            "emit: unknown section '{bad}' (known: {})",
            SECTIONS.join(", ")
        ));
    }
    if target.is_none() && get("pipeline").is_none() {
        return Err("the header needs target= or pipeline=".to_string());
    }
    Ok(Spec {
        input: get("input").map(str::to_string),
        target,
        pipeline: get("pipeline").map(str::to_string),
        opts,
        emit,
    })
}

mod common;

/// `ptxas` from `$PTXAS`, else the `nvidia-cuda-nvcc` wheel in `.venv`.
fn ptxas() -> Result<PathBuf, String> {
    common::nv_tool("ptxas", "PTXAS")
}

/// `ptxas -v`'s report for `ptx` on `target`: its `info` and `warning` lines, as printed,
/// less the compile time.
fn ptxas_report(ptx: &str, target: Target, tag: &str) -> String {
    let exe = match ptxas() {
        Ok(p) => p,
        Err(e) => return format!("error: {e}\n"),
    };
    let dir = std::env::temp_dir().join(format!("tilec-precise-{}-{tag}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("k.ptx");
    if let Err(e) = std::fs::write(&file, ptx) {
        return format!("error: cannot write {}: {e}\n", file.display());
    }
    let out = Command::new(exe)
        .arg(format!("-arch={}", target.name()))
        .arg("-v")
        .arg(&file)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr).to_string()
                + &String::from_utf8_lossy(&o.stdout);
            // Everything but the wall time ptxas reports of itself.
            let mut s: String = text
                .lines()
                .filter(|l| !l.contains("Compile time ="))
                .map(|l| l.replace(&*file.to_string_lossy(), "k.ptx") + "\n")
                .collect();
            if !o.status.success() {
                s.push_str(&format!("ptxas failed: {}\n", o.status));
            }
            s
        }
        Err(e) => format!("error: cannot run ptxas: {e}\n"),
    }
}

/// A hook that may change a stage's output before it is recorded (tests of the harness).
type Hook<'a> = &'a dyn Fn(&str, &mut String);

/// The output of `spec` on `source` (named `file` in diagnostics).
fn produce(
    spec: &Spec,
    source: &str,
    file: &str,
    tag: &str,
    ptxas_too: bool,
    hook: Hook,
) -> String {
    let mut out = String::new();
    let section = |out: &mut String, name: &str, text: &str| {
        let mut t = text.to_string();
        hook(name, &mut t);
        out.push_str(&format!("==== {name} ====\n"));
        out.push_str(&t);
        if !t.ends_with('\n') {
            out.push('\n');
        }
    };
    let fail = |out: &mut String, d: &Diagnostics| {
        out.push_str("==== error ====\n");
        out.push_str(&d.render(Some(source)));
    };
    let want = |s: &str| spec.emit.iter().any(|e| e == s);
    let mut module = match parse(source, file) {
        Ok(m) => m,
        Err(d) => {
            fail(&mut out, &d);
            return out;
        }
    };
    if let Err(d) = verify(&module) {
        fail(&mut out, &d);
        return out;
    }
    let pipeline = match (&spec.pipeline, &spec.opts) {
        (Some(p), _) => p.clone(),
        (None, Some(o)) => o.pipeline(),
        (None, None) => unreachable!("checked by parse_spec"),
    };
    // A pipeline that does not parse is a header error (check_file reports it), never an
    // expected output.
    let Ok(mut pm) = PassManager::parse(&pipeline) else {
        return String::new();
    };
    let mut previous = print_module(&module);
    let mut sections: Vec<(String, String)> = vec![];
    let result = pm.run(&mut module, &mut |pass, stage, m| {
        if stage == Stage::After {
            let text = print_module(m);
            let shown = if text == previous {
                "(unchanged)\n".to_string()
            } else {
                text.clone()
            };
            sections.push((format!("IR after {pass}"), shown));
            previous = text;
        }
    });
    if want("ir") {
        for (name, text) in &sections {
            section(&mut out, name, text);
        }
    }
    match result {
        Ok(report) if !report.diagnostics.is_empty() => {
            out.push_str("==== diagnostics ====\n");
            out.push_str(&Diagnostics(report.diagnostics).render(Some(source)));
        }
        Ok(_) => {}
        Err(d) => {
            fail(&mut out, &d);
            return out;
        }
    }
    let (Some(target), Some(opts)) = (spec.target, &spec.opts) else {
        return out;
    };
    let vm = match VerifiedModule::new(module) {
        Ok(vm) => vm,
        Err(d) => {
            fail(&mut out, &d);
            return out;
        }
    };
    let kernels = match convert_tile_to_nvvm(&vm) {
        Ok(k) => k,
        Err(d) => {
            fail(&mut out, &Diagnostics(vec![d]));
            return out;
        }
    };
    for k in kernels {
        let name = k.manifest.kernel.clone();
        if want("mlir") {
            section(&mut out, &format!("MLIR @{name}"), &k.mlir());
        }
        if want("manifest") {
            section(
                &mut out,
                &format!("manifest @{name}"),
                &k.manifest.to_json(),
            );
        }
        if !want("ptx") && !want("ptxas") {
            continue;
        }
        let mut ts = TargetSpec::new(target.name(), k.ptx_version);
        ts.opt_level = opts.opt_level.level();
        match k.to_ptx(&ts) {
            Ok((ptx, _)) => {
                if want("ptx") {
                    section(&mut out, &format!("PTX @{name}"), &ptx);
                }
                if want("ptxas") && ptxas_too {
                    section(
                        &mut out,
                        &format!("ptxas @{name}"),
                        &ptxas_report(&ptx, target, tag),
                    );
                }
            }
            Err(e) => {
                out.push_str(&format!("==== error ====\nMLIR: {e}\n"));
                return out;
            }
        }
    }
    out
}

/// The input text of a test and its name in diagnostics.
fn input_of(t: &TestFile, spec: &Spec, path: &Path) -> Result<(String, String), String> {
    match &spec.input {
        Some(i) => {
            let p = root().join(i);
            let s =
                std::fs::read_to_string(&p).map_err(|e| format!("input {}: {e}", p.display()))?;
            Ok((s, i.clone()))
        }
        None => {
            let name = path
                .strip_prefix(root())
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned();
            Ok((t.head.clone(), name))
        }
    }
}

/// The file's text with `output` as its expected output.
fn blessed_text(head: &str, output: &str) -> String {
    let mut s = head.to_string();
    s.push_str(MARKER);
    s.push('\n');
    for l in output.lines() {
        if l.is_empty() {
            s.push_str("//\n");
        } else {
            s.push_str("// ");
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// Check (or, with `bless`, rewrite) one file.
fn check_file(path: &Path, bless: bool, hook: Hook) -> Result<(), String> {
    let t = read_test(path)?;
    let spec = parse_spec(&t.keys).map_err(|e| format!("{}: {e}", path.display()))?;
    let (source, file) = input_of(&t, &spec, path)?;
    if let Some(p) = &spec.pipeline {
        PassManager::parse(p).map_err(|e| format!("{}: pipeline '{p}': {e}", path.display()))?;
    }
    let tag = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let actual = produce(&spec, &source, &file, &tag, true, hook);
    if t.expected.as_deref() == Some(actual.as_str()) {
        return Ok(());
    }
    if bless {
        std::fs::write(path, blessed_text(&t.head, &actual))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let expected = t.expected.unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&expected, &actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string();
    Err(format!(
        "{}: the output differs from the expected output (- expected, + actual);\n\
            if the change is intended, re-bless with {BLESS}=1 cargo test --test precise\n{diff}",
        path.strip_prefix(root()).unwrap_or(path).display()
    ))
}

fn discover(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            discover(&p, out);
        } else if p.extension().is_some_and(|x| x == "tile") {
            out.push(p);
        }
    }
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".tile"))
        .collect();
    v.sort();
    v
}

/// The file of an example × target.
fn example_file(example: &str, target: Target) -> PathBuf {
    let stem = example.trim_end_matches(".tile");
    precise_root()
        .join("examples")
        .join(format!("{stem}.{}.tile", target.name()))
}

/// Every example × target has a file; with `bless`, missing ones are created.
fn coverage(bless: bool) -> Result<(), String> {
    let mut missing = vec![];
    for ex in examples() {
        for t in TARGETS {
            let f = example_file(&ex, t);
            if f.exists() {
                continue;
            }
            if bless {
                let head = format!(
                    "// precise-output: input=examples/{ex} target={}\n// The default pipeline \
                        for {} on examples/{ex}; {BLESS}=1 cargo test --test precise re-blesses \
                        it.\n",
                    t.name(),
                    t.name()
                );
                std::fs::create_dir_all(f.parent().expect("has a folder"))
                    .map_err(|e| e.to_string())?;
                std::fs::write(&f, &head).map_err(|e| e.to_string())?;
                check_file(&f, true, &|_, _| {})?;
            } else {
                missing.push(f.strip_prefix(root()).unwrap_or(&f).display().to_string());
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "no precise-output file for: {}; create them with {BLESS}=1",
            missing.join(", ")
        ))
    }
}

/// A changed pass output fails with a diff that shows the change; blessing fixes it.
fn harness_self_test() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("tilec-precise-self-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("waits.tile");
    let head = "// precise-output: input=examples/gemm_bf16.tile \
        pipeline='tile-to-gpu{target=sm_90a},async-wait-placement'\n";
    std::fs::write(&file, head).map_err(|e| e.to_string())?;
    let none: Hook = &|_, _| {};
    // A pass whose output changed: the loop's wait N from 1 to 2.
    let changed: Hook = &|name, text| {
        if name == "IR after async-wait-placement" {
            *text = text.replace("{pending = 1}", "{pending = 2}");
        }
    };
    check_file(&file, true, none)?;
    check_file(&file, false, none).map_err(|e| format!("a freshly blessed file fails: {e}"))?;
    let err = match check_file(&file, false, changed) {
        Ok(()) => return Err("a changed pass output passed".into()),
        Err(e) => e,
    };
    let minus = err
        .lines()
        .any(|l| l.starts_with('-') && l.contains("{pending = 1}"));
    let plus = err
        .lines()
        .any(|l| l.starts_with('+') && l.contains("{pending = 2}"));
    if !minus || !plus || !err.contains("@@ ") {
        return Err(format!(
            "the failure does not show the change as a unified diff:\n{err}"
        ));
    }
    check_file(&file, true, changed)?;
    check_file(&file, false, changed).map_err(|e| format!("blessing did not fix it: {e}"))?;
    if check_file(&file, false, none).is_ok() {
        return Err("after blessing the changed output, the old output still passes".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Every example through the default pipeline twice, the second time with every core busy:
/// the same bytes at every stage (ptxas left out: it is not ours).
fn deterministic_under_load() -> Result<(), String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let run_all = || -> Result<Vec<String>, String> {
        let mut v = vec![];
        for ex in examples() {
            let src = std::fs::read_to_string(root().join("examples").join(&ex))
                .map_err(|e| e.to_string())?;
            for t in [Target::Sm90a, Target::Sm100a] {
                let keys = vec![("target".to_string(), t.name().to_string())];
                let spec = parse_spec(&keys)?;
                v.push(produce(&spec, &src, &ex, "det", false, &|_, _| {}));
            }
        }
        Ok(v)
    };
    let first = run_all()?;
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) * 2;
    let load: Vec<_> = (0..cores)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = i as u64 + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    let second = run_all();
    stop.store(true, Ordering::Relaxed);
    for h in load {
        let _ = h.join();
    }
    let second = second?;
    for (a, b) in first.iter().zip(&second) {
        if a != b {
            let diff = similar::TextDiff::from_lines(a, b)
                .unified_diff()
                .context_radius(2)
                .to_string();
            return Err(format!("two compiles of one input differ:\n{diff}"));
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let bless = std::env::var(BLESS).is_ok_and(|v| !v.is_empty() && v != "0");
    let mut trials = vec![Trial::test("precise/coverage", move || {
        coverage(bless).map_err(Failed::from)
    })];
    trials.push(Trial::test("precise/harness", || {
        harness_self_test().map_err(Failed::from)
    }));
    trials.push(Trial::test("precise/deterministic-under-load", || {
        deterministic_under_load().map_err(Failed::from)
    }));
    let mut files = vec![];
    discover(&precise_root(), &mut files);
    files.sort();
    for f in files {
        let name = f
            .strip_prefix(root())
            .unwrap_or(&f)
            .to_string_lossy()
            .replace(".tile", "");
        let name = name.trim_start_matches("tests/").to_string();
        trials.push(Trial::test(name, move || {
            check_file(&f, bless, &|_, _| {}).map_err(Failed::from)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}
