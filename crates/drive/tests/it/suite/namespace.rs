//! Volumes and names: volumes, renames (of files and of data directories
//! over others), deletes with their parents, the trash, listings, and paths
//! that would leave the drive.

use super::*;

suite!(
    volumes,
    rename_files_and_dirs,
    rename_data_dir_over_existing,
    delete_removes_empty_parents,
    delete_recursive_and_trash,
    trash_emptied_in_background,
    list_dir_order_and_limit,
    path_traversal_rejected,
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
