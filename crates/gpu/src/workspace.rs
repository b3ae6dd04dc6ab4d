//! Where an operation's device buffers come from: [`Workspace`].
//!
//! The MSM and the prover allocate their scratch through a workspace their caller supplies, so
//! the caller decides where device memory comes from: a partition's arena reservation
//! (cuzk-vram implements [`Workspace`] for it: no driver call per buffer, ranges returned to the
//! reservation), or, for callers that use a kernel crate alone (benchmarks, tests), the
//! stream's pool ([`StreamPool`]: `cuMemAllocAsync` per buffer).

use std::mem::size_of;

use crate::copy::DeviceCopy;
use crate::{DeviceBuffer, GpuError, Stream};

/// A source of device buffers for work ordered on one stream.
///
/// A buffer is uninitialised (whatever its memory last held) and is the caller's alone until it
/// drops; what happens to its memory then is the workspace's business (a pool frees it on the
/// stream, an arena reservation takes the range back for the next buffer). A caller that drops
/// a buffer while work on another stream may still use it orders that work first.
pub trait Workspace: Send + Sync + std::fmt::Debug {
    /// `bytes` bytes of device memory for work on `stream`; zero bytes give an empty buffer.
    fn alloc_bytes(&self, stream: &Stream, bytes: usize) -> Result<DeviceBuffer<u8>, GpuError>;
}

/// `len` elements of `T` from `workspace` (see [`Workspace::alloc_bytes`]).
pub fn alloc_in<T: DeviceCopy>(
    workspace: &dyn Workspace,
    stream: &Stream,
    len: usize,
) -> Result<DeviceBuffer<T>, GpuError> {
    let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
        GpuError::InvalidArgument(format!("{len} elements overflow the address space"))
    })?;
    workspace.alloc_bytes(stream, bytes)?.cast::<T>()
}

/// The stream's memory pool as a workspace: every buffer is a [`Stream::alloc`]
/// (`cuMemAllocAsync`), freed on the stream when it drops.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamPool;

impl Workspace for StreamPool {
    fn alloc_bytes(&self, stream: &Stream, bytes: usize) -> Result<DeviceBuffer<u8>, GpuError> {
        stream.alloc(bytes)
    }
}
