//! Multipart uploads: S3's limits, the public types of an upload and its
//! parts, and the layer's entry points, which find the pool holding an
//! upload and hand the work to its set (`set/multipart.rs`, where the
//! on-disk layout is described).

use tokio::io::AsyncRead;

use super::error::{Error, Result};
use super::set::multipart::{META_COMPLETED_UPLOAD, completed_upload_record};
use super::types::{CompleteOptions, ObjectInfo, PutOptions};
use super::{LOCK_TIMEOUT, ObjectLayer, names};

/// Most parts of an upload (S3's limit).
pub const MAX_PARTS: i64 = 10_000;
/// Smallest part other than the last (S3's limit).
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// Largest part (S3's limit).
pub const MAX_PART_SIZE: u64 = 5 << 30;

/// One uploaded part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedPart {
    /// Part number (1..=10000).
    pub number: i64,
    /// Hex MD5 of the part (its ETag, no quotes).
    pub etag: String,
    /// Bytes.
    pub size: u64,
    /// Bytes as the client sees them when they differ from the stored ones
    /// (an encrypted part's plaintext); `size` otherwise.
    pub actual_size: u64,
    /// Upload time, nanoseconds since the epoch.
    pub mod_time_nanos: i64,
    /// The part's checksum as the client sent and the gateway verified it:
    /// its metadata name (`x-amz-checksum-crc32`, ...) and value (base64).
    pub checksum: Option<(String, String)>,
}

/// Where a completed multipart object keeps its parts' checksums (internal
/// metadata): the checksum's name on the first line, then one value per
/// part in part order.
pub const META_PART_CHECKSUMS: &str = "x-tessera-internal-part-checksums";

/// The part checksums a completed object records ([`META_PART_CHECKSUMS`]):
/// the checksum's name and one value per part, in part order.
pub fn part_checksums(info: &ObjectInfo) -> Option<(&str, Vec<&str>)> {
    let text = std::str::from_utf8(info.internal.get(META_PART_CHECKSUMS)?).ok()?;
    let mut lines = text.lines();
    let name = lines.next()?;
    let values: Vec<&str> = lines.collect();
    (values.len() == info.parts.len()).then_some((name, values))
}

/// How a part is stored when the stored bytes are not the bytes the client
/// sent (an encrypted part); see [`ObjectLayer::upload_part_with`].
#[derive(Debug, Clone, Default)]
pub struct PartOptions {
    /// Stored bytes, when announced.
    pub size: Option<u64>,
    /// Bytes as the client sees them (an encrypted part's plaintext);
    /// the stored size when `None`.
    pub actual_size: Option<u64>,
    /// The part's ETag comes from the caller: its body reader sets it (32
    /// hex digits) when the body ends, and the layer computes no MD5 of
    /// the stored bytes. An SSE-S3 part's ETag is the MD5 of its plaintext,
    /// as S3 gives it, not of the ciphertext stored.
    pub etag: Option<PartEtag>,
    /// The part's checksum, known once its body is read (a trailer): the
    /// first `(name, value)` entry the body's reader has put here when the
    /// body ends is recorded with the part.
    pub checksum: Option<super::types::TrailingMetadata>,
}

/// A part ETag a body reader fills in at the end of the body; see
/// [`PartOptions::etag`].
pub type PartEtag = std::sync::Arc<std::sync::Mutex<Option<String>>>;

/// One upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadInfo {
    /// Key.
    pub key: String,
    /// Upload id.
    pub upload_id: String,
    /// Initiation time, nanoseconds since the epoch.
    pub initiated_nanos: i64,
}

impl ObjectLayer {
    /// The pool holding an upload (pool 0 when none does: the operation
    /// then reports it missing).
    pub(super) async fn upload_pool(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<usize> {
        if self.pools.len() > 1 {
            for p in 0..self.pools.len() {
                if self
                    .set_in(p, key)
                    .has_upload(bucket, key, upload_id)
                    .await?
                {
                    return Ok(p);
                }
            }
        }
        Ok(0)
    }

    /// Starts a multipart upload; returns its id.
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        opts: &PutOptions,
    ) -> Result<String> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        // The lock (and the default retention) is fixed when the upload
        // starts, as MinIO fixes it.
        let metadata = self
            .lock_metadata(bucket, &opts.metadata)
            .await?
            .unwrap_or_else(|| opts.metadata.clone());
        let opts = PutOptions {
            parity: Some(self.parity_for(opts)?),
            metadata,
            ..opts.clone()
        };
        let pool = self.pool_for_write(bucket, key).await?;
        self.set_in(pool, key)
            .create_multipart(bucket, key, &opts, self.deployment_id)
            .await
    }

    /// Uploads one part (numbers 1..=10000; a part uploaded again replaces
    /// the earlier one).
    pub async fn upload_part<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i64,
        body: &mut R,
        size: Option<u64>,
    ) -> Result<UploadedPart> {
        let opts = PartOptions {
            size,
            ..PartOptions::default()
        };
        self.upload_part_with(bucket, key, upload_id, number, body, &opts)
            .await
    }

    /// [`upload_part`](Self::upload_part) of a part whose stored bytes
    /// differ from what the client sees (an encrypted part: ciphertext and
    /// plaintext sizes, and the ETag the client is given).
    pub async fn upload_part_with<R: AsyncRead + Unpin + Send>(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i64,
        body: &mut R,
        opts: &PartOptions,
    ) -> Result<UploadedPart> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        self.check_quota(bucket, opts.size.unwrap_or(0)).await?;
        let _g = self
            .locker
            .read(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .upload_part(bucket, key, upload_id, number, body, opts)
            .await
    }

    /// An upload's pending metadata (user and internal), e.g. to find an
    /// encrypted upload's sealed key.
    pub async fn upload_info(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .upload_info(bucket, key, upload_id)
            .await
    }

    /// The parts of an upload, by number.
    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<Vec<UploadedPart>> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .list_parts(bucket, key, upload_id)
            .await
    }

    /// Completes an upload from `(part number, ETag)` pairs in ascending
    /// order. The object's ETag is `hex(md5(part md5s))-N`.
    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i64, String)],
    ) -> Result<ObjectInfo> {
        self.complete_multipart_upload_with(
            bucket,
            key,
            upload_id,
            parts,
            &CompleteOptions::default(),
        )
        .await
    }

    /// [`complete_multipart_upload`](Self::complete_multipart_upload) with
    /// options: a precondition on the key's current version, checked
    /// under the object's write lock right before the commit.
    ///
    /// An upload already completed with the same part list into the key's
    /// current version completes again with that version's info (an SDK
    /// retrying after a lost response), as S3 answers; the precondition is
    /// not checked again then, as the write it guarded has happened.
    pub async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i64, String)],
        opts: &CompleteOptions,
    ) -> Result<ObjectInfo> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let versioned = self.bucket_versioning(bucket).await?;
        // No part uploads may land while completing, and the object is
        // replaced under its lock.
        let _u = self
            .locker
            .write(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        let _g = self
            .locker
            .write(&format!("{bucket}/{key}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        let set = self.set_in(pool, key);
        if !set.has_upload(bucket, key, upload_id).await? {
            return self.completed_before(bucket, key, upload_id, parts).await;
        }
        if opts.precondition.is_some() {
            let current = self.pool_for_read(bucket, key, None).await?;
            self.set_in(current, key)
                .check_precondition(bucket, key, opts.precondition.as_ref())
                .await?;
        }
        // The object's bytes count against the quota when it is made.
        let reservation = if self.bucket_quota(bucket).await?.is_some() {
            let uploaded = set.list_parts(bucket, key, upload_id).await?;
            let size = parts
                .iter()
                .filter_map(|(n, _)| uploaded.iter().find(|p| p.number == *n))
                .map(|p| p.size)
                .sum();
            self.reserve_quota(bucket, size).await?
        } else {
            None
        };
        let info = set
            .complete_multipart(bucket, key, upload_id, parts, versioned, opts)
            .await?;
        if let Some(r) = reservation {
            r.keep(info.size);
        }
        Ok(info)
    }

    /// The key's current version when it is what completing `upload_id`
    /// with `parts` made (the caller holds the object's lock);
    /// `NoSuchUpload` otherwise.
    async fn completed_before(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i64, String)],
    ) -> Result<ObjectInfo> {
        let missing = || Error::NoSuchUpload(upload_id.chars().take(64).collect());
        let pool = self.pool_for_read(bucket, key, None).await?;
        let current = match self.set_in(pool, key).head(bucket, key, None).await {
            Ok(info) => info,
            Err(e) if e.is_not_found() => return Err(missing()),
            Err(e) => return Err(e),
        };
        let record = completed_upload_record(upload_id, parts);
        if current.internal.get(META_COMPLETED_UPLOAD) == Some(&record) {
            Ok(current)
        } else {
            Err(missing())
        }
    }

    /// Aborts an upload, removing its parts.
    pub async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<()> {
        names::check_key(key)?;
        self.check_bucket_exists(bucket).await?;
        let _u = self
            .locker
            .write(&format!("{bucket}/{key}/{upload_id}"), LOCK_TIMEOUT)
            .await?;
        let pool = self.upload_pool(bucket, key, upload_id).await?;
        self.set_in(pool, key)
            .abort_multipart(bucket, key, upload_id)
            .await
    }

    /// Uploads in progress whose key starts with `prefix`.
    pub async fn list_multipart_uploads(
        &self,
        bucket: &str,
        prefix: &str,
    ) -> Result<Vec<UploadInfo>> {
        self.check_bucket_exists(bucket).await?;
        let mut all = Vec::new();
        for set in &self.sets {
            all.extend(set.list_uploads(bucket, prefix).await?);
        }
        all.sort_by(|a, b| (&a.key, a.initiated_nanos).cmp(&(&b.key, b.initiated_nanos)));
        Ok(all)
    }
}
