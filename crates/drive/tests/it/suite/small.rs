//! Small files (`write_all`, `read_all`): atomic replacement, the spread
//! staging directories, limits and errors, with group commit and without.

use super::*;

suite!(
    write_all_replaces_atomically,
    write_all_spreads_its_staging,
    read_all_limit,
    small_files_of_every_size,
    small_file_errors,
);

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
