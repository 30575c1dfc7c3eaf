//! Server-side copies: CopyObject (metadata copied or replaced) and
//! UploadPartCopy with source ranges.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, MetadataDirective};

use super::body;
use crate::support::{Server, code, data, md5_hex, status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_object() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("src").send().await.unwrap();
    c.create_bucket().bucket("dst").send().await.unwrap();
    let d = data((1 << 20) + 3, 9);
    c.put_object()
        .bucket("src")
        .key("a b/o")
        .content_type("text/plain")
        .metadata("k", "v")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    // COPY keeps metadata.
    let out = c
        .copy_object()
        .bucket("dst")
        .key("copy")
        .copy_source("src/a%20b/o")
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.copy_object_result().unwrap().e_tag(),
        Some(format!("\"{}\"", md5_hex(&d)).as_str())
    );
    let got = c
        .get_object()
        .bucket("dst")
        .key("copy")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("text/plain"));
    assert_eq!(got.metadata().unwrap().get("k").unwrap(), "v");
    assert!(body(got).await == d);
    // REPLACE sets new metadata.
    c.copy_object()
        .bucket("dst")
        .key("replaced")
        .copy_source("src/a%20b/o")
        .metadata_directive(MetadataDirective::Replace)
        .content_type("application/x-new")
        .metadata("n", "2")
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("dst")
        .key("replaced")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("application/x-new"));
    let m = head.metadata().unwrap();
    assert_eq!(m.get("n").map(String::as_str), Some("2"));
    assert!(!m.contains_key("k"));
    // Onto itself: only with REPLACE.
    let e = c
        .copy_object()
        .bucket("src")
        .key("a b/o")
        .copy_source("src/a%20b/o")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.copy_object()
        .bucket("src")
        .key("a b/o")
        .copy_source("src/a%20b/o")
        .metadata_directive(MetadataDirective::Replace)
        .metadata("k", "w")
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("src")
        .key("a b/o")
        .send()
        .await
        .unwrap();
    assert_eq!(got.metadata().unwrap().get("k").unwrap(), "w");
    assert!(body(got).await == d);
    // Conditional copy and a missing source.
    let e = c
        .copy_object()
        .bucket("dst")
        .key("x")
        .copy_source("src/a%20b/o")
        .copy_source_if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    let e = c
        .copy_object()
        .bucket("dst")
        .key("x")
        .copy_source("src/missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_part_copy_with_ranges() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("upc").send().await.unwrap();
    let d = data(11 << 20, 5);
    c.put_object()
        .bucket("upc")
        .key("src")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let id = c
        .create_multipart_upload()
        .bucket("upc")
        .key("dst")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let cuts = [(0usize, 6 << 20), (6 << 20, d.len())];
    let mut parts = Vec::new();
    for (i, (lo, hi)) in cuts.iter().enumerate() {
        let out = c
            .upload_part_copy()
            .bucket("upc")
            .key("dst")
            .upload_id(&id)
            .part_number(i as i32 + 1)
            .copy_source("upc/src")
            .copy_source_range(format!("bytes={lo}-{}", hi - 1))
            .send()
            .await
            .unwrap();
        let etag = out.copy_part_result().unwrap().e_tag().unwrap().to_owned();
        assert_eq!(etag, format!("\"{}\"", md5_hex(&d[*lo..*hi])));
        parts.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(etag)
                .build(),
        );
    }
    let e = c
        .upload_part_copy()
        .bucket("upc")
        .key("dst")
        .upload_id(&id)
        .part_number(3)
        .copy_source("upc/src")
        .copy_source_range(format!("bytes=0-{}", d.len()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRange");
    c.complete_multipart_upload()
        .bucket("upc")
        .key("dst")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("upc")
        .key("dst")
        .send()
        .await
        .unwrap();
    assert!(body(got).await == d);
}
