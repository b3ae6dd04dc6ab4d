//! Compiles `proto/cuzk/v1/proving.proto` with protox (a protobuf compiler in Rust, so no
//! system `protoc` is needed) and generates the prost messages and tonic client and server.
//! The file descriptor set is kept too, for gRPC server reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("cuzk_v1_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
