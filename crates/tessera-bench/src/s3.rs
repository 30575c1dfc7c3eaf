//! The S3 requests the workloads need, over [`Pool`], signed with
//! [`Signer`]: bucket creation, PUT, verified GET, HEAD, DELETE,
//! ListObjectsV2 and multipart uploads.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use md5::Md5;
use sha2::{Digest, Sha256};

use crate::chunked::{Chain, ChunkedPattern, Encoder, Framing, PayloadMode};
use crate::client::{Lease, OpError, Pool, ReqBody};
use crate::pattern::Pattern;
use crate::sign::{PayloadHash, Signer};

/// Largest non-data response body read (listings, errors, XML answers).
pub const MAX_SMALL_BODY: usize = 16 << 20;
/// S3's part count limit.
pub const MAX_PARTS: u64 = 10_000;
/// S3's smallest part (all but the last).
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// S3's largest part.
pub const MAX_PART_SIZE: u64 = 5 << 30;

/// Server-side encryption requested on writes (and, for SSE-C, reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sse {
    None,
    /// `x-amz-server-side-encryption: AES256`.
    S3,
    /// SSE-C with this 32-byte key.
    C {
        key_b64: String,
        key_md5_b64: String,
    },
}

impl Sse {
    /// SSE-C with a key derived from the run seed (a benchmark key, not a
    /// secret).
    pub fn customer_key(seed: u64) -> Sse {
        let mut key = [0u8; 32];
        crate::pattern::Rng::new(seed ^ 0x5353_452d_4300_0000).fill(&mut key);
        Sse::C {
            key_b64: STANDARD.encode(key),
            key_md5_b64: STANDARD.encode(Md5::digest(key)),
        }
    }

    fn write_headers(&self, h: &mut Vec<(&'static str, String)>) {
        match self {
            Sse::None => {}
            Sse::S3 => h.push(("x-amz-server-side-encryption", "AES256".into())),
            Sse::C { .. } => self.read_headers(h),
        }
    }

    fn read_headers(&self, h: &mut Vec<(&'static str, String)>) {
        if let Sse::C {
            key_b64,
            key_md5_b64,
        } = self
        {
            h.push((
                "x-amz-server-side-encryption-customer-algorithm",
                "AES256".into(),
            ));
            h.push(("x-amz-server-side-encryption-customer-key", key_b64.clone()));
            h.push((
                "x-amz-server-side-encryption-customer-key-md5",
                key_md5_b64.clone(),
            ));
        }
    }
}

/// S3's URI encoding: everything but unreserved characters (and `/` when
/// `keep_slash`) as `%XX`.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The text of the first `<tag>...</tag>` in `xml`, unescaped.
pub fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&close)? + start;
    Some(xml_unescape(&xml[start..end]))
}

/// Every `<tag>...</tag>` text in `xml`, unescaped.
pub fn xml_all(xml: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let s = &rest[i + open.len()..];
        let Some(j) = s.find(&close) else { break };
        out.push(xml_unescape(&s[..j]));
        rest = &s[j + close.len()..];
    }
    out
}

/// Unescapes the five XML entities and numeric references.
pub fn xml_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let Some(end) = after.find(';') else {
            out.push_str(after);
            return out;
        };
        let ent = &after[1..end];
        let ch = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => {
                let n = if let Some(h) = ent.strip_prefix("#x").or_else(|| ent.strip_prefix("#X")) {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = ent.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    None
                };
                n.and_then(char::from_u32)
            }
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A body to send.
#[derive(Debug, Clone)]
pub enum Body {
    Empty,
    Bytes(Bytes),
    /// `len` bytes of `pattern` from `offset`, sent as `framing` says;
    /// `sha256` when signed.
    Pattern {
        pattern: Pattern,
        offset: u64,
        len: u64,
        framing: Framing,
        sha256: Option<String>,
    },
}

impl Body {
    /// Bytes on the wire.
    fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::Pattern { len, framing, .. } => framing.encoded_len(*len),
        }
    }

    /// The aws-chunked framing, when the body has one.
    fn chunked(&self) -> Option<(Framing, u64)> {
        match self {
            Body::Pattern { framing, len, .. } if framing.content_sha256().is_some() => {
                Some((*framing, *len))
            }
            _ => None,
        }
    }

    /// The body to send; `chain` is the signature chain of a streaming
    /// signed body.
    fn to_req(&self, chain: Option<Chain>) -> ReqBody {
        match self {
            Body::Empty => ReqBody::Empty,
            Body::Bytes(b) => ReqBody::Bytes(Some(b.clone())),
            Body::Pattern {
                pattern,
                offset,
                len,
                framing,
                ..
            } => {
                let encoder = match (framing, chain) {
                    (Framing::Streaming, Some(chain)) => Encoder::Signed(chain),
                    (Framing::Trailer(t), _) => Encoder::trailer(*t),
                    _ => {
                        return ReqBody::Pattern {
                            pattern: pattern.clone(),
                            pos: *offset,
                            end: offset + len,
                        };
                    }
                };
                ReqBody::Chunked(Box::new(ChunkedPattern::new(
                    pattern.clone(),
                    *offset,
                    offset + len,
                    encoder,
                    framing.encoded_len(*len),
                )))
            }
        }
    }

    fn payload_hash(&self) -> PayloadHash<'_> {
        match self {
            Body::Empty => PayloadHash::Bytes(&[]),
            Body::Bytes(b) => PayloadHash::Bytes(b),
            Body::Pattern { framing, .. } if framing.content_sha256().is_some() => {
                PayloadHash::Precomputed(framing.content_sha256().unwrap_or_default().into())
            }
            Body::Pattern {
                sha256: Some(h), ..
            } => PayloadHash::Precomputed(h.clone()),
            Body::Pattern { sha256: None, .. } => PayloadHash::Unsigned,
        }
    }
}

/// SHA-256 of a range of a pattern, lowercase hex.
pub fn pattern_sha256(pattern: &Pattern, offset: u64, len: u64) -> String {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; crate::client::FRAME];
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let n = (end - pos).min(buf.len() as u64) as usize;
        pattern.fill(pos, &mut buf[..n]);
        h.update(&buf[..n]);
        pos += n as u64;
    }
    hex::encode(h.finalize())
}

/// The S3 client of a run.
pub struct S3 {
    pub pool: Pool,
    signer: Signer,
    pub sse: Sse,
    /// How data bodies go (resolved for the endpoints' scheme).
    pub payload: Framing,
    pub seed: u64,
}

/// A response head and its still unread body.
struct Resp {
    status: u16,
    headers: http::HeaderMap,
    body: Incoming,
    lease: Lease,
}

impl S3 {
    pub fn new(pool: Pool, signer: Signer, sse: Sse, payload: PayloadMode, seed: u64) -> S3 {
        let https = pool.endpoints().first().is_some_and(|e| e.tls);
        S3 {
            pool,
            signer,
            sse,
            payload: payload.framing(https),
            seed,
        }
    }

    pub fn pattern(&self, key: &str, size: u64) -> Pattern {
        Pattern::new(key, size, self.seed)
    }

    fn data_body(&self, pattern: Pattern, offset: u64, len: u64) -> Body {
        let sha256 =
            (self.payload == Framing::Signed).then(|| pattern_sha256(&pattern, offset, len));
        Body::Pattern {
            pattern,
            offset,
            len,
            framing: self.payload,
            sha256,
        }
    }

    async fn request(
        &self,
        ep: usize,
        method: &'static str,
        path_and_query: &str,
        extra: &[(&'static str, String)],
        body: &Body,
    ) -> Result<Resp, OpError> {
        let authority = self.pool.endpoints()[ep].authority.clone();
        let build = || -> Result<http::Request<ReqBody>, OpError> {
            let len = body.len().to_string();
            let mut to_sign: Vec<(&str, &str)> = vec![("host", authority.as_str())];
            if method == "PUT" || method == "POST" {
                to_sign.push(("content-length", len.as_str()));
            }
            let decoded;
            if let Some((framing, data_len)) = body.chunked() {
                decoded = data_len.to_string();
                to_sign.push(("content-encoding", "aws-chunked"));
                to_sign.push(("x-amz-decoded-content-length", decoded.as_str()));
                if let Framing::Trailer(t) = framing {
                    to_sign.push(("x-amz-trailer", t.header()));
                }
            }
            for (n, v) in extra {
                to_sign.push((n, v.as_str()));
            }
            let now = SystemTime::now();
            let signed = self
                .signer
                .sign(method, path_and_query, &to_sign, body.payload_hash(), now)
                .map_err(OpError::Client)?;
            let chain = match body.chunked() {
                Some((Framing::Streaming, _)) => {
                    let amz_date = signed
                        .headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("x-amz-date"))
                        .map(|(_, v)| v.as_str())
                        .ok_or_else(|| OpError::Client("signature without x-amz-date".into()))?;
                    Some(self.signer.chain(now, amz_date, signed.signature.clone()))
                }
                _ => None,
            };
            let mut b = http::Request::builder().method(method).uri(path_and_query);
            for (n, v) in &to_sign {
                b = b.header(*n, *v);
            }
            for (n, v) in &signed.headers {
                b = b.header(*n, v.as_str());
            }
            b.body(body.to_req(chain))
                .map_err(|e| OpError::Client(format!("request {method} {path_and_query}: {e}")))
        };
        let (resp, lease) = self.pool.send(ep, &build).await?;
        let (parts, body) = resp.into_parts();
        Ok(Resp {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            lease,
        })
    }

    /// Reads a whole (small) body and returns the connection to the pool.
    async fn finish(
        &self,
        resp: Resp,
        limit: usize,
    ) -> Result<(u16, http::HeaderMap, Vec<u8>), OpError> {
        let Resp {
            status,
            headers,
            mut body,
            lease,
        } = resp;
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| OpError::Io(crate::client::error_chain(&e)))?;
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > limit {
                    return Err(OpError::BadResponse(format!(
                        "response body larger than {limit} bytes"
                    )));
                }
                out.extend_from_slice(&data);
            }
        }
        self.pool.give_back(lease);
        Ok((status, headers, out))
    }

    /// Turns a non-success response into an error (S3 code and message
    /// from the XML body when there is one).
    async fn error(&self, resp: Resp) -> OpError {
        let status = resp.status;
        match self.finish(resp, 64 << 10).await {
            Ok((_, _, body)) => {
                let text = String::from_utf8_lossy(&body);
                OpError::Http {
                    status,
                    code: xml_text(&text, "Code").unwrap_or_default(),
                    message: xml_text(&text, "Message").unwrap_or_default(),
                }
            }
            Err(_) => OpError::Http {
                status,
                code: String::new(),
                message: String::new(),
            },
        }
    }

    fn object_path(bucket: &str, key: &str) -> String {
        format!("/{}/{}", uri_encode(bucket, false), uri_encode(key, true))
    }

    /// Creates `bucket` unless it exists and is ours.
    pub async fn ensure_bucket(&self, ep: usize, bucket: &str) -> Result<(), OpError> {
        let path = format!("/{}", uri_encode(bucket, false));
        let resp = self.request(ep, "HEAD", &path, &[], &Body::Empty).await?;
        if resp.status == 200 {
            self.finish(resp, 0).await?;
            return Ok(());
        }
        if resp.status != 404 {
            return Err(self.error(resp).await);
        }
        self.finish(resp, 64 << 10).await?;
        let resp = self.request(ep, "PUT", &path, &[], &Body::Empty).await?;
        if resp.status == 200 {
            self.finish(resp, 64 << 10).await?;
            return Ok(());
        }
        match self.error(resp).await {
            OpError::Http { code, .. } if code == "BucketAlreadyOwnedByYou" => Ok(()),
            e => Err(e),
        }
    }

    /// PUT of `size` bytes of the key's pattern.
    pub async fn put(&self, ep: usize, bucket: &str, key: &str, size: u64) -> Result<(), OpError> {
        let body = self.data_body(self.pattern(key, size), 0, size);
        let mut h = Vec::new();
        self.sse.write_headers(&mut h);
        let resp = self
            .request(ep, "PUT", &Self::object_path(bucket, key), &h, &body)
            .await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        let (_, headers, _) = self.finish(resp, 64 << 10).await?;
        if !headers.contains_key(http::header::ETAG) {
            return Err(OpError::BadResponse("PUT answered without an ETag".into()));
        }
        Ok(())
    }

    /// GET of a whole object, every byte checked against its pattern.
    /// Returns the bytes received.
    pub async fn get(&self, ep: usize, bucket: &str, key: &str, size: u64) -> Result<u64, OpError> {
        let pattern = self.pattern(key, size);
        let mut h = Vec::new();
        self.sse.read_headers(&mut h);
        let resp = self
            .request(ep, "GET", &Self::object_path(bucket, key), &h, &Body::Empty)
            .await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        if let Some(len) = content_length(&resp.headers)
            && len != size
        {
            return Err(OpError::BadResponse(format!(
                "GET {key}: Content-Length {len}, object has {size} bytes"
            )));
        }
        let Resp {
            mut body, lease, ..
        } = resp;
        let mut off = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| OpError::Io(crate::client::error_chain(&e)))?;
            if let Ok(data) = frame.into_data() {
                if off + data.len() as u64 > size {
                    return Err(OpError::BadResponse(format!(
                        "GET {key}: more than the {size} bytes of the object"
                    )));
                }
                pattern.verify(off, &data).map_err(|m| {
                    OpError::Mismatch(format!("GET {bucket}/{key} ({size} bytes): {m}"))
                })?;
                off += data.len() as u64;
            }
        }
        if off != size {
            return Err(OpError::BadResponse(format!(
                "GET {key}: {off} of {size} bytes"
            )));
        }
        self.pool.give_back(lease);
        Ok(off)
    }

    /// HEAD of an object; checks its size.
    pub async fn stat(&self, ep: usize, bucket: &str, key: &str, size: u64) -> Result<(), OpError> {
        let mut h = Vec::new();
        self.sse.read_headers(&mut h);
        let resp = self
            .request(
                ep,
                "HEAD",
                &Self::object_path(bucket, key),
                &h,
                &Body::Empty,
            )
            .await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        let len = content_length(&resp.headers);
        self.finish(resp, 0).await?;
        match len {
            Some(l) if l == size => Ok(()),
            Some(l) => Err(OpError::BadResponse(format!(
                "HEAD {key}: Content-Length {l}, object has {size} bytes"
            ))),
            None => Err(OpError::BadResponse(format!(
                "HEAD {key}: no Content-Length"
            ))),
        }
    }

    pub async fn delete(&self, ep: usize, bucket: &str, key: &str) -> Result<(), OpError> {
        let resp = self
            .request(
                ep,
                "DELETE",
                &Self::object_path(bucket, key),
                &[],
                &Body::Empty,
            )
            .await?;
        if resp.status != 204 && resp.status != 200 {
            return Err(self.error(resp).await);
        }
        self.finish(resp, 64 << 10).await?;
        Ok(())
    }

    /// Lists every key under `prefix` with ListObjectsV2 pages of
    /// `max_keys`; returns (keys, pages). With `collect`, the keys and sizes
    /// are pushed there (at most `cap` of them).
    pub async fn list(
        &self,
        ep: usize,
        bucket: &str,
        prefix: &str,
        max_keys: u32,
        mut collect: Option<&mut Vec<(String, u64)>>,
        cap: usize,
    ) -> Result<(u64, u64), OpError> {
        let mut token: Option<String> = None;
        let mut keys = 0u64;
        let mut pages = 0u64;
        loop {
            // Query parameters sorted by name, as the canonical request wants.
            let mut q = String::new();
            if let Some(t) = &token {
                q.push_str(&format!("continuation-token={}&", uri_encode(t, false)));
            }
            q.push_str(&format!(
                "list-type=2&max-keys={max_keys}&prefix={}",
                uri_encode(prefix, false)
            ));
            let path = format!("/{}?{q}", uri_encode(bucket, false));
            let resp = self.request(ep, "GET", &path, &[], &Body::Empty).await?;
            if resp.status != 200 {
                return Err(self.error(resp).await);
            }
            let (_, _, body) = self.finish(resp, MAX_SMALL_BODY).await?;
            let text = String::from_utf8_lossy(&body);
            pages += 1;
            let page_keys = xml_all(&text, "Key");
            keys += page_keys.len() as u64;
            if let Some(c) = collect.as_deref_mut() {
                let sizes = xml_all(&text, "Size");
                for (i, k) in page_keys.into_iter().enumerate() {
                    if c.len() >= cap {
                        break;
                    }
                    let size = sizes.get(i).and_then(|s| s.parse().ok()).unwrap_or(0);
                    c.push((k, size));
                }
            }
            let truncated = xml_text(&text, "IsTruncated").as_deref() == Some("true");
            if !truncated {
                return Ok((keys, pages));
            }
            match xml_text(&text, "NextContinuationToken") {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => {
                    return Err(OpError::BadResponse(
                        "truncated listing without NextContinuationToken".into(),
                    ));
                }
            }
            if pages > 10_000_000 {
                return Err(OpError::BadResponse("listing does not end".into()));
            }
        }
    }

    /// A multipart upload of `size` bytes of the key's pattern in parts of
    /// `part_size`, `part_concurrency` parts in flight.
    pub async fn multipart(
        self: &Arc<Self>,
        ep: usize,
        bucket: &str,
        key: &str,
        size: u64,
        part_size: u64,
        part_concurrency: usize,
    ) -> Result<(), OpError> {
        let parts = size.div_ceil(part_size).max(1);
        if parts > MAX_PARTS {
            return Err(OpError::Client(format!(
                "{size} bytes in parts of {part_size} is more than {MAX_PARTS} parts"
            )));
        }
        let path = Self::object_path(bucket, key);
        let mut h = Vec::new();
        self.sse.write_headers(&mut h);
        let resp = self
            .request(ep, "POST", &format!("{path}?uploads"), &h, &Body::Empty)
            .await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        let (_, _, body) = self.finish(resp, 64 << 10).await?;
        let upload_id = xml_text(&String::from_utf8_lossy(&body), "UploadId")
            .filter(|u| !u.is_empty())
            .ok_or_else(|| OpError::BadResponse("CreateMultipartUpload without UploadId".into()))?;
        let result = self
            .upload_parts(
                ep,
                &path,
                &upload_id,
                key,
                size,
                part_size,
                parts,
                part_concurrency,
            )
            .await;
        let etags = match result {
            Ok(e) => e,
            Err(e) => {
                // Best effort: do not leave the upload behind.
                let q = format!("{path}?uploadId={}", uri_encode(&upload_id, false));
                if let Ok(r) = self.request(ep, "DELETE", &q, &[], &Body::Empty).await {
                    let _ = self.finish(r, 64 << 10).await;
                }
                return Err(e);
            }
        };
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            xml.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                i + 1,
                xml_escape(etag)
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let q = format!("{path}?uploadId={}", uri_encode(&upload_id, false));
        let body = Body::Bytes(Bytes::from(xml));
        let resp = self.request(ep, "POST", &q, &[], &body).await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        let (_, _, body) = self.finish(resp, 64 << 10).await?;
        let text = String::from_utf8_lossy(&body);
        if text.contains("<Error>") {
            return Err(OpError::Http {
                status: 200,
                code: xml_text(&text, "Code").unwrap_or_default(),
                message: xml_text(&text, "Message").unwrap_or_default(),
            });
        }
        if xml_text(&text, "ETag").is_none() {
            return Err(OpError::BadResponse(
                "CompleteMultipartUpload answer without ETag".into(),
            ));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn upload_parts(
        self: &Arc<Self>,
        ep: usize,
        path: &str,
        upload_id: &str,
        key: &str,
        size: u64,
        part_size: u64,
        parts: u64,
        part_concurrency: usize,
    ) -> Result<Vec<String>, OpError> {
        let pattern = self.pattern(key, size);
        let mut etags = vec![String::new(); parts as usize];
        let mut set = tokio::task::JoinSet::new();
        let mut next = 0u64;
        let mut first_err = None;
        loop {
            while first_err.is_none() && next < parts && set.len() < part_concurrency.max(1) {
                let n = next;
                next += 1;
                let me = Arc::clone(self);
                let q = format!(
                    "{path}?partNumber={}&uploadId={}",
                    n + 1,
                    uri_encode(upload_id, false)
                );
                let offset = n * part_size;
                let len = (size - offset).min(part_size);
                let pattern = pattern.clone();
                set.spawn(async move {
                    let r = me.upload_part(ep, &q, pattern, offset, len).await;
                    (n, r)
                });
            }
            let Some(joined) = set.join_next().await else {
                break;
            };
            match joined {
                Ok((n, Ok(etag))) => etags[n as usize] = etag,
                Ok((_, Err(e))) => {
                    first_err.get_or_insert(e);
                }
                Err(e) => {
                    first_err.get_or_insert(OpError::Client(format!("part task: {e}")));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(etags),
        }
    }

    async fn upload_part(
        &self,
        ep: usize,
        path_and_query: &str,
        pattern: Pattern,
        offset: u64,
        len: u64,
    ) -> Result<String, OpError> {
        let body = self.data_body(pattern, offset, len);
        let mut h = Vec::new();
        self.sse.read_headers(&mut h);
        let resp = self.request(ep, "PUT", path_and_query, &h, &body).await?;
        if resp.status != 200 {
            return Err(self.error(resp).await);
        }
        let (_, headers, _) = self.finish(resp, 64 << 10).await?;
        headers
            .get(http::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| OpError::BadResponse("UploadPart answered without an ETag".into()))
    }
}

fn content_length(h: &http::HeaderMap) -> Option<u64> {
    h.get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Wraps an operation in a timeout.
pub async fn with_timeout<T>(
    timeout: Duration,
    f: impl std::future::Future<Output = Result<T, OpError>>,
) -> Result<T, OpError> {
    match tokio::time::timeout(timeout, f).await {
        Ok(r) => r,
        Err(_) => Err(OpError::Timeout),
    }
}
