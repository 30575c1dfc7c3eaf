//! Bad input against the real binary: each request gets its exact S3
//! error (or a closed connection), nothing stored changes, and the server
//! answers normally afterwards.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;

use crate::support::{Server, code, data, metric_value, parse_response, raw, status, wait_until};

fn presign_cfg() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(600)).unwrap()
}

/// The path and query of a presigned request, for raw use.
fn path_of(srv: &Server, uri: &str) -> String {
    uri.trim_start_matches(&srv.endpoint).to_owned()
}

async fn still_serves(srv: &mut Server, bucket: &str) {
    assert!(srv.alive(), "server process exited");
    let c = srv.client();
    let got = c
        .get_object()
        .bucket(bucket)
        .key("keep")
        .send()
        .await
        .expect("the server still serves the kept object");
    let body = got.body.collect().await.unwrap().into_bytes();
    assert_eq!(&body[..], &data(100_000, 1)[..], "stored bytes unchanged");
}

async fn setup(srv: &Server, bucket: &str) {
    let c = srv.client();
    c.create_bucket().bucket(bucket).send().await.unwrap();
    c.put_object()
        .bucket(bucket)
        .key("keep")
        .body(ByteStream::from(data(100_000, 1)))
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_exact_errors() {
    let mut srv = Server::start(4);
    setup(&srv, "bad").await;
    let host = srv.addr.clone();

    // A key over 1024 bytes.
    let long = "k".repeat(1025);
    let r = srv.raw(
        format!("GET /bad/{long} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!((r.status, r.code().as_str()), (400, "KeyTooLongError"));
    // Invalid UTF-8 in the path.
    let r = srv.raw(
        format!("GET /bad/%FF%FE HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidURI"));
    // Too many header bytes.
    let big = "v".repeat(20_000);
    let r = srv.raw(
        format!(
            "GET /bad/keep HTTP/1.1\r\nHost: {host}\r\nx-pad: {big}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "RequestHeaderSectionTooLarge");
    // User metadata over 2 KiB.
    let c = srv.client();
    let e = c
        .put_object()
        .bucket("bad")
        .key("meta")
        .metadata("big", "m".repeat(3000))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "MetadataTooLarge");
    // Garbage request line: hyper answers 400 and closes.
    let r = srv.raw(b"\x01\x02 nonsense\r\n\r\n");
    assert_eq!(r.status, 400);
    // A forged Authorization header.
    let r = srv.raw(
        format!(
            "GET /bad/keep HTTP/1.1\r\nHost: {host}\r\nAuthorization: AWS4-HMAC-SHA256 garbage\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(r.status == 400 || r.status == 403, "{}", r.text());
    assert!(!r.code().is_empty());
    // SigV2 is refused.
    let r = srv.raw(
        format!("GET /bad/keep HTTP/1.1\r\nHost: {host}\r\nAuthorization: AWS AKIA:c2ln\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert!(r.status == 400 || r.status == 403, "{}", r.text());
    still_serves(&mut srv, "bad").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_xml_documents() {
    let mut srv = Server::start(4);
    setup(&srv, "xml").await;
    let c = srv.client();
    let up = c
        .create_multipart_upload()
        .bucket("xml")
        .key("mp")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    let path = format!("/xml/mp?uploadId={id}");
    let post = |body: &[u8]| srv.signed_raw("POST", &path, &[], body);
    for (doc, want) in [
        (&b"<CompleteMultipartUpload><Part>"[..], "MalformedXML"),
        (b"not xml at all", "MalformedXML"),
        (b"<CompleteMultipartUpload></CompleteMultipartUpload>", "MalformedXML"),
        (
            b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>",
            "MalformedXML",
        ),
        (
            b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"00\"</ETag></Part></CompleteMultipartUpload>",
            "InvalidPart",
        ),
        (
            b"<!DOCTYPE x [<!ENTITY a \"b\">]><CompleteMultipartUpload/>",
            "MalformedXML",
        ),
    ] {
        let r = srv.raw(&post(doc));
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.code(), want, "{}", String::from_utf8_lossy(doc));
    }
    // A document over the XML limit is refused without being buffered.
    let mut huge = b"<CompleteMultipartUpload>".to_vec();
    huge.resize(3 << 20, b' ');
    let r = srv.raw(&post(&huge));
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "MaxMessageLengthExceeded");
    // The upload is still there and completes normally afterwards.
    let parts = c
        .list_parts()
        .bucket("xml")
        .key("mp")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    assert!(parts.parts().is_empty());
    still_serves(&mut srv, "xml").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integrity_failures_store_nothing() {
    let mut srv = Server::start(4);
    setup(&srv, "intg").await;
    let c = srv.client();
    // Content-MD5 that does not match, and one that is not an MD5.
    let e = c
        .put_object()
        .bucket("intg")
        .key("keep")
        .content_md5("1B2M2Y8AsgTpgAmY7PhCfg==")
        .body(ByteStream::from_static(b"not empty"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    let e = c
        .put_object()
        .bucket("intg")
        .key("keep")
        .content_md5("bm90LWFuLW1kNQ==")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidDigest");
    still_serves(&mut srv, "intg").await;
    // A CRC32 header that does not match the body (sent raw through a
    // presigned PUT, so no SDK recomputes it).
    let put = c
        .put_object()
        .bucket("intg")
        .key("keep")
        .presigned(presign_cfg())
        .await
        .unwrap();
    let path = path_of(&srv, put.uri());
    let host = srv.addr.clone();
    let r = srv.raw(&srv.signed_raw(
        "PUT",
        "/intg/keep",
        &[("x-amz-checksum-crc32", "AAAAAA==")],
        b"hello",
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.code(), "BadDigest");
    still_serves(&mut srv, "intg").await;
    // A matching CRC32 is accepted and echoed.
    let r = srv.raw(&srv.signed_raw(
        "PUT",
        "/intg/keep",
        &[("x-amz-checksum-crc32", "NhCmhg==")],
        b"hello",
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-checksum-crc32"), Some("NhCmhg=="));
    // Put the kept object back for the final check.
    c.put_object()
        .bucket("intg")
        .key("keep")
        .body(ByteStream::from(data(100_000, 1)))
        .send()
        .await
        .unwrap();

    // A body shorter than its Content-Length, then the client leaves.
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    s.write_all(
        format!("PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n\r\n").as_bytes(),
    )
    .unwrap();
    s.write_all(&[7u8; 5000]).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    drop(s);
    still_serves(&mut srv, "intg").await;
    let e = c
        .head_object()
        .bucket("intg")
        .key("never")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_on_parts_and_sizes() {
    let mut srv = Server::start(4);
    setup(&srv, "lim").await;
    let c = srv.client();
    let id = c
        .create_multipart_upload()
        .bucket("lim")
        .key("k")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    for n in [0, 10_001] {
        let e = c
            .upload_part()
            .bucket("lim")
            .key("k")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), "InvalidArgument", "part {n}");
    }
    // An announced size over 5 TiB is refused before any byte is read.
    let put = c
        .put_object()
        .bucket("lim")
        .key("huge")
        .presigned(presign_cfg())
        .await
        .unwrap();
    let path = path_of(&srv, put.uri());
    let host = srv.addr.clone();
    let r = srv.raw(
        format!(
            "PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 6000000000000\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "EntityTooLarge");
    // A PUT without Content-Length in HTTP/1.1 chunked transfer is read
    // to its end, as MinIO accepts it (AWS answers 411).
    let r = srv.raw(
        format!(
            "PUT {path} HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let got = c
        .get_object()
        .bucket("lim")
        .key("huge")
        .send()
        .await
        .unwrap();
    assert_eq!(
        &got.body.collect().await.unwrap().into_bytes()[..],
        b"hello"
    );
    // Neither a length nor chunking: 411, as S3 answers.
    let r = srv.raw(
        format!("PUT {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 411, "{}", r.text());
    assert_eq!(r.code(), "MissingContentLength");
    // Unknown sub-resources and methods.
    let r = srv.raw(
        format!("PATCH /lim/keep HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert!(r.status == 405 || r.status == 403, "{}", r.text());
    still_serves(&mut srv, "lim").await;
}

/// A metric's value in the public Prometheus text.
fn metric(srv: &Server, name: &str) -> u64 {
    let r = srv.get("/minio/v2/metrics/cluster", &[]);
    assert_eq!(r.status, 200);
    metric_value(&r.text(), name).unwrap_or_else(|| panic!("no {name} in the metrics"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_bound_wait_then_slow_down() {
    let mut srv = Server::start_with_env(
        4,
        &[
            ("TESSERA_API_REQUESTS_MAX", "2"),
            ("TESSERA_API_REQUESTS_DEADLINE", "3s"),
            ("TESSERA_PROMETHEUS_AUTH_TYPE", "public"),
        ],
    );
    setup(&srv, "admit").await;
    assert_eq!(metric(&srv, "tessera_s3_requests_limit"), 2);

    // Two uploads whose clients send the head and a little of the body,
    // then stall: each holds a slot while the server waits for its body.
    let body = data(300_000, 7);
    let slow = |key: &str| {
        let req = srv.signed_raw("PUT", &format!("/admit/{key}"), &[], &body);
        let head_end = req.len() - body.len();
        let mut s = TcpStream::connect(&srv.addr).unwrap();
        s.write_all(&req[..head_end + 1000]).unwrap();
        (s, req[head_end + 1000..].to_vec())
    };
    let (first, _) = slow("slow-1");
    let (mut second, second_rest) = slow("slow-2");
    wait_until("two requests holding slots", || {
        metric(&srv, "tessera_s3_requests_active") == 2
    });

    // A third waits for the deadline, then gets 503 SlowDown; health and
    // metrics are still answered.
    let list = srv.signed_raw("GET", "/admit?list-type=2", &[], b"");
    let t = std::time::Instant::now();
    let r = srv.raw(&list);
    let waited = t.elapsed();
    assert_eq!(
        (r.status, r.code().as_str()),
        (503, "SlowDown"),
        "{}",
        r.text()
    );
    assert!(
        waited >= Duration::from_millis(2900),
        "refused after {waited:?}"
    );
    assert_eq!(metric(&srv, "tessera_s3_requests_refused_total"), 1);
    let live = srv.raw(b"GET /minio/health/live HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(live.status, 200);

    // A request that finds a slot within the deadline is served: the first
    // upload's client goes away, which ends that request and frees its slot.
    let addr = srv.addr.clone();
    let waiter = std::thread::spawn(move || raw(&addr, &list));
    wait_until("one request waiting", || {
        metric(&srv, "tessera_s3_requests_waiting") == 1
    });
    first.shutdown(Shutdown::Both).unwrap();
    drop(first);
    let r = waiter.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<Key>keep</Key>"), "{}", r.text());

    // The stalled upload that resumes completes, its bytes intact; the one
    // whose client left stored nothing.
    second.write_all(&second_rest).unwrap();
    let mut resp = Vec::new();
    second.read_to_end(&mut resp).unwrap();
    assert_eq!(parse_response(&resp).status, 200);
    let c = srv.client();
    let got = c
        .get_object()
        .bucket("admit")
        .key("slow-2")
        .send()
        .await
        .unwrap();
    assert_eq!(
        &got.body.collect().await.unwrap().into_bytes()[..],
        &body[..]
    );
    let e = c
        .head_object()
        .bucket("admit")
        .key("slow-1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404);
    assert_eq!(metric(&srv, "tessera_s3_requests_waiting"), 0);
    still_serves(&mut srv, "admit").await;
    // Every slot comes back once the responses are sent.
    wait_until("no slot held", || {
        metric(&srv, "tessera_s3_requests_active") == 0
    });
}
