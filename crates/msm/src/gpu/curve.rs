//! What the GPU code needs to know about G1 and G2: device layouts, kernel names, and how the
//! XYZZ points the kernels return become blstrs points.
#![allow(unsafe_code)]

use cuzk_field::layout::{
    g1_affines_as_limbs, g2_affines_as_limbs, FpLimbs, G1AffineLimbs, G2AffineLimbs,
};
use cuzk_field::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::Group as _;

use super::exec::as_bytes;
use super::plan::Group;
use super::GpuMsmError;
use crate::{MsmCurve, G1, G2};

/// Element types that can live in device memory: with the `cuda` feature, cuzk-gpu's
/// `DeviceCopy`; without it, anything (only the emulator holds them then).
#[cfg(feature = "cuda")]
pub trait DeviceElement: cuzk_gpu::DeviceCopy {}
#[cfg(feature = "cuda")]
impl<T: cuzk_gpu::DeviceCopy> DeviceElement for T {}
/// Element types that can live in device memory: with the `cuda` feature, cuzk-gpu's
/// `DeviceCopy`; without it, anything (only the emulator holds them then).
#[cfg(not(feature = "cuda"))]
pub trait DeviceElement {}
#[cfg(not(feature = "cuda"))]
impl<T> DeviceElement for T {}

/// A group with GPU kernels: [`G1`] or [`G2`].
pub trait GpuCurve: MsmCurve {
    /// An affine point as the kernels read it (blst's layout, infinity all zero).
    type AffineLimbs: DeviceElement + Copy + Default + Send + Sync + std::fmt::Debug + 'static;

    /// Which group this is.
    const GROUP: Group;

    /// Views affine points as their device layout, without copying.
    fn affines_as_limbs(points: &[Self::Affine]) -> &[Self::AffineLimbs];

    /// A point the kernels wrote in XYZZ coordinates (four coordinates, canonical Montgomery
    /// limbs, `ZZ = 0` for infinity) as a blstrs projective point.
    fn projective_from_xyzz(bytes: &[u8]) -> Result<Self::Projective, GpuMsmError>;
}

/// The kernels of one group (kernels/msm/msm.cu; split.cu for the gather, msm_test.cu for the
/// test kernels and probes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupKernels {
    pub(crate) accumulate: &'static str,
    pub(crate) merge: &'static str,
    pub(crate) reduce: &'static str,
    pub(crate) batch_bitmap: &'static str,
    pub(crate) batch_indices: &'static str,
    pub(crate) batch_range: &'static str,
    pub(crate) sum: &'static str,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) test: &'static str,
    pub(crate) affine_pairs: &'static str,
    pub(crate) affine_sums: &'static str,
    pub(crate) inv_up: &'static str,
    pub(crate) inv_down: &'static str,
    pub(crate) inv_top: &'static str,
    pub(crate) affine_buckets: &'static str,
    pub(crate) affine_reduce: &'static str,
    pub(crate) gather: &'static str,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) bench_madd: &'static str,
}

const G1_KERNELS: GroupKernels = GroupKernels {
    accumulate: "msm_accumulate_g1",
    merge: "msm_merge_g1",
    reduce: "msm_reduce_g1",
    batch_bitmap: "msm_batch_bitmap_g1",
    batch_indices: "msm_batch_indices_g1",
    batch_range: "msm_batch_range_g1",
    sum: "msm_sum_g1",
    #[cfg(any(test, feature = "testing"))]
    test: "msm_test_g1",
    affine_pairs: "msm_affine_pairs_g1",
    affine_sums: "msm_affine_sums_g1",
    inv_up: "msm_inv_up_g1",
    inv_down: "msm_inv_down_g1",
    inv_top: "msm_inv_top_g1",
    affine_buckets: "msm_affine_buckets_g1",
    affine_reduce: "msm_affine_reduce_g1",
    gather: "msm_gather_g1",
    #[cfg(any(test, feature = "testing"))]
    bench_madd: "msm_bench_madd_g1",
};

const G2_KERNELS: GroupKernels = GroupKernels {
    accumulate: "msm_accumulate_g2",
    merge: "msm_merge_g2",
    reduce: "msm_reduce_g2",
    batch_bitmap: "msm_batch_bitmap_g2",
    batch_indices: "msm_batch_indices_g2",
    batch_range: "msm_batch_range_g2",
    sum: "msm_sum_g2",
    #[cfg(any(test, feature = "testing"))]
    test: "msm_test_g2",
    affine_pairs: "msm_affine_pairs_g2",
    affine_sums: "msm_affine_sums_g2",
    inv_up: "msm_inv_up_g2",
    inv_down: "msm_inv_down_g2",
    inv_top: "msm_inv_top_g2",
    affine_buckets: "msm_affine_buckets_g2",
    affine_reduce: "msm_affine_reduce_g2",
    gather: "msm_gather_g2",
    #[cfg(any(test, feature = "testing"))]
    bench_madd: "msm_bench_madd_g2",
};

/// The kernels of `C`'s group.
pub(crate) fn kernels_of<C: GpuCurve>() -> &'static GroupKernels {
    match C::GROUP {
        Group::G1 => &G1_KERNELS,
        Group::G2 => &G2_KERNELS,
    }
}

/// Every kernel of the module, loaded once per device.
#[cfg(feature = "cuda")]
pub(crate) const KERNEL_NAMES: &[&str] = &[
    "msm_digits",
    "msm_digits_bins",
    "msm_scan_tiles",
    "msm_scan_add",
    "msm_scatter",
    "msm_sort_bins",
    "msm_sort_bin_buckets",
    "msm_sort_big",
    "msm_affine_stats",
    "msm_affine_slots",
    "msm_split_count",
    "msm_split_totals",
    "msm_split_scatter",
    "msm_gather_g1",
    "msm_gather_g2",
    "msm_accumulate_g1",
    "msm_merge_g1",
    "msm_reduce_g1",
    "msm_batch_bitmap_g1",
    "msm_batch_indices_g1",
    "msm_batch_range_g1",
    "msm_sum_g1",
    "msm_test_g1",
    "msm_affine_pairs_g1",
    "msm_affine_sums_g1",
    "msm_inv_up_g1",
    "msm_inv_down_g1",
    "msm_inv_top_g1",
    "msm_affine_buckets_g1",
    "msm_affine_reduce_g1",
    "msm_accumulate_g2",
    "msm_merge_g2",
    "msm_reduce_g2",
    "msm_batch_bitmap_g2",
    "msm_batch_indices_g2",
    "msm_batch_range_g2",
    "msm_sum_g2",
    "msm_test_g2",
    "msm_affine_pairs_g2",
    "msm_affine_sums_g2",
    "msm_inv_up_g2",
    "msm_inv_down_g2",
    "msm_inv_top_g2",
    "msm_affine_buckets_g2",
    "msm_affine_reduce_g2",
    "msm_test_fp",
    "msm_test_fp2",
    "msm_bench_fp_mul",
    "msm_bench_madd_g1",
    "msm_bench_madd_g2",
];

/// Affine points as the bytes the kernels read.
pub(crate) fn affine_bytes<C: GpuCurve>(points: &[C::Affine]) -> &[u8] {
    let limbs = C::affines_as_limbs(points);
    // SAFETY: G1AffineLimbs and G2AffineLimbs are `repr(C)` structs of `u32` arrays: no padding.
    unsafe { as_bytes(limbs) }
}

/// An Fp element from twelve little-endian limbs, checked canonical.
pub(crate) fn fp_from_le_bytes(bytes: &[u8]) -> Result<Fp, GpuMsmError> {
    let mut limbs = [0u32; 12];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(4)) {
        *limb = u32::from_le_bytes(chunk.try_into().expect("four bytes"));
    }
    Fp::try_from(FpLimbs(limbs)).map_err(|_| GpuMsmError::BadDeviceResult)
}

/// An Fp2 element from its two coordinates' limbs.
pub(crate) fn fp2_from_le_bytes(bytes: &[u8]) -> Result<Fp2, GpuMsmError> {
    Ok(Fp2::new(
        fp_from_le_bytes(&bytes[..48])?,
        fp_from_le_bytes(&bytes[48..96])?,
    ))
}

/// Jacobian coordinates `(X·ZZ·ZZZ², Y·ZZ³·ZZZ², ZZ·ZZZ)` of an XYZZ point: both describe
/// `x = X/ZZ`, `y = Y/ZZZ`, and no inversion is needed.
fn jacobian_of_xyzz<F: Field>(x: F, y: F, zz: F, zzz: F) -> (F, F, F) {
    let zzz2 = zzz.square();
    let zz3 = zz.square() * zz;
    (x * zz * zzz2, y * zz3 * zzz2, zz * zzz)
}

impl GpuCurve for G1 {
    type AffineLimbs = G1AffineLimbs;
    const GROUP: Group = Group::G1;

    fn affines_as_limbs(points: &[G1Affine]) -> &[G1AffineLimbs] {
        g1_affines_as_limbs(points)
    }

    fn projective_from_xyzz(bytes: &[u8]) -> Result<G1Projective, GpuMsmError> {
        let c = |i: usize| fp_from_le_bytes(&bytes[48 * i..48 * (i + 1)]);
        let (x, y, zz, zzz) = (c(0)?, c(1)?, c(2)?, c(3)?);
        if bool::from(zz.is_zero()) {
            return Ok(G1Projective::identity());
        }
        let (x, y, z) = jacobian_of_xyzz(x, y, zz, zzz);
        Ok(G1Projective::from_raw_unchecked(x, y, z))
    }
}

impl GpuCurve for G2 {
    type AffineLimbs = G2AffineLimbs;
    const GROUP: Group = Group::G2;

    fn affines_as_limbs(points: &[G2Affine]) -> &[G2AffineLimbs] {
        g2_affines_as_limbs(points)
    }

    fn projective_from_xyzz(bytes: &[u8]) -> Result<G2Projective, GpuMsmError> {
        let c = |i: usize| fp2_from_le_bytes(&bytes[96 * i..96 * (i + 1)]);
        let (x, y, zz, zzz) = (c(0)?, c(1)?, c(2)?, c(3)?);
        if bool::from(zz.is_zero()) {
            return Ok(G2Projective::identity());
        }
        let (x, y, z) = jacobian_of_xyzz(x, y, zz, zzz);
        Ok(G2Projective::from_raw_unchecked(x, y, z))
    }
}
