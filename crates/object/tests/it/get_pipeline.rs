//! The GET read path with shard reads in flight ahead of the block being
//! sent (`ObjectLayer::read_object_chunks`): every byte verified, shards
//! going corrupt or missing in the middle of an object reconstructed,
//! ranges across blocks, and nothing of an unreadable block handed out.
//! The tests that corrupt shards run twice: with every read through the
//! drive's ring (reads wait, so the GET reads blocks ahead) and with every
//! shard file in the page cache (reads complete at once, so it reads none
//! ahead), and once more with a sink that asks for pipes, which must hold
//! exactly the bytes of their chunks.

use std::path::{Path, PathBuf};

use crate::support::{data, dirs, put};
use object::layer::{Chunk, ChunkSink, Error, GetOptions, LayerOptions, ObjectLayer};

/// Shard data per record on 2+2 with 1 MiB blocks, and the record stride.
const SHARD: u64 = 1 << 19;
const STRIDE: u64 = SHARD + 32;

/// Collects the chunks handed out; asking for pipes, checks that each
/// pipe holds its chunk's bytes.
#[derive(Default)]
struct Collect {
    chunks: Vec<Chunk>,
    wants_pipes: bool,
    /// Chunks that came with a pipe.
    piped: usize,
}

impl ChunkSink for Collect {
    async fn put(&mut self, chunk: Chunk) -> std::io::Result<()> {
        assert!(
            self.wants_pipes || !chunk.has_pipe(),
            "a pipe nobody asked for"
        );
        match chunk.into_bytes_and_pipe() {
            (bytes, Some(mut pipe)) => {
                let mut held = vec![0u8; pipe.len()];
                assert_eq!(pipe.read_into(&mut held)?, bytes.len());
                assert!(held == bytes[..], "a pipe holds other bytes than its chunk");
                self.piped += 1;
                self.chunks.push(Chunk::from(bytes));
            }
            (bytes, None) => self.chunks.push(Chunk::from(bytes)),
        }
        Ok(())
    }

    fn wants_pipes(&self) -> bool {
        self.wants_pipes
    }
}

impl Collect {
    fn bytes(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|c| c.as_slice().iter().copied())
            .collect()
    }
}

/// The drives as the library makes them, but with pipes on (off by
/// default), so that a sink asking for them gets them.
async fn open(ds: &[PathBuf]) -> ObjectLayer {
    let mut cfg = drive::LocalDriveConfig::default();
    cfg.piped_reads = true;
    let opts = LayerOptions {
        drive: Some(cfg),
        ..LayerOptions::default()
    };
    ObjectLayer::open_dirs(ds, opts).await.expect("open")
}

/// Where a test's shard reads are served from.
#[derive(Clone, Copy, Debug)]
enum Reads {
    /// The drives' backend (cached reads off): every read waits.
    Backend,
    /// The page cache: [`warm`] before each GET, and cached reads on.
    PageCache,
    /// The page cache, for a sink that asks for pipes.
    Piped,
}

impl Reads {
    fn piped(self) -> bool {
        matches!(self, Reads::Piped)
    }
}

async fn open_for(ds: &[PathBuf], reads: Reads) -> ObjectLayer {
    let mut cfg = drive::LocalDriveConfig::default();
    cfg.cached_reads = !matches!(reads, Reads::Backend);
    // Pipes are off by default; whether a chunk comes with one is then up
    // to the sink alone.
    cfg.piped_reads = true;
    let opts = LayerOptions {
        drive: Some(cfg),
        ..LayerOptions::default()
    };
    ObjectLayer::open_dirs(ds, opts).await.expect("open")
}

/// Brings every drive's shard file of `key` into the page cache (PUTs
/// write them with `O_DIRECT`, past it).
fn warm(ds: &[PathBuf], bucket: &str, key: &str, reads: Reads) {
    if !matches!(reads, Reads::Backend) {
        for dir in ds {
            std::fs::read(part_file(dir, bucket, key)).unwrap();
        }
    }
}

/// Reads `offset..offset + len` through the chunk path.
async fn read(
    l: &ObjectLayer,
    b: &str,
    k: &str,
    offset: u64,
    len: u64,
) -> (Collect, Result<(), Error>) {
    read_as(l, b, k, offset, len, Reads::Backend).await
}

/// [`read`], with a sink that asks for pipes if `reads` is
/// [`Reads::Piped`].
async fn read_as(
    l: &ObjectLayer,
    b: &str,
    k: &str,
    offset: u64,
    len: u64,
    reads: Reads,
) -> (Collect, Result<(), Error>) {
    let o = l.open_object(b, k, None).await.expect("open_object");
    let mut sink = Collect {
        wants_pipes: reads.piped(),
        ..Collect::default()
    };
    let r = l.read_object_chunks(&o, offset, len, &mut sink).await;
    (sink, r)
}

fn part_file(dir: &Path, bucket: &str, key: &str) -> PathBuf {
    let obj = dir.join(bucket).join(key);
    for e in std::fs::read_dir(&obj).unwrap().flatten() {
        if e.path().is_dir() {
            return e.path().join("part.1");
        }
    }
    panic!("no data dir under {}", obj.display());
}

/// Flips a data byte of record `block` in drive `d`'s shard file.
fn corrupt(ds: &[PathBuf], d: usize, bucket: &str, key: &str, block: u64) {
    let f = part_file(&ds[d], bucket, key);
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[(block * STRIDE + 32 + 1000) as usize] ^= 0x01;
    std::fs::write(&f, &bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_reads_hand_out_shard_slices() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("pipe").await.unwrap();
    let body = data(10 * (1 << 20) + 4321, 1);
    put(&l, "pipe", "k", &body).await;
    let (sink, r) = read(&l, "pipe", "k", 0, body.len() as u64).await;
    r.unwrap();
    assert_eq!(sink.bytes(), body);
    // One chunk per data shard of every block: nothing was cut smaller or
    // gathered (copied) on the way.
    assert_eq!(sink.chunks.len(), 2 * 11);
    assert!(sink.chunks.iter().all(|c| c.len() as u64 <= SHARD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_across_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("pipe").await.unwrap();
    let size = 5 * (1 << 20) + 777;
    let body = data(size, 2);
    put(&l, "pipe", "k", &body).await;
    let mb = 1u64 << 20;
    let cases: &[(u64, u64)] = &[
        (0, 1),
        (SHARD - 1, 2),
        (mb - 1, 2),
        (mb - 10, 3 * mb),
        (SHARD + 5, 4 * mb),
        (5 * mb, 777),
        (5 * mb + 776, 1),
        (123_456, size as u64 - 123_456),
        (2 * mb, mb),
    ];
    // Read by the backend, and from the page cache with pipes: a range's
    // shards cut short must not keep a pipe that holds the whole shard.
    let mut piped = 0;
    for reads in [Reads::Backend, Reads::Piped] {
        warm(&ds, "pipe", "k", reads);
        for &(off, len) in cases {
            let (sink, r) = read_as(&l, "pipe", "k", off, len, reads).await;
            r.unwrap_or_else(|e| panic!("range {off}+{len}: {e}"));
            assert_eq!(
                sink.bytes(),
                &body[off as usize..(off + len) as usize],
                "range {off}+{len} ({reads:?})"
            );
            piped += sink.piped;
        }
    }
    assert!(piped > 0);
    // Past the end: refused, nothing handed out.
    let (sink, r) = read(&l, "pipe", "k", size as u64 - 1, 2).await;
    assert!(matches!(r, Err(Error::InvalidRange { .. })), "{r:?}");
    assert!(sink.chunks.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_going_corrupt_mid_object_are_reconstructed() {
    corrupt_mid_object(Reads::Backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_going_corrupt_mid_object_are_reconstructed_from_the_page_cache() {
    corrupt_mid_object(Reads::PageCache).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_going_corrupt_mid_object_are_reconstructed_with_pipes() {
    corrupt_mid_object(Reads::Piped).await;
}

async fn corrupt_mid_object(reads: Reads) {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open_for(&ds, reads).await;
    l.make_bucket("pipe").await.unwrap();
    let body = data(12 * (1 << 20) + 99, 3);
    // Every pair of drives: one goes bad at block 2, the other at block 7
    // (while reads of later blocks are already in flight on both), so
    // every block still has two intact shards.
    for a in 0..4 {
        for b in 0..4 {
            if a == b {
                continue;
            }
            let key = format!("k{a}{b}");
            put(&l, "pipe", &key, &body).await;
            corrupt(&ds, a, "pipe", &key, 2);
            corrupt(&ds, b, "pipe", &key, 7);
            warm(&ds, "pipe", &key, reads);
            let (sink, r) = read_as(&l, "pipe", &key, 0, body.len() as u64, reads).await;
            r.unwrap_or_else(|e| panic!("{key} ({reads:?}): {e}"));
            assert!(sink.bytes() == body, "{key}: wrong bytes");
            // Whole shards of intact records came with their pipes.
            assert_eq!(sink.piped > 0, reads.piped(), "{key}: {} piped", sink.piped);
            // The old path (AsyncWrite) reports the drives it found bad.
            let mut out = Vec::new();
            let (_, report) = l
                .get_object_report("pipe", &key, &GetOptions::default(), &mut out)
                .await
                .unwrap();
            assert!(out == body, "{key}: wrong bytes through get_object");
            assert!(report.bad_drives.iter().all(|&d| d == a || d == b));
            // A range starting inside the corrupt block.
            let off = 7 * (1 << 20) + 300_000;
            let (sink, r) = read_as(&l, "pipe", &key, off, 3 << 20, reads).await;
            r.unwrap();
            assert!(sink.bytes() == body[off as usize..off as usize + (3 << 20)]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_shard_file_is_read_around() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds).await;
    l.make_bucket("pipe").await.unwrap();
    let body = data(6 * (1 << 20), 4);
    for (d, dir) in ds.iter().enumerate() {
        let key = format!("gone{d}");
        put(&l, "pipe", &key, &body).await;
        std::fs::remove_file(part_file(dir, "pipe", &key)).unwrap();
        let (sink, r) = read(&l, "pipe", &key, 0, body.len() as u64).await;
        r.unwrap();
        assert!(sink.bytes() == body, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_an_unreadable_block_is_handed_out() {
    unreadable_block(Reads::Backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_an_unreadable_block_is_handed_out_from_the_page_cache() {
    unreadable_block(Reads::PageCache).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_an_unreadable_block_is_handed_out_with_pipes() {
    unreadable_block(Reads::Piped).await;
}

async fn unreadable_block(reads: Reads) {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open_for(&ds, reads).await;
    l.make_bucket("pipe").await.unwrap();
    let body = data(8 * (1 << 20), 5);
    put(&l, "pipe", "k", &body).await;
    // Block 4 corrupt on three drives: one intact shard, two needed.
    for d in 0..3 {
        corrupt(&ds, d, "pipe", "k", 4);
    }
    warm(&ds, "pipe", "k", reads);
    let (sink, r) = read_as(&l, "pipe", "k", 0, body.len() as u64, reads).await;
    match r {
        Err(Error::DataUnreadable {
            block,
            intact,
            needed,
            ..
        }) => {
            assert_eq!((block, needed), (4, 2));
            assert!(intact < 2);
        }
        other => panic!("expected DataUnreadable, got {other:?}"),
    }
    // Exactly the four verified blocks before it, and they are right.
    let got = sink.bytes();
    assert_eq!(got.len(), 4 << 20);
    assert!(got == body[..4 << 20]);
    assert_eq!(sink.piped > 0, reads.piped(), "{} piped", sink.piped);
}
