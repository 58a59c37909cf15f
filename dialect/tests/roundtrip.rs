//! Every example parses, verifies, and prints back to the same bytes after one round trip.

use tilec_dialect::{parse, print_module, verify};

fn examples() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tile"))
        .collect();
    v.sort();
    assert!(v.len() >= 3, "examples missing in {}", dir.display());
    v
}

#[test]
fn examples_round_trip_and_verify() {
    for p in examples() {
        let src = std::fs::read_to_string(&p).unwrap();
        let name = p.display().to_string();
        let m = parse(&src, &name).unwrap_or_else(|e| panic!("{}", e.render(Some(&src))));
        verify(&m).unwrap_or_else(|e| panic!("{}", e.render(Some(&src))));
        let once = print_module(&m);
        let m2 =
            parse(&once, &name).unwrap_or_else(|e| panic!("{}\n{once}", e.render(Some(&once))));
        let twice = print_module(&m2);
        assert_eq!(once, twice, "{name}: print is not a fixed point");
        // The examples are written in printed form, comments aside; one that declares
        // kernel constants prints concrete, as its defaults give it.
        if m.kernels().any(|k| k.attr("constants").is_some()) {
            for k in m.kernels() {
                let head = format!("tile.kernel @{}(", k.symbol.as_deref().unwrap_or("?"));
                assert!(
                    once.contains(&head),
                    "{name}: not printed concrete:\n{once}"
                );
            }
            continue;
        }
        let body: String = src
            .lines()
            .filter(|l| !l.starts_with("//"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(once, body, "{name}: printing changed the text");
    }
}
