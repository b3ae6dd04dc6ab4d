//! Registered seal proofs: the numbers and names filecoin-ffi and filecoin-proofs-api use, and
//! what each fixes (sector size, API version, PoRep id).

use std::fmt;

use storage_proofs_core::api_version::ApiVersion;

use crate::error::FilecoinError;

/// Filecoin's sector sizes, in bytes, that a registered seal proof can name.
pub const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// The version of a registered seal proof (the family; the size is separate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SealVersion {
    /// `StackedDrg*V1`: numbers 0–4, API 1.0.0.
    V1,
    /// `StackedDrg*V1_1`: numbers 5–9, API 1.1.0.
    V1_1,
}

/// A registered seal proof: the sector size and the version, as filecoin-ffi numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisteredSealProof {
    /// The sector size in bytes, one of [`SECTOR_SIZES`].
    pub sector_size: u64,
    /// The version.
    pub version: SealVersion,
}

impl RegisteredSealProof {
    /// The 2 KiB V1_1 proof, the test sector size.
    pub const STACKED_DRG_2KIB_V1_1: Self = Self {
        sector_size: 2 << 10,
        version: SealVersion::V1_1,
    };

    /// The V1_1 proof of `sector_size`.
    pub fn v1_1(sector_size: u64) -> Result<Self, FilecoinError> {
        size_index(sector_size)?;
        Ok(Self {
            sector_size,
            version: SealVersion::V1_1,
        })
    }

    /// From filecoin-ffi's number (`StackedDrg2KiBV1_1` = 5).
    pub fn from_number(n: u64) -> Result<Self, FilecoinError> {
        let version = match n {
            0..=4 => SealVersion::V1,
            5..=9 => SealVersion::V1_1,
            10..=19 => return Err(FilecoinError::UnsupportedRegisteredProof(n.to_string())),
            _ => return Err(FilecoinError::UnknownRegisteredProof(n.to_string())),
        };
        Ok(Self {
            sector_size: SECTOR_SIZES[(n % 5) as usize],
            version,
        })
    }

    /// From filecoin-proofs-api's name (`"StackedDrg2KiBV1_1"`).
    pub fn from_name(name: &str) -> Result<Self, FilecoinError> {
        let unknown = || FilecoinError::UnknownRegisteredProof(format!("{name:?}"));
        let rest = name.strip_prefix("StackedDrg").ok_or_else(unknown)?;
        let (size, version) = rest.split_once('V').ok_or_else(unknown)?;
        let version = match version {
            "1" => SealVersion::V1,
            "1_1" => SealVersion::V1_1,
            v if v.starts_with("1_1_Feat") || v.starts_with("1_2") => {
                return Err(FilecoinError::UnsupportedRegisteredProof(name.to_string()))
            }
            _ => return Err(unknown()),
        };
        let sector_size = parse_sector_size(size).map_err(|_| unknown())?;
        Ok(Self {
            sector_size,
            version,
        })
    }

    /// filecoin-ffi's number.
    pub fn number(self) -> u64 {
        let base = match self.version {
            SealVersion::V1 => 0,
            SealVersion::V1_1 => 5,
        };
        // Constructors only admit sizes in SECTOR_SIZES.
        base + size_index(self.sector_size).unwrap_or(0) as u64
    }

    /// The API version filecoin-proofs-api gives this proof.
    pub fn api_version(self) -> ApiVersion {
        match self.version {
            SealVersion::V1 => ApiVersion::V1_0_0,
            SealVersion::V1_1 => ApiVersion::V1_1_0,
        }
    }

    /// The PoRep id: the registered proof's number, little-endian, then its nonce (zero), then
    /// zeros, as filecoin-proofs-api's `porep_id` builds it.
    pub fn porep_id(self) -> [u8; 32] {
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&self.number().to_le_bytes());
        id
    }

    /// The `PoRepConfig` filecoin-proofs uses for this proof.
    pub fn porep_config(self) -> filecoin_proofs::PoRepConfig {
        filecoin_proofs::PoRepConfig::new_groth16(
            self.sector_size,
            self.porep_id(),
            self.api_version(),
        )
    }
}

impl fmt::Display for RegisteredSealProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let version = match self.version {
            SealVersion::V1 => "1",
            SealVersion::V1_1 => "1_1",
        };
        write!(
            f,
            "StackedDrg{}V{version}",
            format_sector_size(self.sector_size)
        )
    }
}

pub(crate) fn size_index(sector_size: u64) -> Result<usize, FilecoinError> {
    SECTOR_SIZES
        .iter()
        .position(|&s| s == sector_size)
        .ok_or(FilecoinError::UnknownSectorSize(sector_size))
}

/// Parses `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` (or a plain byte count) into bytes, and
/// checks it is a Filecoin sector size.
pub fn parse_sector_size(text: &str) -> Result<u64, FilecoinError> {
    let text = text.trim();
    let unknown = || FilecoinError::InvalidInput(format!("unknown sector size {text:?}"));
    let (digits, shift) = if let Some(d) = text.strip_suffix("KiB") {
        (d, 10)
    } else if let Some(d) = text.strip_suffix("MiB") {
        (d, 20)
    } else if let Some(d) = text.strip_suffix("GiB") {
        (d, 30)
    } else {
        (text, 0)
    };
    let n: u64 = digits.parse().map_err(|_| unknown())?;
    let bytes = n.checked_shl(shift).ok_or_else(unknown)?;
    size_index(bytes)?;
    Ok(bytes)
}

/// `2048` → `2KiB`, as filecoin-proofs-api names sizes.
pub fn format_sector_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// The prover id of a miner: its actor id as an unsigned LEB128 varint, left-aligned in 32 zero
/// bytes (the payload of its `f0` address, as lotus and Curio compute it).
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let mut n = miner_id;
    let mut i = 0;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            id[i] = byte;
            break;
        }
        id[i] = byte | 0x80;
        i += 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_round_trip() {
        for n in 0..10 {
            let p = RegisteredSealProof::from_number(n).unwrap();
            assert_eq!(p.number(), n);
            assert_eq!(RegisteredSealProof::from_name(&p.to_string()).unwrap(), p);
        }
        assert_eq!(
            RegisteredSealProof::from_name("StackedDrg2KiBV1_1").unwrap(),
            RegisteredSealProof::STACKED_DRG_2KIB_V1_1
        );
        assert!(matches!(
            RegisteredSealProof::from_number(42),
            Err(FilecoinError::UnknownRegisteredProof(_))
        ));
        assert!(matches!(
            RegisteredSealProof::from_name("StackedDrg3KiBV1_1"),
            Err(FilecoinError::UnknownRegisteredProof(_))
        ));
    }

    #[test]
    fn prover_id_is_leb128() {
        assert_eq!(prover_id(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id(0)[..2], [0, 0]);
    }
}
