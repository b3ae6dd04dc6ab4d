//! The job journal: one SQLite row per accepted job (WAL mode, synchronous FULL, so a commit
//! survives a crash), holding its small fields, its state and, once it ends, its result.
//!
//! The large inputs live in spool files ([`crate::spool`]); a row is inserted only after its
//! spool file is synced, so every row's inputs are on disk. On start, rows that were pending
//! or running are queued again (in their original order), ended rows older than the retention
//! are deleted, and the rest answer `await` as before the restart.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use crate::job::{JobRequest, JobState, JobTimings, Priority, ProofKind};
use crate::EngineError;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A journal row as read back on start.
#[derive(Clone, Debug)]
pub struct JournalRow {
    /// Submission order.
    pub seq: u64,
    /// The job's id.
    pub job_id: String,
    /// The request without its spooled inputs (empty here; read from the spool).
    pub request: JobRequest,
    /// Its state when the journal was last written.
    pub state: JobState,
    /// When it was submitted (ms since the epoch).
    pub submitted_ms: u64,
    /// How many times a worker has started it.
    pub attempts: u32,
    /// Its proof, when completed.
    pub proof: Vec<u8>,
    /// Its error, when failed or cancelled.
    pub error: String,
    /// Its timings, when ended.
    pub timings: JobTimings,
    /// When a worker last started it (ms since the epoch; 0: never).
    pub started_ms: u64,
    /// When it ended (ms since the epoch; 0: not yet).
    pub finished_ms: u64,
}

/// The journal database.
#[derive(Debug)]
pub struct Journal {
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL UNIQUE,
    request_id TEXT UNIQUE,
    kind INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    sector_size INTEGER NOT NULL,
    registered_proof INTEGER NOT NULL,
    sector_number INTEGER NOT NULL,
    miner_id INTEGER NOT NULL,
    partition_index INTEGER NOT NULL,
    randomness BLOB NOT NULL,
    comm_r_old BLOB NOT NULL,
    comm_r_new BLOB NOT NULL,
    comm_d_new BLOB NOT NULL,
    payload BLOB,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    submitted_ms INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    proof BLOB,
    error TEXT,
    queue_wait_ms INTEGER,
    param_load_ms INTEGER,
    synthesis_ms INTEGER,
    proving_ms INTEGER,
    total_ms INTEGER,
    device_ms INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
";

/// The schema's version, kept in the database's `user_version`: a journal written by a newer cuzk
/// (a higher version) is refused rather than misread; an older one is brought up to it. 0 (from
/// before versions were written) and 1 lack `device_ms`, the jobs' device time (version 2).
pub const SCHEMA_VERSION: u32 = 2;

fn sql_err(e: rusqlite::Error) -> EngineError {
    EngineError::Journal(e)
}

/// [`sql_err`], but a full disk (SQLITE_FULL) is [`EngineError::Exhausted`]: where a new job
/// is refused for want of room, not for a broken journal.
fn insert_err(e: rusqlite::Error) -> EngineError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull => {
            EngineError::Exhausted(format!("the journal's disk is full: {e}"))
        }
        _ => sql_err(e),
    }
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

impl Journal {
    /// Opens (or creates) the journal at `path` in WAL mode with full syncs.
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let conn = Connection::open(path).map_err(sql_err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(sql_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "the journal could not switch to WAL mode");
        }
        conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;")
            .map_err(sql_err)?;
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err)?;
        if version > SCHEMA_VERSION {
            return Err(EngineError::JournalVersion {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        conn.execute_batch(SCHEMA).map_err(sql_err)?;
        // Version 2 added `device_ms`: a table made by an older cuzk gains it (its jobs' device
        // time reads as 0).
        let has_device_ms: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('jobs') WHERE name = 'device_ms'",
                [],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        if !has_device_ms {
            conn.execute_batch("ALTER TABLE jobs ADD COLUMN device_ms INTEGER")
                .map_err(sql_err)?;
        }
        if version < SCHEMA_VERSION {
            conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
                .map_err(sql_err)?;
        }
        Ok(Self { conn })
    }

    /// Journals a new pending job, durably (synced to disk), with its inputs' checked encoding
    /// inline (`payload`) or in a spool file already synced (`None`); returns its sequence
    /// number.
    pub fn insert(
        &self,
        job_id: &str,
        r: &JobRequest,
        payload: Option<&[u8]>,
        submitted_ms: u64,
    ) -> Result<u64, EngineError> {
        let request_id = (!r.request_id.is_empty()).then_some(r.request_id.as_str());
        self.conn
            .execute(
                "INSERT INTO jobs (job_id, request_id, kind, priority, sector_size,
                 registered_proof, sector_number, miner_id, partition_index, randomness,
                 comm_r_old, comm_r_new, comm_d_new, state, submitted_ms, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'pending', ?14,
                 ?15)",
                params![
                    job_id,
                    request_id,
                    r.kind.number(),
                    r.priority.number(),
                    r.sector_size as i64,
                    r.registered_proof as i64,
                    r.sector_number as i64,
                    r.miner_id as i64,
                    r.partition_index,
                    r.randomness,
                    r.comm_r_old,
                    r.comm_r_new,
                    r.comm_d_new,
                    submitted_ms as i64,
                    payload,
                ],
            )
            .map_err(insert_err)?;
        Ok(self.conn.last_insert_rowid() as u64)
    }

    /// The inline inputs of a job (None: they are in its spool file).
    pub fn payload(&self, job_id: &str) -> Result<Option<Vec<u8>>, EngineError> {
        self.conn
            .query_row(
                "SELECT payload FROM jobs WHERE job_id = ?1",
                [job_id],
                |r| r.get::<_, Option<Vec<u8>>>(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(sql_err)
    }

    /// The job journaled under `request_id`, if any.
    pub fn find_request(&self, request_id: &str) -> Result<Option<String>, EngineError> {
        self.conn
            .query_row(
                "SELECT job_id FROM jobs WHERE request_id = ?1",
                [request_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql_err)
    }

    /// Marks a job running (one more attempt), started at `started_ms`, durably (synced to
    /// disk, like every commit of the journal): the attempt count that stops a poison input
    /// from crash-looping the service survives a power loss too.
    pub fn mark_running(&self, job_id: &str, started_ms: u64) -> Result<(), EngineError> {
        self.conn
            .execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started_ms = ?2
                 WHERE job_id = ?1",
                params![job_id, started_ms as i64],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// Puts a job back to pending and gives back the attempt its start took: a graceful stop
    /// (a shutdown, an upgrade) interrupted it, which says nothing about its input. Only a
    /// start that a crash ended counts towards the limit.
    pub fn mark_interrupted(&self, job_id: &str) -> Result<(), EngineError> {
        self.conn
            .execute(
                "UPDATE jobs SET state = 'pending', attempts = MAX(attempts - 1, 0)
                 WHERE job_id = ?1",
                [job_id],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// Puts a job back to pending (found running on restart: its attempt stays counted).
    pub fn mark_pending(&self, job_id: &str) -> Result<(), EngineError> {
        self.conn
            .execute(
                "UPDATE jobs SET state = 'pending' WHERE job_id = ?1",
                [job_id],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// Records a job's end at `finished_ms`: its state, proof or error, and timings, and drops
    /// its inline inputs, durably (synced to disk): an answered job never runs again, even
    /// after a power loss. One sync per job, small beside a proof.
    pub fn finish(
        &self,
        job_id: &str,
        state: JobState,
        proof: &[u8],
        error: &str,
        t: &JobTimings,
        finished_ms: u64,
    ) -> Result<(), EngineError> {
        self.finish_row(job_id, state, proof, error, t, finished_ms)
    }

    fn finish_row(
        &self,
        job_id: &str,
        state: JobState,
        proof: &[u8],
        error: &str,
        t: &JobTimings,
        finished_ms: u64,
    ) -> Result<(), EngineError> {
        self.conn
            .execute(
                "UPDATE jobs SET state = ?2, proof = ?3, error = ?4, finished_ms = ?5, payload = NULL,
                 queue_wait_ms = ?6, param_load_ms = ?7, synthesis_ms = ?8, proving_ms = ?9,
                 total_ms = ?10, device_ms = ?11 WHERE job_id = ?1",
                params![
                    job_id,
                    state.name(),
                    proof,
                    error,
                    finished_ms as i64,
                    ms(t.queue_wait),
                    ms(t.param_load),
                    ms(t.synthesis),
                    ms(t.proving),
                    ms(t.total),
                    ms(t.device),
                ],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    /// Deletes ended jobs that finished more than `retention` ago; returns how many.
    pub fn purge(&self, retention: Duration) -> Result<usize, EngineError> {
        let cutoff = now_ms().saturating_sub(retention.as_millis() as u64) as i64;
        self.conn
            .execute(
                "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms < ?1
                 AND state IN ('completed', 'failed', 'cancelled')",
                [cutoff],
            )
            .map_err(sql_err)
    }

    /// Every row, in submission order.
    pub fn load(&self) -> Result<Vec<JournalRow>, EngineError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq, job_id, request_id, kind, priority, sector_size, registered_proof,
                 sector_number, miner_id, partition_index, randomness, comm_r_old, comm_r_new,
                 comm_d_new, state, submitted_ms, attempts, proof, error, queue_wait_ms,
                 param_load_ms, synthesis_ms, proving_ms, total_ms, started_ms, finished_ms,
                 device_ms
                 FROM jobs ORDER BY seq",
            )
            .map_err(sql_err)?;
        let rows = stmt
            .query_map([], |r| {
                let d = |i: usize| -> rusqlite::Result<Duration> {
                    Ok(Duration::from_millis(
                        r.get::<_, Option<i64>>(i)?.unwrap_or(0) as u64,
                    ))
                };
                Ok((
                    r.get::<_, i32>(3)?,
                    r.get::<_, i32>(4)?,
                    r.get::<_, String>(14)?,
                    JournalRow {
                        seq: r.get::<_, i64>(0)? as u64,
                        job_id: r.get(1)?,
                        request: JobRequest {
                            request_id: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                            sector_size: r.get::<_, i64>(5)? as u64,
                            registered_proof: r.get::<_, i64>(6)? as u64,
                            sector_number: r.get::<_, i64>(7)? as u64,
                            miner_id: r.get::<_, i64>(8)? as u64,
                            partition_index: r.get(9)?,
                            randomness: r.get(10)?,
                            comm_r_old: r.get(11)?,
                            comm_r_new: r.get(12)?,
                            comm_d_new: r.get(13)?,
                            ..JobRequest::new(ProofKind::Synthetic)
                        },
                        state: JobState::Pending,
                        submitted_ms: r.get::<_, i64>(15)? as u64,
                        attempts: r.get(16)?,
                        proof: r.get::<_, Option<Vec<u8>>>(17)?.unwrap_or_default(),
                        error: r.get::<_, Option<String>>(18)?.unwrap_or_default(),
                        timings: JobTimings {
                            queue_wait: d(19)?,
                            param_load: d(20)?,
                            synthesis: d(21)?,
                            proving: d(22)?,
                            total: d(23)?,
                            device: d(26)?,
                        },
                        started_ms: r.get::<_, Option<i64>>(24)?.unwrap_or(0) as u64,
                        finished_ms: r.get::<_, Option<i64>>(25)?.unwrap_or(0) as u64,
                    },
                ))
            })
            .map_err(sql_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, priority, state, mut row) = row.map_err(sql_err)?;
            let corrupt =
                |what: String| EngineError::JournalCorrupt(format!("job {}: {what}", row.job_id));
            row.request.kind = ProofKind::from_number(kind)
                .map_err(|_| corrupt(format!("unknown kind {kind}")))?;
            row.request.priority = Priority::from_number(priority)
                .map_err(|_| corrupt(format!("unknown priority {priority}")))?;
            row.state = JobState::from_name(&state)
                .ok_or_else(|| corrupt(format!("unknown state {state:?}")))?;
            out.push(row);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_survive_reopening_and_ended_rows_expire() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite");
        {
            let j = Journal::open(&path).unwrap();
            let mut r = JobRequest::synthetic(8, 1, 1);
            r.request_id = "req-1".into();
            r.priority = Priority::High;
            r.randomness = vec![7; 32];
            j.insert("a", &r, Some(b"abc"), 1).unwrap();
            j.insert("b", &JobRequest::synthetic(8, 2, 1), None, 2)
                .unwrap();
            assert_eq!(j.payload("a").unwrap().as_deref(), Some(&b"abc"[..]));
            assert_eq!(j.payload("b").unwrap(), None);
            j.mark_running("a", 5).unwrap();
            let t = JobTimings {
                total: Duration::from_millis(42),
                device: Duration::from_millis(9),
                ..Default::default()
            };
            j.finish("b", JobState::Completed, &[1, 2], "", &t, now_ms())
                .unwrap();
            assert_eq!(j.find_request("req-1").unwrap().as_deref(), Some("a"));
            assert!(
                j.insert("c", &r, None, 3).is_err(),
                "request ids are unique"
            );
        }
        let j = Journal::open(&path).unwrap();
        let rows = j.load().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].job_id, "a");
        assert_eq!(rows[0].state, JobState::Running);
        assert_eq!(rows[0].attempts, 1);
        assert_eq!(rows[0].started_ms, 5);
        assert_eq!(rows[0].request.priority, Priority::High);
        assert_eq!(rows[0].request.randomness, vec![7; 32]);
        assert_eq!(rows[1].state, JobState::Completed);
        assert_eq!(rows[1].proof, vec![1, 2]);
        assert_eq!(rows[1].timings.total, Duration::from_millis(42));
        assert_eq!(rows[1].timings.device, Duration::from_millis(9));
        assert_eq!(j.purge(Duration::from_secs(3600)).unwrap(), 0);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(j.purge(Duration::ZERO).unwrap(), 1);
        assert_eq!(j.load().unwrap().len(), 1);
    }

    /// A journal that cannot grow (SQLITE_FULL, here from a page limit rather than a full
    /// disk) refuses the new row as Exhausted and keeps the rows it had.
    #[test]
    fn a_full_journal_refuses_rows_as_exhausted() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(&dir.path().join("journal.sqlite")).unwrap();
        j.insert("a", &JobRequest::synthetic(8, 1, 1), Some(b"abc"), 1)
            .unwrap();
        let pages: u64 = j
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        j.conn
            .execute_batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let big = vec![7u8; 1 << 20];
        match j.insert("b", &JobRequest::synthetic(8, 2, 1), Some(&big), 2) {
            Err(EngineError::Exhausted(what)) => assert!(what.contains("full"), "{what}"),
            other => panic!("a full journal answered {:?}", other.map(|_| ())),
        }
        let rows = j.load().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].job_id, "a");
    }

    /// A journal of version 1 (no `device_ms`) gains the column: its ended jobs load, with no
    /// device time, and new ones keep theirs.
    #[test]
    fn a_journal_of_version_one_is_brought_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite");
        {
            let j = Journal::open(&path).unwrap();
            j.insert("old", &JobRequest::synthetic(8, 2, 1), None, 1)
                .unwrap();
            let t = JobTimings {
                total: Duration::from_millis(42),
                ..Default::default()
            };
            j.finish("old", JobState::Completed, &[1], "", &t, now_ms())
                .unwrap();
            j.conn
                .execute_batch("ALTER TABLE jobs DROP COLUMN device_ms; PRAGMA user_version = 1")
                .unwrap();
        }
        let j = Journal::open(&path).unwrap();
        let version: u32 = j
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        j.insert("new", &JobRequest::synthetic(8, 2, 1), None, 2)
            .unwrap();
        let t = JobTimings {
            device: Duration::from_millis(3),
            ..Default::default()
        };
        j.finish("new", JobState::Completed, &[2], "", &t, now_ms())
            .unwrap();
        let rows = j.load().unwrap();
        assert_eq!(rows[0].timings.total, Duration::from_millis(42));
        assert_eq!(rows[0].timings.device, Duration::ZERO);
        assert_eq!(rows[1].timings.device, Duration::from_millis(3));
    }

    #[test]
    fn a_journal_of_a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite");
        drop(Journal::open(&path).unwrap());
        let version = |conn: &Connection| -> u32 {
            conn.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap()
        };
        let conn = Connection::open(&path).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION, "a new journal is stamped");
        conn.execute_batch("PRAGMA user_version = 0").unwrap();
        drop(conn);
        drop(Journal::open(&path).expect("an unversioned journal opens"));
        let conn = Connection::open(&path).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION, "and is stamped");
        conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
            .unwrap();
        drop(conn);
        match Journal::open(&path) {
            Err(e @ EngineError::JournalVersion { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(&(SCHEMA_VERSION + 1).to_string()),
                    "{message}"
                );
            }
            other => panic!("a newer journal opened: {:?}", other.map(|_| ())),
        }
    }
}
