//! The cuzk partition prover.
//!
//! One Groth16 proof ("partition") is computed as the stages of the design, each inside a
//! `tracing` span named after it with fields `job`, `partition`, `worker` and `device`:
//!
//! | stage (in execution order) | what it does |
//! |---|---|
//! | `validate` | the assignment's shape against the parameters; every constraint holds |
//! | `split_vectors` | sort each query's scalars into zero / one / other (on the device with the GPU backend when the query's bases are resident: the values go up once, then each query's split runs there) |
//! | `prep_msm` | gather the bases of the "other" scalars for the tail MSMs (on the GPU with resident bases, each chunk is gathered inside `tail_msm`: no time here) |
//! | `batch_add` | sums of the bases whose scalar is one (A, B₁, B₂, L) |
//! | `tail_msm` | MSMs of L, A, B₁ (G1) and B₂ (G2) over the other scalars |
//! | `products` | a, b, c where the NTT reads them: moved there from synthesis, or a pre-compiled circuit's A·z, B·z, C·z computed from its witness ([`PartitionInput::Witness`]; on a GPU on the device, every row's a·b = c checked there) |
//! | `ntt_h` | H = (a·b − c)/Z: iNTT, coset NTT, pointwise, coset iNTT |
//! | `msm_h` | Σ hᵢ·Hᵢ |
//! | `epilogue` | A = α + ΣA + rδ; B = β + ΣB + sδ; C = H + L + s·A + r·B₁ − rs·δ |
//!
//! `split_vectors` to `tail_msm` are one call, [`Backend::query_sums`], so that a backend does its
//! own splitting and gathering (see the `query` module); the partition's device phase opens
//! before it. The queries over the assignment's values run before the NTTs so that those values
//! are freed first: the NTT scratch then reuses their memory and the prover's peak stays at what synthesis
//! left. The heavy stages go through a [`Backend`]; [`CpuBackend`] runs them on the host, and
//! `gpu::GpuBackend` (feature `cuda`) on a CUDA device. Every
//! [`Prover::prove`] returns the proof and a [`PartitionTiming`]. Configuration is a value
//! ([`ProverConfig`]); this crate reads no environment variables or files.

mod backend;
#[cfg(feature = "cuda")]
pub mod gpu;
mod input;
mod prover;
mod query;
pub mod split;
mod stage;

pub use backend::{host_query_sums, Backend, CpuBackend, DevicePhase, PartitionShape};
pub use input::{Evaluations, PartitionInput};
pub use prover::{JobContext, Prover, ProverConfig};
pub use query::{Query, QuerySums, Stages, Witness};
pub use stage::{PartitionTiming, Stage};

/// Errors of the partition prover.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The assignment or the parameters are malformed, or do not belong together.
    #[error(transparent)]
    Groth16(#[from] cuzk_groth16::Groth16Error),
    /// A pre-compiled circuit could not be used (a damaged file, another topology).
    #[error("pre-compiled circuit: {0}")]
    PreCompiled(cuzk_pce::PceError),
    /// The NTT rejected its input.
    #[error("ntt: {0}")]
    Ntt(#[from] cuzk_ntt::NttError),
    /// An MSM rejected its input.
    #[error("msm: {0}")]
    Msm(#[from] cuzk_msm::MsmError),
    /// A device failed (out of memory, a kernel fault, a lost device): the partition is lost,
    /// the input was fine; the engine may retry it elsewhere.
    #[error("device {device}: {source}")]
    Device {
        /// The backend's name of the device ("gpu0").
        device: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The batch's vectors of assignments, r and s differ in length.
    #[error("batch of {assignments} assignments with {rs} values of r and {ss} of s")]
    BatchShape {
        assignments: usize,
        rs: usize,
        ss: usize,
    },
}

/// So that code written for bellperson (`create_proof(...)?` in a function returning
/// `SynthesisError`) keeps compiling.
impl From<PipelineError> for cuzk_groth16::SynthesisError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::Groth16(e) => e.into(),
            other => cuzk_groth16::SynthesisError::IoError(std::io::Error::other(other)),
        }
    }
}
