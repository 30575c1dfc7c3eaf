//! MinIO's streaming bitrot shard frame, sans I/O.
//!
//! A shard file (`part.N`) is a sequence of records `[hash][block]`: `hash`
//! is the 32-byte keyed HighwayHash-256 of `block`, every block is
//! `shard_size` bytes except the last, which may be shorter, and record `i`
//! starts at `i * (32 + shard_size)`. Empty data is an empty file. The file
//! size is MinIO's `bitrotShardFileSize`:
//! `ceil(data_len / shard_size) * 32 + data_len`.
//!
//! Nothing here does I/O or allocates: [`ShardLayout`] is the arithmetic,
//! [`ShardFrame`] seals blocks into and opens blocks out of the caller's
//! buffers. The `io` adapters ([`FrameWriter`](crate::FrameWriter),
//! [`FrameReader`](crate::FrameReader)) are thin layers over this.

use std::fmt;
use std::io;

use crate::{Kernel, MAGIC_HIGHWAYHASH256_KEY};

/// Bytes of the digest stored in front of every block.
pub const HASH_LEN: usize = 32;

/// MinIO's `bitrotShardFileSize` for the streaming format: the size of a
/// shard file holding `data_len` bytes in blocks of `shard_size`. `None`
/// if `shard_size` is zero or the size does not fit in a `u64`.
pub fn shard_file_size(data_len: u64, shard_size: u64) -> Option<u64> {
    if shard_size == 0 {
        return None;
    }
    data_len
        .div_ceil(shard_size)
        .checked_mul(HASH_LEN as u64)?
        .checked_add(data_len)
}

/// A keyed HighwayHash-256 on a chosen kernel: the bitrot algorithm.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bitrot {
    kernel: Kernel,
    key: [u8; 32],
}

impl Bitrot {
    /// MinIO's algorithm (`HighwayHash256S`): the fixed bitrot key on the
    /// detected kernel.
    pub fn minio() -> Self {
        Self::new(Kernel::detect(), &MAGIC_HIGHWAYHASH256_KEY)
    }

    /// `key` on `kernel`.
    pub fn new(kernel: Kernel, key: &[u8; 32]) -> Self {
        Bitrot { kernel, key: *key }
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The key.
    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }

    /// The digest of one block.
    pub fn sum(&self, block: &[u8]) -> [u8; 32] {
        self.kernel.hash256(&self.key, block)
    }

    /// The digests of several blocks, hashed together (multi-stream).
    ///
    /// # Panics
    /// If `blocks.len() != out.len()`.
    pub fn sum_many(&self, blocks: &[&[u8]], out: &mut [[u8; 32]]) {
        self.kernel.hash256_many(&self.key, blocks, out);
    }

    /// Seals records in place, hashing them together (multi-stream): each
    /// record's first [`HASH_LEN`] bytes become the digest of the rest.
    ///
    /// # Panics
    /// If a record is shorter than [`HASH_LEN`].
    pub fn seal_many<R: std::ops::DerefMut<Target = [u8]>>(&self, records: &mut [R]) {
        const CHUNK: usize = 16;
        for group in records.chunks_mut(CHUNK) {
            let mut sums = [[0u8; 32]; CHUNK];
            {
                let mut blocks: [&[u8]; CHUNK] = [&[]; CHUNK];
                for (b, r) in blocks.iter_mut().zip(group.iter()) {
                    *b = &r[HASH_LEN..];
                }
                self.sum_many(&blocks[..group.len()], &mut sums[..group.len()]);
            }
            for (r, s) in group.iter_mut().zip(sums.iter()) {
                r[..HASH_LEN].copy_from_slice(s);
            }
        }
    }
}

impl fmt::Debug for Bitrot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let minio = self.key == MAGIC_HIGHWAYHASH256_KEY;
        f.debug_struct("Bitrot")
            .field("kernel", &self.kernel)
            .field("minio_key", &minio)
            .finish_non_exhaustive()
    }
}

/// Why a [`ShardLayout`] cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// The shard size is zero.
    ZeroShardSize,
    /// The file size does not fit in a `u64`.
    TooLarge,
    /// No data length gives this file size (its last record would hold no
    /// data).
    ImpossibleFileSize(u64),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::ZeroShardSize => f.write_str("bitrot shard size is zero"),
            LayoutError::TooLarge => f.write_str("bitrot shard file size overflows u64"),
            LayoutError::ImpossibleFileSize(n) => {
                write!(f, "no bitrot shard file has {n} bytes with this shard size")
            }
        }
    }
}

impl std::error::Error for LayoutError {}

/// Where each record of a shard file is: the arithmetic of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShardLayout {
    shard_size: usize,
    data_len: u64,
    blocks: u64,
    file_size: u64,
}

impl ShardLayout {
    /// The layout of `data_len` data bytes in blocks of `shard_size`.
    pub fn new(shard_size: usize, data_len: u64) -> Result<Self, LayoutError> {
        if shard_size == 0 {
            return Err(LayoutError::ZeroShardSize);
        }
        let file_size =
            shard_file_size(data_len, shard_size as u64).ok_or(LayoutError::TooLarge)?;
        // Record offsets are computed as i * (32 + shard_size); make sure the
        // stride itself cannot overflow either.
        (shard_size as u64)
            .checked_add(HASH_LEN as u64)
            .ok_or(LayoutError::TooLarge)?;
        Ok(ShardLayout {
            shard_size,
            data_len,
            blocks: data_len.div_ceil(shard_size as u64),
            file_size,
        })
    }

    /// The layout of a shard file of `file_size` bytes (the inverse of
    /// [`file_size`](Self::file_size)).
    pub fn from_file_size(shard_size: usize, file_size: u64) -> Result<Self, LayoutError> {
        if shard_size == 0 {
            return Err(LayoutError::ZeroShardSize);
        }
        let stride = (shard_size as u64)
            .checked_add(HASH_LEN as u64)
            .ok_or(LayoutError::TooLarge)?;
        let blocks = file_size.div_ceil(stride);
        let last = file_size - (blocks.saturating_sub(1)) * stride;
        if blocks > 0 && last <= HASH_LEN as u64 {
            return Err(LayoutError::ImpossibleFileSize(file_size));
        }
        Self::new(shard_size, file_size - blocks * HASH_LEN as u64)
    }

    /// Data bytes per block (all blocks but the last, which may be shorter).
    pub fn shard_size(&self) -> usize {
        self.shard_size
    }

    /// Data bytes in the file.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Number of records (blocks).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Size of the file: data plus one digest per block.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Bytes between the starts of two records.
    pub fn stride(&self) -> u64 {
        self.shard_size as u64 + HASH_LEN as u64
    }

    /// Data bytes in block `i`; `None` if there is no such block.
    pub fn block_len(&self, i: u64) -> Option<usize> {
        if i >= self.blocks {
            return None;
        }
        let start = i * self.shard_size as u64;
        Some((self.data_len - start).min(self.shard_size as u64) as usize)
    }

    /// Bytes of record `i` (digest and block); `None` if there is no such
    /// block.
    pub fn record_len(&self, i: u64) -> Option<usize> {
        self.block_len(i).map(|n| n + HASH_LEN)
    }

    /// File offset of record `i` (where its digest starts); `None` if there
    /// is no such block.
    pub fn record_offset(&self, i: u64) -> Option<u64> {
        (i < self.blocks).then(|| i * self.stride())
    }

    /// Offset of block `i`'s first byte in the data (not the file); `None`
    /// if there is no such block.
    pub fn data_offset(&self, i: u64) -> Option<u64> {
        (i < self.blocks).then(|| i * self.shard_size as u64)
    }

    /// The block holding data offset `pos`; `None` past the end of the
    /// data.
    pub fn block_containing(&self, pos: u64) -> Option<u64> {
        (pos < self.data_len).then(|| pos / self.shard_size as u64)
    }

    fn check(&self, i: u64) -> Result<(usize, u64), FrameError> {
        match (self.block_len(i), self.record_offset(i)) {
            (Some(len), Some(off)) => Ok((len, off)),
            _ => Err(FrameError::BlockOutOfRange {
                block: i,
                blocks: self.blocks,
            }),
        }
    }
}

/// A failure to seal, open or read a shard file. Corruption errors carry the
/// block index and the file offset where the problem is.
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameError {
    /// The stored digest of a block does not match its data.
    HashMismatch {
        /// Index of the block.
        block: u64,
        /// File offset of the record (its stored digest).
        offset: u64,
        /// The digest found in the file.
        stored: [u8; 32],
        /// The digest of the data found in the file.
        computed: [u8; 32],
    },
    /// The file ends inside a record.
    Truncated {
        /// Index of the block whose record is incomplete.
        block: u64,
        /// File offset where the data ends (the length seen).
        offset: u64,
        /// File offset where the record should end.
        expected_end: u64,
    },
    /// The file continues past the last record.
    TrailingData {
        /// File offset of the first extra byte (the expected file size).
        offset: u64,
    },
    /// The block index is past the last block.
    BlockOutOfRange {
        /// The index asked for.
        block: u64,
        /// The number of blocks.
        blocks: u64,
    },
    /// A buffer passed to seal or open has the wrong length for the block
    /// (longer than the record, or a block not of the block's length).
    WrongLength {
        /// Index of the block.
        block: u64,
        /// The length the block or record must have.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// The underlying reader or writer failed.
    Io {
        /// Index of the block being read or written.
        block: u64,
        /// File offset the operation was at.
        offset: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// A reader is unusable after an earlier error, until it is seeked.
    Poisoned {
        /// Index of the block that failed.
        block: u64,
    },
}

impl FrameError {
    /// The index of the block concerned, if any.
    pub fn block(&self) -> Option<u64> {
        match self {
            FrameError::HashMismatch { block, .. }
            | FrameError::Truncated { block, .. }
            | FrameError::BlockOutOfRange { block, .. }
            | FrameError::WrongLength { block, .. }
            | FrameError::Io { block, .. }
            | FrameError::Poisoned { block } => Some(*block),
            FrameError::TrailingData { .. } => None,
        }
    }

    /// The file offset concerned, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            FrameError::HashMismatch { offset, .. }
            | FrameError::Truncated { offset, .. }
            | FrameError::TrailingData { offset }
            | FrameError::Io { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// Whether this says the file is corrupt (digest mismatch, truncation,
    /// trailing bytes), as opposed to misuse or an I/O failure. MinIO
    /// reports all of these as `errFileCorrupt`.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            FrameError::HashMismatch { .. }
                | FrameError::Truncated { .. }
                | FrameError::TrailingData { .. }
        )
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::HashMismatch {
                block,
                offset,
                stored,
                computed,
            } => write!(
                f,
                "bitrot: block {block} (record at file offset {offset}) is corrupt: \
                 stored hash {} != computed {}",
                hex(stored),
                hex(computed)
            ),
            FrameError::Truncated {
                block,
                offset,
                expected_end,
            } => write!(
                f,
                "bitrot: shard file truncated at offset {offset} inside block {block} \
                 (record ends at {expected_end})"
            ),
            FrameError::TrailingData { offset } => {
                write!(f, "bitrot: shard file has extra bytes from offset {offset}")
            }
            FrameError::BlockOutOfRange { block, blocks } => {
                write!(f, "bitrot: block {block} out of range ({blocks} blocks)")
            }
            FrameError::WrongLength {
                block,
                expected,
                actual,
            } => write!(
                f,
                "bitrot: block {block}: buffer of {actual} bytes where {expected} are required"
            ),
            FrameError::Io {
                block,
                offset,
                source,
            } => write!(
                f,
                "bitrot: I/O error at offset {offset} (block {block}): {source}"
            ),
            FrameError::Poisoned { block } => write!(
                f,
                "bitrot: reader failed earlier at block {block}; seek before reading again"
            ),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// For `std::io` callers: corruption is `InvalidData` (`UnexpectedEof` for
/// truncation), I/O failures keep their kind; the [`FrameError`] is the
/// payload (`io::Error::get_ref` / `into_inner` + `downcast`).
impl From<FrameError> for io::Error {
    fn from(e: FrameError) -> io::Error {
        let kind = match &e {
            FrameError::Truncated { .. } => io::ErrorKind::UnexpectedEof,
            FrameError::Io { source, .. } => source.kind(),
            FrameError::BlockOutOfRange { .. } | FrameError::WrongLength { .. } => {
                io::ErrorKind::InvalidInput
            }
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

/// Sealing and opening the records of one shard file: a layout and the
/// bitrot algorithm. Works on the caller's buffers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardFrame {
    layout: ShardLayout,
    bitrot: Bitrot,
}

impl ShardFrame {
    /// A frame with MinIO's algorithm ([`Bitrot::minio`]).
    pub fn minio(layout: ShardLayout) -> Self {
        Self::new(layout, Bitrot::minio())
    }

    /// A frame with the given algorithm.
    pub fn new(layout: ShardLayout, bitrot: Bitrot) -> Self {
        ShardFrame { layout, bitrot }
    }

    /// The layout.
    pub fn layout(&self) -> &ShardLayout {
        &self.layout
    }

    /// The algorithm.
    pub fn bitrot(&self) -> &Bitrot {
        &self.bitrot
    }

    /// Computes block `i`'s digest into `hash` (the caller's 32-byte slot).
    /// `block` must be exactly `layout().block_len(i)` bytes.
    pub fn seal(&self, i: u64, block: &[u8], hash: &mut [u8; 32]) -> Result<(), FrameError> {
        let (len, _) = self.layout.check(i)?;
        if block.len() != len {
            return Err(FrameError::WrongLength {
                block: i,
                expected: len,
                actual: block.len(),
            });
        }
        *hash = self.bitrot.sum(block);
        Ok(())
    }

    /// Seals record `i` in place: `record` is the whole record
    /// (`layout().record_len(i)` bytes) with the block already at
    /// `record[32..]`; the digest is written to `record[..32]`. No copy.
    pub fn seal_record(&self, i: u64, record: &mut [u8]) -> Result<(), FrameError> {
        let (len, _) = self.layout.check(i)?;
        if record.len() != len + HASH_LEN {
            return Err(FrameError::WrongLength {
                block: i,
                expected: len + HASH_LEN,
                actual: record.len(),
            });
        }
        let (hash, block) = record.split_at_mut(HASH_LEN);
        hash.copy_from_slice(&self.bitrot.sum(block));
        Ok(())
    }

    /// Writes record `i` (digest, then a copy of `block`) to the front of
    /// `out`, returning the record's length.
    pub fn write_record(&self, i: u64, block: &[u8], out: &mut [u8]) -> Result<usize, FrameError> {
        let (len, _) = self.layout.check(i)?;
        if block.len() != len {
            return Err(FrameError::WrongLength {
                block: i,
                expected: len,
                actual: block.len(),
            });
        }
        if out.len() < len + HASH_LEN {
            return Err(FrameError::WrongLength {
                block: i,
                expected: len + HASH_LEN,
                actual: out.len(),
            });
        }
        let (hash, rest) = out.split_at_mut(HASH_LEN);
        hash.copy_from_slice(&self.bitrot.sum(block));
        rest[..len].copy_from_slice(block);
        Ok(len + HASH_LEN)
    }

    /// Seals the records of several shard files at block `i` in place (the
    /// k + m shards of one erasure block), hashing them together.
    pub fn seal_many(&self, i: u64, records: &mut [&mut [u8]]) -> Result<(), FrameError> {
        let (len, _) = self.layout.check(i)?;
        for r in records.iter() {
            if r.len() != len + HASH_LEN {
                return Err(FrameError::WrongLength {
                    block: i,
                    expected: len + HASH_LEN,
                    actual: r.len(),
                });
            }
        }
        self.bitrot.seal_many(records);
        Ok(())
    }

    /// Verifies record `i` and returns its block (a sub-slice of `record`).
    /// `record` must be the whole record; a shorter one is reported as a
    /// truncated file (the caller passes what it could read).
    pub fn open<'a>(&self, i: u64, record: &'a [u8]) -> Result<&'a [u8], FrameError> {
        let (len, off) = self.check_record(i, record)?;
        let computed = self.bitrot.sum(&record[HASH_LEN..]);
        Self::compare(i, off, record, computed)?;
        Ok(&record[HASH_LEN..HASH_LEN + len])
    }

    /// [`open`](Self::open) for the records at block `i` of several shard
    /// files, hashed together: `out[j]` is the result for `records[j]`.
    ///
    /// # Panics
    /// If `records.len() != out.len()`.
    pub fn open_many<'a>(
        &self,
        i: u64,
        records: &[&'a [u8]],
        out: &mut [Result<&'a [u8], FrameError>],
    ) {
        assert_eq!(records.len(), out.len(), "open_many: one result per record");
        const CHUNK: usize = 16;
        for (rgroup, ogroup) in records.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let mut blocks: [&[u8]; CHUNK] = [&[]; CHUNK];
            let mut idx = [0usize; CHUNK];
            let mut n = 0;
            for (j, (r, o)) in rgroup.iter().zip(ogroup.iter_mut()).enumerate() {
                match self.check_record(i, r) {
                    Ok(_) => {
                        blocks[n] = &r[HASH_LEN..];
                        idx[n] = j;
                        n += 1;
                    }
                    Err(e) => *o = Err(e),
                }
            }
            let mut sums = [[0u8; 32]; CHUNK];
            self.bitrot.sum_many(&blocks[..n], &mut sums[..n]);
            let off = self.layout.record_offset(i).unwrap_or(0);
            for (k, &j) in idx[..n].iter().enumerate() {
                let r = rgroup[j];
                ogroup[j] = Self::compare(i, off, r, sums[k]).map(|()| &r[HASH_LEN..]);
            }
        }
    }

    fn check_record(&self, i: u64, record: &[u8]) -> Result<(usize, u64), FrameError> {
        let (len, off) = self.layout.check(i)?;
        let want = len + HASH_LEN;
        if record.len() < want {
            return Err(FrameError::Truncated {
                block: i,
                offset: off + record.len() as u64,
                expected_end: off + want as u64,
            });
        }
        if record.len() > want {
            return Err(FrameError::WrongLength {
                block: i,
                expected: want,
                actual: record.len(),
            });
        }
        Ok((len, off))
    }

    fn compare(i: u64, off: u64, record: &[u8], computed: [u8; 32]) -> Result<(), FrameError> {
        let stored: [u8; 32] = record[..HASH_LEN].try_into().expect("32-byte digest");
        // Not a secret: a plain comparison is fine.
        if stored != computed {
            return Err(FrameError::HashMismatch {
                block: i,
                offset: off,
                stored,
                computed,
            });
        }
        Ok(())
    }
}
