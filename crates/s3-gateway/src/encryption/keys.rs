//! Object keys: a fresh object key for a write, sealed as its mode says;
//! the unsealed key of a stored object, and the DARE streams (one per
//! part) its ciphertext is made of.

use object::layer::ObjectInfo;
use sse::dare::{self, CipherSuite};
use sse::key::{Domain, Fresh, ObjectKey, object_path};
use sse::kms::Context;
use sse::meta::{MetaError, Sealed};

use super::headers::{EncryptionConfig, Mode};
use super::{META_MULTIPART, random};
use crate::error::S3Error;

/// A fresh object key for `bucket/key`, sealed as `mode` says.
pub(crate) struct NewKey {
    pub key: ObjectKey,
    pub internal: Vec<(String, Vec<u8>)>,
    pub mode: Mode,
    pub key_id: Option<String>,
}

pub(crate) fn new_key(
    mode: &Mode,
    cfg: &EncryptionConfig,
    bucket: &str,
    key: &str,
) -> Result<NewKey, S3Error> {
    let fresh = Fresh {
        iv: random()?,
        nonce: random()?,
    };
    let rand: [u8; 32] = random()?;
    let kms_err = |e: sse::kms::KmsError| S3Error::internal(format!("KMS: {e}"));
    let (object_key, sealed, key_id) = match mode {
        Mode::C(ck) => {
            let ok = ObjectKey::generate(ck, &rand);
            let s = ok.seal(ck, fresh, CipherSuite::Aes256Gcm, Domain::SseC, bucket, key);
            (ok, Sealed::SseC(s), None)
        }
        Mode::S3 => {
            let kms = cfg
                .kms
                .as_deref()
                .ok_or_else(|| S3Error::new("NotImplemented"))?;
            let ctx = Context::single(bucket, &object_path(bucket, key));
            let mut dk = kms
                .generate_key(kms.default_key_id(), &ctx, &random()?)
                .map_err(kms_err)?;
            let ok = ObjectKey::generate(&dk.plaintext, &rand);
            let s = ok.seal(
                &dk.plaintext,
                fresh,
                CipherSuite::Aes256Gcm,
                Domain::SseS3,
                bucket,
                key,
            );
            let id = dk.key_id.clone();
            (
                ok,
                Sealed::SseS3 {
                    key_id: std::mem::take(&mut dk.key_id),
                    data_key: std::mem::take(&mut dk.ciphertext),
                    sealed: s,
                },
                Some(id),
            )
        }
        Mode::Kms { key_id, context } => {
            let kms = cfg
                .kms
                .as_deref()
                .ok_or_else(|| S3Error::new("NotImplemented"))?;
            let id = key_id
                .clone()
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| kms.default_key_id().to_owned());
            let mut ctx = context.clone().unwrap_or_default();
            ctx.0
                .entry(bucket.to_owned())
                .or_insert_with(|| object_path(bucket, key));
            let mut dk = kms
                .generate_key(&id, &ctx, &random()?)
                .map_err(|e| match e {
                    sse::kms::KmsError::KeyNotFound(_) => S3Error::with_message(
                        "KMS.NotFoundException",
                        format!("Invalid keyId {id}"),
                    ),
                    e => kms_err(e),
                })?;
            let ok = ObjectKey::generate(&dk.plaintext, &rand);
            let s = ok.seal(
                &dk.plaintext,
                fresh,
                CipherSuite::Aes256Gcm,
                Domain::SseKms,
                bucket,
                key,
            );
            (
                ok,
                Sealed::SseKms {
                    key_id: std::mem::take(&mut dk.key_id),
                    data_key: std::mem::take(&mut dk.ciphertext),
                    sealed: s,
                    context: context.clone(),
                },
                Some(id),
            )
        }
    };
    Ok(NewKey {
        key: object_key,
        internal: sealed
            .to_metadata()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect(),
        mode: mode.clone(),
        key_id,
    })
}

/// The encryption of a stored object and its unsealed key.
pub(crate) struct Existing {
    pub key: ObjectKey,
    pub sealed: Sealed,
    /// Parts are sealed with part keys.
    pub multipart: bool,
}

/// One part of an encrypted object: where its ciphertext lies in the
/// stored object, where its plaintext lies in the object as seen, and the
/// key of its DARE stream (wiped when dropped, never printed).
#[derive(Clone)]
pub(crate) struct Segment {
    pub cipher_offset: u64,
    pub plain_offset: u64,
    pub plain_len: u64,
    pub key: [u8; 32],
}

impl Drop for Segment {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("cipher_offset", &self.cipher_offset)
            .field("plain_offset", &self.plain_offset)
            .field("plain_len", &self.plain_len)
            .finish_non_exhaustive()
    }
}

impl Existing {
    /// The object's DARE streams in order.
    pub(crate) fn segments(&self, stored: &ObjectInfo) -> Result<Vec<Segment>, S3Error> {
        let parts: Vec<(i64, u64)> = if stored.parts.is_empty() {
            vec![(1, stored.size)]
        } else {
            stored.parts.iter().map(|p| (p.number, p.size)).collect()
        };
        let mut out = Vec::with_capacity(parts.len());
        let (mut c, mut p) = (0u64, 0u64);
        for (number, size) in parts {
            let plain = dare::decrypted_len(size)
                .ok_or_else(|| S3Error::internal("an encrypted part has an impossible size"))?;
            let key = if self.multipart {
                self.key.part_key(u32::try_from(number).unwrap_or(0))
            } else {
                self.key.0
            };
            out.push(Segment {
                cipher_offset: c,
                plain_offset: p,
                plain_len: plain,
                key,
            });
            c += size;
            p += plain;
        }
        Ok(out)
    }
}

/// The encryption recorded in an object's internal metadata (`None`: not
/// encrypted).
pub(crate) fn sealed_of(
    internal: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Result<Option<Sealed>, MetaError> {
    Sealed::from_metadata(|k: &str| {
        internal
            .get(k)
            .and_then(|v| String::from_utf8(v.clone()).ok())
    })
}

/// The object key of a stored object, `None` if it is not encrypted.
/// `client` is the SSE-C key the request gave, if any.
pub(crate) fn existing_key(
    info: &ObjectInfo,
    client: Option<&[u8; 32]>,
    cfg: &EncryptionConfig,
) -> Result<Option<Existing>, S3Error> {
    let sealed = match sealed_of(&info.internal) {
        Ok(None) => {
            if client.is_some() {
                return Err(S3Error::with_message(
                    "InvalidRequest",
                    "The encryption parameters are not applicable to this object.",
                ));
            }
            return Ok(None);
        }
        Ok(Some(s)) => s,
        Err(e) => return Err(S3Error::internal(format!("encryption metadata: {e}"))),
    };
    if !matches!(sealed, Sealed::SseC(_)) && client.is_some() {
        return Err(S3Error::with_message(
            "InvalidRequest",
            "The encryption parameters are not applicable to this object.",
        ));
    }
    let key = sealed
        .object_key(cfg.kms.as_deref(), client, &info.bucket, &info.key)
        .map_err(|e| match e {
            MetaError::MissingClientKey => S3Error::with_message(
                "InvalidRequest",
                "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.",
            ),
            MetaError::NoKms => S3Error::with_message(
                "NotImplemented",
                "The object is encrypted with a KMS key, and no KMS is configured",
            ),
            MetaError::Key(_) => S3Error::with_message(
                "AccessDenied",
                "The SSE-C key provided does not match the key the object was encrypted with.",
            ),
            e => S3Error::internal(format!("unsealing an object key: {e}")),
        })?;
    Ok(Some(Existing {
        key,
        sealed,
        multipart: info.internal.contains_key(META_MULTIPART),
    }))
}

impl Existing {
    /// Whether clients see the MD5 of the plaintext as the ETag (SSE-S3),
    /// or an opaque value (SSE-C, SSE-KMS).
    pub(crate) fn etag_is_md5(&self) -> bool {
        matches!(self.sealed, Sealed::SseS3 { .. })
    }
}
