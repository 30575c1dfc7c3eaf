//! PUT: a body erasure-coded into shard files in the temp area of every
//! drive (or, for a small object, into inline records), then committed.
//! Streamed uploads read the body block by block straight into the data
//! shards of their records (`encode.rs`), one writer task per drive behind
//! a bounded channel, all uploads to the set within its PUT queue.

use bitrot::HASH_LEN;
use drive::format::TMP_VOLUME;
use drive::{ALIGN, AlignedBuf, DriveError};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::commit::NewData;
use super::encode::RecordStreams;
use super::quorum::check_write_quorum;
use super::version::{check_metadata, new_version};
use super::*;
use crate::layer::LOCK_TIMEOUT;
use crate::layer::lock::{LockGuard, Locker};
use crate::layer::names::object_dir;
use crate::layer::put_queue::Room;
use crate::xlmeta::{ErasureParams, META_INLINE_DATA, Version};

/// Shard blocks queued per drive writer (back-pressure).
const WRITE_QUEUE: usize = 4;

/// A shard record on its way to a drive writer, with its room in the
/// set's PUT queue (given back once it is written).
type Queued = (AlignedBuf, Room);

/// How an upload's body becomes shard records: its erasure layout and
/// coder, where each shard goes, and what the body must be.
pub(super) struct PutPlan<'a> {
    pub rs: &'a Coder,
    /// Data shards.
    pub k: usize,
    /// Parity shards.
    pub m: usize,
    /// Per drive (in set order), the shard it holds (1-based).
    pub distribution: &'a [usize],
    /// The announced size, when there is one: a body of another length
    /// fails.
    pub size: Option<u64>,
    /// The most bytes the body may have.
    pub max: u64,
    /// Whether the body's MD5 (its ETag) is computed.
    pub want_md5: bool,
    /// Drives that must have every shard record written.
    pub quorum: usize,
}

/// Where a streamed upload's shard files go on every drive: the shard
/// file `part` of directory `id`, both in the temp area.
pub(super) struct TmpPart<'a> {
    pub id: &'a str,
    pub part: &'a str,
}

/// What streaming a body to the temp area gave.
pub(super) struct Streamed {
    /// The body's size.
    pub size: u64,
    /// Its hex MD5 (empty when not computed).
    pub etag: String,
    /// Per drive: whether its shard file failed.
    pub failed: Vec<bool>,
}

/// Takes the object's write lock when one is to be taken here.
async fn take_lock(lock: Option<(&dyn Locker, &str)>) -> Result<Option<LockGuard>> {
    match lock {
        Some((l, resource)) => Ok(Some(l.write(resource, LOCK_TIMEOUT).await?)),
        None => Ok(None),
    }
}

impl ErasureSet {
    /// Checks a conditional write's precondition against the key's latest
    /// version in this set. The caller holds the object's write lock, so
    /// nothing can commit between this check and the caller's commit.
    pub(crate) async fn check_precondition(
        &self,
        bucket: &str,
        key: &str,
        pre: Option<&Precondition>,
    ) -> Result<()> {
        let Some(pre) = pre else { return Ok(()) };
        let current = match self.head(bucket, key, None).await {
            Ok(info) => Some(info),
            Err(Error::NoSuchKey { .. }) => None,
            Err(e) => return Err(e),
        };
        pre.check(current.as_ref(), bucket, key)
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
                self.check_precondition(bucket, key, opts.precondition.as_ref())
                    .await?;
                self.commit(bucket, &dir, ov, NewData::Inline(shards), quorum)
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
        let plan = PutPlan {
            rs: &rs,
            k,
            m,
            distribution: &distribution,
            size: opts.size,
            max: MAX_OBJECT_SIZE,
            want_md5: !opts.caller_etag,
            quorum,
        };
        let tmp = TmpPart {
            id: &tmp_id,
            part: &tmp_part,
        };
        let streamed = self
            .stream_to_tmp(&plan, &mut (&prefix[..]).chain(body), &tmp)
            .await?;
        let (total, etag) = (streamed.size, &streamed.etag);
        let ov = new_version(version_id, data_dir, total, erasure, opts, etag);
        let info = object_info(bucket, key, &Version::object(ov.clone(), WRITTEN_BY), true);
        let r = async {
            let _g = take_lock(lock).await?;
            self.check_precondition(bucket, key, opts.precondition.as_ref())
                .await?;
            let data = NewData::Moved {
                volume: TMP_VOLUME,
                path: &tmp_id,
                failed: &streamed.failed,
            };
            self.commit(bucket, &dir, ov, data, quorum).await
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

    /// Streams `body` through the erasure coder to `tmp.part` in the temp
    /// area of every drive, one writer task per drive fed by a bounded
    /// channel (one erasure block in flight per drive at most
    /// `WRITE_QUEUE` deep, and the records of all uploads to the set within
    /// its PUT queue). Returns the size, the hex MD5 and the drives
    /// that failed; fails (leaving nothing) below the write quorum, or if
    /// the body is not `plan.size` bytes long when that is given.
    pub(super) async fn stream_to_tmp<R: AsyncRead + Unpin + Send>(
        &self,
        plan: &PutPlan<'_>,
        body: &mut R,
        tmp: &TmpPart<'_>,
    ) -> Result<Streamed> {
        let n = self.drives.len();
        let (k, size, quorum) = (plan.k, plan.size, plan.quorum);
        let expected = size.and_then(|s| {
            bitrot::shard_file_size(shard_data_len(s, k), (BLOCK_SIZE as u64).div_ceil(k as u64))
        });
        let mut senders: Vec<Option<mpsc::Sender<Queued>>> = Vec::with_capacity(n);
        let mut tasks = JoinSet::new();
        for (d, drive) in self.drives.iter().enumerate() {
            let (tx, mut rx) = mpsc::channel::<Queued>(WRITE_QUEUE);
            let (drive, path) = (drive.clone(), tmp.part.to_owned());
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
        let fed = self.feed_writers(plan, body, &mut senders).await;
        drop(senders);
        let (total, etag) = match fed {
            Ok(x) => x,
            Err(e) => {
                // Stop the writers (and wait for them to let go of their
                // files) before removing the temp directory.
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                self.remove_tmp(tmp.id).await;
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
        if let Err(e) = check_write_quorum(ok, quorum) {
            self.remove_tmp(tmp.id).await;
            return Err(e);
        }
        Ok(Streamed {
            size: total,
            etag,
            failed,
        })
    }

    /// Reads `body` block by block, MD5s it, erasure-codes every block and
    /// hands each drive's record to its writer. Returns the size and the
    /// hex MD5.
    async fn feed_writers<R: AsyncRead + Unpin + Send>(
        &self,
        plan: &PutPlan<'_>,
        body: &mut R,
        senders: &mut [Option<mpsc::Sender<Queued>>],
    ) -> Result<(u64, String)> {
        let PutPlan {
            rs,
            k,
            m,
            distribution,
            size,
            max,
            want_md5,
            quorum,
        } = *plan;
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
            check_write_quorum(alive, quorum)?;
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
}

/// `Ok` when a body of `total` bytes is the `size` announced, if any.
fn check_size_of(size: Option<u64>, total: u64) -> Result<()> {
    match size {
        Some(s) if s != total => Err(Error::IncompleteBody {
            expected: s,
            got: total,
        }),
        _ => Ok(()),
    }
}

/// Reads `r` into `buf` until it is full or the body ends; returns the
/// bytes read.
pub(super) async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<usize> {
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
