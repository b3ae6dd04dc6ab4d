//! bellperson's proving functions over the cuzk pipeline (CPU backend).

use bellpepper_core::Circuit;
use cuzk_field::Scalar;
use cuzk_groth16::{
    synthesize_with_capacity, Capacity, ParameterSource, Parameters, Proof, ProvingAssignment,
};
use cuzk_pipeline::{Backend, CpuBackend, PartitionTiming, Prover, ProverConfig};
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;

/// Errors of proving: synthesis, bad parameters, an unsatisfied circuit, or a backend failure.
pub type ProveError = cuzk_pipeline::PipelineError;

/// Proves `circuit` with the given randomness `r` and `s` (bellperson's `create_proof`).
pub fn create_proof<P: ParameterSource, C: Circuit<Scalar> + Send>(
    circuit: C,
    params: P,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, ProveError> {
    Ok(create_proof_batch(vec![circuit], params, vec![r], vec![s])?.remove(0))
}

/// Proves `circuit` with `r` and `s` drawn from `rng` (r first, as bellperson draws them).
pub fn create_random_proof<P: ParameterSource, C: Circuit<Scalar> + Send, R: RngCore>(
    circuit: C,
    params: P,
    rng: &mut R,
) -> Result<Proof, ProveError> {
    Ok(create_random_proof_batch(vec![circuit], params, rng)?.remove(0))
}

/// Proves several circuits of the same shape, one `r` and `s` each.
pub fn create_proof_batch<P: ParameterSource, C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    params: P,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
) -> Result<Vec<Proof>, ProveError> {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    let params = params.parameters()?;
    Ok(
        create_proof_batch_with(&prover, circuits, &params, &r, &s, 0)?
            .into_iter()
            .map(|(p, _)| p)
            .collect(),
    )
}

/// Proves several circuits with `r`s then `s`s drawn from `rng`, as bellperson draws them.
pub fn create_random_proof_batch<P: ParameterSource, C: Circuit<Scalar> + Send, R: RngCore>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
) -> Result<Vec<Proof>, ProveError> {
    let r: Vec<Scalar> = circuits.iter().map(|_| Scalar::random(&mut *rng)).collect();
    let s: Vec<Scalar> = circuits.iter().map(|_| Scalar::random(&mut *rng)).collect();
    create_proof_batch(circuits, params, r, s)
}

/// Synthesises the circuits in parallel, then proves them with `prover`, returning each proof
/// with its stage timings.
pub fn create_proof_batch_with<B: Backend, C: Circuit<Scalar> + Send>(
    prover: &Prover<B>,
    circuits: Vec<C>,
    params: &Parameters,
    r: &[Scalar],
    s: &[Scalar],
    job: u64,
) -> Result<Vec<(Proof, PartitionTiming)>, ProveError> {
    // The parameters say how large each assignment will be: allocate it once, at that size.
    let capacity = Capacity::of(params);
    let assignments: Vec<ProvingAssignment> = circuits
        .into_par_iter()
        .map(|c| synthesize_with_capacity(c, capacity))
        .collect::<Result<_, _>>()?;
    prover.prove_batch(params, assignments, r, s, job)
}
