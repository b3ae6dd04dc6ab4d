//! Golden proofs: parameter files, `r`, `s` and the proof bytes bellperson produced for them.
//!
//! `testdata/golden/golden.json` lists the cases; each names a built-in circuit
//! ([`BuiltIn`](crate::circuits::BuiltIn) spec) and a parameter file beside it. `cargo xtask
//! golden --bless` regenerates them with bellperson; `cargo xtask golden` and the `golden` test
//! check that cuzk reproduces every proof byte for byte and that it verifies.

use std::path::{Path, PathBuf};

use cuzk_field::Scalar;
use cuzk_groth16::{prepare_verifying_key, verify_proof, Parameters, Proof};
use serde::{Deserialize, Serialize};

use crate::circuits::BuiltIn;

/// The cases `--bless` writes: a name and a circuit spec.
pub const CASES: [(&str, &str); 4] = [
    ("squaring_chain", "squaring_chain:3:40"),
    ("with_inputs", "with_inputs:9"),
    ("porep_shaped", "porep_shaped:10:3"),
    ("unused_variables", "unused_variables:5:11:99"),
];

/// The manifest, `golden.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// What produced the proofs, e.g. `bellperson 0.27.0`.
    pub generator: String,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One golden proof.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Case {
    /// A short name.
    pub name: String,
    /// The circuit, as a [`BuiltIn`] spec.
    pub circuit: String,
    /// The parameter file, relative to the manifest.
    pub params: String,
    /// `r`, 32 bytes little-endian, hex.
    pub r: String,
    /// `s`, 32 bytes little-endian, hex.
    pub s: String,
    /// The expected proof, 192 bytes, hex.
    pub proof: String,
}

/// What went wrong with a golden case.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// A file could not be read or parsed.
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    /// A field of the manifest is malformed.
    #[error("case {case}: {message}")]
    Malformed { case: String, message: String },
    /// Proving failed.
    #[error("case {case}: proving failed: {message}")]
    Prove { case: String, message: String },
    /// cuzk's proof differs from the golden bytes.
    #[error(
        "case {case}: proof differs from the golden bytes\n  expected {expected}\n  got      {got}"
    )]
    Mismatch {
        case: String,
        expected: String,
        got: String,
    },
    /// The proof does not verify.
    #[error("case {case}: the proof does not verify")]
    DoesNotVerify { case: String },
}

/// Encodes a scalar for the manifest.
pub fn scalar_hex(s: &Scalar) -> String {
    hex::encode(s.to_bytes_le())
}

/// Decodes a scalar from the manifest.
pub fn parse_scalar(case: &str, hex_str: &str) -> Result<Scalar, GoldenError> {
    let malformed = |message: String| GoldenError::Malformed {
        case: case.to_string(),
        message,
    };
    let bytes: [u8; 32] = hex::decode(hex_str)
        .map_err(|e| malformed(format!("bad hex {hex_str:?}: {e}")))?
        .try_into()
        .map_err(|_| malformed("a scalar is 32 bytes".into()))?;
    Option::from(Scalar::from_bytes_le(&bytes))
        .ok_or_else(|| malformed(format!("{hex_str} is not a canonical scalar")))
}

/// Reads the manifest in `dir`.
pub fn load(dir: &Path) -> Result<Manifest, GoldenError> {
    let path = dir.join("golden.json");
    let text = std::fs::read_to_string(&path).map_err(|e| GoldenError::Read {
        path: path.clone(),
        message: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| GoldenError::Read {
        path,
        message: e.to_string(),
    })
}

/// One case's circuit, parameters, `r` and `s`, read from `dir`: what a prover needs to
/// reproduce `case.proof` (on any backend).
pub fn case_inputs(
    dir: &Path,
    case: &Case,
) -> Result<(BuiltIn, Parameters, Scalar, Scalar), GoldenError> {
    let name = case.name.clone();
    let circuit: BuiltIn = case
        .circuit
        .parse()
        .map_err(
            |e: crate::circuits::UnknownCircuit| GoldenError::Malformed {
                case: name.clone(),
                message: e.to_string(),
            },
        )?;
    let path = dir.join(&case.params);
    let params = Parameters::read_file(&path, true).map_err(|e| GoldenError::Read {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let (r, s) = (parse_scalar(&name, &case.r)?, parse_scalar(&name, &case.s)?);
    Ok((circuit, params, r, s))
}

/// Proves one case with cuzk and checks the bytes and the verification.
pub fn check_case(dir: &Path, case: &Case) -> Result<(), GoldenError> {
    let name = case.name.clone();
    let (circuit, params, r, s) = case_inputs(dir, case)?;
    let proof =
        crate::create_proof(circuit.clone(), &params, r, s).map_err(|e| GoldenError::Prove {
            case: name.clone(),
            message: e.to_string(),
        })?;
    let got = hex::encode(proof.to_bytes());
    if got != case.proof {
        return Err(GoldenError::Mismatch {
            case: name,
            expected: case.proof.clone(),
            got,
        });
    }
    let pvk = prepare_verifying_key(&params.vk);
    let expected =
        Proof::from_bytes(&hex::decode(&case.proof).unwrap_or_default()).map_err(|e| {
            GoldenError::Malformed {
                case: name.clone(),
                message: e.to_string(),
            }
        })?;
    match verify_proof(&pvk, &expected, &circuit.public_inputs()) {
        Ok(true) => Ok(()),
        _ => Err(GoldenError::DoesNotVerify { case: name }),
    }
}

/// Checks every case of the manifest in `dir`; returns the names checked.
pub fn check_all(dir: &Path) -> Result<Vec<String>, GoldenError> {
    let manifest = load(dir)?;
    manifest
        .cases
        .iter()
        .map(|case| check_case(dir, case).map(|()| case.name.clone()))
        .collect()
}

/// The golden directory of this repository (`testdata/golden`).
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/golden")
}
