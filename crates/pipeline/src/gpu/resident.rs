//! Parameters on the device: each preloaded set's queries resident in named regions of the
//! device's arena (copied from host memory, or block by block from the parameter file where
//! they are not decoded; a host copy that can be read again is released once the device has
//! one), or, where they do not fit beside a partition, their host vectors mapped for the
//! kernels to read in place (`Device::map_host`), and the lookups the stages make by a query's
//! identity (`Points::id`).

use std::sync::Arc;

use cuzk_field::layout::{G1AffineLimbs, G2AffineLimbs};
use cuzk_gpu::{DeviceBuffer, MappedHost, Stream};
use cuzk_groth16::{Parameters, Points, PointsId};
use cuzk_msm::gpu::GpuCurve;
use cuzk_msm::{G1, G2};
use cuzk_vram::VramError;

use super::{on, GpuBackend, GpuBackendError};
use crate::backend::PartitionShape;
use crate::query::Query;
use crate::PipelineError;

/// One query's bases as the device reads them: copied into its memory (resident), or the host
/// vector itself mapped for the kernels to read over the link (`mapped`, for queries that do not
/// fit: see [`GpuBackend::preload`]).
pub(super) struct QueryBases<L> {
    /// The query they are the bases of.
    id: PointsId,
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

/// Bytes of a query read at a time from its source to be made resident: large enough that the
/// decode or generation of a block keeps every core busy, small beside a query.
const UPLOAD_BLOCK_BYTES: usize = 256 << 20;

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
    /// ten gigabytes, once), and `h` streams, instead of every partition being refused. A
    /// resident query is copied from host memory where it is there, else block by block from
    /// its source (the parameter file), and its host copy is then released where it can be read
    /// again ([`Points::release`]): a host path that needs it later (a CPU fallback) decodes it
    /// anew. Returns the bytes made resident (0 when they already were). Holds `params` until
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
        for (i, query) in params.g1_queries().into_iter().enumerate() {
            let need = (query.len() * std::mem::size_of::<G1AffineLimbs>()) as u64;
            if query.is_empty() || need > room {
                continue;
            }
            let name = format!("{set:#x}/g1/{i}");
            let Some(bases) = self.resident_points::<G1>(stream, &name, query)? else {
                continue;
            };
            g1.push(QueryBases {
                id: query.id(),
                bases: BasesMemory::Resident(bases),
            });
            room -= need;
            bytes += need;
        }
        let need = (params.b_g2.len() * std::mem::size_of::<G2AffineLimbs>()) as u64;
        if !params.b_g2.is_empty() && need <= room {
            let name = format!("{set:#x}/g2/0");
            if let Some(bases) = self.resident_points::<G2>(stream, &name, &params.b_g2)? {
                g2.push(QueryBases {
                    id: params.b_g2.id(),
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
            if query.is_empty() || g1.iter().any(|q| q.id == query.id()) {
                continue;
            }
            if let Some(bases) = self.mapped::<G1AffineLimbs, _>(query)? {
                mapped_bytes += bases.bases.buffer().size_bytes() as u64;
                g1.push(bases);
            }
        }
        if !params.b_g2.is_empty() && !g2.iter().any(|q| q.id == params.b_g2.id()) {
            if let Some(bases) = self.mapped::<G2AffineLimbs, _>(&params.b_g2)? {
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
        // The device's copies are the ones the partitions read: the host's go.
        self.release_host_copies(params);
        Ok(bytes)
    }

    /// Drops the host copies of `params`' queries resident on this device, those that can be
    /// read again from their file or generator ([`Points::release`]); returns the bytes freed.
    /// Preloading does it; a host path that has read them since (a CPU fallback) leaves copies
    /// that this frees again.
    pub fn release_host_copies(&self, params: &Arc<Parameters>) -> u64 {
        let Some(set) = self.find(params) else {
            return 0;
        };
        let g1: u64 = params
            .g1_queries()
            .into_iter()
            .filter(|p| {
                set.g1
                    .iter()
                    .any(|q| q.id == p.id() && !q.bases.is_mapped())
            })
            .map(|p| p.release())
            .sum();
        let g2 = if set
            .g2
            .iter()
            .any(|q| q.id == params.b_g2.id() && !q.bases.is_mapped())
        {
            params.b_g2.release()
        } else {
            0
        };
        let freed = g1 + g2;
        if freed > 0 {
            tracing::info!(
                device = %self.name,
                bytes = freed,
                "host copies of the resident queries released"
            );
        }
        freed
    }

    /// `points` copied (on `stream`) into a resident region of the arena called `name`, or
    /// `None` when the arena has no free range that large now (the query then streams or is
    /// mapped). Points not in host memory are read block by block from their source (a mapped
    /// file, a generator) and copied as they come, so no whole decoded copy is ever made.
    fn resident_points<C: GpuCurve>(
        &self,
        stream: &Stream,
        name: &str,
        points: &Points<C::Affine>,
    ) -> Result<Option<DeviceBuffer<C::AffineLimbs>>, PipelineError>
    where
        C::AffineLimbs: cuzk_gpu::DeviceCopy,
        C::Affine: Copy + Send + Sync + 'static,
    {
        if let Some(held) = points.in_host() {
            return self.resident_region(stream, name, C::affines_as_limbs(&held));
        }
        let bytes = (points.len() * std::mem::size_of::<C::AffineLimbs>()) as u64;
        let Some(mut bases) = self.region::<C::AffineLimbs>(name, bytes)? else {
            return Ok(None);
        };
        let block = (UPLOAD_BLOCK_BYTES / std::mem::size_of::<C::Affine>()).max(1);
        for first in (0..points.len()).step_by(block) {
            let range = first..(first + block).min(points.len());
            let host = points.read(range).map_err(PipelineError::from)?;
            // Pageable memory: the driver has staged the block when the call returns, so it
            // may be dropped (and the next one read) while the copy finishes.
            stream
                .copy_to_device_at(C::affines_as_limbs(&host), &mut bases, first)
                .map_err(GpuBackendError::gpu("uploading bases"))
                .map_err(on(&self.name))?;
        }
        Ok(Some(bases))
    }

    /// A query's host vector (decoded first where it is not in host memory) mapped for the
    /// device to read in place (its bases in the device layout `L`), or `None` where the driver
    /// refuses: the query then takes the host path, slower but with the same sums, and the
    /// refusal is logged.
    fn mapped<L: cuzk_gpu::DeviceCopy, A: Copy + Send + Sync + 'static>(
        &self,
        query: &Points<A>,
    ) -> Result<Option<QueryBases<L>>, PipelineError> {
        let host = query.host().map_err(PipelineError::from)?;
        Ok(match self.gpu().map_host::<L, A>(host) {
            Ok(bases) => Some(QueryBases {
                id: query.id(),
                bases: BasesMemory::Mapped(bases),
            }),
            Err(e) => {
                tracing::warn!(
                    device = %self.name,
                    error = %e,
                    bytes = query.len() * std::mem::size_of::<A>(),
                    "a query that is not resident could not be mapped: it is split and \
                     batch-added on the host"
                );
                None
            }
        })
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
        let Some(mut bases) = self.region::<L>(name, std::mem::size_of_val(limbs) as u64)? else {
            return Ok(None);
        };
        stream
            .copy_to_device(limbs, &mut bases)
            .map_err(GpuBackendError::gpu("uploading bases"))
            .map_err(on(&self.name))?;
        Ok(Some(bases))
    }

    /// A resident region of the arena called `name`, `bytes` long, or `None` when the arena has
    /// no free range that large now.
    fn region<L: cuzk_gpu::DeviceCopy>(
        &self,
        name: &str,
        bytes: u64,
    ) -> Result<Option<DeviceBuffer<L>>, PipelineError> {
        let region = match self.share.arena.alloc_resident(name, bytes) {
            Ok(region) => region,
            Err(VramError::OutOfMemory { .. }) => return Ok(None),
            Err(e) => {
                return Err(on(&self.name)(GpuBackendError::arena("a resident region")(
                    e,
                )));
            }
        };
        region
            .into_device_buffer::<L>()
            .map(Some)
            .map_err(GpuBackendError::arena("a resident region"))
            .map_err(on(&self.name))
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

    /// The resident set holding a copy of the G1 query `id` (or, with `mapped`, also one mapped
    /// from its host vector), if any. The set's `Arc` keeps the buffer alive while the caller
    /// uses it.
    pub(super) fn resident_g1(&self, id: PointsId, mapped: bool) -> Option<(Arc<Resident>, usize)> {
        self.lock().iter().find_map(|r| {
            r.g1.iter()
                .position(|q| q.id == id && (mapped || !q.bases.is_mapped()))
                .map(|i| (r.clone(), i))
        })
    }

    pub(super) fn resident_g2(&self, id: PointsId, mapped: bool) -> Option<(Arc<Resident>, usize)> {
        self.lock().iter().find_map(|r| {
            r.g2.iter()
                .position(|q| q.id == id && (mapped || !q.bases.is_mapped()))
                .map(|i| (r.clone(), i))
        })
    }

    /// The bases of `query` in `params`, if resident (for B, both B₁ and B₂).
    pub(super) fn resident_query(
        &self,
        params: &Parameters,
        query: Query,
    ) -> Option<ResidentQuery> {
        let g1 = self.resident_g1(query.points(params).id(), true)?;
        let g2 = match query {
            Query::B => Some(self.resident_g2(params.b_g2.id(), true)?),
            _ => None,
        };
        Some(ResidentQuery { g1, g2 })
    }
}
