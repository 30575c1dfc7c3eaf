//! MinIO's `xl.meta` (format 2, "XL2 ") codec: one file per object per
//! drive, holding every version of the object plus small objects' data.
//!
//! # File layout (format 1.3, the one written here)
//!
//! ```text
//! "XL2 "  u16le major = 1  u16le minor = 3
//! bin32   metadata:
//!           uint header-version (3)  uint meta-version (3)  int count
//!           count × ( bin(version header)  bin(version body) )   newest first
//! uint32  CRC: low 32 bits of xxhash64(seed 0) of the metadata bytes,
//!         always in the 5-byte form `ce xx xx xx xx`
//! inline data (optional): 0x01, map{ version-id string → bin shard }
//! ```
//!
//! Older minors, all still readable by MinIO and by [`XlMeta::decode`]:
//!
//! * 1.0 (`"XL2 1   "` header): the rest of the file is a msgpack map
//!   `{"Versions": [version body …]}`; no CRC, no inline data.
//! * 1.1: that map wrapped in a `bin`, followed by inline data; no CRC.
//! * 1.2: as 1.1 plus a CRC after the `bin` (msgpack uint32, any width).
//!
//! For these the journal headers are not stored; they are derived from the
//! versions (signature included) and the journal is sorted, as MinIO does.
//! Writing always produces 1.3.
//!
//! # Per-drive differences
//!
//! The drives of an erasure set store the same xl.meta except for each
//! object version's `EcIndex` (the drive's shard index, `EcDist[drive]`) and
//! the inline data (each drive keeps its own shard). Headers and their
//! signatures are identical across drives. See [`XlMeta::set_drive_position`].
//!
//! # Safety against damaged input
//!
//! Decoding never panics, and every length in the file is checked against
//! the bytes actually present before it is used; allocations are bounded by
//! the input size, and the version count by [`Limits::max_versions`].
//! Corruption yields a typed [`Error`].

mod header;
mod inline;
mod restore;
mod signature;
mod version;

use std::borrow::Cow;

use xxhash_rust::xxh64::xxh64;

pub use header::{HEADER_VERSION, VersionFlags, VersionHeader, VersionType};
pub use inline::{INLINE_DATA_VERSION, InlineData, inline_key};
pub use version::{
    CHECKSUM_HIGHWAYHASH, DeleteMarker, ERASURE_REED_SOLOMON, ErasureParams, LegacyObject,
    META_AMZ_RESTORE, META_CONTENT_TYPE, META_ETAG, META_FREE_VERSION, META_INLINE_DATA,
    META_TRANSITION_STATUS, ObjectVersion, SysMeta, TRANSITION_COMPLETE, UserMeta, Version,
    VersionKind,
};

use crate::msgp::{DecodeError, Reader, Writer};
use crate::text::Text;

/// The file magic.
pub const MAGIC: [u8; 4] = *b"XL2 ";
/// The format major version written and understood.
pub const FORMAT_MAJOR: u16 = 1;
/// The format minor version written (1.0–1.3 are read).
pub const FORMAT_MINOR: u16 = 3;
/// The metadata ("meta") version written for new files (MinIO's
/// `xlMetaVersion`). Decoded files keep the value they were read with.
pub const META_VERSION: u8 = 3;
/// The default cap on versions per xl.meta. MinIO itself has no default
/// cap (`api.object_max_versions` is unlimited unless configured; older
/// releases defaulted to 10000); this bound only guards decoding of hostile
/// input and can be raised through [`Limits`].
pub const DEFAULT_MAX_VERSIONS: usize = 100_000;

/// Errors from decoding, encoding or editing xl.meta.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Fewer than 9 bytes: not even a header and a value.
    #[error("xl.meta too short ({len} bytes)")]
    TooShort {
        /// The input length.
        len: usize,
    },
    /// The file does not start with `XL2 `.
    #[error("not an xl.meta file (magic {found:02x?})")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A format version other than 1.0–1.3.
    #[error("unsupported xl.meta format version {major}.{minor}")]
    UnsupportedVersion {
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// A version-header format other than 1–3.
    #[error("unsupported xl.meta header version {0}")]
    UnsupportedHeaderVersion(u64),
    /// A metadata version above 3.
    #[error("unsupported xl.meta metadata version {0}")]
    UnsupportedMetaVersion(u64),
    /// The metadata does not match its stored CRC.
    #[error("xl.meta CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the bytes present.
        computed: u32,
    },
    /// A msgpack value could not be read (truncation, wrong type, range).
    #[error("xl.meta: malformed {context}: {source}")]
    Malformed {
        /// Which part of the file.
        context: &'static str,
        /// What went wrong.
        #[source]
        source: DecodeError,
    },
    /// More versions than [`Limits::max_versions`].
    #[error("xl.meta has {count} versions, more than the limit of {limit}")]
    TooManyVersions {
        /// The count found (or that adding would reach).
        count: u64,
        /// The limit.
        limit: usize,
    },
    /// Well-formed msgpack with impossible content.
    #[error("xl.meta: {0}")]
    Invalid(&'static str),
    /// A version rejected by MinIO's validity rules.
    #[error("invalid version: {0}")]
    InvalidVersion(&'static str),
    /// No version with the requested id.
    #[error("version not found")]
    VersionNotFound,
    /// A field or the metadata exceeds the format's 32-bit lengths.
    #[error("xl.meta too large to encode")]
    TooLarge,
}

impl Error {
    /// Whether the input ended early.
    pub fn is_truncated(&self) -> bool {
        matches!(
            self,
            Error::TooShort { .. }
                | Error::Malformed {
                    source: DecodeError::Truncated,
                    ..
                }
        )
    }
}

pub(crate) trait ResultExt<T> {
    fn ctx(self, context: &'static str) -> Result<T, Error>;
}

impl<T> ResultExt<T> for Result<T, DecodeError> {
    fn ctx(self, context: &'static str) -> Result<T, Error> {
        self.map_err(|source| Error::Malformed { context, source })
    }
}

/// Decoding limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most versions accepted in one xl.meta (and allowed by
    /// [`XlMeta::add_version`]).
    pub max_versions: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_versions: DEFAULT_MAX_VERSIONS,
        }
    }
}

/// The format version of a decoded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FormatVersion {
    /// Major version (1).
    pub major: u16,
    /// Minor version (0–3).
    pub minor: u16,
}

/// One journal entry of a [`Journal`]: the header and the undecoded body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalEntry<'a> {
    /// The version header (stored, or derived for files before 1.3).
    pub header: VersionHeader,
    /// The encoded version body, borrowed from the input.
    pub body: &'a [u8],
}

impl<'a> JournalEntry<'a> {
    /// Decode the version body.
    pub fn decode(&self) -> Result<Version<'a>, Error> {
        Version::decode(self.body)
    }
}

/// The journal of an xl.meta decoded headers-first: what listing needs,
/// without decoding version bodies or inline data (for a 1.3 file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal<'a> {
    /// The file's format version.
    pub format: FormatVersion,
    /// The metadata version (1 for files before 1.3).
    pub meta_version: u8,
    /// Entries, newest first.
    pub entries: Vec<JournalEntry<'a>>,
    /// The raw inline-data section.
    pub inline: &'a [u8],
}

impl<'a> Journal<'a> {
    /// Decode the journal of `buf` with default [`Limits`].
    ///
    /// For a 1.3 file this verifies the CRC and decodes only the headers.
    /// Older files store no headers, so their bodies are decoded to derive
    /// them.
    pub fn decode(buf: &'a [u8]) -> Result<Self, Error> {
        Self::decode_with(buf, &Limits::default())
    }

    /// [`Journal::decode`] with explicit limits.
    pub fn decode_with(buf: &'a [u8], limits: &Limits) -> Result<Self, Error> {
        if buf.len() <= 8 {
            return Err(Error::TooShort { len: buf.len() });
        }
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&buf[..4]);
        if magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        let (major, minor) = if &buf[4..8] == b"1   " {
            (1, 0)
        } else {
            (
                u16::from_le_bytes([buf[4], buf[5]]),
                u16::from_le_bytes([buf[6], buf[7]]),
            )
        };
        let format = FormatVersion { major, minor };
        if major != FORMAT_MAJOR || minor > FORMAT_MINOR {
            return Err(Error::UnsupportedVersion { major, minor });
        }
        let payload = &buf[8..];
        if minor == 0 {
            return parse_unindexed(format, payload, &[], limits);
        }
        let mut r = Reader::new(payload);
        let meta = r.read_bin().ctx("metadata")?;
        if minor >= 2 {
            let stored = r.read_u32().ctx("metadata CRC")?;
            let computed = xxh64(meta, 0) as u32;
            if stored != computed {
                return Err(Error::CrcMismatch { stored, computed });
            }
        }
        let inline = r.rest();
        if minor < 3 {
            return parse_unindexed(format, meta, inline, limits);
        }
        parse_indexed(format, meta, inline, limits)
    }
}

/// Format 1.3: stored headers.
fn parse_indexed<'a>(
    format: FormatVersion,
    meta: &'a [u8],
    inline: &'a [u8],
    limits: &Limits,
) -> Result<Journal<'a>, Error> {
    let mut r = Reader::new(meta);
    let header_version = r.read_u64().ctx("header version")?;
    if !(1..=u64::from(HEADER_VERSION)).contains(&header_version) {
        return Err(Error::UnsupportedHeaderVersion(header_version));
    }
    let meta_version = r.read_u64().ctx("meta version")?;
    if meta_version > u64::from(META_VERSION) {
        return Err(Error::UnsupportedMetaVersion(meta_version));
    }
    let count = r.read_i64().ctx("version count")?;
    let count = u64::try_from(count).map_err(|_| Error::Invalid("negative version count"))?;
    check_count(count, limits)?;
    // Each entry takes at least two bytes; never reserve more than that.
    let count = count as usize;
    let mut entries = Vec::with_capacity(count.min(r.remaining() / 2));
    for _ in 0..count {
        let hdr = r.read_bin().ctx("version header")?;
        let body = r.read_bin().ctx("version body")?;
        let header = VersionHeader::decode(header_version as u8, hdr)?;
        entries.push(JournalEntry { header, body });
    }
    Ok(Journal {
        format,
        meta_version: meta_version as u8,
        entries,
        inline,
    })
}

/// Formats 1.0–1.2: `{"Versions": [...]}`, headers derived and sorted.
fn parse_unindexed<'a>(
    format: FormatVersion,
    meta: &'a [u8],
    inline: &'a [u8],
    limits: &Limits,
) -> Result<Journal<'a>, Error> {
    let mut r = Reader::new(meta);
    let fields = r.read_map_len().ctx("legacy metadata")?;
    let mut entries = Vec::new();
    for _ in 0..fields {
        if r.read_key().ctx("legacy metadata field name")? != b"Versions" {
            r.skip().ctx("legacy metadata field")?;
            continue;
        }
        let n = r.read_array_len().ctx("legacy Versions")?;
        check_count(n as u64, limits)?;
        entries = Vec::with_capacity(n.min(r.remaining()));
        for _ in 0..n {
            let start = r.position();
            let version = Version::decode_from(&mut r)?;
            let body = &meta[start..r.position()];
            entries.push(JournalEntry {
                header: version.header(),
                body,
            });
        }
    }
    entries.sort_by(|a, b| a.header.journal_cmp(&b.header));
    Ok(Journal {
        format,
        meta_version: 1,
        entries,
        inline,
    })
}

fn check_count(count: u64, limits: &Limits) -> Result<(), Error> {
    if count > limits.max_versions as u64 {
        return Err(Error::TooManyVersions {
            count,
            limit: limits.max_versions,
        });
    }
    Ok(())
}

/// A decoded version with its journal header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry<'a> {
    header: VersionHeader,
    version: Version<'a>,
}

impl<'a> VersionEntry<'a> {
    /// The journal header.
    pub fn header(&self) -> &VersionHeader {
        &self.header
    }

    /// The version.
    pub fn version(&self) -> &Version<'a> {
        &self.version
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> VersionEntry<'static> {
        VersionEntry {
            header: self.header,
            version: self.version.into_owned(),
        }
    }
}

/// A fully decoded xl.meta: all versions (newest first) and inline data.
///
/// Decoding borrows strings and byte fields from the input buffer; call
/// [`XlMeta::into_owned`] to detach. An unmodified decode re-encodes to the
/// same bytes for any 1.3 file MinIO writes: entry order, stored headers,
/// map entry order and unknown fields are all kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XlMeta<'a> {
    entries: Vec<VersionEntry<'a>>,
    inline: InlineData<'a>,
    meta_version: u8,
    format: FormatVersion,
    inline_repaired: bool,
    max_versions: usize,
}

impl Default for XlMeta<'_> {
    fn default() -> Self {
        XlMeta {
            entries: Vec::new(),
            inline: InlineData::new(),
            meta_version: META_VERSION,
            format: FormatVersion {
                major: FORMAT_MAJOR,
                minor: FORMAT_MINOR,
            },
            inline_repaired: false,
            max_versions: DEFAULT_MAX_VERSIONS,
        }
    }
}

impl<'a> XlMeta<'a> {
    /// An empty xl.meta (no versions).
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode a complete xl.meta with default [`Limits`].
    pub fn decode(buf: &'a [u8]) -> Result<Self, Error> {
        Self::decode_with(buf, &Limits::default())
    }

    /// Decode a complete xl.meta.
    pub fn decode_with(buf: &'a [u8], limits: &Limits) -> Result<Self, Error> {
        let journal = Journal::decode_with(buf, limits)?;
        let mut entries = Vec::with_capacity(journal.entries.len());
        for e in &journal.entries {
            entries.push(VersionEntry {
                header: e.header,
                version: e.decode()?,
            });
        }
        let inline = InlineData::decode(journal.inline);
        Ok(XlMeta {
            entries,
            inline: inline.data,
            meta_version: journal.meta_version,
            format: journal.format,
            inline_repaired: inline.repaired,
            max_versions: limits.max_versions,
        })
    }

    /// Encode as an xl.meta 1.3 file.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// Append the xl.meta 1.3 encoding to `out`.
    ///
    /// The metadata version written is the one the file was decoded with
    /// ([`META_VERSION`] for new files). MinIO applies load-time fix-ups to
    /// versions written under older metadata versions; keeping the number
    /// keeps those fix-ups in force for the versions they concern.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_MAJOR.to_le_bytes());
        out.extend_from_slice(&FORMAT_MINOR.to_le_bytes());
        // bin32 with the length patched in below, as MinIO does.
        out.push(0xc6);
        out.extend_from_slice(&[0; 4]);
        let meta_start = out.len();
        let mut w = Writer::with_buffer(std::mem::take(out));
        w.uint(u64::from(HEADER_VERSION));
        w.uint(u64::from(self.meta_version));
        w.int(self.entries.len() as i64);
        let mut tmp = Writer::new();
        for e in &self.entries {
            tmp.buf.clear();
            e.header.encode(&mut tmp);
            w.bin(&tmp.buf);
            tmp.buf.clear();
            e.version.encode(&mut tmp);
            if u32::try_from(tmp.buf.len()).is_err() {
                *out = w.into_inner();
                out.truncate(start);
                return Err(Error::TooLarge);
            }
            w.bin(&tmp.buf);
        }
        let mut buf = w.into_inner();
        let Ok(meta_len) = u32::try_from(buf.len() - meta_start) else {
            buf.truncate(start);
            *out = buf;
            return Err(Error::TooLarge);
        };
        buf[meta_start - 4..meta_start].copy_from_slice(&meta_len.to_be_bytes());
        let crc = xxh64(&buf[meta_start..], 0) as u32;
        let mut w = Writer::with_buffer(buf);
        w.uint32_fixed(crc);
        let mut buf = w.into_inner();
        if self
            .inline
            .iter()
            .any(|(_, v)| u32::try_from(v.len()).is_err())
        {
            buf.truncate(start);
            *out = buf;
            return Err(Error::TooLarge);
        }
        self.inline.encode(&mut buf);
        *out = buf;
        Ok(())
    }

    /// The format version the file was decoded from (1.3 for new files;
    /// encoding always writes 1.3).
    pub fn format(&self) -> FormatVersion {
        self.format
    }

    /// The metadata version that will be written.
    pub fn meta_version(&self) -> u8 {
        self.meta_version
    }

    /// Whether the inline data was damaged and only a valid prefix kept.
    pub fn inline_repaired(&self) -> bool {
        self.inline_repaired
    }

    /// The cap on versions enforced by [`XlMeta::add_version`].
    pub fn set_max_versions(&mut self, max: usize) {
        self.max_versions = max;
    }

    /// All entries, newest first (free versions included).
    pub fn versions(&self) -> &[VersionEntry<'a>] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries visible to S3 listing: all but free versions, newest first.
    pub fn visible_versions(&self) -> impl Iterator<Item = &VersionEntry<'a>> {
        self.entries
            .iter()
            .filter(|e| !e.header.flags.free_version())
    }

    /// The latest visible version (object or delete marker), as MinIO
    /// resolves a request without a version id.
    pub fn latest(&self) -> Option<&VersionEntry<'a>> {
        self.visible_versions().next()
    }

    /// Index of the entry with `version_id` (all zeroes: the null version).
    pub fn position(&self, version_id: &[u8; 16]) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.header.version_id == *version_id)
    }

    /// The entry with `version_id`.
    pub fn find(&self, version_id: &[u8; 16]) -> Option<&VersionEntry<'a>> {
        self.position(version_id).map(|i| &self.entries[i])
    }

    /// Add a version, or replace the version with the same id (of any
    /// type), as MinIO's `AddVersion`: the null version (all-zero id) of an
    /// unversioned or suspended bucket is thus overwritten in place, and
    /// replaces a legacy object too.
    ///
    /// The version must pass MinIO's validity rules. A new entry goes before
    /// the first entry that is not newer; a replacement whose time changed
    /// re-sorts the journal. Returns the replaced version, if any. Inline
    /// data is not touched: see [`XlMeta::set_inline_data`].
    pub fn add_version(&mut self, version: Version<'a>) -> Result<Option<Version<'a>>, Error> {
        version.validate()?;
        let header = version.header();
        if let Some(i) = self.position(&header.version_id) {
            let old_time = self.entries[i].header.mod_time;
            let old = std::mem::replace(&mut self.entries[i], VersionEntry { header, version });
            if old_time != header.mod_time {
                self.sort();
            }
            return Ok(Some(old.version));
        }
        if self.entries.len() >= self.max_versions {
            return Err(Error::TooManyVersions {
                count: self.entries.len() as u64 + 1,
                limit: self.max_versions,
            });
        }
        let at = self
            .entries
            .iter()
            .position(|e| e.header.mod_time <= header.mod_time)
            .unwrap_or(self.entries.len());
        self.entries.insert(at, VersionEntry { header, version });
        Ok(None)
    }

    /// Add a plain delete marker (see [`XlMeta::add_version`] for replacement
    /// rules). Use an all-zero id for the null version of an unversioned or
    /// suspended bucket.
    pub fn add_delete_marker(
        &mut self,
        version_id: [u8; 16],
        mod_time: i64,
        written_by_version: u64,
    ) -> Result<Option<Version<'a>>, Error> {
        self.add_version(Version::delete_marker(
            DeleteMarker::new(version_id, mod_time),
            written_by_version,
        ))
    }

    /// Remove the version with `version_id` and its inline data (stored under
    /// its version key, or its data directory as some 2021 MinIO builds did).
    /// Returns the removed version; whether its data directory may be deleted
    /// is answered by [`XlMeta::shared_data_dir_count`].
    pub fn remove_version(&mut self, version_id: &[u8; 16]) -> Result<Version<'a>, Error> {
        let i = self.position(version_id).ok_or(Error::VersionNotFound)?;
        let removed = self.entries.remove(i).version;
        let key = inline_key(version_id);
        match removed.as_object() {
            Some(o) => {
                let dd = uuid::Uuid::from_bytes(o.data_dir).hyphenated().to_string();
                self.inline.remove(&[&key, &dd]);
            }
            None => {
                self.inline.remove(&[&key]);
            }
        }
        Ok(removed)
    }

    /// Edit the version with `version_id` in place, then re-derive its header
    /// and re-sort if its time changed. Fails (leaving the entry unchanged)
    /// if the edit changes the version id or makes the version invalid.
    pub fn update_version(
        &mut self,
        version_id: &[u8; 16],
        edit: impl FnOnce(&mut Version<'a>),
    ) -> Result<(), Error> {
        let i = self.position(version_id).ok_or(Error::VersionNotFound)?;
        let mut v = self.entries[i].version.clone();
        edit(&mut v);
        v.validate()?;
        let header = v.header();
        if header.version_id != *version_id {
            return Err(Error::InvalidVersion(
                "an update may not change the version id",
            ));
        }
        let old_time = self.entries[i].header.mod_time;
        self.entries[i] = VersionEntry { header, version: v };
        if old_time != header.mod_time {
            self.sort();
        }
        Ok(())
    }

    /// Make this xl.meta the copy for the drive at position `drive` of the
    /// erasure set: each object version's `EcIndex` becomes `EcDist[drive]`.
    /// Headers are unaffected (the signature ignores `EcIndex`). Inline data
    /// is per drive too and must be set separately.
    pub fn set_drive_position(&mut self, drive: usize) -> Result<(), Error> {
        let mut updates = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(o) = e.version.as_object() {
                let idx = o.ec_index_for_drive(drive).ok_or(Error::Invalid(
                    "drive position outside the erasure distribution",
                ))?;
                updates.push((i, idx));
            }
        }
        for (i, idx) in updates {
            if let VersionKind::Object(o) = &mut self.entries[i].version.kind {
                o.erasure_index = idx;
            }
        }
        Ok(())
    }

    /// The inline data section.
    pub fn inline(&self) -> &InlineData<'a> {
        &self.inline
    }

    /// The inline data section, mutably.
    pub fn inline_mut(&mut self) -> &mut InlineData<'a> {
        &mut self.inline
    }

    /// This drive's inline shard of `version_id`, if stored.
    pub fn inline_data(&self, version_id: &[u8; 16]) -> Option<&[u8]> {
        self.inline.get(&inline_key(version_id))
    }

    /// Store this drive's inline shard of `version_id`.
    pub fn set_inline_data(&mut self, version_id: &[u8; 16], shard: impl Into<Cow<'a, [u8]>>) {
        self.inline
            .insert(Text::from(inline_key(version_id)), shard);
    }

    /// Drop the inline shard of `version_id`; whether one was stored.
    pub fn remove_inline_data(&mut self, version_id: &[u8; 16]) -> bool {
        self.inline.remove(&[&inline_key(version_id)])
    }

    /// MinIO's `SharedDataDirCount`: how many *other* object versions using
    /// their data directory reference `data_dir`. Zero if `version_id` has
    /// inline data (it never used the directory).
    pub fn shared_data_dir_count(&self, version_id: &[u8; 16], data_dir: &[u8; 16]) -> usize {
        if self.inline_data(version_id).is_some() {
            return 0;
        }
        self.entries
            .iter()
            .filter(|e| {
                e.header.version_type == VersionType::Object
                    && e.header.version_id != *version_id
                    && e.header.flags.uses_data_dir()
            })
            .filter_map(|e| e.version.as_object())
            .filter(|o| o.data_dir == *data_dir)
            .count()
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> XlMeta<'static> {
        XlMeta {
            entries: self
                .entries
                .into_iter()
                .map(VersionEntry::into_owned)
                .collect(),
            inline: self.inline.into_owned(),
            meta_version: self.meta_version,
            format: self.format,
            inline_repaired: self.inline_repaired,
            max_versions: self.max_versions,
        }
    }

    fn sort(&mut self) {
        self.entries.sort_by(|a, b| a.header.journal_cmp(&b.header));
    }
}

#[cfg(test)]
mod tests;
