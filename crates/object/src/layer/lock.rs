//! Per-object locks behind a small trait: the in-process implementation
//! here; the cluster's lock service implements it too (its guards hold a
//! lease that is refreshed while they live).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use super::error::{Error, Result};
use drive::BoxFuture;

/// Lock per resource, with its count of users.
type Table = Arc<Mutex<HashMap<String, (Arc<RwLock<()>>, usize)>>>;

/// A held lock; released on drop.
pub struct LockGuard {
    _inner: GuardInner,
}

enum GuardInner {
    Read(
        #[allow(dead_code)] OwnedRwLockReadGuard<()>,
        #[allow(dead_code)] EntryRef,
    ),
    Write(
        #[allow(dead_code)] OwnedRwLockWriteGuard<()>,
        #[allow(dead_code)] EntryRef,
    ),
    Held(#[allow(dead_code)] Box<dyn Send + Sync>),
}

impl LockGuard {
    /// The guard of another [`Locker`]: `held` keeps the lock, and lets it
    /// go when dropped.
    pub fn holding(held: impl Send + Sync + 'static) -> LockGuard {
        LockGuard {
            _inner: GuardInner::Held(Box::new(held)),
        }
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LockGuard")
    }
}

/// Shared (readers) and exclusive (writers) locks on named resources
/// (`bucket/key`), each bounded by a timeout.
pub trait Locker: Send + Sync + std::fmt::Debug {
    /// A shared lock on `resource`.
    fn read<'a>(&'a self, resource: &'a str, timeout: Duration)
    -> BoxFuture<'a, Result<LockGuard>>;
    /// An exclusive lock on `resource`.
    fn write<'a>(
        &'a self,
        resource: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<LockGuard>>;
}

/// Locks held in this process: a table of reader-writer locks, an entry per
/// resource in use, removed when its last user leaves (so the table holds
/// only what is locked or waited on).
#[derive(Debug, Default)]
pub struct LocalLocker {
    table: Table,
}

/// Counts a user of a table entry; removes the entry with the last user.
struct EntryRef {
    table: Table,
    key: String,
}

impl Drop for EntryRef {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = t.get_mut(&self.key) {
            e.1 -= 1;
            if e.1 == 0 {
                t.remove(&self.key);
            }
        }
    }
}

impl LocalLocker {
    /// An empty lock table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Resources currently locked or waited on.
    pub fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether nothing is locked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entry(&self, resource: &str) -> (Arc<RwLock<()>>, EntryRef) {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let e = t
            .entry(resource.to_owned())
            .or_insert_with(|| (Arc::new(RwLock::new(())), 0));
        e.1 += 1;
        (
            e.0.clone(),
            EntryRef {
                table: self.table.clone(),
                key: resource.to_owned(),
            },
        )
    }
}

impl Locker for LocalLocker {
    fn read<'a>(
        &'a self,
        resource: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<LockGuard>> {
        Box::pin(async move {
            let (lock, entry) = self.entry(resource);
            match tokio::time::timeout(timeout, lock.read_owned()).await {
                Ok(g) => Ok(LockGuard {
                    _inner: GuardInner::Read(g, entry),
                }),
                Err(_) => Err(Error::LockTimeout(resource.to_owned())),
            }
        })
    }

    fn write<'a>(
        &'a self,
        resource: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<LockGuard>> {
        Box::pin(async move {
            let (lock, entry) = self.entry(resource);
            match tokio::time::timeout(timeout, lock.write_owned()).await {
                Ok(g) => Ok(LockGuard {
                    _inner: GuardInner::Write(g, entry),
                }),
                Err(_) => Err(Error::LockTimeout(resource.to_owned())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exclusive_excludes_and_times_out() {
        let l = LocalLocker::new();
        let g = l.write("b/k", Duration::from_secs(1)).await.unwrap();
        assert!(matches!(
            l.read("b/k", Duration::from_millis(20)).await,
            Err(Error::LockTimeout(_))
        ));
        // Another resource is independent.
        let _o = l.write("b/other", Duration::from_millis(20)).await.unwrap();
        drop(g);
        let r1 = l.read("b/k", Duration::from_millis(20)).await.unwrap();
        let r2 = l.read("b/k", Duration::from_millis(20)).await.unwrap();
        assert!(l.write("b/k", Duration::from_millis(20)).await.is_err());
        drop((r1, r2));
        drop(_o);
        assert!(l.is_empty(), "table keeps only what is in use");
    }
}
