//! What the benchmarks share: their command-line numbers.

/// The value after `name` on the command line (`--runs 3`), at least 1; `default` when
/// absent or not a number.
pub fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
}
