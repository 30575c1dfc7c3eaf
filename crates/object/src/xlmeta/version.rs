//! Version bodies: object versions, delete markers and legacy objects, their
//! msgp encoding and their headers (with MinIO's per-version signature,
//! `signature.rs`).

use std::borrow::Cow;

use xxhash_rust::xxh64::xxh64;

use super::header::{VersionFlags, VersionHeader, VersionType};
use super::restore::restored_on_disk;
use super::signature::{fold_signature, hash_sys_meta, hash_user_meta};
use super::{Error, ResultExt};
use crate::msgp::{MsgTime, Reader, Writer};
use crate::text::{IntoOwned, MetaMap, RawField, Text};

/// `MetaSys` key whose presence marks a version's data as inline.
pub const META_INLINE_DATA: &str = "x-minio-internal-inline-data";
/// `MetaSys` key whose presence makes a delete marker a free version.
pub const META_FREE_VERSION: &str = "x-minio-internal-free-version";
/// `MetaSys` key holding a version's tiering (transition) status.
pub const META_TRANSITION_STATUS: &str = "x-minio-internal-transition-status";
/// The transition status of a version whose data moved to a remote tier.
pub const TRANSITION_COMPLETE: &str = "complete";
/// `MetaUsr` key of the S3 restore header of a tiered object.
pub const META_AMZ_RESTORE: &str = "X-Amz-Restore";
/// `MetaUsr` key of the object's ETag (hex MD5, or `md5-N` for multipart).
pub const META_ETAG: &str = "etag";
/// `MetaUsr` key of the object's content type.
pub const META_CONTENT_TYPE: &str = "content-type";

/// MinIO's `ReedSolomon` erasure algorithm id, the only one defined.
pub const ERASURE_REED_SOLOMON: u8 = 1;
/// MinIO's `HighwayHash` bitrot checksum id (streaming HighwayHash-256).
pub const CHECKSUM_HIGHWAYHASH: u8 = 1;

/// System metadata: `MetaSys`, string keys to byte values.
pub type SysMeta<'a> = MetaMap<'a, Cow<'a, [u8]>>;
/// User metadata: `MetaUsr`, string keys to string values.
pub type UserMeta<'a> = MetaMap<'a, Text<'a>>;

/// One object version (`V2Obj`, MinIO's `xlMetaV2Object`).
///
/// Integer fields keep Go's types (`int`/`int64` → `i64`) so any value MinIO
/// can write decodes and re-encodes unchanged. `Option` fields distinguish a
/// stored `nil` (or, for `part_indices`, an omitted key) from an empty list,
/// because the two encode differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion<'a> {
    /// `ID`: the version id; all zeroes is the "null" version.
    pub version_id: [u8; 16],
    /// `DDir`: the data directory (a UUID) holding `part.N` files.
    pub data_dir: [u8; 16],
    /// `EcAlgo`: erasure algorithm, [`ERASURE_REED_SOLOMON`].
    pub erasure_algorithm: u8,
    /// `EcM`: data shards.
    pub erasure_m: i64,
    /// `EcN`: parity shards.
    pub erasure_n: i64,
    /// `EcBSize`: erasure block size in bytes (1 MiB by default).
    pub erasure_block_size: i64,
    /// `EcIndex`: this drive's 1-based shard index. The only field (besides
    /// inline data) that differs between the drives of a set.
    pub erasure_index: i64,
    /// `EcDist`: shard index (1-based) for each drive of the set, in set order.
    pub erasure_dist: Vec<u8>,
    /// `CSumAlgo`: bitrot checksum algorithm, [`CHECKSUM_HIGHWAYHASH`].
    pub checksum_algo: u8,
    /// `PartNums`: part numbers.
    pub part_numbers: Vec<i64>,
    /// `PartETags`: per-part ETags; MinIO stores `nil` unless some part
    /// has one (it does not for single-part or, currently, multipart puts).
    pub part_etags: Option<Vec<Text<'a>>>,
    /// `PartSizes`: on-disk part sizes.
    pub part_sizes: Vec<i64>,
    /// `PartASizes`: actual (uncompressed/unencrypted) part sizes.
    pub part_actual_sizes: Option<Vec<i64>>,
    /// `PartIdx`: per-part compression indexes; the key is omitted when `None`.
    pub part_indices: Option<Vec<Cow<'a, [u8]>>>,
    /// `Size`: object size.
    pub size: i64,
    /// `MTime`: modification time in Unix nanoseconds.
    pub mod_time: i64,
    /// `MetaSys`: internal metadata (`x-minio-internal-*`), `nil` if `None`.
    pub meta_sys: Option<SysMeta<'a>>,
    /// `MetaUsr`: user-visible metadata: `etag`, `content-type`,
    /// `X-Amz-Meta-*` … `nil` if `None`.
    pub meta_user: Option<UserMeta<'a>>,
    /// Fields this crate does not know, kept for round trips.
    pub unknown: Vec<RawField<'a>>,
}

/// The erasure layout of a new object version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErasureParams {
    /// Data shards (`EcM`).
    pub data_blocks: u8,
    /// Parity shards (`EcN`).
    pub parity_blocks: u8,
    /// Erasure block size in bytes (MinIO: 1 MiB).
    pub block_size: i64,
    /// `EcDist`: the 1-based shard index of each drive of the set.
    pub distribution: Vec<u8>,
}

/// One delete marker (`DelObj`, MinIO's `xlMetaV2DeleteMarker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteMarker<'a> {
    /// `ID`: the version id of the marker.
    pub version_id: [u8; 16],
    /// `MTime`: Unix nanoseconds.
    pub mod_time: i64,
    /// `MetaSys`: omitted when `None`. MinIO writes an empty map for plain
    /// delete markers.
    pub meta_sys: Option<SysMeta<'a>>,
    /// Unknown fields, kept for round trips.
    pub unknown: Vec<RawField<'a>>,
}

/// A legacy object (`V1Obj`): an object written before versioning existed,
/// migrated from `xl.json`.
///
/// Only reported, not modelled: the encoded map is kept verbatim and written
/// back unchanged; a few fields are parsed for reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyObject<'a> {
    raw: Cow<'a, [u8]>,
    version: Text<'a>,
    format: Text<'a>,
    size: i64,
    mod_time: MsgTime,
    data_blocks: i64,
    parity_blocks: i64,
    erasure_index: i64,
    data_dir: Text<'a>,
}

/// The body of a journal entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionKind<'a> {
    /// `Type` 1 with `V2Obj`.
    Object(ObjectVersion<'a>),
    /// `Type` 2 with `DelObj`.
    DeleteMarker(DeleteMarker<'a>),
    /// `Type` 3 with `V1Obj`.
    Legacy(LegacyObject<'a>),
}

/// A complete version as stored in the journal (MinIO's `xlMetaV2Version`):
/// the outer map `{Type, V2Obj|DelObj|V1Obj, v}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version<'a> {
    /// The version itself.
    pub kind: VersionKind<'a>,
    /// `v`: the writer's release as a Unix time (MinIO's `globalVersionUnix`;
    /// 0 for development builds). `None` if the key is absent (older files).
    pub written_by_version: Option<u64>,
    /// Unknown fields of the outer map, kept for round trips.
    pub unknown: Vec<RawField<'a>>,
}

impl<'a> ObjectVersion<'a> {
    /// A version as MinIO's `AddVersion` builds it: Reed-Solomon, HighwayHash,
    /// `nil` part ETags and indexes, empty (non-nil) metadata maps, no parts.
    /// Add parts with [`ObjectVersion::push_part`].
    pub fn new(
        version_id: [u8; 16],
        data_dir: [u8; 16],
        mod_time: i64,
        size: i64,
        erasure: ErasureParams,
    ) -> Self {
        ObjectVersion {
            version_id,
            data_dir,
            erasure_algorithm: ERASURE_REED_SOLOMON,
            erasure_m: i64::from(erasure.data_blocks),
            erasure_n: i64::from(erasure.parity_blocks),
            erasure_block_size: erasure.block_size,
            erasure_index: 0,
            erasure_dist: erasure.distribution,
            checksum_algo: CHECKSUM_HIGHWAYHASH,
            part_numbers: Vec::new(),
            part_etags: None,
            part_sizes: Vec::new(),
            part_actual_sizes: Some(Vec::new()),
            part_indices: None,
            size,
            mod_time,
            meta_sys: Some(MetaMap::new()),
            meta_user: Some(MetaMap::new()),
            unknown: Vec::new(),
        }
    }

    /// Append a part, keeping MinIO's invariant that `PartETags` is `nil`
    /// unless at least one part has an ETag (then it has one per part).
    pub fn push_part(&mut self, number: i64, size: i64, actual_size: i64, etag: Option<&str>) {
        let before = self.part_numbers.len();
        self.part_numbers.push(number);
        self.part_sizes.push(size);
        self.part_actual_sizes
            .get_or_insert_with(Vec::new)
            .push(actual_size);
        match (&mut self.part_etags, etag) {
            (Some(tags), e) => tags.push(Text::from(e.unwrap_or("").to_owned())),
            (None, Some(e)) if !e.is_empty() => {
                let mut tags: Vec<Text<'a>> = vec![Text::default(); before];
                tags.push(Text::from(e.to_owned()));
                self.part_etags = Some(tags);
            }
            (None, _) => {}
        }
    }

    /// The shard index MinIO stores for the drive at position `drive` of the
    /// erasure set: `EcDist[drive]`.
    pub fn ec_index_for_drive(&self, drive: usize) -> Option<i64> {
        self.erasure_dist.get(drive).map(|&d| i64::from(d))
    }

    /// A `MetaSys` value.
    pub fn sys(&self, key: &str) -> Option<&[u8]> {
        self.meta_sys.as_ref()?.get(key).map(|v| &v[..])
    }

    /// A `MetaUsr` value.
    pub fn user(&self, key: &str) -> Option<&Text<'a>> {
        self.meta_user.as_ref()?.get(key)
    }

    /// Set a `MetaSys` value (creating the map if it was `nil`).
    pub fn set_sys(&mut self, key: impl Into<Text<'a>>, value: impl Into<Cow<'a, [u8]>>) {
        self.meta_sys
            .get_or_insert_with(MetaMap::new)
            .insert(key, value.into());
    }

    /// Set a `MetaUsr` value (creating the map if it was `nil`).
    pub fn set_user(&mut self, key: impl Into<Text<'a>>, value: impl Into<Text<'a>>) {
        self.meta_user
            .get_or_insert_with(MetaMap::new)
            .insert(key, value.into());
    }

    /// The ETag, which MinIO keeps in `MetaUsr["etag"]`.
    pub fn etag(&self) -> Option<&Text<'a>> {
        self.user(META_ETAG)
    }

    /// The content type, `MetaUsr["content-type"]`.
    pub fn content_type(&self) -> Option<&Text<'a>> {
        self.user(META_CONTENT_TYPE)
    }

    /// Whether `MetaSys` marks the data as inline.
    pub fn inline_data(&self) -> bool {
        self.sys(META_INLINE_DATA).is_some()
    }

    /// MinIO's `UsesDataDir` at time `now_unix_secs`: true unless the data
    /// was transitioned to a remote tier and is not currently restored.
    pub fn uses_data_dir_at(&self, now_unix_secs: i64) -> bool {
        if self.sys(META_TRANSITION_STATUS) != Some(TRANSITION_COMPLETE.as_bytes()) {
            return true;
        }
        match self.user(META_AMZ_RESTORE).and_then(|t| t.as_str()) {
            Some(hdr) => restored_on_disk(hdr, now_unix_secs),
            None => false,
        }
    }

    /// MinIO's `Valid()` for object versions.
    pub fn validate(&self) -> Result<(), Error> {
        if self.erasure_algorithm != ERASURE_REED_SOLOMON {
            return Err(Error::InvalidVersion("unknown erasure algorithm"));
        }
        if self.checksum_algo != CHECKSUM_HIGHWAYHASH {
            return Err(Error::InvalidVersion("unknown checksum algorithm"));
        }
        if !(self.erasure_m >= self.erasure_n && self.erasure_m > 0 && self.erasure_n >= 0) {
            return Err(Error::InvalidVersion("invalid erasure data/parity counts"));
        }
        if self.mod_time <= 0 {
            return Err(Error::InvalidVersion("modification time must be positive"));
        }
        Ok(())
    }

    fn decode(r: &mut Reader<'a>) -> Result<Self, Error> {
        let n = r.read_map_len().ctx("V2Obj")?;
        let mut o = ObjectVersion {
            version_id: [0; 16],
            data_dir: [0; 16],
            erasure_algorithm: 0,
            erasure_m: 0,
            erasure_n: 0,
            erasure_block_size: 0,
            erasure_index: 0,
            erasure_dist: Vec::new(),
            checksum_algo: 0,
            part_numbers: Vec::new(),
            part_etags: None,
            part_sizes: Vec::new(),
            part_actual_sizes: None,
            part_indices: None,
            size: 0,
            mod_time: 0,
            meta_sys: None,
            meta_user: None,
            unknown: Vec::new(),
        };
        for _ in 0..n {
            let key = r.read_key().ctx("V2Obj field name")?;
            match key {
                b"ID" => o.version_id = r.read_bin_array().ctx("V2Obj.ID")?,
                b"DDir" => o.data_dir = r.read_bin_array().ctx("V2Obj.DDir")?,
                b"EcAlgo" => o.erasure_algorithm = r.read_u8().ctx("V2Obj.EcAlgo")?,
                b"EcM" => o.erasure_m = r.read_i64().ctx("V2Obj.EcM")?,
                b"EcN" => o.erasure_n = r.read_i64().ctx("V2Obj.EcN")?,
                b"EcBSize" => o.erasure_block_size = r.read_i64().ctx("V2Obj.EcBSize")?,
                b"EcIndex" => o.erasure_index = r.read_i64().ctx("V2Obj.EcIndex")?,
                b"EcDist" => {
                    o.erasure_dist = read_array(r, "V2Obj.EcDist", |r| r.read_u8())?;
                }
                b"CSumAlgo" => o.checksum_algo = r.read_u8().ctx("V2Obj.CSumAlgo")?,
                b"PartNums" => {
                    o.part_numbers = read_array(r, "V2Obj.PartNums", |r| r.read_i64())?;
                }
                b"PartETags" => {
                    o.part_etags = read_nullable(r, |r| {
                        read_array(r, "V2Obj.PartETags", |r| r.read_bin().map(Text::borrowed))
                    })?;
                }
                b"PartSizes" => {
                    o.part_sizes = read_array(r, "V2Obj.PartSizes", |r| r.read_i64())?;
                }
                b"PartASizes" => {
                    o.part_actual_sizes =
                        read_nullable(r, |r| read_array(r, "V2Obj.PartASizes", |r| r.read_i64()))?;
                }
                b"PartIdx" => {
                    o.part_indices = read_nullable(r, |r| {
                        read_array(r, "V2Obj.PartIdx", |r| r.read_bin().map(Cow::Borrowed))
                    })?;
                }
                b"Size" => o.size = r.read_i64().ctx("V2Obj.Size")?,
                b"MTime" => o.mod_time = r.read_i64().ctx("V2Obj.MTime")?,
                b"MetaSys" => o.meta_sys = read_nullable(r, |r| read_sys_meta(r, "V2Obj.MetaSys"))?,
                b"MetaUsr" => o.meta_user = read_nullable(r, read_user_meta)?,
                _ => o.unknown.push(RawField {
                    key: Text::borrowed(key),
                    value: Cow::Borrowed(r.skip().ctx("V2Obj unknown field")?),
                }),
            }
        }
        Ok(o)
    }

    /// Encode the `V2Obj` map. With `for_signature`, produce the variant
    /// MinIO hashes: `EcIndex` zeroed, all-empty ETags and empty actual
    /// sizes and indexes treated as `nil`, both metadata maps `nil`, and no
    /// unknown fields (MinIO's struct does not carry them).
    fn encode(&self, w: &mut Writer, for_signature: bool) {
        let etags = match &self.part_etags {
            Some(t) if for_signature && t.iter().all(Text::is_empty) => None,
            other => other.as_ref(),
        };
        let asizes = match &self.part_actual_sizes {
            Some(s) if for_signature && s.is_empty() => None,
            other => other.as_ref(),
        };
        let indices = match &self.part_indices {
            Some(s) if for_signature && s.is_empty() => None,
            other => other.as_ref(),
        };
        let unknown: &[RawField<'a>] = if for_signature { &[] } else { &self.unknown };
        w.map_len(17 + usize::from(indices.is_some()) + unknown.len());
        w.str(b"ID");
        w.bin(&self.version_id);
        w.str(b"DDir");
        w.bin(&self.data_dir);
        w.str(b"EcAlgo");
        w.uint(u64::from(self.erasure_algorithm));
        w.str(b"EcM");
        w.int(self.erasure_m);
        w.str(b"EcN");
        w.int(self.erasure_n);
        w.str(b"EcBSize");
        w.int(self.erasure_block_size);
        w.str(b"EcIndex");
        w.int(if for_signature { 0 } else { self.erasure_index });
        w.str(b"EcDist");
        w.array_len(self.erasure_dist.len());
        for &d in &self.erasure_dist {
            w.uint(u64::from(d));
        }
        w.str(b"CSumAlgo");
        w.uint(u64::from(self.checksum_algo));
        w.str(b"PartNums");
        write_ints(w, &self.part_numbers);
        w.str(b"PartETags");
        match etags {
            None => w.nil(),
            Some(tags) => {
                w.array_len(tags.len());
                for t in tags {
                    w.str(t.as_bytes());
                }
            }
        }
        w.str(b"PartSizes");
        write_ints(w, &self.part_sizes);
        w.str(b"PartASizes");
        match asizes {
            None => w.nil(),
            Some(s) => write_ints(w, s),
        }
        if let Some(idx) = indices {
            w.str(b"PartIdx");
            w.array_len(idx.len());
            for b in idx {
                w.bin(b);
            }
        }
        w.str(b"Size");
        w.int(self.size);
        w.str(b"MTime");
        w.int(self.mod_time);
        w.str(b"MetaSys");
        match (&self.meta_sys, for_signature) {
            (Some(m), false) => write_sys_meta(w, m),
            _ => w.nil(),
        }
        w.str(b"MetaUsr");
        match (&self.meta_user, for_signature) {
            (Some(m), false) => {
                w.map_len(m.len());
                for (k, v) in m.iter() {
                    w.str(k.as_bytes());
                    w.str(v.as_bytes());
                }
            }
            _ => w.nil(),
        }
        write_unknown(w, unknown);
    }

    /// MinIO's `xlMetaV2Object.Signature`.
    pub fn signature(&self) -> [u8; 4] {
        let mut crc =
            hash_user_meta(self.meta_user.as_ref()) ^ hash_sys_meta(self.meta_sys.as_ref());
        let mut w = Writer::new();
        self.encode(&mut w, true);
        crc ^= xxh64(&w.buf, 0);
        fold_signature(crc)
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> ObjectVersion<'static> {
        ObjectVersion {
            version_id: self.version_id,
            data_dir: self.data_dir,
            erasure_algorithm: self.erasure_algorithm,
            erasure_m: self.erasure_m,
            erasure_n: self.erasure_n,
            erasure_block_size: self.erasure_block_size,
            erasure_index: self.erasure_index,
            erasure_dist: self.erasure_dist,
            checksum_algo: self.checksum_algo,
            part_numbers: self.part_numbers,
            part_etags: self.part_etags.into_owned(),
            part_sizes: self.part_sizes,
            part_actual_sizes: self.part_actual_sizes,
            part_indices: self.part_indices.into_owned(),
            size: self.size,
            mod_time: self.mod_time,
            meta_sys: self.meta_sys.into_owned(),
            meta_user: self.meta_user.into_owned(),
            unknown: self.unknown.into_owned(),
        }
    }
}

impl<'a> DeleteMarker<'a> {
    /// A plain delete marker as MinIO writes one (with an empty, non-nil
    /// `MetaSys`).
    pub fn new(version_id: [u8; 16], mod_time: i64) -> Self {
        DeleteMarker {
            version_id,
            mod_time,
            meta_sys: Some(MetaMap::new()),
            unknown: Vec::new(),
        }
    }

    /// Whether `MetaSys` makes this a free version (tracks tiered data).
    pub fn free_version(&self) -> bool {
        self.meta_sys
            .as_ref()
            .is_some_and(|m| m.contains_key(META_FREE_VERSION))
    }

    fn decode(r: &mut Reader<'a>) -> Result<Self, Error> {
        let n = r.read_map_len().ctx("DelObj")?;
        let mut d = DeleteMarker {
            version_id: [0; 16],
            mod_time: 0,
            meta_sys: None,
            unknown: Vec::new(),
        };
        for _ in 0..n {
            let key = r.read_key().ctx("DelObj field name")?;
            match key {
                b"ID" => d.version_id = r.read_bin_array().ctx("DelObj.ID")?,
                b"MTime" => d.mod_time = r.read_i64().ctx("DelObj.MTime")?,
                b"MetaSys" => {
                    d.meta_sys = read_nullable(r, |r| read_sys_meta(r, "DelObj.MetaSys"))?
                }
                _ => d.unknown.push(RawField {
                    key: Text::borrowed(key),
                    value: Cow::Borrowed(r.skip().ctx("DelObj unknown field")?),
                }),
            }
        }
        Ok(d)
    }

    fn encode(&self, w: &mut Writer, for_signature: bool) {
        let meta = if for_signature {
            None
        } else {
            self.meta_sys.as_ref()
        };
        let unknown: &[RawField<'a>] = if for_signature { &[] } else { &self.unknown };
        w.map_len(2 + usize::from(meta.is_some()) + unknown.len());
        w.str(b"ID");
        w.bin(&self.version_id);
        w.str(b"MTime");
        w.int(self.mod_time);
        if let Some(m) = meta {
            w.str(b"MetaSys");
            write_sys_meta(w, m);
        }
        write_unknown(w, unknown);
    }

    /// MinIO's `xlMetaV2DeleteMarker.Signature`.
    pub fn signature(&self) -> [u8; 4] {
        let mut crc = hash_sys_meta(self.meta_sys.as_ref());
        let mut w = Writer::new();
        self.encode(&mut w, true);
        crc ^= xxh64(&w.buf, 0);
        fold_signature(crc)
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> DeleteMarker<'static> {
        DeleteMarker {
            version_id: self.version_id,
            mod_time: self.mod_time,
            meta_sys: self.meta_sys.into_owned(),
            unknown: self.unknown.into_owned(),
        }
    }
}

impl<'a> LegacyObject<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self, Error> {
        let raw = r.skip().ctx("V1Obj")?;
        let mut l = LegacyObject {
            raw: Cow::Borrowed(raw),
            version: Text::default(),
            format: Text::default(),
            size: 0,
            mod_time: MsgTime::GO_ZERO,
            data_blocks: 0,
            parity_blocks: 0,
            erasure_index: 0,
            data_dir: Text::default(),
        };
        let mut r = Reader::new(raw);
        let n = r.read_map_len().ctx("V1Obj")?;
        for _ in 0..n {
            match r.read_key().ctx("V1Obj field name")? {
                b"Version" => l.version = Text::borrowed(r.read_bin().ctx("V1Obj.Version")?),
                b"Format" => l.format = Text::borrowed(r.read_bin().ctx("V1Obj.Format")?),
                b"DataDir" => l.data_dir = Text::borrowed(r.read_bin().ctx("V1Obj.DataDir")?),
                b"Stat" => {
                    let n = r.read_map_len().ctx("V1Obj.Stat")?;
                    for _ in 0..n {
                        match r.read_key().ctx("V1Obj.Stat field name")? {
                            b"Size" => l.size = r.read_i64().ctx("V1Obj.Stat.Size")?,
                            b"ModTime" => l.mod_time = r.read_time().ctx("V1Obj.Stat.ModTime")?,
                            _ => {
                                r.skip().ctx("V1Obj.Stat")?;
                            }
                        }
                    }
                }
                b"Erasure" => {
                    let n = r.read_map_len().ctx("V1Obj.Erasure")?;
                    for _ in 0..n {
                        match r.read_key().ctx("V1Obj.Erasure field name")? {
                            b"DataBlocks" => {
                                l.data_blocks = r.read_i64().ctx("V1Obj.Erasure.DataBlocks")?;
                            }
                            b"ParityBlocks" => {
                                l.parity_blocks = r.read_i64().ctx("V1Obj.Erasure.ParityBlocks")?;
                            }
                            b"Index" => {
                                l.erasure_index = r.read_i64().ctx("V1Obj.Erasure.Index")?;
                            }
                            _ => {
                                r.skip().ctx("V1Obj.Erasure")?;
                            }
                        }
                    }
                }
                _ => {
                    r.skip().ctx("V1Obj")?;
                }
            }
        }
        Ok(l)
    }

    /// The complete stored `V1Obj` map, written back verbatim.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// `Version` ("1.0.0" or "1.0.1").
    pub fn version(&self) -> &Text<'a> {
        &self.version
    }

    /// `Format` ("xl").
    pub fn format(&self) -> &Text<'a> {
        &self.format
    }

    /// `Stat.Size`.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// `Stat.ModTime`.
    pub fn mod_time(&self) -> MsgTime {
        self.mod_time
    }

    /// `Erasure.DataBlocks` and `Erasure.ParityBlocks`.
    pub fn erasure(&self) -> (i64, i64) {
        (self.data_blocks, self.parity_blocks)
    }

    /// `Erasure.Index`.
    pub fn erasure_index(&self) -> i64 {
        self.erasure_index
    }

    /// `DataDir` (always "legacy").
    pub fn data_dir(&self) -> &Text<'a> {
        &self.data_dir
    }

    /// MinIO's `xlMetaV1Object.valid()`.
    pub fn validate(&self) -> Result<(), Error> {
        let version_ok = self.version == "1.0.1" || self.version == "1.0.0";
        if !version_ok || self.format != "xl" {
            return Err(Error::InvalidVersion("unknown legacy format"));
        }
        let (m, n) = (self.data_blocks, self.parity_blocks);
        if !(m >= n && m > 0 && n >= 0) {
            return Err(Error::InvalidVersion("invalid erasure data/parity counts"));
        }
        Ok(())
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> LegacyObject<'static> {
        LegacyObject {
            raw: IntoOwned::into_owned(self.raw),
            version: self.version.into_owned(),
            format: self.format.into_owned(),
            size: self.size,
            mod_time: self.mod_time,
            data_blocks: self.data_blocks,
            parity_blocks: self.parity_blocks,
            erasure_index: self.erasure_index,
            data_dir: self.data_dir.into_owned(),
        }
    }
}

impl<'a> Version<'a> {
    /// An object version written by release `written_by_version`.
    pub fn object(obj: ObjectVersion<'a>, written_by_version: u64) -> Self {
        Version {
            kind: VersionKind::Object(obj),
            written_by_version: Some(written_by_version),
            unknown: Vec::new(),
        }
    }

    /// A delete marker written by release `written_by_version`.
    pub fn delete_marker(dm: DeleteMarker<'a>, written_by_version: u64) -> Self {
        Version {
            kind: VersionKind::DeleteMarker(dm),
            written_by_version: Some(written_by_version),
            unknown: Vec::new(),
        }
    }

    /// The entry kind.
    pub fn version_type(&self) -> VersionType {
        match self.kind {
            VersionKind::Object(_) => VersionType::Object,
            VersionKind::DeleteMarker(_) => VersionType::DeleteMarker,
            VersionKind::Legacy(_) => VersionType::Legacy,
        }
    }

    /// The version id (zero for legacy objects, as in MinIO's header).
    pub fn version_id(&self) -> [u8; 16] {
        match &self.kind {
            VersionKind::Object(o) => o.version_id,
            VersionKind::DeleteMarker(d) => d.version_id,
            VersionKind::Legacy(_) => [0; 16],
        }
    }

    /// Modification time in Unix nanoseconds.
    pub fn mod_time(&self) -> i64 {
        match &self.kind {
            VersionKind::Object(o) => o.mod_time,
            VersionKind::DeleteMarker(d) => d.mod_time,
            VersionKind::Legacy(l) => l.mod_time.unix_nanos_wrapping(),
        }
    }

    /// The object version, if this is one.
    pub fn as_object(&self) -> Option<&ObjectVersion<'a>> {
        match &self.kind {
            VersionKind::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The object version, mutably.
    pub fn as_object_mut(&mut self) -> Option<&mut ObjectVersion<'a>> {
        match &mut self.kind {
            VersionKind::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The delete marker, if this is one.
    pub fn as_delete_marker(&self) -> Option<&DeleteMarker<'a>> {
        match &self.kind {
            VersionKind::DeleteMarker(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this is a free version (a delete marker tracking tiered data).
    pub fn free_version(&self) -> bool {
        matches!(&self.kind, VersionKind::DeleteMarker(d) if d.free_version())
    }

    /// MinIO's `Valid()`: the checks it applies before adding a version.
    pub fn validate(&self) -> Result<(), Error> {
        match &self.kind {
            VersionKind::Object(o) => o.validate(),
            VersionKind::DeleteMarker(d) if d.mod_time > 0 => Ok(()),
            VersionKind::DeleteMarker(_) => {
                Err(Error::InvalidVersion("modification time must be positive"))
            }
            VersionKind::Legacy(l) => l.validate(),
        }
    }

    /// MinIO's version signature: an xxhash64 of the msgp encoding with the
    /// per-drive fields zeroed and the metadata maps removed, XORed with an
    /// order-independent xxh3 hash of those maps, folded to 32 bits
    /// (`lo ^ hi`, little-endian).
    ///
    /// Legacy objects return zeroes: MinIO hashes its full `xlMetaV1Object`
    /// struct, which this crate does not model. Their stored headers are
    /// kept as read, so this only matters for legacy objects read from a
    /// pre-1.3 xl.meta, whose headers must be computed.
    pub fn signature(&self) -> [u8; 4] {
        match &self.kind {
            VersionKind::Object(o) => o.signature(),
            VersionKind::DeleteMarker(d) => d.signature(),
            VersionKind::Legacy(_) => [0; 4],
        }
    }

    /// The journal header MinIO derives for this version, evaluated now
    /// (only the data-dir flag of restored tiered objects depends on time).
    pub fn header(&self) -> VersionHeader {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        self.header_at(now)
    }

    /// The journal header MinIO derives for this version at `now_unix_secs`.
    pub fn header_at(&self, now_unix_secs: i64) -> VersionHeader {
        let mut flags = 0;
        if self.free_version() {
            flags |= VersionFlags::FREE_VERSION;
        }
        let (mut ec_m, mut ec_n) = (0, 0);
        if let VersionKind::Object(o) = &self.kind {
            if o.uses_data_dir_at(now_unix_secs) {
                flags |= VersionFlags::USES_DATA_DIR;
            }
            if o.inline_data() {
                flags |= VersionFlags::INLINE_DATA;
            }
            // Go's uint8(int) conversion truncates.
            ec_m = o.erasure_m as u8;
            ec_n = o.erasure_n as u8;
        }
        VersionHeader {
            version_id: self.version_id(),
            mod_time: self.mod_time(),
            signature: self.signature(),
            version_type: self.version_type(),
            flags: VersionFlags(flags),
            ec_n,
            ec_m,
        }
    }

    /// Decode a version body (the msgpack map stored in the journal).
    /// Bytes after the map are ignored, as MinIO does.
    pub fn decode(buf: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(buf);
        Self::decode_from(&mut r)
    }

    pub(crate) fn decode_from(r: &mut Reader<'a>) -> Result<Self, Error> {
        let n = r.read_map_len().ctx("version")?;
        let mut type_byte = None;
        let mut written_by_version = None;
        let mut bodies: Vec<(&'a [u8], Reader<'a>)> = Vec::new();
        let mut unknown = Vec::new();
        for _ in 0..n {
            let key = r.read_key().ctx("version field name")?;
            match key {
                b"Type" => type_byte = Some(r.read_u8().ctx("version Type")?),
                b"v" => written_by_version = Some(r.read_u64().ctx("version v")?),
                b"V1Obj" | b"V2Obj" | b"DelObj" => {
                    let at = r.clone();
                    let raw = r.skip().ctx("version body")?;
                    // A nil body is what msgp omits anyway; drop it.
                    if raw != [0xc0] {
                        bodies.push((key, at));
                    }
                }
                _ => unknown.push(RawField {
                    key: Text::borrowed(key),
                    value: Cow::Borrowed(r.skip().ctx("version unknown field")?),
                }),
            }
        }
        let vt = type_byte
            .and_then(VersionType::from_u8)
            .ok_or(Error::Invalid("missing or unknown version Type"))?;
        let want: &[u8] = match vt {
            VersionType::Object => b"V2Obj",
            VersionType::DeleteMarker => b"DelObj",
            VersionType::Legacy => b"V1Obj",
        };
        let mut kind = None;
        for (key, mut at) in bodies {
            if key == want {
                kind = Some(match vt {
                    VersionType::Object => VersionKind::Object(ObjectVersion::decode(&mut at)?),
                    VersionType::DeleteMarker => {
                        VersionKind::DeleteMarker(DeleteMarker::decode(&mut at)?)
                    }
                    VersionType::Legacy => VersionKind::Legacy(LegacyObject::decode(&mut at)?),
                });
            } else {
                // A body that does not match the type: keep it verbatim.
                unknown.push(RawField {
                    key: Text::borrowed(key),
                    value: Cow::Borrowed(at.skip().ctx("version body")?),
                });
            }
        }
        let kind = kind.ok_or(Error::Invalid("version body missing for its Type"))?;
        Ok(Version {
            kind,
            written_by_version,
            unknown,
        })
    }

    /// Encode the version body as MinIO does: `Type`, the body, `v`, then
    /// any unknown fields.
    pub fn encode(&self, w: &mut Writer) {
        w.map_len(2 + usize::from(self.written_by_version.is_some()) + self.unknown.len());
        w.str(b"Type");
        w.uint(u64::from(self.version_type().as_u8()));
        match &self.kind {
            VersionKind::Legacy(l) => {
                w.str(b"V1Obj");
                w.raw(&l.raw);
            }
            VersionKind::Object(o) => {
                w.str(b"V2Obj");
                o.encode(w, false);
            }
            VersionKind::DeleteMarker(d) => {
                w.str(b"DelObj");
                d.encode(w, false);
            }
        }
        if let Some(v) = self.written_by_version {
            w.str(b"v");
            w.uint(v);
        }
        write_unknown(w, &self.unknown);
    }

    /// Encode into a fresh buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> Version<'static> {
        Version {
            kind: match self.kind {
                VersionKind::Object(o) => VersionKind::Object(o.into_owned()),
                VersionKind::DeleteMarker(d) => VersionKind::DeleteMarker(d.into_owned()),
                VersionKind::Legacy(l) => VersionKind::Legacy(l.into_owned()),
            },
            written_by_version: self.written_by_version,
            unknown: self.unknown.into_owned(),
        }
    }
}

fn read_array<'a, T>(
    r: &mut Reader<'a>,
    ctx: &'static str,
    mut f: impl FnMut(&mut Reader<'a>) -> Result<T, crate::msgp::DecodeError>,
) -> Result<Vec<T>, Error> {
    let n = r.read_array_len().ctx(ctx)?;
    // Never trust the count for allocation: each element takes >= 1 byte.
    let mut v = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        v.push(f(r).ctx(ctx)?);
    }
    Ok(v)
}

fn read_nullable<'a, T>(
    r: &mut Reader<'a>,
    f: impl FnOnce(&mut Reader<'a>) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    if r.is_nil() {
        r.read_nil().ctx("nil")?;
        Ok(None)
    } else {
        f(r).map(Some)
    }
}

fn read_sys_meta<'a>(r: &mut Reader<'a>, ctx: &'static str) -> Result<SysMeta<'a>, Error> {
    let n = r.read_map_len().ctx(ctx)?;
    let mut m = MetaMap::with_capacity(n.min(r.remaining() / 2));
    for _ in 0..n {
        let k = r.read_str().ctx(ctx)?;
        let v = r.read_bin().ctx(ctx)?;
        m.insert(Text::borrowed(k), Cow::Borrowed(v));
    }
    Ok(m)
}

fn read_user_meta<'a>(r: &mut Reader<'a>) -> Result<UserMeta<'a>, Error> {
    let ctx = "V2Obj.MetaUsr";
    let n = r.read_map_len().ctx(ctx)?;
    let mut m = MetaMap::with_capacity(n.min(r.remaining() / 2));
    for _ in 0..n {
        let k = r.read_str().ctx(ctx)?;
        let v = r.read_bin().ctx(ctx)?;
        m.insert(Text::borrowed(k), Text::borrowed(v));
    }
    Ok(m)
}

fn write_ints(w: &mut Writer, v: &[i64]) {
    w.array_len(v.len());
    for &x in v {
        w.int(x);
    }
}

fn write_sys_meta(w: &mut Writer, m: &SysMeta<'_>) {
    w.map_len(m.len());
    for (k, v) in m.iter() {
        w.str(k.as_bytes());
        w.bin(v);
    }
}

fn write_unknown(w: &mut Writer, fields: &[RawField<'_>]) {
    for f in fields {
        w.str(f.key.as_bytes());
        w.raw(&f.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ObjectVersion<'static> {
        let mut o = ObjectVersion::new(
            [3; 16],
            [4; 16],
            1_700_000_000_000_000_000,
            300,
            ErasureParams {
                data_blocks: 2,
                parity_blocks: 2,
                block_size: 1 << 20,
                distribution: vec![1, 2, 3, 4],
            },
        );
        o.push_part(1, 300, 300, None);
        o.set_user(META_ETAG, "abc");
        o.set_sys("x-minio-internal-inline-data", b"true".to_vec());
        o
    }

    #[test]
    fn object_round_trip_and_signature_ignores_index() {
        let mut o = sample();
        let v = Version::object(o.clone(), 0);
        let bytes = v.to_bytes();
        let back = Version::decode(&bytes).unwrap();
        assert_eq!(back, v);
        assert_eq!(back.to_bytes(), bytes);
        let sig = o.signature();
        o.erasure_index = 3;
        assert_eq!(o.signature(), sig, "EcIndex must not affect the signature");
        o.set_user("x-amz-meta-a", "b");
        assert_ne!(o.signature(), sig);
    }

    #[test]
    fn signature_map_order_independent() {
        let mut a = sample();
        a.set_user("k1", "v1");
        a.set_user("k2", "v2");
        let mut b = sample();
        b.set_user("k2", "v2");
        b.set_user("k1", "v1");
        assert_ne!(
            Version::object(a.clone(), 0).to_bytes(),
            Version::object(b.clone(), 0).to_bytes()
        );
        assert_eq!(a.signature(), b.signature());
    }

    #[test]
    fn push_part_etag_invariant() {
        let mut o = sample();
        assert!(o.part_etags.is_none());
        o.push_part(2, 10, 10, Some("e2"));
        let tags = o.part_etags.as_ref().unwrap();
        assert_eq!(tags.len(), 2);
        assert!(tags[0].is_empty());
        assert_eq!(tags[1], "e2");
        o.push_part(3, 10, 10, None);
        assert_eq!(o.part_etags.as_ref().unwrap().len(), 3);
    }

    #[test]
    fn header_flags() {
        let o = sample();
        let h = Version::object(o.clone(), 0).header_at(0);
        assert_eq!(
            h.flags.0,
            VersionFlags::USES_DATA_DIR | VersionFlags::INLINE_DATA
        );
        assert_eq!((h.ec_m, h.ec_n), (2, 2));

        let mut t = o.clone();
        t.set_sys(META_TRANSITION_STATUS, b"complete".to_vec());
        assert!(!t.uses_data_dir_at(0));
        t.set_user(
            META_AMZ_RESTORE,
            "ongoing-request=\"false\", expiry-date=\"Thu, 01 Jan 1970 00:01:40 GMT\"",
        );
        assert!(t.uses_data_dir_at(99));
        assert!(!t.uses_data_dir_at(100));
        t.set_user(META_AMZ_RESTORE, "ongoing-request=\"true\"");
        assert!(!t.uses_data_dir_at(0));

        let mut dm = DeleteMarker::new([9; 16], 5);
        assert_eq!(
            Version::delete_marker(dm.clone(), 0).header_at(0).flags.0,
            0
        );
        dm.meta_sys
            .as_mut()
            .unwrap()
            .insert(META_FREE_VERSION, Cow::Borrowed(&b""[..]));
        let h = Version::delete_marker(dm, 0).header_at(0);
        assert_eq!(h.flags.0, VersionFlags::FREE_VERSION);
        assert_eq!(h.version_type, VersionType::DeleteMarker);
    }

    #[test]
    fn unknown_fields_survive() {
        let mut o = sample();
        let raw_val = {
            let mut w = Writer::new();
            w.array_len(2);
            w.int(1);
            w.str(b"x");
            w.into_inner()
        };
        o.unknown.push(RawField {
            key: Text::from("Future"),
            value: Cow::Owned(raw_val),
        });
        let v = Version::object(o.clone(), 7);
        let bytes = v.to_bytes();
        let back = Version::decode(&bytes).unwrap();
        assert_eq!(back.as_object().unwrap().unknown, o.unknown);
        assert_eq!(back.to_bytes(), bytes);
        // Unknown fields do not change the signature (MinIO drops them).
        assert_eq!(back.signature(), sample().signature());
    }

    #[test]
    fn type_mismatch_is_an_error() {
        let mut w = Writer::new();
        w.map_len(2);
        w.str(b"Type");
        w.uint(1);
        w.str(b"DelObj");
        DeleteMarker::new([1; 16], 1).encode(&mut w, false);
        assert!(Version::decode(&w.into_inner()).is_err());
        assert!(Version::decode(&[0x80]).is_err());
    }
}
