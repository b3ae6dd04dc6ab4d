//! Parameters on the device: each preloaded set's queries resident in named regions of the
//! device's arena, or, where they do not fit beside a partition, their host vectors mapped for
//! the kernels to read in place (`Device::map_host`), and the lookups the stages make by the
//! host slice a query came from.

use std::sync::Arc;

use cuzk_field::layout::{G1AffineLimbs, G2AffineLimbs};
use cuzk_field::{G1Affine, G2Affine};
use cuzk_gpu::{DeviceBuffer, MappedHost, Stream};
use cuzk_groth16::Parameters;
use cuzk_msm::gpu::GpuCurve;
use cuzk_msm::{G1, G2};
use cuzk_vram::VramError;

use super::{on, GpuBackend, GpuBackendError};
use crate::backend::PartitionShape;
use crate::query::Query;
use crate::PipelineError;

/// One query's bases as the device reads them: copied into its memory (resident), or the host
/// slice itself mapped for the kernels to read over the link (`mapped`, for queries that do not
/// fit: see [`GpuBackend::preload`]).
pub(super) struct QueryBases<L> {
    /// Address and length of the host slice the bases were copied from (or are mapped from).
    host: (usize, usize),
    pub(super) bases: BasesMemory<L>,
}

/// Where a query's bases are for the device.
pub(super) enum BasesMemory<L> {
    /// Copied into a resident region of the arena.
    Resident(DeviceBuffer<L>),
    /// The host vector, mapped.
    Mapped(MappedHost<L>),
}

impl<L> BasesMemory<L> {
    pub(super) fn buffer(&self) -> &DeviceBuffer<L> {
        match self {
            BasesMemory::Resident(b) => b,
            BasesMemory::Mapped(m) => m,
        }
    }

    fn is_mapped(&self) -> bool {
        matches!(self, BasesMemory::Mapped(_))
    }
}

impl<L> QueryBases<L> {
    fn is<T>(&self, host: &[T]) -> bool {
        self.host == (host.as_ptr() as usize, host.len())
    }
}

/// One preloaded parameter set: the host parameters (held, so their memory stays put and
/// unchanged while mapped), the queries that fitted on the device and those mapped from host
/// memory.
pub(super) struct Resident {
    params: Arc<Parameters>,
    pub(super) g1: Vec<QueryBases<G1AffineLimbs>>,
    pub(super) g2: Vec<QueryBases<G2AffineLimbs>>,
    /// Device bytes of the resident queries.
    bytes: u64,
    /// Host bytes of the mapped queries.
    mapped_bytes: u64,
}

/// A query's bases on the device, resident or mapped: G1 (L, A or B₁) and, for B, B₂; each the
/// set that holds it and the query's index there (the set's `Arc` keeps the buffer alive).
pub(super) struct ResidentQuery {
    g1: (Arc<Resident>, usize),
    g2: Option<(Arc<Resident>, usize)>,
}

impl ResidentQuery {
    pub(super) fn g1(&self) -> &DeviceBuffer<G1AffineLimbs> {
        self.g1.0.g1[self.g1.1].bases.buffer()
    }

    pub(super) fn g2(&self) -> Option<&DeviceBuffer<G2AffineLimbs>> {
        self.g2.as_ref().map(|(set, i)| set.g2[*i].bases.buffer())
    }
}

impl GpuBackend {
    /// Device bytes taken by resident parameters (the device's, whichever worker made them).
    pub fn resident_bytes(&self) -> u64 {
        self.resident_sets().iter().map(|r| r.bytes).sum()
    }

    /// Makes `params`' bases resident on the device, as many queries as the budget (and the
    /// arena's free memory) leaves room for, largest first (H, L, A, B₁, B₂): later proofs with
    /// these parameters read them there. Each query is a named resident region of the device's
    /// arena, so partitions' reservations see the room it takes. Residency never takes the room
    /// one partition of these parameters needs ([`GpuBackend::partition_bound`]) and the NTT's
    /// tables ([`GpuBackend::ntt_table_bytes`]): on a card too small for both, the queries over
    /// the values that do not fit (L, A, B₁, B₂) are mapped from host memory for the device to
    /// read in place ([`GpuBackend::mapped_bytes`]; pinning their pages takes a few seconds per
    /// ten gigabytes, once), and `h` streams, instead of every partition being refused. Returns
    /// the bytes made resident (0 when they already were). Holds `params` until
    /// [`GpuBackend::evict`], which unmaps them too.
    pub fn preload(&self, params: &Arc<Parameters>) -> Result<u64, PipelineError> {
        if self.find(params).is_some() {
            return Ok(0);
        }
        let resident = self.resident_bytes();
        // Every resident region (other parameters' bases, the NTT's tables made so far) and the
        // NTT's tables for these parameters' partitions, counted again if already made.
        let beside_a_partition = self.room_beside_a_partition(PartitionShape::bound(params));
        let mut room = self
            .share
            .budget
            .saturating_sub(resident)
            .min(beside_a_partition);
        let mut g1 = Vec::new();
        let mut g2 = Vec::new();
        let mut bytes = 0;
        let stream = self.msm.stream();
        let set = Arc::as_ptr(params) as usize;
        for (i, query) in [&params.h, &params.l, &params.a, &params.b_g1]
            .into_iter()
            .enumerate()
        {
            let need = (query.len() * std::mem::size_of::<G1AffineLimbs>()) as u64;
            if query.is_empty() || need > room {
                continue;
            }
            let name = format!("{set:#x}/g1/{i}");
            let limbs = G1::affines_as_limbs(query);
            let Some(bases) = self.resident_region(stream, &name, limbs)? else {
                continue;
            };
            g1.push(QueryBases {
                host: (query.as_ptr() as usize, query.len()),
                bases: BasesMemory::Resident(bases),
            });
            room -= need;
            bytes += need;
        }
        let need = (params.b_g2.len() * std::mem::size_of::<G2AffineLimbs>()) as u64;
        if !params.b_g2.is_empty() && need <= room {
            let name = format!("{set:#x}/g2/0");
            let limbs = G2::affines_as_limbs(&params.b_g2);
            if let Some(bases) = self.resident_region(stream, &name, limbs)? {
                g2.push(QueryBases {
                    host: (params.b_g2.as_ptr() as usize, params.b_g2.len()),
                    bases: BasesMemory::Resident(bases),
                });
                bytes += need;
            }
        }
        stream
            .synchronize()
            .map_err(GpuBackendError::gpu("uploading bases"))
            .map_err(on(&self.name))?;
        // The queries over the values that did not fit are mapped: their split, batch addition
        // and tail MSM still run on the device, reading the points they need over the link.
        let mut mapped_bytes = 0;
        for query in [&params.l, &params.a, &params.b_g1] {
            if query.is_empty() || g1.iter().any(|q| q.is(query.as_slice())) {
                continue;
            }
            if let Some(bases) = self.mapped::<G1AffineLimbs, _>(query) {
                mapped_bytes += bases.bases.buffer().size_bytes() as u64;
                g1.push(bases);
            }
        }
        if !params.b_g2.is_empty() && !g2.iter().any(|q| q.is(params.b_g2.as_slice())) {
            if let Some(bases) = self.mapped::<G2AffineLimbs, _>(&params.b_g2) {
                mapped_bytes += bases.bases.buffer().size_bytes() as u64;
                g2.push(bases);
            }
        }
        self.lock().push(Arc::new(Resident {
            params: params.clone(),
            g1,
            g2,
            bytes,
            mapped_bytes,
        }));
        Ok(bytes)
    }

    /// A query's host vector mapped for the device to read in place (its bases in the device
    /// layout `L`), or `None` where the driver refuses: the query then takes the host path,
    /// slower but with the same sums, and the refusal is logged.
    fn mapped<L: cuzk_gpu::DeviceCopy, A: Copy + Send + Sync + 'static>(
        &self,
        query: &Arc<Vec<A>>,
    ) -> Option<QueryBases<L>> {
        match self.gpu().map_host::<L, A>(query.clone()) {
            Ok(bases) => Some(QueryBases {
                host: (query.as_ptr() as usize, query.len()),
                bases: BasesMemory::Mapped(bases),
            }),
            Err(e) => {
                tracing::warn!(
                    device = %self.name,
                    error = %e,
                    bytes = std::mem::size_of_val(query.as_slice()),
                    "a query that is not resident could not be mapped: it is split and \
                     batch-added on the host"
                );
                None
            }
        }
    }

    /// Host bytes of parameters mapped for the device to read in place (the queries over the
    /// values that did not fit on it).
    pub fn mapped_bytes(&self) -> u64 {
        self.resident_sets().iter().map(|r| r.mapped_bytes).sum()
    }

    /// `limbs` copied (on `stream`) into a resident region of the arena called `name`, or `None`
    /// when the arena has no free range that large now (the query then streams).
    pub(super) fn resident_region<L: cuzk_gpu::DeviceCopy>(
        &self,
        stream: &Stream,
        name: &str,
        limbs: &[L],
    ) -> Result<Option<DeviceBuffer<L>>, PipelineError> {
        let bytes = std::mem::size_of_val(limbs) as u64;
        let region = match self.share.arena.alloc_resident(name, bytes) {
            Ok(region) => region,
            Err(VramError::OutOfMemory { .. }) => return Ok(None),
            Err(e) => {
                return Err(on(&self.name)(GpuBackendError::arena("a resident region")(
                    e,
                )));
            }
        };
        let mut bases = region
            .into_device_buffer::<L>()
            .map_err(GpuBackendError::arena("a resident region"))
            .map_err(on(&self.name))?;
        stream
            .copy_to_device(limbs, &mut bases)
            .map_err(GpuBackendError::gpu("uploading bases"))
            .map_err(on(&self.name))?;
        Ok(Some(bases))
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

    /// The resident set holding a G1 query copied from `host` (or, with `mapped`, also one
    /// mapped from it), if any. The set's `Arc` keeps the buffer alive while the caller uses it.
    pub(super) fn resident_g1(
        &self,
        host: &[G1Affine],
        mapped: bool,
    ) -> Option<(Arc<Resident>, usize)> {
        self.lock().iter().find_map(|r| {
            r.g1.iter()
                .position(|q| q.is(host) && (mapped || !q.bases.is_mapped()))
                .map(|i| (r.clone(), i))
        })
    }

    pub(super) fn resident_g2(
        &self,
        host: &[G2Affine],
        mapped: bool,
    ) -> Option<(Arc<Resident>, usize)> {
        self.lock().iter().find_map(|r| {
            r.g2.iter()
                .position(|q| q.is(host) && (mapped || !q.bases.is_mapped()))
                .map(|i| (r.clone(), i))
        })
    }

    /// The bases of `query` in `params`, if resident (for B, both B₁ and B₂).
    pub(super) fn resident_query(
        &self,
        params: &Parameters,
        query: Query,
    ) -> Option<ResidentQuery> {
        let g1 = match query {
            Query::L => &params.l,
            Query::A => &params.a,
            Query::B => &params.b_g1,
        };
        let g1 = self.resident_g1(g1, true)?;
        let g2 = match query {
            Query::B => Some(self.resident_g2(&params.b_g2, true)?),
            _ => None,
        };
        Some(ResidentQuery { g1, g2 })
    }
}
