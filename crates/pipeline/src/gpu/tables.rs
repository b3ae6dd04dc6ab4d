//! The NTT's twiddle and scaling tables in the device's arena.
//!
//! The device's workers share one [`GpuNtt`](cuzk_ntt::gpu::GpuNtt), whose tables, made once
//! per domain size and direction, are named resident regions of the device's arena
//! (`ntt/table/<k>`), allocated through [`TableRegions`]: they show in the arena's accounting and
//! no table is allocated outside it. A table is refused where it would leave no room for the
//! largest partition the device's policy has been asked for: a full twiddle table (2 GiB per
//! direction at 2^27) is then left out and the NTT multiplies the two lookups instead, the same
//! values; the other tables (16 MiB or so) are needed, and residency leaves room for them
//! ([`needed_bytes`]).

use std::sync::atomic::{AtomicU64, Ordering};

use cuzk_gpu::{DeviceBuffer, GpuError, Stream, Workspace};
use cuzk_ntt::gpu::{GpuNtt, Transform};
use cuzk_vram::{Arena, DeviceBacking, VramError};

/// The transforms `ntt_h` runs.
const H_TRANSFORMS: [Transform; 3] = [
    Transform::Inverse,
    Transform::CosetForward,
    Transform::CosetInverse,
];

/// Arena bytes of the tables `ntt_h` needs on a domain of `domain` points (its full twiddle
/// tables, which are optional, aside), each table rounded up to the arena's `granule`.
pub(crate) fn needed_bytes(domain: usize, granule: u64) -> u64 {
    let log_n = domain.next_power_of_two().trailing_zeros();
    GpuNtt::needed_table_bytes(log_n, &H_TRANSFORMS)
        .into_iter()
        .map(|bytes| (bytes as u64).div_ceil(granule) * granule)
        .sum()
}

/// The NTT's table memory: each table a named resident region of the device's arena.
#[derive(Debug)]
pub(crate) struct TableRegions {
    arena: Arena<DeviceBacking>,
    /// The number of the next table's name.
    next: AtomicU64,
    /// Bytes a reservation must still find when the arena is idle: the largest partition's
    /// demand seen so far.
    keep: AtomicU64,
}

impl TableRegions {
    pub(crate) fn new(arena: Arena<DeviceBacking>) -> Self {
        Self {
            arena,
            next: AtomicU64::new(0),
            keep: AtomicU64::new(0),
        }
    }

    /// Tables made from now on leave room for a reservation of `bytes`.
    pub(crate) fn keep_room_for(&self, bytes: u64) {
        self.keep.fetch_max(bytes, Ordering::Relaxed);
    }
}

impl Workspace for TableRegions {
    fn alloc_bytes(&self, _stream: &Stream, bytes: usize) -> Result<DeviceBuffer<u8>, GpuError> {
        let refused = |largest_free| GpuError::OutOfWorkspace {
            requested: bytes as u64,
            largest_free,
        };
        let keep = self.keep.load(Ordering::Relaxed);
        if !self.arena.fits_when_idle(keep.saturating_add(bytes as u64)) {
            return Err(refused(self.arena.stats().largest_free_block));
        }
        let name = format!("ntt/table/{}", self.next.fetch_add(1, Ordering::Relaxed));
        let region = self
            .arena
            .alloc_resident(&name, bytes as u64)
            .map_err(|e| match e {
                VramError::OutOfMemory { largest_free, .. } => refused(largest_free),
                e => GpuError::Workspace(e.to_string()),
            })?;
        region
            .into_device_buffer::<u8>()
            .map_err(|e| GpuError::Workspace(e.to_string()))
    }
}
