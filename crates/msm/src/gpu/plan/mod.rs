//! The shape of a GPU MSM, decided before anything runs: window width, chunks of points, segment
//! lengths of the bucket sums and reductions, and the device memory all of it takes.
//!
//! Nothing here touches a device, so the pool can ask [`device_bytes_needed`] (or
//! [`MsmPlan::device_bytes`]) to reserve memory in advance.

use crate::reference::MAX_WINDOW_BITS;

/// The group an MSM runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// BLS12-381 G1 (coordinates in Fp).
    G1,
    /// BLS12-381 G2 (coordinates in Fp2).
    G2,
}

impl Group {
    /// Whether the batch-affine rounds keep each slot's prefix product in the x of the slot's
    /// output point instead of a separate array (kernels/msm/affine.cuh, msm_round_scratch_t).
    /// In G2 the separate array is a quarter of the rounds' scratch, and without it twice as
    /// many windows fit a group: the H200 measured G2 2^24 301.6 → 283.6 ms. In G1 the output
    /// slot's partial-sector stores cost more than the groups saved (2^24 109.2 → 112.6 ms,
    /// docs/benchmarks.md, session 10).
    pub const fn prefix_in_output(self) -> bool {
        matches!(self, Group::G2)
    }

    /// The batch inversion tree's top (kernels/msm/affine.cuh, msm_inv_top): the threads of its
    /// one block and the most values it takes; the levels above it are launched one by one. In
    /// G2 a block of 128 over up to 1024 values saves the launches of the smallest levels (15–21
    /// µs each on the H200, `ncu`, session 10). In G1, where those take 7–9 µs, the block
    /// measured 8% slower in the inversion stage than one thread over up to 8 (2^24: 9.78 against
    /// 9.03 ms; docs/benchmarks.md, session 11).
    pub(crate) const fn tree_top(self) -> (u32, usize) {
        match self {
            Group::G1 => (1, 8),
            Group::G2 => (128, 1024),
        }
    }

    /// Bytes of an affine point on the device (blst's layout).
    pub const fn affine_bytes(self) -> usize {
        match self {
            Group::G1 => 96,
            Group::G2 => 192,
        }
    }

    /// Bytes of an XYZZ point (a bucket or a partial sum) on the device.
    pub const fn xyzz_bytes(self) -> usize {
        match self {
            Group::G1 => 192,
            Group::G2 => 384,
        }
    }

    /// The widest window the planner picks: buckets of the widest window take
    /// `(255/c + 1) · 2^(c−1)` XYZZ points (4.8 GB in G1 at 22 bits).
    pub const fn max_window_bits(self) -> u32 {
        match self {
            Group::G1 => 22,
            Group::G2 => 21,
        }
    }

    /// What the work that grows with the number of buckets costs per bucket, in mixed additions
    /// of this group: `(once, per chunk)`. Once: the bucket reduction (two full additions and
    /// the memory of each bucket). Per chunk: the counters of the counting sort, the segment
    /// ends and the merge of each chunk's partial sums into the buckets. Fitted to window sweeps
    /// on the H200 with balanced windows (docs/benchmarks.md, "Window choice", sessions 20 and
    /// 21): with these, the planner's pick is the measured best or within 3% of it at every size
    /// swept, G1 2^20 to 2^26 and G2 2^20 to 2^25 (the worst: G2 2^20, 2.8%; G1 2^20, 1.2%).
    /// The model counts the buckets the windows use; the reduction also passes over a narrow
    /// window's empty upper half, at the cost of adding infinities, which the fit absorbs. In G1 a
    /// bucket weighs more than the batch-affine additions' cost alone suggests: its share of
    /// the reduction, of the last round's mixed additions and of the sort's counters (G1 2^24:
    /// 17 bits, two windows more and 4.5 M buckets fewer than 20 bits, measured 3.2 ms faster).
    /// G1's (7, 2) fits the session-20 sweeps better than the (5, 2) first fitted to them: it
    /// picks 16 bits at 2^22 (27.67 ms against 28.29 at 17) and the same widths elsewhere.
    pub const fn bucket_weights(self) -> (f64, f64) {
        match self {
            Group::G1 => (7.0, 2.0),
            Group::G2 => (4.0, 4.0),
        }
    }

    /// The longest segment of sorted entries one thread of the first level of the bucket sums
    /// takes with windows of `window_bits` (see [`accumulate_seg_for`]). Measured on the H200
    /// (docs/benchmarks.md, session 7): G1 gains from segments of 256 at every size where the
    /// device stays busy; G2 gains with windows of 17 bits (2^24: 377.5 / 373.9 / 373.7 ms with
    /// 64 / 128 / 256) but loses with windows of 20 (2^25: 712.7 / 729.4 / 736.9 ms, 2^26:
    /// 1410 / 1442 / 1456 ms), where its `accumulate` grows more than its merge shrinks.
    pub(crate) const fn longest_accumulate_seg(self, window_bits: u32) -> usize {
        match self {
            Group::G1 => 256,
            Group::G2 if window_bits >= 20 => 64,
            Group::G2 => 256,
        }
    }

    /// Fp multiplications' worth of a mixed XYZZ addition (8 multiplications and 2 squarings
    /// of the group's field): 10 in G1, 25 in G2. An Fp2 multiplication counts 2.5 Fp
    /// multiplications (Karatsuba with lazy reduction, kernels/field/fp2.cuh: 720 fused
    /// multiply-adds against 288 for one Fp multiplication), and so does an Fp2 squaring, which
    /// the kernels compute as that multiplication (`fp2_sqr`).
    pub const fn mixed_add_muls(self) -> f64 {
        match self {
            Group::G1 => 10.0,
            Group::G2 => 25.0,
        }
    }

    /// Fp multiplications' worth of one batch-affine addition (λ, λ², y; three for the shared
    /// inversion's back-substitution and running product): 6 in G1, 15 in G2.
    pub const fn affine_add_muls(self) -> f64 {
        match self {
            Group::G1 => 6.0,
            Group::G2 => 15.0,
        }
    }

    /// Fp multiplications' worth of a full XYZZ addition (12 multiplications and 2 squarings):
    /// 14 in G1, 35 in G2.
    pub const fn full_add_muls(self) -> f64 {
        match self {
            Group::G1 => 14.0,
            Group::G2 => 35.0,
        }
    }
}

/// Points per chunk when bases and scalars are on the device. Bounds the sort's scratch memory
/// (12 bytes per point and window) and the partial sums; every chunk after the first adds one
/// full addition per bucket, so chunks are as large as memory comfortably allows.
pub const DEFAULT_RESIDENT_CHUNK: usize = 1 << 25;

/// The largest chunk of a resident plan, on a device with the memory for it
/// ([`MsmPlan::for_device`]): one chunk fewer saves a merge of partial sums per bucket and the
/// rounds' tails. Measured on the H200 (docs/benchmarks.md, session 28): G1 2^26 in one chunk
/// 308.8 ms against 318.5 in two chunks of 2^25.
pub const LARGEST_RESIDENT_CHUNK: usize = 1 << 26;

/// The part of a device's memory one resident MSM's plan may take with chunks of
/// [`LARGEST_RESIDENT_CHUNK`] instead of [`DEFAULT_RESIDENT_CHUNK`]: a quarter, so that several
/// workers' MSMs (and their bases) share a card. On the H200 (139.8 GiB) G1 2^26 in one chunk
/// (33.4 GB) qualifies.
pub const LARGE_CHUNK_MEMORY_SHARE: usize = 4;

/// Device memory the batch-affine rounds may use for their scratch (points, running products,
/// inversion tree) by default, all lanes together; windows are summed in groups that fit (see
/// [`MsmPlan::affine_group_windows`]).
pub const DEFAULT_AFFINE_SCRATCH: usize = 6 << 30;

/// The batch-affine scratch budget of a device with `total_memory` bytes (what `GpuMsm::plan`
/// gives its plans): a tenth of the device, at least [`DEFAULT_AFFINE_SCRATCH`]. On the H200
/// (139.8 GiB: 14 GiB) G2 2^24 runs in 8 groups of two windows on two lanes instead of 15 groups
/// of one, 267.5 → 259.4 ms, and G1 2^24 in 5 groups of three on two lanes, 108.0 → 105.1 ms
/// (docs/benchmarks.md, session 13).
pub fn affine_scratch_for_device(total_memory: usize) -> usize {
    (total_memory / 10).max(DEFAULT_AFFINE_SCRATCH)
}

/// Values per block of a blockwise batch inversion (msm_inv_top_<g> on many blocks of 128
/// threads, kernels/msm/affine.cuh).
pub const BLOCK_INVERSE_SPAN: usize = 2048;

/// The most values a round inverts blockwise on a device of `sm_count` multiprocessors: as many
/// blocks of [`BLOCK_INVERSE_SPAN`] as run at once at two per multiprocessor (G2's
/// msm_inv_top: 202 registers, so two blocks of 128 threads fit). Within one wave the blocks'
/// lone inversions overlap; beyond it each wave would idle its multiprocessors through them,
/// and the tree's launches cost less. Measured on the H200 (docs/benchmarks.md, session 13),
/// G2 2^24 in 8 groups on one lane: the tree everywhere 272.1 ms, blockwise everywhere 268.9,
/// with all windows in one group 255.2 against 258.8.
pub fn block_inverse_max(sm_count: u32) -> usize {
    2 * sm_count.max(1) as usize * BLOCK_INVERSE_SPAN
}

/// Lanes (streams) on which the batch-affine groups of windows run at once, by default, when
/// the windows do not fit one group (see [`MsmPlan::affine_lanes`]).
pub const DEFAULT_AFFINE_LANES: u32 = 2;

/// The most lanes a plan may ask for: the executor has a main compute lane and one side lane.
pub const MAX_AFFINE_LANES: u32 = 2;

/// Bytes of sorted entries one scatter launch writes when the plan does not know the device's
/// L2 (`GpuMsm::plan` uses the L2's size: on the H200, 60 MiB measured best of 8, 16, 30, 60
/// and 120 MiB, docs/benchmarks.md): each window's buckets are cut into parts of about this
/// much output, so that the part's randomly placed 8-byte entries fill whole sectors in L2
/// before they go to memory (see `msm_scatter` in kernels/msm/msm.cu).
pub const DEFAULT_SCATTER_REGION: usize = 40 << 20;

/// The shortest chunk when bases or scalars stream from host memory (see
/// [`streamed_chunk_len`]).
pub const DEFAULT_STREAMED_CHUNK: usize = 1 << 22;

/// Points per chunk when bases or scalars of an MSM of `n_points` stream from host memory: a
/// quarter of the points, at least [`DEFAULT_STREAMED_CHUNK`] and at most
/// [`DEFAULT_RESIDENT_CHUNK`]. The copy of the first chunk cannot overlap anything, so chunks
/// should be short; every chunk after the first adds work per bucket, so they should be few.
/// Measured on the H200 with bases and scalars in pinned memory (docs/benchmarks.md, "Streamed
/// chunks"): G1 2^24 in chunks of 2^22 149.6 ms, of 2^23 156.2 ms (window 20) to 161.5 ms
/// (19); G1 2^26 in chunks of 2^22 567.2 ms, 2^23 564.3 ms, 2^24 533.8 ms.
pub fn streamed_chunk_len(n_points: usize) -> usize {
    n_points
        .div_ceil(4)
        .clamp(DEFAULT_STREAMED_CHUNK, DEFAULT_RESIDENT_CHUNK)
}

/// Threads per block of the point kernels.
pub(crate) const POINT_BLOCK: u32 = 128;
/// Threads per block of the integer kernels (digits, scan, scatter).
pub(crate) const INT_BLOCK: u32 = 256;
/// Entries per thread of the scatter (kernels/msm/msm.cu, MSM_SCATTER_PER; 8 measured slower).
pub(crate) const SCATTER_PER: usize = 1;
/// The two-pass sort (kernels/msm/msm.cu, msm_sort_bins and msm_sort_bin_buckets): keys per
/// thread of the first pass (MSM_BIN_PER), the most threads of its blocks (MSM_BIN_MAX_THREADS,
/// which also sizes its static shared memory, 4 bytes each) and the most bins per window.
/// 22 keys per thread rather than 16 make each bin's run in a tile 1.375 times as long, which
/// the first pass's writes need (H200, G1 2^26 in one chunk: sort stage 18.00 → 17.05 ms,
/// docs/benchmarks.md, session 28); a tile of 22 K keys and 4096 bins' counters fill 212 of the
/// H200's 227 KiB.
pub(crate) const BIN_PER: usize = 22;
pub(crate) const BIN_MAX_THREADS: u32 = 1024;
pub(crate) const MAX_BINS: usize = 4096;
/// The most blocks per multiprocessor of the two-pass sort's second pass (each block sorts one
/// bin at a time in its shared memory; its threads: [`SortBins::stage_threads`]); fewer where
/// their stages do not fit the shared memory together ([`SortBins::stage_blocks_per_sm`]).
pub(crate) const BIN_SORT_BLOCKS_PER_SM: usize = 2;
/// Static shared memory of a block of the second pass beside its stage and counters: the bins
/// over the stage it lists together (kernels/msm/msm.cu, `MSM_BIG_BINS`), their number and its
/// scans' scratch (`MSM_BIN_MAX_THREADS`), 4 bytes each, with room for the compiler's alignment
/// (the driver refuses a dynamic size that leaves the static part without room).
pub(crate) const STAGE_STATIC_SHARED: usize = 8 * 1024 + 256;
/// Threads per block of msm_digits_bins (kernels/msm/msm.cu, MSM_DIGITS_BINS_THREADS).
pub(crate) const DIGITS_BINS_THREADS: u32 = 1024;
/// The most blocks of msm_digits_bins per multiprocessor the launch is sized for (fewer where
/// their counters do not fit the shared memory together).
pub(crate) const DIGITS_BINS_BLOCKS_PER_SM: usize = 2;
/// The most shared memory a block may opt in to on any GPU cuzk builds for (sm_90: 227 KiB), for
/// [`device_bytes_needed`], which bounds plans that sort in two passes too.
pub const LARGEST_SORT_SHARED: usize = 227 << 10;
/// Shared memory per block the two-pass sort may use when the plan does not know the device's
/// (`GpuMsm::plan` uses all a block may opt in to: 227 KiB on the H200): the 48 KiB every
/// device gives a block without opting in.
pub const DEFAULT_SORT_SHARED: usize = 48 << 10;

/// How the counting sort's two passes cut a chunk's keys ([`MsmPlan::sort_bins`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortBins {
    /// Each window's buckets fall in `bins` bins of `2^bin_log2` buckets, or of
    /// `2^(bin_log2 + wide_extra)` in the windows of `c` bits: `wide_extra` is 1 where the plan
    /// has windows of `c − 1` bits, whose digits use only the lower half of their buckets (and
    /// their bins lie there), so that every window's bins hold about the same number of entries
    /// (kernels/msm/msm.cu, `msm_bin_layout_t`).
    pub bin_log2: u32,
    pub wide_extra: u32,
    pub bins: usize,
    /// Threads per block of the first pass, which takes `BIN_PER` keys per thread.
    pub tile_threads: u32,
    /// Entries of a bin the second pass sorts in shared memory; a bin with more (skewed
    /// scalars) goes the slow way.
    pub stage_cap: usize,
}

/// How msm_digits_bins (kernels/msm/msm.cu) cuts a chunk: [`MsmPlan::digits_bins`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DigitsBins {
    /// Windows whose bins one block counts (its shared memory holds a counter per bin of each).
    pub windows_per_block: u32,
    /// Blocks per group of windows, each over `per_block` consecutive points.
    pub blocks_per_group: u32,
    pub per_block: u32,
    /// Groups of windows: `⌈n_windows / windows_per_block⌉`.
    pub groups: u32,
    /// Dynamic shared memory per block: `4 · windows_per_block · bins`.
    pub shared_bytes: usize,
}

impl DigitsBins {
    /// Blocks of the launch: every group's.
    pub fn blocks(&self) -> u32 {
        self.groups * self.blocks_per_group
    }
}

impl SortBins {
    /// Keys per block of the first pass.
    pub fn tile(&self) -> usize {
        BIN_PER * self.tile_threads as usize
    }

    /// Dynamic shared memory per block of the first pass: the tile's entries, two counters
    /// per bin.
    pub fn tile_shared_bytes(&self) -> usize {
        8 * self.tile() + 8 * self.bins
    }

    /// Threads per block of the second pass: one per 16 entries of the stage (rounded up to a
    /// power of two), from 32 to 1024.
    pub fn stage_threads(&self) -> u32 {
        (self.stage_cap.next_power_of_two() / 16).clamp(32, BIN_MAX_THREADS as usize) as u32
    }

    /// Blocks of the second pass a multiprocessor holds at once, of at most `shared` bytes of
    /// shared memory (at least one, at most [`BIN_SORT_BLOCKS_PER_SM`]).
    pub fn stage_blocks_per_sm(&self, shared: usize) -> usize {
        (shared / (self.stage_shared_bytes() + STAGE_STATIC_SHARED))
            .clamp(1, BIN_SORT_BLOCKS_PER_SM)
    }

    /// Dynamic shared memory per block of the second pass: the stage, a counter per bucket of
    /// the widest bins.
    pub fn stage_shared_bytes(&self) -> usize {
        8 * self.stage_cap + (4 << (self.bin_log2 + self.wide_extra))
    }
}
/// Entries per thread in the merge levels of the bucket sums.
pub(crate) const MERGE_SEG: usize = 16;
/// Buckets (or sums) per thread in each level of the bucket reduction.
pub(crate) const REDUCE_SEG: usize = 16;
/// Sums per thread in a later level of the bucket reduction that would not fill the device with
/// REDUCE_SEG: such a level runs few threads, each a chain of 3·seg dependent full additions, so
/// its time is that chain's latency, and shorter segments (more levels) finish sooner. Measured
/// on the H200 (docs/benchmarks.md): G1 2^22 reduction 2.96 → 2.30 ms, G2 2^22 7.86 → 6.12 ms;
/// at G1 2^26, where the second level fills the device, 4 everywhere was 1 ms slower.
pub(crate) const REDUCE_SEG_LATER: usize = 4;
/// A window's reduction ends on the host once it is down to this many sums.
pub(crate) const REDUCE_FINAL: usize = 16;
/// Entries per tile of the prefix sum (kernels/msm/msm.cu, MSM_SCAN_TILE).
pub(crate) const SCAN_TILE: usize = 2048;
/// Output slots (pairs) per thread of a batch-affine round (kernels/msm/affine.cuh; at most its
/// MSM_AFFINE_PER).
pub(crate) const AFFINE_PER: usize = 8;
/// Elements per thread of the batch inversion tree's launched levels. Short groups: past its
/// first levels the tree is bound by latency (on the H200, a small level's launch takes 7–9 µs
/// in G1 and 15–21 µs in G2, `ncu`, sessions 9, 10 and 16), not by its multiplications. Eight
/// rather than four since session 16 (docs/benchmarks.md): a third fewer levels, G2 2^24
/// 243.5 -> 242.8 ms in the same groups; the tree's smaller scratch also lets G1 2^24's windows
/// into four groups of four instead of five of three within the plan's budget (103.7 -> 102.8
/// ms, 14.7 -> 18.2 GB). Sixteen: G1 2^24 103.2 ms.
pub(crate) const TREE_PER: usize = 8;

/// The sizes of a batch inversion tree over `n` values whose top takes at most `top` values:
/// each level groups the one below in [`TREE_PER`]s.
pub(crate) fn tree_sizes(n: usize, top: usize) -> Vec<usize> {
    let mut sizes = vec![n];
    while *sizes.last().expect("one level") > top {
        let next = sizes.last().expect("one level").div_ceil(TREE_PER);
        sizes.push(next);
    }
    sizes
}

/// How a chunk's sorted (bucket, point) entries are summed into the buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Accumulation {
    /// Mixed XYZZ additions, one thread per equal segment of the sorted entries, partial sums
    /// merged level by level (`msm_accumulate`, `msm_merge`): 10 Fp multiplications per
    /// addition in G1, no inversion, little scratch. The default below 2^20 points (resident)
    /// or points per chunk (streamed).
    Xyzz,
    /// Affine additions in rounds that halve every bucket's list, the inversions of a round
    /// shared by one batch inversion (kernels/msm/affine.cuh): about 6.4 Fp multiplications per
    /// addition in G1, but more memory traffic, a latency-bound inversion tree per round, and
    /// up to [`DEFAULT_AFFINE_SCRATCH`] of scratch. The default for resident MSMs of 2^20
    /// points and more in both groups, where the H200 measured it faster than `Xyzz` at every
    /// size to 2^26 (docs/benchmarks.md: G1 since session 9; G2 since session 10, once its
    /// round kernels stopped passing Fp2 operands through the stack), and for streamed plans
    /// of chunks that large (session 11, [`Accumulation::streamed_default`]).
    BatchAffine,
}

impl Accumulation {
    /// The bucket sums of [`MsmPlan::new`] (bases and scalars on the device), by the H200's
    /// measurements from 2^20 to 2^26 points (docs/benchmarks.md): batch-affine from 2^20
    /// points, XYZZ below (smaller MSMs were not measured).
    pub fn resident_default(_group: Group, n_points: usize) -> Self {
        if n_points >= 1 << 20 {
            Accumulation::BatchAffine
        } else {
            Accumulation::Xyzz
        }
    }

    /// The bucket sums of a streamed plan ([`GpuMsm::streamed_plan`](super::GpuMsm::streamed_plan),
    /// inputs copied from host memory in chunks of `chunk_len` points), as resident MSMs of
    /// that many points choose them. Measured on the H200 (docs/benchmarks.md, session 11), the
    /// next chunk's copies queued before each chunk's sums: batch-affine against XYZZ at 2^24,
    /// G1 pinned 146.9 → 120.7 ms, pageable 160.4 → 152.6; G2 pinned 388.8 → 307.8, pageable
    /// 414.8 → 335.5; G1 2^26 pinned 502.9 → 434.0, pageable 555.5 → 540.5.
    pub fn streamed_default(group: Group, chunk_len: usize) -> Self {
        Self::resident_default(group, chunk_len)
    }
}

/// The number of windows of `c` bits that hold a scalar of at most 254 bits plus the carry of
/// its signed digits (the kernels negate scalars above (r − 1)/2): `⌈255/c⌉`.
pub const fn num_windows(window_bits: u32) -> u32 {
    255u32.div_ceil(window_bits)
}

/// The narrowest widest window of the windows of `c` bits (`c` from 1 to
/// [`MAX_WINDOW_BITS`](crate::reference::MAX_WINDOW_BITS)): `⌈255/W⌉` for `W = ⌈255/c⌉`. The
/// 255 bits are shared out among the `W` windows as evenly as they go (widths `c` and `c − 1`,
/// [`MsmPlan::window_width`]), so a wider `c` for the same `W` would only add empty buckets.
pub const fn balanced_window_bits(window_bits: u32) -> u32 {
    255u32.div_ceil(num_windows(window_bits))
}

/// Of `n_windows` windows of at most `c` bits, those `c` bits wide (the lowest ones), so that
/// with the rest `c − 1` bits wide they hold 255 bits; none for a width wider than balanced,
/// whose windows of `c − 1` bits already cover the 255 bits.
const fn wide_window_count(window_bits: u32, n_windows: u32) -> u32 {
    let narrow_bits = n_windows * window_bits.saturating_sub(1);
    let wide = 255u32.saturating_sub(narrow_bits);
    if wide < n_windows {
        wide
    } else {
        n_windows
    }
}

/// Buckets that windows of at most `c` bits use, `Σ_w 2^(c_w − 1)` over the balanced widths
/// (`c` normalised by [`balanced_window_bits`]).
pub const fn used_buckets(window_bits: u32) -> u64 {
    let c = balanced_window_bits(window_bits);
    let w = num_windows(c);
    let wide = wide_window_count(c, w);
    let narrow = w - wide;
    let wide_buckets = (wide as u64) << (c - 1);
    if c >= 2 {
        wide_buckets + ((narrow as u64) << (c - 2))
    } else {
        wide_buckets
    }
}

/// One level of the segmented bucket sums after the first (see kernels/msm/msm.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MergeLevel {
    /// Keyed partial sums read.
    pub(crate) n_in: usize,
    /// Threads (each writes two partial sums for the next level).
    pub(crate) n_threads: usize,
}

/// Device memory of the batch-affine rounds of one group of windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AffineScratch {
    /// Buckets of the group.
    pub(crate) keys: usize,
    /// Affine points (and their keys) of the odd and of the even levels.
    pub(crate) points: [usize; 2],
    /// Running products, one per output slot (none when the output points hold them:
    /// [`Group::prefix_in_output`]).
    pub(crate) prefix: usize,
    /// Elements of each level of the inversion tree (level 0: one per round thread).
    pub(crate) tree: Vec<usize>,
    pub(crate) field_bytes: usize,
    pub(crate) affine_bytes: usize,
    /// Groups of the chunk's windows: each lane holds every group's statistics (two u32).
    pub(crate) groups: usize,
}

impl AffineScratch {
    pub(crate) fn total(&self) -> usize {
        (self.points[0] + self.points[1]) * (self.affine_bytes + 4)
            + self.prefix.max(1) * self.field_bytes
            + 2 * self.tree.iter().sum::<usize>() * self.field_bytes
            + 8 * self.groups
    }
}

/// One level of the bucket reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReduceLevel {
    /// Sums per window read.
    pub(crate) len: usize,
    /// Sums per window per thread.
    pub(crate) seg: usize,
    /// log2 of the weight carried by this level's running sums.
    pub(crate) scale_log2: u32,
    /// Whether this level reads the buckets themselves.
    pub(crate) first: bool,
}

/// How a GPU MSM of a given size runs, and what it costs in device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    /// The group.
    pub group: Group,
    /// Multiprocessors of the device the plan is for.
    pub sm_count: u32,
    /// Points (and scalars).
    pub n_points: usize,
    /// The widest window's width `c`, [`balanced_window_bits`] of the width asked for:
    /// `2^(c−1)` buckets per window; the upper windows may be a bit narrower
    /// ([`window_width`](Self::window_width)).
    pub window_bits: u32,
    /// Windows, `⌈255/c⌉`.
    pub n_windows: u32,
    /// Points per chunk; each chunk is sorted and summed into the buckets on its own.
    pub chunk_len: usize,
    /// Points of the first chunk, at most `chunk_len` (equal unless
    /// [`with_first_chunk`](Self::with_first_chunk) made it shorter); the later chunks take
    /// `chunk_len` each, the last what is left ([`chunk`](Self::chunk)).
    pub first_chunk_len: usize,
    /// Chunks: `⌈n_points / chunk_len⌉`, or one more when the first is shorter.
    pub n_chunks: usize,
    /// Sorted entries per thread of the first level of the XYZZ bucket sums.
    pub accumulate_seg: usize,
    /// How the buckets are filled.
    pub accumulation: Accumulation,
    /// Windows whose buckets one batch-affine pass sums together (all of them when their
    /// scratch fits [`affine_budget`](Self::affine_budget)).
    pub affine_group_windows: u32,
    /// Lanes (streams) the batch-affine groups may run on, as requested (they run on
    /// [`affine_lanes_used`](Self::affine_lanes_used)), group `g` on lane `g % lanes`, each
    /// lane with its own scratch. A round's batch inversion ends in small, latency-bound
    /// launches (the tree's upper levels and its top, one block), which leave most of the
    /// device idle; on two lanes another group's rounds fill it.
    pub affine_lanes: u32,
    /// The scratch budget the groups and lanes were sized to (all lanes together).
    pub affine_budget: usize,
    /// A round whose batch inversion takes at most this many values (one per round thread)
    /// inverts them blockwise, each block of [`BLOCK_INVERSE_SPAN`] values with its own
    /// inversion in one launch; more go up a tree of launches to the first level of at most
    /// this many values, which inverts blockwise in the same way (zero: the tree goes up to
    /// one block with one inversion). The default, [`block_inverse_max`], is one wave of
    /// blocks on the device.
    pub affine_block_inverse_max: usize,
    /// Bytes of sorted entries one launch of the counting sort's scatter may write before the
    /// window's buckets are cut into parts (zero: never cut); see
    /// [`MsmPlan::with_scatter_region`] and [`MsmPlan::scatter_parts`].
    pub scatter_region: usize,
    /// Whether a sort whose scatter would be cut into parts sorts in two passes instead
    /// ([`MsmPlan::sort_bins`]); on by default.
    pub two_pass_sort: bool,
    /// Shared memory per block (bytes) the two-pass sort may use; see
    /// [`MsmPlan::with_sort_shared`].
    pub sort_shared: usize,
    /// Threads per block of the two-pass sort's first pass (zero: the most that fit
    /// [`sort_shared`](Self::sort_shared)); see [`MsmPlan::with_sort_tile_threads`].
    pub sort_tile_threads: u32,
    /// The most entries of a bin the second pass sorts in shared memory, below what
    /// [`sort_shared`](Self::sort_shared) allows (tests make it small to reach the slow way).
    pub sort_stage_limit: usize,
    /// Whether batch-affine sums end the last chunk with the bucket reduction's first level
    /// ([`MsmPlan::fuses_first_reduce`]); by default on in G1 and off in G2, as measured.
    pub fused_reduce: bool,
}

/// Sorted entries per thread of the first level of the XYZZ bucket sums, for a chunk of
/// `entries` sort entries on a device with `sm_count` multiprocessors.
///
/// Each thread sums its segment's complete runs into their buckets and leaves two partial sums
/// for the merge levels, so longer segments mean fewer partial sums, at the price of fewer, longer
/// threads: a segment of 256 takes about 5 ms on the H200, so the last wave of threads can leave
/// the device partly idle that long. Segments of 128 and 256 are taken only while they still give
/// about ten waves (4096 threads per multiprocessor), shorter ones while they give 1024 threads
/// per multiprocessor; none longer than `longest` ([`Group::longest_accumulate_seg`]). Measured
/// on the H200 (docs/benchmarks.md, session 7), `--accumulate-seg`: G1 2^24 123.6 / 120.8 /
/// 119.6 ms with 64 / 128 / 256 (merge 5.75 / 3.42 / 2.16 ms), G1 2^26 461.6 / 454.7 / 449.5;
/// 32 was slower (127.1 at G1 2^24).
pub(crate) fn accumulate_seg_for(entries: usize, sm_count: u32, longest: usize) -> usize {
    let sms = sm_count.max(1) as usize;
    [
        (256usize, 4096),
        (128, 4096),
        (64, 1024),
        (32, 1024),
        (16, 1024),
    ]
    .into_iter()
    .filter(|&(seg, _)| seg <= longest)
    .find(|&(seg, per_sm)| entries / seg >= per_sm * sms)
    .map_or(8, |(seg, _)| seg)
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

    /// The resident plan (bases and scalars on the device) for a device with `sm_count`
    /// multiprocessors, `l2_bytes` of L2, `shared_per_block` bytes of shared memory a block may
    /// opt in to and `total_memory` bytes, as `GpuMsm::plan` makes it: the scatter's parts
    /// sized to the L2, the two-pass sort to the shared memory, the batch-affine scratch to the
    /// memory ([`affine_scratch_for_device`]), and chunks of [`LARGEST_RESIDENT_CHUNK`] where
    /// that makes fewer chunks and the plan's device bytes stay within
    /// 1/[`LARGE_CHUNK_MEMORY_SHARE`] of the device, else of [`DEFAULT_RESIDENT_CHUNK`].
    pub fn for_device(
        n_points: usize,
        group: Group,
        sm_count: u32,
        l2_bytes: usize,
        shared_per_block: usize,
        total_memory: usize,
    ) -> Self {
        let fitted = |max_chunk: usize| {
            Self::resident(n_points, group, sm_count, max_chunk)
                .with_scatter_region(l2_bytes)
                .with_sort_shared(shared_per_block)
                .with_affine_scratch(affine_scratch_for_device(total_memory))
        };
        let default = fitted(DEFAULT_RESIDENT_CHUNK);
        let large = fitted(LARGEST_RESIDENT_CHUNK);
        if large.n_chunks < default.n_chunks
            && large.device_bytes() <= total_memory / LARGE_CHUNK_MEMORY_SHARE
        {
            large
        } else {
            default
        }
    }

    /// The plan for `n_points` points in chunks of at most `max_chunk`, its window width chosen
    /// for that many chunks.
    ///
    /// The window width minimises `max(n·W, fill) + (a + b·chunks)·B(c)` over `c`: `n·W`
    /// mixed additions into buckets, `B(c)` the buckets the balanced windows use
    /// ([`used_buckets`]), `(a, b)` the group's [`Group::bucket_weights`] (the
    /// reduction once, the sort's counters and the merge of partial sums once per chunk), and
    /// `fill = 2048·sm_count`, below which more windows cost no time because the device has
    /// idle threads anyway. The device's size also sets the first level's segment length
    /// (`accumulate_seg_for`), so that it runs at least about a thousand threads per
    /// multiprocessor.
    pub fn for_chunks(n_points: usize, group: Group, sm_count: u32, max_chunk: usize) -> Self {
        let fill = 2048.0 * f64::from(sm_count.max(1));
        let chunks = n_points.div_ceil(max_chunk.max(1)).max(1) as f64;
        let (once, per_chunk) = group.bucket_weights();
        let weight = once + per_chunk * chunks;
        let cost = |c: u32| {
            let w = f64::from(num_windows(c));
            (n_points as f64 * w).max(fill) + weight * used_buckets(c) as f64
        };
        let window_bits =
            (4..=group.max_window_bits())
                .fold(4, |best, c| if cost(c) < cost(best) { c } else { best });
        Self::with_window_bits(n_points, group, sm_count, window_bits, max_chunk)
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

    /// The same plan with a first chunk of `first` points (clamped to between one and
    /// `chunk_len`), the rest in chunks of `chunk_len`; a plan of no more than `first` points is
    /// unchanged.
    /// When the inputs stream from host memory, the first chunk's copy is the one no work
    /// overlaps, so a short first chunk shortens that wait, for one more chunk's work per bucket;
    /// [`GpuMsm::streamed_plan`](super::GpuMsm::streamed_plan) does not use it yet (measured on
    /// the H200, docs/benchmarks.md, session 7: G1 2^24 pinned 148.1 → 146.1 ms with a first
    /// chunk of 2^20, G1 2^26 505.9 → 563.2 ms with 2^22, whose 8 points per bucket make runs too
    /// short for the first level of the bucket sums). The window stays the one chosen for the
    /// plan's chunks.
    pub fn with_first_chunk(mut self, first: usize) -> Self {
        let first = first.clamp(1, self.chunk_len.max(1));
        if self.n_points > first {
            self.first_chunk_len = first;
            self.n_chunks = 1 + (self.n_points - first).div_ceil(self.chunk_len);
        }
        self
    }

    /// Chunk `k`'s first point and number of points (`k < n_chunks`; a `k` past the last chunk
    /// gets no points).
    pub fn chunk(&self, k: usize) -> (usize, usize) {
        if k == 0 {
            return (0, self.first_chunk_len.min(self.n_points));
        }
        let start = self.first_chunk_len + (k - 1) * self.chunk_len;
        (
            start,
            self.chunk_len.min(self.n_points.saturating_sub(start)),
        )
    }

    /// The same plan with the scatter's launches writing at most about `region_bytes` of sorted
    /// entries each (zero: no limit).
    pub fn with_scatter_region(mut self, region_bytes: usize) -> Self {
        self.scatter_region = region_bytes;
        self
    }

    /// Parts each window's buckets are cut into for the scatter, one launch each: one (a single
    /// launch for all windows) while a window's sorted entries (8 bytes per entry, about
    /// `chunk_len` entries) fit [`scatter_region`](Self::scatter_region), else enough parts for
    /// each to fit, at most one per bucket. A window of `c − 1` bits puts its entries in the
    /// lower half of its buckets, so its parts there take twice as many
    /// ([`narrow_density`](Self::narrow_density)); the parts are sized for those.
    pub fn scatter_parts(&self) -> u32 {
        if self.scatter_region == 0 {
            return 1;
        }
        let parts = (8 * self.chunk_len * self.narrow_density()).div_ceil(self.scatter_region);
        parts.clamp(1, self.buckets_per_window()) as u32
    }

    /// The same plan sorting in two passes where it would cut the scatter into parts (`true`,
    /// the default), or always with the single-pass scatter (`false`).
    pub fn with_two_pass_sort(mut self, on: bool) -> Self {
        self.two_pass_sort = on;
        self
    }

    /// The same plan with the batch-affine sums' last chunk fused with the bucket reduction's
    /// first level or not ([`MsmPlan::fuses_first_reduce`]; the default: in G1, not in G2).
    pub fn with_fused_reduce(mut self, on: bool) -> Self {
        self.fused_reduce = on;
        self
    }

    /// Whether the last chunk's batch-affine sums also run the bucket reduction's first level
    /// (kernels/msm/affine.cuh, `msm_affine_reduce`): each group of windows, on its lane, adds
    /// its buckets' last values straight into the first level's running sums with mixed
    /// additions, in place of `msm_affine_buckets` writing the buckets and the first level
    /// reading them back. The buckets are not written and read again, the level overlaps the
    /// other lane's rounds, and in a single-chunk MSM a bucket costs one full addition fewer
    /// (its first value starts the running sum's addition instead of an empty bucket). Taken
    /// with batch-affine sums where the reduction has device levels and
    /// [`fused_reduce`](Self::fused_reduce) is on: by default in G1 only. Measured on the H200
    /// (docs/benchmarks.md, session 30): G1 2^24 85.1 → 84.2 ms, G1 2^26 302.8 → 301.8; G2 2^24
    /// 218.4 → 219.2, whose fused kernel keeps 1.8 KB a thread on its stack (the called Fp2
    /// formulas).
    pub fn fuses_first_reduce(&self) -> bool {
        self.fused_reduce
            && self.accumulation == Accumulation::BatchAffine
            && self.buckets_per_window() > REDUCE_FINAL
    }

    /// The same plan with `bytes` of shared memory per block for the two-pass sort's kernels
    /// (at most what the device lets a block opt in to).
    pub fn with_sort_shared(mut self, bytes: usize) -> Self {
        self.sort_shared = bytes;
        self
    }

    /// The same plan with `threads` per block in the two-pass sort's first pass (a power of two
    /// from 32 to 1024; zero: the most that fit its shared memory). Where they do not fit, the
    /// plan sorts in one pass.
    pub fn with_sort_tile_threads(mut self, threads: u32) -> Self {
        self.sort_tile_threads = threads;
        self
    }

    /// The same plan sorting bins of at most `entries` in the second pass's shared memory.
    pub fn with_sort_stage_limit(mut self, entries: usize) -> Self {
        self.sort_stage_limit = entries;
        self
    }

    /// The counting sort's two passes (kernels/msm/msm.cu, msm_sort_bins and
    /// msm_sort_bin_buckets): the fewest bins per window (at most [`MAX_BINS`]) whose expected
    /// entries (a chunk's points over the bins: a window of `c − 1` bits has its bins in the
    /// half of its buckets it uses, one of `c` bits bins twice as wide, [`SortBins`]) fill at
    /// most three quarters of the second pass's stage, and the most threads per block of the
    /// first pass that fit
    /// [`sort_shared`](Self::sort_shared) beside the bins' counters. Taken where the single-pass
    /// scatter would be cut into parts (a window's sorted entries exceed
    /// [`scatter_region`](Self::scatter_region)) and such bins exist, unless
    /// [`two_pass_sort`](Self::two_pass_sort) is off; `None` otherwise. Measured on the H200
    /// (docs/benchmarks.md, session 17).
    pub fn sort_bins(&self) -> Option<SortBins> {
        if !self.two_pass_sort || self.scatter_parts() <= 1 {
            return None;
        }
        // The keys a window of c − 1 bits uses (all of them when every window has c bits).
        let wide_extra = u32::from(self.narrow_density() == 2);
        let used = self.buckets_per_window() >> wide_extra;
        let mut bins = 1;
        while bins <= used.min(MAX_BINS) {
            let bin_log2 = (used / bins).trailing_zeros();
            let stage_cap = (self
                .sort_shared
                .saturating_sub((4 << (bin_log2 + wide_extra)) + STAGE_STATIC_SHARED)
                / 8)
            .min(self.sort_stage_limit);
            if 4 * self.chunk_len <= 3 * bins * stage_cap {
                let fits = |t: u32| {
                    let layout = SortBins {
                        bin_log2,
                        wide_extra,
                        bins,
                        tile_threads: t,
                        stage_cap,
                    };
                    layout.tile_shared_bytes() + 4 * BIN_MAX_THREADS as usize <= self.sort_shared
                };
                let tile_threads = match self.sort_tile_threads {
                    0 => [1024, 512, 256, 128, 64, 32].into_iter().find(|&t| fits(t)),
                    t => (t.is_power_of_two() && (32..=BIN_MAX_THREADS).contains(&t) && fits(t))
                        .then_some(t),
                }?;
                return Some(SortBins {
                    bin_log2,
                    wide_extra,
                    bins,
                    tile_threads,
                    stage_cap,
                });
            }
            bins *= 2;
        }
        None
    }

    /// How msm_digits_bins counts the digits of a chunk of `m` points per bin of `bins`: the
    /// most windows per block whose counters fit [`sort_shared`](Self::sort_shared), and enough
    /// blocks of [`DIGITS_BINS_THREADS`] for one wave on the device (as many per multiprocessor
    /// as fit, at most [`DIGITS_BINS_BLOCKS_PER_SM`]), each over an equal share of the points, so
    /// that each block's counters are added into the global ones once for many digits.
    pub fn digits_bins(&self, bins: &SortBins, m: usize) -> DigitsBins {
        let windows = self.n_windows.max(1) as usize;
        let per_window = 4 * bins.bins;
        let windows_per_block = (self.sort_shared / per_window).clamp(1, windows);
        let groups = windows.div_ceil(windows_per_block);
        let shared_bytes = per_window * windows_per_block;
        let per_sm = (self.sort_shared / (shared_bytes + 1024)).clamp(1, DIGITS_BINS_BLOCKS_PER_SM);
        let resident = self.sm_count.max(1) as usize * per_sm;
        let blocks_per_group = resident
            .div_ceil(groups)
            .min(m.div_ceil(DIGITS_BINS_THREADS as usize))
            .max(1);
        let per_block = m.div_ceil(blocks_per_group).max(1);
        DigitsBins {
            windows_per_block: windows_per_block as u32,
            blocks_per_group: blocks_per_group as u32,
            per_block: per_block as u32,
            groups: groups as u32,
            shared_bytes,
        }
    }

    /// Device bytes of the two-pass sort's scratch: the entries grouped by bin, each bin's fill
    /// count, and the bins' counts (then offsets, one more).
    fn sort_bins_bytes(&self) -> usize {
        self.sort_bins().map_or(0, |s| {
            8 * self.entries_per_chunk() + 4 * (2 * s.bins * self.n_windows as usize + 1)
        })
    }

    /// The bucket range `[lo, hi)` of part `part` of window `window`'s scatter.
    pub(crate) fn scatter_range(&self, window: u32, part: u32) -> (usize, usize) {
        let k = self.buckets_per_window();
        let parts = self.scatter_parts() as usize;
        let w0 = window as usize * k;
        (
            w0 + part as usize * k / parts,
            w0 + (part as usize + 1) * k / parts,
        )
    }

    /// The same plan summing the buckets by `accumulation`.
    pub fn with_accumulation(mut self, accumulation: Accumulation) -> Self {
        self.accumulation = accumulation;
        self
    }

    /// The same plan with batch-affine groups sized to `scratch_bytes` of device memory, all
    /// lanes together (at least one window per group; `usize::MAX`: all windows in one group).
    pub fn with_affine_scratch(mut self, scratch_bytes: usize) -> Self {
        self.fit_affine(scratch_bytes, self.affine_lanes);
        self
    }

    /// The same plan inverting blockwise up to `values` values per round (0: never; see
    /// [`affine_block_inverse_max`](Self::affine_block_inverse_max)).
    pub fn with_affine_block_inverse_max(mut self, values: usize) -> Self {
        self.affine_block_inverse_max = values;
        self
    }

    /// The same plan with its batch-affine groups on up to `lanes` lanes (1 to
    /// [`MAX_AFFINE_LANES`]), the groups sized so that the lanes' scratch fits the plan's budget
    /// together.
    pub fn with_affine_lanes(mut self, lanes: u32) -> Self {
        self.fit_affine(self.affine_budget, lanes);
        self
    }

    /// Sizes the batch-affine groups to `budget` for up to `lanes` lanes (the request stays in
    /// `affine_lanes`, so that a later budget sizes them again for as many): every window in
    /// one group when that fits; else groups that fit the budget shared by the lanes that fit
    /// ([`lanes_within`](Self::lanes_within)).
    fn fit_affine(&mut self, budget: usize, lanes: u32) {
        self.affine_budget = budget;
        self.affine_lanes = lanes.clamp(1, MAX_AFFINE_LANES);
        let alone = self.affine_windows_within(budget);
        self.affine_group_windows = if alone >= self.n_windows {
            alone
        } else {
            self.affine_windows_within(budget / self.lanes_within(budget) as usize)
        };
    }

    /// Lanes the batch-affine groups may use within `budget`: the requested lanes, fewer while
    /// even one window per lane would not fit.
    fn lanes_within(&self, budget: usize) -> u32 {
        let one_window = self.affine_scratch(1).total();
        let mut lanes = self.affine_lanes.clamp(1, MAX_AFFINE_LANES);
        while lanes > 1 && lanes as usize * one_window > budget {
            lanes -= 1;
        }
        lanes
    }

    /// Lanes the batch-affine groups run on: [`affine_lanes`](Self::affine_lanes), fewer when
    /// one window per lane exceeds the budget, at most one per group.
    pub fn affine_lanes_used(&self) -> u32 {
        self.lanes_within(self.affine_budget)
            .min(self.affine_groups())
            .max(1)
    }

    /// The most windows per batch-affine group whose scratch fits `budget` (at least one).
    fn affine_windows_within(&self, budget: usize) -> u32 {
        (1..=self.n_windows)
            .rev()
            .find(|&w| self.affine_scratch(w).total() <= budget)
            .unwrap_or(1)
    }

    /// Number of batch-affine groups per chunk.
    pub fn affine_groups(&self) -> u32 {
        self.n_windows.div_ceil(self.affine_group_windows.max(1))
    }

    /// The scratch of batch-affine groups of `windows` windows.
    pub(crate) fn affine_scratch(&self, windows: u32) -> AffineScratch {
        let keys = windows as usize * self.buckets_per_window();
        let entries = self.chunk_len * windows as usize;
        // Level sizes shrink as size_{L+1} <= (size_L + keys) / 2 (kernels/msm/affine.cuh).
        let level1 = (entries + keys) / 2 + 1;
        let level2 = (level1 + keys) / 2 + 1;
        let odd = level1.max(keys + 1);
        let even = level2.max(keys + 1);
        // A round's threads take AFFINE_PER output slots each; level 1 is the largest output.
        let tree = tree_sizes(odd.div_ceil(AFFINE_PER), self.group.tree_top().1);
        AffineScratch {
            keys,
            points: [odd, even],
            prefix: if self.group.prefix_in_output() {
                0
            } else {
                odd
            },
            tree,
            field_bytes: self.group.affine_bytes() / 2,
            affine_bytes: self.group.affine_bytes(),
            groups: self.n_windows.div_ceil(windows.max(1)) as usize,
        }
    }

    /// The same plan with chunks of at most `max_chunk` points.
    pub fn with_max_chunk(&self, max_chunk: usize) -> Self {
        let mut plan = Self::with_window_bits(
            self.n_points,
            self.group,
            self.sm_count,
            self.window_bits,
            max_chunk,
        )
        .with_scatter_region(self.scatter_region)
        .with_two_pass_sort(self.two_pass_sort)
        .with_sort_shared(self.sort_shared)
        .with_sort_tile_threads(self.sort_tile_threads)
        .with_sort_stage_limit(self.sort_stage_limit)
        .with_affine_block_inverse_max(self.affine_block_inverse_max)
        .with_fused_reduce(self.fused_reduce);
        plan.fit_affine(self.affine_budget, self.affine_lanes);
        plan
    }

    /// Buckets per window, `2^(c−1)`: a window of `c − 1` bits uses the lower half of its own.
    pub fn buckets_per_window(&self) -> usize {
        1 << (self.window_bits - 1)
    }

    /// How much denser than a window of `c` bits the narrowest window fills its buckets'
    /// range: 2 when some windows are `c − 1` bits wide (their entries all in the lower half of
    /// the range), else 1. The single-pass scatter's parts are sized for the denser windows;
    /// the two-pass sort's bins are sized per window instead ([`SortBins`]).
    pub fn narrow_density(&self) -> usize {
        if self.wide_windows() < self.n_windows {
            2
        } else {
            1
        }
    }

    /// Windows of `c` bits, the lowest ones; the rest take `c − 1`, so that the widths add up
    /// to 255 (see kernels/msm/msm.cu, `msm_digits`).
    pub fn wide_windows(&self) -> u32 {
        wide_window_count(self.window_bits, self.n_windows)
    }

    /// The width of window `w` in bits (window `w` holds the scalars' bits from
    /// `Σ_{v<w} window_width(v)` up).
    pub fn window_width(&self, w: u32) -> u32 {
        if w < self.wide_windows() {
            self.window_bits
        } else {
            self.window_bits - 1
        }
    }

    /// Buckets of all windows.
    pub fn total_buckets(&self) -> usize {
        self.n_windows as usize * self.buckets_per_window()
    }

    /// Sort entries of the largest chunk (one per point and window).
    pub fn entries_per_chunk(&self) -> usize {
        self.chunk_len * self.n_windows as usize
    }

    /// Threads of the first level of the bucket sums for a chunk of `m` points.
    pub(crate) fn accumulate_threads(&self, m: usize) -> usize {
        (m * self.n_windows as usize)
            .div_ceil(self.accumulate_seg)
            .max(1)
    }

    /// The merge levels after a first level of `first_threads` threads.
    pub(crate) fn merge_levels(first_threads: usize) -> Vec<MergeLevel> {
        let mut levels = Vec::new();
        let mut threads = first_threads;
        while threads > 1 {
            let n_in = 2 * threads;
            threads = n_in.div_ceil(MERGE_SEG);
            levels.push(MergeLevel {
                n_in,
                n_threads: threads,
            });
        }
        levels
    }

    /// The device levels of the bucket reduction, and what is left per window for the host:
    /// `(levels, final_len, final_scale_log2)`.
    pub(crate) fn reduce_levels(&self) -> (Vec<ReduceLevel>, usize, u32) {
        let mut levels = Vec::new();
        let mut len = self.buckets_per_window();
        let mut scale_log2 = 0;
        // Threads the device runs at once in the reduction (two blocks of POINT_BLOCK per
        // multiprocessor, as the G1 kernel's registers allow).
        let resident = 2 * POINT_BLOCK as usize * self.sm_count.max(1) as usize;
        while len > REDUCE_FINAL {
            let first = levels.is_empty();
            let fills = self.n_windows as usize * (len / REDUCE_SEG) >= resident;
            let seg = if first || fills {
                REDUCE_SEG
            } else {
                REDUCE_SEG_LATER
            };
            levels.push(ReduceLevel {
                len,
                seg,
                scale_log2,
                first,
            });
            scale_log2 += seg.trailing_zeros();
            len /= seg;
        }
        (levels, len, scale_log2)
    }

    /// Prefix-sum scratch: the lengths of the tile-sum arrays of each level for `n` entries.
    pub(crate) fn scan_levels(n: usize) -> Vec<usize> {
        let mut levels = Vec::new();
        let mut len = n;
        loop {
            let tiles = len.div_ceil(SCAN_TILE).max(1);
            levels.push(tiles);
            if tiles == 1 {
                return levels;
            }
            len = tiles;
        }
    }

    /// Device bytes of the partial-sum arrays `(first, second)` of the bucket sums.
    fn partial_slots(&self) -> (usize, usize) {
        let t0 = self.accumulate_threads(self.chunk_len);
        let t1 = Self::merge_levels(t0).first().map_or(1, |l| l.n_threads);
        (2 * t0, 2 * t1)
    }

    /// Device bytes the MSM allocates when bases and scalars are already on the device: buckets,
    /// the sort of one chunk, partial sums and reduction scratch.
    pub fn device_bytes(&self) -> usize {
        let sums = match self.accumulation {
            Accumulation::Xyzz => {
                let (slots_a, slots_b) = self.partial_slots();
                (slots_a + slots_b) * (4 + self.group.xyzz_bytes())
            }
            Accumulation::BatchAffine => {
                let lanes = self.affine_lanes_used() as usize;
                lanes * self.affine_scratch(self.affine_group_windows).total()
            }
        };
        self.sort_and_reduce_bytes() + sums
    }

    /// Device bytes of the buckets: every window's, except in a single-chunk MSM that fuses the
    /// reduction's first level into its sums ([`fuses_first_reduce`](Self::fuses_first_reduce)),
    /// which never writes or reads them (none: G1 2^26 saves 1.3 GB).
    pub fn bucket_bytes(&self) -> usize {
        if self.n_chunks == 1 && self.fuses_first_reduce() {
            0
        } else {
            self.total_buckets() * self.group.xyzz_bytes()
        }
    }

    /// Everything but the bucket sums' scratch: buckets, sort, reduction.
    fn sort_and_reduce_bytes(&self) -> usize {
        let xyzz = self.group.xyzz_bytes();
        let g = self.total_buckets();
        let entries = self.entries_per_chunk();
        let (levels, final_len, _) = self.reduce_levels();
        let mut reduce = 0;
        let mut out_len = self.buckets_per_window();
        for (i, level) in levels.iter().enumerate() {
            out_len /= level.seg;
            // Levels alternate between two pairs of arrays; the last writes exact-size arrays.
            if i < 2 && i + 1 < levels.len() {
                reduce += 2 * self.n_windows as usize * out_len * xyzz;
            }
        }
        reduce += 2 * self.n_windows as usize * final_len * xyzz;
        let scan: usize = Self::scan_levels(g + 1).iter().sum::<usize>() * 4;
        self.bucket_bytes()
            + 2 * (g + 1) * 4          // counts (then offsets) and cursors
            + scan
            + 3 * entries * 4          // digit keys, sorted entries (key and reference)
            + self.sort_bins_bytes()   // the two-pass sort's entries grouped by bin
            + reduce
    }

    /// [`device_bytes`](Self::device_bytes) plus the staging buffers of bases and scalars
    /// streamed from host memory: two chunks in flight and one for a shorter last chunk.
    pub fn streamed_device_bytes(&self) -> usize {
        self.device_bytes() + 3 * self.chunk_len * (self.group.affine_bytes() + 32)
    }

    /// Pinned host bytes that stage bases and scalars streamed from pageable memory: a chunk of
    /// each in each of two slots (one slot when there is one chunk), when both are pageable.
    /// Inputs in pinned or device memory need none.
    pub fn host_staging_bytes(&self) -> usize {
        self.staging_slots() * self.chunk_len * (self.group.affine_bytes() + 32)
    }

    /// Full-chunk slots of each streamed input's staging ring: two that chunks take in turn, or
    /// one when there is one chunk.
    pub(crate) fn staging_slots(&self) -> usize {
        if self.n_chunks > 1 {
            2
        } else {
            1
        }
    }

    /// Bucket additions of the MSM: `(mixed, full)`. Mixed: one per point and window (for
    /// random scalars, digit zero is rare); full: the reduction's two per bucket per window.
    pub fn bucket_additions(&self) -> (u64, u64) {
        let mixed = self.n_points as u64 * u64::from(self.n_windows);
        let full = 2 * self.total_buckets() as u64;
        (mixed, full)
    }

    /// Fp multiplications' worth of the bucket additions: the MSM's arithmetic floor.
    pub fn field_multiplications(&self) -> f64 {
        let (mixed, full) = self.bucket_additions();
        let per_addition = match self.accumulation {
            Accumulation::Xyzz => self.group.mixed_add_muls(),
            Accumulation::BatchAffine => self.group.affine_add_muls(),
        };
        mixed as f64 * per_addition + full as f64 * self.group.full_add_muls()
    }
}

/// An upper bound of the device bytes an MSM of `n` points in `group` allocates with bases and
/// scalars already on the device by [`MsmPlan::new`]'s plan (batch-affine scratch within
/// [`DEFAULT_AFFINE_SCRATCH`]) or by that plan in chunks of [`LARGEST_RESIDENT_CHUNK`], on any
/// device (the plan of a device with many multiprocessors has the shortest segments, hence the
/// most partial sums; one with the most shared memory sorts in two passes, with 8 more bytes per
/// sorted entry). `GpuMsm::plan` ([`MsmPlan::for_device`]) sizes the scratch and the chunks to
/// the device, taking the larger chunks only on a device with
/// [`LARGE_CHUNK_MEMORY_SHARE`] times their bytes; for the exact figure on one device, see
/// [`MsmPlan::device_bytes`] of that plan.
pub fn device_bytes_needed(n: usize, group: Group) -> usize {
    [1u32, 16, 132, 1024]
        .into_iter()
        .flat_map(|sm| {
            [DEFAULT_SORT_SHARED, LARGEST_SORT_SHARED]
                .into_iter()
                .flat_map(move |shared| {
                    [DEFAULT_RESIDENT_CHUNK, LARGEST_RESIDENT_CHUNK].map(|chunk| {
                        MsmPlan::resident(n, group, sm, chunk)
                            .with_sort_shared(shared)
                            .device_bytes()
                    })
                })
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// msm_inv_top (kernels/msm/affine.cuh) takes one block of a power of two threads, at most
    /// its MSM_TOP_THREADS (128), and its tree sizes end at the top's values.
    #[test]
    fn tree_top_fits_the_kernel() {
        for group in [Group::G1, Group::G2] {
            let (threads, values) = group.tree_top();
            assert!(threads.is_power_of_two() && threads <= 128, "{group:?}");
            assert!(values >= threads as usize, "{group:?}");
            for n in [1, values, values + 1, 1 << 22] {
                let sizes = tree_sizes(n, values);
                assert!(*sizes.last().unwrap() <= values, "{group:?}, {n}");
                assert!(sizes.windows(2).all(|w| w[1] == w[0].div_ceil(TREE_PER)));
            }
        }
    }

    #[test]
    fn windows_hold_254_bits_and_a_carry() {
        for c in 1..=24 {
            let w = num_windows(c);
            assert!(w * c >= 255 && (w - 1) * c < 255, "c = {c}");
        }
    }

    /// (group, log n, [(window bits, ms)]).
    type Sweep = (Group, u32, &'static [(u32, f64)]);
    const G1: Group = Group::G1;
    const G2: Group = Group::G2;

    /// Resident MSM times (ms) on the H200 by window width (balanced windows), from
    /// `bench_msm --window-sweep` (docs/benchmarks.md, "Window choice"; session 20,
    /// docs/results/session-20/run20c.sh and run20d.sh).
    #[rustfmt::skip]
    const H200_WINDOW_SWEEP: &[Sweep] = &[
        (G1, 20, &[(14, 10.69), (15, 9.93), (16, 9.81), (17, 10.55)]),
        (G1, 21, &[(15, 16.58), (16, 16.27), (17, 16.61), (19, 19.82)]),
        (G1, 22, &[(15, 29.65), (16, 27.67), (17, 28.29), (19, 29.79)]),
        (G1, 23, &[(15, 53.47), (16, 50.87), (17, 49.18), (19, 50.87)]),
        (G1, 24, &[(16, 97.59), (17, 92.90), (19, 92.44), (20, 96.10), (22, 119.21)]),
        (G1, 25, &[(17, 181.91), (19, 177.08), (20, 175.91), (22, 201.40)]),
        // 2^26 from two single runs (`--window-bits 17` and the default, 20).
        (G1, 26, &[(17, 360.96), (20, 343.25)]),
        (G2, 20, &[(13, 25.88), (14, 24.80), (15, 23.97), (16, 23.31)]),
        (G2, 21, &[(14, 43.25), (15, 40.12), (16, 39.41), (17, 40.56)]),
        (G2, 22, &[(15, 72.07), (16, 68.57), (17, 68.86), (19, 74.23)]),
        (G2, 23, &[(15, 133.73), (16, 128.23), (17, 125.07), (19, 128.61)]),
        (G2, 24, &[(15, 264.98), (16, 250.73), (17, 238.54), (19, 235.55)]),
        (G2, 25, &[(17, 467.37), (19, 449.37), (20, 443.88)]),
    ];

    #[test]
    fn streamed_chunks_are_a_quarter_within_bounds() {
        assert_eq!(streamed_chunk_len(1000), DEFAULT_STREAMED_CHUNK);
        assert_eq!(streamed_chunk_len(1 << 24), 1 << 22);
        assert_eq!(streamed_chunk_len(1 << 26), 1 << 24);
        assert_eq!(streamed_chunk_len(1 << 28), DEFAULT_RESIDENT_CHUNK);
    }

    #[test]
    fn window_choice_is_near_the_measured_best() {
        for &(group, log_n, sweep) in H200_WINDOW_SWEEP {
            let c = MsmPlan::new(1 << log_n, group, 132).window_bits;
            let best = sweep.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
            let Some(&(_, ms)) = sweep.iter().find(|s| s.0 == c) else {
                panic!("{group:?} 2^{log_n}: the planner picks {c} bits, outside the sweep");
            };
            assert!(
                ms <= 1.03 * best,
                "{group:?} 2^{log_n}: {c} bits take {ms} ms, the best {best} ms"
            );
        }
    }

    #[test]
    fn windows_share_the_bits_evenly() {
        for c in 1..=MAX_WINDOW_BITS {
            let plan = MsmPlan::with_window_bits(1 << 10, Group::G1, 8, c, 1 << 20);
            let widths: Vec<u32> = (0..plan.n_windows).map(|w| plan.window_width(w)).collect();
            assert_eq!(widths.iter().sum::<u32>(), 255, "c = {c}: {widths:?}");
            assert_eq!(plan.n_windows, num_windows(c), "c = {c}");
            assert_eq!(plan.window_bits, balanced_window_bits(c));
            assert!(
                plan.window_bits <= c && widths[0] == plan.window_bits,
                "c = {c}"
            );
            // The wide windows first, then those one bit narrower, none of zero bits.
            assert!(
                widths.windows(2).all(|p| p[0] >= p[1] && p[0] - p[1] <= 1),
                "c = {c}"
            );
            assert!(widths.iter().all(|&b| b >= 1 && b + 1 >= plan.window_bits));
            let used: u64 = widths.iter().map(|&b| 1u64 << (b - 1)).sum();
            assert_eq!(used_buckets(c), used, "c = {c}");
            assert!(used <= plan.total_buckets() as u64);
        }
        // G1 2^26: thirteen windows, eight of 20 bits and five of 19.
        let plan = MsmPlan::new(1 << 26, Group::G1, 132);
        assert_eq!(
            (plan.window_bits, plan.n_windows, plan.wide_windows()),
            (20, 13, 8)
        );
        // 21 bits make no fewer windows than 20: the same plan.
        assert_eq!(
            MsmPlan::with_window_bits(1 << 24, Group::G1, 132, 21, 1 << 25).window_bits,
            20
        );
    }

    #[test]
    fn window_choice_grows_with_size_and_shrinks_with_chunks() {
        for group in [Group::G1, Group::G2] {
            let mut last = 0;
            for log_n in 0..=27 {
                let c = MsmPlan::new(1 << log_n, group, 132).window_bits;
                assert!(c >= last, "{group:?} 2^{log_n}: {c} after {last}");
                assert!(c <= group.max_window_bits());
                last = c;
                // More chunks make every bucket cost more: never a wider window.
                let chunked = MsmPlan::for_chunks(1 << log_n, group, 132, 1 << 20);
                assert!(chunked.window_bits <= c, "{group:?} 2^{log_n}");
            }
        }
        // Two chunks of 2^25 at 2^26: 20 bits (22 measured 13% slower, 21 25%).
        assert_eq!(MsmPlan::new(1 << 26, Group::G1, 132).window_bits, 20);
    }

    /// The two-pass sort's bins tile each window within the kernels' limits, are taken exactly
    /// where the single-pass scatter would be cut into parts (unless switched off) and such bins
    /// exist, and the kernels' sizes are the host's constants (kernels/msm/msm.cu).
    #[test]
    fn sort_bins_tile_each_window() {
        let source = include_str!("../../../../kernels/msm/msm.cu");
        for define in [
            format!("#define MSM_BIN_PER {BIN_PER}u"),
            format!("#define MSM_BIN_MAX_THREADS {BIN_MAX_THREADS}u"),
        ] {
            assert!(
                source.contains(&define),
                "kernels/msm/msm.cu lacks `{define}`"
            );
        }
        for (n, c, region, shared) in [
            (1usize << 24, 20u32, 60usize << 20, 227usize << 10),
            (1 << 26, 20, 60 << 20, 227 << 10),
            (1 << 26, 22, 60 << 20, 227 << 10),
            (1 << 24, 17, 60 << 20, 227 << 10),
            (1 << 24, 20, 60 << 20, DEFAULT_SORT_SHARED),
            (1 << 20, 16, 60 << 20, 227 << 10),
            (1000, 8, 2700, DEFAULT_SORT_SHARED),
            (1000, 3, 2700, 6 << 10),
            (1000, 8, 2700, 4 << 10),
        ] {
            let plan = MsmPlan::with_window_bits(n, Group::G1, 132, c, 1 << 26)
                .with_scatter_region(region)
                .with_sort_shared(shared);
            let k = plan.buckets_per_window();
            let what = format!("n {n}, c {c}, shared {shared}");
            // The fewest bins whose expected entries fill at most three quarters of the stage:
            // a window of c − 1 bits has its bins in the half of its buckets it uses, so a
            // window of c bits has bins twice as wide.
            let extra = u32::from(plan.narrow_density() == 2);
            let used = k >> extra;
            let feasible = |bins: usize| {
                let widest = 4 * ((used / bins) << extra);
                let stage = shared.saturating_sub(widest + STAGE_STATIC_SHARED) / 8;
                4 * plan.chunk_len <= 3 * bins * stage
            };
            match plan.sort_bins() {
                Some(s) => {
                    assert!(plan.scatter_parts() > 1, "{what}");
                    assert_eq!(s.wide_extra, extra, "{what}");
                    assert_eq!(s.bins << (s.bin_log2 + s.wide_extra), k, "{what}");
                    assert!(s.bins <= MAX_BINS && feasible(s.bins), "{what}");
                    assert!(s.bins == 1 || !feasible(s.bins / 2), "{what}");
                    assert!(s.stage_shared_bytes() <= shared, "{what}");
                    assert!(s.tile_shared_bytes() + 4 * BIN_MAX_THREADS as usize <= shared);
                    assert!((32..=BIN_MAX_THREADS).contains(&s.tile_threads));
                    let one = plan.clone().with_two_pass_sort(false);
                    let n_bins = s.bins * plan.n_windows as usize;
                    let extra = 8 * plan.entries_per_chunk() + 4 * (2 * n_bins + 1);
                    assert_eq!(plan.device_bytes(), one.device_bytes() + extra);
                    for m in [1, 1000, plan.chunk_len] {
                        let d = plan.digits_bins(&s, m);
                        assert!(d.shared_bytes <= shared, "{what}");
                        assert_eq!(d.shared_bytes, 4 * s.bins * d.windows_per_block as usize);
                        assert!(d.groups * d.windows_per_block >= plan.n_windows, "{what}");
                        assert!(
                            (d.groups - 1) * d.windows_per_block < plan.n_windows,
                            "{what}"
                        );
                        assert!(
                            d.blocks_per_group as usize * d.per_block as usize >= m,
                            "{what}"
                        );
                        assert!(d.blocks() as usize <= 2 * 132 + d.groups as usize, "{what}");
                    }
                }
                None => {
                    // Not cut into parts, no bins fit the stage, or the fewest that do leave
                    // no room for the first pass's smallest blocks.
                    let first = (0..=MAX_BINS.min(used).trailing_zeros())
                        .map(|b| 1usize << b)
                        .find(|&b| feasible(b));
                    assert!(
                        plan.scatter_parts() == 1
                            || first.is_none_or(|b| 8 * BIN_PER * 32 + 8 * b + 4096 > shared),
                        "{what}"
                    );
                }
            }
            assert_eq!(plan.clone().with_two_pass_sort(false).sort_bins(), None);
        }
        // G1 2^24 and 2^26 on the H200 sort in two passes, in the largest first-pass blocks.
        for n in [1usize << 24, 1 << 26] {
            let plan = MsmPlan::new(n, Group::G1, 132)
                .with_scatter_region(60 << 20)
                .with_sort_shared(227 << 10);
            assert_eq!(
                plan.sort_bins().map(|s| s.tile_threads),
                Some(1024),
                "n {n}"
            );
            // And count their digits per bin with every window in each block.
            let s = plan.sort_bins().expect("two passes");
            assert_eq!(plan.digits_bins(&s, plan.chunk_len).groups, 1, "n {n}");
        }
        // A chunk of 2^26 points sorts in two passes too, in the most bins (a window of c bits
        // has bins twice as wide as one of c − 1, which uses half its buckets; with every bin
        // as wide the chunk fell back to the scatter in parts: docs/benchmarks.md, session 27).
        let one = MsmPlan::for_chunks(1 << 26, Group::G1, 132, 1 << 26)
            .with_scatter_region(60 << 20)
            .with_sort_shared(227 << 10);
        assert_eq!(one.n_chunks, 1);
        let s = one.sort_bins().expect("two passes");
        assert_eq!((s.bins, s.wide_extra), (MAX_BINS, 1));
    }

    #[test]
    fn scatter_parts_tile_each_window() {
        for (n, c, region) in [
            (1usize << 24, 20u32, 30usize << 20),
            (1 << 24, 20, 0),
            (1000, 8, 8),
            (1000, 8, 2700),
            (1 << 20, 16, 1),
        ] {
            let plan = MsmPlan::with_window_bits(n, Group::G1, 132, c, 1 << 25)
                .with_scatter_region(region);
            let k = plan.buckets_per_window();
            let parts = plan.scatter_parts();
            assert!((1..=k as u32).contains(&parts));
            if region == 0 {
                assert_eq!(parts, 1);
            } else if parts < k as u32 {
                // Each part's expected output, 8 bytes per point over the parts (over half of
                // them in a window of c − 1 bits), fits the region.
                assert!(8 * plan.chunk_len * plan.narrow_density() <= parts as usize * region);
            }
            for w in 0..plan.n_windows {
                let mut next = w as usize * k;
                for part in 0..parts {
                    let (lo, hi) = plan.scatter_range(w, part);
                    assert_eq!(lo, next, "n {n}, c {c}, window {w}, part {part}");
                    assert!(hi > lo);
                    next = hi;
                }
                assert_eq!(next, (w as usize + 1) * k);
            }
        }
        // 2^24 points in windows of 20 bits with the H200's L2 (60 MiB) per part: 5 parts per
        // window, for the five windows of 19 bits (of 13) whose 128 MiB of entries fill the lower
        // half of the buckets.
        let plan = MsmPlan::with_window_bits(1 << 24, Group::G1, 132, 20, DEFAULT_RESIDENT_CHUNK)
            .with_scatter_region(60 << 20);
        assert_eq!((plan.window_bits, plan.narrow_density()), (20, 2));
        assert_eq!(plan.scatter_parts(), 5);
        // Other chunk sizes keep the region: 2^21-point chunks fit it, 2^25-point ones take 9.
        assert_eq!(plan.with_max_chunk(1 << 21).scatter_parts(), 1);
        let big = MsmPlan::new(1 << 26, Group::G1, 132).with_scatter_region(60 << 20);
        assert_eq!(big.scatter_parts(), 9);
        assert_eq!(big.with_max_chunk(1 << 22).scatter_region, 60 << 20);
    }

    #[test]
    fn segments_lengthen_with_the_entries_and_keep_the_device_busy() {
        let sms = 132;
        let mut last = 0;
        for log in 10..=31 {
            let entries = 1usize << log;
            let seg = accumulate_seg_for(entries, sms, 256);
            assert!(seg >= last, "2^{log}: {seg} after {last}");
            last = seg;
            if seg > 64 {
                assert!(entries / seg >= 4096 * sms as usize);
            } else if seg > 8 {
                assert!(entries / seg >= 1024 * sms as usize);
            }
        }
        assert_eq!(last, 256);
        // The measured sizes: G1 2^24 (window 20, 13 windows) takes 256, G1 2^20 (16, 16) 64.
        assert_eq!(accumulate_seg_for((1 << 24) * 13, sms, 256), 256);
        assert_eq!(accumulate_seg_for((1 << 20) * 16, sms, 256), 64);
        assert_eq!(accumulate_seg_for(100, sms, 256), 8);
        // The plans: G2 keeps 64 with windows of 20 bits, takes 256 with 19.
        assert_eq!(MsmPlan::new(1 << 24, Group::G1, sms).accumulate_seg, 256);
        let g2_24 = MsmPlan::new(1 << 24, Group::G2, sms);
        assert_eq!((g2_24.window_bits, g2_24.accumulate_seg), (19, 256));
        let g2_26 = MsmPlan::new(1 << 26, Group::G2, sms);
        assert_eq!((g2_26.window_bits, g2_26.accumulate_seg), (20, 64));
    }

    #[test]
    fn chunks_cover_the_points_evenly() {
        for (n, max) in [
            (0usize, 4usize),
            (1, 4),
            (9, 4),
            (16, 4),
            (17, 4),
            (1 << 20, 3 << 17),
        ] {
            let plan = MsmPlan::with_window_bits(n, Group::G1, 8, 8, max);
            assert!(plan.chunk_len <= max);
            assert!(plan.chunk_len * plan.n_chunks >= n);
            assert!(plan.chunk_len * (plan.n_chunks - 1) < n.max(1));
            assert_eq!(plan.first_chunk_len, plan.chunk_len);
            assert_chunks_tile(&plan);
        }
    }

    /// The chunks of `plan` are its points in order, none empty (unless there are no points)
    /// and none longer than `chunk_len`.
    fn assert_chunks_tile(plan: &MsmPlan) {
        let mut next = 0;
        for k in 0..plan.n_chunks {
            let (start, len) = plan.chunk(k);
            assert_eq!(start, next, "chunk {k} of {plan:?}");
            assert!(len >= 1 || plan.n_points == 0);
            assert!(len <= plan.chunk_len);
            next = start + len;
        }
        assert_eq!(next, plan.n_points);
        assert_eq!(plan.chunk(plan.n_chunks + 1).1, 0);
    }

    proptest! {
        /// A shorter first chunk: the chunks still tile the points, the first as asked (when
        /// there is more than one chunk), the others full but the last.
        #[test]
        fn a_short_first_chunk_keeps_the_chunks_tiling(
            n in 0usize..5000, max in 1usize..700, first in 0usize..800
        ) {
            let plan = MsmPlan::with_window_bits(n, Group::G1, 8, 8, max).with_first_chunk(first);
            assert_chunks_tile(&plan);
            if plan.n_chunks > 1 {
                prop_assert_eq!(plan.chunk(0).1, first.clamp(1, plan.chunk_len));
                for k in 1..plan.n_chunks - 1 {
                    prop_assert_eq!(plan.chunk(k).1, plan.chunk_len);
                }
            }
        }
    }

    #[test]
    fn merge_levels_shrink_to_one_thread() {
        for t0 in [1usize, 2, 7, 8, 9, 100, 1 << 20] {
            let levels = MsmPlan::merge_levels(t0);
            let mut prev_threads = t0;
            for level in &levels {
                assert_eq!(level.n_in, 2 * prev_threads);
                assert!(level.n_threads < prev_threads);
                prev_threads = level.n_threads;
            }
            assert_eq!(prev_threads, 1);
        }
    }

    #[test]
    fn reduce_levels_end_small() {
        for c in 1..=22 {
            let plan = MsmPlan::with_window_bits(1000, Group::G1, 8, c, 1 << 20);
            let (levels, final_len, scale) = plan.reduce_levels();
            assert!((1..=REDUCE_FINAL).contains(&final_len));
            let product: usize = levels.iter().map(|l| l.seg).product();
            assert_eq!(product * final_len, plan.buckets_per_window());
            assert_eq!(1usize << scale, product);
        }
        // Later levels take REDUCE_SEG while it still fills the device, REDUCE_SEG_LATER after.
        let segs = |log_n: u32| -> Vec<usize> {
            let plan = MsmPlan::new(1 << log_n, Group::G1, 132);
            plan.reduce_levels().0.iter().map(|l| l.seg).collect()
        };
        assert_eq!(segs(24), vec![16, 4, 4, 4, 4, 4]);
        let wide = MsmPlan::with_window_bits(1 << 26, Group::G1, 132, 22, DEFAULT_RESIDENT_CHUNK);
        let wide_segs: Vec<usize> = wide.reduce_levels().0.iter().map(|l| l.seg).collect();
        assert_eq!(wide_segs, vec![16, 16, 4, 4, 4, 4, 4]);
    }

    /// The reduction's first level is fused into the last chunk's sums with batch-affine sums
    /// where the reduction has device levels, by default in G1 only.
    #[test]
    fn first_reduce_fused_by_default_in_g1() {
        let plan = |group, c| {
            MsmPlan::with_window_bits(1 << 20, group, 132, c, 1 << 20)
                .with_accumulation(Accumulation::BatchAffine)
        };
        assert!(plan(Group::G1, 16).fuses_first_reduce());
        assert!(!plan(Group::G1, 16)
            .with_fused_reduce(false)
            .fuses_first_reduce());
        assert!(!plan(Group::G2, 16).fuses_first_reduce());
        assert!(plan(Group::G2, 16)
            .with_fused_reduce(true)
            .fuses_first_reduce());
        assert!(!plan(Group::G1, 16)
            .with_accumulation(Accumulation::Xyzz)
            .fuses_first_reduce());
        // 2^(c−1) = 16 buckets a window: no device level, the host reduces them.
        assert!(plan(Group::G1, 5).reduce_levels().0.is_empty());
        assert!(!plan(Group::G1, 5).fuses_first_reduce());
        assert!(plan(Group::G1, 6).fuses_first_reduce());
        // Kept through a rebuild with shorter chunks.
        let off = plan(Group::G1, 16)
            .with_fused_reduce(false)
            .with_max_chunk(1 << 18);
        assert!(!off.fused_reduce);
        // A single fused chunk needs no buckets; several chunks, or no fusion, need them all.
        let xyzz = Group::G1.xyzz_bytes();
        let fused = plan(Group::G1, 16);
        assert_eq!((fused.n_chunks, fused.bucket_bytes()), (1, 0));
        let unfused = fused.clone().with_fused_reduce(false);
        assert_eq!(unfused.bucket_bytes(), unfused.total_buckets() * xyzz);
        assert_eq!(
            unfused.device_bytes() - fused.device_bytes(),
            unfused.total_buckets() * xyzz
        );
        let chunked = MsmPlan::with_window_bits(1 << 20, Group::G1, 132, 16, 1 << 18)
            .with_accumulation(Accumulation::BatchAffine);
        assert!(chunked.n_chunks > 1 && chunked.fuses_first_reduce());
        assert_eq!(chunked.bucket_bytes(), chunked.total_buckets() * xyzz);
    }

    #[test]
    fn scan_levels_end_in_one_tile() {
        assert_eq!(MsmPlan::scan_levels(1), vec![1]);
        assert_eq!(MsmPlan::scan_levels(2048), vec![1]);
        assert_eq!(MsmPlan::scan_levels(2049), vec![2, 1]);
        assert_eq!(MsmPlan::scan_levels(1 << 23), vec![4096, 2, 1]);
    }

    /// Groups of windows and lanes within the budget: two lanes of half the budget each when
    /// the windows do not fit one group, one lane when they do or when a single window per lane
    /// would not fit; the lanes' scratch is counted in the plan's memory.
    #[test]
    fn affine_lanes_share_the_budget() {
        let h200 = affine_scratch_for_device(139_800 << 20);
        assert!(h200 > 13 << 30 && h200 < 14 << 30, "{h200}");
        assert_eq!(affine_scratch_for_device(16 << 30), DEFAULT_AFFINE_SCRATCH);
        let g2 = MsmPlan::new(1 << 24, Group::G2, 132);
        assert_eq!((g2.affine_group_windows, g2.affine_lanes_used()), (1, 2));
        let wide = g2.clone().with_affine_scratch(h200);
        assert_eq!(
            (wide.affine_group_windows, wide.affine_lanes_used()),
            (2, 2)
        );
        let scratch = |p: &MsmPlan| p.affine_scratch(p.affine_group_windows).total();
        assert!(2 * scratch(&wide) <= h200);
        assert_eq!(
            wide.device_bytes() - g2.device_bytes(),
            2 * scratch(&wide) - 2 * scratch(&g2)
        );
        let one_lane = wide.clone().with_affine_lanes(1);
        assert_eq!(one_lane.affine_lanes_used(), 1);
        assert!(one_lane.affine_group_windows > wide.affine_group_windows);
        assert_eq!(one_lane.with_affine_lanes(2), wide);
        // All windows in one group: one lane, whatever was asked.
        let all = g2.clone().with_affine_scratch(usize::MAX);
        assert_eq!((all.affine_groups(), all.affine_lanes_used()), (1, 1));
        // G2 2^26 (chunks of 2^25): one window is more than half of 6 GiB, so one lane.
        let big = MsmPlan::new(1 << 26, Group::G2, 132);
        assert!(2 * big.affine_scratch(1).total() > DEFAULT_AFFINE_SCRATCH);
        assert_eq!((big.affine_group_windows, big.affine_lanes_used()), (1, 1));
        // The request survives: with the H200's budget the same plan runs on two lanes.
        let big_wide = big.with_affine_scratch(h200);
        assert_eq!(big_wide.affine_lanes_used(), 2);
        assert!(2 * scratch(&big_wide) <= h200);
        assert_eq!(block_inverse_max(132), 2 * 132 * BLOCK_INVERSE_SPAN);
        assert_eq!(g2.affine_block_inverse_max, block_inverse_max(132));
    }

    /// `GpuMsm::plan`'s chunks: 2^26 points where the plan then stays within a quarter of the
    /// device (G1 and G2 2^26 on the H200), 2^25 on a device of 80 GB.
    #[test]
    fn the_device_memory_sets_the_resident_chunk() {
        let on = |n: usize, group: Group, memory: usize| {
            MsmPlan::for_device(n, group, 132, 60 << 20, LARGEST_SORT_SHARED, memory)
        };
        let h200 = 139_800usize << 20;
        for group in [Group::G1, Group::G2] {
            let big = on(1 << 26, group, h200);
            assert_eq!((big.n_chunks, big.chunk_len), (1, 1 << 26), "{group:?}");
            assert!(big.device_bytes() <= h200 / LARGE_CHUNK_MEMORY_SHARE);
            // The bound holds for the plan with the default batch-affine scratch.
            let bound = device_bytes_needed(1 << 26, group);
            assert!(
                big.with_affine_scratch(DEFAULT_AFFINE_SCRATCH)
                    .device_bytes()
                    <= bound
            );
            // H's 2^27 points: two chunks of 2^26 instead of four of 2^25.
            let h = on(1 << 27, group, h200);
            assert_eq!((h.n_chunks, h.chunk_len), (2, 1 << 26), "{group:?}");
            let small = on(1 << 26, group, 80 << 30);
            assert_eq!((small.n_chunks, small.chunk_len), (2, 1 << 25), "{group:?}");
            assert!(
                small
                    .with_affine_scratch(DEFAULT_AFFINE_SCRATCH)
                    .device_bytes()
                    <= bound
            );
            // Sizes of one chunk either way do not change, nor does the rest of the plan.
            let one = on(1 << 24, group, h200);
            let want = MsmPlan::new(1 << 24, group, 132)
                .with_scatter_region(60 << 20)
                .with_sort_shared(LARGEST_SORT_SHARED)
                .with_affine_scratch(affine_scratch_for_device(h200));
            assert_eq!(format!("{one:?}"), format!("{want:?}"));
        }
    }

    #[test]
    fn memory_is_stated_and_bounded() {
        let g1 = device_bytes_needed(1 << 24, Group::G1);
        let g2 = device_bytes_needed(1 << 24, Group::G2);
        assert!(g1 > 1 << 30 && g1 < 12 << 30, "{g1}");
        assert!(g2 > 1 << 30 && g2 < 12 << 30, "{g2}");
        // G1 2^26 in one chunk of 2^26 (on a large device): 24.4 GiB with the default scratch.
        let g1_26 = device_bytes_needed(1 << 26, Group::G1);
        assert!(g1_26 > 20 << 30 && g1_26 < 26 << 30, "{g1_26}");
        // The batch-affine scratch stays within its budget by summing windows in groups.
        for group in [Group::G1, Group::G2] {
            for log_n in [16, 20, 24, 26] {
                let plan = MsmPlan::new(1 << log_n, group, 132);
                let want = if log_n >= 20 {
                    Accumulation::BatchAffine
                } else {
                    Accumulation::Xyzz
                };
                assert_eq!(plan.accumulation, want);
                // A streamed plan chooses by its chunk length as a resident one by its size.
                assert_eq!(Accumulation::streamed_default(group, 1 << log_n), want);
                let xyzz = plan.clone().with_accumulation(Accumulation::Xyzz);
                let affine = plan.clone().with_accumulation(Accumulation::BatchAffine);
                let lanes = affine.affine_lanes_used() as usize;
                let scratch = lanes * affine.affine_scratch(affine.affine_group_windows).total();
                assert!(scratch <= DEFAULT_AFFINE_SCRATCH || affine.affine_group_windows == 1);
                assert!(affine.affine_groups() * affine.affine_group_windows >= affine.n_windows);
                assert!(lanes >= 1 && lanes <= affine.affine_groups() as usize);
                // Each strategy states its own scratch.
                assert!(affine.device_bytes() != xyzz.device_bytes());
            }
        }
        let plan = MsmPlan::new(1 << 20, Group::G1, 132);
        assert!(plan.device_bytes() <= device_bytes_needed(1 << 20, Group::G1));
        assert!(plan.streamed_device_bytes() > plan.device_bytes());
    }
}
