//! Server-side encryption configured as MinIO is (a static KMS key,
//! auto-encryption) and SSE-C.

use aws_sdk_s3::primitives::ByteStream;

use super::body;
use crate::support::{self, Server, code, data};

/// Server-side encryption through the binary, configured as MinIO is
/// (a static KMS key, auto-encryption), and SSE-C with the insecure
/// switch (these tests speak plain HTTP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_encryption_configured_by_environment() {
    use aws_sdk_s3::types::ServerSideEncryption;
    const KMS: &str = "tessera-kms:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
    let srv = Server::start_with_env(
        4,
        &[
            ("MINIO_KMS_SECRET_KEY", KMS),
            ("TESSERA_INSECURE_SSE_C", "on"),
        ],
    );
    let c = srv.client();
    c.create_bucket().bucket("sse").send().await.unwrap();
    let d = data(300_000, 31);
    let put = c
        .put_object()
        .bucket("sse")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    let got = c.get_object().bucket("sse").key("s3").send().await.unwrap();
    assert_eq!(
        got.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(body(got).await == d);
    let key = support::base64(&[3u8; 32]);
    let key_md5 = {
        use md5::Digest as _;
        support::base64(&md5::Md5::digest([3u8; 32]))
    };
    c.put_object()
        .bucket("sse")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("sse")
        .key("c")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    drop(srv);

    // Without the insecure switch, SSE-C over HTTP is refused; with
    // auto-encryption, plain PUTs are encrypted.
    let srv = Server::start_with_env(
        4,
        &[
            ("TESSERA_KMS_SECRET_KEY", KMS),
            ("TESSERA_KMS_AUTO_ENCRYPTION", "on"),
        ],
    );
    let c = srv.client();
    c.create_bucket().bucket("auto").send().await.unwrap();
    let put = c
        .put_object()
        .bucket("auto")
        .key("k")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(body(c.get_object().bucket("auto").key("k").send().await.unwrap()).await == d);
    let e = c
        .put_object()
        .bucket("auto")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
}
