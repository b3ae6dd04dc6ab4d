//! Parameter generation from a circuit, for tests and benchmarks.
//!
//! This is a trusted setup run by one party who knows the toxic waste (α, β, γ, δ, τ): fine for
//! tests and benchmarks, never for production parameters. It produces exactly what bellperson's
//! `generate_parameters` produces for the same inputs (the same points, in the same order, with
//! the same omissions), so parameters from either work with both provers.
//!
//! The QAP polynomials are evaluated at τ through the Lagrange basis of the domain, in closed
//! form: `Lⱼ(τ) = Z(τ)/n · ωʲ/(τ − ωʲ)`, with one batch inversion, instead of an inverse FFT of
//! the powers of τ.

use crate::points::Points;
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{BatchInvert, Field};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::error::Groth16Error;
use crate::params::Parameters;
use crate::vk::VerifyingKey;

/// The toxic waste of a setup and the group generators it uses.
#[derive(Clone, Copy, Debug)]
pub struct ToxicWaste {
    /// Generator of G1 used for every G1 point.
    pub g1: G1Projective,
    /// Generator of G2 used for every G2 point.
    pub g2: G2Projective,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ.
    pub gamma: Scalar,
    /// δ.
    pub delta: Scalar,
    /// τ, the secret evaluation point.
    pub tau: Scalar,
}

impl ToxicWaste {
    /// Draws everything from `rng` in bellperson's order (g1, g2, α, β, γ, δ, τ), so the same
    /// seeded generator gives the same parameters as bellperson's `generate_random_parameters`.
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        Self {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

/// Generates parameters with toxic waste drawn from `rng` (see [`ToxicWaste::random`]).
pub fn generate_random_parameters<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters, Groth16Error> {
    generate_parameters_with(circuit, &ToxicWaste::random(rng))
}

/// bellperson's signature: generates parameters from explicit toxic waste.
#[allow(clippy::too_many_arguments)]
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    g1: G1Projective,
    g2: G2Projective,
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    tau: Scalar,
) -> Result<Parameters, Groth16Error> {
    generate_parameters_with(
        circuit,
        &ToxicWaste {
            g1,
            g2,
            alpha,
            beta,
            gamma,
            delta,
            tau,
        },
    )
}

type Terms = Vec<Vec<(Scalar, usize)>>;

/// For every variable, its (coefficient, constraint) pairs in A, B and C.
#[derive(Default)]
struct KeypairAssembly {
    num_constraints: usize,
    at_inputs: Terms,
    bt_inputs: Terms,
    ct_inputs: Terms,
    at_aux: Terms,
    bt_aux: Terms,
    ct_aux: Terms,
    error: Option<Groth16Error>,
}

impl ConstraintSystem<Scalar> for KeypairAssembly {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // No assignment is needed for setup, so the value is never computed.
        self.at_aux.push(vec![]);
        self.bt_aux.push(vec![]);
        self.ct_aux.push(vec![]);
        Ok(Variable::new_unchecked(Index::Aux(self.at_aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.at_inputs.push(vec![]);
        self.bt_inputs.push(vec![]);
        self.ct_inputs.push(vec![]);
        Ok(Variable::new_unchecked(Index::Input(
            self.at_inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let constraint = self.num_constraints;
        let mut record = |lc: LinearCombination<Scalar>, inputs: &mut Terms, aux: &mut Terms| {
            for (var, coeff) in lc.iter() {
                let (list, i) = match var.get_unchecked() {
                    Index::Input(i) => (&mut *inputs, i),
                    Index::Aux(i) => (&mut *aux, i),
                };
                match list.get_mut(i) {
                    Some(terms) => terms.push((*coeff, constraint)),
                    None => {
                        self.error.get_or_insert(Groth16Error::UnknownVariable {
                            constraint,
                            variable: format!("{:?}", var.get_unchecked()),
                        });
                    }
                }
            }
        };
        record(
            a(LinearCombination::zero()),
            &mut self.at_inputs,
            &mut self.at_aux,
        );
        record(
            b(LinearCombination::zero()),
            &mut self.bt_inputs,
            &mut self.bt_aux,
        );
        record(
            c(LinearCombination::zero()),
            &mut self.ct_inputs,
            &mut self.ct_aux,
        );
        self.num_constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// `[L₀(τ), …, Lₙ₋₁(τ)]`, the Lagrange basis of `domain` evaluated at `tau`.
fn lagrange_at(domain: &Domain, tau: Scalar) -> Result<Vec<Scalar>, Groth16Error> {
    let n = domain.n();
    let omegas = Domain::powers(domain.omega(), n);
    let mut denominators: Vec<Scalar> = omegas.par_iter().map(|w| tau - w).collect();
    if denominators.iter().any(|d| bool::from(d.is_zero())) {
        // τ in the domain happens with probability n/r; the setup cannot use such a τ.
        return Err(Groth16Error::UnexpectedIdentity);
    }
    denominators.par_chunks_mut(4096).for_each(|chunk| {
        chunk.batch_invert();
    });
    let scale = domain.z_at(tau) * domain.n_inv();
    Ok(omegas
        .par_iter()
        .zip(&denominators)
        .map(|(w, d)| scale * w * d)
        .collect())
}

fn eval_at(lagrange: &[Scalar], terms: &[(Scalar, usize)]) -> Scalar {
    terms.iter().map(|(coeff, j)| *coeff * lagrange[*j]).sum()
}

/// Bits per window of the fixed-base comb.
const COMB_BITS: usize = 8;

/// Fixed-base multiplication of one generator by many scalars, in parallel, to affine.
///
/// A comb: `table[w][j] = j·2^(8w)·G` for the 32 windows of a 256-bit scalar, so each product is
/// at most 32 mixed additions and no doublings (about 5× fewer group operations than wNAF). The
/// table is 8192 affine points (768 KiB in G1), built once per generator.
fn fixed_base<G>(base: G, scalars: &[Scalar]) -> Vec<G::AffineRepr>
where
    G: Curve<AffineRepr: Send + Sync + Default + Copy> + Group<Scalar = Scalar> + Send + Sync,
    G: for<'a> std::ops::AddAssign<&'a G::AffineRepr>,
{
    let windows = 256usize.div_ceil(COMB_BITS);
    let table: Vec<Vec<G::AffineRepr>> = (0..windows)
        .into_par_iter()
        .map(|w| {
            let step = (0..w * COMB_BITS).fold(base, |acc, _| acc.double());
            let mut proj = Vec::with_capacity(1 << COMB_BITS);
            let mut acc = G::identity();
            for _ in 0..1usize << COMB_BITS {
                proj.push(acc);
                acc += step;
            }
            let mut affine = vec![G::AffineRepr::default(); proj.len()];
            G::batch_normalize(&proj, &mut affine);
            affine
        })
        .collect();
    let mut out = vec![G::AffineRepr::default(); scalars.len()];
    out.par_chunks_mut(1024)
        .zip(scalars.par_chunks(1024))
        .for_each(|(out, scalars)| {
            let proj: Vec<G> = scalars
                .iter()
                .map(|s| {
                    let bytes = s.to_bytes_le();
                    let mut acc = G::identity();
                    for (w, window) in table.iter().enumerate() {
                        // COMB_BITS = 8: window w is byte w.
                        let digit = bytes[w] as usize;
                        if digit != 0 {
                            acc += &window[digit];
                        }
                    }
                    acc
                })
                .collect();
            G::batch_normalize(&proj, out);
        });
    out
}

/// Generates parameters from explicit toxic waste.
pub fn generate_parameters_with<C: Circuit<Scalar>>(
    circuit: C,
    waste: &ToxicWaste,
) -> Result<Parameters, Groth16Error> {
    let mut cs = KeypairAssembly::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.at_inputs.len() {
        cs.enforce(
            || "input constraint",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    if let Some(e) = cs.error.take() {
        return Err(e);
    }

    let domain =
        Domain::for_size(cs.num_constraints).map_err(|_| Groth16Error::DomainTooLarge {
            log_n: usize::BITS - cs.num_constraints.leading_zeros(),
        })?;
    let gamma_inv =
        Option::<Scalar>::from(waste.gamma.invert()).ok_or(Groth16Error::UnexpectedIdentity)?;
    let delta_inv =
        Option::<Scalar>::from(waste.delta.invert()).ok_or(Groth16Error::UnexpectedIdentity)?;
    let lagrange = lagrange_at(&domain, waste.tau)?;

    // h: τ^i · Z(τ) / δ for i in 0..n-1.
    let h_coeff = domain.z_at(waste.tau) * delta_inv;
    let h_scalars: Vec<Scalar> = Domain::powers(waste.tau, domain.n() - 1)
        .into_par_iter()
        .map(|p| p * h_coeff)
        .collect();

    // Per variable, inputs then aux: A(τ), B(τ), and the IC / L scalar.
    let evaluate = |at: &Terms, bt: &Terms, ct: &Terms, inv: Scalar| {
        at.par_iter()
            .zip(bt)
            .zip(ct)
            .map(|((a, b), c)| {
                let (a, b, c) = (
                    eval_at(&lagrange, a),
                    eval_at(&lagrange, b),
                    eval_at(&lagrange, c),
                );
                (a, b, (waste.beta * a + waste.alpha * b + c) * inv)
            })
            .collect::<Vec<_>>()
    };
    let inputs = evaluate(&cs.at_inputs, &cs.bt_inputs, &cs.ct_inputs, gamma_inv);
    let aux = evaluate(&cs.at_aux, &cs.bt_aux, &cs.ct_aux, delta_inv);
    let all = || inputs.iter().chain(&aux);
    let a_scalars: Vec<Scalar> = all().map(|v| v.0).collect();
    let b_scalars: Vec<Scalar> = all().map(|v| v.1).collect();
    let ic_scalars: Vec<Scalar> = inputs.iter().map(|v| v.2).collect();
    let l_scalars: Vec<Scalar> = aux.iter().map(|v| v.2).collect();
    if let Some(index) = l_scalars.iter().position(|s| bool::from(s.is_zero())) {
        return Err(Groth16Error::UnconstrainedVariable { index });
    }

    let nonzero_g1 = |v: Vec<G1Affine>| {
        v.into_iter()
            .filter(|p| !bool::from(p.is_identity()))
            .collect::<Vec<_>>()
    };
    let h = fixed_base(waste.g1, &h_scalars);
    let l = fixed_base(waste.g1, &l_scalars);
    let ic = fixed_base(waste.g1, &ic_scalars);
    let a = nonzero_g1(fixed_base(waste.g1, &a_scalars));
    let b_g1 = nonzero_g1(fixed_base(waste.g1, &b_scalars));
    let b_g2: Vec<G2Affine> = fixed_base(waste.g2, &b_scalars)
        .into_iter()
        .filter(|p: &G2Affine| !bool::from(p.is_identity()))
        .collect();

    let (g1, g2) = (waste.g1.to_affine(), waste.g2.to_affine());
    let vk = VerifyingKey::new(
        (g1 * waste.alpha).to_affine(),
        (g1 * waste.beta).to_affine(),
        (g2 * waste.beta).to_affine(),
        (g2 * waste.gamma).to_affine(),
        (g1 * waste.delta).to_affine(),
        (g2 * waste.delta).to_affine(),
        ic,
    );
    Ok(Parameters {
        vk,
        h: Points::new(h),
        l: Points::new(l),
        a: Points::new(a),
        b_g1: Points::new(b_g1),
        b_g2: Points::new(b_g2),
    })
}
