//! Every `.rs` file of the workspace keeps its lines within 100 columns (characters), the
//! `max_width` of `rustfmt.toml`: rustfmt wraps code, but not comments or strings.

use std::path::{Path, PathBuf};

const MAX: usize = 100;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            // Build outputs, the Python environment, git.
            if !matches!(
                name.as_ref(),
                "target" | ".venv" | ".git" | "corpus" | "artifacts"
            ) {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn lines_fit_in_100_columns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![];
    rust_files(&root, &mut files);
    assert!(
        files.len() > 20,
        "found only {} .rs files under {}",
        files.len(),
        root.display()
    );
    let mut long = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, l) in text.lines().enumerate() {
            let n = l.chars().count();
            if n > MAX {
                let shown = f.strip_prefix(&root).unwrap_or(f).display().to_string();
                long.push(format!("{shown}:{}: {n} columns", i + 1));
            }
        }
    }
    assert!(
        long.is_empty(),
        "lines longer than {MAX} columns:\n{}",
        long.join("\n")
    );
}
