//! Requests built from the JSON job files `cuzk prove` reads (gen_vanilla's
//! `winning-*.json`, `window-*.json`, `snap-*.json`) and from C1 outputs, for the client
//! command and tests.

use base64::Engine as _;

use crate::proto::{ProofKind, SubmitProofRequest};
use crate::DaemonError;

fn bad(what: &str) -> DaemonError {
    DaemonError::Client(format!("job JSON: {what}"))
}

fn vanilla(v: &serde_json::Value) -> Result<Vec<Vec<u8>>, DaemonError> {
    v["vanilla_proofs"]
        .as_array()
        .ok_or_else(|| bad("vanilla_proofs is missing"))?
        .iter()
        .map(|p| {
            base64::engine::general_purpose::STANDARD
                .decode(
                    p.as_str()
                        .ok_or_else(|| bad("a vanilla proof is not a string"))?,
                )
                .map_err(|_| bad("a vanilla proof is not base64"))
        })
        .collect()
}

fn hex_field(v: &serde_json::Value, key: &str) -> Result<Vec<u8>, DaemonError> {
    hex::decode(
        v[key]
            .as_str()
            .ok_or_else(|| bad(&format!("{key} is missing")))?,
    )
    .map_err(|_| bad(&format!("{key} is not hex")))
}

/// filecoin-ffi's index of a sector size (2 KiB = 0, ..., 64 GiB = 4).
fn size_index(sector_size: u64) -> Result<u64, DaemonError> {
    [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
        .iter()
        .position(|s| *s == sector_size)
        .map(|i| i as u64)
        .ok_or_else(|| bad(&format!("unknown sector size {sector_size}")))
}

/// A WinningPoSt or WindowPoSt request from `cuzk prove winning|window`'s JSON.
pub fn post_request(json: &str, kind: ProofKind) -> Result<SubmitProofRequest, DaemonError> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(&e.to_string()))?;
    let sector_size = v["sector_size"]
        .as_u64()
        .ok_or_else(|| bad("sector_size"))?;
    // WinningPoSt numbers 0-4; WindowPoSt V1_1 of the Go side (V1_2 in Rust) 10-14.
    let base = if kind == ProofKind::WinningPost {
        0
    } else {
        10
    };
    Ok(SubmitProofRequest {
        proof_kind: kind as i32,
        sector_size,
        registered_proof: base + size_index(sector_size)?,
        miner_id: v["miner_id"].as_u64().ok_or_else(|| bad("miner_id"))?,
        randomness: hex_field(&v, "randomness")?,
        partition_index: v["partition_index"].as_u64().unwrap_or(0) as u32,
        vanilla_proofs: vanilla(&v)?,
        ..Default::default()
    })
}

/// A SnapDeals request from `cuzk prove snap`'s JSON.
pub fn snap_request(json: &str) -> Result<SubmitProofRequest, DaemonError> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(&e.to_string()))?;
    let sector_size = v["sector_size"]
        .as_u64()
        .ok_or_else(|| bad("sector_size"))?;
    Ok(SubmitProofRequest {
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size,
        registered_proof: size_index(sector_size)?,
        comm_r_old: hex_field(&v, "comm_r_old")?,
        comm_r_new: hex_field(&v, "comm_r_new")?,
        comm_d_new: hex_field(&v, "comm_d_new")?,
        vanilla_proofs: vanilla(&v)?,
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
