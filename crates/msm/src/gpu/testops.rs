//! Launch wrappers of kernels/msm/msm_test.cu: element-wise Fp, Fp2, G1 and G2 operations for the
//! differential tests against blstrs, and the throughput probes that give the benchmarks their
//! floor (feature `testing`, or the crate's own tests).

use super::curve::{kernels_of, GpuCurve};
use super::exec::{blocks, u32_arg, Arg, Exec};
use super::GpuMsmError;

/// Threads per block of the element-wise kernels.
const BLOCK: u32 = 128;

/// An element-wise field operation (codes of msm_test.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `a + b`.
    Add = 0,
    /// `a − b`.
    Sub = 1,
    /// `−a`.
    Neg = 2,
    /// `a·b`.
    Mul = 3,
    /// `a²`.
    Sqr = 4,
    /// `2a`.
    Dbl = 5,
    /// `a⁻¹` (zero for zero).
    Inv = 6,
}

impl FieldOp {
    /// Every operation.
    pub const ALL: [FieldOp; 7] = [
        FieldOp::Add,
        FieldOp::Sub,
        FieldOp::Neg,
        FieldOp::Mul,
        FieldOp::Sqr,
        FieldOp::Dbl,
        FieldOp::Inv,
    ];
}

/// An element-wise point operation (codes of msm_test.cu): `a`, `b` XYZZ, `p` affine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointOp {
    /// `a + p` (mixed addition).
    AddAffine = 0,
    /// `a − p` (mixed addition of the negation).
    SubAffine = 1,
    /// `a + b`.
    Add = 2,
    /// `2a`.
    Double = 3,
    /// `2p`.
    DoubleAffine = 4,
}

impl PointOp {
    /// Every operation.
    pub const ALL: [PointOp; 5] = [
        PointOp::AddAffine,
        PointOp::SubAffine,
        PointOp::Add,
        PointOp::Double,
        PointOp::DoubleAffine,
    ];
}

/// `out[i] = op(a[i], b[i])` over Fp (`degree` 1, 48 bytes per element) or Fp2 (`degree` 2, 96
/// bytes), elements as little-endian Montgomery limbs.
pub(crate) fn msm_test_field<E: Exec>(
    exec: &E,
    degree: usize,
    op: FieldOp,
    a: &[u8],
    b: &[u8],
) -> Result<Vec<u8>, GpuMsmError> {
    let size = 48 * degree;
    let n = a.len() / size;
    let kernel = if degree == 1 {
        "msm_test_fp"
    } else {
        "msm_test_fp2"
    };
    let mut da = exec.alloc(a.len())?;
    let mut db = exec.alloc(b.len())?;
    exec.upload(&mut da, a)?;
    exec.upload(&mut db, b)?;
    let out = exec.alloc(a.len())?;
    exec.launch(
        kernel,
        blocks(n, BLOCK)?,
        BLOCK,
        &[
            Arg::U32(op as u32),
            Arg::Buf(&out),
            Arg::Buf(&da),
            Arg::Buf(&db),
            Arg::U32(u32_arg(n, "elements")?),
        ],
    )?;
    let mut result = vec![0u8; a.len()];
    exec.download(&out, &mut result)?;
    Ok(result)
}

/// `out[i] = op(a[i], b[i], p[i])` in `C`'s group: `a`, `b` XYZZ points, `p` affine points, all
/// as device-layout bytes; returns the XYZZ results.
pub(crate) fn msm_test_point<E: Exec, C: GpuCurve>(
    exec: &E,
    op: PointOp,
    a: &[u8],
    b: &[u8],
    p: &[u8],
) -> Result<Vec<u8>, GpuMsmError> {
    let n = a.len() / C::GROUP.xyzz_bytes();
    let mut bufs = Vec::new();
    for bytes in [a, b, p] {
        let mut buf = exec.alloc(bytes.len())?;
        exec.upload(&mut buf, bytes)?;
        bufs.push(buf);
    }
    let out = exec.alloc(a.len())?;
    exec.launch(
        kernels_of::<C>().test,
        blocks(n, BLOCK)?,
        BLOCK,
        &[
            Arg::U32(op as u32),
            Arg::Buf(&out),
            Arg::Buf(&bufs[0]),
            Arg::Buf(&bufs[1]),
            Arg::Buf(&bufs[2]),
            Arg::U32(u32_arg(n, "elements")?),
        ],
    )?;
    let mut result = vec![0u8; a.len()];
    exec.download(&out, &mut result)?;
    Ok(result)
}

/// Launches msm_bench_fp_mul over `data` (two Fp elements per thread, `threads` a multiple of
/// `block`); returns the Fp multiplications it performs. Only `GpuMsm::fp_mul_rate` launches it.
#[cfg(feature = "cuda")]
pub(crate) fn msm_bench_fp_mul<E: Exec>(
    exec: &E,
    data: &E::Buf,
    threads: usize,
    block: u32,
    iters: u32,
) -> Result<u64, GpuMsmError> {
    if threads == 0 || threads % block as usize != 0 || E::size(data) < threads * 96 {
        return Err(GpuMsmError::Internal(format!(
            "{threads} threads do not fit the probe"
        )));
    }
    exec.launch(
        "msm_bench_fp_mul",
        blocks(threads, block)?,
        block,
        &[Arg::Buf(data), Arg::U32(iters)],
    )?;
    Ok(4 * u64::from(iters) * threads as u64)
}

/// Launches msm_bench_madd_<g>: `threads` (a multiple of `block`) accumulators written to
/// `out`, each the sum of `iters` of the `n_bases` points in `bases` (a power of two of them;
/// see the kernel for which); returns the mixed additions it performs.
pub(crate) fn msm_bench_madd<E: Exec, C: GpuCurve>(
    exec: &E,
    out: &E::Buf,
    bases: &E::Buf,
    n_bases: usize,
    threads: usize,
    block: u32,
    iters: u32,
) -> Result<u64, GpuMsmError> {
    let group = C::GROUP;
    if threads == 0
        || threads % block as usize != 0
        || E::size(out) < threads * group.xyzz_bytes()
        || !n_bases.is_power_of_two()
        || E::size(bases) < n_bases * group.affine_bytes()
    {
        return Err(GpuMsmError::Internal(format!(
            "{threads} threads and {n_bases} bases do not fit the probe"
        )));
    }
    exec.launch(
        kernels_of::<C>().bench_madd,
        blocks(threads, block)?,
        block,
        &[
            Arg::Buf(out),
            Arg::Buf(bases),
            Arg::U32(u32_arg(n_bases - 1, "bases")?),
            Arg::U32(iters),
        ],
    )?;
    Ok(u64::from(iters) * threads as u64)
}
