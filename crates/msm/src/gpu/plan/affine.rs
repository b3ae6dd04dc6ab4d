//! The batch-affine bucket sums' layout: groups of windows, lanes, and the batch inversion's
//! tree.
//!
//! With [`Accumulation::BatchAffine`](super::Accumulation::BatchAffine) every bucket's list of
//! points is halved per round by affine additions whose inversions share one batch inversion
//! per round (Montgomery's trick), until no bucket holds more than a few values, which are then
//! added into the XYZZ buckets (`gpu/affine.rs` runs the rounds, `kernels/msm/affine.cuh` holds
//! them). A round's batch inversion inverts up to [`MsmPlan::affine_block_inverse_max`] values
//! blockwise, blocks of [`BLOCK_INVERSE_SPAN`] values each with its own inversion in one launch
//! (by default one wave of blocks on the device, [`block_inverse_max`]); more values go up a
//! tree of products in groups of [`TREE_PER`] to its first level of at most that many, which
//! inverts blockwise in the same way, then back down. With the bound zero the tree goes up to
//! what one block inverts (`Group::tree_top`).
//!
//! The rounds' scratch (points of the odd and even levels, running products, the tree) grows
//! with the windows summed together, so the windows are summed in groups whose scratch fits the
//! plan's budget, [`MsmPlan::affine_budget`]: [`DEFAULT_AFFINE_SCRATCH`] for [`MsmPlan::new`],
//! a tenth of the device's memory (at least that) for `GpuMsm::plan`
//! ([`affine_scratch_for_device`]: sized to the device's total memory, not to what is free on
//! it). The groups run on two lanes when the windows do not fit one group and one window per
//! lane fits half the budget ([`MsmPlan::affine_lanes`], the request, and
//! [`MsmPlan::affine_lanes_used`]): group `g` on lane `g mod 2`, each lane with its own
//! workspace and half the budget, so that one lane's latency-bound launches (the inversion's
//! small levels and top) overlap the other's large kernels.
//!
//! **Invariants of the lanes** (kept by `gpu/affine.rs`): every group's statistics are read in
//! one download before any round; the side lane waits for an event recorded after the chunk's
//! sort, and the main lane waits for the side lane before the sums return, on every path (error
//! included; where the event cannot be made, the host waits for the side lane,
//! `Exec::wait_for_lane`), so the next chunk's sort, the reduction and the buffers' reuse see
//! every group's buckets; groups write disjoint bucket ranges (fused with the reduction,
//! disjoint segments of its first level) and only read the chunk's sorted entries and bases
//! (and, fused, their own buckets). The batch-affine sums' first chunk writes every bucket
//! without reading it (infinity where it has no entry), so those buckets are never cleared;
//! later chunks add into them (a fused last chunk reads them into the reduction's first level;
//! a fused single chunk has none).

use super::MsmPlan;

/// Device memory the batch-affine rounds may use for their scratch (points, running products,
/// inversion tree) by default, all lanes together; windows are summed in groups that fit (see
/// [`MsmPlan::affine_group_windows`]).
pub const DEFAULT_AFFINE_SCRATCH: usize = 6 << 30;

/// The batch-affine scratch budget of a device with `total_memory` bytes (what `GpuMsm::plan`
/// gives its plans): a tenth of the device, at least [`DEFAULT_AFFINE_SCRATCH`]. Fewer, larger
/// groups of windows measured faster on the H200 (139.8 GiB: 14 GiB of scratch) in G1 and G2
/// alike; see docs/benchmarks.md.
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
/// and the tree's launches cost less (measured on the H200 against the tree everywhere and
/// blockwise everywhere; see docs/benchmarks.md).
pub fn block_inverse_max(sm_count: u32) -> usize {
    2 * sm_count.max(1) as usize * BLOCK_INVERSE_SPAN
}

/// Lanes (streams) on which the batch-affine groups of windows run at once, by default, when
/// the windows do not fit one group (see [`MsmPlan::affine_lanes`]).
pub const DEFAULT_AFFINE_LANES: u32 = 2;

/// The most lanes a plan may ask for: the executor has a main compute lane and one side lane.
pub const MAX_AFFINE_LANES: u32 = 2;

/// Output slots (pairs) per thread of a batch-affine round (kernels/msm/affine.cuh; at most its
/// MSM_AFFINE_PER).
pub(crate) const AFFINE_PER: usize = 8;

/// Elements per thread of the batch inversion tree's launched levels. Short groups: past its
/// first levels the tree is bound by the latency of its small launches, not by its
/// multiplications. Eight rather than four makes a third fewer levels, and the tree's smaller
/// scratch lets more windows into a group within the plan's budget; sixteen measured no faster
/// (H200; see docs/benchmarks.md).
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

/// Device memory of the batch-affine rounds of one group of windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AffineScratch {
    /// Buckets of the group.
    pub(crate) keys: usize,
    /// Affine points (and their keys) of the odd and of the even levels.
    pub(crate) points: [usize; 2],
    /// Running products, one per output slot (none when the output points hold them:
    /// [`Group::prefix_in_output`](super::Group::prefix_in_output)).
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

impl MsmPlan {
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
    pub(super) fn fit_affine(&mut self, budget: usize, lanes: u32) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::Group;

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
}
