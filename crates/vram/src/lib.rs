//! Device memory for cuzk: one arena per device, sub-allocated by the engine on the host.
//!
//! # Why an arena
//!
//! The incumbent engine freed device memory through device-global calls, so its two-lock design
//! made every free wait for every other worker's kernels and pre-staging never found room
//! (docs/ARCHITECTURE.md, "Why the arena and the policies"). The lesson: whether a worker may
//! stage must be a question the host can answer from its own books, and freeing must never
//! synchronise the device.
//!
//! So this crate makes VRAM a host-side data structure:
//! - [`Arena`]: one region per device allocated once at start ([`ArenaSize`]: a budget, or the
//!   free memory less a margin), sub-allocated best fit with coalescing of free neighbours, every
//!   buffer aligned to a granule. Resident data (the SRS) gets named regions carved from the high
//!   end ([`Arena::alloc_resident`]); per-partition data lives low.
//! - [`Reservation`]: a worker reserves a contiguous block for a partition before staging. A
//!   reservation that does not fit now waits ([`Arena::reserve`], first come first served) or
//!   answers "not now" ([`Arena::try_reserve`]); one that could never fit beside the resident
//!   regions is refused at once. Buffers come from the block, so they never wait on each other.
//! - Stream-ordered release: [`Buffer::release_after`] and [`Reservation::release_after`] take a
//!   [`Fence`] (an event recorded after the last use). The bytes return when the host sees the
//!   fence complete; the arena only polls fences, it never waits on the device.
//! - [`Stats`]: in use, reserved, resident, pending, free, largest free block, peaks, waits and
//!   their durations; [`Snapshot`] lists every range and [`Snapshot::check`] proves they tile.
//!
//! # Generic over the backing
//!
//! [`Arena`] is generic over a [`Backing`] (the one region, and the [`Fence`] type), so the same
//! logic runs on [`HostBacking`] with [`SimFence`] in tests and in the interlock simulator, and on
//! real device memory through `cuzk-gpu` (the `cuda` feature: `DeviceBacking`, whose buffers
//! become `cuzk_gpu::DeviceBuffer`s lent from the region and whose reservations are
//! `cuzk_gpu::Workspace`s, so the MSM and the prover allocate a partition's buffers from its
//! reservation).
//!
//! # Threads
//!
//! An arena is shared by all the workers of its device: handles are cheap clones of one
//! `Arc`, the books sit behind one `Mutex`, and blocked reservations sleep on a `Condvar` that
//! every release notifies. Releases that wait on a fence are noticed by polling at
//! [`ArenaConfig::poll_interval`] while someone waits, or at once through [`Arena::poll`].
//!
//! # Deadlock freedom
//!
//! A reservation waits only for bytes held by transient holders (reservations, buffers outside
//! resident regions, pending releases), never for resident regions: if it could not fit with all
//! transient holders gone it is refused. Transient holders release without needing anything from
//! a waiter, provided the rule a policy enforces holds: no thread waits for a reservation while it
//! holds another (reserve a partition's whole footprint in one call). The proptest state machine
//! in `tests/` checks this, along with no overlap, the budget, and every byte coming back.

#![deny(unsafe_code)] // Only the `cuda` device backing (`device.rs`) copies into the shared region.
#![warn(missing_docs)]

mod arena;
mod backing;
#[cfg(feature = "cuda")]
mod device;
mod free_list;
mod stats;

pub use arena::{Arena, ArenaConfig, ArenaSize, Buffer, Reservation};
pub use backing::{Backing, Fence, HostBacking, HostRegion, SimFence};
#[cfg(feature = "cuda")]
pub use device::{DeviceBacking, DeviceFence};
pub use stats::{ResidentInfo, Snapshot, Stats};

/// Everything the arena can refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VramError {
    /// The request could never be satisfied while the present resident regions stay, so waiting
    /// is pointless (and would deadlock).
    #[error(
        "{requested} bytes can never fit: the largest block possible is {largest_possible} bytes"
    )]
    Unsatisfiable {
        /// Bytes asked for.
        requested: u64,
        /// The largest block the arena could offer with every transient holder gone.
        largest_possible: u64,
    },
    /// A non-waiting allocation found no free range large enough now.
    #[error("out of device memory: {requested} bytes asked, largest free block {largest_free}")]
    OutOfMemory {
        /// Bytes asked for.
        requested: u64,
        /// The largest free block now.
        largest_free: u64,
    },
    /// A buffer did not fit in what is left of its reservation: the reservation was sized too
    /// small for the stage.
    #[error("reservation exhausted: {requested} bytes asked, largest free block {largest_free}")]
    ReservationExhausted {
        /// Bytes asked for.
        requested: u64,
        /// The largest free block left in the reservation.
        largest_free: u64,
    },
    /// A resident region of that name already lives.
    #[error("a resident region named {0:?} already exists")]
    DuplicateName(String),
    /// Zero bytes were asked for.
    #[error("zero-byte allocation")]
    ZeroSize,
    /// The alignment is not a power of two or exceeds what the backing guarantees for the base.
    #[error("alignment {align} is not a power of two of at most {max}")]
    BadAlignment {
        /// The alignment asked for.
        align: u64,
        /// The largest alignment the backing guarantees.
        max: u64,
    },
    /// The configured size came to zero bytes.
    #[error("the arena would be empty")]
    EmptyArena,
    /// The backing failed (for a device: the driver's error, in words).
    #[error("backing: {0}")]
    Backing(String),
}
