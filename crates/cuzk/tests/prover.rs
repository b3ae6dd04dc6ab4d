//! The prover on bad input (typed errors, never panics) and on random satisfiable R1CS.

use std::sync::OnceLock;

use cuzk::circuits::{SquaringChain, WithInputs};
use cuzk::field::Scalar;
use cuzk::groth16::{
    create_proof, generate_random_parameters, prepare_verifying_key, verify_proof, Parameters,
    Proof,
};
use cuzk::{Circuit, ConstraintSystem, Groth16Error, ProveError, SynthesisError};
use ff::Field;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn chain_params() -> &'static Parameters {
    static P: OnceLock<Parameters> = OnceLock::new();
    P.get_or_init(|| {
        generate_random_parameters(SquaringChain::new(Scalar::ONE, 12), &mut rng(1)).unwrap()
    })
}

/// Like `SquaringChain`, but claims a wrong square at one step.
#[derive(Clone)]
struct LyingChain;

impl Circuit<Scalar> for LyingChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(10u64)))?;
        cs.enforce(|| "x² = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn an_unsatisfied_circuit_is_an_error() {
    let params = generate_random_parameters(LyingChain, &mut rng(2)).unwrap();
    let err = create_proof(LyingChain, &params, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(
            err,
            ProveError::Groth16(Groth16Error::Unsatisfied { index: 0 })
        ),
        "{err}"
    );
}

#[test]
fn parameters_of_another_circuit_are_an_error() {
    // Same number of inputs, different size.
    let err = create_proof(
        SquaringChain::new(Scalar::ONE, 40),
        chain_params(),
        Scalar::ONE,
        Scalar::ONE,
    )
    .unwrap_err();
    assert!(
        matches!(err, ProveError::Groth16(Groth16Error::ParameterMismatch(_))),
        "{err}"
    );
    // Different number of public inputs.
    let err = create_proof(
        WithInputs::new(vec![Scalar::ONE; 3]),
        chain_params(),
        Scalar::ONE,
        Scalar::ONE,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ProveError::Groth16(Groth16Error::WrongInputCount {
                expected: 1,
                got: 3
            })
        ),
        "{err}"
    );
}

#[test]
fn a_failing_synthesis_is_an_error() {
    #[derive(Clone)]
    struct Fails;
    impl Circuit<Scalar> for Fails {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            cs.alloc(|| "x", || Err(SynthesisError::AssignmentMissing))?;
            Ok(())
        }
    }
    let err = create_proof(Fails, chain_params(), Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(
            err,
            ProveError::Groth16(Groth16Error::Synthesis(SynthesisError::AssignmentMissing))
        ),
        "{err}"
    );
    // bellperson users can keep `?` into SynthesisError.
    let as_bellperson: SynthesisError = err.into();
    assert!(matches!(as_bellperson, SynthesisError::AssignmentMissing));
}

#[test]
fn mismatched_batch_lengths_are_an_error() {
    let c = SquaringChain::new(Scalar::ONE, 12);
    let err = cuzk::create_proof_batch(
        vec![c.clone(), c],
        chain_params(),
        vec![Scalar::ONE],
        vec![Scalar::ONE; 2],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ProveError::BatchShape {
                assignments: 2,
                rs: 1,
                ss: 2
            }
        ),
        "{err}"
    );
}

fn valid_proof() -> &'static (Proof, Vec<Scalar>) {
    static P: OnceLock<(Proof, Vec<Scalar>)> = OnceLock::new();
    P.get_or_init(|| {
        let c = SquaringChain::new(Scalar::from(5u64), 12);
        let proof = create_proof(
            c.clone(),
            chain_params(),
            Scalar::from(11u64),
            Scalar::from(13u64),
        )
        .unwrap();
        (proof, c.public_inputs())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Flipping any bit of a valid proof makes reading fail or verification return false.
    #[test]
    fn a_flipped_proof_byte_never_verifies(byte in 0usize..192, bit in 0u8..8) {
        let (proof, inputs) = valid_proof();
        let pvk = prepare_verifying_key(&chain_params().vk);
        prop_assert!(verify_proof(&pvk, proof, inputs).unwrap());
        let mut bytes = proof.to_bytes();
        bytes[byte] ^= 1 << bit;
        if let Ok(bad) = Proof::from_bytes(&bytes) {
            prop_assert!(!verify_proof(&pvk, &bad, inputs).unwrap());
        }
    }
}

/// The (coefficient, variable) terms of a linear combination.
type Terms = Vec<(u64, usize)>;

/// A random satisfiable R1CS instance: random witness, each constraint `(Σ a)·(Σ b) = c` with
/// random sparse A, B and C forced through a fresh variable holding the product.
#[derive(Clone, Debug)]
struct RandomR1cs {
    inputs: Vec<Scalar>,
    witness: Vec<Scalar>,
    /// For each constraint, the (coefficient, variable) terms of A and B; variable `i` is
    /// `inputs[i]` for `i < inputs.len()`, else a witness value.
    terms: Vec<(Terms, Terms)>,
}

impl Circuit<Scalar> for RandomR1cs {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut vars = Vec::new();
        let mut values = Vec::new();
        for (i, x) in self.inputs.iter().enumerate() {
            vars.push(cs.alloc_input(|| format!("in{i}"), || Ok(*x))?);
            values.push(*x);
        }
        for (i, w) in self.witness.iter().enumerate() {
            vars.push(cs.alloc(|| format!("w{i}"), || Ok(*w))?);
            values.push(*w);
        }
        for (k, (a, b)) in self.terms.iter().enumerate() {
            let eval = |t: &[(u64, usize)]| {
                t.iter()
                    .map(|(c, v)| Scalar::from(*c) * values[*v % values.len()])
                    .sum::<Scalar>()
            };
            let product = eval(a) * eval(b);
            let out = cs.alloc(|| format!("p{k}"), || Ok(product))?;
            cs.enforce(
                || format!("c{k}"),
                |mut lc| {
                    for (c, v) in a {
                        lc = lc + (Scalar::from(*c), vars[*v % vars.len()]);
                    }
                    lc
                },
                |mut lc| {
                    for (c, v) in b {
                        lc = lc + (Scalar::from(*c), vars[*v % vars.len()]);
                    }
                    lc
                },
                |lc| lc + out,
            );
        }
        Ok(())
    }
}

fn r1cs() -> impl Strategy<Value = RandomR1cs> {
    let term = || proptest::collection::vec((0u64..4, 0usize..64), 1..4);
    (
        proptest::collection::vec(any::<u64>(), 0..4),
        proptest::collection::vec(any::<u64>(), 1..8),
        proptest::collection::vec((term(), term()), 1..24),
    )
        .prop_map(|(inputs, witness, terms)| RandomR1cs {
            inputs: inputs.into_iter().map(Scalar::from).collect(),
            witness: witness.into_iter().map(|w| Scalar::from(w % 3)).collect(),
            terms,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random satisfiable instances prove and verify (setup is the slow part, hence few cases).
    #[test]
    fn random_satisfiable_r1cs_proves_and_verifies(circuit in r1cs(), seed in any::<u64>()) {
        let mut rng = rng(seed);
        // Variables that occur in no constraint cannot be bound by the setup: skip such draws.
        let params = match generate_random_parameters(circuit.clone(), &mut rng) {
            Ok(p) => p,
            Err(Groth16Error::UnconstrainedVariable { .. }) => return Ok(()),
            Err(e) => panic!("setup failed: {e}"),
        };
        let proof = create_proof(circuit.clone(), &params, Scalar::random(&mut rng), Scalar::random(&mut rng)).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        prop_assert!(verify_proof(&pvk, &proof, &circuit.inputs).unwrap());
    }
}
