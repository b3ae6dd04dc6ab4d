//! Field and point arithmetic of the kernels against blstrs, and the mixed-addition probe.

use super::*;

// ---------------------------------------------------------------------------------------------
// Field arithmetic.
// ---------------------------------------------------------------------------------------------

fn edge_fps() -> Vec<Fp> {
    let mut out = vec![
        Fp::ZERO,
        Fp::ONE,
        -Fp::ONE,
        Fp::ONE.double(),
        -Fp::ONE.double(),
    ];
    // Small integers and their negations, and (p − 1)/2 ± 1.
    let half = Fp::ONE.double().invert().unwrap() * (-Fp::ONE);
    out.extend([
        half,
        half + Fp::ONE,
        half - Fp::ONE,
        Fp::from(3u64),
        -Fp::from(3u64),
    ]);
    // Limbs of all ones (as the kernels see them, in Montgomery form): partial products near
    // 2^64, whose carries run the length of every row of the multiplication.
    out.extend([
        fp_with_montgomery_form(380, -1),
        fp_with_montgomery_form(352, -1),
        fp_with_montgomery_form(380, -(1 << 32)),
    ]);
    out
}

fn expected_fp(op: FieldOp, a: &Fp, b: &Fp) -> Fp {
    match op {
        FieldOp::Add => a + b,
        FieldOp::Sub => a - b,
        FieldOp::Neg => -*a,
        FieldOp::Mul => a * b,
        FieldOp::Sqr => a.square(),
        FieldOp::Dbl => a.double(),
        FieldOp::Inv => a.invert().unwrap_or(Fp::ZERO),
    }
}

fn expected_fp2(op: FieldOp, a: &Fp2, b: &Fp2) -> Fp2 {
    match op {
        FieldOp::Add => a + b,
        FieldOp::Sub => a - b,
        FieldOp::Neg => -*a,
        FieldOp::Mul => a * b,
        FieldOp::Sqr => a.square(),
        FieldOp::Dbl => a.double(),
        FieldOp::Inv => a.invert().unwrap_or(Fp2::ZERO),
    }
}

#[test]
fn fp_operations_match_blstrs() {
    for_each_exec!(|exec, device| {
        let mut rng = rng(1);
        let edges = edge_fps();
        let mut a: Vec<Fp> = Vec::new();
        let mut b: Vec<Fp> = Vec::new();
        for x in &edges {
            for y in &edges {
                a.push(*x);
                b.push(*y);
            }
        }
        let random = if device { 1 << 14 } else { 256 };
        for _ in 0..random {
            a.push(Fp::random(&mut rng));
            b.push(Fp::random(&mut rng));
        }
        let ab: Vec<u8> = a.iter().flat_map(fp_bytes).collect();
        let bb: Vec<u8> = b.iter().flat_map(fp_bytes).collect();
        for op in FieldOp::ALL {
            let got = msm_test_field(exec, 1, op, &ab, &bb).expect("kernel runs");
            for (i, chunk) in got.chunks_exact(48).enumerate() {
                let want = fp_bytes(&expected_fp(op, &a[i], &b[i]));
                assert_eq!(
                    chunk,
                    &want[..],
                    "Fp {op:?} at {i}: a = {:?}, b = {:?}",
                    a[i],
                    b[i]
                );
            }
        }
    });
}

/// The Fp element whose Montgomery form (the limbs the kernels see) is the integer `2^k + c`
/// (c may be negative, 2^k + c in [1, p)): fp_inv works on that integer, and its variable-time
/// steps take different paths for powers of two, runs of ones and values near p.
fn fp_with_montgomery_form(k: u32, c: i64) -> Fp {
    let two = Fp::ONE.double();
    let c = if c < 0 {
        -Fp::from(c.unsigned_abs())
    } else {
        Fp::from(c as u64)
    };
    let r_inv = two.pow_vartime([384]).invert().unwrap();
    (two.pow_vartime([u64::from(k)]) + c) * r_inv
}

#[test]
fn fp_inverse_matches_blstrs_on_integer_edges() {
    for_each_exec!(|exec, _device| {
        // The helper gives the integers meant: 2^40 − 3 in the limbs.
        let limbs = FpLimbs::from(fp_with_montgomery_form(40, -3)).0;
        assert_eq!((limbs[0], limbs[1], limbs[2]), (0xffff_fffd, 0xff, 0));
        let mut a: Vec<Fp> = Vec::new();
        for k in 0..381 {
            a.push(fp_with_montgomery_form(k, 0));
            if k > 0 {
                a.push(fp_with_montgomery_form(k, -1));
            }
            // The integer p − 2^k.
            a.push(-fp_with_montgomery_form(k, 0));
        }
        // 1 to 64 and p − 1 to p − 64.
        for c in 0..64 {
            a.push(fp_with_montgomery_form(0, c));
            a.push(-fp_with_montgomery_form(0, c));
        }
        let ab: Vec<u8> = a.iter().flat_map(fp_bytes).collect();
        let got = msm_test_field(exec, 1, FieldOp::Inv, &ab, &ab).expect("kernel runs");
        for (i, chunk) in got.chunks_exact(48).enumerate() {
            let want = fp_bytes(&a[i].invert().unwrap_or(Fp::ZERO));
            assert_eq!(chunk, &want[..], "Fp inverse at {i}: a = {:?}", a[i]);
        }
    });
}

#[test]
fn fp2_operations_match_blstrs() {
    for_each_exec!(|exec, device| {
        let mut rng = rng(2);
        let edges: Vec<Fp2> = edge_fps()
            .iter()
            .flat_map(|x| {
                [
                    Fp2::new(*x, Fp::ZERO),
                    Fp2::new(Fp::ZERO, *x),
                    Fp2::new(*x, -*x),
                ]
            })
            .collect();
        let mut a: Vec<Fp2> = Vec::new();
        let mut b: Vec<Fp2> = Vec::new();
        for (i, x) in edges.iter().enumerate() {
            a.push(*x);
            b.push(edges[(i * 7 + 3) % edges.len()]);
        }
        let random = if device { 1 << 12 } else { 64 };
        for _ in 0..random {
            a.push(Fp2::random(&mut rng));
            b.push(Fp2::random(&mut rng));
        }
        let ab: Vec<u8> = a.iter().flat_map(fp2_bytes).collect();
        let bb: Vec<u8> = b.iter().flat_map(fp2_bytes).collect();
        for op in FieldOp::ALL {
            let got = msm_test_field(exec, 2, op, &ab, &bb).expect("kernel runs");
            for (i, chunk) in got.chunks_exact(96).enumerate() {
                let want = fp2_bytes(&expected_fp2(op, &a[i], &b[i]));
                assert_eq!(chunk, &want[..], "Fp2 {op:?} at {i}");
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Point arithmetic.
// ---------------------------------------------------------------------------------------------

fn check_point_ops<E: Exec, C: TestCurve>(exec: &E, random: usize, seed: u64) {
    let mut rng = rng(seed);
    let pts = C::points(random + 4, &mut rng);
    let proj = |a: &C::Affine| -> C::Projective { a.to_curve() };
    let inf = C::identity();
    let inf_affine = C::Affine::identity();
    let neg = |p: &C::Projective| -> C::Projective {
        let mut z = C::identity();
        let a = C::to_affine(p);
        C::sub_assign_mixed(&mut z, &a);
        z
    };
    // (a, b, p) triples: edge cases first, then random ones.
    let p0 = proj(&pts[0]);
    let p1 = proj(&pts[1]);
    let mut cases: Vec<(C::Projective, C::Projective, C::Affine)> = vec![
        (inf, inf, inf_affine),
        (inf, p0, pts[0]),
        (p0, inf, inf_affine),
        (p0, p0, pts[0]),
        (p0, neg(&p0), C::to_affine(&neg(&p0))),
        (C::double(&p0), p1, pts[1]),
        (p1, C::double(&p1), pts[0]),
    ];
    for i in 0..random {
        let a = proj(&pts[i + 2]);
        let b = if i % 3 == 0 {
            proj(&pts[i + 3])
        } else {
            C::double(&proj(&pts[i + 1]))
        };
        cases.push((a, b, pts[(i * 5 + 1) % pts.len()]));
    }
    let a_bytes: Vec<u8> = cases
        .iter()
        .flat_map(|c| C::xyzz_bytes(&c.0, &mut rng))
        .collect();
    let b_bytes: Vec<u8> = cases
        .iter()
        .flat_map(|c| C::xyzz_bytes(&c.1, &mut rng))
        .collect();
    let ps: Vec<C::Affine> = cases.iter().map(|c| c.2).collect();
    let p_bytes = affine_bytes::<C>(&ps).to_vec();
    for op in PointOp::ALL {
        let got =
            msm_test_point::<E, C>(exec, op, &a_bytes, &b_bytes, &p_bytes).expect("kernel runs");
        for (i, chunk) in got.chunks_exact(C::GROUP.xyzz_bytes()).enumerate() {
            let (a, b, p) = &cases[i];
            let want = match op {
                PointOp::AddAffine => {
                    let mut s = *a;
                    C::add_assign_mixed(&mut s, p);
                    s
                }
                PointOp::SubAffine => {
                    let mut s = *a;
                    C::sub_assign_mixed(&mut s, p);
                    s
                }
                PointOp::Add => {
                    let mut s = *a;
                    C::add_assign(&mut s, b);
                    s
                }
                PointOp::Double => C::double(a),
                PointOp::DoubleAffine => C::double(&proj(p)),
            };
            let got = C::projective_from_xyzz(chunk).expect("canonical coordinates");
            assert_eq!(got, want, "{} {op:?} at case {i}", C::NAME);
        }
    }
}

#[test]
fn g1_point_operations_match_blstrs() {
    for_each_exec!(|exec, device| {
        check_point_ops::<_, G1>(exec, if device { 4096 } else { 48 }, 3);
    });
}

#[test]
fn g2_point_operations_match_blstrs() {
    for_each_exec!(|exec, device| {
        check_point_ops::<_, G2>(exec, if device { 2048 } else { 16 }, 4);
    });
}

/// The mixed-addition probe (`msm_bench_madd_<g>`) sums the walk its kernel describes: thread
/// i adds bases[(i + j·40503) mod n], negated for odd j, for j < iters. One base makes every
/// other sum P + (−P), so infinity and the negation case run too.
fn check_addition_probe<E: Exec, C: TestCurve>(exec: &E, n_bases: usize, iters: u32, seed: u64) {
    const STRIDE: usize = 40503;
    let mut rng = rng(seed);
    let pts = C::points(n_bases, &mut rng);
    let threads = 128;
    let mut bases = exec.alloc(n_bases * C::GROUP.affine_bytes()).unwrap();
    exec.upload(&mut bases, affine_bytes::<C>(&pts)).unwrap();
    let out = exec.alloc(threads * C::GROUP.xyzz_bytes()).unwrap();
    let adds = crate::gpu::testops::msm_bench_madd::<E, C>(
        exec, &out, &bases, n_bases, threads, 128, iters,
    )
    .expect("probe runs");
    assert_eq!(adds, u64::from(iters) * threads as u64);
    let mut got = vec![0u8; threads * C::GROUP.xyzz_bytes()];
    exec.download(&out, &mut got).unwrap();
    for (i, chunk) in got.chunks_exact(C::GROUP.xyzz_bytes()).enumerate() {
        let mut want = C::identity();
        for j in 0..iters as usize {
            let p = &pts[(i + j * STRIDE) % n_bases];
            if j % 2 == 0 {
                C::add_assign_mixed(&mut want, p);
            } else {
                C::sub_assign_mixed(&mut want, p);
            }
        }
        let got = C::projective_from_xyzz(chunk).expect("canonical coordinates");
        assert_eq!(got, want, "{} probe, {n_bases} bases, thread {i}", C::NAME);
    }
    // A count of bases that is not a power of two, or threads that are not whole blocks, is
    // refused before launching.
    assert!(
        crate::gpu::testops::msm_bench_madd::<E, C>(exec, &out, &bases, 3, threads, 128, 1)
            .is_err()
    );
    assert!(
        crate::gpu::testops::msm_bench_madd::<E, C>(exec, &out, &bases, 2, 100, 128, 1).is_err()
    );
}

#[test]
fn addition_probe_sums_its_walk() {
    for_each_exec!(|exec, device| {
        let iters = if device { 64 } else { 6 };
        for n_bases in [1, 16] {
            check_addition_probe::<_, G1>(exec, n_bases, iters, 11);
            check_addition_probe::<_, G2>(exec, n_bases, iters, 12);
        }
    });
}
