//! Support for the S3 API tests: the real `tessera` binary on a free port
//! over fresh drive directories, an aws-sdk-s3 client for it, and a raw
//! HTTP/1.1 client for requests no SDK would send.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};

pub const ACCESS_KEY: &str = "tessera-test";
pub const SECRET_KEY: &str = "tessera-test-secret";

/// A running `tessera server`, killed on drop.
pub struct Server {
    child: Child,
    pub endpoint: String,
    pub addr: String,
    pub dirs: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
}

impl Server {
    /// A server over `drives` fresh directories.
    pub fn start(drives: usize) -> Server {
        Server::start_with_env(drives, &[])
    }

    /// A server with extra environment variables.
    pub fn start_with_env(drives: usize, vars: &[(&str, &str)]) -> Server {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dirs: Vec<PathBuf> = (1..=drives)
            .map(|i| tmp.path().join(format!("d{i}")))
            .collect();
        Server::start_on(tmp, dirs, vars)
    }

    /// A server over HTTPS with a fresh self-signed certificate for
    /// `127.0.0.1` and `localhost`; also returns the certificate (PEM) to
    /// trust.
    pub fn start_tls(drives: usize) -> (Server, String) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let certs = tmp.path().join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        let ck = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
        ])
        .unwrap();
        let pem = ck.cert.pem();
        std::fs::write(certs.join("public.crt"), &pem).unwrap();
        std::fs::write(certs.join("private.key"), ck.signing_key.serialize_pem()).unwrap();
        let dirs: Vec<PathBuf> = (1..=drives)
            .map(|i| tmp.path().join(format!("d{i}")))
            .collect();
        let certs = certs.to_string_lossy().into_owned();
        let srv = Server::start_args(tmp, dirs, &[], &["--certs-dir", &certs]);
        (srv, pem)
    }

    fn start_on(tmp: tempfile::TempDir, dirs: Vec<PathBuf>, vars: &[(&str, &str)]) -> Server {
        Server::start_args(tmp, dirs, vars, &[])
    }

    fn start_args(
        tmp: tempfile::TempDir,
        dirs: Vec<PathBuf>,
        vars: &[(&str, &str)],
        args: &[&str],
    ) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("server").arg("--address").arg("127.0.0.1:0");
        cmd.args(args);
        for d in &dirs {
            cmd.arg(d);
        }
        cmd.env("TESSERA_ROOT_USER", ACCESS_KEY)
            .env("TESSERA_ROOT_PASSWORD", SECRET_KEY)
            .env_remove("MINIO_ROOT_USER")
            .env_remove("MINIO_ROOT_PASSWORD")
            .env("TESSERA_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start tessera");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(i) = line.find("API: ") {
                    let url = line[i + 5..]
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_owned();
                    let _ = tx.send(url);
                    sent = true;
                }
            }
        });
        let endpoint = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("tessera printed its API endpoint");
        let addr = endpoint
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        Server {
            child,
            endpoint,
            addr,
            dirs,
            _tmp: tmp,
        }
    }

    /// A client with the SDK's default settings (checksums when
    /// supported, so uploads are aws-chunked with CRC trailers).
    pub fn client(&self) -> Client {
        self.client_with(ACCESS_KEY, SECRET_KEY)
    }

    /// A client signing with other credentials.
    pub fn client_with(&self, access: &str, secret: &str) -> Client {
        self.client_trusting(access, secret, None)
    }

    /// A client that trusts only `ca` (PEM), for HTTPS servers.
    pub fn client_tls(&self, ca: &str) -> Client {
        self.client_trusting(ACCESS_KEY, SECRET_KEY, Some(ca))
    }

    fn client_trusting(&self, access: &str, secret: &str, ca: Option<&str>) -> Client {
        use aws_smithy_http_client::tls::{TlsContext, TrustStore};
        let mut http = aws_smithy_http_client::Builder::new().tls_provider(
            aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ),
        );
        if let Some(pem) = ca {
            http = http.tls_context(
                TlsContext::builder()
                    .with_trust_store(
                        TrustStore::empty().with_pem_certificate(pem.as_bytes().to_vec()),
                    )
                    .build()
                    .unwrap(),
            );
        }
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&self.endpoint)
            .force_path_style(true)
            .credentials_provider(Credentials::new(access, secret, None, None, "test"))
            .http_client(http.build_https())
            .build();
        Client::from_conf(conf)
    }

    /// Sends raw bytes as one HTTP/1.1 request (the caller includes
    /// `Connection: close`) and reads the whole response.
    pub fn raw(&self, request: &[u8]) -> RawResponse {
        raw(&self.addr, request)
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `<Code>` of an S3 error document.
    pub fn code(&self) -> String {
        let t = self.text();
        t.split("<Code>")
            .nth(1)
            .and_then(|r| r.split("</Code>").next())
            .unwrap_or("")
            .to_owned()
    }
}

pub fn raw(addr: &str, request: &[u8]) -> RawResponse {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(request).expect("send");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse_response(&buf)
}

pub fn parse_response(buf: &[u8]) -> RawResponse {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..i]).unwrap().trim(), 16)
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[i + 2..i + 2 + n]);
            rest = &rest[i + 2 + n + 2..];
        }
        body = out;
    }
    RawResponse {
        status,
        headers,
        body,
    }
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Hex MD5.
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest as _;
    hex::encode(md5::Md5::digest(data))
}

/// The S3 error code of an SDK error.
pub fn code<E, R>(e: &aws_sdk_s3::error::SdkError<E, R>) -> String
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    match e {
        aws_sdk_s3::error::SdkError::ServiceError(s) => s.err().code().unwrap_or("").to_owned(),
        other => format!("not a service error: {other:?}"),
    }
}

/// The HTTP status of an SDK error.
pub fn status<E>(
    e: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> u16 {
    e.raw_response().map_or(0, |r| r.status().as_u16())
}

/// `YYYYMMDDTHHMMSSZ` for now.
fn amz_date_now() -> String {
    s3_gateway::auth::amz_date(std::time::SystemTime::now())
}

impl Server {
    /// A raw HTTP/1.1 request signed with SigV4 (header auth, payload
    /// `UNSIGNED-PAYLOAD`), so tests can send bodies no SDK would build.
    /// `path` is already percent-encoded, with its query.
    pub fn signed_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Vec<u8> {
        use s3_gateway::auth::{
            CredentialScope, SecretKey, SigningKey, canonical_request, string_to_sign,
        };
        let date = amz_date_now();
        let mut b = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.addr)
            .header("x-amz-date", &date)
            .header("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        let req = b.body(()).unwrap();
        // Every x-amz-* header must be signed.
        let mut signed: Vec<String> = req
            .headers()
            .keys()
            .map(|n| n.as_str().to_owned())
            .filter(|n| n == "host" || n.starts_with("x-amz-"))
            .collect();
        signed.sort();
        signed.dedup();
        let creq = canonical_request(&(&req).into(), &signed, "UNSIGNED-PAYLOAD", false).unwrap();
        let scope = CredentialScope::new(&date[..8], "us-east-1", "s3");
        let sts = string_to_sign(&date, &scope, &creq);
        let sig = SigningKey::derive(&SecretKey::new(SECRET_KEY), &scope).sign(sts.as_bytes());
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        for (n, v) in req.headers() {
            out.push_str(&format!("{n}: {}\r\n", v.to_str().unwrap()));
        }
        out.push_str(&format!(
            "authorization: AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, SignedHeaders={}, Signature={}\r\n",
            signed.join(";"),
            sig.to_hex()
        ));
        out.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        out
    }
}

/// Standard base64.
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Server {
    /// A browser-style POST upload form for `bucket`, its policy signed
    /// with `secret`: `(content type, body)`.
    pub fn post_form(
        &self,
        bucket: &str,
        policy_json: &str,
        secret: &str,
        fields: &[(&str, &str)],
        file: &[u8],
    ) -> (String, Vec<u8>) {
        use s3_gateway::auth::{CredentialScope, SecretKey, SigningKey};
        let _ = bucket;
        let date = amz_date_now();
        let scope = CredentialScope::new(&date[..8], "us-east-1", "s3");
        let policy = base64(policy_json.as_bytes());
        let sig = SigningKey::derive(&SecretKey::new(secret), &scope).sign(policy.as_bytes());
        let credential = format!("{ACCESS_KEY}/{scope}");
        let boundary = "----TesseraFormBoundary7MA4YWxk";
        let mut all: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        all.push(("x-amz-algorithm".into(), "AWS4-HMAC-SHA256".into()));
        all.push(("x-amz-credential".into(), credential));
        all.push(("x-amz-date".into(), date.clone()));
        all.push(("policy".into(), policy));
        all.push(("x-amz-signature".into(), sig.to_hex()));
        let mut body = Vec::new();
        for (k, v) in &all {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
                )
                .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"up.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(file);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={boundary}"), body)
    }
}
