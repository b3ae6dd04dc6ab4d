//! `--backend cpu|gpu|auto`: which backend `cuzk bench` proves on.

use std::sync::Arc;

#[cfg(not(feature = "cuda"))]
use anyhow::bail;
#[cfg(feature = "cuda")]
use anyhow::Context;
use cuzk::field::Scalar;
use cuzk::groth16::{Parameters, Proof};
use cuzk::pipeline::{CpuBackend, PartitionTiming, Prover, ProverConfig};
use cuzk_groth16::ProvingAssignment;

/// What the user asked for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The host's cores.
    Cpu,
    /// A CUDA device; an error without one.
    Gpu,
    /// The GPU when one is usable, else the CPU.
    Auto,
}

/// The backend chosen.
pub enum Chosen {
    Cpu,
    #[cfg(feature = "cuda")]
    Gpu(Box<cuzk::pipeline::gpu::GpuBackend>),
}

/// Opens the backend `choice` names (`device`: the GPU's ordinal).
pub fn open(choice: Choice, device: usize) -> anyhow::Result<Chosen> {
    if choice == Choice::Cpu {
        return Ok(Chosen::Cpu);
    }
    #[cfg(feature = "cuda")]
    {
        use cuzk::pipeline::gpu::{GpuBackend, GpuConfig};
        match GpuBackend::new(device, GpuConfig::default()) {
            Ok(gpu) => Ok(Chosen::Gpu(Box::new(gpu))),
            Err(e) if choice == Choice::Auto => {
                eprintln!("no usable GPU ({e}); proving on the CPU");
                Ok(Chosen::Cpu)
            }
            Err(e) => Err(e).with_context(|| format!("opening GPU {device}")),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        if choice == Choice::Gpu {
            bail!("this cuzk was built without CUDA: rebuild with `--features cuda` for --backend gpu");
        }
        Ok(Chosen::Cpu)
    }
}

impl Chosen {
    /// One line for the report's header.
    pub fn describe(&self) -> String {
        match self {
            Chosen::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpu) => {
                use cuzk::pipeline::Backend;
                let info = gpu.gpu().info();
                format!(
                    "{} ({}, {:.0} GiB)",
                    gpu.device(),
                    info.name,
                    info.total_memory as f64 / (1u64 << 30) as f64
                )
            }
        }
    }

    /// Makes the parameters resident where the backend keeps them; a line saying what it did.
    pub fn preload(&self, params: &Arc<Parameters>) -> anyhow::Result<Option<String>> {
        match self {
            Chosen::Cpu => {
                let _ = params;
                Ok(None)
            }
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpu) => {
                let start = std::time::Instant::now();
                let bytes = gpu
                    .preload(params)
                    .context("making the parameters resident")?;
                Ok(Some(format!(
                    "parameters resident: {:.1} MiB in {:.3} s",
                    bytes as f64 / (1u64 << 20) as f64,
                    start.elapsed().as_secs_f64()
                )))
            }
        }
    }

    /// Proves the partitions of one job.
    pub fn prove_batch(
        &self,
        config: ProverConfig,
        params: &Parameters,
        assignments: Vec<ProvingAssignment>,
        r: &[Scalar],
        s: &[Scalar],
    ) -> anyhow::Result<Vec<(Proof, PartitionTiming)>> {
        match self {
            Chosen::Cpu => {
                Ok(Prover::new(CpuBackend, config).prove_batch(params, assignments, r, s, 0)?)
            }
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpu) => {
                Ok(Prover::new(gpu.as_ref(), config).prove_batch(params, assignments, r, s, 0)?)
            }
        }
    }
}
