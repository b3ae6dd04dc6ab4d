//! The GPU backend (feature `cuda`): the heavy stages of a partition on one CUDA device.
//!
//! [`GpuBackend`] runs cuzk-ntt's and cuzk-msm's kernels on one device, every call on the MSM's
//! stream, so consecutive operations are ordered without waiting on the host:
//!
//! - `ntt_h`: `a`, `b`, `c` go up once, into one buffer of three vectors; the inverse NTTs and
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
//! Every result is the CPU backend's, bit for bit (exact group arithmetic; the tests of
//! `tests/gpu.rs` compare whole proofs).
//!
//! Residency is keyed by the host memory of the parameters: [`GpuBackend::preload`] takes an
//! `Arc<Parameters>` and holds it, so while its bases are resident that memory can be neither
//! freed nor reused, and a query slice at the same address is the same, immutable, data.

use std::sync::{Arc, Mutex};

use cuzk_field::layout::{scalars_as_limbs, FrLimbs, G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{Domain, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_gpu::{Device, DeviceBuffer, GpuError};
use cuzk_groth16::Parameters;
use cuzk_msm::gpu::{Bases, GpuCurve, GpuMsm, GpuMsmError, ScalarForm, Scalars};
use cuzk_msm::{Selection, G1, G2};
use cuzk_ntt::gpu::{GpuNtt, GpuNttError};
use cuzk_ntt::Order;
use group::Group;

use crate::backend::Backend;
use crate::PipelineError;

/// How the GPU backend uses its device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// The most device memory resident parameters may take, in bytes; `None`: half of the
    /// device's memory, leaving the rest to a partition's working set (the NTT's 4·n scalars
    /// and the MSM's workspace: about 18 GiB at 2^27).
    pub resident_budget: Option<u64>,
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

/// The heavy stages on one CUDA device.
pub struct GpuBackend {
    name: String,
    msm: GpuMsm,
    ntt: GpuNtt,
    budget: u64,
    resident: Mutex<Vec<Arc<Resident>>>,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBackend")
            .field("device", &self.name)
            .field("budget", &self.budget)
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

    /// Loads the kernels on an open device.
    pub fn on_device(
        device: &Device,
        ordinal: usize,
        config: GpuConfig,
    ) -> Result<Self, GpuBackendError> {
        let msm = GpuMsm::new(device).map_err(GpuBackendError::msm("loading the MSM kernels"))?;
        let ntt = GpuNtt::new(device).map_err(GpuBackendError::ntt("loading the NTT kernels"))?;
        let budget = config
            .resident_budget
            .unwrap_or(device.info().total_memory as u64 / 2);
        Ok(Self {
            name: format!("gpu{ordinal}"),
            msm,
            ntt,
            budget,
            resident: Mutex::new(Vec::new()),
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Device {
        self.msm.device()
    }

    /// Device bytes taken by resident parameters.
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
        let mut room = self.budget.saturating_sub(self.resident_bytes());
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
        self.resident.lock().unwrap_or_else(|e| e.into_inner())
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
        self.msm
            .msm::<C>(bases, scalars)
            .map_err(GpuBackendError::msm("msm"))
            .map_err(on(&self.name))
    }
}

impl Backend for GpuBackend {
    type H = DeviceBuffer<FrLimbs>;

    fn device(&self) -> &str {
        &self.name
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
        let err = on(&self.name);
        let stream = self.msm.stream();
        let mut abc = stream
            .alloc::<FrLimbs>(3 * n)
            .map_err(GpuBackendError::gpu("allocating a, b, c"))
            .map_err(&err)?;
        for (i, v) in [a, b, c].into_iter().enumerate() {
            stream
                .copy_to_device_at(scalars_as_limbs(&v), &mut abc, i * n)
                .map_err(GpuBackendError::gpu("uploading a, b, c"))
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
        // The stage ends when the device is done with it, so that its time is the device's.
        stream
            .synchronize()
            .map_err(GpuBackendError::gpu("ntt_h"))
            .map_err(&err)?;
        Ok(h)
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
            Some((set, i)) if !indices.is_empty() => self
                .msm
                .batch_add::<G1>(&set.g1[i].bases, Selection::Indices(indices))
                .map_err(GpuBackendError::msm("batch addition"))
                .map_err(on(&self.name)),
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
            Some((set, i)) if !indices.is_empty() => self
                .msm
                .batch_add::<G2>(&set.g2[i].bases, Selection::Indices(indices))
                .map_err(GpuBackendError::msm("batch addition"))
                .map_err(on(&self.name)),
            _ => Ok(cuzk_msm::batch_add::<G2>(
                bases,
                Selection::Indices(indices),
            )?),
        }
    }
}
