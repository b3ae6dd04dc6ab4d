//! What the Filecoin end-to-end tests share: the test data, the parameter cache, cuzk's prover
//! with fixed r and s, and the comparison with bellperson's bytes.
#![allow(dead_code)] // Each test file uses its own subset.

use std::path::{Path, PathBuf};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_filecoin::filecoin_proofs::{self, MerkleTreeTrait, PublicReplicaInfo, TreeRHasher};
use cuzk_filecoin::porep::{generate_params, partition_circuits};
use cuzk_filecoin::post::{
    generate_post_params, post_circuits, post_config, post_param_files, PostJob, PostKind,
};
use cuzk_filecoin::snap::{generate_snap_params, snap_circuits, snap_param_files, SnapJob};
use cuzk_filecoin::{
    C1Output, PartitionProver, PorepJob, PostJobFile, RegisteredSealProof, SectorId, SnapJobFile,
};
use cuzk_groth16::Parameters;
use cuzk_pipeline::{CpuBackend, JobContext, PartitionInput, Prover, ProverConfig};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

/// A 32-byte value written as 64 hex digits.
pub fn hex32(v: &serde_json::Value) -> [u8; 32] {
    cuzk_filecoin::jobs::decode_hex32("a 32-byte value", v.as_str().expect("a string")).unwrap()
}

/// The per-machine parameter folder the CLI uses ([`cuzk_filecoin::params::test_params_dir`]),
/// also named as filecoin-proofs' parameter cache so that its verifiers find the verifying keys
/// there.
pub fn params_dir() -> PathBuf {
    let dir = cuzk_filecoin::params::test_params_dir().expect("CUZK_CACHE_DIR or HOME");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}

/// r and s for partition `k`, from a seed per test file.
pub fn fixed_rs(seed: u64, k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// cuzk's pipeline with r, s fixed by the partition index.
pub fn cuzk_prover(seed: u64) -> impl PartitionProver {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    move |params: &Parameters, input: PartitionInput, k: usize| {
        let (r, s) = fixed_rs(seed, k);
        Ok(prover
            .prove(params, input, r, s, JobContext::default(), 0)?
            .0)
    }
}

/// Asserts that bellperson's `create_proof` gives, partition by partition, the bytes of `proof`
/// (192 per partition) for the same circuits, the parameters in `params` and the same r, s.
pub fn assert_bellperson_bytes<C: Circuit<Scalar> + Send>(
    params: &Path,
    circuits: impl IntoIterator<Item = C>,
    seed: u64,
    proof: &[u8],
) {
    let bp_params = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        std::io::BufReader::new(std::fs::File::open(params).unwrap()),
        false,
    )
    .unwrap();
    for (k, circuit) in circuits.into_iter().enumerate() {
        let (r, s) = fixed_rs(seed, k);
        let bp = bellperson::groth16::create_proof(circuit, &bp_params, r, s).unwrap();
        let mut bytes = Vec::new();
        bp.write(&mut bytes).unwrap();
        assert_eq!(bytes[..], proof[192 * k..192 * (k + 1)], "partition {k}");
    }
}

/// The text of `testdata/filecoin/<name>`.
pub fn testdata(name: &str) -> String {
    std::fs::read_to_string(Path::new(TESTDATA).join(name)).unwrap_or_else(|e| {
        panic!("testdata/filecoin/{name}: {e} (made by `cargo xtask gen-vanilla`)")
    })
}

/// PoRep C2 of gen_vanilla's sector of `size` (`porep-<size>.c1.json` and its `.meta.json`),
/// end to end: proven by cuzk (its parameters made first where missing), accepted by
/// filecoin-proofs' `verify_seal`, and bellperson's bytes for the same circuits and r, s.
pub fn check_porep<Tree: 'static + MerkleTreeTrait>(size: &str, seed: u64) {
    let dir = params_dir();
    let meta: serde_json::Value =
        serde_json::from_str(&testdata(&format!("porep-{size}.meta.json"))).unwrap();
    let c1 = C1Output::parse(testdata(&format!("porep-{size}.c1.json")).as_bytes(), None).unwrap();
    let (files, report) = generate_params(&dir, c1.registered_proof, 0).expect("params");
    eprintln!("parameters {} ({report:?})", files.params.display());
    let sector = SectorId {
        miner_id: meta["miner_id"].as_u64().unwrap(),
        sector_number: meta["sector_number"].as_u64().unwrap(),
    };
    let job = PorepJob::new(&c1, sector).unwrap();
    let proof = job.prove(&dir, &mut cuzk_prover(seed)).unwrap();
    let config = c1.registered_proof.porep_config();
    assert_eq!(proof.bytes.len(), 192 * usize::from(config.partitions));

    let ok = filecoin_proofs::verify_seal::<Tree>(
        &config,
        hex32(&meta["comm_r"]),
        hex32(&meta["comm_d"]),
        cuzk_filecoin::prover_id(sector.miner_id),
        sector.sector_number.into(),
        hex32(&meta["ticket"]),
        hex32(&meta["seed"]),
        &proof.bytes,
    )
    .unwrap();
    assert!(ok, "verify_seal rejects cuzk's {size} proof");

    let circuits = partition_circuits::<Tree>(&job).unwrap();
    assert_bellperson_bytes(
        &files.params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        seed,
        &proof.bytes,
    );
}

/// A PoSt of `kind` from the job file `file` (gen_vanilla's, of a sector of `sector_size`
/// bytes), end to end: proven by cuzk, accepted by `verify_winning_post` or
/// `verify_window_post`, and bellperson's bytes.
pub fn check_post<Tree: 'static + MerkleTreeTrait>(
    kind: PostKind,
    sector_size: u64,
    file: &str,
    seed: u64,
) {
    let dir = params_dir();
    generate_post_params(&dir, kind, sector_size, 0).unwrap();
    let f = PostJobFile::parse(&testdata(file)).unwrap();
    let job = PostJob {
        kind,
        partition_index: 0,
        sector_size,
        randomness: f.randomness,
        miner_id: f.miner_id,
        vanilla_proofs: &f.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut cuzk_prover(seed)).unwrap();
    assert_eq!(proof.bytes.len(), 192);

    let config = post_config(kind, sector_size).unwrap();
    let prover_id = cuzk_filecoin::prover_id(f.miner_id);
    let replica = PublicReplicaInfo::new(f.comm_r.expect("comm_r")).unwrap();
    let sector = f.sector_number.expect("sector_number").into();
    let ok = match kind {
        PostKind::Winning => filecoin_proofs::verify_winning_post::<Tree>(
            &config,
            &f.randomness,
            &[(sector, replica)],
            prover_id,
            &proof.bytes,
        ),
        PostKind::Window => filecoin_proofs::verify_window_post::<Tree>(
            &config,
            &f.randomness,
            &[(sector, replica)].into_iter().collect(),
            prover_id,
            &proof.bytes,
        ),
    }
    .unwrap();
    assert!(ok, "filecoin-proofs rejects cuzk's {kind:?} proof ({file})");

    let files = post_param_files(&dir, kind, sector_size).unwrap();
    let circuits = post_circuits::<Tree>(&job).unwrap();
    assert_bellperson_bytes(
        &files.params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        seed,
        &proof.bytes,
    );
}

/// The SnapDeals update in the job file `file` (of a sector of `sector_size` bytes), end to
/// end: proven by cuzk, accepted by `verify_empty_sector_update_proof`, and bellperson's bytes.
pub fn check_snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    file: &str,
    seed: u64,
) {
    let dir = params_dir();
    generate_snap_params(&dir, sector_size, 0).unwrap();
    let f = SnapJobFile::parse(&testdata(file)).unwrap();
    let job = SnapJob {
        sector_size,
        comm_r_old: f.comm_r_old,
        comm_r_new: f.comm_r_new,
        comm_d_new: f.comm_d_new,
        vanilla_proofs: &f.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut cuzk_prover(seed)).unwrap();
    assert_eq!(proof.bytes.len(), 192 * f.vanilla_proofs.len());

    let config = RegisteredSealProof::v1_1(sector_size)
        .unwrap()
        .porep_config();
    let ok = filecoin_proofs::verify_empty_sector_update_proof::<Tree>(
        &config,
        &proof.bytes,
        f.comm_r_old,
        f.comm_r_new,
        f.comm_d_new,
    )
    .unwrap();
    assert!(
        ok,
        "verify_empty_sector_update_proof rejects cuzk's proof ({file})"
    );

    let circuits = snap_circuits::<Tree>(&job).unwrap();
    assert_bellperson_bytes(
        &snap_param_files(&dir, sector_size).unwrap().params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        seed,
        &proof.bytes,
    );
}
