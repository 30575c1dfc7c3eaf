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
//!
//! The work is split by job: `quorum` reads `xl.meta` from every drive
//! and picks the version a quorum agrees on; `put` streams a body through
//! the erasure coder (`encode` builds the bitrot records) into the temp
//! area and `commit` moves it into place; `get` reads a range, block by
//! block, with `block` fetching, verifying and rebuilding each block's
//! shards; `delete`, `update` (metadata edits), `heal` and `multipart`
//! do the rest; `version` turns options into a stored version and a
//! stored version into an [`ObjectInfo`].

mod block;
mod commit;
mod delete;
mod encode;
mod get;
mod heal;
pub(crate) mod multipart;
mod put;
mod quorum;
mod update;
mod version;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bitrot::Bitrot;
use drive::format::{META_VOLUME, TMP_VOLUME};
use drive::{BufferPool, Drive, PoolClasses};
use ec_simd::ReedSolomon;

use super::cache::{PartId, ReadCache};
use super::error::{Error, Result};
use super::put_queue::PutQueue;
use super::types::*;
use crate::xlmeta::ObjectVersion;

pub use super::chunk::{Chunk, ChunkSink, WriteSink};
pub(crate) use quorum::{Metas, Resolved};
pub(crate) use version::object_info;

/// Erasure block size: MinIO's `blockSizeV2`.
pub const BLOCK_SIZE: usize = 1 << 20;
/// A shard of at most this many bytes is stored inline in `xl.meta`
/// (MinIO's `smallFileThreshold`); an eighth of it in versioned buckets.
pub const INLINE_SHARD_LIMIT: u64 = 128 << 10;
/// Largest single PUT (S3's limit for one request).
pub const MAX_OBJECT_SIZE: u64 = 5 << 40;
/// Largest `xl.meta` read from a drive.
pub const MAX_XL_META: u64 = 32 << 20;
/// Record buffers out at once per buffer size (beyond it reads allocate).
const MAX_READ_BUFS: usize = 1024;
/// Record buffers kept for reuse per buffer size (PUTs take theirs from the
/// same pool). Eight 16 MiB PUTs hold about 200 at once: with 32 kept, most
/// of the rest were freed and allocated (and zeroed) again as the load
/// moved; 160 cut the server CPU per byte by 1.06x-1.16x for about 50 MiB
/// more kept at rest (201 MiB after the load against 149, MinIO 270).
/// Measured with `tessera-bench put --obj-size 16MiB --concurrent 8`
/// against one server on four directories, with the server's CPU-seconds
/// and resident memory (`docs/bench-notes/memory.md`).
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
/// 0.89x-1.01x the throughput). Measured with `tessera-bench put
/// --obj-size 16MiB --concurrent 8` against one server on four
/// directories, each size set through
/// `LayerOptions::put_queue_bytes_per_drive` (`docs/bench-notes/put.md`).
const PUT_QUEUE_BYTES_PER_DRIVE: usize = 16 << 20;
/// The `v` field: the writer's release, as a Unix time.
const WRITTEN_BY: u64 = 0;
/// Name of the metadata file of an object.
pub const XL_META: &str = "xl.meta";

/// Nanoseconds since the Unix epoch, now.
pub(crate) fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Bytes of one shard of a part of `size` bytes: full blocks contribute a
/// full shard each, the last block `ceil(rest / k)`.
fn shard_data_len(size: u64, k: usize) -> u64 {
    let b = BLOCK_SIZE as u64;
    let shard = b.div_ceil(k as u64);
    (size / b) * shard + (size % b).div_ceil(k as u64)
}

/// The largest inline shard: MinIO's inline block (128 KiB), an eighth of
/// it for objects of versioned buckets.
fn inline_limit(versioned: bool) -> u64 {
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
fn max_inline_size(k: usize, limit: u64) -> u64 {
    // shard_data_len(f * BLOCK + r) = f * shard + ceil(r / k) for r < BLOCK,
    // and `rem * k < BLOCK` because `rem < shard = ceil(BLOCK / k)`.
    let shard = (BLOCK_SIZE as u64).div_ceil(k as u64);
    (limit / shard) * BLOCK_SIZE as u64 + (limit % shard) * k as u64
}

/// The erasure coder of an object: Reed-Solomon, or none at all for sets
/// without parity (a single drive: MinIO's `xl-single`, EC 1+0, and any
/// `EC:0` storage class), where the shards are the data.
#[derive(Debug, Clone)]
enum Coder {
    Rs(ReedSolomon),
    NoParity(usize),
}

impl Coder {
    fn data_shards(&self) -> usize {
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

/// A set of drives that hold objects together.
#[derive(Debug)]
pub struct ErasureSet {
    pub(crate) drives: Vec<Arc<dyn Drive>>,
    default_parity: usize,
    coders: Mutex<HashMap<(usize, usize), Coder>>,
    pub(crate) bitrot: Bitrot,
    /// Record buffers by size (a set sees one or two block sizes).
    read_pools: PoolClasses,
    /// The shard records that streamed PUTs may have queued for or being
    /// written to this set's drives, all uploads together.
    put_queue: Arc<PutQueue>,
    /// The layer's read cache, if any.
    cache: Option<SetCache>,
    /// The layer's heal journal and this set's index in the layer, if any.
    journal: Option<(Arc<crate::layer::journal::Journal>, usize)>,
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
        self.cache.forget(self.set..self.set + 1, data_dir);
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
            read_pools: PoolClasses::new(MAX_READ_POOLS, MAX_READ_BUFS, IDLE_READ_BUFS),
            put_queue: PutQueue::new(n.saturating_mul(PUT_QUEUE_BYTES_PER_DRIVE)),
            cache: None,
            journal: None,
        })
    }

    /// The same set reading through `cache` (shared by the layer's sets;
    /// `index` tells this set's blocks from the others').
    pub(crate) fn with_read_cache(mut self, cache: Arc<ReadCache>, index: u32) -> Self {
        self.cache = Some(SetCache { cache, set: index });
        self
    }

    /// The same set recording its writes that miss drives in `journal`
    /// (the set being the layer's set `index`).
    pub(crate) fn with_journal(
        mut self,
        journal: Arc<crate::layer::journal::Journal>,
        index: usize,
    ) -> Self {
        self.journal = Some((journal, index));
        self
    }

    /// The same set with a PUT queue of `bytes_per_drive` per drive instead
    /// of 16 MiB (`PUT_QUEUE_BYTES_PER_DRIVE`; an upload's block always fits: a
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

    fn coder(&self, k: usize, m: usize) -> Result<Coder> {
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

    /// The pool of record buffers of `bytes` (reads of shard records land
    /// in them; a buffer returns to its pool when the last slice of it
    /// handed to a sink is dropped).
    fn read_pool(&self, bytes: usize) -> Option<BufferPool> {
        self.read_pools.pool(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
