//! `tile-opt`: the opt-style driver of tilec's passes, as `mlir-opt` is for MLIR's.
//!
//! ```text
//! tile-opt [FILE|-] [-o OUT] [--pass-pipeline=PIPELINE | --PASS[=OPTIONS] ...]
//!          [--split-input-file] [--verify-diagnostics] [--print-ir-after-all]
//!          [--print-ir-before=PASS] [--print-ir-after=PASS] [--timing]
//!          [--pass-statistics] [--verify-each=false] [--list-passes] [--list-ops]
//!          [--convert-tile-to-nvvm] [-D NAME=VALUE]...
//! ```
//! `--list-ops` prints the dialect's op table: each op's spelling, summary and detail.
//! `-D BM=64` binds the kernel constant `BM` (`tile.kernel @k<BM = 128>`), as
//! `tile-compile -D` does.
//! `--convert-tile-to-nvvm` (or a pipeline ending in `convert-tile-to-nvvm`) runs the
//! lowering after the passes and prints the MLIR module of each kernel (`gpu`, `nvvm` and
//! `llvm` dialects) instead of tile IR; the input must then be GPU-level IR (after
//! `tile-to-gpu` or `tile-assign-layouts`). It leaves tile IR, so it comes last.
//! Exit codes: 0 success, 1 diagnostics (bad IR, failed pass, mismatched expectations),
//! 2 usage.

#[path = "../common.rs"]
mod common;

use clap::{Arg, ArgAction, Command};
use common::*;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tilec::lowering::convert_tile_to_nvvm;
use tilec_dialect::{
    expected, parser, print_module, verify, Diagnostic, Diagnostics, Module, VerifiedModule,
};
use tilec_passes::{describe_passes, registry, PassManager, PipelineElement, Stage};

fn cli() -> Command {
    let mut cmd = Command::new("tile-opt")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Run tilec passes on tile IR (like mlir-opt)")
        .after_help(format!(
            "Passes (also usable as --pass-pipeline='a,b{{opt=v}}'):\n{}",
            describe_passes()
        ))
        .arg(
            Arg::new("input")
                .default_value("-")
                .help("Input file, or - for standard input"),
        )
        .arg(
            Arg::new("output")
                .short('o')
                .value_name("FILE")
                .help("Output file (default: standard output)"),
        )
        .arg(
            Arg::new("pass-pipeline")
                .long("pass-pipeline")
                .value_name("PIPELINE")
                .help("Textual pipeline, e.g. 'cse,dce'"),
        )
        .arg(
            Arg::new("split-input-file")
                .long("split-input-file")
                .action(ArgAction::SetTrue)
                .help("Process each '// -----' piece of the input on its own"),
        )
        .arg(
            Arg::new("verify-diagnostics")
                .long("verify-diagnostics")
                .action(ArgAction::SetTrue)
                .help("Check diagnostics against 'expected-error@+N {{...}}' comments"),
        )
        .arg(
            Arg::new("print-ir-after-all")
                .long("print-ir-after-all")
                .action(ArgAction::SetTrue)
                .help("Print the IR to stderr after every pass"),
        )
        .arg(
            Arg::new("print-ir-before")
                .long("print-ir-before")
                .value_name("PASS")
                .action(ArgAction::Append)
                .help("Print the IR to stderr before PASS"),
        )
        .arg(
            Arg::new("print-ir-after")
                .long("print-ir-after")
                .value_name("PASS")
                .action(ArgAction::Append)
                .help("Print the IR to stderr after PASS"),
        )
        .arg(
            Arg::new("define")
                .short('D')
                .long("define")
                .value_name("NAME=VALUE")
                .action(ArgAction::Append)
                .value_parser(|s: &str| tilec::parse_define(s).map_err(|e| e.reason))
                .help("Bind a kernel constant (tile.kernel @k<BM = 128>); repeatable"),
        )
        .arg(
            Arg::new("timing")
                .long("timing")
                .action(ArgAction::SetTrue)
                .help("Print the time of parsing, each pass, verification and printing to stderr"),
        )
        .arg(
            Arg::new("pass-statistics")
                .long("pass-statistics")
                .action(ArgAction::SetTrue)
                .help("Print each pass's statistics to stderr"),
        )
        .arg(
            Arg::new("verify-each")
                .long("verify-each")
                .value_name("BOOL")
                .value_parser(clap::value_parser!(bool))
                .default_value("true")
                .help("Run the verifier after each pass"),
        )
        .arg(Arg::new(LOWER).long(LOWER).action(ArgAction::SetTrue).help(
            "Lower the GPU-level result to MLIR (gpu/nvvm/llvm dialects) and print \
                     that instead of tile IR; the last step of any pipeline",
        ))
        .arg(
            Arg::new("list-passes")
                .long("list-passes")
                .action(ArgAction::SetTrue)
                .help("List the passes with their options and exit"),
        )
        .arg(
            Arg::new("list-ops")
                .long("list-ops")
                .action(ArgAction::SetTrue)
                .help("List the ops of the tile dialect (summary and detail) and exit"),
        );
    for e in registry() {
        cmd = cmd.arg(
            Arg::new(e.info.name)
                .long(e.info.name)
                .value_name("OPTIONS")
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
                .action(ArgAction::Append)
                .help(e.info.summary),
        );
    }
    cmd
}

/// The lowering, as a pass name: `--convert-tile-to-nvvm`, or last in `--pass-pipeline`.
const LOWER: &str = "convert-tile-to-nvvm";

fn main() {
    exit_now(run());
}

/// Splits a trailing `convert-tile-to-nvvm` off a textual pipeline: the tile passes before
/// it, and whether it was there. Elsewhere in the pipeline it is a usage error.
fn split_lowering(text: &str) -> Result<(String, bool), String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    match parts
        .iter()
        .position(|p| *p == LOWER || p.starts_with("convert-tile-to-nvvm{"))
    {
        None => Ok((text.to_string(), false)),
        Some(i) if i + 1 == parts.len() && parts[i] == LOWER => Ok((parts[..i].join(","), true)),
        Some(i) if i + 1 == parts.len() => Err(format!("'{LOWER}' takes no options")),
        Some(_) => Err(format!(
            "'{LOWER}' leaves tile IR, so it must be the last element of the pipeline"
        )),
    }
}

fn run() -> i32 {
    let m = match cli().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    if m.get_flag("list-passes") {
        print!("Available passes:\n{}", describe_passes());
        return EXIT_OK;
    }
    if m.get_flag("list-ops") {
        // Written at once: a reader that closes the pipe early ends the write quietly.
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), op_table().as_bytes());
        return EXIT_OK;
    }
    // The pipeline: --pass-pipeline, or the per-pass flags in command-line order.
    let mut elements: Vec<(usize, PipelineElement)> = vec![];
    for e in registry() {
        let id = e.info.name;
        if let (Some(vals), Some(idx)) = (m.get_many::<String>(id), m.indices_of(id)) {
            for (v, i) in vals.zip(idx) {
                let options = v.split_whitespace().map(|w| match w.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (w.to_string(), String::new()),
                });
                elements.push((
                    i,
                    PipelineElement {
                        name: e.info.name.to_string(),
                        options: options.collect(),
                    },
                ));
            }
        }
    }
    elements.sort_by_key(|(i, _)| *i);
    let (pipeline_text, lower_in_text) = match m.get_one::<String>("pass-pipeline") {
        Some(t) => match split_lowering(t) {
            Ok((t, lower)) => (Some(t), lower),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        },
        None => (None, false),
    };
    let lower = lower_in_text || m.get_flag(LOWER);
    if let Some(at) = m.indices_of(LOWER).and_then(|mut i| i.next()) {
        if elements.iter().any(|(i, _)| *i > at) {
            eprintln!("error: '--{LOWER}' leaves tile IR, so it must come after every pass");
            return EXIT_USAGE;
        }
    }
    let pipeline_text = pipeline_text.as_ref();
    if pipeline_text.is_some() && !elements.is_empty() {
        eprintln!("error: give passes either with --pass-pipeline or as flags, not both");
        return EXIT_USAGE;
    }
    let build = || -> Result<PassManager, String> {
        match pipeline_text {
            Some(t) => PassManager::parse(t),
            None => {
                let mut pm = PassManager::new();
                for (_, el) in &elements {
                    pm.add_element(el)?;
                }
                Ok(pm)
            }
        }
    };
    if let Err(e) = build() {
        eprintln!("error: {e}");
        return EXIT_USAGE;
    }
    let known: Vec<&str> = registry().iter().map(|e| e.info.name).collect();
    let before: Vec<String> = m
        .get_many::<String>("print-ir-before")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let after: Vec<String> = m
        .get_many::<String>("print-ir-after")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    for p in before.iter().chain(&after) {
        if !known.contains(&p.as_str()) {
            eprintln!("error: unknown pass '{p}' in --print-ir-before/--print-ir-after");
            return EXIT_USAGE;
        }
    }
    let defines: Vec<(String, i64)> = m
        .get_many::<(String, i64)>("define")
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    for (i, (n, _)) in defines.iter().enumerate() {
        if defines[..i].iter().any(|(d, _)| d == n) {
            eprintln!("error: -D {n} is given twice");
            return EXIT_USAGE;
        }
    }
    let input = m.get_one::<String>("input").expect("default");
    let (name, src) = match read_source(input) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let src = src.as_str();
    let opts = RunOpts {
        verify_diagnostics: m.get_flag("verify-diagnostics"),
        print_after_all: m.get_flag("print-ir-after-all"),
        before,
        after,
        statistics: m.get_flag("pass-statistics"),
        verify_each: *m.get_one::<bool>("verify-each").expect("default"),
        lower,
        constants: defines.into_iter().collect(),
        declared: Default::default(),
    };
    let chunks = if m.get_flag("split-input-file") {
        parser::split_input(src)
    } else {
        vec![(src, 1)]
    };
    let file: Arc<str> = Arc::from(name.as_str());
    let mut outputs = vec![];
    let mut failed = false;
    let mut timing = Timing::default();
    for (i, (chunk, first_line)) in chunks.into_iter().enumerate() {
        // Statistics go to stderr chunk by chunk: separate them as stdout's pieces are.
        if i > 0 && opts.statistics {
            eprintln!("// -----");
        }
        let mut pm = build().expect("checked above");
        pm.verify_each = opts.verify_each;
        match process(chunk, first_line, &file, src, &mut pm, &opts, &mut timing) {
            Ok(Some(text)) => outputs.push(text),
            Ok(None) => {}
            Err(()) => failed = true,
        }
    }
    let declared = opts.declared.borrow();
    // After a piece that failed (or whose errors were expected) the declarations it held
    // are unknown: its errors stand alone.
    let check = !failed && !opts.verify_diagnostics;
    let undeclared = opts
        .constants
        .keys()
        .filter(|n| check && !declared.contains(*n));
    for n in undeclared.collect::<Vec<_>>() {
        eprintln!(
            "{name}: error: constant '{n}' is bound (-D) but no kernel of the input declares it"
        );
        failed = true;
        outputs.clear();
    }
    drop(declared);
    let t0 = Instant::now();
    let text = outputs.join("// -----\n");
    // Nothing is written when nothing succeeded (an `-o` file is not created empty), nor
    // for --verify-diagnostics with no output.
    let nothing = (opts.verify_diagnostics && text.is_empty()) || (failed && outputs.is_empty());
    if !nothing {
        if let Err(e) = write_output(m.get_one::<String>("output").map(String::as_str), &text) {
            eprintln!("{e}");
            return EXIT_DIAGNOSTICS;
        }
    }
    timing.print += t0.elapsed();
    if m.get_flag("timing") {
        timing.report();
    }
    if failed {
        EXIT_DIAGNOSTICS
    } else {
        EXIT_OK
    }
}

struct RunOpts {
    /// Print the lowered MLIR (`--convert-tile-to-nvvm`) instead of the tile IR.
    lower: bool,
    verify_diagnostics: bool,
    print_after_all: bool,
    before: Vec<String>,
    after: Vec<String>,
    statistics: bool,
    verify_each: bool,
    /// `-D` bindings of kernel constants.
    constants: std::collections::BTreeMap<String, i64>,
    /// The constants declared by the kernels parsed so far: a `-D` that none declares is
    /// an error once every piece is read.
    declared: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

#[derive(Default)]
struct Timing {
    parse: Duration,
    verify: Duration,
    passes: Vec<(String, Duration)>,
    print: Duration,
}

impl Timing {
    fn report(&self) {
        let total = self.parse
            + self.verify
            + self.print
            + self.passes.iter().map(|p| p.1).sum::<Duration>();
        eprintln!(
            "===-------------------------------------------------------------------------==="
        );
        eprintln!("                         ... Execution time report ...");
        eprintln!(
            "===-------------------------------------------------------------------------==="
        );
        eprintln!("  Total Execution Time: {:.4} ms", ms(total));
        eprintln!("  {:>10}  Name", "Wall (ms)");
        eprintln!("  {:>10.4}  Parser", ms(self.parse));
        eprintln!("  {:>10.4}  Verifier", ms(self.verify));
        for (n, d) in &self.passes {
            eprintln!("  {:>10.4}  {n}", ms(*d));
        }
        eprintln!("  {:>10.4}  Output", ms(self.print));
        eprintln!("  {:>10.4}  Total", ms(total));
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Parse, verify, run the pipeline and print one chunk. `Ok(None)`: nothing to print.
fn process(
    chunk: &str,
    first_line: u32,
    file: &Arc<str>,
    whole: &str,
    pm: &mut PassManager,
    o: &RunOpts,
    timing: &mut Timing,
) -> Result<Option<String>, ()> {
    let mut produced: Vec<Diagnostic> = vec![];
    let t0 = Instant::now();
    let bindings = tilec_dialect::ConstantBindings::new(o.constants.clone());
    let parsed = parser::parse_chunk_with_constants(chunk, file, first_line, &bindings);
    timing.parse += t0.elapsed();
    let result: Result<Module, Diagnostics> = (|| {
        let mut module = parsed?;
        for k in module.kernels() {
            if let Some(d) = k
                .attr("constants")
                .and_then(tilec_dialect::Attribute::as_dict)
            {
                o.declared.borrow_mut().extend(d.keys().cloned());
            }
        }
        let t1 = Instant::now();
        let v = verify(&module);
        timing.verify += t1.elapsed();
        v?;
        let mut observe = |pass: &str, stage: Stage, m: &Module| {
            let want = match stage {
                Stage::Before => o.before.iter().any(|p| p == pass),
                Stage::After => o.print_after_all || o.after.iter().any(|p| p == pass),
            };
            if want {
                let what = if stage == Stage::Before {
                    "Before"
                } else {
                    "After"
                };
                eprint!(
                    "// -----// IR Dump {what} {pass} //----- //\n{}\n",
                    print_module(m)
                );
            }
        };
        let report = pm.run(&mut module, &mut observe)?;
        for p in &report.passes {
            timing.passes.push((p.name.clone(), p.time));
            timing.verify += p.verify_time;
        }
        produced.extend(report.diagnostics.iter().cloned());
        if o.statistics {
            eprintln!(
                "===-------------------------------------------------------------------------==="
            );
            eprintln!("                         ... Pass statistics report ...");
            eprintln!(
                "===-------------------------------------------------------------------------==="
            );
            for p in &report.passes {
                eprintln!("'{}'", p.name);
                for (k, v) in &p.statistics {
                    eprintln!("  ({v}) {k}");
                }
            }
        }
        Ok(module)
    })();
    let module = match result {
        Ok(m) => Some(m),
        Err(Diagnostics(ds)) => {
            produced.extend(ds);
            None
        }
    };
    // The lowering, after the passes: its output replaces the tile IR.
    let mut lowered: Option<String> = None;
    if o.lower {
        if let Some(m) = &module {
            let t0 = Instant::now();
            match VerifiedModule::new(m.clone()) {
                Err(Diagnostics(ds)) => produced.extend(ds),
                Ok(vm) => match convert_tile_to_nvvm(&vm) {
                    Ok(ks) => {
                        lowered = Some(ks.iter().map(|k| k.mlir() + "\n").collect::<String>())
                    }
                    Err(d) => produced.push(d),
                },
            }
            timing.passes.push((LOWER.to_string(), t0.elapsed()));
        }
    }
    let render = |m: &Module| match &lowered {
        Some(text) => text.clone(),
        None => print_module(m),
    };
    let lowering_failed = o.lower && lowered.is_none();
    if o.verify_diagnostics {
        let exp = match expected::collect(chunk, file, first_line) {
            Ok(e) => e,
            Err(d) => {
                eprint_diags(&d.into(), Some(whole));
                return Err(());
            }
        };
        let mismatches = expected::check(&exp, &produced);
        if !mismatches.is_empty() {
            eprint_diags(&Diagnostics(mismatches), Some(whole));
            return Err(());
        }
        return Ok(module.filter(|_| !lowering_failed).map(|m| render(&m)));
    }
    // Warnings and remarks are printed; errors fail the chunk.
    let has_errors = produced
        .iter()
        .any(|d| d.severity == tilec_dialect::Severity::Error);
    if !produced.is_empty() {
        eprint_diags(&Diagnostics(produced), Some(whole));
    }
    match module {
        Some(m) if !has_errors && !lowering_failed => Ok(Some(render(&m))),
        _ => Err(()),
    }
}

/// The op table as text: each op's spelling and summary, then its detail indented by 4 and
/// wrapped at 96 columns between words, GPU-level ops (written by `tile-to-gpu`) marked.
fn op_table() -> String {
    let mut out = String::from("Ops of the tile dialect:\n");
    for &k in tilec_dialect::OpKind::ALL {
        let level = if k.is_gpu_level() { " [GPU level]" } else { "" };
        out += &format!("  {}{level}: {}\n", k.name(), k.summary());
        let mut line = String::new();
        for w in k.detail().split_whitespace() {
            if !line.is_empty() && line.len() + 1 + w.len() > 92 {
                out += &format!("    {line}\n");
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line += w;
        }
        if !line.is_empty() {
            out += &format!("    {line}\n");
        }
    }
    out
}
