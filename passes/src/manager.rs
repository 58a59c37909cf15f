//! The pass registry and the pass manager: builds pass instances from a textual pipeline,
//! runs them in order, verifies the IR after each (switchable), times them and collects
//! their statistics.

use crate::pass::{Pass, PassContext, PassInfo, PassOptions};
use crate::pipeline::{parse_pipeline, PipelineElement};
use std::time::{Duration, Instant};
use tilec_dialect::{verify, DiagKind, Diagnostic, Diagnostics, Module};

/// A registered pass: its info and how to build it from checked options.
#[derive(Clone, Copy)]
pub struct RegistryEntry {
    /// Name, summary, description, options.
    pub info: &'static PassInfo,
    /// Build an instance.
    pub build: fn(&PassOptions) -> Result<Box<dyn Pass>, String>,
}

/// Every pass tilec has, in the order `--list-passes` prints them.
pub fn registry() -> &'static [RegistryEntry] {
    crate::REGISTRY
}

/// Look a pass up by name.
pub fn lookup(name: &str) -> Option<&'static RegistryEntry> {
    registry().iter().find(|e| e.info.name == name)
}

/// Statistics and timing of one pass run.
#[derive(Clone, Debug)]
pub struct PassRun {
    /// The pass name.
    pub name: String,
    /// Wall time of the pass itself (not of the verifier after it).
    pub time: Duration,
    /// Wall time of the verifier after it (zero when verification is off).
    pub verify_time: Duration,
    /// The pass's statistics.
    pub statistics: Vec<(String, u64)>,
}

/// What a pipeline run reports.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// One entry per pass, in order.
    pub passes: Vec<PassRun>,
    /// Remarks and warnings the passes emitted.
    pub diagnostics: Vec<Diagnostic>,
}

/// Runs a sequence of passes.
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    /// Run the verifier after each pass (default true).
    pub verify_each: bool,
}

/// The point of a pipeline at which the observer of [`PassManager::run`] is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Before the named pass runs.
    Before,
    /// After the named pass ran (and verified).
    After,
}

impl PassManager {
    /// An empty manager.
    pub fn new() -> Self {
        PassManager {
            passes: vec![],
            verify_each: true,
        }
    }

    /// Build a manager from pipeline text (`a,b{k=v}`).
    ///
    /// # Errors
    /// A syntax error, an unknown pass (with the list of known ones) or a bad option.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pm = PassManager::new();
        for el in parse_pipeline(text)? {
            pm.add_element(&el)?;
        }
        Ok(pm)
    }

    /// Add one pass by name and options.
    ///
    /// # Errors
    /// An unknown pass or a bad option.
    pub fn add_element(&mut self, el: &PipelineElement) -> Result<(), String> {
        let e = lookup(&el.name).ok_or_else(|| {
            let names: Vec<&str> = registry().iter().map(|e| e.info.name).collect();
            format!(
                "unknown pass '{}' (known passes: {})",
                el.name,
                names.join(", ")
            )
        })?;
        let opts = PassOptions::new(e.info, &el.options)?;
        self.passes.push((e.build)(&opts)?);
        Ok(())
    }

    /// Add a pass instance.
    pub fn add(&mut self, p: Box<dyn Pass>) {
        self.passes.push(p);
    }

    /// The names of the passes, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.info().name).collect()
    }

    /// Run every pass on `m`. `observe(pass, stage, module)` is called before and after each
    /// pass (for `--print-ir-before/after`).
    ///
    /// # Errors
    /// The first pass that fails, or IR that fails verification after a pass (each
    /// diagnostic then carries a note naming the pass).
    pub fn run(
        &mut self,
        m: &mut Module,
        observe: &mut dyn FnMut(&str, Stage, &Module),
    ) -> Result<RunReport, Diagnostics> {
        let mut report = RunReport::default();
        for p in &mut self.passes {
            let name = p.info().name;
            observe(name, Stage::Before, m);
            let mut cx = PassContext::default();
            let t0 = Instant::now();
            let r = p.run(m, &mut cx);
            let time = t0.elapsed();
            report.diagnostics.append(&mut cx.diagnostics);
            r?;
            let t1 = Instant::now();
            if self.verify_each {
                verify(m).map_err(|Diagnostics(ds)| {
                    Diagnostics(
                        ds.into_iter()
                            .map(|d| {
                                let loc = d.loc.clone();
                                d.with_kind(DiagKind::Internal).with_note(
                                    loc,
                                    format!(
                                        "pass '{name}' produced this op; its output does not \
                                         verify (a tilec bug: please report it)"
                                    ),
                                )
                            })
                            .collect(),
                    )
                })?;
            }
            let verify_time = if self.verify_each {
                t1.elapsed()
            } else {
                Duration::ZERO
            };
            observe(name, Stage::After, m);
            report.passes.push(PassRun {
                name: name.to_string(),
                time,
                verify_time,
                statistics: cx.statistics,
            });
        }
        Ok(report)
    }
}

impl Default for PassManager {
    fn default() -> Self {
        Self::new()
    }
}

/// The text `--list-passes` prints: each pass, its summary and its options with types,
/// defaults and help.
pub fn describe_passes() -> String {
    let mut s = String::new();
    for e in registry() {
        s.push_str(&format!("  --{:<26} {}\n", e.info.name, e.info.summary));
        for o in e.info.options {
            s.push_str(&format!(
                "      {}=<{}> (default: {})  {}\n",
                o.name, o.kind, o.default, o.help
            ));
        }
    }
    s
}
