//! The HTTP/1.1 client: hyper's connection API over tokio TCP (optionally
//! rustls), a bounded pool of keep-alive connections per endpoint shared by
//! the workers, request bodies generated from the pattern while they are
//! sent, and the errors a request can end with.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;

use crate::chunked::ChunkedPattern;
use crate::pattern::Pattern;

/// Bytes generated per body frame.
pub const FRAME: usize = 256 * 1024;
/// Connect (and TLS handshake) timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One S3 endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    /// `host:port` as given (also the Host header).
    pub authority: String,
    /// The host part, for TLS server names.
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// Parses `HOST:PORT`, `HOST` (port 80/443), `http://HOST[:PORT][/]` or
    /// `https://...`; `tls` applies to the forms without a scheme.
    pub fn parse(text: &str, tls: bool) -> Result<Endpoint, String> {
        let t = text.trim();
        let (tls, rest) = if let Some(r) = t.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = t.strip_prefix("http://") {
            (false, r)
        } else if t.contains("://") {
            return Err(format!(
                "bad host {text:?}: only http:// and https:// are supported"
            ));
        } else {
            (tls, t)
        };
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') || rest.contains('@') || rest.contains('?') {
            return Err(format!(
                "bad host {text:?}: expected HOST:PORT or a base URL"
            ));
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            // [v6]:port
            let (h, after) = r
                .split_once(']')
                .ok_or_else(|| format!("bad host {text:?}: unclosed ["))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("bad port in {text:?}"))?,
                None if after.is_empty() => default_port,
                None => return Err(format!("bad host {text:?}")),
            };
            (h.to_owned(), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_owned(),
                    p.parse().map_err(|_| format!("bad port in {text:?}"))?,
                ),
                None => (rest.to_owned(), default_port),
            }
        };
        if host.is_empty() {
            return Err(format!("bad host {text:?}: empty host name"));
        }
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Endpoint {
            tls,
            authority,
            host,
            port,
        })
    }

    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.authority
        )
    }
}

/// How TLS endpoints are checked.
#[derive(Debug, Clone)]
pub enum TlsTrust {
    /// Certificates from a PEM file (the server's or its CA's).
    CaFile(std::path::PathBuf),
    /// No verification at all (`--insecure`).
    Insecure,
}

/// Builds the rustls client configuration (ring provider, ALPN http/1.1).
pub fn tls_config(trust: &TlsTrust) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let mut config = match trust {
        TlsTrust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth(),
        TlsTrust::CaFile(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_pem_certs(path)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// `--insecure`: accepts any certificate, still checks handshake signatures.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The server answered with an error status (S3 code from the body).
    Http {
        status: u16,
        code: String,
        message: String,
    },
    Connect(String),
    Tls(String),
    /// The connection broke mid-request.
    Io(String),
    Timeout,
    /// A response that breaks the protocol or the expectations (length,
    /// missing fields, listing count).
    BadResponse(String),
    /// The server returned wrong bytes: fails the run.
    Mismatch(String),
    /// The request could not be built or signed.
    Client(String),
}

impl OpError {
    /// The bucket this error is counted in.
    pub fn kind(&self) -> String {
        match self {
            OpError::Http { status, code, .. } if code.is_empty() => format!("HTTP {status}"),
            OpError::Http { status, code, .. } => format!("HTTP {status} {code}"),
            OpError::Connect(_) => "connect".into(),
            OpError::Tls(_) => "tls".into(),
            OpError::Io(_) => "connection".into(),
            OpError::Timeout => "timeout".into(),
            OpError::BadResponse(_) => "bad response".into(),
            OpError::Mismatch(_) => "content mismatch".into(),
            OpError::Client(_) => "client".into(),
        }
    }

    /// Whether the run must stop (wrong content).
    pub fn is_fatal(&self) -> bool {
        matches!(self, OpError::Mismatch(_))
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::Http {
                status,
                code,
                message,
            } => {
                write!(f, "HTTP {status}")?;
                if !code.is_empty() {
                    write!(f, " {code}")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            OpError::Connect(m) => write!(f, "connect: {m}"),
            OpError::Tls(m) => write!(f, "TLS: {m}"),
            OpError::Io(m) => write!(f, "connection: {m}"),
            OpError::Timeout => write!(f, "request timed out"),
            OpError::BadResponse(m) => write!(f, "bad response: {m}"),
            OpError::Mismatch(m) => write!(f, "content mismatch: {m}"),
            OpError::Client(m) => write!(f, "client: {m}"),
        }
    }
}

/// A request body: nothing, bytes in memory, or a range of an object's
/// pattern generated frame by frame as hyper asks for it, plain or in
/// aws-chunked framing.
#[derive(Debug)]
pub enum ReqBody {
    Empty,
    Bytes(Option<Bytes>),
    Pattern {
        pattern: Pattern,
        pos: u64,
        end: u64,
    },
    Chunked(Box<ChunkedPattern>),
}

impl http_body::Body for ReqBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match this {
            ReqBody::Empty => Poll::Ready(None),
            ReqBody::Bytes(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ReqBody::Pattern { pattern, pos, end } => {
                if *pos >= *end {
                    return Poll::Ready(None);
                }
                let n = (*end - *pos).min(FRAME as u64) as usize;
                let mut buf = BytesMut::zeroed(n);
                pattern.fill(*pos, &mut buf);
                *pos += n as u64;
                Poll::Ready(Some(Ok(Frame::data(buf.freeze()))))
            }
            ReqBody::Chunked(c) => Poll::Ready(c.next_frame().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReqBody::Empty => true,
            ReqBody::Bytes(b) => b.is_none(),
            ReqBody::Pattern { pos, end, .. } => pos >= end,
            ReqBody::Chunked(c) => c.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Empty => SizeHint::with_exact(0),
            ReqBody::Bytes(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            ReqBody::Pattern { pos, end, .. } => SizeHint::with_exact(end.saturating_sub(*pos)),
            ReqBody::Chunked(c) => SizeHint::with_exact(c.remaining),
        }
    }
}

type Sender = http1::SendRequest<ReqBody>;

/// Idle keep-alive connections, per endpoint, at most `max_idle` each.
pub struct Pool {
    endpoints: Vec<Endpoint>,
    tls: Option<tokio_rustls::TlsConnector>,
    idle: Mutex<Vec<Vec<Sender>>>,
    max_idle: usize,
}

/// A connection lent out for one request; hand it back with
/// [`Pool::give_back`] once the response body has been read.
pub struct Lease {
    ep: usize,
    sender: Sender,
    reused: bool,
}

impl Pool {
    pub fn new(
        endpoints: Vec<Endpoint>,
        tls: Option<Arc<rustls::ClientConfig>>,
        max_idle: usize,
    ) -> Result<Pool, String> {
        if endpoints.is_empty() {
            return Err("no endpoint".into());
        }
        if endpoints.iter().any(|e| e.tls) && tls.is_none() {
            return Err(
                "an https endpoint needs --cacert FILE or --insecure (no system root store is built in)"
                    .into(),
            );
        }
        let n = endpoints.len();
        Ok(Pool {
            endpoints,
            tls: tls.map(tokio_rustls::TlsConnector::from),
            idle: Mutex::new((0..n).map(|_| Vec::new()).collect()),
            max_idle: max_idle.max(1),
        })
    }

    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    fn take_idle(&self, ep: usize) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(s) = idle[ep].pop() {
            if !s.is_closed() {
                return Some(s);
            }
        }
        None
    }

    /// A connection to endpoint `ep`: an idle one, else a new one.
    pub async fn lease(&self, ep: usize, fresh: bool) -> Result<Lease, OpError> {
        if !fresh && let Some(sender) = self.take_idle(ep) {
            return Ok(Lease {
                ep,
                sender,
                reused: true,
            });
        }
        let sender = tokio::time::timeout(CONNECT_TIMEOUT, self.connect(ep))
            .await
            .map_err(|_| {
                OpError::Connect(format!("{}: timed out", self.endpoints[ep].authority))
            })??;
        Ok(Lease {
            ep,
            sender,
            reused: false,
        })
    }

    async fn connect(&self, ep: usize) -> Result<Sender, OpError> {
        let e = &self.endpoints[ep];
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((e.host.as_str(), e.port))
            .await
            .map_err(|err| OpError::Connect(format!("{}: {err}", e.authority)))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect(a).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(err) => last = Some(err),
            }
        }
        let stream = stream.ok_or_else(|| {
            OpError::Connect(format!(
                "{}: {}",
                e.authority,
                last.map_or("no address".to_owned(), |e| e.to_string())
            ))
        })?;
        let _ = stream.set_nodelay(true);
        if e.tls {
            let connector = self
                .tls
                .as_ref()
                .ok_or_else(|| OpError::Tls("no TLS configuration".into()))?;
            let name = ServerName::try_from(e.host.clone())
                .map_err(|err| OpError::Tls(format!("server name {:?}: {err}", e.host)))?;
            let tls = connector
                .connect(name, stream)
                .await
                .map_err(|err| OpError::Tls(format!("{}: {err}", e.authority)))?;
            handshake(TokioIo::new(tls)).await
        } else {
            handshake(TokioIo::new(stream)).await
        }
    }

    /// Returns a connection whose response has been read completely.
    pub fn give_back(&self, lease: Lease) {
        if lease.sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle[lease.ep].len() < self.max_idle {
            idle[lease.ep].push(lease.sender);
        }
    }

    /// Sends a request built by `build` on endpoint `ep`. A request that
    /// fails on a reused keep-alive connection before any response (the
    /// server closed it while idle) is sent once more on a new connection;
    /// bodies are regenerated, so this is safe for every request here.
    pub async fn send(
        &self,
        ep: usize,
        build: &(dyn Fn() -> Result<http::Request<ReqBody>, OpError> + Sync),
    ) -> Result<(http::Response<Incoming>, Lease), OpError> {
        let mut fresh = false;
        loop {
            let mut lease = self.lease(ep, fresh).await?;
            let req = build()?;
            let result = match lease.sender.ready().await {
                Ok(()) => lease.sender.send_request(req).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(resp) => return Ok((resp, lease)),
                Err(e) if lease.reused && !fresh && retryable(&e) => {
                    fresh = true;
                }
                Err(e) => return Err(OpError::Io(error_chain(&e))),
            }
        }
    }
}

async fn handshake<T>(io: TokioIo<T>) -> Result<Sender, OpError>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::Builder::new()
        .max_buf_size(1 << 20)
        .handshake(io)
        .await
        .map_err(|e| OpError::Connect(error_chain(&e)))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn retryable(e: &hyper::Error) -> bool {
    e.is_canceled() || e.is_closed() || e.is_incomplete_message()
}

/// An error and its sources, `a: b: c`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    s
}
