//! A query's split on the device: launch wrappers of `msm_split_count`, `msm_split_totals` and
//! `msm_split_scatter` (kernels/msm/split.cu) and the sequence that runs them; the gather kernels
//! run from the MSM driver's staging (`pippenger::Source::Gathered`).
//!
//! A Groth16 query pairs each of its bases with one variable's value; the zeros contribute
//! nothing, the ones are batch-added, only the others go to the tail MSM. The host split
//! (cuzk-pipeline's `split_query`) reads every value on the host; here the values are on the
//! device (uploaded once per partition), the query's membership is a bitmap over them, and the
//! split writes the ones' and others' base indices and the others' scalars into device buffers
//! that the batch addition and the tail MSM read in place. The outputs are the host split's, in
//! the same order.
#![allow(unsafe_code)]

use cuzk_field::Bitmap;

use super::exec::{as_bytes, blocks, u32_arg, Arg, Exec};
use super::pippenger::scan;
use super::plan::{MsmPlan, INT_BLOCK};
use super::GpuMsmError;

/// How many of a query's scalars fall in each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitTotals {
    /// The query's bases: the variables it has.
    pub members: usize,
    /// Bases whose scalar is one.
    pub ones: usize,
    /// Bases whose scalar is neither zero nor one.
    pub others: usize,
}

impl SplitTotals {
    /// Bases whose scalar is zero.
    pub fn zeros(&self) -> usize {
        self.members - self.ones - self.others
    }
}

/// A split between its count and its scatter: the bitmap's words and the scanned counts on the
/// device, and the totals.
pub(crate) struct Counted<B> {
    words: B,
    offsets: B,
    n_words: usize,
    pub(crate) totals: SplitTotals,
}

/// The buffers a split writes: `ones` (u32, at least `totals.ones`), `other_bases` (u32) and
/// `other_scalars` (32 bytes each), at least `totals.others` each.
pub(crate) struct SplitOut<'a, B> {
    pub(crate) ones: &'a B,
    pub(crate) other_bases: &'a B,
    pub(crate) other_scalars: &'a B,
}

/// Checks the inputs of a split: `members` has a bit per value, `values` holds `n_values`
/// scalars, and every count fits the kernels' 32-bit offsets.
fn check<E: Exec>(values: &E::Buf, n_values: usize, members: &Bitmap) -> Result<(), GpuMsmError> {
    if members.len() != n_values {
        return Err(crate::MsmError::BitmapLength {
            bits: members.len(),
            bases: n_values,
        }
        .into());
    }
    if E::size(values) < 32 * n_values {
        return Err(GpuMsmError::Internal(format!(
            "{n_values} values in a buffer of {} bytes",
            E::size(values)
        )));
    }
    // The scanned counts run up to members + ones + others <= 2·n_values.
    u32_arg(2 * n_values, "split offsets")?;
    Ok(())
}

/// Counts the members, ones and others of each word of `members` over the first `n_values`
/// scalars of `values` (Montgomery form), scans the counts and downloads the totals. `None` for
/// an empty bitmap.
pub(crate) fn split_count<E: Exec>(
    exec: &E,
    values: &E::Buf,
    n_values: usize,
    members: &Bitmap,
) -> Result<Option<Counted<E::Buf>>, GpuMsmError> {
    check::<E>(values, n_values, members)?;
    let n_words = n_values.div_ceil(64);
    if n_words == 0 {
        return Ok(None);
    }
    let mut words = exec.alloc(8 * n_words)?;
    // SAFETY: u64 has no padding.
    exec.upload(&mut words, unsafe { as_bytes(&members.words()[..n_words]) })?;
    let mut offsets = exec.alloc(4 * 3 * n_words)?;
    let n_words32 = u32_arg(n_words, "bitmap words")?;
    exec.launch(
        "msm_split_count",
        blocks(n_words, INT_BLOCK)?,
        INT_BLOCK,
        &[
            Arg::Buf(&offsets),
            Arg::Buf(&words),
            Arg::Buf(values),
            Arg::U64(n_values as u64),
            Arg::U32(n_words32),
        ],
    )?;
    let mut levels = MsmPlan::scan_levels(3 * n_words)
        .into_iter()
        .map(|len| exec.alloc(4 * len))
        .collect::<Result<Vec<_>, _>>()?;
    let (first, rest) = levels.split_first_mut().expect("at least one scan level");
    scan(exec, &mut offsets, 3 * n_words, first, rest)?;
    let totals_buf = exec.alloc(4 * 3)?;
    exec.launch(
        "msm_split_totals",
        1,
        1,
        &[
            Arg::Buf(&totals_buf),
            Arg::Buf(&offsets),
            Arg::Buf(&words),
            Arg::Buf(values),
            Arg::U64(n_values as u64),
            Arg::U32(n_words32),
        ],
    )?;
    let mut bytes = [0u8; 12];
    exec.download(&totals_buf, &mut bytes)?;
    let total = |i: usize| {
        u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("four bytes")) as usize
    };
    let totals = SplitTotals {
        members: total(0),
        ones: total(1),
        others: total(2),
    };
    if totals.members != members.count_ones() || totals.ones + totals.others > totals.members {
        return Err(GpuMsmError::Internal(format!(
            "the device split counted {totals:?} for {} members",
            members.count_ones()
        )));
    }
    Ok(Some(Counted {
        words,
        offsets,
        n_words,
        totals,
    }))
}

/// Writes the split `counted` counted into `out`, from the same `values`.
pub(crate) fn split_scatter<E: Exec>(
    exec: &E,
    counted: &Counted<E::Buf>,
    values: &E::Buf,
    n_values: usize,
    out: &SplitOut<'_, E::Buf>,
) -> Result<(), GpuMsmError> {
    let totals = counted.totals;
    if E::size(out.ones) < 4 * totals.ones
        || E::size(out.other_bases) < 4 * totals.others
        || E::size(out.other_scalars) < 32 * totals.others
    {
        return Err(GpuMsmError::Internal(format!(
            "split outputs too small for {totals:?}"
        )));
    }
    exec.launch(
        "msm_split_scatter",
        blocks(counted.n_words, INT_BLOCK)?,
        INT_BLOCK,
        &[
            Arg::Buf(out.ones),
            Arg::Buf(out.other_bases),
            Arg::Buf(out.other_scalars),
            Arg::Buf(&counted.offsets),
            Arg::Buf(&counted.words),
            Arg::Buf(values),
            Arg::U64(n_values as u64),
            Arg::U32(u32_arg(counted.n_words, "bitmap words")?),
        ],
    )
}

/// Device bytes a split over `n_values` values allocates for itself (beside its outputs): the
/// bitmap's words, the counts, their scan's tile sums and the totals.
pub fn split_scratch_bytes(n_values: usize) -> usize {
    let n_words = n_values.div_ceil(64);
    if n_words == 0 {
        return 0;
    }
    8 * n_words
        + 12 * n_words
        + MsmPlan::scan_levels(3 * n_words)
            .iter()
            .map(|len| 4 * len)
            .sum::<usize>()
        + 12
}

/// Device buffers a split allocates for itself (see [`split_scratch_bytes`]), for a caller that
/// rounds each up to its allocator's granule.
pub fn split_scratch_buffers(n_values: usize) -> usize {
    3 + MsmPlan::scan_levels(3 * n_values.div_ceil(64)).len()
}

#[cfg(feature = "cuda")]
pub use device::DeviceSplit;

#[cfg(feature = "cuda")]
mod device {
    use cuzk_field::layout::FrLimbs;
    use cuzk_field::Bitmap;
    use cuzk_gpu::{alloc_in, DeviceBuffer, Workspace};

    use super::super::exec::GpuBuf;
    use super::super::{GpuCurve, GpuMsm, GpuMsmError};
    use super::{split_count, split_scatter, SplitOut, SplitTotals};
    use crate::MsmError;

    /// A query's scalars split on the device ([`GpuMsm::split_in`]): the base indices of the
    /// ones, those of the others and the others' scalars (Montgomery form), each in the order
    /// of the variables, in device buffers from the caller's workspace (returned to it when
    /// this drops). Every index is below [`SplitTotals::members`].
    #[derive(Debug)]
    pub struct DeviceSplit {
        ones: DeviceBuffer<u32>,
        other_bases: DeviceBuffer<u32>,
        other_scalars: DeviceBuffer<FrLimbs>,
        totals: SplitTotals,
    }

    impl DeviceSplit {
        /// How many scalars fell in each kind.
        pub fn totals(&self) -> SplitTotals {
            self.totals
        }

        /// The others' scalars, in Montgomery form: the tail MSM's scalars, with
        /// [`Bases::Gathered`](super::super::Bases::Gathered) as its bases.
        pub fn other_scalars(&self) -> &DeviceBuffer<FrLimbs> {
            &self.other_scalars
        }

        /// The base indices of the others.
        pub(crate) fn other_bases(&self) -> &DeviceBuffer<u32> {
            &self.other_bases
        }

        /// Fails unless `n_bases` is the query's number of bases (its members): the split's
        /// indices are read on the device without a check.
        pub(crate) fn check_bases(&self, n_bases: usize) -> Result<(), GpuMsmError> {
            if n_bases == self.totals.members {
                Ok(())
            } else {
                Err(MsmError::LengthMismatch {
                    bases: n_bases,
                    scalars: self.totals.members,
                }
                .into())
            }
        }
    }

    impl GpuMsm {
        /// Splits a query's scalars on the device: `values` are every variable's value
        /// (blstrs scalars, Montgomery form, as [`GpuMsm::upload_scalars`] leaves them, on this
        /// [`GpuMsm`]'s stream or synchronised with it), `members` has a bit per value, set for
        /// the variables the query has (its bases are those variables, in order). The call's
        /// scratch ([`split_scratch_bytes`](super::split_scratch_bytes), in at most
        /// [`split_scratch_buffers`](super::split_scratch_buffers) buffers) and the split's
        /// outputs (4 bytes per one, 36 per other, three buffers) come from `workspace`.
        pub fn split_in(
            &self,
            workspace: &dyn Workspace,
            values: &DeviceBuffer<FrLimbs>,
            members: &Bitmap,
        ) -> Result<DeviceSplit, GpuMsmError> {
            let call = self.begin_call(Some(workspace));
            let exec = call.exec(None);
            let borrowed = GpuBuf::Borrowed(values);
            let counted = split_count(&exec, &borrowed, values.len(), members)?;
            let totals = counted
                .as_ref()
                .map_or_else(SplitTotals::default, |c| c.totals);
            // At least one element each (an empty buffer has no address), cut to the totals.
            let stream = self.stream();
            let ones = alloc_in::<u32>(workspace, stream, totals.ones.max(1))?;
            let other_bases = alloc_in::<u32>(workspace, stream, totals.others.max(1))?;
            let other_scalars = alloc_in::<FrLimbs>(workspace, stream, totals.others.max(1))?;
            if let Some(counted) = &counted {
                let out = (
                    GpuBuf::Borrowed(&ones),
                    GpuBuf::Borrowed(&other_bases),
                    GpuBuf::Borrowed(&other_scalars),
                );
                let out = SplitOut {
                    ones: &out.0,
                    other_bases: &out.1,
                    other_scalars: &out.2,
                };
                split_scatter(&exec, counted, &borrowed, values.len(), &out)?;
            }
            let mut split = DeviceSplit {
                ones,
                other_bases,
                other_scalars,
                totals,
            };
            split.ones.truncate(totals.ones);
            split.other_bases.truncate(totals.others);
            split.other_scalars.truncate(totals.others);
            Ok(split)
        }

        /// The sum of the bases of a split's ones, `bases` being the query's bases (resident,
        /// one per member of the split); the call's buffers come from `workspace`
        /// ([`batch_add_device_bytes`](super::super::batch_add_device_bytes) of the ones
        /// bound them).
        pub fn batch_add_ones_in<C: GpuCurve>(
            &self,
            workspace: &dyn Workspace,
            bases: &DeviceBuffer<C::AffineLimbs>,
            split: &DeviceSplit,
        ) -> Result<C::Projective, GpuMsmError> {
            split.check_bases(bases.len())?;
            let call = self.begin_call(Some(workspace));
            let (bases, ones) = (GpuBuf::Borrowed(bases), GpuBuf::Borrowed(&split.ones));
            super::super::batch::batch_add_device_indices::<_, C>(
                &call.exec(None),
                &bases,
                &ones,
                split.totals.ones,
            )
        }
    }
}
