//! `cuzk_gpu::pinned_host_bytes`, what a daemon's status reports as its pinned memory: a pinned
//! buffer and a mapped host vector are counted while they live and given back when they drop.
//! One test in its own binary, since the count is the whole process's. Skips (and passes)
//! without a GPU; runs on the kernel emulator in CI.
#![cfg(feature = "cuda")]

#[test]
fn pinned_buffers_and_mapped_vectors_are_counted_while_they_live() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let before = cuzk_gpu::pinned_host_bytes();
    let staging = device.alloc_pinned::<u64>(1 << 20).unwrap();
    assert_eq!(cuzk_gpu::pinned_host_bytes(), before + (8 << 20));
    let host = std::sync::Arc::new(vec![7u64; 1 << 19]);
    let mapped = device.map_host::<u64, u64>(host.clone()).unwrap();
    assert_eq!(cuzk_gpu::pinned_host_bytes(), before + (12 << 20));
    drop(staging);
    assert_eq!(cuzk_gpu::pinned_host_bytes(), before + (4 << 20));
    drop(mapped);
    assert_eq!(cuzk_gpu::pinned_host_bytes(), before);
    // Only what is locked counts: the vector itself is ordinary memory again.
    assert_eq!(std::sync::Arc::strong_count(&host), 1);
}
