//! The public device API ([`GpuMsm`](crate::gpu::GpuMsm)), on a device only.

use super::*;
use cuzk_field::layout::FrLimbs;

/// A `GpuMsm` with `n` random G1 bases on the host and on the device, for the tests of the public
/// device API; `None` on a machine without a GPU.
struct ApiFixture {
    gpu: crate::gpu::GpuMsm,
    rng: ChaCha20Rng,
    bases: Vec<G1Affine>,
    dev_bases: cuzk_gpu::DeviceBuffer<<G1 as GpuCurve>::AffineLimbs>,
}

impl ApiFixture {
    fn new(seed: u64, n: usize) -> Option<Self> {
        let device = cuzk_gpu::device_for_tests()?;
        let gpu = crate::gpu::GpuMsm::new(&device).expect("kernels load");
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
                crate::gpu::Bases::Device(&self.dev_bases),
                crate::gpu::Scalars::Device(&dev_scalars, ScalarForm::Montgomery),
            )
            .unwrap()
    }
}

#[test]
fn gpu_msm_api_checks_inputs_and_agrees() {
    use crate::gpu::{Bases, Scalars};
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
        crate::gpu::GpuMsmError::Input(MsmError::LengthMismatch { .. })
    ));

    let err = gpu
        .msm::<G1>(Bases::Host(&bases[1..]), Scalars::Host(&scalars))
        .unwrap_err();
    assert!(matches!(
        err,
        crate::gpu::GpuMsmError::Input(MsmError::LengthMismatch { .. })
    ));
    let mut bad = canon.clone();
    bad[7] = [0xff; 32];
    let err = gpu
        .msm::<G1>(Bases::Host(bases), Scalars::HostCanonical(&bad))
        .unwrap_err();
    assert!(matches!(
        err,
        crate::gpu::GpuMsmError::Input(MsmError::NonCanonicalScalar { index: 7 })
    ));

    let all = gpu.batch_add::<G1>(dev_bases, Selection::All).unwrap();
    assert_eq!(all, crate::batch_add::<G1>(bases, Selection::All).unwrap());
    assert!(gpu.fp_mul_rate(1, 4, 1).unwrap() > 0.0);
}

#[test]
fn gpu_msm_reuses_its_workspace() {
    use crate::gpu::{Bases, Scalars};
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
