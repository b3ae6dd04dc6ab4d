//! With the `cuda` feature, compiles `kernels/field/*.cu` into `$OUT_DIR/field.fatbin`. With the
//! `emu` feature, compiles the MSM, NTT and pre-compiled-circuit kernels for the host with the C++
//! compiler into a static library that the emulated driver (`src/emu/`) launches them from
//! (`kernels/emu/`).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    cuzk_gpu_build::build_script("field", &["field"]);
    if std::env::var_os("CARGO_FEATURE_EMU").is_some() {
        build_emulator();
    }
}

fn build_emulator() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let kernels = cuzk_gpu_build::kernels_root_from_manifest(&manifest);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("run by cargo"));
    for dir in ["emu", "msm", "ntt", "pce", "field", "curve"] {
        println!("cargo:rerun-if-changed={}", kernels.join(dir).display());
    }
    println!("cargo:rerun-if-env-changed=CXX");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let object = out.join("cuzk_emu.o");
    let library = out.join("libcuzk_emu.a");
    let status = Command::new(&cxx)
        .args(["-std=c++20", "-O2", "-fPIC", "-include", "emu/host_cuda.h"])
        .arg(format!("-I{}", kernels.display()))
        .arg("-c")
        .arg(kernels.join("emu").join("emu.cpp"))
        .arg("-o")
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{cxx} failed ({s}) compiling kernels/emu/emu.cpp")),
        Err(e) => fail(&format!("could not run {cxx}: {e}")),
    }
    let _ = std::fs::remove_file(&library);
    match Command::new("ar")
        .arg("rcs")
        .arg(&library)
        .arg(&object)
        .status()
    {
        Ok(s) if s.success() => {}
        _ => fail("ar failed archiving the emulator"),
    }
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=cuzk_emu");
    println!("cargo:rustc-link-lib=dylib=stdc++");
}

fn fail(message: &str) -> ! {
    eprintln!("error: building the kernel emulator (feature `emu`) failed: {message}");
    std::process::exit(1);
}
