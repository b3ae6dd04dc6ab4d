//! What differs between G1 and G2 for the plan: the sizes of points on the device, the widest
//! window, the per-bucket weights of the window choice's cost model, and the per-group choices
//! of the bucket sums (measured on the H200; see docs/benchmarks.md).

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
    /// many windows fit a group, which measured faster on the H200. In G1 the output slot's
    /// partial-sector stores cost more than the groups saved (see docs/benchmarks.md).
    pub const fn prefix_in_output(self) -> bool {
        matches!(self, Group::G2)
    }

    /// The batch inversion tree's top (kernels/msm/affine.cuh, msm_inv_top): the threads of its
    /// one block and the most values it takes; the levels above it are launched one by one. In
    /// G2 a block of 128 over up to 1024 values saves the launches of the smallest levels, which
    /// cost more there. In G1, whose small launches are cheaper, the block measured slower in the
    /// inversion stage than one thread over up to 8 (H200; see docs/benchmarks.md).
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
    /// on the H200 with balanced windows (`bench_msm --window-sweep`; docs/benchmarks.md,
    /// "Window choice"): with these, the planner's pick is the measured best or within 3% of it
    /// at every size swept, G1 2^20 to 2^26 and G2 2^20 to 2^25, which a test holds.
    /// The model counts the buckets the windows use; the reduction also passes over a narrow
    /// window's empty upper half, at the cost of adding infinities, which the fit absorbs. In G1 a
    /// bucket weighs more than the batch-affine additions' cost alone suggests: its share of
    /// the reduction, of the last round's mixed additions and of the sort's counters.
    pub const fn bucket_weights(self) -> (f64, f64) {
        match self {
            Group::G1 => (7.0, 2.0),
            Group::G2 => (4.0, 4.0),
        }
    }

    /// The longest segment of sorted entries one thread of the first level of the bucket sums
    /// takes with windows of `window_bits` (see `accumulate_seg_for`). As measured on the H200
    /// (see docs/benchmarks.md): G1 gains from segments of 256 at every size where the device
    /// stays busy; G2 gains with windows of 17 bits but loses with windows of 20 and more, where
    /// its `accumulate` grows more than its merge shrinks.
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
