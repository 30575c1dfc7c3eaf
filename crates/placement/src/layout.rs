//! Pools cut into erasure sets, as MinIO cuts them.
//!
//! MinIO's rules (cmd/endpoint-ellipses.go, `getSetIndexes`,
//! `possibleSetCountsWithSymmetry`, `commonSetDriveCount`), applied to each
//! pool on its own:
//!
//! 1. A pool needs at least 2 drives, and at least the override if one is
//!    given.
//! 2. Candidate set sizes are the sizes in 2..=16 that divide the pool's drive
//!    count; none is an error.
//! 3. With an override (`MINIO_ERASURE_SET_DRIVE_COUNT`), it must be one of the
//!    candidates, and it is used as is.
//! 4. Otherwise, for an ellipsis pool, candidates are kept only if they agree
//!    with the length `n` of the argument's **leftmost** range (in
//!    `http://host{1...4}/disk{1...8}`, the 4 hosts): `n % size == 0` when
//!    `n > size`, else `size % n == 0`. MinIO means this as symmetry over the
//!    hosts; its code compares against the leftmost range whatever that range
//!    names, and so does this crate. A legacy pool (no ellipses) skips this
//!    filter. No candidate left is an error.
//! 5. The largest remaining candidate wins (fewest sets).
//!
//! Drives are then taken in expansion order and cut into consecutive chunks of
//! that size: set 0 is drives 0..size, set 1 the next chunk, and so on. This is
//! also the order `format.json` records when MinIO formats fresh drives; an
//! existing deployment's `format.json` remains the authority on which drive
//! sits where.

use crate::parity::{StorageClass, StorageClassConfig, default_parity, validate_parity};
use crate::topology::{DeploymentStyle, PoolSpec, Topology};
use crate::{Endpoint, Error};

/// The smallest erasure set MinIO forms from several drives.
pub const MIN_SET_DRIVE_COUNT: usize = 2;
/// The largest erasure set MinIO forms.
pub const MAX_SET_DRIVE_COUNT: usize = 16;

/// MinIO's choice of erasure-set size for one pool of `drive_count` drives.
///
/// `symmetry_count` is the length of the pool argument's leftmost ellipsis
/// range (`None` for a legacy pool, which skips the symmetry filter);
/// `override_count` is `MINIO_ERASURE_SET_DRIVE_COUNT` (`None` or `Some(0)`:
/// no override).
///
/// ```
/// use placement::choose_set_drive_count;
/// assert_eq!(choose_set_drive_count(64, Some(64), None)?, 16);
/// // 2 hosts x 180 drives: 15 divides 360 but not evenly over 2 hosts.
/// assert_eq!(choose_set_drive_count(360, Some(2), None)?, 12);
/// assert_eq!(choose_set_drive_count(360, Some(2), Some(15))?, 15);
/// assert!(choose_set_drive_count(17, None, None).is_err());
/// # Ok::<(), placement::Error>(())
/// ```
pub fn choose_set_drive_count(
    drive_count: usize,
    symmetry_count: Option<usize>,
    override_count: Option<usize>,
) -> Result<usize, Error> {
    choose_for_pool(
        &format!("{drive_count} drives"),
        drive_count,
        symmetry_count,
        override_count,
    )
}

fn choose_for_pool(
    pool: &str,
    drive_count: usize,
    symmetry_count: Option<usize>,
    override_count: Option<usize>,
) -> Result<usize, Error> {
    let custom = override_count.unwrap_or(0);
    if drive_count < MIN_SET_DRIVE_COUNT || drive_count < custom {
        return Err(Error::TooFewDrives {
            pool: pool.to_string(),
            drives: drive_count,
            minimum: MIN_SET_DRIVE_COUNT.max(custom),
        });
    }
    let divisors: Vec<usize> = (MIN_SET_DRIVE_COUNT..=MAX_SET_DRIVE_COUNT)
        .filter(|&s| drive_count.is_multiple_of(s))
        .collect();
    if divisors.is_empty() {
        return Err(Error::NotDivisible {
            pool: pool.to_string(),
            drives: drive_count,
        });
    }
    let size = if custom > 0 {
        if !divisors.contains(&custom) {
            return Err(Error::InvalidSetDriveCount {
                pool: pool.to_string(),
                drives: drive_count,
                requested: custom,
                acceptable: divisors,
            });
        }
        custom
    } else {
        let symmetric: Vec<usize> = match symmetry_count {
            None => divisors.clone(),
            Some(n) => divisors
                .iter()
                .copied()
                .filter(|&s| {
                    if n > s {
                        n.is_multiple_of(s)
                    } else {
                        s.is_multiple_of(n)
                    }
                })
                .collect(),
        };
        if symmetric.is_empty() {
            return Err(Error::NoSymmetricDistribution {
                pool: pool.to_string(),
                drives: drive_count,
                symmetry_count: symmetry_count.unwrap_or(0),
                divisors,
            });
        }
        common_set_drive_count(drive_count, &symmetric)
    };
    if !(MIN_SET_DRIVE_COUNT..=MAX_SET_DRIVE_COUNT).contains(&size) {
        return Err(Error::NotDivisible {
            pool: pool.to_string(),
            drives: drive_count,
        });
    }
    Ok(size)
}

/// MinIO's `commonSetDriveCount`: among `candidates` (ascending, all dividing
/// `drive_count`), the one giving the fewest sets, i.e. the largest.
fn common_set_drive_count(drive_count: usize, candidates: &[usize]) -> usize {
    let (Some(&first), Some(&last)) = (candidates.first(), candidates.last()) else {
        return 0;
    };
    if drive_count < last {
        return drive_count;
    }
    let mut fewest_sets = drive_count / first;
    let mut size = 0;
    for &c in candidates {
        if drive_count.is_multiple_of(c) {
            let sets = drive_count / c;
            if sets <= fewest_sets {
                fewest_sets = sets;
                size = c;
            }
        }
    }
    size
}

/// One drive with its place in the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drive {
    pool_index: usize,
    set_index: usize,
    drive_index: usize,
    endpoint: Endpoint,
}

impl Drive {
    /// Index of the pool (0-based, argument order).
    pub fn pool_index(&self) -> usize {
        self.pool_index
    }

    /// Index of the set within its pool (0-based).
    pub fn set_index(&self) -> usize {
        self.set_index
    }

    /// Index of the drive within its set (0-based): its column in
    /// `format.json`'s `sets`, and the position that an object's distribution
    /// (see [`crate::hash_order`]) is indexed by.
    pub fn drive_index(&self) -> usize {
        self.drive_index
    }

    /// The drive's endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// One erasure set: the drives an object is spread over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErasureSet {
    pool_index: usize,
    set_index: usize,
    drives: Vec<Drive>,
}

impl ErasureSet {
    /// Index of the pool (0-based).
    pub fn pool_index(&self) -> usize {
        self.pool_index
    }

    /// Index of the set within its pool (0-based).
    pub fn set_index(&self) -> usize {
        self.set_index
    }

    /// The drives, in set order.
    pub fn drives(&self) -> &[Drive] {
        &self.drives
    }

    /// How many of the set's drives each node holds, in order of first
    /// appearance (path endpoints count under the node `""`). MinIO warns at
    /// format time when a node holds more drives of a set than the parity:
    /// losing that node loses the set.
    pub fn drives_per_node(&self) -> Vec<(&str, usize)> {
        let mut out: Vec<(&str, usize)> = Vec::new();
        for d in &self.drives {
            let node = d.endpoint.node().unwrap_or("");
            match out.iter_mut().find(|(n, _)| *n == node) {
                Some((_, c)) => *c += 1,
                None => out.push((node, 1)),
            }
        }
        out
    }
}

/// One pool cut into sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolLayout {
    index: usize,
    cmdline: String,
    set_drive_count: usize,
    sets: Vec<ErasureSet>,
}

impl PoolLayout {
    /// Index of the pool (0-based, argument order).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The pool's argument(s), see [`PoolSpec::cmdline`].
    pub fn cmdline(&self) -> &str {
        &self.cmdline
    }

    /// Drives per erasure set.
    pub fn set_drive_count(&self) -> usize {
        self.set_drive_count
    }

    /// The sets, in order.
    pub fn sets(&self) -> &[ErasureSet] {
        &self.sets
    }

    /// Number of drives in the pool.
    pub fn drive_count(&self) -> usize {
        self.sets.len() * self.set_drive_count
    }
}

/// A deployment: pools -> sets -> drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    style: DeploymentStyle,
    pools: Vec<PoolLayout>,
}

impl Layout {
    pub(crate) fn new(topology: &Topology, override_count: Option<usize>) -> Result<Self, Error> {
        let style = topology.style();
        let mut pools = Vec::with_capacity(topology.pools().len());
        for (index, spec) in topology.pools().iter().enumerate() {
            let size = match style {
                DeploymentStyle::SingleDrive => 1,
                DeploymentStyle::Legacy | DeploymentStyle::ServerPools => choose_for_pool(
                    spec.cmdline(),
                    spec.drives().len(),
                    spec.symmetry_count(),
                    override_count,
                )?,
            };
            pools.push(cut_pool(index, spec, size));
        }
        Ok(Layout { style, pools })
    }

    /// How the arguments were written.
    pub fn style(&self) -> DeploymentStyle {
        self.style
    }

    /// The pools, in argument order.
    pub fn pools(&self) -> &[PoolLayout] {
        &self.pools
    }

    /// Total number of erasure sets over all pools.
    pub fn set_count(&self) -> usize {
        self.pools.iter().map(|p| p.sets.len()).sum()
    }

    /// Total number of drives.
    pub fn drive_count(&self) -> usize {
        self.pools.iter().map(PoolLayout::drive_count).sum()
    }

    /// Every drive, pool by pool, set by set.
    pub fn drives(&self) -> impl Iterator<Item = &Drive> {
        self.pools
            .iter()
            .flat_map(|p| p.sets.iter())
            .flat_map(|s| s.drives.iter())
    }

    /// The default standard parity of the deployment when no storage class is
    /// configured: MinIO takes it from the **first** pool's set size (see
    /// [`default_parity`]) and uses it for every pool.
    pub fn default_parity(&self) -> usize {
        self.pools
            .first()
            .map_or(0, |p| default_parity(p.set_drive_count))
    }

    /// Resolves the storage classes for this deployment as MinIO does at
    /// start-up: the configuration (`MINIO_STORAGE_CLASS_STANDARD` and
    /// `MINIO_STORAGE_CLASS_RRS`, read by the caller) is resolved and validated
    /// against the first pool's set size (see [`StorageClassConfig::resolve`]),
    /// then the standard parity must also fit every other pool (at most half
    /// its set size). A pool with smaller sets than the first can therefore
    /// be refused: its parity would exceed half its sets.
    ///
    /// ```
    /// // 16-drive sets default to EC:4; a second pool of 4-drive sets cannot carry 4.
    /// let t = placement::parse_endpoints(&["/a{1...16}", "/b{1...4}"])?;
    /// let layout = t.layout(None)?;
    /// assert!(layout.storage_class_config(None, None).is_err());
    /// let cfg = layout.storage_class_config(Some(placement::StorageClass::parse("EC:2")?), None)?;
    /// assert_eq!(cfg.standard_parity(), 2);
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn storage_class_config(
        &self,
        standard: Option<StorageClass>,
        reduced_redundancy: Option<StorageClass>,
    ) -> Result<StorageClassConfig, Error> {
        let first = self.pools.first().map_or(1, |p| p.set_drive_count);
        let config = StorageClassConfig::resolve(standard, reduced_redundancy, first)?;
        for pool in &self.pools {
            validate_parity(config.standard_parity(), pool.set_drive_count).map_err(|e| {
                Error::InvalidParity {
                    reason: format!("pool {} ('{}'): {e}", pool.index, pool.cmdline),
                }
            })?;
        }
        Ok(config)
    }
}

fn cut_pool(index: usize, spec: &PoolSpec, size: usize) -> PoolLayout {
    let sets = spec
        .drives()
        .chunks(size)
        .enumerate()
        .map(|(set_index, chunk)| ErasureSet {
            pool_index: index,
            set_index,
            drives: chunk
                .iter()
                .enumerate()
                .map(|(drive_index, endpoint)| Drive {
                    pool_index: index,
                    set_index,
                    drive_index,
                    endpoint: endpoint.clone(),
                })
                .collect(),
        })
        .collect();
    PoolLayout {
        index,
        cmdline: spec.cmdline().to_string(),
        set_drive_count: size,
        sets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_set_drive_count_picks_largest() {
        assert_eq!(common_set_drive_count(64, &[2, 4, 8, 16]), 16);
        assert_eq!(common_set_drive_count(12, &[2, 3, 4, 6, 12]), 12);
        assert_eq!(common_set_drive_count(3, &[3]), 3);
        assert_eq!(common_set_drive_count(10, &[2, 5, 10]), 10);
        assert_eq!(common_set_drive_count(5, &[]), 0);
    }

    #[test]
    fn override_zero_means_none() {
        assert_eq!(choose_set_drive_count(32, None, Some(0)).unwrap(), 16);
    }

    #[test]
    fn override_larger_than_pool() {
        assert!(matches!(
            choose_set_drive_count(8, None, Some(16)),
            Err(Error::TooFewDrives { minimum: 16, .. })
        ));
    }
}
