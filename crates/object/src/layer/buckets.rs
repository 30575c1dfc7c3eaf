//! Buckets: a volume on every drive, and a `.metadata.bin` (versioning and
//! the configuration documents) stored as an inline object of
//! `.minio.sys`, with half-set parity, as MinIO does.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use drive::format::{BUCKETS_VOLUME, META_VOLUME};
use drive::{Drive, DriveError};

use super::*;
use crate::bucketmeta::BucketMetadata;
use crate::msgp::MsgTime;

impl ObjectLayer {
    pub(super) fn drive_count(&self) -> usize {
        self.sets.iter().map(|s| s.drives().len()).sum()
    }

    pub(super) fn bucket_quorum(&self) -> usize {
        self.drive_count() / 2 + 1
    }

    /// Creates a bucket (on every drive) and its `.metadata.bin`.
    pub async fn make_bucket(&self, bucket: &str) -> Result<()> {
        self.make_bucket_with(bucket, false).await
    }

    /// Creates a bucket; with `object_lock`, lock-enabled (and versioned)
    /// for good, as MinIO records it.
    pub async fn make_bucket_with(&self, bucket: &str, object_lock: bool) -> Result<()> {
        names::check_bucket(bucket)?;
        let _g = self.locker.write(bucket, LOCK_TIMEOUT).await?;
        // Every pool needs the bucket on a majority of its drives.
        let mut created: Vec<&Arc<dyn Drive>> = Vec::new();
        let (mut exists, mut short) = (0, None);
        for p in 0..self.pools.len() {
            let (mut ok, mut ex, mut n) = (0, 0, 0);
            for d in self.pool_sets(p).iter().flat_map(|s| s.drives()) {
                n += 1;
                match d.make_volume(bucket).await {
                    Ok(()) => {
                        ok += 1;
                        created.push(d);
                    }
                    Err(DriveError::VolumeExists) => ex += 1,
                    Err(e) => tracing::warn!(drive = %d.label(), "make bucket: {e}"),
                }
            }
            if ok + ex < n / 2 + 1 {
                short = Some((ok + ex, n / 2 + 1));
            }
            exists += ex;
        }
        if exists >= self.bucket_quorum() {
            return Err(Error::BucketExists(bucket.into()));
        }
        if let Some((ok, needed)) = short {
            for d in created {
                let _ = d.delete_volume(bucket, false).await;
            }
            return Err(Error::WriteQuorum { ok, needed });
        }
        let now = set::now_nanos();
        let mut meta = BucketMetadata::new(bucket.to_owned(), MsgTime::from_unix_nanos(now));
        if object_lock {
            meta.object_lock_config_xml = worm::ObjectLockConfig::default()
                .to_xml()
                .into_bytes()
                .into();
            meta.versioning_config_xml = ENABLED_VERSIONING.as_bytes().into();
        }
        self.save_bucket_meta(bucket, &meta).await?;
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                bucket.to_owned(),
                if object_lock {
                    Versioning::Enabled
                } else {
                    Versioning::Unversioned
                },
            );
        self.announce(bucket, BucketChange::Created).await;
        Ok(())
    }

    /// Tells the bucket hook, if there is one, and waits for it.
    pub(super) async fn announce(&self, bucket: &str, change: BucketChange) {
        if let Some(hook) = &self.bucket_hook {
            (hook.0)(bucket.to_owned(), change).await;
        }
    }

    fn bucket_meta_key(bucket: &str) -> String {
        format!("buckets/{bucket}/.metadata.bin")
    }

    async fn save_bucket_meta(&self, bucket: &str, meta: &BucketMetadata<'_>) -> Result<()> {
        let bytes = meta.encode().map_err(|e| Error::Internal(e.to_string()))?;
        let key = Self::bucket_meta_key(bucket);
        let opts = PutOptions {
            size: Some(bytes.len() as u64),
            ..PutOptions::default()
        };
        let pool = self.pool_for_write(META_VOLUME, &key).await?;
        let set = self.set_in(pool, &key);
        // MinIO saves configuration with `MaxParity`: half the set.
        let opts = PutOptions {
            parity: Some(set.drives().len() / 2),
            ..opts
        };
        set.put(META_VOLUME, &key, &mut &bytes[..], &opts, false, None)
            .await?;
        Ok(())
    }

    async fn load_bucket_meta(&self, bucket: &str) -> Result<BucketMetadata<'static>> {
        let key = Self::bucket_meta_key(bucket);
        let mut out = Vec::new();
        let pool = self.pool_for_read(META_VOLUME, &key, None).await?;
        self.set_in(pool, &key)
            .get(META_VOLUME, &key, &GetOptions::default(), &mut out)
            .await?;
        let meta = BucketMetadata::decode(&out)
            .map_err(|e| Error::Internal(format!("{bucket}/.metadata.bin: {e}")))?;
        Ok(meta.into_owned())
    }

    /// Whether the bucket exists (on a quorum of drives).
    async fn bucket_exists(&self, bucket: &str) -> Result<bool> {
        let (mut yes, mut no) = (0, 0);
        // At once: in a cluster most drives answer over the network.
        let stats = self
            .drives()
            .map(|d| {
                Box::pin(d.stat_volume(bucket))
                    as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>>
            })
            .collect();
        for r in super::join::join_all(stats).await.into_iter().flatten() {
            match r {
                Ok(_) => yes += 1,
                Err(DriveError::VolumeNotFound) => no += 1,
                Err(_) => {}
            }
        }
        let q = self.drive_count().div_ceil(2);
        if yes >= q {
            Ok(true)
        } else if no >= q {
            Ok(false)
        } else {
            Err(Error::ReadQuorum { ok: yes, needed: q })
        }
    }

    pub(super) async fn check_bucket_exists(&self, bucket: &str) -> Result<()> {
        names::check_bucket(bucket)?;
        // A layer whose bucket changes are announced (a node of a cluster,
        // where most drives answer over the network) keeps the buckets it
        // found: a deletion anywhere reaches forget_bucket before it
        // returns.
        let cached = self.bucket_hook.is_some();
        if cached && self.known_buckets().contains(bucket) {
            return Ok(());
        }
        let gen_before = self.bucket_gen.load(Ordering::SeqCst);
        if self.bucket_exists(bucket).await? {
            if cached {
                let mut known = self.known_buckets();
                if self.bucket_gen.load(Ordering::SeqCst) == gen_before {
                    known.insert(bucket.to_owned());
                }
            }
            Ok(())
        } else {
            Err(Error::NoSuchBucket(bucket.into()))
        }
    }

    fn known_buckets(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.known_buckets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether versioning is enabled on `bucket`.
    pub async fn bucket_versioning(&self, bucket: &str) -> Result<bool> {
        Ok(self.bucket_versioning_state(bucket).await?.is_enabled())
    }

    /// The versioning state of `bucket` (enabled, suspended, or never
    /// enabled).
    pub async fn bucket_versioning_state(&self, bucket: &str) -> Result<Versioning> {
        if let Some(v) = self
            .versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(bucket)
        {
            return Ok(*v);
        }
        let gen_before = self.bucket_gen.load(Ordering::SeqCst);
        let v = match self.load_bucket_meta(bucket).await {
            Ok(m) => Versioning::from_config_xml(&m.versioning_config_xml),
            Err(e) if e.is_not_found() => Versioning::Unversioned,
            Err(e) => return Err(e),
        };
        let mut cache = self.versioning.lock().unwrap_or_else(|p| p.into_inner());
        if self.bucket_gen.load(Ordering::SeqCst) == gen_before {
            cache.insert(bucket.to_owned(), v);
        }
        Ok(v)
    }

    /// Enables (or suspends) versioning on `bucket`.
    pub async fn set_bucket_versioning(&self, bucket: &str, enabled: bool) -> Result<()> {
        self.check_bucket_exists(bucket).await?;
        let _g = self.locker.write(bucket, LOCK_TIMEOUT).await?;
        let mut meta = match self.load_bucket_meta(bucket).await {
            Ok(m) => m,
            Err(e) if e.is_not_found() => BucketMetadata::new(bucket.to_owned(), MsgTime::GO_ZERO),
            Err(e) => return Err(e),
        };
        if !enabled && self.bucket_object_lock(bucket).await?.is_some() {
            return Err(Error::InvalidBucketState(
                "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.",
            ));
        }
        let status = if enabled { "Enabled" } else { "Suspended" };
        meta.versioning_config_xml = format!(
            "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>{status}</Status></VersioningConfiguration>"
        )
        .into_bytes()
        .into();
        let now = set::now_nanos();
        meta.versioning_config_updated_at = MsgTime::from_unix_nanos(now);
        self.save_bucket_meta(bucket, &meta).await?;
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                bucket.to_owned(),
                if enabled {
                    Versioning::Enabled
                } else {
                    Versioning::Suspended
                },
            );
        self.announce(bucket, BucketChange::Versioning).await;
        Ok(())
    }

    /// A configuration document of `bucket` (as stored in its metadata,
    /// MinIO's format), `None` when not set. Cached after the first read.
    pub async fn bucket_config(&self, bucket: &str, kind: BucketConfig) -> Result<Option<Vec<u8>>> {
        let ck = (bucket.to_owned(), kind);
        if let Some(v) = self
            .configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&ck)
        {
            return Ok(v.clone());
        }
        self.check_bucket_exists(bucket).await?;
        let gen_before = self.bucket_gen.load(Ordering::SeqCst);
        let doc = match self.load_bucket_meta(bucket).await {
            Ok(m) => {
                let d = match kind {
                    BucketConfig::Encryption => &m.encryption_config_xml,
                    BucketConfig::Tagging => &m.tagging_config_xml,
                    BucketConfig::Policy => &m.policy_config_json,
                    BucketConfig::ObjectLock => &m.object_lock_config_xml,
                    BucketConfig::Lifecycle => &m.lifecycle_config_xml,
                    BucketConfig::Quota => &m.quota_config_json,
                    BucketConfig::Cors => &std::borrow::Cow::Owned(cors_field(&m)),
                };
                (!d.is_empty()).then(|| d.to_vec())
            }
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let mut cache = self.configs.lock().unwrap_or_else(|p| p.into_inner());
        if self.bucket_gen.load(Ordering::SeqCst) == gen_before {
            cache.insert(ck, doc.clone());
        }
        Ok(doc)
    }

    /// Sets (or, with `None`, removes) a configuration document of
    /// `bucket`.
    pub async fn set_bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfig,
        doc: Option<Vec<u8>>,
    ) -> Result<()> {
        self.check_bucket_exists(bucket).await?;
        let _g = self.locker.write(bucket, LOCK_TIMEOUT).await?;
        let mut meta = match self.load_bucket_meta(bucket).await {
            Ok(m) => m,
            Err(e) if e.is_not_found() => BucketMetadata::new(bucket.to_owned(), MsgTime::GO_ZERO),
            Err(e) => return Err(e),
        };
        let now = MsgTime::from_unix_nanos(set::now_nanos());
        let bytes: std::borrow::Cow<'static, [u8]> = doc.clone().unwrap_or_default().into();
        match kind {
            BucketConfig::Encryption => {
                meta.encryption_config_xml = bytes;
                meta.encryption_config_updated_at = now;
            }
            BucketConfig::Tagging => {
                meta.tagging_config_xml = bytes;
                meta.tagging_config_updated_at = now;
            }
            BucketConfig::Policy => {
                meta.policy_config_json = bytes;
                meta.policy_config_updated_at = now;
            }
            BucketConfig::ObjectLock => {
                meta.object_lock_config_xml = bytes;
                meta.object_lock_config_updated_at = now;
            }
            BucketConfig::Lifecycle => {
                meta.lifecycle_config_xml = bytes;
                meta.lifecycle_config_updated_at = now;
            }
            BucketConfig::Quota => {
                meta.quota_config_json = bytes;
                meta.quota_config_updated_at = now;
            }
            BucketConfig::Cors => set_cors_field(&mut meta, &bytes),
        }
        self.save_bucket_meta(bucket, &meta).await?;
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((bucket.to_owned(), kind), doc);
        self.announce(bucket, BucketChange::Config(kind)).await;
        Ok(())
    }

    /// The buckets, sorted by name.
    pub async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let mut count: HashMap<String, usize> = HashMap::new();
        for d in self.drives() {
            if let Ok(vols) = d.list_volumes().await {
                for v in vols {
                    *count.entry(v.name).or_default() += 1;
                }
            }
        }
        let q = self.drive_count().div_ceil(2);
        let mut names: Vec<String> = count
            .into_iter()
            .filter(|(n, c)| *c >= q && names::check_bucket(n).is_ok())
            .map(|(n, _)| n)
            .collect();
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let (created, versioning) = match self.load_bucket_meta(&name).await {
                Ok(m) => (
                    m.created.secs * 1_000_000_000 + i64::from(m.created.nanos),
                    Versioning::from_config_xml(&m.versioning_config_xml).is_enabled(),
                ),
                Err(_) => (0, false),
            };
            out.push(BucketInfo {
                name,
                created_nanos: created,
                versioning,
            });
        }
        Ok(out)
    }

    /// Information about one bucket.
    pub async fn head_bucket(&self, bucket: &str) -> Result<BucketInfo> {
        self.check_bucket_exists(bucket).await?;
        let (created, versioning) = match self.load_bucket_meta(bucket).await {
            Ok(m) => (
                m.created.secs * 1_000_000_000 + i64::from(m.created.nanos),
                Versioning::from_config_xml(&m.versioning_config_xml).is_enabled(),
            ),
            Err(_) => (0, false),
        };
        Ok(BucketInfo {
            name: bucket.into(),
            created_nanos: created,
            versioning,
        })
    }

    /// Deletes an empty bucket and its metadata.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.check_bucket_exists(bucket).await?;
        let _g = self.locker.write(bucket, LOCK_TIMEOUT).await?;
        for d in self.drives() {
            if let Ok(entries) = d.list_dir(bucket, "", 1).await
                && !entries.is_empty()
            {
                return Err(Error::BucketNotEmpty(bucket.into()));
            }
        }
        let mut ok = 0;
        for d in self.drives() {
            match d.delete_volume(bucket, false).await {
                Ok(()) | Err(DriveError::VolumeNotFound) => ok += 1,
                Err(DriveError::VolumeNotEmpty) => {
                    return Err(Error::BucketNotEmpty(bucket.into()));
                }
                Err(e) => tracing::warn!(drive = %d.label(), "delete bucket: {e}"),
            }
            let _ = d
                .delete(BUCKETS_VOLUME, &format!("{bucket}/.metadata.bin"), true)
                .await;
            let _ = d.delete(BUCKETS_VOLUME, bucket, true).await;
        }
        self.forget_bucket(bucket);
        self.announce(bucket, BucketChange::Deleted).await;
        if ok < self.bucket_quorum() {
            return Err(Error::WriteQuorum {
                ok,
                needed: self.bucket_quorum(),
            });
        }
        Ok(())
    }
}

/// The versioning document of a lock-enabled bucket (MinIO's bytes).
const ENABLED_VERSIONING: &str = "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>";

/// The key of the CORS rules in `.metadata.bin`. MinIO keeps no CORS rules
/// (its bucket CORS calls answer as if none were set), so they live in a
/// field of their own, which MinIO skips when it reads the file (and drops
/// when it rewrites it).
const CORS_FIELD: &str = "TesseraCorsConfigXML";

fn cors_field(m: &BucketMetadata<'_>) -> Vec<u8> {
    m.unknown
        .iter()
        .find(|f| f.key.as_str() == Some(CORS_FIELD))
        .and_then(|f| crate::msgp::Reader::new(&f.value).read_bin().ok())
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

fn set_cors_field(m: &mut BucketMetadata<'static>, doc: &[u8]) {
    m.unknown.retain(|f| f.key.as_str() != Some(CORS_FIELD));
    if !doc.is_empty() {
        let mut w = crate::msgp::Writer::new();
        w.bin(doc);
        m.unknown.push(crate::text::RawField {
            key: CORS_FIELD.to_owned().into(),
            value: w.into_inner().into(),
        });
    }
}
