//! The bucket reduction: after the last chunk, each window's buckets `B_1 … B_K` become
//! `Σ k·B_k`.
//!
//! The reduction runs level by level on the device: each thread of a level takes a segment of
//! [`REDUCE_SEG`] buckets (or sums of the level below) and leaves its segment's running sum and
//! the sum of its running sums, so that the level above sees a window [`REDUCE_SEG`] times
//! shorter whose values carry a known weight ([`ReduceLevel::scale_log2`]). A later level that
//! would not fill the device takes segments of [`REDUCE_SEG_LATER`], since such a level is one
//! chain of dependent additions per thread and its time that chain's latency. Once a window is
//! down to [`REDUCE_FINAL`] sums the host adds them up and combines the windows, doubling by each
//! window's own width.
//!
//! With batch-affine sums the last chunk may run the reduction's first level itself
//! ([`MsmPlan::fuses_first_reduce`], by default in G1): `msm_affine_reduce` adds each bucket's
//! last values, with mixed additions, straight into the first level's running sums, which start
//! from the bucket of the earlier chunks unless the chunk is the first, and writes that level's
//! output for the group's windows on the group's lane; the arrays are allocated before the
//! chunk's sums and handed to the rest of the reduction, which starts its levels after them. A
//! single-chunk MSM then never writes or reads its buckets, nor allocates them
//! ([`MsmPlan::bucket_bytes`]).

use super::{Accumulation, MsmPlan, POINT_BLOCK};

/// Buckets (or sums) per thread in each level of the bucket reduction.
pub(crate) const REDUCE_SEG: usize = 16;

/// Sums per thread in a later level of the bucket reduction that would not fill the device with
/// REDUCE_SEG: such a level runs few threads, each a chain of 3·seg dependent full additions, so
/// its time is that chain's latency, and shorter segments (more levels) finish sooner. Measured
/// faster on the H200 for such levels, and slower where a level fills the device, so only those
/// take it (see docs/benchmarks.md).
pub(crate) const REDUCE_SEG_LATER: usize = 4;

/// A window's reduction ends on the host once it is down to this many sums.
pub(crate) const REDUCE_FINAL: usize = 16;

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

impl MsmPlan {
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
    /// [`fused_reduce`](Self::fused_reduce) is on: by default in G1 only, where it measured
    /// faster on the H200; in G2 it measured slower, its fused kernel keeping the called Fp2
    /// formulas' values on its stack (see docs/benchmarks.md).
    pub fn fuses_first_reduce(&self) -> bool {
        self.fused_reduce
            && self.accumulation == Accumulation::BatchAffine
            && self.buckets_per_window() > REDUCE_FINAL
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::{Group, DEFAULT_RESIDENT_CHUNK};

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
}
