//! The MSM driver: launch wrappers of kernels/msm/msm.cu (one per kernel, same name) and the
//! sequence that runs them, written once for any [`Exec`] and for G1 and G2.
//!
//! Per chunk of points: digits, prefix sum, scatter (a counting sort by bucket), the first level of
//! the segmented bucket sums, then merge levels until one thread holds what is left. Bases and
//! scalars are either on the device (read in place, at the chunk's offset) or in host memory,
//! copied on the copy lane into a ring of two device staging buffers (plus one for a shorter
//! last chunk; a shorter first chunk, `MsmPlan::with_first_chunk`, takes the start of slot 0)
//! while the compute lane works on the previous chunk: a chunk's copies are queued before the
//! previous chunk's bucket sums (the first chunk's scalars before its bases, so that its
//! counting sort overlaps the copy of the bases). Copies come straight from a caller's pinned
//! memory; pageable memory is first copied by the host into a ring of two pinned staging
//! buffers, which the host fills while the device copies and computes the chunks before.
//! After the last chunk the buckets are reduced level by level on the device (in G1 with
//! batch-affine sums the last chunk's sums write the first level themselves,
//! `MsmPlan::fuses_first_reduce`); the last few sums of each window and the combination of the
//! windows run on the host.

use super::affine::{self, AffineWorkspace, FirstReduce, SortedChunk};
use super::curve::{kernels_of, GpuCurve};
use super::exec::{blocks, u32_arg, Arg, Exec};
use super::plan::{
    Accumulation, MsmPlan, SortBins, DIGITS_BINS_THREADS, INT_BLOCK, MERGE_SEG, POINT_BLOCK,
    REDUCE_SEG, SCATTER_PER,
};
use super::{GpuMsmError, ScalarForm};
use crate::reference::combine_windows_of_widths;
use rayon::prelude::*;

/// Where an input lives: already in device memory, in pinned host memory (streamed in chunks
/// straight from there), in pageable host memory (streamed in chunks through pinned staging
/// buffers), or scattered over device memory: bases `indices` (u32) picks out of `bases`, each
/// chunk gathered into its staging slot by `kernel` (`msm_gather_<g>`, kernels/msm/split.cu)
/// where a streamed input's chunk would be copied, so the call's memory is a streamed call's.
pub(crate) enum Source<'a, E: Exec> {
    Device(&'a E::Buf),
    Pinned(&'a E::Pinned),
    Host(&'a [u8]),
    Gathered {
        bases: &'a E::Buf,
        indices: &'a E::Buf,
        kernel: &'static str,
    },
}

impl<E: Exec> Source<'_, E> {
    fn streams(&self) -> bool {
        !matches!(self, Source::Device(_))
    }
}

/// Device memory of one MSM.
struct Workspace<B> {
    buckets: B,
    counts: B,
    cursor: B,
    scan: Vec<B>,
    keys: B,
    sorted: B,
    /// The two-pass sort's scratch, when the plan sorts in two passes ([`MsmPlan::sort_bins`]).
    bins: Option<BinScratch<B>>,
    sums: BucketSums<B>,
}

/// Device memory of the two-pass sort.
struct BinScratch<B> {
    /// The entries grouped by bin (msm_sort_bins).
    binned: B,
    /// Entries of each bin the first pass has placed.
    fill: B,
    /// Each bin's digits (msm_digits_bins), then their exclusive prefix sum: `n_bins + 1`.
    offsets: B,
}

/// The scratch of the bucket sums, by [`Accumulation`].
enum BucketSums<B> {
    /// Partial sums of the XYZZ segments, ping-ponged between merge levels.
    Xyzz {
        part_keys: [B; 2],
        part_points: [B; 2],
    },
    /// One workspace per lane the groups of windows run on.
    BatchAffine(Vec<AffineWorkspace<B>>),
}

impl<B> Workspace<B> {
    fn new<E: Exec<Buf = B>>(exec: &E, plan: &MsmPlan) -> Result<Self, GpuMsmError> {
        let xyzz = plan.group.xyzz_bytes();
        let g = plan.total_buckets();
        let entries = plan.entries_per_chunk();
        let sums = match plan.accumulation {
            Accumulation::Xyzz => {
                let t0 = plan.accumulate_threads(plan.chunk_len);
                let t1 = MsmPlan::merge_levels(t0).first().map_or(1, |l| l.n_threads);
                BucketSums::Xyzz {
                    part_keys: [exec.alloc(4 * 2 * t0)?, exec.alloc(4 * 2 * t1)?],
                    part_points: [exec.alloc(xyzz * 2 * t0)?, exec.alloc(xyzz * 2 * t1)?],
                }
            }
            Accumulation::BatchAffine => BucketSums::BatchAffine(
                (0..plan.affine_lanes_used())
                    .map(|_| AffineWorkspace::new(exec, plan))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let scan = MsmPlan::scan_levels(g + 1)
            .into_iter()
            .map(|len| exec.alloc(4 * len))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            buckets: exec.alloc(plan.bucket_bytes())?,
            counts: exec.alloc(4 * (g + 1))?,
            cursor: exec.alloc(4 * (g + 1))?,
            scan,
            keys: exec.alloc(4 * entries)?,
            sorted: exec.alloc(8 * entries)?,
            bins: match plan.sort_bins() {
                Some(s) => {
                    let n_bins = s.bins * plan.n_windows as usize;
                    Some(BinScratch {
                        binned: exec.alloc(8 * entries)?,
                        fill: exec.alloc(4 * n_bins)?,
                        offsets: exec.alloc(4 * (n_bins + 1))?,
                    })
                }
                None => None,
            },
            sums,
        })
    }
}

/// Staging buffers for one input streamed from host memory: device slots 0 and 1 take full
/// chunks in turn, slot 2 a shorter last chunk; for pageable input, host slots 0 and 1 (pinned)
/// take chunk `k` in slot `k % 2` on its way.
struct Staging<E: Exec> {
    slots: [Option<E::Buf>; 3],
    host: [Option<E::Staging>; 2],
    element_bytes: usize,
}

impl<E: Exec> Staging<E> {
    fn new(
        exec: &E,
        plan: &MsmPlan,
        element_bytes: usize,
        source: &Source<'_, E>,
    ) -> Result<Self, GpuMsmError> {
        let mut slots = [None, None, None];
        let mut host = [None, None];
        if source.streams() {
            let full = plan.chunk_len * element_bytes;
            for k in 0..plan.staging_slots() {
                slots[k] = Some(exec.alloc(full)?);
                if matches!(source, Source::Host(_)) {
                    host[k] = Some(exec.alloc_staging(full)?);
                }
            }
            let last = plan.n_chunks - 1;
            if slot_of(plan, last) == 2 {
                slots[2] = Some(exec.alloc(plan.chunk(last).1 * element_bytes)?);
            }
        }
        Ok(Self {
            slots,
            host,
            element_bytes,
        })
    }

    /// Queues the copy of points `start..start + m` (chunk `chunk`) into device slot `slot`.
    fn copy_chunk(
        &mut self,
        exec: &E,
        source: &Source<'_, E>,
        chunk: usize,
        slot: usize,
        (start, m): (usize, usize),
    ) -> Result<(), GpuMsmError> {
        let range = start * self.element_bytes..(start + m) * self.element_bytes;
        const SLOT: &str = "staging slot allocated";
        match source {
            Source::Device(_) => Ok(()),
            Source::Pinned(pinned) => {
                exec.upload_pinned(self.slots[slot].as_mut().expect(SLOT), pinned, range)
            }
            Source::Host(bytes) => {
                let src = &bytes[range];
                let host = self.host[chunk % 2].as_mut().expect("host slot allocated");
                exec.fill_staging(host, src)?;
                let dst = self.slots[slot].as_mut().expect(SLOT);
                exec.upload_pinned(dst, E::staged(host), 0..src.len())
            }
            // On the compute lane, after the sums of the chunk that last read the slot (issued
            // before it), like every kernel.
            Source::Gathered {
                bases,
                indices,
                kernel,
            } => exec.launch(
                kernel,
                blocks(m, INT_BLOCK)?,
                INT_BLOCK,
                &[
                    Arg::Buf(self.slots[slot].as_ref().expect(SLOT)),
                    Arg::Buf(bases),
                    Arg::Buf(indices),
                    Arg::U32(u32_arg(start, "first gathered point")?),
                    Arg::U32(u32_arg(m, "gathered points")?),
                ],
            ),
        }
    }

    /// The device buffer chunk `start` is read from, and the offset of its first element there.
    fn chunk_buffer<'s>(
        &'s self,
        source: &'s Source<'_, E>,
        slot: usize,
        start: usize,
    ) -> (&'s E::Buf, usize) {
        match source {
            Source::Device(b) => (*b, start),
            _ => (self.slots[slot].as_ref().expect("staged"), 0),
        }
    }
}

/// The staging slot of chunk `chunk`: 0 and 1 in turn (a shorter first chunk fits slot 0),
/// 2 for a last chunk shorter than the others.
fn slot_of(plan: &MsmPlan, chunk: usize) -> usize {
    if chunk > 0 && chunk + 1 == plan.n_chunks && plan.chunk(chunk).1 != plan.chunk_len {
        2
    } else {
        chunk % 2
    }
}

/// `Σ sᵢ·Pᵢ` by `plan` (which must be for `C`'s group and as many points as there are).
///
/// `bases` holds `plan.n_points` affine points in the device layout, `scalars` as many 32-byte
/// scalars in `form`.
pub(crate) fn msm<E: Exec, C: GpuCurve>(
    exec: &E,
    plan: &MsmPlan,
    bases: Source<'_, E>,
    scalars: Source<'_, E>,
    form: ScalarForm,
) -> Result<C::Projective, GpuMsmError> {
    if plan.n_points == 0 {
        return Ok(C::identity());
    }
    exec.mark("start")?;
    let mut ws = Workspace::new(exec, plan)?;
    if plan.accumulation == Accumulation::Xyzz {
        // The batch-affine sums write every bucket in the first chunk (msm_affine_buckets), or,
        // in a single-chunk MSM that fuses the reduction's first level, have none.
        exec.zero(&mut ws.buckets)?;
    }
    let mut base_stage = Staging::new(exec, plan, plan.group.affine_bytes(), &bases)?;
    let mut scalar_stage = Staging::new(exec, plan, 32, &scalars)?;
    let streaming = bases.streams() || scalars.streams();
    // Staging buffers were allocated on the compute lane; copies may use them only after that.
    let mut slot_free: [Option<E::Event>; 3] = [None, None, None];
    if streaming {
        let allocated = exec.record_compute()?;
        exec.copies_wait_for(&allocated)?;
    }

    // The reduction's first level, where the last chunk's sums write it.
    let mut first_level: Option<(E::Buf, E::Buf)> = None;
    let mut run_chunks = || -> Result<(), GpuMsmError> {
        for chunk in 0..plan.n_chunks {
            let (start, m) = plan.chunk(chunk);
            let slot = slot_of(plan, chunk);
            if streaming {
                if chunk == 0 {
                    // The scalars first: the counting sort needs only them, so it runs while
                    // the bases (three or six times their bytes) are still being copied.
                    scalar_stage.copy_chunk(exec, &scalars, chunk, slot, (start, m))?;
                }
                // Later chunks' copies were queued while the chunk before was summed (below).
                exec.compute_waits_for_copies()?;
                exec.mark("stage")?;
            }
            let scalar_chunk = scalar_stage.chunk_buffer(&scalars, slot, start);
            sort_chunk(exec, plan, &mut ws, scalar_chunk, m, form)?;
            if streaming && chunk == 0 {
                base_stage.copy_chunk(exec, &bases, chunk, slot, (start, m))?;
                exec.compute_waits_for_copies()?;
                exec.mark("stage")?;
            }
            // The next chunk's copies go in before this chunk's sums, so that they overlap all
            // of them: batch-affine sums wait on the host for the window groups' statistics,
            // and copies queued after them would wait with them. A slot is refilled once the
            // chunk that last read it has been summed.
            if streaming && chunk + 1 < plan.n_chunks {
                let next = chunk + 1;
                let (next_start, next_m) = plan.chunk(next);
                let next_slot = slot_of(plan, next);
                if let Some(event) = slot_free[next_slot].take() {
                    exec.copies_wait_for(&event)?;
                }
                scalar_stage.copy_chunk(exec, &scalars, next, next_slot, (next_start, next_m))?;
                base_stage.copy_chunk(exec, &bases, next, next_slot, (next_start, next_m))?;
            }
            let base_chunk = base_stage.chunk_buffer(&bases, slot, start);
            let reduce = if chunk + 1 == plan.n_chunks && plan.fuses_first_reduce() {
                let n_segments = plan.n_windows as usize * plan.buckets_per_window() / REDUCE_SEG;
                first_level = Some(level_arrays(exec, plan, n_segments)?);
                first_level.as_ref().map(|(c, r)| FirstReduce {
                    c,
                    r,
                    seg: REDUCE_SEG,
                })
            } else {
                None
            };
            sum_chunk::<E, C>(
                exec,
                plan,
                &mut ws,
                base_chunk,
                m,
                chunk == 0,
                reduce.as_ref(),
            )?;
            if streaming {
                slot_free[slot] = Some(exec.record_compute()?);
            }
        }
        Ok(())
    };
    if let Err(e) = run_chunks() {
        // Copies into the staging slots may still be queued, and the slots go back to the
        // buffer cache (or are freed) on the compute lane, which waits only for the copies it
        // was told of: wait for all of them before the buffers leave this call.
        if streaming {
            let _ = exec.wait_for_copies();
        }
        return Err(e);
    }
    finish::<E, C>(exec, plan, &mut ws, first_level)
}

/// A pair of (C, R) arrays of a reduction level of `n_segments` segments (all windows').
fn level_arrays<E: Exec>(
    exec: &E,
    plan: &MsmPlan,
    n_segments: usize,
) -> Result<(E::Buf, E::Buf), GpuMsmError> {
    let bytes = n_segments * plan.group.xyzz_bytes();
    Ok((exec.alloc(bytes)?, exec.alloc(bytes)?))
}

/// Sorts one chunk's digits by bucket (the scalars alone): `ws.sorted`, with each bucket's first
/// entry in `ws.counts`. In two passes where the plan says so ([`MsmPlan::sort_bins`]): the
/// digits counted per bin, then grouped by bin, then ordered by bucket within each bin (which
/// writes the buckets' offsets); else counted per bucket and scattered in one pass.
fn sort_chunk<E: Exec>(
    exec: &E,
    plan: &MsmPlan,
    ws: &mut Workspace<E::Buf>,
    (scalars, scalar_offset): (&E::Buf, usize),
    m: usize,
    form: ScalarForm,
) -> Result<(), GpuMsmError> {
    let digits = DigitsArgs {
        scalars,
        scalar_offset,
        m,
        form,
    };
    match (plan.sort_bins(), ws.bins.as_mut()) {
        (Some(bins), Some(scratch)) => {
            let n_bins = bins.bins * plan.n_windows as usize;
            exec.zero(&mut scratch.offsets)?;
            msm_digits_bins(exec, &ws.keys, scratch, &digits, plan, bins)?;
            exec.mark("digits")?;
            let (first, rest) = ws.scan.split_first_mut().expect("at least one scan level");
            scan(exec, &mut scratch.offsets, n_bins + 1, first, rest)?;
            exec.mark("scan")?;
            msm_sort_two_passes(exec, ws, m, plan, bins)?;
        }
        _ => {
            let g = plan.total_buckets();
            exec.zero(&mut ws.counts)?;
            msm_digits(exec, ws, &digits, plan)?;
            exec.mark("digits")?;
            let (first, rest) = ws.scan.split_first_mut().expect("at least one scan level");
            scan(exec, &mut ws.counts, g + 1, first, rest)?;
            exec.copy(&ws.counts, &mut ws.cursor)?;
            exec.mark("scan")?;
            msm_scatter(exec, ws, m, plan)?;
        }
    }
    exec.mark("scatter")
}

/// What the digits kernels read: a chunk of `m` scalars at `scalar_offset` of `scalars`.
struct DigitsArgs<'a, B> {
    scalars: &'a B,
    scalar_offset: usize,
    m: usize,
    form: ScalarForm,
}

impl<B> DigitsArgs<'_, B> {
    /// The kernels' arguments after the output buffers: scalars, their offset, the chunk's
    /// points, the windows and whether the scalars are in Montgomery form.
    fn args<'s>(&'s self, plan: &MsmPlan) -> Result<[Arg<'s, B>; 7], GpuMsmError> {
        Ok([
            Arg::Buf(self.scalars),
            Arg::U64(self.scalar_offset as u64),
            Arg::U32(u32_arg(self.m, "points per chunk")?),
            Arg::U32(plan.window_bits),
            Arg::U32(plan.n_windows),
            Arg::U32(plan.wide_windows()),
            Arg::U32(u32::from(self.form == ScalarForm::Montgomery)),
        ])
    }
}

/// The launches of the two-pass sort after the bins' offsets: msm_sort_bins groups the entries
/// by bin, msm_sort_bin_buckets orders each bin by bucket and writes the buckets' offsets, with
/// msm_sort_big before it (counting) and after it (placing) for bins over its stage (skewed
/// scalars; with none, it only looks at the bins' sizes). Cut as `bins` says
/// ([`MsmPlan::sort_bins`]), for a chunk of `m` points.
fn msm_sort_two_passes<E: Exec>(
    exec: &E,
    ws: &mut Workspace<E::Buf>,
    m: usize,
    plan: &MsmPlan,
    bins: SortBins,
) -> Result<(), GpuMsmError> {
    let scratch = ws.bins.as_mut().expect("allocated for a plan with bins");
    let layout = bin_layout(plan, bins)?;
    exec.zero(&mut scratch.fill)?;
    let tiles = m.div_ceil(bins.tile());
    let windows = plan.n_windows as usize;
    let mut args = vec![
        Arg::Buf(&scratch.binned),
        Arg::Buf(&scratch.fill),
        Arg::Buf(&scratch.offsets),
        Arg::Buf(&ws.keys),
        Arg::U32(u32_arg(m, "points per chunk")?),
        Arg::U32(u32_arg(tiles, "tiles per window")?),
    ];
    args.extend(layout.map(Arg::U32));
    exec.launch_shared(
        "msm_sort_bins",
        u32_arg(tiles * windows, "sort tiles")?,
        bins.tile_threads,
        u32_arg(bins.tile_shared_bytes(), "sort tile shared memory")?,
        &args,
    )?;
    // As many blocks as the device holds at once: each takes every grid-th bin.
    let n_bins = u32_arg(bins.bins * windows, "bins")?;
    let cap = u32_arg(bins.stage_cap, "sort stage")?;
    let per_sm = bins.stage_blocks_per_sm(plan.sort_shared);
    let grid = u32_arg(
        (n_bins as usize).min(per_sm * exec.sm_count().max(1) as usize),
        "sort blocks",
    )?;
    let threads = bins.stage_threads();
    // Bins over the stage count their entries per bucket in the cursors first, and are placed
    // by bucket after the second pass has written the offsets.
    exec.zero(&mut ws.cursor)?;
    let big = |pass: BigBinPass| {
        exec.launch(
            "msm_sort_big",
            grid,
            threads,
            &[
                Arg::Buf(&ws.sorted),
                Arg::Buf(&ws.cursor),
                Arg::Buf(&scratch.binned),
                Arg::Buf(&scratch.offsets),
                Arg::U32(n_bins),
                Arg::U32(cap),
                Arg::U32(pass as u32),
            ],
        )
    };
    big(BigBinPass::Count)?;
    let mut args = vec![
        Arg::Buf(&ws.sorted),
        Arg::Buf(&ws.counts),
        Arg::Buf(&ws.cursor),
        Arg::Buf(&scratch.binned),
        Arg::Buf(&scratch.offsets),
        Arg::U32(n_bins),
        Arg::U32(cap),
    ];
    args.extend(layout.map(Arg::U32));
    exec.launch_shared(
        "msm_sort_bin_buckets",
        grid,
        threads,
        u32_arg(bins.stage_shared_bytes(), "sort stage shared memory")?,
        &args,
    )?;
    big(BigBinPass::Place)
}

/// What a launch of `msm_sort_big` does with the bins over the second pass's stage (its
/// argument's values).
#[derive(Clone, Copy)]
enum BigBinPass {
    /// Counts their entries per bucket, before the second pass.
    Count = 0,
    /// Puts each entry at its bucket's next place, after the second pass.
    Place = 1,
}

/// Adds the sorted chunk's `m` points into the buckets; `first`: the MSM's first chunk, which
/// finds every bucket infinity. With `reduce` (batch-affine sums, the last chunk: see
/// [`MsmPlan::fuses_first_reduce`]) the chunk's sums go into the reduction's first level instead.
fn sum_chunk<E: Exec, C: GpuCurve>(
    exec: &E,
    plan: &MsmPlan,
    ws: &mut Workspace<E::Buf>,
    (bases, base_offset): (&E::Buf, usize),
    m: usize,
    first: bool,
    reduce: Option<&FirstReduce<'_, E::Buf>>,
) -> Result<(), GpuMsmError> {
    let g = plan.total_buckets();
    match &mut ws.sums {
        BucketSums::BatchAffine(affine_ws) => {
            let chunk = SortedChunk {
                offsets: &ws.counts,
                sorted: &ws.sorted,
                bases,
                base_offset,
            };
            affine::accumulate::<E, C>(exec, plan, affine_ws, &ws.buckets, &chunk, first, reduce)
        }
        BucketSums::Xyzz {
            part_keys,
            part_points,
        } => {
            debug_assert!(
                reduce.is_none(),
                "only batch-affine sums fuse the reduction"
            );
            let t0 = plan.accumulate_threads(m);
            let sorted = (&ws.sorted, &ws.counts);
            msm_accumulate::<E, C>(
                exec,
                (&ws.buckets, &part_keys[0], &part_points[0]),
                sorted,
                g,
                (bases, base_offset),
                plan.accumulate_seg,
                t0,
            )?;
            exec.mark("accumulate")?;
            for (i, level) in MsmPlan::merge_levels(t0).iter().enumerate() {
                // Level i reads the partial sums level i − 1 wrote (the first level wrote array 0).
                let (src, dst) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
                msm_merge::<E, C>(
                    exec,
                    &ws.buckets,
                    (&part_keys[dst], &part_points[dst]),
                    (&part_keys[src], &part_points[src]),
                    level.n_in,
                    level.n_threads,
                )?;
            }
            exec.mark("merge")?;
            Ok(())
        }
    }
}

/// The bins' layout as the two-pass sort's kernels take it (kernels/msm/msm.cu,
/// `msm_bin_layout_t`): keys per window, bins per window, `bin_log2`, the windows of `c` bits and
/// `wide_extra`.
fn bin_layout(plan: &MsmPlan, bins: SortBins) -> Result<[u32; 5], GpuMsmError> {
    Ok([
        u32_arg(plan.buckets_per_window(), "keys per window")?,
        u32_arg(bins.bins, "bins")?,
        bins.bin_log2,
        plan.wide_windows(),
        bins.wide_extra,
    ])
}

/// msm_digits: one thread per point, each digit counted in its bucket.
fn msm_digits<E: Exec>(
    exec: &E,
    ws: &mut Workspace<E::Buf>,
    digits: &DigitsArgs<'_, E::Buf>,
    plan: &MsmPlan,
) -> Result<(), GpuMsmError> {
    let mut args = vec![Arg::Buf(&ws.keys), Arg::Buf(&ws.counts)];
    args.extend(digits.args(plan)?);
    exec.launch("msm_digits", blocks(digits.m, INT_BLOCK)?, INT_BLOCK, &args)
}

/// msm_digits_bins: the same keys, each digit counted in its bin, cut as
/// [`MsmPlan::digits_bins`] says.
fn msm_digits_bins<E: Exec>(
    exec: &E,
    keys: &E::Buf,
    scratch: &BinScratch<E::Buf>,
    digits: &DigitsArgs<'_, E::Buf>,
    plan: &MsmPlan,
    bins: SortBins,
) -> Result<(), GpuMsmError> {
    let layout = plan.digits_bins(&bins, digits.m);
    let mut args = vec![Arg::Buf(keys), Arg::Buf(&scratch.offsets)];
    args.extend(digits.args(plan)?);
    args.extend([
        Arg::U32(u32_arg(bins.bins, "bins")?),
        Arg::U32(bins.bin_log2),
        Arg::U32(bins.wide_extra),
        Arg::U32(layout.windows_per_block),
        Arg::U32(layout.blocks_per_group),
        Arg::U32(layout.per_block),
    ]);
    exec.launch_shared(
        "msm_digits_bins",
        layout.blocks(),
        DIGITS_BINS_THREADS,
        u32_arg(layout.shared_bytes, "digit counters' shared memory")?,
        &args,
    )
}

/// Exclusive prefix sum of `n` u32 of `data` in place: msm_scan_tiles, recursively over the tile
/// sums, then msm_scan_add. `tile_sums` and `rest` are [`MsmPlan::scan_levels`]`(n)` long.
pub(crate) fn scan<E: Exec>(
    exec: &E,
    data: &mut E::Buf,
    n: usize,
    tile_sums: &mut E::Buf,
    rest: &mut [E::Buf],
) -> Result<(), GpuMsmError> {
    let tiles = n.div_ceil(super::plan::SCAN_TILE);
    let n32 = u32_arg(n, "prefix-sum length")?;
    exec.launch(
        "msm_scan_tiles",
        u32_arg(tiles, "scan tiles")?,
        256,
        &[Arg::Buf(data), Arg::Buf(tile_sums), Arg::U32(n32)],
    )?;
    if tiles > 1 {
        let (next, rest) = rest
            .split_first_mut()
            .expect("scan levels sized by the plan");
        scan(exec, tile_sums, tiles, next, rest)?;
        exec.launch(
            "msm_scan_add",
            blocks(n, INT_BLOCK)?,
            INT_BLOCK,
            &[Arg::Buf(data), Arg::Buf(tile_sums), Arg::U32(n32)],
        )?;
    }
    Ok(())
}

/// msm_scatter: one launch per part of each window's buckets when the plan cuts them, else one
/// launch for all windows; SCATTER_PER entries per thread.
fn msm_scatter<E: Exec>(
    exec: &E,
    ws: &mut Workspace<E::Buf>,
    m: usize,
    plan: &MsmPlan,
) -> Result<(), GpuMsmError> {
    let launch = |first: usize, n: usize, (lo, hi): (usize, usize)| {
        exec.launch(
            "msm_scatter",
            blocks(n.div_ceil(SCATTER_PER), INT_BLOCK)?,
            INT_BLOCK,
            &[
                Arg::Buf(&ws.sorted),
                Arg::Buf(&ws.cursor),
                Arg::Buf(&ws.keys),
                Arg::U32(u32_arg(m, "points per chunk")?),
                Arg::U32(u32_arg(first, "first entry")?),
                Arg::U32(u32_arg(n, "entries")?),
                Arg::U32(u32_arg(lo, "first bucket")?),
                Arg::U32(u32_arg(hi, "bucket bound")?),
            ],
        )
    };
    let parts = plan.scatter_parts();
    if parts <= 1 {
        return launch(0, m * plan.n_windows as usize, (0, plan.total_buckets()));
    }
    for w in 0..plan.n_windows {
        for part in 0..parts {
            launch(w as usize * m, m, plan.scatter_range(w, part))?;
        }
    }
    Ok(())
}

/// msm_accumulate_<g>: the first level of the bucket sums, `n_threads` threads of `seg` entries.
fn msm_accumulate<E: Exec, C: GpuCurve>(
    exec: &E,
    (buckets, part_keys, part_points): (&E::Buf, &E::Buf, &E::Buf),
    (sorted, counts): (&E::Buf, &E::Buf),
    total_buckets: usize,
    (bases, base_offset): (&E::Buf, usize),
    seg: usize,
    n_threads: usize,
) -> Result<(), GpuMsmError> {
    exec.launch(
        kernels_of::<C>().accumulate,
        blocks(n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &[
            Arg::Buf(buckets),
            Arg::Buf(part_keys),
            Arg::Buf(part_points),
            Arg::Buf(sorted),
            Arg::Buf(counts),
            Arg::U32(u32_arg(total_buckets, "buckets")?),
            Arg::Buf(bases),
            Arg::U64(base_offset as u64),
            Arg::U32(u32_arg(seg, "segment")?),
            Arg::U32(u32_arg(n_threads, "threads")?),
        ],
    )
}

/// msm_merge_<g>: one merge level from partial-sum array `src` into array `dst`.
fn msm_merge<E: Exec, C: GpuCurve>(
    exec: &E,
    buckets: &E::Buf,
    (out_keys, out_points): (&E::Buf, &E::Buf),
    (in_keys, in_points): (&E::Buf, &E::Buf),
    n_in: usize,
    n_threads: usize,
) -> Result<(), GpuMsmError> {
    exec.launch(
        kernels_of::<C>().merge,
        blocks(n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &[
            Arg::Buf(buckets),
            Arg::Buf(out_keys),
            Arg::Buf(out_points),
            Arg::Buf(in_keys),
            Arg::Buf(in_points),
            Arg::U32(u32_arg(n_in, "partial sums")?),
            Arg::U32(MERGE_SEG as u32),
            Arg::U32(u32_arg(n_threads, "threads")?),
        ],
    )
}

/// msm_reduce_<g>: one level of the bucket reduction.
#[allow(clippy::too_many_arguments)]
fn msm_reduce<E: Exec, C: GpuCurve>(
    exec: &E,
    out_c: &E::Buf,
    out_r: &E::Buf,
    in_c: &E::Buf,
    in_r: &E::Buf,
    n_segments: usize,
    seg: usize,
    scale_log2: u32,
    first: bool,
) -> Result<(), GpuMsmError> {
    exec.launch(
        kernels_of::<C>().reduce,
        blocks(n_segments, POINT_BLOCK)?,
        POINT_BLOCK,
        &[
            Arg::Buf(out_c),
            Arg::Buf(out_r),
            Arg::Buf(in_c),
            Arg::Buf(in_r),
            Arg::U32(u32_arg(n_segments, "segments")?),
            Arg::U32(u32_arg(seg, "segment")?),
            Arg::U32(scale_log2),
            Arg::U32(u32::from(first)),
        ],
    )
}

/// Downloads a buffer of XYZZ points.
pub(crate) fn download_points<E: Exec, C: GpuCurve>(
    exec: &E,
    buf: &E::Buf,
) -> Result<Vec<C::Projective>, GpuMsmError> {
    let xyzz = C::GROUP.xyzz_bytes();
    let mut bytes = vec![0u8; E::size(buf)];
    exec.download(buf, &mut bytes)?;
    bytes
        .chunks_exact(xyzz)
        .map(C::projective_from_xyzz)
        .collect()
}

/// `Σ_i (i + weight_offset)·points[i]` (offset 0 or 1) by running sums from the top: after
/// visiting index t, `running = Σ_{i≥t} P_i`, and adding it once for every t ≥ 1 adds each `P_i`
/// exactly i times; the offset adds `running` (all points) once more.
fn weighted_sum<C: GpuCurve>(points: &[C::Projective], weight_offset: usize) -> C::Projective {
    let mut running = C::identity();
    let mut weighted = C::identity();
    for (i, p) in points.iter().enumerate().rev() {
        C::add_assign(&mut running, p);
        if i >= 1 {
            C::add_assign(&mut weighted, &running);
        }
    }
    if weight_offset == 1 {
        C::add_assign(&mut weighted, &running);
    }
    weighted
}

/// Reduces the buckets, finishes each window on the host and combines the windows. With
/// `first_level`, the last chunk's sums have written the reduction's first level there
/// ([`MsmPlan::fuses_first_reduce`]), and the device levels start from it.
fn finish<E: Exec, C: GpuCurve>(
    exec: &E,
    plan: &MsmPlan,
    ws: &mut Workspace<E::Buf>,
    mut first_level: Option<(E::Buf, E::Buf)>,
) -> Result<C::Projective, GpuMsmError> {
    let w = plan.n_windows as usize;
    let (levels, final_len, final_scale) = plan.reduce_levels();
    // The windows' host sums are independent: one rayon task each (in G2 about 60 point
    // operations of a few microseconds per window).
    let window_sums: Vec<C::Projective> = if levels.is_empty() {
        // Few buckets: Σ_k k·B_k on the host, bucket k at index k − 1.
        let buckets = download_points::<E, C>(exec, &ws.buckets)?;
        buckets
            .par_chunks_exact(final_len)
            .map(|window| weighted_sum::<C>(window, 1))
            .collect()
    } else {
        // Levels alternate between two pairs of (C, R) arrays, each allocated at the size of the
        // first level that writes it; the last level writes exact-size arrays for the download.
        let mut scratch: [Option<(E::Buf, E::Buf)>; 2] = [None, None];
        let mut last_pair: Option<(E::Buf, E::Buf)> = None;
        let mut out_len = plan.buckets_per_window();
        for (i, level) in levels.iter().enumerate() {
            out_len /= level.seg;
            let n_segments = w * out_len;
            let last = i + 1 == levels.len();
            if let Some(done) = first_level.take().filter(|_| level.first) {
                // Written by the last chunk's sums, at this level's size.
                debug_assert_eq!(level.seg, REDUCE_SEG);
                if last {
                    last_pair = Some(done);
                } else {
                    scratch[0] = Some(done);
                }
                continue;
            }
            if last {
                last_pair = Some(level_arrays(exec, plan, n_segments)?);
            } else if scratch[i % 2].is_none() {
                scratch[i % 2] = Some(level_arrays(exec, plan, n_segments)?);
            }
            let (out_c, out_r) = if last {
                last_pair.as_ref()
            } else {
                scratch[i % 2].as_ref()
            }
            .expect("allocated");
            let (in_c, in_r) = if level.first {
                (&ws.buckets, &ws.buckets)
            } else {
                let prev = scratch[(i - 1) % 2]
                    .as_ref()
                    .expect("written by the previous level");
                (&prev.0, &prev.1)
            };
            msm_reduce::<E, C>(
                exec,
                out_c,
                out_r,
                in_c,
                in_r,
                n_segments,
                level.seg,
                level.scale_log2,
                level.first,
            )?;
        }
        exec.mark("reduce")?;
        let (c_buf, r_buf) = last_pair.as_ref().expect("the last level ran");
        let c = download_points::<E, C>(exec, c_buf)?;
        let r = download_points::<E, C>(exec, r_buf)?;
        c.par_chunks_exact(final_len)
            .zip(r.par_chunks_exact(final_len))
            .map(|(c_window, r_window)| {
                // Σ_s C_s + 2^scale · Σ_s s·R_s.
                let mut scaled = weighted_sum::<C>(r_window, 0);
                for _ in 0..final_scale {
                    scaled = C::double(&scaled);
                }
                for c_s in c_window {
                    C::add_assign(&mut scaled, c_s);
                }
                scaled
            })
            .collect()
    };
    debug_assert_eq!(window_sums.len(), w);
    // Window w holds plan.window_width(w) bits (balanced widths).
    let result = combine_windows_of_widths::<C>(&window_sums, |w| plan.window_width(w as u32));
    exec.mark("host")?;
    Ok(result)
}
