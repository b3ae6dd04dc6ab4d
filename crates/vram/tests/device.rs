//! The arena on a real device (feature `cuda`); skipped, and passing, without one.
#![cfg(feature = "cuda")]

use cuzk_vram::{Arena, ArenaConfig, DeviceBacking, DeviceFence};

#[test]
fn device_arena_round_trips_disjoint_buffers_and_releases_on_events() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let backing = DeviceBacking::new(device).unwrap();
    let arena = Arena::new(backing, ArenaConfig::with_bytes(64 << 20)).unwrap();

    let reservation = arena.reserve(32 << 20).unwrap();
    let a = reservation.alloc(8 << 20).unwrap();
    let b = reservation.alloc(8 << 20).unwrap();
    assert!(a.offset() + a.bytes() <= b.offset() || b.offset() + b.bytes() <= a.offset());
    let data_a: Vec<u8> = (0..8 << 20).map(|i: u32| (i * 7 + 1) as u8).collect();
    let data_b: Vec<u8> = (0..8 << 20).map(|i: u32| (i * 13 + 5) as u8).collect();
    a.upload(&stream, &data_a).unwrap();
    b.upload(&stream, &data_b).unwrap();
    let (mut back_a, mut back_b) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    a.download(&stream, &mut back_a).unwrap();
    b.download(&stream, &mut back_b).unwrap();
    assert!(
        back_a == data_a && back_b == data_b,
        "each buffer keeps its own bytes"
    );
    assert!(
        a.upload(&stream, &vec![0u8; (8 << 20) + 1]).is_err(),
        "overrun is an error"
    );

    // Released after an event on the stream: the bytes come back once the host sees it done.
    let fence = DeviceFence::record(&stream).unwrap();
    a.release_after(fence);
    b.release_after(DeviceFence::record(&stream).unwrap());
    reservation.release_after(DeviceFence::record(&stream).unwrap());
    stream.synchronize().unwrap();
    arena.poll();
    let stats = arena.stats();
    assert_eq!(
        stats.in_use + stats.reserved + stats.pending_release,
        0,
        "{stats:?}"
    );
}
