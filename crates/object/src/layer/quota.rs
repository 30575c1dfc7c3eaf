//! Bucket quotas (MinIO's hard quota): a bucket's bytes, all versions
//! counted, may not reach its limit.
//!
//! # Format
//!
//! The quota is MinIO's `QuotaConfigJSON` in the bucket's `.metadata.bin`:
//! `{"quota": n, "size": n, "rate": 0, "requests": 0, "quotatype": "hard"}`,
//! where `size` (or the older `quota`) is the limit in bytes and 0 means
//! none.
//!
//! # Usage and its margin
//!
//! A bucket's usage is counted by listing its versions when a quota first
//! needs it, then kept current by every write through this layer: a write
//! of known size reserves its bytes before it starts (so concurrent writers
//! cannot together pass the limit) and gives them back if it fails.
//! A removal through this layer subtracts the version's size. What
//! changes the drives behind this layer's back (another server on them)
//! is picked up when the count is taken again: when it is older than
//! [`RECOUNT_AFTER`] and a write would be refused, and whenever the
//! scanner asks ([`ObjectLayer::recount_quota_usage`]). The margin is on
//! the safe side (usage reads high, never low), except for writes whose
//! size is unknown in advance (a POST upload's body, a streamed body
//! without a length), which are refused only when the bucket is already
//! full and counted once stored, as MinIO does; and in a cluster each node
//! counts the writes it serves, so concurrent writers through several
//! nodes can pass the quota by what they write between two counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// How old a count may be before a refusal takes it again.
pub const RECOUNT_AFTER: Duration = Duration::from_secs(5);

/// The longest a quota document may be.
pub const MAX_QUOTA_JSON: usize = 4096;

/// A bucket's hard quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketQuota {
    /// The limit in bytes (0: none).
    pub size: u64,
}

impl BucketQuota {
    /// Reads MinIO's quota document: `size`, else the deprecated `quota`;
    /// a limit needs `quotatype` `hard`.
    pub fn parse(doc: &[u8]) -> std::result::Result<BucketQuota, String> {
        if doc.len() > MAX_QUOTA_JSON {
            return Err("quota configuration too large".into());
        }
        let v: serde_json::Value =
            serde_json::from_slice(doc).map_err(|e| format!("invalid quota configuration: {e}"))?;
        let obj = v
            .as_object()
            .ok_or("quota configuration is not an object")?;
        let num = |k: &str| -> std::result::Result<u64, String> {
            match obj.get(k) {
                None | Some(serde_json::Value::Null) => Ok(0),
                Some(n) => n
                    .as_u64()
                    .ok_or_else(|| format!("{k} must be a whole number of bytes")),
            }
        };
        let (size, quota) = (num("size")?, num("quota")?);
        let limit = if size > 0 { size } else { quota };
        let kind = obj.get("quotatype").and_then(|t| t.as_str()).unwrap_or("");
        if limit > 0 && kind != "hard" {
            return Err(format!(
                "invalid quota type {kind:?}: only \"hard\" is supported"
            ));
        }
        Ok(BucketQuota { size: limit })
    }

    /// The document MinIO writes for a limit of `size` bytes.
    pub fn to_json(self) -> String {
        format!(
            "{{\"quota\":0,\"size\":{},\"rate\":0,\"requests\":0,\"quotatype\":\"hard\"}}",
            self.size
        )
    }
}

/// A bucket's counted usage: bytes stored (as last counted, plus the
/// writes since) and bytes reserved by writes in flight.
#[derive(Debug)]
pub(crate) struct Usage {
    stored: AtomicU64,
    reserved: AtomicU64,
    counted: std::sync::Mutex<Option<Instant>>,
    recount: tokio::sync::Mutex<()>,
}

impl Usage {
    fn total(&self) -> u64 {
        self.stored
            .load(Ordering::SeqCst)
            .saturating_add(self.reserved.load(Ordering::SeqCst))
    }

    fn unreserve(&self, bytes: u64) {
        let _ = self
            .reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| {
                Some(r.saturating_sub(bytes))
            });
    }

    fn counted_at(&self) -> Option<Instant> {
        *self.counted.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Bytes a write has reserved against its bucket's quota; given back on
/// drop unless the write kept them.
#[derive(Debug)]
pub(crate) struct Reservation {
    usage: Arc<Usage>,
    bytes: u64,
}

impl Reservation {
    /// The write succeeded with `stored` bytes: they are counted as stored.
    pub(crate) fn keep(mut self, stored: u64) {
        self.usage.stored.fetch_add(stored, Ordering::SeqCst);
        self.usage.unreserve(self.bytes);
        self.bytes = 0;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.usage.unreserve(self.bytes);
    }
}

impl ObjectLayer {
    /// The bucket's hard quota in bytes, `None` when it has none.
    pub async fn bucket_quota(&self, bucket: &str) -> Result<Option<u64>> {
        let Some(doc) = self.bucket_config(bucket, BucketConfig::Quota).await? else {
            return Ok(None);
        };
        // A stored document that cannot be read (a removed MinIO quota
        // type) limits nothing, as MinIO treats it.
        Ok(BucketQuota::parse(&doc)
            .ok()
            .map(|q| q.size)
            .filter(|s| *s > 0))
    }

    /// Sets the bucket's quota (`None` or a zero size: none).
    pub async fn set_bucket_quota(&self, bucket: &str, quota: Option<BucketQuota>) -> Result<()> {
        let doc = quota
            .filter(|q| q.size > 0)
            .map(|q| q.to_json().into_bytes());
        self.set_bucket_config(bucket, BucketConfig::Quota, doc)
            .await
    }

    /// Counts again the usage of every bucket with a quota (the scanner's
    /// pass), so removals are reflected.
    pub async fn recount_quota_usage(&self) -> Result<()> {
        for b in self.list_buckets().await? {
            if self.bucket_quota(&b.name).await?.is_some() {
                let usage = self.usage_of(&b.name);
                self.recount(&b.name, &usage).await?;
            }
        }
        Ok(())
    }

    /// A version of `freed` bytes was removed from the bucket.
    pub(crate) fn quota_freed(&self, bucket: &str, freed: u64) {
        let usage = self.usage_of(bucket);
        let _ = usage
            .stored
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                Some(s.saturating_sub(freed))
            });
    }

    fn usage_of(&self, bucket: &str) -> Arc<Usage> {
        let mut all = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(all.entry(bucket.to_owned()).or_insert_with(|| {
            Arc::new(Usage {
                stored: AtomicU64::new(0),
                reserved: AtomicU64::new(0),
                counted: std::sync::Mutex::new(None),
                recount: tokio::sync::Mutex::new(()),
            })
        }))
    }

    /// Lists every version of the bucket and sets its stored usage to
    /// their total.
    async fn recount(&self, bucket: &str, usage: &Usage) -> Result<()> {
        let _one = usage.recount.lock().await;
        let before = usage.stored.load(Ordering::SeqCst);
        let mut total = 0u64;
        let mut opts = ListOptions {
            max_keys: 1000,
            ..ListOptions::default()
        };
        let mut version_marker: Option<String> = None;
        loop {
            let page =
                list::list_versions(&self.sets, bucket, &opts, version_marker.as_deref()).await?;
            total += page.versions.iter().map(|v| v.size).sum::<u64>();
            if !page.is_truncated || page.next_key_marker.is_none() {
                break;
            }
            opts.marker = page.next_key_marker;
            version_marker = page.next_version_marker;
        }
        // Writes that finished during the listing may or may not be in
        // it; counting them again errs on the safe side until the next
        // count.
        let during = usage.stored.load(Ordering::SeqCst).saturating_sub(before);
        usage
            .stored
            .store(total.saturating_add(during), Ordering::SeqCst);
        *usage.counted.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(())
    }

    /// Reserves `size` bytes (0 when unknown) of the bucket's quota for a
    /// write: `None` when the bucket has no quota;
    /// [`Error::QuotaExceeded`] when the write would reach it.
    pub(crate) async fn reserve_quota(
        &self,
        bucket: &str,
        size: u64,
    ) -> Result<Option<Reservation>> {
        let Some(limit) = self.bucket_quota(bucket).await? else {
            return Ok(None);
        };
        if size >= limit {
            return Err(Error::QuotaExceeded(bucket.to_owned()));
        }
        let usage = self.usage_of(bucket);
        if usage.counted_at().is_none() {
            self.recount(bucket, &usage).await?;
        }
        for attempt in 0..2 {
            usage.reserved.fetch_add(size, Ordering::SeqCst);
            let reservation = Reservation {
                usage: Arc::clone(&usage),
                bytes: size,
            };
            // MinIO refuses a write that would make usage reach the limit.
            if usage.total() < limit {
                return Ok(Some(reservation));
            }
            drop(reservation);
            let stale = usage
                .counted_at()
                .is_none_or(|t| t.elapsed() >= RECOUNT_AFTER);
            if attempt == 0 && stale {
                self.recount(bucket, &usage).await?;
            } else {
                break;
            }
        }
        Err(Error::QuotaExceeded(bucket.to_owned()))
    }

    /// Whether a part of `size` bytes may still be uploaded to the bucket
    /// (a check without reservation: the completion reserves the object).
    pub(crate) async fn check_quota(&self, bucket: &str, size: u64) -> Result<()> {
        drop(self.reserve_quota(bucket, size).await?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minio_documents_parse() {
        let q = |s: &str| BucketQuota::parse(s.as_bytes());
        assert_eq!(
            q(r#"{"quota":0,"size":1048576,"rate":0,"requests":0,"quotatype":"hard"}"#),
            Ok(BucketQuota { size: 1 << 20 })
        );
        assert_eq!(
            q(r#"{"quota":2048,"quotatype":"hard"}"#),
            Ok(BucketQuota { size: 2048 })
        );
        assert_eq!(q(r#"{"size":0}"#), Ok(BucketQuota { size: 0 }));
        assert!(q(r#"{"size":10,"quotatype":"fifo"}"#).is_err());
        assert!(q(r#"{"size":-1,"quotatype":"hard"}"#).is_err());
        assert!(q("[]").is_err());
        assert!(q("not json").is_err());
        let doc = BucketQuota { size: 77 }.to_json();
        assert_eq!(q(&doc), Ok(BucketQuota { size: 77 }));
    }
}
