//! Fr on the device: launch wrappers of `kernels/field/fr_test.cu`.
//!
//! The arithmetic itself (`kernels/field/fr.cuh`) is a header every other kernel includes; this
//! module owns its element-wise test kernels (`fr_test_<op>`, one per [`FrOp`], checked against
//! blstrs by `tests/fr.rs`) and the multiplication throughput probes ([`MulProbe`]): `fr_bench_mul`
//! gives the benchmarks their integer floor, the others measure the FP64-pipe multiplication of
//! `kernels/field/mont52.cuh` beside it.
#![allow(unsafe_code)]

use cuzk_field::layout::FrLimbs;

use crate::{Device, DeviceBuffer, GpuError, Kernel, KernelArgs, LaunchConfig, Module, Stream};

/// The fatbin of `kernels/field/*.cu`, compiled by this crate's build script.
pub static FIELD_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/field.fatbin"));

/// An element-wise Fr operation with a test kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `-a`.
    Neg,
    /// `a · b` (Montgomery product of Montgomery forms).
    Mul,
    /// `a · b` again, on the FP64 pipe (`fr_mul52`, kernels/field/mont52.cuh; `b` < r).
    Mul52,
    /// `a²`.
    Sqr,
    /// `a^e`, with `b` holding the exponent as a plain 256-bit integer.
    Pow,
    /// `a⁻¹`, and 0 for 0.
    Inv,
    /// Montgomery form of the plain integer `a` (any 256-bit value, reduced).
    ToMont,
    /// Plain integer of the Montgomery form `a`.
    FromMont,
}

impl FrOp {
    /// Every operation.
    pub const ALL: [FrOp; 10] = [
        FrOp::Add,
        FrOp::Sub,
        FrOp::Neg,
        FrOp::Mul,
        FrOp::Mul52,
        FrOp::Sqr,
        FrOp::Pow,
        FrOp::Inv,
        FrOp::ToMont,
        FrOp::FromMont,
    ];

    /// The kernel that runs this operation.
    pub fn kernel_name(self) -> &'static str {
        match self {
            FrOp::Add => "fr_test_add",
            FrOp::Sub => "fr_test_sub",
            FrOp::Neg => "fr_test_neg",
            FrOp::Mul => "fr_test_mul",
            FrOp::Mul52 => "fr_test_mul52",
            FrOp::Sqr => "fr_test_sqr",
            FrOp::Pow => "fr_test_pow",
            FrOp::Inv => "fr_test_inv",
            FrOp::ToMont => "fr_test_to_mont",
            FrOp::FromMont => "fr_test_from_mont",
        }
    }
}

/// A multiplication throughput probe (`fr_bench_*`): four independent chains of multiplications
/// per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MulProbe {
    /// The integer multiplication `fr_mul` (`fr_bench_mul`): the rate the benchmark floors use.
    Integer,
    /// The same held to 64 registers, four blocks of 256 threads per SM (`fr_bench_mul_o4`).
    IntegerO4,
    /// The FP64-pipe multiplication `fr_mul52` (`fr_bench_mul52`).
    Fp64,
    /// Two chains of each kind, interleaved (`fr_bench_mul_hybrid`).
    Hybrid,
}

impl MulProbe {
    /// Every probe.
    pub const ALL: [MulProbe; 4] = [
        MulProbe::Integer,
        MulProbe::IntegerO4,
        MulProbe::Fp64,
        MulProbe::Hybrid,
    ];

    /// The probe's kernel.
    pub fn kernel_name(self) -> &'static str {
        match self {
            MulProbe::Integer => "fr_bench_mul",
            MulProbe::IntegerO4 => "fr_bench_mul_o4",
            MulProbe::Fp64 => "fr_bench_mul52",
            MulProbe::Hybrid => "fr_bench_mul_hybrid",
        }
    }
}

/// The Fr kernels, loaded on one device.
#[derive(Debug)]
pub struct FrKernels {
    device: Device,
    _module: Module,
    ops: Vec<(FrOp, Kernel)>,
    probes: Vec<(MulProbe, Kernel)>,
}

/// Threads per block of the element-wise kernels.
const BLOCK: u32 = 256;

impl FrKernels {
    /// Loads the field module on `device`.
    pub fn load(device: &Device) -> Result<Self, GpuError> {
        let module = device.load_module(FIELD_FATBIN)?;
        let ops = FrOp::ALL
            .iter()
            .map(|&op| Ok((op, module.kernel(op.kernel_name())?)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        let probes = MulProbe::ALL
            .iter()
            .map(|&p| Ok((p, module.kernel(p.kernel_name())?)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        Ok(Self {
            device: device.clone(),
            _module: module,
            ops,
            probes,
        })
    }

    /// The device the kernels are loaded on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    fn kernel(&self, op: FrOp) -> &Kernel {
        &self
            .ops
            .iter()
            .find(|(o, _)| *o == op)
            .expect("every op is loaded")
            .1
    }

    /// `out[i] = op(a[i], b[i])` on `stream` (unary operations ignore `b`).
    pub fn elementwise(
        &self,
        stream: &Stream,
        op: FrOp,
        out: &mut DeviceBuffer<FrLimbs>,
        a: &DeviceBuffer<FrLimbs>,
        b: &DeviceBuffer<FrLimbs>,
    ) -> Result<(), GpuError> {
        let n = a.len();
        if out.len() != n {
            return Err(GpuError::LengthMismatch {
                expected: n,
                got: out.len(),
            });
        }
        if b.len() != n {
            return Err(GpuError::LengthMismatch {
                expected: n,
                got: b.len(),
            });
        }
        let n = u32::try_from(n)
            .map_err(|_| GpuError::InvalidArgument(format!("{n} elements exceed 2^32")))?;
        if n == 0 {
            return Ok(());
        }
        let mut args = KernelArgs::new();
        args.buffer_mut(out).buffer(a).buffer(b).value(n);
        // SAFETY: `fr_test_<op>(fr_t* out, const fr_t* a, const fr_t* b, uint32_t n)` matches the
        // arguments; it touches indices below n only, and all three buffers hold n elements.
        unsafe {
            self.kernel(op)
                .launch(stream, LaunchConfig::linear(n, BLOCK), &args)
        }
    }

    /// Runs `op` over host slices: uploads, launches, downloads (on the default stream).
    pub fn elementwise_host(
        &self,
        op: FrOp,
        a: &[FrLimbs],
        b: &[FrLimbs],
    ) -> Result<Vec<FrLimbs>, GpuError> {
        let stream = self.device.default_stream();
        let a_dev = stream.upload(a)?;
        let b_dev = stream.upload(b)?;
        let mut out = stream.alloc::<FrLimbs>(a.len())?;
        self.elementwise(&stream, op, &mut out, &a_dev, &b_dev)?;
        stream.download(&out)
    }

    /// Launches the throughput probe `probe` over `data` (two elements per thread,
    /// `2 · threads` elements, blocks of `block` threads; 256 for [`MulProbe::IntegerO4`]) and
    /// returns the number of multiplications it performs.
    pub fn bench_mul(
        &self,
        probe: MulProbe,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        block: u32,
        iters: u32,
    ) -> Result<u64, GpuError> {
        let kernel = &self
            .probes
            .iter()
            .find(|(p, _)| *p == probe)
            .expect("every probe is loaded")
            .1;
        self.launch_bench(kernel, stream, data, block, iters)
    }

    fn launch_bench(
        &self,
        kernel: &Kernel,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        block: u32,
        iters: u32,
    ) -> Result<u64, GpuError> {
        let threads = u32::try_from(data.len() / 2)
            .map_err(|_| GpuError::InvalidArgument("too many elements".into()))?;
        if threads == 0 || threads % block != 0 {
            return Err(GpuError::InvalidArgument(format!(
                "{threads} threads are not a positive multiple of {block}"
            )));
        }
        let mut args = KernelArgs::new();
        args.buffer_mut(data).value(iters);
        let config = LaunchConfig::linear(threads, block);
        // SAFETY: `fr_bench_mul*(fr_t* data, uint32_t iters)` matches; thread i touches elements
        // 2i and 2i+1, below 2 · threads = data.len() since the grid is exactly `threads` wide.
        unsafe { kernel.launch(stream, config, &args)? };
        Ok(4 * u64::from(iters) * u64::from(threads))
    }
}
