//! Differential tests of the GPU kernels and drivers: field and point operations against blstrs,
//! MSMs against the naive CPU sum, batch additions against the CPU path, on random inputs (seeded)
//! and adversarial ones. Every test runs on each available executor: the host emulator (feature
//! `emu`) and the device (feature `cuda`, skipped with a message when there is none).
#![allow(unsafe_code)]

use cuzk_field::layout::{FpLimbs, FrLimbs};
use cuzk_field::{Bitmap, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group as _;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::batch;
use super::curve::{affine_bytes, GpuCurve};
use super::exec::{as_bytes, Exec};
use super::pippenger::{self, Source};
use super::plan::{Accumulation, MsmPlan, MAX_BINS};
use super::testops::{msm_test_field, msm_test_point, FieldOp, PointOp};
use super::ScalarForm;
use crate::{naive_msm, MsmError, Selection, G1, G2};

/// Runs the body once per available executor, with `$exec` bound to it and `$device` telling
/// whether it is a real device (tests use larger sizes there).
macro_rules! for_each_exec {
    (|$exec:ident, $device:ident| $body:block) => {{
        #[cfg(feature = "emu")]
        {
            let $exec = &super::exec::EmuExec::new(4);
            let $device = false;
            $body
        }
        #[cfg(feature = "cuda")]
        {
            if let Some(dev) = cuzk_gpu::device_for_tests() {
                let kernels = super::exec::GpuKernels::load(&dev).expect("the msm module loads");
                let cache = super::cache::BufferCache::default();
                let staging = super::cache::BufferCache::default();
                let $exec = &super::exec::GpuExec {
                    kernels: &kernels,
                    cache: &cache,
                    staging: &staging,
                    profile: None,
                    lane: 0,
                };
                let $device = true;
                $body
            }
        }
    }};
}

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn fp_bytes(x: &Fp) -> Vec<u8> {
    FpLimbs::from(*x)
        .0
        .iter()
        .flat_map(|l| l.to_le_bytes())
        .collect()
}

fn fp2_bytes(x: &Fp2) -> Vec<u8> {
    let mut out = fp_bytes(&x.c0());
    out.extend(fp_bytes(&x.c1()));
    out
}

/// What the tests need of a group beyond [`GpuCurve`].
trait TestCurve: GpuCurve {
    type Coordinate: Field;
    fn coordinates(p: &Self::Affine) -> (Self::Coordinate, Self::Coordinate);
    fn coordinate_bytes(x: &Self::Coordinate) -> Vec<u8>;
    fn generator() -> Self::Projective;

    /// XYZZ bytes of `p` with a random scale λ: (x·λ², y·λ³, λ², λ³); zeros for infinity.
    fn xyzz_bytes(p: &Self::Projective, rng: &mut ChaCha20Rng) -> Vec<u8> {
        let a = Self::to_affine(p);
        if bool::from(a.is_identity()) {
            return vec![0; Self::GROUP.xyzz_bytes()];
        }
        let (x, y) = Self::coordinates(&a);
        let lambda = Self::Coordinate::random(&mut *rng);
        let l2 = lambda.square();
        let l3 = l2 * lambda;
        [x * l2, y * l3, l2, l3]
            .iter()
            .flat_map(Self::coordinate_bytes)
            .collect()
    }

    /// `n` points: a random start, then steps of a random point (cheap to make, all distinct
    /// for the sizes used).
    fn points(n: usize, rng: &mut ChaCha20Rng) -> Vec<Self::Affine> {
        let step = Self::generator() * Scalar::random(&mut *rng);
        let mut p = Self::generator() * Scalar::random(&mut *rng);
        let projective: Vec<Self::Projective> = (0..n)
            .map(|_| {
                let q = p;
                Self::add_assign(&mut p, &step);
                q
            })
            .collect();
        Self::batch_to_affine(&projective)
    }
}

impl TestCurve for G1 {
    type Coordinate = Fp;
    fn coordinates(p: &G1Affine) -> (Fp, Fp) {
        (p.x(), p.y())
    }
    fn coordinate_bytes(x: &Fp) -> Vec<u8> {
        fp_bytes(x)
    }
    fn generator() -> G1Projective {
        G1Projective::generator()
    }
}

impl TestCurve for G2 {
    type Coordinate = Fp2;
    fn coordinates(p: &G2Affine) -> (Fp2, Fp2) {
        (p.x(), p.y())
    }
    fn coordinate_bytes(x: &Fp2) -> Vec<u8> {
        fp2_bytes(x)
    }
    fn generator() -> G2Projective {
        G2Projective::generator()
    }
}

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
    let adds =
        super::testops::msm_bench_madd::<E, C>(exec, &out, &bases, n_bases, threads, 128, iters)
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
        super::testops::msm_bench_madd::<E, C>(exec, &out, &bases, 3, threads, 128, 1).is_err()
    );
    assert!(super::testops::msm_bench_madd::<E, C>(exec, &out, &bases, 2, 100, 128, 1).is_err());
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

// ---------------------------------------------------------------------------------------------
// MSM.
// ---------------------------------------------------------------------------------------------

/// Scalars as canonical bytes.
fn canonical(scalars: &[Scalar]) -> Vec<[u8; 32]> {
    scalars.iter().map(Scalar::to_bytes_le).collect()
}

/// The emulator's checks of the lanes' ordering calls, which the streamed MSM tests rely on to
/// catch a missing wait: each broken rule fails the call that breaks it.
#[cfg(feature = "emu")]
#[test]
fn emulator_rejects_unordered_lane_work() {
    use super::exec::{Arg, EmuExec};
    let exec = EmuExec::new(4);
    let bytes = [7u8; 64];
    // A kernel reading a buffer whose copy the compute lane did not wait for.
    let mut slot = exec.alloc(64).unwrap();
    exec.copies_wait_for(&exec.record_compute().unwrap())
        .unwrap();
    exec.upload_pinned(&mut slot, &bytes[..], 0..64).unwrap();
    let err = exec
        .launch("msm_digits", 1, 1, &[Arg::Buf(&slot)])
        .unwrap_err();
    assert!(err.to_string().contains("did not wait"), "{err}");
    let mut out = [0u8; 64];
    assert!(exec.download(&slot, &mut out).is_err());
    exec.compute_waits_for_copies().unwrap();
    exec.download(&slot, &mut out).unwrap();
    assert_eq!(out, bytes);
    // A copy into a buffer the compute lane used after the point the copy lane waited for.
    let err = exec
        .upload_pinned(&mut slot, &bytes[..], 0..64)
        .unwrap_err();
    assert!(err.to_string().contains("did not wait"), "{err}");
    exec.copies_wait_for(&exec.record_compute().unwrap())
        .unwrap();
    exec.upload_pinned(&mut slot, &bytes[..], 0..64).unwrap();
    // A fresh buffer is the compute lane's until the copy lane waits for its allocation.
    let mut fresh = exec.alloc(64).unwrap();
    assert!(exec.upload_pinned(&mut fresh, &bytes[..], 0..64).is_err());
}

/// The emulator's side lane runs late, as late as a device may: only when the main lane waits
/// for it or the host does. Reading its results without a wait reads stale data, and dropping
/// a buffer that queued side work uses fails every later call; so the MSM tests, which run
/// groups of windows on two lanes, fail if the driver forgets a wait.
#[cfg(feature = "emu")]
#[test]
fn emulator_runs_the_side_lane_late() {
    use super::exec::EmuExec;
    let exec = EmuExec::new(4);
    let side = exec.lane(1);
    let mut buf = exec.alloc(16).unwrap();
    let mut other = exec.alloc(16).unwrap();
    side.compute_waits_for(&exec.record_compute().unwrap())
        .unwrap();
    side.zero(&mut buf).unwrap();
    side.upload(&mut other, &[3u8; 16]).unwrap();
    let mut out = [0u8; 16];
    // Not waited for: the allocation's poison is still there.
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [0xa5; 16]);
    // The main lane waits for the side lane's work up to an event: what came before it has
    // run, what came after has not.
    let cleared = side.record_compute().unwrap();
    side.copy(&other, &mut buf).unwrap();
    exec.compute_waits_for(&cleared).unwrap();
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [0; 16]);
    exec.compute_waits_for(&side.record_compute().unwrap())
        .unwrap();
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [3; 16]);
    // A download on the side lane waits for everything queued there.
    side.zero(&mut other).unwrap();
    side.download(&other, &mut out).unwrap();
    assert_eq!(out, [0; 16]);
    // A buffer dropped while queued side work uses it: every later call fails.
    side.zero(&mut buf).unwrap();
    drop(buf);
    let err = exec.alloc(8).unwrap_err();
    assert!(err.to_string().contains("side-lane operation"), "{err}");
}

/// Where an MSM's bases and scalars are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    /// In device memory.
    Device,
    /// In pinned host memory, streamed from there.
    Pinned,
    /// In pageable host memory, streamed through pinned staging buffers.
    Host,
    /// Bases in device memory, scalars streamed from pageable host memory.
    Mixed,
}

/// Runs one MSM through the driver with its inputs in `input`, in either scalar form.
fn run_msm<E: Exec, C: GpuCurve>(
    exec: &E,
    plan: &MsmPlan,
    bases: &[C::Affine],
    scalars: &[Scalar],
    form: ScalarForm,
    input: Input,
) -> C::Projective {
    let canon = canonical(scalars);
    let scalar_bytes: &[u8] = match form {
        // SAFETY: Scalar is blst_fr, four u64: no padding.
        ScalarForm::Montgomery => unsafe { as_bytes(scalars) },
        // SAFETY: byte arrays have no padding.
        ScalarForm::Canonical => unsafe { as_bytes(&canon) },
    };
    let base_bytes = affine_bytes::<C>(bases);
    let to_device = |bytes: &[u8]| {
        let mut buf = exec.alloc(bytes.len()).unwrap();
        exec.upload(&mut buf, bytes).unwrap();
        buf
    };
    let result = match input {
        Input::Device => {
            let (b, s) = (to_device(base_bytes), to_device(scalar_bytes));
            pippenger::msm::<E, C>(exec, plan, Source::Device(&b), Source::Device(&s), form)
        }
        Input::Pinned => {
            let pin = |bytes: &[u8]| {
                let mut pinned = exec.alloc_staging(bytes.len()).unwrap();
                exec.fill_staging(&mut pinned, bytes).unwrap();
                pinned
            };
            let (b, s) = (pin(base_bytes), pin(scalar_bytes));
            pippenger::msm::<E, C>(
                exec,
                plan,
                Source::Pinned(E::staged(&b)),
                Source::Pinned(E::staged(&s)),
                form,
            )
        }
        Input::Mixed => {
            let b = to_device(base_bytes);
            pippenger::msm::<E, C>(
                exec,
                plan,
                Source::Device(&b),
                Source::Host(scalar_bytes),
                form,
            )
        }
        Input::Host => pippenger::msm::<E, C>(
            exec,
            plan,
            Source::Host(base_bytes),
            Source::Host(scalar_bytes),
            form,
        ),
    };
    result.expect("the MSM runs")
}

/// Checks one MSM against the naive sum in every mode: resident, both forms, and streamed from
/// pageable (Montgomery) and pinned (canonical) memory, with batch-affine bucket sums (all
/// windows in one group); then Montgomery with the XYZZ bucket sums (resident, the scatter cut
/// into three parts per window) and with batch-affine groups of one window (bases resident,
/// scalars streamed).
fn check_msm<E: Exec, C: TestCurve>(
    exec: &E,
    plan: &MsmPlan,
    bases: &[C::Affine],
    scalars: &[Scalar],
    what: &str,
) {
    let want = naive_msm::<C>(bases, scalars).unwrap();
    let affine = plan
        .clone()
        .with_accumulation(Accumulation::BatchAffine)
        .with_affine_scratch(usize::MAX);
    // Sorted in three parts per window by the single-pass scatter (parts sized for the windows
    // of c − 1 bits, whose entries fill half the buckets: `narrow_density`), and in two passes:
    // the first in blocks of 64 threads (few host threads in the emulator), the second sorting
    // bins of up to 16 entries in shared memory and larger ones (skewed scalars, or a random bin
    // over the limit) the other way.
    let density = plan.narrow_density();
    let parts = (8 * plan.chunk_len * density).div_ceil(3);
    let xyzz = plan
        .clone()
        .with_accumulation(Accumulation::Xyzz)
        .with_scatter_region(parts)
        .with_two_pass_sort(false);
    let k = plan.buckets_per_window();
    let two_pass = affine
        .clone()
        .with_scatter_region(parts)
        .with_sort_tile_threads(64)
        .with_sort_stage_limit(16);
    if plan.n_points > 0 && k > 1 && plan.chunk_len * density <= 12 * k.min(MAX_BINS) {
        assert!(two_pass.sort_bins().is_some());
    }
    // Groups of one window on two lanes (the side lane runs every other group): scratch for
    // two one-window groups; and on one lane, with no scratch budget at all.
    let lane_scratch = affine.affine_scratch(1).total();
    let one_window_groups = affine.clone().with_affine_scratch(2 * lane_scratch);
    if plan.n_windows > 2 {
        assert_eq!(one_window_groups.affine_group_windows, 1);
        assert_eq!(one_window_groups.affine_lanes_used(), 2);
    }
    let one_window_one_lane = affine.clone().with_affine_scratch(0);
    assert_eq!(one_window_one_lane.affine_group_windows, 1);
    assert_eq!(one_window_one_lane.affine_lanes_used(), 1);
    // Every round's inversion through the tree (the default inverts these sizes blockwise);
    // and up the tree to a level of at most 20 values (G2: its top's 1024), inverted blockwise.
    let tree = affine.clone().with_affine_block_inverse_max(0);
    let tree_then_blocks = affine.clone().with_affine_block_inverse_max(20);
    // The other way of ending the last chunk than the default's (MsmPlan::fuses_first_reduce):
    // G1 writes its buckets and runs the reduction's first level on its own, G2 fuses them.
    let other_tail = affine.clone().with_fused_reduce(!affine.fused_reduce);
    let runs = [
        (&affine, ScalarForm::Montgomery, Input::Device),
        (&affine, ScalarForm::Canonical, Input::Device),
        (&affine, ScalarForm::Montgomery, Input::Host),
        (&affine, ScalarForm::Canonical, Input::Pinned),
        (&xyzz, ScalarForm::Montgomery, Input::Device),
        (&one_window_groups, ScalarForm::Montgomery, Input::Mixed),
        (&one_window_one_lane, ScalarForm::Canonical, Input::Device),
        (&tree, ScalarForm::Montgomery, Input::Device),
        (&tree_then_blocks, ScalarForm::Canonical, Input::Device),
        (&two_pass, ScalarForm::Montgomery, Input::Host),
        (&other_tail, ScalarForm::Montgomery, Input::Host),
    ];
    for (plan, form, input) in runs {
        let got = run_msm::<E, C>(exec, plan, bases, scalars, form, input);
        assert_eq!(
            got,
            want,
            "{} MSM of {} points ({what}), window {}, chunks of {}, {:?} in groups of {} windows \
             on {} lanes, scatter in {} parts (bins {:?}), first reduction level fused {}, \
             {form:?}, inputs {input:?}",
            C::NAME,
            bases.len(),
            plan.window_bits,
            plan.chunk_len,
            plan.accumulation,
            plan.affine_group_windows,
            plan.affine_lanes_used(),
            plan.scatter_parts(),
            plan.sort_bins(),
            plan.fuses_first_reduce(),
        );
    }
}

fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

fn check_random_msms<E: Exec, C: TestCurve>(exec: &E, device: bool, seed: u64) {
    let mut rng = rng(seed);
    let sizes: &[usize] = if device {
        &[0, 1, 2, 3, 100, 1000, 4097]
    } else {
        &[0, 1, 2, 3, 37]
    };
    for &n in sizes {
        let bases = C::points(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let plan = MsmPlan::new(n, C::GROUP, exec.sm_count());
        check_msm::<E, C>(exec, &plan, &bases, &scalars, "random, default plan");
    }
    // Window widths and chunkings the default plans do not reach at these sizes.
    let n = if device { 700 } else { 23 };
    let bases = C::points(n, &mut rng);
    let scalars = random_scalars(n, &mut rng);
    // Device reductions of zero (c ≤ 5), one (6 to 9), two (10 to 13) and three (14 to 17)
    // levels; the emulator, being slow, skips the widest.
    let windows: &[u32] = match (device, C::GROUP) {
        (true, _) => &[1, 2, 5, 6, 9, 10, 13, 14, 16],
        (false, super::Group::G1) => &[1, 3, 6, 9, 10, 14],
        (false, super::Group::G2) => &[1, 3, 6, 10],
    };
    for &c in windows {
        for max_chunk in [n, n / 3 + 1] {
            let plan = MsmPlan::with_window_bits(n, C::GROUP, exec.sm_count(), c, max_chunk);
            check_msm::<E, C>(exec, &plan, &bases, &scalars, "random, forced plan");
        }
        // Long segments over short runs: more complete runs per thread than it holds back (the
        // longest is what the planner gives large MSMs).
        for seg in [64, 256] {
            let mut plan = MsmPlan::with_window_bits(n, C::GROUP, exec.sm_count(), c, n / 2 + 1)
                .with_accumulation(Accumulation::Xyzz);
            plan.accumulate_seg = seg;
            check_msm::<E, C>(exec, &plan, &bases, &scalars, "random, long segments");
        }
    }
}

/// Streamed MSMs in five chunks, the last shorter, and in six with a shorter first chunk too:
/// both device slots and both pinned host slots of the staging ring are reused, so a missing
/// wait between the lanes fails (the emulator checks every ordering call, see
/// `emulator_rejects_unordered_lane_work`).
#[test]
fn streamed_msm_reuses_its_staging_ring() {
    for_each_exec!(|exec, device| {
        let mut rng = rng(12);
        let n = if device { 4000 } else { 23 };
        let bases = G1::points(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = naive_msm::<G1>(&bases, &scalars).unwrap();
        let plan = MsmPlan::with_window_bits(n, super::Group::G1, exec.sm_count(), 6, n / 5 + 1);
        assert_eq!(plan.n_chunks, 5);
        let short_first = plan.clone().with_first_chunk(plan.chunk_len / 3);
        assert_eq!(short_first.n_chunks, 6);
        for plan in [plan, short_first] {
            for input in [Input::Pinned, Input::Host, Input::Mixed] {
                let got =
                    run_msm::<_, G1>(exec, &plan, &bases, &scalars, ScalarForm::Montgomery, input);
                assert_eq!(
                    got, want,
                    "inputs {input:?}, first chunk {}",
                    plan.first_chunk_len
                );
            }
        }
    });
}

#[test]
fn g1_msm_matches_naive_on_random_inputs() {
    for_each_exec!(|exec, device| {
        check_random_msms::<_, G1>(exec, device, 10);
    });
}

#[test]
fn g2_msm_matches_naive_on_random_inputs() {
    for_each_exec!(|exec, device| {
        check_random_msms::<_, G2>(exec, device, 11);
    });
}

/// Adversarial scalars and bases: all zero, all one, all r − 1, one value repeated, very sparse,
/// around (r − 1)/2 (where the kernels negate), small values; bases with infinity and repeats.
fn check_adversarial_msms<E: Exec, C: TestCurve>(exec: &E, device: bool, seed: u64) {
    let mut rng = rng(seed);
    let n = if device { 3000 } else { 29 };
    let bases = C::points(n, &mut rng);
    let repeated = Scalar::random(&mut rng);
    let half = (Scalar::ZERO - Scalar::ONE) * Scalar::from(2u64).invert().unwrap();
    let cases: Vec<(&str, Vec<Scalar>)> = vec![
        ("all zero", vec![Scalar::ZERO; n]),
        ("all one", vec![Scalar::ONE; n]),
        ("all r - 1", vec![-Scalar::ONE; n]),
        ("one value repeated", vec![repeated; n]),
        (
            "half and neighbours",
            (0..n)
                .map(|i| half + Scalar::from((i % 3) as u64) - Scalar::ONE)
                .collect(),
        ),
        (
            "small values",
            (0..n).map(|i| Scalar::from((i % 5) as u64)).collect(),
        ),
        (
            "very sparse",
            (0..n)
                .map(|_| {
                    if rng.next_u32() % 16 == 0 {
                        Scalar::random(&mut rng)
                    } else {
                        Scalar::ZERO
                    }
                })
                .collect(),
        ),
        (
            "2^k",
            (0..n)
                .map(|i| Scalar::from(2u64).pow_vartime([(i % 255) as u64]))
                .collect(),
        ),
    ];
    let windows: &[u32] = if device { &[5, 13] } else { &[3, 7] };
    for (what, scalars) in &cases {
        for &c in windows {
            let plan = MsmPlan::with_window_bits(n, C::GROUP, exec.sm_count(), c, n / 2 + 1);
            check_msm::<E, C>(exec, &plan, &bases, scalars, what);
        }
    }
    // Bases with the point at infinity and repeated points (also a point and its negation).
    let mut odd_bases = bases.clone();
    for i in (0..n).step_by(4) {
        odd_bases[i] = C::Affine::identity();
    }
    for i in (1..n).step_by(5) {
        odd_bases[i] = odd_bases[1];
    }
    let negation = C::to_affine(&{
        let mut z = C::identity();
        C::sub_assign_mixed(&mut z, &odd_bases[1]);
        z
    });
    odd_bases[2] = negation;
    let scalars = random_scalars(n, &mut rng);
    let same = vec![repeated; n];
    for &c in windows {
        let plan = MsmPlan::with_window_bits(n, C::GROUP, exec.sm_count(), c, n);
        check_msm::<E, C>(
            exec,
            &plan,
            &odd_bases,
            &scalars,
            "bases with infinity and repeats",
        );
        check_msm::<E, C>(exec, &plan, &odd_bases, &same, "repeated bases and scalars");
    }
}

#[test]
fn g1_msm_matches_naive_on_adversarial_inputs() {
    for_each_exec!(|exec, device| {
        check_adversarial_msms::<_, G1>(exec, device, 20);
    });
}

#[test]
fn g2_msm_matches_naive_on_adversarial_inputs() {
    for_each_exec!(|exec, device| {
        check_adversarial_msms::<_, G2>(exec, device, 21);
    });
}

/// The two-pass sort with several first-pass tiles per window, whose blocks claim room in the
/// same bins one after another (the other tests' chunks are shorter than a tile on the
/// emulator), and bins both within and over the second pass's stage (a scalar repeated on every
/// seventh point fills one bucket of each window); in one chunk and in two, the second
/// shorter; with both kinds of bucket sums (XYZZ's read only the sorted entries, batch-affine
/// rounds the buckets' offsets too, which the second pass writes).
#[test]
fn two_pass_sort_spans_tiles() {
    for_each_exec!(|exec, device| {
        let _ = device;
        let mut rng = rng(22);
        let n = 1500;
        let bases = G1::points(n, &mut rng);
        let mut scalars = random_scalars(n, &mut rng);
        let repeated = scalars[0];
        for s in scalars.iter_mut().step_by(7) {
            *s = repeated;
        }
        let want = naive_msm::<G1>(&bases, &scalars).unwrap();
        for max_chunk in [n, n / 2 + 100] {
            let plan =
                MsmPlan::with_window_bits(n, super::Group::G1, exec.sm_count(), 8, max_chunk);
            for accumulation in [Accumulation::Xyzz, Accumulation::BatchAffine] {
                let plan = plan
                    .clone()
                    .with_accumulation(accumulation)
                    .with_scatter_region((8 * plan.chunk_len).div_ceil(3))
                    .with_sort_tile_threads(32)
                    .with_sort_stage_limit(64);
                let sort = plan.sort_bins().expect("sorted in two passes");
                assert!(plan.chunk_len > sort.tile(), "several tiles per window");
                let got = run_msm::<_, G1>(
                    exec,
                    &plan,
                    &bases,
                    &scalars,
                    ScalarForm::Montgomery,
                    Input::Device,
                );
                assert_eq!(
                    got, want,
                    "chunks of {}, {sort:?}, {accumulation:?}",
                    plan.chunk_len
                );
            }
        }
    });
}

/// Larger MSMs on a device, against blst's MSM (itself checked against the naive sum by the
/// CPU tests), with the default plans.
#[test]
fn msm_matches_blst_at_larger_sizes() {
    for_each_exec!(|exec, device| {
        if !device {
            return;
        }
        let mut rng = rng(30);
        for log_n in [12usize, 16, 18] {
            let n = 1 << log_n;
            let bases = G1::points(n, &mut rng);
            let scalars = random_scalars(n, &mut rng);
            let want = crate::fast::msm::<G1>(&bases, &scalars).unwrap();
            let plan = MsmPlan::new(n, super::Group::G1, exec.sm_count());
            for input in [Input::Device, Input::Pinned, Input::Host] {
                let got =
                    run_msm::<_, G1>(exec, &plan, &bases, &scalars, ScalarForm::Montgomery, input);
                assert_eq!(got, want, "G1 2^{log_n}, inputs {input:?}");
            }
            // Five chunks, the last one shorter: both staging rings wrap around.
            let streamed = plan.with_max_chunk(n / 5 + 1);
            assert_eq!(streamed.n_chunks, 5);
            for input in [Input::Pinned, Input::Host] {
                let got = run_msm::<_, G1>(
                    exec,
                    &streamed,
                    &bases,
                    &scalars,
                    ScalarForm::Montgomery,
                    input,
                );
                assert_eq!(got, want, "G1 2^{log_n} in chunks, inputs {input:?}");
            }
            // A skewed distribution: a quarter of the scalars share one value.
            let mut skewed = scalars.clone();
            for s in skewed.iter_mut().step_by(4) {
                *s = scalars[0];
            }
            let want = crate::fast::msm::<G1>(&bases, &skewed).unwrap();
            let got = run_msm::<_, G1>(
                exec,
                &plan,
                &bases,
                &skewed,
                ScalarForm::Montgomery,
                Input::Device,
            );
            assert_eq!(got, want, "G1 2^{log_n} skewed");
        }
        for log_n in [12usize, 15] {
            let n = 1 << log_n;
            let bases = G2::points(n, &mut rng);
            let scalars = random_scalars(n, &mut rng);
            let want = crate::fast::msm::<G2>(&bases, &scalars).unwrap();
            let plan = MsmPlan::new(n, super::Group::G2, exec.sm_count());
            let got = run_msm::<_, G2>(
                exec,
                &plan,
                &bases,
                &scalars,
                ScalarForm::Canonical,
                Input::Host,
            );
            assert_eq!(got, want, "G2 2^{log_n}");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Batch addition.
// ---------------------------------------------------------------------------------------------

fn check_batch_add<E: Exec, C: TestCurve>(exec: &E, device: bool, seed: u64) {
    let mut rng = rng(seed);
    for n in if device {
        vec![0usize, 1, 63, 64, 65, 5000, 70_000]
    } else {
        vec![0, 1, 63, 64, 65, 200]
    } {
        let mut bases = C::points(n, &mut rng);
        if n > 3 {
            bases[3] = C::Affine::identity();
            bases[2] = bases[1];
        }
        let base_bytes = affine_bytes::<C>(&bases);
        let mut dev = exec.alloc(base_bytes.len()).unwrap();
        exec.upload(&mut dev, base_bytes).unwrap();
        let bitmap = Bitmap::from_bools((0..n).map(|_| rng.next_u32() % 3 != 0));
        let indices: Vec<u32> = (0..n / 2)
            .map(|_| rng.next_u32() % n.max(1) as u32)
            .collect();
        let indices = if n == 0 { vec![] } else { indices };
        for selection in [
            Selection::All,
            Selection::Bitmap(&bitmap),
            Selection::Indices(&indices),
        ] {
            let want = crate::batch_add::<C>(&bases, selection).unwrap();
            let got =
                batch::batch_add::<E, C>(exec, &dev, n, selection).expect("batch addition runs");
            assert_eq!(
                got,
                want,
                "{} batch addition of {n} bases, {selection:?}",
                C::NAME
            );
        }
        // Bad selections fail as on the CPU.
        let short = Bitmap::zeros(n + 1);
        let err = batch::batch_add::<E, C>(exec, &dev, n, Selection::Bitmap(&short)).unwrap_err();
        assert!(matches!(
            err,
            super::GpuMsmError::Input(MsmError::BitmapLength { .. })
        ));
        let bad = [n as u32];
        let err = batch::batch_add::<E, C>(exec, &dev, n, Selection::Indices(&bad)).unwrap_err();
        assert!(matches!(
            err,
            super::GpuMsmError::Input(MsmError::IndexOutOfRange { .. })
        ));
    }
}

#[test]
fn g1_batch_add_matches_cpu() {
    for_each_exec!(|exec, device| {
        check_batch_add::<_, G1>(exec, device, 40);
    });
}

#[test]
fn g2_batch_add_matches_cpu() {
    for_each_exec!(|exec, device| {
        check_batch_add::<_, G2>(exec, device, 41);
    });
}

// ---------------------------------------------------------------------------------------------
// The public device API.
// ---------------------------------------------------------------------------------------------

/// A `GpuMsm` with `n` random G1 bases on the host and on the device, for the tests of the public
/// device API; `None` on a machine without a GPU.
#[cfg(feature = "cuda")]
struct ApiFixture {
    gpu: super::GpuMsm,
    rng: ChaCha20Rng,
    bases: Vec<G1Affine>,
    dev_bases: cuzk_gpu::DeviceBuffer<<G1 as GpuCurve>::AffineLimbs>,
}

#[cfg(feature = "cuda")]
impl ApiFixture {
    fn new(seed: u64, n: usize) -> Option<Self> {
        let device = cuzk_gpu::device_for_tests()?;
        let gpu = super::GpuMsm::new(&device).expect("kernels load");
        let mut rng = rng(seed);
        let bases = G1::points(n, &mut rng);
        let dev_bases = gpu.upload_bases::<G1>(&bases).unwrap();
        Some(Self {
            gpu,
            rng,
            bases,
            dev_bases,
        })
    }

    /// The MSM of the device bases with `scalars`, uploaded in Montgomery form.
    fn msm_on_device(&self, scalars: &[Scalar]) -> G1Projective {
        let dev_scalars = self.gpu.upload_scalars(scalars).unwrap();
        self.gpu
            .msm::<G1>(
                super::Bases::Device(&self.dev_bases),
                super::Scalars::Device(&dev_scalars, ScalarForm::Montgomery),
            )
            .unwrap()
    }
}

#[cfg(feature = "cuda")]
#[test]
fn gpu_msm_api_checks_inputs_and_agrees() {
    use super::{Bases, Scalars};
    let Some(mut f) = ApiFixture::new(50, 5000) else {
        return;
    };
    let scalars = random_scalars(f.bases.len(), &mut f.rng);
    let (gpu, bases, dev_bases) = (&f.gpu, f.bases.as_slice(), &f.dev_bases);
    let want = crate::fast::msm::<G1>(bases, &scalars).unwrap();
    assert_eq!(f.msm_on_device(&scalars), want);
    assert_eq!(
        gpu.msm::<G1>(Bases::Host(bases), Scalars::Host(&scalars))
            .unwrap(),
        want
    );
    let canon = canonical(&scalars);
    assert_eq!(
        gpu.msm::<G1>(Bases::Device(dev_bases), Scalars::HostCanonical(&canon))
            .unwrap(),
        want
    );
    // Pinned inputs, in both scalar forms, and pinned bases with pageable scalars.
    let pinned_bases = gpu.pin_bases::<G1>(bases).unwrap();
    let pinned_scalars = gpu.pin_scalars(&scalars).unwrap();
    let canon_limbs: Vec<FrLimbs> = canon
        .iter()
        .map(|b| {
            FrLimbs(std::array::from_fn(|i| {
                u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap())
            }))
        })
        .collect();
    let pinned_canon = gpu.device().pin(&canon_limbs).unwrap();
    for (pinned, form) in [
        (&pinned_scalars, ScalarForm::Montgomery),
        (&pinned_canon, ScalarForm::Canonical),
    ] {
        assert_eq!(
            gpu.msm::<G1>(Bases::Pinned(&pinned_bases), Scalars::Pinned(pinned, form))
                .unwrap(),
            want,
            "{form:?}"
        );
    }
    assert_eq!(
        gpu.msm::<G1>(Bases::Pinned(&pinned_bases), Scalars::Host(&scalars))
            .unwrap(),
        want
    );
    let err = gpu
        .msm::<G1>(Bases::Pinned(&pinned_bases), Scalars::Host(&scalars[1..]))
        .unwrap_err();
    assert!(matches!(
        err,
        super::GpuMsmError::Input(MsmError::LengthMismatch { .. })
    ));

    let err = gpu
        .msm::<G1>(Bases::Host(&bases[1..]), Scalars::Host(&scalars))
        .unwrap_err();
    assert!(matches!(
        err,
        super::GpuMsmError::Input(MsmError::LengthMismatch { .. })
    ));
    let mut bad = canon.clone();
    bad[7] = [0xff; 32];
    let err = gpu
        .msm::<G1>(Bases::Host(bases), Scalars::HostCanonical(&bad))
        .unwrap_err();
    assert!(matches!(
        err,
        super::GpuMsmError::Input(MsmError::NonCanonicalScalar { index: 7 })
    ));

    let all = gpu.batch_add::<G1>(dev_bases, Selection::All).unwrap();
    assert_eq!(all, crate::batch_add::<G1>(bases, Selection::All).unwrap());
    assert!(gpu.fp_mul_rate(1, 4, 1).unwrap() > 0.0);
}

#[cfg(feature = "cuda")]
#[test]
fn gpu_msm_reuses_its_workspace() {
    use super::{Bases, Scalars};
    let Some(mut f) = ApiFixture::new(51, 3000) else {
        return;
    };
    let n = f.bases.len();
    let gpu = &f.gpu;
    assert_eq!(gpu.workspace_bytes(), 0);
    let plan = gpu.plan(n, crate::gpu::Group::G1);
    // The second and third calls run in the first call's buffers, as it left them.
    for round in 0..3 {
        let scalars = random_scalars(n, &mut f.rng);
        let got = f.msm_on_device(&scalars);
        assert_eq!(
            got,
            crate::fast::msm::<G1>(&f.bases, &scalars).unwrap(),
            "round {round}"
        );
        let held = gpu.workspace_bytes();
        assert!(
            held > 0 && held <= plan.device_bytes(),
            "round {round}: {held} bytes held, plan states {}",
            plan.device_bytes()
        );
    }
    // Another size: the old buffers that do not fit are freed, the result is still right.
    let m = 700;
    let scalars = random_scalars(m, &mut f.rng);
    let got = gpu
        .msm::<G1>(Bases::Host(&f.bases[..m]), Scalars::Host(&scalars))
        .unwrap();
    assert_eq!(
        got,
        crate::fast::msm::<G1>(&f.bases[..m], &scalars).unwrap()
    );
    // Pageable inputs went through pinned staging, which the next call may reuse.
    assert_eq!(
        gpu.staging_bytes(),
        gpu.streamed_plan(m, crate::gpu::Group::G1)
            .host_staging_bytes()
    );
    gpu.release_workspace();
    assert_eq!(gpu.workspace_bytes(), 0);
    assert_eq!(gpu.staging_bytes(), 0);
}
