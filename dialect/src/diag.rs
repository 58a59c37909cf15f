//! Diagnostics: errors, warnings and notes with a location, rendered as
//! `file:line:col: error: message`, the source line, and a caret under the column.

use crate::location::Location;
use std::fmt;

/// How serious a diagnostic is (MLIR's `error`, `warning`, `note`, `remark`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input is accepted, but something is probably wrong or slow.
    Warning,
    /// Extra information attached to another diagnostic.
    Note,
    /// Information from a pass (statistics, decisions).
    Remark,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        })
    }
}

/// One diagnostic with its location and attached notes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{loc}: {severity}: {message}")]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// Where it points.
    pub loc: Location,
    /// The message, lower-case, no trailing period (MLIR's habit).
    pub message: String,
    /// Notes that explain it (each with its own location).
    pub notes: Vec<Diagnostic>,
}

impl Diagnostic {
    /// An error at `loc`.
    pub fn error(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            loc,
            message: message.into(),
            notes: vec![],
        }
    }
    /// A warning at `loc`.
    pub fn warning(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            loc,
            message: message.into(),
            notes: vec![],
        }
    }
    /// A remark at `loc`.
    pub fn remark(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Remark,
            loc,
            message: message.into(),
            notes: vec![],
        }
    }
    /// Attach a note at `loc`.
    pub fn with_note(mut self, loc: Location, message: impl Into<String>) -> Self {
        self.notes.push(Diagnostic {
            severity: Severity::Note,
            loc,
            message: message.into(),
            notes: vec![],
        });
        self
    }

    /// Render as a compiler would print it: the header line, then (when `source` holds the
    /// file's text) the source line and a caret, then the notes the same way.
    pub fn render(&self, source: Option<&str>) -> String {
        let mut out = String::new();
        self.render_into(source, &mut out);
        out
    }

    fn render_into(&self, source: Option<&str>, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(out, "{}: {}: {}", self.loc, self.severity, self.message);
        if let Some(src) = source {
            if !self.loc.is_unknown() {
                if let Some(line) = src.lines().nth(self.loc.line as usize - 1) {
                    let line: String = line.chars().take(240).collect();
                    let _ = writeln!(out, "{line}");
                    let col = (self.loc.col as usize).saturating_sub(1).min(line.len());
                    let pad: String = line[..col]
                        .chars()
                        .map(|c| if c == '\t' { '\t' } else { ' ' })
                        .collect();
                    let _ = writeln!(out, "{pad}^");
                }
            }
        }
        for n in &self.notes {
            n.render_into(source, out);
        }
    }
}

/// A non-empty list of diagnostics, the error type of the parser and the verifier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Render all of them (see [`Diagnostic::render`]).
    pub fn render(&self, source: Option<&str>) -> String {
        self.0.iter().map(|d| d.render(source)).collect()
    }
    /// Whether any is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}
