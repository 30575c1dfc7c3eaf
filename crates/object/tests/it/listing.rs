//! ListObjects as the listing path does it now: a share of each set's
//! drives walked, the rest read only for keys those cannot decide, and
//! large directories kept between pages. Checked against a model while
//! keys are deleted between pages, with drives wiped, and with drives that
//! hold an older version than the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{data, dirs, put};
use object::layer::{LayerOptions, ListOptions, ObjectLayer};

async fn open(ds: &[PathBuf], set: Option<usize>) -> ObjectLayer {
    ObjectLayer::open_dirs(
        ds,
        LayerOptions {
            set_drive_count: set,
            ..Default::default()
        },
    )
    .await
    .expect("open")
}

/// Every key and size, page by page (`max` per page), continuing from the
/// marker each page returns; `between` runs after each page.
async fn list_all(
    l: &ObjectLayer,
    b: &str,
    prefix: &str,
    max: usize,
    mut between: impl AsyncFnMut(usize, &str),
) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut marker: Option<String> = None;
    for page in 0.. {
        assert!(page < 10_000, "pagination does not end");
        let r = l
            .list_objects(
                b,
                &ListOptions {
                    prefix: prefix.into(),
                    marker: marker.clone(),
                    max_keys: max,
                    ..Default::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("page {page}: {e}"));
        assert!(r.objects.len() <= max);
        out.extend(r.objects.iter().map(|o| (o.key.clone(), o.size)));
        if !r.is_truncated {
            break;
        }
        marker = r.next_marker.clone();
        let m = marker.clone().expect("a truncated page has a next marker");
        between(page, &m).await;
    }
    out
}

/// Every version (key, version id, size, latest, delete marker), page by
/// page (`max` per page), continuing from the key and version markers.
async fn list_versions_all(
    l: &ObjectLayer,
    b: &str,
    max: usize,
) -> Vec<(String, Option<uuid::Uuid>, u64, bool, bool)> {
    let mut out = Vec::new();
    let (mut marker, mut vmarker): (Option<String>, Option<String>) = (None, None);
    for page in 0.. {
        assert!(page < 10_000, "pagination does not end");
        let r = l
            .list_object_versions(
                b,
                &ListOptions {
                    marker: marker.clone(),
                    max_keys: max,
                    ..Default::default()
                },
                vmarker.as_deref(),
            )
            .await
            .unwrap_or_else(|e| panic!("page {page}: {e}"));
        assert!(r.versions.len() <= max);
        out.extend(r.versions.iter().map(|v| {
            (
                v.key.clone(),
                v.version_id,
                v.size,
                v.is_latest,
                v.delete_marker,
            )
        }));
        if !r.is_truncated {
            break;
        }
        marker = r.next_key_marker.clone();
        vmarker = r.next_version_marker.clone();
    }
    out
}

fn key(i: usize) -> String {
    format!("dir/k{i:04}")
}

/// Keys deleted ahead of the marker between pages disappear, keys deleted
/// behind it do not disturb the rest, and a directory large enough to be
/// kept between pages is followed through the changes: on one set of 4
/// drives (3 walked) and of 8 (5 walked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuation_across_pages_with_deleted_keys() {
    for n in [4usize, 8] {
        let tmp = tempfile::tempdir().unwrap();
        let ds = dirs(tmp.path(), n);
        let l = open(&ds, Some(n)).await;
        l.make_bucket("cont").await.unwrap();
        let mut model = BTreeMap::new();
        for i in 0..700 {
            let body = data(i % 50, i as u64);
            put(&l, "cont", &key(i), &body).await;
            model.insert(key(i), body.len() as u64);
        }
        let mut deleted = Vec::new();
        let mut ahead = Vec::new();
        let got = list_all(&l, "cont", "dir/", 64, async |page, marker: &str| {
            // Ahead of the marker: two keys (never listed then); behind
            // it: one (listed already, so it stays in the result).
            let at: usize = marker["dir/k".len()..].parse().unwrap();
            for k in [at + 3, at + 40, at.saturating_sub(5)] {
                if k < 700 && !deleted.contains(&k) {
                    l.delete_object("cont", &key(k), None).await.unwrap();
                    deleted.push(k);
                    if k > at {
                        ahead.push(k);
                    }
                }
            }
            assert!(page < 100);
        })
        .await;
        assert!(ahead.len() > 10);
        for k in &ahead {
            model.remove(&key(*k));
        }
        let want: Vec<(String, u64)> = model.into_iter().collect();
        assert_eq!(got, want, "{n} drives");
    }
}

/// Copies `key`'s xl.meta on drive `d` aside, or puts it back.
fn meta_path(d: &Path, bucket: &str, key: &str) -> PathBuf {
    d.join(bucket).join(key).join("xl.meta")
}

/// Lost and stale drives, including the ones a page walks first: the
/// listing is what the quorum says, at every page size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_under_lost_and_stale_drives() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds, None).await;
    l.make_bucket("loss").await.unwrap();
    let mut model = BTreeMap::new();
    for i in 0..40 {
        let body = data(100 + i, i as u64);
        put(&l, "loss", &key(i), &body).await;
        model.insert(key(i), body.len() as u64);
    }
    // Stale drives: keys 0..10 are overwritten, then drives 0 and 1 get
    // their old xl.meta back (as if they had missed the overwrite). The
    // newer version is on 2 of 4 drives, a read quorum (2 data shards).
    let mut old = Vec::new();
    for i in 0..10 {
        for d in &ds[..2] {
            old.push((
                meta_path(d, "loss", &key(i)),
                std::fs::read(meta_path(d, "loss", &key(i))).unwrap(),
            ));
        }
        let body = data(3000 + i, 99 + i as u64);
        put(&l, "loss", &key(i), &body).await;
        model.insert(key(i), body.len() as u64);
    }
    for (p, bytes) in &old {
        std::fs::write(p, bytes).unwrap();
    }
    // A key whose newer version reached only drive 0 (below quorum): the
    // older version, on drives 1..3, is the object.
    let k = key(20);
    let before: Vec<Vec<u8>> = ds[1..]
        .iter()
        .map(|d| std::fs::read(meta_path(d, "loss", &k)).unwrap())
        .collect();
    put(&l, "loss", &k, &data(5000, 7)).await;
    for (d, bytes) in ds[1..].iter().zip(&before) {
        std::fs::write(meta_path(d, "loss", &k), bytes).unwrap();
    }
    let want: Vec<(String, u64)> = model.clone().into_iter().collect();
    for max in [1, 3, 7, 1000] {
        let got = list_all(&l, "loss", "", max, async |_, _| {}).await;
        assert_eq!(got, want, "stale drives, max {max}");
    }
    // ListObjectVersions (3 of the 4 drives walked, the fourth read for the
    // keys those cannot decide) lists the null version a GET reads: the
    // newer one of keys 0..10 (on drives 2 and 3 only, so the walked
    // drives hold a quorum of the older one and one copy of the newer), the
    // older one of key 20.
    let want_versions: Vec<(String, Option<uuid::Uuid>, u64, bool, bool)> = model
        .iter()
        .map(|(k, &size)| (k.clone(), None, size, true, false))
        .collect();
    for max in [1, 3, 1000] {
        let got = list_versions_all(&l, "loss", max).await;
        assert_eq!(got, want_versions, "stale drives, versions, max {max}");
    }
    // Lost drives: any two of four wiped (parity 2), the walked ones too.
    for lost in [[0, 1], [0, 2], [1, 2], [2, 3], [0, 3]] {
        let saved: Vec<(PathBuf, PathBuf)> = lost
            .iter()
            .map(|&d| {
                let from = ds[d].join("loss");
                let to = tmp.path().join(format!("saved{d}"));
                std::fs::rename(&from, &to).unwrap();
                std::fs::create_dir_all(&from).unwrap();
                (from, to)
            })
            .collect();
        // Keys 0..10 are on drives 2 and 3 only in their newest version:
        // with either of those lost, the older version (drives 0, 1) is
        // what a read quorum still sees when both 0 and 1 remain.
        let mut expect = model.clone();
        for i in 0..10 {
            let newer_left = lost.iter().filter(|&&d| d >= 2).count() == 0;
            let older_left = lost.iter().filter(|&&d| d < 2).count() == 0;
            match (newer_left, older_left) {
                (true, _) => {}
                (false, true) => {
                    expect.insert(key(i), (100 + i) as u64);
                }
                (false, false) => {
                    expect.remove(&key(i));
                }
            }
        }
        // Key 20: the newer version only on drive 0, the older on 1..3.
        // With drive 0 kept and two of 1..3 lost, neither has a quorum.
        if !lost.contains(&0) {
            expect.remove(&key(20));
        }
        let want: Vec<(String, u64)> = expect.into_iter().collect();
        for max in [2, 1000] {
            let got = list_all(&l, "loss", "dir/", max, async |_, _| {}).await;
            assert_eq!(got, want, "drives {lost:?} lost, max {max}");
        }
        for (from, to) in saved {
            std::fs::remove_dir_all(&from).unwrap();
            std::fs::rename(&to, &from).unwrap();
        }
    }
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
