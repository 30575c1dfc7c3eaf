//! Objects stored and read back whole on real directories: every size
//! around the inline and block boundaries on 4 and 8 drives, metadata and
//! content types, byte ranges, in-place metadata edits, the actual size of
//! a body whose stored size differs, and concurrent writers of one key.

use std::sync::Arc;

use object::layer::{Error, GetOptions, ListOptions, PutOptions, Range, VersionSel};

use crate::support::*;

const SIZES: &[usize] = &[
    0,
    1,
    2,
    100,
    262_143,
    262_144, // the largest inline object on 2 data shards
    262_145,
    1 << 20,
    (1 << 20) + 1,
    2 << 20,
    3 * (1 << 20) + 12_345,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_all_sizes_4_and_8_drives() {
    for n in [4, 8] {
        let tmp = tempfile::tempdir().unwrap();
        let l = open(&dirs(tmp.path(), n)).await;
        l.make_bucket("bkt").await.unwrap();
        for (i, &size) in SIZES.iter().enumerate() {
            let body = data(size, i as u64 + 1);
            let key = format!("obj/{size}");
            let info = put(&l, "bkt", &key, &body).await;
            assert_eq!(info.size, size as u64);
            assert_eq!(info.etag, md5_hex(&body), "etag of {size}");
            let k = n - n / 2;
            let inline = size.div_ceil(k) <= 128 << 10;
            let head = l.head_object("bkt", &key, None).await.unwrap();
            assert_eq!(head.inline, inline, "inline flag of {size} on {n} drives");
            assert_eq!(head.etag, info.etag);
            assert_eq!(head.size, size as u64);
            assert_eq!(get(&l, "bkt", &key).await.unwrap(), body, "{size} on {n}");
        }
        // Unknown size (chunked upload) takes the same paths; ending on a
        // block boundary, the last block is hashed while a read finds the
        // end.
        for (key, size) in [("unknown", 2_500_000), ("unknown-blocks", 2 << 20)] {
            let body = data(size, 99);
            let info = l
                .put_object("bkt", key, &mut &body[..], &PutOptions::default())
                .await
                .unwrap();
            assert_eq!(info.etag, md5_hex(&body), "{key}");
            assert_eq!(get(&l, "bkt", key).await.unwrap(), body, "{key}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_and_content_type_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let l = open(&dirs(tmp.path(), 4)).await;
    l.make_bucket("meta").await.unwrap();
    let opts = PutOptions {
        size: Some(5),
        content_type: Some("text/plain".into()),
        metadata: vec![
            ("X-Amz-Meta-Color".into(), "blue".into()),
            ("Cache-Control".into(), "no-cache".into()),
        ],
        parity: None,
        trailing_metadata: None,
        internal: Vec::new(),
        actual_size: None,
        actual_size_of: None,
        caller_etag: false,
        precondition: None,
    };
    l.put_object("meta", "k", &mut &b"hello"[..], &opts)
        .await
        .unwrap();
    let h = l.head_object("meta", "k", None).await.unwrap();
    assert_eq!(h.content_type, "text/plain");
    assert_eq!(h.metadata.get("X-Amz-Meta-Color").unwrap(), "blue");
    assert_eq!(h.metadata.get("Cache-Control").unwrap(), "no-cache");
    // Reserved or malformed keys are refused.
    for bad in ["etag", "x-minio-internal-inline-data", "bad key", ""] {
        let o = PutOptions {
            metadata: vec![(bad.into(), "v".into())],
            ..Default::default()
        };
        let r = l.put_object("meta", "k2", &mut &b"x"[..], &o).await;
        assert!(matches!(r, Err(Error::InvalidMetadata(_))), "{bad}: {r:?}");
    }
    // A body shorter or longer than announced is refused, and leaves nothing.
    for (announced, body) in [
        (10u64, vec![1u8; 5]),
        (3, vec![1u8; 5]),
        (3 << 20, vec![7u8; 2 << 20]),
    ] {
        let o = PutOptions {
            size: Some(announced),
            ..Default::default()
        };
        let r = l.put_object("meta", "short", &mut &body[..], &o).await;
        assert!(matches!(r, Err(Error::IncompleteBody { .. })), "{r:?}");
        assert!(matches!(
            l.head_object("meta", "short", None).await,
            Err(Error::NoSuchKey { .. })
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let l = open(&dirs(tmp.path(), 4)).await;
    l.make_bucket("rng").await.unwrap();
    let mb = 1u64 << 20;
    for (key, size) in [("small", 1000u64), ("big", 3 * mb + 77)] {
        let body = data(size as usize, size);
        put(&l, "rng", key, &body).await;
        let cases: Vec<(Range, u64, u64)> = vec![
            (
                Range::From {
                    offset: 0,
                    length: Some(1),
                },
                0,
                1,
            ),
            (
                Range::From {
                    offset: size - 1,
                    length: None,
                },
                size - 1,
                1,
            ),
            (
                Range::From {
                    offset: 3,
                    length: Some(size),
                },
                3,
                size - 3,
            ),
            (Range::Suffix(10), size - 10, 10),
            (Range::Suffix(size + 5), 0, size),
        ];
        let mut cases = cases;
        if size > 2 * mb {
            for (o, len) in [
                (mb - 1, 2),
                (mb, 1),
                (mb - 5, mb + 10),
                (2 * mb - 1, 3),
                (0, 3 * mb + 1),
            ] {
                cases.push((
                    Range::From {
                        offset: o,
                        length: Some(len),
                    },
                    o,
                    len,
                ));
            }
        }
        for (r, o, len) in cases {
            let mut out = Vec::new();
            l.get_object(
                "rng",
                key,
                &GetOptions {
                    version_id: None,
                    range: Some(r),
                },
                &mut out,
            )
            .await
            .unwrap();
            assert_eq!(out, &body[o as usize..(o + len) as usize], "{key} {r:?}");
        }
        let mut out = Vec::new();
        let bad = l
            .get_object(
                "rng",
                key,
                &GetOptions {
                    version_id: None,
                    range: Some(Range::From {
                        offset: size,
                        length: None,
                    }),
                },
                &mut out,
            )
            .await;
        assert!(matches!(bad, Err(Error::InvalidRange { .. })), "{bad:?}");
    }
}

/// Metadata edited in place (object tagging): every drive's `xl.meta` gets
/// the new metadata, the data and the version stay, and a versioned
/// object's older version is edited on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_updates_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = dirs(tmp.path(), 4);
    let l = open(&dirs).await;
    l.make_bucket("tags").await.unwrap();
    let body = data(300_000, 5);
    let before = put(&l, "tags", "obj", &body).await;
    let after = l
        .update_object_metadata("tags", "obj", None, &|m| {
            m.insert("X-Amz-Tagging", "a=1&b=2".into());
        })
        .await
        .unwrap();
    assert_eq!(after.etag, before.etag);
    assert_eq!(after.mod_time_nanos, before.mod_time_nanos);
    let head = l.head_object("tags", "obj", None).await.unwrap();
    assert_eq!(
        head.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("a=1&b=2")
    );
    assert_eq!(get(&l, "tags", "obj").await.unwrap(), body);
    // Every drive agrees: HEAD still works with parity-many drives gone.
    for d in &dirs[..2] {
        wipe_bucket(d, "tags");
    }
    let head = l.head_object("tags", "obj", None).await.unwrap();
    assert_eq!(
        head.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("a=1&b=2")
    );
    assert_eq!(get(&l, "tags", "obj").await.unwrap(), body);

    // Versioned: editing the older version leaves the latest alone.
    l.make_bucket("vtags").await.unwrap();
    l.set_bucket_versioning("vtags", true).await.unwrap();
    let v1 = put(&l, "vtags", "k", b"one").await;
    let v2 = put(&l, "vtags", "k", b"two").await;
    let sel = VersionSel::Id(v1.version_id.unwrap());
    l.update_object_metadata("vtags", "k", Some(sel), &|m| {
        m.insert("X-Amz-Tagging", "old=yes".into());
    })
    .await
    .unwrap();
    let h1 = l.head_object("vtags", "k", Some(sel)).await.unwrap();
    assert_eq!(
        h1.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("old=yes")
    );
    let h2 = l.head_object("vtags", "k", None).await.unwrap();
    assert_eq!(h2.version_id, v2.version_id);
    assert!(!h2.metadata.contains_key("X-Amz-Tagging"));
    // Removing the entry works too, and a missing key is NoSuchKey.
    l.update_object_metadata("vtags", "k", Some(sel), &|m| {
        m.remove("X-Amz-Tagging");
    })
    .await
    .unwrap();
    let h1 = l.head_object("vtags", "k", Some(sel)).await.unwrap();
    assert!(!h1.metadata.contains_key("X-Amz-Tagging"));
    let e = l
        .update_object_metadata("vtags", "missing", None, &|_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NoSuchKey { .. }), "{e}");
}

/// A body of unknown length whose client-visible size follows from the
/// stored one (an encrypted POST upload): `actual_size_of` gives the part's
/// actual size recorded in `xl.meta` (`PartASizes`, which MinIO reads),
/// inline and streamed alike; an announced `actual_size` wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actual_size_from_the_stored_size() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("asz").await.unwrap();
    fn half(s: u64) -> Option<u64> {
        Some(s / 2)
    }
    for (key, len, announced, want) in [
        ("inline", 1000u64, None, 500i64),
        ("streamed", 3 << 20, None, 3 << 19),
        ("announced", 4000, Some(7u64), 7),
    ] {
        let body = data(len as usize, 5);
        let opts = PutOptions {
            actual_size: announced,
            actual_size_of: Some(half),
            ..Default::default()
        };
        l.put_object("asz", key, &mut &body[..], &opts)
            .await
            .unwrap();
        let raw = std::fs::read(ds[0].join("asz").join(key).join("xl.meta")).unwrap();
        let meta = object::xlmeta::XlMeta::decode(&raw).unwrap();
        let o = meta.versions()[0].version().as_object().unwrap().clone();
        assert_eq!(o.size, len as i64, "{key}");
        assert_eq!(o.part_actual_sizes.as_deref(), Some(&[want][..]), "{key}");
        assert_eq!(get(&l, "asz", key).await.unwrap(), body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_puts_leave_one_complete_version() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = Arc::new(open(&ds).await);
    l.make_bucket("race").await.unwrap();
    let bodies: Vec<Vec<u8>> = (0..8)
        .map(|i| data((1 << 20) + i * 1000, i as u64))
        .collect();
    let mut tasks = Vec::new();
    for b in bodies.clone() {
        let l = l.clone();
        tasks.push(tokio::spawn(async move { put(&l, "race", "k", &b).await }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let got = get(&l, "race", "k").await.unwrap();
    assert!(bodies.contains(&got), "a complete body, not a mixture");
    for d in &ds {
        let data_dirs = std::fs::read_dir(d.join("race/k"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(data_dirs, 1, "one version's data on {}", d.display());
    }
    let vers = l
        .list_object_versions("race", &ListOptions::default(), None)
        .await
        .unwrap();
    assert_eq!(vers.versions.len(), 1);
}
