//! The bitrot records of erasure blocks, as a shard file holds them:
//! `[HighwayHash-256][shard]` per block and shard. [`ErasureSet::encode_block`]
//! is the reference; [`RecordStreams`] builds the same bytes for a streamed
//! upload in place, in aligned buffers the drive writers take without a
//! copy.

use bitrot::HASH_LEN;
use drive::{ALIGN, AlignedBuf, BufferPool, align_up};
use tokio::io::AsyncRead;

use super::put::read_full;
use super::*;

impl ErasureSet {
    /// Splits `block` into `k` data shards of `ceil(len / k)` bytes (the last
    /// zero-padded), computes `m` parity shards, and returns the `k + m`
    /// bitrot records `[hash][shard]`.
    pub(super) fn encode_block(
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
pub(super) struct RecordStreams {
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
    pub(super) fn new(set: &ErasureSet, k: usize, m: usize) -> Self {
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
    pub(super) async fn read_block<R: AsyncRead + Unpin>(&mut self, body: &mut R) -> Result<usize> {
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
    pub(super) async fn seal_block(
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

#[cfg(test)]
mod tests {
    use super::*;

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
            read_pools: drive::PoolClasses::new(MAX_READ_POOLS, MAX_READ_BUFS, IDLE_READ_BUFS),
            put_queue: PutQueue::new(PUT_QUEUE_BYTES_PER_DRIVE),
            cache: None,
            journal: None,
        };
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
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
                let mut data = vec![0u8; len];
                rng.fill(&mut data);
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
