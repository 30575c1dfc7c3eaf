//! Committing a new version: the data directory moved into place and the
//! version added to `xl.meta` on every drive that has its data, kept on a
//! write quorum or rolled back ([`commit_outcome`] decides); and the
//! removal of version data and of what writes leave in the temp area.

use drive::DriveError;
use drive::format::TMP_VOLUME;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::quorum::{CommitOutcome, Committed, commit_outcome};
use super::*;
use crate::xlmeta::{Version, XlMeta};

/// Where a new version's data is: what [`ErasureSet::commit`] puts in place.
pub(super) enum NewData<'a> {
    /// An object stored inline: per drive (in set order), its shard's
    /// records, kept in `xl.meta`.
    Inline(Vec<Vec<u8>>),
    /// An object whose data directory is at `path` in `volume` on every
    /// drive but the `failed` ones, moved into place.
    Moved {
        volume: &'static str,
        path: &'a str,
        failed: &'a [bool],
    },
}

/// One drive's part of a new version's data ([`commit_one`]).
enum DriveData {
    /// Its inline records.
    Inline(Vec<u8>),
    /// Its data directory, at `path` in `volume`, renamed into place.
    Moved { volume: &'static str, path: String },
}

impl ErasureSet {
    /// Commits a new version on every drive that has its data: moves the
    /// data directory into place (streamed objects) and rewrites `xl.meta`
    /// with the version added. Needs `quorum` successes; otherwise undoes
    /// what it did and fails.
    pub(super) async fn commit(
        &self,
        bucket: &str,
        dir: &str,
        ov: ObjectVersion<'static>,
        data: NewData<'_>,
        quorum: usize,
    ) -> Result<()> {
        let n = self.drives.len();
        let data_dir_s = Uuid::from_bytes(ov.data_dir).to_string();
        let mut set = JoinSet::new();
        for d in 0..n {
            let drive_data = match &data {
                NewData::Inline(shards) => DriveData::Inline(shards[d].clone()),
                NewData::Moved { failed, .. } if failed[d] => continue,
                NewData::Moved { volume, path, .. } => DriveData::Moved {
                    volume,
                    path: (*path).to_owned(),
                },
            };
            let drive = self.drives[d].clone();
            let (bucket, dir) = (bucket.to_owned(), dir.to_owned());
            let mut ov = ov.clone();
            ov.erasure_index = i64::from(ov.erasure_dist[d]);
            let dst = format!("{dir}/{data_dir_s}");
            set.spawn(async move {
                let r = commit_one(&*drive, &bucket, &dir, ov, drive_data, &dst).await;
                (d, r)
            });
        }
        let mut done = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((d, Ok(c))) => done.push(Committed { drive: d, ..c }),
                Ok((d, Err(e))) => {
                    tracing::warn!(drive = %self.drives[d].label(), "commit failed: {e}");
                }
                Err(_) => {}
            }
        }
        let moved = matches!(data, NewData::Moved { .. });
        let mut written: Vec<usize> = done.iter().map(|c| c.drive).collect();
        written.sort_unstable();
        match commit_outcome(done, quorum, moved) {
            CommitOutcome::Keep { remove } => {
                for (d, dd) in &remove {
                    let drive = &*self.drives[*d];
                    let _ = remove_data_dir(drive, self.cache.as_ref(), bucket, dir, dd).await;
                }
                if written.len() < n {
                    self.journal_missed(bucket, dir, ov.version_id, &written)
                        .await;
                }
                Ok(())
            }
            CommitOutcome::RollBack { undo, error } => {
                // Restore the previous xl.meta and drop the new data dir.
                for u in undo {
                    let drive = &self.drives[u.drive];
                    let _ = match u.restore {
                        Some(bytes) => {
                            drive
                                .write_all(bucket, &format!("{dir}/{XL_META}"), bytes)
                                .await
                        }
                        None => {
                            drive
                                .delete(bucket, &format!("{dir}/{XL_META}"), false)
                                .await
                        }
                    };
                    if u.remove_data_dir {
                        let _ = drive
                            .delete(bucket, &format!("{dir}/{data_dir_s}"), true)
                            .await;
                    }
                }
                Err(error)
            }
        }
    }

    /// Remembers a change of version `version` (a committed write, a
    /// delete marker, a removed version, an edit of its metadata) that
    /// missed drives (see the layer's heal journal), durably, on one of the
    /// `written` drives, before it is acknowledged.
    pub(super) async fn journal_missed(
        &self,
        bucket: &str,
        dir: &str,
        version: [u8; 16],
        written: &[usize],
    ) {
        let Some((journal, set)) = &self.journal else {
            return;
        };
        let entry = crate::layer::journal::Entry {
            bucket: bucket.to_owned(),
            key: crate::layer::names::key_from_dir(dir),
            version,
        };
        if let Some((drive, name)) =
            crate::layer::journal::record(&self.drives, written, &entry).await
        {
            journal.add(crate::layer::journal::Pending {
                set: *set,
                drive: Some(drive),
                name,
                entry,
                attempts: 0,
            });
        }
    }

    /// Removes directory `tmp_id` of the temp area from every drive.
    pub(super) async fn remove_tmp(&self, tmp_id: &str) {
        for d in &self.drives {
            let _ = d.delete(TMP_VOLUME, tmp_id, true).await;
        }
    }

    /// Removes what crashed writes left in `.minio.sys/tmp` (run at start,
    /// before serving).
    pub async fn clean_tmp(&self) -> usize {
        let mut removed = 0;
        for d in &self.drives {
            let Ok(entries) = d.list_dir(TMP_VOLUME, "", 100_000).await else {
                continue;
            };
            for e in entries {
                let name = e.trim_end_matches('/');
                if name == ".trash" || name.is_empty() {
                    continue;
                }
                if d.delete(TMP_VOLUME, name, true).await.is_ok() {
                    removed += 1;
                }
            }
            let _ = d.empty_trash(1_000_000).await;
        }
        removed
    }
}

/// Commits the new version `ov` on one drive: its data (inline records
/// into `xl.meta`, or its data directory renamed to `dst`), then its
/// `xl.meta` rewritten with the version added. Returns what the commit did
/// (`drive` is left 0 for the caller to fill in).
async fn commit_one(
    drive: &dyn Drive,
    bucket: &str,
    dir: &str,
    ov: ObjectVersion<'static>,
    data: DriveData,
    dst: &str,
) -> Result<Committed> {
    let path = format!("{dir}/{XL_META}");
    let prev = match drive.read_all(bucket, &path, MAX_XL_META).await {
        Ok(b) => Some(b),
        Err(DriveError::FileNotFound) => None,
        Err(e) => return Err(e.into()),
    };
    let mut meta = match &prev {
        Some(b) => XlMeta::decode(b)?.into_owned(),
        None => XlMeta::new(),
    };
    let vid = ov.version_id;
    let new_dir = ov.data_dir;
    let moved = match data {
        DriveData::Inline(s) => {
            meta.set_inline_data(&vid, s);
            None
        }
        // A streamed version replacing an inline one (the null version)
        // must not leave the old payload behind.
        DriveData::Moved { volume, path } => {
            meta.remove_inline_data(&vid);
            Some((volume, path))
        }
    };
    let replaced = meta.add_version(Version::object(ov, WRITTEN_BY))?;
    if let Some((vol, src)) = moved {
        drive.rename(vol, &src, bucket, dst).await?;
    }
    drive.write_all(bucket, &path, meta.encode()?).await?;
    // The version replaced (an overwritten null version): its data dir is
    // removed by the caller once the commit reached its quorum.
    let old_dir = replaced
        .as_ref()
        .and_then(|old| old.as_object())
        .filter(|o| !o.inline_data() && meta.shared_data_dir_count(&vid, &o.data_dir) == 0)
        .map(|o| o.data_dir)
        .filter(|dd| *dd != new_dir);
    Ok(Committed {
        drive: 0,
        previous: prev,
        replaced_data_dir: old_dir,
    })
}

/// Removes version data directory `data_dir` of object directory `dir`
/// from one drive, its blocks dropped from the read cache first. Every
/// removal of a version's data goes through here, so the cache never
/// outlives the data; each drive's removal asks (a cheap no-op after the
/// first), as drives out of step may name different directories.
pub(super) async fn remove_data_dir(
    drive: &dyn Drive,
    cache: Option<&SetCache>,
    bucket: &str,
    dir: &str,
    data_dir: &[u8; 16],
) -> std::result::Result<(), DriveError> {
    if let Some(c) = cache {
        c.forget(data_dir);
    }
    let path = format!("{dir}/{}", Uuid::from_bytes(*data_dir));
    drive.delete(bucket, &path, true).await
}

/// Waits for every drive task of `set`, each answering its drive's
/// position; returns the positions of those that succeeded, in order.
pub(super) async fn join_drives(set: &mut JoinSet<(usize, Result<()>)>) -> Vec<usize> {
    let mut ok = Vec::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok((d, Ok(()))) => ok.push(d),
            Ok((_, Err(e))) => tracing::debug!("drive update failed: {e}"),
            Err(_) => {}
        }
    }
    ok.sort_unstable();
    ok
}
