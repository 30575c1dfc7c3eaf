//! Heals on demand of a bucket, a prefix or every bucket (what MinIO calls
//! a heal sequence, `mc admin heal ALIAS/BUCKET/PREFIX`): the bucket's
//! volume on every drive, then every version of every object in scope,
//! each through [`ObjectLayer::heal_object_with`] (the scanner's heal of
//! one version) at the layer's scan rate, [`SCAN_WORKERS`] at a time. Each
//! item healed (or only checked, in a dry run) is reported with what every
//! drive held before and holds after.
//!
//! Reports wait in a queue of [`UNCONSUMED_ITEMS`] for their reader: when
//! it is full the walk pauses, as MinIO's does, and it gives up after
//! [`UNCONSUMED_TIMEOUT`] without a reader. A sequence stops between two
//! versions when told to or dropped; a version being healed finishes.

use std::time::Duration;

use drive::DriveError;
use tokio::sync::{mpsc, watch};

use super::heal::{Pacer, SCAN_WORKERS};
use super::*;

/// Reports held for the reader at most; the walk waits beyond.
pub const UNCONSUMED_ITEMS: usize = 1000;

/// How long a report may wait for room before the sequence gives up
/// (MinIO's figure).
pub const UNCONSUMED_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// What a heal sequence covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealScope {
    /// The bucket; `None`: every bucket.
    pub bucket: Option<String>,
    /// Only keys starting with this.
    pub prefix: String,
    /// Every key under the prefix; otherwise only those with no `/` after
    /// it (one level, as a listing with the delimiter `/` names them).
    pub recursive: bool,
    /// Check only: nothing is written or removed.
    pub dry_run: bool,
}

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealItemKind {
    /// A bucket's volume on every drive.
    Bucket,
    /// One version of an object.
    Object,
}

/// One drive in a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealDrive {
    /// The drive's label ([`Drive::label`]).
    pub endpoint: String,
    /// Its id (`format.json`), when known.
    pub id: Option<Uuid>,
    /// What it held before.
    pub before: DriveHealState,
    /// What it holds after.
    pub after: DriveHealState,
}

/// One report of a heal sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealItem {
    pub kind: HealItemKind,
    pub bucket: String,
    /// The key (empty for a bucket).
    pub key: String,
    /// The version (`None`: the null version, or a bucket).
    pub version_id: Option<Uuid>,
    /// The drives: the object's set in set order, or every drive of the
    /// layer for a bucket.
    pub drives: Vec<HealDrive>,
    /// The sets the drives belong to.
    pub sets: usize,
    /// Data shards of the version (for a bucket, the first set's default).
    pub data_blocks: usize,
    /// Parity shards.
    pub parity_blocks: usize,
    /// The version's size.
    pub size: u64,
    /// Why the item could not be checked or healed, if it could not.
    pub error: Option<String>,
}

/// A running heal sequence; stopped when dropped.
#[derive(Debug)]
pub struct HealSequence {
    items: mpsc::Receiver<HealItem>,
    stop: watch::Sender<bool>,
    /// How the walk ended, once it has (`Err`: why it stopped early).
    outcome: Arc<Mutex<Option<std::result::Result<(), String>>>>,
}

impl HealSequence {
    /// Up to `max` reports waiting now, and, once the walk has ended and
    /// every report has been taken, how it ended.
    pub fn take(&mut self, max: usize) -> (Vec<HealItem>, Option<std::result::Result<(), String>>) {
        let mut out = Vec::new();
        while out.len() < max {
            match self.items.try_recv() {
                Ok(item) => out.push(item),
                Err(mpsc::error::TryRecvError::Empty) => return (out, None),
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    let outcome = self
                        .outcome
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                        .unwrap_or_else(|| Err("the heal ended without a word".into()));
                    return (out, Some(outcome));
                }
            }
        }
        (out, None)
    }

    /// Reports waiting for the reader now.
    pub fn waiting(&self) -> usize {
        self.items.len()
    }

    /// Tells the walk to stop before its next version.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for HealSequence {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Hands `item` to the reader; `false` when the sequence is stopping (told
/// to, dropped, or no reader took a report for [`UNCONSUMED_TIMEOUT`]).
async fn send(
    tx: &mpsc::Sender<HealItem>,
    stop: &mut watch::Receiver<bool>,
    item: HealItem,
) -> bool {
    tokio::select! {
        sent = tokio::time::timeout(UNCONSUMED_TIMEOUT, tx.send(item)) => matches!(sent, Ok(Ok(()))),
        _ = stop.wait_for(|s| *s) => false,
    }
}

impl ObjectLayer {
    /// Starts healing what `scope` covers (see the module's doc).
    pub fn start_heal(self: &Arc<Self>, scope: HealScope) -> HealSequence {
        let (tx, items) = mpsc::channel(UNCONSUMED_ITEMS);
        let (stop, stop_rx) = watch::channel(false);
        let outcome = Arc::new(Mutex::new(None));
        let (layer, out) = (Arc::clone(self), Arc::clone(&outcome));
        tokio::spawn(async move {
            let r = layer.heal_walk(&scope, &tx, stop_rx).await;
            if let Err(e) = &r {
                tracing::warn!(bucket = ?scope.bucket, prefix = %scope.prefix, "heal sequence: {e}");
            }
            *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.map_err(|e| e.to_string()));
            // The reader sees the end once `tx` is gone, after the outcome.
            drop(tx);
        });
        HealSequence {
            items,
            stop,
            outcome,
        }
    }

    async fn heal_walk(
        self: &Arc<Self>,
        scope: &HealScope,
        tx: &mpsc::Sender<HealItem>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<()> {
        let buckets = match &scope.bucket {
            Some(b) => vec![b.clone()],
            None => self
                .list_buckets()
                .await?
                .into_iter()
                .map(|b| b.name)
                .collect(),
        };
        let mut pacer = Pacer::new(Arc::clone(&self.scan_rate));
        let mut running = tokio::task::JoinSet::new();
        for bucket in buckets {
            if *stop.borrow() {
                break;
            }
            let item = self.heal_bucket_volume(&bucket, scope.dry_run).await;
            if !send(tx, &mut stop, item).await {
                break;
            }
            let (mut marker, mut vmarker): (Option<String>, Option<String>) = (None, None);
            'pages: loop {
                let opts = ListOptions {
                    prefix: scope.prefix.clone(),
                    delimiter: (!scope.recursive).then(|| "/".to_owned()),
                    marker: marker.clone(),
                    max_keys: 1000,
                };
                let page = match self
                    .list_object_versions(&bucket, &opts, vmarker.as_deref())
                    .await
                {
                    Ok(p) => p,
                    // Deleted since it was named: nothing left to heal.
                    Err(Error::NoSuchBucket(_)) if scope.bucket.is_none() => break,
                    Err(e) => {
                        while running.join_next().await.is_some() {}
                        return Err(e);
                    }
                };
                for v in &page.versions {
                    if *stop.borrow() {
                        break 'pages;
                    }
                    while running.len() >= SCAN_WORKERS {
                        running.join_next().await;
                    }
                    let (layer, tx, mut stop) = (Arc::clone(self), tx.clone(), stop.clone());
                    let (bucket, key, version) = (bucket.clone(), v.key.clone(), v.version_id);
                    let dry_run = scope.dry_run;
                    running.spawn(async move {
                        if let Some(item) = layer
                            .heal_version_item(&bucket, &key, version, dry_run)
                            .await
                        {
                            send(&tx, &mut stop, item).await;
                        }
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
        Ok(())
    }

    /// Heals (or checks) one version and reports it; `None` when it is
    /// gone (deleted since it was listed).
    async fn heal_version_item(
        &self,
        bucket: &str,
        key: &str,
        version: Option<Uuid>,
        dry_run: bool,
    ) -> Option<HealItem> {
        let sel = version.map_or(VersionSel::Null, VersionSel::Id);
        let mut item = HealItem {
            kind: HealItemKind::Object,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            version_id: version,
            drives: Vec::new(),
            sets: 1,
            data_blocks: 0,
            parity_blocks: 0,
            size: 0,
            error: None,
        };
        match self.heal_object_in(bucket, key, Some(sel), dry_run).await {
            Ok((r, set)) => {
                item.drives = set
                    .drives()
                    .iter()
                    .enumerate()
                    .map(|(d, drive)| HealDrive {
                        endpoint: drive.label(),
                        id: drive.id(),
                        before: r.before.get(d).copied().unwrap_or(DriveHealState::Unknown),
                        after: r.after.get(d).copied().unwrap_or(DriveHealState::Unknown),
                    })
                    .collect();
                item.data_blocks = r.data_blocks;
                item.parity_blocks = r.parity_blocks;
                item.size = r.bytes;
                if !r.failed_drives.is_empty() {
                    item.error = Some(format!(
                        "{} drive(s) could not be written",
                        r.failed_drives.len()
                    ));
                }
            }
            Err(e) if e.is_not_found() => return None,
            Err(e) => {
                let set = self.set_in(0, key);
                item.data_blocks = set.drives().len() - set.default_parity();
                item.parity_blocks = set.default_parity();
                item.error = Some(e.to_string());
            }
        }
        Some(item)
    }

    /// Checks a bucket's volume on every drive and, unless `dry_run`,
    /// creates it where it is missing, if it is on at least half the
    /// drives (fewer: the bucket is being deleted, or was; it is not
    /// brought back).
    async fn heal_bucket_volume(&self, bucket: &str, dry_run: bool) -> HealItem {
        let drives: Vec<Arc<dyn Drive>> = self.drives().cloned().collect();
        let first = &self.sets[0];
        let mut item = HealItem {
            kind: HealItemKind::Bucket,
            bucket: bucket.to_owned(),
            key: String::new(),
            version_id: None,
            drives: Vec::with_capacity(drives.len()),
            sets: self.sets.len(),
            data_blocks: first.drives().len() - first.default_parity(),
            parity_blocks: first.default_parity(),
            size: 0,
            error: None,
        };
        let _g = match self.locker.write(bucket, LOCK_TIMEOUT).await {
            Ok(g) => g,
            Err(e) => {
                item.error = Some(e.to_string());
                return item;
            }
        };
        let stats = drives
            .iter()
            .map(|d| {
                Box::pin(d.stat_volume(bucket))
                    as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>>
            })
            .collect();
        let before: Vec<DriveHealState> = super::join::join_all(stats)
            .await
            .into_iter()
            .map(|r| match r {
                Some(Ok(_)) => DriveHealState::Ok,
                Some(Err(e)) => DriveHealState::of_error(&e),
                None => DriveHealState::Unknown,
            })
            .collect();
        let held = before.iter().filter(|s| **s == DriveHealState::Ok).count();
        let mut after = before.clone();
        if !dry_run && held < drives.len().div_ceil(2) {
            item.error = Some(format!(
                "the bucket is on {held} of {} drives, fewer than half: not made again",
                drives.len()
            ));
        } else if !dry_run {
            for (d, drive) in drives.iter().enumerate() {
                if before[d] == DriveHealState::Missing {
                    match drive.make_volume(bucket).await {
                        Ok(()) | Err(DriveError::VolumeExists) => after[d] = DriveHealState::Ok,
                        Err(e) => {
                            tracing::warn!(drive = %drive.label(), "heal of bucket {bucket}: {e}")
                        }
                    }
                }
            }
        }
        item.drives = drives
            .iter()
            .zip(before.into_iter().zip(after))
            .map(|(d, (before, after))| HealDrive {
                endpoint: d.label(),
                id: d.id(),
                before,
                after,
            })
            .collect();
        item
    }
}
