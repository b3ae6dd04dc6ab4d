//! The counting sort by bucket: a chunk's (bucket, point) entries, one per point and window, put
//! in bucket order so that the bucket sums read each bucket's points as one run.
//!
//! Per chunk the kernels cut each scalar into signed digits (the window's bucket and a sign),
//! count every bucket's digits, turn the counts into offsets by a prefix sum ([`SCAN_TILE`]
//! entries a tile, [`MsmPlan::scan_levels`]), and place each entry at its bucket's next offset.
//! How they place them depends on whether a window's sorted entries fit the device's L2:
//!
//! - **One pass** (they fit, or the plan says so, [`MsmPlan::with_two_pass_sort`]): `msm_digits`
//!   counts every bucket's digits with global atomics and one `msm_scatter` launch places them.
//!   Where a window's entries exceed [`MsmPlan::scatter_region`], each window's buckets are cut
//!   into [`MsmPlan::scatter_parts`] parts, one launch each, so that a part's randomly placed
//!   8-byte entries fill whole sectors in L2 before they go to memory. A window of `c − 1` bits
//!   puts its entries in the lower half of its buckets, so the parts are sized for those denser
//!   windows ([`MsmPlan::narrow_density`]).
//! - **Two passes through shared memory** ([`MsmPlan::sort_bins`], where the scatter would be cut
//!   into parts): `msm_digits_bins` counts the digits per bin, a range of consecutive buckets, in
//!   shared memory ([`MsmPlan::digits_bins`]); `msm_sort_bins` writes each tile's entries grouped
//!   by bin; `msm_sort_bin_buckets` counts each bin's buckets, writes their offsets and sorts the
//!   bin in shared memory, writing it out in order. A window of `c` bits has bins twice as wide
//!   as one of `c − 1`, whose digits use only the lower half of its buckets, so every bin holds
//!   about the same number of entries ([`SortBins`], `msm_bin_layout_t` in the kernels). Their
//!   dynamic shared memory, [`MsmPlan::sort_shared`], is all a block may opt in to on the device
//!   (`GpuMsm::plan`), less their static shared memory ([`STAGE_STATIC_SHARED`]). A bin larger
//!   than the second pass's stage, where skewed scalars crowd a few buckets, is shared by every
//!   block: `msm_sort_big` counts its buckets before the second pass and puts each entry at its
//!   bucket's next place after it.
//!
//! **Invariant of the sort:** the bucket sums read `counts` as every bucket's first sorted entry
//! (one more than the buckets, the last the number of entries). In two passes nothing clears it
//! beforehand, so the second pass writes every one (a bin's buckets from their counts, a narrow
//! window's unused upper half as that window's end), and within a bin it reads the counters only
//! after every thread has written the offsets from them.

use super::MsmPlan;

/// Bytes of sorted entries one scatter launch writes when the plan does not know the device's
/// L2 (`GpuMsm::plan` uses the L2's size, which measured best on the H200 among regions from 8
/// to 120 MiB; see docs/benchmarks.md): each window's buckets are cut into parts of about this
/// much output, so that the part's randomly placed 8-byte entries fill whole sectors in L2
/// before they go to memory (see `msm_scatter` in kernels/msm/msm.cu).
pub const DEFAULT_SCATTER_REGION: usize = 40 << 20;

/// Entries per thread of the scatter (kernels/msm/msm.cu, MSM_SCATTER_PER; 8 measured slower).
pub(crate) const SCATTER_PER: usize = 1;

/// The two-pass sort (kernels/msm/msm.cu, msm_sort_bins and msm_sort_bin_buckets): keys per
/// thread of the first pass (MSM_BIN_PER), the most threads of its blocks (MSM_BIN_MAX_THREADS,
/// which also sizes its static shared memory, 4 bytes each) and the most bins per window.
/// 22 keys per thread rather than 16 make each bin's run in a tile 1.375 times as long, which
/// the first pass's writes need (measured faster on the H200; see docs/benchmarks.md); a tile
/// of 22 K keys and 4096 bins' counters fill 212 of the H200's 227 KiB.
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
/// [`device_bytes_needed`](super::device_bytes_needed), which bounds plans that sort in two passes too.
pub const LARGEST_SORT_SHARED: usize = 227 << 10;

/// Shared memory per block the two-pass sort may use when the plan does not know the device's
/// (`GpuMsm::plan` uses all a block may opt in to: 227 KiB on the H200): the 48 KiB every
/// device gives a block without opting in.
pub const DEFAULT_SORT_SHARED: usize = 48 << 10;

/// Entries per tile of the prefix sum (kernels/msm/msm.cu, MSM_SCAN_TILE).
pub(crate) const SCAN_TILE: usize = 2048;

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
    /// shared memory (at least one, at most `BIN_SORT_BLOCKS_PER_SM`).
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

impl MsmPlan {
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

    /// The same plan sorting in two passes where it would cut the scatter into parts (`true`,
    /// the default), or always with the single-pass scatter (`false`).
    pub fn with_two_pass_sort(mut self, on: bool) -> Self {
        self.two_pass_sort = on;
        self
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
    /// msm_sort_bin_buckets): the fewest bins per window (at most `MAX_BINS`) whose expected
    /// entries (a chunk's points over the bins: a window of `c − 1` bits has its bins in the
    /// half of its buckets it uses, one of `c` bits bins twice as wide, [`SortBins`]) fill at
    /// most three quarters of the second pass's stage, and the most threads per block of the
    /// first pass that fit
    /// [`sort_shared`](Self::sort_shared) beside the bins' counters. Taken where the single-pass
    /// scatter would be cut into parts (a window's sorted entries exceed
    /// [`scatter_region`](Self::scatter_region)) and such bins exist, unless
    /// [`two_pass_sort`](Self::two_pass_sort) is off; `None` otherwise. Measured faster than
    /// the scatter in parts on the H200 (see docs/benchmarks.md).
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
    /// blocks of `DIGITS_BINS_THREADS` for one wave on the device (as many per multiprocessor
    /// as fit, at most `DIGITS_BINS_BLOCKS_PER_SM`), each over an equal share of the points, so
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
    pub(super) fn sort_bins_bytes(&self) -> usize {
        self.sort_bins().map_or(0, |s| {
            8 * self.entries_per_chunk() + 4 * (2 * s.bins * self.n_windows as usize + 1)
        })
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::{Group, DEFAULT_RESIDENT_CHUNK};

    /// The two-pass sort's bins tile each window within the kernels' limits, are taken exactly
    /// where the single-pass scatter would be cut into parts (unless switched off) and such bins
    /// exist, and the kernels' sizes are the host's constants (kernels/msm/msm.cu).
    #[test]
    fn sort_bins_tile_each_window() {
        let source = include_str!("../../../../../kernels/msm/msm.cu");
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
        // as wide the chunk fell back to the scatter in parts).
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
    fn scan_levels_end_in_one_tile() {
        assert_eq!(MsmPlan::scan_levels(1), vec![1]);
        assert_eq!(MsmPlan::scan_levels(2048), vec![1]);
        assert_eq!(MsmPlan::scan_levels(2049), vec![2, 1]);
        assert_eq!(MsmPlan::scan_levels(1 << 23), vec![4096, 2, 1]);
    }
}
