//! Walks through a [`LocalDrive`](crate::LocalDrive): pages walked ahead
//! are the pages a walk now gives, and `xl.meta` heads are read again only
//! when they may have changed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::cache::{META_MAX_AGE, SETTLED};
use crate::drive::Drive;
use crate::walk::{DriveFs, META_FILE, WalkEntry, WalkOptions, WalkPage};

const VOL: &str = "vol";

/// `n` objects `d/k00000`.. with metadata naming them, a few with keys
/// under them and one a directory object, written behind the drive.
fn build(root: &Path, n: usize) {
    let vol = root.join(VOL);
    for i in 0..n {
        let dir = vol.join(format!("d/k{i:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(META_FILE), format!("meta {i}")).unwrap();
        if i % 50 == 7 {
            let sub = dir.join("sub");
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(META_FILE), format!("sub {i}")).unwrap();
        }
    }
    std::fs::create_dir_all(vol.join("d/k00042x__XLDIR__")).unwrap();
    std::fs::write(vol.join("d/k00042x__XLDIR__").join(META_FILE), b"dir").unwrap();
}

fn opts(prefix: &str, delimiter: Option<&str>, after: Option<&str>, limit: usize) -> WalkOptions {
    WalkOptions {
        volume: VOL.into(),
        prefix: prefix.into(),
        delimiter: delimiter.map(String::from),
        after: after.map(String::from),
        limit,
        meta_head: 4096,
        meta_limit: 1 << 20,
    }
}

async fn drive(root: &Path) -> crate::LocalDrive {
    crate::LocalDrive::open(root.to_path_buf(), Default::default())
        .await
        .unwrap()
}

/// The page the default walk (no cache, nothing ahead) gives.
async fn plain(d: &crate::LocalDrive, o: &WalkOptions) -> WalkPage {
    crate::walk::walk(&mut DriveFs(d), o).await.unwrap()
}

fn served(d: &crate::LocalDrive) -> u64 {
    d.inner.io.blocking.ns.ahead_served.load(Ordering::Relaxed)
}

/// Listings continued from the last entry, from an earlier one (the
/// caller used fewer entries than it asked for) and with another page
/// size, with and without a delimiter: every page is the default
/// walk's, and the pages after the second come from the walk ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_walked_ahead_are_the_pages_walked_now() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path(), 1200);
    let d = drive(tmp.path()).await;
    for (prefix, delimiter) in [
        ("d/", None),
        ("d/", Some("/")),
        ("", None),
        ("d/k00", Some("/")),
    ] {
        let before = served(&d);
        let mut after: Option<String> = None;
        let mut pages = 0;
        let mut all = Vec::new();
        loop {
            // Page sizes 100 to 250; every third continuation backs off
            // by up to 3 entries (inside the kept tail).
            let limit = 100 + 50 * (pages % 4);
            let o = opts(prefix, delimiter, after.as_deref(), limit);
            let got = d.walk(&o).await.unwrap();
            let want = plain(&d, &o).await;
            assert_eq!(
                got.entries, want.entries,
                "{prefix:?} {delimiter:?} page {pages}"
            );
            let mut record = |names: &[WalkEntry]| {
                for e in names {
                    if all.last().is_none_or(|l: &String| l.as_str() < e.name()) {
                        all.push(e.name().to_owned());
                    }
                }
            };
            if got.entries.is_empty() || !got.more {
                assert!(!want.more, "{prefix:?} {delimiter:?} page {pages}");
                record(&got.entries);
                break;
            }
            let back = if pages % 3 == 2 { pages % 4 } else { 0 };
            let i = got.entries.len() - 1 - back.min(got.entries.len() - 1);
            record(&got.entries[..=i]);
            let name = got.entries[i].name();
            // Every fifth page continues from the name without its last
            // character (as ListObjectVersions resumes at a key).
            after = Some(match pages % 5 {
                4 => name[..name.len() - 1].to_owned(),
                _ => name.to_owned(),
            });
            pages += 1;
        }
        let whole = plain(&d, &opts(prefix, delimiter, None, 1_000_000)).await;
        let want: Vec<String> = whole.entries.iter().map(|e| e.name().to_owned()).collect();
        assert_eq!(all, want, "{prefix:?} {delimiter:?}");
        assert!(pages >= 4, "{prefix:?} {delimiter:?}: {pages} pages");
        // The first page starts nothing; every later one is served
        // (in part, when it is larger) from the walk ahead.
        assert!(
            served(&d) - before >= pages as u64 - 1,
            "{prefix:?} {delimiter:?}: {} of {pages} pages served ahead",
            served(&d) - before
        );
    }
}

/// A client that continues from elsewhere than the end of its pages
/// (here: the first entry of each) never takes a walk ahead: after a
/// few are dropped unused, most are not started; once pages continue
/// from their end again, walks ahead serve them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unused_walks_ahead_stop() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path(), 600);
    let d = drive(tmp.path()).await;
    let ns = Arc::clone(&d.inner.io.blocking.ns);
    let mut after = Some("d/k00000".to_owned());
    for page in 0..40 {
        let o = opts("d/", None, after.as_deref(), 100);
        let got = d.walk(&o).await.unwrap();
        assert_eq!(got.entries, plain(&d, &o).await.entries, "page {page}");
        // One step forward only.
        after = Some(got.entries[1].name().to_owned());
    }
    assert_eq!(ns.ahead_served.load(Ordering::Relaxed), 0);
    let skipped = ns.ahead_skipped.load(Ordering::Relaxed);
    assert!(skipped >= 20, "{skipped} walks ahead skipped of 40");
    let mut after = Some("d/k00000".to_owned());
    for page in 0..20 {
        let o = opts("d/", None, after.as_deref(), 10);
        let got = d.walk(&o).await.unwrap();
        assert_eq!(got.entries, plain(&d, &o).await.entries, "page {page}");
        after = got.entries.last().map(|e| e.name().to_owned());
    }
    assert!(ns.ahead_served.load(Ordering::Relaxed) >= 5);
    assert_eq!(ns.ahead_unused.load(Ordering::Relaxed), 0);
}

/// Between pages, keys in the next page are added and removed through
/// the drive and behind its back, and a key's metadata is replaced
/// through the drive: the page walked ahead is not used, and every page
/// is the default walk's of the moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_walked_ahead_follow_changes() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path(), 1500);
    let vol = tmp.path().join(VOL);
    let d = drive(tmp.path()).await;
    let mut after: Option<String> = None;
    let mut page = 0usize;
    let mut unchanged_pages = 0u64;
    let served_before = served(&d);
    loop {
        let o = opts("d/", None, after.as_deref(), 100);
        let got = d.walk(&o).await.unwrap();
        let want = plain(&d, &o).await;
        assert_eq!(got.entries, want.entries, "page {page}");
        let Some(last) = got.entries.last() else {
            break;
        };
        if !got.more {
            break;
        }
        after = Some(last.name().to_owned());
        page += 1;
        // A key inside the next page (whose walk ahead has started).
        let next = format!("d/k{:05}", 100 * page + 30);
        // Let the walk ahead read the drive as it was.
        tokio::time::sleep(Duration::from_millis(50)).await;
        match page % 5 {
            1 => {
                d.write_all(VOL, &format!("{next}/{META_FILE}"), b"replaced".to_vec())
                    .await
                    .unwrap();
            }
            2 => d.delete(VOL, &next, true).await.unwrap(),
            3 => {
                let k = vol.join(format!("{next}a"));
                std::fs::create_dir_all(&k).unwrap();
                std::fs::write(k.join(META_FILE), b"behind").unwrap();
            }
            4 => std::fs::remove_dir_all(vol.join(&next)).unwrap(),
            _ => unchanged_pages += 1,
        }
    }
    assert!(page >= 14, "{page} pages");
    // Only the pages after an unchanged gap can come from ahead.
    let n = served(&d) - served_before;
    assert!(
        n >= 1 && n <= unchanged_pages,
        "{n} served, {unchanged_pages} unchanged"
    );
}

fn hits(d: &crate::LocalDrive) -> u64 {
    d.inner.io.blocking.ns.meta_hits.load(Ordering::Relaxed)
}

fn objects(p: &WalkPage) -> u64 {
    p.entries
        .iter()
        .filter(|e| matches!(e, WalkEntry::Object { .. }))
        .count() as u64
}

fn meta_of<'p>(p: &'p WalkPage, key: &str) -> Option<&'p [u8]> {
    p.entries.iter().find_map(|e| match e {
        WalkEntry::Object { key: k, meta, .. } if k == key => Some(meta.as_slice()),
        _ => None,
    })
}

/// Makes every kept head of `d` older than META_MAX_AGE.
fn age_heads(d: &crate::LocalDrive) {
    let mut metas = d.inner.io.blocking.ns.metas.lock().unwrap();
    let old = Instant::now().checked_sub(META_MAX_AGE).unwrap();
    for e in metas.map.values_mut() {
        e.read_at = old;
    }
}

/// A second walk takes every head from the cache. A head replaced or
/// removed by another process (the generation does not move) is read
/// again at once, one rewritten in place once it is META_MAX_AGE old,
/// and a change through the drive makes the heads read just before it
/// be read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_heads_are_read_again_only_when_changed() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path(), 300);
    let vol = tmp.path().join(VOL);
    let d = drive(tmp.path()).await;
    let o = opts("d/", None, None, 1000);
    let first = d.walk(&o).await.unwrap();
    assert_eq!(first.entries, plain(&d, &o).await.entries);
    let n = objects(&first);
    assert!(n > 300, "{n} objects");
    let h = hits(&d);
    let again = d.walk(&o).await.unwrap();
    assert_eq!(again.entries, first.entries);
    assert_eq!(hits(&d) - h, n, "every head from the cache");

    // Far enough from the reads for any timestamp granularity but a
    // whole second's.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let g = d.inner.io.blocking.ns.generation();
    let staged = vol.join("staged");
    std::fs::write(&staged, b"renamed over").unwrap();
    std::fs::rename(&staged, vol.join("d/k00030").join(META_FILE)).unwrap();
    std::fs::remove_file(vol.join("d/k00040").join(META_FILE)).unwrap();
    std::fs::write(vol.join("d/k00020").join(META_FILE), b"atem 20").unwrap();
    let h = hits(&d);
    let after = d.walk(&o).await.unwrap();
    assert_eq!(d.inner.io.blocking.ns.generation(), g);
    assert_eq!(meta_of(&after, "d/k00030"), Some(&b"renamed over"[..]));
    assert_eq!(meta_of(&after, "d/k00040"), None);
    assert_eq!(meta_of(&after, "d/k00041"), Some(&b"meta 41"[..]));
    // In place, same size: its directory did not change.
    assert_eq!(meta_of(&after, "d/k00020"), Some(&b"meta 20"[..]));
    assert_eq!(hits(&d) - h, n - 2, "all but the replaced and removed");
    age_heads(&d);
    let h = hits(&d);
    let after = d.walk(&o).await.unwrap();
    assert_eq!(after.entries, plain(&d, &o).await.entries);
    assert_eq!(meta_of(&after, "d/k00020"), Some(&b"atem 20"[..]));
    assert_eq!(hits(&d) - h, 0, "every head too old");

    // A change through the drive moves the generation: the heads read
    // less than SETTLED ago are all read again, and kept anew.
    d.write_all(VOL, &format!("d/k00010/{META_FILE}"), b"via drive".to_vec())
        .await
        .unwrap();
    let h = hits(&d);
    let after = d.walk(&o).await.unwrap();
    assert_eq!(after.entries, plain(&d, &o).await.entries);
    assert_eq!(meta_of(&after, "d/k00010"), Some(&b"via drive"[..]));
    assert_eq!(hits(&d) - h, 0);
    let h = hits(&d);
    d.walk(&o).await.unwrap();
    assert_eq!(hits(&d) - h, n - 1);
}

/// Heads in directories that had not changed for SETTLED before they
/// were read stay good across changes elsewhere on the drive; one in a
/// directory changed just now does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_heads_outlive_changes_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path(), 40);
    let vol = tmp.path().join(VOL);
    tokio::time::sleep(SETTLED + Duration::from_millis(200)).await;
    let d = drive(tmp.path()).await;
    let o = opts("d/", None, None, 1000);
    let first = d.walk(&o).await.unwrap();
    let n = objects(&first);
    // One head replaced just now, by another process.
    let staged = vol.join("staged");
    std::fs::write(&staged, b"fresh").unwrap();
    std::fs::rename(&staged, vol.join("d/k00005").join(META_FILE)).unwrap();
    let h = hits(&d);
    let second = d.walk(&o).await.unwrap();
    assert_eq!(hits(&d) - h, n - 1);
    assert_eq!(meta_of(&second, "d/k00005"), Some(&b"fresh"[..]));
    // A change elsewhere on the drive.
    d.write_all(VOL, &format!("e/k/{META_FILE}"), b"elsewhere".to_vec())
        .await
        .unwrap();
    let h = hits(&d);
    let third = d.walk(&o).await.unwrap();
    assert_eq!(third.entries, second.entries);
    assert_eq!(third.entries, plain(&d, &o).await.entries);
    assert_eq!(hits(&d) - h, n - 1, "all but the fresh head");
}
