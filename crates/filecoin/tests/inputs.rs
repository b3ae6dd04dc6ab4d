//! Bad input gets a typed error naming its cause, never a panic: each form of the C1 output
//! parses to the same thing; truncated or non-JSON input, bad base64, unknown or mismatched
//! registered proofs and sector sizes, another sector's number, and parameters of another
//! circuit are refused.

use std::path::Path;

use base64::Engine as _;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_filecoin::porep::param_files;
use cuzk_filecoin::{C1Output, FilecoinError, PorepJob, RegisteredSealProof, SectorId};
use cuzk_groth16::{Parameters, Proof, ProvingAssignment};
use rand_core::SeedableRng;

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");
const SECTOR: SectorId = SectorId {
    miner_id: 1000,
    sector_number: 1,
};
const P2K: RegisteredSealProof = RegisteredSealProof::STACKED_DRG_2KIB_V1_1;

fn c1_bytes() -> Vec<u8> {
    std::fs::read(Path::new(TESTDATA).join("porep-2KiB.c1.json")).expect("testdata")
}

fn parse(bytes: &[u8], registered: Option<RegisteredSealProof>) -> Result<C1Output, FilecoinError> {
    C1Output::parse(bytes, registered)
}

/// The `Phase1Out` of the test C1 output, decoded: filecoin-proofs-api's JSON.
fn api_json() -> String {
    let wrapper: serde_json::Value = serde_json::from_slice(&c1_bytes()).unwrap();
    let b64 = wrapper["Phase1Out"].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap()
}

/// filecoin-proofs' own JSON: no registered proof, the vanilla proofs a bare array.
fn fp_json() -> String {
    let mut v: serde_json::Value = serde_json::from_str(&api_json()).unwrap();
    let obj = v.as_object_mut().unwrap();
    obj.remove("registered_proof");
    let inner = obj["vanilla_proofs"]["StackedDrg2KiBV1"].take();
    obj.insert("vanilla_proofs".into(), inner);
    v.to_string()
}

#[test]
fn every_form_parses_to_the_same_output() {
    let wrapped = parse(&c1_bytes(), None).unwrap();
    assert_eq!(wrapped.registered_proof, P2K);
    assert_eq!(wrapped.sector_number, Some(1));
    let api = parse(api_json().as_bytes(), None).unwrap();
    let fp = parse(fp_json().as_bytes(), Some(P2K)).unwrap();
    for other in [&api, &fp] {
        assert_eq!(other.comm_r, wrapped.comm_r);
        assert_eq!(other.comm_d, wrapped.comm_d);
        assert_eq!(other.replica_id, wrapped.replica_id);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(other.vanilla_proofs.get()).unwrap(),
            serde_json::from_str::<serde_json::Value>(wrapped.vanilla_proofs.get()).unwrap()
        );
    }
    assert_eq!(api.to_api_json(), wrapped.to_api_json());
}

#[test]
fn truncated_and_non_json_input() {
    let bytes = c1_bytes();
    assert!(matches!(
        parse(&bytes[..bytes.len() / 2], None),
        Err(FilecoinError::Json(_))
    ));
    assert!(matches!(
        parse(b"not json", None),
        Err(FilecoinError::Json(_))
    ));
    assert!(matches!(parse(b"", None), Err(FilecoinError::Json(_))));
    let api = api_json();
    assert!(matches!(
        parse(&api.as_bytes()[..api.len() - 10], None),
        Err(FilecoinError::Json(_))
    ));
}

#[test]
fn bad_base64() {
    let bad = br#"{"SectorNum":1,"Phase1Out":"not*base64!","SectorSize":2048}"#;
    assert!(matches!(parse(bad, None), Err(FilecoinError::Base64(_))));
}

#[test]
fn unknown_and_mismatched_registered_proofs() {
    // An unknown name.
    let unknown = api_json().replace("StackedDrg2KiBV1_1", "StackedDrg3KiBV1_1");
    assert!(matches!(
        parse(unknown.as_bytes(), None),
        Err(FilecoinError::UnknownRegisteredProof(_))
    ));
    // The request names another proof than the input.
    let p8m = RegisteredSealProof::from_number(6).unwrap();
    assert!(matches!(
        parse(api_json().as_bytes(), Some(p8m)),
        Err(FilecoinError::Mismatch { .. })
    ));
    // Bare filecoin-proofs JSON with no registered proof.
    assert!(matches!(
        parse(fp_json().as_bytes(), None),
        Err(FilecoinError::MissingRegisteredProof)
    ));
    // The wrapper's sector size disagrees with the registered proof.
    let wrapper = String::from_utf8(c1_bytes())
        .unwrap()
        .replace("\"SectorSize\":2048", "\"SectorSize\":8388608");
    assert!(matches!(
        parse(wrapper.as_bytes(), None),
        Err(FilecoinError::Mismatch { .. })
    ));
    // The vanilla proofs' key names another size.
    let key = api_json().replace("\"StackedDrg2KiBV1\"", "\"StackedDrg8MiBV1\"");
    assert!(matches!(
        parse(key.as_bytes(), None),
        Err(FilecoinError::Mismatch { .. })
    ));
    // Numbers outside filecoin-ffi's table.
    assert!(matches!(
        RegisteredSealProof::from_number(99),
        Err(FilecoinError::UnknownRegisteredProof(_))
    ));
    // 2 KiB vanilla proofs declared as 8 MiB do not fit the 8 MiB tree.
    let c1 = parse(fp_json().as_bytes(), Some(p8m)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = PorepJob::new(&c1, SECTOR).unwrap();
    assert!(matches!(
        job.prove(dir.path(), &mut never_prover()),
        Err(FilecoinError::Mismatch { .. } | FilecoinError::Json(_))
    ));
}

#[test]
fn another_sector_or_miner() {
    let c1 = parse(&c1_bytes(), None).unwrap();
    let other_sector = SectorId {
        sector_number: 2,
        ..SECTOR
    };
    assert!(matches!(
        PorepJob::new(&c1, other_sector),
        Err(FilecoinError::Mismatch { .. })
    ));
    let fp = parse(fp_json().as_bytes(), Some(P2K)).unwrap();
    let other_miner = SectorId {
        miner_id: 1001,
        ..SECTOR
    };
    let dir = tempfile::tempdir().unwrap();
    let job = PorepJob::new(&fp, other_miner).unwrap();
    assert!(matches!(
        job.prove(dir.path(), &mut never_prover()),
        Err(FilecoinError::Mismatch { .. })
    ));
}

#[test]
fn missing_parameters() {
    let c1 = parse(&c1_bytes(), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = PorepJob::new(&c1, SECTOR).unwrap();
    match job.prove(dir.path(), &mut never_prover()) {
        Err(FilecoinError::MissingParameters { path, .. }) => {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(
                name.starts_with("v28-stacked-proof-of-replication-"),
                "{name}"
            );
        }
        other => panic!("expected MissingParameters, got {other:?}"),
    }
}

/// x · x = y: a circuit whose parameters are tiny and belong to nothing Filecoin proves.
struct Square;

impl Circuit<Scalar> for Square {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
        cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn parameters_of_another_circuit() {
    let c1 = parse(&c1_bytes(), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = param_files(dir.path(), P2K).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0);
    let params = cuzk_groth16::generate_random_parameters(Square, &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    std::fs::write(&files.params, bytes).unwrap();
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    std::fs::write(&files.vk, vk).unwrap();
    std::fs::write(&files.meta, r#"{"sector_size":2048}"#).unwrap();
    let job = PorepJob::new(&c1, SECTOR).unwrap();
    assert!(matches!(
        job.prove(dir.path(), &mut never_prover()),
        Err(FilecoinError::ParameterMismatch { .. })
    ));
}

type ProveResult = Result<Proof, Box<dyn std::error::Error + Send + Sync>>;

fn never_prover() -> impl FnMut(&Parameters, ProvingAssignment, usize) -> ProveResult {
    |_, _, _| panic!("bad input reached the prover")
}
