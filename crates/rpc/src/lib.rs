//! The node RPC: how Tessera nodes call each other.
//!
//! One HTTP/2 connection per pair of nodes (TLS when the S3 port has it)
//! carries every call: small calls (metadata, locks, raft messages) as
//! request/response pairs multiplexed on it, and shard data as streams
//! whose back-pressure is HTTP/2's flow control, both ways. A connection
//! opens with a hello that authenticates both ends with a key derived from
//! the root credentials (`auth`); calls on it carry no token of their own.
//!
//! The caller's side is a [`Peer`] (`client.rs`): it connects on first use,
//! reconnects with backoff, fails calls fast while the peer is down, puts a
//! deadline on every call, and pings the connection so a dead peer is
//! detected within [`PeerConfig::ping_timeout`] plus an interval. The
//! callee's side is a [`Service`] (`server.rs`): a table of methods, served
//! under [`PATH_PREFIX`] of the S3 port.

pub mod auth;
mod client;
mod server;

pub use auth::{AuthError, ClusterKey, Gate, KeyError};
pub use client::{Peer, PeerConfig, PeerState, PeerStats};
pub use server::{
    CONN_WINDOW, Connection, Failure, MAX_FRAME, MAX_STREAMS, STREAM_WINDOW, Service,
    configure_server, serve_connection,
};

use bytes::Bytes;

/// Where the node RPC is served on the S3 port (a path no bucket can
/// have: bucket names have no upper case, and `tessera` paths are
/// reserved).
pub const PATH_PREFIX: &str = "/tessera/rpc/v1/";

/// The header that carries a call's deadline (milliseconds from receipt).
pub const DEADLINE_HEADER: &str = "x-tessera-rpc-deadline-ms";

/// The body of RPC requests and responses.
pub type RpcBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// A body of one buffer.
pub fn full(data: impl Into<Bytes>) -> RpcBody {
    use http_body_util::BodyExt;
    http_body_util::Full::new(data.into())
        .map_err(|never| match never {})
        .boxed()
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// No connection to the peer (refused, unreachable, or within the
    /// backoff after a failure).
    #[error("node {peer} is unreachable: {reason}")]
    Unreachable {
        /// The peer.
        peer: String,
        /// What failed.
        reason: String,
    },
    /// The peer refused this node's hello, or its welcome did not check.
    #[error("node {peer}: {error}")]
    Auth {
        /// The peer.
        peer: String,
        /// Why.
        error: AuthError,
    },
    /// The deadline passed.
    #[error("call {method} to node {peer} timed out after {after_ms} ms")]
    Timeout {
        /// The peer.
        peer: String,
        /// The method.
        method: String,
        /// The deadline.
        after_ms: u64,
    },
    /// The connection failed during the call.
    #[error("call {method} to node {peer} failed: {reason}")]
    Broken {
        /// The peer.
        peer: String,
        /// The method.
        method: String,
        /// What failed.
        reason: String,
    },
    /// The peer answered with an error.
    #[error("node {peer} answered {method} with {status}: {message}")]
    Remote {
        /// The peer.
        peer: String,
        /// The method.
        method: String,
        /// The HTTP status.
        status: u16,
        /// The peer's message.
        message: String,
    },
}

/// A streaming body fed through a bounded queue of `frames` buffers: the
/// sender waits while the queue is full, so a producer runs at most that
/// far ahead of the connection (which itself sends only as fast as the
/// peer's flow-control window opens).
pub fn channel(frames: usize) -> (BodySender, RpcBody) {
    use http_body_util::BodyExt;
    let (tx, rx) = tokio::sync::mpsc::channel(frames.max(1));
    (BodySender { tx }, ChannelBody { rx }.boxed())
}

/// The sending half of [`channel`].
#[derive(Debug, Clone)]
pub struct BodySender {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
}

impl BodySender {
    /// Queues `data`; `Err` when the body was dropped (the call ended).
    pub async fn send(&self, data: Bytes) -> Result<(), Bytes> {
        self.tx.send(Ok(data)).await.map_err(|e| match e.0 {
            Ok(d) => d,
            Err(_) => Bytes::new(),
        })
    }

    /// Ends the body with an error: the peer sees the stream reset.
    pub async fn abort(self, error: std::io::Error) {
        let _ = self.tx.send(Err(error)).await;
    }
}

struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(http_body::Frame::data)))
    }
}
