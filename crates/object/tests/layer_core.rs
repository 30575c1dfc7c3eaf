//! The erasure object layer's core paths on real drives, beyond the
//! round trips of `layer.rs`: MinIO's inline rule (multi-block inline
//! objects on wide sets, the versioned threshold), suspended versioning,
//! commit failures and their roll-back, locks (copy onto itself, slow
//! uploads never blocking readers), every loss pattern of an 8-drive set,
//! the public heal queue and pools.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use drive::{
    AlignedBuf, BoxFuture, DirEntryName, DiskInfo, Drive, DriveError, FileInfo, HealthReport,
    LocalDrive, LocalDriveConfig, ShardReader, ShardWriter, VolumeInfo,
};
use md5::{Digest, Md5};
use object::layer::{
    Error, GetOptions, LayerOptions, ListOptions, ObjectInfo, ObjectLayer, PutOptions, Range,
    VersionSel, Versioning,
};
use support::staging_leftovers;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

/// Deterministic pseudo-random bytes (xorshift64).
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn dirs(root: &Path, n: usize) -> Vec<PathBuf> {
    (1..=n).map(|i| root.join(format!("d{i}"))).collect()
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

async fn open(dirs: &[PathBuf]) -> ObjectLayer {
    ObjectLayer::open_dirs(dirs, LayerOptions::default())
        .await
        .expect("open")
}

fn sized(len: usize) -> PutOptions {
    PutOptions {
        size: Some(len as u64),
        ..Default::default()
    }
}

async fn put(l: &ObjectLayer, b: &str, k: &str, body: &[u8]) -> ObjectInfo {
    l.put_object(b, k, &mut &body[..], &sized(body.len()))
        .await
        .unwrap_or_else(|e| panic!("put {k}: {e}"))
}

async fn get(l: &ObjectLayer, b: &str, k: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    l.get_object(b, k, &GetOptions::default(), &mut out).await?;
    Ok(out)
}

async fn get_version(l: &ObjectLayer, b: &str, k: &str, v: VersionSel) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let opts = GetOptions {
        version_id: Some(v),
        range: None,
    };
    l.get_object(b, k, &opts, &mut out).await?;
    Ok(out)
}

/// Data directories (UUID-named) of an object on one drive.
fn data_dirs(drive: &Path, bucket: &str, key: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(drive.join(bucket).join(key))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| Uuid::parse_str(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

// ---- MinIO's inline rule ----------------------------------------------------

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

// ---- versioning ---------------------------------------------------------------

/// S3's suspended state: PUT replaces the null version and keeps the
/// others; DELETE without a version puts a null delete marker in place of
/// the null version (whose data goes) rather than resurrecting an older
/// version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_versioning() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("sus").await.unwrap();
    assert_eq!(
        l.bucket_versioning_state("sus").await.unwrap(),
        Versioning::Unversioned
    );
    l.set_bucket_versioning("sus", true).await.unwrap();
    let v1 = data(2 << 20, 1);
    let i1 = put(&l, "sus", "k", &v1).await;
    let id1 = i1.version_id.expect("versioned PUT has an id");

    l.set_bucket_versioning("sus", false).await.unwrap();
    assert_eq!(
        l.bucket_versioning_state("sus").await.unwrap(),
        Versioning::Suspended
    );
    assert!(!l.bucket_versioning("sus").await.unwrap());
    let n1 = data(3 << 20, 2);
    let i2 = put(&l, "sus", "k", &n1).await;
    assert_eq!(i2.version_id, None, "suspended PUT writes the null version");
    let n2 = data((2 << 20) + 7, 3);
    put(&l, "sus", "k", &n2).await;
    assert_eq!(get(&l, "sus", "k").await.unwrap(), n2);
    assert_eq!(
        get_version(&l, "sus", "k", VersionSel::Id(id1))
            .await
            .unwrap(),
        v1
    );
    for d in &ds {
        assert_eq!(data_dirs(d, "sus", "k").len(), 2, "v1 and the null version");
    }

    let del = l.delete_object("sus", "k", None).await.unwrap();
    assert!(del.delete_marker);
    assert_eq!(del.version_id, None, "a null delete marker");
    match get(&l, "sus", "k").await {
        Err(Error::NoSuchKey { delete_marker, .. }) => assert!(delete_marker),
        r => panic!("an older version came back: {:?}", r.map(|b| b.len())),
    }
    for d in &ds {
        assert_eq!(data_dirs(d, "sus", "k").len(), 1, "the null data is gone");
    }
    let versions = l
        .list_object_versions("sus", &ListOptions::default(), None)
        .await
        .unwrap();
    let seen: Vec<(Option<Uuid>, bool)> = versions
        .versions
        .iter()
        .map(|v| (v.version_id, v.delete_marker))
        .collect();
    assert_eq!(seen, vec![(None, true), (Some(id1), false)]);
    // A second delete replaces the null marker: still two versions.
    l.delete_object("sus", "k", None).await.unwrap();
    let versions = l
        .list_object_versions("sus", &ListOptions::default(), None)
        .await
        .unwrap();
    assert_eq!(versions.versions.len(), 2);
    // PUT replaces the null marker with an object again.
    put(&l, "sus", "k", &n1).await;
    assert_eq!(get(&l, "sus", "k").await.unwrap(), n1);
    // Removing the null version by id leaves v1 the latest.
    l.delete_object("sus", "k", Some(VersionSel::Null))
        .await
        .unwrap();
    assert_eq!(get(&l, "sus", "k").await.unwrap(), v1);
}

// ---- commit failures ------------------------------------------------------------

/// A real drive whose commit steps (`rename` into a bucket, `write_all`
/// into a bucket) fail when armed (shard writes to the temp area still
/// work), and whose free space can be made up (0: the real figure).
#[derive(Debug)]
struct CommitFault {
    inner: Arc<dyn Drive>,
    armed: AtomicBool,
    free: AtomicU64,
}

impl CommitFault {
    async fn open(dir: &Path) -> Arc<CommitFault> {
        std::fs::create_dir_all(dir).unwrap();
        let inner: Arc<dyn Drive> = Arc::new(
            LocalDrive::open(dir.to_path_buf(), LocalDriveConfig::default())
                .await
                .unwrap(),
        );
        Arc::new(CommitFault {
            inner,
            armed: AtomicBool::new(false),
            free: AtomicU64::new(0),
        })
    }

    fn fails(&self, volume: &str) -> bool {
        self.armed.load(Ordering::SeqCst) && !volume.starts_with(".minio.sys")
    }
}

impl Drive for CommitFault {
    fn id(&self) -> Option<Uuid> {
        self.inner.id()
    }
    fn set_id(&self, id: Option<Uuid>) {
        self.inner.set_id(id)
    }
    fn label(&self) -> String {
        self.inner.label()
    }
    fn health(&self) -> HealthReport {
        self.inner.health()
    }
    fn disk_info(&self) -> BoxFuture<'_, drive::Result<DiskInfo>> {
        Box::pin(async move {
            let mut info = self.inner.disk_info().await?;
            match self.free.load(Ordering::SeqCst) {
                0 => {}
                f => info.free = f,
            }
            Ok(info)
        })
    }
    fn make_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.make_volume(v)
    }
    fn list_volumes(&self) -> BoxFuture<'_, drive::Result<Vec<VolumeInfo>>> {
        self.inner.list_volumes()
    }
    fn stat_volume<'a>(&'a self, v: &'a str) -> BoxFuture<'a, drive::Result<VolumeInfo>> {
        self.inner.stat_volume(v)
    }
    fn delete_volume<'a>(&'a self, v: &'a str, f: bool) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.delete_volume(v, f)
    }
    fn read_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: u64,
    ) -> BoxFuture<'a, drive::Result<Vec<u8>>> {
        self.inner.read_all(v, p, limit)
    }
    fn write_all<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        data: Vec<u8>,
    ) -> BoxFuture<'a, drive::Result<()>> {
        if self.fails(v) {
            return Box::pin(async { Err(DriveError::Offline("commit fault".into())) });
        }
        self.inner.write_all(v, p, data)
    }
    fn create_file<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        size: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardWriter>>> {
        self.inner.create_file(v, p, size)
    }
    fn read_file_at<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    ) -> BoxFuture<'a, drive::Result<(AlignedBuf, usize)>> {
        self.inner.read_file_at(v, p, offset, len, buf)
    }
    fn open_reader<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        offset: u64,
        len: Option<u64>,
    ) -> BoxFuture<'a, drive::Result<Box<dyn ShardReader>>> {
        self.inner.open_reader(v, p, offset, len)
    }
    fn rename<'a>(
        &'a self,
        sv: &'a str,
        sp: &'a str,
        dv: &'a str,
        dp: &'a str,
    ) -> BoxFuture<'a, drive::Result<()>> {
        if self.fails(dv) {
            return Box::pin(async { Err(DriveError::Offline("commit fault".into())) });
        }
        self.inner.rename(sv, sp, dv, dp)
    }
    fn delete<'a>(&'a self, v: &'a str, p: &'a str, r: bool) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.delete(v, p, r)
    }
    fn move_to_trash<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<()>> {
        self.inner.move_to_trash(v, p)
    }
    fn empty_trash(&self, max: usize) -> BoxFuture<'_, drive::Result<usize>> {
        self.inner.empty_trash(max)
    }
    fn list_dir<'a>(
        &'a self,
        v: &'a str,
        p: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, drive::Result<Vec<DirEntryName>>> {
        self.inner.list_dir(v, p, limit)
    }
    fn stat_file<'a>(&'a self, v: &'a str, p: &'a str) -> BoxFuture<'a, drive::Result<FileInfo>> {
        self.inner.stat_file(v, p)
    }
}

/// Shards reach every drive, but two of four drives fail to commit (below
/// the write quorum of 3): the PUT fails, the drives that did commit are
/// rolled back, the previous version reads as before, and neither the new
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
    faults[1].armed.store(true, Ordering::SeqCst);
    faults[2].armed.store(true, Ordering::SeqCst);
    for (key, len) in [("big", 3 << 20), ("small", 10), ("new", 5 << 20)] {
        let body = data(len, 9);
        let r = l.put_object("rbk", key, &mut &body[..], &sized(len)).await;
        assert!(matches!(r, Err(Error::WriteQuorum { .. })), "{key}: {r:?}");
    }
    faults[1].armed.store(false, Ordering::SeqCst);
    faults[2].armed.store(false, Ordering::SeqCst);
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

// ---- locks --------------------------------------------------------------------

/// Copying an object onto itself (a metadata replace) and two copies in
/// opposite directions at once, with objects larger than the copy pipe,
/// finish promptly: no lock is held across the other side's wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_do_not_deadlock() {
    let tmp = tempfile::tempdir().unwrap();
    let l = open(&dirs(tmp.path(), 4)).await;
    l.make_bucket("cpy").await.unwrap();
    let a = data(9 << 20, 1);
    let b = data((7 << 20) + 3, 2);
    put(&l, "cpy", "a", &a).await;
    put(&l, "cpy", "b", &b).await;
    let replace = PutOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("X-Amz-Meta-New".into(), "yes".into())],
        ..Default::default()
    };
    let info = tokio::time::timeout(
        Duration::from_secs(20),
        l.copy_object("cpy", "a", None, "cpy", "a", Some(&replace)),
    )
    .await
    .expect("copy onto itself deadlocked")
    .unwrap();
    assert_eq!(info.etag, md5_hex(&a));
    let head = l.head_object("cpy", "a", None).await.unwrap();
    assert_eq!(head.content_type, "text/plain");
    assert_eq!(
        head.metadata.get("X-Amz-Meta-New").map(String::as_str),
        Some("yes")
    );
    assert_eq!(get(&l, "cpy", "a").await.unwrap(), a);

    let (x, y) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(
            l.copy_object("cpy", "a", None, "cpy", "b", None),
            l.copy_object("cpy", "b", None, "cpy", "a", None),
        )
    })
    .await
    .expect("crosswise copies deadlocked");
    x.unwrap();
    y.unwrap();
    // Each copy read one consistent version of its source.
    let (na, nb) = (
        get(&l, "cpy", "a").await.unwrap(),
        get(&l, "cpy", "b").await.unwrap(),
    );
    assert!(na == a || na == b);
    assert!(nb == a || nb == b);
    // Metadata copied with the bytes (the REPLACEd headers travel with a).
    let hb = l.head_object("cpy", "b", None).await.unwrap();
    assert_eq!(hb.content_type == "text/plain", nb == a);
}

/// A PUT waiting on a slow client holds no lock: the object's current
/// version stays readable (and deletable keys stay deletable) meanwhile,
/// and the new version appears only once the upload is complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_do_not_block_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let l = Arc::new(open(&dirs(tmp.path(), 4)).await);
    l.make_bucket("slow").await.unwrap();
    let old = data(3 << 20, 1);
    put(&l, "slow", "k", &old).await;
    let new = data(4 << 20, 2);
    let (mut tx, mut rx) = tokio::io::duplex(64 << 10);
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let feeder = {
        let new = new.clone();
        tokio::spawn(async move {
            tx.write_all(&new[..(3 << 20) / 2]).await.unwrap();
            go_rx.await.unwrap();
            tx.write_all(&new[(3 << 20) / 2..]).await.unwrap();
        })
    };
    let writer = {
        let l = l.clone();
        let len = new.len();
        tokio::spawn(async move { l.put_object("slow", "k", &mut rx, &sized(len)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let read = tokio::time::timeout(Duration::from_secs(5), get(&l, "slow", "k"))
        .await
        .expect("GET blocked behind an upload in progress")
        .unwrap();
    assert_eq!(read, old, "the upload is not visible before it completes");
    let h = tokio::time::timeout(Duration::from_secs(5), l.head_object("slow", "k", None))
        .await
        .expect("HEAD blocked")
        .unwrap();
    assert_eq!(h.etag, md5_hex(&old));
    go_tx.send(()).unwrap();
    feeder.await.unwrap();
    let info = writer.await.unwrap().unwrap();
    assert_eq!(info.etag, md5_hex(&new));
    assert_eq!(get(&l, "slow", "k").await.unwrap(), new);
}

// ---- drive loss -------------------------------------------------------------------

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

// ---- pools --------------------------------------------------------------------

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
            d.free.store(free, Ordering::SeqCst);
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

// ---- storage classes, heal queue, small deployments -----------------------------

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

/// Bucket metadata is written as MinIO writes configuration: with the
/// most parity the set allows (here 8 + 8 on 16 drives, where objects get
/// 12 + 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_metadata_gets_max_parity() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 16);
    let l = open(&ds).await;
    l.make_bucket("maxp").await.unwrap();
    for d in &ds {
        let b = std::fs::read(d.join(".minio.sys/buckets/maxp/.metadata.bin/xl.meta")).unwrap();
        let m = object::xlmeta::XlMeta::decode(&b).unwrap();
        let o = m.latest().unwrap().version().as_object().unwrap().clone();
        assert_eq!((o.erasure_m, o.erasure_n), (8, 8));
    }
    let h = put(&l, "maxp", "o", &data(10, 1)).await;
    assert_eq!((h.data_shards, h.parity_shards), (12, 4));
    assert!(!l.bucket_versioning("maxp").await.unwrap());
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
    let req = tokio::time::timeout(Duration::from_secs(5), waiter)
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

// ---- both drive backends ------------------------------------------------------

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

// ---- buckets --------------------------------------------------------------------

/// Deleting every object (nested keys, directory objects, every version
/// and delete marker of a versioned bucket) leaves a bucket that can be
/// deleted: no empty directories are left behind to make it look full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emptied_buckets_can_be_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    let keys = ["a/b/c/deep", "a/b/side", "dir/", "top", "big/one"];
    for (bucket, versioned) in [("plainb", false), ("verb", true)] {
        l.make_bucket(bucket).await.unwrap();
        if versioned {
            l.set_bucket_versioning(bucket, true).await.unwrap();
        }
        for (i, k) in keys.iter().enumerate() {
            let body = if k.ends_with('/') {
                Vec::new()
            } else if k.starts_with("big") {
                data(3 << 20, i as u64)
            } else {
                data(100, i as u64)
            };
            put(&l, bucket, k, &body).await;
            if versioned {
                put(&l, bucket, k, &body).await;
                l.delete_object(bucket, k, None).await.unwrap();
            }
        }
        assert!(matches!(
            l.delete_bucket(bucket).await,
            Err(Error::BucketNotEmpty(_))
        ));
        let versions = l
            .list_object_versions(bucket, &ListOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(
            versions.versions.len(),
            keys.len() * if versioned { 3 } else { 1 }
        );
        for v in &versions.versions {
            let sel = v.version_id.map_or(VersionSel::Null, VersionSel::Id);
            l.delete_object(bucket, &v.key, Some(sel)).await.unwrap();
        }
        let left = l
            .list_object_versions(bucket, &ListOptions::default(), None)
            .await
            .unwrap();
        assert!(left.versions.is_empty(), "{:?}", left.versions);
        l.delete_bucket(bucket)
            .await
            .unwrap_or_else(|e| panic!("{bucket}: {e}"));
        for d in &ds {
            assert!(!d.join(bucket).exists(), "{}", d.display());
            assert!(!d.join(".minio.sys/buckets").join(bucket).exists());
        }
        assert!(matches!(
            l.head_bucket(bucket).await,
            Err(Error::NoSuchBucket(_))
        ));
    }
    assert!(l.list_buckets().await.unwrap().is_empty());
}
