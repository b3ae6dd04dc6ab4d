//! One job's partitions over several workers. The job's partitions are synthesised on threads of
//! their own, as far ahead as the memory budget allows ([`cuzk_groth16::Ahead`]); the job's own
//! worker offers each, as it is done, to the idle workers (of any device, through [`Helpers`]);
//! a partition that no idle worker can take it proves itself, so with no idle worker a job runs
//! as it would alone. Proofs are kept in partition order. A cancel, a shutdown or a failure stops
//! the job at its next partition boundary: partitions no worker has started are withdrawn, and
//! those being proven elsewhere are waited for (they hold the job's parameters, which must stay
//! leased while any device uses them).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_groth16::{Ahead, Parameters, Proof};
use cuzk_pipeline::{JobContext, PartitionInput};

use crate::backend::{engine_error, ProofBackend};
use crate::job::{JobControl, ProofKind};
use crate::EngineError;

/// A partition's proof, or why there is none, by partition index.
type Answer = (usize, Result<Proof, EngineError>);

/// One partition of a running job, offered to another worker.
#[derive(Debug)]
pub struct PartitionTask {
    /// The job's id.
    pub job_id: String,
    /// Its kind.
    pub kind: ProofKind,
    /// The job (its sequence number) and the worker that runs it.
    pub ctx: JobContext,
    partition: usize,
    params: Arc<Parameters>,
    input: PartitionInput,
    control: Arc<JobControl>,
    answer: Sender<Answer>,
}

impl PartitionTask {
    /// Proves the partition on `backend` as worker `worker` (unless its job was stopped) and
    /// answers the job's worker. A panic of the backend fails the partition, not the worker.
    pub fn run(self, backend: &dyn ProofBackend, worker: u64) {
        let ctx = JobContext {
            job: self.ctx.job,
            worker,
        };
        let result = self.control.check().and_then(|()| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                backend
                    .prove_partition(&self.params, self.input, ctx, self.partition)
                    .map(|(proof, timing)| {
                        self.control.record(self.partition, timing);
                        proof
                    })
                    .map_err(engine_error)
            }))
            .unwrap_or_else(|panic| Err(EngineError::Panic(panic_text(panic.as_ref()))))
        });
        // The job's worker waits for every answer; it is gone only if it panicked itself.
        let _ = self.answer.send((self.partition, result));
    }
}

/// A panic's message.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Where a job runs: its worker's backend, the other workers that may help with its
/// partitions, its control flags and its telemetry context.
#[derive(Clone, Copy, Debug)]
pub struct JobSite<'a> {
    /// The job's id.
    pub job_id: &'a str,
    /// The worker's backend.
    pub backend: &'a dyn ProofBackend,
    /// Idle workers that take partitions ([`crate::spread::Alone`]: none).
    pub helpers: &'a dyn Helpers,
    /// Cancel and shutdown flags.
    pub control: &'a Arc<JobControl>,
    /// The job and worker, for spans.
    pub ctx: JobContext,
    /// Partitions synthesised at once, each on a thread of its own (at least 1).
    pub synthesis_threads: usize,
}

/// Where a job's worker offers partitions to the others.
pub trait Helpers: std::fmt::Debug {
    /// Hands `task` to an idle worker, or gives it back when none is idle.
    fn offer(&self, task: Box<PartitionTask>) -> Result<(), Box<PartitionTask>>;

    /// Takes back the tasks of job `job` (its sequence number) that no worker has started;
    /// returns how many.
    fn withdraw(&self, job: u64) -> usize;
}

/// Partitions offered to idle workers, and how many wait for one: the state behind a
/// [`Helpers`] (the engine's workers, or `local`'s helpers), kept under its owner's lock.
#[derive(Debug, Default)]
pub(crate) struct Offered {
    tasks: VecDeque<Box<PartitionTask>>,
    /// Workers waiting for work now.
    pub(crate) idle: usize,
}

impl Offered {
    /// Queues `task` when a waiting worker is left to take it (each offered partition is matched
    /// with one), unless `closed`; else gives it back.
    pub(crate) fn offer(
        &mut self,
        task: Box<PartitionTask>,
        closed: bool,
    ) -> Result<(), Box<PartitionTask>> {
        if closed || self.idle <= self.tasks.len() {
            return Err(task);
        }
        self.tasks.push_back(task);
        Ok(())
    }

    /// The oldest offered partition.
    pub(crate) fn take(&mut self) -> Option<Box<PartitionTask>> {
        self.tasks.pop_front()
    }

    /// Removes job `job`'s partitions that no worker took; returns how many.
    pub(crate) fn withdraw(&mut self, job: u64) -> usize {
        let before = self.tasks.len();
        self.tasks.retain(|t| t.ctx.job != job);
        before - self.tasks.len()
    }
}

/// No other workers: every partition is proven by the job's own.
#[derive(Debug)]
pub struct Alone;

impl Helpers for Alone {
    fn offer(&self, task: Box<PartitionTask>) -> Result<(), Box<PartitionTask>> {
        Err(task)
    }

    fn withdraw(&self, _job: u64) -> usize {
        0
    }
}

/// The job's side: offers partitions, proves the ones nobody took, collects the proofs.
pub(crate) struct Spreader<'a> {
    site: JobSite<'a>,
    kind: ProofKind,
    params: Arc<Parameters>,
    answer: Sender<Answer>,
    answers: Receiver<Answer>,
    /// Proofs that came back and were not taken yet, by partition.
    proven: Vec<(usize, Proof)>,
    /// Offered and not yet answered.
    outstanding: usize,
    /// The failure of the lowest partition that failed.
    error: Option<(usize, EngineError)>,
}

impl<'a> Spreader<'a> {
    /// The job at `site`, of `kind`, of `partitions` partitions (a hint: more may come)
    /// against `params`.
    pub(crate) fn new(
        site: JobSite<'a>,
        kind: ProofKind,
        params: Arc<Parameters>,
        partitions: usize,
    ) -> Self {
        let (answer, answers) = channel();
        Self {
            site,
            kind,
            params,
            answer,
            answers,
            proven: Vec::with_capacity(partitions),
            outstanding: 0,
            error: None,
        }
    }

    /// The parameters the job's partitions prove with.
    pub(crate) fn params(&self) -> &Arc<Parameters> {
        &self.params
    }

    /// Whether the job must stop: a partition failed, or it was cancelled or interrupted.
    pub(crate) fn stopped(&mut self) -> bool {
        if self.error.is_none() {
            if let Err(e) = self.site.control.check() {
                self.error = Some((usize::MAX, e));
            }
        }
        self.error.is_some()
    }

    /// Records that preparing `partition` failed.
    pub(crate) fn fail(&mut self, partition: usize, e: EngineError) {
        self.record(partition, Err(e));
    }

    /// Proves `partition` from `input`: on an idle worker, or here when none is.
    pub(crate) fn prove(&mut self, partition: usize, input: PartitionInput) {
        let task = Box::new(PartitionTask {
            job_id: self.site.job_id.to_string(),
            kind: self.kind,
            ctx: self.site.ctx,
            partition,
            params: Arc::clone(&self.params),
            input,
            control: Arc::clone(self.site.control),
            answer: self.answer.clone(),
        });
        self.outstanding += 1;
        if let Err(task) = self.site.helpers.offer(task) {
            task.run(self.site.backend, self.site.ctx.worker);
        }
        self.poll();
    }

    /// Records the answers that have come in.
    fn poll(&mut self) {
        while let Ok((k, result)) = self.answers.try_recv() {
            self.outstanding -= 1;
            self.record(k, result);
        }
    }

    /// The proofs that came back since the last call, by partition, in any order.
    pub(crate) fn take_proven(&mut self) -> Vec<(usize, Proof)> {
        self.poll();
        std::mem::take(&mut self.proven)
    }

    fn record(&mut self, partition: usize, result: Result<Proof, EngineError>) {
        match result {
            Ok(proof) => self.proven.push((partition, proof)),
            Err(e) => {
                if self.error.as_ref().is_none_or(|(k, _)| partition < *k) {
                    self.error = Some((partition, e));
                }
            }
        }
    }

    /// Withdraws the partitions no worker has started (with `withdraw`), then waits for the
    /// rest to be answered.
    fn wait(&mut self, withdraw: bool) {
        if withdraw {
            self.outstanding -= self.site.helpers.withdraw(self.site.ctx.job);
        }
        // Only the tasks' senders remain, so a task dropped unanswered ends the wait.
        let (closed, _) = channel();
        drop(std::mem::replace(&mut self.answer, closed));
        while self.outstanding > 0 {
            match self.answers.recv() {
                Ok((k, result)) => {
                    self.outstanding -= 1;
                    self.record(k, result);
                }
                // Every sender is gone: a task was dropped unanswered.
                Err(_) => {
                    self.error.get_or_insert((
                        usize::MAX,
                        EngineError::Internal("a partition was lost by its worker".into()),
                    ));
                    break;
                }
            }
        }
    }

    /// Waits for every partition offered and returns the proofs not taken yet in partition
    /// order, or the failure of the lowest partition that failed.
    pub(crate) fn finish(mut self) -> Result<Vec<(usize, Proof)>, EngineError> {
        self.wait(self.error.is_some());
        if let Some((_, e)) = self.error {
            return Err(e);
        }
        self.proven.sort_by_key(|(k, _)| *k);
        Ok(self.proven)
    }

    /// The job failed elsewhere: withdraws the partitions no worker has started and waits for
    /// those being proven (they use the job's parameters); their proofs are dropped.
    pub(crate) fn abandon(mut self) {
        self.wait(true);
    }
}

/// A job's partitions, proven.
#[derive(Debug)]
pub struct Proven {
    /// The proofs, in partition order.
    pub proofs: Vec<Proof>,
    /// The partitions' synthesis, all of them (several run at once).
    pub synthesis: Duration,
    /// From the first partition's start on a worker to the last proof: the proving, which
    /// overlaps the later partitions' synthesis.
    pub proving: Duration,
}

/// Proves partitions `0..count` with `spread`: each made by `make` on a thread of its own, as
/// many at once and as far ahead as `ahead` allows, and proven as it is done by an idle worker
/// or the job's own. Returns the proofs, or the failure of the lowest partition that failed (its
/// synthesis or its proof).
pub(crate) fn prove_made(
    mut spread: Spreader<'_>,
    count: usize,
    ahead: Ahead,
    make: &(impl Fn(usize) -> Result<PartitionInput, EngineError> + Sync),
) -> Result<Proven, EngineError> {
    let timed = |k: usize| {
        let start = Instant::now();
        let input = make(k);
        (input, start.elapsed())
    };
    let mut synthesis = Duration::ZERO;
    let mut first = None;
    std::thread::scope(|scope| {
        for (k, (input, took)) in ahead.start(scope, count, &timed) {
            synthesis += took;
            if spread.stopped() {
                break;
            }
            match input {
                Ok(input) => {
                    first.get_or_insert_with(Instant::now);
                    spread.prove(k, input)
                }
                Err(e) => spread.fail(k, e),
            }
        }
    });
    let proofs = spread.finish()?;
    if proofs.len() != count {
        return Err(EngineError::Internal(format!(
            "{} of {count} partitions were proven",
            proofs.len()
        )));
    }
    Ok(Proven {
        proofs: proofs.into_iter().map(|(_, p)| p).collect(),
        synthesis,
        proving: first.map_or(Duration::ZERO, |t| t.elapsed()),
    })
}
