//! The driver API on host memory (feature `emu`): the same types and calls as the CUDA driver
//! layer, with "device" memory in host allocations and kernels run by the host emulator
//! (`kernels/emu/`: the MSM and NTT kernel sources compiled by the C++ compiler), so that every
//! GPU code path above this crate (the MSM, the NTT, the GPU prover) runs, slowly, on a machine
//! without a GPU, and CI checks its results against the CPU's.
//!
//! One emulated device by default (ordinal 0, [`EMULATED_NAME`]; [`set_device_count`] makes
//! more, for tests of several devices), each with one stream order: every operation runs when
//! it is issued, in issue order, so events are complete when recorded. Ordering bugs
//! between streams therefore do not show here; cuzk-msm's own emulated executor, which runs work
//! as late as a device may, is where those are caught. Fresh allocations are filled with a
//! poison pattern, as the device leaves them uninitialised, and so is every range a
//! [`SharedRegion`] lends (an arena's buffer holds whatever its last user left). A region itself
//! is zeroed host memory the operating system maps only where it is written, so an arena the
//! size of a device's working memory costs only what the tests touch.
//!
//! Tests make a device fail on purpose with [`fail_next`]: the next allocation or kernel launch
//! on that device returns the driver's error, as a device out of memory or a faulting kernel
//! would.
//!
//! With `emu` on, this module replaces the CUDA driver layer even when `cuda` is on too: a
//! build meant for a GPU must not turn `emu` on.
#![allow(unsafe_code)]

use std::any::Any;
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void, CString};
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::args::{KernelArgs, LaunchConfig};
use crate::copy::{bytes_of, bytes_of_mut, check_len, check_range, check_same_size, DeviceCopy};
use crate::{DeviceInfo, DriverCalls, GpuError};

/// The emulated device's name.
pub const EMULATED_NAME: &str = "cuzk kernel emulator";

/// The emulated device's memory, as its [`DeviceInfo`] and [`Device::memory`] report it.
const EMULATED_MEMORY: usize = 16 << 30;

/// The byte fresh allocations are filled with.
const POISON: u8 = 0xa5;

/// How many devices the emulator has.
static DEVICES: AtomicUsize = AtomicUsize::new(1);

/// Failures to inject: (device ordinal, what fails next).
static FAULTS: Mutex<Vec<(usize, Fault)>> = Mutex::new(Vec::new());

/// Makes the emulator report `count` devices (at least one), ordinals `0..count`, each with
/// its own memory; for tests of several devices. Applies to devices opened afterwards.
pub fn set_device_count(count: usize) {
    DEVICES.store(count.max(1), Ordering::SeqCst);
}

/// A driver failure [`fail_next`] injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The next allocation fails with `CUDA_ERROR_OUT_OF_MEMORY`.
    Alloc,
    /// The next kernel launch fails with `CUDA_ERROR_LAUNCH_FAILED` (a kernel fault).
    Launch,
}

/// Makes the next `fault` (allocation or kernel launch) on device `ordinal` fail, once.
pub fn fail_next(ordinal: usize, fault: Fault) {
    FAULTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((ordinal, fault));
}

/// Whether an injected `fault` is due on device `ordinal` (consumes it).
fn injected(ordinal: usize, fault: Fault) -> bool {
    let mut faults = FAULTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match faults.iter().position(|&f| f == (ordinal, fault)) {
        Some(i) => {
            faults.remove(i);
            true
        }
        None => false,
    }
}

static DEVICE_SYNCHRONIZE: AtomicU64 = AtomicU64::new(0);
static TRIM_POOL: AtomicU64 = AtomicU64::new(0);
static ALLOC: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calls counted on this thread (device synchronise, pool trim, allocation).
    static HERE: std::cell::Cell<DriverCalls> = const {
        std::cell::Cell::new(DriverCalls { device_synchronize: 0, trim_pool: 0, alloc: 0 })
    };
}

/// Counts one call, in the process's total and this thread's.
fn count(total: &AtomicU64, field: fn(&mut DriverCalls) -> &mut u64) {
    total.fetch_add(1, Ordering::SeqCst);
    HERE.with(|here| {
        let mut calls = here.get();
        *field(&mut calls) += 1;
        here.set(calls);
    });
}

/// The calls counted so far, by every thread of the process.
pub(crate) fn driver_calls() -> DriverCalls {
    DriverCalls {
        device_synchronize: DEVICE_SYNCHRONIZE.load(Ordering::SeqCst),
        trim_pool: TRIM_POOL.load(Ordering::SeqCst),
        alloc: ALLOC.load(Ordering::SeqCst),
    }
}

/// The calls counted so far by this thread.
pub(crate) fn driver_calls_here() -> DriverCalls {
    HERE.with(std::cell::Cell::get)
}

extern "C" {
    /// kernels/emu/emu.cpp: runs a kernel on the host; 0, or -1 for an unknown name.
    fn cuzk_emu_launch(
        name: *const c_char,
        grid_x: u32,
        grid_y: u32,
        grid_z: u32,
        block: u32,
        shared_bytes: u32,
        params: *mut *mut c_void,
    ) -> i32;
    /// kernels/emu/emu.cpp: 1 when the emulator has a kernel of that name, else 0.
    fn cuzk_emu_has(name: *const c_char) -> i32;
}

fn c_name(name: &str) -> Result<CString, GpuError> {
    CString::new(name).map_err(|_| GpuError::InvalidArgument(format!("kernel name {name:?}")))
}

/// Runs kernel `name` of the emulator on a grid of `grid` blocks of `block` threads with
/// `shared_bytes` of dynamic shared memory; `params` points to each argument's value, as
/// `cuLaunchKernel` takes them.
///
/// # Safety
///
/// `params` must match the kernel's parameter list in number, order and types, every pointer
/// argument must address live host memory the kernel may access for the launch's shape, and the
/// kernel must stay within it.
pub unsafe fn launch(
    name: &str,
    grid: (u32, u32, u32),
    block: u32,
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> Result<(), GpuError> {
    let c = c_name(name)?;
    // SAFETY: `c` is a NUL-terminated name; the caller guarantees the arguments (see above).
    let status = unsafe {
        cuzk_emu_launch(
            c.as_ptr(),
            grid.0,
            grid.1,
            grid.2,
            block,
            shared_bytes,
            params.as_mut_ptr(),
        )
    };
    if status == 0 {
        Ok(())
    } else {
        Err(GpuError::Driver {
            call: "cuzk_emu_launch",
            status: format!("no kernel named {name} in the emulator"),
        })
    }
}

/// The emulated device.
#[derive(Clone, Debug)]
pub struct Device {
    info: DeviceInfo,
}

impl Device {
    /// The emulated devices: one unless [`set_device_count`] said otherwise.
    pub fn count() -> Result<usize, GpuError> {
        Ok(DEVICES.load(Ordering::SeqCst))
    }

    /// The emulated device `ordinal`.
    pub fn open(ordinal: usize) -> Result<Self, GpuError> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        Ok(Self {
            info: DeviceInfo {
                ordinal,
                name: EMULATED_NAME.into(),
                total_memory: EMULATED_MEMORY,
                sm_count: 4,
                compute_capability: (9, 0),
                clock_khz: 1_000_000,
                l2_bytes: 4 << 20,
                max_shared_per_block: 227 << 10,
            },
        })
    }

    /// Every emulated device.
    pub fn all() -> Result<Vec<Self>, GpuError> {
        (0..Self::count()?).map(Self::open).collect()
    }

    /// What this device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Free and total memory: the emulated device reports all of it free.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        Ok((EMULATED_MEMORY, EMULATED_MEMORY))
    }

    /// Nothing to do: host allocations are not pooled.
    pub fn set_pool_release_threshold(&self, _bytes: u64) -> Result<(), GpuError> {
        Ok(())
    }

    /// Nothing to do: host allocations are not pooled (counted: `crate::counted_driver_calls`).
    pub fn trim_pool(&self, _keep: usize) -> Result<(), GpuError> {
        count(&TRIM_POOL, |c| &mut c.trim_pool);
        Ok(())
    }

    /// The stream (every stream of the emulator runs its work at once).
    pub fn default_stream(&self) -> Stream {
        Stream {
            ordinal: self.info.ordinal,
        }
    }

    /// A new stream.
    pub fn new_stream(&self) -> Result<Stream, GpuError> {
        Ok(self.default_stream())
    }

    /// Nothing to wait for: work runs when issued (counted: `crate::counted_driver_calls`).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        count(&DEVICE_SYNCHRONIZE, |c| &mut c.device_synchronize);
        Ok(())
    }

    /// A module: kernels are found by name in the emulator; the image is not read.
    pub fn load_module(&self, _image: &[u8]) -> Result<Module, GpuError> {
        Ok(Module { _private: () })
    }

    /// `len` zeroed elements of (plain) host memory standing in for pinned memory.
    pub fn alloc_pinned<T: DeviceCopy>(&self, len: usize) -> Result<PinnedBuffer<T>, GpuError> {
        let bytes = bytes_for::<T>(len)?;
        let mut mem = Memory::new(bytes);
        mem.bytes_mut().fill(0);
        crate::count_pinned(bytes, true);
        Ok(PinnedBuffer {
            mem,
            len,
            _marker: PhantomData,
        })
    }

    /// A copy of `values` in pinned memory.
    pub fn pin<T: DeviceCopy>(&self, values: &[T]) -> Result<PinnedBuffer<T>, GpuError> {
        let mut buf = self.alloc_pinned(values.len())?;
        buf.as_mut_slice()?.copy_from_slice(values);
        Ok(buf)
    }

    /// `host` mapped for the kernels to read in place (see the driver's): the emulated device's
    /// memory is host memory, so the buffer is the vector's address, and the mapping holds the
    /// vector. The same checks as the driver's.
    pub fn map_host<T: DeviceCopy, H: Copy + Send + Sync + 'static>(
        &self,
        host: std::sync::Arc<Vec<H>>,
    ) -> Result<crate::MappedHost<T>, GpuError> {
        let address = host.as_ptr() as u64;
        let len = host.len();
        crate::mapped::check_mappable::<T, H>(address as usize, len)?;
        Ok(crate::MappedHost {
            buf: DeviceBuffer {
                storage: Storage::Lent {
                    address,
                    _keep: Box::new((host, PinnedCount::new(len * size_of::<H>()))),
                },
                len,
                _marker: PhantomData,
            },
        })
    }
}

fn bytes_for<T>(len: usize) -> Result<usize, GpuError> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| {
        GpuError::InvalidArgument(format!("{len} elements overflow the address space"))
    })
}

/// A host allocation standing in for device memory: 16-byte aligned, as device allocations are
/// at least (kernels load 16-byte words). Kernels and region copies write it through its address
/// while only shared references exist, as on the device, hence the `UnsafeCell`s.
#[derive(Debug)]
struct Memory {
    words: Box<[UnsafeCell<u128>]>,
    bytes: usize,
}

// SAFETY: the memory is plain bytes; who may access which bytes when is the callers' contract,
// the same as for device memory (a stream's work in order; ranges of a region owned by one user).
unsafe impl Sync for Memory {}

impl Memory {
    /// `bytes` bytes, poisoned.
    fn new(bytes: usize) -> Self {
        let words = (0..bytes.div_ceil(16))
            .map(|_| UnsafeCell::new(u128::from_ne_bytes([POISON; 16])))
            .collect();
        Self { words, bytes }
    }

    /// `bytes` bytes, zeroed, from the allocator's zeroed pages (`calloc`: for large sizes,
    /// fresh mappings the operating system backs only where they are written).
    fn zeroed(bytes: usize) -> Self {
        let n = bytes.div_ceil(16);
        let words: Box<[UnsafeCell<u128>]> = match std::alloc::Layout::array::<u128>(n) {
            Ok(layout) if n > 0 => {
                // SAFETY: the layout has a non-zero size.
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                if ptr.is_null() {
                    std::alloc::handle_alloc_error(layout);
                }
                // SAFETY: `ptr` is a fresh allocation of the global allocator with the layout of
                // `n` u128s, all zero bytes, which is a valid `UnsafeCell<u128>` (same layout as
                // u128); the box frees it with the same layout.
                unsafe {
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                        ptr.cast::<UnsafeCell<u128>>(),
                        n,
                    ))
                }
            }
            _ => Box::new([]),
        };
        Self { words, bytes }
    }

    fn ptr(&self) -> *mut u8 {
        // `UnsafeCell<u128>` has the layout of `u128`, so the cells are contiguous bytes.
        UnsafeCell::raw_get(self.words.as_ptr()).cast::<u8>()
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation holds at least `bytes` initialised bytes, and the borrow is
        // exclusive, so no kernel or copy uses them meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.bytes) }
    }

    fn address(&self) -> u64 {
        self.ptr() as u64
    }
}

/// A stream of the emulated device: its work runs when issued.
#[derive(Clone, Debug)]
pub struct Stream {
    /// The device's ordinal (for injected faults).
    ordinal: usize,
}

impl Stream {
    /// Allocates `len` elements, filled with a poison pattern (as uninitialised device memory
    /// holds whatever it held).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        count(&ALLOC, |c| &mut c.alloc);
        if injected(self.ordinal, Fault::Alloc) {
            return Err(GpuError::Driver {
                call: "cuMemAllocAsync",
                status: "CUDA_ERROR_OUT_OF_MEMORY (injected by the emulator)".into(),
            });
        }
        Ok(DeviceBuffer {
            storage: Storage::Pool(Memory::new(bytes_for::<T>(len)?)),
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

    /// Copies a host slice into a new buffer.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        let mut buf = self.alloc(host.len())?;
        self.copy_to_device(host, &mut buf)?;
        Ok(buf)
    }

    /// Copies a host slice into a buffer of the same length.
    pub fn copy_to_device<T: DeviceCopy>(
        &self,
        host: &[T],
        device: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        check_len(device.len, host.len())?;
        device.bytes_mut().copy_from_slice(bytes_of(host));
        Ok(())
    }

    /// Copies a buffer into a host slice of the same length.
    pub fn copy_to_host<T: DeviceCopy>(
        &self,
        device: &DeviceBuffer<T>,
        host: &mut [T],
    ) -> Result<(), GpuError> {
        check_len(device.len, host.len())?;
        bytes_of_mut(host).copy_from_slice(device.bytes());
        Ok(())
    }

    /// Copies a host slice into `device` from element `offset` (host elements of the same size).
    pub fn copy_to_device_at<T: DeviceCopy, H: DeviceCopy>(
        &self,
        host: &[H],
        device: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<(), GpuError> {
        check_same_size::<T, H>()?;
        let end = check_range(device.len, offset, host.len())?;
        let size = size_of::<T>();
        device.bytes_mut()[offset * size..end * size].copy_from_slice(bytes_of(host));
        Ok(())
    }

    /// Copies `host.len()` elements of `device` from element `offset` into `host`.
    pub fn copy_to_host_at<T: DeviceCopy, H: DeviceCopy>(
        &self,
        device: &DeviceBuffer<T>,
        offset: usize,
        host: &mut [H],
    ) -> Result<(), GpuError> {
        check_same_size::<T, H>()?;
        let end = check_range(device.len, offset, host.len())?;
        let size = size_of::<T>();
        bytes_of_mut(host).copy_from_slice(&device.bytes()[offset * size..end * size]);
        Ok(())
    }

    /// Copies a buffer into a new host vector.
    pub fn download<T: DeviceCopy + Default>(
        &self,
        device: &DeviceBuffer<T>,
    ) -> Result<Vec<T>, GpuError> {
        let mut host = vec![T::default(); device.len];
        self.copy_to_host(device, &mut host)?;
        Ok(host)
    }

    /// Copies one buffer into another of the same length.
    pub fn copy_device<T: DeviceCopy>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        check_len(dst.len, src.len)?;
        dst.bytes_mut().copy_from_slice(src.bytes());
        Ok(())
    }

    /// Sets every byte of a buffer to zero.
    pub fn memset_zero<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>) -> Result<(), GpuError> {
        buf.bytes_mut().fill(0);
        Ok(())
    }

    /// Copies pinned bytes into `device` from element `offset`.
    pub fn copy_pinned_to_device<T: DeviceCopy>(
        &self,
        host: PinnedBytes<'_>,
        device: &mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<(), GpuError> {
        let size = size_of::<T>();
        if size == 0 {
            return Err(GpuError::InvalidArgument(
                "a copy into a buffer of zero-sized elements".into(),
            ));
        }
        if host.len() % size != 0 {
            return Err(GpuError::InvalidArgument(format!(
                "{} pinned bytes are not a whole number of {size}-byte elements",
                host.len()
            )));
        }
        let end = check_range(device.len, offset, host.len() / size)?;
        device.bytes_mut()[offset * size..end * size].copy_from_slice(host.bytes);
        Ok(())
    }

    /// An event at this point: the work before it has run already.
    pub fn record_event(&self) -> Result<Event, GpuError> {
        Ok(Event { at: Instant::now() })
    }

    /// Nothing to wait for: the event's work has run.
    pub fn wait_event(&self, _event: &Event) -> Result<(), GpuError> {
        Ok(())
    }

    /// Nothing to wait for: work runs when issued.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        Ok(())
    }
}

/// A point in the emulated work: complete when recorded; timed by the host clock.
#[derive(Debug)]
pub struct Event {
    at: Instant,
}

impl Event {
    /// Milliseconds of host time from `self` to `end`.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, GpuError> {
        Ok(end.at.saturating_duration_since(self.at).as_secs_f32() * 1e3)
    }

    /// Nothing to wait for.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        Ok(())
    }

    /// Always complete.
    pub fn is_complete(&self) -> Result<bool, GpuError> {
        Ok(true)
    }
}

/// Where a [`DeviceBuffer`]'s memory comes from (see the driver's).
enum Storage {
    /// A host allocation of its own ([`Stream::alloc`]).
    Pool(Memory),
    /// A range of a [`SharedRegion`]'s memory, returned to its owner when `keep` drops.
    Lent {
        address: u64,
        _keep: Box<dyn Any + Send + Sync>,
    },
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Storage::Pool(mem) => write!(f, "Pool({} bytes)", mem.bytes),
            Storage::Lent { address, .. } => write!(f, "Lent({address:#x})"),
        }
    }
}

/// `len` elements of `T` in emulated device memory: its own, or lent by a [`SharedRegion`].
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

    /// Keeps the first `len` elements (no effect when `len` is not smaller).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Whether the memory is lent by a [`SharedRegion`] rather than the buffer's own.
    pub fn is_lent(&self) -> bool {
        matches!(self.storage, Storage::Lent { .. })
    }

    /// The same memory as `size_bytes() / size_of::<U>()` elements of `U` (see the driver's).
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
            Storage::Pool(mem) => mem.address(),
            Storage::Lent { address, .. } => *address,
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the buffer's `size_bytes()` bytes at its address are host memory it owns
        // (its own allocation, or a range its lender gave it alone, kept allocated by `keep`),
        // initialised (poisoned or zeroed when made); nothing writes them while the host reads
        // them (work runs when issued).
        unsafe { std::slice::from_raw_parts(self.address() as *const u8, self.size_bytes()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.address() as *mut u8, self.size_bytes()) }
    }
}

/// One allocation whose disjoint byte ranges different owners use at once (see the driver's).
#[derive(Debug)]
pub struct SharedRegion {
    buf: DeviceBuffer<u8>,
}

impl SharedRegion {
    /// Allocates `bytes` bytes (zeroed pages, mapped by the host only where written; counted as
    /// an allocation: `crate::counted_driver_calls`).
    pub fn new(_stream: &Stream, bytes: usize) -> Result<Self, GpuError> {
        count(&ALLOC, |c| &mut c.alloc);
        Ok(Self {
            buf: DeviceBuffer {
                storage: Storage::Pool(Memory::zeroed(bytes)),
                len: bytes,
                _marker: PhantomData,
            },
        })
    }

    /// `len` elements of `T` from byte `offset`, poisoned, as a buffer that holds `keep` until
    /// it drops (see the driver's).
    ///
    /// # Safety
    /// As for the driver's: nothing else uses the range while the buffer lives, and `keep`
    /// keeps the region allocated.
    pub unsafe fn lend<T: DeviceCopy>(
        &self,
        offset: usize,
        len: usize,
        keep: Box<dyn Any + Send + Sync>,
    ) -> Result<DeviceBuffer<T>, GpuError> {
        let bytes = bytes_for::<T>(len)?;
        check_range(self.buf.len(), offset, bytes)?;
        let address = self.buf.address() + offset as u64;
        if address % align_of::<T>() as u64 != 0 {
            return Err(GpuError::InvalidArgument(format!(
                "a lent range at {address:#x} is not aligned for {}-byte elements",
                align_of::<T>()
            )));
        }
        // SAFETY: the range is inside the region (checked above) and, by the caller's contract,
        // the new buffer's alone.
        unsafe { std::ptr::write_bytes(address as *mut u8, POISON, bytes) };
        Ok(DeviceBuffer {
            storage: Storage::Lent {
                address,
                _keep: keep,
            },
            len,
            _marker: PhantomData,
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

    /// The address of byte `offset`, for kernel arguments.
    pub fn address_at(&self, offset: usize) -> Result<u64, GpuError> {
        check_range(self.buf.len(), offset, 0)?;
        Ok(self.buf.address() + offset as u64)
    }

    /// Copies `host` to `offset..offset + host.len()`.
    ///
    /// # Safety
    /// The caller owns the range (nothing else accesses it meanwhile), as for the driver's.
    pub unsafe fn upload_at(
        &self,
        _stream: &Stream,
        offset: usize,
        host: &[u8],
    ) -> Result<(), GpuError> {
        check_range(self.buf.len(), offset, host.len())?;
        // SAFETY: the range is inside the allocation (checked above) and, by the caller's
        // contract, accessed by nothing else while this copy runs.
        unsafe {
            std::ptr::copy_nonoverlapping(
                host.as_ptr(),
                (self.buf.address() as *mut u8).add(offset),
                host.len(),
            )
        };
        Ok(())
    }

    /// Copies `offset..offset + host.len()` to `host`.
    ///
    /// # Safety
    /// Nothing else writes that range meanwhile, as for the driver's.
    pub unsafe fn download_at(
        &self,
        _stream: &Stream,
        offset: usize,
        host: &mut [u8],
    ) -> Result<(), GpuError> {
        check_range(self.buf.len(), offset, host.len())?;
        // SAFETY: the range is inside the allocation (checked above) and not written by anyone
        // else meanwhile (the caller's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.buf.address() as *const u8).add(offset),
                host.as_mut_ptr(),
                host.len(),
            )
        };
        Ok(())
    }
}

/// The emulator's kernels.
#[derive(Clone, Debug)]
pub struct Module {
    _private: (),
}

impl Module {
    /// The kernel `name`, if the emulator has it.
    pub fn kernel(&self, name: &'static str) -> Result<Kernel, GpuError> {
        let c = c_name(name)?;
        // SAFETY: `c` is a NUL-terminated string; the call only compares names.
        if unsafe { cuzk_emu_has(c.as_ptr()) } == 1 {
            Ok(Kernel { name })
        } else {
            Err(GpuError::Driver {
                call: "cuModuleGetFunction",
                status: format!("the emulator has no kernel named {name}"),
            })
        }
    }
}

/// A kernel of the emulator.
#[derive(Clone, Debug)]
pub struct Kernel {
    name: &'static str,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Registers per thread: none on the host.
    pub fn registers(&self) -> Result<u32, GpuError> {
        Ok(0)
    }

    /// Nothing to set: the emulator gives a launch the shared memory it asks for.
    pub fn set_max_dynamic_shared_bytes(&self, _bytes: u32) -> Result<(), GpuError> {
        Ok(())
    }

    /// Runs the kernel on the host now.
    ///
    /// # Safety
    ///
    /// As for the driver's: `args` match the kernel's parameters, and the kernel stays within
    /// the buffers it is given for the launch shape `config`.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &KernelArgs<'_>,
    ) -> Result<(), GpuError> {
        if injected(stream.ordinal, Fault::Launch) {
            return Err(GpuError::Driver {
                call: "cuLaunchKernel",
                status: format!(
                    "{}: CUDA_ERROR_LAUNCH_FAILED (injected by the emulator)",
                    self.name
                ),
            });
        }
        let (bx, by, bz) = config.block;
        if by != 1 || bz != 1 {
            return Err(GpuError::InvalidArgument(format!(
                "{}: the emulator runs one-dimensional blocks, not {:?}",
                self.name, config.block
            )));
        }
        let mut params: Vec<*mut c_void> = args
            .values
            .iter()
            .map(|v| v.as_ptr() as *mut c_void)
            .collect();
        // SAFETY: every entry of `params` points to a live copy of one argument value; the
        // caller guarantees that they match the kernel and that it stays in bounds.
        unsafe { launch(self.name, config.grid, bx, config.shared_bytes, &mut params) }
    }
}

/// Host memory standing in for page-locked memory: copies out of it run when issued, so none
/// is ever in flight.
#[derive(Debug)]
pub struct PinnedBuffer<T> {
    mem: Memory,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: DeviceCopy> PinnedBuffer<T> {
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

    /// The elements, to write.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], GpuError> {
        // SAFETY: the memory holds `len` initialised `T`s (every bit pattern is one), 16-byte
        // aligned, and the borrow is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.mem.ptr().cast(), self.len) })
    }

    /// Nothing to wait for.
    pub fn wait_for_copies(&self) -> Result<(), GpuError> {
        Ok(())
    }

    /// The bytes, for copies.
    pub fn bytes(&self) -> PinnedBytes<'_> {
        PinnedBytes {
            bytes: bytes_of(self),
        }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        crate::count_pinned(self.len * size_of::<T>(), false);
    }
}

/// A mapping's share of [`crate::pinned_host_bytes`], given back when the mapping drops.
#[derive(Debug)]
struct PinnedCount(usize);

impl PinnedCount {
    fn new(bytes: usize) -> Self {
        crate::count_pinned(bytes, true);
        Self(bytes)
    }
}

impl Drop for PinnedCount {
    fn drop(&mut self) {
        crate::count_pinned(self.0, false);
    }
}

impl<T: DeviceCopy> Deref for PinnedBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: as in `as_mut_slice`, shared.
        unsafe { std::slice::from_raw_parts(self.mem.ptr().cast(), self.len) }
    }
}

/// Bytes of a [`PinnedBuffer`], for copies.
#[derive(Clone, Copy, Debug)]
pub struct PinnedBytes<'a> {
    bytes: &'a [u8],
}

impl<'a> PinnedBytes<'a> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &'a [u8] {
        self.bytes
    }

    /// The bytes of `range`.
    pub fn range(self, range: Range<usize>) -> Result<Self, GpuError> {
        if range.start > range.end {
            return Err(GpuError::InvalidArgument(format!(
                "pinned byte range {range:?} is reversed"
            )));
        }
        check_range(self.bytes.len(), range.start, range.end - range.start)?;
        Ok(Self {
            bytes: &self.bytes[range],
        })
    }
}

#[cfg(test)]
mod tests;
