//! One CPU prover run in its own process, for `cargo xtask bench cpu` (which builds it with
//! `cargo build --release -p cuzk --example cpu_prove`).
//!
//! `cpu_prove setup LOG_SIZE FILE` writes test parameters for the PoRep-shaped circuit of that
//! size; `cpu_prove prove cuzk|bellperson LOG_SIZE FILE RUNS` proves it RUNS times and prints one
//! JSON line: the wall time of each `create_proof` (synthesis included, parameter loading
//! excluded), the proof bytes, and the process's peak resident memory.

use std::time::Instant;

use anyhow::{bail, Context};
use blstrs::{Bls12, Scalar};
use cuzk::circuits::PorepShaped;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde::Serialize;

#[derive(Serialize)]
struct Run {
    prover: String,
    log_size: u32,
    constraints: usize,
    times_s: Vec<f64>,
    proof: String,
    peak_rss_kib: u64,
}

/// The process's peak resident memory in KiB (0 where the kernel does not say).
fn peak_rss_kib() -> u64 {
    cuzk_telemetry::peak_rss_bytes().map_or(0, |bytes| bytes / 1024)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| {
        args.get(i)
            .map(String::as_str)
            .context("usage: cpu_prove setup LOG FILE | prove PROVER LOG FILE RUNS")
    };
    match arg(0)? {
        "setup" => {
            let log: u32 = arg(1)?.parse()?;
            let circuit = PorepShaped::new(log, 0);
            let params = cuzk::groth16::generate_random_parameters(
                circuit,
                &mut ChaCha20Rng::seed_from_u64(u64::from(log)),
            )?;
            let file = std::io::BufWriter::new(std::fs::File::create(arg(2)?)?);
            params.write(file)?;
        }
        "prove" => {
            let prover = arg(1)?.to_string();
            let log: u32 = arg(2)?.parse()?;
            let path = arg(3)?;
            let runs: usize = arg(4)?.parse()?;
            let circuit = PorepShaped::new(log, 0);
            let constraints = cuzk_groth16::synthesize(circuit.clone())?.num_constraints();
            let mut rng = ChaCha20Rng::seed_from_u64(1);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let mut times_s = Vec::new();
            let mut proof = Vec::new();
            match prover.as_str() {
                "cuzk" => {
                    // Streamed like bellperson's, so neither peak includes a mapped file.
                    let file = std::io::BufReader::new(std::fs::File::open(path)?);
                    let params = cuzk::groth16::Parameters::read(file, false)?;
                    for _ in 0..runs {
                        let start = Instant::now();
                        let p = cuzk::groth16::create_proof(circuit.clone(), &params, r, s)?;
                        times_s.push(start.elapsed().as_secs_f64());
                        proof = p.to_bytes().to_vec();
                    }
                }
                "bellperson" => {
                    let file = std::io::BufReader::new(std::fs::File::open(path)?);
                    let params = bellperson::groth16::Parameters::<Bls12>::read(file, false)?;
                    for _ in 0..runs {
                        let start = Instant::now();
                        let p = bellperson::groth16::create_proof::<Bls12, _, _>(
                            circuit.clone(),
                            &params,
                            r,
                            s,
                        )?;
                        times_s.push(start.elapsed().as_secs_f64());
                        proof.clear();
                        p.write(&mut proof)?;
                    }
                }
                other => bail!("unknown prover {other:?}: cuzk or bellperson"),
            }
            let run = Run {
                prover,
                log_size: log,
                constraints,
                times_s,
                proof: hex::encode(proof),
                peak_rss_kib: peak_rss_kib(),
            };
            println!("{}", serde_json::to_string(&run)?);
        }
        other => bail!("unknown command {other:?}"),
    }
    Ok(())
}
