//! The C1 output (PoRep phase 1), in each form a prover receives it.
//!
//! - Curio's wrapper: `{"SectorNum": u64, "Phase1Out": "<base64>", "SectorSize": u64}`, whose
//!   `Phase1Out` decodes to the next form.
//! - filecoin-proofs-api's `SealCommitPhase1Output` JSON: `registered_proof` by name, the
//!   `vanilla_proofs` under one key naming the proof's size (`{"StackedDrg2KiBV1": [[...]]}`),
//!   then `comm_r`, `comm_d`, `replica_id`, `seed`, `ticket` as byte arrays.
//! - filecoin-proofs' own `SealCommitPhase1Output` JSON: the same without `registered_proof`,
//!   the `vanilla_proofs` a bare array; the registered proof then comes from the request.
//!
//! The vanilla proofs stay raw JSON here: their type depends on the sector's tree shape, which
//! [`crate::porep`] picks from the registered proof.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::FilecoinError;
use crate::jobs::{decode_base64, encode_base64};
use crate::registered::{format_sector_size, RegisteredSealProof};

/// A parsed C1 output, the vanilla proofs still raw JSON.
#[derive(Debug)]
pub struct C1Output {
    /// The registered seal proof.
    pub registered_proof: RegisteredSealProof,
    /// The sector number Curio's wrapper names, if the input came in it.
    pub sector_number: Option<u64>,
    /// `Vec<Vec<VanillaSealProof<Tree>>>` as JSON: one list per partition.
    pub vanilla_proofs: Box<RawValue>,
    /// The replica commitment.
    pub comm_r: [u8; 32],
    /// The data commitment.
    pub comm_d: [u8; 32],
    /// The replica id the sector was sealed with.
    pub replica_id: [u8; 32],
    /// The interactive seed the challenges derive from.
    pub seed: [u8; 32],
    /// The ticket the replica id derives from.
    pub ticket: [u8; 32],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CurioWrapper {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

#[derive(Deserialize)]
struct Phase1Out {
    #[serde(default)]
    registered_proof: Option<String>,
    vanilla_proofs: Box<RawValue>,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: [u8; 32],
    seed: [u8; 32],
    ticket: [u8; 32],
}

impl C1Output {
    /// Parses a C1 output in any of the three forms. `registered_proof` is the request's (as
    /// wire.md's numeric field gives it): needed for filecoin-proofs' bare JSON, checked against
    /// the input where the input names its own.
    pub fn parse(
        bytes: &[u8],
        registered_proof: Option<RegisteredSealProof>,
    ) -> Result<Self, FilecoinError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| FilecoinError::InvalidInput(format!("the C1 output is not UTF-8: {e}")))?;
        if text.trim_start().starts_with('{') && text.contains("\"Phase1Out\"") {
            let wrapper: CurioWrapper = serde_json::from_str(text).map_err(FilecoinError::Json)?;
            let inner = decode_base64("the C1 wrapper's Phase1Out", &wrapper.phase1_out)?;
            let mut out = Self::parse_phase1(&inner, registered_proof)?;
            if out.registered_proof.sector_size != wrapper.sector_size {
                return Err(FilecoinError::Mismatch {
                    what: "the wrapper's SectorSize",
                    expected: out.registered_proof.sector_size.to_string(),
                    got: wrapper.sector_size.to_string(),
                });
            }
            out.sector_number = Some(wrapper.sector_num);
            Ok(out)
        } else {
            Self::parse_phase1(bytes, registered_proof)
        }
    }

    fn parse_phase1(
        bytes: &[u8],
        requested: Option<RegisteredSealProof>,
    ) -> Result<Self, FilecoinError> {
        let out: Phase1Out = serde_json::from_slice(bytes).map_err(FilecoinError::Json)?;
        let named = out
            .registered_proof
            .as_deref()
            .map(RegisteredSealProof::from_name)
            .transpose()?;
        let registered_proof = match (named, requested) {
            (Some(named), Some(requested)) if named != requested => {
                return Err(FilecoinError::Mismatch {
                    what: "the C1 output's registered proof",
                    expected: requested.to_string(),
                    got: named.to_string(),
                })
            }
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => return Err(FilecoinError::MissingRegisteredProof),
        };
        let vanilla_proofs = unwrap_versioned(out.vanilla_proofs, registered_proof)?;
        Ok(Self {
            registered_proof,
            sector_number: None,
            vanilla_proofs,
            comm_r: out.comm_r,
            comm_d: out.comm_d,
            replica_id: out.replica_id,
            seed: out.seed,
            ticket: out.ticket,
        })
    }

    /// filecoin-proofs-api's JSON form of this output (the `Phase1Out` Curio base64-encodes).
    pub fn to_api_json(&self) -> String {
        format!(
            "{{\"registered_proof\":\"{}\",\"vanilla_proofs\":{{\"StackedDrg{}V1\":{}}},\"comm_r\":{:?},\"comm_d\":{:?},\"replica_id\":{:?},\"seed\":{:?},\"ticket\":{:?}}}",
            self.registered_proof,
            format_sector_size(self.registered_proof.sector_size),
            self.vanilla_proofs.get(),
            self.comm_r,
            self.comm_d,
            self.replica_id,
            self.seed,
            self.ticket,
        )
        .replace(' ', "")
    }

    /// Curio's wrapper around [`Self::to_api_json`].
    pub fn to_curio_json(&self, sector_number: u64) -> String {
        let phase1 = encode_base64(self.to_api_json().as_bytes());
        format!(
            "{{\"SectorNum\":{sector_number},\"Phase1Out\":\"{phase1}\",\"SectorSize\":{}}}",
            self.registered_proof.sector_size
        )
    }
}

/// The API keys the vanilla proofs by the proof's size (`StackedDrg2KiBV1` for V1 and V1_1
/// alike); filecoin-proofs writes the bare array.
fn unwrap_versioned(
    raw: Box<RawValue>,
    registered_proof: RegisteredSealProof,
) -> Result<Box<RawValue>, FilecoinError> {
    if !raw.get().trim_start().starts_with('{') {
        return Ok(raw);
    }
    let map: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw.get()).map_err(FilecoinError::Json)?;
    let mut entries = map.into_iter();
    let (key, value) = match (entries.next(), entries.next()) {
        (Some(entry), None) => entry,
        _ => {
            return Err(FilecoinError::InvalidInput(
                "vanilla_proofs must have exactly one version key".into(),
            ))
        }
    };
    let keyed = RegisteredSealProof::from_name(&key)?;
    if keyed.sector_size != registered_proof.sector_size {
        return Err(FilecoinError::Mismatch {
            what: "the vanilla proofs' version key",
            expected: format!(
                "StackedDrg{}V1",
                format_sector_size(registered_proof.sector_size)
            ),
            got: key,
        });
    }
    Ok(value)
}
