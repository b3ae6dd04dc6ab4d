//! A pre-compiled circuit: a checked file (memory-mapped or in memory) and the proving path
//! over it.

use std::io::Cursor;
use std::ops::Range;
use std::path::Path;

use bellpepper_core::{Circuit, ConstraintSystem};
use cuzk_field::{Bitmap, Scalar};
use cuzk_groth16::ProvingAssignment;
use ff::Field;
use rayon::prelude::*;

use crate::error::PceError;
use crate::format::{self, Header, Layout, HEADER_LEN};
use crate::mapped::Mapped;
use crate::record::{Recording, COEFF_MINUS_ONE, COEFF_ONE, INPUT_FLAG};
use crate::spmv::{self, Ctx, Kind, Matrix};
use crate::witness::{class_of, limbs, WitnessSystem};

#[cfg(target_endian = "big")]
compile_error!("the pre-compiled circuit file is read in place and is little-endian");

/// Where the file's bytes live.
enum Backing {
    Mapped(Mapped),
    /// `u64` words so that every section is aligned; `usize` is the length in bytes.
    Owned(Vec<u64>, usize),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(map) => map.bytes(),
            Backing::Owned(words, len) => &bytemuck::cast_slice(words)[..*len],
        }
    }
}

/// A circuit topology ready to prove from: the checked file, its coefficient table decoded.
///
/// It is used only for the topology it was recorded from: [`PreCompiled::synthesize`] checks the
/// circuit's counts and shape fingerprint, and the witness's satisfaction, before returning an
/// assignment.
pub struct PreCompiled {
    backing: Backing,
    header: Header,
    layout: Layout,
    coeffs: Vec<Scalar>,
    kinds: Vec<Kind>,
    /// Per coefficient, its value as a small integer (or `NOT_SMALL`).
    small: Vec<i64>,
    /// The field elements of small integers.
    small_table: Vec<Scalar>,
    topology: [u8; 32],
    /// The densities, decoded once: each assignment gets a copy.
    densities: [Bitmap; 3],
}

impl std::fmt::Debug for PreCompiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreCompiled")
            .field("topology", &self.topology_hex())
            .field("num_inputs", &self.header.num_inputs)
            .field("num_aux", &self.header.num_aux)
            .field("num_constraints", &self.header.num_rows)
            .field("nnz", &self.header.nnz)
            .field("file_len", &self.file_len())
            .finish()
    }
}

/// A witness computed for a [`PreCompiled`] topology and checked against it: the input to
/// [`PreCompiled::evaluate`] (products on the host), or to a device's products
/// ([`DeviceImage`](crate::DeviceImage)).
#[derive(Clone, Debug)]
pub struct Witness {
    /// The topology it was checked against.
    topology: [u8; 32],
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    aux_class: Vec<u8>,
}

impl Witness {
    /// The public inputs, the constant one first.
    pub fn input(&self) -> &[Scalar] {
        &self.input
    }

    /// The private values.
    pub fn aux(&self) -> &[Scalar] {
        &self.aux
    }

    /// The topology it was computed for.
    pub fn topology(&self) -> [u8; 32] {
        self.topology
    }
}

impl PreCompiled {
    /// Memory-maps and checks the file at `path`.
    pub fn open(path: &Path) -> Result<Self, PceError> {
        let pc = Self::from_backing(Backing::Mapped(Mapped::open(path)?))?;
        // The checks read the whole file; the products read it again section by section.
        pc.release(HEADER_LEN..pc.file_len());
        Ok(pc)
    }

    /// Releases a byte range of a mapped file from the process (see [`Mapped::release`]).
    pub(crate) fn release(&self, range: Range<usize>) {
        if let Backing::Mapped(map) = &self.backing {
            map.release(range);
        }
    }

    /// Releases rows `rows` of matrix `m` (its row pointers and entries).
    fn release_rows(&self, m: &Matrix<'_>, which: usize, rows: Range<usize>) {
        let [rp, cols, coeffs] = &self.layout.matrices[which];
        let (first, last) = (m.row_ptr[rows.start] as usize, m.row_ptr[rows.end] as usize);
        self.release(rp.start + 4 * rows.start..rp.start + 4 * rows.end);
        self.release(cols.start + 4 * first..cols.start + 4 * last);
        self.release(coeffs.start + 4 * first..coeffs.start + 4 * last);
    }

    /// Checks a file held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PceError> {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        Self::from_backing(Backing::Owned(words, bytes.len()))
    }

    /// A recording, encoded and checked, in memory.
    pub fn from_recording(rec: &Recording) -> Result<Self, PceError> {
        Self::from_bytes(&to_bytes(rec)?)
    }

    fn from_backing(backing: Backing) -> Result<Self, PceError> {
        let (header, layout, topology) = format::check(backing.bytes())?;
        let coeffs = format::coefficients(&backing.bytes()[layout.coeffs.clone()])?;
        if coeffs.len() < 2 || coeffs[0] != Scalar::ONE || coeffs[1] != -Scalar::ONE {
            return Err(PceError::Malformed(
                "the coefficient table does not start with +1, −1".into(),
            ));
        }
        let kinds = coeffs.iter().map(Kind::of).collect();
        let small = coeffs.iter().map(spmv::small_integer).collect();
        let mut pc = Self {
            backing,
            header,
            layout,
            coeffs,
            kinds,
            small,
            small_table: spmv::small_table(),
            topology,
            densities: Default::default(),
        };
        pc.validate()?;
        let (inputs, aux) = (pc.num_inputs(), pc.num_aux());
        pc.densities = [
            pc.density(&pc.layout.a_aux_density, aux)?,
            pc.density(&pc.layout.b_input_density, inputs)?,
            pc.density(&pc.layout.b_aux_density, aux)?,
        ];
        Ok(pc)
    }

    /// Checks every row pointer, column and coefficient index, so the products never index out
    /// of range.
    fn validate(&self) -> Result<(), PceError> {
        let (rows, inputs, aux) = (
            self.header.num_rows as usize,
            self.header.num_inputs,
            self.header.num_aux,
        );
        if self.header.num_rows < inputs {
            return Err(PceError::Malformed(
                "fewer rows than input constraints".into(),
            ));
        }
        let num_coeffs = self.coeffs.len() as u32;
        for (name, m) in ["A", "B", "C"].into_iter().zip(self.matrices()?) {
            let bad = |what: &str| PceError::Malformed(format!("matrix {name}: {what}"));
            if m.row_ptr.len() != rows + 1
                || m.row_ptr[0] != 0
                || m.row_ptr[rows] as usize != m.cols.len()
                || m.coeffs.len() != m.cols.len()
            {
                return Err(bad("row pointers disagree with the entries"));
            }
            if m.row_ptr.par_windows(2).any(|w| w[0] > w[1]) {
                return Err(bad("row pointers decrease"));
            }
            let col_ok = |&col: &u32| {
                if col & INPUT_FLAG != 0 {
                    u64::from(col & !INPUT_FLAG) < inputs
                } else {
                    u64::from(col) < aux
                }
            };
            if !m.cols.par_iter().all(col_ok) {
                return Err(bad("a column is out of range"));
            }
            if !m.coeffs.par_iter().all(|&k| k < num_coeffs) {
                return Err(bad("a coefficient index is out of range"));
            }
        }
        Ok(())
    }

    fn u32s(&self, range: &std::ops::Range<usize>) -> Result<&[u32], PceError> {
        bytemuck::try_cast_slice(&self.backing.bytes()[range.clone()])
            .map_err(|e| PceError::Malformed(format!("misaligned section: {e}")))
    }

    pub(crate) fn matrices(&self) -> Result<[Matrix<'_>; 3], PceError> {
        let m = |i: usize| -> Result<Matrix<'_>, PceError> {
            let [rp, cols, coeffs] = &self.layout.matrices[i];
            Ok(Matrix {
                row_ptr: self.u32s(rp)?,
                cols: self.u32s(cols)?,
                coeffs: self.u32s(coeffs)?,
            })
        };
        Ok([m(0)?, m(1)?, m(2)?])
    }

    fn density(&self, range: &std::ops::Range<usize>, len: usize) -> Result<Bitmap, PceError> {
        let words: &[u64] = bytemuck::try_cast_slice(&self.backing.bytes()[range.clone()])
            .map_err(|e| PceError::Malformed(format!("misaligned section: {e}")))?;
        let mut bitmap = Bitmap::zeros(len);
        for (w, &word) in words.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                if i < len {
                    bitmap.set(i);
                }
                bits &= bits - 1;
            }
        }
        Ok(bitmap)
    }

    /// The topology hash: SHA-256 of the counts and the matrices.
    pub fn topology(&self) -> [u8; 32] {
        self.topology
    }

    /// The topology hash in hex.
    pub fn topology_hex(&self) -> String {
        self.topology.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Public inputs, including the constant one.
    pub fn num_inputs(&self) -> usize {
        self.header.num_inputs as usize
    }

    /// Private variables.
    pub fn num_aux(&self) -> usize {
        self.header.num_aux as usize
    }

    /// Constraints, including one per public input.
    pub fn num_constraints(&self) -> usize {
        self.header.num_rows as usize
    }

    /// Non-zero entries of A, B and C.
    pub fn nnz(&self) -> [u64; 3] {
        self.header.nnz
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> usize {
        self.backing.bytes().len()
    }

    /// The coefficient table (`+1` and `−1` first).
    pub(crate) fn coefficients(&self) -> &[Scalar] {
        &self.coeffs
    }

    /// The densities an assignment of this topology has: A over the private values, B over the
    /// public inputs, B over the private values.
    pub fn densities(&self) -> &[Bitmap; 3] {
        &self.densities
    }

    /// Runs `circuit`'s allocations (not its constraints) and checks that it is this topology:
    /// the same counts of inputs, private variables and constraints, and the same shape
    /// fingerprint.
    pub fn witness<C: Circuit<Scalar>>(&self, circuit: C) -> Result<Witness, PceError> {
        let mut cs = WitnessSystem::with_capacity(self.num_inputs(), self.num_aux());
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        let h = &self.header;
        for (what, expected, got) in [
            (
                "the number of public inputs",
                h.num_inputs,
                cs.input.len() as u64,
            ),
            (
                "the number of private variables",
                h.num_aux,
                cs.aux.len() as u64,
            ),
            (
                "the number of constraints",
                h.num_rows - h.num_inputs,
                cs.constraints,
            ),
            ("the shape fingerprint", h.shape_hash, cs.shape),
        ] {
            if expected != got {
                return Err(PceError::TopologyMismatch {
                    what,
                    expected,
                    got,
                });
            }
        }
        Ok(Witness {
            topology: self.topology,
            input: cs.input,
            aux: cs.aux,
            aux_class: cs.aux_class,
        })
    }

    /// Applies the matrices to `witness` on the host and checks every constraint (`a·b = c`,
    /// fused into the same pass): `(a, b, c)`, each [`num_constraints`](Self::num_constraints)
    /// long with room for the evaluation domain, or [`PceError::Unsatisfied`].
    pub fn products(&self, witness: &Witness) -> Result<Abc, PceError> {
        self.check_topology(witness)?;
        let one = limbs(&Scalar::ONE);
        let input_class: Vec<u8> = witness.input.iter().map(|v| class_of(v, &one)).collect();
        let ctx = Ctx {
            input: &witness.input,
            input_class: &input_class,
            aux: &witness.aux,
            aux_class: &witness.aux_class,
            coeffs: &self.coeffs,
            kinds: &self.kinds,
            small: &self.small,
            small_table: &self.small_table,
        };
        let matrices = self.matrices()?;
        let release = |which: usize, rows: Range<usize>| {
            self.release_rows(&matrices[which], which, rows);
        };
        let (a, b, c, bad) = spmv::evaluate(&ctx, matrices, self.num_constraints(), &release);
        match bad {
            Some(index) => Err(PceError::Unsatisfied { index }),
            None => Ok((a, b, c)),
        }
    }

    /// Whether `witness` was computed for this topology.
    pub fn check_topology(&self, witness: &Witness) -> Result<(), PceError> {
        if witness.topology != self.topology {
            return Err(PceError::TopologyMismatch {
                what: "the witness's topology hash (prefix)",
                expected: u64::from_be_bytes(self.topology[..8].try_into().unwrap_or_default()),
                got: u64::from_be_bytes(witness.topology[..8].try_into().unwrap_or_default()),
            });
        }
        Ok(())
    }

    /// Applies the matrices to `witness` and checks every constraint ([`products`](Self::products)):
    /// the assignment full synthesis would give, or [`PceError::Unsatisfied`].
    pub fn evaluate(&self, witness: Witness) -> Result<ProvingAssignment, PceError> {
        let (a, b, c) = self.products(&witness)?;
        let [a_aux_density, b_input_density, b_aux_density] = self.densities.clone();
        Ok(ProvingAssignment {
            a,
            b,
            c,
            input: witness.input,
            aux: witness.aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
        })
    }

    /// [`witness`](Self::witness) then [`evaluate`](Self::evaluate): the pre-compiled
    /// replacement for `cuzk_groth16::synthesize`.
    pub fn synthesize<C: Circuit<Scalar>>(
        &self,
        circuit: C,
    ) -> Result<ProvingAssignment, PceError> {
        self.evaluate(self.witness(circuit)?)
    }
}

/// The evaluations `(a, b, c)` of a witness, in that order.
pub type Abc = (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>);

/// Encodes a recording in the file format.
pub fn to_bytes(rec: &Recording) -> Result<Vec<u8>, PceError> {
    let mut out = Cursor::new(Vec::new());
    format::write(rec, &mut out)?;
    Ok(out.into_inner())
}

// The constants the products rely on are the table's first two entries.
const _: () = assert!(COEFF_ONE == 0 && COEFF_MINUS_ONE == 1);

// Provers share one pre-compiled circuit across threads.
const _: fn() = || {
    fn check<T: Send + Sync>() {}
    check::<PreCompiled>();
};
