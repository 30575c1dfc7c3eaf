//! [`LocalDrive`]: a [`Drive`] over a local directory.
//!
//! The drive logic (atomic replacement, parent creation and cleanup,
//! `O_DIRECT` alignment, trash) is written once over a small set of
//! primitives (`io.rs`) that either backend provides with the same
//! semantics; see the crate documentation for the backends and the fsync
//! policy.

mod dirsync;
pub(crate) mod fssync;
mod io;
mod uring;
mod walk;

use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::fmt;
use std::io as stdio;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};
use tokio::sync::Notify;
use uuid::Uuid;

use self::dirsync::DirSyncs;
use self::fssync::FsSync;
use self::io::{
    Blocking, Fd, HUGE_FOLIO, Io, IoBuf, MAX_IOVECS, OpenKind, Scratch, SmallRead, Synced, Written,
};
use self::uring::Uring;
use crate::buf::{ALIGN, AlignedBuf, BufferPool, align_up};
use crate::drive::{
    BackendKind, BoxFuture, DirEntryName, DiskInfo, Drive, DriveState, FileInfo, HealthReport,
    IoMode, ShardFile, ShardReader, ShardWriter, VolumeInfo,
};
use crate::error::{Ctx, DriveError, Result, map_io};
use crate::format::{META_VOLUME, SPREAD_DIRS, SPREAD_VOLUME, TMP_VOLUME, TRASH_VOLUME};
use crate::health::HealthTracker;
use crate::path::{self, check_volume, parent};
use crate::pipe::{Pipe, PipePool};
use crate::walk::{WalkOptions, WalkPage};

/// Which I/O backend a [`LocalDrive`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// io_uring if the kernel allows it (a ring is created, its opcodes
    /// probed and a NOP and a `statx` run through it), else the thread pool.
    /// The choice is logged.
    #[default]
    Auto,
    /// io_uring or fail with [`DriveError::BackendUnavailable`].
    IoUring,
    /// Blocking system calls on tokio's blocking pool.
    ThreadPool,
}

/// Configuration of a [`LocalDrive`]. Every queue and size has a bound.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LocalDriveConfig {
    /// Backend selection.
    pub backend: Backend,
    /// Submission queue entries of the ring (8..=4096): the most operations
    /// in flight in the kernel at once.
    pub ring_entries: u32,
    /// Bound of the channel feeding the ring thread (1..=65536); senders
    /// wait when it is full.
    pub queue_depth: usize,
    /// Most blocking system calls in flight at once for this drive (the
    /// whole thread-pool backend, and listing/statvfs/truncate for io_uring).
    pub max_blocking: usize,
    /// Use `O_DIRECT` for shard files (io_uring backend) where the file
    /// system accepts it.
    pub direct_io: bool,
    /// Use `O_DIRECT` for [`Drive::read_file_at`] too (with `direct_io`).
    /// Off by default: positioned reads (a GET's shard records) go through
    /// the page cache, as MinIO's shard reads do, so an object read again
    /// is served from memory instead of the device every time.
    pub direct_read_at: bool,
    /// Serve reads that need no disk I/O on the calling thread: small-file
    /// reads ([`Drive::read_all`], an `xl.meta`) and positioned reads
    /// without `O_DIRECT` ([`Drive::read_file_at`], a GET's shard records)
    /// first try `openat2(RESOLVE_CACHED)` and `preadv2(RWF_NOWAIT)`, which
    /// succeed only from the dentry and page caches, and go through the
    /// backend when that fails. The `statx` of a path (a volume's check,
    /// [`Drive::stat_file`]) is made the same way, on an `O_PATH`
    /// descriptor, and a name the dentry cache holds as missing answers
    /// `ENOENT` at once. On by default; turned off for good on a kernel or
    /// file system without those flags.
    pub cached_reads: bool,
    /// With `cached_reads`, [`Drive::read_file_at_piped`] leaves the bytes
    /// of a read served from the page cache in a [`Pipe`](crate::pipe::Pipe)
    /// too (`splice`, then a read of the pages it pinned), so that they can
    /// be sent without another copy. Off by default: whether that beats a
    /// plain copy depends on the machine (a pipe holds one buffer per 4 KiB
    /// page, each looked up, confirmed and released on its own). Measured
    /// over loopback with GETs of 16 MiB: 1.1x the MiB per CPU-second on a
    /// 2-vCPU EPYC with AVX2 only, 0.86x on a Zen 5 EPYC, where copies are
    /// cheap (`docs/benchmarks.md`). When on, it is turned off for good
    /// where pipes of [`PIPE_BYTES`](crate::pipe::PIPE_BYTES) cannot be
    /// made or the file system cannot splice.
    pub piped_reads: bool,
    /// Fill the page cache in huge folios when a [`ShardFile`] read misses
    /// it: the first read through a shard file checks whether its range is
    /// cached (`cachestat`), and if not, that read and the later ones
    /// through the same descriptor first bring the 2 MiB-aligned chunks
    /// they touch into the page cache through a transient mapping marked
    /// `MADV_HUGEPAGE` (`MADV_POPULATE_READ`, on the blocking pool), then
    /// read from the cache as before. The kernel's read-ahead for `read(2)`
    /// fills a file read in several places at once with 4-64 KiB folios,
    /// and every later read of those pages pays per folio: served from
    /// 2 MiB folios, hot 16 MiB GETs gave 1.10x-1.12x the MiB per
    /// CPU-second (`docs/benchmarks.md`). On by default here; turned off
    /// for good on a kernel or file system without `cachestat` (Linux
    /// 6.5), `MADV_POPULATE_READ` (5.14) or `mmap`. File systems without
    /// large folios fill in small ones, as before. Where free memory is
    /// reported to a hypervisor ([`crate::free_page_reporting`]) huge fills cost
    /// more than they save, and the daemon leaves this off there.
    pub huge_fill: bool,
    /// Hard cap of [`Drive::read_all`] and [`Drive::write_all`] sizes, bytes.
    pub max_small_file: u64,
    /// Hard cap of a streamed file's size, bytes.
    pub max_file_size: u64,
    /// Size of the staging buffer a writer uses for unaligned chunks.
    pub staging_bytes: usize,
    /// Most staging buffers out at once (writers with unaligned chunks wait
    /// beyond that).
    pub max_staging_buffers: usize,
    /// Read-ahead of `O_DIRECT` stream readers: chunks kept in flight ahead
    /// of the caller (0 disables). Buffered readers rely on the kernel's.
    pub readahead_chunks: usize,
    /// Size of one read-ahead chunk, bytes.
    pub readahead_bytes: usize,
    /// Most read-ahead buffers out at once for the drive; a reader that finds
    /// none free reads without read-ahead instead of waiting.
    pub max_readahead_buffers: usize,
    /// Most names [`Drive::list_dir`] returns, whatever the caller asks.
    pub max_list_entries: usize,
    /// Empty the trash (`.minio.sys/tmp/.trash`, where deleted and replaced
    /// data goes) in the background: right after deletions, and once a
    /// minute for what earlier runs or other processes left.
    /// Without it, only [`Drive::empty_trash`] frees that space.
    pub background_trash: bool,
    /// Make [`Drive::write_all`]'s files (every `xl.meta`) durable in
    /// groups: concurrent writers on one file system share one
    /// `syncfs(2)` for their staged files and another for their renames,
    /// instead of each paying an `fdatasync` of its file and an `fsync`
    /// of its directory (each a cache flush of the device). The same
    /// guarantee: nothing is acknowledged before a sync that started
    /// after it finished, and a failed sync fails every write that began
    /// before it ended. On by default. `syncfs` also writes back what
    /// other programs left dirty on the same file system, so on a file
    /// system shared with busy writers a commit waits for their data too;
    /// drives of their own are not affected. Used only while shard files
    /// are written with `O_DIRECT` (the io_uring backend, on a file system
    /// that takes it): with buffered shard writes a `syncfs` would write
    /// back the uploads in flight as well, so each write syncs on its own.
    pub group_commit: bool,
    /// Test hook: behave as if the file system refused `O_DIRECT` at open
    /// (`EINVAL`), to exercise the buffered fallback on any file system.
    #[doc(hidden)]
    pub refuse_direct_io_for_tests: bool,
}

impl Default for LocalDriveConfig {
    fn default() -> Self {
        LocalDriveConfig {
            backend: Backend::Auto,
            ring_entries: 256,
            queue_depth: 1024,
            max_blocking: 64,
            direct_io: true,
            direct_read_at: false,
            cached_reads: true,
            piped_reads: false,
            huge_fill: true,
            max_small_file: 64 << 20,
            max_file_size: 16 << 30,
            staging_bytes: 1 << 20,
            max_staging_buffers: 256,
            readahead_chunks: 2,
            readahead_bytes: 1 << 20,
            max_readahead_buffers: 256,
            max_list_entries: 1_000_000,
            background_trash: true,
            group_commit: true,
            refuse_direct_io_for_tests: false,
        }
    }
}

impl LocalDriveConfig {
    /// The default configuration with the given backend.
    pub fn with_backend(backend: Backend) -> Self {
        LocalDriveConfig {
            backend,
            ..Self::default()
        }
    }
}

/// Retries of an operation that raced with a concurrent parent cleanup
/// (directory created, then removed by a delete before we used it).
const RACE_RETRIES: usize = 4;
/// Whether drive-relative `rel` is the temporary area or inside it.
fn in_tmp(rel: &str) -> bool {
    rel.strip_prefix(TMP_VOLUME)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Bytes [`Drive::read_all`] reads in its first, chained attempt: the
/// `xl.meta` of objects with inline data up to about 60 KiB (2+2) fits.
const SMALL_READ_GUESS: usize = 32 << 10;
/// Retries of EINTR/EAGAIN on a read or write.
const TRANSIENT_RETRIES: usize = 16;
/// Deepest directory chain created in one go.
const MAX_DEPTH: usize = 1024;
/// Most top-level volumes listed.
const MAX_VOLUMES: usize = 1_000_000;

fn errno(e: &stdio::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// A [`Drive`] over a local directory. Cheap to clone (shared state).
#[derive(Clone)]
pub struct LocalDrive {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    io: Io,
    cfg: LocalDriveConfig,
    kind: BackendKind,
    id: Mutex<Option<Uuid>>,
    /// Cleared the first time the file system refuses O_DIRECT.
    direct_ok: AtomicBool,
    staging: BufferPool,
    readahead: BufferPool,
    health: HealthTracker,
    /// Group commit of the syncs of directories that got new entries.
    dir_syncs: DirSyncs,
    /// Group commit of [`Drive::write_all`], with
    /// [`LocalDriveConfig::group_commit`].
    fs_sync: Option<Arc<FsSync>>,
    /// Wakes the background trash emptier (see
    /// [`LocalDriveConfig::background_trash`]).
    trash_wake: Arc<Notify>,
    /// The next staging directory of [`SPREAD_VOLUME`] `write_all` uses.
    next_spread: AtomicUsize,
    /// Pipes for [`Drive::read_file_at_piped`].
    pipes: Arc<PipePool>,
}

/// Trash entries removed per pass of the background emptier; passes repeat
/// (each after its rest) while they come back full.
const TRASH_BATCH: usize = 64;

/// How often the background emptier looks at the trash unasked.
const TRASH_INTERVAL: Duration = Duration::from_secs(60);

/// After a pass of the background emptier that took `t`, it rests
/// `t * TRASH_REST` (at most [`TRASH_MAX_REST`]): removing a large trash
/// (a bucket's worth of deletions) takes at most a quarter of one thread
/// and of the drive, and leaves the rest to the requests being served.
const TRASH_REST: u32 = 3;
const TRASH_MAX_REST: Duration = Duration::from_secs(1);

/// The background trash emptier of one drive: a pass after every wake-up
/// (a deletion) or [`TRASH_INTERVAL`]; ends once the drive is dropped.
async fn empty_trash_in_background(drive: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let Some(inner) = drive.upgrade() else {
            return;
        };
        let started = std::time::Instant::now();
        let more = match inner.empty_trash(TRASH_BATCH).await {
            Ok(n) => n >= TRASH_BATCH,
            Err(e) => {
                tracing::warn!(root = %inner.root.display(), error = %e, "emptying the trash failed; retrying later");
                false
            }
        };
        drop(inner);
        let rest = started.elapsed().saturating_mul(TRASH_REST);
        tokio::time::sleep(rest.min(TRASH_MAX_REST)).await;
        if !more {
            // A deletion since the pass started left a permit: no wait.
            let _ = tokio::time::timeout(TRASH_INTERVAL, wake.notified()).await;
        }
    }
}

impl fmt::Debug for LocalDrive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalDrive")
            .field("root", &self.inner.root)
            .field("backend", &self.inner.kind)
            .field("id", &self.id())
            .finish()
    }
}

impl LocalDrive {
    /// Opens the drive at `root` (created if missing) with the configured
    /// backend. Does not look at `format.json`: see
    /// [`verify_format`](crate::verify_format) and
    /// [`save_format`](crate::save_format).
    pub async fn open(root: impl Into<PathBuf>, cfg: LocalDriveConfig) -> Result<LocalDrive> {
        let root = root.into();
        let root_for_open = root.clone();
        let (root, root_fd) = tokio::task::spawn_blocking(move || -> stdio::Result<_> {
            std::fs::create_dir_all(&root_for_open)?;
            let canonical = std::fs::canonicalize(&root_for_open)?;
            let fd = rustix::fs::open(
                &canonical,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok((canonical, fd))
        })
        .await
        .map_err(|e| DriveError::Io {
            op: "open root",
            source: stdio::Error::other(e.to_string()),
        })?
        .map_err(|e| map_io("open root", Ctx::Write, e))?;

        let root_fd = Arc::new(root_fd);
        let fs_sync = match cfg.group_commit {
            true => match FsSync::of(&root_fd) {
                Ok(group) => Some(group),
                Err(e) => {
                    tracing::warn!(root = %root.display(), error = %e, "no group commit: each write syncs on its own");
                    None
                }
            },
            false => None,
        };
        let blocking = Blocking::new(root_fd, cfg.max_blocking);
        let name = format!(
            "uring:{}",
            root.file_name().and_then(|n| n.to_str()).unwrap_or("drive")
        );
        let (uring, kind) = match cfg.backend {
            Backend::ThreadPool => (None, BackendKind::ThreadPool),
            Backend::IoUring => match start_ring(&cfg, name, &blocking).await {
                Ok(ring) => (Some(ring), BackendKind::IoUring),
                Err(e) => return Err(DriveError::BackendUnavailable(format!("io_uring: {e}"))),
            },
            Backend::Auto => match start_ring(&cfg, name, &blocking).await {
                Ok(ring) => (Some(ring), BackendKind::IoUring),
                Err(e) => {
                    tracing::warn!(root = %root.display(), error = %e, "io_uring unavailable; using the thread-pool backend");
                    (None, BackendKind::ThreadPool)
                }
            },
        };
        tracing::info!(root = %root.display(), backend = %kind, "drive opened");
        let staging = BufferPool::new(cfg.staging_bytes, cfg.max_staging_buffers.max(1), 8)?;
        let readahead = BufferPool::new(cfg.readahead_bytes, cfg.max_readahead_buffers.max(1), 8)?;
        let background_trash = cfg.background_trash;
        let pipes = PipePool::new();
        if !cfg.piped_reads {
            pipes.disable();
        }
        let inner = Arc::new(Inner {
            root,
            io: Io {
                blocking,
                uring,
                scratch: Scratch::new(SMALL_READ_GUESS),
                cached_reads: AtomicBool::new(cfg.cached_reads),
                huge_fill: AtomicBool::new(cfg.huge_fill),
                dir_sync_failures: AtomicU64::new(0),
            },
            direct_ok: AtomicBool::new(cfg.direct_io),
            cfg,
            kind,
            id: Mutex::new(None),
            staging,
            readahead,
            health: HealthTracker::default(),
            dir_syncs: DirSyncs::default(),
            fs_sync,
            trash_wake: Arc::new(Notify::new()),
            next_spread: AtomicUsize::new(0),
            pipes,
        });
        if background_trash {
            tokio::spawn(empty_trash_in_background(
                Arc::downgrade(&inner),
                Arc::clone(&inner.trash_wake),
            ));
        }
        Ok(LocalDrive { inner })
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        self.inner.kind
    }

    /// With [`LocalDriveConfig::group_commit`], the `syncfs(2)` calls run
    /// so far for the drive's file system, by this drive and every other
    /// drive of the process on it; `None` without group commit.
    pub fn group_commit_syncs(&self) -> Option<u64> {
        self.inner.fs_sync.as_ref().map(|group| group.syncs())
    }

    /// The drive root (canonical path).
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Moves leftovers of earlier runs out of `.minio.sys/tmp` into the
    /// trash (at most `max_entries`), as MinIO does at start. Returns how many
    /// entries were moved.
    pub async fn clean_tmp(&self, max_entries: usize) -> Result<usize> {
        let names = match self
            .inner
            .list_dir(TMP_VOLUME, "", max_entries.saturating_add(1))
            .await
        {
            Ok(names) => names,
            Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut moved = 0;
        for name in names
            .iter()
            .filter(|n| n.trim_end_matches('/') != ".trash")
            .take(max_entries)
        {
            let rel = format!("{TMP_VOLUME}/{}", name.trim_end_matches('/'));
            self.inner.trash_rel(&rel).await?;
            moved += 1;
        }
        Ok(moved)
    }

    async fn tracked<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        let result = fut.await;
        self.inner.health.record(&result);
        result
    }
}

async fn start_ring(
    cfg: &LocalDriveConfig,
    name: String,
    blocking: &Blocking,
) -> stdio::Result<Uring> {
    let ring = Uring::start(cfg.ring_entries, cfg.queue_depth, name).await?;
    // Beyond the NOP run at start: a statx through the ring proves that
    // file-system opcodes work here (seccomp filters or LSMs can refuse
    // them individually).
    let probe = Io {
        blocking: blocking.clone(),
        uring: Some(ring),
        scratch: Scratch::new(0),
        cached_reads: AtomicBool::new(false),
        huge_fill: AtomicBool::new(false),
        dir_sync_failures: AtomicU64::new(0),
    };
    let stat = probe.stat("").await?;
    if !stat.is_dir {
        return Err(stdio::Error::other(
            "statx through io_uring returned a non-directory for the root",
        ));
    }
    probe
        .uring
        .ok_or_else(|| stdio::Error::other("ring vanished"))
}

impl Inner {
    fn map(&self, op: &'static str, ctx: Ctx, e: stdio::Error) -> DriveError {
        map_io(op, ctx, e)
    }

    /// Runs `change`, which makes directory entries and syncs the
    /// directories it changed before it returns, and fails it if a
    /// directory sync failed on this drive in the meantime, by any path.
    /// Such a sync may have carried this change's entries and lost them,
    /// and its error is reported only once: the change's own sync, through
    /// a descriptor of its own, then succeeds without writing them.
    /// Conservative: a failure in an unrelated directory fails the changes
    /// in flight too, on a drive whose writes are failing anyway.
    async fn dir_change<T>(&self, change: impl Future<Output = Result<T>>) -> Result<T> {
        let before = self.io.dir_sync_failures();
        let out = change.await?;
        if self.io.dir_sync_failures() != before {
            return Err(DriveError::Io {
                op: "fsync dir",
                source: stdio::Error::other(
                    "a directory sync on this drive failed while the change was made; \
                     its entries may not be durable",
                ),
            });
        }
        Ok(out)
    }

    /// Whether `volume` exists as a directory.
    async fn volume_exists(&self, volume: &str) -> Result<bool> {
        match self.io.stat(volume).await {
            Ok(st) => Ok(st.is_dir),
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => Ok(false),
            Err(e) => Err(self.map("statx", Ctx::Read, e)),
        }
    }

    /// The right "not found" for a path in `volume`.
    async fn not_found(&self, volume: &str) -> DriveError {
        match self.volume_exists(volume).await {
            Ok(true) => DriveError::FileNotFound,
            Ok(false) => DriveError::VolumeNotFound,
            Err(e) => e,
        }
    }

    /// Creates `dir` and its missing parents. With `stop`, the chain ends at
    /// that volume, which must exist (it is never created here); without,
    /// parents are created up to the drive root. Parents of created
    /// directories are fsynced.
    async fn mkdir_all(&self, stop: Option<&str>, dir: &str) -> Result<()> {
        let mut pending: Vec<&str> = Vec::new();
        let mut created: Vec<&str> = Vec::new();
        let mut current = dir;
        loop {
            if pending.len() > MAX_DEPTH {
                return Err(DriveError::NameTooLong);
            }
            if Some(current) == stop {
                if self.volume_exists(current).await? {
                    break;
                }
                return Err(DriveError::VolumeNotFound);
            }
            match self.io.mkdir(current).await {
                Ok(()) => {
                    created.push(current);
                    break;
                }
                Err(e) if errno(&e) == libc::EEXIST => break,
                Err(e) if errno(&e) == libc::ENOENT => {
                    pending.push(current);
                    match parent(current) {
                        Some(up) => current = up,
                        None => return Err(self.map("mkdirat", Ctx::Write, e)),
                    }
                }
                Err(e) => return Err(self.map("mkdirat", Ctx::Write, e)),
            }
        }
        for dir in pending.iter().rev() {
            match self.io.mkdir(dir).await {
                Ok(()) => created.push(dir),
                Err(e) if errno(&e) == libc::EEXIST => {}
                Err(e) => return Err(self.map("mkdirat", Ctx::Write, e)),
            }
        }
        // Directories made inside the temporary area need no durable
        // entry there: what is kept of it is moved out by a rename that
        // syncs the moved directory and its new parent, and the area is
        // emptied at start.
        let parents: HashSet<&str> = created
            .iter()
            .map(|d| parent(d).unwrap_or(""))
            .filter(|p| !in_tmp(p))
            .collect();
        for dir in parents {
            self.sync_new_entries(dir).await?;
        }
        Ok(())
    }

    /// Syncs directory `rel` after entries were made in it, grouped with
    /// concurrent callers (one `fsync` started after all their changes
    /// covers them all).
    async fn sync_new_entries(&self, rel: &str) -> Result<()> {
        self.dir_syncs
            .sync(rel, || self.io.sync_dir(rel))
            .await
            .map_err(|e| self.map("fsync dir", Ctx::Write, e))
    }

    async fn sync_parent(&self, rel: &str) -> Result<()> {
        self.io
            .sync_dir(parent(rel).unwrap_or(""))
            .await
            .map_err(|e| self.map("fsync dir", Ctx::Write, e))
    }

    /// Whether to open shard data with O_DIRECT.
    fn want_direct(&self) -> bool {
        self.io.uring.is_some() && self.direct_ok.load(Ordering::Relaxed)
    }

    /// Opens a data file, O_DIRECT when wanted, falling back to buffered I/O
    /// (for this and every later file) if the file system refuses it.
    async fn open_data(&self, rel: &str, kind: OpenKind, direct: bool) -> stdio::Result<Fd> {
        if !direct {
            return self.io.open(rel, kind, false).await;
        }
        let attempt = if self.cfg.refuse_direct_io_for_tests {
            Err(stdio::Error::from_raw_os_error(libc::EINVAL))
        } else {
            self.io.open(rel, kind, true).await
        };
        match attempt {
            Err(e) if errno(&e) == libc::EINVAL => {
                if self.direct_ok.swap(false, Ordering::Relaxed) {
                    tracing::info!(root = %self.root.display(), "file system refuses O_DIRECT; using buffered I/O");
                }
                self.io.open(rel, kind, false).await
            }
            other => other,
        }
    }

    /// Reacts to EINVAL on a direct transfer (a file system that accepted
    /// O_DIRECT at open but not our alignment): clears O_DIRECT on the
    /// descriptor so the retry is buffered.
    fn drop_direct(&self, fd: &Fd) -> bool {
        let Ok(flags) = rustix::fs::fcntl_getfl(&*fd.fd) else {
            return false;
        };
        if !flags.contains(OFlags::DIRECT) {
            return false;
        }
        if self.direct_ok.swap(false, Ordering::Relaxed) {
            tracing::warn!(root = %self.root.display(), "O_DIRECT transfer refused; using buffered I/O");
        }
        rustix::fs::fcntl_setfl(&*fd.fd, flags - OFlags::DIRECT).is_ok()
    }

    /// Writes `buf`'s region `start..start + len` at `offset` completely.
    async fn write_full(
        &self,
        fd: &Fd,
        mut buf: IoBuf,
        start: usize,
        len: usize,
        offset: u64,
    ) -> Result<IoBuf> {
        let mut done = 0usize;
        let mut retries = 0usize;
        while done < len {
            let (back, result) = self
                .io
                .write_at(fd, buf, offset + done as u64, start + done, len - done)
                .await
                .map_err(|e| self.map("write", Ctx::Write, e))?;
            buf = back;
            match result {
                Ok(0) => {
                    return Err(DriveError::Io {
                        op: "write",
                        source: stdio::ErrorKind::WriteZero.into(),
                    });
                }
                Ok(n) => done += n,
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && matches!(errno(&e), libc::EINTR | libc::EAGAIN) =>
                {
                    retries += 1;
                }
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && errno(&e) == libc::EINVAL
                        && self.drop_direct(fd) =>
                {
                    retries += 1;
                }
                Err(e) => return Err(self.map("write", Ctx::Write, e)),
            }
        }
        Ok(buf)
    }

    /// Reads into `buf`'s region `start..start + len` from `offset` until
    /// full or end of file; returns the bytes read.
    async fn read_full(
        &self,
        fd: &Fd,
        mut buf: IoBuf,
        start: usize,
        len: usize,
        offset: u64,
    ) -> Result<(IoBuf, usize)> {
        let mut done = 0usize;
        let mut retries = 0usize;
        while done < len {
            let (back, result) = self
                .io
                .read_at(fd, buf, offset + done as u64, start + done, len - done)
                .await
                .map_err(|e| self.map("read", Ctx::Read, e))?;
            buf = back;
            match result {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && matches!(errno(&e), libc::EINTR | libc::EAGAIN) =>
                {
                    retries += 1;
                }
                Err(e)
                    if retries < TRANSIENT_RETRIES
                        && errno(&e) == libc::EINVAL
                        && self.drop_direct(fd) =>
                {
                    retries += 1;
                }
                Err(e) => return Err(self.map("read", Ctx::Read, e)),
            }
        }
        Ok((buf, done))
    }

    /// Renames `rel` into the trash under a fresh name. A missing `rel` is
    /// reported as `FileNotFound`.
    async fn trash_rel(&self, rel: &str) -> Result<()> {
        let target = format!("{TRASH_VOLUME}/{}", Uuid::new_v4());
        for _ in 0..RACE_RETRIES {
            match self.io.rename(rel, &target, false).await {
                Ok(()) => {
                    self.trash_wake.notify_one();
                    return Ok(());
                }
                Err(e) if errno(&e) == libc::ENOENT => {
                    // Either the source is gone or the trash is missing.
                    match self.io.stat(rel).await {
                        Err(se) if matches!(errno(&se), libc::ENOENT | libc::ENOTDIR) => {
                            return Err(DriveError::FileNotFound);
                        }
                        Err(se) => return Err(self.map("statx", Ctx::Read, se)),
                        Ok(_) => self.mkdir_all(None, TRASH_VOLUME).await?,
                    }
                }
                Err(e) if errno(&e) == libc::ENOTDIR => return Err(DriveError::FileNotFound),
                Err(e) => return Err(self.map("rename to trash", Ctx::Write, e)),
            }
        }
        Err(DriveError::Io {
            op: "rename to trash",
            source: stdio::Error::other("raced with concurrent changes"),
        })
    }

    /// Removes empty directories from `parent(rel)` upwards, stopping below
    /// `volume` or at the first one that is not empty (or not removable).
    async fn remove_empty_parents(&self, volume: &str, rel: &str) {
        let mut current = parent(rel);
        while let Some(dir) = current {
            if dir.len() <= volume.len() {
                break;
            }
            if self.io.unlink(dir, true).await.is_err() {
                break;
            }
            current = parent(dir);
        }
    }

    // ---- volumes ----

    async fn make_volume(&self, volume: &str) -> Result<()> {
        check_volume(volume)?;
        for attempt in 0..2 {
            match self.io.mkdir(volume).await {
                Ok(()) => return self.sync_parent(volume).await,
                Err(e) if errno(&e) == libc::EEXIST => return Err(DriveError::VolumeExists),
                Err(e) if errno(&e) == libc::ENOENT && attempt == 0 => match parent(volume) {
                    Some(up) => self.mkdir_all(None, up).await?,
                    None => return Err(self.map("mkdirat", Ctx::Write, e)),
                },
                Err(e) => return Err(self.map("mkdirat", Ctx::Write, e)),
            }
        }
        Err(DriveError::Io {
            op: "mkdirat",
            source: stdio::Error::other("raced with concurrent changes"),
        })
    }

    async fn list_volumes(&self) -> Result<Vec<VolumeInfo>> {
        let names = self.list_dir_rel("", MAX_VOLUMES).await?;
        let mut volumes = Vec::new();
        for name in names {
            let Some(name) = name.strip_suffix('/') else {
                continue;
            };
            if name == META_VOLUME {
                continue;
            }
            match self.io.stat(name).await {
                Ok(st) if st.is_dir => {
                    volumes.push(VolumeInfo {
                        name: name.to_string(),
                        created: st.created.or(st.modified),
                    });
                }
                Ok(_) => {}
                Err(e) if errno(&e) == libc::ENOENT => {} // deleted meanwhile
                Err(e) => return Err(self.map("statx", Ctx::Read, e)),
            }
        }
        Ok(volumes)
    }

    async fn stat_volume(&self, volume: &str) -> Result<VolumeInfo> {
        check_volume(volume)?;
        match self.io.stat(volume).await {
            Ok(st) if st.is_dir => Ok(VolumeInfo {
                name: volume.to_string(),
                created: st.created.or(st.modified),
            }),
            Ok(_) => Err(DriveError::VolumeNotFound),
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                Err(DriveError::VolumeNotFound)
            }
            Err(e) => Err(self.map("statx", Ctx::Read, e)),
        }
    }

    async fn delete_volume(&self, volume: &str, force: bool) -> Result<()> {
        check_volume(volume)?;
        if volume == META_VOLUME {
            return Err(DriveError::InvalidArgument(
                "refusing to delete .minio.sys".into(),
            ));
        }
        if !self.volume_exists(volume).await? {
            return Err(DriveError::VolumeNotFound);
        }
        if force {
            return match self.trash_rel(volume).await {
                Err(DriveError::FileNotFound) => Err(DriveError::VolumeNotFound),
                other => other,
            };
        }
        match self.io.unlink(volume, true).await {
            Ok(()) => self.sync_parent(volume).await,
            Err(e) if matches!(errno(&e), libc::ENOTEMPTY | libc::EEXIST) => {
                Err(DriveError::VolumeNotEmpty)
            }
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                Err(DriveError::VolumeNotFound)
            }
            Err(e) => Err(self.map("rmdir", Ctx::Write, e)),
        }
    }

    // ---- small files ----

    async fn read_all(&self, volume: &str, path: &str, limit: u64) -> Result<Vec<u8>> {
        let rel = path::join(volume, path)?;
        let limit = limit.min(self.cfg.max_small_file);
        // Most metadata files are a few KiB: one chained open, read and
        // close reads them; a file that fills the guess is read again the
        // long way (open, statx, read of its exact size).
        let guess = usize::try_from(limit.saturating_add(1))
            .unwrap_or(usize::MAX)
            .min(SMALL_READ_GUESS);
        match self.io.read_small(&rel, guess, volume).await {
            // Shorter than the guess, which is at most limit + 1 bytes.
            Ok(SmallRead::Whole(data)) => return Ok(data),
            Ok(SmallRead::Longer) => {}
            Ok(SmallRead::Missing(Some(true))) => return Err(DriveError::FileNotFound),
            Ok(SmallRead::Missing(Some(false))) => return Err(DriveError::VolumeNotFound),
            Ok(SmallRead::Missing(None)) => return Err(self.not_found(volume).await),
            Err(e) if errno(&e) == libc::EISDIR => return Err(DriveError::IsDirectory),
            Err(e) => return Err(self.map("read", Ctx::Read, e)),
        }
        let fd = match self.io.open(&rel, OpenKind::Read, false).await {
            Ok(fd) => fd,
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                return Err(self.not_found(volume).await);
            }
            Err(e) => return Err(self.map("openat", Ctx::Read, e)),
        };
        let st = self
            .io
            .fstat(&fd)
            .await
            .map_err(|e| self.map("statx", Ctx::Read, e))?;
        if st.is_dir {
            return Err(DriveError::IsDirectory);
        }
        if st.size > limit {
            return Err(DriveError::TooLarge {
                size: st.size,
                limit,
            });
        }
        // size <= limit <= max_small_file, which fits in memory by contract.
        let size = usize::try_from(st.size).map_err(|_| DriveError::TooLarge {
            size: st.size,
            limit,
        })?;
        let (buf, n) = self
            .read_full(&fd, IoBuf::Heap(vec![0; size]), 0, size, 0)
            .await?;
        let mut data = buf.into_vec();
        data.truncate(n);
        Ok(data)
    }

    async fn write_all(&self, volume: &str, path: &str, data: Vec<u8>) -> Result<()> {
        let rel = path::join(volume, path)?;
        if data.len() as u64 > self.cfg.max_small_file {
            return Err(DriveError::TooLarge {
                size: data.len() as u64,
                limit: self.cfg.max_small_file,
            });
        }
        // Staged in one of the spread directories, in turn (see
        // `make_spread_dir`).
        let spread = self.next_spread.fetch_add(1, Ordering::Relaxed) % SPREAD_DIRS;
        let tmp = format!("{SPREAD_VOLUME}/{spread:02}/{}", Uuid::new_v4());
        // A directory inside a volume is made in the chain when missing (a
        // new object's); the volume itself never is.
        let dir = parent(&rel).unwrap_or("");
        let make_dir = dir != volume && !dir.is_empty();
        // Only while shard files bypass the page cache: with buffered shard
        // writes a `syncfs` would also write back the uploads in flight,
        // and a small write would wait for them.
        if let Some(group) = self.fs_sync.as_ref().filter(|_| self.want_direct()) {
            let result = self
                .write_all_grouped(group, spread, &tmp, volume, &rel, make_dir, data)
                .await;
            if result.is_err() {
                let _ = self.io.unlink(&tmp, false).await;
            }
            return result;
        }
        let (written, made) = self.io.write_small(&tmp, data, &rel, dir, make_dir).await;
        if made {
            // The new directory's entry in its parent must be durable
            // before the write is acknowledged, whatever happens next.
            let synced = self.sync_new_entries(parent(dir).unwrap_or("")).await;
            if let Err(e) = synced {
                let _ = self.io.unlink(&tmp, false).await;
                return Err(e);
            }
        }
        let data = match written {
            Written::Done => return Ok(()),
            Written::NotSynced(Some(e)) => return Err(self.map("fsync dir", Ctx::Write, e)),
            Written::NotSynced(None) => return self.sync_parent(&rel).await,
            Written::NotRenamed => {
                let result = async {
                    self.rename_into_place(&tmp, volume, &rel).await?;
                    self.sync_parent(&rel).await
                }
                .await;
                if result.is_err() {
                    let _ = self.io.unlink(&tmp, false).await;
                }
                return result;
            }
            Written::Failed(op, error, data) => {
                let _ = self.io.unlink(&tmp, false).await;
                match (error, data) {
                    // A short write: the long path below retries it and
                    // reports what stops it.
                    (None, Some(data)) => data,
                    (Some(e), _) => return Err(self.map(op, Ctx::Write, e)),
                    (None, None) => {
                        return Err(DriveError::Io {
                            op,
                            source: stdio::Error::other("io_uring chain lost its data"),
                        });
                    }
                }
            }
            // No chains here, or the staging directory is missing: the long
            // path creates it.
            Written::NotCreated(data, None) => data,
            Written::NotCreated(data, Some(e)) if errno(&e) == libc::ENOENT => data,
            Written::NotCreated(_, Some(e)) => return Err(self.map("openat", Ctx::Write, e)),
        };
        let fd = self.create_staged(&tmp, spread).await?;
        let result = self
            .write_all_into_place(fd, &tmp, volume, &rel, data)
            .await;
        if result.is_err() {
            let _ = self.io.unlink(&tmp, false).await;
        }
        result
    }

    /// [`Drive::write_all`] with [`LocalDriveConfig::group_commit`]: `data`
    /// staged in `tmp` (in spread directory `spread`) without a sync, a
    /// group commit, the rename onto `rel` (making its directory first
    /// with `make_dir`), another group commit. The first commit keeps the
    /// order a crash must see: a file renamed into place is durable. The
    /// caller removes `tmp` on failure.
    #[allow(clippy::too_many_arguments)]
    async fn write_all_grouped(
        &self,
        group: &FsSync,
        spread: usize,
        tmp: &str,
        volume: &str,
        rel: &str,
        make_dir: bool,
        data: Vec<u8>,
    ) -> Result<()> {
        let begun = group.begin();
        let data = match self.io.stage_small(tmp, data).await {
            Written::Done => None,
            // A short write: retried on the long path, which reports what
            // stops it.
            Written::Failed(_, None, Some(data)) => {
                let _ = self.io.unlink(tmp, false).await;
                Some(data)
            }
            Written::Failed(op, Some(e), _) => return Err(self.map(op, Ctx::Write, e)),
            Written::Failed(op, None, None) => {
                return Err(DriveError::Io {
                    op,
                    source: stdio::Error::other("io_uring chain lost its data"),
                });
            }
            // No chains here, or the staging directory is missing.
            Written::NotCreated(data, None) => Some(data),
            Written::NotCreated(data, Some(e)) if errno(&e) == libc::ENOENT => Some(data),
            Written::NotCreated(_, Some(e)) => return Err(self.map("openat", Ctx::Write, e)),
            Written::NotRenamed | Written::NotSynced(_) => {
                return Err(DriveError::Io {
                    op: "io_uring",
                    source: stdio::Error::other("staging went further than asked"),
                });
            }
        };
        if let Some(data) = data {
            let fd = self.create_staged(tmp, spread).await?;
            let len = data.len();
            self.write_full(&fd, IoBuf::Heap(data), 0, len, 0).await?;
            drop(fd);
        }
        let commit = |e| self.map("syncfs", Ctx::Write, e);
        group.commit(begun).await.map_err(commit)?;
        let renamed = match make_dir {
            true => {
                self.io
                    .mkdir_rename(tmp, rel, parent(rel).unwrap_or(""))
                    .await
            }
            false => None,
        };
        // Anything but a rename done: the long way, which makes missing
        // parents and tells the errors apart.
        if !matches!(renamed, Some(Ok(()))) {
            self.rename_into_place(tmp, volume, rel).await?;
        }
        group.commit(begun).await.map_err(commit)
    }

    /// Creates `write_all`'s staged file `tmp` in spread directory
    /// `spread`, making the directory when it is missing.
    async fn create_staged(&self, tmp: &str, spread: usize) -> Result<Fd> {
        match self.io.open(tmp, OpenKind::CreateExclusive, false).await {
            Ok(fd) => Ok(fd),
            Err(e) if errno(&e) == libc::ENOENT => {
                self.make_spread_dir(spread).await?;
                self.io
                    .open(tmp, OpenKind::CreateExclusive, false)
                    .await
                    .map_err(|e| self.map("openat", Ctx::Write, e))
            }
            Err(e) => Err(self.map("openat", Ctx::Write, e)),
        }
    }

    /// Creates staging directory `spread` of [`SPREAD_VOLUME`], and the
    /// directories above it.
    ///
    /// Why the staging is spread: ext4 places a new file in its directory's
    /// block group, and without a journal it does not reuse an inode freed
    /// in the last minutes: every file creation reads past each recently
    /// freed inode of the group (`recently_deleted`), holding the group.
    /// With one staging directory, every `xl.meta` ever written starts in
    /// one group, and after a bucket's worth of deletions each new one
    /// paid for all of them (measured: 1.25 ms per file after 40,000
    /// deletions, against 43 us in directories spread over 16 groups;
    /// `docs/benchmarks.md`). The spread area is marked `FS_TOPDIR_FL`, so
    /// ext4 places its subdirectories over the block groups as it does
    /// top-level directories. The mark is a placement hint only: where the
    /// file system refuses it, the staging works the same. The temporary
    /// area itself is not marked: the uploads' shard directories made there
    /// stay where ext4 puts them by default (spreading them too did not
    /// measure better for 1 and 16 MiB PUTs).
    async fn make_spread_dir(&self, spread: usize) -> Result<()> {
        self.mkdir_all(None, SPREAD_VOLUME).await?;
        if let Err(e) = self.io.mark_topdir(SPREAD_VOLUME).await {
            tracing::debug!(root = %self.root.display(), error = %e, "{SPREAD_VOLUME} not marked FS_TOPDIR_FL");
        }
        self.mkdir_all(None, &format!("{SPREAD_VOLUME}/{spread:02}"))
            .await
    }

    async fn write_all_into_place(
        &self,
        fd: Fd,
        tmp: &str,
        volume: &str,
        rel: &str,
        data: Vec<u8>,
    ) -> Result<()> {
        let len = data.len();
        self.write_full(&fd, IoBuf::Heap(data), 0, len, 0).await?;
        self.io
            .sync(&fd, true)
            .await
            .map_err(|e| self.map("fdatasync", Ctx::Write, e))?;
        drop(fd);
        self.rename_into_place(tmp, volume, rel).await?;
        self.sync_parent(rel).await
    }

    /// rename(2) of a file onto `rel`, creating missing parents in `volume`.
    async fn rename_into_place(&self, from: &str, volume: &str, rel: &str) -> Result<()> {
        for _ in 0..RACE_RETRIES {
            match self.io.rename(from, rel, false).await {
                Ok(()) => return Ok(()),
                Err(e) if errno(&e) == libc::ENOENT => match parent(rel) {
                    Some(dir) => self.mkdir_all(Some(volume), dir).await?,
                    None => return Err(DriveError::VolumeNotFound),
                },
                Err(e) if matches!(errno(&e), libc::EISDIR | libc::ENOTEMPTY | libc::EEXIST) => {
                    return Err(DriveError::IsDirectory);
                }
                Err(e) => return Err(self.map("renameat", Ctx::Write, e)),
            }
        }
        Err(DriveError::Io {
            op: "renameat",
            source: stdio::Error::other("raced with concurrent deletes"),
        })
    }

    // ---- streams ----

    async fn create_file(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
        expected: Option<u64>,
    ) -> Result<LocalWriter> {
        let rel = path::join(volume, path)?;
        if let Some(size) = expected
            && size > self.cfg.max_file_size
        {
            return Err(DriveError::TooLarge {
                size,
                limit: self.cfg.max_file_size,
            });
        }
        let direct = self.want_direct();
        let mut opened = None;
        // A new upload's shard in the temporary area: its directories are
        // made in the same chain as the file's open.
        if volume == TMP_VOLUME {
            let mut dirs: Vec<&str> = std::iter::successors(parent(&rel), |d| parent(d))
                .take_while(|d| *d != TMP_VOLUME)
                .collect();
            dirs.reverse();
            opened = self.io.open_in_new_dirs(&rel, &dirs, direct).await;
        }
        for _ in 0..RACE_RETRIES {
            if opened.is_some() {
                break;
            }
            match self.open_data(&rel, OpenKind::CreateTruncate, direct).await {
                Ok(fd) => {
                    opened = Some(fd);
                    break;
                }
                Err(e) if errno(&e) == libc::ENOENT => match parent(&rel) {
                    Some(dir) => self.mkdir_all(Some(volume), dir).await?,
                    None => return Err(DriveError::VolumeNotFound),
                },
                Err(e) => return Err(self.map("openat", Ctx::Write, e)),
            }
        }
        let fd = opened.ok_or_else(|| DriveError::Io {
            op: "openat",
            source: stdio::Error::other("raced with concurrent deletes"),
        })?;
        if let Some(size) = expected.filter(|&s| s > 0) {
            match self.io.fallocate(&fd, size).await {
                Ok(()) => {}
                Err(e) if matches!(errno(&e), libc::ENOSPC | libc::EDQUOT) => {
                    return Err(DriveError::DriveFull);
                }
                // Preallocation is an optimisation: file systems without it
                // (EOPNOTSUPP, ENOSYS, EINVAL) just write.
                Err(_) => {}
            }
        }
        Ok(LocalWriter {
            inner: Arc::clone(self),
            direct: fd.direct,
            fd: Some(fd),
            file_offset: 0,
            accepted: 0,
            staging: None,
            expected,
            padded: false,
            poisoned: false,
        })
    }

    /// [`Drive::read_file_at`], and with `piped`,
    /// [`Drive::read_file_at_piped`]'s pipe where the page cache gives one.
    async fn read_range(
        &self,
        volume: &str,
        path: &str,
        offset: u64,
        len: usize,
        mut buf: AlignedBuf,
        piped: bool,
    ) -> Result<(AlignedBuf, usize, Option<Pipe>)> {
        let rel = path::join(volume, path)?;
        check_range(offset, len, &buf)?;
        let skip = (offset % ALIGN as u64) as usize;
        let span = align_up(skip + len);
        // O_DIRECT needs the aligned span around the range to fit the buffer.
        let direct = self.want_direct() && self.cfg.direct_read_at && span <= buf.capacity();
        if !direct
            && let Some((n, pipe)) = self.io.read_cached_piped(
                &rel,
                offset,
                &mut buf.capacity_mut()[..len],
                piped.then_some(&self.pipes),
            )
        {
            buf.set_len(n);
            return Ok((buf, n, pipe));
        }
        let fd = self.open_read(&rel, volume, direct).await?;
        if len == 0 {
            buf.clear();
            return Ok((buf, 0, None));
        }
        if !fd.direct {
            let (buf, n) = self.read_buffered(&fd, buf, len, offset).await?;
            return Ok((buf, n, None));
        }
        let (back, got) = self
            .read_full(&fd, IoBuf::Aligned(buf), 0, span, offset - skip as u64)
            .await?;
        buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
        let n = got.saturating_sub(skip).min(len);
        buf.capacity_mut().copy_within(skip..skip + n, 0);
        buf.set_len(n);
        Ok((buf, n, None))
    }

    /// Opens `rel` (in `volume`) to read it, with `O_DIRECT` if `direct`;
    /// a missing file or volume, or a directory, as the drive's errors.
    async fn open_read(&self, rel: &str, volume: &str, direct: bool) -> Result<Fd> {
        match self.open_data(rel, OpenKind::Read, direct).await {
            Ok(fd) => Ok(fd),
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                Err(self.not_found(volume).await)
            }
            Err(e) if errno(&e) == libc::EISDIR => Err(DriveError::IsDirectory),
            Err(e) => Err(self.map("openat", Ctx::Read, e)),
        }
    }

    /// `len` bytes at `offset` of the buffered file `fd` into `buf` (fewer
    /// only at end of file), through the backend.
    async fn read_buffered(
        &self,
        fd: &Fd,
        buf: AlignedBuf,
        len: usize,
        offset: u64,
    ) -> Result<(AlignedBuf, usize)> {
        let (back, got) = self
            .read_full(fd, IoBuf::Aligned(buf), 0, len, offset)
            .await?;
        let mut buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
        buf.set_len(got);
        Ok((buf, got))
    }

    /// Opens `volume/path` for [`ShardFile`] reads: by name from the
    /// dentry cache when it can (no trip to the ring), else through the
    /// backend. `None` where shard data is read with `O_DIRECT`
    /// (`direct_read_at`): those reads go by path, aligned.
    async fn open_shard_file(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
    ) -> Result<Option<Arc<dyn ShardFile>>> {
        let rel = path::join(volume, path)?;
        if self.want_direct() && self.cfg.direct_read_at {
            return Ok(None);
        }
        let fd = match self.io.open_cached(&rel) {
            Some(fd) => Fd {
                fd: Arc::new(fd),
                direct: false,
            },
            None => self.open_read(&rel, volume, false).await?,
        };
        Ok(Some(Arc::new(LocalShardFile {
            inner: Arc::clone(self),
            fd,
            huge: OnceLock::new(),
            filled: tokio::sync::Mutex::new(0..0),
        })))
    }

    async fn open_reader(
        self: &Arc<Self>,
        volume: &str,
        path: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<LocalReader> {
        let rel = path::join(volume, path)?;
        let fd = match self
            .open_data(&rel, OpenKind::Read, self.want_direct())
            .await
        {
            Ok(fd) => fd,
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                return Err(self.not_found(volume).await);
            }
            Err(e) => return Err(self.map("openat", Ctx::Read, e)),
        };
        let st = self
            .io
            .fstat(&fd)
            .await
            .map_err(|e| self.map("statx", Ctx::Read, e))?;
        if st.is_dir {
            return Err(DriveError::IsDirectory);
        }
        let len = len.unwrap_or(st.size.saturating_sub(offset));
        let out_of_range = DriveError::OutOfRange {
            offset,
            len,
            size: st.size,
        };
        let end = offset
            .checked_add(len)
            .ok_or(DriveError::InvalidArgument("offset + len overflows".into()))?;
        if end > st.size {
            return Err(out_of_range);
        }
        Ok(LocalReader {
            inner: Arc::clone(self),
            fd,
            pos: offset,
            end,
            poisoned: false,
            ahead: VecDeque::new(),
            next_fetch: 0,
            current: None,
        })
    }

    // ---- namespace ----

    async fn rename(
        &self,
        src_volume: &str,
        src_path: &str,
        dst_volume: &str,
        dst_path: &str,
    ) -> Result<()> {
        let src = path::join(src_volume, src_path)?;
        let dst = path::join(dst_volume, dst_path)?;
        if src != dst
            && let Some(dir) = parent(&dst)
            && self
                .rename_chained(&src, src_volume, &dst, dst_volume, dir)
                .await?
        {
            return Ok(());
        }
        let src_stat = match self.io.stat(&src).await {
            Ok(st) => st,
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                return Err(self.not_found(src_volume).await);
            }
            Err(e) => return Err(self.map("statx", Ctx::Read, e)),
        };
        if src == dst {
            return Ok(());
        }
        let mut done = false;
        for _ in 0..RACE_RETRIES {
            match self.io.rename(&src, &dst, false).await {
                Ok(()) => {
                    done = true;
                    break;
                }
                Err(e) if errno(&e) == libc::ENOENT => {
                    if !self
                        .io
                        .stat(&src)
                        .await
                        .is_ok_and(|st| st.is_dir == src_stat.is_dir)
                    {
                        return Err(self.not_found(src_volume).await);
                    }
                    match parent(&dst) {
                        Some(dir) => self.mkdir_all(Some(dst_volume), dir).await?,
                        None => return Err(DriveError::VolumeNotFound),
                    }
                }
                Err(e)
                    if matches!(errno(&e), libc::ENOTEMPTY | libc::EEXIST) && src_stat.is_dir =>
                {
                    self.replace_dir(&src, &dst).await?;
                    done = true;
                    break;
                }
                Err(e) if errno(&e) == libc::EINVAL => {
                    return Err(DriveError::InvalidArgument(
                        "cannot move a directory into itself".into(),
                    ));
                }
                Err(e) => return Err(self.map("renameat", Ctx::Write, e)),
            }
        }
        if !done {
            return Err(DriveError::Io {
                op: "renameat",
                source: stdio::Error::other("raced with concurrent deletes"),
            });
        }
        self.sync_parent(&dst).await?;
        if src_stat.is_dir {
            // Entries created inside the directory while it lived elsewhere.
            self.io
                .sync_dir(&dst)
                .await
                .map_err(|e| self.map("fsync dir", Ctx::Write, e))?;
        }
        Ok(())
    }

    /// [`rename`](Self::rename) in one ring chain (source `statx`, the
    /// parent made when missing, rename, syncs of the parent and of a
    /// directory moved). `Ok(false)` when the rename did not happen that
    /// way (no chains, a missing level further up, a non-empty target):
    /// the caller takes the long path.
    async fn rename_chained(
        &self,
        src: &str,
        src_volume: &str,
        dst: &str,
        dst_volume: &str,
        dir: &str,
    ) -> Result<bool> {
        // A volume is never made here.
        let make_parent = dir != dst_volume;
        let Some(done) = self.io.rename_synced(src, dst, dir, make_parent).await else {
            return Ok(false);
        };
        let done = done.map_err(|e| self.map("io_uring", Ctx::Write, e))?;
        if done.made {
            self.sync_new_entries(parent(dir).unwrap_or("")).await?;
        }
        let src_stat = match done.src {
            Ok(st) => st,
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                return Err(self.not_found(src_volume).await);
            }
            Err(e) => return Err(self.map("statx", Ctx::Read, e)),
        };
        if done.renamed.is_err() {
            return Ok(false);
        }
        let fsync_failed = |e| self.map("fsync dir", Ctx::Write, e);
        match done.parent_synced {
            Synced::Yes => {}
            Synced::NotRun => self.sync_parent(dst).await?,
            Synced::Failed(e) => return Err(fsync_failed(e)),
        }
        if src_stat.is_dir {
            // Entries created inside the directory while it lived elsewhere.
            match done.target_synced {
                Synced::Yes => {}
                Synced::NotRun => self.io.sync_dir(dst).await.map_err(fsync_failed)?,
                Synced::Failed(e) => return Err(fsync_failed(e)),
            }
        }
        Ok(true)
    }

    /// Puts directory `src` in place of the non-empty directory `dst`:
    /// atomically with RENAME_EXCHANGE, then trashes the old one (now at
    /// `src`). File systems without RENAME_EXCHANGE get trash-then-rename,
    /// which leaves a moment with no `dst`.
    async fn replace_dir(&self, src: &str, dst: &str) -> Result<()> {
        match self.io.stat(dst).await {
            Ok(st) if st.is_dir => {}
            Ok(_) => return Err(DriveError::NotDirectory),
            Err(e) => return Err(self.map("statx", Ctx::Read, e)),
        }
        match self.io.rename(src, dst, true).await {
            Ok(()) => match self.trash_rel(src).await {
                Ok(()) | Err(DriveError::FileNotFound) => Ok(()),
                Err(e) => Err(e),
            },
            Err(e) if matches!(errno(&e), libc::EINVAL | libc::EOPNOTSUPP) => {
                match self.trash_rel(dst).await {
                    Ok(()) | Err(DriveError::FileNotFound) => {}
                    Err(e) => return Err(e),
                }
                self.io
                    .rename(src, dst, false)
                    .await
                    .map_err(|e| self.map("renameat", Ctx::Write, e))
            }
            Err(e) => Err(self.map("renameat2 exchange", Ctx::Write, e)),
        }
    }

    async fn delete(&self, volume: &str, path: &str, recursive: bool) -> Result<()> {
        let rel = path::join(volume, path)?;
        let removed = if recursive {
            match self.trash_rel(&rel).await {
                Ok(()) => true,
                Err(DriveError::FileNotFound) => false,
                Err(e) => return Err(e),
            }
        } else {
            match self.io.unlink(&rel, false).await {
                Ok(()) => true,
                Err(e) if errno(&e) == libc::EISDIR => match self.io.unlink(&rel, true).await {
                    Ok(()) => true,
                    Err(e) if matches!(errno(&e), libc::ENOTEMPTY | libc::EEXIST) => {
                        return Err(DriveError::DirectoryNotEmpty);
                    }
                    Err(e) if errno(&e) == libc::ENOENT => false,
                    Err(e) => return Err(self.map("rmdir", Ctx::Write, e)),
                },
                Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => false,
                Err(e) => return Err(self.map("unlinkat", Ctx::Write, e)),
            }
        };
        if !removed {
            return match self.volume_exists(volume).await? {
                true => Ok(()),
                false => Err(DriveError::VolumeNotFound),
            };
        }
        self.remove_empty_parents(volume, &rel).await;
        Ok(())
    }

    async fn move_to_trash(&self, volume: &str, path: &str) -> Result<()> {
        let rel = path::join(volume, path)?;
        match self.trash_rel(&rel).await {
            Ok(()) => Ok(()),
            Err(DriveError::FileNotFound) => match self.volume_exists(volume).await? {
                true => Ok(()),
                false => Err(DriveError::VolumeNotFound),
            },
            Err(e) => Err(e),
        }
    }

    async fn empty_trash(&self, max_entries: usize) -> Result<usize> {
        let names = match self.list_dir_rel(TRASH_VOLUME, max_entries).await {
            Ok(names) => names,
            Err(DriveError::FileNotFound) => return Ok(0),
            Err(e) => return Err(e),
        };
        let base = self.root.join(TRASH_VOLUME);
        let removed = self
            .io
            .blocking
            .run(move |_| {
                let mut removed = 0;
                for name in names {
                    let path = base.join(name.trim_end_matches('/'));
                    let result = if name.ends_with('/') {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                    match result {
                        Ok(()) => removed += 1,
                        Err(e) if e.kind() == stdio::ErrorKind::NotFound => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(removed)
            })
            .await
            .map_err(|e| self.map("remove trash", Ctx::Write, e))?;
        Ok(removed)
    }

    async fn list_dir(
        &self,
        volume: &str,
        dir_path: &str,
        limit: usize,
    ) -> Result<Vec<DirEntryName>> {
        check_volume(volume)?;
        let rel = if dir_path.is_empty() {
            volume.to_string()
        } else {
            path::join(volume, dir_path)?
        };
        match self.list_dir_rel(&rel, limit).await {
            Err(DriveError::FileNotFound) => Err(self.not_found(volume).await),
            other => other,
        }
    }

    /// Lists `rel` (root-relative): the `limit` smallest names in byte
    /// order, directories suffixed with '/', read with a bounded heap so
    /// memory stays O(limit) however large the directory.
    async fn list_dir_rel(&self, rel: &str, limit: usize) -> Result<Vec<DirEntryName>> {
        let limit = limit.min(self.cfg.max_list_entries);
        let rel = if rel.is_empty() {
            ".".to_string()
        } else {
            rel.to_string()
        };
        let root_label = self.root.clone();
        self.io
            .blocking
            .run(move |root| {
                let dir_fd = rustix::fs::openat(
                    root,
                    &rel,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                let mut dir = rustix::fs::Dir::new(dir_fd)?;
                let mut heap: BinaryHeap<String> = BinaryHeap::new();
                let mut skipped = 0usize;
                if limit == 0 {
                    return Ok(Vec::new());
                }
                while let Some(entry) = dir.read() {
                    let entry = entry?;
                    let raw = entry.file_name();
                    let bytes = raw.to_bytes();
                    if bytes == b"." || bytes == b".." {
                        continue;
                    }
                    let Ok(name) = std::str::from_utf8(bytes) else {
                        skipped += 1;
                        continue;
                    };
                    let is_dir = match entry.file_type() {
                        rustix::fs::FileType::Directory => true,
                        rustix::fs::FileType::Symlink | rustix::fs::FileType::Unknown => {
                            let fd = dir.fd()?;
                            rustix::fs::statx(fd, raw, rustix::fs::AtFlags::empty(), rustix::fs::StatxFlags::TYPE)
                                .is_ok_and(|st| u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR)
                        }
                        _ => false,
                    };
                    let mut name = name.to_owned();
                    if is_dir {
                        name.push('/');
                    }
                    if heap.len() < limit {
                        heap.push(name);
                    } else if heap.peek().is_some_and(|largest| name < *largest) {
                        heap.pop();
                        heap.push(name);
                    }
                }
                if skipped > 0 {
                    tracing::warn!(root = %root_label.display(), dir = %rel, skipped, "skipped non-UTF-8 names");
                }
                Ok(heap.into_sorted_vec())
            })
            .await
            .map_err(|e| self.map("readdir", Ctx::Read, e))
    }

    async fn stat_file(&self, volume: &str, path: &str) -> Result<FileInfo> {
        let rel = path::join(volume, path)?;
        match self.io.stat(&rel).await {
            Ok(st) => Ok(FileInfo {
                size: st.size,
                modified: st.modified,
                is_dir: st.is_dir,
            }),
            Err(e) if matches!(errno(&e), libc::ENOENT | libc::ENOTDIR) => {
                Err(self.not_found(volume).await)
            }
            Err(e) => Err(self.map("statx", Ctx::Read, e)),
        }
    }

    async fn disk_info(&self) -> Result<DiskInfo> {
        let kind = self.kind;
        self.io
            .blocking
            .run(move |root| {
                let vfs = rustix::fs::fstatvfs(root)?;
                let fs = rustix::fs::fstatfs(root)?;
                let unit = if vfs.f_frsize > 0 {
                    vfs.f_frsize
                } else {
                    vfs.f_bsize
                };
                Ok(DiskInfo {
                    total: vfs.f_blocks.saturating_mul(unit),
                    free: vfs.f_bavail.saturating_mul(unit),
                    used: vfs
                        .f_blocks
                        .saturating_sub(vfs.f_bfree)
                        .saturating_mul(unit),
                    files_total: vfs.f_files,
                    files_free: vfs.f_ffree,
                    fs_type: fs_type_name(fs.f_type as i64),
                    backend: kind,
                })
            })
            .await
            .map_err(|e| self.map("statvfs", Ctx::Read, e))
    }
}

/// Names of the file systems a drive is likely to sit on, by `f_type` magic.
fn fs_type_name(magic: i64) -> Option<String> {
    let name = match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6969 => "nfs",
        0x794C_7630 => "overlayfs",
        0x6573_5546 => "fuse",
        0xFF53_4D42 => "cifs",
        0x8584_58F6 => "ramfs",
        _ => return None,
    };
    Some(name.to_string())
}

// ---- the trait ----

impl Drive for LocalDrive {
    fn id(&self) -> Option<Uuid> {
        self.inner.id.lock().ok().and_then(|id| *id)
    }

    fn set_id(&self, id: Option<Uuid>) {
        if let Ok(mut slot) = self.inner.id.lock() {
            *slot = id;
        }
    }

    fn label(&self) -> String {
        self.inner.root.display().to_string()
    }

    fn health(&self) -> HealthReport {
        let mut report = self.inner.health.report();
        if self
            .inner
            .io
            .uring
            .as_ref()
            .is_some_and(|ring| !ring.is_alive())
        {
            report.state = DriveState::Offline;
        }
        report
    }

    fn disk_info(&self) -> BoxFuture<'_, Result<DiskInfo>> {
        Box::pin(self.tracked(self.inner.disk_info()))
    }

    fn make_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.tracked(self.inner.dir_change(self.inner.make_volume(volume))))
    }

    fn list_volumes(&self) -> BoxFuture<'_, Result<Vec<VolumeInfo>>> {
        Box::pin(self.tracked(self.inner.list_volumes()))
    }

    fn stat_volume<'a>(&'a self, volume: &'a str) -> BoxFuture<'a, Result<VolumeInfo>> {
        Box::pin(self.tracked(self.inner.stat_volume(volume)))
    }

    fn delete_volume<'a>(&'a self, volume: &'a str, force: bool) -> BoxFuture<'a, Result<()>> {
        Box::pin(
            self.tracked(
                self.inner
                    .dir_change(self.inner.delete_volume(volume, force)),
            ),
        )
    }

    fn read_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(self.tracked(self.inner.read_all(volume, path, limit)))
    }

    fn write_all<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(
            self.tracked(
                self.inner
                    .dir_change(self.inner.write_all(volume, path, data)),
            ),
        )
    }

    fn create_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardWriter>>> {
        Box::pin(self.tracked(async move {
            let writer = self
                .inner
                .dir_change(self.inner.create_file(volume, path, expected_size))
                .await?;
            Ok(Box::new(writer) as Box<dyn ShardWriter>)
        }))
    }

    fn read_file_at_piped<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize, Option<Pipe>)>> {
        Box::pin(self.tracked(self.inner.read_range(volume, path, offset, len, buf, true)))
    }

    fn read_file_at<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize)>> {
        Box::pin(self.tracked(async move {
            let (buf, n, _) = self
                .inner
                .read_range(volume, path, offset, len, buf, false)
                .await?;
            Ok((buf, n))
        }))
    }

    fn open_shard_file<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<dyn ShardFile>>>> {
        Box::pin(self.tracked(self.inner.open_shard_file(volume, path)))
    }

    fn open_reader<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardReader>>> {
        Box::pin(self.tracked(async move {
            let reader = self.inner.open_reader(volume, path, offset, len).await?;
            Ok(Box::new(reader) as Box<dyn ShardReader>)
        }))
    }

    fn rename<'a>(
        &'a self,
        src_volume: &'a str,
        src_path: &'a str,
        dst_volume: &'a str,
        dst_path: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(
            self.tracked(
                self.inner.dir_change(
                    self.inner
                        .rename(src_volume, src_path, dst_volume, dst_path),
                ),
            ),
        )
    }

    fn delete<'a>(
        &'a self,
        volume: &'a str,
        path: &'a str,
        recursive: bool,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.tracked(self.inner.delete(volume, path, recursive)))
    }

    fn move_to_trash<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.tracked(self.inner.move_to_trash(volume, path)))
    }

    fn empty_trash(&self, max_entries: usize) -> BoxFuture<'_, Result<usize>> {
        Box::pin(self.tracked(self.inner.empty_trash(max_entries)))
    }

    fn list_dir<'a>(
        &'a self,
        volume: &'a str,
        dir_path: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DirEntryName>>> {
        Box::pin(self.tracked(self.inner.list_dir(volume, dir_path, limit)))
    }

    fn stat_file<'a>(&'a self, volume: &'a str, path: &'a str) -> BoxFuture<'a, Result<FileInfo>> {
        Box::pin(self.tracked(self.inner.stat_file(volume, path)))
    }

    fn walk<'a>(&'a self, opts: &'a WalkOptions) -> BoxFuture<'a, Result<WalkPage>> {
        Box::pin(self.tracked(self.inner.walk(opts)))
    }
}

fn io_mode_of(fd: &Fd) -> Result<IoMode> {
    let flags = rustix::fs::fcntl_getfl(&*fd.fd).map_err(|e| DriveError::Io {
        op: "fcntl F_GETFL",
        source: e.into(),
    })?;
    Ok(if flags.contains(OFlags::DIRECT) {
        IoMode::Direct
    } else {
        IoMode::Buffered
    })
}

// ---- writer ----

/// Streaming writer of a [`LocalDrive`]; see [`ShardWriter`].
struct LocalWriter {
    inner: Arc<Inner>,
    fd: Option<Fd>,
    /// Whether the file was opened with O_DIRECT (writes stay aligned).
    direct: bool,
    /// Bytes written to the file so far (a multiple of ALIGN while direct).
    file_offset: u64,
    /// Bytes accepted from the caller (file_offset + staged).
    accepted: u64,
    staging: Option<AlignedBuf>,
    expected: Option<u64>,
    /// The last write went to disk padded to a whole block: the file is
    /// longer than `accepted` until `finish` cuts it back.
    padded: bool,
    poisoned: bool,
}

impl LocalWriter {
    fn fd(&self) -> Result<Fd> {
        self.fd.clone().ok_or(DriveError::Poisoned)
    }

    /// The bytes accepted once `n` more are: refused beyond the announced
    /// size or the drive's file size limit.
    fn check_size(&self, n: u64) -> Result<u64> {
        let total = self.accepted.saturating_add(n);
        if let Some(expected) = self.expected
            && total > expected
        {
            return Err(DriveError::SizeMismatch {
                expected,
                actual: total,
            });
        }
        if total > self.inner.cfg.max_file_size {
            return Err(DriveError::TooLarge {
                size: total,
                limit: self.inner.cfg.max_file_size,
            });
        }
        Ok(total)
    }

    async fn write_impl(&mut self, mut buf: AlignedBuf) -> Result<AlignedBuf> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let n = buf.len() as u64;
        let total = self.check_size(n)?;
        if n == 0 {
            return Ok(buf);
        }
        // Cleared only if this call completes: a failure, or the future
        // being dropped half-way, leaves the file in an unknown state.
        self.poisoned = true;
        let fd = self.fd()?;
        let staged = self.staging.as_ref().map_or(0, |s| s.len());
        if !self.direct || (staged == 0 && buf.len().is_multiple_of(ALIGN)) {
            // Zero-copy: straight from the caller's buffer.
            let len = buf.len();
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, len, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += n;
        } else if staged == 0 && self.expected == Some(total) {
            // The file's last bytes, nothing staged: straight from the
            // caller's buffer, padded with zeros to a whole block inside its
            // (aligned) capacity; `finish` cuts the file back to its size.
            let len = buf.len();
            let padded = align_up(len);
            buf.capacity_mut()[len..padded].fill(0);
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, padded, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += n;
            self.padded = padded != len;
        } else if staged == 0 && buf.len() > ALIGN {
            // Nothing staged: the whole blocks go straight from the
            // caller's buffer, only the tail (under one block) is staged.
            let head = buf.len() & !(ALIGN - 1);
            let back = self
                .inner
                .write_full(&fd, IoBuf::Aligned(buf), 0, head, self.file_offset)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            self.file_offset += head as u64;
            let mut staging = self.inner.staging.get().await?;
            staging.extend_from_slice(&buf[head..]);
            self.staging = Some(staging);
        } else {
            let mut consumed = 0;
            while consumed < buf.len() {
                let mut staging = match self.staging.take() {
                    Some(staging) => staging,
                    None => self.inner.staging.get().await?,
                };
                consumed += staging.extend_from_slice(&buf[consumed..]);
                if staging.remaining() == 0 {
                    let len = staging.len();
                    let back = self
                        .inner
                        .write_full(&fd, IoBuf::Aligned(staging), 0, len, self.file_offset)
                        .await?;
                    staging = back.into_aligned().ok_or(DriveError::BackendStopped)?;
                    self.file_offset += len as u64;
                    staging.clear();
                }
                self.staging = Some(staging);
            }
        }
        self.accepted = total;
        self.poisoned = false;
        buf.clear();
        Ok(buf)
    }

    /// [`write_impl`](Self::write_impl) for each buffer, except that a run
    /// of two or more buffers that can go straight from the caller's memory
    /// (whole blocks while direct, nothing staged) goes in one vectored
    /// write; what that write leaves unwritten goes buffer by buffer.
    async fn write_many_impl(&mut self, bufs: Vec<AlignedBuf>) -> Result<Vec<AlignedBuf>> {
        let staged = self.staging.as_ref().map_or(0, |s| s.len());
        let run = if self.direct && staged != 0 {
            0
        } else {
            bufs.iter()
                .take(MAX_IOVECS)
                .take_while(|b| !self.direct || b.len().is_multiple_of(ALIGN))
                .count()
        };
        let n = bufs.len();
        let mut bufs = bufs.into_iter();
        let mut out = if run >= 2 {
            self.write_vectored(bufs.by_ref().take(run).collect())
                .await?
        } else {
            Vec::with_capacity(n)
        };
        for buf in bufs {
            out.push(self.write_impl(buf).await?);
        }
        Ok(out)
    }

    /// Writes `bufs` (each ready to go from its own memory) back to back
    /// with one `pwritev`, finishing what it leaves with
    /// [`Inner::write_full`] per buffer.
    async fn write_vectored(&mut self, bufs: Vec<AlignedBuf>) -> Result<Vec<AlignedBuf>> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let n: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        let total = self.check_size(n)?;
        // Cleared only if this call completes, as in `write_impl`.
        self.poisoned = true;
        let fd = self.fd()?;
        let (bufs, result) = self
            .inner
            .io
            .write_vectored_at(&fd, bufs, self.file_offset)
            .await
            .map_err(|e| self.inner.map("pwritev", Ctx::Write, e))?;
        let mut skip = match result {
            Ok(done) => done,
            // Retried (or, for O_DIRECT refused, made buffered) per buffer.
            Err(e) if matches!(errno(&e), libc::EINTR | libc::EAGAIN | libc::EINVAL) => 0,
            Err(e) => return Err(self.inner.map("pwritev", Ctx::Write, e)),
        };
        let mut out = Vec::with_capacity(bufs.len());
        let mut at = self.file_offset;
        for buf in bufs {
            let len = buf.len();
            let mut buf = if skip >= len {
                skip -= len;
                buf
            } else {
                let back = self
                    .inner
                    .write_full(&fd, IoBuf::Aligned(buf), skip, len - skip, at + skip as u64)
                    .await?;
                skip = 0;
                back.into_aligned().ok_or(DriveError::BackendStopped)?
            };
            at += len as u64;
            buf.clear();
            out.push(buf);
        }
        self.file_offset += n;
        self.accepted = total;
        self.poisoned = false;
        Ok(out)
    }

    async fn finish_impl(mut self) -> Result<u64> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        self.poisoned = true;
        let fd = self.fd()?;
        if let Some(mut staging) = self.staging.take()
            && !staging.is_empty()
        {
            // O_DIRECT needs whole blocks: write the tail padded with zeros,
            // then cut the file back to its real size.
            let tail = staging.len();
            let padded = align_up(tail);
            staging.capacity_mut()[tail..padded].fill(0);
            self.inner
                .write_full(&fd, IoBuf::Aligned(staging), 0, padded, self.file_offset)
                .await?;
            self.file_offset += tail as u64;
            if padded != tail {
                self.inner
                    .io
                    .truncate(&fd, self.accepted)
                    .await
                    .map_err(|e| self.inner.map("ftruncate", Ctx::Write, e))?;
            }
        }
        if self.padded {
            self.inner
                .io
                .truncate(&fd, self.accepted)
                .await
                .map_err(|e| self.inner.map("ftruncate", Ctx::Write, e))?;
        }
        if let Some(expected) = self.expected
            && expected != self.accepted
        {
            return Err(DriveError::SizeMismatch {
                expected,
                actual: self.accepted,
            });
        }
        self.inner
            .io
            .sync(&fd, true)
            .await
            .map_err(|e| self.inner.map("fdatasync", Ctx::Write, e))?;
        self.fd = None;
        Ok(self.accepted)
    }
}

impl ShardWriter for LocalWriter {
    fn write(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move {
            let result = self.write_impl(buf).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn write_many(&mut self, bufs: Vec<AlignedBuf>) -> BoxFuture<'_, Result<Vec<AlignedBuf>>> {
        Box::pin(async move {
            let result = self.write_many_impl(bufs).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn finish(self: Box<Self>) -> BoxFuture<'static, Result<u64>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let result = self.finish_impl().await;
            inner.health.record(&result);
            result
        })
    }

    fn written(&self) -> u64 {
        self.accepted
    }

    fn io_mode(&self) -> Result<IoMode> {
        io_mode_of(&self.fd()?)
    }
}

// ---- reader ----

/// Streaming reader of a [`LocalDrive`]; see [`ShardReader`].
struct LocalReader {
    inner: Arc<Inner>,
    fd: Fd,
    pos: u64,
    end: u64,
    poisoned: bool,
    /// Read-ahead chunks in flight (O_DIRECT only), in file order.
    ahead: VecDeque<tokio::task::JoinHandle<Result<Fetched>>>,
    /// File offset (aligned) of the next chunk to fetch.
    next_fetch: u64,
    /// The chunk being consumed.
    current: Option<Fetched>,
}

/// A read-ahead chunk: file bytes `start..start + valid` in `buf`.
struct Fetched {
    buf: AlignedBuf,
    start: u64,
    valid: usize,
}

impl Fetched {
    fn end(&self) -> u64 {
        self.start + self.valid as u64
    }
}

impl LocalReader {
    /// Starts chunk reads until `readahead_chunks` are in flight, the range
    /// is covered, or the drive's read-ahead buffers run out.
    fn top_up(&mut self) {
        while self.ahead.len() < self.inner.cfg.readahead_chunks && self.next_fetch < self.end {
            let Some(Ok(chunk)) = self.inner.readahead.try_get() else {
                break;
            };
            let start = self.next_fetch;
            let left = self.end - start;
            let want = if left < chunk.capacity() as u64 {
                align_up(left as usize)
            } else {
                chunk.capacity()
            };
            let inner = Arc::clone(&self.inner);
            let fd = self.fd.clone();
            self.ahead.push_back(tokio::spawn(async move {
                let (back, got) = inner
                    .read_full(&fd, IoBuf::Aligned(chunk), 0, want, start)
                    .await?;
                let buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
                Ok(Fetched {
                    buf,
                    start,
                    valid: got,
                })
            }));
            self.next_fetch = start + want as u64;
        }
    }

    /// Serves the caller from read-ahead chunks. Returns the buffer and
    /// `false` (nothing served) when no chunk is available because the
    /// read-ahead buffers ran out: the caller then reads directly.
    async fn read_ahead(&mut self, mut buf: AlignedBuf) -> Result<(AlignedBuf, bool)> {
        if self.current.as_ref().is_some_and(|c| self.pos >= c.end()) {
            self.current = None;
        }
        if self.current.is_none() && self.ahead.is_empty() {
            self.next_fetch = self.pos - self.pos % ALIGN as u64;
        }
        self.top_up();
        buf.clear();
        while self.pos < self.end && buf.remaining() > 0 {
            if self.current.is_none() {
                let Some(pending) = self.ahead.pop_front() else {
                    break;
                };
                let fetched = pending.await.map_err(|e| DriveError::Io {
                    op: "read-ahead",
                    source: stdio::Error::other(e.to_string()),
                })??;
                if fetched.end() <= self.pos {
                    // The file shrank under us.
                    return Err(DriveError::OutOfRange {
                        offset: self.pos,
                        len: self.end - self.pos,
                        size: fetched.end(),
                    });
                }
                self.current = Some(fetched);
                self.top_up();
            }
            let Some(current) = &self.current else { break };
            let from = (self.pos - current.start) as usize;
            let until = (current.end().min(self.end) - current.start) as usize;
            let taken = buf.extend_from_slice(&current.buf.capacity_slice()[from..until]);
            self.pos += taken as u64;
            if self.pos >= current.end() {
                self.current = None;
            }
        }
        let served = !buf.is_empty();
        Ok((buf, served))
    }

    async fn read_impl(&mut self, mut buf: AlignedBuf) -> Result<AlignedBuf> {
        if self.poisoned {
            return Err(DriveError::Poisoned);
        }
        let remaining = self.end - self.pos;
        if remaining == 0 {
            buf.clear();
            return Ok(buf);
        }
        self.poisoned = true;
        if self.fd.direct && self.inner.cfg.readahead_chunks > 0 {
            let (back, served) = self.read_ahead(buf).await?;
            if served {
                self.poisoned = false;
                return Ok(back);
            }
            buf = back;
        }
        let capacity = buf.capacity();
        let remaining_usize = usize::try_from(remaining).unwrap_or(usize::MAX);
        let n = if self.fd.direct {
            let skip = (self.pos % ALIGN as u64) as usize;
            let span = capacity.min(align_up(skip.saturating_add(remaining_usize)));
            let (back, got) = self
                .inner
                .read_full(
                    &self.fd,
                    IoBuf::Aligned(buf),
                    0,
                    span,
                    self.pos - skip as u64,
                )
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            let n = got.saturating_sub(skip).min(remaining_usize);
            buf.capacity_mut().copy_within(skip..skip + n, 0);
            n
        } else {
            let want = capacity.min(remaining_usize);
            let (back, got) = self
                .inner
                .read_full(&self.fd, IoBuf::Aligned(buf), 0, want, self.pos)
                .await?;
            buf = back.into_aligned().ok_or(DriveError::BackendStopped)?;
            got
        };
        if n == 0 {
            // The file shrank under us.
            return Err(DriveError::OutOfRange {
                offset: self.pos,
                len: remaining,
                size: self.pos,
            });
        }
        buf.set_len(n);
        self.pos += n as u64;
        self.poisoned = false;
        Ok(buf)
    }
}

/// Refuses a positioned read of `len` bytes at `offset` into `buf` that
/// `buf` cannot hold or whose end overflows.
fn check_range(offset: u64, len: usize, buf: &AlignedBuf) -> Result<()> {
    if len > buf.capacity() {
        return Err(DriveError::InvalidArgument(format!(
            "read of {len} bytes into a buffer of {} bytes",
            buf.capacity()
        )));
    }
    offset
        .checked_add(len as u64)
        .ok_or_else(|| DriveError::InvalidArgument("offset + len overflows".into()))?;
    Ok(())
}

/// A shard file open for reads at any offset ([`Drive::open_shard_file`]).
struct LocalShardFile {
    inner: Arc<Inner>,
    fd: Fd,
    /// Whether reads fill the page cache in huge folios first
    /// ([`LocalDriveConfig::huge_fill`]), decided at the first read: when
    /// its range was not all cached.
    huge: OnceLock<bool>,
    /// The part of the file the reads through this descriptor filled so
    /// far (whole chunks of [`HUGE_FOLIO`] bytes, cut at the end of the
    /// file). A read inside it goes straight to the cache; the lock makes
    /// concurrent reads of a cold file fill it in turn, each finding what
    /// the one before it brought in.
    filled: tokio::sync::Mutex<std::ops::Range<u64>>,
}

impl LocalShardFile {
    /// Brings the [`HUGE_FOLIO`] chunks holding `offset..end` into the page
    /// cache ([`Io::fill_huge`]), from where the filled range ends if the
    /// read starts inside it. A failed fill is left to the read that
    /// follows, which goes to the disk and reports any error.
    async fn fill(&self, offset: u64, end: u64) {
        let mut filled = self.filled.lock().await;
        if filled.start <= offset && end <= filled.end {
            return;
        }
        let extends = filled.start <= offset && offset < filled.end;
        let from = if extends {
            filled.end
        } else {
            offset - offset % HUGE_FOLIO
        };
        let to = end.div_ceil(HUGE_FOLIO) * HUGE_FOLIO;
        if let Some(reached) = self.inner.io.fill_huge(&self.fd, from, to).await
            && reached > from
        {
            *filled = if extends {
                filled.start..reached
            } else {
                from..reached
            };
        }
    }

    async fn read_impl(
        &self,
        offset: u64,
        len: usize,
        mut buf: AlignedBuf,
    ) -> Result<(AlignedBuf, usize)> {
        check_range(offset, len, &buf)?;
        if len == 0 {
            buf.clear();
            return Ok((buf, 0));
        }
        let huge = *self.huge.get_or_init(|| {
            self.inner
                .io
                .wants_huge_fill(self.fd.fd.as_fd(), offset, len)
        });
        if huge {
            self.fill(offset, offset.saturating_add(len as u64)).await;
        }
        let cached = self.inner.io.read_cached_fd(
            self.fd.fd.as_fd(),
            offset,
            &mut buf.capacity_mut()[..len],
        );
        if let Some(n) = cached {
            buf.set_len(n);
            return Ok((buf, n));
        }
        self.inner.read_buffered(&self.fd, buf, len, offset).await
    }
}

impl ShardFile for LocalShardFile {
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'_, Result<(AlignedBuf, usize)>> {
        Box::pin(async move {
            let result = self.read_impl(offset, len, buf).await;
            self.inner.health.record(&result);
            result
        })
    }
}

impl ShardReader for LocalReader {
    fn read(&mut self, buf: AlignedBuf) -> BoxFuture<'_, Result<AlignedBuf>> {
        Box::pin(async move {
            let result = self.read_impl(buf).await;
            self.inner.health.record(&result);
            result
        })
    }

    fn remaining(&self) -> u64 {
        self.end - self.pos
    }

    fn io_mode(&self) -> Result<IoMode> {
        io_mode_of(&self.fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_sync_failing_during_a_change_fails_the_change() {
        let base = tempfile::tempdir().unwrap();
        let drive = LocalDrive::open(base.path().join("d"), LocalDriveConfig::default())
            .await
            .unwrap();
        let inner = &drive.inner;
        assert_eq!(inner.dir_change(async { Ok(7) }).await.unwrap(), 7);
        // A change whose entries a failed sync may have carried: the
        // change's own sync came back fine, but it does not count.
        let failed = inner
            .dir_change(async {
                inner.io.dir_sync_failed();
                Ok(7)
            })
            .await
            .unwrap_err();
        assert!(failed.is_fault(), "{failed}");
        // A change begun after the failure is not blamed for it.
        assert_eq!(inner.dir_change(async { Ok(8) }).await.unwrap(), 8);
        // The change's own error wins.
        let own = inner
            .dir_change(async {
                inner.io.dir_sync_failed();
                Err::<(), _>(DriveError::DriveFull)
            })
            .await
            .unwrap_err();
        assert!(matches!(own, DriveError::DriveFull), "{own}");
    }
}
