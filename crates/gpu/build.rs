//! With the `cuda` feature, compiles `kernels/field/*.cu` into `$OUT_DIR/field.fatbin`.
fn main() {
    cuzk_gpu_build::build_script("field", &["field"]);
}
