//! Which pool and erasure set an object goes to: the set of a key within
//! a pool (`placement`, with the format's distribution algorithm), the
//! pool holding a key (with several pools, the one whose copy is newest),
//! the pool a new key goes to (the one with the most free space), and the
//! parity a new object gets from its storage class.

use super::*;

impl ObjectLayer {
    /// The set of pool `pool` that holds `key`.
    pub(super) fn set_in(&self, pool: usize, key: &str) -> &ErasureSet {
        let p = &self.pools[pool.min(self.pools.len() - 1)];
        let count = p.sets.len();
        let i = placement::set_index_for(
            placement::set_key(key).as_bytes(),
            &self.deployment_id,
            count,
            p.algo,
        )
        .unwrap_or(0);
        &self.sets[p.sets.start + i.min(count - 1)]
    }

    /// The pool holding `key` (the version `version`, or its latest
    /// version, delete markers included), if any: with several pools the
    /// one whose copy is newest, as MinIO picks it.
    pub(super) async fn pool_holding(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<Option<usize>> {
        if self.pools.len() == 1 {
            return Ok(Some(0));
        }
        let dir = names::object_dir(key);
        let mut best: Option<(i64, usize)> = None;
        let mut failure = None;
        for p in 0..self.pools.len() {
            let set = self.set_in(p, key);
            let metas = set.read_metas(bucket, &dir).await;
            match set.resolve(bucket, key, metas, version) {
                Ok(r) => {
                    let t = r.version.mod_time();
                    if best.is_none_or(|(bt, _)| t > bt) {
                        best = Some((t, p));
                    }
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => failure = Some(e),
            }
        }
        match (best, failure) {
            (Some((_, p)), _) => Ok(Some(p)),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    }

    /// The pool an operation on an existing object goes to (pool 0 when
    /// no pool has it: the operation then reports it missing).
    pub(super) async fn pool_for_read(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<usize> {
        Ok(self.pool_holding(bucket, key, version).await?.unwrap_or(0))
    }

    /// The pool a new version of `key` goes to: the pool already holding
    /// the key, else the pool with the most free space.
    pub(super) async fn pool_for_write(&self, bucket: &str, key: &str) -> Result<usize> {
        if let Some(p) = self.pool_holding(bucket, key, None).await? {
            return Ok(p);
        }
        let mut best = (0u64, 0usize);
        for p in 0..self.pools.len() {
            let mut free = 0u64;
            for set in self.pool_sets(p) {
                for d in set.drives() {
                    if let Ok(info) = d.disk_info().await {
                        free = free.saturating_add(info.free);
                    }
                }
            }
            if free > best.0 {
                best = (free, p);
            }
        }
        Ok(best.1)
    }

    /// The parity of a new object: `opts.parity` when given, else its
    /// storage class's (`x-amz-storage-class` among the metadata).
    pub(super) fn parity_for(&self, opts: &PutOptions) -> Result<usize> {
        if let Some(p) = opts.parity {
            return Ok(p);
        }
        match opts
            .metadata
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(AMZ_STORAGE_CLASS))
        {
            None => Ok(self.storage_class.standard_parity()),
            Some((_, v)) => match placement::StorageClassName::parse(v) {
                Some(_) => Ok(self.storage_class.parity_for(v)),
                None => Err(Error::InvalidStorageClass(v.clone())),
            },
        }
    }
}
