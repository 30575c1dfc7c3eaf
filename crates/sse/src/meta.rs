//! The internal metadata entries that carry an encrypted object's sealed
//! keys, named and encoded as MinIO stores them (in `xl.meta`'s `MetaSys`),
//! and the unsealing of the object key from them.

use crate::key::{Domain, KeyError, ObjectKey, SealedKey};
use crate::kms::{Context, Kms, KmsError, base64_decode, base64_encode};

/// The IV of the key-encryption key (base64, 32 bytes).
pub const META_IV: &str = "X-Minio-Internal-Server-Side-Encryption-Iv";
/// The sealing algorithm (`DAREv2-HMAC-SHA256`).
pub const META_ALGORITHM: &str = "X-Minio-Internal-Server-Side-Encryption-Seal-Algorithm";
/// SSE-C's sealed object key (base64, 64 bytes).
pub const META_SEALED_KEY_SSEC: &str = "X-Minio-Internal-Server-Side-Encryption-Sealed-Key";
/// SSE-S3's sealed object key.
pub const META_SEALED_KEY_S3: &str = "X-Minio-Internal-Server-Side-Encryption-S3-Sealed-Key";
/// SSE-KMS's sealed object key.
pub const META_SEALED_KEY_KMS: &str = "X-Minio-Internal-Server-Side-Encryption-Kms-Sealed-Key";
/// The KMS key that sealed the data key (SSE-S3 and SSE-KMS).
pub const META_KEY_ID: &str = "X-Minio-Internal-Server-Side-Encryption-S3-Kms-Key-Id";
/// The sealed data key (base64 of the KMS ciphertext).
pub const META_DATA_KEY: &str = "X-Minio-Internal-Server-Side-Encryption-S3-Kms-Sealed-Key";
/// SSE-KMS's context (base64 of its canonical JSON), when one was given.
pub const META_CONTEXT: &str = "X-Minio-Internal-Server-Side-Encryption-Context";

/// How an object is encrypted, with what its metadata stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sealed {
    /// Customer-provided key.
    SseC(SealedKey),
    /// Server-managed: a KMS data key seals the object key.
    SseS3 {
        /// KMS key name.
        key_id: String,
        /// The sealed data key.
        data_key: Vec<u8>,
        /// The sealed object key.
        sealed: SealedKey,
    },
    /// KMS-managed, with an optional client context.
    SseKms {
        /// KMS key name.
        key_id: String,
        /// The sealed data key.
        data_key: Vec<u8>,
        /// The sealed object key.
        sealed: SealedKey,
        /// The client's context, if any.
        context: Option<Context>,
    },
}

/// Why metadata did not give a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    /// An entry is missing or malformed.
    #[error("encryption metadata: {0}")]
    Malformed(&'static str),
    /// SSE-C needs the client's key.
    #[error("the object is encrypted with a customer key, none was given")]
    MissingClientKey,
    /// SSE-S3/KMS need a KMS.
    #[error("no KMS is configured")]
    NoKms,
    /// The KMS refused the data key.
    #[error(transparent)]
    Kms(#[from] KmsError),
    /// The object key did not unseal (wrong key, or damaged metadata).
    #[error(transparent)]
    Key(#[from] KeyError),
}

impl Sealed {
    /// The entries to store, as (name, value) pairs.
    pub fn to_metadata(&self) -> Vec<(String, String)> {
        let (sealed, name) = match self {
            Sealed::SseC(s) => (s, META_SEALED_KEY_SSEC),
            Sealed::SseS3 { sealed, .. } => (sealed, META_SEALED_KEY_S3),
            Sealed::SseKms { sealed, .. } => (sealed, META_SEALED_KEY_KMS),
        };
        let mut out = vec![
            (META_ALGORITHM.to_owned(), sealed.algorithm.clone()),
            (META_IV.to_owned(), base64_encode(&sealed.iv)),
            (name.to_owned(), base64_encode(&sealed.key)),
        ];
        match self {
            Sealed::SseC(_) => {}
            Sealed::SseS3 {
                key_id, data_key, ..
            } => {
                out.push((META_KEY_ID.to_owned(), key_id.clone()));
                out.push((META_DATA_KEY.to_owned(), base64_encode(data_key)));
            }
            Sealed::SseKms {
                key_id,
                data_key,
                context,
                ..
            } => {
                out.push((META_KEY_ID.to_owned(), key_id.clone()));
                out.push((META_DATA_KEY.to_owned(), base64_encode(data_key)));
                if let Some(c) = context.as_ref().filter(|c| !c.0.is_empty()) {
                    out.push((META_CONTEXT.to_owned(), base64_encode(&c.marshal_text())));
                }
            }
        }
        out
    }

    /// Reads the entries back; `Ok(None)` when the object is not encrypted.
    pub fn from_metadata(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Sealed>, MetaError> {
        let (name, kind) = if get(META_SEALED_KEY_SSEC).is_some() {
            (META_SEALED_KEY_SSEC, 0)
        } else if get(META_SEALED_KEY_S3).is_some() {
            (META_SEALED_KEY_S3, 1)
        } else if get(META_SEALED_KEY_KMS).is_some() {
            (META_SEALED_KEY_KMS, 2)
        } else {
            return Ok(None);
        };
        let b64 = |k: &str, what: &'static str| {
            get(k)
                .and_then(|v| base64_decode(&v))
                .ok_or(MetaError::Malformed(what))
        };
        let sealed = SealedKey {
            key: b64(name, "sealed key")?
                .try_into()
                .map_err(|_| MetaError::Malformed("sealed key is not 64 bytes"))?,
            iv: b64(META_IV, "IV")?
                .try_into()
                .map_err(|_| MetaError::Malformed("IV is not 32 bytes"))?,
            algorithm: get(META_ALGORITHM).ok_or(MetaError::Malformed("seal algorithm"))?,
        };
        if kind == 0 {
            return Ok(Some(Sealed::SseC(sealed)));
        }
        let key_id = get(META_KEY_ID).ok_or(MetaError::Malformed("KMS key id"))?;
        let data_key = b64(META_DATA_KEY, "sealed data key")?;
        if kind == 1 {
            return Ok(Some(Sealed::SseS3 {
                key_id,
                data_key,
                sealed,
            }));
        }
        let context = match get(META_CONTEXT) {
            None => None,
            Some(v) => {
                let json = base64_decode(&v).ok_or(MetaError::Malformed("context"))?;
                Some(parse_context(&json).ok_or(MetaError::Malformed("context JSON"))?)
            }
        };
        Ok(Some(Sealed::SseKms {
            key_id,
            data_key,
            sealed,
            context,
        }))
    }

    /// Unseals the object key of `bucket/object`.
    pub fn object_key(
        &self,
        kms: Option<&dyn Kms>,
        client_key: Option<&[u8; 32]>,
        bucket: &str,
        object: &str,
    ) -> Result<ObjectKey, MetaError> {
        let path = crate::key::object_path(bucket, object);
        match self {
            Sealed::SseC(sealed) => {
                let k = client_key.ok_or(MetaError::MissingClientKey)?;
                Ok(ObjectKey::unseal(k, sealed, Domain::SseC, bucket, object)?)
            }
            Sealed::SseS3 {
                key_id,
                data_key,
                sealed,
            } => {
                let kms = kms.ok_or(MetaError::NoKms)?;
                let dek = kms.decrypt(key_id, data_key, &Context::single(bucket, &path))?;
                Ok(ObjectKey::unseal(
                    &dek,
                    sealed,
                    Domain::SseS3,
                    bucket,
                    object,
                )?)
            }
            Sealed::SseKms {
                key_id,
                data_key,
                sealed,
                context,
            } => {
                let kms = kms.ok_or(MetaError::NoKms)?;
                let mut ctx = context.clone().unwrap_or_default();
                ctx.0.entry(bucket.to_owned()).or_insert(path);
                let dek = kms.decrypt(key_id, data_key, &ctx)?;
                Ok(ObjectKey::unseal(
                    &dek,
                    sealed,
                    Domain::SseKms,
                    bucket,
                    object,
                )?)
            }
        }
    }
}

/// A JSON object of string values (what a KMS context is); `None` for
/// anything else.
pub fn parse_context(b: &[u8]) -> Option<Context> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.trim().chars().peekable();
    let mut out = Context::default();
    if it.next()? != '{' {
        return None;
    }
    let skip_ws = |it: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
    };
    let string = |it: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Option<String> {
        if it.next()? != '"' {
            return None;
        }
        let mut v = String::new();
        loop {
            match it.next()? {
                '"' => return Some(v),
                '\\' => match it.next()? {
                    '"' => v.push('"'),
                    '\\' => v.push('\\'),
                    '/' => v.push('/'),
                    'n' => v.push('\n'),
                    'r' => v.push('\r'),
                    't' => v.push('\t'),
                    'b' => v.push('\u{8}'),
                    'f' => v.push('\u{c}'),
                    'u' => {
                        let hex: String = (0..4).filter_map(|_| it.next()).collect();
                        let cp = u32::from_str_radix(&hex, 16).ok()?;
                        v.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                    }
                    _ => return None,
                },
                c if (c as u32) < 0x20 => return None,
                c => v.push(c),
            }
        }
    };
    skip_ws(&mut it);
    if it.peek() == Some(&'}') {
        it.next();
        return it.next().is_none().then_some(out);
    }
    loop {
        skip_ws(&mut it);
        let k = string(&mut it)?;
        skip_ws(&mut it);
        if it.next()? != ':' {
            return None;
        }
        skip_ws(&mut it);
        let v = string(&mut it)?;
        out.0.insert(k, v);
        skip_ws(&mut it);
        match it.next()? {
            ',' => continue,
            '}' => break,
            _ => return None,
        }
    }
    skip_ws(&mut it);
    it.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dare::CipherSuite;
    use crate::key::Fresh;
    use crate::kms::StaticKms;

    #[test]
    fn context_json_round_trip() {
        let mut c = Context::default();
        c.0.insert("a".into(), "x<y>&\"q\"\n\u{1}é".into());
        c.0.insert("b".into(), String::new());
        assert_eq!(parse_context(&c.marshal_text()), Some(c));
        assert_eq!(parse_context(b"{}"), Some(Context::default()));
        for bad in [
            &b"[]"[..],
            b"{\"a\":1}",
            b"{\"a\":\"b\"",
            b"{\"a\":\"b\"} x",
            b"{\"a\"\"b\"}",
        ] {
            assert_eq!(parse_context(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn metadata_round_trips_and_unseals() {
        let kms = StaticKms::parse("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let (bucket, object) = ("bkt", "dir/obj");
        let path = crate::key::object_path(bucket, object);
        let fresh = Fresh {
            iv: [7; 32],
            nonce: [8; 12],
        };
        // SSE-KMS with a client context.
        let ctx = Context::single("app", "billing");
        let mut full = ctx.clone();
        full.0.insert(bucket.into(), path.clone());
        let dek = kms.generate_key("k1", &full, &[3; 60]).unwrap();
        let ok = ObjectKey::generate(&dek.plaintext, &[4; 32]);
        let s = Sealed::SseKms {
            key_id: "k1".into(),
            data_key: dek.ciphertext.clone(),
            sealed: ok.seal(
                &dek.plaintext,
                fresh,
                CipherSuite::Aes256Gcm,
                Domain::SseKms,
                bucket,
                object,
            ),
            context: Some(ctx),
        };
        let md = s.to_metadata();
        let get = |k: &str| md.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let back = Sealed::from_metadata(get).unwrap().unwrap();
        assert_eq!(back, s);
        assert_eq!(
            back.object_key(Some(&kms), None, bucket, object).unwrap(),
            ok
        );
        assert!(back.object_key(Some(&kms), None, bucket, "other").is_err());
        assert!(matches!(
            back.object_key(None, None, bucket, object),
            Err(MetaError::NoKms)
        ));
        // SSE-C.
        let client = [9u8; 32];
        let okc = ObjectKey::generate(&client, &[5; 32]);
        let c = Sealed::SseC(okc.seal(
            &client,
            fresh,
            CipherSuite::ChaCha20Poly1305,
            Domain::SseC,
            bucket,
            object,
        ));
        let md = c.to_metadata();
        let get = |k: &str| md.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let back = Sealed::from_metadata(get).unwrap().unwrap();
        assert_eq!(
            back.object_key(None, Some(&client), bucket, object)
                .unwrap(),
            okc
        );
        assert!(matches!(
            back.object_key(None, None, bucket, object),
            Err(MetaError::MissingClientKey)
        ));
        assert!(
            back.object_key(None, Some(&[1; 32]), bucket, object)
                .is_err()
        );
        // Not encrypted, and malformed.
        assert_eq!(Sealed::from_metadata(|_| None).unwrap(), None);
        let bad = |k: &str| (k == META_SEALED_KEY_S3).then(|| "!!".to_owned());
        assert!(Sealed::from_metadata(bad).is_err());
    }
}
