//! Single-part encrypted objects: SSE-S3 and SSE-KMS round trips and
//! ranges, reads through the read cache, SSE-C keys (right, wrong,
//! missing), ETags, and copies between modes.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use md5::Digest as _;
use object::layer::LayerOptions;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_s3_and_kms_round_trips_and_ranges() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("enc").send().await.unwrap();
    let p = 1 << 16;
    for len in [0usize, 1, 100, p - 1, p, p + 1, 3 * p + 17, (1 << 20) + 5] {
        let d = data(len, len as u64);
        let key = format!("s3-{len}");
        let put = c
            .put_object()
            .bucket("enc")
            .key(&key)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .unwrap();
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert_eq!(
            put.e_tag().unwrap(),
            format!("\"{}\"", md5_hex(&d)),
            "{len}"
        );
        let head = c
            .head_object()
            .bucket("enc")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(len as i64));
        assert_eq!(head.e_tag().unwrap(), format!("\"{}\"", md5_hex(&d)));
        assert_eq!(
            head.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        assert!(get(&c, "enc", &key).await == d, "{len}");
    }
    // Ranges across package boundaries.
    let d = data(3 * p + 17, (3 * p + 17) as u64);
    for (lo, hi) in [
        (0, 0),
        (p - 1, p),
        (p - 5, 2 * p + 5),
        (2 * p, 3 * p - 1),
        (3 * p, 3 * p + 16),
        (5, 3 * p + 16),
    ] {
        let got = c
            .get_object()
            .bucket("enc")
            .key(format!("s3-{}", d.len()))
            .range(format!("bytes={lo}-{hi}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.content_range(),
            Some(format!("bytes {lo}-{hi}/{}", d.len()).as_str())
        );
        let b = got.body.collect().await.unwrap().into_bytes();
        assert!(b[..] == d[lo..=hi], "range {lo}-{hi}");
    }
    // SSE-KMS with a key id and a context.
    let d = data(200_000, 77);
    let ctx = b64(br#"{"project":"tessera"}"#);
    let put = c
        .put_object()
        .bucket("enc")
        .key("kms")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("tessera-kms")
        .ssekms_encryption_context(&ctx)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        put.server_side_encryption(),
        Some(&ServerSideEncryption::AwsKms)
    );
    assert!(get(&c, "enc", "kms").await == d);
    let e = c
        .put_object()
        .bucket("enc")
        .key("kms2")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .ssekms_key_id("no-such-key")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert!(!code(&e).is_empty());
    // The plaintext is nowhere on the drives.
    let disk = disk_bytes(&srv.dirs);
    assert!(
        !contains(&disk, &d[1000..1064]),
        "SSE-KMS plaintext on disk"
    );
    let big = data((1 << 20) + 5, (1 << 20) + 5);
    assert!(
        !contains(&disk, &big[5000..5064]),
        "SSE-S3 plaintext on disk"
    );
}

/// Encrypted objects read through the read cache: it holds what the
/// drives hold (ciphertext), and decrypting a GET's bytes in place must
/// not change the cached copy the next GET gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_objects_through_the_read_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = (0..4).map(|i| tmp.path().join(format!("d{i}"))).collect();
    let opts = LayerOptions {
        read_cache_bytes: Some(64 << 20),
        ..LayerOptions::default()
    };
    let srv = serve_with(dirs, tmp, true, opts).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("encc").send().await.unwrap();
    let d = data((3 << 20) + 17, 41);
    c.put_object()
        .bucket("encc")
        .key("s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let key = [9u8; 32];
    let (key_b64, key_md5) = (b64(&key), b64(&md5::Md5::digest(key)));
    c.put_object()
        .bucket("encc")
        .key("c")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let ranges = [
        (0, d.len() - 1),
        (65_530, 131_080),
        ((1 << 20) - 3, (2 << 20) + 3),
    ];
    for round in 0..4 {
        assert!(get(&c, "encc", "s3").await == d, "SSE-S3, round {round}");
        for (lo, hi) in ranges {
            let got = c
                .get_object()
                .bucket("encc")
                .key("c")
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&key_b64)
                .sse_customer_key_md5(&key_md5)
                .range(format!("bytes={lo}-{hi}"))
                .send()
                .await
                .unwrap();
            let b = got.body.collect().await.unwrap().into_bytes();
            assert!(b[..] == d[lo..=hi], "SSE-C {lo}-{hi}, round {round}");
        }
    }
    let s = srv.layer.read_cache_stats().expect("a cache");
    assert!(s.hits >= 8, "{s:?}");
    // Ciphertext: a little more than the plaintext, for both objects.
    assert!(s.bytes > 2 * d.len() as u64, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_c_keys() {
    let srv = start(false).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("ssec").send().await.unwrap();
    let key = [7u8; 32];
    let key_b64 = b64(&key);
    let key_md5 = b64(&md5::Md5::digest(key));
    let d = data(300_000, 9);
    c.put_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .range("bytes=65530-131080")
        .send()
        .await
        .unwrap();
    assert_eq!(got.sse_customer_algorithm(), Some("AES256"));
    let b = got.body.collect().await.unwrap().into_bytes();
    assert!(b[..] == d[65530..=131_080]);
    // Missing key, wrong key, key given for an unencrypted object.
    let e = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    let wrong = [8u8; 32];
    let e = c
        .head_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(b64(&wrong))
        .sse_customer_key_md5(b64(&md5::Md5::digest(wrong)))
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(e, aws_sdk_s3::error::SdkError::ServiceError(_)),
        "{e:?}"
    );
    let e = c
        .get_object()
        .bucket("ssec")
        .key("obj")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(b64(&wrong))
        .sse_customer_key_md5(b64(&md5::Md5::digest(wrong)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // A key MD5 that does not match the key.
    let e = c
        .put_object()
        .bucket("ssec")
        .key("bad")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(b64(&[0u8; 16]))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // SSE-S3 without a KMS is refused.
    let e = c
        .put_object()
        .bucket("ssec")
        .key("nokms")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NotImplemented");
    assert!(!contains(&disk_bytes(&srv.dirs), &d[100..164]));
}

/// ETags of encrypted objects through aws-sdk-s3: SSE-S3 gives the MD5 of
/// the plaintext, SSE-KMS and SSE-C an opaque 32-digit value, the same from
/// PUT, HEAD and ListObjectsV2, and the listing gives the plaintext size;
/// an SSE-S3 part's ETag is the MD5 of its plaintext.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etags_of_encrypted_objects() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("etag").send().await.unwrap();
    let d = data(200_003, 31);
    let (kb, km) = (b64(&[3u8; 32]), b64(&md5::Md5::digest([3u8; 32])));
    let mut put_etags = std::collections::BTreeMap::new();
    for mode in ["s3", "kms", "c"] {
        let mut put = c
            .put_object()
            .bucket("etag")
            .key(mode)
            .body(ByteStream::from(d.clone()));
        put = match mode {
            "s3" => put.server_side_encryption(ServerSideEncryption::Aes256),
            "kms" => put.server_side_encryption(ServerSideEncryption::AwsKms),
            _ => put
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km),
        };
        let etag = put.send().await.unwrap().e_tag().unwrap().to_owned();
        let mut head = c.head_object().bucket("etag").key(mode);
        if mode == "c" {
            head = head
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&kb)
                .sse_customer_key_md5(&km);
        }
        assert_eq!(
            head.send().await.unwrap().e_tag(),
            Some(etag.as_str()),
            "{mode}"
        );
        assert_eq!(etag.len(), 34, "{mode}: {etag}");
        assert_eq!(
            etag == format!("\"{}\"", md5_hex(&d)),
            mode == "s3",
            "{mode}: {etag}"
        );
        put_etags.insert(mode.to_owned(), etag);
    }
    let listed: std::collections::BTreeMap<String, (String, i64)> = listing_of(&c, "etag")
        .await
        .into_iter()
        .map(|(k, e, s)| (k, (e, s)))
        .collect();
    for (mode, etag) in &put_etags {
        assert_eq!(listed[mode], (etag.clone(), d.len() as i64), "{mode}");
    }
    // A multipart SSE-S3 upload: part ETags are the parts' MD5s, the
    // object's is the MD5 of theirs.
    let body = data((5 << 20) + 999, 32);
    let (parts, done) = multipart_put(&c, "etag", "mp", &body, 5 << 20, None, true).await;
    let want: Vec<String> = body
        .chunks(5 << 20)
        .map(|p| format!("\"{}\"", md5_hex(p)))
        .collect();
    assert_eq!(parts, want);
    let mut md5 = md5::Md5::new();
    for p in body.chunks(5 << 20) {
        md5.update(md5::Md5::digest(p));
    }
    assert_eq!(done, format!("\"{}-2\"", hex::encode(md5.finalize())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_between_modes() {
    let srv = start(true).await;
    let c = client(&srv.endpoint, AK, SK);
    c.create_bucket().bucket("cpy").send().await.unwrap();
    let d = data(500_000, 3);
    let key = [1u8; 32];
    let (kb, km) = (b64(&key), b64(&md5::Md5::digest(key)));
    c.put_object()
        .bucket("cpy")
        .key("plain")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    // plain -> SSE-S3
    c.copy_object()
        .bucket("cpy")
        .key("s3")
        .copy_source("cpy/plain")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert!(get(&c, "cpy", "s3").await == d);
    // SSE-S3 -> SSE-C
    c.copy_object()
        .bucket("cpy")
        .key("c")
        .copy_source("cpy/s3")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&kb)
        .sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    // SSE-C -> plain needs the source key.
    let e = c
        .copy_object()
        .bucket("cpy")
        .key("back")
        .copy_source("cpy/c")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.copy_object()
        .bucket("cpy")
        .key("back")
        .copy_source("cpy/c")
        .copy_source_sse_customer_algorithm("AES256")
        .copy_source_sse_customer_key(&kb)
        .copy_source_sse_customer_key_md5(&km)
        .send()
        .await
        .unwrap();
    let head = c
        .head_object()
        .bucket("cpy")
        .key("back")
        .send()
        .await
        .unwrap();
    assert!(head.server_side_encryption().is_none());
    assert!(get(&c, "cpy", "back").await == d);
    // Key rotation in place: SSE-S3 onto itself.
    c.copy_object()
        .bucket("cpy")
        .key("s3")
        .copy_source("cpy/s3")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert!(get(&c, "cpy", "s3").await == d);
}
