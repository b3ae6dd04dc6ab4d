//! A folder of pre-compiled circuits, one file per topology key, built on first use.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bellpepper_core::Circuit;
use cuzk_field::Scalar;

use crate::compiled::PreCompiled;
use crate::error::PceError;
use crate::format;
use crate::record::record;

/// The default cache folder: `pce` under cuzk's cache folder ([`cuzk_gpu_build::cache_root`]:
/// `$CUZK_CACHE_DIR`, else `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`, the kernel cache's
/// root), or `None` where none is set.
pub fn default_dir() -> Option<PathBuf> {
    cuzk_gpu_build::cache_root().map(|root| root.join("pce"))
}

/// How [`PceCache::load_or_record`] got its circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The file was in the cache and checked.
    Loaded,
    /// There was no file: the circuit was recorded and written.
    Recorded,
    /// The file was unusable (damaged, another version): it was recorded again and replaced.
    Replaced,
}

/// A folder of pre-compiled circuits.
///
/// A key names a topology: the caller must give circuits of different shapes different keys
/// (e.g. the proof kind and sector size). A circuit of another shape under a known key is still
/// caught, by its counts and shape fingerprint, when it is proved.
#[derive(Clone, Debug)]
pub struct PceCache {
    dir: PathBuf,
}

impl PceCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`: the key with every character outside `[A-Za-z0-9._-]` replaced by `_`,
    /// then `.pce`.
    pub fn path(&self, key: &str) -> PathBuf {
        let name: String = key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("{name}.pce"))
    }

    /// The pre-compiled circuit of `key`: the cached file if it checks, else `circuit()` is
    /// recorded and written atomically (a temporary file renamed into place), then mapped.
    pub fn load_or_record<C: Circuit<Scalar>>(
        &self,
        key: &str,
        circuit: impl FnOnce() -> C,
    ) -> Result<(PreCompiled, Origin), PceError> {
        let path = self.path(key);
        let origin = match PreCompiled::open(&path) {
            Ok(pc) => return Ok((pc, Origin::Loaded)),
            Err(PceError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Origin::Recorded,
            Err(PceError::Io(e)) => return Err(PceError::Io(e)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "pre-compiled file unusable; recording it again");
                Origin::Replaced
            }
        };
        let rec = record(circuit())?;
        write_atomic(&path, |out| format::write(&rec, out).map(|_| ()))?;
        drop(rec);
        Ok((PreCompiled::open(&path)?, origin))
    }
}

/// Writes `path` through a temporary file in the same folder, synced then renamed over it, so
/// a reader sees the old file or the whole new one, never a partial one.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> Result<(), PceError>,
) -> Result<(), PceError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per process and per call, so concurrent writers never share a temporary file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut out = BufWriter::new(fs::File::create(&tmp)?);
        write(&mut out)?;
        out.flush()?;
        out.get_ref().sync_all()?;
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes a recording to `path` atomically (see [`PceCache::load_or_record`]).
pub fn write_file(rec: &crate::Recording, path: &Path) -> Result<(), PceError> {
    write_atomic(path, |out| format::write(rec, out).map(|_| ()))
}
