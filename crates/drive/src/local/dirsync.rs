//! Group commit of directory syncs.
//!
//! Concurrent PUTs of new keys each make a directory in the same bucket
//! directory and must each see that directory synced before they answer.
//! One `fsync` that starts after every one of their `mkdir`s covers them
//! all: callers take a ticket once their change is done, syncs of one
//! directory run one at a time, and a caller whose ticket a finished sync
//! covered returns without a sync of its own. A sync covers exactly the
//! tickets taken before it started; a failed one covers nobody (each
//! caller then syncs, and reports, for itself). Such a retry can succeed
//! although the failed write-back lost the caller's entry (the error was
//! reported once, to the failed sync): the drive counts every failed
//! directory sync, and a change during which the count moved fails
//! (`Inner::dir_change`), whatever its own sync said.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct DirSync {
    /// Tickets handed out.
    requested: AtomicU64,
    /// The highest ticket a successful sync covered; held while syncing.
    synced: tokio::sync::Mutex<u64>,
}

/// Per-drive group commit of directory syncs, keyed by drive-relative path.
#[derive(Default)]
pub(crate) struct DirSyncs {
    dirs: Mutex<HashMap<String, Arc<DirSync>>>,
}

impl DirSyncs {
    /// Makes the changes already made in directory `rel` durable, with
    /// `sync` (one `fsync` of it) or by a concurrent caller's sync that
    /// started after them.
    pub(crate) async fn sync<F, Fut>(&self, rel: &str, sync: F) -> io::Result<()>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = io::Result<()>>,
    {
        let dir = {
            let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(dirs.entry(rel.to_owned()).or_default())
        };
        let ticket = dir.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let result = async {
            let mut synced = dir.synced.lock().await;
            if *synced >= ticket {
                return Ok(());
            }
            // Every ticket taken so far belongs to a change made before
            // this sync starts.
            let upto = dir.requested.load(Ordering::SeqCst);
            sync().await?;
            *synced = upto;
            Ok(())
        }
        .await;
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        // The map's reference and ours: nobody else waits on this directory.
        if Arc::strong_count(&dir) == 2 {
            dirs.remove(rel);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_caller_is_covered_by_a_sync_that_started_after_it() {
        let syncs = Arc::new(DirSyncs::default());
        // Per directory: syncs started, syncs finished.
        let counts: Arc<[(AtomicU64, AtomicU64); 2]> = Arc::default();
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            let (syncs, counts) = (Arc::clone(&syncs), Arc::clone(&counts));
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_micros(i * 37 % 3000)).await;
                let d = usize::from(i % 5 == 0);
                // The caller's change is done here: syncs of its directory
                // started so far may not cover it.
                let before = counts[d].0.load(Ordering::SeqCst);
                let c = Arc::clone(&counts);
                syncs
                    .sync(["b", "b/other"][d], || async move {
                        c[d].0.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        c[d].1.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .await
                    .unwrap();
                // Syncs of one directory run one at a time, in order: one
                // that started after `before` has finished.
                assert!(counts[d].1.load(Ordering::SeqCst) > before);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let total = counts[0].0.load(Ordering::SeqCst) + counts[1].0.load(Ordering::SeqCst);
        assert!(
            total < 200,
            "{total} syncs for 200 callers: nothing grouped"
        );
        assert!(syncs.dirs.lock().unwrap().is_empty(), "entries left behind");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_sync_covers_nobody() {
        let syncs = Arc::new(DirSyncs::default());
        let calls = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (syncs, calls) = (Arc::clone(&syncs), Arc::clone(&calls));
            tasks.push(tokio::spawn(async move {
                syncs
                    .sync("b", || async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        Err(io::Error::from_raw_os_error(libc::EIO))
                    })
                    .await
            }));
        }
        for task in tasks {
            let err = task.await.unwrap().unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EIO));
        }
        // Every caller ran (and saw) its own failing sync.
        assert_eq!(calls.load(Ordering::SeqCst), 20);
    }
}
