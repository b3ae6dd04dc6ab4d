//! The MSM driver against the naive CPU sum: resident and streamed inputs in both scalar forms,
//! both kinds of bucket sums, both sorts, random and adversarial scalars and bases.

use super::*;

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
    let measured = |run: &dyn Fn() -> Result<C::Projective, crate::gpu::GpuMsmError>| {
        let before = exec.allocated();
        let result = run();
        if let (Some((b0, n0)), Some((b1, n1))) = (before, exec.allocated()) {
            let bound = if input == Input::Device {
                plan.device_bytes()
            } else {
                plan.streamed_device_bytes()
            };
            assert!(
                b1 - b0 <= bound,
                "{input:?}: the call allocated {} bytes, its plan states {bound}",
                b1 - b0
            );
            assert!(
                n1 - n0 <= crate::gpu::MAX_CALL_BUFFERS,
                "{input:?}: {} buffers",
                n1 - n0
            );
        }
        result
    };
    let result = match input {
        Input::Device => {
            let (b, s) = (to_device(base_bytes), to_device(scalar_bytes));
            measured(&|| {
                pippenger::msm::<E, C>(exec, plan, Source::Device(&b), Source::Device(&s), form)
            })
        }
        Input::Pinned => {
            let pin = |bytes: &[u8]| {
                let mut pinned = exec.alloc_staging(bytes.len()).unwrap();
                exec.fill_staging(&mut pinned, bytes).unwrap();
                pinned
            };
            let (b, s) = (pin(base_bytes), pin(scalar_bytes));
            measured(&|| {
                pippenger::msm::<E, C>(
                    exec,
                    plan,
                    Source::Pinned(E::staged(&b)),
                    Source::Pinned(E::staged(&s)),
                    form,
                )
            })
        }
        Input::Mixed => {
            let b = to_device(base_bytes);
            measured(&|| {
                pippenger::msm::<E, C>(
                    exec,
                    plan,
                    Source::Device(&b),
                    Source::Host(scalar_bytes),
                    form,
                )
            })
        }
        Input::Host => measured(&|| {
            pippenger::msm::<E, C>(
                exec,
                plan,
                Source::Host(base_bytes),
                Source::Host(scalar_bytes),
                form,
            )
        }),
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
        (false, crate::gpu::Group::G1) => &[1, 3, 6, 9, 10, 14],
        (false, crate::gpu::Group::G2) => &[1, 3, 6, 10],
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
        let plan =
            MsmPlan::with_window_bits(n, crate::gpu::Group::G1, exec.sm_count(), 6, n / 5 + 1);
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
                MsmPlan::with_window_bits(n, crate::gpu::Group::G1, exec.sm_count(), 8, max_chunk);
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
            let plan = MsmPlan::new(n, crate::gpu::Group::G1, exec.sm_count());
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
            let plan = MsmPlan::new(n, crate::gpu::Group::G2, exec.sm_count());
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
