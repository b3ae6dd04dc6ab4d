//! What a job is: its kind, priority and inputs as the wire carries them, its state, and what
//! it reports when it ends.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use cuzk_filecoin::post::PostKind;
use cuzk_filecoin::{CircuitKind, FilecoinError, PostJobFile, SnapJobFile};
use cuzk_pipeline::PartitionTiming;

use crate::EngineError;

/// The proof a job asks for. Numbers are the wire's `ProofKind` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    /// PoRep C2 from a C1 output.
    PorepSealCommit,
    /// SnapDeals (empty sector update) from partition proofs.
    SnapDealsUpdate,
    /// One WindowPoSt partition.
    WindowPost,
    /// WinningPoSt.
    WinningPost,
    /// cuzk's built-in synthetic circuit (tests and benchmarks).
    Synthetic,
}

impl ProofKind {
    /// Every kind, in wire order.
    pub const ALL: [ProofKind; 5] = [
        ProofKind::PorepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::Synthetic,
    ];

    /// The wire's number.
    pub const fn number(self) -> i32 {
        match self {
            ProofKind::PorepSealCommit => 1,
            ProofKind::SnapDealsUpdate => 2,
            ProofKind::WindowPost => 3,
            ProofKind::WinningPost => 4,
            ProofKind::Synthetic => 100,
        }
    }

    /// The kind of a wire number; 0 (unspecified) and unknown numbers are errors.
    pub fn from_number(n: i32) -> Result<Self, EngineError> {
        Self::ALL
            .into_iter()
            .find(|k| k.number() == n)
            .ok_or_else(|| EngineError::InvalidRequest(format!("unknown proof kind {n}")))
    }

    /// The Filecoin circuit family a job of this kind proves (`None`: the synthetic kind).
    pub const fn circuit_kind(self) -> Option<CircuitKind> {
        match self {
            ProofKind::PorepSealCommit => Some(CircuitKind::Porep),
            ProofKind::SnapDealsUpdate => Some(CircuitKind::Snap),
            ProofKind::WindowPost => Some(CircuitKind::Window),
            ProofKind::WinningPost => Some(CircuitKind::Winning),
            ProofKind::Synthetic => None,
        }
    }

    /// A short name for metrics and status (`porep`, `snap`, `wpost`, `winning`, `synthetic`).
    pub const fn name(self) -> &'static str {
        match self {
            ProofKind::PorepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPost => "wpost",
            ProofKind::WinningPost => "winning",
            ProofKind::Synthetic => "synthetic",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A job's priority: CRITICAL > HIGH > NORMAL > LOW; jobs of one priority start in the order
/// they were submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// The default.
    Normal = 2,
    /// Ahead of normal work.
    High = 3,
    /// WinningPoSt and other deadline work: ahead of everything.
    Critical = 4,
}

impl Priority {
    /// Highest first.
    pub const ALL: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Normal,
        Priority::Low,
    ];

    /// The priority of a wire number; 0 (unspecified) means NORMAL.
    pub fn from_number(n: i32) -> Result<Self, EngineError> {
        match n {
            0 | 2 => Ok(Priority::Normal),
            1 => Ok(Priority::Low),
            3 => Ok(Priority::High),
            4 => Ok(Priority::Critical),
            _ => Err(EngineError::InvalidRequest(format!("unknown priority {n}"))),
        }
    }

    /// The wire's number.
    pub const fn number(self) -> i32 {
        self as i32
    }

    /// Parses `critical`, `high`, `normal`, `low` (any case).
    pub fn parse(name: &str) -> Option<Self> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// The name in metrics (`critical`, `high`, `normal`, `low`).
    pub const fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// One proof request, field for field as `SubmitProofRequest` carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRequest {
    /// Idempotency key: submitting the same id again returns the same job. Empty: none.
    pub request_id: String,
    /// The proof asked for.
    pub kind: ProofKind,
    /// The sector size in bytes (0: from the input where the input names it).
    pub sector_size: u64,
    /// filecoin-ffi's numeric registered proof.
    pub registered_proof: u64,
    /// Where the job goes in the queue.
    pub priority: Priority,
    /// PoRep: the C1 output. Synthetic: `{"log_size": N, "seed": S}`.
    pub vanilla_proof: Vec<u8>,
    /// PoSt and SnapDeals: one vanilla proof per sector or partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The sector (PoRep).
    pub sector_number: u64,
    /// The miner's actor id.
    pub miner_id: u64,
    /// The PoSt challenge seed (32 bytes).
    pub randomness: Vec<u8>,
    /// The WindowPoSt partition.
    pub partition_index: u32,
    /// SnapDeals commitments, 32 raw bytes each.
    pub comm_r_old: Vec<u8>,
    /// See `comm_r_old`.
    pub comm_r_new: Vec<u8>,
    /// See `comm_r_old`.
    pub comm_d_new: Vec<u8>,
}

impl JobRequest {
    /// A request of `kind` with every other field empty (priority NORMAL).
    pub fn new(kind: ProofKind) -> Self {
        Self {
            request_id: String::new(),
            kind,
            sector_size: 0,
            registered_proof: 0,
            priority: Priority::Normal,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 0,
            miner_id: 0,
            randomness: Vec::new(),
            partition_index: 0,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        }
    }

    /// A synthetic job: the built-in circuit of 2^`log_size` constraints in `partitions`
    /// partitions, partition `k`'s values from `seed + k`.
    pub fn synthetic(log_size: u32, seed: u64, partitions: u32) -> Self {
        Self {
            vanilla_proof: format!(
                "{{\"log_size\":{log_size},\"seed\":{seed},\"partitions\":{partitions}}}"
            )
            .into_bytes(),
            ..Self::new(ProofKind::Synthetic)
        }
    }

    /// A PoRep C2 job for a C1 output (any of its forms, unchecked until submitted);
    /// `registered_proof` 0 takes the one the C1 output names.
    pub fn porep(c1: Vec<u8>, miner_id: u64, sector_number: u64, registered_proof: u64) -> Self {
        Self {
            registered_proof,
            vanilla_proof: c1,
            miner_id,
            sector_number,
            ..Self::new(ProofKind::PorepSealCommit)
        }
    }

    /// A WinningPoSt or WindowPoSt job from its job file (gen_vanilla's `winning-*.json`,
    /// `window-*.json`), under today's registered proof of its sector size.
    pub fn post(file: PostJobFile, kind: PostKind) -> Result<Self, FilecoinError> {
        let (circuit, proof) = match kind {
            PostKind::Winning => (CircuitKind::Winning, ProofKind::WinningPost),
            PostKind::Window => (CircuitKind::Window, ProofKind::WindowPost),
        };
        Ok(Self {
            sector_size: file.sector_size,
            registered_proof: circuit.registered_proof(file.sector_size)?,
            miner_id: file.miner_id,
            randomness: file.randomness.to_vec(),
            partition_index: u32::try_from(file.partition_index).map_err(|_| {
                FilecoinError::InvalidInput(format!(
                    "partition_index {} is too large",
                    file.partition_index
                ))
            })?,
            vanilla_proofs: file.vanilla_proofs,
            ..Self::new(proof)
        })
    }

    /// A SnapDeals job from its job file (gen_vanilla's `snap-*.json`).
    pub fn snap(file: SnapJobFile) -> Result<Self, FilecoinError> {
        Ok(Self {
            sector_size: file.sector_size,
            registered_proof: CircuitKind::Snap.registered_proof(file.sector_size)?,
            comm_r_old: file.comm_r_old.to_vec(),
            comm_r_new: file.comm_r_new.to_vec(),
            comm_d_new: file.comm_d_new.to_vec(),
            vanilla_proofs: file.vanilla_proofs,
            ..Self::new(ProofKind::SnapDealsUpdate)
        })
    }

    /// Bytes of the inputs, for the message-size accounting and the spool.
    pub fn payload_bytes(&self) -> usize {
        self.vanilla_proof.len() + self.vanilla_proofs.iter().map(Vec::len).sum::<usize>()
    }
}

/// Flags a running job's owner sets (the job stops at its next partition boundary), and what
/// its partitions' provers report back, whichever worker proved them.
#[derive(Debug, Default)]
pub struct JobControl {
    /// `CancelProof`: the job ends CANCELLED.
    pub cancel: AtomicBool,
    /// Shutdown after the grace period: the job goes back to pending in the journal.
    pub interrupt: AtomicBool,
    /// The job's partitions proven so far, in the order they came back.
    proven: Mutex<Vec<ProvenPartition>>,
}

/// A partition of a job, proven: which, its stage timings, and when its proof came back.
#[derive(Clone, Debug)]
pub struct ProvenPartition {
    /// Its index in the job.
    pub partition: usize,
    /// Its stages' times.
    pub timing: PartitionTiming,
    /// When its proof came back.
    pub finished: std::time::Instant,
}

impl JobControl {
    fn proven_now(&self) -> std::sync::MutexGuard<'_, Vec<ProvenPartition>> {
        self.proven.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `partition` was proven, with its stage timings.
    pub(crate) fn record(&self, partition: usize, timing: PartitionTiming) {
        self.proven_now().push(ProvenPartition {
            partition,
            timing,
            finished: std::time::Instant::now(),
        });
    }

    /// The job's partitions proven so far, in the order they came back.
    pub fn proven(&self) -> Vec<ProvenPartition> {
        self.proven_now().clone()
    }

    /// The stage timings of the job's partitions proven so far.
    pub fn timings(&self) -> Vec<PartitionTiming> {
        self.proven_now().iter().map(|p| p.timing.clone()).collect()
    }

    /// The device time of the job's partitions proven so far
    /// ([`PartitionTiming::device`]: CUDA-event time, zero on the CPU).
    pub fn device_time(&self) -> Duration {
        self.proven_now().iter().map(|p| p.timing.device).sum()
    }

    pub(crate) fn check(&self) -> Result<(), EngineError> {
        if self.cancel.load(Ordering::SeqCst) {
            Err(EngineError::Cancelled)
        } else if self.interrupt.load(Ordering::SeqCst) {
            Err(EngineError::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Queued.
    Pending,
    /// On a worker.
    Running,
    /// Proved; the proof is kept for the retention period.
    Completed,
    /// Ended with an error.
    Failed,
    /// Cancelled before or while running.
    Cancelled,
}

impl JobState {
    /// The name the journal stores.
    pub const fn name(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state of a journal name.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            JobState::Pending,
            JobState::Running,
            JobState::Completed,
            JobState::Failed,
            JobState::Cancelled,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Whether the job has ended.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Cancelled
        )
    }
}

/// How long each part of a job took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTimings {
    /// From submission (or restart) to a worker taking it.
    pub queue_wait: Duration,
    /// Getting the parameters: zero when they were already resident.
    pub param_load: Duration,
    /// Building and synthesising the circuits, all partitions.
    pub synthesis: Duration,
    /// The prover's calls (the backend's compute), all partitions.
    pub proving: Duration,
    /// From submission to the end.
    pub total: Duration,
    /// The devices' own time for the job's partitions, measured with CUDA events (zero for a
    /// job proven on the CPU): `AwaitProof`'s `gpu_compute_ms`.
    pub device: Duration,
}

/// What `await` reports about a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    /// The job.
    pub job_id: String,
    /// Its state; not terminal when the wait timed out.
    pub state: JobState,
    /// The proof bytes, when completed.
    pub proof: Vec<u8>,
    /// Why it failed or was cancelled.
    pub error: String,
    /// Its timings, when it ended.
    pub timings: JobTimings,
    /// When a worker last started it (ms since the Unix epoch; 0: never).
    pub started_ms: u64,
    /// When it ended (ms since the Unix epoch; 0: not yet).
    pub finished_ms: u64,
}

/// What `submit` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job's id.
    pub job_id: String,
    /// How many jobs start before it (0: next); 0 as well when it is already running or done.
    pub queue_position: u32,
    /// Whether the request id named an existing job (nothing new was queued).
    pub existing: bool,
    /// The device of the worker running it, when it runs already (an existing job).
    pub device: Option<String>,
}
