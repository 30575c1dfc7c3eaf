//! Authentication: wrong keys and signatures, presigned URLs, and browser
//! POST uploads with signed policies.

use aws_sdk_s3::primitives::ByteStream;

use crate::support::{self, Server, code, data, status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_errors() {
    let mut srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("auth").send().await.unwrap();
    let bad = srv.client_with(support::ACCESS_KEY, "wrong-secret-key");
    let e = bad.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    assert_eq!(status(&e), 403);
    let unknown = srv.client_with("nobody-here", "whatever-secret");
    let e = unknown.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidAccessKeyId");
    let e = bad
        .put_object()
        .bucket("auth")
        .key("k")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    let e = c
        .head_object()
        .bucket("auth")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "the refused PUT stored nothing");
    // Anonymous requests are refused (no bucket policies yet).
    let r = srv.raw(b"GET /auth/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "AccessDenied");
    assert!(r.header("x-amz-request-id").is_some_and(|v| !v.is_empty()));
    assert!(r.text().contains("<RequestId>"));
    assert!(srv.alive());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presigned_urls() {
    use aws_sdk_s3::presigning::PresigningConfig;
    use std::time::Duration;
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("pre").send().await.unwrap();
    // Presigned PUT, body sent by a plain HTTP client.
    let put = c
        .put_object()
        .bucket("pre")
        .key("p k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .unwrap();
    let url = put.uri().trim_start_matches(&srv.endpoint).to_owned();
    let mut req = format!(
        "PUT {url} HTTP/1.1\r\nHost: {}\r\nContent-Length: 5\r\nConnection: close\r\n",
        srv.addr
    );
    for (n, v) in put.headers() {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\nhello");
    let r = srv.raw(req.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    // Presigned GET.
    let get = c
        .get_object()
        .bucket("pre")
        .key("p k")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(600)).unwrap())
        .await
        .unwrap();
    let url = get.uri().trim_start_matches(&srv.endpoint).to_owned();
    let r = srv.raw(
        format!(
            "GET {url} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            srv.addr
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, b"hello");
    // A tampered signature and an expired URL.
    let sig_at = url.find("X-Amz-Signature=").unwrap() + "X-Amz-Signature=".len();
    let mut tampered = url.clone();
    let flipped = if &url[sig_at..sig_at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    tampered.replace_range(sig_at..sig_at + 1, flipped);
    let r = srv.raw(
        format!(
            "GET {tampered} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            srv.addr
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "SignatureDoesNotMatch");
    let expired = c
        .get_object()
        .bucket("pre")
        .key("p k")
        .presigned(
            PresigningConfig::builder()
                .start_time(std::time::SystemTime::now() - Duration::from_secs(3600))
                .expires_in(Duration::from_secs(60))
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    let url = expired.uri().trim_start_matches(&srv.endpoint).to_owned();
    let r = srv.raw(
        format!(
            "GET {url} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            srv.addr
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "AccessDenied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_post_upload() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("forms").send().await.unwrap();
    // S3 refuses a field that no condition covers, the signing fields
    // included.
    let policy = r#"{"expiration":"2099-12-31T00:00:00.000Z","conditions":[{"bucket":"forms"},["starts-with","$key","uploads/"],["content-length-range",1,2000000],{"success_action_status":"201"},["starts-with","$Content-Type",""],["starts-with","$x-amz-meta-origin",""],{"x-amz-algorithm":"AWS4-HMAC-SHA256"},["starts-with","$x-amz-credential",""],["starts-with","$x-amz-date",""]]}"#;
    let post = |form: (String, Vec<u8>)| {
        let mut req = format!(
            "POST /forms HTTP/1.1\r\nHost: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            srv.addr,
            form.0,
            form.1.len()
        )
        .into_bytes();
        req.extend_from_slice(&form.1);
        srv.raw(&req)
    };
    // The file contains the boundary's prefix and CRLFs, and spans frames.
    let mut file = data(1_000_000, 4);
    file.extend_from_slice(b"\r\n--Tessera\r\n--");
    let form = srv.post_form(
        "forms",
        policy,
        support::SECRET_KEY,
        &[
            ("key", "uploads/${filename}"),
            ("success_action_status", "201"),
            ("Content-Type", "image/x-test"),
            ("x-amz-meta-origin", "browser"),
        ],
        &file,
    );
    let r = post(form);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        r.text().contains("<Key>uploads/up.bin</Key>"),
        "{}",
        r.text()
    );
    let got = c
        .get_object()
        .bucket("forms")
        .key("uploads/up.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("image/x-test"));
    assert_eq!(got.metadata().unwrap().get("origin").unwrap(), "browser");
    assert!(got.body.collect().await.unwrap().into_bytes() == file);

    // A key outside the policy, a wrong signature, a file over the range.
    let r = post(srv.post_form(
        "forms",
        policy,
        support::SECRET_KEY,
        &[("key", "elsewhere/x"), ("success_action_status", "201")],
        b"x",
    ));
    assert_eq!((r.status, r.code().as_str()), (403, "AccessDenied"));
    let r = post(srv.post_form(
        "forms",
        policy,
        "not-the-secret",
        &[("key", "uploads/x"), ("success_action_status", "201")],
        b"x",
    ));
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    let r = post(srv.post_form(
        "forms",
        policy,
        support::SECRET_KEY,
        &[("key", "uploads/big"), ("success_action_status", "201")],
        &data(2_000_001, 5),
    ));
    assert_eq!((r.status, r.code().as_str()), (400, "EntityTooLarge"));
    let e = c
        .head_object()
        .bucket("forms")
        .key("uploads/big")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404, "nothing stored for a refused upload");
}
