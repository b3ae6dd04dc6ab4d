//! The emulated driver's own tests.

use super::*;

#[test]
fn copies_round_trip_and_fresh_memory_is_poisoned() {
    let device = Device::open(0).unwrap();
    assert_eq!(device.info().name, EMULATED_NAME);
    assert!(matches!(
        Device::open(1),
        Err(GpuError::NoDevice {
            ordinal: 1,
            count: 1
        })
    ));
    let stream = device.new_stream().unwrap();
    let fresh = stream.alloc::<u32>(3).unwrap();
    assert_eq!(
        stream.download(&fresh).unwrap(),
        vec![u32::from_ne_bytes([POISON; 4]); 3]
    );
    let mut buf = stream.upload(&[1u32, 2, 3, 4]).unwrap();
    stream.copy_to_device_at(&[9u32], &mut buf, 2).unwrap();
    assert_eq!(stream.download(&buf).unwrap(), vec![1, 2, 9, 4]);
    buf.truncate(2);
    assert_eq!(stream.download(&buf).unwrap(), vec![1, 2]);
    assert!(stream.copy_to_device_at(&[0u32], &mut buf, 2).is_err());
    let pinned = device.pin(&[5u32, 6]).unwrap();
    let mut out = stream.alloc::<u32>(4).unwrap();
    stream.memset_zero(&mut out).unwrap();
    stream
        .copy_pinned_to_device(pinned.bytes(), &mut out, 1)
        .unwrap();
    assert_eq!(stream.download(&out).unwrap(), vec![0, 5, 6, 0]);
}

#[test]
fn a_lent_range_is_a_buffer_like_any_other() {
    let stream = Device::open(0).unwrap().new_stream().unwrap();
    let region = SharedRegion::new(&stream, 1 << 20).unwrap();
    let dropped = std::sync::Arc::new(());
    // SAFETY: nothing else uses bytes 256..272 of the region, which outlives the buffer.
    let mut lent = unsafe {
        region
            .lend::<u32>(256, 4, Box::new(std::sync::Arc::clone(&dropped)))
            .unwrap()
    };
    assert!(lent.is_lent());
    assert_eq!(
        stream.download(&lent).unwrap(),
        vec![u32::from_ne_bytes([POISON; 4]); 4],
        "a lent range is poisoned, as fresh memory"
    );
    stream.copy_to_device(&[1u32, 2, 3, 4], &mut lent).unwrap();
    stream.copy_to_device_at(&[9u32], &mut lent, 3).unwrap();
    let mut out = stream.alloc_zeroed::<u32>(4).unwrap();
    stream.copy_device(&lent, &mut out).unwrap();
    assert_eq!(stream.download(&out).unwrap(), vec![1, 2, 3, 9]);
    let mut bytes = [0u8; 4];
    // SAFETY: the range is the lent buffer's, which is not written meanwhile.
    unsafe { region.download_at(&stream, 256, &mut bytes).unwrap() };
    assert_eq!(
        bytes,
        1u32.to_ne_bytes(),
        "the buffer is the region's memory"
    );
    let wide = lent.cast::<u64>().unwrap();
    assert_eq!(stream.download(&wide).unwrap().len(), 2);
    assert_eq!(
        std::sync::Arc::strong_count(&dropped),
        2,
        "the buffer holds its lender"
    );
    // A failed cast drops the buffer it consumed.
    assert!(
        wide.cast::<[u8; 3]>().is_err(),
        "16 bytes are no whole number of 3"
    );
    assert_eq!(
        std::sync::Arc::strong_count(&dropped),
        1,
        "dropping returns the range"
    );
    // SAFETY: as above; the checks refuse the range before anything is lent.
    let outside = unsafe { region.lend::<u8>(1 << 20, 1, Box::new(())) };
    assert!(outside.is_err());
    // SAFETY: as above.
    let misaligned = unsafe { region.lend::<u64>(4, 1, Box::new(())) };
    assert!(misaligned.is_err());
}

#[test]
fn injected_faults_fail_once_on_their_device() {
    // Devices no other test uses (faults are process-wide and tests run at once).
    let stream = Stream { ordinal: 6 };
    fail_next(6, Fault::Alloc);
    fail_next(7, Fault::Alloc);
    assert!(matches!(
        stream.alloc::<u32>(4),
        Err(GpuError::Driver {
            call: "cuMemAllocAsync",
            ..
        })
    ));
    assert!(stream.alloc::<u32>(4).is_ok(), "once");
    assert!(!injected(0, Fault::Alloc) && injected(7, Fault::Alloc));
}

#[test]
fn kernels_are_found_by_name() {
    let module = Device::open(0).unwrap().load_module(&[]).unwrap();
    assert!(module.kernel("ntt_h_pointwise").is_ok());
    assert!(module.kernel("msm_digits").is_ok());
    assert!(module.kernel("no_such_kernel").is_err());
}

#[test]
fn a_mapped_vector_is_read_in_place_and_held() {
    let device = Device::open(0).unwrap();
    let stream = device.new_stream().unwrap();
    let host = std::sync::Arc::new((0..64u64).collect::<Vec<_>>());
    let mapped = device.map_host::<u64, u64>(host.clone()).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&host), 2);
    assert_eq!(mapped.address(), host.as_ptr() as u64, "no copy");
    assert_eq!(stream.download(&mapped).unwrap(), *host);
    drop(mapped);
    assert_eq!(std::sync::Arc::strong_count(&host), 1);
    assert!(matches!(
        device.map_host::<u64, u64>(std::sync::Arc::new(Vec::new())),
        Err(GpuError::InvalidArgument(_))
    ));
    assert!(matches!(
        device.map_host::<u64, u32>(std::sync::Arc::new(vec![7u32; 4])),
        Err(GpuError::InvalidArgument(_))
    ));
}
