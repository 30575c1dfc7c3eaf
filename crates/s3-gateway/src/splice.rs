//! The transport of HTTP/1.1 over plain TCP ([`PlainIo`]): writes of up to
//! [`WRITE_BUFFER`], reads of at most [`MAX_READ`], and response bytes sent
//! from pipes instead of memory.
//!
//! A GET served from the page cache gets each shard record's verified data
//! twice: in a buffer (where its hash was checked) and in a pipe holding
//! the same page-cache pages ([`object::layer::Chunk::into_bytes_and_pipe`]).
//! The body frame hyper sends is the buffer; [`SpliceQueue::wrap`] notes
//! which memory that frame occupies and which pipe holds its bytes, and
//! [`PlainIo`], the connection's transport under hyper, sends a frame it
//! recognises with `splice` from the pipe, so the kernel hands the pages to
//! TCP by reference instead of copying them out of the buffer.
//!
//! Sending from the buffer is always correct as well, since it holds the
//! same bytes: whenever anything does not line up (hyper hands over part
//! of a frame, a pipe fails), the frame's pipe is dropped and its bytes go
//! out of memory as usual. A frame is recognised only while it is alive
//! (the queue holds weak references that the frame's owner keeps alive), so
//! memory reused by a later frame is never mistaken for an earlier one.

use std::io::{self, IoSlice};
use std::ops::Range;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, ready};

use bytes::{BufMut, Bytes};
use object::layer::Pipe;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// Most bytes hyper should queue for one write on a [`PlainIo`]
/// connection (`http1::Builder::max_buf_size`; hyper's default is 408
/// KiB): two of the read cache's 1 MiB blocks go out with one `writev`.
/// Over loopback the kernel's cost per byte sent falls with the size of
/// the write: 0.29-0.30 ms of sender CPU per MiB in 512 KiB writes,
/// 0.19-0.22 from 1 MiB up (`gcc -O2 -o /tmp/send_size
/// docs/probes/send_size.c && /tmp/send_size <bytes> 4`); in the server,
/// 2 MiB against 1 MiB takes another 5% off the CPU per MiB of hot GETs
/// (`docs/bench-notes/send-paths.md`). Hyper's read buffer grows to the
/// same size unless the transport holds its reads back: [`PlainIo`] reads
/// at most [`MAX_READ`] at once.
pub const WRITE_BUFFER: usize = 2 << 20;

/// Most bytes a [`PlainIo`] reads at once: hyper's default buffer size,
/// so that the larger [`WRITE_BUFFER`] leaves request bodies read in
/// pieces of the usual size (with 2 MiB reads, 16 MiB PUTs at c=8 peak at
/// 206 MiB resident against 139; `docs/bench-notes/memory.md`).
pub const MAX_READ: usize = (8 + 400) << 10;

/// Most live frames a queue tracks; a frame past it is sent from memory
/// (a response queues a few records at most, so this is never reached by
/// one connection's own traffic).
const MAX_LIVE: usize = 64;

/// Bytes sent from pipes by every connection of this process.
static SPLICED_TOTAL: AtomicU64 = AtomicU64::new(0);

/// Bytes sent from pipes by every connection of this process so far (a
/// counter for the server's metrics).
pub fn spliced_bytes_total() -> u64 {
    SPLICED_TOTAL.load(Ordering::Relaxed)
}

/// The body frames of one connection whose bytes also wait in a pipe.
#[derive(Debug, Default)]
pub struct SpliceQueue {
    /// Where each frame lies in memory, and the frame while it lives.
    live: Mutex<Vec<(Range<usize>, Weak<Spliced>)>>,
    spliced: AtomicU64,
}

/// One frame: where its bytes are in memory, and the pipe holding them.
#[derive(Debug)]
struct Spliced {
    start: usize,
    len: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// `None` once the frame's bytes went, or must go, from memory.
    pipe: Option<Pipe>,
    /// Bytes of the frame sent from the pipe so far.
    sent: usize,
}

/// Owner of a wrapped frame's memory, keeping its [`Spliced`] entry alive
/// exactly as long as the frame.
struct Holder {
    bytes: Bytes,
    _entry: Arc<Spliced>,
}

impl AsRef<[u8]> for Holder {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl SpliceQueue {
    /// A new, empty queue (one per connection).
    pub fn new() -> Arc<SpliceQueue> {
        Arc::new(SpliceQueue::default())
    }

    /// Bytes sent from pipes on this connection so far.
    pub fn spliced_bytes(&self) -> u64 {
        self.spliced.load(Ordering::Relaxed)
    }

    /// `bytes`, as the same memory, now known to be in `pipe` too (which
    /// must hold exactly those bytes). Without room in the queue, or when
    /// the lengths differ, `bytes` as they are.
    pub fn wrap(&self, bytes: Bytes, pipe: Pipe) -> Bytes {
        if pipe.len() != bytes.len() || bytes.is_empty() {
            return bytes;
        }
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|(_, w)| w.strong_count() > 0);
        if live.len() >= MAX_LIVE {
            return bytes;
        }
        let entry = Arc::new(Spliced {
            start: bytes.as_ptr() as usize,
            len: bytes.len(),
            state: Mutex::new(State {
                pipe: Some(pipe),
                sent: 0,
            }),
        });
        live.push((entry.start..entry.start + entry.len, Arc::downgrade(&entry)));
        drop(live);
        Bytes::from_owner(Holder {
            bytes,
            _entry: entry,
        })
    }

    /// The live frame whose memory holds `ptr`, if any.
    #[cfg(test)]
    fn find(&self, ptr: usize) -> Option<Arc<Spliced>> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        Self::holding(&live, ptr)
    }

    /// The first non-empty slice of `bufs` that lies in a live frame, with
    /// its index (one lock for the whole list).
    fn first_known(&self, bufs: &[IoSlice<'_>]) -> Option<(usize, Arc<Spliced>)> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live.is_empty() {
            return None;
        }
        bufs.iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .find_map(|(i, b)| Some((i, Self::holding(&live, b.as_ptr() as usize)?)))
    }

    /// Of `live`, the frame still alive whose memory holds `ptr`.
    fn holding(live: &[(Range<usize>, Weak<Spliced>)], ptr: usize) -> Option<Arc<Spliced>> {
        live.iter()
            .filter(|(at, _)| at.contains(&ptr))
            .find_map(|(_, w)| w.upgrade())
    }
}

/// The transport of an HTTP/1.1 connection over plain TCP, under hyper:
/// reads at most [`MAX_READ`] at once (so that hyper may queue
/// [`WRITE_BUFFER`] for a write without reading that much at once too),
/// and, given a [`SpliceQueue`], sends the frames it knows from their
/// pipes; everything else passes through.
#[derive(Debug)]
pub struct PlainIo {
    inner: TcpStream,
    queue: Option<Arc<SpliceQueue>>,
}

impl PlainIo {
    /// `stream`, sending the frames `queue` knows (if any) from their
    /// pipes.
    pub fn new(stream: TcpStream, queue: Option<Arc<SpliceQueue>>) -> PlainIo {
        PlainIo {
            inner: stream,
            queue,
        }
    }

    /// Sends from `entry`'s pipe if `slice` is exactly the rest of its
    /// frame; `None` when it is not (the pipe is then dropped, and the
    /// frame goes from memory).
    fn poll_splice(
        &mut self,
        cx: &mut Context<'_>,
        entry: &Spliced,
        slice: &[u8],
    ) -> Option<Poll<io::Result<usize>>> {
        let mut state = entry.state.lock().unwrap_or_else(|p| p.into_inner());
        let State { pipe, sent } = &mut *state;
        let rest = pipe.as_ref().map_or(0, |p| p.len());
        let lined_up = slice.as_ptr() as usize == entry.start + *sent && slice.len() == rest;
        if !lined_up || rest == 0 {
            *pipe = None;
            return None;
        }
        let p = pipe.as_mut()?;
        loop {
            match self.inner.poll_write_ready(cx) {
                Poll::Pending => return Some(Poll::Pending),
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Ready(Ok(())) => {}
            }
            let fd = self.inner.as_fd();
            match self
                .inner
                .try_io(Interest::WRITABLE, || p.splice_to(fd, slice.len()))
            {
                Ok(n) => {
                    *sent += n;
                    if let Some(q) = &self.queue {
                        q.spliced.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    SPLICED_TOTAL.fetch_add(n as u64, Ordering::Relaxed);
                    if p.is_empty() {
                        *pipe = None;
                    }
                    return Some(Poll::Ready(Ok(n)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => {
                    // Nothing was sent from the pipe: the bytes go from
                    // memory instead.
                    tracing::debug!("splice to the socket: {e}");
                    *pipe = None;
                    return None;
                }
            }
        }
    }
}

impl AsyncRead for PlainIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() <= MAX_READ {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        loop {
            ready!(self.inner.poll_read_ready(cx))?;
            let mut some = (&mut *buf).limit(MAX_READ);
            match self.inner.try_read_buf(&mut some) {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for PlainIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        // A first slice that is a known frame goes from its pipe; otherwise
        // the slices before the first known frame go from memory.
        let known = this.queue.as_ref().and_then(|q| q.first_known(bufs));
        let upto = match known {
            // (Only empty slices before it: nothing else to write first.)
            Some((i, entry)) if bufs[..i].iter().all(|b| b.is_empty()) => {
                match this.poll_splice(cx, &entry, &bufs[i]) {
                    Some(done) => return done,
                    None => bufs.len(),
                }
            }
            Some((i, _)) => i,
            None => bufs.len(),
        };
        Pin::new(&mut this.inner).poll_write_vectored(cx, &bufs[..upto])
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::layer::PipePool;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A connected pair: the server's end under a [`PlainIo`], and the
    /// client's end.
    async fn pair() -> (PlainIo, Arc<SpliceQueue>, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        let queue = SpliceQueue::new();
        (
            PlainIo::new(server, Some(Arc::clone(&queue))),
            queue,
            client,
        )
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    /// A pipe holding `bytes`.
    fn pipe_of(pool: &Arc<PipePool>, bytes: &[u8]) -> Pipe {
        let mut p = pool.get().unwrap();
        p.fill(bytes).unwrap();
        p
    }

    /// Writes `frames` as hyper does: vectored, advancing past what each
    /// call took.
    async fn send(io: &mut PlainIo, mut frames: Vec<Bytes>) {
        use bytes::Buf;
        while !frames.is_empty() {
            let slices: Vec<IoSlice<'_>> = frames.iter().map(|b| IoSlice::new(b)).collect();
            let mut n = io.write_vectored(&slices).await.unwrap();
            assert!(n > 0);
            drop(slices);
            while n > 0 {
                let take = n.min(frames[0].len());
                frames[0].advance(take);
                n -= take;
                if frames[0].is_empty() {
                    frames.remove(0);
                }
            }
        }
        io.flush().await.unwrap();
    }

    #[tokio::test]
    async fn a_known_frame_goes_from_its_pipe_the_rest_from_memory() {
        let (mut io, queue, mut client) = pair().await;
        let pool = PipePool::new();
        let len = 1 << 20;
        // The pipe deliberately holds other bytes than the memory, to
        // tell which one was sent (in use both hold the same).
        let memory = pattern(len, 1);
        let piped = pattern(len, 2);
        let frame = queue.wrap(Bytes::from(memory.clone()), pipe_of(&pool, &piped));
        let head = Bytes::from_static(b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n");
        let reader = tokio::spawn(async move {
            // A slow reader: the socket fills, splice waits for room.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let mut got = vec![0u8; 44 + (1 << 20)];
            client.read_exact(&mut got).await.unwrap();
            got
        });
        send(&mut io, vec![head.clone(), frame]).await;
        let got = reader.await.unwrap();
        assert_eq!(&got[..head.len()], &head[..]);
        assert!(
            got[head.len()..] == piped[..],
            "the frame went from its pipe"
        );
        assert_eq!(queue.spliced_bytes(), len as u64);
        assert!(spliced_bytes_total() >= len as u64);
        assert_eq!(pool.out(), 0, "the emptied pipe went back");
    }

    #[tokio::test]
    async fn a_frame_not_sent_whole_from_its_pipe_goes_from_memory() {
        let (mut io, queue, mut client) = pair().await;
        let pool = PipePool::new();
        let len = 300_000;
        let memory = pattern(len, 3);
        let frame = queue.wrap(
            Bytes::from(memory.clone()),
            pipe_of(&pool, &pattern(len, 4)),
        );
        // Its first bytes handed over on their own (not the whole rest of
        // the frame): the pipe is dropped, and all of it goes from memory.
        io.write_all(&frame[..1000]).await.unwrap();
        send(&mut io, vec![frame.slice(1000..)]).await;
        let mut got = vec![0u8; len];
        client.read_exact(&mut got).await.unwrap();
        assert!(got == memory);
        assert_eq!(queue.spliced_bytes(), 0);
        drop(frame);
        assert_eq!(pool.out(), 0);

        // A pipe that does not hold the frame's length is not taken.
        let other = Bytes::from(pattern(1000, 5));
        let p = pipe_of(&pool, &pattern(999, 5));
        let same = queue.wrap(other.clone(), p);
        assert_eq!(same.as_ptr(), other.as_ptr());
        assert!(queue.find(same.as_ptr() as usize).is_none());
    }

    /// Reads everything `client` sends (`total` bytes, in pieces while
    /// the reader lags) with a 4 MiB buffer, and returns the largest read.
    async fn largest_read<R: AsyncRead + Unpin>(server: &mut R, mut client: TcpStream) -> usize {
        let total = 24 << 20;
        let sent = pattern(total, 7);
        let expect = sent.clone();
        let writer = tokio::spawn(async move {
            client.write_all(&sent).await.unwrap();
            client
        });
        let (mut got, mut largest) = (Vec::with_capacity(total), 0);
        let mut buf = vec![0u8; 4 << 20];
        while got.len() < total {
            // A lagging reader: the receive queue fills meanwhile.
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            let n = server.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended early");
            largest = largest.max(n);
            got.extend_from_slice(&buf[..n]);
        }
        drop(writer.await.unwrap());
        assert!(got == expect, "every byte, in order");
        largest
    }

    #[tokio::test]
    async fn reads_take_at_most_max_read_at_once() {
        let (mut io, _queue, client) = pair().await;
        let largest = largest_read(&mut io, client).await;
        assert!(largest <= MAX_READ, "read {largest} bytes at once");
        // The same reader on the bare socket reads more at once: the cap,
        // not the socket, kept the reads above small.
        let (io, _queue, client) = pair().await;
        let mut bare = io.inner;
        let largest = largest_read(&mut bare, client).await;
        assert!(largest > MAX_READ, "the bare socket read {largest} at most");
    }

    #[tokio::test]
    async fn a_dropped_frame_is_forgotten() {
        let (_io, queue, _client) = pair().await;
        let pool = PipePool::new();
        let frame = queue.wrap(
            Bytes::from(pattern(4096, 6)),
            pipe_of(&pool, &pattern(4096, 6)),
        );
        let at = frame.as_ptr() as usize;
        assert!(queue.find(at + 100).is_some());
        drop(frame);
        // Its memory may now hold anything: no longer matched.
        assert!(queue.find(at + 100).is_none());
        assert_eq!(pool.out(), 0, "its pipe, still full, was closed");
    }
}
