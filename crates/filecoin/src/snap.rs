//! SnapDeals: from the vanilla proofs filecoin-proofs-api's
//! `generate_empty_sector_update_proof_with_vanilla` takes (one bincode-serialised
//! `PartitionProof` per partition) and the three commitments, to the bytes it returns.
//!
//! This mirrors that function step by step: the update config of the sector size, the public
//! inputs (`comm_r_old`, `comm_d_new`, `comm_r_new`, `h`), `EmptySectorUpdateCompound::setup`,
//! one circuit per partition from `EmptySectorUpdateCompound::circuit`, proven by the caller's
//! [`PartitionProver`] and verified with `generate_public_inputs` before the bytes are returned.

use std::path::Path;

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    with_shape, DefaultPieceDomain, MerkleTreeTrait, SectorUpdateConfig, TreeRHasher,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use crate::error::FilecoinError;
use crate::params::{self, GenerateReport, ParamFiles};
use crate::prove::{prove_partitions, FilecoinProof, PartitionProver};
use crate::registered::RegisteredSealProof;

/// A SnapDeals job: the sector size, the commitments (raw 32 bytes, as wire.md's fields 30–32
/// carry them), and one bincode-serialised `PartitionProof` per partition.
#[derive(Clone, Debug)]
pub struct SnapJob<'a> {
    /// The sector size.
    pub sector_size: u64,
    /// The replica commitment before the update (the sector key's).
    pub comm_r_old: [u8; 32],
    /// The replica commitment after the update.
    pub comm_r_new: [u8; 32],
    /// The data commitment of the new data.
    pub comm_d_new: [u8; 32],
    /// One bincode-serialised `PartitionProof` per partition.
    pub vanilla_proofs: &'a [Vec<u8>],
}

fn update_config(sector_size: u64) -> Result<SectorUpdateConfig, FilecoinError> {
    let porep = RegisteredSealProof::v1_1(sector_size)?.porep_config();
    Ok(SectorUpdateConfig::from_porep_config(&porep))
}

/// Checks the number of vanilla proofs of a SnapDeals job of `sector_size`: one per partition
/// of the size's update config (returned). Cheap: for checking a request when it arrives.
pub fn check_vanilla_count(sector_size: u64, count: usize) -> Result<usize, FilecoinError> {
    let partitions = usize::from(update_config(sector_size)?.update_partitions);
    if count != partitions {
        return Err(FilecoinError::Mismatch {
            what: "the number of SnapDeals partition proofs",
            expected: partitions.to_string(),
            got: count.to_string(),
        });
    }
    Ok(partitions)
}

/// The parameter files of the SnapDeals circuit of `sector_size`, in `dir`.
pub fn snap_param_files(dir: &Path, sector_size: u64) -> Result<ParamFiles, FilecoinError> {
    update_config(sector_size)?;
    with_shape!(sector_size, snap_files_tree, dir, sector_size,)
}

fn snap_files_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    dir: &Path,
    sector_size: u64,
) -> Result<ParamFiles, FilecoinError> {
    Ok(ParamFiles::of::<
        EmptySectorUpdateCompound<Tree>,
        EmptySectorUpdateCircuit<Tree>,
        _,
    >(dir, &PublicParams::from_sector_size(sector_size)))
}

/// Generates the SnapDeals parameters of `sector_size` into `dir` with cuzk's setup.
pub fn generate_snap_params(
    dir: &Path,
    sector_size: u64,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    update_config(sector_size)?;
    with_shape!(sector_size, generate_snap_tree, dir, sector_size, seed,)
}

fn generate_snap_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    dir: &Path,
    sector_size: u64,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    let files = snap_files_tree::<Tree>(dir, sector_size)?;
    let blank = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&PublicParams::from_sector_size(sector_size));
    let report = params::generate(&files, blank, seed)?;
    Ok((files, report))
}

/// A partition's SnapDeals circuit and its public inputs.
pub type SnapCircuit<Tree> = (EmptySectorUpdateCircuit<Tree>, Vec<blstrs::Scalar>);

type Compound<'a, Tree> = compound_proof::PublicParams<'a, EmptySectorUpdate<Tree>>;

struct Prepared<'a, Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pp: Compound<'a, Tree>,
    pub_in: PublicInputs,
    vanilla: Vec<PartitionProof<Tree>>,
}

fn prepare<'a, Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    job: &SnapJob<'_>,
) -> Result<Prepared<'a, Tree>, FilecoinError> {
    let config = update_config(job.sector_size)?;
    let partitions = check_vanilla_count(job.sector_size, job.vanilla_proofs.len())?;
    let vanilla: Vec<PartitionProof<Tree>> = job
        .vanilla_proofs
        .iter()
        .map(|bytes| {
            bincode::deserialize(bytes)
                .map_err(|e| FilecoinError::InvalidInput(format!("vanilla proof: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let fp = FilecoinError::FilecoinProofs;
    let pub_in = PublicInputs {
        k: partitions,
        comm_r_old: <TreeRHasher as Hasher>::Domain::try_from_bytes(&job.comm_r_old).map_err(fp)?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&job.comm_d_new).map_err(fp)?,
        comm_r_new: <TreeRHasher as Hasher>::Domain::try_from_bytes(&job.comm_r_new).map_err(fp)?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: job.sector_size,
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pp = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&setup)
    .map_err(fp)?;
    Ok(Prepared {
        pp,
        pub_in,
        vanilla,
    })
}

fn circuit_and_inputs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    prep: &Prepared<'_, Tree>,
    k: usize,
) -> Result<SnapCircuit<Tree>, FilecoinError> {
    type C<Tree> = EmptySectorUpdateCompound<Tree>;
    let fp = FilecoinError::FilecoinProofs;
    let circuit = <C<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::circuit(
        &prep.pub_in,
        (),
        &prep.vanilla[k],
        &prep.pp.vanilla_params,
        Some(k),
    )
    .map_err(fp)?;
    let inputs = <C<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::generate_public_inputs(
        &prep.pub_in,
        &prep.pp.vanilla_params,
        Some(k),
    )
    .map_err(fp)?;
    Ok((circuit, inputs))
}

/// The circuits of every partition of `job`, as filecoin-proofs builds them, each with its
/// public inputs: for checking cuzk's proofs against another prover's.
pub fn snap_circuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    job: &SnapJob<'_>,
) -> Result<Vec<SnapCircuit<Tree>>, FilecoinError> {
    let prep = prepare::<Tree>(job)?;
    (0..prep.vanilla.len())
        .map(|k| circuit_and_inputs(&prep, k))
        .collect()
}

impl SnapJob<'_> {
    /// Proves the job with `prover` and the parameters in `dir`, verifies each partition, and
    /// returns `generate_empty_sector_update_proof_with_vanilla`'s bytes.
    pub fn prove(
        &self,
        dir: &Path,
        prover: &mut dyn PartitionProver,
    ) -> Result<FilecoinProof, FilecoinError> {
        update_config(self.sector_size)?;
        let size = self.sector_size;
        with_shape!(size, prove_snap_tree, self, dir, prover,)
    }
}

fn prove_snap_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    job: &SnapJob<'_>,
    dir: &Path,
    prover: &mut dyn PartitionProver,
) -> Result<FilecoinProof, FilecoinError> {
    let prep = prepare::<Tree>(job)?;
    let files = snap_files_tree::<Tree>(dir, job.sector_size)?;
    prove_partitions(&files, prep.vanilla.len(), prover, |k| {
        circuit_and_inputs(&prep, k)
    })
}
