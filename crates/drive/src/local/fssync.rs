//! Group commit by file system (see [`LocalDriveConfig::group_commit`]).
//!
//! A small write made durable file by file costs an `fdatasync` of the
//! file and an `fsync` of its directory, each a few synchronous metadata
//! writes and a cache flush of the device. Concurrent writers instead
//! take a ticket once their change is done, and one `syncfs(2)` that
//! starts after their changes makes all of them durable: syncs of one
//! file system run one at a time, and a caller whose ticket a finished
//! sync covered returns without a sync of its own.
//!
//! Errors. `syncfs` reports a write-back error of any file of the file
//! system once per open file description, to the first sync that looks
//! after the error. That sync need not be the one covering the writer
//! whose data was lost (the kernel may write a page back on its own,
//! fail, and have an earlier sync report it). So a failed sync fails not
//! only the tickets it covered but every writer that began before it
//! finished: [`FsSync::begin`] notes the failures seen so far, before the
//! writer changes anything, and [`FsSync::commit`] fails if that count
//! moved. Conservative (a write-back error anywhere on the file system
//! fails the writes in flight), never optimistic.
//!
//! Drives on one file system share one [`FsSync`]: a `syncfs` covers
//! all of them.
//!
//! [`LocalDriveConfig::group_commit`]: super::LocalDriveConfig::group_commit

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

type SyncFn = dyn Fn() -> io::Result<()> + Send + Sync;

/// Group-commit syncs run by this process, on every file system.
static SYNCS_TOTAL: AtomicU64 = AtomicU64::new(0);

/// The group-commit syncs (`syncfs(2)`, see
/// [`LocalDriveConfig::group_commit`]) this process has run so far, on
/// every file system.
///
/// [`LocalDriveConfig::group_commit`]: super::LocalDriveConfig::group_commit
pub fn group_commit_syncs_total() -> u64 {
    SYNCS_TOTAL.load(Ordering::Relaxed)
}

/// Group commit of one file system's changes.
pub(crate) struct FsSync {
    sync: Arc<SyncFn>,
    /// Tickets handed out.
    requested: AtomicU64,
    /// The highest ticket a finished sync covered; held while syncing, by
    /// the sync itself (not by the caller that started it, who may be
    /// cancelled): one sync at a time, and none starts before the last
    /// one's outcome is recorded.
    covered: Arc<tokio::sync::Mutex<u64>>,
    outcomes: Arc<Outcomes>,
}

/// What the syncs of an [`FsSync`] came to.
struct Outcomes {
    /// Syncs that failed, ever.
    failures: AtomicU64,
    /// The errno of the last failed sync.
    last_errno: AtomicI32,
    /// Syncs run, ever.
    syncs: AtomicU64,
}

/// A writer's start: the failures seen before it changed anything.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Begun {
    failures: u64,
}

/// The [`FsSync`] of each file system (by device number) a drive of this
/// process is on.
fn registry() -> &'static Mutex<HashMap<u64, Weak<FsSync>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Weak<FsSync>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl FsSync {
    /// The group commit of the file system `root` (a drive's root
    /// directory) is on, shared with every other drive of this process on
    /// it.
    pub(crate) fn of(root: &Arc<OwnedFd>) -> io::Result<Arc<FsSync>> {
        let dev = rustix::fs::fstat(&**root)?.st_dev;
        let mut map = registry().lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, group| group.strong_count() > 0);
        if let Some(group) = map.get(&dev).and_then(Weak::upgrade) {
            return Ok(group);
        }
        let fd = Arc::clone(root);
        let group = Arc::new(FsSync::with(move || Ok(rustix::fs::syncfs(&*fd)?)));
        map.insert(dev, Arc::downgrade(&group));
        Ok(group)
    }

    /// A group commit that makes changes durable with `sync`.
    pub(crate) fn with(sync: impl Fn() -> io::Result<()> + Send + Sync + 'static) -> FsSync {
        FsSync {
            sync: Arc::new(sync),
            requested: AtomicU64::new(0),
            covered: Arc::new(tokio::sync::Mutex::new(0)),
            outcomes: Arc::new(Outcomes {
                failures: AtomicU64::new(0),
                last_errno: AtomicI32::new(libc::EIO),
                syncs: AtomicU64::new(0),
            }),
        }
    }

    /// Called before a writer changes anything it will [`commit`](Self::commit).
    pub(crate) fn begin(&self) -> Begun {
        Begun {
            failures: self.outcomes.failures.load(Ordering::SeqCst),
        }
    }

    /// Makes the changes already made durable: a sync that started after
    /// them finished, and no sync failed since `begun`.
    pub(crate) async fn commit(&self, begun: Begun) -> io::Result<()> {
        let ticket = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let covered = Arc::clone(&self.covered).lock_owned().await;
        if *covered < ticket {
            // Every ticket taken so far belongs to a change made before
            // this sync starts.
            let upto = self.requested.load(Ordering::SeqCst);
            let (sync, outcomes) = (Arc::clone(&self.sync), Arc::clone(&self.outcomes));
            // The sync holds the lock and records its outcome itself: a
            // caller cancelled while it runs loses neither (the error it
            // reports is told only once).
            let done = tokio::task::spawn_blocking(move || {
                let mut covered = covered;
                let result = sync();
                outcomes.syncs.fetch_add(1, Ordering::Relaxed);
                SYNCS_TOTAL.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = &result {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    outcomes.last_errno.store(errno, Ordering::SeqCst);
                    outcomes.failures.fetch_add(1, Ordering::SeqCst);
                    tracing::warn!(error = %e, "syncfs failed: the writes in flight on this file system fail");
                }
                // A failure is told through the count, to everyone who
                // began before it: those it covered need no sync of their
                // own (one would find nothing left to report).
                *covered = upto;
            });
            if let Err(e) = done.await {
                // The sync panicked (the lock went with it, its outcome
                // unrecorded): nobody may take it for a success.
                self.outcomes.failures.fetch_add(1, Ordering::SeqCst);
                return Err(io::Error::other(format!("syncfs: {e}")));
            }
        }
        if self.outcomes.failures.load(Ordering::SeqCst) != begun.failures {
            return Err(io::Error::from_raw_os_error(
                self.outcomes.last_errno.load(Ordering::SeqCst),
            ));
        }
        Ok(())
    }

    /// Syncs run so far.
    pub(crate) fn syncs(&self) -> u64 {
        self.outcomes.syncs.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    /// Counts syncs started and finished.
    fn counting() -> (FsSync, Arc<[AtomicU64; 2]>) {
        let counts: Arc<[AtomicU64; 2]> = Arc::default();
        let c = Arc::clone(&counts);
        let group = FsSync::with(move || {
            c[0].fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            c[1].fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        (group, counts)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_commit_is_covered_by_a_sync_that_started_after_it() {
        let (group, counts) = counting();
        let group = Arc::new(group);
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            let (group, counts) = (Arc::clone(&group), Arc::clone(&counts));
            tasks.push(tokio::spawn(async move {
                let begun = group.begin();
                tokio::time::sleep(Duration::from_micros(i * 37 % 3000)).await;
                // The change is done here: syncs started so far may not
                // cover it.
                let before = counts[0].load(Ordering::SeqCst);
                group.commit(begun).await.unwrap();
                // Syncs run one at a time, in order: one that started
                // after `before` has finished.
                assert!(counts[1].load(Ordering::SeqCst) > before);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let syncs = counts[0].load(Ordering::SeqCst);
        assert_eq!(group.syncs(), syncs);
        assert!(
            syncs < 200,
            "{syncs} syncs for 200 commits: nothing grouped"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_sync_fails_every_writer_that_began_before_it_ended() {
        let fail = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&fail);
        let group = Arc::new(FsSync::with(move || {
            std::thread::sleep(Duration::from_millis(1));
            if f.load(Ordering::SeqCst) {
                Err(io::Error::from_raw_os_error(libc::EIO))
            } else {
                Ok(())
            }
        }));
        // A writer that began before the failure and commits after it,
        // when syncs succeed again (the error was reported to another
        // sync): it fails all the same.
        let early = group.begin();
        fail.store(true, Ordering::SeqCst);
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let group = Arc::clone(&group);
            tasks.push(tokio::spawn(async move {
                let begun = group.begin();
                group.commit(begun).await
            }));
        }
        for task in tasks {
            let err = task.await.unwrap().unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EIO));
        }
        fail.store(false, Ordering::SeqCst);
        let err = group.commit(early).await.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        // A writer that began after the failure is not blamed for it.
        let late = group.begin();
        group.commit(late).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_is_not_lost_when_its_caller_is_cancelled() {
        let calls = Arc::new(AtomicU64::new(0));
        let started = Arc::new(tokio::sync::Notify::new());
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Mutex::new(released);
        let (c, s) = (Arc::clone(&calls), Arc::clone(&started));
        // The first sync fails once the test lets it end; later ones
        // succeed.
        let group = Arc::new(FsSync::with(move || {
            let first = c.fetch_add(1, Ordering::SeqCst) == 0;
            if !first {
                return Ok(());
            }
            s.notify_one();
            let _ = released.lock().unwrap().recv();
            Err(io::Error::from_raw_os_error(libc::EIO))
        }));
        let (one, other) = (group.begin(), group.begin());
        // The caller that starts the failing sync gives up while it runs.
        tokio::select! {
            _ = group.commit(one) => panic!("the first commit ended while its sync was held"),
            _ = started.notified() => {}
        }
        // Another writer that began before the failure: its commit waits
        // for the failing sync to end, runs its own, which succeeds (the
        // error was told once, to the first), and fails all the same.
        let waiting = tokio::spawn({
            let group = Arc::clone(&group);
            async move { group.commit(other).await }
        });
        release.send(()).unwrap();
        let err = waiting.await.unwrap().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn drives_on_one_file_system_share_a_group() {
        let open = |p: &std::path::Path| -> Arc<OwnedFd> {
            Arc::new(
                rustix::fs::open(
                    p,
                    rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
                    rustix::fs::Mode::empty(),
                )
                .unwrap(),
            )
        };
        let base = std::env::temp_dir();
        let a = FsSync::of(&open(&base)).unwrap();
        let b = FsSync::of(&open(&base)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let before = b.syncs();
        let begun = a.begin();
        a.commit(begun).await.unwrap();
        assert!(b.syncs() > before);
        // /proc is another file system.
        let c = FsSync::of(&open(std::path::Path::new("/proc"))).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
    }
}
