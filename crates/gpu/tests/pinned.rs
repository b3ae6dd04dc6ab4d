//! Pinned host memory and the asynchronous copies out of it, on a device. Skips (and passes)
//! without a GPU.
#![cfg(feature = "cuda")]

use cuzk_gpu::{GpuError, PinnedBuffer};

fn pattern(len: usize, salt: u64) -> Vec<u64> {
    (0..len as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)
        .collect()
}

#[test]
fn pinned_copies_land_in_order_and_writes_wait_for_them() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let n = 3 << 20;
    let values = pattern(n, 1);
    let mut host: PinnedBuffer<u64> = device.pin(&values).unwrap();
    assert_eq!(host.len(), n);
    assert_eq!(host.size_bytes(), 8 * n);
    assert_eq!(&host[..], &values[..]);

    // Three chunks queued back to front into one device buffer, then read back.
    let mut dev = stream.alloc::<u64>(n).unwrap();
    let chunk = n / 3;
    for k in (0..3).rev() {
        let bytes = host
            .bytes()
            .range(8 * k * chunk..8 * (k + 1) * chunk)
            .unwrap();
        stream
            .copy_pinned_to_device(bytes, &mut dev, k * chunk)
            .unwrap();
    }
    assert_eq!(stream.download(&dev).unwrap(), values);

    // Writing the buffer right after queueing a copy waits for the copy: the device gets the
    // old contents, the host the new ones. The copy is held back behind about 20 ms of
    // device-to-device copies on another stream, so that without the wait the host's write
    // would land first.
    let other = device.new_stream().unwrap();
    let big = 1usize << 27;
    let from = other.alloc_zeroed::<u64>(big).unwrap();
    let mut to = other.alloc::<u64>(big).unwrap();
    // 1 GiB each, about 0.5 ms at the H200's 4.3 TB/s (read and write).
    for _ in 0..40 {
        other.copy_device(&from, &mut to).unwrap();
    }
    stream.wait_event(&other.record_event().unwrap()).unwrap();
    let mut second = stream.alloc::<u64>(n).unwrap();
    stream
        .copy_pinned_to_device(host.bytes(), &mut second, 0)
        .unwrap();
    let newer = pattern(n, 2);
    host.as_mut_slice().unwrap().copy_from_slice(&newer);
    assert_eq!(stream.download(&second).unwrap(), values);
    assert_eq!(&host[..], &newer[..]);
    other.synchronize().unwrap();

    // Elements of another size: the bytes are copied as they are.
    let mut words = stream.alloc::<u32>(2 * n).unwrap();
    stream
        .copy_pinned_to_device(host.bytes(), &mut words, 0)
        .unwrap();
    let back = stream.download(&words).unwrap();
    assert_eq!(back[0], newer[0] as u32);
    assert_eq!(back[1], (newer[0] >> 32) as u32);
    drop(host);
}

#[test]
fn pinned_copies_reject_bad_ranges() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let host: PinnedBuffer<u32> = device.alloc_pinned(16).unwrap();
    assert!(host.iter().all(|&v| v == 0));
    let mut dev = stream.alloc::<u32>(8).unwrap();
    let invalid = |r: Result<(), GpuError>| matches!(r, Err(GpuError::InvalidArgument(_)));
    // 16 elements into 8.
    assert!(invalid(stream.copy_pinned_to_device(
        host.bytes(),
        &mut dev,
        0
    )));
    // 4 elements from offset 6 of 8.
    let four = host.bytes().range(0..16).unwrap();
    assert!(invalid(stream.copy_pinned_to_device(four, &mut dev, 6)));
    // Not a whole number of u32s.
    let odd = host.bytes().range(0..6).unwrap();
    assert!(invalid(stream.copy_pinned_to_device(odd, &mut dev, 0)));
    // Outside the buffer, and reversed.
    assert!(host.bytes().range(60..68).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = host.bytes().range(8..4);
    assert!(reversed.is_err());
    // Empty copies and buffers are fine.
    let empty = host.bytes().range(4..4).unwrap();
    stream.copy_pinned_to_device(empty, &mut dev, 8).unwrap();
    let none: PinnedBuffer<u64> = device.alloc_pinned(0).unwrap();
    assert!(none.is_empty() && none.bytes().is_empty());
    host.wait_for_copies().unwrap();
}

/// A host vector mapped for the device is read in place: a device copy out of the mapping gives
/// the vector's values; a second mapping of the same vector (another worker or device) shares
/// the registration, and once both drop the vector can be registered again; the mapping holds
/// the vector; a misaligned or empty one is refused.
#[test]
fn mapped_host_memory_is_read_in_place() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let stream = device.new_stream().unwrap();
    let host = std::sync::Arc::new(pattern(1 << 20, 3));
    let first = device.map_host::<u64, u64>(host.clone()).unwrap();
    let second = device.map_host::<u64, u64>(host.clone()).unwrap();
    assert_eq!(
        std::sync::Arc::strong_count(&host),
        3,
        "each mapping holds it"
    );
    let mut copy = stream.alloc::<u64>(host.len()).unwrap();
    stream.copy_device(&first, &mut copy).unwrap();
    assert_eq!(stream.download(&copy).unwrap(), *host);
    drop(first);
    stream.copy_device(&second, &mut copy).unwrap();
    assert_eq!(stream.download(&copy).unwrap(), *host);
    drop(second);
    assert_eq!(std::sync::Arc::strong_count(&host), 1);
    let again = device.map_host::<u64, u64>(host.clone()).unwrap();
    assert_eq!(again.len(), host.len());
    drop(again);
    let empty = std::sync::Arc::new(Vec::<u64>::new());
    assert!(matches!(
        device.map_host::<u64, u64>(empty),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        device.map_host::<u64, u32>(std::sync::Arc::new(vec![1u32; 8])),
        Err(GpuError::InvalidArgument(_))
    ));
}
