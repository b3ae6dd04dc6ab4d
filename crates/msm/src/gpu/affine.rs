//! Batch-affine bucket sums: launch wrappers of kernels/msm/affine.cuh (one per kernel, same
//! name) and the rounds that run them, for any [`Exec`] and for G1 and G2.
//!
//! After a chunk's counting sort, each group of windows runs rounds until no bucket holds more
//! than [`AFFINE_TAIL`] values ([`rounds_for`]); a round pairs up every bucket's values and adds
//! each pair in affine coordinates, the round's inversions shared by one batch inversion
//! (Montgomery's trick: blockwise, one inversion per block, while the blocks fit one wave on the
//! device; above that a tree with one inversion at the top). Each bucket's remaining values are
//! then added into its XYZZ bucket (which the MSM's first chunk writes without reading it, so
//! the buckets need not be cleared first), and the reduction reads those as before. The groups
//! alternate between two compute lanes when the plan has two ([`MsmPlan::affine_lanes_used`]),
//! each with its own workspace.

use super::curve::{kernels_of, GpuCurve};
use super::exec::{blocks, u32_arg, Arg, Exec};
use super::plan::{
    tree_sizes, AffineScratch, MsmPlan, AFFINE_PER, BLOCK_INVERSE_SPAN, INT_BLOCK, POINT_BLOCK,
    TREE_PER,
};
use super::GpuMsmError;

/// Device memory of the batch-affine rounds (one group of windows at a time).
pub(crate) struct AffineWorkspace<B> {
    /// Odd levels in `points[0]`, even levels in `points[1]`, each as every value's x, then
    /// every value's y (`point_caps` values: kernels/msm/affine.cuh, `msm_level_t`); the key + 1
    /// of each of their slots (zero in a gap) in `keys`.
    points: [B; 2],
    point_caps: [u32; 2],
    keys: [B; 2],
    prefix: B,
    /// Per tree level: the values to invert (level 0: the round threads' products), and their
    /// running products, which become their inverses.
    tree_vals: Vec<B>,
    tree_pre: Vec<B>,
    /// Every group's largest bucket and number of entries (two u32 per group).
    stats: B,
    /// Field elements `prefix` holds (zero: the prefix products wait in the output level's
    /// points instead, `Group::prefix_in_output`), and each tree level: the kernels lay these
    /// arrays out word-major (`msm_soa_load` in kernels/msm/affine.cuh), so they need the
    /// capacity.
    prefix_cap: u32,
    tree_caps: Vec<u32>,
}

impl<B> AffineWorkspace<B> {
    pub(crate) fn new<E: Exec<Buf = B>>(exec: &E, plan: &MsmPlan) -> Result<Self, GpuMsmError> {
        let AffineScratch {
            points,
            prefix,
            tree,
            field_bytes,
            affine_bytes,
            groups,
            ..
        } = plan.affine_scratch(plan.affine_group_windows);
        let alloc_levels = |sizes: &[usize]| -> Result<Vec<B>, GpuMsmError> {
            sizes
                .iter()
                .map(|&n| exec.alloc(n.max(1) * field_bytes))
                .collect()
        };
        let tree_caps = tree
            .iter()
            .map(|&n| u32_arg(n.max(1), "inversion tree level"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            points: [
                exec.alloc(points[0] * affine_bytes)?,
                exec.alloc(points[1] * affine_bytes)?,
            ],
            point_caps: [
                u32_arg(points[0], "level values")?,
                u32_arg(points[1], "level values")?,
            ],
            keys: [exec.alloc(points[0] * 4)?, exec.alloc(points[1] * 4)?],
            prefix: exec.alloc(prefix.max(1) * field_bytes)?,
            tree_vals: alloc_levels(&tree)?,
            tree_pre: alloc_levels(&tree)?,
            stats: exec.alloc(8 * groups.max(1))?,
            prefix_cap: u32_arg(prefix, "prefix products")?,
            tree_caps,
        })
    }
}

/// Where the sorted entries of the chunk live, as the rounds read them.
pub(crate) struct SortedChunk<'a, B> {
    /// `offsets[k]`: first sorted entry of bucket k (`total_buckets + 1` of them).
    pub(crate) offsets: &'a B,
    /// The sorted entries: key above, point reference below.
    pub(crate) sorted: &'a B,
    pub(crate) bases: &'a B,
    pub(crate) base_offset: usize,
}

/// The bucket reduction's first level, which the MSM's last chunk writes in place of its
/// buckets ([`MsmPlan::fuses_first_reduce`]): each segment's `C` and `R`, as `msm_reduce` with
/// `first_level` writes them, segments of `seg` buckets.
pub(crate) struct FirstReduce<'a, B> {
    pub(crate) c: &'a B,
    pub(crate) r: &'a B,
    pub(crate) seg: usize,
}

/// Adds the chunk's sorted entries into `buckets`, group of windows by group, by batch-affine
/// rounds: group `g` on lane `g % lanes`, with that lane's workspace (`ws`: one per lane). The
/// side lane starts once the chunk's sort is done (an event), and the main lane waits for it
/// before this returns, error or not, so later work (the next chunk's sort, the reduction, the
/// buffers' reuse) finds every group summed. Groups write disjoint ranges of `buckets` (or of
/// `reduce`'s arrays) and only read the chunk. `fresh`: the MSM's first chunk, so every bucket
/// is written without being read (infinity where the chunk has no entry for it): the buckets
/// need no clearing before. With `reduce` (the last chunk), each group writes its windows'
/// segments of the reduction's first level instead of its buckets, from the buckets (unless
/// `fresh`) and its last values.
pub(crate) fn accumulate<E: Exec, C: GpuCurve>(
    exec: &E,
    plan: &MsmPlan,
    ws: &mut [AffineWorkspace<E::Buf>],
    buckets: &E::Buf,
    chunk: &SortedChunk<'_, E::Buf>,
    fresh: bool,
    reduce: Option<&FirstReduce<'_, E::Buf>>,
) -> Result<(), GpuMsmError> {
    let group_windows = plan.affine_group_windows.max(1);
    let per_window = plan.buckets_per_window();
    let group_keys = group_windows as usize * per_window;
    let stats = stats(exec, &mut ws[0], chunk.offsets, plan, group_keys)?;
    let lanes: Vec<E> = (0..ws.len() as u32).map(|l| exec.lane(l)).collect();
    let sorted = exec.record_compute()?;
    for lane in &lanes[1..] {
        lane.compute_waits_for(&sorted)?;
    }
    let mut passes: Vec<Pass> = stats
        .iter()
        .enumerate()
        .map(|(g, &(largest, entries))| {
            let w0 = g as u32 * group_windows;
            let w1 = (w0 + group_windows).min(plan.n_windows);
            Pass {
                k0: w0 as usize * per_window,
                n_keys: (w1 - w0) as usize * per_window,
                rounds: rounds_for(largest),
                size: entries,
            }
        })
        .collect();
    let block_max = plan.affine_block_inverse_max;
    let mut run = || -> Result<(), GpuMsmError> {
        for (g, pass) in passes.iter_mut().enumerate() {
            let l = g % lanes.len();
            for level in 0..pass.rounds {
                let group = pass.round(level);
                round::<E, C>(&lanes[l], &mut ws[l], chunk, &group, block_max)?;
            }
            let span = (pass.k0, pass.n_keys);
            let lane = &lanes[l];
            affine_tail::<E, C>(
                lane,
                &ws[l],
                buckets,
                chunk,
                span,
                pass.rounds,
                fresh,
                reduce,
            )?;
            lane.mark("buckets")?;
        }
        Ok(())
    };
    let result = run();
    // Join the side lane whatever happened: its work reads and writes buffers that go back to
    // the caller (or the buffer cache) when this returns. Where the event cannot be made or
    // waited for, the host waits for the lane instead; the first error is the one returned.
    let mut joined = Ok(());
    for lane in &lanes[1..] {
        let by_event = lane
            .record_compute()
            .and_then(|done| exec.compute_waits_for(&done));
        if let Err(e) = by_event {
            joined = joined.and(lane.wait_for_lane()).and(Err(e));
        }
    }
    result.and(joined)
}

/// One group of windows' rounds: buckets `k0..k0 + n_keys`, `rounds` rounds, `size` values in
/// the next round's input level.
struct Pass {
    k0: usize,
    n_keys: usize,
    rounds: u32,
    size: usize,
}

impl Pass {
    /// The shape of round `level` (the next one), whose output becomes the next input.
    fn round(&mut self, level: u32) -> Group {
        let n_out = (self.size + self.n_keys) / 2;
        let group = Group {
            k0: self.k0,
            level,
            n_in: self.size,
            n_out,
            n_threads: n_out.div_ceil(AFFINE_PER),
        };
        self.size = n_out;
        group
    }
}

/// One round: its output slots' keys, the pairs' denominators and the threads' running
/// products, the batch inversion (blockwise up to `block_max` values), the affine sums.
fn round<E: Exec, C: GpuCurve>(
    exec: &E,
    ws: &mut AffineWorkspace<E::Buf>,
    chunk: &SortedChunk<'_, E::Buf>,
    group: &Group,
    block_max: usize,
) -> Result<(), GpuMsmError> {
    exec.zero(&mut ws.keys[level_index(group.level + 1)])?;
    slots(exec, ws, chunk, group)?;
    pairs::<E, C>(exec, ws, chunk, group)?;
    exec.mark("pairs")?;
    invert::<E, C>(exec, ws, group.n_threads, block_max)?;
    exec.mark("invert")?;
    sums::<E, C>(exec, ws, chunk, group)?;
    exec.mark("sums")
}

/// Values a bucket may still hold after the rounds: msm_affine_buckets (or, fused with the
/// reduction's first level, msm_affine_reduce) adds them with mixed XYZZ additions. The last
/// rounds of a group mostly copy the one value most buckets have left into the next level, at
/// the full fixed cost of a round (launches and an inversion tree); stopping
/// once no bucket holds more than this many values saves about two rounds of seven at 2^24
/// points (random scalars), for one XYZZ addition in about half the buckets.
const AFFINE_TAIL: u32 = 4;

/// Rounds a group runs when its largest bucket has `largest` entries: the fewest after which
/// no bucket holds more than [`AFFINE_TAIL`] values (round r leaves ⌈count / 2^r⌉ of them).
fn rounds_for(largest: u32) -> u32 {
    let mut rounds = 0;
    while largest.div_ceil(1 << rounds) > AFFINE_TAIL {
        rounds += 1;
    }
    rounds
}

/// One round of one group of windows.
struct Group {
    k0: usize,
    /// The input level, its number of values and the output level's number of slots.
    level: u32,
    n_in: usize,
    n_out: usize,
    /// Threads of the arithmetic kernels, AFFINE_PER output slots each.
    n_threads: usize,
}

/// The arrays of level `level` (≥ 1): odd levels in index 0, even levels in index 1.
fn level_index(level: u32) -> usize {
    ((level + 1) % 2) as usize
}

/// The points, their capacity and the keys a round reads at input level `level` (level 0 reads
/// the sorted entries; any arrays stand in for the unread ones).
fn inputs<B>(ws: &AffineWorkspace<B>, level: u32) -> (&B, u32, &B) {
    let i = if level == 0 { 1 } else { level_index(level) };
    (&ws.points[i], ws.point_caps[i], &ws.keys[i])
}

/// Buckets per thread of msm_affine_stats.
const STATS_PER: usize = 64;

/// msm_affine_stats: every group's largest bucket and number of entries (one launch, one
/// download), groups of `group_keys` buckets over all the plan's windows.
fn stats<E: Exec>(
    exec: &E,
    ws: &mut AffineWorkspace<E::Buf>,
    offsets: &E::Buf,
    plan: &MsmPlan,
    group_keys: usize,
) -> Result<Vec<(u32, usize)>, GpuMsmError> {
    let n_keys = plan.total_buckets();
    let groups = plan.affine_groups() as usize;
    exec.zero(&mut ws.stats)?;
    exec.launch(
        "msm_affine_stats",
        blocks(n_keys.div_ceil(STATS_PER), INT_BLOCK)?,
        INT_BLOCK,
        &[
            Arg::Buf(&ws.stats),
            Arg::Buf(offsets),
            Arg::U32(u32_arg(group_keys, "buckets per group")?),
            Arg::U32(u32_arg(n_keys, "buckets")?),
            Arg::U32(STATS_PER as u32),
        ],
    )?;
    let mut bytes = vec![0u8; E::size(&ws.stats)];
    exec.download(&ws.stats, &mut bytes)?;
    let word = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    Ok((0..groups)
        .map(|g| (word(2 * g), word(2 * g + 1) as usize))
        .collect())
}

/// msm_affine_slots: the keys of the round's output slots, one thread per input value.
fn slots<E: Exec>(
    exec: &E,
    ws: &AffineWorkspace<E::Buf>,
    chunk: &SortedChunk<'_, E::Buf>,
    group: &Group,
) -> Result<(), GpuMsmError> {
    let (_, _, keys_in) = inputs(ws, group.level);
    exec.launch(
        "msm_affine_slots",
        blocks(group.n_in, INT_BLOCK)?,
        INT_BLOCK,
        &[
            Arg::Buf(&ws.keys[level_index(group.level + 1)]),
            Arg::Buf(keys_in),
            Arg::Buf(chunk.offsets),
            Arg::U32(u32_arg(group.k0, "first bucket")?),
            Arg::U32(group.level),
            Arg::Buf(chunk.sorted),
            Arg::U32(u32_arg(group.n_in, "values")?),
        ],
    )
}

/// msm_affine_pairs_<g>: denominators and running products of one round.
fn pairs<E: Exec, C: GpuCurve>(
    exec: &E,
    ws: &AffineWorkspace<E::Buf>,
    chunk: &SortedChunk<'_, E::Buf>,
    group: &Group,
) -> Result<(), GpuMsmError> {
    let mut args = vec![
        Arg::Buf(&ws.prefix),
        Arg::Buf(&ws.points[level_index(group.level + 1)]),
        Arg::Buf(&ws.tree_vals[0]),
    ];
    args.extend(round_args(ws, chunk, group)?);
    exec.launch(
        kernels_of::<C>().affine_pairs,
        blocks(group.n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &args,
    )
}

/// The parameters msm_affine_pairs_<g> and msm_affine_sums_<g> share, in their order after each
/// kernel's own leading buffers: the round's slot keys, the chunk's sorted entries and bases, the
/// round's input points, its shape and the capacities of its scratch arrays and of its input and
/// output levels.
fn round_args<'a, B>(
    ws: &'a AffineWorkspace<B>,
    chunk: &SortedChunk<'a, B>,
    group: &Group,
) -> Result<[Arg<'a, B>; 15], GpuMsmError> {
    let (pts_in, in_cap, _) = inputs(ws, group.level);
    Ok([
        Arg::Buf(&ws.keys[level_index(group.level + 1)]),
        Arg::Buf(chunk.offsets),
        Arg::U32(u32_arg(group.k0, "first bucket")?),
        Arg::U32(group.level),
        Arg::Buf(chunk.sorted),
        Arg::Buf(chunk.bases),
        Arg::U64(chunk.base_offset as u64),
        Arg::Buf(pts_in),
        Arg::U32(u32_arg(group.n_out, "slots")?),
        Arg::U32(AFFINE_PER as u32),
        Arg::U32(u32_arg(group.n_threads, "threads")?),
        Arg::U32(ws.prefix_cap),
        Arg::U32(ws.tree_caps[0]),
        Arg::U32(in_cap),
        Arg::U32(ws.point_caps[level_index(group.level + 1)]),
    ])
}

/// Threads per block msm_affine_sums_g2 keeps shared-memory cells for (kernels/msm/affine.cuh,
/// MSM_SUMS_THREADS): its blocks may not be larger.
const SUMS_THREADS: u32 = 128;
const _: () = assert!(POINT_BLOCK <= SUMS_THREADS);

/// msm_affine_sums_<g>: the round's affine sums.
fn sums<E: Exec, C: GpuCurve>(
    exec: &E,
    ws: &AffineWorkspace<E::Buf>,
    chunk: &SortedChunk<'_, E::Buf>,
    group: &Group,
) -> Result<(), GpuMsmError> {
    let mut args = vec![
        Arg::Buf(&ws.points[level_index(group.level + 1)]),
        Arg::Buf(&ws.prefix),
        Arg::Buf(&ws.tree_pre[0]),
    ];
    args.extend(round_args(ws, chunk, group)?);
    exec.launch(
        kernels_of::<C>().affine_sums,
        blocks(group.n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &args,
    )
}

/// Threads per block of msm_inv_top_<g> launched blockwise (kernels/msm/affine.cuh,
/// MSM_TOP_THREADS).
const TOP_THREADS: u32 = 128;

/// The inverses of `tree_vals[0][..n]` into `tree_pre[0]`: a tree, msm_inv_up_<g> level by
/// level until a level holds at most `block_max` values (one wave of blocks), msm_inv_top_<g>
/// on that level in blocks of BLOCK_INVERSE_SPAN values, each with its own inversion, in one
/// launch, then msm_inv_down_<g> back down. A round of at most `block_max` values is that one
/// launch, with no tree. Beyond one wave the blocks' lone inversions would idle their
/// multiprocessors wave after wave; below it, the tree's small levels cost a launch each and
/// keep most of the device idle, and its single block's inversion waits alone. With
/// `block_max` 0 the tree goes up to the group's top ([`Group::tree_top`]) in one block.
fn invert<E: Exec, C: GpuCurve>(
    exec: &E,
    ws: &AffineWorkspace<E::Buf>,
    n: usize,
    block_max: usize,
) -> Result<(), GpuMsmError> {
    let kernels = kernels_of::<C>();
    let (top_threads, top_values) = C::GROUP.tree_top();
    // The workspace holds the levels of the tree up to `top_values`: any larger bound stops on
    // one of them.
    let sizes = tree_sizes(n, block_max.max(top_values));
    let top = sizes.len() - 1;
    for level in 0..top {
        let groups = sizes[level + 1];
        exec.launch(
            kernels.inv_up,
            blocks(groups, POINT_BLOCK)?,
            POINT_BLOCK,
            &[
                Arg::Buf(&ws.tree_pre[level]),
                Arg::Buf(&ws.tree_vals[level + 1]),
                Arg::Buf(&ws.tree_vals[level]),
                Arg::U32(u32_arg(sizes[level], "tree level")?),
                Arg::U32(TREE_PER as u32),
                Arg::U32(u32_arg(groups, "threads")?),
                Arg::U32(ws.tree_caps[level]),
                Arg::U32(ws.tree_caps[level + 1]),
            ],
        )?;
    }
    let top_n = u32_arg(sizes[top], "tree top")?;
    let (grid, threads, span) = if block_max == 0 {
        // One block over the whole top: its span is the top's size.
        (1, top_threads, top_n)
    } else {
        let span = BLOCK_INVERSE_SPAN as u32;
        (blocks(sizes[top], span)?, TOP_THREADS, span)
    };
    exec.launch(
        kernels.inv_top,
        grid,
        threads,
        &[
            Arg::Buf(&ws.tree_pre[top]),
            Arg::Buf(&ws.tree_vals[top]),
            Arg::U32(top_n),
            Arg::U32(ws.tree_caps[top]),
            Arg::U32(span),
        ],
    )?;
    for level in (0..top).rev() {
        let groups = sizes[level + 1];
        exec.launch(
            kernels.inv_down,
            blocks(groups, POINT_BLOCK)?,
            POINT_BLOCK,
            &[
                Arg::Buf(&ws.tree_pre[level]),
                Arg::Buf(&ws.tree_vals[level]),
                Arg::Buf(&ws.tree_pre[level + 1]),
                Arg::U32(u32_arg(sizes[level], "tree level")?),
                Arg::U32(TREE_PER as u32),
                Arg::U32(u32_arg(groups, "threads")?),
                Arg::U32(ws.tree_caps[level]),
                Arg::U32(ws.tree_caps[level + 1]),
            ],
        )?;
    }
    Ok(())
}

/// The last values of the buckets `k0..k0 + n_keys` (level `level`) after a group's rounds.
/// msm_affine_buckets_<g> adds them into their XYZZ buckets (each written from infinity when
/// `fresh`, also where empty); with `first`, msm_affine_reduce_<g> adds them into the
/// reduction's first level instead (the buckets whole windows), from each bucket unless `fresh`.
#[allow(clippy::too_many_arguments)]
fn affine_tail<E: Exec, C: GpuCurve>(
    exec: &E,
    ws: &AffineWorkspace<E::Buf>,
    buckets: &E::Buf,
    chunk: &SortedChunk<'_, E::Buf>,
    (k0, n_keys): (usize, usize),
    level: u32,
    fresh: bool,
    first: Option<&FirstReduce<'_, E::Buf>>,
) -> Result<(), GpuMsmError> {
    let (pts, cap, _) = inputs(ws, level);
    // The kernels' arguments: msm_affine_reduce's two outputs first and its segment last,
    // around msm_affine_buckets' own.
    let mut args = Vec::with_capacity(14);
    if let Some(first) = first {
        if k0 % first.seg != 0 || n_keys % first.seg != 0 {
            return Err(GpuMsmError::Internal(format!(
                "buckets {k0}..{} are not whole reduction segments of {}",
                k0 + n_keys,
                first.seg
            )));
        }
        args.extend([Arg::Buf(first.c), Arg::Buf(first.r)]);
    }
    args.extend([
        Arg::Buf(buckets),
        Arg::Buf(chunk.offsets),
        Arg::U32(u32_arg(k0, "first bucket")?),
        Arg::U32(u32_arg(n_keys, "buckets")?),
        Arg::U32(level),
        Arg::Buf(chunk.sorted),
        Arg::Buf(chunk.bases),
        Arg::U64(chunk.base_offset as u64),
        Arg::Buf(pts),
        Arg::U32(u32::from(fresh)),
        Arg::U32(cap),
    ]);
    let (kernel, threads) = match first {
        None => (kernels_of::<C>().affine_buckets, n_keys),
        Some(first) => {
            args.push(Arg::U32(u32_arg(first.seg, "reduction segment")?));
            (kernels_of::<C>().affine_reduce, n_keys / first.seg)
        }
    };
    exec.launch(kernel, blocks(threads, POINT_BLOCK)?, POINT_BLOCK, &args)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{rounds_for, AFFINE_PER, AFFINE_TAIL, SUMS_THREADS, TOP_THREADS};

    /// The block sizes and slots per thread this file launches with are the ones the kernels
    /// are written for (kernels/msm/affine.cuh sizes shared memory by them).
    #[test]
    fn launch_shapes_match_the_kernel_header() {
        let header = include_str!("../../../../kernels/msm/affine.cuh");
        for define in [
            format!("#define MSM_SUMS_THREADS {SUMS_THREADS}u"),
            format!("#define MSM_TOP_THREADS {TOP_THREADS}u"),
            format!("#define MSM_AFFINE_PER {AFFINE_PER}u"),
        ] {
            assert!(
                header.contains(&define),
                "kernels/msm/affine.cuh lacks `{define}`"
            );
        }
    }

    /// The level recurrence of kernels/msm/affine.cuh: (base, count) of key κ one level up.
    fn up((base, count): (usize, usize), kappa: usize) -> (usize, usize) {
        ((base + kappa) / 2, count.div_ceil(2))
    }

    proptest! {
        /// At every level the keys' value ranges are disjoint, in key order, and within the
        /// size the driver launches for; after `rounds_for(largest)` rounds no key holds more than
        /// AFFINE_TAIL values, and one round fewer would not do.
        #[test]
        fn levels_stay_disjoint_and_within_bounds(
            counts in proptest::collection::vec(
                prop_oneof![3 => 0usize..4, 1 => 0usize..200], 1..300)
        ) {
            let n_keys = counts.len();
            let mut pos: Vec<(usize, usize)> = counts
                .iter()
                .scan(0, |start, &c| {
                    let p = (*start, c);
                    *start += c;
                    Some(p)
                })
                .collect();
            let largest = *counts.iter().max().unwrap();
            let rounds = rounds_for(largest as u32);
            let mut size: usize = counts.iter().sum();
            for _ in 0..rounds {
                size = (size + n_keys) / 2;
                pos = pos.iter().enumerate().map(|(k, &p)| up(p, k)).collect();
                for k in 0..n_keys {
                    prop_assert!(pos[k].0 + pos[k].1 <= size);
                    if k + 1 < n_keys {
                        prop_assert!(pos[k].0 + pos[k].1 <= pos[k + 1].0);
                    }
                }
            }
            prop_assert!(pos.iter().all(|&(_, c)| c as u32 <= AFFINE_TAIL));
            // One round fewer would leave some key more than the tail.
            if rounds > 0 {
                prop_assert!(largest.div_ceil(1 << (rounds - 1)) as u32 > AFFINE_TAIL);
            }
        }
    }
}
