//! The page cache from the calling thread: reads and `statx` that need no
//! disk I/O (`openat2` with `RESOLVE_CACHED`, `preadv2` with
//! `RWF_NOWAIT`), the same reads leaving their bytes in a pipe
//! (`splice`), and fills of the page cache in huge folios
//! (`MADV_POPULATE_READ` through a transient mapping). A feature the kernel
//! or file system lacks is turned off for good the first time it is
//! missed.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::{Errno, ReadWriteFlags};

use super::{Fd, Io, OpenKind, Stat, at_path, open_flags, statx_mask};
use crate::pipe::{Pipe, PipePool};

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
/// half the CPU (docs/bench-notes/get.md). The mapping is never dereferenced:
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

impl Io {
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

#[cfg(test)]
mod tests {
    use super::super::io_on;
    use super::*;

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
}
