//! PoRep C2 at 2 KiB, end to end: a real C1 output (sealed by filecoin-proofs, in
//! `testdata/filecoin/`), proven by cuzk, accepted by filecoin-proofs' `verify_seal`, and
//! byte-identical to bellperson's `create_proof` for the same r and s; bad input gets a typed
//! error.
//!
//! The 2 KiB parameters are made once per machine by cuzk's setup (seed 0) into
//! `$CUZK_CACHE_DIR/filecoin-params/seed-0` (default `~/.cache/cuzk/...`), the folder
//! filecoin-proofs' verifier is pointed at.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use blstrs::Scalar;
use cuzk_filecoin::filecoin_proofs::{self, SectorShape2KiB};
use cuzk_filecoin::porep::{generate_params, partition_circuits};
use cuzk_filecoin::{
    C1Output, FilecoinError, PartitionProver, PorepJob, RegisteredSealProof, SectorId,
};
use cuzk_groth16::{Parameters, Proof, ProvingAssignment};
use cuzk_pipeline::{CpuBackend, Prover, ProverConfig};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");
const SECTOR: SectorId = SectorId {
    miner_id: 1000,
    sector_number: 1,
};

fn c1_bytes() -> Vec<u8> {
    std::fs::read(Path::new(TESTDATA).join("porep-2KiB.c1.json")).expect("testdata")
}

fn meta() -> serde_json::Value {
    let text = std::fs::read_to_string(Path::new(TESTDATA).join("porep-2KiB.meta.json"))
        .expect("testdata");
    serde_json::from_str(&text).expect("meta json")
}

/// The parameter folder, generated once per machine (and once per test process).
fn param_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = std::env::var_os("CUZK_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cuzk")))
            .expect("CUZK_CACHE_DIR or HOME");
        let dir = root.join("filecoin-params/seed-0");
        let (files, report) =
            generate_params(&dir, RegisteredSealProof::STACKED_DRG_2KIB_V1_1, 0).expect("params");
        eprintln!("parameters {} ({report:?})", files.params.display());
        // filecoin-proofs reads its folder from the environment, once.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    })
}

/// cuzk's pipeline with r, s fixed by the partition index.
fn cuzk_prover() -> impl PartitionProver {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    move |params: &Parameters, a: ProvingAssignment, k: usize| {
        let (r, s) = fixed_rs(k);
        Ok(prover
            .prove_batch(params, vec![a], &[r], &[s], 0)?
            .remove(0)
            .0)
    }
}

fn fixed_rs(k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(1000 + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

fn hex32(v: &serde_json::Value) -> [u8; 32] {
    let s = v.as_str().expect("hex string");
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

#[test]
fn porep_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    let dir = param_dir();
    let c1 = C1Output::parse(&c1_bytes(), None).unwrap();
    let job = PorepJob::new(&c1, SECTOR).unwrap();
    let proof = job.prove(dir, &mut cuzk_prover()).unwrap();
    assert_eq!(proof.bytes.len(), 192);

    // filecoin-proofs' own verifier, with the parameters' .vk from the cache folder.
    let m = meta();
    let config = c1.registered_proof.porep_config();
    let ok = filecoin_proofs::verify_seal::<SectorShape2KiB>(
        &config,
        hex32(&m["comm_r"]),
        hex32(&m["comm_d"]),
        cuzk_filecoin::prover_id(SECTOR.miner_id),
        SECTOR.sector_number.into(),
        hex32(&m["ticket"]),
        hex32(&m["seed"]),
        &proof.bytes,
    )
    .unwrap();
    assert!(ok, "verify_seal rejects cuzk's proof");

    // bellperson on the same circuit, parameters, r and s.
    let files = job.param_files(dir).unwrap();
    let bp_params = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        std::io::BufReader::new(std::fs::File::open(&files.params).unwrap()),
        false,
    )
    .unwrap();
    for (k, (circuit, _inputs)) in partition_circuits::<SectorShape2KiB>(&job)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        let (r, s) = fixed_rs(k);
        let bp = bellperson::groth16::create_proof(circuit, &bp_params, r, s).unwrap();
        let mut bytes = Vec::new();
        bp.write(&mut bytes).unwrap();
        assert_eq!(
            bytes[..],
            proof.bytes[192 * k..192 * (k + 1)],
            "partition {k}"
        );
    }
}

#[test]
fn tampered_vanilla_proofs_are_unsatisfied() {
    let dir = param_dir();
    let c1 = C1Output::parse(&c1_bytes(), None).unwrap();
    // Change one byte of the first data leaf (comm_d's inclusion proof): the circuit no longer
    // holds. (Roots are not witnessed: the circuit uses the public commitments instead.)
    let raw = c1.vanilla_proofs.get();
    let at = raw.find("\"leaf\":[").unwrap();
    let digits = raw[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let end = raw[digits..].find(|c: char| !c.is_ascii_digit()).unwrap() + digits;
    let old: u32 = raw[digits..end].parse().unwrap();
    let new = format!("{}{}{}", &raw[..digits], (old + 1) % 100, &raw[end..]);
    let tampered = C1Output {
        vanilla_proofs: serde_json::value::RawValue::from_string(new).unwrap(),
        ..c1
    };
    let job = PorepJob::new(&tampered, SECTOR).unwrap();
    let never = |_: &Parameters,
                 _: ProvingAssignment,
                 _: usize|
     -> Result<Proof, Box<dyn std::error::Error + Send + Sync>> {
        panic!("an unsatisfied circuit reached the prover")
    };
    let mut never = never;
    match job.prove(dir, &mut never) {
        Err(FilecoinError::Unsatisfied { partition: 0, .. }) => {}
        other => panic!("expected Unsatisfied, got {other:?}"),
    }
}
