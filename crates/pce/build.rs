//! With the `cuda` feature, compiles `kernels/pce/*.cu` into `$OUT_DIR/pce.fatbin`.
fn main() {
    cuzk_gpu_build::build_script("pce", &["pce"]);
}
