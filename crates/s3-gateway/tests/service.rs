//! The gateway in-process, for what needs control over the request body or
//! the configuration: a client that stalls mid-body is cut off with
//! `RequestTimeout` and nothing is stored; virtual-host-style addressing
//! under a configured domain; request observers.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use object::layer::{LayerOptions, ObjectLayer};
use s3_gateway::auth::{CredentialScope, SecretKey, SigningKey, canonical_request, string_to_sign};
use s3_gateway::{
    Gateway, GatewayConfig, GatewayLimits, RequestObserver, RequestRecord, ResponseBody,
};

const AK: &str = "inproc-access";
const SK: &str = "inproc-secret-key";

/// A body that yields its chunks, then either ends or stalls forever.
struct TestBody {
    chunks: Vec<Bytes>,
    stall: bool,
}

impl Body for TestBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.chunks.is_empty() {
            return if self.stall {
                Poll::Pending
            } else {
                Poll::Ready(None)
            };
        }
        let c = self.chunks.remove(0);
        Poll::Ready(Some(Ok(Frame::data(c))))
    }
}

fn amz_date(t: SystemTime) -> String {
    s3_gateway::auth::amz_date(t)
}

/// A SigV4-signed request (`UNSIGNED-PAYLOAD`).
fn signed(
    method: &str,
    host: &str,
    path: &str,
    len: Option<u64>,
    body: TestBody,
) -> Request<TestBody> {
    let date = amz_date(SystemTime::now());
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host)
        .header("x-amz-date", &date)
        .header("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    if let Some(l) = len {
        b = b.header("content-length", l.to_string());
    }
    let mut req = b.body(body).unwrap();
    let names = vec![
        "host".to_owned(),
        "x-amz-content-sha256".to_owned(),
        "x-amz-date".to_owned(),
    ];
    let creq = canonical_request(&(&req).into(), &names, "UNSIGNED-PAYLOAD", false).unwrap();
    let scope = CredentialScope::new(&date[..8], "us-east-1", "s3");
    let sts = string_to_sign(&date, &scope, &creq);
    let sig = SigningKey::derive(&SecretKey::new(SK), &scope).sign(sts.as_bytes());
    req.headers_mut().insert(
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={AK}/{scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={}",
            sig.to_hex()
        )
        .parse()
        .unwrap(),
    );
    req
}

fn full(data: &[u8]) -> TestBody {
    TestBody {
        chunks: if data.is_empty() {
            vec![]
        } else {
            vec![Bytes::copy_from_slice(data)]
        },
        stall: false,
    }
}

async fn text(r: Response<ResponseBody>) -> (u16, String) {
    let status = r.status().as_u16();
    let b = r.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&b).into_owned())
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(&'static str, u16, u64)>>);

impl RequestObserver for Recorder {
    fn observe(&self, r: &RequestRecord<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((r.api, r.status.as_u16(), r.bytes_in));
    }
}

async fn gateway(tmp: &std::path::Path, idle: Duration) -> (Gateway, Arc<Recorder>) {
    let dirs: Vec<_> = (0..4).map(|i| tmp.join(format!("d{i}"))).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let layer = ObjectLayer::open_dirs(&dirs, LayerOptions::default())
        .await
        .unwrap();
    let rec = Arc::new(Recorder::default());
    let gw = Gateway::new(
        Arc::new(layer),
        GatewayConfig {
            credentials: vec![(AK.into(), SK.into())],
            domains: vec!["s3.test".into()],
            limits: GatewayLimits {
                body_idle_timeout: idle,
                ..GatewayLimits::default()
            },
            ..GatewayConfig::default()
        },
    )
    .with_observer(rec.clone());
    (gw, rec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_body_times_out_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (gw, rec) = gateway(tmp.path(), Duration::from_millis(300)).await;
    let (s, _) = text(
        gw.handle(signed("PUT", "h", "/stall", Some(0), full(b"")))
            .await,
    )
    .await;
    assert_eq!(s, 200);
    // 10 bytes of 1000 arrive, then nothing.
    let body = TestBody {
        chunks: vec![Bytes::from_static(b"0123456789")],
        stall: true,
    };
    let started = std::time::Instant::now();
    let r = gw
        .handle(signed("PUT", "h", "/stall/obj", Some(1000), body))
        .await;
    let (s, t) = text(r).await;
    assert_eq!(s, 400, "{t}");
    assert!(t.contains("<Code>RequestTimeout</Code>"), "{t}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let (s, t) = text(
        gw.handle(signed("GET", "h", "/stall/obj", None, full(b"")))
            .await,
    )
    .await;
    assert_eq!(s, 404, "{t}");
    assert!(t.contains("<Code>NoSuchKey</Code>"));
    let seen = rec.0.lock().unwrap().clone();
    assert!(seen.contains(&("PutObject", 400, 10)), "{seen:?}");
    assert!(
        seen.iter()
            .any(|(api, s, _)| *api == "GetObject" && *s == 404)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virtual_host_style() {
    let tmp = tempfile::tempdir().unwrap();
    let (gw, _) = gateway(tmp.path(), Duration::from_secs(30)).await;
    let (s, t) = text(
        gw.handle(signed("PUT", "vhost.s3.test", "/", Some(0), full(b"")))
            .await,
    )
    .await;
    assert_eq!(s, 200, "{t}");
    let (s, _) = text(
        gw.handle(signed(
            "PUT",
            "vhost.s3.test:9000",
            "/dir/obj",
            Some(5),
            full(b"hello"),
        ))
        .await,
    )
    .await;
    assert_eq!(s, 200);
    // The same object, path-style.
    let (s, t) = text(
        gw.handle(signed("GET", "s3.test", "/vhost/dir/obj", None, full(b"")))
            .await,
    )
    .await;
    assert_eq!((s, t.as_str()), (200, "hello"));
    let (s, t) = text(
        gw.handle(signed(
            "GET",
            "vhost.s3.test",
            "/?list-type=2",
            None,
            full(b""),
        ))
        .await,
    )
    .await;
    assert_eq!(s, 200);
    assert!(t.contains("<Key>dir/obj</Key>"), "{t}");
    // A host outside the domain is path-style.
    let (s, t) = text(
        gw.handle(signed("GET", "vhost.other.test", "/", None, full(b"")))
            .await,
    )
    .await;
    assert_eq!(s, 200);
    assert!(t.contains("<Name>vhost</Name>"), "ListBuckets: {t}");
}
