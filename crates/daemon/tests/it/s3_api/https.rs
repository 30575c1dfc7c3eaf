//! The S3 API over HTTPS.

use aws_sdk_s3::primitives::ByteStream;

use super::{body, upload_in_parts};
use crate::support::{self, Server, data};

/// The same client over HTTPS (a generated certificate in a MinIO-style
/// certs directory): buckets, a multipart upload, ranges, listing, and
/// SSE-C, which needs TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https() {
    let (srv, ca) = Server::start_tls(4);
    assert!(srv.endpoint.starts_with("https://"), "{}", srv.endpoint);
    let c = srv.client_tls(&ca);
    c.create_bucket().bucket("tls").send().await.unwrap();
    let d = data(6 << 20, 77);
    upload_in_parts(&c, "tls", "big", &d, 5 << 20).await;
    assert!(
        body(
            c.get_object()
                .bucket("tls")
                .key("big")
                .send()
                .await
                .unwrap()
        )
        .await
            == d
    );
    let r = c
        .get_object()
        .bucket("tls")
        .key("big")
        .range("bytes=5242870-5242889")
        .send()
        .await
        .unwrap();
    assert!(body(r).await == d[5_242_870..5_242_890]);
    let listed = c.list_objects_v2().bucket("tls").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(1));
    // SSE-C is accepted over TLS without any switch.
    let key = support::base64(&[4u8; 32]);
    let key_md5 = {
        use md5::Digest as _;
        support::base64(&md5::Md5::digest([4u8; 32]))
    };
    c.put_object()
        .bucket("tls")
        .key("ssec")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from_static(b"over tls"))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("tls")
        .key("ssec")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .send()
        .await
        .unwrap();
    assert_eq!(body(got).await, b"over tls");
    // A client that does not trust the certificate is refused by TLS.
    let untrusting = srv.client();
    assert!(untrusting.list_buckets().send().await.is_err());
}
