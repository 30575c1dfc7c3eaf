//! The drive as a whole: `format.json`, disk info, health, many operations
//! at once; and, not per backend, the choice of backend, both backends on
//! one tree, and cancelled operations.

use super::*;

suite!(
    format_lifecycle,
    disk_info_sane,
    many_parallel_operations,
    stat_and_health,
);

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
