//! Configuration documents under `.minio.sys/config/` (IAM users,
//! policies, groups), stored as MinIO stores them: each one an object of
//! the `.minio.sys` volume with half-set parity, read and written under
//! the document's lock like any object.

use drive::format::META_VOLUME;

use super::*;

/// The largest configuration document read (MinIO's IAM documents are a
/// few KiB; a policy is at most a few tens).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Documents listed at most under one prefix (users, policies or groups
/// of a deployment).
pub const MAX_CONFIG_ENTRIES: usize = 100_000;

impl ObjectLayer {
    fn check_config_path(path: &str) -> Result<()> {
        let ok = path.starts_with("config/")
            && !path.ends_with('/')
            && path
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        if ok {
            Ok(())
        } else {
            Err(Error::Internal(format!("not a configuration path: {path}")))
        }
    }

    /// The document at `path` (under `.minio.sys`, e.g.
    /// `config/iam/users/alice/identity.json`), `None` when there is none.
    pub async fn read_config(&self, path: &str) -> Result<Option<Vec<u8>>> {
        Self::check_config_path(path)?;
        let _g = self.locker.read(&lock_key(path), LOCK_TIMEOUT).await?;
        let pool = match self.pool_for_read(META_VOLUME, path, None).await {
            Ok(p) => p,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let set = self.set_in(pool, path);
        let info = match set.head(META_VOLUME, path, None).await {
            Ok(i) => i,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        if info.size > MAX_CONFIG_BYTES {
            return Err(Error::Internal(format!(
                ".minio.sys/{path}: {} bytes, more than a configuration document may have",
                info.size
            )));
        }
        let mut out = Vec::with_capacity(info.size as usize);
        match set
            .get(META_VOLUME, path, &GetOptions::default(), &mut out)
            .await
        {
            Ok(_) => Ok(Some(out)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes (replaces) the document at `path`.
    pub async fn write_config(&self, path: &str, bytes: &[u8]) -> Result<()> {
        Self::check_config_path(path)?;
        let _g = self.locker.write(&lock_key(path), LOCK_TIMEOUT).await?;
        let pool = self.pool_for_write(META_VOLUME, path).await?;
        let set = self.set_in(pool, path);
        // MinIO saves configuration with `MaxParity`: half the set.
        let opts = PutOptions {
            size: Some(bytes.len() as u64),
            parity: Some(set.drives().len() / 2),
            ..PutOptions::default()
        };
        set.put(META_VOLUME, path, &mut &bytes[..], &opts, false, None)
            .await?;
        Ok(())
    }

    /// Removes the document at `path`; removing one that is not there
    /// succeeds.
    pub async fn delete_config(&self, path: &str) -> Result<()> {
        Self::check_config_path(path)?;
        let _g = self.locker.write(&lock_key(path), LOCK_TIMEOUT).await?;
        let pool = match self.pool_for_read(META_VOLUME, path, None).await {
            Ok(p) => p,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        match self
            .set_in(pool, path)
            .delete(META_VOLUME, path, None, Versioning::Unversioned)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The names of the documents under `prefix` (which ends with `/`),
    /// relative to it, in order; at most [`MAX_CONFIG_ENTRIES`].
    pub async fn list_config(&self, prefix: &str) -> Result<Vec<String>> {
        if !prefix.starts_with("config/") || !prefix.ends_with('/') {
            return Err(Error::Internal(format!(
                "not a configuration prefix: {prefix}"
            )));
        }
        let mut out = Vec::new();
        let mut marker = None;
        loop {
            let opts = ListOptions {
                prefix: prefix.to_owned(),
                delimiter: None,
                marker: marker.take(),
                max_keys: 1000,
            };
            let page = list::list_objects(&self.sets, META_VOLUME, &opts).await?;
            for o in page.objects {
                if let Some(rest) = o.key.strip_prefix(prefix) {
                    out.push(rest.to_owned());
                }
            }
            if !page.is_truncated || out.len() >= MAX_CONFIG_ENTRIES {
                break;
            }
            marker = page.next_marker;
            if marker.is_none() {
                break;
            }
        }
        out.truncate(MAX_CONFIG_ENTRIES);
        Ok(out)
    }
}

/// The lock name of a configuration document: its path under the volume,
/// apart from every bucket's names.
fn lock_key(path: &str) -> String {
    format!("{META_VOLUME}/{path}")
}
