//! Parity, storage classes and quorum.
//!
//! MinIO's rules (internal/config/storageclass/storage-class.go; the quorum
//! rule from cmd/erasure-object.go and cmd/erasure-metadata.go):
//!
//! * Default standard parity by set size (`DefaultParityBlocks`): 1 drive -> 0,
//!   2-3 -> 1, 4-5 -> 2, 6-7 -> 3, 8 and more -> 4.
//! * Default reduced-redundancy parity: 1 (0 for a single drive).
//! * A storage class value is `EC:<n>`: exactly two `:`-separated parts, the
//!   scheme exactly `EC`, `n` a base-10 integer (an optional sign, as Go's
//!   `strconv.Atoi` takes), not negative.
//! * Validation against the set size `s`: if `s > 2`, both parities are at most
//!   `s / 2`; if both are above 0, standard >= reduced redundancy. At pool
//!   set-up the standard parity must be at most `s / 2` for every pool,
//!   whatever `s`.
//! * Per object: `data = s - parity`; read quorum = data; write quorum = data,
//!   plus one when data == parity (so that any write quorum and any read
//!   quorum overlap).

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// Reduced-redundancy parity when none is configured (single drive: 0).
pub const DEFAULT_RRS_PARITY: usize = 1;

/// MinIO's default standard parity for an erasure set of `set_drive_count`
/// drives (`DefaultParityBlocks`): 1 -> 0, 2..=3 -> 1, 4..=5 -> 2, 6..=7 -> 3,
/// anything else -> 4 (including 0, as in MinIO).
///
/// ```
/// use placement::default_parity;
/// assert_eq!([1, 2, 3, 4, 5, 6, 7, 8, 16].map(default_parity), [0, 1, 1, 2, 2, 3, 3, 4, 4]);
/// ```
pub fn default_parity(set_drive_count: usize) -> usize {
    match set_drive_count {
        1 => 0,
        2 | 3 => 1,
        4 | 5 => 2,
        6 | 7 => 3,
        _ => 4,
    }
}

/// MinIO's `ValidateParity`: the standard parity must be at most half the set
/// size. Checked for every pool at start-up.
pub fn validate_parity(parity: usize, set_drive_count: usize) -> Result<(), Error> {
    if parity > set_drive_count / 2 {
        return Err(Error::InvalidParity {
            reason: format!(
                "parity {parity} is more than half of the {set_drive_count} drives of a set \
                 (at most {})",
                set_drive_count / 2
            ),
        });
    }
    Ok(())
}

/// A storage class value, `EC:<parity>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StorageClass {
    parity: usize,
}

impl StorageClass {
    /// A storage class with the given parity.
    pub fn new(parity: usize) -> Self {
        StorageClass { parity }
    }

    /// Parses `EC:<n>` as MinIO does.
    ///
    /// ```
    /// use placement::StorageClass;
    /// assert_eq!(StorageClass::parse("EC:2")?.parity(), 2);
    /// assert!(StorageClass::parse("ec:2").is_err());
    /// assert!(StorageClass::parse("EC:-1").is_err());
    /// assert!(StorageClass::parse("EC:2:1").is_err());
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn parse(value: &str) -> Result<Self, Error> {
        let bad = |reason: String| Error::InvalidStorageClass {
            value: value.to_string(),
            reason,
        };
        let parts: Vec<&str> = value.split(':').collect();
        if parts.len() > 2 {
            return Err(bad("too many ':'-separated parts".to_string()));
        }
        if parts.len() < 2 {
            return Err(bad("missing ':' between scheme and parity".to_string()));
        }
        if parts[0] != "EC" {
            return Err(bad(format!(
                "unsupported scheme '{}', the only scheme is EC (upper case)",
                parts[0]
            )));
        }
        let n: i64 = parts[1]
            .parse()
            .map_err(|_| bad(format!("parity '{}' is not an integer", parts[1])))?;
        let parity = usize::try_from(n).map_err(|_| bad(format!("parity {n} is negative")))?;
        Ok(StorageClass { parity })
    }

    /// The number of parity shards.
    pub fn parity(&self) -> usize {
        self.parity
    }
}

impl FromStr for StorageClass {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        StorageClass::parse(s)
    }
}

impl fmt::Display for StorageClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EC:{}", self.parity)
    }
}

/// The storage class an object is written with (`x-amz-storage-class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageClassName {
    /// `STANDARD`
    Standard,
    /// `REDUCED_REDUNDANCY`
    ReducedRedundancy,
}

impl StorageClassName {
    /// MinIO's `storageclass.IsValid`: exactly `STANDARD` or
    /// `REDUCED_REDUNDANCY` (any other header value is refused by the API).
    pub fn parse(header: &str) -> Option<Self> {
        match header {
            "STANDARD" => Some(StorageClassName::Standard),
            "REDUCED_REDUNDANCY" => Some(StorageClassName::ReducedRedundancy),
            _ => None,
        }
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageClassName::Standard => "STANDARD",
            StorageClassName::ReducedRedundancy => "REDUCED_REDUNDANCY",
        }
    }
}

/// The resolved parities of the two storage classes of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StorageClassConfig {
    standard_parity: usize,
    rrs_parity: usize,
}

impl StorageClassConfig {
    /// MinIO's `LookupConfig`: configured values, or defaults for
    /// `set_drive_count` ([`default_parity`]; [`DEFAULT_RRS_PARITY`], 0 for a
    /// single drive), then validated: for sets of more than 2 drives, both
    /// parities at most half the set; standard >= reduced redundancy when both
    /// are above 0.
    ///
    /// ```
    /// use placement::{StorageClass, StorageClassConfig};
    /// let c = StorageClassConfig::resolve(None, None, 16)?;
    /// assert_eq!((c.standard_parity(), c.rrs_parity()), (4, 1));
    /// let ec = |s| StorageClass::parse(s);
    /// assert!(StorageClassConfig::resolve(Some(ec("EC:9")?), None, 16).is_err());
    /// assert!(StorageClassConfig::resolve(Some(ec("EC:2")?), Some(ec("EC:3")?), 16).is_err());
    /// # Ok::<(), placement::Error>(())
    /// ```
    pub fn resolve(
        standard: Option<StorageClass>,
        reduced_redundancy: Option<StorageClass>,
        set_drive_count: usize,
    ) -> Result<Self, Error> {
        let standard_parity =
            standard.map_or_else(|| default_parity(set_drive_count), |s| s.parity);
        let rrs_parity = reduced_redundancy.map_or(
            if set_drive_count == 1 {
                0
            } else {
                DEFAULT_RRS_PARITY
            },
            |s| s.parity,
        );
        let half = set_drive_count / 2;
        if set_drive_count > 2 {
            if standard_parity > half {
                return Err(Error::InvalidParity {
                    reason: format!(
                        "standard storage class parity {standard_parity} should be at most {half} \
                         (half of {set_drive_count} drives per set)"
                    ),
                });
            }
            if rrs_parity > half {
                return Err(Error::InvalidParity {
                    reason: format!(
                        "reduced redundancy storage class parity {rrs_parity} should be at most \
                         {half} (half of {set_drive_count} drives per set)"
                    ),
                });
            }
        }
        if standard_parity > 0 && rrs_parity > 0 && standard_parity < rrs_parity {
            return Err(Error::InvalidParity {
                reason: format!(
                    "standard storage class parity {standard_parity} should be at least the \
                     reduced redundancy parity {rrs_parity}"
                ),
            });
        }
        Ok(StorageClassConfig {
            standard_parity,
            rrs_parity,
        })
    }

    /// Parity of the `STANDARD` class.
    pub fn standard_parity(&self) -> usize {
        self.standard_parity
    }

    /// Parity of the `REDUCED_REDUNDANCY` class.
    pub fn rrs_parity(&self) -> usize {
        self.rrs_parity
    }

    /// MinIO's `GetParityForSC`: the header value, trimmed, selects
    /// reduced redundancy when it is `REDUCED_REDUNDANCY`; anything else
    /// (including empty) selects standard.
    pub fn parity_for(&self, storage_class_header: &str) -> usize {
        match storage_class_header.trim() {
            "REDUCED_REDUNDANCY" => self.rrs_parity,
            _ => self.standard_parity,
        }
    }

    /// Data/parity split and quorum for an object of the given storage class
    /// in a set of `set_drive_count` drives.
    pub fn erasure_params(
        &self,
        storage_class_header: &str,
        set_drive_count: usize,
    ) -> Result<ErasureParams, Error> {
        ErasureParams::new(set_drive_count, self.parity_for(storage_class_header))
    }
}

/// How many drives must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quorum {
    /// Drives that must agree to read an object: the data shard count.
    pub read: usize,
    /// Drives that must acknowledge a write: the data shard count, plus one
    /// when data and parity are equal.
    pub write: usize,
}

impl Quorum {
    /// Quorum of an object with `data` data shards and `parity` parity shards.
    ///
    /// ```
    /// use placement::Quorum;
    /// assert_eq!(Quorum::new(12, 4), Quorum { read: 12, write: 12 });
    /// assert_eq!(Quorum::new(2, 2), Quorum { read: 2, write: 3 });
    /// ```
    pub fn new(data: usize, parity: usize) -> Self {
        Quorum {
            read: data,
            write: data + usize::from(data == parity),
        }
    }
}

/// The erasure-code shape of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErasureParams {
    /// Data shards.
    pub data: usize,
    /// Parity shards.
    pub parity: usize,
}

impl ErasureParams {
    /// `set_drive_count - parity` data shards; refused when that leaves no
    /// data shard.
    pub fn new(set_drive_count: usize, parity: usize) -> Result<Self, Error> {
        match set_drive_count.checked_sub(parity) {
            Some(data) if data > 0 => Ok(ErasureParams { data, parity }),
            _ => Err(Error::InvalidParity {
                reason: format!(
                    "parity {parity} leaves no data shard in a set of {set_drive_count} drives"
                ),
            }),
        }
    }

    /// Total shards (the set's drive count).
    pub fn total(&self) -> usize {
        self.data + self.parity
    }

    /// Read and write quorum.
    pub fn quorum(&self) -> Quorum {
        Quorum::new(self.data, self.parity)
    }
}
