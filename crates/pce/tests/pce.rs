//! The pre-compiled path against full synthesis: equal assignments (densities included) for
//! random satisfiable circuits and the built-in ones, and a typed error for every way a file or
//! a circuit can fail to match.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use cuzk::circuits::{PorepShaped, SquaringChain, UnusedVariables, WithInputs};
use cuzk_field::Scalar;
use cuzk_pce::{record, to_bytes, Origin, PceCache, PceError, PreCompiled};
use ff::Field;
use proptest::prelude::*;

/// Records `circuit`, proves it through the file (in memory and memory-mapped), and checks the
/// assignment equals full synthesis field by field.
fn check<C: Circuit<Scalar> + Clone>(circuit: C) {
    let full = cuzk_groth16::synthesize(circuit.clone()).expect("full synthesis");
    let rec = record(circuit.clone()).expect("record");
    assert_eq!(rec.a_aux_density, full.a_aux_density);
    assert_eq!(rec.b_input_density, full.b_input_density);
    assert_eq!(rec.b_aux_density, full.b_aux_density);
    let pc = PreCompiled::from_recording(&rec).expect("encode and check");
    let got = pc
        .synthesize(circuit.clone())
        .expect("pre-compiled synthesis");
    assert_eq!(got, full);
    // a, b, c have room for the evaluation domain: the prover pads them without reallocating.
    let domain = got.a.len().next_power_of_two();
    for v in [&got.a, &got.b, &got.c] {
        assert!(v.capacity() >= domain, "{} of {domain}", v.capacity());
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.pce");
    cuzk_pce::write_file(&rec, &path).unwrap();
    let mapped = PreCompiled::open(&path).expect("open mapped");
    assert_eq!(mapped.topology(), pc.topology());
    assert_eq!(mapped.synthesize(circuit).expect("mapped synthesis"), full);
}

#[test]
fn built_in_circuits_match_full_synthesis() {
    check(SquaringChain::new(3u64.into(), 40));
    check(WithInputs::new(
        (1..=9u64).map(|i| Scalar::from(i * 1000 + 7)).collect(),
    ));
    check(UnusedVariables::new(
        5u64.into(),
        11u64.into(),
        99u64.into(),
    ));
    for log in [8, 10, 12] {
        check(PorepShaped::new(log, 7));
    }
}

/// A coefficient or value: the special cases the products take shortcuts for, and others.
fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        Just(Scalar::ZERO),
        Just(Scalar::ONE),
        Just(-Scalar::ONE),
        Just(Scalar::from(2u64)),
        Just(-Scalar::from(2u64)),
        (3u64..100).prop_map(Scalar::from),
        // Around 2^40, where the products stop summing coefficients as integers.
        ((1u64 << 39)..(1u64 << 41)).prop_map(Scalar::from),
        ((1u64 << 39)..(1u64 << 41)).prop_map(|x| -Scalar::from(x)),
        any::<u64>().prop_map(|x| Scalar::from(x).square().square() + Scalar::from(x)),
    ]
}

/// A linear combination as `(variable choice, coefficient)` terms; the choice is taken modulo
/// the variables allocated so far, so terms repeat variables (merged) and name inputs too.
type Terms = Vec<(usize, Scalar)>;

#[derive(Clone, Debug)]
enum Op {
    Aux(Scalar),
    Input(Scalar),
    /// `A·z · B·z = C·z + w`, with a fresh `w` allocated so the constraint holds (or, with
    /// `wrong`, so it fails).
    Constraint {
        a: Terms,
        b: Terms,
        c: Terms,
        wrong: bool,
    },
}

#[derive(Clone, Debug)]
struct Random {
    ops: Vec<Op>,
}

fn op() -> impl Strategy<Value = Op> {
    let terms = || proptest::collection::vec((any::<usize>(), scalar()), 0..6);
    prop_oneof![
        2 => scalar().prop_map(Op::Aux),
        1 => scalar().prop_map(Op::Input),
        4 => (terms(), terms(), terms()).prop_map(|(a, b, c)| Op::Constraint { a, b, c, wrong: false }),
    ]
}

impl Circuit<Scalar> for Random {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut vars: Vec<(Variable, Scalar)> = vec![(CS::one(), Scalar::ONE)];
        for op in self.ops {
            match op {
                Op::Aux(v) => vars.push((cs.alloc(|| "aux", || Ok(v))?, v)),
                Op::Input(v) => vars.push((cs.alloc_input(|| "input", || Ok(v))?, v)),
                Op::Constraint { a, b, c, wrong } => {
                    let lc = |terms: &Terms| {
                        let mut lc = LinearCombination::zero();
                        let mut value = Scalar::ZERO;
                        for &(i, coeff) in terms {
                            let (var, v) = vars[i % vars.len()];
                            lc = lc + (coeff, var);
                            value += v * coeff;
                        }
                        (lc, value)
                    };
                    let ((la, va), (lb, vb), (lc_, vc)) = (lc(&a), lc(&b), lc(&c));
                    let mut w = va * vb - vc;
                    if wrong {
                        w += Scalar::ONE;
                    }
                    let wv = cs.alloc(|| "w", || Ok(w))?;
                    vars.push((wv, w));
                    cs.enforce(|| "c", |_| la, |_| lb, |_| lc_ + wv);
                }
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_circuits_match_full_synthesis(ops in proptest::collection::vec(op(), 0..40)) {
        let circuit = Random { ops };
        let full = cuzk_groth16::synthesize(circuit.clone()).unwrap();
        prop_assert_eq!(full.first_unsatisfied(), None);
        let pc = PreCompiled::from_recording(&record(circuit.clone()).unwrap()).unwrap();
        prop_assert_eq!(pc.synthesize(circuit).unwrap(), full);
    }

    #[test]
    fn an_unsatisfied_witness_is_reported_at_the_same_constraint(
        ops in proptest::collection::vec(op(), 1..40),
        pick in any::<usize>(),
    ) {
        let mut circuit = Random { ops };
        let constraints: Vec<usize> = circuit.ops.iter().enumerate()
            .filter(|(_, o)| matches!(o, Op::Constraint { .. }))
            .map(|(i, _)| i)
            .collect();
        prop_assume!(!constraints.is_empty());
        let pc = PreCompiled::from_recording(&record(circuit.clone()).unwrap()).unwrap();
        if let Op::Constraint { wrong, .. } = &mut circuit.ops[constraints[pick % constraints.len()]] {
            *wrong = true;
        }
        let index = cuzk_groth16::synthesize(circuit.clone()).unwrap().first_unsatisfied().unwrap();
        match pc.synthesize(circuit) {
            Err(PceError::Unsatisfied { index: got }) => prop_assert_eq!(got, index),
            other => prop_assert!(false, "expected Unsatisfied {{ index: {} }}, got {:?}", index, other),
        }
    }
}

fn porep_bytes() -> Vec<u8> {
    to_bytes(&record(PorepShaped::new(8, 1)).unwrap()).unwrap()
}

/// Opens `bytes` as a file and returns the error.
fn open_err(bytes: &[u8]) -> PceError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pce");
    std::fs::write(&path, bytes).unwrap();
    let err = PreCompiled::open(&path).expect_err("a bad file must not open");
    // The in-memory reader agrees.
    let again = PreCompiled::from_bytes(bytes).expect_err("a bad file must not open");
    assert_eq!(format!("{err}"), format!("{again}"));
    err
}

#[test]
fn a_truncated_file_is_an_error() {
    let bytes = porep_bytes();
    for len in [
        0,
        5,
        100,
        cuzk_pce::format::HEADER_LEN,
        bytes.len() - 8,
        bytes.len() - 1,
    ] {
        match open_err(&bytes[..len]) {
            PceError::Truncated { expected, got } => {
                assert_eq!(got, len as u64);
                assert!(expected > got);
            }
            other => panic!("truncated to {len}: {other:?}"),
        }
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut bytes = porep_bytes();
    bytes.extend_from_slice(&[0; 8]);
    assert!(matches!(
        open_err(&bytes),
        PceError::TrailingBytes { extra: 8 }
    ));
}

#[test]
fn a_flipped_byte_fails_a_checksum() {
    let bytes = porep_bytes();
    let header = cuzk_pce::format::HEADER_LEN;
    // In the counts, the topology hash and the checksum itself: the header checksum.
    for at in [20, 40, 90, 130] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(
            matches!(
                open_err(&bad),
                PceError::ChecksumMismatch { what: "header" }
            ),
            "byte {at}"
        );
    }
    // Anywhere in the body (coefficients, matrices, densities): the body checksum.
    for at in [header, header + 40, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(
            matches!(open_err(&bad), PceError::ChecksumMismatch { what: "body" }),
            "byte {at}"
        );
    }
}

#[test]
fn another_version_or_magic_is_an_error() {
    let mut bytes = porep_bytes();
    bytes[8] = 2;
    assert!(matches!(
        open_err(&bytes),
        PceError::UnsupportedVersion {
            found: 2,
            supported: 1
        }
    ));
    let mut bytes = porep_bytes();
    bytes[0] = b'X';
    assert!(matches!(open_err(&bytes), PceError::BadMagic));
}

/// `x` then `y` allocated, or `x`, a constraint, then `y`: the same counts, another shape.
#[derive(Clone)]
struct Order {
    interleaved: bool,
}

impl Circuit<Scalar> for Order {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
        if self.interleaved {
            cs.enforce(
                || "x = 1",
                |lc| lc + x,
                |lc| lc + CS::one(),
                |lc| lc + CS::one(),
            );
        }
        let y = cs.alloc(|| "y", || Ok(Scalar::ONE))?;
        if !self.interleaved {
            cs.enforce(
                || "x = 1",
                |lc| lc + x,
                |lc| lc + CS::one(),
                |lc| lc + CS::one(),
            );
        }
        cs.enforce(
            || "y = 1",
            |lc| lc + y,
            |lc| lc + CS::one(),
            |lc| lc + CS::one(),
        );
        Ok(())
    }
}

fn mismatch<C: Circuit<Scalar>>(pc: &PreCompiled, circuit: C) -> &'static str {
    match pc.synthesize(circuit) {
        Err(PceError::TopologyMismatch { what, .. }) => what,
        other => panic!("expected a topology mismatch, got {other:?}"),
    }
}

#[test]
fn another_topology_is_an_error() {
    let pc = PreCompiled::from_recording(&record(PorepShaped::new(9, 1)).unwrap()).unwrap();
    assert_eq!(
        mismatch(&pc, PorepShaped::new(10, 1)),
        "the number of private variables"
    );
    assert_eq!(
        mismatch(&pc, SquaringChain::new(3u64.into(), 5)),
        "the number of private variables"
    );
    // The same circuit with other values is the same topology.
    assert!(pc.synthesize(PorepShaped::new(9, 2)).is_ok());

    let inputs =
        PreCompiled::from_recording(&record(WithInputs::new(vec![Scalar::ONE; 3])).unwrap())
            .unwrap();
    assert_eq!(
        mismatch(&inputs, WithInputs::new(vec![Scalar::ONE; 4])),
        "the number of public inputs"
    );

    // A witness checked against one topology is refused by another.
    let other = PreCompiled::from_recording(&record(PorepShaped::new(8, 1)).unwrap()).unwrap();
    let witness = pc.witness(PorepShaped::new(9, 3)).unwrap();
    assert!(matches!(
        other.evaluate(witness),
        Err(PceError::TopologyMismatch { .. })
    ));

    let order =
        PreCompiled::from_recording(&record(Order { interleaved: false }).unwrap()).unwrap();
    assert_eq!(
        mismatch(&order, Order { interleaved: true }),
        "the shape fingerprint"
    );
}

/// `x · x = y`, with `y` given (so it can be wrong).
#[derive(Clone)]
struct Square {
    x: u64,
    y: u64,
}

impl Circuit<Scalar> for Square {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let one = cs.alloc(|| "one", || Ok(Scalar::ONE))?;
        cs.enforce(|| "one", |lc| lc + one, |lc| lc + one, |lc| lc + one);
        let x = cs.alloc(|| "x", || Ok(Scalar::from(self.x)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(self.y)))?;
        cs.enforce(|| "x² = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn an_unsatisfied_witness_is_an_error() {
    let pc = PreCompiled::from_recording(&record(Square { x: 3, y: 9 }).unwrap()).unwrap();
    assert!(pc.synthesize(Square { x: 4, y: 16 }).is_ok());
    assert!(matches!(
        pc.synthesize(Square { x: 3, y: 10 }),
        Err(PceError::Unsatisfied { index: 1 })
    ));
}

#[test]
fn a_failing_alloc_is_a_synthesis_error() {
    #[derive(Clone)]
    struct NoWitness;
    impl Circuit<Scalar> for NoWitness {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Err(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x", |lc| lc + x, |lc| lc, |lc| lc);
            Ok(())
        }
    }
    // Recording runs no closure, so a circuit without a witness records.
    let pc = PreCompiled::from_recording(&record(NoWitness).unwrap()).unwrap();
    assert!(matches!(
        pc.synthesize(NoWitness),
        Err(PceError::Synthesis(SynthesisError::AssignmentMissing))
    ));
}

#[test]
fn the_cache_records_once_and_replaces_a_damaged_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache = PceCache::new(dir.path().join("pce"));
    let key = "porep_shaped/2^9";
    let (first, origin) = cache
        .load_or_record(key, || PorepShaped::new(9, 0))
        .unwrap();
    assert_eq!(origin, Origin::Recorded);
    let (again, origin) = cache
        .load_or_record(key, || -> PorepShaped { panic!("must not record again") })
        .unwrap();
    assert_eq!(origin, Origin::Loaded);
    assert_eq!(first.topology(), again.topology());
    assert_eq!(
        again.synthesize(PorepShaped::new(9, 5)).unwrap(),
        cuzk_groth16::synthesize(PorepShaped::new(9, 5)).unwrap()
    );
    drop((first, again));

    let path = cache.path(key);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        PreCompiled::open(&path),
        Err(PceError::ChecksumMismatch { what: "body" })
    ));
    let (_, origin) = cache
        .load_or_record(key, || PorepShaped::new(9, 0))
        .unwrap();
    assert_eq!(origin, Origin::Replaced);
    assert!(PreCompiled::open(&path).is_ok());
    // Only the file itself is left: no temporary files.
    assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 1);
}

#[test]
fn concurrent_first_uses_each_get_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache = PceCache::new(dir.path());
    let topologies: Vec<[u8; 32]> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    cache
                        .load_or_record("k", || PorepShaped::new(9, 0))
                        .unwrap()
                        .0
                        .topology()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(topologies.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 1);
}

/// The device image carries the file's matrices: its row pointers and columns word for word, the
/// coefficient ids narrowed to a byte for the PoRep-shaped table, each section 32-byte aligned,
/// and about 5 bytes a non-zero (plus 12 a row of row pointers).
#[test]
fn the_device_image_carries_the_matrices() {
    let rec = record(PorepShaped::new(12, 0)).unwrap();
    let pc = PreCompiled::from_recording(&rec).unwrap();
    let image = pc.device_image().unwrap();
    let layout = image.layout();
    assert_eq!(layout, &pc.image_layout());
    assert_eq!(layout.id_bytes, 1, "{} coefficients", rec.coeffs.len());
    assert_eq!(image.words().len(), layout.words);
    assert_eq!(
        layout.nnz,
        [rec.a.nnz() as u64, rec.b.nnz() as u64, rec.c.nnz() as u64]
    );
    let words = image.words();
    for (m, [rp, cols, ids]) in [&rec.a, &rec.b, &rec.c].into_iter().zip(&layout.matrices) {
        for section in [rp, cols, ids] {
            assert_eq!(section.start % 8, 0, "32-byte aligned");
        }
        assert_eq!(&words[rp.clone()], &m.row_ptr[..]);
        assert_eq!(&words[cols.clone()], &m.cols[..]);
        let bytes: Vec<u8> = words[ids.clone()]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let narrowed: Vec<u32> = bytes[..m.coeffs.len()]
            .iter()
            .map(|&b| u32::from(b))
            .collect();
        assert_eq!(narrowed, m.coeffs);
    }
    let nnz: u64 = layout.nnz.iter().sum();
    let per_nonzero = layout.bytes_per_nonzero();
    let rows_part = 12.0 * layout.rows as f64 / nnz as f64;
    assert!(
        (per_nonzero - 5.0 - rows_part).abs() < 0.1,
        "{per_nonzero} bytes a non-zero"
    );
}

/// A witness goes to a prover only with the circuit it was computed for: another topology's
/// circuit is refused, with both hashes' prefixes named.
#[test]
fn a_witness_is_proved_only_with_its_own_circuit() {
    let small = std::sync::Arc::new(
        PreCompiled::from_recording(&record(PorepShaped::new(8, 0)).unwrap()).unwrap(),
    );
    let large = std::sync::Arc::new(
        PreCompiled::from_recording(&record(PorepShaped::new(10, 0)).unwrap()).unwrap(),
    );
    let witness = small.witness(PorepShaped::new(8, 1)).unwrap();
    match cuzk_pce::PartitionInput::precompiled(large.clone(), witness.clone()) {
        Err(PceError::TopologyMismatch { what, .. }) => assert!(what.contains("topology")),
        other => panic!("{other:?}"),
    }
    let input = cuzk_pce::PartitionInput::precompiled(small.clone(), witness).unwrap();
    assert_eq!(input.num_constraints(), small.num_constraints());
    let shape = input.shape();
    assert_eq!(shape.num_aux, small.num_aux());
    assert_eq!(shape.a_aux_density, &small.densities()[0]);
}
