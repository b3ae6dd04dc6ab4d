//! One engine per data folder: `<data_dir>/lock`, locked (an advisory lock of the operating
//! system, `flock`) for as long as the engine lives, with the holder's process id written in it.
//!
//! Two daemons on one journal and spool would each run the other's jobs and overwrite each
//! other's rows. The lock is the operating system's, so it goes with its holder: a daemon that
//! was killed leaves a file that the next one locks at once, and the pid in it is only there to
//! say who holds the folder.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::EngineError;

/// The lock on a data folder, held until dropped. [`Engine::start`](crate::Engine::start)
/// takes it; a daemon takes it itself before it binds its sockets and hands it to
/// [`Engine::start_locked`](crate::Engine::start_locked).
#[derive(Debug)]
pub struct DataDirLock {
    dir: PathBuf,
    _file: File,
}

impl DataDirLock {
    /// Locks `dir` (which exists) for this process, or says which process holds it
    /// ([`EngineError::DataDirInUse`]).
    pub fn acquire(dir: &Path) -> Result<Self, EngineError> {
        let path = dir.join("lock");
        let io = |source: std::io::Error| EngineError::Io {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        if let Err(e) = file.try_lock_exclusive() {
            if e.kind() != fs2::lock_contended_error().kind() {
                return Err(io(e));
            }
            let mut holder = String::new();
            // The holder writes its pid right after locking: an empty read is a race with it.
            let _ = file.read_to_string(&mut holder);
            return Err(EngineError::DataDirInUse {
                dir: dir.to_path_buf(),
                holder: holder.trim().to_string(),
            });
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            _file: file,
        })
    }

    /// The folder this lock holds.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::acquire(dir.path()).unwrap();
        let pid = std::process::id().to_string();
        match DataDirLock::acquire(dir.path()) {
            Err(EngineError::DataDirInUse { dir: d, holder }) => {
                assert_eq!(d, dir.path());
                assert_eq!(holder, pid);
            }
            other => panic!("a second lock: {other:?}"),
        }
        let message = DataDirLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(message.contains(&pid), "{message}");
        drop(first);
        let again = DataDirLock::acquire(dir.path()).unwrap();
        drop(again);
    }
}
