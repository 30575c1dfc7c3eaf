//! HTTPS from a MinIO-style certificates directory: HTTP/2 and HTTP/1.1 by
//! ALPN, and certificates replaced on SIGHUP without dropping connections.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::support::{Daemon, PATIENCE, run, tessera};

struct Pair {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

fn pair() -> Pair {
    let k =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    Pair {
        cert_pem: k.cert.pem(),
        key_pem: k.signing_key.serialize_pem(),
        der: k.cert.der().clone(),
    }
}

fn install(dir: &Path, p: &Pair) {
    // Written aside and renamed, as an operator's tooling (certbot) does.
    std::fs::write(dir.join("public.crt.new"), &p.cert_pem).unwrap();
    std::fs::write(dir.join("private.key.new"), &p.key_pem).unwrap();
    std::fs::rename(dir.join("private.key.new"), dir.join("private.key")).unwrap();
    std::fs::rename(dir.join("public.crt.new"), dir.join("public.crt")).unwrap();
}

fn connector(trusted: &[&Pair], alpn: &[&[u8]]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for p in trusted {
        roots.add(p.der.clone()).unwrap();
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    TlsConnector::from(Arc::new(cfg))
}

async fn connect(addr: &str, c: &TlsConnector) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    c.connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

fn get(uri: &str, host: &str) -> Request<Empty<Bytes>> {
    Request::get(uri)
        .header(http::header::HOST, host)
        .body(Empty::new())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_h2_and_http1_and_reload_on_sighup() {
    let home = tempfile::tempdir().unwrap();
    let certs = home.path().join("certs");
    std::fs::create_dir_all(certs.join("CAs")).unwrap();
    let (a, b) = (pair(), pair());
    install(&certs, &a);
    std::fs::write(certs.join("CAs/ca.crt"), &a.cert_pem).unwrap();

    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0", "--certs-dir"])
        .arg(&certs)
        .arg(home.path().join("d"));
    let d = Daemon::start(cmd);
    assert!(
        d.endpoint.starts_with("https://127.0.0.1:"),
        "{}",
        d.endpoint
    );
    let banner = d.stdout_until("TLS:");
    assert!(banner.contains("TLS: on"), "{banner}");
    let port = d.addr.rsplit(':').next().unwrap().to_owned();
    let authority = format!("localhost:{port}");

    // HTTP/2, chosen by ALPN.
    let tls = connect(&d.addr, &connector(&[&a], &[b"h2", b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let r = h2
        .send_request(get(
            &format!("https://{authority}/tessera/health/live"),
            &authority,
        ))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.version(), http::Version::HTTP_2);

    // HTTP/1.1, kept open across the reload.
    let tls = connect(&d.addr, &connector(&[&a], &[b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(
        tls.get_ref().1.peer_certificates().unwrap()[0],
        a.der,
        "the first certificate is served"
    );
    let (mut h1, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let r = h1
        .send_request(get("/minio/health/ready", &authority))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.into_body().collect().await.unwrap();

    // Replace the pair and reload.
    install(&certs, &b);
    d.signal("HUP");
    let both = connector(&[&a, &b], &[b"h2", b"http/1.1"]);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let tls = connect(&d.addr, &both).await;
        if tls.get_ref().1.peer_certificates().unwrap()[0] == b.der {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "SIGHUP did not load the new pair"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A client trusting only the new certificate gets in.
    let tls = connect(&d.addr, &connector(&[&b], &[b"http/1.1"])).await;
    drop(tls);

    // The connection opened before the reload still works, on HTTP/1.1 and
    // HTTP/2 alike.
    let r = h1
        .send_request(get("/minio/health/live", &authority))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = h2
        .send_request(get(
            &format!("https://{authority}/minio/health/cluster"),
            &authority,
        ))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // A broken pair on reload is refused and the current one kept.
    std::fs::write(certs.join("private.key"), "not a key").unwrap();
    d.signal("HUP");
    let tls = connect(&d.addr, &connector(&[&b], &[b"http/1.1"])).await;
    assert_eq!(tls.get_ref().1.peer_certificates().unwrap()[0], b.der);
}

#[test]
fn half_a_certificate_pair_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let certs = home.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("public.crt"), pair().cert_pem).unwrap();
    let mut cmd = tessera(home.path());
    cmd.args(["server", "--address", "127.0.0.1:0", "--certs-dir"])
        .arg(&certs)
        .arg(home.path().join("d"));
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has public.crt but no private.key"), "{err}");
}
