//! Parameters for timing only: valid points of the right counts for a circuit, made in seconds
//! where a real setup of a 2^27 circuit takes hours. No proof made with them verifies.
//!
//! The provers' work depends on the counts of points and on the scalars, not on which points
//! they are, so these measure the prover exactly (`cuzk bench --timing-params`). The points are
//! small multiples of the generators (`k·G` for k = 1, 2, ...): on the curve, in the subgroup,
//! never the identity. Each parallel chunk makes its multiples by additions in Jacobian
//! coordinates and converts them with one shared inversion ([`to_affine_batch`]): group's default
//! `batch_normalize`, which blstrs keeps, inverts every point, and took a 2^27 circuit's
//! parameters (some 650 M points) past three minutes on 16 cores.

use std::marker::PhantomData;
use std::sync::Arc;

use cuzk_field::blstrs::{Fp, Fp2};
use cuzk_field::{Bitmap, Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rayon::prelude::*;

use crate::{Groth16Error, Parameters, PointSource, Points, ProvingAssignment, VerifyingKey};

/// Points per parallel chunk.
const CHUNK: usize = 1 << 16;

/// A point in Jacobian coordinates (x = X/Z², y = Y/Z³), as blst keeps them.
trait Jacobian: Curve + Group<Scalar = Scalar> + Send + Sync
where
    Self::AffineRepr: Default + Copy + Send + Sync,
{
    type Base: Field;
    fn xyz(&self) -> (Self::Base, Self::Base, Self::Base);
    fn affine(x: Self::Base, y: Self::Base) -> Self::AffineRepr;
}

impl Jacobian for G1Projective {
    type Base = Fp;
    fn xyz(&self) -> (Fp, Fp, Fp) {
        (self.x(), self.y(), self.z())
    }
    fn affine(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
}

impl Jacobian for G2Projective {
    type Base = Fp2;
    fn xyz(&self) -> (Fp2, Fp2, Fp2) {
        (self.x(), self.y(), self.z())
    }
    fn affine(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
}

/// `points` (none the identity) in affine form into `out`, with one field inversion for all
/// (Montgomery's trick over the Z coordinates).
fn to_affine_batch<P: Jacobian>(points: &[P], prefix: &mut Vec<P::Base>, out: &mut [P::AffineRepr])
where
    P::AffineRepr: Default + Copy + Send + Sync,
{
    // prefix[i] = z_0 · … · z_{i-1}
    prefix.clear();
    let mut acc = P::Base::ONE;
    for p in points {
        prefix.push(acc);
        acc *= p.xyz().2;
    }
    let mut inv = acc.invert().expect("no identity among the multiples");
    for ((p, before), o) in points.iter().zip(prefix.iter()).zip(out.iter_mut()).rev() {
        let (x, y, z) = p.xyz();
        let z_inv = inv * before;
        inv *= z;
        let z_inv2 = z_inv.square();
        *o = P::affine(x * z_inv2, y * z_inv2 * z_inv);
    }
}

/// `k·G` for k in `first..first + len`, made by additions in parallel chunks.
fn multiples<P: Jacobian>(first: u64, len: usize) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Default + Copy + Send + Sync,
{
    // Zeroed in parallel, so the pages are first touched by many threads, not one.
    let mut out = Vec::with_capacity(len);
    (0..len)
        .into_par_iter()
        .map(|_| P::AffineRepr::default())
        .collect_into_vec(&mut out);
    // Each worker keeps its chunk's Jacobian points (and the prefix products) from one chunk to
    // the next: a fresh allocation per chunk is a mapping made and torn down each time, whose
    // unmapping stops every thread's page faults.
    out.par_chunks_mut(CHUNK).enumerate().for_each_init(
        || (Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK)),
        |(projective, prefix), (i, chunk)| {
            let g = P::generator();
            // Mixed additions (an affine G): cheaper than adding two Jacobian points.
            let g_affine = g.to_affine();
            let mut acc = g * Scalar::from(first + (i * CHUNK) as u64);
            projective.clear();
            projective.extend((0..chunk.len()).map(|_| {
                let p = acc;
                acc += g_affine;
                p
            }));
            to_affine_batch(projective, prefix, chunk);
        },
    );
    out
}

/// Timing-only parameters for circuits shaped like `assignment` (its constraints, variables and
/// densities decide every count).
pub fn timing_parameters(assignment: &ProvingAssignment) -> Result<Parameters, Groth16Error> {
    timing_parameters_for(&CircuitShape {
        num_constraints: assignment.num_constraints(),
        num_inputs: assignment.input.len(),
        num_aux: assignment.aux.len(),
        a_aux_density: &assignment.a_aux_density,
        b_input_density: &assignment.b_input_density,
        b_aux_density: &assignment.b_aux_density,
    })
}

/// The counts and densities that decide a circuit's parameters' sizes.
#[derive(Clone, Copy, Debug)]
pub struct CircuitShape<'a> {
    /// Constraints, including one per public input.
    pub num_constraints: usize,
    /// Public inputs, including the constant one.
    pub num_inputs: usize,
    /// Private variables.
    pub num_aux: usize,
    /// Which private variables occur in A.
    pub a_aux_density: &'a Bitmap,
    /// Which public inputs occur in B.
    pub b_input_density: &'a Bitmap,
    /// Which private variables occur in B.
    pub b_aux_density: &'a Bitmap,
}

/// Timing-only parameters for circuits of `shape` (a pre-compiled circuit's counts, when no
/// assignment has been made).
pub fn timing_parameters_for(shape: &CircuitShape<'_>) -> Result<Parameters, Groth16Error> {
    let domain =
        Domain::for_size(shape.num_constraints).map_err(|_| Groth16Error::DomainTooLarge {
            log_n: shape.num_constraints.next_power_of_two().trailing_zeros(),
        })?;
    let h_len = domain.n() - 1;
    let l_len = shape.num_aux;
    let a_len = shape.num_inputs + shape.a_aux_density.count_ones();
    let b_len = shape.b_input_density.count_ones() + shape.b_aux_density.count_ones();
    let g1 = |first: u64, len: usize| multiples::<G1Projective>(first, len);
    let lazy_g1 =
        |first: u64, len: usize| Points::lazy(len, Arc::new(Multiples::<G1Projective>::new(first)));
    let g1_one = |k: u64| (G1Projective::generator() * Scalar::from(k)).to_affine();
    let g2_one = |k: u64| (G2Projective::generator() * Scalar::from(k)).to_affine();
    let vk = VerifyingKey {
        alpha_g1: g1_one(2),
        beta_g1: g1_one(3),
        beta_g2: g2_one(3),
        gamma_g2: g2_one(5),
        delta_g1: g1_one(7),
        delta_g2: g2_one(7),
        ic: g1(11, shape.num_inputs),
        _engine: PhantomData,
    };
    Ok(Parameters {
        vk,
        h: lazy_g1(1, h_len),
        l: lazy_g1(1 << 40, l_len),
        a: lazy_g1(2 << 40, a_len),
        b_g1: lazy_g1(3 << 40, b_len),
        b_g2: Points::lazy(b_len, Arc::new(Multiples::<G2Projective>::new(1))),
    })
}

/// A query of `first·G, (first + 1)·G, …`, made when read: timing parameters are never
/// held whole unless a host path asks for a query ([`Points::host`]), and a device copies the
/// queries it keeps block by block as they are made.
struct Multiples<P> {
    first: u64,
    _curve: PhantomData<fn() -> P>,
}

impl<P> Multiples<P> {
    fn new(first: u64) -> Self {
        Self {
            first,
            _curve: PhantomData,
        }
    }
}

impl<P: Jacobian> PointSource<P::AffineRepr> for Multiples<P>
where
    P::AffineRepr: Default + Copy + Send + Sync,
{
    fn read(&self, range: std::ops::Range<usize>) -> Result<Vec<P::AffineRepr>, Groth16Error> {
        Ok(multiples::<P>(self.first + range.start as u64, range.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesize;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};

    struct Square;

    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "x*x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn counts_follow_the_circuit_and_points_are_multiples_of_g() {
        let asg = synthesize(Square).unwrap();
        let p = timing_parameters(&asg).unwrap();
        let n = Domain::for_size(asg.num_constraints()).unwrap().n();
        assert_eq!(p.h.len(), n - 1);
        assert_eq!(p.l.len(), asg.aux.len());
        assert_eq!(p.vk.ic.len(), asg.input.len());
        // Made when read: a range equals the whole query's slice.
        assert_eq!(p.h.host_bytes(), 0);
        assert_eq!(p.h.read(1..3).unwrap(), p.h.host().unwrap()[1..3]);
        assert_eq!(
            p.h.host().unwrap()[0],
            G1Projective::generator().to_affine()
        );
        let big: Vec<cuzk_field::G1Affine> = multiples::<G1Projective>(5, 3 * CHUNK + 7);
        for (i, k) in [
            (0usize, 5u64),
            (CHUNK, 5 + CHUNK as u64),
            (3 * CHUNK + 6, 5 + 3 * CHUNK as u64 + 6),
        ] {
            assert_eq!(
                big[i],
                (G1Projective::generator() * Scalar::from(k)).to_affine()
            );
        }
        let g2: Vec<G2Affine> = multiples::<G2Projective>(9, CHUNK + 2);
        for (i, k) in [
            (0usize, 9u64),
            (CHUNK - 1, 8 + CHUNK as u64),
            (CHUNK + 1, 10 + CHUNK as u64),
        ] {
            assert_eq!(
                g2[i],
                (G2Projective::generator() * Scalar::from(k)).to_affine()
            );
        }
    }
}
