//! The trash (`.minio.sys/tmp/.trash`): deleted and replaced data renamed
//! into it, and emptied in the background or on request.

use std::io as stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use uuid::Uuid;

use super::{Inner, LocalDrive, RACE_RETRIES, errno};
use crate::error::{Ctx, DriveError, Result};
use crate::format::{TMP_VOLUME, TRASH_VOLUME};
use crate::path;

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
pub(super) async fn empty_trash_in_background(drive: Weak<Inner>, wake: Arc<Notify>) {
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

impl LocalDrive {
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
}

impl Inner {
    /// Renames `rel` into the trash under a fresh name. A missing `rel` is
    /// reported as `FileNotFound`.
    pub(super) async fn trash_rel(&self, rel: &str) -> Result<()> {
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

    pub(super) async fn move_to_trash(&self, volume: &str, path: &str) -> Result<()> {
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

    pub(super) async fn empty_trash(&self, max_entries: usize) -> Result<usize> {
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
}
