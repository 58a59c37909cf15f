//! What the interpreter-based pass tests share.

use tilec_dialect::interp::Tensor;
use tilec_dialect::ScalarType;

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
