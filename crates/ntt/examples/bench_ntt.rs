//! The GPU NTT benchmark behind `cargo xtask bench ntt` (and `bench_ntt` in `cargo xtask
//! device-pack`'s folder): times each transform with CUDA events (warm-up, then the median of
//! several runs) with the data on the device, and prints it beside two floors measured in the same
//! run: memory (bytes moved / device-to-device copy bandwidth) and integer throughput (field
//! multiplications / the rate of `fr_bench_mul`). Also sweeps the pass configuration and
//! spot-checks results against the CPU path.
//!
//! ```text
//! bench_ntt [--min 20] [--max 27] [--reps 9] [--warmup 3] [--out FILE] [--no-sweep] [--no-check]
//! ```

use std::error::Error;
use std::fmt::Write as _;

use cuzk_field::layout::{FrLimbs, FR_MODULUS};
use cuzk_gpu::fr::{FrKernels, MulProbe};
use cuzk_gpu::{Device, DeviceBuffer, Stream};
use cuzk_ntt::gpu::{GpuNtt, NttConfig, Transform};
use cuzk_ntt::{cpu, Domain, Order, Scalar};
use rayon::prelude::*;

type Res<T> = Result<T, Box<dyn Error>>;

struct Args {
    min: u32,
    max: u32,
    reps: usize,
    warmup: usize,
    out: Option<String>,
    sweep: bool,
    check: bool,
    auto: bool,
    config: Option<NttConfig>,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        min: 20,
        max: 27,
        reps: 9,
        warmup: 3,
        out: None,
        sweep: true,
        check: true,
        auto: false,
        config: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = |i: usize| {
            argv.get(i + 1)
                .cloned()
                .ok_or(format!("{} needs a value", argv[i]))
        };
        match argv[i].as_str() {
            "--min" => (a.min, i) = (value(i)?.parse()?, i + 1),
            "--max" => (a.max, i) = (value(i)?.parse()?, i + 1),
            "--reps" => (a.reps, i) = (value(i)?.parse()?, i + 1),
            "--warmup" => (a.warmup, i) = (value(i)?.parse()?, i + 1),
            "--out" => (a.out, i) = (Some(value(i)?), i + 1),
            "--no-sweep" => a.sweep = false,
            "--no-check" => a.check = false,
            "--auto" => a.auto = true,
            "--config" => {
                let v: Vec<u32> = value(i)?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
                if !(4..=5).contains(&v.len()) {
                    return Err("--config RADIX_LOG,TILE_LOG,MAX_PASS_LOG,HIGH_OCCUPANCY[,FULL_TWIDDLE_MAX_LOG]".into());
                }
                a.config = Some(NttConfig {
                    radix_log: v[0],
                    tile_log: v[1],
                    max_pass_log: v[2],
                    high_occupancy: v[3] != 0,
                    full_twiddle_max_log: v
                        .get(4)
                        .copied()
                        .unwrap_or(NttConfig::default().full_twiddle_max_log),
                });
                i += 1;
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
        i += 1;
    }
    if a.min < 1 || a.max > cuzk_ntt::gpu::MAX_LOG_N || a.min > a.max || a.reps == 0 {
        return Err("need 1 <= --min <= --max <= 28 and --reps >= 1".into());
    }
    Ok(a)
}

/// `len` pseudo-random canonical Montgomery forms (the top limb below r's), made in parallel.
fn random_limbs(len: usize, seed: u64) -> Vec<FrLimbs> {
    let mut out = vec![FrLimbs::default(); len];
    out.par_chunks_mut(1 << 14)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut s =
                seed ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
            for v in chunk {
                for limb in v.0.iter_mut() {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    *limb = (s >> 16) as u32;
                }
                v.0[7] %= FR_MODULUS[7];
            }
        });
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Device-to-device copy bandwidth in bytes per second, counting bytes read plus bytes written.
fn copy_bandwidth(stream: &Stream) -> Res<f64> {
    let len = 1usize << 31;
    let src = stream.upload(&vec![0x5au8; len])?;
    let mut dst: DeviceBuffer<u8> = stream.alloc(len)?;
    let mut times = Vec::new();
    for i in 0..12 {
        let start = stream.record_event()?;
        stream.copy_device(&src, &mut dst)?;
        let end = stream.record_event()?;
        let ms = start.elapsed_ms(&end)? as f64;
        if i >= 2 {
            times.push(ms);
        }
    }
    Ok(2.0 * len as f64 / (median(times) * 1e-3))
}

/// Fr Montgomery multiplications per second of one throughput probe (four independent chains per
/// thread, 2048 threads per SM).
fn multiplication_rate(device: &Device, stream: &Stream, probe: MulProbe) -> Res<f64> {
    let k = FrKernels::load(device)?;
    let threads = device.info().sm_count as usize * 2048;
    let mut data = stream.upload(&random_limbs(2 * threads, 1))?;
    let mut times = Vec::new();
    let mut muls = 0;
    for i in 0..7 {
        let start = stream.record_event()?;
        muls = k.bench_mul(probe, stream, &mut data, 256, 256)?;
        let end = stream.record_event()?;
        let ms = start.elapsed_ms(&end)? as f64;
        if i >= 2 {
            times.push(ms);
        }
    }
    Ok(muls as f64 / (median(times) * 1e-3))
}

#[allow(clippy::too_many_arguments)]
fn time_transform(
    ntt: &GpuNtt,
    stream: &Stream,
    data: &mut DeviceBuffer<FrLimbs>,
    domain: &Domain,
    t: Transform,
    i: Order,
    o: Order,
    args: &Args,
) -> Res<f64> {
    for _ in 0..args.warmup {
        ntt.transform_device(stream, data, domain, t, i, o)?;
    }
    let mut times = Vec::with_capacity(args.reps);
    for _ in 0..args.reps {
        let start = stream.record_event()?;
        ntt.transform_device(stream, data, domain, t, i, o)?;
        let end = stream.record_event()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(median(times))
}

fn order_name(i: Order, o: Order) -> &'static str {
    match (i, o) {
        (Order::Natural, Order::BitReversed) => "N->R",
        (Order::BitReversed, Order::Natural) => "R->N",
        (Order::Natural, Order::Natural) => "N->N",
        (Order::BitReversed, Order::BitReversed) => "R->R",
    }
}

/// Compares one GPU transform of `limbs` with the CPU path.
fn spot_check(ntt: &GpuNtt, stream: &Stream, log_n: u32) -> Res<bool> {
    let domain = Domain::new(log_n)?;
    let limbs = random_limbs(domain.n(), 1000 + u64::from(log_n));
    let mut data = stream.upload(&limbs)?;
    ntt.transform_device(
        stream,
        &mut data,
        &domain,
        Transform::Forward,
        Order::Natural,
        Order::BitReversed,
    )?;
    let got: Vec<FrLimbs> = stream.download(&data)?;
    let mut want: Vec<Scalar> = limbs
        .par_iter()
        .map(|l| Scalar::try_from(*l).expect("canonical"))
        .collect();
    cpu::forward(&mut want, &domain, Order::Natural, Order::BitReversed)?;
    Ok(got
        .par_iter()
        .zip(want.par_iter())
        .all(|(g, w)| *g == FrLimbs::from(*w)))
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let device = match Device::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: no CUDA device ({e})");
            std::process::exit(2);
        }
    };
    let stream = device.new_stream()?;
    let mut md = String::new();
    let info = device.info();
    writeln!(md, "GPU: {info}")?;
    let bw = copy_bandwidth(&stream)?;
    let rate = multiplication_rate(&device, &stream, MulProbe::Integer)?;
    let rate_o4 = multiplication_rate(&device, &stream, MulProbe::IntegerO4)?;
    let rate_f64 = multiplication_rate(&device, &stream, MulProbe::Fp64)?;
    let rate_hybrid = multiplication_rate(&device, &stream, MulProbe::Hybrid)?;
    writeln!(
        md,
        "Device-to-device copy: {:.0} GB/s (read + write); Fr multiplication (fr_bench_mul): {:.1} G/s ({:.2} ps each); at 64 registers (fr_bench_mul_o4): {:.1} G/s; on the FP64 pipe (fr_bench_mul52): {:.1} G/s; half of each (fr_bench_mul_hybrid): {:.1} G/s\n",
        bw / 1e9,
        rate / 1e9,
        1e12 / rate,
        rate_o4 / 1e9,
        rate_f64 / 1e9,
        rate_hybrid / 1e9
    )?;
    print!("{md}");

    // Configuration sweep first: with --auto, the main table uses the fastest configuration
    // (smallest sum over the swept sizes of its time relative to the default's).
    let mut sweep_times: Vec<(NttConfig, u32, f64)> = Vec::new();
    if args.sweep {
        let configs = cuzk_ntt::gpu::SWEEP_CONFIGS;
        let header = "\nConfiguration sweep, forward N->R:\n\n| log n | radix_log | tile_log | max_pass_log | high occupancy | full twiddles up to | passes (k/m) | time (ms) |\n|---|---|---|---|---|---|---|---|\n";
        md.push_str(header);
        print!("{header}");
        for log_n in [20, 24, 27]
            .into_iter()
            .filter(|l| (args.min..=args.max).contains(l))
        {
            let domain = Domain::new(log_n)?;
            let mut data = stream.upload(&random_limbs(domain.n(), 7))?;
            for config in configs {
                let Ok(variant) = GpuNtt::with_config(&device, config) else {
                    continue;
                };
                let (t, i, o) = (Transform::Forward, Order::Natural, Order::BitReversed);
                let Ok(plan) = variant.plan(&domain, t, i, o) else {
                    continue;
                };
                let ms = time_transform(&variant, &stream, &mut data, &domain, t, i, o, &args)?;
                sweep_times.push((config, log_n, ms));
                let ks: Vec<String> = plan
                    .passes
                    .iter()
                    .map(|p| format!("{}/{}", p.k, p.m))
                    .collect();
                let row = format!(
                    "| {log_n} | {} | {} | {} | {} | {} | {} | {ms:.3} |\n",
                    config.radix_log,
                    config.tile_log,
                    config.max_pass_log,
                    config.high_occupancy,
                    if config.full_twiddle_max_log > 18 {
                        format!("2^{}", config.full_twiddle_max_log)
                    } else {
                        "-".to_string()
                    },
                    ks.join(" ")
                );
                print!("{row}");
                md.push_str(&row);
            }
        }
    }

    let mut config = args.config.unwrap_or_default();
    if args.auto && args.config.is_none() && !sweep_times.is_empty() {
        let default_time = |log_n: u32| {
            sweep_times
                .iter()
                .find(|(c, l, _)| *c == NttConfig::default() && *l == log_n)
                .map(|x| x.2)
        };
        let mut best = (f64::INFINITY, NttConfig::default());
        let mut candidates: Vec<NttConfig> = sweep_times.iter().map(|x| x.0).collect();
        candidates.dedup();
        for c in candidates {
            let mut score = 0.0;
            let mut complete = true;
            for log_n in sweep_times
                .iter()
                .map(|x| x.1)
                .collect::<std::collections::BTreeSet<_>>()
            {
                match (
                    sweep_times.iter().find(|x| x.0 == c && x.1 == log_n),
                    default_time(log_n),
                ) {
                    (Some(x), Some(d)) => score += x.2 / d,
                    _ => complete = false,
                }
            }
            if complete && score < best.0 {
                best = (score, c);
            }
        }
        config = best.1;
    }
    let line = format!("\nMain table configuration: {config:?}\n\n");
    print!("{line}");
    md.push_str(&line);

    let ntt = GpuNtt::with_config(&device, config)?;
    let cases = [
        (Transform::Forward, Order::Natural, Order::BitReversed),
        (Transform::Forward, Order::Natural, Order::Natural),
        (Transform::Inverse, Order::BitReversed, Order::Natural),
        (Transform::CosetInverse, Order::Natural, Order::Natural),
    ];
    let header = "| log n | transform | orders | passes (k) | time (ms) | memory floor (ms) | integer floor (ms) | Mmul |\n|---|---|---|---|---|---|---|---|\n";
    md.push_str(header);
    print!("{header}");
    for log_n in args.min..=args.max {
        let domain = Domain::new(log_n)?;
        let mut data = stream.upload(&random_limbs(domain.n(), u64::from(log_n)))?;
        for &(t, i, o) in &cases {
            let ms = time_transform(&ntt, &stream, &mut data, &domain, t, i, o, &args)?;
            let plan = ntt.plan(&domain, t, i, o)?;
            let ks: Vec<String> = plan.passes.iter().map(|p| p.k.to_string()).collect();
            let passes = format!(
                "{}{}",
                ks.join("+"),
                if plan.permute { " +bitrev" } else { "" }
            );
            let row = format!(
                "| {log_n} | {t:?} | {} | {passes} | {ms:.3} | {:.3} | {:.3} | {:.0} |\n",
                order_name(i, o),
                plan.bytes_moved as f64 / bw * 1e3,
                plan.multiplications as f64 / rate * 1e3,
                plan.multiplications as f64 / 1e6,
            );
            print!("{row}");
            md.push_str(&row);
        }
    }

    let mut failed = false;
    if args.check {
        md.push('\n');
        for log_n in [24, args.max]
            .into_iter()
            .filter(|&l| l >= args.min && l <= args.max)
        {
            let ok = spot_check(&ntt, &stream, log_n)?;
            failed |= !ok;
            let line = format!(
                "Spot check 2^{log_n} forward N->R against cuzk_ntt::cpu: {}\n",
                if ok { "identical" } else { "DIFFERENT" }
            );
            print!("{line}");
            md.push_str(&line);
            if log_n == args.max {
                break;
            }
        }
    }
    if let Some(path) = &args.out {
        std::fs::write(path, &md)?;
    }
    if failed {
        return Err("a spot check differs from the CPU".into());
    }
    Ok(())
}
