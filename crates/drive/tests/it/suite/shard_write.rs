//! Shard writers: size checks, whole blocks and tails around the staging
//! buffer, vectored batches, dropped writers, and `O_DIRECT` where the file
//! system takes it (and the fallback where it does not).

use super::*;

suite!(
    writer_size_checks,
    writer_whole_blocks_and_tails,
    writer_many_buffers_at_once,
    dropped_writer_leaves_partial_file,
    direct_io_used_where_supported,
    direct_io_refusal_falls_back,
    tmpfs_dev_shm,
);

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
