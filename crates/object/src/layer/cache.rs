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
//! Admission: a part is cached only when it is read a second time while
//!   the first read is still remembered (a bounded list of the parts read
//!   recently), and only if it is at most a quarter of the budget, so one
//!   pass over many objects (a backup, a scan) does not flush what is hot.
//!   Eviction is least recently used, by bytes.

use std::collections::{BTreeMap, HashSet, VecDeque};
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

#[derive(Default)]
struct Inner {
    blocks: BTreeMap<BlockKey, Entry>,
    /// Recency order: oldest first.
    order: BTreeMap<u64, BlockKey>,
    tick: u64,
    bytes: usize,
    /// Parts read recently (admission remembers them in this order).
    seen: HashSet<PartId>,
    seen_order: VecDeque<PartId>,
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
    /// Bytes of blocks dropped to stay within the budget.
    pub evicted_bytes: u64,
    /// Bytes of blocks dropped with their version's data.
    pub forgotten_bytes: u64,
    /// Bytes held now.
    pub bytes: u64,
    /// The budget, bytes.
    pub budget: u64,
}

/// Verified erasure blocks of hot objects, within a budget of bytes,
/// shared by every erasure set of a layer (module documentation above).
pub struct ReadCache {
    budget: usize,
    /// Parts larger than this are never admitted.
    max_part: u64,
    /// Parts remembered for admission.
    seen_cap: usize,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
    inserted: AtomicU64,
    evicted: AtomicU64,
    forgotten: AtomicU64,
}

impl std::fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCache")
            .field("budget", &self.budget)
            .field("stats", &self.stats())
            .finish()
    }
}

/// Parts remembered for admission, at most (and at least).
const SEEN_MAX: usize = 1 << 16;
const SEEN_MIN: usize = 1 << 10;

impl ReadCache {
    /// A cache of at most `budget` bytes of block data.
    pub fn new(budget: usize) -> ReadCache {
        // One remembered part per 64 KiB of budget: far more parts than
        // the budget can hold, so a part read twice at the pace the cache
        // turns over is still remembered at its second read.
        let seen_cap = (budget >> 16).clamp(SEEN_MIN, SEEN_MAX);
        ReadCache {
            budget,
            max_part: (budget / 4) as u64,
            seen_cap,
            inner: Mutex::new(Inner::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserted: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            forgotten: AtomicU64::new(0),
        }
    }

    /// The budget, bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Block `block` of `part`, if cached (it becomes the most recently
    /// used).
    pub(crate) fn get(&self, part: &PartId, block: u64) -> Option<Bytes> {
        let key = BlockKey { part: *part, block };
        let mut g = self.lock();
        let inner = &mut *g;
        let Some(e) = inner.blocks.get_mut(&key) else {
            drop(g);
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        inner.tick += 1;
        inner.order.remove(&e.tick);
        e.tick = inner.tick;
        inner.order.insert(e.tick, key);
        let data = e.data.clone();
        drop(g);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(data)
    }

    /// Whether blocks of `part` read now should be added: it was read
    /// before and is still remembered, and it fits a quarter of the
    /// budget. A part not remembered is remembered from now on (the oldest
    /// remembered part is forgotten beyond the list's length).
    pub(crate) fn admit(&self, part: &PartId) -> bool {
        if self.budget == 0 {
            return false;
        }
        let mut g = self.lock();
        if g.seen.contains(part) {
            return part.size <= self.max_part;
        }
        g.seen.insert(*part);
        g.seen_order.push_back(*part);
        while g.seen_order.len() > self.seen_cap {
            if let Some(old) = g.seen_order.pop_front() {
                g.seen.remove(&old);
            }
        }
        false
    }

    /// Adds block `block` of `part` (its verified data shards, one after
    /// the other), dropping the least recently used blocks beyond the
    /// budget.
    pub(crate) fn insert(&self, part: &PartId, block: u64, data: Bytes) {
        if data.len() > self.budget {
            return;
        }
        let key = BlockKey { part: *part, block };
        let len = data.len();
        let mut evicted = 0usize;
        {
            let mut g = self.lock();
            let inner = &mut *g;
            inner.tick += 1;
            let tick = inner.tick;
            if let Some(old) = inner.blocks.insert(key, Entry { data, tick }) {
                inner.order.remove(&old.tick);
                inner.bytes -= old.data.len();
            }
            inner.order.insert(tick, key);
            inner.bytes += len;
            while inner.bytes > self.budget {
                let Some((_, oldest)) = inner.order.pop_first() else {
                    break;
                };
                if let Some(e) = inner.blocks.remove(&oldest) {
                    inner.bytes -= e.data.len();
                    evicted += e.data.len();
                }
            }
        }
        self.inserted.fetch_add(len as u64, Ordering::Relaxed);
        self.evicted.fetch_add(evicted as u64, Ordering::Relaxed);
    }

    /// Drops every block of the versions whose data directory is
    /// `data_dir` in set `set`: called as that directory is removed.
    pub(crate) fn forget(&self, set: u32, data_dir: &[u8; 16]) {
        let at = |fill_min: bool| {
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
            let keys: Vec<BlockKey> = inner
                .blocks
                .range(at(true)..=at(false))
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
        let bytes = self.lock().bytes as u64;
        ReadCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserted_bytes: self.inserted.load(Ordering::Relaxed),
            evicted_bytes: self.evicted.load(Ordering::Relaxed),
            forgotten_bytes: self.forgotten.load(Ordering::Relaxed),
            bytes,
            budget: self.budget as u64,
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
    fn admits_a_part_at_its_second_read() {
        let c = ReadCache::new(64 << 20);
        let p = part(1, 4 << 20);
        assert!(!c.admit(&p), "first read: remembered, not admitted");
        assert!(c.admit(&p), "second read: admitted");
        assert!(c.admit(&p));
        let other = PartId { mod_time: 2, ..p };
        assert!(!c.admit(&other), "another version is another part");
    }

    #[test]
    fn never_admits_a_part_above_a_quarter_of_the_budget() {
        let c = ReadCache::new(64 << 20);
        let big = part(1, (16 << 20) + 1);
        assert!(!c.admit(&big));
        assert!(!c.admit(&big));
        let fits = part(2, 16 << 20);
        assert!(!c.admit(&fits));
        assert!(c.admit(&fits));
        assert!(!ReadCache::new(0).admit(&fits));
    }

    #[test]
    fn forgets_the_oldest_remembered_parts() {
        let c = ReadCache::new(1 << 20);
        let cap = c.seen_cap as u32;
        for n in 0..=cap {
            assert!(!c.admit(&part(n, 1)));
        }
        // Part 0 was pushed out by the one after the last that fits.
        assert!(!c.admit(&part(0, 1)));
        assert!(c.admit(&part(cap, 1)));
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
        let p = part(1, 8 << 20);
        for b in 0..3 {
            c.insert(&p, b, Bytes::from(vec![b as u8; 1 << 20]));
        }
        // Block 0 is used again: block 1 is now the oldest.
        assert!(c.get(&p, 0).is_some());
        c.insert(&p, 3, Bytes::from(vec![3u8; 1 << 20]));
        assert!(c.get(&p, 1).is_none(), "least recently used, evicted");
        for b in [0, 2, 3] {
            assert_eq!(c.get(&p, b).expect("kept")[0], b as u8);
        }
        let s = c.stats();
        assert_eq!(s.bytes, 3 << 20);
        assert_eq!(s.evicted_bytes, 1 << 20);
        // Replacing a block counts its bytes once.
        c.insert(&p, 3, Bytes::from(vec![9u8; 1 << 19]));
        assert_eq!(c.stats().bytes, (2 << 20) + (1 << 19));
        // A block larger than the whole budget is not taken.
        c.insert(&p, 7, Bytes::from(vec![0u8; 4 << 20]));
        assert!(c.get(&p, 7).is_none());
        assert_eq!(c.get(&p, 3).expect("kept").len(), 1 << 19);
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
        c.forget(0, &[7; 16]);
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
        c.forget(0, &[7; 16]);
        assert_eq!(c.stats().bytes, 2000);
    }
}
