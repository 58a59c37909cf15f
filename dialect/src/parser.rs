//! The parser: IR text to a [`Module`]. Grammar (one statement per op):
//!
//! ```text
//! op       ::= [value-list '='] op-name [symbol [consts] ['(' arg-list ')']] [value-list]
//!              [attr-dict] [':' type-list] region*
//! consts   ::= '<' CONST ['=' int] (',' CONST ['=' int])* '>'
//! region   ::= '{' ['^' label '(' arg-list ')' ':'] op* '}'
//! arg-list ::= %name ':' type (',' %name ':' type)*
//! attr-dict::= '{' key '=' attr (',' key '=' attr)* '}'
//! attr     ::= int | CONST | float | string | true | false | '[' attr,* ']'
//!            | '{' key '=' attr,* '}' | type | @sym | expr
//! expr     ::= int | CONST | %arg | ('ceildiv'|'mul'|'add'|'min') '(' expr ',' expr ')'
//! ```
//!
//! The operands of an op start on the line of its name. The parser checks names: a use
//! before its definition and a second definition of a name are errors. It does not check
//! types; run [`crate::verify`] next.
//!
//! **Kernel constants.** `tile.kernel @gemm<BM = 128, BN = 256, BK = 64>(...)` declares
//! compile-time constants (Triton's `constexpr`, a C++ template's non-type parameters),
//! each with an optional default. A `CONST` name is a capital letter, then capitals, digits
//! and `_`. In the kernel, a constant stands for its integer wherever an integer goes: an
//! attribute (`{value = BM}`), a grid expression (`ceildiv(%N, BN)`), and a dimension of a
//! type (`tile<BMxBKxbf16>`, `smem<2xBKxBNxbf16>`). [`parse_with_constants`] binds them;
//! an unbound constant takes its default, and one with neither is an error at its
//! declaration. The parsed kernel is concrete: its types hold the values, and its
//! `constants` attribute (a dictionary, `{BK = 64, BM = 128, BN = 256}`) records them, so
//! that the printed kernel parses back to itself and the launch manifest can report them.

use crate::attr::{Attribute, Expr};
use crate::diag::{DiagKind, Diagnostic, Diagnostics};
use crate::ir::{AttrMap, Block, Module, Operation, Value};
use crate::lexer::{lex, Tok, Token};
use crate::location::Location;
use crate::ops::OpKind;
use crate::types::{ScalarType, Type};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The deepest region nesting the parser accepts (deeper input is an error, not a stack
/// overflow).
pub const MAX_NESTING: usize = 128;

/// What [`Parser::op_head`] reads of an op before its regions.
struct OpHead {
    op: Operation,
    loc: Location,
    kind: OpKind,
    result_names: Vec<(String, Location)>,
    types: Vec<Type>,
    sig_args: Option<Vec<(String, Type, Location)>>,
    outer_consts: Option<BTreeMap<String, i64>>,
}

/// Parse a whole file. `file` names it in locations.
///
/// # Errors
/// The first syntax or naming error, with its location.
pub fn parse(src: &str, file: &str) -> Result<Module, Diagnostics> {
    parse_with_constants(src, file, &ConstantBindings::default())
}

/// Values for kernel constants (`-D NAME=VALUE`), and the kernel they are for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConstantBindings {
    /// Each constant's value, by name.
    pub values: BTreeMap<String, i64>,
    /// The kernel (its symbol, without `@`) that takes them; `None`: every kernel that
    /// declares them.
    pub kernel: Option<String>,
}

impl ConstantBindings {
    /// `values` for every kernel.
    pub fn new(values: BTreeMap<String, i64>) -> Self {
        ConstantBindings {
            values,
            kernel: None,
        }
    }

    /// The bindings that apply to the kernel `symbol`.
    fn for_kernel(&self, symbol: &str) -> Option<&BTreeMap<String, i64>> {
        match &self.kernel {
            Some(k) if k.trim_start_matches('@') != symbol => None,
            _ => Some(&self.values),
        }
    }
}

/// Parse a whole file, binding kernel constants (see the module docs): each kernel that
/// declares a constant named in `constants` (the one kernel `constants.kernel` names, if
/// any) takes that value instead of its default. A binding no kernel declares is not an
/// error here (a caller that wants one checks the kernels' `constants` attributes).
///
/// # Errors
/// As [`parse`]; also a declared constant with no binding and no default, an undeclared
/// constant used in the kernel, a type that a bound value makes malformed (a zero
/// dimension), and a binding for a kernel that is already concrete (its `constants`
/// attribute, as the printer writes it, records the constant: there is nothing to bind),
/// each at its location.
pub fn parse_with_constants(
    src: &str,
    file: &str,
    constants: &ConstantBindings,
) -> Result<Module, Diagnostics> {
    parse_chunk_with_constants(src, &Arc::from(file), 1, constants)
        .map_err(|d| d.with_kind(DiagKind::InvalidIr))
}

/// Parse raw bytes: like [`parse`], but invalid UTF-8 is an error at its position.
///
/// # Errors
/// Invalid UTF-8, or any error [`parse`] reports.
pub fn parse_bytes(bytes: &[u8], file: &str) -> Result<Module, Diagnostics> {
    let src = utf8(bytes, file).map_err(|d| d.with_kind(DiagKind::InvalidIr))?;
    parse(src, file)
}

/// Check that `bytes` are UTF-8; the error names the line and column of the first bad byte.
///
/// # Errors
/// An error diagnostic at the first invalid byte.
pub fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, Diagnostics> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = &bytes[..e.valid_up_to()];
        let line = good.iter().filter(|&&c| c == b'\n').count() as u32 + 1;
        let col = good.iter().rev().take_while(|&&c| c != b'\n').count() as u32 + 1;
        Diagnostic::error(
            Location::new(Arc::from(file), line, col),
            format!("input is not valid UTF-8 (byte offset {})", e.valid_up_to()),
        )
        .into()
    })
}

/// Split a file at lines `// -----` (MLIR's `--split-input-file`). Each piece comes with
/// the line number its first line has in the file, so diagnostics keep file positions.
pub fn split_input(src: &str) -> Vec<(&str, u32)> {
    let mut out = vec![];
    let (mut start, mut start_line, mut pos, mut line) = (0usize, 1u32, 0usize, 1u32);
    for l in src.split_inclusive('\n') {
        if l.trim_end() == "// -----" {
            out.push((&src[start..pos], start_line));
            start = pos + l.len();
            start_line = line + 1;
        }
        pos += l.len();
        line += 1;
    }
    out.push((&src[start..], start_line));
    out
}

/// Parse one piece of a file whose first line is `first_line`.
///
/// # Errors
/// As [`parse`].
pub fn parse_chunk(src: &str, file: &Arc<str>, first_line: u32) -> Result<Module, Diagnostics> {
    parse_chunk_with_constants(src, file, first_line, &ConstantBindings::default())
}

/// Parse one piece of a file whose first line is `first_line`, binding kernel constants
/// as [`parse_with_constants`] does.
///
/// # Errors
/// As [`parse_with_constants`].
pub fn parse_chunk_with_constants(
    src: &str,
    file: &Arc<str>,
    first_line: u32,
    constants: &ConstantBindings,
) -> Result<Module, Diagnostics> {
    let toks = lex(src, file, first_line)?;
    let mut p = Parser {
        toks,
        pos: 0,
        file: file.clone(),
        module: Module::new(),
        scopes: vec![],
        bindings: constants,
        consts: BTreeMap::new(),
    };
    p.module_body().map_err(Diagnostics::from)?;
    Ok(p.module)
}

struct Parser<'b> {
    toks: Vec<Token>,
    pos: usize,
    file: Arc<str>,
    module: Module,
    /// Name scopes, innermost last.
    scopes: Vec<HashMap<String, Value>>,
    /// The caller's values for kernel constants.
    bindings: &'b ConstantBindings,
    /// The constants of the kernel being parsed, with their values.
    consts: BTreeMap<String, i64>,
}

/// Whether `s` names a kernel constant: a capital letter, then capitals, digits and `_`.
pub fn is_constant_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
}

/// `text` (a whole angle type) with each constant that names one of its dimensions
/// replaced by its value, and the `NAME = value` bindings used (for messages). The layout
/// after a tile's `,` is left alone.
fn substitute_constants(
    text: &str,
    consts: &BTreeMap<String, i64>,
) -> Result<(String, Vec<String>), String> {
    let Some((head, rest)) = text.split_once('<') else {
        return Ok((text.to_string(), vec![]));
    };
    let (dims, tail) = match rest.find(',') {
        Some(i) => rest.split_at(i),
        None => match rest.strip_suffix('>') {
            Some(d) => (d, ">"),
            None => (rest, ""),
        },
    };
    let mut used: Vec<String> = vec![];
    let mut pieces = vec![];
    let all: Vec<&str> = dims.split('x').collect();
    for (i, piece) in all.iter().enumerate() {
        let name = piece.trim();
        if !is_constant_name(name) {
            pieces.push(piece.to_string());
            continue;
        }
        if i + 1 == all.len() && head != "mbarrier" {
            return Err(format!(
                "constant '{name}' stands where the element type goes: constants are \
                 integers, for dimensions"
            ));
        }
        let Some(v) = consts.get(name) else {
            return Err(unknown_constant(name, consts));
        };
        let b = format!("{name} = {v}");
        if !used.contains(&b) {
            used.push(b);
        }
        pieces.push(v.to_string());
    }
    Ok((format!("{head}<{}{tail}", pieces.join("x")), used))
}

/// The message for a constant name the kernel does not declare.
fn unknown_constant(name: &str, consts: &BTreeMap<String, i64>) -> String {
    if consts.is_empty() {
        format!(
            "unknown constant '{name}': the kernel declares none (tile.kernel @k<{name} = \
             VALUE>(...))"
        )
    } else {
        let have: Vec<&str> = consts.keys().map(String::as_str).collect();
        format!(
            "unknown constant '{name}': the kernel declares {}",
            have.join(", ")
        )
    }
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }
    fn loc(&self) -> Location {
        let t = &self.toks[self.pos];
        Location::new(self.file.clone(), t.line, t.col)
    }
    fn bump(&mut self) -> Tok {
        let t = self.toks[self.pos].tok.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(Diagnostic::error(self.loc(), msg))
    }
    fn expected<T>(&self, what: &str) -> PResult<T> {
        self.err(format!("expected {what}, found {}", self.peek().describe()))
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.expected(&format!("'{p}'"))
        }
    }

    fn module_body(&mut self) -> PResult<()> {
        self.scopes.push(HashMap::new());
        while *self.peek() != Tok::Eof {
            if self.is_punct("}") {
                return self.err("unexpected '}' at top level");
            }
            let op = self.operation(0)?;
            self.module.ops.push(op);
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<Value> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn define(&mut self, name: String, ty: Type, loc: &Location) -> PResult<Value> {
        if self.lookup(&name).is_some() {
            return Err(Diagnostic::error(
                loc.clone(),
                format!("redefinition of value '%{name}'"),
            ));
        }
        let v = self.module.new_value(ty, Some(name.clone()));
        self.scopes.last_mut().expect("scope").insert(name, v);
        Ok(v)
    }

    /// The error for a value that follows an operand without a comma (the next token).
    /// Out of line, as the other error builders below: `operation` recurses once per
    /// nesting level, so its frame stays small.
    #[cold]
    #[inline(never)]
    fn missing_comma(&self) -> Diagnostic {
        let n = match self.peek() {
            Tok::ValueRef(n) => n.as_str(),
            _ => "",
        };
        Diagnostic::error(self.loc(), format!("expected ',' before operand '%{n}'"))
    }

    /// The error for result names without `: type`s after the op `kind` at `loc`: at the op
    /// when its line ends there, else at the token found (a value there hints at a missing
    /// comma).
    #[cold]
    #[inline(never)]
    fn missing_result_types(&self, kind: OpKind, loc: &Location) -> Diagnostic {
        if self.toks[self.pos].newline_before {
            return Diagnostic::error(
                loc.clone(),
                format!(
                    "expected ':' and the result type(s) of '{}' at the end of its line",
                    kind.name()
                ),
            );
        }
        let hint = match self.peek() {
            Tok::ValueRef(n) => format!(" (a missing ',' before operand '%{n}'?)"),
            _ => String::new(),
        };
        Diagnostic::error(
            self.loc(),
            format!(
                "expected ':' and the result type(s) of '{}', found {}{hint}",
                kind.name(),
                self.peek().describe()
            ),
        )
    }

    /// Whether the tokens from here are an op's result names: `%a [, %b]* =`.
    fn starts_results(&self) -> bool {
        let mut i = 0;
        while matches!(self.peek_at(i), Tok::ValueRef(_)) {
            match self.peek_at(i + 1) {
                Tok::Punct("=") => return true,
                Tok::Punct(",") => i += 2,
                _ => return false,
            }
        }
        false
    }

    fn use_value(&mut self) -> PResult<Value> {
        let loc = self.loc();
        match self.bump() {
            Tok::ValueRef(n) => self
                .lookup(&n)
                .ok_or_else(|| Diagnostic::error(loc, format!("use of undefined value '%{n}'"))),
            t => Err(Diagnostic::error(
                loc,
                format!("expected a value, found {}", t.describe()),
            )),
        }
    }

    /// An op up to its regions: results, name, symbol and signature, operands, attributes
    /// and result types. Out of line from [`Self::operation`], which recurses once per
    /// nesting level through its regions: what is only needed here does not stay on the
    /// stack for every level.
    #[inline(never)]
    fn op_head(&mut self) -> PResult<OpHead> {
        let loc = self.loc();
        // Results.
        let mut result_names = vec![];
        if matches!(self.peek(), Tok::ValueRef(_)) {
            loop {
                let l = self.loc();
                match self.bump() {
                    Tok::ValueRef(n) => {
                        if result_names.iter().any(|(m, _)| *m == n) {
                            return Err(Diagnostic::error(
                                l,
                                format!("redefinition of value '%{n}'"),
                            ));
                        }
                        result_names.push((n, l));
                    }
                    t => {
                        return Err(Diagnostic::error(
                            l,
                            format!("expected a result name, found {}", t.describe()),
                        ))
                    }
                }
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct("=")?;
        }
        // Name.
        let name_loc = self.loc();
        let kind = match self.bump() {
            Tok::Ident(n) => OpKind::from_name(&n)
                .ok_or_else(|| Diagnostic::error(name_loc.clone(), format!("unknown op '{n}'")))?,
            t => {
                return Err(Diagnostic::error(
                    name_loc,
                    format!("expected an op name, found {}", t.describe()),
                ))
            }
        };
        let mut op = Operation::new(kind, loc.clone());
        // Symbol and signature.
        let mut sig_args: Option<Vec<(String, Type, Location)>> = None;
        let mut declared = None;
        let outer_consts = (kind == OpKind::Kernel).then(|| self.consts.clone());
        if let Tok::Symbol(s) = self.peek().clone() {
            self.bump();
            if self.is_punct("<") {
                if kind != OpKind::Kernel {
                    return self.err(format!(
                        "only 'tile.kernel' declares constants, not '{}'",
                        kind.name()
                    ));
                }
                let c = self.constant_decls(&s)?;
                self.consts.clone_from(&c);
                declared = Some(c);
            }
            op.symbol = Some(s);
            if self.is_punct("(") {
                sig_args = Some(self.arg_list()?);
            }
        }
        // Operands: the first on the op's line.
        if matches!(self.peek(), Tok::ValueRef(_)) && !self.toks[self.pos].newline_before {
            loop {
                op.operands.push(self.use_value()?);
                if !self.eat_punct(",") {
                    // Another value, on the op's line or on a later one that does not start
                    // an op (`%a, %b = ...`): a missing comma.
                    if matches!(self.peek(), Tok::ValueRef(_))
                        && (!self.toks[self.pos].newline_before || !self.starts_results())
                    {
                        return Err(self.missing_comma());
                    }
                    break;
                }
            }
        }
        // Attributes.
        if self.is_punct("{")
            && matches!(self.peek_at(1), Tok::Ident(_))
            && matches!(self.peek_at(2), Tok::Punct("="))
        {
            op.attrs = self.attr_dict()?;
        }
        if declared.is_none() && kind == OpKind::Kernel {
            let symbol = op.symbol.as_deref().unwrap_or("");
            let recorded = op.attrs.get("constants").and_then(Attribute::as_dict);
            let bound = self.bindings.for_kernel(symbol);
            if let (Some(r), Some(b)) = (recorded, bound) {
                if let Some((n, v)) = r.iter().find(|(n, _)| b.contains_key(*n)) {
                    return Err(Diagnostic::error(
                        loc,
                        format!(
                            "constant '{n}' of @{symbol} is already bound to {v}: the kernel \
                             is concrete (its 'constants' attribute records the values it was \
                             compiled with); bind constants in the source that declares them \
                             (tile.kernel @{symbol}<{n} = ...>)"
                        ),
                    ));
                }
            }
        }
        if let Some(c) = declared {
            if op.attrs.contains_key("constants") {
                return Err(Diagnostic::error(
                    loc,
                    "the kernel declares constants (<...>) and has a 'constants' attribute; \
                     give them one way",
                ));
            }
            let dict = c.into_iter().map(|(k, v)| (k, Attribute::Int(v))).collect();
            op.attrs.insert("constants".into(), Attribute::Dict(dict));
        }
        // Result types.
        let mut types = vec![];
        if self.eat_punct(":") {
            loop {
                types.push(self.ty()?);
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        if types.is_empty() && !result_names.is_empty() {
            return Err(self.missing_result_types(kind, &loc));
        }
        if types.len() != result_names.len() {
            return Err(Diagnostic::error(
                loc,
                format!(
                    "'{}' has {} result name(s) but {} result type(s)",
                    kind.name(),
                    result_names.len(),
                    types.len()
                ),
            ));
        }
        Ok(OpHead {
            op,
            loc,
            kind,
            result_names,
            types,
            sig_args,
            outer_consts,
        })
    }

    fn operation(&mut self, depth: usize) -> PResult<Operation> {
        let OpHead {
            mut op,
            loc,
            kind,
            result_names,
            types,
            mut sig_args,
            outer_consts,
        } = self.op_head()?;
        // Regions (their names are scoped; results become visible after them).
        let mut first = true;
        while self.is_punct("{") {
            if depth >= MAX_NESTING {
                return self.err(format!("regions nested deeper than {MAX_NESTING} levels"));
            }
            let args = if first { sig_args.take() } else { None };
            first = false;
            let block = self.region(args, depth + 1)?;
            op.regions.push(block);
        }
        if let Some(args) = sig_args {
            return Err(Diagnostic::error(
                args.first().map(|a| a.2.clone()).unwrap_or(loc),
                format!("'{}' has a signature but no body region", kind.name()),
            ));
        }
        for ((n, l), t) in result_names.into_iter().zip(types) {
            let v = self.define(n, t, &l)?;
            op.results.push(v);
        }
        if let Some(outer) = outer_consts {
            self.consts = outer;
        }
        Ok(op)
    }

    /// `<NAME [= int], ...>` after a kernel's symbol: each constant's value, the binding's
    /// or else the default.
    fn constant_decls(&mut self, kernel: &str) -> PResult<BTreeMap<String, i64>> {
        self.expect_punct("<")?;
        let mut out = BTreeMap::new();
        loop {
            let l = self.loc();
            let name = match self.bump() {
                Tok::Ident(n) if is_constant_name(&n) => n,
                Tok::Ident(n) => {
                    return Err(Diagnostic::error(
                        l,
                        format!(
                            "constant name '{n}' must be a capital letter, then capitals, \
                             digits and '_' (BM, BLOCK_K), so that it reads unambiguously \
                             in a type's dimensions (tile<BMxBKxbf16>)"
                        ),
                    ))
                }
                t => {
                    return Err(Diagnostic::error(
                        l,
                        format!("expected a constant name, found {}", t.describe()),
                    ))
                }
            };
            let default = if self.eat_punct("=") {
                let vl = self.loc();
                match self.bump() {
                    Tok::Int(v) => Some(v),
                    t => {
                        return Err(Diagnostic::error(
                            vl,
                            format!(
                                "expected an integer default for constant '{name}', found {}",
                                t.describe()
                            ),
                        ))
                    }
                }
            } else {
                None
            };
            let bound = self.bindings.for_kernel(kernel).and_then(|b| b.get(&name));
            let value = match (bound, default) {
                (Some(&v), _) | (None, Some(v)) => v,
                (None, None) => {
                    return Err(Diagnostic::error(
                        l,
                        format!(
                            "constant '{name}' of @{kernel} has no value: bind it \
                             (tile-compile -D {name}=VALUE, Options::with_constant) or give \
                             it a default (<{name} = VALUE>)"
                        ),
                    ))
                }
            };
            if out.insert(name.clone(), value).is_some() {
                return Err(Diagnostic::error(
                    l,
                    format!("constant '{name}' is declared twice"),
                ));
            }
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct(">")?;
        Ok(out)
    }

    /// The value of the constant `name` at `l`, or the error for an undeclared one.
    fn constant(&self, name: &str, l: &Location) -> PResult<i64> {
        self.consts
            .get(name)
            .copied()
            .ok_or_else(|| Diagnostic::error(l.clone(), unknown_constant(name, &self.consts)))
    }

    fn arg_list(&mut self) -> PResult<Vec<(String, Type, Location)>> {
        self.expect_punct("(")?;
        let mut args = vec![];
        if !self.eat_punct(")") {
            loop {
                let l = self.loc();
                let n = match self.bump() {
                    Tok::ValueRef(n) => n,
                    t => {
                        return Err(Diagnostic::error(
                            l,
                            format!("expected an argument name, found {}", t.describe()),
                        ))
                    }
                };
                self.expect_punct(":")?;
                let t = self.ty()?;
                args.push((n, t, l));
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        Ok(args)
    }

    fn region(
        &mut self,
        sig_args: Option<Vec<(String, Type, Location)>>,
        depth: usize,
    ) -> PResult<Block> {
        let open = self.loc();
        self.expect_punct("{")?;
        self.scopes.push(HashMap::new());
        let mut block = Block::default();
        let mut args = sig_args.unwrap_or_default();
        if let Tok::BlockLabel(_) = self.peek() {
            if !args.is_empty() {
                return self.err("a region with a signature takes no block label");
            }
            self.bump();
            if self.is_punct("(") {
                args = self.arg_list()?;
            }
            self.expect_punct(":")?;
        }
        for (n, t, l) in args {
            let v = self.define(n, t, &l)?;
            block.args.push(v);
        }
        loop {
            if self.eat_punct("}") {
                break;
            }
            if *self.peek() == Tok::Eof {
                return Err(
                    Diagnostic::error(self.loc(), "unterminated region: expected '}'")
                        .with_note(open, "the region starts here"),
                );
            }
            let op = self.operation(depth)?;
            block.ops.push(op);
        }
        self.scopes.pop();
        Ok(block)
    }

    fn attr_dict(&mut self) -> PResult<AttrMap> {
        self.expect_punct("{")?;
        let mut m = AttrMap::new();
        loop {
            let l = self.loc();
            let key = match self.bump() {
                Tok::Ident(k) => k,
                t => {
                    return Err(Diagnostic::error(
                        l,
                        format!("expected an attribute name, found {}", t.describe()),
                    ))
                }
            };
            self.expect_punct("=")?;
            let v = self.attr(0)?;
            if m.insert(key.clone(), v).is_some() {
                return Err(Diagnostic::error(l, format!("duplicate attribute '{key}'")));
            }
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct("}")?;
        Ok(m)
    }

    fn attr(&mut self, depth: usize) -> PResult<Attribute> {
        if depth > MAX_NESTING {
            return self.err(format!("attribute nested deeper than {MAX_NESTING} levels"));
        }
        let l = self.loc();
        Ok(match self.peek().clone() {
            Tok::Int(i) => {
                self.bump();
                Attribute::Int(i)
            }
            Tok::Float(f) => {
                self.bump();
                Attribute::Float(f)
            }
            // The printer's words for the non-finite floats.
            Tok::Ident(w) if w == "nan" || w == "inf" => {
                self.bump();
                Attribute::Float(if w == "nan" { f64::NAN } else { f64::INFINITY })
            }
            Tok::Str(s) => {
                self.bump();
                Attribute::Str(s)
            }
            Tok::Symbol(s) => {
                self.bump();
                Attribute::Symbol(s)
            }
            Tok::Ident(w) if w == "true" || w == "false" => {
                self.bump();
                Attribute::Bool(w == "true")
            }
            Tok::Ident(w) if is_constant_name(&w) => {
                self.bump();
                Attribute::Int(self.constant(&w, &l)?)
            }
            Tok::Punct("{") => {
                self.bump();
                let mut d = BTreeMap::new();
                if !self.eat_punct("}") {
                    loop {
                        let kl = self.loc();
                        let key = match self.bump() {
                            Tok::Ident(k) => k,
                            t => {
                                return Err(Diagnostic::error(
                                    kl,
                                    format!("expected a dictionary key, found {}", t.describe()),
                                ))
                            }
                        };
                        self.expect_punct("=")?;
                        let v = self.attr(depth + 1)?;
                        if d.insert(key.clone(), v).is_some() {
                            return Err(Diagnostic::error(kl, format!("duplicate key '{key}'")));
                        }
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_punct("}")?;
                }
                Attribute::Dict(d)
            }
            Tok::Punct("[") => {
                self.bump();
                let mut v = vec![];
                if !self.eat_punct("]") {
                    loop {
                        v.push(self.attr(depth + 1)?);
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_punct("]")?;
                }
                Attribute::Array(v)
            }
            Tok::ValueRef(_) => Attribute::Expr(self.expr(depth)?),
            Tok::Ident(w) if Expr::FUNCTIONS.contains(&w.as_str()) => {
                Attribute::Expr(self.expr(depth)?)
            }
            Tok::Ident(_) | Tok::AngleType(_) => Attribute::Type(self.ty()?),
            t => {
                return Err(Diagnostic::error(
                    l,
                    format!("expected an attribute value, found {}", t.describe()),
                ))
            }
        })
    }

    fn expr(&mut self, depth: usize) -> PResult<Expr> {
        if depth > MAX_NESTING {
            return self.err(format!(
                "expression nested deeper than {MAX_NESTING} levels"
            ));
        }
        let l = self.loc();
        match self.bump() {
            Tok::Int(i) => Ok(Expr::Int(i)),
            Tok::Ident(c) if is_constant_name(&c) => Ok(Expr::Int(self.constant(&c, &l)?)),
            Tok::ValueRef(n) => Ok(Expr::Arg(n)),
            Tok::Ident(f) if Expr::FUNCTIONS.contains(&f.as_str()) => {
                self.expect_punct("(")?;
                let a = self.expr(depth + 1)?;
                self.expect_punct(",")?;
                let b = self.expr(depth + 1)?;
                self.expect_punct(")")?;
                Ok(Expr::binary(&f, a, b).expect("listed function"))
            }
            t => Err(Diagnostic::error(
                l,
                format!("expected an expression, found {}", t.describe()),
            )),
        }
    }

    fn ty(&mut self) -> PResult<Type> {
        let l = self.loc();
        let t = self.bump();
        let bad = |msg: String| Err(Diagnostic::error(l.clone(), msg));
        match t {
            Tok::Ident(w) => match ScalarType::from_name(&w) {
                Some(s) => Ok(Type::Scalar(s)),
                None => bad(format!("unknown type '{w}'")),
            },
            Tok::AngleType(text) => {
                let (spelled, used) = match substitute_constants(&text, &self.consts) {
                    Ok(s) => s,
                    Err(m) => return bad(m),
                };
                match parse_angle_type(&spelled) {
                    Ok(t) => Ok(t),
                    Err(m) if used.is_empty() => bad(format!("malformed type '{text}': {m}")),
                    Err(m) => bad(format!(
                        "malformed type '{text}' with {}: {m}",
                        used.join(", ")
                    )),
                }
            }
            t => bad(format!("expected a type, found {}", t.describe())),
        }
    }
}

/// Reads a type as IR text spells it: a scalar (`index`, `bf16`) or an angle type
/// (`tensor<?x?xf32>`, `tile<64x64xf32>`, `smem<2x64x64xbf16>`, `mbarrier<2>`).
///
/// # Errors
/// The parser's message for a malformed spelling (`unknown type 'f31'`).
impl std::str::FromStr for Type {
    type Err = String;

    fn from_str(s: &str) -> Result<Type, String> {
        let s = s.trim();
        if let Some(t) = ScalarType::from_name(s) {
            return Ok(Type::Scalar(t));
        }
        if s.contains('<') {
            return parse_angle_type(s).map_err(|m| format!("malformed type '{s}': {m}"));
        }
        Err(format!("unknown type '{s}'"))
    }
}

/// Split `128x64xbf16` into its dimensions and its element type: dimensions (digits or
/// `?`) each followed by `x`, then the element type (`index` has an `x` of its own). When
/// what follows is no element type, split at the last `x` instead, so that the error names
/// a bad dimension (`4xax3xf32`) or a bad element type (`4xbindex`) as written.
fn split_dims(inner: &str) -> (Vec<&str>, &str) {
    let looks_like_dim = |s: &str| {
        let t = s.trim();
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '?' | '+' | '-'))
    };
    let mut dims = vec![];
    let mut rest = inner;
    while let Some((d, r)) = rest.split_once('x') {
        if !looks_like_dim(d) {
            break;
        }
        dims.push(d);
        rest = r;
    }
    if ScalarType::from_name(rest.trim()).is_some() {
        return (dims, rest);
    }
    match inner.rsplit_once('x') {
        Some((d, e)) if ScalarType::from_name(e.trim()).is_some() => (d.split('x').collect(), e),
        _ => (dims, rest),
    }
}

/// Parse `tile<…>`, `tensor<…>`, `smem<…>` or `mbarrier<…>` from its whole spelling.
fn parse_angle_type(text: &str) -> Result<Type, String> {
    let (head, rest) = text.split_once('<').ok_or("missing '<'")?;
    let inner = rest.strip_suffix('>').ok_or("missing '>'")?.trim();
    if head == "mbarrier" {
        let n: u64 = inner
            .parse()
            .map_err(|_| format!("expected a count, found '{inner}'"))?;
        if n == 0 {
            return Err("count must be positive".into());
        }
        return Ok(Type::Mbarrier { count: n });
    }
    let (inner, layout_text) = match inner.split_once(',') {
        Some((t, l)) if head == "tile" => (t.trim(), Some(l.trim())),
        Some(_) => return Err(format!("unexpected ',' in a {head} type")),
        None => (inner, None),
    };
    let (dims, elem_s) = split_dims(inner);
    let elem = ScalarType::from_name(elem_s.trim())
        .ok_or_else(|| format!("unknown element type '{}'", elem_s.trim()))?;
    if head == "tensor" {
        if dims.is_empty() || dims.iter().any(|d| d.trim() != "?") {
            return Err("tensor dimensions must all be '?' (sizes are runtime values)".into());
        }
        if dims.len() > 5 {
            return Err("tensors have at most 5 dimensions".into());
        }
        return Ok(Type::Tensor {
            rank: dims.len() as u32,
            elem,
        });
    }
    let mut shape = vec![];
    for d in dims {
        let n: u64 = d
            .trim()
            .parse()
            .map_err(|_| format!("expected a static size, found '{d}'"))?;
        shape.push(n);
    }
    let t = match head {
        "tile" => {
            let layout = match layout_text {
                Some(t) if !shape.is_empty() && shape.len() <= 3 => {
                    Some(Box::new(crate::layout::parse_linear(t, &shape)?))
                }
                _ => None,
            };
            Type::Tile {
                shape,
                elem,
                layout,
            }
        }
        "smem" => {
            if shape.len() < 2 {
                return Err("expected stages and at least one dimension".into());
            }
            let stages = shape.remove(0);
            Type::Smem {
                stages,
                shape,
                elem,
            }
        }
        _ => return Err(format!("unknown type '{head}'")),
    };
    t.check()?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_line_numbers() {
        let s = "a\n// -----\nb\nc\n// -----\nd";
        let parts = split_input(s);
        assert_eq!(parts, vec![("a\n", 1), ("b\nc\n", 3), ("d", 6)]);
    }

    #[test]
    fn types_read_from_str() {
        let t: Type = "tensor<?x?xbf16>".parse().unwrap();
        assert_eq!(
            t,
            Type::Tensor {
                rank: 2,
                elem: ScalarType::BF16
            }
        );
        assert_eq!(" index ".parse::<Type>().unwrap(), Type::INDEX);
        assert_eq!(
            "tile<4x8xf32>".parse::<Type>().unwrap(),
            Type::tile(&[4, 8], ScalarType::F32)
        );
        assert_eq!("f31".parse::<Type>().unwrap_err(), "unknown type 'f31'");
        let e = "tile<0x4xf32>".parse::<Type>().unwrap_err();
        assert!(e.starts_with("malformed type 'tile<0x4xf32>'"), "{e}");
    }

    #[test]
    fn types_parse() {
        assert_eq!(
            parse_angle_type("tile<128x64xbf16>").unwrap(),
            Type::tile(&[128, 64], ScalarType::BF16)
        );
        assert!(parse_angle_type("tile<0x4xf32>").is_err());
        assert!(parse_angle_type("tensor<4xf32>").is_err());
        assert_eq!(
            parse_angle_type("mbarrier<4>").unwrap(),
            Type::Mbarrier { count: 4 }
        );
        // `index` has an `x` of its own.
        assert_eq!(
            parse_angle_type("tile<4x8xindex>").unwrap(),
            Type::tile(&[4, 8], ScalarType::Index)
        );
        assert_eq!(
            parse_angle_type("tensor<?x?xindex>").unwrap(),
            Type::Tensor {
                rank: 2,
                elem: ScalarType::Index
            }
        );
        assert!(parse_angle_type("tile<index>").is_err());
        assert!(parse_angle_type("tile<4xbindex>").is_err());
        for t in [
            "tile<4x8xindex>",
            "tensor<?xindex>",
            "smem<2x4x8xindex>",
            "tile<3xi64>",
        ] {
            assert_eq!(parse_angle_type(t).unwrap().to_string(), t);
        }
    }

    #[test]
    fn undefined_and_redefined_values() {
        let e = parse(
            "tile.kernel @k() {\n  %a = tile.add %b, %b : f32\n  tile.return\n}\n",
            "t.tile",
        )
        .unwrap_err();
        assert_eq!(
            e.0[0].to_string(),
            "t.tile:2:17: error: use of undefined value '%b'"
        );
        let e = parse(
            "tile.kernel @k(%x: f32) {\n  %x = tile.neg %x : f32\n  tile.return\n}\n",
            "t.tile",
        )
        .unwrap_err();
        assert_eq!(
            e.0[0].to_string(),
            "t.tile:2:3: error: redefinition of value '%x'"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let mut s = String::from("tile.kernel @k(%c: i1) {\n");
        for _ in 0..10_000 {
            s.push_str("tile.if %c {\n");
        }
        let e = parse(&s, "deep.tile").unwrap_err();
        assert!(e.0[0].message.contains("nested deeper than 128"), "{}", e);
    }
}
