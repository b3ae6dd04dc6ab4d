//! The emulator's own checks, which the streamed and two-lane MSM tests rely on to catch a
//! missing wait.

use super::*;

/// The emulator's checks of the lanes' ordering calls, which the streamed MSM tests rely on to
/// catch a missing wait: each broken rule fails the call that breaks it.
#[test]
fn emulator_rejects_unordered_lane_work() {
    use crate::gpu::exec::{Arg, EmuExec};
    let exec = EmuExec::new(4);
    let bytes = [7u8; 64];
    // A kernel reading a buffer whose copy the compute lane did not wait for.
    let mut slot = exec.alloc(64).unwrap();
    exec.copies_wait_for(&exec.record_compute().unwrap())
        .unwrap();
    exec.upload_pinned(&mut slot, &bytes[..], 0..64).unwrap();
    let err = exec
        .launch("msm_digits", 1, 1, &[Arg::Buf(&slot)])
        .unwrap_err();
    assert!(err.to_string().contains("did not wait"), "{err}");
    let mut out = [0u8; 64];
    assert!(exec.download(&slot, &mut out).is_err());
    exec.compute_waits_for_copies().unwrap();
    exec.download(&slot, &mut out).unwrap();
    assert_eq!(out, bytes);
    // A copy into a buffer the compute lane used after the point the copy lane waited for.
    let err = exec
        .upload_pinned(&mut slot, &bytes[..], 0..64)
        .unwrap_err();
    assert!(err.to_string().contains("did not wait"), "{err}");
    exec.copies_wait_for(&exec.record_compute().unwrap())
        .unwrap();
    exec.upload_pinned(&mut slot, &bytes[..], 0..64).unwrap();
    // A fresh buffer is the compute lane's until the copy lane waits for its allocation.
    let mut fresh = exec.alloc(64).unwrap();
    assert!(exec.upload_pinned(&mut fresh, &bytes[..], 0..64).is_err());
}

/// The emulator's side lane runs late, as late as a device may: only when the main lane waits
/// for it or the host does. Reading its results without a wait reads stale data, and dropping
/// a buffer that queued side work uses fails every later call; so the MSM tests, which run
/// groups of windows on two lanes, fail if the driver forgets a wait.
#[test]
fn emulator_runs_the_side_lane_late() {
    use crate::gpu::exec::EmuExec;
    let exec = EmuExec::new(4);
    let side = exec.lane(1);
    let mut buf = exec.alloc(16).unwrap();
    let mut other = exec.alloc(16).unwrap();
    side.compute_waits_for(&exec.record_compute().unwrap())
        .unwrap();
    side.zero(&mut buf).unwrap();
    side.upload(&mut other, &[3u8; 16]).unwrap();
    let mut out = [0u8; 16];
    // Not waited for: the allocation's poison is still there.
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [0xa5; 16]);
    // The main lane waits for the side lane's work up to an event: what came before it has
    // run, what came after has not.
    let cleared = side.record_compute().unwrap();
    side.copy(&other, &mut buf).unwrap();
    exec.compute_waits_for(&cleared).unwrap();
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [0; 16]);
    exec.compute_waits_for(&side.record_compute().unwrap())
        .unwrap();
    exec.download(&buf, &mut out).unwrap();
    assert_eq!(out, [3; 16]);
    // A download on the side lane waits for everything queued there.
    side.zero(&mut other).unwrap();
    side.download(&other, &mut out).unwrap();
    assert_eq!(out, [0; 16]);
    // A buffer dropped while queued side work uses it: every later call fails.
    side.zero(&mut buf).unwrap();
    drop(buf);
    let err = exec.alloc(8).unwrap_err();
    assert!(err.to_string().contains("side-lane operation"), "{err}");
}
