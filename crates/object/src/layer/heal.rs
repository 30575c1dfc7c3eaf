//! Healing at the layer: the queue of versions that reads found damaged,
//! [`ObjectLayer::heal_object`], and the background scanner that checks
//! every version at a bounded rate and drains the queue. The rate is the
//! layer's [`ScanRate`](super::ScanRate), which the scanner, the heal
//! journal's healer and heal sequences read before every version, so a
//! speed set while they run applies to their next version.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

/// An object version that a read found damaged: some drives of its set
/// had no metadata, or missing, unreadable or corrupt shards. The healer
/// (the scanner, or any consumer of [`ObjectLayer::next_heal_request`])
/// should run [`ObjectLayer::heal_object`] on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealRequest {
    /// Bucket.
    pub bucket: String,
    /// Key.
    pub key: String,
    /// The version read (`Null` for the null version).
    pub version: Option<VersionSel>,
    /// Set positions of the drives found bad.
    pub bad_drives: Vec<usize>,
}

/// Length of the heal queue.
pub(super) const HEAL_QUEUE: usize = 10_000;

/// Versions a scanner pass checks (and heals) at once. A heal waits on
/// drives (a replaced node's are round trips away) as much as it computes,
/// so a few at a time keep both cores and the network busy.
pub const SCAN_WORKERS: usize = 8;

/// Options of the background scanner.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Most object versions checked per second (`None`: as fast as the
    /// drives allow) when no speed is set ([`ObjectLayer::set_scan_speed`]),
    /// and the rate the speeds are relative to. Bounds the scanner's share
    /// of the drives.
    pub versions_per_sec: Option<u32>,
    /// Pause between two full passes.
    pub interval: Duration,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            versions_per_sec: Some(100),
            interval: Duration::from_secs(3600),
        }
    }
}

/// What the scanner has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanProgress {
    /// Full passes completed.
    pub cycles: u64,
    /// Object versions checked (in all passes, and from the heal queue).
    pub checked: u64,
    /// Object versions that needed and got healing.
    pub healed: u64,
    /// Versions whose check or heal failed.
    pub errors: u64,
    /// The bucket/key of the current pass's position.
    pub position: Option<String>,
}

/// A running background scanner; stopped when dropped.
#[derive(Debug)]
pub struct ScannerHandle {
    progress: Arc<Mutex<ScanProgress>>,
    task: tokio::task::JoinHandle<()>,
    /// The healer of the heal journal.
    journal_task: tokio::task::JoinHandle<()>,
}

impl ScannerHandle {
    /// A snapshot of the scanner's progress.
    pub fn progress(&self) -> ScanProgress {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for ScannerHandle {
    fn drop(&mut self) {
        self.task.abort();
        self.journal_task.abort();
    }
}

/// Paces work to at most the layer's current rate, read at every item: a
/// late item may be followed by others sooner, to keep the average, but
/// never by more than [`Pacer::CATCH_UP`] of work at once.
pub(crate) struct Pacer {
    rate: Arc<super::ScanRate>,
    /// When the last item was due.
    due: Option<tokio::time::Instant>,
}

impl Pacer {
    /// Work that items behind their time may catch up in a burst.
    const CATCH_UP: Duration = Duration::from_secs(1);

    pub(crate) fn new(rate: Arc<super::ScanRate>) -> Self {
        Pacer { rate, due: None }
    }

    /// Counts an item done and waits until the next may start.
    pub(crate) async fn tick(&mut self) {
        let Some(r) = self.rate.current() else {
            self.due = None;
            return;
        };
        let now = tokio::time::Instant::now();
        let step = Duration::from_secs_f64(1.0 / f64::from(r.max(1)));
        let floor = now.checked_sub(Self::CATCH_UP).unwrap_or(now);
        let due = self.due.map_or(now, |d| d.max(floor)) + step;
        self.due = Some(due);
        tokio::time::sleep_until(due).await;
    }
}

impl ObjectLayer {
    /// Queues a heal of `info`'s version on `bad_drives`, if there are any.
    /// Best effort: a full queue is caught up by the next full pass.
    pub(super) fn queue_heal(&self, info: &ObjectInfo, bad_drives: Vec<usize>) {
        if !bad_drives.is_empty() {
            let _ = self.heal_tx.try_send(HealRequest {
                bucket: info.bucket.clone(),
                key: info.key.clone(),
                version: Some(info.version_id.map_or(VersionSel::Null, VersionSel::Id)),
                bad_drives,
            });
        }
    }

    /// Objects waiting in the heal queue.
    pub fn heal_queue_len(&self) -> usize {
        HEAL_QUEUE - self.heal_tx.capacity()
    }

    /// The next object version queued for healing by a read that met
    /// damage, waiting for one. The queue is shared: the scanner started
    /// by [`spawn_scanner`](Self::spawn_scanner) takes from it too.
    pub async fn next_heal_request(&self) -> HealRequest {
        let mut rx = self.heal_rx.lock().await;
        match rx.recv().await {
            Some(r) => r,
            // The layer holds a sender, so the queue never closes.
            None => std::future::pending().await,
        }
    }

    /// The next queued heal request, if one is waiting now.
    pub fn try_next_heal_request(&self) -> Option<HealRequest> {
        self.heal_rx.try_lock().ok()?.try_recv().ok()
    }

    /// Heals one object version: rewrites missing or corrupt shards and
    /// metadata on the drives that need it.
    pub async fn heal_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
    ) -> Result<HealResult> {
        self.heal_object_with(bucket, key, version, false).await
    }

    /// [`heal_object`](Self::heal_object), or with `dry_run` only the
    /// check: what each drive holds, nothing written.
    pub async fn heal_object_with(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        dry_run: bool,
    ) -> Result<HealResult> {
        Ok(self.heal_object_in(bucket, key, version, dry_run).await?.0)
    }

    /// [`heal_object_with`](Self::heal_object_with), and the set that
    /// holds the version.
    pub(super) async fn heal_object_in(
        &self,
        bucket: &str,
        key: &str,
        version: Option<VersionSel>,
        dry_run: bool,
    ) -> Result<(HealResult, &ErasureSet)> {
        names::check_key(key)?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.pool_for_read(bucket, key, version).await?;
        let set = self.set_in(pool, key);
        let r = set.heal(bucket, key, version, dry_run).await?;
        if !dry_run {
            self.heal_track.healed(self.set_number(set), &r);
        }
        Ok((r, set))
    }

    /// Checks (and heals where needed) every version of every object once,
    /// at the layer's scan rate, [`SCAN_WORKERS`] versions at a time,
    /// updating `progress` as it goes.
    pub(crate) async fn scan_once(
        self: &Arc<Self>,
        progress: &Arc<Mutex<ScanProgress>>,
    ) -> Result<()> {
        let began = std::time::SystemTime::now();
        let mut pacer = Pacer::new(Arc::clone(&self.scan_rate));
        let mut running = tokio::task::JoinSet::new();
        for bucket in self.list_buckets().await? {
            let mut marker: Option<String> = None;
            let mut vmarker: Option<String> = None;
            loop {
                let page = self
                    .list_object_versions(
                        &bucket.name,
                        &ListOptions {
                            marker: marker.clone(),
                            max_keys: 1000,
                            ..Default::default()
                        },
                        vmarker.as_deref(),
                    )
                    .await?;
                for v in &page.versions {
                    while running.len() >= SCAN_WORKERS {
                        running.join_next().await;
                    }
                    let (layer, progress) = (Arc::clone(self), Arc::clone(progress));
                    let (bucket, key, version) = (bucket.name.clone(), v.key.clone(), v.version_id);
                    running.spawn(async move {
                        layer.scan_version(&bucket, &key, version, &progress).await;
                    });
                    pacer.tick().await;
                }
                if !page.is_truncated {
                    break;
                }
                marker = page.next_key_marker;
                vmarker = page.next_version_marker;
            }
        }
        while running.join_next().await.is_some() {}
        self.heal_track.pass_ended(began);
        let mut p = progress.lock().unwrap_or_else(|p| p.into_inner());
        p.cycles += 1;
        p.position = None;
        Ok(())
    }

    /// Checks (and heals where needed) one version for the scanner's pass.
    async fn scan_version(
        &self,
        bucket: &str,
        key: &str,
        version: Option<uuid::Uuid>,
        progress: &Mutex<ScanProgress>,
    ) {
        let sel = version.map_or(VersionSel::Null, VersionSel::Id);
        let r = self.heal_object(bucket, key, Some(sel)).await;
        // A version the pass could not make whole (a drive or node still
        // unreachable, the lock service not ready) is retried by the
        // journal's healer, not an interval later.
        if !matches!(&r, Ok(h) if h.failed_drives.is_empty())
            && !matches!(&r, Err(e) if e.is_not_found())
        {
            self.journal.add_unrecorded(journal::Entry {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                version: version.map_or([0; 16], |u| *u.as_bytes()),
            });
        }
        self.heal_track.scanned();
        let mut p = progress.lock().unwrap_or_else(|p| p.into_inner());
        p.checked += 1;
        p.position = Some(format!("{bucket}/{key}"));
        match &r {
            Ok(h) if !h.healed_drives.is_empty() => p.healed += 1,
            Ok(_) => {}
            Err(_) => p.errors += 1,
        }
    }

    /// Starts the background scanner: a full pass every `opts.interval`,
    /// and in between the objects queued for healing by reads that met a
    /// missing or corrupt shard. `opts.versions_per_sec` becomes the
    /// layer's start rate; a speed stored on the drives applies from the
    /// first version on (read before it, and again until the drives
    /// answer).
    pub fn spawn_scanner(self: &Arc<Self>, opts: ScanOptions) -> ScannerHandle {
        self.scan_rate.set_start(opts.versions_per_sec);
        let progress = Arc::new(Mutex::new(ScanProgress::default()));
        let progress_j = progress.clone();
        let (layer, prog) = (self.clone(), progress.clone());
        let task = tokio::spawn(async move {
            loop {
                layer.ensure_scan_speed().await;
                if let Err(e) = layer.scan_once(&prog).await {
                    tracing::warn!("scanner pass: {e}");
                }
                // Quotas see what changed behind this layer's back (another
                // node, another server on the drives) at least once a pass.
                if let Err(e) = layer.recount_quota_usage().await {
                    tracing::warn!("quota usage count: {e}");
                }
                let deadline = tokio::time::Instant::now() + opts.interval;
                let mut pacer = Pacer::new(Arc::clone(&layer.scan_rate));
                loop {
                    let next = tokio::select! {
                        item = layer.next_heal_request() => Some(item),
                        _ = tokio::time::sleep_until(deadline) => None,
                    };
                    let Some(req) = next else {
                        break;
                    };
                    let r = layer.heal_object(&req.bucket, &req.key, req.version).await;
                    layer.heal_track.scanned();
                    {
                        let mut p = prog.lock().unwrap_or_else(|p| p.into_inner());
                        p.checked += 1;
                        match r {
                            Ok(h) if !h.healed_drives.is_empty() => p.healed += 1,
                            Ok(_) => {}
                            Err(_) => p.errors += 1,
                        }
                    }
                    pacer.tick().await;
                }
            }
        });
        // The journal's healer: every drive's journal read at start and
        // every SWEEP_EVERY, the known entries retried every RETRY_EVERY,
        // at the scanner's rate.
        let layer = self.clone();
        let journal_task = tokio::spawn(async move {
            let mut swept: Option<tokio::time::Instant> = None;
            loop {
                if swept.is_none_or(|t| t.elapsed() >= journal::SWEEP_EVERY) {
                    layer.sweep_journal().await;
                    swept = Some(tokio::time::Instant::now());
                }
                let mut pacer = Pacer::new(Arc::clone(&layer.scan_rate));
                let healed = layer.retry_journal(&mut pacer).await;
                if healed > 0 {
                    tracing::info!(healed, "healed writes that had missed drives");
                    let mut p = progress_j.lock().unwrap_or_else(|p| p.into_inner());
                    p.healed += healed as u64;
                }
                // A speed the scanner's task could not read at start (the
                // drives not answering yet) is read here until it is.
                layer.ensure_scan_speed().await;
                tokio::time::sleep(journal::RETRY_EVERY).await;
            }
        });
        ScannerHandle {
            progress,
            task,
            journal_task,
        }
    }
}
