//! Running one job on a backend: its inputs checked and decoded per kind, its circuit's
//! parameters leased from the manager, each partition proven by the backend and verified, and
//! a cancel or shutdown honoured at the next partition boundary.
//!
//! Every kind's partitions are spread over idle workers ([`crate::spread`]): they are synthesised
//! `synthesis_threads` at a time ahead of the workers ([`ahead_within`]: as many as the memory
//! budget left beside the parameters holds), and idle workers of any device prove them as they
//! are done (with none idle, the job's worker proves each itself). The synthetic kind drives the
//! [`Spreader`] here; the Filecoin kinds go through cuzk-filecoin's partition loop, which submits
//! each synthesised partition to the engine's [`PartitionProver`] (the Spreader behind it) and
//! verifies every proof as it comes back.

use std::sync::Arc;
use std::time::Duration;

use cuzk_filecoin::post::{self, PostJob, PostKind};
use cuzk_filecoin::snap::{self, SnapJob};
use cuzk_filecoin::{
    synthesize_partition, C1Output, C1Summary, CircuitKind, FilecoinError, ParamFiles,
    PartitionProver, PorepJob, Proven, ProverError, RegisteredSealProof, SectorId,
};
use cuzk_groth16::{Ahead, Capacity, Parameters, Proof};
use cuzk_pipeline::PartitionInput;

use crate::backend::engine_error;
use crate::job::{JobRequest, ProofKind};
use crate::params::{CircuitId, ParamLease, ParamManager};
use crate::spool::SpoolData;
use crate::spread::{prove_made, JobSite, Spreader};
use crate::synthetic::SyntheticInput;
use crate::EngineError;

/// Pre-compiled circuits (cuzk-pce) by key, recorded on first use into a folder and kept
/// mapped: jobs then synthesise from the witness alone.
#[derive(Debug)]
pub struct PceStore {
    dir: std::path::PathBuf,
    /// One slot per key, locked while its circuit is read or recorded: a recording of one
    /// circuit never holds up another's jobs.
    loaded: std::sync::Mutex<std::collections::HashMap<String, Arc<PceSlot>>>,
}

type PceSlot = std::sync::Mutex<Option<Arc<cuzk_pce::PreCompiled>>>;

impl PceStore {
    /// A store in `dir`.
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self {
            dir,
            loaded: Default::default(),
        }
    }

    /// The pre-compiled circuit of `key`: kept, read from its file, or recorded by `record`
    /// and written (atomically) first.
    pub fn get(
        &self,
        key: &str,
        record: &mut dyn FnMut() -> Result<cuzk_pce::Recording, EngineError>,
    ) -> Result<Arc<cuzk_pce::PreCompiled>, EngineError> {
        let slot = Arc::clone(
            self.loaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(key.to_string())
                .or_default(),
        );
        let mut loaded = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(pc) = loaded.as_ref() {
            return Ok(Arc::clone(pc));
        }
        std::fs::create_dir_all(&self.dir).map_err(EngineError::io(&self.dir))?;
        let path = self.dir.join(format!("{key}.pce"));
        let pc = match cuzk_pce::PreCompiled::open(&path) {
            Ok(pc) => pc,
            Err(e) => {
                tracing::info!(key, path = %path.display(), reason = %e, "recording a pre-compiled circuit");
                let rec = record()?;
                cuzk_pce::write_file(&rec, &path).map_err(pce_error)?;
                drop(rec);
                cuzk_pce::PreCompiled::open(&path).map_err(pce_error)?
            }
        };
        let pc = Arc::new(pc);
        *loaded = Some(Arc::clone(&pc));
        Ok(pc)
    }
}

fn pce_error(e: cuzk_pce::PceError) -> EngineError {
    EngineError::Filecoin(FilecoinError::Pce(e))
}

/// How far a job's synthesis runs ahead of its workers: `threads` partitions at once, and as
/// many partitions of `partition_bytes` in flight (being synthesised, or waiting for a worker)
/// as `room` bytes hold: at least one, and at most one more than the threads (more would only
/// wait).
pub fn ahead_within(threads: usize, room: u64, partition_bytes: u64) -> Ahead {
    let threads = threads.max(1);
    let fits = room / partition_bytes.max(1);
    let limit = fits.min(threads as u64 + 1).max(1) as usize;
    Ahead::new(threads, limit)
}

/// Partitions of one job synthesised at once by default: a quarter of the machine's threads,
/// at least one. A circuit's synthesis is mostly one thread's work, and the rest of the cores
/// make a, b, c (host products), prove on the CPU or feed the device.
pub fn default_synthesis_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 4).max(1))
}

/// A finished job's proof and where its time went.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// The proof bytes the wire returns.
    pub proof: Vec<u8>,
    /// Leasing the parameters (zero when hot).
    pub param_load: Duration,
    /// Circuit building and synthesis, all partitions (several are synthesised at once).
    pub synthesis: Duration,
    /// From the first partition's start on a worker to the last proof: the proving, which
    /// overlaps the later partitions' synthesis.
    pub proving: Duration,
    /// The devices' own time for the partitions ([`JobControl::device_time`](crate::job::JobControl::device_time)).
    pub device: Duration,
    /// Each partition's synthesis, proving and verification (the Filecoin kinds; the synthetic
    /// kind's are empty).
    pub partitions: Vec<cuzk_filecoin::PartitionReport>,
}

/// The circuit a request proves, from its kind and its sector size or registered proof
/// (PoRep's may come from its C1 output instead: `None`).
pub fn circuit_of(r: &JobRequest) -> Result<Option<CircuitId>, EngineError> {
    let size = match r.kind {
        ProofKind::Synthetic => {
            let input = SyntheticInput::parse(&r.vanilla_proof)?;
            return Ok(Some(CircuitId::Synthetic(input.log_size)));
        }
        ProofKind::PorepSealCommit if r.sector_size == 0 => return Ok(None),
        ProofKind::PorepSealCommit => r.sector_size,
        _ => post_sector_size(r)?,
    };
    CircuitId::of(r.kind, size).map(Some)
}

/// The sector size of a PoSt or SnapDeals request: the request's, checked against its
/// registered proof's.
fn post_sector_size(r: &JobRequest) -> Result<u64, EngineError> {
    let (kind, what) = match r.kind {
        ProofKind::WinningPost => (CircuitKind::Winning, "registered WinningPoSt proof"),
        ProofKind::WindowPost => (CircuitKind::Window, "registered WindowPoSt proof"),
        _ => (CircuitKind::Snap, "registered update proof"),
    };
    let from_proof = kind.sector_size_of(r.registered_proof).map_err(|_| {
        let numbers = kind.registered_numbers();
        EngineError::InvalidRequest(format!(
            "unknown {what} {} (expected {}..={})",
            r.registered_proof,
            numbers.start(),
            numbers.end()
        ))
    })?;
    if r.sector_size != 0 && r.sector_size != from_proof {
        return Err(EngineError::InvalidRequest(format!(
            "sector size {} does not match the {what} {} ({} bytes)",
            r.sector_size, r.registered_proof, from_proof
        )));
    }
    Ok(from_proof)
}

/// Checks a request as it arrives, so that bad input is refused at submission, not when the
/// job runs hours later: the kind's inputs are there, the registered proof is known and the
/// sector size matches it, 32-byte fields are 32 bytes, a PoSt or SnapDeals job has the number
/// of vanilla proofs its sector size needs, and a C1 output is JSON of a known form whose
/// partitions, commitments, sector number and replica id fit the request (cuzk-filecoin's own
/// checks, [`PorepJob::check`]). Returns the circuit the job proves (now known for PoRep too,
/// from its C1 output).
///
/// The checks read the inputs and keep nothing of them: the job runs from its spooled bytes,
/// maybe after a restart, so a typed input could not be carried to it anyway. The C1 output is
/// read by [`C1Summary::read`], which skips the vanilla proofs instead of keeping them, so a
/// 128 MiB input costs one scan and no copy here; the vanilla proofs' types (and a PoSt or
/// SnapDeals proof's bincode) are decoded only when the job runs.
pub fn validate(r: &JobRequest) -> Result<Option<CircuitId>, EngineError> {
    let circuit = circuit_of(r)?;
    check_shape(r)?;
    let field = |what: &'static str| {
        move |e: FilecoinError| {
            EngineError::InvalidRequest(format!("{what}: {}", crate::error_chain(&e)))
        }
    };
    match r.kind {
        ProofKind::Synthetic => {}
        ProofKind::PorepSealCommit => {
            let registered = match r.registered_proof {
                0 => None,
                n => Some(RegisteredSealProof::from_number(n).map_err(field("registered_proof"))?),
            };
            let c1 = C1Summary::read(&r.vanilla_proof, registered)
                .map_err(field("vanilla_proof (the C1 output)"))?;
            check_c1_size(r, c1.registered_proof)?;
            let sector = SectorId {
                miner_id: r.miner_id,
                sector_number: r.sector_number,
            };
            PorepJob::check(&c1, sector).map_err(field("vanilla_proof (the C1 output)"))?;
            return CircuitId::of(r.kind, c1.registered_proof.sector_size).map(Some);
        }
        ProofKind::WinningPost | ProofKind::WindowPost => {
            bytes32(&r.randomness, "randomness")?;
            let kind = if r.kind == ProofKind::WinningPost {
                PostKind::Winning
            } else {
                PostKind::Window
            };
            post::check_vanilla_count(kind, post_sector_size(r)?, r.vanilla_proofs.len())
                .map_err(field("vanilla_proofs"))?;
        }
        ProofKind::SnapDealsUpdate => {
            bytes32(&r.comm_r_old, "comm_r_old")?;
            bytes32(&r.comm_r_new, "comm_r_new")?;
            bytes32(&r.comm_d_new, "comm_d_new")?;
            snap::check_vanilla_count(post_sector_size(r)?, r.vanilla_proofs.len())
                .map_err(field("vanilla_proofs"))?;
        }
    }
    Ok(circuit)
}

/// A PoRep request's sector size, where it gives one, must be its C1 output's.
fn check_c1_size(r: &JobRequest, registered: RegisteredSealProof) -> Result<(), EngineError> {
    if r.sector_size != 0 && r.sector_size != registered.sector_size {
        return Err(EngineError::InvalidRequest(format!(
            "sector size {} does not match the C1 output's {} ({} bytes)",
            r.sector_size, registered, registered.sector_size
        )));
    }
    Ok(())
}

/// The kind's inputs are there.
fn check_shape(r: &JobRequest) -> Result<(), EngineError> {
    let field = match r.kind {
        ProofKind::PorepSealCommit | ProofKind::Synthetic => "vanilla_proof",
        _ => "vanilla_proofs",
    };
    let empty = match r.kind {
        ProofKind::PorepSealCommit | ProofKind::Synthetic => r.vanilla_proof.is_empty(),
        _ => r.vanilla_proofs.is_empty(),
    };
    if empty {
        return Err(EngineError::InvalidRequest(format!(
            "a {} request needs {field}",
            r.kind
        )));
    }
    Ok(())
}

fn bytes32(v: &[u8], what: &str) -> Result<[u8; 32], EngineError> {
    v.try_into().map_err(|_| {
        EngineError::InvalidRequest(format!("{what} must be 32 bytes, got {}", v.len()))
    })
}

/// The engine's side of cuzk-filecoin's partition loop: parameters from the manager, partitions
/// spread over idle workers (a [`Spreader`], made on the first partition), cancellation between
/// partitions.
struct EngineProver<'a> {
    kind: ProofKind,
    pce: Option<&'a PceStore>,
    params: &'a ParamManager,
    site: JobSite<'a>,
    lease: Option<ParamLease>,
    param_load: Duration,
    spread: Option<Spreader<'a>>,
}

fn boxed(e: EngineError) -> FilecoinError {
    FilecoinError::Prover(Box::new(e))
}

impl EngineProver<'_> {
    /// The manager's `Arc` of `params`: the backends take it (a device keeps resident copies
    /// keyed by it), and the parameters cuzk-filecoin hands back are the ones `parameters`
    /// leased.
    fn leased(&self, params: &Parameters) -> Result<Arc<Parameters>, EngineError> {
        self.lease
            .as_ref()
            .map(ParamLease::params)
            .filter(|p| std::ptr::eq(Arc::<Parameters>::as_ptr(p), params))
            .cloned()
            .ok_or_else(|| {
                EngineError::Backend("the parameters to prove with are not the leased ones".into())
            })
    }

    /// The job stopped (a partition failed, a cancel): waits for the partitions in flight and
    /// returns why.
    fn stop(&mut self) -> ProverError {
        let error = match self.spread.take().map(Spreader::finish) {
            Some(Err(e)) => e,
            _ => EngineError::Internal("the job stopped for no recorded reason".into()),
        };
        Box::new(error)
    }
}

impl PartitionProver for EngineProver<'_> {
    fn parameters(&mut self, files: &ParamFiles) -> Result<Arc<Parameters>, FilecoinError> {
        let circuit = CircuitId::of(self.kind, files.sector_size).map_err(boxed)?;
        let ours = self.params.files(circuit).map_err(boxed)?;
        if ours.params != files.params {
            return Err(FilecoinError::ParameterMismatch {
                path: files.params.clone(),
                detail: format!(
                    "the engine resolves {} to {}",
                    circuit.id(),
                    ours.params.display()
                ),
            });
        }
        let (lease, load) = self.params.acquire(circuit).map_err(boxed)?;
        let params = Arc::clone(lease.params());
        self.lease = Some(lease);
        self.param_load += load;
        Ok(params)
    }

    fn pre_compiled(
        &mut self,
        files: &ParamFiles,
        record: &mut dyn FnMut() -> Result<cuzk_pce::Recording, FilecoinError>,
    ) -> Result<Option<Arc<cuzk_pce::PreCompiled>>, FilecoinError> {
        let Some(store) = self.pce else {
            return Ok(None);
        };
        store
            .get(&files.id, &mut || record().map_err(EngineError::Filecoin))
            .map(Some)
            .map_err(boxed)
    }

    /// The site's synthesis threads, and as many partitions in flight as the memory budget left
    /// beside the parameters holds.
    fn ahead(&mut self, files: &ParamFiles, capacity: &Capacity, witness_only: bool) -> Ahead {
        let room = CircuitId::of(self.kind, files.sector_size)
            .map_or(0, |circuit| self.params.room_beside(circuit));
        ahead_within(
            self.site.synthesis_threads,
            room,
            capacity.partition_bytes(witness_only),
        )
    }

    /// One partition on the job's own worker (the loop submits; this is the synchronous form).
    fn prove(
        &mut self,
        params: &Parameters,
        input: PartitionInput,
        partition: usize,
    ) -> Result<Proof, ProverError> {
        self.site.control.check()?;
        let leased = self.leased(params)?;
        let (proof, timing) = self
            .site
            .backend
            .prove_partition(&leased, input, self.site.ctx, partition)
            .map_err(engine_error)?;
        self.site.control.record(partition, timing);
        Ok(proof)
    }

    /// Offers the partition to an idle worker (or proves it here when none is); a failure of
    /// any partition so far, or a cancel, stops the job with that partition's error.
    fn submit(
        &mut self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        partition: usize,
    ) -> Result<Proven, ProverError> {
        let leased = self.leased(params)?;
        if self
            .spread
            .as_ref()
            .is_some_and(|s| !Arc::ptr_eq(s.params(), &leased))
        {
            return Err(Box::new(EngineError::Backend(
                "a job's partitions prove with one set of parameters".into(),
            )));
        }
        let site = self.site;
        let kind = self.kind;
        let spread = self
            .spread
            .get_or_insert_with(|| Spreader::new(site, kind, leased, 1));
        if !spread.stopped() {
            spread.prove(partition, input);
        }
        if spread.stopped() {
            return Err(self.stop());
        }
        Ok(spread.take_proven())
    }

    fn finish(&mut self) -> Result<Proven, ProverError> {
        match self.spread.take() {
            Some(spread) => spread.finish().map_err(|e| Box::new(e) as ProverError),
            None => Ok(Vec::new()),
        }
    }

    fn abandon(&mut self) {
        if let Some(spread) = self.spread.take() {
            spread.abandon();
        }
    }
}

/// Turns cuzk-filecoin's error back into the engine's where it wraps one (a cancel, a
/// parameter problem), so the job's end state is right.
fn unwrap_filecoin(e: FilecoinError) -> EngineError {
    match e {
        FilecoinError::Prover(inner) => engine_error(inner),
        other => EngineError::Filecoin(other),
    }
}

/// Runs one job to its proof.
pub fn run_job(
    r: &JobRequest,
    data: &SpoolData,
    params: &ParamManager,
    pce: Option<&PceStore>,
    site: JobSite<'_>,
) -> Result<RunResult, EngineError> {
    site.control.check()?;
    // Every partition has answered when the job's proof is made, whichever worker proved it.
    let control = Arc::clone(site.control);
    let with_device = |r: RunResult| RunResult {
        device: control.device_time(),
        ..r
    };
    if r.kind == ProofKind::Synthetic {
        return run_synthetic(data, params, pce, site).map(with_device);
    }
    let mut prover = EngineProver {
        kind: r.kind,
        pce,
        params,
        site,
        lease: None,
        param_load: Duration::ZERO,
        spread: None,
    };
    let dir = params.config().filecoin_dir.clone();
    let proof = match r.kind {
        ProofKind::PorepSealCommit => {
            let registered = match r.registered_proof {
                0 => None,
                n => Some(RegisteredSealProof::from_number(n)?),
            };
            let c1 = C1Output::parse(&data.vanilla_proof, registered)?;
            check_c1_size(r, c1.registered_proof)?;
            let job = PorepJob::new(
                &c1,
                SectorId {
                    miner_id: r.miner_id,
                    sector_number: r.sector_number,
                },
            )?;
            job.prove(&dir, &mut prover).map_err(unwrap_filecoin)?
        }
        ProofKind::WinningPost | ProofKind::WindowPost => {
            let job = PostJob {
                kind: if r.kind == ProofKind::WinningPost {
                    PostKind::Winning
                } else {
                    PostKind::Window
                },
                partition_index: r.partition_index as usize,
                sector_size: post_sector_size(r)?,
                randomness: bytes32(&r.randomness, "randomness")?,
                miner_id: r.miner_id,
                vanilla_proofs: &data.vanilla_proofs,
            };
            job.prove(&dir, &mut prover).map_err(unwrap_filecoin)?
        }
        ProofKind::SnapDealsUpdate => {
            let job = SnapJob {
                sector_size: post_sector_size(r)?,
                comm_r_old: bytes32(&r.comm_r_old, "comm_r_old")?,
                comm_r_new: bytes32(&r.comm_r_new, "comm_r_new")?,
                comm_d_new: bytes32(&r.comm_d_new, "comm_d_new")?,
                vanilla_proofs: &data.vanilla_proofs,
            };
            job.prove(&dir, &mut prover).map_err(unwrap_filecoin)?
        }
        ProofKind::Synthetic => unreachable!("handled above"),
    };
    let synthesis = proof.partitions.iter().map(|p| p.synthesis).sum();
    Ok(with_device(RunResult {
        proof: proof.bytes,
        param_load: prover.param_load,
        synthesis,
        proving: proof.proving,
        device: Duration::ZERO,
        partitions: proof.partitions,
    }))
}

fn run_synthetic(
    data: &SpoolData,
    params: &ParamManager,
    pce: Option<&PceStore>,
    site: JobSite<'_>,
) -> Result<RunResult, EngineError> {
    let input = SyntheticInput::parse(&data.vanilla_proof)?;
    let circuit = CircuitId::Synthetic(input.log_size);
    let (lease, param_load) = params.acquire(circuit)?;
    let p = lease.params();
    let pvk = cuzk_groth16::prepare_verifying_key(&p.vk);
    // With pre-compiled circuits, the witness alone: the backend makes a, b, c (a GPU on the
    // device) and checks every row there.
    let pre_compiled = match pce {
        Some(store) => Some(
            store.get(&format!("cuzk-synthetic-{}", input.log_size), &mut || {
                cuzk_pce::record(input.partition(0).circuit()).map_err(pce_error)
            })?,
        ),
        None => None,
    };
    let capacity = cuzk_groth16::Capacity::of(p);
    let ahead = ahead_within(
        site.synthesis_threads,
        params.room_beside(circuit),
        capacity.partition_bytes(pre_compiled.is_some()),
    );
    let make = |k: usize| -> Result<PartitionInput, EngineError> {
        let circuit = input.partition(k as u32).circuit();
        Ok(synthesize_partition(
            circuit,
            pre_compiled.clone(),
            capacity,
        )?)
    };
    let spread = Spreader::new(
        site,
        ProofKind::Synthetic,
        Arc::clone(p),
        input.partitions as usize,
    );
    let proven = prove_made(spread, input.partitions as usize, ahead, &make)?;
    let mut out = RunResult {
        param_load,
        synthesis: proven.synthesis,
        proving: proven.proving,
        ..Default::default()
    };
    for (k, proof) in proven.proofs.iter().enumerate() {
        let part = input.partition(k as u32);
        if !cuzk_groth16::verify_proof(&pvk, proof, &part.public_inputs())? {
            return Err(EngineError::ProofInvalid);
        }
        out.proof.extend_from_slice(&proof.to_bytes());
    }
    drop(lease);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::ahead_within;

    #[test]
    fn the_budget_left_bounds_the_partitions_ahead() {
        const GIB: u64 = 1 << 30;
        // Room for many: one more than the threads.
        let plenty = ahead_within(4, 100 * GIB, 4 * GIB);
        assert_eq!((plenty.threads(), plenty.limit()), (4, 5));
        // Room for three 4 GiB partitions: three at once, no more.
        let some = ahead_within(4, 13 * GIB, 4 * GIB);
        assert_eq!((some.threads(), some.limit()), (3, 3));
        // No room (parameters over the budget): still one, so the job goes on.
        let none = ahead_within(4, 0, 17 * GIB);
        assert_eq!((none.threads(), none.limit()), (1, 1));
        // Zero threads configured is one.
        assert_eq!(ahead_within(0, u64::MAX, 1).threads(), 1);
    }
}
