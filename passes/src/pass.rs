//! What a pass is: its registry entry (name, summary, description, typed options with
//! defaults and help — the one source for `--list-passes`, `--help` and the docs), the
//! trait it implements, and the context it reports statistics and remarks into.

use std::collections::BTreeMap;
use std::fmt;
use tilec_dialect::{Diagnostic, Diagnostics, Module};

/// The type of a pass option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// An unsigned integer.
    UInt,
    /// `true` / `false`.
    Bool,
    /// Free text.
    Str,
    /// One of a fixed list of words.
    Enum(&'static [&'static str]),
}

impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionKind::UInt => f.write_str("uint"),
            OptionKind::Bool => f.write_str("bool"),
            OptionKind::Str => f.write_str("string"),
            OptionKind::Enum(v) => write!(f, "{}", v.join("|")),
        }
    }
}

/// One declared option of a pass.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    /// Its name in pipelines (`stages`).
    pub name: &'static str,
    /// Its type.
    pub kind: OptionKind,
    /// The default, as text.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// The registry entry of a pass.
#[derive(Clone, Copy, Debug)]
pub struct PassInfo {
    /// The flag name, kebab-case (`tile-to-gpu`).
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Paragraphs with an example.
    pub description: &'static str,
    /// Its options.
    pub options: &'static [OptionInfo],
}

/// Parsed option values of one pass instance, checked against its [`PassInfo`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    values: BTreeMap<String, String>,
}

impl PassOptions {
    /// Check `given` (name, value) pairs against `info` and fill in defaults.
    ///
    /// # Errors
    /// An unknown option name, one given twice, or a value of the wrong type, as a message.
    pub fn new(info: &PassInfo, given: &[(String, String)]) -> Result<Self, String> {
        let mut values = BTreeMap::new();
        for o in info.options {
            values.insert(o.name.to_string(), o.default.to_string());
        }
        for (i, (k, v)) in given.iter().enumerate() {
            if let Some((_, first)) = given[..i].iter().find(|(n, _)| n == k) {
                return Err(format!(
                    "pass '{}' option '{k}' is given twice ('{first}', then '{v}')",
                    info.name
                ));
            }
            let Some(o) = info.options.iter().find(|o| o.name == k) else {
                let known: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                return Err(if known.is_empty() {
                    format!("pass '{}' takes no options, found '{k}'", info.name)
                } else {
                    format!(
                        "pass '{}' has no option '{k}' (options: {})",
                        info.name,
                        known.join(", ")
                    )
                });
            };
            let ok = match o.kind {
                OptionKind::UInt => v.parse::<u64>().is_ok(),
                OptionKind::Bool => v == "true" || v == "false",
                OptionKind::Str => true,
                OptionKind::Enum(words) => words.contains(&v.as_str()),
            };
            if !ok {
                return Err(format!(
                    "pass '{}' option '{k}' expects {}, found '{v}'",
                    info.name, o.kind
                ));
            }
            values.insert(k.clone(), v.clone());
        }
        Ok(PassOptions { values })
    }

    /// The value of option `name` as text.
    ///
    /// # Panics
    /// If the pass did not declare `name` (a bug in the pass, not in user input).
    pub fn get(&self, name: &str) -> &str {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("undeclared pass option '{name}'"))
    }
    /// The value of an `UInt` option.
    pub fn uint(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }
    /// The value of a `Bool` option.
    pub fn bool(&self, name: &str) -> bool {
        self.get(name) == "true"
    }
    /// The options that differ from nothing: all, as `k=v` pairs in name order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// What a pass reports besides the IR: statistics (`--pass-statistics`) and remarks.
#[derive(Debug, Default)]
pub struct PassContext {
    /// Named counters, in the order first reported.
    pub statistics: Vec<(String, u64)>,
    /// Remarks and warnings the pass emitted (errors are returned instead).
    pub diagnostics: Vec<Diagnostic>,
}

impl PassContext {
    /// Add `n` to the statistic `name`.
    pub fn stat(&mut self, name: &str, n: u64) {
        match self.statistics.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v += n,
            None => self.statistics.push((name.to_string(), n)),
        }
    }
}

/// An IR-to-IR transformation or check.
pub trait Pass {
    /// Its registry entry.
    fn info(&self) -> &'static PassInfo;
    /// Run on the module.
    ///
    /// # Errors
    /// Diagnostics for input the pass cannot handle; the module may then be partly changed.
    fn run(&mut self, module: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics>;
}
