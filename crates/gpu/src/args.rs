//! The launch shape and the arguments of a kernel launch, the same for every driver.

use std::marker::PhantomData;
use std::mem::size_of;

use crate::copy::{bytes_of, bytes_of_mut, check_range, DeviceCopy};
use crate::{DeviceBuffer, GpuError};

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// One thread per item: `ceil(items / block)` blocks of `block` threads.
    pub fn linear(items: u32, block: u32) -> Self {
        Self {
            grid: (items.div_ceil(block).max(1), 1, 1),
            block: (block, 1, 1),
            shared_bytes: 0,
        }
    }
}

/// The arguments of one launch, in the kernel's parameter order. Buffers are borrowed for the
/// builder's lifetime so they cannot be freed while the launch is being assembled.
#[derive(Debug, Default)]
pub struct KernelArgs<'a> {
    pub(crate) values: Vec<Box<[u64]>>,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> KernelArgs<'a> {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)].into_boxed_slice();
        bytes_of_mut(&mut words[..])[..bytes.len()].copy_from_slice(bytes);
        self.values.push(words);
        self
    }

    /// A pointer to a buffer the kernel reads.
    pub fn buffer<T: DeviceCopy>(&mut self, buf: &'a DeviceBuffer<T>) -> &mut Self {
        self.value(buf.address())
    }

    /// A pointer to a buffer the kernel writes.
    pub fn buffer_mut<T: DeviceCopy>(&mut self, buf: &'a mut DeviceBuffer<T>) -> &mut Self {
        self.value(buf.address())
    }

    /// A pointer to element `offset` of a buffer the kernel writes (for example the first of a
    /// later chunk of vectors).
    pub fn buffer_at_mut<T: DeviceCopy>(
        &mut self,
        buf: &'a mut DeviceBuffer<T>,
        offset: usize,
    ) -> Result<&mut Self, GpuError> {
        check_range(buf.len(), offset, 0)?;
        Ok(self.value(buf.address() + (offset * size_of::<T>()) as u64))
    }

    /// A pointer to a buffer the kernel may read, or null.
    pub fn optional_buffer<T: DeviceCopy>(
        &mut self,
        buf: Option<&'a DeviceBuffer<T>>,
    ) -> &mut Self {
        self.value(buf.map_or(0u64, DeviceBuffer::address))
    }

    /// A value passed by copy: an integer or a `repr(C)` struct mirrored in the kernel.
    pub fn value<V: DeviceCopy>(&mut self, value: V) -> &mut Self {
        self.push_bytes(bytes_of(std::slice::from_ref(&value)))
    }
}
