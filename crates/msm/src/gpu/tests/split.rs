//! The device split against a host split, and what reads it: the batch addition over device
//! indices and the MSM whose bases are gathered chunk by chunk (`Source::Gathered`).

use proptest::prelude::{any, prop_assert_eq, proptest, ProptestConfig};

use super::*;
use crate::gpu::split::{split_count, split_scatter, SplitOut, SplitTotals};

/// The host split of the values whose bit is set in `members`: the ones' ranks, the others'
/// ranks and scalars, in order (what cuzk-pipeline's `split_query` gives).
fn host_split(values: &[Scalar], members: &Bitmap) -> (Vec<u32>, Vec<u32>, Vec<Scalar>) {
    let (mut ones, mut other_bases, mut other_scalars) = (vec![], vec![], vec![]);
    for (rank, i) in members.iter_ones().enumerate() {
        let v = values[i];
        if v == Scalar::ONE {
            ones.push(rank as u32);
        } else if !bool::from(v.is_zero()) {
            other_bases.push(rank as u32);
            other_scalars.push(v);
        }
    }
    (ones, other_bases, other_scalars)
}

/// The device split's outputs, on the device, with its totals.
struct Split<B> {
    ones: B,
    other_bases: B,
    other_scalars: B,
    totals: SplitTotals,
}

fn device_split<E: Exec>(exec: &E, values: &[Scalar], members: &Bitmap) -> Split<E::Buf> {
    // SAFETY: Scalar is blst_fr, four u64: no padding.
    let bytes = unsafe { as_bytes(values) };
    let mut dev_values = exec.alloc(bytes.len()).unwrap();
    exec.upload(&mut dev_values, bytes).unwrap();
    let before = exec.allocated();
    let counted = split_count(exec, &dev_values, values.len(), members).expect("split counts");
    let totals = counted
        .as_ref()
        .map_or_else(SplitTotals::default, |c| c.totals);
    let split = Split {
        ones: exec.alloc(4 * totals.ones).unwrap(),
        other_bases: exec.alloc(4 * totals.others).unwrap(),
        other_scalars: exec.alloc(32 * totals.others).unwrap(),
        totals,
    };
    if let (Some((b0, n0)), Some((b1, n1))) = (before, exec.allocated()) {
        let outputs = 4 * totals.ones + 36 * totals.others;
        let scratch = crate::gpu::split_scratch_bytes(values.len());
        assert_eq!(
            b1 - b0,
            scratch + outputs,
            "the split's scratch is as stated"
        );
        assert!(n1 - n0 <= crate::gpu::split_scratch_buffers(values.len()) + 3);
    }
    if let Some(counted) = &counted {
        let out = SplitOut {
            ones: &split.ones,
            other_bases: &split.other_bases,
            other_scalars: &split.other_scalars,
        };
        split_scatter(exec, counted, &dev_values, values.len(), &out).expect("split scatters");
    }
    split
}

fn download_u32<E: Exec>(exec: &E, buf: &E::Buf, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; E::size(buf)];
    exec.download(buf, &mut bytes).unwrap();
    bytes[..4 * n]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn download_scalars<E: Exec>(exec: &E, buf: &E::Buf, n: usize) -> Vec<Scalar> {
    let mut bytes = vec![0u8; E::size(buf)];
    exec.download(buf, &mut bytes).unwrap();
    bytes[..32 * n]
        .chunks_exact(32)
        .map(|c| {
            let mut limbs = [0u32; 8];
            for (l, b) in limbs.iter_mut().zip(c.chunks_exact(4)) {
                *l = u32::from_le_bytes(b.try_into().unwrap());
            }
            // The device copies the stored (Montgomery) limbs.
            Scalar::try_from(cuzk_field::layout::FrLimbs(limbs)).expect("a reduced scalar")
        })
        .collect()
}

/// Values mixing 0, 1 and random scalars by `kinds` (0, 1, else random), and a membership of the
/// given density in percent (the first `inputs` always members, as the A query's inputs are).
fn values_and_members(
    kinds: &[u8],
    density: u32,
    inputs: usize,
    seed: u64,
) -> (Vec<Scalar>, Bitmap) {
    let mut rng = rng(seed);
    let values = kinds
        .iter()
        .map(|k| match k % 3 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut rng),
        })
        .collect();
    let members =
        Bitmap::from_bools((0..kinds.len()).map(|i| i < inputs || rng.next_u32() % 100 < density));
    (values, members)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The device split is the host's, element for element (each word writes in order).
    #[test]
    fn device_split_matches_host(
        kinds in proptest::collection::vec(0u8..3, 0..400),
        density in 0u32..=100,
        inputs in 0usize..70,
        seed in any::<u64>(),
    ) {
        for_each_exec!(|exec, _device| {
            let inputs = inputs.min(kinds.len());
            let (values, members) = values_and_members(&kinds, density, inputs, seed);
            let (ones, other_bases, other_scalars) = host_split(&values, &members);
            let split = device_split(exec, &values, &members);
            prop_assert_eq!(split.totals.members, members.count_ones());
            prop_assert_eq!(split.totals.ones, ones.len());
            prop_assert_eq!(split.totals.others, other_bases.len());
            prop_assert_eq!(download_u32(exec, &split.ones, ones.len()), ones);
            prop_assert_eq!(download_u32(exec, &split.other_bases, other_bases.len()), other_bases);
            prop_assert_eq!(
                download_scalars(exec, &split.other_scalars, other_scalars.len()),
                other_scalars
            );
        });
    }
}

#[test]
fn split_rejects_a_bitmap_of_another_length() {
    for_each_exec!(|exec, _device| {
        let values = vec![Scalar::ONE; 70];
        // SAFETY: as in `device_split`.
        let bytes = unsafe { as_bytes(&values) };
        let mut dev = exec.alloc(bytes.len()).unwrap();
        exec.upload(&mut dev, bytes).unwrap();
        let err = split_count(exec, &dev, 70, &Bitmap::ones(71))
            .err()
            .expect("a longer bitmap fails");
        assert!(matches!(
            err,
            crate::gpu::GpuMsmError::Input(MsmError::BitmapLength { .. })
        ));
    });
}

/// The ones' batch addition over the device split's indices and the tail MSM with its bases
/// gathered chunk by chunk from the resident ones, against the CPU over the host split.
fn check_split_sums<E: Exec, C: TestCurve>(exec: &E, device: bool, seed: u64) {
    let mut rng = rng(seed);
    let n_values = if device { 5000 } else { 150 };
    let kinds: Vec<u8> = (0..n_values).map(|_| (rng.next_u32() % 3) as u8).collect();
    let (values, members) = values_and_members(&kinds, 70, 5, seed);
    let bases = C::points(members.count_ones(), &mut rng);
    let base_bytes = affine_bytes::<C>(&bases);
    let mut dev_bases = exec.alloc(base_bytes.len()).unwrap();
    exec.upload(&mut dev_bases, base_bytes).unwrap();
    let (ones, other_bases, other_scalars) = host_split(&values, &members);
    let split = device_split(exec, &values, &members);

    let want = crate::batch_add::<C>(&bases, Selection::Indices(&ones)).unwrap();
    let got =
        batch::batch_add_device_indices::<E, C>(exec, &dev_bases, &split.ones, split.totals.ones)
            .expect("batch addition over device indices runs");
    assert_eq!(got, want, "{} ones", C::NAME);

    let gathered: Vec<C::Affine> = other_bases.iter().map(|&i| bases[i as usize]).collect();
    let want = naive_msm::<C>(&gathered, &other_scalars).unwrap();
    let n = other_scalars.len();
    // Several chunks (the last shorter), so that both staging slots are gathered into twice.
    let plan = MsmPlan::with_window_bits(n, C::GROUP, exec.sm_count(), 6, n / 5 + 1);
    assert!(plan.n_chunks >= 5);
    for plan in [plan.clone(), plan.with_first_chunk(n / 15 + 1)] {
        let before = exec.allocated();
        let got = pippenger::msm::<E, C>(
            exec,
            &plan,
            Source::Gathered {
                bases: &dev_bases,
                indices: &split.other_bases,
                kernel: crate::gpu::curve::kernels_of::<C>().gather,
            },
            Source::Device(&split.other_scalars),
            ScalarForm::Montgomery,
        )
        .expect("the gathered MSM runs");
        if let (Some((b0, _)), Some((b1, _))) = (before, exec.allocated()) {
            let bound = plan.streamed_device_bytes();
            assert!(
                b1 - b0 <= bound,
                "{} bytes, a streamed call's {bound}",
                b1 - b0
            );
        }
        assert_eq!(got, want, "{} tail MSM of {n} gathered points", C::NAME);
    }
}

#[test]
fn g1_split_sums_match_cpu() {
    for_each_exec!(|exec, device| {
        check_split_sums::<_, G1>(exec, device, 60);
    });
}

#[test]
fn g2_split_sums_match_cpu() {
    for_each_exec!(|exec, device| {
        check_split_sums::<_, G2>(exec, device, 61);
    });
}
