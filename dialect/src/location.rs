//! Source locations: every op carries the `file:line:col` it was parsed from.

use std::fmt;
use std::sync::Arc;

/// A position in a source file. Lines and columns are 1-based and count bytes, as
/// MLIR's `FileLineColLoc` does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file name as given on the command line (`-` or `<stdin>` for standard input).
    pub file: Arc<str>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in bytes).
    pub col: u32,
}

impl Location {
    /// A location in `file`.
    pub fn new(file: Arc<str>, line: u32, col: u32) -> Self {
        Location { file, line, col }
    }

    /// The location of IR built without source text (builder API): `<builder>:0:0`.
    pub fn unknown() -> Self {
        Location {
            file: Arc::from("<builder>"),
            line: 0,
            col: 0,
        }
    }

    /// Whether this is [`Location::unknown`].
    pub fn is_unknown(&self) -> bool {
        self.line == 0
    }

    /// The op id of a location the [`crate::Builder`] numbered (`SCOPE:ID:0`): `Some(ID)`
    /// when the column is 0 and the line is not.
    pub fn op_id(&self) -> Option<u32> {
        (self.col == 0 && self.line > 0).then_some(self.line)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}
