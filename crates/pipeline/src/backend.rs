//! Backends: where the heavy stages run.
//!
//! The prover is written once over this trait; the CPU backend runs everything on the host with
//! rayon; the GPU backend (`gpu`, feature `cuda`) runs the same calls on a device. Every backend must give results
//! identical to the CPU backend: the proof is a pure function of its inputs and `r`, `s`.

use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_groth16::{Parameters, Points};
use cuzk_msm::{Selection, G1, G2};
use cuzk_ntt::Order;
use group::Group;

use crate::input::Evaluations;
use crate::query::{Query, QuerySums, Stages, Witness};
use crate::split::{gather, split_query, SplitQuery};
use crate::stage::Stage;
use crate::{JobContext, PipelineError};

/// The operations the partition prover needs from a backend.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// A short name for spans and reports ("cpu", "gpu0").
    fn device(&self) -> &str;

    /// The evaluations `a`, `b`, `c` where the backend keeps them between
    /// [`Backend::products`] and [`Backend::ntt_h`]: host vectors for the CPU, one device
    /// buffer for a GPU.
    type Abc: Send;

    /// The coefficients of `H` where the backend keeps them between [`Backend::ntt_h`] and
    /// [`Backend::msm_h`]: host memory for the CPU, device memory for a GPU, so that the vector
    /// (4 GiB at 2^27) does not go back and forth between the two stages.
    type H: Send;

    /// `a`, `b`, `c` on `domain`, each `domain.n()` long (zero past the constraints), where
    /// [`Backend::ntt_h`] reads them: host vectors moved there, or a pre-compiled circuit's
    /// products computed there with every row checked (an unsatisfied row is
    /// `Groth16Error::Unsatisfied`).
    fn products(
        &self,
        domain: &Domain,
        evaluations: Evaluations<'_>,
    ) -> Result<Self::Abc, PipelineError>;

    /// Computes the coefficients of `H = (a·b − c)/Z` from the evaluations on `domain`, all but
    /// the last (which is zero for a satisfied circuit and has no parameter point):
    /// `domain.n() − 1` coefficients.
    fn ntt_h(&self, domain: &Domain, abc: Self::Abc) -> Result<Self::H, PipelineError>;

    /// `Σ hᵢ·bases[i]` over the coefficients [`Backend::ntt_h`] computed (`bases` is the
    /// parameters' `h` query, as long as they are).
    fn msm_h(&self, bases: &Points<G1Affine>, h: Self::H) -> Result<G1Projective, PipelineError>;

    /// The sums of the queries over the partition's values (L, A, B₁, B₂): each query's
    /// scalars split into zero, one and other (`split_vectors`), the others' bases gathered
    /// (`prep_msm`), the ones' bases batch-added (`batch_add`) and the tail MSMs over the others
    /// (`tail_msm`), each step run as its stage through `stages`. The backend does its own
    /// splitting and gathering; the default is the host path ([`host_query_sums`]: split and
    /// gather on the host, sums through [`Backend::batch_add_g1`] and the others).
    fn query_sums(
        &self,
        params: &Parameters,
        witness: &Witness<'_>,
        stages: &mut Stages<'_>,
    ) -> Result<QuerySums, PipelineError> {
        let mut sums = QuerySums::default();
        host_query_sums(self, params, witness, &Query::ALL, stages, &mut sums)?;
        Ok(sums)
    }

    /// Waits until this backend may run a partition's device stages (`split_vectors` to
    /// `msm_h`) of the given sizes, and returns what holds that permission until dropped. The CPU has
    /// nothing to wait for; a GPU asks its interlock policy for the memory those stages take.
    fn device_phase(
        &self,
        _shape: PartitionShape,
        _ctx: JobContext,
        _partition: usize,
    ) -> Result<DevicePhase, PipelineError> {
        Ok(DevicePhase::free())
    }

    /// `Σ scalars[i]·bases[i]` in G1.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar])
        -> Result<G1Projective, PipelineError>;

    /// `Σ scalars[i]·bases[i]` in G2.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar])
        -> Result<G2Projective, PipelineError>;

    /// `Σ bases[i]` over the given indices of a query, in G1.
    fn batch_add_g1(
        &self,
        bases: &Points<G1Affine>,
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError>;

    /// `Σ bases[i]` over the given indices of a query, in G2.
    fn batch_add_g2(
        &self,
        bases: &Points<G2Affine>,
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError>;
}

/// The sizes of a partition's device stages, bounded before its vectors are split (the split
/// may run on the device, inside the reservation): what a backend needs to reserve their memory
/// before the first of them starts ([`Backend::device_phase`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionShape {
    /// The evaluation domain's size: `a`, `b`, `c` and `h` have this many elements.
    pub domain: usize,
    /// The values the queries are split over (input ‖ aux).
    pub values: usize,
    /// At most the points of the largest G1 tail MSM (L, A or B₁ over its other scalars): the
    /// largest G1 query's length.
    pub tail_g1: usize,
    /// At most the points of the G2 tail MSM (B₂ over its other scalars): B's length.
    pub tail_g2: usize,
    /// At most the bases of the largest batch addition (the ones of L, A or B), and of the
    /// largest query's split: the largest query's length.
    pub ones: usize,
}

impl PartitionShape {
    /// The shape of every partition proving with `params` (whose counts a partition's
    /// assignment must match to be proven at all): the queries' lengths bound what their split
    /// can give, every scalar of a query other (neither zero nor one) or every one a one.
    pub fn bound(params: &Parameters) -> Self {
        let longest = Query::ALL
            .map(|q| q.n_bases(params))
            .into_iter()
            .max()
            .unwrap_or(0);
        Self {
            domain: params.h.len() + 1,
            values: params.vk.ic.len() + params.l.len(),
            tail_g1: longest,
            tail_g2: Query::B.n_bases(params),
            ones: longest,
        }
    }
}

/// A partition's permission to run its device stages ([`Backend::device_phase`]): released when
/// dropped.
#[must_use = "the permission ends when this is dropped"]
pub struct DevicePhase(Option<Box<dyn Send>>);

impl DevicePhase {
    /// No permission was needed.
    pub fn free() -> Self {
        Self(None)
    }

    /// A permission held by `guard` until this is dropped.
    pub fn held(guard: impl Send + 'static) -> Self {
        Self(Some(Box::new(guard)))
    }
}

impl std::fmt::Debug for DevicePhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "DevicePhase(held)"
        } else {
            "DevicePhase(free)"
        })
    }
}

/// Generates a forwarding `Backend` impl for a pointer type, so that several provers (workers)
/// can share one backend.
macro_rules! forward_backend {
    ($($ptr:ty),*) => {$(
        impl<B: Backend + ?Sized> Backend for $ptr {
            type Abc = B::Abc;
            type H = B::H;

            fn device(&self) -> &str {
                (**self).device()
            }

            fn products(&self, domain: &Domain, evaluations: Evaluations<'_>) -> Result<Self::Abc, PipelineError> {
                (**self).products(domain, evaluations)
            }

            fn ntt_h(&self, domain: &Domain, abc: Self::Abc) -> Result<Self::H, PipelineError> {
                (**self).ntt_h(domain, abc)
            }

            fn msm_h(&self, bases: &Points<G1Affine>, h: Self::H) -> Result<G1Projective, PipelineError> {
                (**self).msm_h(bases, h)
            }

            fn query_sums(&self, params: &Parameters, witness: &Witness<'_>, stages: &mut Stages<'_>) -> Result<QuerySums, PipelineError> {
                (**self).query_sums(params, witness, stages)
            }

            fn device_phase(&self, shape: PartitionShape, ctx: JobContext, partition: usize) -> Result<DevicePhase, PipelineError> {
                (**self).device_phase(shape, ctx, partition)
            }

            fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, PipelineError> {
                (**self).msm_g1(bases, scalars)
            }

            fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, PipelineError> {
                (**self).msm_g2(bases, scalars)
            }

            fn batch_add_g1(&self, bases: &Points<G1Affine>, indices: &[u32]) -> Result<G1Projective, PipelineError> {
                (**self).batch_add_g1(bases, indices)
            }

            fn batch_add_g2(&self, bases: &Points<G2Affine>, indices: &[u32]) -> Result<G2Projective, PipelineError> {
                (**self).batch_add_g2(bases, indices)
            }
        }
    )*};
}

forward_backend!(&B, std::sync::Arc<B>);

/// The CPU backend: cuzk-ntt's parallel NTT and cuzk-msm's fast MSM, on rayon's pool.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn device(&self) -> &str {
        "cpu"
    }

    type Abc = cuzk_pce::Abc;
    type H = Vec<Scalar>;

    fn products(
        &self,
        domain: &Domain,
        evaluations: Evaluations<'_>,
    ) -> Result<Self::Abc, PipelineError> {
        evaluations.into_vectors(domain.n())
    }

    fn ntt_h(&self, domain: &Domain, abc: Self::Abc) -> Result<Vec<Scalar>, PipelineError> {
        let (mut a, mut b, mut c) = abc;
        for v in [&a, &b, &c] {
            if v.len() != domain.n() {
                return Err(cuzk_ntt::NttError::LengthMismatch {
                    expected: domain.n(),
                    got: v.len(),
                }
                .into());
            }
        }
        // Evaluations → coefficients (left in bit-reversed order), then → evaluations on the coset
        // (natural order): no explicit permutation pass is needed between the two transforms.
        cuzk_ntt::cpu::inverse_many(
            &mut [&mut a, &mut b, &mut c],
            domain,
            Order::Natural,
            Order::BitReversed,
        )?;
        cuzk_ntt::cpu::coset_forward_many(
            &mut [&mut a, &mut b, &mut c],
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
        drop((b, c));
        cuzk_ntt::cpu::coset_inverse(&mut a, domain, Order::Natural, Order::Natural)?;
        a.truncate(domain.n() - 1);
        Ok(a)
    }

    fn msm_h(
        &self,
        bases: &Points<G1Affine>,
        h: Vec<Scalar>,
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::fast::msm_owned::<G1>(&bases.host()?, h)?)
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::fast::msm::<G1>(bases, scalars)?)
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
        bases: &Points<G1Affine>,
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError> {
        Ok(cuzk_msm::batch_add::<G1>(
            &bases.host()?,
            Selection::Indices(indices),
        )?)
    }

    fn batch_add_g2(
        &self,
        bases: &Points<G2Affine>,
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError> {
        Ok(cuzk_msm::batch_add::<G2>(
            &bases.host()?,
            Selection::Indices(indices),
        )?)
    }
}

/// The host path of [`Backend::query_sums`] for `queries`, added into `sums`: the queries split
/// on the host in parallel (`split_vectors`), their others' bases gathered (`prep_msm`), then the
/// ones' sums and the tail MSMs through `backend`'s `batch_add_*` and `msm_*`.
pub fn host_query_sums<B: Backend + ?Sized>(
    backend: &B,
    params: &Parameters,
    witness: &Witness<'_>,
    queries: &[Query],
    stages: &mut Stages<'_>,
    sums: &mut QuerySums,
) -> Result<(), PipelineError> {
    use rayon::prelude::*;
    let splits: Vec<(Query, SplitQuery)> = stages.run(Stage::SplitVectors, || {
        Ok(queries
            .par_iter()
            .map(|&q| (q, split_query(&q.segments(witness))))
            .collect())
    })?;
    let bases = stages.run(Stage::PrepMsm, || {
        splits
            .par_iter()
            .map(|(q, split)| {
                let g1 = q.points(params).host()?;
                let g2 = match q {
                    Query::B => Some(gather(&params.b_g2.host()?, &split.other_bases)),
                    _ => None,
                };
                Ok((gather(&g1, &split.other_bases), g2))
            })
            .collect::<Result<Vec<_>, PipelineError>>()
    })?;
    let ones = stages.run(Stage::BatchAdd, || {
        splits
            .iter()
            .map(|(q, split)| {
                let g1 = backend.batch_add_g1(q.points(params), &split.ones)?;
                let g2 = match q {
                    Query::B => Some(backend.batch_add_g2(&params.b_g2, &split.ones)?),
                    _ => None,
                };
                Ok((g1, g2))
            })
            .collect::<Result<Vec<_>, PipelineError>>()
    })?;
    stages.run(Stage::TailMsm, || {
        for (((q, split), (g1_bases, g2_bases)), (g1_ones, g2_ones)) in
            splits.iter().zip(&bases).zip(ones)
        {
            let g1 = g1_ones + backend.msm_g1(g1_bases, &split.other_scalars)?;
            match q {
                Query::L => sums.l += g1,
                Query::A => sums.a += g1,
                Query::B => {
                    sums.b1 += g1;
                    let g2_bases = g2_bases.as_deref().unwrap_or_default();
                    let g2 = backend.msm_g2(g2_bases, &split.other_scalars)?;
                    sums.b2 += g2 + g2_ones.unwrap_or_else(G2Projective::identity);
                }
            }
        }
        Ok(())
    })
}
