//! The curve operations an MSM needs, written once for G1 and G2.

use std::fmt::Debug;

use blst::MultiPoint;
use cuzk_field::layout::{g1_affines_as_blst, g2_affines_as_blst};
use cuzk_field::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::{Curve, Group};

use crate::scalar::first_non_canonical;
use crate::MsmError;

/// A group an MSM runs in: BLS12-381 [`G1`] or [`G2`].
///
/// The trait ties the affine and projective (Jacobian) point types together and names every
/// operation the algorithms of this crate use, so each algorithm is written once and a GPU kernel
/// can be checked against the same sequence of operations:
///
/// - a point at infinity ([`identity`](Self::identity)), which in affine form is `x = y = 0`;
/// - mixed addition of an affine point into a projective accumulator
///   ([`add_assign_mixed`](Self::add_assign_mixed)) and its negation
///   ([`sub_assign_mixed`](Self::sub_assign_mixed)), the inner loop of bucket accumulation;
/// - projective addition and doubling, used by bucket reduction and window combination;
/// - scalar multiplication of one point, used by the naive oracle;
/// - blst's own parallel Pippenger and bulk addition, the fast path.
///
/// Every addition is complete: adding the point at infinity, a point to itself, or a point to its
/// negation gives the right answer (blst's `add_or_double` formulas).
pub trait MsmCurve: Debug + Send + Sync + 'static {
    /// Affine points, the form the bases are stored in.
    type Affine: PrimeCurveAffine<Scalar = Scalar, Curve = Self::Projective>;
    /// Projective (Jacobian) points, the form sums are accumulated in.
    type Projective: PrimeCurve<Scalar = Scalar, Affine = Self::Affine>;

    /// The group's name, for messages: `"G1"` or `"G2"`.
    const NAME: &'static str;

    /// The point at infinity.
    fn identity() -> Self::Projective {
        <Self::Projective as Group>::identity()
    }

    /// Whether `p` is the point at infinity.
    fn is_identity(p: &Self::Projective) -> bool {
        bool::from(p.is_identity())
    }

    /// `acc += p`, a mixed (projective + affine) addition.
    fn add_assign_mixed(acc: &mut Self::Projective, p: &Self::Affine) {
        *acc += p;
    }

    /// `acc -= p`, a mixed addition of `-p`.
    fn sub_assign_mixed(acc: &mut Self::Projective, p: &Self::Affine) {
        *acc -= p;
    }

    /// `acc += q`, a projective addition.
    fn add_assign(acc: &mut Self::Projective, q: &Self::Projective) {
        *acc += q;
    }

    /// `2·p`.
    fn double(p: &Self::Projective) -> Self::Projective {
        p.double()
    }

    /// `-p` in affine form.
    fn neg_affine(p: &Self::Affine) -> Self::Affine {
        -*p
    }

    /// `s·p` for one point (blst's single-point scalar multiplication).
    fn mul(p: &Self::Affine, s: &Scalar) -> Self::Projective {
        *p * s
    }

    /// The affine form of `p`.
    fn to_affine(p: &Self::Projective) -> Self::Affine {
        p.to_affine()
    }

    /// Affine forms of many points with one shared inversion.
    fn batch_to_affine(points: &[Self::Projective]) -> Vec<Self::Affine> {
        let mut out = vec![Self::Affine::identity(); points.len()];
        Self::Projective::batch_normalize(points, &mut out);
        out
    }

    /// `Σ sᵢ·Pᵢ` by blst's parallel Pippenger (`blst::MultiPoint::mult` with 255-bit scalars,
    /// on blst's own thread pool), with scalars as canonical little-endian bytes.
    ///
    /// Checks that the lengths agree and that every scalar is canonical (below the group order
    /// `r`), and returns the identity for no points (blst itself would index an empty slice).
    fn blst_msm(bases: &[Self::Affine], scalars: &[[u8; 32]])
        -> Result<Self::Projective, MsmError>;

    /// `Σ Pᵢ` by blst's bulk addition (`blst::MultiPoint::add`): pairwise affine additions with
    /// one Montgomery batch inversion per round, on blst's own thread pool for 384 points or
    /// more, on the calling thread below that. The identity for no points.
    fn blst_sum(bases: &[Self::Affine]) -> Self::Projective;
}

/// BLS12-381 G1: affine [`G1Affine`], projective [`G1Projective`], coordinates in Fp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum G1 {}

/// BLS12-381 G2: affine [`G2Affine`], projective [`G2Projective`], coordinates in Fp2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum G2 {}

fn g1_from_blst(p: blst::blst_p1) -> G1Projective {
    G1Projective::from_raw_unchecked(p.x.into(), p.y.into(), p.z.into())
}

fn g2_from_blst(p: blst::blst_p2) -> G2Projective {
    G2Projective::from_raw_unchecked(p.x.into(), p.y.into(), p.z.into())
}

fn check_blst_inputs(n_bases: usize, scalars: &[[u8; 32]]) -> Result<(), MsmError> {
    if n_bases != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: n_bases,
            scalars: scalars.len(),
        });
    }
    match first_non_canonical(scalars) {
        Some(index) => Err(MsmError::NonCanonicalScalar { index }),
        None => Ok(()),
    }
}

macro_rules! impl_msm_curve {
    ($curve:ty, $name:literal, $affine:ty, $projective:ty, $as_blst:path, $from_blst:path) => {
        impl MsmCurve for $curve {
            type Affine = $affine;
            type Projective = $projective;

            const NAME: &'static str = $name;

            fn blst_msm(bases: &[$affine], scalars: &[[u8; 32]]) -> Result<$projective, MsmError> {
                check_blst_inputs(bases.len(), scalars)?;
                if bases.is_empty() {
                    return Ok(<$projective as Group>::identity());
                }
                Ok($from_blst(
                    $as_blst(bases).mult(scalars.as_flattened(), 255),
                ))
            }

            fn blst_sum(bases: &[$affine]) -> $projective {
                if bases.is_empty() {
                    return <$projective as Group>::identity();
                }
                $from_blst($as_blst(bases).add())
            }
        }
    };
}

impl_msm_curve!(
    G1,
    "G1",
    G1Affine,
    G1Projective,
    g1_affines_as_blst,
    g1_from_blst
);
impl_msm_curve!(
    G2,
    "G2",
    G2Affine,
    G2Projective,
    g2_affines_as_blst,
    g2_from_blst
);
