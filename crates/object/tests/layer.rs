//! The object layer end to end on real directories: round trips, ranges,
//! drive loss, bitrot, heal, quorum failures, versioning, listing,
//! concurrency and restarts.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use md5::{Digest, Md5};
use object::layer::{
    Error, GetOptions, LayerOptions, ListOptions, ObjectLayer, PartOptions, PutOptions, Range,
    VersionSel,
};
use support::{Fault, data, dirs, faulty_layer, get, put, staging_leftovers};

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

async fn open(dirs: &[PathBuf]) -> ObjectLayer {
    ObjectLayer::open_dirs(dirs, LayerOptions::default())
        .await
        .expect("open")
}

/// Removes everything of `bucket` on one drive directory (a lost drive's
/// data, the drive itself still formatted).
fn wipe_bucket(dir: &Path, bucket: &str) {
    let p = dir.join(bucket);
    std::fs::remove_dir_all(&p).unwrap();
    std::fs::create_dir_all(&p).unwrap();
}

fn part_files(dir: &Path, bucket: &str, key: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let obj = dir.join(bucket).join(key);
    if let Ok(rd) = std::fs::read_dir(&obj) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                for f in std::fs::read_dir(e.path()).unwrap().flatten() {
                    out.push(f.path());
                }
            }
        }
    }
    out.sort();
    out
}

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

/// Every subset of at most `parity` drives of a 4-drive (2+2) set wiped:
/// everything still reads; heal restores the shards, so that afterwards
/// any other `parity` drives can go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drive_loss_and_heal() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("loss").await.unwrap();
    let objs: Vec<(String, Vec<u8>)> = [0usize, 10, 200_000, (1 << 20) + 3, 2_345_678]
        .iter()
        .enumerate()
        .map(|(i, &s)| (format!("o{i}"), data(s, 1000 + i as u64)))
        .collect();
    let subsets: Vec<Vec<usize>> = vec![
        vec![0],
        vec![1],
        vec![2],
        vec![3],
        vec![0, 1],
        vec![0, 2],
        vec![0, 3],
        vec![1, 2],
        vec![1, 3],
        vec![2, 3],
    ];
    for lost in subsets {
        for (k, b) in &objs {
            put(&l, "loss", k, b).await;
        }
        for &d in &lost {
            wipe_bucket(&ds[d], "loss");
        }
        for (k, b) in &objs {
            let mut out = Vec::new();
            let (_, report) = l
                .get_object_report("loss", k, &GetOptions::default(), &mut out)
                .await
                .unwrap_or_else(|e| panic!("{k} with {lost:?} lost: {e}"));
            assert_eq!(&out, b, "{k} with {lost:?} lost");
            assert_eq!(report.bad_drives, lost, "{k}: drives to heal");
            let healed = l.heal_object("loss", k, None).await.unwrap();
            assert_eq!(healed.healed_drives, lost, "{k}: healed drives");
            assert!(
                l.heal_object("loss", k, None)
                    .await
                    .unwrap()
                    .healed_drives
                    .is_empty()
            );
        }
        // After healing, lose the other drives: still intact.
        let others: Vec<usize> = (0..4).filter(|d| !lost.contains(d)).take(2).collect();
        for &d in &others {
            wipe_bucket(&ds[d], "loss");
        }
        for (k, b) in &objs {
            assert_eq!(
                &get(&l, "loss", k).await.unwrap(),
                b,
                "{k} after heal, {others:?} lost"
            );
        }
        for (k, _) in &objs {
            l.heal_object("loss", k, None).await.unwrap();
        }
    }
    // More than parity lost: a clear error, never wrong data.
    put(&l, "loss", "gone", &data(3 << 20, 5)).await;
    for d in &ds[..3] {
        wipe_bucket(d, "loss");
    }
    let r = get(&l, "loss", "gone").await;
    assert!(r.is_err(), "read with 3 of 4 drives lost must fail");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bitrot_is_detected_reconstructed_and_healed() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("rot").await.unwrap();
    let body = data(2 * (1 << 20) + 999, 7);
    put(&l, "rot", "big", &body).await;
    let small = data(5000, 8);
    put(&l, "rot", "small", &small).await;

    // Flip one byte in every position class of one drive's part file: a
    // hash byte, a data byte of the first and of the last block.
    for (d, offset) in [
        (0usize, 3u64),
        (1, 100),
        (2, 2 * (524_288 + 32) + 10),
        (3, 32),
    ] {
        let files = part_files(&ds[d], "rot", "big");
        assert_eq!(files.len(), 1);
        let mut bytes = std::fs::read(&files[0]).unwrap();
        bytes[offset as usize] ^= 0x40;
        std::fs::write(&files[0], &bytes).unwrap();
        let mut out = Vec::new();
        let (_, report) = l
            .get_object_report("rot", "big", &GetOptions::default(), &mut out)
            .await
            .unwrap();
        assert_eq!(out, body, "corrupt byte at {offset} of drive {d} leaked");
        // Only a drive whose shard was read can be seen bad by a GET (data
        // shards are preferred); heal checks every shard.
        assert!(report.bad_drives.iter().all(|&x| x == d));
        let h = l.heal_object("rot", "big", None).await.unwrap();
        assert_eq!(h.healed_drives, vec![d], "heal of drive {d}");
        let after = std::fs::read(&files[0]).unwrap();
        assert_ne!(after, bytes, "shard file rewritten");
    }

    // Corrupt inline data (inside xl.meta) of one drive.
    let meta = ds[1].join("rot/small/xl.meta");
    let mut bytes = std::fs::read(&meta).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 1;
    std::fs::write(&meta, &bytes).unwrap();
    assert_eq!(get(&l, "rot", "small").await.unwrap(), small);
    let h = l.heal_object("rot", "small", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![1]);
    assert_ne!(std::fs::read(&meta).unwrap(), bytes);

    // Garbage xl.meta on one drive: still readable, healed.
    std::fs::write(ds[2].join("rot/big/xl.meta"), b"garbage").unwrap();
    assert_eq!(get(&l, "rot", "big").await.unwrap(), body);
    let h = l.heal_object("rot", "big", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![2]);
    wipe_bucket(&ds[0], "rot");
    wipe_bucket(&ds[3], "rot");
    assert_eq!(
        get(&l, "rot", "big").await.unwrap(),
        body,
        "healed shards are right"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_quorum_and_offline_drives() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, faulty) = faulty_layer(&ds).await;
    l.make_bucket("qrm").await.unwrap();
    let old = data(3 << 20, 1);
    put(&l, "qrm", "k", &old).await;
    // One drive offline (2+2: write quorum 3): writes and reads go on.
    faulty[3].set(Fault::Fail);
    let v2 = data((1 << 20) + 5, 2);
    put(&l, "qrm", "k", &v2).await;
    assert_eq!(get(&l, "qrm", "k").await.unwrap(), v2);
    let inline = data(1000, 3);
    put(&l, "qrm", "small", &inline).await;
    // Two offline: below the write quorum of 3. Nothing changes.
    faulty[2].set(Fault::Fail);
    for body in [data(3 << 20, 4), data(10, 5)] {
        let r = l
            .put_object(
                "qrm",
                "k",
                &mut &body[..],
                &PutOptions {
                    size: Some(body.len() as u64),
                    ..Default::default()
                },
            )
            .await;
        assert!(matches!(r, Err(Error::WriteQuorum { .. })), "{r:?}");
    }
    // Reads still work with 2 of 4 (read quorum 2).
    assert_eq!(get(&l, "qrm", "k").await.unwrap(), v2);
    faulty[2].set(Fault::None);
    faulty[3].set(Fault::None);
    assert_eq!(
        get(&l, "qrm", "k").await.unwrap(),
        v2,
        "failed PUT left no trace"
    );
    // No leftovers in the temp areas.
    for d in &ds {
        let left = staging_leftovers(d);
        assert!(left.is_empty(), "{}: {left:?}", d.display());
    }
    // Drive 3 missed v2: heal brings it up to date.
    let h = l.heal_object("qrm", "k", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versioning_and_delete_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("ver").await.unwrap();
    assert!(!l.bucket_versioning("ver").await.unwrap());
    // Unversioned overwrite: one version, the old data dir is gone.
    put(&l, "ver", "plain", &data(2 << 20, 1)).await;
    let v = data(3 << 20, 2);
    put(&l, "ver", "plain", &v).await;
    assert_eq!(get(&l, "ver", "plain").await.unwrap(), v);
    for d in &ds {
        let dirs_left = std::fs::read_dir(d.join("ver/plain"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(dirs_left, 1, "old data dir removed on {}", d.display());
    }

    l.set_bucket_versioning("ver", true).await.unwrap();
    assert!(l.bucket_versioning("ver").await.unwrap());
    let a = data(100, 3);
    let b = data((1 << 20) + 1, 4);
    let ia = put(&l, "ver", "doc", &a).await;
    let ib = put(&l, "ver", "doc", &b).await;
    let (va, vb) = (ia.version_id.unwrap(), ib.version_id.unwrap());
    assert_ne!(va, vb);
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), b);
    let mut out = Vec::new();
    l.get_object(
        "ver",
        "doc",
        &GetOptions {
            version_id: Some(VersionSel::Id(va)),
            range: None,
        },
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(out, a);
    let del = l.delete_object("ver", "doc", None).await.unwrap();
    assert!(del.delete_marker);
    match get(&l, "ver", "doc").await {
        Err(Error::NoSuchKey { delete_marker, .. }) => assert!(delete_marker),
        r => panic!("{r:?}"),
    }
    let listed = l
        .list_objects("ver", &ListOptions::default())
        .await
        .unwrap();
    assert!(
        listed.objects.iter().all(|o| o.key != "doc"),
        "hidden by its delete marker"
    );
    let vers = l
        .list_object_versions(
            "ver",
            &ListOptions {
                prefix: "doc".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let ids: Vec<_> = vers
        .versions
        .iter()
        .map(|v| (v.version_id, v.delete_marker, v.is_latest))
        .collect();
    assert_eq!(
        ids,
        vec![
            (del.version_id, true, true),
            (Some(vb), false, false),
            (Some(va), false, false)
        ]
    );
    // Version listing pages: one entry per page, resuming by markers.
    let mut got = Vec::new();
    let (mut km, mut vm): (Option<String>, Option<String>) = (None, None);
    loop {
        let page = l
            .list_object_versions(
                "ver",
                &ListOptions {
                    prefix: "doc".into(),
                    marker: km.clone(),
                    max_keys: 1,
                    ..Default::default()
                },
                vm.as_deref(),
            )
            .await
            .unwrap();
        got.extend(page.versions.iter().map(|v| v.version_id));
        if !page.is_truncated {
            break;
        }
        km = page.next_key_marker;
        vm = page.next_version_marker;
    }
    assert_eq!(got, vec![del.version_id, Some(vb), Some(va)]);
    // Removing the delete marker brings the object back.
    l.delete_object("ver", "doc", del.version_id.map(VersionSel::Id))
        .await
        .unwrap();
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), b);
    // Removing a version removes its data.
    l.delete_object("ver", "doc", Some(VersionSel::Id(vb)))
        .await
        .unwrap();
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), a);
    let r = l.head_object("ver", "doc", Some(VersionSel::Id(vb))).await;
    assert!(matches!(r, Err(Error::NoSuchVersion { .. })), "{r:?}");
    // Versioning survives a restart (bucket metadata on disk).
    drop(l);
    let l = open(&ds).await;
    assert!(l.bucket_versioning("ver").await.unwrap());
    assert_eq!(get(&l, "ver", "doc").await.unwrap(), a);
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_checks_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let id = {
        let l = open(&ds).await;
        l.make_bucket("keep").await.unwrap();
        put(&l, "keep", "k", b"kept").await;
        l.deployment_id()
    };
    let l = open(&ds).await;
    assert_eq!(l.deployment_id(), id);
    assert_eq!(get(&l, "keep", "k").await.unwrap(), b"kept");
    drop(l);
    // Drives out of order are refused.
    let mut swapped = ds.clone();
    swapped.swap(0, 1);
    let r = ObjectLayer::open_dirs(&swapped, LayerOptions::default()).await;
    assert!(matches!(r, Err(Error::Layout(_))), "{r:?}");
    // A drive from another deployment is refused.
    let other = tempfile::tempdir().unwrap();
    let ods = dirs(other.path(), 4);
    open(&ods).await;
    let mut mixed = ds.clone();
    mixed[2] = ods[2].clone();
    let r = ObjectLayer::open_dirs(&mixed, LayerOptions::default()).await;
    assert!(matches!(r, Err(Error::Layout(_))), "{r:?}");
    // A replaced (empty) drive is formatted into its slot and healed.
    std::fs::remove_dir_all(&ds[1]).unwrap();
    let l = open(&ds).await;
    assert_eq!(get(&l, "keep", "k").await.unwrap(), b"kept");
    l.heal_object("keep", "k", None).await.unwrap();
    wipe_bucket(&ds[0], "keep");
    wipe_bucket(&ds[2], "keep");
    assert_eq!(get(&l, "keep", "k").await.unwrap(), b"kept");
}

/// Keys chosen to stress S3 ordering against directory order.
fn tricky_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "a",
        "a.txt",
        "a/b",
        "a/b/c",
        "a-b",
        "a-b/c",
        "a0",
        "b",
        "b/",
        "b/x",
        "c/d/e/f",
        "c/d/e.g",
        "c/d-e",
        "c/d/e",
        "dir/",
        "dir/file",
        "ü/ключ",
        "z",
        "a/b.c",
        "a/b/c/d/e",
        "aa",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for i in 0..40 {
        keys.push(format!("p/{:02}/{}", i % 7, i));
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_matches_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    // 8 drives: two sets of 4, so the merge across sets is exercised.
    let ds = dirs(tmp.path(), 8);
    let l = ObjectLayer::open_dirs(
        &ds,
        LayerOptions {
            set_drive_count: Some(4),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(l.sets().len(), 2);
    l.make_bucket("lst").await.unwrap();
    let keys = tricky_keys();
    let mut model = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let body = data(i * 37 % 500, i as u64);
        put(&l, "lst", k, &body).await;
        model.insert(k.clone(), body.len() as u64);
    }
    let model_list = |prefix: &str, delim: Option<&str>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for k in model.keys().filter(|k| k.starts_with(prefix)) {
            let e = match delim.and_then(|d| k[prefix.len()..].find(d).map(|i| (i, d))) {
                Some((i, d)) => format!("P:{}", &k[..prefix.len() + i + d.len()]),
                None => format!("K:{k}"),
            };
            if out.last() != Some(&e) && !out.contains(&e) {
                out.push(e);
            }
        }
        out.sort_by(|a, b| a[2..].cmp(&b[2..]));
        out
    };
    for prefix in ["", "a", "a/", "c/d", "p/0", "p/03/", "zz", "ü"] {
        for delim in [None, Some("/"), Some("-"), Some("/e")] {
            let want = model_list(prefix, delim);
            for max in [1usize, 2, 3, 7, 1000] {
                let mut got = Vec::new();
                let mut marker: Option<String> = None;
                let mut pages = 0;
                loop {
                    let page = l
                        .list_objects(
                            "lst",
                            &ListOptions {
                                prefix: prefix.into(),
                                delimiter: delim.map(String::from),
                                marker: marker.clone(),
                                max_keys: max,
                            },
                        )
                        .await
                        .unwrap();
                    assert!(page.objects.len() + page.prefixes.len() <= max);
                    let mut entries: Vec<String> = page
                        .objects
                        .iter()
                        .map(|o| format!("K:{}", o.key))
                        .chain(page.prefixes.iter().map(|p| format!("P:{p}")))
                        .collect();
                    entries.sort_by(|a, b| a[2..].cmp(&b[2..]));
                    for o in &page.objects {
                        assert_eq!(Some(&o.size), model.get(&o.key));
                    }
                    got.extend(entries);
                    pages += 1;
                    assert!(pages < 200, "pagination does not end");
                    if !page.is_truncated {
                        break;
                    }
                    marker = page.next_marker.clone();
                    assert!(marker.is_some());
                }
                assert_eq!(got, want, "prefix {prefix:?} delimiter {delim:?} max {max}");
            }
        }
    }
    // Deleted keys disappear.
    l.delete_object("lst", "a/b", None).await.unwrap();
    let page = l
        .list_objects(
            "lst",
            &ListOptions {
                prefix: "a/".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(page.objects.iter().all(|o| o.key != "a/b"));
    assert!(page.objects.iter().any(|o| o.key == "a/b/c"));
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

/// A replaced drive (its directory emptied and re-formatted at start) is
/// healed by the background scanner, which keeps to its rate; reads that
/// meet damage queue the object for healing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scanner_heals_a_replaced_drive_at_a_bounded_rate() {
    use object::layer::ScanOptions;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let objs: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| (format!("s/{i}"), data(i * 150_000, 50 + i as u64)))
        .collect();
    {
        let l = open(&ds).await;
        l.make_bucket("scan").await.unwrap();
        for (k, b) in &objs {
            put(&l, "scan", k, b).await;
        }
    }
    // Replace drive 2 with an empty one.
    std::fs::remove_dir_all(&ds[2]).unwrap();
    let l = Arc::new(open(&ds).await);
    let rate = 40;
    let started = Instant::now();
    let scanner = l.spawn_scanner(ScanOptions {
        versions_per_sec: Some(rate),
        interval: Duration::from_secs(3600),
    });
    while scanner.progress().cycles == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "scan did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    let p = scanner.progress();
    assert_eq!(p.checked, objs.len() as u64, "{p:?}");
    assert_eq!(p.healed, objs.len() as u64, "{p:?}");
    assert_eq!(p.errors, 0);
    // The pacing is a lower bound on the time a pass takes.
    let min = Duration::from_secs_f64((objs.len() - 1) as f64 / f64::from(rate));
    assert!(
        took >= min,
        "scanned {} versions in {took:?}, faster than {rate}/s",
        p.checked
    );
    // Every shard of drive 2 is back: lose two others, read everything.
    wipe_bucket(&ds[0], "scan");
    wipe_bucket(&ds[3], "scan");
    for (k, b) in &objs {
        assert_eq!(&get(&l, "scan", k).await.unwrap(), b, "{k}");
    }
    // Those reads met missing shards and queued the objects; the scanner
    // heals them from the queue.
    let healed_before = p.healed;
    let deadline = Instant::now() + Duration::from_secs(120);
    while scanner.progress().healed < healed_before + objs.len() as u64 {
        assert!(
            Instant::now() < deadline,
            "queued heals: {:?}",
            scanner.progress()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(scanner);
    wipe_bucket(&ds[1], "scan");
    wipe_bucket(&ds[2], "scan");
    for (k, b) in &objs {
        assert_eq!(
            &get(&l, "scan", k).await.unwrap(),
            b,
            "{k} after queued heals"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_uploads() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    let p1 = data((5 << 20) + 7, 1);
    let p2_old = data(5 << 20, 2);
    let p2 = data(5 << 20, 3);
    let p3 = data(1234, 4);
    let opts = PutOptions {
        content_type: Some("video/mp4".into()),
        metadata: vec![("X-Amz-Meta-Kind".into(), "multi".into())],
        ..Default::default()
    };
    let id = l
        .create_multipart_upload("mpu", "big/file", &opts)
        .await
        .unwrap();
    let ups = l.list_multipart_uploads("mpu", "big/").await.unwrap();
    assert_eq!(ups.len(), 1);
    assert_eq!(
        (ups[0].key.as_str(), ups[0].upload_id.as_str()),
        ("big/file", id.as_str())
    );
    // Out of order, and part 2 replaced.
    let e3 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            3,
            &mut &p3[..],
            Some(p3.len() as u64),
        )
        .await
        .unwrap();
    let _old = l
        .upload_part("mpu", "big/file", &id, 2, &mut &p2_old[..], None)
        .await
        .unwrap();
    let e1 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            1,
            &mut &p1[..],
            Some(p1.len() as u64),
        )
        .await
        .unwrap();
    let e2 = l
        .upload_part(
            "mpu",
            "big/file",
            &id,
            2,
            &mut &p2[..],
            Some(p2.len() as u64),
        )
        .await
        .unwrap();
    assert_eq!(e1.etag, md5_hex(&p1));
    let listed = l.list_parts("mpu", "big/file", &id).await.unwrap();
    let summary: Vec<(i64, String, u64)> = listed
        .iter()
        .map(|p| (p.number, p.etag.clone(), p.size))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, e1.etag.clone(), p1.len() as u64),
            (2, e2.etag.clone(), p2.len() as u64),
            (3, e3.etag.clone(), p3.len() as u64)
        ]
    );
    // Errors.
    for n in [0, 10_001] {
        let r = l
            .upload_part("mpu", "big/file", &id, n, &mut &b"x"[..], None)
            .await;
        assert!(matches!(r, Err(Error::InvalidPartNumber(_))), "{r:?}");
    }
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(1, e1.etag.clone()), (2, _old.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPart(_))), "{bad:?}");
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(2, e2.etag.clone()), (1, e1.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPartOrder)), "{bad:?}");
    let bad = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(3, e3.etag.clone()), (4, e3.etag.clone())],
        )
        .await;
    assert!(matches!(bad, Err(Error::InvalidPart(_))), "{bad:?}");
    let small = l
        .complete_multipart_upload(
            "mpu",
            "big/file",
            &id,
            &[(3, e3.etag.clone()), (4, "x".into())],
        )
        .await;
    assert!(small.is_err());
    let r = l
        .complete_multipart_upload("mpu", "big/file", "nope", &[(1, e1.etag.clone())])
        .await;
    assert!(matches!(r, Err(Error::NoSuchUpload(_))), "{r:?}");
    // Complete with parts 1..3 (quoted ETags, as clients send them).
    let parts = vec![
        (1, format!("\"{}\"", e1.etag)),
        (2, e2.etag.clone()),
        (3, e3.etag.clone()),
    ];
    let info = l
        .complete_multipart_upload("mpu", "big/file", &id, &parts)
        .await
        .unwrap();
    let mut cat = Vec::new();
    for p in [&e1, &e2, &e3] {
        cat.extend(hex::decode(&p.etag).unwrap());
    }
    assert_eq!(info.etag, format!("{}-3", md5_hex(&cat)));
    let whole: Vec<u8> = [p1.clone(), p2.clone(), p3.clone()].concat();
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);
    let h = l.head_object("mpu", "big/file", None).await.unwrap();
    assert_eq!(h.parts.len(), 3);
    assert_eq!(h.content_type, "video/mp4");
    assert_eq!(
        h.metadata.get("X-Amz-Meta-Kind").map(String::as_str),
        Some("multi")
    );
    assert!(!h.metadata.keys().any(|k| k.contains("tessera-internal")));
    // A range across the part boundaries.
    let mut out = Vec::new();
    let o = p1.len() as u64 - 10;
    l.get_object(
        "mpu",
        "big/file",
        &GetOptions {
            version_id: None,
            range: Some(Range::From {
                offset: o,
                length: Some((5 << 20) + 30),
            }),
        },
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(out, &whole[o as usize..o as usize + (5 << 20) + 30]);
    // The upload is gone.
    assert!(
        l.list_multipart_uploads("mpu", "")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        l.list_parts("mpu", "big/file", &id).await,
        Err(Error::NoSuchUpload(_))
    ));
    // Survives the loss of two drives, and heals.
    wipe_bucket(&ds[0], "mpu");
    wipe_bucket(&ds[1], "mpu");
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);
    assert_eq!(
        l.heal_object("mpu", "big/file", None)
            .await
            .unwrap()
            .healed_drives,
        vec![0, 1]
    );
    wipe_bucket(&ds[2], "mpu");
    wipe_bucket(&ds[3], "mpu");
    assert_eq!(get(&l, "mpu", "big/file").await.unwrap(), whole);

    // Abort removes the parts; a small part before the last is refused.
    let id2 = l
        .create_multipart_upload("mpu", "other", &PutOptions::default())
        .await
        .unwrap();
    let a = l
        .upload_part("mpu", "other", &id2, 1, &mut &p3[..], None)
        .await
        .unwrap();
    let b = l
        .upload_part("mpu", "other", &id2, 2, &mut &p3[..], None)
        .await
        .unwrap();
    let r = l
        .complete_multipart_upload(
            "mpu",
            "other",
            &id2,
            &[(1, a.etag.clone()), (2, b.etag.clone())],
        )
        .await;
    assert!(
        matches!(r, Err(Error::EntityTooSmall { part: 1, .. })),
        "{r:?}"
    );
    // The minimum applies to the size the client uploaded, not to the
    // stored size (an encrypted part is stored larger than its plaintext).
    let id3 = l
        .create_multipart_upload("mpu", "sealed", &PutOptions::default())
        .await
        .unwrap();
    let stored = vec![7u8; 5 << 20];
    let a = l
        .upload_part_with(
            "mpu",
            "sealed",
            &id3,
            1,
            &mut &stored[..],
            &PartOptions {
                size: Some(stored.len() as u64),
                actual_size: Some((5 << 20) - 1000),
                etag: None,
            },
        )
        .await
        .unwrap();
    assert_eq!((a.size, a.actual_size), (5 << 20, (5 << 20) - 1000));
    let b = l
        .upload_part("mpu", "sealed", &id3, 2, &mut &p3[..], None)
        .await
        .unwrap();
    let r = l
        .complete_multipart_upload("mpu", "sealed", &id3, &[(1, a.etag), (2, b.etag)])
        .await;
    assert!(
        matches!(
            r,
            Err(Error::EntityTooSmall {
                part: 1,
                size: 5241880
            })
        ),
        "{r:?}"
    );
    l.abort_multipart_upload("mpu", "sealed", &id3)
        .await
        .unwrap();
    l.abort_multipart_upload("mpu", "other", &id2)
        .await
        .unwrap();
    assert!(matches!(
        l.upload_part("mpu", "other", &id2, 3, &mut &p3[..], None)
            .await,
        Err(Error::NoSuchUpload(_))
    ));
    for d in &ds {
        let left = std::fs::read_dir(d.join(".minio.sys/multipart"))
            .unwrap()
            .count();
        assert_eq!(left, 0, "multipart area of {} not cleaned", d.display());
    }
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

/// A part whose ETag the caller's reader gives (an SSE-S3 part's ETag is
/// the MD5 of its plaintext, not of the ciphertext stored): that ETag is
/// answered, listed, checked on completion and goes into the object's
/// ETag; a reader that ends without one fails the part and leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_caller_given_part_etags() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("mpu").await.unwrap();
    let id = l
        .create_multipart_upload("mpu", "given", &PutOptions::default())
        .await
        .unwrap();
    let (p1, p2) = (data(5 << 20, 11), data(4321, 12));
    let given = [
        "0123456789abcdef0123456789abcdef",
        "fedcba9876543210fedcba9876543210",
    ];
    let mut parts = Vec::new();
    for (n, (body, etag)) in [(&p1, given[0]), (&p2, given[1])].into_iter().enumerate() {
        let slot = object::layer::PartEtag::default();
        // The reader sets it when the body ends: here, before the call.
        *slot.lock().unwrap() = Some(etag.to_owned());
        let opts = PartOptions {
            size: Some(body.len() as u64),
            actual_size: None,
            etag: Some(slot),
        };
        let p = l
            .upload_part_with("mpu", "given", &id, n as i64 + 1, &mut &body[..], &opts)
            .await
            .unwrap();
        assert_eq!(p.etag, etag);
        assert_eq!(p.size, body.len() as u64);
        parts.push((p.number, p.etag));
    }
    let listed: Vec<String> = l
        .list_parts("mpu", "given", &id)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.etag)
        .collect();
    assert_eq!(listed, given);
    // No ETag from the reader (or not 32 hex digits): the part fails.
    for bad in [None, Some("not-an-etag".to_owned())] {
        let opts = PartOptions {
            etag: Some(std::sync::Arc::new(std::sync::Mutex::new(bad))),
            ..Default::default()
        };
        let r = l
            .upload_part_with("mpu", "given", &id, 3, &mut &p2[..], &opts)
            .await;
        assert!(matches!(r, Err(Error::Internal(_))), "{r:?}");
    }
    // The MD5 of the stored bytes does not complete the upload.
    let wrong = hex::encode(Md5::digest(&p1));
    let r = l
        .complete_multipart_upload("mpu", "given", &id, &[(1, wrong), (2, given[1].into())])
        .await;
    assert!(matches!(r, Err(Error::InvalidPart(_))), "{r:?}");
    let info = l
        .complete_multipart_upload("mpu", "given", &id, &parts)
        .await
        .unwrap();
    let mut md5 = Md5::new();
    for e in given {
        md5.update(hex::decode(e).unwrap());
    }
    assert_eq!(info.etag, format!("{}-2", hex::encode(md5.finalize())));
    let mut got = Vec::new();
    l.get_object("mpu", "given", &GetOptions::default(), &mut got)
        .await
        .unwrap();
    assert_eq!(got, [p1, p2].concat());
    for d in &ds {
        let left = staging_leftovers(d);
        assert!(
            left.is_empty(),
            "tmp area of {} not cleaned: {left:?}",
            d.display()
        );
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
