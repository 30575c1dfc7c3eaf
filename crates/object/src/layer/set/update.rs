//! Edits of one version's user metadata in place (object tagging):
//! `xl.meta` rewritten on the drives that agree on the version, its data
//! untouched.

use tokio::task::JoinSet;

use super::commit::join_count;
use super::get::delete_marker_error;
use super::quorum::{check_write_quorum, metadata_quorum};
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
            let (drive, bucket, path) =
                (drive.clone(), bucket.to_owned(), format!("{dir}/{XL_META}"));
            set.spawn(async move {
                drive.write_all(&bucket, &path, bytes).await?;
                Ok(())
            });
        }
        let ok = join_count(&mut set).await;
        check_write_quorum(ok, metadata_quorum(self.drives.len()))?;
        Ok(object_info(bucket, key, &updated, resolved.is_latest))
    }
}
