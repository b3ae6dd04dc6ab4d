//! The one door to the CUDA driver for cuzk.
//!
//! Everything that talks to the driver goes through this crate: device discovery
//! ([`Device::count`], [`Device::open`], [`DeviceInfo`]), streams and events, device buffers of
//! plain-old-data types ([`DeviceBuffer`]), page-locked host memory whose copies to the device
//! run asynchronously ([`PinnedBuffer`], [`Stream::copy_pinned_to_device`]), modules loaded from
//! embedded fatbins ([`Module`], [`Kernel`]) and the arguments of a launch ([`KernelArgs`]).
//! A device buffer is an allocation of the stream's pool or a range an arena lends
//! ([`SharedRegion::lend`]); callers that allocate scratch take a [`Workspace`] so that their
//! caller decides which. A host vector can be mapped for kernels to read in place
//! ([`MappedHost`], `Device::map_host`).
//! Errors are one enum, [`GpuError`]: no libcuda, no device, or a failed driver call is an `Err`
//! the caller can act on (fall back to the CPU), never a panic.
//!
//! The driver is reached through cudarc with dynamic loading, so building needs no CUDA toolkit
//! and a binary runs (and reports [`GpuError::NoDriver`]) on machines without an NVIDIA driver.
//! Without the `cuda` feature the crate builds without cudarc at all: [`Device::open`] then
//! returns [`GpuError::NotBuilt`] ("built without CUDA").
//!
//! The crate also owns the Fr kernels of `kernels/field/`: the device arithmetic every other
//! kernel includes, exercised by element-wise test kernels and throughput probes in `fr` (with
//! the `cuda` and `testing` features; not part of the production API).
//!
//! **Architecture invariant:** this crate knows devices, memory and kernels, nothing about NTTs,
//! MSMs or Groth16. `unsafe` lives in the `driver` (with its `pinned` part), `emu` and `fr`
//! modules only, each block with a `// SAFETY:` comment.

#[cfg(any(feature = "cuda", feature = "emu"))]
mod args;
#[cfg(any(feature = "cuda", feature = "emu"))]
mod copy;
#[cfg(all(feature = "cuda", not(feature = "emu")))]
mod driver;
#[cfg(feature = "emu")]
pub mod emu;
#[cfg(all(feature = "cuda", feature = "testing"))]
pub mod fr;
#[cfg(any(feature = "cuda", feature = "emu"))]
mod mapped;
#[cfg(not(any(feature = "cuda", feature = "emu")))]
mod stub;
#[cfg(any(feature = "cuda", feature = "emu"))]
mod workspace;

#[cfg(any(feature = "cuda", feature = "emu"))]
pub use args::{KernelArgs, LaunchConfig};
#[cfg(any(feature = "cuda", feature = "emu"))]
pub use copy::DeviceCopy;
#[cfg(all(feature = "cuda", not(feature = "emu")))]
pub use driver::{
    Device, DeviceBuffer, Event, Kernel, Module, PinnedBuffer, PinnedBytes, SharedRegion, Stream,
};
#[cfg(feature = "emu")]
pub use emu::{
    Device, DeviceBuffer, Event, Kernel, Module, PinnedBuffer, PinnedBytes, SharedRegion, Stream,
};
#[cfg(any(feature = "cuda", feature = "emu"))]
pub use mapped::MappedHost;
#[cfg(not(any(feature = "cuda", feature = "emu")))]
pub use stub::Device;
#[cfg(any(feature = "cuda", feature = "emu"))]
pub use workspace::{alloc_in, StreamPool, Workspace};

/// Whether this build can reach a GPU at all (the `cuda` feature).
pub const CUDA_ENABLED: bool = cfg!(feature = "cuda");

/// Whether the device API is the host emulator's (the `emu` feature): tests use small sizes.
pub const EMULATED: bool = cfg!(feature = "emu");

/// How often the process has made the driver calls a proving path must not make in its steady
/// state (see [`counted_driver_calls`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverCalls {
    /// `Device::synchronize` (`cuCtxSynchronize`: waits for every stream of the device).
    pub device_synchronize: u64,
    /// `Device::trim_pool` (`cuMemPoolTrimTo`).
    pub trim_pool: u64,
    /// `Stream::alloc` and the calls built on it (`cuMemAllocAsync`).
    pub alloc: u64,
}

/// The device-global and allocating calls made so far by every thread of the process, as the
/// emulated driver counts them (feature `emu`), so that tests hold the VRAM design's invariants
/// on a machine without a GPU; `None` with the real driver, which does not count.
pub fn counted_driver_calls() -> Option<DriverCalls> {
    #[cfg(feature = "emu")]
    return Some(emu::driver_calls());
    #[cfg(not(feature = "emu"))]
    None
}

/// [`counted_driver_calls`] made by the calling thread only: a test that proves on one thread
/// counts its own calls while other tests run beside it.
pub fn counted_driver_calls_here() -> Option<DriverCalls> {
    #[cfg(feature = "emu")]
    return Some(emu::driver_calls_here());
    #[cfg(not(feature = "emu"))]
    None
}

/// Page-locked host bytes the process holds now through this crate: live pinned buffers
/// ([`PinnedBuffer`]: staging rings, pinned parameters) and host vectors registered for the
/// device to read in place (`Device::map_host`, counted once per registered range however many
/// devices map it). Memory leaked because a copy out of it could not be tracked stays counted:
/// it stays locked. The emulator counts its stand-ins for both, each of its mappings in full.
/// Always 0 in a build without the `cuda` feature.
pub fn pinned_host_bytes() -> u64 {
    PINNED_HOST_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Backs [`pinned_host_bytes`]: added to where memory is locked, taken from where it is
/// released.
#[cfg_attr(not(any(feature = "cuda", feature = "emu")), allow(dead_code))]
static PINNED_HOST_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts `bytes` as locked (`locked`) or released.
#[cfg(any(feature = "cuda", feature = "emu"))]
pub(crate) fn count_pinned(bytes: usize, locked: bool) {
    use std::sync::atomic::Ordering;
    if locked {
        PINNED_HOST_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    } else {
        PINNED_HOST_BYTES.fetch_sub(bytes as u64, Ordering::Relaxed);
    }
}

/// What a device is, as the driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The driver's ordinal of the device.
    pub ordinal: usize,
    /// The marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Compute capability (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Peak SM clock in kHz.
    pub clock_khz: u32,
    /// L2 cache in bytes.
    pub l2_bytes: usize,
    /// The most shared memory one block may ask for (after opting in), in bytes.
    pub max_shared_per_block: usize,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (device {}, sm_{}{}, {} SMs at {} MHz, {:.1} GiB, L2 {} MiB)",
            self.name,
            self.ordinal,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.clock_khz / 1000,
            self.total_memory as f64 / (1u64 << 30) as f64,
            self.l2_bytes >> 20
        )
    }
}

/// Errors of the GPU layer.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// This build has no GPU support.
    #[error("cuzk was built without CUDA (enable the `cuda` feature)")]
    NotBuilt,
    /// libcuda could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda could not be loaded")]
    NoDriver,
    /// The driver has no device with this ordinal.
    #[error("no CUDA device {ordinal} (the driver reports {count})")]
    NoDevice { ordinal: usize, count: usize },
    /// A driver call failed.
    #[error("CUDA driver call `{call}` failed: {status}")]
    Driver { call: &'static str, status: String },
    /// Two lengths that must agree do not.
    #[error("length mismatch: expected {expected}, got {got}")]
    LengthMismatch { expected: usize, got: usize },
    /// An argument is outside what the operation supports.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A workspace had no room for a buffer: what reserved it did not count this buffer.
    #[error("workspace exhausted: {requested} bytes asked, largest free block {largest_free}")]
    OutOfWorkspace { requested: u64, largest_free: u64 },
    /// A workspace failed otherwise (its allocator's error, in words).
    #[error("workspace: {0}")]
    Workspace(String),
}

/// Opens device 0 for a GPU test, or says why the test is skipped: tests that need a GPU call
/// this first and return early on `None`, so they pass on machines without one (CI).
pub fn device_for_tests() -> Option<Device> {
    match Device::open(0) {
        Ok(device) => Some(device),
        Err(e) => {
            // Written to stderr directly rather than with `eprintln!`, which the test harness
            // captures: a skipped GPU test should say so in every test run.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA device ({e})");
            None
        }
    }
}
