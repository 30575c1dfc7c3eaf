//! Buckets and objects: create, list and delete buckets; PUT, GET and
//! HEAD with metadata; ranges and conditional requests; deleting objects,
//! and the space of replaced and deleted data coming back.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use super::body;
use crate::support::{Server, code, data, md5_hex, status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("alpha").send().await.unwrap();
    c.create_bucket().bucket("beta-2").send().await.unwrap();
    let e = c.create_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketAlreadyOwnedByYou");
    assert_eq!(status(&e), 409);
    let e = c
        .create_bucket()
        .bucket("No_Such")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidBucketName");

    let names: Vec<String> = c
        .list_buckets()
        .send()
        .await
        .unwrap()
        .buckets()
        .iter()
        .map(|b| b.name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["alpha", "beta-2"]);
    c.head_bucket().bucket("alpha").send().await.unwrap();
    let e = c.head_bucket().bucket("gamma").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let loc = c
        .get_bucket_location()
        .bucket("alpha")
        .send()
        .await
        .unwrap();
    assert!(
        loc.location_constraint()
            .is_none_or(|l| l.as_str().is_empty())
    );

    c.put_object()
        .bucket("alpha")
        .key("k")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
    let e = c.delete_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketNotEmpty");
    assert_eq!(status(&e), 409);
    c.delete_object()
        .bucket("alpha")
        .key("k")
        .send()
        .await
        .unwrap();
    c.delete_bucket().bucket("alpha").send().await.unwrap();
    let e = c.delete_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    let e = c
        .put_object()
        .bucket("alpha")
        .key("k")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_round_trip_with_metadata() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("objs").send().await.unwrap();
    // Sizes around the inline limit, the 1 MiB block and several blocks.
    for (i, len) in [
        0usize,
        1,
        1000,
        128 * 1024 + 1,
        (1 << 20) + 7,
        3 * (1 << 20) + 5,
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("dir/obj-{len}");
        let d = data(len, i as u64);
        let put = c
            .put_object()
            .bucket("objs")
            .key(&key)
            .content_type("text/x-test")
            .cache_control("no-cache")
            .content_disposition("attachment")
            .metadata("color", "blue")
            .metadata("Mixed-Case", "Value 1")
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .unwrap();
        assert_eq!(
            put.e_tag().unwrap(),
            format!("\"{}\"", md5_hex(&d)),
            "{len}"
        );
        let got = c
            .get_object()
            .bucket("objs")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(got.content_length(), Some(len as i64));
        assert_eq!(got.content_type(), Some("text/x-test"));
        assert_eq!(got.cache_control(), Some("no-cache"));
        assert_eq!(got.content_disposition(), Some("attachment"));
        assert_eq!(got.e_tag().unwrap(), format!("\"{}\"", md5_hex(&d)));
        let meta = got.metadata().unwrap();
        assert_eq!(meta.get("color").map(String::as_str), Some("blue"));
        assert_eq!(meta.get("mixed-case").map(String::as_str), Some("Value 1"));
        assert!(body(got).await == d, "content of {len} bytes");
        let head = c
            .head_object()
            .bucket("objs")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(len as i64));
        assert_eq!(head.metadata().unwrap().get("color").unwrap(), "blue");
    }
    // Overwrite, then delete; deleting a missing key succeeds.
    c.put_object()
        .bucket("objs")
        .key("dir/obj-1")
        .body(ByteStream::from_static(b"new"))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object()
        .bucket("objs")
        .key("dir/obj-1")
        .send()
        .await
        .unwrap();
    assert_eq!(body(got).await, b"new");
    c.delete_object()
        .bucket("objs")
        .key("dir/obj-1")
        .send()
        .await
        .unwrap();
    c.delete_object()
        .bucket("objs")
        .key("dir/obj-1")
        .send()
        .await
        .unwrap();
    let e = c
        .get_object()
        .bucket("objs")
        .key("dir/obj-1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    assert_eq!(status(&e), 404);
    let e = c
        .head_object()
        .bucket("objs")
        .key("dir/obj-1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 404);
    // Keys with characters that need encoding.
    for key in ["a b/c+d", "ünï/cødé", "x%y?z=1&w", "trailing/", "k\u{7f}ey"] {
        c.put_object()
            .bucket("objs")
            .key(key)
            .body(ByteStream::from(key.as_bytes().to_vec()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{key}: {e:?}"));
        let got = c.get_object().bucket("objs").key(key).send().await.unwrap();
        assert_eq!(body(got).await, key.as_bytes(), "{key}");
    }
    // Names MinIO's on-disk layout cannot hold are refused, as MinIO
    // refuses them, and nothing is stored.
    for key in ["a//b", "a/../b", "./x", "a/./b"] {
        let e = c
            .put_object()
            .bucket("objs")
            .key(key)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), "InvalidArgument", "{key}");
        assert_eq!(status(&e), 400, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_and_conditionals() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("rng").send().await.unwrap();
    let d = data(3 * (1 << 20) + 11, 7);
    let put = c
        .put_object()
        .bucket("rng")
        .key("o")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let etag = put.e_tag().unwrap().to_owned();
    let n = d.len();
    for (range, lo, hi) in [
        ("bytes=0-9", 0, 9),
        ("bytes=1048570-1048590", 1_048_570, 1_048_590),
        ("bytes=-5", n - 5, n - 1),
        ("bytes=3000000-", 3_000_000, n - 1),
        ("bytes=10-99999999", 10, n - 1),
    ] {
        let got = c
            .get_object()
            .bucket("rng")
            .key("o")
            .range(range)
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.content_range(),
            Some(format!("bytes {lo}-{hi}/{n}").as_str()),
            "{range}"
        );
        assert_eq!(body(got).await, &d[lo..=hi], "{range}");
    }
    let e = c
        .get_object()
        .bucket("rng")
        .key("o")
        .range(format!("bytes={n}-"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRange");
    assert_eq!(status(&e), 416);

    // Conditionals.
    let ok = c
        .get_object()
        .bucket("rng")
        .key("o")
        .if_match(&etag)
        .range("bytes=0-0")
        .send()
        .await
        .unwrap();
    assert_eq!(body(ok).await, &d[..1]);
    let e = c
        .get_object()
        .bucket("rng")
        .key("o")
        .if_match("\"0000\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    assert_eq!(code(&e), "PreconditionFailed");
    let e = c
        .get_object()
        .bucket("rng")
        .key("o")
        .if_none_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 304);
    let future = aws_sdk_s3::primitives::DateTime::from_secs(4_000_000_000);
    let past = aws_sdk_s3::primitives::DateTime::from_secs(1_000_000_000);
    let e = c
        .get_object()
        .bucket("rng")
        .key("o")
        .if_modified_since(future)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 304);
    let e = c
        .get_object()
        .bucket("rng")
        .key("o")
        .if_unmodified_since(past)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    // If-Match that holds wins over a failing If-Unmodified-Since.
    c.head_object()
        .bucket("rng")
        .key("o")
        .if_match(&etag)
        .if_unmodified_since(past)
        .send()
        .await
        .unwrap();
    // response-* overrides.
    let got = c
        .get_object()
        .bucket("rng")
        .key("o")
        .response_content_type("application/x-override")
        .response_content_disposition("inline; filename=\"x\"")
        .range("bytes=0-0")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("application/x-override"));
    assert_eq!(got.content_disposition(), Some("inline; filename=\"x\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_objects_quiet_and_verbose() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("del").send().await.unwrap();
    for i in 0..30 {
        c.put_object()
            .bucket("del")
            .key(format!("k{i}"))
            .body(ByteStream::from_static(b"z"))
            .send()
            .await
            .unwrap();
    }
    let ids = |r: std::ops::Range<i32>| {
        Delete::builder().set_objects(Some(
            r.map(|i| {
                ObjectIdentifier::builder()
                    .key(format!("k{i}"))
                    .build()
                    .unwrap()
            })
            .collect(),
        ))
    };
    let out = c
        .delete_objects()
        .bucket("del")
        .delete(ids(0..10).build().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(out.deleted().len(), 10);
    assert!(out.errors().is_empty());
    let out = c
        .delete_objects()
        .bucket("del")
        .delete(ids(10..40).quiet(true).build().unwrap())
        .send()
        .await
        .unwrap();
    assert!(out.deleted().is_empty(), "quiet mode lists no successes");
    assert!(out.errors().is_empty());
    let left = c.list_objects_v2().bucket("del").send().await.unwrap();
    assert_eq!(left.key_count(), Some(0));
}

/// Bytes of the regular files under `dir`.
fn disk_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            disk_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// The space of replaced and deleted objects comes back while the server
/// runs: their data goes to each drive's trash, which the drive empties
/// soon after by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_and_deleted_data_leaves_the_drives() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("space").send().await.unwrap();
    for seed in 0..3 {
        c.put_object()
            .bucket("space")
            .key("big")
            .body(ByteStream::from(data(6 << 20, seed)))
            .send()
            .await
            .unwrap();
    }
    let stored: u64 = srv.dirs.iter().map(|d| disk_bytes(d)).sum();
    assert!(stored > 3 << 20, "{stored} bytes: where did the object go?");
    c.delete_object()
        .bucket("space")
        .key("big")
        .send()
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left: u64 = srv.dirs.iter().map(|d| disk_bytes(d)).sum();
        let trash: usize = srv
            .dirs
            .iter()
            .map(|d| std::fs::read_dir(d.join(".minio.sys/tmp/.trash")).map_or(0, |r| r.count()))
            .sum();
        // What stays: format.json, the bucket's metadata.
        if trash == 0 && left < 256 << 10 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} bytes and {trash} trash entries left on the drives after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
