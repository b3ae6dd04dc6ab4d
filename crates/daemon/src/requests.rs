//! Requests built from the JSON job files `cuzk prove` reads (gen_vanilla's
//! `winning-*.json`, `window-*.json`, `snap-*.json`) and from C1 outputs, for the client
//! command and tests.

use cuzk_engine::filecoin::registered::SECTOR_SIZES;
use cuzk_engine::filecoin::{FilecoinError, PostJobFile, SnapJobFile};

use crate::proto::{ProofKind, SubmitProofRequest};
use crate::DaemonError;

fn bad(e: FilecoinError) -> DaemonError {
    DaemonError::Client(format!("job JSON: {e}"))
}

/// filecoin-ffi's index of a sector size (2 KiB = 0, ..., 64 GiB = 4); the job files' sizes
/// are checked when they are parsed.
fn size_index(sector_size: u64) -> u64 {
    SECTOR_SIZES
        .iter()
        .position(|s| *s == sector_size)
        .unwrap_or_default() as u64
}

/// A WinningPoSt or WindowPoSt request from `cuzk prove winning|window`'s JSON.
pub fn post_request(json: &str, kind: ProofKind) -> Result<SubmitProofRequest, DaemonError> {
    let file = PostJobFile::parse(json).map_err(bad)?;
    // WinningPoSt numbers 0-4; WindowPoSt V1_1 of the Go side (V1_2 in Rust) 10-14.
    let base = if kind == ProofKind::WinningPost {
        0
    } else {
        10
    };
    Ok(SubmitProofRequest {
        proof_kind: kind as i32,
        sector_size: file.sector_size,
        registered_proof: base + size_index(file.sector_size),
        miner_id: file.miner_id,
        randomness: file.randomness.to_vec(),
        partition_index: file.partition_index as u32,
        vanilla_proofs: file.vanilla_proofs,
        ..Default::default()
    })
}

/// A SnapDeals request from `cuzk prove snap`'s JSON.
pub fn snap_request(json: &str) -> Result<SubmitProofRequest, DaemonError> {
    let file = SnapJobFile::parse(json).map_err(bad)?;
    Ok(SubmitProofRequest {
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: file.sector_size,
        registered_proof: size_index(file.sector_size),
        comm_r_old: file.comm_r_old.to_vec(),
        comm_r_new: file.comm_r_new.to_vec(),
        comm_d_new: file.comm_d_new.to_vec(),
        vanilla_proofs: file.vanilla_proofs,
        ..Default::default()
    })
}

/// A PoRep C2 request for a C1 output (any of its forms); `registered_proof` 0 takes the
/// one the C1 output names.
pub fn porep_request(
    c1: Vec<u8>,
    miner_id: u64,
    sector_number: u64,
    registered_proof: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        proof_kind: ProofKind::PorepSealCommit as i32,
        registered_proof,
        vanilla_proof: c1,
        miner_id,
        sector_number,
        ..Default::default()
    }
}

/// A synthetic request: 2^`log_size` constraints, `partitions` partitions, partition `k`'s
/// `x` from `seed + k`.
pub fn synthetic_request(log_size: u32, seed: u64, partitions: u32) -> SubmitProofRequest {
    SubmitProofRequest {
        proof_kind: ProofKind::Synthetic as i32,
        vanilla_proof: format!(
            "{{\"log_size\":{log_size},\"seed\":{seed},\"partitions\":{partitions}}}"
        )
        .into_bytes(),
        ..Default::default()
    }
}
