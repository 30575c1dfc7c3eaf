//! GET and HEAD: the version a read quorum agrees on, then the blocks of
//! the wanted range, part by part, each block's shards fetched, verified
//! and rebuilt by `block.rs` (the reads of the next blocks in flight while
//! one is sent, once a read had to wait for the disk), or taken from the
//! read cache.

use std::collections::VecDeque;

use bitrot::HASH_LEN;
use bytes::Bytes;
use drive::{ALIGN, align_up};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::block::{BlockFetch, CachedPart, FetchSource, PartSource, ShardFiles};
use super::*;
use crate::layer::names::object_dir;

/// Erasure blocks whose shard reads a GET keeps in flight beyond the one
/// it is sending, while its reads wait for the disk. While the caches serve
/// them at once, it reads none ahead: each record is then read, hashed and
/// sent while it is still in the core's cache (1.05x-1.16x the MiB per
/// server CPU-second of reading 2 ahead, 16 MiB objects at c=8 on the
/// 2-vCPU bench machine); reading ahead from the disk keeps a single cold
/// stream 1.1x faster. Measured with `tessera-bench get --obj-size 16MiB
/// --concurrent 8` against one server on four directories, comparing the
/// server's CPU-seconds per MiB (`docs/bench-notes/get.md`).
const READ_AHEAD_BLOCKS: usize = 2;

/// One read of a resolved version: the object, and the bytes wanted.
struct ReadPlan<'a> {
    bucket: &'a str,
    key: &'a str,
    /// The object's directory ([`object_dir`] of its key).
    dir: &'a str,
    resolved: &'a Resolved,
    offset: u64,
    length: u64,
}

impl ErasureSet {
    /// HEAD of a version.
    pub async fn head(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<ObjectInfo> {
        self.open(bucket, key, version).await.map(|(info, _)| info)
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
            return Err(delete_marker_error(bucket, key, version));
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
            let plan = ReadPlan {
                bucket,
                key,
                dir: &dir,
                resolved: r,
                offset,
                length,
            };
            self.read_range(&plan, sink, &mut report).await?;
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
        if length == 0 || ov.inline_data() {
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

    /// Reads the range of `plan` into `sink`, block by block; the drives
    /// that failed a read go into `report`.
    async fn read_range<S: ChunkSink>(
        &self,
        plan: &ReadPlan<'_>,
        sink: &mut S,
        report: &mut ReadReport,
    ) -> Result<()> {
        let ReadPlan {
            bucket,
            key,
            dir,
            resolved: r,
            offset,
            length,
        } = *plan;
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
        let holder = r.holders();
        let data_dir = Uuid::from_bytes(ov.data_dir).to_string();
        let shard_size = block_size.div_ceil(k as u64) as usize;
        let inline = ov.inline_data();
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
                let (pn, psize) = (span.number, span.size);
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
                    part: PartSource {
                        rs: &rs,
                        bucket,
                        path: &path,
                        resolved: r,
                        holder: &holder,
                        frame: &frame,
                        inline,
                    },
                    path: &path,
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
                        .finish_block(&src, fetched, b, sl, &mut bad)
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
}

/// The answer to a read, HEAD or metadata edit that resolved to a delete
/// marker: no such key when the latest version was asked for, else (a
/// delete marker asked for by its id) not allowed, as S3 answers.
pub(super) fn delete_marker_error(bucket: &str, key: &str, asked: Option<VersionSel>) -> Error {
    if asked.is_none() {
        Error::NoSuchKey {
            bucket: bucket.into(),
            key: key.into(),
            delete_marker: true,
        }
    } else {
        Error::MethodNotAllowed
    }
}

/// A part that bytes `offset..end` of a version touch ([`part_spans`]).
struct PartSpan {
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
    (ov.part_numbers.iter().zip(&ov.part_sizes)).filter_map(move |(&number, &size)| {
        let size = u64::try_from(size).unwrap_or(0);
        let (p0, p1) = (part_start, part_start + size);
        part_start = p1;
        (p1 > offset && p0 < end && size > 0).then(|| PartSpan {
            number,
            size,
            lo: offset.max(p0) - p0,
            hi: end.min(p1) - p0,
        })
    })
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

/// `e` with the object it concerns filled in, when it is a
/// [`Error::DataUnreadable`] raised by the block readers (which know only
/// the block).
pub(super) fn located(e: Error, bucket: &str, key: &str, part: i64) -> Error {
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
