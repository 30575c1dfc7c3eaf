//! The small per-version header stored in the xl.meta journal.

use std::cmp::Ordering;

use super::{Error, ResultExt};
use crate::msgp::{Reader, Writer};

/// The header format this crate writes (MinIO's `xlHeaderVersion`).
pub const HEADER_VERSION: u8 = 3;

/// The kind of a journal entry (MinIO's `VersionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum VersionType {
    /// An object version with data (`ObjectType`, 1).
    Object = 1,
    /// A delete marker, or a "free version" tracking tiered data (2).
    DeleteMarker = 2,
    /// An object migrated from the pre-versioning `xl.json` format (3).
    Legacy = 3,
}

impl VersionType {
    /// The stored byte.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// Parse the stored byte; `None` for values MinIO does not define.
    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::Object),
            2 => Some(Self::DeleteMarker),
            3 => Some(Self::Legacy),
            _ => None,
        }
    }
}

/// Header flag bits (MinIO's `xlFlags`). Unknown bits are preserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct VersionFlags(pub u8);

impl VersionFlags {
    /// A delete marker that tracks tiered data still to be freed.
    pub const FREE_VERSION: u8 = 1;
    /// The version's data lives in its data directory (not inline, not tiered).
    pub const USES_DATA_DIR: u8 = 2;
    /// The version's `MetaSys` marks its data as stored inline in xl.meta.
    pub const INLINE_DATA: u8 = 4;

    /// Whether this is a free version.
    pub fn free_version(self) -> bool {
        self.0 & Self::FREE_VERSION != 0
    }

    /// Whether the version uses its data directory.
    pub fn uses_data_dir(self) -> bool {
        self.0 & Self::USES_DATA_DIR != 0
    }

    /// Whether the version's data is (very likely) inline.
    pub fn inline_data(self) -> bool {
        self.0 & Self::INLINE_DATA != 0
    }
}

/// The header of one journal entry: enough to list, order and compare
/// versions across drives without decoding the version itself.
///
/// Headers are identical on every drive of an erasure set: the signature is
/// computed with the per-drive erasure index zeroed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionHeader {
    /// The version id; all zeroes for the "null" version (and legacy objects).
    pub version_id: [u8; 16],
    /// Modification time in Unix nanoseconds.
    pub mod_time: i64,
    /// A 4-byte hash of the version, equal across drives (see
    /// [`crate::xlmeta::Version::signature`]).
    pub signature: [u8; 4],
    /// The entry kind.
    pub version_type: VersionType,
    /// Flag bits.
    pub flags: VersionFlags,
    /// Parity shards of an object version (0 for other kinds and for headers
    /// decoded from the older header formats 1 and 2).
    pub ec_n: u8,
    /// Data shards of an object version (0 as for `ec_n`).
    pub ec_m: u8,
}

impl VersionHeader {
    /// Whether both headers carry erasure information (`EcM` and `EcN` > 0).
    pub fn has_ec(&self) -> bool {
        self.ec_m > 0 && self.ec_n > 0
    }

    /// MinIO's `sortsBefore`: whether `self` belongs before `other` in the
    /// journal. Newest first; ties broken by type (lower first), signature
    /// (higher first), version id (higher first), flags (higher first).
    /// Returns false for equal headers.
    pub fn sorts_before(&self, other: &VersionHeader) -> bool {
        if self == other {
            return false;
        }
        if self.mod_time != other.mod_time {
            return self.mod_time > other.mod_time;
        }
        if self.version_type != other.version_type {
            return self.version_type < other.version_type;
        }
        if self.signature != other.signature {
            return self.signature > other.signature;
        }
        if self.version_id != other.version_id {
            return self.version_id > other.version_id;
        }
        if self.flags != other.flags {
            return self.flags > other.flags;
        }
        false
    }

    /// The journal order as an [`Ordering`] (`Less` sorts first).
    pub fn journal_cmp(&self, other: &VersionHeader) -> Ordering {
        if self.sorts_before(other) {
            Ordering::Less
        } else if other.sorts_before(self) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// Encode in the current (version 3) form: a 7-element msgpack array
    /// `[id bin16, modtime int, signature bin4, type, flags, EcN, EcM]`.
    pub fn encode(&self, w: &mut Writer) {
        w.array_len(7);
        w.bin(&self.version_id);
        w.int(self.mod_time);
        w.bin(&self.signature);
        w.uint(u64::from(self.version_type.as_u8()));
        w.uint(u64::from(self.flags.0));
        w.uint(u64::from(self.ec_n));
        w.uint(u64::from(self.ec_m));
    }

    /// Encode into a fresh buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decode a header written in header format `header_version`:
    ///
    /// * 1 (never released by MinIO): `[id, modtime, type, flags]`, no signature;
    /// * 2: `[id, modtime, signature, type, flags]`;
    /// * 3: `[id, modtime, signature, type, flags, EcN, EcM]`.
    ///
    /// Bytes after the array inside the header's bin are ignored, as MinIO does.
    pub fn decode(header_version: u8, buf: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(buf);
        let want = match header_version {
            1 => 4,
            2 => 5,
            3 => 7,
            v => return Err(Error::UnsupportedHeaderVersion(u64::from(v))),
        };
        let n = r.read_array_len().ctx("version header")?;
        if n != want {
            return Err(Error::Invalid(
                "version header has the wrong number of fields",
            ));
        }
        let version_id = r.read_bin_array::<16>().ctx("header version id")?;
        let mod_time = r.read_i64().ctx("header mod time")?;
        let signature = if header_version >= 2 {
            r.read_bin_array::<4>().ctx("header signature")?
        } else {
            [0; 4]
        };
        let t = r.read_u8().ctx("header type")?;
        let version_type =
            VersionType::from_u8(t).ok_or(Error::Invalid("unknown version type in header"))?;
        let flags = VersionFlags(r.read_u8().ctx("header flags")?);
        let (ec_n, ec_m) = if header_version >= 3 {
            (
                r.read_u8().ctx("header EcN")?,
                r.read_u8().ctx("header EcM")?,
            )
        } else {
            (0, 0)
        };
        Ok(VersionHeader {
            version_id,
            mod_time,
            signature,
            version_type,
            flags,
            ec_n,
            ec_m,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(mod_time: i64, t: VersionType, sig: u8) -> VersionHeader {
        VersionHeader {
            version_id: [1; 16],
            mod_time,
            signature: [sig; 4],
            version_type: t,
            flags: VersionFlags(0),
            ec_n: 2,
            ec_m: 2,
        }
    }

    #[test]
    fn round_trip_all_header_formats() {
        let h = VersionHeader {
            version_id: [7; 16],
            mod_time: 1_700_000_000_123_456_789,
            signature: [1, 2, 3, 4],
            version_type: VersionType::Object,
            flags: VersionFlags(VersionFlags::USES_DATA_DIR | VersionFlags::INLINE_DATA),
            ec_n: 2,
            ec_m: 4,
        };
        let b = h.to_bytes();
        assert_eq!(b[0], 0x97);
        assert_eq!(b.len(), 1 + 18 + 9 + 6 + 4);
        assert_eq!(VersionHeader::decode(3, &b).unwrap(), h);

        // Format 2: five fields, no EC.
        let mut w = Writer::new();
        w.array_len(5);
        w.bin(&h.version_id);
        w.int(h.mod_time);
        w.bin(&h.signature);
        w.uint(1);
        w.uint(6);
        let v2 = VersionHeader::decode(2, &w.into_inner()).unwrap();
        assert_eq!((v2.ec_n, v2.ec_m), (0, 0));
        assert_eq!(v2.signature, h.signature);

        // Format 1: four fields, no signature.
        let mut w = Writer::new();
        w.array_len(4);
        w.bin(&h.version_id);
        w.int(h.mod_time);
        w.uint(2);
        w.uint(0);
        let v1 = VersionHeader::decode(1, &w.into_inner()).unwrap();
        assert_eq!(v1.version_type, VersionType::DeleteMarker);
        assert_eq!(v1.signature, [0; 4]);

        assert!(matches!(
            VersionHeader::decode(4, &b),
            Err(Error::UnsupportedHeaderVersion(4))
        ));
        assert!(VersionHeader::decode(2, &b).is_err());
    }

    #[test]
    fn ordering_matches_minio() {
        let newer = hdr(10, VersionType::Object, 0);
        let older = hdr(5, VersionType::Object, 0);
        assert!(newer.sorts_before(&older));
        assert!(!older.sorts_before(&newer));
        // Same time: object before delete marker.
        let dm = hdr(10, VersionType::DeleteMarker, 0);
        assert!(newer.sorts_before(&dm));
        // Same time and type: higher signature first.
        let hi = hdr(10, VersionType::Object, 9);
        assert!(hi.sorts_before(&newer));
        assert!(!newer.sorts_before(&newer));
        assert_eq!(newer.journal_cmp(&newer), Ordering::Equal);
        // EC-only differences are ties.
        let mut ec = newer;
        ec.ec_m = 3;
        assert_eq!(newer.journal_cmp(&ec), Ordering::Equal);
    }
}
