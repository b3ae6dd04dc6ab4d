//! Device layouts: `#[repr(C)]` limb structs byte-identical to blst's Montgomery form.
//!
//! blst stores an Fr element as four little-endian `u64` limbs of its Montgomery form and an Fp
//! element as six. On a little-endian host the same bytes read as eight (Fr) or twelve (Fp)
//! little-endian `u32` limbs, which is what the CUDA kernels use. The structs below name that
//! layout; host vectors of blstrs types are viewed as slices of them without conversion
//! ([`scalars_as_limbs`], [`g1_affines_as_limbs`], [`g2_affines_as_limbs`]).
//!
//! Affine points follow blst: `x` then `y`, and the point at infinity is `x = y = 0`.
//!
//! The one `unsafe` of this crate lives here: reinterpreting a slice of a `repr(transparent)`
//! blstrs type as a slice of its limbs. Compile-time assertions pin sizes and alignments.
#![allow(unsafe_code)]

use crate::{FieldError, Fp, Fp2, G1Affine, G2Affine, Scalar};

/// Fr's modulus `r` as little-endian `u32` limbs.
pub const FR_MODULUS: [u32; 8] = [
    0x0000_0001,
    0xffff_ffff,
    0xfffe_5bfe,
    0x53bd_a402,
    0x09a1_d805,
    0x3339_d808,
    0x299d_7d48,
    0x73ed_a753,
];

/// Fp's modulus `p` as little-endian `u32` limbs.
pub const FP_MODULUS: [u32; 12] = [
    0xffff_aaab,
    0xb9fe_ffff,
    0xb153_ffff,
    0x1eab_fffe,
    0xf6b0_f624,
    0x6730_d2a0,
    0xf385_12bf,
    0x6477_4b84,
    0x434b_acd7,
    0x4b1b_a7b6,
    0x397f_e69a,
    0x1a01_11ea,
];

/// An Fr element in Montgomery form, eight little-endian `u32` limbs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FrLimbs(pub [u32; 8]);

/// An Fp element in Montgomery form, twelve little-endian `u32` limbs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FpLimbs(pub [u32; 12]);

/// An Fp2 element `c0 + c1·u`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fp2Limbs {
    pub c0: FpLimbs,
    pub c1: FpLimbs,
}

/// A G1 affine point; infinity is `x = y = 0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G1AffineLimbs {
    pub x: FpLimbs,
    pub y: FpLimbs,
}

/// A G2 affine point; infinity is `x = y = 0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G2AffineLimbs {
    pub x: Fp2Limbs,
    pub y: Fp2Limbs,
}

const _: () = {
    use std::mem::{align_of, size_of};
    // The limb views read blst's u64 limbs as u32 limbs and bytes in little-endian order.
    assert!(
        cfg!(target_endian = "little"),
        "cuzk's device layouts assume a little-endian host"
    );
    assert!(size_of::<FrLimbs>() == 32 && size_of::<Scalar>() == 32);
    assert!(size_of::<FpLimbs>() == 48 && size_of::<Fp>() == 48);
    assert!(size_of::<Fp2Limbs>() == 96 && size_of::<Fp2>() == 96);
    assert!(size_of::<G1AffineLimbs>() == 96 && size_of::<G1Affine>() == 96);
    assert!(size_of::<G2AffineLimbs>() == 192 && size_of::<G2Affine>() == 192);
    assert!(size_of::<blst::blst_p1_affine>() == 96);
    assert!(size_of::<blst::blst_p2_affine>() == 192);
    // Viewing a blstrs slice as limbs needs the limbs' alignment to divide the source's.
    assert!(align_of::<Scalar>() % align_of::<FrLimbs>() == 0);
    assert!(align_of::<G1Affine>() % align_of::<G1AffineLimbs>() == 0);
    assert!(align_of::<G2Affine>() % align_of::<G2AffineLimbs>() == 0);
    assert!(align_of::<G1Affine>() == align_of::<blst::blst_p1_affine>());
    assert!(align_of::<G2Affine>() == align_of::<blst::blst_p2_affine>());
};

fn u64s_to_u32s<const N: usize, const M: usize>(words: [u64; N]) -> [u32; M] {
    debug_assert_eq!(2 * N, M);
    let mut out = [0u32; M];
    for (i, w) in words.iter().enumerate() {
        out[2 * i] = *w as u32;
        out[2 * i + 1] = (*w >> 32) as u32;
    }
    out
}

fn u32s_to_u64s<const M: usize, const N: usize>(limbs: [u32; M]) -> [u64; N] {
    debug_assert_eq!(2 * N, M);
    let mut out = [0u64; N];
    for (i, w) in out.iter_mut().enumerate() {
        *w = u64::from(limbs[2 * i]) | (u64::from(limbs[2 * i + 1]) << 32);
    }
    out
}

/// `a < b` for little-endian limb arrays of equal length.
fn less_than(a: &[u32], b: &[u32]) -> bool {
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x < y;
        }
    }
    false
}

impl From<Scalar> for FrLimbs {
    fn from(s: Scalar) -> Self {
        FrLimbs(u64s_to_u32s(blst::blst_fr::from(s).l))
    }
}

impl TryFrom<FrLimbs> for Scalar {
    type Error = FieldError;

    /// Fails when the Montgomery value is not below the modulus.
    fn try_from(limbs: FrLimbs) -> Result<Self, FieldError> {
        if !less_than(&limbs.0, &FR_MODULUS) {
            return Err(FieldError::NotCanonical("Fr"));
        }
        Ok(Scalar::from(blst::blst_fr {
            l: u32s_to_u64s(limbs.0),
        }))
    }
}

impl From<Fp> for FpLimbs {
    fn from(x: Fp) -> Self {
        FpLimbs(u64s_to_u32s(blst::blst_fp::from(x).l))
    }
}

impl TryFrom<FpLimbs> for Fp {
    type Error = FieldError;

    /// Fails when the Montgomery value is not below the modulus.
    fn try_from(limbs: FpLimbs) -> Result<Self, FieldError> {
        if !less_than(&limbs.0, &FP_MODULUS) {
            return Err(FieldError::NotCanonical("Fp"));
        }
        Ok(Fp::from_raw_unchecked(u32s_to_u64s(limbs.0)))
    }
}

impl From<Fp2> for Fp2Limbs {
    fn from(x: Fp2) -> Self {
        Fp2Limbs {
            c0: x.c0().into(),
            c1: x.c1().into(),
        }
    }
}

impl TryFrom<Fp2Limbs> for Fp2 {
    type Error = FieldError;

    fn try_from(limbs: Fp2Limbs) -> Result<Self, FieldError> {
        Ok(Fp2::new(Fp::try_from(limbs.c0)?, Fp::try_from(limbs.c1)?))
    }
}

impl From<G1Affine> for G1AffineLimbs {
    fn from(p: G1Affine) -> Self {
        g1_affines_as_limbs(std::slice::from_ref(&p))[0]
    }
}

impl From<G2Affine> for G2AffineLimbs {
    fn from(p: G2Affine) -> Self {
        g2_affines_as_limbs(std::slice::from_ref(&p))[0]
    }
}

impl G1AffineLimbs {
    /// The point, checked to be on the curve and in the subgroup.
    pub fn to_affine(&self) -> Result<G1Affine, FieldError> {
        if self.x == FpLimbs::default() && self.y == FpLimbs::default() {
            return Ok(G1Affine::default());
        }
        let p = G1Affine::from_raw_unchecked(Fp::try_from(self.x)?, Fp::try_from(self.y)?, false);
        if bool::from(p.is_on_curve()) && bool::from(p.is_torsion_free()) {
            Ok(p)
        } else {
            Err(FieldError::NotCanonical("G1 point"))
        }
    }
}

impl G2AffineLimbs {
    /// The point, checked to be on the curve and in the subgroup.
    pub fn to_affine(&self) -> Result<G2Affine, FieldError> {
        if self.x == Fp2Limbs::default() && self.y == Fp2Limbs::default() {
            return Ok(G2Affine::default());
        }
        let p = G2Affine::from_raw_unchecked(Fp2::try_from(self.x)?, Fp2::try_from(self.y)?, false);
        if bool::from(p.is_on_curve()) && bool::from(p.is_torsion_free()) {
            Ok(p)
        } else {
            Err(FieldError::NotCanonical("G2 point"))
        }
    }
}

/// Views a slice of scalars as their Montgomery limbs, without copying.
pub fn scalars_as_limbs(scalars: &[Scalar]) -> &[FrLimbs] {
    // SAFETY: `Scalar` is `repr(transparent)` over `blst_fr`, a `repr(C)` struct of `[u64; 4]`
    // Montgomery limbs; `FrLimbs` is `repr(C)` over `[u32; 8]` of the same size (asserted above)
    // with an alignment dividing `Scalar`'s, and every bit pattern is a valid `FrLimbs`. On a
    // little-endian host the `u32` limbs are the `u64` limbs' halves in order.
    unsafe { std::slice::from_raw_parts(scalars.as_ptr().cast::<FrLimbs>(), scalars.len()) }
}

/// Scalars converted in place to canonical little-endian integers: the storage of a
/// `Vec<Scalar>` reused for the 32-byte encodings blst's multi-scalar multiplication reads, so a
/// vector of 2^27 scalars (4 GiB) is not copied to be converted.
///
/// The values inside are no longer Montgomery-form field elements, so the vector is never handed
/// back as `Scalar`s; it is only read through [`CanonicalScalars::as_bytes`].
#[derive(Debug, Default)]
pub struct CanonicalScalars {
    storage: Vec<Scalar>,
}

impl CanonicalScalars {
    /// Converts `scalars` in place, in parallel.
    pub fn from_montgomery(mut scalars: Vec<Scalar>) -> Self {
        use rayon::prelude::*;
        scalars.par_chunks_mut(1 << 12).for_each(|chunk| {
            for s in chunk {
                let bytes = s.to_bytes_le();
                let mut l = [0u64; 4];
                for (limb, word) in l.iter_mut().zip(bytes.chunks_exact(8)) {
                    *limb = u64::from_le_bytes(word.try_into().expect("8-byte chunk"));
                }
                // The same bytes as `to_bytes_le`, stored where the Montgomery limbs were.
                *s = Scalar::from(blst::blst_fr { l });
            }
        });
        Self { storage: scalars }
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.storage.is_empty()
    }

    /// The canonical little-endian encodings.
    pub fn as_bytes(&self) -> &[[u8; 32]] {
        // SAFETY: `Scalar` is `repr(transparent)` over `blst_fr` (`[u64; 4]`, 32 bytes, asserted
        // above); `[u8; 32]` has the same size, alignment 1, and is valid for every bit pattern.
        // `from_montgomery` stored each canonical integer's little-endian limbs, which on this
        // little-endian host (asserted above) are exactly its 32 little-endian bytes.
        unsafe {
            std::slice::from_raw_parts(self.storage.as_ptr().cast::<[u8; 32]>(), self.storage.len())
        }
    }
}

/// Views a slice of G1 affine points as their limbs, without copying.
pub fn g1_affines_as_limbs(points: &[G1Affine]) -> &[G1AffineLimbs] {
    // SAFETY: `G1Affine` is `repr(transparent)` over `blst_p1_affine`, `repr(C)` of two `blst_fp`
    // (`[u64; 6]` each); `G1AffineLimbs` is `repr(C)` of two `[u32; 12]`, the same size with a
    // dividing alignment (asserted above), valid for every bit pattern.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast::<G1AffineLimbs>(), points.len()) }
}

/// Views a slice of G2 affine points as their limbs, without copying.
pub fn g2_affines_as_limbs(points: &[G2Affine]) -> &[G2AffineLimbs] {
    // SAFETY: as for G1: `G2Affine` is `repr(transparent)` over `blst_p2_affine`, `repr(C)` of
    // two `blst_fp2` (each two `blst_fp`), the same size as `G2AffineLimbs` (asserted above).
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast::<G2AffineLimbs>(), points.len()) }
}

/// Views G1 affine points as blst's own affine type, for blst's multi-scalar multiplication.
pub fn g1_affines_as_blst(points: &[G1Affine]) -> &[blst::blst_p1_affine] {
    // SAFETY: `G1Affine` is `repr(transparent)` over `blst_p1_affine` (same size and alignment,
    // asserted above), so the slices have identical layout.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

/// Views G2 affine points as blst's own affine type, for blst's multi-scalar multiplication.
pub fn g2_affines_as_blst(points: &[G2Affine]) -> &[blst::blst_p2_affine] {
    // SAFETY: `G2Affine` is `repr(transparent)` over `blst_p2_affine` (same size and alignment,
    // asserted above), so the slices have identical layout.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::{Field, PrimeField};
    use group::{prime::PrimeCurveAffine, Curve, Group};
    use proptest::prelude::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn limbs_of(bytes: &[u8]) -> Vec<u32> {
        bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn moduli_match_blstrs() {
        assert_eq!(limbs_of(Scalar::char().as_ref()), FR_MODULUS);
        assert_eq!(limbs_of(&Fp::char()), FP_MODULUS);
    }

    #[test]
    fn edge_scalars_round_trip() {
        for s in [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::ROOT_OF_UNITY,
        ] {
            assert_eq!(Scalar::try_from(FrLimbs::from(s)).unwrap(), s);
        }
        assert_eq!(
            Scalar::try_from(FrLimbs(FR_MODULUS)),
            Err(FieldError::NotCanonical("Fr"))
        );
        assert_eq!(
            Fp::try_from(FpLimbs(FP_MODULUS)),
            Err(FieldError::NotCanonical("Fp"))
        );
    }

    #[test]
    fn infinity_is_zero_limbs() {
        assert_eq!(
            G1AffineLimbs::from(G1Affine::identity()),
            G1AffineLimbs::default()
        );
        assert_eq!(
            G2AffineLimbs::from(G2Affine::identity()),
            G2AffineLimbs::default()
        );
        assert!(bool::from(
            G1AffineLimbs::default().to_affine().unwrap().is_identity()
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn scalars_and_points_round_trip(seed in any::<u64>()) {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let s = Scalar::random(&mut rng);
            let limbs = FrLimbs::from(s);
            prop_assert_eq!(scalars_as_limbs(&[s])[0], limbs);
            prop_assert_eq!(Scalar::try_from(limbs).unwrap(), s);

            let p1 = G1Projective::random(&mut rng).to_affine();
            prop_assert_eq!(G1AffineLimbs::from(p1).to_affine().unwrap(), p1);
            prop_assert_eq!(Fp::try_from(FpLimbs::from(p1.x())).unwrap(), p1.x());

            let p2 = G2Projective::random(&mut rng).to_affine();
            prop_assert_eq!(G2AffineLimbs::from(p2).to_affine().unwrap(), p2);
        }
    }

    #[test]
    fn canonical_scalars_are_the_little_endian_bytes() {
        let values: Vec<Scalar> = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::ROOT_OF_UNITY,
            Scalar::from(1u64 << 40),
        ]
        .into_iter()
        .chain((0..5000u64).map(|i| Scalar::from(i).pow_vartime([i + 3])))
        .collect();
        let canonical = CanonicalScalars::from_montgomery(values.clone());
        assert_eq!(canonical.len(), values.len());
        for (bytes, s) in canonical.as_bytes().iter().zip(&values) {
            assert_eq!(*bytes, s.to_bytes_le());
        }
    }

    #[test]
    fn off_curve_limbs_are_rejected() {
        let mut p = G1AffineLimbs::from(G1Affine::generator());
        p.y.0[0] ^= 1;
        assert!(p.to_affine().is_err());
    }

    use crate::{G1Projective, G2Projective};
}
