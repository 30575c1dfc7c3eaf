//! Deployment shapes: pools (routing by free space, joining a deployment,
//! strangers refused), legacy distribution algorithms, storage classes,
//! one- and two-directory deployments, both drive backends, and restarts
//! that check the drives' formats.

use std::sync::Arc;

use drive::{Drive, DriveError, LocalDriveConfig};
use object::layer::{
    Error, GetOptions, LayerOptions, ListOptions, ObjectLayer, PutOptions, Range, VersionSel,
};

use crate::support::*;

/// Two pools: a new key goes to the pool with the most free space, an
/// existing key stays in its pool (overwrites, new versions, delete
/// markers), multipart uploads are found in their pool, and reads,
/// listings and a reopen see both pools as one namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_route_new_keys_by_free_space_and_keep_old_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let pool_dirs = [
        dirs(&tmp.path().join("a"), 4),
        dirs(&tmp.path().join("b"), 4),
    ];
    let mut pools = Vec::new();
    let mut wrapped: Vec<Vec<Arc<CommitFault>>> = Vec::new();
    for ds in &pool_dirs {
        let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
        let mut w = Vec::new();
        for d in ds {
            let f = CommitFault::open(d).await;
            w.push(f.clone());
            drives.push(f);
        }
        pools.push(drives);
        wrapped.push(w);
    }
    let set_free = |pool: usize, free: u64| {
        for d in &wrapped[pool] {
            d.set_free(free);
        }
    };
    set_free(0, 2 << 30);
    set_free(1, 1 << 30);
    let l = ObjectLayer::open_pools(pools, LayerOptions::default())
        .await
        .unwrap();
    assert_eq!((l.pool_count(), l.sets().len()), (2, 2));
    assert_eq!(l.pool_sets(1).len(), 1);
    l.make_bucket("pools").await.unwrap();
    let exists = |pool: usize, key: &str| {
        pool_dirs[pool][0]
            .join("pools")
            .join(key)
            .join("xl.meta")
            .exists()
    };
    let old = data(3 << 20, 1);
    put(&l, "pools", "old", &old).await;
    assert!(exists(0, "old") && !exists(1, "old"));

    // Pool 1 now has more room: new keys go there, "old" stays put.
    set_free(0, 1 << 30);
    set_free(1, 2 << 30);
    let new = data(1000, 2);
    put(&l, "pools", "new", &new).await;
    assert!(exists(1, "new") && !exists(0, "new"));
    let old2 = data((1 << 20) + 1, 3);
    put(&l, "pools", "old", &old2).await;
    assert!(
        exists(0, "old") && !exists(1, "old"),
        "an overwrite stays in its pool"
    );
    assert_eq!(get(&l, "pools", "old").await.unwrap(), old2);
    assert_eq!(get(&l, "pools", "new").await.unwrap(), new);
    let listed = l
        .list_objects("pools", &ListOptions::default())
        .await
        .unwrap();
    let keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["new", "old"]);

    // Versions and delete markers stay with their key.
    l.set_bucket_versioning("pools", true).await.unwrap();
    let v = put(&l, "pools", "old", &old).await;
    let dm = l.delete_object("pools", "old", None).await.unwrap();
    assert!(dm.delete_marker);
    assert!(!exists(1, "old"));
    assert!(matches!(
        get(&l, "pools", "old").await,
        Err(Error::NoSuchKey { .. })
    ));
    let id = v.version_id.unwrap();
    assert_eq!(
        get_version(&l, "pools", "old", VersionSel::Id(id))
            .await
            .unwrap(),
        old
    );
    l.delete_object("pools", "old", dm.version_id.map(VersionSel::Id))
        .await
        .unwrap();
    assert_eq!(get(&l, "pools", "old").await.unwrap(), old);

    // Multipart: created in the roomier pool, every step finds it.
    let id = l
        .create_multipart_upload("pools", "mp", &PutOptions::default())
        .await
        .unwrap();
    let p1 = data(5 << 20, 4);
    let p2 = data(1234, 5);
    let e1 = l
        .upload_part("pools", "mp", &id, 1, &mut &p1[..], Some(p1.len() as u64))
        .await
        .unwrap();
    let e2 = l
        .upload_part("pools", "mp", &id, 2, &mut &p2[..], None)
        .await
        .unwrap();
    assert_eq!(l.list_parts("pools", "mp", &id).await.unwrap().len(), 2);
    assert_eq!(
        l.list_multipart_uploads("pools", "").await.unwrap().len(),
        1
    );
    l.complete_multipart_upload("pools", "mp", &id, &[(1, e1.etag), (2, e2.etag)])
        .await
        .unwrap();
    assert!(exists(1, "mp"));
    let mut whole = p1.clone();
    whole.extend_from_slice(&p2);
    assert_eq!(get(&l, "pools", "mp").await.unwrap(), whole);
    let id = l
        .create_multipart_upload("pools", "gone", &PutOptions::default())
        .await
        .unwrap();
    l.abort_multipart_upload("pools", "gone", &id)
        .await
        .unwrap();
    assert!(matches!(
        l.list_parts("pools", "gone", &id).await,
        Err(Error::NoSuchUpload(_))
    ));

    // Reopened on plain directories: one namespace again.
    drop(l);
    let l = ObjectLayer::open_pool_dirs(&pool_dirs, LayerOptions::default())
        .await
        .unwrap();
    assert_eq!(l.pool_count(), 2);
    assert!(l.bucket_versioning("pools").await.unwrap());
    assert_eq!(get(&l, "pools", "old").await.unwrap(), old);
    assert_eq!(get(&l, "pools", "new").await.unwrap(), new);
    assert_eq!(get(&l, "pools", "mp").await.unwrap(), whole);
}

/// A pool added to a deployment is formatted with its deployment id and
/// distribution and gets its buckets; a pool of another deployment is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_join_a_deployment_and_strangers_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = dirs(&tmp.path().join("a"), 4);
    let b = dirs(&tmp.path().join("b"), 6);
    let c = dirs(&tmp.path().join("c"), 4);
    let body = data(2 << 20, 1);
    let id = {
        let l = open(&a).await;
        l.make_bucket("grow").await.unwrap();
        put(&l, "grow", "x", &body).await;
        l.deployment_id()
    };
    {
        let l = ObjectLayer::open_pool_dirs(&[a.clone(), b.clone()], LayerOptions::default())
            .await
            .unwrap();
        assert_eq!(l.deployment_id(), id);
        assert_eq!(l.pool_count(), 2);
        // 4-drive sets give EC:2, which the 6-drive pool carries too.
        assert_eq!(l.storage_class().standard_parity(), 2);
        assert_eq!(get(&l, "grow", "x").await.unwrap(), body);
        for d in &b {
            assert!(d.join("grow").is_dir(), "{}: bucket missing", d.display());
            let f = std::fs::read_to_string(d.join(".minio.sys/format.json")).unwrap();
            assert!(f.contains(&id.to_string()), "{f}");
        }
        let y = data(10, 2);
        put(&l, "grow", "y", &y).await;
        assert_eq!(get(&l, "grow", "y").await.unwrap(), y);
    }
    // The pools in the other order: refused (drives out of place).
    assert!(matches!(
        ObjectLayer::open_pool_dirs(&[b.clone(), a.clone()], LayerOptions::default()).await,
        Err(Error::Layout(_))
    ));
    // A pool of another deployment.
    drop(open(&c).await);
    match ObjectLayer::open_pool_dirs(&[a.clone(), b.clone(), c], LayerOptions::default()).await {
        Err(Error::Layout(m)) => assert!(m.contains("deployment"), "{m}"),
        r => panic!("{:?}", r.map(|l| l.pool_count())),
    }
    // A parity the smaller pool cannot carry.
    assert!(matches!(
        ObjectLayer::open_pool_dirs(
            &[b, a],
            LayerOptions {
                parity: Some(3),
                ..Default::default()
            }
        )
        .await,
        Err(Error::Layout(_))
    ));
}

/// A deployment formatted with the legacy `CRCMOD` distribution keeps
/// hashing keys to sets with CRC-32, as MinIO does for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_distribution_algorithms_are_honoured() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 8);
    let opts = || LayerOptions {
        set_drive_count: Some(4),
        ..Default::default()
    };
    drop(ObjectLayer::open_dirs(&ds, opts()).await.unwrap());
    for d in &ds {
        let p = d.join(".minio.sys/format.json");
        let f = std::fs::read_to_string(&p).unwrap();
        assert!(f.contains("\"SIPMOD+PARITY\""), "{f}");
        std::fs::write(&p, f.replace("\"SIPMOD+PARITY\"", "\"CRCMOD\"")).unwrap();
    }
    let l = ObjectLayer::open_dirs(&ds, opts()).await.unwrap();
    l.make_bucket("crc").await.unwrap();
    for i in 0..12 {
        let key = format!("key-{i}");
        put(&l, "crc", &key, &data(100, i)).await;
        let set = placement::crc32_ieee(key.as_bytes()) as usize % 2;
        for (d, dir) in ds.iter().enumerate() {
            assert_eq!(
                dir.join("crc").join(&key).join("xl.meta").exists(),
                d / 4 == set,
                "{key} on drive {d}"
            );
        }
    }
    // A pool added to it is formatted CRCMOD too.
    drop(l);
    let more = dirs(&tmp.path().join("more"), 4);
    let l = ObjectLayer::open_pool_dirs(&[ds.clone(), more.clone()], opts())
        .await
        .unwrap();
    assert_eq!(l.pool_count(), 2);
    let f = std::fs::read_to_string(more[0].join(".minio.sys/format.json")).unwrap();
    assert!(f.contains("\"CRCMOD\""), "{f}");
}

/// `x-amz-storage-class: REDUCED_REDUNDANCY` selects the RRS parity (for
/// PUTs and multipart uploads), anything but the two classes is refused,
/// and parities that do not fit the sets are refused at open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_classes_choose_the_parity() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 8);
    let l = open(&ds).await;
    assert_eq!(l.storage_class().standard_parity(), 4);
    assert_eq!(l.storage_class().rrs_parity(), 1);
    l.make_bucket("scl").await.unwrap();
    let body = data(3 << 20, 1);
    let with_class = |class: &str| PutOptions {
        size: Some(body.len() as u64),
        metadata: vec![("X-Amz-Storage-Class".into(), class.into())],
        ..Default::default()
    };
    for (class, parity) in [("STANDARD", 4), ("REDUCED_REDUNDANCY", 1)] {
        let key = format!("o-{class}");
        l.put_object("scl", &key, &mut &body[..], &with_class(class))
            .await
            .unwrap();
        let h = l.head_object("scl", &key, None).await.unwrap();
        assert_eq!(
            (h.data_shards, h.parity_shards),
            (8 - parity, parity),
            "{class}"
        );
        assert_eq!(
            h.metadata.get("X-Amz-Storage-Class").map(String::as_str),
            Some(class)
        );
        assert_eq!(get(&l, "scl", &key).await.unwrap(), body);
    }
    let r = l
        .put_object("scl", "bad", &mut &body[..], &with_class("GLACIER"))
        .await;
    assert!(matches!(r, Err(Error::InvalidStorageClass(_))), "{r:?}");
    let id = l
        .create_multipart_upload("scl", "mp", &with_class("REDUCED_REDUNDANCY"))
        .await
        .unwrap();
    let e = l
        .upload_part("scl", "mp", &id, 1, &mut &body[..], None)
        .await
        .unwrap();
    l.complete_multipart_upload("scl", "mp", &id, &[(1, e.etag)])
        .await
        .unwrap();
    let h = l.head_object("scl", "mp", None).await.unwrap();
    assert_eq!((h.data_shards, h.parity_shards), (7, 1));
    drop(l);
    for (parity, rrs) in [(Some(5), None), (None, Some(5)), (Some(1), Some(2))] {
        let r = ObjectLayer::open_dirs(
            &ds,
            LayerOptions {
                parity,
                rrs_parity: rrs,
                ..Default::default()
            },
        )
        .await;
        assert!(matches!(r, Err(Error::Layout(_))), "{parity:?} {rrs:?}");
    }
}

/// One directory (MinIO's `xl-single`, EC 1+0) and two (EC 1+1) work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_and_two_directory_deployments() {
    for n in [1, 2] {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path(), n);
        let l = open(&ds).await;
        l.make_bucket("tiny").await.unwrap();
        for size in [0usize, 1, 200_000, (3 << 20) + 5] {
            let body = data(size, size as u64);
            let key = format!("o{size}");
            let info = put(&l, "tiny", &key, &body).await;
            assert_eq!((info.data_shards, info.parity_shards), (1, n - 1));
            assert_eq!(get(&l, "tiny", &key).await.unwrap(), body, "{n}: {size}");
        }
        drop(l);
        let l = open(&ds).await;
        assert_eq!(get(&l, "tiny", "o1").await.unwrap(), data(1, 1));
        if n == 1 {
            let f = std::fs::read_to_string(ds[0].join(".minio.sys/format.json")).unwrap();
            assert!(f.contains("xl-single"), "{f}");
        }
    }
}

/// The PUT/GET/heal paths on each `LocalDrive` backend forced explicitly
/// (the other tests take the automatic choice): sizes around the inline
/// threshold and block boundaries, ranges across blocks, parity-many
/// drives lost, then healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_drive_backends() {
    for backend in [drive::Backend::IoUring, drive::Backend::ThreadPool] {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path(), 4);
        let mut cfg = LocalDriveConfig::default();
        cfg.backend = backend;
        let opts = LayerOptions {
            drive: Some(cfg),
            ..Default::default()
        };
        let l = match ObjectLayer::open_dirs(&ds, opts).await {
            Ok(l) => l,
            Err(Error::Drive(DriveError::BackendUnavailable(why))) => {
                eprintln!("SKIPPED: the {backend:?} backend is unavailable here: {why}");
                continue;
            }
            Err(e) => panic!("{backend:?}: {e}"),
        };
        l.make_bucket("bke").await.unwrap();
        let sizes = [
            0usize,
            1,
            262_144,
            262_145,
            1 << 20,
            (1 << 20) + 1,
            (5 << 20) + 333,
        ];
        let objs: Vec<(String, Vec<u8>)> = sizes
            .iter()
            .map(|&s| (format!("o{s}"), data(s, s as u64 + 7)))
            .collect();
        for (k, b) in &objs {
            let info = put(&l, "bke", k, b).await;
            assert_eq!(info.etag, md5_hex(b), "{backend:?} {k}");
        }
        let (_, big) = objs.last().unwrap();
        let mut out = Vec::new();
        let r = GetOptions {
            version_id: None,
            range: Some(Range::From {
                offset: (1 << 20) - 3,
                length: Some((2 << 20) + 6),
            }),
        };
        l.get_object("bke", &format!("o{}", big.len()), &r, &mut out)
            .await
            .unwrap();
        assert_eq!(out, &big[(1 << 20) - 3..(3 << 20) + 3], "{backend:?}");
        for d in [0, 3] {
            std::fs::remove_dir_all(ds[d].join("bke")).unwrap();
            std::fs::create_dir(ds[d].join("bke")).unwrap();
        }
        for (k, b) in &objs {
            assert!(get(&l, "bke", k).await.unwrap() == *b, "{backend:?} {k}");
            let h = l.heal_object("bke", k, None).await.unwrap();
            assert_eq!(h.healed_drives, vec![0, 3], "{backend:?} {k}");
        }
        for d in [1, 2] {
            std::fs::remove_dir_all(ds[d].join("bke")).unwrap();
            std::fs::create_dir(ds[d].join("bke")).unwrap();
        }
        for (k, b) in &objs {
            assert!(
                get(&l, "bke", k).await.unwrap() == *b,
                "{backend:?} {k} after heal"
            );
        }
    }
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
