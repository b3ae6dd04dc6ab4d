//! `--backend cpu|gpu|auto`: which backend `cuzk bench` proves on.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[cfg(not(feature = "cuda"))]
use anyhow::bail;
#[cfg(feature = "cuda")]
use anyhow::Context;
use cuzk::field::Scalar;
use cuzk::groth16::{Parameters, Proof};
use cuzk::pipeline::{
    Backend, CpuBackend, JobContext, PartitionInput, PartitionTiming, Prover, ProverConfig,
};
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

    /// Makes the parameters resident where the backend keeps them; a line saying what it did.
    pub fn preload(&self, params: &Arc<Parameters>) -> anyhow::Result<Option<String>> {
        match self {
            Chosen::Cpu(_) => {
                let _ = params;
                Ok(None)
            }
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                // Residency is the device's: one worker makes it for all.
                let start = std::time::Instant::now();
                let bytes = gpus[0]
                    .preload(params)
                    .context("making the parameters resident")?;
                let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
                Ok(Some(format!(
                    "parameters resident: {:.1} MiB, mapped from host memory: {:.1} MiB, in \
                     {:.3} s",
                    mib(bytes),
                    mib(gpus[0].mapped_bytes()),
                    start.elapsed().as_secs_f64()
                )))
            }
        }
    }

    /// Makes a pre-compiled circuit's matrices resident where the backend computes its products
    /// (before its parameters, which then take the room left); a line saying what it did.
    pub fn preload_circuit(
        &self,
        circuit: &cuzk_pce::PreCompiled,
    ) -> anyhow::Result<Option<String>> {
        match self {
            Chosen::Cpu(_) => {
                let _ = circuit;
                Ok(None)
            }
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                let start = std::time::Instant::now();
                let layout = circuit.image_layout();
                let resident = gpus[0]
                    .preload_circuit(circuit)
                    .context("making the pre-compiled matrices resident")?;
                let gib = layout.bytes() as f64 / (1u64 << 30) as f64;
                Ok(Some(if resident {
                    format!(
                        "pre-compiled matrices resident: {gib:.2} GiB ({:.2} bytes a non-zero, {} \
                         non-zeros), in {:.3} s: products on the device",
                        layout.bytes_per_nonzero(),
                        layout.nnz.iter().sum::<u64>(),
                        start.elapsed().as_secs_f64()
                    )
                } else {
                    format!(
                        "pre-compiled matrices ({gib:.2} GiB) do not fit beside a partition: \
                         products on the host"
                    )
                }))
            }
        }
    }

    /// Proves the partitions `partitions` yields (index, input) as they come, each taken
    /// by the next idle worker, and returns them in partition order (`r`, `s` and the result
    /// are indexed by partition). The sender side decides how far ahead of the provers it
    /// synthesises (a bounded channel), which bounds the host memory of partitions in flight.
    pub fn prove_stream(
        &self,
        config: ProverConfig,
        params: &Parameters,
        partitions: Receiver<(usize, PartitionInput)>,
        r: &[Scalar],
        s: &[Scalar],
    ) -> anyhow::Result<Vec<Proved>> {
        match self {
            Chosen::Cpu(workers) => {
                let provers: Vec<_> = (0..(*workers).max(1))
                    .map(|_| Prover::new(CpuBackend, config.clone()))
                    .collect();
                on_workers(&provers, params, partitions, r, s)
            }
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                let provers: Vec<_> = gpus
                    .iter()
                    .map(|g| Prover::new(g, config.clone()))
                    .collect();
                on_workers(&provers, params, partitions, r, s)
            }
        }
    }

    /// The device memory the GPU backend's arena has held at most (resident parameters and
    /// partitions' buffers), and its size; `None` on the CPU.
    pub fn peak_vram(&self) -> Option<(u64, u64)> {
        match self {
            Chosen::Cpu(_) => None,
            #[cfg(feature = "cuda")]
            Chosen::Gpu(gpus) => {
                let stats = gpus[0].arena().stats();
                Some((stats.peak_in_use, stats.capacity))
            }
        }
    }
}

/// One partition's proof, its stage times and when it was done.
pub struct Proved {
    pub proof: Proof,
    pub timing: PartitionTiming,
    pub finished: Instant,
}

/// Each worker proves on a thread of its own, taking the next partition from `partitions`
/// whenever it is idle, until the sender hangs up.
fn on_workers<B: Backend>(
    provers: &[Prover<B>],
    params: &Parameters,
    partitions: Receiver<(usize, PartitionInput)>,
    r: &[Scalar],
    s: &[Scalar],
) -> anyhow::Result<Vec<Proved>> {
    let partitions = Mutex::new(partitions);
    let mut out: Vec<Option<Proved>> = (0..r.len()).map(|_| None).collect();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = provers
            .iter()
            .enumerate()
            .map(|(w, prover)| {
                let partitions = &partitions;
                scope.spawn(move || -> anyhow::Result<Vec<_>> {
                    let mut done = Vec::new();
                    loop {
                        // One worker waits on the channel at a time; the others wait for it.
                        let next = partitions.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((k, a)) = next else {
                            return Ok(done);
                        };
                        let (Some(&rk), Some(&sk)) = (r.get(k), s.get(k)) else {
                            anyhow::bail!("partition {k} has no r, s");
                        };
                        let ctx = JobContext {
                            job: 0,
                            worker: w as u64,
                        };
                        let (proof, timing) = prover.prove(params, a, rk, sk, ctx, k)?;
                        done.push((
                            k,
                            Proved {
                                proof,
                                timing,
                                finished: Instant::now(),
                            },
                        ));
                    }
                })
            })
            .collect();
        for h in handles {
            let done = h
                .join()
                .map_err(|_| anyhow::anyhow!("a worker thread panicked"))??;
            for (k, p) in done {
                out[k] = Some(p);
            }
        }
        Ok(())
    })?;
    out.into_iter()
        .map(|p| p.ok_or_else(|| anyhow::anyhow!("a partition was not proved")))
        .collect()
}
