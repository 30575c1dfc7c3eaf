//! The HTTP(S) server: listeners, TLS handshakes, HTTP/1.1 and HTTP/2
//! connections with bounds against slow or greedy clients, the routing of
//! health and metrics requests ahead of the S3 gateway, and the graceful
//! drain at shutdown.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use object::layer::{ObjectLayer, ScannerHandle};
use prometheus_client::metrics::gauge::Gauge;
use s3_gateway::splice::{PlainIo, SpliceQueue};
use s3_gateway::{Gateway, ResponseBody};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::config::ListenAddr;
use crate::health::Health;
use crate::metrics::{self, Metrics, MetricsAuth};
use crate::stream_deadline::StreamBody;
use crate::tls::TlsState;

/// Largest request head (start line and headers) accepted over HTTP/1.1,
/// and header list over HTTP/2; beyond it the client gets 431.
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Most headers in one HTTP/1.1 request.
const MAX_HEADERS: usize = 128;
/// Concurrent streams of one HTTP/2 connection.
const MAX_H2_STREAMS: u32 = 256;
/// HTTP/2 keep-alive pings: interval, and how long an answer may take.
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Everything a request may need.
pub struct App {
    pub gateway: Gateway,
    pub health: Health,
    pub metrics: Arc<Metrics>,
    pub metrics_auth: MetricsAuth,
    pub layer: Arc<ObjectLayer>,
    pub scanner: Option<ScannerHandle>,
    /// The lifecycle passes (they stop when dropped).
    pub _lifecycle: Option<s3_gateway::lifecycle::LifecycleHandle>,
}

/// Decrements a gauge when dropped (also when the request is cancelled).
struct GaugeGuard(Gauge);

impl GaugeGuard {
    fn new(g: &Gauge) -> GaugeGuard {
        g.inc();
        GaugeGuard(g.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl App {
    async fn handle(&self, req: Request<Incoming>) -> Response<ResponseBody> {
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        if let Some(r) = self.health.respond(&method, &path).await {
            return r;
        }
        if metrics::is_metrics_request(&method, &path) {
            if let Some(refusal) = self.metrics_auth.check(req.headers()) {
                return refusal;
            }
            let text = self
                .metrics
                .render(
                    &self.health,
                    &self.layer,
                    self.scanner.as_ref(),
                    self.gateway.admission_stats(),
                )
                .await;
            let body = if method == http::Method::HEAD {
                ResponseBody::empty()
            } else {
                ResponseBody::full(text)
            };
            return Response::builder()
                .header(
                    http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )
                .body(body)
                .unwrap_or_else(|_| Response::new(ResponseBody::empty()));
        }
        let _in_flight = GaugeGuard::new(&self.metrics.in_flight);
        self.gateway.handle(req).await
    }
}

/// Connection settings.
#[derive(Clone)]
pub struct ServeOptions {
    /// Longest wait for a request head (also the idle keep-alive time of
    /// HTTP/1.1, and the TLS handshake time).
    pub read_header_timeout: Duration,
    /// HTTPS when set.
    pub tls: Option<Arc<TlsState>>,
    /// Client connections served at once, all listeners together (0: no
    /// bound). Beyond it the server accepts nothing until one closes: new
    /// connections wait in the kernel's listen queue.
    pub max_connections: usize,
    /// Whether HTTP/1.1 connections in the clear send response bytes that
    /// wait in pipes from them (`TESSERA_SPLICE_GET`; the drives make
    /// pipes only then too).
    pub splice: bool,
    /// Longest time a response may go without a byte written to a client
    /// that stopped reading (`TESSERA_API_SEND_TIMEOUT`).
    pub send_timeout: Duration,
}

/// Binds `addr`: every address a host name resolves to (on one port), or
/// every interface (IPv6 and IPv4 where the system allows, else IPv4).
pub async fn bind(addr: &ListenAddr) -> Result<Vec<TcpListener>, String> {
    let mut out: Vec<TcpListener> = Vec::new();
    match &addr.host {
        None => match bind_one(SocketAddr::from(([0u16; 8], addr.port))) {
            Ok(l) => out.push(l),
            Err(e6) => match bind_one(SocketAddr::from(([0u8; 4], addr.port))) {
                Ok(l) => out.push(l),
                Err(e4) => {
                    return Err(format!(
                        "cannot listen on :{}: {e4} (IPv6: {e6})",
                        addr.port
                    ));
                }
            },
        },
        Some(host) => {
            let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), addr.port))
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?
                .collect();
            addrs.sort();
            addrs.dedup();
            if addrs.is_empty() {
                return Err(format!("{host} resolves to no address"));
            }
            let mut port = addr.port;
            for mut a in addrs {
                a.set_port(port);
                let l = bind_one(a).map_err(|e| format!("cannot listen on {a}: {e}"))?;
                // Port 0: every address on the port the first one got.
                port = l.local_addr().map_or(port, |a| a.port());
                out.push(l);
            }
        }
    }
    Ok(out)
}

fn bind_one(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let sock = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(1024)
}

/// The HTTP/2 client preface.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Waits (at most `timeout`) for the first bytes of a plain connection and
/// tells HTTP/2 with prior knowledge (`true`) from HTTP/1.x; `None` when the
/// client sends nothing in time or closes.
///
/// Event-driven: it wakes when bytes arrive. A peek that sees only part of
/// the preface clears the socket's readiness (tokio's `try_io`, which does
/// not lose an event that came meanwhile), so the next wait lasts until
/// more bytes come, however slowly a client sends them.
async fn sniff(stream: &TcpStream, timeout: Duration) -> Option<bool> {
    use rustix::net::{RecvFlags, recv};
    let deadline = tokio::time::Instant::now() + timeout;
    let mut buf = [0u8; 24];
    loop {
        tokio::time::timeout_at(deadline, stream.readable())
            .await
            .ok()?
            .ok()?;
        let seen = stream.try_io(tokio::io::Interest::READABLE, || {
            let (n, _) = recv(stream, &mut buf[..], RecvFlags::PEEK | RecvFlags::DONTWAIT)?;
            if n > 0 && n < H2_PREFACE.len() && buf[..n] == H2_PREFACE[..n] {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            Ok(n)
        });
        match seen {
            Ok(0) => return None,
            Ok(n) => return Some(n == H2_PREFACE.len() && buf == *H2_PREFACE),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
    }
}

/// How a connection is served.
struct Link {
    /// What requests learn of the connection (peer, TLS).
    conn: s3_gateway::ConnInfo,
    /// HTTP/2 rather than HTTP/1.1.
    h2: bool,
    /// The connection's queue of frames to send from pipes, if it has one.
    splice: Option<Arc<SpliceQueue>>,
    /// Whether `io` reads at most [`s3_gateway::splice::MAX_READ`] at once,
    /// so that hyper may queue up to [`s3_gateway::splice::WRITE_BUFFER`]
    /// for one write without growing its read buffer as well.
    large_writes: bool,
}

/// Serves HTTP/2 or HTTP/1.1 on `io`, as `link` says.
async fn serve_io<I>(io: I, link: Link, app: Arc<App>, opts: &ServeOptions, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Link {
        conn,
        h2,
        splice,
        large_writes,
    } = link;
    let send_timeout = opts.send_timeout;
    let svc = service_fn(move |mut req: Request<Incoming>| {
        let app = app.clone();
        if let Some(q) = &splice {
            req.extensions_mut().insert(Arc::clone(q));
        }
        req.extensions_mut().insert(conn);
        async move {
            let response = app.handle(req).await;
            // HTTP/2 multiplexes streams on one socket: a stream without
            // flow-control window stalls without stalling the socket, so
            // its body has a deadline of its own.
            Ok::<_, Infallible>(response.map(|body| {
                if h2 {
                    StreamBody::with_deadline(body, send_timeout)
                } else {
                    StreamBody::plain(body)
                }
            }))
        }
    });
    let io = TokioIo::new(crate::send_deadline::SendDeadline::new(
        io,
        opts.send_timeout,
    ));
    let result = if h2 {
        let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        b.timer(TokioTimer::new())
            .max_concurrent_streams(MAX_H2_STREAMS)
            .max_header_list_size(MAX_HEADER_BYTES as u32)
            .keep_alive_interval(Some(H2_PING_INTERVAL))
            .keep_alive_timeout(H2_PING_TIMEOUT);
        watcher.watch(b.serve_connection(io, svc)).await
    } else {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.timer(TokioTimer::new())
            .header_read_timeout(opts.read_header_timeout)
            .max_header_size(MAX_HEADER_BYTES)
            .max_headers(MAX_HEADERS)
            .keep_alive(true);
        if large_writes {
            b.max_buf_size(s3_gateway::splice::WRITE_BUFFER);
        }
        watcher.watch(b.serve_connection(io, svc)).await
    };
    if let Err(e) = result {
        tracing::debug!("connection: {e}");
    }
}

async fn serve_conn(
    stream: TcpStream,
    peer: SocketAddr,
    app: Arc<App>,
    opts: ServeOptions,
    watcher: Watcher,
    _slot: Option<OwnedSemaphorePermit>,
) {
    let _open = GaugeGuard::new(&app.metrics.connections_open);
    app.metrics.connections.inc();
    let _ = stream.set_nodelay(true);
    if let Some(tls) = &opts.tls {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
        let stream =
            match tokio::time::timeout(opts.read_header_timeout, acceptor.accept(stream)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    app.metrics.tls_handshake_errors.inc();
                    tracing::debug!(%peer, "TLS handshake: {e}");
                    return;
                }
                Err(_) => {
                    app.metrics.tls_handshake_errors.inc();
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        let link = Link {
            conn: s3_gateway::ConnInfo { peer, tls: true },
            h2,
            splice: None,
            large_writes: false,
        };
        serve_io(stream, link, app, &opts, watcher).await;
    } else {
        let Some(h2) = sniff(&stream, opts.read_header_timeout).await else {
            tracing::debug!(%peer, "no request before the header timeout");
            return;
        };
        let conn = s3_gateway::ConnInfo { peer, tls: false };
        if h2 {
            let link = Link {
                conn,
                h2: true,
                splice: None,
                large_writes: false,
            };
            serve_io(stream, link, app, &opts, watcher).await;
        } else {
            // HTTP/1.1 in the clear: large writes, reads of the usual size,
            // and with TESSERA_SPLICE_GET=on, response bytes that wait in
            // pipes sent from them (s3_gateway::splice).
            let splice = opts.splice.then(SpliceQueue::new);
            let io = PlainIo::new(stream, splice.clone());
            let link = Link {
                conn,
                h2: false,
                splice,
                large_writes: true,
            };
            serve_io(io, link, app, &opts, watcher).await;
        }
    }
}

/// A running server: accepting until [`Server::shutdown`].
pub struct Server {
    accept_tasks: Vec<tokio::task::JoinHandle<()>>,
    dispatch: tokio::task::JoinHandle<GracefulShutdown>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Server {
    /// Starts accepting on `listeners`.
    pub fn start(listeners: Vec<TcpListener>, app: Arc<App>, opts: ServeOptions) -> Server {
        type Accepted = (TcpStream, SocketAddr, Option<OwnedSemaphorePermit>);
        let (tx, mut rx) = mpsc::channel::<Accepted>(256);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let slots =
            (opts.max_connections > 0).then(|| Arc::new(Semaphore::new(opts.max_connections)));
        let accept_tasks = listeners
            .into_iter()
            .map(|l| {
                let tx = tx.clone();
                let slots = slots.clone();
                tokio::spawn(async move {
                    loop {
                        // A slot first: at the bound, connections wait in
                        // the listen queue instead of taking descriptors.
                        let slot = match &slots {
                            Some(s) => match Arc::clone(s).acquire_owned().await {
                                Ok(p) => Some(p),
                                Err(_) => return,
                            },
                            None => None,
                        };
                        match l.accept().await {
                            Ok((stream, peer)) => {
                                if tx.send((stream, peer, slot)).await.is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                // Out of descriptors and the like: back off
                                // instead of spinning.
                                tracing::warn!("accept: {e}");
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let dispatch = tokio::spawn(async move {
            let graceful = GracefulShutdown::new();
            let mut stop_rx = stop_rx;
            loop {
                tokio::select! {
                    biased;
                    _ = stop_rx.changed() => break,
                    c = rx.recv() => {
                        let Some((stream, peer, slot)) = c else { break };
                        let watcher = graceful.watcher();
                        tokio::spawn(serve_conn(stream, peer, app.clone(), opts.clone(), watcher, slot));
                    }
                }
            }
            graceful
        });
        Server {
            accept_tasks,
            dispatch,
            stop,
        }
    }

    /// Stops accepting: the listening sockets are closed when this returns.
    pub async fn stop_accepting(&mut self) {
        for t in &self.accept_tasks {
            t.abort();
        }
        for t in self.accept_tasks.drain(..) {
            let _ = t.await;
        }
    }

    /// Stops accepting if not done yet, then waits at most `timeout` for
    /// the connections' requests in flight to finish (connections are told
    /// to close once idle). Returns whether every connection finished in
    /// time.
    pub async fn drain(mut self, timeout: Duration) -> bool {
        self.stop_accepting().await;
        let _ = self.stop.send(true);
        let Ok(graceful) = self.dispatch.await else {
            return false;
        };
        let open = graceful.count();
        if open > 0 {
            tracing::info!(connections = open, "draining connections");
        }
        tokio::time::timeout(timeout, graceful.shutdown())
            .await
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn sniffs_protocols() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        for (sent, want) in [
            (&b"GET / HTTP/1.1\r\n"[..], Some(false)),
            (&H2_PREFACE[..], Some(true)),
            (&b"PRI * HTTP/1.1\r\n\r\nxxxxxxxxxxx"[..], Some(false)),
            (&b""[..], None),
        ] {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            c.write_all(sent).await.unwrap();
            if sent.is_empty() {
                c.shutdown().await.unwrap();
            }
            assert_eq!(sniff(&s, Duration::from_secs(10)).await, want, "{sent:?}");
        }
        // The preface in pieces, the rest long after the first: found
        // when the rest arrives.
        let mut c = TcpStream::connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        c.write_all(&H2_PREFACE[..5]).await.unwrap();
        let sniffer = tokio::spawn(async move { sniff(&s, Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !sniffer.is_finished(),
            "a partial preface is not a protocol yet"
        );
        c.write_all(&H2_PREFACE[5..20]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.write_all(&H2_PREFACE[20..]).await.unwrap();
        assert_eq!(sniffer.await.unwrap(), Some(true));
        // A partial preface and then silence: the deadline ends the wait,
        // and the sniffer sleeps meanwhile (a handful of polls, where a
        // timer-driven retry would be polled hundreds of times).
        let mut c = TcpStream::connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        c.write_all(&H2_PREFACE[..10]).await.unwrap();
        let polls = std::sync::atomic::AtomicUsize::new(0);
        let mut fut = std::pin::pin!(sniff(&s, Duration::from_millis(500)));
        let started = std::time::Instant::now();
        let got = std::future::poll_fn(|cx| {
            polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fut.as_mut().poll(cx)
        })
        .await;
        assert_eq!(got, None);
        assert!(started.elapsed() >= Duration::from_millis(490));
        let polls = polls.into_inner();
        assert!(polls < 10, "polled {polls} times while waiting");
        // Nothing sent: the deadline ends the wait.
        let _c = TcpStream::connect(addr).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        assert_eq!(sniff(&s, Duration::from_millis(50)).await, None);
    }

    #[tokio::test]
    async fn binds_port_zero_on_every_address() {
        let ls = bind(&ListenAddr {
            host: Some("localhost".into()),
            port: 0,
        })
        .await
        .unwrap();
        let ports: Vec<u16> = ls.iter().map(|l| l.local_addr().unwrap().port()).collect();
        assert!(ports.iter().all(|p| *p == ports[0] && *p != 0), "{ports:?}");
    }
}
