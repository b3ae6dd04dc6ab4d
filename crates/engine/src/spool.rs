//! Spool files: a job's large inputs (the vanilla proofs) on disk, written, synced and renamed
//! into place before the job is journaled, and checked when read back. Inputs below the engine's
//! threshold are kept in the journal row instead, in the same checked encoding.
//!
//! Layout: the magic `CUZKSPL1`, a little-endian `u32` count of blobs, each blob as a
//! little-endian `u64` length and its bytes (blob 0 is `vanilla_proof`, the others
//! `vanilla_proofs` in order), then the SHA-256 of everything before it. A file that is
//! truncated, altered or of another format fails its own job with a message naming the file.
//!
//! The spool counts the bytes of its files (seeded by the sweep at start, reserved before a
//! file is written, given back when one is removed), so the engine can refuse a submission
//! that would take it past its limit; a full disk while writing is
//! [`EngineError::Exhausted`], and the half-written file is removed.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::EngineError;

const MAGIC: &[u8; 8] = b"CUZKSPL1";

/// The inputs a spool file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpoolData {
    /// The single vanilla proof (PoRep's C1 output).
    pub vanilla_proof: Vec<u8>,
    /// The vanilla proofs (PoSt, SnapDeals).
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The checked encoding of `data` (a spool file's bytes, also what the journal keeps inline).
pub fn encode(data: &SpoolData) -> Vec<u8> {
    encode_parts(&data.vanilla_proof, &data.vanilla_proofs)
}

/// The length of [`encode_parts`]'s bytes (a spool file's size): the magic, the count, each
/// blob with its length, the digest.
pub fn encoded_len(vanilla_proof: &[u8], vanilla_proofs: &[Vec<u8>]) -> usize {
    MAGIC.len()
        + 4
        + 8
        + vanilla_proof.len()
        + vanilla_proofs.iter().map(|b| 8 + b.len()).sum::<usize>()
        + 32
}

/// [`encode`] of the inputs as a request holds them.
pub fn encode_parts(vanilla_proof: &[u8], vanilla_proofs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(vanilla_proof, vanilla_proofs));
    write_encoded(&mut out, vanilla_proof, vanilla_proofs).expect("writing to memory");
    out
}

/// Writes the encoding to `w` as it goes (the inputs are not copied), hashing what it writes.
fn write_encoded(
    w: &mut impl Write,
    vanilla_proof: &[u8],
    vanilla_proofs: &[Vec<u8>],
) -> std::io::Result<()> {
    let mut hasher = Sha256::new();
    let mut put = |bytes: &[u8]| -> std::io::Result<()> {
        hasher.update(bytes);
        w.write_all(bytes)
    };
    put(MAGIC)?;
    put(&((1 + vanilla_proofs.len()) as u32).to_le_bytes())?;
    for blob in std::iter::once(vanilla_proof).chain(vanilla_proofs.iter().map(Vec::as_slice)) {
        put(&(blob.len() as u64).to_le_bytes())?;
        put(blob)?;
    }
    let digest = hasher.finalize();
    w.write_all(&digest)
}

/// Decodes and checks [`encode`]'s bytes; the error says what is wrong.
pub fn decode(bytes: &[u8]) -> Result<SpoolData, String> {
    if bytes.len() < MAGIC.len() + 4 + 32 {
        return Err(format!("{} bytes is too short", bytes.len()));
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err("checksum mismatch (truncated or altered)".into());
    }
    if &body[..8] != MAGIC {
        return Err("not a spool file (bad magic)".into());
    }
    let mut at = 8;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let out = body
            .get(at..at + n)
            .ok_or_else(|| "a length runs past the end".to_string())?;
        at += n;
        Ok(out)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    if count == 0 {
        return Err("no blobs".into());
    }
    let mut blobs = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let len = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
        let len = usize::try_from(len).map_err(|_| "a length overflows".to_string())?;
        blobs.push(take(len)?.to_vec());
    }
    let mut blobs = blobs.into_iter();
    Ok(SpoolData {
        vanilla_proof: blobs.next().expect("count > 0"),
        vanilla_proofs: blobs.collect(),
    })
}

/// Whether `e` says the disk (or the user's quota) is full.
pub(crate) fn is_disk_full(e: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    e.kind() == std::io::ErrorKind::StorageFull
        || e.kind() == std::io::ErrorKind::QuotaExceeded
        || (cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(ENOSPC | EDQUOT)))
}

/// The spool folder, and the bytes of its files.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    bytes: AtomicU64,
    /// Tests only: writes fail as on a full disk after this many bytes of a file.
    #[cfg(test)]
    pub(crate) full_after: std::sync::atomic::AtomicUsize,
}

/// A writer that fails as a full disk does after `left` bytes (tests only).
#[cfg(test)]
struct FullAfter<W> {
    inner: W,
    left: usize,
}

#[cfg(test)]
impl<W: Write> Write for FullAfter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        let n = self.inner.write(&buf[..buf.len().min(self.left)])?;
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Spool {
    /// The spool in `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<Self, EngineError> {
        fs::create_dir_all(dir).map_err(EngineError::io(dir))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            bytes: AtomicU64::new(0),
            #[cfg(test)]
            full_after: std::sync::atomic::AtomicUsize::new(usize::MAX),
        })
    }

    /// The bytes of the spool's files, counting those reserved for files being written.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }

    /// Reserves `n` bytes for a file about to be written, if the spool then holds at most
    /// `limit`; the file's removal (or [`Spool::release`], if it is never written) gives them
    /// back.
    pub fn reserve(&self, n: u64, limit: u64) -> bool {
        self.bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(n).filter(|total| *total <= limit)
            })
            .is_ok()
    }

    /// Gives back `n` reserved bytes whose file was not written.
    pub fn release(&self, n: u64) {
        let _ = self
            .bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                Some(held.saturating_sub(n))
            });
    }

    /// The file of job `job_id`.
    pub fn path(&self, job_id: &str) -> PathBuf {
        self.dir.join(format!("{job_id}.job"))
    }

    /// Writes `data` for `job_id` beside its final name, syncs it, renames it into place and
    /// syncs the folder: when this returns, the file survives a crash. On failure nothing of
    /// it is left; a full disk is [`EngineError::Exhausted`]. The caller has reserved its
    /// bytes ([`Spool::reserve`]).
    pub fn write(&self, job_id: &str, data: &SpoolData) -> Result<PathBuf, EngineError> {
        self.write_parts(job_id, &data.vanilla_proof, &data.vanilla_proofs)
    }

    /// [`Spool::write`] from the inputs as a request holds them, streamed to the file.
    pub fn write_parts(
        &self,
        job_id: &str,
        vanilla_proof: &[u8],
        vanilla_proofs: &[Vec<u8>],
    ) -> Result<PathBuf, EngineError> {
        let path = self.path(job_id);
        let tmp = self.dir.join(format!("{job_id}.tmp"));
        let result = (|| {
            let file = fs::File::create(&tmp)?;
            #[cfg(test)]
            let file = FullAfter {
                inner: file,
                left: self.full_after.load(Ordering::SeqCst),
            };
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            write_encoded(&mut out, vanilla_proof, vanilla_proofs)?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            #[cfg(test)]
            let file = file.inner;
            file.sync_all()?;
            fs::rename(&tmp, &path)?;
            fs::File::open(&self.dir)?.sync_all()
        })();
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            if is_disk_full(&e) {
                EngineError::Exhausted(format!("the disk is full: {}: {e}", path.display()))
            } else {
                EngineError::io(&path)(e)
            }
        })?;
        Ok(path)
    }

    /// Reads and checks the file of `job_id`.
    pub fn read(&self, job_id: &str) -> Result<SpoolData, EngineError> {
        let path = self.path(job_id);
        let bytes = fs::read(&path).map_err(|e| EngineError::DamagedSpool {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        decode(&bytes).map_err(|detail| EngineError::DamagedSpool { path, detail })
    }

    /// Removes the file of `job_id` (its job has ended) and gives back its bytes; a missing
    /// file is not an error.
    pub fn remove(&self, job_id: &str) {
        let path = self.path(job_id);
        let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        match fs::remove_file(&path) {
            Ok(()) => self.release(len),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "removing a spool file"),
        }
    }

    /// Removes every file whose job is not in `keep` (left by a crash between the spool write
    /// and the journal row: that job was never accepted), and every temporary file; the spool's
    /// bytes are those of the files kept.
    pub fn sweep(&self, keep: &std::collections::HashSet<String>) -> Result<usize, EngineError> {
        let mut removed = 0;
        let mut kept = 0;
        for entry in fs::read_dir(&self.dir).map_err(EngineError::io(&self.dir))? {
            let entry = entry.map_err(EngineError::io(&self.dir))?;
            let path = entry.path();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let is_job = path.extension().is_some_and(|e| e == "job");
            if !is_job || !keep.contains(stem) {
                let _ = fs::remove_file(&path);
                removed += 1;
            } else {
                kept += entry.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
        self.bytes.store(kept, Ordering::SeqCst);
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> SpoolData {
        SpoolData {
            vanilla_proof: b"{\"c1\":1}".to_vec(),
            vanilla_proofs: vec![vec![1, 2, 3], vec![], vec![9; 1000]],
        }
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        spool.write("a", &data()).unwrap();
        assert_eq!(spool.read("a").unwrap(), data());
    }

    #[test]
    fn truncated_or_flipped_files_are_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        let path = spool.write("a", &data()).unwrap();
        let bytes = fs::read(&path).unwrap();
        for damaged in [bytes[..bytes.len() - 1].to_vec(), bytes[..10].to_vec(), {
            let mut b = bytes.clone();
            b[20] ^= 1;
            b
        }] {
            fs::write(&path, &damaged).unwrap();
            let err = spool.read("a").unwrap_err();
            assert!(matches!(err, EngineError::DamagedSpool { .. }), "{err:?}");
        }
        fs::remove_file(&path).unwrap();
        assert!(matches!(
            spool.read("a").unwrap_err(),
            EngineError::DamagedSpool { .. }
        ));
    }

    #[test]
    fn sweep_keeps_only_journaled_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        spool.write("kept", &data()).unwrap();
        spool.write("orphan", &data()).unwrap();
        fs::write(dir.path().join("x.tmp"), b"half").unwrap();
        let keep = ["kept".to_string()].into_iter().collect();
        assert_eq!(spool.sweep(&keep).unwrap(), 2);
        assert!(spool.read("kept").is_ok());
        assert!(spool.read("orphan").is_err());
        let len = encode(&data()).len() as u64;
        assert_eq!(spool.bytes(), len, "the sweep counts the files kept");
        assert!(!spool.reserve(1, len), "a reservation past the limit");
        assert!(spool.reserve(10, len + 10));
        spool.release(10);
        spool.remove("kept");
        assert_eq!(spool.bytes(), 0, "a removal gives its bytes back");
    }

    #[test]
    fn disk_full_errors_are_told_apart() {
        assert!(is_disk_full(&std::io::Error::from_raw_os_error(28)));
        assert!(is_disk_full(&std::io::ErrorKind::StorageFull.into()));
        assert!(!is_disk_full(&std::io::Error::from_raw_os_error(5)));
        assert!(!is_disk_full(&std::io::ErrorKind::PermissionDenied.into()));
    }

    /// A full disk while a submission's spool file is written: the submission is Exhausted
    /// (RESOURCE_EXHAUSTED), its half-written file removed and its bytes given back, and the
    /// job accepted before it is untouched, across a restart too.
    #[test]
    fn a_full_disk_refuses_the_submission_and_keeps_accepted_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::EngineConfig {
            data_dir: dir.path().join("data"),
            params: crate::ParamConfig {
                filecoin_dir: dir.path().join("filecoin"),
                synthetic_dir: dir.path().join("params"),
                generate_test_params: false,
                budget_bytes: u64::MAX,
            },
            group_window: 0,
            retention: std::time::Duration::from_secs(3600),
            max_attempts: 3,
            spool_threshold: 0,
            pce_dir: None,
            max_pending_jobs: 10,
            max_spool_bytes: u64::MAX,
            allow_synthetic: true,
            synthesis_threads: 1,
        };
        let request = |seed| {
            let mut r = crate::JobRequest::synthetic(6, seed, 1);
            r.vanilla_proofs = vec![vec![0; 4096]];
            r.request_id = format!("req-{seed}");
            r
        };
        // No workers: every accepted job stays pending.
        let engine = crate::Engine::start(config.clone(), Vec::new(), None).unwrap();
        let spool = &engine.shared.spool;
        let kept = engine.submit(request(1)).unwrap().job_id;
        let held = spool.bytes();
        spool.full_after.store(100, Ordering::SeqCst);
        match engine.submit(request(2)) {
            Err(EngineError::Exhausted(what)) => assert!(what.contains("full"), "{what}"),
            other => panic!("a full disk answered {other:?}"),
        }
        let files: Vec<_> = fs::read_dir(config.data_dir.join("spool"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files, [std::ffi::OsString::from(format!("{kept}.job"))]);
        assert_eq!(spool.bytes(), held);
        spool.full_after.store(usize::MAX, Ordering::SeqCst);
        let retried = engine.submit(request(2)).unwrap();
        assert!(!retried.existing, "the refused request id was let go");
        engine.shutdown(std::time::Duration::from_secs(5));
        drop(engine);
        let engine = crate::Engine::start(config, Vec::new(), None).unwrap();
        for id in [&kept, &retried.job_id] {
            assert_eq!(engine.outcome(id).unwrap().state, crate::JobState::Pending);
        }
        engine.shutdown(std::time::Duration::from_secs(5));
    }
}
