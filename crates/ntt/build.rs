//! With the `cuda` feature, compiles `kernels/ntt/*.cu` into `$OUT_DIR/ntt.fatbin`.
fn main() {
    cuzk_gpu_build::build_script("ntt", &["ntt"]);
}
