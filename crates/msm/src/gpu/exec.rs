//! Where the kernels run: a CUDA device through cuzk-gpu ([`GpuExec`], feature `cuda`), or the
//! host emulator of `kernels/emu/` ([`EmuExec`], feature `emu`).
//!
//! The MSM and batch-addition drivers ([`super::pippenger`], [`super::batch`]) are written once
//! against [`Exec`]: untyped byte buffers, a compute lane (and a side compute lane) and a copy
//! lane, kernels launched by name with their arguments in order. On the device the lanes are
//! streams ordered by events; in the emulator the main compute lane and the copy lane run each
//! operation when it is issued, the side lane as late as a device may (see `EmuExec`).
//! Buffers hold no type: each launch wrapper states the element type its kernel expects.
#![allow(unsafe_code)]

use super::GpuMsmError;

/// One kernel argument, in the kernel's parameter order.
pub(crate) enum Arg<'a, B> {
    /// A device buffer (the kernel receives its address).
    Buf(&'a B),
    /// A `uint32_t`.
    U32(u32),
    /// A `uint64_t`.
    U64(u64),
}

/// A place where the MSM kernels run.
pub(crate) trait Exec {
    /// A buffer of device memory.
    type Buf;
    /// A point in the compute lane's work.
    type Event;
    /// Page-locked host memory (a caller's, or a staging buffer) that copies read without the
    /// host waiting.
    type Pinned: ?Sized;
    /// A page-locked host buffer of this executor's own, for staging pageable inputs.
    type Staging;

    /// Streaming multiprocessors of the device (the plan sizes its launches by them).
    fn sm_count(&self) -> u32;
    /// Bytes and buffers this executor has allocated so far, where it counts them (the
    /// emulator does): the tests hold every call to what its plan states.
    #[cfg(test)]
    fn allocated(&self) -> Option<(usize, usize)> {
        None
    }
    /// `bytes` of uninitialised device memory (ordered on the compute lane).
    fn alloc(&self, bytes: usize) -> Result<Self::Buf, GpuMsmError>;
    /// The size of a buffer in bytes.
    fn size(buf: &Self::Buf) -> usize;
    /// Clears a buffer on the compute lane.
    fn zero(&self, buf: &mut Self::Buf) -> Result<(), GpuMsmError>;
    /// Copies host bytes into a buffer of the same size, on the compute lane.
    fn upload(&self, dst: &mut Self::Buf, src: &[u8]) -> Result<(), GpuMsmError>;
    /// Copies bytes `range` of pinned host memory into the start of a buffer at least that
    /// large on the copy lane (a streamed plan's shorter first chunk takes a full chunk's slot).
    /// The host does not wait: the copy runs while later work is queued.
    fn upload_pinned(
        &self,
        dst: &mut Self::Buf,
        src: &Self::Pinned,
        range: std::ops::Range<usize>,
    ) -> Result<(), GpuMsmError>;
    /// A page-locked staging buffer of at least `bytes` bytes on the host, for inputs in
    /// pageable memory.
    fn alloc_staging(&self, bytes: usize) -> Result<Self::Staging, GpuMsmError>;
    /// Copies host bytes into the start of a staging buffer, once the copies queued out of it
    /// have run (the host waits for them).
    fn fill_staging(&self, dst: &mut Self::Staging, src: &[u8]) -> Result<(), GpuMsmError>;
    /// A staging buffer as pinned memory to copy from.
    fn staged(src: &Self::Staging) -> &Self::Pinned;
    /// Blocks the host until every copy issued so far on the copy lane has run (for error paths:
    /// a call must not hand its buffers back with copies into them in flight).
    fn wait_for_copies(&self) -> Result<(), GpuMsmError>;
    /// Makes later compute work wait for every copy issued so far on the copy lane.
    fn compute_waits_for_copies(&self) -> Result<(), GpuMsmError>;
    /// Marks the compute lane's current position.
    fn record_compute(&self) -> Result<Self::Event, GpuMsmError>;
    /// Makes later copies wait until the compute lane has passed `event`.
    fn copies_wait_for(&self, event: &Self::Event) -> Result<(), GpuMsmError>;
    /// This executor with its compute work on lane `lane` instead: 0 is the main compute lane,
    /// 1 a side lane that runs alongside it (the batch-affine groups of windows, two at a time).
    /// Both share the buffers and the copy lane; work on different lanes is ordered only by
    /// events ([`record_compute`](Self::record_compute) on one lane,
    /// [`compute_waits_for`](Self::compute_waits_for) on the other). Allocations stay on the
    /// main lane.
    fn lane(&self, lane: u32) -> Self
    where
        Self: Sized;
    /// Makes later compute work on this executor's lane wait until the lane that recorded
    /// `event` has passed it.
    fn compute_waits_for(&self, event: &Self::Event) -> Result<(), GpuMsmError>;
    /// Blocks the host until every compute operation issued on this executor's lane has run
    /// (for error paths, where an event to wait for could not be made).
    fn wait_for_lane(&self) -> Result<(), GpuMsmError>;
    /// Copies one buffer into another of the same size, on the compute lane.
    fn copy(&self, src: &Self::Buf, dst: &mut Self::Buf) -> Result<(), GpuMsmError>;
    /// Copies a buffer into host bytes of the same size once the compute lane has produced it.
    fn download(&self, src: &Self::Buf, dst: &mut [u8]) -> Result<(), GpuMsmError>;
    /// Marks the end of a stage on the compute lane, for stage timings (does nothing unless the
    /// executor profiles).
    fn mark(&self, _stage: &'static str) -> Result<(), GpuMsmError> {
        Ok(())
    }
    /// Launches `kernel` on `grid` blocks of `block` threads on the compute lane.
    fn launch(
        &self,
        kernel: &'static str,
        grid: u32,
        block: u32,
        args: &[Arg<'_, Self::Buf>],
    ) -> Result<(), GpuMsmError> {
        self.launch_shared(kernel, grid, block, 0, args)
    }
    /// [`launch`](Self::launch) with `shared_bytes` of dynamic shared memory per block (at most
    /// the device's `max_shared_per_block`, less the kernel's static shared memory).
    fn launch_shared(
        &self,
        kernel: &'static str,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &[Arg<'_, Self::Buf>],
    ) -> Result<(), GpuMsmError>;
}

/// Blocks of `block` threads covering `items` threads (at least one block).
pub(crate) fn blocks(items: usize, block: u32) -> Result<u32, GpuMsmError> {
    let n = items.div_ceil(block as usize).max(1);
    u32::try_from(n).map_err(|_| GpuMsmError::TooLarge(format!("{items} threads in one launch")))
}

/// A value that must fit a kernel's `uint32_t` parameter.
pub(crate) fn u32_arg(value: usize, what: &str) -> Result<u32, GpuMsmError> {
    u32::try_from(value)
        .map_err(|_| GpuMsmError::TooLarge(format!("{what} = {value} exceeds 2^32")))
}

/// Host values as bytes, for uploads.
///
/// # Safety
///
/// `T` must have no padding bytes (the cuzk-field layouts, blstrs points and scalars, and plain
/// integers all qualify).
pub(crate) unsafe fn as_bytes<T>(values: &[T]) -> &[u8] {
    // SAFETY: the caller guarantees that `T` has no padding, so every byte is initialised; the
    // byte slice covers exactly the same memory, with alignment 1.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

#[cfg(feature = "cuda")]
pub(crate) use gpu::{GpuBuf, GpuExec, GpuKernels, PinnedSource};

#[cfg(feature = "cuda")]
mod gpu {
    use std::collections::HashMap;

    use cuzk_gpu::{
        Device, DeviceBuffer, DeviceCopy, Event, Kernel, KernelArgs, LaunchConfig, Module,
        PinnedBuffer, PinnedBytes, Stream, Workspace,
    };
    use rayon::prelude::*;

    use super::{Arg, Exec};
    use crate::gpu::cache::{BufferCache, CachedBuffer, Held};
    use crate::gpu::{GpuMsmError, KERNEL_NAMES};

    /// The fatbin of `kernels/msm/*.cu`, compiled by this crate's build script.
    pub(crate) static MSM_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/msm.fatbin"));

    /// The MSM module loaded on one device, with every kernel looked up once.
    #[derive(Debug)]
    pub(crate) struct GpuKernels {
        pub(crate) device: Device,
        _module: Module,
        kernels: HashMap<&'static str, Kernel>,
        pub(crate) stream: Stream,
        pub(crate) copy_stream: Stream,
        /// The side compute lane ([`Exec::lane`] 1).
        pub(crate) side_stream: Stream,
    }

    impl GpuKernels {
        pub(crate) fn load(device: &Device) -> Result<Self, GpuMsmError> {
            let module = device.load_module(MSM_FATBIN)?;
            let mut kernels = HashMap::new();
            for &name in KERNEL_NAMES {
                kernels.insert(name, module.kernel(name)?);
            }
            Ok(Self {
                device: device.clone(),
                _module: module,
                kernels,
                stream: device.new_stream()?,
                copy_stream: device.new_stream()?,
                side_stream: device.new_stream()?,
            })
        }

        pub(crate) fn kernel(&self, name: &'static str) -> Result<&Kernel, GpuMsmError> {
            self.kernels
                .get(name)
                .ok_or_else(|| GpuMsmError::Internal(format!("no kernel named {name}")))
        }
    }

    /// A device buffer the caller owns, passed to kernels by address.
    pub(crate) trait BorrowedBuffer {
        fn push<'a>(&'a self, args: &mut KernelArgs<'a>);
        fn size_bytes(&self) -> usize;
    }

    impl<T: DeviceCopy> BorrowedBuffer for DeviceBuffer<T> {
        fn push<'a>(&'a self, args: &mut KernelArgs<'a>) {
            args.buffer(self);
        }

        fn size_bytes(&self) -> usize {
            DeviceBuffer::size_bytes(self)
        }
    }

    /// Pinned host memory of any element type, as the bytes copies read.
    pub(crate) trait PinnedSource: Sync {
        fn pinned_bytes(&self) -> PinnedBytes<'_>;
    }

    impl<T: DeviceCopy> PinnedSource for PinnedBuffer<T> {
        fn pinned_bytes(&self) -> PinnedBytes<'_> {
            self.bytes()
        }
    }

    impl Held for DeviceBuffer<u8> {
        fn held_bytes(&self) -> usize {
            self.len()
        }
    }

    impl Held for PinnedBuffer<u8> {
        fn held_bytes(&self) -> usize {
            self.len()
        }
    }

    /// Device memory the driver code uses: its own scratch, or the caller's inputs.
    pub(crate) enum GpuBuf<'d> {
        Owned(CachedBuffer<'d, DeviceBuffer<u8>>),
        Borrowed(&'d dyn BorrowedBuffer),
    }

    impl std::fmt::Debug for GpuBuf<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                GpuBuf::Owned(b) => write!(f, "Owned({} bytes)", b.get().len()),
                GpuBuf::Borrowed(b) => write!(f, "Borrowed({} bytes)", b.size_bytes()),
            }
        }
    }

    impl GpuBuf<'_> {
        fn owned(&self) -> Result<&DeviceBuffer<u8>, GpuMsmError> {
            match self {
                GpuBuf::Owned(b) => Ok(b.get()),
                GpuBuf::Borrowed(_) => Err(GpuMsmError::Internal(
                    "a caller's buffer is read-only here".into(),
                )),
            }
        }

        fn owned_mut(&mut self) -> Result<&mut DeviceBuffer<u8>, GpuMsmError> {
            match self {
                GpuBuf::Owned(b) => Ok(b.get_mut()),
                GpuBuf::Borrowed(_) => Err(GpuMsmError::Internal(
                    "a caller's buffer is read-only here".into(),
                )),
            }
        }
    }

    /// [`Exec`] on a device: compute on `kernels.stream` (lane 1: `kernels.side_stream`),
    /// copies on `kernels.copy_stream`.
    #[derive(Clone, Debug)]
    pub(crate) struct GpuExec<'d> {
        pub(crate) kernels: &'d GpuKernels,
        /// Where this call's own buffers come from and go back to.
        pub(crate) cache: &'d BufferCache<DeviceBuffer<u8>>,
        /// The caller's workspace, if it supplied one: the call's buffers come from it instead
        /// of `cache` and the stream's pool, and go back to it (through `lent`, which holds
        /// them until the call ends) when the call ends.
        pub(crate) workspace: Option<&'d dyn Workspace>,
        /// The buffers of the running call taken from `workspace`.
        pub(crate) lent: &'d BufferCache<DeviceBuffer<u8>>,
        /// Where this call's pinned staging buffers come from and go back to.
        pub(crate) staging: &'d BufferCache<PinnedBuffer<u8>>,
        /// With `Some`, [`Exec::mark`] records an event per stage end here, and every lane's
        /// work runs on the main stream, in the order it was issued: stage times are
        /// differences of consecutive events, which only one stream gives.
        pub(crate) profile: Option<&'d std::cell::RefCell<Vec<(&'static str, Event)>>>,
        /// The compute lane (see [`Exec::lane`]).
        pub(crate) lane: u32,
    }

    impl GpuExec<'_> {
        /// The stream of this executor's compute lane.
        fn stream(&self) -> &Stream {
            if self.lane == 0 || self.profile.is_some() {
                &self.kernels.stream
            } else {
                &self.kernels.side_stream
            }
        }
    }

    impl<'d> Exec for GpuExec<'d> {
        type Buf = GpuBuf<'d>;
        type Event = Event;
        type Pinned = dyn PinnedSource + 'd;
        type Staging = CachedBuffer<'d, PinnedBuffer<u8>>;

        fn sm_count(&self) -> u32 {
            self.kernels.device.info().sm_count
        }

        fn alloc(&self, bytes: usize) -> Result<Self::Buf, GpuMsmError> {
            // Allocations are ordered on the main lane.
            if let Some(workspace) = self.workspace {
                let buf = workspace.alloc_bytes(&self.kernels.stream, bytes)?;
                return Ok(GpuBuf::Owned(self.lent.lend(buf)));
            }
            let buf = match self.cache.take(bytes) {
                Some(buf) => buf,
                None => self.kernels.stream.alloc::<u8>(bytes)?,
            };
            Ok(GpuBuf::Owned(self.cache.lend(buf)))
        }

        fn size(buf: &Self::Buf) -> usize {
            match buf {
                GpuBuf::Owned(b) => b.get().len(),
                GpuBuf::Borrowed(b) => b.size_bytes(),
            }
        }

        fn zero(&self, buf: &mut Self::Buf) -> Result<(), GpuMsmError> {
            Ok(self.stream().memset_zero(buf.owned_mut()?)?)
        }

        fn upload(&self, dst: &mut Self::Buf, src: &[u8]) -> Result<(), GpuMsmError> {
            Ok(self.stream().copy_to_device(src, dst.owned_mut()?)?)
        }

        fn upload_pinned(
            &self,
            dst: &mut Self::Buf,
            src: &Self::Pinned,
            range: std::ops::Range<usize>,
        ) -> Result<(), GpuMsmError> {
            let src = src.pinned_bytes().range(range)?;
            let dst = dst.owned_mut()?;
            if dst.len() < src.len() {
                return Err(GpuMsmError::Internal(format!(
                    "a copy of {} pinned bytes into {}",
                    src.len(),
                    dst.len()
                )));
            }
            Ok(self
                .kernels
                .copy_stream
                .copy_pinned_to_device(src, dst, 0)?)
        }

        fn alloc_staging(&self, bytes: usize) -> Result<Self::Staging, GpuMsmError> {
            // A larger buffer left by an earlier call does: only its prefix is filled and copied.
            let buf = match self.staging.take_at_least(bytes) {
                Some(buf) => buf,
                None => self.kernels.device.alloc_pinned::<u8>(bytes)?,
            };
            Ok(self.staging.lend(buf))
        }

        fn fill_staging(&self, dst: &mut Self::Staging, src: &[u8]) -> Result<(), GpuMsmError> {
            /// Bytes per task of the parallel copy: one thread copies at a fraction of the
            /// host's memory bandwidth.
            const PIECE: usize = 4 << 20;
            let dst = dst.get_mut().as_mut_slice()?;
            let len = dst.len();
            let dst = dst.get_mut(..src.len()).ok_or_else(|| {
                GpuMsmError::Internal(format!("{} bytes staged in a buffer of {len}", src.len()))
            })?;
            dst.par_chunks_mut(PIECE)
                .zip(src.par_chunks(PIECE))
                .for_each(|(d, s)| d.copy_from_slice(s));
            Ok(())
        }

        fn staged(src: &Self::Staging) -> &Self::Pinned {
            src.get()
        }

        fn wait_for_copies(&self) -> Result<(), GpuMsmError> {
            Ok(self.kernels.copy_stream.synchronize()?)
        }

        fn compute_waits_for_copies(&self) -> Result<(), GpuMsmError> {
            let event = self.kernels.copy_stream.record_event()?;
            Ok(self.stream().wait_event(&event)?)
        }

        fn record_compute(&self) -> Result<Event, GpuMsmError> {
            Ok(self.stream().record_event()?)
        }

        fn copies_wait_for(&self, event: &Event) -> Result<(), GpuMsmError> {
            Ok(self.kernels.copy_stream.wait_event(event)?)
        }

        fn lane(&self, lane: u32) -> Self {
            Self {
                lane,
                ..self.clone()
            }
        }

        fn compute_waits_for(&self, event: &Event) -> Result<(), GpuMsmError> {
            Ok(self.stream().wait_event(event)?)
        }

        fn wait_for_lane(&self) -> Result<(), GpuMsmError> {
            Ok(self.stream().synchronize()?)
        }

        fn copy(&self, src: &Self::Buf, dst: &mut Self::Buf) -> Result<(), GpuMsmError> {
            Ok(self.stream().copy_device(src.owned()?, dst.owned_mut()?)?)
        }

        fn download(&self, src: &Self::Buf, dst: &mut [u8]) -> Result<(), GpuMsmError> {
            Ok(self.stream().copy_to_host(src.owned()?, dst)?)
        }

        fn mark(&self, stage: &'static str) -> Result<(), GpuMsmError> {
            if let Some(marks) = self.profile {
                marks
                    .borrow_mut()
                    .push((stage, self.stream().record_event()?));
            }
            Ok(())
        }

        fn launch_shared(
            &self,
            kernel: &'static str,
            grid: u32,
            block: u32,
            shared_bytes: u32,
            args: &[Arg<'_, Self::Buf>],
        ) -> Result<(), GpuMsmError> {
            let function = self.kernels.kernel(kernel)?;
            if shared_bytes > 0 {
                // Above 48 KiB the kernel must opt in; the attribute is the kernel's, set on
                // every such launch (one driver call, next to the launch's own).
                function.set_max_dynamic_shared_bytes(shared_bytes)?;
            }
            let mut kargs = KernelArgs::new();
            for arg in args {
                match arg {
                    Arg::Buf(GpuBuf::Owned(b)) => {
                        kargs.buffer(b.get());
                    }
                    Arg::Buf(GpuBuf::Borrowed(b)) => b.push(&mut kargs),
                    Arg::U32(v) => {
                        kargs.value(*v);
                    }
                    Arg::U64(v) => {
                        kargs.value(*v);
                    }
                }
            }
            let config = LaunchConfig {
                grid: (grid, 1, 1),
                block: (block, 1, 1),
                shared_bytes,
            };
            // SAFETY: every launch wrapper (pippenger.rs, batch.rs, testops.rs) passes the
            // arguments of its kernel in order with the types of its C signature (buffers as
            // pointers, `U32`/`U64` as uint32_t/uint64_t) and sizes the buffers for the indices
            // the kernel's header comment states for that launch shape. Buffers live until the
            // driver function that launched returns, after a download on the main stream, which
            // has waited for the side lane's work first (affine.rs joins it on every path).
            unsafe { function.launch(self.stream(), config, &kargs)? };
            Ok(())
        }
    }
}

// The emulator runs the tests; nothing else uses it.
#[cfg(all(feature = "emu", test))]
pub(crate) use emu::EmuExec;

#[cfg(all(feature = "emu", test))]
mod emu {
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;
    use std::ffi::c_void;
    use std::rc::Rc;

    use super::{Arg, Exec};
    use crate::gpu::GpuMsmError;

    /// Host memory standing in for device memory, 8-byte aligned, filled with a poison pattern
    /// when allocated so that reading what nothing wrote shows.
    pub(crate) struct EmuBuf {
        ptr: *mut u64,
        words: usize,
        bytes: usize,
        /// The number of the last copy-lane copy into the buffer (0: none).
        copied_by: Cell<u64>,
        /// The number of the last compute-lane operation that used the buffer.
        used_by: Cell<u64>,
        /// The number of the last side-lane operation that uses the buffer (0: none), and the
        /// executor's state, which tells whether it has run.
        side_use: Cell<u64>,
        state: Rc<EmuState>,
    }

    impl std::fmt::Debug for EmuBuf {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "EmuBuf({} bytes)", self.bytes)
        }
    }

    impl EmuBuf {
        fn new(bytes: usize, state: &Rc<EmuState>) -> Self {
            let words = bytes.div_ceil(8).max(1);
            let boxed: Box<[u64]> = vec![0xa5a5_a5a5_a5a5_a5a5u64; words].into_boxed_slice();
            Self {
                ptr: Box::into_raw(boxed).cast::<u64>(),
                words,
                bytes,
                copied_by: Cell::new(0),
                used_by: Cell::new(0),
                side_use: Cell::new(0),
                state: Rc::clone(state),
            }
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: `ptr` owns `words` initialised u64s, of which the first `bytes` bytes are
            // the buffer; kernels only write it while the driver waits for them.
            unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.bytes) }
        }

        fn bytes_mut(&mut self) -> &mut [u8] {
            // SAFETY: as in `bytes`, and `&mut self` makes this the only view.
            unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.bytes) }
        }
    }

    impl Drop for EmuBuf {
        fn drop(&mut self) {
            if self.side_use.get() > self.state.side_run.get() {
                // Queued side-lane work still uses the buffer (on a device: freed under a
                // running kernel). Leak it, so that the queued work stays sound, and fail every
                // later call.
                self.state.violation.replace(Some(format!(
                    "a buffer of {} bytes was dropped while side-lane operation {} that uses it \
                     had not run (no wait for the side lane)",
                    self.bytes,
                    self.side_use.get()
                )));
                return;
            }
            // SAFETY: `ptr` and `words` come from `Box::into_raw` of a `[u64]` of that length,
            // and no queued side-lane operation uses the memory (checked above).
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.words))
            });
        }
    }

    /// [`Exec`] on the host emulator, pretending to have `sm_count` multiprocessors.
    ///
    /// The main compute lane and the copy lane run each operation when it is issued, so they
    /// cannot race here; instead the emulator checks the ordering calls a device needs between
    /// them, and fails the call that breaks one. Operations on each lane are numbered. A compute
    /// operation (kernel, copy, download) on a buffer with a copy-lane copy the compute lane was
    /// not told to wait for (`compute_waits_for_copies`) is an error, and so is a copy into a
    /// buffer that compute operations used after the last point the copy lane waited for
    /// (`copies_wait_for`). The side compute lane ([`Exec::lane`] 1) runs late instead: its
    /// operations queue up and run only when the main lane waits for them
    /// (`compute_waits_for` an event the side lane recorded) or the host does (a side-lane
    /// download), the latest a device may run them. A driver that reads the side lane's results
    /// without waiting reads stale data, and one that drops a buffer queued side work still
    /// uses makes every later call fail.
    ///
    /// A kernel takes dynamic shared memory through `CUZK_DYNAMIC_SHARED` (kernels/msm/msm.cu),
    /// which the emulator maps to a buffer of the launch's size, poisoned before each block. A
    /// kernel that synchronises runs each block's threads as host threads, so such kernels (the
    /// scan, the two-pass sort, the inversion's top) take launch shapes that stay small at the
    /// tests' sizes: the sort's second pass a thread per 16 entries of its stage, which the tests
    /// cut to 16 entries, its first pass blocks of 64 threads in the tests.
    #[derive(Debug, Default)]
    pub(crate) struct EmuExec {
        pub(crate) sm_count: u32,
        /// The compute lane of this view ([`Exec::lane`]).
        lane: u32,
        /// The lanes' counters and the side lane's queue, shared by every lane's view.
        state: Rc<EmuState>,
    }

    /// A side-lane operation, run when something waits for it.
    type SideOp = Box<dyn FnOnce() -> Result<(), GpuMsmError>>;

    #[derive(Default)]
    struct EmuState {
        /// Copy-lane copies issued so far.
        copies: Cell<u64>,
        /// Copies the compute lanes have waited for (the first this many).
        compute_waited: Cell<u64>,
        /// Compute operations issued so far on either compute lane (allocations included).
        computes: Cell<u64>,
        /// Compute operations the copy lane has waited for (the first this many).
        copies_waited: Cell<u64>,
        /// Side-lane operations not yet run, oldest first; how many were issued, and run.
        side_queue: RefCell<VecDeque<SideOp>>,
        side_issued: Cell<u64>,
        side_run: Cell<u64>,
        /// Why every call fails from now on (a buffer dropped under queued side work).
        violation: RefCell<Option<String>>,
        /// Bytes and buffers allocated so far.
        allocated: Cell<(usize, usize)>,
    }

    impl std::fmt::Debug for EmuState {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "EmuState(copies {}, computes {}, side {} of {} run)",
                self.copies.get(),
                self.computes.get(),
                self.side_run.get(),
                self.side_issued.get()
            )
        }
    }

    /// An event: the compute operations issued when it was recorded, and on the side lane, the
    /// side-lane operations issued by then.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct EmuEvent {
        computes: u64,
        side: Option<u64>,
    }

    impl EmuExec {
        pub(crate) fn new(sm_count: u32) -> Self {
            Self {
                sm_count,
                ..Self::default()
            }
        }

        /// Numbers a compute operation on `bufs`, after checking that each has no copy the
        /// compute lanes have not waited for (and that no earlier call broke the side lane's
        /// rules).
        fn compute_on(&self, what: &str, bufs: &[&EmuBuf]) -> Result<(), GpuMsmError> {
            let state = &self.state;
            if let Some(why) = state.violation.borrow().as_ref() {
                return Err(GpuMsmError::Emulator(why.clone()));
            }
            for buf in bufs {
                if buf.copied_by.get() > state.compute_waited.get() {
                    return Err(GpuMsmError::Emulator(format!(
                        "{what} uses a buffer of {} bytes whose copy (number {}) the compute lane \
                         did not wait for",
                        buf.bytes,
                        buf.copied_by.get()
                    )));
                }
            }
            let n = state.computes.get() + 1;
            state.computes.set(n);
            for buf in bufs {
                buf.used_by.set(n);
            }
            Ok(())
        }

        /// Runs `op` on this view's lane: now on the main lane; on the side lane, queued until
        /// something waits for it, with `bufs` marked as used by it.
        fn issue(
            &self,
            bufs: &[&EmuBuf],
            op: impl FnOnce() -> Result<(), GpuMsmError> + 'static,
        ) -> Result<(), GpuMsmError> {
            if self.lane == 0 {
                return op();
            }
            let n = self.state.side_issued.get() + 1;
            self.state.side_issued.set(n);
            for buf in bufs {
                buf.side_use.set(n);
            }
            self.state.side_queue.borrow_mut().push_back(Box::new(op));
            Ok(())
        }

        /// Runs the side lane's queued operations up to the `upto`-th issued.
        fn run_side(&self, upto: u64) -> Result<(), GpuMsmError> {
            while self.state.side_run.get() < upto {
                let op = self.state.side_queue.borrow_mut().pop_front();
                let Some(op) = op else { break };
                self.state.side_run.set(self.state.side_run.get() + 1);
                op()?;
            }
            Ok(())
        }
    }

    fn same_size(expected: usize, got: usize) -> Result<(), GpuMsmError> {
        if expected == got {
            Ok(())
        } else {
            Err(GpuMsmError::Emulator(format!(
                "copy of {got} bytes into {expected}"
            )))
        }
    }

    impl Exec for EmuExec {
        type Buf = EmuBuf;
        type Event = EmuEvent;
        type Pinned = [u8];
        type Staging = Vec<u8>;

        fn sm_count(&self) -> u32 {
            self.sm_count
        }

        fn allocated(&self) -> Option<(usize, usize)> {
            Some(self.state.allocated.get())
        }

        fn alloc(&self, bytes: usize) -> Result<EmuBuf, GpuMsmError> {
            let (total, count) = self.state.allocated.get();
            self.state.allocated.set((total + bytes, count + 1));
            // Allocated on the compute lane, as on the device.
            let buf = EmuBuf::new(bytes, &self.state);
            self.compute_on("an allocation", &[&buf])?;
            Ok(buf)
        }

        fn size(buf: &EmuBuf) -> usize {
            buf.bytes
        }

        fn zero(&self, buf: &mut EmuBuf) -> Result<(), GpuMsmError> {
            self.compute_on("a clear", &[buf])?;
            let (ptr, bytes) = (buf.ptr.cast::<u8>() as usize, buf.bytes);
            self.issue(&[buf], move || {
                // SAFETY: the buffer's `bytes` bytes stay allocated until this has run
                // (EmuBuf::drop leaks a buffer with queued side work).
                unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
                Ok(())
            })
        }

        fn upload(&self, dst: &mut EmuBuf, src: &[u8]) -> Result<(), GpuMsmError> {
            same_size(dst.bytes, src.len())?;
            self.compute_on("an upload", &[dst])?;
            let (ptr, data) = (dst.ptr.cast::<u8>() as usize, src.to_vec());
            self.issue(&[dst], move || {
                // SAFETY: as in `zero`; `data` has the buffer's size (checked above).
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr as *mut u8, data.len()) };
                Ok(())
            })
        }

        fn upload_pinned(
            &self,
            dst: &mut EmuBuf,
            src: &[u8],
            range: std::ops::Range<usize>,
        ) -> Result<(), GpuMsmError> {
            let len = src.len();
            let src = src
                .get(range.clone())
                .ok_or_else(|| GpuMsmError::Emulator(format!("bytes {range:?} of {len}")))?;
            if src.len() > dst.bytes {
                return Err(GpuMsmError::Emulator(format!(
                    "copy of {} bytes into {}",
                    src.len(),
                    dst.bytes
                )));
            }
            if dst.used_by.get() > self.state.copies_waited.get() {
                return Err(GpuMsmError::Emulator(format!(
                    "a copy into a buffer of {} bytes that compute operation {} uses, which the \
                     copy lane did not wait for",
                    dst.bytes,
                    dst.used_by.get()
                )));
            }
            let n = self.state.copies.get() + 1;
            self.state.copies.set(n);
            dst.copied_by.set(n);
            dst.bytes_mut()[..src.len()].copy_from_slice(src);
            Ok(())
        }

        fn alloc_staging(&self, bytes: usize) -> Result<Vec<u8>, GpuMsmError> {
            Ok(vec![0xa5; bytes])
        }

        fn fill_staging(&self, dst: &mut Vec<u8>, src: &[u8]) -> Result<(), GpuMsmError> {
            let len = dst.len();
            dst.get_mut(..src.len())
                .ok_or_else(|| {
                    GpuMsmError::Emulator(format!("{} bytes staged in {len}", src.len()))
                })?
                .copy_from_slice(src);
            Ok(())
        }

        fn staged(src: &Vec<u8>) -> &[u8] {
            src
        }

        fn wait_for_copies(&self) -> Result<(), GpuMsmError> {
            // The host waited: every copy has landed, for the compute lane too.
            self.state.compute_waited.set(self.state.copies.get());
            Ok(())
        }

        fn compute_waits_for_copies(&self) -> Result<(), GpuMsmError> {
            self.state.compute_waited.set(self.state.copies.get());
            Ok(())
        }

        fn record_compute(&self) -> Result<EmuEvent, GpuMsmError> {
            Ok(EmuEvent {
                computes: self.state.computes.get(),
                side: (self.lane != 0).then(|| self.state.side_issued.get()),
            })
        }

        fn copies_wait_for(&self, event: &EmuEvent) -> Result<(), GpuMsmError> {
            let waited = self.state.copies_waited.get().max(event.computes);
            self.state.copies_waited.set(waited);
            Ok(())
        }

        fn lane(&self, lane: u32) -> Self {
            Self {
                sm_count: self.sm_count,
                lane,
                state: Rc::clone(&self.state),
            }
        }

        fn compute_waits_for(&self, event: &EmuEvent) -> Result<(), GpuMsmError> {
            // The main lane has run everything it was given, so only a wait for the side
            // lane's work has anything to do.
            match (self.lane, event.side) {
                (0, Some(upto)) => self.run_side(upto),
                _ => Ok(()),
            }
        }

        fn wait_for_lane(&self) -> Result<(), GpuMsmError> {
            self.run_side(self.state.side_issued.get())
        }

        fn copy(&self, src: &EmuBuf, dst: &mut EmuBuf) -> Result<(), GpuMsmError> {
            same_size(dst.bytes, src.bytes)?;
            self.compute_on("a device copy", &[src, dst])?;
            let (from, to, bytes) = (src.ptr as usize, dst.ptr as usize, src.bytes);
            self.issue(&[src, dst], move || {
                // SAFETY: as in `zero`, for both buffers, which are distinct (`&mut dst`) and
                // of `bytes` bytes (checked above).
                unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
                Ok(())
            })
        }

        fn download(&self, src: &EmuBuf, dst: &mut [u8]) -> Result<(), GpuMsmError> {
            same_size(src.bytes, dst.len())?;
            // The host waits for the lane: on the side lane, everything queued runs first.
            if self.lane != 0 {
                self.run_side(self.state.side_issued.get())?;
            }
            self.compute_on("a download", &[src])?;
            dst.copy_from_slice(src.bytes());
            Ok(())
        }

        fn launch_shared(
            &self,
            kernel: &'static str,
            grid: u32,
            block: u32,
            shared_bytes: u32,
            args: &[Arg<'_, EmuBuf>],
        ) -> Result<(), GpuMsmError> {
            let bufs: Vec<&EmuBuf> = args
                .iter()
                .filter_map(|arg| match arg {
                    Arg::Buf(b) => Some(*b),
                    _ => None,
                })
                .collect();
            self.compute_on(kernel, &bufs)?;
            // One 8-byte slot per argument holding its value (a buffer's host address, or the
            // integer in its low bytes), and the array of pointers to the slots the launcher
            // takes, as cuLaunchKernel does.
            let mut slots: Vec<u64> = args
                .iter()
                .map(|arg| match arg {
                    Arg::Buf(b) => b.ptr as u64,
                    Arg::U32(v) => u64::from(*v),
                    Arg::U64(v) => *v,
                })
                .collect();
            self.issue(&bufs, move || {
                let mut params: Vec<*mut c_void> = slots
                    .iter_mut()
                    .map(|s| (s as *mut u64).cast::<c_void>())
                    .collect();
                // SAFETY: the launch wrappers pass each kernel its arguments in order and with
                // its C types, with buffers large enough for the kernel's indices (as on the
                // device), allocated until this has run (as in `zero`); `slots` and `params`
                // outlive the synchronous call; on a little-endian host a uint32_t parameter
                // reads the low half of its slot.
                unsafe {
                    cuzk_gpu::emu::launch(kernel, (grid, 1, 1), block, shared_bytes, &mut params)
                }
                .map_err(|e| GpuMsmError::Emulator(e.to_string()))
            })
        }
    }
}
