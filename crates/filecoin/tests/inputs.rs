//! Bad input gets a typed error naming its cause, never a panic: each form of the C1 output
//! parses to the same thing; truncated or non-JSON input, bad base64, unknown or mismatched
//! registered proofs and sector sizes, another sector's number, and parameters of another
//! circuit are refused. The C1 wrapper and the PoSt and SnapDeals job files read back what
//! they write, and a job file's bad JSON, base64, hex or sector size is a typed error too.

use std::path::Path;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_filecoin::jobs::decode_base64;
use cuzk_filecoin::porep::param_files;
use cuzk_filecoin::{
    C1Output, C1Summary, FilecoinError, PorepJob, PostJobFile, RegisteredSealProof, SectorId,
    SnapJobFile,
};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::PartitionInput;
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
    String::from_utf8(decode_base64("Phase1Out", b64).unwrap()).unwrap()
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

/// `C1Summary::read`, the cheap check a service runs when a request arrives, reads every form
/// as `parse` does and refuses what `parse` refuses, with the same error.
#[test]
fn the_summary_reads_what_parse_reads() {
    let wrapped = parse(&c1_bytes(), None).unwrap();
    for (bytes, registered) in [
        (c1_bytes(), None),
        (api_json().into_bytes(), None),
        (fp_json().into_bytes(), Some(P2K)),
    ] {
        let s = C1Summary::read(&bytes, registered).unwrap();
        assert_eq!(s.registered_proof, P2K);
        // One partition of two challenges.
        assert_eq!(s.partition_sizes, vec![2]);
        assert_eq!(
            (s.comm_r, s.comm_d, s.replica_id, s.seed, s.ticket),
            (
                wrapped.comm_r,
                wrapped.comm_d,
                wrapped.replica_id,
                wrapped.seed,
                wrapped.ticket
            )
        );
        PorepJob::check(&s, SECTOR).unwrap();
    }
    let bytes = c1_bytes();
    let bare = fp_json();
    let bad: [(&[u8], Option<RegisteredSealProof>); 5] = [
        (&bytes[..bytes.len() / 2], None),
        (b"not json", None),
        (
            b"{\"SectorNum\":1,\"Phase1Out\":\"!!\",\"SectorSize\":2048}",
            None,
        ),
        (bare.as_bytes(), None),
        (&bytes, Some(RegisteredSealProof::from_number(6).unwrap())),
    ];
    for (input, registered) in bad {
        let parsed = parse(input, registered).unwrap_err().to_string();
        let read = C1Summary::read(input, registered).unwrap_err().to_string();
        assert_eq!(parsed.split(':').next(), read.split(':').next());
    }
    let s = C1Summary::read(&bytes, None).unwrap();
    let other = SectorId {
        miner_id: 1001,
        ..SECTOR
    };
    let e = PorepJob::check(&s, other).unwrap_err().to_string();
    assert!(e.contains("another miner"), "{e}");
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
    match parse(bad, None) {
        Err(FilecoinError::Base64 { what, .. }) => assert!(what.contains("Phase1Out"), "{what}"),
        other => panic!("expected Base64, got {other:?}"),
    }
}

#[test]
fn c1_wrapper_round_trips() {
    let bytes = c1_bytes();
    let c1 = parse(&bytes, None).unwrap();
    // gen_vanilla wrote the file with to_curio_json: parse and write give it back, byte for byte.
    let written = c1.to_curio_json(1);
    assert_eq!(written.as_bytes(), &bytes[..]);
    let again = parse(written.as_bytes(), None).unwrap();
    assert_eq!(again.registered_proof, c1.registered_proof);
    assert_eq!(again.sector_number, Some(1));
    assert_eq!(again.vanilla_proofs.get(), c1.vanilla_proofs.get());
    assert_eq!(
        (
            again.comm_r,
            again.comm_d,
            again.replica_id,
            again.seed,
            again.ticket
        ),
        (c1.comm_r, c1.comm_d, c1.replica_id, c1.seed, c1.ticket)
    );
}

fn job_text(file: &str) -> String {
    std::fs::read_to_string(Path::new(TESTDATA).join(file)).expect("testdata")
}

#[test]
fn job_files_round_trip() {
    for file in ["winning-2KiB.json", "window-2KiB.json"] {
        let job = PostJobFile::parse(&job_text(file)).unwrap();
        assert_eq!(job.sector_size, 2048);
        assert!(
            job.comm_r.is_some() && job.sector_number == Some(1),
            "{file}"
        );
        let written = job.to_json();
        assert_eq!(PostJobFile::parse(&written).unwrap(), job, "{file}");
        assert_eq!(PostJobFile::parse(&written).unwrap().to_json(), written);
    }
    let snap = SnapJobFile::parse(&job_text("snap-2KiB.json")).unwrap();
    assert_eq!(snap.vanilla_proofs.len(), 1);
    assert_eq!(SnapJobFile::parse(&snap.to_json()).unwrap(), snap);
}

/// The test job file `file` with the JSON value at `key` replaced by `value`.
fn edited(file: &str, key: &str, value: serde_json::Value) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&job_text(file)).unwrap();
    v[key] = value;
    v.to_string()
}

#[test]
fn bad_job_files() {
    use serde_json::json;
    let post = |text: &str| PostJobFile::parse(text).map(|_| ());
    let snap = |text: &str| SnapJobFile::parse(text).map(|_| ());
    let winning = job_text("winning-2KiB.json");

    // Truncated, not JSON, a field missing or of the wrong type.
    assert!(matches!(
        post(&winning[..winning.len() / 2]),
        Err(FilecoinError::Json(_))
    ));
    assert!(matches!(post("winning"), Err(FilecoinError::Json(_))));
    let no_miner = edited("winning-2KiB.json", "miner_id", json!(null));
    assert!(matches!(post(&no_miner), Err(FilecoinError::Json(_))));
    let snap_text = job_text("snap-2KiB.json");
    assert!(matches!(
        snap(&snap_text[..100]),
        Err(FilecoinError::Json(_))
    ));

    // Base64 and hex that do not decode name the value.
    let text = edited("window-2KiB.json", "vanilla_proofs", json!(["AAAA", "*"]));
    match post(&text) {
        Err(FilecoinError::Base64 { what, .. }) => assert_eq!(what, "vanilla proof 1"),
        other => panic!("expected Base64, got {other:?}"),
    }
    for (file, key) in [
        ("winning-2KiB.json", "randomness"),
        ("winning-2KiB.json", "comm_r"),
        ("snap-2KiB.json", "comm_d_new"),
    ] {
        for value in ["00ff", &"g".repeat(64)] {
            let text = edited(file, key, json!(value));
            let result = if file.starts_with("snap") {
                snap(&text)
            } else {
                post(&text)
            };
            match result {
                Err(FilecoinError::Hex { what, .. }) => assert_eq!(what, key),
                other => panic!("{file} {key}={value}: expected Hex, got {other:?}"),
            }
        }
    }

    // A sector size that is not Filecoin's; no vanilla proofs.
    let text = edited("winning-2KiB.json", "sector_size", json!(4096));
    assert!(matches!(
        post(&text),
        Err(FilecoinError::UnknownSectorSize(4096))
    ));
    let text = edited("snap-2KiB.json", "sector_size", json!(1));
    assert!(matches!(
        snap(&text),
        Err(FilecoinError::UnknownSectorSize(1))
    ));
    let text = edited("snap-2KiB.json", "vanilla_proofs", json!([]));
    assert!(matches!(snap(&text), Err(FilecoinError::InvalidInput(_))));
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

fn never_prover() -> impl FnMut(&Parameters, PartitionInput, usize) -> ProveResult {
    |_, _, _| panic!("bad input reached the prover")
}
