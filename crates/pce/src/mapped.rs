//! The memory map of a pre-compiled file, and huge-page advice for the vectors the products
//! write: the crate's only unsafe code.
//!
//! Besides mapping, it can drop ranges of the map from the process ([`Mapped::release`]): the
//! products read each part of the file once per proof, so releasing what they have read keeps
//! the proving process's resident memory at its vectors, not its vectors plus the file (the file
//! stays in the page cache, shared with every other process that maps it).

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use memmap2::{Mmap, UncheckedAdvice};

/// Granularity of [`Mapped::release`]. Where pages are larger, the unaligned requests fail and
/// are ignored: the map just stays resident.
const PAGE: usize = 4096;

/// A read-only, shared memory map of a whole file.
#[derive(Debug)]
pub(crate) struct Mapped {
    map: Mmap,
}

impl Mapped {
    /// Maps `path` read-only.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        #[allow(unsafe_code)]
        // SAFETY: the map is read-only and shared, and cuzk never writes a pre-compiled file in
        // place (the cache writes a temporary file and renames it over the old one, which leaves
        // this map on the old inode). Another process truncating or rewriting the file in place
        // would break the guarantee, as with any mapped file; the checksums are verified on the
        // mapped bytes before any are trusted.
        let map = unsafe { Mmap::map(&file)? };
        Ok(Self { map })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Drops the process's pages of the whole pages in `[floor(start), floor(end))`; a later read
    /// maps them again from the page cache. A range's first partial page is released with it
    /// (its bytes before `start` belong to the range before, which a caller releases first or
    /// re-reads at the cost of a minor fault); its last partial page is left to the next range.
    pub fn release(&self, range: Range<usize>) {
        let start = range.start / PAGE * PAGE;
        let end = (range.end / PAGE * PAGE).min(self.map.len());
        if end <= start {
            return;
        }
        #[allow(unsafe_code)]
        // SAFETY: MADV_DONTNEED on a shared file mapping only removes this process's page-table
        // entries: a later access faults the same file bytes back in from the page cache, so
        // every slice borrowed from the map keeps reading the same values (unlike a private or
        // anonymous mapping, whose pages would come back zero-filled). The range lies inside the
        // map.
        let result = unsafe {
            self.map
                .unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
        };
        // Advice only: failing to release costs resident memory, never correctness.
        let _ = result;
    }
}

/// Asks the kernel to back the spare capacity of `v` with transparent huge pages (Linux, where
/// THP is in `madvise` mode or `always`): a 2^20-constraint assignment then takes about 60
/// page faults instead of 32,000, which was a third of the pre-compiled path's time. Vectors
/// under 2 MiB and other systems are left alone; failure is ignored (advice only).
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    const HUGE: usize = 2 << 20;
    let spare = v.spare_capacity_mut();
    let bytes = std::mem::size_of_val(spare);
    if bytes < HUGE {
        return;
    }
    let begin = spare.as_mut_ptr() as usize;
    let start = begin.next_multiple_of(PAGE);
    let end = (begin + bytes) / PAGE * PAGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        #[allow(unsafe_code)]
        // SAFETY: `[start, end)` lies inside the vector's own allocation (its spare capacity,
        // rounded inward to whole pages), which nothing else references. MADV_HUGEPAGE changes
        // only how the kernel backs those pages, never their contents or validity.
        let result =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        let _ = result;
    }
}
