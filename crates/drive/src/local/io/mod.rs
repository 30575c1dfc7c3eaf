//! The primitive operations both backends provide, with identical
//! semantics: the drive logic in `local/` is written once against [`Io`].
//! This file holds the types they share and the single-step primitives;
//! `cached.rs` the reads served from the caches on the calling thread,
//! `chain.rs` the operations of several steps (one io_uring chain where
//! the ring takes chains).
//!
//! Paths here are relative to the drive root and already validated; every
//! call resolves them against a descriptor of the root (`*at` system calls),
//! never against the working directory.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FallocateFlags, Mode, OFlags, RenameFlags, StatxFlags};
use tokio::sync::Semaphore;

mod cached;
mod chain;

pub(crate) use self::cached::HUGE_FOLIO;
use self::chain::step_result;
pub(crate) use self::chain::{SmallRead, Synced, Written};
use super::uring::{self, Chain, File, IoVecs, Op, Uring};
use super::walk::Namespace;
use crate::buf::AlignedBuf;

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
    /// context switches per object instead of 92 and 450 (to count them
    /// again: one server under `tessera-bench put --obj-size 16MiB
    /// --concurrent 8`, and `perf stat -e
    /// context-switches,io_uring:io_uring_queue_async_work -p <pid>`;
    /// docs/bench-notes/put.md).
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
}

/// An [`Io`] on directory `dir` over the blocking pool, with cached reads
/// on or off (for the tests of this module and its submodules).
#[cfg(test)]
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
