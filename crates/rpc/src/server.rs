//! The callee's side: a table of methods behind the connection's hello.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::auth::{AUTH_HEADER, Gate};
use crate::{DEADLINE_HEADER, PATH_PREFIX, RpcBody, full};

/// Largest request body of a unary call (small calls: metadata, locks,
/// raft messages; shard data goes through streams).
pub const MAX_CALL_BYTES: usize = 16 << 20;

/// HTTP/2 flow-control windows of node connections: large enough that one
/// stream fills a loopback or LAN link, small enough to bound what a slow
/// reader leaves buffered.
pub const STREAM_WINDOW: u32 = 4 << 20;
pub const CONN_WINDOW: u32 = 16 << 20;
pub const MAX_FRAME: u32 = 256 << 10;
/// Concurrent calls on one connection.
pub const MAX_STREAMS: u32 = 1024;

type BoxFuture = Pin<Box<dyn Future<Output = Response<RpcBody>> + Send>>;
type Handler = Arc<dyn Fn(String, Request<Incoming>) -> BoxFuture + Send + Sync>;

/// A unary method's refusal: an HTTP status (4xx or 5xx) and a message,
/// which the caller gets as [`RpcError::Remote`](crate::RpcError::Remote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The status.
    pub status: u16,
    /// Why.
    pub message: String,
}

impl From<String> for Failure {
    /// A server error (500).
    fn from(message: String) -> Failure {
        Failure {
            status: 500,
            message,
        }
    }
}

/// One connection's state: the node its hello admitted.
#[derive(Debug, Default)]
pub struct Connection {
    admitted: OnceLock<String>,
}

impl Connection {
    /// The node this connection was admitted for, if it has said hello.
    pub fn peer(&self) -> Option<&str> {
        self.admitted.get().map(String::as_str)
    }
}

/// The methods a node serves to its peers.
pub struct Service {
    gate: Gate,
    methods: HashMap<String, Handler>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("node", &self.gate.name())
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn text(status: StatusCode, message: impl Into<String>) -> Response<RpcBody> {
    let mut r = Response::new(full(message.into()));
    *r.status_mut() = status;
    r
}

/// The deadline a call carries, if any.
fn deadline_of<B>(req: &Request<B>) -> Option<Duration> {
    req.headers()
        .get(DEADLINE_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
}

impl Service {
    /// A service with no methods, behind `gate`.
    pub fn new(gate: Gate) -> Service {
        Service {
            gate,
            methods: HashMap::new(),
        }
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        self.gate.name()
    }

    /// Adds a small call: `f(caller, request bytes)` answers bytes or a
    /// [`Failure`] (a message is a 500). The request is at most
    /// [`MAX_CALL_BYTES`]; the call's deadline, when it carries one, bounds
    /// `f` (504 after it).
    pub fn unary<F, Fut, E>(&mut self, name: &str, f: F)
    where
        F: Fn(String, Bytes) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Bytes, E>> + Send + 'static,
        E: Into<Failure>,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |from, req: Request<Incoming>| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let deadline = deadline_of(&req);
                let work = async {
                    let body = match Limited::new(req.into_body(), MAX_CALL_BYTES)
                        .collect()
                        .await
                    {
                        Ok(b) => b.to_bytes(),
                        Err(e) => {
                            return text(StatusCode::BAD_REQUEST, format!("request body: {e}"));
                        }
                    };
                    match f(from, body).await {
                        Ok(out) => Response::new(full(out)),
                        Err(e) => {
                            let Failure { status, message } = e.into();
                            text(
                                StatusCode::from_u16(status)
                                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                                message,
                            )
                        }
                    }
                };
                match deadline {
                    Some(d) => tokio::time::timeout(d, work).await.unwrap_or_else(|_| {
                        text(StatusCode::GATEWAY_TIMEOUT, "the call's deadline passed")
                    }),
                    None => work.await,
                }
            })
        });
        self.methods.insert(name.to_owned(), handler);
    }

    /// Adds a streaming call: `f(caller, request)` reads the request body
    /// as it comes and answers with a body of its own; both move under
    /// HTTP/2 flow control.
    pub fn streaming<F, Fut>(&mut self, name: &str, f: F)
    where
        F: Fn(String, Request<Incoming>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<RpcBody>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |from, req| Box::pin(f(from, req)));
        self.methods.insert(name.to_owned(), handler);
    }

    /// Answers one request of `conn` (its path under [`PATH_PREFIX`]).
    pub async fn handle(&self, conn: &Connection, req: Request<Incoming>) -> Response<RpcBody> {
        let Some(path) = req.uri().path().strip_prefix(PATH_PREFIX) else {
            return text(StatusCode::NOT_FOUND, "not a node RPC path");
        };
        if path == "hello" {
            if conn.peer().is_some() {
                return text(
                    StatusCode::BAD_REQUEST,
                    "hello sent twice on one connection",
                );
            }
            let Some(h) = req.headers().get(AUTH_HEADER).and_then(|v| v.to_str().ok()) else {
                return text(StatusCode::UNAUTHORIZED, "no node hello");
            };
            let now = self.gate.now();
            return match self.gate.admit(h, now) {
                Ok(admitted) => {
                    let welcome = self.gate.welcome(&admitted, now);
                    if conn.admitted.set(admitted.from.clone()).is_err() {
                        return text(
                            StatusCode::BAD_REQUEST,
                            "hello sent twice on one connection",
                        );
                    }
                    tracing::debug!(peer = %admitted.from, "node connection admitted");
                    let mut r = Response::new(full(Bytes::new()));
                    if let Ok(v) = http::HeaderValue::from_str(&welcome) {
                        r.headers_mut().insert(AUTH_HEADER, v);
                    }
                    r
                }
                Err(e) => {
                    tracing::warn!("node hello refused: {e}");
                    text(StatusCode::UNAUTHORIZED, e.to_string())
                }
            };
        }
        let Some(from) = conn.peer() else {
            return text(StatusCode::UNAUTHORIZED, "no hello on this connection");
        };
        let Some(method) = path.strip_prefix("call/") else {
            return text(StatusCode::NOT_FOUND, "not a node RPC path");
        };
        match self.methods.get(method) {
            Some(h) => h(from.to_owned(), req).await,
            None => text(StatusCode::NOT_FOUND, format!("no method {method}")),
        }
    }
}

/// Serves node RPC on one connection (HTTP/2 with prior knowledge) until
/// it closes. The daemon serves the same [`Service`] on its S3 port
/// instead; this serves it alone (tests, tools).
pub async fn serve_connection<I>(io: I, service: Arc<Service>) -> Result<(), hyper::Error>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let conn = Arc::new(Connection::default());
    let svc = hyper::service::service_fn(move |req| {
        let service = Arc::clone(&service);
        let conn = Arc::clone(&conn);
        async move { Ok::<_, std::convert::Infallible>(service.handle(&conn, req).await) }
    });
    let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    b.timer(TokioTimer::new());
    configure_server(&mut b);
    b.serve_connection(TokioIo::new(io), svc).await
}

/// The HTTP/2 settings of a connection that carries node RPC.
pub fn configure_server<E>(b: &mut hyper::server::conn::http2::Builder<E>) {
    b.initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .max_frame_size(MAX_FRAME)
        .max_concurrent_streams(MAX_STREAMS)
        .keep_alive_interval(Some(Duration::from_secs(5)))
        .keep_alive_timeout(Duration::from_secs(10));
}
