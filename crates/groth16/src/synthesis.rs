//! Synthesis: running a bellpepper circuit to get the proving assignment.
//!
//! The assignment is what the prover consumes: the evaluations of A·z, B·z and C·z at every
//! constraint, the public (`input`, the constant one first) and private (`aux`) variable values,
//! and density bitmaps saying which variables occur in the A and B polynomials. It follows
//! bellperson exactly so that proofs are byte-identical: after the circuit's own constraints,
//! one constraint `xᵢ · 0 = 0` per public input is appended (it makes the IC points linearly
//! independent), inputs have full density in A, and a variable counts as occurring in a
//! polynomial only where its coefficient is non-zero.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::{Bitmap, Scalar};
use ff::Field;

use crate::error::Groth16Error;

/// The output of synthesis, the input of the prover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvingAssignment {
    /// `A·z` at each constraint (the input constraints last).
    pub a: Vec<Scalar>,
    /// `B·z` at each constraint.
    pub b: Vec<Scalar>,
    /// `C·z` at each constraint.
    pub c: Vec<Scalar>,
    /// Public inputs, the constant one first.
    pub input: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Scalar>,
    /// Which aux variables occur in A (inputs always do).
    pub a_aux_density: Bitmap,
    /// Which inputs occur in B.
    pub b_input_density: Bitmap,
    /// Which aux variables occur in B.
    pub b_aux_density: Bitmap,
}

impl ProvingAssignment {
    /// Number of constraints, including one per public input.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The first constraint whose `a·b = c` fails, if any.
    pub fn first_unsatisfied(&self) -> Option<usize> {
        use rayon::prelude::*;
        (0..self.a.len())
            .into_par_iter()
            .find_first(|&i| self.a[i] * self.b[i] != self.c[i])
    }

    /// Checks that every constraint holds.
    pub fn check_satisfied(&self) -> Result<(), Groth16Error> {
        match self.first_unsatisfied() {
            Some(index) => Err(Groth16Error::Unsatisfied { index }),
            None => Ok(()),
        }
    }

    /// Checks that the vectors agree in length with each other and with the densities.
    pub fn check_shape(&self) -> Result<(), Groth16Error> {
        let n = self.a.len();
        for (what, got) in [
            ("b evaluations", self.b.len()),
            ("c evaluations", self.c.len()),
        ] {
            if got != n {
                return Err(Groth16Error::LengthMismatch {
                    what,
                    expected: n,
                    got,
                });
            }
        }
        for (what, expected, got) in [
            ("a_aux_density", self.aux.len(), self.a_aux_density.len()),
            ("b_aux_density", self.aux.len(), self.b_aux_density.len()),
            (
                "b_input_density",
                self.input.len(),
                self.b_input_density.len(),
            ),
        ] {
            if got != expected {
                return Err(Groth16Error::LengthMismatch {
                    what,
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }
}

/// Synthesises `circuit`: allocates the constant one, runs the circuit, appends the input
/// constraints, and checks the linear combinations only name allocated variables.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<ProvingAssignment, Groth16Error> {
    synthesize_with_capacity(circuit, Capacity::default())
}

/// How large the assignment is expected to be, so its vectors are allocated once at their final
/// size instead of growing by doubling (which copies them, overshoots by up to 2×, and leaves
/// the freed smaller blocks behind). Parameters tell it exactly: see [`Capacity::of`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Constraints, including one per public input.
    pub constraints: usize,
    /// Public inputs, including the constant one.
    pub inputs: usize,
    /// Private variables.
    pub aux: usize,
}

impl Capacity {
    /// The capacity the circuit of `params` needs: at most the domain's size in constraints
    /// (`h` has one point less), the IC points' count of inputs, the `l` points' count of aux.
    pub fn of<E: crate::Engine>(params: &crate::Parameters<E>) -> Self {
        Self {
            constraints: params.h.len() + 1,
            inputs: params.vk.ic.len(),
            aux: params.l.len(),
        }
    }

    /// [`Capacity::of`] the parameters in a mapped file, from its section counts alone (nothing
    /// is decoded), so that synthesis can start while the parameters are still being read.
    pub fn of_mapped(params: &crate::MappedParameters) -> Self {
        use crate::params::Query;
        Self {
            constraints: params.len(Query::H) + 1,
            inputs: params.vk.ic.len(),
            aux: params.len(Query::L),
        }
    }

    /// Host bytes of one partition's synthesised vectors, about: its values (inputs and aux),
    /// and unless `witness_only` (a pre-compiled circuit's witness, whose a, b, c the prover
    /// makes) its a, b, c. What bounds how many partitions may be synthesised ahead.
    pub fn partition_bytes(&self, witness_only: bool) -> u64 {
        let values = self.inputs + self.aux;
        let products = if witness_only {
            0
        } else {
            3 * self.constraints
        };
        ((values + products) * std::mem::size_of::<Scalar>()) as u64
    }
}

/// [`synthesize`] with the vectors allocated up front. A wrong capacity is only a hint: the
/// vectors grow past it as needed.
pub fn synthesize_with_capacity<C: Circuit<Scalar>>(
    circuit: C,
    capacity: Capacity,
) -> Result<ProvingAssignment, Groth16Error> {
    let mut cs = ProvingSystem::default();
    let s = &mut cs.assignment;
    for v in [&mut s.a, &mut s.b, &mut s.c] {
        v.reserve_exact(capacity.constraints);
    }
    s.input.reserve_exact(capacity.inputs);
    s.aux.reserve_exact(capacity.aux);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.assignment.input.len() {
        cs.enforce(
            || "input constraint",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    if let Some(e) = cs.error {
        return Err(e);
    }
    Ok(cs.assignment)
}

#[derive(Default)]
struct ProvingSystem {
    assignment: ProvingAssignment,
    /// The first out-of-range variable, reported after synthesis (enforce cannot fail).
    error: Option<Groth16Error>,
}

impl Default for ProvingAssignment {
    fn default() -> Self {
        Self {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            input: Vec::new(),
            aux: Vec::new(),
            a_aux_density: Bitmap::new(),
            b_input_density: Bitmap::new(),
            b_aux_density: Bitmap::new(),
        }
    }
}

/// Evaluates `lc`, marking the variables with non-zero coefficients in the given densities.
/// Returns `Err(variable)` for an index that was never allocated.
fn eval(
    lc: &LinearCombination<Scalar>,
    input: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Bitmap>,
    mut aux_density: Option<&mut Bitmap>,
) -> Result<Scalar, String> {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let value = input.get(i).ok_or_else(|| format!("input {i}"))?;
        acc += if *coeff == Scalar::ONE {
            *value
        } else {
            *value * coeff
        };
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let value = aux.get(i).ok_or_else(|| format!("aux {i}"))?;
        acc += if *coeff == Scalar::ONE {
            *value
        } else {
            *value * coeff
        };
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    Ok(acc)
}

impl ConstraintSystem<Scalar> for ProvingSystem {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.assignment;
        s.aux.push(f()?);
        s.a_aux_density.push(false);
        s.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(s.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.assignment;
        s.input.push(f()?);
        s.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(s.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        let s = &mut self.assignment;
        let constraint = s.a.len();
        let result = (|| {
            // Inputs have full density in A: every input has its own `x · 0 = 0` constraint.
            let va = eval(&a, &s.input, &s.aux, None, Some(&mut s.a_aux_density))?;
            let vb = eval(
                &b,
                &s.input,
                &s.aux,
                Some(&mut s.b_input_density),
                Some(&mut s.b_aux_density),
            )?;
            let vc = eval(&c, &s.input, &s.aux, None, None)?;
            Ok::<_, String>((va, vb, vc))
        })();
        let (va, vb, vc) = match result {
            Ok(v) => v,
            Err(variable) => {
                self.error.get_or_insert(Groth16Error::UnknownVariable {
                    constraint,
                    variable,
                });
                (Scalar::ZERO, Scalar::ZERO, Scalar::ZERO)
            }
        };
        s.a.push(va);
        s.b.push(vb);
        s.c.push(vc);
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
