//! `Drive::walk`: the local drive's one-task walk (direct system calls,
//! metadata heads, link-count shortcut) against the trait's default walk
//! (over `list_dir` and `read_all`) and against a model of S3 listing
//! order, on a tree of keys chosen to make key order differ from directory
//! order.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use drive::walk::{META_FILE, WalkEntry, WalkOptions, WalkPage, common_prefix, dir_from_key};
use drive::{
    AlignedBuf, Backend, BoxFuture, DeadlineConfig, DeadlineDrive, DirEntryName, DiskInfo, Drive,
    DriveError, FileInfo, HealthReport, LocalDrive, LocalDriveConfig, Result, ShardReader,
    ShardWriter, VolumeInfo,
};
use uuid::Uuid;

/// Forwards everything but `walk` to a local drive, so its `walk` is the
/// trait's default method over `list_dir` and `read_all`.
#[derive(Debug)]
struct Plain(LocalDrive);

impl Drive for Plain {
    fn id(&self) -> Option<Uuid> {
        self.0.id()
    }
    fn set_id(&self, id: Option<Uuid>) {
        self.0.set_id(id)
    }
    fn label(&self) -> String {
        self.0.label()
    }
    fn health(&self) -> HealthReport {
        self.0.health()
    }
    fn disk_info(&self) -> BoxFuture<'_, Result<DiskInfo>> {
        self.0.disk_info()
    }
    fn make_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, Result<()>> {
        self.0.make_volume(v)
    }
    fn list_volumes(&self) -> BoxFuture<'_, Result<Vec<VolumeInfo>>> {
        self.0.list_volumes()
    }
    fn stat_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, Result<VolumeInfo>> {
        self.0.stat_volume(v)
    }
    fn delete_volume<'a>(&'a self, v: &'a str, f: bool) -> BoxFuture<'a, Result<()>> {
        self.0.delete_volume(v, f)
    }
    fn read_all<'a>(&'a self, v: &'a str, p: &'a str, l: u64) -> BoxFuture<'a, Result<Vec<u8>>> {
        self.0.read_all(v, p, l)
    }
    fn write_all<'a>(&'a self, v: &'a str, p: &'a str, d: Vec<u8>) -> BoxFuture<'a, Result<()>> {
        self.0.write_all(v, p, d)
    }
    fn create_file<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        s: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardWriter>>> {
        self.0.create_file(v, p, s)
    }
    fn read_file_at<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        o: u64,
        l: usize,
        b: AlignedBuf,
    ) -> BoxFuture<'a, Result<(AlignedBuf, usize)>> {
        self.0.read_file_at(v, p, o, l, b)
    }
    fn open_reader<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        o: u64,
        l: Option<u64>,
    ) -> BoxFuture<'a, Result<Box<dyn ShardReader>>> {
        self.0.open_reader(v, p, o, l)
    }
    fn rename<'a>(
        &'a self,
        sv: &'a str,
        sp: &'a str,
        dv: &'a str,
        dp: &'a str,
    ) -> BoxFuture<'a, Result<()>> {
        self.0.rename(sv, sp, dv, dp)
    }
    fn delete<'a>(&'a self, v: &'a str, p: &'a str, r: bool) -> BoxFuture<'a, Result<()>> {
        self.0.delete(v, p, r)
    }
    fn move_to_trash<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, Result<()>> {
        self.0.move_to_trash(v, p)
    }
    fn empty_trash(&self, m: usize) -> BoxFuture<'_, Result<usize>> {
        self.0.empty_trash(m)
    }
    fn list_dir<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        l: usize,
    ) -> BoxFuture<'a, Result<Vec<DirEntryName>>> {
        self.0.list_dir(v, p, l)
    }
    fn stat_file<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, Result<FileInfo>> {
        self.0.stat_file(v, p)
    }
}

const VOL: &str = "bkt";
/// The head size asked for: some metadata files below are longer.
const HEAD: usize = 64;

/// Keys whose order differs from directory order, objects under objects,
/// directory objects, data directories and empty directories.
fn keys() -> Vec<String> {
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
        "big",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for i in 0..30 {
        keys.push(format!("p/{:02}/{}", i % 7, i));
    }
    keys
}

/// The metadata file of `key`: long for `big` and every seventh key, so
/// heads are cut.
fn meta_of(i: usize, key: &str) -> Vec<u8> {
    let len = if key == "big" || i.is_multiple_of(7) {
        HEAD * 3 + i
    } else {
        10 + i
    };
    (0..len).map(|j| (j as u8) ^ key.as_bytes()[0]).collect()
}

fn build(root: &Path) -> Vec<(String, Vec<u8>)> {
    let vol = root.join(VOL);
    let mut out = Vec::new();
    for (i, k) in keys().iter().enumerate() {
        let dir = vol.join(dir_from_key(k));
        std::fs::create_dir_all(&dir).unwrap();
        let meta = meta_of(i, k);
        std::fs::write(dir.join(META_FILE), &meta).unwrap();
        // Data directories on some objects (they must not be walked).
        if i % 3 == 0 {
            let dd = dir.join(Uuid::from_u128(i as u128 + 1).to_string());
            std::fs::create_dir_all(&dd).unwrap();
            std::fs::write(dd.join("part.1"), b"shard").unwrap();
        }
        out.push((k.clone(), meta));
    }
    // A directory that is not an object. (A nested empty directory would
    // show as a common prefix with a delimiter, in both walks, as it did
    // before `walk` existed; the model does not know that case.)
    std::fs::create_dir_all(vol.join("empty")).unwrap();
    // A UUID-named directory that is a key prefix (not inside an object).
    let u = Uuid::from_u128(99).to_string();
    std::fs::create_dir_all(vol.join(&u).join("k")).unwrap();
    std::fs::write(vol.join(&u).join("k").join(META_FILE), b"uuid-parent").unwrap();
    out.push((format!("{u}/k"), b"uuid-parent".to_vec()));
    out.sort();
    out
}

/// S3's listing of `keys`: the first `limit` entries after `after`, keys
/// collapsed into common prefixes.
fn model(
    keys: &[(String, Vec<u8>)],
    prefix: &str,
    delimiter: Option<&str>,
    after: Option<&str>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (k, _) in keys {
        if !k.starts_with(prefix) || after.is_some_and(|a| k.as_str() <= a) {
            continue;
        }
        let e = match common_prefix(k, prefix, delimiter) {
            Some(cp) if after.is_some_and(|a| cp <= a) => continue,
            Some(cp) => format!("P:{cp}"),
            None => format!("K:{k}"),
        };
        if out.last() != Some(&e) {
            out.push(e);
        }
    }
    out
}

fn names(page: &WalkPage) -> Vec<String> {
    page.entries
        .iter()
        .map(|e| match e {
            WalkEntry::Object { key, .. } => format!("K:{key}"),
            WalkEntry::Prefix(p) => format!("P:{p}"),
        })
        .collect()
}

fn opts(prefix: &str, delimiter: Option<&str>, after: Option<&str>, limit: usize) -> WalkOptions {
    WalkOptions {
        volume: VOL.into(),
        prefix: prefix.into(),
        delimiter: delimiter.map(String::from),
        after: after.map(String::from),
        limit,
        meta_head: HEAD,
        meta_limit: 1 << 20,
    }
}

async fn local(root: &Path, backend: Backend) -> LocalDrive {
    LocalDrive::open(root.to_path_buf(), LocalDriveConfig::with_backend(backend))
        .await
        .unwrap()
}

/// Every page of every prefix, delimiter and page size, both walks,
/// paginated by the last entry as S3 continues: the same entries as the
/// model, metadata heads that are prefixes of the files (whole when they
/// say so), and the default walk's whole files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walks_agree_with_each_other_and_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let stored = build(tmp.path());
    for backend in [Backend::ThreadPool, Backend::Auto] {
        let fast = local(tmp.path(), backend).await;
        let plain = Plain(local(tmp.path(), Backend::ThreadPool).await);
        let fast_dl = DeadlineDrive::new(
            Arc::new(local(tmp.path(), backend).await) as Arc<dyn Drive>,
            DeadlineConfig::new(Duration::from_secs(30), 3, Duration::from_secs(5)),
        );
        for prefix in [
            "", "a", "a/", "a/b", "c/d", "p/0", "p/03/", "zz", "ü", "b/", "dir",
        ] {
            for delim in [None, Some("/"), Some("-"), Some("/e")] {
                let want = model(&stored, prefix, delim, None);
                for limit in [1usize, 2, 3, 7, 1000] {
                    let mut got = Vec::new();
                    let mut after: Option<String> = None;
                    let mut pages = 0;
                    loop {
                        let o = opts(prefix, delim, after.as_deref(), limit);
                        let a = fast.walk(&o).await.unwrap();
                        let b = plain.walk(&o).await.unwrap();
                        let c = fast_dl.walk(&o).await.unwrap();
                        let ctx = format!("{prefix:?} {delim:?} {after:?} {limit}");
                        assert_eq!(names(&a), names(&b), "{ctx}");
                        assert_eq!(names(&a), names(&c), "{ctx}");
                        assert_eq!(a.more, b.more, "{ctx}");
                        assert!(a.entries.len() <= limit, "{ctx}");
                        for (x, y) in a.entries.iter().zip(&b.entries) {
                            if let (
                                WalkEntry::Object {
                                    key,
                                    meta,
                                    complete,
                                },
                                WalkEntry::Object {
                                    meta: whole,
                                    complete: whole_complete,
                                    ..
                                },
                            ) = (x, y)
                            {
                                let file = &stored.iter().find(|(k, _)| k == key).unwrap().1;
                                assert_eq!(whole, file, "{key}");
                                assert!(whole_complete);
                                assert!(file.starts_with(meta), "{key}: head not a prefix");
                                assert_eq!(*complete, meta == file, "{key}: completeness");
                                assert!(meta.len() >= HEAD.min(file.len()), "{key}: short head");
                            }
                        }
                        got.extend(names(&a));
                        pages += 1;
                        assert!(pages < 200, "pagination does not end");
                        if !a.more {
                            break;
                        }
                        match a.entries.last() {
                            Some(e) => after = Some(e.name().to_owned()),
                            None => break,
                        }
                    }
                    assert_eq!(
                        got, want,
                        "prefix {prefix:?} delimiter {delim:?} limit {limit}"
                    );
                }
            }
        }
    }
}

/// A stale marker (a key deleted between pages, or one never stored)
/// resumes at the next key; a missing volume is an error at the root and
/// an empty page under a prefix, as `list_dir` reports them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markers_and_missing_volumes() {
    let tmp = tempfile::tempdir().unwrap();
    let stored = build(tmp.path());
    let fast = local(tmp.path(), Backend::Auto).await;
    let plain = Plain(local(tmp.path(), Backend::ThreadPool).await);
    // Delete `a/b` (keeping `a/b/c`): a walk resuming after it goes on.
    std::fs::remove_file(tmp.path().join(VOL).join("a/b").join(META_FILE)).unwrap();
    let left: Vec<(String, Vec<u8>)> = stored.into_iter().filter(|(k, _)| k != "a/b").collect();
    for after in ["a/b", "a/az", "a/b/", "b/", "p/03", "zzz"] {
        let o = opts("", None, Some(after), 4);
        let a = fast.walk(&o).await.unwrap();
        let b = plain.walk(&o).await.unwrap();
        let want: Vec<String> = model(&left, "", None, Some(after))
            .into_iter()
            .take(4)
            .collect();
        assert_eq!(names(&a), want, "after {after:?}");
        assert_eq!(names(&b), want, "after {after:?}");
    }
    let mut o = opts("", None, None, 10);
    o.volume = "nope".into();
    assert!(matches!(
        fast.walk(&o).await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(matches!(
        plain.walk(&o).await,
        Err(DriveError::VolumeNotFound)
    ));
    o.prefix = "a/".into();
    assert_eq!(fast.walk(&o).await.unwrap(), WalkPage::default());
    assert_eq!(plain.walk(&o).await.unwrap(), WalkPage::default());
    // Names that cannot be paths are refused before any system call.
    let o = opts("a/../", None, None, 10);
    assert!(matches!(
        fast.walk(&o).await,
        Err(DriveError::InvalidPath(_))
    ));
}

/// The link-count shortcut never hides keys: an object directory that
/// gains a sub-key (with or without data directories) is listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_under_objects_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let vol = tmp.path().join(VOL);
    let fast = local(tmp.path(), Backend::Auto).await;
    std::fs::create_dir_all(vol.join("x")).unwrap();
    std::fs::write(vol.join("x").join(META_FILE), b"x").unwrap();
    let all = |page: WalkPage| names(&page);
    let o = opts("", None, None, 100);
    assert_eq!(all(fast.walk(&o).await.unwrap()), ["K:x"]);
    std::fs::create_dir_all(vol.join("x/y")).unwrap();
    std::fs::write(vol.join("x/y").join(META_FILE), b"y").unwrap();
    assert_eq!(all(fast.walk(&o).await.unwrap()), ["K:x", "K:x/y"]);
    let dd = vol.join("x/y").join(Uuid::new_v4().to_string());
    std::fs::create_dir_all(&dd).unwrap();
    std::fs::create_dir_all(vol.join("x/y/z")).unwrap();
    std::fs::write(vol.join("x/y/z").join(META_FILE), b"z").unwrap();
    assert_eq!(
        all(fast.walk(&o).await.unwrap()),
        ["K:x", "K:x/y", "K:x/y/z"]
    );
    let keys: BTreeSet<String> = ["x", "x/y", "x/y/z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let plain = Plain(local(tmp.path(), Backend::ThreadPool).await);
    let b = all(plain.walk(&o).await.unwrap());
    assert_eq!(b.len(), keys.len());
}

/// A directory large enough for the local drive's cache, paged through
/// while keys are added and deleted between pages, through the drive and
/// behind its back: every page is what the default walk (which reads the
/// directory each time) sees, and the listing is the model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_directory_follows_changes_between_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let vol = tmp.path().join(VOL);
    let key = |i: usize| format!("big/k{i:05}");
    for i in (0..1500).step_by(2) {
        let dir = vol.join(key(i));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(META_FILE), key(i)).unwrap();
    }
    let fast = local(tmp.path(), Backend::Auto).await;
    let plain = Plain(local(tmp.path(), Backend::ThreadPool).await);
    let mut model: BTreeSet<String> = (0..1500).step_by(2).map(key).collect();
    let mut after: Option<String> = None;
    let mut got = Vec::new();
    let mut page = 0;
    loop {
        let o = opts("big/", None, after.as_deref(), 100);
        let a = fast.walk(&o).await.unwrap();
        let b = plain.walk(&o).await.unwrap();
        assert_eq!(names(&a), names(&b), "page {page}");
        got.extend(names(&a));
        let Some(last) = a.entries.last() else { break };
        after = Some(last.name().to_owned());
        if !a.more {
            break;
        }
        page += 1;
        let ahead = 200 * page;
        match page % 4 {
            // Through the drive: a new key ahead (write_all renames it in).
            1 => {
                let k = key(ahead + 1);
                fast.write_all(VOL, &format!("{k}/{META_FILE}"), k.clone().into_bytes())
                    .await
                    .unwrap();
                model.insert(k);
            }
            // Through the drive: a key ahead deleted (and its directory).
            2 => {
                let k = key(ahead + 2);
                fast.delete(VOL, &k, true).await.unwrap();
                model.remove(&k);
            }
            // Behind the drive's back: a key ahead added, another removed.
            3 => {
                let k = key(ahead + 3);
                std::fs::create_dir_all(vol.join(&k)).unwrap();
                std::fs::write(vol.join(&k).join(META_FILE), &k).unwrap();
                model.insert(k);
                let gone = key(ahead + 4);
                std::fs::remove_dir_all(vol.join(&gone)).unwrap();
                model.remove(&gone);
            }
            _ => {}
        }
    }
    // Keys added behind the walk (before `after`) are not seen, as in S3;
    // all added keys here were ahead of it.
    let want: Vec<String> = model.iter().map(|k| format!("K:{k}")).collect();
    assert_eq!(got, want);
    // A second pass over an unchanged directory agrees too (cache hits).
    let o = opts("big/", None, Some("big/k00500"), 1000);
    let a = fast.walk(&o).await.unwrap();
    let again = fast.walk(&o).await.unwrap();
    assert_eq!(a, again);
    assert_eq!(names(&a), names(&plain.walk(&o).await.unwrap()));
}
