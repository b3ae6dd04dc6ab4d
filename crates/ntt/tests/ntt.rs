//! The transforms against their definitions, against each other, and on bad input.

use cuzk_ntt::{bit_reverse_permute, cpu, naive_dft, reference, Domain, NttError, Order, Scalar};
use ff::Field;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

type Transform = fn(&mut [Scalar], &Domain, Order, Order) -> Result<(), NttError>;
type TransformMany = fn(&mut [&mut [Scalar]], &Domain, Order, Order) -> Result<(), NttError>;

/// The four transforms, by name, as (reference, cpu, cpu many).
const TRANSFORMS: [(&str, Transform, Transform, TransformMany); 4] = [
    (
        "forward",
        reference::forward,
        cpu::forward,
        cpu::forward_many,
    ),
    (
        "inverse",
        reference::inverse,
        cpu::inverse,
        cpu::inverse_many,
    ),
    (
        "coset_forward",
        reference::coset_forward,
        cpu::coset_forward,
        cpu::coset_forward_many,
    ),
    (
        "coset_inverse",
        reference::coset_inverse,
        cpu::coset_inverse,
        cpu::coset_inverse_many,
    ),
];

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x6e74_7421),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn random_vec(seed: u64, n: usize) -> Vec<Scalar> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

/// A natural-order vector stored in `order`.
fn stored(mut natural: Vec<Scalar>, order: Order) -> Vec<Scalar> {
    if order == Order::BitReversed {
        bit_reverse_permute(&mut natural);
    }
    natural
}

fn order_pairs() -> impl Iterator<Item = (Order, Order)> {
    Order::ALL
        .into_iter()
        .flat_map(|i| Order::ALL.into_iter().map(move |o| (i, o)))
}

/// `p(point)` for the polynomial with coefficients `coeffs`, by Horner's rule.
fn evaluate(coeffs: &[Scalar], point: Scalar) -> Scalar {
    coeffs
        .iter()
        .rev()
        .fold(Scalar::ZERO, |acc, c| acc * point + c)
}

/// What transform `name` gives for the natural-order input `x`, by definition, in natural order.
fn definition(name: &str, x: &[Scalar], domain: &Domain) -> Vec<Scalar> {
    let n = domain.n();
    let g = domain.coset_gen();
    match name {
        "forward" => naive_dft(x, domain.omega()),
        "inverse" => naive_dft(x, domain.omega_inv())
            .iter()
            .map(|y| *y * domain.n_inv())
            .collect(),
        // The polynomial evaluated at g * omega^i, point by point.
        "coset_forward" => Domain::powers(domain.omega(), n)
            .into_iter()
            .map(|w| evaluate(x, g * w))
            .collect(),
        "coset_inverse" => naive_dft(x, domain.omega_inv())
            .into_iter()
            .zip(Domain::powers(domain.coset_gen_inv(), n))
            .map(|(y, h)| y * domain.n_inv() * h)
            .collect(),
        _ => unreachable!("unknown transform {name}"),
    }
}

/// Every transform, from every order to every order, by both paths, equals its definition.
fn check_definition(log_n: u32, seed: u64) {
    let domain = Domain::new(log_n).unwrap();
    let x = random_vec(seed, domain.n());
    for (name, reference, cpu, _) in TRANSFORMS {
        let expected = definition(name, &x, &domain);
        for (input, output) in order_pairs() {
            for (path, transform) in [("reference", reference), ("cpu", cpu)] {
                let mut values = stored(x.clone(), input);
                transform(&mut values, &domain, input, output).unwrap();
                assert_eq!(
                    values,
                    stored(expected.clone(), output),
                    "{path}::{name}, 2^{log_n}, {input:?} -> {output:?}"
                );
            }
        }
    }
}

/// The cpu path equals the reference for every transform and order pair.
fn check_cpu_matches_reference(log_n: u32, seed: u64) {
    let domain = Domain::new(log_n).unwrap();
    let x = random_vec(seed, domain.n());
    for (name, reference, cpu, _) in TRANSFORMS {
        for (input, output) in order_pairs() {
            let mut expected = x.clone();
            reference(&mut expected, &domain, input, output).unwrap();
            let mut values = x.clone();
            cpu(&mut values, &domain, input, output).unwrap();
            assert_eq!(
                values, expected,
                "{name}, 2^{log_n}, {input:?} -> {output:?}"
            );
        }
    }
}

/// `back(there(x)) = x`, through every intermediate order.
fn check_round_trip(log_n: u32, seed: u64, there: Transform, back: Transform) {
    let domain = Domain::new(log_n).unwrap();
    let x = random_vec(seed, domain.n());
    for (input, middle) in order_pairs() {
        let mut values = x.clone();
        there(&mut values, &domain, input, middle).unwrap();
        back(&mut values, &domain, middle, input).unwrap();
        assert_eq!(values, x, "2^{log_n}, {input:?} via {middle:?}");
    }
}

/// `*_many` on three vectors equals three separate calls.
fn check_many(log_n: u32, seed: u64) {
    let domain = Domain::new(log_n).unwrap();
    let inputs: Vec<Vec<Scalar>> = (0..3).map(|i| random_vec(seed + i, domain.n())).collect();
    for (name, _, single, many) in TRANSFORMS {
        for (input, output) in order_pairs() {
            let mut expected = inputs.clone();
            for v in expected.iter_mut() {
                single(v, &domain, input, output).unwrap();
            }
            let mut values = inputs.clone();
            let mut refs: Vec<&mut [Scalar]> = values.iter_mut().map(|v| &mut v[..]).collect();
            many(&mut refs, &domain, input, output).unwrap();
            assert_eq!(
                values, expected,
                "{name}_many, 2^{log_n}, {input:?} -> {output:?}"
            );
        }
    }
}

/// Runs `f` on a rayon pool of `threads` threads (the cpu path's tiling depends on it).
fn on_threads(threads: usize, f: impl FnOnce() + Send) {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f);
}

#[test]
fn transforms_match_the_definition_for_every_small_size() {
    for log_n in 0..=8 {
        check_definition(log_n, u64::from(log_n));
    }
}

#[test]
fn cpu_matches_reference_for_every_size_up_to_2_14() {
    for log_n in 0..=14 {
        check_cpu_matches_reference(log_n, 100 + u64::from(log_n));
    }
}

#[test]
fn cpu_matches_reference_on_other_thread_counts() {
    for threads in [1, 3, 16] {
        on_threads(threads, || {
            for log_n in [12, 13, 15] {
                check_cpu_matches_reference(log_n, 200 + u64::from(log_n));
            }
        });
    }
}

#[test]
fn cpu_matches_reference_at_2_16() {
    let domain = Domain::new(16).unwrap();
    let x = random_vec(16, domain.n());
    for (name, reference, cpu, _) in [TRANSFORMS[0], TRANSFORMS[3]] {
        let (input, output) = (Order::Natural, Order::Natural);
        let mut expected = x.clone();
        reference(&mut expected, &domain, input, output).unwrap();
        let mut values = x.clone();
        cpu(&mut values, &domain, input, output).unwrap();
        assert_eq!(values, expected, "{name}, 2^16");
    }
}

#[test]
fn many_equals_separate_calls() {
    for log_n in [0, 3, 11, 12, 13] {
        check_many(log_n, 300 + u64::from(log_n));
    }
}

#[test]
fn many_of_no_vectors_is_fine() {
    let domain = Domain::new(4).unwrap();
    for (_, _, _, many) in TRANSFORMS {
        assert_eq!(
            many(&mut [], &domain, Order::Natural, Order::Natural),
            Ok(())
        );
    }
}

#[test]
fn length_mismatch_is_an_error() {
    let domain = Domain::new(4).unwrap();
    let expected = Err(NttError::LengthMismatch {
        expected: 16,
        got: 15,
    });
    for (name, reference, cpu, many) in TRANSFORMS {
        for (input, output) in order_pairs() {
            let mut short = vec![Scalar::ONE; 15];
            assert_eq!(
                reference(&mut short, &domain, input, output),
                expected,
                "{name}"
            );
            assert_eq!(cpu(&mut short, &domain, input, output), expected, "{name}");
            // One bad vector among good ones: an error, and nothing touched.
            let mut good = vec![Scalar::ONE; 16];
            let mut refs: Vec<&mut [Scalar]> = vec![&mut good, &mut short];
            assert_eq!(
                many(&mut refs, &domain, input, output),
                expected,
                "{name}_many"
            );
            assert_eq!(good, vec![Scalar::ONE; 16], "{name}_many touched a vector");
        }
    }
    let mut empty: Vec<Scalar> = Vec::new();
    assert_eq!(
        cpu::forward(
            &mut empty,
            &Domain::new(0).unwrap(),
            Order::Natural,
            Order::Natural
        ),
        Err(NttError::LengthMismatch {
            expected: 1,
            got: 0
        })
    );
}

#[test]
fn bit_reversal_is_the_index_reversal() {
    let mut values: Vec<usize> = (0..16).collect();
    bit_reverse_permute(&mut values);
    assert_eq!(
        values,
        [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
    );
    bit_reverse_permute(&mut values);
    assert_eq!(values, (0..16).collect::<Vec<_>>());
    let mut tiny = [7u8];
    bit_reverse_permute(&mut tiny);
    assert_eq!(tiny, [7]);
    bit_reverse_permute::<u8>(&mut []);
}

proptest! {
    #![proptest_config(config(8))]

    #[test]
    fn definition_holds_on_random_inputs(seed in any::<u64>(), log_n in 0u32..=6) {
        check_definition(log_n, seed);
    }

    #[test]
    fn cpu_matches_reference_on_random_inputs(seed in any::<u64>(), log_n in 0u32..=13) {
        check_cpu_matches_reference(log_n, seed);
    }

    #[test]
    fn inverse_undoes_forward(seed in any::<u64>(), log_n in 0u32..=13) {
        check_round_trip(log_n, seed, cpu::forward, cpu::inverse);
        check_round_trip(log_n, seed, cpu::coset_forward, cpu::coset_inverse);
        check_round_trip(log_n, seed, reference::forward, reference::inverse);
        check_round_trip(log_n, seed, reference::coset_forward, reference::coset_inverse);
    }
}
