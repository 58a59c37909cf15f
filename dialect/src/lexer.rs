//! The lexer: IR text to tokens with `line:col` positions. `//` comments run to the end of
//! the line. Type spellings (`tile<128x64xbf16>`) are single tokens.

use crate::diag::Diagnostic;
use crate::location::Location;
use std::sync::Arc;

/// Token kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `%name`.
    ValueRef(String),
    /// `@name`.
    Symbol(String),
    /// `^name`.
    BlockLabel(String),
    /// An identifier or keyword, dots allowed (`tile.dot`, `grid`, `true`).
    Ident(String),
    /// A type with angle brackets, whole (`tile<128x64xbf16>`).
    AngleType(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal (escapes resolved).
    Str(String),
    /// Punctuation: `= , : ( ) { } [ ] < > ->`.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is named in "expected …, found …" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::ValueRef(n) => format!("'%{n}'"),
            Tok::Symbol(n) => format!("'@{n}'"),
            Tok::BlockLabel(n) => format!("'^{n}'"),
            Tok::Ident(n) => format!("'{n}'"),
            Tok::AngleType(t) => format!("'{t}'"),
            Tok::Int(i) => format!("integer {i}"),
            Tok::Float(x) => format!("float {x}"),
            Tok::Str(_) => "string".to_string(),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

/// A token with where it starts and whether a line break precedes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Whether a newline separates it from the previous token.
    pub newline_before: bool,
}

const TYPE_HEADS: [&str; 4] = ["tile", "tensor", "smem", "mbarrier"];

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$'
}

/// Whether `s` reads back as one name: a kernel's `@name`, an argument's or value's `%name`
/// that is not a number, an attribute's key. An ASCII letter or `_` first, then letters,
/// digits, `_`, `.` and `$`.
pub fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|&c| is_ident_char(c))
}

/// The error for a carriage return that no line feed follows: lines end in `\n` or
/// `\r\n`, and a lone `\r` (old Mac line endings) would otherwise hide the rest of a `//`
/// comment's file.
const LONE_CR: &str = "carriage return without a line feed: lines must end in LF or CR LF \
    (convert CR-only line endings to LF)";

/// Split `src` into tokens. `first_line` is the line number of the first line of `src`
/// (for `--split-input-file` chunks). Errors point at the offending character.
pub fn lex(src: &str, file: &Arc<str>, first_line: u32) -> Result<Vec<Token>, Diagnostic> {
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let (mut i, mut line, mut line_start) = (0usize, first_line, 0usize);
    // Just past the last token: where the end of input is reported ("expected '}'"), so
    // that the message shows the line where the text stopped, not a line after it.
    let (mut end_line, mut end_col) = (first_line, 1usize);
    let mut newline_before = true;
    let err = |line: u32, col: usize, msg: String| {
        Diagnostic::error(Location::new(file.clone(), line, col as u32 + 1), msg)
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            i += 1;
            line += 1;
            line_start = i;
            newline_before = true;
            continue;
        }
        if c == b'\r' && b.get(i + 1) != Some(&b'\n') {
            return Err(err(line, i - line_start, LONE_CR.into()));
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\r' && b.get(i + 1) != Some(&b'\n') {
                    return Err(err(line, i - line_start, LONE_CR.into()));
                }
                i += 1;
            }
            continue;
        }
        let col = i - line_start;
        let start = i;
        let tok = match c {
            b'%' | b'@' | b'^' => {
                i += 1;
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                if i == start + 1 {
                    return Err(err(
                        line,
                        col,
                        format!("expected a name after '{}'", c as char),
                    ));
                }
                let name = src[start + 1..i].to_string();
                match c {
                    b'%' => Tok::ValueRef(name),
                    b'@' => Tok::Symbol(name),
                    _ => Tok::BlockLabel(name),
                }
            }
            b'"' => {
                i += 1;
                let mut s = String::new();
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(err(line, col, "unterminated string literal".into()))
                        }
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let e = match b.get(i + 1) {
                                Some(b'n') => '\n',
                                Some(b't') => '\t',
                                Some(b'"') => '"',
                                Some(b'\\') => '\\',
                                _ => {
                                    return Err(err(
                                        line,
                                        i - line_start,
                                        "unknown escape in string literal".into(),
                                    ))
                                }
                            };
                            s.push(e);
                            i += 2;
                        }
                        Some(_) => {
                            // Copy one UTF-8 character.
                            let ch = src[i..].chars().next().unwrap_or('\u{fffd}');
                            s.push(ch);
                            i += ch.len_utf8();
                        }
                    }
                }
                Tok::Str(s)
            }
            b'-' if b.get(i + 1) == Some(&b'>') => {
                i += 2;
                Tok::Punct("->")
            }
            b'-' | b'0'..=b'9' => {
                i += 1;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'.'
                        || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                let text = &src[start..i];
                let digits = text.strip_prefix('-').unwrap_or(text);
                let is_int_text = !digits.is_empty() && digits.bytes().all(|d| d.is_ascii_digit());
                if text == "-inf" {
                    // The printer's word for negative infinity ("inf" and "nan" are words).
                    Tok::Float(f64::NEG_INFINITY)
                } else if let Ok(v) = text.parse::<i64>() {
                    Tok::Int(v)
                } else if is_int_text {
                    // Not silently a float: 2^64 would print back as 1.8446744073709552e19.
                    return Err(err(
                        line,
                        col,
                        format!("integer literal '{text}' does not fit in 64 bits"),
                    ));
                } else if let Ok(v) = text.parse::<f64>() {
                    if text.contains(|ch: char| ch.is_ascii_alphabetic() && ch != 'e' && ch != 'E')
                    {
                        return Err(err(line, col, format!("malformed number '{text}'")));
                    }
                    if !v.is_finite() {
                        // `1e999` would become infinity, which has no spelling to print back.
                        return Err(err(
                            line,
                            col,
                            format!("float literal '{text}' is out of range"),
                        ));
                    }
                    Tok::Float(v)
                } else {
                    return Err(err(line, col, format!("malformed number '{text}'")));
                }
            }
            b'=' | b',' | b':' | b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'<' | b'>' => {
                i += 1;
                Tok::Punct(match c {
                    b'<' => "<",
                    b'>' => ">",
                    b'=' => "=",
                    b',' => ",",
                    b':' => ":",
                    b'(' => "(",
                    b')' => ")",
                    b'{' => "{",
                    b'}' => "}",
                    b'[' => "[",
                    _ => "]",
                })
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                let word = &src[start..i];
                if TYPE_HEADS.contains(&word) && b.get(i) == Some(&b'<') {
                    // Up to the matching '>' (a tile's layout nests `#linear<...>`).
                    let mut depth = 0usize;
                    while i < b.len() && b[i] != b'\n' {
                        match b[i] {
                            b'<' => depth += 1,
                            b'>' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                    if b.get(i) != Some(&b'>') {
                        return Err(err(line, col, format!("unterminated type '{word}<'")));
                    }
                    i += 1;
                    Tok::AngleType(src[start..i].to_string())
                } else {
                    Tok::Ident(word.to_string())
                }
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(err(line, col, format!("unexpected character {ch:?}")));
            }
        };
        toks.push(Token {
            tok,
            line,
            col: col as u32 + 1,
            newline_before,
        });
        (end_line, end_col) = (line, i - line_start + 1);
        newline_before = false;
    }
    toks.push(Token {
        tok: Tok::Eof,
        line: end_line,
        col: end_col as u32,
        newline_before: true,
    });
    Ok(toks)
}
