//! Reading a tensor from a DLPack producer (`__dlpack__` and `__dlpack_device__`, the
//! Python array API's exchange protocol) without PyTorch.
//!
//! The capsule (`"dltensor"`, a `DLManagedTensor` as `dlpack.h` v0.8 and later lay it out)
//! is read, not consumed: its name stays, so its own destructor frees it, and the memory
//! stays the producer's, whose object the caller holds through the launch.

use std::ffi::{c_void, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::ArgumentError;

/// `DLDevice` (dlpack.h).
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// `DLDataType` (dlpack.h).
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// `DLTensor` (dlpack.h).
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// `kDLCUDA` and `kDLCUDAManaged`: memory a kernel on that device reads.
const CUDA: i32 = 2;
const CUDA_MANAGED: i32 = 13;

/// tilec's dtype name for a DLPack type code and width (`kDLInt` 0, `kDLFloat` 2,
/// `kDLBfloat` 4, `kDLBool` 6, `kDLFloat8_e4m3fn` 10, `kDLFloat8_e5m2` 12).
fn dtype(code: u8, bits: u8) -> Option<&'static str> {
    Some(match (code, bits) {
        (2, 32) => "f32",
        (2, 16) => "f16",
        (4, 16) => "bf16",
        (0, 32) => "i32",
        (0, 64) => "i64",
        (6, 8) | (1, 1) => "i1",
        (10, 8) => "e4m3",
        (12, 8) => "e5m2",
        _ => return None,
    })
}

/// A tensor as the package passes it: (address, dtype, shape, strides in elements,
/// device ordinal or -1).
pub type TensorTuple = (u64, &'static str, Vec<u64>, Vec<i64>, i64);

/// The tensor a DLPack producer exports, as the package's tuple
/// `(ptr, dtype, shape, strides in elements, device)` (device -1 for memory a GPU kernel
/// cannot take).
///
/// # Errors
/// `ArgumentError` naming `name` for a producer that gives no `"dltensor"` capsule, a
/// vector or unknown dtype, or more than 5 dimensions.
#[pyfunction]
pub fn dlpack_tensor<'py>(name: &str, obj: &Bound<'py, PyAny>) -> PyResult<TensorTuple> {
    let bad = |what: String| ArgumentError::new_err(format!("'{name}': {what}"));
    let dev = obj.call_method0("__dlpack_device__")?;
    let (device_type, device_id): (i32, i32) = dev
        .cast::<PyTuple>()
        .ok()
        .and_then(|t| t.extract().ok())
        .ok_or_else(|| bad(format!("__dlpack_device__ gave {dev}, not (type, id)")))?;
    let capsule = obj.call_method0("__dlpack__")?;
    let wanted: &CStr = c"dltensor";
    // SAFETY: PyCapsule_IsValid checks the object's type and name; it holds a pointer
    // only while `capsule` lives, and the read below ends before it is dropped.
    let ptr = unsafe {
        if ffi::PyCapsule_IsValid(capsule.as_ptr(), wanted.as_ptr()) != 1 {
            return Err(bad(
                "__dlpack__ gave no unconsumed \"dltensor\" capsule".to_string()
            ));
        }
        ffi::PyCapsule_GetPointer(capsule.as_ptr(), wanted.as_ptr())
    };
    if ptr.is_null() {
        return Err(bad("the DLPack capsule holds no tensor".to_string()));
    }
    // SAFETY: a valid "dltensor" capsule holds a DLManagedTensor, whose first member is
    // the DLTensor; its shape (and strides, when not null) hold ndim values.
    let t = unsafe { &*ptr.cast::<DlTensor>() };
    if !(0..=5).contains(&t.ndim) {
        return Err(bad(format!(
            "a DLPack tensor of rank {} (at most 5)",
            t.ndim
        )));
    }
    let n = t.ndim as usize;
    let read = |p: *const i64| -> Vec<i64> {
        if n == 0 || p.is_null() {
            return vec![];
        }
        // SAFETY: as above, n values.
        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
    };
    let shape = read(t.shape);
    if shape.iter().any(|&d| d < 0) {
        return Err(bad(format!(
            "a DLPack shape {shape:?} with a negative size"
        )));
    }
    let shape: Vec<u64> = shape.into_iter().map(|d| d as u64).collect();
    let strides = if t.strides.is_null() {
        let mut s = vec![1i64; n];
        for d in (0..n.saturating_sub(1)).rev() {
            s[d] = s[d + 1].saturating_mul(i64::try_from(shape[d + 1]).unwrap_or(i64::MAX));
        }
        s
    } else {
        read(t.strides)
    };
    if t.dtype.lanes != 1 {
        return Err(bad(format!(
            "a DLPack vector type ({} lanes) has no tilec dtype",
            t.dtype.lanes
        )));
    }
    let dt = dtype(t.dtype.code, t.dtype.bits).ok_or_else(|| {
        bad(format!(
            "tilec has no dtype for DLPack type code {} with {} bits",
            t.dtype.code, t.dtype.bits
        ))
    })?;
    let address = (t.data as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| bad("the DLPack data pointer and byte offset overflow".to_string()))?;
    let device = match device_type {
        CUDA | CUDA_MANAGED => i64::from(device_id),
        _ => -1,
    };
    Ok((address, dt, shape, strides, device))
}
