//! The device backing (feature `cuda`): the arena's region is real device memory through
//! `cuzk-gpu`, and releases are ordered by CUDA events polled with `cuEventQuery`.
//!
//! The arena is created once per device at start (`cuMemAlloc` of the whole budget); after that
//! nothing here allocates, frees, synchronises the device or trims a pool. A buffer freed while
//! kernels may still read it carries a [`DeviceFence`] recorded on the stream that used it last,
//! and its bytes return to the arena when the host sees that event complete.
#![allow(unsafe_code)]

use cuzk_gpu::{Device, Event, GpuError, SharedRegion, Stream};

use crate::{Backing, Buffer, Fence, VramError};

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
