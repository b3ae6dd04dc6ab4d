//! The witness pass: runs a circuit's `alloc` closures and skips its constraints.
//!
//! `enforce` builds no linear combination (its closures are dropped uncalled); it only counts
//! the constraint and folds the variable counts into the shape fingerprint, so a circuit of
//! another topology is caught before any matrix is applied to its witness.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use ff::Field;

use crate::record::{shape_step, SHAPE_SEED};

/// What the sparse products need to know about a value without reading it.
pub(crate) const VALUE_ZERO: u8 = 0;
/// The value is one.
pub(crate) const VALUE_ONE: u8 = 1;
/// Any other value.
pub(crate) const VALUE_OTHER: u8 = 2;

/// The witness of one circuit, with a class (zero, one, other) per private value.
pub(crate) struct WitnessSystem {
    pub input: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub aux_class: Vec<u8>,
    pub constraints: u64,
    pub shape: u64,
    one: [u64; 4],
}

impl WitnessSystem {
    /// A witness system with room for the recorded counts (more only if the circuit differs).
    pub fn with_capacity(num_inputs: usize, num_aux: usize) -> Self {
        let mut aux = Vec::with_capacity(num_aux);
        crate::mapped::advise_huge_pages(&mut aux);
        Self {
            input: Vec::with_capacity(num_inputs),
            aux,
            aux_class: Vec::with_capacity(num_aux),
            constraints: 0,
            shape: SHAPE_SEED,
            one: limbs(&Scalar::ONE),
        }
    }
}

/// A scalar's Montgomery limbs: blst keeps them fully reduced, so limb equality is field
/// equality (blstrs's own `==` compares them too, in constant time, which the witness does not
/// need).
#[inline(always)]
pub(crate) fn limbs(value: &Scalar) -> [u64; 4] {
    blst::blst_fr::from(*value).l
}

/// Zero, one or other.
#[inline]
pub(crate) fn class_of(value: &Scalar, one: &[u64; 4]) -> u8 {
    let l = limbs(value);
    if l == [0; 4] {
        VALUE_ZERO
    } else if l == *one {
        VALUE_ONE
    } else {
        VALUE_OTHER
    }
}

impl ConstraintSystem<Scalar> for WitnessSystem {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        self.aux_class.push(class_of(&value, &self.one));
        self.aux.push(value);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
        self.shape = shape_step(self.shape, self.input.len(), self.aux.len());
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
