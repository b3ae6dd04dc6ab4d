//! One job in this process, with no journal, queue or spool: what `cuzk prove` runs. The job is
//! checked as `SubmitProof` checks it ([`run::validate`]) and runs as a daemon's worker runs it
//! ([`run::run_job`]) on the first backend; the other backends are helpers that take its
//! partitions as they fall idle, while the next partitions are synthesised on threads of their
//! own, as in the daemon. [`prove_partitions`] runs the same
//! partition spreading for a circuit and parameters of the caller's own (`cuzk bench`).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use cuzk_groth16::{Ahead, Parameters};
use cuzk_pipeline::{JobContext, PartitionInput};

use crate::backend::ProofBackend;
use crate::job::{JobControl, JobRequest, ProofKind};
use crate::params::ParamManager;
use crate::run::{self, PceStore, RunResult};
use crate::spool::SpoolData;
use crate::spread::{prove_made, Helpers, JobSite, Offered, PartitionTask, Proven, Spreader};
use crate::EngineError;

/// The job's sequence number in its spans (there is one).
const JOB: u64 = 1;

/// Proves `request` on `backends` (at least one; the first runs the job, the others help with
/// its partitions) with parameters from `params` and, when given, pre-compiled circuits from
/// `pce`, synthesising `synthesis_threads` partitions at once. `control` may cancel the job
/// from another thread, and holds its partitions' stage timings when it returns.
pub fn prove(
    mut request: JobRequest,
    backends: &[Arc<dyn ProofBackend>],
    params: &ParamManager,
    pce: Option<&PceStore>,
    synthesis_threads: usize,
    control: &Arc<JobControl>,
) -> Result<RunResult, EngineError> {
    run::validate(&request)?;
    // The inputs move into the job's data: a C1 output may be 128 MiB.
    let data = SpoolData {
        vanilla_proof: std::mem::take(&mut request.vanilla_proof),
        vanilla_proofs: std::mem::take(&mut request.vanilla_proofs),
    };
    with_helpers(backends, synthesis_threads, control, |site| {
        run::run_job(&request, &data, params, pce, site)
    })
}

/// Proves partitions `0..count` of one circuit against `params` on `backends`, as a job's are:
/// each made by `make` (a full assignment, or a pre-compiled circuit's witness) on a thread of
/// its own, as many at once and as far ahead as `ahead` allows, and proven by the first idle
/// backend. What `cuzk bench` runs, with circuits and parameters of its own. `control` holds
/// the partitions' stage timings and when each was proven.
pub fn prove_partitions(
    backends: &[Arc<dyn ProofBackend>],
    params: Arc<Parameters>,
    count: usize,
    ahead: Ahead,
    make: &(impl Fn(usize) -> Result<PartitionInput, EngineError> + Sync),
    control: &Arc<JobControl>,
) -> Result<Proven, EngineError> {
    with_helpers(backends, ahead.threads(), control, |site| {
        let spread = Spreader::new(site, ProofKind::Synthetic, params, count);
        prove_made(spread, count, ahead, make)
    })
}

/// Runs `job` at a site on the first of `backends`, the others helping with its partitions.
fn with_helpers<T>(
    backends: &[Arc<dyn ProofBackend>],
    synthesis_threads: usize,
    control: &Arc<JobControl>,
    job: impl FnOnce(JobSite<'_>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let Some((own, helpers)) = backends.split_first() else {
        return Err(EngineError::InvalidRequest(
            "no backend to prove on".to_string(),
        ));
    };
    let pool = Pool::default();
    std::thread::scope(|scope| {
        for (i, backend) in helpers.iter().enumerate() {
            let pool = &pool;
            let started = std::thread::Builder::new()
                .name(format!("cuzk-helper-{}", i + 1))
                .spawn_scoped(scope, move || pool.serve(backend.as_ref(), i as u64 + 1));
            if let Err(e) = started {
                // The helpers already started leave, so that the scope ends.
                pool.close();
                return Err(EngineError::Internal(format!(
                    "starting a helper thread: {e}"
                )));
            }
        }
        let site = JobSite {
            job_id: "local",
            backend: own.as_ref(),
            helpers: &pool,
            control,
            ctx: JobContext {
                job: JOB,
                worker: 0,
            },
            synthesis_threads,
        };
        let result = job(site);
        pool.close();
        result
    })
}

/// The helpers' side: partitions offered to idle helpers, taken in order.
#[derive(Debug, Default)]
struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
}

#[derive(Debug, Default)]
struct PoolState {
    offered: Offered,
    /// The job ended: helpers leave once the queue is empty.
    closed: bool,
}

impl Pool {
    fn state(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A helper's loop: prove what is offered until the job ends.
    fn serve(&self, backend: &dyn ProofBackend, worker: u64) {
        loop {
            let task = {
                let mut state = self.state();
                state.offered.idle += 1;
                loop {
                    if let Some(task) = state.offered.take() {
                        state.offered.idle -= 1;
                        break Some(task);
                    }
                    if state.closed {
                        state.offered.idle -= 1;
                        break None;
                    }
                    state = self
                        .work
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            match task {
                Some(task) => task.run(backend, worker),
                None => return,
            }
        }
    }

    fn close(&self) {
        self.state().closed = true;
        self.work.notify_all();
    }
}

impl Helpers for Pool {
    fn offer(&self, task: Box<PartitionTask>) -> Result<(), Box<PartitionTask>> {
        let mut state = self.state();
        let closed = state.closed;
        state.offered.offer(task, closed)?;
        drop(state);
        self.work.notify_one();
        Ok(())
    }

    fn withdraw(&self, job: u64) -> usize {
        self.state().offered.withdraw(job)
    }
}
