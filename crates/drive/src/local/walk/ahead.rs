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

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::AtFlags;
use tokio::sync::oneshot;

use super::cache::{Namespace, Stamp};
use super::{Dirs, walk_blocking};
use crate::walk::{WalkEntry, WalkOptions, WalkPage};

impl super::super::Inner {
    /// Starts walking the page after `page` (a page of `opts`) in the
    /// background, if `page` may be followed by more and no walk ahead is
    /// running on this drive. `since` is the generation read before the
    /// first read `page` depends on.
    pub(super) fn walk_ahead(&self, opts: &WalkOptions, page: &WalkPage, since: u64, dirs: Dirs) {
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
    pub(super) async fn serve_ahead(
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
pub(super) const AHEAD_MAX_DIRS: usize = 64;

/// The next page of one listing, walked (or being walked) ahead of its
/// request, and the last entries of the page before it. It serves a walk of
/// the same volume, prefix, delimiter and metadata head whose `after` is
/// one of the kept entries (or between them), if the drive's generation is
/// still `since` and every directory in `dirs` still has its stamp.
pub(super) struct Ahead {
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

impl Namespace {
    /// Keeps a walk ahead, dropping those too old and the oldest beyond
    /// the budget.
    pub(super) fn put_ahead(&self, a: Ahead) {
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
    pub(super) fn take_ahead(&self, o: &WalkOptions, after: &str) -> Option<Ahead> {
        let mut slots = self.ahead.lock().unwrap_or_else(|p| p.into_inner());
        self.drop_expired(&mut slots);
        let i = slots.iter().position(|s| s.serves(o, after))?;
        Some(slots.remove(i))
    }
}
