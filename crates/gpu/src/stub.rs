//! The device API of a build without the `cuda` feature: every constructor reports
//! [`GpuError::NotBuilt`], so callers fall back to the CPU with the same code as when no GPU is
//! present.

use crate::{DeviceInfo, GpuError};

/// A device; in a build without CUDA none can be opened.
#[derive(Clone, Debug)]
pub struct Device {
    info: DeviceInfo,
}

impl Device {
    /// Always [`GpuError::NotBuilt`].
    pub fn count() -> Result<usize, GpuError> {
        Err(GpuError::NotBuilt)
    }

    /// Always [`GpuError::NotBuilt`].
    pub fn open(_ordinal: usize) -> Result<Self, GpuError> {
        Err(GpuError::NotBuilt)
    }

    /// Always [`GpuError::NotBuilt`].
    pub fn all() -> Result<Vec<Self>, GpuError> {
        Err(GpuError::NotBuilt)
    }

    /// What this device is (unreachable: no `Device` exists without CUDA).
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_cuda_every_open_is_not_built() {
        assert!(matches!(Device::open(0), Err(GpuError::NotBuilt)));
        assert!(matches!(Device::count(), Err(GpuError::NotBuilt)));
        assert!(crate::device_for_tests().is_none());
        assert_eq!(
            GpuError::NotBuilt.to_string(),
            "cuzk was built without CUDA (enable the `cuda` feature)"
        );
    }
}
