//! With the `cuda` feature, compiles `kernels/msm/*.cu` into `$OUT_DIR/msm.fatbin` (nvcc). The
//! `emu` feature's host build of the same kernels is cuzk-gpu's (`kernels/emu/`).
fn main() {
    cuzk_gpu_build::build_script("msm", &["msm"]);
}
