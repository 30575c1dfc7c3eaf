//! Public value types of the object layer.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use uuid::Uuid;

use super::Error;

/// One part of a stored object, as recorded in its `xl.meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    /// Part number (1 for a single-part object).
    pub number: i64,
    /// Bytes of the part.
    pub size: u64,
}

/// What HEAD tells about one version of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Bucket.
    pub bucket: String,
    /// Key.
    pub key: String,
    /// Version id; `None` for the null version.
    pub version_id: Option<Uuid>,
    /// Whether this version is a delete marker (then size, etag, parts are
    /// empty).
    pub delete_marker: bool,
    /// Whether this is the latest version of the key.
    pub is_latest: bool,
    /// Bytes of the object.
    pub size: u64,
    /// The ETag, without quotes: hex MD5 of the content, or
    /// `hex(md5(part md5s))-N` for a multipart object.
    pub etag: String,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mod_time_nanos: i64,
    /// `Content-Type`.
    pub content_type: String,
    /// Other stored headers and user metadata (`x-amz-meta-*`, and standard
    /// headers such as `cache-control`), keys as stored.
    pub metadata: BTreeMap<String, String>,
    /// Parts.
    pub parts: Vec<PartInfo>,
    /// Data shards of the object's erasure coding.
    pub data_shards: usize,
    /// Parity shards.
    pub parity_shards: usize,
    /// Whether the data lives inline in `xl.meta`.
    pub inline: bool,
    /// Internal (system) metadata as stored (`MetaSys`): MinIO keeps, for
    /// example, the sealed keys of encrypted objects here.
    pub internal: BTreeMap<String, Vec<u8>>,
}

impl ObjectInfo {
    /// Modification time as a `SystemTime`.
    pub fn mod_time(&self) -> SystemTime {
        if self.mod_time_nanos >= 0 {
            UNIX_EPOCH + Duration::from_nanos(self.mod_time_nanos as u64)
        } else {
            UNIX_EPOCH
        }
    }
}

/// Options of a PUT.
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// The body's size when the client announced it (`Content-Length`):
    /// a body that ends early or runs long is refused.
    pub size: Option<u64>,
    /// `Content-Type`; `application/octet-stream` when absent.
    pub content_type: Option<String>,
    /// User metadata (`x-amz-meta-*`, keys as the client sent them) and other
    /// stored headers (`cache-control`, `content-encoding`, ...).
    pub metadata: Vec<(String, String)>,
    /// Parity shards for this object (a storage class); the set's default
    /// when `None`.
    pub parity: Option<usize>,
    /// Metadata known only once the body has been read to its end (a
    /// checksum the client sent as a trailer, verified by the reader):
    /// whatever the body's reader has put here when it reports its end is
    /// stored with the version, like `metadata`.
    pub trailing_metadata: Option<TrailingMetadata>,
    /// Internal (system) metadata to store with the version (`MetaSys`;
    /// MinIO keeps an encrypted object's sealed keys there).
    pub internal: Vec<(String, Vec<u8>)>,
    /// The object's size as clients see it when the stored bytes differ
    /// (encrypted objects: the plaintext size), recorded as the part's
    /// actual size as MinIO records it; the stored size when `None`.
    pub actual_size: Option<u64>,
    /// The actual size from the stored size, for a body of unknown length
    /// whose stored bytes differ from what clients see (an encrypted POST
    /// upload: the plaintext size follows from the ciphertext's);
    /// `actual_size` wins when both are given.
    pub actual_size_of: Option<fn(u64) -> Option<u64>>,
    /// The caller supplies the ETag, as an `etag` entry of
    /// `trailing_metadata` (an encrypted object's sealed ETag): the layer
    /// then computes no MD5 of the stored bytes.
    pub caller_etag: bool,
    /// A condition on the key's current version, checked under the
    /// object's write lock right before the commit, so of two conditional
    /// writers racing for one key at most one can see it hold.
    pub precondition: Option<Precondition>,
}

/// Options of a CompleteMultipartUpload.
#[derive(Debug, Clone, Default)]
pub struct CompleteOptions {
    /// A condition on the key's current version, checked under the
    /// object's write lock right before the commit (see
    /// [`PutOptions::precondition`]).
    pub precondition: Option<Precondition>,
    /// The object's checksum from its parts' checksums, computed under the
    /// upload's lock once the parts are chosen (see [`PartsChecksum`]).
    pub checksum: Option<PartsChecksum>,
}

/// Computes the metadata entries of a completed object's checksum (for
/// example `x-amz-checksum-crc32` = `<base64>-3`) from the parts chosen
/// for it, each with its stored checksum; an error refuses the completion.
/// The layer stores what it returns with the version, like user metadata;
/// an error comes back as [`Error::Rejected`](super::Error::Rejected).
#[derive(Clone)]
pub struct PartsChecksum(pub std::sync::Arc<PartsChecksumFn>);

/// The function of a [`PartsChecksum`].
pub type PartsChecksumFn = dyn Fn(
        &[super::multipart::UploadedPart],
    ) -> std::result::Result<Vec<(String, String)>, Box<dyn std::error::Error + Send + Sync>>
    + Send
    + Sync;

impl std::fmt::Debug for PartsChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartsChecksum(..)")
    }
}

/// A conditional write's condition on the key's current (latest) version;
/// a latest version that is a delete marker counts as no object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// `If-None-Match: *`: the key has no object
    /// ([`Error::PreconditionFailed`](super::Error::PreconditionFailed)
    /// otherwise).
    Absent,
    /// `If-Match: <etag>`: the current object's ETag (no quotes) is this
    /// one, or `*` for any (`NoSuchKey` when there is no object,
    /// `PreconditionFailed` when the ETag differs).
    EtagMatches(String),
}

impl Precondition {
    /// Whether the condition holds for the key's `current` version (`None`
    /// when the key has no object or its latest version is a delete
    /// marker): `PreconditionFailed` when it does not, and `NoSuchKey` for
    /// `If-Match` on a key with no object, as S3 answers.
    pub fn check(
        &self,
        current: Option<&ObjectInfo>,
        bucket: &str,
        key: &str,
    ) -> Result<(), Error> {
        let current = current.filter(|c| !c.delete_marker);
        match (self, current) {
            (Precondition::Absent, None) => Ok(()),
            (Precondition::Absent, Some(_)) => Err(Error::PreconditionFailed),
            (Precondition::EtagMatches(_), None) => Err(Error::NoSuchKey {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                delete_marker: false,
            }),
            (Precondition::EtagMatches(want), Some(c)) => {
                let want = want.trim().trim_matches('"');
                if want == "*" || want == c.etag {
                    Ok(())
                } else {
                    Err(Error::PreconditionFailed)
                }
            }
        }
    }
}

/// Metadata a body reader fills in at the end of the body; see
/// [`PutOptions::trailing_metadata`].
pub type TrailingMetadata = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// A byte range of a GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// `bytes=offset-` or `bytes=offset-last` as (offset, Some(length)).
    From {
        /// First byte.
        offset: u64,
        /// Bytes asked for; to the end when `None`.
        length: Option<u64>,
    },
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

impl Range {
    /// The (offset, length) this range selects in an object of `size`
    /// bytes, or `None` if it is not satisfiable.
    pub fn resolve(self, size: u64) -> Option<(u64, u64)> {
        match self {
            Range::From { offset, length } => {
                if offset >= size {
                    return None;
                }
                let len = match length {
                    Some(0) => return None,
                    Some(l) => l.min(size - offset),
                    None => size - offset,
                };
                Some((offset, len))
            }
            Range::Suffix(0) => None,
            Range::Suffix(n) => {
                let n = n.min(size);
                if n == 0 {
                    return None;
                }
                Some((size - n, n))
            }
        }
    }
}

/// Options of a GET or HEAD.
#[derive(Debug, Clone, Copy, Default)]
pub struct GetOptions {
    /// A specific version (`None`: the latest).
    pub version_id: Option<VersionSel>,
    /// A byte range (GET only).
    pub range: Option<Range>,
}

/// A version selector: a version id or the null version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSel {
    /// `versionId=null`.
    Null,
    /// A version id.
    Id(Uuid),
}

impl VersionSel {
    /// Parses S3's `versionId` parameter.
    pub fn parse(s: &str) -> Option<VersionSel> {
        if s == "null" {
            return Some(VersionSel::Null);
        }
        Uuid::parse_str(s).ok().map(VersionSel::Id)
    }

    pub(crate) fn bytes(self) -> [u8; 16] {
        match self {
            VersionSel::Null => [0; 16],
            VersionSel::Id(u) => *u.as_bytes(),
        }
    }
}

/// What a DELETE did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    /// The version removed, or the delete marker created.
    pub version_id: Option<Uuid>,
    /// Whether a delete marker was created (or the version removed was one).
    pub delete_marker: bool,
}

/// Drives that misbehaved while serving a read: the object should be healed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Set positions of drives whose shard was missing, unreadable or
    /// corrupt.
    pub bad_drives: Vec<usize>,
}

/// One bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// Name.
    pub name: String,
    /// Creation time, nanoseconds since the Unix epoch.
    pub created_nanos: i64,
    /// Whether versioning is enabled.
    pub versioning: bool,
}

/// Result of a heal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealResult {
    /// Set positions of drives whose shards or metadata were rewritten.
    pub healed_drives: Vec<usize>,
    /// Set positions of drives that needed healing and could not be
    /// written (offline, failing): the version is not whole yet.
    pub failed_drives: Vec<usize>,
    /// Size of the version (0 for a delete marker), whether or not a
    /// drive needed it.
    pub bytes: u64,
    /// Per drive of the set, in set order: what it held of the version
    /// before the heal.
    pub before: Vec<DriveHealState>,
    /// Per drive of the set: what it holds after the heal (equal to
    /// `before` for the drives nothing was written to, every drive in a
    /// dry run).
    pub after: Vec<DriveHealState>,
    /// Data shards of the version (for a delete marker, the set's
    /// default).
    pub data_blocks: usize,
    /// Parity shards of the version (for a delete marker, the set's
    /// default).
    pub parity_blocks: usize,
}

/// What one drive holds of a version (or of a bucket's volume), as a heal
/// finds it: the states MinIO's heal reports name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriveHealState {
    /// Intact: the metadata agrees and every shard record verifies.
    #[default]
    Ok,
    /// Not there: no metadata, metadata without the version or older than
    /// it, a missing shard file.
    Missing,
    /// There, but damaged: metadata that does not decode, a shard record
    /// whose hash does not match, a shard file of the wrong size.
    Corrupt,
    /// The drive did not answer (offline, past its deadline, failing).
    Offline,
    /// The drive answered with another error (access denied, ...).
    Unknown,
}

impl DriveHealState {
    /// The state a drive's error stands for.
    pub fn of_error(e: &drive::DriveError) -> DriveHealState {
        use drive::DriveError as E;
        match e {
            E::FileNotFound | E::VolumeNotFound => DriveHealState::Missing,
            E::TooLarge { .. } | E::IsDirectory | E::NotDirectory => DriveHealState::Corrupt,
            E::Unformatted => DriveHealState::Offline,
            e if e.is_fault() => DriveHealState::Offline,
            _ => DriveHealState::Unknown,
        }
    }
}

/// A bucket's versioning state, as S3 defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Versioning {
    /// Never enabled: every key has only its null version.
    #[default]
    Unversioned,
    /// Every PUT makes a new version; DELETE adds a delete marker.
    Enabled,
    /// PUT replaces the null version; DELETE replaces it with a null
    /// delete marker; older versions stay.
    Suspended,
}

impl Versioning {
    /// From a `VersioningConfiguration` document (MinIO keeps it in the
    /// bucket's `.metadata.bin`).
    pub fn from_config_xml(xml: &[u8]) -> Versioning {
        let s = String::from_utf8_lossy(xml);
        if s.contains("<Status>Enabled</Status>") {
            Versioning::Enabled
        } else if s.contains("<Status>Suspended</Status>") {
            Versioning::Suspended
        } else {
            Versioning::Unversioned
        }
    }

    /// Whether new versions get ids (versioning enabled).
    pub fn is_enabled(self) -> bool {
        self == Versioning::Enabled
    }
}

/// A bucket configuration kept as a document in the bucket's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BucketConfig {
    /// Default encryption (`ServerSideEncryptionConfiguration` XML).
    Encryption,
    /// Bucket tags (`Tagging` XML).
    Tagging,
    /// The bucket policy (JSON, as the client sent it).
    Policy,
    /// Object lock (`ObjectLockConfiguration` XML); see
    /// [`worm`](super::worm).
    ObjectLock,
    /// Lifecycle rules (`LifecycleConfiguration` XML).
    Lifecycle,
    /// CORS rules (`CORSConfiguration` XML; MinIO keeps it outside
    /// `.metadata.bin`, see [`ObjectLayer::bucket_config`]).
    ///
    /// [`ObjectLayer::bucket_config`]: super::ObjectLayer::bucket_config
    Cors,
    /// MinIO's bucket quota (JSON: `{"quota": bytes, "quotatype": "hard"}`).
    Quota,
}

/// What changed about a bucket, as [`ObjectLayer::with_bucket_hook`]
/// reports it.
///
/// [`ObjectLayer::with_bucket_hook`]: super::ObjectLayer::with_bucket_hook
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketChange {
    /// The bucket was created.
    Created,
    /// The bucket was deleted.
    Deleted,
    /// Its versioning state changed.
    Versioning,
    /// One of its configuration documents changed.
    Config(BucketConfig),
    /// Not a bucket's: the IAM documents under `.minio.sys/config/iam/`
    /// changed (announced with the volume's name as the bucket).
    Iam,
}

impl BucketChange {
    /// A short name (`created`, `versioning`, `encryption`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            BucketChange::Created => "created",
            BucketChange::Deleted => "deleted",
            BucketChange::Versioning => "versioning",
            BucketChange::Config(BucketConfig::Encryption) => "encryption",
            BucketChange::Config(BucketConfig::Tagging) => "tagging",
            BucketChange::Config(BucketConfig::Policy) => "policy",
            BucketChange::Config(BucketConfig::ObjectLock) => "object-lock",
            BucketChange::Config(BucketConfig::Lifecycle) => "lifecycle",
            BucketChange::Config(BucketConfig::Cors) => "cors",
            BucketChange::Config(BucketConfig::Quota) => "quota",
            BucketChange::Iam => "iam",
        }
    }
}

#[cfg(test)]
mod precondition_tests {
    use super::*;

    fn object(etag: &str, delete_marker: bool) -> ObjectInfo {
        ObjectInfo {
            bucket: "b".into(),
            key: "k".into(),
            version_id: None,
            delete_marker,
            is_latest: true,
            size: 0,
            etag: etag.into(),
            mod_time_nanos: 0,
            content_type: String::new(),
            metadata: BTreeMap::new(),
            parts: Vec::new(),
            data_shards: 2,
            parity_shards: 2,
            inline: true,
            internal: BTreeMap::new(),
        }
    }

    #[test]
    fn absent_holds_only_without_an_object() {
        let p = Precondition::Absent;
        assert!(p.check(None, "b", "k").is_ok());
        assert!(p.check(Some(&object("", true)), "b", "k").is_ok());
        assert!(matches!(
            p.check(Some(&object("abc", false)), "b", "k"),
            Err(Error::PreconditionFailed)
        ));
    }

    #[test]
    fn etag_match_compares_unquoted() {
        let cur = object("abc-2", false);
        let p = |s: &str| Precondition::EtagMatches(s.into());
        assert!(p("\"abc-2\"").check(Some(&cur), "b", "k").is_ok());
        assert!(p("abc-2").check(Some(&cur), "b", "k").is_ok());
        assert!(p("*").check(Some(&cur), "b", "k").is_ok());
        assert!(matches!(
            p("\"abd-2\"").check(Some(&cur), "b", "k"),
            Err(Error::PreconditionFailed)
        ));
        for none in [None, Some(&object("abc-2", true))] {
            assert!(matches!(
                p("abc-2").check(none, "b", "k"),
                Err(Error::NoSuchKey { .. })
            ));
        }
    }
}
