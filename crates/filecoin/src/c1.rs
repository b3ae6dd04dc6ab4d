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
//! [`C1Summary::read`] reads the same forms with the same errors but skips the vanilla proofs
//! (their count per partition kept), for checking a request when it arrives.
//!
//! The vanilla proofs stay raw JSON here: their type depends on the sector's tree shape, which
//! [`crate::porep`] picks from the registered proof.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess};
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

/// What [`C1Summary::read`] keeps of a C1 output: everything but the vanilla proofs, of which
/// it keeps only the number in each partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct C1Summary {
    /// The registered seal proof.
    pub registered_proof: RegisteredSealProof,
    /// The sector number Curio's wrapper names, if the input came in it.
    pub sector_number: Option<u64>,
    /// The number of vanilla proofs in each partition.
    pub partition_sizes: Vec<usize>,
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
struct CurioWrapper<'a> {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    /// Borrowed from the input where it has no escapes (base64 needs none).
    #[serde(rename = "Phase1Out", borrow)]
    phase1_out: Cow<'a, str>,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

impl CurioWrapper<'_> {
    fn check_size(&self, registered_proof: RegisteredSealProof) -> Result<(), FilecoinError> {
        if registered_proof.sector_size != self.sector_size {
            return Err(FilecoinError::Mismatch {
                what: "the wrapper's SectorSize",
                expected: registered_proof.sector_size.to_string(),
                got: self.sector_size.to_string(),
            });
        }
        Ok(())
    }
}

/// filecoin-proofs' `SealCommitPhase1Output`, its vanilla proofs as `V`: raw JSON for
/// [`C1Output::parse`], their [`VanillaShape`] for [`C1Summary::read`].
#[derive(Deserialize)]
struct Phase1Out<V> {
    #[serde(default)]
    registered_proof: Option<String>,
    vanilla_proofs: V,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: [u8; 32],
    seed: [u8; 32],
    ticket: [u8; 32],
}

fn utf8(bytes: &[u8]) -> Result<&str, FilecoinError> {
    std::str::from_utf8(bytes)
        .map_err(|e| FilecoinError::InvalidInput(format!("the C1 output is not UTF-8: {e}")))
}

fn is_wrapped(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"Phase1Out\"")
}

/// The registered proof the input names, else the request's; both given, they must agree.
fn resolve_registered(
    named: Option<&str>,
    requested: Option<RegisteredSealProof>,
) -> Result<RegisteredSealProof, FilecoinError> {
    let named = named.map(RegisteredSealProof::from_name).transpose()?;
    match (named, requested) {
        (Some(named), Some(requested)) if named != requested => Err(FilecoinError::Mismatch {
            what: "the C1 output's registered proof",
            expected: requested.to_string(),
            got: named.to_string(),
        }),
        (Some(p), _) | (None, Some(p)) => Ok(p),
        (None, None) => Err(FilecoinError::MissingRegisteredProof),
    }
}

impl C1Output {
    /// Parses a C1 output in any of the three forms. `registered_proof` is the request's (as
    /// wire.md's numeric field gives it): needed for filecoin-proofs' bare JSON, checked against
    /// the input where the input names its own.
    pub fn parse(
        bytes: &[u8],
        registered_proof: Option<RegisteredSealProof>,
    ) -> Result<Self, FilecoinError> {
        let text = utf8(bytes)?;
        if is_wrapped(text) {
            let wrapper: CurioWrapper<'_> =
                serde_json::from_str(text).map_err(FilecoinError::Json)?;
            let inner = decode_base64("the C1 wrapper's Phase1Out", &wrapper.phase1_out)?;
            let mut out = Self::parse_phase1(&inner, registered_proof)?;
            wrapper.check_size(out.registered_proof)?;
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
        let out: Phase1Out<Box<RawValue>> =
            serde_json::from_slice(bytes).map_err(FilecoinError::Json)?;
        let registered_proof = resolve_registered(out.registered_proof.as_deref(), requested)?;
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
    check_version_key(&key, registered_proof)?;
    Ok(value)
}

/// The API's version key must name the registered proof's size.
fn check_version_key(
    key: &str,
    registered_proof: RegisteredSealProof,
) -> Result<(), FilecoinError> {
    let keyed = RegisteredSealProof::from_name(key)?;
    if keyed.sector_size != registered_proof.sector_size {
        return Err(FilecoinError::Mismatch {
            what: "the vanilla proofs' version key",
            expected: format!(
                "StackedDrg{}V1",
                format_sector_size(registered_proof.sector_size)
            ),
            got: key.to_string(),
        });
    }
    Ok(())
}

impl C1Summary {
    /// Reads a C1 output in any of the three forms as [`C1Output::parse`] does, with the same
    /// errors, but keeps no vanilla proof: it is cheap enough to run when a request arrives.
    ///
    /// The input is scanned once and nothing of its size is allocated: the vanilla proofs are
    /// skipped (only the number in each partition is kept), and Curio's wrapper is base64-decoded
    /// as the JSON reader goes, not into a buffer. Their types (which depend on the sector's
    /// tree shape) are decoded only when the job runs, from its spooled bytes.
    pub fn read(
        bytes: &[u8],
        registered_proof: Option<RegisteredSealProof>,
    ) -> Result<Self, FilecoinError> {
        let text = utf8(bytes)?;
        if !is_wrapped(text) {
            let out: Phase1Out<VanillaShape> =
                serde_json::from_slice(bytes).map_err(FilecoinError::Json)?;
            return Self::of(out, registered_proof);
        }
        let wrapper: CurioWrapper<'_> = serde_json::from_str(text).map_err(FilecoinError::Json)?;
        let decoder = base64::read::DecoderReader::new(
            wrapper.phase1_out.trim().as_bytes(),
            &base64::engine::general_purpose::STANDARD,
        );
        let out: Phase1Out<VanillaShape> = serde_json::from_reader(
            std::io::BufReader::with_capacity(1 << 16, decoder),
        )
        .map_err(|e| match e.io_error_kind() {
            // The decoder's errors come through the reader as I/O errors.
            Some(_) => FilecoinError::Base64 {
                what: "the C1 wrapper's Phase1Out".into(),
                detail: e.to_string(),
            },
            None => FilecoinError::Json(e),
        })?;
        let mut summary = Self::of(out, registered_proof)?;
        wrapper.check_size(summary.registered_proof)?;
        summary.sector_number = Some(wrapper.sector_num);
        Ok(summary)
    }

    fn of(
        out: Phase1Out<VanillaShape>,
        requested: Option<RegisteredSealProof>,
    ) -> Result<Self, FilecoinError> {
        let registered_proof = resolve_registered(out.registered_proof.as_deref(), requested)?;
        if let Some(key) = &out.vanilla_proofs.key {
            check_version_key(key, registered_proof)?;
        }
        Ok(Self {
            registered_proof,
            sector_number: None,
            partition_sizes: out.vanilla_proofs.partition_sizes,
            comm_r: out.comm_r,
            comm_d: out.comm_d,
            replica_id: out.replica_id,
            seed: out.seed,
            ticket: out.ticket,
        })
    }
}

/// The vanilla proofs' shape, read without keeping them: the API form's version key (None:
/// filecoin-proofs' bare array) and the number of proofs in each partition.
struct VanillaShape {
    key: Option<String>,
    partition_sizes: Vec<usize>,
}

impl<'de> Deserialize<'de> for VanillaShape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = VanillaShape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of partitions of vanilla proofs, or one keyed by version")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<VanillaShape, A::Error> {
                Ok(VanillaShape {
                    key: None,
                    partition_sizes: PartitionSizes.visit_seq(seq)?,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<VanillaShape, A::Error> {
                let one = || A::Error::custom("vanilla_proofs must have exactly one version key");
                let key: String = map.next_key()?.ok_or_else(one)?;
                let sizes = map.next_value_seed(PartitionSizes)?;
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(one());
                }
                Ok(VanillaShape {
                    key: Some(key),
                    partition_sizes: sizes,
                })
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Reads a list of lists, keeping the length of each.
struct PartitionSizes;

impl<'de> serde::de::Visitor<'de> for PartitionSizes {
    type Value = Vec<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of partitions, each a list of vanilla proofs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<usize>, A::Error> {
        let mut sizes = Vec::new();
        while let Some(Length(n)) = seq.next_element()? {
            sizes.push(n);
        }
        Ok(sizes)
    }
}

impl<'de> DeserializeSeed<'de> for PartitionSizes {
    type Value = Vec<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<usize>, D::Error> {
        d.deserialize_seq(self)
    }
}

/// A list's length, its elements skipped.
struct Length(usize);

impl<'de> Deserialize<'de> for Length {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Length;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of vanilla proofs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Length, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Length(n))
            }
        }
        d.deserialize_seq(Visit)
    }
}
