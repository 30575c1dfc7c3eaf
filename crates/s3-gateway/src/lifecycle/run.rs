//! The lifecycle pass: every bucket with a lifecycle configuration is
//! walked version by version and the rules' verdicts carried out, through
//! the object layer (so a version under object lock is never removed: the
//! layer refuses, and the pass counts it and goes on), at a bounded rate.
//!
//! Time comes from a [`Clock`]: the system's, or the system's moved by an
//! offset read from a file on every pass, so tests can advance days without
//! waiting them. One pass at a time runs in a cluster: each pass takes an
//! exclusive lock of the layer's lock service first.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use object::layer::list::ListedObject;
use object::layer::{BucketConfig, Error as LayerError, ListOptions, ObjectLayer, VersionSel};

use super::{Action, Lifecycle, VersionFacts};

/// The lock a pass holds, a name no bucket/key resource can take (bucket
/// names have no `:`).
const PASS_LOCK: &str = "lifecycle:pass";

/// Versions listed per page.
const PAGE: usize = 1000;

/// The time the rules are applied at.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// A file holding a whole number of seconds added to the system's
    /// time (tests); read on every call, 0 when absent or unreadable.
    pub offset_file: Option<PathBuf>,
}

impl Clock {
    /// Now, as the rules see it.
    pub fn now(&self) -> SystemTime {
        let now = SystemTime::now();
        let Some(path) = &self.offset_file else {
            return now;
        };
        let secs: i64 = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if secs >= 0 {
            now + Duration::from_secs(secs.unsigned_abs())
        } else {
            now - Duration::from_secs(secs.unsigned_abs())
        }
    }
}

/// How the lifecycle runs.
#[derive(Debug, Clone)]
pub struct LifecycleOptions {
    /// Pause between two passes (one runs at start).
    pub interval: Duration,
    /// Most versions removed (or delete markers added) and uploads aborted
    /// per second; 0: unlimited.
    pub actions_per_sec: u32,
    /// The time source.
    pub clock: Clock,
}

impl Default for LifecycleOptions {
    fn default() -> Self {
        LifecycleOptions {
            interval: Duration::from_secs(3600),
            actions_per_sec: 100,
            clock: Clock::default(),
        }
    }
}

/// What the passes have done, for metrics.
#[derive(Debug, Default)]
pub struct LifecycleStats {
    /// Passes completed.
    pub passes: AtomicU64,
    /// Current versions expired (a delete marker added, or removed).
    pub expired_current: AtomicU64,
    /// Noncurrent versions removed.
    pub expired_noncurrent: AtomicU64,
    /// Delete markers left alone that were removed.
    pub delete_markers_removed: AtomicU64,
    /// Incomplete multipart uploads aborted.
    pub uploads_aborted: AtomicU64,
    /// Versions due but kept because object lock protects them.
    pub locked: AtomicU64,
    /// Actions that failed for another reason (tried again next pass).
    pub errors: AtomicU64,
    /// Versions looked at.
    pub versions_seen: AtomicU64,
}

/// The lifecycle's background task.
#[derive(Debug)]
pub struct LifecycleHandle {
    /// What it has done.
    pub stats: Arc<LifecycleStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LifecycleHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the lifecycle passes on `layer`.
pub fn spawn(layer: Arc<ObjectLayer>, opts: LifecycleOptions) -> LifecycleHandle {
    let stats = Arc::new(LifecycleStats::default());
    let s = Arc::clone(&stats);
    let task = tokio::spawn(async move {
        loop {
            match layer
                .locker()
                .write(PASS_LOCK, Duration::from_secs(1))
                .await
            {
                Ok(_guard) => {
                    if let Err(e) = run_pass(&layer, &opts, &s).await {
                        tracing::warn!("lifecycle pass: {e}");
                    }
                    s.passes.fetch_add(1, Ordering::Relaxed);
                }
                // Another node runs this pass.
                Err(e) => tracing::debug!("lifecycle pass skipped: {e}"),
            }
            tokio::time::sleep(opts.interval).await;
        }
    });
    LifecycleHandle { stats, task }
}

/// Paces actions to a rate.
struct Pacer {
    gap: Option<Duration>,
    next: tokio::time::Instant,
}

impl Pacer {
    fn new(per_sec: u32) -> Pacer {
        Pacer {
            gap: (per_sec > 0).then(|| Duration::from_secs(1) / per_sec),
            next: tokio::time::Instant::now(),
        }
    }

    async fn tick(&mut self) {
        if let Some(gap) = self.gap {
            tokio::time::sleep_until(self.next).await;
            self.next = tokio::time::Instant::now().max(self.next) + gap;
        }
    }
}

/// One pass over every bucket with rules.
pub async fn run_pass(
    layer: &ObjectLayer,
    opts: &LifecycleOptions,
    stats: &LifecycleStats,
) -> Result<(), LayerError> {
    let mut pacer = Pacer::new(opts.actions_per_sec);
    for bucket in layer.list_buckets().await? {
        let Some(doc) = layer
            .bucket_config(&bucket.name, BucketConfig::Lifecycle)
            .await?
        else {
            continue;
        };
        let lc = match Lifecycle::parse(&doc) {
            Ok(lc) => lc,
            Err(e) => {
                tracing::warn!(bucket = %bucket.name, "lifecycle configuration unreadable, not run: {e}");
                continue;
            }
        };
        let now = opts.clock.now();
        if lc.may_act_under("") {
            BucketPass {
                layer,
                bucket: &bucket.name,
                lc: &lc,
                now,
                needs_tags: lc.rules().iter().any(|r| r.enabled && r.filter.has_tags()),
                current_rules: lc.has_current_rules() || lc.has_delete_marker_rules(),
                noncurrent_rules: lc.has_noncurrent_rules(),
                stats,
            }
            .walk(&mut pacer)
            .await?;
        }
        if lc.has_abort_rules() {
            for up in layer.list_multipart_uploads(&bucket.name, "").await? {
                let initiated = SystemTime::UNIX_EPOCH
                    + Duration::from_nanos(u64::try_from(up.initiated_nanos).unwrap_or(0));
                if lc.abort_upload_due(&up.key, initiated, now) {
                    pacer.tick().await;
                    match layer
                        .abort_multipart_upload(&bucket.name, &up.key, &up.upload_id)
                        .await
                    {
                        Ok(()) => stats.uploads_aborted.fetch_add(1, Ordering::Relaxed),
                        Err(e) if e.is_not_found() => 0,
                        Err(e) => {
                            tracing::warn!(bucket = %bucket.name, key = %up.key, "lifecycle abort: {e}");
                            stats.errors.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            }
        }
    }
    Ok(())
}

/// The walk of one bucket's versions under its rules, at one instant.
struct BucketPass<'a> {
    layer: &'a ObjectLayer,
    bucket: &'a str,
    lc: &'a Lifecycle,
    now: SystemTime,
    /// A rule filters by tags: versions' tags are read.
    needs_tags: bool,
    /// A rule acts on current versions (or lone delete markers); what no
    /// rule can touch is not looked at (nor its tags read).
    current_rules: bool,
    /// A rule acts on noncurrent versions.
    noncurrent_rules: bool,
    stats: &'a LifecycleStats,
}

impl BucketPass<'_> {
    /// Walks every version of the bucket, a key's versions together (newest
    /// first, as listed).
    async fn walk(&self, pacer: &mut Pacer) -> Result<(), LayerError> {
        let (layer, bucket) = (self.layer, self.bucket);
        let mut opts = ListOptions {
            max_keys: PAGE,
            ..ListOptions::default()
        };
        let mut version_marker: Option<String> = None;
        let mut group: Vec<ListedObject> = Vec::new();
        loop {
            let page = layer
                .list_object_versions(bucket, &opts, version_marker.as_deref())
                .await?;
            for v in page.versions {
                if group.first().is_some_and(|g| g.key != v.key) {
                    let done = std::mem::take(&mut group);
                    self.act_on_key(&done, pacer).await;
                }
                group.push(v);
            }
            if !page.is_truncated || page.next_key_marker.is_none() {
                break;
            }
            opts.marker = page.next_key_marker;
            version_marker = page.next_version_marker;
        }
        if !group.is_empty() {
            self.act_on_key(&group, pacer).await;
        }
        Ok(())
    }

    /// Carries out the rules' verdicts on one key's versions.
    async fn act_on_key(&self, versions: &[ListedObject], pacer: &mut Pacer) {
        let (layer, bucket, stats) = (self.layer, self.bucket, self.stats);
        let mod_time = |v: &ListedObject| {
            SystemTime::UNIX_EPOCH
                + Duration::from_nanos(u64::try_from(v.mod_time_nanos).unwrap_or(0))
        };
        let mut kept_noncurrent = 0usize;
        for (i, v) in versions.iter().enumerate() {
            stats.versions_seen.fetch_add(1, Ordering::Relaxed);
            if i == 0 && v.is_latest && !self.current_rules {
                continue;
            }
            if i > 0 && !self.noncurrent_rules {
                break;
            }
            let sel = v.version_id.map_or(VersionSel::Null, VersionSel::Id);
            let tags = if self.needs_tags && !v.delete_marker {
                match layer.head_object(bucket, &v.key, Some(sel)).await {
                    Ok(info) => info
                        .metadata
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case("x-amz-tagging"))
                        .and_then(|(_, q)| crate::handlers::parse_tags(q).ok())
                        .unwrap_or_default(),
                    Err(_) => Vec::new(),
                }
            } else {
                Vec::new()
            };
            let is_latest = i == 0 && v.is_latest;
            let facts = VersionFacts {
                key: &v.key,
                size: v.size,
                mod_time: mod_time(v),
                is_latest,
                is_delete_marker: v.delete_marker,
                successor_mod_time: (i > 0).then(|| mod_time(&versions[i - 1])),
                newer_noncurrent: kept_noncurrent,
                num_versions: versions.len(),
                tags: &tags,
            };
            let (action, _rule) = self.lc.eval(&facts, self.now);
            let outcome = match action {
                Action::None => {
                    if !is_latest {
                        kept_noncurrent += 1;
                    }
                    continue;
                }
                Action::DeleteCurrent => {
                    pacer.tick().await;
                    let r = layer.delete_object(bucket, &v.key, None).await;
                    (r, &stats.expired_current)
                }
                Action::DeleteVersion => {
                    pacer.tick().await;
                    let r = layer.delete_object(bucket, &v.key, Some(sel)).await;
                    let counter = if v.delete_marker {
                        &stats.delete_markers_removed
                    } else {
                        &stats.expired_noncurrent
                    };
                    (r, counter)
                }
            };
            match outcome {
                (Ok(_), counter) => {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                (Err(LayerError::ObjectLocked(_)), _) => {
                    stats.locked.fetch_add(1, Ordering::Relaxed);
                    if !is_latest {
                        kept_noncurrent += 1;
                    }
                }
                (Err(e), _) if e.is_not_found() => {}
                (Err(e), _) => {
                    tracing::warn!(bucket, key = %v.key, "lifecycle expiry: {e}");
                    stats.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}
