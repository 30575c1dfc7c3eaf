//! The read cache: verified erasure blocks of hot objects, kept in memory
//! so that reading them again costs neither the page-cache copy nor the
//! bitrot hash.
//!
//! What is cached is the output of a read's verification: the data shards
//! of one erasure block, every record's HighwayHash checked (or rebuilt
//! from parity that checked). A hit hands out the same bytes as shared
//! [`Bytes`], without a copy.
//!
//! Why this is safe to serve later:
//! - A block is keyed by its erasure set, the version's data directory
//!   (a fresh random UUID for every version written), the part number, the
//!   part's size, the version's modification time, the erasure layout and
//!   the block's index. A version's shard files never change under one data
//!   directory (a heal rewrites the same bytes), and every read resolves
//!   the version from `xl.meta` first, under the object's read lock, so an
//!   overwritten or deleted version is never looked up again. Its blocks
//!   are dropped when its data directory is removed
//!   ([`forget`](ReadCache::forget)), so that memory goes with the data.
//! - Bitrot on a drive after the block was cached cannot reach a reader:
//!   the cached copy is the verified one. It is the scanner that finds such
//!   damage (it reads the shard files, never this cache), or the first read
//!   after the block is evicted.
//!
//! Admission (TinyLFU's idea): every read of a part is counted in a small
//! frequency sketch whose counts halve now and then, so they follow what
//! is read now. A part's blocks are added only from its second read on,
//! and only if the part is at most a quarter of the budget, so one pass
//! over many objects (a backup, a scan) adds nothing (but for the
//! sketch's overcounting, which grows once a pass reads many more parts
//! than a row has counters). When the cache is full, a block goes in only
//! in place of least recently used blocks of parts read less often (its
//! own part's blocks passed over): hot parts are not displaced by a scan,
//! and a working set larger than the budget, read evenly, settles in the
//! cache instead of replacing itself on every read (each replacement
//! costs a copy of the block). Eviction is least recently used, by bytes.
//!
//! Memory pressure: the budget is the most the cache may hold; its
//! [limit](ReadCache::set_limit) is what it may hold now. An embedder that
//! watches the machine's memory lowers the limit as memory runs short
//! (the least recently used blocks go at once) and raises it again, up to
//! the budget, as memory comes back.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

/// One part of one object version, as the cache knows it (ordered by set
/// and data directory first, so a version's blocks are one range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PartId {
    /// Index of the erasure set in the layer.
    pub set: u32,
    /// The version's data directory (`xl.meta`'s `DDir`).
    pub data_dir: [u8; 16],
    /// Modification time of the version, Unix nanoseconds.
    pub mod_time: i64,
    /// Part number.
    pub part: u32,
    /// Part size in bytes.
    pub size: u64,
    /// Data shards and erasure block size: how a block splits into shards.
    pub data_shards: u32,
    pub block_size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct BlockKey {
    part: PartId,
    block: u64,
}

struct Entry {
    data: Bytes,
    /// Position in the recency order.
    tick: u64,
}

struct Inner {
    blocks: BTreeMap<BlockKey, Entry>,
    /// Recency order: oldest first.
    order: BTreeMap<u64, BlockKey>,
    tick: u64,
    bytes: usize,
    /// What may be held now: the budget, or less while memory is short.
    limit: usize,
    /// How often each part was read lately.
    reads: Sketch,
}

impl Inner {
    /// The bytes of block `key`, if cached, which becomes the most
    /// recently used.
    fn use_block(&mut self, key: BlockKey) -> Option<Bytes> {
        let e = self.blocks.get_mut(&key)?;
        self.tick += 1;
        self.order.remove(&e.tick);
        e.tick = self.tick;
        self.order.insert(e.tick, key);
        Some(e.data.clone())
    }
}

/// A count-min sketch of 4-bit counts (kept in bytes): four rows of
/// `width` counters, a part's count the least of its four; halved every
/// `10 * width` reads, so old reads fade.
struct Sketch {
    counts: Vec<u8>,
    width: usize,
    /// Reads counted since the last halving.
    added: usize,
}

const ROWS: usize = 4;
const MAX_COUNT: u8 = 15;

impl Sketch {
    fn new(width: usize) -> Sketch {
        let width = width.next_power_of_two();
        Sketch {
            counts: vec![0; ROWS * width],
            width,
            added: 0,
        }
    }

    fn hash(part: &PartId) -> u64 {
        // SipHash with fixed keys: the same part always has the same
        // cells (and nothing outside the server picks part ids).
        let mut h = std::collections::hash_map::DefaultHasher::new();
        part.hash(&mut h);
        h.finish()
    }

    fn cells(&self, hash: u64) -> [usize; ROWS] {
        let mut out = [0; ROWS];
        // A different mix of the hash per row: the generator's successive
        // outputs from the hash as its seed.
        let mut mix = fastrand::Rng::with_seed(hash);
        for (row, cell) in out.iter_mut().enumerate() {
            let z = mix.u64(..);
            *cell = row * self.width + (z as usize & (self.width - 1));
        }
        out
    }

    fn estimate(&self, part: &PartId) -> u8 {
        let cells = self.cells(Self::hash(part));
        cells.iter().map(|&c| self.counts[c]).min().unwrap_or(0)
    }

    /// Counts one read of `part`; returns its count after it.
    fn add(&mut self, part: &PartId) -> u8 {
        let cells = self.cells(Self::hash(part));
        let least = cells.iter().map(|&c| self.counts[c]).min().unwrap_or(0);
        if least < MAX_COUNT {
            // Conservative update: only the counters at the minimum grow.
            for &c in &cells {
                if self.counts[c] == least {
                    self.counts[c] = least + 1;
                }
            }
        }
        self.added += 1;
        if self.added >= 10 * self.width {
            self.added = 0;
            for c in &mut self.counts {
                *c /= 2;
            }
        }
        least.saturating_add(1).min(MAX_COUNT)
    }
}

/// Most bytes of spare block mappings kept for reuse (less for a small
/// budget: a sixteenth of it), none while memory is short.
const SPARE_MAX: usize = 16 << 20;

/// Mappings of dropped blocks, kept for the next blocks of the same size:
/// a cache that replaces blocks (a working set larger than the budget)
/// then maps, faults in and unmaps nothing per block, which cost it a
/// tenth of its CPU per MiB in such a run.
struct Spares(Mutex<SpareMaps>);

struct SpareMaps {
    maps: Vec<memmap2::MmapMut>,
    /// Bytes of `maps`.
    held: usize,
    /// Most bytes kept.
    cap: usize,
}

impl Spares {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpareMaps> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, len: usize) -> Option<memmap2::MmapMut> {
        let mut s = self.lock();
        let i = s.maps.iter().position(|m| m.len() == len)?;
        s.held -= len;
        Some(s.maps.swap_remove(i))
    }

    /// Keeps `map` if there is room, else unmaps it.
    fn put(&self, map: memmap2::MmapMut) {
        let mut s = self.lock();
        if s.held + map.len() <= s.cap {
            s.held += map.len();
            s.maps.push(map);
        }
    }

    /// Sets the most kept, unmapping what is above it.
    fn set_cap(&self, cap: usize) {
        let mut s = self.lock();
        s.cap = cap;
        while s.held > cap {
            let Some(m) = s.maps.pop() else { break };
            s.held -= m.len();
        }
    }

    /// Bytes kept.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.lock().held
    }
}

/// A cached block's memory: an anonymous mapping of its own, so that the
/// block's memory leaves the process when it is dropped (evicted,
/// forgotten or shed; from the heap, a freed 1 MiB block may stay with
/// the allocator, and a cache shedding memory under pressure would free
/// nothing the machine could use), or goes to the spares for reuse.
struct BlockMap {
    map: Option<memmap2::MmapMut>,
    spares: std::sync::Arc<Spares>,
}

impl AsRef<[u8]> for BlockMap {
    fn as_ref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

impl Drop for BlockMap {
    fn drop(&mut self) {
        if let Some(m) = self.map.take() {
            self.spares.put(m);
        }
    }
}

/// Running totals of a [`ReadCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCacheStats {
    /// Blocks served from the cache.
    pub hits: u64,
    /// Blocks looked up and not found (then read from the drives).
    pub misses: u64,
    /// Bytes of blocks added.
    pub inserted_bytes: u64,
    /// Bytes of blocks dropped for blocks of parts read more often.
    pub evicted_bytes: u64,
    /// Bytes of blocks dropped with their version's data.
    pub forgotten_bytes: u64,
    /// Bytes of blocks dropped to give memory back (a lowered limit).
    pub shed_bytes: u64,
    /// Bytes held now.
    pub bytes: u64,
    /// The budget, bytes: the most the cache may ever hold.
    pub budget: u64,
    /// The limit, bytes: the most it may hold now (at most the budget).
    pub limit: u64,
}

/// Verified erasure blocks of hot objects, within a budget of bytes,
/// shared by every erasure set of a layer (module documentation above).
pub struct ReadCache {
    budget: usize,
    /// Parts larger than this are never admitted.
    max_part: u64,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
    inserted: AtomicU64,
    evicted: AtomicU64,
    forgotten: AtomicU64,
    shed: AtomicU64,
    spares: std::sync::Arc<Spares>,
}

impl std::fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCache")
            .field("budget", &self.budget)
            .field("stats", &self.stats())
            .finish()
    }
}

/// Counters per row of the frequency sketch, at most (and at least).
const SKETCH_MAX: usize = 1 << 18;
const SKETCH_MIN: usize = 1 << 10;

impl ReadCache {
    /// A cache of at most `budget` bytes of block data.
    pub fn new(budget: usize) -> ReadCache {
        // One counter per row for each 16 KiB of budget (256 KiB of
        // counters for 1 GiB): far more than the parts the budget holds,
        // so that few of the parts read lately share all their cells, and
        // halvings far enough apart that a part read twice at the pace the
        // cache turns over still counts two at its second read.
        let width = (budget >> 14).clamp(SKETCH_MIN, SKETCH_MAX);
        ReadCache {
            budget,
            max_part: (budget / 4) as u64,
            inner: Mutex::new(Inner {
                blocks: BTreeMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                bytes: 0,
                limit: budget,
                reads: Sketch::new(width),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserted: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            forgotten: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            spares: std::sync::Arc::new(Spares(Mutex::new(SpareMaps {
                maps: Vec::new(),
                held: 0,
                cap: Self::spare_cap(budget),
            }))),
        }
    }

    fn spare_cap(limit: usize) -> usize {
        (limit / 16).min(SPARE_MAX)
    }

    /// A block's bytes, `parts` one after the other (`len` in all), in a
    /// mapping of its own ([`BlockMap`]; a spare one if there is one of
    /// that size). `None` if the parts do not add up to `len` or the
    /// mapping fails.
    pub(crate) fn block_bytes<'a>(
        &self,
        parts: impl IntoIterator<Item = &'a [u8]>,
        len: usize,
    ) -> Option<Bytes> {
        let map = match self.spares.take(len) {
            Some(m) => m,
            None => memmap2::MmapMut::map_anon(len).ok()?,
        };
        // Owned from here, so a mapping left unused goes to the spares.
        let mut block = BlockMap {
            map: Some(map),
            spares: std::sync::Arc::clone(&self.spares),
        };
        let buf = block.map.as_deref_mut()?;
        let mut at = 0;
        for p in parts {
            buf.get_mut(at..at + p.len())?.copy_from_slice(p);
            at += p.len();
        }
        (at == len).then(|| Bytes::from_owner(block))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets what the cache may hold from now on, at most the budget
    /// (memory pressure, module documentation above). Lowering it drops
    /// the least recently used blocks at once, down to the new limit;
    /// raising it lets blocks in again as they are read. Returns the bytes
    /// dropped.
    pub fn set_limit(&self, bytes: usize) -> u64 {
        let limit = bytes.min(self.budget);
        // While memory is short, dropped blocks leave the process at once.
        self.spares.set_cap(if limit < self.budget {
            0
        } else {
            Self::spare_cap(limit)
        });
        let mut shed = 0usize;
        {
            let mut g = self.lock();
            let inner = &mut *g;
            inner.limit = limit;
            while inner.bytes > limit {
                let Some((_, k)) = inner.order.pop_first() else {
                    break;
                };
                if let Some(e) = inner.blocks.remove(&k) {
                    inner.bytes -= e.data.len();
                    shed += e.data.len();
                }
            }
        }
        self.shed.fetch_add(shed as u64, Ordering::Relaxed);
        shed as u64
    }

    /// Block `block` of `part`, if cached (it becomes the most recently
    /// used).
    pub(crate) fn get(&self, part: &PartId, block: u64) -> Option<Bytes> {
        let data = self.lock().use_block(BlockKey { part: *part, block });
        let counter = if data.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        data
    }

    /// Every block of `want` (each a part and a range of its block
    /// indexes), in that order, if all of them are cached; else `None`,
    /// and nothing counted. When they are, each counts as a hit and each
    /// part as a read (as [`touch`](Self::touch) would), under one hold of
    /// the lock.
    pub(crate) fn get_all(
        &self,
        want: &[(PartId, std::ops::RangeInclusive<u64>)],
    ) -> Option<Vec<Bytes>> {
        if self.budget == 0 {
            return None;
        }
        let mut g = self.lock();
        let inner = &mut *g;
        let all = want.iter().all(|(part, blocks)| {
            blocks
                .clone()
                .all(|block| inner.blocks.contains_key(&BlockKey { part: *part, block }))
        });
        if !all {
            return None;
        }
        let mut out = Vec::new();
        for (part, blocks) in want {
            inner.reads.add(part);
            for block in blocks.clone() {
                out.push(inner.use_block(BlockKey { part: *part, block })?);
            }
        }
        drop(g);
        self.hits.fetch_add(out.len() as u64, Ordering::Relaxed);
        Some(out)
    }

    /// Counts a read of `part` (once per read of the part, cached or
    /// not) and tells whether its blocks read from the drives should be
    /// offered to [`insert`](Self::insert): from its second read on (as
    /// far as the sketch remembers), and only if it fits a quarter of the
    /// budget.
    pub(crate) fn touch(&self, part: &PartId) -> bool {
        if self.budget == 0 {
            return false;
        }
        let count = self.lock().reads.add(part);
        count >= 2 && part.size <= self.max_part
    }

    /// Whether a block of `len` bytes of `part` would go in now (so that a
    /// caller copies it only then).
    pub(crate) fn wants(&self, part: &PartId, len: usize) -> bool {
        let inner = self.lock();
        len <= inner.limit && self.victims(&inner, part, len).is_some()
    }

    /// The blocks to drop to make room for `len` bytes of `part`: the least
    /// recently used first, passing over `part`'s own, each of a part read
    /// less often than `part`; `None` if there is no such room.
    fn victims(&self, inner: &Inner, part: &PartId, len: usize) -> Option<Vec<BlockKey>> {
        let mut room = inner.limit.checked_sub(inner.bytes)?;
        let mut victims = Vec::new();
        if room >= len {
            return Some(victims);
        }
        let count = inner.reads.estimate(part);
        for k in inner.order.values() {
            if k.part == *part {
                continue;
            }
            if inner.reads.estimate(&k.part) >= count {
                return None;
            }
            room += inner.blocks.get(k).map_or(0, |e| e.data.len());
            victims.push(*k);
            if room >= len {
                return Some(victims);
            }
        }
        None
    }

    /// Offers block `block` of `part` (its verified data shards, one after
    /// the other). It goes in if there is room, or if room can be made by
    /// dropping least recently used blocks of parts read less often than
    /// `part`; otherwise it is left out and nothing is dropped. A block
    /// already there (two reads added it at once: the same bytes, as a
    /// key names immutable data) is kept as it is. Returns whether the
    /// block is in the cache.
    pub(crate) fn insert(&self, part: &PartId, block: u64, data: Bytes) -> bool {
        let len = data.len();
        let key = BlockKey { part: *part, block };
        let mut evicted = 0usize;
        {
            let mut g = self.lock();
            let inner = &mut *g;
            if inner.blocks.contains_key(&key) {
                return true;
            }
            if len > inner.limit {
                return false;
            }
            let Some(victims) = self.victims(inner, part, len) else {
                return false;
            };
            for k in victims {
                if let Some(e) = inner.blocks.remove(&k) {
                    inner.order.remove(&e.tick);
                    inner.bytes -= e.data.len();
                    evicted += e.data.len();
                }
            }
            inner.tick += 1;
            let tick = inner.tick;
            inner.blocks.insert(key, Entry { data, tick });
            inner.order.insert(tick, key);
            inner.bytes += len;
        }
        self.inserted.fetch_add(len as u64, Ordering::Relaxed);
        self.evicted.fetch_add(evicted as u64, Ordering::Relaxed);
        true
    }

    /// Drops every block of the versions whose data directory is
    /// `data_dir` in the sets `sets` (one set when its own layer removes
    /// the directory, every set when another node's does): called as that
    /// directory is removed.
    pub(crate) fn forget(&self, sets: std::ops::Range<u32>, data_dir: &[u8; 16]) {
        let at = |set: u32, fill_min: bool| {
            let (t, n32, n64) = if fill_min {
                (i64::MIN, 0, 0)
            } else {
                (i64::MAX, u32::MAX, u64::MAX)
            };
            BlockKey {
                part: PartId {
                    set,
                    data_dir: *data_dir,
                    mod_time: t,
                    part: n32,
                    size: n64,
                    data_shards: n32,
                    block_size: n64,
                },
                block: n64,
            }
        };
        let mut dropped = 0usize;
        {
            let mut g = self.lock();
            let inner = &mut *g;
            let keys: Vec<BlockKey> = sets
                .flat_map(|set| inner.blocks.range(at(set, true)..=at(set, false)))
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                if let Some(e) = inner.blocks.remove(&k) {
                    inner.order.remove(&e.tick);
                    inner.bytes -= e.data.len();
                    dropped += e.data.len();
                }
            }
        }
        self.forgotten.fetch_add(dropped as u64, Ordering::Relaxed);
    }

    /// Running totals and what is held now.
    pub fn stats(&self) -> ReadCacheStats {
        let (bytes, limit) = {
            let inner = self.lock();
            (inner.bytes as u64, inner.limit as u64)
        };
        ReadCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserted_bytes: self.inserted.load(Ordering::Relaxed),
            evicted_bytes: self.evicted.load(Ordering::Relaxed),
            forgotten_bytes: self.forgotten.load(Ordering::Relaxed),
            shed_bytes: self.shed.load(Ordering::Relaxed),
            bytes,
            budget: self.budget as u64,
            limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(n: u32, size: u64) -> PartId {
        PartId {
            set: 0,
            data_dir: [7; 16],
            mod_time: 1,
            part: n,
            size,
            data_shards: 2,
            block_size: 1 << 20,
        }
    }

    #[test]
    fn admits_a_part_from_its_second_read() {
        let c = ReadCache::new(64 << 20);
        let p = part(1, 4 << 20);
        assert!(!c.touch(&p), "first read: counted, not admitted");
        assert!(c.touch(&p), "second read: admitted");
        assert!(c.touch(&p));
        let other = PartId { mod_time: 2, ..p };
        assert!(!c.touch(&other), "another version is another part");
    }

    #[test]
    fn never_admits_a_part_above_a_quarter_of_the_budget() {
        let c = ReadCache::new(64 << 20);
        let big = part(1, (16 << 20) + 1);
        assert!(!c.touch(&big));
        assert!(!c.touch(&big));
        let fits = part(2, 16 << 20);
        assert!(!c.touch(&fits));
        assert!(c.touch(&fits));
        assert!(!ReadCache::new(0).touch(&fits));
    }

    #[test]
    fn counts_fade() {
        let mut s = Sketch::new(1024);
        let p = part(1, 1);
        for n in 1..=20u8 {
            assert_eq!(s.add(&p), n.min(MAX_COUNT));
        }
        assert_eq!(s.estimate(&p), MAX_COUNT);
        // Other parts' reads up to the halving (10 per counter of a row).
        for n in 0..(10 * 1024 - 20) {
            s.add(&part(1000 + n, 1));
        }
        assert_eq!(s.estimate(&p), MAX_COUNT / 2);
        // A quarter as many parts as counters in a row: almost all
        // estimated at what they were read.
        let mut s = Sketch::new(1024);
        for n in 0..256 {
            s.add(&part(n, 1));
        }
        let over = (0..256).filter(|&n| s.estimate(&part(n, 1)) > 1).count();
        assert!(over < 5, "{over} of 256 parts over-counted");
    }

    #[test]
    fn a_full_cache_takes_only_parts_read_more_often() {
        // Room for two blocks.
        let c = ReadCache::new(2 << 20);
        let block = || Bytes::from(vec![0u8; 1 << 20]);
        let hot = part(1, 1);
        for _ in 0..5 {
            c.touch(&hot);
        }
        assert!(c.insert(&hot, 0, block()));
        assert!(c.insert(&hot, 1, block()));
        let new = part(2, 1);
        for _ in 0..5 {
            c.touch(&new);
        }
        assert!(!c.insert(&new, 0, block()), "read as often: left out");
        assert!(c.get(&hot, 0).is_some() && c.get(&hot, 1).is_some());
        assert_eq!(c.stats().evicted_bytes, 0);
        c.touch(&new);
        assert!(c.wants(&new, 1 << 20));
        assert!(c.insert(&new, 0, block()), "read more often: in");
        // The least recently used block made room.
        assert!(c.get(&hot, 0).is_none());
        assert!(c.get(&hot, 1).is_some());
        assert_eq!(c.stats().evicted_bytes, 1 << 20);
        // Its own older block is passed over for the other part's.
        assert!(c.insert(&new, 1, block()));
        assert!(c.get(&hot, 1).is_none());
        // A part never displaces its own blocks.
        assert!(!c.wants(&new, 1 << 20));
        assert!(!c.insert(&new, 2, block()));
        assert!(c.get(&new, 0).is_some() && c.get(&new, 1).is_some());
        assert!(!c.wants(&new, (2 << 20) + 1), "more than the budget");
    }

    #[test]
    fn serves_what_was_inserted_and_counts() {
        let c = ReadCache::new(8 << 20);
        let p = part(1, 4 << 20);
        assert!(c.get(&p, 0).is_none());
        let data = Bytes::from(vec![5u8; 1 << 20]);
        c.insert(&p, 0, data.clone());
        let got = c.get(&p, 0).expect("cached");
        assert_eq!(got, data);
        // Shared, not copied.
        assert_eq!(got.as_ptr(), data.as_ptr());
        assert!(c.get(&p, 1).is_none());
        assert!(c.get(&part(2, 4 << 20), 0).is_none());
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (1, 3));
        assert_eq!(
            (s.bytes, s.inserted_bytes, s.evicted_bytes),
            (1 << 20, 1 << 20, 0)
        );
    }

    #[test]
    fn evicts_the_least_recently_used_beyond_the_budget() {
        let c = ReadCache::new(3 << 20);
        let (p, q) = (part(1, 8 << 20), part(2, 8 << 20));
        c.touch(&p);
        for _ in 0..3 {
            c.touch(&q);
        }
        for b in 0..3 {
            assert!(c.insert(&p, b, Bytes::from(vec![b as u8; 1 << 20])));
        }
        // Block 0 is used again: block 1 is now the oldest.
        assert!(c.get(&p, 0).is_some());
        assert!(c.insert(&q, 0, Bytes::from(vec![3u8; 1 << 20])));
        assert!(c.get(&p, 1).is_none(), "least recently used, evicted");
        for b in [0, 2] {
            assert_eq!(c.get(&p, b).expect("kept")[0], b as u8);
        }
        assert_eq!(c.get(&q, 0).expect("in")[0], 3);
        let s = c.stats();
        assert_eq!(s.bytes, 3 << 20);
        assert_eq!(s.evicted_bytes, 1 << 20);
        // A block offered again is kept as it is, counted once.
        assert!(c.insert(&q, 0, Bytes::from(vec![9u8; 1 << 20])));
        assert_eq!(c.get(&q, 0).expect("kept")[0], 3);
        let again = c.stats();
        assert_eq!((again.bytes, again.inserted_bytes), (3 << 20, 4 << 20));
        // A block larger than the whole budget is not taken.
        assert!(!c.insert(&q, 7, Bytes::from(vec![0u8; 4 << 20])));
        assert!(c.get(&q, 7).is_none());
    }

    #[test]
    fn a_lowered_limit_sheds_the_least_recently_used_and_a_raised_one_refills() {
        let c = ReadCache::new(4 << 20);
        let p = part(1, 8 << 20);
        c.touch(&p);
        c.touch(&p);
        for b in 0..4 {
            assert!(c.insert(&p, b, Bytes::from(vec![b as u8; 1 << 20])));
        }
        assert!(c.get(&p, 0).is_some(), "block 0 the most recently used");
        // Memory runs short: down to 2 MiB, blocks 1 and 2 go at once.
        assert_eq!(c.set_limit(2 << 20), 2 << 20);
        assert!(c.get(&p, 1).is_none() && c.get(&p, 2).is_none());
        assert_eq!(c.get(&p, 0).expect("kept")[0], 0);
        assert_eq!(c.get(&p, 3).expect("kept")[0], 3);
        let s = c.stats();
        assert_eq!((s.bytes, s.limit, s.budget), (2 << 20, 2 << 20, 4 << 20));
        assert_eq!((s.shed_bytes, s.evicted_bytes), (2 << 20, 0));
        // Within the limit, a block of the same part finds no room (its
        // own blocks are never its victims).
        assert!(!c.wants(&p, 1 << 20));
        assert!(!c.insert(&p, 1, Bytes::from(vec![1u8; 1 << 20])));
        // Nothing at all while the limit is 0.
        assert_eq!(c.set_limit(0), 2 << 20);
        assert_eq!(c.stats().bytes, 0);
        assert!(!c.insert(&p, 1, Bytes::from(vec![1u8; 1 << 20])));
        // Memory is back: a limit above the budget is the budget, and
        // blocks go in again.
        assert_eq!(c.set_limit(usize::MAX), 0);
        assert_eq!(c.stats().limit, 4 << 20);
        for b in 0..4 {
            assert!(c.insert(&p, b, Bytes::from(vec![b as u8; 1 << 20])));
        }
        assert_eq!(c.stats().bytes, 4 << 20);
    }

    #[test]
    fn block_bytes_are_the_parts_in_order_or_nothing() {
        let c = ReadCache::new(64 << 20);
        let b = c
            .block_bytes([&[1u8, 2][..], &[3, 4, 5]], 5)
            .expect("mapped");
        assert_eq!(&b[..], [1, 2, 3, 4, 5]);
        assert_eq!(&b.slice(1..4)[..], [2, 3, 4]);
        assert!(c.block_bytes([&[1u8, 2][..]], 3).is_none(), "short");
        assert!(c.block_bytes([&[1u8, 2][..], &[3, 4]], 3).is_none(), "long");
    }

    #[test]
    fn dropped_blocks_are_reused_until_memory_is_short() {
        let c = ReadCache::new(64 << 20);
        let held = |c: &ReadCache| c.spares.held();
        let one = vec![7u8; 1 << 20];
        let a = c.block_bytes([&one[..]], 1 << 20).unwrap();
        let at = a.as_ptr();
        // Still shared by a reader: kept until the last reference goes.
        let reader = a.slice(..);
        drop(a);
        assert_eq!(held(&c), 0);
        drop(reader);
        assert_eq!(held(&c), 1 << 20, "kept as a spare");
        let two = vec![9u8; 1 << 20];
        let b = c.block_bytes([&two[..]], 1 << 20).unwrap();
        assert_eq!((b.as_ptr(), held(&c)), (at, 0), "the same mapping again");
        assert_eq!(&b[..], &two[..]);
        // Six dropped at once: spares never exceed a sixteenth of the
        // budget (4 MiB here).
        let blocks: Vec<Bytes> = (0..6)
            .map(|_| c.block_bytes([&one[..]], 1 << 20).unwrap())
            .collect();
        drop(blocks);
        assert_eq!(held(&c), 4 << 20);
        // Memory short: the spares go, and dropped blocks are unmapped.
        c.set_limit(32 << 20);
        assert_eq!(held(&c), 0);
        drop(b);
        assert_eq!(held(&c), 0);
        c.set_limit(usize::MAX);
        drop(c.block_bytes([&one[..]], 1 << 20));
        assert_eq!(held(&c), 1 << 20);
    }

    #[test]
    fn forgets_the_blocks_of_a_data_dir() {
        let c = ReadCache::new(64 << 20);
        let a1 = part(1, 4 << 20);
        let a2 = PartId {
            part: 2,
            mod_time: i64::MAX,
            size: u64::MAX,
            ..a1
        };
        let other_dir = PartId {
            data_dir: [8; 16],
            ..a1
        };
        let other_set = PartId { set: 1, ..a1 };
        for (p, b) in [
            (a1, 0),
            (a1, u64::MAX),
            (a2, 3),
            (other_dir, 0),
            (other_set, 0),
        ] {
            c.insert(&p, b, Bytes::from(vec![1u8; 1000]));
        }
        c.forget(0..1, &[7; 16]);
        assert!(c.get(&a1, 0).is_none());
        assert!(c.get(&a1, u64::MAX).is_none());
        assert!(c.get(&a2, 3).is_none());
        assert!(c.get(&other_dir, 0).is_some(), "another data dir");
        assert!(
            c.get(&other_set, 0).is_some(),
            "the same dir name in another set"
        );
        let s = c.stats();
        assert_eq!(
            (s.bytes, s.forgotten_bytes, s.evicted_bytes),
            (2000, 3000, 0)
        );
        // Forgetting what is not there changes nothing.
        c.forget(0..1, &[7; 16]);
        assert_eq!(c.stats().bytes, 2000);
        // Across sets (another node removed the directory): every set's.
        c.forget(0..2, &[7; 16]);
        assert!(c.get(&other_set, 0).is_none());
        assert!(c.get(&other_dir, 0).is_some(), "another data dir");
        assert_eq!(c.stats().bytes, 1000);
    }
}
