//! How the points are cut into chunks, each sorted and summed into the buckets on its own.
//!
//! Resident MSMs (bases and scalars in device memory) take chunks of
//! [`DEFAULT_RESIDENT_CHUNK`] points, or of [`LARGEST_RESIDENT_CHUNK`] where that makes fewer
//! chunks and the plan's device bytes stay within 1/[`LARGE_CHUNK_MEMORY_SHARE`] of the device's
//! memory ([`MsmPlan::for_device`], which `GpuMsm::plan` calls): every chunk after the first
//! adds a merge of partial sums per bucket, so chunks are as large as memory comfortably allows.
//!
//! Streamed MSMs (bases or scalars in host memory) take a quarter of the points per chunk
//! ([`streamed_chunk_len`]). Their inputs come from pinned memory (each chunk copied straight
//! into a ring of two device slots) or from pageable memory (through two pinned staging buffers
//! per input that the host fills while the device works on the chunks before;
//! [`MsmPlan::host_staging_bytes`]). Chunk `k + 1`'s copies are queued before chunk `k`'s
//! bucket sums (batch-affine sums wait on the host for the chunk's window-group statistics, one
//! download per chunk, and copies queued after them would wait too). **Invariant:** a slot is
//! refilled only after the chunk that last read it has been summed (the copy lane waits for that
//! chunk's event). The first chunk's scalars are copied before its bases, and its counting sort
//! waits only for the scalars, so the sort overlaps the copy of the bases. A plan may make its
//! first chunk shorter than the others ([`MsmPlan::with_first_chunk`]; [`MsmPlan::chunk`] gives
//! every chunk's range); its copy goes into the start of a full chunk's slot. A call that fails
//! while streaming waits for the copies it queued before its buffers go back to the cache.

use super::MsmPlan;

/// Points per chunk when bases and scalars are on the device. Bounds the sort's scratch memory
/// (12 bytes per point and window) and the partial sums; every chunk after the first adds one
/// full addition per bucket, so chunks are as large as memory comfortably allows.
pub const DEFAULT_RESIDENT_CHUNK: usize = 1 << 25;

/// The largest chunk of a resident plan, on a device with the memory for it
/// ([`MsmPlan::for_device`]): one chunk fewer saves a merge of partial sums per bucket and the
/// rounds' tails (G1 2^26 in one chunk measured faster on the H200 than in two chunks of 2^25;
/// see docs/benchmarks.md).
pub const LARGEST_RESIDENT_CHUNK: usize = 1 << 26;

/// The part of a device's memory one resident MSM's plan may take with chunks of
/// [`LARGEST_RESIDENT_CHUNK`] instead of [`DEFAULT_RESIDENT_CHUNK`]: a quarter, so that several
/// workers' MSMs (and their bases) share a card. On the H200 (139.8 GiB) G1 2^26 in one chunk
/// qualifies.
pub const LARGE_CHUNK_MEMORY_SHARE: usize = 4;

/// The shortest chunk when bases or scalars stream from host memory (see
/// [`streamed_chunk_len`]).
pub const DEFAULT_STREAMED_CHUNK: usize = 1 << 22;

/// Points per chunk when bases or scalars of an MSM of `n_points` stream from host memory: a
/// quarter of the points, at least [`DEFAULT_STREAMED_CHUNK`] and at most
/// [`DEFAULT_RESIDENT_CHUNK`]. The copy of the first chunk cannot overlap anything, so chunks
/// should be short; every chunk after the first adds work per bucket, so they should be few.
/// A quarter measured best on the H200 with bases and scalars in pinned memory at G1 2^24 and
/// 2^26 (docs/benchmarks.md, "Streamed chunks").
pub fn streamed_chunk_len(n_points: usize) -> usize {
    n_points
        .div_ceil(4)
        .clamp(DEFAULT_STREAMED_CHUNK, DEFAULT_RESIDENT_CHUNK)
}

impl MsmPlan {
    /// The same plan with a first chunk of `first` points (clamped to between one and
    /// `chunk_len`), the rest in chunks of `chunk_len`; a plan of no more than `first` points is
    /// unchanged.
    /// When the inputs stream from host memory, the first chunk's copy is the one no work
    /// overlaps, so a short first chunk shortens that wait, for one more chunk's work per bucket;
    /// `GpuMsm::streamed_plan` does not use it: on the H200 it gained little at G1 2^24 and lost
    /// at 2^26, where the short chunk's few points per bucket make runs too short for the first
    /// level of the bucket sums (see docs/benchmarks.md). The window stays the one chosen for the
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

    /// Sort entries of the largest chunk (one per point and window).
    pub fn entries_per_chunk(&self) -> usize {
        self.chunk_len * self.n_windows as usize
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::{
        affine_scratch_for_device, device_bytes_needed, DeviceInfo, Group, DEFAULT_AFFINE_SCRATCH,
        LARGEST_SORT_SHARED,
    };
    use proptest::prelude::*;

    #[test]
    fn streamed_chunks_are_a_quarter_within_bounds() {
        assert_eq!(streamed_chunk_len(1000), DEFAULT_STREAMED_CHUNK);
        assert_eq!(streamed_chunk_len(1 << 24), 1 << 22);
        assert_eq!(streamed_chunk_len(1 << 26), 1 << 24);
        assert_eq!(streamed_chunk_len(1 << 28), DEFAULT_RESIDENT_CHUNK);
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

    /// `GpuMsm::plan`'s chunks: 2^26 points where the plan then stays within a quarter of the
    /// device (G1 and G2 2^26 on the H200), 2^25 on a device of 80 GB.
    #[test]
    fn the_device_memory_sets_the_resident_chunk() {
        let on = |n: usize, group: Group, memory: usize| {
            let device = DeviceInfo {
                ordinal: 0,
                name: "test".into(),
                total_memory: memory,
                sm_count: 132,
                compute_capability: (9, 0),
                clock_khz: 0,
                l2_bytes: 60 << 20,
                max_shared_per_block: LARGEST_SORT_SHARED,
            };
            MsmPlan::for_device(n, group, &device)
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
}
