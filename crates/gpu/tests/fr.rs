//! Fr on the GPU against blstrs, bit for bit: every operation of `kernels/field/fr.cuh` on
//! random values (proptest, seeded) and on edge values. Skips (and passes) without a GPU.
#![cfg(feature = "cuda")]

use cuzk_field::layout::{FrLimbs, FR_MODULUS};
use cuzk_field::Scalar;
use cuzk_gpu::fr::{FrKernels, FrOp, MulProbe};
use ff::{Field, PrimeField};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn kernels() -> Option<FrKernels> {
    let device = cuzk_gpu::device_for_tests()?;
    Some(FrKernels::load(&device).expect("the field module loads"))
}

/// The plain (non-Montgomery) integer of a scalar, as limbs.
fn integer_limbs(s: &Scalar) -> FrLimbs {
    let bytes = s.to_repr();
    let mut limbs = [0u32; 8];
    for (i, chunk) in bytes.as_ref().chunks(4).enumerate() {
        limbs[i] = u32::from_le_bytes(chunk.try_into().unwrap());
    }
    FrLimbs(limbs)
}

fn add_modulus(x: FrLimbs) -> Option<FrLimbs> {
    let mut out = [0u32; 8];
    let mut carry = 0u64;
    for i in 0..8 {
        let s = u64::from(x.0[i]) + u64::from(FR_MODULUS[i]) + carry;
        out[i] = s as u32;
        carry = s >> 32;
    }
    (carry == 0).then_some(FrLimbs(out))
}

/// Runs `op` on the GPU and compares with `expected`, naming the first mismatch.
fn check(k: &FrKernels, op: FrOp, a: &[FrLimbs], b: &[FrLimbs], expected: &[FrLimbs]) {
    let got = k.elementwise_host(op, a, b).expect("kernel runs");
    assert_eq!(got.len(), expected.len());
    for i in 0..got.len() {
        assert_eq!(
            got[i], expected[i],
            "{op:?} differs at {i}: a = {:x?}, b = {:x?}",
            a[i], b[i]
        );
    }
}

/// Every operation over `a` and `b` (equal lengths) against blstrs.
fn check_all_ops(k: &FrKernels, a: &[Scalar], b: &[Scalar], exps: &[[u64; 4]]) {
    let la: Vec<FrLimbs> = a.iter().copied().map(FrLimbs::from).collect();
    let lb: Vec<FrLimbs> = b.iter().copied().map(FrLimbs::from).collect();
    let map = |f: &dyn Fn(usize) -> Scalar| -> Vec<FrLimbs> {
        (0..a.len()).map(|i| FrLimbs::from(f(i))).collect()
    };
    check(k, FrOp::Add, &la, &lb, &map(&|i| a[i] + b[i]));
    check(k, FrOp::Sub, &la, &lb, &map(&|i| a[i] - b[i]));
    check(k, FrOp::Neg, &la, &lb, &map(&|i| -a[i]));
    check(k, FrOp::Mul, &la, &lb, &map(&|i| a[i] * b[i]));
    check(k, FrOp::Mul52, &la, &lb, &map(&|i| a[i] * b[i]));
    check(k, FrOp::Sqr, &la, &lb, &map(&|i| a[i].square()));
    check(
        k,
        FrOp::Inv,
        &la,
        &lb,
        &map(&|i| a[i].invert().unwrap_or(Scalar::ZERO)),
    );

    let e: Vec<FrLimbs> = exps
        .iter()
        .map(|w| {
            let mut l = [0u32; 8];
            for (j, word) in w.iter().enumerate() {
                l[2 * j] = *word as u32;
                l[2 * j + 1] = (*word >> 32) as u32;
            }
            FrLimbs(l)
        })
        .collect();
    check(k, FrOp::Pow, &la, &e, &map(&|i| a[i].pow_vartime(exps[i])));

    // Conversions: plain integers in (also non-canonical ones, x + r < 2^256), Montgomery out.
    let ints: Vec<FrLimbs> = a.iter().map(integer_limbs).collect();
    check(k, FrOp::ToMont, &ints, &ints, &la);
    let wide: Vec<(FrLimbs, FrLimbs)> = ints
        .iter()
        .zip(&la)
        .filter_map(|(x, m)| Some((add_modulus(*x)?, *m)))
        .collect();
    let (wide_in, wide_out): (Vec<FrLimbs>, Vec<FrLimbs>) = wide.into_iter().unzip();
    check(k, FrOp::ToMont, &wide_in, &wide_in, &wide_out);
    check(k, FrOp::FromMont, &la, &la, &ints);
}

/// Scalars whose Montgomery limbs sit at the edges: 0, 1, r−1, r−2, and limb patterns near the
/// top of the range (r < 2^255, so the largest Montgomery form is r − 1 ≈ 0.9·2^255).
fn edge_scalars() -> Vec<Scalar> {
    let mut out = vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        -Scalar::from(2u64),
        Scalar::from(2u64),
    ];
    let mut patterns: Vec<[u32; 8]> = vec![
        [0, 0, 0, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 1 << 30],
        [
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            FR_MODULUS[7] - 1,
        ],
        [0, 0, 0, 0, 0, 0, 0, FR_MODULUS[7]],
    ];
    let mut r_minus = FR_MODULUS;
    r_minus[0] = 0; // r − 1
    patterns.push(r_minus);
    let mut r_minus2 = FR_MODULUS;
    r_minus2[0] = u32::MAX; // r − 2
    r_minus2[1] = u32::MAX - 1;
    patterns.push(r_minus2);
    for p in patterns {
        out.push(Scalar::try_from(FrLimbs(p)).expect("below r"));
    }
    out
}

#[test]
fn fr_edge_values_match_blstrs() {
    let Some(k) = kernels() else { return };
    let edges = edge_scalars();
    // Every pair of edge values.
    let a: Vec<Scalar> = edges
        .iter()
        .flat_map(|x| edges.iter().map(move |_| *x))
        .collect();
    let b: Vec<Scalar> = edges.iter().flat_map(|_| edges.iter().copied()).collect();
    let exps: Vec<[u64; 4]> = (0..a.len())
        .map(|i| match i % 4 {
            0 => [0; 4],
            1 => [1, 0, 0, 0],
            2 => [u64::MAX; 4],
            _ => [2, 0, 0, 1 << 63],
        })
        .collect();
    check_all_ops(&k, &a, &b, &exps);
}

#[test]
fn fr_random_values_match_blstrs() {
    let Some(k) = kernels() else { return };
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    runner
        .run(&any::<u64>(), |seed| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let n = 1000 + (seed % 64) as usize;
            let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let exps: Vec<[u64; 4]> = (0..n)
                .map(|_| {
                    [
                        rng.next_u64(),
                        rng.next_u64(),
                        rng.next_u64(),
                        rng.next_u64(),
                    ]
                })
                .collect();
            check_all_ops(&k, &a, &b, &exps);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fr_bench_probes_agree() {
    let Some(k) = kernels() else { return };
    let stream = k.device().default_stream();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let host: Vec<FrLimbs> = (0..1024)
        .map(|_| FrLimbs::from(Scalar::random(&mut rng)))
        .collect();
    // Every probe runs the same four chains (integer, FP64 or both kinds of multiplication), so
    // all of them leave the same sums behind.
    let mut outputs = Vec::new();
    for probe in MulProbe::ALL {
        let mut data = stream.upload(&host).unwrap();
        let muls = k.bench_mul(probe, &stream, &mut data, 256, 5).unwrap();
        assert_eq!(muls, 4 * 5 * 512);
        let out = stream.download(&data).unwrap();
        let sums: Vec<FrLimbs> = out.iter().step_by(2).copied().collect();
        assert!(
            sums.iter().all(|s| Scalar::try_from(*s).is_ok()),
            "{probe:?}: not canonical"
        );
        outputs.push((probe, sums));
    }
    // The chains' value from the host: c · m^5 for (c, m) = (x, y), (y, x), (x + y, y), (x − y, x).
    let want: Vec<FrLimbs> = host
        .chunks(2)
        .map(|p| {
            let (x, y) = (
                Scalar::try_from(p[0]).unwrap(),
                Scalar::try_from(p[1]).unwrap(),
            );
            let (x5, y5) = (x.pow_vartime([5]), y.pow_vartime([5]));
            FrLimbs::from(x * y5 + y * x5 + (x + y) * y5 + (x - y) * x5)
        })
        .collect();
    for (probe, sums) in &outputs {
        assert_eq!(sums, &want, "{probe:?} differs from the host");
    }
}

#[test]
fn device_reports_itself() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let info = device.info();
    eprintln!("{info}");
    assert!(info.sm_count > 0 && info.total_memory > 0);
    assert!(matches!(
        cuzk_gpu::Device::open(usize::MAX),
        Err(cuzk_gpu::GpuError::NoDevice { .. })
    ));
}

#[test]
fn pool_keeps_and_returns_memory() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let bytes = 256 << 20;
    device.set_pool_release_threshold(u64::MAX).unwrap();
    let (free_before, _) = device.memory().unwrap();
    drop(stream.alloc::<u8>(bytes).unwrap());
    stream.synchronize().unwrap();
    // Freed but kept mapped by the pool: the driver still counts it as used.
    let (free_kept, _) = device.memory().unwrap();
    assert!(
        free_kept + bytes / 2 <= free_before,
        "{free_kept} of {free_before} free"
    );
    device.trim_pool(0).unwrap();
    let (free_after, _) = device.memory().unwrap();
    assert!(
        free_after >= free_kept + bytes / 2,
        "{free_after} free after the trim"
    );
    device.set_pool_release_threshold(0).unwrap();
}
