//! Heals on demand: what a heal reports of every drive (before and after,
//! and in a dry run, which writes nothing), heal sequences over a bucket
//! or a prefix, and the scanner's speed set while heals run and kept on
//! the drives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use object::layer::{
    DriveHealState, HealItem, HealItemKind, HealScope, HealSequence, ObjectLayer, ScanSpeed,
    VersionSel,
};

use crate::support::*;

use DriveHealState::{Corrupt, Missing, Ok as Intact};

/// Every report of `seq` until it ends, and how it ended.
async fn drain(mut seq: HealSequence) -> (Vec<HealItem>, Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut items = Vec::new();
    loop {
        let (got, end) = seq.take(100);
        items.extend(got);
        if let Some(end) = end {
            return (items, end);
        }
        assert!(Instant::now() < deadline, "heal did not end: {items:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn states(item: &HealItem) -> (Vec<DriveHealState>, Vec<DriveHealState>) {
    (
        item.drives.iter().map(|d| d.before).collect(),
        item.drives.iter().map(|d| d.after).collect(),
    )
}

fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_reports_each_drive_and_a_dry_run_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("stt").await.unwrap();
    let big = data(3 << 20, 1);
    put(&l, "stt", "big", &big).await;
    let small = data(3000, 2);
    put(&l, "stt", "small", &small).await;

    let h = l.heal_object("stt", "big", None).await.unwrap();
    assert_eq!(h.before, vec![Intact; 4]);
    assert_eq!(h.after, vec![Intact; 4]);
    assert_eq!((h.data_blocks, h.parity_blocks, h.bytes), (2, 2, 3 << 20));

    // Drive 0's copy of "big" removed, a record of drive 2's flipped.
    std::fs::remove_dir_all(ds[0].join("stt/big")).unwrap();
    let files = part_files(&ds[2], "stt", "big");
    let mut bytes = std::fs::read(&files[0]).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&files[0], &bytes).unwrap();
    let on_disk: Vec<_> = ds.iter().map(|d| tree(&d.join("stt"))).collect();
    let h = l.heal_object_with("stt", "big", None, true).await.unwrap();
    assert_eq!(h.before, vec![Missing, Intact, Intact, Intact]);
    assert_eq!(h.after, h.before);
    assert!(h.healed_drives.is_empty() && h.failed_drives.is_empty());
    let now: Vec<_> = ds.iter().map(|d| tree(&d.join("stt"))).collect();
    assert!(now == on_disk, "a dry run wrote to the drives");

    // The heal rebuilds drive 0 and checks only the others' sizes; the
    // next one reads every record and finds drive 2's.
    let h = l.heal_object("stt", "big", None).await.unwrap();
    assert_eq!(h.healed_drives, vec![0]);
    assert_eq!(h.after, vec![Intact; 4]);
    let h = l.heal_object_with("stt", "big", None, true).await.unwrap();
    assert_eq!(h.before, vec![Intact, Intact, Corrupt, Intact]);
    assert_eq!(std::fs::read(&files[0]).unwrap(), bytes, "dry run rewrote");
    let h = l.heal_object("stt", "big", None).await.unwrap();
    assert_eq!((h.before[2], h.after[2]), (Corrupt, Intact));
    assert_ne!(std::fs::read(&files[0]).unwrap(), bytes);

    // Inline data damaged on one drive, the object missing on another.
    let meta = ds[1].join("stt/small/xl.meta");
    let mut m = std::fs::read(&meta).unwrap();
    let n = m.len();
    m[n - 10] ^= 1;
    std::fs::write(&meta, &m).unwrap();
    std::fs::remove_dir_all(ds[3].join("stt/small")).unwrap();
    let h = l.heal_object("stt", "small", None).await.unwrap();
    assert_eq!(h.before, vec![Intact, Corrupt, Intact, Missing]);
    assert_eq!(h.after, vec![Intact; 4]);
    assert_eq!(h.healed_drives, vec![1, 3]);
    // Only the healed drives are left: everything reads.
    wipe_bucket(&ds[0], "stt");
    wipe_bucket(&ds[2], "stt");
    assert_eq!(get(&l, "stt", "big").await.unwrap(), big);
    assert_eq!(get(&l, "stt", "small").await.unwrap(), small);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_heals_a_bucket_one_level_or_a_prefix_recursively() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = Arc::new(open(&ds).await);
    l.make_bucket("seq").await.unwrap();
    l.set_bucket_versioning("seq", true).await.unwrap();
    let keys = ["a", "b", "dir/c", "dir/sub/d"];
    let mut bodies = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let body = data(200_000 * (i + 1), 10 + i as u64);
        put(&l, "seq", k, &body).await;
        bodies.push(body);
    }
    // A second version of "a": a sequence heals every version.
    let a2 = data(1000, 99);
    put(&l, "seq", "a", &a2).await;
    // Drive 1 loses the bucket altogether.
    std::fs::remove_dir_all(ds[1].join("seq")).unwrap();

    // A dry run reports and writes nothing.
    let (items, end) = drain(l.start_heal(HealScope {
        bucket: Some("seq".into()),
        recursive: true,
        dry_run: true,
        ..HealScope::default()
    }))
    .await;
    end.unwrap();
    assert!(!ds[1].join("seq").exists(), "a dry run made the bucket");
    assert_eq!(items.len(), 1 + keys.len() + 1, "{items:?}");
    assert_eq!(items[0].kind, HealItemKind::Bucket);
    assert_eq!(states(&items[0]).0, vec![Intact, Missing, Intact, Intact]);
    assert_eq!(states(&items[0]).1, states(&items[0]).0);
    for it in &items[1..] {
        assert_eq!(it.kind, HealItemKind::Object);
        assert_eq!(states(it).0[1], Missing, "{it:?}");
        assert_eq!(states(it).1[1], Missing, "{it:?}");
    }

    // One level: the bucket and the keys without a `/`.
    let (items, end) = drain(l.start_heal(HealScope {
        bucket: Some("seq".into()),
        ..HealScope::default()
    }))
    .await;
    end.unwrap();
    assert_eq!(states(&items[0]).1, vec![Intact; 4]);
    assert!(ds[1].join("seq").is_dir());
    let mut healed: Vec<(String, Option<uuid::Uuid>)> = items[1..]
        .iter()
        .map(|i| (i.key.clone(), i.version_id))
        .collect();
    healed.sort();
    assert_eq!(
        healed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["a", "a", "b"]
    );
    assert!(healed.iter().all(|(_, v)| v.is_some()));
    for it in &items[1..] {
        assert_eq!(
            states(it),
            (vec![Intact, Missing, Intact, Intact], vec![Intact; 4])
        );
        assert!(it.error.is_none());
        assert_eq!((it.data_blocks, it.parity_blocks), (2, 2));
    }
    assert!(!ds[1].join("seq/dir").exists(), "one level only");

    // A prefix, recursively.
    let (items, end) = drain(l.start_heal(HealScope {
        bucket: Some("seq".into()),
        prefix: "dir/".into(),
        recursive: true,
        ..HealScope::default()
    }))
    .await;
    end.unwrap();
    let keys_healed: Vec<&str> = items[1..].iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys_healed.len(), 2);
    assert!(keys_healed.contains(&"dir/c") && keys_healed.contains(&"dir/sub/d"));
    // Every object is whole on drive 1: two other drives can go.
    wipe_bucket(&ds[0], "seq");
    wipe_bucket(&ds[2], "seq");
    for (k, b) in keys.iter().zip(&bodies).skip(1) {
        assert_eq!(&get(&l, "seq", k).await.unwrap(), b, "{k}");
    }
    assert_eq!(get(&l, "seq", "a").await.unwrap(), a2);
    let old = l
        .list_object_versions("seq", &Default::default(), None)
        .await
        .unwrap()
        .versions
        .into_iter()
        .find(|v| v.key == "a" && !v.is_latest)
        .unwrap();
    assert_eq!(
        get_version(&l, "seq", "a", VersionSel::Id(old.version_id.unwrap()))
            .await
            .unwrap(),
        bodies[0]
    );

    // A bucket that is not there ends the sequence with the reason.
    let (items, end) = drain(l.start_heal(HealScope {
        bucket: Some("nothere".into()),
        ..HealScope::default()
    }))
    .await;
    assert!(end.is_err(), "{items:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_speed_applies_to_running_heals_and_outlives_the_layer() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = Arc::new(open(&ds).await);
    assert_eq!(l.scan_rate().current(), Some(100));
    l.make_bucket("spd").await.unwrap();
    for i in 0..40 {
        put(&l, "spd", &format!("k{i}"), &data(100, i)).await;
    }
    // One version a second: 40 would take 40 s.
    l.set_scan_speed(Some(ScanSpeed::Slowest)).await.unwrap();
    assert_eq!(l.scan_rate().current(), Some(1));
    let started = Instant::now();
    let mut seq = l.start_heal(HealScope {
        bucket: Some("spd".into()),
        recursive: true,
        ..HealScope::default()
    });
    let mut items = Vec::new();
    while items.len() < 3 {
        items.extend(seq.take(100).0);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The bucket and two versions: the second waited a second.
    assert!(started.elapsed() >= Duration::from_millis(900));
    l.set_scan_speed(Some(ScanSpeed::Fastest)).await.unwrap();
    assert_eq!(l.scan_rate().current(), None);
    let (rest, end) = drain(seq).await;
    end.unwrap();
    assert_eq!(items.len() + rest.len(), 41);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the new speed did not apply: {:?}",
        started.elapsed()
    );

    // Stored on the drives: a layer opened again reads it.
    l.set_scan_speed(Some(ScanSpeed::Slow)).await.unwrap();
    drop(l);
    let l = open(&ds).await;
    assert_eq!(l.scan_rate().speed(), None);
    l.load_scan_speed().await.unwrap();
    assert_eq!(l.scan_rate().speed(), Some(ScanSpeed::Slow));
    assert_eq!(l.scan_rate().current(), Some(10));
    // Reset: the start rate again, here and after a reopen.
    l.set_scan_speed(None).await.unwrap();
    assert_eq!(l.scan_rate().current(), Some(100));
    drop(l);
    let l = open(&ds).await;
    l.load_scan_speed().await.unwrap();
    assert_eq!(l.scan_rate().speed(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_sequence_ends_between_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l: Arc<ObjectLayer> = Arc::new(open(&ds).await);
    l.make_bucket("stop").await.unwrap();
    for i in 0..30 {
        put(&l, "stop", &format!("k{i}"), &data(10, i)).await;
    }
    l.set_scan_speed(Some(ScanSpeed::Slowest)).await.unwrap();
    let seq = l.start_heal(HealScope {
        bucket: Some("stop".into()),
        recursive: true,
        ..HealScope::default()
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    seq.stop();
    let started = Instant::now();
    let (items, end) = drain(seq).await;
    end.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(items.len() < 10, "{}", items.len());
}
