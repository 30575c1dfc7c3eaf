//! Opening the layer: pools over drives, fresh drives formatted, formatted
//! ones checked (a replaced empty drive formatted into its slot, a pool
//! added to the deployment given its id and distribution), the storage
//! classes resolved as MinIO does, and the buckets spread to drives that
//! lack them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use drive::{DeadlineDrive, Drive, DriveError, FormatErasureV3, LocalDrive};
use placement::DistributionAlgo;
use uuid::Uuid;

use super::heal::HEAL_QUEUE;
use super::*;

/// What one drive's `format.json` said.
enum Found {
    Formatted(FormatErasureV3),
    /// No `format.json`: a fresh or replaced drive.
    Blank,
    /// The drive did not answer (a fault: offline, timed out, an I/O
    /// error); it is neither checked nor formatted now.
    Unavailable,
}

/// What `format.json` said about one pool's drives.
struct PoolFormats {
    found: Vec<Found>,
    /// The format most drives agree on, if any drive is formatted.
    reference: Option<FormatErasureV3>,
}

impl ObjectLayer {
    /// Opens (formatting on first use) local directories as one pool; the
    /// directories are created if missing.
    pub async fn open_dirs(dirs: &[PathBuf], opts: LayerOptions) -> Result<ObjectLayer> {
        Self::open_pool_dirs(&[dirs.to_vec()], opts).await
    }

    /// Opens local directories as several pools (MinIO's server pools: one
    /// argument of `minio server` each), formatting fresh ones.
    pub async fn open_pool_dirs(pools: &[Vec<PathBuf>], opts: LayerOptions) -> Result<ObjectLayer> {
        let mut out = Vec::with_capacity(pools.len());
        for dirs in pools {
            let mut drives: Vec<Arc<dyn Drive>> = Vec::with_capacity(dirs.len());
            for d in dirs {
                std::fs::create_dir_all(d)
                    .map_err(|e| Error::Layout(format!("creating {}: {e}", d.display())))?;
                let cfg = opts.drive.clone().unwrap_or_default();
                let local = Arc::new(LocalDrive::open(d.clone(), cfg).await?);
                // Every drive answers within the deadline, so a hung disk
                // cannot hold a request that only needs a quorum.
                let deadline = opts.deadline.clone().unwrap_or_default();
                drives.push(Arc::new(DeadlineDrive::new(local, deadline)));
            }
            out.push(drives);
        }
        Self::open_pools(out, opts).await
    }

    /// Opens one pool over `drives` (in endpoint order); see
    /// [`open_pools`](Self::open_pools).
    pub async fn open(drives: Vec<Arc<dyn Drive>>, opts: LayerOptions) -> Result<ObjectLayer> {
        Self::open_pools(vec![drives], opts).await
    }

    /// Opens pools of drives (each in endpoint order): formats fresh
    /// drives, checks formatted ones (a drive of another deployment, or
    /// out of place, is refused; all pools must share the deployment id
    /// and distribution algorithm), formats replaced (empty) drives into
    /// their slot, formats a fresh pool added to a deployment with its id,
    /// and removes what crashed writes left in the temp area.
    pub async fn open_pools(
        pools: Vec<Vec<Arc<dyn Drive>>>,
        opts: LayerOptions,
    ) -> Result<ObjectLayer> {
        if pools.is_empty() || pools.iter().any(Vec::is_empty) {
            return Err(Error::Layout("no drives".into()));
        }
        let mut formats = Vec::with_capacity(pools.len());
        for drives in &pools {
            formats.push(load_pool_formats(drives).await?);
        }
        // One deployment, one distribution algorithm.
        let mut deployment: Option<(Uuid, DistributionAlgo)> = None;
        for (p, f) in formats.iter().enumerate() {
            let Some(r) = &f.reference else { continue };
            let id = r.deployment_id().ok_or_else(|| {
                Error::Layout(format!("pool {p}: format without a deployment id"))
            })?;
            let algo = DistributionAlgo::from_format_name(&r.xl.distribution_algo)
                .map_err(|e| Error::Layout(format!("pool {p}: {e}")))?;
            match deployment {
                None => deployment = Some((id, algo)),
                Some((d, a)) if d == id && a == algo => {}
                Some((d, a)) => {
                    return Err(Error::Layout(format!(
                        "pool {p} belongs to deployment {id} ({algo}), pool 0 to {d} ({a})"
                    )));
                }
            }
        }
        let (deployment_id, algo) =
            deployment.unwrap_or_else(|| (Uuid::new_v4(), DistributionAlgo::CURRENT));

        let mut set_sizes = Vec::with_capacity(pools.len());
        let mut replaced: Vec<Vec<usize>> = Vec::with_capacity(pools.len());
        for (p, (drives, f)) in pools.iter().zip(formats).enumerate() {
            let (size, blank) =
                format_pool(p, drives, f, deployment_id, algo, opts.set_drive_count).await?;
            set_sizes.push(size);
            replaced.push(blank);
        }

        // Storage classes: resolved for the first pool's sets, as MinIO
        // does, and valid for every pool.
        let first = set_sizes[0];
        let standard = match (opts.parity, algo) {
            (Some(p), _) => Some(placement::StorageClass::new(p)),
            (None, DistributionAlgo::SipMod) => Some(placement::StorageClass::new(first / 2)),
            (None, _) => None,
        };
        let storage_class = StorageClassConfig::resolve(
            standard,
            opts.rrs_parity.map(placement::StorageClass::new),
            first,
        )
        .map_err(|e| Error::Layout(e.to_string()))?;
        for (p, &size) in set_sizes.iter().enumerate() {
            for parity in [storage_class.standard_parity(), storage_class.rrs_parity()] {
                placement::validate_parity(parity, size)
                    .map_err(|e| Error::Layout(format!("pool {p}: {e}")))?;
            }
        }

        let read_cache = opts
            .read_cache_bytes
            .filter(|&b| b > 0)
            .map(|b| Arc::new(ReadCache::new(b)));
        let journal = Arc::new(super::journal::Journal::default());
        let mut sets = Vec::new();
        let mut pool_ranges = Vec::with_capacity(pools.len());
        for (drives, &size) in pools.iter().zip(&set_sizes) {
            let start = sets.len();
            for chunk in drives.chunks(size) {
                let mut set = ErasureSet::new(chunk.to_vec(), storage_class.standard_parity())?;
                if let Some(bytes) = opts.put_queue_bytes_per_drive {
                    set = set.with_put_queue(bytes);
                }
                if let Some(cache) = &read_cache {
                    let index = u32::try_from(sets.len()).unwrap_or(u32::MAX);
                    set = set.with_read_cache(Arc::clone(cache), index);
                }
                set = set.with_journal(Arc::clone(&journal), sets.len());
                set.ensure_meta_volumes().await;
                let cleaned = set.clean_tmp().await;
                if cleaned > 0 {
                    tracing::info!(cleaned, "removed leftovers of interrupted writes");
                }
                sets.push(set);
            }
            pool_ranges.push(Pool {
                sets: start..sets.len(),
                algo,
            });
        }
        // The drives formatted into their places are healed by the first
        // full scanner pass; their progress is tracked until it ends.
        let heal_track = super::heal_status::HealTrack::default();
        for ((range, blank), &size) in pool_ranges.iter().zip(&replaced).zip(&set_sizes) {
            for &i in blank {
                let set = range.sets.start + i / size;
                let label = sets[set].drives()[i % size].label();
                heal_track.fresh(set, i % size, label);
            }
        }
        let (heal_tx, heal_rx) = tokio::sync::mpsc::channel(HEAL_QUEUE);
        let layer = ObjectLayer {
            sets,
            pools: pool_ranges,
            deployment_id,
            storage_class,
            locker: Arc::new(LocalLocker::new()),
            versioning: Mutex::new(HashMap::new()),
            configs: Mutex::new(HashMap::new()),
            usage: Mutex::new(HashMap::new()),
            heal_tx,
            heal_rx: tokio::sync::Mutex::new(heal_rx),
            read_cache,
            bucket_hook: None,
            bucket_gen: std::sync::atomic::AtomicU64::new(0),
            journal,
            heal_track,
            known_buckets: Mutex::new(std::collections::HashSet::new()),
            config_watchers: Mutex::new(Vec::new()),
            scan_rate: Arc::default(),
        };
        layer.spread_buckets().await;
        Ok(layer)
    }

    /// Creates every bucket (a volume on a majority of some pool's drives)
    /// on the drives that lack it: a pool added to the deployment, or a
    /// replaced drive, gets the buckets the others have.
    async fn spread_buckets(&self) {
        let mut buckets: Vec<String> = Vec::new();
        for p in 0..self.pools.len() {
            let mut count: HashMap<String, usize> = HashMap::new();
            let mut n = 0;
            for d in self.pool_sets(p).iter().flat_map(|s| s.drives()) {
                n += 1;
                for v in d.list_volumes().await.unwrap_or_default() {
                    *count.entry(v.name).or_default() += 1;
                }
            }
            for (name, c) in count {
                if c > n / 2 && names::check_bucket(&name).is_ok() && !buckets.contains(&name) {
                    buckets.push(name);
                }
            }
        }
        for b in &buckets {
            for d in self.drives() {
                match d.make_volume(b).await {
                    Ok(()) => {
                        tracing::info!(drive = %d.label(), bucket = %b, "created missing bucket")
                    }
                    Err(DriveError::VolumeExists) => {}
                    Err(e) => tracing::warn!(drive = %d.label(), bucket = %b, "{e}"),
                }
            }
        }
    }
}

/// Reads `format.json` of every drive of a pool and finds the format most
/// of them agree on.
async fn load_pool_formats(drives: &[Arc<dyn Drive>]) -> Result<PoolFormats> {
    // Read at once: the drives of a cluster's other nodes answer over the
    // network.
    let loads = drives
        .iter()
        .map(|d| {
            Box::pin(drive::load_format(d.as_ref()))
                as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>>
        })
        .collect();
    let mut found: Vec<Found> = Vec::with_capacity(drives.len());
    for (d, r) in drives.iter().zip(super::join::join_all(loads).await) {
        let r =
            r.unwrap_or_else(|| Err(DriveError::Offline("reading format.json panicked".into())));
        match r {
            Ok(f) => found.push(Found::Formatted(f)),
            Err(DriveError::Unformatted) => found.push(Found::Blank),
            // A drive that does not answer (a node of a cluster that is
            // down) is left out; the others decide.
            Err(e) if e.is_fault() => {
                tracing::warn!(drive = %d.label(), "format.json not read, drive left out: {e}");
                found.push(Found::Unavailable);
            }
            Err(e) => return Err(Error::Layout(format!("{}: {e}", d.label()))),
        }
    }
    let formatted = || {
        found.iter().filter_map(|f| match f {
            Found::Formatted(f) => Some(f),
            _ => None,
        })
    };
    // The most common deployment id (ties: the first drive's).
    let mut count: Vec<(&str, usize)> = Vec::new();
    for f in formatted() {
        match count.iter_mut().find(|(id, _)| *id == f.id) {
            Some(c) => c.1 += 1,
            None => count.push((&f.id, 1)),
        }
    }
    let best = count
        .iter()
        .fold(None::<(&str, usize)>, |b, &(id, c)| match b {
            Some((_, bc)) if bc >= c => b,
            _ => Some((id, c)),
        })
        .map(|(id, _)| id.to_owned());
    let reference = best.and_then(|id| formatted().find(|f| f.id == id).cloned());
    Ok(PoolFormats { found, reference })
}

/// Formats a fresh pool (or checks a formatted one, giving replaced drives
/// their slot's format). Returns the pool's set size and the positions
/// in the pool of the replaced drives it formatted.
async fn format_pool(
    pool: usize,
    drives: &[Arc<dyn Drive>],
    formats: PoolFormats,
    deployment: Uuid,
    algo: DistributionAlgo,
    want_set_size: Option<usize>,
) -> Result<(usize, Vec<usize>)> {
    let n = drives.len();
    let layout_err = |m: String| Error::Layout(format!("pool {pool}: {m}"));
    let Some(reference) = formats.reference else {
        if formats
            .found
            .iter()
            .any(|f| matches!(f, Found::Unavailable))
        {
            return Err(layout_err(
                "no drive is formatted and some do not answer: a fresh pool is formatted only \
                 with every drive present"
                    .into(),
            ));
        }
        let set_size = match want_set_size {
            Some(s) => s,
            // One drive: MinIO's single-drive mode (`xl-single`), a set of
            // one drive with no parity.
            None if n == 1 => 1,
            None => placement::choose_set_drive_count(n, None, None)
                .map_err(|e| layout_err(e.to_string()))?,
        };
        if set_size == 0 || !n.is_multiple_of(set_size) {
            return Err(layout_err(format!(
                "{n} drives do not split into sets of {set_size}"
            )));
        }
        let sets: Vec<Vec<Uuid>> = (0..n / set_size)
            .map(|_| (0..set_size).map(|_| Uuid::new_v4()).collect())
            .collect();
        let formats =
            drive::build_formats(deployment, &sets).map_err(|e| layout_err(e.to_string()))?;
        for (d, f) in drives.iter().zip(formats) {
            let mut f = f;
            // A pool added to a deployment takes its distribution.
            f.xl.distribution_algo = algo.format_name().to_owned();
            drive::save_format(d.as_ref(), &f, false).await?;
            d.set_id(f.this_id());
        }
        tracing::info!(%deployment, pool, drives = n, set_size, "formatted fresh drives");
        return Ok((set_size, Vec::new()));
    };
    if reference.drive_count() != n {
        return Err(layout_err(format!(
            "the drives were formatted for {} drives, {n} given",
            reference.drive_count()
        )));
    }
    let set_size = reference.xl.sets.first().map_or(0, Vec::len);
    if set_size == 0 || reference.xl.sets.iter().any(|s| s.len() != set_size) {
        return Err(layout_err("format.json has uneven sets".into()));
    }
    if want_set_size.is_some_and(|s| s != set_size) {
        return Err(layout_err(format!(
            "the drives were formatted in sets of {set_size}"
        )));
    }
    // Blank drives are formatted into their places only from a format more
    // than half of the pool's drives carry: with fewer, the blank ones may
    // be the pool (a deployment whose drives were mixed up, or a cluster
    // whose other nodes are formatting), and a guess would be wrong.
    let carrying = formats
        .found
        .iter()
        .filter(|f| matches!(f, Found::Formatted(f) if f.id == reference.id))
        .count();
    let blank = formats
        .found
        .iter()
        .filter(|f| matches!(f, Found::Blank))
        .count();
    if blank > 0 && carrying * 2 <= n {
        return Err(layout_err(format!(
            "only {carrying} of {n} drives carry the deployment's format: too few to format \
             the {blank} blank ones from"
        )));
    }
    let mut blank_formatted = Vec::new();
    for (i, (d, f)) in drives.iter().zip(&formats.found).enumerate() {
        let expected = drive::DrivePosition {
            set: i / set_size,
            disk: i % set_size,
        };
        match f {
            Found::Formatted(f) => {
                drive::check_format(&reference, f, Some(expected))
                    .map_err(|e| layout_err(format!("{}: {e}", d.label())))?;
                d.set_id(f.this_id());
            }
            Found::Unavailable => {
                // Its place is known from the reference; it is checked
                // when it is next opened.
                d.set_id(reference.xl.sets[expected.set][expected.disk].parse().ok());
            }
            Found::Blank => {
                // A replaced drive: give it its slot's format.
                let mut f = reference.clone();
                f.xl.this = reference.xl.sets[expected.set][expected.disk].clone();
                drive::save_format(d.as_ref(), &f, false).await?;
                d.set_id(f.this_id());
                tracing::warn!(drive = %d.label(), "formatted a replaced drive; heal it");
                blank_formatted.push(i);
            }
        }
    }
    Ok((set_size, blank_formatted))
}
