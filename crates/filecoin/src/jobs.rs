//! The JSON job files of the vanilla-proof kinds, and the text encodings every input uses.
//!
//! `cuzk prove winning|window|snap --input FILE`, the daemon's client and the tests read the
//! files `gen_vanilla` writes (`testdata/filecoin/winning-2KiB.json`, `window-*`, `snap-*`):
//! one JSON object per job, 32-byte values as 64 hex digits, each vanilla proof as the base64
//! of its bincode bytes (what filecoin-proofs-api's `*_with_vanilla` functions take).
//!
//! ```json
//! {"sector_size": 2048, "miner_id": 1000, "sector_number": 1, "comm_r": "<hex>",
//!  "randomness": "<hex>", "partition_index": 0, "vanilla_proofs": ["<base64>", ...]}
//! {"sector_size": 2048, "comm_r_old": "<hex>", "comm_r_new": "<hex>", "comm_d_new": "<hex>",
//!  "vanilla_proofs": ["<base64>", ...]}
//! ```
//!
//! [`PostJobFile`] and [`SnapJobFile`] parse (each cause a typed [`FilecoinError`]) and write
//! them; [`decode_base64`] and [`decode_hex32`] are the one decoding of those encodings in the
//! workspace, used by the C1 wrapper too.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::FilecoinError;
use crate::post::{PostJob, PostKind};
use crate::registered::RegisteredSealProof;
use crate::snap::SnapJob;

/// Decodes standard base64 (with padding, as Go's `encoding/json` writes `[]byte`); `what`
/// names the value in the error.
pub fn decode_base64(what: &str, text: &str) -> Result<Vec<u8>, FilecoinError> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| FilecoinError::Base64 {
            what: what.to_string(),
            detail: e.to_string(),
        })
}

/// Standard base64 with padding.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes a 32-byte value written as 64 hex digits (either case); `what` names the value in
/// the error.
pub fn decode_hex32(what: &str, text: &str) -> Result<[u8; 32], FilecoinError> {
    let bad = |detail: String| FilecoinError::Hex {
        what: what.to_string(),
        detail,
    };
    let text = text.trim();
    if text.len() != 64 {
        return Err(bad(format!("{} hex digits, 64 expected", text.len())));
    }
    if let Some(at) = text.find(|c: char| !c.is_ascii_hexdigit()) {
        return Err(bad(format!(
            "the character at offset {at} is not a hex digit"
        )));
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        // 64 ASCII hex digits: every pair parses.
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or_default();
    }
    Ok(out)
}

/// Lower-case hex, two digits a byte.
pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A WinningPoSt or WindowPoSt job file (`winning-*.json`, `window-*.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostJobFile {
    /// The sector size of the challenged sectors, one of Filecoin's.
    pub sector_size: u64,
    /// The miner's actor id.
    pub miner_id: u64,
    /// The challenged sector's number, for the verifier (gen_vanilla writes it).
    pub sector_number: Option<u64>,
    /// The challenged sector's replica commitment, for the verifier (gen_vanilla writes it).
    pub comm_r: Option<[u8; 32]>,
    /// The 32-byte challenge seed.
    pub randomness: [u8; 32],
    /// The WindowPoSt partition (0 for Winning).
    pub partition_index: usize,
    /// One bincode-serialised `FallbackPoStSectorProof` per challenged sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// A SnapDeals job file (`snap-*.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapJobFile {
    /// The sector size, one of Filecoin's.
    pub sector_size: u64,
    /// The replica commitment before the update.
    pub comm_r_old: [u8; 32],
    /// The replica commitment after the update.
    pub comm_r_new: [u8; 32],
    /// The data commitment of the new data.
    pub comm_d_new: [u8; 32],
    /// One bincode-serialised `PartitionProof` per partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The PoSt file as JSON, before its strings are decoded.
#[derive(Serialize, Deserialize)]
struct PostText {
    sector_size: u64,
    miner_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sector_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comm_r: Option<String>,
    randomness: String,
    #[serde(default)]
    partition_index: usize,
    vanilla_proofs: Vec<String>,
}

/// The SnapDeals file as JSON, before its strings are decoded.
#[derive(Serialize, Deserialize)]
struct SnapText {
    sector_size: u64,
    comm_r_old: String,
    comm_r_new: String,
    comm_d_new: String,
    vanilla_proofs: Vec<String>,
}

fn check_sector_size(sector_size: u64) -> Result<(), FilecoinError> {
    RegisteredSealProof::v1_1(sector_size).map(|_| ())
}

fn decode_vanilla(proofs: &[String]) -> Result<Vec<Vec<u8>>, FilecoinError> {
    if proofs.is_empty() {
        return Err(FilecoinError::InvalidInput(
            "the job file has no vanilla proofs".into(),
        ));
    }
    proofs
        .iter()
        .enumerate()
        .map(|(i, p)| decode_base64(&format!("vanilla proof {i}"), p))
        .collect()
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Strings, integers and lists of strings only: serialisation cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

impl PostJobFile {
    /// Parses a job file: malformed JSON is [`FilecoinError::Json`], a value that is not hex
    /// or base64 [`FilecoinError::Hex`] or [`FilecoinError::Base64`], a size that is not
    /// Filecoin's [`FilecoinError::UnknownSectorSize`].
    pub fn parse(text: &str) -> Result<Self, FilecoinError> {
        let t: PostText = serde_json::from_str(text).map_err(FilecoinError::Json)?;
        check_sector_size(t.sector_size)?;
        Ok(Self {
            sector_size: t.sector_size,
            miner_id: t.miner_id,
            sector_number: t.sector_number,
            comm_r: t
                .comm_r
                .as_deref()
                .map(|c| decode_hex32("comm_r", c))
                .transpose()?,
            randomness: decode_hex32("randomness", &t.randomness)?,
            partition_index: t.partition_index,
            vanilla_proofs: decode_vanilla(&t.vanilla_proofs)?,
        })
    }

    /// The file's JSON, as gen_vanilla writes it; [`Self::parse`] reads it back unchanged.
    pub fn to_json(&self) -> String {
        to_json(&PostText {
            sector_size: self.sector_size,
            miner_id: self.miner_id,
            sector_number: self.sector_number,
            comm_r: self.comm_r.map(|c| encode_hex(&c)),
            randomness: encode_hex(&self.randomness),
            partition_index: self.partition_index,
            vanilla_proofs: self
                .vanilla_proofs
                .iter()
                .map(|p| encode_base64(p))
                .collect(),
        })
    }

    /// The job of `kind` this file describes.
    pub fn job(&self, kind: PostKind) -> PostJob<'_> {
        PostJob {
            kind,
            partition_index: self.partition_index,
            sector_size: self.sector_size,
            randomness: self.randomness,
            miner_id: self.miner_id,
            vanilla_proofs: &self.vanilla_proofs,
        }
    }
}

impl SnapJobFile {
    /// Parses a job file, with the errors of [`PostJobFile::parse`].
    pub fn parse(text: &str) -> Result<Self, FilecoinError> {
        let t: SnapText = serde_json::from_str(text).map_err(FilecoinError::Json)?;
        check_sector_size(t.sector_size)?;
        Ok(Self {
            sector_size: t.sector_size,
            comm_r_old: decode_hex32("comm_r_old", &t.comm_r_old)?,
            comm_r_new: decode_hex32("comm_r_new", &t.comm_r_new)?,
            comm_d_new: decode_hex32("comm_d_new", &t.comm_d_new)?,
            vanilla_proofs: decode_vanilla(&t.vanilla_proofs)?,
        })
    }

    /// The file's JSON, as gen_vanilla writes it; [`Self::parse`] reads it back unchanged.
    pub fn to_json(&self) -> String {
        to_json(&SnapText {
            sector_size: self.sector_size,
            comm_r_old: encode_hex(&self.comm_r_old),
            comm_r_new: encode_hex(&self.comm_r_new),
            comm_d_new: encode_hex(&self.comm_d_new),
            vanilla_proofs: self
                .vanilla_proofs
                .iter()
                .map(|p| encode_base64(p))
                .collect(),
        })
    }

    /// The job this file describes.
    pub fn job(&self) -> SnapJob<'_> {
        SnapJob {
            sector_size: self.sector_size,
            comm_r_old: self.comm_r_old,
            comm_r_new: self.comm_r_new,
            comm_d_new: self.comm_d_new,
            vanilla_proofs: &self.vanilla_proofs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex32_round_trips_and_names_the_value() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        let text = encode_hex(&bytes);
        assert_eq!(decode_hex32("x", &text).unwrap(), bytes);
        assert_eq!(decode_hex32("x", &text.to_uppercase()).unwrap(), bytes);
        for bad in ["", "00", &text[..62], &format!("{}zz", &text[..62]), "é"] {
            match decode_hex32("comm_r", bad) {
                Err(FilecoinError::Hex { what, .. }) => assert_eq!(what, "comm_r"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn base64_round_trips_and_names_the_value() {
        assert_eq!(
            decode_base64("p", &encode_base64(b"cuzk")).unwrap(),
            b"cuzk"
        );
        match decode_base64("Phase1Out", "not*base64!") {
            Err(FilecoinError::Base64 { what, .. }) => assert_eq!(what, "Phase1Out"),
            other => panic!("{other:?}"),
        }
    }
}
