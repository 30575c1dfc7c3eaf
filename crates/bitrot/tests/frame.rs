//! The shard frame: layout arithmetic, sans-IO seal/open, and the io
//! adapters (round trips, corruption, truncation, range reads).

mod common;

use std::io::{Cursor, Read, Seek, SeekFrom, Write};

use bitrot::{
    Bitrot, FrameError, FrameReader, FrameWriter, HASH_LEN, Kernel, LayoutError,
    MAGIC_HIGHWAYHASH256_KEY, ShardFrame, ShardLayout, shard_file_size,
};
use common::{RngExt, kernels, seed};

/// The expected file, built the obvious way (independently of the crate's
/// frame code): `[HH256(block)][block]` per block.
fn reference_file(data: &[u8], shard: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for block in data.chunks(shard) {
        out.extend_from_slice(&Kernel::portable().hash256(&MAGIC_HIGHWAYHASH256_KEY, block));
        out.extend_from_slice(block);
    }
    out
}

fn frame(shard: usize, len: u64) -> ShardFrame {
    ShardFrame::minio(ShardLayout::new(shard, len).unwrap())
}

fn interesting_lengths(shard: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        shard - 1,
        shard,
        shard + 1,
        2 * shard,
        3 * shard - 1,
        7 * shard + 3,
    ];
    v.sort_unstable();
    v.dedup();
    v
}

const SHARDS: [usize; 9] = [1, 2, 7, 31, 32, 33, 64, 1000, 4096];

#[test]
fn layout_matches_minio_arithmetic() {
    let (mut rng, _g) = seed("layout_matches_minio_arithmetic");
    // MinIO: ceilFrac(size, shardSize) * 32 + size.
    let ceil_frac = |a: u64, b: u64| a.div_ceil(b);
    for _ in 0..10_000 {
        let shard = 1 + rng.usize(..1 << 20);
        // Up to 2^56: the file size cannot overflow.
        let len = rng.u64(..) >> (8 + rng.usize(..56));
        let l = ShardLayout::new(shard, len).unwrap();
        let want = ceil_frac(len, shard as u64) * 32 + len;
        assert_eq!(l.file_size(), want);
        assert_eq!(shard_file_size(len, shard as u64), Some(want));
        assert_eq!(l.blocks(), ceil_frac(len, shard as u64));
        assert_eq!(ShardLayout::from_file_size(shard, want), Ok(l));
    }
    let l = ShardLayout::new(10, 25).unwrap();
    assert_eq!((l.blocks(), l.file_size(), l.stride()), (3, 121, 42));
    assert_eq!(
        (0..4).map(|i| l.block_len(i)).collect::<Vec<_>>(),
        [Some(10), Some(10), Some(5), None]
    );
    assert_eq!(
        (0..4).map(|i| l.record_offset(i)).collect::<Vec<_>>(),
        [Some(0), Some(42), Some(84), None]
    );
    assert_eq!(l.record_len(2), Some(37));
    assert_eq!(l.data_offset(2), Some(20));
    assert_eq!(l.block_containing(19), Some(1));
    assert_eq!(l.block_containing(24), Some(2));
    assert_eq!(l.block_containing(25), None);
    let empty = ShardLayout::new(10, 0).unwrap();
    assert_eq!((empty.blocks(), empty.file_size()), (0, 0));
    assert_eq!(ShardLayout::new(0, 5), Err(LayoutError::ZeroShardSize));
    assert_eq!(shard_file_size(5, 0), None);
    assert_eq!(ShardLayout::new(1, u64::MAX), Err(LayoutError::TooLarge));
    // A last record of only a digest (or less) is impossible.
    for bad in [1, 32, 42 + 32] {
        assert_eq!(
            ShardLayout::from_file_size(10, bad),
            Err(LayoutError::ImpossibleFileSize(bad))
        );
    }
    assert_eq!(ShardLayout::from_file_size(10, 0), Ok(empty));
}

#[test]
fn frame_digest_is_minio_highwayhash() {
    // The first record's digest of a one-block file is the reference
    // vector's HighwayHash-256 (computed with minio/highwayhash).
    let input = hex::decode(
        "69e636fac86e97d3992cd5a6ecfa98", // case 6 of testdata/highwayhash.json
    )
    .unwrap();
    let want = "02f566fae77b1b87588461b16bfc89601e201357e95c6904690eba134d5bd610";
    let f = frame(input.len(), input.len() as u64);
    let mut rec = vec![0u8; 32 + input.len()];
    assert_eq!(f.write_record(0, &input, &mut rec).unwrap(), rec.len());
    assert_eq!(hex::encode(&rec[..32]), want);
    assert_eq!(&rec[32..], &input[..]);
}

#[test]
fn round_trips() {
    let (mut rng, _g) = seed("round_trips");
    for &shard in &SHARDS {
        for len in interesting_lengths(shard) {
            let data = rng.bytes(len);
            let want = reference_file(&data, shard);
            let f = frame(shard, len as u64);
            assert_eq!(want.len() as u64, f.layout().file_size());

            // Writer, arbitrary write sizes.
            let mut w = FrameWriter::new(Vec::new(), *f.bitrot(), shard);
            let mut rest = &data[..];
            while !rest.is_empty() {
                let n = (1 + rng.usize(..3 * shard)).min(rest.len());
                w.write_all(&rest[..n]).unwrap();
                rest = &rest[n..];
            }
            assert_eq!(w.data_len(), len as u64);
            let file = w.finish().unwrap();
            assert_eq!(file, want, "writer: shard {shard}, len {len}");

            // Writer, block at a time.
            let mut w = FrameWriter::new(Vec::new(), *f.bitrot(), shard);
            for block in data.chunks(shard) {
                w.write_block(block).unwrap();
            }
            assert_eq!(w.blocks_written(), f.layout().blocks());
            assert_eq!(
                w.finish().unwrap(),
                want,
                "write_block: shard {shard}, len {len}"
            );

            // Sans-IO seal, in place and by copy.
            let mut sealed = vec![0u8; want.len()];
            for i in 0..f.layout().blocks() {
                let off = f.layout().record_offset(i).unwrap() as usize;
                let rl = f.layout().record_len(i).unwrap();
                let d0 = f.layout().data_offset(i).unwrap() as usize;
                let block = &data[d0..d0 + rl - HASH_LEN];
                let rec = &mut sealed[off..off + rl];
                rec[HASH_LEN..].copy_from_slice(block);
                f.seal_record(i, rec).unwrap();
                let mut hash = [0u8; 32];
                f.seal(i, block, &mut hash).unwrap();
                assert_eq!(hash, rec[..32]);
                let mut copy = vec![0u8; rl + 5];
                assert_eq!(f.write_record(i, block, &mut copy).unwrap(), rl);
                assert_eq!(&copy[..rl], &rec[..]);
                assert_eq!(f.open(i, rec).unwrap(), block);
            }
            assert_eq!(sealed, want);

            // Reader, arbitrary read sizes.
            let mut r = FrameReader::new(Cursor::new(&file), f);
            let mut got = Vec::new();
            loop {
                let mut buf = vec![0u8; 1 + rng.usize(..2 * shard + 3)];
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, data, "reader: shard {shard}, len {len}");
            assert_eq!(r.position(), len as u64);

            // Reader, block at a time (borrowed, no copy).
            let mut r = FrameReader::new(Cursor::new(&file), f);
            let mut got = Vec::new();
            let mut blocks = 0;
            while let Some(b) = r.next_block().unwrap() {
                got.extend_from_slice(b);
                blocks += 1;
            }
            assert_eq!(got, data);
            assert_eq!(blocks, f.layout().blocks());
            FrameReader::new(Cursor::new(&file), f)
                .verify_to_end()
                .unwrap();
        }
    }
}

#[test]
fn round_trips_on_every_kernel_and_key() {
    let (mut rng, _g) = seed("round_trips_on_every_kernel_and_key");
    let data = rng.bytes(100_000);
    let key = rng.key();
    let mut files = Vec::new();
    for k in kernels("round_trips_on_every_kernel_and_key") {
        let bitrot = Bitrot::new(k, &key);
        let f = ShardFrame::new(ShardLayout::new(4096, data.len() as u64).unwrap(), bitrot);
        let mut w = FrameWriter::new(Vec::new(), bitrot, 4096);
        w.write_all(&data).unwrap();
        let file = w.finish().unwrap();
        let mut back = Vec::new();
        FrameReader::new(Cursor::new(&file), f)
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data, "kernel {k}");
        files.push(file);
    }
    assert!(files.windows(2).all(|w| w[0] == w[1]));
}

/// Reads everything; returns the bytes yielded and the error, if any.
fn read_all(file: &[u8], f: ShardFrame, chunk: usize) -> (Vec<u8>, Option<FrameError>) {
    let mut r = FrameReader::new(Cursor::new(file), f);
    let mut got = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => {
                let fe = e
                    .into_inner()
                    .expect("frame error payload")
                    .downcast::<FrameError>()
                    .expect("a FrameError");
                return (got, Some(*fe));
            }
        }
    }
}

#[test]
fn every_flipped_bit_is_caught() {
    let (mut rng, _g) = seed("every_flipped_bit_is_caught");
    for (shard, len) in [(16usize, 40usize), (7, 7), (5, 23), (64, 64), (1, 3)] {
        let data = rng.bytes(len);
        let file = reference_file(&data, shard);
        let f = frame(shard, len as u64);
        let stride = shard + HASH_LEN;
        for bit in 0..file.len() * 8 {
            let mut bad = file.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let block = (bit / 8 / stride) as u64;
            let rec_off = block * stride as u64;
            let (got, err) = read_all(&bad, f, 1 + bit % 50);
            let ctx = format!("shard {shard}, len {len}, bit {bit}");
            match err {
                Some(FrameError::HashMismatch {
                    block: b,
                    offset,
                    stored,
                    computed,
                }) => {
                    assert_eq!((b, offset), (block, rec_off), "{ctx}");
                    assert_ne!(stored, computed, "{ctx}");
                }
                other => panic!("{ctx}: expected a hash mismatch, got {other:?}"),
            }
            // Exactly the verified blocks before the bad one came out.
            assert_eq!(got, data[..block as usize * shard], "{ctx}");
            // The sans-IO open and the verifier agree.
            let rl = f.layout().record_len(block).unwrap();
            let rec = &bad[rec_off as usize..rec_off as usize + rl];
            assert!(
                matches!(f.open(block, rec), Err(FrameError::HashMismatch { .. })),
                "{ctx}"
            );
            let e = FrameReader::new(Cursor::new(&bad), f)
                .verify_to_end()
                .unwrap_err();
            assert_eq!(
                (e.block(), e.offset()),
                (Some(block), Some(rec_off)),
                "{ctx}"
            );
            assert!(e.is_corruption());
        }
    }
}

#[test]
fn every_truncation_is_caught() {
    let (mut rng, _g) = seed("every_truncation_is_caught");
    for (shard, len) in [(16usize, 40usize), (7, 7), (5, 23), (100, 1000), (33, 32)] {
        let data = rng.bytes(len);
        let file = reference_file(&data, shard);
        let f = frame(shard, len as u64);
        let stride = shard + HASH_LEN;
        for cut in 0..file.len() {
            let short = &file[..cut];
            let block = (cut / stride) as u64;
            let ctx = format!("shard {shard}, len {len}, cut at {cut}");
            let (got, err) = read_all(short, f, 1 + cut % 37);
            match err {
                Some(FrameError::Truncated {
                    block: b,
                    offset,
                    expected_end,
                }) => {
                    assert_eq!((b, offset), (block, cut as u64), "{ctx}");
                    assert_eq!(
                        expected_end,
                        f.layout().record_offset(block).unwrap()
                            + f.layout().record_len(block).unwrap() as u64,
                        "{ctx}"
                    );
                }
                other => panic!("{ctx}: expected truncation, got {other:?}"),
            }
            assert_eq!(got, data[..block as usize * shard], "{ctx}");
            let e = FrameReader::new(Cursor::new(short), f)
                .verify_to_end()
                .unwrap_err();
            assert!(matches!(e, FrameError::Truncated { .. }), "{ctx}: {e}");
            // The sans-IO form: a short record is a truncation at the same
            // file offset.
            let off = f.layout().record_offset(block).unwrap() as usize;
            match f.open(block, &short[off..]) {
                Err(FrameError::Truncated { offset, .. }) => {
                    assert_eq!(offset, cut as u64, "{ctx}")
                }
                other => panic!("{ctx}: {other:?}"),
            }
            // The io::Error kind says end of file.
            let mut r = FrameReader::new(Cursor::new(short), f);
            let mut sink = Vec::new();
            assert_eq!(
                r.read_to_end(&mut sink).unwrap_err().kind(),
                std::io::ErrorKind::UnexpectedEof
            );
        }
        // Extra bytes: the reader stops at the layout, the verifier objects.
        let mut long = file.clone();
        long.push(0);
        let (got, err) = read_all(&long, f, 64);
        assert_eq!((got, err.is_none()), (data.clone(), true));
        match FrameReader::new(Cursor::new(&long), f).verify_to_end() {
            Err(FrameError::TrailingData { offset }) => assert_eq!(offset, file.len() as u64),
            other => panic!("expected trailing data, got {other:?}"),
        }
    }
}

#[test]
fn corrupt_second_block_yields_first_block_then_error() {
    let (mut rng, _g) = seed("corrupt_second_block_yields_first_block_then_error");
    let shard = 1000;
    let data = rng.bytes(3 * shard);
    let mut file = reference_file(&data, shard);
    let second = shard + HASH_LEN;
    file[second + HASH_LEN + 500] ^= 0x10;
    let f = frame(shard, data.len() as u64);

    // One big read: only the first block, then the error, never the second.
    let mut r = FrameReader::new(Cursor::new(&file), f);
    let mut buf = vec![0xAAu8; 3 * shard];
    assert_eq!(r.read(&mut buf).unwrap(), shard);
    assert_eq!(&buf[..shard], &data[..shard]);
    let untouched = buf[shard..].to_vec();
    let e = r.read(&mut buf[shard..]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("block 1"), "{e}");
    assert_eq!(
        buf[shard..],
        untouched,
        "unverified bytes reached the caller"
    );
    // The reader stays failed...
    assert!(matches!(
        r.next_block(),
        Err(FrameError::Poisoned { block: 1 })
    ));
    // ...and read_to_end keeps the verified prefix only.
    let mut r = FrameReader::new(Cursor::new(&file), f);
    let mut all = Vec::new();
    assert!(r.read_to_end(&mut all).is_err());
    assert_eq!(all, data[..shard]);
    // Seeking past the bad block recovers.
    let mut r = FrameReader::new(Cursor::new(&file), f);
    assert!(r.read_to_end(&mut Vec::new()).is_err());
    r.seek(SeekFrom::Start(2 * shard as u64)).unwrap();
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, data[2 * shard..]);
}

#[test]
fn range_reads() {
    let (mut rng, _g) = seed("range_reads");
    for &shard in &[7usize, 64, 1000] {
        let len = 20 * shard + 3;
        let data = rng.bytes(len);
        let file = reference_file(&data, shard);
        let f = frame(shard, len as u64);
        // Starting at every block, with Seek and with a pre-positioned
        // reader (as a ranged stream from storage would be).
        for b in 0..=f.layout().blocks() + 1 {
            let start = (b as usize * shard).min(len);
            let mut r = FrameReader::at_block(Cursor::new(&file), f, b).unwrap();
            assert_eq!(r.position(), start as u64);
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            assert_eq!(got, data[start..], "shard {shard}, at_block {b}");

            let off = f.layout().record_offset(b).unwrap_or(file.len() as u64) as usize;
            let mut r = FrameReader::starting_at(&file[off..], f, b);
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            assert_eq!(got, data[start..], "shard {shard}, starting_at {b}");
        }
        // Random seeks (all three forms) and reads.
        let mut r = FrameReader::new(Cursor::new(&file), f);
        for _ in 0..300 {
            let pos = rng.usize(..len + 10) as u64;
            let to = match rng.usize(..3) {
                0 => SeekFrom::Start(pos),
                1 => SeekFrom::End(pos as i64 - len as i64),
                _ => SeekFrom::Current(pos as i64 - r.position() as i64),
            };
            assert_eq!(r.seek(to).unwrap(), pos);
            let mut buf = vec![0u8; rng.usize(..3 * shard)];
            let mut n = 0;
            while n < buf.len() {
                match r.read(&mut buf[n..]).unwrap() {
                    0 => break,
                    k => n += k,
                }
            }
            let p = pos as usize;
            let want = &data[p.min(len)..(p + buf.len()).min(len)];
            assert_eq!(&buf[..n], want, "shard {shard}, seek to {pos}");
            assert_eq!(r.position(), pos + n as u64);
        }
        assert!(r.seek(SeekFrom::Current(-(len as i64) - 100)).is_err());
    }
}

#[test]
fn many_shards_at_once() {
    let (mut rng, _g) = seed("many_shards_at_once");
    let shard = 4096;
    let len = 2 * shard as u64 + 100;
    let f = frame(shard, len);
    for n in [1usize, 4, 12, 16, 17, 33] {
        for i in 0..f.layout().blocks() {
            let rl = f.layout().record_len(i).unwrap();
            let mut recs: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let mut r = vec![0u8; rl];
                    rng.fill(&mut r[HASH_LEN..]);
                    r
                })
                .collect();
            {
                let mut views: Vec<&mut [u8]> = recs.iter_mut().map(|r| &mut r[..]).collect();
                f.seal_many(i, &mut views).unwrap();
            }
            for r in &recs {
                let mut one = r.clone();
                f.seal_record(i, &mut one).unwrap();
                assert_eq!(&one, r);
            }
            // Corrupt some, shorten one.
            let bad: Vec<usize> = (0..n).filter(|j| j % 5 == 3).collect();
            for &j in &bad {
                recs[j][HASH_LEN + j] ^= 1;
            }
            let mut views: Vec<&[u8]> = recs.iter().map(|r| &r[..]).collect();
            if n > 1 {
                views[n - 1] = &recs[n - 1][..rl - 1];
            }
            let mut out: Vec<Result<&[u8], FrameError>> = (0..n).map(|_| Ok(&[][..])).collect();
            f.open_many(i, &views, &mut out);
            for j in 0..n {
                let off = f.layout().record_offset(i).unwrap();
                match &out[j] {
                    Ok(b) => {
                        let shortened = n > 1 && j == n - 1;
                        assert!(!(bad.contains(&j) || shortened), "stream {j}");
                        assert_eq!(*b, &recs[j][HASH_LEN..]);
                    }
                    Err(FrameError::HashMismatch { block, offset, .. }) => {
                        assert!(bad.contains(&j), "stream {j}");
                        assert_eq!((*block, *offset), (i, off));
                    }
                    Err(FrameError::Truncated { offset, .. }) => {
                        assert_eq!(j, n - 1);
                        assert_eq!(*offset, off + rl as u64 - 1);
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }
        }
    }
}

#[test]
fn misuse_is_reported() {
    let f = frame(10, 25);
    let mut hash = [0u8; 32];
    assert!(matches!(
        f.seal(3, b"x", &mut hash),
        Err(FrameError::BlockOutOfRange {
            block: 3,
            blocks: 3
        })
    ));
    assert!(matches!(f.seal(2, b"short", &mut hash), Ok(())));
    assert!(matches!(
        f.seal(0, b"short", &mut hash),
        Err(FrameError::WrongLength {
            block: 0,
            expected: 10,
            actual: 5
        })
    ));
    assert!(matches!(
        f.seal_record(0, &mut [0u8; 41]),
        Err(FrameError::WrongLength { expected: 42, .. })
    ));
    assert!(matches!(
        f.open(1, &[0u8; 43]),
        Err(FrameError::WrongLength {
            expected: 42,
            actual: 43,
            ..
        })
    ));
    assert!(matches!(
        f.write_record(0, &[0u8; 10], &mut [0u8; 41]),
        Err(FrameError::WrongLength { .. })
    ));

    // Writer: oversize block, data after the short block, partial buffered.
    let b = Bitrot::minio();
    let mut w = FrameWriter::new(Vec::new(), b, 10);
    assert!(w.write_block(&[0u8; 11]).is_err());
    w.write_block(&[0u8; 4]).unwrap();
    assert!(w.write_block(&[0u8; 4]).is_err());
    assert!(w.write_all(b"x").is_err());
    let mut w = FrameWriter::new(Vec::new(), b, 10);
    w.write_all(b"abc").unwrap();
    assert!(w.write_block(&[0u8; 10]).is_err());
    w.write_block(&[]).unwrap();
    assert_eq!(w.finish().unwrap().len(), 35);
    // Empty data: empty file.
    let w = FrameWriter::new(Vec::new(), b, 10);
    assert!(w.finish().unwrap().is_empty());

    // A failing inner writer poisons the frame writer.
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("disk full"));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = FrameWriter::new(Full(50), b, 10);
    assert!(w.write_all(&[1u8; 30]).is_err());
    assert!(w.write_all(&[1u8; 1]).is_err());
    assert!(w.finish().is_err());

    // Io errors from the reader carry the offset.
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("bad sector"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(0);
            self.0 -= n;
            Ok(n)
        }
    }
    let mut r = FrameReader::new(Failing(50), f);
    match r.next_block() {
        Err(FrameError::HashMismatch { block: 0, .. }) => {}
        other => panic!("{other:?}"),
    }
    let mut r = FrameReader::new(Failing(20), f);
    match r.next_block() {
        Err(FrameError::Io {
            block: 0,
            offset: 20,
            source,
        }) => {
            assert_eq!(source.to_string(), "bad sector")
        }
        other => panic!("{other:?}"),
    }
}
