//! The GPU MSM benchmark behind `cargo xtask bench msm` (needs a GPU and the `cuda` feature).
//!
//! Times G1 and G2 MSMs of 2^min to 2^max points (G2 to 2^g2-max) with bases and scalars
//! resident on the device and with both streamed from host memory: a warm-up run, then `reps`
//! runs timed with CUDA events on the MSM's stream, the median reported. Beside each figure: the
//! floor (the plan's bucket additions × Fp multiplications per addition, at the Fp multiplication
//! rate this device reaches in the throughput probe), and a stage-by-stage profile of one run.
//! Each size is checked once against blst's CPU MSM up to 2^check-max points.
//!
//! Arguments: `--min 20 --max 26 --g2-max 24 --reps 5 --check-max 22 --out FILE.json`
//! (`--no-streamed` skips the streamed runs, `--no-affine` the batch-affine ones;
//! `--scatter-region BYTES` sets the sorted entries one scatter launch may write, 0 for no
//! limit, instead of the device's L2; `--window-bits C` replaces the planner's window width). Prints a Markdown table; `--out` also writes every
//! figure as JSON, which `cargo xtask bench msm --from FILE.json` turns into docs/benchmarks.md.

use std::time::Instant;

use cuzk_field::{G1Projective, G2Projective, Scalar};
use cuzk_gpu::Device;
use cuzk_msm::gpu::{
    Accumulation, Bases, GpuCurve, GpuMsm, MsmPlan, ScalarForm, Scalars, DEFAULT_RESIDENT_CHUNK,
    DEFAULT_STREAMED_CHUNK,
};
use cuzk_msm::{MsmCurve, G1, G2};
use ff::Field;
use group::Group as _;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

struct Args {
    min: u32,
    max: u32,
    g2_max: u32,
    reps: usize,
    check_max: u32,
    streamed: bool,
    affine: bool,
    scatter_region: Option<usize>,
    window_bits: Option<u32>,
    out: Option<String>,
}

fn parse_args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .cloned()
    };
    let num =
        |name: &str, default: u32| get(name).map_or(default, |v| v.parse().expect("a number"));
    Args {
        min: num("--min", 20),
        max: num("--max", 26),
        g2_max: num("--g2-max", 24),
        reps: num("--reps", 5) as usize,
        check_max: num("--check-max", 22),
        streamed: !argv.iter().any(|a| a == "--no-streamed"),
        affine: !argv.iter().any(|a| a == "--no-affine"),
        scatter_region: get("--scatter-region").map(|v| v.parse().expect("a number of bytes")),
        window_bits: get("--window-bits").map(|v| v.parse().expect("a window width")),
        out: get("--out"),
    }
}

/// `n` distinct points, made in parallel: chunk k starts at a random multiple of the generator
/// and adds a fixed random step.
fn points<C: MsmCurve>(n: usize, generator: C::Projective, seed: u64) -> Vec<C::Affine> {
    const CHUNK: usize = 1 << 16;
    let step = generator * Scalar::random(&mut ChaCha20Rng::seed_from_u64(seed));
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut rng =
                ChaCha20Rng::seed_from_u64(seed ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9));
            let mut p = generator * Scalar::random(&mut rng);
            let len = CHUNK.min(n - k * CHUNK);
            let proj: Vec<C::Projective> = (0..len)
                .map(|_| {
                    let q = p;
                    C::add_assign(&mut p, &step);
                    q
                })
                .collect();
            C::batch_to_affine(&proj)
        })
        .collect()
}

fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 16;
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut rng =
                ChaCha20Rng::seed_from_u64(seed ^ (k as u64 + 7).wrapping_mul(0x85eb_ca6b));
            let len = CHUNK.min(n - k * CHUNK);
            (0..len)
                .map(move |_| Scalar::random(&mut rng))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `reps` runs after a warm-up, timed by events on the MSM's stream.
fn time_runs(gpu: &GpuMsm, reps: usize, mut run: impl FnMut()) -> f64 {
    run();
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let start = gpu.stream().record_event().expect("event");
        run();
        let end = gpu.stream().record_event().expect("event");
        times.push(f64::from(start.elapsed_ms(&end).expect("elapsed")));
    }
    median(times)
}

struct Row {
    group: &'static str,
    log_n: u32,
    window_bits: u32,
    /// Batch-affine groups of windows of the default plan.
    affine_groups: u32,
    resident_ms: f64,
    /// The same resident MSM with batch-affine bucket sums (windows in groups of the default
    /// scratch), same run.
    affine_ms: Option<f64>,
    /// Batch-affine with scratch for all windows at once, when that differs.
    wide_ms: Option<f64>,
    /// Stages of a profiled batch-affine run.
    affine_stages: Vec<(&'static str, f64)>,
    streamed_ms: Option<f64>,
    floor_ms: f64,
    /// The floor of the batch-affine additions (about 6 multiplications each in G1).
    affine_floor_ms: f64,
    checked: bool,
    stages: Vec<(&'static str, f64)>,
    device_mib: f64,
}

fn bench_group<C: GpuCurve>(
    gpu: &GpuMsm,
    args: &Args,
    max: u32,
    name: &'static str,
    generator: C::Projective,
    fp_mul_rate: f64,
    rows: &mut Vec<Row>,
) {
    if max < args.min {
        return;
    }
    let t = Instant::now();
    let all_bases = points::<C>(1 << max, generator, 1);
    let all_scalars = scalars(1 << max, 2);
    eprintln!(
        "{name}: made 2^{max} points and scalars in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    for log_n in args.min..=max {
        let n = 1usize << log_n;
        let bases = &all_bases[..n];
        let scalars = &all_scalars[..n];
        let mut plan = gpu.plan(n, C::GROUP);
        if let Some(c) = args.window_bits {
            plan = MsmPlan::with_window_bits(n, C::GROUP, plan.sm_count, c, DEFAULT_RESIDENT_CHUNK)
                .with_scatter_region(plan.scatter_region);
        }
        if let Some(region) = args.scatter_region {
            plan = plan.with_scatter_region(region);
        }
        let dev_bases = gpu.upload_bases::<C>(bases).expect("upload bases");
        let dev_scalars = gpu.upload_scalars(scalars).expect("upload scalars");
        // The resident MSM by plan `p`, plain and profiled.
        let on_device = |p: &MsmPlan| {
            gpu.msm_with_plan::<C>(
                p,
                Bases::Device(&dev_bases),
                Scalars::Device(&dev_scalars, ScalarForm::Montgomery),
            )
            .expect("MSM runs")
        };
        let profile = |p: &MsmPlan| {
            gpu.msm_profiled::<C>(
                p,
                Bases::Device(&dev_bases),
                Scalars::Device(&dev_scalars, ScalarForm::Montgomery),
            )
            .expect("profiled MSM runs")
        };
        let result = on_device(&plan);
        let checked = log_n <= args.check_max;
        if checked {
            let want = cuzk_msm::fast::msm::<C>(bases, scalars).expect("blst");
            assert_eq!(
                result, want,
                "{name} 2^{log_n}: the GPU result differs from blst's"
            );
        }
        let resident_ms = time_runs(gpu, args.reps, || {
            on_device(&plan);
        });
        let time_plan = |p: &MsmPlan| {
            let got = on_device(p);
            assert_eq!(
                got, result,
                "{name} 2^{log_n}: {:?} differs",
                p.accumulation
            );
            time_runs(gpu, args.reps, || {
                on_device(p);
            })
        };
        let affine = plan.clone().with_accumulation(Accumulation::BatchAffine);
        let (affine_ms, wide_ms, affine_stages) = if args.affine {
            let affine_ms = time_plan(&affine);
            let wide = affine.clone().with_affine_scratch(usize::MAX);
            let wide_ms = (wide.affine_group_windows != affine.affine_group_windows)
                .then(|| time_plan(&wide));
            let (_, affine_stages) = profile(&affine);
            (Some(affine_ms), wide_ms, affine_stages)
        } else {
            (None, None, Vec::new())
        };
        let (profiled, stages) = profile(&plan);
        assert_eq!(profiled, result);
        drop(dev_bases);
        drop(dev_scalars);
        let streamed_ms = args.streamed.then(|| {
            let splan = plan.with_max_chunk(DEFAULT_STREAMED_CHUNK);
            let got = gpu
                .msm_with_plan::<C>(&splan, Bases::Host(bases), Scalars::Host(scalars))
                .expect("streamed MSM runs");
            assert_eq!(
                got, result,
                "{name} 2^{log_n}: streamed and resident results differ"
            );
            time_runs(gpu, args.reps, || {
                gpu.msm_with_plan::<C>(&splan, Bases::Host(bases), Scalars::Host(scalars))
                    .expect("streamed MSM runs");
            })
        });
        let floor_ms = plan.field_multiplications() / fp_mul_rate * 1e3;
        let affine_floor_ms = affine.field_multiplications() / fp_mul_rate * 1e3;
        let row = Row {
            group: name,
            log_n,
            window_bits: plan.window_bits,
            affine_groups: affine.affine_groups(),
            resident_ms,
            affine_ms,
            wide_ms,
            affine_stages,
            streamed_ms,
            floor_ms,
            affine_floor_ms,
            checked,
            stages,
            device_mib: plan.device_bytes() as f64 / (1 << 20) as f64,
        };
        eprintln!(
            "{name} 2^{log_n}: resident {:.2} ms (batch-affine {}, one group {}), streamed {}, floor {:.2} ms, c = {}, stages {}; batch-affine stages {}",
            row.resident_ms,
            row.affine_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.wide_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.streamed_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.floor_ms,
            row.window_bits,
            stages_text(&row.stages),
            stages_text(&row.affine_stages)
        );
        rows.push(row);
    }
}

fn stages_text(stages: &[(&'static str, f64)]) -> String {
    stages
        .iter()
        .map(|(s, ms)| format!("{s} {ms:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let args = parse_args();
    let device = Device::open(0).expect("a CUDA device");
    let gpu = GpuMsm::new(&device).expect("the MSM kernels load");
    eprintln!("{}", device.info());
    let fp_mul_rate = gpu.fp_mul_rate(4, 256, 5).expect("the Fp probe runs");
    eprintln!("Fp multiplications: {:.1} G/s", fp_mul_rate / 1e9);
    let mut rows = Vec::new();
    bench_group::<G1>(
        &gpu,
        &args,
        args.max,
        "G1",
        G1Projective::generator(),
        fp_mul_rate,
        &mut rows,
    );
    bench_group::<G2>(
        &gpu,
        &args,
        args.g2_max.min(args.max),
        "G2",
        G2Projective::generator(),
        fp_mul_rate,
        &mut rows,
    );

    println!(
        "\nDevice: {}; Fp multiplication probe: {:.1} G/s\n",
        device.info(),
        fp_mul_rate / 1e9
    );
    println!("| group | n | window | groups | resident (ms) | batch-affine (ms) | one group (ms) | streamed (ms) | floor (ms) | resident / floor | checked | stages, resident run (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | 2^{} | {} | {} | {:.2} | {} | {} | {} | {:.2} | {:.2} | {} | {} |",
            r.group,
            r.log_n,
            r.window_bits,
            r.affine_groups,
            r.resident_ms,
            r.affine_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.wide_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.streamed_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.floor_ms,
            r.resident_ms / r.floor_ms,
            if r.checked { "blst" } else { "-" },
            stages_text(&r.stages)
        );
    }
    if let Some(path) = &args.out {
        let mut json = String::from("{\n");
        json.push_str(&format!("  \"device\": {:?},\n", device.info().to_string()));
        json.push_str(&format!(
            "  \"fp_mul_per_s\": {fp_mul_rate:.6e},\n  \"rows\": [\n"
        ));
        for (i, r) in rows.iter().enumerate() {
            let stages_json = |stages: &[(&'static str, f64)]| {
                stages
                    .iter()
                    .map(|(s, ms)| format!("{{\"stage\": \"{s}\", \"ms\": {ms:.4}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            json.push_str(&format!(
                "    {{\"group\": \"{}\", \"log_n\": {}, \"window_bits\": {}, \"affine_groups\": {}, \"resident_ms\": {:.4}, \"affine_ms\": {}, \"wide_ms\": {}, \"streamed_ms\": {}, \"floor_ms\": {:.4}, \"affine_floor_ms\": {:.4}, \"checked\": {}, \"device_mib\": {:.1}, \"stages\": [{}], \"affine_stages\": [{}]}}{}\n",
                r.group,
                r.log_n,
                r.window_bits,
                r.affine_groups,
                r.resident_ms,
                r.affine_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.wide_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.streamed_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.floor_ms,
                r.affine_floor_ms,
                r.checked,
                r.device_mib,
                stages_json(&r.stages),
                stages_json(&r.affine_stages),
                if i + 1 < rows.len() { "," } else { "" }
            ));
        }
        json.push_str("  ]\n}\n");
        std::fs::write(path, json).expect("write --out");
    }
}
