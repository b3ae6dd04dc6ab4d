//! Buffers kept from one call of a `GpuMsm` for the next: device buffers, or the pinned host
//! buffers that stage pageable inputs.
//!
//! `cuMemAllocAsync` maps fresh pages whenever the driver's pool has released its memory, which
//! it does at every synchronisation by default, so an MSM that allocated its workspace per call
//! paid for mapping it each time (several percent of a G1 MSM of 2^24 points, more with the
//! batch-affine scratch); pinned host memory costs more still, since the driver locks
//! every page (about a second for the 8 GiB of staging at 2^27 points). Instead, a call takes
//! its buffers from the ones the previous call left, by exact size (device buffers) or by the
//! smallest that is large enough (staging buffers, of which only a prefix is used), and
//! allocates only what it does not find; its buffers come back as they are dropped and, when the
//! call ends, become the ones the next call may take, while any the call did not reuse are
//! freed. So at most one call's buffers stay allocated, and they are only ever reused after the
//! call that used them has finished (calls end by waiting for their result, and a pinned buffer
//! waits for the copies out of it before it is written).

use std::sync::Mutex;

/// A buffer a [`BufferCache`] holds: its size is all the cache needs to know.
pub(crate) trait Held {
    fn held_bytes(&self) -> usize;
}

/// See the module's documentation.
#[derive(Debug)]
pub(crate) struct BufferCache<B> {
    /// What the last finished call left: free to take.
    free: Mutex<Vec<B>>,
    /// What the running call has dropped so far.
    returned: Mutex<Vec<B>>,
}

impl<B> Default for BufferCache<B> {
    fn default() -> Self {
        Self {
            free: Mutex::new(Vec::new()),
            returned: Mutex::new(Vec::new()),
        }
    }
}

impl<B: Held> BufferCache<B> {
    /// A free buffer of exactly `bytes`.
    pub(crate) fn take(&self, bytes: usize) -> Option<B> {
        let mut free = self.free.lock().expect("buffer cache poisoned");
        let i = free.iter().position(|b| b.held_bytes() == bytes)?;
        Some(free.swap_remove(i))
    }

    /// The smallest free buffer of at least `bytes`.
    pub(crate) fn take_at_least(&self, bytes: usize) -> Option<B> {
        let mut free = self.free.lock().expect("buffer cache poisoned");
        let i = (0..free.len())
            .filter(|&i| free[i].held_bytes() >= bytes)
            .min_by_key(|&i| free[i].held_bytes())?;
        Some(free.swap_remove(i))
    }

    /// Lends `buf` to the running call: it comes back to this cache when dropped.
    pub(crate) fn lend(&self, buf: B) -> CachedBuffer<'_, B> {
        CachedBuffer {
            buf: Some(buf),
            cache: self,
        }
    }

    fn give_back(&self, buf: B) {
        self.returned
            .lock()
            .expect("buffer cache poisoned")
            .push(buf);
    }

    /// Ends a call: its buffers become the free ones; those it did not take are freed.
    pub(crate) fn end_call(&self) {
        let returned = std::mem::take(&mut *self.returned.lock().expect("buffer cache poisoned"));
        *self.free.lock().expect("buffer cache poisoned") = returned;
    }

    /// Bytes held for the next call.
    pub(crate) fn bytes(&self) -> usize {
        self.free
            .lock()
            .expect("buffer cache poisoned")
            .iter()
            .map(Held::held_bytes)
            .sum()
    }

    /// Frees every held buffer.
    pub(crate) fn clear(&self) {
        self.free.lock().expect("buffer cache poisoned").clear();
    }
}

/// A buffer of the running call, returned to its [`BufferCache`] when dropped.
pub(crate) struct CachedBuffer<'d, B: Held> {
    buf: Option<B>,
    cache: &'d BufferCache<B>,
}

impl<B: Held> Drop for CachedBuffer<'_, B> {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.cache.give_back(buf);
        }
    }
}

// The device executor's buffers (exec.rs, `GpuBuf`); the emulator keeps its own.
#[cfg(feature = "cuda")]
impl<B: Held> CachedBuffer<'_, B> {
    pub(crate) fn get(&self) -> &B {
        self.buf.as_ref().expect("present until dropped")
    }

    pub(crate) fn get_mut(&mut self) -> &mut B {
        self.buf.as_mut().expect("present until dropped")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer of a size, numbered to tell buffers apart.
    #[derive(Debug, PartialEq, Eq)]
    struct Buf(usize, u32);

    impl Held for Buf {
        fn held_bytes(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn a_call_reuses_what_the_last_left_and_frees_the_rest() {
        let cache = BufferCache::default();
        // Call 1 allocates three buffers and drops them.
        for (i, size) in [100, 200, 300].into_iter().enumerate() {
            drop(cache.lend(Buf(size, i as u32)));
        }
        assert_eq!(cache.bytes(), 0, "nothing is free while the call runs");
        cache.end_call();
        assert_eq!(cache.bytes(), 600);
        // Call 2: exact sizes for device buffers, the smallest large enough for staging.
        let exact = cache.take(200).unwrap();
        assert_eq!(exact, Buf(200, 1));
        assert!(cache.take(250).is_none());
        let at_least = cache.take_at_least(150).unwrap();
        assert_eq!(
            at_least,
            Buf(300, 2),
            "200 is taken; 300 is the only one left large enough"
        );
        assert!(cache.take_at_least(301).is_none());
        drop(cache.lend(exact));
        drop(cache.lend(at_least));
        cache.end_call();
        // The 100-byte buffer call 2 did not take is gone.
        assert_eq!(cache.bytes(), 500);
        assert_eq!(cache.take_at_least(1), Some(Buf(200, 1)));
        cache.clear();
        assert_eq!(cache.bytes(), 0);
    }
}
