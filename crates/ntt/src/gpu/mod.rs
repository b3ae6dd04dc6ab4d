//! The NTT on the GPU (feature `cuda`): bit-identical to [`crate::reference`].
//!
//! The kernels are `kernels/ntt/ntt.cu`, whose header comment states the algorithm: a
//! decimation-in-frequency network (natural order in, bit-reversed out) or its transpose, the
//! decimation-in-time network (bit-reversed in, natural out), cut into passes of up to 9 radix-2
//! stages (by default; [`NttConfig`]) that each run in shared memory, a few elements per thread in
//! registers, so a 2^27 transform reads and writes global memory three times. Coset and `n^-1`
//! scalings are fused into the first and last passes; a natural-to-natural or reversed-to-reversed
//! transform adds one tiled bit-reversal pass.
//!
//! [`GpuNtt`] holds the loaded module and the twiddle tables (8 MiB per direction, uploaded once
//! per [`GpuNtt`] and kept on the device; above 2^18 points, per size, a small fine table and by
//! default the full table of the first pass's twiddles, 16·n bytes: [`twiddle_table_bytes`]).
//! Its `*_device` methods transform vectors already on the device on a given stream, several
//! vectors per call, and its host methods (same signatures as [`crate::cpu`]) copy in and out
//! around them. Speed on the H200: `docs/benchmarks.md`.

use cuzk_gpu::GpuError;

use crate::NttError;

mod config;
mod device;
mod plan;

pub use config::{twiddle_table_bytes, NttConfig, SWEEP_CONFIGS};
pub use device::GpuNtt;
pub use plan::{plan, Pass, Plan};

/// The fatbin of `kernels/ntt/*.cu`, compiled by this crate's build script.
pub static NTT_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ntt.fatbin"));

/// The largest transform the GPU path supports, as `log2(n)`.
pub const MAX_LOG_N: u32 = 28;

/// `log2` of the entries of the coarse twiddle table (powers of the 2^18-th root of unity).
pub(crate) const COARSE_LOG: u32 = 18;

/// Errors of the GPU transforms.
#[derive(Debug, thiserror::Error)]
pub enum GpuNttError {
    /// The device layer failed (no driver, no device, a failed call).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A length does not match the domain.
    #[error(transparent)]
    Ntt(#[from] NttError),
    /// The domain is outside what the GPU path supports.
    #[error("a domain of 2^{log_n} points is not supported on the GPU (at most 2^{max})")]
    Unsupported { log_n: u32, max: u32 },
    /// The configuration is invalid.
    #[error("invalid NTT configuration: {0}")]
    Config(String),
}

/// Which transform (see the crate's conventions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `y_i = sum_j x_j omega^(ij)`.
    Forward,
    /// `x_i = n^-1 sum_j y_j omega^(-ij)`.
    Inverse,
    /// Forward on the coset `g<omega>`: coefficient `j` times `g^j`, then forward.
    CosetForward,
    /// Inverse, then coefficient `i` times `g^-i`.
    CosetInverse,
}

impl Transform {
    /// Every transform.
    pub const ALL: [Transform; 4] = [
        Transform::Forward,
        Transform::Inverse,
        Transform::CosetForward,
        Transform::CosetInverse,
    ];

    pub(crate) fn is_inverse(self) -> bool {
        matches!(self, Transform::Inverse | Transform::CosetInverse)
    }
}
