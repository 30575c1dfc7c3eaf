//! MinIO's inline rule: multi-block inline objects on wide sets, the
//! threshold by versioning state, and overwrites that leave no stale data
//! behind (inline or streamed).

use object::layer::{GetOptions, PutOptions, Range};

use crate::support::*;

/// 16 drives take EC 12+4: MinIO inlines an object whose shard data is at
/// most 128 KiB, here up to 1 MiB + 12 * (128 KiB - ceil(1 MiB / 12))
/// = 1,572,856 bytes, two erasure blocks. Such objects are written inline
/// (each drive's payload is its whole bitrot stream), read back with
/// drives lost, verified record by record, and healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_block_inline_objects_on_a_wide_set() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 16);
    let l = open(&ds).await;
    assert_eq!(l.sets().len(), 1);
    l.make_bucket("wide").await.unwrap();
    let max_inline = 1_048_576 + 12 * (131_072 - 87_382);
    assert_eq!(max_inline, 1_572_856);
    let cases = [
        (1_048_576usize, true),
        (1_048_577, true),
        (max_inline, true),
        (max_inline + 1, false),
    ];
    for (i, &(size, inline)) in cases.iter().enumerate() {
        let body = data(size, 40 + i as u64);
        for (key, opts) in [
            (format!("known/{size}"), sized(size)),
            (format!("unknown/{size}"), PutOptions::default()),
        ] {
            let info = l
                .put_object("wide", &key, &mut &body[..], &opts)
                .await
                .unwrap();
            assert_eq!(info.etag, md5_hex(&body));
            assert_eq!(info.inline, inline, "{key}");
            let head = l.head_object("wide", &key, None).await.unwrap();
            assert_eq!((head.inline, head.size), (inline, size as u64), "{key}");
            assert_eq!(data_dirs(&ds[0], "wide", &key).is_empty(), inline, "{key}");
            assert_eq!(get(&l, "wide", &key).await.unwrap(), body, "{key}");
            // A range inside the second block.
            let mut out = Vec::new();
            let r = GetOptions {
                version_id: None,
                range: Some(Range::From {
                    offset: 1_048_570,
                    length: Some(20),
                }),
            };
            l.get_object("wide", &key, &r, &mut out).await.unwrap();
            assert_eq!(out, &body[1_048_570..size.min(1_048_590)], "{key}");
        }
    }

    // Damage: the payload's last byte (the last record of one shard) on
    // one drive, the whole object on three others (four bad drives, the
    // parity count). Reads stay intact; heal repairs all four.
    let key = format!("known/{max_inline}");
    let body = data(max_inline, 42);
    let victim = ds[5].join("wide").join(&key).join("xl.meta");
    let mut bytes = std::fs::read(&victim).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap();
    for d in [0, 1, 2] {
        std::fs::remove_dir_all(ds[d].join("wide").join(&key)).unwrap();
    }
    let mut out = Vec::new();
    let (_, report) = l
        .get_object_report("wide", &key, &GetOptions::default(), &mut out)
        .await
        .unwrap();
    assert_eq!(out, body);
    // Data shards are read first and reconstruction stops at k intact
    // shards, so the corrupt drive is reported only if it was read: the
    // lost drives always are.
    for d in [0, 1, 2] {
        assert!(report.bad_drives.contains(&d), "{report:?}");
    }
    let healed = l.heal_object("wide", &key, None).await.unwrap();
    assert_eq!(healed.healed_drives, vec![0, 1, 2, 5]);
    assert!(
        l.heal_object("wide", &key, None)
            .await
            .unwrap()
            .healed_drives
            .is_empty(),
        "a healed multi-block inline object verifies clean"
    );
    assert_eq!(std::fs::read(&victim).unwrap().len(), bytes.len());
    // Now any four other drives can go.
    for d in [12, 13, 14, 15] {
        std::fs::remove_dir_all(ds[d].join("wide").join(&key)).unwrap();
    }
    assert_eq!(get(&l, "wide", &key).await.unwrap(), body);
}

/// The versioned threshold is an eighth: 16 KiB of shard, 32 KiB of
/// object on 2 data shards. Suspended buckets use the full 128 KiB, as
/// MinIO's `opts.Versioned` is false for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_thresholds_by_versioning_state() {
    let tmp = tempfile::tempdir().unwrap();
    let l = open(&dirs(tmp.path(), 4)).await;
    for (bucket, state, max) in [
        ("plain", None, 262_144usize),
        ("versioned", Some(true), 32_768),
        ("suspended", Some(false), 262_144),
    ] {
        l.make_bucket(bucket).await.unwrap();
        if let Some(enabled) = state {
            l.set_bucket_versioning(bucket, enabled).await.unwrap();
        }
        for (size, inline) in [(0, true), (1, true), (max, true), (max + 1, false)] {
            let body = data(size, size as u64);
            let key = format!("o{size}");
            let info = put(&l, bucket, &key, &body).await;
            assert_eq!(info.inline, inline, "{bucket}/{key}");
            let head = l.head_object(bucket, &key, None).await.unwrap();
            assert_eq!(head.inline, inline, "{bucket}/{key}");
            assert_eq!(get(&l, bucket, &key).await.unwrap(), body);
        }
    }
}

/// Overwriting the null version switches between inline and streamed
/// storage without leaving the old payload in `xl.meta` or the old data
/// directory on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overwrites_leave_no_stale_data() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("ovw").await.unwrap();
    let small = data(100_000, 1);
    let big = data(3 << 20, 2);
    put(&l, "ovw", "k", &small).await;
    let inline_len = std::fs::metadata(ds[0].join("ovw/k/xl.meta"))
        .unwrap()
        .len();
    assert!(inline_len > 50_000, "{inline_len}");
    put(&l, "ovw", "k", &big).await;
    for d in &ds {
        let len = std::fs::metadata(d.join("ovw/k/xl.meta")).unwrap().len();
        assert!(len < 4096, "stale inline payload: xl.meta has {len} bytes");
        assert_eq!(data_dirs(d, "ovw", "k").len(), 1);
    }
    put(&l, "ovw", "k", &big).await;
    for d in &ds {
        assert_eq!(data_dirs(d, "ovw", "k").len(), 1, "old data dir removed");
    }
    put(&l, "ovw", "k", &small).await;
    for d in &ds {
        assert!(data_dirs(d, "ovw", "k").is_empty(), "old data dir removed");
    }
    assert_eq!(get(&l, "ovw", "k").await.unwrap(), small);
}
