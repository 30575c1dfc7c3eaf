//! Request and response bodies.
//!
//! [`BodyReader`] turns the request body into the `AsyncRead` the object
//! layer consumes, and checks it while it streams: the signed payload hash
//! or the `aws-chunked` decoding (chunk signatures, trailers), the size
//! limit, `Content-MD5` and `x-amz-checksum-*`. Every check that needs the
//! whole body runs when the body ends, before the reader reports its end,
//! so the object layer (which always reads to the end before it commits)
//! never stores a body that failed one. A stalled client is cut off after
//! an idle timeout.
//!
//! [`ResponseBody`] is the body of every response: empty, one buffer, or a
//! stream fed by the task that reads the object.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use object::layer::{Chunk, ChunkSink};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::admission::Slot;
use crate::auth::{ChecksumAlgorithm, ChunkedDecoder, Payload, PayloadSha256Verifier};
use crate::checksum::{Hasher, content_md5};
use crate::error::S3Error;
use crate::splice::SpliceQueue;

enum Mode {
    Plain,
    Sha256(PayloadSha256Verifier),
    Chunked(Box<ChunkedDecoder>),
}

/// Where the expected value of a checksum comes from.
#[derive(Debug, Clone)]
pub(crate) enum Expected {
    /// A request header gave it.
    Header(String),
    /// An `aws-chunked` trailer will give it.
    Trailer,
}

/// The checks of one request body.
pub(crate) struct BodyChecks {
    /// How the signature binds the body.
    pub payload: Payload,
    /// `Content-MD5`, decoded.
    pub content_md5: Option<[u8; 16]>,
    /// `x-amz-checksum-*` to verify.
    pub checksum: Option<(ChecksumAlgorithm, Expected)>,
    /// Most payload bytes accepted, and the error code beyond it.
    pub limit: (u64, &'static str),
    /// Longest wait for the next piece of the body.
    pub idle_timeout: Duration,
    /// The floor rate: after `grace`, the body must have arrived at `rate`
    /// bytes a second on average since its first poll (`None`: no floor).
    pub min_rate: Option<(u64, Duration)>,
}

/// The request body as an `AsyncRead`, verified while read.
pub(crate) struct BodyReader<B> {
    inner: B,
    mode: Option<Mode>,
    /// Payload received and not yet read: pieces of the frames, never
    /// copied (a chunked frame yields one piece per chunk it carries).
    pending: VecDeque<Bytes>,
    md5: Option<(md5x::Hasher, [u8; 16])>,
    checksum: Option<(Hasher, ChecksumAlgorithm, Expected)>,
    total: u64,
    raw: u64,
    limit: (u64, &'static str),
    idle_timeout: Duration,
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    min_rate: Option<(u64, Duration)>,
    /// When the body was first polled.
    started: Option<tokio::time::Instant>,
    finished: bool,
    failed: bool,
    /// The verified checksum (algorithm, base64 value), once the body ended.
    pub(crate) verified_checksum: Option<(ChecksumAlgorithm, String)>,
    /// Where to record the verified checksum as object metadata.
    record: Option<object::layer::TrailingMetadata>,
}

fn fail(e: S3Error) -> io::Error {
    io::Error::other(e)
}

impl<B> BodyReader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    pub(crate) fn new(inner: B, checks: BodyChecks) -> BodyReader<B> {
        let mode = match checks.payload {
            Payload::Unsigned => Mode::Plain,
            Payload::Sha256(v) => Mode::Sha256(v),
            Payload::Chunked(d) => Mode::Chunked(d),
        };
        BodyReader {
            inner,
            mode: Some(mode),
            pending: VecDeque::new(),
            md5: checks.content_md5.map(|m| (content_md5(), m)),
            checksum: checks
                .checksum
                .map(|(alg, exp)| (Hasher::new(alg), alg, exp)),
            total: 0,
            raw: 0,
            limit: checks.limit,
            idle_timeout: checks.idle_timeout,
            idle: None,
            min_rate: checks.min_rate,
            started: None,
            finished: false,
            failed: false,
            verified_checksum: None,
            record: None,
        }
    }

    /// Records the verified checksum, when the body ends, as the metadata
    /// entry `x-amz-checksum-<alg>` in `into` (before the reader reports
    /// its end, so the object layer stores it with the version).
    pub(crate) fn record_checksum_into(&mut self, into: object::layer::TrailingMetadata) {
        self.record = Some(into);
    }

    /// Bytes received on the wire so far (chunk framing included).
    pub(crate) fn raw_len(&self) -> u64 {
        self.raw
    }

    fn absorb(&mut self, data: Bytes) -> Result<(), S3Error> {
        self.raw += data.len() as u64;
        let before = self.pending.len();
        match self.mode.as_mut() {
            Some(Mode::Plain) => self.pending.push_back(data),
            Some(Mode::Sha256(v)) => {
                v.update(&data);
                self.pending.push_back(data);
            }
            Some(Mode::Chunked(d)) => {
                // The decoder hands out the payload as slices of the frame:
                // keep them as views of it rather than copies.
                let mut rest = &data[..];
                while !rest.is_empty() {
                    let decoded = d.decode(rest)?;
                    if !decoded.payload.is_empty() {
                        self.pending.push_back(data.slice_ref(decoded.payload));
                    }
                    rest = &rest[decoded.consumed..];
                }
            }
            None => return Err(S3Error::internal("body read after its end")),
        }
        for piece in self.pending.iter().skip(before) {
            self.total += piece.len() as u64;
            if let Some((h, _)) = &mut self.md5 {
                h.update(piece);
            }
            if let Some((h, _, _)) = &mut self.checksum {
                h.update(piece);
            }
        }
        if self.total > self.limit.0 {
            return Err(S3Error::new(self.limit.1));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), S3Error> {
        let trailers = match self.mode.take() {
            Some(Mode::Plain) | None => None,
            Some(Mode::Sha256(v)) => {
                v.finish()?;
                None
            }
            Some(Mode::Chunked(d)) => Some(d.finish()?),
        };
        if let Some((h, want)) = self.md5.take()
            && h.finalize() != want
        {
            return Err(S3Error::new("BadDigest"));
        }
        if let Some((h, alg, exp)) = self.checksum.take() {
            let got = h.finish_base64();
            let want = match exp {
                Expected::Header(v) => Some(v),
                Expected::Trailer => trailers
                    .as_ref()
                    .and_then(|t| t.get(alg))
                    .map(str::to_owned),
            };
            match want {
                Some(w) if w == got => {
                    if let Some(r) = &self.record {
                        r.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((alg.header_name().to_owned(), got.clone()));
                    }
                    self.verified_checksum = Some((alg, got));
                }
                Some(_) => {
                    return Err(S3Error::with_message(
                        "BadDigest",
                        format!(
                            "The {} you specified did not match the calculated checksum.",
                            alg.header_name()
                        ),
                    ));
                }
                None => {
                    return Err(S3Error::with_message(
                        "InvalidRequest",
                        format!(
                            "The {} trailer was declared but not sent.",
                            alg.header_name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl<B> AsyncRead for BodyReader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.failed {
                return Poll::Ready(Err(io::Error::other("request body already failed")));
            }
            // An empty frame leaves an empty piece: handing out zero bytes
            // would read as the end of the body.
            while this.pending.front().is_some_and(Bytes::is_empty) {
                this.pending.pop_front();
            }
            if let Some(piece) = this.pending.front_mut() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece.split_to(n));
                if piece.is_empty() {
                    this.pending.pop_front();
                }
                return Poll::Ready(Ok(()));
            }
            if this.finished {
                return Poll::Ready(Ok(()));
            }
            let now = tokio::time::Instant::now();
            let started = *this.started.get_or_insert(now);
            // The latest the body may go on waiting: the idle limit, and the
            // floor rate's deadline for the bytes received so far (a body
            // trickled a byte at a time cannot keep its slot for ever).
            let progress_deadline = this.min_rate.map(|(rate, grace)| {
                let earned = Duration::from_secs_f64(this.raw as f64 / rate.max(1) as f64);
                started + grace + earned
            });
            if progress_deadline.is_some_and(|d| now >= d) {
                this.failed = true;
                return Poll::Ready(Err(fail(S3Error::new("RequestTimeout"))));
            }
            let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(f) => {
                    this.idle = None;
                    f
                }
                Poll::Pending => {
                    let mut until = now + this.idle_timeout;
                    if let Some(d) = progress_deadline {
                        until = until.min(d);
                    }
                    let idle = this
                        .idle
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                    ready!(idle.as_mut().poll(cx));
                    this.failed = true;
                    return Poll::Ready(Err(fail(S3Error::new("RequestTimeout"))));
                }
            };
            let result = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.absorb(data),
                    Err(_trailers) => Ok(()),
                },
                Some(Err(e)) => {
                    this.failed = true;
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("request body: {e}"),
                    )));
                }
                None => {
                    this.finished = true;
                    this.finish()
                }
            };
            if let Err(e) = result {
                this.failed = true;
                return Poll::Ready(Err(fail(e)));
            }
        }
    }
}

/// Reads a whole (small) body: XML documents of bucket and multipart
/// requests.
pub(crate) async fn read_to_vec<B>(reader: &mut BodyReader<B>) -> Result<Vec<u8>, S3Error>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    reader
        .read_to_end(&mut out)
        .await
        .map_err(crate::error::body_error)?;
    Ok(out)
}

/// The body of a response.
pub struct ResponseBody {
    kind: Kind,
    /// The request's admission slot, given back when the body is dropped
    /// (sent, or its connection gone).
    _slot: Option<Slot>,
}

enum Kind {
    Full(Option<Bytes>),
    /// Buffers ready to go, in order, and the bytes not yet taken.
    Blocks {
        blocks: std::vec::IntoIter<Bytes>,
        remaining: u64,
    },
    Stream {
        rx: mpsc::Receiver<io::Result<QueuedFrame>>,
        remaining: u64,
    },
}

impl ResponseBody {
    /// No body.
    pub fn empty() -> ResponseBody {
        ResponseBody {
            kind: Kind::Full(None),
            _slot: None,
        }
    }

    /// One buffer.
    pub fn full(data: impl Into<Bytes>) -> ResponseBody {
        let b: Bytes = data.into();
        ResponseBody {
            kind: Kind::Full(if b.is_empty() { None } else { Some(b) }),
            _slot: None,
        }
    }

    /// Buffers already in memory, one frame each (the read cache's blocks
    /// of a GET: no task, no queue between it and the connection).
    pub fn blocks(mut blocks: Vec<Bytes>) -> ResponseBody {
        let remaining = blocks.iter().map(|b| b.len() as u64).sum();
        blocks.retain(|b| !b.is_empty());
        ResponseBody {
            kind: Kind::Blocks {
                blocks: blocks.into_iter(),
                remaining,
            },
            _slot: None,
        }
    }

    /// A body of exactly `len` bytes that a writer task produces; at most
    /// [`STREAM_BUDGET`] bytes read for it, and [`SHARED_BUDGET`] bytes of
    /// the read cache's, wait between the two.
    pub(crate) fn channel(len: u64) -> (ResponseBody, ChannelWriter) {
        let (tx, rx) = mpsc::channel(STREAM_FRAMES);
        (
            ResponseBody {
                kind: Kind::Stream { rx, remaining: len },
                _slot: None,
            },
            ChannelWriter {
                tx,
                budget: Arc::new(Semaphore::new(STREAM_BUDGET)),
                shared_budget: Arc::new(Semaphore::new(SHARED_BUDGET)),
                splice: None,
            },
        )
    }

    /// The same body, keeping `slot` taken until it is dropped.
    pub(crate) fn holding(mut self, slot: Slot) -> ResponseBody {
        self._slot = Some(slot);
        self
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseBody")
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.kind {
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Blocks { blocks, remaining } => Poll::Ready(blocks.next().map(|b| {
                *remaining -= b.len() as u64;
                Ok(Frame::data(b))
            })),
            Kind::Stream { rx, remaining } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                match ready!(rx.poll_recv(cx)) {
                    // The frame's bytes leave the budget as hyper takes them.
                    Some(Ok((b, _permit))) => {
                        if b.len() as u64 > *remaining {
                            *remaining = 0;
                            return Poll::Ready(Some(Err(io::Error::other(
                                "object longer than announced",
                            ))));
                        }
                        *remaining -= b.len() as u64;
                        Poll::Ready(Some(Ok(Frame::data(b))))
                    }
                    Some(Err(e)) => Poll::Ready(Some(Err(e))),
                    // The reader stopped early: the response must not look
                    // complete.
                    None => Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "object read ended early",
                    )))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(b) => b.is_none(),
            Kind::Blocks { remaining, .. } | Kind::Stream { remaining, .. } => *remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Blocks { remaining, .. } | Kind::Stream { remaining, .. } => {
                SizeHint::with_exact(*remaining)
            }
        }
    }
}

/// Bytes a streamed body may hold queued between the task reading the
/// object and the connection (frames are of any size: 64 KiB of decrypted
/// plaintext or a whole 512 KiB shard; a larger frame takes the whole
/// budget). One 512 KiB shard record: a GET served from the page cache
/// then reads, hashes and sends each record while it is still in the
/// core's cache. Against 2 MiB: 1.02x-1.10x the MiB/s and 1.03x-1.14x the
/// MiB per server CPU-second (16 MiB objects, c=8), and the same MiB/s for
/// one stream read from the disk (where the object layer reads ahead).
const STREAM_BUDGET: usize = 512 << 10;
/// Bytes of [shared](object::layer::Chunk::is_shared) frames (blocks of
/// the read cache) a streamed body may hold queued, apart from
/// [`STREAM_BUDGET`]: they hold no memory of the read's own, and hyper
/// takes up to [`WRITE_BUFFER`](crate::splice::WRITE_BUFFER) of them for
/// one write only if that much is waiting.
const SHARED_BUDGET: usize = 4 << 20;
/// Frames queued at most (the budget binds first unless frames are tiny).
const STREAM_FRAMES: usize = 64;

/// A queued frame and its share of the budget.
type QueuedFrame = (Bytes, OwnedSemaphorePermit);

/// The writing end of a streamed [`ResponseBody`]: a [`ChunkSink`] whose
/// chunks become body frames as they are, with back-pressure (a budget of
/// queued bytes).
pub(crate) struct ChannelWriter {
    tx: mpsc::Sender<io::Result<QueuedFrame>>,
    /// [`STREAM_BUDGET`]: bytes read for this response.
    budget: Arc<Semaphore>,
    /// [`SHARED_BUDGET`]: shared bytes (the read cache's blocks).
    shared_budget: Arc<Semaphore>,
    /// The connection's splice queue, when its transport can send frames
    /// from pipes.
    splice: Option<Arc<SpliceQueue>>,
}

impl ChannelWriter {
    /// The same writer, handing chunks that come with a pipe to `queue`
    /// (the response's connection sends them from their pipes).
    pub(crate) fn splicing_to(mut self, queue: Option<Arc<SpliceQueue>>) -> ChannelWriter {
        self.splice = queue;
        self
    }

    /// Ends the body with an error (the connection is then closed rather
    /// than the response looking complete).
    pub(crate) async fn abort(self, message: String) {
        let _ = self.tx.send(Err(io::Error::other(message))).await;
    }
}

impl ChunkSink for ChannelWriter {
    /// Each chunk becomes one body frame, without a copy.
    async fn put(&mut self, chunk: Chunk) -> io::Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "client went away");
        let (budget, cap) = if chunk.is_shared() {
            (&self.shared_budget, SHARED_BUDGET)
        } else {
            (&self.budget, STREAM_BUDGET)
        };
        let budget = Arc::clone(budget);
        let bytes = match (&self.splice, chunk.into_bytes_and_pipe()) {
            (Some(queue), (bytes, Some(pipe))) => queue.wrap(bytes, pipe),
            (_, (bytes, _)) => bytes,
        };
        let share = u32::try_from(bytes.len().min(cap)).unwrap_or(u32::MAX);
        let permit = budget.acquire_many_owned(share).await.map_err(|_| gone())?;
        self.tx.send(Ok((bytes, permit))).await.map_err(|_| gone())
    }

    fn wants_pipes(&self) -> bool {
        self.splice.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use object::layer::Chunk;
    use std::time::Duration;

    const MIB: usize = 1 << 20;

    fn block(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(13) ^ seed)
            .collect()
    }

    /// The next frame's bytes.
    async fn next(body: &mut ResponseBody) -> Bytes {
        let frame = body.frame().await.unwrap().unwrap();
        frame.into_data().unwrap()
    }

    #[tokio::test]
    async fn blocks_of_the_read_cache_queue_past_the_stream_budget() {
        let blocks: Vec<Vec<u8>> = (0..4).map(|s| block(MIB, s)).collect();
        let (mut body, mut writer) = ResponseBody::channel(4 * MIB as u64);
        // Shared bytes (as the read cache hands out) hold no memory of the
        // read's own: four 1 MiB blocks queue with nothing taken yet.
        let shared: Vec<Bytes> = blocks.iter().cloned().map(Bytes::from).collect();
        let put_all = async {
            for b in &shared {
                writer.put(Chunk::from(b.clone())).await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(5), put_all)
            .await
            .expect("shared blocks queue within their own budget");
        for b in &blocks {
            assert_eq!(next(&mut body).await, b[..]);
        }
        assert!(body.frame().await.is_none(), "the body ends after 4 MiB");
    }

    #[tokio::test]
    async fn buffers_in_memory_go_out_one_frame_each() {
        let parts = [block(10, 1), Vec::new(), block(MIB, 2), block(7, 3)];
        let mut body = ResponseBody::blocks(parts.iter().cloned().map(Bytes::from).collect());
        assert_eq!(body.size_hint().exact(), Some(10 + MIB as u64 + 7));
        for p in parts.iter().filter(|p| !p.is_empty()) {
            assert!(!body.is_end_stream());
            assert_eq!(next(&mut body).await, p[..]);
        }
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
        assert!(body.frame().await.is_none());
    }

    /// A request body of the given frames.
    struct Frames(std::collections::VecDeque<Bytes>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    async fn read_all(frames: &[&[u8]], payload: Payload) -> io::Result<Vec<u8>> {
        use tokio::io::AsyncReadExt;
        let checks = BodyChecks {
            payload,
            content_md5: None,
            checksum: None,
            limit: (1 << 30, "EntityTooLarge"),
            idle_timeout: Duration::from_secs(5),
            min_rate: None,
        };
        let body = Frames(frames.iter().map(|f| Bytes::copy_from_slice(f)).collect());
        let mut reader = BodyReader::new(body, checks);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await?;
        Ok(out)
    }

    #[tokio::test]
    async fn empty_frames_do_not_end_the_body() {
        let plain = read_all(&[b"ab", b"", b"cd", b""], Payload::Unsigned).await;
        assert_eq!(plain.unwrap(), b"abcd");
        // A chunked body split anywhere, empty frames between: the payload
        // comes out whole, from views of the frames.
        let decoder = ChunkedDecoder::unsigned(Some(7), vec![], Default::default());
        let chunked = read_all(
            &[b"3\r\nab", b"", b"c\r\n4\r\ndefg\r", b"\n0\r\n", b"\r\n"],
            Payload::Chunked(Box::new(decoder)),
        )
        .await;
        assert_eq!(chunked.unwrap(), b"abcdefg");
    }

    #[tokio::test]
    async fn bytes_read_for_the_response_wait_for_the_budget() {
        let (a, b) = (block(STREAM_BUDGET, 1), block(STREAM_BUDGET, 2));
        let (mut body, mut writer) = ResponseBody::channel(2 * STREAM_BUDGET as u64);
        writer.put(Chunk::from(a.clone())).await.unwrap();
        // A second record of the response's own memory waits until the
        // connection takes the first.
        let mut second = Box::pin(writer.put(Chunk::from(b.clone())));
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut second)
                .await
                .is_err(),
            "past the budget, a put waits"
        );
        assert_eq!(next(&mut body).await, a[..]);
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("taking the first frame makes room")
            .unwrap();
        assert_eq!(next(&mut body).await, b[..]);
    }
}
