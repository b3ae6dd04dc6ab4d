//! The `cuzk.v1.ProvingEngine` service over the engine. Engine calls that block (journal
//! syncs) run on tokio's blocking pool; waits for a job's end (`AwaitProof`, `Prove`) await
//! the job's watch ([`Engine::watch_job`]) and hold no thread, so any number of waiters leaves
//! the pool to submissions.

// tonic's `Status` is the error type of every gRPC method; boxing it here would only be undone.
#![allow(clippy::result_large_err)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cuzk_engine::{Engine, EngineError, JobOutcome, JobRequest, JobState, Priority, ProofKind};
use tonic::{Request, Response, Status};

use crate::proto::{self, await_proof_response, proving_engine_server::ProvingEngine, srs_status};

/// The service; answers UNAVAILABLE until the engine is set (started and ready).
#[derive(Clone, Debug, Default)]
pub struct Service {
    engine: Arc<OnceLock<Arc<Engine>>>,
}

impl Service {
    /// A service with no engine yet.
    pub fn new(engine: Arc<OnceLock<Arc<Engine>>>) -> Self {
        Self { engine }
    }

    fn engine(&self) -> Result<Arc<Engine>, Status> {
        self.engine
            .get()
            .cloned()
            .ok_or_else(|| Status::unavailable("the engine is starting"))
    }

    /// Runs `f` on the blocking pool with the engine.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Engine) -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, Status> {
        let engine = self.engine()?;
        tokio::task::spawn_blocking(move || f(&engine))
            .await
            .map_err(|e| Status::internal(format!("engine task: {e}")))?
            .map_err(status_of)
    }
}

/// The gRPC status of an engine error: the caller's mistakes INVALID_ARGUMENT or NOT_FOUND, a
/// device or the engine going away UNAVAILABLE, a full queue, spool or disk RESOURCE_EXHAUSTED,
/// what the configuration does not allow FAILED_PRECONDITION, damaged stored inputs DATA_LOSS,
/// the journal's and the engine's own failures INTERNAL.
pub fn status_of(e: EngineError) -> Status {
    Status::new(code_of(&e), cuzk_engine::error_chain(&e))
}

/// The gRPC code of an engine error ([`status_of`]).
pub fn code_of(e: &EngineError) -> tonic::Code {
    use tonic::Code;
    match e {
        EngineError::UnknownJob(_) => Code::NotFound,
        EngineError::ShuttingDown | EngineError::Device { .. } => Code::Unavailable,
        EngineError::InUse(_)
        | EngineError::MissingParameters { .. }
        | EngineError::SyntheticDisabled => Code::FailedPrecondition,
        EngineError::Exhausted(_) => Code::ResourceExhausted,
        EngineError::DamagedSpool { .. } => Code::DataLoss,
        EngineError::Journal(_)
        | EngineError::JournalCorrupt(_)
        | EngineError::JournalVersion { .. } => Code::Internal,
        e if e.is_bad_input() => Code::InvalidArgument,
        _ => Code::Internal,
    }
}

/// Waits, holding no thread, until `job_id` ends, the engine stops or `wait` passes (None: no
/// limit), and reports the job as it then stands.
async fn wait_for_job(
    engine: &Engine,
    job_id: &str,
    wait: Option<Duration>,
) -> Result<JobOutcome, Status> {
    let mut ended = engine.watch_job(job_id).map_err(status_of)?;
    let until_ended = async {
        // An error: the job was forgotten meanwhile (retention), which `outcome` reports.
        let _ = ended.wait_for(|ended| *ended).await;
    };
    match wait {
        Some(wait) => {
            let _ = tokio::time::timeout(wait, until_ended).await;
        }
        None => until_ended.await,
    }
    engine.outcome(job_id).map_err(status_of)
}

/// The engine's request from the wire's.
pub fn job_request(r: proto::SubmitProofRequest) -> Result<JobRequest, EngineError> {
    Ok(JobRequest {
        kind: ProofKind::from_number(r.proof_kind)?,
        priority: Priority::from_number(r.priority)?,
        request_id: r.request_id,
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        vanilla_proof: r.vanilla_proof,
        vanilla_proofs: r.vanilla_proofs,
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness,
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
    })
}

/// The wire's request for the engine's: [`job_request`]'s inverse, for clients (`cuzk client`,
/// tests, benchmarks) that build their requests with [`JobRequest`]'s constructors.
pub fn wire_request(r: JobRequest) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest {
        request_id: r.request_id,
        proof_kind: r.kind.number(),
        priority: r.priority.number(),
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        vanilla_proof: r.vanilla_proof,
        vanilla_proofs: r.vanilla_proofs,
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness,
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
    }
}

fn await_response(o: JobOutcome) -> proto::AwaitProofResponse {
    use await_proof_response::Status as S;
    let status = match o.state {
        JobState::Completed => S::Completed,
        JobState::Failed => S::Failed,
        JobState::Cancelled => S::Cancelled,
        JobState::Pending | JobState::Running => S::Timeout,
    };
    let ms = |d: Duration| d.as_millis() as u64;
    proto::AwaitProofResponse {
        job_id: o.job_id,
        status: status as i32,
        proof: o.proof,
        error_message: o.error,
        queue_wait_ms: ms(o.timings.queue_wait),
        srs_load_ms: ms(o.timings.param_load),
        synthesis_ms: ms(o.timings.synthesis),
        gpu_compute_ms: ms(o.timings.device),
        total_ms: ms(o.timings.total),
        started_unix_ms: o.started_ms,
        finished_unix_ms: o.finished_ms,
        proving_ms: ms(o.timings.proving),
    }
}

fn timeout(ms: u64) -> Option<Duration> {
    (ms != 0).then(|| Duration::from_millis(ms))
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<proto::SubmitProofRequest>,
    ) -> Result<Response<proto::SubmitProofResponse>, Status> {
        let r = job_request(request.into_inner()).map_err(status_of)?;
        let s = self.blocking(move |e| e.submit(r)).await?;
        Ok(Response::new(proto::SubmitProofResponse {
            job_id: s.job_id,
            queue_position: s.queue_position,
            // The device running the job, when an earlier submission of the same request id
            // runs already; a new job has none until a worker takes it.
            assigned_gpu: s.device.unwrap_or_default(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<proto::AwaitProofRequest>,
    ) -> Result<Response<proto::AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let engine = self.engine()?;
        let o = wait_for_job(&engine, &r.job_id, timeout(r.timeout_ms)).await?;
        Ok(Response::new(await_response(o)))
    }

    async fn prove(
        &self,
        request: Request<proto::ProveRequest>,
    ) -> Result<Response<proto::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let r = job_request(submit).map_err(status_of)?;
        let s = self.blocking(move |e| e.submit(r)).await?;
        let engine = self.engine()?;
        let o = wait_for_job(&engine, &s.job_id, None).await?;
        Ok(Response::new(proto::ProveResponse {
            result: Some(await_response(o)),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<proto::CancelProofRequest>,
    ) -> Result<Response<proto::CancelProofResponse>, Status> {
        let id = request.into_inner().job_id;
        let was_running = self.blocking(move |e| e.cancel(&id)).await?;
        Ok(Response::new(proto::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<proto::GetStatusRequest>,
    ) -> Result<Response<proto::GetStatusResponse>, Status> {
        let engine = self.engine()?;
        let s = engine.status();
        let budget = engine.params().config().budget_bytes;
        Ok(Response::new(proto::GetStatusResponse {
            gpus: crate::workers::gpu_statuses(&s.workers),
            loaded_srs: s
                .params
                .iter()
                .map(|p| proto::SrsStatus {
                    circuit_id: p.circuit_id.clone(),
                    tier: match p.tier {
                        cuzk_engine::Tier::Hot => srs_status::Tier::Hot,
                        cuzk_engine::Tier::Warm => srs_status::Tier::Warm,
                        cuzk_engine::Tier::Cold => srs_status::Tier::Cold,
                    } as i32,
                    size_bytes: p.size_bytes,
                    ref_count: p.ref_count,
                })
                .collect(),
            queues: s
                .queues
                .iter()
                .map(|q| proto::QueueStatus {
                    proof_kind: q.kind.clone(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            total_proofs_completed: s.completed,
            total_proofs_failed: s.failed,
            uptime_seconds: s.uptime_seconds,
            // Page-locked memory as cuzk-gpu counts it (0 on the CPU: the hot tier is ordinary
            // memory), against the host memory budget it shares with the hot tier.
            pinned_memory_bytes: s.pinned_host_bytes,
            pinned_memory_limit_bytes: budget,
        }))
    }

    async fn get_metrics(
        &self,
        _request: Request<proto::GetMetricsRequest>,
    ) -> Result<Response<proto::GetMetricsResponse>, Status> {
        let engine = self.engine()?;
        Ok(Response::new(proto::GetMetricsResponse {
            prometheus_text: crate::metrics::text(&engine),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<proto::PreloadSrsRequest>,
    ) -> Result<Response<proto::PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let (already_loaded, load) = self.blocking(move |e| e.preload(&id)).await?;
        Ok(Response::new(proto::PreloadSrsResponse {
            already_loaded,
            load_time_ms: load.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<proto::EvictSrsRequest>,
    ) -> Result<Response<proto::EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let (was_loaded, freed_bytes) = self.blocking(move |e| e.params().evict(&id)).await?;
        Ok(Response::new(proto::EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn error_codes_say_what_happened() {
        let io = || std::io::Error::other("x");
        let cases = [
            (EngineError::UnknownJob("j".into()), Code::NotFound),
            (
                EngineError::InvalidRequest("x".into()),
                Code::InvalidArgument,
            ),
            (EngineError::ShuttingDown, Code::Unavailable),
            (
                EngineError::Device {
                    device: "gpu0".into(),
                    source: Box::new(io()),
                },
                Code::Unavailable,
            ),
            (
                EngineError::DamagedSpool {
                    path: "spool/j.job".into(),
                    detail: "checksum".into(),
                },
                Code::DataLoss,
            ),
            (EngineError::JournalCorrupt("x".into()), Code::Internal),
            (EngineError::Internal("x".into()), Code::Internal),
            (EngineError::Panic("x".into()), Code::Internal),
            (EngineError::InUse("x".into()), Code::FailedPrecondition),
            (EngineError::SyntheticDisabled, Code::FailedPrecondition),
            (EngineError::Exhausted("x".into()), Code::ResourceExhausted),
        ];
        for (e, code) in cases {
            assert_eq!(code_of(&e), code, "{e}");
        }
    }

    /// Waiters hold no thread: with far more of them than the blocking pool has threads, a
    /// submission is still answered at once, and the engine's stop wakes them all.
    #[test]
    fn many_waiters_do_not_block_submissions() {
        let dir = tempfile::tempdir().unwrap();
        let config = cuzk_engine::EngineConfig {
            data_dir: dir.path().join("data"),
            params: cuzk_engine::ParamConfig {
                filecoin_dir: dir.path().join("filecoin"),
                synthetic_dir: dir.path().join("params"),
                generate_test_params: false,
                budget_bytes: u64::MAX,
            },
            group_window: 0,
            retention: Duration::from_secs(60),
            max_attempts: 3,
            spool_threshold: 64 << 10,
            pce_dir: None,
            max_pending_jobs: 1000,
            max_spool_bytes: u64::MAX,
            allow_synthetic: true,
            synthesis_threads: 1,
        };
        // No workers: every job stays pending, so every waiter waits until the stop.
        let engine = Arc::new(Engine::start(config, Vec::new(), None).unwrap());
        let cell = Arc::new(OnceLock::new());
        cell.set(Arc::clone(&engine)).unwrap();
        let service = Service::new(cell);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(4)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let submit = |seed| {
                let s = service.clone();
                async move {
                    let r = wire_request(JobRequest::synthetic(6, seed, 1));
                    s.submit_proof(Request::new(r))
                        .await
                        .unwrap()
                        .into_inner()
                        .job_id
                }
            };
            let job_id = submit(1).await;
            let waiters: Vec<_> = (0..600)
                .map(|_| {
                    let s = service.clone();
                    let job_id = job_id.clone();
                    tokio::spawn(async move {
                        let r = proto::AwaitProofRequest {
                            job_id,
                            timeout_ms: 0,
                        };
                        s.await_proof(Request::new(r)).await.unwrap().into_inner()
                    })
                })
                .collect();
            // Let every waiter reach its wait.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let answered = tokio::time::timeout(Duration::from_secs(20), submit(2)).await;
            assert!(answered.is_ok(), "600 waiters held up a submission");
            let e = Arc::clone(&engine);
            tokio::task::spawn_blocking(move || e.shutdown(Duration::from_secs(1)))
                .await
                .unwrap();
            for w in waiters {
                let r = tokio::time::timeout(Duration::from_secs(20), w)
                    .await
                    .expect("the stop wakes every waiter")
                    .unwrap();
                assert_eq!(r.status, await_proof_response::Status::Timeout as i32);
            }
        });
    }
}
