//! MinIO's `format.json` (erasure backend, `xl` version 3).
//!
//! Every drive of a deployment holds `<root>/.minio.sys/format.json`:
//!
//! ```json
//! {"version":"1","format":"xl","id":"<deployment uuid>",
//!  "xl":{"version":"3","this":"<this drive's uuid>",
//!        "sets":[["<uuid>","<uuid>"],["<uuid>","<uuid>"]],
//!        "distributionAlgo":"SIPMOD+PARITY"}}
//! ```
//!
//! written by MinIO as compact JSON (Go's `json.Marshal`) with exactly this
//! field order; a single-drive deployment uses `"format":"xl-single"`. The
//! `sets` matrix is the layout of the whole pool (one row per erasure set, one
//! uuid per drive), identical on every drive; `this` says which of those
//! positions the drive holds.
//!
//! This module is pure: [`build_formats`] makes the formats of a fresh
//! layout, [`FormatErasureV3::from_json`] parses and checks the version
//! fields, [`check_format`] compares a drive's format with the reference
//! one. [`load_format`], [`save_format`] and [`verify_format`] apply them to a
//! [`Drive`].

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::drive::Drive;
use crate::error::{DriveError, Result};

/// The volume holding MinIO's metadata.
pub const META_VOLUME: &str = ".minio.sys";
/// Staging area for files in flight.
pub const TMP_VOLUME: &str = ".minio.sys/tmp";
/// Deferred deletion: renamed here, emptied later.
pub const TRASH_VOLUME: &str = ".minio.sys/tmp/.trash";
/// Where [`Drive::write_all`] stages its files: [`SPREAD_DIRS`]
/// subdirectories `00`, `01`, .. taken in turn, created when first needed
/// (a local drive's `write_all` on ext4 spreads them over the block groups;
/// see `LocalDrive`). Like everything in [`TMP_VOLUME`] but the trash, it
/// holds only files in flight and is removed at start.
pub const SPREAD_VOLUME: &str = ".minio.sys/tmp/.spread";
/// Number of staging subdirectories in [`SPREAD_VOLUME`].
pub const SPREAD_DIRS: usize = 32;
/// Multipart uploads in flight.
pub const MULTIPART_VOLUME: &str = ".minio.sys/multipart";
/// Bucket metadata.
pub const BUCKETS_VOLUME: &str = ".minio.sys/buckets";
/// Server configuration.
pub const CONFIG_VOLUME: &str = ".minio.sys/config";
/// Name of the format file inside [`META_VOLUME`].
pub const FORMAT_FILE: &str = "format.json";
/// The meta volumes MinIO creates when it formats a drive.
pub const META_VOLUMES: [&str; 5] = [
    TMP_VOLUME,
    TRASH_VOLUME,
    MULTIPART_VOLUME,
    BUCKETS_VOLUME,
    CONFIG_VOLUME,
];

/// `version` of the outer format object.
pub const FORMAT_META_VERSION: &str = "1";
/// `format` of an erasure deployment.
pub const FORMAT_BACKEND_ERASURE: &str = "xl";
/// `format` of a single-drive erasure deployment.
pub const FORMAT_BACKEND_ERASURE_SINGLE: &str = "xl-single";
/// `xl.version` this crate reads and writes.
pub const FORMAT_ERASURE_VERSION: &str = "3";
/// `xl.distributionAlgo` of current deployments (SipHash of the key, EC:4
/// default parity).
pub const DISTRIBUTION_ALGO_SIPMOD_PARITY: &str = "SIPMOD+PARITY";
/// Older distribution algorithm (SipHash, N/2 default parity).
pub const DISTRIBUTION_ALGO_SIPMOD: &str = "SIPMOD";
/// Legacy distribution algorithm (CRC32 of the key).
pub const DISTRIBUTION_ALGO_CRCMOD: &str = "CRCMOD";

/// Largest `format.json` read into memory. A 16-set x 16-drive layout is
/// about 10 KiB; a thousand sets fit.
pub const MAX_FORMAT_BYTES: u64 = 1 << 20;

/// The `xl` section of `format.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ErasureSection {
    /// Erasure format version, `"3"`.
    #[serde(default)]
    pub version: String,
    /// This drive's uuid; one of the entries of `sets`.
    #[serde(default)]
    pub this: String,
    /// Drive uuids, one row per erasure set.
    #[serde(default)]
    pub sets: Vec<Vec<String>>,
    /// How objects are hashed to sets.
    #[serde(default, rename = "distributionAlgo")]
    pub distribution_algo: String,
}

/// MinIO's `formatErasureV3`, field for field and in MinIO's order, so the
/// serialised bytes equal what MinIO writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FormatErasureV3 {
    /// Format file version, `"1"`.
    #[serde(default)]
    pub version: String,
    /// Backend, `"xl"` or `"xl-single"`.
    #[serde(default)]
    pub format: String,
    /// Deployment id.
    #[serde(default)]
    pub id: String,
    /// Erasure layout.
    #[serde(default)]
    pub xl: ErasureSection,
}

/// Position of a drive in the layout: erasure set, then index in the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrivePosition {
    /// Index of the erasure set.
    pub set: usize,
    /// Index of the drive within its set.
    pub disk: usize,
}

impl fmt::Display for DrivePosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "set {} drive {}", self.set, self.disk)
    }
}

/// Why a `format.json` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Not JSON, or not the expected shape.
    #[error("corrupt format.json: {0}")]
    Corrupt(String),
    /// Larger than [`MAX_FORMAT_BYTES`].
    #[error("format.json larger than {MAX_FORMAT_BYTES} bytes")]
    TooLarge,
    /// Another backend (`fs`, a cache format, ...) or another format file
    /// version.
    #[error("unknown format: version {version:?}, backend {format:?}")]
    UnknownFormat {
        /// The outer `version` found.
        version: String,
        /// The `format` found.
        format: String,
    },
    /// An `xl` version other than 3 (MinIO migrates 1 and 2 to 3; this crate
    /// does not).
    #[error("unsupported erasure format version {0:?} (expected \"3\")")]
    UnsupportedErasureVersion(String),
    /// The layout itself is malformed: no sets, empty or unequal sets,
    /// duplicate or unparsable uuids.
    #[error("invalid layout: {0}")]
    InvalidLayout(String),
    /// The drive belongs to another deployment.
    #[error("drive belongs to deployment {found}, expected {expected}")]
    DeploymentMismatch {
        /// Deployment id of the reference.
        expected: String,
        /// Deployment id on the drive.
        found: String,
    },
    /// The drive's layout (sets matrix or distribution algorithm) differs
    /// from the reference.
    #[error("layout mismatch: {0}")]
    LayoutMismatch(String),
    /// The drive's `this` is not in the layout.
    #[error("drive id {this} is not part of the layout")]
    DriveNotInLayout {
        /// The drive's `this`.
        this: String,
    },
    /// The drive is part of the layout, but not where it was expected (it was
    /// plugged into another slot).
    #[error("drive {this} holds {found}, expected at {expected}")]
    WrongPosition {
        /// The drive's `this`.
        this: String,
        /// Where the caller expected it.
        expected: DrivePosition,
        /// Where its uuid sits in the layout.
        found: DrivePosition,
    },
    /// The drive already holds a format and overwriting was not asked for.
    #[error("drive is already formatted")]
    AlreadyFormatted,
}

fn check_layout(sets: &[Vec<String>]) -> Result<(), FormatError> {
    let first = sets
        .first()
        .ok_or_else(|| FormatError::InvalidLayout("no erasure sets".into()))?;
    if first.is_empty() {
        return Err(FormatError::InvalidLayout("empty erasure set".into()));
    }
    let mut seen = HashSet::new();
    for (set_index, set) in sets.iter().enumerate() {
        if set.len() != first.len() {
            return Err(FormatError::InvalidLayout(format!(
                "set {set_index} has {} drives, set 0 has {}",
                set.len(),
                first.len()
            )));
        }
        for id in set {
            let parsed = Uuid::parse_str(id)
                .map_err(|e| FormatError::InvalidLayout(format!("drive id {id:?}: {e}")))?;
            if parsed.is_nil() {
                return Err(FormatError::InvalidLayout("nil drive id".into()));
            }
            if !seen.insert(parsed) {
                return Err(FormatError::InvalidLayout(format!(
                    "drive id {id} appears twice"
                )));
            }
        }
    }
    Ok(())
}

impl FormatErasureV3 {
    /// Parses `format.json` and checks that it is an erasure format of a
    /// version this crate understands, with a well-formed layout. It does not
    /// compare it with any reference: see [`check_format`].
    pub fn from_json(bytes: &[u8]) -> Result<Self, FormatError> {
        if bytes.len() as u64 > MAX_FORMAT_BYTES {
            return Err(FormatError::TooLarge);
        }
        let format: FormatErasureV3 =
            serde_json::from_slice(bytes).map_err(|e| FormatError::Corrupt(e.to_string()))?;
        if format.version != FORMAT_META_VERSION
            || (format.format != FORMAT_BACKEND_ERASURE
                && format.format != FORMAT_BACKEND_ERASURE_SINGLE)
        {
            return Err(FormatError::UnknownFormat {
                version: format.version,
                format: format.format,
            });
        }
        if format.xl.version != FORMAT_ERASURE_VERSION {
            return Err(FormatError::UnsupportedErasureVersion(format.xl.version));
        }
        check_layout(&format.xl.sets)?;
        Ok(format)
    }

    /// Compact JSON, byte-identical to MinIO's `json.Marshal` of the same
    /// value.
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising plain strings and vectors cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Number of drives in the layout.
    pub fn drive_count(&self) -> usize {
        self.xl.sets.iter().map(Vec::len).sum()
    }

    /// Where `this` sits in the layout.
    pub fn position(&self) -> Option<DrivePosition> {
        self.position_of(&self.xl.this)
    }

    /// Where `drive_id` sits in the layout.
    pub fn position_of(&self, drive_id: &str) -> Option<DrivePosition> {
        self.xl.sets.iter().enumerate().find_map(|(set, drives)| {
            drives
                .iter()
                .position(|id| id == drive_id)
                .map(|disk| DrivePosition { set, disk })
        })
    }

    /// This drive's uuid, if it parses.
    pub fn this_id(&self) -> Option<Uuid> {
        Uuid::parse_str(&self.xl.this).ok()
    }

    /// The deployment id, if it parses.
    pub fn deployment_id(&self) -> Option<Uuid> {
        Uuid::parse_str(&self.id).ok()
    }
}

/// Builds the formats of a fresh layout: one per drive, in layout order (set
/// by set), each with its own `this`. `sets` must be non-empty, rectangular,
/// with distinct non-nil uuids. A single set of a single drive gets MinIO's
/// `xl-single` backend name.
pub fn build_formats(
    deployment_id: Uuid,
    sets: &[Vec<Uuid>],
) -> Result<Vec<FormatErasureV3>, FormatError> {
    if deployment_id.is_nil() {
        return Err(FormatError::InvalidLayout("nil deployment id".into()));
    }
    let sets: Vec<Vec<String>> = sets
        .iter()
        .map(|set| set.iter().map(Uuid::to_string).collect())
        .collect();
    check_layout(&sets)?;
    let single = sets.len() == 1 && sets[0].len() == 1;
    let template = FormatErasureV3 {
        version: FORMAT_META_VERSION.to_string(),
        format: if single {
            FORMAT_BACKEND_ERASURE_SINGLE
        } else {
            FORMAT_BACKEND_ERASURE
        }
        .to_string(),
        id: deployment_id.to_string(),
        xl: ErasureSection {
            version: FORMAT_ERASURE_VERSION.to_string(),
            this: String::new(),
            sets: sets.clone(),
            distribution_algo: DISTRIBUTION_ALGO_SIPMOD_PARITY.to_string(),
        },
    };
    Ok(sets
        .iter()
        .flatten()
        .map(|this| {
            let mut format = template.clone();
            format.xl.this = this.clone();
            format
        })
        .collect())
}

/// Checks a drive's `found` format against the deployment's `reference`
/// (whose `this` is ignored): same deployment id, same backend, same sets
/// matrix and distribution algorithm, and a `this` that is in the layout —
/// at `expected` when given. Returns the drive's position.
pub fn check_format(
    reference: &FormatErasureV3,
    found: &FormatErasureV3,
    expected: Option<DrivePosition>,
) -> Result<DrivePosition, FormatError> {
    if found.id != reference.id {
        return Err(FormatError::DeploymentMismatch {
            expected: reference.id.clone(),
            found: found.id.clone(),
        });
    }
    if found.format != reference.format || found.version != reference.version {
        return Err(FormatError::UnknownFormat {
            version: found.version.clone(),
            format: found.format.clone(),
        });
    }
    if found.xl.version != reference.xl.version {
        return Err(FormatError::UnsupportedErasureVersion(
            found.xl.version.clone(),
        ));
    }
    if found.xl.sets.len() != reference.xl.sets.len() {
        return Err(FormatError::LayoutMismatch(format!(
            "expected {} sets, found {}",
            reference.xl.sets.len(),
            found.xl.sets.len()
        )));
    }
    for (set, (want, have)) in reference.xl.sets.iter().zip(&found.xl.sets).enumerate() {
        if want.len() != have.len() {
            return Err(FormatError::LayoutMismatch(format!(
                "set {set}: expected {} drives, found {}",
                want.len(),
                have.len()
            )));
        }
        if let Some(disk) = want.iter().zip(have).position(|(a, b)| a != b) {
            return Err(FormatError::LayoutMismatch(format!(
                "set {set} drive {disk}: expected {}, found {}",
                want[disk], have[disk]
            )));
        }
    }
    if found.xl.distribution_algo != reference.xl.distribution_algo {
        return Err(FormatError::LayoutMismatch(format!(
            "distribution algorithm {:?}, expected {:?}",
            found.xl.distribution_algo, reference.xl.distribution_algo
        )));
    }
    let position = found
        .position()
        .ok_or_else(|| FormatError::DriveNotInLayout {
            this: found.xl.this.clone(),
        })?;
    if let Some(expected) = expected
        && expected != position
    {
        return Err(FormatError::WrongPosition {
            this: found.xl.this.clone(),
            expected,
            found: position,
        });
    }
    Ok(position)
}

/// Reads and parses a drive's `format.json`. A drive without one (or without
/// `.minio.sys`) is [`DriveError::Unformatted`]; an unreadable one is
/// [`DriveError::Format`].
pub async fn load_format(drive: &dyn Drive) -> Result<FormatErasureV3> {
    match drive
        .read_all(META_VOLUME, FORMAT_FILE, MAX_FORMAT_BYTES)
        .await
    {
        Ok(bytes) => Ok(FormatErasureV3::from_json(&bytes)?),
        Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => Err(DriveError::Unformatted),
        Err(DriveError::TooLarge { .. }) => Err(FormatError::TooLarge.into()),
        Err(e) => Err(e),
    }
}

/// Formats a drive: creates MinIO's meta volumes and writes `format` as
/// `.minio.sys/format.json` atomically and durably (see
/// [`Drive::write_all`]). Refuses a drive that already has a format unless
/// `overwrite` (used when healing a drive's format). Sets the drive's id.
pub async fn save_format(
    drive: &dyn Drive,
    format: &FormatErasureV3,
    overwrite: bool,
) -> Result<()> {
    check_layout(&format.xl.sets)?;
    if format.position().is_none() {
        return Err(FormatError::DriveNotInLayout {
            this: format.xl.this.clone(),
        }
        .into());
    }
    if !overwrite {
        match drive.stat_file(META_VOLUME, FORMAT_FILE).await {
            Ok(_) => return Err(FormatError::AlreadyFormatted.into()),
            Err(DriveError::FileNotFound | DriveError::VolumeNotFound) => {}
            Err(e) => return Err(e),
        }
    }
    for volume in [META_VOLUME].into_iter().chain(META_VOLUMES) {
        match drive.make_volume(volume).await {
            Ok(()) | Err(DriveError::VolumeExists) => {}
            Err(e) => return Err(e),
        }
    }
    drive
        .write_all(META_VOLUME, FORMAT_FILE, format.to_json())
        .await?;
    drive.set_id(format.this_id());
    Ok(())
}

/// Loads a drive's format, checks it against `reference` (and the expected
/// position, when given) and, when it passes, sets the drive's id to its
/// `this`. An unformatted drive yields [`DriveError::Unformatted`] so the
/// caller can format it with the format [`build_formats`] made for that
/// position.
pub async fn verify_format(
    drive: &dyn Drive,
    reference: &FormatErasureV3,
    expected: Option<DrivePosition>,
) -> Result<FormatErasureV3> {
    let found = load_format(drive).await?;
    check_format(reference, &found, expected)?;
    drive.set_id(found.this_id());
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<Uuid> {
        (0..n).map(|_| Uuid::new_v4()).collect()
    }

    #[test]
    fn json_is_minio_shaped() {
        let dep = Uuid::parse_str("11111111-2222-4333-8444-555555555555").unwrap();
        let a = Uuid::parse_str("aaaaaaaa-0000-4000-8000-000000000001").unwrap();
        let b = Uuid::parse_str("bbbbbbbb-0000-4000-8000-000000000002").unwrap();
        let formats = build_formats(dep, &[vec![a, b]]).unwrap();
        assert_eq!(
            String::from_utf8(formats[1].to_json()).unwrap(),
            concat!(
                r#"{"version":"1","format":"xl","id":"11111111-2222-4333-8444-555555555555","#,
                r#""xl":{"version":"3","this":"bbbbbbbb-0000-4000-8000-000000000002","#,
                r#""sets":[["aaaaaaaa-0000-4000-8000-000000000001","bbbbbbbb-0000-4000-8000-000000000002"]],"#,
                r#""distributionAlgo":"SIPMOD+PARITY"}}"#
            )
        );
        let parsed = FormatErasureV3::from_json(&formats[1].to_json()).unwrap();
        assert_eq!(parsed, formats[1]);
    }

    #[test]
    fn build_one_per_drive_in_order() {
        let sets = vec![ids(4), ids(4), ids(4)];
        let formats = build_formats(Uuid::new_v4(), &sets).unwrap();
        assert_eq!(formats.len(), 12);
        for (i, format) in formats.iter().enumerate() {
            let position = DrivePosition {
                set: i / 4,
                disk: i % 4,
            };
            assert_eq!(format.position(), Some(position));
            assert_eq!(format.this_id(), Some(sets[i / 4][i % 4]));
            assert_eq!(
                check_format(&formats[0], format, Some(position)),
                Ok(position)
            );
            assert_eq!(format.format, "xl");
        }
        let single = build_formats(Uuid::new_v4(), &[ids(1)]).unwrap();
        assert_eq!(single[0].format, "xl-single");
    }

    #[test]
    fn build_refuses_bad_layouts() {
        let dep = Uuid::new_v4();
        assert!(matches!(
            build_formats(dep, &[]),
            Err(FormatError::InvalidLayout(_))
        ));
        assert!(matches!(
            build_formats(dep, &[vec![]]),
            Err(FormatError::InvalidLayout(_))
        ));
        assert!(matches!(
            build_formats(dep, &[ids(2), ids(3)]),
            Err(FormatError::InvalidLayout(_))
        ));
        let dup = Uuid::new_v4();
        assert!(matches!(
            build_formats(dep, &[vec![dup, dup]]),
            Err(FormatError::InvalidLayout(_))
        ));
        assert!(matches!(
            build_formats(Uuid::nil(), &[ids(2)]),
            Err(FormatError::InvalidLayout(_))
        ));
    }

    #[test]
    fn check_refuses_foreign_and_misplaced_drives() {
        let sets = vec![ids(2), ids(2)];
        let formats = build_formats(Uuid::new_v4(), &sets).unwrap();
        let reference = &formats[0];

        let other = build_formats(Uuid::new_v4(), &sets).unwrap();
        assert!(matches!(
            check_format(reference, &other[1], None),
            Err(FormatError::DeploymentMismatch { .. })
        ));

        let expected = DrivePosition { set: 0, disk: 1 };
        assert_eq!(
            check_format(reference, &formats[2], Some(expected)),
            Err(FormatError::WrongPosition {
                this: sets[1][0].to_string(),
                expected,
                found: DrivePosition { set: 1, disk: 0 },
            })
        );

        let mut stranger = formats[1].clone();
        stranger.xl.this = Uuid::new_v4().to_string();
        assert!(matches!(
            check_format(reference, &stranger, None),
            Err(FormatError::DriveNotInLayout { .. })
        ));

        let mut reordered = formats[1].clone();
        reordered.xl.sets[0].swap(0, 1);
        assert!(matches!(
            check_format(reference, &reordered, None),
            Err(FormatError::LayoutMismatch(_))
        ));

        let mut algo = formats[1].clone();
        algo.xl.distribution_algo = DISTRIBUTION_ALGO_CRCMOD.into();
        assert!(matches!(
            check_format(reference, &algo, None),
            Err(FormatError::LayoutMismatch(_))
        ));
    }

    #[test]
    fn parse_refuses_unknown_and_corrupt() {
        assert!(matches!(
            FormatErasureV3::from_json(b"{not json"),
            Err(FormatError::Corrupt(_))
        ));
        assert!(matches!(
            FormatErasureV3::from_json(b""),
            Err(FormatError::Corrupt(_))
        ));
        assert!(matches!(
            FormatErasureV3::from_json(b"[1,2]"),
            Err(FormatError::Corrupt(_))
        ));
        let fs = br#"{"version":"1","format":"fs","id":"x","fs":{"version":"2"}}"#;
        assert!(matches!(
            FormatErasureV3::from_json(fs),
            Err(FormatError::UnknownFormat { .. })
        ));
        let v2 = br#"{"version":"1","format":"xl","id":"","xl":{"version":"2","this":"","sets":[],"distributionAlgo":"CRCMOD"}}"#;
        assert!(matches!(
            FormatErasureV3::from_json(v2),
            Err(FormatError::UnsupportedErasureVersion(_))
        ));
        let big = vec![b' '; MAX_FORMAT_BYTES as usize + 1];
        assert!(matches!(
            FormatErasureV3::from_json(&big),
            Err(FormatError::TooLarge)
        ));
        // Unknown extra fields are ignored, as Go's decoder does.
        let formats = build_formats(Uuid::new_v4(), &[ids(2)]).unwrap();
        let mut value: serde_json::Value = serde_json::from_slice(&formats[0].to_json()).unwrap();
        value["extra"] = serde_json::json!(42);
        let parsed = FormatErasureV3::from_json(&serde_json::to_vec(&value).unwrap()).unwrap();
        assert_eq!(parsed, formats[0]);
    }
}
