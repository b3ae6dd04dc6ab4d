//! Every circuit cuzk-filecoin proves, named by its kind and sector size ([`FilecoinCircuit`],
//! whose id `porep-32g` names it in the engine, the daemon's API and metrics): its registered
//! proof numbers, its parameter files under filecoin-proofs' names, and generating them with
//! cuzk's setup.
//!
//! The parameter cache is keyed by content: a file's name is filecoin-proofs' cache identifier,
//! a hash of the circuit's public parameters, so one folder holds every kind and size side by
//! side, a file found there belongs to its circuit, and generating what exists is a no-op
//! ([`crate::params::generate`]). The seed of cuzk's setup is the caller's: it names the folder
//! (cuzk's CLI, the engine and the tests use `filecoin-params/seed-0`).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::error::FilecoinError;
use crate::params::{GenerateReport, ParamFiles};
use crate::post::PostKind;
use crate::registered::{size_index, RegisteredSealProof, SECTOR_SIZES};

/// A Filecoin circuit family; with a sector size it names one circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitKind {
    /// PoRep C2 (`StackedCompound`, the V1_1 registered proof of the size).
    Porep,
    /// WinningPoSt (`FallbackPoStCompound`, one sector, 66 challenges).
    Winning,
    /// WindowPoSt, one partition (`FallbackPoStCompound`).
    Window,
    /// SnapDeals (`EmptySectorUpdateCompound`).
    Snap,
}

impl CircuitKind {
    /// Every kind, in the order `cuzk params --kind all` makes them.
    pub const ALL: [CircuitKind; 4] = [
        CircuitKind::Porep,
        CircuitKind::Winning,
        CircuitKind::Window,
        CircuitKind::Snap,
    ];

    /// The kind's name on the command line: `porep`, `winning`, `window`, `snap`.
    pub fn name(self) -> &'static str {
        match self {
            CircuitKind::Porep => "porep",
            CircuitKind::Winning => "winning",
            CircuitKind::Window => "window",
            CircuitKind::Snap => "snap",
        }
    }

    /// The first part of the kind's circuit ids: `porep`, `winning`, `wpost`, `snap`.
    pub fn id_prefix(self) -> &'static str {
        match self {
            CircuitKind::Porep => "porep",
            CircuitKind::Winning => "winning",
            CircuitKind::Window => "wpost",
            CircuitKind::Snap => "snap",
        }
    }

    /// The numbers filecoin-ffi gives this kind's registered proofs; each family counts
    /// [`SECTOR_SIZES`] from its first number. PoRep: seal proofs V1 (0–4) and V1_1 (5–9);
    /// WinningPoSt: 0–4; WindowPoSt: V1 (5–9) and Go's V1_1 (10–14, V1_2 in Rust); SnapDeals:
    /// update proofs 0–4.
    pub fn registered_numbers(self) -> std::ops::RangeInclusive<u64> {
        match self {
            CircuitKind::Porep => 0..=9,
            CircuitKind::Winning | CircuitKind::Snap => 0..=4,
            CircuitKind::Window => 5..=14,
        }
    }

    /// The registered proof filecoin-ffi names today for this kind's circuit of `sector_size`:
    /// the newest of the kind's families (PoRep V1_1, WinningPoSt V1, WindowPoSt V1_1,
    /// SnapDeals V1).
    pub fn registered_proof(self, sector_size: u64) -> Result<u64, FilecoinError> {
        let first = match self {
            CircuitKind::Porep => 5,
            CircuitKind::Winning | CircuitKind::Snap => 0,
            CircuitKind::Window => 10,
        };
        Ok(first + size_index(sector_size)? as u64)
    }

    /// The sector size of this kind's registered proof `number`; a number outside
    /// [`CircuitKind::registered_numbers`] is [`FilecoinError::UnknownRegisteredProof`].
    pub fn sector_size_of(self, number: u64) -> Result<u64, FilecoinError> {
        let numbers = self.registered_numbers();
        if !numbers.contains(&number) {
            return Err(FilecoinError::UnknownRegisteredProof(format!(
                "{number} of kind {self} (expected {}..={})",
                numbers.start(),
                numbers.end()
            )));
        }
        Ok(SECTOR_SIZES[(number % 5) as usize])
    }

    /// The parameter files of this kind's circuit of `sector_size`, in `dir`.
    pub fn param_files(self, dir: &Path, sector_size: u64) -> Result<ParamFiles, FilecoinError> {
        match self {
            CircuitKind::Porep => {
                crate::porep::param_files(dir, RegisteredSealProof::v1_1(sector_size)?)
            }
            CircuitKind::Winning => {
                crate::post::post_param_files(dir, PostKind::Winning, sector_size)
            }
            CircuitKind::Window => {
                crate::post::post_param_files(dir, PostKind::Window, sector_size)
            }
            CircuitKind::Snap => crate::snap::snap_param_files(dir, sector_size),
        }
    }

    /// Makes this kind's parameters of `sector_size` in `dir` with cuzk's setup seeded by
    /// `seed`, unless they exist (then the report says `cached`).
    pub fn generate_params(
        self,
        dir: &Path,
        sector_size: u64,
        seed: u64,
    ) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
        match self {
            CircuitKind::Porep => {
                crate::porep::generate_params(dir, RegisteredSealProof::v1_1(sector_size)?, seed)
            }
            CircuitKind::Winning => {
                crate::post::generate_post_params(dir, PostKind::Winning, sector_size, seed)
            }
            CircuitKind::Window => {
                crate::post::generate_post_params(dir, PostKind::Window, sector_size, seed)
            }
            CircuitKind::Snap => crate::snap::generate_snap_params(dir, sector_size, seed),
        }
    }
}

/// One Filecoin circuit: a kind at one of Filecoin's sector sizes (the fields are private so
/// that every value is one [`FilecoinCircuit::new`] admitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FilecoinCircuit {
    kind: CircuitKind,
    sector_size: u64,
}

impl FilecoinCircuit {
    /// The circuit of `kind` at `sector_size`, which must be one of Filecoin's.
    pub fn new(kind: CircuitKind, sector_size: u64) -> Result<Self, FilecoinError> {
        size_index(sector_size)?;
        Ok(Self { kind, sector_size })
    }

    /// The kind.
    pub fn kind(self) -> CircuitKind {
        self.kind
    }

    /// The sector size in bytes, one of [`SECTOR_SIZES`].
    pub fn sector_size(self) -> u64 {
        self.sector_size
    }

    /// The circuit's id: its kind's [`CircuitKind::id_prefix`], a dash, the sector size with a
    /// binary unit (`porep-32g`, `winning-2k`, `wpost-8m`, `snap-64g`).
    pub fn id(self) -> String {
        const UNITS: [(u64, &str); 3] = [(1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
        let size = UNITS
            .iter()
            .find(|(unit, _)| self.sector_size % unit == 0)
            .map(|(unit, suffix)| format!("{}{suffix}", self.sector_size / unit))
            .unwrap_or_else(|| self.sector_size.to_string());
        format!("{}-{size}", self.kind.id_prefix())
    }

    /// The circuit of an [`id`](Self::id).
    pub fn parse(id: &str) -> Result<Self, FilecoinError> {
        let unknown = || FilecoinError::InvalidInput(format!("unknown circuit id {id:?}"));
        let (prefix, size) = id.split_once('-').ok_or_else(unknown)?;
        let kind = CircuitKind::ALL
            .into_iter()
            .find(|k| k.id_prefix() == prefix)
            .ok_or_else(unknown)?;
        let split = size
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(unknown)?;
        let (digits, unit) = size.split_at(split);
        let shift = match unit {
            "k" => 10,
            "m" => 20,
            "g" => 30,
            _ => return Err(unknown()),
        };
        let bytes = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(1 << shift))
            .ok_or_else(unknown)?;
        Self::new(kind, bytes).map_err(|_| unknown())
    }

    /// The registered proof filecoin-ffi names today for this circuit
    /// ([`CircuitKind::registered_proof`]).
    pub fn registered_proof(self) -> u64 {
        // `new` admitted the size.
        self.kind.registered_proof(self.sector_size).unwrap_or(0)
    }

    /// The circuit's parameter files in `dir`.
    pub fn param_files(self, dir: &Path) -> Result<ParamFiles, FilecoinError> {
        self.kind.param_files(dir, self.sector_size)
    }

    /// Makes the circuit's parameters in `dir` with cuzk's setup seeded by `seed`, unless they
    /// exist.
    pub fn generate_params(
        self,
        dir: &Path,
        seed: u64,
    ) -> Result<(ParamFiles, GenerateReport), FilecoinError> {
        self.kind.generate_params(dir, self.sector_size, seed)
    }
}

impl fmt::Display for FilecoinCircuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

impl From<PostKind> for CircuitKind {
    fn from(kind: PostKind) -> Self {
        match kind {
            PostKind::Winning => CircuitKind::Winning,
            PostKind::Window => CircuitKind::Window,
        }
    }
}

impl fmt::Display for CircuitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CircuitKind {
    type Err = FilecoinError;

    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        CircuitKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                FilecoinError::InvalidInput(format!(
                    "unknown circuit kind {s:?} (porep, winning, window or snap)"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_name_kind_and_size() {
        let porep = FilecoinCircuit::new(CircuitKind::Porep, 32 << 30).unwrap();
        assert_eq!(porep.id(), "porep-32g");
        assert_eq!(porep.registered_proof(), 8);
        let window = FilecoinCircuit::new(CircuitKind::Window, 2048).unwrap();
        assert_eq!(window.to_string(), "wpost-2k");
        assert_eq!(window.registered_proof(), 10);
        assert!(FilecoinCircuit::new(CircuitKind::Snap, 4096).is_err());
        for bad in [
            "porep",
            "porep-",
            "porep-32",
            "porep-3x",
            "porep-4k",
            "window-2k",
            "wpost-2kk",
            "-2k",
            "porep-99999999999999999999g",
        ] {
            assert!(FilecoinCircuit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds_have_distinct_files_by_filecoin_proofs_names() {
        let dir = Path::new("/nonexistent");
        let files: Vec<ParamFiles> = CircuitKind::ALL
            .iter()
            .map(|k| k.param_files(dir, 2048).unwrap())
            .collect();
        for (i, f) in files.iter().enumerate() {
            assert!(f.params.starts_with(dir));
            assert!(f.params.to_str().unwrap().ends_with(".params"));
            for g in &files[i + 1..] {
                assert_ne!(f.id, g.id);
            }
        }
        assert!(files[0].id.starts_with("stacked-proof-of-replication-"));
        for kind in CircuitKind::ALL {
            assert_eq!(kind.name().parse::<CircuitKind>().unwrap(), kind);
            for size in SECTOR_SIZES {
                let number = kind.registered_proof(size).unwrap();
                assert!(kind.registered_numbers().contains(&number));
                assert_eq!(kind.sector_size_of(number).unwrap(), size);
            }
            assert!(kind.registered_proof(4096).is_err());
            for size in SECTOR_SIZES {
                let circuit = FilecoinCircuit::new(kind, size).unwrap();
                assert_eq!(FilecoinCircuit::parse(&circuit.id()).unwrap(), circuit);
            }
            assert!(kind
                .sector_size_of(kind.registered_numbers().end() + 1)
                .is_err());
        }
        assert!(matches!(
            "seal".parse::<CircuitKind>(),
            Err(FilecoinError::InvalidInput(_))
        ));
        assert!(matches!(
            CircuitKind::Snap.param_files(dir, 4096),
            Err(FilecoinError::UnknownSectorSize(4096))
        ));
    }
}
