//! The ETag and size clients see of an encrypted object (stored or
//! listed): the plaintext MD5 or an opaque value, and the plaintext size.

use object::layer::ObjectInfo;
use sse::dare;
use sse::key::ObjectKey;
use sse::meta::Sealed;

use super::META_MULTIPART;
use super::headers::EncryptionConfig;
use super::keys::{Existing, sealed_of};
use crate::error::S3Error;

impl Existing {
    /// The ETag clients see, from the stored one: see [`client_etag`].
    pub(crate) fn etag(&self, stored: &str) -> String {
        client_etag(&self.sealed, Some(&self.key), stored, self.multipart)
    }
}

/// The ETag clients see of an encrypted object whose stored ETag is
/// `stored`, as S3 and MinIO answer it. A single-part object stores its
/// plaintext MD5 sealed with its object key (MinIO's form, 96 hex digits):
/// SSE-S3 answers the MD5 unsealed (with `key`, the object key; without it,
/// or when it does not unseal, the last 32 digits), SSE-C and SSE-KMS the
/// last 32 digits, an opaque value (AWS: their ETags "are not an MD5
/// digest of their object data"). Multipart ETags (`md5-N`) and ETags of
/// 32 digits are stored as clients see them.
pub(crate) fn client_etag(
    sealed: &Sealed,
    key: Option<&ObjectKey>,
    stored: &str,
    multipart: bool,
) -> String {
    if multipart || stored.len() <= 32 || stored.contains('-') || !stored.is_ascii() {
        return stored.to_owned();
    }
    if matches!(sealed, Sealed::SseS3 { .. })
        && let Some(key) = key
        && let Ok(b) = hex::decode(stored)
        && let Ok(plain) = key.unseal_etag(&b)
    {
        return hex::encode(plain);
    }
    stored[stored.len() - 32..].to_owned()
}

/// An object as the client sees it: an encrypted one (`existing`, its key)
/// with its plaintext ETag, size and part sizes; any other as stored.
pub(crate) fn client_view(
    stored: &ObjectInfo,
    existing: Option<&Existing>,
) -> Result<ObjectInfo, S3Error> {
    let mut info = stored.clone();
    if let Some(ex) = existing {
        info.etag = ex.etag(&stored.etag);
        info.size = plain_size(stored)?;
        let segs = ex.segments(stored)?;
        for (p, seg) in info.parts.iter_mut().zip(&segs) {
            p.size = seg.plain_len;
        }
    }
    Ok(info)
}

/// The plaintext size of an encrypted object (the sum over its parts,
/// each its own DARE stream).
pub(crate) fn plain_size(info: &ObjectInfo) -> Result<u64, S3Error> {
    if info.parts.is_empty() {
        plain_size_of([info.size])
    } else {
        plain_size_of(info.parts.iter().map(|p| p.size))
    }
}

/// The plaintext size of encrypted parts of these stored sizes.
fn plain_size_of(parts: impl IntoIterator<Item = u64>) -> Result<u64, S3Error> {
    let mut total = 0u64;
    for p in parts {
        total += dare::decrypted_len(p)
            .ok_or_else(|| S3Error::internal("an encrypted part has an impossible size"))?;
    }
    Ok(total)
}

/// The ETag and size clients see of a listed object: the stored ones for a
/// plain object; for an encrypted one the ETag [`client_etag`] gives (an
/// SSE-S3 ETag unsealed through the KMS, as MinIO lists it) and the
/// plaintext size. A listing shows what it can of an object whose
/// metadata is damaged or whose key the KMS cannot unseal (the stored
/// size, the last 32 digits of the ETag) rather than failing the page.
pub(crate) fn listed_view<'a>(
    bucket: &str,
    o: &'a object::layer::ListedObject,
    cfg: &EncryptionConfig,
) -> (std::borrow::Cow<'a, str>, u64) {
    let Some(enc) = &o.encryption else {
        return (o.etag.as_str().into(), o.size);
    };
    let Ok(Some(sealed)) = sealed_of(&enc.internal) else {
        return (o.etag.as_str().into(), o.size);
    };
    let multipart = enc.internal.contains_key(META_MULTIPART);
    let size = plain_size_of(enc.part_sizes.iter().copied()).unwrap_or(o.size);
    let unseals = matches!(sealed, Sealed::SseS3 { .. }) && !multipart && o.etag.len() > 32;
    let key = unseals
        .then(|| {
            sealed
                .object_key(cfg.kms.as_deref(), None, bucket, &o.key)
                .ok()
        })
        .flatten();
    (
        client_etag(&sealed, key.as_ref(), &o.etag, multipart).into(),
        size,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sse::dare::CipherSuite;
    use sse::key::SealedKey;

    /// The ETag clients see: SSE-S3 unseals the MD5 with the object key
    /// (the last 32 digits without the key or with another key); SSE-C and
    /// SSE-KMS give the last 32 digits; multipart ETags, ETags of 32
    /// digits and damaged (non-ASCII) values are given as stored.
    #[test]
    fn client_etags() {
        let key = ObjectKey([9; 32]);
        let md5 = [0xab; 16];
        let stored = hex::encode(key.seal_etag(&md5, [1; 12], CipherSuite::Aes256Gcm));
        assert_eq!(stored.len(), 96);
        let sealed_key = SealedKey {
            key: [0; 64],
            iv: [0; 32],
            algorithm: String::new(),
        };
        let s3 = Sealed::SseS3 {
            key_id: "k".into(),
            data_key: Vec::new(),
            sealed: sealed_key.clone(),
        };
        let kms = Sealed::SseKms {
            key_id: "k".into(),
            data_key: Vec::new(),
            sealed: sealed_key.clone(),
            context: None,
        };
        let c = Sealed::SseC(sealed_key);
        let tail = &stored[64..];
        assert_eq!(
            client_etag(&s3, Some(&key), &stored, false),
            hex::encode(md5)
        );
        assert_eq!(client_etag(&s3, None, &stored, false), tail);
        assert_eq!(
            client_etag(&s3, Some(&ObjectKey([8; 32])), &stored, false),
            tail
        );
        for sealed in [&kms, &c] {
            assert_eq!(client_etag(sealed, Some(&key), &stored, false), tail);
        }
        for (plain, multipart) in [
            ("0123456789abcdef0123456789abcdef", false),
            ("0123456789abcdef0123456789abcdef-3", false),
            (stored.as_str(), true),
            ("é".repeat(40).as_str(), false),
        ] {
            for sealed in [&s3, &kms, &c] {
                assert_eq!(client_etag(sealed, Some(&key), plain, multipart), plain);
            }
        }
    }
}
