//! Encrypted multipart uploads: parts under their part keys, the bucket's
//! default encryption, and UploadPartCopy from and into encrypted objects.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use md5::Digest as _;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_multipart_and_bucket_default() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("mpenc").send().await.unwrap();
    let part = 5 << 20;
    let d = data(2 * part + 300_000, 88);
    multipart_put(&c, "mpenc", "s3", &d, part, None, true).await;
    let head = c
        .head_object()
        .bucket("mpenc")
        .key("s3")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length(), Some(d.len() as i64));
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(get(&c, "mpenc", "s3").await == d);
    // Ranges inside a part and across part boundaries.
    for (lo, hi) in [
        (0usize, 10usize),
        (part - 3, part + 3),
        (part - 70_000, 2 * part + 70_000),
        (d.len() - 1, d.len() - 1),
    ] {
        let got = c
            .get_object()
            .bucket("mpenc")
            .key("s3")
            .range(format!("bytes={lo}-{hi}"))
            .send()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        assert!(got[..] == d[lo..=hi], "range {lo}-{hi}");
    }
    // SSE-C multipart: every part carries the key.
    let key = [5u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    multipart_put(&c, "mpenc", "c", &d, part, Some((&kb, &km)), false).await;
    let got = c
        .get_object()
        .bucket("mpenc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .range(format!("bytes={}-{}", part - 10, part + 10))
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert!(got[..] == d[part - 10..=part + 10]);
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[part + 1000..part + 1064]),
        "multipart plaintext on disk"
    );

    // Bucket default encryption: objects PUT without headers are SSE-S3.
    let e = c
        .get_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "ServerSideEncryptionConfigurationNotFoundError");
    use aws_sdk_s3::types::{
        ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    };
    c.put_bucket_encryption()
        .bucket("mpenc")
        .server_side_encryption_configuration(
            ServerSideEncryptionConfiguration::builder()
                .rules(
                    ServerSideEncryptionRule::builder()
                        .apply_server_side_encryption_by_default(
                            ServerSideEncryptionByDefault::builder()
                                .sse_algorithm(ServerSideEncryption::Aes256)
                                .build()
                                .unwrap(),
                        )
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let got = c
        .get_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap();
    let rule = &got.server_side_encryption_configuration().unwrap().rules()[0];
    assert_eq!(
        rule.apply_server_side_encryption_by_default()
            .unwrap()
            .sse_algorithm(),
        &ServerSideEncryption::Aes256
    );
    let small = data(10_000, 4);
    let put = c
        .put_object()
        .bucket("mpenc")
        .key("by-default")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    multipart_put(
        &c,
        "mpenc",
        "mp-by-default",
        &d[..part + 5],
        part,
        None,
        false,
    )
    .await;
    let head = c
        .head_object()
        .bucket("mpenc")
        .key("mp-by-default")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.server_side_encryption(),
        Some(&ServerSideEncryption::Aes256)
    );
    assert!(get(&c, "mpenc", "mp-by-default").await == d[..part + 5]);
    c.delete_bucket_encryption()
        .bucket("mpenc")
        .send()
        .await
        .unwrap();
    let put = c
        .put_object()
        .bucket("mpenc")
        .key("after")
        .body(ByteStream::from(small.clone()))
        .send()
        .await
        .unwrap();
    assert!(put.server_side_encryption().is_none());
}

/// UploadPartCopy from and into encrypted objects: the source is decrypted
/// with its key (an SSE-C source's key in the copy-source headers), the
/// part is encrypted as the upload says (an SSE-C upload's key with the
/// request), ranges are of the plaintext.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_part_copy_from_and_into_encrypted_objects() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("upc").send().await.unwrap();
    let (part, p) = (5usize << 20, 1usize << 16);
    let d = data(part + 2 * p + 77, 41);
    let src_key = [3u8; 32];
    let (sk, sm) = (b64(&src_key), b64(&md5::Md5::digest(src_key)));
    c.put_object()
        .bucket("upc")
        .key("src-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&sk)
        .sse_customer_key_md5(&sm)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();

    // SSE-C source -> SSE-S3 upload, in two ranges cut at a package boundary.
    let id = c
        .create_multipart_upload()
        .bucket("upc")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let cut = part + p;
    let mut parts = Vec::new();
    for (n, (lo, hi)) in [(0, cut - 1), (cut, d.len() - 1)].into_iter().enumerate() {
        let out = c
            .upload_part_copy()
            .bucket("upc")
            .key("s3")
            .upload_id(&id)
            .part_number(n as i32 + 1)
            .copy_source("upc/src-c")
            .copy_source_range(format!("bytes={lo}-{hi}"))
            .copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(&sk)
            .copy_source_sse_customer_key_md5(&sm)
            .send()
            .await
            .unwrap();
        assert_eq!(
            out.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        parts.push(
            CompletedPart::builder()
                .part_number(n as i32 + 1)
                .e_tag(out.copy_part_result().unwrap().e_tag().unwrap())
                .build(),
        );
    }
    let listed = c
        .list_parts()
        .bucket("upc")
        .key("s3")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    let sizes: Vec<i64> = listed.parts().iter().map(|p| p.size().unwrap()).collect();
    assert_eq!(sizes, [cut as i64, (d.len() - cut) as i64]);
    c.complete_multipart_upload()
        .bucket("upc")
        .key("s3")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(get(&c, "upc", "s3").await == d);

    // The SSE-S3 multipart object -> SSE-C upload with another key: a range
    // across the source's part boundary, then an uploaded part.
    let key = [4u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    let id = c
        .create_multipart_upload()
        .bucket("upc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let (lo, hi) = (p + 3, cut + 10);
    let copied = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(1)
        .copy_source("upc/s3")
        .copy_source_range(format!("bytes={lo}-{hi}"))
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    assert_eq!(copied.sse_customer_algorithm(), Some("AES256"));
    assert_eq!(copied.sse_customer_key_md5(), Some(km.as_str()));
    let tail = b"the tail".to_vec();
    let uploaded = c
        .upload_part()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(2)
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .body(ByteStream::from(tail.clone()))
        .send()
        .await
        .unwrap();
    // Without the upload's key, or without the source's, nothing is copied.
    let e = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(3)
        .copy_source("upc/s3")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let e = c
        .upload_part_copy()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .part_number(3)
        .copy_source("upc/src-c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .copy_source_sse_customer_algorithm("AES256")
        .copy_source_sse_customer_key(&kb)
        .copy_source_sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.complete_multipart_upload()
        .bucket("upc")
        .key("c")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(copied.copy_part_result().unwrap().e_tag().unwrap())
                        .build(),
                )
                .parts(
                    CompletedPart::builder()
                        .part_number(2)
                        .e_tag(uploaded.e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("upc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    let mut want = d[lo..=hi].to_vec();
    want.extend_from_slice(&tail);
    assert!(got[..] == want[..]);
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[part + 500..part + 564]),
        "plaintext on disk"
    );
}
