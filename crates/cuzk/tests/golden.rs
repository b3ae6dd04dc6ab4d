//! The golden proofs in `testdata/golden/`, made by bellperson, reproduced byte for byte.

#[test]
fn golden_proofs_are_reproduced() {
    let dir = cuzk::golden::default_dir();
    let checked = cuzk::golden::check_all(&dir)
        .unwrap_or_else(|e| panic!("{e}\n(regenerate with `cargo xtask golden --bless`)"));
    assert_eq!(
        checked.len(),
        cuzk::golden::CASES.len(),
        "every case of CASES is in the manifest"
    );
}
