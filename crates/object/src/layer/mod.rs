//! The erasure object layer: buckets and objects over erasure sets of
//! drives, in MinIO's on-disk format.
//!
//! [`ObjectLayer`] is the entry point: open it over local directories with
//! [`ObjectLayer::open_dirs`] (or [`ObjectLayer::open_pool_dirs`] for
//! several pools; over any [`drive::Drive`]s with [`ObjectLayer::open`] and
//! [`ObjectLayer::open_pools`]), then create buckets and put, get, list and
//! delete objects. A new key goes to the pool with the most free space, an
//! existing one stays in its pool; inside a pool every object lives in one
//! erasure set, chosen by MinIO's keyed SipHash of its key (or the legacy
//! algorithm the drives were formatted with), and inside the set its shards
//! are spread in MinIO's `hashOrder` rotation. Parity comes from the
//! storage class (`STANDARD`, or `REDUCED_REDUNDANCY` through the
//! `x-amz-storage-class` metadata key; see [`LayerOptions`]). See [`set`]
//! for the write path and its fsync policy, and [`Error`] for what the S3
//! gateway maps to S3 error codes. Reads that meet damage queue the object
//! for healing ([`ObjectLayer::next_heal_request`]).
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

mod cache;
pub mod error;
mod join;
pub mod list;
pub mod lock;
pub mod multipart;
pub mod names;
mod put_queue;
pub mod set;
pub mod types;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use drive::format::{BUCKETS_VOLUME, META_VOLUME};
use drive::{Drive, DriveError, FormatErasureV3, LocalDrive, LocalDriveConfig};
use placement::DistributionAlgo;
pub use placement::StorageClassConfig;
use tokio::io::{AsyncRead, AsyncWrite};
use uuid::Uuid;

pub use cache::{ReadCache, ReadCacheStats};
pub use drive::pipe::{Pipe, PipePool};
pub use error::{Error, Result};
pub use list::{ListOptions, ListResult, ListVersionsResult, ListedEncryption, ListedObject};
pub use lock::{LocalLocker, LockGuard, Locker};
pub use multipart::{PartEtag, PartOptions, UploadInfo, UploadedPart};
pub use set::{Chunk, ChunkSink, ErasureSet, WriteSink};
pub use types::*;

use crate::bucketmeta::BucketMetadata;
use crate::msgp::MsgTime;

/// The metadata key of an object's storage class (`STANDARD` or
/// `REDUCED_REDUNDANCY`), as the S3 header names it.
pub const AMZ_STORAGE_CLASS: &str = "x-amz-storage-class";

/// How long an operation waits for an object's lock.
pub(crate) const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// Options of [`ObjectLayer::open`].
#[derive(Debug, Clone, Default)]
pub struct LayerOptions {
    /// Parity shards of the `STANDARD` storage class (`EC:n`). When `None`,
    /// MinIO's default for the first pool's set size (2 for 4-5 drives, 3
    /// for 6-7, 4 for 8 and more; half the set for deployments formatted
    /// with the legacy `SIPMOD` distribution). Must fit every pool.
    pub parity: Option<usize>,
    /// Parity shards of the `REDUCED_REDUNDANCY` storage class (objects
    /// PUT with `x-amz-storage-class: REDUCED_REDUNDANCY`); 1 when `None`.
    pub rrs_parity: Option<usize>,
    /// Drives per erasure set of fresh pools; chosen as MinIO does when
    /// `None`. A formatted pool keeps the layout of its `format.json`.
    pub set_drive_count: Option<usize>,
    /// Configuration of the local drives opened by [`ObjectLayer::open_dirs`].
    pub drive: Option<LocalDriveConfig>,
    /// Bytes of shard records that streamed PUTs may have queued for or
    /// being written to each drive of a set, all uploads together (16 MiB
    /// when `None`); uploads beyond it wait for the drives.
    pub put_queue_bytes_per_drive: Option<usize>,
    /// Bytes of verified erasure blocks of hot objects kept in memory
    /// ([`ReadCache`]); no cache when `None` or 0.
    pub read_cache_bytes: Option<usize>,
}

/// One pool: a range of the layer's sets and how keys hash onto them.
#[derive(Debug, Clone)]
struct Pool {
    sets: std::ops::Range<usize>,
    algo: DistributionAlgo,
}

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

/// Bucket configuration documents read so far: (bucket, kind) -> document.
type ConfigCache = HashMap<(String, BucketConfig), Option<Vec<u8>>>;

/// Buckets and objects over pools of erasure sets.
#[derive(Debug)]
pub struct ObjectLayer {
    /// Every set of every pool, pool after pool.
    sets: Vec<ErasureSet>,
    pools: Vec<Pool>,
    deployment_id: Uuid,
    storage_class: StorageClassConfig,
    locker: Arc<dyn Locker>,
    /// Bucket name -> versioning state, for buckets seen so far.
    versioning: Mutex<HashMap<String, Versioning>>,
    /// (bucket, configuration) -> document, for configurations read so far.
    configs: Mutex<ConfigCache>,
    /// Objects a read found damaged, waiting for the healer (bounded: when
    /// full, the next full pass finds them anyway).
    heal_tx: tokio::sync::mpsc::Sender<HealRequest>,
    heal_rx: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<HealRequest>>,
    /// The read cache every set reads through, if any.
    read_cache: Option<Arc<ReadCache>>,
}

/// An object version that a read found damaged: some drives of its set
/// had no metadata, or missing, unreadable or corrupt shards. The healer
/// (the scanner, or any consumer of [`ObjectLayer::next_heal_request`])
/// should run [`ObjectLayer::heal_object`] on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealRequest {
    /// Bucket.
    pub bucket: String,
    /// Key.
    pub key: String,
    /// The version read (`Null` for the null version).
    pub version: Option<VersionSel>,
    /// Set positions of the drives found bad.
    pub bad_drives: Vec<usize>,
}

/// Length of the heal queue.
const HEAL_QUEUE: usize = 10_000;

/// What `format.json` said about one pool's drives.
struct PoolFormats {
    found: Vec<Option<FormatErasureV3>>,
    /// The format most drives agree on, if any drive is formatted.
    reference: Option<FormatErasureV3>,
}

impl ObjectLayer {
    /// Opens (formatting on first use) local directories as one pool; the
    /// directories are created if missing.
    pub async fn open_dirs(dirs: &[PathBuf], opts: LayerOptions) -> Result<ObjectLayer> {
        Self::open_pool_dirs(&[dirs.to_vec()], opts).await
    }

    /// Opens local directories as several pools (MinIO's server pools: one
    /// argument of `minio server` each), formatting fresh ones.
    pub async fn open_pool_dirs(pools: &[Vec<PathBuf>], opts: LayerOptions) -> Result<ObjectLayer> {
        let mut out = Vec::with_capacity(pools.len());
        for dirs in pools {
            let mut drives: Vec<Arc<dyn Drive>> = Vec::with_capacity(dirs.len());
            for d in dirs {
                std::fs::create_dir_all(d)
                    .map_err(|e| Error::Layout(format!("creating {}: {e}", d.display())))?;
                let cfg = opts.drive.clone().unwrap_or_default();
                drives.push(Arc::new(LocalDrive::open(d.clone(), cfg).await?));
            }
            out.push(drives);
        }
        Self::open_pools(out, opts).await
    }

    /// Opens one pool over `drives` (in endpoint order); see
    /// [`open_pools`](Self::open_pools).
    pub async fn open(drives: Vec<Arc<dyn Drive>>, opts: LayerOptions) -> Result<ObjectLayer> {
        Self::open_pools(vec![drives], opts).await
    }

    /// Opens pools of drives (each in endpoint order): formats fresh
    /// drives, checks formatted ones (a drive of another deployment, or
    /// out of place, is refused; all pools must share the deployment id
    /// and distribution algorithm), formats replaced (empty) drives into
    /// their slot, formats a fresh pool added to a deployment with its id,
    /// and removes what crashed writes left in the temp area.
    pub async fn open_pools(
        pools: Vec<Vec<Arc<dyn Drive>>>,
        opts: LayerOptions,
    ) -> Result<ObjectLayer> {
        if pools.is_empty() || pools.iter().any(Vec::is_empty) {
            return Err(Error::Layout("no drives".into()));
        }
        let mut formats = Vec::with_capacity(pools.len());
        for drives in &pools {
            formats.push(load_pool_formats(drives).await?);
        }
        // One deployment, one distribution algorithm.
        let mut deployment: Option<(Uuid, DistributionAlgo)> = None;
        for (p, f) in formats.iter().enumerate() {
            let Some(r) = &f.reference else { continue };
            let id = r.deployment_id().ok_or_else(|| {
                Error::Layout(format!("pool {p}: format without a deployment id"))
            })?;
            let algo = DistributionAlgo::from_format_name(&r.xl.distribution_algo)
                .map_err(|e| Error::Layout(format!("pool {p}: {e}")))?;
            match deployment {
                None => deployment = Some((id, algo)),
                Some((d, a)) if d == id && a == algo => {}
                Some((d, a)) => {
                    return Err(Error::Layout(format!(
                        "pool {p} belongs to deployment {id} ({algo}), pool 0 to {d} ({a})"
                    )));
                }
            }
        }
        let (deployment_id, algo) =
            deployment.unwrap_or_else(|| (Uuid::new_v4(), DistributionAlgo::CURRENT));

        let mut set_sizes = Vec::with_capacity(pools.len());
        for (p, (drives, f)) in pools.iter().zip(formats).enumerate() {
            let size = format_pool(p, drives, f, deployment_id, algo, opts.set_drive_count).await?;
            set_sizes.push(size);
        }

        // Storage classes: resolved for the first pool's sets, as MinIO
        // does, and valid for every pool.
        let first = set_sizes[0];
        let standard = match (opts.parity, algo) {
            (Some(p), _) => Some(placement::StorageClass::new(p)),
            (None, DistributionAlgo::SipMod) => Some(placement::StorageClass::new(first / 2)),
            (None, _) => None,
        };
        let storage_class = StorageClassConfig::resolve(
            standard,
            opts.rrs_parity.map(placement::StorageClass::new),
            first,
        )
        .map_err(|e| Error::Layout(e.to_string()))?;
        for (p, &size) in set_sizes.iter().enumerate() {
            for parity in [storage_class.standard_parity(), storage_class.rrs_parity()] {
                placement::validate_parity(parity, size)
                    .map_err(|e| Error::Layout(format!("pool {p}: {e}")))?;
            }
        }

        let read_cache = opts
            .read_cache_bytes
            .filter(|&b| b > 0)
            .map(|b| Arc::new(ReadCache::new(b)));
        let mut sets = Vec::new();
        let mut pool_ranges = Vec::with_capacity(pools.len());
        for (drives, &size) in pools.iter().zip(&set_sizes) {
            let start = sets.len();
            for chunk in drives.chunks(size) {
                let mut set = ErasureSet::new(chunk.to_vec(), storage_class.standard_parity())?;
                if let Some(bytes) = opts.put_queue_bytes_per_drive {
                    set = set.with_put_queue(bytes);
                }
                if let Some(cache) = &read_cache {
                    let index = u32::try_from(sets.len()).unwrap_or(u32::MAX);
                    set = set.with_read_cache(Arc::clone(cache), index);
                }
                set.ensure_meta_volumes().await;
                let cleaned = set.clean_tmp().await;
                if cleaned > 0 {
                    tracing::info!(cleaned, "removed leftovers of interrupted writes");
                }
                sets.push(set);
            }
            pool_ranges.push(Pool {
                sets: start..sets.len(),
                algo,
            });
        }
        let (heal_tx, heal_rx) = tokio::sync::mpsc::channel(HEAL_QUEUE);
        let layer = ObjectLayer {
            sets,
            pools: pool_ranges,
            deployment_id,
            storage_class,
            locker: Arc::new(LocalLocker::new()),
            versioning: Mutex::new(HashMap::new()),
            configs: Mutex::new(HashMap::new()),
            heal_tx,
            heal_rx: tokio::sync::Mutex::new(heal_rx),
            read_cache,
        };
        layer.spread_buckets().await;
        Ok(layer)
    }

    /// Creates every bucket (a volume on a majority of some pool's drives)
    /// on the drives that lack it: a pool added to the deployment, or a
    /// replaced drive, gets the buckets the others have.
    async fn spread_buckets(&self) {
        let mut buckets: Vec<String> = Vec::new();
        for p in 0..self.pools.len() {
            let mut count: HashMap<String, usize> = HashMap::new();
            let mut n = 0;
            for d in self.pool_sets(p).iter().flat_map(|s| s.drives()) {
                n += 1;
                for v in d.list_volumes().await.unwrap_or_default() {
                    *count.entry(v.name).or_default() += 1;
                }
            }
            for (name, c) in count {
                if c > n / 2 && names::check_bucket(&name).is_ok() && !buckets.contains(&name) {
                    buckets.push(name);
                }
            }
        }
        for b in &buckets {
            for d in self.drives() {
                match d.make_volume(b).await {
                    Ok(()) => {
                        tracing::info!(drive = %d.label(), bucket = %b, "created missing bucket")
                    }
                    Err(DriveError::VolumeExists) => {}
                    Err(e) => tracing::warn!(drive = %d.label(), bucket = %b, "{e}"),
                }
            }
        }
    }

    /// Replaces the lock service (the cluster's, later).
    pub fn with_locker(mut self, locker: Arc<dyn Locker>) -> Self {
        self.locker = locker;
        self
    }

    /// What the read cache holds and has done, if there is one.
    pub fn read_cache_stats(&self) -> Option<ReadCacheStats> {
        self.read_cache.as_ref().map(|c| c.stats())
    }

    /// Sets what the read cache may hold now, at most its budget: lowered
    /// while memory is short, raised as it comes back
    /// ([`ReadCache::set_limit`]). Returns the bytes dropped (0 without a
    /// cache).
    pub fn set_read_cache_limit(&self, bytes: usize) -> u64 {
        self.read_cache.as_ref().map_or(0, |c| c.set_limit(bytes))
    }

    /// The deployment id (from `format.json`).
    pub fn deployment_id(&self) -> Uuid {
        self.deployment_id
    }

    /// The resolved storage classes (parity of `STANDARD` and
    /// `REDUCED_REDUNDANCY`).
    pub fn storage_class(&self) -> StorageClassConfig {
        self.storage_class
    }

    /// Every erasure set of every pool, pool after pool.
    pub fn sets(&self) -> &[ErasureSet] {
        &self.sets
    }

    /// Number of pools.
    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    /// The erasure sets of pool `pool`.
    pub fn pool_sets(&self, pool: usize) -> &[ErasureSet] {
        self.pools
            .get(pool)
            .map_or(&[][..], |p| &self.sets[p.sets.clone()])
    }

    /// Every drive, in set order.
    pub fn drives(&self) -> impl Iterator<Item = &Arc<dyn Drive>> {
        self.sets.iter().flat_map(|s| s.drives())
    }

    /// The set of pool `pool` that holds `key`.
    fn set_in(&self, pool: usize, key: &str) -> &ErasureSet {
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
    async fn pool_holding(
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
    async fn pool_for_read(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<usize> {
        Ok(self.pool_holding(bucket, key, version).await?.unwrap_or(0))
    }

    /// The pool a new version of `key` goes to: the pool already holding
    /// the key, else the pool with the most free space.
    async fn pool_for_write(&self, bucket: &str, key: &str) -> Result<usize> {
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
    fn parity_for(&self, opts: &PutOptions) -> Result<usize> {
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
        let meta = BucketMetadata::new(bucket.to_owned(), MsgTime::from_unix_nanos(now));
        self.save_bucket_meta(bucket, &meta).await?;
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(bucket.to_owned(), Versioning::Unversioned);
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
        let v = match self.load_bucket_meta(bucket).await {
            Ok(m) => Versioning::from_config_xml(&m.versioning_config_xml),
            Err(e) if e.is_not_found() => Versioning::Unversioned,
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
            .insert(
                bucket.to_owned(),
                if enabled {
                    Versioning::Enabled
                } else {
                    Versioning::Suspended
                },
            );
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
        let doc = match self.load_bucket_meta(bucket).await {
            Ok(m) => {
                let d = match kind {
                    BucketConfig::Encryption => &m.encryption_config_xml,
                    BucketConfig::Tagging => &m.tagging_config_xml,
                };
                (!d.is_empty()).then(|| d.to_vec())
            }
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ck, doc.clone());
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
        }
        self.save_bucket_meta(bucket, &meta).await?;
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((bucket.to_owned(), kind), doc);
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
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(bucket);
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(b, _), _| b != bucket);
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

    /// Queues a heal of `info`'s version on `bad_drives`, if there are any.
    /// Best effort: a full queue is caught up by the next full pass.
    fn queue_heal(&self, info: &ObjectInfo, bad_drives: Vec<usize>) {
        if !bad_drives.is_empty() {
            let _ = self.heal_tx.try_send(HealRequest {
                bucket: info.bucket.clone(),
                key: info.key.clone(),
                version: Some(info.version_id.map_or(VersionSel::Null, VersionSel::Id)),
                bad_drives,
            });
        }
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

    /// Objects waiting in the heal queue.
    pub fn heal_queue_len(&self) -> usize {
        HEAL_QUEUE - self.heal_tx.capacity()
    }

    /// The next object version queued for healing by a read that met
    /// damage, waiting for one. The queue is shared: the scanner started
    /// by [`spawn_scanner`](Self::spawn_scanner) takes from it too.
    pub async fn next_heal_request(&self) -> HealRequest {
        let mut rx = self.heal_rx.lock().await;
        match rx.recv().await {
            Some(r) => r,
            // The layer holds a sender, so the queue never closes.
            None => std::future::pending().await,
        }
    }

    /// The next queued heal request, if one is waiting now.
    pub fn try_next_heal_request(&self) -> Option<HealRequest> {
        self.heal_rx.try_lock().ok()?.try_recv().ok()
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

    /// Deletes an object (or one version of it).
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<DeleteResult> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioning = self.bucket_versioning_state(bucket).await?;
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
        self.set_in(pool, key)
            .delete(bucket, key, version, versioning)
            .await
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
                metadata: src.metadata.clone().into_iter().collect(),
                parity: None,
                trailing_metadata: None,
                internal: Vec::new(),
                actual_size: None,
                actual_size_of: None,
                caller_etag: false,
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

    // ---- multipart uploads ------------------------------------------------

    /// The pool holding an upload (pool 0 when none does: the operation
    /// then reports it missing).
    async fn upload_pool(&self, bucket: &str, key: &str, upload_id: &str) -> Result<usize> {
        if self.pools.len() > 1 {
            for p in 0..self.pools.len() {
                if self
                    .set_in(p, key)
                    .has_upload(bucket, key, upload_id)
                    .await?
                {
                    return Ok(p);
                }
            }
        }
        Ok(0)
    }

    /// Starts a multipart upload; returns its id.
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        opts: &PutOptions,
    ) -> Result<String> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let opts = PutOptions {
            parity: Some(self.parity_for(opts)?),
            ..opts.clone()
        };
        let pool = self.pool_for_write(bucket, key).await?;
        self.set_in(pool, key)
            .create_multipart(bucket, key, &opts, self.deployment_id)
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
        let opts = PartOptions {
            size,
            ..PartOptions::default()
        };
        self.upload_part_with(bucket, key, upload_id, number, body, &opts)
            .await
    }

    /// [`upload_part`](Self::upload_part) of a part whose stored bytes
    /// differ from what the client sees (an encrypted part: ciphertext and
    /// plaintext sizes, and the ETag the client is given).
    pub async fn upload_part_with<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i64,
        body: &mut R,
        opts: &PartOptions,
    ) -> Result<UploadedPart> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _g = self
            .locker
            .read(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .upload_part(bucket, key, upload_id, number, body, opts)
            .await
    }

    /// An upload's pending metadata (user and internal), e.g. to find an
    /// encrypted upload's sealed key.
    pub async fn upload_info(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .upload_info(bucket, key, upload_id)
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
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .list_parts(bucket, key, upload_id)
            .await
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
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
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
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
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
        let pool = self.pool_for_read(bucket, key, version).await?;
        self.set_in(pool, key).heal(bucket, key, version).await
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

/// Reads `format.json` of every drive of a pool and finds the format most
/// of them agree on.
async fn load_pool_formats(drives: &[Arc<dyn Drive>]) -> Result<PoolFormats> {
    let mut found: Vec<Option<FormatErasureV3>> = Vec::with_capacity(drives.len());
    for d in drives {
        match drive::load_format(d.as_ref()).await {
            Ok(f) => found.push(Some(f)),
            Err(DriveError::Unformatted) => found.push(None),
            Err(e) => return Err(Error::Layout(format!("{}: {e}", d.label()))),
        }
    }
    // The most common deployment id (ties: the first drive's).
    let mut count: Vec<(&str, usize)> = Vec::new();
    for f in found.iter().flatten() {
        match count.iter_mut().find(|(id, _)| *id == f.id) {
            Some(c) => c.1 += 1,
            None => count.push((&f.id, 1)),
        }
    }
    let best = count
        .iter()
        .fold(None::<(&str, usize)>, |b, &(id, c)| match b {
            Some((_, bc)) if bc >= c => b,
            _ => Some((id, c)),
        })
        .map(|(id, _)| id.to_owned());
    let reference = best.and_then(|id| found.iter().flatten().find(|f| f.id == id).cloned());
    Ok(PoolFormats { found, reference })
}

/// Formats a fresh pool (or checks a formatted one, giving replaced drives
/// their slot's format). Returns the pool's set size.
async fn format_pool(
    pool: usize,
    drives: &[Arc<dyn Drive>],
    formats: PoolFormats,
    deployment: Uuid,
    algo: DistributionAlgo,
    want_set_size: Option<usize>,
) -> Result<usize> {
    let n = drives.len();
    let layout_err = |m: String| Error::Layout(format!("pool {pool}: {m}"));
    let Some(reference) = formats.reference else {
        let set_size = match want_set_size {
            Some(s) => s,
            // One drive: MinIO's single-drive mode (`xl-single`), a set of
            // one drive with no parity.
            None if n == 1 => 1,
            None => placement::choose_set_drive_count(n, None, None)
                .map_err(|e| layout_err(e.to_string()))?,
        };
        if set_size == 0 || !n.is_multiple_of(set_size) {
            return Err(layout_err(format!(
                "{n} drives do not split into sets of {set_size}"
            )));
        }
        let sets: Vec<Vec<Uuid>> = (0..n / set_size)
            .map(|_| (0..set_size).map(|_| Uuid::new_v4()).collect())
            .collect();
        let formats =
            drive::build_formats(deployment, &sets).map_err(|e| layout_err(e.to_string()))?;
        for (d, f) in drives.iter().zip(formats) {
            let mut f = f;
            // A pool added to a deployment takes its distribution.
            f.xl.distribution_algo = algo.format_name().to_owned();
            drive::save_format(d.as_ref(), &f, false).await?;
            d.set_id(f.this_id());
        }
        tracing::info!(%deployment, pool, drives = n, set_size, "formatted fresh drives");
        return Ok(set_size);
    };
    if reference.drive_count() != n {
        return Err(layout_err(format!(
            "the drives were formatted for {} drives, {n} given",
            reference.drive_count()
        )));
    }
    let set_size = reference.xl.sets.first().map_or(0, Vec::len);
    if set_size == 0 || reference.xl.sets.iter().any(|s| s.len() != set_size) {
        return Err(layout_err("format.json has uneven sets".into()));
    }
    if want_set_size.is_some_and(|s| s != set_size) {
        return Err(layout_err(format!(
            "the drives were formatted in sets of {set_size}"
        )));
    }
    for (i, (d, f)) in drives.iter().zip(&formats.found).enumerate() {
        let expected = drive::DrivePosition {
            set: i / set_size,
            disk: i % set_size,
        };
        match f {
            Some(f) => {
                drive::check_format(&reference, f, Some(expected))
                    .map_err(|e| layout_err(format!("{}: {e}", d.label())))?;
                d.set_id(f.this_id());
            }
            None => {
                // A replaced drive: give it its slot's format.
                let mut f = reference.clone();
                f.xl.this = reference.xl.sets[expected.set][expected.disk].clone();
                drive::save_format(d.as_ref(), &f, false).await?;
                d.set_id(f.this_id());
                tracing::warn!(drive = %d.label(), "formatted a replaced drive; heal it");
            }
        }
    }
    Ok(set_size)
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
                    let next = tokio::select! {
                        item = layer.next_heal_request() => Some(item),
                        _ = tokio::time::sleep_until(deadline) => None,
                    };
                    let Some(req) = next else {
                        break;
                    };
                    let r = layer.heal_object(&req.bucket, &req.key, req.version).await;
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
