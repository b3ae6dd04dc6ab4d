//! PoRep C2: from a C1 output to the bytes filecoin-proofs' `seal_commit_phase2` returns.
//!
//! This mirrors filecoin-proofs' `seal_commit_phase2_circuit_proofs` step by step, through its
//! public API: the same checks of the C1 output, the same public inputs, the same compound
//! public parameters (`StackedCompound::setup`), one circuit per partition from
//! `StackedCompound::circuit`, the public inputs from `generate_public_inputs`. Only the
//! Groth16 prover is cuzk's, passed in as a [`PartitionProver`], so this crate produces
//! partition inputs (assignments or witnesses) and never depends on the pipeline. Every proof is
//! verified before the bytes are returned, with the replica id derived from the miner and sector
//! as `verify_seal` derives it.

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, parameters::setup_params, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, DefaultTreeHasher, MerkleTreeTrait, VanillaSealProof,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{
    generate_replica_id, PublicInputs, StackedCircuit, StackedCompound, StackedDrg, Tau,
};

use crate::c1::{C1Output, C1Summary};
use crate::error::FilecoinError;
use crate::params::{self, GenerateReport, ParamFiles};
use crate::prove::{prove_partitions, FilecoinProof, PartitionProver};
use crate::registered::{prover_id, RegisteredSealProof};

/// The identity of the sector a C1 output belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorId {
    /// The miner's actor id (the `1000` of `f01000`).
    pub miner_id: u64,
    /// The sector number.
    pub sector_number: u64,
}

/// The parameter files of `registered_proof`'s PoRep circuit in `dir`.
pub fn param_files(
    dir: &std::path::Path,
    registered_proof: RegisteredSealProof,
) -> Result<ParamFiles, FilecoinError> {
    let size = registered_proof.sector_size;
    with_shape!(size, param_files_tree, dir, registered_proof,)
}

fn param_files_tree<Tree: 'static + MerkleTreeTrait>(
    dir: &std::path::Path,
    registered_proof: RegisteredSealProof,
) -> Result<ParamFiles, FilecoinError> {
    let pp = compound_params::<Tree>(registered_proof)?;
    Ok(ParamFiles::of::<
        StackedCompound<Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >(dir, &pp.vanilla_params))
}

/// Generates `registered_proof`'s PoRep parameters into `dir` with cuzk's setup seeded by
/// `seed` (see [`params::generate`]).
pub fn generate_params(
    dir: &std::path::Path,
    registered_proof: RegisteredSealProof,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    let size = registered_proof.sector_size;
    with_shape!(size, generate_params_tree, dir, registered_proof, seed,)
}

fn generate_params_tree<Tree: 'static + MerkleTreeTrait>(
    dir: &std::path::Path,
    registered_proof: RegisteredSealProof,
    seed: u64,
) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
    let pp = compound_params::<Tree>(registered_proof)?;
    let files = ParamFiles::of::<
        StackedCompound<Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >(dir, &pp.vanilla_params);
    let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pp.vanilla_params);
    let report = params::generate(&files, blank, seed)?;
    Ok((files, report))
}

type Compound<'a, Tree> =
    compound_proof::PublicParams<'a, StackedDrg<'a, Tree, DefaultPieceHasher>>;

/// The compound public parameters, as `seal_commit_phase2` sets them up.
fn compound_params<'a, Tree: 'static + MerkleTreeTrait>(
    registered_proof: RegisteredSealProof,
) -> Result<Compound<'a, Tree>, FilecoinError> {
    let config = registered_proof.porep_config();
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).map_err(FilecoinError::FilecoinProofs)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(FilecoinError::FilecoinProofs)
}

/// One PoRep C2 job, parsed and checked, ready to prove partition by partition.
pub struct PorepJob<'a> {
    c1: &'a C1Output,
    sector: SectorId,
}

impl std::fmt::Debug for PorepJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorepJob")
            .field("registered_proof", &self.c1.registered_proof)
            .field("sector", &self.sector)
            .finish()
    }
}

impl<'a> PorepJob<'a> {
    /// A job for `c1`, sealed by `sector.miner_id` as sector `sector.sector_number`. A sector
    /// number that disagrees with Curio's wrapper is an error.
    pub fn new(c1: &'a C1Output, sector: SectorId) -> Result<Self, FilecoinError> {
        check_sector_number(c1.sector_number, sector)?;
        Ok(Self { c1, sector })
    }

    /// Checks a C1 output as [`PorepJob::new`] and proving would before any circuit is built,
    /// from its [`C1Summary`] (cheap: no vanilla proof is decoded): the sector number, the
    /// commitments, the number of partitions of vanilla proofs, and that the replica id is
    /// `sector`'s. What is left for proving to find is a vanilla proof that does not decode
    /// or does not satisfy its circuit.
    pub fn check(c1: &C1Summary, sector: SectorId) -> Result<(), FilecoinError> {
        check_sector_number(c1.sector_number, sector)?;
        check_commitments(&c1.comm_r, &c1.comm_d, &c1.seed)?;
        check_partitions(c1.partition_sizes.iter().copied(), c1.registered_proof)?;
        check_replica_id::<DefaultTreeHasher>(
            &c1.replica_id,
            &c1.ticket,
            c1.comm_d,
            c1.registered_proof,
            sector,
        )?;
        Ok(())
    }

    /// The parameter files this job needs, in `dir`.
    pub fn param_files(&self, dir: &std::path::Path) -> Result<ParamFiles, FilecoinError> {
        param_files(dir, self.c1.registered_proof)
    }

    /// Proves every partition with `prover` and the parameters in `dir`, verifies each proof,
    /// and returns `seal_commit_phase2`'s bytes.
    pub fn prove(
        &self,
        dir: &std::path::Path,
        prover: &mut dyn PartitionProver,
    ) -> Result<FilecoinProof, FilecoinError> {
        let size = self.c1.registered_proof.sector_size;
        with_shape!(size, prove_tree, self, dir, prover,)
    }
}

/// A partition's circuit and its public inputs.
pub type PartitionCircuit<Tree> = (
    StackedCircuit<Tree, DefaultPieceHasher>,
    Vec<blstrs::Scalar>,
);

/// The circuits of every partition of `job`, as `seal_commit_phase2` builds them, each with its
/// public inputs: for checking cuzk's proofs against another prover's. `Tree` must be the
/// sector's shape (`filecoin_proofs::SectorShape2KiB`, ...).
pub fn partition_circuits<Tree: 'static + MerkleTreeTrait>(
    job: &PorepJob<'_>,
) -> Result<Vec<PartitionCircuit<Tree>>, FilecoinError> {
    let prep = prepare::<Tree>(job)?;
    (0..prep.vanilla.len())
        .map(|k| {
            Ok((
                circuit::<Tree>(&prep, &prep.vanilla[k], k)?,
                public_inputs::<Tree>(&prep, k)?,
            ))
        })
        .collect()
}

struct Prepared<'a, Tree: 'static + MerkleTreeTrait> {
    pub_in: PublicInputs<<Tree::Hasher as Hasher>::Domain, <DefaultPieceHasher as Hasher>::Domain>,
    pp: Compound<'a, Tree>,
    vanilla: Vec<Vec<VanillaSealProof<Tree>>>,
}

/// The checks and set-up of `seal_commit_phase2_circuit_proofs`, and `verify_seal`'s replica id.
fn prepare<'a, Tree: 'static + MerkleTreeTrait>(
    job: &PorepJob<'_>,
) -> Result<Prepared<'a, Tree>, FilecoinError> {
    let c1 = job.c1;
    check_commitments(&c1.comm_r, &c1.comm_d, &c1.seed)?;
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> =
        serde_json::from_str(c1.vanilla_proofs.get()).map_err(FilecoinError::Json)?;
    check_partitions(vanilla.iter().map(Vec::len), c1.registered_proof)?;
    let comm_r = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&c1.comm_r, "comm_r")
        .map_err(FilecoinError::FilecoinProofs)?;
    let comm_d =
        DefaultPieceDomain::try_from_bytes(&c1.comm_d).map_err(FilecoinError::FilecoinProofs)?;
    let replica_id = check_replica_id::<Tree::Hasher>(
        &c1.replica_id,
        &c1.ticket,
        c1.comm_d,
        c1.registered_proof,
        job.sector,
    )?;

    let pub_in = PublicInputs {
        replica_id,
        tau: Some(Tau { comm_d, comm_r }),
        k: None,
        seed: Some(c1.seed),
    };
    Ok(Prepared {
        pub_in,
        pp: compound_params::<Tree>(c1.registered_proof)?,
        vanilla,
    })
}

/// A sector number Curio's wrapper names must be the request's.
fn check_sector_number(wrapped: Option<u64>, sector: SectorId) -> Result<(), FilecoinError> {
    match wrapped {
        Some(n) if n != sector.sector_number => Err(FilecoinError::Mismatch {
            what: "the sector number",
            expected: n.to_string(),
            got: sector.sector_number.to_string(),
        }),
        _ => Ok(()),
    }
}

/// `seal_commit_phase2`'s checks of the commitments and the seed.
fn check_commitments(
    comm_r: &[u8; 32],
    comm_d: &[u8; 32],
    seed: &[u8; 32],
) -> Result<(), FilecoinError> {
    let invalid = |m: &str| Err(FilecoinError::InvalidInput(m.to_string()));
    if *comm_d == [0; 32] {
        return invalid("the C1 output's comm_d is all zeros");
    }
    if *comm_r == [0; 32] {
        return invalid("the C1 output's comm_r is all zeros");
    }
    if *seed == [0; 32] {
        return invalid("the C1 output's seed (the PoRep challenge seed) is all zeros");
    }
    Ok(())
}

/// One non-empty list of vanilla proofs per partition of the registered proof.
fn check_partitions(
    sizes: impl ExactSizeIterator<Item = usize>,
    registered_proof: RegisteredSealProof,
) -> Result<(), FilecoinError> {
    let got = sizes.len();
    if got == 0 || sizes.into_iter().any(|n| n == 0) {
        return Err(FilecoinError::InvalidInput(
            "the C1 output contains no vanilla proofs".into(),
        ));
    }
    let partitions = usize::from(registered_proof.porep_config().partitions);
    if got != partitions {
        return Err(FilecoinError::Mismatch {
            what: "the number of partitions of vanilla proofs",
            expected: partitions.to_string(),
            got: got.to_string(),
        });
    }
    Ok(())
}

/// The C1 output's replica id, checked against the one `verify_seal` derives from the miner
/// and the sector: a C1 output of another sector or miner would prove, then fail there.
fn check_replica_id<H: Hasher>(
    replica_id: &[u8; 32],
    ticket: &[u8; 32],
    comm_d: [u8; 32],
    registered_proof: RegisteredSealProof,
    sector: SectorId,
) -> Result<H::Domain, FilecoinError> {
    let replica_id =
        H::Domain::try_from_bytes(replica_id).map_err(FilecoinError::FilecoinProofs)?;
    let derived = generate_replica_id::<H, _>(
        &prover_id(sector.miner_id),
        sector.sector_number,
        ticket,
        comm_d,
        &registered_proof.porep_id(),
    );
    if derived != replica_id {
        return Err(FilecoinError::Mismatch {
            what: "the C1 output's replica id",
            expected: format!(
                "the one of miner {} sector {}",
                sector.miner_id, sector.sector_number
            ),
            got: "another (the C1 output belongs to another miner, sector or ticket)".into(),
        });
    }
    Ok(replica_id)
}

fn prove_tree<Tree: 'static + MerkleTreeTrait>(
    job: &PorepJob<'_>,
    dir: &std::path::Path,
    prover: &mut dyn PartitionProver,
) -> Result<FilecoinProof, FilecoinError> {
    let prep = prepare::<Tree>(job)?;
    let files = ParamFiles::of::<
        StackedCompound<Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >(dir, &prep.pp.vanilla_params);

    prove_partitions(&files, prep.vanilla.len(), prover, |k| {
        Ok((
            circuit::<Tree>(&prep, &prep.vanilla[k], k)?,
            public_inputs::<Tree>(&prep, k)?,
        ))
    })
}

// `CompoundProof::circuit` takes the partition's proofs as `&Vec`, and the stacked circuit's
// component private inputs are `()`.
#[allow(clippy::ptr_arg, clippy::unit_arg)]
fn circuit<Tree: 'static + MerkleTreeTrait>(
    prep: &Prepared<'_, Tree>,
    vanilla: &Vec<VanillaSealProof<Tree>>,
    k: usize,
) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, FilecoinError> {
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::circuit(
        &prep.pub_in,
        Default::default(),
        vanilla,
        &prep.pp.vanilla_params,
        Some(k),
    )
    .map_err(FilecoinError::FilecoinProofs)
}

fn public_inputs<Tree: 'static + MerkleTreeTrait>(
    prep: &Prepared<'_, Tree>,
    k: usize,
) -> Result<Vec<blstrs::Scalar>, FilecoinError> {
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::generate_public_inputs(&prep.pub_in, &prep.pp.vanilla_params, Some(k))
    .map_err(FilecoinError::FilecoinProofs)
}
