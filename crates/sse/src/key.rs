//! Object keys and their sealing, as MinIO derives and seals them.
//!
//! Every encrypted object has its own 256-bit object key, generated as
//! `SHA-256(external key || 32 random bytes)`. The object key never leaves
//! the server in clear: it is stored *sealed* beside the object's metadata,
//! encrypted (DARE 2.0, 64 bytes) with a key-encryption key
//! `HMAC-SHA-256(external key, iv || domain || "DAREv2-HMAC-SHA256" ||
//! bucket/object)`, so a sealed key only opens for the same external key
//! (the SSE-C client key, or the data key of SSE-S3 / SSE-KMS), the same
//! domain (`SSE-C`, `SSE-S3`, `SSE-KMS`) and the same object path. Part `n`
//! of a multipart object is encrypted with `HMAC-SHA-256(object key,
//! n as u32 little endian)`; an ETag is sealed with
//! `HMAC-SHA-256(object key, "SSE-etag")`.

use hmac::{KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

use crate::dare::{CipherSuite, DareError, Decryptor, Encryptor};

/// The name of the sealing algorithm, stored with every sealed key.
pub const SEAL_ALGORITHM: &str = "DAREv2-HMAC-SHA256";

/// The domain a key is sealed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Customer-provided keys.
    SseC,
    /// Server-managed keys (a KMS data key under the server's key).
    SseS3,
    /// KMS-managed keys with a key id and context.
    SseKms,
}

impl Domain {
    /// The domain string bound into the key-encryption key.
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::SseC => "SSE-C",
            Domain::SseS3 => "SSE-S3",
            Domain::SseKms => "SSE-KMS",
        }
    }
}

/// Why a sealed key did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key was sealed with an algorithm this crate does not open.
    #[error("unsupported sealing algorithm {0:?}")]
    UnsupportedAlgorithm(String),
    /// Wrong external key, domain or object path, or a damaged sealed key.
    #[error("the key does not match the object")]
    Mismatch,
    /// A sealed value has the wrong size.
    #[error("sealed key of {0} bytes, expected 64")]
    BadLength(usize),
}

/// A sealed object key, as stored in the object's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedKey {
    /// The DARE-encrypted object key (64 bytes).
    pub key: [u8; 64],
    /// The random IV of the key-encryption key.
    pub iv: [u8; 32],
    /// [`SEAL_ALGORITHM`].
    pub algorithm: String,
}

/// The random values one sealing needs; never reuse them.
#[derive(Debug, Clone, Copy)]
pub struct Fresh {
    /// IV of the key-encryption key.
    pub iv: [u8; 32],
    /// Nonce of the DARE stream that holds the sealed key.
    pub nonce: [u8; 12],
}

/// A 256-bit object key. Never stored in clear; not printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ObjectKey(pub [u8; 32]);

impl Drop for ObjectKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl std::fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectKey(..)")
    }
}

/// Go's `path.Join(bucket, object)`: joined with `/` and cleaned (repeated
/// slashes, `.` and `..` resolved, no trailing slash).
pub fn object_path(bucket: &str, object: &str) -> String {
    let joined = match (bucket.is_empty(), object.is_empty()) {
        (true, true) => return String::new(),
        (true, false) => object.to_owned(),
        (false, true) => bucket.to_owned(),
        (false, false) => format!("{bucket}/{object}"),
    };
    let rooted = joined.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length: this cannot fail.
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC-SHA256 takes keys of any length"));
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

fn kek(ext: &[u8; 32], iv: &[u8; 32], domain: Domain, bucket: &str, object: &str) -> [u8; 32] {
    hmac_sha256(
        ext,
        &[
            iv,
            domain.as_str().as_bytes(),
            SEAL_ALGORITHM.as_bytes(),
            object_path(bucket, object).as_bytes(),
        ],
    )
}

impl ObjectKey {
    /// A new object key from an external key and 32 random bytes.
    pub fn generate(external: &[u8; 32], random: &[u8; 32]) -> ObjectKey {
        let mut buf = [0u8; 64];
        buf[..32].copy_from_slice(external);
        buf[32..].copy_from_slice(random);
        ObjectKey(Sha256::digest(buf).into())
    }

    /// Seals the key for `domain` and `bucket/object` under `external`,
    /// with fresh random values (the IV and the DARE nonce).
    pub fn seal(
        &self,
        external: &[u8; 32],
        fresh: Fresh,
        suite: CipherSuite,
        domain: Domain,
        bucket: &str,
        object: &str,
    ) -> SealedKey {
        let Fresh { iv, nonce } = fresh;
        let k = kek(external, &iv, domain, bucket, object);
        let sealed = Encryptor::new(&k, nonce, suite).seal_all(&self.0);
        let mut key = [0u8; 64];
        key.copy_from_slice(&sealed);
        SealedKey {
            key,
            iv,
            algorithm: SEAL_ALGORITHM.to_owned(),
        }
    }

    /// Opens a sealed key; fails unless `external`, `domain` and the object
    /// path are those it was sealed with.
    pub fn unseal(
        external: &[u8; 32],
        sealed: &SealedKey,
        domain: Domain,
        bucket: &str,
        object: &str,
    ) -> Result<ObjectKey, KeyError> {
        if sealed.algorithm != SEAL_ALGORITHM {
            return Err(KeyError::UnsupportedAlgorithm(sealed.algorithm.clone()));
        }
        let k = kek(external, &sealed.iv, domain, bucket, object);
        let plain = Decryptor::new(&k, 0)
            .open_all(&sealed.key)
            .map_err(|_| KeyError::Mismatch)?;
        let key: [u8; 32] = plain.try_into().map_err(|_| KeyError::Mismatch)?;
        Ok(ObjectKey(key))
    }

    /// The key of part `id` of a multipart object.
    pub fn part_key(&self, id: u32) -> [u8; 32] {
        hmac_sha256(&self.0, &[&id.to_le_bytes()])
    }

    fn etag_key(&self) -> [u8; 32] {
        hmac_sha256(&self.0, &[b"SSE-etag"])
    }

    /// Seals an ETag (empty ETags stay empty, as MinIO leaves them).
    pub fn seal_etag(&self, etag: &[u8], nonce: [u8; 12], suite: CipherSuite) -> Vec<u8> {
        if etag.is_empty() {
            return Vec::new();
        }
        Encryptor::new(&self.etag_key(), nonce, suite).seal_all(etag)
    }

    /// Opens a sealed ETag.
    pub fn unseal_etag(&self, sealed: &[u8]) -> Result<Vec<u8>, DareError> {
        Decryptor::new(&self.etag_key(), 0).open_all(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_join() {
        for (b, o, want) in [
            ("bucket", "object", "bucket/object"),
            ("bucket", "a//b/./c", "bucket/a/b/c"),
            ("bucket", "dir/", "bucket/dir"),
            ("bucket", "../x", "x"),
            ("bucket", "../../x", "../x"),
            ("", "", ""),
            ("b", "", "b"),
        ] {
            assert_eq!(object_path(b, o), want, "{b:?} {o:?}");
        }
    }

    #[test]
    fn seal_binds_key_domain_and_path() {
        let ext = [1u8; 32];
        let ok = ObjectKey::generate(&ext, &[2u8; 32]);
        let s = ok.seal(
            &ext,
            Fresh {
                iv: [3; 32],
                nonce: [4; 12],
            },
            CipherSuite::Aes256Gcm,
            Domain::SseS3,
            "b",
            "o",
        );
        assert_eq!(
            ObjectKey::unseal(&ext, &s, Domain::SseS3, "b", "o").unwrap(),
            ok
        );
        assert_eq!(
            ObjectKey::unseal(&[9; 32], &s, Domain::SseS3, "b", "o"),
            Err(KeyError::Mismatch)
        );
        assert_eq!(
            ObjectKey::unseal(&ext, &s, Domain::SseC, "b", "o"),
            Err(KeyError::Mismatch)
        );
        assert_eq!(
            ObjectKey::unseal(&ext, &s, Domain::SseS3, "b", "o2"),
            Err(KeyError::Mismatch)
        );
        let mut bad = s.clone();
        bad.iv[0] ^= 1;
        assert_eq!(
            ObjectKey::unseal(&ext, &bad, Domain::SseS3, "b", "o"),
            Err(KeyError::Mismatch)
        );
        let mut old = s.clone();
        old.algorithm = "DARE-SHA256".into();
        assert!(matches!(
            ObjectKey::unseal(&ext, &old, Domain::SseS3, "b", "o"),
            Err(KeyError::UnsupportedAlgorithm(_))
        ));
        assert_ne!(ok.part_key(1), ok.part_key(2));
        let e = ok.seal_etag(b"0123456789abcdef", [5; 12], CipherSuite::ChaCha20Poly1305);
        assert_eq!(ok.unseal_etag(&e).unwrap(), b"0123456789abcdef");
        assert!(
            ok.seal_etag(b"", [5; 12], CipherSuite::Aes256Gcm)
                .is_empty()
        );
        assert!(format!("{ok:?}").contains(".."), "Debug hides the key");
    }
}
