//! MinIO's bucket metadata file, `.minio.sys/buckets/<bucket>/.metadata.bin`.
//!
//! # Layout
//!
//! ```text
//! u16le format  = 1
//! u16le version = 1
//! msgpack map (msgp encoding of MinIO's BucketMetadata), 25 entries in
//! this order:
//!   Name (str)  Created (time)  LockEnabled (bool)
//!   PolicyConfigJSON  NotificationConfigXML  LifecycleConfigXML
//!   ObjectLockConfigXML  VersioningConfigXML  EncryptionConfigXML
//!   TaggingConfigXML  QuotaConfigJSON  ReplicationConfigXML
//!   BucketTargetsConfigJSON  BucketTargetsConfigMetaJSON          (bin each)
//!   PolicyConfigUpdatedAt  ObjectLockConfigUpdatedAt  EncryptionConfigUpdatedAt
//!   TaggingConfigUpdatedAt  QuotaConfigUpdatedAt  ReplicationConfigUpdatedAt
//!   VersioningConfigUpdatedAt  LifecycleConfigUpdatedAt
//!   NotificationConfigUpdatedAt  BucketTargetsConfigUpdatedAt
//!   BucketTargetsConfigMetaUpdatedAt                              (time each)
//! ```
//!
//! Every field is always written (empty configs as empty `bin`, unset times
//! as Go's zero time). Times use msgp's extension type 5 ([`MsgTime`]).
//!
//! Note that MinIO stores this file *as an object* of the `.minio.sys`
//! volume: on a drive it is the inline data of
//! `.minio.sys/buckets/<bucket>/.metadata.bin/xl.meta`, erasure coded and
//! bitrot framed like any small object. This module handles the decoded
//! object content.

use std::borrow::Cow;

use crate::msgp::{DecodeError, MsgTime, Reader, Writer};
use crate::text::{IntoOwned, RawField, Text};

/// The format number MinIO writes and accepts (`bucketMetadataFormat`).
pub const FORMAT: u16 = 1;
/// The version number MinIO writes and accepts (`bucketMetadataVersion`).
pub const VERSION: u16 = 1;

/// Errors decoding or encoding `.metadata.bin`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Four bytes or fewer (MinIO: "no data").
    #[error(".metadata.bin too short ({len} bytes)")]
    TooShort {
        /// The input length.
        len: usize,
    },
    /// A format number other than [`FORMAT`].
    #[error("unknown bucket metadata format {0}")]
    UnsupportedFormat(u16),
    /// A version number other than [`VERSION`].
    #[error("unknown bucket metadata version {0}")]
    UnsupportedVersion(u16),
    /// A msgpack value could not be read.
    #[error(".metadata.bin: malformed {context}: {source}")]
    Malformed {
        /// Which field.
        context: &'static str,
        /// What went wrong.
        #[source]
        source: DecodeError,
    },
    /// A field exceeds the format's 32-bit lengths.
    #[error(".metadata.bin field too large to encode")]
    TooLarge,
}

fn ctx<T>(r: Result<T, DecodeError>, context: &'static str) -> Result<T, Error> {
    r.map_err(|source| Error::Malformed { context, source })
}

/// A bucket's metadata (MinIO's `BucketMetadata`), borrowing from the
/// decoded buffer. The configuration documents are kept as the raw JSON/XML
/// bytes MinIO stores; an empty value means "not configured".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketMetadata<'a> {
    /// `Name`.
    pub name: Text<'a>,
    /// `Created`: bucket creation time.
    pub created: MsgTime,
    /// `LockEnabled`: legacy flag, no longer used by MinIO (migrated into
    /// `ObjectLockConfigXML`).
    pub lock_enabled: bool,
    /// `PolicyConfigJSON`: bucket policy.
    pub policy_config_json: Cow<'a, [u8]>,
    /// `NotificationConfigXML`.
    pub notification_config_xml: Cow<'a, [u8]>,
    /// `LifecycleConfigXML`.
    pub lifecycle_config_xml: Cow<'a, [u8]>,
    /// `ObjectLockConfigXML`.
    pub object_lock_config_xml: Cow<'a, [u8]>,
    /// `VersioningConfigXML`.
    pub versioning_config_xml: Cow<'a, [u8]>,
    /// `EncryptionConfigXML`.
    pub encryption_config_xml: Cow<'a, [u8]>,
    /// `TaggingConfigXML`.
    pub tagging_config_xml: Cow<'a, [u8]>,
    /// `QuotaConfigJSON`.
    pub quota_config_json: Cow<'a, [u8]>,
    /// `ReplicationConfigXML`.
    pub replication_config_xml: Cow<'a, [u8]>,
    /// `BucketTargetsConfigJSON`: remote replication targets.
    pub bucket_targets_config_json: Cow<'a, [u8]>,
    /// `BucketTargetsConfigMetaJSON`.
    pub bucket_targets_config_meta_json: Cow<'a, [u8]>,
    /// `PolicyConfigUpdatedAt`.
    pub policy_config_updated_at: MsgTime,
    /// `ObjectLockConfigUpdatedAt`.
    pub object_lock_config_updated_at: MsgTime,
    /// `EncryptionConfigUpdatedAt`.
    pub encryption_config_updated_at: MsgTime,
    /// `TaggingConfigUpdatedAt`.
    pub tagging_config_updated_at: MsgTime,
    /// `QuotaConfigUpdatedAt`.
    pub quota_config_updated_at: MsgTime,
    /// `ReplicationConfigUpdatedAt`.
    pub replication_config_updated_at: MsgTime,
    /// `VersioningConfigUpdatedAt`.
    pub versioning_config_updated_at: MsgTime,
    /// `LifecycleConfigUpdatedAt`.
    pub lifecycle_config_updated_at: MsgTime,
    /// `NotificationConfigUpdatedAt`.
    pub notification_config_updated_at: MsgTime,
    /// `BucketTargetsConfigUpdatedAt`.
    pub bucket_targets_config_updated_at: MsgTime,
    /// `BucketTargetsConfigMetaUpdatedAt`.
    pub bucket_targets_config_meta_updated_at: MsgTime,
    /// Fields this crate does not know (from newer MinIO releases), kept and
    /// re-emitted after the known ones.
    pub unknown: Vec<RawField<'a>>,
}

const BYTE_FIELDS: [&str; 11] = [
    "PolicyConfigJSON",
    "NotificationConfigXML",
    "LifecycleConfigXML",
    "ObjectLockConfigXML",
    "VersioningConfigXML",
    "EncryptionConfigXML",
    "TaggingConfigXML",
    "QuotaConfigJSON",
    "ReplicationConfigXML",
    "BucketTargetsConfigJSON",
    "BucketTargetsConfigMetaJSON",
];

const TIME_FIELDS: [&str; 11] = [
    "PolicyConfigUpdatedAt",
    "ObjectLockConfigUpdatedAt",
    "EncryptionConfigUpdatedAt",
    "TaggingConfigUpdatedAt",
    "QuotaConfigUpdatedAt",
    "ReplicationConfigUpdatedAt",
    "VersioningConfigUpdatedAt",
    "LifecycleConfigUpdatedAt",
    "NotificationConfigUpdatedAt",
    "BucketTargetsConfigUpdatedAt",
    "BucketTargetsConfigMetaUpdatedAt",
];

impl<'a> BucketMetadata<'a> {
    /// Metadata for a new bucket as current MinIO creates it: nothing
    /// configured, and every `*UpdatedAt` equal to the creation time (MinIO
    /// stamps them all at creation; files from older releases may carry
    /// Go's zero time instead, see [`MsgTime::GO_ZERO`]).
    pub fn new(name: impl Into<Text<'a>>, created: MsgTime) -> Self {
        let empty = || Cow::Borrowed(&[][..]);
        BucketMetadata {
            name: name.into(),
            created,
            lock_enabled: false,
            policy_config_json: empty(),
            notification_config_xml: empty(),
            lifecycle_config_xml: empty(),
            object_lock_config_xml: empty(),
            versioning_config_xml: empty(),
            encryption_config_xml: empty(),
            tagging_config_xml: empty(),
            quota_config_json: empty(),
            replication_config_xml: empty(),
            bucket_targets_config_json: empty(),
            bucket_targets_config_meta_json: empty(),
            policy_config_updated_at: created,
            object_lock_config_updated_at: created,
            encryption_config_updated_at: created,
            tagging_config_updated_at: created,
            quota_config_updated_at: created,
            replication_config_updated_at: created,
            versioning_config_updated_at: created,
            lifecycle_config_updated_at: created,
            notification_config_updated_at: created,
            bucket_targets_config_updated_at: created,
            bucket_targets_config_meta_updated_at: created,
            unknown: Vec::new(),
        }
    }

    fn byte_fields(&self) -> [&Cow<'a, [u8]>; 11] {
        [
            &self.policy_config_json,
            &self.notification_config_xml,
            &self.lifecycle_config_xml,
            &self.object_lock_config_xml,
            &self.versioning_config_xml,
            &self.encryption_config_xml,
            &self.tagging_config_xml,
            &self.quota_config_json,
            &self.replication_config_xml,
            &self.bucket_targets_config_json,
            &self.bucket_targets_config_meta_json,
        ]
    }

    fn byte_fields_mut(&mut self) -> [&mut Cow<'a, [u8]>; 11] {
        [
            &mut self.policy_config_json,
            &mut self.notification_config_xml,
            &mut self.lifecycle_config_xml,
            &mut self.object_lock_config_xml,
            &mut self.versioning_config_xml,
            &mut self.encryption_config_xml,
            &mut self.tagging_config_xml,
            &mut self.quota_config_json,
            &mut self.replication_config_xml,
            &mut self.bucket_targets_config_json,
            &mut self.bucket_targets_config_meta_json,
        ]
    }

    fn time_fields(&self) -> [MsgTime; 11] {
        [
            self.policy_config_updated_at,
            self.object_lock_config_updated_at,
            self.encryption_config_updated_at,
            self.tagging_config_updated_at,
            self.quota_config_updated_at,
            self.replication_config_updated_at,
            self.versioning_config_updated_at,
            self.lifecycle_config_updated_at,
            self.notification_config_updated_at,
            self.bucket_targets_config_updated_at,
            self.bucket_targets_config_meta_updated_at,
        ]
    }

    fn time_fields_mut(&mut self) -> [&mut MsgTime; 11] {
        [
            &mut self.policy_config_updated_at,
            &mut self.object_lock_config_updated_at,
            &mut self.encryption_config_updated_at,
            &mut self.tagging_config_updated_at,
            &mut self.quota_config_updated_at,
            &mut self.replication_config_updated_at,
            &mut self.versioning_config_updated_at,
            &mut self.lifecycle_config_updated_at,
            &mut self.notification_config_updated_at,
            &mut self.bucket_targets_config_updated_at,
            &mut self.bucket_targets_config_meta_updated_at,
        ]
    }

    /// Decode a `.metadata.bin` (header and map). Absent fields are empty, or
    /// Go's zero time (as msgp leaves them); unknown fields are kept.
    pub fn decode(buf: &'a [u8]) -> Result<Self, Error> {
        if buf.len() <= 4 {
            return Err(Error::TooShort { len: buf.len() });
        }
        let format = u16::from_le_bytes([buf[0], buf[1]]);
        if format != FORMAT {
            return Err(Error::UnsupportedFormat(format));
        }
        let version = u16::from_le_bytes([buf[2], buf[3]]);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let mut r = Reader::new(&buf[4..]);
        let mut m = BucketMetadata::new(Text::default(), MsgTime::GO_ZERO);
        let n = ctx(r.read_map_len(), "bucket metadata")?;
        for _ in 0..n {
            let key = ctx(r.read_key(), "field name")?;
            match key {
                b"Name" => m.name = Text::borrowed(ctx(r.read_bin(), "Name")?),
                b"Created" => m.created = ctx(r.read_time(), "Created")?,
                b"LockEnabled" => m.lock_enabled = ctx(r.read_bool(), "LockEnabled")?,
                _ => {
                    if let Some(i) = BYTE_FIELDS.iter().position(|f| f.as_bytes() == key) {
                        let v = if r.is_nil() {
                            ctx(r.read_nil(), BYTE_FIELDS[i])?;
                            &[][..]
                        } else {
                            ctx(r.read_bin(), BYTE_FIELDS[i])?
                        };
                        *m.byte_fields_mut()[i] = Cow::Borrowed(v);
                    } else if let Some(i) = TIME_FIELDS.iter().position(|f| f.as_bytes() == key) {
                        *m.time_fields_mut()[i] = ctx(r.read_time(), TIME_FIELDS[i])?;
                    } else {
                        m.unknown.push(RawField {
                            key: Text::borrowed(key),
                            value: Cow::Borrowed(ctx(r.skip(), "unknown field")?),
                        });
                    }
                }
            }
        }
        Ok(m)
    }

    /// Encode as MinIO does: header, then all fields in MinIO's order, then
    /// unknown fields.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let too_large = |n: usize| u32::try_from(n).is_err();
        if too_large(self.name.len()) || self.byte_fields().iter().any(|b| too_large(b.len())) {
            return Err(Error::TooLarge);
        }
        let mut w = Writer::new();
        w.raw(&FORMAT.to_le_bytes());
        w.raw(&VERSION.to_le_bytes());
        w.map_len(3 + BYTE_FIELDS.len() + TIME_FIELDS.len() + self.unknown.len());
        w.str(b"Name");
        w.str(self.name.as_bytes());
        w.str(b"Created");
        w.time(self.created);
        w.str(b"LockEnabled");
        w.bool(self.lock_enabled);
        for (k, v) in BYTE_FIELDS.iter().zip(self.byte_fields()) {
            w.str(k.as_bytes());
            w.bin(v);
        }
        for (k, t) in TIME_FIELDS.iter().zip(self.time_fields()) {
            w.str(k.as_bytes());
            w.time(t);
        }
        for f in &self.unknown {
            w.str(f.key.as_bytes());
            w.raw(&f.value);
        }
        Ok(w.into_inner())
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> BucketMetadata<'static> {
        let o = |c: Cow<'a, [u8]>| IntoOwned::into_owned(c);
        BucketMetadata {
            name: self.name.into_owned(),
            created: self.created,
            lock_enabled: self.lock_enabled,
            policy_config_json: o(self.policy_config_json),
            notification_config_xml: o(self.notification_config_xml),
            lifecycle_config_xml: o(self.lifecycle_config_xml),
            object_lock_config_xml: o(self.object_lock_config_xml),
            versioning_config_xml: o(self.versioning_config_xml),
            encryption_config_xml: o(self.encryption_config_xml),
            tagging_config_xml: o(self.tagging_config_xml),
            quota_config_json: o(self.quota_config_json),
            replication_config_xml: o(self.replication_config_xml),
            bucket_targets_config_json: o(self.bucket_targets_config_json),
            bucket_targets_config_meta_json: o(self.bucket_targets_config_meta_json),
            policy_config_updated_at: self.policy_config_updated_at,
            object_lock_config_updated_at: self.object_lock_config_updated_at,
            encryption_config_updated_at: self.encryption_config_updated_at,
            tagging_config_updated_at: self.tagging_config_updated_at,
            quota_config_updated_at: self.quota_config_updated_at,
            replication_config_updated_at: self.replication_config_updated_at,
            versioning_config_updated_at: self.versioning_config_updated_at,
            lifecycle_config_updated_at: self.lifecycle_config_updated_at,
            notification_config_updated_at: self.notification_config_updated_at,
            bucket_targets_config_updated_at: self.bucket_targets_config_updated_at,
            bucket_targets_config_meta_updated_at: self.bucket_targets_config_meta_updated_at,
            unknown: self.unknown.into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_round_trips_with_minio_layout() {
        let mut m = BucketMetadata::new(
            "photos",
            MsgTime {
                secs: 1_700_000_000,
                nanos: 5,
            },
        );
        m.versioning_config_xml = Cow::Borrowed(b"<VersioningConfiguration/>");
        m.versioning_config_updated_at = MsgTime {
            secs: 1_700_000_001,
            nanos: 0,
        };
        let b = m.encode().unwrap();
        assert_eq!(&b[..4], &[1, 0, 1, 0]);
        // map16 with 25 entries, then "Name".
        assert_eq!(&b[4..12], &[0xde, 0x00, 0x19, 0xa4, b'N', b'a', b'm', b'e']);
        let back = BucketMetadata::decode(&b).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.encode().unwrap(), b);
        assert_eq!(back.policy_config_updated_at, back.created);
        let sparse = [1, 0, 1, 0, 0x81, 0xa4, b'N', b'a', b'm', b'e', 0xa1, b'x'];
        let d = BucketMetadata::decode(&sparse).unwrap();
        assert_eq!(d.name, "x");
        assert!(d.created.is_go_zero() && d.quota_config_updated_at.is_go_zero());
    }

    #[test]
    fn header_checks() {
        assert_eq!(
            BucketMetadata::decode(&[1, 0, 1, 0]),
            Err(Error::TooShort { len: 4 })
        );
        assert_eq!(
            BucketMetadata::decode(&[2, 0, 1, 0, 0x80]),
            Err(Error::UnsupportedFormat(2))
        );
        assert_eq!(
            BucketMetadata::decode(&[1, 0, 9, 0, 0x80]),
            Err(Error::UnsupportedVersion(9))
        );
        assert!(matches!(
            BucketMetadata::decode(&[1, 0, 1, 0, 0x81]),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn unknown_fields_kept() {
        let mut m = BucketMetadata::new("b", MsgTime::GO_ZERO);
        m.unknown.push(RawField {
            key: Text::from("CorsConfigXML"),
            value: Cow::Borrowed(&[0xc4, 0x01, b'x']),
        });
        let b = m.encode().unwrap();
        let back = BucketMetadata::decode(&b).unwrap();
        assert_eq!(back.unknown, m.unknown);
        assert_eq!(back.encode().unwrap(), b);
    }
}
