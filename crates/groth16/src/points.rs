//! One query of a parameter set (H, L, A, B₁ or B₂): its points decoded in host memory, or
//! read on demand from where they come from (a mapped parameter file, the timing parameters'
//! generator), so that a device holding a query's copy leaves no decoded one on the host.
//!
//! A query's identity ([`Points::id`]) stays the same whether or not its points are in host
//! memory: a GPU finds the copy it holds by it. [`Points::host`] gives the whole query in host
//! memory, reading it from its source (once, then kept) where it is not; [`Points::read`] gives
//! a range without keeping it; [`Points::release`] drops the host copy of a query that can be
//! read again.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::Groth16Error;

/// Where a query's points can be read from again.
pub trait PointSource<P>: Send + Sync {
    /// The points `range` of the query (within its length).
    fn read(&self, range: Range<usize>) -> Result<Vec<P>, Groth16Error>;
}

/// A query's identity: the same for every clone of its [`Points`], held or released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PointsId(usize);

/// One query's points (cheap to clone; clones share the points and the identity).
pub struct Points<P> {
    inner: Arc<Inner<P>>,
}

struct Inner<P> {
    len: usize,
    /// The decoded points, where they are in host memory.
    host: Mutex<Option<Arc<Vec<P>>>>,
    /// Where they can be read from again; `None` for points that exist only in memory (a
    /// setup's, a reader's).
    source: Option<Arc<dyn PointSource<P>>>,
}

impl<P> Clone for Points<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<P: Copy + Send + Sync + 'static> Points<P> {
    /// Points held in host memory only (they cannot be released).
    pub fn new(points: Vec<P>) -> Self {
        Self::build(points.len(), Some(Arc::new(points)), None)
    }

    /// `len` points of `source`, none read yet: [`Points::host`] reads them all when a host
    /// path needs them.
    pub fn lazy(len: usize, source: Arc<dyn PointSource<P>>) -> Self {
        Self::build(len, None, Some(source))
    }

    fn build(
        len: usize,
        host: Option<Arc<Vec<P>>>,
        source: Option<Arc<dyn PointSource<P>>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                len,
                host: Mutex::new(host),
                source,
            }),
        }
    }

    /// The number of points.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The query's identity, kept through releases and reads.
    pub fn id(&self) -> PointsId {
        PointsId(Arc::as_ptr(&self.inner) as *const () as usize)
    }

    fn held(&self) -> MutexGuard<'_, Option<Arc<Vec<P>>>> {
        // A panic while the slot was held leaves it either filled or empty: both consistent.
        self.inner
            .host
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The points in host memory, read whole from their source first (and kept) where they are
    /// not. Callers reading the same query at once read it once.
    pub fn host(&self) -> Result<Arc<Vec<P>>, Groth16Error> {
        let mut held = self.held();
        if let Some(points) = held.as_ref() {
            return Ok(Arc::clone(points));
        }
        let source = self.source()?;
        let points = Arc::new(source.read(0..self.inner.len)?);
        if points.len() != self.inner.len {
            return Err(Groth16Error::LengthMismatch {
                what: "points read back from their source",
                expected: self.inner.len,
                got: points.len(),
            });
        }
        *held = Some(Arc::clone(&points));
        Ok(points)
    }

    /// The points in host memory, if they are now (nothing is read).
    pub fn in_host(&self) -> Option<Arc<Vec<P>>> {
        self.held().clone()
    }

    /// Points `range`: copied from host memory where they are there, else read from their
    /// source and not kept.
    pub fn read(&self, range: Range<usize>) -> Result<Vec<P>, Groth16Error> {
        if range.start > range.end || range.end > self.inner.len {
            return Err(Groth16Error::LengthMismatch {
                what: "range of a parameter query",
                expected: self.inner.len,
                got: range.end,
            });
        }
        if let Some(points) = self.in_host() {
            return Ok(points[range].to_vec());
        }
        self.source()?.read(range)
    }

    fn source(&self) -> Result<&Arc<dyn PointSource<P>>, Groth16Error> {
        // Points are built either held or with a source, and only points with a source are
        // ever released: a query without either cannot be made.
        self.inner
            .source
            .as_ref()
            .ok_or(Groth16Error::ParameterMismatch(
                "a parameter query is neither in memory nor readable".into(),
            ))
    }

    /// Drops the host copy where the points can be read again (their memory is freed once no
    /// caller of [`Points::host`] holds it); returns the bytes dropped (0 when none were held
    /// or the points have no source).
    pub fn release(&self) -> u64 {
        if self.inner.source.is_none() {
            return 0;
        }
        match self.held().take() {
            Some(_) => self.bytes(),
            None => 0,
        }
    }

    /// Bytes of the points held in host memory now.
    pub fn host_bytes(&self) -> u64 {
        if self.held().is_some() {
            self.bytes()
        } else {
            0
        }
    }

    /// Bytes of all the points, in host memory.
    fn bytes(&self) -> u64 {
        (self.inner.len * std::mem::size_of::<P>()) as u64
    }
}

/// Equal when they are the same query, or of equal length with equal points (read where they
/// are not in memory; a read that fails makes them unequal).
impl<P: Copy + Send + Sync + PartialEq + 'static> PartialEq for Points<P> {
    fn eq(&self, other: &Self) -> bool {
        if self.id() == other.id() {
            return true;
        }
        if self.len() != other.len() {
            return false;
        }
        match (self.host(), other.host()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl<P> std::fmt::Debug for Points<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self
            .inner
            .host
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        f.debug_struct("Points")
            .field("len", &self.inner.len)
            .field("in_host", &held)
            .field("releasable", &self.inner.source.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// `i·10` for point i, counting the points read.
    struct Tens(AtomicUsize);

    impl PointSource<u64> for Tens {
        fn read(&self, range: Range<usize>) -> Result<Vec<u64>, Groth16Error> {
            self.0.fetch_add(range.len(), Ordering::Relaxed);
            Ok(range.map(|i| i as u64 * 10).collect())
        }
    }

    #[test]
    fn lazy_points_are_read_once_when_wanted_whole_and_in_ranges_unkept() {
        let source = Arc::new(Tens(AtomicUsize::new(0)));
        let points = Points::lazy(5, source.clone());
        assert_eq!(points.host_bytes(), 0);
        assert_eq!(points.read(1..3).unwrap(), vec![10, 20]);
        assert!(points.in_host().is_none());
        assert_eq!(*points.host().unwrap(), vec![0, 10, 20, 30, 40]);
        assert_eq!(*points.host().unwrap(), vec![0, 10, 20, 30, 40]);
        assert_eq!(source.0.load(Ordering::Relaxed), 2 + 5);
        assert_eq!(points.host_bytes(), 40);
        // A held query's ranges come from memory.
        assert_eq!(points.read(4..5).unwrap(), vec![40]);
        assert_eq!(source.0.load(Ordering::Relaxed), 7);
        assert!(points.read(4..6).is_err());
    }

    #[test]
    fn release_keeps_the_identity_and_reads_again_on_use() {
        let source = Arc::new(Tens(AtomicUsize::new(0)));
        let points = Points::lazy(3, source.clone());
        points.host().unwrap();
        let clone = points.clone();
        let id = points.id();
        assert_eq!(clone.release(), 24);
        assert_eq!(points.release(), 0, "already released through the clone");
        assert_eq!(points.id(), id);
        assert_eq!(points.host_bytes(), 0);
        assert_eq!(*points.host().unwrap(), vec![0, 10, 20]);
        assert_eq!(source.0.load(Ordering::Relaxed), 3 + 3);
        assert_ne!(Points::new(vec![0u64, 10, 20]).id(), id);
        assert_eq!(Points::new(vec![0u64, 10, 20]), points);
    }

    #[test]
    fn points_only_in_memory_are_never_released() {
        let points = Points::new(vec![1u64, 2]);
        assert_eq!(points.release(), 0);
        assert_eq!(points.host_bytes(), 16);
        assert_eq!(*points.host().unwrap(), vec![1, 2]);
    }

    #[test]
    fn a_source_that_gives_the_wrong_count_is_an_error() {
        struct Short;
        impl PointSource<u64> for Short {
            fn read(&self, _: Range<usize>) -> Result<Vec<u64>, Groth16Error> {
                Ok(vec![1])
            }
        }
        let points = Points::lazy(3, Arc::new(Short));
        assert!(matches!(
            points.host(),
            Err(Groth16Error::LengthMismatch {
                expected: 3,
                got: 1,
                ..
            })
        ));
        assert!(points.in_host().is_none());
    }
}
