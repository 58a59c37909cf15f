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

/// What kind of problem an error is, for a caller that reacts to it (an autotuner skips a
/// [`DiagKind::ResourceLimit`], a frontend falls back on [`DiagKind::TargetLacks`]) without
/// matching message text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagKind {
    /// Not valid IR: a syntax error, a verifier error, or a GPU-level protocol broken in
    /// hand-written GPU-level IR.
    InvalidIr,
    /// Valid IR that tilec does not compile: an op form, shape or combination of options
    /// the lowering has no rule for. The default kind of pass and lowering errors.
    Unsupported,
    /// The kernel needs more of a per-CTA or per-thread resource than the target has.
    ResourceLimit {
        /// What runs out: `shared memory bytes`, `registers per thread`, `parameter bytes`,
        /// `CTAs along y`, ...
        resource: &'static str,
        /// How much the kernel needs, in the resource's unit.
        needed: u64,
        /// The most the target allows.
        limit: u64,
    },
    /// The target lacks an instruction or type the kernel needs (e.g. fp8 MMA on sm_90).
    TargetLacks {
        /// The target (`sm_90`).
        target: &'static str,
        /// What it lacks, as the PTX ISA names it (`wgmma.mma_async`, `e4m3 mma`).
        feature: &'static str,
    },
    /// A tilec bug: a pass produced IR that does not verify, or an invariant failed.
    Internal,
}

impl fmt::Display for DiagKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiagKind::InvalidIr => f.write_str("invalid IR"),
            DiagKind::Unsupported => f.write_str("unsupported"),
            DiagKind::ResourceLimit {
                resource,
                needed,
                limit,
            } => write!(f, "resource limit: {needed} {resource}, at most {limit}"),
            DiagKind::TargetLacks { target, feature } => write!(f, "{target} lacks {feature}"),
            DiagKind::Internal => f.write_str("internal error"),
        }
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
    /// What kind of problem it is (meaningful for errors; [`DiagKind::Unsupported`] unless
    /// its source says otherwise).
    pub kind: DiagKind,
    /// The kernel it is about (its symbol, without `@`), where known.
    pub kernel: Option<String>,
}

impl Diagnostic {
    /// An error at `loc`, of kind [`DiagKind::Unsupported`], or [`DiagKind::Internal`] when
    /// the message starts with `internal error` (tilec's convention for its own bugs).
    pub fn error(loc: Location, message: impl Into<String>) -> Self {
        let message = message.into();
        let kind = if message.starts_with("internal error") {
            DiagKind::Internal
        } else {
            DiagKind::Unsupported
        };
        Diagnostic {
            severity: Severity::Error,
            loc,
            message,
            notes: vec![],
            kind,
            kernel: None,
        }
    }
    /// A warning at `loc`.
    pub fn warning(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            loc,
            message: message.into(),
            notes: vec![],
            kind: DiagKind::Unsupported,
            kernel: None,
        }
    }
    /// A remark at `loc`.
    pub fn remark(loc: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Remark,
            loc,
            message: message.into(),
            notes: vec![],
            kind: DiagKind::Unsupported,
            kernel: None,
        }
    }
    /// Attach a note at `loc`.
    pub fn with_note(mut self, loc: Location, message: impl Into<String>) -> Self {
        self.notes.push(Diagnostic::error(loc, message));
        if let Some(n) = self.notes.last_mut() {
            n.severity = Severity::Note;
        }
        self
    }

    /// The same, of kind `kind`.
    pub fn with_kind(mut self, kind: DiagKind) -> Self {
        self.kind = kind;
        self
    }

    /// A [`DiagKind::ResourceLimit`] error: `needed` of `resource` where `limit` is the most.
    pub fn resource_limit(
        loc: Location,
        message: impl Into<String>,
        resource: &'static str,
        needed: u64,
        limit: u64,
    ) -> Self {
        Diagnostic::error(loc, message).with_kind(DiagKind::ResourceLimit {
            resource,
            needed,
            limit,
        })
    }

    /// A [`DiagKind::TargetLacks`] error.
    pub fn target_lacks(
        loc: Location,
        message: impl Into<String>,
        target: &'static str,
        feature: &'static str,
    ) -> Self {
        Diagnostic::error(loc, message).with_kind(DiagKind::TargetLacks { target, feature })
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
            if !self.loc.is_unknown() && self.loc.op_id().is_none() {
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

    /// Sets the kind of every diagnostic (a parser's or verifier's are all
    /// [`DiagKind::InvalidIr`]).
    pub fn with_kind(mut self, kind: DiagKind) -> Self {
        for d in &mut self.0 {
            d.kind = kind.clone();
        }
        self
    }

    /// Removes repeats of a diagnostic (same severity, location and message), keeping the
    /// first, so that one cause reported by two stages is printed once.
    pub fn dedup(&mut self) {
        let mut seen = std::collections::HashSet::new();
        self.0
            .retain(|d| seen.insert((d.severity, d.loc.clone(), d.message.clone())));
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn kinds_and_dedup() {
        let at = |l| Location::new(Arc::from("k.tile"), l, 1);
        assert_eq!(
            Diagnostic::error(at(1), "no rule").kind,
            DiagKind::Unsupported
        );
        let bug = Diagnostic::error(at(1), "internal error: a register has no slot");
        assert_eq!(bug.kind, DiagKind::Internal);
        let r = Diagnostic::resource_limit(at(2), "too big", "shared memory bytes", 9, 8);
        assert_eq!(
            r.kind.to_string(),
            "resource limit: 9 shared memory bytes, at most 8"
        );
        let t = Diagnostic::target_lacks(at(2), "no wgmma", "sm_90", "wgmma.mma_async");
        assert_eq!(t.kind.to_string(), "sm_90 lacks wgmma.mma_async");
        let mut d = Diagnostics(vec![
            Diagnostic::error(at(1), "a"),
            Diagnostic::error(at(2), "a"),
            Diagnostic::error(at(1), "a"),
            Diagnostic::warning(at(1), "a"),
        ]);
        d.dedup();
        assert_eq!(d.0.len(), 3);
        let d = d.with_kind(DiagKind::InvalidIr);
        assert!(d.0.iter().all(|x| x.kind == DiagKind::InvalidIr));
        // The rendered form does not show the kind.
        assert_eq!(d.0[0].to_string(), "k.tile:1:1: error: a");
    }
}
