//! HTTP/2 response streams that must make progress. A client can keep its
//! connection busy (answering pings, reading the socket) while granting a
//! stream no flow-control window; the server then never asks the stream's
//! body for more, so [`crate::send_deadline::SendDeadline`], which watches
//! the socket, sees nothing wrong. Here a watchdog drops a body that has
//! not been asked for a frame for `timeout`: its request slot, its reader
//! and its buffers are released at once, and the next poll (if the client
//! ever opens the window) ends the stream with an error, which resets it.
//!
//! The measure is the time between two frames taken from the body, so a
//! client must take one frame (at most one erasure block, 1 MiB) per
//! timeout: with the default of 60 s, about 17 KiB/s.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use s3_gateway::ResponseBody;
use tokio::time::Instant;

/// A response body, watched (HTTP/2) or passed through (HTTP/1.1, whose
/// socket-level deadline covers it).
pub struct StreamBody {
    inner: Inner,
}

enum Inner {
    Plain(ResponseBody),
    Watched {
        shared: Arc<Shared>,
        watchdog: tokio::task::AbortHandle,
    },
}

struct Shared {
    /// `None` once the watchdog has dropped the body.
    body: Mutex<Option<ResponseBody>>,
    /// When the stream started.
    start: Instant,
    /// Milliseconds from `start` to the last poll of the body.
    last_poll: AtomicU64,
}

impl StreamBody {
    /// `body` as it is.
    pub fn plain(body: ResponseBody) -> StreamBody {
        StreamBody {
            inner: Inner::Plain(body),
        }
    }

    /// `body`, dropped when it is not polled for `timeout`. A body that is
    /// already complete needs no watchdog.
    pub fn with_deadline(body: ResponseBody, timeout: Duration) -> StreamBody {
        if body.is_end_stream() {
            return StreamBody::plain(body);
        }
        let shared = Arc::new(Shared {
            body: Mutex::new(Some(body)),
            start: Instant::now(),
            last_poll: AtomicU64::new(0),
        });
        let watched = Arc::downgrade(&shared);
        let watchdog = tokio::spawn(async move {
            let mut seen = 0;
            loop {
                let due = {
                    let Some(s) = watched.upgrade() else { return };
                    s.start + Duration::from_millis(seen) + timeout
                };
                tokio::time::sleep_until(due).await;
                let Some(s) = watched.upgrade() else { return };
                let last = s.last_poll.load(Ordering::Relaxed);
                if last == seen {
                    let body = s.body.lock().unwrap_or_else(|e| e.into_inner()).take();
                    tracing::debug!(
                        "HTTP/2 stream: the client took nothing for {timeout:?}; \
                         its response is dropped"
                    );
                    drop(body);
                    return;
                }
                seen = last;
            }
        })
        .abort_handle();
        StreamBody {
            inner: Inner::Watched { shared, watchdog },
        }
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        if let Inner::Watched { watchdog, .. } = &self.inner {
            watchdog.abort();
        }
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.inner {
            Inner::Plain(body) => Pin::new(body).poll_frame(cx),
            Inner::Watched { shared, .. } => {
                let elapsed = shared.start.elapsed().as_millis();
                shared.last_poll.store(
                    u64::try_from(elapsed).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                let mut body = shared.body.lock().unwrap_or_else(|e| e.into_inner());
                match body.as_mut() {
                    Some(b) => Pin::new(b).poll_frame(cx),
                    None => Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client granted the stream no window in time",
                    )))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Plain(body) => body.is_end_stream(),
            Inner::Watched { shared, .. } => shared
                .body
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_none_or(|b| b.is_end_stream()),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Plain(body) => body.size_hint(),
            Inner::Watched { shared, .. } => shared
                .body
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or_else(SizeHint::default, |b| b.size_hint()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn streamed(n: usize) -> ResponseBody {
        ResponseBody::blocks(vec![Bytes::from(vec![7u8; 1024]); n])
    }

    #[tokio::test]
    async fn a_body_not_polled_in_time_is_dropped_and_then_fails() {
        let mut w = StreamBody::with_deadline(streamed(4), Duration::from_millis(100));
        let first = w.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap().len(), 1024);
        tokio::time::sleep(Duration::from_millis(250)).await;
        let err = w.frame().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_body_polled_steadily_runs_to_its_end() {
        let mut w = StreamBody::with_deadline(streamed(6), Duration::from_millis(150));
        let mut got = 0;
        while let Some(f) = w.frame().await {
            got += f.unwrap().into_data().unwrap().len();
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
        assert_eq!(got, 6 * 1024);
    }
}
