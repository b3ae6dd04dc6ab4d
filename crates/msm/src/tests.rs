//! Every algorithm checked against the others, in G1 and G2 (one test macro, two instances).

use ff::Field;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::reference::{signed_digits, signed_digits_canonical, MAX_WINDOW_BITS};
use crate::scalar::{limbs_from_le_bytes, R_LIMBS};
use crate::{MsmError, Scalar};

/// Property tests run a fixed number of cases from a fixed seed, so every run checks the same
/// inputs and nothing is written to disk.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x6375_7a6b),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn bytes_of_limbs(limbs: [u64; 4]) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (chunk, limb) in bytes.chunks_exact_mut(8).zip(limbs) {
        chunk.copy_from_slice(&limb.to_le_bytes());
    }
    bytes
}

fn scalar_of_bytes(bytes: [u8; 32]) -> Scalar {
    Scalar::from_bytes_le(&bytes).expect("canonical test scalar")
}

/// Scalars at the edges of the digit recoding: zero, one, `r − 1`, powers of two, and byte
/// patterns whose windows sit on the digit boundary `2^(c−1)` (or just above it) for many `c`.
fn edge_scalars() -> Vec<Scalar> {
    let pattern = |byte: u8, top: u8| {
        let mut bytes = [byte; 32];
        bytes[31] = top;
        scalar_of_bytes(bytes)
    };
    let mut r_minus_one_half = R_LIMBS;
    r_minus_one_half[0] -= 1;
    for i in 0..4 {
        r_minus_one_half[i] =
            (r_minus_one_half[i] >> 1) | r_minus_one_half.get(i + 1).map_or(0, |h| h << 63);
    }
    vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2),
        -Scalar::ONE,
        -Scalar::from(2),
        scalar_of_bytes(bytes_of_limbs(r_minus_one_half)),
        Scalar::from(2).pow_vartime([254]),
        Scalar::from(2).pow_vartime([254]) - Scalar::ONE,
        pattern(0x88, 0x08),
        pattern(0x99, 0x09),
        pattern(0x77, 0x37),
        pattern(0xff, 0x3f),
        pattern(0x80, 0x40),
        pattern(0x01, 0x00),
    ]
}

mod digits {
    use super::*;

    /// `Σ d_w·2^(c·w)` exactly, as a 320-bit two's-complement integer.
    fn recompose(digits: &[i32], window_bits: u32) -> [u64; 5] {
        let mut acc = [0u64; 5];
        for &digit in digits.iter().rev() {
            for i in (0..5).rev() {
                let low = if i > 0 {
                    acc[i - 1] >> (64 - window_bits)
                } else {
                    0
                };
                acc[i] = (acc[i] << window_bits) | low;
            }
            let extension = if digit < 0 { u64::MAX } else { 0 };
            let mut carry = false;
            for (i, limb) in acc.iter_mut().enumerate() {
                let addend = if i == 0 {
                    i64::from(digit) as u64
                } else {
                    extension
                };
                let (sum, c1) = limb.overflowing_add(addend);
                let (sum, c2) = sum.overflowing_add(u64::from(carry));
                *limb = sum;
                carry = c1 || c2;
            }
        }
        acc
    }

    /// The digits have the promised count and range and recompose to the scalar exactly.
    fn check(scalar: Scalar, window_bits: u32) {
        let digits = signed_digits(&scalar, window_bits).unwrap();
        assert_eq!(
            digits,
            signed_digits_canonical(&scalar.to_bytes_le(), window_bits).unwrap()
        );
        assert_eq!(digits.len(), (255 / window_bits + 1) as usize);
        let half = 1i64 << (window_bits - 1);
        for &digit in &digits {
            assert!(
                -half < i64::from(digit) && i64::from(digit) <= half,
                "digit {digit}"
            );
        }
        let limbs = limbs_from_le_bytes(&scalar.to_bytes_le());
        let expected = [limbs[0], limbs[1], limbs[2], limbs[3], 0];
        assert_eq!(
            recompose(&digits, window_bits),
            expected,
            "{scalar:?}, c = {window_bits}"
        );
    }

    #[test]
    fn edge_scalars_recompose() {
        for scalar in edge_scalars() {
            for window_bits in 1..=MAX_WINDOW_BITS {
                check(scalar, window_bits);
            }
        }
    }

    #[test]
    fn window_of_one_bit_is_binary() {
        let digits = signed_digits(&Scalar::from(0b1101), 1).unwrap();
        assert_eq!(&digits[..5], &[1, 0, 1, 1, 0]);
    }

    #[test]
    fn carries_propagate() {
        // 7 in windows of 3 bits: 7 = −1 + 1·8.
        assert_eq!(
            &signed_digits(&Scalar::from(7), 3).unwrap()[..3],
            &[-1, 1, 0]
        );
        // 4 = 2^(c−1) stays a positive digit.
        assert_eq!(&signed_digits(&Scalar::from(4), 3).unwrap()[..2], &[4, 0]);
    }

    #[test]
    fn bad_input_is_an_error() {
        for window_bits in [0, MAX_WINDOW_BITS + 1, u32::MAX] {
            assert_eq!(
                signed_digits(&Scalar::ONE, window_bits),
                Err(MsmError::WindowBits {
                    window_bits,
                    max: MAX_WINDOW_BITS
                })
            );
        }
        for bytes in [bytes_of_limbs(R_LIMBS), [0xff; 32]] {
            assert_eq!(
                signed_digits_canonical(&bytes, 8),
                Err(MsmError::NonCanonicalScalar { index: 0 })
            );
        }
    }

    proptest! {
        #![proptest_config(config(64))]
        #[test]
        fn random_scalars_recompose(seed in any::<u64>(), window_bits in 1..=MAX_WINDOW_BITS) {
            check(Scalar::random(rng(seed)), window_bits);
        }
    }
}

/// The MSM and batch-addition tests, for one group.
macro_rules! curve_tests {
    ($module:ident, $curve:ty) => {
        mod $module {
            use std::sync::OnceLock;

            use group::{prime::PrimeCurveAffine, Group};

            use super::*;
            use crate::batch::{batch_add_with, Summation};
            use crate::reference::{
                bucket_accumulate, bucket_reduce, combine_windows, combine_windows_of_widths,
            };
            use crate::{
                batch_add, batch_add_mixed, fast, naive_msm, reference, MsmCurve, Selection,
            };
            use cuzk_field::Bitmap;

            type C = $curve;
            type Affine = <C as MsmCurve>::Affine;
            type Projective = <C as MsmCurve>::Projective;

            /// A fixed pool of random points; test inputs draw from it (scalar multiplications
            /// are too slow to make fresh points for every case).
            fn pool() -> &'static [Affine] {
                static POOL: OnceLock<Vec<Affine>> = OnceLock::new();
                POOL.get_or_init(|| {
                    let mut rng = rng(1);
                    let points: Vec<Projective> = (0..256)
                        .map(|_| Projective::generator() * Scalar::random(&mut rng))
                        .collect();
                    C::batch_to_affine(&points)
                })
            }

            fn random_bases(rng: &mut ChaCha20Rng, n: usize) -> Vec<Affine> {
                let pool = pool();
                (0..n)
                    .map(|_| pool[rng.next_u32() as usize % pool.len()])
                    .collect()
            }

            fn random_scalars(rng: &mut ChaCha20Rng, n: usize) -> Vec<Scalar> {
                (0..n).map(|_| Scalar::random(&mut *rng)).collect()
            }

            /// blst (Montgomery and canonical scalars), the reference and our parallel Pippenger
            /// (at each window width) all agree with the naive sum.
            fn check_msm(bases: &[Affine], scalars: &[Scalar], windows: &[u32]) {
                let expected = Ok(naive_msm::<C>(bases, scalars).unwrap());
                let canonical: Vec<[u8; 32]> = scalars.iter().map(Scalar::to_bytes_le).collect();
                assert_eq!(fast::msm::<C>(bases, scalars), expected, "blst");
                assert_eq!(
                    fast::msm_canonical::<C>(bases, &canonical),
                    expected,
                    "blst bytes"
                );
                for &c in windows {
                    assert_eq!(
                        reference::msm::<C>(bases, scalars, c),
                        expected,
                        "reference {c}"
                    );
                    assert_eq!(
                        fast::pippenger::<C>(bases, scalars, c),
                        expected,
                        "ours {c}"
                    );
                }
            }

            fn check_random(seed: u64, n: usize, windows: &[u32]) {
                let mut rng = rng(seed);
                let bases = random_bases(&mut rng, n);
                check_msm(&bases, &random_scalars(&mut rng, n), windows);
            }

            /// batch_add (at several chunk lengths) agrees with a plain sum of the selection.
            fn check_batch(bases: &[Affine], selection: Selection<'_>) {
                let selected: Vec<usize> = match selection {
                    Selection::All => (0..bases.len()).collect(),
                    Selection::Bitmap(bitmap) => bitmap.iter_ones().collect(),
                    Selection::Indices(indices) => indices.iter().map(|&i| i as usize).collect(),
                };
                let mut expected = Projective::identity();
                for i in selected {
                    expected += bases[i];
                }
                assert_eq!(
                    batch_add::<C>(bases, selection),
                    Ok(expected),
                    "{selection:?}"
                );
                assert_eq!(
                    batch_add_mixed::<C>(bases, selection),
                    Ok(expected),
                    "{selection:?}"
                );
                let summations = [
                    Summation::Mixed,
                    Summation::BulkAffine(1),
                    Summation::BulkAffine(17),
                ];
                for (summation, chunk_len) in summations.into_iter().zip([1, 64, 100]) {
                    assert_eq!(
                        batch_add_with::<C>(bases, selection, summation, chunk_len),
                        Ok(expected),
                        "{selection:?}, {summation:?}, chunks of {chunk_len}"
                    );
                }
            }

            #[test]
            fn sizes_around_blst_thresholds() {
                for (seed, n) in [0, 1, 2, 3, 31, 32, 33, 64, 65].into_iter().enumerate() {
                    check_random(seed as u64, n, &[1, 4, 7]);
                }
            }

            #[test]
            fn wide_windows() {
                // Bucket reduction dominates wide windows; G2 stops at 14 bits to keep tests fast.
                let window_bits = if C::NAME == "G1" { 16 } else { 14 };
                check_random(11, 40, &[window_bits]);
            }

            #[test]
            fn canonical_scalars_agree() {
                let mut rng = rng(12);
                let bases = random_bases(&mut rng, 100);
                let edge = edge_scalars();
                let scalars: Vec<Scalar> = random_scalars(&mut rng, 100 - edge.len())
                    .into_iter()
                    .chain(edge)
                    .collect();
                let canonical: Vec<[u8; 32]> = scalars.iter().map(Scalar::to_bytes_le).collect();
                let expected = Ok(naive_msm::<C>(&bases, &scalars).unwrap());
                for c in [1, 5, 8] {
                    assert_eq!(
                        reference::msm_canonical::<C>(&bases, &canonical, c),
                        expected
                    );
                    assert_eq!(
                        fast::pippenger_canonical::<C>(&bases, &canonical, c),
                        expected
                    );
                }
            }

            #[test]
            fn all_zero_one_and_minus_one_scalars() {
                let bases = random_bases(&mut rng(2), 40);
                for scalar in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE] {
                    check_msm(&bases, &vec![scalar; 40], &[1, 5, 8]);
                }
            }

            #[test]
            fn one_scalar_repeated() {
                let mut rng = rng(3);
                let bases = random_bases(&mut rng, 100);
                check_msm(&bases, &vec![Scalar::random(&mut rng); 100], &[3, 8]);
            }

            #[test]
            fn sparse_scalars() {
                let mut rng = rng(4);
                let bases = random_bases(&mut rng, 300);
                let mut scalars = vec![Scalar::ZERO; 300];
                for i in [0, 17, 150, 299] {
                    scalars[i] = Scalar::random(&mut rng);
                }
                check_msm(&bases, &scalars, &[2, 9]);
            }

            #[test]
            fn small_and_edge_scalars() {
                let scalars: Vec<Scalar> =
                    (0..50).map(Scalar::from).chain(edge_scalars()).collect();
                let bases = random_bases(&mut rng(5), scalars.len());
                check_msm(&bases, &scalars, &[1, 3, 4, 8, 11]);
            }

            #[test]
            fn bases_at_infinity() {
                let mut rng = rng(6);
                for n in [5, 40, 100] {
                    let mut bases = random_bases(&mut rng, n);
                    for base in bases.iter_mut().step_by(3) {
                        *base = Affine::identity();
                    }
                    check_msm(&bases, &random_scalars(&mut rng, n), &[4]);
                    let all_infinity = vec![Affine::identity(); n];
                    check_msm(&all_infinity, &random_scalars(&mut rng, n), &[4]);
                }
            }

            #[test]
            fn repeated_and_opposite_bases() {
                let mut rng = rng(7);
                let p = pool()[0];
                let bases: Vec<Affine> =
                    [p, p, -p, p, -p, -p].into_iter().cycle().take(60).collect();
                check_msm(&bases, &vec![Scalar::from(5); 60], &[3]);
                check_msm(&bases, &random_scalars(&mut rng, 60), &[1, 6]);
                // P·s + P·s − P·s with the same digits everywhere: buckets double and cancel.
                let s = Scalar::random(&mut rng);
                check_msm(&bases[..3], &[s, s, s], &[4]);
                check_msm(&bases[..3], &[s, -s, s], &[4]);
            }

            #[test]
            fn ours_splits_points_when_threads_outnumber_windows() {
                static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
                let threads = POOL.get_or_init(|| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(64)
                        .build()
                        .unwrap()
                });
                threads.install(|| {
                    for c in [3, 4, 6] {
                        assert!(fast::chunk_count(300, 255 / c as usize + 1, c) > 1);
                        let mut rng = rng(8);
                        let bases = random_bases(&mut rng, 300);
                        let scalars = random_scalars(&mut rng, 300);
                        assert_eq!(
                            fast::pippenger::<C>(&bases, &scalars, c),
                            naive_msm::<C>(&bases, &scalars)
                        );
                    }
                });
            }

            #[test]
            fn reference_steps() {
                let (p, q) = (pool()[0], pool()[1]);
                // Window of 3 bits: 4 buckets; digit 3 puts P in bucket 3, digit −2 puts −Q in 2.
                let buckets = bucket_accumulate::<C>(&[p, q], &[3, -2], 3).unwrap();
                let expected = [
                    Projective::identity(),
                    -q.to_curve(),
                    p.to_curve(),
                    Projective::identity(),
                ];
                assert_eq!(buckets, expected);
                assert_eq!(
                    bucket_reduce::<C>(&buckets),
                    p * Scalar::from(3) - q * Scalar::from(2)
                );
                let (a, b) = (p.to_curve(), q.to_curve());
                assert_eq!(combine_windows::<C>(&[a, b], 3), a + b * Scalar::from(8));
                assert_eq!(combine_windows::<C>(&[], 3), Projective::identity());
                // Windows of 3 and 2 bits below the top one: a + 2^3·b + 2^5·(a + b).
                let widths = |w: usize| [3, 2][w];
                assert_eq!(
                    combine_windows_of_widths::<C>(&[a, b, a + b], widths),
                    a + b * Scalar::from(8) + (a + b) * Scalar::from(32)
                );
                // ±2^(c−1) name the top bucket; anything wider does not fit.
                assert!(bucket_accumulate::<C>(&[p, q], &[4, -4], 3).is_ok());
                for digit in [5, -5, i32::MIN] {
                    assert_eq!(
                        bucket_accumulate::<C>(&[p, q], &[1, digit], 3),
                        Err(MsmError::DigitOutOfRange {
                            index: 1,
                            digit,
                            window_bits: 3
                        })
                    );
                }
                assert_eq!(
                    bucket_accumulate::<C>(&[p, q], &[1], 3),
                    Err(MsmError::LengthMismatch {
                        bases: 2,
                        scalars: 1
                    })
                );
            }

            #[test]
            fn bad_msm_input_is_an_error() {
                let mut rng = rng(9);
                let bases = random_bases(&mut rng, 3);
                let scalars = random_scalars(&mut rng, 2);
                let canonical: Vec<[u8; 32]> = scalars.iter().map(Scalar::to_bytes_le).collect();
                let mismatch = Err(MsmError::LengthMismatch {
                    bases: 3,
                    scalars: 2,
                });
                assert_eq!(naive_msm::<C>(&bases, &scalars), mismatch);
                assert_eq!(reference::msm::<C>(&bases, &scalars, 4), mismatch);
                assert_eq!(
                    reference::msm_canonical::<C>(&bases, &canonical, 4),
                    mismatch
                );
                assert_eq!(fast::msm::<C>(&bases, &scalars), mismatch);
                assert_eq!(fast::msm_canonical::<C>(&bases, &canonical), mismatch);
                assert_eq!(fast::pippenger::<C>(&bases, &scalars, 4), mismatch);
                assert_eq!(
                    fast::pippenger_canonical::<C>(&bases, &canonical, 4),
                    mismatch
                );

                let scalars = random_scalars(&mut rng, 3);
                for window_bits in [0, MAX_WINDOW_BITS + 1] {
                    let error = Err(MsmError::WindowBits {
                        window_bits,
                        max: MAX_WINDOW_BITS,
                    });
                    assert_eq!(reference::msm::<C>(&bases, &scalars, window_bits), error);
                    assert_eq!(fast::pippenger::<C>(&bases, &scalars, window_bits), error);
                    assert_eq!(
                        bucket_accumulate::<C>(&bases, &[0; 3], window_bits),
                        error.map(|_| vec![])
                    );
                }

                for bad in [bytes_of_limbs(R_LIMBS), [0xff; 32]] {
                    let canonical = [Scalar::ONE.to_bytes_le(), bad, [0; 32]];
                    let error = Err(MsmError::NonCanonicalScalar { index: 1 });
                    assert_eq!(fast::msm_canonical::<C>(&bases, &canonical), error);
                    assert_eq!(reference::msm_canonical::<C>(&bases, &canonical, 4), error);
                    assert_eq!(fast::pippenger_canonical::<C>(&bases, &canonical, 4), error);
                }
            }

            #[test]
            fn batch_add_edge_cases() {
                let bases = random_bases(&mut rng(10), 130);
                check_batch(&[], Selection::All);
                check_batch(&[], Selection::Indices(&[]));
                check_batch(&[], Selection::Bitmap(&Bitmap::new()));
                check_batch(&bases, Selection::Bitmap(&Bitmap::zeros(130)));
                check_batch(&bases, Selection::Bitmap(&Bitmap::ones(130)));
                check_batch(&bases, Selection::Indices(&[5, 5, 5, 129, 0]));
                let mut with_infinity = bases.clone();
                with_infinity[3] = Affine::identity();
                let p = with_infinity[0];
                with_infinity[1] = -p;
                with_infinity[2] = p;
                check_batch(&with_infinity, Selection::All);
                check_batch(&with_infinity, Selection::Indices(&[0, 2, 3, 3, 0]));
                // P + (−P), P + P and infinity side by side, as blst's pairwise rounds meet them.
                check_batch(
                    &with_infinity,
                    Selection::Indices(&[0, 1, 0, 2, 3, 1, 2, 2]),
                );
                let many = Bitmap::from_bools((0..130).map(|i| i % 3 != 1));
                check_batch(&with_infinity, Selection::Bitmap(&many));
            }

            #[test]
            fn bad_selection_is_an_error() {
                let bases = random_bases(&mut rng(11), 70);
                for bits in [0, 69, 71, 128] {
                    assert_eq!(
                        batch_add::<C>(&bases, Selection::Bitmap(&Bitmap::ones(bits))),
                        Err(MsmError::BitmapLength { bits, bases: 70 })
                    );
                }
                assert_eq!(
                    batch_add::<C>(&bases, Selection::Indices(&[0, 69, 70, 1000])),
                    Err(MsmError::IndexOutOfRange {
                        position: 2,
                        index: 70,
                        bases: 70
                    })
                );
                assert_eq!(
                    batch_add::<C>(&[], Selection::Indices(&[0])),
                    Err(MsmError::IndexOutOfRange {
                        position: 0,
                        index: 0,
                        bases: 0
                    })
                );
            }

            proptest! {
                #![proptest_config(config(16))]

                #[test]
                fn msm_algorithms_agree(
                    seed in any::<u64>(),
                    n in 0usize..300,
                    window_bits in 1u32..=12,
                ) {
                    check_random(seed, n, &[window_bits]);
                }

                #[test]
                fn msm_is_linear(seed in any::<u64>(), n in 0usize..100) {
                    let mut rng = rng(seed);
                    let bases = random_bases(&mut rng, n);
                    let s1 = random_scalars(&mut rng, n);
                    let s2 = random_scalars(&mut rng, n);
                    let sum: Vec<Scalar> = s1.iter().zip(&s2).map(|(a, b)| a + b).collect();
                    let c = reference::default_window_bits(n);
                    let msm_fast = |s: &[Scalar]| fast::msm::<C>(&bases, s).unwrap();
                    let msm_ours = |s: &[Scalar]| fast::pippenger::<C>(&bases, s, c).unwrap();
                    let msm_ref = |s: &[Scalar]| reference::msm::<C>(&bases, s, c).unwrap();
                    prop_assert_eq!(msm_fast(&s1) + msm_fast(&s2), msm_fast(&sum));
                    prop_assert_eq!(msm_ours(&s1) + msm_ours(&s2), msm_ours(&sum));
                    prop_assert_eq!(msm_ref(&s1) + msm_ref(&s2), msm_ref(&sum));
                }

                #[test]
                fn batch_add_matches_plain_sum(
                    seed in any::<u64>(),
                    n in 0usize..300,
                    density in 0.0f64..=1.0,
                ) {
                    let mut rng = rng(seed);
                    let bases = random_bases(&mut rng, n);
                    let threshold = (density * f64::from(u32::MAX)) as u32;
                    let bitmap = Bitmap::from_bools((0..n).map(|_| rng.next_u32() <= threshold));
                    let indices: Vec<u32> = if n == 0 {
                        vec![]
                    } else {
                        (0..rng.next_u32() % (2 * n as u32))
                            .map(|_| rng.next_u32() % n as u32)
                            .collect()
                    };
                    check_batch(&bases, Selection::All);
                    check_batch(&bases, Selection::Bitmap(&bitmap));
                    check_batch(&bases, Selection::Indices(&indices));
                }
            }
        }
    };
}

curve_tests!(g1, crate::G1);
curve_tests!(g2, crate::G2);

#[test]
fn default_window_bits_at_benchmarked_sizes() {
    let windows = [1 << 12, 1 << 16, 1 << 18].map(reference::default_window_bits);
    assert_eq!(windows, [8, 12, 13]);
}

#[test]
fn default_window_grows_with_n() {
    let windows: Vec<u32> = [0, 1, 100, 1 << 12, 1 << 16, 1 << 20]
        .map(reference::default_window_bits)
        .to_vec();
    assert!(windows.windows(2).all(|w| w[0] <= w[1]), "{windows:?}");
    assert!(windows.iter().all(|&c| (1..=MAX_WINDOW_BITS).contains(&c)));
}

use crate::reference;

#[test]
fn r_limbs_are_the_modulus() {
    assert_eq!(bytes_of_limbs(R_LIMBS).as_slice(), Scalar::char().as_ref());
}
