//! Objects: PUT, GET (whole, ranged, or through an opened version read
//! in chunks or from the read cache), HEAD, DELETE, metadata edits, copy
//! and listing, each under the object's lock, on the pool and set that
//! hold the key.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::*;

/// One version of an object opened for reading ([`ObjectLayer::open_object`]):
/// its metadata, and the object's read lock, held until this is dropped.
pub struct OpenObject {
    info: ObjectInfo,
    resolved: set::Resolved,
    pool: usize,
    _guard: lock::LockGuard,
}

impl OpenObject {
    /// The version opened.
    pub fn info(&self) -> &ObjectInfo {
        &self.info
    }
}

impl std::fmt::Debug for OpenObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenObject")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ObjectLayer {
    /// Stores an object read from `body`, held to the bucket's object
    /// lock rules ([`worm`]) and quota ([`quota`]).
    pub async fn put_object<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        body: &mut R,
        opts: &PutOptions,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        // The bucket's existence is checked once, by the write itself.
        let reservation = self.reserve_quota(bucket, opts.size.unwrap_or(0)).await?;
        let info = self.put_object_reserved(bucket, key, body, opts).await?;
        if let Some(r) = reservation {
            r.keep(info.size);
        }
        Ok(info)
    }

    async fn put_object_reserved<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        body: &mut R,
        opts: &PutOptions,
    ) -> Result<ObjectInfo> {
        self.check_bucket_exists(bucket).await?;
        let versioned = self.bucket_versioning(bucket).await?;
        let with_lock;
        let opts = match self.lock_metadata(bucket, &opts.metadata).await? {
            Some(metadata) => {
                with_lock = PutOptions {
                    metadata,
                    ..opts.clone()
                };
                &with_lock
            }
            None => opts,
        };
        let parity = self.parity_for(opts)?;
        let with_parity;
        let opts = if opts.parity.is_none() && parity != self.storage_class.standard_parity() {
            with_parity = PutOptions {
                parity: Some(parity),
                ..opts.clone()
            };
            &with_parity
        } else {
            opts
        };
        let resource = format!("{bucket}/{key}");
        if self.pools.len() == 1 {
            // The object's lock is taken for the commit only (see
            // `ErasureSet::put`): a slow upload blocks no reader.
            return self
                .set_in(0, key)
                .put(
                    bucket,
                    key,
                    body,
                    opts,
                    versioned,
                    Some((self.locker.as_ref(), &resource)),
                )
                .await;
        }
        // Several pools: choosing the pool and committing must not
        // interleave with another writer of the key, so the lock covers
        // the whole PUT (as MinIO's pools do).
        let _g = self.locker.write(&resource, LOCK_TIMEOUT).await?;
        let pool = self.pool_for_write(bucket, key).await?;
        self.set_in(pool, key)
            .put(bucket, key, body, opts, versioned, None)
            .await
    }

    /// Reads an object (or a range of it) into `out`.
    pub async fn get_object<W: AsyncWrite + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        opts: &GetOptions,
        out: &mut W,
    ) -> Result<ObjectInfo> {
        self.get_object_report(bucket, key, opts, out)
            .await
            .map(|(i, _)| i)
    }

    /// [`get_object`](Self::get_object), also telling which drives served
    /// bad or no shards (the object should be healed).
    pub async fn get_object_report<W: AsyncWrite + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        opts: &GetOptions,
        out: &mut W,
    ) -> Result<(ObjectInfo, ReadReport)> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let res = {
            let _g = self
                .locker
                .read(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
                .await?;
            let pool = self.pool_for_read(bucket, key, opts.version_id).await?;
            self.set_in(pool, key).get(bucket, key, opts, out).await?
        };
        if !res.1.bad_drives.is_empty() {
            // Best effort: a full queue is caught up by the next full pass.
            let _ = self.heal_tx.try_send(HealRequest {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                version: Some(res.0.version_id.map_or(VersionSel::Null, VersionSel::Id)),
                bad_drives: res.1.bad_drives.clone(),
            });
        }
        Ok(res)
    }

    /// Opens one version of an object for reading: its metadata is read
    /// once, under the object's read lock, which the returned handle holds
    /// until it is dropped; every read through the handle serves that same
    /// version, whatever writers commit meanwhile (they wait for the lock).
    pub async fn open_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<OpenObject> {
        names::check_key(key)?;
        names::check_bucket(bucket)?;
        let guard = self
            .locker
            .read(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        // The bucket's existence is asked of the drives only when the
        // object is not found (or not readable): an object agreed by a read
        // quorum is in an existing bucket.
        let opened = match self.pool_for_read(bucket, key, version).await {
            Ok(pool) => self
                .set_in(pool, key)
                .open(bucket, key, version)
                .await
                .map(|(info, resolved)| (pool, info, resolved)),
            Err(e) => Err(e),
        };
        let (pool, info, resolved) = match opened {
            Ok(x) => x,
            Err(e) if e.is_not_found() || matches!(e, Error::ReadQuorum { .. }) => {
                self.check_bucket_exists(bucket).await?;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        Ok(OpenObject {
            info,
            resolved,
            pool,
            _guard: guard,
        })
    }

    /// Reads `offset..offset + length` of an opened version into `out`;
    /// damaged drives it met are queued for healing.
    pub async fn read_object<W: AsyncWrite + Unpin + Send>(
        &self,
        object: &OpenObject,
        offset: u64,
        length: u64,
        out: &mut W,
    ) -> Result<()> {
        let info = &object.info;
        if offset.checked_add(length).is_none_or(|end| end > info.size) {
            return Err(Error::InvalidRange {
                offset,
                length,
                size: info.size,
            });
        }
        let report = self
            .set_in(object.pool, &info.key)
            .read_resolved(
                &info.bucket,
                &info.key,
                &object.resolved,
                offset,
                length,
                out,
            )
            .await?;
        self.queue_heal(info, report.bad_drives);
        Ok(())
    }

    /// Bytes `offset..offset + length` of an opened object as slices of
    /// the read cache's blocks, without a copy and without a task, if every
    /// block they touch is cached; `None` otherwise (nothing is counted
    /// then: read with [`read_object_chunks`](Self::read_object_chunks)).
    /// Drives whose metadata did not agree are queued for healing, as a
    /// read would.
    pub fn cached_object_range(
        &self,
        object: &OpenObject,
        offset: u64,
        length: u64,
    ) -> Option<Vec<Bytes>> {
        let info = &object.info;
        if offset.checked_add(length).is_none_or(|end| end > info.size) {
            return None;
        }
        let blocks =
            self.set_in(object.pool, &info.key)
                .cached_range(&object.resolved, offset, length)?;
        let bad_drives: Vec<usize> = (object.resolved.agree.iter().enumerate())
            .filter_map(|(d, a)| a.is_none().then_some(d))
            .collect();
        self.queue_heal(info, bad_drives);
        Some(blocks)
    }

    /// Reads `offset..offset + length` of an opened version into `sink`,
    /// as slices of the buffers the verified shards were read into (no
    /// copy of the object's bytes on the way); damaged drives it met are
    /// queued for healing.
    pub async fn read_object_chunks<S: ChunkSink>(
        &self,
        object: &OpenObject,
        offset: u64,
        length: u64,
        sink: &mut S,
    ) -> Result<()> {
        let info = &object.info;
        if offset.checked_add(length).is_none_or(|end| end > info.size) {
            return Err(Error::InvalidRange {
                offset,
                length,
                size: info.size,
            });
        }
        let report = self
            .set_in(object.pool, &info.key)
            .read_resolved_chunks(
                &info.bucket,
                &info.key,
                &object.resolved,
                offset,
                length,
                sink,
            )
            .await;
        let bad_drives = match &report {
            Ok(r) => r.bad_drives.clone(),
            Err(_) => Vec::new(),
        };
        self.queue_heal(info, bad_drives);
        report.map(|_| ())
    }

    /// HEAD of an object.
    pub async fn head_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _g = self
            .locker
            .read(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.pool_for_read(bucket, key, version).await?;
        self.set_in(pool, key).head(bucket, key, version).await
    }

    /// Deletes an object (or one version of it). A version protected by
    /// object lock stays ([`Error::ObjectLocked`]); see
    /// [`delete_object_with`](Self::delete_object_with) to bypass
    /// governance retention.
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<DeleteResult> {
        self.delete_object_with(bucket, key, version, false).await
    }

    /// [`delete_object`](Self::delete_object), where `bypass_governance`
    /// is a request to bypass governance retention by an identity the
    /// caller found allowed to.
    pub async fn delete_object_with(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        bypass_governance: bool,
    ) -> Result<DeleteResult> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioning = self.bucket_versioning_state(bucket).await?;
        let locking = self.bucket_object_lock(bucket).await?.is_some();
        let counting = self.bucket_quota(bucket).await?.is_some();
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = if version.is_none() && versioning != Versioning::Unversioned {
            // A delete marker is a new version.
            self.pool_for_write(bucket, key).await?
        } else {
            self.pool_for_read(bucket, key, version).await?
        };
        let set = self.set_in(pool, key);
        // Adding a delete marker removes nothing; any other delete removes
        // a version, which its lock may forbid, and frees its bytes of the
        // bucket's quota.
        let mut freed = 0;
        if (locking || counting) && (version.is_some() || versioning != Versioning::Enabled) {
            let target = version.or(Some(VersionSel::Null));
            match set.head(bucket, key, target).await {
                Ok(info) if !info.delete_marker => {
                    if locking {
                        worm::VersionLock::of(&info.metadata)
                            .check_delete(std::time::SystemTime::now(), bypass_governance)?;
                    }
                    freed = info.size;
                }
                Ok(_) => {}
                Err(e) if e.is_not_found() || matches!(e, Error::MethodNotAllowed) => {}
                Err(e) => return Err(e),
            }
        }
        let done = set.delete(bucket, key, version, versioning).await?;
        if counting && freed > 0 {
            self.quota_freed(bucket, freed);
        }
        Ok(done)
    }

    /// Edits the user metadata of an object version in place, without
    /// touching its data (object tagging). Returns the updated version.
    pub async fn update_object_metadata(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        edit: &(dyn Fn(&mut crate::xlmeta::UserMeta<'static>) + Send + Sync),
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.pool_for_read(bucket, key, version).await?;
        self.set_in(pool, key)
            .update_user_metadata(bucket, key, version, edit)
            .await
    }

    /// Server-side copy: the source's bytes (and, unless `opts` gives a
    /// content type or metadata, its metadata) under a new key.
    pub async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        src_version: Option<VersionSel>,
        dst_bucket: &str,
        dst_key: &str,
        replace: Option<&PutOptions>,
    ) -> Result<ObjectInfo> {
        let src = self.head_object(src_bucket, src_key, src_version).await?;
        let opts = match replace {
            Some(o) => PutOptions {
                size: Some(src.size),
                ..o.clone()
            },
            None => PutOptions {
                size: Some(src.size),
                content_type: Some(src.content_type.clone()),
                // A copy is a new version: its lock is its own (the
                // bucket's default), never the source's.
                metadata: src
                    .metadata
                    .iter()
                    .filter(|(k, _)| !worm::is_lock_key(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                parity: None,
                trailing_metadata: None,
                internal: Vec::new(),
                actual_size: None,
                actual_size_of: None,
                caller_etag: false,
                precondition: None,
            },
        };
        // Stream through a bounded pipe: the reader fills it while the
        // writer drains it, so memory stays bounded for any object size.
        // The reader holds the source's read lock only while it reads, and
        // the writer takes the destination's write lock only to commit,
        // after the reader is done: copying an object onto itself, or two
        // copies in opposite directions, cannot deadlock.
        let (mut rd, mut wr) = tokio::io::duplex(4 << 20);
        let get_opts = GetOptions {
            // The version HEAD saw, so a newer version cannot slip in.
            version_id: src_version.or(src.version_id.map(VersionSel::Id)),
            range: None,
        };
        let reader = async {
            let r = self
                .get_object(src_bucket, src_key, &get_opts, &mut wr)
                .await;
            drop(wr);
            r
        };
        let writer = self.put_object(dst_bucket, dst_key, &mut rd, &opts);
        let (r, w) = tokio::join!(reader, writer);
        r?;
        w
    }

    /// Lists objects (V1 and V2 semantics; see [`ListOptions`]).
    pub async fn list_objects(&self, bucket: &str, opts: &ListOptions) -> Result<ListResult> {
        self.check_bucket_exists(bucket).await?;
        list::list_objects(&self.sets, bucket, opts).await
    }

    /// Lists object versions.
    pub async fn list_object_versions(
        &self,
        bucket: &str,
        opts: &ListOptions,
        version_marker: Option<&str>,
    ) -> Result<ListVersionsResult> {
        self.check_bucket_exists(bucket).await?;
        list::list_versions(&self.sets, bucket, opts, version_marker).await
    }
}
