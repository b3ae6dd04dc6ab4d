//! Spool files: a job's large inputs (the vanilla proofs) on disk, written, synced and renamed
//! into place before the job is journaled, and checked when read back. Inputs below the engine's
//! threshold are kept in the journal row instead, in the same checked encoding.
//!
//! Layout: the magic `CUZKSPL1`, a little-endian `u32` count of blobs, each blob as a
//! little-endian `u64` length and its bytes (blob 0 is `vanilla_proof`, the others
//! `vanilla_proofs` in order), then the SHA-256 of everything before it. A file that is
//! truncated, altered or of another format fails its own job with a message naming the file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// [`encode`] of the inputs as a request holds them.
pub fn encode_parts(vanilla_proof: &[u8], vanilla_proofs: &[Vec<u8>]) -> Vec<u8> {
    let len = 12
        + 8
        + vanilla_proof.len()
        + vanilla_proofs.iter().map(|b| 8 + b.len()).sum::<usize>()
        + 32;
    let mut out = Vec::with_capacity(len);
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

/// The spool folder.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    /// The spool in `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<Self, EngineError> {
        fs::create_dir_all(dir).map_err(EngineError::io(dir))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The file of job `job_id`.
    pub fn path(&self, job_id: &str) -> PathBuf {
        self.dir.join(format!("{job_id}.job"))
    }

    /// Writes `data` for `job_id` beside its final name, syncs it, renames it into place and
    /// syncs the folder: when this returns, the file survives a crash.
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
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            write_encoded(&mut out, vanilla_proof, vanilla_proofs)?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            fs::rename(&tmp, &path)?;
            fs::File::open(&self.dir)?.sync_all()
        })();
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            EngineError::io(&path)(e)
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

    /// Removes the file of `job_id` (its job has ended); a missing file is not an error.
    pub fn remove(&self, job_id: &str) {
        let path = self.path(job_id);
        if let Err(e) = fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), error = %e, "removing a spool file");
            }
        }
    }

    /// Removes every file whose job is not in `keep` (left by a crash between the spool write
    /// and the journal row: that job was never accepted), and every temporary file.
    pub fn sweep(&self, keep: &std::collections::HashSet<String>) -> Result<usize, EngineError> {
        let mut removed = 0;
        for entry in fs::read_dir(&self.dir).map_err(EngineError::io(&self.dir))? {
            let entry = entry.map_err(EngineError::io(&self.dir))?;
            let path = entry.path();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let is_job = path.extension().is_some_and(|e| e == "job");
            if !is_job || !keep.contains(stem) {
                let _ = fs::remove_file(&path);
                removed += 1;
            }
        }
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
    }
}
