//! `--verify-diagnostics`: match the diagnostics a run produced against the
//! `// expected-error@+1 {{text}}` comments of the source, as MLIR's
//! `SourceMgrDiagnosticVerifierHandler` does.
//!
//! Forms: `expected-error {{…}}` (same line), `expected-warning@+N {{…}}`,
//! `expected-note@-N {{…}}`, `expected-remark@above {{…}}`, `expected-error@below {{…}}`.
//! The text must be a substring of the diagnostic's message. Every expected diagnostic
//! must be produced and every produced one expected.

use crate::diag::{Diagnostic, Severity};
use crate::location::Location;
use std::sync::Arc;

/// One `expected-…` comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The kind of diagnostic expected.
    pub severity: Severity,
    /// The line it must be reported on.
    pub line: u32,
    /// A substring of the message.
    pub text: String,
    /// Where the comment is.
    pub loc: Location,
}

/// Collect the expectations of `src` (whose first line is `first_line` in `file`).
///
/// # Errors
/// A malformed expectation comment (no `{{…}}`, an unknown offset).
pub fn collect(src: &str, file: &str, first_line: u32) -> Result<Vec<Expected>, Diagnostic> {
    let file: Arc<str> = Arc::from(file);
    let mut out = vec![];
    for (i, line) in src.lines().enumerate() {
        let lineno = first_line + i as u32;
        let mut rest = line;
        while let Some(p) = rest.find("expected-") {
            let col = (line.len() - rest.len() + p) as u32 + 1;
            let loc = Location::new(file.clone(), lineno, col);
            let after = &rest[p + "expected-".len()..];
            let (sev, tail) = match ["error", "warning", "note", "remark"]
                .iter()
                .find(|k| after.starts_with(*k))
            {
                Some(k) => (
                    match *k {
                        "error" => Severity::Error,
                        "warning" => Severity::Warning,
                        "note" => Severity::Note,
                        _ => Severity::Remark,
                    },
                    &after[k.len()..],
                ),
                None => {
                    rest = after;
                    continue;
                }
            };
            let (target, tail) = if let Some(spec_text) = tail.strip_prefix('@') {
                let end = spec_text
                    .find(|c: char| c.is_whitespace() || c == '{')
                    .unwrap_or(spec_text.len());
                let spec = &spec_text[..end];
                let target = match spec {
                    "above" => lineno.checked_sub(1),
                    "below" => lineno.checked_add(1),
                    s if s.starts_with('+') => s[1..]
                        .parse::<u32>()
                        .ok()
                        .and_then(|n| lineno.checked_add(n)),
                    s if s.starts_with('-') => s[1..]
                        .parse::<u32>()
                        .ok()
                        .and_then(|n| lineno.checked_sub(n)),
                    _ => None,
                };
                match target {
                    Some(t) if t >= 1 => (t, &spec_text[end..]),
                    _ => {
                        return Err(Diagnostic::error(
                            loc,
                            format!("malformed line offset '@{spec}' in expected diagnostic"),
                        ))
                    }
                }
            } else {
                (lineno, tail)
            };
            let tail = tail.trim_start();
            let Some(body) = tail.strip_prefix("{{") else {
                return Err(Diagnostic::error(
                    loc,
                    "expected '{{' after an expected diagnostic",
                ));
            };
            let Some(end) = body.find("}}") else {
                return Err(Diagnostic::error(
                    loc,
                    "expected '}}' to end an expected diagnostic",
                ));
            };
            out.push(Expected {
                severity: sev,
                line: target,
                text: body[..end].to_string(),
                loc,
            });
            rest = &body[end + 2..];
        }
    }
    Ok(out)
}

/// Match `produced` (notes included) against `expected`. Returns the mismatches as errors:
/// one per unexpected diagnostic and one per expectation that was not produced. Empty
/// means the run verified.
pub fn check(expected: &[Expected], produced: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut flat: Vec<&Diagnostic> = vec![];
    for d in produced {
        flat.push(d);
        flat.extend(d.notes.iter());
    }
    let mut used = vec![false; expected.len()];
    let mut errors = vec![];
    for d in flat {
        let hit = expected.iter().enumerate().position(|(i, e)| {
            !used[i]
                && e.severity == d.severity
                && e.line == d.loc.line
                && d.message.contains(&e.text)
        });
        match hit {
            Some(i) => used[i] = true,
            None => errors.push(Diagnostic::error(
                d.loc.clone(),
                format!("unexpected {}: {}", d.severity, d.message),
            )),
        }
    }
    for (e, u) in expected.iter().zip(used) {
        if !u {
            errors.push(Diagnostic::error(
                e.loc.clone(),
                format!(
                    "expected {} \"{}\" was not produced (on line {})",
                    e.severity, e.text, e.line
                ),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_offsets() {
        let src = "// expected-error@+1 {{bad thing}}\nx\ny // expected-warning {{w}}\n// \
            expected-note@-2 {{n}}";
        let e = collect(src, "f", 1).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].line, e[0].text.as_str()), (2, "bad thing"));
        assert_eq!((e[1].line, e[1].severity), (3, Severity::Warning));
        assert_eq!(e[2].line, 2);
    }

    #[test]
    fn huge_offsets_are_errors_not_overflows() {
        let e = collect("// expected-error@+4294967295 {{x}}", "f", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f:1:4: error: malformed line offset '@+4294967295' in expected diagnostic"
        );
        assert!(collect("\n// expected-error@-4294967295 {{x}}", "f", 1).is_err());
        assert!(collect("// expected-error@+99999999999 {{x}}", "f", 1).is_err());
    }

    #[test]
    fn reports_missing_and_unexpected() {
        let file: Arc<str> = Arc::from("f");
        let e = collect("// expected-error@+1 {{boom}}\nx", "f", 1).unwrap();
        let got = vec![Diagnostic::error(
            Location::new(file.clone(), 2, 1),
            "a boom happened",
        )];
        assert!(check(&e, &got).is_empty());
        let other = vec![Diagnostic::error(Location::new(file, 3, 1), "boom")];
        let errs = check(&e, &other);
        assert_eq!(errs.len(), 2);
        assert!(errs[0].message.starts_with("unexpected error: boom"));
        assert!(errs[1].message.contains("was not produced"));
    }
}
