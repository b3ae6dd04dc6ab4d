//! Batch addition on the device against the CPU path.

use super::*;

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
            let before = exec.allocated();
            let got =
                batch::batch_add::<E, C>(exec, &dev, n, selection).expect("batch addition runs");
            // What a caller reserves for a selection of indices (or all) covers the call.
            let selected = match selection {
                Selection::All => Some(n),
                Selection::Indices(indices) => Some(indices.len()),
                Selection::Bitmap(_) => None,
            };
            if let (Some(selected), Some((b0, _)), Some((b1, _))) =
                (selected, before, exec.allocated())
            {
                let bound = crate::gpu::batch_add_device_bytes(C::GROUP, selected, exec.sm_count());
                assert!(
                    b1 - b0 <= bound,
                    "{selection:?}: {} bytes, stated {bound}",
                    b1 - b0
                );
            }
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
            crate::gpu::GpuMsmError::Input(MsmError::BitmapLength { .. })
        ));
        let bad = [n as u32];
        let err = batch::batch_add::<E, C>(exec, &dev, n, Selection::Indices(&bad)).unwrap_err();
        assert!(matches!(
            err,
            crate::gpu::GpuMsmError::Input(MsmError::IndexOutOfRange { .. })
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
