//! What the interpreter-based pass tests share.

// Each test crate that includes this module uses part of it.
#![allow(dead_code)]

use tilec_dialect::interp::Tensor;
use tilec_dialect::{parse, verify, Module, ScalarType};

/// Example `name` (examples/NAME.tile, verified) with its 4096-column tiles made `cols` wide.
pub fn example(name: &str, cols: u64) -> Module {
    let path = format!("{}/../examples/{name}.tile", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path)
        .unwrap()
        .replace("4096", &cols.to_string());
    let m = parse(&src, &path).unwrap();
    verify(&m).unwrap();
    m
}

/// A xorshift generator of test data (deterministic per seed).
pub struct Rng(pub u64);

impl Rng {
    /// A value in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// A row-major tensor of `shape` filled with [`Rng::unit`] values rounded to `elem`.
    pub fn tensor(&mut self, elem: ScalarType, shape: &[usize]) -> Tensor {
        let v: Vec<f32> = (0..shape.iter().product()).map(|_| self.unit()).collect();
        Tensor::from_f32(elem, shape, &v)
    }
}
