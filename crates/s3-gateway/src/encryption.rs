//! Server-side encryption in MinIO's format, wired into requests: which
//! mode a request asks for (SSE-C, SSE-S3, SSE-KMS, or the server's
//! auto-encryption), a fresh sealed object key for a PUT, the object key of
//! a stored object, and the streams that encrypt a body into DARE packages
//! and decrypt (a range of) them back.
//!
//! What is stored is what MinIO stores: the DARE ciphertext as the object's
//! bytes, the sealed keys in the internal metadata, the part's actual
//! (plaintext) size, and the ETag sealed with the object key; so MinIO with
//! the same KMS key reads Tessera's encrypted objects and the reverse.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use md5::{Digest as _, Md5};
use object::layer::{Chunk, ChunkSink, ObjectInfo, PartEtag, TrailingMetadata, WriteSink};
use ring::rand::{SecureRandom, SystemRandom};
use sse::dare::{self, CipherSuite, Decryptor, Encryptor, PAYLOAD_LEN};
use sse::key::{Domain, Fresh, ObjectKey, object_path};
use sse::kms::{Context, Kms};
use sse::meta::{MetaError, Sealed};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
    C([u8; 32]),
}

impl Mode {
    /// Whether clients see the MD5 of the plaintext as the ETag (SSE-S3),
    /// or an opaque value (SSE-C, SSE-KMS); see [`client_etag`].
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
) -> Result<Option<[u8; 32]>, S3Error> {
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
    let key: [u8; 32] = base64_decode(key)
        .and_then(|k| k.try_into().ok())
        .ok_or_else(|| invalid("The secret key was invalid for the specified algorithm."))?;
    if base64_encode(&Md5::digest(key)) != md5 {
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

fn random<const N: usize>() -> Result<[u8; N], S3Error> {
    let mut b = [0u8; N];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| S3Error::internal("the system random generator failed"))?;
    Ok(b)
}

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
            let dk = kms
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
                    key_id: dk.key_id,
                    data_key: dk.ciphertext,
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
            let dk = kms
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
                    key_id: dk.key_id,
                    data_key: dk.ciphertext,
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

/// MinIO's mark of an encrypted multipart object (each part its own DARE
/// stream under its part key).
pub(crate) const META_MULTIPART: &str = "X-Minio-Internal-Encrypted-Multipart";

/// The encryption of a stored object and its unsealed key.
pub(crate) struct Existing {
    pub key: ObjectKey,
    pub sealed: Sealed,
    /// Parts are sealed with part keys.
    pub multipart: bool,
}

/// One part of an encrypted object: where its ciphertext lies in the
/// stored object, where its plaintext lies in the object as seen, and the
/// key of its DARE stream.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub cipher_offset: u64,
    pub plain_offset: u64,
    pub plain_len: u64,
    pub key: [u8; 32],
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
    /// The ETag clients see, from the stored one: see [`client_etag`].
    pub(crate) fn etag(&self, stored: &str) -> String {
        client_etag(&self.sealed, Some(&self.key), stored, self.multipart)
    }

    /// Whether clients see the MD5 of the plaintext as the ETag (SSE-S3),
    /// or an opaque value (SSE-C, SSE-KMS).
    pub(crate) fn etag_is_md5(&self) -> bool {
        matches!(self.sealed, Sealed::SseS3 { .. })
    }

    /// The response headers that say how the object is encrypted.
    pub(crate) fn headers(&self, h: &mut http::HeaderMap, client: Option<&[u8; 32]>) {
        let set = |h: &mut http::HeaderMap, n: &'static str, v: &str| {
            if let Ok(v) = http::HeaderValue::from_str(v) {
                h.insert(n, v);
            }
        };
        match &self.sealed {
            Sealed::SseC(_) => {
                set(
                    h,
                    "x-amz-server-side-encryption-customer-algorithm",
                    "AES256",
                );
                if let Some(k) = client {
                    set(
                        h,
                        "x-amz-server-side-encryption-customer-key-md5",
                        &base64_encode(&Md5::digest(k)),
                    );
                }
            }
            Sealed::SseS3 { .. } => set(h, SSE, "AES256"),
            Sealed::SseKms { key_id, .. } => {
                set(h, SSE, "aws:kms");
                set(h, SSE_KMS_KEY, &format!("arn:aws:kms:{key_id}"));
            }
        }
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

/// Response headers of a write in `mode`.
pub(crate) fn mode_headers(h: &mut http::HeaderMap, nk: &NewKey) {
    let set = |h: &mut http::HeaderMap, n: &'static str, v: &str| {
        if let Ok(v) = http::HeaderValue::from_str(v) {
            h.insert(n, v);
        }
    };
    match &nk.mode {
        Mode::C(k) => {
            set(
                h,
                "x-amz-server-side-encryption-customer-algorithm",
                "AES256",
            );
            set(
                h,
                "x-amz-server-side-encryption-customer-key-md5",
                &base64_encode(&Md5::digest(k)),
            );
        }
        Mode::S3 => set(h, SSE, "AES256"),
        Mode::Kms { context, .. } => {
            set(h, SSE, "aws:kms");
            if let Some(id) = &nk.key_id {
                set(h, SSE_KMS_KEY, &format!("arn:aws:kms:{id}"));
            }
            // The client's context, as stored (canonical JSON, base64), as
            // S3 and MinIO answer it to the writes that set it.
            if let Some(c) = context.as_ref().filter(|c| !c.0.is_empty()) {
                set(h, SSE_CONTEXT, &base64_encode(&c.marshal_text()));
            }
        }
    }
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

/// Stores `plain` as `bucket/key` encrypted under a fresh key of `mode`:
/// `opts` is completed with the sealed key, the stored and plaintext sizes
/// (`plain_len` when the plaintext's length is known, else the plaintext
/// size is recorded from the ciphertext's) and the sealed ETag, which the
/// reader records in `trailing`. Gives the layer's answer with the ETag
/// clients see, the new key (for the response's headers) and `plain` back.
pub(crate) async fn put_encrypted<R: AsyncRead + Unpin + Send>(
    gw: &crate::service::Gateway,
    (bucket, key): (&str, &str),
    mode: &Mode,
    (plain, plain_len): (R, Option<u64>),
    opts: &mut object::layer::PutOptions,
    trailing: TrailingMetadata,
) -> Result<(object::layer::Result<ObjectInfo>, NewKey, R), S3Error> {
    let nk = new_key(mode, &gw.config.encryption, bucket, key)?;
    match plain_len {
        Some(n) => {
            opts.size = Some(dare::encrypted_len(n));
            opts.actual_size = Some(n);
        }
        None => {
            opts.size = None;
            opts.actual_size_of = Some(dare::decrypted_len);
        }
    }
    opts.internal = nk.internal.clone();
    opts.caller_etag = true;
    opts.trailing_metadata = Some(trailing.clone());
    let mut enc = EncryptingReader::new(plain, &nk.key, trailing, nk.mode.etag_is_md5())?;
    let res = gw.layer.put_object(bucket, key, &mut enc, opts).await;
    let seen = enc.etag.lock().unwrap_or_else(|p| p.into_inner()).take();
    let res = res.map(|mut info| {
        if let Some(e) = seen {
            info.etag = e;
        }
        info
    });
    Ok((res, nk, enc.into_inner()))
}

impl Existing {
    /// A reader encrypting part `number` of this encrypted upload under its
    /// part key, and the options that store it: ciphertext and plaintext
    /// sizes, and the ETag clients see (given by the reader at its end).
    pub(crate) fn part_writer<R>(
        &self,
        number: i64,
        plain: R,
        plain_len: u64,
    ) -> Result<(EncryptingReader<R>, object::layer::PartOptions), S3Error> {
        let part_key = ObjectKey(self.key.part_key(u32::try_from(number).unwrap_or(0)));
        let enc = EncryptingReader::new(
            plain,
            &part_key,
            TrailingMetadata::default(),
            self.etag_is_md5(),
        )?;
        let opts = object::layer::PartOptions {
            size: Some(dare::encrypted_len(plain_len)),
            actual_size: Some(plain_len),
            etag: Some(enc.etag.clone()),
        };
        Ok((enc, opts))
    }
}

/// An MD5 fed from a poll-based reader through [`md5x::Md5Hub`]: bytes are
/// gathered into 1 MiB blocks, and each full block is hashed in the hub's
/// SIMD lanes together with other uploads' blocks (single-stream MD5 was
/// the largest cost of an encrypted PUT) while the reader goes on filling
/// the next one.
struct HubMd5 {
    hasher: Option<md5x::Hasher>,
    pending: Option<md5x::BlockUpdate>,
    buf: Vec<u8>,
    spare: Option<Vec<u8>>,
}

impl HubMd5 {
    /// Bytes gathered before a block goes to the hub.
    const BLOCK: usize = 1 << 20;

    fn new() -> Self {
        HubMd5 {
            hasher: Some(md5x::Md5Hub::global().hasher()),
            pending: None,
            buf: Vec::new(),
            spare: None,
        }
    }

    /// Takes what of `data` fits in the current block; returns how much.
    fn feed(&mut self, data: &[u8]) -> usize {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(Self::BLOCK);
        }
        let n = (Self::BLOCK - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        n
    }

    /// Collects a finished block update, if any; `Pending` while one runs.
    fn poll_pending(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        if let Some(p) = &mut self.pending {
            let (hasher, block) = std::task::ready!(Pin::new(p).poll(cx));
            self.hasher = Some(hasher);
            self.spare = Some(block);
            self.pending = None;
        }
        Poll::Ready(())
    }

    /// Hands the gathered bytes to the hub (no update may be running).
    fn submit(&mut self) {
        let next = self.spare.take().map(|mut b| {
            b.clear();
            b
        });
        let block = std::mem::replace(&mut self.buf, next.unwrap_or_default());
        if let Some(h) = self.hasher.take() {
            self.pending = Some(h.update_block(block));
        }
    }

    /// `Ready` once [`feed`](Self::feed) can take bytes: a full block is
    /// handed to the hub, after the previous one is done.
    fn poll_room(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        loop {
            if self.buf.len() < Self::BLOCK {
                // Collect a finished update early, so its buffer is reused.
                let _ = self.poll_pending(cx);
                return Poll::Ready(());
            }
            std::task::ready!(self.poll_pending(cx));
            self.submit();
        }
    }

    /// The MD5 of everything fed (call once, at the end).
    fn poll_finish(&mut self, cx: &mut TaskContext<'_>) -> Poll<[u8; 16]> {
        loop {
            std::task::ready!(self.poll_pending(cx));
            if self.buf.is_empty() {
                let h = self
                    .hasher
                    .take()
                    .unwrap_or_else(|| md5x::Md5Hub::global().hasher());
                return Poll::Ready(h.finalize());
            }
            self.submit();
        }
    }
}

/// Encrypts a plaintext stream into DARE packages with the object key;
/// at its end, records the sealed ETag (MinIO's form) in the trailing
/// metadata and the ETag clients see in [`etag`](Self::etag).
pub(crate) struct EncryptingReader<R> {
    inner: R,
    enc: Encryptor,
    key: ObjectKey,
    plain: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    md5: HubMd5,
    /// Bytes at the start of `plain` already fed to `md5`.
    md5_fed: usize,
    digest: Option<[u8; 16]>,
    inner_done: bool,
    done: bool,
    trailing: TrailingMetadata,
    etag_is_md5: bool,
    /// The ETag clients see, once the stream ended: the plaintext MD5
    /// (SSE-S3), or the last 32 hex digits of the sealed ETag (SSE-C,
    /// SSE-KMS); see [`client_etag`].
    pub etag: PartEtag,
}

impl<R> EncryptingReader<R> {
    /// `etag_is_md5`: clients see the plaintext MD5 as the ETag (SSE-S3).
    pub(crate) fn new(
        inner: R,
        key: &ObjectKey,
        trailing: TrailingMetadata,
        etag_is_md5: bool,
    ) -> Result<Self, S3Error> {
        Ok(EncryptingReader {
            inner,
            enc: Encryptor::new(&key.0, random()?, CipherSuite::Aes256Gcm),
            key: key.clone(),
            plain: Vec::with_capacity(PAYLOAD_LEN + 1),
            out: Vec::with_capacity(dare::PACKAGE_LEN),
            pos: 0,
            md5: HubMd5::new(),
            md5_fed: 0,
            digest: None,
            inner_done: false,
            done: false,
            trailing,
            etag_is_md5,
            etag: PartEtag::default(),
        })
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    fn seal(&mut self, last: bool) -> io::Result<()> {
        self.out.clear();
        self.pos = 0;
        let n = if last { self.plain.len() } else { PAYLOAD_LEN };
        if n > 0 {
            self.enc
                .seal_package(&self.plain[..n], last, &mut self.out)
                .map_err(|e| io::Error::other(S3Error::internal(e)))?;
        }
        self.plain.drain(..n);
        self.md5_fed -= n;
        if last {
            let digest = self
                .digest
                .ok_or_else(|| io::Error::other(S3Error::internal("the MD5 was not finished")))?;
            let sealed = self.key.seal_etag(
                &digest,
                random().map_err(io::Error::other)?,
                CipherSuite::Aes256Gcm,
            );
            let sealed = hex::encode(sealed);
            let seen = if self.etag_is_md5 {
                hex::encode(digest)
            } else {
                sealed[sealed.len() - 32..].to_owned()
            };
            self.trailing
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(("etag".to_owned(), sealed));
            *self.etag.lock().unwrap_or_else(|p| p.into_inner()) = Some(seen);
            self.done = true;
        }
        Ok(())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EncryptingReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pos < this.out.len() {
                let n = (this.out.len() - this.pos).min(buf.remaining());
                buf.put_slice(&this.out[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            if this.done {
                return Poll::Ready(Ok(()));
            }
            // The MD5 of the plaintext first: in 1 MiB blocks through the
            // multi-buffer hub, with other uploads' blocks.
            if this.md5_fed < this.plain.len() {
                std::task::ready!(this.md5.poll_room(cx));
                this.md5_fed += this.md5.feed(&this.plain[this.md5_fed..]);
                continue;
            }
            if this.plain.len() > PAYLOAD_LEN {
                this.seal(false)?;
                continue;
            }
            if this.inner_done {
                if this.digest.is_none() {
                    this.digest = Some(std::task::ready!(this.md5.poll_finish(cx)));
                }
                this.seal(true)?;
                continue;
            }
            // Read more plaintext.
            let start = this.plain.len();
            this.plain.resize(PAYLOAD_LEN + 1, 0);
            let mut rb = ReadBuf::new(&mut this.plain[start..]);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => {
                    this.plain.truncate(start);
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => {
                    this.plain.truncate(start);
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    this.plain.truncate(start + n);
                    if n == 0 {
                        this.inner_done = true;
                    }
                }
            }
        }
    }
}

/// A [`ChunkSink`] that opens the DARE packages of the ciphertext it is
/// given (starting at package `first_seq`), skips `skip` plaintext bytes
/// and hands the next `left` bytes of plaintext to `out`.
///
/// A package that lies whole inside a chunk (the read buffer of one shard)
/// is decrypted in place there and its plaintext moved down over the
/// headers and tags before it while it is still in cache, so the chunk's
/// plaintext goes on as one frame, a slice of that buffer (a 64 KiB frame
/// per package cost more in channel sends, writes and TCP pushes than the
/// move). Only a package split between two chunks is gathered into a
/// buffer of its own. Nothing of a package goes on before its tag
/// verified.
struct PlainSink<'a, S> {
    dec: Decryptor,
    out: &'a mut S,
    /// A package split between chunks: its header...
    header: [u8; dare::HEADER_LEN],
    /// ...its bytes taken so far (header included)...
    taken: usize,
    /// ...its length, once the header is complete...
    package_len: usize,
    /// ...and its sealed bytes (ciphertext and tag) so far.
    sealed: Vec<u8>,
    skip: usize,
    left: u64,
    /// Why decryption failed (the read then stops with an output error).
    failed: Option<String>,
}

/// Plaintext of one chunk to hand on, in this order.
struct Pieces {
    /// The package that ended at the chunk's start, gathered.
    gathered: Option<Vec<u8>>,
    /// The plaintext of the packages whole in the chunk: its first bytes.
    in_chunk: usize,
}

impl<'a, S: ChunkSink> PlainSink<'a, S> {
    fn new(key: &[u8; 32], first_seq: u64, skip: usize, left: u64, out: &'a mut S) -> Self {
        PlainSink {
            dec: Decryptor::new(key, first_seq),
            out,
            header: [0; dare::HEADER_LEN],
            taken: 0,
            package_len: 0,
            sealed: Vec::new(),
            skip,
            left,
            failed: None,
        }
    }

    /// Of a package's `n` plaintext bytes, the range to hand on (after the
    /// skip, within what is left).
    fn keep(&mut self, n: usize) -> std::ops::Range<usize> {
        let skip = self.skip.min(n);
        self.skip -= skip;
        let keep = ((n - skip) as u64).min(self.left) as usize;
        self.left -= keep as u64;
        skip..skip + keep
    }

    /// Decrypts what `data` holds: the rest of a split package, whole
    /// packages in place (their plaintext moved to the front of `data`),
    /// and the start of the next one (kept).
    fn open(&mut self, data: &mut [u8]) -> Result<Pieces, String> {
        let mut pieces = Pieces {
            gathered: None,
            in_chunk: 0,
        };
        let mut pos = 0;
        while pos < data.len() && self.left > 0 {
            if self.taken == 0 && data.len() - pos >= dare::HEADER_LEN {
                let plen = self.package_len_at(&data[pos..pos + dare::HEADER_LEN])?;
                if data.len() - pos >= plen {
                    // Whole in this chunk: open it where it lies.
                    let mut header = [0u8; dare::HEADER_LEN];
                    header.copy_from_slice(&data[pos..pos + dare::HEADER_LEN]);
                    let sealed = &mut data[pos + dare::HEADER_LEN..pos + plen];
                    let n = self
                        .dec
                        .open_detached(&header, sealed)
                        .map_err(|e| format!("decrypting: {e}"))?;
                    let r = self.keep(n);
                    let base = pos + dare::HEADER_LEN;
                    // Never over ciphertext not yet opened: the front only
                    // holds bytes of packages already done.
                    data.copy_within(base + r.start..base + r.end, pieces.in_chunk);
                    pieces.in_chunk += r.len();
                    pos += plen;
                    continue;
                }
            }
            // A package split between chunks: gather it.
            if self.taken < dare::HEADER_LEN {
                let take = (dare::HEADER_LEN - self.taken).min(data.len() - pos);
                self.header[self.taken..self.taken + take].copy_from_slice(&data[pos..pos + take]);
                self.taken += take;
                pos += take;
                if self.taken < dare::HEADER_LEN {
                    break;
                }
                self.package_len = self.package_len_at(&self.header.clone())?;
                self.sealed.clear();
            }
            let take = (self.package_len - self.taken).min(data.len() - pos);
            self.sealed.extend_from_slice(&data[pos..pos + take]);
            self.taken += take;
            pos += take;
            if self.taken == self.package_len {
                self.taken = 0;
                let mut sealed = std::mem::take(&mut self.sealed);
                let n = self
                    .dec
                    .open_detached(&self.header, &mut sealed)
                    .map_err(|e| format!("decrypting: {e}"))?;
                let r = self.keep(n);
                sealed.truncate(r.end);
                sealed.drain(..r.start);
                if !sealed.is_empty() {
                    // Only the first package of a chunk can end here (one
                    // that starts in it and ends in the next is kept).
                    pieces.gathered = Some(sealed);
                }
            }
        }
        Ok(pieces)
    }

    fn package_len_at(&self, header: &[u8]) -> Result<usize, String> {
        let plen = self.dec.package_len(header).map_err(|e| e.to_string())?;
        if plen > dare::PACKAGE_LEN {
            return Err("encrypted package too long".into());
        }
        Ok(plen)
    }

    /// Fails if the ciphertext ended before the plaintext wanted.
    fn finish(&self) -> Result<(), (bool, String)> {
        if self.left > 0 || self.taken > 0 {
            return Err((false, "encrypted stream ended early".into()));
        }
        Ok(())
    }
}

impl<S: ChunkSink> ChunkSink for PlainSink<'_, S> {
    async fn put(&mut self, mut chunk: Chunk) -> io::Result<()> {
        if self.left == 0 {
            return Ok(());
        }
        let pieces = match self.open(chunk.as_mut_slice()) {
            Ok(p) => p,
            Err(e) => {
                self.failed = Some(e.clone());
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        if let Some(v) = pieces.gathered {
            self.out.put(Chunk::from(v)).await?;
        }
        if pieces.in_chunk > 0 {
            self.out.put(chunk.narrow(0..pieces.in_chunk)).await?;
        }
        Ok(())
    }
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

/// Writes the plaintext `offset..offset + len` of an encrypted object to
/// `out`: for every part it overlaps, reads just the packages it needs and
/// decrypts them.
pub(crate) async fn read_plain<W: AsyncWrite + Unpin + Send>(
    layer: &object::layer::ObjectLayer,
    opened: &object::layer::OpenObject,
    segments: &[Segment],
    range: (u64, u64),
    out: &mut W,
) -> Result<(), (bool, String)> {
    read_plain_chunks(layer, opened, segments, range, &mut WriteSink(out)).await
}

/// [`read_plain`] into a [`ChunkSink`]: the plaintext goes on as slices of
/// the buffers the ciphertext was read (and decrypted) in. The error says
/// whether the sink failed (the client went away) and what happened.
pub(crate) async fn read_plain_chunks<S: ChunkSink>(
    layer: &object::layer::ObjectLayer,
    opened: &object::layer::OpenObject,
    segments: &[Segment],
    (offset, len): (u64, u64),
    out: &mut S,
) -> Result<(), (bool, String)> {
    let end = offset + len;
    for seg in segments {
        let (s0, s1) = (seg.plain_offset, seg.plain_offset + seg.plain_len);
        if s1 <= offset || s0 >= end || seg.plain_len == 0 {
            continue;
        }
        let local = offset.max(s0) - s0;
        let local_len = end.min(s1) - s0 - local;
        let (first, crange, skip) = dare::package_range(local, local_len, seg.plain_len);
        let mut sink = PlainSink::new(&seg.key, first, skip, local_len, &mut *out);
        let r = layer
            .read_object_chunks(
                opened,
                seg.cipher_offset + crange.start,
                crange.end - crange.start,
                &mut sink,
            )
            .await;
        if let Some(e) = sink.failed.take() {
            return Err((false, e));
        }
        if let Err(e) = r {
            return Err((matches!(e, object::layer::Error::Output(_)), e.to_string()));
        }
        sink.finish()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sse::key::SealedKey;

    #[derive(Default)]
    struct Collect(Vec<Vec<u8>>);

    impl ChunkSink for Collect {
        async fn put(&mut self, chunk: Chunk) -> io::Result<()> {
            self.0.push(chunk.as_slice().to_vec());
            Ok(())
        }
    }

    fn chunk(b: &[u8]) -> Chunk {
        Chunk::from(b.to_vec())
    }

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

    fn plaintext(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i.wrapping_mul(31) ^ (i >> 11)) as u8)
            .collect()
    }

    /// Feeds the ciphertext of `offset..offset + len` in chunks of `step`
    /// bytes, as the object layer would hand it over.
    async fn open_range(
        cipher: &[u8],
        plain_len: u64,
        offset: u64,
        len: u64,
        step: usize,
    ) -> (Collect, Result<(), (bool, String)>) {
        let key = [7u8; 32];
        let (first, crange, skip) = dare::package_range(offset, len, plain_len);
        let mut out = Collect::default();
        let mut sink = PlainSink::new(&key, first, skip, len, &mut out);
        let range = &cipher[crange.start as usize..crange.end as usize];
        let mut r = Ok(());
        for chunk in range.chunks(step) {
            if let Err(e) = sink.put(super::tests::chunk(chunk)).await {
                r = Err((false, sink.failed.take().unwrap_or_else(|| e.to_string())));
                break;
            }
        }
        if r.is_ok() {
            r = sink.finish();
        }
        (out, r)
    }

    #[tokio::test]
    async fn ranges_across_packages_and_chunks() {
        let p = PAYLOAD_LEN as u64;
        let plain_len = 40 * p + 1234;
        let plain = plaintext(plain_len as usize);
        let cipher = Encryptor::new(&[7u8; 32], [3u8; 12], CipherSuite::Aes256Gcm).seal_all(&plain);
        let cases = [
            (0, plain_len),
            (0, 1),
            (p - 1, 2),
            (p, p),
            (5, 20 * p),
            (17 * p - 3, 23 * p + 1237 - 17 * p),
            (plain_len - 1, 1),
            (3 * p + 100, 16 * p),
        ];
        // Chunks smaller than a header, straddling packages, and larger
        // than a frame.
        for step in [7, 1000, 65_568, 100_000, 524_288, 3 << 20] {
            for (off, len) in cases {
                let (out, r) = open_range(&cipher, plain_len, off, len, step).await;
                r.unwrap_or_else(|e| panic!("{off}+{len} step {step}: {e:?}"));
                let got: Vec<u8> = out.0.iter().flat_map(|c| c.iter().copied()).collect();
                assert!(
                    got == plain[off as usize..(off + len) as usize],
                    "{off}+{len} step {step}"
                );
                // At most two frames per chunk: a package gathered from
                // two chunks, then the packages whole in the chunk.
                let chunks = (dare::encrypted_len(len) as usize).div_ceil(step) + 2;
                assert!(out.0.len() <= 2 * chunks, "{} frames", out.0.len());
                assert!(out.0.iter().all(|c| !c.is_empty()));
            }
        }
    }

    #[tokio::test]
    async fn a_tampered_package_stops_before_its_plaintext() {
        let p = PAYLOAD_LEN as u64;
        let plain_len = 40 * p;
        let plain = plaintext(plain_len as usize);
        let mut cipher =
            Encryptor::new(&[7u8; 32], [3u8; 12], CipherSuite::Aes256Gcm).seal_all(&plain);
        // A ciphertext byte of package 20.
        cipher[20 * dare::PACKAGE_LEN + 500] ^= 1;
        for step in [1000, 524_288] {
            let (out, r) = open_range(&cipher, plain_len, 0, plain_len, step).await;
            let (client_gone, e) = r.unwrap_err();
            assert!(!client_gone && e.contains("decrypting"), "{e}");
            let got: Vec<u8> = out.0.iter().flat_map(|c| c.iter().copied()).collect();
            // Only whole frames of authenticated packages before it.
            assert!(got.len() as u64 <= 20 * p);
            assert!(got == plain[..got.len()]);
        }
        // A truncated stream is an error too.
        let mut out = Collect::default();
        let mut sink = PlainSink::new(&[7u8; 32], 0, 0, 12 * p, &mut out);
        for chunk in cipher[..10 * dare::PACKAGE_LEN + 100].chunks(4096) {
            sink.put(super::tests::chunk(chunk)).await.unwrap();
        }
        assert!(sink.finish().unwrap_err().1.contains("ended early"));
    }

    /// A reader that gives at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut TaskContext<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self.step.min(self.data.len()).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Poll::Ready(Ok(()))
        }
    }

    /// Encrypts `plain` read `step` bytes at a time: (ciphertext, sealed
    /// ETag, client ETag).
    async fn encrypt(plain: &[u8], step: usize, etag_is_md5: bool) -> (Vec<u8>, String, String) {
        use tokio::io::AsyncReadExt as _;
        let key = ObjectKey([5; 32]);
        let trailing = TrailingMetadata::default();
        let mut r = EncryptingReader::new(
            Trickle { data: plain, step },
            &key,
            trailing.clone(),
            etag_is_md5,
        )
        .unwrap();
        let mut cipher = Vec::new();
        r.read_to_end(&mut cipher).await.unwrap();
        let etag = r.etag.lock().unwrap().clone().unwrap();
        let sealed = trailing.lock().unwrap()[0].1.clone();
        (cipher, sealed, etag)
    }

    /// The encrypting reader's output opens to the plaintext and its ETags
    /// are right (the MD5 through the hub's 1 MiB blocks), for lengths
    /// around package and MD5-block boundaries, read in odd steps, with
    /// several streams at once so the hub's lanes combine them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn encrypting_reader_output_and_etags() {
        let p = PAYLOAD_LEN;
        let mib = 1 << 20;
        let lens = [
            0,
            1,
            p - 1,
            p,
            p + 1,
            mib - 1,
            mib,
            mib + 1,
            3 * mib + p + 5,
        ];
        let mut tasks = tokio::task::JoinSet::new();
        for (i, len) in lens.into_iter().enumerate() {
            for step in [4093, 65_537, 1 << 20] {
                tasks.spawn(async move {
                    let plain = plaintext(len + i);
                    let plain = &plain[i..];
                    let (cipher, sealed, etag) = encrypt(plain, step, i % 2 == 0).await;
                    let label = format!("len {len} step {step}");
                    assert_eq!(
                        cipher.len() as u64,
                        dare::encrypted_len(len as u64),
                        "{label}"
                    );
                    let opened = Decryptor::new(&[5; 32], 0).open_all(&cipher).unwrap();
                    assert!(opened == plain, "{label}");
                    let md5 = Md5::digest(plain);
                    let key = ObjectKey([5; 32]);
                    let unsealed = key.unseal_etag(&hex::decode(&sealed).unwrap()).unwrap();
                    assert_eq!(unsealed, md5.to_vec(), "{label}");
                    if i % 2 == 0 {
                        assert_eq!(etag, hex::encode(md5), "{label}");
                    } else {
                        assert_eq!(etag, sealed[sealed.len() - 32..], "{label}");
                    }
                });
            }
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
    }
}
