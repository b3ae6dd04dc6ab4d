//! Batch addition on the device: launch wrappers of `msm_batch_{bitmap,indices,range}_<g>` and
//! `msm_sum_<g>` (kernels/msm/msm.cu), and the sequence that runs them, over a host selection or
//! over indices already on the device (a device split's ones).
//!
//! One launch sums the selected bases in segments (one XYZZ partial sum per thread, mixed
//! additions); msm_sum then adds partial sums sixteen to a thread until at most
//! [`HOST_FINAL`] remain, which the host adds.
#![allow(unsafe_code)]

use cuzk_field::Bitmap;

use super::curve::{kernels_of, GpuCurve};
use super::exec::{as_bytes, blocks, u32_arg, Arg, Exec};
use super::pippenger::download_points;
use super::plan::POINT_BLOCK;
use super::GpuMsmError;
use crate::{MsmError, Selection};

/// Partial sums left for the host.
const HOST_FINAL: usize = 64;
/// Partial sums per thread of each msm_sum level.
const SUM_SEG: usize = 16;

/// Points per thread of the first launch: enough threads to fill the device (a thousand per
/// multiprocessor), at least 16 points each.
fn points_per_thread(n: usize, sm_count: u32) -> usize {
    n.div_ceil(1024 * sm_count.max(1) as usize).max(16)
}

/// Device bytes [`GpuMsm::batch_add`](super::GpuMsm::batch_add) allocates to sum `selected`
/// bases picked by [`Selection::Indices`] (or all of `selected` bases, [`Selection::All`], which
/// needs less) on a device of `sm_count` multiprocessors: the indices, the first launch's
/// partial sums and each `msm_sum` level's, all live until the call returns. A caller that
/// supplies the workspace reserves this much.
pub fn batch_add_device_bytes(group: super::Group, selected: usize, sm_count: u32) -> usize {
    if selected == 0 {
        return 0;
    }
    let xyzz = group.xyzz_bytes();
    let mut n = selected.div_ceil(points_per_thread(selected, sm_count));
    let mut bytes = 4 * selected + n * xyzz;
    while n > HOST_FINAL {
        n = n.div_ceil(SUM_SEG);
        bytes += n * xyzz;
    }
    bytes
}

/// Checks a selection against `n_bases` bases, as the CPU path does.
pub(crate) fn check_selection(n_bases: usize, selection: &Selection<'_>) -> Result<(), MsmError> {
    match selection {
        Selection::Bitmap(bitmap) if bitmap.len() != n_bases => Err(MsmError::BitmapLength {
            bits: bitmap.len(),
            bases: n_bases,
        }),
        Selection::Indices(indices) => match indices.iter().position(|&i| i as usize >= n_bases) {
            Some(position) => Err(MsmError::IndexOutOfRange {
                position,
                index: indices[position],
                bases: n_bases,
            }),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// `Σ_{i selected} bases[i]` for `n_bases` bases in the device layout of `C`.
pub(crate) fn batch_add<E: Exec, C: GpuCurve>(
    exec: &E,
    bases: &E::Buf,
    n_bases: usize,
    selection: Selection<'_>,
) -> Result<C::Projective, GpuMsmError> {
    check_selection(n_bases, &selection)?;
    let xyzz = C::GROUP.xyzz_bytes();
    let names = kernels_of::<C>();
    let sm = exec.sm_count();
    let (partials, n_partials) = match selection {
        Selection::All => {
            if n_bases == 0 {
                return Ok(C::identity());
            }
            let per_thread = points_per_thread(n_bases, sm);
            let n_threads = n_bases.div_ceil(per_thread);
            let out = exec.alloc(n_threads * xyzz)?;
            exec.launch(
                names.batch_range,
                blocks(n_threads, POINT_BLOCK)?,
                POINT_BLOCK,
                &[
                    Arg::Buf(&out),
                    Arg::Buf(bases),
                    Arg::U64(n_bases as u64),
                    Arg::U32(u32_arg(per_thread, "points per thread")?),
                    Arg::U32(u32_arg(n_threads, "threads")?),
                ],
            )?;
            (out, n_threads)
        }
        Selection::Indices(indices) => {
            if indices.is_empty() {
                return Ok(C::identity());
            }
            let mut dev_indices = exec.alloc(4 * indices.len())?;
            // SAFETY: u32 has no padding.
            exec.upload(&mut dev_indices, unsafe { as_bytes(indices) })?;
            let (out, n_threads) =
                launch_indices::<E, C>(exec, bases, &dev_indices, indices.len())?;
            // The indices must live until the kernel has run: the download waits for it.
            return finish::<E, C, _>(exec, out, n_threads, dev_indices);
        }
        Selection::Bitmap(bitmap) => {
            let (out, n_threads, words) = launch_bitmap::<E, C>(exec, bases, bitmap)?;
            return finish::<E, C, _>(exec, out, n_threads, words);
        }
    };
    finish::<E, C, _>(exec, partials, n_partials, ())
}

/// `Σ_{j < n} bases[indices[j]]` for `n` u32 indices in device memory, each below the number of
/// bases (the caller's guarantee: a device split's ranks are, see `split.rs`).
pub(crate) fn batch_add_device_indices<E: Exec, C: GpuCurve>(
    exec: &E,
    bases: &E::Buf,
    indices: &E::Buf,
    n: usize,
) -> Result<C::Projective, GpuMsmError> {
    if n == 0 {
        return Ok(C::identity());
    }
    if E::size(indices) < 4 * n {
        return Err(GpuMsmError::Internal(format!(
            "{n} indices in a buffer of {} bytes",
            E::size(indices)
        )));
    }
    let (out, n_threads) = launch_indices::<E, C>(exec, bases, indices, n)?;
    finish::<E, C, _>(exec, out, n_threads, ())
}

/// msm_batch_indices_<g> over the first `n` indices of `indices`: returns the partial sums and
/// their number.
fn launch_indices<E: Exec, C: GpuCurve>(
    exec: &E,
    bases: &E::Buf,
    indices: &E::Buf,
    n: usize,
) -> Result<(E::Buf, usize), GpuMsmError> {
    let per_thread = points_per_thread(n, exec.sm_count());
    let n_threads = n.div_ceil(per_thread);
    let out = exec.alloc(n_threads * C::GROUP.xyzz_bytes())?;
    exec.launch(
        kernels_of::<C>().batch_indices,
        blocks(n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &[
            Arg::Buf(&out),
            Arg::Buf(bases),
            Arg::Buf(indices),
            Arg::U32(u32_arg(n, "indices")?),
            Arg::U32(u32_arg(per_thread, "indices per thread")?),
            Arg::U32(u32_arg(n_threads, "threads")?),
        ],
    )?;
    Ok((out, n_threads))
}

/// msm_batch_bitmap_<g>: returns the partial sums, their number, and the uploaded words (which
/// must live until the kernel has run).
fn launch_bitmap<E: Exec, C: GpuCurve>(
    exec: &E,
    bases: &E::Buf,
    bitmap: &Bitmap,
) -> Result<(E::Buf, usize, E::Buf), GpuMsmError> {
    let xyzz = C::GROUP.xyzz_bytes();
    let words = bitmap.words();
    let mut dev_words = exec.alloc(8 * words.len().max(1))?;
    if !words.is_empty() {
        // SAFETY: u64 has no padding.
        exec.upload(&mut dev_words, unsafe { as_bytes(words) })?;
    }
    let n_words = bitmap.len().div_ceil(64);
    let words_per_thread = points_per_thread(bitmap.len(), exec.sm_count()).div_ceil(64);
    let n_threads = n_words.div_ceil(words_per_thread).max(1);
    let out = exec.alloc(n_threads * xyzz)?;
    exec.launch(
        kernels_of::<C>().batch_bitmap,
        blocks(n_threads, POINT_BLOCK)?,
        POINT_BLOCK,
        &[
            Arg::Buf(&out),
            Arg::Buf(bases),
            Arg::Buf(&dev_words),
            Arg::U64(bitmap.len() as u64),
            Arg::U32(u32_arg(words_per_thread, "words per thread")?),
            Arg::U32(u32_arg(n_threads, "threads")?),
        ],
    )?;
    Ok((out, n_threads, dev_words))
}

/// msm_sum_<g> until at most [`HOST_FINAL`] partial sums remain, then their sum on the host.
/// `keep_alive` holds inputs of the first launch until the download has waited for it.
fn finish<E: Exec, C: GpuCurve, K>(
    exec: &E,
    mut partials: E::Buf,
    mut n: usize,
    keep_alive: K,
) -> Result<C::Projective, GpuMsmError> {
    let xyzz = C::GROUP.xyzz_bytes();
    let mut previous = Vec::new();
    while n > HOST_FINAL {
        let n_threads = n.div_ceil(SUM_SEG);
        let out = exec.alloc(n_threads * xyzz)?;
        exec.launch(
            kernels_of::<C>().sum,
            blocks(n_threads, POINT_BLOCK)?,
            POINT_BLOCK,
            &[
                Arg::Buf(&out),
                Arg::Buf(&partials),
                Arg::U32(u32_arg(n, "partial sums")?),
                Arg::U32(SUM_SEG as u32),
                Arg::U32(u32_arg(n_threads, "threads")?),
            ],
        )?;
        previous.push(std::mem::replace(&mut partials, out));
        n = n_threads;
    }
    let points = download_points::<E, C>(exec, &partials)?;
    drop(previous);
    drop(keep_alive);
    let mut sum = C::identity();
    for p in &points {
        C::add_assign(&mut sum, p);
    }
    Ok(sum)
}
