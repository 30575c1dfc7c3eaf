//! Small files (`xl.meta`): whole reads, and atomic, durable replacement
//! through a staged file in one of the spread directories, synced on its
//! own or by the file system's group commit.

use std::io as stdio;
use std::sync::atomic::Ordering;

use uuid::Uuid;

use super::fssync::FsSync;
use super::io::{Fd, IoBuf, OpenKind, SmallRead, Written};
use super::{Inner, RACE_RETRIES, errno};
use crate::error::{Ctx, DriveError, Result};
use crate::format::{SPREAD_DIRS, SPREAD_VOLUME};
use crate::path::{self, parent};
#[cfg(doc)]
use {super::LocalDriveConfig, crate::drive::Drive};

/// Bytes [`Drive::read_all`] reads in its first, chained attempt: the
/// `xl.meta` of objects with inline data up to about 60 KiB (2+2) fits.
pub(super) const SMALL_READ_GUESS: usize = 32 << 10;

impl Inner {
    pub(super) async fn read_all(&self, volume: &str, path: &str, limit: u64) -> Result<Vec<u8>> {
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

    pub(super) async fn write_all(&self, volume: &str, path: &str, data: Vec<u8>) -> Result<()> {
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
    /// With one staging directory, every `xl.meta` ever written would start
    /// in one group, and after a bucket's worth of deletions each new one
    /// would pay for all of them (measured: 1.25 ms per file after 40,000
    /// deletions, against 43 us in directories spread over 16 groups, by a
    /// loop creating, writing 300 bytes to and closing files on ext4;
    /// docs/bench-notes/small.md). The spread area is marked
    /// `FS_TOPDIR_FL`, so ext4 places its subdirectories over the block
    /// groups as it does top-level directories. The mark is a placement hint only: where the
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
}
