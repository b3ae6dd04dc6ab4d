//! Differential tests of the GPU kernels and drivers: field and point operations against blstrs,
//! MSMs against the naive CPU sum, batch additions against the CPU path, on random inputs (seeded)
//! and adversarial ones. Every test runs on each available executor: the host emulator (feature
//! `emu`) and the device (feature `cuda`, skipped with a message when there is none).
//!
//! By area: `arith` (field and point operations, the addition probe), `msm` (the MSM driver in
//! every mode), `batch_add` (batch addition), `split` (a query's split and what reads it), `emulator` (the emulator's own ordering checks) and
//! `api` (the public `GpuMsm` API, on a device only). This module holds what they share: the
//! executor loop, seeded randomness, and the device layouts of field elements and points.
#![allow(unsafe_code)]

use cuzk_field::layout::FpLimbs;
use cuzk_field::{Bitmap, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group as _;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::gpu::batch;
use crate::gpu::curve::{affine_bytes, GpuCurve};
use crate::gpu::exec::{as_bytes, Exec};
use crate::gpu::pippenger::{self, Source};
use crate::gpu::plan::{Accumulation, MsmPlan, MAX_BINS};
use crate::gpu::testops::{msm_test_field, msm_test_point, FieldOp, PointOp};
use crate::gpu::ScalarForm;
use crate::{naive_msm, MsmError, Selection, G1, G2};

/// Runs the body once per available executor, with `$exec` bound to it and `$device` telling
/// whether it is a real device (tests use larger sizes there).
macro_rules! for_each_exec {
    (|$exec:ident, $device:ident| $body:block) => {{
        #[cfg(feature = "emu")]
        {
            let $exec = &crate::gpu::exec::EmuExec::new(4);
            let $device = false;
            $body
        }
        #[cfg(feature = "cuda")]
        {
            if let Some(dev) = cuzk_gpu::device_for_tests() {
                let kernels =
                    crate::gpu::exec::GpuKernels::load(&dev).expect("the msm module loads");
                let cache = crate::gpu::cache::BufferCache::default();
                let lent = crate::gpu::cache::BufferCache::default();
                let staging = crate::gpu::cache::BufferCache::default();
                let $exec = &crate::gpu::exec::GpuExec {
                    kernels: &kernels,
                    cache: &cache,
                    workspace: None,
                    lent: &lent,
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

/// Scalars as canonical bytes.
fn canonical(scalars: &[Scalar]) -> Vec<[u8; 32]> {
    scalars.iter().map(Scalar::to_bytes_le).collect()
}

fn random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

mod arith;
mod batch_add;
mod msm;
mod split;

#[cfg(feature = "cuda")]
mod api;
#[cfg(feature = "emu")]
mod emulator;
