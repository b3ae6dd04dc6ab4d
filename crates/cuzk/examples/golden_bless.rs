//! Regenerates the golden cases in `testdata/golden/` with bellperson: for each of
//! [`cuzk::golden::CASES`], parameters from a seeded setup, one proof for seeded r and s, and the
//! manifest naming them. `cargo xtask golden --bless` runs it; `cargo test -p cuzk --test golden`
//! (and `cargo xtask golden`) checks that cuzk reproduces every proof byte for byte.

use blstrs::{Bls12, Scalar};
use cuzk::circuits::BuiltIn;
use cuzk::golden::{scalar_hex, Case, Manifest, CASES};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn main() -> anyhow::Result<()> {
    let dir = cuzk::golden::default_dir();
    std::fs::create_dir_all(&dir)?;
    let mut cases = Vec::new();
    for (i, (name, spec)) in CASES.iter().enumerate() {
        let circuit: BuiltIn = spec.parse()?;
        let mut rng = ChaCha20Rng::seed_from_u64(1000 + i as u64);
        let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
            circuit.clone(),
            &mut rng,
        )?;
        let params_file = format!("{name}.params");
        let mut bytes = Vec::new();
        params.write(&mut bytes)?;
        std::fs::write(dir.join(&params_file), &bytes)?;
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let proof = bellperson::groth16::create_proof::<Bls12, _, _>(circuit, &params, r, s)?;
        let mut proof_bytes = Vec::new();
        proof.write(&mut proof_bytes)?;
        println!("blessed {name}: {} bytes of parameters", bytes.len());
        cases.push(Case {
            name: name.to_string(),
            circuit: spec.to_string(),
            params: params_file,
            r: scalar_hex(&r),
            s: scalar_hex(&s),
            proof: hex::encode(proof_bytes),
        });
    }
    let manifest = Manifest {
        generator: "bellperson 0.27.0 (default features: CPU)".into(),
        cases,
    };
    std::fs::write(
        dir.join("golden.json"),
        serde_json::to_string_pretty(&manifest)? + "\n",
    )?;
    Ok(())
}
