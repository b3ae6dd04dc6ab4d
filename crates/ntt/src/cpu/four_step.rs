//! The four-step transform for large domains (see the parent module's docs for the algebra).
//!
//! Notation: `n = R * C`, `R = 2^log_r`, `C = 2^log_c`; `j = j1 * C + j2` indexes the input,
//! `k = k1 + R * k2` the output. Pass A transforms over `j1` for each `j2`, pass B over `j2` for
//! each `k1`. The scratch buffer between the passes is one vector of tiles, each holding
//! `lanes_a` adjacent `j2` as contiguous lanes of `R` scalars (one lane per `j2`); within a lane,
//! the value for `k1` sits at position `p = k1` (pass A ran decimation in time) or
//! `p = bitrev(k1)` (decimation in frequency). Pass B works per position `p`.

use ff::Field;
use rayon::prelude::*;

use super::kernel::{self, powers, Twiddles};
use super::Spec;
use crate::{bitrev, Domain, Order, Scalar};

/// A tile of a pass holds at most this many scalars (256 KiB), so that it stays in a core's L2
/// (half of a 1 MiB L2, leaving room for a second hyperthread).
const TILE_SCALARS: usize = 1 << 13;
/// At most this many sub-transforms share a tile.
const MAX_TILE_WIDTH: usize = 16;
/// Parallel work items per thread, for load balance.
const ITEMS_PER_THREAD: usize = 4;

/// A planned four-step transform: every table the passes read, computed once per call.
#[derive(Debug)]
pub(super) struct FourStep {
    log_r: u32,
    log_c: u32,
    input: Order,
    output: Order,
    /// Pass A runs decimation in frequency (bit-reversed output, `p = bitrev(k1)`) when the
    /// output is bit-reversed, decimation in time (`p = k1`) when it is natural.
    a_dif: bool,
    twiddles_a: Twiddles,
    twiddles_b: Twiddles,
    /// `(alpha^C)^j1`, indexed by the position `j1` takes in pass A's kernel input.
    pre_a: Option<Vec<Scalar>>,
    /// The inter-step twiddle of lane `j2` is `lane_start[j2] * lane_ratio[j2]^k1`.
    lane_start: Vec<Scalar>,
    lane_ratio: Vec<Scalar>,
    /// `(beta^R)^k2`, indexed by the position of `k2` in pass B's (bit-reversed) kernel output.
    post_b: Option<Vec<Scalar>>,
    /// Adjacent `j2` per pass A tile.
    lanes_a: usize,
    /// Adjacent positions `p` per pass B tile.
    subs_b: usize,
    /// Column groups of pass B when the output is natural (one parallel work item each).
    groups_b: usize,
}

impl FourStep {
    pub(super) fn new(domain: &Domain, spec: Spec, input: Order, output: Order) -> Self {
        let log_n = domain.log_n();
        let log_c = log_n / 2;
        let log_r = log_n - log_c;
        let (r, c) = (1usize << log_r, 1usize << log_c);
        let a_dif = output == Order::BitReversed;

        let root_a = spec.root.pow_vartime([c as u64]);
        let root_b = spec.root.pow_vartime([r as u64]);

        let pre_a = spec.alpha.map(|alpha| {
            let natural = powers(alpha.pow_vartime([c as u64]), r);
            (0..r)
                .map(|e| natural[if a_dif { e } else { bitrev(e, log_r) }])
                .collect()
        });
        let mut lane_start = match spec.alpha {
            Some(alpha) => powers(alpha, c),
            None => vec![Scalar::ONE; c],
        };
        if let Some(scale) = spec.scale {
            lane_start.par_iter_mut().for_each(|s| *s *= scale);
        }
        let mut lane_ratio = powers(spec.root, c);
        if let Some(beta) = spec.beta {
            lane_ratio.par_iter_mut().for_each(|q| *q *= beta);
        }
        let post_b = spec.beta.map(|beta| {
            let natural = powers(beta.pow_vartime([r as u64]), c);
            (0..c).map(|e| natural[bitrev(e, log_c)]).collect()
        });

        let items = ITEMS_PER_THREAD * rayon::current_num_threads();
        let lanes_a = tile_width(r, c, items);
        let subs_b = tile_width(c, r, items);
        let groups_b = (r / subs_b).min(items.next_power_of_two());

        Self {
            log_r,
            log_c,
            input,
            output,
            a_dif,
            twiddles_a: Twiddles::new(r, root_a),
            twiddles_b: Twiddles::new(c, root_b),
            pre_a,
            lane_start,
            lane_ratio,
            post_b,
            lanes_a,
            subs_b,
            groups_b,
        }
    }

    /// Transforms `values` (of length `n`), using `scratch` between the passes.
    pub(super) fn run(&self, values: &mut [Scalar], scratch: &mut Vec<Scalar>) {
        self.pass_a(values, scratch);
        match self.output {
            Order::BitReversed => self.pass_b_rows(scratch, values),
            Order::Natural => self.pass_b_columns(scratch, values),
        }
    }

    fn r(&self) -> usize {
        1 << self.log_r
    }

    fn c(&self) -> usize {
        1 << self.log_c
    }

    /// Pass A: per tile of `lanes_a` adjacent `j2`, gather, transform, multiply by the
    /// inter-step twiddles, into a scratch tile.
    fn pass_a(&self, values: &[Scalar], scratch: &mut Vec<Scalar>) {
        let (r, c) = (self.r(), self.c());
        let lanes = self.lanes_a;
        // One contiguous allocation (lane `j2` at `j2 * R`), so that it is a single large block
        // the allocator returns to the system when freed, not `C / lanes` heap tiles.
        scratch.resize(c * r, Scalar::ZERO);
        scratch
            .par_chunks_mut(lanes * r)
            .enumerate()
            .for_each(|(tile, buf)| {
                let j2_first = tile * lanes;
                self.gather_a(values, j2_first, buf);
                for (lane_idx, lane) in buf.chunks_exact_mut(r).enumerate() {
                    if self.a_dif {
                        kernel::dif(lane, &self.twiddles_a);
                    } else {
                        kernel::dit(lane, &self.twiddles_a);
                    }
                    self.inter_step_twiddle(lane, j2_first + lane_idx);
                }
            });
    }

    /// Fills the lanes of one tile with the inputs `x[j1 * C + j2]`, in the order pass A's kernel
    /// reads them (`j1` at position `j1` for decimation in frequency, `bitrev(j1)` in time),
    /// times `(alpha^C)^j1`.
    fn gather_a(&self, values: &[Scalar], j2_first: usize, buf: &mut [Scalar]) {
        let (r, c) = (self.r(), self.c());
        let lanes = buf.len() / r;
        match self.input {
            Order::Natural => {
                // Row j1 of the R x C matrix holds x[j1 * C + j2] for all j2: read the tile's
                // `lanes` adjacent scalars of each row.
                for (j1, row) in values.chunks_exact(c).enumerate() {
                    let src = &row[j2_first..j2_first + lanes];
                    let e = if self.a_dif {
                        j1
                    } else {
                        bitrev(j1, self.log_r)
                    };
                    match &self.pre_a {
                        Some(pre) => {
                            for (lane_idx, x) in src.iter().enumerate() {
                                buf[lane_idx * r + e] = *x * pre[e];
                            }
                        }
                        None => {
                            for (lane_idx, x) in src.iter().enumerate() {
                                buf[lane_idx * r + e] = *x;
                            }
                        }
                    }
                }
            }
            Order::BitReversed => {
                // x[j1 * C + j2] is stored at bitrev(j2) * R + bitrev(j1): lane j2 is row
                // bitrev(j2) of the C x R matrix, with j1 at column bitrev(j1).
                for (lane_idx, lane) in buf.chunks_exact_mut(r).enumerate() {
                    let row_idx = bitrev(j2_first + lane_idx, self.log_c);
                    let row = &values[row_idx * r..(row_idx + 1) * r];
                    if self.a_dif {
                        for (e, dst) in lane.iter_mut().enumerate() {
                            *dst = row[bitrev(e, self.log_r)];
                        }
                    } else {
                        lane.copy_from_slice(row);
                    }
                    if let Some(pre) = &self.pre_a {
                        lane.iter_mut().zip(pre).for_each(|(v, s)| *v *= s);
                    }
                }
            }
        }
    }

    /// Multiplies the value for `k1` (at `k1` or `bitrev(k1)`) by
    /// `lane_start[j2] * lane_ratio[j2]^k1`.
    fn inter_step_twiddle(&self, lane: &mut [Scalar], j2: usize) {
        let ratio = self.lane_ratio[j2];
        let mut factor = self.lane_start[j2];
        if ratio == Scalar::ONE && factor == Scalar::ONE {
            return;
        }
        if self.a_dif {
            for k1 in 0..lane.len() {
                lane[bitrev(k1, self.log_r)] *= factor;
                factor *= ratio;
            }
        } else {
            for v in lane.iter_mut() {
                *v *= factor;
                factor *= ratio;
            }
        }
    }

    /// The scratch values at positions `p_first..p_first + width` of lane `j2`.
    fn scratch_lane<'s>(
        &self,
        scratch: &'s [Scalar],
        j2: usize,
        p_first: usize,
        width: usize,
    ) -> &'s [Scalar] {
        let offset = j2 * self.r() + p_first;
        &scratch[offset..offset + width]
    }

    /// Pass B for a bit-reversed output: position `p = bitrev(k1)` of pass A is output row `p`
    /// (`bitrev(k1 + R * k2) = bitrev(k1) * C + bitrev(k2)`), so each tile is `subs_b` adjacent
    /// rows, gathered in place and transformed there.
    fn pass_b_rows(&self, scratch: &[Scalar], values: &mut [Scalar]) {
        let c = self.c();
        let width = self.subs_b;
        values
            .par_chunks_mut(width * c)
            .enumerate()
            .for_each(|(tile, rows)| {
                let p_first = tile * width;
                for j2 in 0..c {
                    let src = self.scratch_lane(scratch, j2, p_first, width);
                    for (row_idx, z) in src.iter().enumerate() {
                        rows[row_idx * c + j2] = *z;
                    }
                }
                for row in rows.chunks_exact_mut(c) {
                    kernel::dif(row, &self.twiddles_b);
                    if let Some(post) = &self.post_b {
                        row.iter_mut().zip(post).for_each(|(v, s)| *v *= s);
                    }
                }
            });
    }

    /// Pass B for a natural output: `y[k1 + R * k2]` is column `k1 = p` of the C x R matrix, so
    /// the columns are split into groups, one parallel work item each, and every tile of `subs_b`
    /// adjacent columns is gathered into a local buffer, transformed, and scattered.
    fn pass_b_columns(&self, scratch: &[Scalar], values: &mut [Scalar]) {
        let (r, c) = (self.r(), self.c());
        let group_width = r / self.groups_b;
        let mut groups: Vec<Vec<&mut [Scalar]>> =
            (0..self.groups_b).map(|_| Vec::with_capacity(c)).collect();
        for row in values.chunks_exact_mut(r) {
            for (group, piece) in groups.iter_mut().zip(row.chunks_exact_mut(group_width)) {
                group.push(piece);
            }
        }
        let width = self.subs_b;
        groups
            .into_par_iter()
            .enumerate()
            .for_each(|(group_idx, mut rows)| {
                let mut local = vec![Scalar::ZERO; width * c];
                for offset in (0..group_width).step_by(width) {
                    let p_first = group_idx * group_width + offset;
                    for j2 in 0..c {
                        let src = self.scratch_lane(scratch, j2, p_first, width);
                        for (lane_idx, z) in src.iter().enumerate() {
                            local[lane_idx * c + j2] = *z;
                        }
                    }
                    for lane in local.chunks_exact_mut(c) {
                        kernel::dif(lane, &self.twiddles_b);
                    }
                    // Row k2 of the output takes the value at bitrev(k2) of every lane.
                    for (k2, row) in rows.iter_mut().enumerate() {
                        let e = bitrev(k2, self.log_c);
                        let dst = &mut row[offset..offset + width];
                        match &self.post_b {
                            Some(post) => {
                                for (lane_idx, y) in dst.iter_mut().enumerate() {
                                    *y = local[lane_idx * c + e] * post[e];
                                }
                            }
                            None => {
                                for (lane_idx, y) in dst.iter_mut().enumerate() {
                                    *y = local[lane_idx * c + e];
                                }
                            }
                        }
                    }
                }
            });
    }
}

/// Sub-transforms of size `size` per tile, out of `count`: as many as fit in
/// [`TILE_SCALARS`] (at most [`MAX_TILE_WIDTH`]), but few enough to leave `items` tiles for the
/// threads to share; a power of two. At least two where the threads leave room, so that a strided
/// gather uses whole 64-byte cache lines (two scalars) even when one sub-transform fills the tile.
fn tile_width(size: usize, count: usize, items: usize) -> usize {
    let by_cache = (TILE_SCALARS / size).max(2);
    let by_balance = (count / items).max(1);
    let width = by_cache.min(by_balance).clamp(1, MAX_TILE_WIDTH);
    // Round down to a power of two so that it divides `count`.
    1 << width.ilog2()
}
