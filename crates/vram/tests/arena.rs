//! Example-based tests of the arena's behaviour, one `check`-style helper per area.

use std::sync::{Arc, Barrier};
use std::thread;

use cuzk_vram::{Arena, ArenaConfig, ArenaSize, Backing, HostBacking, SimFence, VramError};

const MIB: u64 = 1 << 20;

fn arena(bytes: u64) -> Arena<HostBacking> {
    Arena::new(HostBacking::new(bytes), ArenaConfig::with_bytes(bytes)).expect("arena")
}

#[test]
fn sized_from_free_memory_less_a_margin() {
    let a = Arena::new(
        HostBacking::new(16 * MIB + 100),
        ArenaConfig::free_less_margin(MIB),
    )
    .expect("arena");
    assert_eq!(a.capacity(), 15 * MIB);
    assert_eq!(a.region().bytes, 15 * MIB);
    let too_big = Arena::new(HostBacking::new(MIB), ArenaConfig::with_bytes(2 * MIB));
    assert!(matches!(too_big, Err(VramError::Backing(_))));
    let empty = Arena::new(
        HostBacking::new(MIB),
        ArenaConfig::free_less_margin(2 * MIB),
    );
    assert!(matches!(empty, Err(VramError::EmptyArena)));
    let config = ArenaConfig {
        size: ArenaSize::Bytes(MIB),
        granule: 3,
        ..ArenaConfig::with_bytes(0)
    };
    assert!(matches!(
        Arena::new(HostBacking::new(MIB), config),
        Err(VramError::BadAlignment { .. })
    ));
}

#[test]
fn buffers_are_aligned_and_sizes_rounded_to_the_granule() {
    let a = arena(MIB);
    let b1 = a.try_alloc(1, 1).unwrap();
    let b2 = a.try_alloc(100, 4096).unwrap();
    assert_eq!(b1.offset(), 0);
    assert_eq!(b2.offset(), 4096);
    assert_eq!(b1.bytes(), 1);
    assert_eq!(a.stats().in_use, 512);
    assert!(matches!(a.try_alloc(0, 1), Err(VramError::ZeroSize)));
    let max = a.backing().base_alignment();
    assert!(matches!(
        a.try_alloc(1, max * 2),
        Err(VramError::BadAlignment { .. })
    ));
    assert!(matches!(
        a.try_alloc(1, 3),
        Err(VramError::BadAlignment { .. })
    ));
}

#[test]
fn resident_regions_live_at_the_high_end_under_their_name() {
    let a = arena(16 * MIB);
    let srs = a.alloc_resident("srs", 4 * MIB).unwrap();
    assert_eq!(srs.range(), 12 * MIB..16 * MIB);
    assert_eq!(a.resident("srs").unwrap().range, 12 * MIB..16 * MIB);
    assert!(matches!(
        a.alloc_resident("srs", MIB),
        Err(VramError::DuplicateName(_))
    ));
    let r = a.try_reserve(MIB).unwrap().unwrap();
    assert_eq!(r.range().start, 0, "transient data starts low");
    assert_eq!(a.stats().resident, 4 * MIB);
    drop(srs);
    assert!(a.resident("srs").is_none());
    assert!(a.residents().is_empty());
}

#[test]
fn reservations_that_can_never_fit_are_refused_not_queued() {
    let a = arena(16 * MIB);
    let _srs = a.alloc_resident("srs", 8 * MIB).unwrap();
    let err = a.reserve(9 * MIB).unwrap_err();
    assert_eq!(
        err,
        VramError::Unsatisfiable {
            requested: 9 * MIB,
            largest_possible: 8 * MIB
        }
    );
    assert!(matches!(
        a.try_reserve(17 * MIB),
        Err(VramError::Unsatisfiable { .. })
    ));
    assert!(!a.fits_when_idle(9 * MIB));
    assert!(a.fits_when_idle(8 * MIB));
    assert_eq!(a.stats().refused, 2);
}

#[test]
fn a_reservation_that_does_not_fit_now_is_told_to_wait() {
    let a = arena(16 * MIB);
    let r1 = a.try_reserve(10 * MIB).unwrap().unwrap();
    assert!(a.try_reserve(10 * MIB).unwrap().is_none());
    assert_eq!(a.stats().would_wait, 1);
    drop(r1);
    assert!(a.try_reserve(10 * MIB).unwrap().is_some());
}

#[test]
fn buffers_come_from_their_reservation_and_the_block_returns_after_the_last() {
    let a = arena(16 * MIB);
    let r = a.reserve(4 * MIB).unwrap();
    let b1 = r.alloc(3 * MIB).unwrap();
    assert!(matches!(
        r.alloc(2 * MIB),
        Err(VramError::ReservationExhausted { .. })
    ));
    let b2 = r.alloc(MIB).unwrap();
    assert_eq!(r.available(), 0);
    drop(r);
    let stats = a.stats();
    assert_eq!(
        (stats.reserved, stats.in_use),
        (4 * MIB, 4 * MIB),
        "buffers keep the block"
    );
    drop(b1);
    drop(b2);
    let stats = a.stats();
    assert_eq!((stats.reserved, stats.in_use, stats.free), (0, 0, 16 * MIB));
    a.snapshot().check().unwrap();
}

#[test]
fn fenced_releases_return_only_when_the_fence_completes() {
    let a = arena(16 * MIB);
    let r = a.reserve(8 * MIB).unwrap();
    let b = r.alloc(8 * MIB).unwrap();
    let kernels_done = SimFence::pending();
    b.release_after(kernels_done.clone());
    assert_eq!(r.available(), 0, "kernels may still read it");
    assert_eq!(a.stats().pending_release, 8 * MIB);
    kernels_done.signal();
    assert_eq!(r.available(), 8 * MIB);
    let stream_done = SimFence::pending();
    r.release_after(stream_done.clone());
    assert!(a.try_reserve(16 * MIB).unwrap().is_none());
    stream_done.signal();
    assert!(a.poll());
    let stats = a.stats();
    assert_eq!(
        (stats.free, stats.pending_release, stats.fenced_releases),
        (16 * MIB, 0, 2)
    );
}

#[test]
fn stats_track_peaks() {
    let a = arena(16 * MIB);
    {
        let r = a.reserve(8 * MIB).unwrap();
        let _b = r.alloc(6 * MIB).unwrap();
        let _c = a.try_alloc(2 * MIB, 1).unwrap();
    }
    let s = a.stats();
    assert_eq!(
        (s.peak_in_use, s.peak_committed, s.in_use, s.free),
        (8 * MIB, 10 * MIB, 0, 16 * MIB)
    );
    assert_eq!((s.reservations, s.allocations), (1, 2));
    assert_eq!(s.largest_free_block, 16 * MIB);
}

#[test]
fn a_blocked_reservation_wakes_when_the_holder_releases() {
    let a = arena(16 * MIB);
    let held = a.reserve(12 * MIB).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let waiter = {
        let (a, barrier) = (a.clone(), Arc::clone(&barrier));
        thread::spawn(move || {
            barrier.wait();
            a.reserve(12 * MIB).map(|r| r.bytes())
        })
    };
    barrier.wait();
    // The waiter may or may not be queued yet; either way it must get the block eventually.
    drop(held);
    assert_eq!(waiter.join().unwrap(), Ok(12 * MIB));
}

#[test]
fn a_blocked_reservation_wakes_when_a_fence_completes() {
    let a = arena(16 * MIB);
    let held = a.reserve(12 * MIB).unwrap();
    let fence = SimFence::pending();
    held.release_after(fence.clone());
    let waiter = {
        let a = a.clone();
        thread::spawn(move || a.reserve(12 * MIB).map(|r| r.bytes()))
    };
    fence.signal();
    assert_eq!(waiter.join().unwrap(), Ok(12 * MIB));
}

/// Several workers reserve, allocate and release (some releases fenced, completed by the same
/// by the worker's "device" one round later) with blocking reservations; all of them finish.
#[test]
fn workers_sharing_an_arena_never_deadlock() {
    let a = arena(64 * MIB);
    let _srs = a.alloc_resident("srs", 16 * MIB).unwrap();
    let workers: Vec<_> = (0..4u64)
        .map(|w| {
            let a = a.clone();
            thread::spawn(move || {
                let mut outstanding: Option<SimFence> = None;
                let mut state = w * 7919 + 1;
                for _ in 0..200 {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let want = (state >> 33) % (48 * MIB) + 1;
                    // The device finishes the previous round's work on its own; the host does
                    // not wait for it before asking for more.
                    if let Some(f) = outstanding.take() {
                        f.signal();
                    }
                    let r = a.reserve(want).expect("fits when idle");
                    let b = r.alloc(want / 2 + 1).expect("inside the reservation");
                    let fence = SimFence::pending();
                    b.release_after(fence.clone());
                    r.release_after(fence.clone());
                    outstanding = Some(fence);
                }
                if let Some(f) = outstanding {
                    f.signal();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    a.poll();
    let s = a.stats();
    assert_eq!(s.free, 48 * MIB);
    assert_eq!(s.reservations, 800);
    a.snapshot().check().unwrap();
}
