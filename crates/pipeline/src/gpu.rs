//! The GPU backend (feature `cuda`): the heavy stages of a partition on one CUDA device.
//!
//! [`GpuBackend`] runs cuzk-ntt's and cuzk-msm's kernels on one device, every call on the MSM's
//! stream, so consecutive operations are ordered without waiting on the host:
//!
//! - `ntt_h`: `a`, `b`, `c` go up once, into one buffer of three vectors, through two pinned
//!   staging buffers (the host fills one while the device copies the other: pageable memory goes
//!   up at a tenth of the link's speed); the inverse NTTs and
//!   the coset NTTs run on the three at once, `ntt_h_pointwise` writes `(a·b − c)/Z` into the
//!   `h` buffer, the coset inverse NTT runs on it, and `h` stays on the device: `msm_h` reads it
//!   where the NTT left it. Nothing returns to the host between the two stages.
//! - Parameters preloaded with [`GpuBackend::preload`] are resident: their bases are copied to
//!   the device once and serve every later proof of that circuit (`msm_h` over `h`, the batch
//!   additions over L, A, B₁, B₂). Bases that are not resident stream from host memory, each
//!   chunk's copy overlapping the work on the one before.
//! - The tail MSMs (L, A, B₁ in G1, B₂ in G2) and the batch additions run on the device; a batch
//!   addition over bases that are not resident runs on the host, which sums them as fast as they
//!   could be copied.
//!
//! - Each device operation runs between two CUDA events on the worker's stream, and the
//!   device's time between them is added to the stage span's `gpu_ns` (cuzk-telemetry), so the
//!   summaries and the waterfall show the device's own time beside the host's wall time. A wait
//!   for the interlock policy is a `vram_wait` (or `lock_wait`) span carrying the partition's
//!   demand (`stage_bytes`, `compute_bytes`), which is what the simulator needs to replay it.
//!
//! Every result is the CPU backend's, bit for bit (exact group arithmetic; the tests of
//! `tests/gpu.rs` compare whole proofs).
//!
//! Residency is keyed by the host memory of the parameters: [`GpuBackend::preload`] takes an
//! `Arc<Parameters>` and holds it, so while its bases are resident that memory can be neither
//! freed nor reused, and a query slice at the same address is the same, immutable, data.

use std::sync::{Arc, Mutex};

use cuzk_field::layout::{scalars_as_limbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::{Device, DeviceBuffer, GpuError, PinnedBuffer, Stream};
use cuzk_groth16::Parameters;
use cuzk_msm::gpu::{Bases, GpuCurve, GpuMsm, GpuMsmError, ScalarForm, Scalars};
use cuzk_msm::{Selection, G1, G2};
use cuzk_ntt::gpu::{GpuNtt, GpuNttError};
use cuzk_ntt::Order;
use group::Group;

pub use cuzk_interlock::PolicyKind;
use cuzk_interlock::{Demand, Policy};
use cuzk_msm::gpu::Group as MsmGroup;
use cuzk_vram::{Arena, ArenaConfig, HostBacking, SimFence};

use crate::backend::{Backend, DevicePhase};
use crate::{JobContext, PipelineError};

/// How the GPU backend uses its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// The most device memory resident parameters may take, in bytes; `None`: half of the
    /// device's memory, leaving the rest to a partition's working set (the NTT's 4·n scalars
    /// and the MSM's workspace: about 18 GiB at 2^27).
    pub resident_budget: Option<u64>,
}

/// A partition's compute permit, finished (its reservation released) when dropped.
struct ComputePermit(Option<cuzk_interlock::Compute<HostBacking>>);

impl Drop for ComputePermit {
    fn drop(&mut self) {
        if let Some(permit) = self.0.take() {
            permit.finish(Some(SimFence::completed()));
        }
    }
}

/// Errors of the GPU backend, with the operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum GpuBackendError {
    /// The driver, the device or a copy failed.
    #[error("{what}: {source}")]
    Gpu {
        what: &'static str,
        #[source]
        source: GpuError,
    },
    /// An NTT on the device failed.
    #[error("{what}: {source}")]
    Ntt {
        what: &'static str,
        #[source]
        source: GpuNttError,
    },
    /// The interlock policy refused (a partition larger than the device's working memory).
    #[error("interlock: {0}")]
    Policy(String),
    /// An MSM or batch addition on the device failed.
    #[error("{what}: {source}")]
    Msm {
        what: &'static str,
        #[source]
        source: GpuMsmError,
    },
}

impl GpuBackendError {
    fn gpu(what: &'static str) -> impl FnOnce(GpuError) -> Self {
        move |source| Self::Gpu { what, source }
    }

    fn ntt(what: &'static str) -> impl FnOnce(GpuNttError) -> Self {
        move |source| Self::Ntt { what, source }
    }

    fn msm(what: &'static str) -> impl FnOnce(GpuMsmError) -> Self {
        move |source| Self::Msm { what, source }
    }
}

/// The device bytes resident parameters may take under `config`.
fn resident_budget(device: &Device, config: &GpuConfig) -> u64 {
    config
        .resident_budget
        .unwrap_or(device.info().total_memory as u64 / 2)
}

/// Converts a device failure into the prover's error, naming the device.
fn on(device: &str) -> impl Fn(GpuBackendError) -> PipelineError + '_ {
    move |e| PipelineError::Device {
        device: device.to_string(),
        source: Box::new(e),
    }
}

/// One query's bases on the device.
struct Query<L> {
    /// Address and length of the host slice the bases were copied from.
    host: (usize, usize),
    bases: DeviceBuffer<L>,
}

impl<L> Query<L> {
    fn is<T>(&self, host: &[T]) -> bool {
        self.host == (host.as_ptr() as usize, host.len())
    }
}

/// One preloaded parameter set: the host parameters (held, so their memory stays put) and the
/// queries that fitted on the device.
struct Resident {
    params: Arc<Parameters>,
    g1: Vec<Query<G1AffineLimbs>>,
    g2: Vec<Query<G2AffineLimbs>>,
    bytes: u64,
}

/// Bytes of each pinned staging buffer of the uploads of a, b, c.
const STAGE_BYTES: usize = 32 << 20;

/// What the workers of one device share: its resident parameters, and the interlock policy that
/// says when each may run its device stages (over an arena that accounts for the device memory
/// left beside the resident parameters; reservations only, decided on the host).
struct DeviceShare {
    budget: u64,
    resident: Mutex<Vec<Arc<Resident>>>,
    policy: Option<Box<dyn Policy<HostBacking>>>,
}

/// The heavy stages on one CUDA device, for one worker: its own streams (so several workers'
/// kernels and copies can overlap), the device's resident parameters and policy shared.
pub struct GpuBackend {
    name: String,
    msm: GpuMsm,
    ntt: GpuNtt,
    share: Arc<DeviceShare>,
    /// Two pinned buffers that uploads from pageable memory alternate between, made on first use.
    staging: Mutex<Vec<PinnedBuffer<FrLimbs>>>,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBackend")
            .field("device", &self.name)
            .field("budget", &self.share.budget)
            .field("resident_bytes", &self.resident_bytes())
            .finish()
    }
}

impl GpuBackend {
    /// Loads the kernels on device `ordinal` (named `gpu<ordinal>` in spans and reports).
    pub fn new(ordinal: usize, config: GpuConfig) -> Result<Self, GpuBackendError> {
        let device = Device::open(ordinal).map_err(GpuBackendError::gpu("opening the device"))?;
        Self::on_device(&device, ordinal, config)
    }

    /// Loads the kernels on an open device, for a single worker.
    pub fn on_device(
        device: &Device,
        ordinal: usize,
        config: GpuConfig,
    ) -> Result<Self, GpuBackendError> {
        let share = Arc::new(DeviceShare {
            budget: resident_budget(device, &config),
            resident: Mutex::new(Vec::new()),
            policy: None,
        });
        Self::with_share(device, ordinal, share)
    }

    /// `workers` backends on device `ordinal` that share its resident parameters and take turns
    /// under `policy` (one per worker thread). The policy's arena accounts for the device memory
    /// beside the resident budget.
    pub fn workers(
        ordinal: usize,
        config: GpuConfig,
        workers: usize,
        policy: PolicyKind,
    ) -> Result<Vec<Self>, GpuBackendError> {
        let device = Device::open(ordinal).map_err(GpuBackendError::gpu("opening the device"))?;
        let budget = resident_budget(&device, &config);
        let working = (device.info().total_memory as u64).saturating_sub(budget);
        let arena = Arena::new(HostBacking::new(working), ArenaConfig::with_bytes(working))
            .map_err(|e| GpuBackendError::Policy(e.to_string()))?;
        let share = Arc::new(DeviceShare {
            budget,
            resident: Mutex::new(Vec::new()),
            policy: Some(policy.build(arena)),
        });
        (0..workers.max(1))
            .map(|_| Self::with_share(&device, ordinal, share.clone()))
            .collect()
    }

    fn with_share(
        device: &Device,
        ordinal: usize,
        share: Arc<DeviceShare>,
    ) -> Result<Self, GpuBackendError> {
        let msm = GpuMsm::new(device).map_err(GpuBackendError::msm("loading the MSM kernels"))?;
        let ntt = GpuNtt::new(device).map_err(GpuBackendError::ntt("loading the NTT kernels"))?;
        Ok(Self {
            name: format!("gpu{ordinal}"),
            msm,
            ntt,
            share,
            staging: Mutex::new(Vec::new()),
        })
    }

    /// The name of the interlock policy the device's workers share, if any.
    pub fn policy(&self) -> Option<&'static str> {
        self.share.policy.as_ref().map(|p| p.name())
    }

    /// What a partition over a domain of `n` points reserves on the device: a, b, c and h
    /// (`4·n` scalars) staged, the largest MSM's workspace (`msm_h`'s) to compute.
    pub fn demand(&self, n: usize) -> Demand {
        Demand {
            stage_bytes: (4 * n * std::mem::size_of::<FrLimbs>()) as u64,
            compute_bytes: self.msm.plan(n.max(1), MsmGroup::G1).device_bytes() as u64,
        }
    }

    /// The device.
    pub fn gpu(&self) -> &Device {
        self.msm.device()
    }

    /// Device bytes taken by resident parameters (the device's, whichever worker made them).
    pub fn resident_bytes(&self) -> u64 {
        self.resident_sets().iter().map(|r| r.bytes).sum()
    }

    /// Makes `params`' bases resident on the device, as many queries as the budget leaves room
    /// for, largest first (H, L, A, B₁, B₂): later proofs with these parameters read them there.
    /// Returns the bytes made resident (0 when they already were). Holds `params` until
    /// [`GpuBackend::evict`].
    pub fn preload(&self, params: &Arc<Parameters>) -> Result<u64, PipelineError> {
        if self.find(params).is_some() {
            return Ok(0);
        }
        let mut room = self.share.budget.saturating_sub(self.resident_bytes());
        let mut g1 = Vec::new();
        let mut g2 = Vec::new();
        let mut bytes = 0;
        let stream = self.msm.stream();
        for query in [&params.h, &params.l, &params.a, &params.b_g1] {
            let need = (query.len() * std::mem::size_of::<G1AffineLimbs>()) as u64;
            if query.is_empty() || need > room {
                continue;
            }
            let bases = self
                .msm
                .upload_bases::<G1>(query)
                .map_err(GpuBackendError::msm("uploading G1 bases"))
                .map_err(on(&self.name))?;
            g1.push(Query {
                host: (query.as_ptr() as usize, query.len()),
                bases,
            });
            room -= need;
            bytes += need;
        }
        let need = (params.b_g2.len() * std::mem::size_of::<G2AffineLimbs>()) as u64;
        if !params.b_g2.is_empty() && need <= room {
            let bases = self
                .msm
                .upload_bases::<G2>(&params.b_g2)
                .map_err(GpuBackendError::msm("uploading G2 bases"))
                .map_err(on(&self.name))?;
            g2.push(Query {
                host: (params.b_g2.as_ptr() as usize, params.b_g2.len()),
                bases,
            });
            bytes += need;
        }
        stream
            .synchronize()
            .map_err(GpuBackendError::gpu("uploading bases"))
            .map_err(on(&self.name))?;
        self.lock().push(Arc::new(Resident {
            params: params.clone(),
            g1,
            g2,
            bytes,
        }));
        Ok(bytes)
    }

    /// Frees `params`' resident bases (once no partition is using them) and lets go of
    /// `params`. Returns whether they were resident.
    pub fn evict(&self, params: &Arc<Parameters>) -> bool {
        let mut sets = self.lock();
        let before = sets.len();
        sets.retain(|r| !Arc::ptr_eq(&r.params, params));
        before != sets.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Resident>>> {
        // A panic while the list was held leaves it consistent (pushes and retains only).
        self.share
            .resident
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn resident_sets(&self) -> Vec<Arc<Resident>> {
        self.lock().clone()
    }

    fn find(&self, params: &Arc<Parameters>) -> Option<Arc<Resident>> {
        self.lock()
            .iter()
            .find(|r| Arc::ptr_eq(&r.params, params))
            .cloned()
    }

    /// The resident set holding a G1 query copied from `host`, if any. The set's `Arc` keeps
    /// the buffer alive while the caller uses it.
    fn resident_g1(&self, host: &[G1Affine]) -> Option<(Arc<Resident>, usize)> {
        self.lock()
            .iter()
            .find_map(|r| r.g1.iter().position(|q| q.is(host)).map(|i| (r.clone(), i)))
    }

    fn resident_g2(&self, host: &[G2Affine]) -> Option<(Arc<Resident>, usize)> {
        self.lock()
            .iter()
            .find_map(|r| r.g2.iter().position(|q| q.is(host)).map(|i| (r.clone(), i)))
    }

    /// Copies `host` into `dst` from element `offset` on `stream` through the pinned staging
    /// buffers: the host fills one (on rayon's threads) while the device copies the other.
    fn upload_staged(
        &self,
        stream: &Stream,
        host: &[FrLimbs],
        dst: &mut DeviceBuffer<FrLimbs>,
        offset: usize,
    ) -> Result<(), GpuBackendError> {
        use rayon::prelude::*;
        let per_chunk = STAGE_BYTES / std::mem::size_of::<FrLimbs>();
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        while staging.len() < 2 {
            let buf = self
                .gpu()
                .alloc_pinned::<FrLimbs>(per_chunk)
                .map_err(GpuBackendError::gpu("allocating pinned staging memory"))?;
            staging.push(buf);
        }
        for (k, chunk) in host.chunks(per_chunk).enumerate() {
            let buf = &mut staging[k % 2];
            // Waits for the copy that last read this buffer, two chunks ago.
            let slot = buf
                .as_mut_slice()
                .map_err(GpuBackendError::gpu("reusing pinned staging memory"))?;
            slot[..chunk.len()]
                .par_chunks_mut(1 << 15)
                .zip(chunk.par_chunks(1 << 15))
                .for_each(|(d, s)| d.copy_from_slice(s));
            let src = buf
                .bytes()
                .range(0..std::mem::size_of_val(chunk))
                .map_err(GpuBackendError::gpu("staging a, b, c"))?;
            stream
                .copy_pinned_to_device(src, dst, offset + k * per_chunk)
                .map_err(GpuBackendError::gpu("uploading a, b, c"))?;
        }
        Ok(())
    }

    /// Runs `f`, whose device work goes on the worker's stream and is finished when it
    /// returns, between two CUDA events, and adds the device's time between them to the
    /// current stage span's `gpu_ns` (cuzk-telemetry's convention): a stage's GPU time is the
    /// device's own measure, not the host's wall time around it.
    fn timed<T>(&self, f: impl FnOnce() -> Result<T, PipelineError>) -> Result<T, PipelineError> {
        let err = |what| move |e| on(&self.name)(GpuBackendError::Gpu { what, source: e });
        let stream = self.msm.stream();
        let start = stream
            .record_event()
            .map_err(err("recording a timing event"))?;
        let out = f()?;
        let end = stream
            .record_event()
            .map_err(err("recording a timing event"))?;
        end.synchronize()
            .map_err(err("waiting for the stage's end"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(err("reading the stage's device time"))?;
        tracing::Span::current().record("gpu_ns", (f64::from(ms) * 1e6).round() as u64);
        Ok(out)
    }

    /// `ntt_h`'s device work, queued on the worker's stream ([`GpuBackend::timed`] waits for
    /// it to finish, so that the stage's time is the device's).
    fn h_on_device(
        &self,
        domain: &Domain,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let n = domain.n();
        let err = on(&self.name);
        let stream = self.msm.stream();
        let mut abc = stream
            .alloc::<FrLimbs>(3 * n)
            .map_err(GpuBackendError::gpu("allocating a, b, c"))
            .map_err(&err)?;
        for (i, v) in [a, b, c].into_iter().enumerate() {
            self.upload_staged(stream, scalars_as_limbs(&v), &mut abc, i * n)
                .map_err(&err)?;
        }
        // Evaluations → coefficients (bit-reversed), then → evaluations on the coset (natural):
        // the CPU backend's order of operations, on the three vectors at once.
        self.ntt
            .inverse_device(stream, &mut abc, domain, Order::Natural, Order::BitReversed)
            .map_err(GpuBackendError::ntt("inverse NTT of a, b, c"))
            .map_err(&err)?;
        self.ntt
            .coset_forward_device(stream, &mut abc, domain, Order::BitReversed, Order::Natural)
            .map_err(GpuBackendError::ntt("coset NTT of a, b, c"))
            .map_err(&err)?;
        let mut h = stream
            .alloc::<FrLimbs>(n)
            .map_err(GpuBackendError::gpu("allocating h"))
            .map_err(&err)?;
        self.ntt
            .h_pointwise(stream, &abc, &mut h, domain)
            .map_err(GpuBackendError::ntt("(a·b − c)/Z"))
            .map_err(&err)?;
        drop(abc);
        self.ntt
            .coset_inverse_device(stream, &mut h, domain, Order::Natural, Order::Natural)
            .map_err(GpuBackendError::ntt("coset inverse NTT of h"))
            .map_err(&err)?;
        // The last coefficient has no parameter point (it is zero for a satisfied circuit).
        h.truncate(n - 1);
        Ok(h)
    }

    /// `Σ scalars[i]·bases[i]` on the device, bases resident or streamed.
    fn msm<C: GpuCurve>(
        &self,
        bases: Bases<'_, C>,
        scalars: Scalars<'_>,
        n: usize,
    ) -> Result<C::Projective, PipelineError> {
        if n == 0 {
            return Ok(C::Projective::identity());
        }
        self.timed(|| {
            self.msm
                .msm::<C>(bases, scalars)
                .map_err(GpuBackendError::msm("msm"))
                .map_err(on(&self.name))
        })
    }
}

impl Backend for GpuBackend {
    type H = DeviceBuffer<FrLimbs>;

    fn device(&self) -> &str {
        &self.name
    }

    fn device_phase(
        &self,
        n: usize,
        ctx: JobContext,
        partition: usize,
    ) -> Result<DevicePhase, PipelineError> {
        let Some(policy) = &self.share.policy else {
            return Ok(DevicePhase::free());
        };
        // The wait carries the partition's demand, so that a recorded run can be replayed by
        // the interlock simulator (`cargo xtask bench interlock --replay`).
        let demand = self.demand(n);
        let (stage_bytes, compute_bytes) = (demand.stage_bytes, demand.compute_bytes);
        let partition = partition as u64;
        let wait = if policy.name() == "VramBudget" {
            tracing::info_span!("vram_wait", job = ctx.job, partition, worker = ctx.worker, device = %self.name, stage_bytes, compute_bytes)
        } else {
            tracing::info_span!("lock_wait", job = ctx.job, partition, worker = ctx.worker, device = %self.name, stage_bytes, compute_bytes)
        };
        let entered = wait.enter();
        let refused = |e: cuzk_interlock::InterlockError| {
            on(&self.name)(GpuBackendError::Policy(e.to_string()))
        };
        let staged = policy.stage(demand).map_err(refused)?.finish();
        let compute = policy.compute(staged).map_err(refused)?;
        drop(entered);
        // Every device stage ends in a stream synchronisation, so when the permit drops the
        // partition's device work is done and its memory may be reserved again at once.
        Ok(DevicePhase::held(ComputePermit(Some(compute))))
    }

    fn ntt_h(
        &self,
        domain: &Domain,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let n = domain.n();
        for v in [&a, &b, &c] {
            if v.len() != n {
                return Err(cuzk_ntt::NttError::LengthMismatch {
                    expected: n,
                    got: v.len(),
                }
                .into());
            }
        }
        self.timed(|| self.h_on_device(domain, a, b, c))
    }

    fn msm_h(
        &self,
        bases: &[G1Affine],
        h: DeviceBuffer<FrLimbs>,
    ) -> Result<G1Projective, PipelineError> {
        let scalars = Scalars::Device(&h, ScalarForm::Montgomery);
        match self.resident_g1(bases) {
            Some((set, i)) => self.msm::<G1>(Bases::Device(&set.g1[i].bases), scalars, h.len()),
            None => self.msm::<G1>(Bases::Host(bases), scalars, h.len()),
        }
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, PipelineError> {
        if bases.len() != scalars.len() {
            return Err(cuzk_msm::MsmError::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            }
            .into());
        }
        self.msm::<G1>(Bases::Host(bases), Scalars::Host(scalars), bases.len())
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<G2Projective, PipelineError> {
        if bases.len() != scalars.len() {
            return Err(cuzk_msm::MsmError::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            }
            .into());
        }
        self.msm::<G2>(Bases::Host(bases), Scalars::Host(scalars), bases.len())
    }

    fn batch_add_g1(
        &self,
        bases: &[G1Affine],
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError> {
        match self.resident_g1(bases) {
            Some((set, i)) if !indices.is_empty() => self.timed(|| {
                self.msm
                    .batch_add::<G1>(&set.g1[i].bases, Selection::Indices(indices))
                    .map_err(GpuBackendError::msm("batch addition"))
                    .map_err(on(&self.name))
            }),
            _ => Ok(cuzk_msm::batch_add::<G1>(
                bases,
                Selection::Indices(indices),
            )?),
        }
    }

    fn batch_add_g2(
        &self,
        bases: &[G2Affine],
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError> {
        match self.resident_g2(bases) {
            Some((set, i)) if !indices.is_empty() => self.timed(|| {
                self.msm
                    .batch_add::<G2>(&set.g2[i].bases, Selection::Indices(indices))
                    .map_err(GpuBackendError::msm("batch addition"))
                    .map_err(on(&self.name))
            }),
            _ => Ok(cuzk_msm::batch_add::<G2>(
                bases,
                Selection::Indices(indices),
            )?),
        }
    }
}
