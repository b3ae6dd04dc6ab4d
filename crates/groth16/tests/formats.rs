//! Parameter, verifying-key and proof formats: round trips, and a typed error (never a panic)
//! for every kind of bad input.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_field::{Fp, G1Affine, Scalar};
use cuzk_groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proof, Check, Groth16Error,
    MappedParameters, Parameters, Proof, Query, Section, VerifyingKey,
};
use ff::Field;
use group::prime::PrimeCurveAffine;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::OnceLock;

/// `x³ = y` with `y` public, repeated `n` times.
#[derive(Clone)]
struct Cubes {
    n: usize,
}

impl Circuit<Scalar> for Cubes {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for i in 0..self.n {
            let x = Scalar::from(i as u64 + 2);
            let xv = cs.alloc(|| "x", || Ok(x))?;
            let x2 = cs.alloc(|| "x2", || Ok(x.square()))?;
            let y = cs.alloc_input(|| "y", || Ok(x.square() * x))?;
            cs.enforce(|| "x2", |lc| lc + xv, |lc| lc + xv, |lc| lc + x2);
            cs.enforce(|| "y", |lc| lc + x2, |lc| lc + xv, |lc| lc + y);
        }
        Ok(())
    }
}

fn inputs(n: usize) -> Vec<Scalar> {
    (0..n)
        .map(|i| Scalar::from(i as u64 + 2).pow_vartime([3]))
        .collect()
}

/// A small parameter file and its bytes, made once.
fn fixture() -> &'static (Parameters, Vec<u8>) {
    static FIXTURE: OnceLock<(Parameters, Vec<u8>)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let params =
            generate_random_parameters(Cubes { n: 3 }, &mut ChaCha20Rng::seed_from_u64(7)).unwrap();
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        (params, bytes)
    })
}

/// Offsets of the sections: (vk end, h start, l start, a start, b_g1 start, b_g2 start).
fn layout(p: &Parameters) -> Vec<usize> {
    let vk = p.vk.encoded_len();
    let h = vk + 4;
    let l = h + p.h.len() * 96 + 4;
    let a = l + p.l.len() * 96 + 4;
    let b1 = a + p.a.len() * 96 + 4;
    let b2 = b1 + p.b_g1.len() * 96 + 4;
    vec![vk, h, l, a, b1, b2]
}

fn read_both(bytes: &[u8], checked: bool) -> [Result<Parameters, Groth16Error>; 2] {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    std::fs::write(&path, bytes).unwrap();
    [
        Parameters::read(bytes, checked),
        Parameters::read_file(&path, checked),
    ]
}

#[test]
fn round_trips_through_stream_and_map() {
    let (params, bytes) = fixture();
    assert_eq!(params.encoded_len(), bytes.len() as u64);
    for checked in [true, false] {
        for read in read_both(bytes, checked) {
            assert_eq!(&read.unwrap(), params);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    std::fs::write(&path, bytes).unwrap();
    let mapped = MappedParameters::<cuzk_groth16::Bls12>::open(&path, Check::Subgroup).unwrap();
    assert_eq!(
        mapped.points(Query::H, 1..3).unwrap(),
        params.h.read(1..3).unwrap()
    );
    assert_eq!(
        mapped.all(Query::B_G2).unwrap(),
        *params.b_g2.host().unwrap()
    );
    assert_eq!(mapped.len(Query::L), params.l.len());
    assert!(matches!(
        mapped.points(Query::H, 0..mapped.len(Query::H) + 1),
        Err(Groth16Error::LengthMismatch { .. })
    ));
}

#[test]
fn lazy_parameters_decode_only_what_is_asked_for() {
    let (params, bytes) = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    std::fs::write(&path, bytes).unwrap();
    let mapped = std::sync::Arc::new(MappedParameters::open(&path, Check::Subgroup).unwrap());
    let lazy = mapped.lazy_parameters();
    let queries = [&lazy.h, &lazy.l, &lazy.a, &lazy.b_g1];
    assert!(queries.iter().all(|q| q.host_bytes() == 0));
    assert_eq!(lazy.b_g2.host_bytes(), 0);
    assert_eq!(lazy.l.read(1..2).unwrap(), params.l.read(1..2).unwrap());
    assert_eq!(lazy.l.host_bytes(), 0, "a range is not kept");
    // Written block by block from the file, the bytes are the file's.
    let mut written = Vec::new();
    lazy.write(&mut written).unwrap();
    assert_eq!(&written, bytes);
    assert_eq!(&lazy, params);
    assert!(lazy.h.host_bytes() > 0, "compared whole, so read whole");
    assert!(lazy.h.release() > 0);
    assert_eq!(lazy.h.host_bytes(), 0);
    assert_eq!(*lazy.h.host().unwrap(), *params.h.host().unwrap());
}

#[test]
fn every_truncation_is_a_typed_error() {
    let (_, bytes) = fixture();
    let mut cuts: Vec<usize> = (0..bytes.len()).step_by(37).collect();
    for boundary in layout(&fixture().0) {
        cuts.extend([boundary - 1, boundary, boundary + 1]);
    }
    cuts.push(bytes.len() - 1);
    for cut in cuts {
        for read in read_both(&bytes[..cut], false) {
            assert!(
                matches!(read, Err(Groth16Error::Truncated { .. })),
                "cut at {cut}: {read:?}"
            );
        }
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    let (_, bytes) = fixture();
    let mut longer = bytes.clone();
    longer.push(0);
    for read in read_both(&longer, true) {
        assert!(
            matches!(read, Err(Groth16Error::TrailingBytes { extra: 1 })),
            "{read:?}"
        );
    }
}

#[test]
fn a_huge_count_does_not_allocate_it() {
    let (params, bytes) = fixture();
    let mut bad = bytes.clone();
    let h_count = layout(params)[1] - 4;
    bad[h_count..h_count + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    for read in read_both(&bad, false) {
        assert!(
            matches!(
                read,
                Err(Groth16Error::Truncated {
                    section: Section::H,
                    ..
                })
            ),
            "{read:?}"
        );
    }
}

#[test]
fn corrupted_points_are_invalid() {
    let (params, bytes) = fixture();
    let l_start = layout(params)[2];
    let mut bad = bytes.clone();
    // Change a coordinate byte of l[1]: the point leaves the curve.
    bad[l_start + 96 + 60] ^= 0x5a;
    for read in read_both(&bad, false) {
        assert!(
            matches!(
                read,
                Err(Groth16Error::InvalidPoint {
                    section: Section::L,
                    index: 1
                })
            ),
            "{read:?}"
        );
    }
    // The verifying key is always checked.
    let mut bad = bytes.clone();
    bad[10] ^= 1;
    assert!(matches!(
        Parameters::read(&bad[..], false),
        Err(Groth16Error::InvalidPoint {
            section: Section::VerifyingKey("alpha_g1"),
            ..
        })
    ));
}

/// Decoding a mapped file in blocks (their pages released as they are decoded) gives the same
/// parameters whatever the block, and errors name the point's index in its section, not in its
/// block.
#[test]
fn mapped_files_decode_in_blocks() {
    let (params, bytes) = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    std::fs::write(&path, bytes).unwrap();
    let mapped = MappedParameters::<cuzk_groth16::Bls12>::open(&path, Check::Curve).unwrap();
    for block_bytes in [0, 96, 2 * 96, 5 * 96 + 7, 1 << 20] {
        assert_eq!(
            &mapped.to_parameters_in_blocks(block_bytes).unwrap(),
            params
        );
    }
    let l_start = layout(params)[2];
    let mut bad = bytes.clone();
    bad[l_start + 2 * 96 + 60] ^= 0x5a;
    std::fs::write(&path, &bad).unwrap();
    let mapped = MappedParameters::<cuzk_groth16::Bls12>::open(&path, Check::Curve).unwrap();
    for block_bytes in [96, 2 * 96, 1 << 20] {
        let read = mapped.to_parameters_in_blocks(block_bytes);
        assert!(
            matches!(
                read,
                Err(Groth16Error::InvalidPoint {
                    section: Section::L,
                    index: 2
                })
            ),
            "blocks of {block_bytes} bytes: {read:?}"
        );
    }
}

/// A point on the curve y² = x³ + 4 outside the prime-order subgroup.
fn off_subgroup_point() -> [u8; 96] {
    let mut x = Fp::from(1u64);
    loop {
        let rhs = x.square() * x + Fp::from(4u64);
        if let Some(y) = Option::<Fp>::from(rhs.sqrt()) {
            let mut bytes = [0u8; 96];
            bytes[..48].copy_from_slice(&x.to_bytes_be());
            bytes[48..].copy_from_slice(&y.to_bytes_be());
            let unchecked = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&bytes));
            let checked = Option::<G1Affine>::from(G1Affine::from_uncompressed(&bytes));
            if unchecked.is_some() && checked.is_none() {
                return bytes;
            }
        }
        x += Fp::from(1u64);
    }
}

#[test]
fn subgroup_is_checked_only_when_asked() {
    let (params, bytes) = fixture();
    let a_start = layout(params)[3];
    let mut bad = bytes.clone();
    bad[a_start..a_start + 96].copy_from_slice(&off_subgroup_point());
    for read in read_both(&bad, true) {
        assert!(
            matches!(
                read,
                Err(Groth16Error::InvalidPoint {
                    section: Section::A,
                    index: 0
                })
            ),
            "{read:?}"
        );
    }
    for read in read_both(&bad, false) {
        assert!(read.is_ok());
    }
}

#[test]
fn infinity_in_a_query_is_an_error() {
    let (params, bytes) = fixture();
    let h_start = layout(params)[1];
    let mut bad = bytes.clone();
    let mut infinity = [0u8; 96];
    infinity[0] = 0x40;
    bad[h_start..h_start + 96].copy_from_slice(&infinity);
    for read in read_both(&bad, true) {
        assert!(
            matches!(
                read,
                Err(Groth16Error::PointAtInfinity {
                    section: Section::H,
                    index: 0
                })
            ),
            "{read:?}"
        );
    }
}

#[test]
fn verifying_key_round_trip_and_truncation() {
    let (params, _) = fixture();
    let mut bytes = Vec::new();
    params.vk.write(&mut bytes).unwrap();
    assert_eq!(bytes.len(), params.vk.encoded_len());
    assert_eq!(
        VerifyingKey::<cuzk_groth16::Bls12>::read(&bytes[..]).unwrap(),
        params.vk
    );
    for cut in [0, 95, 96, 300, bytes.len() - 4, bytes.len() - 1] {
        assert!(matches!(
            VerifyingKey::<cuzk_groth16::Bls12>::read(&bytes[..cut]),
            Err(Groth16Error::Truncated { .. })
        ));
    }
}

#[test]
fn wrong_number_of_public_inputs_is_an_error() {
    let (params, _) = fixture();
    let pvk = prepare_verifying_key(&params.vk);
    let proof = Proof::new(
        G1Affine::generator(),
        cuzk_field::G2Affine::generator(),
        G1Affine::generator(),
    );
    let err = verify_proof(&pvk, &proof, &inputs(2)).unwrap_err();
    assert!(
        matches!(
            err,
            Groth16Error::WrongInputCount {
                expected: 3,
                got: 2
            }
        ),
        "{err:?}"
    );
    assert!(!verify_proof(&pvk, &proof, &inputs(3)).unwrap());
}

#[test]
fn proof_bytes_of_the_wrong_length_are_an_error() {
    assert!(matches!(
        Proof::<cuzk_groth16::Bls12>::from_bytes(&[0u8; 191]),
        Err(Groth16Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        Proof::<cuzk_groth16::Bls12>::read(&[0u8; 100][..]),
        Err(Groth16Error::Truncated { .. })
    ));
    assert!(matches!(
        Proof::<cuzk_groth16::Bls12>::read_many(&[0u8; 385], 2),
        Err(Groth16Error::LengthMismatch { .. })
    ));
}

// Valid proofs with flipped bytes are checked in the `cuzk` crate, which can prove. Here:
// decoding arbitrary bytes returns a value or an error, never a panic.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Proof::<cuzk_groth16::Bls12>::from_bytes(&bytes);
        let _ = VerifyingKey::<cuzk_groth16::Bls12>::read(&bytes[..]);
        let _ = Parameters::<cuzk_groth16::Bls12>::read(&bytes[..], true);
    }
}
