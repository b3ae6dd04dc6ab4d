//! Parameter files by filecoin-proofs' names, in its cache layout, read with cuzk's reader and
//! made with cuzk's setup.
//!
//! filecoin-proofs keeps one folder (`FIL_PROOFS_PARAMETER_CACHE`, by default
//! `/var/tmp/filecoin-proof-parameters`) with three files per circuit:
//! `v28-<prefix>-<sha256 of the circuit's identifier>.params` (bellperson's parameter format),
//! `.vk` (its verifying key) and `.meta` (JSON `{"sector_size": N}`). The name comes from the
//! public parameters through storage-proofs' `CacheableParameters::cache_identifier`, so a file
//! found here belongs to this circuit shape. This library never reads the environment: the
//! caller names the folder.
//!
//! Test sector sizes have no published parameters: [`generate`] makes them with cuzk's setup
//! (bellperson's, bit for bit, for the same seeded rng), so they are a pure function of the
//! circuit and the seed and may be cached by those.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_groth16::{Capacity, Check, MappedParameters, Parameters, VerifyingKey};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::parameter_cache::{
    CacheableParameters, ParameterSetMetadata, GROTH_PARAMETER_EXT, PARAMETER_METADATA_EXT,
    VERIFYING_KEY_EXT, VERSION,
};

use crate::error::FilecoinError;
use crate::registered::format_sector_size;

/// filecoin-proofs' default parameter folder.
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

/// Where Filecoin parameters are read when no folder is named: filecoin-proofs' own variable,
/// `$FIL_PROOFS_PARAMETER_CACHE` (when set and not empty), else `otherwise`: the daemon passes
/// [`DEFAULT_PARAMETER_CACHE`] (the published parameters' home on a proving host), the CLI
/// [`test_params_dir`] (where it makes the test sizes' parameters).
pub fn parameter_dir(otherwise: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(otherwise)
}

/// The largest sector size whose parameters cuzk's setup makes (the test sizes, 2 KiB and
/// 8 MiB); larger sizes need filecoin-proofs' published parameters.
pub const MAX_TEST_SECTOR_SIZE: u64 = 8 << 20;

/// The seed of the test parameters cuzk's setup makes for the test sector sizes (`cuzk params`,
/// `cuzk prove`, the daemon's `generate_test_params`, the tests), which names their folder.
pub const TEST_PARAMS_SEED: u64 = 0;

/// The folder the test parameters are made in and shared from: `filecoin-params/seed-0` in cuzk's
/// cache folder ([`cuzk_gpu_build::cache_root`]: `$CUZK_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`); `None` where none of them is set.
pub fn test_params_dir() -> Option<PathBuf> {
    cuzk_gpu_build::cache_root()
        .map(|root| root.join(format!("filecoin-params/seed-{TEST_PARAMS_SEED}")))
}

/// The three files of one circuit's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    /// The cache identifier (`stacked-proof-of-replication-...-<hash>`), without version or
    /// extension.
    pub id: String,
    /// The sector size the circuit is for.
    pub sector_size: u64,
    /// `v28-<id>.params`.
    pub params: PathBuf,
    /// `v28-<id>.vk`.
    pub vk: PathBuf,
    /// `v28-<id>.meta`.
    pub meta: PathBuf,
}

impl ParamFiles {
    /// The files of the circuit `C` of the compound proof `CP` with public parameters `pp`,
    /// in `dir`.
    pub fn of<CP, C, P>(dir: &Path, pp: &P) -> Self
    where
        CP: CacheableParameters<C, P>,
        C: Circuit<Scalar>,
        P: ParameterSetMetadata,
    {
        let id = CP::cache_identifier(pp);
        let file = |ext: &str| dir.join(format!("v{VERSION}-{id}.{ext}"));
        Self {
            params: file(GROTH_PARAMETER_EXT),
            vk: file(VERIFYING_KEY_EXT),
            meta: file(PARAMETER_METADATA_EXT),
            sector_size: pp.sector_size(),
            id,
        }
    }

    /// Whether all three files exist.
    pub fn exist(&self) -> bool {
        self.params.is_file() && self.vk.is_file() && self.meta.is_file()
    }

    fn missing(&self, path: &Path) -> FilecoinError {
        FilecoinError::MissingParameters {
            path: path.to_path_buf(),
            sector_size: format_sector_size(self.sector_size),
        }
    }

    /// Reads the parameters, memory-mapped then copied into memory, with the check
    /// filecoin-proofs makes (the encoding and the curve, not the subgroup: the files come
    /// from a trusted ceremony or from this machine).
    pub fn read_params(&self) -> Result<Parameters, FilecoinError> {
        if !self.params.is_file() {
            return Err(self.missing(&self.params));
        }
        let mapped = MappedParameters::open(&self.params, Check::Curve)?;
        Ok(mapped.to_parameters()?)
    }

    /// The sizes a synthesis of this circuit reserves, from the parameter file's section counts
    /// (nothing is decoded); `None` when the file cannot be opened, since it is only a hint.
    pub fn capacity(&self) -> Option<Capacity> {
        let mapped = MappedParameters::open(&self.params, Check::Curve).ok()?;
        Some(Capacity::of_mapped(&mapped))
    }

    /// Reads the verifying key, as filecoin-proofs' verifiers do.
    pub fn read_vk(&self) -> Result<VerifyingKey, FilecoinError> {
        let file = fs::File::open(&self.vk).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => self.missing(&self.vk),
            _ => FilecoinError::Io {
                path: self.vk.clone(),
                source: e,
            },
        })?;
        Ok(VerifyingKey::read(std::io::BufReader::new(file))?)
    }
}

/// How long each step of [`generate`] took.
#[derive(Clone, Debug, Default)]
pub struct GenerateReport {
    /// Running cuzk's setup (synthesis of the blank circuit and the fixed-base products).
    pub setup: Duration,
    /// Writing the three files.
    pub write: Duration,
    /// Whether the files already existed (nothing was generated).
    pub cached: bool,
}

/// Makes the parameters of `blank_circuit` with cuzk's setup and a ChaCha20 rng seeded with
/// `seed`, and writes them under `files`' names. Files that already exist are kept: they are a
/// function of the circuit (named by the file) and the seed (the caller's folder names it).
pub fn generate<C: Circuit<Scalar>>(
    files: &ParamFiles,
    blank_circuit: C,
    seed: u64,
) -> Result<GenerateReport, FilecoinError> {
    if files.exist() {
        return Ok(GenerateReport {
            cached: true,
            ..Default::default()
        });
    }
    if let Some(dir) = files.params.parent() {
        fs::create_dir_all(dir).map_err(FilecoinError::io(dir))?;
    }
    let start = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = cuzk_groth16::generate_random_parameters(blank_circuit, &mut rng)?;
    let setup = start.elapsed();

    let start = Instant::now();
    // Each file is written beside its final name and renamed, so a reader never sees half of
    // one; the .params file goes last, since its presence is what callers test first.
    write_atomic(&files.vk, |w| params.vk.write(w))?;
    write_atomic(&files.meta, |w| {
        write!(w, "{{\"sector_size\":{}}}", files.sector_size)
    })?;
    write_atomic(&files.params, |w| params.write(w))?;
    Ok(GenerateReport {
        setup,
        write: start.elapsed(),
        cached: false,
    })
}

fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<(), FilecoinError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut w = BufWriter::new(fs::File::create(&tmp)?);
        write(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        FilecoinError::io(path)(e)
    })
}
