//! Built-in circuits for tests, benchmarks and golden files.
//!
//! - [`SquaringChain`]: `x, x², x⁴, …`, the last value public;
//! - [`WithInputs`]: several public inputs, each multiplied by its neighbour;
//! - [`PorepShaped`]: a circuit shaped like a PoRep partition: bit decompositions, booleanity and
//!   XOR constraints, packing into words and a multiplicative chain, so most assignment values
//!   are zero or one and a few are large;
//! - [`UnusedVariables`]: variables that occur only in C or only in B, and a public input that
//!   occurs in no constraint of its own.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// `x, x², x⁴, …` for `steps` squarings; the last value is the one public input.
#[derive(Clone, Debug)]
pub struct SquaringChain {
    x: Scalar,
    steps: usize,
}

impl SquaringChain {
    /// A chain starting at `x`.
    pub fn new(x: Scalar, steps: usize) -> Self {
        Self { x, steps }
    }

    /// The public inputs a proof of this circuit verifies against.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut v = self.x;
        for _ in 0..self.steps {
            v = v.square();
        }
        vec![v]
    }
}

impl Circuit<Scalar> for SquaringChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut value = self.x;
        let mut var = cs.alloc(|| "x", || Ok(value))?;
        for i in 0..self.steps {
            let next_value = value.square();
            let next = cs.alloc(|| format!("x^(2^{})", i + 1), || Ok(next_value))?;
            cs.enforce(
                || format!("square {i}"),
                |lc| lc + var,
                |lc| lc + var,
                |lc| lc + next,
            );
            value = next_value;
            var = next;
        }
        let out = cs.alloc_input(|| "out", || Ok(value))?;
        cs.enforce(|| "out", |lc| lc + var, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// Public inputs `x₀ … xₖ₋₁`; for each `i`, a private `yᵢ = xᵢ·xᵢ₊₁ + 1`.
#[derive(Clone, Debug)]
pub struct WithInputs {
    inputs: Vec<Scalar>,
}

impl WithInputs {
    /// The circuit over these public inputs (at least one).
    pub fn new(inputs: Vec<Scalar>) -> Self {
        Self { inputs }
    }

    /// The public inputs a proof of this circuit verifies against.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        self.inputs.clone()
    }
}

impl Circuit<Scalar> for WithInputs {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let vars = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, x)| cs.alloc_input(|| format!("x{i}"), || Ok(*x)))
            .collect::<Result<Vec<_>, _>>()?;
        let k = vars.len();
        for i in 0..k {
            let j = (i + 1) % k;
            let y = self.inputs[i] * self.inputs[j] + Scalar::ONE;
            let yv = cs.alloc(|| format!("y{i}"), || Ok(y))?;
            cs.enforce(
                || format!("y{i} = x{i}·x{j} + 1"),
                |lc| lc + vars[i],
                |lc| lc + vars[j],
                |lc| lc + yv - CS::one(),
            );
        }
        Ok(())
    }
}

/// A circuit shaped like a PoRep partition, with about `2^log_size` constraints (never more).
///
/// Each block allocates two 32-bit words as bits (booleanity constraints `b·(1−b) = 0`), their
/// XOR bit by bit (`2a·b = a + b − c`), packs the XOR into a word, and multiplies the word into
/// a running product. The final product is the public input. Values are drawn from a seeded
/// generator, so the same `(log_size, seed)` always gives the same assignment.
#[derive(Clone, Debug)]
pub struct PorepShaped {
    log_size: u32,
    seed: u64,
}

/// Constraints per block: 64 booleanity + 32 XOR + 1 packing + 1 product.
const BLOCK_CONSTRAINTS: usize = 98;

impl PorepShaped {
    /// The circuit for a `2^log_size` domain (`log_size` at least 8).
    pub fn new(log_size: u32, seed: u64) -> Self {
        Self {
            log_size: log_size.max(8),
            seed,
        }
    }

    fn blocks(&self) -> usize {
        // Leave room for the output constraint and the one input constraint per public input
        // (the constant one and the output).
        ((1usize << self.log_size) - 3) / BLOCK_CONSTRAINTS
    }

    fn words(&self) -> Vec<(u32, u32)> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        (0..self.blocks())
            .map(|_| (rng.next_u32(), rng.next_u32()))
            .collect()
    }

    /// The public inputs a proof of this circuit verifies against.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut acc = Scalar::ONE;
        for (a, b) in self.words() {
            acc *= Scalar::from(u64::from(a ^ b)) + Scalar::ONE;
        }
        vec![acc]
    }
}

fn alloc_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    word: u32,
) -> Result<Vec<Variable>, SynthesisError> {
    (0..32)
        .map(|i| {
            let bit = Scalar::from(u64::from(word >> i & 1));
            let v = cs.alloc(|| "bit", || Ok(bit))?;
            cs.enforce(|| "boolean", |lc| lc + v, |lc| lc + CS::one() - v, |lc| lc);
            Ok(v)
        })
        .collect()
}

impl Circuit<Scalar> for PorepShaped {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut acc_value = Scalar::ONE;
        let mut acc = CS::one();
        for (k, (a, b)) in self.words().into_iter().enumerate() {
            let a_bits = alloc_bits(cs, a)?;
            let b_bits = alloc_bits(cs, b)?;
            let c = a ^ b;
            let mut packed = LinearCombination::<Scalar>::zero();
            let mut coeff = Scalar::ONE;
            for i in 0..32 {
                let bit = Scalar::from(u64::from(c >> i & 1));
                let cv = cs.alloc(|| "xor", || Ok(bit))?;
                cs.enforce(
                    || "xor",
                    |lc| lc + (Scalar::from(2u64), a_bits[i]),
                    |lc| lc + b_bits[i],
                    |lc| lc + a_bits[i] + b_bits[i] - cv,
                );
                packed = packed + (coeff, cv);
                coeff = coeff.double();
            }
            // word + 1, so that a zero word does not zero the product.
            let word_value = Scalar::from(u64::from(c)) + Scalar::ONE;
            let word = cs.alloc(|| "word", || Ok(word_value))?;
            cs.enforce(
                || "pack",
                |lc| lc + &packed + CS::one(),
                |lc| lc + CS::one(),
                |lc| lc + word,
            );
            let next_value = acc_value * word_value;
            let next = cs.alloc(|| format!("product {k}"), || Ok(next_value))?;
            cs.enforce(|| "product", |lc| lc + acc, |lc| lc + word, |lc| lc + next);
            acc = next;
            acc_value = next_value;
        }
        let out = cs.alloc_input(|| "out", || Ok(acc_value))?;
        cs.enforce(|| "out", |lc| lc + acc, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// Variables that occur only in C, only in B, or (a public input) in no constraint of its own.
#[derive(Clone, Debug)]
pub struct UnusedVariables {
    x: Scalar,
    y: Scalar,
    idle_input: Scalar,
}

impl UnusedVariables {
    /// The circuit over private `x`, `y` and a public input that no constraint uses.
    pub fn new(x: Scalar, y: Scalar, idle_input: Scalar) -> Self {
        Self { x, y, idle_input }
    }

    /// The public inputs a proof of this circuit verifies against.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        vec![self.idle_input, self.x * self.y]
    }
}

impl Circuit<Scalar> for UnusedVariables {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let _idle = cs.alloc_input(|| "idle", || Ok(self.idle_input))?;
        let x = cs.alloc(|| "x", || Ok(self.x))?;
        let y = cs.alloc(|| "y", || Ok(self.y))?;
        let z = cs.alloc_input(|| "z", || Ok(self.x * self.y))?;
        cs.enforce(|| "x·y = z", |lc| lc + x, |lc| lc + y, |lc| lc + z);
        // `only_c` occurs in C alone: no A or B density.
        let only_c = cs.alloc(|| "only in C", || Ok(self.x))?;
        cs.enforce(
            || "x·1 = only_c",
            |lc| lc + x,
            |lc| lc + CS::one(),
            |lc| lc + only_c,
        );
        // `only_b` occurs in B alone; `w` in C alone; a zero-valued variable too.
        let only_b = cs.alloc(|| "only in B", || Ok(self.y + Scalar::ONE))?;
        let w = cs.alloc(|| "w", || Ok(self.y + Scalar::ONE))?;
        cs.enforce(
            || "1·only_b = w",
            |lc| lc + CS::one(),
            |lc| lc + only_b,
            |lc| lc + w,
        );
        let zero = cs.alloc(|| "zero", || Ok(Scalar::ZERO))?;
        cs.enforce(|| "zero·y = 0", |lc| lc + zero, |lc| lc + y, |lc| lc);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porep_shaped_fits_its_domain() {
        for log in [8u32, 10, 12] {
            let c = PorepShaped::new(log, 1);
            let asg = cuzk_groth16::synthesize(c).unwrap();
            assert!(
                asg.num_constraints() <= 1 << log,
                "{} > 2^{log}",
                asg.num_constraints()
            );
            assert!(asg.num_constraints() > 1 << (log - 1));
            asg.check_satisfied().unwrap();
            let trivial = asg
                .aux
                .iter()
                .filter(|v| **v == Scalar::ZERO || **v == Scalar::ONE)
                .count();
            assert!(
                trivial * 10 > asg.aux.len() * 9,
                "most values are zero or one"
            );
        }
    }
}

/// One of the built-in circuits, named by a spec string (for golden files and benchmarks):
/// `squaring_chain:X:STEPS`, `with_inputs:K`, `porep_shaped:LOG_SIZE:SEED`,
/// `unused_variables:X:Y:IDLE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuiltIn {
    /// [`SquaringChain`] from `x` with `steps` squarings.
    SquaringChain { x: u64, steps: usize },
    /// [`WithInputs`] with inputs `1000·i + 7` for `i` in `1..=k`.
    WithInputs { k: usize },
    /// [`PorepShaped`].
    PorepShaped { log_size: u32, seed: u64 },
    /// [`UnusedVariables`].
    UnusedVariables { x: u64, y: u64, idle: u64 },
}

/// A spec string that names no built-in circuit.
#[derive(Debug, thiserror::Error)]
#[error("unknown circuit spec {0:?}: expected squaring_chain:X:STEPS, with_inputs:K, porep_shaped:LOG:SEED or unused_variables:X:Y:IDLE")]
pub struct UnknownCircuit(String);

impl std::str::FromStr for BuiltIn {
    type Err = UnknownCircuit;

    fn from_str(spec: &str) -> Result<Self, UnknownCircuit> {
        let err = || UnknownCircuit(spec.to_string());
        let parts: Vec<&str> = spec.split(':').collect();
        let num = |i: usize| -> Result<u64, UnknownCircuit> {
            parts.get(i).and_then(|p| p.parse().ok()).ok_or_else(err)
        };
        let circuit = match (parts[0], parts.len()) {
            ("squaring_chain", 3) => BuiltIn::SquaringChain {
                x: num(1)?,
                steps: num(2)? as usize,
            },
            ("with_inputs", 2) => BuiltIn::WithInputs {
                k: num(1)?.max(1) as usize,
            },
            ("porep_shaped", 3) => BuiltIn::PorepShaped {
                log_size: num(1)?.clamp(8, 32) as u32,
                seed: num(2)?,
            },
            ("unused_variables", 4) => BuiltIn::UnusedVariables {
                x: num(1)?,
                y: num(2)?,
                idle: num(3)?,
            },
            _ => return Err(err()),
        };
        Ok(circuit)
    }
}

impl std::fmt::Display for BuiltIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuiltIn::SquaringChain { x, steps } => write!(f, "squaring_chain:{x}:{steps}"),
            BuiltIn::WithInputs { k } => write!(f, "with_inputs:{k}"),
            BuiltIn::PorepShaped { log_size, seed } => write!(f, "porep_shaped:{log_size}:{seed}"),
            BuiltIn::UnusedVariables { x, y, idle } => write!(f, "unused_variables:{x}:{y}:{idle}"),
        }
    }
}

impl BuiltIn {
    fn with_inputs(k: usize) -> WithInputs {
        WithInputs::new((1..=k as u64).map(|i| Scalar::from(i * 1000 + 7)).collect())
    }

    /// The public inputs a proof of this circuit verifies against.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        match *self {
            BuiltIn::SquaringChain { x, steps } => {
                SquaringChain::new(x.into(), steps).public_inputs()
            }
            BuiltIn::WithInputs { k } => Self::with_inputs(k).public_inputs(),
            BuiltIn::PorepShaped { log_size, seed } => {
                PorepShaped::new(log_size, seed).public_inputs()
            }
            BuiltIn::UnusedVariables { x, y, idle } => {
                UnusedVariables::new(x.into(), y.into(), idle.into()).public_inputs()
            }
        }
    }
}

impl Circuit<Scalar> for BuiltIn {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            BuiltIn::SquaringChain { x, steps } => {
                SquaringChain::new(x.into(), steps).synthesize(cs)
            }
            BuiltIn::WithInputs { k } => Self::with_inputs(k).synthesize(cs),
            BuiltIn::PorepShaped { log_size, seed } => {
                PorepShaped::new(log_size, seed).synthesize(cs)
            }
            BuiltIn::UnusedVariables { x, y, idle } => {
                UnusedVariables::new(x.into(), y.into(), idle.into()).synthesize(cs)
            }
        }
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        for spec in [
            "squaring_chain:3:40",
            "with_inputs:9",
            "porep_shaped:10:3",
            "unused_variables:5:11:99",
        ] {
            assert_eq!(spec.parse::<BuiltIn>().unwrap().to_string(), spec);
        }
        for bad in [
            "",
            "squaring_chain",
            "squaring_chain:x:1",
            "nope:1",
            "with_inputs:1:2",
        ] {
            assert!(bad.parse::<BuiltIn>().is_err(), "{bad}");
        }
    }
}
