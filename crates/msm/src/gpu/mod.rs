//! MSM and batch addition on the GPU, for G1 and G2 (feature `cuda`).
//!
//! [`GpuMsm`] loads the kernels of `kernels/msm/` on a device and runs
//!
//! - [`GpuMsm::msm`]: `Σ sᵢ·Pᵢ` by Pippenger's method with signed-digit windows, bases and
//!   scalars either resident in device memory ([`Bases::Device`], [`Scalars::Device`]) or
//!   streamed from host memory in chunks whose copies overlap the work on the previous chunk
//!   ([`Bases::Host`], [`Scalars::Host`]). Scalars are read in Montgomery form (blstrs
//!   [`Scalar`](cuzk_field::Scalar)s) or canonical, as the caller says ([`ScalarForm`]).
//! - [`GpuMsm::batch_add`]: the sum of the bases a bitmap or an index list selects.
//! - [`GpuMsm::split_in`]: a Groth16 query's split of its scalars into zero, one and other, from
//!   values in device memory and the query's membership bitmap ([`DeviceSplit`]); the ones'
//!   batch addition ([`GpuMsm::batch_add_ones_in`]) and the tail MSM over the others
//!   ([`Bases::Gathered`]: each chunk's bases gathered from resident ones) read it in place.
//!
//! The results are the CPU reference's ([`crate::naive_msm`], [`crate::reference::msm`],
//! [`crate::batch_add`]), point for point: every step is exact group arithmetic.
//!
//! # The algorithm
//!
//! A [`MsmPlan`], fixed before anything runs, picks the window width from the number of points
//! and the device's size, splits the points into chunks, and states the device memory it needs
//! ([`MsmPlan::device_bytes`]; [`device_bytes_needed`] bounds it for [`MsmPlan::new`]'s plans,
//! whose batch-affine scratch is the 6 GiB default, not the device-sized budget of
//! `GpuMsm::plan`, sorting in one pass or in two). Per chunk, the kernels cut each scalar
//! into signed digits, sort the (bucket, point) pairs by bucket with a counting sort (in two
//! passes through shared memory where a window's pairs exceed L2), and sum each
//! bucket's points with mixed additions into XYZZ buckets. The sums run over the sorted list in
//! equal segments per thread, so a bucket that many points fall into (a repeated scalar) costs no
//! more than any other and no two threads ever add into the same bucket; runs that cross a
//! segment's edge are passed on as partial sums and merged the same way. MSMs of 2^20 points
//! and more (per chunk, when streamed) sum the buckets the other way
//! ([`Accumulation::BatchAffine`], measured faster there): rounds of affine additions that
//! halve each bucket's list, every round's inversions shared by one batch inversion. After the
//! last chunk the buckets of each window are reduced to `Σ k·B_k` by running sums over segments,
//! level by level, and the host adds up the last few sums and combines the windows.
//! `kernels/msm/msm.cu` states each kernel's work and memory traffic.
//!
//! # Testing without a GPU
//!
//! The driver code is written against a small execution trait (`exec.rs`): on a device it goes
//! through cuzk-gpu; with the `emu` feature the same kernel sources are compiled for the host by
//! the C++ compiler and run by a small emulator (`kernels/emu/`), so the differential tests of
//! this module run on any machine (`cargo test -p cuzk-msm --features emu`), slowly, at small
//! sizes. On a device they run at larger sizes too. The test kernels and throughput probes
//! (`testops`, `GpuMsm`'s `test_*`, `fp_mul_rate` and `mixed_add_rate`) are outside the
//! production API, behind the `testing` feature.
//!
//! The plan's choices (window width, chunks, the sort's layout, the bucket sums and the
//! reduction) are described in the `plan` module's submodules; the kernels in
//! `kernels/msm/README.md` and beside each kernel.
//!
//! **Architecture invariant:** this module reaches the driver only through cuzk-gpu.

mod affine;
mod batch;
mod cache;
mod curve;
mod exec;
mod pippenger;
mod plan;
mod split;
#[cfg(any(test, feature = "testing"))]
pub mod testops;
#[cfg(test)]
mod tests;

use crate::MsmError;

pub use curve::{DeviceElement, GpuCurve};
pub use plan::{
    affine_scratch_for_device, balanced_window_bits, device_bytes_needed, num_windows,
    streamed_chunk_len, Accumulation, DeviceInfo, Group, MsmPlan, SortBins, DEFAULT_AFFINE_LANES,
    DEFAULT_AFFINE_SCRATCH, DEFAULT_RESIDENT_CHUNK, DEFAULT_SCATTER_REGION, DEFAULT_SORT_SHARED,
    DEFAULT_STREAMED_CHUNK, LARGEST_RESIDENT_CHUNK, LARGEST_SORT_SHARED, LARGE_CHUNK_MEMORY_SHARE,
    MAX_AFFINE_LANES,
};

#[cfg(feature = "cuda")]
pub(crate) use curve::KERNEL_NAMES;

/// Milliseconds per stage of one MSM, in the order the stages first ran (see
/// `GpuMsm::msm_profiled`).
pub type StageTimes = Vec<(&'static str, f64)>;

/// How the 32 bytes of a scalar are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarForm {
    /// Montgomery form, as blstrs keeps a [`Scalar`](cuzk_field::Scalar) in memory.
    Montgomery,
    /// The canonical integer, little-endian. Values at or above the group order `r` are
    /// reduced modulo `r` on the device; scalars in pageable host memory
    /// (`Scalars::HostCanonical`) are checked first and rejected, as the CPU does (scalars in
    /// device or pinned memory are not read on the host).
    Canonical,
}

/// Errors of the GPU MSM.
#[derive(Debug, thiserror::Error)]
pub enum GpuMsmError {
    /// Bad input: lengths that differ, an index out of range, a non-canonical scalar…
    #[error(transparent)]
    Input(#[from] MsmError),
    /// The driver or the device failed (or there is none).
    #[error(transparent)]
    Gpu(#[from] cuzk_gpu::GpuError),
    /// A size the kernels cannot index (more than 2^32 of something in one launch).
    #[error("too large for the kernels: {0}")]
    TooLarge(String),
    /// The device returned a coordinate that is not a canonical field element: a kernel bug.
    #[error("the device returned a point whose coordinates are not canonical")]
    BadDeviceResult,
    /// The host emulator failed.
    #[error("kernel emulator: {0}")]
    Emulator(String),
    /// A bug in this module (a plan for another group, a missing kernel).
    #[error("internal error: {0}")]
    Internal(String),
}

pub use batch::batch_add_device_bytes;
#[cfg(feature = "cuda")]
pub use device::{Bases, GpuMsm, Scalars};
#[cfg(feature = "cuda")]
pub use split::DeviceSplit;
pub use split::{split_scratch_buffers, split_scratch_bytes, SplitTotals};

/// The most device buffers one call of [`GpuMsm`] allocates (the batch-affine scratch of every
/// lane, the sort, the reduction levels, the streamed slots), so that a caller that supplies
/// the workspace can bound what rounding each buffer up to its allocator's granule costs. The
/// emulator's tests hold every call to it.
pub const MAX_CALL_BUFFERS: usize = 256;

#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
mod device {
    use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
    use cuzk_field::Scalar;
    use cuzk_gpu::{Device, DeviceBuffer, PinnedBuffer, Stream, Workspace};

    use super::cache::BufferCache;
    use super::curve::{affine_bytes, kernels_of};
    use super::exec::{as_bytes, GpuBuf, GpuExec, GpuKernels, PinnedSource};
    use super::pippenger::{self, Source};
    use super::plan::affine_scratch_for_device;
    #[cfg(feature = "testing")]
    use super::plan::POINT_BLOCK;
    #[cfg(feature = "testing")]
    use super::testops::{self, FieldOp, PointOp};
    use super::{
        streamed_chunk_len, Accumulation, DeviceSplit, GpuCurve, GpuMsmError, Group, MsmPlan,
        ScalarForm, StageTimes,
    };
    use crate::scalar::first_non_canonical;
    use crate::{MsmError, Selection};

    /// The bases of an MSM.
    #[derive(Debug)]
    pub enum Bases<'a, C: GpuCurve> {
        /// In device memory, in blst's layout (see [`GpuMsm::upload_bases`]), on this
        /// [`GpuMsm`]'s stream or synchronised with it.
        Device(&'a DeviceBuffer<C::AffineLimbs>),
        /// In pinned host memory, in blst's layout (see [`GpuMsm::pin_bases`]): streamed to the
        /// device in chunks, each copied while the previous one is computed.
        Pinned(&'a PinnedBuffer<C::AffineLimbs>),
        /// In pageable host memory: streamed to the device in chunks, each copied by the host
        /// into pinned staging memory and from there to the device while the previous one is
        /// computed.
        Host(&'a [C::Affine]),
        /// The bases of a device split's other scalars (the MSM's scalars are then
        /// [`DeviceSplit::other_scalars`]), picked out of the query's resident bases: streamed
        /// as [`Bases::Pinned`] are, each chunk gathered on the device into its staging slot
        /// where a copy would land, so the call takes a streamed call's memory
        /// ([`GpuMsm::call_bytes`] of `split.totals().others` points, not resident).
        Gathered {
            /// The query's bases, one per member of the split's bitmap.
            bases: &'a DeviceBuffer<C::AffineLimbs>,
            /// The split whose others' bases these are.
            split: &'a DeviceSplit,
        },
    }

    /// The scalars of an MSM.
    #[derive(Clone, Copy, Debug)]
    pub enum Scalars<'a> {
        /// In device memory, 32 bytes each, in the given form.
        Device(&'a DeviceBuffer<FrLimbs>, ScalarForm),
        /// In pinned host memory, 32 bytes each, in the given form (see
        /// [`GpuMsm::pin_scalars`]): streamed in chunks as [`Bases::Pinned`] are.
        Pinned(&'a PinnedBuffer<FrLimbs>, ScalarForm),
        /// blstrs scalars in pageable host memory (Montgomery form): streamed in chunks as
        /// [`Bases::Host`] are.
        Host(&'a [Scalar]),
        /// Canonical little-endian scalars in host memory, each below `r`: streamed in chunks.
        HostCanonical(&'a [[u8; 32]]),
    }

    impl<C: GpuCurve> Clone for Bases<'_, C> {
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<C: GpuCurve> Copy for Bases<'_, C> {}

    impl<C: GpuCurve> Bases<'_, C> {
        fn len(&self) -> usize {
            match self {
                Bases::Device(b) => b.len(),
                Bases::Pinned(p) => p.len(),
                Bases::Host(h) => h.len(),
                Bases::Gathered { split, .. } => split.totals().others,
            }
        }
    }

    impl Scalars<'_> {
        fn len(&self) -> usize {
            match self {
                Scalars::Device(b, _) => b.len(),
                Scalars::Pinned(p, _) => p.len(),
                Scalars::Host(h) => h.len(),
                Scalars::HostCanonical(h) => h.len(),
            }
        }
    }

    /// The MSM kernels loaded on one device, with a compute stream, a side compute stream (the
    /// batch-affine groups' second lane) and a copy stream.
    ///
    /// Calls on one `GpuMsm` run one at a time (they share its streams). Each keeps the device
    /// memory it allocated for itself (its [`MsmPlan::device_bytes`]) for the next call, which
    /// reuses the buffers of equal size instead of allocating and mapping them again; the next
    /// call frees what it does not reuse. [`workspace_bytes`](Self::workspace_bytes) says how
    /// much is held, [`release_workspace`](Self::release_workspace) frees it. The same holds for
    /// the pinned host memory that stages inputs in pageable memory
    /// ([`staging_bytes`](Self::staging_bytes), [`MsmPlan::host_staging_bytes`]: two chunks of
    /// each input, 1 GiB for G1 at 2^24 points).
    ///
    /// A caller that owns the device memory (the prover, with an arena reservation per
    /// partition) passes a [`Workspace`] instead ([`msm_in`](Self::msm_in),
    /// [`batch_add_in`](Self::batch_add_in)): the call's buffers then come from it, at most
    /// [`MAX_CALL_BUFFERS`](super::MAX_CALL_BUFFERS) of them and
    /// [`call_bytes`](Self::call_bytes) in all, and all go back to it when the call
    /// returns; nothing is kept or allocated from the pool.
    #[derive(Debug)]
    pub struct GpuMsm {
        kernels: GpuKernels,
        cache: BufferCache<DeviceBuffer<u8>>,
        lent: BufferCache<DeviceBuffer<u8>>,
        staging: BufferCache<PinnedBuffer<u8>>,
        serial: std::sync::Mutex<()>,
    }

    /// One call in progress: holds the call lock; when dropped, the buffers the call released
    /// become the ones the next call may reuse, and those taken from a caller's workspace go
    /// back to it.
    pub(super) struct Call<'a> {
        msm: &'a GpuMsm,
        workspace: Option<&'a dyn Workspace>,
        _serial: std::sync::MutexGuard<'a, ()>,
    }

    impl Call<'_> {
        pub(super) fn exec<'e>(
            &'e self,
            profile: Option<&'e std::cell::RefCell<Vec<(&'static str, cuzk_gpu::Event)>>>,
        ) -> GpuExec<'e> {
            GpuExec {
                kernels: &self.msm.kernels,
                cache: &self.msm.cache,
                workspace: self.workspace,
                lent: &self.msm.lent,
                staging: &self.msm.staging,
                profile,
                lane: 0,
            }
        }
    }

    impl Drop for Call<'_> {
        fn drop(&mut self) {
            self.msm.cache.end_call();
            self.msm.staging.end_call();
            // The call has returned, so its work is done (it ends with a download, or with a
            // wait on its error path): the workspace's buffers may be reused at once.
            self.msm.lent.end_call();
            self.msm.lent.clear();
        }
    }

    impl GpuMsm {
        /// Loads the kernels on `device`, and lets the device's memory pool keep freed memory
        /// mapped ([`Device::set_pool_release_threshold`]): the workspaces of MSMs with
        /// different plans then reuse each other's pages instead of unmapping and mapping them
        /// at every change of plan ([`Device::trim_pool`] returns them).
        pub fn new(device: &Device) -> Result<Self, GpuMsmError> {
            device.set_pool_release_threshold(u64::MAX)?;
            Ok(Self {
                kernels: GpuKernels::load(device)?,
                cache: BufferCache::default(),
                lent: BufferCache::default(),
                staging: BufferCache::default(),
                serial: std::sync::Mutex::new(()),
            })
        }

        /// Device bytes held from the last call for the next one.
        pub fn workspace_bytes(&self) -> usize {
            let _serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
            self.cache.bytes()
        }

        /// Pinned host bytes held from the last call for the next one (staging for inputs in
        /// pageable memory).
        pub fn staging_bytes(&self) -> usize {
            let _serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
            self.staging.bytes()
        }

        /// Frees the device buffers and the pinned staging memory held from the last call. The
        /// device memory goes back to the device's pool, which `new` told to keep it mapped;
        /// [`Device::trim_pool`] returns it to the driver.
        pub fn release_workspace(&self) {
            let _serial = self.serial.lock().unwrap_or_else(|e| e.into_inner());
            self.cache.clear();
            self.staging.clear();
        }

        pub(super) fn begin_call<'a>(&'a self, workspace: Option<&'a dyn Workspace>) -> Call<'a> {
            Call {
                msm: self,
                workspace,
                _serial: self.serial.lock().unwrap_or_else(|e| e.into_inner()),
            }
        }

        /// Device bytes [`msm`](Self::msm) (or [`msm_in`](Self::msm_in)) allocates for `n`
        /// points of `group`: its plan's [`MsmPlan::device_bytes`] with bases and scalars on
        /// the device, else the [`streamed_plan`](Self::streamed_plan)'s
        /// [`MsmPlan::streamed_device_bytes`] (an upper bound when only one input streams).
        pub fn call_bytes(&self, n: usize, group: Group, resident: bool) -> usize {
            if n == 0 {
                0
            } else if resident {
                self.plan(n, group).device_bytes()
            } else {
                self.streamed_plan(n, group).streamed_device_bytes()
            }
        }

        /// The device.
        pub fn device(&self) -> &Device {
            &self.kernels.device
        }

        /// The stream every MSM runs on and ends on (its side stream's work is joined to it
        /// before a call returns). Inputs uploaded on another stream must be ordered before it
        /// (or synchronised).
        pub fn stream(&self) -> &Stream {
            &self.kernels.stream
        }

        /// The plan this device uses for `n` points with bases and scalars on the device
        /// ([`MsmPlan::for_device`]): the scatter's parts sized to the device's L2, the sort to
        /// its shared memory, the batch-affine scratch ([`affine_scratch_for_device`]) and the
        /// chunks to its memory.
        pub fn plan(&self, n: usize, group: Group) -> MsmPlan {
            MsmPlan::for_device(n, group, self.kernels.device.info())
        }

        /// The plan [`msm`](Self::msm) uses for `n` points when bases or scalars stream from
        /// host memory: chunks of [`streamed_chunk_len`] points, so that the copy of one chunk
        /// overlaps the work on the one before, the window chosen for that many chunks, and the
        /// bucket sums of [`Accumulation::streamed_default`].
        pub fn streamed_plan(&self, n: usize, group: Group) -> MsmPlan {
            let info = self.kernels.device.info();
            let plan = MsmPlan::for_chunks(n, group, info.sm_count, streamed_chunk_len(n))
                .with_scatter_region(info.l2_bytes)
                .with_sort_shared(info.max_shared_per_block)
                .with_affine_scratch(affine_scratch_for_device(info.total_memory));
            let accumulation = Accumulation::streamed_default(group, plan.chunk_len);
            plan.with_accumulation(accumulation)
        }

        /// Copies bases to the device (on [`stream`](Self::stream)).
        pub fn upload_bases<C: GpuCurve>(
            &self,
            bases: &[C::Affine],
        ) -> Result<DeviceBuffer<C::AffineLimbs>, GpuMsmError> {
            Ok(self.kernels.stream.upload(C::affines_as_limbs(bases))?)
        }

        /// Copies blstrs scalars to the device (on [`stream`](Self::stream)); they stay in
        /// Montgomery form.
        pub fn upload_scalars(
            &self,
            scalars: &[Scalar],
        ) -> Result<DeviceBuffer<FrLimbs>, GpuMsmError> {
            Ok(self.kernels.stream.upload(scalars_as_limbs(scalars))?)
        }

        /// Copies bases into pinned host memory, for MSMs that stream them
        /// ([`Bases::Pinned`]): a caller that uses one set of bases many times (a proving
        /// daemon's parameters) pins them once.
        pub fn pin_bases<C: GpuCurve>(
            &self,
            bases: &[C::Affine],
        ) -> Result<PinnedBuffer<C::AffineLimbs>, GpuMsmError> {
            Ok(self.kernels.device.pin(C::affines_as_limbs(bases))?)
        }

        /// Copies blstrs scalars into pinned host memory ([`Scalars::Pinned`]); they stay in
        /// Montgomery form.
        pub fn pin_scalars(
            &self,
            scalars: &[Scalar],
        ) -> Result<PinnedBuffer<FrLimbs>, GpuMsmError> {
            Ok(self.kernels.device.pin(scalars_as_limbs(scalars))?)
        }

        /// `Σ sᵢ·Pᵢ` with this device's plan (the [`streamed_plan`](Self::streamed_plan)
        /// when an input streams from host memory).
        pub fn msm<C: GpuCurve>(
            &self,
            bases: Bases<'_, C>,
            scalars: Scalars<'_>,
        ) -> Result<C::Projective, GpuMsmError> {
            self.msm_inner(&self.plan_of(bases, scalars), bases, scalars, None, None)
        }

        /// [`msm`](Self::msm) with every device buffer of the call taken from `workspace`
        /// ([`call_bytes`](Self::call_bytes) of them, in at most
        /// [`MAX_CALL_BUFFERS`](super::MAX_CALL_BUFFERS) buffers) and given back to it when
        /// the call returns.
        pub fn msm_in<C: GpuCurve>(
            &self,
            workspace: &dyn Workspace,
            bases: Bases<'_, C>,
            scalars: Scalars<'_>,
        ) -> Result<C::Projective, GpuMsmError> {
            let plan = self.plan_of(bases, scalars);
            self.msm_inner(&plan, bases, scalars, None, Some(workspace))
        }

        /// The plan [`msm`](Self::msm) takes for these inputs.
        fn plan_of<C: GpuCurve>(&self, bases: Bases<'_, C>, scalars: Scalars<'_>) -> MsmPlan {
            let resident =
                matches!(bases, Bases::Device(_)) && matches!(scalars, Scalars::Device(..));
            if resident {
                self.plan(bases.len(), C::GROUP)
            } else {
                self.streamed_plan(bases.len(), C::GROUP)
            }
        }

        /// `Σ sᵢ·Pᵢ` by a given plan (for `C`'s group and the number of points).
        pub fn msm_with_plan<C: GpuCurve>(
            &self,
            plan: &MsmPlan,
            bases: Bases<'_, C>,
            scalars: Scalars<'_>,
        ) -> Result<C::Projective, GpuMsmError> {
            self.msm_inner(plan, bases, scalars, None, None)
        }

        fn msm_inner<C: GpuCurve>(
            &self,
            plan: &MsmPlan,
            bases: Bases<'_, C>,
            scalars: Scalars<'_>,
            profile: Option<&std::cell::RefCell<Vec<(&'static str, cuzk_gpu::Event)>>>,
            workspace: Option<&dyn Workspace>,
        ) -> Result<C::Projective, GpuMsmError> {
            if bases.len() != scalars.len() {
                return Err(MsmError::LengthMismatch {
                    bases: bases.len(),
                    scalars: scalars.len(),
                }
                .into());
            }
            if plan.group != C::GROUP || plan.n_points != bases.len() {
                return Err(GpuMsmError::Internal(format!(
                    "a plan for {} points in {:?} used for {} points in {:?}",
                    plan.n_points,
                    plan.group,
                    bases.len(),
                    C::GROUP
                )));
            }
            if let Scalars::HostCanonical(s) = &scalars {
                if let Some(index) = first_non_canonical(s) {
                    return Err(MsmError::NonCanonicalScalar { index }.into());
                }
            }
            let borrowed_bases;
            let borrowed_indices;
            let base_source = match &bases {
                Bases::Device(b) => {
                    borrowed_bases = GpuBuf::Borrowed(*b);
                    Source::Device(&borrowed_bases)
                }
                Bases::Pinned(p) => Source::Pinned(*p as &dyn PinnedSource),
                Bases::Host(h) => Source::Host(affine_bytes::<C>(h)),
                Bases::Gathered { bases, split } => {
                    // The split's indices are below its members: one base each.
                    split.check_bases(bases.len())?;
                    borrowed_bases = GpuBuf::Borrowed(*bases);
                    borrowed_indices = GpuBuf::Borrowed(split.other_bases());
                    Source::Gathered {
                        bases: &borrowed_bases,
                        indices: &borrowed_indices,
                        kernel: kernels_of::<C>().gather,
                    }
                }
            };
            let borrowed_scalars;
            let (scalar_source, form) = match &scalars {
                Scalars::Device(b, form) => {
                    borrowed_scalars = GpuBuf::Borrowed(*b);
                    (Source::Device(&borrowed_scalars), *form)
                }
                Scalars::Pinned(p, form) => (Source::Pinned(*p as &dyn PinnedSource), *form),
                Scalars::Host(h) => {
                    // SAFETY: FrLimbs is `repr(C)` over `[u32; 8]`: no padding.
                    (
                        Source::Host(unsafe { as_bytes(scalars_as_limbs(h)) }),
                        ScalarForm::Montgomery,
                    )
                }
                Scalars::HostCanonical(h) => {
                    // SAFETY: byte arrays have no padding.
                    (Source::Host(unsafe { as_bytes(h) }), ScalarForm::Canonical)
                }
            };
            let call = self.begin_call(workspace);
            pippenger::msm::<_, C>(&call.exec(profile), plan, base_source, scalar_source, form)
        }

        /// [`msm_with_plan`](Self::msm_with_plan), also returning the time of each stage in
        /// milliseconds (CUDA events between stages, summed over chunks): `stage` is the wait
        /// for streamed inputs, `host` the host's share of the reduction and the window
        /// combination. A profiled call runs both batch-affine lanes' work on the main stream in
        /// issue order, so that stage times stay differences of one stream's events.
        pub fn msm_profiled<C: GpuCurve>(
            &self,
            plan: &MsmPlan,
            bases: Bases<'_, C>,
            scalars: Scalars<'_>,
        ) -> Result<(C::Projective, StageTimes), GpuMsmError> {
            let marks = std::cell::RefCell::new(Vec::new());
            let result = self.msm_inner(plan, bases, scalars, Some(&marks), None)?;
            let marks = marks.into_inner();
            let mut stages: Vec<(&'static str, f64)> = Vec::new();
            for pair in marks.windows(2) {
                let ms = f64::from(pair[0].1.elapsed_ms(&pair[1].1)?);
                match stages.iter_mut().find(|(name, _)| *name == pair[1].0) {
                    Some(entry) => entry.1 += ms,
                    None => stages.push((pair[1].0, ms)),
                }
            }
            Ok((result, stages))
        }

        /// `Σ_{i selected} bases[i]`. Fails, as the CPU path does, when a bitmap's length differs
        /// from the number of bases or an index is out of range.
        pub fn batch_add<C: GpuCurve>(
            &self,
            bases: &DeviceBuffer<C::AffineLimbs>,
            selection: Selection<'_>,
        ) -> Result<C::Projective, GpuMsmError> {
            let borrowed = GpuBuf::Borrowed(bases);
            let call = self.begin_call(None);
            super::batch::batch_add::<_, C>(&call.exec(None), &borrowed, bases.len(), selection)
        }

        /// [`batch_add`](Self::batch_add) with the call's device buffers taken from `workspace`
        /// ([`batch_add_device_bytes`](super::batch_add_device_bytes) of them for indices) and
        /// given back to it when the call returns.
        pub fn batch_add_in<C: GpuCurve>(
            &self,
            workspace: &dyn Workspace,
            bases: &DeviceBuffer<C::AffineLimbs>,
            selection: Selection<'_>,
        ) -> Result<C::Projective, GpuMsmError> {
            let borrowed = GpuBuf::Borrowed(bases);
            let call = self.begin_call(Some(workspace));
            super::batch::batch_add::<_, C>(&call.exec(None), &borrowed, bases.len(), selection)
        }
    }

    /// Test kernels and rate probes (feature `testing`): for the differential tests on a device
    /// and for the benchmark's floors, not for production callers.
    #[cfg(feature = "testing")]
    impl GpuMsm {
        /// Runs an element-wise field test kernel (`degree` 1: Fp, 2: Fp2) over limb bytes.
        pub fn test_field(
            &self,
            degree: usize,
            op: FieldOp,
            a: &[u8],
            b: &[u8],
        ) -> Result<Vec<u8>, GpuMsmError> {
            let call = self.begin_call(None);
            testops::msm_test_field(&call.exec(None), degree, op, a, b)
        }

        /// Runs an element-wise point test kernel over device-layout bytes.
        pub fn test_point<C: GpuCurve>(
            &self,
            op: PointOp,
            a: &[u8],
            b: &[u8],
            p: &[u8],
        ) -> Result<Vec<u8>, GpuMsmError> {
            let call = self.begin_call(None);
            testops::msm_test_point::<_, C>(&call.exec(None), op, a, b, p)
        }

        /// Measures the device's Fp multiplication rate (multiplications per second) with the
        /// throughput probe: `blocks_per_sm` blocks of 256 threads per multiprocessor, `iters`
        /// multiplications per chain, the median of `reps` timed launches after one warm-up.
        pub fn fp_mul_rate(
            &self,
            blocks_per_sm: u32,
            iters: u32,
            reps: usize,
        ) -> Result<f64, GpuMsmError> {
            use super::exec::Exec;
            let call = self.begin_call(None);
            let exec = call.exec(None);
            let block = 256u32;
            let threads = (block * blocks_per_sm.max(1) * exec.sm_count()) as usize;
            let mut data = exec.alloc(threads * 96)?;
            // Any bytes below p work as inputs; small ones are: fill with 0x01.
            let bytes: Vec<u8> = (0..threads * 96)
                .map(|i| if i % 48 == 47 { 0 } else { 1 })
                .collect();
            exec.upload(&mut data, &bytes)?;
            self.probe_rate(reps, || {
                testops::msm_bench_fp_mul(&exec, &data, threads, block, iters)
            })
        }

        /// Operations per second of a probe launch that returns its operation count: one
        /// warm-up launch, then the median of `reps` launches timed with events on the stream.
        fn probe_rate(
            &self,
            reps: usize,
            mut launch: impl FnMut() -> Result<u64, GpuMsmError>,
        ) -> Result<f64, GpuMsmError> {
            launch()?;
            let mut times = Vec::with_capacity(reps);
            let mut ops = 0;
            for _ in 0..reps.max(1) {
                let start = self.kernels.stream.record_event()?;
                ops = launch()?;
                let end = self.kernels.stream.record_event()?;
                times.push(f64::from(start.elapsed_ms(&end)?));
            }
            times.sort_by(f64::total_cmp);
            Ok(ops as f64 / (times[times.len() / 2] * 1e-3))
        }

        /// Measures the group's mixed XYZZ additions per second as the bucket sums'
        /// `accumulate` kernel runs them (one accumulator per thread, its launch bounds), apart
        /// from the sort and the bucket traffic: `blocks_per_sm` blocks of 128 threads per
        /// multiprocessor, each thread adding `iters` of `bases` (a power of two of them, which
        /// stay in the L2 cache at 2^16), the median of `reps` timed launches after one warm-up.
        pub fn mixed_add_rate<C: GpuCurve>(
            &self,
            bases: &[C::Affine],
            blocks_per_sm: u32,
            iters: u32,
            reps: usize,
        ) -> Result<f64, GpuMsmError> {
            use super::exec::Exec;
            if bases.is_empty() {
                return Err(GpuMsmError::Internal(
                    "the addition probe needs at least one base".into(),
                ));
            }
            let call = self.begin_call(None);
            let exec = call.exec(None);
            let block = POINT_BLOCK;
            let threads = (block * blocks_per_sm.max(1) * exec.sm_count()) as usize;
            // The largest power of two of them: the probe indexes with a mask.
            let n_bases = 1usize << bases.len().ilog2();
            let bytes = affine_bytes::<C>(&bases[..n_bases]);
            let mut dev_bases = exec.alloc(bytes.len())?;
            exec.upload(&mut dev_bases, bytes)?;
            let out = exec.alloc(threads * C::GROUP.xyzz_bytes())?;
            self.probe_rate(reps, || {
                testops::msm_bench_madd::<_, C>(
                    &exec, &out, &dev_bases, n_bases, threads, block, iters,
                )
            })
        }
    }
}
