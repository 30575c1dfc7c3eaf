//! DELETE with S3's versioning semantics: a delete marker added, or one
//! version removed with its data, on a majority of the set's drives.

use drive::DriveError;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::commit::{join_drives, remove_data_dir};
use super::quorum::{check_version_removed, check_write_quorum, holders_of, metadata_quorum};
use super::*;
use crate::layer::names::object_dir;
use crate::xlmeta::{DeleteMarker, Version, VersionKind, XlMeta};

impl ErasureSet {
    /// DELETE of `bucket`/`key`, with S3's semantics for the bucket's
    /// versioning state: without a version, a versioned bucket gets a new
    /// delete marker, a suspended one a null delete marker (replacing the
    /// null version, whose data goes), an unversioned one loses the null
    /// version; with a version, that version is removed, with its data.
    pub async fn delete(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        versioning: Versioning,
    ) -> Result<DeleteResult> {
        let dir = object_dir(key);
        let n = self.drives.len();
        if version.is_none() && versioning != Versioning::Unversioned {
            let vid = match versioning {
                Versioning::Enabled => Some(Uuid::new_v4()),
                _ => None,
            };
            let dm = DeleteMarker::new(vid.map_or([0; 16], |v| *v.as_bytes()), now_nanos());
            let mut set = JoinSet::new();
            for (d, drive) in self.drives.iter().enumerate() {
                let (drive, bucket, dir) = (drive.clone(), bucket.to_owned(), dir.clone());
                let dm = dm.clone();
                let cache = self.cache.clone();
                set.spawn(async move {
                    let r: Result<()> = async move {
                        let path = format!("{dir}/{XL_META}");
                        let mut meta = match drive.read_all(&bucket, &path, MAX_XL_META).await {
                            Ok(b) => XlMeta::decode(&b)?.into_owned(),
                            Err(DriveError::FileNotFound) => XlMeta::new(),
                            Err(e) => return Err(Error::Drive(e)),
                        };
                        let vid = dm.version_id;
                        let replaced = meta.add_version(Version::delete_marker(dm, WRITTEN_BY))?;
                        meta.remove_inline_data(&vid);
                        drive.write_all(&bucket, &path, meta.encode()?).await?;
                        // The null version a suspended bucket's marker replaced.
                        if let Some(o) = replaced.as_ref().and_then(Version::as_object)
                            && !o.inline_data()
                            && meta.shared_data_dir_count(&vid, &o.data_dir) == 0
                        {
                            let (c, dd) = (cache.as_ref(), &o.data_dir);
                            let _ = remove_data_dir(&*drive, c, &bucket, &dir, dd).await;
                        }
                        Ok(())
                    }
                    .await;
                    (d, r)
                });
            }
            let written = join_drives(&mut set).await;
            check_write_quorum(written.len(), metadata_quorum(n))?;
            if written.len() < n {
                self.journal_missed(bucket, &dir, dm.version_id, &written)
                    .await;
            }
            return Ok(DeleteResult {
                version_id: vid,
                delete_marker: true,
            });
        }
        let sel = version.unwrap_or(VersionSel::Null);
        let metas = self.read_metas(bucket, &dir).await;
        let resolved = match self.resolve(bucket, key, metas, Some(sel)) {
            Ok(r) => r,
            // S3 answers 204 for a key or version that is not there.
            Err(e) if e.is_not_found() => {
                return Ok(DeleteResult {
                    version_id: match sel {
                        VersionSel::Null => None,
                        VersionSel::Id(u) => Some(u),
                    },
                    delete_marker: false,
                });
            }
            Err(e) => return Err(e),
        };
        let vid = sel.bytes();
        let is_dm = matches!(resolved.version.kind, VersionKind::DeleteMarker(_));
        let holders = holders_of(&resolved.metas, &vid);
        let removed = self
            .remove_copies(bucket, &dir, &vid, &resolved.metas, &holders)
            .await;
        check_version_removed(removed.len(), n, resolved.agree.iter().flatten().count())?;
        if removed.len() < n {
            // A drive that failed, or still holds the version, may keep a
            // copy: the journal's healer removes copies no quorum agrees
            // on once every drive answers.
            let answered: Vec<usize> = (0..n)
                .filter(|&d| resolved.metas[d].is_some())
                .filter(|d| !holders.contains(d) || removed.contains(d))
                .collect();
            self.journal_missed(bucket, &dir, vid, &answered).await;
        }
        Ok(DeleteResult {
            version_id: match sel {
                VersionSel::Null => None,
                VersionSel::Id(u) => Some(u),
            },
            delete_marker: is_dm,
        })
    }

    /// Removes version `vid` (and its data, where no other version shares
    /// it) from the `holders` drives, whose `xl.meta` are in `metas`;
    /// returns the drives it was removed from.
    pub(super) async fn remove_copies(
        &self,
        bucket: &str,
        dir: &str,
        vid: &[u8; 16],
        metas: &[Option<XlMeta<'static>>],
        holders: &[usize],
    ) -> Vec<usize> {
        let mut set = JoinSet::new();
        for &d in holders {
            let Some(meta) = metas[d].clone() else {
                continue;
            };
            let (drive, bucket, dir) = (self.drives[d].clone(), bucket.to_owned(), dir.to_owned());
            let (cache, vid) = (self.cache.clone(), *vid);
            set.spawn(async move {
                let r: Result<()> = async move {
                    let mut meta = meta;
                    if meta.find(&vid).is_none() {
                        return Ok(());
                    }
                    let removed = meta.remove_version(&vid)?;
                    let data_dir = removed
                        .as_object()
                        .filter(|o| !o.inline_data())
                        .map(|o| o.data_dir);
                    meta.remove_inline_data(&vid);
                    let path = format!("{dir}/{XL_META}");
                    if meta.is_empty() {
                        drive.delete(&bucket, &path, false).await?;
                    } else {
                        drive.write_all(&bucket, &path, meta.encode()?).await?;
                    }
                    if let Some(dd) = data_dir
                        && meta.shared_data_dir_count(&vid, &dd) == 0
                    {
                        remove_data_dir(&*drive, cache.as_ref(), &bucket, &dir, &dd).await?;
                    }
                    Ok(())
                }
                .await;
                (d, r)
            });
        }
        join_drives(&mut set).await
    }
}
