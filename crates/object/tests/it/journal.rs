//! The heal journal: a PUT that reaches its quorum with a drive failing is
//! remembered on a drive that took it before it is acknowledged, a heal
//! while the drive still fails says so and keeps the entry, and once the
//! drive works again the journal's healer rebuilds the object on it and
//! removes the entry, without a scanner pass.

use std::sync::Arc;
use std::time::Duration;

use object::layer::{ObjectLayer, ScanOptions, ScannerHandle};

use crate::support::faulty::{Fault, faulty_layer};
use crate::support::*;

fn journal_entries(ds: &[std::path::PathBuf]) -> usize {
    ds.iter()
        .map(|d| {
            std::fs::read_dir(d.join(".minio.sys/tessera/heal"))
                .map(|r| r.count())
                .unwrap_or(0)
        })
        .sum()
}

/// Starts the scanner (and the journal's healer) and waits until the
/// drives' journals are empty; returns the scanner.
async fn drain_journals(l: &Arc<ObjectLayer>, ds: &[std::path::PathBuf]) -> ScannerHandle {
    let scanner = l.spawn_scanner(ScanOptions {
        versions_per_sec: None,
        interval: Duration::from_secs(3600),
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while journal_entries(ds) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(journal_entries(ds), 0);
    scanner
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_missed_a_drive_is_journalled_and_healed_when_it_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, faulty) = faulty_layer(&ds).await;
    let l = Arc::new(l);
    l.make_bucket("jbk").await.unwrap();
    put(&l, "jbk", "whole", &data(3000, 1)).await;
    assert_eq!(
        journal_entries(&ds),
        0,
        "a write on every drive is not journalled"
    );

    faulty[2].set(Fault::Fail);
    let big = data((1 << 20) + 5, 2);
    let small = data(900, 3);
    put(&l, "jbk", "big", &big).await;
    put(&l, "jbk", "small", &small).await;
    assert_eq!(journal_entries(&ds), 2);
    assert_eq!(l.heal_journal_stats().pending, 2);
    assert!(!ds[2].join("jbk/big/xl.meta").exists());

    // A heal while the drive still fails is not whole, and says which
    // drive it could not write.
    let h = l.heal_object("jbk", "big", None).await.unwrap();
    assert_eq!(h.failed_drives, vec![2]);
    assert!(h.healed_drives.is_empty());

    // The healer keeps the entries while the drive fails; the scanner's
    // pass could not make its three versions whole either and hands them
    // to the healer too (in memory: nothing more on disk).
    let scanner = l.spawn_scanner(ScanOptions {
        versions_per_sec: None,
        interval: Duration::from_secs(3600),
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(l.heal_journal_stats().pending, 2 + 3);
    assert_eq!(journal_entries(&ds), 2);

    // ... and heals them once it works again.
    faulty[2].set(Fault::None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while l.heal_journal_stats().pending > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(l.heal_journal_stats().pending, 0);
    assert_eq!(journal_entries(&ds), 0);
    assert!(ds[2].join("jbk/big/xl.meta").exists());
    assert!(ds[2].join("jbk/small/xl.meta").exists());
    drop(scanner);

    // The healed drive serves its shards: with two others failing, the
    // reads need it.
    faulty[0].set(Fault::Fail);
    assert_eq!(get(&l, "jbk", "big").await.unwrap(), big);
    assert_eq!(get(&l, "jbk", "small").await.unwrap(), small);
}

/// Entries written by another layer over the same drives (another node,
/// or this process before a restart) are found by the sweep at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_left_by_an_earlier_run_are_healed_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    {
        let (l, faulty) = faulty_layer(&ds).await;
        l.make_bucket("jbk").await.unwrap();
        faulty[1].set(Fault::Fail);
        put(&l, "jbk", "k", &data(200_000, 4)).await;
        assert_eq!(journal_entries(&ds), 1);
    }
    let l = Arc::new(
        ObjectLayer::open_dirs(&ds, Default::default())
            .await
            .unwrap(),
    );
    assert_eq!(
        l.heal_journal_stats().pending,
        0,
        "nothing known before the sweep"
    );
    let _scanner = drain_journals(&l, &ds).await;
    assert!(ds[1].join("jbk/k/xl.meta").exists());
    let s = l.heal_status();
    assert_eq!(
        (s.journal_items_healed, s.journal_bytes_healed),
        (1, 200_000)
    );
}

/// A drive replaced by an empty one is formatted into its place at open,
/// and its heal (the first full scanner pass) is reported as it goes: the
/// versions and bytes rebuilt onto it, finished when the pass ends. The
/// journal's heals are counted apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_drive_s_heal_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let sizes = [0usize, 900, 200_000, (1 << 20) + 5, 3_000_000];
    {
        let l = open(&ds).await;
        l.make_bucket("rbk").await.unwrap();
        l.set_bucket_versioning("rbk", true).await.unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            put(&l, "rbk", &format!("k{i}"), &data(n, i as u64)).await;
        }
        // A delete marker: a version with no bytes.
        l.delete_object("rbk", "k0", None).await.unwrap();
        assert!(l.heal_status().drives.is_empty(), "no drive was replaced");
    }
    std::fs::remove_dir_all(&ds[1]).unwrap();
    std::fs::create_dir_all(&ds[1]).unwrap();
    let l = Arc::new(open(&ds).await);
    let s = l.heal_status();
    assert_eq!(s.drives.len(), 1, "{s:?}");
    let d = &s.drives[0];
    assert_eq!(
        (d.set, d.disk, d.items_healed, d.finished),
        (0, 1, 0, false)
    );

    let scanner = l.spawn_scanner(ScanOptions {
        versions_per_sec: None,
        interval: Duration::from_secs(3600),
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while scanner.progress().cycles == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(scanner.progress().cycles, 1);
    let s = l.heal_status();
    let d = &s.drives[0];
    // Five objects and the marker, every byte of the objects.
    assert_eq!(d.items_healed, sizes.len() as u64 + 1, "{d:?}");
    assert_eq!(d.bytes_done, sizes.iter().sum::<usize>() as u64);
    assert_eq!((d.items_failed, d.bytes_failed), (0, 0));
    assert!(d.finished && d.last_update >= d.started, "{d:?}");
    assert_eq!(s.scanned, sizes.len() as u64 + 1);
    assert_eq!((s.journal_items_healed, s.journal_pending), (0, 0));
    drop(scanner);
    // Healed for real: the other drives' shards are not needed.
    std::fs::remove_dir_all(ds[0].join("rbk")).unwrap();
    for (i, &n) in sizes.iter().enumerate().skip(1) {
        assert_eq!(
            get(&l, "rbk", &format!("k{i}")).await.unwrap(),
            data(n, i as u64)
        );
    }
}

/// Deletes and metadata edits that miss a drive are journalled like
/// writes: once the drive is back, the healer removes the version it still
/// holds (no quorum agrees on it), gives it the delete marker, and the
/// edited metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_and_edits_that_missed_a_drive_are_healed_when_it_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let (l, faulty) = faulty_layer(&ds).await;
    let l = Arc::new(l);
    l.make_bucket("dbk").await.unwrap();
    l.make_bucket("vbk").await.unwrap();
    l.set_bucket_versioning("vbk", true).await.unwrap();
    let big = data((1 << 20) + 5, 7);
    put(&l, "dbk", "gone", &big).await;
    put(&l, "dbk", "tagged", &data(3000, 8)).await;
    put(&l, "vbk", "marked", &data(3000, 9)).await;
    let data_dirs = |key: &str| {
        std::fs::read_dir(ds[3].join("dbk").join(key))
            .map(|r| r.count())
            .unwrap_or(0)
    };
    assert_eq!(data_dirs("gone"), 2, "xl.meta and the data directory");

    faulty[3].set(Fault::Fail);
    l.delete_object("dbk", "gone", None).await.unwrap();
    l.update_object_metadata("dbk", "tagged", None, &|m| {
        m.insert("X-Amz-Tagging", "edited=yes".into());
    })
    .await
    .unwrap();
    let marker = l.delete_object("vbk", "marked", None).await.unwrap();
    assert!(marker.delete_marker);
    assert_eq!(journal_entries(&ds), 3);
    assert_eq!(l.heal_journal_stats().pending, 3);

    faulty[3].set(Fault::None);
    let _scanner = drain_journals(&l, &ds).await;
    // The deleted object's copy and data are gone from the drive.
    assert_eq!(data_dirs("gone"), 0);
    // The edit and the marker reached it.
    let meta = |b: &str, k: &str| std::fs::read(ds[3].join(b).join(k).join("xl.meta")).unwrap();
    let tagged = meta("dbk", "tagged");
    assert!(tagged.windows(10).any(|w| w == b"edited=yes"));
    let marked = meta("vbk", "marked");
    let marked = object::xlmeta::XlMeta::decode(&marked).unwrap();
    assert_eq!(marked.versions().len(), 2);
    // With the other drives failing, the healed one answers as they did.
    faulty[0].set(Fault::Fail);
    faulty[1].set(Fault::Fail);
    assert!(get(&l, "dbk", "gone").await.unwrap_err().is_not_found());
    let head = l.head_object("dbk", "tagged", None).await.unwrap();
    assert_eq!(
        head.metadata.get("X-Amz-Tagging").map(String::as_str),
        Some("edited=yes")
    );
    assert!(get(&l, "vbk", "marked").await.unwrap_err().is_not_found());
}
