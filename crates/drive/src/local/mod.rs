//! [`LocalDrive`]: a [`Drive`] over a local directory.
//!
//! The drive logic (atomic replacement, parent creation and cleanup,
//! `O_DIRECT` alignment, trash) is written once over a small set of
//! primitives (`io/`) that either backend provides with the same
//! semantics; see the crate documentation for the backends and the fsync
//! policy. This file holds the [`LocalDrive`] type, its opening, and the
//! [`Drive`] implementation, which delegates each operation to the file
//! that owns it:
//!
//! - `config.rs`: [`LocalDriveConfig`] and [`Backend`].
//! - `namespace.rs`: volumes, directories, renames, deletes, listings.
//! - `small.rs`: whole-file reads and atomic writes of small files.
//! - `shard_write.rs` / `shard_read.rs`: shard files written and read.
//! - `transfer.rs`: whole reads and writes, `O_DIRECT` and its fallback.
//! - `trash.rs`: the trash and its background emptier.
//! - `io/` (the primitives), `uring.rs` (the io_uring backend),
//!   `dirsync.rs` and `fssync.rs` (group commit), `walk/` (listing pages).

mod config;
mod dirsync;
pub(crate) mod fssync;
mod io;
mod namespace;
mod shard_read;
mod shard_write;
mod small;
mod transfer;
mod trash;
mod uring;
mod walk;

use std::fmt;
use std::io as stdio;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags};
use tokio::sync::Notify;
use uuid::Uuid;

pub use self::config::{Backend, LocalDriveConfig};
use self::dirsync::DirSyncs;
use self::fssync::FsSync;
use self::io::{Blocking, Io, Scratch};
use self::small::SMALL_READ_GUESS;
use self::trash::empty_trash_in_background;
use self::uring::Uring;
use crate::buf::{AlignedBuf, BufferPool};
use crate::drive::{
    BackendKind, BoxFuture, DirEntryName, DiskInfo, Drive, DriveState, FileInfo, HealthReport,
    ShardFile, ShardReader, ShardWriter, VolumeInfo,
};
use crate::error::{Ctx, DriveError, Result, map_io};
use crate::health::HealthTracker;
use crate::pipe::{Pipe, PipePool};
use crate::walk::{WalkOptions, WalkPage};

/// Retries of an operation that raced with a concurrent parent cleanup
/// (directory created, then removed by a delete before we used it).
const RACE_RETRIES: usize = 4;

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
    /// The next staging directory of
    /// [`SPREAD_VOLUME`](crate::format::SPREAD_VOLUME) `write_all` uses.
    next_spread: AtomicUsize,
    /// Pipes for [`Drive::read_file_at_piped`].
    pipes: Arc<PipePool>,
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
