//! The built-in synthetic kind: a squaring chain of about 2^`log_size` constraints with two
//! public inputs, `x` (from the seed) and `y = x^(2^steps)`, proven as `partitions` partitions
//! (partition `k` with seed `seed + k`, like a PoRep's partitions: one circuit, several
//! witnesses; the proofs concatenated in order). Small sizes prove in milliseconds,
//! which makes it the kind for tests, load and benchmarks of the service itself; its parameters
//! are made by cuzk's setup from a fixed seed, so any process can rebuild the verifying key.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

use crate::EngineError;

/// The smallest and largest sizes accepted.
pub const LOG_SIZES: std::ops::RangeInclusive<u32> = 4..=24;

/// The most partitions a synthetic job may have.
pub const MAX_PARTITIONS: u32 = 256;

fn one() -> u32 {
    1
}

/// A synthetic job's input (`vanilla_proof` as JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticInput {
    /// log2 of the circuit's domain.
    pub log_size: u32,
    /// Chooses `x` (partition `k` uses `seed + k`).
    pub seed: u64,
    /// How many partitions (default 1).
    #[serde(default = "one")]
    pub partitions: u32,
}

impl SyntheticInput {
    /// Parses and checks the JSON of a synthetic job.
    pub fn parse(bytes: &[u8]) -> Result<Self, EngineError> {
        let input: Self = serde_json::from_slice(bytes).map_err(|e| {
            EngineError::InvalidRequest(format!(
                "synthetic input must be JSON {{\"log_size\": N, \"seed\": S, \"partitions\": P}}: {e}"
            ))
        })?;
        if !LOG_SIZES.contains(&input.log_size) {
            return Err(EngineError::InvalidRequest(format!(
                "synthetic log_size {} is outside {}..={}",
                input.log_size,
                LOG_SIZES.start(),
                LOG_SIZES.end()
            )));
        }
        if !(1..=MAX_PARTITIONS).contains(&input.partitions) {
            return Err(EngineError::InvalidRequest(format!(
                "synthetic partitions {} is outside 1..={MAX_PARTITIONS}",
                input.partitions
            )));
        }
        Ok(input)
    }

    /// Partition `k`: the same circuit with seed `seed + k`.
    pub fn partition(self, k: u32) -> Self {
        Self {
            seed: self.seed.wrapping_add(k as u64),
            partitions: 1,
            ..self
        }
    }

    /// The circuit's squarings: the domain minus room for the input constraints.
    pub fn steps(self) -> usize {
        (1usize << self.log_size) - 4
    }

    /// `x`.
    pub fn x(self) -> Scalar {
        Scalar::from(self.seed) + Scalar::from(3u64)
    }

    /// The public inputs `[x, y]` a verifier checks the proof against.
    pub fn public_inputs(self) -> Vec<Scalar> {
        let x = self.x();
        let mut y = x;
        for _ in 0..self.steps() {
            y = y.square();
        }
        vec![x, y]
    }

    /// The circuit.
    pub fn circuit(self) -> SyntheticCircuit {
        SyntheticCircuit {
            x: Some(self.x()),
            steps: self.steps(),
        }
    }
}

/// The synthetic kind's circuit: `x` squared `steps` times, `x` and the result public (the
/// CLI's `cuzk::circuits::SquaringChain` keeps `x` private).
#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    x: Option<Scalar>,
    steps: usize,
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut value = self.x;
        let x = cs.alloc_input(|| "x", || value.ok_or(SynthesisError::AssignmentMissing))?;
        let mut var = x;
        for _ in 0..self.steps {
            let next = value.map(|v| v.square());
            let n = cs.alloc(|| "v", || next.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "square", |lc| lc + var, |lc| lc + var, |lc| lc + n);
            var = n;
            value = next;
        }
        let y = cs.alloc_input(|| "y", || value.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + y);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_checked() {
        assert!(SyntheticInput::parse(br#"{"log_size":8,"seed":1}"#).is_ok());
        for bad in [
            &br#"{"log_size":3,"seed":1}"#[..],
            br#"{"log_size":40,"seed":1}"#,
            br#"{"log_size":8}"#,
            br#"{"log_size":8,"seed":1,"partitions":0}"#,
            br#"{"log_size":8,"seed":1,"extra":2}"#,
            b"not json",
        ] {
            assert!(SyntheticInput::parse(bad).is_err());
        }
    }

    #[test]
    fn circuit_fills_its_domain_and_holds() {
        let input = SyntheticInput {
            log_size: 8,
            seed: 5,
            partitions: 1,
        };
        let a = cuzk_groth16::synthesize(input.circuit()).unwrap();
        assert_eq!(a.num_constraints().next_power_of_two(), 256);
        assert!(a.first_unsatisfied().is_none());
        assert_eq!(&a.input[1..], &input.public_inputs()[..]);
    }
}
