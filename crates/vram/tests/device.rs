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

/// A reservation is a workspace: its buffers are the arena's ranges as cuzk-gpu device buffers
/// (copies and kernels take them as any other), each returning to the reservation when it
/// drops; a buffer the reservation has no room for is `OutOfWorkspace`, and no driver
/// allocation is made after the arena's own.
#[test]
fn a_reservation_lends_device_buffers() {
    use cuzk_gpu::{alloc_in, GpuError, Workspace};

    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let arena = Arena::new(
        DeviceBacking::new(device).unwrap(),
        ArenaConfig::with_bytes(1 << 20),
    )
    .unwrap();
    let allocs = cuzk_gpu::counted_driver_calls_here();
    let reservation = arena.reserve(64 << 10).unwrap();
    let mut a = alloc_in::<u32>(&reservation, &stream, 1000).unwrap();
    let b = reservation.alloc_bytes(&stream, 16 << 10).unwrap();
    assert!(a.is_lent() && b.is_lent());
    assert_eq!(
        arena.stats().in_use,
        4096 + (16 << 10),
        "rounded to the granule"
    );
    let values: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
    stream.copy_to_device(&values, &mut a).unwrap();
    assert_eq!(stream.download(&a).unwrap(), values);
    let mut copy = alloc_in::<u32>(&reservation, &stream, 1000).unwrap();
    stream.copy_device(&a, &mut copy).unwrap();
    assert_eq!(stream.download(&copy).unwrap(), values);
    assert!(matches!(
        reservation.alloc_bytes(&stream, 64 << 10),
        Err(GpuError::OutOfWorkspace { .. })
    ));
    assert_eq!(reservation.alloc_bytes(&stream, 0).unwrap().len(), 0);
    drop((a, b, copy));
    assert_eq!(reservation.available(), 64 << 10, "every range came back");
    // A resident region as a typed buffer.
    let resident = arena.alloc_resident("bases", 4096).unwrap();
    let mut bases = resident.into_device_buffer::<u64>().unwrap();
    stream.copy_to_device(&[7u64; 512], &mut bases).unwrap();
    assert_eq!(stream.download(&bases).unwrap(), vec![7u64; 512]);
    drop(bases);
    assert!(
        arena.resident("bases").is_none(),
        "dropping retires the region"
    );
    if let (Some(before), Some(after)) = (allocs, cuzk_gpu::counted_driver_calls_here()) {
        assert_eq!(
            after.alloc, before.alloc,
            "sub-allocation calls no allocator"
        );
    }
}
