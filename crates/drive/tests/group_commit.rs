//! Group commit of `write_all` (`LocalDriveConfig::group_commit`), in a
//! process of its own: the `syncfs` count is per file system and process,
//! and no other test may add to it here.

use std::sync::Arc;

use drive::format::{SPREAD_VOLUME, TMP_VOLUME};
use drive::{Backend, BackendKind, Drive, LocalDrive, LocalDriveConfig};

mod common;
use common::pattern;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_on_one_file_system_share_their_syncs() {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // io_uring with O_DIRECT shard writes groups; buffered shard writes
    // (the thread pool, or O_DIRECT off) do not.
    for (name, backend, direct) in [
        ("uring", Backend::Auto, true),
        ("uring-buffered", Backend::Auto, false),
        ("pool", Backend::ThreadPool, true),
    ] {
        let mut drives = Vec::new();
        for i in 0..4 {
            let mut cfg = LocalDriveConfig::with_backend(backend);
            cfg.direct_io = direct;
            let root = base.path().join(format!("{name}-{i}"));
            let drive = LocalDrive::open(root, cfg).await.unwrap();
            drive.make_volume("b").await.unwrap();
            drive.make_volume(TMP_VOLUME).await.unwrap();
            drives.push(Arc::new(drive));
        }
        let grouped = direct && drives[0].backend() == BackendKind::IoUring;
        let before = drives[0].group_commit_syncs().unwrap();
        let writes = 4 * 64;
        let mut tasks = Vec::new();
        for w in 0..writes {
            let drive = Arc::clone(&drives[w % 4]);
            tasks.push(tokio::spawn(async move {
                let data = pattern(w as u64, 200 + w);
                drive
                    .write_all("b", &format!("k{w}/xl.meta"), data.clone())
                    .await
                    .unwrap();
                // Acknowledged means readable, whole.
                let got = drive.read_all("b", &format!("k{w}/xl.meta"), 1 << 20).await;
                assert_eq!(got.unwrap(), data);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let syncs = drives[3].group_commit_syncs().unwrap() - before;
        if grouped {
            // One group for the four drives (one file system): each write
            // needs two commits, and sharing made far fewer syncs than
            // that.
            assert!(syncs >= 2, "{name}: {syncs} syncs");
            assert!(
                syncs < writes as u64,
                "{name}: {syncs} syncs for {writes} writes: nothing grouped"
            );
        } else {
            assert_eq!(syncs, 0, "{name}: buffered shard writes, yet grouped");
        }
        for drive in &drives {
            for dir in drive.list_dir(SPREAD_VOLUME, "", 100).await.unwrap() {
                let left = drive.list_dir(SPREAD_VOLUME, &dir, 100).await.unwrap();
                assert!(left.is_empty(), "staging leftovers in {dir}: {left:?}");
            }
        }
    }
}

#[tokio::test]
async fn without_group_commit_each_write_syncs_on_its_own() {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut cfg = LocalDriveConfig::default();
    cfg.group_commit = false;
    let drive = LocalDrive::open(base.path().join("d"), cfg).await.unwrap();
    assert_eq!(drive.group_commit_syncs(), None);
    drive.make_volume("b").await.unwrap();
    drive
        .write_all("b", "k/xl.meta", vec![5; 10])
        .await
        .unwrap();
    assert_eq!(drive.read_all("b", "k/xl.meta", 10).await.unwrap(), [5; 10]);
}
