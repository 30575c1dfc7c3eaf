//! The verified bytes a read hands on ([`Chunk`]) and where they go
//! ([`ChunkSink`], [`WriteSink`]): views of the buffers the shard records
//! were read into, passed on without a copy.

use bytes::Bytes;
use drive::AlignedBuf;
use tokio::io::{AsyncWrite, AsyncWriteExt};

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
    /// Bytes `range` of a record buffer a shard was read into.
    pub(super) fn record(buf: AlignedBuf, range: std::ops::Range<usize>) -> Chunk {
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
    pub(super) fn with_prefix(&self, before: usize) -> Option<&[u8]> {
        match &self.buf {
            ChunkBuf::Record(b) => {
                let start = self.range.start.checked_sub(before)?;
                b.get(start..self.range.end)
            }
            _ => None,
        }
    }

    /// Gives the chunk a pipe holding the same bytes.
    pub(super) fn set_pipe(&mut self, pipe: drive::pipe::Pipe) {
        self.pipe = Some(pipe);
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
/// ends the read with [`Error::Output`](super::Error::Output).
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

/// A record buffer as the owner of the [`Bytes`] slices made of it.
struct RecordBuf(AlignedBuf);

impl AsRef<[u8]> for RecordBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
