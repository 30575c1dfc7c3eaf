//! The object layer's [`Locker`] over the cluster's lock service: a lock is
//! a lease from the owner of its partition, kept by a task that refreshes
//! it while the guard lives and releases it when the guard is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use consensus::locks::Mode;
use drive::BoxFuture;
use object::layer::{LockGuard, Locker};
use tokio::sync::oneshot;

use super::locks::{Locks, Taken};

/// How long a lease is asked for; the owner grants at most what its own
/// confirmed ownership allows (about 5 s) and the keeper refreshes it.
const LEASE_MS: u64 = 30_000;
/// The keeper refreshes when a third of what is left has passed, and no
/// more often than this.
const MIN_REFRESH: Duration = Duration::from_millis(50);

/// Locks through the cluster's lock service.
pub struct ClusterLocker {
    locks: Arc<Locks>,
    /// Names this node's holders (`<node>/<n>`): unique across the cluster.
    node: String,
    next: AtomicU64,
}

impl std::fmt::Debug for ClusterLocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLocker")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl ClusterLocker {
    pub fn new(locks: Arc<Locks>, node: String) -> ClusterLocker {
        ClusterLocker {
            locks,
            node,
            next: AtomicU64::new(0),
        }
    }

    async fn take(
        &self,
        resource: &str,
        mode: Mode,
        timeout: Duration,
    ) -> object::layer::Result<LockGuard> {
        let holder = format!(
            "{}/{}",
            self.node,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let taken = self
            .locks
            .acquire(resource, mode, &holder, LEASE_MS, timeout)
            .await
            .map_err(|e| {
                tracing::debug!("{e}");
                object::layer::Error::LockTimeout(resource.to_owned())
            })?;
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(keep(
            Arc::clone(&self.locks),
            taken,
            resource.to_owned(),
            holder,
            stopped,
        ));
        Ok(LockGuard::holding(Release(Some(stop))))
    }
}

/// Dropped with the guard: tells the keeper to release the lease.
struct Release(Option<oneshot::Sender<()>>);

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            // The keeper ends either way; a keeper that already ended
            // (the lease was lost) has nothing to release.
            let _ = stop.send(());
        }
    }
}

/// Refreshes the lease until the guard is dropped, then releases it. A
/// refresh that fails means the lease is lost (its owner was cut off, or
/// its partition moved): logged, and the lease's fence stops the holder's
/// writes where storage checks fences.
async fn keep(
    locks: Arc<Locks>,
    taken: Taken,
    resource: String,
    holder: String,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut left = Duration::from_millis(taken.lease.ttl_ms);
    loop {
        let wait = (left / 3).max(MIN_REFRESH);
        tokio::select! {
            _ = &mut stopped => break,
            _ = tokio::time::sleep(wait) => {}
        }
        match locks
            .on_owner(taken.owner, "refresh", &resource, &holder, LEASE_MS)
            .await
        {
            Ok(b) => {
                let ms = String::from_utf8_lossy(&b).parse().unwrap_or(0);
                left = Duration::from_millis(ms);
            }
            Err((_, why)) => {
                tracing::warn!(%resource, %holder, "a held lock's lease was lost: {why}");
                return;
            }
        }
    }
    if let Err((_, why)) = locks
        .on_owner(taken.owner, "release", &resource, &holder, 0)
        .await
    {
        tracing::debug!(%resource, %holder, "releasing a lock: {why}");
    }
}

impl Locker for ClusterLocker {
    fn read<'a>(
        &'a self,
        resource: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, object::layer::Result<LockGuard>> {
        Box::pin(self.take(resource, Mode::Shared, timeout))
    }

    fn write<'a>(
        &'a self,
        resource: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, object::layer::Result<LockGuard>> {
        Box::pin(self.take(resource, Mode::Exclusive, timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use consensus::locks::{LockConfig, PARTITIONS};
    use std::time::Instant;

    /// One node owning every partition, its ownership confirmed every
    /// 20 ms as the raft member's reads confirm it; owner leases of
    /// 300 ms, so a lock held for a second needs refreshing.
    async fn single_node() -> Arc<Locks> {
        let cfg = LockConfig {
            owner_lease_ms: 300,
            max_drift_ppm: 1_000,
            margin_ms: 10,
        };
        let locks = Arc::new(Locks::new(1, cfg, vec![None]));
        locks.assign(1, &[1; PARTITIONS]);
        let l = Arc::clone(&locks);
        tokio::spawn(async move {
            loop {
                l.confirm(1, l.now_ms());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        // The hand-over wait of a new owner.
        tokio::time::sleep(Duration::from_millis(cfg.handover_ms() + 20)).await;
        locks
    }

    #[tokio::test]
    async fn exclusive_shared_refreshed_and_released() {
        let locks = single_node().await;
        let locker = ClusterLocker::new(Arc::clone(&locks), "n1".into());
        let short = Duration::from_millis(100);

        let w = locker.write("b/k", short).await.expect("a free lock");
        assert!(matches!(
            locker.write("b/k", short).await,
            Err(object::layer::Error::LockTimeout(_))
        ));
        assert!(locker.read("b/k", short).await.is_err());
        // Held for over three owner leases: the keeper refreshes it, so
        // nobody else takes it meanwhile.
        let held = Instant::now();
        while held.elapsed() < Duration::from_secs(1) {
            assert!(locker.write("b/k", short).await.is_err());
        }
        drop(w);
        let w2 = locker
            .write("b/k", Duration::from_secs(2))
            .await
            .expect("released on drop");
        drop(w2);

        let r1 = locker.read("b/k", Duration::from_secs(2)).await.unwrap();
        let r2 = locker.read("b/k", short).await.expect("readers share");
        assert!(locker.write("b/k", short).await.is_err());
        drop((r1, r2));
        locker
            .write("b/k", Duration::from_secs(2))
            .await
            .expect("free again");
        // Other resources are independent.
        locker.write("b/other", short).await.unwrap();
    }
}
