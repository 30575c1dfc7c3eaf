//! [`WalkFs`] with direct system calls, for a walk run whole inside one
//! blocking task: per object, `openat` + `read` (+ `fstat` only when the
//! head buffer fills) + `close` of its `xl.meta`, relative to a descriptor
//! of its parent directory, and one `statx` of its directory instead of a
//! listing when the link count says it has no subdirectory.
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
//!
//! Walking ahead: once a listing has asked for a continuation page (a walk
//! with `after`) that did not reach the end, the next page (after its last
//! entry, same limit) is walked in the background while the caller works
//! on this one and the client reads it; see [`Ahead`]. The next request
//! takes it if it continues from one of the last entries returned, and if
//! nothing changed in between: no namespace change on the drive since the
//! first of its reads (the generation, as for the cache) and every
//! directory it read still has the stamp it had. Otherwise the page is
//! walked as usual. A first page (no `after`) starts nothing, so a client
//! that reads one page costs one walk.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{AtFlags, Mode, OFlags, StatxFlags};
use tokio::sync::oneshot;

use crate::error::{Ctx, DriveError, Result, map_io};
use crate::path::{self, MAX_COMPONENT_BYTES, MAX_PATH_BYTES, check_volume};
use crate::walk::{Cands, DirEntry, META_FILE, WalkEntry, WalkFs, WalkOptions, WalkPage};

/// Directories a walk read, with their stamps (`None`: too many to keep).
type Dirs = Option<Vec<(String, Stamp)>>;

impl super::Inner {
    /// A page of the walk, whole inside one blocking task (or taken from
    /// the walk run ahead of it).
    pub(super) async fn walk(&self, opts: &WalkOptions) -> Result<WalkPage> {
        let ns = Arc::clone(&self.io.blocking.ns);
        if let Some(after) = opts.after.as_deref()
            && let Some(ahead) = ns.take_ahead(opts, after)
            && let Some((page, since, dirs)) = self.serve_ahead(ahead, opts, after).await
        {
            ns.ahead_served.fetch_add(1, Ordering::Relaxed);
            ns.ahead_unused.store(0, Ordering::Relaxed);
            self.walk_ahead(opts, &page, since, Some(dirs));
            return Ok(page);
        }
        // Read before the walk: a change from now on invalidates what the
        // walk ahead of the next page keeps of this one.
        let since = ns.generation();
        let (page, dirs) = self.walk_now(opts.clone(), None).await?;
        if opts.after.is_some() {
            self.walk_ahead(opts, &page, since, dirs);
        }
        Ok(page)
    }

    /// Walks a page now, with the directories it read.
    async fn walk_now(
        &self,
        opts: WalkOptions,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Result<(WalkPage, Dirs)> {
        walk_blocking(
            &self.io.blocking,
            opts,
            self.cfg.max_list_entries,
            self.root.clone(),
            cancel,
        )
        .await
    }

    /// Starts walking the page after `page` (a page of `opts`) in the
    /// background, if `page` may be followed by more and no walk ahead is
    /// running on this drive. `since` is the generation read before the
    /// first read `page` depends on.
    fn walk_ahead(&self, opts: &WalkOptions, page: &WalkPage, since: u64, dirs: Dirs) {
        let ns = &self.io.blocking.ns;
        let (Some(dirs), Some(last)) = (dirs, page.entries.last()) else {
            return;
        };
        if !page.more || ns.generation() != since {
            return;
        }
        // Walks ahead nobody took: after a few in a row, only one in
        // `AHEAD_RETRY` starts (a client that pages slowly, or continues
        // from elsewhere, does not pay a second walk per page).
        if ns.ahead_unused.load(Ordering::Relaxed) >= AHEAD_UNUSED
            && !ns
                .ahead_skipped
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(AHEAD_RETRY)
        {
            return;
        }
        if ns
            .ahead_running
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return;
        }
        let start = last.name().to_owned();
        let cut = page.entries.len().saturating_sub(AHEAD_TAIL);
        let tail = page.entries[cut..].to_vec();
        // Every entry after `floor` up to `start` is in `tail`.
        let floor = match cut {
            0 => opts.after.clone(),
            _ => Some(page.entries[cut - 1].name().to_owned()),
        };
        let next = WalkOptions {
            after: Some(start),
            ..opts.clone()
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = oneshot::channel();
        let blocking = self.io.blocking.clone();
        let (max_entries, label) = (self.cfg.max_list_entries, self.root.clone());
        let task_cancel = Arc::clone(&cancel);
        let running = Arc::clone(ns);
        tokio::spawn(async move {
            let r = walk_blocking(&blocking, next, max_entries, label, Some(task_cancel)).await;
            running.ahead_running.store(0, Ordering::SeqCst);
            let _ = tx.send(r.ok());
        });
        ns.put_ahead(Ahead {
            volume: opts.volume.clone(),
            prefix: opts.prefix.clone(),
            delimiter: opts.delimiter.clone(),
            meta_head: opts.meta_head,
            meta_limit: opts.meta_limit,
            tail,
            floor,
            since,
            dirs,
            born: Instant::now(),
            page: Some(rx),
            cancel,
        });
    }

    /// The page of `opts` (which continues after `after`) from a walk run
    /// ahead, if it is what a walk now would return; with the generation
    /// and directories it depends on.
    async fn serve_ahead(
        &self,
        mut ahead: Ahead,
        opts: &WalkOptions,
        after: &str,
    ) -> Option<(WalkPage, u64, Vec<(String, Stamp)>)> {
        let rx = ahead.page.take()?;
        let (next, next_dirs) = rx.await.ok()??;
        let ns = &self.io.blocking.ns;
        if ns.generation() != ahead.since {
            return None;
        }
        let mut dirs = std::mem::take(&mut ahead.dirs);
        for (rel, stamp) in next_dirs? {
            match dirs.iter().find(|(r, _)| *r == rel) {
                Some((_, s)) if *s != stamp => return None,
                Some(_) => {}
                None => dirs.push((rel, stamp)),
            }
        }
        // Changes by other processes: every directory read is as it was.
        let check = dirs.clone();
        let unchanged = self
            .io
            .blocking
            .run(move |root| Ok(dirs_unchanged(root, &check)))
            .await
            .unwrap_or(false);
        if !unchanged {
            return None;
        }
        let mut entries: Vec<WalkEntry> = std::mem::take(&mut ahead.tail)
            .into_iter()
            .filter(|e| e.name() > after)
            .collect();
        entries.extend(next.entries);
        let limit = opts.limit.max(1);
        let mut more = if entries.len() > limit {
            entries.truncate(limit);
            true
        } else {
            next.more
        };
        if entries.len() < limit && more {
            // The page ahead was walked with a smaller limit: the rest now.
            let last = entries.last().map(|e| e.name().to_owned())?;
            let rest = WalkOptions {
                after: Some(last),
                limit: limit - entries.len(),
                ..opts.clone()
            };
            let (page, rest_dirs) = self.walk_now(rest, None).await.ok()?;
            for (rel, stamp) in rest_dirs? {
                match dirs.iter().find(|(r, _)| *r == rel) {
                    Some((_, s)) if *s != stamp => return None,
                    Some(_) => {}
                    None => dirs.push((rel, stamp)),
                }
            }
            entries.extend(page.entries);
            more = page.more;
        }
        Some((WalkPage { entries, more }, ahead.since, dirs))
    }
}

/// Runs one page of the walk in a blocking task of `blocking`.
async fn walk_blocking(
    blocking: &super::io::Blocking,
    opts: WalkOptions,
    max_entries: usize,
    label: PathBuf,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<(WalkPage, Dirs)> {
    let ns = Arc::clone(&blocking.ns);
    blocking
        .run(move |root| {
            let mut fs = SyncFs::new(root, &ns, max_entries, &label);
            fs.cancel = cancel;
            let page = run_ready(crate::walk::walk(&mut fs, &opts))?;
            Ok(page.map(|p| (p, fs.dirs.take())))
        })
        .await
        .map_err(|e| map_io("walk", Ctx::Read, e))?
}

/// Whether every directory still has its stamp.
fn dirs_unchanged(root: &OwnedFd, dirs: &[(String, Stamp)]) -> bool {
    dirs.iter().all(|(rel, stamp)| {
        rustix::fs::statat(root, rel.as_str(), AtFlags::empty())
            .is_ok_and(|st| Stamp::of(&st) == *stamp)
    })
}

/// Entries of a page kept with the walk ahead of the next one, so that a
/// request continuing from one of them (the caller may have used fewer
/// entries than it asked for) can still take it.
const AHEAD_TAIL: usize = 32;
/// Walks ahead dropped unused in a row after which they mostly stop.
const AHEAD_UNUSED: u64 = 4;
/// Then one walk ahead in this many starts.
const AHEAD_RETRY: u64 = 8;
/// Walks ahead kept per drive.
const AHEAD_SLOTS: usize = 8;
/// A walk ahead not taken within this time is dropped.
const AHEAD_MAX_AGE: Duration = Duration::from_secs(2);
/// A walk that read more directories than this starts no walk ahead.
const AHEAD_MAX_DIRS: usize = 64;

/// The next page of one listing, walked (or being walked) ahead of its
/// request, and the last entries of the page before it. It serves a walk of
/// the same volume, prefix, delimiter and metadata head whose `after` is
/// one of the kept entries (or between them), if the drive's generation is
/// still `since` and every directory in `dirs` still has its stamp.
struct Ahead {
    volume: String,
    prefix: String,
    delimiter: Option<String>,
    meta_head: usize,
    meta_limit: u64,
    /// The last entries of the page before (the walk ahead starts after
    /// the last one).
    tail: Vec<WalkEntry>,
    /// Every entry of the page before that sorts after this (all of them
    /// with `None`) is in `tail`.
    floor: Option<String>,
    /// The generation read before the first read of `tail`.
    since: u64,
    /// Directories `tail` was read from, with their stamps then.
    dirs: Vec<(String, Stamp)>,
    born: Instant,
    /// The page, when its walk is over (`None` inside: it failed).
    page: Option<oneshot::Receiver<Option<(WalkPage, Dirs)>>>,
    /// Set when this is dropped: the walk stops at its next step.
    cancel: Arc<AtomicBool>,
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Ahead {
    fn serves(&self, o: &WalkOptions, after: &str) -> bool {
        let Some(last) = self.tail.last() else {
            return false;
        };
        self.volume == o.volume
            && self.prefix == o.prefix
            && self.delimiter == o.delimiter
            && self.meta_head == o.meta_head
            && self.meta_limit == o.meta_limit
            && self.floor.as_deref().is_none_or(|f| f <= after)
            && after <= last.name()
    }
}

/// Directories with fewer candidates are read again each time (cheap).
const CACHE_MIN_CANDIDATES: usize = 1024;
/// Most bytes of candidates kept per drive.
const CACHE_MAX_BYTES: usize = 16 << 20;

/// What identifies one state of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
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
    fn of(st: &rustix::fs::Stat) -> Stamp {
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
    fn of_statx(st: &rustix::fs::Statx) -> Option<Stamp> {
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
    fn settled(&self, now: SystemTime) -> bool {
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
const SETTLED: Duration = Duration::from_secs(2);
/// A kept head older than this is read again: the bound on how long an
/// `xl.meta` rewritten in place by another process can go unseen.
const META_MAX_AGE: Duration = Duration::from_secs(7);
/// Each head's age limit is [`META_MAX_AGE`] less up to this much (by its
/// directory's inode number), so that the heads one listing read are not
/// all read again by the same later listing.
const META_AGE_SPREAD_MS: u64 = 2000;
/// What `statx` of an object directory asks: its type and link count (for
/// the subdirectory check) and a [`Stamp`].
const STATX_STAMP: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::NLINK)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::CTIME);

/// A metadata head as read, and what makes it still good.
struct MetaEntry {
    /// The generation read before the directory's stamp was taken.
    generation: u64,
    /// The object directory's stamp, taken before the head was read.
    stamp: Stamp,
    /// The directory had [`settled`](Stamp::settled) then.
    settled: bool,
    read_at: Instant,
    /// The head length asked for.
    head: usize,
    complete: bool,
    bytes: Box<[u8]>,
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
struct MetaCache {
    map: HashMap<String, MetaEntry>,
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
    metas: Mutex<MetaCache>,
    /// Metadata heads served from `metas`.
    meta_hits: AtomicU64,
    ahead: Mutex<Vec<Ahead>>,
    /// 1 while a walk ahead runs (one at a time per drive).
    ahead_running: AtomicUsize,
    /// Pages served by walks ahead (for tests).
    ahead_served: AtomicU64,
    /// Walks ahead dropped without being taken since one was used.
    ahead_unused: AtomicU64,
    /// Walks ahead not started because of `ahead_unused`.
    ahead_skipped: AtomicU64,
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

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The cached candidates of `rel`, if read at `generation` (nothing
    /// changed since) and the directory is as it was.
    fn get(&self, rel: &str, generation: u64, stamp: &Stamp) -> Option<Arc<Cands>> {
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
    fn put(&self, rel: &str, generation: u64, stamp: Stamp, cands: Arc<Cands>) {
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
    fn meta_get(
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
    fn meta_put(&self, key: &str, entry: MetaEntry) {
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
    fn meta_forget(&self, key: &str) {
        let mut metas = self.metas.lock().unwrap_or_else(|p| p.into_inner());
        metas.remove(key);
    }

    /// Keeps a walk ahead, dropping those too old and the oldest beyond
    /// the budget.
    fn put_ahead(&self, a: Ahead) {
        let mut slots = self.ahead.lock().unwrap_or_else(|p| p.into_inner());
        self.drop_expired(&mut slots);
        if slots.len() >= AHEAD_SLOTS {
            slots.remove(0);
            self.ahead_unused.fetch_add(1, Ordering::Relaxed);
        }
        slots.push(a);
    }

    /// Drops the walks ahead too old to be taken, counting them unused.
    fn drop_expired(&self, slots: &mut Vec<Ahead>) {
        let before = slots.len();
        slots.retain(|s| s.born.elapsed() < AHEAD_MAX_AGE);
        self.ahead_unused
            .fetch_add((before - slots.len()) as u64, Ordering::Relaxed);
    }

    /// Takes the walk ahead that may serve `o`, which continues after
    /// `after`.
    fn take_ahead(&self, o: &WalkOptions, after: &str) -> Option<Ahead> {
        let mut slots = self.ahead.lock().unwrap_or_else(|p| p.into_inner());
        self.drop_expired(&mut slots);
        let i = slots.iter().position(|s| s.serves(o, after))?;
        Some(slots.remove(i))
    }

    /// Directories cached (for tests).
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.dirs.lock().map(|d| d.map.len()).unwrap_or(0)
    }
}

/// What [`path::join`] checks of `volume/dir` beyond its parent: the last
/// component `name` and the whole length.
fn check_leaf(volume: &str, dir: &str, name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('\0') {
        return Err(DriveError::InvalidPath(format!("bad component in {dir:?}")));
    }
    if name.len() > MAX_COMPONENT_BYTES || volume.len() + 1 + dir.len() > MAX_PATH_BYTES {
        return Err(DriveError::NameTooLong);
    }
    Ok(())
}

/// Largest head read of a metadata file (a caller asking more gets this).
const MAX_HEAD: usize = 1 << 20;

/// Runs a future whose every step is synchronous: it must be ready at its
/// first poll (the [`SyncFs`] methods return ready futures).
pub(super) fn run_ready<T>(fut: impl Future<Output = T>) -> io::Result<T> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Ok(v),
        Poll::Pending => Err(io::Error::other("synchronous walk step was pending")),
    }
}

/// The file system under a drive root, with blocking system calls.
pub(super) struct SyncFs<'r> {
    root: &'r OwnedFd,
    ns: &'r Namespace,
    /// Most names read from one directory (the smallest are kept).
    max_entries: usize,
    /// Reused buffer for metadata heads.
    buf: Vec<u8>,
    /// The last parent directory of an object opened (volume, path in the
    /// volume, `O_PATH` descriptor): the objects of a page mostly share it.
    parent: Option<(String, String, OwnedFd)>,
    /// Reused buffer for a path under `parent`.
    sub: String,
    /// Reused buffer for a [`MetaCache`] key.
    key: String,
    /// The key of the object directory `statx`ed last, and whether it may
    /// hold subdirectories: the walk asks that next, as it enters it.
    last_dir: (String, bool),
    label: &'r Path,
    /// Directories read, with their stamps (`None` beyond
    /// [`AHEAD_MAX_DIRS`]).
    dirs: Dirs,
    /// Stops the walk (with an error) when set: a walk ahead nobody wants.
    cancel: Option<Arc<AtomicBool>>,
}

impl<'r> SyncFs<'r> {
    pub(super) fn new(
        root: &'r OwnedFd,
        ns: &'r Namespace,
        max_entries: usize,
        label: &'r Path,
    ) -> Self {
        SyncFs {
            root,
            ns,
            max_entries: max_entries.max(1),
            buf: Vec::new(),
            parent: None,
            sub: String::new(),
            key: String::new(),
            last_dir: (String::new(), true),
            label,
            dirs: Some(Vec::new()),
            cancel: None,
        }
    }

    fn cancelled(&self) -> Result<()> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(DriveError::InvalidArgument("walk ahead abandoned".into()));
        }
        Ok(())
    }

    /// A descriptor of the parent of the object directory `dir` of
    /// `volume` and the path of `leaf` under it (`None`: the parent does
    /// not exist). The path is validated as every drive operation validates
    /// it ([`path::join`]): the parent once per parent, the last component
    /// each time.
    fn at_parent(
        &mut self,
        volume: &str,
        dir: &str,
        leaf: &str,
    ) -> Result<Option<(&OwnedFd, &str)>> {
        let (pdir, name, nested) = match dir.rfind('/') {
            Some(i) => (&dir[..i], &dir[i + 1..], true),
            None => ("", dir, false),
        };
        let same = nested != pdir.is_empty()
            && self
                .parent
                .as_ref()
                .is_some_and(|(v, p, _)| v == volume && p == pdir);
        if !same {
            self.parent = None;
            let rel = if !nested {
                check_volume(volume)?;
                volume.to_owned()
            } else {
                path::join(volume, pdir)?
            };
            match rustix::fs::openat(
                self.root,
                rel.as_str(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => self.parent = Some((volume.to_owned(), pdir.to_owned(), fd)),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                    // Still an error if the path is not valid.
                    check_leaf(volume, dir, name)?;
                    return Ok(None);
                }
                Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
            }
        }
        check_leaf(volume, dir, name)?;
        self.sub.clear();
        self.sub.push_str(name);
        if !leaf.is_empty() {
            self.sub.push('/');
            self.sub.push_str(leaf);
        }
        Ok(self
            .parent
            .as_ref()
            .map(|(_, _, fd)| (fd, self.sub.as_str())))
    }

    fn rel(volume: &str, dir: &str) -> Result<String> {
        if dir.is_empty() {
            check_volume(volume)?;
            Ok(volume.to_owned())
        } else {
            path::join(volume, dir)
        }
    }

    fn read_dir_now(&mut self, volume: &str, dir: &str) -> Result<Arc<Cands>> {
        self.cancelled()?;
        let rel = Self::rel(volume, dir)?;
        // Read before the directory: a change from now on invalidates
        // what is read.
        let generation = self.ns.generation();
        let fd = match rustix::fs::openat(
            self.root,
            rel.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                return Err(if dir.is_empty() {
                    DriveError::VolumeNotFound
                } else {
                    DriveError::FileNotFound
                });
            }
            Err(e) => return Err(map_io("readdir", Ctx::Read, e.into())),
        };
        let stamp =
            Stamp::of(&rustix::fs::fstat(&fd).map_err(|e| map_io("fstat", Ctx::Read, e.into()))?);
        if let Some(dirs) = &mut self.dirs {
            if dirs.len() < AHEAD_MAX_DIRS {
                dirs.push((rel.clone(), stamp));
            } else {
                self.dirs = None;
            }
        }
        if let Some(cands) = self.ns.get(&rel, generation, &stamp) {
            return Ok(cands);
        }
        let entries = self.read_entries(fd, &rel)?;
        let cands = Arc::new(Cands::build(entries));
        self.ns.put(&rel, generation, stamp, Arc::clone(&cands));
        Ok(cands)
    }

    fn read_entries(&mut self, fd: OwnedFd, rel: &str) -> Result<Vec<DirEntry>> {
        let mut d = rustix::fs::Dir::new(fd).map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
        let mut out: Vec<DirEntry> = Vec::new();
        let mut skipped = 0usize;
        while let Some(entry) = d.read() {
            let entry = entry.map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
            let raw = entry.file_name();
            let bytes = raw.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(bytes) else {
                skipped += 1;
                continue;
            };
            let is_dir = match entry.file_type() {
                rustix::fs::FileType::Directory => true,
                rustix::fs::FileType::Symlink | rustix::fs::FileType::Unknown => {
                    let fd = d.fd().map_err(|e| map_io("readdir", Ctx::Read, e.into()))?;
                    rustix::fs::statx(fd, raw, AtFlags::empty(), StatxFlags::TYPE)
                        .is_ok_and(|st| u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR)
                }
                _ => false,
            };
            out.push((name.to_owned(), is_dir));
            // Keep memory bounded: the smallest `max_entries` names, as
            // `list_dir` keeps them.
            if out.len() >= self.max_entries.saturating_mul(2) {
                out.sort_unstable();
                out.truncate(self.max_entries);
            }
        }
        if out.len() > self.max_entries {
            out.sort_unstable();
            out.truncate(self.max_entries);
        }
        if skipped > 0 {
            tracing::warn!(root = %self.label.display(), dir = %rel, skipped, "skipped non-UTF-8 names");
        }
        Ok(out)
    }

    fn read_meta_now(
        &mut self,
        volume: &str,
        dir: &str,
        head: usize,
    ) -> Result<Option<(Vec<u8>, bool)>> {
        self.cancelled()?;
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.push_str(volume);
        key.push('/');
        key.push_str(dir);
        let r = self.read_meta_keyed(&key, volume, dir, head.clamp(1, MAX_HEAD));
        self.key = key;
        r
    }

    /// [`read_meta_now`](Self::read_meta_now) with the cache key made.
    fn read_meta_keyed(
        &mut self,
        key: &str,
        volume: &str,
        dir: &str,
        head: usize,
    ) -> Result<Option<(Vec<u8>, bool)>> {
        let ns = self.ns;
        // Before the stamp is taken: a change from then on makes what is
        // read stale.
        let generation = ns.generation();
        let Some((parent, name)) = self.at_parent(volume, dir, "")? else {
            ns.meta_forget(key);
            return Ok(None);
        };
        let st = match rustix::fs::statx(parent, name, AtFlags::empty(), STATX_STAMP) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                ns.meta_forget(key);
                return Ok(None);
            }
            Err(e) => return Err(map_io("statx", Ctx::Read, e.into())),
        };
        if u32::from(st.stx_mode) & libc::S_IFMT != libc::S_IFDIR {
            ns.meta_forget(key);
            return Ok(None);
        }
        self.last_dir.0.clear();
        self.last_dir.0.push_str(key);
        self.last_dir.1 = subdirs_possible(&st);
        let stamp = Stamp::of_statx(&st);
        if let Some(stamp) = &stamp
            && let Some(hit) = ns.meta_get(key, generation, stamp, head)
        {
            return Ok(Some(hit));
        }
        // Before the read (only a miss needs it): whether the directory
        // had settled is judged against a time before the head is read.
        let now = SystemTime::now();
        let Some((parent, sub)) = self.at_parent(volume, dir, META_FILE)? else {
            return Ok(None);
        };
        let fd = match rustix::fs::openat(
            parent,
            sub,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                ns.meta_forget(key);
                return Ok(None);
            }
            Err(e) => return Err(map_io("openat", Ctx::Read, e.into())),
        };
        if self.buf.len() < head {
            self.buf.resize(head, 0);
        }
        let mut filled = 0usize;
        let mut retries = 0usize;
        while filled < head {
            match rustix::io::read(&fd, &mut self.buf[filled..head]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    // Linux returns fewer bytes of a regular file than
                    // asked only at its end: no read to see 0 bytes.
                    if filled < head {
                        break;
                    }
                }
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) if retries < 16 => {
                    retries += 1;
                }
                Err(e) => return Err(map_io("read", Ctx::Read, e.into())),
            }
        }
        // A full head may be all of the file or only its start.
        let complete = filled < head
            || rustix::fs::fstat(&fd)
                .map_err(|e| map_io("fstat", Ctx::Read, e.into()))?
                .st_size as u64
                <= head as u64;
        drop(fd);
        let bytes = self.buf[..filled].to_vec();
        if let Some(stamp) = stamp {
            ns.meta_put(
                key,
                MetaEntry {
                    generation,
                    stamp,
                    settled: stamp.settled(now),
                    read_at: Instant::now(),
                    head,
                    complete,
                    bytes: bytes.as_slice().into(),
                },
            );
        }
        Ok(Some((bytes, complete)))
    }

    fn may_have_subdirs_now(&mut self, volume: &str, dir: &str) -> Result<bool> {
        // The `statx` of the metadata read just before, most of the time.
        let last = &self.last_dir.0;
        if last.len() == volume.len() + 1 + dir.len()
            && last.starts_with(volume)
            && last.ends_with(dir)
            && last.as_bytes()[volume.len()] == b'/'
        {
            self.last_dir.0.clear();
            return Ok(self.last_dir.1);
        }
        let Some((parent, sub)) = self.at_parent(volume, dir, "")? else {
            return Ok(false);
        };
        match rustix::fs::statx(
            parent,
            sub,
            AtFlags::empty(),
            StatxFlags::TYPE | StatxFlags::NLINK,
        ) {
            Ok(st) => {
                Ok(u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR && subdirs_possible(&st))
            }
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(false),
            Err(e) => Err(map_io("statx", Ctx::Read, e.into())),
        }
    }
}

/// Whether a directory may hold subdirectories: its link count is 2 + its
/// subdirectories on the file systems that count them (ext4, XFS, tmpfs);
/// those that do not (btrfs, overlayfs) report 1.
fn subdirs_possible(st: &rustix::fs::Statx) -> bool {
    st.stx_mask & StatxFlags::NLINK.bits() == 0 || st.stx_nlink != 2
}

impl WalkFs for SyncFs<'_> {
    fn read_dir(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<Arc<Cands>>> + Send {
        std::future::ready(self.read_dir_now(volume, dir))
    }

    fn read_meta(
        &mut self,
        volume: &str,
        dir: &str,
        head: usize,
        _limit: u64,
    ) -> impl Future<Output = Result<Option<(Vec<u8>, bool)>>> + Send {
        std::future::ready(self.read_meta_now(volume, dir, head))
    }

    fn may_have_subdirs(
        &mut self,
        volume: &str,
        dir: &str,
    ) -> impl Future<Output = Result<bool>> + Send {
        std::future::ready(self.may_have_subdirs_now(volume, dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::Drive;
    use crate::walk::DriveFs;

    const VOL: &str = "vol";

    /// `n` objects `d/k00000`.. with metadata naming them, a few with keys
    /// under them and one a directory object, written behind the drive.
    fn build(root: &Path, n: usize) {
        let vol = root.join(VOL);
        for i in 0..n {
            let dir = vol.join(format!("d/k{i:05}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(META_FILE), format!("meta {i}")).unwrap();
            if i % 50 == 7 {
                let sub = dir.join("sub");
                std::fs::create_dir_all(&sub).unwrap();
                std::fs::write(sub.join(META_FILE), format!("sub {i}")).unwrap();
            }
        }
        std::fs::create_dir_all(vol.join("d/k00042x__XLDIR__")).unwrap();
        std::fs::write(vol.join("d/k00042x__XLDIR__").join(META_FILE), b"dir").unwrap();
    }

    fn opts(
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> WalkOptions {
        WalkOptions {
            volume: VOL.into(),
            prefix: prefix.into(),
            delimiter: delimiter.map(String::from),
            after: after.map(String::from),
            limit,
            meta_head: 4096,
            meta_limit: 1 << 20,
        }
    }

    async fn drive(root: &Path) -> crate::LocalDrive {
        crate::LocalDrive::open(root.to_path_buf(), Default::default())
            .await
            .unwrap()
    }

    /// The page the default walk (no cache, nothing ahead) gives.
    async fn plain(d: &crate::LocalDrive, o: &WalkOptions) -> WalkPage {
        crate::walk::walk(&mut DriveFs(d), o).await.unwrap()
    }

    fn served(d: &crate::LocalDrive) -> u64 {
        d.inner.io.blocking.ns.ahead_served.load(Ordering::Relaxed)
    }

    /// Listings continued from the last entry, from an earlier one (the
    /// caller used fewer entries than it asked for) and with another page
    /// size, with and without a delimiter: every page is the default
    /// walk's, and the pages after the second come from the walk ahead.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_walked_ahead_are_the_pages_walked_now() {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), 1200);
        let d = drive(tmp.path()).await;
        for (prefix, delimiter) in [
            ("d/", None),
            ("d/", Some("/")),
            ("", None),
            ("d/k00", Some("/")),
        ] {
            let before = served(&d);
            let mut after: Option<String> = None;
            let mut pages = 0;
            let mut all = Vec::new();
            loop {
                // Page sizes 100 to 250; every third continuation backs off
                // by up to 3 entries (inside the kept tail).
                let limit = 100 + 50 * (pages % 4);
                let o = opts(prefix, delimiter, after.as_deref(), limit);
                let got = d.walk(&o).await.unwrap();
                let want = plain(&d, &o).await;
                assert_eq!(
                    got.entries, want.entries,
                    "{prefix:?} {delimiter:?} page {pages}"
                );
                let mut record = |names: &[WalkEntry]| {
                    for e in names {
                        if all.last().is_none_or(|l: &String| l.as_str() < e.name()) {
                            all.push(e.name().to_owned());
                        }
                    }
                };
                if got.entries.is_empty() || !got.more {
                    assert!(!want.more, "{prefix:?} {delimiter:?} page {pages}");
                    record(&got.entries);
                    break;
                }
                let back = if pages % 3 == 2 { pages % 4 } else { 0 };
                let i = got.entries.len() - 1 - back.min(got.entries.len() - 1);
                record(&got.entries[..=i]);
                let name = got.entries[i].name();
                // Every fifth page continues from the name without its last
                // character (as ListObjectVersions resumes at a key).
                after = Some(match pages % 5 {
                    4 => name[..name.len() - 1].to_owned(),
                    _ => name.to_owned(),
                });
                pages += 1;
            }
            let whole = plain(&d, &opts(prefix, delimiter, None, 1_000_000)).await;
            let want: Vec<String> = whole.entries.iter().map(|e| e.name().to_owned()).collect();
            assert_eq!(all, want, "{prefix:?} {delimiter:?}");
            assert!(pages >= 4, "{prefix:?} {delimiter:?}: {pages} pages");
            // The first page starts nothing; every later one is served
            // (in part, when it is larger) from the walk ahead.
            assert!(
                served(&d) - before >= pages as u64 - 1,
                "{prefix:?} {delimiter:?}: {} of {pages} pages served ahead",
                served(&d) - before
            );
        }
    }

    /// A client that continues from elsewhere than the end of its pages
    /// (here: the first entry of each) never takes a walk ahead: after a
    /// few are dropped unused, most are not started; once pages continue
    /// from their end again, walks ahead serve them again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unused_walks_ahead_stop() {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), 600);
        let d = drive(tmp.path()).await;
        let ns = Arc::clone(&d.inner.io.blocking.ns);
        let mut after = Some("d/k00000".to_owned());
        for page in 0..40 {
            let o = opts("d/", None, after.as_deref(), 100);
            let got = d.walk(&o).await.unwrap();
            assert_eq!(got.entries, plain(&d, &o).await.entries, "page {page}");
            // One step forward only.
            after = Some(got.entries[1].name().to_owned());
        }
        assert_eq!(ns.ahead_served.load(Ordering::Relaxed), 0);
        let skipped = ns.ahead_skipped.load(Ordering::Relaxed);
        assert!(skipped >= 20, "{skipped} walks ahead skipped of 40");
        let mut after = Some("d/k00000".to_owned());
        for page in 0..20 {
            let o = opts("d/", None, after.as_deref(), 10);
            let got = d.walk(&o).await.unwrap();
            assert_eq!(got.entries, plain(&d, &o).await.entries, "page {page}");
            after = got.entries.last().map(|e| e.name().to_owned());
        }
        assert!(ns.ahead_served.load(Ordering::Relaxed) >= 5);
        assert_eq!(ns.ahead_unused.load(Ordering::Relaxed), 0);
    }

    /// Between pages, keys in the next page are added and removed through
    /// the drive and behind its back, and a key's metadata is replaced
    /// through the drive: the page walked ahead is not used, and every page
    /// is the default walk's of the moment.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_walked_ahead_follow_changes() {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), 1500);
        let vol = tmp.path().join(VOL);
        let d = drive(tmp.path()).await;
        let mut after: Option<String> = None;
        let mut page = 0usize;
        let mut unchanged_pages = 0u64;
        let served_before = served(&d);
        loop {
            let o = opts("d/", None, after.as_deref(), 100);
            let got = d.walk(&o).await.unwrap();
            let want = plain(&d, &o).await;
            assert_eq!(got.entries, want.entries, "page {page}");
            let Some(last) = got.entries.last() else {
                break;
            };
            if !got.more {
                break;
            }
            after = Some(last.name().to_owned());
            page += 1;
            // A key inside the next page (whose walk ahead has started).
            let next = format!("d/k{:05}", 100 * page + 30);
            // Let the walk ahead read the drive as it was.
            tokio::time::sleep(Duration::from_millis(50)).await;
            match page % 5 {
                1 => {
                    d.write_all(VOL, &format!("{next}/{META_FILE}"), b"replaced".to_vec())
                        .await
                        .unwrap();
                }
                2 => d.delete(VOL, &next, true).await.unwrap(),
                3 => {
                    let k = vol.join(format!("{next}a"));
                    std::fs::create_dir_all(&k).unwrap();
                    std::fs::write(k.join(META_FILE), b"behind").unwrap();
                }
                4 => std::fs::remove_dir_all(vol.join(&next)).unwrap(),
                _ => unchanged_pages += 1,
            }
        }
        assert!(page >= 14, "{page} pages");
        // Only the pages after an unchanged gap can come from ahead.
        let n = served(&d) - served_before;
        assert!(
            n >= 1 && n <= unchanged_pages,
            "{n} served, {unchanged_pages} unchanged"
        );
    }

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

    fn hits(d: &crate::LocalDrive) -> u64 {
        d.inner.io.blocking.ns.meta_hits.load(Ordering::Relaxed)
    }

    fn objects(p: &WalkPage) -> u64 {
        p.entries
            .iter()
            .filter(|e| matches!(e, WalkEntry::Object { .. }))
            .count() as u64
    }

    fn meta_of<'p>(p: &'p WalkPage, key: &str) -> Option<&'p [u8]> {
        p.entries.iter().find_map(|e| match e {
            WalkEntry::Object { key: k, meta, .. } if k == key => Some(meta.as_slice()),
            _ => None,
        })
    }

    /// Makes every kept head of `d` older than META_MAX_AGE.
    fn age_heads(d: &crate::LocalDrive) {
        let mut metas = d.inner.io.blocking.ns.metas.lock().unwrap();
        let old = Instant::now().checked_sub(META_MAX_AGE).unwrap();
        for e in metas.map.values_mut() {
            e.read_at = old;
        }
    }

    /// A second walk takes every head from the cache. A head replaced or
    /// removed by another process (the generation does not move) is read
    /// again at once, one rewritten in place once it is META_MAX_AGE old,
    /// and a change through the drive makes the heads read just before it
    /// be read again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn metadata_heads_are_read_again_only_when_changed() {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), 300);
        let vol = tmp.path().join(VOL);
        let d = drive(tmp.path()).await;
        let o = opts("d/", None, None, 1000);
        let first = d.walk(&o).await.unwrap();
        assert_eq!(first.entries, plain(&d, &o).await.entries);
        let n = objects(&first);
        assert!(n > 300, "{n} objects");
        let h = hits(&d);
        let again = d.walk(&o).await.unwrap();
        assert_eq!(again.entries, first.entries);
        assert_eq!(hits(&d) - h, n, "every head from the cache");

        // Far enough from the reads for any timestamp granularity but a
        // whole second's.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let g = d.inner.io.blocking.ns.generation();
        let staged = vol.join("staged");
        std::fs::write(&staged, b"renamed over").unwrap();
        std::fs::rename(&staged, vol.join("d/k00030").join(META_FILE)).unwrap();
        std::fs::remove_file(vol.join("d/k00040").join(META_FILE)).unwrap();
        std::fs::write(vol.join("d/k00020").join(META_FILE), b"atem 20").unwrap();
        let h = hits(&d);
        let after = d.walk(&o).await.unwrap();
        assert_eq!(d.inner.io.blocking.ns.generation(), g);
        assert_eq!(meta_of(&after, "d/k00030"), Some(&b"renamed over"[..]));
        assert_eq!(meta_of(&after, "d/k00040"), None);
        assert_eq!(meta_of(&after, "d/k00041"), Some(&b"meta 41"[..]));
        // In place, same size: its directory did not change.
        assert_eq!(meta_of(&after, "d/k00020"), Some(&b"meta 20"[..]));
        assert_eq!(hits(&d) - h, n - 2, "all but the replaced and removed");
        age_heads(&d);
        let h = hits(&d);
        let after = d.walk(&o).await.unwrap();
        assert_eq!(after.entries, plain(&d, &o).await.entries);
        assert_eq!(meta_of(&after, "d/k00020"), Some(&b"atem 20"[..]));
        assert_eq!(hits(&d) - h, 0, "every head too old");

        // A change through the drive moves the generation: the heads read
        // less than SETTLED ago are all read again, and kept anew.
        d.write_all(VOL, &format!("d/k00010/{META_FILE}"), b"via drive".to_vec())
            .await
            .unwrap();
        let h = hits(&d);
        let after = d.walk(&o).await.unwrap();
        assert_eq!(after.entries, plain(&d, &o).await.entries);
        assert_eq!(meta_of(&after, "d/k00010"), Some(&b"via drive"[..]));
        assert_eq!(hits(&d) - h, 0);
        let h = hits(&d);
        d.walk(&o).await.unwrap();
        assert_eq!(hits(&d) - h, n - 1);
    }

    /// Heads in directories that had not changed for SETTLED before they
    /// were read stay good across changes elsewhere on the drive; one in a
    /// directory changed just now does not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn settled_heads_outlive_changes_elsewhere() {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), 40);
        let vol = tmp.path().join(VOL);
        tokio::time::sleep(SETTLED + Duration::from_millis(200)).await;
        let d = drive(tmp.path()).await;
        let o = opts("d/", None, None, 1000);
        let first = d.walk(&o).await.unwrap();
        let n = objects(&first);
        // One head replaced just now, by another process.
        let staged = vol.join("staged");
        std::fs::write(&staged, b"fresh").unwrap();
        std::fs::rename(&staged, vol.join("d/k00005").join(META_FILE)).unwrap();
        let h = hits(&d);
        let second = d.walk(&o).await.unwrap();
        assert_eq!(hits(&d) - h, n - 1);
        assert_eq!(meta_of(&second, "d/k00005"), Some(&b"fresh"[..]));
        // A change elsewhere on the drive.
        d.write_all(VOL, &format!("e/k/{META_FILE}"), b"elsewhere".to_vec())
            .await
            .unwrap();
        let h = hits(&d);
        let third = d.walk(&o).await.unwrap();
        assert_eq!(third.entries, second.entries);
        assert_eq!(third.entries, plain(&d, &o).await.entries);
        assert_eq!(hits(&d) - h, n - 1, "all but the fresh head");
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
