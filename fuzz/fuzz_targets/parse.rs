//! Fuzz target `parse`: arbitrary bytes through the whole text front end.
//!
//! 1. `parse_bytes` (UTF-8 check, lexer, parser) must return, never panic; diagnostics
//!    must render with their source line and caret.
//! 2. `--split-input-file` and `--verify-diagnostics` machinery: each `// -----` piece is
//!    parsed on its own and its `expected-…` comments are collected and matched.
//! 3. What parses, prints, and the printed text parses back and prints to the same bytes
//!    (the fixed point DESIGN.md promises); what verifies still verifies after the round
//!    trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use tilec_dialect::{expected, parse, parse_bytes, parser, print_module, verify};

fuzz_target!(|data: &[u8]| {
    let m = match parse_bytes(data, "fuzz.tile") {
        Ok(m) => m,
        Err(e) => {
            let src = std::str::from_utf8(data).ok();
            let _ = e.render(src);
            if let Some(src) = src {
                split_pieces(src);
            }
            return;
        }
    };
    let src = std::str::from_utf8(data).expect("parse_bytes accepted it");
    split_pieces(src);
    let verified = match verify(&m) {
        Ok(()) => true,
        Err(e) => {
            let _ = e.render(Some(src));
            false
        }
    };
    let once = print_module(&m);
    let m2 = match parse(&once, "once.tile") {
        Ok(m2) => m2,
        Err(e) => panic!("printed IR does not parse:\n{}\n{once}", e.render(Some(&once))),
    };
    if verified {
        if let Err(e) = verify(&m2) {
            panic!("printed IR no longer verifies:\n{}\n{once}", e.render(Some(&once)));
        }
    }
    let twice = print_module(&m2);
    assert_eq!(once, twice, "print is not a fixed point");
});

fn split_pieces(src: &str) {
    let file: Arc<str> = Arc::from("fuzz.tile");
    for (chunk, first_line) in parser::split_input(src) {
        let produced = match parser::parse_chunk(chunk, &file, first_line) {
            Ok(m) => verify(&m).err().map(|d| d.0).unwrap_or_default(),
            Err(d) => d.0,
        };
        if let Ok(exp) = expected::collect(chunk, &file, first_line) {
            let mismatches = expected::check(&exp, &produced);
            let _ = tilec_dialect::Diagnostics(mismatches).render(Some(src));
        }
    }
}
