//! Who may stage and who may compute when, on a GPU shared by several workers.
//!
//! # Why
//!
//! Several workers share one GPU, and how they take turns decides throughput. The incumbent's
//! split of its one GPU mutex into a transfer lock and a compute lock made proofs more than twice
//! as slow, because its frees synchronised the whole device (docs/ARCHITECTURE.md, "Why the
//! arena and the policies").
//!
//! The lesson this crate is built on: the lock design must be judged against how memory comes
//! back, and both must be visible. So policies are types over a `cuzk-vram` arena (memory is a
//! host-side reservation, released in stream order), and a simulator replays stage timings
//! through each policy to compare them without a GPU.
//!
//! # Contents
//!
//! - [`Policy`]: asked before staging ([`Policy::stage`] / [`Policy::try_stage`]) and before
//!   compute ([`Policy::compute`] / [`Policy::try_compute`]); told when each ends by its permits
//!   ([`Staging::finish`], [`Compute::finish`], or drop). Blocking calls for worker threads,
//!   non-blocking ones for event loops and the simulator.
//! - [`SingleLock`] (the baseline), [`TwoLock`] (kept to show when it fails and when it works),
//!   [`VramBudget`] (the default: stage whenever the whole footprint fits the arena).
//! - [`sim`]: the discrete-event simulator ([`sim::simulate`]), fed by a synthetic
//!   [`sim::Profile`] or one taken from a recorded telemetry timeline
//!   ([`sim::Profile::from_timeline`]).
//! - [`replay`]: a recorded run (a GPU backend's timeline) beside the simulator's prediction
//!   for it (`cargo xtask bench interlock --replay FILE.json`).
//! - [`sweep`]: policies × workers × proofs in flight × VRAM sizes × release modes, as a Markdown
//!   table and an SVG plot (`cargo xtask bench interlock`).
//!
//! This crate never allocates device memory: it reserves from an arena it is handed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod policy;
pub mod replay;
pub mod sim;
pub mod sweep;

pub use policy::{
    Compute, Demand, Policy, PolicyKind, SingleLock, Staged, Staging, TryCompute, TryStage,
    TwoLock, VramBudget, WaitReason,
};

/// Everything a policy or the simulator can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterlockError {
    /// The arena refused (for example a footprint larger than it could ever hold).
    #[error("vram: {0}")]
    Vram(#[from] cuzk_vram::VramError),
    /// A compute permit was asked for a partition holding no memory (a policy bug).
    #[error("a partition reached compute without a reservation")]
    NoReservation,
    /// A partition's footprint does not fit the simulated card at all.
    #[error("a {footprint}-byte partition does not fit {capacity} bytes")]
    DoesNotFit {
        /// The partition's footprint.
        footprint: u64,
        /// The arena's capacity.
        capacity: u64,
    },
    /// The simulation stopped with a worker still blocked and nothing left to happen.
    #[error("{policy} deadlocked: worker {worker} blocked forever at {at_ns} ns")]
    Deadlock {
        /// The policy.
        policy: &'static str,
        /// A worker that never finished.
        worker: u64,
        /// The simulated time when nothing was left to happen.
        at_ns: u64,
    },
    /// A recorded timeline had no partition to take a profile from.
    #[error("the timeline has no partition spans to take a profile from")]
    EmptyTimeline,
    /// A configuration that cannot be simulated.
    #[error("configuration: {0}")]
    Config(String),
}
