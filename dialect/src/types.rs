//! Types of the tile IR.
//!
//! - `i1`, `i32`, `i64`, `index`: integers; `index` is 64-bit in the kernel ABI
//! - `f16`, `bf16`, `f32`: IEEE half, bfloat16, single
//! - `e4m3`, `e5m2`: the 8-bit floats of PTX's `.e4m3` and `.e5m2` (the OCP FP8 formats;
//!   PyTorch's `float8_e4m3fn` and `float8_e5m2`, MLIR's `f8E4M3FN` and `f8E5M2`)
//! - `tile<128x64xbf16>`: a value tile: static shape (elements, outermost first) and element type,
//!   held by the CTA; at GPU level with its layout, `tile<4x1024xf32, #linear<...>>`
//!   ([`crate::layout`])
//! - `tensor<?x?xbf16>`: a global-memory tensor argument: rank and element type; sizes and strides
//!   are runtime values
//! - `smem<4x128x64xbf16>`: (GPU level) a shared-memory ring: stages × tile shape
//! - `mbarrier<4>`: (GPU level) an array of `mbarrier` objects in shared memory, 8 bytes each

use crate::layout::LinearLayout;
use std::fmt;

/// Scalar element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// 1-bit integer (booleans, predicates).
    I1,
    /// 32-bit integer.
    I32,
    /// 64-bit integer.
    I64,
    /// Index arithmetic type (64-bit).
    Index,
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BF16,
    /// IEEE 754 binary32.
    F32,
    /// 8-bit float, 4 exponent bits (bias 7), 3 mantissa bits, no infinities: ±448 at
    /// most, subnormals down to 2⁻⁹, one NaN pattern per sign (PTX `.e4m3`).
    E4M3,
    /// 8-bit float, 5 exponent bits (bias 15), 2 mantissa bits: ±57344 at most, subnormals
    /// down to 2⁻¹⁶, infinities and NaNs as in IEEE 754 (PTX `.e5m2`).
    E5M2,
}

impl ScalarType {
    /// All scalar types, in the order of their spelling table.
    pub const ALL: [ScalarType; 9] = [
        ScalarType::I1,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::Index,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::E4M3,
        ScalarType::E5M2,
    ];

    /// The spelling in IR text (`bf16`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::I1 => "i1",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::Index => "index",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::E4M3 => "e4m3",
            ScalarType::E5M2 => "e5m2",
        }
    }

    /// Parse a spelling (`"bf16"`).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Whether this is one of the 8-bit float types.
    pub fn is_fp8(self) -> bool {
        matches!(self, ScalarType::E4M3 | ScalarType::E5M2)
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F16
                | ScalarType::BF16
                | ScalarType::F32
                | ScalarType::E4M3
                | ScalarType::E5M2
        )
    }

    /// Whether this is an integer type (including `index` and `i1`).
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    /// The largest finite value of a float type (f16 65504, bf16 and f32 about 3.4e38,
    /// e4m3 448, e5m2 57344); `None` for an integer type.
    pub fn max_finite(self) -> Option<f64> {
        match self {
            ScalarType::F16 => Some(65504.0),
            ScalarType::BF16 => Some(3.3895313892515355e38),
            ScalarType::F32 => Some(f64::from(f32::MAX)),
            ScalarType::E4M3 => Some(448.0),
            ScalarType::E5M2 => Some(57344.0),
            _ => None,
        }
    }

    /// Size in bytes in memory (`i1` takes a byte; `index` 8).
    pub fn size_bytes(self) -> u64 {
        match self {
            ScalarType::I1 | ScalarType::E4M3 | ScalarType::E5M2 => 1,
            ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::Index => 8,
        }
    }

    /// The bit pattern of `v` in this type, in the low [`Self::size_bytes`] bytes, where
    /// `v` is exactly one of its values: a NaN as the type's canonical quiet NaN (IEEE 754
    /// binary16/32, bfloat16); for the fp8 types only zero, for the integer types only
    /// integers. `None` for a value the type cannot hold exactly.
    pub fn exact_bits(self, v: f64) -> Option<u64> {
        let exact = |back: f64| (back == v || (v.is_nan() && back.is_nan())).then_some(());
        match self {
            ScalarType::F32 => {
                let x = v as f32;
                exact(f64::from(x)).map(|()| u64::from(x.to_bits()))
            }
            ScalarType::BF16 => {
                let x = half::bf16::from_f64(v);
                exact(x.to_f64()).map(|()| u64::from(x.to_bits()))
            }
            ScalarType::F16 => {
                let x = half::f16::from_f64(v);
                exact(x.to_f64()).map(|()| u64::from(x.to_bits()))
            }
            ScalarType::E4M3 | ScalarType::E5M2 => (v == 0.0 && v.is_sign_positive()).then_some(0),
            ScalarType::I1 => (v == 0.0 || v == 1.0).then_some(v as u64),
            ScalarType::I32 => {
                let i = v as i32;
                exact(f64::from(i)).map(|()| u64::from(i as u32))
            }
            ScalarType::I64 | ScalarType::Index => {
                let i = v as i64;
                exact(i as f64).map(|()| i as u64)
            }
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type of an SSA value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A scalar.
    Scalar(ScalarType),
    /// A value tile with a static shape (elements per dimension, outermost first).
    Tile {
        /// Dimensions in elements, outermost first; none is zero.
        shape: Vec<u64>,
        /// Element type.
        elem: ScalarType,
        /// Where the elements live among the CTA's threads (GPU level, set by
        /// `tile-assign-layouts`); `None` in level-1 IR.
        layout: Option<Box<LinearLayout>>,
    },
    /// A global tensor of `rank` dimensions whose sizes and strides are runtime values.
    Tensor {
        /// Number of dimensions (1 to 5, the TMA limit).
        rank: u32,
        /// Element type.
        elem: ScalarType,
    },
    /// A ring of `stages` shared-memory tiles of `shape` (GPU level).
    Smem {
        /// Number of ring stages.
        stages: u64,
        /// Shape of one stage in elements, outermost first.
        shape: Vec<u64>,
        /// Element type.
        elem: ScalarType,
    },
    /// An array of `count` mbarriers in shared memory (GPU level), 8 bytes each.
    Mbarrier {
        /// Number of barriers.
        count: u64,
    },
}

/// The largest size of a tile or ring dimension, in elements (2^20).
pub const MAX_DIM: u64 = 1 << 20;

impl Type {
    /// `index`.
    pub const INDEX: Type = Type::Scalar(ScalarType::Index);
    /// `i1`.
    pub const I1: Type = Type::Scalar(ScalarType::I1);

    /// A tile type.
    pub fn tile(shape: &[u64], elem: ScalarType) -> Type {
        Type::Tile {
            shape: shape.to_vec(),
            elem,
            layout: None,
        }
    }

    /// The layout of a GPU-level tile type (`None` for other types and level-1 tiles).
    pub fn layout(&self) -> Option<&LinearLayout> {
        match self {
            Type::Tile { layout, .. } => layout.as_deref(),
            _ => None,
        }
    }

    /// Same tile type with `layout` (other types unchanged).
    pub fn with_layout(&self, l: Option<LinearLayout>) -> Type {
        match self {
            Type::Tile { shape, elem, .. } => Type::Tile {
                shape: shape.clone(),
                elem: *elem,
                layout: l.map(Box::new),
            },
            t => t.clone(),
        }
    }

    /// The element type of a scalar, tile, tensor or smem type.
    pub fn elem(&self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(*s),
            Type::Tile { elem, .. } | Type::Tensor { elem, .. } | Type::Smem { elem, .. } => {
                Some(*elem)
            }
            Type::Mbarrier { .. } => None,
        }
    }

    /// The shape of a tile type.
    pub fn tile_shape(&self) -> Option<&[u64]> {
        match self {
            Type::Tile { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// Whether this is a scalar type.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Scalar(_))
    }

    /// Whether this is `index` or an integer scalar.
    pub fn is_int_scalar(&self) -> bool {
        matches!(self, Type::Scalar(s) if s.is_int())
    }

    /// Whether this is an integer scalar or a tile of an integer type (`i1` included).
    pub fn is_int_like(&self) -> bool {
        matches!(self, Type::Scalar(s) | Type::Tile { elem: s, .. } if s.is_int())
    }

    /// Same type with another element type (tiles and scalars).
    pub fn with_elem(&self, e: ScalarType) -> Type {
        match self {
            Type::Scalar(_) => Type::Scalar(e),
            Type::Tile { shape, layout, .. } => Type::Tile {
                shape: shape.clone(),
                elem: e,
                layout: layout.clone(),
            },
            Type::Tensor { rank, .. } => Type::Tensor {
                rank: *rank,
                elem: e,
            },
            Type::Smem { stages, shape, .. } => Type::Smem {
                stages: *stages,
                shape: shape.clone(),
                elem: e,
            },
            Type::Mbarrier { .. } => self.clone(),
        }
    }

    /// Whether the type is within the IR's limits, the ones the parser applies to text:
    /// a tile has 1 to 3 dimensions and a ring stage 1 to 3, each of 1 to
    /// [`MAX_DIM`] elements; a ring has at least one stage and a size in bytes that fits in
    /// 64 bits; a tensor has rank 1 to 5; an mbarrier array at least one barrier.
    ///
    /// # Errors
    /// What is out of range, as the parser words it.
    pub fn check(&self) -> Result<(), String> {
        let dims = |shape: &[u64], what: &str| -> Result<(), String> {
            if shape.is_empty() || shape.len() > 3 {
                return Err(format!(
                    "{what} has 1 to 3 dimensions, found {}",
                    shape.len()
                ));
            }
            match shape.iter().find(|&&d| d == 0 || d > MAX_DIM) {
                Some(0) => Err("dimensions must be positive".into()),
                Some(d) => Err(format!("dimension {d} is larger than {MAX_DIM}")),
                None => Ok(()),
            }
        };
        match self {
            Type::Scalar(_) => Ok(()),
            Type::Tile { shape, .. } => dims(shape, "a tile"),
            Type::Tensor { rank, .. } if (1..=5).contains(rank) => Ok(()),
            Type::Tensor { rank, .. } => {
                Err(format!("a tensor has 1 to 5 dimensions, found {rank}"))
            }
            Type::Smem { stages: 0, .. } => Err("a ring has at least one stage".into()),
            Type::Smem {
                stages,
                shape,
                elem,
            } => {
                dims(shape, "a ring stage")?;
                let bytes = shape
                    .iter()
                    .try_fold(elem.size_bytes(), |acc, &d| acc.checked_mul(d))
                    .and_then(|b| b.checked_mul(*stages));
                match bytes {
                    Some(_) => Ok(()),
                    None => Err("the ring's size in bytes does not fit in 64 bits".into()),
                }
            }
            Type::Mbarrier { count: 0 } => Err("count must be positive".into()),
            Type::Mbarrier { .. } => Ok(()),
        }
    }

    /// Bytes of shared memory this type takes when allocated (smem rings, mbarriers).
    pub fn smem_bytes(&self) -> u64 {
        match self {
            Type::Smem {
                stages,
                shape,
                elem,
            } => stages * shape.iter().product::<u64>() * elem.size_bytes(),
            Type::Mbarrier { count } => count * 8,
            _ => 0,
        }
    }
}

fn write_dims(f: &mut fmt::Formatter<'_>, dims: &[u64]) -> fmt::Result {
    for d in dims {
        write!(f, "{d}x")?;
    }
    Ok(())
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Tile {
                shape,
                elem,
                layout,
            } => {
                f.write_str("tile<")?;
                write_dims(f, shape)?;
                write!(f, "{elem}")?;
                if let Some(l) = layout {
                    write!(f, ", {l}")?;
                }
                f.write_str(">")
            }
            Type::Tensor { rank, elem } => {
                f.write_str("tensor<")?;
                for _ in 0..*rank {
                    f.write_str("?x")?;
                }
                write!(f, "{elem}>")
            }
            Type::Smem {
                stages,
                shape,
                elem,
            } => {
                write!(f, "smem<{stages}x")?;
                write_dims(f, shape)?;
                write!(f, "{elem}>")
            }
            Type::Mbarrier { count } => write!(f, "mbarrier<{count}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact_bits_of_paddings() {
        use ScalarType as S;
        assert_eq!(S::BF16.exact_bits(f64::NEG_INFINITY), Some(0xFF80));
        assert_eq!(S::F16.exact_bits(f64::NEG_INFINITY), Some(0xFC00));
        assert_eq!(S::F32.exact_bits(f64::NEG_INFINITY), Some(0xFF80_0000));
        assert_eq!(S::F32.exact_bits(1.0), Some(0x3F80_0000));
        assert_eq!(S::BF16.exact_bits(-2.0), Some(0xC000));
        assert_eq!(S::F16.exact_bits(0.5), Some(0x3800));
        assert_eq!(S::BF16.exact_bits(f64::NAN), Some(0x7FC0));
        assert_eq!(S::F32.exact_bits(f64::NAN), Some(0x7FC0_0000));
        // Not exactly a value of the type.
        assert_eq!(S::BF16.exact_bits(0.1), None);
        assert_eq!(S::F32.exact_bits(0.1), None);
        assert_eq!(S::F16.exact_bits(1e6), None);
        assert_eq!(S::E4M3.exact_bits(0.0), Some(0));
        assert_eq!(S::E4M3.exact_bits(1.0), None);
        assert_eq!(S::I32.exact_bits(-1.0), Some(0xFFFF_FFFF));
        assert_eq!(S::I32.exact_bits(0.5), None);
        assert_eq!(S::I32.exact_bits(1e10), None);
        assert_eq!(S::I64.exact_bits(-1.0), Some(u64::MAX));
        assert_eq!(S::I1.exact_bits(1.0), Some(1));
        assert_eq!(S::I1.exact_bits(2.0), None);
    }

    use super::*;

    #[test]
    fn display_spellings() {
        assert_eq!(
            Type::tile(&[128, 64], ScalarType::BF16).to_string(),
            "tile<128x64xbf16>"
        );
        assert_eq!(
            Type::Tensor {
                rank: 2,
                elem: ScalarType::F32
            }
            .to_string(),
            "tensor<?x?xf32>"
        );
        let s = Type::Smem {
            stages: 4,
            shape: vec![128, 64],
            elem: ScalarType::BF16,
        };
        assert_eq!(s.to_string(), "smem<4x128x64xbf16>");
        assert_eq!(s.smem_bytes(), 4 * 128 * 64 * 2);
        assert_eq!(Type::Mbarrier { count: 4 }.smem_bytes(), 32);
    }
}
