//! MinIO's encrypted configuration documents: what MinIO with a KMS
//! writes for its IAM documents (and other files under
//! `.minio.sys/config/`), so that Tessera with the same KMS key reads
//! them and writes them the same way.
//!
//! A document is `version (1) || metadata length (u32, little-endian) ||
//! metadata || stream`, where the metadata is the JSON
//! `{"keyid","kmskey","algorithm","nonce"}` (the KMS key's name, the data
//! key sealed by the KMS, `AES-256-GCM` or `ChaCha20-Poly1305`, and the
//! 8-byte nonce prefix, byte strings in standard base64) and the stream is
//! the document sealed under the data key as a secure-io/sio-go stream
//! (the framing [`crate::madmin`] implements). The data key is bound to
//! the context `{".minio.sys": ".minio.sys/<path>"}` of the document's path.

use serde::{Deserialize, Serialize};

use crate::kms::{Context, Kms, KmsError};
use crate::madmin::{self, Algorithm, NONCE_LEN};

/// The one format version.
pub const VERSION: u8 = 1;
/// Largest metadata MinIO accepts.
pub const MAX_METADATA: usize = 1 << 20;
/// The bucket MinIO keeps its configuration in.
pub const META_BUCKET: &str = ".minio.sys";

/// Why a document did not decrypt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigCryptoError {
    #[error("not an encrypted configuration document: {0}")]
    Format(&'static str),
    #[error("the algorithm {0:?} is not one of MinIO's")]
    Algorithm(String),
    #[error(transparent)]
    Kms(#[from] KmsError),
    #[error("the document does not authenticate")]
    NotAuthentic,
}

#[derive(Serialize, Deserialize)]
struct Metadata {
    keyid: String,
    #[serde(with = "b64")]
    kmskey: Vec<u8>,
    algorithm: String,
    #[serde(with = "b64")]
    nonce: Vec<u8>,
}

mod b64 {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// The KMS context of the document at `path` under `.minio.sys`
/// (`config/iam/users/alice/identity.json`).
pub fn context_for(path: &str) -> Context {
    Context::single(META_BUCKET, &format!("{META_BUCKET}/{path}"))
}

/// The context older MinIO releases bound documents to: the bare path.
pub fn legacy_context_for(path: &str) -> Context {
    Context::single(META_BUCKET, path)
}

/// Whether `data` looks like an encrypted configuration document (its
/// version and a JSON metadata object), as opposed to a JSON document or
/// a madmin payload.
pub fn is_encrypted(data: &[u8]) -> bool {
    split(data).is_ok_and(|(meta, _)| meta.first() == Some(&b'{'))
}

/// A document's metadata and stream, after its version and length.
fn split(data: &[u8]) -> Result<(&[u8], &[u8]), ConfigCryptoError> {
    let (header, rest) = data
        .split_first_chunk::<5>()
        .ok_or(ConfigCryptoError::Format("shorter than its header"))?;
    if header[0] != VERSION {
        return Err(ConfigCryptoError::Format("unknown version"));
    }
    let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if len > MAX_METADATA || len > rest.len() {
        return Err(ConfigCryptoError::Format("metadata length"));
    }
    Ok(rest.split_at(len))
}

fn stream_algorithm(name: &str) -> Result<Algorithm, ConfigCryptoError> {
    // The AEAD of madmin's ids with the same cipher: the stream framing is
    // the same sio-go stream.
    match name {
        "AES-256-GCM" => Ok(Algorithm::Argon2idAes256Gcm),
        "ChaCha20-Poly1305" => Ok(Algorithm::Argon2idChaCha20Poly1305),
        other => Err(ConfigCryptoError::Algorithm(other.to_owned())),
    }
}

/// Encrypts `plaintext` under a new data key of `kms` bound to
/// `context`, with AES-256-GCM; `random` supplies the data key's 60
/// random bytes and `nonce` the stream's.
pub fn encrypt(
    kms: &dyn Kms,
    context: &Context,
    random: &[u8; 60],
    nonce: [u8; NONCE_LEN],
    plaintext: &[u8],
) -> Result<Vec<u8>, ConfigCryptoError> {
    let key = kms.generate_key(kms.default_key_id(), context, random)?;
    let metadata = serde_json::to_vec(&Metadata {
        keyid: key.key_id.clone(),
        kmskey: key.ciphertext.clone(),
        algorithm: "AES-256-GCM".to_owned(),
        nonce: nonce.to_vec(),
    })
    .map_err(|_| ConfigCryptoError::Format("metadata"))?;
    let mut out = Vec::with_capacity(5 + metadata.len() + plaintext.len() + 64);
    out.push(VERSION);
    out.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
    out.extend_from_slice(&metadata);
    out.extend_from_slice(&madmin::seal_stream(
        Algorithm::Argon2idAes256Gcm,
        &key.plaintext,
        nonce,
        plaintext,
    ));
    Ok(out)
}

/// Decrypts a document of [`encrypt`]'s (or MinIO's) format bound to
/// `context`.
pub fn decrypt(
    kms: &dyn Kms,
    context: &Context,
    data: &[u8],
) -> Result<Vec<u8>, ConfigCryptoError> {
    let (meta, stream) = split(data)?;
    let metadata: Metadata = serde_json::from_slice(meta)
        .map_err(|_| ConfigCryptoError::Format("metadata is not its JSON"))?;
    let algorithm = stream_algorithm(&metadata.algorithm)?;
    let nonce: [u8; NONCE_LEN] = metadata
        .nonce
        .as_slice()
        .try_into()
        .map_err(|_| ConfigCryptoError::NotAuthentic)?;
    let key = kms.decrypt(&metadata.keyid, &metadata.kmskey, context)?;
    madmin::open_stream(algorithm, &key, nonce, stream).map_err(|_| ConfigCryptoError::NotAuthentic)
}

/// The metadata's key name of an encrypted document (for messages).
pub fn key_id_of(data: &[u8]) -> Option<String> {
    let (meta, _) = split(data).ok()?;
    serde_json::from_slice::<Metadata>(meta)
        .ok()
        .map(|m| m.keyid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kms::StaticKms;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    fn kms(key: u8) -> StaticKms {
        StaticKms::parse(&format!("my-key:{}", STANDARD.encode([key; 32]))).unwrap()
    }

    #[test]
    fn documents_round_trip_bound_to_their_path() {
        let k = kms(7);
        let ctx = context_for("config/iam/users/alice/identity.json");
        assert_eq!(
            ctx.marshal_text(),
            br#"{".minio.sys":".minio.sys/config/iam/users/alice/identity.json"}"#
        );
        for len in [0usize, 1, 100, 16384, 16385, 50_000] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let doc = encrypt(&k, &ctx, &[3; 60], [9; NONCE_LEN], &plain).unwrap();
            assert!(is_encrypted(&doc));
            assert_eq!(key_id_of(&doc).as_deref(), Some("my-key"));
            assert_eq!(decrypt(&k, &ctx, &doc).unwrap(), plain, "{len}");
            // Another path's context, another key, a flipped byte: refused.
            let other = context_for("config/iam/users/bob/identity.json");
            assert!(decrypt(&k, &other, &doc).is_err());
            assert!(decrypt(&kms(8), &ctx, &doc).is_err());
            let mut bad = doc.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert_eq!(
                decrypt(&k, &ctx, &bad),
                Err(ConfigCryptoError::NotAuthentic)
            );
        }
    }

    #[test]
    fn metadata_is_minio_s_json() {
        let k = kms(7);
        let ctx = context_for("config/iam/format.json");
        let doc = encrypt(&k, &ctx, &[3; 60], [1, 2, 3, 4, 5, 6, 7, 8], b"{}").unwrap();
        let len = u32::from_le_bytes(doc[1..5].try_into().unwrap()) as usize;
        let meta: serde_json::Value = serde_json::from_slice(&doc[5..5 + len]).unwrap();
        let keys: Vec<&String> = meta.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["algorithm", "keyid", "kmskey", "nonce"]);
        assert_eq!(meta["algorithm"], "AES-256-GCM");
        assert_eq!(meta["nonce"], "AQIDBAUGBwg=");
        // Field order as Go writes the struct.
        assert!(doc[5..].starts_with(br#"{"keyid":"my-key","kmskey":""#));
    }

    #[test]
    fn malformed_documents_are_refused_without_panicking() {
        let k = kms(7);
        let ctx = context_for("x");
        for bad in [
            &b""[..],
            b"\x01",
            b"\x02\x00\x00\x00\x00",
            b"\x01\xff\xff\xff\xff{",
            b"\x01\x02\x00\x00\x00{}",
            b"{\"version\":1}",
        ] {
            assert!(decrypt(&k, &ctx, bad).is_err(), "{bad:?}");
        }
        assert!(!is_encrypted(b"{\"version\":1}"));
        let doc = br#"{"keyid":"my-key","kmskey":"AAAA","algorithm":"XChaCha20-Poly1305","nonce":"AAAAAAAAAAA="}"#;
        let mut data = vec![1u8];
        data.extend_from_slice(&(doc.len() as u32).to_le_bytes());
        data.extend_from_slice(doc);
        assert_eq!(
            decrypt(&k, &ctx, &data),
            Err(ConfigCryptoError::Algorithm("XChaCha20-Poly1305".into()))
        );
    }
}
