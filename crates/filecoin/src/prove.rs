//! The partition loop every proof kind shares: read and check the parameters, then for each
//! partition build its circuit, synthesise it, check it fits the parameters and holds, prove it
//! with the caller's prover, and verify the proof against the public inputs the verifier uses;
//! the proofs' bytes are concatenated in partition order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_groth16::{
    prepare_verifying_key, synthesize_with_capacity, verify_proof, Capacity, Parameters, Proof,
    ProvingAssignment,
};

use crate::error::FilecoinError;
use crate::params::ParamFiles;

/// Bytes of one partition's Groth16 proof.
pub const PROOF_BYTES: usize = 192;

/// cuzk's Groth16 prover, as this crate needs it: one partition's assignment in, its proof out.
/// The caller picks `r` and `s` (random in production, fixed in tests), and may keep parameters
/// resident between jobs by overriding [`PartitionProver::parameters`].
pub trait PartitionProver {
    /// The parameters of the circuit `files` names. By default they are read from disk with
    /// their verifying key, which must be the parameter file's; a long-lived service overrides
    /// this to hand out parameters it keeps in memory.
    fn parameters(&mut self, files: &ParamFiles) -> Result<Arc<Parameters>, FilecoinError> {
        read_checked(files).map(Arc::new)
    }

    /// A pre-compiled form (cuzk-pce) of the circuit `files` names, to synthesise partitions
    /// from their witness alone; `record` records the circuit when the caller has none yet.
    /// By default there is none, and every partition is synthesised in full.
    fn pre_compiled(
        &mut self,
        files: &ParamFiles,
        record: &mut dyn FnMut() -> Result<cuzk_pce::Recording, FilecoinError>,
    ) -> Result<Option<Arc<cuzk_pce::PreCompiled>>, FilecoinError> {
        let _ = (files, record);
        Ok(None)
    }

    /// Proves `assignment` (partition `partition` of the job) against `params`.
    fn prove(
        &mut self,
        params: &Parameters,
        assignment: ProvingAssignment,
        partition: usize,
    ) -> Result<Proof, Box<dyn std::error::Error + Send + Sync>>;
}

impl<F> PartitionProver for F
where
    F: FnMut(
        &Parameters,
        ProvingAssignment,
        usize,
    ) -> Result<Proof, Box<dyn std::error::Error + Send + Sync>>,
{
    fn prove(
        &mut self,
        params: &Parameters,
        assignment: ProvingAssignment,
        partition: usize,
    ) -> Result<Proof, Box<dyn std::error::Error + Send + Sync>> {
        self(params, assignment, partition)
    }
}

/// How long each step of one partition took.
#[derive(Clone, Debug, Default)]
pub struct PartitionReport {
    /// Building the circuit and synthesising it into an assignment.
    pub synthesis: Duration,
    /// The prover's call.
    pub prove: Duration,
    /// Verifying the proof.
    pub verify: Duration,
    /// Constraints of the circuit, input constraints included.
    pub constraints: usize,
}

/// A proof's bytes and how they were made (PoRep C2, WinningPoSt).
#[derive(Clone, Debug)]
pub struct FilecoinProof {
    /// The partitions' 192-byte proofs, concatenated in partition order: the bytes
    /// `seal_commit_phase2` (or `generate_winning_post_with_vanilla`) returns.
    pub bytes: Vec<u8>,
    /// Reading the parameters.
    pub load_params: Duration,
    /// One report per partition.
    pub partitions: Vec<PartitionReport>,
}

/// Proves `partitions` partitions, the circuit and public inputs of partition `k` from
/// `circuit(k)`, against the parameters `files` names.
pub(crate) fn prove_partitions<C: Circuit<Scalar>>(
    files: &ParamFiles,
    partitions: usize,
    prover: &mut dyn PartitionProver,
    mut circuit: impl FnMut(usize) -> Result<(C, Vec<Scalar>), FilecoinError>,
) -> Result<FilecoinProof, FilecoinError> {
    let start = Instant::now();
    let params = prover.parameters(files)?;
    let pvk = prepare_verifying_key(&params.vk);
    let load_params = start.elapsed();

    let mut bytes = Vec::with_capacity(PROOF_BYTES * partitions);
    let mut reports = Vec::with_capacity(partitions);
    for k in 0..partitions {
        let mut report = PartitionReport::default();
        let start = Instant::now();
        let (this, inputs) = circuit(k)?;
        // Recording needs a circuit of its own (the circuits are not all `Clone`): build it again.
        let pre_compiled =
            prover.pre_compiled(files, &mut || Ok(cuzk_pce::record(circuit(k)?.0)?))?;
        let circuit = this;
        let assignment = match pre_compiled {
            Some(pc) => pc.synthesize(circuit)?,
            None => synthesize_with_capacity(circuit, Capacity::of(&params))?,
        };
        check_fits(&assignment, &params, files, &inputs)?;
        if let Some(constraint) = assignment.first_unsatisfied() {
            return Err(FilecoinError::Unsatisfied {
                partition: k,
                constraint,
            });
        }
        report.constraints = assignment.num_constraints();
        report.synthesis = start.elapsed();

        let start = Instant::now();
        let proof = prover
            .prove(&params, assignment, k)
            .map_err(FilecoinError::Prover)?;
        report.prove = start.elapsed();

        let start = Instant::now();
        if !verify_proof(&pvk, &proof, &inputs)? {
            return Err(FilecoinError::ProofInvalid { partition: k });
        }
        report.verify = start.elapsed();
        bytes.extend_from_slice(&proof.to_bytes());
        reports.push(report);
    }
    Ok(FilecoinProof {
        bytes,
        load_params,
        partitions: reports,
    })
}

/// Reads the parameters `files` names and checks that the verifying key file is theirs.
pub fn read_checked(files: &ParamFiles) -> Result<Parameters, FilecoinError> {
    let vk = files.read_vk()?;
    let params = files.read_params()?;
    if params.vk != vk {
        return Err(FilecoinError::ParameterMismatch {
            path: files.vk.clone(),
            detail: "the verifying key is not the parameter file's".into(),
        });
    }
    Ok(params)
}

/// Parameters of another circuit show as sizes that disagree with the assignment's.
fn check_fits(
    a: &ProvingAssignment,
    params: &Parameters,
    files: &ParamFiles,
    inputs: &[blstrs::Scalar],
) -> Result<(), FilecoinError> {
    let mismatch = |detail: String| FilecoinError::ParameterMismatch {
        path: files.params.clone(),
        detail,
    };
    if a.input.len() != params.vk.ic.len() || inputs.len() + 1 != a.input.len() {
        return Err(mismatch(format!(
            "the circuit has {} public inputs, the parameters {}",
            a.input.len(),
            params.vk.ic.len()
        )));
    }
    if a.aux.len() != params.l.len() {
        return Err(mismatch(format!(
            "the circuit has {} private variables, the parameters {}",
            a.aux.len(),
            params.l.len()
        )));
    }
    let domain = a.num_constraints().next_power_of_two();
    if domain != params.h.len() + 1 {
        return Err(mismatch(format!(
            "the circuit needs a domain of {} points, the parameters have {}",
            domain,
            params.h.len() + 1
        )));
    }
    Ok(())
}
