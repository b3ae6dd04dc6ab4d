//! How a chunk's sorted entries are summed into the buckets ([`Accumulation`]), and the XYZZ
//! sums' segments and merge levels.
//!
//! After the counting sort (`sort`) a chunk's (bucket, point) entries lie in bucket order. They
//! are summed into the buckets one of two ways, chosen by the plan:
//!
//! - [`Accumulation::Xyzz`]: mixed XYZZ additions over equal segments of the sorted entries
//!   (`msm_accumulate`), one thread per segment. Each thread sums its segment's complete runs
//!   straight into their buckets and leaves two partial sums, of the runs that cross its
//!   segment's edges, which the merge levels (`msm_merge`, [`MERGE_SEG`] partial sums a thread)
//!   add up the same way until one thread holds what is left. So a bucket that many points fall
//!   into (a repeated scalar) costs no more than any other, and no two threads ever add into the
//!   same bucket. The XYZZ sums add into cleared buckets.
//! - [`Accumulation::BatchAffine`]: rounds of affine additions that halve every bucket's list,
//!   each round's inversions shared by one batch inversion (the `affine` submodule, and
//!   `gpu/affine.rs` for the rounds themselves).
//!
//! [`Accumulation::resident_default`] and, for streamed plans by their chunk length,
//! [`Accumulation::streamed_default`] take batch-affine sums from 2^20 points in both groups and
//! XYZZ below, as measured. The segment length of the first XYZZ level
//! ([`accumulate_seg_for`]) grows with the entries while the device keeps about ten waves of
//! threads, up to 256 sorted entries a thread (G2 at most 64 with windows of 20 bits or more,
//! [`Group::longest_accumulate_seg`]).

use super::{Group, MsmPlan};

/// Entries per thread in the merge levels of the bucket sums.
pub(crate) const MERGE_SEG: usize = 16;

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
    /// up to [`DEFAULT_AFFINE_SCRATCH`](super::DEFAULT_AFFINE_SCRATCH) of scratch. The default for resident MSMs of 2^20
    /// points and more in both groups, where it measured faster than `Xyzz` on the H200 at
    /// every size to 2^26, and for streamed plans of chunks that large
    /// ([`Accumulation::streamed_default`]); see docs/benchmarks.md.
    BatchAffine,
}

impl Accumulation {
    /// The bucket sums of [`MsmPlan::new`] (bases and scalars on the device): batch-affine from
    /// 2^20 points, XYZZ below, as measured on the H200 from 2^20 to 2^26 points (smaller MSMs
    /// were not measured; see docs/benchmarks.md).
    pub fn resident_default(_group: Group, n_points: usize) -> Self {
        if n_points >= 1 << 20 {
            Accumulation::BatchAffine
        } else {
            Accumulation::Xyzz
        }
    }

    /// The bucket sums of a streamed plan (`GpuMsm::streamed_plan`, inputs copied from host
    /// memory in chunks of `chunk_len` points), as resident MSMs of that many points choose
    /// them: batch-affine sums measured faster than XYZZ on the H200 for pinned and pageable
    /// inputs alike, G1 and G2 (see docs/benchmarks.md).
    pub fn streamed_default(group: Group, chunk_len: usize) -> Self {
        Self::resident_default(group, chunk_len)
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

/// Sorted entries per thread of the first level of the XYZZ bucket sums, for a chunk of
/// `entries` sort entries on a device with `sm_count` multiprocessors.
///
/// Each thread sums its segment's complete runs into their buckets and leaves two partial sums
/// for the merge levels, so longer segments mean fewer partial sums, at the price of fewer, longer
/// threads: a segment of 256 takes milliseconds, so the last wave of threads can leave
/// the device partly idle that long. Segments of 128 and 256 are taken only while they still give
/// about ten waves (4096 threads per multiprocessor), shorter ones while they give 1024 threads
/// per multiprocessor; none longer than `longest` ([`Group::longest_accumulate_seg`]). Longer
/// segments measured faster on the H200 at every size where the device stays busy, shorter ones
/// than 64 slower (`bench_msm --accumulate-seg`; see docs/benchmarks.md).
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
    /// The same plan summing the buckets by `accumulation`.
    pub fn with_accumulation(mut self, accumulation: Accumulation) -> Self {
        self.accumulation = accumulation;
        self
    }

    /// The same plan with `entries` sorted entries per thread (at least one) in the first level
    /// of the XYZZ bucket sums, in place of the plan's choice for the device.
    pub fn with_accumulate_seg(mut self, entries: usize) -> Self {
        self.accumulate_seg = entries.max(1);
        self
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

    /// Device bytes of the partial-sum arrays `(first, second)` of the bucket sums.
    pub(super) fn partial_slots(&self) -> (usize, usize) {
        let t0 = self.accumulate_threads(self.chunk_len);
        let t1 = Self::merge_levels(t0).first().map_or(1, |l| l.n_threads);
        (2 * t0, 2 * t1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
