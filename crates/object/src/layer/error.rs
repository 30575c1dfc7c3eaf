//! Errors of the object layer, one variant per condition a caller (the S3
//! gateway) must tell apart.

use drive::DriveError;

/// Result of an object-layer operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong. The S3 gateway maps each variant to an S3 error code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// S3 `InvalidBucketName`.
    #[error("invalid bucket name {0:?}")]
    InvalidBucketName(String),
    /// S3 `KeyTooLongError` / `InvalidArgument`: the key is not a valid object name.
    #[error("invalid object name {0:?}: {1}")]
    InvalidObjectName(String, &'static str),
    /// S3 `NoSuchBucket`.
    #[error("bucket {0:?} does not exist")]
    NoSuchBucket(String),
    /// S3 `BucketAlreadyOwnedByYou`.
    #[error("bucket {0:?} already exists")]
    BucketExists(String),
    /// S3 `BucketNotEmpty`.
    #[error("bucket {0:?} is not empty")]
    BucketNotEmpty(String),
    /// S3 `NoSuchKey`. `delete_marker` is set when the latest version is a
    /// delete marker (S3 answers with `x-amz-delete-marker: true`).
    #[error("object {bucket}/{key} does not exist")]
    NoSuchKey {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// The latest version is a delete marker.
        delete_marker: bool,
    },
    /// S3 `NoSuchVersion`.
    #[error("version {version} of {bucket}/{key} does not exist")]
    NoSuchVersion {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// The version asked for.
        version: String,
    },
    /// S3 `InvalidArgument` for a malformed version id.
    #[error("invalid version id {0:?}")]
    InvalidVersionId(String),
    /// S3 `MethodNotAllowed`: the version asked for is a delete marker.
    #[error("the version is a delete marker")]
    MethodNotAllowed,
    /// S3 `InvalidRange`.
    #[error("range {offset}+{length} not satisfiable for an object of {size} bytes")]
    InvalidRange {
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        length: u64,
        /// The object's size.
        size: u64,
    },
    /// S3 `EntityTooLarge`.
    #[error("object of {size} bytes exceeds the limit of {limit}")]
    EntityTooLarge {
        /// Bytes received or announced.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// S3 `IncompleteBody`: fewer bytes arrived than announced.
    #[error("body ended after {got} of {expected} bytes")]
    IncompleteBody {
        /// Bytes announced.
        expected: u64,
        /// Bytes received.
        got: u64,
    },
    /// S3 `InvalidStorageClass`: not `STANDARD` or `REDUCED_REDUNDANCY`.
    #[error("invalid storage class {0:?}")]
    InvalidStorageClass(String),
    /// S3 `InvalidArgument`: a metadata key or value is not acceptable.
    #[error("invalid metadata: {0}")]
    InvalidMetadata(String),
    /// S3 `SlowDown` / 503: fewer drives than the write quorum accepted the write.
    #[error("write quorum not reached: {ok} of {needed} drives")]
    WriteQuorum {
        /// Drives that succeeded.
        ok: usize,
        /// Drives needed.
        needed: usize,
    },
    /// S3 503: fewer drives than the read quorum could serve the read.
    #[error("read quorum not reached: {ok} of {needed} drives")]
    ReadQuorum {
        /// Drives that agreed.
        ok: usize,
        /// Drives needed.
        needed: usize,
    },
    /// Not enough intact shards survive to rebuild a block: data loss beyond
    /// the parity count (S3 500).
    #[error(
        "object {bucket}/{key}: block {block} of part {part} is unreadable ({intact} intact shards, {needed} needed)"
    )]
    DataUnreadable {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Part number.
        part: i64,
        /// Erasure block index in the part.
        block: u64,
        /// Intact shards found.
        intact: usize,
        /// Shards needed.
        needed: usize,
    },
    /// S3 `PreconditionFailed` (412): a conditional write's condition on
    /// the key's current version does not hold.
    #[error("the write's precondition does not hold")]
    PreconditionFailed,
    /// S3 `AccessDenied` (403): the version is protected by object lock
    /// (a legal hold, or retention that the request may not bypass).
    #[error("object locked: {0}")]
    ObjectLocked(&'static str),
    /// S3 `InvalidRequest`: object lock asked for on a bucket created
    /// without it.
    #[error("the bucket is missing an object lock configuration")]
    ObjectLockNotEnabled,
    /// S3 `InvalidBucketState` (409): the bucket's state forbids the
    /// change (versioning of a lock-enabled bucket, lock on a bucket
    /// created without it).
    #[error("invalid bucket state: {0}")]
    InvalidBucketState(&'static str),
    /// MinIO's `XMinioAdminBucketQuotaExceeded` (400): the write would
    /// make the bucket reach its hard quota.
    #[error("bucket {0:?} quota exceeded")]
    QuotaExceeded(String),
    /// S3 `NoSuchUpload`.
    #[error("upload {0:?} does not exist")]
    NoSuchUpload(String),
    /// S3 `InvalidArgument`: part numbers run from 1 to 10000.
    #[error("part number {0} is outside 1..=10000")]
    InvalidPartNumber(i64),
    /// S3 `InvalidPart`: a listed part was not uploaded, or its ETag differs.
    #[error("invalid part: {0}")]
    InvalidPart(String),
    /// S3 `InvalidPartOrder`: part numbers must ascend.
    #[error("parts are not in ascending order")]
    InvalidPartOrder,
    /// S3 `EntityTooSmall`: a part other than the last is under 5 MiB.
    #[error("part {part} has {size} bytes; parts before the last need at least 5 MiB")]
    EntityTooSmall {
        /// Part number.
        part: i64,
        /// Its size.
        size: u64,
    },
    /// A lock could not be taken in time (S3 503 `SlowDown`).
    #[error("timed out waiting for the lock on {0}")]
    LockTimeout(String),
    /// The drives do not form a valid deployment.
    #[error("drive layout: {0}")]
    Layout(String),
    /// The body could not be read (client went away).
    #[error("reading the request body: {0}")]
    Body(#[source] std::io::Error),
    /// The response sink refused a write (client went away).
    #[error("writing the response: {0}")]
    Output(#[source] std::io::Error),
    /// Metadata on disk could not be decoded or encoded.
    #[error("metadata: {0}")]
    Meta(#[from] crate::xlmeta::Error),
    /// A drive failed in a way no quorum logic absorbs.
    #[error("drive: {0}")]
    Drive(#[from] DriveError),
    /// A check the caller supplied refused the operation (for example the
    /// checksum of a multipart object, see
    /// [`PartsChecksum`](super::PartsChecksum)): the caller's own error.
    #[error("refused: {0}")]
    Rejected(Box<dyn std::error::Error + Send + Sync>),
    /// An internal invariant failed (a bug): reported, never a panic.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Whether the error means "this object or version is not there".
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::NoSuchKey { .. }
                | Error::NoSuchVersion { .. }
                | Error::NoSuchBucket(_)
                | Error::NoSuchUpload(_)
        )
    }
}
