//! The drive test suite. Every test function takes a backend and is
//! instantiated twice by `suite!`: once for io_uring, once for the thread
//! pool. Drives live under Cargo's target tmp dir (a real disk file system,
//! so `O_DIRECT` is exercised), not under /tmp, which may be tmpfs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use drive::format::{
    FORMAT_FILE, META_VOLUME, META_VOLUMES, SPREAD_DIRS, SPREAD_VOLUME, TMP_VOLUME, TRASH_VOLUME,
};
use drive::{
    AlignedBuf, Backend, BackendKind, DeadlineConfig, DeadlineDrive, Drive, DriveError,
    DrivePosition, DriveState, FormatError, IoMode, LocalDrive, LocalDriveConfig, ShardFile,
    build_formats, load_format, save_format, verify_format,
};
use uuid::Uuid;

mod common;
use common::pattern;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// io_uring, default configuration (reads served from the caches on
    /// the calling thread where they can be).
    Uring,
    /// io_uring with cached reads off, so that every read goes through the
    /// ring.
    UringUncached,
    /// The thread pool, with cached reads off, so that every read goes
    /// through the pool.
    Pool,
}

struct Env {
    dir: tempfile::TempDir,
    drive: LocalDrive,
}

impl Env {
    fn root(&self) -> PathBuf {
        self.dir.path().join("drive")
    }
}

fn test_base() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

async fn open_in(kind: Kind, base: &Path, tweak: impl FnOnce(&mut LocalDriveConfig)) -> Env {
    let dir = tempfile::tempdir_in(base).expect("temp dir");
    let backend = match kind {
        Kind::Uring | Kind::UringUncached => Backend::IoUring,
        Kind::Pool => Backend::ThreadPool,
    };
    let mut cfg = LocalDriveConfig::with_backend(backend);
    cfg.cached_reads = kind == Kind::Uring;
    tweak(&mut cfg);
    let drive = match LocalDrive::open(dir.path().join("drive"), cfg.clone()).await {
        Ok(drive) => drive,
        Err(DriveError::BackendUnavailable(reason)) if kind != Kind::Pool => {
            eprintln!(
                "\n!!!!!!!!!! IO_URING REFUSED ON THIS HOST ({reason}).\n\
                 !!!!!!!!!! This io_uring test runs against the THREAD-POOL fallback instead.\n"
            );
            cfg.backend = Backend::ThreadPool;
            LocalDrive::open(dir.path().join("drive"), cfg)
                .await
                .expect("thread-pool drive")
        }
        Err(e) => panic!("opening drive: {e}"),
    };
    if kind == Kind::Pool {
        assert_eq!(drive.backend(), BackendKind::ThreadPool);
    }
    Env { dir, drive }
}

async fn open(kind: Kind) -> Env {
    open_in(kind, &test_base(), |_| {}).await
}

/// For tests that look into the trash and empty it themselves.
fn no_background_trash(cfg: &mut LocalDriveConfig) {
    cfg.background_trash = false;
}

fn invalid<T>(result: &Result<T, DriveError>) -> bool {
    matches!(result, Err(DriveError::InvalidPath(_)))
}

fn aligned(data: &[u8]) -> AlignedBuf {
    AlignedBuf::from_slice(data).unwrap()
}

/// Streams `data` into `volume/path` in chunks of the given sizes (cycled).
async fn stream_write(
    drive: &dyn Drive,
    volume: &str,
    path: &str,
    data: &[u8],
    chunks: &[usize],
) -> u64 {
    let mut writer = drive
        .create_file(volume, path, Some(data.len() as u64))
        .await
        .unwrap();
    let mut offset = 0;
    let mut index = 0;
    let mut buf = AlignedBuf::with_capacity(chunks.iter().copied().max().unwrap_or(1)).unwrap();
    while offset < data.len() {
        let take = chunks[index % chunks.len()].min(data.len() - offset);
        if buf.capacity() < take {
            buf = AlignedBuf::with_capacity(take).unwrap();
        }
        buf.clear();
        buf.extend_from_slice(&data[offset..offset + take]);
        buf = writer.write(buf).await.unwrap();
        assert!(buf.is_empty(), "writer returns the buffer emptied");
        offset += take;
        index += 1;
    }
    assert_eq!(writer.written(), data.len() as u64);
    writer.finish().await.unwrap()
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod io_uring_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::Uring).await;
                }
            )*
        }
        mod io_uring_backend_uncached_reads {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::UringUncached).await;
                }
            )*
        }
        mod thread_pool_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Kind::Pool).await;
                }
            )*
        }
    };
}

suite!(
    volumes,
    write_all_replaces_atomically,
    write_all_spreads_its_staging,
    read_all_limit,
    small_files_of_every_size,
    small_file_errors,
    streaming_sizes_and_ranges,
    stream_reader_read_ahead,
    writer_size_checks,
    writer_whole_blocks_and_tails,
    writer_many_buffers_at_once,
    dropped_writer_leaves_partial_file,
    direct_io_used_where_supported,
    direct_io_refusal_falls_back,
    tmpfs_dev_shm,
    rename_files_and_dirs,
    rename_data_dir_over_existing,
    delete_removes_empty_parents,
    delete_recursive_and_trash,
    trash_emptied_in_background,
    list_dir_order_and_limit,
    path_traversal_rejected,
    format_lifecycle,
    disk_info_sane,
    many_parallel_operations,
    stat_and_health,
    read_errors,
    piped_reads,
    shard_files,
    shard_files_cold,
);

async fn volumes(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    assert!(d.list_volumes().await.unwrap().is_empty());
    for name in ["zeta", "alpha", "Mid"] {
        d.make_volume(name).await.unwrap();
    }
    d.make_volume(TMP_VOLUME).await.unwrap(); // multi-component: parents created
    assert!(matches!(
        d.make_volume("alpha").await,
        Err(DriveError::VolumeExists)
    ));
    let names: Vec<String> = d
        .list_volumes()
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(
        names,
        ["Mid", "alpha", "zeta"],
        "sorted by bytes, .minio.sys excluded"
    );
    assert_eq!(d.stat_volume("alpha").await.unwrap().name, "alpha");
    assert!(d.stat_volume("alpha").await.unwrap().created.is_some());
    assert!(matches!(
        d.stat_volume("nope").await,
        Err(DriveError::VolumeNotFound)
    ));

    d.write_all("alpha", "obj/xl.meta", b"x".to_vec())
        .await
        .unwrap();
    assert!(matches!(
        d.delete_volume("alpha", false).await,
        Err(DriveError::VolumeNotEmpty)
    ));
    d.delete_volume("alpha", true).await.unwrap();
    assert!(matches!(
        d.stat_volume("alpha").await,
        Err(DriveError::VolumeNotFound)
    ));
    d.delete_volume("zeta", false).await.unwrap();
    assert!(matches!(
        d.delete_volume("zeta", false).await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(matches!(
        d.delete_volume("zeta", true).await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(matches!(
        d.delete_volume(META_VOLUME, true).await,
        Err(DriveError::InvalidArgument(_))
    ));
    // A regular file at the top is not a volume.
    std::fs::write(env.root().join("file"), b"x").unwrap();
    assert!(matches!(
        d.stat_volume("file").await,
        Err(DriveError::VolumeNotFound)
    ));
    let names: Vec<String> = d
        .list_volumes()
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["Mid"]);
}

/// Nothing but the trash and the (empty) spread directories left in the
/// staging area.
async fn assert_no_staging_leftovers(d: &LocalDrive) {
    let mut leftovers: Vec<String> = d
        .list_dir(TMP_VOLUME, "", 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n != ".trash/" && n != ".spread/")
        .collect();
    for dir in d.list_dir(SPREAD_VOLUME, "", 100).await.unwrap_or_default() {
        assert!(dir.ends_with('/'), "file {dir} in the spread area");
        for name in d.list_dir(SPREAD_VOLUME, &dir, 100).await.unwrap() {
            leftovers.push(format!(".spread/{dir}{name}"));
        }
    }
    assert!(leftovers.is_empty(), "staging leftovers: {leftovers:?}");
}

/// `write_all` stages its files in the spread directories in turn and
/// leaves them empty. On ext4 the spread area carries `FS_TOPDIR_FL` (the
/// temporary area does not), and the spread directories lie in several
/// block groups (the point of them: `LocalDrive::make_spread_dir`).
async fn write_all_spreads_its_staging(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    // What the object layer does at every start.
    d.make_volume(META_VOLUME).await.unwrap();
    d.make_volume(TMP_VOLUME).await.unwrap();
    d.make_volume("b").await.unwrap();
    let writes = SPREAD_DIRS + 5;
    for i in 0..writes {
        d.write_all("b", &format!("k{i}/xl.meta"), pattern(i as u64, 300 + i))
            .await
            .unwrap();
    }
    let expected: Vec<String> = (0..SPREAD_DIRS).map(|i| format!("{i:02}/")).collect();
    assert_eq!(d.list_dir(SPREAD_VOLUME, "", 100).await.unwrap(), expected);
    assert_no_staging_leftovers(d).await;
    for i in 0..writes {
        assert_eq!(
            d.read_all("b", &format!("k{i}/xl.meta"), 1 << 20)
                .await
                .unwrap(),
            pattern(i as u64, 300 + i)
        );
    }
    let info = d.disk_info().await.unwrap();
    if info.fs_type.as_deref() != Some("ext4") {
        eprintln!("not ext4 ({:?}): placement not checked", info.fs_type);
        return;
    }
    for (dir, marked) in [(SPREAD_VOLUME, true), (TMP_VOLUME, false)] {
        let file = std::fs::File::open(env.root().join(dir)).unwrap();
        let flags = rustix::fs::ioctl_getflags(&file).unwrap();
        assert_eq!(
            flags.contains(rustix::fs::IFlags::TOPDIR),
            marked,
            "{dir}: {flags:?}"
        );
    }
    // Inode numbers tell the block group (8,192 inodes per group on a
    // default ext4, 16 groups per flex group), on a file system with enough
    // groups to choose from.
    const FLEX_GROUP_INODES: u64 = 16 * 8192;
    if info.files_total >= 64 * FLEX_GROUP_INODES {
        use std::os::unix::fs::MetadataExt;
        let groups: std::collections::BTreeSet<u64> = (0..SPREAD_DIRS)
            .map(|i| {
                let path = env.root().join(SPREAD_VOLUME).join(format!("{i:02}"));
                std::fs::metadata(path).unwrap().ino() / FLEX_GROUP_INODES
            })
            .collect();
        assert!(
            groups.len() > 1,
            "spread directories in flex groups {groups:?}"
        );
    }
}

/// `write_all` with group commit (the default) and with a sync per file.
async fn write_all_replaces_atomically(kind: Kind) {
    for group in [true, false] {
        write_all_replaces_atomically_with(kind, group).await;
    }
}

async fn write_all_replaces_atomically_with(kind: Kind, group: bool) {
    let env = open_in(kind, &test_base(), |cfg| cfg.group_commit = group).await;
    let d = Arc::new(env.drive.clone());
    d.make_volume("b").await.unwrap();
    let old = pattern(1, 100_000);
    let new = pattern(2, 50_000);
    d.write_all("b", "k/xl.meta", old.clone()).await.unwrap();
    assert_eq!(d.read_all("b", "k/xl.meta", 1 << 20).await.unwrap(), old);

    // Readers racing with replacements only ever see a whole version.
    let writer = {
        let d = Arc::clone(&d);
        let (old, new) = (old.clone(), new.clone());
        tokio::spawn(async move {
            for i in 0..40 {
                let data = if i % 2 == 0 { new.clone() } else { old.clone() };
                d.write_all("b", "k/xl.meta", data).await.unwrap();
            }
        })
    };
    let mut readers = Vec::new();
    for _ in 0..4 {
        let d = Arc::clone(&d);
        let (old, new) = (old.clone(), new.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..60 {
                let got = d.read_all("b", "k/xl.meta", 1 << 20).await.unwrap();
                assert!(got == old || got == new, "torn read of {} bytes", got.len());
            }
        }));
    }
    writer.await.unwrap();
    for reader in readers {
        reader.await.unwrap();
    }
    d.write_all("b", "k/xl.meta", new.clone()).await.unwrap();
    assert_eq!(d.read_all("b", "k/xl.meta", 1 << 20).await.unwrap(), new);
    // Nothing left behind in the staging area.
    assert_no_staging_leftovers(&d).await;
    // Empty files are files too.
    d.write_all("b", "empty", Vec::new()).await.unwrap();
    assert!(d.read_all("b", "empty", 10).await.unwrap().is_empty());
}

async fn read_all_limit(kind: Kind) {
    let env = open_in(kind, &test_base(), |cfg| cfg.max_small_file = 10_000).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    d.write_all("b", "f", vec![1; 1000]).await.unwrap();
    assert_eq!(d.read_all("b", "f", 1000).await.unwrap().len(), 1000);
    assert!(matches!(
        d.read_all("b", "f", 999).await,
        Err(DriveError::TooLarge {
            size: 1000,
            limit: 999
        })
    ));
    // The drive's own cap applies whatever the caller asks.
    assert!(matches!(
        d.write_all("b", "big", vec![0; 10_001]).await,
        Err(DriveError::TooLarge { .. })
    ));
    std::fs::write(env.root().join("b/big"), vec![0u8; 20_000]).unwrap();
    assert!(matches!(
        d.read_all("b", "big", u64::MAX).await,
        Err(DriveError::TooLarge {
            size: 20_000,
            limit: 10_000
        })
    ));
}

/// Small files read back exactly around the size of the drive's first,
/// chained read (32 KiB) and the limits, and writes recreate a missing
/// temporary area.
async fn small_files_of_every_size(kind: Kind) {
    for group in [true, false] {
        small_files_of_every_size_with(kind, group).await;
    }
}

async fn small_files_of_every_size_with(kind: Kind, group: bool) {
    let env = open_in(kind, &test_base(), |cfg| {
        cfg.max_small_file = 1 << 20;
        cfg.group_commit = group;
    })
    .await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let guess = 32 << 10;
    for (i, size) in [0, 1, 2000, guess - 1, guess, guess + 1, 3 * guess + 7]
        .into_iter()
        .enumerate()
    {
        let data = pattern(i as u64, size);
        let path = format!("o{i}/xl.meta");
        d.write_all("b", &path, data.clone()).await.unwrap();
        assert_eq!(d.read_all("b", &path, size as u64).await.unwrap(), data);
        assert_eq!(d.read_all("b", &path, u64::MAX).await.unwrap(), data);
        if size > 0 {
            assert!(
                matches!(
                    d.read_all("b", &path, size as u64 - 1).await,
                    Err(DriveError::TooLarge { size: s, .. }) if s == size as u64
                ),
                "size {size}"
            );
        }
        // Overwrites replace the whole file, longer or shorter.
        let shorter = pattern(100 + i as u64, size / 2);
        d.write_all("b", &path, shorter.clone()).await.unwrap();
        assert_eq!(d.read_all("b", &path, u64::MAX).await.unwrap(), shorter);
    }
    // Several missing levels, one missing level, none, and the volume
    // itself as the parent.
    for path in ["x/y/z/xl.meta", "x/y/w/xl.meta", "x/y/w/xl.meta", "top"] {
        d.write_all("b", path, path.as_bytes().to_vec())
            .await
            .unwrap();
        assert_eq!(d.read_all("b", path, 100).await.unwrap(), path.as_bytes());
    }
    std::fs::remove_dir_all(env.root().join(TMP_VOLUME)).unwrap();
    d.write_all("b", "after/xl.meta", vec![7; 10])
        .await
        .unwrap();
    assert_eq!(d.read_all("b", "after/xl.meta", 10).await.unwrap(), [7; 10]);
    assert_no_staging_leftovers(d).await;
}

async fn small_file_errors(kind: Kind) {
    for group in [true, false] {
        small_file_errors_with(kind, group).await;
    }
}

async fn small_file_errors_with(kind: Kind, group: bool) {
    let env = open_in(kind, &test_base(), |cfg| cfg.group_commit = group).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    assert!(matches!(
        d.read_all("b", "missing", 10).await,
        Err(DriveError::FileNotFound)
    ));
    assert!(matches!(
        d.read_all("nobucket", "x", 10).await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(matches!(
        d.write_all("nobucket", "x/xl.meta", vec![1]).await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(
        !env.root().join("nobucket").exists(),
        "write_all must not create volumes"
    );
    d.write_all("b", "dir/file", vec![1]).await.unwrap();
    assert!(matches!(
        d.read_all("b", "dir", 10).await,
        Err(DriveError::IsDirectory)
    ));
    assert!(matches!(
        d.write_all("b", "dir", vec![2]).await,
        Err(DriveError::IsDirectory)
    ));
    assert!(matches!(
        d.write_all("b", "dir/file/sub", vec![2]).await,
        Err(DriveError::NotDirectory)
    ));
    assert!(matches!(
        d.read_all("b", "dir/file/sub", 10).await,
        Err(DriveError::FileNotFound)
    ));
    assert_eq!(d.read_all("b", "dir/file", 10).await.unwrap(), [1]);
}

async fn streaming_sizes_and_ranges(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let sizes = [0usize, 1, 4095, 4096, 4097, (1 << 20) + 13];
    let chunkings: [&[usize]; 3] = [&[1 << 20], &[1000], &[4096, 13, 8192, 4096, 70_000]];
    for (s, &size) in sizes.iter().enumerate() {
        let data = pattern(s as u64 + 10, size);
        for (c, chunks) in chunkings.iter().enumerate() {
            let path = format!("obj{size}/dd/part.{c}");
            assert_eq!(
                stream_write(d, "b", &path, &data, chunks).await,
                size as u64
            );
            assert_eq!(
                d.stat_file("b", &path).await.unwrap().size,
                size as u64,
                "{path}"
            );
            assert_eq!(
                d.read_all("b", &path, 4 << 20).await.unwrap(),
                data,
                "{path} chunks {chunks:?}"
            );
        }
        let path = format!("obj{size}/dd/part.0");
        let offsets = [
            0,
            1,
            4095,
            4096,
            4097,
            size / 2,
            size.saturating_sub(1),
            size,
        ];
        let lens = [0, 1, 13, 4096, 4097, 65_536, size];
        for &offset in &offsets {
            for &len in &lens {
                let expect_end = (offset + len).min(size);
                let expected = &data[offset.min(size)..expect_end];
                for capacity in [len.max(1), len + 8192] {
                    let buf = AlignedBuf::with_capacity(capacity).unwrap();
                    let (buf, n) = d
                        .read_file_at("b", &path, offset as u64, len, buf)
                        .await
                        .unwrap();
                    assert_eq!(
                        n,
                        expected.len(),
                        "size {size} offset {offset} len {len} cap {capacity}"
                    );
                    assert_eq!(
                        &buf[..],
                        expected,
                        "size {size} offset {offset} len {len} cap {capacity}"
                    );
                }
            }
        }
        // Streaming reads: whole tail from several offsets, small and large buffers.
        for &offset in &[0usize, 5, 4097] {
            if offset > size {
                continue;
            }
            for capacity in [4096, 65_536] {
                let mut reader = d
                    .open_reader("b", &path, offset as u64, None)
                    .await
                    .unwrap();
                assert_eq!(reader.remaining(), (size - offset) as u64);
                let mut got = Vec::new();
                let mut buf = AlignedBuf::with_capacity(capacity).unwrap();
                let mut rounds = 0;
                loop {
                    buf = reader.read(buf).await.unwrap();
                    if buf.is_empty() {
                        break;
                    }
                    got.extend_from_slice(&buf);
                    rounds += 1;
                    assert!(rounds < 10_000, "reader does not progress");
                }
                assert_eq!(
                    got,
                    &data[offset..],
                    "reader size {size} offset {offset} cap {capacity}"
                );
            }
        }
        // A bounded range.
        if size >= 4097 + 100 {
            let mut reader = d.open_reader("b", &path, 4000, Some(197)).await.unwrap();
            let buf = reader
                .read(AlignedBuf::with_capacity(4096).unwrap())
                .await
                .unwrap();
            let mut got = buf.to_vec();
            let buf = reader.read(buf).await.unwrap();
            got.extend_from_slice(&buf);
            assert_eq!(got, &data[4000..4197]);
            assert!(reader.read(buf).await.unwrap().is_empty());
        }
    }
}

async fn stream_reader_read_ahead(kind: Kind) {
    let size = (5 << 20) + 77;
    let data = pattern(14, size);
    type Tweak = fn(&mut LocalDriveConfig);
    let configs: [(&str, Tweak); 4] = [
        ("default", |_| {}),
        ("one read-ahead buffer for the drive", |c| {
            c.max_readahead_buffers = 1
        }),
        ("read-ahead off", |c| c.readahead_chunks = 0),
        ("small chunks, deep", |c| {
            c.readahead_bytes = 64 << 10;
            c.readahead_chunks = 3;
        }),
    ];
    for (label, tweak) in configs {
        let env = open_in(kind, &test_base(), tweak).await;
        let d = &env.drive;
        d.make_volume("b").await.unwrap();
        stream_write(d, "b", "f", &data, &[1 << 20]).await;
        for offset in [0usize, 5, 4097, (1 << 20) - 3, (3 << 20) + 1] {
            for capacity in [4096usize, 300 << 10, 1 << 20, 2 << 20] {
                let mut reader = d.open_reader("b", "f", offset as u64, None).await.unwrap();
                let mut got = Vec::with_capacity(size);
                let mut buf = AlignedBuf::with_capacity(capacity).unwrap();
                loop {
                    buf = reader.read(buf).await.unwrap();
                    if buf.is_empty() {
                        break;
                    }
                    assert!(buf.len() <= buf.capacity());
                    got.extend_from_slice(&buf);
                }
                assert_eq!(reader.remaining(), 0);
                assert!(
                    got == data[offset..],
                    "{label}: offset {offset} capacity {capacity}"
                );
            }
        }
        // Two readers at once, bounded ranges.
        let mut first = d
            .open_reader("b", "f", 10, Some((1 << 20) + 5))
            .await
            .unwrap();
        let mut second = d
            .open_reader("b", "f", 2 << 20, Some(3 << 20))
            .await
            .unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut buf = AlignedBuf::with_capacity(256 << 10).unwrap();
        loop {
            buf = first.read(buf).await.unwrap();
            a.extend_from_slice(&buf);
            let done_a = buf.is_empty();
            buf = second.read(buf).await.unwrap();
            b.extend_from_slice(&buf);
            if done_a && buf.is_empty() {
                break;
            }
        }
        assert!(a == data[10..(1 << 20) + 15], "{label}: first range");
        assert!(b == data[2 << 20..5 << 20], "{label}: second range");
    }
}

async fn writer_size_checks(kind: Kind) {
    let env = open_in(kind, &test_base(), |cfg| cfg.max_file_size = 100_000).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let mut w = d.create_file("b", "over", Some(100)).await.unwrap();
    let buf = w.write(aligned(&[1; 60])).await.unwrap();
    drop(buf);
    assert!(matches!(
        w.write(aligned(&[1; 41])).await,
        Err(DriveError::SizeMismatch {
            expected: 100,
            actual: 101
        })
    ));
    let mut w = d.create_file("b", "short", Some(100)).await.unwrap();
    w.write(aligned(&[1; 50])).await.unwrap();
    assert!(matches!(
        w.finish().await,
        Err(DriveError::SizeMismatch {
            expected: 100,
            actual: 50
        })
    ));
    assert!(matches!(
        d.create_file("b", "huge", Some(100_001)).await,
        Err(DriveError::TooLarge { .. })
    ));
    let mut w = d.create_file("b", "unbounded", None).await.unwrap();
    w.write(aligned(&vec![2; 100_000])).await.unwrap();
    assert!(matches!(
        w.write(aligned(&[2])).await,
        Err(DriveError::TooLarge { .. })
    ));
    assert_eq!(w.finish().await.unwrap(), 100_000);
    assert!(matches!(
        d.create_file("nobucket", "x", None).await,
        Err(DriveError::VolumeNotFound)
    ));
    d.write_all("b", "dir/f", vec![1]).await.unwrap();
    assert!(matches!(
        d.create_file("b", "dir", None).await,
        Err(DriveError::IsDirectory)
    ));
}

/// The writer's paths around its staging buffer: whole blocks straight
/// from the caller's buffer, the announced size's last write padded in the
/// caller's buffer and cut back, an unaligned write's tail staged with the
/// next writes copied behind it; content and size exact on every path.
async fn writer_whole_blocks_and_tails(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    // (announce the size, chunk sizes): aligned then a short final write
    // (as the PUT's record streams hand them over); a single short write;
    // an unaligned write first (head straight, tail staged) then aligned
    // and odd ones behind the staged tail; a final write that follows a
    // staged tail; unknown sizes.
    let cases: [(bool, &[usize]); 8] = [
        (true, &[8192, 3 * 4096, 5000]),
        (true, &[100]),
        (true, &[4096, 4096]),
        (true, &[3 * 4096 + 100, 4096, 5000, 1]),
        (true, &[4097, 13]),
        (false, &[8192, 3 * 4096, 5000]),
        (false, &[3 * 4096 + 100, 4096, 5000]),
        (false, &[100, 8192]),
    ];
    for (c, (announce, chunks)) in cases.iter().enumerate() {
        let total: usize = chunks.iter().sum();
        let data = pattern(40 + c as u64, total);
        let path = format!("wb/{c}");
        let mut w = d
            .create_file("b", &path, announce.then_some(total as u64))
            .await
            .unwrap();
        let mut off = 0;
        for &n in chunks.iter() {
            let back = w.write(aligned(&data[off..off + n])).await.unwrap();
            assert!(back.is_empty());
            off += n;
        }
        if *announce {
            // One byte past the announced size is refused without
            // poisoning the writer.
            assert!(matches!(
                w.write(aligned(&[9])).await,
                Err(DriveError::SizeMismatch { .. })
            ));
        }
        assert_eq!(w.written(), total as u64);
        assert_eq!(w.finish().await.unwrap(), total as u64, "case {c}");
        assert_eq!(d.stat_file("b", &path).await.unwrap().size, total as u64);
        assert_eq!(
            d.read_all("b", &path, 1 << 20).await.unwrap(),
            data,
            "case {c} chunks {chunks:?}"
        );
    }
    // A last write whose buffer holds stale bytes past its length: the
    // padding written is zeros inside the capacity, and the file is cut
    // back to the announced size.
    let data = pattern(60, 4096 + 10);
    let mut buf = AlignedBuf::with_capacity(8192).unwrap();
    buf.capacity_mut().fill(0xee);
    buf.clear();
    buf.extend_from_slice(&data);
    let mut w = d
        .create_file("b", "wb/stale", Some(data.len() as u64))
        .await
        .unwrap();
    w.write(buf).await.unwrap();
    assert_eq!(w.finish().await.unwrap(), data.len() as u64);
    assert_eq!(d.read_all("b", "wb/stale", 1 << 20).await.unwrap(), data);
}

/// `write_many` gives the same file as one `write` per buffer, on every
/// path: runs of whole blocks in one vectored write (also hundreds of
/// buffers, and empty ones), a short last buffer after such a run, a batch
/// behind a staged tail, unknown sizes, buffered files (any lengths in one
/// vectored write); a batch past the announced size is refused as a
/// `write` would refuse it.
async fn writer_many_buffers_at_once(kind: Kind) {
    let cases: [(bool, &[&[usize]]); 7] = [
        (true, &[&[8192, 4096, 3 * 4096], &[4096, 5000]]),
        (true, &[&[4096, 8192, 5000]]),
        (false, &[&[100], &[4096, 4096], &[8192, 7]]),
        (false, &[&[0, 4096, 0], &[], &[4096]]),
        (true, &[&[4096; 300], &[4096, 1]]),
        (true, &[&[5000, 4096, 4096]]),
        (false, &[&[4096, 4096, 4096, 4096], &[10, 20, 30]]),
    ];
    for buffered in [false, true] {
        let env = open_in(kind, &test_base(), |cfg| {
            cfg.refuse_direct_io_for_tests = buffered;
        })
        .await;
        let d = &env.drive;
        d.make_volume("b").await.unwrap();
        for (c, (announce, batches)) in cases.iter().enumerate() {
            let total: usize = batches.iter().flat_map(|b| b.iter()).sum();
            let data = pattern(70 + c as u64, total);
            let path = format!("wm/{c}");
            let mut w = d
                .create_file("b", &path, announce.then_some(total as u64))
                .await
                .unwrap();
            let mut off = 0;
            for batch in batches.iter() {
                let bufs: Vec<AlignedBuf> = batch
                    .iter()
                    .map(|&n| {
                        off += n;
                        aligned(&data[off - n..off])
                    })
                    .collect();
                let back = w.write_many(bufs).await.unwrap();
                assert_eq!(back.len(), batch.len(), "case {c}");
                assert!(back.iter().all(|b| b.is_empty()), "case {c}");
                assert_eq!(w.written(), off as u64, "case {c}");
            }
            if *announce {
                assert!(matches!(
                    w.write_many(vec![aligned(&[0; 4096]), aligned(&[0; 4096])])
                        .await,
                    Err(DriveError::SizeMismatch { .. })
                ));
            }
            assert_eq!(w.finish().await.unwrap(), total as u64, "case {c}");
            assert_eq!(
                d.read_all("b", &path, 4 << 20).await.unwrap(),
                data,
                "case {c} batches {batches:?} buffered {buffered}"
            );
        }
        if buffered {
            let w = d.create_file("b", "wm/mode", None).await.unwrap();
            assert_eq!(w.io_mode().unwrap(), IoMode::Buffered);
        }
    }
}

async fn dropped_writer_leaves_partial_file(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume(TMP_VOLUME).await.unwrap();
    let mut w = d
        .create_file(TMP_VOLUME, "up/part.1", Some(1 << 20))
        .await
        .unwrap();
    w.write(aligned(&pattern(3, 8192))).await.unwrap();
    w.write(aligned(&pattern(4, 100))).await.unwrap();
    drop(w);
    // The file was preallocated at its expected size (so that its direct
    // writes land inside it): what was written is at its start, and the
    // rest reads as zeros (the 100-byte tail may have gone out too, when
    // written without `O_DIRECT`).
    let info = d.stat_file(TMP_VOLUME, "up/part.1").await.unwrap();
    assert!(!info.is_dir);
    assert_eq!(info.size, 1 << 20);
    let on_disk = std::fs::read(env.root().join(TMP_VOLUME).join("up/part.1")).unwrap();
    assert_eq!(on_disk.len(), 1 << 20);
    assert_eq!(on_disk[..8192], pattern(3, 8192)[..]);
    assert!(on_disk[8192 + 100..].iter().all(|&b| b == 0));
    d.delete(TMP_VOLUME, "up", true).await.unwrap();
    assert!(matches!(
        d.stat_file(TMP_VOLUME, "up").await,
        Err(DriveError::FileNotFound)
    ));
}

async fn direct_io_used_where_supported(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let fs = d.disk_info().await.unwrap().fs_type;
    let mut w = d.create_file("b", "f", None).await.unwrap();
    let mode = w.io_mode().unwrap();
    w.write(aligned(&pattern(5, 4096 * 3 + 5))).await.unwrap();
    w.finish().await.unwrap();
    let reader = d.open_reader("b", "f", 0, None).await.unwrap();
    let read_mode = reader.io_mode().unwrap();
    match d.backend() {
        BackendKind::IoUring => {
            if matches!(fs.as_deref(), Some("ext4" | "xfs" | "btrfs")) {
                assert_eq!(mode, IoMode::Direct, "O_DIRECT must be set on {fs:?}");
                assert_eq!(read_mode, IoMode::Direct);
            } else {
                eprintln!("file system {fs:?}: writer mode {mode:?}, reader mode {read_mode:?}");
            }
        }
        _ => {
            assert_eq!(mode, IoMode::Buffered);
            assert_eq!(read_mode, IoMode::Buffered);
        }
    }
    assert_eq!(
        d.read_all("b", "f", 1 << 20).await.unwrap(),
        pattern(5, 4096 * 3 + 5)
    );
}

async fn direct_io_refusal_falls_back(kind: Kind) {
    let env = open_in(kind, &test_base(), |cfg| {
        cfg.refuse_direct_io_for_tests = true
    })
    .await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let data = pattern(6, 3 * 4096 + 77);
    let mut w = d
        .create_file("b", "f", Some(data.len() as u64))
        .await
        .unwrap();
    assert_eq!(
        w.io_mode().unwrap(),
        IoMode::Buffered,
        "refused O_DIRECT must fall back to buffered I/O"
    );
    for chunk in data.chunks(1000) {
        w.write(aligned(chunk)).await.unwrap();
    }
    w.finish().await.unwrap();
    let (buf, n) = d
        .read_file_at(
            "b",
            "f",
            4095,
            4099,
            AlignedBuf::with_capacity(16384).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!((n, &buf[..]), (4099, &data[4095..8194]));
    assert_eq!(d.read_all("b", "f", 1 << 20).await.unwrap(), data);
}

async fn tmpfs_dev_shm(kind: Kind) {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("/dev/shm missing: tmpfs test skipped");
        return;
    }
    let env = open_in(kind, shm, |_| {}).await;
    let d = &env.drive;
    if d.disk_info().await.unwrap().fs_type.as_deref() != Some("tmpfs") {
        eprintln!("/dev/shm is not tmpfs here: testing it anyway");
    }
    d.make_volume("b").await.unwrap();
    let data = pattern(7, (1 << 20) + 13);
    stream_write(d, "b", "f", &data, &[1000, 1 << 20]).await;
    let w = d.create_file("b", "probe", None).await.unwrap();
    eprintln!(
        "tmpfs /dev/shm with {:?}: shard files use {:?}",
        d.backend(),
        w.io_mode().unwrap()
    );
    w.finish().await.unwrap();
    let (buf, n) = d
        .read_file_at(
            "b",
            "f",
            12_345,
            70_000,
            AlignedBuf::with_capacity(80_000).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!((n, &buf[..]), (70_000, &data[12_345..82_345]));
    assert_eq!(d.read_all("b", "f", 4 << 20).await.unwrap(), data);
}

async fn rename_files_and_dirs(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    d.make_volume(TMP_VOLUME).await.unwrap();
    d.write_all(TMP_VOLUME, "t1", b"one".to_vec())
        .await
        .unwrap();
    d.rename(TMP_VOLUME, "t1", "b", "deep/er/x").await.unwrap();
    assert_eq!(d.read_all("b", "deep/er/x", 10).await.unwrap(), b"one");
    d.write_all(TMP_VOLUME, "t2", b"two".to_vec())
        .await
        .unwrap();
    d.rename(TMP_VOLUME, "t2", "b", "deep/er/x").await.unwrap(); // replaces a file
    assert_eq!(d.read_all("b", "deep/er/x", 10).await.unwrap(), b"two");
    assert!(matches!(
        d.rename(TMP_VOLUME, "gone", "b", "y").await,
        Err(DriveError::FileNotFound)
    ));
    assert!(matches!(
        d.rename("novol", "a", "b", "y").await,
        Err(DriveError::VolumeNotFound)
    ));
    d.write_all(TMP_VOLUME, "t3", b"3".to_vec()).await.unwrap();
    assert!(matches!(
        d.rename(TMP_VOLUME, "t3", "novol", "y").await,
        Err(DriveError::VolumeNotFound)
    ));
    assert!(matches!(
        d.rename(TMP_VOLUME, "t3", "b", "deep").await,
        Err(DriveError::IsDirectory)
    ));
    d.write_all(TMP_VOLUME, "dir/f", b"f".to_vec())
        .await
        .unwrap();
    assert!(matches!(
        d.rename(TMP_VOLUME, "dir", "b", "deep/er/x").await,
        Err(DriveError::NotDirectory)
    ));
    assert!(matches!(
        d.rename(TMP_VOLUME, "dir", TMP_VOLUME, "dir/sub").await,
        Err(DriveError::InvalidArgument(_))
    ));
    // Directory onto a missing or empty directory.
    d.rename(TMP_VOLUME, "dir", "b", "moved").await.unwrap();
    assert_eq!(d.read_all("b", "moved/f", 10).await.unwrap(), b"f");
    std::fs::create_dir(env.root().join("b/empty")).unwrap();
    d.rename("b", "moved", "b", "empty").await.unwrap();
    assert_eq!(d.read_all("b", "empty/f", 10).await.unwrap(), b"f");
    assert!(matches!(
        d.stat_file("b", "moved").await,
        Err(DriveError::FileNotFound)
    ));
}

async fn rename_data_dir_over_existing(kind: Kind) {
    let env = open_in(kind, &test_base(), no_background_trash).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    d.make_volume(TMP_VOLUME).await.unwrap();
    let old = pattern(8, 10_000);
    let new = pattern(9, 20_000);
    stream_write(d, "b", "obj/dd/part.1", &old, &[4096]).await;
    stream_write(d, "b", "obj/dd/part.2", &old, &[4096]).await;
    stream_write(d, TMP_VOLUME, "up/dd/part.1", &new, &[4096]).await;
    d.rename(TMP_VOLUME, "up/dd", "b", "obj/dd").await.unwrap();
    assert_eq!(
        d.read_all("b", "obj/dd/part.1", 1 << 20).await.unwrap(),
        new
    );
    assert!(
        matches!(
            d.stat_file("b", "obj/dd/part.2").await,
            Err(DriveError::FileNotFound)
        ),
        "the old data dir is replaced as a whole"
    );
    assert_eq!(d.list_dir("b", "obj/dd", 10).await.unwrap(), ["part.1"]);
    assert!(matches!(
        d.stat_file(TMP_VOLUME, "up/dd").await,
        Err(DriveError::FileNotFound)
    ));
    // The old directory went to the trash, and the trash can be emptied.
    let trash = d.list_dir(TRASH_VOLUME, "", 10).await.unwrap();
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert_eq!(d.empty_trash(100).await.unwrap(), 1);
    // New keys: one missing level under the volume, two; a source that is
    // not there.
    for (i, key) in ["fresh", "deep/er"].into_iter().enumerate() {
        let data = pattern(20 + i as u64, 5000 + i);
        stream_write(d, TMP_VOLUME, &format!("u{i}/dd/part.1"), &data, &[4096]).await;
        d.rename(TMP_VOLUME, &format!("u{i}/dd"), "b", &format!("{key}/dd"))
            .await
            .unwrap();
        let path = format!("{key}/dd/part.1");
        assert_eq!(d.read_all("b", &path, 1 << 20).await.unwrap(), data);
    }
    assert!(matches!(
        d.rename(TMP_VOLUME, "u9/dd", "b", "again2/dd").await,
        Err(DriveError::FileNotFound)
    ));
    assert!(d.list_dir(TRASH_VOLUME, "", 10).await.unwrap().is_empty());
}

async fn delete_removes_empty_parents(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    d.write_all("b", "a/b/c/xl.meta", vec![1]).await.unwrap();
    d.write_all("b", "a/keep", vec![2]).await.unwrap();
    d.delete("b", "a/b/c/xl.meta", false).await.unwrap();
    assert!(
        matches!(d.stat_file("b", "a/b").await, Err(DriveError::FileNotFound)),
        "empty parents removed"
    );
    assert_eq!(
        d.list_dir("b", "a", 10).await.unwrap(),
        ["keep"],
        "non-empty parent kept"
    );
    d.delete("b", "a/keep", false).await.unwrap();
    assert!(d.list_dir("b", "", 10).await.unwrap().is_empty());
    d.stat_volume("b").await.unwrap(); // the volume itself stays
    d.delete("b", "a/keep", false).await.unwrap(); // missing: fine
    assert!(matches!(
        d.delete("novol", "x", false).await,
        Err(DriveError::VolumeNotFound)
    ));
    d.write_all("b", "d/x", vec![1]).await.unwrap();
    assert!(matches!(
        d.delete("b", "d", false).await,
        Err(DriveError::DirectoryNotEmpty)
    ));
    d.delete("b", "d/x", false).await.unwrap();
    assert!(d.list_dir("b", "", 10).await.unwrap().is_empty());
    // An empty directory itself.
    std::fs::create_dir_all(env.root().join("b/e/f")).unwrap();
    d.delete("b", "e/f/", false).await.unwrap();
    assert!(d.list_dir("b", "", 10).await.unwrap().is_empty());
}

async fn delete_recursive_and_trash(kind: Kind) {
    let env = open_in(kind, &test_base(), no_background_trash).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    for i in 0..5 {
        d.write_all("b", &format!("p/obj/dd/part.{i}"), vec![i])
            .await
            .unwrap();
    }
    d.write_all("b", "p/other", vec![9]).await.unwrap();
    d.delete("b", "p/obj", true).await.unwrap();
    assert_eq!(d.list_dir("b", "p", 10).await.unwrap(), ["other"]);
    d.move_to_trash("b", "p/other").await.unwrap();
    d.move_to_trash("b", "p/other").await.unwrap(); // missing: fine
    assert_eq!(
        d.list_dir("b", "p", 10).await.unwrap(),
        Vec::<String>::new(),
        "move_to_trash leaves parents"
    );
    assert_eq!(d.list_dir(TRASH_VOLUME, "", 10).await.unwrap().len(), 2);
    assert_eq!(d.empty_trash(1).await.unwrap(), 1, "bounded");
    assert_eq!(d.empty_trash(10).await.unwrap(), 1);
    assert_eq!(d.empty_trash(10).await.unwrap(), 0);
    // Stale staging files are swept into the trash at start, the spread
    // directories (which hold only files in flight) with them.
    d.write_all(TMP_VOLUME, "stale/x", vec![1]).await.unwrap();
    d.write_all(TMP_VOLUME, "stale2", vec![1]).await.unwrap();
    assert_eq!(env.drive.clean_tmp(100).await.unwrap(), 3);
    assert_eq!(d.list_dir(TMP_VOLUME, "", 10).await.unwrap(), [".trash/"]);
}

/// What deletions and replacements put in the trash is removed from the
/// disk by the drive itself, soon after, while it keeps serving.
async fn trash_emptied_in_background(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let big = pattern(3, 1 << 20);
    for i in 0..150 {
        d.write_all("b", &format!("p/o{i}/dd/part.1"), big[..4096 + i].to_vec())
            .await
            .unwrap();
    }
    stream_write(d, "b", "q/dd/part.1", &big, &[1 << 20]).await;
    // More entries than one pass removes, a streamed file, a file.
    for i in 0..150 {
        d.delete("b", &format!("p/o{i}"), true).await.unwrap();
    }
    d.move_to_trash("b", "q/dd/part.1").await.unwrap();
    let trash = env.root().join(".minio.sys/tmp/.trash");
    // Waits (20 s at most) for the emptier to leave the trash empty.
    let emptied = |what: &'static str| {
        let trash = trash.clone();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let left = std::fs::read_dir(&trash).unwrap().count();
                if left == 0 {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{what}: {left} entries still in the trash"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    emptied("first deletions").await;
    // The drive serves on, and later deletions are removed too.
    d.write_all("b", "r/x", vec![1]).await.unwrap();
    d.delete("b", "r", true).await.unwrap();
    emptied("second deletion").await;
    // Only what was deleted is gone (move_to_trash leaves the parents).
    assert_eq!(d.list_dir("b", "", 10).await.unwrap(), ["q/"]);
    assert_eq!(d.list_dir("b", "q", 10).await.unwrap(), ["dd/"]);
}

async fn list_dir_order_and_limit(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let files = ["a", "B", "a-b", "a0", "é", "Z", "_", "~x"];
    for name in files {
        d.write_all("b", &format!("dir/{name}"), vec![1])
            .await
            .unwrap();
    }
    d.write_all("b", "dir/a/inner", vec![1]).await.unwrap_err(); // "a" is a file
    d.write_all("b", "dir/sub/inner", vec![1]).await.unwrap();
    d.write_all("b", "dir/a.d/inner", vec![1]).await.unwrap();
    let mut expected: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    expected.push("sub/".into());
    expected.push("a.d/".into());
    expected.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    let listed = d.list_dir("b", "dir", 1000).await.unwrap();
    assert_eq!(listed, expected);
    assert_eq!(listed.first().map(String::as_str), Some("B"));
    assert_eq!(listed.last().map(String::as_str), Some("é"));
    assert_eq!(
        d.list_dir("b", "dir", 3).await.unwrap(),
        expected[..3],
        "limit keeps the smallest names"
    );
    assert!(d.list_dir("b", "dir", 0).await.unwrap().is_empty());
    assert_eq!(d.list_dir("b", "", 10).await.unwrap(), ["dir/"]);
    assert!(matches!(
        d.list_dir("b", "nope", 10).await,
        Err(DriveError::FileNotFound)
    ));
    assert!(matches!(
        d.list_dir("b", "dir/a", 10).await,
        Err(DriveError::FileNotFound)
    ));
    assert!(matches!(
        d.list_dir("novol", "", 10).await,
        Err(DriveError::VolumeNotFound)
    ));
    // A directory of many entries, listed with a small limit.
    for i in (0..300).rev() {
        d.write_all("b", &format!("many/{i:04}"), vec![])
            .await
            .unwrap();
    }
    let first = d.list_dir("b", "many", 5).await.unwrap();
    assert_eq!(first, ["0000", "0001", "0002", "0003", "0004"]);
    assert_eq!(d.list_dir("b", "many", 1000).await.unwrap().len(), 300);
}

async fn path_traversal_rejected(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    let bad_paths = [
        "",
        ".",
        "..",
        "../outside/secret",
        "a/../../outside",
        "/etc/passwd",
        "a\0b",
        "a//b",
        "./x",
    ];
    for bad in bad_paths {
        assert!(
            invalid(&d.read_all("b", bad, 100).await),
            "read_all {bad:?}"
        );
        assert!(
            invalid(&d.write_all("b", bad, vec![1]).await),
            "write_all {bad:?}"
        );
        assert!(
            invalid(&d.create_file("b", bad, None).await.map(drop)),
            "create_file {bad:?}"
        );
        assert!(invalid(&d.stat_file("b", bad).await), "stat_file {bad:?}");
        assert!(invalid(&d.delete("b", bad, true).await), "delete {bad:?}");
        assert!(
            invalid(&d.move_to_trash("b", bad).await),
            "move_to_trash {bad:?}"
        );
        assert!(
            invalid(&d.rename("b", bad, "b", "x").await),
            "rename src {bad:?}"
        );
        assert!(
            invalid(&d.rename("b", "x", "b", bad).await),
            "rename dst {bad:?}"
        );
        assert!(
            invalid(&d.open_reader("b", bad, 0, None).await.map(drop)),
            "open_reader {bad:?}"
        );
        let buf = AlignedBuf::with_capacity(10).unwrap();
        assert!(
            invalid(&d.read_file_at("b", bad, 0, 1, buf).await),
            "read_file_at {bad:?}"
        );
        if !bad.is_empty() {
            assert!(invalid(&d.list_dir("b", bad, 10).await), "list_dir {bad:?}");
        }
        // As a volume too.
        assert!(invalid(&d.make_volume(bad).await), "make_volume {bad:?}");
        assert!(
            invalid(&d.read_all(bad, "x", 100).await),
            "read_all volume {bad:?}"
        );
        assert!(
            invalid(&d.list_dir(bad, "", 10).await),
            "list_dir volume {bad:?}"
        );
        assert!(
            invalid(&d.delete_volume(bad, true).await),
            "delete_volume {bad:?}"
        );
        assert!(invalid(&d.stat_volume(bad).await), "stat_volume {bad:?}");
    }
    assert!(matches!(
        d.read_all("..", "outside/secret", 100).await,
        Err(DriveError::InvalidPath(_))
    ));
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        1,
        "nothing created outside the root"
    );
    let long = "x".repeat(300);
    assert!(matches!(
        d.write_all("b", &long, vec![1]).await,
        Err(DriveError::NameTooLong)
    ));
}

async fn format_lifecycle(kind: Kind) {
    let env = open(kind).await;
    let d: &dyn Drive = &env.drive;
    assert!(matches!(load_format(d).await, Err(DriveError::Unformatted)));
    let sets = vec![
        vec![Uuid::new_v4(), Uuid::new_v4()],
        vec![Uuid::new_v4(), Uuid::new_v4()],
    ];
    let deployment = Uuid::new_v4();
    let formats = build_formats(deployment, &sets).unwrap();
    let position = DrivePosition { set: 1, disk: 0 };
    let reference = &formats[0];
    assert!(matches!(
        verify_format(d, reference, Some(position)).await,
        Err(DriveError::Unformatted)
    ));
    save_format(d, &formats[2], false).await.unwrap();
    assert_eq!(d.id(), Some(sets[1][0]));
    for volume in META_VOLUMES {
        d.stat_volume(volume).await.unwrap();
    }
    // Byte-exact MinIO JSON on disk.
    let on_disk = std::fs::read(env.root().join(".minio.sys/format.json")).unwrap();
    assert_eq!(on_disk, formats[2].to_json());
    assert!(on_disk.starts_with(format!(r#"{{"version":"1","format":"xl","id":"{deployment}","xl":{{"version":"3","this":"{}""#, sets[1][0]).as_bytes()));

    d.set_id(None);
    assert_eq!(
        verify_format(d, reference, Some(position)).await.unwrap(),
        formats[2]
    );
    assert_eq!(d.id(), Some(sets[1][0]));
    assert!(matches!(
        save_format(d, &formats[2], false).await,
        Err(DriveError::Format(FormatError::AlreadyFormatted))
    ));

    let foreign = build_formats(Uuid::new_v4(), &sets).unwrap();
    assert!(matches!(
        verify_format(d, &foreign[0], Some(position)).await,
        Err(DriveError::Format(FormatError::DeploymentMismatch { .. }))
    ));
    assert!(matches!(
        verify_format(d, reference, Some(DrivePosition { set: 0, disk: 1 })).await,
        Err(DriveError::Format(FormatError::WrongPosition { .. }))
    ));

    d.write_all(
        META_VOLUME,
        FORMAT_FILE,
        b"{\"version\":\"1\",\"form".to_vec(),
    )
    .await
    .unwrap();
    assert!(matches!(
        load_format(d).await,
        Err(DriveError::Format(FormatError::Corrupt(_)))
    ));
    d.write_all(
        META_VOLUME,
        FORMAT_FILE,
        br#"{"version":"1","format":"fs","id":"x","fs":{"version":"2"}}"#.to_vec(),
    )
    .await
    .unwrap();
    assert!(matches!(
        load_format(d).await,
        Err(DriveError::Format(FormatError::UnknownFormat { .. }))
    ));
    // Healing a drive's format overwrites on request.
    save_format(d, &formats[2], true).await.unwrap();
    verify_format(d, reference, Some(position)).await.unwrap();
}

async fn disk_info_sane(kind: Kind) {
    let env = open(kind).await;
    let info = env.drive.disk_info().await.unwrap();
    assert!(info.total > 0);
    assert!(
        info.free <= info.total && info.used <= info.total,
        "{info:?}"
    );
    assert!(info.files_total >= info.files_free);
    assert_eq!(info.backend, env.drive.backend());
    eprintln!("disk_info: {info:?}");
}

async fn many_parallel_operations(kind: Kind) {
    let env = open(kind).await;
    let d = Arc::new(env.drive.clone());
    d.make_volume("b").await.unwrap();
    d.make_volume(TMP_VOLUME).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..64u64 {
        let d = Arc::clone(&d);
        tasks.push(tokio::spawn(async move {
            let data = pattern(100 + i, 65_536 + 7 * i as usize);
            let meta = pattern(200 + i, 300);
            let obj = format!("prefix/obj{i}");
            stream_write(
                &*d,
                TMP_VOLUME,
                &format!("up{i}/dd/part.1"),
                &data,
                &[4096, 1000],
            )
            .await;
            d.rename(TMP_VOLUME, &format!("up{i}/dd"), "b", &format!("{obj}/dd"))
                .await
                .unwrap();
            d.delete(TMP_VOLUME, &format!("up{i}"), false)
                .await
                .unwrap();
            d.write_all("b", &format!("{obj}/xl.meta"), meta.clone())
                .await
                .unwrap();
            assert_eq!(
                d.read_all("b", &format!("{obj}/xl.meta"), 1 << 20)
                    .await
                    .unwrap(),
                meta
            );
            let (buf, n) = d
                .read_file_at(
                    "b",
                    &format!("{obj}/dd/part.1"),
                    1000,
                    50_000,
                    AlignedBuf::with_capacity(60_000).unwrap(),
                )
                .await
                .unwrap();
            assert_eq!((n, &buf[..]), (50_000, &data[1000..51_000]));
            assert_eq!(d.list_dir("b", &obj, 10).await.unwrap(), ["dd/", "xl.meta"]);
            d.delete("b", &format!("{obj}/dd"), true).await.unwrap();
            d.delete("b", &format!("{obj}/xl.meta"), false)
                .await
                .unwrap();
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("task hung")
            .unwrap();
    }
    assert!(
        d.list_dir("b", "", 10).await.unwrap().is_empty(),
        "all objects and their parents gone"
    );
    assert_eq!(d.health().state, DriveState::Online);
}

async fn stat_and_health(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    d.write_all("b", "x/f", vec![0; 123]).await.unwrap();
    let file = d.stat_file("b", "x/f").await.unwrap();
    assert_eq!((file.size, file.is_dir), (123, false));
    assert!(file.modified.is_some());
    assert!(d.stat_file("b", "x").await.unwrap().is_dir);
    assert!(matches!(
        d.stat_file("b", "y").await,
        Err(DriveError::FileNotFound)
    ));
    assert!(matches!(
        d.stat_file("c", "y").await,
        Err(DriveError::VolumeNotFound)
    ));
    let health = d.health();
    assert_eq!(health.state, DriveState::Online);
    assert_eq!(health.consecutive_failures, 0);
    assert_eq!(d.id(), None);
    assert!(d.label().ends_with("drive"));
}

async fn read_errors(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    stream_write(d, "b", "f", &pattern(11, 5000), &[5000]).await;
    let small = AlignedBuf::with_capacity(4096).unwrap();
    assert!(matches!(
        d.read_file_at("b", "f", 0, 5000, small).await,
        Err(DriveError::InvalidArgument(_))
    ));
    let buf = AlignedBuf::with_capacity(4096).unwrap();
    assert!(matches!(
        d.read_file_at("b", "g", 0, 1, buf).await,
        Err(DriveError::FileNotFound)
    ));
    let buf = AlignedBuf::with_capacity(4096).unwrap();
    assert!(matches!(
        d.read_file_at("nob", "g", 0, 1, buf).await,
        Err(DriveError::VolumeNotFound)
    ));
    let buf = AlignedBuf::with_capacity(4096).unwrap();
    let (buf, n) = d.read_file_at("b", "f", 6000, 100, buf).await.unwrap();
    assert_eq!(
        (n, buf.len()),
        (0, 0),
        "reading past the end returns nothing"
    );
    assert!(matches!(
        d.open_reader("b", "f", 4000, Some(1001)).await.map(drop),
        Err(DriveError::OutOfRange { .. })
    ));
    assert!(matches!(
        d.open_reader("b", "f", 5001, None).await.map(drop),
        Err(DriveError::OutOfRange { .. })
    ));
    assert_eq!(
        d.open_reader("b", "f", 5000, None)
            .await
            .unwrap()
            .remaining(),
        0
    );
}

// ---- not per backend ----

/// On a host where a plain ring can be created, `Auto` must pick io_uring.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_selects_io_uring_when_the_kernel_allows_it() {
    let ring_ok = io_uring::IoUring::new(8).is_ok();
    let dir = tempfile::tempdir_in(test_base()).unwrap();
    let drive = LocalDrive::open(dir.path(), LocalDriveConfig::default())
        .await
        .unwrap();
    if ring_ok {
        assert_eq!(drive.backend(), BackendKind::IoUring);
        assert!(
            LocalDrive::open(dir.path(), LocalDriveConfig::with_backend(Backend::IoUring))
                .await
                .is_ok()
        );
    } else {
        eprintln!(
            "\n!!!!!!!!!! IO_URING REFUSED ON THIS HOST: Auto must fall back to the thread pool.\n"
        );
        assert_eq!(drive.backend(), BackendKind::ThreadPool);
        assert!(matches!(
            LocalDrive::open(dir.path(), LocalDriveConfig::with_backend(Backend::IoUring)).await,
            Err(DriveError::BackendUnavailable(_))
        ));
    }
}

/// Both backends see the same bytes: what one wrote, the other reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backends_interoperate() {
    let env = open(Kind::Uring).await;
    let other = LocalDrive::open(
        env.root(),
        LocalDriveConfig::with_backend(Backend::ThreadPool),
    )
    .await
    .unwrap();
    env.drive.make_volume("b").await.unwrap();
    let data = pattern(12, 300_001);
    stream_write(&env.drive, "b", "u", &data, &[65_536, 3]).await;
    stream_write(&other, "b", "p", &data, &[4096 * 3, 1]).await;
    assert_eq!(other.read_all("b", "u", 1 << 20).await.unwrap(), data);
    assert_eq!(env.drive.read_all("b", "p", 1 << 20).await.unwrap(), data);
}

/// Dropping a drive stops its ring thread; a drive whose futures were
/// cancelled mid-flight keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_operations_are_safe() {
    let env = open(Kind::Uring).await;
    let d = Arc::new(env.drive.clone());
    d.make_volume("b").await.unwrap();
    let data = pattern(13, 1 << 20);
    stream_write(&*d, "b", "f", &data, &[1 << 20]).await;
    for round in 0..50 {
        let d2 = Arc::clone(&d);
        let task = tokio::spawn(async move {
            let buf = AlignedBuf::with_capacity(1 << 20).unwrap();
            d2.read_file_at("b", "f", 0, 1 << 20, buf).await
        });
        if round % 2 == 0 {
            tokio::task::yield_now().await;
        }
        task.abort();
        let _ = task.await;
    }
    let (buf, n) = d
        .read_file_at(
            "b",
            "f",
            0,
            1 << 20,
            AlignedBuf::with_capacity(1 << 20).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(n, 1 << 20);
    assert_eq!(&buf[..], &data[..]);
    assert_eq!(d.health().state, DriveState::Online);
}

/// `read_file_at_piped` reads what `read_file_at` does, and with cached
/// reads on, a range in the page cache comes with a pipe holding the same
/// bytes; through the deadline wrapper too.
async fn piped_reads(kind: Kind) {
    let env = open_in(kind, &test_base(), |cfg| cfg.piped_reads = true).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let data = pattern(31, (1 << 20) + 4321);
    stream_write(d, "b", "f", &data, &[1 << 20]).await;
    let wrapped = DeadlineDrive::new(Arc::new(env.drive.clone()), DeadlineConfig::default());
    // Written past the page cache where O_DIRECT works: read once the
    // usual way, so that every page is cached.
    assert_eq!(d.read_all("b", "f", 4 << 20).await.unwrap(), data);
    for (name, drive) in [("local", d as &dyn Drive), ("deadline", &wrapped)] {
        for (off, len) in [(524_320usize + 9, 524_320usize), (0, 4096), (77, 1000)] {
            let buf = AlignedBuf::with_capacity(len + 4096).unwrap();
            let (buf, n, pipe) = drive
                .read_file_at_piped("b", "f", off as u64, len, buf)
                .await
                .unwrap();
            assert_eq!(
                (n, &buf[..]),
                (len, &data[off..off + len]),
                "{name} {off}+{len}"
            );
            let Some(mut pipe) = pipe else {
                assert!(
                    kind != Kind::Uring,
                    "{name} {off}+{len}: cached, but no pipe"
                );
                continue;
            };
            assert_eq!(kind, Kind::Uring, "a pipe with cached reads off");
            let mut held = vec![0u8; pipe.len()];
            assert_eq!(pipe.read_into(&mut held).unwrap(), len);
            assert!(
                held == data[off..off + len],
                "{name} {off}+{len}: the pipe's bytes"
            );
        }
    }
    // Errors are the usual read's.
    let buf = AlignedBuf::with_capacity(4096).unwrap();
    assert!(matches!(
        d.read_file_at_piped("b", "missing", 0, 10, buf).await,
        Err(DriveError::FileNotFound)
    ));
    // Pipes are off by default: the same cached range, read, no pipe.
    let plain = open(kind).await;
    plain.drive.make_volume("b").await.unwrap();
    stream_write(&plain.drive, "b", "f", &data, &[1 << 20]).await;
    assert_eq!(plain.drive.read_all("b", "f", 4 << 20).await.unwrap(), data);
    let buf = AlignedBuf::with_capacity(8192).unwrap();
    let (buf, n, pipe) = plain
        .drive
        .read_file_at_piped("b", "f", 77, 4096, buf)
        .await
        .unwrap();
    assert_eq!((n, &buf[..]), (4096, &data[77..77 + 4096]));
    assert!(pipe.is_none(), "a pipe with piped reads off by default");
}

/// Reads `len` bytes at `off` through `file` and checks them against
/// `data`, the whole file (short only at its end).
async fn assert_reads(file: &dyn ShardFile, data: &[u8], off: usize, len: usize, what: &str) {
    let buf = AlignedBuf::with_capacity(len).unwrap();
    let (buf, n) = file.read_at(off as u64, len, buf).await.unwrap();
    let end = (off + len).min(data.len());
    assert_eq!(
        (n, &buf[..]),
        (end - off, &data[off..end]),
        "{what}: {off}+{len}"
    );
}

/// Reads through shard files not in the page cache, with huge fills
/// (`LocalDriveConfig::huge_fill`) on and off: the bytes are the file's
/// whatever the order of the reads (in order, back, across the 2 MiB chunks
/// a fill brings in, a jump ahead, the tail), also when many are in flight
/// at once; and a file cut short under an open descriptor reads short, it
/// does not bring the process down (a fill never touches a page past the
/// end).
async fn shard_files_cold(kind: Kind) {
    const REC: usize = 524_320;
    for huge in [true, false] {
        let env = open_in(kind, &test_base(), |c| c.huge_fill = huge).await;
        let d = &env.drive;
        d.make_volume("b").await.unwrap();
        let data: Arc<[u8]> = pattern(41, (5 << 20) + 4321).into();
        stream_write(d, "b", "f", &data, &[1 << 20]).await;
        let path = env.root().join("b").join("f");
        let evict = || {
            let f = std::fs::File::open(&path).unwrap();
            f.sync_all().unwrap();
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        };
        let ranges = [
            (0, REC),
            (REC, REC),
            (3 * REC, REC),
            (2 * REC, REC),
            ((2 << 20) - 10, 20),
            ((4 << 20) + 1, REC),
            (data.len() - 5, 5),
            (100, 10),
            (data.len() - 5, 100),
        ];
        for pass in 0..2 {
            evict();
            let file = d.open_shard_file("b", "f").await.unwrap().unwrap();
            for (off, len) in ranges {
                assert_reads(&*file, &data, off, len, &format!("huge {huge} pass {pass}")).await;
            }
        }

        evict();
        let file = d.open_shard_file("b", "f").await.unwrap().unwrap();
        let reads: Vec<_> = (0..data.len().div_ceil(REC))
            .map(|i| {
                let (file, data) = (Arc::clone(&file), Arc::clone(&data));
                let what = format!("huge {huge}, records in flight together");
                tokio::spawn(async move { assert_reads(&*file, &data, i * REC, REC, &what).await })
            })
            .collect();
        for read in reads {
            read.await.unwrap();
        }

        evict();
        let file = d.open_shard_file("b", "f").await.unwrap().unwrap();
        let cut = (3 << 20) + 5;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let buf = AlignedBuf::with_capacity(1000).unwrap();
        let (buf, n) = file.read_at((cut - 100) as u64, 1000, buf).await.unwrap();
        assert_eq!(
            (n, &buf[..]),
            (100, &data[cut - 100..cut]),
            "huge {huge}: cut short"
        );
        let buf = AlignedBuf::with_capacity(REC).unwrap();
        assert_eq!(
            file.read_at(4 << 20, REC, buf).await.unwrap().1,
            0,
            "huge {huge}: past the end"
        );
    }
}

async fn shard_files(kind: Kind) {
    let env = open(kind).await;
    let d = &env.drive;
    d.make_volume("b").await.unwrap();
    let data = pattern(37, (1 << 20) + 4321);
    stream_write(d, "b", "f", &data, &[1 << 20]).await;
    let wrapped = DeadlineDrive::new(Arc::new(env.drive.clone()), DeadlineConfig::default());
    let ranges = [
        (524_320usize + 9, 524_320usize),
        (0, 4096),
        (77, 1000),
        (data.len() - 100, 1000),
    ];
    for (name, drive) in [("local", d as &dyn Drive), ("deadline", &wrapped)] {
        let file = drive
            .open_shard_file("b", "f")
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: the local drive opens shard files"));
        // Twice: from the disk (written past the page cache where O_DIRECT
        // works), then from the cache the first pass filled.
        for pass in 0..2 {
            for (off, len) in ranges {
                assert_reads(&*file, &data, off, len, &format!("{name} pass {pass}")).await;
            }
        }
        let buf = AlignedBuf::with_capacity(4096).unwrap();
        assert_eq!(file.read_at(10, 0, buf).await.unwrap().1, 0);
        let buf = AlignedBuf::with_capacity(4096).unwrap();
        assert!(matches!(
            file.read_at(0, 8192, buf).await,
            Err(DriveError::InvalidArgument(_))
        ));
        // Errors at the open are the usual read's.
        assert!(matches!(
            drive.open_shard_file("b", "missing").await,
            Err(DriveError::FileNotFound)
        ));
        assert!(matches!(
            drive.open_shard_file("nope", "f").await,
            Err(DriveError::VolumeNotFound)
        ));
        assert!(matches!(
            drive.open_shard_file("b", "../f").await,
            Err(DriveError::InvalidPath(_))
        ));
    }
    // An open file stays readable after its name is gone.
    let file = d.open_shard_file("b", "f").await.unwrap().unwrap();
    d.delete("b", "f", false).await.unwrap();
    let buf = AlignedBuf::with_capacity(1000).unwrap();
    let (buf, n) = file.read_at(77, 1000, buf).await.unwrap();
    assert_eq!((n, &buf[..]), (1000, &data[77..1077]));
}
