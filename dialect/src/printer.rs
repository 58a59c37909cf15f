//! The printer: a [`Module`] to IR text in the parser's grammar. Deterministic; values keep
//! their source names where the name is free in scope, others are numbered `%0, %1, …` per
//! kernel. Printing what [`crate::parse`] read gives the same bytes after one round trip.

use crate::ir::{Block, Module, Operation, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Print a whole module.
pub fn print_module(m: &Module) -> String {
    let mut p = Printer {
        m,
        out: String::new(),
        names: HashMap::new(),
        scopes: vec![],
        next: 0,
    };
    for (i, op) in m.ops.iter().enumerate() {
        if i > 0 {
            p.out.push('\n');
        }
        p.next = 0;
        p.scopes.push(HashSet::new());
        p.op(op, 0);
        p.scopes.pop();
    }
    p.out
}

/// Print one op (and what it holds) on its own, e.g. for `--print-ir-after` of a kernel.
pub fn print_op(m: &Module, op: &Operation) -> String {
    let mut p = Printer {
        m,
        out: String::new(),
        names: HashMap::new(),
        scopes: vec![HashSet::new()],
        next: 0,
    };
    p.op(op, 0);
    p.out
}

struct Printer<'a> {
    m: &'a Module,
    out: String,
    names: HashMap<Value, String>,
    scopes: Vec<HashSet<String>>,
    next: usize,
}

impl Printer<'_> {
    fn taken(&self, n: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(n))
    }

    fn def(&mut self, v: Value) -> String {
        // A name the lexer would not read back as one value name (e.g. `c-1`) prints as a
        // number instead.
        let readable = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$')
        };
        let name = match self.m.name(v) {
            Some(n) if readable(n) && !self.taken(n) => n.to_string(),
            _ => loop {
                let n = self.next.to_string();
                self.next += 1;
                if !self.taken(&n) {
                    break n;
                }
            },
        };
        self.scopes.last_mut().expect("scope").insert(name.clone());
        self.names.insert(v, name.clone());
        format!("%{name}")
    }

    fn use_(&self, v: Value) -> String {
        match self.names.get(&v) {
            Some(n) => format!("%{n}"),
            // Not defined before its use: print the handle so the error is visible.
            None => format!("%<undefined {}>", v.0),
        }
    }

    fn ty(&self, v: Value) -> String {
        match self.m.try_ty(v) {
            Some(t) => t.to_string(),
            None => "<invalid>".to_string(),
        }
    }

    fn arg_list(&mut self, args: &[Value]) -> String {
        let parts: Vec<String> = args
            .iter()
            .map(|&a| format!("{}: {}", self.def(a), self.ty(a)))
            .collect();
        parts.join(", ")
    }

    fn op(&mut self, op: &Operation, indent: usize) {
        let pad = "  ".repeat(indent);
        self.out.push_str(&pad);
        // Regions see names defined before the op, not its results; so print the header
        // with result names reserved only after the regions. To keep text order, we first
        // compute region text with a nested printer state, then the results.
        let mut header = String::new();
        let _ = write!(header, "{}", op.kind.name());
        let mut sig_scope_pushed = false;
        if let Some(s) = &op.symbol {
            let _ = write!(header, " @{s}");
            if let Some(b) = op.regions.first() {
                self.scopes.push(HashSet::new());
                sig_scope_pushed = true;
                let args = self.arg_list(&b.args);
                let _ = write!(header, "({args})");
            }
        }
        if !op.operands.is_empty() {
            let ops: Vec<String> = op.operands.iter().map(|&v| self.use_(v)).collect();
            let _ = write!(header, " {}", ops.join(", "));
        }
        if !op.attrs.is_empty() {
            let parts: Vec<String> = op.attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = write!(header, " {{{}}}", parts.join(", "));
        }
        if !op.results.is_empty() {
            let tys: Vec<String> = op.results.iter().map(|&v| self.ty(v)).collect();
            let _ = write!(header, " : {}", tys.join(", "));
        }
        let mut body = String::new();
        for (i, r) in op.regions.iter().enumerate() {
            let with_sig = i == 0 && sig_scope_pushed;
            body.push_str(&self.region(r, indent, with_sig));
        }
        if sig_scope_pushed {
            self.scopes.pop();
        }
        if !op.results.is_empty() {
            let rs: Vec<String> = op.results.iter().map(|&v| self.def(v)).collect();
            let _ = write!(self.out, "{} = ", rs.join(", "));
        }
        self.out.push_str(&header);
        self.out.push_str(&body);
        self.out.push('\n');
    }

    fn region(&mut self, b: &Block, indent: usize, args_in_signature: bool) -> String {
        let saved = std::mem::take(&mut self.out);
        self.out.push_str(" {\n");
        if !args_in_signature {
            self.scopes.push(HashSet::new());
        }
        if !args_in_signature && !b.args.is_empty() {
            let args = self.arg_list(&b.args);
            let _ = writeln!(self.out, "{}^bb0({args}):", "  ".repeat(indent));
        }
        for op in &b.ops {
            self.op(op, indent + 1);
        }
        if !args_in_signature {
            self.scopes.pop();
        }
        let _ = write!(self.out, "{}}}", "  ".repeat(indent));
        std::mem::replace(&mut self.out, saved)
    }
}
