//! Thin `std::io` adapters over the sans-IO frame.

use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::frame::{Bitrot, FrameError, HASH_LEN, ShardFrame, ShardLayout};

/// Frames a stream of data into shard-file records on a [`Write`]r.
///
/// Data written through [`Write`] is cut into `shard_size` blocks; whole
/// blocks that arrive in one `write` are hashed straight from the caller's
/// buffer (no copy), others are gathered in an internal record buffer and
/// sealed in place. [`finish`](Self::finish) writes the last, shorter block.
/// [`write_block`](Self::write_block) is the block-at-a-time form (MinIO's
/// writer: one record per call).
///
/// `flush` flushes the inner writer but never emits a partial block (that
/// would change the format); dropping the writer without `finish` loses the
/// buffered partial block. After an error from the inner writer the frame
/// writer refuses further writes.
pub struct FrameWriter<W: Write> {
    inner: W,
    bitrot: Bitrot,
    shard_size: usize,
    /// `[digest slot][block]`, allocated on the first partial block.
    record: Vec<u8>,
    /// Data bytes in `record[HASH_LEN..]`.
    filled: usize,
    blocks: u64,
    data_len: u64,
    /// A block shorter than `shard_size` was written: the stream is over.
    ended: bool,
    failed: bool,
}

impl<W: Write> FrameWriter<W> {
    /// A writer of blocks of `shard_size` data bytes.
    ///
    /// # Panics
    /// If `shard_size` is zero.
    pub fn new(inner: W, bitrot: Bitrot, shard_size: usize) -> Self {
        assert!(shard_size > 0, "bitrot shard size must be positive");
        FrameWriter {
            inner,
            bitrot,
            shard_size,
            record: Vec::new(),
            filled: 0,
            blocks: 0,
            data_len: 0,
            ended: false,
            failed: false,
        }
    }

    /// Records written so far.
    pub fn blocks_written(&self) -> u64 {
        self.blocks
    }

    /// Data bytes accepted so far (written or buffered).
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    fn check_open(&self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(
                "bitrot frame writer failed earlier; the shard file is incomplete",
            ));
        }
        if self.ended {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bitrot frame writer: data after the final (short) block",
            ));
        }
        Ok(())
    }

    fn emit(&mut self, hash: &[u8; 32], block: &[u8]) -> io::Result<()> {
        let r = self
            .inner
            .write_all(hash)
            .and_then(|()| self.inner.write_all(block));
        if r.is_err() {
            self.failed = true;
        }
        r?;
        self.blocks += 1;
        Ok(())
    }

    fn emit_buffered(&mut self) -> io::Result<()> {
        let n = HASH_LEN + self.filled;
        let (hash, block) = self.record[..n].split_at_mut(HASH_LEN);
        hash.copy_from_slice(&self.bitrot.sum(block));
        let r = self.inner.write_all(&self.record[..n]);
        if r.is_err() {
            self.failed = true;
        }
        r?;
        self.blocks += 1;
        self.filled = 0;
        Ok(())
    }

    /// Writes one record for `block` (1..=`shard_size` bytes; an empty block
    /// writes nothing, as MinIO's writer). A block shorter than `shard_size`
    /// ends the stream. Nothing may be buffered from [`Write`] calls.
    pub fn write_block(&mut self, block: &[u8]) -> io::Result<()> {
        self.check_open()?;
        if block.is_empty() {
            return Ok(());
        }
        if block.len() > self.shard_size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "bitrot block of {} bytes exceeds the shard size {}",
                    block.len(),
                    self.shard_size
                ),
            ));
        }
        if self.filled != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bitrot write_block with a partial block buffered",
            ));
        }
        let hash = self.bitrot.sum(block);
        self.emit(&hash, block)?;
        self.data_len += block.len() as u64;
        if block.len() < self.shard_size {
            self.ended = true;
        }
        Ok(())
    }

    /// Writes the buffered partial block, if any, flushes, and returns the
    /// inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.failed {
            self.check_open()?;
        }
        if self.filled > 0 {
            self.emit_buffered()?;
        }
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        self.check_open()?;
        let total = buf.len();
        while !buf.is_empty() {
            if self.filled == 0 && buf.len() >= self.shard_size {
                // Zero-copy: hash the caller's whole blocks where they are
                // (several at once: they are independent streams) and write
                // them directly.
                const BATCH: usize = 8;
                let n = (buf.len() / self.shard_size).min(BATCH);
                let mut blocks: [&[u8]; BATCH] = [&[]; BATCH];
                for (i, b) in blocks[..n].iter_mut().enumerate() {
                    *b = &buf[i * self.shard_size..(i + 1) * self.shard_size];
                }
                let mut sums = [[0u8; 32]; BATCH];
                self.bitrot.sum_many(&blocks[..n], &mut sums[..n]);
                for (block, hash) in blocks[..n].iter().zip(&sums) {
                    self.emit(hash, block)?;
                }
                buf = &buf[n * self.shard_size..];
                continue;
            }
            if self.record.is_empty() {
                self.record = vec![0; HASH_LEN + self.shard_size];
            }
            let take = (self.shard_size - self.filled).min(buf.len());
            let at = HASH_LEN + self.filled;
            self.record[at..at + take].copy_from_slice(&buf[..take]);
            self.filled += take;
            buf = &buf[take..];
            if self.filled == self.shard_size {
                self.emit_buffered()?;
            }
        }
        self.data_len += total as u64;
        Ok(total)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> std::fmt::Debug for FrameWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("shard_size", &self.shard_size)
            .field("blocks", &self.blocks)
            .field("data_len", &self.data_len)
            .field("buffered", &self.filled)
            .finish_non_exhaustive()
    }
}

/// Reads the data of a shard file, verifying every record before any byte
/// of it leaves the reader.
///
/// Each record is read whole into an internal buffer and its digest
/// checked; only then are its bytes handed out ([`Read::read`] copies them,
/// [`next_block`](Self::next_block) lends them). A corrupt or truncated
/// record yields a [`FrameError`] (inside the `io::Error` for `Read`) with
/// the block index and file offset, after all the verified bytes before it.
/// After an error the reader stays failed until it is repositioned.
///
/// Range reads: [`starting_at`](Self::starting_at) takes a reader already
/// positioned at a record (for example a ranged stream from the drive), and
/// with [`Seek`] the reader seeks in data coordinates (a seek inside the
/// current, already verified block costs nothing).
pub struct FrameReader<R> {
    inner: R,
    frame: ShardFrame,
    record: Vec<u8>,
    /// The block whose verified record is in `record`, if any.
    current: Option<u64>,
    /// Next unread data byte within the current block.
    cursor: usize,
    /// Data bytes of the current block.
    current_len: usize,
    /// The next record `inner` will produce.
    next: u64,
    /// Data bytes to skip in block `next` once read (after a seek).
    skip: usize,
    /// Data offset of the next byte `read` returns.
    pos: u64,
    failed: Option<u64>,
}

impl<R: Read> FrameReader<R> {
    /// A reader of the whole file; `inner` is at file offset 0.
    pub fn new(inner: R, frame: ShardFrame) -> Self {
        Self::starting_at(inner, frame, 0)
    }

    /// A reader from block `block` on; `inner` must already be at that
    /// record's file offset (`frame.layout().record_offset(block)`), as a
    /// ranged read from storage is. A block past the end reads nothing.
    pub fn starting_at(inner: R, frame: ShardFrame, block: u64) -> Self {
        let layout = *frame.layout();
        let next = block.min(layout.blocks());
        FrameReader {
            inner,
            frame,
            record: Vec::new(),
            current: None,
            cursor: 0,
            current_len: 0,
            next,
            skip: 0,
            pos: layout.data_offset(next).unwrap_or(layout.data_len()),
            failed: None,
        }
    }

    /// The layout.
    pub fn layout(&self) -> &ShardLayout {
        self.frame.layout()
    }

    /// The data offset of the next byte to be read.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The inner reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads and verifies the next record into the buffer. `Ok(false)` at
    /// the end of the data.
    fn fill(&mut self) -> Result<bool, FrameError> {
        if let Some(block) = self.failed {
            return Err(FrameError::Poisoned { block });
        }
        let layout = *self.frame.layout();
        let i = self.next;
        let (Some(rec_len), Some(off)) = (layout.record_len(i), layout.record_offset(i)) else {
            return Ok(false);
        };
        if self.record.len() < rec_len {
            self.record.resize(rec_len, 0);
        }
        self.current = None;
        let r = self.read_record(i, off, rec_len);
        if r.is_err() {
            self.failed = Some(i);
        }
        r?;
        self.current = Some(i);
        self.current_len = rec_len - HASH_LEN;
        self.cursor = self.skip;
        self.skip = 0;
        self.next = i + 1;
        Ok(true)
    }

    fn read_record(&mut self, i: u64, off: u64, rec_len: usize) -> Result<(), FrameError> {
        let buf = &mut self.record[..rec_len];
        let mut got = 0;
        while got < rec_len {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(FrameError::Truncated {
                        block: i,
                        offset: off + got as u64,
                        expected_end: off + rec_len as u64,
                    });
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(FrameError::Io {
                        block: i,
                        offset: off + got as u64,
                        source,
                    });
                }
            }
        }
        self.frame.open(i, buf).map(|_| ())
    }

    /// The next verified data: the rest of the current block if part of it
    /// is unread, else the next block. `Ok(None)` at the end of the data.
    /// Lends the reader's buffer (no copy).
    pub fn next_block(&mut self) -> Result<Option<&[u8]>, FrameError> {
        if (self.current.is_none() || self.cursor >= self.current_len) && !self.fill()? {
            return Ok(None);
        }
        let start = HASH_LEN + self.cursor;
        let end = HASH_LEN + self.current_len;
        self.pos += (self.current_len - self.cursor) as u64;
        self.cursor = self.current_len;
        Ok(Some(&self.record[start..end]))
    }

    /// Reads the rest of the file, verifying every record, and checks that
    /// nothing follows the last record: MinIO's `bitrotVerify`.
    pub fn verify_to_end(mut self) -> Result<(), FrameError> {
        while self.next_block()?.is_some() {}
        let end = self.frame.layout().file_size();
        let mut probe = [0u8; 1];
        loop {
            match self.inner.read(&mut probe) {
                Ok(0) => return Ok(()),
                Ok(_) => return Err(FrameError::TrailingData { offset: end }),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(FrameError::Io {
                        block: self.frame.layout().blocks(),
                        offset: end,
                        source,
                    });
                }
            }
        }
    }
}

impl<R: Read + Seek> FrameReader<R> {
    /// A reader positioned at the start of block `block` (seeks `inner`).
    pub fn at_block(inner: R, frame: ShardFrame, block: u64) -> io::Result<Self> {
        let mut r = Self::new(inner, frame);
        let pos = frame
            .layout()
            .data_offset(block)
            .unwrap_or(frame.layout().data_len());
        r.seek(SeekFrom::Start(pos))?;
        Ok(r)
    }
}

impl<R: Read> Read for FrameReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if (self.current.is_none() || self.cursor >= self.current_len) && !self.fill()? {
            return Ok(0);
        }
        let n = (self.current_len - self.cursor).min(out.len());
        let start = HASH_LEN + self.cursor;
        out[..n].copy_from_slice(&self.record[start..start + n]);
        self.cursor += n;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Seeks in data coordinates (offsets into the data, not the file).
/// Seeking past the end is allowed; reads there return nothing.
impl<R: Read + Seek> Seek for FrameReader<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let layout = *self.frame.layout();
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => layout.data_len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )
        })?;
        let Some(block) = layout.block_containing(target) else {
            // At or past the end of the data.
            self.current = None;
            self.next = layout.blocks();
            self.skip = 0;
            self.failed = None;
            self.pos = target;
            return Ok(target);
        };
        let within = (target - block * layout.shard_size() as u64) as usize;
        if self.failed.is_none() && self.current == Some(block) {
            // Inside the verified block in the buffer: no I/O.
            self.cursor = within;
            self.pos = target;
            return Ok(target);
        }
        let off = layout.record_offset(block).expect("block in range");
        self.inner.seek(SeekFrom::Start(off))?;
        self.current = None;
        self.next = block;
        self.skip = within;
        self.failed = None;
        self.pos = target;
        Ok(target)
    }
}

impl<R> std::fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("layout", self.frame.layout())
            .field("next", &self.next)
            .field("pos", &self.pos)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}
