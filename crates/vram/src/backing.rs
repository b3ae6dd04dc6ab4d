//! What the arena sits on: the one device allocation and the events that order releases.
//!
//! The arena's logic never talks to a driver. It asks its [`Backing`] for one region at start and
//! for nothing else on the hot path; releases are ordered by [`Fence`]s, which the arena only polls.
//! [`HostBacking`] and [`SimFence`] are the implementations for tests and the simulator; the
//! device backing (real memory through `cuzk-gpu`, events through `cuEventRecord` /
//! `cuEventQuery`) implements the same two traits.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::VramError;

/// A point in a device stream that the host can poll: "has all work recorded before me finished?"
///
/// A device implementation wraps an event recorded on the stream that last used a buffer
/// (`cuEventRecord`), and answers with `cuEventQuery`. Polling never blocks and never synchronises
/// the device: that is the whole point (see the crate documentation).
pub trait Fence: Send + Sync + fmt::Debug + 'static {
    /// True once every operation ordered before this fence has completed. Must not block.
    fn is_complete(&self) -> bool;
}

/// The memory an [`Arena`](crate::Arena) sub-allocates: one large region, allocated once.
pub trait Backing: Send + Sync + fmt::Debug + 'static {
    /// The one allocation. Dropping it frees it; the arena keeps it alive while any buffer lives.
    type Region: Send + Sync + fmt::Debug + 'static;
    /// The fence type that orders stream releases on this backing.
    type Fence: Fence;

    /// Bytes the device could allocate now (`cuMemGetInfo`'s free), used to size an arena from
    /// [`ArenaSize::FreeLessMargin`](crate::ArenaSize::FreeLessMargin). Called once, at start.
    fn free_bytes(&self) -> Result<u64, VramError>;

    /// Alignment in bytes (a power of two) of the start of any region this backing allocates.
    /// Buffers can be aligned to at most this much, since offsets are relative to the start.
    fn base_alignment(&self) -> u64;

    /// Allocates the arena's region of exactly `bytes` bytes. Called once per arena.
    fn allocate(&self, bytes: u64) -> Result<Self::Region, VramError>;
}

/// A simulated device for tests and the simulator: it hands out a region that is only a size.
///
/// No host memory is allocated; offsets are the whole interface. Its fence is [`SimFence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostBacking {
    total_bytes: u64,
}

impl HostBacking {
    /// A simulated device with `total_bytes` of memory, all of it free.
    pub fn new(total_bytes: u64) -> Self {
        Self { total_bytes }
    }
}

/// The region a [`HostBacking`] hands out: a size and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRegion {
    /// The region's size in bytes.
    pub bytes: u64,
}

impl Backing for HostBacking {
    type Region = HostRegion;
    type Fence = SimFence;

    fn free_bytes(&self) -> Result<u64, VramError> {
        Ok(self.total_bytes)
    }

    fn base_alignment(&self) -> u64 {
        // Device allocations start on 2 MiB pages; the simulated one promises the same.
        2 << 20
    }

    fn allocate(&self, bytes: u64) -> Result<HostRegion, VramError> {
        if bytes > self.total_bytes {
            return Err(VramError::Backing(format!(
                "simulated device has {} bytes, {bytes} requested",
                self.total_bytes
            )));
        }
        Ok(HostRegion { bytes })
    }
}

/// A fence completed by hand: the stand-in for a device event in tests and in the simulator.
///
/// Clones share one flag, so the side that "runs the stream" keeps a clone and calls
/// [`SimFence::signal`] when the simulated work has finished.
#[derive(Debug, Clone, Default)]
pub struct SimFence {
    done: Arc<AtomicBool>,
}

impl SimFence {
    /// A fence whose work is still running.
    pub fn pending() -> Self {
        Self::default()
    }

    /// A fence whose work has already finished: the release it orders is immediate.
    pub fn completed() -> Self {
        let fence = Self::default();
        fence.signal();
        fence
    }

    /// Marks the work before this fence as finished.
    pub fn signal(&self) {
        self.done.store(true, Ordering::Release);
    }
}

impl Fence for SimFence {
    fn is_complete(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}
