//! The GPU NTT against the CPU reference, bit for bit: every size from 2^1 to 2^20 in every
//! transform and order combination, batches, device-resident data on a stream of its own, and
//! spot checks at 2^24. Skips (and passes) without a GPU. On the kernel emulator (cuzk-gpu's
//! `emu`, as CI runs it) the same checks run up to 2^12 (`sized`).
#![cfg(feature = "cuda")]

use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
use std::sync::OnceLock;

use cuzk_ntt::gpu::{GpuNtt, Transform};
use cuzk_ntt::{cpu, reference, Domain, Order, Scalar};
use ff::Field;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

/// One [`GpuNtt`] on device 0 for every test of this file (its twiddle tables are made once);
/// `None`, with the reason on stderr, when there is no usable GPU.
fn shared_for_tests() -> Option<&'static GpuNtt> {
    static SHARED: OnceLock<Option<GpuNtt>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let device = cuzk_gpu::device_for_tests()?;
            Some(GpuNtt::new(&device).expect("the NTT module loads"))
        })
        .as_ref()
}

/// Whether a test runs at `2^log_n` here: every size on a device, up to 2^12 on the emulator,
/// whose threads are host threads.
fn sized(log_n: u32) -> bool {
    !cuzk_gpu::EMULATED || log_n <= 12
}

/// `len` random scalars from `seed`, generated in parallel chunks.
fn random_scalars(len: usize, seed: u64) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 32));
            for v in chunk {
                *v = Scalar::random(&mut rng);
            }
        });
    out
}

type CpuFn = fn(&mut [Scalar], &Domain, Order, Order) -> Result<(), cuzk_ntt::NttError>;

fn reference_fn(t: Transform) -> CpuFn {
    match t {
        Transform::Forward => reference::forward,
        Transform::Inverse => reference::inverse,
        Transform::CosetForward => reference::coset_forward,
        Transform::CosetInverse => reference::coset_inverse,
    }
}

fn cpu_fn(t: Transform) -> CpuFn {
    match t {
        Transform::Forward => cpu::forward,
        Transform::Inverse => cpu::inverse,
        Transform::CosetForward => cpu::coset_forward,
        Transform::CosetInverse => cpu::coset_inverse,
    }
}

fn combos() -> Vec<(Transform, Order, Order)> {
    let mut out = Vec::new();
    for t in Transform::ALL {
        for i in Order::ALL {
            for o in Order::ALL {
                out.push((t, i, o));
            }
        }
    }
    out
}

fn first_difference(got: &[Scalar], want: &[Scalar]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w)
}

/// Every combination at `log_n` against `oracle`, on one random input.
fn check_size(gpu: &GpuNtt, log_n: u32, oracle: fn(Transform) -> CpuFn) {
    let domain = Domain::new(log_n).unwrap();
    let input = random_scalars(domain.n(), u64::from(log_n));
    let expected: Vec<Vec<Scalar>> = combos()
        .par_iter()
        .map(|&(t, i, o)| {
            let mut v = input.clone();
            oracle(t)(&mut v, &domain, i, o).unwrap();
            v
        })
        .collect();
    for ((t, i, o), want) in combos().into_iter().zip(expected) {
        let mut got = input.clone();
        gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
            .unwrap();
        if let Some(at) = first_difference(&got, &want) {
            panic!("2^{log_n} {t:?} {i:?}->{o:?}: first difference at index {at}");
        }
    }
}

#[test]
fn every_size_to_2_20_matches_the_reference() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    for log_n in (1..=20).filter(|&l| sized(l)) {
        check_size(gpu, log_n, reference_fn);
    }
}

#[test]
fn spot_check_2_24_against_the_cpu_path() {
    let Some(gpu) = shared_for_tests().filter(|_| sized(24)) else {
        return;
    };
    let domain = Domain::new(24).unwrap();
    let input = random_scalars(domain.n(), 24);
    for (t, i, o) in [
        (Transform::Forward, Order::Natural, Order::BitReversed),
        (Transform::CosetInverse, Order::BitReversed, Order::Natural),
        (Transform::CosetForward, Order::Natural, Order::Natural),
    ] {
        let mut want = input.clone();
        cpu_fn(t)(&mut want, &domain, i, o).unwrap();
        let mut got = input.clone();
        gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
            .unwrap();
        assert_eq!(
            first_difference(&got, &want),
            None,
            "2^24 {t:?} {i:?}->{o:?}"
        );
    }
}

#[test]
fn batches_transform_each_vector() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    for log_n in [3, 11, 14].into_iter().filter(|&l| sized(l)) {
        let domain = Domain::new(log_n).unwrap();
        let mut vectors: Vec<Vec<Scalar>> = (0..5)
            .map(|s| random_scalars(domain.n(), 100 + s))
            .collect();
        let mut expected = vectors.clone();
        for v in &mut expected {
            reference::coset_forward(v, &domain, Order::BitReversed, Order::Natural).unwrap();
        }
        let mut views: Vec<&mut [Scalar]> = vectors.iter_mut().map(|v| &mut v[..]).collect();
        gpu.coset_forward_many(&mut views, &domain, Order::BitReversed, Order::Natural)
            .unwrap();
        assert_eq!(vectors, expected, "batch of 5 at 2^{log_n}");
    }
}

#[test]
fn device_resident_data_on_its_own_stream() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    let stream = gpu.device().new_stream().unwrap();
    let domain = Domain::new(16).unwrap();
    let input = random_scalars(domain.n(), 16);
    let mut data = stream.upload(scalars_as_limbs(&input)).unwrap();
    // Forward then inverse on the device is the identity.
    gpu.forward_device(
        &stream,
        &mut data,
        &domain,
        Order::Natural,
        Order::BitReversed,
    )
    .unwrap();
    gpu.inverse_device(
        &stream,
        &mut data,
        &domain,
        Order::BitReversed,
        Order::Natural,
    )
    .unwrap();
    let back: Vec<FrLimbs> = stream.download(&data).unwrap();
    assert_eq!(back, scalars_as_limbs(&input));
}

#[test]
fn the_quotient_step_matches_the_host() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    let stream = gpu.device().new_stream().unwrap();
    for log_n in [1, 10, 17].into_iter().filter(|&l| sized(l)) {
        let domain = Domain::new(log_n).unwrap();
        let n = domain.n();
        let abc = random_scalars(3 * n, 100 + u64::from(log_n));
        let z_inv = domain.z_on_coset_inv();
        let want: Vec<FrLimbs> = (0..n)
            .map(|i| FrLimbs::from((abc[i] * abc[n + i] - abc[2 * n + i]) * z_inv))
            .collect();
        let data = stream.upload(scalars_as_limbs(&abc)).unwrap();
        let mut h = stream.alloc::<FrLimbs>(n).unwrap();
        gpu.h_pointwise(&stream, &data, &mut h, &domain).unwrap();
        let got: Vec<FrLimbs> = stream.download(&h).unwrap();
        assert!(
            got == want,
            "2^{log_n}: the device's h differs from the host's"
        );
        let mut short = stream.alloc::<FrLimbs>(n + 1).unwrap();
        assert!(gpu
            .h_pointwise(&stream, &data, &mut short, &domain)
            .is_err());
    }
}

#[test]
fn lengths_are_checked() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    let domain = Domain::new(4).unwrap();
    let mut short = vec![Scalar::ONE; 15];
    assert!(gpu
        .forward(&mut short, &domain, Order::Natural, Order::Natural)
        .is_err());
    let too_big = Domain::new(29).unwrap();
    let stream = gpu.device().default_stream();
    let mut empty = stream.alloc::<FrLimbs>(0).unwrap();
    let r = gpu.forward_device(
        &stream,
        &mut empty,
        &too_big,
        Order::Natural,
        Order::Natural,
    );
    assert!(matches!(
        r,
        Err(cuzk_ntt::gpu::GpuNttError::Unsupported { log_n: 29, .. })
    ));
}

#[test]
fn random_sizes_transforms_and_orders_match_the_reference() {
    let Some(gpu) = shared_for_tests() else {
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases: if cuzk_gpu::EMULATED { 12 } else { 48 },
        ..Config::default()
    });
    let strategy = (1u32..=13, 0usize..16, any::<u64>()).prop_filter("sized", |s| sized(s.0));
    runner
        .run(&strategy, |(log_n, combo, seed)| {
            let (t, i, o) = combos()[combo];
            let domain = Domain::new(log_n).unwrap();
            let input = random_scalars(domain.n(), seed);
            let mut want = input.clone();
            reference_fn(t)(&mut want, &domain, i, o).unwrap();
            let mut got = input;
            gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
                .unwrap();
            prop_assert_eq!(
                first_difference(&got, &want),
                None,
                "2^{} {:?} {:?}->{:?}",
                log_n,
                t,
                i,
                o
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_swept_configuration_matches_the_reference() {
    let Some(shared) = shared_for_tests() else {
        return;
    };
    for config in cuzk_ntt::gpu::SWEEP_CONFIGS {
        let gpu = GpuNtt::with_config(shared.device(), config).unwrap();
        for log_n in [1, 2, 3, 5, 8, 9, 10, 11, 12, 13, 17, 19, 21]
            .into_iter()
            .filter(|&l| sized(l))
        {
            let domain = Domain::new(log_n).unwrap();
            let input = random_scalars(domain.n(), 500 + u64::from(log_n));
            for (t, i, o) in [
                (Transform::Forward, Order::Natural, Order::BitReversed),
                (Transform::CosetInverse, Order::BitReversed, Order::Natural),
                (
                    Transform::CosetForward,
                    Order::BitReversed,
                    Order::BitReversed,
                ),
            ] {
                let mut want = input.clone();
                cpu_fn(t)(&mut want, &domain, i, o).unwrap();
                let mut got = input.clone();
                gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
                    .unwrap();
                assert_eq!(
                    first_difference(&got, &want),
                    None,
                    "{config:?} 2^{log_n} {t:?} {i:?}->{o:?}"
                );
            }
        }
    }
}

#[test]
fn the_full_twiddle_table_is_made_once_per_size_and_direction() {
    let Some(shared) = shared_for_tests().filter(|_| sized(19)) else {
        return;
    };
    let config = cuzk_ntt::gpu::NttConfig::default();
    let gpu = GpuNtt::with_config(shared.device(), config).unwrap();
    assert_eq!(gpu.table_bytes(), 0);
    let domain = Domain::new(19).unwrap();
    let input = random_scalars(domain.n(), 19);
    let (t, i, o) = (Transform::Forward, Order::Natural, Order::BitReversed);
    let mut want = input.clone();
    reference_fn(t)(&mut want, &domain, i, o).unwrap();
    for _ in 0..2 {
        let mut got = input.clone();
        gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
            .unwrap();
        assert_eq!(first_difference(&got, &want), None);
        // The coarse, fine and full tables of the forward direction, kept for the second call.
        assert_eq!(
            gpu.table_bytes(),
            cuzk_ntt::gpu::twiddle_table_bytes(19, &config)
        );
    }
}

/// A workspace that hands out the stream's pool's buffers and notes each one's size.
#[derive(Debug, Default)]
struct Noted(std::sync::Mutex<Vec<usize>>);

impl cuzk_gpu::Workspace for Noted {
    fn alloc_bytes(
        &self,
        stream: &cuzk_gpu::Stream,
        bytes: usize,
    ) -> Result<cuzk_gpu::DeviceBuffer<u8>, cuzk_gpu::GpuError> {
        self.0.lock().unwrap().push(bytes);
        cuzk_gpu::StreamPool.alloc_bytes(stream, bytes)
    }
}

/// The tables come from the table memory the instance was given, every one of them, and are
/// those [`GpuNtt::needed_table_bytes`] names (no full table below 2^19); the results are the
/// reference's.
#[test]
fn the_tables_come_from_the_given_table_memory() {
    let Some(shared) = shared_for_tests() else {
        return;
    };
    let memory = std::sync::Arc::new(Noted::default());
    let config = cuzk_ntt::gpu::NttConfig::default();
    let gpu = GpuNtt::with_table_memory(shared.device(), config, memory.clone()).unwrap();
    let log_n = 10;
    let domain = Domain::new(log_n).unwrap();
    let transforms = [
        Transform::Inverse,
        Transform::CosetForward,
        Transform::CosetInverse,
    ];
    for (k, t) in transforms.into_iter().enumerate() {
        let input = random_scalars(domain.n(), 50 + k as u64);
        let (i, o) = (Order::Natural, Order::Natural);
        let mut want = input.clone();
        reference_fn(t)(&mut want, &domain, i, o).unwrap();
        let mut got = input;
        gpu.transform_many(&mut [&mut got[..]], &domain, t, i, o)
            .unwrap();
        assert_eq!(first_difference(&got, &want), None, "{t:?}");
    }
    let mut noted = memory.0.lock().unwrap().clone();
    let mut needed = GpuNtt::needed_table_bytes(log_n, &transforms);
    noted.sort_unstable();
    needed.sort_unstable();
    assert_eq!(noted, needed);
    assert_eq!(gpu.table_bytes(), needed.iter().sum::<usize>());
}
