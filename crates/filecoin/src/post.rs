//! WinningPoSt and WindowPoSt (one partition): from the vanilla proofs filecoin-proofs-api's
//! `generate_winning_post_with_vanilla` / `generate_single_window_post_with_vanilla` take (one
//! bincode-serialised `FallbackPoStSectorProof` per challenged sector) to the bytes they
//! return.
//!
//! This mirrors those functions step by step: the same PoSt config, public parameters
//! (`FallbackPoStCompound::setup`), public inputs (randomness and prover id as field elements,
//! the sectors of the vanilla proofs), the vanilla proofs partitioned by
//! `partition_vanilla_proofs` (Winning) or `single_partition_vanilla_proofs` (Window), then one
//! circuit per partition from `FallbackPoStCompound::circuit`, proven by the caller's
//! [`PartitionProver`] and verified, with the public inputs the verifiers build, before the
//! bytes are returned.

use std::path::Path;

use filecoin_hashers::Hasher;
use filecoin_proofs::{
    as_safe_commitment,
    parameters::{window_post_setup_params, winning_post_setup_params},
    partition_vanilla_proofs, single_partition_vanilla_proofs, with_shape, FallbackPoStSectorProof,
    MerkleTreeTrait, PoStConfig, PoStType, SectorSize, VanillaProof, WINDOW_POST_CHALLENGE_COUNT,
    WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT,
};
use storage_proofs_core::{api_version::ApiVersion, compound_proof, compound_proof::CompoundProof};
use storage_proofs_post::fallback::{
    FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicSector,
};

use crate::error::FilecoinError;
use crate::params::{self, GenerateReport, ParamFiles};
use crate::prove::{prove_partitions, FilecoinProof, PartitionProver};
use crate::registered::prover_id;

/// The WinningPoSt config filecoin-proofs-api uses for `sector_size` (66 challenges, one
/// sector, API 1.0.0 as `StackedDrgWinning*V1`).
pub fn winning_post_config(sector_size: u64) -> PoStConfig {
    PoStConfig {
        sector_size: SectorSize(sector_size),
        challenge_count: WINNING_POST_CHALLENGE_COUNT,
        sector_count: WINNING_POST_SECTOR_COUNT,
        typ: PoStType::Winning,
        priority: false,
        api_version: ApiVersion::V1_0_0,
    }
}

/// Which PoSt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PostKind {
    /// WinningPoSt: one sector, 66 challenges.
    Winning,
    /// WindowPoSt, one partition (`partition_index`) of a deadline's sectors.
    Window,
}

/// The PoSt config filecoin-proofs-api uses for `kind` and `sector_size`: Winning as above;
/// Window with 10 challenges per sector, the size's sectors per partition, API 1.2.0 (the
/// Rust `StackedDrgWindow*V1_2`, Go's `V1_1`).
pub fn post_config(kind: PostKind, sector_size: u64) -> Result<PoStConfig, FilecoinError> {
    crate::registered::RegisteredSealProof::v1_1(sector_size)?;
    Ok(match kind {
        PostKind::Winning => winning_post_config(sector_size),
        PostKind::Window => PoStConfig {
            sector_size: SectorSize(sector_size),
            challenge_count: WINDOW_POST_CHALLENGE_COUNT,
            sector_count: WINDOW_POST_SECTOR_COUNT
                .read()
                .map_err(|_| FilecoinError::InvalidInput("window sector counts poisoned".into()))?
                .get(&sector_size)
                .copied()
                .ok_or(FilecoinError::UnknownSectorSize(sector_size))?,
            typ: PoStType::Window,
            priority: false,
            api_version: ApiVersion::V1_2_0,
        },
    })
}

/// Checks the number of vanilla proofs of a `kind` PoSt job of `sector_size` (one per
/// challenged sector), as proving would: exactly the config's sector count for Winning, one to
/// the sector count of a partition for Window. Cheap: for checking a request when it arrives.
pub fn check_vanilla_count(
    kind: PostKind,
    sector_size: u64,
    count: usize,
) -> Result<(), FilecoinError> {
    let config = post_config(kind, sector_size)?;
    let (ok, expected) = match kind {
        PostKind::Winning => (
            count == config.sector_count,
            config.sector_count.to_string(),
        ),
        PostKind::Window => (
            (1..=config.sector_count).contains(&count),
            format!("1 to {}", config.sector_count),
        ),
    };
    if !ok {
        return Err(FilecoinError::Mismatch {
            what: "the number of vanilla proofs",
            expected,
            got: count.to_string(),
        });
    }
    Ok(())
}

type Compound<'a, Tree> = compound_proof::PublicParams<'a, FallbackPoSt<'a, Tree>>;

fn compound_params<'a, Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<Compound<'a, Tree>, FilecoinError> {
    let vanilla_params = match config.typ {
        PoStType::Winning => {
            winning_post_setup_params(config).map_err(FilecoinError::FilecoinProofs)?
        }
        PoStType::Window => window_post_setup_params(config),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        // One partition: Winning has one; a Window job is one partition of a deadline.
        partitions: None,
        priority: false,
    };
    <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::setup(&setup)
        .map_err(FilecoinError::FilecoinProofs)
}

fn files_of<Tree: 'static + MerkleTreeTrait>(dir: &Path, pp: &Compound<'_, Tree>) -> ParamFiles {
    ParamFiles::of::<FallbackPoStCompound<Tree>, FallbackPoStCircuit<Tree>, _>(
        dir,
        &pp.vanilla_params,
    )
}

/// The parameter files of the `kind` PoSt circuit of `sector_size`, in `dir`.
pub fn post_param_files(
    dir: &Path,
    kind: PostKind,
    sector_size: u64,
) -> Result<ParamFiles, FilecoinError> {
    let config = post_config(kind, sector_size)?;
    with_shape!(sector_size, post_param_files_tree, dir, &config,)
}

fn post_param_files_tree<Tree: 'static + MerkleTreeTrait>(
    dir: &Path,
    config: &PoStConfig,
) -> Result<ParamFiles, FilecoinError> {
    let pp = compound_params::<Tree>(config)?;
    Ok(files_of(dir, &pp))
}

/// Generates the `kind` PoSt parameters of `sector_size` into `dir` with cuzk's setup.
pub fn generate_post_params(
    dir: &Path,
    kind: PostKind,
    sector_size: u64,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    let config = post_config(kind, sector_size)?;
    with_shape!(sector_size, generate_post_tree, dir, &config, seed,)
}

fn generate_post_tree<Tree: 'static + MerkleTreeTrait>(
    dir: &Path,
    config: &PoStConfig,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    let pp = compound_params::<Tree>(config)?;
    let files = files_of(dir, &pp);
    let blank =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(
            &pp.vanilla_params,
        );
    let report = params::generate(&files, blank, seed)?;
    Ok((files, report))
}

/// A PoSt job: the kind, the sector size, the 32-byte challenge randomness, the miner, the
/// partition (Window), and the vanilla proofs as bincode bytes, one per challenged sector.
#[derive(Clone, Debug)]
pub struct PostJob<'a> {
    /// Winning or Window.
    pub kind: PostKind,
    /// The WindowPoSt partition this job proves (0 for Winning).
    pub partition_index: usize,
    /// The sector size of the challenged sectors.
    pub sector_size: u64,
    /// The challenge seed.
    pub randomness: [u8; 32],
    /// The miner's actor id.
    pub miner_id: u64,
    /// One bincode-serialised `FallbackPoStSectorProof` per challenged sector.
    pub vanilla_proofs: &'a [Vec<u8>],
}

impl PostJob<'_> {
    /// Proves the job with `prover` and the parameters in `dir`, verifies the proof, and
    /// returns `generate_winning_post_with_vanilla`'s (or `generate_single_window_post_with_vanilla`'s) bytes.
    pub fn prove(
        &self,
        dir: &Path,
        prover: &mut dyn PartitionProver,
    ) -> Result<FilecoinProof, FilecoinError> {
        crate::registered::RegisteredSealProof::v1_1(self.sector_size)?;
        let size = self.sector_size;
        with_shape!(size, prove_post_tree, self, dir, prover,)
    }
}

/// A partition's WinningPoSt circuit and its public inputs.
pub type PostCircuit<Tree> = (FallbackPoStCircuit<Tree>, Vec<blstrs::Scalar>);

/// The circuits of every partition of `job`, as filecoin-proofs builds them, each with its
/// public inputs: for checking cuzk's proofs against another prover's.
pub fn post_circuits<Tree: 'static + MerkleTreeTrait>(
    job: &PostJob<'_>,
) -> Result<Vec<PostCircuit<Tree>>, FilecoinError> {
    let (pp, pub_in, verify_in, partitioned) = prepare::<Tree>(job)?;
    (0..partitioned.len())
        .map(|k| circuit_and_inputs::<Tree>(&pp, &pub_in, &verify_in, &partitioned[k], k))
        .collect()
}

/// The public parameters, the prover's public inputs, the verifier's (each sector repeated
/// once per challenge, as `verify_winning_post` builds them: the circuit's challenges are
/// those of the repeated sectors), and the partitioned vanilla proofs.
type Prepared<'a, Tree> = (
    Compound<'a, Tree>,
    PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain>,
    PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain>,
    Vec<VanillaProof<Tree>>,
);

fn prepare<'a, Tree: 'static + MerkleTreeTrait>(
    job: &PostJob<'_>,
) -> Result<Prepared<'a, Tree>, FilecoinError> {
    let config = post_config(job.kind, job.sector_size)?;
    check_vanilla_count(job.kind, job.sector_size, job.vanilla_proofs.len())?;
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = job
        .vanilla_proofs
        .iter()
        .map(|bytes| {
            bincode::deserialize(bytes)
                .map_err(|e| FilecoinError::InvalidInput(format!("vanilla proof: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let fp = FilecoinError::FilecoinProofs;
    let randomness =
        as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&job.randomness, "randomness")
            .map_err(fp)?;
    let prover_id = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(
        &prover_id(job.miner_id),
        "prover_id",
    )
    .map_err(fp)?;
    let pp = compound_params::<Tree>(&config)?;
    let pub_in = PublicInputs {
        randomness,
        prover_id,
        sectors: vanilla
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: match job.kind {
            PostKind::Winning => None,
            PostKind::Window => Some(job.partition_index),
        },
    };
    let mut verify_in = pub_in.clone();
    let partitioned = match job.kind {
        PostKind::Winning => {
            // verify_winning_post repeats the sector once per challenge: the circuit's
            // challenges are those of the repeated sectors.
            verify_in.sectors = (0..pp.vanilla_params.sector_count)
                .flat_map(|_| pub_in.sectors.iter().cloned())
                .collect();
            let partitions = pp.partitions.unwrap_or(1);
            partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_in, partitions, &vanilla)
                .map_err(fp)?
        }
        PostKind::Window => {
            vec![
                single_partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_in, &vanilla)
                    .map_err(fp)?,
            ]
        }
    };
    Ok((pp, pub_in, verify_in, partitioned))
}

fn circuit_and_inputs<Tree: 'static + MerkleTreeTrait>(
    pp: &Compound<'_, Tree>,
    pub_in: &PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    verify_in: &PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    proof: &VanillaProof<Tree>,
    k: usize,
) -> Result<PostCircuit<Tree>, FilecoinError> {
    let fp = FilecoinError::FilecoinProofs;
    let circuit =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            pub_in,
            Default::default(),
            proof,
            &pp.vanilla_params,
            Some(k),
        )
        .map_err(fp)?;
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
        verify_in,
        &pp.vanilla_params,
        Some(k),
    )
    .map_err(fp)?;
    Ok((circuit, inputs))
}

fn prove_post_tree<Tree: 'static + MerkleTreeTrait>(
    job: &PostJob<'_>,
    dir: &Path,
    prover: &mut dyn PartitionProver,
) -> Result<FilecoinProof, FilecoinError> {
    let (pp, pub_in, verify_in, partitioned) = prepare::<Tree>(job)?;
    let files = files_of(dir, &pp);
    prove_partitions(&files, partitioned.len(), prover, |k| {
        circuit_and_inputs::<Tree>(&pp, &pub_in, &verify_in, &partitioned[k], k)
    })
}
