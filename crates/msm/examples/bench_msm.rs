//! The GPU MSM benchmark behind `cargo xtask bench msm` (needs a GPU and the `cuda` feature).
//!
//! Times G1 and G2 MSMs of 2^min to 2^max points (G1 to 2^g1-max, G2 to 2^g2-max) with bases
//! and scalars resident on the device and with both streamed from host memory (pinned, and
//! pageable through pinned staging buffers): a warm-up run, then `reps` runs timed with CUDA
//! events on the MSM's stream, the median reported. Beside each figure: the floor (the plan's
//! bucket additions × Fp multiplications per addition, at the Fp multiplication rate this device
//! reaches in the throughput probe), and a stage-by-stage profile of one run. Each size is
//! checked once against blst's CPU MSM up to 2^check-max points.
//!
//! Arguments: `--min 20 --max 26 --g2-max 24 --reps 5 --check-max 22 --out FILE.json`
//! (`--g1-max` bounds G1 as `--g2-max` does G2; `--no-streamed` skips the streamed runs,
//! `--no-affine` the resident runs with the bucket sums the default plan does not use (the
//! default plan has batch-affine sums from 2^20 points, XYZZ below); `--scatter-region BYTES` sets the sorted entries one
//! scatter launch may write, 0 for no limit, instead of the device's L2; `--window-bits C`
//! replaces the planner's window width; `--resident-chunk N` the resident plan's largest chunk
//! (its window then chosen for that many chunks); `--window-sweep` also times the resident MSM with the
//! windows from two below to one above the plan's; `--streamed-chunk N` and
//! `--streamed-window-bits C` replace the streamed plan's chunk length and window;
//! `--streamed-first-chunk N` the streamed plan's first chunk, at most a chunk;
//! `--streamed-accumulation xyzz|batch-affine` the streamed plan's bucket sums;
//! `--accumulate-seg N` the sorted entries per thread of the resident plan's first level;
//! `--one-pass-sort` keeps the single-pass scatter where the plans would sort in two passes;
//! `--unfused-reduce` has the batch-affine sums write the buckets and the bucket reduction read
//! them (its first level not fused into the last chunk's sums, `MsmPlan::with_fused_reduce`;
//! the default in G2), `--fused-reduce` fuses them (the default in G1);
//! `--sort-tile-threads N` the threads per block of the two-pass sort's first pass;
//! `--sort-stage-limit N` the most entries of a bin its second pass sorts in shared memory;
//! `--affine-lanes N` (1 or 2), `--affine-scratch BYTES` and `--affine-block-inverse-max N` the
//! lanes and scratch budget of the batch-affine groups of windows and the most values a round
//! inverts blockwise, in the resident and streamed plans); `--scalar-bits B` (1 to 64) random
//! scalars below 2^B instead of uniform ones, so that the windows above bit B hold no digits and
//! the lowest window's digits crowd a few buckets. Prints a
//! Markdown table; `--out` also writes every figure as JSON, which
//! `cargo xtask bench msm --from FILE.json` turns into docs/benchmarks.md.

use std::time::Instant;

use cuzk_field::{G1Projective, G2Projective, Scalar};
use cuzk_gpu::Device;
use cuzk_msm::gpu::{
    balanced_window_bits, num_windows, Accumulation, Bases, GpuCurve, GpuMsm, Group, MsmPlan,
    ScalarForm, Scalars,
};
use cuzk_msm::{MsmCurve, G1, G2};
use ff::Field;
use group::Group as _;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

struct Args {
    min: u32,
    max: u32,
    g1_max: u32,
    g2_max: u32,
    reps: usize,
    check_max: u32,
    streamed: bool,
    affine: bool,
    scatter_region: Option<usize>,
    window_bits: Option<u32>,
    resident_chunk: Option<usize>,
    window_sweep: bool,
    streamed_chunk: Option<usize>,
    streamed_window_bits: Option<u32>,
    accumulate_seg: Option<usize>,
    streamed_first_chunk: Option<usize>,
    streamed_accumulation: Option<Accumulation>,
    affine_lanes: Option<u32>,
    affine_scratch: Option<usize>,
    affine_block_inverse_max: Option<usize>,
    one_pass_sort: bool,
    fused_reduce: Option<bool>,
    sort_tile_threads: Option<u32>,
    sort_stage_limit: Option<usize>,
    scalar_bits: Option<u32>,
    out: Option<String>,
}

impl Args {
    /// `plan` with the batch-affine lanes and scratch (and the sort) the arguments set.
    fn affine_layout(&self, mut plan: MsmPlan) -> MsmPlan {
        if self.one_pass_sort {
            plan = plan.with_two_pass_sort(false);
        }
        if let Some(on) = self.fused_reduce {
            plan = plan.with_fused_reduce(on);
        }
        if let Some(threads) = self.sort_tile_threads {
            plan = plan.with_sort_tile_threads(threads);
        }
        if let Some(entries) = self.sort_stage_limit {
            plan = plan.with_sort_stage_limit(entries);
        }
        if let Some(bytes) = self.affine_scratch {
            plan = plan.with_affine_scratch(bytes);
        }
        if let Some(lanes) = self.affine_lanes {
            plan = plan.with_affine_lanes(lanes);
        }
        if let Some(values) = self.affine_block_inverse_max {
            plan = plan.with_affine_block_inverse_max(values);
        }
        plan
    }
}

/// `p` with `plan`'s scatter parts, sort passes and batch-affine layout (budget, lanes, blockwise inversion),
/// so that a plan rebuilt with another window or chunk length differs from `plan` in that only.
fn same_layout(plan: &MsmPlan, p: MsmPlan) -> MsmPlan {
    p.with_scatter_region(plan.scatter_region())
        .with_two_pass_sort(plan.two_pass_sort())
        .with_sort_shared(plan.sort_shared())
        .with_sort_tile_threads(plan.sort_tile_threads())
        .with_sort_stage_limit(plan.sort_stage_limit())
        .with_affine_block_inverse_max(plan.affine_block_inverse_max())
        .with_fused_reduce(plan.fused_reduce())
        .with_affine_lanes(plan.affine_lanes())
        .with_affine_scratch(plan.affine_budget())
}

/// An accumulation as the JSON names it.
fn accumulation_name(a: Accumulation) -> &'static str {
    match a {
        Accumulation::Xyzz => "xyzz",
        Accumulation::BatchAffine => "batch-affine",
    }
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
        g1_max: num("--g1-max", u32::MAX),
        g2_max: num("--g2-max", 24),
        reps: num("--reps", 5) as usize,
        check_max: num("--check-max", 22),
        streamed: !argv.iter().any(|a| a == "--no-streamed"),
        affine: !argv.iter().any(|a| a == "--no-affine"),
        scatter_region: get("--scatter-region").map(|v| v.parse().expect("a number of bytes")),
        window_bits: get("--window-bits").map(|v| v.parse().expect("a window width")),
        resident_chunk: get("--resident-chunk").map(|v| {
            let n: usize = v.parse().expect("points per chunk");
            n.max(1)
        }),
        window_sweep: argv.iter().any(|a| a == "--window-sweep"),
        streamed_chunk: get("--streamed-chunk").map(|v| v.parse().expect("points per chunk")),
        streamed_window_bits: get("--streamed-window-bits")
            .map(|v| v.parse().expect("a window width")),
        accumulate_seg: get("--accumulate-seg").map(|v| v.parse().expect("entries per thread")),
        one_pass_sort: argv.iter().any(|a| a == "--one-pass-sort"),
        fused_reduce: if argv.iter().any(|a| a == "--unfused-reduce") {
            Some(false)
        } else if argv.iter().any(|a| a == "--fused-reduce") {
            Some(true)
        } else {
            None
        },
        sort_tile_threads: get("--sort-tile-threads").map(|v| v.parse().expect("threads")),
        sort_stage_limit: get("--sort-stage-limit").map(|v| v.parse().expect("entries")),
        scalar_bits: get("--scalar-bits").map(|v| {
            let bits: u32 = v.parse().expect("a number of bits");
            assert!((1..=64).contains(&bits), "--scalar-bits takes 1 to 64");
            bits
        }),
        affine_lanes: get("--affine-lanes").map(|v| v.parse().expect("a number of lanes")),
        affine_scratch: get("--affine-scratch").map(|v| v.parse().expect("a number of bytes")),
        affine_block_inverse_max: get("--affine-block-inverse-max")
            .map(|v| v.parse().expect("a number of values")),
        streamed_first_chunk: get("--streamed-first-chunk")
            .map(|v| v.parse().expect("points of the first chunk")),
        streamed_accumulation: get("--streamed-accumulation").map(|v| {
            [Accumulation::Xyzz, Accumulation::BatchAffine]
                .into_iter()
                .find(|&a| accumulation_name(a) == v)
                .unwrap_or_else(|| panic!("--streamed-accumulation {v}: xyzz or batch-affine"))
        }),
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

/// `n` random scalars, uniform in the field, or below 2^bits when `bits` is given.
fn scalars(n: usize, seed: u64, bits: Option<u32>) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 16;
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|k| {
            let mut rng =
                ChaCha20Rng::seed_from_u64(seed ^ (k as u64 + 7).wrapping_mul(0x85eb_ca6b));
            let len = CHUNK.min(n - k * CHUNK);
            (0..len)
                .map(move |_| match bits {
                    Some(b) => Scalar::from(rng.next_u64() >> (64 - b)),
                    None => Scalar::random(&mut rng),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether the plan's device bytes fit what the device has free once the MSM's workspace from
/// its last call is given back (a call keeps the last call's buffers until it ends, so they
/// would count twice) and the pool trimmed; says so when not.
fn fits_device(gpu: &GpuMsm, plan: &MsmPlan, what: &str) -> bool {
    gpu.stream().synchronize().expect("synchronise");
    gpu.release_workspace();
    gpu.device().trim_pool(0).expect("trim the pool");
    let (available, _) = gpu.device().memory().expect("device memory");
    let fits = plan.device_bytes() <= available;
    if !fits {
        eprintln!(
            "{what}: skipped, it needs {:.1} GB of device memory and {:.1} GB are free",
            plan.device_bytes() as f64 / 1e9,
            available as f64 / 1e9
        );
    }
    fits
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
    /// The default plan's bucket sums.
    accumulation: Accumulation,
    /// The streamed plan's bucket sums.
    streamed_accumulation: Accumulation,
    resident_ms: f64,
    /// The same resident MSM with XYZZ bucket sums, same run (the resident time when those are
    /// the default's).
    xyzz_ms: Option<f64>,
    /// Stages of a profiled XYZZ run.
    xyzz_stages: Vec<(&'static str, f64)>,
    /// The same resident MSM with batch-affine bucket sums (windows in groups of the default
    /// scratch), same run (the resident time when those are the default's).
    affine_ms: Option<f64>,
    /// Batch-affine with scratch for all windows at once, when that differs.
    wide_ms: Option<f64>,
    /// Stages of a profiled batch-affine run.
    affine_stages: Vec<(&'static str, f64)>,
    /// Bases and scalars in pageable host memory.
    streamed_ms: Option<f64>,
    /// Bases and scalars in pinned host memory.
    pinned_ms: Option<f64>,
    /// Stages of a profiled run from pinned memory.
    pinned_stages: Vec<(&'static str, f64)>,
    /// Resident, in the streamed plan's chunks.
    chunked_ms: Option<f64>,
    /// (window bits, resident ms) of the window sweep.
    window_sweep: Vec<(u32, f64)>,
    /// The floor of the XYZZ additions (10 multiplications each in G1).
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
) -> Option<f64> {
    if max < args.min {
        return None;
    }
    let t = Instant::now();
    let all_bases = points::<C>(1 << max, generator, 1);
    let all_scalars = scalars(1 << max, 2, args.scalar_bits);
    eprintln!(
        "{name}: made 2^{max} points and scalars in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // The point formula alone: mixed additions as `accumulate` runs them, on 2^16 bases, in
    // four waves of the three blocks per multiprocessor its launch bounds allow (one wave
    // measured 6 to 9% lower: the last blocks run alone).
    let madd_rate = gpu
        .mixed_add_rate::<C>(&all_bases[..1 << max.min(16)], 12, 256, 5)
        .expect("the addition probe runs");
    let per_add = C::GROUP.mixed_add_muls();
    eprintln!(
        "{name} mixed additions: {:.3} G/s, {:.1} G Fp multiplications/s ({:.0}% of the Fp probe)",
        madd_rate / 1e9,
        madd_rate * per_add / 1e9,
        100.0 * madd_rate * per_add / fp_mul_rate
    );
    for log_n in args.min..=max {
        let n = 1usize << log_n;
        let bases = &all_bases[..n];
        let scalars = &all_scalars[..n];
        let mut plan = gpu.plan(n, C::GROUP);
        // The device's plan's chunking (GpuMsm::plan: chunks of 2^26 where memory allows).
        let chunk = args.resident_chunk.unwrap_or(plan.chunk_len());
        if let Some(c) = args.window_bits {
            let p = MsmPlan::with_window_bits(n, C::GROUP, plan.sm_count(), c, chunk);
            plan = same_layout(&plan, p).with_accumulation(plan.accumulation());
        } else if args.resident_chunk.is_some() {
            let p = MsmPlan::for_chunks(n, C::GROUP, plan.sm_count(), chunk);
            plan = same_layout(&plan, p).with_accumulation(plan.accumulation());
        }
        if let Some(region) = args.scatter_region {
            plan = plan.with_scatter_region(region);
        }
        if let Some(seg) = args.accumulate_seg {
            plan = plan.with_accumulate_seg(seg);
        }
        plan = args.affine_layout(plan);
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
        // The resident MSM by another plan: checked against the default's result, then timed.
        let time_plan = |p: &MsmPlan| {
            let got = on_device(p);
            assert_eq!(
                got,
                result,
                "{name} 2^{log_n}: {:?}, window {}, {} chunks, differs",
                p.accumulation(),
                p.window_bits(),
                p.n_chunks()
            );
            time_runs(gpu, args.reps, || {
                on_device(p);
            })
        };
        let xyzz = plan.clone().with_accumulation(Accumulation::Xyzz);
        let affine = plan.clone().with_accumulation(Accumulation::BatchAffine);
        let (profiled, stages) = profile(&plan);
        assert_eq!(profiled, result);
        // Each kind of bucket sums: its time (the default's is the resident time) and stages;
        // with `--no-affine`, only the default's.
        let sums = |p: &MsmPlan| {
            if p.accumulation() == plan.accumulation() {
                (Some(resident_ms), stages.clone())
            } else if args.affine {
                (Some(time_plan(p)), profile(p).1)
            } else {
                (None, Vec::new())
            }
        };
        let (xyzz_ms, xyzz_stages) = sums(&xyzz);
        let (affine_ms, affine_stages) = sums(&affine);
        // Batch-affine with scratch for all windows at once, where that makes fewer groups and
        // fits the device beside the inputs (G2 2^26 in one chunk: 13 windows' level arrays
        // are 84 GB).
        let wide = affine.clone().with_affine_scratch(usize::MAX);
        let wide_ms = (affine_ms.is_some()
            && wide.affine_group_windows() != affine.affine_group_windows()
            && fits_device(gpu, &wide, &format!("{name} 2^{log_n}, one group")))
        .then(|| time_plan(&wide));
        // The streamed plan's chunking with the inputs resident: what the chunks cost apart
        // from the copies.
        let mut splan = gpu.streamed_plan(n, C::GROUP);
        if let Some(chunk) = args.streamed_chunk {
            let p = MsmPlan::for_chunks(n, C::GROUP, plan.sm_count(), chunk);
            let accumulation = Accumulation::streamed_default(C::GROUP, p.chunk_len());
            splan = same_layout(&splan, p).with_accumulation(accumulation);
        }
        if let Some(c) = args.streamed_window_bits {
            let p = MsmPlan::with_window_bits(n, C::GROUP, plan.sm_count(), c, splan.chunk_len());
            let accumulation = Accumulation::streamed_default(C::GROUP, p.chunk_len());
            splan = same_layout(&splan, p).with_accumulation(accumulation);
        }
        if let Some(first) = args.streamed_first_chunk {
            splan = splan.with_first_chunk(first);
        }
        if let Some(accumulation) = args.streamed_accumulation {
            splan = splan.with_accumulation(accumulation);
        }
        splan = args.affine_layout(splan);
        let chunked_ms = args.streamed.then(|| time_plan(&splan));
        let window_sweep = if args.window_sweep {
            // Widths from c − 2 to c + 2 bits, each window count once at its balanced width (a
            // wider window for the same count only adds empty buckets), down to one window
            // fewer than the plan's.
            let lo = plan.window_bits().saturating_sub(2).max(4);
            let hi = (plan.window_bits() + 2).min(C::GROUP.max_window_bits());
            let mut widths: Vec<u32> = (lo..=hi).map(balanced_window_bits).collect();
            widths.dedup();
            widths
                .into_iter()
                .filter(|&c| num_windows(c) + 1 >= plan.n_windows())
                .map(|c| {
                    let p = MsmPlan::with_window_bits(
                        n,
                        C::GROUP,
                        plan.sm_count(),
                        c,
                        plan.chunk_len(),
                    );
                    let p = same_layout(&plan, p).with_accumulation(plan.accumulation());
                    (c, time_plan(&p))
                })
                .collect()
        } else {
            Vec::new()
        };
        drop(dev_bases);
        drop(dev_scalars);
        let time_streamed = |b: Bases<'_, C>, s: Scalars<'_>| {
            let run = || {
                gpu.msm_with_plan::<C>(&splan, b, s)
                    .expect("streamed MSM runs")
            };
            assert_eq!(
                run(),
                result,
                "{name} 2^{log_n}: streamed and resident results differ"
            );
            time_runs(gpu, args.reps, || {
                run();
            })
        };
        let streamed_ms = args
            .streamed
            .then(|| time_streamed(Bases::Host(bases), Scalars::Host(scalars)));
        let (pinned_ms, pinned_stages) = if args.streamed {
            let pinned_bases = gpu.pin_bases::<C>(bases).expect("pinned bases");
            let pinned_scalars = gpu.pin_scalars(scalars).expect("pinned scalars");
            let b = Bases::Pinned(&pinned_bases);
            let s = Scalars::Pinned(&pinned_scalars, ScalarForm::Montgomery);
            let ms = time_streamed(b, s);
            let (_, stages) = gpu
                .msm_profiled::<C>(&splan, b, s)
                .expect("profiled streamed MSM runs");
            (Some(ms), stages)
        } else {
            (None, Vec::new())
        };
        let floor_ms = xyzz.field_multiplications() / fp_mul_rate * 1e3;
        let affine_floor_ms = affine.field_multiplications() / fp_mul_rate * 1e3;
        let row = Row {
            group: name,
            log_n,
            window_bits: plan.window_bits(),
            affine_groups: affine.affine_groups(),
            accumulation: plan.accumulation(),
            streamed_accumulation: splan.accumulation(),
            resident_ms,
            xyzz_ms,
            xyzz_stages,
            affine_ms,
            wide_ms,
            affine_stages,
            streamed_ms,
            pinned_ms,
            pinned_stages,
            chunked_ms,
            window_sweep,
            floor_ms,
            affine_floor_ms,
            checked,
            stages,
            device_mib: plan.device_bytes() as f64 / (1 << 20) as f64,
        };
        eprintln!(
            "{name} 2^{log_n}: resident {:.2} ms ({:?}; XYZZ {}, batch-affine {} ({} groups of {} windows on {} lanes, {:.0} MiB), one group {}), streamed pinned {}, pageable {}, resident in the streamed chunks {} (c = {}, {} chunks), XYZZ floor {:.2} ms, c = {}, window sweep [{}], stages {}; XYZZ stages {}; batch-affine stages {}; streamed (pinned) stages {}",
            row.resident_ms,
            row.accumulation,
            row.xyzz_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.affine_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            affine.affine_groups(),
            affine.affine_group_windows(),
            affine.affine_lanes_used(),
            affine.device_bytes() as f64 / (1 << 20) as f64,
            row.wide_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.pinned_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.streamed_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            row.chunked_ms.map_or("-".into(), |v| format!("{v:.2} ms")),
            splan.window_bits(),
            splan.n_chunks(),
            row.floor_ms,
            row.window_bits,
            sweep_text(&row.window_sweep),
            stages_text(&row.stages),
            stages_text(&row.xyzz_stages),
            stages_text(&row.affine_stages),
            stages_text(&row.pinned_stages)
        );
        rows.push(row);
    }
    Some(madd_rate)
}

fn sweep_text(sweep: &[(u32, f64)]) -> String {
    sweep
        .iter()
        .map(|(c, ms)| format!("c={c}: {ms:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn stages_text(stages: &[(&'static str, f64)]) -> String {
    stages
        .iter()
        .map(|(s, ms)| format!("{s} {ms:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Host-to-device copy rates (bytes per second) of `bytes` bytes on the MSM's stream, from pinned
/// and from pageable memory: the median of `reps` timed copies after a warm-up each.
fn copy_rates(gpu: &GpuMsm, bytes: usize, reps: usize) -> (f64, f64) {
    let stream = gpu.stream();
    let pageable: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    let pinned = gpu.device().pin(&pageable).expect("pinned memory");
    let mut dst = stream.alloc::<u8>(bytes).expect("device memory");
    let mut time = |copy: &mut dyn FnMut(&mut cuzk_gpu::DeviceBuffer<u8>)| {
        copy(&mut dst);
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps.max(1) {
            let start = stream.record_event().expect("event");
            copy(&mut dst);
            let end = stream.record_event().expect("event");
            times.push(f64::from(start.elapsed_ms(&end).expect("elapsed")));
        }
        bytes as f64 / (median(times) * 1e-3)
    };
    let pinned_rate = time(&mut |d| {
        stream
            .copy_pinned_to_device(pinned.bytes(), d, 0)
            .expect("pinned copy")
    });
    let pageable_rate = time(&mut |d| stream.copy_to_device(&pageable, d).expect("pageable copy"));
    (pinned_rate, pageable_rate)
}

fn main() {
    let args = parse_args();
    let device = Device::open(0).expect("a CUDA device");
    let gpu = GpuMsm::new(&device).expect("the MSM kernels load");
    eprintln!("{}", device.info());
    let fp_mul_rate = gpu.fp_mul_rate(4, 256, 5).expect("the Fp probe runs");
    eprintln!("Fp multiplications: {:.1} G/s", fp_mul_rate / 1e9);
    let (pinned_rate, pageable_rate) = copy_rates(&gpu, 1 << 30, args.reps);
    eprintln!(
        "Host to device: pinned {:.1} GB/s, pageable {:.1} GB/s",
        pinned_rate / 1e9,
        pageable_rate / 1e9
    );
    let mut rows = Vec::new();
    let g1_madd = bench_group::<G1>(
        &gpu,
        &args,
        args.g1_max.min(args.max),
        "G1",
        G1Projective::generator(),
        fp_mul_rate,
        &mut rows,
    );
    let g2_madd = bench_group::<G2>(
        &gpu,
        &args,
        args.g2_max.min(args.max),
        "G2",
        G2Projective::generator(),
        fp_mul_rate,
        &mut rows,
    );

    println!(
        "\nDevice: {}; Fp multiplication probe: {:.1} G/s; mixed-addition probe: G1 {}, G2 {} G/s; host to device {:.1} GB/s pinned, {:.1} GB/s pageable\n",
        device.info(),
        fp_mul_rate / 1e9,
        g1_madd.map_or("-".into(), |r| format!("{:.3}", r / 1e9)),
        g2_madd.map_or("-".into(), |r| format!("{:.3}", r / 1e9)),
        pinned_rate / 1e9,
        pageable_rate / 1e9
    );
    println!("| group | n | window | bucket sums | groups | resident (ms) | XYZZ (ms) | batch-affine (ms) | one group (ms) | streamed, pinned (ms) | streamed, pageable (ms) | XYZZ floor (ms) | XYZZ / floor | checked | window sweep (ms) | stages, resident run (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | 2^{} | {} | {:?} | {} | {:.2} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} |",
            r.group,
            r.log_n,
            r.window_bits,
            r.accumulation,
            r.affine_groups,
            r.resident_ms,
            r.xyzz_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.affine_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.wide_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.pinned_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.streamed_ms.map_or("-".into(), |v| format!("{v:.2}")),
            r.floor_ms,
            r.xyzz_ms.map_or("-".into(), |v| format!("{:.2}", v / r.floor_ms)),
            if r.checked { "blst" } else { "-" },
            sweep_text(&r.window_sweep),
            stages_text(&r.stages)
        );
    }
    if let Some(path) = &args.out {
        let mut json = String::from("{\n");
        json.push_str(&format!("  \"device\": {:?},\n", device.info().to_string()));
        json.push_str(&format!(
            "  \"fp_mul_per_s\": {fp_mul_rate:.6e},\n  \"h2d_pinned_bytes_per_s\": {pinned_rate:.6e},\n  \"h2d_pageable_bytes_per_s\": {pageable_rate:.6e},\n"
        ));
        // The mixed-addition probe's rate per group, and the Fp multiplications per addition
        // that its share of the Fp rate counts.
        let measured: Vec<(Group, f64)> = [(Group::G1, g1_madd), (Group::G2, g2_madd)]
            .into_iter()
            .filter_map(|(g, r)| Some((g, r?)))
            .collect();
        let rates: Vec<String> = measured
            .iter()
            .map(|(g, r)| format!("\"{g:?}\": {r:.6e}"))
            .collect();
        let muls: Vec<String> = measured
            .iter()
            .map(|(g, _)| format!("\"{g:?}\": {:.1}", g.mixed_add_muls()))
            .collect();
        json.push_str(&format!(
            "  \"madd_per_s\": {{{}}},\n  \"madd_muls\": {{{}}},\n  \"rows\": [\n",
            rates.join(", "),
            muls.join(", ")
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
                "    {{\"group\": \"{}\", \"log_n\": {}, \"window_bits\": {}, \"affine_groups\": {}, \"accumulation\": \"{}\", \"streamed_accumulation\": \"{}\", \"resident_ms\": {:.4}, \"xyzz_ms\": {}, \"affine_ms\": {}, \"wide_ms\": {}, \"streamed_ms\": {}, \"pinned_ms\": {}, \"chunked_ms\": {}, \"window_sweep\": [{}], \"floor_ms\": {:.4}, \"affine_floor_ms\": {:.4}, \"checked\": {}, \"device_mib\": {:.1}, \"stages\": [{}], \"xyzz_stages\": [{}], \"affine_stages\": [{}], \"pinned_stages\": [{}]}}{}\n",
                r.group,
                r.log_n,
                r.window_bits,
                r.affine_groups,
                accumulation_name(r.accumulation),
                accumulation_name(r.streamed_accumulation),
                r.resident_ms,
                r.xyzz_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.affine_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.wide_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.streamed_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.pinned_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.chunked_ms.map_or("null".into(), |v| format!("{v:.4}")),
                r.window_sweep
                    .iter()
                    .map(|(c, ms)| format!("{{\"window_bits\": {c}, \"ms\": {ms:.4}}}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.floor_ms,
                r.affine_floor_ms,
                r.checked,
                r.device_mib,
                stages_json(&r.stages),
                stages_json(&r.xyzz_stages),
                stages_json(&r.affine_stages),
                stages_json(&r.pinned_stages),
                if i + 1 < rows.len() { "," } else { "" }
            ));
        }
        json.push_str("  ]\n}\n");
        std::fs::write(path, json).expect("write --out");
    }
}
