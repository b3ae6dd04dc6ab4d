//! Page-locked ("pinned") host memory, and copies out of it that the device runs by DMA while
//! the host goes on.
//!
//! A copy from pageable memory (`Stream::copy_to_device`) goes through a driver staging buffer:
//! the host thread waits while its bytes are staged, and the copy engine runs at a fraction of
//! the link's speed (docs/benchmarks.md gives the measured rates). A copy from pinned memory is queued
//! and returns at once; the copy engine reads the host memory directly, at the link's speed.
//!
//! Ownership contract: a queued copy reads the host memory after the call that queued it has
//! returned, so the memory must neither change nor be freed until the copy has run. A
//! [`PinnedBuffer`] keeps an event for every copy queued out of it that may still be running;
//! [`PinnedBuffer::as_mut_slice`] and dropping the buffer wait for them. If a wait fails, or a
//! copy could not be given an event, the buffer refuses writes from then on and its memory is
//! leaked rather than freed under a copy. Reading the buffer on the host while copies run is
//! fine (both only read), so `&PinnedBuffer` derefs to `&[T]` freely. No copy ever writes into a `PinnedBuffer`.

use std::mem::size_of;
use std::ops::{Deref, Range};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys, CudaContext, CudaEvent};

use super::{bytes_of, check_range, driver, Device, DeviceBuffer, DeviceCopy, Stream};
use crate::GpuError;

/// Events of the copies queued out of one pinned allocation that may still be running.
#[derive(Debug, Default)]
struct PendingCopies {
    events: Mutex<Vec<CudaEvent>>,
    /// Set when a copy may be running that no event tracks, or a wait failed: from then on the
    /// memory is never written or freed (a leak, not a use after free).
    poisoned: AtomicBool,
}

impl PendingCopies {
    /// Adds the event of a copy just queued, first dropping those that have finished so the
    /// list stays as short as the copies in flight.
    fn push(&self, event: CudaEvent) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.retain(|e| !matches!(e.try_is_complete(), Ok(true)));
        events.push(event);
    }

    /// Marks the memory as possibly read by a copy no event tracks.
    fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
    }

    /// Blocks until every copy queued so far has run. Waits for every event even when one
    /// fails; any failure poisons the buffer.
    fn wait(&self) -> Result<(), GpuError> {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let mut failure = None;
        for event in events.iter() {
            // SAFETY: `event` owns a live event handle. `cuEventSynchronize` is called directly
            // rather than through `CudaEvent::synchronize`, whose binding of the context first
            // returns (and clears) any error another call stored in the context, without
            // waiting.
            if let Err(e) = unsafe { result::event::synchronize(event.cu_event()) } {
                failure.get_or_insert(e);
            }
        }
        if let Some(e) = failure {
            self.poison();
            return driver("cuEventSynchronize", Err(e));
        }
        events.clear();
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(GpuError::Driver {
                call: "cuEventRecord",
                status: "a copy out of this pinned buffer could not be tracked; the buffer is \
                         no longer written or freed"
                    .into(),
            });
        }
        Ok(())
    }
}

/// `len` elements of `T` in page-locked host memory of one device's context (allocated with
/// `cuMemHostAlloc`, portable to every context).
///
/// Copies out of it ([`Stream::copy_pinned_to_device`]) run asynchronously at the link's speed;
/// see the module's ownership contract. Allocating pinned memory is slow (the driver locks
/// every page) and takes it from the host's free memory for as long as the buffer lives, so
/// long-lived owners (a proving daemon's parameters, a ring of staging buffers) allocate it once
/// and reuse it.
#[derive(Debug)]
pub struct PinnedBuffer<T> {
    ptr: NonNull<T>,
    len: usize,
    ctx: Arc<CudaContext>,
    pending: PendingCopies,
}

// SAFETY: a `PinnedBuffer` owns its allocation as a `Box<[T]>` would, and `T: DeviceCopy` is
// `Send + Sync`; the list of pending copies is behind a mutex.
unsafe impl<T: DeviceCopy> Send for PinnedBuffer<T> {}
// SAFETY: shared references only read the memory (on the host, or by queued copies) and lock the
// pending list.
unsafe impl<T: DeviceCopy> Sync for PinnedBuffer<T> {}

impl Device {
    /// `len` zeroed elements of pinned host memory.
    pub fn alloc_pinned<T: DeviceCopy>(&self, len: usize) -> Result<PinnedBuffer<T>, GpuError> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            GpuError::InvalidArgument(format!("{len} pinned elements overflow the address space"))
        })?;
        driver("cuCtxSetCurrent", self.ctx.bind_to_thread())?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            // SAFETY: a plain allocation call; the pointer it returns is checked below and owned
            // by the `PinnedBuffer`, which frees it with `cuMemFreeHost`.
            let raw = driver("cuMemHostAlloc", unsafe {
                result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE)
            })?;
            let ptr = NonNull::new(raw.cast::<T>()).ok_or_else(|| GpuError::Driver {
                call: "cuMemHostAlloc",
                status: "returned a null pointer".into(),
            })?;
            // SAFETY: `bytes` bytes were just allocated at `ptr` and nothing else refers to them;
            // zero bytes are a valid `T: DeviceCopy`. cuMemHostAlloc aligns to pages, more than
            // any `T` needs.
            unsafe { std::ptr::write_bytes(ptr.as_ptr().cast::<u8>(), 0, bytes) };
            crate::count_pinned(bytes, true);
            ptr
        };
        Ok(PinnedBuffer {
            ptr,
            len,
            ctx: self.ctx.clone(),
            pending: PendingCopies::default(),
        })
    }

    /// A pinned copy of `values` (a parameter set loaded once and streamed to the device many
    /// times).
    pub fn pin<T: DeviceCopy>(&self, values: &[T]) -> Result<PinnedBuffer<T>, GpuError> {
        let mut buf = self.alloc_pinned(values.len())?;
        buf.as_mut_slice()?.copy_from_slice(values);
        Ok(buf)
    }
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

    /// The elements, for writing: first waits until every copy queued out of the buffer has
    /// run.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], GpuError> {
        self.pending.wait()?;
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at allocation); `&mut self`
        // excludes every other reference, and no queued copy reads the memory any more.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    /// Blocks until every copy queued out of the buffer has run.
    pub fn wait_for_copies(&self) -> Result<(), GpuError> {
        self.pending.wait()
    }

    /// The whole buffer as bytes, for copies.
    pub fn bytes(&self) -> PinnedBytes<'_> {
        PinnedBytes {
            bytes: bytes_of(self),
            pending: &self.pending,
        }
    }
}

impl<T: DeviceCopy> Deref for PinnedBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements; copies only read them, and writes
        // need `&mut self` (`as_mut_slice`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if std::mem::size_of::<T>() == 0 || self.len == 0 {
            return;
        }
        // A copy that may still read the memory, or one that nothing tracks: leak the memory
        // rather than free it under the copy.
        if self.pending.wait().is_err() {
            return;
        }
        // SAFETY: `cu_ctx` is the live context the memory was allocated in (held by `ctx`);
        // made current directly, without cudarc's check of errors stored by other calls.
        let _ = unsafe { result::ctx::set_current(self.ctx.cu_ctx()) };
        // SAFETY: `ptr` came from `cuMemHostAlloc` and no copy reads it any more (waited above);
        // it is freed once, here.
        if unsafe { result::free_host(self.ptr.as_ptr().cast()) }.is_ok() {
            crate::count_pinned(self.len * std::mem::size_of::<T>(), false);
        }
    }
}

/// A byte range of a [`PinnedBuffer`]: what [`Stream::copy_pinned_to_device`] reads. It borrows
/// the buffer, which records the copies queued out of it.
#[derive(Clone, Copy, Debug)]
pub struct PinnedBytes<'a> {
    bytes: &'a [u8],
    pending: &'a PendingCopies,
}

impl<'a> PinnedBytes<'a> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes, read on the host.
    pub fn as_slice(&self) -> &'a [u8] {
        self.bytes
    }

    /// The sub-range `range` of these bytes.
    pub fn range(self, range: Range<usize>) -> Result<Self, GpuError> {
        if range.start > range.end {
            return Err(GpuError::InvalidArgument(format!(
                "pinned byte range {range:?} is reversed"
            )));
        }
        check_range(self.bytes.len(), range.start, range.end - range.start)?;
        Ok(Self {
            bytes: &self.bytes[range],
            pending: self.pending,
        })
    }
}

impl Stream {
    /// Queues a copy of pinned host bytes into `device` from element `offset` on, and returns
    /// at once. `host` must hold a whole number of `T`s that fit from `offset`. The buffer
    /// `host` came from records the copy, and waits for it before it is written or freed.
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
        check_range(device.len, offset, host.len() / size)?;
        if host.is_empty() {
            return Ok(());
        }
        let at = device.address() + (offset * size) as u64;
        // The event is created before the copy is queued, so that a failure to create it
        // leaves no unrecorded copy behind.
        let event = driver(
            "cuEventCreate",
            self.inner
                .context()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)),
        )?;
        self.bind()?;
        // SAFETY: elements from `offset` on, as many as the host holds, lie inside the buffer (checked above), which `&mut`
        // makes ours; the source is pinned memory that the buffer it came from keeps unchanged
        // and allocated until the event recorded below has completed.
        driver("cuMemcpyHtoDAsync", unsafe {
            result::memcpy_htod_async(at, host.bytes, self.inner.cu_stream())
        })?;
        // If recording failed, the copy could still be in flight with nothing to wait on:
        // wait for the whole stream instead before handing the error back, and if even that
        // fails, poison the buffer (never written or freed again).
        if let Err(e) = driver("cuEventRecord", event.record(&self.inner)) {
            if self.synchronize().is_err() {
                host.pending.poison();
            }
            return Err(e);
        }
        host.pending.push(event);
        Ok(())
    }
}
