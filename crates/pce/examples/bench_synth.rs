//! Synthesis speed and memory: bellperson's, cuzk's full synthesis, and the pre-compiled path, on
//! the PoRep-shaped circuit, each variant in its own process so its peak memory is its own.
//!
//! ```text
//! cargo run --release -p cuzk-pce --example bench_synth -- [--sizes 16,18,20] [--runs 5] [--dir DIR]
//! ```
//!
//! What is timed, per run, on `PorepShaped::new(log, run)` (the same topology, a new witness):
//! - `bellperson`: bellperson 0.27's prover-side synthesis for one circuit, as
//!   `create_proof` → `synthesize_circuits_batch` runs it: a fresh `ProvingAssignment`, the
//!   constant one, `circuit.synthesize`, one `xᵢ · 0 = 0` constraint per input. bellperson keeps
//!   that type private, so it is transcribed below line for line, over the same
//!   `ec_gpu_gen::multiexp_cpu::DensityTracker` and the same evaluation code;
//! - `cuzk`: `cuzk_groth16::synthesize_with_capacity` with the capacity `create_proof` passes
//!   (from the parameters: 2^log constraints, the exact input and private variable counts);
//! - `pce`: `PreCompiled::synthesize` on a file recorded before the runs (by the parent) and
//!   memory-mapped once per process (its load, checksums and validation reported apart): the
//!   witness pass, then the sparse products fused with the `a·b = c` check of every row (a check
//!   the other two leave to the prover).
//!
//! CPU time is that of all the child's threads per run (from `/proc/self/task/*/schedstat`): on
//! a shared, loaded machine it is steadier than wall time (the pre-compiled path's products run
//! on every core, so its wall time is lower than its CPU time on an idle machine).
//! Peak memory is the child process's `VmHWM` after its runs (file pages of the map included).
//! Times are medians. The output is a markdown table.

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk::circuits::PorepShaped;
use cuzk_field::Scalar;
use cuzk_groth16::{synthesize_with_capacity, Capacity};
use cuzk_pce::PreCompiled;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::{Field, PrimeField};
use serde::{Deserialize, Serialize};

/// bellperson 0.27's `groth16::prover::ProvingAssignment` (private there), transcribed.
struct BpAssignment<S: PrimeField> {
    a_aux_density: DensityTracker,
    b_input_density: DensityTracker,
    b_aux_density: DensityTracker,
    a: Vec<S>,
    b: Vec<S>,
    c: Vec<S>,
    input_assignment: Vec<S>,
    aux_assignment: Vec<S>,
}

/// bellperson 0.27's `lc::eval_with_trackers` (crate-private there), transcribed.
fn eval_with_trackers<S: PrimeField>(
    lc: &LinearCombination<S>,
    mut input_density: Option<&mut DensityTracker>,
    mut aux_density: Option<&mut DensityTracker>,
    input_assignment: &[S],
    aux_assignment: &[S],
) -> S {
    let mut acc = S::ZERO;
    let one = S::ONE;
    for (index, coeff) in lc.iter_inputs() {
        if !coeff.is_zero_vartime() {
            let mut tmp = input_assignment[*index];
            if coeff != &one {
                tmp *= coeff;
            }
            acc += tmp;
            if let Some(ref mut v) = input_density {
                v.inc(*index);
            }
        }
    }
    for (index, coeff) in lc.iter_aux() {
        if !coeff.is_zero_vartime() {
            let mut tmp = aux_assignment[*index];
            if coeff != &one {
                tmp *= coeff;
            }
            acc += tmp;
            if let Some(ref mut v) = aux_density {
                v.inc(*index);
            }
        }
    }
    acc
}

impl<S: PrimeField> ConstraintSystem<S> for BpAssignment<S> {
    type Root = Self;

    fn new() -> Self {
        Self {
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
            a: vec![],
            b: vec![],
            c: vec![],
            input_assignment: vec![],
            aux_assignment: vec![],
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<S, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<S, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<S>) -> LinearCombination<S>,
        LB: FnOnce(LinearCombination<S>) -> LinearCombination<S>,
        LC: FnOnce(LinearCombination<S>) -> LinearCombination<S>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let input_assignment = &self.input_assignment;
        let aux_assignment = &self.aux_assignment;
        let a_res = eval_with_trackers(
            &a,
            None,
            Some(&mut self.a_aux_density),
            input_assignment,
            aux_assignment,
        );
        let b_res = eval_with_trackers(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            input_assignment,
            aux_assignment,
        );
        let c_res = c.eval(input_assignment, aux_assignment);
        self.a.push(a_res);
        self.b.push(b_res);
        self.c.push(c_res);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// bellperson's `synthesize_circuits_batch` for one circuit.
fn bellperson_synthesize(circuit: PorepShaped) -> anyhow::Result<BpAssignment<Scalar>> {
    let mut prover = BpAssignment::new();
    prover.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut prover)?;
    for i in 0..prover.input_assignment.len() {
        prover.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(prover)
}

/// One child process's result.
#[derive(Serialize, Deserialize, Debug)]
struct Child {
    times_s: Vec<f64>,
    /// For `pce`: the witness pass and the products, per run.
    witness_s: Vec<f64>,
    products_s: Vec<f64>,
    load_s: f64,
    /// CPU time of all threads over the runs, divided by the runs.
    cpu_s: f64,
    constraints: usize,
    peak_kib: u64,
}

/// The process's peak resident memory in KiB (0 where the kernel does not say).
fn peak_kib() -> u64 {
    cuzk_telemetry::peak_rss_bytes().map_or(0, |bytes| bytes / 1024)
}

/// CPU time of every thread of this process so far (`/proc/self/task/*/schedstat`, ns).
fn cpu_s() -> f64 {
    let mut ns = 0u64;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
                ns += stat
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    ns as f64 * 1e-9
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn child(variant: &str, log: u32, runs: usize, file: &str, aux: usize) -> anyhow::Result<Child> {
    let mut out = Child {
        times_s: vec![],
        witness_s: vec![],
        products_s: vec![],
        load_s: 0.0,
        cpu_s: 0.0,
        constraints: 0,
        peak_kib: 0,
    };
    let pc = if variant == "pce" {
        let start = Instant::now();
        let pc = PreCompiled::open(std::path::Path::new(file))?;
        out.load_s = start.elapsed().as_secs_f64();
        Some(pc)
    } else {
        None
    };
    // Start the thread pool before measuring CPU time, so its threads are counted from here.
    rayon::broadcast(|_| ());
    let cpu_start = cpu_s();
    for run in 0..runs {
        let circuit = PorepShaped::new(log, run as u64);
        let start = Instant::now();
        out.constraints = match (variant, &pc) {
            ("bellperson", _) => bellperson_synthesize(circuit)?.a.len(),
            ("cuzk", _) => {
                let capacity = Capacity {
                    constraints: 1 << log,
                    inputs: 2,
                    aux,
                };
                synthesize_with_capacity(circuit, capacity)?.num_constraints()
            }
            ("pce", Some(pc)) => {
                let witness = pc.witness(circuit)?;
                out.witness_s.push(start.elapsed().as_secs_f64());
                let mid = Instant::now();
                let n = pc.evaluate(witness)?.num_constraints();
                out.products_s.push(mid.elapsed().as_secs_f64());
                n
            }
            _ => bail!("unknown variant {variant:?}"),
        };
        out.times_s.push(start.elapsed().as_secs_f64());
    }
    out.cpu_s = (cpu_s() - cpu_start) / runs as f64;
    out.peak_kib = peak_kib();
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        let log: u32 = args
            .get(2)
            .context("child VARIANT LOG RUNS FILE")?
            .parse()?;
        let runs: usize = args.get(3).context("RUNS")?.parse()?;
        let aux: usize = args.get(5).context("AUX")?.parse()?;
        let result = child(&args[1], log, runs, args.get(4).context("FILE")?, aux)?;
        println!("{}", serde_json::to_string(&result)?);
        return Ok(());
    }
    let mut sizes = vec![16u32, 18, 20];
    let mut runs = 5usize;
    let mut keep = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--sizes" => {
                sizes = it
                    .next()
                    .context("--sizes 16,18")?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            "--dir" => keep = Some(std::path::PathBuf::from(it.next().context("--dir DIR")?)),
            other => bail!("unknown argument {other:?}: --sizes A,B,.. --runs N --dir DIR"),
        }
    }
    let exe = std::env::current_exe()?;
    // The recorded files go to `--dir` (kept) or a temporary folder.
    let tmp = tempfile::tempdir()?;
    let dir = keep.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    println!(
        "| domain | constraints | bellperson (ms) | cuzk full (ms) | pce (ms) = witness + products | vs bellperson | vs cuzk | CPU ms bellperson / cuzk / pce | peak MiB bellperson / cuzk / pce | file (MiB) | load (ms) | record (s) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for log in sizes {
        let file = dir.join(format!("porep-{log}.pce"));
        let start = Instant::now();
        let rec = cuzk_pce::record(PorepShaped::new(log, 0))?;
        cuzk_pce::write_file(&rec, &file)?;
        let record_s = start.elapsed().as_secs_f64();
        let aux = rec.num_aux;
        drop(rec);
        let file_mib = std::fs::metadata(&file)?.len() as f64 / (1024.0 * 1024.0);
        let mut results = Vec::new();
        for variant in ["bellperson", "cuzk", "pce"] {
            let out = Command::new(&exe)
                .args(["child", variant, &log.to_string(), &runs.to_string()])
                .arg(&file)
                .arg(aux.to_string())
                .output()?;
            if !out.status.success() {
                bail!(
                    "{variant} 2^{log} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let child: Child =
                serde_json::from_slice(&out.stdout).with_context(|| format!("{variant} output"))?;
            results.push(child);
        }
        let [bp, cz, pce] = [&results[0], &results[1], &results[2]];
        if bp.constraints != pce.constraints || cz.constraints != pce.constraints {
            bail!("2^{log}: the variants disagree on the constraint count");
        }
        let ms = |c: &Child| median(&c.times_s) * 1e3;
        let mib = |c: &Child| c.peak_kib as f64 / 1024.0;
        println!(
            "| 2^{log} | {} | {:.1} | {:.1} | {:.1} = {:.1} + {:.1} | {:.2}× | {:.2}× | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} / {:.0} | {:.1} | {:.1} | {:.2} |",
            pce.constraints,
            ms(bp),
            ms(cz),
            ms(pce),
            median(&pce.witness_s) * 1e3,
            median(&pce.products_s) * 1e3,
            ms(bp) / ms(pce),
            ms(cz) / ms(pce),
            bp.cpu_s * 1e3,
            cz.cpu_s * 1e3,
            pce.cpu_s * 1e3,
            mib(bp),
            mib(cz),
            mib(pce),
            file_mib,
            pce.load_s * 1e3,
            record_s,
        );
    }
    Ok(())
}
