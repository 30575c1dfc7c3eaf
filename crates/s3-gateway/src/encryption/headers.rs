//! Which encryption a request asks for (the SSE headers of a write, an
//! SSE-C key, the bucket's default encryption, the server's
//! auto-encryption), and the response headers that say how an object is
//! encrypted.

use std::sync::Arc;

use sse::kms::{Context, Kms};
use sse::meta::Sealed;

use super::keys::{Existing, NewKey};
use super::set_header;
use crate::checksum::{base64_decode, base64_encode};
use crate::error::S3Error;

const SSE: &str = "x-amz-server-side-encryption";
const SSE_KMS_KEY: &str = "x-amz-server-side-encryption-aws-kms-key-id";
const SSE_CONTEXT: &str = "x-amz-server-side-encryption-context";
/// SSE-C request headers (prefix).
pub(crate) const SSEC: &str = "x-amz-server-side-encryption-customer-";
/// SSE-C headers of a copy source (prefix).
pub(crate) const SSEC_COPY: &str = "x-amz-copy-source-server-side-encryption-customer-";

/// What a write asks for.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// SSE-S3.
    S3,
    /// SSE-KMS with an optional key id and context.
    Kms {
        key_id: Option<String>,
        context: Option<Context>,
    },
    /// SSE-C with the client's key.
    C(ClientKey),
}

/// A client's SSE-C key: wiped when dropped, never printed by `Debug`.
#[derive(Clone)]
pub(crate) struct ClientKey([u8; 32]);

impl std::ops::Deref for ClientKey {
    type Target = [u8; 32];
    fn deref(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Drop for ClientKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientKey(..)")
    }
}

impl Mode {
    /// Whether clients see the MD5 of the plaintext as the ETag (SSE-S3),
    /// or an opaque value (SSE-C, SSE-KMS); see
    /// [`client_etag`](super::view::client_etag).
    pub(crate) fn etag_is_md5(&self) -> bool {
        matches!(self, Mode::S3)
    }
}

/// Encryption settings of the gateway.
#[derive(Debug, Clone, Default)]
pub struct EncryptionConfig {
    /// The KMS that seals data keys (SSE-S3, SSE-KMS); `None`: those modes
    /// are refused.
    pub kms: Option<Arc<dyn Kms>>,
    /// Encrypt every new object with SSE-S3 when the request asks for no
    /// encryption (MinIO's `MINIO_KMS_AUTO_ENCRYPTION`).
    pub auto_encryption: bool,
    /// Whether requests arrive over TLS (SSE-C needs it).
    pub tls: bool,
    /// Accept SSE-C keys over plain HTTP (for tests only).
    pub insecure_sse_c: bool,
}

fn invalid(msg: &str) -> S3Error {
    S3Error::with_message("InvalidArgument", msg)
}

/// The SSE-C key of a request (`prefix` is [`SSEC`] or [`SSEC_COPY`]):
/// algorithm AES256, a 32-byte key and its MD5, all or nothing.
pub(crate) fn client_key(
    h: &http::HeaderMap,
    prefix: &str,
    cfg: &EncryptionConfig,
) -> Result<Option<ClientKey>, S3Error> {
    let get = |n: &str| {
        h.get(format!("{prefix}{n}").as_str())
            .and_then(|v| v.to_str().ok())
    };
    let (alg, key, md5) = (get("algorithm"), get("key"), get("key-md5"));
    if alg.is_none() && key.is_none() && md5.is_none() {
        return Ok(None);
    }
    if !cfg.tls && !cfg.insecure_sse_c {
        return Err(S3Error::with_message(
            "InvalidRequest",
            "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.",
        ));
    }
    let (Some(alg), Some(key), Some(md5)) = (alg, key, md5) else {
        return Err(invalid(
            "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key and its MD5.",
        ));
    };
    if alg != "AES256" {
        return Err(invalid(
            "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.",
        ));
    }
    let decoded = zeroize::Zeroizing::new(base64_decode(key).unwrap_or_default());
    let key = <[u8; 32]>::try_from(decoded.as_slice())
        .map(ClientKey)
        .map_err(|_| invalid("The secret key was invalid for the specified algorithm."))?;
    if base64_encode(&md5x::digest(&key[..])) != md5 {
        return Err(invalid(
            "The calculated MD5 hash of the key did not match the hash that was provided.",
        ));
    }
    Ok(Some(key))
}

/// The encryption a write asks for, or the server's default.
pub(crate) fn write_mode(
    h: &http::HeaderMap,
    cfg: &EncryptionConfig,
) -> Result<Option<Mode>, S3Error> {
    let sse = h.get(SSE).and_then(|v| v.to_str().ok());
    let customer = client_key(h, SSEC, cfg)?;
    let mode = match (sse, customer) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "Server Side Encryption with Customer provided key is incompatible with the encryption method specified",
            ));
        }
        (None, Some(k)) => Some(Mode::C(k)),
        (Some("AES256"), None) => Some(Mode::S3),
        (Some("aws:kms"), None) => {
            let context = match h.get(SSE_CONTEXT).and_then(|v| v.to_str().ok()) {
                None => None,
                Some(b64) => Some(
                    base64_decode(b64)
                        .and_then(|j| sse::meta::parse_context(&j))
                        .ok_or_else(|| {
                            invalid("The encryption context is not valid base64 JSON.")
                        })?,
                ),
            };
            Some(Mode::Kms {
                key_id: h
                    .get(SSE_KMS_KEY)
                    .and_then(|v| v.to_str().ok())
                    .map(|s| s.trim_start_matches("arn:aws:kms:").to_owned()),
                context,
            })
        }
        (Some(other), None) => {
            return Err(invalid(&format!(
                "The encryption method specified is not supported: {other}"
            )));
        }
        (None, None) if cfg.auto_encryption && cfg.kms.is_some() => Some(Mode::S3),
        (None, None) => None,
    };
    if matches!(mode, Some(Mode::S3 | Mode::Kms { .. })) && cfg.kms.is_none() {
        return Err(S3Error::with_message(
            "NotImplemented",
            "Server side encryption specified but KMS is not configured",
        ));
    }
    Ok(mode)
}

/// A bucket's default encryption from its `ServerSideEncryptionConfiguration`.
pub(crate) fn parse_bucket_default(doc: &[u8]) -> Result<Mode, S3Error> {
    let root = crate::xml::parse(doc)?;
    if root.name != "ServerSideEncryptionConfiguration" {
        return Err(S3Error::new("MalformedXML"));
    }
    let rules: Vec<_> = root.children_named("Rule").collect();
    if rules.len() != 1 {
        return Err(S3Error::with_message(
            "MalformedXML",
            "The configuration must hold exactly one rule.",
        ));
    }
    let apply = rules[0]
        .child("ApplyServerSideEncryptionByDefault")
        .ok_or_else(|| S3Error::new("MalformedXML"))?;
    match apply.child_text("SSEAlgorithm").map(str::trim) {
        Some("AES256") => Ok(Mode::S3),
        Some("aws:kms") => Ok(Mode::Kms {
            key_id: apply
                .child_text("KMSMasterKeyID")
                .map(|k| k.trim().trim_start_matches("arn:aws:kms:").to_owned())
                .filter(|k| !k.is_empty()),
            context: None,
        }),
        _ => Err(S3Error::with_message(
            "MalformedXML",
            "SSEAlgorithm must be AES256 or aws:kms.",
        )),
    }
}

/// The encryption of a new object in `bucket`: what the request asks
/// for, else the bucket's default, else the server's auto-encryption.
pub(crate) async fn write_mode_for(
    gw: &crate::service::Gateway,
    h: &http::HeaderMap,
    bucket: &str,
) -> Result<Option<Mode>, S3Error> {
    let cfg = &gw.config.encryption;
    let explicit = h.contains_key(SSE) || h.keys().any(|k| k.as_str().starts_with(SSEC));
    if !explicit
        && let Some(doc) = gw
            .layer
            .bucket_config(bucket, object::layer::BucketConfig::Encryption)
            .await?
    {
        if cfg.kms.is_none() {
            return Err(S3Error::with_message(
                "NotImplemented",
                "The bucket's default encryption needs a KMS, and none is configured",
            ));
        }
        return parse_bucket_default(&doc).map(Some);
    }
    write_mode(h, cfg)
}

impl Existing {
    /// The response headers that say how the object is encrypted.
    pub(crate) fn headers(&self, h: &mut http::HeaderMap, client: Option<&[u8; 32]>) {
        match &self.sealed {
            Sealed::SseC(_) => ssec_headers(h, client),
            Sealed::SseS3 { .. } => set_header(h, SSE, "AES256"),
            Sealed::SseKms { key_id, .. } => {
                set_header(h, SSE, "aws:kms");
                set_header(h, SSE_KMS_KEY, &format!("arn:aws:kms:{key_id}"));
            }
        }
    }
}

/// The SSE-C response headers: the algorithm, and the key's MD5 when the
/// request gave the key.
fn ssec_headers(h: &mut http::HeaderMap, key: Option<&[u8; 32]>) {
    set_header(
        h,
        "x-amz-server-side-encryption-customer-algorithm",
        "AES256",
    );
    if let Some(k) = key {
        set_header(
            h,
            "x-amz-server-side-encryption-customer-key-md5",
            &base64_encode(&md5x::digest(k)),
        );
    }
}

/// Response headers of a write in `mode`.
pub(crate) fn mode_headers(h: &mut http::HeaderMap, nk: &NewKey) {
    match &nk.mode {
        Mode::C(k) => ssec_headers(h, Some(k)),
        Mode::S3 => set_header(h, SSE, "AES256"),
        Mode::Kms { context, .. } => {
            set_header(h, SSE, "aws:kms");
            if let Some(id) = &nk.key_id {
                set_header(h, SSE_KMS_KEY, &format!("arn:aws:kms:{id}"));
            }
            // The client's context, as stored (canonical JSON, base64), as
            // S3 and MinIO answer it to the writes that set it.
            if let Some(c) = context.as_ref().filter(|c| !c.0.is_empty()) {
                set_header(h, SSE_CONTEXT, &base64_encode(&c.marshal_text()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_keys_are_checked_and_never_printed() {
        let key = [0xA5u8; 32];
        let mut h = http::HeaderMap::new();
        let cfg = EncryptionConfig {
            insecure_sse_c: true,
            ..EncryptionConfig::default()
        };
        h.insert(
            "x-amz-server-side-encryption-customer-algorithm",
            "AES256".parse().unwrap(),
        );
        h.insert(
            "x-amz-server-side-encryption-customer-key",
            base64_encode(&key).parse().unwrap(),
        );
        h.insert(
            "x-amz-server-side-encryption-customer-key-md5",
            base64_encode(&md5x::digest(&key)).parse().unwrap(),
        );
        let got = client_key(&h, SSEC, &cfg).unwrap().unwrap();
        assert_eq!(*got, key);
        let mode = write_mode(&h, &cfg).unwrap().unwrap();
        for printed in [format!("{got:?}"), format!("{mode:?}")] {
            assert!(!printed.contains("165"), "{printed}");
            assert!(!printed.to_lowercase().contains("a5"), "{printed}");
        }
        // A wrong MD5 is refused.
        h.insert(
            "x-amz-server-side-encryption-customer-key-md5",
            base64_encode(&md5x::digest(b"other")).parse().unwrap(),
        );
        assert!(client_key(&h, SSEC, &cfg).is_err());
    }
}
