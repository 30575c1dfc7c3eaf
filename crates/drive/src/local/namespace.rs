//! Names on the drive: volumes, directories made with their parents and
//! synced, renames into place, deletes with the cleanup of emptied
//! parents, listings and `stat`.

use std::collections::{BinaryHeap, HashSet};
use std::io as stdio;

use rustix::fs::{Mode, OFlags};

use super::io::Synced;
use super::{Inner, RACE_RETRIES, errno};
use crate::drive::{DirEntryName, FileInfo, VolumeInfo};
use crate::error::{Ctx, DriveError, Result};
use crate::format::{META_VOLUME, TMP_VOLUME};
use crate::path::{self, check_volume, parent};

/// Deepest directory chain created in one go.
const MAX_DEPTH: usize = 1024;
/// Most top-level volumes listed.
const MAX_VOLUMES: usize = 1_000_000;

/// Whether drive-relative `rel` is the temporary area or inside it.
fn in_tmp(rel: &str) -> bool {
    rel.strip_prefix(TMP_VOLUME)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Inner {
    /// Creates `dir` and its missing parents. With `stop`, the chain ends at
    /// that volume, which must exist (it is never created here); without,
    /// parents are created up to the drive root. Parents of created
    /// directories are fsynced.
    pub(super) async fn mkdir_all(&self, stop: Option<&str>, dir: &str) -> Result<()> {
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
    pub(super) async fn sync_new_entries(&self, rel: &str) -> Result<()> {
        self.dir_syncs
            .sync(rel, || self.io.sync_dir(rel))
            .await
            .map_err(|e| self.map("fsync dir", Ctx::Write, e))
    }

    pub(super) async fn sync_parent(&self, rel: &str) -> Result<()> {
        self.io
            .sync_dir(parent(rel).unwrap_or(""))
            .await
            .map_err(|e| self.map("fsync dir", Ctx::Write, e))
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

    pub(super) async fn make_volume(&self, volume: &str) -> Result<()> {
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

    pub(super) async fn list_volumes(&self) -> Result<Vec<VolumeInfo>> {
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

    pub(super) async fn stat_volume(&self, volume: &str) -> Result<VolumeInfo> {
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

    pub(super) async fn delete_volume(&self, volume: &str, force: bool) -> Result<()> {
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

    pub(super) async fn rename(
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

    pub(super) async fn delete(&self, volume: &str, path: &str, recursive: bool) -> Result<()> {
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

    pub(super) async fn list_dir(
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
    pub(super) async fn list_dir_rel(&self, rel: &str, limit: usize) -> Result<Vec<DirEntryName>> {
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

    pub(super) async fn stat_file(&self, volume: &str, path: &str) -> Result<FileInfo> {
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
}
