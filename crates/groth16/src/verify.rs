//! Verification: `e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ)`, checked as one multi-Miller loop
//! and one final exponentiation; and randomised batch verification of many proofs under one key.

use std::marker::PhantomData;

use cuzk_field::{G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::Field;
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;

use crate::engine::{Bls12, Engine};
use crate::error::Groth16Error;
use crate::proof::Proof;
use crate::vk::VerifyingKey;

/// A verifying key with its pairing-friendly precomputations.
pub struct PreparedVerifyingKey<E: Engine = Bls12> {
    /// `e(α, β)`.
    pub alpha_g1_beta_g2: Gt,
    /// `-γ`, prepared for the Miller loop.
    pub neg_gamma_g2: G2Prepared,
    /// `-δ`, prepared for the Miller loop.
    pub neg_delta_g2: G2Prepared,
    /// The IC points of the key, in projective form for the input sum.
    pub ic: Vec<G1Projective>,
    _engine: PhantomData<E>,
}

impl<E: Engine> std::fmt::Debug for PreparedVerifyingKey<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedVerifyingKey")
            .field("ic_len", &self.ic.len())
            .finish()
    }
}

/// Prepares a verifying key for [`verify_proof`] and [`verify_proofs_batch`].
pub fn prepare_verifying_key<E: Engine>(vk: &VerifyingKey<E>) -> PreparedVerifyingKey<E> {
    PreparedVerifyingKey {
        alpha_g1_beta_g2: Bls12::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: G2Prepared::from(-vk.gamma_g2),
        neg_delta_g2: G2Prepared::from(-vk.delta_g2),
        ic: vk.ic.iter().map(G1Projective::from).collect(),
        _engine: PhantomData,
    }
}

use pairing::Engine as _;

/// `IC₀ + Σ xᵢ·ICᵢ₊₁`, after checking the input count.
fn input_sum<E: Engine>(
    pvk: &PreparedVerifyingKey<E>,
    inputs: &[Scalar],
) -> Result<G1Projective, Groth16Error> {
    if inputs.len() + 1 != pvk.ic.len() {
        return Err(Groth16Error::WrongInputCount {
            expected: pvk.ic.len().saturating_sub(1),
            got: inputs.len(),
        });
    }
    if inputs.is_empty() {
        // blst's multi-exponentiation indexes its first point: never call it on nothing.
        return Ok(pvk.ic[0]);
    }
    Ok(pvk.ic[0] + G1Projective::multi_exp(&pvk.ic[1..], inputs))
}

/// Verifies one proof against its public inputs (without the leading constant one).
///
/// Returns `Ok(false)` for a proof that does not verify, and an error for inputs of the wrong
/// count.
pub fn verify_proof<E: Engine>(
    pvk: &PreparedVerifyingKey<E>,
    proof: &Proof<E>,
    public_inputs: &[Scalar],
) -> Result<bool, Groth16Error> {
    let acc = input_sum(pvk, public_inputs)?.to_affine();
    let b = G2Prepared::from(proof.b);
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Verifies many proofs under one key at once: with random 128-bit weights `zⱼ`, checks
/// `Π e(zⱼ·Aⱼ, Bⱼ) = e(α, β)^{Σzⱼ} · e(Σ zⱼ·accⱼ, γ) · e(Σ zⱼ·Cⱼ, δ)`.
///
/// `true` means every proof verifies, except with probability about 2^-128; on `false`, verify
/// them one by one to find the bad ones.
pub fn verify_proofs_batch<E: Engine, R: RngCore>(
    pvk: &PreparedVerifyingKey<E>,
    rng: &mut R,
    proofs: &[&Proof<E>],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool, Groth16Error> {
    if proofs.is_empty() {
        return Err(Groth16Error::NoProofs);
    }
    if proofs.len() != public_inputs.len() {
        return Err(Groth16Error::LengthMismatch {
            what: "public input vectors per proof",
            expected: proofs.len(),
            got: public_inputs.len(),
        });
    }
    if proofs.len() == 1 {
        return verify_proof(pvk, proofs[0], &public_inputs[0]);
    }
    let weights: Vec<Scalar> = proofs
        .iter()
        .map(|_| {
            let mut bytes = [0u8; 32];
            rng.fill_bytes(&mut bytes[..16]);
            Option::from(Scalar::from_bytes_le(&bytes)).expect("128-bit values are canonical")
        })
        .collect();
    let mut acc_inputs = G1Projective::identity();
    let mut acc_c = G1Projective::identity();
    let mut weighted_a = Vec::with_capacity(proofs.len());
    let mut prepared_b = Vec::with_capacity(proofs.len());
    let mut weight_sum = Scalar::ZERO;
    for ((proof, inputs), z) in proofs.iter().zip(public_inputs).zip(&weights) {
        acc_inputs += input_sum(pvk, inputs)? * z;
        acc_c += proof.c * z;
        weighted_a.push((proof.a * z).to_affine());
        prepared_b.push(G2Prepared::from(proof.b));
        weight_sum += z;
    }
    let acc_inputs = acc_inputs.to_affine();
    let acc_c = acc_c.to_affine();
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = weighted_a.iter().zip(&prepared_b).collect();
    terms.push((&acc_inputs, &pvk.neg_gamma_g2));
    terms.push((&acc_c, &pvk.neg_delta_g2));
    let lhs = Bls12::multi_miller_loop(&terms).final_exponentiation();
    Ok(lhs == pvk.alpha_g1_beta_g2 * weight_sum)
}
