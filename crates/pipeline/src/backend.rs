//! Backends: where the heavy stages run.
//!
//! The prover is written once over this trait; the CPU backend runs everything on the host with
//! rayon, a GPU backend will run the same calls on a device. Every backend must give results
//! identical to the CPU backend: the proof is a pure function of its inputs and `r`, `s`.

use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_msm::{Selection, G1, G2};
use cuzk_ntt::Order;

use crate::PipelineError;

/// The operations the partition prover needs from a backend.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// A short name for spans and reports ("cpu", "gpu0").
    fn device(&self) -> &str;

    /// Computes the coefficients of `H = (a·b − c)/Z` from the evaluations `a`, `b`, `c` on
    /// `domain` (each exactly `domain.n()` long; they may be overwritten). Returns all `n`
    /// coefficients; the last is zero for a satisfied circuit.
    fn ntt_h(
        &self,
        domain: &Domain,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), PipelineError>;

    /// `Σ scalars[i]·bases[i]` in G1.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar])
        -> Result<G1Projective, PipelineError>;

    /// [`Backend::msm_g1`] consuming the scalars, so a backend may reuse their memory.
    fn msm_g1_owned(
        &self,
        bases: &[G1Affine],
        scalars: Vec<Scalar>,
    ) -> Result<G1Projective, PipelineError> {
        self.msm_g1(bases, &scalars)
    }

    /// `Σ scalars[i]·bases[i]` in G2.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar])
        -> Result<G2Projective, PipelineError>;

    /// `Σ bases[i]` over the given indices, in G1.
    fn batch_add_g1(
        &self,
        bases: &[G1Affine],
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError>;

    /// `Σ bases[i]` over the given indices, in G2.
    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError>;
}

/// The CPU backend: cuzk-ntt's parallel NTT and cuzk-msm's fast MSM, on rayon's pool.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn device(&self) -> &str {
        "cpu"
    }

    fn ntt_h(
        &self,
        domain: &Domain,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), PipelineError> {
        // Evaluations → coefficients (left in bit-reversed order), then → evaluations on the coset
        // (natural order): no explicit permutation pass is needed between the two transforms.
        cuzk_ntt::cpu::inverse_many(
            &mut [&mut *a, &mut *b, &mut *c],
            domain,
            Order::Natural,
            Order::BitReversed,
        )?;
        cuzk_ntt::cpu::coset_forward_many(
            &mut [&mut *a, &mut *b, &mut *c],
            domain,
            Order::BitReversed,
            Order::Natural,
        )?;
        let z_inv = domain.z_on_coset_inv();
        use rayon::prelude::*;
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .for_each(|((a, b), c)| {
                *a = (*a * b - c) * z_inv;
            });
        cuzk_ntt::cpu::coset_inverse(a, domain, Order::Natural, Order::Natural)?;
        Ok(())
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::fast::msm::<G1>(bases, scalars)?)
    }

    fn msm_g1_owned(
        &self,
        bases: &[G1Affine],
        scalars: Vec<Scalar>,
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::fast::msm_owned::<G1>(bases, scalars)?)
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<G2Projective, PipelineError> {
        Ok(cuzk_msm::fast::msm::<G2>(bases, scalars)?)
    }

    fn batch_add_g1(
        &self,
        bases: &[G1Affine],
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::batch_add::<G1>(
            bases,
            Selection::Indices(indices),
        )?)
    }

    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError> {
        Ok(cuzk_msm::batch_add::<G2>(
            bases,
            Selection::Indices(indices),
        )?)
    }
}
