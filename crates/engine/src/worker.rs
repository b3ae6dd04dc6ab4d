//! The workers: each takes an offered partition or the queue's next job, runs it on its
//! backend, and records how it ended (in the journal, then in memory, waking the awaiters);
//! ended jobs older than the retention are forgotten on the way.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use cuzk_pipeline::JobContext;

use crate::backend::ProofBackend;
use crate::engine::{Shared, State};
use crate::job::JobControl;
use crate::job::{JobRequest, JobState, JobTimings};
use crate::journal::now_ms;
use crate::run::run_job;
use crate::spool::SpoolData;
use crate::spread::JobSite;
use crate::spread::{panic_text, PartitionTask};
use crate::{error_chain, EngineError};

/// What a worker takes next.
enum Work {
    /// A partition another worker's job offered.
    Partition(Box<PartitionTask>),
    /// The queue's next job.
    Job(String, Arc<JobRequest>, Arc<JobControl>, u64),
}

/// The next work for worker `index`: an offered partition first, then the queue's next job;
/// `None` when the engine stops.
fn next_work(shared: &Shared, index: usize) -> Option<Work> {
    let mut state = shared.state();
    loop {
        if let Some(task) = state.offered.take() {
            let w = &mut state.workers[index];
            w.current = Some((task.job_id.clone(), task.kind));
            w.busy_since = Some(Instant::now());
            return Some(Work::Partition(task));
        }
        if state.stopping {
            return None;
        }
        let window = shared.config.group_window;
        let params = &shared.params;
        if let Some(next) = state.queue.pop(window, |c| params.is_hot(c)) {
            let device = state.workers[index].device.clone();
            let job = state.jobs.get_mut(&next.job_id).expect("queued jobs exist");
            job.state = JobState::Running;
            job.attempts += 1;
            if let Some(span) = job.queue_span.take() {
                span.record("worker", index as u64);
                span.record("device", device.as_str());
            }
            job.control = Arc::default();
            let (request, control, submitted_ms) = (
                Arc::clone(&job.request),
                Arc::clone(&job.control),
                job.submitted_ms,
            );
            let w = &mut state.workers[index];
            w.current = Some((next.job_id.clone(), request.kind));
            w.busy_since = Some(Instant::now());
            crate::status::refresh(shared, &state);
            return Some(Work::Job(next.job_id, request, control, submitted_ms));
        }
        state.offered.idle += 1;
        state = shared
            .work
            .wait_timeout(state, Duration::from_secs(5))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        state.offered.idle -= 1;
    }
}

/// Marks worker `index` idle again, adding the time since it took its work to its busy time.
fn worker_done(state: &mut State, index: usize) {
    let w = &mut state.workers[index];
    w.current = None;
    if let Some(since) = w.busy_since.take() {
        w.busy += since.elapsed();
    }
}

pub(crate) fn worker_loop(shared: &Shared, index: usize, backend: &dyn ProofBackend) {
    loop {
        let (job_id, request, control, submitted_ms) = match next_work(shared, index) {
            None => return,
            Some(Work::Partition(task)) => {
                task.run(backend, index as u64);
                worker_done(&mut shared.state(), index);
                continue;
            }
            Some(Work::Job(job_id, request, control, submitted_ms)) => {
                (job_id, request, control, submitted_ms)
            }
        };
        let started_ms = now_ms();
        if let Some(job) = shared.state().jobs.get_mut(&job_id) {
            job.started_ms = started_ms;
        }
        if let Err(e) = shared.journal().mark_running(&job_id, started_ms) {
            tracing::error!(job = %job_id, error = %e, "journal: marking a job running");
        }
        tracing::info!(job = %job_id, kind = %request.kind, worker = index, "job started");
        let seq = shared.state().jobs.get(&job_id).map(|j| j.seq).unwrap_or(0);
        let ctx = JobContext {
            job: seq,
            worker: index as u64,
        };
        let result = read_inputs(shared, &job_id).and_then(|data| {
            let site = JobSite {
                job_id: &job_id,
                backend,
                helpers: shared,
                control: &control,
                ctx,
                synthesis_threads: shared.config.synthesis_threads,
            };
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                run_job(&request, &data, &shared.params, shared.pce.as_ref(), site)
            }))
            .unwrap_or_else(|panic| Err(EngineError::Panic(panic_text(panic.as_ref()))))
        });
        finish(
            shared,
            index,
            &job_id,
            &request,
            submitted_ms,
            started_ms,
            result,
        );
    }
}

/// A job's inputs: inline in its journal row, or in its spool file.
fn read_inputs(shared: &Shared, job_id: &str) -> Result<SpoolData, EngineError> {
    let inline = shared.journal().payload(job_id)?;
    match inline {
        Some(bytes) => crate::spool::decode(&bytes).map_err(|detail| EngineError::DamagedSpool {
            path: shared.config.data_dir.join("journal.sqlite"),
            detail: format!("job {job_id}'s inline inputs: {detail}"),
        }),
        None => shared.spool.read(job_id),
    }
}

fn finish(
    shared: &Shared,
    index: usize,
    job_id: &str,
    request: &JobRequest,
    submitted_ms: u64,
    started_ms: u64,
    result: Result<crate::run::RunResult, EngineError>,
) {
    let end_ms = now_ms();
    let mut timings = JobTimings {
        queue_wait: Duration::from_millis(started_ms.saturating_sub(submitted_ms)),
        total: Duration::from_millis(end_ms.saturating_sub(submitted_ms)),
        ..Default::default()
    };
    let (state_after, proof, error) = match result {
        Ok(r) => {
            timings.param_load = r.param_load;
            timings.synthesis = r.synthesis;
            timings.proving = r.proving;
            timings.device = r.device;
            (JobState::Completed, r.proof, String::new())
        }
        Err(EngineError::Cancelled) => (
            JobState::Cancelled,
            Vec::new(),
            EngineError::Cancelled.to_string(),
        ),
        Err(EngineError::Interrupted) => (JobState::Pending, Vec::new(), String::new()),
        Err(e) => (JobState::Failed, Vec::new(), error_chain(&e)),
    };
    let journaled = if state_after == JobState::Pending {
        shared.journal().mark_interrupted(job_id)
    } else {
        shared
            .journal()
            .finish(job_id, state_after, &proof, &error, &timings, end_ms)
    };
    if let Err(e) = journaled {
        tracing::error!(job = %job_id, error = %e, "journal: recording a job's end");
    }
    if state_after.is_terminal() {
        shared.spool.remove(job_id);
    }
    match state_after {
        JobState::Completed => {
            tracing::info!(job = %job_id, kind = %request.kind, total_ms = timings.total.as_millis() as u64, "job completed")
        }
        JobState::Failed => {
            tracing::warn!(job = %job_id, kind = %request.kind, error = %error, "job failed")
        }
        _ => tracing::info!(job = %job_id, state = state_after.name(), "job stopped"),
    }
    let mut state = shared.state();
    if let Some(job) = state.jobs.get_mut(job_id) {
        if state_after == JobState::Pending {
            // Interrupted by a shutdown: the start does not count (as in the journal).
            job.attempts = job.attempts.saturating_sub(1);
        }
        job.state = state_after;
        job.proof = proof;
        job.error = error;
        job.timings = timings;
        if state_after.is_terminal() {
            job.finished_ms = end_ms;
            job.signal.send_replace(true);
        }
    }
    if state_after.is_terminal() {
        let ok = match state_after {
            JobState::Completed => Some(true),
            JobState::Failed => Some(false),
            _ => None,
        };
        state.metrics.record(request.kind, ok, &timings);
    }
    worker_done(&mut state, index);
    crate::status::refresh(shared, &state);
    state.jobs_since_trace_clear += 1;
    if state.jobs_since_trace_clear >= 256 {
        // The timeline keeps the recent proofs only: the status page's waterfall.
        state.jobs_since_trace_clear = 0;
        if let Some(t) = &shared.telemetry {
            t.clear();
        }
    }
    purge(shared, &mut state);
    drop(state);
    shared.ended.notify_all();
}

/// Forgets ended jobs older than the retention (memory and journal), at most once a minute.
fn purge(shared: &Shared, state: &mut State) {
    if state
        .last_purge
        .is_some_and(|t| t.elapsed() < Duration::from_secs(60))
    {
        return;
    }
    state.last_purge = Some(Instant::now());
    let retention = shared.config.retention;
    // By the wall clock of the journal's `finished_ms`, so a restart does not restart the
    // retention of jobs that ended before it.
    let cutoff = now_ms().saturating_sub(retention.as_millis() as u64);
    let old: Vec<String> = state
        .jobs
        .iter()
        .filter(|(_, j)| j.state.is_terminal() && j.finished_ms < cutoff)
        .map(|(id, _)| id.clone())
        .collect();
    for id in old {
        if let Some(job) = state.jobs.remove(&id) {
            state.by_request.remove(&job.request.request_id);
        }
    }
    if let Err(e) = shared.journal().purge(retention) {
        tracing::error!(error = %e, "journal: purging old jobs");
    }
}
