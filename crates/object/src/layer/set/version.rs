//! The stored version a PUT writes, built from its options (with their
//! checks), and the public [`ObjectInfo`] of a stored version.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::*;
use crate::xlmeta::{ErasureParams, META_CONTENT_TYPE, META_ETAG, Version, VersionKind};

/// Total metadata bytes (keys and values) accepted on a PUT (S3: 2 KiB of
/// user metadata; standard headers need a little more).
const MAX_METADATA_BYTES: usize = 8 << 10;

/// Checks a PUT's user metadata: printable keys without `:`, values
/// without control characters, no key the layer sets itself, and at most
/// [`MAX_METADATA_BYTES`] in all.
pub(super) fn check_metadata(opts: &PutOptions) -> Result<()> {
    let mut total = 0;
    for (k, v) in &opts.metadata {
        total += k.len() + v.len();
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_graphic() && c != b':') {
            return Err(Error::InvalidMetadata(format!("bad key {k:?}")));
        }
        if v.chars().any(|c| c.is_control() && c != '\t') {
            return Err(Error::InvalidMetadata(format!("bad value for {k:?}")));
        }
        let lk = k.to_ascii_lowercase();
        if lk == META_ETAG || lk == META_CONTENT_TYPE || lk.starts_with("x-minio-internal-") {
            return Err(Error::InvalidMetadata(format!("reserved key {k:?}")));
        }
    }
    if total > MAX_METADATA_BYTES {
        return Err(Error::InvalidMetadata(format!(
            "{total} bytes of metadata, at most {MAX_METADATA_BYTES}"
        )));
    }
    Ok(())
}

/// The object version a PUT of `size` bytes with `opts` stores: one part,
/// its content type, ETag, user and internal metadata, written now.
pub(super) fn new_version(
    version_id: [u8; 16],
    data_dir: [u8; 16],
    size: u64,
    erasure: ErasureParams,
    opts: &PutOptions,
    etag: &str,
) -> ObjectVersion<'static> {
    let actual = opts
        .actual_size
        .or_else(|| opts.actual_size_of.and_then(|f| f(size)))
        .map(|a| i64::try_from(a).unwrap_or(i64::MAX));
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let mut ov = ObjectVersion::new(version_id, data_dir, now_nanos(), size, erasure);
    let actual = actual.unwrap_or(size);
    ov.push_part(1, size, actual, None);
    for (k, v) in &opts.internal {
        ov.set_sys(k.clone(), v.clone());
    }
    ov.set_user(
        META_CONTENT_TYPE,
        opts.content_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into()),
    );
    ov.set_user(META_ETAG, etag.to_owned());
    for (k, v) in &opts.metadata {
        ov.set_user(k.clone(), v.clone());
    }
    if let Some(t) = &opts.trailing_metadata {
        for (k, v) in t.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            ov.set_user(k.clone(), v.clone());
        }
    }
    ov
}

/// The public view of a stored version.
pub(crate) fn object_info(bucket: &str, key: &str, v: &Version<'_>, is_latest: bool) -> ObjectInfo {
    let vid = v.version_id();
    let version_id = if vid == [0; 16] {
        None
    } else {
        Some(Uuid::from_bytes(vid))
    };
    match &v.kind {
        VersionKind::Object(o) => {
            let mut metadata = BTreeMap::new();
            let mut etag = String::new();
            let mut content_type = String::from("application/octet-stream");
            if let Some(u) = &o.meta_user {
                for (k, val) in u.iter() {
                    let k = k.to_string_lossy().into_owned();
                    let val = val.to_string_lossy().into_owned();
                    if k == META_ETAG {
                        etag = val;
                    } else if k.eq_ignore_ascii_case(META_CONTENT_TYPE) {
                        content_type = val;
                    } else {
                        metadata.insert(k, val);
                    }
                }
            }
            ObjectInfo {
                bucket: bucket.into(),
                key: key.into(),
                version_id,
                delete_marker: false,
                is_latest,
                size: u64::try_from(o.size).unwrap_or(0),
                etag,
                mod_time_nanos: o.mod_time,
                content_type,
                metadata,
                parts: o
                    .part_numbers
                    .iter()
                    .zip(&o.part_sizes)
                    .map(|(&number, &s)| PartInfo {
                        number,
                        size: u64::try_from(s).unwrap_or(0),
                    })
                    .collect(),
                data_shards: usize::try_from(o.erasure_m).unwrap_or(0),
                parity_shards: usize::try_from(o.erasure_n).unwrap_or(0),
                inline: o.inline_data(),
                internal: o
                    .meta_sys
                    .iter()
                    .flat_map(|m| m.iter())
                    .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_vec()))
                    .collect(),
            }
        }
        _ => ObjectInfo {
            bucket: bucket.into(),
            key: key.into(),
            version_id,
            delete_marker: matches!(v.kind, VersionKind::DeleteMarker(_)),
            is_latest,
            size: 0,
            etag: String::new(),
            mod_time_nanos: v.mod_time(),
            content_type: String::new(),
            metadata: BTreeMap::new(),
            parts: Vec::new(),
            data_shards: 0,
            parity_shards: 0,
            inline: false,
            internal: BTreeMap::new(),
        },
    }
}
