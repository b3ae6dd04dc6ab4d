//! The git commit being built, where there is one, becomes `CUZK_GIT_COMMIT` for
//! `cuzk_build_info`.

fn main() {
    git_commit();
}

/// Sets `CUZK_GIT_COMMIT` to the checkout's commit when this is a git checkout with git on the
/// PATH (a source tarball has neither: the metrics then give the version alone), and builds
/// again when it moves: HEAD (a branch switched) and its branch's ref (a commit).
fn git_commit() {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=CUZK_GIT_COMMIT={commit}");
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    // Only files that exist: cargo runs a script whose watched file is missing every time.
    for path in watched.into_iter().flatten() {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
