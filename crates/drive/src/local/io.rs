//! The primitive operations both backends provide, with identical
//! semantics: the drive logic in `local/mod.rs` is written once against
//! [`Io`].
//!
//! Paths here are relative to the drive root and already validated; every
//! call resolves them against a descriptor of the root (`*at` system calls),
//! never against the working directory.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FallocateFlags, FileType, Mode, OFlags, RenameFlags, StatxFlags};
use rustix::io::{Errno, ReadWriteFlags};
use tokio::sync::Semaphore;

use super::uring::{self, Chain, File, IoVecs, Op, StepResult, Uring};
use super::walk::Namespace;
use crate::buf::AlignedBuf;
use crate::pipe::{Pipe, PipePool};

/// A buffer handed to the kernel: the aligned kind for shard data, a plain
/// vector for small metadata files. For both, the *region* the kernel may
/// read or write is fully initialised memory: an aligned buffer's whole
/// capacity, a vector's length.
pub(crate) enum IoBuf {
    Aligned(AlignedBuf),
    Heap(Vec<u8>),
}

impl IoBuf {
    pub(crate) fn region_len(&self) -> usize {
        match self {
            IoBuf::Aligned(buf) => buf.capacity(),
            IoBuf::Heap(vec) => vec.len(),
        }
    }

    pub(crate) fn region(&self) -> &[u8] {
        match self {
            IoBuf::Aligned(buf) => buf.capacity_slice(),
            IoBuf::Heap(vec) => vec,
        }
    }

    pub(crate) fn region_mut(&mut self) -> &mut [u8] {
        match self {
            IoBuf::Aligned(buf) => buf.capacity_mut(),
            IoBuf::Heap(vec) => vec,
        }
    }

    pub(crate) fn region_ptr(&mut self) -> *mut u8 {
        match self {
            IoBuf::Aligned(buf) => buf.as_mut_ptr(),
            IoBuf::Heap(vec) => vec.as_mut_ptr(),
        }
    }

    pub(crate) fn into_aligned(self) -> Option<AlignedBuf> {
        match self {
            IoBuf::Aligned(buf) => Some(buf),
            IoBuf::Heap(_) => None,
        }
    }

    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            IoBuf::Heap(vec) => vec,
            IoBuf::Aligned(buf) => buf.to_vec(),
        }
    }
}

/// An open file. The descriptor is shared with in-flight ring ops, so it is
/// closed only when the last of them completes.
#[derive(Clone)]
pub(crate) struct Fd {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) direct: bool,
}

/// What `statx` says about a path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stat {
    pub(crate) size: u64,
    pub(crate) is_dir: bool,
    pub(crate) modified: Option<SystemTime>,
    pub(crate) created: Option<SystemTime>,
}

fn to_time(sec: i64, nsec: u32) -> Option<SystemTime> {
    let nanos = Duration::new(sec.unsigned_abs(), nsec.min(999_999_999));
    if sec >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(nanos)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(nanos)
    }
}

impl Stat {
    pub(crate) fn from_parts(
        mode: u32,
        size: u64,
        mtime: Option<(i64, u32)>,
        btime: Option<(i64, u32)>,
    ) -> Stat {
        let kind = mode & libc::S_IFMT;
        Stat {
            size,
            is_dir: kind == libc::S_IFDIR,
            modified: mtime.and_then(|(s, n)| to_time(s, n)),
            created: btime.and_then(|(s, n)| to_time(s, n)),
        }
    }

    fn from_rustix(st: &rustix::fs::Statx) -> Stat {
        let has = |flag: StatxFlags| st.stx_mask & flag.bits() != 0;
        Stat::from_parts(
            u32::from(st.stx_mode),
            st.stx_size,
            has(StatxFlags::MTIME).then_some((st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec)),
            has(StatxFlags::BTIME).then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec)),
        )
    }
}

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenKind {
    /// Read-only.
    Read,
    /// Write-only, created or truncated.
    CreateTruncate,
    /// Write-only, must not exist.
    CreateExclusive,
    /// A directory, to fsync it or list it.
    Directory,
}

const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;
/// Most buffers in one vectored write (Linux's `UIO_MAXIOV`).
pub(crate) const MAX_IOVECS: usize = 1024;

fn open_flags(kind: OpenKind, direct: bool) -> OFlags {
    let mut flags = OFlags::CLOEXEC
        | match kind {
            OpenKind::Read => OFlags::RDONLY,
            OpenKind::CreateTruncate => OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
            OpenKind::CreateExclusive => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            OpenKind::Directory => OFlags::RDONLY | OFlags::DIRECTORY,
        };
    if direct {
        flags |= OFlags::DIRECT;
    }
    flags
}

fn checked_len(buf: &IoBuf, start: usize, len: usize) -> io::Result<u32> {
    let end = start
        .checked_add(len)
        .filter(|&end| end <= buf.region_len());
    match (end, u32::try_from(len)) {
        (Some(_), Ok(len)) => Ok(len),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "transfer beyond buffer",
        )),
    }
}

fn ring_result(result: i32) -> io::Result<usize> {
    if result < 0 {
        Err(io::Error::from_raw_os_error(-result))
    } else {
        Ok(result.unsigned_abs() as usize)
    }
}

fn at_path(rel: &str) -> &str {
    if rel.is_empty() { "." } else { rel }
}

fn cstring(rel: &str) -> io::Result<CString> {
    CString::new(at_path(rel)).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn statx_mask() -> StatxFlags {
    StatxFlags::TYPE | StatxFlags::MODE | StatxFlags::SIZE | StatxFlags::MTIME | StatxFlags::BTIME
}

/// Runs blocking system calls on tokio's blocking pool, at most `permits`
/// at a time per drive.
#[derive(Clone)]
pub(crate) struct Blocking {
    pub(crate) root: Arc<OwnedFd>,
    permits: Arc<Semaphore>,
    /// Changes to the drive's directories, and the walk's directory cache
    /// they invalidate (shared by both backends: every primitive that
    /// creates, renames or removes a name reports here).
    pub(crate) ns: Arc<Namespace>,
}

impl Blocking {
    pub(crate) fn new(root: Arc<OwnedFd>, max_threads: usize) -> Blocking {
        Blocking {
            root,
            permits: Arc::new(Semaphore::new(max_threads.clamp(1, 1024))),
            ns: Arc::new(Namespace::default()),
        }
    }

    pub(crate) async fn run<T, F>(&self, f: F) -> io::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&OwnedFd) -> io::Result<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "blocking pool closed"))?;
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f(&root)
        })
        .await
        .map_err(|e| io::Error::other(format!("blocking task failed: {e}")))?
    }
}

/// Errors that say the kernel or file system lacks a feature, not that
/// one call failed: `ENOSYS` (no `openat2`, no `cachestat`), `EINVAL` (no
/// `RESOLVE_CACHED` before Linux 5.12), `EOPNOTSUPP` (a file system
/// without `RWF_NOWAIT`; a directory or special file gives it too, and
/// says nothing of the file system). A feature found missing is not tried
/// again.
fn unsupported(e: rustix::io::Errno) -> bool {
    matches!(e, Errno::NOSYS | Errno::OPNOTSUPP | Errno::INVAL)
}

/// `cachestat(2)`'s range and answer (Linux 6.5).
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// `cachestat`'s number: 451 in x86-64's table and in the generic one
/// (aarch64, riscv64, loongarch64); other architectures do without.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
const SYS_CACHESTAT: libc::c_long = 451;

/// Whether every page of `len` bytes at `offset` of `fd` is in the page
/// cache (`cachestat`; `ENOSYS` before Linux 6.5).
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
fn cached_pages(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<bool, rustix::io::Errno> {
    use std::os::fd::AsRawFd;
    let page = 4096u64;
    let first = offset / page;
    let last = offset.saturating_add(len).div_ceil(page);
    let range = CachestatRange { off: offset, len };
    let mut st = Cachestat::default();
    // SAFETY: `fd` is an open descriptor for the duration of the call, and
    // both pointers are to live, properly aligned `repr(C)` structs of the
    // layout the kernel expects (`struct cachestat_range` and `struct
    // cachestat`); the kernel writes only `*st`.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            &range as *const CachestatRange,
            &mut st as *mut Cachestat,
            0u32,
        )
    };
    if rc != 0 {
        return Err(rustix::io::Errno::from_raw_os_error(
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ));
    }
    Ok(st.nr_cache >= last - first)
}

/// Without a known `cachestat` number: never piped.
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
)))]
fn cached_pages(_: BorrowedFd<'_>, _: u64, _: u64) -> Result<bool, rustix::io::Errno> {
    Err(rustix::io::Errno::NOSYS)
}

/// Reads `dst.len()` bytes of `fd` at `offset` with `preadv2(RWF_NOWAIT)`,
/// that is only from the page cache: how many, fewer only at the end of
/// the file.
fn pread_cached(fd: BorrowedFd<'_>, dst: &mut [u8], offset: u64) -> Result<usize, Errno> {
    let mut got = 0;
    while got < dst.len() {
        match rustix::io::preadv2(
            fd,
            &mut [io::IoSliceMut::new(&mut dst[got..])],
            offset + got as u64,
            ReadWriteFlags::NOWAIT,
        ) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Bytes of a PMD-mapped huge page on x86-64 and aarch64 (4 KiB pages):
/// the page-cache folio size [`populate_huge`] asks the kernel for.
pub(crate) const HUGE_FOLIO: u64 = 2 << 20;

/// Reads bytes `start..end` of the regular file `fd` (all inside the
/// file) into the page cache, in folios of [`HUGE_FOLIO`] bytes where the
/// kernel and file system can: through a shared read-only mapping of the
/// `HUGE_FOLIO`-aligned chunks holding the range, marked `MADV_HUGEPAGE`
/// and populated with `MADV_POPULATE_READ` (Linux 5.14). A fault in such a
/// mapping reads ahead in PMD-sized folios, where `read(2)`'s read-ahead
/// starts at single pages and grows a file's folios only while one reader
/// reads it in order; reads served later from a large folio cost about
/// half the CPU (`docs/benchmarks.md`). The mapping is never dereferenced:
/// `MADV_POPULATE_READ` reports what would have been a `SIGBUS` (an I/O
/// error, a page past the end of the file) as `EFAULT`, and the mapping is
/// gone before this returns. Assumes 4 KiB pages: with larger ones,
/// `madvise` refuses the range (`EINVAL`) and [`Io::fill_huge`] turns
/// fills off.
fn populate_huge(fd: BorrowedFd<'_>, start: u64, end: u64) -> Result<(), Errno> {
    use rustix::mm::{Advice, MapFlags, ProtFlags};
    const PAGE: u64 = 4096;
    if start >= end {
        return Ok(());
    }
    let base_off = start - start % HUGE_FOLIO;
    let map_end = end.div_ceil(HUGE_FOLIO) * HUGE_FOLIO;
    let map_len = usize::try_from(map_end - base_off).map_err(|_| Errno::INVAL)?;
    let first = usize::try_from(start - start % PAGE - base_off).map_err(|_| Errno::INVAL)?;
    let last = usize::try_from(end.div_ceil(PAGE) * PAGE - base_off).map_err(|_| Errno::INVAL)?;
    // SAFETY: a new shared, read-only mapping at an address the kernel
    // picks (for a file offset on a `HUGE_FOLIO` boundary, ext4 and XFS
    // pick an address on one too, so a huge folio can be mapped whole):
    // it overlaps no memory the program uses, nothing ever reads through
    // it, and it is unmapped below before anything else can see it.
    let base = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            map_len,
            ProtFlags::READ,
            MapFlags::SHARED,
            fd,
            base_off,
        )?
    };
    // SAFETY: `base..base + map_len` is the mapping made above. Advice
    // changes its flags (`MADV_HUGEPAGE`) or faults its pages in from the
    // page cache (`MADV_POPULATE_READ`, over `first..last`, inside it); no
    // memory of the program is read or written.
    let advised = unsafe {
        rustix::mm::madvise(base, map_len, Advice::LinuxHugepage).and_then(|()| {
            rustix::mm::madvise(base.add(first), last - first, Advice::LinuxPopulateRead)
        })
    };
    // SAFETY: the same mapping, of which no reference was ever made.
    let unmapped = unsafe { rustix::mm::munmap(base, map_len) };
    advised.and(unmapped)
}

/// `len(dst)` bytes of `fd` at `offset` into `dst` and into a pipe from
/// `pipes`, when every page of the range is cached and the range fits a
/// pipe; `None` otherwise (and the pool is turned off where `cachestat`,
/// `splice` or `RWF_NOWAIT` is missing).
///
/// The splice comes first, so the pages are pinned by the pipe before
/// `dst` is read from them: reclaim, `fadvise(DONTNEED)`, `drop_caches`
/// and page migration all skip a page with a reference beyond the cache's
/// own, so the read finds the very pages the pipe holds (see
/// [`crate::pipe`] for what else could remove them).
fn splice_cached(
    fd: &OwnedFd,
    offset: u64,
    dst: &mut [u8],
    pipes: &Arc<PipePool>,
) -> Option<(usize, Pipe)> {
    if !pipes.enabled() || dst.is_empty() || dst.len() > crate::pipe::MAX_PIPED {
        return None;
    }
    let unsupported_off = |e: Errno| {
        if unsupported(e) {
            pipes.disable();
        }
    };
    match cached_pages(fd.as_fd(), offset, dst.len() as u64) {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => {
            unsupported_off(e);
            return None;
        }
    }
    let mut pipe = pipes.get()?;
    let n = match pipe.splice_from(fd.as_fd(), offset, dst.len()) {
        Ok(n) => n,
        Err(e) => {
            if let Some(c) = e.raw_os_error() {
                unsupported_off(Errno::from_raw_os_error(c));
            }
            return None;
        }
    };
    match pread_cached(fd.as_fd(), &mut dst[..n], offset) {
        Ok(got) if got == n => Some((n, pipe)),
        // The file shrank since the splice: its pages are no longer the
        // pipe's.
        Ok(_) => None,
        Err(e) => {
            unsupported_off(e);
            None
        }
    }
}

/// The primitives, over io_uring when a ring is running, else over the
/// blocking pool. Directory listing, `statvfs`, `ftruncate` and recursive
/// removal have no io_uring opcode (or only on very recent kernels) and use
/// the blocking pool in both backends.
pub(crate) struct Io {
    pub(crate) blocking: Blocking,
    pub(crate) uring: Option<Uring>,
    pub(crate) scratch: Scratch,
    /// Whether [`Io::read_cached`] is tried (cleared for good when the
    /// kernel or file system does not support `RESOLVE_CACHED` or
    /// `RWF_NOWAIT`).
    pub(crate) cached_reads: AtomicBool,
    /// Whether [`Io::fill_huge`] is tried (cleared for good when the kernel
    /// lacks `cachestat`, `MADV_HUGEPAGE` or `MADV_POPULATE_READ`, or the
    /// file system cannot map files).
    pub(crate) huge_fill: AtomicBool,
    /// Directory `fsync`s that failed on this drive, by any path. A failed
    /// directory sync reports its error once, to whoever syncs first: a
    /// later sync through another descriptor succeeds although the
    /// entries the failed write-back carried may be lost. A change notes
    /// the count before it starts and is failed if it moved before the
    /// change's own sync came back (`Inner::dir_change` in `local/mod.rs`).
    pub(crate) dir_sync_failures: AtomicU64,
}

/// Most idle buffers a [`Scratch`] keeps.
const MAX_IDLE_SCRATCH: usize = 64;

/// Buffers of one size for the first read of [`Io::read_small`], kept for
/// reuse: the read lands in one and the bytes read are copied out, so a
/// file of a few KiB costs a copy of its length, not the zeroing of a
/// guess-sized buffer (and the caller keeps an exact-size `Vec`).
pub(crate) struct Scratch {
    size: usize,
    idle: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl Scratch {
    pub(crate) fn new(size: usize) -> Scratch {
        Scratch {
            size,
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// A buffer of `len` initialised bytes (stale content, from the pool,
    /// when `len` is the pool's size).
    fn take(&self, len: usize) -> Vec<u8> {
        if len == self.size
            && let Some(buf) = self.idle.lock().ok().and_then(|mut idle| idle.pop())
        {
            return buf;
        }
        vec![0; len]
    }

    fn put(&self, buf: Vec<u8>) {
        if buf.len() == self.size
            && let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE_SCRATCH
        {
            idle.push(buf);
        }
    }
}

impl Io {
    fn root(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.blocking.root)
    }

    /// Reads up to `dst.len()` bytes at `offset` of the file `rel` into
    /// `dst` on the calling thread, when that needs no disk I/O: the path
    /// resolves from the dentry cache (`openat2` with `RESOLVE_CACHED`) and
    /// every byte is in the page cache (`preadv2` with `RWF_NOWAIT`). The
    /// bytes are then copied by the thread that goes on to use them: no hop
    /// through the ring or the pool, and `dst` is warm in this core's cache
    /// for whatever reads it next (a shard record's hash, an `xl.meta`'s
    /// decoding).
    ///
    /// `Some(n)`: `n` bytes were read, fewer than asked only at the end of
    /// the file. `None`: anything else, such as a name or page not cached
    /// or any error; nothing changed but `dst`, and the caller reads the
    /// usual way (which also reports errors).
    pub(crate) fn read_cached(&self, rel: &str, offset: u64, dst: &mut [u8]) -> Option<usize> {
        self.read_cached_piped(rel, offset, dst, None)
            .map(|(n, _)| n)
    }

    /// [`read_cached`](Self::read_cached), which with `pipes` also leaves
    /// the bytes read in a pipe (see [`crate::pipe`]) where it can: when
    /// every page of the range is in the page cache (`cachestat`, so that
    /// `splice` does not wait for the disk), the range is no longer than
    /// [`MAX_PIPED`](crate::pipe::MAX_PIPED), and a pipe can be had.
    /// Otherwise the bytes are read as `read_cached` reads them, through
    /// the file already opened, with no pipe.
    pub(crate) fn read_cached_piped(
        &self,
        rel: &str,
        offset: u64,
        dst: &mut [u8],
        pipes: Option<&Arc<PipePool>>,
    ) -> Option<(usize, Option<Pipe>)> {
        let fd = self.open_cached(rel)?;
        if let Some(pipes) = pipes
            && let Some((n, pipe)) = splice_cached(&fd, offset, dst, pipes)
        {
            return Some((n, Some(pipe)));
        }
        self.read_cached_fd(fd.as_fd(), offset, dst)
            .map(|n| (n, None))
    }

    /// `len(dst)` bytes of the open file `fd` at `offset` into `dst` if the
    /// page cache holds them all (`RWF_NOWAIT`), without waiting for the
    /// disk; `None` otherwise, or when cached reads are off.
    pub(crate) fn read_cached_fd(
        &self,
        fd: BorrowedFd<'_>,
        offset: u64,
        dst: &mut [u8],
    ) -> Option<usize> {
        if !self.cached_reads.load(Ordering::Relaxed) {
            return None;
        }
        match pread_cached(fd, dst, offset) {
            Ok(got) => Some(got),
            Err(e) => {
                if unsupported(e)
                    && rustix::fs::fstat(fd)
                        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode).is_file())
                {
                    self.cached_reads.store(false, Ordering::Relaxed);
                }
                None
            }
        }
    }

    /// Whether reads of the open file `fd` should fill the page cache with
    /// [`fill_huge`](Self::fill_huge): when huge fills are on and not every
    /// page of `len` bytes at `offset` is cached (`cachestat`, which reads
    /// nothing; a `RWF_NOWAIT` read that misses would start the kernel's own
    /// read-ahead in small folios).
    pub(crate) fn wants_huge_fill(&self, fd: BorrowedFd<'_>, offset: u64, len: usize) -> bool {
        if !self.huge_fill.load(Ordering::Relaxed) {
            return false;
        }
        match cached_pages(fd, offset, len as u64) {
            Ok(all) => !all,
            Err(e) => {
                if unsupported(e) {
                    self.huge_fill.store(false, Ordering::Relaxed);
                }
                false
            }
        }
    }

    /// Reads bytes `start..end` of the open file `fd` into the page cache
    /// in huge folios ([`populate_huge`]), on the blocking pool; the range
    /// is cut at the end of the file. `Some(end)` when the pages are in,
    /// with the end reached; `None` when the fill failed (the read that
    /// follows goes to the disk and reports any error) or huge fills are
    /// off (turned off for good if the kernel or file system lacks them).
    pub(crate) async fn fill_huge(&self, fd: &Fd, start: u64, end: u64) -> Option<u64> {
        if !self.huge_fill.load(Ordering::Relaxed) {
            return None;
        }
        let file = Arc::clone(&fd.fd);
        let result = self
            .blocking
            .run(move |_| {
                let size = rustix::fs::fstat(&*file)?.st_size;
                let end = end.min(u64::try_from(size).unwrap_or(0));
                populate_huge(file.as_fd(), start, end)?;
                Ok(end)
            })
            .await;
        match result {
            Ok(end) => Some(end),
            Err(e) => {
                // A missing feature (`EINVAL`: no `MADV_POPULATE_READ` or no
                // huge pages at all), or `ENODEV`: a file system that cannot
                // map files.
                if e.raw_os_error()
                    .map(Errno::from_raw_os_error)
                    .is_some_and(|e| unsupported(e) || e == Errno::NODEV)
                {
                    self.huge_fill.store(false, Ordering::Relaxed);
                }
                None
            }
        }
    }

    /// Opens `rel` with `flags` if every name on its path is in the dentry
    /// cache (`openat2` with `RESOLVE_CACHED`), without waiting for the
    /// disk. A cached negative entry answers `ENOENT` or `ENOTDIR` as the
    /// disk would. Cached reads off, or a kernel without `RESOLVE_CACHED`
    /// (which turns them off), give [`Cached::Unknown`].
    fn lookup_cached(&self, rel: &str, flags: OFlags) -> Cached {
        use rustix::fs::ResolveFlags;
        if !self.cached_reads.load(Ordering::Relaxed) {
            return Cached::Unknown;
        }
        let open = |rel: &str, flags: OFlags| {
            rustix::fs::openat2(
                &*self.blocking.root,
                at_path(rel),
                flags,
                Mode::empty(),
                ResolveFlags::CACHED,
            )
        };
        match open(rel, flags) {
            Ok(fd) => Cached::Found(fd),
            Err(e @ (Errno::NOENT | Errno::NOTDIR)) => Cached::Missing(e),
            Err(e) => {
                // (`EINVAL` may also be the path's; the root tells.)
                if unsupported(e) && open("", flags | OFlags::DIRECTORY).is_err_and(unsupported) {
                    self.cached_reads.store(false, Ordering::Relaxed);
                }
                Cached::Unknown
            }
        }
    }

    /// Opens `rel` for reading if its name is cached (`RESOLVE_CACHED`),
    /// without waiting for the disk; `None` otherwise, or when cached reads
    /// are off (and turns them off for a kernel without `RESOLVE_CACHED`).
    pub(crate) fn open_cached(&self, rel: &str) -> Option<OwnedFd> {
        match self.lookup_cached(rel, open_flags(OpenKind::Read, false)) {
            Cached::Found(fd) => Some(fd),
            Cached::Missing(_) | Cached::Unknown => None,
        }
    }

    /// `statx` of path `rel` (symbolic links followed) on the calling
    /// thread, when that needs no disk I/O: the path resolves from the
    /// dentry cache to an `O_PATH` descriptor, whose inode's attributes are
    /// then in memory, or a cached negative entry answers `ENOENT` or
    /// `ENOTDIR`. `None` when a name is not cached, on any other error, or
    /// when cached reads are off: the caller asks the backend, which also
    /// reports errors. io_uring runs every `STATX` in a worker thread, so
    /// this saves a hand-off between threads per cached stat.
    pub(crate) fn stat_cached(&self, rel: &str) -> Option<io::Result<Stat>> {
        match self.lookup_cached(rel, OFlags::PATH | OFlags::CLOEXEC) {
            Cached::Found(fd) => rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, statx_mask())
                .ok()
                .map(|st| Ok(Stat::from_rustix(&st))),
            Cached::Missing(e) => Some(Err(e.into())),
            Cached::Unknown => None,
        }
    }

    pub(crate) async fn open(&self, rel: &str, kind: OpenKind, direct: bool) -> io::Result<Fd> {
        let flags = open_flags(kind, direct);
        let creates = matches!(kind, OpenKind::CreateTruncate | OpenKind::CreateExclusive);
        let mode = if creates { FILE_MODE } else { 0 };
        let _change = creates.then(|| self.blocking.ns.change());
        let fd = match &self.uring {
            Some(ring) => {
                let op = Op::OpenAt {
                    dir: self.root(),
                    path: cstring(rel)?,
                    flags: flags.bits() as i32,
                    mode,
                };
                let (raw, _) = ring.run_op(op).await?;
                uring::owned_fd(raw)?
            }
            None => {
                let rel = at_path(rel).to_owned();
                self.blocking
                    .run(move |root| {
                        Ok(rustix::fs::openat(
                            root,
                            &rel,
                            flags,
                            Mode::from_raw_mode(mode),
                        )?)
                    })
                    .await?
            }
        };
        Ok(Fd {
            fd: Arc::new(fd),
            direct,
        })
    }

    /// One read into `buf`'s region `start..start + len` at `offset`.
    /// The outer error means the backend failed (the buffer is lost); the
    /// inner result is the system call's: bytes read, 0 at end of file.
    pub(crate) async fn read_at(
        &self,
        fd: &Fd,
        mut buf: IoBuf,
        offset: u64,
        start: usize,
        len: usize,
    ) -> io::Result<(IoBuf, io::Result<usize>)> {
        let len32 = checked_len(&buf, start, len)?;
        match &self.uring {
            Some(ring) => {
                let op = Op::Read {
                    file: File::Fd(Arc::clone(&fd.fd)),
                    buf,
                    offset,
                    start,
                    len: len32,
                };
                match ring.submit(op).await? {
                    (result, Op::Read { buf, .. }) => Ok((buf, ring_result(result))),
                    _ => Err(io::Error::other("ring returned another op")),
                }
            }
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        let result = rustix::io::pread(
                            &*file,
                            &mut buf.region_mut()[start..start + len],
                            offset,
                        );
                        Ok((buf, result.map_err(io::Error::from)))
                    })
                    .await
            }
        }
    }

    /// One write of `buf`'s region `start..start + len` at `offset`; errors
    /// as for [`read_at`](Self::read_at).
    pub(crate) async fn write_at(
        &self,
        fd: &Fd,
        buf: IoBuf,
        offset: u64,
        start: usize,
        len: usize,
    ) -> io::Result<(IoBuf, io::Result<usize>)> {
        let len32 = checked_len(&buf, start, len)?;
        match &self.uring {
            Some(ring) => {
                let op = Op::Write {
                    file: File::Fd(Arc::clone(&fd.fd)),
                    buf,
                    offset,
                    start,
                    len: len32,
                };
                match ring.submit(op).await? {
                    (result, Op::Write { buf, .. }) => Ok((buf, ring_result(result))),
                    _ => Err(io::Error::other("ring returned another op")),
                }
            }
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        let result =
                            rustix::io::pwrite(&*file, &buf.region()[start..start + len], offset);
                        Ok((buf, result.map_err(io::Error::from)))
                    })
                    .await
            }
        }
    }

    /// One vectored write (`pwritev`) of every buffer's `len()` bytes, in
    /// order, at `offset`; errors as for [`read_at`](Self::read_at). The
    /// system call may write fewer bytes than asked for.
    pub(crate) async fn write_vectored_at(
        &self,
        fd: &Fd,
        bufs: Vec<AlignedBuf>,
        offset: u64,
    ) -> io::Result<(Vec<AlignedBuf>, io::Result<usize>)> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if bufs.is_empty() || bufs.len() > MAX_IOVECS || i32::try_from(total).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "vectored write: no buffers, too many, or too long",
            ));
        }
        match &self.uring {
            Some(ring) => {
                let op = Op::Writev {
                    file: File::Fd(Arc::clone(&fd.fd)),
                    bufs,
                    iov: IoVecs::default(),
                    offset,
                };
                match ring.submit(op).await? {
                    (result, Op::Writev { bufs, .. }) => Ok((bufs, ring_result(result))),
                    _ => Err(io::Error::other("ring returned another op")),
                }
            }
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        let slices: Vec<io::IoSlice<'_>> =
                            bufs.iter().map(|b| io::IoSlice::new(b)).collect();
                        let result = rustix::io::pwritev(&*file, &slices, offset);
                        Ok((bufs, result.map_err(io::Error::from)))
                    })
                    .await
            }
        }
    }

    /// `fdatasync` (data_only) or `fsync`.
    pub(crate) async fn sync(&self, fd: &Fd, data_only: bool) -> io::Result<()> {
        match &self.uring {
            Some(ring) => ring
                .run_op(Op::Fsync {
                    file: File::Fd(Arc::clone(&fd.fd)),
                    datasync: data_only,
                })
                .await
                .map(drop),
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        if data_only {
                            rustix::fs::fdatasync(&*file)?;
                        } else {
                            rustix::fs::fsync(&*file)?;
                        }
                        Ok(())
                    })
                    .await
            }
        }
    }

    /// Preallocates `len` bytes from the start of the file and makes that
    /// its size at once (`fallocate` mode 0: the new blocks are unwritten
    /// extents, which read as zeros until written).
    ///
    /// Why the size too: a direct write past the end of the file is an
    /// extending write, which ext4 neither takes with `IOCB_NOWAIT` nor
    /// lets complete asynchronously, so io_uring hands every such write to
    /// a worker thread that then sleeps until the device is done. Inside
    /// the size, into preallocated blocks, the ring issues the write
    /// itself. Measured on a 16 MiB PUT: 51 hand-offs to workers and 335
    /// context switches per object instead of 92 and 450
    /// (docs/benchmarks.md, the section of 2026-11-27 11:08 UTC).
    pub(crate) async fn fallocate(&self, fd: &Fd, len: u64) -> io::Result<()> {
        match &self.uring {
            Some(ring) => ring
                .run_op(Op::Fallocate {
                    fd: Arc::clone(&fd.fd),
                    mode: 0,
                    len,
                })
                .await
                .map(drop),
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        Ok(rustix::fs::fallocate(
                            &*file,
                            FallocateFlags::empty(),
                            0,
                            len,
                        )?)
                    })
                    .await
            }
        }
    }

    /// `ftruncate` (blocking pool in both backends).
    pub(crate) async fn truncate(&self, fd: &Fd, len: u64) -> io::Result<()> {
        let file = Arc::clone(&fd.fd);
        self.blocking
            .run(move |_| Ok(rustix::fs::ftruncate(&*file, len)?))
            .await
    }

    /// Sets `FS_TOPDIR_FL` (`chattr +T`) on directory `rel`: ext2/3/4's
    /// Orlov allocator then places each new subdirectory of it in a block
    /// group of its own choosing, as it does the root's, instead of beside
    /// the parent, and the files made in a subdirectory follow it. A file
    /// system without inode flags, or without this one, answers with an
    /// error (`ENOTTY`, `EOPNOTSUPP`).
    pub(crate) async fn mark_topdir(&self, rel: &str) -> io::Result<()> {
        let rel = at_path(rel).to_owned();
        self.blocking
            .run(move |root| {
                let dir = rustix::fs::openat(
                    root,
                    &rel,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                let flags = rustix::fs::ioctl_getflags(&dir)?;
                if !flags.contains(rustix::fs::IFlags::TOPDIR) {
                    rustix::fs::ioctl_setflags(&dir, flags | rustix::fs::IFlags::TOPDIR)?;
                }
                Ok(())
            })
            .await
    }

    /// `statx` of a path (symbolic links followed): from the caches on the
    /// calling thread where [`stat_cached`](Self::stat_cached) can, else
    /// through the backend.
    pub(crate) async fn stat(&self, rel: &str) -> io::Result<Stat> {
        if let Some(result) = self.stat_cached(rel) {
            return result;
        }
        match &self.uring {
            Some(ring) => match ring.run_op(self.statx_op(rel)?).await? {
                (_, Op::Statx { out, .. }) => Ok(uring::statx_result(&out)),
                _ => Err(io::Error::other("ring returned another op")),
            },
            None => {
                let rel = at_path(rel).to_owned();
                self.blocking
                    .run(move |root| {
                        let st = rustix::fs::statx(root, &rel, AtFlags::empty(), statx_mask())?;
                        Ok(Stat::from_rustix(&st))
                    })
                    .await
            }
        }
    }

    /// `statx` of an open file.
    pub(crate) async fn fstat(&self, fd: &Fd) -> io::Result<Stat> {
        match &self.uring {
            Some(ring) => {
                let out = Box::new(MaybeUninit::zeroed());
                let op = Op::Statx {
                    dir: Arc::clone(&fd.fd),
                    path: CString::default(),
                    flags: AtFlags::EMPTY_PATH.bits() as i32,
                    out,
                };
                match ring.run_op(op).await? {
                    (_, Op::Statx { out, .. }) => Ok(uring::statx_result(&out)),
                    _ => Err(io::Error::other("ring returned another op")),
                }
            }
            None => {
                let file = Arc::clone(&fd.fd);
                self.blocking
                    .run(move |_| {
                        let st = rustix::fs::statx(&*file, "", AtFlags::EMPTY_PATH, statx_mask())?;
                        Ok(Stat::from_rustix(&st))
                    })
                    .await
            }
        }
    }

    pub(crate) async fn mkdir(&self, rel: &str) -> io::Result<()> {
        let _change = self.blocking.ns.change();
        match &self.uring {
            Some(ring) => ring.run_op(self.mkdir_op(rel)?).await.map(drop),
            None => {
                let rel = rel.to_owned();
                self.blocking
                    .run(move |root| {
                        Ok(rustix::fs::mkdirat(
                            root,
                            &rel,
                            Mode::from_raw_mode(DIR_MODE),
                        )?)
                    })
                    .await
            }
        }
    }

    /// `renameat2`, optionally with `RENAME_EXCHANGE`.
    pub(crate) async fn rename(&self, from: &str, to: &str, exchange: bool) -> io::Result<()> {
        let flags = if exchange {
            RenameFlags::EXCHANGE
        } else {
            RenameFlags::empty()
        };
        let _change = self.blocking.ns.change();
        match &self.uring {
            Some(ring) => ring
                .run_op(self.rename_op(from, to, flags)?)
                .await
                .map(drop),
            None => {
                let (from, to) = (from.to_owned(), to.to_owned());
                self.blocking
                    .run(move |root| Ok(rustix::fs::renameat_with(root, &from, root, &to, flags)?))
                    .await
            }
        }
    }

    /// `unlinkat`, of a directory (`rmdir`) when `dir`.
    pub(crate) async fn unlink(&self, rel: &str, dir: bool) -> io::Result<()> {
        let flags = if dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        let _change = self.blocking.ns.change();
        match &self.uring {
            Some(ring) => {
                let op = Op::UnlinkAt {
                    dir: self.root(),
                    path: cstring(rel)?,
                    flags: flags.bits() as i32,
                };
                ring.run_op(op).await.map(drop)
            }
            None => {
                let rel = rel.to_owned();
                self.blocking
                    .run(move |root| Ok(rustix::fs::unlinkat(root, &rel, flags)?))
                    .await
            }
        }
    }

    /// Opens a directory and fsyncs it, making the entries created, renamed
    /// or removed in it durable. One chain (open, fsync, close) where the
    /// ring chains.
    pub(crate) async fn sync_dir(&self, rel: &str) -> io::Result<()> {
        let synced = match self.chaining() {
            Some(ring) => {
                let chain = self.sync_dir_steps(Chain::new(), rel)?;
                let mut steps = ring.submit_chain(chain).await?.into_iter();
                // The close's result does not matter: the sync is done.
                step_result(steps.next())?;
                step_result(steps.next()).map(drop)
            }
            None => {
                let dir = self.open(rel, OpenKind::Directory, false).await?;
                self.sync(&dir, false).await
            }
        };
        // (Only the fsync's own failure counts: a failed open changed
        // nothing on the disk.)
        if synced.is_err() {
            self.dir_sync_failed();
        }
        synced
    }

    /// Directory syncs failed on this drive so far (see
    /// [`Io::dir_sync_failures`](field@Io::dir_sync_failures)).
    pub(crate) fn dir_sync_failures(&self) -> u64 {
        self.dir_sync_failures.load(Ordering::SeqCst)
    }

    pub(crate) fn dir_sync_failed(&self) {
        self.dir_sync_failures.fetch_add(1, Ordering::SeqCst);
    }

    /// [`synced`], counting a failed sync.
    fn synced(&self, open: i32, sync: i32) -> Synced {
        let synced = synced(open, sync);
        if matches!(synced, Synced::Failed(_)) {
            self.dir_sync_failed();
        }
        synced
    }

    /// `statx` of path `rel`, as a ring op.
    fn statx_op(&self, rel: &str) -> io::Result<Op> {
        Ok(Op::Statx {
            dir: self.root(),
            path: cstring(rel)?,
            flags: 0,
            out: Box::new(MaybeUninit::zeroed()),
        })
    }

    /// `mkdir` of `rel`, as a ring op.
    fn mkdir_op(&self, rel: &str) -> io::Result<Op> {
        Ok(Op::MkDirAt {
            dir: self.root(),
            path: cstring(rel)?,
            mode: DIR_MODE,
        })
    }

    /// `renameat2` of `from` onto `to`, as a ring op.
    fn rename_op(&self, from: &str, to: &str, flags: RenameFlags) -> io::Result<Op> {
        Ok(Op::RenameAt {
            dir: self.root(),
            from: cstring(from)?,
            to: cstring(to)?,
            flags: flags.bits(),
        })
    }

    /// Open of `rel` into a chain's file slot (not `O_DIRECT`).
    fn open_slot_op(&self, rel: &str, kind: OpenKind) -> io::Result<Op> {
        let creates = matches!(kind, OpenKind::CreateTruncate | OpenKind::CreateExclusive);
        Ok(Op::OpenSlot {
            dir: self.root(),
            path: cstring(rel)?,
            flags: open_flags(kind, false).bits() as i32,
            mode: if creates { FILE_MODE } else { 0 },
        })
    }

    /// The ring, if it takes chains with slot ops.
    fn chaining(&self) -> Option<&Uring> {
        self.uring.as_ref().filter(|ring| ring.chains())
    }

    /// Appends open of directory `rel`, its fsync and its close to `chain`.
    /// A failed fsync cancels the close and whatever follows (the ring
    /// thread closes what a chain leaves in its slot).
    fn sync_dir_steps(&self, chain: Chain, rel: &str) -> io::Result<Chain> {
        Ok(chain
            .then(self.open_slot_op(rel, OpenKind::Directory)?)
            .then(Op::Fsync {
                file: File::Slot,
                datasync: false,
            })
            .then(Op::CloseSlot))
    }

    /// Reads a small file whole: open, one read of at most `cap` bytes,
    /// close; one submission where the ring chains, which also looks at
    /// `volume` (a `statx` ahead of the open), so that a missing file needs
    /// no second trip to tell a missing volume. A read that returns less
    /// than asked is taken as the end of the file, which holds for regular
    /// files on local file systems (the only files a drive reads this way).
    pub(crate) async fn read_small(
        &self,
        rel: &str,
        cap: usize,
        volume: &str,
    ) -> io::Result<SmallRead> {
        let cap = cap.max(1);
        // One scratch buffer, for the cached read or the backend's.
        let mut scratch = self.scratch.take(cap);
        if let Some(n) = self.read_cached(rel, 0, &mut scratch) {
            return self.small_result(scratch, Ok(n), cap);
        }
        let len = u32::try_from(cap).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let flags = open_flags(OpenKind::Read, false);
        let missing =
            |e: &io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
        let read = match (&self.uring, self.chaining()) {
            (_, Some(ring)) => {
                let chain = Chain::new()
                    .always(self.statx_op(volume)?)
                    .then(self.open_slot_op(rel, OpenKind::Read)?)
                    // Hard link: a read that ends at end of file is "short"
                    // to the kernel, and the close must run anyway.
                    .always(Op::Read {
                        file: File::Slot,
                        buf: IoBuf::Heap(scratch),
                        offset: 0,
                        start: 0,
                        len,
                    })
                    .then(Op::CloseSlot);
                let mut steps = ring.submit_chain(chain).await?.into_iter();
                let volume = match steps.next() {
                    Some((result, Op::Statx { out, .. })) if result >= 0 => {
                        Some(uring::statx_result(&out).is_dir)
                    }
                    Some((result, _)) if matches!(-result, libc::ENOENT | libc::ENOTDIR) => {
                        Some(false)
                    }
                    _ => None,
                };
                match step_result(steps.next()) {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(volume)),
                    other => other?,
                };
                match steps.next() {
                    Some((result, Op::Read { buf, .. })) => (buf.into_vec(), ring_result(result)),
                    _ => return Err(io::Error::other("ring returned another op")),
                }
            }
            (Some(_), None) => {
                let fd = match self.open(rel, OpenKind::Read, false).await {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(None)),
                    other => other?,
                };
                let (buf, n) = self.read_at(&fd, IoBuf::Heap(scratch), 0, 0, cap).await?;
                (buf.into_vec(), n)
            }
            (None, None) => {
                let rel = at_path(rel).to_owned();
                let mut buf = scratch;
                let opened = self
                    .blocking
                    .run(move |root| {
                        let fd = match rustix::fs::openat(root, &rel, flags, Mode::empty()) {
                            Ok(fd) => fd,
                            Err(e) => return Ok(Err(io::Error::from(e))),
                        };
                        let n = rustix::io::read(&fd, &mut buf).map_err(io::Error::from);
                        Ok(Ok((buf, n)))
                    })
                    .await?;
                match opened {
                    Err(e) if missing(&e) => return Ok(SmallRead::Missing(None)),
                    other => other?,
                }
            }
        };
        let (buf, n) = read;
        self.small_result(buf, n, cap)
    }

    /// What a read of `n` bytes into the scratch buffer `buf` of `cap`
    /// bytes says of a small file (`buf` goes back to the scratch pool).
    fn small_result(
        &self,
        buf: Vec<u8>,
        n: io::Result<usize>,
        cap: usize,
    ) -> io::Result<SmallRead> {
        let result = match n {
            Ok(n) if n < cap => Ok(SmallRead::Whole(buf[..n].to_vec())),
            Ok(_) => Ok(SmallRead::Longer),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) => {
                Ok(SmallRead::Longer)
            }
            Err(e) => Err(e),
        };
        self.scratch.put(buf);
        result
    }

    /// Writes a small file durably into place in one submission where the
    /// ring chains: create `tmp` (exclusive), write `data`, `fdatasync`,
    /// close, with `make_dir` a `mkdir` of `to`'s parent directory `dir`,
    /// rename onto `to`, then open, fsync and close `dir`. The steps of the
    /// unchained path; reports how far the chain got so the caller can
    /// finish (or clean up) the long way, and whether the `mkdir` made
    /// `dir` (whose parent the caller must then sync).
    pub(crate) async fn write_small(
        &self,
        tmp: &str,
        data: Vec<u8>,
        to: &str,
        dir: &str,
        make_dir: bool,
    ) -> (Written, bool) {
        let Some(ring) = self.chaining() else {
            return (Written::NotCreated(data, None), false);
        };
        let Ok(len) = u32::try_from(data.len()) else {
            return (Written::NotCreated(data, None), false);
        };
        let steps = || -> io::Result<(Op, Option<Op>, Op)> {
            let mkdir = if make_dir {
                Some(self.mkdir_op(dir)?)
            } else {
                None
            };
            Ok((
                self.open_slot_op(tmp, OpenKind::CreateExclusive)?,
                mkdir,
                self.rename_op(tmp, to, RenameFlags::empty())?,
            ))
        };
        let (open, mkdir, rename) = match steps() {
            Ok(steps) => steps,
            Err(e) => return (Written::NotCreated(data, Some(e)), false),
        };
        let chain = create_with(open, data, len)
            .then(Op::Fsync {
                file: File::Slot,
                datasync: true,
            })
            .then(Op::CloseSlot);
        // Hard link: EEXIST (the usual answer) must not stop the rename.
        let chain = match mkdir {
            Some(mkdir) => chain.always(mkdir),
            None => chain,
        };
        let chain = chain.then(rename);
        let chain = match self.sync_dir_steps(chain, dir) {
            Ok(chain) => chain,
            Err(e) => return (Written::NotSynced(Some(e)), false),
        };
        let _change = self.blocking.ns.change();
        match ring.submit_chain(chain).await {
            Ok(steps) => written(steps, len, |open, sync| self.synced(open, sync)),
            // The ring stopped: whether the tmp file exists is unknown;
            // the caller removes it and reports the error.
            Err(e) => (Written::Failed("io_uring", Some(e), None), false),
        }
    }

    /// Creates file `tmp` (exclusively) holding `data`, without a sync:
    /// open, write and close in one chain, for a caller that makes it
    /// durable with others ([`LocalDriveConfig::group_commit`]).
    /// `Written::Done` once the file is written and closed; never
    /// `NotRenamed` or `NotSynced`.
    ///
    /// [`LocalDriveConfig::group_commit`]: super::LocalDriveConfig::group_commit
    pub(crate) async fn stage_small(&self, tmp: &str, data: Vec<u8>) -> Written {
        let Some(ring) = self.chaining() else {
            return Written::NotCreated(data, None);
        };
        let Ok(len) = u32::try_from(data.len()) else {
            return Written::NotCreated(data, None);
        };
        let open = match self.open_slot_op(tmp, OpenKind::CreateExclusive) {
            Ok(op) => op,
            Err(e) => return Written::NotCreated(data, Some(e)),
        };
        let chain = create_with(open, data, len).then(Op::CloseSlot);
        let _change = self.blocking.ns.change();
        let steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps,
            Err(e) => return Written::Failed("io_uring", Some(e), None),
        };
        let results: Vec<i32> = steps.iter().map(|(r, _)| *r).collect();
        let data = steps.into_iter().find_map(|(_, op)| match op {
            Op::Write { buf, .. } => Some(buf.into_vec()),
            _ => None,
        });
        let [open, write, close] = results[..] else {
            let e = io::Error::other("ring returned another chain");
            return Written::Failed("io_uring", Some(e), data);
        };
        match created(open, write, len, data) {
            Err(stopped) => stopped,
            Ok(data) if close < 0 => {
                Written::Failed("close", Some(io::Error::from_raw_os_error(-close)), data)
            }
            Ok(_) => Written::Done,
        }
    }

    /// Renames `from` onto `to` after making `to`'s parent `dir` (whose
    /// `EEXIST` does not stop the rename), in one chain and without a
    /// sync. `None` where the ring does not chain.
    pub(crate) async fn mkdir_rename(
        &self,
        from: &str,
        to: &str,
        dir: &str,
    ) -> Option<io::Result<()>> {
        let ring = self.chaining()?;
        let chain = || -> io::Result<Chain> {
            Ok(Chain::new()
                .always(self.mkdir_op(dir)?)
                .then(self.rename_op(from, to, RenameFlags::empty())?))
        };
        let chain = match chain() {
            Ok(chain) => chain,
            Err(e) => return Some(Err(e)),
        };
        let _change = self.blocking.ns.change();
        let mut steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps.into_iter(),
            Err(e) => return Some(Err(e)),
        };
        let _mkdir = steps.next();
        Some(step_result(steps.next()).map(drop))
    }

    /// A rename and the syncs that make it durable, in one chain: `statx`
    /// of `from`, with `make_parent` a `mkdir` of `to`'s parent `dir`, the
    /// rename, open, fsync and close of `dir`, then the same of `to` (which
    /// only opens if it is a directory). `None` where the ring does not
    /// chain. The `statx` and `mkdir` do not stop the chain (the rename
    /// tells); a failed rename or sync stops it.
    pub(crate) async fn rename_synced(
        &self,
        from: &str,
        to: &str,
        dir: &str,
        make_parent: bool,
    ) -> Option<io::Result<RenameSynced>> {
        let ring = self.chaining()?;
        let chain = || -> io::Result<Chain> {
            let mut chain = Chain::new().always(self.statx_op(from)?);
            if make_parent {
                chain = chain.always(self.mkdir_op(dir)?);
            }
            let chain = chain.then(self.rename_op(from, to, RenameFlags::empty())?);
            let chain = self.sync_dir_steps(chain, dir)?;
            self.sync_dir_steps(chain, to)
        };
        let chain = match chain() {
            Ok(chain) => chain,
            Err(e) => return Some(Err(e)),
        };
        let _change = self.blocking.ns.change();
        let steps = match ring.submit_chain(chain).await {
            Ok(steps) => steps,
            Err(e) => return Some(Err(e)),
        };
        let mut steps = steps.into_iter();
        let src = match steps.next() {
            Some((result, Op::Statx { out, .. })) if result >= 0 => Ok(uring::statx_result(&out)),
            other => Err(step_result(other)
                .err()
                .unwrap_or_else(|| io::Error::other("statx"))),
        };
        let made = make_parent && steps.next().is_some_and(|(result, _)| result == 0);
        let renamed = step_result(steps.next()).map(drop);
        let mut result = || steps.next().map_or(-libc::ECANCELED, |(r, _)| r);
        let (parent_open, parent_sync, _) = (result(), result(), result());
        let (target_open, target_sync) = (result(), result());
        Some(Ok(RenameSynced {
            src,
            made,
            renamed,
            parent_synced: self.synced(parent_open, parent_sync),
            target_synced: self.synced(target_open, target_sync),
        }))
    }

    /// Creates (or truncates) file `rel` for writing after making the
    /// directories `dirs` (outermost first; `EEXIST` is fine), in one
    /// chain. `None` where the ring does not chain, or when the open
    /// failed (the caller takes the long path and reports what it finds).
    pub(crate) async fn open_in_new_dirs(
        &self,
        rel: &str,
        dirs: &[&str],
        direct: bool,
    ) -> Option<Fd> {
        let ring = self.chaining()?;
        if dirs.len() >= uring::MAX_CHAIN {
            return None;
        }
        let mut chain = Chain::new();
        for dir in dirs {
            chain = chain.always(self.mkdir_op(dir).ok()?);
        }
        let chain = chain.then(Op::OpenAt {
            dir: self.root(),
            path: cstring(rel).ok()?,
            flags: open_flags(OpenKind::CreateTruncate, direct).bits() as i32,
            mode: FILE_MODE,
        });
        let _change = self.blocking.ns.change();
        let (raw, _) = ring.submit_chain(chain).await.ok()?.pop()?;
        let fd = uring::owned_fd(u32::try_from(raw).ok()?).ok()?;
        Some(Fd {
            fd: Arc::new(fd),
            direct,
        })
    }
}

/// What [`Io::rename_synced`] did.
pub(crate) struct RenameSynced {
    /// What `statx` said of the source before the rename.
    pub(crate) src: io::Result<Stat>,
    /// Whether the `mkdir` of the target's parent made it.
    pub(crate) made: bool,
    /// The rename (`ECANCELED` when it did not run).
    pub(crate) renamed: io::Result<()>,
    /// The sync of the target's parent.
    pub(crate) parent_synced: Synced,
    /// The sync of the target itself (a directory; `NotRun` for a file).
    pub(crate) target_synced: Synced,
}

/// How a directory sync in a chain went.
pub(crate) enum Synced {
    Yes,
    /// The directory's open failed or the step did not run.
    NotRun,
    /// The fsync failed.
    Failed(io::Error),
}

fn synced(open: i32, sync: i32) -> Synced {
    if open < 0 {
        Synced::NotRun
    } else if sync < 0 {
        Synced::Failed(io::Error::from_raw_os_error(-sync))
    } else {
        Synced::Yes
    }
}

/// What [`Io::read_small`] found.
pub(crate) enum SmallRead {
    /// The whole file.
    Whole(Vec<u8>),
    /// The read filled the buffer (the file may be longer) or was
    /// interrupted: the caller reads it the long way.
    Longer,
    /// No such file (`ENOENT`, `ENOTDIR`); whether its volume exists, when
    /// the chain looked.
    Missing(Option<bool>),
}

/// What [`Io::lookup_cached`] found in the dentry cache.
enum Cached {
    /// Every name resolved: the file, opened.
    Found(OwnedFd),
    /// A cached negative entry (`ENOENT`, `ENOTDIR`).
    Missing(Errno),
    /// A name not cached, any other error, or cached reads off: ask the
    /// backend.
    Unknown,
}

/// How far [`Io::write_small`] got.
pub(crate) enum Written {
    /// Nothing was created: chains are not available here (`None`), or
    /// the temporary file's creation failed (the error). The data back.
    NotCreated(Vec<u8>, Option<io::Error>),
    /// The temporary file exists but its write or sync failed (the system
    /// call and its error; `None` for a short write, which the long path
    /// retries), or the ring stopped. The caller removes it; the data back
    /// if the ring gave it.
    Failed(&'static str, Option<io::Error>, Option<Vec<u8>>),
    /// The data is durable in the temporary file; the rename failed (for
    /// instance, more than one level of the target's parents is missing)
    /// or did not run.
    NotRenamed,
    /// Renamed into place; the parent's fsync failed (`Some`) or its open
    /// failed and the sync did not run (`None`).
    NotSynced(Option<io::Error>),
    Done,
}

/// Reads [`Io::write_small`]'s step results: what the chain got done, and
/// whether its `mkdir` made the directory. The directory's sync is read
/// by `dir_synced` (`Io::synced`, which counts a failed one).
fn written(
    steps: Vec<StepResult>,
    len: u32,
    dir_synced: impl FnOnce(i32, i32) -> Synced,
) -> (Written, bool) {
    let mut results: Vec<i32> = steps.iter().map(|(r, _)| *r).collect();
    let mkdir = steps
        .iter()
        .position(|(_, op)| matches!(op, Op::MkDirAt { .. }));
    let made = mkdir.is_some_and(|i| results.remove(i) == 0);
    let data = steps.into_iter().find_map(|(_, op)| match op {
        Op::Write { buf, .. } => Some(buf.into_vec()),
        _ => None,
    });
    let err = |r: i32| io::Error::from_raw_os_error(-r);
    let [
        open,
        write,
        sync,
        _close,
        rename,
        dir_open,
        dir_sync,
        _dir_close,
    ] = results[..]
    else {
        let e = io::Error::other("ring returned another chain");
        return (Written::Failed("io_uring", Some(e), data), made);
    };
    let written = match created(open, write, len, data) {
        Err(stopped) => stopped,
        Ok(data) if sync < 0 => Written::Failed("fdatasync", Some(err(sync)), data),
        // (A failed close of a synced file only cancelled the rename.)
        Ok(_) if rename < 0 => Written::NotRenamed,
        Ok(_) => match dir_synced(dir_open, dir_sync) {
            Synced::Yes => Written::Done,
            Synced::NotRun => Written::NotSynced(None),
            Synced::Failed(e) => Written::NotSynced(Some(e)),
        },
    };
    (written, made)
}

/// A chain's first steps: `open` (a create into the chain's file slot),
/// then one write of `data`, `len` bytes, at offset 0.
fn create_with(open: Op, data: Vec<u8>, len: u32) -> Chain {
    Chain::new().then(open).then(Op::Write {
        file: File::Slot,
        buf: IoBuf::Heap(data),
        offset: 0,
        start: 0,
        len,
    })
}

/// Reads the create and write steps of a chain that makes a file holding
/// `len` bytes of `data`: the data back (as the ring returned it) if both
/// went through, otherwise what stopped them.
fn created(
    open: i32,
    write: i32,
    len: u32,
    data: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, Written> {
    let err = |r: i32| io::Error::from_raw_os_error(-r);
    if open < 0 {
        Err(match data {
            Some(data) => Written::NotCreated(data, Some(err(open))),
            None => Written::Failed("openat", Some(err(open)), None),
        })
    } else if write < 0 {
        Err(Written::Failed("write", Some(err(write)), data))
    } else if write.unsigned_abs() != len {
        Err(Written::Failed("write", None, data))
    } else {
        Ok(data)
    }
}

/// A chain step's result as an `io::Result` (`ECANCELED` for a step that
/// did not run, or for a missing step).
fn step_result(step: Option<StepResult>) -> io::Result<u32> {
    match step {
        Some((result, _)) if result >= 0 => Ok(result.unsigned_abs()),
        Some((result, _)) => Err(io::Error::from_raw_os_error(-result)),
        None => Err(io::Error::from_raw_os_error(libc::ECANCELED)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_on(dir: &std::path::Path, cached: bool) -> Io {
        let root = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Io {
            blocking: Blocking::new(Arc::new(root), 4),
            uring: None,
            scratch: Scratch::new(0),
            cached_reads: AtomicBool::new(cached),
            huge_fill: AtomicBool::new(true),
            dir_sync_failures: AtomicU64::new(0),
        }
    }

    /// Drops the file's pages from the page cache (they are clean once
    /// synced).
    fn evict(path: &std::path::Path) {
        let f = std::fs::File::open(path).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    }

    #[tokio::test]
    async fn huge_fills_bring_whole_chunks_into_the_cache() {
        // On the checkout's file system, as above (a tmpfs cannot evict).
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = dir.path().join("f");
        let size = (5 << 20) + 123;
        let data: Vec<u8> = (0..size as u32).map(|i| (i * 13 + i / 509) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        evict(&path);
        let io = io_on(dir.path(), true);
        let fd = Fd {
            fd: Arc::new(
                rustix::fs::open(&path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap(),
            ),
            direct: false,
        };
        let cached = |off: u64, len: u64| cached_pages(fd.fd.as_fd(), off, len).unwrap();
        assert!(!cached(0, 4096));
        assert!(io.wants_huge_fill(fd.fd.as_fd(), 100, 50));

        // A few bytes inside the first chunk bring in all of it, without a
        // read(2) (whose read-ahead starts at a few pages).
        assert_eq!(io.fill_huge(&fd, 100, 150).await, Some(150));
        assert!(cached(0, HUGE_FOLIO), "the whole first chunk");
        assert!(!io.wants_huge_fill(fd.fd.as_fd(), 100, 50), "cached now");
        // The range is cut at the end of the file...
        let size = size as u64;
        assert_eq!(io.fill_huge(&fd, 4 << 20, 6 << 20).await, Some(size));
        assert!(cached(4 << 20, size - (4 << 20)));
        // ...and nothing past it is ever touched: asked straight, the
        // mapping reports the page past the end as an error (a `SIGBUS`,
        // had it been read), and the process lives on.
        assert_eq!(
            populate_huge(fd.fd.as_fd(), size, size + 8192),
            Err(Errno::FAULT)
        );
        assert!(
            io.huge_fill.load(Ordering::Relaxed),
            "an error of one fill turns nothing off"
        );
        // What the pages hold is the file.
        let mut buf = vec![0u8; data.len()];
        assert_eq!(rustix::io::pread(&*fd.fd, &mut buf, 0).unwrap(), data.len());
        assert_eq!(buf, data);

        // Turned off: nothing is filled.
        evict(&path);
        io.huge_fill.store(false, Ordering::Relaxed);
        assert!(!io.wants_huge_fill(fd.fd.as_fd(), 0, 10));
        assert_eq!(io.fill_huge(&fd, 0, 10).await, None);
        assert!(!cached(0, 4096));
    }

    #[test]
    fn cached_reads_only_from_the_caches() {
        // Beside the sources, on the checkout's file system: `/tmp` may be
        // a tmpfs, whose pages cannot be dropped.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(dir.path().join("f"), &data).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let io = io_on(dir.path(), true);

        let mut buf = vec![0u8; 4096];
        assert_eq!(io.read_cached("f", 100, &mut buf), Some(4096));
        assert_eq!(buf, data[100..4196]);
        // Short only at the end of the file.
        assert_eq!(io.read_cached("f", 8000, &mut buf), Some(2000));
        assert_eq!(buf[..2000], data[8000..]);
        assert_eq!(io.read_cached("f", 20_000, &mut buf), Some(0));

        // Anything but a cached regular file: not read here, and the
        // path stays enabled.
        assert_eq!(io.read_cached("missing", 0, &mut buf), None);
        assert_eq!(io.read_cached("sub", 0, &mut buf), None);
        assert_eq!(io.read_cached("../escape", 0, &mut buf), None);
        assert!(io.cached_reads.load(Ordering::Relaxed));

        // Pages not in the page cache would need the disk: not read here.
        evict(&dir.path().join("f"));
        buf.fill(0);
        assert_eq!(io.read_cached("f", 100, &mut buf), None);
        assert!(io.cached_reads.load(Ordering::Relaxed));
        // Once read the usual way, they are served from the cache again.
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), data);
        assert_eq!(io.read_cached("f", 100, &mut buf), Some(4096));
        assert_eq!(buf, data[100..4196]);

        // Turned off: never tried.
        let off = io_on(dir.path(), false);
        assert_eq!(off.read_cached("f", 100, &mut buf), None);
    }

    #[tokio::test]
    async fn stats_from_the_caches() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 5000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("link")).unwrap();
        let io = io_on(dir.path(), true);
        let stat = |rel: &str| io.stat_cached(rel).expect("names cached").unwrap();
        let errno = |rel: &str| {
            io.stat_cached(rel)
                .expect("names cached")
                .unwrap_err()
                .raw_os_error()
        };

        let f = stat("f");
        assert_eq!((f.size, f.is_dir), (5000, false));
        assert!(f.modified.is_some());
        assert!(stat("sub").is_dir);
        assert!(stat("").is_dir);
        // Symbolic links are followed, as by the backend's `statx`.
        assert_eq!(stat("link").size, 5000);
        // Missing names, once looked up, answer from their negative entries.
        assert!(std::fs::metadata(dir.path().join("missing")).is_err());
        assert_eq!(errno("missing"), Some(libc::ENOENT));
        // A name below a file: the kernel leaves that to a lookup that may
        // wait (`EAGAIN`), so the backend answers (`ENOTDIR`, below).
        assert!(io.stat_cached("f/below").is_none());
        assert!(io.cached_reads.load(Ordering::Relaxed));

        // The same answers as the backend's (cached reads off: never tried).
        let off = io_on(dir.path(), false);
        assert!(off.stat_cached("f").is_none());
        let backend = off.stat("f").await.unwrap();
        assert_eq!(
            (backend.size, backend.is_dir, backend.modified),
            (f.size, f.is_dir, f.modified)
        );
        let missing = off.stat("missing").await.unwrap_err();
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT));
        let below = off.stat("f/below").await.unwrap_err();
        assert_eq!(below.raw_os_error(), Some(libc::ENOTDIR));
    }

    #[test]
    fn piped_reads_leave_the_verified_bytes_in_a_pipe() {
        use std::io::Read;
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let data: Vec<u8> = (0..1_600_000u32)
            .map(|i| (i * 13 + i / 509) as u8)
            .collect();
        std::fs::write(dir.path().join("f"), &data).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let io = io_on(dir.path(), true);
        let pipes = PipePool::new();

        // The read, and whether a pipe came with it.
        let piped = |io: &Io, rel: &str, off: usize, dst: &mut [u8]| {
            io.read_cached_piped(rel, off as u64, dst, Some(&pipes))
        };
        let has_pipe = |r: Option<(usize, Option<Pipe>)>| r.map(|(n, p)| (n, p.is_some()));

        // A shard record's shape: 32 + 512 KiB at an offset of no alignment.
        let (off, len) = (524_320usize + 77, 524_320usize);
        let mut dst = vec![0u8; len];
        let (n, pipe) = piped(&io, "f", off, &mut dst).unwrap();
        let mut pipe = pipe.expect("a cached range comes with a pipe");
        assert_eq!(n, len);
        assert_eq!(dst, data[off..off + len]);
        assert_eq!(pipe.len(), len);
        assert_eq!(pipes.out(), 1, "one pipe per read");
        // The pipe holds the same bytes; the first ones can be dropped.
        pipe.skip(32).unwrap();
        let (tx, mut rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            rx.read_to_end(&mut got).unwrap();
            got
        });
        while !pipe.is_empty() {
            match pipe.splice_to(tx.as_fd(), usize::MAX) {
                Ok(n) => assert!(n > 0),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("splice: {e}"),
            }
        }
        drop(tx);
        assert_eq!(reader.join().unwrap(), data[off + 32..off + len]);
        drop(pipe);
        assert_eq!(pipes.out(), 0);

        // Past the end of the file: read short, not piped. Missing, a
        // directory, outside the root: not read here at all (the usual read
        // reports what it is).
        let mut small = vec![0u8; 4096];
        let end = data.len() - 100;
        assert_eq!(
            has_pipe(piped(&io, "f", end, &mut small)),
            Some((100, false))
        );
        assert_eq!(small[..100], data[end..]);
        assert!(piped(&io, "missing", 0, &mut small).is_none());
        assert!(piped(&io, "sub", 0, &mut small).is_none());
        assert!(piped(&io, "../escape", 0, &mut small).is_none());
        // Longer than a pipe holds: read, not piped.
        let max = crate::pipe::MAX_PIPED;
        let mut long = vec![0u8; max + 1];
        assert_eq!(
            has_pipe(piped(&io, "f", 0, &mut long)),
            Some((max + 1, false))
        );
        assert_eq!(
            has_pipe(piped(&io, "f", 0, &mut long[..max])),
            Some((max, true))
        );
        assert!(pipes.enabled());
        assert_eq!(pipes.out(), 0);

        // Pages not cached: splice would wait for the disk, so no pipe.
        evict(&dir.path().join("f"));
        assert!(piped(&io, "f", off, &mut dst).is_none());
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), data);
        let (n, pipe) = piped(&io, "f", 0, &mut small).unwrap();
        let pipe = pipe.expect("cached again, piped again");
        assert_eq!((n, pipe.len()), (4096, 4096));
        assert_eq!(small, data[..4096]);
        // What the read's copy rests on: pages a pipe holds stay in the
        // file's cache when it is dropped, so a read after the splice
        // copies the pipe's own pages. Pages no pipe holds go.
        evict(&dir.path().join("f"));
        let fd: OwnedFd = std::fs::File::open(dir.path().join("f")).unwrap().into();
        assert_eq!(
            cached_pages(fd.as_fd(), 0, 4096),
            Ok(true),
            "held by the pipe"
        );
        assert_eq!(cached_pages(fd.as_fd(), off as u64, 4096), Ok(false));
        // Dropped with bytes in it: closed, not pooled, and no longer out.
        drop(pipe);
        assert_eq!(pipes.out(), 0);

        // Cached reads off: not read here. The pool off: read, never piped.
        assert!(piped(&io_on(dir.path(), false), "f", 0, &mut small).is_none());
        pipes.disable();
        assert_eq!(
            has_pipe(piped(&io, "f", 0, &mut small)),
            Some((4096, false))
        );
    }

    #[tokio::test]
    async fn only_failed_directory_syncs_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let io = io_on(dir.path(), false);
        io.sync_dir("sub").await.unwrap();
        assert_eq!(io.dir_sync_failures(), 0);
        // A directory that is not there: its open failed, nothing was
        // written back, nothing lost.
        assert!(io.sync_dir("missing").await.is_err());
        assert_eq!(io.dir_sync_failures(), 0);
        // A chain's results: only a failed fsync counts.
        assert!(matches!(io.synced(3, 0), Synced::Yes));
        assert!(matches!(
            io.synced(-libc::ENOENT, -libc::ECANCELED),
            Synced::NotRun
        ));
        assert_eq!(io.dir_sync_failures(), 0);
        assert!(matches!(io.synced(3, -libc::EIO), Synced::Failed(_)));
        assert_eq!(io.dir_sync_failures(), 1);
    }
}
