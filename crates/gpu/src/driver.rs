//! The driver layer: cudarc's driver API behind cuzk's types and [`GpuError`].
//!
//! Ordering contract: a [`Device`] turns off cudarc's per-buffer event tracking, so nothing
//! orders work on a buffer across streams behind the caller's back (no hidden event records or
//! waits on the hot path). Work on one stream runs in order; work on different streams is ordered
//! by the caller with [`Stream::record_event`] and [`Stream::wait_event`]. A [`DeviceBuffer`] from
//! the stream's pool is freed on the stream it was allocated on, so it must outlive any use on
//! other streams; one lent from a [`SharedRegion`] (an arena's range) returns its range to the
//! owner when it drops, and the owner decides when the range may be reused (cuzk-vram: after a
//! fence). Copies and kernel arguments work on addresses, the same for both.
#![allow(unsafe_code)]

use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::sync::Arc;

use crate::args::{KernelArgs, LaunchConfig};
use crate::copy::{bytes_of, bytes_of_mut, check_len, check_range, check_same_size, DeviceCopy};
use crate::{DeviceInfo, GpuError};
use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream,
    DevicePtr, DriverError,
};

mod mapped;
mod pinned;
pub use pinned::{PinnedBuffer, PinnedBytes};

fn driver<T>(call: &'static str, r: Result<T, DriverError>) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Driver {
        call,
        status: format!("{:?}", e.0),
    })
}

/// An open device: its primary context and what it is.
#[derive(Clone, Debug)]
pub struct Device {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
}

impl Device {
    fn ensure_driver() -> Result<(), GpuError> {
        // SAFETY: `is_culib_present` only tries to open libcuda with the dynamic loader and
        // closes it again; it calls no CUDA function.
        if unsafe { sys::is_culib_present() } {
            Ok(())
        } else {
            Err(GpuError::NoDriver)
        }
    }

    /// The number of CUDA devices (0 when the driver sees none).
    pub fn count() -> Result<usize, GpuError> {
        Self::ensure_driver()?;
        match CudaContext::device_count() {
            Ok(n) => Ok(n.max(0) as usize),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
            Err(e) => driver("cuDeviceGetCount", Err(e)),
        }
    }

    /// Opens device `ordinal` (its primary context).
    pub fn open(ordinal: usize) -> Result<Self, GpuError> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        let ctx = driver("cuDevicePrimaryCtxRetain", CudaContext::new(ordinal))?;
        // SAFETY: turning tracking off only removes cudarc's automatic cross-stream ordering of
        // buffer accesses; cuzk orders streams itself (see the module's ordering contract).
        unsafe { ctx.disable_event_tracking() };
        let attr = |a: sys::CUdevice_attribute| driver("cuDeviceGetAttribute", ctx.attribute(a));
        use sys::CUdevice_attribute as A;
        let (major, minor) = driver("cuDeviceGetAttribute", ctx.compute_capability())?;
        let info = DeviceInfo {
            ordinal,
            name: driver("cuDeviceGetName", ctx.name())?,
            total_memory: driver("cuDeviceTotalMem", ctx.total_mem())?,
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            compute_capability: (major as u32, minor as u32),
            clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            max_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize,
        };
        Ok(Self { ctx, info })
    }

    /// Every device the driver sees.
    pub fn all() -> Result<Vec<Self>, GpuError> {
        (0..Self::count()?).map(Self::open).collect()
    }

    /// What this device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        driver("cuMemGetInfo", self.ctx.mem_get_info())
    }

    /// The device's default memory pool, which every [`Stream::alloc`] draws from.
    fn default_pool(&self) -> Result<sys::CUmemoryPool, GpuError> {
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid place for the handle and `cu_device` is this context's
        // device; the call only reads the driver's state.
        driver("cuDeviceGetDefaultMemPool", unsafe {
            sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()).result()
        })?;
        Ok(pool)
    }

    /// Lets the default pool keep up to `bytes` of freed memory mapped for later allocations
    /// (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`). The driver's default is zero: at every
    /// synchronisation the pool unmaps what has been freed, and the next allocation maps it
    /// again, which costs several milliseconds per GiB on an H200. A process that owns the
    /// device and allocates large workspaces of changing sizes (the MSMs of a proof) wants
    /// `u64::MAX`; [`trim_pool`](Self::trim_pool) gives the memory back when asked.
    pub fn set_pool_release_threshold(&self, bytes: u64) -> Result<(), GpuError> {
        let pool = self.default_pool()?;
        let mut value = bytes;
        // SAFETY: the attribute takes a `cuuint64_t` (u64), read through the pointer during the
        // call only.
        driver("cuMemPoolSetAttribute", unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut value as *mut u64).cast(),
            )
            .result()
        })
    }

    /// Unmaps the default pool's free memory beyond `keep` bytes. It does not wait for the
    /// device: memory still in use by queued work stays.
    pub fn trim_pool(&self, keep: usize) -> Result<(), GpuError> {
        let pool = self.default_pool()?;
        // SAFETY: a valid pool handle; trimming only releases memory no allocation holds.
        driver("cuMemPoolTrimTo", unsafe {
            sys::cuMemPoolTrimTo(pool, keep).result()
        })
    }

    /// The legacy default stream of the context.
    pub fn default_stream(&self) -> Stream {
        Stream {
            inner: self.ctx.default_stream(),
        }
    }

    /// A new non-blocking stream.
    pub fn new_stream(&self) -> Result<Stream, GpuError> {
        Ok(Stream {
            inner: driver("cuStreamCreate", self.ctx.new_stream())?,
        })
    }

    /// Waits for all work on the device. Not for hot paths: it synchronises every stream.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        driver("cuCtxSynchronize", self.ctx.synchronize())
    }

    /// Loads a module from a fatbin, cubin or PTX image (an embedded `*.fatbin`).
    pub fn load_module(&self, image: &[u8]) -> Result<Module, GpuError> {
        let ptx = cudarc::nvrtc::Ptx::from_binary(image.to_vec());
        Ok(Module {
            inner: driver("cuModuleLoadData", self.ctx.load_module(ptx))?,
        })
    }
}

/// A stream: work on it runs in submission order.
#[derive(Clone, Debug)]
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl Stream {
    fn bind(&self) -> Result<(), GpuError> {
        driver("cuCtxSetCurrent", self.inner.context().bind_to_thread())
    }

    /// Allocates `len` elements, uninitialised (whatever bits the device memory holds).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            GpuError::InvalidArgument(format!("{len} elements overflow the address space"))
        })?;
        let slice = if bytes == 0 {
            driver("cuMemAllocAsync", self.inner.null::<u8>())?
        } else {
            // SAFETY: the memory is left uninitialised; that is sound because the host only ever
            // sees it through copies into `T: DeviceCopy`, valid for every bit pattern.
            driver("cuMemAllocAsync", unsafe { self.inner.alloc::<u8>(bytes) })?
        };
        Ok(DeviceBuffer {
            storage: Storage::Pool(slice),
            len,
            _marker: PhantomData,
        })
    }

    /// Allocates `len` zeroed elements.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        let mut buf = self.alloc(len)?;
        self.memset_zero(&mut buf)?;
        Ok(buf)
    }

    /// Copies a host slice into a new device buffer.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        let mut buf = self.alloc(host.len())?;
        self.copy_to_device(host, &mut buf)?;
        Ok(buf)
    }

    /// Copies a host slice into a device buffer of the same length.
    pub fn copy_to_device<T: DeviceCopy>(
        &self,
        host: &[T],
        device: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        check_len(device.len, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the destination is the buffer's own memory (`&mut`: no other host-side user),
        // `host.len()` elements long (checked above); the source is a live host slice of the
        // same size, which a copy from pageable memory has staged when the call returns.
        driver("cuMemcpyHtoDAsync", unsafe {
            result::memcpy_htod_async(device.address(), bytes_of(host), self.inner.cu_stream())
        })
    }

    /// Copies a device buffer into a host slice of the same length; returns once the data is on
    /// the host.
    pub fn copy_to_host<T: DeviceCopy>(
        &self,
        device: &DeviceBuffer<T>,
        host: &mut [T],
    ) -> Result<(), GpuError> {
        check_len(device.len, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the source is the buffer's memory, `host.len()` elements (checked above); the
        // destination is a live mutable host slice of that size, handed back only after the
        // stream has been synchronised below.
        driver("cuMemcpyDtoHAsync", unsafe {
            result::memcpy_dtoh_async(bytes_of_mut(host), device.address(), self.inner.cu_stream())
        })?;
        self.synchronize()
    }

    /// Copies a host slice into `device` starting at element `offset`. The host elements may be
    /// of another type of the same size (blstrs scalars into a buffer of `FrLimbs`, say): the
    /// bytes are copied as they are.
    pub fn copy_to_device_at<T: DeviceCopy, H: DeviceCopy>(
        &self,
        host: &[H],
        device: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<(), GpuError> {
        check_same_size::<T, H>()?;
        check_range(device.len, offset, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        let at = device.address() + (offset * size_of::<T>()) as u64;
        self.bind()?;
        // SAFETY: elements from `offset` on, as many as the host holds, lie inside the buffer (checked above), which `&mut`
        // makes ours; the source is a live host slice of exactly those bytes (same element size,
        // checked), staged by the driver when the call returns.
        driver("cuMemcpyHtoDAsync", unsafe {
            result::memcpy_htod_async(at, bytes_of(host), self.inner.cu_stream())
        })
    }

    /// Copies `host.len()` elements of `device` starting at element `offset` into `host` (of the
    /// buffer's element type or another of the same size); returns once the data is on the host.
    pub fn copy_to_host_at<T: DeviceCopy, H: DeviceCopy>(
        &self,
        device: &DeviceBuffer<T>,
        offset: usize,
        host: &mut [H],
    ) -> Result<(), GpuError> {
        check_same_size::<T, H>()?;
        check_range(device.len, offset, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        let at = device.address() + (offset * size_of::<T>()) as u64;
        self.bind()?;
        // SAFETY: elements from `offset` on, as many as the host holds, lie inside the buffer (checked above); the destination
        // is a live mutable host slice of exactly those bytes, handed back only after the stream
        // has been synchronised below.
        driver("cuMemcpyDtoHAsync", unsafe {
            result::memcpy_dtoh_async(bytes_of_mut(host), at, self.inner.cu_stream())
        })?;
        self.synchronize()
    }

    /// Copies a device buffer into a new host vector.
    pub fn download<T: DeviceCopy + Default>(
        &self,
        device: &DeviceBuffer<T>,
    ) -> Result<Vec<T>, GpuError> {
        let mut host = vec![T::default(); device.len];
        self.copy_to_host(device, &mut host)?;
        Ok(host)
    }

    /// Copies one device buffer into another of the same length.
    pub fn copy_device<T: DeviceCopy>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        check_len(dst.len, src.len)?;
        if src.len == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges are their buffers' own `size_bytes()` (equal lengths, checked), in
        // this device's memory; they do not overlap, since `dst` is borrowed mutably while `src`
        // is borrowed, and two live buffers never share memory.
        driver("cuMemcpyDtoDAsync", unsafe {
            result::memcpy_dtod_async(
                dst.address(),
                src.address(),
                src.size_bytes(),
                self.inner.cu_stream(),
            )
        })
    }

    /// Sets every byte of a buffer to zero.
    pub fn memset_zero<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>) -> Result<(), GpuError> {
        if buf.len == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the range is the buffer's own `size_bytes()`, which `&mut` makes ours.
        driver("cuMemsetD8Async", unsafe {
            result::memset_d8_async(buf.address(), 0, buf.size_bytes(), self.inner.cu_stream())
        })
    }

    /// Records an event (with timing) at this point of the stream.
    pub fn record_event(&self) -> Result<Event, GpuError> {
        let event = driver(
            "cuEventCreate",
            self.inner
                .context()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)),
        )?;
        driver("cuEventRecord", event.record(&self.inner))?;
        Ok(Event { inner: event })
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait_event(&self, event: &Event) -> Result<(), GpuError> {
        driver("cuStreamWaitEvent", self.inner.wait(&event.inner))
    }

    /// Blocks until all work submitted to this stream has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        driver("cuStreamSynchronize", self.inner.synchronize())
    }
}

/// A point in a stream's work, for timing and cross-stream ordering.
#[derive(Debug)]
pub struct Event {
    inner: CudaEvent,
}

impl Event {
    /// Milliseconds from `self` to `end` (waits for both).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, GpuError> {
        driver("cuEventElapsedTime", self.inner.elapsed_ms(&end.inner))
    }

    /// Blocks until the work before the event has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        driver("cuEventSynchronize", self.inner.synchronize())
    }

    /// Whether the work before the event has finished. Never blocks and never synchronises the
    /// device (`cuEventQuery`): this is how the VRAM arena learns a buffer may be reused.
    pub fn is_complete(&self) -> Result<bool, GpuError> {
        driver("cuEventQuery", self.inner.try_is_complete())
    }
}

/// One device allocation whose disjoint byte ranges are used by different owners at once: the
/// region a VRAM arena sub-allocates.
///
/// Ownership of the ranges is the arena's business, not the driver's, so the copies into and
/// out of a range are `unsafe`: the caller promises the range is its own.
#[derive(Debug)]
pub struct SharedRegion {
    buf: DeviceBuffer<u8>,
}

impl SharedRegion {
    /// Allocates `bytes` bytes of device memory on `stream`'s device.
    pub fn new(stream: &Stream, bytes: usize) -> Result<Self, GpuError> {
        Ok(Self {
            buf: stream.alloc(bytes)?,
        })
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The device address of byte `offset`, for kernel arguments.
    pub fn address_at(&self, offset: usize) -> Result<u64, GpuError> {
        check_range(self.buf.len(), offset, 0)?;
        Ok(self.buf.address() + offset as u64)
    }

    /// `len` elements of `T` from byte `offset` of the region as a [`DeviceBuffer`], which
    /// holds `keep` until it drops: an arena lends a range this way, `keep` being its handle on
    /// the range, which returns the range to the arena when the buffer drops. Every copy, clear
    /// and kernel argument then works on the buffer as on one from the pool.
    ///
    /// # Safety
    /// While the buffer lives, nothing else uses those bytes (the caller owns the range, e.g.
    /// as a live arena buffer moved into `keep`), and the region stays allocated (`keep` holds
    /// it, as an arena buffer holds its arena).
    pub unsafe fn lend<T: DeviceCopy>(
        &self,
        offset: usize,
        len: usize,
        keep: Box<dyn Any + Send + Sync>,
    ) -> Result<DeviceBuffer<T>, GpuError> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            GpuError::InvalidArgument(format!("{len} elements overflow the address space"))
        })?;
        check_range(self.buf.len(), offset, bytes)?;
        let address = self.buf.address() + offset as u64;
        if address % align_of::<T>() as u64 != 0 {
            return Err(GpuError::InvalidArgument(format!(
                "a lent range at {address:#x} is not aligned for {}-byte elements",
                align_of::<T>()
            )));
        }
        Ok(DeviceBuffer {
            storage: Storage::Lent {
                address,
                _keep: keep,
            },
            len,
            _marker: PhantomData,
        })
    }

    /// Copies `host` to `offset..offset + host.len()`, ordered on `stream`. With pageable host
    /// memory (a `Vec`) the driver has staged the bytes when this returns.
    ///
    /// # Safety
    /// No other operation may access that range until this copy has completed on `stream`
    /// (the caller owns the range, e.g. as a live arena buffer).
    pub unsafe fn upload_at(
        &self,
        stream: &Stream,
        offset: usize,
        host: &[u8],
    ) -> Result<(), GpuError> {
        check_range(self.buf.len(), offset, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        stream.bind()?;
        // SAFETY: the range is inside the allocation (checked above) and, by the caller's
        // contract, used by nothing else; the source is a live host slice of that length.
        driver("cuMemcpyHtoDAsync", unsafe {
            result::memcpy_htod_async(
                self.buf.address() + offset as u64,
                host,
                stream.inner.cu_stream(),
            )
        })
    }

    /// Copies `offset..offset + host.len()` to `host` after the work already on `stream`, and
    /// waits for it.
    ///
    /// # Safety
    /// No other stream may write that range until this copy has completed.
    pub unsafe fn download_at(
        &self,
        stream: &Stream,
        offset: usize,
        host: &mut [u8],
    ) -> Result<(), GpuError> {
        check_range(self.buf.len(), offset, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        stream.bind()?;
        // SAFETY: the range is inside the allocation (checked above) and not written by anyone
        // else meanwhile (the caller's contract); the destination is a live mutable host slice
        // of that length, and the stream is synchronised before it is handed back.
        driver("cuMemcpyDtoHAsync", unsafe {
            result::memcpy_dtoh_async(
                host,
                self.buf.address() + offset as u64,
                stream.inner.cu_stream(),
            )
        })?;
        stream.synchronize()
    }
}

/// Where a [`DeviceBuffer`]'s memory comes from.
enum Storage {
    /// An allocation of the stream's pool (`cuMemAllocAsync`), freed on its stream when the
    /// buffer drops.
    Pool(CudaSlice<u8>),
    /// A range of a [`SharedRegion`] ([`SharedRegion::lend`]): `keep` is the owner's handle on
    /// it, dropped with the buffer.
    Lent {
        address: u64,
        _keep: Box<dyn Any + Send + Sync>,
    },
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Storage::Pool(slice) => write!(f, "Pool({} bytes)", slice.len()),
            Storage::Lent { address, .. } => write!(f, "Lent({address:#x})"),
        }
    }
}

/// `len` elements of `T` in device memory (every copy and kernel argument covers those `len`,
/// also after [`DeviceBuffer::truncate`]): an allocation of the stream's pool
/// ([`Stream::alloc`]) or a range lent by an arena ([`SharedRegion::lend`]).
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    storage: Storage,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Keeps the first `len` elements (no effect when `len` is not smaller): kernels and copies
    /// then see the shorter buffer, and the whole allocation is freed when it drops.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Whether the memory is lent by an arena ([`SharedRegion::lend`]) rather than the pool's.
    pub fn is_lent(&self) -> bool {
        matches!(self.storage, Storage::Lent { .. })
    }

    /// The same memory as `size_bytes() / size_of::<U>()` elements of `U` (a workspace hands
    /// out bytes; its users want typed buffers). Fails unless the bytes are a whole number of
    /// `U`s at an address aligned for `U`.
    pub fn cast<U: DeviceCopy>(self) -> Result<DeviceBuffer<U>, GpuError> {
        let bytes = self.size_bytes();
        let size = size_of::<U>();
        if size == 0 || bytes % size != 0 || self.address() % align_of::<U>() as u64 != 0 {
            return Err(GpuError::InvalidArgument(format!(
                "{bytes} bytes at {:#x} as elements of {size} bytes",
                self.address()
            )));
        }
        Ok(DeviceBuffer {
            storage: self.storage,
            len: bytes / size,
            _marker: PhantomData,
        })
    }

    pub(crate) fn address(&self) -> u64 {
        match &self.storage {
            Storage::Pool(slice) => {
                // With event tracking off (see `Device::open`) the returned guard records nothing.
                let (ptr, _guard) = slice.device_ptr(slice.stream());
                ptr
            }
            Storage::Lent { address, .. } => *address,
        }
    }
}

/// A module loaded from an embedded image.
#[derive(Clone, Debug)]
pub struct Module {
    inner: Arc<CudaModule>,
}

impl Module {
    /// The kernel `name` (an `extern "C"` `__global__` function).
    pub fn kernel(&self, name: &'static str) -> Result<Kernel, GpuError> {
        let function = driver("cuModuleGetFunction", self.inner.load_function(name))?;
        Ok(Kernel { function, name })
    }
}

/// A kernel of a loaded module.
#[derive(Clone, Debug)]
pub struct Kernel {
    function: CudaFunction,
    name: &'static str,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Registers per thread, as compiled for this device.
    pub fn registers(&self) -> Result<u32, GpuError> {
        driver("cuFuncGetAttribute", self.function.num_regs()).map(|r| r as u32)
    }

    /// Allows launches with up to `bytes` of dynamic shared memory (above the 48 KiB default).
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<(), GpuError> {
        driver(
            "cuFuncSetAttribute",
            self.function.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            ),
        )
    }

    /// Launches the kernel on `stream`.
    ///
    /// # Safety
    ///
    /// `args` must match the kernel's parameter list in number, order and types, and the
    /// kernel must stay within the buffers it is given for the launch shape `config` (the
    /// kernel's header comment states its contract). The buffers must stay alive until the
    /// kernel has finished, which holds for buffers used only on this stream.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &KernelArgs<'_>,
    ) -> Result<(), GpuError> {
        stream.bind()?;
        let mut params: Vec<*mut c_void> = args
            .values
            .iter()
            .map(|v| v.as_ptr() as *mut c_void)
            .collect();
        // SAFETY: the function belongs to a module loaded in the stream's context (bound
        // above); every entry of `params` points to a live, 8-byte aligned copy of one argument
        // value; the caller guarantees that the arguments match the kernel and that it stays in
        // bounds.
        let launched = unsafe {
            result::launch_kernel(
                self.function.cu_function(),
                config.grid,
                config.block,
                config.shared_bytes,
                stream.inner.cu_stream(),
                &mut params,
            )
        };
        launched.map_err(|e| GpuError::Driver {
            call: "cuLaunchKernel",
            status: format!("{:?} ({})", e.0, self.name),
        })
    }
}
