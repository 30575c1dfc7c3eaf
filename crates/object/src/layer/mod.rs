//! The erasure object layer: buckets and objects over erasure sets of
//! drives, in MinIO's on-disk format.
//!
//! [`ObjectLayer`] is the entry point: open it over local directories with
//! [`ObjectLayer::open_dirs`] (or over any [`drive::Drive`]s with
//! [`ObjectLayer::open`]), then create buckets and put, get, list and delete
//! objects. Every object lives in one erasure set, chosen by MinIO's keyed
//! SipHash of its key; inside the set its shards are spread in MinIO's
//! `hashOrder` rotation. See [`set`] for the write path and its fsync
//! policy.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use md5::Digest;
//! use object::layer::{GetOptions, ObjectLayer, PutOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let dirs: Vec<_> = (1..=4).map(|i| dir.path().join(format!("d{i}"))).collect();
//! let layer = ObjectLayer::open_dirs(&dirs, Default::default()).await?;
//! layer.make_bucket("photos").await?;
//! let body = b"hello, erasure-coded world".to_vec();
//! let info = layer
//!     .put_object("photos", "greeting.txt", &mut &body[..], &PutOptions::default())
//!     .await?;
//! assert_eq!(info.etag, hex::encode(md5::Md5::digest(&body)));
//! let mut out = Vec::new();
//! layer.get_object("photos", "greeting.txt", &GetOptions::default(), &mut out).await?;
//! assert_eq!(out, body);
//! # Ok::<(), object::layer::Error>(())
//! # }).unwrap();
//! ```

pub mod error;
pub mod list;
pub mod lock;
pub mod multipart;
pub mod names;
pub mod set;
pub mod types;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drive::format::{BUCKETS_VOLUME, META_VOLUME};
use drive::{Drive, DriveError, FormatErasureV3, LocalDrive, LocalDriveConfig};
use tokio::io::{AsyncRead, AsyncWrite};
use uuid::Uuid;

pub use error::{Error, Result};
pub use list::{ListOptions, ListResult, ListVersionsResult, ListedObject};
pub use lock::{LocalLocker, LockGuard, Locker};
pub use multipart::{UploadInfo, UploadedPart};
pub use set::ErasureSet;
pub use types::*;

use crate::bucketmeta::BucketMetadata;
use crate::msgp::MsgTime;

/// How long an operation waits for an object's lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// Options of [`ObjectLayer::open`].
#[derive(Debug, Clone, Default)]
pub struct LayerOptions {
    /// Parity shards of the `STANDARD` storage class; by set size when
    /// `None` (2 for 4-5 drives, 3 for 6-7, 4 for 8 and more).
    pub parity: Option<usize>,
    /// Drives per erasure set; chosen as MinIO does when `None`.
    pub set_drive_count: Option<usize>,
    /// Configuration of the local drives opened by [`ObjectLayer::open_dirs`].
    pub drive: Option<LocalDriveConfig>,
}

/// Buckets and objects over one pool of erasure sets.
#[derive(Debug)]
pub struct ObjectLayer {
    sets: Vec<ErasureSet>,
    deployment_id: Uuid,
    locker: Arc<dyn Locker>,
    /// Bucket name -> versioning enabled, for buckets seen so far.
    versioning: Mutex<HashMap<String, bool>>,
    /// Objects a read found damaged, waiting for the scanner (bounded: when
    /// full, the next full pass finds them anyway).
    heal_tx: tokio::sync::mpsc::Sender<HealItem>,
    heal_rx: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<HealItem>>,
}

/// An object version queued for healing.
type HealItem = (String, String, Option<VersionSel>);

/// Length of the heal queue.
const HEAL_QUEUE: usize = 10_000;

impl ObjectLayer {
    /// Opens (formatting on first use) local directories as one pool; the
    /// directories are created if missing.
    pub async fn open_dirs(dirs: &[PathBuf], opts: LayerOptions) -> Result<ObjectLayer> {
        let mut drives: Vec<Arc<dyn Drive>> = Vec::with_capacity(dirs.len());
        for d in dirs {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::Layout(format!("creating {}: {e}", d.display())))?;
            let drive = LocalDrive::open(d.clone(), opts.drive.clone().unwrap_or_default()).await?;
            drives.push(Arc::new(drive));
        }
        Self::open(drives, opts).await
    }

    /// Opens a pool over `drives` (in endpoint order): formats fresh drives,
    /// checks formatted ones (a drive of another deployment, or out of
    /// place, is refused), formats replaced (empty) drives into their slot,
    /// and removes what crashed writes left in the temp area.
    pub async fn open(drives: Vec<Arc<dyn Drive>>, opts: LayerOptions) -> Result<ObjectLayer> {
        let n = drives.len();
        if n == 0 {
            return Err(Error::Layout("no drives".into()));
        }
        let set_size = match opts.set_drive_count {
            Some(s) => s,
            None => placement::choose_set_drive_count(n, None, None)
                .map_err(|e| Error::Layout(e.to_string()))?,
        };
        if set_size == 0 || !n.is_multiple_of(set_size) {
            return Err(Error::Layout(format!(
                "{n} drives do not split into sets of {set_size}"
            )));
        }
        let parity = opts
            .parity
            .unwrap_or_else(|| placement::default_parity(set_size));

        // Formats: load all, agree on a reference, fill in fresh drives.
        let mut found: Vec<Option<FormatErasureV3>> = Vec::with_capacity(n);
        let mut unformatted = 0;
        for d in &drives {
            match drive::load_format(d.as_ref()).await {
                Ok(f) => found.push(Some(f)),
                Err(DriveError::Unformatted) => {
                    unformatted += 1;
                    found.push(None);
                }
                Err(e) => return Err(Error::Layout(format!("{}: {e}", d.label()))),
            }
        }
        let reference = if unformatted == n {
            let deployment = Uuid::new_v4();
            let sets: Vec<Vec<Uuid>> = (0..n / set_size)
                .map(|_| (0..set_size).map(|_| Uuid::new_v4()).collect())
                .collect();
            let formats = drive::build_formats(deployment, &sets)
                .map_err(|e| Error::Layout(e.to_string()))?;
            for (d, f) in drives.iter().zip(&formats) {
                drive::save_format(d.as_ref(), f, false).await?;
            }
            tracing::info!(%deployment, drives = n, set_size, parity, "formatted fresh drives");
            formats[0].clone()
        } else {
            // The most common deployment id among formatted drives.
            let mut count: HashMap<String, usize> = HashMap::new();
            for f in found.iter().flatten() {
                *count.entry(f.id.clone()).or_default() += 1;
            }
            let (id, _) = count
                .into_iter()
                .max_by_key(|(_, c)| *c)
                .ok_or_else(|| Error::Layout("no formatted drive".into()))?;
            let reference = found
                .iter()
                .flatten()
                .find(|f| f.id == id)
                .cloned()
                .ok_or_else(|| Error::Layout("no reference format".into()))?;
            if reference.drive_count() != n {
                return Err(Error::Layout(format!(
                    "the drives were formatted for {} drives, {n} given",
                    reference.drive_count()
                )));
            }
            for (i, (d, f)) in drives.iter().zip(&found).enumerate() {
                let expected = drive::DrivePosition {
                    set: i / set_size,
                    disk: i % set_size,
                };
                match f {
                    Some(f) => {
                        drive::check_format(&reference, f, Some(expected))
                            .map_err(|e| Error::Layout(format!("{}: {e}", d.label())))?;
                        d.set_id(f.this_id());
                    }
                    None => {
                        // A replaced drive: give it its slot's format.
                        let mut f = reference.clone();
                        f.xl.this = reference.xl.sets[expected.set][expected.disk].clone();
                        drive::save_format(d.as_ref(), &f, false).await?;
                        tracing::warn!(drive = %d.label(), "formatted a replaced drive; heal it");
                    }
                }
            }
            reference
        };
        let deployment_id = reference
            .deployment_id()
            .ok_or_else(|| Error::Layout("format without a deployment id".into()))?;
        let mut sets = Vec::new();
        for chunk in drives.chunks(set_size) {
            let set = ErasureSet::new(chunk.to_vec(), parity)?;
            set.ensure_meta_volumes().await;
            let cleaned = set.clean_tmp().await;
            if cleaned > 0 {
                tracing::info!(cleaned, "removed leftovers of interrupted writes");
            }
            sets.push(set);
        }
        let (heal_tx, heal_rx) = tokio::sync::mpsc::channel(HEAL_QUEUE);
        Ok(ObjectLayer {
            sets,
            deployment_id,
            locker: Arc::new(LocalLocker::new()),
            versioning: Mutex::new(HashMap::new()),
            heal_tx,
            heal_rx: tokio::sync::Mutex::new(heal_rx),
        })
    }

    /// Replaces the lock service (the cluster's, later).
    pub fn with_locker(mut self, locker: Arc<dyn Locker>) -> Self {
        self.locker = locker;
        self
    }

    /// The deployment id (from `format.json`).
    pub fn deployment_id(&self) -> Uuid {
        self.deployment_id
    }

    /// The erasure sets.
    pub fn sets(&self) -> &[ErasureSet] {
        &self.sets
    }

    /// Every drive, in set order.
    pub fn drives(&self) -> impl Iterator<Item = &Arc<dyn Drive>> {
        self.sets.iter().flat_map(|s| s.drives())
    }

    fn set_for(&self, key: &str) -> &ErasureSet {
        let i = placement::set_index_for(
            placement::set_key(key).as_bytes(),
            &self.deployment_id,
            self.sets.len(),
            placement::DistributionAlgo::CURRENT,
        )
        .unwrap_or(0);
        &self.sets[i.min(self.sets.len() - 1)]
    }

    fn drive_count(&self) -> usize {
        self.sets.iter().map(|s| s.drives().len()).sum()
    }

    fn bucket_quorum(&self) -> usize {
        self.drive_count() / 2 + 1
    }

    // ---- buckets ----------------------------------------------------------

    /// Creates a bucket (on every drive) and its `.metadata.bin`.
    pub async fn make_bucket(&self, bucket: &str) -> Result<()> {
        names::check_bucket(bucket)?;
        let _g = self.locker.write(bucket, LOCK_TIMEOUT).await?;
        let (mut ok, mut exists) = (0, 0);
        for d in self.drives() {
            match d.make_volume(bucket).await {
                Ok(()) => ok += 1,
                Err(DriveError::VolumeExists) => exists += 1,
                Err(e) => tracing::warn!(drive = %d.label(), "make bucket: {e}"),
            }
        }
        if exists >= self.bucket_quorum() {
            return Err(Error::BucketExists(bucket.into()));
        }
        if ok + exists < self.bucket_quorum() {
            return Err(Error::WriteQuorum {
                ok: ok + exists,
                needed: self.bucket_quorum(),
            });
        }
        let now = set::now_nanos();
        let meta = BucketMetadata::new(bucket.to_owned(), MsgTime::from_unix_nanos(now));
        self.save_bucket_meta(bucket, &meta).await?;
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(bucket.to_owned(), false);
        Ok(())
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
        self.set_for(&key)
            .put(META_VOLUME, &key, &mut &bytes[..], &opts, false)
            .await?;
        Ok(())
    }

    async fn load_bucket_meta(&self, bucket: &str) -> Result<BucketMetadata<'static>> {
        let key = Self::bucket_meta_key(bucket);
        let mut out = Vec::new();
        self.set_for(&key)
            .get(META_VOLUME, &key, &GetOptions::default(), &mut out)
            .await?;
        let meta = BucketMetadata::decode(&out)
            .map_err(|e| Error::Internal(format!("{bucket}/.metadata.bin: {e}")))?;
        Ok(meta.into_owned())
    }

    /// Whether the bucket exists (on a quorum of drives).
    async fn bucket_exists(&self, bucket: &str) -> Result<bool> {
        let (mut yes, mut no) = (0, 0);
        for d in self.drives() {
            match d.stat_volume(bucket).await {
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

    async fn check_bucket_exists(&self, bucket: &str) -> Result<()> {
        names::check_bucket(bucket)?;
        if self.bucket_exists(bucket).await? {
            Ok(())
        } else {
            Err(Error::NoSuchBucket(bucket.into()))
        }
    }

    /// Whether versioning is enabled on `bucket`.
    pub async fn bucket_versioning(&self, bucket: &str) -> Result<bool> {
        if let Some(v) = self
            .versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(bucket)
        {
            return Ok(*v);
        }
        let v = match self.load_bucket_meta(bucket).await {
            Ok(m) => versioning_enabled(&m.versioning_config_xml),
            Err(e) if e.is_not_found() => false,
            Err(e) => return Err(e),
        };
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(bucket.to_owned(), v);
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
            .insert(bucket.to_owned(), enabled);
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
                    versioning_enabled(&m.versioning_config_xml),
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
                versioning_enabled(&m.versioning_config_xml),
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
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(bucket);
        if ok < self.bucket_quorum() {
            return Err(Error::WriteQuorum {
                ok,
                needed: self.bucket_quorum(),
            });
        }
        Ok(())
    }

    // ---- objects ----------------------------------------------------------

    /// Stores an object read from `body`.
    pub async fn put_object<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        body: &mut R,
        opts: &PutOptions,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioned = self.bucket_versioning(bucket).await?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key)
            .put(bucket, key, body, opts, versioned)
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
            self.set_for(key).get(bucket, key, opts, out).await?
        };
        if !res.1.bad_drives.is_empty() {
            // Best effort: a full queue is caught up by the next full pass.
            let version = Some(res.0.version_id.map_or(VersionSel::Null, VersionSel::Id));
            let _ = self
                .heal_tx
                .try_send((bucket.to_owned(), key.to_owned(), version));
        }
        Ok(res)
    }

    /// Objects waiting in the heal queue.
    pub fn heal_queue_len(&self) -> usize {
        HEAL_QUEUE - self.heal_tx.capacity()
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
        self.set_for(key).head(bucket, key, version).await
    }

    /// Deletes an object (or one version of it).
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<DeleteResult> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioned = self.bucket_versioning(bucket).await?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key)
            .delete(bucket, key, version, versioned)
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
                metadata: src.metadata.clone().into_iter().collect(),
                parity: None,
            },
        };
        // Stream through a bounded pipe: the reader fills it while the
        // writer drains it, so memory stays bounded for any object size.
        let (mut rd, mut wr) = tokio::io::duplex(4 << 20);
        let get_opts = GetOptions {
            version_id: src_version,
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

    // ---- multipart uploads ------------------------------------------------

    /// Starts a multipart upload; returns its id.
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        opts: &PutOptions,
    ) -> Result<String> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        self.set_for(key)
            .create_multipart(bucket, key, opts, self.deployment_id)
            .await
    }

    /// Uploads one part (numbers 1..=10000; a part uploaded again replaces
    /// the earlier one).
    pub async fn upload_part<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i64,
        body: &mut R,
        size: Option<u64>,
    ) -> Result<UploadedPart> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _g = self
            .locker
            .read(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key)
            .upload_part(bucket, key, upload_id, number, body, size)
            .await
    }

    /// The parts of an upload, by number.
    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<Vec<UploadedPart>> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        self.set_for(key).list_parts(bucket, key, upload_id).await
    }

    /// Completes an upload from `(part number, ETag)` pairs in ascending
    /// order. The object's ETag is `hex(md5(part md5s))-N`.
    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i64, String)],
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioned = self.bucket_versioning(bucket).await?;
        // No part uploads may land while completing, and the object is
        // replaced under its lock.
        let _u = self
            .locker
            .write(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key)
            .complete_multipart(bucket, key, upload_id, parts, versioned)
            .await
    }

    /// Aborts an upload, removing its parts.
    pub async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<()> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _u = self
            .locker
            .write(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key)
            .abort_multipart(bucket, key, upload_id)
            .await
    }

    /// Uploads in progress whose key starts with `prefix`.
    pub async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: &str,
    ) -> Result<Vec<UploadInfo>> {
        self.check_bucket_exists(bucket).await?;
        let mut all = Vec::new();
        for set in &self.sets {
            all.extend(set.list_uploads(bucket, prefix).await?);
        }
        all.sort_by(|a, b| (&a.key, a.initiated_nanos).cmp(&(&b.key, b.initiated_nanos)));
        Ok(all)
    }

    /// Heals one object version: rewrites missing or corrupt shards and
    /// metadata on the drives that need it.
    pub async fn heal_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<HealResult> {
        names::check_key(key)?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        self.set_for(key).heal(bucket, key, version).await
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

fn versioning_enabled(xml: &[u8]) -> bool {
    let s = String::from_utf8_lossy(xml);
    s.contains("<Status>Enabled</Status>")
}

/// Options of the background scanner.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Most object versions checked per second (`None`: as fast as the
    /// drives allow). Bounds the scanner's share of the drives.
    pub versions_per_sec: Option<u32>,
    /// Pause between two full passes.
    pub interval: Duration,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            versions_per_sec: Some(100),
            interval: Duration::from_secs(3600),
        }
    }
}

/// What the scanner has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanProgress {
    /// Full passes completed.
    pub cycles: u64,
    /// Object versions checked (in all passes, and from the heal queue).
    pub checked: u64,
    /// Object versions that needed and got healing.
    pub healed: u64,
    /// Versions whose check or heal failed.
    pub errors: u64,
    /// The bucket/key of the current pass's position.
    pub position: Option<String>,
}

/// A running background scanner; stopped when dropped.
#[derive(Debug)]
pub struct ScannerHandle {
    progress: Arc<Mutex<ScanProgress>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScannerHandle {
    /// A snapshot of the scanner's progress.
    pub fn progress(&self) -> ScanProgress {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for ScannerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Paces work to at most `per_sec` items per second.
struct Pacer {
    per_sec: Option<u32>,
    started: tokio::time::Instant,
    done: u64,
}

impl Pacer {
    fn new(per_sec: Option<u32>) -> Self {
        Pacer {
            per_sec: per_sec.filter(|r| *r > 0),
            started: tokio::time::Instant::now(),
            done: 0,
        }
    }

    async fn tick(&mut self) {
        self.done += 1;
        if let Some(r) = self.per_sec {
            let due = self.started + Duration::from_secs_f64(self.done as f64 / f64::from(r));
            tokio::time::sleep_until(due).await;
        }
    }
}

impl ObjectLayer {
    /// Checks (and heals where needed) every version of every object once,
    /// at most `opts.versions_per_sec`, updating `progress` as it goes.
    pub async fn scan_once(
        &self,
        opts: &ScanOptions,
        progress: &Mutex<ScanProgress>,
    ) -> Result<()> {
        let mut pacer = Pacer::new(opts.versions_per_sec);
        let update = |f: &dyn Fn(&mut ScanProgress)| {
            f(&mut progress.lock().unwrap_or_else(|p| p.into_inner()));
        };
        for bucket in self.list_buckets().await? {
            let mut marker: Option<String> = None;
            let mut vmarker: Option<String> = None;
            loop {
                let page = self
                    .list_object_versions(
                        &bucket.name,
                        &ListOptions {
                            marker: marker.clone(),
                            max_keys: 1000,
                            ..Default::default()
                        },
                        vmarker.as_deref(),
                    )
                    .await?;
                for v in &page.versions {
                    let sel = v.version_id.map_or(VersionSel::Null, VersionSel::Id);
                    let r = self.heal_object(&bucket.name, &v.key, Some(sel)).await;
                    update(&|p| {
                        p.checked += 1;
                        p.position = Some(format!("{}/{}", bucket.name, v.key));
                        match &r {
                            Ok(h) if !h.healed_drives.is_empty() => p.healed += 1,
                            Ok(_) => {}
                            Err(_) => p.errors += 1,
                        }
                    });
                    pacer.tick().await;
                }
                if !page.is_truncated {
                    break;
                }
                marker = page.next_key_marker;
                vmarker = page.next_version_marker;
            }
        }
        update(&|p| {
            p.cycles += 1;
            p.position = None;
        });
        Ok(())
    }

    /// Starts the background scanner: a full pass every `opts.interval`,
    /// and in between the objects queued for healing by reads that met a
    /// missing or corrupt shard.
    pub fn spawn_scanner(self: &Arc<Self>, opts: ScanOptions) -> ScannerHandle {
        let progress = Arc::new(Mutex::new(ScanProgress::default()));
        let (layer, prog) = (self.clone(), progress.clone());
        let task = tokio::spawn(async move {
            loop {
                if let Err(e) = layer.scan_once(&opts, &prog).await {
                    tracing::warn!("scanner pass: {e}");
                }
                let deadline = tokio::time::Instant::now() + opts.interval;
                let mut pacer = Pacer::new(opts.versions_per_sec);
                loop {
                    let next = {
                        let mut rx = layer.heal_rx.lock().await;
                        tokio::select! {
                            item = rx.recv() => item,
                            _ = tokio::time::sleep_until(deadline) => None,
                        }
                    };
                    let Some((bucket, key, version)) = next else {
                        break;
                    };
                    let r = layer.heal_object(&bucket, &key, version).await;
                    {
                        let mut p = prog.lock().unwrap_or_else(|p| p.into_inner());
                        p.checked += 1;
                        match r {
                            Ok(h) if !h.healed_drives.is_empty() => p.healed += 1,
                            Ok(_) => {}
                            Err(_) => p.errors += 1,
                        }
                    }
                    pacer.tick().await;
                }
            }
        });
        ScannerHandle { progress, task }
    }
}
