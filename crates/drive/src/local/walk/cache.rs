//! What walks keep between pages and listings: the drive's namespace
//! generation ([`Namespace`]), the sorted candidates of large directories
//! and the `xl.meta` heads read.
//!
//! The metadata heads read are kept in a per-drive cache ([`MetaCache`]),
//! so that listing a bucket again reads no `xl.meta` that did not change.
//! The walk `statx`es every object directory anyway (its link count says
//! whether it holds subdirectories); a kept head is used again while that
//! directory's stamp (device, inode, size, link count, modification and
//! change times) is the one seen before the head was read, the head is
//! younger than its age limit ([`Stamp::max_age`]), and either nothing
//! changed the drive's names since (the generation below) or the
//! directory had not changed for [`SETTLED`] before the head was read (so
//! that a later change shows another change time whatever the timestamp
//! granularity). Every write of
//! an `xl.meta`, by Tessera or by any tool that writes a file beside it
//! and renames it into place, or removes it, changes its directory. An
//! `xl.meta` rewritten in place by another process changes only the file:
//! such a change shows within [`META_MAX_AGE`]. A hit costs the one
//! `statx` instead of `openat` + `read` + `close` + `statx`.
//!
//! Large directories are kept in a per-drive cache of their sorted walk
//! candidates ([`Namespace`]), so the pages of one listing do not each read
//! the whole directory again. An entry is used only while nothing changed:
//! every primitive that creates, renames or removes a name on the drive
//! bumps a generation (when it starts and when it ends, even if its future
//! is dropped), and the directory's inode, size, link count and change and
//! modification times must be those seen when it was read (which catches
//! changes made by another process, to the file system's timestamp
//! granularity; Linux 6.13 and later make a change after a `stat` show a
//! new time on ext4, XFS, btrfs and tmpfs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::StatxFlags;

use super::ahead::Ahead;
use crate::walk::Cands;

/// Directories with fewer candidates are read again each time (cheap).
const CACHE_MIN_CANDIDATES: usize = 1024;
/// Most bytes of candidates kept per drive.
const CACHE_MAX_BYTES: usize = 16 << 20;

/// What identifies one state of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    nlink: u64,
    mtime: (i64, u64),
    ctime: (i64, u64),
}

impl Stamp {
    // The nanosecond fields are not the same type on every architecture.
    #[allow(clippy::unnecessary_cast)]
    pub(super) fn of(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            nlink: st.st_nlink,
            mtime: (st.st_mtime, st.st_mtime_nsec as u64),
            ctime: (st.st_ctime, st.st_ctime_nsec as u64),
        }
    }

    /// The same from `statx` (`None` when the file system does not report
    /// every field of [`STATX_STAMP`]).
    pub(super) fn of_statx(st: &rustix::fs::Statx) -> Option<Stamp> {
        (st.stx_mask & STATX_STAMP.bits() == STATX_STAMP.bits()).then_some(Stamp {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            size: st.stx_size as i64,
            nlink: u64::from(st.stx_nlink),
            mtime: (st.stx_mtime.tv_sec, u64::from(st.stx_mtime.tv_nsec)),
            ctime: (st.stx_ctime.tv_sec, u64::from(st.stx_ctime.tv_nsec)),
        })
    }

    /// How long a metadata head read in the object directory with this
    /// stamp may be used.
    fn max_age(&self) -> Duration {
        META_MAX_AGE - Duration::from_millis(self.ino % META_AGE_SPREAD_MS)
    }

    /// Whether the directory last changed at least [`SETTLED`] before
    /// `now`.
    pub(super) fn settled(&self, now: SystemTime) -> bool {
        let Ok(secs) = u64::try_from(self.ctime.0) else {
            return false;
        };
        let changed =
            SystemTime::UNIX_EPOCH + Duration::new(secs, self.ctime.1.min(999_999_999) as u32);
        now.duration_since(changed).is_ok_and(|d| d >= SETTLED)
    }
}

/// Most bytes of metadata heads (with their keys) kept per drive.
const META_CACHE_MAX_BYTES: usize = 16 << 20;
/// Largest head kept.
const META_CACHE_MAX_ENTRY: usize = 64 << 10;
/// What an entry costs beyond its key and head (map slot, entry, boxes).
const META_CACHE_OVERHEAD: usize = 96;
/// A directory whose change time was at least this far in the past when
/// a head in it was read shows another change time after any later change,
/// even on a file system that keeps whole seconds (ext4 with 128-byte
/// inodes).
pub(super) const SETTLED: Duration = Duration::from_secs(2);
/// A kept head older than this is read again: the bound on how long an
/// `xl.meta` rewritten in place by another process can go unseen.
pub(super) const META_MAX_AGE: Duration = Duration::from_secs(7);
/// Each head's age limit is [`META_MAX_AGE`] less up to this much (by its
/// directory's inode number), so that the heads one listing read are not
/// all read again by the same later listing.
const META_AGE_SPREAD_MS: u64 = 2000;
/// What `statx` of an object directory asks: its type and link count (for
/// the subdirectory check) and a [`Stamp`].
pub(super) const STATX_STAMP: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::NLINK)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME);

/// A metadata head as read, and what makes it still good.
pub(super) struct MetaEntry {
    /// The generation read before the directory's stamp was taken.
    pub(super) generation: u64,
    /// The object directory's stamp, taken before the head was read.
    pub(super) stamp: Stamp,
    /// The directory had [`settled`](Stamp::settled) then.
    pub(super) settled: bool,
    pub(super) read_at: Instant,
    /// The head length asked for.
    pub(super) head: usize,
    pub(super) complete: bool,
    pub(super) bytes: Box<[u8]>,
}

impl MetaEntry {
    fn cost(key: &str, bytes: &[u8]) -> usize {
        key.len() + bytes.len() + META_CACHE_OVERHEAD
    }
}

/// A drive's cache of metadata heads, by `volume/object dir`. Entries are
/// admitted while the budget has room (a listing larger than it keeps its
/// first keys rather than evicting what the next pass needs), dropped when
/// found stale, and swept once older than [`META_MAX_AGE`] (so a drive
/// nobody lists holds none for long).
#[derive(Default)]
pub(super) struct MetaCache {
    pub(super) map: HashMap<String, MetaEntry>,
    bytes: usize,
    swept: Option<Instant>,
}

impl MetaCache {
    /// Drops the entries too old to be used, at most once per
    /// [`META_MAX_AGE`].
    fn sweep(&mut self, now: Instant) {
        let due = self
            .swept
            .is_none_or(|t| now.duration_since(t) >= META_MAX_AGE);
        if !due {
            return;
        }
        self.swept = Some(now);
        let mut bytes = 0;
        self.map.retain(|k, e| {
            let keep = now.duration_since(e.read_at) < e.stamp.max_age();
            if keep {
                bytes += MetaEntry::cost(k, &e.bytes);
            }
            keep
        });
        self.bytes = bytes;
    }

    fn remove(&mut self, key: &str) {
        if let Some(old) = self.map.remove(key) {
            self.bytes -= MetaEntry::cost(key, &old.bytes);
        }
    }
}

struct Cached {
    generation: u64,
    stamp: Stamp,
    cands: Arc<Cands>,
    used: u64,
}

#[derive(Default)]
struct DirCache {
    map: HashMap<String, Cached>,
    bytes: usize,
    tick: u64,
}

/// A drive's namespace generation, the walk's directory cache and its
/// walks ahead.
#[derive(Default)]
pub(crate) struct Namespace {
    generation: AtomicU64,
    dirs: Mutex<DirCache>,
    pub(super) metas: Mutex<MetaCache>,
    /// Metadata heads served from `metas`.
    pub(super) meta_hits: AtomicU64,
    pub(super) ahead: Mutex<Vec<Ahead>>,
    /// 1 while a walk ahead runs (one at a time per drive).
    pub(super) ahead_running: AtomicUsize,
    /// Pages served by walks ahead (for tests).
    pub(super) ahead_served: AtomicU64,
    /// Walks ahead dropped without being taken since one was used.
    pub(super) ahead_unused: AtomicU64,
    /// Walks ahead not started because of `ahead_unused`.
    pub(super) ahead_skipped: AtomicU64,
}

/// Marks a change to the drive's names: the generation moves when the
/// change starts and again when it is over (or abandoned).
pub(crate) struct Change<'a>(&'a Namespace);

impl Drop for Change<'_> {
    fn drop(&mut self) {
        self.0.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Namespace {
    /// A change begins; it ends when the returned guard drops.
    pub(crate) fn change(&self) -> Change<'_> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        Change(self)
    }

    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The cached candidates of `rel`, if read at `generation` (nothing
    /// changed since) and the directory is as it was.
    pub(super) fn get(&self, rel: &str, generation: u64, stamp: &Stamp) -> Option<Arc<Cands>> {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.tick += 1;
        let tick = dirs.tick;
        let hit = dirs
            .map
            .get_mut(rel)
            .filter(|c| c.generation == generation && c.stamp == *stamp)
            .map(|c| {
                c.used = tick;
                Arc::clone(&c.cands)
            });
        if hit.is_none()
            && let Some(old) = dirs.map.remove(rel)
        {
            dirs.bytes -= old.cands.bytes();
        }
        hit
    }

    /// Keeps the candidates of `rel` as read at `generation`, evicting the
    /// least recently used directories beyond the budget.
    pub(super) fn put(&self, rel: &str, generation: u64, stamp: Stamp, cands: Arc<Cands>) {
        let size = cands.bytes();
        if cands.len() < CACHE_MIN_CANDIDATES || size > CACHE_MAX_BYTES / 2 {
            return;
        }
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.tick += 1;
        let used = dirs.tick;
        if let Some(old) = dirs.map.insert(
            rel.to_owned(),
            Cached {
                generation,
                stamp,
                cands,
                used,
            },
        ) {
            dirs.bytes -= old.cands.bytes();
        }
        dirs.bytes += size;
        while dirs.bytes > CACHE_MAX_BYTES {
            let Some(oldest) = dirs
                .map
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(old) = dirs.map.remove(&oldest) {
                dirs.bytes -= old.cands.bytes();
            }
        }
    }

    /// Whether a head of `key` is kept (stale or not; for tests).
    #[cfg(test)]
    fn has_meta(&self, key: &str) -> bool {
        let metas = self.metas.lock().unwrap_or_else(|p| p.into_inner());
        metas.map.contains_key(key)
    }

    /// The kept head of `key` if its object directory still has `stamp`
    /// and nothing else made it stale (see the module documentation); a
    /// stale entry is dropped.
    pub(super) fn meta_get(
        &self,
        key: &str,
        generation: u64,
        stamp: &Stamp,
        head: usize,
    ) -> Option<(Vec<u8>, bool)> {
        let now = Instant::now();
        let mut metas = self.metas.lock().unwrap_or_else(|p| p.into_inner());
        metas.sweep(now);
        let hit = metas
            .map
            .get_mut(key)
            .filter(|e| {
                e.stamp == *stamp
                    && (e.generation == generation || e.settled)
                    && now.duration_since(e.read_at) < e.stamp.max_age()
                    && (e.head == head || (e.complete && e.bytes.len() <= head))
            })
            .map(|e| (e.bytes.to_vec(), e.complete));
        match hit {
            Some(h) => {
                self.meta_hits.fetch_add(1, Ordering::Relaxed);
                Some(h)
            }
            None => {
                metas.remove(key);
                None
            }
        }
    }

    /// Keeps `entry` for `key` if the budget has room.
    pub(super) fn meta_put(&self, key: &str, entry: MetaEntry) {
        let cost = MetaEntry::cost(key, &entry.bytes);
        if entry.bytes.len() > META_CACHE_MAX_ENTRY {
            return;
        }
        let mut metas = self.metas.lock().unwrap_or_else(|p| p.into_inner());
        metas.sweep(Instant::now());
        metas.remove(key);
        if metas.bytes + cost > META_CACHE_MAX_BYTES {
            return;
        }
        metas.bytes += cost;
        metas.map.insert(key.to_owned(), entry);
    }

    /// Drops the head of `key` (its directory is gone).
    pub(super) fn meta_forget(&self, key: &str) {
        let mut metas = self.metas.lock().unwrap_or_else(|p| p.into_inner());
        metas.remove(key);
    }

    /// Directories cached (for tests).
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.dirs.lock().map(|d| d.map.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ino: u64) -> Stamp {
        Stamp {
            dev: 1,
            ino,
            size: 4096,
            nlink: 2,
            mtime: (5, 6),
            ctime: (7, 8),
        }
    }

    fn big() -> Arc<Cands> {
        let entries = (0..CACHE_MIN_CANDIDATES)
            .map(|i| (format!("k{i:05}"), true))
            .collect();
        Arc::new(Cands::build(entries))
    }

    /// An entry serves only its generation and its stamp; a change that is
    /// under way or over moves the generation; small directories are not
    /// kept; the budget evicts the least recently used.
    #[test]
    fn cache_entries_are_used_only_while_nothing_changed() {
        let ns = Namespace::default();
        let g = ns.generation();
        ns.put("v/a", g, stamp(1), big());
        assert!(ns.get("v/a", g, &stamp(1)).is_some());
        // Another state of the directory (seen by its stamp) misses, and
        // the entry is dropped.
        assert!(ns.get("v/a", g, &stamp(2)).is_none());
        assert_eq!(ns.cached(), 0);
        ns.put("v/a", g, stamp(1), big());
        {
            let _c = ns.change();
            // A change in flight: the generation moved at its start.
            assert!(ns.get("v/a", ns.generation(), &stamp(1)).is_none());
        }
        let g2 = ns.generation();
        assert!(g2 >= g + 2, "a change moves the generation twice");
        ns.put("v/a", g2, stamp(1), big());
        drop(ns.change());
        assert!(ns.get("v/a", ns.generation(), &stamp(1)).is_none());
        // Small directories are read again each time.
        let small = Arc::new(Cands::build(vec![("x".into(), true)]));
        ns.put("v/s", ns.generation(), stamp(3), small);
        assert_eq!(ns.cached(), 0);
        // The budget holds.
        let g = ns.generation();
        let per = big().bytes();
        for i in 0..(CACHE_MAX_BYTES / per + 4) {
            ns.put(&format!("v/d{i}"), g, stamp(i as u64), big());
        }
        let dirs = ns.dirs.lock().unwrap();
        assert!(dirs.bytes <= CACHE_MAX_BYTES);
        assert!(
            !dirs.map.contains_key("v/d0"),
            "least recently used evicted"
        );
        let last = format!("v/d{}", CACHE_MAX_BYTES / per + 3);
        assert!(dirs.map.contains_key(&last));
    }

    fn meta_entry(generation: u64, ino: u64, settled: bool, len: usize) -> MetaEntry {
        MetaEntry {
            generation,
            stamp: Stamp {
                dev: 0x801,
                ino,
                size: len as i64,
                nlink: 2,
                mtime: (1, 2),
                ctime: (1, 2),
            },
            settled,
            read_at: Instant::now(),
            head: 4096,
            complete: true,
            bytes: vec![7u8; len].into(),
        }
    }

    #[test]
    fn metadata_cache_rules_and_budget() {
        let ns = Namespace::default();
        let g = ns.generation();
        let e = meta_entry(g, 1, false, 100);
        let st = e.stamp;
        ns.meta_put("v/a", e);
        assert_eq!(
            ns.meta_get("v/a", g, &st, 4096),
            Some((vec![7u8; 100], true))
        );
        // Complete heads serve any head at least as long; others only
        // their own.
        assert!(ns.meta_get("v/a", g, &st, 100).is_some());
        // Another stamp misses, and the entry is dropped.
        let other = Stamp { ino: 2, ..st };
        assert!(ns.meta_get("v/a", g, &other, 4096).is_none());
        assert!(!ns.has_meta("v/a"));
        // A moved generation: an unsettled entry misses, a settled one
        // does not.
        ns.meta_put("v/a", meta_entry(g, 1, false, 100));
        ns.meta_put("v/b", meta_entry(g, 1, true, 100));
        drop(ns.change());
        let g2 = ns.generation();
        assert!(ns.meta_get("v/a", g2, &st, 4096).is_none());
        assert!(ns.meta_get("v/b", g2, &st, 4096).is_some());
        // A shorter head than the entry's misses.
        assert!(ns.meta_get("v/b", g2, &st, 50).is_none());
        // Each entry's age limit is META_MAX_AGE less its spread.
        let spread = |ino: u64, age: Duration| {
            let mut e = meta_entry(g2, ino, true, 100);
            e.read_at = Instant::now().checked_sub(age).unwrap();
            ns.meta_put("v/s", e);
            let st = Stamp { ino, ..st };
            ns.meta_get("v/s", g2, &st, 4096).is_some()
        };
        let ms = Duration::from_millis;
        assert!(spread(0, META_MAX_AGE - ms(500)));
        assert!(!spread(1999, META_MAX_AGE - ms(1500)));
        assert!(spread(1999, META_MAX_AGE - ms(2500)));
        assert!(!spread(2000, META_MAX_AGE));
        // So does an entry older than META_MAX_AGE, settled or not.
        let mut old = meta_entry(g2, 1, true, 100);
        old.read_at = Instant::now().checked_sub(META_MAX_AGE).unwrap();
        ns.meta_put("v/c", old);
        assert!(ns.has_meta("v/c"));
        assert!(ns.meta_get("v/c", g2, &st, 4096).is_none());
        // Heads larger than an entry may be are not kept.
        ns.meta_put("v/huge", meta_entry(g2, 3, true, META_CACHE_MAX_ENTRY + 1));
        assert!(!ns.has_meta("v/huge"));

        // The budget: entries are admitted while there is room, then
        // refused; what is kept stays.
        let len = 60 << 10;
        let per = MetaEntry::cost("v/k00000", &vec![0; len]);
        let room = META_CACHE_MAX_BYTES / per;
        for i in 0..room + 8 {
            ns.meta_put(&format!("v/k{i:05}"), meta_entry(g2, 9, true, len));
        }
        {
            let metas = ns.metas.lock().unwrap();
            assert!(metas.bytes <= META_CACHE_MAX_BYTES);
            assert!(metas.map.contains_key("v/k00000"));
            assert!(!metas.map.contains_key(&format!("v/k{:05}", room + 7)));
        }
        // A sweep drops what is too old to be used.
        {
            let mut m = ns.metas.lock().unwrap();
            m.swept = Instant::now().checked_sub(META_MAX_AGE);
            for e in m.map.values_mut() {
                e.read_at = e.read_at.checked_sub(META_MAX_AGE).unwrap();
            }
            m.map.get_mut("v/k00003").unwrap().read_at = Instant::now();
            m.sweep(Instant::now());
        }
        let metas = ns.metas.lock().unwrap();
        assert_eq!(metas.map.len(), 1);
        assert!(metas.map.contains_key("v/k00003"));
        assert_eq!(metas.bytes, per);
    }
}
