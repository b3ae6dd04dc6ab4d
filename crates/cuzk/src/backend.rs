//! `--backend cpu|gpu|auto`: the engine's workers `cuzk bench` and `cuzk prove` run on.

use std::sync::Arc;

#[cfg(not(feature = "cuda"))]
use anyhow::bail;
#[cfg(feature = "cuda")]
use anyhow::Context;
use cuzk::groth16::Parameters;
#[cfg(feature = "cuda")]
use cuzk_engine::gpu::GpuProofBackend;
use cuzk_engine::{CpuProofBackend, ProofBackend};
use cuzk_interlock::PolicyKind;

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

/// `--policy`: how the workers of a GPU take turns, by cuzk-interlock's short names.
pub fn policy_parser() -> impl clap::builder::TypedValueParser<Value = PolicyKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        PolicyKind::ALL.map(|p| PossibleValue::new(p.short_name()).help(p.summary())),
    )
    .map(|name| PolicyKind::from_short_name(&name).expect("one of the possible values"))
}

/// The backend chosen: one prover per worker.
pub enum Chosen {
    Cpu(usize),
    #[cfg(feature = "cuda")]
    Gpu(Vec<cuzk::pipeline::gpu::GpuBackend>),
}

/// Opens the backend `choice` names for `workers` workers (`device`: the GPU's ordinal;
/// `policy`: how its workers take turns).
pub fn open(
    choice: Choice,
    device: usize,
    workers: usize,
    policy: PolicyKind,
) -> anyhow::Result<Chosen> {
    if choice == Choice::Cpu {
        return Ok(Chosen::Cpu(workers));
    }
    #[cfg(feature = "cuda")]
    {
        use cuzk::pipeline::gpu::{GpuBackend, GpuConfig};
        match GpuBackend::workers(device, GpuConfig::default(), workers, policy) {
            Ok(gpus) => Ok(Chosen::Gpu(gpus)),
            Err(e) if choice == Choice::Auto => {
                eprintln!("no usable GPU ({e}); proving on the CPU");
                Ok(Chosen::Cpu(workers))
            }
            Err(e) => Err(e).with_context(|| format!("opening GPU {device}")),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, policy);
        if choice == Choice::Gpu {
            bail!("this cuzk was built without CUDA: rebuild with `--features cuda` for --backend gpu");
        }
        Ok(Chosen::Cpu(workers))
    }
}

impl Chosen {
    /// One line for the report's header.
    pub fn describe(&self) -> String {
        match self {
            Chosen::Cpu(workers) => format!(
                "cpu ({} threads, {workers} worker(s))",
                rayon::current_num_threads()
            ),
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                use cuzk::pipeline::Backend;
                let info = gpus[0].gpu().info();
                format!(
                    "{} ({}, {:.0} GiB), {} worker(s) under {}",
                    gpus[0].device(),
                    info.name,
                    info.total_memory as f64 / (1u64 << 30) as f64,
                    gpus.len(),
                    gpus[0].policy()
                )
            }
        }
    }

    /// The engine's workers on the chosen backend; `check_satisfied` checks every constraint
    /// before proving.
    pub fn into_workers(self, check_satisfied: bool) -> Workers {
        match self {
            Chosen::Cpu(workers) => Workers {
                backends: (0..workers.max(1))
                    .map(|_| {
                        Arc::new(CpuProofBackend::new(check_satisfied)) as Arc<dyn ProofBackend>
                    })
                    .collect(),
                #[cfg(feature = "cuda")]
                gpus: Vec::new(),
            },
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                let gpus: Vec<Arc<GpuProofBackend>> =
                    GpuProofBackend::from_workers(gpus, check_satisfied, None)
                        .into_iter()
                        .map(Arc::new)
                        .collect();
                Workers {
                    backends: gpus
                        .iter()
                        .map(|g| Arc::clone(g) as Arc<dyn ProofBackend>)
                        .collect(),
                    gpus,
                }
            }
        }
    }
}

/// The engine's workers a command proves on, and on a GPU the device's own reports.
pub struct Workers {
    /// Every worker, the first running the job.
    pub backends: Vec<Arc<dyn ProofBackend>>,
    /// The same workers on a GPU (empty on the CPU).
    #[cfg(feature = "cuda")]
    gpus: Vec<Arc<GpuProofBackend>>,
}

impl Workers {
    /// Makes the parameters ready where the workers read them (resident on the GPU, or
    /// decoded into host memory for the CPU); a line saying what it did.
    pub fn preload(&self, params: &Arc<Parameters>) -> anyhow::Result<String> {
        let start = std::time::Instant::now();
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        #[cfg(feature = "cuda")]
        if let Some(gpu) = self.gpus.first() {
            // Residency is the device's: one worker makes it for all.
            let bytes = gpu
                .gpu()
                .preload(params)
                .context("making the parameters resident")?;
            return Ok(format!(
                "parameters resident: {:.1} MiB, mapped from host memory: {:.1} MiB, in host \
                 memory: {:.1} MiB, in {:.3} s",
                mib(bytes),
                mib(gpu.gpu().mapped_bytes()),
                mib(params.host_bytes()),
                start.elapsed().as_secs_f64()
            ));
        }
        params.to_host()?;
        Ok(format!(
            "parameters in host memory: {:.1} MiB, in {:.3} s",
            mib(params.host_bytes()),
            start.elapsed().as_secs_f64()
        ))
    }

    /// Makes a pre-compiled circuit's matrices resident where the workers compute its products
    /// (before its parameters, which then take the room left); a line saying what it did.
    pub fn preload_circuit(
        &self,
        circuit: &cuzk_pce::PreCompiled,
    ) -> anyhow::Result<Option<String>> {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = self.gpus.first() {
            let start = std::time::Instant::now();
            let layout = circuit.image_layout();
            let resident = gpu
                .preload_circuit(circuit)
                .context("making the pre-compiled matrices resident")?;
            let gib = layout.bytes() as f64 / (1u64 << 30) as f64;
            return Ok(Some(if resident {
                format!(
                    "pre-compiled matrices resident: {gib:.2} GiB ({:.2} bytes a non-zero, {} \
                     non-zeros), in {:.3} s: products on the device",
                    layout.bytes_per_nonzero(),
                    layout.nnz.iter().sum::<u64>(),
                    start.elapsed().as_secs_f64()
                )
            } else {
                format!(
                    "pre-compiled matrices ({gib:.2} GiB) do not fit beside a partition: products \
                     on the host"
                )
            }));
        }
        let _ = circuit;
        Ok(None)
    }

    /// The device memory the GPU's arena has held at most (resident parameters and partitions'
    /// buffers), and its size; `None` on the CPU.
    pub fn peak_vram(&self) -> Option<(u64, u64)> {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = self.gpus.first() {
            let stats = gpu.gpu().arena().stats();
            return Some((stats.peak_in_use, stats.capacity));
        }
        None
    }
}
