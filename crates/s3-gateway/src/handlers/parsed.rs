//! Bucket configuration documents as parsed, for the requests that consult
//! them (a browser's every request reads its bucket's CORS rules, every
//! GET its lifecycle rules): a document is parsed once per stored version,
//! not once per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use object::layer::BucketConfig;

use crate::error::S3Error;
use crate::service::Gateway;

/// Buckets whose parsed document is kept; the table is emptied when full
/// (which also drops the entries of deleted buckets).
const MAX_CACHED: usize = 10_000;

/// A document's stored bytes and what they parsed to (`None`: nothing).
type Entry<T> = (Vec<u8>, Option<Arc<T>>);

/// One kind of document, parsed, by bucket.
pub(crate) struct ParsedConfigs<T> {
    kind: BucketConfig,
    table: Mutex<HashMap<String, Entry<T>>>,
}

impl<T> ParsedConfigs<T> {
    /// A table of `kind` documents.
    pub(crate) fn new(kind: BucketConfig) -> Self {
        ParsedConfigs {
            kind,
            table: Mutex::default(),
        }
    }

    /// The bucket's document, parsed by `parse` when its stored bytes are
    /// new; `Ok(None)` when the bucket has none or it does not parse (the
    /// error is logged once per stored version).
    pub(crate) async fn get<E: std::fmt::Display>(
        &self,
        gw: &Gateway,
        bucket: &str,
        parse: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<Option<Arc<T>>, S3Error> {
        let Some(doc) = gw.layer.bucket_config(bucket, self.kind).await? else {
            return Ok(None);
        };
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((stored, parsed)) = table.get(bucket)
            && *stored == doc
        {
            return Ok(parsed.clone());
        }
        let parsed = match parse(&doc) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => {
                tracing::warn!(bucket, kind = ?self.kind, "stored configuration unreadable, not applied: {e}");
                None
            }
        };
        if table.len() >= MAX_CACHED {
            table.clear();
        }
        table.insert(bucket.to_owned(), (doc, parsed.clone()));
        Ok(parsed)
    }
}
