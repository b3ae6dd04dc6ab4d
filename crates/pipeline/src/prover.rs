//! The partition prover over a backend.

use std::time::Instant;

use cuzk_field::{Domain, G1Projective, G2Projective, Scalar};
use cuzk_groth16::{Groth16Error, Parameters, Proof, ProvingAssignment};
use group::{prime::PrimeCurveAffine, Curve};

use crate::backend::{Backend, PartitionShape};
use crate::input::{values, Evaluations, PartitionInput};
use crate::query::{Stages, Witness};
use crate::stage::{PartitionTiming, Stage};
use crate::PipelineError;

/// How the prover behaves; passed in explicitly.
#[derive(Clone, Debug)]
pub struct ProverConfig {
    /// Check that every constraint holds before proving (an unsatisfied circuit gives an error
    /// instead of a proof that does not verify). On by default; costs one pass over a, b, c.
    pub check_satisfied: bool,
}

impl Default for ProverConfig {
    fn default() -> Self {
        Self {
            check_satisfied: true,
        }
    }
}

/// Who a partition belongs to, for spans and summaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobContext {
    /// The job (one proof request, possibly many partitions).
    pub job: u64,
    /// The worker proving it.
    pub worker: u64,
}

/// The partition prover.
#[derive(Clone, Debug, Default)]
pub struct Prover<B> {
    backend: B,
    config: ProverConfig,
}

/// Runs one stage inside its span and adds its duration to `timing`.
fn run_stage<T>(
    stage: Stage,
    ctx: JobContext,
    device: &str,
    timing: &mut PartitionTiming,
    f: impl FnOnce() -> Result<T, PipelineError>,
) -> Result<T, PipelineError> {
    let span = stage.span(ctx.job, timing.partition as u64, ctx.worker, device);
    let _entered = span.enter();
    let start = Instant::now();
    let out = f();
    timing.add(stage, start.elapsed());
    out
}

/// Checks that a partition's values fit `params` (every count the prover relies on).
fn validate(
    params: &Parameters,
    values: &Witness<'_>,
    domain: &Domain,
) -> Result<(), Groth16Error> {
    let mismatch = |what: &str, expected: usize, got: usize| {
        Groth16Error::ParameterMismatch(format!(
            "{what}: the parameters have {expected}, the circuit needs {got}"
        ))
    };
    if values.input.len() != params.vk.ic.len() {
        return Err(Groth16Error::WrongInputCount {
            expected: params.vk.ic.len().saturating_sub(1),
            got: values.input.len().saturating_sub(1),
        });
    }
    if params.h.len() != domain.n() - 1 {
        return Err(mismatch(
            "h points (domain size − 1)",
            params.h.len(),
            domain.n() - 1,
        ));
    }
    if params.l.len() != values.aux.len() {
        return Err(mismatch(
            "l points (private variables)",
            params.l.len(),
            values.aux.len(),
        ));
    }
    let a_len = values.input.len() + values.a_aux_density.count_ones();
    if params.a.len() != a_len {
        return Err(mismatch("a points", params.a.len(), a_len));
    }
    let b_len = values.b_input_density.count_ones() + values.b_aux_density.count_ones();
    if params.b_g1.len() != b_len {
        return Err(mismatch("b_g1 points", params.b_g1.len(), b_len));
    }
    if params.b_g2.len() != b_len {
        return Err(mismatch("b_g2 points", params.b_g2.len(), b_len));
    }
    if bool::from(params.vk.delta_g1.is_identity() | params.vk.delta_g2.is_identity()) {
        return Err(Groth16Error::UnexpectedIdentity);
    }
    Ok(())
}

impl<B: Backend> Prover<B> {
    /// A prover over `backend`.
    pub fn new(backend: B, config: ProverConfig) -> Self {
        Self { backend, config }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Proves one partition with the given `r` and `s`, from a full assignment or a
    /// pre-compiled circuit's witness ([`PartitionInput`]).
    pub fn prove(
        &self,
        params: &Parameters,
        input: impl Into<PartitionInput>,
        r: Scalar,
        s: Scalar,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), PipelineError> {
        let device = self.backend.device();
        let _partition_span = tracing::info_span!(
            "partition",
            job = ctx.job,
            partition = partition as u64,
            worker = ctx.worker,
            device
        )
        .entered();
        let mut t = PartitionTiming {
            partition,
            ..Default::default()
        };
        // Device time left over by an earlier partition that failed on this thread.
        let _ = crate::stage::take_device_time();
        let mut input = input.into();

        let domain = run_stage(Stage::Validate, ctx, device, &mut t, || {
            let rows = input.num_constraints();
            let domain = Domain::for_size(rows).map_err(|_| Groth16Error::DomainTooLarge {
                log_n: rows.next_power_of_two().trailing_zeros(),
            })?;
            if let PartitionInput::Assignment(asg) = &input {
                asg.check_shape()?;
            }
            validate(params, &values(&input), &domain)?;
            // A pre-compiled witness is checked row by row where its products are made.
            if let (PartitionInput::Assignment(asg), true) = (&input, self.config.check_satisfied) {
                asg.check_satisfied()?;
            }
            Ok(domain)
        })?;

        // The device stages run under the backend's permission (a GPU's interlock policy),
        // from the split on: a backend may split on the device, inside the reservation, so its
        // shape is bounded by the queries' lengths rather than counted from a split (validation
        // made the parameters' counts the assignment's).
        let shape = PartitionShape::bound(params);
        let phase = self.backend.device_phase(shape, ctx, partition)?;
        let sums = self.backend.query_sums(
            params,
            &values(&input),
            &mut Stages::new(ctx, device, &mut t),
        )?;

        // A full assignment's values are not needed any more: free them before the NTTs, whose
        // scratch then reuses their memory, so the peak is no higher than synthesis left it. A
        // witness's values make a, b, c, and are freed once they are made.
        let abc = run_stage(Stage::Products, ctx, device, &mut t, || match &mut input {
            PartitionInput::Assignment(asg) => {
                let evaluations = Evaluations::Vectors {
                    a: std::mem::take(&mut asg.a),
                    b: std::mem::take(&mut asg.b),
                    c: std::mem::take(&mut asg.c),
                };
                *asg = ProvingAssignment::default();
                self.backend.products(&domain, evaluations)
            }
            PartitionInput::Witness { circuit, witness } => self
                .backend
                .products(&domain, Evaluations::Products { circuit, witness }),
        })?;
        drop(input);

        let h = run_stage(Stage::NttH, ctx, device, &mut t, || {
            self.backend.ntt_h(&domain, abc)
        })?;

        let h_sum = run_stage(Stage::MsmH, ctx, device, &mut t, || {
            self.backend.msm_h(&params.h, h)
        })?;

        drop(phase);

        let proof = run_stage(Stage::Epilogue, ctx, device, &mut t, || {
            Ok(epilogue(
                params,
                EpilogueSums {
                    h: h_sum,
                    l: sums.l,
                    a: sums.a,
                    b1: sums.b1,
                    b2: sums.b2,
                },
                r,
                s,
            ))
        })?;
        t.device = crate::stage::take_device_time();
        tracing::debug!(summary = %t, "partition proved");
        Ok((proof, t))
    }

    /// Proves a batch of partitions of one circuit (one job), with one `r` and `s` each.
    pub fn prove_batch(
        &self,
        params: &Parameters,
        assignments: Vec<ProvingAssignment>,
        r: &[Scalar],
        s: &[Scalar],
        job: u64,
    ) -> Result<Vec<(Proof, PartitionTiming)>, PipelineError> {
        if assignments.len() != r.len() || assignments.len() != s.len() {
            return Err(PipelineError::BatchShape {
                assignments: assignments.len(),
                rs: r.len(),
                ss: s.len(),
            });
        }
        let ctx = JobContext { job, worker: 0 };
        assignments
            .into_iter()
            .zip(r.iter().zip(s))
            .enumerate()
            .map(|(i, (asg, (r, s)))| self.prove(params, asg, *r, *s, ctx, i))
            .collect()
    }
}

/// The query sums a proof is assembled from.
struct EpilogueSums {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b1: G1Projective,
    b2: G2Projective,
}

/// A = α + ΣA + r·δ₁; B = β₂ + ΣB₂ + s·δ₂; C = H + L + s·A + r·(β₁ + ΣB₁ + s·δ₁) − rs·δ₁.
fn epilogue(params: &Parameters, sums: EpilogueSums, r: Scalar, s: Scalar) -> Proof {
    let vk = &params.vk;
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let a = G1Projective::from(vk.alpha_g1) + sums.a + delta_g1 * r;
    let b = G2Projective::from(vk.beta_g2) + sums.b2 + G2Projective::from(vk.delta_g2) * s;
    let b1 = G1Projective::from(vk.beta_g1) + sums.b1 + delta_g1 * s;
    let c = sums.h + sums.l + a * s + b1 * r - delta_g1 * (r * s);
    let mut affine = [Default::default(); 2];
    G1Projective::batch_normalize(&[a, c], &mut affine);
    Proof::new(affine[0], b.to_affine(), affine[1])
}
