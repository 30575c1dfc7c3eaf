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
//! [`ObjectLayer`]'s work is split by job: `open.rs` opens and formats
//! pools, `pools.rs` picks the pool and set of a key, `buckets.rs`,
//! `objects.rs` and [`multipart`] serve the S3 operations, `heal.rs` holds
//! the heal queue and the scanner, `heal_seq.rs` heals of a bucket or
//! prefix on demand, [`scan_speed`] the pace every heal keeps to, and
//! [`list`] the listings; each
//! [`ErasureSet`] does the per-object work ([`set`]), reading through the
//! read cache (`cache.rs`) and handing out [`Chunk`]s (`chunk.rs`).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use object::layer::{GetOptions, ObjectLayer, PutOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let dirs: Vec<_> = (1..=4).map(|i| dir.path().join(format!("d{i}"))).collect();
//! let layer = ObjectLayer::open_dirs(&dirs, Default::default()).await?;
//! layer.make_bucket("photos").await?;
//! let body = b"hello, erasure-coded world".to_vec();
//! let info = layer
//!     .put_object("photos", "greeting.txt", &mut &body[..], &PutOptions::default())
//!     .await?;
//! assert_eq!(info.etag, hex::encode(md5x::digest(&body)));
//! let mut out = Vec::new();
//! layer.get_object("photos", "greeting.txt", &GetOptions::default(), &mut out).await?;
//! assert_eq!(out, body);
//! # Ok::<(), object::layer::Error>(())
//! # }).unwrap();
//! ```

mod buckets;
mod cache;
mod chunk;
pub mod error;
mod heal;
mod heal_seq;
mod heal_status;
mod join;
mod journal;
pub mod list;
pub mod lock;
pub mod multipart;
pub mod names;
mod objects;
mod open;
mod pools;
mod put_queue;
pub mod quota;
pub mod scan_speed;
pub mod set;
mod sysconfig;
pub mod types;
pub mod worm;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drive::{Drive, LocalDriveConfig};
use placement::DistributionAlgo;
pub use placement::StorageClassConfig;
use uuid::Uuid;

pub use cache::{ReadCache, ReadCacheStats};
pub use chunk::{Chunk, ChunkSink, WriteSink};
pub use drive::pipe::{Pipe, PipePool};
pub use error::{Error, Result};
pub use heal::{HealRequest, ScanOptions, ScanProgress, ScannerHandle};
pub use heal_seq::{
    HealDrive, HealItem, HealItemKind, HealScope, HealSequence,
    UNCONSUMED_ITEMS as HEAL_ITEMS_WAITING,
};
pub use heal_status::{DriveHeal, HealStatus};
pub use journal::JournalStats;
pub use list::{ListOptions, ListResult, ListVersionsResult, ListedEncryption, ListedObject};
pub use lock::{LocalLocker, LockGuard, Locker};
pub use multipart::{PartEtag, PartOptions, UploadInfo, UploadedPart};
pub use objects::OpenObject;
pub use scan_speed::{ScanRate, ScanSpeed};
pub use set::ErasureSet;
pub use sysconfig::{MAX_CONFIG_BYTES, MAX_CONFIG_ENTRIES};
pub use types::*;

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
    /// Deadline and failure threshold of every drive opened by
    /// [`ObjectLayer::open_dirs`] (each is wrapped in a
    /// [`drive::DeadlineDrive`]); [`drive::DeadlineConfig::default`] when
    /// `None`.
    pub deadline: Option<drive::DeadlineConfig>,
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

/// Bucket configuration documents read so far: (bucket, kind) -> document.
type ConfigCache = HashMap<(String, BucketConfig), Option<Vec<u8>>>;

/// Told of every bucket change this layer makes, after it is on the
/// drives and before the call that made it returns (see
/// [`ObjectLayer::with_bucket_hook`]).
pub type BucketHook = Arc<
    dyn Fn(String, BucketChange) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

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
    /// Buckets' usage as counted for their quotas.
    usage: Mutex<HashMap<String, Arc<quota::Usage>>>,
    /// Objects a read found damaged, waiting for the healer (bounded: when
    /// full, the next full pass finds them anyway).
    heal_tx: tokio::sync::mpsc::Sender<HealRequest>,
    heal_rx: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<HealRequest>>,
    /// The read cache every set reads through, if any.
    read_cache: Option<Arc<ReadCache>>,
    /// Told of bucket changes (a cluster orders them and tells the other
    /// nodes' layers).
    bucket_hook: Option<HookSlot>,
    /// Counts [`forget_bucket`](Self::forget_bucket) calls: a value read
    /// from the drives is cached only if no forget happened while it was
    /// read (it may be older than the change the forget announced).
    bucket_gen: std::sync::atomic::AtomicU64,
    /// Writes that missed drives, until they are healed.
    journal: Arc<journal::Journal>,
    /// What healing has done, for status reports.
    heal_track: heal_status::HealTrack,
    /// Buckets found to exist, kept only with a bucket hook (see
    /// `check_bucket_exists`).
    known_buckets: Mutex<std::collections::HashSet<String>>,
    /// Called when another layer announces a change of the documents
    /// under `.minio.sys/config/` ([`watch_config`](Self::watch_config)).
    config_watchers: Mutex<Vec<ConfigWatcher>>,
    /// The scanner's pace, which heals of every kind keep to.
    scan_rate: Arc<scan_speed::ScanRate>,
}

/// A function told that configuration documents changed elsewhere; the
/// change counts as seen once its future is done.
#[derive(Clone)]
pub struct ConfigWatcher(
    pub  Arc<
        dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync,
    >,
);

impl std::fmt::Debug for ConfigWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConfigWatcher")
    }
}

/// The bucket hook, shown by its presence only.
struct HookSlot(BucketHook);

impl std::fmt::Debug for HookSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BucketHook")
    }
}

impl ObjectLayer {
    /// Replaces the lock service (the cluster's, later).
    pub fn with_locker(mut self, locker: Arc<dyn Locker>) -> Self {
        self.locker = locker;
        self
    }

    /// Calls `hook` after every bucket change (creation, deletion,
    /// versioning, configuration) this layer makes, and waits for it
    /// before the call returns: where several layers serve the same drives
    /// (the nodes of a cluster), the hook tells the others, which drop what
    /// they cached of the bucket ([`forget_bucket`](Self::forget_bucket)).
    pub fn with_bucket_hook(mut self, hook: BucketHook) -> Self {
        self.bucket_hook = Some(HookSlot(hook));
        self
    }

    /// Drops what this layer cached of `bucket` (its versioning state,
    /// configuration documents and existence): another layer over the same
    /// drives changed them.
    pub fn forget_bucket(&self, bucket: &str) {
        self.bucket_gen
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(bucket);
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(b, _), _| b != bucket);
        self.known_buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(bucket);
    }

    /// The lock service this layer takes its namespace locks from (the
    /// cluster's, or this process's): background work that must run on
    /// one node at a time takes a lock of its own here.
    pub fn locker(&self) -> &Arc<dyn Locker> {
        &self.locker
    }

    /// Drops what this layer cached of every bucket.
    pub fn forget_buckets(&self) {
        self.bucket_gen
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.versioning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.configs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.known_buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Calls `watcher` on every [`config_changed`](Self::config_changed):
    /// when another layer serving the same drives announced a change of
    /// the documents under `.minio.sys/config/`.
    pub fn watch_config(&self, watcher: ConfigWatcher) {
        self.config_watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(watcher);
    }

    /// Tells every watcher that the documents under `.minio.sys/config/`
    /// changed (a cluster calls this as it applies another node's
    /// announcement, or after it may have missed some), and waits for them.
    /// The layer's own settings there (the scanner's speed) are read again
    /// first.
    pub async fn config_changed(&self) {
        if let Err(e) = self.load_scan_speed().await {
            tracing::warn!("reading the scanner speed after another node's change: {e}");
        }
        let watchers = self
            .config_watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for w in watchers {
            (w.0)().await;
        }
    }

    /// Tells the other layers serving the same drives (through the bucket
    /// hook) that documents under `.minio.sys/config/` changed, and waits
    /// as a bucket change waits: their watchers run before this returns.
    pub async fn announce_config_change(&self) {
        self.announce(drive::format::META_VOLUME, BucketChange::Iam)
            .await;
    }

    /// Drops the read cache's blocks of the versions whose data directory
    /// is `data_dir`, in whichever set: another layer over the same drives
    /// (another node of the cluster) is removing that directory, and the
    /// blocks this layer cached of it would otherwise hold memory, and hold
    /// their place against newer parts, until they are evicted.
    pub fn forget_data_dir(&self, data_dir: &[u8; 16]) {
        if let Some(c) = &self.read_cache {
            c.forget(
                0..u32::try_from(self.sets.len()).unwrap_or(u32::MAX),
                data_dir,
            );
        }
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
}
