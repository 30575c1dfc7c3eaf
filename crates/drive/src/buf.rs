//! Page-aligned buffers and a bounded pool of them.
//!
//! `O_DIRECT` needs the memory address, the file offset and the length of
//! every transfer aligned to the device's logical block size; [`ALIGN`]
//! (4096) covers every block size in use. An [`AlignedBuf`] owns such
//! memory, is always fully initialised (allocated zeroed, so handing any part
//! of its capacity to the kernel or to safe code is sound), and is passed *by
//! value* through the drive API: the io_uring backend keeps it alive while the
//! kernel uses it, even if the caller's future is dropped.
//!
//! A [`BufferPool`] hands out buffers of one size class and bounds how many
//! are out at once; a pooled buffer goes back to its pool when dropped, so
//! an error path that loses a buffer cannot leak pool capacity.

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::error::{DriveError, Result};
use crate::hugepage::{self, Carver, Piece};

/// Alignment (and size granularity) of every [`AlignedBuf`], in bytes.
pub const ALIGN: usize = 4096;

/// Largest buffer this crate allocates (1 GiB): a bound, and it keeps every
/// transfer length within io_uring's `u32`.
pub const MAX_BUF_BYTES: usize = 1 << 30;

/// Rounds `n` up to a multiple of [`ALIGN`] (saturating).
pub const fn align_up(n: usize) -> usize {
    match n.checked_add(ALIGN - 1) {
        Some(v) => v & !(ALIGN - 1),
        None => usize::MAX & !(ALIGN - 1),
    }
}

/// An allocation of `capacity` bytes aligned to [`ALIGN`]: from the heap,
/// or carved from a huge-page region (see [`crate::hugepage`]).
struct RawAlloc {
    ptr: NonNull<u8>,
    capacity: usize,
    /// The region the bytes were carved from (freed with its last piece),
    /// or `None` for a heap allocation.
    piece: Option<Piece>,
}

// SAFETY: RawAlloc uniquely owns its bytes (no aliasing pointers are kept
// anywhere else; a carved piece's region is shared, but only its address
// and its slab's bookkeeping, under the carver's lock), so moving it to
// another thread is sound.
unsafe impl Send for RawAlloc {}
// SAFETY: RawAlloc has no interior mutability: through a shared reference
// nothing can be written, so sharing it between threads is sound.
unsafe impl Sync for RawAlloc {}

impl RawAlloc {
    /// `capacity` bytes, rounded up to [`ALIGN`]; with `carve`, from a
    /// huge-page region when the size qualifies (a pool's buffers: one
    /// size, kept for reuse, so a region is not mapped and zeroed for a
    /// single short-lived buffer of an odd size).
    fn new(capacity: usize, carve: bool) -> Result<Self> {
        let capacity = align_up(capacity.max(1));
        if capacity > MAX_BUF_BYTES {
            return Err(DriveError::InvalidArgument(format!(
                "buffer of {capacity} bytes exceeds the {MAX_BUF_BYTES}-byte limit"
            )));
        }
        if carve
            && capacity >= hugepage::MIN_BYTES
            && hugepage::huge_pages()
            && let Some(piece) = Carver::global().carve(capacity)
        {
            // Initialised: fresh mapped memory (zeroed), or a piece an
            // earlier pool buffer held.
            return Ok(RawAlloc {
                ptr: piece.ptr,
                capacity,
                piece: Some(piece),
            });
        }
        let layout = Layout::from_size_align(capacity, ALIGN)
            .map_err(|e| DriveError::InvalidArgument(format!("buffer layout: {e}")))?;
        // SAFETY: the layout has a non-zero size (capacity >= ALIGN). The
        // memory is zeroed, so every byte is initialised from the start.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| DriveError::Io {
            op: "alloc",
            source: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
        })?;
        Ok(RawAlloc {
            ptr,
            capacity,
            piece: None,
        })
    }
}

impl Drop for RawAlloc {
    fn drop(&mut self) {
        if self.piece.is_some() {
            // Dropping the piece releases its region.
            return;
        }
        // Cannot fail: the same layout was accepted at allocation.
        if let Ok(layout) = Layout::from_size_align(self.capacity, ALIGN) {
            // SAFETY: ptr was returned by alloc_zeroed with this exact layout
            // and is freed exactly once (RawAlloc is not Clone).
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

struct PoolShared {
    buf_bytes: usize,
    max_outstanding: usize,
    max_idle: usize,
    idle: Mutex<Vec<RawAlloc>>,
    permits: Arc<Semaphore>,
}

struct PoolLink {
    pool: Arc<PoolShared>,
    _permit: OwnedSemaphorePermit,
}

/// An owned, fully initialised buffer whose address and capacity are
/// multiples of [`ALIGN`].
///
/// `len` bytes (`0..len`) are the content, as seen through `Deref<[u8]>`;
/// the whole capacity is initialised memory and reachable through
/// [`AlignedBuf::capacity_mut`].
pub struct AlignedBuf {
    raw: Option<RawAlloc>,
    len: usize,
    pool: Option<PoolLink>,
}

impl AlignedBuf {
    /// Allocates a zeroed buffer of at least `capacity` bytes (rounded up to
    /// a multiple of [`ALIGN`], at least one page). Fails beyond
    /// [`MAX_BUF_BYTES`] or when memory is exhausted.
    pub fn with_capacity(capacity: usize) -> Result<Self> {
        Ok(AlignedBuf {
            raw: Some(RawAlloc::new(capacity, false)?),
            len: 0,
            pool: None,
        })
    }

    /// A buffer of no capacity (no allocation): what a
    /// [`ShardWriter`](crate::ShardWriter) that keeps the buffer it was
    /// given hands back in its place.
    pub fn empty() -> Self {
        AlignedBuf {
            raw: None,
            len: 0,
            pool: None,
        }
    }

    /// Allocates a buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> Result<Self> {
        let mut buf = Self::with_capacity(data.len())?;
        buf.extend_from_slice(data);
        Ok(buf)
    }

    /// Bytes of content.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no content.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Allocated bytes (a multiple of [`ALIGN`]).
    pub fn capacity(&self) -> usize {
        self.raw.as_ref().map_or(0, |raw| raw.capacity)
    }

    /// Bytes that can still be appended.
    pub fn remaining(&self) -> usize {
        self.capacity() - self.len
    }

    /// Sets the content length. The bytes keep whatever they held (the
    /// memory is always initialised).
    ///
    /// # Panics
    /// If `len` exceeds the capacity: a caller bug, not an input error.
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.capacity(),
            "AlignedBuf::set_len({len}) beyond capacity {}",
            self.capacity()
        );
        self.len = len;
    }

    /// Empties the buffer (keeps the allocation).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends as much of `data` as fits; returns how many bytes were taken.
    pub fn extend_from_slice(&mut self, data: &[u8]) -> usize {
        let take = data.len().min(self.remaining());
        let start = self.len;
        self.capacity_mut()[start..start + take].copy_from_slice(&data[..take]);
        self.len += take;
        take
    }

    /// The whole capacity as a mutable slice, e.g. to encode into it before
    /// [`set_len`](Self::set_len).
    pub fn capacity_mut(&mut self) -> &mut [u8] {
        match &self.raw {
            // SAFETY: the allocation is `capacity` bytes, initialised at
            // allocation, uniquely owned by self and borrowed mutably here.
            Some(raw) => unsafe { std::slice::from_raw_parts_mut(raw.ptr.as_ptr(), raw.capacity) },
            None => &mut [],
        }
    }

    /// The whole capacity as a shared slice.
    pub fn capacity_slice(&self) -> &[u8] {
        match &self.raw {
            // SAFETY: as in capacity_mut, borrowed immutably.
            Some(raw) => unsafe { std::slice::from_raw_parts(raw.ptr.as_ptr(), raw.capacity) },
            None => &[],
        }
    }

    /// Whether the buffer came from a [`BufferPool`] (and will return to it
    /// on drop).
    pub fn is_pooled(&self) -> bool {
        self.pool.is_some()
    }

    /// Start of the allocation, for the kernel. Stable for the lifetime of
    /// the buffer: moving an `AlignedBuf` does not move its memory.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.raw
            .as_ref()
            .map_or(std::ptr::null_mut(), |raw| raw.ptr.as_ptr())
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let (Some(raw), Some(link)) = (self.raw.take(), self.pool.take()) else {
            return;
        };
        if raw.capacity == link.pool.buf_bytes
            && let Ok(mut idle) = link.pool.idle.lock()
            && idle.len() < link.pool.max_idle
        {
            idle.push(raw);
        }
        // Otherwise `raw` is freed here; the permit is released either way.
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.capacity_slice()[..self.len]
    }
}

/// The content (`0..len`), so that a buffer can back a `Bytes` without a
/// copy (`Bytes::from_owner`): the allocation goes (or back to its pool)
/// when the last view of it is dropped.
impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.capacity_mut()[..len]
    }
}

// SAFETY: the bytes are the whole capacity of the allocation, which moving
// an `AlignedBuf` does not move (it is on the heap, owned through a
// pointer) and which only `&mut self` methods change; the pointer and
// capacity are fixed for the buffer's life.
unsafe impl md5x::StableBytes for AlignedBuf {
    /// The whole capacity (not only `0..len`): a PUT hashes the data
    /// shards it read into a buffer before the buffer's length is set.
    fn bytes(&self) -> &[u8] {
        self.capacity_slice()
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("pooled", &self.is_pooled())
            .finish()
    }
}

/// A bounded pool of [`AlignedBuf`]s of one size class.
///
/// At most `max_outstanding` buffers are out at once ([`get`](Self::get)
/// waits, [`try_get`](Self::try_get) returns `None`); at most `max_idle`
/// freed buffers are kept for reuse. Buffers return on drop.
#[derive(Clone)]
pub struct BufferPool {
    shared: Arc<PoolShared>,
}

impl BufferPool {
    /// A pool of buffers of `buf_bytes` (rounded up to [`ALIGN`]).
    pub fn new(buf_bytes: usize, max_outstanding: usize, max_idle: usize) -> Result<Self> {
        let buf_bytes = align_up(buf_bytes.max(1));
        if buf_bytes > MAX_BUF_BYTES {
            return Err(DriveError::InvalidArgument(format!(
                "pool buffers of {buf_bytes} bytes exceed the {MAX_BUF_BYTES}-byte limit"
            )));
        }
        if max_outstanding == 0 || max_outstanding > Semaphore::MAX_PERMITS {
            return Err(DriveError::InvalidArgument(
                "max_outstanding must be at least 1".into(),
            ));
        }
        Ok(BufferPool {
            shared: Arc::new(PoolShared {
                buf_bytes,
                max_outstanding,
                max_idle: max_idle.min(max_outstanding),
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max_outstanding)),
            }),
        })
    }

    /// Capacity of every buffer of this pool.
    pub fn buf_bytes(&self) -> usize {
        self.shared.buf_bytes
    }

    /// Buffers currently out.
    pub fn outstanding(&self) -> usize {
        self.shared.max_outstanding - self.shared.permits.available_permits()
    }

    /// Buffers kept for reuse right now.
    pub fn idle(&self) -> usize {
        self.shared.idle.lock().map_or(0, |idle| idle.len())
    }

    /// A buffer (empty, `len() == 0`), waiting while the pool is exhausted.
    pub async fn get(&self) -> Result<AlignedBuf> {
        let permit = Arc::clone(&self.shared.permits)
            .acquire_owned()
            .await
            .map_err(|_| DriveError::BackendStopped)?;
        self.wrap(permit)
    }

    /// A buffer if one is free under the bound, else `None`.
    pub fn try_get(&self) -> Option<Result<AlignedBuf>> {
        match Arc::clone(&self.shared.permits).try_acquire_owned() {
            Ok(permit) => Some(self.wrap(permit)),
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => None,
        }
    }

    fn wrap(&self, permit: OwnedSemaphorePermit) -> Result<AlignedBuf> {
        let reused = self.shared.idle.lock().ok().and_then(|mut idle| idle.pop());
        let raw = match reused {
            Some(raw) => raw,
            None => RawAlloc::new(self.shared.buf_bytes, true)?,
        };
        Ok(AlignedBuf {
            raw: Some(raw),
            len: 0,
            pool: Some(PoolLink {
                pool: Arc::clone(&self.shared),
                _permit: permit,
            }),
        })
    }
}

/// Bounded pools of buffers of several sizes, each made on first use: at
/// most `max_sizes` sizes are pooled, none larger than a set bound; a
/// buffer of any other size has no pool (its caller allocates).
pub struct PoolClasses {
    pools: Mutex<HashMap<usize, BufferPool>>,
    max_sizes: usize,
    max_outstanding: usize,
    max_idle: usize,
    max_buf_bytes: usize,
    max_idle_bytes: usize,
}

impl PoolClasses {
    /// Pools of at most `max_sizes` sizes, each with at most
    /// `max_outstanding` buffers out and `max_idle` kept for reuse.
    pub fn new(max_sizes: usize, max_outstanding: usize, max_idle: usize) -> Self {
        PoolClasses {
            pools: Mutex::new(HashMap::new()),
            max_sizes,
            max_outstanding,
            max_idle,
            max_buf_bytes: MAX_BUF_BYTES,
            max_idle_bytes: usize::MAX,
        }
    }

    /// Pools no buffers larger than `bytes`.
    pub fn max_buf_bytes(mut self, bytes: usize) -> Self {
        self.max_buf_bytes = bytes;
        self
    }

    /// Keeps at most `bytes` idle per pool (at least one buffer).
    pub fn max_idle_bytes(mut self, bytes: usize) -> Self {
        self.max_idle_bytes = bytes;
        self
    }

    /// The pool of buffers of `bytes` (rounded up to [`ALIGN`]), made now
    /// if there is room for another size; `None` beyond the bounds.
    pub fn pool(&self, bytes: usize) -> Option<BufferPool> {
        let bytes = align_up(bytes.max(1));
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.get(&bytes) {
            return Some(p.clone());
        }
        if pools.len() >= self.max_sizes || bytes > self.max_buf_bytes {
            return None;
        }
        let idle = self.max_idle.min((self.max_idle_bytes / bytes).max(1));
        let pool = BufferPool::new(bytes, self.max_outstanding, idle).ok()?;
        pools.insert(bytes, pool.clone());
        Some(pool)
    }
}

impl fmt::Debug for PoolClasses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_list().entries(pools.keys()).finish()
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("buf_bytes", &self.shared.buf_bytes)
            .field("available", &self.shared.permits.available_permits())
            .field("idle", &self.idle())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pool_classes_keep_to_their_bounds() {
        let classes = PoolClasses::new(2, 8, 8)
            .max_buf_bytes(64 * ALIGN)
            .max_idle_bytes(32 * ALIGN);
        // Sizes round up to ALIGN: one pool for both.
        let a = classes.pool(3 * ALIGN - 1).unwrap();
        assert_eq!(a.buf_bytes(), 3 * ALIGN);
        assert!(classes.pool(3 * ALIGN).is_some());
        // Too large for a pool, then a second size, then no third.
        assert!(classes.pool(65 * ALIGN).is_none());
        let b = classes.pool(32 * ALIGN).unwrap();
        assert!(classes.pool(5 * ALIGN).is_none());
        assert_eq!(format!("{classes:?}").matches(',').count(), 1);
        // At most 32 ALIGN blocks idle: one buffer of 32.
        let bufs = vec![b.get().await.unwrap(), b.get().await.unwrap()];
        drop(bufs);
        assert_eq!(b.idle(), 1);
        drop(a);
    }

    #[tokio::test]
    async fn a_pools_large_buffers_are_carved_from_huge_page_regions() {
        // A size no other test uses, so its region is this test's.
        let cap = (300 << 10) + 7 * ALIGN;
        let pool = BufferPool::new(cap, 4, 4).unwrap();
        let mut a = pool.get().await.unwrap();
        let mut b = pool.get().await.unwrap();
        let mut heap = AlignedBuf::with_capacity(cap).unwrap();
        for buf in [&mut a, &mut b, &mut heap] {
            assert_eq!(buf.capacity(), cap);
            assert!(buf.capacity_slice().iter().all(|&x| x == 0));
            buf.capacity_mut().fill(0xa5);
        }
        let (pa, pb) = (a.as_mut_ptr() as usize, b.as_mut_ptr() as usize);
        if hugepage::huge_pages() {
            // One after the other in a fresh region.
            assert_eq!(pa % hugepage::HUGE_PAGE, 0);
            assert_eq!(pb, pa + cap);
        }
        assert!(a.is_pooled() && !heap.is_pooled());
        // Freed and taken again: the same memory, reused by the pool.
        drop(a);
        let mut again = pool.get().await.unwrap();
        assert_eq!(again.as_mut_ptr() as usize, pa);
    }

    #[test]
    fn aligned_and_zeroed() {
        for cap in [1, 4095, 4096, 4097, 1 << 20] {
            let mut buf = AlignedBuf::with_capacity(cap).unwrap();
            assert_eq!(buf.as_mut_ptr() as usize % ALIGN, 0);
            assert_eq!(buf.capacity() % ALIGN, 0);
            assert!(buf.capacity() >= cap);
            assert!(buf.capacity_slice().iter().all(|&b| b == 0));
            assert!(buf.is_empty());
        }
        assert!(AlignedBuf::with_capacity(MAX_BUF_BYTES + 1).is_err());
    }

    #[test]
    fn extend_and_len() {
        let mut buf = AlignedBuf::with_capacity(10).unwrap();
        assert_eq!(buf.extend_from_slice(b"hello"), 5);
        assert_eq!(&buf[..], b"hello");
        let big = vec![7u8; ALIGN];
        assert_eq!(buf.extend_from_slice(&big), ALIGN - 5);
        assert_eq!(buf.len(), ALIGN);
        buf.clear();
        assert!(buf.is_empty());
    }

    #[tokio::test]
    async fn pool_bounds_and_reuse() {
        let pool = BufferPool::new(8192, 2, 1).unwrap();
        let mut a = pool.get().await.unwrap();
        let a_ptr = a.as_mut_ptr();
        let b = pool.try_get().unwrap().unwrap();
        assert!(pool.try_get().is_none(), "bound of 2 must hold");
        drop(a);
        assert_eq!(pool.idle(), 1);
        let mut c = pool.try_get().unwrap().unwrap();
        assert_eq!(c.as_mut_ptr(), a_ptr, "idle buffer reused");
        assert_eq!(c.len(), 0);
        assert_eq!(pool.outstanding(), 2);
        drop(b);
        drop(c);
        assert_eq!(pool.outstanding(), 0);
        assert_eq!(pool.idle(), 1, "max_idle of 1 must hold");
        // A waiter is woken when a buffer comes back.
        let x = pool.get().await.unwrap();
        let y = pool.get().await.unwrap();
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get().await.map(|b| b.capacity()) })
        };
        tokio::task::yield_now().await;
        drop(x);
        assert_eq!(waiter.await.unwrap().unwrap(), 8192);
        drop(y);
    }
}
