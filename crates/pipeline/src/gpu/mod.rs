//! The GPU backend (feature `cuda`): the heavy stages of a partition on one CUDA device.
//!
//! [`GpuBackend`] runs cuzk-ntt's and cuzk-msm's kernels on one device, every call on the MSM's
//! stream, so consecutive operations are ordered without waiting on the host:
//!
//! - `products`: `a`, `b`, `c` in one buffer of three vectors: a pre-compiled circuit's made on
//!   the device from the values, its matrices resident (`products`: the witness is the only
//!   upload), or host vectors copied up through two pinned staging buffers (the host fills one
//!   while the device copies the other: pageable memory goes up at a tenth of the link's speed).
//! - `ntt_h`: the inverse NTTs and the coset NTTs run on the three at once, `ntt_h_pointwise`
//!   writes `(a·b − c)/Z` into the `h` buffer, the coset inverse NTT runs on it, and `h` stays
//!   on the device: `msm_h` reads it where the NTT left it. Nothing returns to the host between
//!   the two stages.
//! - Parameters preloaded with [`GpuBackend::preload`] are resident: their bases are copied to
//!   the device once and serve every later proof of that circuit (`msm_h` over `h`, the batch
//!   additions over L, A, B₁, B₂). Bases that are not resident stream from host memory, each
//!   chunk's copy overlapping the work on the one before.
//! - The queries over the values (L, A, B₁ and B₂, `query_sums`) of preloaded parameters run on
//!   the device from split to sum: the values (input ‖ aux) go up once per partition through the
//!   pinned staging buffers, then one query after the other is split there (cuzk-msm's
//!   `GpuMsm::split_in`: the ones' and others' base indices and the others' scalars, in device
//!   buffers of the reservation), its ones batch-added over those indices, and its tail MSM run
//!   with each chunk's bases gathered from the query's bases (`Bases::Gathered`), before the
//!   split is freed. The query's bases are resident, or, where they did not fit, its host vector
//!   mapped for the device to read in place (`Device::map_host`: page-locked, no copy): the
//!   batch addition and the gathers then read exactly the points whose scalar is not zero over
//!   the link, and the host does nothing but wait. Only parameters that were never preloaded
//!   take the host path (split and gathered on the host, the batch additions on the host, the
//!   tail MSMs streamed).
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
//! freed nor reused, and a query slice at the same address is the same, immutable, data
//! (`resident`: the resident and mapped queries and their lookups).
//!
//! Device memory: one cuzk-vram arena per device, allocated once when the backend (or its
//! workers) is made. Resident bases are named resident regions of it; a partition's buffers
//! come from the reservation the interlock policy grants before its device stages (`memory`).
//! The NTT's twiddle and scaling tables, made once per domain size, are named resident regions
//! too (`tables`), one set per device that all its workers share: no device memory is allocated
//! outside the arena ([`ARENA_MARGIN`] is left to the driver).

mod memory;
mod products;
mod resident;
mod tables;

use std::sync::{Arc, Mutex};

use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::{alloc_in, Device, DeviceBuffer, GpuError, PinnedBuffer, Stream};
use cuzk_groth16::{Parameters, Points};
use cuzk_msm::gpu::{Bases, GpuCurve, GpuMsm, GpuMsmError, ScalarForm, Scalars};
use cuzk_msm::{Selection, G1, G2};
use cuzk_ntt::gpu::{GpuNtt, GpuNttError, NttConfig};
use cuzk_ntt::Order;
use cuzk_pce::gpu::{GpuProducts, GpuProductsError};
use group::Group;

pub use cuzk_interlock::PolicyKind;
use cuzk_interlock::{Demand, InterlockError, Policy};
use cuzk_vram::{Arena, ArenaConfig, DeviceBacking, VramError};

use crate::backend::{host_query_sums, Backend, DevicePhase, PartitionShape};
use crate::input::Evaluations;
use crate::query::{Query, QuerySums, Stages, Witness};
use crate::stage::Stage;
use crate::{JobContext, PipelineError};
use memory::{PartitionMemory, PhaseGuard, PhaseWorkspace, Slot};
use products::ResidentCircuit;
use resident::{Resident, ResidentQuery};
use tables::TableRegions;

/// Device memory the arena leaves to the driver when it is sized from the free memory: the
/// driver's own (the context, the loaded modules) and the kernels' stacks and local memory.
/// cuzk allocates nothing outside the arena (the NTT's tables are resident regions of it).
pub const ARENA_MARGIN: u64 = 1 << 30;

/// How the GPU backend uses its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// The most device memory resident parameters may take, in bytes; `None`: half of the
    /// device's memory. Whatever the budget, a parameter set leaves room in the arena for one
    /// of its partitions ([`GpuBackend::partition_bound`]: 44 GiB at 2^27), and the queries
    /// that do not fit beside it stream.
    pub resident_budget: Option<u64>,
    /// The size of the device's arena (resident parameters and partitions' reservations), in
    /// bytes; `None`: the device's free memory less [`ARENA_MARGIN`].
    pub arena_bytes: Option<u64>,
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
    /// The interlock policy refused (a partition larger than the device's working memory can
    /// ever hold is `InterlockError::Vram(VramError::Unsatisfiable { .. })`).
    #[error("interlock: {0}")]
    Policy(#[source] InterlockError),
    /// The device's arena could not be made, or refused a resident region.
    #[error("{what}: {source}")]
    Arena {
        what: &'static str,
        #[source]
        source: VramError,
    },
    /// An MSM or batch addition on the device failed.
    #[error("{what}: {source}")]
    Msm {
        what: &'static str,
        #[source]
        source: GpuMsmError,
    },
    /// A pre-compiled circuit's products on the device failed.
    #[error("{what}: {source}")]
    Products {
        what: &'static str,
        #[source]
        source: GpuProductsError,
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

    fn arena(what: &'static str) -> impl FnOnce(VramError) -> Self {
        move |source| Self::Arena { what, source }
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

/// Bytes of each pinned staging buffer of the uploads of a, b, c.
const STAGE_BYTES: usize = 32 << 20;

/// What the workers of one device share: its arena, the resident parameters in it, the NTT
/// (kernels and tables, the tables resident regions of the arena), and the interlock policy that
/// says when each may run its device stages (reservations of the arena, decided on the host).
struct DeviceShare {
    budget: u64,
    arena: Arena<DeviceBacking>,
    resident: Mutex<Vec<Arc<Resident>>>,
    /// Pre-compiled circuits' matrices resident on the device, one per topology.
    circuits: Mutex<Vec<Arc<ResidentCircuit>>>,
    ntt: GpuNtt,
    products: GpuProducts,
    tables: Arc<TableRegions>,
    policy: Box<dyn Policy<DeviceBacking>>,
}

impl DeviceShare {
    /// The device's arena (one allocation) and `policy` over it.
    fn new(
        device: &Device,
        config: &GpuConfig,
        policy: PolicyKind,
    ) -> Result<Self, GpuBackendError> {
        let backing = DeviceBacking::new(device.clone())
            .map_err(GpuBackendError::arena("opening the device's memory"))?;
        let size = match config.arena_bytes {
            Some(bytes) => ArenaConfig::with_bytes(bytes),
            None => ArenaConfig::free_less_margin(ARENA_MARGIN),
        };
        let arena = Arena::new(backing, size)
            .map_err(GpuBackendError::arena("allocating the device's arena"))?;
        let tables = Arc::new(TableRegions::new(arena.clone()));
        let ntt = GpuNtt::with_table_memory(device, NttConfig::default(), tables.clone())
            .map_err(GpuBackendError::ntt("loading the NTT kernels"))?;
        let products = GpuProducts::new(device).map_err(GpuBackendError::gpu(
            "loading the pre-compiled circuits' kernel",
        ))?;
        Ok(Self {
            budget: resident_budget(device, config),
            policy: policy.build(arena.clone()),
            arena,
            resident: Mutex::new(Vec::new()),
            circuits: Mutex::new(Vec::new()),
            ntt,
            products,
            tables,
        })
    }
}

/// The heavy stages on one CUDA device, for one worker: its own streams (so several workers'
/// kernels and copies can overlap), the device's resident parameters, NTT tables and policy
/// shared.
pub struct GpuBackend {
    name: String,
    msm: GpuMsm,
    share: Arc<DeviceShare>,
    /// Two pinned buffers that uploads from pageable memory alternate between, made on first use.
    staging: Mutex<Vec<PinnedBuffer<FrLimbs>>>,
    /// The memory of the partition whose device phase is open, if any.
    phase: Slot,
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

    /// Loads the kernels on an open device, for a single worker: the device's arena and the
    /// default policy (`VramBudget`) as for [`GpuBackend::workers`], so that its partitions'
    /// memory comes from the arena too.
    pub fn on_device(
        device: &Device,
        ordinal: usize,
        config: GpuConfig,
    ) -> Result<Self, GpuBackendError> {
        let share = Arc::new(DeviceShare::new(device, &config, PolicyKind::VramBudget)?);
        Self::with_share(device, ordinal, share)
    }

    /// `workers` backends on device `ordinal` that share its arena and resident parameters and
    /// take turns under `policy` (one per worker thread).
    pub fn workers(
        ordinal: usize,
        config: GpuConfig,
        workers: usize,
        policy: PolicyKind,
    ) -> Result<Vec<Self>, GpuBackendError> {
        let device = Device::open(ordinal).map_err(GpuBackendError::gpu("opening the device"))?;
        let share = Arc::new(DeviceShare::new(&device, &config, policy)?);
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
        Ok(Self {
            name: format!("gpu{ordinal}"),
            msm,
            share,
            staging: Mutex::new(Vec::new()),
            phase: Slot::default(),
        })
    }

    /// The name of the interlock policy the device's workers share.
    pub fn policy(&self) -> &'static str {
        self.share.policy.name()
    }

    /// The device's arena: resident parameters and partitions' reservations.
    pub fn arena(&self) -> &Arena<DeviceBacking> {
        &self.share.arena
    }

    /// What a partition of `shape` reserves on the device: a, b, c and h (or the values and one
    /// query's split, if more) staged, the largest workspace of one of its MSMs or batch
    /// additions to compute (see `memory::demand`).
    pub fn demand(&self, shape: PartitionShape) -> Demand {
        memory::demand(&self.msm, shape, self.share.arena.granule())
    }

    /// The most one partition proving with `params` can reserve on this device (its shape's
    /// bound, [`PartitionShape::bound`]), staged and compute parts together.
    pub fn partition_bound(&self, params: &Parameters) -> u64 {
        let demand = self.demand(PartitionShape::bound(params));
        demand.stage_bytes + demand.compute_bytes
    }

    /// Arena bytes of the NTT's tables that partitions proving with `params` need besides the
    /// optional full twiddle tables (resident regions, made by the device's first such
    /// partition): residency leaves room for them beside [`GpuBackend::partition_bound`].
    pub fn ntt_table_bytes(&self, params: &Parameters) -> u64 {
        tables::needed_bytes(
            PartitionShape::bound(params).domain,
            self.share.arena.granule(),
        )
    }

    /// Arena bytes that residency may still take: what is left beside every resident region,
    /// one partition of `shape` ([`GpuBackend::demand`], staged and compute parts together) and
    /// the NTT tables of its domain.
    fn room_beside_a_partition(&self, shape: PartitionShape) -> u64 {
        let arena = &self.share.arena;
        let demand = self.demand(shape);
        arena.capacity().saturating_sub(
            arena.stats().resident
                + tables::needed_bytes(shape.domain, arena.granule())
                + demand.stage_bytes
                + demand.compute_bytes,
        )
    }

    /// Where the current partition's buffers come from: its reservation while a device phase is
    /// open, else the stream's pool (a stage called outside a phase).
    fn workspace(&self) -> PhaseWorkspace {
        PhaseWorkspace(self.phase.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The device.
    pub fn gpu(&self) -> &Device {
        self.msm.device()
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

    /// The partition's values, input ‖ aux, uploaded through the pinned staging buffers into
    /// one buffer of its reservation: every query's split reads them, and a pre-compiled
    /// circuit's products.
    fn upload_values(
        &self,
        input: &[Scalar],
        aux: &[Scalar],
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let err = on(&self.name);
        let stream = self.msm.stream();
        let memory = self.workspace();
        let workspace = memory.get();
        let n = input.len() + aux.len();
        // At least one element (an empty buffer has no address), cut to the values.
        let mut values = alloc_in::<FrLimbs>(workspace, stream, n.max(1))
            .map_err(GpuBackendError::gpu("allocating the values"))
            .map_err(&err)?;
        self.upload_staged(stream, scalars_as_limbs(input), &mut values, 0)
            .map_err(&err)?;
        self.upload_staged(stream, scalars_as_limbs(aux), &mut values, input.len())
            .map_err(&err)?;
        values.truncate(n);
        Ok(values)
    }

    /// One query on the device, its bases resident or mapped: split from the `values` on the device
    /// (`split_vectors`; its others' bases are gathered chunk by chunk inside the tail MSM, so
    /// `prep_msm` takes no time here), the ones batch-added over the split's indices
    /// (`batch_add`), the tail MSM over the others (`tail_msm`); the split is freed before the
    /// next query's.
    fn device_query(
        &self,
        query: Query,
        bases: &ResidentQuery,
        witness: &Witness<'_>,
        values: &DeviceBuffer<FrLimbs>,
        stages: &mut Stages<'_>,
        sums: &mut QuerySums,
    ) -> Result<(), PipelineError> {
        let err = on(&self.name);
        let memory = self.workspace();
        let workspace = memory.get();
        let split = stages.run(Stage::SplitVectors, || {
            let members = query.members(witness);
            self.timed(|| {
                self.msm
                    .split_in(workspace, values, &members)
                    .map_err(GpuBackendError::msm("splitting a query"))
                    .map_err(&err)
            })
        })?;
        let totals = split.totals();
        let (g1_ones, g2_ones) = stages.run(Stage::BatchAdd, || {
            if totals.ones == 0 {
                return Ok((G1Projective::identity(), G2Projective::identity()));
            }
            self.timed(|| {
                let g1 = self
                    .msm
                    .batch_add_ones_in::<G1>(workspace, bases.g1(), &split)
                    .map_err(GpuBackendError::msm("batch addition"))
                    .map_err(&err)?;
                let g2 = match bases.g2() {
                    Some(g2) => self
                        .msm
                        .batch_add_ones_in::<G2>(workspace, g2, &split)
                        .map_err(GpuBackendError::msm("batch addition"))
                        .map_err(&err)?,
                    None => G2Projective::identity(),
                };
                Ok((g1, g2))
            })
        })?;
        let (g1_tail, g2_tail) = stages.run(Stage::TailMsm, || {
            if totals.others == 0 {
                return Ok((G1Projective::identity(), G2Projective::identity()));
            }
            let scalars = Scalars::Device(split.other_scalars(), ScalarForm::Montgomery);
            self.timed(|| {
                let g1 = self.msm_untimed::<G1>(
                    Bases::Gathered {
                        bases: bases.g1(),
                        split: &split,
                    },
                    scalars,
                    totals.others,
                )?;
                let g2 = match bases.g2() {
                    Some(g2) => self.msm_untimed::<G2>(
                        Bases::Gathered {
                            bases: g2,
                            split: &split,
                        },
                        scalars,
                        totals.others,
                    )?,
                    None => G2Projective::identity(),
                };
                Ok((g1, g2))
            })
        })?;
        let g1 = g1_ones + g1_tail;
        match query {
            Query::L => sums.l += g1,
            Query::A => sums.a += g1,
            Query::B => {
                sums.b1 += g1;
                sums.b2 += g2_ones + g2_tail;
            }
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
        let ns = (f64::from(ms) * 1e6).round() as u64;
        tracing::Span::current().record("gpu_ns", ns);
        crate::stage::record_device_time(std::time::Duration::from_nanos(ns));
        Ok(out)
    }

    /// `ntt_h`'s device work on a ‖ b ‖ c, queued on the worker's stream ([`GpuBackend::timed`]
    /// waits for it to finish, so that the stage's time is the device's).
    fn h_on_device(
        &self,
        domain: &Domain,
        mut abc: DeviceBuffer<FrLimbs>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        let n = domain.n();
        let err = on(&self.name);
        let stream = self.msm.stream();
        let memory = self.workspace();
        let workspace = memory.get();
        // Evaluations → coefficients (bit-reversed), then → evaluations on the coset (natural):
        // the CPU backend's order of operations, on the three vectors at once.
        self.share
            .ntt
            .inverse_device(stream, &mut abc, domain, Order::Natural, Order::BitReversed)
            .map_err(GpuBackendError::ntt("inverse NTT of a, b, c"))
            .map_err(&err)?;
        self.share
            .ntt
            .coset_forward_device(stream, &mut abc, domain, Order::BitReversed, Order::Natural)
            .map_err(GpuBackendError::ntt("coset NTT of a, b, c"))
            .map_err(&err)?;
        let mut h = alloc_in::<FrLimbs>(workspace, stream, n)
            .map_err(GpuBackendError::gpu("allocating h"))
            .map_err(&err)?;
        self.share
            .ntt
            .h_pointwise(stream, &abc, &mut h, domain)
            .map_err(GpuBackendError::ntt("(a·b − c)/Z"))
            .map_err(&err)?;
        drop(abc);
        self.share
            .ntt
            .coset_inverse_device(stream, &mut h, domain, Order::Natural, Order::Natural)
            .map_err(GpuBackendError::ntt("coset inverse NTT of h"))
            .map_err(&err)?;
        // The last coefficient has no parameter point (it is zero for a satisfied circuit).
        h.truncate(n - 1);
        Ok(h)
    }

    /// A tail MSM: host bases and scalars of the same length, streamed to the device.
    fn host_msm<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        scalars: &[Scalar],
    ) -> Result<C::Projective, PipelineError> {
        if bases.len() != scalars.len() {
            return Err(cuzk_msm::MsmError::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            }
            .into());
        }
        self.msm::<C>(Bases::Host(bases), Scalars::Host(scalars), bases.len())
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
        self.timed(|| self.msm_untimed(bases, scalars, n))
    }

    /// [`GpuBackend::msm`] without the timing events, for a stage that times several calls.
    fn msm_untimed<C: GpuCurve>(
        &self,
        bases: Bases<'_, C>,
        scalars: Scalars<'_>,
        n: usize,
    ) -> Result<C::Projective, PipelineError> {
        if n == 0 {
            return Ok(C::Projective::identity());
        }
        let memory = self.workspace();
        let workspace = memory.get();
        self.msm
            .msm_in::<C>(workspace, bases, scalars)
            .map_err(GpuBackendError::msm("msm"))
            .map_err(on(&self.name))
    }

    /// `Σ bases[i]` over `indices` on the device, the bases resident.
    fn batch_add<C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::AffineLimbs>,
        indices: &[u32],
    ) -> Result<C::Projective, PipelineError> {
        let memory = self.workspace();
        let workspace = memory.get();
        self.timed(|| {
            self.msm
                .batch_add_in::<C>(workspace, bases, Selection::Indices(indices))
                .map_err(GpuBackendError::msm("batch addition"))
                .map_err(on(&self.name))
        })
    }
}

impl Backend for GpuBackend {
    type Abc = DeviceBuffer<FrLimbs>;
    type H = DeviceBuffer<FrLimbs>;

    fn device(&self) -> &str {
        &self.name
    }

    fn device_phase(
        &self,
        shape: PartitionShape,
        ctx: JobContext,
        partition: usize,
    ) -> Result<DevicePhase, PipelineError> {
        let policy = &self.share.policy;
        // The wait carries the partition's demand, so that a recorded run can be replayed by
        // the interlock simulator (`cargo xtask bench interlock --replay`).
        let demand = self.demand(shape);
        let (stage_bytes, compute_bytes) = (demand.stage_bytes, demand.compute_bytes);
        // The NTT's tables made from now on (on this device, by any worker) leave room for it.
        self.share.tables.keep_room_for(stage_bytes + compute_bytes);
        let partition = partition as u64;
        let wait = if policy.name() == PolicyKind::VramBudget.name() {
            tracing::info_span!("vram_wait", job = ctx.job, partition, worker = ctx.worker, device = %self.name, stage_bytes, compute_bytes)
        } else {
            tracing::info_span!("lock_wait", job = ctx.job, partition, worker = ctx.worker, device = %self.name, stage_bytes, compute_bytes)
        };
        let entered = wait.enter();
        let refused = |e: InterlockError| on(&self.name)(GpuBackendError::Policy(e));
        let staged = policy.stage(demand).map_err(refused)?.finish();
        let compute = policy.compute(staged).map_err(refused)?;
        drop(entered);
        // The stages allocate from the permit's reservation; closing the phase finishes the
        // permit after a fence on the worker's stream (`memory::PartitionMemory`).
        let memory = PartitionMemory::new(compute, self.msm.stream().clone());
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(memory));
        Ok(DevicePhase::held(PhaseGuard {
            slot: self.phase.clone(),
        }))
    }

    /// The queries whose bases are resident or mapped are split on the device, from the values
    /// uploaded once ([`GpuBackend::device_query`]); those of parameters never preloaded take
    /// the host path.
    fn query_sums(
        &self,
        params: &Parameters,
        witness: &Witness<'_>,
        stages: &mut Stages<'_>,
    ) -> Result<QuerySums, PipelineError> {
        let mut sums = QuerySums::default();
        let (resident, host): (Vec<_>, Vec<_>) = Query::ALL
            .into_iter()
            .map(|q| (q, self.resident_query(params, q)))
            .partition(|(_, bases)| bases.is_some());
        if !host.is_empty() {
            let host: Vec<Query> = host.into_iter().map(|(q, _)| q).collect();
            host_query_sums(self, params, witness, &host, stages, &mut sums)?;
        }
        if resident.is_empty() {
            return Ok(sums);
        }
        let values = stages.run(Stage::SplitVectors, || {
            self.timed(|| self.upload_values(witness.input, witness.aux))
        })?;
        for (query, bases) in resident {
            let bases = bases.expect("partitioned on residency");
            self.device_query(query, &bases, witness, &values, stages, &mut sums)?;
        }
        // A pre-compiled circuit's products read them next; the partition's memory frees them
        // at the latest when its phase closes.
        if let Some(memory) = &self.workspace().0 {
            memory.keep_values(values);
        }
        Ok(sums)
    }

    fn products(
        &self,
        domain: &Domain,
        evaluations: Evaluations<'_>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        self.products_on_device(domain, evaluations)
    }

    fn ntt_h(
        &self,
        domain: &Domain,
        abc: DeviceBuffer<FrLimbs>,
    ) -> Result<DeviceBuffer<FrLimbs>, PipelineError> {
        if abc.len() != 3 * domain.n() {
            return Err(cuzk_ntt::NttError::LengthMismatch {
                expected: 3 * domain.n(),
                got: abc.len(),
            }
            .into());
        }
        self.timed(|| self.h_on_device(domain, abc))
    }

    fn msm_h(
        &self,
        bases: &Points<G1Affine>,
        h: DeviceBuffer<FrLimbs>,
    ) -> Result<G1Projective, PipelineError> {
        let scalars = Scalars::Device(&h, ScalarForm::Montgomery);
        match self.resident_g1(bases.id(), false) {
            Some((set, i)) => {
                self.msm::<G1>(Bases::Device(set.g1[i].bases.buffer()), scalars, h.len())
            }
            None => self.msm::<G1>(Bases::Host(&bases.host()?), scalars, h.len()),
        }
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, PipelineError> {
        self.host_msm::<G1>(bases, scalars)
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<G2Projective, PipelineError> {
        self.host_msm::<G2>(bases, scalars)
    }

    fn batch_add_g1(
        &self,
        bases: &Points<G1Affine>,
        indices: &[u32],
    ) -> Result<G1Projective, PipelineError> {
        match self.resident_g1(bases.id(), false) {
            Some((set, i)) if !indices.is_empty() => {
                self.batch_add::<G1>(set.g1[i].bases.buffer(), indices)
            }
            _ => Ok(cuzk_msm::batch_add::<G1>(
                &bases.host()?,
                Selection::Indices(indices),
            )?),
        }
    }

    fn batch_add_g2(
        &self,
        bases: &Points<G2Affine>,
        indices: &[u32],
    ) -> Result<G2Projective, PipelineError> {
        match self.resident_g2(bases.id(), false) {
            Some((set, i)) if !indices.is_empty() => {
                self.batch_add::<G2>(set.g2[i].bases.buffer(), indices)
            }
            _ => Ok(cuzk_msm::batch_add::<G2>(
                &bases.host()?,
                Selection::Indices(indices),
            )?),
        }
    }
}
