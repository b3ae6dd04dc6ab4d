//! A partition's device memory: the reservation the interlock policy grants before its device
//! stages, every buffer of the partition sub-allocated from it, and its release after a fence.
//!
//! [`GpuBackend::device_phase`](super::GpuBackend) asks the policy for the partition's
//! [`Demand`] (see [`demand`]) and parks the compute permit in the worker's slot as a
//! [`PartitionMemory`]; the stages find it there and allocate from its reservation (a
//! [`Workspace`]): the values and each query's split from `split_vectors` to `tail_msm`, `a`, `b`,
//! `c` and `h` in `ntt_h`, the scratch of every split, MSM and batch addition,
//! each buffer going back to the reservation when it drops. When the prover drops the phase, the
//! permit is finished with a fence recorded on the worker's stream, so the block returns to the
//! arena once the device has passed it, with no device-global call. None of this calls the
//! driver's allocator, nor do the NTT's tables (resident regions of the arena, `super::tables`):
//! proving allocates nothing, from the first partition on.

use std::sync::{Arc, Mutex};

use cuzk_field::layout::FrLimbs;
use cuzk_gpu::{DeviceBuffer, GpuError, Stream, StreamPool, Workspace};
use cuzk_interlock::{Compute, Demand};
use cuzk_msm::gpu::{
    batch_add_device_bytes, split_scratch_buffers, split_scratch_bytes, GpuMsm, Group,
    MAX_CALL_BUFFERS,
};
use cuzk_vram::{DeviceBacking, DeviceFence};

use crate::backend::PartitionShape;

/// Bytes of a scalar on the device.
const SCALAR_BYTES: u64 = 32;

/// What a partition of `shape` reserves on a device whose arena rounds every buffer up to
/// `granule` bytes, one scheme for what is really sub-allocated:
///
/// - staged: `a`, `b`, `c` (one buffer of `3·n` scalars) and `h` (`n`), which live together
///   through `ntt_h`, `h` on through `msm_h`; before them, from `split_vectors` to `tail_msm`,
///   the values (input ‖ aux, a scalar each) and one query's split at a time (4 bytes per one,
///   36 per other: at most 40 per base of the longest query) with the split's own scratch while
///   it runs; in `products`, the values beside `a`, `b`, `c` (and the check's word). The
///   largest of the three;
/// - compute: the largest workspace of one MSM or batch addition (`msm_h` over `n − 1` points,
///   resident or streamed; the tail MSMs, streamed or gathered from resident bases, which take
///   the same; the batch additions of the ones), each call's buffers going back to the
///   reservation when it returns (every call ends by waiting for its result), plus the granule
///   each of its at most [`MAX_CALL_BUFFERS`] buffers may round up by.
pub(crate) fn demand(msm: &GpuMsm, shape: PartitionShape, granule: u64) -> Demand {
    let round = |bytes: u64| bytes.div_ceil(granule) * granule;
    let n = shape.domain as u64;
    let abch = round(3 * n * SCALAR_BYTES) + round(n * SCALAR_BYTES);
    let longest = shape.ones as u64;
    let split = round(shape.values as u64 * SCALAR_BYTES)
        + 2 * round(4 * longest)
        + round(longest * SCALAR_BYTES)
        + split_scratch_bytes(shape.values) as u64
        + split_scratch_buffers(shape.values) as u64 * granule;
    // A pre-compiled circuit's products hold the values beside a, b, c (before h exists).
    let products =
        round(shape.values as u64 * SCALAR_BYTES) + round(3 * n * SCALAR_BYTES) + granule;
    let stage_bytes = abch.max(split).max(products);
    let h_points = shape.domain.saturating_sub(1);
    let sm = msm.device().info().sm_count;
    let largest = [
        msm.call_bytes(h_points, Group::G1, true),
        msm.call_bytes(h_points, Group::G1, false),
        msm.call_bytes(shape.tail_g1, Group::G1, false),
        msm.call_bytes(shape.tail_g2, Group::G2, false),
        batch_add_device_bytes(Group::G1, shape.ones, sm),
        batch_add_device_bytes(Group::G2, shape.ones, sm),
    ]
    .into_iter()
    .max()
    .unwrap_or(0) as u64;
    Demand {
        stage_bytes,
        compute_bytes: largest + MAX_CALL_BUFFERS as u64 * granule,
    }
}

/// A partition's compute permit, whose reservation its buffers come from, and the worker's
/// stream its device work is ordered on. Dropping it finishes the permit with a fence recorded
/// on that stream: the block returns to the arena once the device has passed it.
pub(crate) struct PartitionMemory {
    permit: Option<Compute<DeviceBacking>>,
    stream: Stream,
    /// The values the query splits uploaded, kept for a pre-compiled circuit's products.
    values: Mutex<Option<DeviceBuffer<FrLimbs>>>,
}

impl PartitionMemory {
    pub(crate) fn new(permit: Compute<DeviceBacking>, stream: Stream) -> Self {
        Self {
            permit: Some(permit),
            stream,
            values: Mutex::new(None),
        }
    }

    /// Keeps the partition's values (a buffer of this reservation) for a later stage.
    pub(crate) fn keep_values(&self, values: DeviceBuffer<FrLimbs>) {
        *self.values.lock().unwrap_or_else(|e| e.into_inner()) = Some(values);
    }

    /// The values kept, if any, handed over.
    pub(crate) fn take_values(&self) -> Option<DeviceBuffer<FrLimbs>> {
        self.values.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl std::fmt::Debug for PartitionMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let range = self.permit.as_ref().map(|p| p.reservation().range());
        f.debug_struct("PartitionMemory")
            .field("reservation", &range)
            .finish()
    }
}

impl Workspace for PartitionMemory {
    fn alloc_bytes(&self, stream: &Stream, bytes: usize) -> Result<DeviceBuffer<u8>, GpuError> {
        match &self.permit {
            Some(permit) => permit.reservation().alloc_bytes(stream, bytes),
            None => Err(GpuError::Workspace(
                "the partition's permit is finished".into(),
            )),
        }
    }
}

impl Drop for PartitionMemory {
    fn drop(&mut self) {
        // Buffers of the reservation go back to it before the permit is finished.
        drop(self.take_values());
        let Some(permit) = self.permit.take() else {
            return;
        };
        match DeviceFence::record(&self.stream) {
            Ok(fence) => permit.finish(Some(fence)),
            Err(_) => {
                // No fence: wait for the stream instead, so the block is not reused under
                // queued work. If even that fails the context is lost and runs nothing more.
                let _ = self.stream.synchronize();
                permit.finish(None);
            }
        }
    }
}

/// A worker's current partition memory, if a device phase is open.
pub(crate) type Slot = Arc<Mutex<Option<Arc<PartitionMemory>>>>;

/// The partition memory a stage allocates from, held for the stage: the open phase's
/// reservation, or none (a stage called outside a phase allocates from the stream's pool).
pub(crate) struct PhaseWorkspace(pub(crate) Option<Arc<PartitionMemory>>);

impl PhaseWorkspace {
    /// The workspace: the reservation, else the stream's pool.
    pub(crate) fn get(&self) -> &dyn Workspace {
        match &self.0 {
            Some(memory) => &**memory,
            None => &StreamPool,
        }
    }
}

/// Holds a device phase open: dropping it empties the worker's slot, which finishes the permit
/// (after the stages' own references, if any are still alive, have gone).
pub(crate) struct PhaseGuard {
    pub(crate) slot: Slot,
}

impl Drop for PhaseGuard {
    fn drop(&mut self) {
        let memory = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(memory);
    }
}
