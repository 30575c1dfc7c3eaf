//! The caller's side: one connection per peer, opened on demand, watched by
//! pings, reopened with backoff.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::auth::{self, AUTH_HEADER, ClusterKey};
use crate::server::{CONN_WINDOW, MAX_FRAME, STREAM_WINDOW};
use crate::{DEADLINE_HEADER, PATH_PREFIX, RpcBody, RpcError, full};

/// How a [`Peer`] connects and when it gives up.
#[derive(Clone)]
pub struct PeerConfig {
    /// Longest wait for the TCP (and TLS) connection and the hello.
    pub connect_timeout: Duration,
    /// Deadline of a call that names none.
    pub call_timeout: Duration,
    /// Interval of the connection's pings.
    pub ping_interval: Duration,
    /// A ping not answered within this closes the connection: the peer is
    /// down.
    pub ping_timeout: Duration,
    /// First and longest wait between two connection attempts after a
    /// failure; calls in between fail at once.
    pub backoff: (Duration, Duration),
    /// Largest clock difference accepted in the peer's welcome.
    pub max_skew: Duration,
    /// TLS to the peer (its name as its certificate states it), when the
    /// cluster's S3 port has it.
    pub tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            connect_timeout: Duration::from_secs(2),
            call_timeout: Duration::from_secs(30),
            ping_interval: Duration::from_secs(1),
            ping_timeout: Duration::from_secs(2),
            backoff: (Duration::from_millis(100), Duration::from_secs(2)),
            max_skew: Duration::from_secs(60),
            tls: None,
        }
    }
}

impl std::fmt::Debug for PeerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerConfig")
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("ping_interval", &self.ping_interval)
            .field("ping_timeout", &self.ping_timeout)
            .field("backoff", &self.backoff)
            .field("max_skew", &self.max_skew)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Whether a peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// Not tried yet.
    Unknown,
    /// Connected and answering pings.
    Up,
    /// The last connection failed or died.
    Down,
}

/// A peer's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerStats {
    /// Whether it answers.
    pub state: PeerState,
    /// Calls made.
    pub calls: u64,
    /// Calls that failed (any [`RpcError`]).
    pub failures: u64,
    /// Connections opened.
    pub connects: u64,
    /// Its clock minus ours at the last hello, in milliseconds.
    pub skew_ms: i64,
    /// Calls that succeeded, and their summed duration in microseconds
    /// (their mean latency is the quotient).
    pub completed: u64,
    pub latency_us_sum: u64,
}

struct Slot {
    send: Option<SendRequest<RpcBody>>,
    next_try: Instant,
    backoff: Duration,
    last_error: String,
}

struct Inner {
    me: String,
    name: String,
    addr: String,
    key: Arc<ClusterKey>,
    cfg: PeerConfig,
    slot: tokio::sync::Mutex<Slot>,
    state: AtomicU8,
    calls: AtomicU64,
    failures: AtomicU64,
    connects: AtomicU64,
    skew_ms: AtomicI64,
    completed: AtomicU64,
    latency_us: AtomicU64,
}

/// Another node, as this node calls it. Cheap to clone (one connection
/// shared by every clone).
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.inner.name)
            .field("addr", &self.inner.addr)
            .field("state", &self.state())
            .finish()
    }
}

const UNKNOWN: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

impl Peer {
    /// Node `name` (as the endpoint list names it), reached at `addr`
    /// (`host:port`), called by node `me`.
    pub fn new(
        me: impl Into<String>,
        name: impl Into<String>,
        addr: impl Into<String>,
        key: Arc<ClusterKey>,
        cfg: PeerConfig,
    ) -> Peer {
        let first = cfg.backoff.0;
        Peer {
            inner: Arc::new(Inner {
                me: me.into(),
                name: name.into(),
                addr: addr.into(),
                key,
                cfg,
                slot: tokio::sync::Mutex::new(Slot {
                    send: None,
                    next_try: Instant::now(),
                    backoff: first,
                    last_error: String::new(),
                }),
                state: AtomicU8::new(UNKNOWN),
                calls: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                connects: AtomicU64::new(0),
                skew_ms: AtomicI64::new(0),
                completed: AtomicU64::new(0),
                latency_us: AtomicU64::new(0),
            }),
        }
    }

    /// The peer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether it answers, as last seen.
    pub fn state(&self) -> PeerState {
        match self.inner.state.load(Ordering::Relaxed) {
            UP => PeerState::Up,
            DOWN => PeerState::Down,
            _ => PeerState::Unknown,
        }
    }

    /// Its counters.
    pub fn stats(&self) -> PeerStats {
        PeerStats {
            state: self.state(),
            calls: self.inner.calls.load(Ordering::Relaxed),
            failures: self.inner.failures.load(Ordering::Relaxed),
            connects: self.inner.connects.load(Ordering::Relaxed),
            skew_ms: self.inner.skew_ms.load(Ordering::Relaxed),
            completed: self.inner.completed.load(Ordering::Relaxed),
            latency_us_sum: self.inner.latency_us.load(Ordering::Relaxed),
        }
    }

    fn set_state(&self, up: bool) {
        let new = if up { UP } else { DOWN };
        let old = self.inner.state.swap(new, Ordering::Relaxed);
        if old != new {
            if up {
                tracing::info!(peer = %self.inner.name, "node is up");
            } else {
                tracing::warn!(peer = %self.inner.name, "node is down");
            }
        }
    }

    fn unreachable(&self, reason: impl Into<String>) -> RpcError {
        RpcError::Unreachable {
            peer: self.inner.name.clone(),
            reason: reason.into(),
        }
    }

    /// The connection, opened if there is none and the backoff allows.
    async fn sender(&self) -> Result<SendRequest<RpcBody>, RpcError> {
        let mut slot = self.inner.slot.lock().await;
        if let Some(s) = &slot.send {
            if !s.is_closed() {
                return Ok(s.clone());
            }
            slot.send = None;
            self.set_state(false);
            slot.last_error = "the connection closed".to_owned();
        }
        let now = Instant::now();
        if now < slot.next_try {
            return Err(self.unreachable(format!(
                "{}; next attempt in {} ms",
                slot.last_error,
                (slot.next_try - now).as_millis()
            )));
        }
        match tokio::time::timeout(self.inner.cfg.connect_timeout, self.connect()).await {
            Ok(Ok(send)) => {
                slot.send = Some(send.clone());
                slot.backoff = self.inner.cfg.backoff.0;
                self.inner.connects.fetch_add(1, Ordering::Relaxed);
                self.set_state(true);
                Ok(send)
            }
            outcome => {
                let err = match outcome {
                    Ok(Err(e)) => e,
                    _ => self.unreachable(format!(
                        "no connection within {} ms",
                        self.inner.cfg.connect_timeout.as_millis()
                    )),
                };
                // The reason alone: the fast failures that repeat it name
                // the peer themselves.
                slot.last_error = match &err {
                    RpcError::Unreachable { reason, .. } => reason.clone(),
                    other => other.to_string(),
                };
                slot.next_try = Instant::now() + slot.backoff;
                slot.backoff = (slot.backoff * 2).min(self.inner.cfg.backoff.1);
                self.set_state(false);
                Err(err)
            }
        }
    }

    async fn connect(&self) -> Result<SendRequest<RpcBody>, RpcError> {
        let tcp = TcpStream::connect(&self.inner.addr)
            .await
            .map_err(|e| self.unreachable(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let send = match &self.inner.cfg.tls {
            Some((connector, server_name)) => {
                let tls = connector
                    .connect(server_name.clone(), tcp)
                    .await
                    .map_err(|e| self.unreachable(format!("TLS: {e}")))?;
                self.handshake(tls).await?
            }
            None => self.handshake(tcp).await?,
        };
        self.hello(send).await
    }

    async fn handshake<I>(&self, io: I) -> Result<SendRequest<RpcBody>, RpcError>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let cfg = &self.inner.cfg;
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONN_WINDOW)
            .max_frame_size(MAX_FRAME)
            .keep_alive_interval(cfg.ping_interval)
            .keep_alive_timeout(cfg.ping_timeout)
            .keep_alive_while_idle(true)
            .handshake(TokioIo::new(io))
            .await
            .map_err(|e| self.unreachable(format!("HTTP/2: {e}")))?;
        let peer = self.inner.name.clone();
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "node connection: {e}");
            }
        });
        Ok(send)
    }

    async fn hello(
        &self,
        mut send: SendRequest<RpcBody>,
    ) -> Result<SendRequest<RpcBody>, RpcError> {
        let i = &self.inner;
        let (hello, nonce) = auth::hello(&i.key, &i.me, &i.name, SystemTime::now());
        let req = Request::post(format!("http://{}{PATH_PREFIX}hello", i.addr))
            .header(AUTH_HEADER, hello)
            .body(full(Bytes::new()))
            .map_err(|e| self.unreachable(e.to_string()))?;
        let resp = send
            .send_request(req)
            .await
            .map_err(|e| self.unreachable(format!("hello: {e}")))?;
        let status = resp.status();
        let welcome = resp
            .headers()
            .get(AUTH_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp.into_body().collect().await.map(|b| b.to_bytes());
        if status != StatusCode::OK {
            return Err(RpcError::Remote {
                peer: i.name.clone(),
                method: "hello".to_owned(),
                status: status.as_u16(),
                message: String::from_utf8_lossy(&body.unwrap_or_default()).into_owned(),
            });
        }
        let welcome = welcome.unwrap_or_default();
        let skew = auth::check_welcome(
            &i.key,
            &welcome,
            &i.me,
            &i.name,
            &nonce,
            SystemTime::now(),
            i.cfg.max_skew,
        )
        .map_err(|error| RpcError::Auth {
            peer: i.name.clone(),
            error,
        })?;
        i.skew_ms.store(skew, Ordering::Relaxed);
        Ok(send)
    }

    fn request(
        &self,
        method: &str,
        body: RpcBody,
        deadline: Duration,
    ) -> Result<Request<RpcBody>, RpcError> {
        Request::post(format!(
            "http://{}{PATH_PREFIX}call/{method}",
            self.inner.addr
        ))
        .header(DEADLINE_HEADER, deadline.as_millis().to_string())
        .body(body)
        .map_err(|e| self.broken(method, e.to_string()))
    }

    fn broken(&self, method: &str, reason: String) -> RpcError {
        RpcError::Broken {
            peer: self.inner.name.clone(),
            method: method.to_owned(),
            reason,
        }
    }

    async fn remote(&self, method: &str, resp: Response<Incoming>) -> RpcError {
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        RpcError::Remote {
            peer: self.inner.name.clone(),
            method: method.to_owned(),
            status,
            message: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    async fn counted<T>(
        &self,
        method: &str,
        deadline: Duration,
        work: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, RpcError> {
        self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let out = match tokio::time::timeout(deadline, work).await {
            Ok(r) => r,
            Err(_) => Err(RpcError::Timeout {
                peer: self.inner.name.clone(),
                method: method.to_owned(),
                after_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
            }),
        };
        if out.is_err() {
            self.inner.failures.fetch_add(1, Ordering::Relaxed);
        } else {
            let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.inner.completed.fetch_add(1, Ordering::Relaxed);
            self.inner.latency_us.fetch_add(us, Ordering::Relaxed);
        }
        out
    }

    /// A small call: `body` to `method`, its answer's bytes. `deadline`
    /// (or [`PeerConfig::call_timeout`]) bounds the whole call, connecting
    /// included, and travels with it so the callee stops working too.
    pub async fn call(
        &self,
        method: &str,
        body: Bytes,
        deadline: Option<Duration>,
    ) -> Result<Bytes, RpcError> {
        let deadline = deadline.unwrap_or(self.inner.cfg.call_timeout);
        self.counted(method, deadline, async {
            let resp = self.send(method, full(body), deadline).await?;
            resp.into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .map_err(|e| self.broken(method, e.to_string()))
        })
        .await
    }

    /// Sends one call on the connection; its answer's head when 200.
    async fn send(
        &self,
        method: &str,
        body: RpcBody,
        deadline: Duration,
    ) -> Result<Response<Incoming>, RpcError> {
        let mut send = self.sender().await?;
        let req = self.request(method, body, deadline)?;
        let resp = send
            .send_request(req)
            .await
            .map_err(|e| self.broken(method, e.to_string()))?;
        if resp.status() != StatusCode::OK {
            return Err(self.remote(method, resp).await);
        }
        Ok(resp)
    }

    /// A streaming call: `body` streams to `method` under flow control; the
    /// answer's head comes back within `deadline` (or the call timeout),
    /// its body streams as the caller reads it.
    pub async fn stream(
        &self,
        method: &str,
        body: RpcBody,
        deadline: Option<Duration>,
    ) -> Result<Response<Incoming>, RpcError> {
        let deadline = deadline.unwrap_or(self.inner.cfg.call_timeout);
        self.counted(method, deadline, self.send(method, body, deadline))
            .await
    }

    /// Watches the peer: every ping interval, notices a connection the
    /// pings found dead (the peer is then down) and tries to reconnect
    /// (within the backoff), so the state follows the peer without calls.
    pub fn spawn_monitor(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let interval = match weak.upgrade() {
                    Some(inner) => {
                        let peer = Peer { inner };
                        let _ = peer.sender().await;
                        peer.inner.cfg.ping_interval
                    }
                    None => return,
                };
                tokio::time::sleep(interval).await;
            }
        })
    }
}
