//! Buckets: creation, listing, configuration and deletion, metadata
//! stored with the most parity, and emptied buckets that can be deleted.

use object::layer::{Error, ListOptions, PutOptions, VersionSel};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    for bad in ["A", "ab", "bad_name", "-x-", ".minio.sys"] {
        assert!(matches!(
            l.make_bucket(bad).await,
            Err(Error::InvalidBucketName(_))
        ));
    }
    l.make_bucket("one").await.unwrap();
    l.make_bucket("two").await.unwrap();
    assert!(matches!(
        l.make_bucket("one").await,
        Err(Error::BucketExists(_))
    ));
    let names: Vec<_> = l
        .list_buckets()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["one", "two"]);
    assert!(l.head_bucket("one").await.unwrap().created_nanos > 0);
    put(&l, "one", "x", b"x").await;
    assert!(matches!(
        l.delete_bucket("one").await,
        Err(Error::BucketNotEmpty(_))
    ));
    l.delete_object("one", "x", None).await.unwrap();
    l.delete_bucket("one").await.unwrap();
    assert!(matches!(
        l.head_bucket("one").await,
        Err(Error::NoSuchBucket(_))
    ));
    assert!(matches!(
        get(&l, "nope", "k").await,
        Err(Error::NoSuchBucket(_))
    ));
    assert!(matches!(
        get(&l, "two", "k").await,
        Err(Error::NoSuchKey { .. })
    ));
    for bad in ["", "/abs", "a/../b", "a//b"] {
        assert!(
            matches!(get(&l, "two", bad).await, Err(Error::InvalidObjectName(..))),
            "{bad}"
        );
    }
    // Copy, with metadata kept or replaced.
    let body = data(1_500_000, 9);
    let opts = PutOptions {
        size: Some(body.len() as u64),
        content_type: Some("image/png".into()),
        metadata: vec![("X-Amz-Meta-A".into(), "1".into())],
        parity: None,
        trailing_metadata: None,
        internal: Vec::new(),
        actual_size: None,
        actual_size_of: None,
        caller_etag: false,
        precondition: None,
    };
    l.put_object("two", "src", &mut &body[..], &opts)
        .await
        .unwrap();
    let c = l
        .copy_object("two", "src", None, "two", "dst", None)
        .await
        .unwrap();
    assert_eq!(c.etag, md5_hex(&body));
    let h = l.head_object("two", "dst", None).await.unwrap();
    assert_eq!(h.content_type, "image/png");
    assert_eq!(
        h.metadata.get("X-Amz-Meta-A").map(String::as_str),
        Some("1")
    );
    assert_eq!(get(&l, "two", "dst").await.unwrap(), body);
    let repl = PutOptions {
        content_type: Some("text/x".into()),
        ..Default::default()
    };
    l.copy_object("two", "src", None, "two", "dst2", Some(&repl))
        .await
        .unwrap();
    let h = l.head_object("two", "dst2", None).await.unwrap();
    assert_eq!(h.content_type, "text/x");
    assert!(h.metadata.is_empty());
}

/// Bucket metadata is written as MinIO writes configuration: with the
/// most parity the set allows (here 8 + 8 on 16 drives, where objects get
/// 12 + 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_metadata_gets_max_parity() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 16);
    let l = open(&ds).await;
    l.make_bucket("maxp").await.unwrap();
    for d in &ds {
        let b = std::fs::read(d.join(".minio.sys/buckets/maxp/.metadata.bin/xl.meta")).unwrap();
        let m = object::xlmeta::XlMeta::decode(&b).unwrap();
        let o = m.latest().unwrap().version().as_object().unwrap().clone();
        assert_eq!((o.erasure_m, o.erasure_n), (8, 8));
    }
    let h = put(&l, "maxp", "o", &data(10, 1)).await;
    assert_eq!((h.data_shards, h.parity_shards), (12, 4));
    assert!(!l.bucket_versioning("maxp").await.unwrap());
}

/// Deleting every object (nested keys, directory objects, every version
/// and delete marker of a versioned bucket) leaves a bucket that can be
/// deleted: no empty directories are left behind to make it look full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emptied_buckets_can_be_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    let keys = ["a/b/c/deep", "a/b/side", "dir/", "top", "big/one"];
    for (bucket, versioned) in [("plainb", false), ("verb", true)] {
        l.make_bucket(bucket).await.unwrap();
        if versioned {
            l.set_bucket_versioning(bucket, true).await.unwrap();
        }
        for (i, k) in keys.iter().enumerate() {
            let body = if k.ends_with('/') {
                Vec::new()
            } else if k.starts_with("big") {
                data(3 << 20, i as u64)
            } else {
                data(100, i as u64)
            };
            put(&l, bucket, k, &body).await;
            if versioned {
                put(&l, bucket, k, &body).await;
                l.delete_object(bucket, k, None).await.unwrap();
            }
        }
        assert!(matches!(
            l.delete_bucket(bucket).await,
            Err(Error::BucketNotEmpty(_))
        ));
        let versions = l
            .list_object_versions(bucket, &ListOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(
            versions.versions.len(),
            keys.len() * if versioned { 3 } else { 1 }
        );
        for v in &versions.versions {
            let sel = v.version_id.map_or(VersionSel::Null, VersionSel::Id);
            l.delete_object(bucket, &v.key, Some(sel)).await.unwrap();
        }
        let left = l
            .list_object_versions(bucket, &ListOptions::default(), None)
            .await
            .unwrap();
        assert!(left.versions.is_empty(), "{:?}", left.versions);
        l.delete_bucket(bucket)
            .await
            .unwrap_or_else(|e| panic!("{bucket}: {e}"));
        for d in &ds {
            assert!(!d.join(bucket).exists(), "{}", d.display());
            assert!(!d.join(".minio.sys/buckets").join(bucket).exists());
        }
        assert!(matches!(
            l.head_bucket(bucket).await,
            Err(Error::NoSuchBucket(_))
        ));
    }
    assert!(l.list_buckets().await.unwrap().is_empty());
}

/// Configuration documents under `.minio.sys/config/`: written with
/// half-set parity, read back, listed under a prefix in order, removed;
/// paths outside `config/` or with empty or dot segments are refused, and
/// no bucket listing shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    assert_eq!(
        l.read_config("config/iam/users/a/identity.json")
            .await
            .unwrap(),
        None
    );
    assert!(l.list_config("config/iam/users/").await.unwrap().is_empty());
    for (name, doc) in [("b", &b"{\"b\":1}"[..]), ("a", b"{\"a\":1}"), ("c", b"{}")] {
        l.write_config(&format!("config/iam/users/{name}/identity.json"), doc)
            .await
            .unwrap();
    }
    l.write_config("config/iam/policies/p/policy.json", b"{}")
        .await
        .unwrap();
    assert_eq!(
        l.read_config("config/iam/users/a/identity.json")
            .await
            .unwrap()
            .as_deref(),
        Some(&b"{\"a\":1}"[..])
    );
    assert_eq!(
        l.list_config("config/iam/users/").await.unwrap(),
        ["a/identity.json", "b/identity.json", "c/identity.json"]
    );
    // Every drive holds the document (half-set parity: 2 of 4 may go).
    for d in &ds {
        assert!(
            d.join(".minio.sys/config/iam/users/a/identity.json/xl.meta")
                .exists()
        );
    }
    l.write_config("config/iam/users/a/identity.json", b"{\"a\":2}")
        .await
        .unwrap();
    assert_eq!(
        l.read_config("config/iam/users/a/identity.json")
            .await
            .unwrap()
            .as_deref(),
        Some(&b"{\"a\":2}"[..])
    );
    l.delete_config("config/iam/users/b/identity.json")
        .await
        .unwrap();
    l.delete_config("config/iam/users/b/identity.json")
        .await
        .unwrap();
    assert_eq!(
        l.list_config("config/iam/users/").await.unwrap(),
        ["a/identity.json", "c/identity.json"]
    );
    for bad in [
        "users/a",
        "config/../format.json",
        "config//a",
        "config/a/",
        "config/./a",
    ] {
        assert!(l.read_config(bad).await.is_err(), "{bad}");
        assert!(l.write_config(bad, b"x").await.is_err(), "{bad}");
    }
    assert!(l.list_config("config/iam").await.is_err());
    assert!(l.list_buckets().await.unwrap().is_empty());
}
