//! Recording: running a circuit once to keep its R1CS matrices.
//!
//! [`record`] runs a circuit through a constraint system that evaluates nothing: it keeps each
//! constraint's linear combinations as rows of three sparse matrices A, B, C in compressed sparse
//! rows, exactly as `cuzk_groth16::synthesize` would evaluate them — the constant one allocated
//! first, one `xᵢ · 0 = 0` row per public input appended after the circuit's constraints, and a
//! variable occurring in a matrix (and in its density) only where its coefficient is non-zero.
//! The `alloc` closures are not called, so a circuit without a witness records as well.

use std::collections::HashMap;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::{Bitmap, Scalar};
use ff::Field;

use crate::error::PceError;

/// A column whose top bit is set names public input `col & !INPUT_FLAG`; otherwise it names
/// private variable `col`. The tag keeps columns stable while inputs are still being allocated.
pub const INPUT_FLAG: u32 = 1 << 31;

/// Coefficient index of `+1` (the table's first entry, always present).
pub const COEFF_ONE: u32 = 0;
/// Coefficient index of `−1` (the table's second entry, always present).
pub const COEFF_MINUS_ONE: u32 = 1;

/// One sparse matrix in compressed sparse rows: row `r`'s entries are
/// `row_ptr[r]..row_ptr[r + 1]` of `cols` (tagged, see [`INPUT_FLAG`]) and `coeffs` (indices
/// into the coefficient table).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// Offsets of each row's first entry, one more than rows.
    pub row_ptr: Vec<u32>,
    /// Column of each entry.
    pub cols: Vec<u32>,
    /// Coefficient-table index of each entry.
    pub coeffs: Vec<u32>,
}

impl Csr {
    fn new() -> Self {
        Self {
            row_ptr: vec![0],
            cols: Vec::new(),
            coeffs: Vec::new(),
        }
    }

    /// Number of non-zero entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
}

/// A circuit topology: its matrices, counts and densities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    /// Public inputs, including the constant one.
    pub num_inputs: usize,
    /// Private variables.
    pub num_aux: usize,
    /// Rows: the circuit's constraints, then one per public input.
    pub num_constraints: usize,
    /// A fingerprint of the order of allocations and constraints (see [`shape_step`]), which
    /// the witness pass recomputes without building any linear combination.
    pub shape_hash: u64,
    /// Distinct coefficients, `+1` and `−1` first.
    pub coeffs: Vec<Scalar>,
    /// The A matrix.
    pub a: Csr,
    /// The B matrix.
    pub b: Csr,
    /// The C matrix.
    pub c: Csr,
    /// Which private variables occur in A (inputs always do).
    pub a_aux_density: Bitmap,
    /// Which inputs occur in B.
    pub b_input_density: Bitmap,
    /// Which private variables occur in B.
    pub b_aux_density: Bitmap,
}

/// One step of the shape fingerprint: folds in the variable counts at a constraint. Both the
/// recorder and the witness pass call it at every `enforce`, so a circuit that allocates or
/// constrains in another order (or another number of times) gets another fingerprint.
#[inline]
pub fn shape_step(hash: u64, num_inputs: usize, num_aux: usize) -> u64 {
    let x = (num_aux as u64) ^ (num_inputs as u64).rotate_left(40);
    (hash.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The shape fingerprint's starting value.
pub const SHAPE_SEED: u64 = 0x6375_7a6b_7063_6531;

/// Records `circuit`'s matrices. Fails where synthesis would: a linear combination naming a
/// variable not yet allocated, or the circuit's own error.
pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Recording, PceError> {
    let mut cs = Recorder::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    if let Some(e) = cs.error.take() {
        return Err(e);
    }
    for i in 0..cs.num_inputs {
        cs.a.cols.push(i as u32 | INPUT_FLAG);
        cs.a.coeffs.push(COEFF_ONE);
        for m in [&mut cs.a, &mut cs.b, &mut cs.c] {
            m.row_ptr.push(m.cols.len() as u32);
        }
    }
    cs.check_nnz()?;
    let mut coeffs = vec![Scalar::ZERO; cs.table.len()];
    for (&bytes, &i) in &cs.table {
        coeffs[i as usize] = Option::from(Scalar::from_bytes_le(&bytes))
            .ok_or_else(|| PceError::Malformed("non-canonical coefficient".into()))?;
    }
    Ok(Recording {
        num_inputs: cs.num_inputs,
        num_aux: cs.num_aux,
        num_constraints: cs.a.row_ptr.len() - 1,
        shape_hash: cs.shape,
        coeffs,
        a: cs.a,
        b: cs.b,
        c: cs.c,
        a_aux_density: cs.a_aux_density,
        b_input_density: cs.b_input_density,
        b_aux_density: cs.b_aux_density,
    })
}

struct Recorder {
    num_inputs: usize,
    num_aux: usize,
    shape: u64,
    a: Csr,
    b: Csr,
    c: Csr,
    /// Coefficient (canonical bytes) to table index.
    table: HashMap<[u8; 32], u32>,
    minus_one: Scalar,
    a_aux_density: Bitmap,
    b_input_density: Bitmap,
    b_aux_density: Bitmap,
    /// The first error, reported after synthesis (`enforce` cannot fail).
    error: Option<PceError>,
}

/// Which densities a matrix's entries mark.
#[derive(Clone, Copy)]
enum Which {
    A,
    B,
    C,
}

impl Recorder {
    fn new() -> Self {
        let minus_one = -Scalar::ONE;
        let table = HashMap::from([
            (Scalar::ONE.to_bytes_le(), COEFF_ONE),
            (minus_one.to_bytes_le(), COEFF_MINUS_ONE),
        ]);
        Self {
            num_inputs: 0,
            num_aux: 0,
            shape: SHAPE_SEED,
            a: Csr::new(),
            b: Csr::new(),
            c: Csr::new(),
            table,
            minus_one,
            a_aux_density: Bitmap::new(),
            b_input_density: Bitmap::new(),
            b_aux_density: Bitmap::new(),
            error: None,
        }
    }

    fn coeff_index(&mut self, coeff: &Scalar) -> u32 {
        if *coeff == Scalar::ONE {
            return COEFF_ONE;
        }
        if *coeff == self.minus_one {
            return COEFF_MINUS_ONE;
        }
        let next = self.table.len() as u32;
        *self.table.entry(coeff.to_bytes_le()).or_insert(next)
    }

    /// Appends `lc` as the next row of `which`, marking densities as synthesis does.
    fn push_row(&mut self, lc: &LinearCombination<Scalar>, which: Which, constraint: usize) {
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            if i >= self.num_inputs {
                self.unknown(constraint, format!("input {i}"));
                continue;
            }
            let k = self.coeff_index(coeff);
            if let Which::B = which {
                self.b_input_density.set(i);
            }
            let m = self.matrix(which);
            m.cols.push(i as u32 | INPUT_FLAG);
            m.coeffs.push(k);
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            if i >= self.num_aux {
                self.unknown(constraint, format!("aux {i}"));
                continue;
            }
            let k = self.coeff_index(coeff);
            match which {
                Which::A => self.a_aux_density.set(i),
                Which::B => self.b_aux_density.set(i),
                Which::C => {}
            }
            let m = self.matrix(which);
            m.cols.push(i as u32);
            m.coeffs.push(k);
        }
        let m = self.matrix(which);
        // Checked once at the end (`check_nnz`); truncation here is caught there.
        m.row_ptr.push(m.cols.len() as u32);
    }

    fn matrix(&mut self, which: Which) -> &mut Csr {
        match which {
            Which::A => &mut self.a,
            Which::B => &mut self.b,
            Which::C => &mut self.c,
        }
    }

    fn unknown(&mut self, constraint: usize, variable: String) {
        self.error.get_or_insert(PceError::UnknownVariable {
            constraint,
            variable,
        });
    }

    fn check_nnz(&self) -> Result<(), PceError> {
        for m in [&self.a, &self.b, &self.c] {
            if m.cols.len() > u32::MAX as usize {
                return Err(PceError::TooLarge {
                    what: "entries of one matrix",
                    limit: u64::from(u32::MAX),
                });
            }
        }
        if self.a.row_ptr.len() > u32::MAX as usize {
            return Err(PceError::TooLarge {
                what: "constraints",
                limit: u64::from(u32::MAX),
            });
        }
        Ok(())
    }
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.num_aux >= INPUT_FLAG as usize {
            self.error.get_or_insert(PceError::TooLarge {
                what: "private variables",
                limit: u64::from(INPUT_FLAG),
            });
        }
        self.num_aux += 1;
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.num_inputs >= INPUT_FLAG as usize {
            self.error.get_or_insert(PceError::TooLarge {
                what: "public inputs",
                limit: u64::from(INPUT_FLAG),
            });
        }
        self.num_inputs += 1;
        self.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.shape = shape_step(self.shape, self.num_inputs, self.num_aux);
        let constraint = self.a.row_ptr.len() - 1;
        self.push_row(&a(LinearCombination::zero()), Which::A, constraint);
        self.push_row(&b(LinearCombination::zero()), Which::B, constraint);
        self.push_row(&c(LinearCombination::zero()), Which::C, constraint);
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
