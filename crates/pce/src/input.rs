//! What a partition is proved from: a full assignment (a, b, c made by synthesis or by the
//! host's products), or a pre-compiled circuit's witness, whose a, b, c the prover's backend
//! makes (on a GPU, on the device: [`gpu`](crate::gpu) with the `cuda` feature).

use std::sync::Arc;

use cuzk_field::Scalar;
use cuzk_groth16::{CircuitShape, ProvingAssignment};

use crate::compiled::{PreCompiled, Witness};
use crate::error::PceError;

/// The input of one partition's proof.
#[derive(Clone, Debug)]
pub enum PartitionInput {
    /// A full assignment.
    Assignment(ProvingAssignment),
    /// A pre-compiled circuit's witness, checked against that circuit's topology when it was
    /// computed ([`PreCompiled::witness`]).
    Witness {
        /// The circuit whose matrices make a, b, c.
        circuit: Arc<PreCompiled>,
        /// The values.
        witness: Witness,
    },
}

impl From<ProvingAssignment> for PartitionInput {
    fn from(asg: ProvingAssignment) -> Self {
        PartitionInput::Assignment(asg)
    }
}

impl PartitionInput {
    /// A pre-compiled circuit's witness; an error if it was computed for another topology.
    pub fn precompiled(circuit: Arc<PreCompiled>, witness: Witness) -> Result<Self, PceError> {
        circuit.check_topology(&witness)?;
        Ok(PartitionInput::Witness { circuit, witness })
    }

    /// Rows of the constraint system: constraints, then one per public input.
    pub fn num_constraints(&self) -> usize {
        match self {
            PartitionInput::Assignment(asg) => asg.num_constraints(),
            PartitionInput::Witness { circuit, .. } => circuit.num_constraints(),
        }
    }

    /// The public inputs (the constant one first) and the private values.
    pub fn values(&self) -> (&[Scalar], &[Scalar]) {
        match self {
            PartitionInput::Assignment(asg) => (&asg.input, &asg.aux),
            PartitionInput::Witness { witness, .. } => (witness.input(), witness.aux()),
        }
    }

    /// The counts and densities that decide the parameters' sizes.
    pub fn shape(&self) -> CircuitShape<'_> {
        let (input, aux) = self.values();
        let [a_aux_density, b_input_density, b_aux_density] = match self {
            PartitionInput::Assignment(asg) => {
                [&asg.a_aux_density, &asg.b_input_density, &asg.b_aux_density]
            }
            PartitionInput::Witness { circuit, .. } => {
                let [a, b_input, b_aux] = circuit.densities();
                [a, b_input, b_aux]
            }
        };
        CircuitShape {
            num_constraints: self.num_constraints(),
            num_inputs: input.len(),
            num_aux: aux.len(),
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }
}
