//! The read cache (`LayerOptions::read_cache_bytes`): a part is cached at
//! its second read and served from memory from then on, the same bytes for
//! every range; an overwritten or deleted version's blocks are dropped
//! with its data; one pass over objects, or a part above a quarter of the
//! budget, caches nothing; a full cache takes only parts read more often
//! than what it would drop; bitrot under cached blocks is left to heal;
//! readers racing overwrites get whole versions, and so do readers while
//! the limit moves (memory coming and going).

use std::path::{Path, PathBuf};

use crate::support::{data, dirs, get, put};
use object::layer::{
    Chunk, ChunkSink, GetOptions, LayerOptions, ObjectLayer, PutOptions, Range, ReadCacheStats,
    VersionSel,
};

/// Bytes of one cached block on 2+2 with 1 MiB blocks (its two data
/// shards).
const BLOCK: u64 = 1 << 20;

/// Bytes cached for a part of `size` bytes: whole blocks, and the last
/// one's two shards (the second padded to the first's length).
fn cached_size(size: u64) -> u64 {
    let tail = size % BLOCK;
    size - tail + tail.div_ceil(2) * 2
}

async fn open(ds: &[PathBuf], cache: Option<usize>) -> ObjectLayer {
    let opts = LayerOptions {
        read_cache_bytes: cache,
        ..LayerOptions::default()
    };
    ObjectLayer::open_dirs(ds, opts).await.expect("open")
}

/// Four fresh drives under a temporary directory, a layer over them with a
/// cache of `cache` bytes, and its bucket `bucket`.
async fn fresh(cache: usize, bucket: &str) -> (tempfile::TempDir, Vec<PathBuf>, ObjectLayer) {
    let tmp = tempfile::tempdir().unwrap();
    let ds = dirs(tmp.path(), 4);
    let l = open(&ds, Some(cache)).await;
    l.make_bucket(bucket).await.unwrap();
    (tmp, ds, l)
}

fn stats(l: &ObjectLayer) -> ReadCacheStats {
    l.read_cache_stats().expect("a cache")
}

async fn range(l: &ObjectLayer, b: &str, k: &str, offset: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let opts = GetOptions {
        range: Some(Range::From {
            offset,
            length: Some(len),
        }),
        ..Default::default()
    };
    l.get_object(b, k, &opts, &mut out)
        .await
        .unwrap_or_else(|e| panic!("range {offset}+{len} of {k}: {e}"));
    out
}

/// Removes every shard file of `key` from every drive.
fn remove_shards(ds: &[PathBuf], bucket: &str, key: &str) -> usize {
    let mut removed = 0;
    for d in ds {
        let obj: &Path = &d.join(bucket).join(key);
        for e in std::fs::read_dir(obj).unwrap().flatten() {
            if e.path().is_dir() {
                std::fs::remove_dir_all(e.path()).unwrap();
                removed += 1;
            }
        }
    }
    removed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_is_cached_at_its_second_read_then_served_from_memory() {
    let (_tmp, ds, l) = fresh(64 << 20, "rcache").await;
    assert!(open(&ds, None).await.read_cache_stats().is_none());
    let body = data(3 * (1 << 20) + 777, 1);
    put(&l, "rcache", "k", &body).await;
    let blocks = 4;

    assert_eq!(get(&l, "rcache", "k").await.unwrap(), body);
    let s = stats(&l);
    assert_eq!(
        (s.hits, s.misses, s.inserted_bytes),
        (0, blocks, 0),
        "{s:?}"
    );

    assert_eq!(get(&l, "rcache", "k").await.unwrap(), body);
    let s = stats(&l);
    assert_eq!((s.hits, s.misses), (0, 2 * blocks), "{s:?}");
    assert_eq!(s.inserted_bytes, cached_size(body.len() as u64), "{s:?}");
    assert_eq!(s.bytes, s.inserted_bytes);

    assert_eq!(get(&l, "rcache", "k").await.unwrap(), body);
    let s = stats(&l);
    assert_eq!((s.hits, s.misses), (blocks, 2 * blocks), "{s:?}");

    // The shard files are gone from every drive: a read without the cache
    // fails, the cached blocks still serve the verified bytes.
    assert_eq!(remove_shards(&ds, "rcache", "k"), 4);
    let uncached = open(&ds, None).await;
    assert!(get(&uncached, "rcache", "k").await.is_err());
    assert_eq!(get(&l, "rcache", "k").await.unwrap(), body);
    assert_eq!(stats(&l).hits, 2 * blocks);
}

/// The chunks a read hands out: their lengths, and whether each is
/// shared (a block of the read cache).
#[derive(Default)]
struct Shapes {
    bytes: Vec<u8>,
    chunks: Vec<(usize, bool)>,
}

impl ChunkSink for Shapes {
    async fn put(&mut self, chunk: Chunk) -> std::io::Result<()> {
        self.chunks.push((chunk.len(), chunk.is_shared()));
        self.bytes.extend_from_slice(chunk.as_slice());
        Ok(())
    }
}

async fn shapes(l: &ObjectLayer, b: &str, k: &str, offset: u64, len: u64) -> Shapes {
    let o = l.open_object(b, k, None).await.expect("open_object");
    let mut sink = Shapes::default();
    l.read_object_chunks(&o, offset, len, &mut sink)
        .await
        .expect("read");
    sink
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_block_goes_out_in_one_shared_chunk() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcache").await;
    let size = 3 * BLOCK + 777;
    let body = data(size as usize, 3);
    put(&l, "rcache", "k", &body).await;
    // Read from the drives: a chunk per data shard (2+2: two of 512 KiB
    // per block), none shared.
    let first = shapes(&l, "rcache", "k", 0, size).await;
    assert!(first.bytes == body);
    assert_eq!(first.chunks.len(), 8, "{:?}", first.chunks);
    assert!(first.chunks[..6].iter().all(|&c| c == (1 << 19, false)));
    for _ in 0..2 {
        assert!(shapes(&l, "rcache", "k", 0, size).await.bytes == body);
    }
    assert_eq!(stats(&l).hits, 4, "the third read came from the cache");
    // From the cache: one shared chunk per block (the connection then
    // writes whole blocks), ranges narrowed within their blocks.
    let whole = shapes(&l, "rcache", "k", 0, size).await;
    assert!(whole.bytes == body);
    let mib = BLOCK as usize;
    assert_eq!(
        whole.chunks,
        vec![(mib, true), (mib, true), (mib, true), (777, true)]
    );
    let (from, len) = (BLOCK - 100, BLOCK + 300);
    let part = shapes(&l, "rcache", "k", from, len).await;
    assert!(part.bytes[..] == body[from as usize..(from + len) as usize]);
    assert_eq!(part.chunks, vec![(100, true), (mib, true), (200, true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_of_cached_blocks_and_parts() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcache").await;
    let body = data(5 * (1 << 20) + 12_345, 2);
    put(&l, "rcache", "one", &body).await;
    // A multipart object: a 5 MiB part and a short one.
    let (p1, p2) = (data(5 << 20, 3), data((1 << 20) + 4099, 4));
    let id = l
        .create_multipart_upload("rcache", "multi", &PutOptions::default())
        .await
        .unwrap();
    let mut done = Vec::new();
    for (n, p) in [(1i64, &p1), (2, &p2)] {
        let up = l
            .upload_part("rcache", "multi", &id, n, &mut &p[..], None)
            .await
            .unwrap();
        done.push((n, up.etag));
    }
    l.complete_multipart_upload("rcache", "multi", &id, &done)
        .await
        .unwrap();
    let whole = [p1.clone(), p2.clone()].concat();

    for _ in 0..2 {
        assert_eq!(get(&l, "rcache", "one").await.unwrap(), body);
        assert_eq!(get(&l, "rcache", "multi").await.unwrap(), whole);
    }
    let cached = stats(&l);
    assert_eq!(
        cached.inserted_bytes,
        cached_size(body.len() as u64)
            + cached_size(p1.len() as u64)
            + cached_size(p2.len() as u64),
        "{cached:?}"
    );

    let half = BLOCK / 2;
    let cases = |size: u64| {
        vec![
            (0, 1),
            (half - 1, 2),
            (BLOCK - 1, 2),
            (BLOCK - 3, BLOCK + 6),
            (half + 17, 3 * BLOCK),
            (size - 1, 1),
            (size - BLOCK - 5, BLOCK + 5),
            (0, size),
        ]
    };
    for (key, full) in [("one", &body), ("multi", &whole)] {
        let size = full.len() as u64;
        let mut list = cases(size);
        if key == "multi" {
            // Across the part boundary.
            list.push(((5 << 20) - 10, 20));
            list.push(((5 << 20) - BLOCK, 2 * BLOCK + 1));
        }
        let o = l.open_object("rcache", key, None).await.unwrap();
        for (offset, len) in list {
            let want = &full[offset as usize..(offset + len) as usize];
            assert!(
                range(&l, "rcache", key, offset, len).await == want,
                "{key}: {offset}+{len}"
            );
            // The same bytes as slices of the cached blocks.
            let blocks = l
                .cached_object_range(&o, offset, len)
                .unwrap_or_else(|| panic!("{key}: {offset}+{len} all cached"));
            assert!(
                blocks.concat() == want,
                "{key}: {offset}+{len} from the cache"
            );
            assert!(blocks.iter().all(|b| b.len() as u64 <= BLOCK));
        }
        assert!(
            l.cached_object_range(&o, 1, full.len() as u64).is_none(),
            "past the end"
        );
    }
    let s = stats(&l);
    assert_eq!(s.misses, cached.misses, "every range from the cache: {s:?}");
    assert!(s.hits > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_comes_from_the_cache_whole_or_not_at_all() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcache").await;
    let body = data(3 * BLOCK as usize + 5, 7);
    put(&l, "rcache", "k", &body).await;
    let o = l.open_object("rcache", "k", None).await.unwrap();
    assert!(
        l.cached_object_range(&o, 0, 10).is_none(),
        "nothing cached yet"
    );
    // Two reads of the first block only: the second caches that block.
    for _ in 0..2 {
        assert_eq!(range(&l, "rcache", "k", 0, 10).await, body[..10]);
    }
    let before = stats(&l);
    assert_eq!(before.inserted_bytes, BLOCK, "{before:?}");
    // A range past the cached block is not served in part, and counts
    // nothing (the read that follows counts its own hits and misses).
    assert!(l.cached_object_range(&o, BLOCK - 1, 2).is_none());
    assert!(l.cached_object_range(&o, 0, body.len() as u64).is_none());
    assert_eq!(stats(&l), before);
    // Within it: served, counted as a hit.
    let blocks = l.cached_object_range(&o, 3, BLOCK - 3).unwrap();
    assert!(blocks.concat() == body[3..BLOCK as usize]);
    assert_eq!(stats(&l).hits, before.hits + 1);
    assert!(
        l.cached_object_range(&o, 0, 0).is_none(),
        "an empty range reads nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overwritten_or_deleted_version_leaves_with_its_blocks() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcache").await;
    let (old, new) = (data(2 << 20, 5), data((2 << 20) + 1, 6));
    put(&l, "rcache", "k", &old).await;
    for _ in 0..3 {
        assert_eq!(get(&l, "rcache", "k").await.unwrap(), old);
    }
    assert_eq!(stats(&l).bytes, 2 * BLOCK);

    put(&l, "rcache", "k", &new).await;
    let s = stats(&l);
    assert_eq!((s.bytes, s.forgotten_bytes), (0, 2 * BLOCK), "{s:?}");
    for _ in 0..3 {
        assert_eq!(get(&l, "rcache", "k").await.unwrap(), new);
    }
    assert_eq!(stats(&l).bytes, 2 * BLOCK + 2);

    l.delete_object("rcache", "k", None).await.unwrap();
    let s = stats(&l);
    assert_eq!((s.bytes, s.forgotten_bytes), (0, 4 * BLOCK + 2), "{s:?}");
    assert!(matches!(get(&l, "rcache", "k").await, Err(e) if e.is_not_found()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_cached_and_dropped_apart() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcv").await;
    l.set_bucket_versioning("rcv", true).await.unwrap();
    let (b1, b2) = (data(2 << 20, 7), data(2 << 20, 8));
    let v1 = put(&l, "rcv", "k", &b1)
        .await
        .version_id
        .expect("a version id");
    let v2 = put(&l, "rcv", "k", &b2)
        .await
        .version_id
        .expect("a version id");
    let read = |v| {
        let l = &l;
        async move {
            let mut out = Vec::new();
            let opts = GetOptions {
                version_id: Some(VersionSel::Id(v)),
                ..Default::default()
            };
            l.get_object("rcv", "k", &opts, &mut out).await.map(|_| out)
        }
    };
    for _ in 0..3 {
        assert_eq!(read(v1).await.unwrap(), b1);
        assert_eq!(read(v2).await.unwrap(), b2);
    }
    assert_eq!(stats(&l).bytes, 4 * BLOCK);

    l.delete_object("rcv", "k", Some(VersionSel::Id(v1)))
        .await
        .unwrap();
    assert_eq!(stats(&l).bytes, 2 * BLOCK, "v2's blocks stay");
    let hits = stats(&l).hits;
    assert_eq!(read(v2).await.unwrap(), b2);
    assert_eq!(stats(&l).hits, hits + 2);
    assert!(matches!(read(v1).await, Err(e) if e.is_not_found()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pass_large_parts_and_a_full_cache() {
    // A quarter of the budget is 2 MiB.
    let (_tmp, _ds, l) = fresh(8 << 20, "rcache").await;
    let mut bodies = Vec::new();
    for i in 0..10 {
        let body = data(1 << 20, 10 + i as u64);
        put(&l, "rcache", &format!("small{i}"), &body).await;
        bodies.push(body);
    }
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(
            &get(&l, "rcache", &format!("small{i}")).await.unwrap(),
            body
        );
    }
    assert_eq!(stats(&l).inserted_bytes, 0, "read once: nothing cached");

    let big = data((2 << 20) + 1, 20);
    put(&l, "rcache", "big", &big).await;
    for _ in 0..3 {
        assert_eq!(get(&l, "rcache", "big").await.unwrap(), big);
    }
    assert_eq!(stats(&l).inserted_bytes, 0, "above a quarter of the budget");

    // Read again, the first eight fill the budget; the last two, read no
    // more often than those, replace nothing.
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(
            &get(&l, "rcache", &format!("small{i}")).await.unwrap(),
            body
        );
    }
    let s = stats(&l);
    assert_eq!((s.inserted_bytes, s.bytes), (8 * BLOCK, 8 * BLOCK), "{s:?}");
    assert_eq!(s.evicted_bytes, 0);
    // Read a third time, the last two are read more often than the first
    // two, the least recently used: they take their place.
    for i in [8, 9] {
        assert_eq!(
            get(&l, "rcache", &format!("small{i}")).await.unwrap(),
            bodies[i]
        );
    }
    let s = stats(&l);
    assert_eq!(
        (s.inserted_bytes, s.bytes),
        (10 * BLOCK, 8 * BLOCK),
        "{s:?}"
    );
    assert_eq!(s.evicted_bytes, 2 * BLOCK);
    let hits = s.hits;
    for (i, body) in bodies.iter().enumerate().skip(2) {
        assert_eq!(
            &get(&l, "rcache", &format!("small{i}")).await.unwrap(),
            body
        );
    }
    assert_eq!(stats(&l).hits, hits + 8, "2 to 9 from the cache");
    // What is cached reads back right; what was evicted, from the drives.
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(
            &get(&l, "rcache", &format!("small{i}")).await.unwrap(),
            body
        );
    }
}

/// Bitrot under a cached object: hits keep serving the verified bytes and
/// report no drive (they read none); healing, which reads the shard files
/// and never the cache, finds and repairs the damage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bitrot_under_cached_blocks_is_left_to_heal() {
    let (_tmp, ds, l) = fresh(64 << 20, "rcache").await;
    let body = data((2 << 20) + 99, 30);
    put(&l, "rcache", "k", &body).await;
    for _ in 0..3 {
        assert_eq!(get(&l, "rcache", "k").await.unwrap(), body);
    }
    // Flip a byte of the first record's data on the first drive.
    let obj = ds[0].join("rcache").join("k");
    let part = std::fs::read_dir(&obj)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .expect("a data dir")
        .path()
        .join("part.1");
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[32 + 1000] ^= 0x40;
    std::fs::write(&part, &bytes).unwrap();

    let hits = stats(&l).hits;
    let mut out = Vec::new();
    let (_, report) = l
        .get_object_report("rcache", "k", &GetOptions::default(), &mut out)
        .await
        .unwrap();
    assert!(out == body);
    assert!(report.bad_drives.is_empty(), "{report:?}");
    assert_eq!(stats(&l).hits, hits + 3, "all three blocks from the cache");

    // A read without the cache sees the damage (and reads around it).
    let uncached = open(&ds, None).await;
    let mut out = Vec::new();
    let (_, report) = uncached
        .get_object_report("rcache", "k", &GetOptions::default(), &mut out)
        .await
        .unwrap();
    assert!(out == body);
    assert_eq!(report.bad_drives, vec![0]);
    // Healing finds it through the cached layer too, and repairs it.
    let healed = l.heal_object("rcache", "k", None).await.unwrap();
    assert_eq!(healed.healed_drives, vec![0]);
    let mut out = Vec::new();
    let (_, report) = uncached
        .get_object_report("rcache", "k", &GetOptions::default(), &mut out)
        .await
        .unwrap();
    assert!(out == body && report.bad_drives.is_empty(), "{report:?}");
}

/// Readers and an overwriter at once on one key, through the cache: every
/// GET returns one whole version as written, never blocks of two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_racing_overwrites_see_whole_versions() {
    let (_tmp, _ds, l) = fresh(64 << 20, "rcache").await;
    let l = std::sync::Arc::new(l);
    let bodies: std::sync::Arc<Vec<Vec<u8>>> =
        std::sync::Arc::new((0..4).map(|s| data((3 << 20) + 5, 50 + s)).collect());
    put(&l, "rcache", "k", &bodies[0]).await;
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (l, bodies) = (l.clone(), bodies.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..25 {
                let got = get(&l, "rcache", "k").await.unwrap();
                assert!(
                    bodies.contains(&got),
                    "a GET returned bytes of no single version"
                );
            }
        }));
    }
    for i in 1..=12 {
        put(&l, "rcache", "k", &bodies[i % bodies.len()]).await;
        tokio::task::yield_now().await;
    }
    for r in readers {
        r.await.unwrap();
    }
    // A replaced version is forgotten under the object's lock, after its
    // last reader: only the last version's blocks can be left.
    let last = &bodies[12 % bodies.len()];
    let size = cached_size(last.len() as u64);
    assert!(stats(&l).bytes <= size, "{:?}", stats(&l));
    for _ in 0..2 {
        assert!(get(&l, "rcache", "k").await.unwrap() == *last);
    }
    let s = stats(&l);
    assert_eq!(s.bytes, size, "{s:?}");
    assert!(get(&l, "rcache", "k").await.unwrap() == *last);
    assert_eq!(
        stats(&l).hits,
        s.hits + 4,
        "the last version from the cache"
    );
}

/// The limit moving under readers (memory coming and going): every GET
/// returns the object's bytes, blocks dropped in the middle of a read are
/// read from the drives, and the cache ends within the last limit set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_under_a_moving_limit_stay_whole() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_tmp, _ds, l) = fresh(16 << 20, "rlimit").await;
    let l = std::sync::Arc::new(l);
    let bodies: std::sync::Arc<Vec<Vec<u8>>> =
        std::sync::Arc::new((0..3).map(|s| data((2 << 20) + 7, 80 + s)).collect());
    for (i, b) in bodies.iter().enumerate() {
        put(&l, "rlimit", &format!("k{i}"), b).await;
    }
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let limiter = {
        let (l, done) = (l.clone(), done.clone());
        tokio::spawn(async move {
            let (mut changes, mut shed) = (0usize, 0u64);
            while !done.load(Ordering::Relaxed) {
                shed += l.set_read_cache_limit([0, 16 << 20, 3 << 20][changes % 3]);
                changes += 1;
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            (changes, shed)
        })
    };
    let mut readers = Vec::new();
    for r in 0..4 {
        let (l, bodies) = (l.clone(), bodies.clone());
        readers.push(tokio::spawn(async move {
            for n in 0..30 {
                let i = (r + n) % bodies.len();
                let got = get(&l, "rlimit", &format!("k{i}")).await.unwrap();
                assert!(got == bodies[i], "k{i}: wrong bytes under a moving limit");
            }
        }));
    }
    for r in readers {
        r.await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let (changes, mut shed) = limiter.await.unwrap();
    assert!(changes >= 3, "the limit moved while they read: {changes}");
    shed += l.set_read_cache_limit(1 << 20);
    let s = stats(&l);
    assert_eq!(s.shed_bytes, shed, "{s:?}");
    // At most one block under the last limit, 1 MiB.
    assert_eq!(s.limit, 1 << 20);
    assert!(s.bytes <= 1 << 20, "{s:?}");
    // Raised again, the cache refills up to the new limit; lowered, it sheds it all.
    l.set_read_cache_limit(usize::MAX);
    for _ in 0..3 {
        assert!(get(&l, "rlimit", "k0").await.unwrap() == bodies[0]);
    }
    let size = cached_size(bodies[0].len() as u64);
    assert!(stats(&l).bytes >= size, "{:?}", stats(&l));
    let before = stats(&l).bytes;
    assert_eq!(l.set_read_cache_limit(0), before);
    assert!(get(&l, "rlimit", "k0").await.unwrap() == bodies[0]);
    assert_eq!(stats(&l).bytes, 0);
}
