//! The device backing (feature `cuda`): the arena's region is real device memory through
//! `cuzk-gpu`, and releases are ordered by CUDA events polled with `cuEventQuery`.
//!
//! The arena is created once per device at start (`cuMemAlloc` of the whole budget); after that
//! nothing here allocates, frees, synchronises the device or trims a pool. A buffer freed while
//! kernels may still read it carries a [`DeviceFence`] recorded on the stream that used it last,
//! and its bytes return to the arena when the host sees that event complete.
//!
//! A buffer becomes a `cuzk_gpu::DeviceBuffer` ([`Buffer::into_device_buffer`]) that every copy,
//! clear and kernel argument of cuzk-gpu takes, and a [`Reservation`] is a
//! [`cuzk_gpu::Workspace`]: the MSM and the prover allocate a partition's buffers from its
//! reservation with no driver call, each range returning to the reservation when its buffer
//! drops.
#![allow(unsafe_code)]

use std::mem::size_of;

use cuzk_gpu::{
    Device, DeviceBuffer, DeviceCopy, Event, GpuError, SharedRegion, Stream, Workspace,
};

use crate::{Backing, Buffer, Fence, Reservation, VramError};

fn gpu(e: GpuError) -> VramError {
    VramError::Backing(e.to_string())
}

/// Device memory of one GPU as an arena backing.
#[derive(Debug)]
pub struct DeviceBacking {
    device: Device,
    stream: Stream,
}

impl DeviceBacking {
    /// The backing of `device`; the region is allocated on a stream of its own.
    pub fn new(device: Device) -> Result<Self, VramError> {
        let stream = device.new_stream().map_err(gpu)?;
        Ok(Self { device, stream })
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl Backing for DeviceBacking {
    type Region = SharedRegion;
    type Fence = DeviceFence;

    fn free_bytes(&self) -> Result<u64, VramError> {
        let (free, _total) = self.device.memory().map_err(gpu)?;
        Ok(free as u64)
    }

    fn base_alignment(&self) -> u64 {
        // cuMemAlloc returns addresses aligned to at least 256 bytes.
        256
    }

    fn allocate(&self, bytes: u64) -> Result<SharedRegion, VramError> {
        let bytes = usize::try_from(bytes).map_err(|_| {
            VramError::Backing(format!("{bytes} bytes do not fit the address space"))
        })?;
        let region = SharedRegion::new(&self.stream, bytes).map_err(gpu)?;
        self.stream.synchronize().map_err(gpu)?;
        Ok(region)
    }
}

/// A CUDA event recorded after the last use of a buffer.
#[derive(Debug)]
pub struct DeviceFence(Event);

impl DeviceFence {
    /// Records a fence after the work now on `stream`.
    pub fn record(stream: &Stream) -> Result<Self, VramError> {
        stream.record_event().map(DeviceFence).map_err(gpu)
    }
}

impl Fence for DeviceFence {
    fn is_complete(&self) -> bool {
        // A failed query means the context is broken: no kernel of it runs any more, so nothing
        // can still read the buffer, and holding its bytes back forever would help no one.
        self.0.is_complete().unwrap_or(true)
    }
}

impl Buffer<DeviceBacking> {
    /// Copies `host` to the start of this buffer, ordered on `stream`.
    pub fn upload(&self, stream: &Stream, host: &[u8]) -> Result<(), VramError> {
        self.check_len(host.len())?;
        // SAFETY: the arena never hands out overlapping live ranges (its state-machine tests
        // check this), and this buffer is live for the whole call, so the range is ours alone.
        unsafe {
            self.region()
                .upload_at(stream, self.offset() as usize, host)
        }
        .map_err(gpu)
    }

    /// Copies the start of this buffer to `host` after the work on `stream`, and waits for it.
    pub fn download(&self, stream: &Stream, host: &mut [u8]) -> Result<(), VramError> {
        self.check_len(host.len())?;
        // SAFETY: as for `upload`: the range belongs to this live buffer alone.
        unsafe {
            self.region()
                .download_at(stream, self.offset() as usize, host)
        }
        .map_err(gpu)
    }

    /// The device address of the buffer, for kernel arguments.
    pub fn device_address(&self) -> Result<u64, VramError> {
        self.region()
            .address_at(self.offset() as usize)
            .map_err(gpu)
    }

    /// The buffer as `bytes() / size_of::<T>()` elements of `T` for cuzk-gpu's copies and
    /// kernels. The device buffer holds this one: dropping it returns the range to the arena (at
    /// once, or after the fence given to [`Buffer::defer_release`] before).
    pub fn into_device_buffer<T: DeviceCopy>(self) -> Result<DeviceBuffer<T>, VramError> {
        let size = size_of::<T>() as u64;
        if size == 0 || self.bytes() % size != 0 {
            return Err(VramError::Backing(format!(
                "{} bytes are no whole number of {size}-byte elements",
                self.bytes()
            )));
        }
        let len = usize::try_from(self.bytes() / size)
            .map_err(|_| VramError::Backing("a buffer beyond the address space".into()))?;
        let offset = self.offset() as usize;
        let arena = self.arena();
        // SAFETY: the arena never hands out overlapping live ranges (its state-machine tests
        // check this), and this buffer, which owns `offset..offset + bytes()`, lives inside the
        // device buffer until it drops; the region is the arena's, which the buffer keeps alive.
        unsafe { arena.region().lend::<T>(offset, len, Box::new(self)) }.map_err(gpu)
    }

    fn check_len(&self, len: usize) -> Result<(), VramError> {
        if len as u64 > self.bytes() {
            return Err(VramError::Backing(format!(
                "{len} bytes do not fit a buffer of {}",
                self.bytes()
            )));
        }
        Ok(())
    }
}

/// A partition's reservation hands out its buffers: no driver call, the range returning to the
/// reservation when the buffer drops. A buffer that does not fit in what is left is
/// [`GpuError::OutOfWorkspace`]: the reservation was sized without it.
impl Workspace for Reservation<DeviceBacking> {
    fn alloc_bytes(&self, _stream: &Stream, bytes: usize) -> Result<DeviceBuffer<u8>, GpuError> {
        if bytes == 0 {
            let offset = self.range().start as usize;
            // SAFETY: an empty range is nobody's; the region belongs to the arena, which
            // outlives this call, and an empty buffer is never read or written.
            return unsafe { self.arena().region().lend::<u8>(offset, 0, Box::new(())) };
        }
        let buf = self.alloc(bytes as u64).map_err(|e| match e {
            VramError::ReservationExhausted {
                requested,
                largest_free,
            } => GpuError::OutOfWorkspace {
                requested,
                largest_free,
            },
            e => GpuError::Workspace(e.to_string()),
        })?;
        buf.into_device_buffer::<u8>()
            .map_err(|e| GpuError::Workspace(e.to_string()))
    }
}
