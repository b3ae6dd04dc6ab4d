//! Host memory the device reads in place ([`MappedHost`], made by `Device::map_host`).
//!
//! Bases that do not fit on the device need not be copied to it whole, nor gathered on the host:
//! a host vector registered with the driver (page-locked and mapped into the device's address
//! space) is read by the kernels directly, each point that a gather or a batch addition needs
//! crossing the link once, the others never. The vector the host decoded is the pinned memory,
//! so nothing is held twice.
//!
//! Soundness: the device reads the host memory while Rust code may read it too, so nothing may
//! write it. `map_host` therefore takes the vector as an `Arc<Vec<H>>` with `H: Copy` (no interior
//! mutability) and keeps that `Arc` until the mapping drops: while it is alive no `&mut` to the
//! vector can exist. And a [`MappedHost`] hands out only `&DeviceBuffer`, so no safe copy can
//! write into it; kernels are given it as an input.

use std::ops::Deref;

use crate::DeviceBuffer;

/// A host vector mapped for the device to read in place: derefs to a [`DeviceBuffer`] for
/// kernel arguments (read only). Dropping it releases the mapping (the last mapping of a range
/// unregisters it) and the vector.
#[derive(Debug)]
pub struct MappedHost<T> {
    pub(crate) buf: DeviceBuffer<T>,
}

impl<T> Deref for MappedHost<T> {
    type Target = DeviceBuffer<T>;

    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buf
    }
}

/// The checks both drivers make before mapping `len` elements of `size` bytes at `address` as
/// elements of `T`: a non-empty range of whole elements, aligned to 16 bytes (kernels load
/// bases in 16-byte words).
pub(crate) fn check_mappable<T, H>(address: usize, len: usize) -> Result<usize, crate::GpuError> {
    crate::copy::check_same_size::<T, H>()?;
    let bytes = len * std::mem::size_of::<H>();
    if bytes == 0 || address % 16 != 0 {
        return Err(crate::GpuError::InvalidArgument(format!(
            "mapping {bytes} host bytes at {address:#x}: need a non-empty range aligned to 16 \
             bytes"
        )));
    }
    Ok(bytes)
}
