//! The products on a CUDA device (feature `cuda`): the launch wrapper of `pce_products`
//! (`kernels/pce/products.cu`, whose header states the algorithm).
//!
//! A caller uploads a topology's [`DeviceImage`](crate::DeviceImage) once and keeps it resident
//! (the GPU backend puts it in a named region of the device's arena), uploads each partition's
//! values (input ‖ aux, as the query splits read them), and [`GpuProducts::evaluate`] writes
//! a ‖ b ‖ c, padded with zeros to the domain, straight into the NTT's input buffer, every row's
//! `a·b = c` checked on the device: the witness is the only per-partition upload, and the host
//! computes nothing but the witness.
#![allow(unsafe_code)] // kernel launches and the parameter block's DeviceCopy.

use cuzk_field::layout::FrLimbs;
use cuzk_gpu::{
    Device, DeviceBuffer, DeviceCopy, GpuError, Kernel, KernelArgs, LaunchConfig, Module, Stream,
};

use crate::image::ImageLayout;

/// The fatbin of `kernels/pce/*.cu`, compiled by this crate's build script.
pub static PCE_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pce.fatbin"));

/// Threads per block of `pce_products`.
const BLOCK: u32 = 256;

/// Errors of the device products.
#[derive(Debug, thiserror::Error)]
pub enum GpuProductsError {
    /// The device layer failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A buffer does not match the image's counts.
    #[error("the device products were given {what}: {expected} expected, {got} present")]
    Shape {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// The domain is too large for one launch.
    #[error("a domain of {0} rows is too large for the device products")]
    TooLarge(usize),
}

/// `PceProductsParams` of the kernel: section offsets in words and the counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PceProductsParams {
    row_ptr: [u64; 3],
    cols: [u64; 3],
    ids: [u64; 3],
    coeffs: u64,
    rows: u64,
    n: u64,
    num_inputs: u32,
    id_bytes: u32,
}

const _: () = assert!(std::mem::size_of::<PceProductsParams>() == 104);

// SAFETY: `repr(C)` of integers with no padding (twelve u64 then two u32, 104 bytes, asserted
// above and by the kernel's static_assert), valid for every bit pattern.
unsafe impl DeviceCopy for PceProductsParams {}

impl PceProductsParams {
    fn of(layout: &ImageLayout, n: usize) -> Self {
        let at = |r: &std::ops::Range<usize>| r.start as u64;
        let m = &layout.matrices;
        Self {
            row_ptr: [at(&m[0][0]), at(&m[1][0]), at(&m[2][0])],
            cols: [at(&m[0][1]), at(&m[1][1]), at(&m[2][1])],
            ids: [at(&m[0][2]), at(&m[1][2]), at(&m[2][2])],
            coeffs: at(&layout.coeffs),
            rows: layout.rows as u64,
            n: n as u64,
            num_inputs: layout.num_inputs as u32,
            id_bytes: layout.id_bytes,
        }
    }
}

/// A topology's [`DeviceImage`](crate::DeviceImage) in device memory, with its layout.
pub struct DeviceMatrices {
    image: DeviceBuffer<u32>,
    layout: ImageLayout,
}

impl std::fmt::Debug for DeviceMatrices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMatrices")
            .field("layout", &self.layout)
            .finish()
    }
}

impl DeviceMatrices {
    /// `image` holds the words of the image whose layout is `layout` (the caller copied them).
    pub fn new(image: DeviceBuffer<u32>, layout: ImageLayout) -> Result<Self, GpuProductsError> {
        if image.len() != layout.words {
            return Err(GpuProductsError::Shape {
                what: "image words",
                expected: layout.words,
                got: image.len(),
            });
        }
        Ok(Self { image, layout })
    }

    /// Where its sections lie.
    pub fn layout(&self) -> &ImageLayout {
        &self.layout
    }
}

/// The loaded products kernel of one device.
pub struct GpuProducts {
    _module: Module,
    products: Kernel,
}

impl std::fmt::Debug for GpuProducts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GpuProducts")
    }
}

impl GpuProducts {
    /// Loads the kernel on `device`.
    pub fn new(device: &Device) -> Result<Self, GpuError> {
        let module = device.load_module(PCE_FATBIN)?;
        let products = module.kernel("pce_products")?;
        Ok(Self {
            _module: module,
            products,
        })
    }

    /// Queues `abc = A·z ‖ B·z ‖ C·z` (each `n` long, zero past the image's rows) on `stream`,
    /// `z` being `values` (input ‖ aux), and sets `first_bad[0]` to the first row whose
    /// `a·b ≠ c` (`u32::MAX` when every row holds: the caller sets it to `u32::MAX` before
    /// and reads it after).
    pub fn evaluate(
        &self,
        stream: &Stream,
        matrices: &DeviceMatrices,
        values: &DeviceBuffer<FrLimbs>,
        abc: &mut DeviceBuffer<FrLimbs>,
        n: usize,
        first_bad: &mut DeviceBuffer<u32>,
    ) -> Result<(), GpuProductsError> {
        let shape = |what, expected: usize, got: usize| {
            if expected == got {
                Ok(())
            } else {
                Err(GpuProductsError::Shape {
                    what,
                    expected,
                    got,
                })
            }
        };
        let (image, layout) = (&matrices.image, &matrices.layout);
        shape(
            "values (inputs and private values)",
            layout.num_inputs + layout.num_aux,
            values.len(),
        )?;
        shape("a ‖ b ‖ c elements", 3 * n, abc.len())?;
        shape("first-bad words", 1, first_bad.len())?;
        if n < layout.rows {
            return Err(GpuProductsError::Shape {
                what: "a domain (at least the rows)",
                expected: layout.rows,
                got: n,
            });
        }
        let items = u32::try_from(n).map_err(|_| GpuProductsError::TooLarge(n))?;
        if items > u32::MAX - BLOCK {
            return Err(GpuProductsError::TooLarge(n));
        }
        let params = PceProductsParams::of(layout, n);
        let mut args = KernelArgs::new();
        args.buffer_mut(abc)
            .buffer_mut(first_bad)
            .buffer(values)
            .buffer(image)
            .value(params);
        // SAFETY: `pce_products(uint4* abc, uint32_t* first_bad, const uint4* values,
        // const uint32_t* image, PceProductsParams p)`: abc holds 3·n elements, first_bad one
        // word, values num_inputs + num_aux elements (all checked above); the image is
        // `layout.words` words (checked by `DeviceMatrices::new`) made by
        // `PreCompiled::device_image`, whose sections lie where `layout` says, whose row pointers are non-decreasing and end at each matrix's
        // entry count, and whose columns and ids are in range (`PreCompiled` checked them when
        // opening the file), so every read stays inside image and values; threads at or past n
        // return.
        unsafe {
            self.products
                .launch(stream, LaunchConfig::linear(items, BLOCK), &args)?
        };
        Ok(())
    }
}
