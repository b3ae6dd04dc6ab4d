//! The policies: who may stage and who may compute when.
//!
//! A partition passes through a policy in three steps, each a value that releases what it holds
//! when dropped:
//!
//! ```text
//! policy.stage(demand)   -> Staging   (inputs may go to the device now; copy them)
//! staging.finish()       -> Staged    (the copies are done)
//! policy.compute(staged) -> Compute   (kernels may run now; run them)
//! compute.finish(fence)               (kernels done or enqueued; memory returns after `fence`)
//! ```
//!
//! The blocking calls ([`Policy::stage`], [`Policy::compute`]) are for worker threads; the
//! non-blocking ones ([`Policy::try_stage`], [`Policy::try_compute`]) say why they could not
//! proceed, for event-driven callers and for the simulator, which runs these very types.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use cuzk_vram::{Arena, Backing, Reservation};

use crate::InterlockError;

/// What one partition needs on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Demand {
    /// Bytes of inputs staged before compute (NTT inputs, density bitmaps, scalars).
    pub stage_bytes: u64,
    /// Bytes of scratch the kernels need on top (MSM buckets, SRS streaming windows).
    pub compute_bytes: u64,
}

impl Demand {
    /// The partition's whole footprint: what a reservation for it must hold.
    pub fn footprint(&self) -> u64 {
        self.stage_bytes + self.compute_bytes
    }
}

/// Why a non-blocking call could not proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitReason {
    /// A lock is held by another partition.
    Lock,
    /// The arena has no block for the partition's footprint now.
    Memory,
}

/// A policy: asked before staging a partition's inputs and before its GPU compute, told when each
/// ends by the permits it hands out being finished or dropped.
///
/// Every policy draws memory from the device's [`Arena`], so the pipeline allocates its buffers
/// from the permit's [`Reservation`] whatever the policy. Policies are values: make one per
/// device and share it (`Arc`) among that device's workers; there is no global state.
pub trait Policy<B: Backing>: Send + Sync + fmt::Debug {
    /// The policy's name as reports print it.
    fn name(&self) -> &'static str;

    /// The arena the policy reserves from.
    fn arena(&self) -> &Arena<B>;

    /// Admits a partition to staging, or says why not now. Never blocks.
    fn try_stage(&self, demand: Demand) -> Result<TryStage<B>, InterlockError>;

    /// Admits a partition to compute, or hands the permit back with the reason. Never blocks.
    fn try_compute(&self, staged: Staged<B>) -> Result<TryCompute<B>, InterlockError>;

    /// Admits a partition to staging, waiting as long as it takes.
    fn stage(&self, demand: Demand) -> Result<Staging<B>, InterlockError>;

    /// Admits a partition to compute, waiting as long as it takes.
    fn compute(&self, staged: Staged<B>) -> Result<Compute<B>, InterlockError>;
}

/// The answer of [`Policy::try_stage`].
#[derive(Debug)]
pub enum TryStage<B: Backing> {
    /// Staging may start.
    Granted(Staging<B>),
    /// Not now.
    Wait(WaitReason),
}

/// The answer of [`Policy::try_compute`].
#[derive(Debug)]
pub enum TryCompute<B: Backing> {
    /// Compute may start.
    Granted(Compute<B>),
    /// Not now: the permit comes back (possibly holding more than before, such as a
    /// reservation obtained on the way) to be offered again.
    Wait(Staged<B>, WaitReason),
}

/// Permission to stage a partition's inputs.
#[derive(Debug)]
pub struct Staging<B: Backing> {
    demand: Demand,
    reservation: Option<Reservation<B>>,
    _transfer: Option<LockGuard>,
    gpu: Option<LockGuard>,
}

impl<B: Backing> Staging<B> {
    /// The block to put the inputs in. `None` means the policy could not pre-stage (a two-lock
    /// fallback): copy nothing now, and stage the inputs once compute is granted
    /// ([`Compute::stage_inputs_now`]).
    pub fn reservation(&self) -> Option<&Reservation<B>> {
        self.reservation.as_ref()
    }

    /// Whether the inputs are staged now, before compute is granted.
    pub fn is_prestaged(&self) -> bool {
        self.reservation.is_some()
    }

    /// Staging is over (the copies are done or enqueued): releases what only staging needed.
    pub fn finish(self) -> Staged<B> {
        Staged {
            demand: self.demand,
            prestaged: self.reservation.is_some(),
            reservation: self.reservation,
            gpu: self.gpu,
        }
    }
}

/// A partition whose staging is over, waiting for compute.
#[derive(Debug)]
pub struct Staged<B: Backing> {
    demand: Demand,
    prestaged: bool,
    reservation: Option<Reservation<B>>,
    gpu: Option<LockGuard>,
}

impl<B: Backing> Staged<B> {
    /// What the partition needs.
    pub fn demand(&self) -> Demand {
        self.demand
    }
}

/// Permission to run a partition's kernels.
#[derive(Debug)]
pub struct Compute<B: Backing> {
    reservation: Reservation<B>,
    stage_inputs_now: bool,
    _locks: Vec<LockGuard>,
}

impl<B: Backing> Compute<B> {
    /// The partition's block: inputs (if pre-staged) are in it, scratch comes from it.
    pub fn reservation(&self) -> &Reservation<B> {
        &self.reservation
    }

    /// True when the inputs were not pre-staged and must be copied now, before the kernels.
    pub fn stage_inputs_now(&self) -> bool {
        self.stage_inputs_now
    }

    /// Compute is over: releases the locks now and the memory once `fence` (an event after the
    /// last kernel) completes, or at once with `None`. Dropping the permit is `finish(None)`.
    pub fn finish(self, fence: Option<B::Fence>) {
        let Compute {
            reservation,
            _locks: locks,
            ..
        } = self;
        drop(locks);
        match fence {
            Some(fence) => reservation.release_after(fence),
            None => drop(reservation),
        }
    }
}

/// A lock that serves waiters first come, first served, so no worker starves.
#[derive(Debug, Default)]
struct FifoLock {
    state: Mutex<FifoState>,
    cond: Condvar,
}

#[derive(Debug, Default)]
struct FifoState {
    held: bool,
    queue: VecDeque<u64>,
    next_ticket: u64,
}

/// Holds a [`FifoLock`]; releases it on drop.
#[derive(Debug)]
struct LockGuard {
    lock: Arc<FifoLock>,
}

impl FifoLock {
    fn state(&self) -> MutexGuard<'_, FifoState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_acquire(self: &Arc<Self>) -> Option<LockGuard> {
        let mut st = self.state();
        if st.held || !st.queue.is_empty() {
            return None;
        }
        st.held = true;
        Some(LockGuard {
            lock: Arc::clone(self),
        })
    }

    fn acquire(self: &Arc<Self>) -> LockGuard {
        let mut st = self.state();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push_back(ticket);
        while st.held || st.queue.front() != Some(&ticket) {
            st = self.cond.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        st.queue.pop_front();
        st.held = true;
        LockGuard {
            lock: Arc::clone(self),
        }
    }

    fn is_held(&self) -> bool {
        let st = self.state();
        st.held || !st.queue.is_empty()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.lock.state().held = false;
        self.lock.cond.notify_all();
    }
}

fn arena_err(e: cuzk_vram::VramError) -> InterlockError {
    InterlockError::Vram(e)
}

/// One lock over staging and compute together: a partition takes it before staging and gives it
/// back when its compute ends. The incumbent's best design (its "Phase 9") and the baseline:
/// workers never overlap on the GPU, so with three workers each waits for the other two.
pub struct SingleLock<B: Backing> {
    arena: Arena<B>,
    gpu: Arc<FifoLock>,
}

impl<B: Backing> fmt::Debug for SingleLock<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleLock")
            .field("held", &self.gpu.is_held())
            .finish()
    }
}

impl<B: Backing> SingleLock<B> {
    /// The policy over `arena`.
    pub fn new(arena: Arena<B>) -> Self {
        Self {
            arena,
            gpu: Arc::default(),
        }
    }
}

impl<B: Backing> Policy<B> for SingleLock<B> {
    fn name(&self) -> &'static str {
        "SingleLock"
    }

    fn arena(&self) -> &Arena<B> {
        &self.arena
    }

    fn try_stage(&self, demand: Demand) -> Result<TryStage<B>, InterlockError> {
        let Some(gpu) = self.gpu.try_acquire() else {
            return Ok(TryStage::Wait(WaitReason::Lock));
        };
        // A partition that cannot get memory gives the lock back rather than sit on it.
        let Some(reservation) = self
            .arena
            .try_reserve(demand.footprint())
            .map_err(arena_err)?
        else {
            return Ok(TryStage::Wait(WaitReason::Memory));
        };
        Ok(TryStage::Granted(Staging {
            demand,
            reservation: Some(reservation),
            _transfer: None,
            gpu: Some(gpu),
        }))
    }

    fn try_compute(&self, staged: Staged<B>) -> Result<TryCompute<B>, InterlockError> {
        grant_compute(staged, None)
    }

    fn stage(&self, demand: Demand) -> Result<Staging<B>, InterlockError> {
        // Only the lock holder reserves, so the wait below is only for releases of earlier
        // partitions whose fences the device completes on its own.
        let gpu = self.gpu.acquire();
        let reservation = self.arena.reserve(demand.footprint()).map_err(arena_err)?;
        Ok(Staging {
            demand,
            reservation: Some(reservation),
            _transfer: None,
            gpu: Some(gpu),
        })
    }

    fn compute(&self, staged: Staged<B>) -> Result<Compute<B>, InterlockError> {
        match grant_compute(staged, None)? {
            TryCompute::Granted(c) => Ok(c),
            TryCompute::Wait(..) => unreachable!("the single lock is held since staging"),
        }
    }
}

/// A transfer lock over staging and a compute lock over compute: the incumbent's "Phase 10".
///
/// Staging tries to reserve the partition's footprint while the previous partition computes; if
/// the arena has no room it falls back to staging inside compute (`prestage_setup=skip_vram` in
/// the incumbent's logs). With freeing that needs device-global synchronisation (the incumbent)
/// room is never there and this is the single lock with extra steps; with stream-ordered release
/// and room for two footprints it overlaps the copies of one partition with the kernels of
/// another.
pub struct TwoLock<B: Backing> {
    arena: Arena<B>,
    transfer: Arc<FifoLock>,
    compute: Arc<FifoLock>,
}

impl<B: Backing> fmt::Debug for TwoLock<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwoLock")
            .field("transfer_held", &self.transfer.is_held())
            .field("compute_held", &self.compute.is_held())
            .finish()
    }
}

impl<B: Backing> TwoLock<B> {
    /// The policy over `arena`.
    pub fn new(arena: Arena<B>) -> Self {
        Self {
            arena,
            transfer: Arc::default(),
            compute: Arc::default(),
        }
    }
}

impl<B: Backing> Policy<B> for TwoLock<B> {
    fn name(&self) -> &'static str {
        "TwoLock"
    }

    fn arena(&self) -> &Arena<B> {
        &self.arena
    }

    fn try_stage(&self, demand: Demand) -> Result<TryStage<B>, InterlockError> {
        let Some(transfer) = self.transfer.try_acquire() else {
            return Ok(TryStage::Wait(WaitReason::Lock));
        };
        // Pre-stage if the footprint fits now; otherwise fall back (never wait here).
        let reservation = self
            .arena
            .try_reserve(demand.footprint())
            .map_err(arena_err)?;
        Ok(TryStage::Granted(Staging {
            demand,
            reservation,
            _transfer: Some(transfer),
            gpu: None,
        }))
    }

    fn try_compute(&self, mut staged: Staged<B>) -> Result<TryCompute<B>, InterlockError> {
        if staged.reservation.is_none() {
            // The fallback reserves before taking the compute lock, so the lock holder never
            // waits for memory that partitions queued behind it hold.
            match self
                .arena
                .try_reserve(staged.demand.footprint())
                .map_err(arena_err)?
            {
                Some(r) => staged.reservation = Some(r),
                None => return Ok(TryCompute::Wait(staged, WaitReason::Memory)),
            }
        }
        match self.compute.try_acquire() {
            Some(lock) => grant_compute(staged, Some(lock)),
            None => Ok(TryCompute::Wait(staged, WaitReason::Lock)),
        }
    }

    fn stage(&self, demand: Demand) -> Result<Staging<B>, InterlockError> {
        let transfer = self.transfer.acquire();
        let reservation = self
            .arena
            .try_reserve(demand.footprint())
            .map_err(arena_err)?;
        Ok(Staging {
            demand,
            reservation,
            _transfer: Some(transfer),
            gpu: None,
        })
    }

    fn compute(&self, mut staged: Staged<B>) -> Result<Compute<B>, InterlockError> {
        if staged.reservation.is_none() {
            staged.reservation = Some(
                self.arena
                    .reserve(staged.demand.footprint())
                    .map_err(arena_err)?,
            );
        }
        let lock = self.compute.acquire();
        match grant_compute(staged, Some(lock))? {
            TryCompute::Granted(c) => Ok(c),
            TryCompute::Wait(..) => unreachable!("memory and lock are both held"),
        }
    }
}

/// Reservations against the arena, the default: a partition stages as soon as its whole
/// footprint fits in the arena, so the next partition's inputs go up while the current one
/// computes; a compute lock keeps one partition's kernels on the device at a time.
///
/// Reserving the whole footprint at once means no partition ever holds memory while waiting
/// for more, so it cannot deadlock; releases are stream-ordered, so nobody synchronises the
/// device to get memory back.
pub struct VramBudget<B: Backing> {
    arena: Arena<B>,
    compute: Arc<FifoLock>,
}

impl<B: Backing> fmt::Debug for VramBudget<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VramBudget")
            .field("compute_held", &self.compute.is_held())
            .field("arena", &self.arena)
            .finish()
    }
}

impl<B: Backing> VramBudget<B> {
    /// The policy over `arena`.
    pub fn new(arena: Arena<B>) -> Self {
        Self {
            arena,
            compute: Arc::default(),
        }
    }
}

impl<B: Backing> Policy<B> for VramBudget<B> {
    fn name(&self) -> &'static str {
        "VramBudget"
    }

    fn arena(&self) -> &Arena<B> {
        &self.arena
    }

    fn try_stage(&self, demand: Demand) -> Result<TryStage<B>, InterlockError> {
        Ok(
            match self
                .arena
                .try_reserve(demand.footprint())
                .map_err(arena_err)?
            {
                Some(reservation) => TryStage::Granted(Staging {
                    demand,
                    reservation: Some(reservation),
                    _transfer: None,
                    gpu: None,
                }),
                None => TryStage::Wait(WaitReason::Memory),
            },
        )
    }

    fn try_compute(&self, staged: Staged<B>) -> Result<TryCompute<B>, InterlockError> {
        match self.compute.try_acquire() {
            Some(lock) => grant_compute(staged, Some(lock)),
            None => Ok(TryCompute::Wait(staged, WaitReason::Lock)),
        }
    }

    fn stage(&self, demand: Demand) -> Result<Staging<B>, InterlockError> {
        let reservation = self.arena.reserve(demand.footprint()).map_err(arena_err)?;
        Ok(Staging {
            demand,
            reservation: Some(reservation),
            _transfer: None,
            gpu: None,
        })
    }

    fn compute(&self, staged: Staged<B>) -> Result<Compute<B>, InterlockError> {
        let lock = self.compute.acquire();
        match grant_compute(staged, Some(lock))? {
            TryCompute::Granted(c) => Ok(c),
            TryCompute::Wait(..) => unreachable!("memory and lock are both held"),
        }
    }
}

/// Turns a staged partition holding its memory (and `lock`, if any) into a compute permit.
fn grant_compute<B: Backing>(
    staged: Staged<B>,
    lock: Option<LockGuard>,
) -> Result<TryCompute<B>, InterlockError> {
    let Staged {
        prestaged,
        reservation,
        gpu,
        ..
    } = staged;
    let reservation = reservation.ok_or(InterlockError::NoReservation)?;
    Ok(TryCompute::Granted(Compute {
        reservation,
        stage_inputs_now: !prestaged,
        _locks: gpu.into_iter().chain(lock).collect(),
    }))
}

/// The policies the simulator and the sweep know by name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum PolicyKind {
    /// [`SingleLock`].
    SingleLock,
    /// [`TwoLock`].
    TwoLock,
    /// [`VramBudget`].
    VramBudget,
}

impl PolicyKind {
    /// All of them, baseline first.
    pub const ALL: [PolicyKind; 3] = [Self::SingleLock, Self::TwoLock, Self::VramBudget];

    /// Makes the policy over `arena`.
    pub fn build<B: Backing>(self, arena: Arena<B>) -> Box<dyn Policy<B>> {
        match self {
            Self::SingleLock => Box::new(SingleLock::new(arena)),
            Self::TwoLock => Box::new(TwoLock::new(arena)),
            Self::VramBudget => Box::new(VramBudget::new(arena)),
        }
    }

    /// The policy's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleLock => "SingleLock",
            Self::TwoLock => "TwoLock",
            Self::VramBudget => "VramBudget",
        }
    }

    /// The name configuration files and command lines use: `single`, `two`, `budget`.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::SingleLock => "single",
            Self::TwoLock => "two",
            Self::VramBudget => "budget",
        }
    }

    /// The policy of a [`short_name`](Self::short_name).
    pub fn from_short_name(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.short_name() == text)
    }

    /// What the policy does, in one line (a command line's help).
    pub fn summary(self) -> &'static str {
        match self {
            Self::SingleLock => "one worker on the device at a time (the incumbent's single lock)",
            Self::TwoLock => "a staging lock and a compute lock",
            Self::VramBudget => "any worker whose footprint fits the device's memory",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
