//! Object key -> erasure set, and shard order inside the set.
//!
//! MinIO's rules:
//!
//! * Set index (cmd/erasure-sets.go, `hashKey`, `sipHashMod`, `crcHashMod`):
//!   the distribution algorithm recorded in `format.json`
//!   (`xl.distributionAlgo`, cmd/format-erasure.go) selects the hash.
//!   `SIPMOD` and `SIPMOD+PARITY` (current): SipHash-2-4 of the key bytes,
//!   keyed by the deployment id (`format.json`'s `id`, a UUID, as its 16 bytes
//!   in RFC 4122 order; the two 64-bit SipHash keys are bytes 0..8 and 8..16
//!   read little-endian), modulo the pool's set count. `CRCMOD` (format v2
//!   deployments, still honored after migration to v3): CRC-32/IEEE of the
//!   key modulo the set count.
//! * The key hashed for the set is the **object name alone**, without the
//!   bucket, after the directory-object encoding: a name ending in `/` loses
//!   the slash and gains `__XLDIR__` (cmd/erasure-server-pool.go calls
//!   `encodeDirObject` before the per-pool layer hashes). See [`set_key`].
//! * Shard order (cmd/erasure-metadata-utils.go, `hashOrder`): from
//!   `c = crc32_ieee(key) % n`, position `i` (0-based) of the distribution is
//!   `1 + (c + i + 1) % n`: a rotation of `1..=n`. The key is
//!   `bucket/object` joined and cleaned as MinIO's `pathJoin` does (see
//!   [`distribution_key`]). `distribution[i]` is the 1-based shard number that
//!   drive `i` of the set holds (MinIO's `shuffleDisks` puts drive `i` at
//!   shard slot `distribution[i] - 1`).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use siphasher::sip::SipHasher24;
use uuid::Uuid;

use crate::Error;
use crate::endpoint::clean_path;

/// The suffix MinIO gives directory objects (names ending in `/`).
pub const DIR_OBJECT_SUFFIX: &str = "__XLDIR__";

/// How objects are spread over the sets of a pool (`format.json`'s
/// `xl.distributionAlgo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DistributionAlgo {
    /// `"CRCMOD"`: CRC-32/IEEE modulo the set count (format v2 deployments).
    CrcMod,
    /// `"SIPMOD"`: SipHash-2-4 keyed by the deployment id, modulo the set
    /// count. Historically paired with a default parity of half the set.
    SipMod,
    /// `"SIPMOD+PARITY"`: the same hash as `SipMod`; the algorithm of every
    /// deployment formatted by current MinIO.
    SipModParity,
}

impl DistributionAlgo {
    /// What MinIO writes for a fresh deployment.
    pub const CURRENT: DistributionAlgo = DistributionAlgo::SipModParity;

    /// Parses the name found in `format.json` (exact, case-sensitive).
    pub fn from_format_name(name: &str) -> Result<Self, Error> {
        match name {
            "CRCMOD" => Ok(DistributionAlgo::CrcMod),
            "SIPMOD" => Ok(DistributionAlgo::SipMod),
            "SIPMOD+PARITY" => Ok(DistributionAlgo::SipModParity),
            _ => Err(Error::UnknownDistributionAlgo {
                name: name.to_string(),
            }),
        }
    }

    /// The name written in `format.json`.
    pub fn format_name(self) -> &'static str {
        match self {
            DistributionAlgo::CrcMod => "CRCMOD",
            DistributionAlgo::SipMod => "SIPMOD",
            DistributionAlgo::SipModParity => "SIPMOD+PARITY",
        }
    }
}

impl FromStr for DistributionAlgo {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        DistributionAlgo::from_format_name(s)
    }
}

impl fmt::Display for DistributionAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.format_name())
    }
}

/// SipHash-2-4 of `key` keyed by the deployment id, as MinIO computes it.
pub fn sip_hash64(key: &[u8], deployment_id: &Uuid) -> u64 {
    SipHasher24::new_with_key(deployment_id.as_bytes()).hash(key)
}

/// CRC-32/IEEE of `key`.
pub fn crc32_ieee(key: &[u8]) -> u32 {
    crc32fast::hash(key)
}

/// The index (0-based) of the erasure set that holds `key` in a pool of
/// `set_count` sets. `key` is the set key (see [`set_key`]).
///
/// ```
/// use placement::{DistributionAlgo, set_index_for};
/// let id = uuid::Uuid::parse_str("f5c7b9d0-6a0e-4d5c-9b8e-0a1b2c3d4e5f").unwrap();
/// let set = set_index_for("photos/2024/01/img_0001.jpg", &id, 16, DistributionAlgo::CURRENT)?;
/// assert!(set < 16);
/// // The legacy algorithm ignores the deployment id.
/// assert_eq!(set_index_for("a", &id, 4, DistributionAlgo::CrcMod)?, 3);
/// # Ok::<(), placement::Error>(())
/// ```
pub fn set_index_for(
    key: impl AsRef<[u8]>,
    deployment_id: &Uuid,
    set_count: usize,
    algo: DistributionAlgo,
) -> Result<usize, Error> {
    if set_count == 0 {
        return Err(Error::ZeroSetCount);
    }
    let key = key.as_ref();
    let index = match algo {
        DistributionAlgo::CrcMod => u64::from(crc32_ieee(key)) % set_count as u64,
        DistributionAlgo::SipMod | DistributionAlgo::SipModParity => {
            sip_hash64(key, deployment_id) % set_count as u64
        }
    };
    // index < set_count, which is a usize.
    Ok(usize::try_from(index).unwrap_or(0))
}

/// MinIO's `hashOrder`: the distribution of an object's shards over a set of
/// `cardinality` drives, 1-based. Empty for a cardinality of 0.
///
/// ```
/// let order = placement::hash_order("bucket/object", 4);
/// let mut sorted = order.clone();
/// sorted.sort();
/// assert_eq!(sorted, [1, 2, 3, 4]);
/// ```
pub fn hash_order(key: impl AsRef<[u8]>, cardinality: usize) -> Vec<usize> {
    let mut out = vec![0; cardinality];
    hash_order_into(key, &mut out);
    out
}

/// [`hash_order`] without allocating: fills `out`, whose length is the
/// cardinality.
pub fn hash_order_into(key: impl AsRef<[u8]>, out: &mut [usize]) {
    let n = out.len();
    if n == 0 {
        return;
    }
    let n64 = n as u64;
    let start = u64::from(crc32_ieee(key.as_ref())) % n64;
    for (i, slot) in out.iter_mut().enumerate() {
        // (start + i + 1) % n < n, which is a usize.
        let rotated = (start + i as u64 + 1) % n64;
        *slot = 1 + usize::try_from(rotated).unwrap_or(0);
    }
}

/// MinIO's directory-object encoding: `"a/b/"` becomes `"a/b__XLDIR__"`; other
/// names are unchanged. This is the key hashed to choose the set.
pub fn set_key(object: &str) -> Cow<'_, str> {
    match object.strip_suffix('/') {
        Some(stem) => Cow::Owned(format!("{stem}{DIR_OBJECT_SUFFIX}")),
        None => Cow::Borrowed(object),
    }
}

/// The key of an object's shard distribution: MinIO's
/// `pathJoin(bucket, set_key(object))` (joined with `/`, cleaned as Go's
/// `path.Clean` does, a trailing `/` of the last element kept; a leading
/// empty element is skipped).
///
/// ```
/// assert_eq!(placement::distribution_key("photos", "2024//01/./img.jpg"), "photos/2024/01/img.jpg");
/// assert_eq!(placement::distribution_key("b", "dir/"), "b/dir__XLDIR__");
/// ```
pub fn distribution_key(bucket: &str, object: &str) -> String {
    let object = set_key(object);
    path_join(&[bucket, &object])
}

fn path_join(elems: &[&str]) -> String {
    let trailing = elems.last().is_some_and(|e| e.ends_with('/'));
    let mut joined = String::new();
    let mut added = 0;
    for e in elems {
        if added > 0 || !e.is_empty() {
            if added > 0 {
                joined.push('/');
            }
            joined.push_str(e);
            added += e.len();
        }
    }
    let mut cleaned = clean_path(&joined);
    if trailing {
        cleaned.push('/');
    }
    cleaned
}

/// Where an object's shards go inside a pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectPlacement {
    /// Index of the erasure set within the pool.
    pub set_index: usize,
    /// 1-based shard number held by each drive of the set, by drive index.
    pub distribution: Vec<usize>,
}

/// Set and shard distribution of `bucket`/`object` in a pool of `set_count`
/// sets of `set_drive_count` drives. `object` is the name as the client sent
/// it (directory objects end in `/`).
///
/// ```
/// use placement::{DistributionAlgo, object_placement};
/// let id = uuid::Uuid::nil();
/// let p = object_placement("bucket", "object", &id, 4, 16, DistributionAlgo::CURRENT)?;
/// assert!(p.set_index < 4);
/// assert_eq!(p.distribution.len(), 16);
/// # Ok::<(), placement::Error>(())
/// ```
pub fn object_placement(
    bucket: &str,
    object: &str,
    deployment_id: &Uuid,
    set_count: usize,
    set_drive_count: usize,
    algo: DistributionAlgo,
) -> Result<ObjectPlacement, Error> {
    let set_index = set_index_for(set_key(object).as_bytes(), deployment_id, set_count, algo)?;
    Ok(ObjectPlacement {
        set_index,
        distribution: hash_order(distribution_key(bucket, object), set_drive_count),
    })
}

/// For each shard (0-based), the index of the drive that holds it: the
/// inverse of a distribution. Writes into `out` (same length as
/// `distribution`); returns `false`, leaving `out` unspecified, if
/// `distribution` is not a permutation of `1..=n`.
///
/// ```
/// let mut drives = [0; 4];
/// assert!(placement::drives_by_shard(&[2, 3, 4, 1], &mut drives));
/// assert_eq!(drives, [3, 0, 1, 2]); // shard 1 is on drive 3
/// ```
pub fn drives_by_shard(distribution: &[usize], out: &mut [usize]) -> bool {
    let n = distribution.len();
    if out.len() != n {
        return false;
    }
    out.fill(usize::MAX);
    for (drive, &shard) in distribution.iter().enumerate() {
        match shard.checked_sub(1) {
            Some(slot) if slot < n && out[slot] == usize::MAX => out[slot] = drive,
            _ => return false,
        }
    }
    true
}
