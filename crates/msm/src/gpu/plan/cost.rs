//! What a plan costs: the device memory it allocates, the pinned host memory that stages
//! pageable inputs, and the arithmetic floor of its bucket additions.
//!
//! Every buffer an MSM allocates is counted here, so that a caller (the pool, a scheduler of
//! several workers on one card) can reserve it before anything runs: [`MsmPlan::device_bytes`]
//! for one plan, [`device_bytes_needed`] as a bound over the plans of any device with the
//! default scratch, sorting in one pass or in two.

use super::{
    Accumulation, Group, MsmPlan, DEFAULT_RESIDENT_CHUNK, DEFAULT_SORT_SHARED,
    LARGEST_RESIDENT_CHUNK, LARGEST_SORT_SHARED,
};

/// An upper bound of the device bytes an MSM of `n` points in `group` allocates with bases and
/// scalars already on the device by [`MsmPlan::new`]'s plan (batch-affine scratch within
/// [`DEFAULT_AFFINE_SCRATCH`](super::DEFAULT_AFFINE_SCRATCH)) or by that plan in chunks of [`LARGEST_RESIDENT_CHUNK`], on any
/// device (the plan of a device with many multiprocessors has the shortest segments, hence the
/// most partial sums; one with the most shared memory sorts in two passes, with 8 more bytes per
/// sorted entry). `GpuMsm::plan` ([`MsmPlan::for_device`]) sizes the scratch and the chunks to
/// the device, taking the larger chunks only on a device with
/// [`LARGE_CHUNK_MEMORY_SHARE`](super::LARGE_CHUNK_MEMORY_SHARE) times their bytes; for the exact figure on one device, see
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

impl MsmPlan {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::DEFAULT_AFFINE_SCRATCH;

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
