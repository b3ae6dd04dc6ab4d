//! The arena: one region per device, sub-allocated on the host.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::backing::{Backing, Fence};
use crate::free_list::{align_up, End, FreeList};
use crate::stats::{ResidentInfo, Snapshot, Stats};
use crate::VramError;

/// How big the arena's one region is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArenaSize {
    /// Exactly this many bytes (rounded down to the granule): a budget set by configuration.
    Bytes(u64),
    /// Whatever the device has free at start, less this margin for the driver, other processes
    /// and kernels' own scratch (cuBLAS-style workspaces, printf buffers).
    FreeLessMargin(u64),
}

/// How an [`Arena`] is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArenaConfig {
    /// The size of the region.
    pub size: ArenaSize,
    /// The smallest alignment and size step, in bytes (a power of two). Every buffer starts on a
    /// multiple of it and occupies a multiple of it. 256 matches what `cuMemAlloc` guarantees
    /// and what coalesced loads want.
    pub granule: u64,
    /// How often a blocked [`Arena::reserve`] re-polls outstanding fences. Releases that need no
    /// fence wake waiters at once; fenced ones are noticed at this interval, or at once when
    /// someone calls [`Arena::poll`] (a device backing can do so from a host callback).
    pub poll_interval: Duration,
}

impl ArenaConfig {
    /// An arena of exactly `bytes` bytes with the default granule (256) and poll interval (1 ms).
    pub fn with_bytes(bytes: u64) -> Self {
        Self {
            size: ArenaSize::Bytes(bytes),
            granule: 256,
            poll_interval: Duration::from_millis(1),
        }
    }

    /// An arena of the device's free memory less `margin` bytes, other settings as
    /// [`ArenaConfig::with_bytes`].
    pub fn free_less_margin(margin: u64) -> Self {
        Self {
            size: ArenaSize::FreeLessMargin(margin),
            ..Self::with_bytes(0)
        }
    }
}

/// A device's memory, sub-allocated by the engine. Cloning gives another handle to the same
/// arena; it is shared by all the device's workers.
pub struct Arena<B: Backing> {
    shared: Arc<Shared<B>>,
}

impl<B: Backing> Clone for Arena<B> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B: Backing> fmt::Debug for Arena<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("backing", &self.shared.backing)
            .field("stats", &self.stats())
            .finish()
    }
}

struct Shared<B: Backing> {
    backing: B,
    region: B::Region,
    capacity: u64,
    granule: u64,
    poll_interval: Duration,
    state: Mutex<State<B::Fence>>,
    cond: Condvar,
}

impl<B: Backing> Shared<B> {
    fn lock(&self) -> MutexGuard<'_, State<B::Fence>> {
        // A panic while holding the lock leaves the books as they were at the panic; carrying on
        // is better than turning one worker's panic into every worker's.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn round(&self, bytes: u64) -> Result<u64, VramError> {
        if bytes == 0 {
            return Err(VramError::ZeroSize);
        }
        if bytes > self.capacity {
            // Larger than the arena: it fails the fit checks whatever its rounding.
            return Ok(bytes);
        }
        Ok(align_up(bytes, self.granule))
    }

    fn alignment(&self, align: u64) -> Result<u64, VramError> {
        if !align.is_power_of_two() || align > self.backing.base_alignment() {
            return Err(VramError::BadAlignment {
                align,
                max: self.backing.base_alignment(),
            });
        }
        Ok(align.max(self.granule))
    }

    /// Releases a buffer, now or after `fence`.
    fn release_buffer(&self, id: u64, fence: Option<B::Fence>) {
        let mut st = self.lock();
        let Some(alloc) = st.allocs.remove(&id) else {
            return;
        };
        st.in_use -= alloc.len;
        if let Some(name) = &alloc.name {
            st.residents.remove(name);
            st.resident -= alloc.len;
        }
        match fence {
            Some(fence) if !fence.is_complete() => {
                st.counters.fenced_releases += 1;
                if let Some(block) = alloc.owner {
                    let block = st.blocks.get_mut(&block).expect("owner block lives");
                    block.live -= 1;
                    block.pending += 1;
                }
                st.pending_bytes += alloc.len;
                st.pending.push(Pending {
                    fence,
                    kind: PendingKind::Range {
                        owner: alloc.owner,
                        offset: alloc.offset,
                        len: alloc.len,
                    },
                });
            }
            fence => {
                if fence.is_some() {
                    st.counters.fenced_releases += 1;
                }
                st.return_range(alloc.owner, alloc.offset, alloc.len, false);
            }
        }
        st.reap();
        drop(st);
        self.cond.notify_all();
    }

    /// Releases a reservation handle, now or after `fence`; its block returns to the arena once
    /// its buffers have returned too.
    fn release_reservation(&self, id: u64, fence: Option<B::Fence>) {
        let mut st = self.lock();
        match fence {
            Some(fence) if !fence.is_complete() => {
                st.counters.fenced_releases += 1;
                let len = st.blocks.get(&id).map_or(0, |b| b.len);
                st.pending_bytes += len;
                st.pending.push(Pending {
                    fence,
                    kind: PendingKind::Block { id, len },
                });
            }
            fence => {
                if fence.is_some() {
                    st.counters.fenced_releases += 1;
                }
                if let Some(block) = st.blocks.get_mut(&id) {
                    block.held = false;
                }
                st.maybe_close(id);
            }
        }
        st.reap();
        drop(st);
        self.cond.notify_all();
    }
}

struct State<F> {
    free: FreeList,
    allocs: HashMap<u64, Alloc>,
    blocks: HashMap<u64, Block>,
    pending: Vec<Pending<F>>,
    residents: BTreeMap<String, u64>,
    next_id: u64,
    queue: VecDeque<u64>,
    next_ticket: u64,
    in_use: u64,
    resident: u64,
    reserved: u64,
    pending_bytes: u64,
    capacity: u64,
    counters: Stats,
}

struct Alloc {
    owner: Option<u64>,
    offset: u64,
    len: u64,
    name: Option<String>,
}

struct Block {
    offset: u64,
    len: u64,
    inner: FreeList,
    live: usize,
    pending: usize,
    held: bool,
}

struct Pending<F> {
    fence: F,
    kind: PendingKind,
}

enum PendingKind {
    Range {
        owner: Option<u64>,
        offset: u64,
        len: u64,
    },
    Block {
        id: u64,
        len: u64,
    },
}

impl<F: Fence> State<F> {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Moves every release whose fence has completed back to its free list. Host-side polling
    /// only: this is the one place the arena looks at fences.
    fn reap(&mut self) -> bool {
        let mut changed = false;
        let mut i = 0;
        while i < self.pending.len() {
            if !self.pending[i].fence.is_complete() {
                i += 1;
                continue;
            }
            let done = self.pending.swap_remove(i);
            changed = true;
            match done.kind {
                PendingKind::Range { owner, offset, len } => {
                    self.pending_bytes -= len;
                    self.return_range(owner, offset, len, true);
                }
                PendingKind::Block { id, len } => {
                    self.pending_bytes -= len;
                    if let Some(block) = self.blocks.get_mut(&id) {
                        block.held = false;
                    }
                    self.maybe_close(id);
                }
            }
        }
        changed
    }

    fn return_range(&mut self, owner: Option<u64>, offset: u64, len: u64, was_pending: bool) {
        match owner {
            None => self.free.insert(offset, len),
            Some(id) => {
                let block = self.blocks.get_mut(&id).expect("owner block lives");
                block.inner.insert(offset, len);
                if was_pending {
                    block.pending -= 1;
                } else {
                    block.live -= 1;
                }
                self.maybe_close(id);
            }
        }
    }

    fn maybe_close(&mut self, id: u64) {
        let closed = self
            .blocks
            .get(&id)
            .is_some_and(|b| !b.held && b.live == 0 && b.pending == 0);
        if closed {
            let block = self.blocks.remove(&id).expect("checked above");
            self.reserved -= block.len;
            self.free.insert(block.offset, block.len);
        }
    }

    fn note_peaks(&mut self) {
        self.counters.peak_in_use = self.counters.peak_in_use.max(self.in_use);
        let committed = self.capacity - self.free.total();
        self.counters.peak_committed = self.counters.peak_committed.max(committed);
    }

    /// Would `len` bytes at `align` fit if every transient holder (buffers outside resident
    /// regions, reservations, pending releases) were gone? If not, waiting cannot help.
    fn fits_when_idle(&self, len: u64, align: u64) -> bool {
        let mut residents: Vec<(u64, u64)> = self
            .residents
            .values()
            .filter_map(|id| self.allocs.get(id))
            .map(|a| (a.offset, a.len))
            .collect();
        residents.sort_unstable();
        let mut free = FreeList::default();
        let mut at = 0;
        for (offset, len) in residents {
            free.insert(at, offset - at);
            at = offset + len;
        }
        free.insert(at, self.capacity - at);
        free.find(len, align, End::Low).is_some()
    }

    fn largest_when_idle(&self, align: u64) -> u64 {
        // Binary search would do; the number of residents is tiny, so walk the gaps instead.
        let mut residents: Vec<(u64, u64)> = self
            .residents
            .values()
            .filter_map(|id| self.allocs.get(id))
            .map(|a| (a.offset, a.len))
            .collect();
        residents.sort_unstable();
        let mut best = 0;
        let mut at = 0;
        for (offset, len) in residents.into_iter().chain([(self.capacity, 0)]) {
            let start = align_up(at, align);
            if offset > start {
                best = best.max(offset - start);
            }
            at = offset + len;
        }
        best
    }

    fn new_block(&mut self, offset: u64, len: u64) -> u64 {
        let id = self.id();
        self.blocks.insert(
            id,
            Block {
                offset,
                len,
                inner: FreeList::with_range(offset, len),
                live: 0,
                pending: 0,
                held: true,
            },
        );
        self.reserved += len;
        self.counters.reservations += 1;
        self.note_peaks();
        id
    }
}

impl<B: Backing> Arena<B> {
    /// Makes the arena: sizes it, allocates its one region from `backing`, and sub-allocates
    /// from then on without calling the backing again.
    pub fn new(backing: B, config: ArenaConfig) -> Result<Self, VramError> {
        let granule = config.granule;
        if !granule.is_power_of_two() || granule > backing.base_alignment() {
            return Err(VramError::BadAlignment {
                align: granule,
                max: backing.base_alignment(),
            });
        }
        let wanted = match config.size {
            ArenaSize::Bytes(bytes) => bytes,
            ArenaSize::FreeLessMargin(margin) => backing.free_bytes()?.saturating_sub(margin),
        };
        let capacity = wanted & !(granule - 1);
        if capacity == 0 {
            return Err(VramError::EmptyArena);
        }
        let region = backing.allocate(capacity)?;
        let counters = Stats {
            capacity,
            ..Stats::default()
        };
        let state = State {
            free: FreeList::with_range(0, capacity),
            allocs: HashMap::new(),
            blocks: HashMap::new(),
            pending: Vec::new(),
            residents: BTreeMap::new(),
            next_id: 0,
            queue: VecDeque::new(),
            next_ticket: 0,
            in_use: 0,
            resident: 0,
            reserved: 0,
            pending_bytes: 0,
            capacity,
            counters,
        };
        Ok(Self {
            shared: Arc::new(Shared {
                backing,
                region,
                capacity,
                granule,
                poll_interval: config.poll_interval,
                state: Mutex::new(state),
                cond: Condvar::new(),
            }),
        })
    }

    /// The size of the arena's region in bytes.
    pub fn capacity(&self) -> u64 {
        self.shared.capacity
    }

    /// The granule: every buffer's start and size are multiples of it.
    pub fn granule(&self) -> u64 {
        self.shared.granule
    }

    /// The backing the region came from.
    pub fn backing(&self) -> &B {
        &self.shared.backing
    }

    /// The region itself; a buffer's device address is the region's base plus its offset.
    pub fn region(&self) -> &B::Region {
        &self.shared.region
    }

    /// Reserves a contiguous block of `bytes` for one partition's buffers, if it fits now.
    ///
    /// `Ok(None)` means it does not fit now (or blocking reservations are queued ahead), so the
    /// caller may wait; `Err(Unsatisfiable)` means it never will while the present resident
    /// regions stay. Decided on the host from the arena's books and a poll of outstanding fences.
    pub fn try_reserve(&self, bytes: u64) -> Result<Option<Reservation<B>>, VramError> {
        let len = self.shared.round(bytes)?;
        let granule = self.shared.granule;
        let mut st = self.shared.lock();
        st.reap();
        if !st.fits_when_idle(len, granule) {
            st.counters.refused += 1;
            return Err(VramError::Unsatisfiable {
                requested: bytes,
                largest_possible: st.largest_when_idle(granule),
            });
        }
        if st.queue.is_empty() {
            if let Some(offset) = st.free.take(len, granule, End::Low) {
                let id = st.new_block(offset, len);
                return Ok(Some(self.reservation(id, offset, len)));
            }
        }
        st.counters.would_wait += 1;
        Ok(None)
    }

    /// Reserves a contiguous block of `bytes`, waiting until it fits.
    ///
    /// Waiters are served first come, first served, so a large reservation is not starved by
    /// small ones. Refused at once (never waits) if it could not fit even with every transient
    /// holder gone. It cannot deadlock as long as no thread waits here while it holds another
    /// reservation: every byte it waits for belongs to a holder that will release it, or to a
    /// fence the device will complete.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation<B>, VramError> {
        let len = self.shared.round(bytes)?;
        let granule = self.shared.granule;
        let mut st = self.shared.lock();
        st.reap();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push_back(ticket);
        let mut started: Option<Instant> = None;
        loop {
            if !st.fits_when_idle(len, granule) {
                st.queue.retain(|&t| t != ticket);
                st.counters.refused += 1;
                let largest_possible = st.largest_when_idle(granule);
                drop(st);
                self.shared.cond.notify_all();
                return Err(VramError::Unsatisfiable {
                    requested: bytes,
                    largest_possible,
                });
            }
            if st.queue.front() == Some(&ticket) {
                if let Some(offset) = st.free.take(len, granule, End::Low) {
                    st.queue.pop_front();
                    if let Some(started) = started {
                        let waited = started.elapsed();
                        st.counters.waits += 1;
                        st.counters.wait_total += waited;
                        st.counters.wait_max = st.counters.wait_max.max(waited);
                    }
                    let id = st.new_block(offset, len);
                    drop(st);
                    // The next in line may fit in what is left.
                    self.shared.cond.notify_all();
                    return Ok(self.reservation(id, offset, len));
                }
            }
            started.get_or_insert_with(Instant::now);
            st = if st.pending.is_empty() {
                self.shared
                    .cond
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner)
            } else {
                self.shared
                    .cond
                    .wait_timeout(st, self.shared.poll_interval)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            };
            st.reap();
        }
    }

    /// Allocates a transient buffer straight from the arena (outside any reservation), if it
    /// fits now; never waits.
    pub fn try_alloc(&self, bytes: u64, align: u64) -> Result<Buffer<B>, VramError> {
        self.alloc_at(bytes, align, None, End::Low)
    }

    /// Allocates a named resident region (the SRS, say), carved from the high end of the arena so
    /// long-lived data stays out of the way of per-partition churn. Never waits; the name must be
    /// unique among live resident regions. Dropping the buffer (or
    /// [`Buffer::release_after`]) retires the name and returns the bytes.
    pub fn alloc_resident(&self, name: &str, bytes: u64) -> Result<Buffer<B>, VramError> {
        self.alloc_at(bytes, self.shared.granule, Some(name), End::High)
    }

    fn alloc_at(
        &self,
        bytes: u64,
        align: u64,
        name: Option<&str>,
        end: End,
    ) -> Result<Buffer<B>, VramError> {
        let len = self.shared.round(bytes)?;
        let align = self.shared.alignment(align)?;
        let mut st = self.shared.lock();
        if let Some(name) = name {
            if st.residents.contains_key(name) {
                return Err(VramError::DuplicateName(name.to_owned()));
            }
        }
        st.reap();
        let Some(offset) = st.free.take(len, align, end) else {
            return Err(VramError::OutOfMemory {
                requested: bytes,
                largest_free: st.free.largest(),
            });
        };
        let id = st.id();
        st.allocs.insert(
            id,
            Alloc {
                owner: None,
                offset,
                len,
                name: name.map(str::to_owned),
            },
        );
        if let Some(name) = name {
            st.residents.insert(name.to_owned(), id);
            st.resident += len;
        }
        st.in_use += len;
        st.counters.allocations += 1;
        st.note_peaks();
        Ok(Buffer {
            shared: Arc::clone(&self.shared),
            id,
            offset,
            bytes,
            fence: None,
        })
    }

    /// The resident region called `name`, if one lives.
    pub fn resident(&self, name: &str) -> Option<ResidentInfo> {
        let st = self.shared.lock();
        let id = st.residents.get(name)?;
        let a = st.allocs.get(id)?;
        Some(ResidentInfo {
            name: name.to_owned(),
            range: a.offset..a.offset + a.len,
        })
    }

    /// All live resident regions, by name.
    pub fn residents(&self) -> Vec<ResidentInfo> {
        let st = self.shared.lock();
        st.residents
            .iter()
            .filter_map(|(name, id)| {
                st.allocs.get(id).map(|a| ResidentInfo {
                    name: name.clone(),
                    range: a.offset..a.offset + a.len,
                })
            })
            .collect()
    }

    /// Whether a reservation of `bytes` could ever be granted with the present resident
    /// regions: the question a pool asks before deciding to evict one.
    pub fn fits_when_idle(&self, bytes: u64) -> bool {
        match self.shared.round(bytes) {
            Ok(len) => self.shared.lock().fits_when_idle(len, self.shared.granule),
            Err(_) => false,
        }
    }

    /// Polls outstanding fences, returns completed releases to the arena and wakes waiters.
    /// Returns whether anything came back. Cheap; a device backing may call it from a host
    /// callback on the stream so waiters need not wait for their poll interval.
    pub fn poll(&self) -> bool {
        let changed = self.shared.lock().reap();
        if changed {
            self.shared.cond.notify_all();
        }
        changed
    }

    /// The arena's counters and gauges now (after polling fences).
    pub fn stats(&self) -> Stats {
        let mut st = self.shared.lock();
        st.reap();
        let mut stats = st.counters.clone();
        stats.in_use = st.in_use;
        stats.resident = st.resident;
        stats.reserved = st.reserved;
        stats.pending_release = st.pending_bytes;
        stats.free = st.free.total();
        stats.largest_free_block = st.free.largest();
        stats
    }

    /// Every range the arena tracks, for [`Snapshot::check`] and for display.
    pub fn snapshot(&self) -> Snapshot {
        let st = self.shared.lock();
        let mut ids: Vec<u64> = st.blocks.keys().copied().collect();
        ids.sort_unstable_by_key(|id| st.blocks[id].offset);
        let index: HashMap<u64, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let reservations = ids
            .iter()
            .map(|id| {
                let b = &st.blocks[id];
                let inner = b.inner.iter().map(|(s, l)| s..s + l).collect();
                (b.offset..b.offset + b.len, inner)
            })
            .collect();
        let mut buffers: Vec<_> = st
            .allocs
            .values()
            .map(|a| {
                (
                    a.offset..a.offset + a.len,
                    a.owner.map(|o| index[&o]),
                    a.name.clone(),
                )
            })
            .collect();
        buffers.sort_by_key(|(r, _, _)| r.start);
        let mut pending: Vec<_> = st
            .pending
            .iter()
            .filter_map(|p| match p.kind {
                PendingKind::Range { owner, offset, len } => {
                    Some((offset..offset + len, owner.map(|o| index[&o])))
                }
                PendingKind::Block { .. } => None,
            })
            .collect();
        pending.sort_by_key(|(r, _)| r.start);
        Snapshot {
            capacity: st.capacity,
            free: st.free.iter().map(|(s, l)| s..s + l).collect(),
            buffers,
            reservations,
            pending,
        }
    }

    fn reservation(&self, id: u64, offset: u64, len: u64) -> Reservation<B> {
        Reservation {
            shared: Arc::clone(&self.shared),
            id,
            offset,
            len,
            fence: None,
        }
    }
}

/// A contiguous block of the arena held for one partition (or one stage): buffers allocated
/// from it never wait and never fail for want of memory the arena has given to someone else.
///
/// Dropping it (or [`Reservation::release_after`]) gives up the handle; the block returns to the
/// arena once every buffer allocated from it has returned too.
pub struct Reservation<B: Backing> {
    shared: Arc<Shared<B>>,
    id: u64,
    offset: u64,
    len: u64,
    fence: Option<B::Fence>,
}

impl<B: Backing> fmt::Debug for Reservation<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("range", &self.range())
            .field("fence", &self.fence)
            .finish()
    }
}

impl<B: Backing> Reservation<B> {
    /// The block's size in bytes (the request rounded up to the granule).
    pub fn bytes(&self) -> u64 {
        self.len
    }

    /// The block's byte range in the arena.
    pub fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.len
    }

    /// Free bytes in the block now (fenced releases inside it count once their fence completes).
    pub fn available(&self) -> u64 {
        let mut st = self.shared.lock();
        st.reap();
        st.blocks.get(&self.id).map_or(0, |b| b.inner.total())
    }

    /// Allocates a buffer of `bytes` at the arena's granule from this block.
    pub fn alloc(&self, bytes: u64) -> Result<Buffer<B>, VramError> {
        self.alloc_aligned(bytes, self.shared.granule)
    }

    /// Allocates a buffer of `bytes` aligned to `align` from this block (best fit inside it).
    ///
    /// Within one stream, a buffer dropped without a fence can be reused at once by later work on
    /// the same stream, since the stream orders them; a fence is needed only when the next user
    /// may run on another stream.
    pub fn alloc_aligned(&self, bytes: u64, align: u64) -> Result<Buffer<B>, VramError> {
        if bytes == 0 {
            return Err(VramError::ZeroSize);
        }
        let len = align_up(bytes, self.shared.granule);
        let align = self.shared.alignment(align)?;
        let mut st = self.shared.lock();
        st.reap();
        let block = st.blocks.get_mut(&self.id).expect("a held block lives");
        let Some(offset) = block.inner.take(len, align, End::Low) else {
            return Err(VramError::ReservationExhausted {
                requested: bytes,
                largest_free: block.inner.largest(),
            });
        };
        block.live += 1;
        let id = st.id();
        st.allocs.insert(
            id,
            Alloc {
                owner: Some(self.id),
                offset,
                len,
                name: None,
            },
        );
        st.in_use += len;
        st.counters.allocations += 1;
        st.note_peaks();
        Ok(Buffer {
            shared: Arc::clone(&self.shared),
            id,
            offset,
            bytes,
            fence: None,
        })
    }

    /// Makes dropping this handle stream-ordered: the block returns only after `fence` completes
    /// (and after its buffers have returned). A later call replaces the fence.
    pub fn defer_release(&mut self, fence: B::Fence) {
        self.fence = Some(fence);
    }

    /// Gives up the block once `fence` has completed (and its buffers have returned).
    pub fn release_after(mut self, fence: B::Fence) {
        self.fence = Some(fence);
    }

    /// A handle on the arena the block lies in.
    pub fn arena(&self) -> Arena<B> {
        Arena {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B: Backing> Drop for Reservation<B> {
    fn drop(&mut self) {
        self.shared.release_reservation(self.id, self.fence.take());
    }
}

/// A range of device memory owned by one user. Dropping it returns the bytes: at once, or, after
/// [`Buffer::defer_release`] / [`Buffer::release_after`], once the fence has completed, so
/// kernels still reading it are never raced and nobody synchronises the device.
pub struct Buffer<B: Backing> {
    shared: Arc<Shared<B>>,
    id: u64,
    offset: u64,
    bytes: u64,
    fence: Option<B::Fence>,
}

impl<B: Backing> fmt::Debug for Buffer<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("range", &self.range())
            .field("fence", &self.fence)
            .finish()
    }
}

impl<B: Backing> Buffer<B> {
    /// The buffer's offset from the start of the arena's region.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The bytes asked for (the arena holds them rounded up to its granule).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// `offset .. offset + bytes`.
    pub fn range(&self) -> Range<u64> {
        self.offset..self.offset + self.bytes
    }

    /// The region the buffer lies in; the device address is its base plus [`Buffer::offset`].
    pub fn region(&self) -> &B::Region {
        &self.shared.region
    }

    /// Makes dropping this buffer stream-ordered: its bytes return only once `fence` (an event
    /// recorded after the last kernel or copy that uses it) completes. A later call replaces it.
    pub fn defer_release(&mut self, fence: B::Fence) {
        self.fence = Some(fence);
    }

    /// Releases the buffer once `fence` has completed.
    pub fn release_after(mut self, fence: B::Fence) {
        self.fence = Some(fence);
    }

    /// A handle on the arena the buffer lies in.
    pub fn arena(&self) -> Arena<B> {
        Arena {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B: Backing> Drop for Buffer<B> {
    fn drop(&mut self) {
        self.shared.release_buffer(self.id, self.fence.take());
    }
}
