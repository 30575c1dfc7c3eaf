//! Shard reads: positioned reads and stream readers over every size and
//! range, read-ahead, read errors, piped reads, and shard files (cached and
//! cold, with huge fills on and off).

use super::*;

suite!(
    streaming_sizes_and_ranges,
    stream_reader_read_ahead,
    read_errors,
    piped_reads,
    shard_files,
    shard_files_cold,
);

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
