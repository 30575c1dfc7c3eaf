//! Commit failures: a PUT whose commit steps fail on too many drives is
//! rolled back everywhere, the previous version still reads whole, and
//! nothing of the new one is left.

use std::sync::Arc;

use drive::Drive;
use object::layer::{Error, LayerOptions, ObjectLayer};

use crate::support::*;

/// Shards reach every drive, but two of four drives fail to commit (below
/// the write quorum of 3): the PUT fails, the drives that did commit are
/// rolled back, the previous version still reads whole, and neither the new
/// data directory nor anything in the temp area remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_commit_rolls_back_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let mut faults = Vec::new();
    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    for d in &ds {
        let f = CommitFault::open(d).await;
        faults.push(f.clone());
        drives.push(f);
    }
    let l = ObjectLayer::open(drives, LayerOptions::default())
        .await
        .unwrap();
    l.make_bucket("rbk").await.unwrap();
    let old_big = data((2 << 20) + 11, 1);
    let old_small = data(777, 2);
    put(&l, "rbk", "big", &old_big).await;
    put(&l, "rbk", "small", &old_small).await;
    let before: Vec<Vec<String>> = ds.iter().map(|d| data_dirs(d, "rbk", "big")).collect();
    let meta_before: Vec<Vec<u8>> = ds
        .iter()
        .map(|d| std::fs::read(d.join("rbk/small/xl.meta")).unwrap())
        .collect();
    faults[1].arm(true);
    faults[2].arm(true);
    for (key, len) in [("big", 3 << 20), ("small", 10), ("new", 5 << 20)] {
        let body = data(len, 9);
        let r = l.put_object("rbk", key, &mut &body[..], &sized(len)).await;
        assert!(matches!(r, Err(Error::WriteQuorum { .. })), "{key}: {r:?}");
    }
    faults[1].arm(false);
    faults[2].arm(false);
    assert_eq!(get(&l, "rbk", "big").await.unwrap(), old_big);
    assert_eq!(get(&l, "rbk", "small").await.unwrap(), old_small);
    assert!(matches!(
        l.head_object("rbk", "new", None).await,
        Err(Error::NoSuchKey { .. })
    ));
    for (i, d) in ds.iter().enumerate() {
        assert_eq!(data_dirs(d, "rbk", "big"), before[i], "drive {i}");
        assert!(data_dirs(d, "rbk", "new").is_empty(), "drive {i}");
        assert!(!d.join("rbk/new/xl.meta").exists(), "drive {i}");
        assert_eq!(
            std::fs::read(d.join("rbk/small/xl.meta")).unwrap(),
            meta_before[i],
            "drive {i}: xl.meta restored byte for byte"
        );
        assert!(
            staging_leftovers(d).is_empty(),
            "drive {i}: {:?}",
            staging_leftovers(d)
        );
    }
    // Nothing to heal: every drive agrees on the old versions.
    for key in ["big", "small"] {
        assert!(
            l.heal_object("rbk", key, None)
                .await
                .unwrap()
                .healed_drives
                .is_empty()
        );
    }
}
