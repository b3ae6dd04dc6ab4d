//! The driver's side of [`MappedHost`]: a host vector registered with `cuMemHostRegister`
//! (page-locked, mapped into every context's address space) and the device address the kernels
//! read it at.
//!
//! Registration is per process, not per device: a range registered `PORTABLE` is mapped in every
//! context, and registering the same pages twice is an error of the driver. So registrations are
//! counted here, keyed by the range: the first [`Device::map_host`] of a vector registers it, each
//! further one (another device, another worker) takes a count, and the last mapping to drop
//! unregisters it. A range that overlaps a registered range without being it is refused.

use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaContext};

use super::{driver, Device, DeviceBuffer, DeviceCopy, Storage};
use crate::mapped::{check_mappable, MappedHost};
use crate::GpuError;

/// Registered ranges by their first byte's address: (bytes, mappings of it).
static REGISTERED: Mutex<Option<HashMap<usize, (usize, usize)>>> = Mutex::new(None);

/// One mapping of a registered range: holds the vector, and the last of a range's mappings to
/// drop unregisters it.
struct Registration {
    address: usize,
    ctx: Arc<CudaContext>,
    /// The mapped vector, kept allocated and unchanged (no `&mut` can exist while this `Arc`
    /// does) for as long as the device may read it.
    _owner: Arc<dyn Any + Send + Sync>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        let map = registered.get_or_insert_with(HashMap::new);
        let Some(entry) = map.get_mut(&self.address) else {
            return;
        };
        entry.1 -= 1;
        if entry.1 > 0 {
            return;
        }
        let entry_bytes = entry.0;
        map.remove(&self.address);
        // A failure leaves the pages locked until the process ends; nothing reads them through
        // this mapping any more, so there is nothing else to do about it.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `address` was registered by `map_host` and its last mapping is dropping:
            // no buffer refers to the range any more. Work queued on it has run: its users wait
            // for their results before letting go of a mapping (as for any lent buffer).
            let status = unsafe { sys::cuMemHostUnregister(self.address as *mut std::ffi::c_void) };
            if status.result().is_ok() {
                crate::count_pinned(entry_bytes, false);
            }
        }
    }
}

impl Device {
    /// `host` mapped for this device's kernels to read in place, over the link: registered with
    /// the driver on its first mapping (page-locked, mapped in every context: seconds for tens
    /// of gigabytes, once) and unregistered when its last mapping drops. The mapping holds
    /// `host` until then. `H` is the host type of the device layout `T` (the same size: e.g. a
    /// blstrs affine point and its limbs).
    ///
    /// Errors: an empty vector, one not aligned to 16 bytes, elements of another size than
    /// `T`'s (`InvalidArgument`), a range that overlaps another registered range without being
    /// it, or a refusal of the driver.
    pub fn map_host<T: DeviceCopy, H: Copy + Send + Sync + 'static>(
        &self,
        host: Arc<Vec<H>>,
    ) -> Result<MappedHost<T>, GpuError> {
        let address = host.as_ptr() as usize;
        let len = host.len();
        let bytes = check_mappable::<T, H>(address, len)?;
        driver("cuCtxSetCurrent", self.ctx.bind_to_thread())?;
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        let map = registered.get_or_insert_with(HashMap::new);
        match map.get_mut(&address) {
            Some((registered_bytes, count)) if *registered_bytes == bytes => *count += 1,
            Some((registered_bytes, _)) => {
                return Err(GpuError::InvalidArgument(format!(
                    "host range {address:#x}+{bytes} overlaps the registered \
                     {address:#x}+{registered_bytes}"
                )));
            }
            None => {
                let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
                // SAFETY: `host` is a live vector of `bytes` bytes, kept allocated and unchanged
                // by the registration that owns it from here on; registering only locks its
                // pages and maps them for the device.
                let status = unsafe {
                    sys::cuMemHostRegister_v2(address as *mut std::ffi::c_void, bytes, flags)
                };
                driver("cuMemHostRegister", status.result())?;
                crate::count_pinned(bytes, true);
                map.insert(address, (bytes, 1));
            }
        }
        let registration = Registration {
            address,
            ctx: self.ctx.clone(),
            _owner: host,
        };
        let mut device_ptr: sys::CUdeviceptr = 0;
        // SAFETY: the range is registered (above) and this device's context is current; the call
        // only writes the device address of the range's first byte.
        let status = unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut device_ptr, address as *mut std::ffi::c_void, 0)
        };
        drop(registered);
        // On an error `registration` drops here and takes its count back.
        driver("cuMemHostGetDevicePointer", status.result())?;
        Ok(MappedHost {
            buf: DeviceBuffer {
                storage: Storage::Lent {
                    address: device_ptr,
                    _keep: Box::new(registration),
                },
                len,
                _marker: PhantomData,
            },
        })
    }
}
