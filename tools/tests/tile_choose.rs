//! `tile-choose`: the heuristic's table for the benchmark shapes and for given ones, and
//! its usage errors.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tile-choose"))
        .args(args)
        .output()
        .expect("tile-choose runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The tile column of each data row.
fn tiles(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(2)
        .map(|l| l.split('|').nth(5).unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn the_benchmark_table_has_a_row_per_shape() {
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    let rows = tiles(&out);
    assert_eq!(rows.len(), 21, "{out}");
    assert_eq!(rows[0], "64x128x64", "{out}");
    assert_eq!(rows[3], "128x256x64", "{out}");
    assert_eq!(rows[5], "16x64x64", "{out}");
    assert_eq!(rows[6], "64x64x64", "{out}");
    let first = out.lines().nth(2).unwrap();
    let head = "| 1 | 1024 | 1024 | 1024 | 64x128x64 | 6 | none | tma | 1 | 0.97 |";
    assert!(first.starts_with(head), "{first}");
    assert!(
        first.contains("128 tiles of 64x128 = 0.97 waves on 132 SMs"),
        "{first}"
    );
}

#[test]
fn given_shapes_targets_and_sms() {
    let (code, out, _) = run(&["16x4096x4096", "8x128x4096x4096", "--dtype", "f16"]);
    assert_eq!(code, 0);
    assert_eq!(tiles(&out), ["16x64x64", "128x256x64"]);
    assert!(out
        .lines()
        .nth(3)
        .unwrap()
        .starts_with("| 8 | 128 | 4096 | 4096 |"));
    let (code, out, _) = run(&["--target", "sm_100", "16x4096x4096"]);
    assert_eq!(code, 0);
    let row = out.lines().nth(2).unwrap();
    assert!(
        row.contains("| 128x256x64 | 4 | clc | direct | 1 | - | - | - | - |"),
        "{row}"
    );
    assert!(
        row.contains("the only tile sm_100 lowers (mma.sync)"),
        "{row}"
    );
    let (_, out, _) = run(&["--sms", "16", "1024x1024x1024"]);
    assert_eq!(tiles(&out), ["128x256x64"]);
    // fp8: the promoted tiles, K by 128 bytes.
    let (code, out, err) = run(&["8192x8192x8192", "2048x2048x2048", "--dtype", "e4m3"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(tiles(&out), ["128x192x128", "128x128x128"]);
    // The cluster column: 8192³ in a 1x2 cluster, 2048³ without.
    let cluster = |row: &str| row.split('|').nth(9).unwrap_or("").trim().to_string();
    let rows: Vec<&str> = out.lines().skip(2).collect();
    assert_eq!(
        (cluster(rows[0]), cluster(rows[1])),
        ("1x2".into(), "1".into())
    );
    let (code, out, _) = run(&["--dtype", "e4m3", "--fast-accum", "8192x8192x8192"]);
    assert_eq!(code, 0);
    assert_eq!(tiles(&out), ["128x256x128"]);
    let (code, out, _) = run(&["--dtype", "e5m2", "--target", "sm_90", "8192x8192x8192"]);
    assert_eq!(code, 0);
    assert_eq!(tiles(&out), ["128x256x128"]);
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &["16x4096"][..],
        &["0x16x16"],
        &["--target", "sm_80"],
        &["--dtype", "f32"],
        &["--sms", "0"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("error:"), "{err}");
    }
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_the_write_quietly() {
    // `tile-choose | head -1`: stdout closed before the table is written.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tile-choose"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tile-choose runs");
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
}
