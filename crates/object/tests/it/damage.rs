//! Damage and its repair: drives lost and healed, bitrot found,
//! reconstructed and healed, write quorums with drives offline, every loss
//! pattern of an 8-drive set, reads queueing heal requests, and the
//! scanner healing a replaced drive at a bounded rate.

use std::sync::Arc;
use std::time::Duration;

use object::layer::{Error, GetOptions, PutOptions, VersionSel};

use crate::support::*;

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

    // A drive lacking the version and another's corrupt record: the heal
    // rebuilds the missing drive from verified shards and checks only the
    // others' file sizes; the next heal, with every drive holding the
    // version, reads every record and rebuilds the corrupt one.
    let files = part_files(&ds[3], "rot", "big");
    let mut bytes = std::fs::read(&files[0]).unwrap();
    bytes[200] ^= 0x01;
    std::fs::write(&files[0], &bytes).unwrap();
    wipe_bucket(&ds[1], "rot");
    let h = l.heal_object("rot", "big", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![1]);
    assert_eq!(std::fs::read(&files[0]).unwrap(), bytes, "not read twice");
    let h = l.heal_object("rot", "big", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![3]);
    assert_ne!(std::fs::read(&files[0]).unwrap(), bytes);
    let h = l.heal_object("rot", "big", None).await.unwrap();
    assert!(h.healed_drives.is_empty());
    // The wiped drive also lost "small": heal it back.
    let h = l.heal_object("rot", "small", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![1]);

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

/// Every subset of at most 4 of 8 drives (EC 4+4: 162 subsets) made empty:
/// every object reads bit for bit, and exactly the lost drives are
/// reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_loss_pattern_of_an_8_drive_set() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 8);
    let aside = tmp.path().join("aside");
    std::fs::create_dir_all(&aside).unwrap();
    let l = open(&ds).await;
    l.make_bucket("all").await.unwrap();
    let objs: Vec<(String, Vec<u8>)> = [1usize, 300_000, (2 << 20) + 3]
        .iter()
        .enumerate()
        .map(|(i, &s)| (format!("o{i}"), data(s, 100 + i as u64)))
        .collect();
    for (k, b) in &objs {
        put(&l, "all", k, b).await;
    }
    let mut patterns = 0;
    for mask in 1u32..256 {
        let lost: Vec<usize> = (0..8).filter(|d| mask & (1 << d) != 0).collect();
        if lost.len() > 4 {
            continue;
        }
        patterns += 1;
        for &d in &lost {
            std::fs::rename(ds[d].join("all"), aside.join(format!("d{d}"))).unwrap();
            std::fs::create_dir(ds[d].join("all")).unwrap();
        }
        for (k, b) in &objs {
            let mut out = Vec::new();
            let (_, report) = l
                .get_object_report("all", k, &GetOptions::default(), &mut out)
                .await
                .unwrap_or_else(|e| panic!("{k} with {lost:?} lost: {e}"));
            assert!(out == *b, "{k} with {lost:?} lost: wrong bytes");
            assert_eq!(report.bad_drives, lost, "{k}");
        }
        for &d in &lost {
            std::fs::remove_dir(ds[d].join("all")).unwrap();
            std::fs::rename(aside.join(format!("d{d}")), ds[d].join("all")).unwrap();
        }
    }
    assert_eq!(patterns, 8 + 28 + 56 + 70);
    // Five lost: an error, never wrong bytes.
    for (d, dir) in ds.iter().enumerate().take(5) {
        std::fs::rename(dir.join("all"), aside.join(format!("d{d}"))).unwrap();
        std::fs::create_dir(dir.join("all")).unwrap();
    }
    for (k, _) in &objs {
        assert!(
            get(&l, "all", k).await.is_err(),
            "{k} read with 5 of 8 lost"
        );
    }
}

/// A read that meets damage queues the object version for healing; the
/// queue is public, so a healer other than the built-in scanner can drain
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_reads_queue_heal_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = Arc::new(open(&ds).await);
    l.make_bucket("hqq").await.unwrap();
    let body = data(3 << 20, 1);
    put(&l, "hqq", "k", &body).await;
    assert_eq!(get(&l, "hqq", "k").await.unwrap(), body);
    assert_eq!(l.heal_queue_len(), 0);
    assert!(
        l.try_next_heal_request().is_none(),
        "a clean read queues nothing"
    );

    let waiter = {
        let l = l.clone();
        tokio::spawn(async move { l.next_heal_request().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::remove_dir_all(ds[1].join("hqq/k")).unwrap();
    assert_eq!(get(&l, "hqq", "k").await.unwrap(), body);
    let req = tokio::time::timeout(Duration::from_secs(120), waiter)
        .await
        .expect("no heal request")
        .unwrap();
    assert_eq!(
        (req.bucket.as_str(), req.key.as_str(), req.version),
        ("hqq", "k", Some(VersionSel::Null))
    );
    assert_eq!(req.bad_drives, vec![1]);

    std::fs::remove_dir_all(ds[2].join("hqq/k")).unwrap();
    assert_eq!(get(&l, "hqq", "k").await.unwrap(), body);
    let req = l.try_next_heal_request().expect("queued");
    assert_eq!(req.bad_drives, vec![1, 2]);
    assert!(l.try_next_heal_request().is_none());
    let healed = l
        .heal_object(&req.bucket, &req.key, req.version)
        .await
        .unwrap();
    assert_eq!(healed.healed_drives, vec![1, 2]);
    assert_eq!(get(&l, "hqq", "k").await.unwrap(), body);
    assert!(l.try_next_heal_request().is_none());
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
