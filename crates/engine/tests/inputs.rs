//! Inputs are checked when they arrive: a request whose C1 output is not JSON of a known form,
//! whose registered proof is unknown or does not match its sector size, whose 32-byte fields
//! are not 32 bytes, or whose PoSt or SnapDeals vanilla proofs are too few or too many is
//! refused by `Engine::submit` with an error naming the field, and nothing of it is kept; the
//! well-formed requests of every kind are accepted. No worker runs: accepted jobs stay pending.

mod common;

use std::path::Path;

use cuzk_engine::filecoin::jobs::{decode_base64, encode_base64};
use cuzk_engine::filecoin::{PostJobFile, SnapJobFile};
use cuzk_engine::{Engine, JobRequest, ProofKind};

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

fn testdata(name: &str) -> String {
    std::fs::read_to_string(Path::new(TESTDATA).join(name)).expect("testdata")
}

/// The 2 KiB test sector's PoRep request, in Curio's wrapper.
fn porep() -> JobRequest {
    JobRequest {
        vanilla_proof: testdata("porep-2KiB.c1.json").into_bytes(),
        registered_proof: 5,
        sector_size: 2048,
        miner_id: 1000,
        sector_number: 1,
        ..JobRequest::new(ProofKind::PorepSealCommit)
    }
}

/// The test C1 output's `Phase1Out` (filecoin-proofs-api's JSON), changed by `edit`.
fn porep_api(edit: impl FnOnce(&mut serde_json::Value)) -> JobRequest {
    let wrapper: serde_json::Value = serde_json::from_str(&testdata("porep-2KiB.c1.json")).unwrap();
    let inner = decode_base64("Phase1Out", wrapper["Phase1Out"].as_str().unwrap()).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&inner).unwrap();
    edit(&mut v);
    JobRequest {
        vanilla_proof: v.to_string().into_bytes(),
        ..porep()
    }
}

fn post(kind: ProofKind) -> JobRequest {
    let (file, registered) = if kind == ProofKind::WinningPost {
        ("winning-2KiB.json", 0)
    } else {
        ("window-2KiB.json", 10)
    };
    let f = PostJobFile::parse(&testdata(file)).unwrap();
    JobRequest {
        sector_size: f.sector_size,
        registered_proof: registered,
        miner_id: f.miner_id,
        randomness: f.randomness.to_vec(),
        partition_index: f.partition_index as u32,
        vanilla_proofs: f.vanilla_proofs,
        ..JobRequest::new(kind)
    }
}

fn snap() -> JobRequest {
    let f = SnapJobFile::parse(&testdata("snap-2KiB.json")).unwrap();
    JobRequest {
        sector_size: f.sector_size,
        comm_r_old: f.comm_r_old.to_vec(),
        comm_r_new: f.comm_r_new.to_vec(),
        comm_d_new: f.comm_d_new.to_vec(),
        vanilla_proofs: f.vanilla_proofs,
        ..JobRequest::new(ProofKind::SnapDealsUpdate)
    }
}

/// An engine with no worker: what it accepts stays pending.
fn engine(dir: &Path) -> Engine {
    Engine::start(common::config(dir), Vec::new(), None).unwrap()
}

fn pending(e: &Engine) -> u32 {
    e.status().queues.iter().map(|q| q.pending).sum()
}

/// `request` is refused at submission as bad input whose message contains `text`, and
/// nothing of it is queued or spooled.
fn check_refused(e: &Engine, dir: &Path, request: JobRequest, text: &str) {
    let before = pending(e);
    let err = e.submit(request).unwrap_err();
    assert!(err.is_bad_input(), "{text}: not bad input: {err:?}");
    let message = cuzk_engine::error_chain(&err);
    assert!(message.contains(text), "{message:?} lacks {text:?}");
    assert_eq!(pending(e), before, "{text}: queued");
    let spooled = std::fs::read_dir(dir.join("data/spool")).map_or(0, |d| d.count());
    assert_eq!(spooled, 0, "{text}: spooled");
}

#[test]
fn bad_inputs_are_refused_at_submission() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let c1 = porep().vanilla_proof;
    let with = |edit: fn(&mut JobRequest)| {
        let mut r = porep();
        edit(&mut r);
        r
    };
    let cases: Vec<(JobRequest, &str)> = vec![
        // PoRep: the C1 output.
        (
            JobRequest {
                vanilla_proof: c1[..c1.len() / 2].to_vec(),
                ..porep()
            },
            "vanilla_proof (the C1 output): the input is not valid JSON",
        ),
        (
            JobRequest {
                vanilla_proof: (0..4096u32)
                    .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                    .collect(),
                ..porep()
            },
            "the C1 output is not UTF-8",
        ),
        (
            JobRequest {
                vanilla_proof: b"{\"SectorNum\":1,\"Phase1Out\":\"!!!!\",\"SectorSize\":2048}"
                    .to_vec(),
                ..porep()
            },
            "Phase1Out is not valid base64",
        ),
        (
            JobRequest {
                vanilla_proof: format!(
                    "{{\"SectorNum\":1,\"Phase1Out\":\"{}\",\"SectorSize\":2048}}",
                    encode_base64(b"{\"comm_r\": [1, 2]}")
                )
                .into_bytes(),
                ..porep()
            },
            "not valid JSON",
        ),
        (
            porep_api(|v| v["comm_d"] = serde_json::json!([1, 2, 3])),
            "not valid JSON",
        ),
        (
            porep_api(|v| v["comm_r"] = serde_json::json!(vec![0u8; 32])),
            "comm_r is all zeros",
        ),
        (
            porep_api(|v| {
                let proofs = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"];
                proofs.as_array_mut().unwrap().push(serde_json::json!([]));
            }),
            "contains no vanilla proofs",
        ),
        (
            porep_api(|v| {
                let proofs = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"];
                let first = proofs[0].clone();
                proofs.as_array_mut().unwrap().push(first);
            }),
            "number of partitions",
        ),
        (
            porep_api(|v| {
                let proofs = v["vanilla_proofs"]["StackedDrg2KiBV1"].take();
                v["vanilla_proofs"] = serde_json::json!({"StackedDrg8MiBV1": proofs});
            }),
            "version key",
        ),
        (
            porep_api(|v| v["registered_proof"] = "StackedDrg8MiBV1_1".into()),
            "registered proof",
        ),
        // PoRep: the request's own fields.
        (with(|r| r.registered_proof = 42), "registered_proof"),
        (with(|r| r.registered_proof = 8), "registered proof"),
        (with(|r| r.sector_size = 4096), "unknown sector size"),
        (with(|r| r.sector_size = 8 << 20), "does not match"),
        (with(|r| r.sector_number = 2), "sector number"),
        (with(|r| r.miner_id = 1001), "belongs to another miner"),
        // PoSt.
        (
            JobRequest {
                randomness: vec![1; 31],
                ..post(ProofKind::WinningPost)
            },
            "randomness must be 32 bytes",
        ),
        (
            JobRequest {
                vanilla_proofs: vec![vec![1]; 2],
                ..post(ProofKind::WinningPost)
            },
            "vanilla_proofs: mismatched request: the number of vanilla proofs is 2",
        ),
        (
            JobRequest {
                vanilla_proofs: vec![vec![1]; 3],
                ..post(ProofKind::WindowPost)
            },
            "the number of vanilla proofs is 3",
        ),
        (
            JobRequest {
                registered_proof: 42,
                ..post(ProofKind::WindowPost)
            },
            "unknown registered WindowPoSt proof",
        ),
        (
            JobRequest {
                sector_size: 8 << 20,
                ..post(ProofKind::WinningPost)
            },
            "does not match",
        ),
        // SnapDeals.
        (
            JobRequest {
                comm_r_new: vec![1; 31],
                ..snap()
            },
            "comm_r_new must be 32 bytes",
        ),
        (
            JobRequest {
                comm_d_new: Vec::new(),
                ..snap()
            },
            "comm_d_new must be 32 bytes",
        ),
        (
            JobRequest {
                vanilla_proofs: vec![vec![1]; 2],
                ..snap()
            },
            "the number of SnapDeals partition proofs is 2",
        ),
    ];
    for (request, text) in cases {
        check_refused(&e, tmp.path(), request, text);
    }
    e.shutdown(std::time::Duration::ZERO);
}

#[test]
fn well_formed_requests_of_every_kind_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let accepted = [
        porep(),
        // filecoin-proofs-api's JSON, the registered proof from the input.
        porep_api(|_| {}),
        JobRequest {
            registered_proof: 0,
            sector_size: 0,
            ..porep()
        },
        post(ProofKind::WinningPost),
        post(ProofKind::WindowPost),
        snap(),
        JobRequest::synthetic(6, 1, 1),
    ];
    let n = accepted.len() as u32;
    for request in accepted {
        let kind = request.kind;
        e.submit(request)
            .unwrap_or_else(|err| panic!("{kind}: {err:?}"));
    }
    assert_eq!(pending(&e), n);
    // A well-formed C1 output also passes the check the job runs.
    assert!(matches!(
        cuzk_engine::run::validate(&porep()),
        Ok(Some(c)) if c.id() == "porep-2k"
    ));
    e.shutdown(std::time::Duration::ZERO);
}
