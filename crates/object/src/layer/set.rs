//! One erasure set: PUT, GET, HEAD, DELETE and heal of objects whose shards
//! live on the set's drives, in MinIO's on-disk format.
//!
//! Layout on every drive of the set, as MinIO writes it:
//! `<bucket>/<key>/xl.meta` holds every version of the object (and, for
//! small objects, this drive's shard inline), `<bucket>/<key>/<data-dir>/part.N`
//! holds this drive's shard of part N as bitrot frames
//! (`[HighwayHash-256][shard block]` per erasure block).
//!
//! Durability (the fsync policy): a PUT writes its shard files under
//! `.minio.sys/tmp/<uuid>/`, `fdatasync`s each ([`drive::ShardWriter::finish`]),
//! renames the data directory into place (the destination parent is
//! `fsync`ed) and then replaces `xl.meta` atomically and durably
//! ([`drive::Drive::write_all`]: temp file, `fdatasync`, rename, parent
//! `fsync`). Only after a write quorum of drives has done all of that is the
//! PUT acknowledged, so an acknowledged object survives `kill -9` and power
//! loss on a quorum of drives. A crash before that leaves only files under
//! `.minio.sys/tmp`, which [`ErasureSet::clean_tmp`] removes at start.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bitrot::{Bitrot, HASH_LEN};
use bytes::Bytes;
use drive::format::{META_VOLUME, TMP_VOLUME};
use drive::{ALIGN, AlignedBuf, BufferPool, Drive, DriveError, ShardFile, align_up};
use ec_simd::ReedSolomon;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OnceCell, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use uuid::Uuid;

use super::LOCK_TIMEOUT;
use super::cache::{PartId, ReadCache};
use super::error::{Error, Result};
use super::join::join_all;
use super::lock::{LockGuard, Locker};
use super::names::object_dir;
use super::put_queue::{PutQueue, Room};
use super::types::*;
use crate::xlmeta::{
    DeleteMarker, ErasureParams, META_CONTENT_TYPE, META_ETAG, META_INLINE_DATA, ObjectVersion,
    Version, VersionKind, XlMeta,
};

/// Erasure block size: MinIO's `blockSizeV2`.
pub const BLOCK_SIZE: usize = 1 << 20;
/// A shard of at most this many bytes is stored inline in `xl.meta`
/// (MinIO's `smallFileThreshold`); an eighth of it in versioned buckets.
pub const INLINE_SHARD_LIMIT: u64 = 128 << 10;
/// Largest single PUT (S3's limit for one request).
pub const MAX_OBJECT_SIZE: u64 = 5 << 40;
/// Largest `xl.meta` read from a drive.
pub const MAX_XL_META: u64 = 32 << 20;
/// Erasure blocks whose shard reads a GET keeps in flight beyond the one
/// it is sending, while its reads wait for the disk. While the caches serve
/// them at once, it reads none ahead: each record is then read, hashed and
/// sent while it is still in the core's cache (1.05x-1.16x the MiB per
/// server CPU-second of reading 2 ahead, 16 MiB objects at c=8 on the
/// 2-vCPU bench machine); reading ahead from the disk keeps a single cold
/// stream 1.1x faster.
const READ_AHEAD_BLOCKS: usize = 2;
/// Record buffers out at once per buffer size (beyond it reads allocate).
const MAX_READ_BUFS: usize = 1024;
/// Record buffers kept for reuse per buffer size (PUTs take theirs from the
/// same pool). Eight 16 MiB PUTs hold about 200 at once: with 32 kept, most
/// of the rest were freed and allocated (and zeroed) again as the load
/// moved; 160 cut the server CPU per byte by 1.06x-1.16x for about 50 MiB
/// more kept at rest (201 MiB after the load against 149, MinIO 270).
const IDLE_READ_BUFS: usize = 160;
/// Buffer sizes pooled per set (objects of unusual block sizes allocate).
const MAX_READ_POOLS: usize = 4;
/// Shard record bytes that streamed PUTs may have queued for or being
/// written to each drive of a set, all uploads together: a bound on their
/// memory however many upload at once (each upload also holds the block it
/// is reading). Room comes back in batches (`put_queue.rs`), so uploads
/// waiting for it resume together and hash their blocks in the MD5 lanes
/// together: eight 16 MiB uploads to a 2+2 set on the 2-vCPU bench machine
/// took 1.23x-1.26x less CPU per byte with 16 MiB than unbounded, and peaked
/// at 110 MiB instead of 190 (8 MiB: 1.04x-1.14x less CPU per byte, but
/// 0.89x-1.01x the throughput).
const PUT_QUEUE_BYTES_PER_DRIVE: usize = 16 << 20;
/// Shard blocks queued per drive writer (back-pressure).
const WRITE_QUEUE: usize = 4;
/// The `v` field: the writer's release, as a Unix time.
pub(crate) const WRITTEN_BY: u64 = 0;
/// Name of the metadata file of an object.
pub const XL_META: &str = "xl.meta";
/// Total metadata bytes (keys and values) accepted on a PUT (S3: 2 KiB of
/// user metadata; standard headers need a little more).
const MAX_METADATA_BYTES: usize = 8 << 10;

/// A shard record on its way to a drive writer, with its room in the
/// set's PUT queue (given back once it is written).
type Queued = (AlignedBuf, Room);

/// Nanoseconds since the Unix epoch, now.
pub(crate) fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Bytes of one shard of a part of `size` bytes: full blocks contribute a
/// full shard each, the last block `ceil(rest / k)`.
pub(crate) fn shard_data_len(size: u64, k: usize) -> u64 {
    let b = BLOCK_SIZE as u64;
    let shard = b.div_ceil(k as u64);
    (size / b) * shard + (size % b).div_ceil(k as u64)
}

/// The largest inline shard: MinIO's inline block (128 KiB), an eighth of
/// it for objects of versioned buckets.
pub(crate) fn inline_limit(versioned: bool) -> u64 {
    if versioned {
        INLINE_SHARD_LIMIT / 8
    } else {
        INLINE_SHARD_LIMIT
    }
}

/// The largest object stored inline on `k` data shards. MinIO's rule
/// (`storageclass.ShouldInline` on `Erasure.ShardFileSize`) inlines an
/// object whose shard data, `shard_data_len(size, k)`, is at most `limit`
/// bytes: with many data shards that includes objects of more than one
/// block.
pub(crate) fn max_inline_size(k: usize, limit: u64) -> u64 {
    // shard_data_len(f * BLOCK + r) = f * shard + ceil(r / k) for r < BLOCK,
    // and `rem * k < BLOCK` because `rem < shard = ceil(BLOCK / k)`.
    let shard = (BLOCK_SIZE as u64).div_ceil(k as u64);
    (limit / shard) * BLOCK_SIZE as u64 + (limit % shard) * k as u64
}

/// Takes the object's write lock when one is to be taken here.
async fn take_lock(lock: Option<(&dyn Locker, &str)>) -> Result<Option<LockGuard>> {
    match lock {
        Some((l, resource)) => Ok(Some(l.write(resource, LOCK_TIMEOUT).await?)),
        None => Ok(None),
    }
}

/// The erasure coder of an object: Reed-Solomon, or none at all for sets
/// without parity (a single drive: MinIO's `xl-single`, EC 1+0, and any
/// `EC:0` storage class), where the shards are the data.
#[derive(Debug, Clone)]
pub(crate) enum Coder {
    Rs(ReedSolomon),
    NoParity(usize),
}

impl Coder {
    pub(crate) fn data_shards(&self) -> usize {
        match self {
            Coder::Rs(rs) => rs.data_shards(),
            Coder::NoParity(k) => *k,
        }
    }

    fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<()> {
        match self {
            Coder::Rs(rs) => rs
                .encode(data, parity)
                .map_err(|e| Error::Internal(format!("encode: {e}"))),
            Coder::NoParity(_) => Ok(()),
        }
    }

    fn reconstruct_data(&self, shards: &mut [Vec<u8>], present: &[bool]) -> Result<()> {
        match self {
            Coder::Rs(rs) => rs
                .reconstruct_data(shards, present)
                .map_err(|e| Error::Internal(format!("reconstruct: {e}"))),
            // Unreachable: without parity, k intact shards are the data.
            Coder::NoParity(_) => Err(Error::Internal("no parity to rebuild from".into())),
        }
    }
}

/// What a heal writes besides metadata: the version, the temp directory of
/// rebuilt shard files, and rebuilt inline records per drive.
type HealData<'a> = (&'a ObjectVersion<'static>, &'a str, &'a [Option<Vec<u8>>]);

/// An object version agreed by a read quorum of drives.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub version: Version<'static>,
    /// Per drive of the set: its copy of the metadata agrees (and its shard
    /// index, 1-based, for objects).
    pub agree: Vec<Option<usize>>,
    /// Whether it is the latest agreed version.
    pub is_latest: bool,
    /// Per drive: the whole decoded xl.meta (for inline data and rewrites).
    pub metas: Vec<Option<XlMeta<'static>>>,
}

/// A set of drives that hold objects together.
#[derive(Debug)]
pub struct ErasureSet {
    pub(crate) drives: Vec<Arc<dyn Drive>>,
    default_parity: usize,
    coders: Mutex<HashMap<(usize, usize), Coder>>,
    pub(crate) bitrot: Bitrot,
    read_pools: Mutex<ReadPools>,
    /// The shard records that streamed PUTs may have queued for or being
    /// written to this set's drives, all uploads together.
    put_queue: Arc<PutQueue>,
    /// The layer's read cache, if any.
    cache: Option<SetCache>,
}

/// The layer's read cache as one set uses it: with the set's index in the
/// layer, which tells its blocks from the other sets'.
#[derive(Debug, Clone)]
struct SetCache {
    cache: Arc<ReadCache>,
    set: u32,
}

impl SetCache {
    /// Drops the cached blocks of the versions whose data directory is
    /// `data_dir` ([`remove_data_dir`] is removing it).
    fn forget(&self, data_dir: &[u8; 16]) {
        self.cache.forget(self.set, data_dir);
    }

    /// The cache's name for part `part` (of `size` bytes) of `ov`, read
    /// as `k` data shards of blocks of `block_size`.
    fn part(
        &self,
        ov: &ObjectVersion<'_>,
        part: u32,
        size: u64,
        k: usize,
        block_size: u64,
    ) -> PartId {
        PartId {
            set: self.set,
            data_dir: ov.data_dir,
            mod_time: ov.mod_time,
            part,
            size,
            data_shards: k as u32,
            block_size,
        }
    }
}

/// What reading the metadata of one object on every drive gave.
pub(crate) struct Metas {
    pub metas: Vec<Option<XlMeta<'static>>>,
    /// Drives that answered "no such object".
    pub not_found: usize,
    /// Drives that failed otherwise.
    pub errors: usize,
}

impl ErasureSet {
    /// A set over `drives` (in set order) whose objects get `default_parity`
    /// parity shards unless a PUT asks otherwise.
    pub fn new(drives: Vec<Arc<dyn Drive>>, default_parity: usize) -> Result<Self> {
        let n = drives.len();
        if n == 0 || default_parity > n / 2 {
            return Err(Error::Layout(format!(
                "parity {default_parity} is not valid for a set of {n} drives"
            )));
        }
        Ok(ErasureSet {
            drives,
            default_parity,
            coders: Mutex::new(HashMap::new()),
            bitrot: Bitrot::minio(),
            read_pools: Mutex::new(ReadPools::default()),
            put_queue: PutQueue::new(n.saturating_mul(PUT_QUEUE_BYTES_PER_DRIVE)),
            cache: None,
        })
    }

    /// The same set reading through `cache` (shared by the layer's sets;
    /// `index` tells this set's blocks from the others').
    pub(crate) fn with_read_cache(mut self, cache: Arc<ReadCache>, index: u32) -> Self {
        self.cache = Some(SetCache { cache, set: index });
        self
    }

    /// The same set with a PUT queue of `bytes_per_drive` per drive instead
    /// of [`PUT_QUEUE_BYTES_PER_DRIVE`] (an upload's block always fits: a
    /// queue smaller than one takes one block at a time).
    pub fn with_put_queue(mut self, bytes_per_drive: usize) -> Self {
        self.put_queue = PutQueue::new(self.drives.len().saturating_mul(bytes_per_drive));
        self
    }

    /// The set's drives, in set order.
    pub fn drives(&self) -> &[Arc<dyn Drive>] {
        &self.drives
    }

    /// Default parity shards.
    pub fn default_parity(&self) -> usize {
        self.default_parity
    }

    pub(crate) fn coder(&self, k: usize, m: usize) -> Result<Coder> {
        let mut c = self.coders.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(rs) = c.get(&(k, m)) {
            return Ok(rs.clone());
        }
        let rs = if m == 0 {
            Coder::NoParity(k)
        } else {
            Coder::Rs(ReedSolomon::new(k, m).map_err(|e| Error::Internal(format!("coder: {e}")))?)
        };
        c.insert((k, m), rs.clone());
        Ok(rs)
    }

    /// Write quorum for `k` data and `m` parity shards.
    pub fn write_quorum(k: usize, m: usize) -> usize {
        if k == m { k + 1 } else { k }
    }

    /// Reads and decodes `xl.meta` of `bucket`/`dir` on every drive.
    pub(crate) async fn read_metas(&self, bucket: &str, dir: &str) -> Metas {
        let path = format!("{dir}/{XL_META}");
        let reads = self
            .drives
            .iter()
            .map(|d| d.read_all(bucket, &path, MAX_XL_META))
            .collect();
        let mut out = Metas {
            metas: vec![None; self.drives.len()],
            not_found: 0,
            errors: 0,
        };
        for (i, r) in join_all(reads).await.into_iter().enumerate() {
            let Some(r) = r else {
                out.errors += 1;
                continue;
            };
            match r {
                Ok(bytes) => match XlMeta::decode(&bytes) {
                    Ok(m) => out.metas[i] = Some(m.into_owned()),
                    Err(e) => {
                        tracing::warn!(drive = %self.drives[i].label(), %dir, "corrupt xl.meta: {e}");
                        out.errors += 1;
                    }
                },
                Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => out.not_found += 1,
                Err(e) => {
                    tracing::debug!(drive = %self.drives[i].label(), %dir, "xl.meta: {e}");
                    out.errors += 1;
                }
            }
        }
        out
    }

    /// Picks the version a read quorum agrees on: `want` a specific one, or
    /// the latest.
    pub(crate) fn resolve(
        &self,
        bucket: &str,
        key: &str,
        metas: Metas,
        want: Option<VersionSel>,
    ) -> Result<Resolved> {
        let n = self.drives.len();
        // (version id, mod time, signature) -> drives holding it.
        let mut seen: BTreeMap<(i64, [u8; 16], [u8; 4]), Vec<usize>> = BTreeMap::new();
        for (i, m) in metas.metas.iter().enumerate() {
            let Some(m) = m else { continue };
            for e in m.versions() {
                let h = e.header();
                if let Some(w) = want
                    && h.version_id != w.bytes()
                {
                    continue;
                }
                seen.entry((h.mod_time, h.version_id, h.signature))
                    .or_default()
                    .push(i);
            }
        }
        // Latest first: the greatest mod time, then version id.
        let mut best_count = 0;
        let mut chosen = None;
        for ((mt, vid, sig), drives) in seen.iter().rev() {
            let quorum = self.version_quorum(&metas.metas, drives[0], vid, n);
            best_count = best_count.max(drives.len());
            if drives.len() >= quorum {
                chosen = Some(((*mt, *vid, *sig), drives.clone()));
                break;
            }
        }
        let Some(((_, vid, _), drives)) = chosen else {
            // No version agreed by a quorum. If enough drives answered,
            // the version does not exist in an agreed state (a write that
            // never reached its quorum is not an object); otherwise too few
            // drives could be asked.
            let quorum = n - self.default_parity;
            let answered = n - metas.errors;
            if answered >= quorum {
                return Err(match want {
                    Some(VersionSel::Id(u)) => Error::NoSuchVersion {
                        bucket: bucket.into(),
                        key: key.into(),
                        version: u.to_string(),
                    },
                    Some(VersionSel::Null) => Error::NoSuchVersion {
                        bucket: bucket.into(),
                        key: key.into(),
                        version: "null".into(),
                    },
                    None => Error::NoSuchKey {
                        bucket: bucket.into(),
                        key: key.into(),
                        delete_marker: false,
                    },
                });
            }
            return Err(Error::ReadQuorum {
                ok: best_count,
                needed: quorum,
            });
        };
        let first = drives[0];
        let meta0 = metas.metas[first]
            .as_ref()
            .ok_or_else(|| Error::Internal("agreed drive without metadata".into()))?;
        let entry = meta0
            .find(&vid)
            .ok_or_else(|| Error::Internal("agreed version missing".into()))?;
        let version = entry.version().clone().into_owned();
        let mut agree = vec![None; n];
        for &d in &drives {
            let idx = metas.metas[d]
                .as_ref()
                .and_then(|m| m.find(&vid))
                .and_then(|e| e.version().as_object().map(|o| o.erasure_index))
                .unwrap_or(0);
            agree[d] = Some(usize::try_from(idx).unwrap_or(0));
        }
        // Latest among all agreed versions (for a specific version request,
        // whether it is the newest agreed one on the drives).
        let is_latest = match want {
            None => true,
            Some(_) => {
                let newest = self.latest_agreed(&metas.metas);
                newest == Some(vid)
            }
        };
        Ok(Resolved {
            version,
            agree,
            is_latest,
            metas: metas.metas,
        })
    }

    /// Read quorum of one version: its data shards for objects, half the
    /// set for delete markers.
    fn version_quorum(
        &self,
        metas: &[Option<XlMeta<'static>>],
        drive: usize,
        vid: &[u8; 16],
        n: usize,
    ) -> usize {
        let k = metas[drive]
            .as_ref()
            .and_then(|m| m.find(vid))
            .and_then(|e| e.version().as_object().map(|o| o.erasure_m))
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k >= 1 && k <= n);
        k.unwrap_or((n / 2).max(1))
    }

    fn latest_agreed(&self, metas: &[Option<XlMeta<'static>>]) -> Option<[u8; 16]> {
        let n = self.drives.len();
        let mut seen: BTreeMap<(i64, [u8; 16], [u8; 4]), Vec<usize>> = BTreeMap::new();
        for (i, m) in metas.iter().enumerate() {
            for e in m.iter().flat_map(|m| m.versions()) {
                let h = e.header();
                seen.entry((h.mod_time, h.version_id, h.signature))
                    .or_default()
                    .push(i);
            }
        }
        for ((_, vid, _), drives) in seen.iter().rev() {
            if drives.len() >= self.version_quorum(metas, drives[0], vid, n) {
                return Some(*vid);
            }
        }
        None
    }

    /// HEAD of a version.
    pub async fn head(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<ObjectInfo> {
        let metas = self.read_metas(bucket, &object_dir(key)).await;
        let r = self.resolve(bucket, key, metas, version)?;
        let info = object_info(bucket, key, &r.version, r.is_latest);
        if info.delete_marker {
            if version.is_none() {
                return Err(Error::NoSuchKey {
                    bucket: bucket.into(),
                    key: key.into(),
                    delete_marker: true,
                });
            }
            return Err(Error::MethodNotAllowed);
        }
        Ok(info)
    }

    /// PUT: stores `body` as a new version of `bucket`/`key` (the null
    /// version unless `versioned`).
    ///
    /// The body is erasure-coded into the temp area first, with no lock
    /// held; `lock`, when given, is taken only for the commit (the
    /// read-modify-write of `xl.meta` and the rename of the data
    /// directory), so a slow upload never blocks readers of the object.
    /// Without `lock` the caller must hold the object's write lock.
    pub async fn put<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        body: &mut R,
        opts: &PutOptions,
        versioned: bool,
        lock: Option<(&dyn Locker, &str)>,
    ) -> Result<ObjectInfo> {
        let n = self.drives.len();
        let m = opts.parity.unwrap_or(self.default_parity);
        if m > n / 2 {
            return Err(Error::InvalidMetadata(format!(
                "parity {m} is not valid for a set of {n} drives"
            )));
        }
        let k = n - m;
        if let Some(size) = opts.size
            && size > MAX_OBJECT_SIZE
        {
            return Err(Error::EntityTooLarge {
                size,
                limit: MAX_OBJECT_SIZE,
            });
        }
        check_metadata(opts)?;
        let rs = self.coder(k, m)?;
        let dir = object_dir(key);
        let distribution = placement::hash_order(placement::distribution_key(bucket, key), n);
        let version_id = if versioned {
            *Uuid::new_v4().as_bytes()
        } else {
            [0; 16]
        };
        let data_dir = *Uuid::new_v4().as_bytes();
        let quorum = Self::write_quorum(k, m);
        let erasure = ErasureParams {
            data_blocks: k as u8,
            parity_blocks: m as u8,
            block_size: BLOCK_SIZE as i64,
            distribution: distribution.iter().map(|&d| d as u8).collect(),
        };

        // Inline or streamed: MinIO's rule on the object's size (see
        // `should_inline`). An unannounced size is found by reading up to
        // one byte past the largest inline object.
        let max_inline = max_inline_size(k, inline_limit(versioned));
        let mut prefix = Vec::new();
        if opts.size.is_none_or(|s| s <= max_inline) {
            // One byte more than announced (or than the largest inline
            // object) tells a body that runs long.
            let cap = opts.size.map_or(max_inline, |s| s.min(max_inline));
            prefix = vec![0u8; cap as usize + 1];
            let got = read_full(body, &mut prefix).await?;
            prefix.truncate(got);
            if got as u64 <= max_inline {
                let total = got as u64;
                check_size_of(opts.size, total)?;
                let etag = if opts.caller_etag {
                    String::new()
                } else {
                    hex::encode(md5x::digest(&prefix))
                };
                let shards = self.encode_inline(&rs, &prefix, k, m, &distribution)?;
                let mut ov = new_version(version_id, data_dir, total, erasure, opts, &etag);
                ov.set_sys(META_INLINE_DATA, b"true".to_vec());
                let info = object_info(bucket, key, &Version::object(ov.clone(), WRITTEN_BY), true);
                let _g = take_lock(lock).await?;
                self.commit(bucket, &dir, ov, Some(shards), None, quorum)
                    .await?;
                return Ok(info);
            }
        }

        // Streamed: shard files in the temp area, one writer task per drive.
        // The temp directory itself becomes the data directory (renamed to
        // `<key>/<data dir>` at commit): one directory to create and remove
        // per drive, not two.
        let tmp_id = Uuid::new_v4().to_string();
        let tmp_part = format!("{tmp_id}/part.1");
        let (total, etag, failed) = self
            .stream_to_tmp(
                &rs,
                (k, m),
                &distribution,
                &mut (&prefix[..]).chain(body),
                (opts.size, MAX_OBJECT_SIZE, !opts.caller_etag),
                (&tmp_id, &tmp_part),
                quorum,
            )
            .await?;
        let ov = new_version(version_id, data_dir, total, erasure, opts, &etag);
        let info = object_info(bucket, key, &Version::object(ov.clone(), WRITTEN_BY), true);
        let r = async {
            let _g = take_lock(lock).await?;
            self.commit(
                bucket,
                &dir,
                ov,
                None,
                Some((TMP_VOLUME, &tmp_id, &failed)),
                quorum,
            )
            .await
        }
        .await;
        self.remove_tmp(&tmp_id).await;
        r?;
        Ok(info)
    }

    /// The `k + m` inline payloads of a small object: per drive (in set
    /// order), the bitrot records of its shard of every block, back to
    /// back, exactly as a streamed shard file would hold them (MinIO keeps
    /// this stream in `xl.meta`).
    fn encode_inline(
        &self,
        rs: &Coder,
        data: &[u8],
        k: usize,
        m: usize,
        distribution: &[usize],
    ) -> Result<Vec<Vec<u8>>> {
        let n = k + m;
        let len = shard_data_len(data.len() as u64, k) as usize
            + data.len().div_ceil(BLOCK_SIZE) * HASH_LEN;
        let mut by_shard: Vec<Vec<u8>> = (0..n).map(|_| Vec::with_capacity(len)).collect();
        for block in data.chunks(BLOCK_SIZE) {
            let records = self.encode_block(rs, block, k, m)?;
            for (s, rec) in records.iter().enumerate() {
                by_shard[s].extend_from_slice(rec);
            }
        }
        let mut out = vec![Vec::new(); n];
        for (d, &s) in distribution.iter().enumerate() {
            out[d] = std::mem::take(&mut by_shard[s - 1]);
        }
        Ok(out)
    }

    /// Streams `body` through the erasure coder to `tmp_part` in the temp
    /// area of every drive, one writer task per drive fed by a bounded
    /// channel (one erasure block in flight per drive at most
    /// `WRITE_QUEUE` deep, and the records of all uploads to the set within
    /// its PUT queue). Returns the size, the hex MD5 and the drives
    /// that failed; fails (leaving nothing) below the write quorum, or if
    /// the body is not `size` bytes long when `size` is given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn stream_to_tmp<R: AsyncRead + Unpin + Send>(
        &self,
        rs: &Coder,
        (k, m): (usize, usize),
        distribution: &[usize],
        body: &mut R,
        (size, max, want_md5): (Option<u64>, u64, bool),
        (tmp_id, tmp_part): (&str, &str),
        quorum: usize,
    ) -> Result<(u64, String, Vec<bool>)> {
        let n = self.drives.len();
        let expected = size.and_then(|s| {
            bitrot::shard_file_size(shard_data_len(s, k), (BLOCK_SIZE as u64).div_ceil(k as u64))
        });
        let mut senders: Vec<Option<mpsc::Sender<Queued>>> = Vec::with_capacity(n);
        let mut tasks = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            let (tx, mut rx) = mpsc::channel::<Queued>(WRITE_QUEUE);
            let (drive, path) = (drive.clone(), tmp_part.to_owned());
            tasks.spawn(async move {
                let r: std::result::Result<u64, DriveError> = async {
                    let mut w = drive.create_file(TMP_VOLUME, &path, expected).await?;
                    // Whatever queued up while the last write ran goes in
                    // one (vectored) write.
                    let mut batch = Vec::with_capacity(WRITE_QUEUE);
                    let mut bufs = Vec::with_capacity(WRITE_QUEUE);
                    let mut rooms = Vec::with_capacity(WRITE_QUEUE);
                    while rx.recv_many(&mut batch, WRITE_QUEUE).await > 0 {
                        for (buf, room) in batch.drain(..) {
                            bufs.push(buf);
                            rooms.push(room);
                        }
                        // The written buffers go back to their pool, and
                        // their pages to the set's queue, here.
                        bufs = w.write_many(bufs).await?;
                        bufs.clear();
                        rooms.clear();
                    }
                    w.finish().await
                }
                .await;
                (d, r)
            });
            senders.push(Some(tx));
        }
        let fed = self
            .feed_writers(
                rs,
                (k, m),
                distribution,
                body,
                (size, max, want_md5),
                &mut senders,
                quorum,
            )
            .await;
        drop(senders);
        let (total, etag) = match fed {
            Ok(x) => x,
            Err(e) => {
                // Stop the writers (and wait for them to let go of their
                // files) before removing the temp directory.
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                self.remove_tmp(tmp_id).await;
                return Err(e);
            }
        };
        let mut done = vec![false; n];
        while let Some(r) = tasks.join_next().await {
            match r {
                Ok((d, Ok(_))) => done[d] = true,
                Ok((d, Err(e))) => {
                    tracing::warn!(drive = %self.drives[d].label(), "shard write failed: {e}");
                }
                Err(e) => tracing::warn!("shard writer task failed: {e}"),
            }
        }
        let failed: Vec<bool> = done.iter().map(|d| !d).collect();
        let ok = done.iter().filter(|d| **d).count();
        if ok < quorum {
            self.remove_tmp(tmp_id).await;
            return Err(Error::WriteQuorum { ok, needed: quorum });
        }
        Ok((total, etag, failed))
    }

    /// Reads `body` block by block, MD5s it, erasure-codes every block and
    /// hands each drive's record to its writer. Returns the size and the
    /// hex MD5.
    #[allow(clippy::too_many_arguments)]
    async fn feed_writers<R: AsyncRead + Unpin + Send>(
        &self,
        rs: &Coder,
        (k, m): (usize, usize),
        distribution: &[usize],
        body: &mut R,
        (size, max, want_md5): (Option<u64>, u64, bool),
        senders: &mut [Option<mpsc::Sender<Queued>>],
        quorum: usize,
    ) -> Result<(u64, String)> {
        // One hasher per upload from the process-wide hub: the 1 MiB blocks
        // of concurrent uploads are hashed together in the SIMD lanes.
        let mut md5 = want_md5.then(|| md5x::Md5Hub::global().hasher());
        let mut total = 0u64;
        let mut streams = RecordStreams::new(self, k, m);
        loop {
            let got = streams.read_block(body).await?;
            total += got as u64;
            if total > max || size.is_some_and(|s| total > s) {
                return Err(match size {
                    Some(s) if s <= max => Error::IncompleteBody {
                        expected: s,
                        got: total,
                    },
                    _ => Error::EntityTooLarge {
                        size: total,
                        limit: max,
                    },
                });
            }
            // A full block is the last one when it completes the announced
            // size (a body running long still fails at the next read,
            // before anything is committed).
            let mut out = streams
                .seal_block(self, rs, got, &mut md5, size == Some(total))
                .await?;
            // The block's records wait here until the set's queue has room
            // for all of them.
            let pages = |b: &AlignedBuf| b.len().div_ceil(ALIGN);
            let wanted: usize = distribution
                .iter()
                .enumerate()
                .filter(|(d, _)| senders[*d].is_some())
                .filter_map(|(_, &s)| out[s - 1].as_ref().map(pages))
                .sum();
            let mut room = self.put_queue.room(wanted).await;
            for (d, &s) in distribution.iter().enumerate() {
                let Some(tx) = &senders[d] else { continue };
                let Some(buf) = out[s - 1].take() else {
                    continue;
                };
                let share = room.split(pages(&buf));
                if tx.send((buf, share)).await.is_err() {
                    senders[d] = None;
                }
            }
            let alive = senders.iter().filter(|s| s.is_some()).count();
            if alive < quorum {
                return Err(Error::WriteQuorum {
                    ok: alive,
                    needed: quorum,
                });
            }
            if got < BLOCK_SIZE {
                break;
            }
        }
        check_size_of(size, total)?;
        Ok((
            total,
            md5.map(|h| hex::encode(h.finalize())).unwrap_or_default(),
        ))
    }

    /// Splits `block` into `k` data shards of `ceil(len / k)` bytes (the last
    /// zero-padded), computes `m` parity shards, and returns the `k + m`
    /// bitrot records `[hash][shard]`.
    pub(crate) fn encode_block(
        &self,
        rs: &Coder,
        block: &[u8],
        k: usize,
        m: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let sl = block.len().div_ceil(k);
        let mut records: Vec<Vec<u8>> = (0..k + m).map(|_| vec![0u8; HASH_LEN + sl]).collect();
        self.fill_records(rs, block, k, &mut records)?;
        Ok(records)
    }

    /// Writes the `k + m` records of `block` into `records` (each exactly
    /// `HASH_LEN + ceil(len / k)` bytes, any prior content): the data
    /// shards (the last zero-padded), the parity shards, then every hash.
    fn fill_records<R: std::ops::DerefMut<Target = [u8]>>(
        &self,
        rs: &Coder,
        block: &[u8],
        k: usize,
        records: &mut [R],
    ) -> Result<()> {
        let sl = block.len().div_ceil(k);
        for (j, rec) in records.iter_mut().take(k).enumerate() {
            let start = (j * sl).min(block.len());
            let n = shard_share(block.len(), sl, j);
            rec[HASH_LEN..HASH_LEN + n].copy_from_slice(&block[start..start + n]);
            rec[HASH_LEN + n..].fill(0);
        }
        self.seal_records(rs, k, records)
    }

    /// Given `k + m` records whose data shards (the first `k`, padded) are
    /// in place, computes the parity shards and then every record's hash.
    fn seal_records<R: std::ops::DerefMut<Target = [u8]>>(
        &self,
        rs: &Coder,
        k: usize,
        records: &mut [R],
    ) -> Result<()> {
        let sl = records[0].len() - HASH_LEN;
        if sl > 0 {
            let (data, parity) = records.split_at_mut(k);
            let d: Vec<&[u8]> = data.iter().map(|r| &r[HASH_LEN..]).collect();
            let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|r| &mut r[HASH_LEN..]).collect();
            rs.encode(&d, &mut p)?;
        }
        // The k + m shards hashed side by side, in the SIMD lanes.
        self.bitrot.seal_many(records);
        Ok(())
    }

    /// Commits a new version on every drive that has its data: moves the
    /// data directory into place (streamed objects) and rewrites `xl.meta`
    /// with the version added. Needs `quorum` successes; otherwise undoes
    /// what it did and fails.
    /// `tmp` is (volume, the data directory's path in it, failed drives).
    pub(crate) async fn commit(
        &self,
        bucket: &str,
        dir: &str,
        ov: ObjectVersion<'static>,
        inline: Option<Vec<Vec<u8>>>,
        tmp: Option<(&'static str, &str, &[bool])>,
        quorum: usize,
    ) -> Result<()> {
        let n = self.drives.len();
        let data_dir_s = Uuid::from_bytes(ov.data_dir).to_string();
        let mut set = JoinSet::new();
        for d in 0..n {
            if tmp.is_some_and(|(_, _, failed)| failed[d]) {
                continue;
            }
            let drive = self.drives[d].clone();
            let (bucket, dir) = (bucket.to_owned(), dir.to_owned());
            let mut ov = ov.clone();
            ov.erasure_index = i64::from(ov.erasure_dist[d]);
            let shard = inline.as_ref().map(|s| s[d].clone());
            let tmp_src = tmp.map(|(vol, src, _)| (vol, src.to_owned()));
            let dst = format!("{dir}/{data_dir_s}");
            set.spawn(async move {
                let r = commit_one(&*drive, &bucket, &dir, ov, shard, tmp_src, &dst).await;
                (d, r)
            });
        }
        let mut done = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((d, Ok(prev))) => done.push((d, prev)),
                Ok((d, Err(e))) => {
                    tracing::warn!(drive = %self.drives[d].label(), "commit failed: {e}");
                }
                Err(_) => {}
            }
        }
        if done.len() >= quorum {
            for (d, (_, old_dir)) in &done {
                if let Some(dd) = old_dir {
                    let drive = &*self.drives[*d];
                    let _ = remove_data_dir(drive, self.cache.as_ref(), bucket, dir, dd).await;
                }
            }
            return Ok(());
        }
        // Roll back: restore the previous xl.meta and drop the new data dir.
        for (d, (prev, _)) in &done {
            let drive = &self.drives[*d];
            let _ = match prev {
                Some(bytes) => {
                    drive
                        .write_all(bucket, &format!("{dir}/{XL_META}"), bytes.clone())
                        .await
                }
                None => {
                    drive
                        .delete(bucket, &format!("{dir}/{XL_META}"), false)
                        .await
                }
            };
            if tmp.is_some() {
                let _ = drive
                    .delete(bucket, &format!("{dir}/{data_dir_s}"), true)
                    .await;
            }
        }
        Err(Error::WriteQuorum {
            ok: done.len(),
            needed: quorum,
        })
    }

    pub(crate) async fn remove_tmp(&self, tmp_id: &str) {
        for d in &self.drives {
            let _ = d.delete(TMP_VOLUME, tmp_id, true).await;
        }
    }

    /// Removes what crashed writes left in `.minio.sys/tmp` (run at start,
    /// before serving).
    pub async fn clean_tmp(&self) -> usize {
        let mut removed = 0;
        for d in &self.drives {
            let Ok(entries) = d.list_dir(TMP_VOLUME, "", 100_000).await else {
                continue;
            };
            for e in entries {
                let name = e.trim_end_matches('/');
                if name == ".trash" || name.is_empty() {
                    continue;
                }
                if d.delete(TMP_VOLUME, name, true).await.is_ok() {
                    removed += 1;
                }
            }
            let _ = d.empty_trash(1_000_000).await;
        }
        removed
    }

    /// GET: writes the object's bytes (or the range) to `out`. Returns the
    /// object's info, and the drives that need healing.
    pub async fn get<W: AsyncWrite + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        opts: &GetOptions,
        out: &mut W,
    ) -> Result<(ObjectInfo, ReadReport)> {
        let (info, r) = self.open(bucket, key, opts.version_id).await?;
        let (offset, length) = match opts.range {
            None => (0, info.size),
            Some(range) => range.resolve(info.size).ok_or(Error::InvalidRange {
                offset: match range {
                    Range::From { offset, .. } => offset,
                    Range::Suffix(_) => 0,
                },
                length: 0,
                size: info.size,
            })?,
        };
        let report = self
            .read_resolved(bucket, key, &r, offset, length, out)
            .await?;
        Ok((info, report))
    }

    /// Resolves the version a read quorum agrees on, for reading it
    /// ([`read_resolved`](Self::read_resolved)) one or more times.
    pub(crate) async fn open(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<(ObjectInfo, Resolved)> {
        let dir = object_dir(key);
        let metas = self.read_metas(bucket, &dir).await;
        let r = self.resolve(bucket, key, metas, version)?;
        let info = object_info(bucket, key, &r.version, r.is_latest);
        if info.delete_marker {
            return Err(if version.is_none() {
                Error::NoSuchKey {
                    bucket: bucket.into(),
                    key: key.into(),
                    delete_marker: true,
                }
            } else {
                Error::MethodNotAllowed
            });
        }
        Ok((info, r))
    }

    /// Reads `offset..offset + length` of a resolved version into `out`.
    pub(crate) async fn read_resolved<W: AsyncWrite + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        r: &Resolved,
        offset: u64,
        length: u64,
        out: &mut W,
    ) -> Result<ReadReport> {
        let report = self
            .read_resolved_chunks(bucket, key, r, offset, length, &mut WriteSink(&mut *out))
            .await?;
        out.flush().await.map_err(Error::Output)?;
        Ok(report)
    }

    /// Reads `offset..offset + length` of a resolved version, handing the
    /// verified bytes to `sink` as slices of the buffers the shards were
    /// read into (no copy on the way when every data shard is healthy).
    pub(crate) async fn read_resolved_chunks<S: ChunkSink>(
        &self,
        bucket: &str,
        key: &str,
        r: &Resolved,
        offset: u64,
        length: u64,
        sink: &mut S,
    ) -> Result<ReadReport> {
        let dir = object_dir(key);
        let mut report = ReadReport::default();
        for (d, a) in r.agree.iter().enumerate() {
            if a.is_none() {
                report.bad_drives.push(d);
            }
        }
        if length > 0 {
            self.read_range(bucket, key, &dir, r, offset, length, sink, &mut report)
                .await?;
        }
        report.bad_drives.sort_unstable();
        report.bad_drives.dedup();
        Ok(report)
    }

    /// Bytes `offset..offset + length` of `r`'s version as slices of the
    /// read cache's blocks, without a copy, if every block they touch is
    /// cached; else `None`, with nothing counted (the caller then reads
    /// as usual). The blocks were verified when they went in, and a block
    /// is keyed by the version's data directory and modification time, so
    /// they are `r`'s bytes.
    pub(crate) fn cached_range(
        &self,
        r: &Resolved,
        offset: u64,
        length: u64,
    ) -> Option<Vec<Bytes>> {
        let c = self.cache.as_ref()?;
        let ov = r.version.as_object()?;
        let k = usize::try_from(ov.erasure_m).ok().filter(|&k| k > 0)?;
        let block_size = u64::try_from(ov.erasure_block_size)
            .ok()
            .filter(|&b| b > 0)?;
        if length == 0 || inline_of(ov) {
            return None;
        }
        let end = offset.checked_add(length)?;
        // Every part's size valid, and the range within them.
        let parts_end = (ov.part_sizes.iter())
            .map(|&s| u64::try_from(s).ok())
            .sum::<Option<u64>>()?;
        if parts_end < end {
            return None;
        }
        let spans: Vec<PartSpan> = part_spans(ov, offset, end).collect();
        // Per part touched: its name and its blocks touched.
        let want = spans
            .iter()
            .map(|p| {
                let part = c.part(ov, u32::try_from(p.number).ok()?, p.size, k, block_size);
                Some((part, p.blocks(block_size)))
            })
            .collect::<Option<Vec<_>>>()?;
        let blocks = c.cache.get_all(&want)?;
        let mut out = Vec::with_capacity(blocks.len());
        let mut blocks = blocks.into_iter();
        for (span, (_, bs)) in spans.iter().zip(&want) {
            for b in bs.clone() {
                let data = blocks.next()?;
                let blk_start = b * block_size;
                let (from, to) = span.in_block(blk_start, block_size.min(span.size - blk_start));
                out.push(data.get(from..to).map(|_| data.slice(from..to))?);
            }
        }
        Some(out)
    }

    /// The pool of record buffers of `bytes` (reads of shard records land
    /// in them; a buffer returns to its pool when the last slice of it
    /// handed to a sink is dropped).
    fn read_pool(&self, bytes: usize) -> Option<BufferPool> {
        let mut pools = self.read_pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.0.get(&bytes) {
            return Some(p.clone());
        }
        if pools.0.len() >= MAX_READ_POOLS {
            return None;
        }
        let pool = BufferPool::new(bytes, MAX_READ_BUFS, IDLE_READ_BUFS).ok()?;
        pools.0.insert(bytes, pool.clone());
        Some(pool)
    }

    #[allow(clippy::too_many_arguments)]
    async fn read_range<S: ChunkSink>(
        &self,
        bucket: &str,
        key: &str,
        dir: &str,
        r: &Resolved,
        offset: u64,
        length: u64,
        sink: &mut S,
        report: &mut ReadReport,
    ) -> Result<()> {
        let ov = r
            .version
            .as_object()
            .ok_or_else(|| Error::Internal("not an object".into()))?;
        let k = usize::try_from(ov.erasure_m).unwrap_or(0);
        let m = usize::try_from(ov.erasure_n).unwrap_or(0);
        let n = self.drives.len();
        if k == 0 || k + m != n {
            return Err(Error::Internal(format!(
                "object erasure {k}+{m} does not fit a set of {n} drives"
            )));
        }
        let block_size = u64::try_from(ov.erasure_block_size).unwrap_or(0);
        if block_size == 0 || block_size > 64 << 20 {
            return Err(Error::Internal("bad erasure block size".into()));
        }
        let rs = self.coder(k, m)?;
        // Which drive holds shard s (0-based), per the agreeing drives.
        let mut holder: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (d, a) in r.agree.iter().enumerate() {
            if let Some(idx) = a
                && (1..=n).contains(idx)
            {
                holder[idx - 1].push(d);
            }
        }
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let shard_size = block_size.div_ceil(k as u64) as usize;
        let inline = inline_of(ov);
        // Every record of a part fits a buffer of this size together with
        // the alignment slack before it (reads start on an ALIGN boundary).
        let pool = if inline {
            None
        } else {
            self.read_pool(align_up(HASH_LEN + shard_size) + ALIGN)
        };
        let mut bad = vec![false; n];
        let result = async {
            for span in part_spans(ov, offset, offset + length) {
                let (pi, pn, psize) = (span.index, span.number, span.size);
                let path: Arc<str> = format!("{dir}/{data_dir}/part.{pn}").into();
                let layout = bitrot::ShardLayout::new(shard_size, shard_data_len(psize, k))
                    .map_err(|e| Error::Internal(format!("layout: {e}")))?;
                let frame = bitrot::ShardFrame::new(layout, self.bitrot);
                let cache = match (&self.cache, u32::try_from(pn)) {
                    (Some(c), Ok(part)) if !inline => {
                        let part = c.part(ov, part, psize, k, block_size);
                        let admit = c.cache.touch(&part);
                        Some(CachedPart {
                            cache: &c.cache,
                            part,
                            admit,
                        })
                    }
                    _ => None,
                };
                let (b0, b1) = span.blocks(block_size).into_inner();
                let geometry = |b: u64| {
                    let blk_start = b * block_size;
                    let blk_len = (psize - blk_start).min(block_size) as usize;
                    (blk_start, blk_len, blk_len.div_ceil(k))
                };
                // Each drive's shard file of the part is opened at the first
                // record read from it, and read through that descriptor from
                // then on (an inline object has no shard files).
                let files: Option<ShardFiles> =
                    (!inline).then(|| (0..n).map(|_| OnceCell::new()).collect());
                let src = FetchSource {
                    bucket,
                    path: &path,
                    frame: &frame,
                    holder: &holder,
                    pool: pool.as_ref(),
                    piped: sink.wants_pipes(),
                    files: files.as_ref(),
                    cache: cache.as_ref(),
                };
                // Shard reads of the next blocks are in flight while the
                // current one is verified and sent, once a read had to wait
                // (`READ_AHEAD_BLOCKS`); none before, or after a block
                // whose reads all completed at once.
                let mut ahead: VecDeque<BlockFetch> = VecDeque::new();
                let mut next = b0;
                let mut depth = 0;
                loop {
                    while !inline && ahead.len() <= depth && next <= b1 {
                        ahead.push_back(self.fetch_block(&src, k, next, geometry(next).2, &bad));
                        next += 1;
                    }
                    let b = match ahead.front() {
                        Some(f) => f.block,
                        None if next <= b1 => next,
                        None => break,
                    };
                    let (blk_start, blk_len, sl) = geometry(b);
                    let fetched = ahead.pop_front();
                    if fetched.is_none() {
                        next += 1;
                    }
                    let (block, piece, at_once) = self
                        .finish_block(&rs, &src, r, fetched, b, sl, pi, &mut bad, inline)
                        .await
                        .map_err(|e| located(e, bucket, key, pn))?;
                    depth = if at_once { 0 } else { READ_AHEAD_BLOCKS };
                    let (from, to) = span.in_block(blk_start, blk_len as u64);
                    send_shards(sink, block, piece, from, to).await?;
                }
            }
            Ok(())
        }
        .await;
        for (d, b) in bad.iter().enumerate() {
            if *b {
                report.bad_drives.push(d);
            }
        }
        result
    }

    /// Starts the reads of block `b`'s first `k` shards that have a drive
    /// not known bad (data shards first); [`finish_block`](Self::finish_block)
    /// verifies them.
    fn fetch_block(
        &self,
        src: &FetchSource<'_>,
        k: usize,
        b: u64,
        sl: usize,
        bad: &[bool],
    ) -> BlockFetch {
        if let Some(c) = src.cache
            && let Some(data) = c.cache.get(&c.part, b)
        {
            return BlockFetch {
                block: b,
                reads: Vec::new(),
                cached: Some(data),
            };
        }
        let mut reads = Vec::with_capacity(k);
        for (s, holders) in src.holder.iter().enumerate() {
            if reads.len() == k {
                break;
            }
            let Some(&d) = holders.iter().find(|&&d| !bad[d]) else {
                continue;
            };
            let drive = self.drives[d].clone();
            let (bucket, path) = (src.bucket.to_owned(), Arc::clone(src.path));
            let (frame, pool, piped) = (*src.frame, src.pool.cloned(), src.piped);
            let files = src.files.map(Arc::clone);
            let task = tokio::spawn(async move {
                let rec = Record {
                    frame: &frame,
                    b,
                    sl,
                    piped,
                };
                let file = files.as_ref().map(|f| &f[d]);
                read_record(&*drive, &bucket, &path, rec, pool.as_ref(), file).await
            });
            reads.push((s, d, task));
        }
        BlockFetch {
            block: b,
            reads,
            cached: None,
        }
    }

    /// The `k` data shards of block `b`: from its fetch when every shard
    /// read came back and its records verify, hashed together
    /// ([`verify_records`]; reconstructing from parity if the fetch
    /// had to include parity), else read again shard by shard, trying
    /// every remaining drive ([`read_block`](Self::read_block)). With
    /// the length of each of those pieces and whether every read of the
    /// fetch completed without waiting. A block the fetch found in the read
    /// cache is its cached bytes, in one piece (the connection then sends
    /// whole blocks per write: over loopback a 1 MiB write costs the
    /// kernel a third less per byte than two of 512 KiB); a block read
    /// from the drives is added to the cache if the part is admitted.
    #[allow(clippy::too_many_arguments)]
    async fn finish_block(
        &self,
        rs: &Coder,
        src: &FetchSource<'_>,
        r: &Resolved,
        mut fetched: Option<BlockFetch>,
        b: u64,
        sl: usize,
        pi: usize,
        bad: &mut [bool],
        inline: bool,
    ) -> Result<(Vec<Chunk>, usize, bool)> {
        let k = rs.data_shards();
        if let Some(data) = fetched.as_mut().and_then(|f| f.cached.take()) {
            let whole = data.len();
            return Ok((vec![Chunk::from(data)], whole, true));
        }
        let (chunks, at_once) = self
            .verify_block(rs, src, r, fetched, b, sl, pi, bad, inline)
            .await?;
        // The copy is made only once the block is sure to go in.
        if let Some(c) = src.cache
            && c.admit
            && c.cache.wants(&c.part, k * sl)
            && let Some(data) = c
                .cache
                .block_bytes(chunks.iter().map(Chunk::as_slice), k * sl)
        {
            c.cache.insert(&c.part, b, data);
        }
        Ok((chunks, sl, at_once))
    }

    /// [`finish_block`](Self::finish_block) for a block read from the
    /// drives.
    #[allow(clippy::too_many_arguments)]
    async fn verify_block(
        &self,
        rs: &Coder,
        src: &FetchSource<'_>,
        r: &Resolved,
        fetched: Option<BlockFetch>,
        b: u64,
        sl: usize,
        pi: usize,
        bad: &mut [bool],
        inline: bool,
    ) -> Result<(Vec<Chunk>, bool)> {
        let n = self.drives.len();
        let k = rs.data_shards();
        if let Some(mut f) = fetched {
            let mut shards: Vec<Option<Chunk>> = (0..n).map(|_| None).collect();
            let mut from: Vec<Option<usize>> = vec![None; n];
            let mut all_at_once = true;
            for (s, d, task) in f.reads.drain(..) {
                let got = match task.await {
                    Ok(Ok((data, at_once))) if data.len() == sl => {
                        all_at_once &= at_once;
                        Ok(data)
                    }
                    Ok(Ok((data, _))) => {
                        Err(format!("record of {} bytes, expected {sl}", data.len()))
                    }
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(format!("read task: {e}")),
                };
                match got {
                    Ok(data) => {
                        shards[s] = Some(data);
                        from[s] = Some(d);
                    }
                    Err(e) => {
                        tracing::debug!(drive = %self.drives[d].label(), block = b, "shard read: {e}");
                        bad[d] = true;
                    }
                }
            }
            for (d, e) in verify_records(src.frame, b, &mut shards, &from) {
                tracing::debug!(drive = %self.drives[d].label(), block = b, "shard read: {e}");
                bad[d] = true;
            }
            let have = shards.iter().filter(|x| x.is_some()).count();
            if have == k {
                if shards[..k].iter().all(Option::is_some) {
                    return Ok((shards.into_iter().take(k).flatten().collect(), all_at_once));
                }
                let present: Vec<bool> = shards.iter().map(Option::is_some).collect();
                let mut bufs: Vec<Vec<u8>> = shards
                    .iter()
                    .map(|x| {
                        x.as_ref()
                            .map_or_else(|| vec![0u8; sl], |x| x.as_slice().to_vec())
                    })
                    .collect();
                rs.reconstruct_data(&mut bufs, &present)?;
                let chunks = bufs.into_iter().take(k).map(Chunk::from).collect();
                return Ok((chunks, false));
            }
        }
        let block = self
            .read_block(
                rs, src.bucket, src.path, r, src.holder, src.frame, b, sl, pi, bad, inline,
            )
            .await?;
        Ok((block.into_iter().take(k).map(Chunk::from).collect(), false))
    }

    /// Reads block `b` of a part: `k` intact shards (data shards first),
    /// verified; reconstructs missing data shards from parity. Returns the
    /// `k + m` shard buffers of `sl` bytes (data shards complete).
    #[allow(clippy::too_many_arguments)]
    async fn read_block(
        &self,
        rs: &Coder,
        bucket: &str,
        path: &str,
        r: &Resolved,
        holder: &[Vec<usize>],
        frame: &bitrot::ShardFrame,
        b: u64,
        sl: usize,
        _part_index: usize,
        bad: &mut [bool],
        inline: bool,
    ) -> Result<Vec<Vec<u8>>> {
        let n = self.drives.len();
        let k = rs.data_shards();
        let mut shards: Vec<Vec<u8>> = vec![Vec::new(); n];
        let mut present = vec![false; n];
        let mut have = 0;
        // Candidates in shard order: data shards first, then parity.
        let mut next_shard = 0;
        while have < k && next_shard < n {
            let want = k - have;
            let mut batch = Vec::new();
            while batch.len() < want && next_shard < n {
                let s = next_shard;
                next_shard += 1;
                if let Some(&d) = holder[s].iter().find(|&&d| !bad[d]) {
                    batch.push((s, d));
                }
            }
            if batch.is_empty() {
                break;
            }
            let results = if inline {
                batch
                    .iter()
                    .map(|&(s, d)| {
                        let rec = r.metas[d]
                            .as_ref()
                            .and_then(|m| {
                                m.inline_data(&r.version.version_id())
                                    .and_then(|p| inline_slice(p, b, frame))
                                    .map(<[u8]>::to_vec)
                            })
                            .ok_or(DriveError::FileNotFound);
                        (s, d, rec)
                    })
                    .collect::<Vec<_>>()
            } else {
                let rec_off = frame.layout().record_offset(b).unwrap_or(0);
                let rec_len = HASH_LEN + sl;
                let mut set = JoinSet::new();
                for &(s, d) in &batch {
                    let drive = self.drives[d].clone();
                    let (bucket, path) = (bucket.to_owned(), path.to_owned());
                    set.spawn(async move {
                        let r = async {
                            let buf = AlignedBuf::with_capacity(rec_len)?;
                            let (buf, got) = drive
                                .read_file_at(&bucket, &path, rec_off, rec_len, buf)
                                .await?;
                            if got != rec_len {
                                return Err(DriveError::OutOfRange {
                                    offset: rec_off,
                                    len: rec_len as u64,
                                    size: rec_off + got as u64,
                                });
                            }
                            Ok(buf.capacity_slice()[..rec_len].to_vec())
                        }
                        .await;
                        (s, d, r)
                    });
                }
                let mut v = Vec::new();
                while let Some(x) = set.join_next().await {
                    if let Ok(x) = x {
                        v.push(x);
                    }
                }
                v
            };
            for (s, d, rec) in results {
                let ok = match rec {
                    Ok(rec) => {
                        let data = frame.open(b, &rec).map(|x| x.to_vec()).ok();
                        match data {
                            Some(data) if data.len() == sl => {
                                shards[s] = data;
                                present[s] = true;
                                have += 1;
                                true
                            }
                            _ => false,
                        }
                    }
                    Err(e) => {
                        tracing::debug!(drive = %self.drives[d].label(), "shard read: {e}");
                        false
                    }
                };
                if !ok {
                    bad[d] = true;
                    // Another drive may hold the same shard index (never in
                    // a healthy set, but do not lose the chance).
                    if holder[s].iter().any(|&x| !bad[x]) {
                        next_shard = next_shard.min(s);
                    }
                }
            }
        }
        if have < k {
            return Err(Error::DataUnreadable {
                bucket: String::new(),
                key: String::new(),
                part: 0,
                block: b,
                intact: have,
                needed: k,
            });
        }
        if present[..k].iter().any(|p| !p) {
            for (s, sh) in shards.iter_mut().enumerate() {
                if !present[s] {
                    *sh = vec![0u8; sl];
                }
            }
            rs.reconstruct_data(&mut shards, &present)?;
        }
        Ok(shards)
    }

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
        let quorum = n / 2 + 1;
        if version.is_none() && versioning != Versioning::Unversioned {
            let vid = match versioning {
                Versioning::Enabled => Some(Uuid::new_v4()),
                _ => None,
            };
            let dm = DeleteMarker::new(vid.map_or([0; 16], |v| *v.as_bytes()), now_nanos());
            let mut set = JoinSet::new();
            for drive in &self.drives {
                let (drive, bucket, dir) = (drive.clone(), bucket.to_owned(), dir.clone());
                let dm = dm.clone();
                let cache = self.cache.clone();
                set.spawn(async move {
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
                });
            }
            let ok = join_count(&mut set).await;
            if ok < quorum {
                return Err(Error::WriteQuorum { ok, needed: quorum });
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
        let mut set = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            let Some(meta) = resolved.metas[d].clone() else {
                continue;
            };
            let (drive, bucket, dir) = (drive.clone(), bucket.to_owned(), dir.clone());
            let cache = self.cache.clone();
            set.spawn(async move {
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
            });
        }
        let ok = join_count(&mut set).await;
        if ok < quorum.min(resolved.agree.iter().flatten().count()) {
            return Err(Error::WriteQuorum { ok, needed: quorum });
        }
        Ok(DeleteResult {
            version_id: match sel {
                VersionSel::Null => None,
                VersionSel::Id(u) => Some(u),
            },
            delete_marker: is_dm,
        })
    }

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
            return Err(if version.is_none() {
                Error::NoSuchKey {
                    bucket: bucket.into(),
                    key: key.into(),
                    delete_marker: true,
                }
            } else {
                Error::MethodNotAllowed
            });
        }
        let vid = resolved.version.version_id();
        let apply = |v: &mut Version<'static>| {
            if let VersionKind::Object(o) = &mut v.kind {
                edit(o.meta_user.get_or_insert_with(crate::text::MetaMap::new));
            }
        };
        let mut updated = resolved.version.clone();
        apply(&mut updated);
        let quorum = self.drives.len() / 2 + 1;
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
        if ok < quorum {
            return Err(Error::WriteQuorum { ok, needed: quorum });
        }
        Ok(object_info(bucket, key, &updated, resolved.is_latest))
    }

    /// Heals one version of an object: every drive whose metadata disagrees
    /// or whose shards are missing or corrupt gets them rewritten from the
    /// intact ones. The caller holds the object's lock.
    ///
    /// Two passes, one erasure block in memory at a time: the first reads
    /// and verifies every shard record on every drive; the second, only if
    /// some drive needs shards, rebuilds them block by block from `k`
    /// intact shards and streams them to the temp area of each drive that
    /// needs them, which then gets the data directory and `xl.meta` like a
    /// PUT commits them.
    pub async fn heal(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<HealResult> {
        let dir = object_dir(key);
        let n = self.drives.len();
        let metas = self.read_metas(bucket, &dir).await;
        let r = self.resolve(bucket, key, metas, version)?;
        let mut need: Vec<bool> = r.agree.iter().map(Option::is_none).collect();
        let ov = match &r.version.kind {
            VersionKind::Object(o) => Some(o.clone()),
            _ => None,
        };
        let Some(ov) = ov else {
            // A delete marker: only metadata to copy.
            return self.heal_write(bucket, &dir, &r, &need, None).await;
        };
        let (k, m) = (
            usize::try_from(ov.erasure_m).unwrap_or(0),
            usize::try_from(ov.erasure_n).unwrap_or(0),
        );
        let block_size = u64::try_from(ov.erasure_block_size).unwrap_or(0);
        if k == 0 || k + m != n || block_size == 0 || block_size > 64 << 20 {
            return Err(Error::Internal(format!(
                "{bucket}/{key}: erasure {k}+{m}, block {block_size}, does not fit a set of {n}"
            )));
        }
        let rs = self.coder(k, m)?;
        // Drive -> shard index (0-based) it should hold, from the layout.
        let shard_of = |d: usize| usize::from(ov.erasure_dist.get(d).copied().unwrap_or(0));
        let mut holder: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (d, a) in r.agree.iter().enumerate() {
            if let Some(idx) = a
                && (1..=n).contains(idx)
            {
                holder[idx - 1].push(d);
            }
        }
        let inline = ov.inline_data();
        let vid = r.version.version_id();
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let shard_size = block_size.div_ceil(k as u64) as usize;
        let frames = |psize: u64| -> Result<bitrot::ShardFrame> {
            let layout = bitrot::ShardLayout::new(shard_size, shard_data_len(psize, k))
                .map_err(|e| Error::Internal(format!("layout: {e}")))?;
            Ok(bitrot::ShardFrame::new(layout, self.bitrot))
        };
        let parts: Vec<(i64, u64)> = ov
            .part_numbers
            .iter()
            .zip(&ov.part_sizes)
            .map(|(&pn, &ps)| (pn, u64::try_from(ps).unwrap_or(0)))
            .collect();

        // Pass 1: verify every record of every agreeing drive.
        #[allow(clippy::needless_range_loop)] // `need[d]` is set inside
        for d in 0..n {
            if need[d] {
                continue;
            }
            'parts: for &(pn, psize) in &parts {
                let frame = frames(psize)?;
                let path = format!("{dir}/{data_dir}/part.{pn}");
                let blocks = psize.div_ceil(block_size);
                if inline {
                    let payload = r.metas[d].as_ref().and_then(|mt| mt.inline_data(&vid));
                    if !payload.is_some_and(|p| inline_intact(p, &frame)) {
                        need[d] = true;
                    }
                    continue;
                }
                for b in 0..blocks {
                    let blk_len = (psize - b * block_size).min(block_size) as usize;
                    let len = HASH_LEN + blk_len.div_ceil(k);
                    let off = frame.layout().record_offset(b).unwrap_or(0);
                    let ok = match AlignedBuf::with_capacity(len) {
                        Ok(buf) => match self.drives[d]
                            .read_file_at(bucket, &path, off, len, buf)
                            .await
                        {
                            Ok((buf, got)) => {
                                got == len && frame.open(b, &buf.capacity_slice()[..len]).is_ok()
                            }
                            Err(_) => false,
                        },
                        Err(_) => false,
                    };
                    if !ok {
                        need[d] = true;
                        break 'parts;
                    }
                }
                // A longer file than the layout says is damage too.
                if let Ok(st) = self.drives[d].stat_file(bucket, &path).await
                    && st.size != frame.layout().file_size()
                {
                    need[d] = true;
                    break 'parts;
                }
            }
        }
        if !need.iter().any(|x| *x) {
            return Ok(HealResult::default());
        }
        let targets: Vec<usize> = (0..n).filter(|&d| need[d] && shard_of(d) >= 1).collect();

        // Pass 2: rebuild the targets' shards, streamed to their temp areas.
        let mut bad = need.clone();
        let tmp_id = Uuid::new_v4().to_string();
        let mut inline_recs: Vec<Option<Vec<u8>>> = vec![None; n];
        let mut failed = vec![false; n];
        for &(pn, psize) in &parts {
            let frame = frames(psize)?;
            let path = format!("{dir}/{data_dir}/part.{pn}");
            let mut writers: Vec<Option<Box<dyn drive::ShardWriter>>> = Vec::with_capacity(n);
            #[allow(clippy::needless_range_loop)] // `failed[d]` is set inside
            for d in 0..n {
                let w = if !inline && targets.contains(&d) && !failed[d] {
                    let tpath = format!("{tmp_id}/{data_dir}/part.{pn}");
                    match self.drives[d]
                        .create_file(TMP_VOLUME, &tpath, Some(frame.layout().file_size()))
                        .await
                    {
                        Ok(w) => Some(w),
                        Err(e) => {
                            tracing::warn!(drive = %self.drives[d].label(), "heal: {e}");
                            failed[d] = true;
                            None
                        }
                    }
                } else {
                    None
                };
                writers.push(w);
            }
            let blocks = psize.div_ceil(block_size);
            for b in 0..blocks {
                let blk_len = (psize - b * block_size).min(block_size) as usize;
                let sl = blk_len.div_ceil(k);
                let mut shards = self
                    .read_block(
                        &rs, bucket, &path, &r, &holder, &frame, b, sl, 0, &mut bad, inline,
                    )
                    .await
                    .map_err(|e| located(e, bucket, key, pn))?;
                // read_block completed the data shards; compute parity.
                {
                    let (data, parity) = shards.split_at_mut(k);
                    for p in parity.iter_mut() {
                        p.clear();
                        p.resize(sl, 0);
                    }
                    if sl > 0 {
                        let d: Vec<&[u8]> = data.iter().map(|x| &x[..]).collect();
                        let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|x| &mut x[..]).collect();
                        rs.encode(&d, &mut p)?;
                    }
                }
                for &d in &targets {
                    let s = shard_of(d) - 1;
                    let mut rec = Vec::with_capacity(HASH_LEN + sl);
                    if sl > 0 {
                        rec.extend_from_slice(&self.bitrot.sum(&shards[s]));
                        rec.extend_from_slice(&shards[s]);
                    }
                    if inline {
                        inline_recs[d]
                            .get_or_insert_with(Vec::new)
                            .extend_from_slice(&rec);
                    } else if let Some(w) = writers[d].as_mut() {
                        let r2 = async {
                            let mut buf = AlignedBuf::with_capacity(rec.len().max(1))?;
                            buf.extend_from_slice(&rec);
                            w.write(buf).await.map(|_| ())
                        }
                        .await;
                        if let Err(e) = r2 {
                            tracing::warn!(drive = %self.drives[d].label(), "heal write: {e}");
                            failed[d] = true;
                            writers[d] = None;
                        }
                    }
                }
            }
            for (d, w) in writers.into_iter().enumerate() {
                if let Some(w) = w
                    && let Err(e) = w.finish().await
                {
                    tracing::warn!(drive = %self.drives[d].label(), "heal finish: {e}");
                    failed[d] = true;
                }
            }
        }
        let mut ok_need = need.clone();
        for d in 0..n {
            if failed[d] {
                ok_need[d] = false;
            }
        }
        let res = self
            .heal_write(
                bucket,
                &dir,
                &r,
                &ok_need,
                Some((&ov, &tmp_id, &inline_recs)),
            )
            .await;
        for &d in &targets {
            let _ = self.drives[d].delete(TMP_VOLUME, &tmp_id, true).await;
        }
        res
    }

    /// Commits healed data (moved from the temp area, or inline records)
    /// and the agreed version into `xl.meta` on every drive in `need`.
    async fn heal_write(
        &self,
        bucket: &str,
        dir: &str,
        r: &Resolved,
        need: &[bool],
        data: Option<HealData<'_>>,
    ) -> Result<HealResult> {
        let vid = r.version.version_id();
        let path = format!("{dir}/{XL_META}");
        let mut healed = Vec::new();
        for (d, drive) in self.drives.iter().enumerate() {
            if !need[d] {
                continue;
            }
            let res: Result<()> = async {
                if drive.stat_volume(bucket).await.is_err() {
                    match drive.make_volume(bucket).await {
                        Ok(()) | Err(DriveError::VolumeExists) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                let mut meta = match drive.read_all(bucket, &path, MAX_XL_META).await {
                    Ok(b) => XlMeta::decode(&b)
                        .map(XlMeta::into_owned)
                        .unwrap_or_else(|_| XlMeta::new()),
                    Err(_) => XlMeta::new(),
                };
                let _ = meta.remove_version(&vid);
                meta.remove_inline_data(&vid);
                let mut version = r.version.clone();
                if let Some((ov, tmp_id, inline_recs)) = data {
                    let idx = i64::from(ov.erasure_dist.get(d).copied().unwrap_or(0));
                    if let Some(o) = version.as_object_mut() {
                        o.erasure_index = idx;
                    }
                    if ov.inline_data() {
                        let rec = inline_recs[d].clone().unwrap_or_default();
                        meta.set_inline_data(&vid, rec);
                    } else {
                        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
                        let dst = format!("{dir}/{data_dir}");
                        let _ = drive.delete(bucket, &dst, true).await;
                        if !ov.part_numbers.is_empty() && ov.size > 0 {
                            drive
                                .rename(TMP_VOLUME, &format!("{tmp_id}/{data_dir}"), bucket, &dst)
                                .await?;
                        }
                    }
                }
                meta.add_version(version)?;
                drive.write_all(bucket, &path, meta.encode()?).await?;
                Ok(())
            }
            .await;
            match res {
                Ok(()) => healed.push(d),
                Err(e) => tracing::warn!(drive = %drive.label(), "heal of {bucket}/{dir}: {e}"),
            }
        }
        Ok(HealResult {
            healed_drives: healed,
        })
    }

    /// Makes sure the meta volumes exist on every reachable drive.
    pub async fn ensure_meta_volumes(&self) {
        for d in &self.drives {
            for v in [META_VOLUME, TMP_VOLUME] {
                let _ = d.make_volume(v).await;
            }
        }
    }
}

fn inline_of(ov: &ObjectVersion<'_>) -> bool {
    ov.inline_data()
}

/// Record `b` of an inline payload (the drive's whole shard stream, as a
/// shard file would hold it), or `None` if the payload does not have the
/// layout's length (truncated or padded: damage).
fn inline_slice<'a>(payload: &'a [u8], b: u64, frame: &bitrot::ShardFrame) -> Option<&'a [u8]> {
    let layout = frame.layout();
    if payload.len() as u64 != layout.file_size() {
        return None;
    }
    let off = usize::try_from(layout.record_offset(b)?).ok()?;
    payload.get(off..off + layout.record_len(b)?)
}

/// Whether every record of an inline payload is intact.
fn inline_intact(payload: &[u8], frame: &bitrot::ShardFrame) -> bool {
    (0..frame.layout().blocks())
        .all(|b| inline_slice(payload, b, frame).is_some_and(|rec| frame.open(b, rec).is_ok()))
        && payload.len() as u64 == frame.layout().file_size()
}

pub(crate) async fn commit_one(
    drive: &dyn Drive,
    bucket: &str,
    dir: &str,
    ov: ObjectVersion<'static>,
    shard: Option<Vec<u8>>,
    tmp_src: Option<(&'static str, String)>,
    dst: &str,
) -> Result<(Option<Vec<u8>>, Option<[u8; 16]>)> {
    let path = format!("{dir}/{XL_META}");
    let prev = match drive.read_all(bucket, &path, MAX_XL_META).await {
        Ok(b) => Some(b),
        Err(DriveError::FileNotFound) => None,
        Err(e) => return Err(e.into()),
    };
    let mut meta = match &prev {
        Some(b) => XlMeta::decode(b)?.into_owned(),
        None => XlMeta::new(),
    };
    let vid = ov.version_id;
    let new_dir = ov.data_dir;
    match shard {
        Some(s) => meta.set_inline_data(&vid, s),
        // A streamed version replacing an inline one (the null version)
        // must not leave the old payload behind.
        None => {
            meta.remove_inline_data(&vid);
        }
    }
    let replaced = meta.add_version(Version::object(ov, WRITTEN_BY))?;
    if let Some((vol, src)) = tmp_src {
        drive.rename(vol, &src, bucket, dst).await?;
    }
    drive.write_all(bucket, &path, meta.encode()?).await?;
    // The version replaced (an overwritten null version): its data dir is
    // removed by the caller once the commit reached its quorum.
    let old_dir = replaced
        .as_ref()
        .and_then(|old| old.as_object())
        .filter(|o| !o.inline_data() && meta.shared_data_dir_count(&vid, &o.data_dir) == 0)
        .map(|o| o.data_dir)
        .filter(|dd| *dd != new_dir);
    Ok((prev, old_dir))
}

/// Removes version data directory `data_dir` of object directory `dir`
/// from one drive, its blocks dropped from the read cache first. Every
/// removal of a version's data goes through here, so the cache never
/// outlives the data; each drive's removal asks (a cheap no-op after the
/// first), as drives out of step may name different directories.
async fn remove_data_dir(
    drive: &dyn Drive,
    cache: Option<&SetCache>,
    bucket: &str,
    dir: &str,
    data_dir: &[u8; 16],
) -> std::result::Result<(), DriveError> {
    if let Some(c) = cache {
        c.forget(data_dir);
    }
    let path = format!("{dir}/{}", Uuid::from_bytes(*data_dir));
    drive.delete(bucket, &path, true).await
}

async fn join_count(set: &mut JoinSet<Result<()>>) -> usize {
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => tracing::debug!("drive update failed: {e}"),
            Err(_) => {}
        }
    }
    ok
}

/// A part that bytes `offset..end` of a version touch ([`part_spans`]).
struct PartSpan {
    /// Its index among the version's parts.
    index: usize,
    /// Its part number.
    number: i64,
    /// Its size in bytes.
    size: u64,
    /// The bytes `lo..hi` of the part wanted (never empty).
    lo: u64,
    hi: u64,
}

impl PartSpan {
    /// Indexes of the blocks of `block_size` the wanted bytes touch.
    fn blocks(&self, block_size: u64) -> std::ops::RangeInclusive<u64> {
        self.lo / block_size..=(self.hi - 1) / block_size
    }

    /// The wanted bytes of the block at `blk_start` of the part, `blk_len`
    /// bytes long, as a range within the block.
    fn in_block(&self, blk_start: u64, blk_len: u64) -> (usize, usize) {
        let from = self.lo.max(blk_start) - blk_start;
        let to = self.hi.min(blk_start + blk_len) - blk_start;
        (from as usize, to as usize)
    }
}

/// The non-empty parts of `ov` that bytes `offset..end` of it touch, in
/// order (a size that is not a valid length counts as 0).
fn part_spans<'a>(
    ov: &'a ObjectVersion<'_>,
    offset: u64,
    end: u64,
) -> impl Iterator<Item = PartSpan> + 'a {
    let mut part_start = 0u64;
    (ov.part_numbers.iter().zip(&ov.part_sizes).enumerate()).filter_map(
        move |(index, (&number, &size))| {
            let size = u64::try_from(size).unwrap_or(0);
            let (p0, p1) = (part_start, part_start + size);
            part_start = p1;
            (p1 > offset && p0 < end && size > 0).then(|| PartSpan {
                index,
                number,
                size,
                lo: offset.max(p0) - p0,
                hi: end.min(p1) - p0,
            })
        },
    )
}

/// Hands bytes `from..to` of a block, given in pieces of `sl` bytes (its
/// `k` data shards, or one piece: a cached block), to `sink`: the pieces
/// touched, narrowed to the range, no copy.
async fn send_shards<S: ChunkSink>(
    sink: &mut S,
    shards: Vec<Chunk>,
    sl: usize,
    from: usize,
    to: usize,
) -> Result<()> {
    if sl == 0 || from >= to {
        return Ok(());
    }
    let (first, last) = (from / sl, (to - 1) / sl);
    if last >= shards.len() {
        return Err(Error::Internal("block shorter than its range".into()));
    }
    for (s, shard) in shards.into_iter().enumerate() {
        if s < first || s > last {
            continue;
        }
        let lo = from.max(s * sl) - s * sl;
        let hi = to.min((s + 1) * sl) - s * sl;
        sink.put(shard.narrow(lo..hi))
            .await
            .map_err(Error::Output)?;
    }
    Ok(())
}

/// Verified bytes of a read, in a buffer of their own: a sink may change
/// them in place (decrypt them) before handing them on, or hand them on as
/// [`Bytes`] without a copy.
pub struct Chunk {
    buf: ChunkBuf,
    range: std::ops::Range<usize>,
    /// The same bytes as `range`, in a pipe (a read served from the page
    /// cache for a sink that [wants pipes](ChunkSink::wants_pipes)); dropped
    /// as soon as the chunk is narrowed or changed.
    pipe: Option<drive::pipe::Pipe>,
}

enum ChunkBuf {
    /// A record buffer a shard was read into.
    Record(AlignedBuf),
    /// Bytes rebuilt from parity, or inline data.
    Owned(Vec<u8>),
    /// Shared bytes (changing them in place copies them first).
    Shared(Bytes),
}

impl Chunk {
    fn record(buf: AlignedBuf, range: std::ops::Range<usize>) -> Chunk {
        Chunk {
            buf: ChunkBuf::Record(buf),
            range,
            pipe: None,
        }
    }

    /// Whether the chunk's bytes are shared `Bytes` (made `From<Bytes>`;
    /// the read path makes such chunks only of the read cache's blocks):
    /// holding them costs no memory the chunk's read allocated.
    pub fn is_shared(&self) -> bool {
        matches!(self.buf, ChunkBuf::Shared(_))
    }

    /// Whether the chunk's bytes are in a pipe too.
    pub fn has_pipe(&self) -> bool {
        self.pipe.is_some()
    }

    /// Bytes in the chunk.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether the chunk is empty.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.buf {
            ChunkBuf::Record(b) => &b[self.range.clone()],
            ChunkBuf::Owned(v) => &v[self.range.clone()],
            ChunkBuf::Shared(b) => &b[self.range.clone()],
        }
    }

    /// The bytes, to change in place (shared bytes are copied first).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.pipe = None;
        if let ChunkBuf::Shared(b) = &self.buf {
            let v = b[self.range.clone()].to_vec();
            self.range = 0..v.len();
            self.buf = ChunkBuf::Owned(v);
        }
        match &mut self.buf {
            ChunkBuf::Record(b) => &mut b[self.range.clone()],
            ChunkBuf::Owned(v) => &mut v[self.range.clone()],
            ChunkBuf::Shared(_) => &mut [],
        }
    }

    /// The chunk's bytes with the `before` bytes that precede them in the
    /// buffer they were read into (a record's hash before its data);
    /// `None` if the chunk is not a record buffer or starts too early.
    fn with_prefix(&self, before: usize) -> Option<&[u8]> {
        match &self.buf {
            ChunkBuf::Record(b) => {
                let start = self.range.start.checked_sub(before)?;
                b.get(start..self.range.end)
            }
            _ => None,
        }
    }

    /// `range` of this chunk's bytes (clamped to them).
    pub fn narrow(mut self, range: std::ops::Range<usize>) -> Chunk {
        let len = self.len();
        let (lo, hi) = (range.start.min(len), range.end.min(len));
        let base = self.range.start;
        if (lo, hi) != (0, len) {
            self.pipe = None;
        }
        self.range = base + lo..base + hi.max(lo);
        self
    }

    /// The bytes as [`Bytes`], without a copy, and the pipe that holds the
    /// same bytes, if any.
    pub fn into_bytes_and_pipe(mut self) -> (Bytes, Option<drive::pipe::Pipe>) {
        let pipe = self.pipe.take().filter(|p| p.len() == self.len());
        (self.into_bytes(), pipe)
    }

    /// The bytes as [`Bytes`], without a copy.
    pub fn into_bytes(self) -> Bytes {
        let range = self.range;
        match self.buf {
            ChunkBuf::Record(b) => Bytes::from_owner(RecordBuf(b)).slice(range),
            ChunkBuf::Owned(v) => Bytes::from(v).slice(range),
            ChunkBuf::Shared(b) => b.slice(range),
        }
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(v: Vec<u8>) -> Chunk {
        Chunk {
            range: 0..v.len(),
            buf: ChunkBuf::Owned(v),
            pipe: None,
        }
    }
}

impl From<Bytes> for Chunk {
    fn from(b: Bytes) -> Chunk {
        Chunk {
            range: 0..b.len(),
            buf: ChunkBuf::Shared(b),
            pipe: None,
        }
    }
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk")
            .field("len", &self.len())
            .field("pipe", &self.pipe.is_some())
            .finish()
    }
}

/// Where a read's verified bytes go, in order, as [`Chunk`]s: the buffers
/// the shards were read into, handed over without a copy. A sink error
/// ends the read with [`Error::Output`].
pub trait ChunkSink: Send {
    /// Takes the next bytes of the range.
    fn put(&mut self, chunk: Chunk) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Whether chunks read from the page cache should carry their bytes in
    /// a pipe as well ([`Chunk::into_bytes_and_pipe`]), for a sink that can
    /// `splice` them to a socket. Not by default: a pipe costs two more
    /// system calls per record (`cachestat`, `splice`).
    fn wants_pipes(&self) -> bool {
        false
    }
}

/// A [`ChunkSink`] over an `AsyncWrite` (which copies each chunk).
pub struct WriteSink<'a, W>(pub &'a mut W);

impl<W: AsyncWrite + Unpin + Send> ChunkSink for WriteSink<'_, W> {
    async fn put(&mut self, chunk: Chunk) -> std::io::Result<()> {
        self.0.write_all(chunk.as_slice()).await
    }
}

/// Pools of record buffers by size (a set sees one or two block sizes).
#[derive(Default)]
struct ReadPools(HashMap<usize, BufferPool>);

impl std::fmt::Debug for ReadPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// Per drive of the set, its shard file of a part once opened for reads
/// ([`Drive::open_shard_file`]; `None` inside: the drive reads by path).
type ShardFiles = Arc<[OnceCell<Option<Arc<dyn ShardFile>>>]>;

/// What the shard reads of one part share.
struct FetchSource<'a> {
    bucket: &'a str,
    path: &'a Arc<str>,
    frame: &'a bitrot::ShardFrame,
    holder: &'a [Vec<usize>],
    pool: Option<&'a BufferPool>,
    /// Whether records read from the page cache come with a pipe.
    piped: bool,
    /// The shard files opened so far (`None` for an inline object).
    files: Option<&'a ShardFiles>,
    /// The read cache and the part as it knows it (`None` for an inline
    /// object, or without a cache).
    cache: Option<&'a CachedPart<'a>>,
}

/// A part being read through the read cache.
struct CachedPart<'a> {
    cache: &'a ReadCache,
    part: PartId,
    /// Whether blocks read from the drives are offered to the cache (the
    /// part's read, counted, made it a candidate).
    admit: bool,
}

/// A shard read in flight: the shard data (not yet verified) and whether
/// its read completed without waiting, or why not.
type ShardRead = JoinHandle<std::result::Result<(Chunk, bool), String>>;

/// The shard reads of one block in flight: (shard, drive, task).
struct BlockFetch {
    block: u64,
    reads: Vec<(usize, usize, ShardRead)>,
    /// The block's data shards from the read cache (then nothing is read).
    cached: Option<Bytes>,
}

impl Drop for BlockFetch {
    fn drop(&mut self) {
        // A read that failed or was abandoned: its buffers go back now.
        for (_, _, task) in &self.reads {
            task.abort();
        }
    }
}

/// A record buffer as the owner of the [`Bytes`] slices made of it.
struct RecordBuf(AlignedBuf);

impl AsRef<[u8]> for RecordBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Which record of a shard file to read, and how.
struct Record<'a> {
    frame: &'a bitrot::ShardFrame,
    /// The block.
    b: u64,
    /// Bytes of shard data behind the record's hash.
    sl: usize,
    /// Whether to ask for a pipe holding the shard data too.
    piped: bool,
}

/// Reads a record of a shard file, not yet verified: the records of a
/// block are verified together by [`verify_records`], which hashes them in
/// the SIMD lanes side by side. The read starts on an [`ALIGN`] boundary
/// so that an `O_DIRECT` read lands in place; the shard data is returned
/// as a slice of the buffer (the record's hash just before it), with
/// whether the read was complete when first polled (served by the page
/// cache on this thread). A piped read starts at the record itself, and
/// when the page cache served it, the chunk carries a pipe holding the
/// same shard data. Other reads go through `file`, the drive's shard file
/// opened at the part's first read from it, where there is one and the
/// drive opens files ([`Drive::open_shard_file`]), else by path.
async fn read_record(
    drive: &dyn Drive,
    bucket: &str,
    path: &str,
    rec: Record<'_>,
    pool: Option<&BufferPool>,
    file: Option<&OnceCell<Option<Arc<dyn ShardFile>>>>,
) -> std::result::Result<(Chunk, bool), String> {
    let Record {
        frame,
        b,
        sl,
        piped,
    } = rec;
    let rec_off = frame
        .layout()
        .record_offset(b)
        .ok_or_else(|| format!("block {b} is past the shard file's end"))?;
    let rec_len = HASH_LEN + sl;
    let read = async {
        // The drive's shard file, opened at its first record (piped reads
        // go by path).
        let opened = match file {
            Some(cell) if !piped => cell
                .get_or_try_init(|| drive.open_shard_file(bucket, path))
                .await
                .map_err(|e| e.to_string())?
                .clone(),
            _ => None,
        };
        // Reads through the open file (buffered) and piped reads start at
        // the record itself (each record's read begins where the last one
        // ended, and no page is read twice); reads by path start on an
        // ALIGN boundary, for O_DIRECT.
        let (skip, span) = if piped || opened.is_some() {
            (0, rec_len)
        } else {
            let skip = (rec_off % ALIGN as u64) as usize;
            (skip, align_up(skip + rec_len))
        };
        let buf = match pool.and_then(BufferPool::try_get) {
            Some(Ok(buf)) if buf.capacity() >= span => buf,
            _ => AlignedBuf::with_capacity(span).map_err(|e| e.to_string())?,
        };
        let at = rec_off - skip as u64;
        let read = if piped {
            drive.read_file_at_piped(bucket, path, at, span, buf).await
        } else if let Some(f) = opened {
            f.read_at(at, span, buf)
                .await
                .map(|(buf, got)| (buf, got, None))
        } else {
            drive
                .read_file_at(bucket, path, at, span, buf)
                .await
                .map(|(buf, got)| (buf, got, None))
        };
        read.map(|(buf, got, pipe)| (buf, got, pipe, skip))
            .map_err(|e| e.to_string())
    };
    let (read, at_once) = ready_at_once(read).await;
    let (buf, got, pipe, skip) = read?;
    if got < skip + rec_len {
        return Err(format!(
            "short shard file: {} bytes at {rec_off}, expected {rec_len}",
            got.saturating_sub(skip)
        ));
    }
    let mut chunk = Chunk::record(buf, skip + HASH_LEN..skip + rec_len);
    // The pipe holds the whole record as read: its hash goes, its data
    // stays with the chunk.
    if let Some(mut pipe) = pipe
        && pipe.len() == rec_len
        && pipe.skip(HASH_LEN).is_ok()
    {
        chunk.pipe = Some(pipe);
    }
    Ok((chunk, at_once))
}

/// Verifies the records of block `b` read by [`read_record`] (`shards[s]`
/// read from drive `drives[s]`), hashed together ([`ShardFrame::open_many`]):
/// a record that fails is dropped from `shards`, and its drive is returned
/// with the reason.
///
/// [`ShardFrame::open_many`]: bitrot::ShardFrame::open_many
fn verify_records(
    frame: &bitrot::ShardFrame,
    b: u64,
    shards: &mut [Option<Chunk>],
    drives: &[Option<usize>],
) -> Vec<(usize, String)> {
    let held: Vec<usize> = (0..shards.len()).filter(|&s| shards[s].is_some()).collect();
    // Every chunk `read_record` makes has its hash before it; one without
    // (never made) would be an empty record, reported as truncated.
    let records: Vec<&[u8]> = held
        .iter()
        .map(|&s| {
            shards[s]
                .as_ref()
                .and_then(|c| c.with_prefix(HASH_LEN))
                .unwrap_or_default()
        })
        .collect();
    let mut out: Vec<std::result::Result<&[u8], bitrot::FrameError>> =
        records.iter().map(|_| Ok(&[][..])).collect();
    frame.open_many(b, &records, &mut out);
    let failed: Vec<(usize, String)> = held
        .iter()
        .zip(out)
        .filter_map(|(&s, result)| Some((s, result.err()?.to_string())))
        .collect();
    failed
        .into_iter()
        .filter_map(|(s, e)| {
            shards[s] = None;
            Some((drives[s]?, e))
        })
        .collect()
}

/// Awaits `fut`, with whether it was ready when first polled.
async fn ready_at_once<F: Future>(fut: F) -> (F::Output, bool) {
    let mut fut = std::pin::pin!(fut);
    let mut polls = 0u32;
    let out = std::future::poll_fn(|cx| {
        polls += 1;
        fut.as_mut().poll(cx)
    })
    .await;
    (out, polls == 1)
}

/// `e` with the object it concerns filled in, when it is a
/// [`Error::DataUnreadable`] raised by the block readers (which know only
/// the block).
fn located(e: Error, bucket: &str, key: &str, part: i64) -> Error {
    match e {
        Error::DataUnreadable {
            block,
            intact,
            needed,
            ..
        } => Error::DataUnreadable {
            bucket: bucket.into(),
            key: key.into(),
            part,
            block,
            intact,
            needed,
        },
        e => e,
    }
}

pub(crate) async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let n = r.read(&mut buf[got..]).await.map_err(Error::Body)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

/// How many of a `len`-byte block's bytes data shard `j` holds when the
/// shards are `sl` bytes long: `sl`, less for the last one(s), whose rest
/// is zero padding.
fn shard_share(len: usize, sl: usize, j: usize) -> usize {
    len.saturating_sub(j * sl).min(sl)
}

/// The shard files of one streamed upload as they are built, so that the
/// drive writers get only whole [`ALIGN`] blocks (written with `O_DIRECT`
/// straight from these buffers, without a copy) until the files' last
/// bytes.
///
/// A shard file is a run of records `[hash][shard]` of `HASH_LEN + 2^k`
/// bytes, not a multiple of `ALIGN`. Per shard, the records of a block are
/// encoded in place into an aligned buffer right behind the file's bytes
/// not handed out yet (the carry, under one block, the same length on every
/// shard since all shard files have the same layout); the whole blocks go
/// to the writer and the carry is copied to the front of the next buffer.
/// Every byte of a shard file is the one `encode_block` gives: the on-disk
/// format does not change.
struct RecordStreams {
    pool: Option<BufferPool>,
    /// Capacity of every buffer: a carry plus one record of a full block.
    cap: usize,
    /// Per shard (`0..k + m`, not drive order): the buffer whose first
    /// `carry` bytes are carried.
    bufs: Vec<Option<AlignedBuf>>,
    /// Per shard: the carry while its buffer is out (between
    /// [`ship`](Self::ship) and the next [`prepare`](Self::prepare)).
    carried: Vec<Vec<u8>>,
    carry: usize,
    /// Data shards, and the length of a full block's shards.
    k: usize,
    sl: usize,
}

impl RecordStreams {
    fn new(set: &ErasureSet, k: usize, m: usize) -> Self {
        // The size class of a GET's record buffers of the same layout, so
        // that both share one pool.
        let cap = align_up(HASH_LEN + BLOCK_SIZE.div_ceil(k)) + ALIGN;
        RecordStreams {
            pool: set.read_pool(cap),
            cap,
            bufs: (0..k + m).map(|_| None).collect(),
            carried: vec![Vec::new(); k + m],
            carry: 0,
            k,
            sl: BLOCK_SIZE.div_ceil(k),
        }
    }

    /// An empty buffer with room for records ending at `end`, from the
    /// pool while it has one.
    fn buffer(&self, end: usize) -> Result<AlignedBuf> {
        if let Some(Ok(mut buf)) = self.pool.as_ref().and_then(BufferPool::try_get)
            && buf.capacity() >= end
        {
            buf.clear();
            return Ok(buf);
        }
        AlignedBuf::with_capacity(end.max(self.cap)).map_err(Error::Drive)
    }

    /// Encodes `block` (at most [`BLOCK_SIZE`]) and returns, per shard, what
    /// its writer gets now: the whole `ALIGN` blocks written so far, or,
    /// when `last`, everything (the file's end, any length). `None` when
    /// there is not a whole block yet.
    fn encode(
        &mut self,
        set: &ErasureSet,
        rs: &Coder,
        block: &[u8],
        last: bool,
    ) -> Result<Vec<Option<AlignedBuf>>> {
        let k = self.k;
        let end = self.carry + HASH_LEN + block.len().div_ceil(k);
        self.prepare(end)?;
        // A buffer holds an earlier record past the carry: every byte of
        // the new one is written by fill_records (data, padding, parity,
        // hashes).
        set.fill_records(rs, block, k, &mut self.records(end))?;
        Ok(self.ship(end, last))
    }

    /// Every shard's record from the carry to `end`, once
    /// [`prepare`](Self::prepare)d.
    fn records(&mut self, end: usize) -> Vec<&mut [u8]> {
        let carry = self.carry;
        self.bufs
            .iter_mut()
            .flatten()
            .map(|buf| &mut buf.capacity_mut()[carry..end])
            .collect()
    }

    /// Reads the body's next block (up to [`BLOCK_SIZE`] bytes) straight
    /// into the data shards of its records: shard `j` gets the block's
    /// bytes `j * sl..(j + 1) * sl`, where they are hashed and encoded
    /// without a copy ([`seal_block`](Self::seal_block)). Returns how many
    /// bytes were read: fewer than a block only at the body's end.
    async fn read_block<R: AsyncRead + Unpin>(&mut self, body: &mut R) -> Result<usize> {
        let (at, sl) = (self.carry + HASH_LEN, self.sl);
        self.prepare(at + sl)?;
        let mut got = 0;
        for j in 0..self.k {
            let share = shard_share(BLOCK_SIZE, sl, j);
            let n = read_full(body, &mut self.data_buf(j).capacity_mut()[at..at + share]).await?;
            got += n;
            if n < share {
                break;
            }
        }
        Ok(got)
    }

    /// Feeds the `got` bytes [`read_block`](Self::read_block) read to `md5`
    /// and encodes them; returns, per shard, what its writer gets now (as
    /// [`encode`](Self::encode)). A full block is the file's end when
    /// `full_is_last`; a short one always is, and nothing (`got == 0`)
    /// gives the carried bytes.
    async fn seal_block(
        &mut self,
        set: &ErasureSet,
        rs: &Coder,
        got: usize,
        md5: &mut Option<md5x::Hasher>,
        full_is_last: bool,
    ) -> Result<Vec<Option<AlignedBuf>>> {
        let (k, sl, at) = (self.k, self.sl, self.carry + HASH_LEN);
        if got == 0 {
            // The body ended on a block boundary: the files' last bytes
            // are what is carried.
            return self.tails();
        }
        if got < BLOCK_SIZE {
            // The body's short last block: its shards are narrower than the
            // ones it was read into, so it is gathered and encoded from a
            // copy (once per upload).
            let mut block = Vec::with_capacity(got);
            for j in 0..k {
                let n = shard_share(got, sl, j);
                block.extend_from_slice(&self.data_buf(j).capacity_slice()[at..at + n]);
            }
            if let Some(h) = md5.take() {
                let (h, b) = h.update_block(block).await;
                block = b;
                *md5 = Some(h);
            }
            return self.encode(set, rs, &block, true);
        }
        if let Some(h) = md5.take() {
            // The data shards' buffers go to the hub and come back.
            let parts = (0..k)
                .map(|j| {
                    let buf = self.bufs[j].take().expect("read_block gave it a buffer");
                    (buf, at..at + shard_share(BLOCK_SIZE, sl, j))
                })
                .collect();
            let (h, bufs) = h.update_parts(parts).await;
            for (slot, buf) in self.bufs.iter_mut().zip(bufs) {
                *slot = Some(buf);
            }
            *md5 = Some(h);
        }
        let end = at + sl;
        let mut records = self.records(end);
        for (j, rec) in records.iter_mut().take(k).enumerate() {
            rec[HASH_LEN + shard_share(BLOCK_SIZE, sl, j)..].fill(0);
        }
        set.seal_records(rs, k, &mut records)?;
        Ok(self.ship(end, full_is_last))
    }

    fn data_buf(&mut self, j: usize) -> &mut AlignedBuf {
        self.bufs[j]
            .as_mut()
            .expect("read_block gave every shard a buffer")
    }

    /// Gives every shard a buffer with room for records ending at `end`,
    /// the carry in front. Buffers are taken only once the last block's
    /// are shipped: an upload holds one block's buffers, not two.
    fn prepare(&mut self, end: usize) -> Result<()> {
        let carry = self.carry;
        for i in 0..self.bufs.len() {
            // The carry is in the buffer still held, or was set aside when
            // the last one shipped. A held buffer is too small only after
            // blocks too small to hand out a whole ALIGN block (not a full
            // erasure block of any set).
            let from = match &self.bufs[i] {
                None => &self.carried[i][..carry],
                Some(cur) if cur.capacity() < end => &cur.capacity_slice()[..carry],
                Some(_) => continue,
            };
            let mut buf = self.buffer(end)?;
            buf.extend_from_slice(from);
            self.bufs[i] = Some(buf);
        }
        Ok(())
    }

    /// Hands out the records written up to `end`: the whole `ALIGN` blocks
    /// (everything when `last`); the rest is carried to the next buffers.
    fn ship(&mut self, end: usize, last: bool) -> Vec<Option<AlignedBuf>> {
        let ship = if last { end } else { end & !(ALIGN - 1) };
        if ship == 0 {
            self.carry = end;
            return self.bufs.iter().map(|_| None).collect();
        }
        let out = self
            .bufs
            .iter_mut()
            .zip(&mut self.carried)
            .map(|(slot, carried)| {
                let mut cur = slot.take()?;
                carried.clear();
                carried.extend_from_slice(&cur.capacity_slice()[ship..end]);
                cur.set_len(ship);
                Some(cur)
            })
            .collect();
        self.carry = end - ship;
        out
    }

    /// The carried bytes of every shard (the files' end when the body
    /// ended on a block boundary); `None` for shards with nothing carried.
    fn tails(&mut self) -> Result<Vec<Option<AlignedBuf>>> {
        if self.carry > 0 {
            self.prepare(self.carry)?;
        }
        let carry = std::mem::take(&mut self.carry);
        Ok(self
            .bufs
            .iter_mut()
            .map(|slot| {
                let mut buf = slot.take()?;
                (carry > 0).then(|| {
                    buf.set_len(carry);
                    buf
                })
            })
            .collect())
    }
}

fn check_size_of(size: Option<u64>, total: u64) -> Result<()> {
    match size {
        Some(s) if s != total => Err(Error::IncompleteBody {
            expected: s,
            got: total,
        }),
        _ => Ok(()),
    }
}

pub(crate) fn check_metadata(opts: &PutOptions) -> Result<()> {
    let mut total = 0;
    for (k, v) in &opts.metadata {
        total += k.len() + v.len();
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_graphic() && c != b':') {
            return Err(Error::InvalidMetadata(format!("bad key {k:?}")));
        }
        if v.chars().any(|c| c.is_control() && c != '\t') {
            return Err(Error::InvalidMetadata(format!("bad value for {k:?}")));
        }
        let lk = k.to_ascii_lowercase();
        if lk == META_ETAG || lk == META_CONTENT_TYPE || lk.starts_with("x-minio-internal-") {
            return Err(Error::InvalidMetadata(format!("reserved key {k:?}")));
        }
    }
    if total > MAX_METADATA_BYTES {
        return Err(Error::InvalidMetadata(format!(
            "{total} bytes of metadata, at most {MAX_METADATA_BYTES}"
        )));
    }
    Ok(())
}

pub(crate) fn new_version(
    version_id: [u8; 16],
    data_dir: [u8; 16],
    size: u64,
    erasure: ErasureParams,
    opts: &PutOptions,
    etag: &str,
) -> ObjectVersion<'static> {
    let actual = opts
        .actual_size
        .or_else(|| opts.actual_size_of.and_then(|f| f(size)))
        .map(|a| i64::try_from(a).unwrap_or(i64::MAX));
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let mut ov = ObjectVersion::new(version_id, data_dir, now_nanos(), size, erasure);
    let actual = actual.unwrap_or(size);
    ov.push_part(1, size, actual, None);
    for (k, v) in &opts.internal {
        ov.set_sys(k.clone(), v.clone());
    }
    ov.set_user(
        META_CONTENT_TYPE,
        opts.content_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into()),
    );
    ov.set_user(META_ETAG, etag.to_owned());
    for (k, v) in &opts.metadata {
        ov.set_user(k.clone(), v.clone());
    }
    if let Some(t) = &opts.trailing_metadata {
        for (k, v) in t.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            ov.set_user(k.clone(), v.clone());
        }
    }
    ov
}

/// The public view of a stored version.
pub(crate) fn object_info(bucket: &str, key: &str, v: &Version<'_>, is_latest: bool) -> ObjectInfo {
    let vid = v.version_id();
    let version_id = if vid == [0; 16] {
        None
    } else {
        Some(Uuid::from_bytes(vid))
    };
    match &v.kind {
        VersionKind::Object(o) => {
            let mut metadata = BTreeMap::new();
            let mut etag = String::new();
            let mut content_type = String::from("application/octet-stream");
            if let Some(u) = &o.meta_user {
                for (k, val) in u.iter() {
                    let k = k.to_string_lossy().into_owned();
                    let val = val.to_string_lossy().into_owned();
                    if k == META_ETAG {
                        etag = val;
                    } else if k.eq_ignore_ascii_case(META_CONTENT_TYPE) {
                        content_type = val;
                    } else {
                        metadata.insert(k, val);
                    }
                }
            }
            ObjectInfo {
                bucket: bucket.into(),
                key: key.into(),
                version_id,
                delete_marker: false,
                is_latest,
                size: u64::try_from(o.size).unwrap_or(0),
                etag,
                mod_time_nanos: o.mod_time,
                content_type,
                metadata,
                parts: o
                    .part_numbers
                    .iter()
                    .zip(&o.part_sizes)
                    .map(|(&number, &s)| PartInfo {
                        number,
                        size: u64::try_from(s).unwrap_or(0),
                    })
                    .collect(),
                data_shards: usize::try_from(o.erasure_m).unwrap_or(0),
                parity_shards: usize::try_from(o.erasure_n).unwrap_or(0),
                inline: o.inline_data(),
                internal: o
                    .meta_sys
                    .iter()
                    .flat_map(|m| m.iter())
                    .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_vec()))
                    .collect(),
            }
        }
        _ => ObjectInfo {
            bucket: bucket.into(),
            key: key.into(),
            version_id,
            delete_marker: matches!(v.kind, VersionKind::DeleteMarker(_)),
            is_latest,
            size: 0,
            etag: String::new(),
            mod_time_nanos: v.mod_time(),
            content_type: String::new(),
            metadata: BTreeMap::new(),
            parts: Vec::new(),
            data_shards: 0,
            parity_shards: 0,
            inline: false,
            internal: BTreeMap::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GET reads ahead only after a read that did not complete at its
    /// first poll: a future ready at once says so, one that waits once
    /// does not.
    #[tokio::test]
    async fn ready_at_once_tells_a_read_that_waited() {
        assert_eq!(ready_at_once(async { 7 }).await, (7, true));
        let waited = ready_at_once(async {
            tokio::task::yield_now().await;
            8
        })
        .await;
        assert_eq!(waited, (8, false));
    }

    /// The records of a block are verified together: a record whose data
    /// or hash changed is dropped and its drive named, the others stay as
    /// they were read; a chunk not read into a record buffer (so without
    /// its hash) fails too.
    #[test]
    fn a_block_s_records_are_verified_together() {
        let sl = 4096 + 17;
        let frame = bitrot::ShardFrame::minio(bitrot::ShardLayout::new(sl, 3 * sl as u64).unwrap());
        let record = |seed: u8, b: u64| {
            let mut buf = AlignedBuf::with_capacity(ALIGN + HASH_LEN + sl).unwrap();
            let skip = 100;
            let rec = &mut buf.capacity_mut()[skip..skip + HASH_LEN + sl];
            for (i, x) in rec[HASH_LEN..].iter_mut().enumerate() {
                *x = (i as u8).wrapping_mul(seed) ^ seed;
            }
            frame.seal_record(b, rec).unwrap();
            buf.set_len(skip + HASH_LEN + sl);
            Chunk::record(buf, skip + HASH_LEN..skip + HASH_LEN + sl)
        };
        let flip = |c: Chunk, at: usize| {
            let ChunkBuf::Record(mut buf) = c.buf else {
                unreachable!()
            };
            buf.capacity_mut()[at] ^= 1;
            Chunk::record(buf, c.range)
        };
        let drives = [Some(3), Some(0), Some(2), Some(1)];
        // All intact, at block 1.
        let mut shards = vec![Some(record(7, 1)), Some(record(9, 1)), None, None];
        assert!(verify_records(&frame, 1, &mut shards, &drives).is_empty());
        assert!(shards[0].is_some() && shards[1].is_some());
        // A flipped data byte in one shard, a flipped hash byte in another,
        // and a chunk without its hash: those three go, the intact stays.
        let data_flip = flip(record(5, 2), 100 + HASH_LEN + sl / 2);
        let hash_flip = flip(record(6, 2), 100 + 3);
        let before = record(8, 2).as_slice().to_vec();
        let mut shards = vec![
            Some(data_flip),
            Some(record(8, 2)),
            Some(hash_flip),
            Some(Chunk::from(before.clone())),
        ];
        let failed = verify_records(&frame, 2, &mut shards, &drives);
        assert_eq!(
            failed.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        assert!(shards[0].is_none() && shards[2].is_none() && shards[3].is_none());
        assert_eq!(shards[1].as_ref().unwrap().as_slice(), &before[..]);
    }

    /// MinIO's inline decision, literally.
    fn should_inline(size: u64, k: usize, limit: u64) -> bool {
        shard_data_len(size, k) <= limit
    }

    #[test]
    fn max_inline_size_is_minio_s_threshold() {
        for k in 1..=16 {
            for versioned in [false, true] {
                let limit = inline_limit(versioned);
                let max = max_inline_size(k, limit);
                assert!(should_inline(max, k, limit), "k={k} {versioned}");
                assert!(!should_inline(max + 1, k, limit), "k={k} {versioned}");
            }
        }
        // 2 data shards: 256 KiB; 12 data shards (16 drives, EC:4): more
        // than one 1 MiB block.
        assert_eq!(max_inline_size(2, INLINE_SHARD_LIMIT), 256 << 10);
        assert_eq!(max_inline_size(2, INLINE_SHARD_LIMIT / 8), 32 << 10);
        assert!(max_inline_size(12, INLINE_SHARD_LIMIT) > BLOCK_SIZE as u64);
    }

    /// The shard files built by `RecordStreams` (records encoded in place
    /// behind a carried tail, in reused dirty pooled buffers) are the
    /// records of `encode_block` back to back, byte for byte, for every
    /// shape of set and object; every buffer but a file's last holds whole
    /// `ALIGN` blocks only.
    #[test]
    fn record_streams_are_the_reference_records() {
        let set = ErasureSet {
            drives: Vec::new(),
            default_parity: 2,
            coders: Mutex::new(HashMap::new()),
            bitrot: Bitrot::minio(),
            read_pools: Mutex::new(ReadPools::default()),
            put_queue: PutQueue::new(PUT_QUEUE_BYTES_PER_DRIVE),
            cache: None,
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut byte = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        let sizes = [
            1,
            7,
            4095,
            65_537,
            BLOCK_SIZE - 1,
            BLOCK_SIZE,
            BLOCK_SIZE + 1,
            3 * BLOCK_SIZE,
            3 * BLOCK_SIZE + 12_345,
        ];
        for (k, m) in [(2, 2), (3, 1), (5, 3), (12, 4)] {
            let rs = set.coder(k, m).unwrap();
            for len in sizes {
                let data: Vec<u8> = (0..len).map(|_| byte()).collect();
                let mut want = vec![Vec::new(); k + m];
                for block in data.chunks(BLOCK_SIZE) {
                    for (s, rec) in set
                        .encode_block(&rs, block, k, m)
                        .unwrap()
                        .iter()
                        .enumerate()
                    {
                        want[s].extend_from_slice(rec);
                    }
                }
                // The last block known as such (announced size), or the
                // end found by a read of nothing after a full block; twice
                // each, the later rounds on dirty pooled buffers.
                for known_end in [true, false, true, false] {
                    let mut streams = RecordStreams::new(&set, k, m);
                    let mut got = vec![Vec::new(); k + m];
                    let mut outs = Vec::new();
                    let blocks: Vec<&[u8]> = data.chunks(BLOCK_SIZE).collect();
                    for (i, block) in blocks.iter().enumerate() {
                        let last = block.len() < BLOCK_SIZE || (known_end && i + 1 == blocks.len());
                        outs.push((last, streams.encode(&set, &rs, block, last).unwrap()));
                    }
                    if !outs.last().unwrap().0 {
                        outs.push((true, streams.tails().unwrap()));
                    }
                    for (last, out) in outs {
                        assert_eq!(out.len(), k + m);
                        for (s, buf) in out.into_iter().enumerate() {
                            let Some(mut buf) = buf else { continue };
                            assert!(
                                last || buf.len().is_multiple_of(ALIGN),
                                "k={k} len={len}: {} bytes before the end",
                                buf.len()
                            );
                            got[s].extend_from_slice(&buf);
                            // Dirty the whole buffer for its next user.
                            buf.capacity_mut().fill(0xa5);
                        }
                    }
                    for s in 0..k + m {
                        assert!(got[s] == want[s], "k={k} m={m} len={len} shard {s}");
                    }
                }
                // The PUT path: the body read straight into the data shards
                // (through reads of uneven sizes), hashed there and encoded
                // in place; same records, and the body's MD5.
                for known_end in [true, false, true] {
                    let mut body = Trickle {
                        data: &data,
                        step: 1 + (len % 7919),
                    };
                    let mut streams = RecordStreams::new(&set, k, m);
                    let mut md5 = Some(md5x::Md5Hub::global().hasher());
                    let mut got = vec![Vec::new(); k + m];
                    let mut total = 0;
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    loop {
                        let n = rt.block_on(streams.read_block(&mut body)).unwrap();
                        total += n;
                        let last = known_end && total == len;
                        let out = rt
                            .block_on(streams.seal_block(&set, &rs, n, &mut md5, last))
                            .unwrap();
                        for (s, buf) in out.into_iter().enumerate() {
                            let Some(mut buf) = buf else { continue };
                            got[s].extend_from_slice(&buf);
                            buf.capacity_mut().fill(0x5a);
                        }
                        if n < BLOCK_SIZE || last {
                            break;
                        }
                    }
                    assert_eq!(total, len);
                    for s in 0..k + m {
                        assert!(
                            got[s] == want[s],
                            "in place: k={k} m={m} len={len} shard {s}"
                        );
                    }
                    let md5 = md5.unwrap().finalize();
                    assert_eq!(md5, md5x::digest(&data), "k={k} len={len}");
                }
            }
        }
    }

    /// A body that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = self.step.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            std::task::Poll::Ready(Ok(()))
        }
    }
}
