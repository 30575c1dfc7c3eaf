//! One erasure block of a part, read: its shards fetched from the drives
//! (data shards first, in flight while the block before is sent), their
//! records verified together, missing data shards rebuilt from parity,
//! and, where a fetch falls short, read again shard by shard from every
//! remaining drive.

use std::sync::Arc;

use bitrot::HASH_LEN;
use bytes::Bytes;
use drive::{ALIGN, AlignedBuf, BufferPool, DriveError, ShardFile, align_up};
use tokio::sync::OnceCell;
use tokio::task::{JoinHandle, JoinSet};

use super::*;

/// Per drive of the set, its shard file of a part once opened for reads
/// ([`Drive::open_shard_file`]; `None` inside: the drive reads by path).
pub(super) type ShardFiles = Arc<[OnceCell<Option<Arc<dyn ShardFile>>>]>;

/// Where the blocks of one part of a version are read from, shard by
/// shard ([`ErasureSet::read_block`]).
pub(super) struct PartSource<'a> {
    /// The version's coder (its data shards are the `k` a block needs).
    pub rs: &'a Coder,
    pub bucket: &'a str,
    /// The part's shard file, in each drive's copy of the object.
    pub path: &'a str,
    /// The version, and every drive's `xl.meta` (with any inline data).
    pub resolved: &'a Resolved,
    /// Per shard (0-based), the drives holding it.
    pub holder: &'a [Vec<usize>],
    pub frame: &'a bitrot::ShardFrame,
    /// Whether the version is inline (its records in `xl.meta`).
    pub inline: bool,
}

/// What the shard reads of one part share: where they read from, and how
/// a GET reads ahead ([`ErasureSet::fetch_block`]).
pub(super) struct FetchSource<'a> {
    pub part: PartSource<'a>,
    /// `part.path`, shared with the read tasks.
    pub path: &'a Arc<str>,
    pub pool: Option<&'a BufferPool>,
    /// Whether records read from the page cache come with a pipe.
    pub piped: bool,
    /// The shard files opened so far (`None` for an inline object).
    pub files: Option<&'a ShardFiles>,
    /// The read cache and the part as it knows it (`None` for an inline
    /// object, or without a cache).
    pub cache: Option<&'a CachedPart<'a>>,
}

/// A part being read through the read cache.
pub(super) struct CachedPart<'a> {
    pub cache: &'a ReadCache,
    pub part: PartId,
    /// Whether blocks read from the drives are offered to the cache (the
    /// part's read, counted, made it a candidate).
    pub admit: bool,
}

/// A shard read in flight: the shard data (not yet verified) and whether
/// its read completed without waiting, or why not.
type ShardRead = JoinHandle<std::result::Result<(Chunk, bool), String>>;

/// The shard reads of one block in flight: (shard, drive, task).
pub(super) struct BlockFetch {
    pub block: u64,
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

impl ErasureSet {
    /// Starts the reads of block `b`'s first `k` shards that have a drive
    /// not known bad (data shards first); [`finish_block`](Self::finish_block)
    /// verifies them.
    pub(super) fn fetch_block(
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
        for (s, holders) in src.part.holder.iter().enumerate() {
            if reads.len() == k {
                break;
            }
            let Some(&d) = holders.iter().find(|&&d| !bad[d]) else {
                continue;
            };
            let drive = self.drives[d].clone();
            let (bucket, path) = (src.part.bucket.to_owned(), Arc::clone(src.path));
            let (frame, pool, piped) = (*src.part.frame, src.pool.cloned(), src.piped);
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
    pub(super) async fn finish_block(
        &self,
        src: &FetchSource<'_>,
        mut fetched: Option<BlockFetch>,
        b: u64,
        sl: usize,
        bad: &mut [bool],
    ) -> Result<(Vec<Chunk>, usize, bool)> {
        let k = src.part.rs.data_shards();
        if let Some(data) = fetched.as_mut().and_then(|f| f.cached.take()) {
            let whole = data.len();
            return Ok((vec![Chunk::from(data)], whole, true));
        }
        let (chunks, at_once) = self.verify_block(src, fetched, b, sl, bad).await?;
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
    async fn verify_block(
        &self,
        src: &FetchSource<'_>,
        fetched: Option<BlockFetch>,
        b: u64,
        sl: usize,
        bad: &mut [bool],
    ) -> Result<(Vec<Chunk>, bool)> {
        let n = self.drives.len();
        let rs = src.part.rs;
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
            for (d, e) in verify_records(src.part.frame, b, &mut shards, &from) {
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
        let block = self.read_block(&src.part, b, sl, bad).await?;
        Ok((block.into_iter().take(k).map(Chunk::from).collect(), false))
    }

    /// Reads block `b` of a part: `k` intact shards (data shards first),
    /// verified; reconstructs missing data shards from parity. Returns the
    /// `k + m` shard buffers of `sl` bytes (data shards complete).
    pub(super) async fn read_block(
        &self,
        src: &PartSource<'_>,
        b: u64,
        sl: usize,
        bad: &mut [bool],
    ) -> Result<Vec<Vec<u8>>> {
        let PartSource {
            rs,
            bucket,
            path,
            resolved: r,
            holder,
            frame,
            inline,
        } = *src;
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
}

/// Record `b` of an inline payload (the drive's whole shard stream, as a
/// shard file would hold it), or `None` if the payload does not have the
/// layout's length (truncated or padded: damage).
pub(super) fn inline_slice<'a>(
    payload: &'a [u8],
    b: u64,
    frame: &bitrot::ShardFrame,
) -> Option<&'a [u8]> {
    let layout = frame.layout();
    if payload.len() as u64 != layout.file_size() {
        return None;
    }
    let off = usize::try_from(layout.record_offset(b)?).ok()?;
    payload.get(off..off + layout.record_len(b)?)
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
        chunk.set_pipe(pipe);
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
        let skip = 100;
        let sealed = |seed: u8, b: u64| {
            let mut buf = AlignedBuf::with_capacity(ALIGN + HASH_LEN + sl).unwrap();
            let rec = &mut buf.capacity_mut()[skip..skip + HASH_LEN + sl];
            for (i, x) in rec[HASH_LEN..].iter_mut().enumerate() {
                *x = (i as u8).wrapping_mul(seed) ^ seed;
            }
            frame.seal_record(b, rec).unwrap();
            buf.set_len(skip + HASH_LEN + sl);
            buf
        };
        let range = skip + HASH_LEN..skip + HASH_LEN + sl;
        let record = |seed: u8, b: u64| Chunk::record(sealed(seed, b), range.clone());
        // The record with byte `at` of its buffer flipped.
        let flipped = |seed: u8, b: u64, at: usize| {
            let mut buf = sealed(seed, b);
            buf.capacity_mut()[at] ^= 1;
            Chunk::record(buf, range.clone())
        };
        let drives = [Some(3), Some(0), Some(2), Some(1)];
        // All intact, at block 1.
        let mut shards = vec![Some(record(7, 1)), Some(record(9, 1)), None, None];
        assert!(verify_records(&frame, 1, &mut shards, &drives).is_empty());
        assert!(shards[0].is_some() && shards[1].is_some());
        // A flipped data byte in one shard, a flipped hash byte in another,
        // and a chunk without its hash: those three go, the intact stays.
        let data_flip = flipped(5, 2, skip + HASH_LEN + sl / 2);
        let hash_flip = flipped(6, 2, skip + 3);
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
}
