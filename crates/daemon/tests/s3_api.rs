//! The S3 API through the stock Rust client: the real `tessera` binary,
//! aws-sdk-s3 with its default settings (so uploads are `aws-chunked` with
//! CRC trailers, and payloads are checksummed), every operation the
//! gateway serves, and the exact S3 errors.

mod common;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, Delete, MetadataDirective,
    ObjectIdentifier, VersioningConfiguration,
};
use common::{Server, code, data, md5_hex, status};

async fn body(out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Vec<u8> {
    out.body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec()
}

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
async fn listings() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("lst").send().await.unwrap();
    let mut keys = Vec::new();
    for d in ["a", "b", "c/d"] {
        for i in 0..7 {
            keys.push(format!("{d}/k{i:02}"));
        }
    }
    keys.push("top".into());
    keys.push("a-b".into());
    keys.sort();
    for k in &keys {
        c.put_object()
            .bucket("lst")
            .key(k)
            .body(ByteStream::from(k.as_bytes().to_vec()))
            .send()
            .await
            .unwrap();
    }
    // V2, paginated by 4.
    let mut seen = Vec::new();
    let mut token = None;
    loop {
        let page = c
            .list_objects_v2()
            .bucket("lst")
            .max_keys(4)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap();
        assert!(page.contents().len() <= 4);
        assert_eq!(page.key_count(), Some(page.contents().len() as i32));
        seen.extend(page.contents().iter().map(|o| o.key().unwrap().to_owned()));
        if page.is_truncated() != Some(true) {
            break;
        }
        token = page.next_continuation_token().map(str::to_owned);
        assert!(token.is_some());
    }
    assert_eq!(seen, keys);
    // Delimiter and prefix.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let prefixes: Vec<_> = page
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap().to_owned())
        .collect();
    assert_eq!(prefixes, ["a/", "b/", "c/"]);
    let objects: Vec<_> = page.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(objects, ["a-b", "top"]);
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .prefix("c/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert_eq!(page.common_prefixes()[0].prefix(), Some("c/d/"));
    assert!(page.contents().is_empty());
    // Start-after and fetch-owner.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .start_after("b/k05")
        .fetch_owner(true)
        .send()
        .await
        .unwrap();
    let first = &page.contents()[0];
    assert_eq!(first.key(), Some("b/k06"));
    assert!(first.owner().is_some());
    assert_eq!(first.size(), Some(5));
    // V1 with marker.
    let page = c
        .list_objects()
        .bucket("lst")
        .marker("c/d/k05")
        .send()
        .await
        .unwrap();
    let got: Vec<_> = page.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(got, ["c/d/k06", "top"]);
    // max-keys=0 and a bad continuation token.
    let page = c
        .list_objects_v2()
        .bucket("lst")
        .max_keys(0)
        .send()
        .await
        .unwrap();
    assert!(page.contents().is_empty());
    let e = c
        .list_objects_v2()
        .bucket("lst")
        .continuation_token("!!!")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    let e = c
        .list_objects_v2()
        .bucket("nope-nope")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
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
async fn multipart() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("mpu").send().await.unwrap();
    let part = 5 << 20;
    let d = data(2 * part + 12345, 3);
    let up = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("big")
        .content_type("video/x-test")
        .metadata("m", "1")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    // Part 2 first, then 1, then 3; part 1 is uploaded twice.
    let mut etags = std::collections::BTreeMap::new();
    for (n, range) in [
        (2, part..2 * part),
        (1, 0..part),
        (1, 0..part),
        (3, 2 * part..d.len()),
    ] {
        let out = c
            .upload_part()
            .bucket("mpu")
            .key("big")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(d[range.clone()].to_vec()))
            .send()
            .await
            .unwrap();
        assert_eq!(out.e_tag().unwrap(), format!("\"{}\"", md5_hex(&d[range])));
        etags.insert(n, out.e_tag().unwrap().to_owned());
    }
    let parts = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .send()
        .await
        .unwrap();
    let nums: Vec<_> = parts
        .parts()
        .iter()
        .map(|p| p.part_number().unwrap())
        .collect();
    assert_eq!(nums, [1, 2, 3]);
    let page = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .max_parts(2)
        .send()
        .await
        .unwrap();
    assert_eq!(page.parts().len(), 2);
    assert_eq!(page.is_truncated(), Some(true));
    assert_eq!(page.next_part_number_marker(), Some("2"));
    let uploads = c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap();
    assert_eq!(uploads.uploads().len(), 1);
    assert_eq!(uploads.uploads()[0].upload_id(), Some(id.as_str()));

    let completed = |list: &[(i32, &str)]| {
        CompletedMultipartUpload::builder()
            .set_parts(Some(
                list.iter()
                    .map(|(n, e)| CompletedPart::builder().part_number(*n).e_tag(*e).build())
                    .collect(),
            ))
            .build()
    };
    // Wrong ETag, wrong order.
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[(1, &etags[&1]), (2, "\"0123\"")]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPart");
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[(2, &etags[&2]), (1, &etags[&1])]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidPartOrder");
    let out = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .multipart_upload(completed(&[
            (1, &etags[&1]),
            (2, &etags[&2]),
            (3, &etags[&3]),
        ]))
        .send()
        .await
        .unwrap();
    assert!(out.e_tag().unwrap().ends_with("-3\""), "{:?}", out.e_tag());
    let got = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .send()
        .await
        .unwrap();
    assert_eq!(got.content_type(), Some("video/x-test"));
    assert_eq!(got.metadata().unwrap().get("m").unwrap(), "1");
    assert!(body(got).await == d);
    // One part by number.
    let p2 = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .part_number(2)
        .send()
        .await
        .unwrap();
    assert_eq!(p2.parts_count(), Some(3));
    assert!(body(p2).await == d[part..2 * part]);
    let e = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(&id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");

    // EntityTooSmall: a small part that is not the last.
    let id2 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("small")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut small = Vec::new();
    for n in 1..=2 {
        let out = c
            .upload_part()
            .bucket("mpu")
            .key("small")
            .upload_id(&id2)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; 1000]))
            .send()
            .await
            .unwrap();
        small.push((n, out.e_tag().unwrap().to_owned()));
    }
    let e = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .multipart_upload(completed(&[(1, &small[0].1), (2, &small[1].1)]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "EntityTooSmall");
    // Abort.
    c.abort_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap();
    let e = c
        .upload_part()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .part_number(3)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload");
    let e = c
        .upload_part()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .part_number(10001)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("ver").send().await.unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert!(st.status().is_none());
    c.put_bucket_versioning()
        .bucket("ver")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert_eq!(st.status(), Some(&BucketVersioningStatus::Enabled));
    let mut ids = Vec::new();
    for v in [&b"one"[..], b"two"] {
        let out = c
            .put_object()
            .bucket("ver")
            .key("k")
            .body(ByteStream::from(v.to_vec()))
            .send()
            .await
            .unwrap();
        ids.push(out.version_id().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1]);
    let got = c
        .get_object()
        .bucket("ver")
        .key("k")
        .version_id(&ids[0])
        .send()
        .await
        .unwrap();
    assert_eq!(got.version_id(), Some(ids[0].as_str()));
    assert_eq!(body(got).await, b"one");
    let del = c
        .delete_object()
        .bucket("ver")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(del.delete_marker(), Some(true));
    let marker = del.version_id().unwrap().to_owned();
    let e = c
        .get_object()
        .bucket("ver")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let vs = c.list_object_versions().bucket("ver").send().await.unwrap();
    let got: Vec<_> = vs
        .versions()
        .iter()
        .map(|v| v.version_id().unwrap().to_owned())
        .collect();
    assert_eq!(got, [ids[1].clone(), ids[0].clone()]);
    assert_eq!(vs.delete_markers().len(), 1);
    assert_eq!(vs.delete_markers()[0].version_id(), Some(marker.as_str()));
    assert_eq!(vs.delete_markers()[0].is_latest(), Some(true));
    // Removing the marker brings the object back.
    c.delete_object()
        .bucket("ver")
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .unwrap();
    let got = c.get_object().bucket("ver").key("k").send().await.unwrap();
    assert_eq!(body(got).await, b"two");
    c.delete_object()
        .bucket("ver")
        .key("k")
        .version_id(&ids[1])
        .send()
        .await
        .unwrap();
    let got = c.get_object().bucket("ver").key("k").send().await.unwrap();
    assert_eq!(body(got).await, b"one");
    let e = c
        .get_object()
        .bucket("ver")
        .key("k")
        .version_id("not-a-version")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // Suspended: PUT replaces the null version.
    c.put_bucket_versioning()
        .bucket("ver")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Suspended)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let st = c
        .get_bucket_versioning()
        .bucket("ver")
        .send()
        .await
        .unwrap();
    assert_eq!(st.status(), Some(&BucketVersioningStatus::Suspended));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_errors() {
    let mut srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("auth").send().await.unwrap();
    let bad = srv.client_with(common::ACCESS_KEY, "wrong-secret-key");
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
async fn object_tagging() {
    use aws_sdk_s3::types::{Tag, Tagging};
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("tagged").send().await.unwrap();
    c.put_object()
        .bucket("tagged")
        .key("o")
        .tagging("team=storage&tier=hot%20data")
        .body(ByteStream::from(data(200_000, 2)))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    let tags: Vec<_> = got
        .tag_set()
        .iter()
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect();
    assert_eq!(
        tags,
        [
            ("team".to_owned(), "storage".to_owned()),
            ("tier".to_owned(), "hot data".to_owned())
        ]
    );
    let head = c
        .get_object()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert_eq!(head.tag_count(), Some(2));
    let tagging = |pairs: &[(&str, &str)]| {
        Tagging::builder()
            .set_tag_set(Some(
                pairs
                    .iter()
                    .map(|(k, v)| Tag::builder().key(*k).value(*v).build().unwrap())
                    .collect(),
            ))
            .build()
            .unwrap()
    };
    c.put_object_tagging()
        .bucket("tagged")
        .key("o")
        .tagging(tagging(&[("only", "one & more")]))
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert_eq!(got.tag_set().len(), 1);
    assert_eq!(got.tag_set()[0].value(), "one & more");
    // The data is untouched by tag edits.
    let body = c
        .get_object()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert!(body.body.collect().await.unwrap().into_bytes() == data(200_000, 2));
    let many: Vec<(String, String)> = (0..11).map(|i| (format!("k{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let e = c
        .put_object_tagging()
        .bucket("tagged")
        .key("o")
        .tagging(tagging(&many))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    c.delete_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    let got = c
        .get_object_tagging()
        .bucket("tagged")
        .key("o")
        .send()
        .await
        .unwrap();
    assert!(got.tag_set().is_empty());
    let e = c
        .get_object_tagging()
        .bucket("tagged")
        .key("missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_post_upload() {
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("forms").send().await.unwrap();
    let policy = r#"{"expiration":"2099-12-31T00:00:00.000Z","conditions":[{"bucket":"forms"},["starts-with","$key","uploads/"],["content-length-range",1,2000000],{"success_action_status":"201"}]}"#;
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
        common::SECRET_KEY,
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
        common::SECRET_KEY,
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
        common::SECRET_KEY,
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

/// The SDK's default upload sends a CRC32 trailer; the server verifies it,
/// stores it, and returns it in checksum mode (the SDK then validates the
/// download against it). A checksum given as a header is kept the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksums_stored_and_returned() {
    use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
    let srv = Server::start(4);
    let c = srv.client();
    c.create_bucket().bucket("sums").send().await.unwrap();
    let d = data((1 << 20) + 99, 12);
    let put = c
        .put_object()
        .bucket("sums")
        .key("crc")
        .body(ByteStream::from(d.clone()))
        .send()
        .await
        .unwrap();
    let crc = put
        .checksum_crc32()
        .expect("the server echoes the verified CRC32")
        .to_owned();
    let got = c
        .get_object()
        .bucket("sums")
        .key("crc")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(got.checksum_crc32(), Some(crc.as_str()));
    assert!(body(got).await == d);
    let head = c
        .head_object()
        .bucket("sums")
        .key("crc")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(head.checksum_crc32(), Some(crc.as_str()));
    // Other algorithms, computed by the SDK.
    for alg in [
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
        ChecksumAlgorithm::Crc64Nvme,
    ] {
        let key = format!("k-{}", alg.as_str());
        let put = c
            .put_object()
            .bucket("sums")
            .key(&key)
            .checksum_algorithm(alg.clone())
            .body(ByteStream::from(d.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{alg:?}: {e:?}"));
        let got = c
            .get_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        let (sent, back) = match alg {
            ChecksumAlgorithm::Crc32C => (put.checksum_crc32_c(), got.checksum_crc32_c()),
            ChecksumAlgorithm::Sha1 => (put.checksum_sha1(), got.checksum_sha1()),
            ChecksumAlgorithm::Sha256 => (put.checksum_sha256(), got.checksum_sha256()),
            _ => (put.checksum_crc64_nvme(), got.checksum_crc64_nvme()),
        };
        assert!(sent.is_some(), "{alg:?} echoed");
        assert_eq!(sent, back, "{alg:?}");
        assert!(body(got).await == d);
    }
    // A ranged read returns no full-object checksum.
    let part = c
        .get_object()
        .bucket("sums")
        .key("crc")
        .range("bytes=0-9")
        .checksum_mode(ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert!(part.checksum_crc32().is_none());
}

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
    let key = common::base64(&[3u8; 32]);
    let key_md5 = {
        use md5::Digest as _;
        common::base64(&md5::Md5::digest([3u8; 32]))
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

/// Uploads `data` as `bucket/key` in a multipart upload of `part_size`
/// parts (the last one shorter), completing it with the parts' ETags.
async fn upload_in_parts(
    c: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    data: &[u8],
    part_size: usize,
) {
    let up = c
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    let mut parts = Vec::new();
    for (n, chunk) in data.chunks(part_size).enumerate() {
        let out = c
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(n as i32 + 1)
            .body(ByteStream::from(chunk.to_vec()))
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n as i32 + 1)
                .e_tag(out.e_tag().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
}

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
    let key = common::base64(&[4u8; 32]);
    let key_md5 = {
        use md5::Digest as _;
        common::base64(&md5::Md5::digest([4u8; 32]))
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

/// Drops every file under `dirs` from the page cache (synced first, so its
/// pages are clean): the next reads come from the disk.
fn evict_all(dirs: &[std::path::PathBuf]) {
    let mut stack: Vec<std::path::PathBuf> = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if let Ok(f) = std::fs::File::open(&path) {
                f.sync_all().unwrap();
                rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            }
        }
    }
}

/// With `TESSERA_HUGE_FILL=on` (off by default on a guest whose balloon
/// reports free pages), GETs of objects whose shard files are not in the
/// page cache fill it through the drive's huge-folio mappings (whose own
/// tests check the fill): whole and ranged GETs of a single-part and a
/// multipart object read back bit for bit, cold and hot, also with many
/// GETs of one cold object at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_gets_with_huge_fills() {
    let srv = Server::start_with_env(4, &[("TESSERA_HUGE_FILL", "on")]);
    let c = srv.client();
    c.create_bucket().bucket("cold").send().await.unwrap();
    let one = data((5 << 20) + 17, 41);
    c.put_object()
        .bucket("cold")
        .key("one")
        .body(ByteStream::from(one.clone()))
        .send()
        .await
        .unwrap();
    let part = 5 << 20;
    let multi = data(part + (3 << 20) + 1, 43);
    upload_in_parts(&c, "cold", "multi", &multi, part).await;

    let get = |key: &'static str, range: Option<String>| {
        let c = c.clone();
        async move {
            let out = c
                .get_object()
                .bucket("cold")
                .key(key)
                .set_range(range)
                .send()
                .await
                .unwrap();
            body(out).await
        }
    };
    for pass in ["cold", "hot"] {
        if pass == "cold" {
            evict_all(&srv.dirs);
        }
        // Ranges inside a record, across the 2 MiB chunks a fill brings
        // in, across the parts, and the tail.
        for (key, d) in [("one", &one), ("multi", &multi)] {
            let len = d.len();
            for (from, to) in [
                (len - 100, len - 1),
                (100, 200),
                ((2 << 20) - 7, (4 << 20) + 7),
                (part - 3, part + 3),
            ] {
                let got = get(key, Some(format!("bytes={from}-{to}"))).await;
                assert!(got == d[from..=to], "{pass} {key} {from}-{to}");
            }
            assert!(get(key, None).await == *d, "{pass} {key} whole");
        }
    }
    evict_all(&srv.dirs);
    let gets: Vec<_> = (0..8).map(|_| tokio::spawn(get("one", None))).collect();
    for g in gets {
        assert!(
            g.await.unwrap() == one,
            "one of 8 GETs at once of a cold object"
        );
    }
}
