//! Which pool a **new** object goes to.
//!
//! MinIO's rules (cmd/erasure-server-pool.go, `getAvailablePoolIdx`,
//! `getServerPoolsAvailableSpace`, `FilterMaxUsed`; cmd/object-api-utils.go,
//! `hasSpaceFor`; constants in cmd/globals.go):
//!
//! * An object that already exists in a pool is written to that pool; finding
//!   it takes I/O and is the caller's job. What follows is for new objects.
//! * With a single pool, the object goes there if the drives of its set have
//!   room ([`has_space_for`]).
//! * Otherwise each pool is weighed by the drives of the set the object hashes
//!   to in that pool. A pool that is suspended (being decommissioned) or
//!   rebalancing weighs 0. Unless the bucket is MinIO's own metadata bucket,
//!   a pool whose set lacks room weighs 0. Otherwise its weight is the sum of
//!   `total - used` over the set's online drives, times the pool's set count
//!   (to compare pools of different sizes).
//! * If some pool with weight has all its set's drives below 85% used
//!   (`100 - 100 * diskReserveFraction`, with `diskReserveFraction = 0.15`),
//!   pools whose fullest drive is at 85% or more weigh 0.
//! * A pool is drawn at random with probability proportional to its weight:
//!   `choose = random % total`, then the first pool whose running sum exceeds
//!   `choose`. MinIO draws `random` from `math/rand`; here it is an argument,
//!   so the choice is a pure function of its inputs.
//!
//! Differences: MinIO's unsigned arithmetic wraps where this saturates (a
//! drive reporting more used than total bytes; sums beyond 2^64), inputs no
//! real drive produces.

use crate::Error;

/// Size assumed for an upload of unknown size (`diskAssumeUnknownSize`).
pub const UNKNOWN_SIZE_ASSUMED_BYTES: i64 = 1 << 30;
/// Fraction of a drive MinIO allows to fill (`diskFillFraction`).
pub const DISK_FILL_FRACTION: f64 = 0.99;
/// Used percentage from which a pool is avoided while others are below it
/// (`100 - 100 * diskReserveFraction`).
pub const MAX_USED_PERCENT: u64 = 85;
/// Free inodes below which a drive takes no new object (`diskMinInodes`).
pub const MIN_FREE_INODES: u64 = 1000;

/// What a drive reports about its space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DriveSpace {
    /// Capacity in bytes. A drive reporting 0 is treated as offline.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Bytes available for writing (may be less than total - used, e.g.
    /// blocks reserved for root).
    pub free_bytes: u64,
    /// Free inodes.
    pub free_inodes: u64,
    /// Used inodes (0 when the filesystem does not report inodes).
    pub used_inodes: u64,
}

/// MinIO's `hasSpaceFor`: whether the drives of a set (`None` = offline) can
/// take an object of `size_bytes` (negative: unknown size, 1 GiB assumed).
///
/// The size is doubled to allow for parity. At least half of the drives must
/// be online; each online drive must have more free bytes than its share
/// (doubled size / online drives) and, unless `single_drive`, at least
/// [`MIN_FREE_INODES`] free inodes when it reports inodes; after the write,
/// more than 1% of the online capacity must remain.
///
/// ```
/// use placement::{DriveSpace, has_space_for};
/// let d = DriveSpace { total_bytes: 1 << 40, used_bytes: 0, free_bytes: 1 << 40, free_inodes: 1 << 20, used_inodes: 1 };
/// assert_eq!(has_space_for(&[Some(d); 4], 1 << 30, false), Ok(true));
/// assert!(has_space_for(&[None, None, None, Some(d)], 1, false).is_err());
/// ```
pub fn has_space_for(
    drives: &[Option<DriveSpace>],
    size_bytes: i64,
    single_drive: bool,
) -> Result<bool, Error> {
    let mut size = size_bytes.wrapping_mul(2);
    if size < 0 {
        size = UNKNOWN_SIZE_ASSUMED_BYTES;
    }
    let size = size.unsigned_abs();
    let online: Vec<&DriveSpace> = drives
        .iter()
        .flatten()
        .filter(|d| d.total_bytes != 0)
        .collect();
    if online.len() < drives.len() / 2 || online.is_empty() {
        return Err(Error::NotEnoughOnlineDrives {
            needed: drives.len() / 2 + 1,
            online: online.len(),
        });
    }
    let total: u64 = online
        .iter()
        .fold(0u64, |a, d| a.saturating_add(d.total_bytes));
    let available: u64 = online.iter().fold(0u64, |a, d| {
        a.saturating_add(d.total_bytes.saturating_sub(d.used_bytes))
    });
    let per_drive = size / online.len() as u64;
    for d in &online {
        if !single_drive && d.free_inodes < MIN_FREE_INODES && d.used_inodes > 0 {
            return Ok(false);
        }
        if d.free_bytes <= per_drive {
            return Ok(false);
        }
    }
    if available < size {
        return Ok(false);
    }
    let left = available - size;
    // MinIO: uint64(float64(total) * (1.0 - diskFillFraction)), where Go
    // evaluates the constant 1.0 - 0.99 exactly, i.e. 0.01.
    let want_left = (total as f64 * 0.01) as u64;
    Ok(left > want_left)
}

/// One pool as seen by a new object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolCandidate<'a> {
    /// Number of erasure sets in the pool.
    pub set_count: usize,
    /// The drives of the set the object hashes to in this pool (`None`:
    /// offline or not answering).
    pub set_drives: &'a [Option<DriveSpace>],
    /// False while the pool is being decommissioned (suspended) or rebalanced:
    /// it takes no new objects.
    pub accepts_new_objects: bool,
}

/// The object being placed, and the random draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolChoice {
    /// Size of the object in bytes; negative when unknown.
    pub object_size_bytes: i64,
    /// The bucket is MinIO's own metadata bucket (`.minio.sys`): free space
    /// is not checked.
    pub meta_bucket: bool,
    /// A single-drive deployment: inodes are not checked.
    pub single_drive: bool,
    /// A uniformly random 64-bit value (MinIO: `rand.Uint64()`).
    pub random: u64,
}

/// Weight of each pool for the draw (MinIO's `Available`, after
/// `FilterMaxUsed`). Pools that cannot take the object weigh 0.
pub fn pool_weights(pools: &[PoolCandidate<'_>], choice: &PoolChoice) -> Vec<u64> {
    let mut weights = Vec::with_capacity(pools.len());
    let mut max_used_pct = Vec::with_capacity(pools.len());
    for pool in pools {
        let has_room = choice.meta_bucket
            || matches!(
                has_space_for(
                    pool.set_drives,
                    choice.object_size_bytes,
                    choice.single_drive
                ),
                Ok(true)
            );
        if !pool.accepts_new_objects || !has_room {
            weights.push(0);
            max_used_pct.push(0);
            continue;
        }
        let mut available: u64 = 0;
        let mut max_pct: u64 = 0;
        for d in pool
            .set_drives
            .iter()
            .flatten()
            .filter(|d| d.total_bytes != 0)
        {
            available = available.saturating_add(d.total_bytes.saturating_sub(d.used_bytes));
            let pct = u128::from(d.used_bytes) * 100 / u128::from(d.total_bytes);
            max_pct = max_pct.max(u64::try_from(pct).unwrap_or(u64::MAX));
        }
        weights.push(available.saturating_mul(pool.set_count as u64));
        max_used_pct.push(max_pct);
    }
    if weights.len() > 1 {
        let below: Vec<bool> = weights
            .iter()
            .zip(&max_used_pct)
            .map(|(&w, &pct)| w > 0 && pct < MAX_USED_PERCENT)
            .collect();
        if below.contains(&true) {
            for (w, keep) in weights.iter_mut().zip(below) {
                if !keep {
                    *w = 0;
                }
            }
        }
    }
    weights
}

/// The pool (0-based index into `pools`) a new object goes to.
///
/// Errors: [`Error::StorageFull`] when no pool can take it; with a single
/// pool, [`Error::NotEnoughOnlineDrives`] when too few drives of its set
/// answer (MinIO reports a write-quorum error then).
///
/// ```
/// use placement::{DriveSpace, PoolCandidate, PoolChoice, choose_pool};
/// let big = DriveSpace { total_bytes: 3 << 40, used_bytes: 0, free_bytes: 3 << 40, free_inodes: 1 << 30, used_inodes: 1 };
/// let small = DriveSpace { total_bytes: 1 << 40, ..big };
/// let (a, b) = ([Some(small); 4], [Some(big); 4]);
/// let pools = [
///     PoolCandidate { set_count: 1, set_drives: &a, accepts_new_objects: true },
///     PoolCandidate { set_count: 1, set_drives: &b, accepts_new_objects: true },
/// ];
/// let mut choice = PoolChoice { object_size_bytes: 1 << 20, meta_bucket: false, single_drive: false, random: 0 };
/// // Pool 0 weighs 4 TiB, pool 1 weighs 12 TiB: draws below 4 TiB pick pool 0.
/// assert_eq!(choose_pool(&pools, &choice)?, 0);
/// choice.random = (4u64 << 40) - 1;
/// assert_eq!(choose_pool(&pools, &choice)?, 0);
/// choice.random = 4u64 << 40;
/// assert_eq!(choose_pool(&pools, &choice)?, 1);
/// # Ok::<(), placement::Error>(())
/// ```
pub fn choose_pool(pools: &[PoolCandidate<'_>], choice: &PoolChoice) -> Result<usize, Error> {
    if let [only] = pools {
        if choice.meta_bucket
            || has_space_for(
                only.set_drives,
                choice.object_size_bytes,
                choice.single_drive,
            )?
        {
            return Ok(0);
        }
        return Err(Error::StorageFull);
    }
    let weights = pool_weights(pools, choice);
    let total = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
    if total == 0 {
        return Err(Error::StorageFull);
    }
    let pick = choice.random % total;
    let mut running: u64 = 0;
    for (i, &w) in weights.iter().enumerate() {
        running = running.saturating_add(w);
        if running > pick && w > 0 {
            return Ok(i);
        }
    }
    Err(Error::StorageFull)
}
