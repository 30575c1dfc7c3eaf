//! A connection whose writes must make progress: a client that stops
//! reading (its TCP window at zero) leaves the server's writes pending;
//! after `timeout` without a byte written the write fails, the connection
//! is closed, and the response's request slot and buffers are released.
//! A client that reads slowly but steadily is never cut off: every byte
//! written restarts the clock.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io` with a deadline on write progress.
pub struct SendDeadline<I> {
    io: I,
    timeout: Duration,
    /// The clock, allocated at the first stall and reset at later ones (a
    /// large response stalls whenever the socket buffer is full).
    clock: Option<Pin<Box<Sleep>>>,
    /// Whether a stall is being timed.
    armed: bool,
}

impl<I> SendDeadline<I> {
    pub fn new(io: I, timeout: Duration) -> Self {
        SendDeadline {
            io,
            timeout,
            clock: None,
            armed: false,
        }
    }

    /// The outcome of a write-side poll: progress disarms the clock, a
    /// pending write arms it (once per stall) and fails when it runs out.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => {
                let timeout = self.timeout;
                let clock = self
                    .clock
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if !self.armed {
                    clock.as_mut().reset(tokio::time::Instant::now() + timeout);
                    self.armed = true;
                }
                match clock.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the client read nothing for {timeout:?}"),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
            ready => {
                self.armed = false;
                ready
            }
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for SendDeadline<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for SendDeadline<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_peer_that_stops_reading_fails_the_write_in_time() {
        let (a, mut b) = tokio::io::duplex(1024);
        let mut w = SendDeadline::new(a, Duration::from_millis(200));
        // Fills the pipe; nobody reads.
        let started = std::time::Instant::now();
        let err = w.write_all(&[0u8; 64 * 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(190));
        // A slow but steady reader is never cut off.
        let (a, mut b2) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut got = 0;
            let mut buf = [0u8; 512];
            while got < 16 * 1024 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                got += b2.read(&mut buf).await.unwrap();
            }
        });
        let mut w = SendDeadline::new(a, Duration::from_millis(200));
        w.write_all(&[1u8; 16 * 1024]).await.unwrap();
        reader.await.unwrap();
        drop(b.shutdown().await);
    }
}
