//! [`Hasher`]: the streaming MD5 of one request, its partial-block buffer,
//! and the split of each update into the whole blocks the hub hashes
//! (borrowed, owned, or glued from the edges of several buffers).

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Shared;
use super::future::{BlockUpdate, Stage};
use super::job::{BlockPtr, Job, Owned, Segment};
use super::sync::run_sync;
use crate::portable::{self, BLOCK, INIT};

/// A streaming MD5 computation of an [`Md5Hub`](super::Md5Hub).
///
/// [`update`](Hasher::update) (synchronous, borrowed bytes) and
/// [`update_block`](Hasher::update_block) (a future, owned buffer) can be
/// mixed. Dropping a hasher at any point between calls is fine.
pub struct Hasher {
    pub(super) shared: Arc<Shared>,
    pub(super) state: [u32; 4],
    buf: [u8; BLOCK],
    buf_len: usize,
    total: u64,
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hasher")
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        self.shared.live_hashers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Hasher {
    /// A new computation of `shared`'s hub, counted live until dropped.
    pub(super) fn new(shared: Arc<Shared>) -> Hasher {
        shared.live_hashers.fetch_add(1, Ordering::Relaxed);
        Hasher {
            shared,
            state: INIT,
            buf: [0; BLOCK],
            buf_len: 0,
            total: 0,
        }
    }

    /// Splits `data` into the part that completes the buffered block (hashed
    /// here), the whole blocks (returned as a range) and the tail (left for
    /// the caller to buffer after the whole blocks).
    fn prefix(&mut self, data: &[u8]) -> std::ops::Range<usize> {
        self.total += data.len() as u64;
        let start = self.top_up(data);
        if self.buf_len == BLOCK {
            portable::compress(&mut self.state, &self.buf);
            self.buf_len = 0;
        } else if self.buf_len > 0 {
            return start..start;
        }
        let whole = (data.len() - start) / BLOCK * BLOCK;
        start..start + whole
    }

    /// Moves the head of `data` into the buffered partial block, if there
    /// is one, up to a whole block (which the caller then takes and
    /// clears). Returns how many bytes it took.
    fn top_up(&mut self, data: &[u8]) -> usize {
        if self.buf_len == 0 {
            return 0;
        }
        let take = (BLOCK - self.buf_len).min(data.len());
        self.buf[self.buf_len..self.buf_len + take].copy_from_slice(&data[..take]);
        self.buf_len += take;
        take
    }

    fn buffer_tail(&mut self, tail: &[u8]) {
        debug_assert!(self.buf_len + tail.len() <= BLOCK);
        self.buf[self.buf_len..self.buf_len + tail.len()].copy_from_slice(tail);
        self.buf_len += tail.len();
    }

    /// Feeds `data`. Whole blocks of a large enough update are hashed in
    /// the lanes together with other hashers' blocks when other streams are
    /// live; the call returns when they are hashed (after at most the
    /// bounded waits of the module documentation).
    pub fn update(&mut self, data: &[u8]) {
        let range = self.prefix(data);
        let whole = &data[range.clone()];
        if !whole.is_empty() {
            if self.shared.wants_lanes(whole.len()) {
                self.state = run_sync(&self.shared, self.state, whole);
            } else {
                self.shared.count_alone(whole.len() / BLOCK);
                portable::compress(&mut self.state, whole);
            }
        }
        self.buffer_tail(&data[range.end..]);
    }

    /// Feeds `block` (typically a 1 MiB erasure block) as a future that
    /// gives the hasher and the buffer back. Callers on an async runtime
    /// use this one: while the block waits for a lane, the task yields and
    /// the worker thread runs other tasks (which may submit more blocks).
    /// When it does run, the future may hash a batch of several tasks'
    /// blocks on the polling thread (like a synchronous MD5 would block it
    /// for its own block), bounded by the lanes' current jobs.
    ///
    /// Dropping the future before it completes drops the hasher too (its
    /// state would be unknown).
    ///
    /// ```
    /// // A PUT's loop: one read buffer, handed over and given back.
    /// async fn etag(blocks: &[&[u8]]) -> [u8; 16] {
    ///     let mut h = md5x::Md5Hub::global().hasher();
    ///     let mut buf = Vec::with_capacity(1 << 20);
    ///     for b in blocks {
    ///         buf.clear();
    ///         buf.extend_from_slice(b); // stands for the body read
    ///         (h, buf) = h.update_block(buf).await;
    ///     }
    ///     h.finalize()
    /// }
    /// # let w = std::task::Waker::noop();
    /// # let mut cx = std::task::Context::from_waker(w);
    /// # let mut f = std::pin::pin!(etag(&[b"ab", b"c"]));
    /// # let d = loop {
    /// #     if let std::task::Poll::Ready(d) = f.as_mut().poll(&mut cx) { break d; }
    /// # };
    /// # assert_eq!(d, md5x::digest(b"abc"));
    /// ```
    pub fn update_block(self, block: Vec<u8>) -> BlockUpdate {
        self.update_owned(block, |b: &Vec<u8>| vec![&b[..]])
    }

    /// Feeds the concatenation of `parts` (each a range of a buffer's
    /// [`StableBytes::bytes`]) as a future that gives the hasher and the
    /// buffers back, in order. Like [`update_block`](Hasher::update_block),
    /// but the bytes may lie in several buffers and need not be copied
    /// together first: a PUT reads its body straight into the data shards
    /// of its erasure-coded records and hashes them there. The blocks that
    /// straddle two parts are copied (64 bytes each); everything else is
    /// hashed where it lies.
    ///
    /// # Panics
    /// If a range is out of its buffer's bounds.
    ///
    /// ```
    /// # let w = std::task::Waker::noop();
    /// # let mut cx = std::task::Context::from_waker(w);
    /// let h = md5x::Md5Hub::global().hasher();
    /// let parts = vec![(b"xxab".to_vec(), 2..4), (b"c".to_vec(), 0..1)];
    /// let mut f = std::pin::pin!(h.update_parts(parts));
    /// let (h, bufs) = loop {
    ///     if let std::task::Poll::Ready(r) = f.as_mut().poll(&mut cx) { break r; }
    /// };
    /// assert_eq!(bufs[1], b"c");
    /// assert_eq!(h.finalize(), md5x::digest(b"abc"));
    /// ```
    pub fn update_parts<B: StableBytes>(
        self,
        parts: Vec<(B, Range<usize>)>,
    ) -> BlockUpdate<Vec<B>> {
        let (bufs, ranges): (Vec<B>, Vec<Range<usize>>) = parts.into_iter().unzip();
        for (b, r) in bufs.iter().zip(&ranges) {
            assert!(
                r.start <= r.end && r.end <= b.bytes().len(),
                "update_parts: range {r:?} out of a buffer of {} bytes",
                b.bytes().len()
            );
        }
        self.update_owned(bufs, move |bufs: &Vec<B>| {
            bufs.iter()
                .zip(&ranges)
                .map(|(b, r)| &b.bytes()[r.clone()])
                .collect()
        })
    }

    /// The owned updates: `owner` holds the bytes and `parts` finds them in
    /// it. The slices `parts` returns must not move when `owner` moves
    /// (true of a `Vec<u8>` and of a `Vec` of [`StableBytes`], the only
    /// owners used): the job keeps pointers to them.
    fn update_owned<O, F>(mut self, owner: O, parts: F) -> BlockUpdate<O>
    where
        O: Send + 'static,
        F: for<'a> Fn(&'a O) -> Vec<&'a [u8]>,
    {
        let (pieces, glue) = self.plan(&parts(&owner));
        let whole = pieces.iter().map(Piece::blocks).sum::<usize>() * BLOCK;
        if whole == 0 || !self.shared.wants_lanes(whole) {
            if whole > 0 {
                self.shared.count_alone(whole / BLOCK);
                let slices = parts(&owner);
                for p in &pieces {
                    portable::compress(&mut self.state, p.bytes(&slices, &glue));
                }
            }
            return BlockUpdate {
                stage: Stage::Ready(self, owner),
            };
        }
        let segments = {
            let slices = parts(&owner);
            pieces
                .iter()
                .map(|p| {
                    let b = p.bytes(&slices, &glue);
                    Segment {
                        data: BlockPtr(b.as_ptr()),
                        blocks: b.len() / BLOCK,
                    }
                })
                .collect()
        };
        // Moving `owner` and `glue` into the job does not move the bytes
        // the segments point to (see above; a Vec's heap buffer stays put).
        let owned = Owned {
            caller: Box::new(owner),
            _glue: glue,
        };
        let job = Arc::new(Job::new(segments, self.state, Some(owned)));
        BlockUpdate {
            stage: Stage::New { hasher: self, job },
        }
    }

    /// Splits the bytes `parts` add to the stream into whole blocks: runs
    /// of the parts' own bytes, and glue blocks (copied into the returned
    /// buffer) where a block completes the bytes buffered before or
    /// straddles two parts. The last partial block is buffered in the
    /// hasher, which counts every byte: the hasher is in the state after
    /// the blocks as soon as they are hashed from its current state.
    fn plan(&mut self, parts: &[&[u8]]) -> (Vec<Piece>, Vec<u8>) {
        let mut pieces = Vec::new();
        let mut glue = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            self.total += part.len() as u64;
            let mut at = self.top_up(part);
            if self.buf_len == BLOCK {
                pieces.push(Piece::Glue { start: glue.len() });
                glue.extend_from_slice(&self.buf);
                self.buf_len = 0;
            } else if self.buf_len > 0 {
                continue;
            }
            let blocks = (part.len() - at) / BLOCK;
            if blocks > 0 {
                pieces.push(Piece::Part {
                    part: i,
                    start: at,
                    blocks,
                });
                at += blocks * BLOCK;
            }
            self.buffer_tail(&part[at..]);
        }
        (pieces, glue)
    }

    /// The MD5 of everything fed.
    pub fn finalize(self) -> [u8; 16] {
        portable::finish(&self.state, &self.buf[..self.buf_len], self.total)
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing has been fed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// A run of whole blocks of an owned update, found in the caller's parts
/// or in the glue buffer.
enum Piece {
    Part {
        part: usize,
        start: usize,
        blocks: usize,
    },
    Glue {
        start: usize,
    },
}

impl Piece {
    fn blocks(&self) -> usize {
        match self {
            Piece::Part { blocks, .. } => *blocks,
            Piece::Glue { .. } => 1,
        }
    }

    fn bytes<'a>(&self, parts: &[&'a [u8]], glue: &'a [u8]) -> &'a [u8] {
        match *self {
            Piece::Part {
                part,
                start,
                blocks,
            } => &parts[part][start..start + blocks * BLOCK],
            Piece::Glue { start } => &glue[start..start + BLOCK],
        }
    }
}

/// Buffers whose bytes stay where they are when the buffer value moves,
/// so that the hub can hash them in place while it owns them
/// ([`Hasher::update_parts`]).
///
/// # Safety
/// `bytes` returns the same memory (address and length) every time it is
/// called on a value, also after the value has moved, and those bytes do
/// not change while the value is not mutably borrowed (no interior
/// mutability).
pub unsafe trait StableBytes: Send + 'static {
    /// The buffer's bytes.
    fn bytes(&self) -> &[u8];
}

// SAFETY: a Vec's heap buffer does not move when the Vec does, and is only
// changed through `&mut`.
unsafe impl StableBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

// SAFETY: as for Vec: the boxed slice lives on the heap.
unsafe impl StableBytes for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
}
