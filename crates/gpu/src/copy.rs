//! Plain-old-data for device memory, and the argument checks every driver shares.
#![allow(unsafe_code)]

use std::mem::size_of;

use cuzk_field::layout::{Fp2Limbs, FpLimbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::Scalar;

use crate::GpuError;

/// Plain-old-data that can be copied to and from the device byte for byte.
///
/// # Safety
///
/// Implementors have no padding or otherwise uninitialised bytes, and every bit pattern is a
/// valid value (the device may write anything into them).
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: a primitive integer or float: no padding, every bit pattern valid.
            unsafe impl DeviceCopy for $t {}
        )*
    };
}
device_copy!(u8, u16, u32, u64, i32, i64, f32, f64);

// SAFETY: an array of `DeviceCopy` elements has no padding between them and is valid for every
// bit pattern its elements are.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}
// SAFETY: `repr(C)` structs of `u32` arrays (sizes asserted in cuzk-field): no padding, every bit
// pattern is a value (possibly a non-canonical field element, which is still memory-safe).
unsafe impl DeviceCopy for FrLimbs {}
// SAFETY: as for `FrLimbs`.
unsafe impl DeviceCopy for FpLimbs {}
// SAFETY: as for `FrLimbs`.
unsafe impl DeviceCopy for Fp2Limbs {}
// SAFETY: as for `FrLimbs`.
unsafe impl DeviceCopy for G1AffineLimbs {}
// SAFETY: as for `FrLimbs`.
unsafe impl DeviceCopy for G2AffineLimbs {}
// SAFETY: blstrs' `Scalar` is `repr(transparent)` over `blst_fr`, a `repr(C)` `[u64; 4]`: no
// padding; a non-canonical limb pattern is a wrong field element, not undefined behaviour.
unsafe impl DeviceCopy for Scalar {}

pub(crate) fn bytes_of<T: DeviceCopy>(values: &[T]) -> &[u8] {
    // SAFETY: `T: DeviceCopy` has no padding, so every byte of the slice is initialised; the
    // byte slice covers exactly the same memory with alignment 1.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

pub(crate) fn bytes_of_mut<T: DeviceCopy>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`; writing arbitrary bytes is fine because every bit pattern of
    // `T: DeviceCopy` is a valid value.
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}

pub(crate) fn check_same_size<T, H>() -> Result<(), GpuError> {
    if size_of::<T>() == size_of::<H>() {
        Ok(())
    } else {
        Err(GpuError::InvalidArgument(format!(
            "host elements of {} bytes for device elements of {}",
            size_of::<H>(),
            size_of::<T>()
        )))
    }
}

/// The end of `len` elements from `offset` in a buffer of `buf_len`, if they fit.
pub(crate) fn check_range(buf_len: usize, offset: usize, len: usize) -> Result<usize, GpuError> {
    match offset.checked_add(len) {
        Some(end) if end <= buf_len => Ok(end),
        _ => Err(GpuError::InvalidArgument(format!(
            "{len} elements at offset {offset} overrun a buffer of {buf_len}"
        ))),
    }
}

pub(crate) fn check_len(expected: usize, got: usize) -> Result<(), GpuError> {
    if expected == got {
        Ok(())
    } else {
        Err(GpuError::LengthMismatch { expected, got })
    }
}
