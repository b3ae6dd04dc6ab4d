//! What a partition is proved from: a full assignment (a, b, c made by synthesis or by the
//! host's pre-compiled products), or a pre-compiled circuit's witness, whose a, b, c the backend
//! computes in the `products` stage (on a GPU: on the device, from the values it uploads for the
//! query splits anyway, so the witness is the only per-partition upload).

use cuzk_field::Scalar;
use cuzk_groth16::Groth16Error;
pub use cuzk_pce::PartitionInput;
use cuzk_pce::{PceError, PreCompiled};

use crate::query::Witness;
use crate::PipelineError;

/// The values and densities the query sums read.
pub(crate) fn values(input: &PartitionInput) -> Witness<'_> {
    let (values, aux) = input.values();
    let shape = input.shape();
    Witness {
        input: values,
        aux,
        a_aux_density: shape.a_aux_density,
        b_input_density: shape.b_input_density,
        b_aux_density: shape.b_aux_density,
    }
}

/// Where [`Backend::ntt_h`](crate::Backend::ntt_h)'s a, b, c come from.
pub enum Evaluations<'a> {
    /// Made on the host, each exactly the domain's size.
    Vectors {
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    },
    /// To be made by the backend: `circuit`'s A, B, C applied to `witness`, every row's
    /// `a·b = c` checked (a failing row is [`Groth16Error::Unsatisfied`]).
    Products {
        circuit: &'a PreCompiled,
        witness: &'a cuzk_pce::Witness,
    },
}

impl std::fmt::Debug for Evaluations<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Evaluations::Vectors { a, .. } => write!(f, "Evaluations::Vectors({} each)", a.len()),
            Evaluations::Products { circuit, .. } => {
                write!(f, "Evaluations::Products({})", circuit.topology_hex())
            }
        }
    }
}

impl Evaluations<'_> {
    /// a, b, c on the host, each `n` long: the vectors as they are, or the host's products.
    pub fn into_vectors(self, n: usize) -> Result<cuzk_pce::Abc, PipelineError> {
        let (mut a, mut b, mut c) = match self {
            Evaluations::Vectors { a, b, c } => (a, b, c),
            Evaluations::Products { circuit, witness } => circuit.products(witness)?,
        };
        for v in [&mut a, &mut b, &mut c] {
            if v.len() > n {
                return Err(cuzk_ntt::NttError::LengthMismatch {
                    expected: n,
                    got: v.len(),
                }
                .into());
            }
            v.resize(n, Scalar::from(0u64));
        }
        Ok((a, b, c))
    }
}

/// A pre-compiled circuit's failure as the prover reports it: an unsatisfied row as full
/// synthesis's check reports it, anything else as itself.
impl From<PceError> for PipelineError {
    fn from(e: PceError) -> Self {
        match e {
            PceError::Unsatisfied { index } => Groth16Error::Unsatisfied { index }.into(),
            other => PipelineError::PreCompiled(other),
        }
    }
}
