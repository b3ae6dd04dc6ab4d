//! The shape of a GPU MSM, decided before anything runs: window width, chunks of points, the
//! counting sort's layout, how the buckets are summed and reduced, and the device memory all of
//! it takes.
//!
//! Nothing here touches a device, so the pool can ask [`device_bytes_needed`] (or
//! [`MsmPlan::device_bytes`]) to reserve memory in advance. A plan is built by one of the
//! constructors ([`MsmPlan::new`], [`MsmPlan::for_device`], [`MsmPlan::for_chunks`],
//! [`MsmPlan::with_window_bits`]) and changed only through its `with_*` methods, which keep its
//! parts consistent (the batch-affine groups refitted to a new budget, the chunks to a new
//! length); its fields are read through getters of the same name.
//!
//! One idea per submodule:
//!
//! - `window`: the window width, from a cost model over the buckets the windows use, and the
//!   balanced widths `c` and `c − 1` that share a scalar's 255 bits;
//! - `chunk`: how the points are cut into chunks, resident or streamed from host memory;
//! - `sort`: the counting sort by bucket, a scatter in one pass or two passes through shared
//!   memory over bins of buckets;
//! - `accumulate`: the choice between the two ways of summing the buckets, and the XYZZ sums'
//!   segments and merge levels;
//! - `affine`: the batch-affine sums' groups of windows, lanes and inversion trees;
//! - `reduce`: the bucket reduction's levels, and its first level fused into the last chunk;
//! - `cost`: the device memory, pinned host memory and arithmetic a plan takes;
//! - `group`: what differs between G1 and G2 (point sizes, the fitted per-group constants).
//!
//! The constants and defaults were chosen by measurement on the H200; docs/benchmarks.md holds
//! the figures and the commands that reproduce them. The kernels themselves are described in
//! `kernels/msm/README.md` and beside each kernel in `kernels/msm/`.

mod accumulate;
mod affine;
mod chunk;
mod cost;
mod group;
mod reduce;
mod sort;
mod window;

pub use accumulate::Accumulation;
pub(crate) use accumulate::{accumulate_seg_for, MERGE_SEG};
pub use affine::{
    affine_scratch_for_device, block_inverse_max, BLOCK_INVERSE_SPAN, DEFAULT_AFFINE_LANES,
    DEFAULT_AFFINE_SCRATCH, MAX_AFFINE_LANES,
};
pub(crate) use affine::{tree_sizes, AffineScratch, AFFINE_PER, TREE_PER};
pub use chunk::{
    streamed_chunk_len, DEFAULT_RESIDENT_CHUNK, DEFAULT_STREAMED_CHUNK, LARGEST_RESIDENT_CHUNK,
    LARGE_CHUNK_MEMORY_SHARE,
};
pub use cost::device_bytes_needed;
pub use cuzk_gpu::DeviceInfo;
pub use group::Group;
pub(crate) use reduce::REDUCE_SEG;
#[cfg(test)]
pub(crate) use sort::MAX_BINS;
pub use sort::{SortBins, DEFAULT_SCATTER_REGION, DEFAULT_SORT_SHARED, LARGEST_SORT_SHARED};
pub(crate) use sort::{DIGITS_BINS_THREADS, SCAN_TILE, SCATTER_PER};
pub use window::{balanced_window_bits, num_windows};

use crate::reference::MAX_WINDOW_BITS;

/// Threads per block of the point kernels.
pub(crate) const POINT_BLOCK: u32 = 128;

/// Threads per block of the integer kernels (digits, scan, scatter).
pub(crate) const INT_BLOCK: u32 = 256;

/// How a GPU MSM of a given size runs, and what it costs in device memory.
///
/// Its fields are read through the getters of the same name and set only by the constructors and
/// the `with_*` methods, so that they stay consistent with each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    pub(crate) group: Group,
    pub(crate) sm_count: u32,
    pub(crate) n_points: usize,
    pub(crate) window_bits: u32,
    pub(crate) n_windows: u32,
    pub(crate) chunk_len: usize,
    pub(crate) first_chunk_len: usize,
    pub(crate) n_chunks: usize,
    pub(crate) accumulate_seg: usize,
    pub(crate) accumulation: Accumulation,
    pub(crate) affine_group_windows: u32,
    pub(crate) affine_lanes: u32,
    pub(crate) affine_budget: usize,
    pub(crate) affine_block_inverse_max: usize,
    pub(crate) scatter_region: usize,
    pub(crate) two_pass_sort: bool,
    pub(crate) sort_shared: usize,
    pub(crate) sort_tile_threads: u32,
    pub(crate) sort_stage_limit: usize,
    pub(crate) fused_reduce: bool,
}

impl MsmPlan {
    /// The plan for `n_points` points on a device with `sm_count` multiprocessors, with bases
    /// and scalars on the device: chunks of at most [`DEFAULT_RESIDENT_CHUNK`] points.
    pub fn new(n_points: usize, group: Group, sm_count: u32) -> Self {
        Self::resident(n_points, group, sm_count, DEFAULT_RESIDENT_CHUNK)
    }

    /// [`new`](Self::new)'s plan in chunks of at most `max_chunk` points.
    fn resident(n_points: usize, group: Group, sm_count: u32, max_chunk: usize) -> Self {
        Self::for_chunks(n_points, group, sm_count, max_chunk)
            .with_accumulation(Accumulation::resident_default(group, n_points))
    }

    /// The resident plan (bases and scalars on the device) for `device`, as `GpuMsm::plan` makes
    /// it: the scatter's parts sized to the device's L2, the two-pass sort to the shared memory a
    /// block may opt in to, the batch-affine scratch to the device's memory
    /// ([`affine_scratch_for_device`]), and chunks of [`LARGEST_RESIDENT_CHUNK`] where that makes
    /// fewer chunks and the plan's device bytes stay within 1/[`LARGE_CHUNK_MEMORY_SHARE`] of the
    /// device, else of [`DEFAULT_RESIDENT_CHUNK`]. Of `device` it reads the multiprocessors, the
    /// L2, the shared memory per block and the total memory.
    pub fn for_device(n_points: usize, group: Group, device: &DeviceInfo) -> Self {
        let fitted = |max_chunk: usize| {
            Self::resident(n_points, group, device.sm_count, max_chunk)
                .with_scatter_region(device.l2_bytes)
                .with_sort_shared(device.max_shared_per_block)
                .with_affine_scratch(affine_scratch_for_device(device.total_memory))
        };
        let default = fitted(DEFAULT_RESIDENT_CHUNK);
        let large = fitted(LARGEST_RESIDENT_CHUNK);
        if large.n_chunks < default.n_chunks
            && large.device_bytes() <= device.total_memory / LARGE_CHUNK_MEMORY_SHARE
        {
            large
        } else {
            default
        }
    }

    /// A plan with a given window width (1 to 24 bits) and largest chunk (at least one point);
    /// for tests, benchmarks and callers short of memory.
    pub fn with_window_bits(
        n_points: usize,
        group: Group,
        sm_count: u32,
        window_bits: u32,
        max_chunk: usize,
    ) -> Self {
        let window_bits = balanced_window_bits(window_bits.clamp(1, MAX_WINDOW_BITS));
        let n_windows = num_windows(window_bits);
        let max_chunk = max_chunk.max(1);
        let n_chunks = n_points.div_ceil(max_chunk).max(1);
        let chunk_len = n_points.div_ceil(n_chunks);
        let entries = chunk_len * n_windows as usize;
        let accumulate_seg =
            accumulate_seg_for(entries, sm_count, group.longest_accumulate_seg(window_bits));
        let mut plan = Self {
            group,
            sm_count,
            n_points,
            window_bits,
            n_windows,
            chunk_len,
            first_chunk_len: chunk_len,
            n_chunks,
            accumulate_seg,
            accumulation: Accumulation::Xyzz,
            affine_group_windows: n_windows,
            affine_lanes: DEFAULT_AFFINE_LANES,
            affine_budget: DEFAULT_AFFINE_SCRATCH,
            affine_block_inverse_max: block_inverse_max(sm_count),
            scatter_region: DEFAULT_SCATTER_REGION,
            two_pass_sort: true,
            sort_shared: DEFAULT_SORT_SHARED,
            sort_tile_threads: 0,
            sort_stage_limit: usize::MAX,
            fused_reduce: group == Group::G1,
        };
        plan.fit_affine(DEFAULT_AFFINE_SCRATCH, DEFAULT_AFFINE_LANES);
        plan
    }
}

/// The plan's parts, as decided.
impl MsmPlan {
    /// The group.
    pub fn group(&self) -> Group {
        self.group
    }

    /// Multiprocessors of the device the plan is for.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Points (and scalars).
    pub fn n_points(&self) -> usize {
        self.n_points
    }

    /// The widest window's width `c`, [`balanced_window_bits`] of the width asked for:
    /// `2^(c−1)` buckets per window; the upper windows may be a bit narrower
    /// ([`window_width`](Self::window_width)).
    pub fn window_bits(&self) -> u32 {
        self.window_bits
    }

    /// Windows, `⌈255/c⌉`.
    pub fn n_windows(&self) -> u32 {
        self.n_windows
    }

    /// Points per chunk; each chunk is sorted and summed into the buckets on its own.
    pub fn chunk_len(&self) -> usize {
        self.chunk_len
    }

    /// Points of the first chunk, at most `chunk_len` (equal unless
    /// [`with_first_chunk`](Self::with_first_chunk) made it shorter); the later chunks take
    /// `chunk_len` each, the last what is left ([`chunk`](Self::chunk)).
    pub fn first_chunk_len(&self) -> usize {
        self.first_chunk_len
    }

    /// Chunks: `⌈n_points / chunk_len⌉`, or one more when the first is shorter.
    pub fn n_chunks(&self) -> usize {
        self.n_chunks
    }

    /// Sorted entries per thread of the first level of the XYZZ bucket sums.
    pub fn accumulate_seg(&self) -> usize {
        self.accumulate_seg
    }

    /// How the buckets are filled.
    pub fn accumulation(&self) -> Accumulation {
        self.accumulation
    }

    /// Windows whose buckets one batch-affine pass sums together (all of them when their
    /// scratch fits [`affine_budget`](Self::affine_budget)).
    pub fn affine_group_windows(&self) -> u32 {
        self.affine_group_windows
    }

    /// Lanes (streams) the batch-affine groups may run on, as requested (they run on
    /// [`affine_lanes_used`](Self::affine_lanes_used)), group `g` on lane `g % lanes`, each
    /// lane with its own scratch. A round's batch inversion ends in small, latency-bound
    /// launches (the tree's upper levels and its top, one block), which leave most of the
    /// device idle; on two lanes another group's rounds fill it.
    pub fn affine_lanes(&self) -> u32 {
        self.affine_lanes
    }

    /// The scratch budget the groups and lanes were sized to (all lanes together).
    pub fn affine_budget(&self) -> usize {
        self.affine_budget
    }

    /// A round whose batch inversion takes at most this many values (one per round thread)
    /// inverts them blockwise, each block of `BLOCK_INVERSE_SPAN` values with its own
    /// inversion in one launch; more go up a tree of launches to the first level of at most
    /// this many values, which inverts blockwise in the same way (zero: the tree goes up to
    /// one block with one inversion). The default, `block_inverse_max`, is one wave of
    /// blocks on the device.
    pub fn affine_block_inverse_max(&self) -> usize {
        self.affine_block_inverse_max
    }

    /// Bytes of sorted entries one launch of the counting sort's scatter may write before the
    /// window's buckets are cut into parts (zero: never cut); see
    /// [`MsmPlan::with_scatter_region`] and [`MsmPlan::scatter_parts`].
    pub fn scatter_region(&self) -> usize {
        self.scatter_region
    }

    /// Whether a sort whose scatter would be cut into parts sorts in two passes instead
    /// ([`MsmPlan::sort_bins`]); on by default.
    pub fn two_pass_sort(&self) -> bool {
        self.two_pass_sort
    }

    /// Shared memory per block (bytes) the two-pass sort may use; see
    /// [`MsmPlan::with_sort_shared`].
    pub fn sort_shared(&self) -> usize {
        self.sort_shared
    }

    /// Threads per block of the two-pass sort's first pass (zero: the most that fit
    /// [`sort_shared`](Self::sort_shared)); see [`MsmPlan::with_sort_tile_threads`].
    pub fn sort_tile_threads(&self) -> u32 {
        self.sort_tile_threads
    }

    /// The most entries of a bin the second pass sorts in shared memory, below what
    /// [`sort_shared`](Self::sort_shared) allows (tests make it small to reach the slow way).
    pub fn sort_stage_limit(&self) -> usize {
        self.sort_stage_limit
    }

    /// Whether batch-affine sums end the last chunk with the bucket reduction's first level
    /// ([`MsmPlan::fuses_first_reduce`]); by default on in G1 and off in G2, as measured.
    pub fn fused_reduce(&self) -> bool {
        self.fused_reduce
    }
}
