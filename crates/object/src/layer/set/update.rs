//! Edits of one version's user metadata in place (object tagging):
//! `xl.meta` rewritten on the drives that agree on the version, its data
//! untouched, or put back where the edit missed its quorum.

use tokio::task::JoinSet;

use super::commit::join_drives;
use super::get::delete_marker_error;
use super::quorum::{check_write_quorum, write_quorum_of};
use super::*;
use crate::layer::names::object_dir;
use crate::xlmeta::{Version, VersionKind};

impl ErasureSet {
    /// Edits the user metadata of one version in place (object tagging):
    /// the version a read quorum agrees on is rewritten, `xl.meta` only,
    /// on every drive that holds it. The caller holds the object's write
    /// lock.
    pub async fn update_user_metadata(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        edit: &(dyn Fn(&mut crate::xlmeta::UserMeta<'static>) + Send + Sync),
    ) -> Result<ObjectInfo> {
        let dir = object_dir(key);
        let metas = self.read_metas(bucket, &dir).await;
        let resolved = self.resolve(bucket, key, metas, version)?;
        if matches!(resolved.version.kind, VersionKind::DeleteMarker(_)) {
            return Err(delete_marker_error(bucket, key, version));
        }
        let vid = resolved.version.version_id();
        let apply = |v: &mut Version<'static>| {
            if let VersionKind::Object(o) = &mut v.kind {
                edit(o.meta_user.get_or_insert_with(crate::text::MetaMap::new));
            }
        };
        let mut updated = resolved.version.clone();
        apply(&mut updated);
        // The edited version is a new group of copies (its signature
        // changes), so it needs the write quorum the version's own write
        // needed: fewer would leave neither the old nor the new copies
        // readable.
        let quorum = write_quorum_of(resolved.version.as_object(), self.drives.len());
        let path = format!("{dir}/{XL_META}");
        let mut set = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            if resolved.agree[d].is_none() {
                continue;
            }
            let Some(mut meta) = resolved.metas[d].clone() else {
                continue;
            };
            meta.update_version(&vid, apply)?;
            let bytes = meta.encode()?;
            let (drive, bucket, path) = (drive.clone(), bucket.to_owned(), path.clone());
            set.spawn(async move {
                let r = drive.write_all(&bucket, &path, bytes).await;
                (d, r.map_err(Error::from))
            });
        }
        let done = join_drives(&mut set).await;
        if let Err(e) = check_write_quorum(done.len(), quorum) {
            // Put the drives that took the edit back as they were, so the
            // version keeps the copies it had.
            let mut undo = JoinSet::new();
            for d in done {
                let Some(bytes) = resolved.metas[d].as_ref().and_then(|m| m.encode().ok()) else {
                    continue;
                };
                let (drive, bucket, path) =
                    (self.drives[d].clone(), bucket.to_owned(), path.clone());
                undo.spawn(async move { drive.write_all(&bucket, &path, bytes).await });
            }
            while undo.join_next().await.is_some() {}
            return Err(e);
        }
        if done.len() < self.drives.len() {
            // Drives that missed the edit, or the version, get it from the
            // journal's healer.
            self.journal_missed(bucket, &dir, vid, &done).await;
        }
        Ok(object_info(bucket, key, &updated, resolved.is_latest))
    }
}
